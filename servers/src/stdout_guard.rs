//! What a stdio server writes to its stdout, held to the MCP stdio transport's rules before the
//! client library reads it: every line a JSON-RPC message, none longer than the library takes.
//!
//! The client library (rmcp) skips a line that is not a message with a log line, and drops a line
//! over [`MAX_LINE_BYTES`] the same way — after which the call that line answered waits out its
//! whole timeout (120 s) and the session is recorded as a timeout, which it is not. The MCP
//! specification says a server "MUST NOT write anything to its stdout that is not a valid MCP
//! message". So [`StdoutGuard`] ends the stream at the first line that breaks either rule: the
//! session fails at once as a transport failure of the arm, and the note it leaves (on the
//! server's [`StderrTail`], which every such record quotes) says what the line was and how long.

use std::io;
use std::pin::Pin;
use std::task::{Context, Poll, ready};

use tokio::io::{AsyncRead, ReadBuf};

use crate::external::StderrTail;

/// The longest line the client library reads (rmcp's `DEFAULT_MAX_LINE_LENGTH`, 16 MiB).
pub const MAX_LINE_BYTES: usize = rmcp::transport::async_rw::DEFAULT_MAX_LINE_LENGTH;
/// How far an oversized line is read to measure it, before it is reported as "at least".
const MEASURE_UP_TO: usize = 1 << 30;
/// How much of a line that is not a message the note quotes.
const QUOTED: usize = 200;

/// A server's stdout, checked line by line as it is read.
pub struct StdoutGuard<R> {
    inner: R,
    notes: StderrTail,
    line_bytes: usize,
    /// The line's start, for a note.
    head: Vec<u8>,
    /// The first byte of the line that is not whitespace.
    first: Option<u8>,
    /// Reading past the limit to measure an oversized line.
    measuring: bool,
    /// Set once a rule was broken: every later read fails with it.
    broken: Option<String>,
}

impl<R> StdoutGuard<R> {
    pub fn new(inner: R, notes: StderrTail) -> Self {
        Self { inner, notes, line_bytes: 0, head: Vec::new(), first: None, measuring: false, broken: None }
    }

    fn break_with(&mut self, why: String) -> io::Error {
        self.notes.note(&why);
        self.broken = Some(why.clone());
        io::Error::new(io::ErrorKind::InvalidData, why)
    }

    fn oversized(&mut self, at_least: bool) -> io::Error {
        let size = if at_least { format!("at least {} bytes", self.line_bytes) } else { format!("{} bytes", self.line_bytes) };
        self.break_with(format!(
            "the server wrote a message of {size} to stdout, over the {MAX_LINE_BYTES} bytes (16 MiB) an MCP stdio message may be here: the result is too large"
        ))
    }

    /// Looks at `bytes` just read. `Err((start, error))` when a line broke a rule; `start` is
    /// where that line began in `bytes` (0 when it began in an earlier read): what precedes it
    /// is good and may still be passed on. `Ok(Some(start))` when the line beginning at `start`
    /// grew past the limit and is now being measured.
    fn scan(&mut self, bytes: &[u8]) -> Result<Option<usize>, (usize, io::Error)> {
        let (mut line_start, mut rest) = (0, bytes);
        loop {
            // A line's next piece: up to its newline, or the rest of this read.
            let newline = rest.iter().position(|&c| c == b'\n');
            let piece = &rest[..newline.unwrap_or(rest.len())];
            self.line_bytes += piece.len();
            if self.first.is_none() {
                self.first = piece.iter().copied().find(|b| !b.is_ascii_whitespace());
            }
            let room = QUOTED.saturating_sub(self.head.len());
            self.head.extend_from_slice(&piece[..piece.len().min(room)]);
            if self.line_bytes > MAX_LINE_BYTES {
                self.measuring = true;
                return match newline {
                    Some(_) => Err((line_start, self.oversized(false))),
                    None => Ok(Some(line_start)),
                };
            }
            let Some(n) = newline else { return Ok(None) };
            if !matches!(self.first, None | Some(b'{' | b'[')) {
                let quoted = String::from_utf8_lossy(&self.head).trim().to_owned();
                let e = self.break_with(format!(
                    "the server wrote a line to stdout that is not a JSON-RPC message ({quoted:?}); over stdio, MCP lets a server write nothing else there (log to stderr)"
                ));
                return Err((line_start, e));
            }
            self.line_bytes = 0;
            self.head.clear();
            self.first = None;
            line_start += n + 1;
            rest = &rest[n + 1..];
        }
    }
}

impl<R: AsyncRead + Unpin> AsyncRead for StdoutGuard<R> {
    fn poll_read(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        let this = &mut *self;
        if let Some(why) = &this.broken {
            return Poll::Ready(Err(io::Error::new(io::ErrorKind::InvalidData, why.clone())));
        }
        // While measuring an oversized line, read on into a scratch buffer: none of it goes to
        // the library, which would only drop it.
        while this.measuring {
            let mut scratch = [0u8; 64 * 1024];
            let mut rb = ReadBuf::new(&mut scratch);
            ready!(Pin::new(&mut this.inner).poll_read(cx, &mut rb))?;
            let filled = rb.filled().len();
            if filled == 0 {
                return Poll::Ready(Err(this.oversized(true)));
            }
            match scratch[..filled].iter().position(|&c| c == b'\n') {
                Some(n) => {
                    this.line_bytes += n;
                    return Poll::Ready(Err(this.oversized(false)));
                }
                None => {
                    this.line_bytes += filled;
                    if this.line_bytes >= MEASURE_UP_TO {
                        return Poll::Ready(Err(this.oversized(true)));
                    }
                }
            }
        }
        let before = buf.filled().len();
        ready!(Pin::new(&mut this.inner).poll_read(cx, buf))?;
        // A read that ends the stream passes on only what came before the broken line: the
        // error then comes with the next read (a reader may not get bytes and an error at once).
        let cut = |buf: &mut ReadBuf<'_>, start: usize| buf.set_filled(before + start);
        match this.scan(&buf.filled()[before..]) {
            Ok(None) => Poll::Ready(Ok(())),
            Ok(Some(start)) if start > 0 => {
                cut(buf, start);
                Poll::Ready(Ok(()))
            }
            Ok(Some(_)) => {
                cut(buf, 0);
                self.poll_read(cx, buf)
            }
            Err((start, _)) if start > 0 => {
                cut(buf, start);
                Poll::Ready(Ok(()))
            }
            Err((_, e)) => {
                cut(buf, 0);
                Poll::Ready(Err(e))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use tokio::io::AsyncReadExt;

    use super::*;

    async fn read_all(input: Vec<u8>) -> (Result<Vec<u8>, io::Error>, String) {
        let notes = StderrTail::default();
        let mut g = StdoutGuard::new(std::io::Cursor::new(input), notes.clone());
        let mut out = Vec::new();
        let r = g.read_to_end(&mut out).await.map(|_| out);
        (r, notes.report())
    }

    #[tokio::test]
    async fn messages_pass_through_untouched() {
        let input = b"{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}\n\n  [{\"jsonrpc\":\"2.0\"}]\n".to_vec();
        let (r, notes) = read_all(input.clone()).await;
        assert_eq!(r.unwrap(), input);
        assert_eq!(notes, "");
    }

    #[tokio::test]
    async fn a_line_that_is_not_a_message_ends_the_stream_and_says_what_it_was() {
        let (r, notes) = read_all(b"{\"jsonrpc\":\"2.0\"}\nStarting server v1.2...\n{}\n".to_vec()).await;
        assert_eq!(r.unwrap_err().kind(), io::ErrorKind::InvalidData);
        assert!(notes.contains("not a JSON-RPC message (\"Starting server v1.2...\")"), "{notes}");
    }

    #[tokio::test]
    async fn an_oversized_line_is_measured_and_named_with_its_size() {
        let mut input = b"{\"result\":\"".to_vec();
        input.resize(MAX_LINE_BYTES + 5_000, b'x');
        input.extend_from_slice(b"\"}\n");
        let size = input.len() - 1;
        let (r, notes) = read_all(input).await;
        assert_eq!(r.unwrap_err().kind(), io::ErrorKind::InvalidData);
        assert!(notes.contains(&format!("a message of {size} bytes to stdout, over the {MAX_LINE_BYTES} bytes")), "{notes}");
        // Unterminated (the server died mid-line): "at least".
        let mut input = b"{".to_vec();
        input.resize(MAX_LINE_BYTES + 10, b'x');
        let (_, notes) = read_all(input).await;
        assert!(notes.contains(&format!("at least {} bytes", MAX_LINE_BYTES + 10)), "{notes}");
    }
}
