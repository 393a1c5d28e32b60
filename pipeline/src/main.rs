//! `pipeline`: the one user-facing CLI of mcp-pattern-bench. Everything lives in the library;
//! see [`pipeline::cli`].

#[tokio::main]
async fn main() -> std::process::ExitCode {
    pipeline::cli::main().await
}
