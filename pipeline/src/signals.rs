//! Ctrl-C and SIGTERM, for every command that may start a server.
//!
//! An external arm's server runs in a process group of its own, so the terminal's Ctrl-C never
//! reaches it and nothing the kernel does on our death kills it: left to the default
//! disposition, an interrupt during the gates, the listings or the preflight would end the
//! process and leave the server (and anything it started) running. So one watcher, installed
//! before anything starts, owns both signals for the whole command:
//!
//! - while a run is taking sessions ([`RunSignals`]), the first signal is handed to it (it stops
//!   starting sessions and records those in flight as interrupted) and a second exits at once;
//! - at any other time (before the first session, between the runs of a sweep, while the report
//!   is written) the signal exits at once: nothing is in flight to record.
//!
//! Every way out kills the external servers' groups first. The embedded cluster needs nothing
//! here: it is stopped by the kernel when this process dies (see `embedded-pg`).

use std::sync::Mutex;

use tokio::sync::watch;

use crate::exit::Exit;

type Sender = watch::Sender<Option<&'static str>>;

/// The run taking sessions now, if any.
static RUN: Mutex<Option<Sender>> = Mutex::new(None);

/// Starts the watcher (once; later calls do nothing). Call early, from within the runtime.
pub fn install() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(watch_signals);
}

fn watch_signals() {
    use tokio::signal::unix::{SignalKind, signal};
    let (Ok(mut int), Ok(mut term)) = (signal(SignalKind::interrupt()), signal(SignalKind::terminate())) else { return };
    tokio::spawn(async move {
        loop {
            let name = tokio::select! {
                _ = int.recv() => "SIGINT",
                _ = term.recv() => "SIGTERM",
            };
            let handed = RUN.lock().expect("signals").as_ref().is_some_and(|run| {
                // The run's first signal only; a second while it still runs exits.
                run.borrow().is_none() && run.send(Some(name)).is_ok()
            });
            if handed {
                eprintln!(
                    "{name}: stopping — no further session starts; sessions in flight are recorded invalid (interrupted). Press Ctrl-C again to exit at once."
                );
                continue;
            }
            let running = RUN.lock().expect("signals").is_some();
            if running {
                eprintln!("{name} again: exiting at once (the session in flight is not recorded)");
            } else {
                eprintln!("{name}: exiting — no session was in flight, nothing is recorded for this signal");
            }
            servers::external::kill_all_groups();
            std::process::exit(if running { 130 } else { i32::from(Exit::StoppedEarly.code()) });
        }
    });
}

/// A run's claim on the signals while it takes sessions; released when dropped.
pub struct RunSignals;

impl RunSignals {
    /// Claims the signals for a run; `receiver` turns `Some(signal)` at the first one.
    pub fn claim() -> (Self, watch::Receiver<Option<&'static str>>) {
        install();
        let (tx, rx) = watch::channel(None);
        *RUN.lock().expect("signals") = Some(tx);
        (Self, rx)
    }
}

impl Drop for RunSignals {
    fn drop(&mut self) {
        *RUN.lock().expect("signals") = None;
    }
}
