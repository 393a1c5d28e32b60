//! Running an arm's server process: spawned contained in a process group of its own, its stderr
//! tail kept for the record, an HTTP arm waited for until its port opens.

use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use process_wrap::tokio::{CommandWrap, KillOnDrop, ProcessGroup};
use tokio::io::AsyncReadExt;

use super::{ArmError, ExternalArm};
use crate::contain::{Contained, Hold, Prepared};

/// How much of a server's stderr a record keeps (its tail).
pub const STDERR_TAIL_BYTES: usize = 4096;

/// `cmd` as the leader of its own process group, contained ([`crate::contain::prepare`]) and
/// killed on drop: how every server process the bench starts is spawned. Hand the [`Prepared`]
/// the spawned pid ([`Prepared::track`]); the returned guard ends the server and everything it
/// started.
pub fn own_group(mut cmd: tokio::process::Command, hold: Hold) -> std::io::Result<(CommandWrap, Prepared)> {
    let prepared = crate::contain::prepare(&mut cmd, hold)?;
    let mut wrapped = CommandWrap::from(cmd);
    wrapped.wrap(ProcessGroup::leader()).wrap(KillOnDrop);
    Ok((wrapped, prepared))
}

/// `; its stderr ends: …` when there is a tail to show (the ending of every error about a
/// server process).
pub fn stderr_note(tail: &str) -> String {
    if tail.is_empty() { String::new() } else { format!("; its stderr ends: {tail}") }
}

/// Kills every server still running and everything they started: what a command calls on its
/// way out, whatever way it leaves (done, refused, interrupted), so no server outlives it.
pub fn kill_all_groups() {
    crate::contain::kill_all();
}

/// The last [`STDERR_TAIL_BYTES`] a server wrote to stderr, collected while it runs, and the
/// harness's own notes on how the server broke its transport ([`crate::stdout_guard`]).
#[derive(Debug, Clone, Default)]
pub struct StderrTail {
    tail: Arc<Mutex<Vec<u8>>>,
    notes: Arc<Mutex<Vec<String>>>,
}

impl StderrTail {
    /// Reads `stderr` to its end in the background, keeping the tail.
    pub fn follow(stderr: impl tokio::io::AsyncRead + Unpin + Send + 'static) -> Self {
        let tail = Self::default();
        let keep = tail.tail.clone();
        tokio::spawn(async move {
            let mut stderr = stderr;
            let mut buf = [0u8; 4096];
            while let Ok(n) = stderr.read(&mut buf).await {
                if n == 0 {
                    break;
                }
                let mut kept = keep.lock().unwrap();
                kept.extend_from_slice(&buf[..n]);
                let excess = kept.len().saturating_sub(STDERR_TAIL_BYTES);
                kept.drain(..excess);
            }
        });
        tail
    }

    /// The tail as text (lossy), trimmed; empty when the server wrote nothing.
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.tail.lock().unwrap()).trim().to_owned()
    }

    /// Records what the harness saw the server do wrong on its transport.
    pub fn note(&self, what: &str) {
        self.notes.lock().unwrap().push(what.to_owned());
    }

    /// The harness's notes, joined; empty when there are none.
    pub fn notes_text(&self) -> String {
        self.notes.lock().unwrap().join("; ")
    }

    /// The notes and the tail in one line, for an error message: the notes first, then
    /// `its stderr ends: …`; empty when there is neither.
    pub fn report(&self) -> String {
        let (notes, tail) = (self.notes_text(), self.text());
        match (notes.is_empty(), tail.is_empty()) {
            (true, _) => tail,
            (false, true) => notes,
            (false, false) => format!("{notes}; its stderr ends: {tail}"),
        }
    }
}

/// An HTTP arm's running server process: its MCP URL; killed with its process group on drop.
pub struct HttpProcess {
    pub url: String,
    pub stderr: StderrTail,
    child: Box<dyn process_wrap::tokio::ChildWrapper>,
    _group: Option<Contained>,
}

impl std::fmt::Debug for HttpProcess {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HttpProcess").field("url", &self.url).finish()
    }
}

impl HttpProcess {
    /// Kills the process group now (also done on drop).
    pub async fn stop(mut self) {
        let _ = Box::into_pin(self.child.kill()).await;
    }
}

/// Why an arm's server could not be started or reached.
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    #[error(transparent)]
    Arm(#[from] ArmError),
    #[error("could not start {name}: {source}")]
    Spawn { name: String, source: std::io::Error },
    #[error("{name} exited before serving ({status}){}", stderr_note(.stderr))]
    Exited { name: String, status: String, stderr: String },
    #[error("{name} did not open port {port} within {secs} s{}", stderr_note(.stderr))]
    NoPort { name: String, port: u16, secs: u64, stderr: String },
}

/// Starts an HTTP arm on a free loopback port and waits until the port accepts connections.
pub async fn start_http(arm: &ExternalArm, backend_url: &str, settings: crate::launch::ArmSettings) -> Result<HttpProcess, StartError> {
    let port = free_port().map_err(|source| StartError::Spawn { name: arm.name.clone(), source })?;
    let spawn_error = |source| StartError::Spawn { name: arm.name.clone(), source };
    let (mut cmd, prepared) = own_group(arm.command_with(backend_url, Some(port), settings)?, Hold::Whole).map_err(spawn_error)?;
    cmd.command_mut().stdin(Stdio::null()).stdout(Stdio::null()).stderr(Stdio::piped());
    let mut child = match cmd.spawn() {
        Ok(child) => child,
        Err(e) => {
            prepared.abandon();
            return Err(spawn_error(e));
        }
    };
    let group = child.id().map(|pid| prepared.track(pid));
    let stderr = child.inner_mut().stderr().take().map(StderrTail::follow).unwrap_or_default();
    let deadline = tokio::time::Instant::now() + arm.startup_timeout;
    loop {
        if tokio::net::TcpStream::connect(("127.0.0.1", port)).await.is_ok() {
            return Ok(HttpProcess { url: format!("http://127.0.0.1:{port}{}", arm.path), stderr, child, _group: group });
        }
        if let Ok(Some(status)) = child.try_wait() {
            tokio::time::sleep(Duration::from_millis(50)).await; // let the stderr reader catch up
            return Err(StartError::Exited { name: arm.name.clone(), status: status.to_string(), stderr: stderr.text() });
        }
        if tokio::time::Instant::now() > deadline {
            let _ = Box::into_pin(child.kill()).await;
            return Err(StartError::NoPort { name: arm.name.clone(), port, secs: arm.startup_timeout.as_secs(), stderr: stderr.text() });
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
}

/// A loopback port nothing listens on right now.
fn free_port() -> std::io::Result<u16> {
    Ok(std::net::TcpListener::bind("127.0.0.1:0")?.local_addr()?.port())
}
