//! What an attempt came to, and why a turn got no answer: a chat completion, a fault worth
//! retrying (with the wait a `Retry-After` asks for), a quota or session limit that stops the run,
//! a request that outgrew the context window, an output the endpoint could not parse (the
//! model's doing, not the infrastructure's), or a fault not worth retrying — each in the words of
//! OpenAI, vLLM, llama.cpp's server, Ollama, LiteLLM and other OpenAI-compatible servers.

use std::time::Duration;

use async_openai::error::OpenAIError;
use reqwest::StatusCode;
use reqwest::header::HeaderMap;
use serde_json::Value;

use super::wire::ChatResponse;

/// Phrases (matched case-insensitively) that make a 200 answer without tool calls a quota or
/// session-limit refusal rather than a model's answer. Deliberately few and specific: a false
/// match stops the whole run, loudly; a miss would score a refusal as the arm's failure.
pub(crate) const LIMIT_PHRASES: &[&str] = &["usage limit", "session limit", "quota exceeded", "exceeded your current quota"];

/// Phrases (matched case-insensitively in a 5xx answer) by which an endpoint says that its own
/// tool-call parser rejected what the model wrote. That is the model's output, so the arm's
/// failure, not the infrastructure's: a session it ends is valid, flagged `unparseable_output`.
/// vLLM has no such answer: its tool parsers catch their own failure, log "Error in extracting
/// tool call from response." and return the model's output as `content` with a 200 — a call
/// written as text, which [`crate::text_call`] recognises.
pub(crate) const UNPARSEABLE_OUTPUT_PHRASES: &[&str] = &[
    // llama.cpp's server (common/chat.cpp, `common_chat_parse`): "The model produced output that
    // does not match the expected <format> format" (`peg-native`, `Content-only`, …), HTTP 500,
    // `"type":"server_error"`.
    "the model produced output that does not match the expected",
    // Ollama's tool-call parsers (e.g. the harmony parser behind gpt-oss): "error parsing tool
    // call: raw='…', err=…", HTTP 500; on /v1 wrapped as `{"error":{"message":…,"type":"api_error"}}`
    // (ollama/ollama issues #12064, #12884, #17638).
    "error parsing tool call",
];

/// The error `type`/`code` of a 429 that is a quota refusal, not a rate limit.
const INSUFFICIENT_QUOTA: &str = "insufficient_quota";

/// Why a turn got no answer. `detail` is the provider's text, verbatim where it sent one.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum ProviderFailure {
    /// Transient faults past the retry bound, or a fault not worth retrying (400, 401, 404, …).
    Exhausted { detail: String, retries: u32 },
    /// A quota or session/usage limit: the run must stop.
    Limit { detail: String, retries: u32 },
    /// The request no longer fits the model's context window (not retried: it only grows).
    ContextExceeded { detail: String, retries: u32 },
    /// The endpoint could not parse the model's own output (see [`UNPARSEABLE_OUTPUT_PHRASES`]),
    /// again on a retry that, with pinned sampling, repeated it word for word, or past the bound.
    UnparseableOutput { detail: String, retries: u32 },
}

impl ProviderFailure {
    /// The provider's last answer (verbatim where it sent one), or what went wrong on the way.
    pub fn detail(&self) -> &str {
        match self {
            Self::Exhausted { detail, .. } | Self::Limit { detail, .. } | Self::ContextExceeded { detail, .. } | Self::UnparseableOutput { detail, .. } => {
                detail
            }
        }
    }

    pub fn retries(&self) -> u32 {
        match self {
            Self::Exhausted { retries, .. } | Self::Limit { retries, .. } | Self::ContextExceeded { retries, .. } | Self::UnparseableOutput { retries, .. } => {
                *retries
            }
        }
    }
}

#[derive(Debug)]
pub(crate) enum AttemptOutcome {
    Answer(ChatResponse, Value),
    Transient { detail: String, retry_after: Option<Duration> },
    Limit(String),
    ContextExceeded(String),
    UnparseableOutput(String),
    Fatal(String),
}

pub(super) fn classify(result: Result<Value, OpenAIError>, seen: Option<(StatusCode, HeaderMap)>) -> AttemptOutcome {
    let status = seen.as_ref().map(|(s, _)| *s);
    let retry_after = seen.as_ref().and_then(|(_, h)| retry_after(h));
    match result {
        Ok(raw) => match serde_json::from_value::<ChatResponse>(raw.clone()) {
            Ok(r) if !r.choices.is_empty() => AttemptOutcome::Answer(r, raw),
            Ok(_) => AttemptOutcome::Transient { detail: format!("response has no choices: {raw}"), retry_after: None },
            Err(e) => AttemptOutcome::Transient { detail: format!("response is not a chat completion ({e}): {raw}"), retry_after: None },
        },
        Err(OpenAIError::ApiError(api)) => {
            let e = &api.api_error;
            let mut detail = format!("HTTP {}: {}", api.status_code, e.message);
            if e.r#type.is_some() || e.code.is_some() {
                detail.push_str(&format!(" [type: {}, code: {}", e.r#type.as_deref().unwrap_or("-"), e.code.as_deref().unwrap_or("-")));
                // The field a 400 names (OpenAI's `param`): the hint names the flag that sets it.
                if let Some(param) = e.param.as_deref() {
                    detail.push_str(&format!(", param: {param}"));
                }
                detail.push(']');
            }
            let quota = [e.r#type.as_deref(), e.code.as_deref()].contains(&Some(INSUFFICIENT_QUOTA));
            let overflow = e.code.as_deref() == Some(CONTEXT_LENGTH_EXCEEDED) || is_context_overflow(&e.message);
            match api.status_code.as_u16() {
                // async-openai keeps a 5xx body whole as the message, so the phrase is found in it.
                500..=599 if is_unparseable_output(&e.message) => AttemptOutcome::UnparseableOutput(detail),
                429 if quota => AttemptOutcome::Limit(detail),
                400 | 413 if overflow => AttemptOutcome::ContextExceeded(detail),
                s if is_transient_status(s) => AttemptOutcome::Transient { detail, retry_after },
                _ => AttemptOutcome::Fatal(detail),
            }
        }
        // A body that is not JSON: async-openai keeps it verbatim.
        Err(OpenAIError::JSONDeserialize(e, body)) => {
            let code = status.map(|s| s.as_u16()).unwrap_or(200);
            let detail = format!("HTTP {code}: unparseable body ({e}): {body}");
            if (500..600).contains(&code) && is_unparseable_output(&body) {
                AttemptOutcome::UnparseableOutput(detail)
            } else if (200..300).contains(&code) || is_transient_status(code) {
                AttemptOutcome::Transient { detail, retry_after }
            } else if matches!(code, 400 | 413) && is_context_overflow(&body) {
                AttemptOutcome::ContextExceeded(detail)
            } else {
                AttemptOutcome::Fatal(detail)
            }
        }
        Err(OpenAIError::Reqwest(e)) if e.is_builder() => AttemptOutcome::Fatal(error_chain(&e)),
        Err(OpenAIError::Reqwest(e)) => {
            let what = if e.is_timeout() { "request timed out" } else { "request failed" };
            AttemptOutcome::Transient { detail: format!("{what}: {}", error_chain(&e)), retry_after: None }
        }
        Err(other) => AttemptOutcome::Fatal(error_chain(&other)),
    }
}

/// OpenAI's error code for a request longer than the model's context window.
const CONTEXT_LENGTH_EXCEEDED: &str = "context_length_exceeded";

/// Whether a 400/413 error text says the request does not fit the context window, in the words
/// of OpenAI, vLLM, llama.cpp's server, LiteLLM and other OpenAI-compatible servers.
fn is_context_overflow(message: &str) -> bool {
    const PHRASES: &[&str] = &[
        CONTEXT_LENGTH_EXCEEDED,
        "maximum context length",
        "context window",
        "exceeds the available context size",
        "exceed_context_size",
        "prompt is too long",
        "input is too long",
        "too many tokens",
    ];
    let m = message.to_lowercase();
    PHRASES.iter().any(|p| m.contains(p))
}

fn is_unparseable_output(message: &str) -> bool {
    let m = message.to_lowercase();
    UNPARSEABLE_OUTPUT_PHRASES.iter().any(|p| m.contains(p))
}

fn is_transient_status(code: u16) -> bool {
    code == 408 || code == 429 || (500..600).contains(&code)
}

/// `Retry-After` in seconds (the HTTP-date form is not honoured; backoff applies instead).
fn retry_after(headers: &HeaderMap) -> Option<Duration> {
    let v = headers.get(reqwest::header::RETRY_AFTER)?.to_str().ok()?.trim();
    let secs: f64 = v.parse().ok()?;
    (secs.is_finite() && secs >= 0.0).then(|| Duration::from_secs_f64(secs))
}

pub(crate) fn error_chain(e: &dyn std::error::Error) -> String {
    let mut s = e.to_string();
    let mut source = e.source();
    while let Some(inner) = source {
        s.push_str(": ");
        s.push_str(&inner.to_string());
        source = inner.source();
    }
    s
}

impl ChatResponse {
    /// The verbatim text when this answer is a quota or session-limit refusal: no tool calls, and
    /// a text holding one of [`LIMIT_PHRASES`]. (Defined here, beside the other classification,
    /// rather than with the wire type.)
    pub(crate) fn limit_refusal(&self) -> Option<String> {
        let m = self.message();
        if !m.tool_calls.is_empty() {
            return None;
        }
        let text = m.text()?;
        let lower = text.to_lowercase();
        LIMIT_PHRASES.iter().any(|p| lower.contains(p)).then_some(text)
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn parse(v: Value) -> ChatResponse {
        serde_json::from_value(v).unwrap()
    }

    #[test]
    fn limit_phrases_only_count_without_tool_calls() {
        let text = parse(json!({ "choices": [{ "message": { "content": "You have hit your Usage Limit. Try again later." } }] }));
        assert!(text.limit_refusal().is_some());
        let ordinary = parse(json!({ "choices": [{ "message": { "content": "Customer 7 is Acme." } }] }));
        assert!(ordinary.limit_refusal().is_none());
        let with_call = parse(
            json!({ "choices": [{ "message": { "content": "usage limit", "tool_calls": [{ "id": "a", "type": "function", "function": { "name": "f", "arguments": "{}" } }] } }] }),
        );
        assert!(with_call.limit_refusal().is_none());
    }

    #[test]
    fn retry_after_seconds_parse() {
        let mut h = HeaderMap::new();
        h.insert(reqwest::header::RETRY_AFTER, "2".parse().unwrap());
        assert_eq!(retry_after(&h), Some(Duration::from_secs(2)));
        h.insert(reqwest::header::RETRY_AFTER, "Wed, 21 Oct 2015 07:28:00 GMT".parse().unwrap());
        assert_eq!(retry_after(&h), None);
    }
}
