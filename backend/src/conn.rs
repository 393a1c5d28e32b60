//! Connections whose every error answer is JSON, including the ones hyper writes itself.
//!
//! hyper refuses a request it cannot parse — a URI over 64 KiB (414), more than 100 headers or a
//! head over ~400 KiB (431), a malformed request line or header (400) — before any router sees
//! it, with a status line, `content-length: 0` and no body. A client of this API then gets the
//! one error without the JSON body that names the problem. The limits themselves are fine; the
//! empty body is not, and it cannot be configured. So each connection is wrapped: a response
//! head that *only hyper* writes — status ≥ 400 with an empty body and no content type, since
//! every error the application sends is JSON ([`crate::error::ApiError`]) — is replaced, as it
//! is written, by the same status with a JSON [`crate::error::ErrorBody`].
//!
//! The wrapper reports that it cannot write vectored, so hyper flattens each response into one
//! buffer and its automatic error head arrives alone in one `poll_write` call.

use std::io;
use std::net::SocketAddr;
use std::pin::Pin;
use std::task::{Context, Poll, ready};

use axum::extract::connect_info::Connected;
use axum::serve::{IncomingStream, Listener};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream};

/// What a client reads when its request's headers are over the limit.
const HEADERS_TOO_LARGE: &str = "the request headers are too large (at most 100 headers, about 400 KiB in all); send fewer or smaller headers";

/// The headers' limit, in bytes of names and values (with their `: ` and line ends).
pub const MAX_HEADER_BYTES: usize = 400 * 1024;

/// hyper's limit on a request head is a limit on its read buffer, checked between reads: a head
/// that arrives in a single read can be parsed whole past it (seen on a loaded machine: a
/// 500 KiB header answered 200). This middleware enforces the same limit on the parsed headers,
/// so a request over it is refused with the same 431 and JSON body however its bytes arrived.
pub async fn limit_headers(request: axum::extract::Request, next: axum::middleware::Next) -> axum::response::Response {
    use axum::response::IntoResponse;
    let size: usize = request.headers().iter().map(|(name, value)| name.as_str().len() + value.len() + 4).sum();
    if size > MAX_HEADER_BYTES {
        let body = crate::error::ErrorBody { error: "headers_too_large", field: None, message: HEADERS_TOO_LARGE.into() };
        return (axum::http::StatusCode::REQUEST_HEADER_FIELDS_TOO_LARGE, axum::Json(body)).into_response();
    }
    next.run(request).await
}

/// A TCP listener whose connections are [`JsonErrors`].
#[derive(Debug)]
pub struct JsonErrorListener(pub TcpListener);

impl Listener for JsonErrorListener {
    type Io = JsonErrors<TcpStream>;
    type Addr = SocketAddr;

    async fn accept(&mut self) -> (Self::Io, Self::Addr) {
        // axum's accept loop: retries and backs off on errors such as too many open files.
        let (stream, addr) = <TcpListener as Listener>::accept(&mut self.0).await;
        (JsonErrors::new(stream), addr)
    }

    fn local_addr(&self) -> io::Result<Self::Addr> {
        self.0.local_addr()
    }
}

/// The peer of a connection accepted by [`JsonErrorListener`], as `ConnectInfo<PeerAddr>`.
#[derive(Debug, Clone, Copy)]
pub struct PeerAddr(pub SocketAddr);

impl Connected<IncomingStream<'_, JsonErrorListener>> for PeerAddr {
    fn connect_info(stream: IncomingStream<'_, JsonErrorListener>) -> Self {
        Self(*stream.remote_addr())
    }
}

/// An IO stream that rewrites hyper's bodiless error heads into JSON error responses.
#[derive(Debug)]
pub struct JsonErrors<IO> {
    io: IO,
    /// A replacement response and how much of it is written.
    pending: Option<(Vec<u8>, usize)>,
}

impl<IO> JsonErrors<IO> {
    pub fn new(io: IO) -> Self {
        Self { io, pending: None }
    }
}

impl<IO: AsyncWrite + Unpin> JsonErrors<IO> {
    fn poll_pending(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        while let Some((bytes, written)) = &mut self.pending {
            if *written == bytes.len() {
                self.pending = None;
                break;
            }
            let n = ready!(Pin::new(&mut self.io).poll_write(cx, &bytes[*written..]))?;
            if n == 0 {
                return Poll::Ready(Err(io::ErrorKind::WriteZero.into()));
            }
            *written += n;
        }
        Poll::Ready(Ok(()))
    }
}

impl<IO: AsyncRead + Unpin> AsyncRead for JsonErrors<IO> {
    fn poll_read(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.io).poll_read(cx, buf)
    }
}

impl<IO: AsyncWrite + Unpin> AsyncWrite for JsonErrors<IO> {
    fn poll_write(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        ready!(self.poll_pending(cx))?;
        if let Some(replacement) = json_error_for(buf) {
            self.pending = Some((replacement, 0));
            // Claimed as written: hyper's head is gone, the replacement goes out from here and
            // from the flush hyper always follows with.
            let _ = self.poll_pending(cx)?;
            return Poll::Ready(Ok(buf.len()));
        }
        Pin::new(&mut self.io).poll_write(cx, buf)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        ready!(self.poll_pending(cx))?;
        Pin::new(&mut self.io).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        ready!(self.poll_pending(cx))?;
        Pin::new(&mut self.io).poll_shutdown(cx)
    }
}

/// The JSON response replacing `head`, when `head` is exactly one response head with an error
/// status, an empty body and no content type — what hyper writes for a request it cannot parse.
pub fn json_error_for(head: &[u8]) -> Option<Vec<u8>> {
    let text = std::str::from_utf8(head).ok()?;
    let rest = text.strip_prefix("HTTP/1.1 ").or_else(|| text.strip_prefix("HTTP/1.0 "))?;
    let status: u16 = rest.get(..3)?.parse().ok()?;
    let header_block = text.strip_suffix("\r\n\r\n")?;
    if status < 400 || header_block.contains("\r\n\r\n") {
        return None;
    }
    let mut lines = header_block.split("\r\n");
    let status_line = lines.next()?;
    let headers: Vec<&str> = lines.collect();
    let named = |name: &str| headers.iter().any(|h| h.split(':').next().is_some_and(|n| n.trim().eq_ignore_ascii_case(name)));
    let empty_body = headers.iter().any(|h| h.split_once(':').is_some_and(|(n, v)| n.trim().eq_ignore_ascii_case("content-length") && v.trim() == "0"));
    if !empty_body || named("content-type") {
        return None;
    }
    let (error, message) = match status {
        414 => ("uri_too_long", "the request URI is longer than 64 KiB; send fewer or shorter query parameters"),
        431 => ("headers_too_large", HEADERS_TOO_LARGE),
        400 => ("bad_request", "the request is not valid HTTP/1.1 (malformed request line or header)"),
        _ => ("bad_request", "the request could not be parsed"),
    };
    let body = serde_json::json!({ "error": error, "message": message }).to_string();
    let mut out = String::with_capacity(status_line.len() + body.len() + 128);
    out.push_str(status_line);
    out.push_str("\r\n");
    for h in headers.iter().filter(|h| !h.split(':').next().is_some_and(|n| n.trim().eq_ignore_ascii_case("content-length"))) {
        out.push_str(h);
        out.push_str("\r\n");
    }
    out.push_str(&format!("content-type: application/json\r\ncontent-length: {}\r\n\r\n{body}", body.len()));
    Some(out.into_bytes())
}

#[cfg(test)]
mod tests {
    use super::json_error_for;

    #[test]
    fn hypers_bare_error_heads_become_json_and_nothing_else_changes() {
        let hyper_414 = b"HTTP/1.1 414 URI Too Long\r\nconnection: close\r\ncontent-length: 0\r\ndate: Tue, 01 Dec 2026 09:51:03 GMT\r\n\r\n";
        let out = String::from_utf8(json_error_for(hyper_414).unwrap()).unwrap();
        let (head, body) = out.split_once("\r\n\r\n").unwrap();
        assert!(head.starts_with("HTTP/1.1 414 URI Too Long\r\n") && head.contains("connection: close") && head.contains("content-type: application/json"));
        assert!(head.contains(&format!("content-length: {}", body.len())) && !head.contains("content-length: 0"), "{head}");
        let json: serde_json::Value = serde_json::from_str(body).unwrap();
        assert_eq!(json["error"], "uri_too_long");

        // The application's own answers pass untouched: JSON errors, empty successes, bodies.
        for app in [
            &b"HTTP/1.1 404 Not Found\r\ncontent-type: application/json\r\ncontent-length: 2\r\n\r\n{}"[..],
            b"HTTP/1.1 404 Not Found\r\ncontent-type: application/json\r\ncontent-length: 0\r\n\r\n",
            b"HTTP/1.1 204 No Content\r\ncontent-length: 0\r\n\r\n",
            b"HTTP/1.1 200 OK\r\ncontent-length: 0\r\n\r\n",
            b"HTTP/1.1 431 Request Header Fields Too Large\r\ncontent-length: 0\r\n\r\nHTTP/1.1 200 OK\r\n\r\n",
            b"{\"data\": []}",
        ] {
            assert_eq!(json_error_for(app), None, "{}", String::from_utf8_lossy(app));
        }
    }

    /// However the bytes arrived, headers over the limit are refused before routing, with the
    /// 431 and the JSON body hyper's own refusal gets; a request just under it is served.
    #[tokio::test]
    async fn headers_over_the_limit_are_refused_even_when_hyper_parsed_them() {
        use tower::ServiceExt;
        let app = axum::Router::new().route("/", axum::routing::get(|| async { "served" })).layer(axum::middleware::from_fn(super::limit_headers));
        let request = |value: String| axum::http::Request::get("/").header("x-big", value).body(axum::body::Body::empty()).unwrap();
        let over = app.clone().oneshot(request("a".repeat(500 * 1024))).await.unwrap();
        assert_eq!(over.status(), 431);
        let body = axum::body::to_bytes(over.into_body(), 1 << 16).await.unwrap();
        let json: serde_json::Value = serde_json::from_slice(&body).unwrap();
        assert_eq!(json["error"], "headers_too_large", "{json}");
        let under = app.oneshot(request("a".repeat(300 * 1024))).await.unwrap();
        assert_eq!(under.status(), 200);
    }
}
