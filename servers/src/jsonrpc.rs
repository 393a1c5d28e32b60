//! The JSON-RPC errors the bench's servers owe a client that the SDK does not give: a message
//! that is not JSON is a parse error (-32700, id null), not silence (stdio) or an invalid request
//! (HTTP); a `tools/call` whose `arguments` is not an object is an invalid-params error (-32602),
//! not "method not found" (-32601). Every incoming message passes [`check`] before the SDK reads
//! it: over stdio through [`relay`], over HTTP through the router's middleware
//! ([`crate::launch::http_router`]).

use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader};

pub const PARSE_ERROR: i64 = -32700;
pub const INVALID_REQUEST: i64 = -32600;
pub const INVALID_PARAMS: i64 = -32602;

/// `Ok` when the SDK may read `message`; otherwise the error response the client is owed.
pub fn check(message: &[u8]) -> Result<(), Value> {
    let value: Value = match serde_json::from_slice(message) {
        Ok(v) => v,
        Err(e) => return Err(error(Value::Null, PARSE_ERROR, &format!("Parse error: the message is not JSON ({e})"))),
    };
    let Value::Object(m) = &value else {
        return Err(error(Value::Null, INVALID_REQUEST, "Invalid Request: a message is a JSON object"));
    };
    if m.get("method").and_then(Value::as_str) == Some("tools/call")
        && let Some(arguments) = m.get("params").and_then(|p| p.get("arguments"))
        && !arguments.is_object()
        && !arguments.is_null()
    {
        let id = m.get("id").cloned().unwrap_or(Value::Null);
        return Err(error(id, INVALID_PARAMS, "Invalid params: the arguments of tools/call are a JSON object of the tool's parameters"));
    }
    Ok(())
}

fn error(id: Value, code: i64, message: &str) -> Value {
    json!({ "jsonrpc": "2.0", "id": id, "error": { "code": code, "message": message } })
}

/// Relays newline-delimited JSON-RPC between a client (`input`, `output`) and a server reading
/// and writing `server`: each line from the client passes [`check`] first; a line that fails it
/// is answered on `output` and never reaches the server. Ends when the client closes `input` and
/// the server has written its last line.
pub async fn relay<I, O, S>(input: I, output: O, server: S) -> std::io::Result<()>
where
    I: AsyncRead + Unpin + Send + 'static,
    O: AsyncWrite + Unpin + Send + 'static,
    S: AsyncRead + AsyncWrite + Send + 'static,
{
    let (server_out, mut server_in) = tokio::io::split(server);
    let (answers, mut answered) = tokio::sync::mpsc::unbounded_channel::<String>();
    let reader = tokio::spawn(async move {
        let mut lines = BufReader::new(input).lines();
        while let Some(line) = lines.next_line().await? {
            if line.trim().is_empty() {
                continue;
            }
            match check(line.as_bytes()) {
                Ok(()) => {
                    server_in.write_all(line.as_bytes()).await?;
                    server_in.write_all(b"\n").await?;
                    server_in.flush().await?;
                }
                Err(answer) => {
                    let _ = answers.send(answer.to_string());
                }
            }
        }
        // The client is gone: the server reads its end of input and stops.
        server_in.shutdown().await
    });
    let mut output = output;
    let mut from_server = BufReader::new(server_out).lines();
    let (mut server_open, mut answers_open) = (true, true);
    loop {
        let line = tokio::select! {
            line = from_server.next_line(), if server_open => match line? {
                Some(line) => line,
                None => {
                    server_open = false;
                    continue;
                }
            },
            answer = answered.recv(), if answers_open => match answer {
                Some(answer) => answer,
                None => {
                    answers_open = false;
                    continue;
                }
            },
            else => break,
        };
        output.write_all(line.as_bytes()).await?;
        output.write_all(b"\n").await?;
        output.flush().await?;
    }
    reader.await.map_err(std::io::Error::other)?
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn what_the_sdk_gets_wrong_is_answered_here_and_the_rest_passes() {
        let code = |m: &str| check(m.as_bytes()).err().map(|e| (e["error"]["code"].as_i64().unwrap(), e["id"].clone()));
        assert_eq!(code("not json at all"), Some((PARSE_ERROR, Value::Null)));
        assert_eq!(code("{\"jsonrpc\": \"2.0\", \"id\": 1,"), Some((PARSE_ERROR, Value::Null)));
        assert_eq!(code("42"), Some((INVALID_REQUEST, Value::Null)));
        let call = |args: &str| format!(r#"{{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{{"name":"t","arguments":{args}}}}}"#);
        for bad in ["\"oops\"", "[1]", "3", "true"] {
            assert_eq!(code(&call(bad)), Some((INVALID_PARAMS, json!(7))), "{bad}");
        }
        for fine in ["{}", "{\"id\": 1}", "null"] {
            assert_eq!(code(&call(fine)), None, "{fine}");
        }
        assert_eq!(code(r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"t"}}"#), None, "no arguments at all");
        assert_eq!(code(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#), None);
        // Another method's `arguments` is its own business.
        assert_eq!(code(r#"{"jsonrpc":"2.0","id":2,"method":"prompts/get","params":{"name":"p","arguments":"x"}}"#), None);
    }
}
