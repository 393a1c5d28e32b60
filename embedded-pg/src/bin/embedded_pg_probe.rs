//! Test probe for the `embedded-pg` integration tests, not a user tool: it
//! lets the tests observe cleanup from a real, separate process (panics,
//! signals, SIGKILL, process-global environment variables).
//!
//! Usage: `embedded_pg_probe exit|panic|wait`. It starts a cluster, prints
//! `READY pid=<postmaster pid> dir=<cluster dir>` on stdout, then
//! - `exit`: returns normally (Drop cleans up);
//! - `panic`: panics in main (unwinding runs Drop);
//! - `wait`: waits for SIGINT or SIGTERM, stops the cluster, exits 0.
//!
//! If the cluster cannot start, it prints `ERROR <message>` on stdout and exits 3.

use std::io::Write;
use std::process::ExitCode;

use embedded_pg::EmbeddedPostgres;
use nix::sys::signal::{SigSet, Signal};

fn main() -> ExitCode {
    let mode = std::env::args().nth(1).unwrap_or_default();
    if !matches!(mode.as_str(), "exit" | "panic" | "wait") {
        eprintln!("usage: embedded_pg_probe exit|panic|wait");
        return ExitCode::from(2);
    }
    let mut signals = SigSet::empty();
    signals.add(Signal::SIGINT);
    signals.add(Signal::SIGTERM);
    if mode == "wait" {
        // Block before any thread exists so every thread inherits the mask and
        // the signal stays pending for `wait` below instead of killing us.
        signals.thread_block().expect("blocking SIGINT/SIGTERM");
    }
    let pg = match EmbeddedPostgres::start() {
        Ok(pg) => pg,
        Err(e) => {
            println!("ERROR {e}");
            return ExitCode::from(3);
        }
    };
    println!("READY pid={} dir={}", pg.pid(), pg.data_dir().display());
    std::io::stdout().flush().expect("flushing stdout");
    match mode.as_str() {
        "panic" => panic!("embedded_pg_probe: panicking on purpose"),
        "wait" => {
            let sig = signals.wait().expect("waiting for a signal");
            eprintln!("embedded_pg_probe: got {sig:?}, stopping");
            if let Err(e) = pg.stop() {
                eprintln!("embedded_pg_probe: stop failed: {e}");
                return ExitCode::FAILURE;
            }
        }
        _ => drop(pg),
    }
    ExitCode::SUCCESS
}
