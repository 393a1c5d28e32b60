//! What the `backend` binary writes to a redirected stderr: plain text, and no INFO line for
//! conditions that are expected.

use std::io::{BufRead, BufReader, Read};
use std::process::{Command, Stdio};

#[test]
fn redirected_logs_have_no_colour_codes_and_no_notice_noise() {
    let mut child = Command::new(env!("CARGO_BIN_EXE_backend"))
        .args(["--port", "0", "--world", &format!("logs{}", std::process::id())])
        .env_remove("RUST_LOG")
        .env_remove("NO_COLOR")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let mut line = String::new();
    stdout.read_line(&mut line).unwrap();
    assert!(line.starts_with("backend listening on http://"), "{line:?}");
    // Ctrl-C, as a user stops it: it shuts down cleanly (and logs while doing so).
    assert!(Command::new("kill").args(["-INT", &child.id().to_string()]).status().unwrap().success());
    let mut stderr = String::new();
    child.stderr.take().unwrap().read_to_string(&mut stderr).unwrap();
    assert!(child.wait().unwrap().success(), "{stderr}");
    // The run logged something (so the checks below looked at real output)...
    assert!(stderr.contains("INFO") && stderr.contains("postgres:"), "{stderr}");
    // ...with no ANSI escape sequence in it, since stderr is a pipe,
    assert!(!stderr.contains('\u{1b}'), "colour codes in a redirected log:\n{stderr:?}");
    // ...and none of Postgres's NOTICEs (`database "build_…" does not exist, skipping`).
    assert!(!stderr.contains("does not exist, skipping") && !stderr.contains("sqlx::postgres::notice"), "{stderr}");
}
