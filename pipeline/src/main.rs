//! `pipeline`: the one user-facing CLI of mcp-pattern-bench. Everything lives in the library;
//! see [`pipeline::commands`].

fn main() -> std::process::ExitCode {
    pipeline::commands::main()
}
