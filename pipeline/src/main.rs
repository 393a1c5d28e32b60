//! `pipeline`: the one user-facing CLI of mcp-pattern-bench. Everything lives in the library;
//! see [`pipeline::commands`].

#[tokio::main]
async fn main() -> std::process::ExitCode {
    pipeline::commands::main().await
}
