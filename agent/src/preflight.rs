//! The endpoint preflight: before a run spends anything, a few tokens answer whether the endpoint
//! answers, whether it serves the model id, and whether tool calls come back NATIVE.
//!
//! The last is the one that matters most: a server whose chat template has no tool support
//! returns the model's calls as text (or drops the tools silently), and every session then scores
//! zero as a *valid* session — plausible numbers from a broken setup. So the preflight fails
//! closed: only a native `tool_calls` answer naming the one function offered passes.
//!
//! Two requests at most. `GET {base_url}/models` (no tokens) checks the model id where the server
//! offers a listing it lets this key read (a listing that is absent or refused — 401, 403, 404 —
//! is recorded and the chat request decides: some endpoints authorise the listing differently
//! from chat); then exactly one chat request — no retry loop — offers a single trivial function
//! with `tool_choice: "auto"` (not `"required"`: llama.cpp's grammar loops on it) and exactly the
//! parameters a session sends (temperature or none, seed, effort, the limit under the dialect's
//! name): the preflight sends nothing the run would not. It goes through the provider's own
//! request and classification, so quota and limit answers and error texts read exactly as they
//! would in a session; a rejected parameter gets a hint naming the flag that sets it.
//!
//! What it keeps ([`Preflight`], written into check.json and manifest.json) holds request URLs and
//! bodies and response statuses and bodies, never a header; any header value or the key that a
//! provider echoes back is redacted.

use records::Auth;
use serde::Serialize;
use serde_json::{Value, json};

use crate::provider::{AttemptOutcome, Exchange, OpenAiCompatible, error_chain};
use crate::session::SYSTEM_PROMPT;
use crate::text_call::tool_call_as_text;

/// The one function the probe offers.
pub const PROBE_FUNCTION: &str = "preflight_echo";
/// A response body is kept up to this many bytes.
pub const PROBE_BODY_LIMIT: usize = 4096;
/// Ids quoted from a model listing that lacks the model.
const LISTED_IDS_QUOTED: usize = 20;
/// Provider text quoted in [`Preflight::summary`] (the whole text is in the record).
const SUMMARY_TEXT_LIMIT: usize = 400;

const PROBE_PROMPT: &str = "Call the function preflight_echo with the word \"ready\".";

/// What the preflight found. `passed` only when every check passed.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Preflight {
    pub passed: bool,
    /// The checks that could be decided, in order: `endpoint`, `model`, `native_tool_calls`.
    pub checks: Vec<PreflightCheck>,
    pub failure: Option<PreflightFailure>,
    /// Per request: `{ "request": {method, url, body}, "response": {status, body} }`.
    pub probes: Vec<Value>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PreflightCheck {
    /// `endpoint` | `model` | `native_tool_calls`
    pub name: &'static str,
    pub passed: bool,
    pub detail: String,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PreflightFailure {
    pub kind: PreflightFailureKind,
    /// What the endpoint said, verbatim (or what went wrong on the way, when nothing answered).
    pub provider_text: String,
    /// What to do about it.
    pub hint: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum PreflightFailureKind {
    /// Nothing answered: connection refused, DNS, timeout.
    Unreachable,
    /// The key was refused (401/403).
    Unauthorized,
    /// The endpoint does not serve the model id.
    UnknownModel,
    /// A quota or usage/session-limit refusal.
    Limit,
    /// The model's call came back as text in `content`, not as a native tool call.
    ToolCallAsText,
    /// The model answered without calling the function at all.
    NoToolCall,
    /// The endpoint rejected a parameter the run sends (temperature, effort, the limit's name,
    /// Azure's api-version): the hint names the flag to change.
    RejectedParameter,
    /// Any other failure of the probe request.
    ProviderError,
}

impl PreflightFailureKind {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Unreachable => "unreachable",
            Self::Unauthorized => "unauthorized",
            Self::UnknownModel => "unknown_model",
            Self::Limit => "limit",
            Self::ToolCallAsText => "tool_call_as_text",
            Self::NoToolCall => "no_tool_call",
            Self::RejectedParameter => "rejected_parameter",
            Self::ProviderError => "provider_error",
        }
    }
}

impl std::fmt::Display for PreflightFailureKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Preflight {
    /// One or two lines a user can act on: the kind and the endpoint's text (its line breaks
    /// written `\n`, so it stays one line), then the hint.
    pub fn summary(&self) -> String {
        match &self.failure {
            None if self.passed => {
                let checks: Vec<&str> = self.checks.iter().map(|c| c.name).collect();
                format!("preflight passed ({}; {} request(s))", checks.join(", "), self.probes.len())
            }
            None => "preflight failed (no failure recorded)".to_owned(),
            Some(f) => {
                let text = shorten(&f.provider_text, SUMMARY_TEXT_LIMIT).replace('\r', "\\r").replace('\n', "\\n");
                format!("preflight failed: {}: {text}\nhint: {}", f.kind, f.hint)
            }
        }
    }
}

/// Asks the endpoint behind `provider` whether it answers, serves the model, and returns native
/// tool calls; spends at most one chat request, under the run's own token limit (`--max-tokens`)
/// when it sets one.
pub async fn preflight(provider: &OpenAiCompatible) -> Preflight {
    let mut run = Run { provider, secrets: provider.secret_values(), probes: vec![], endpoint: None, model: None, native: None };
    let failure = match run.list_models().await {
        Err(failure) => Some(failure),
        Ok(listing) => run.call_probe(listing).await.err(),
    };
    run.finish(failure)
}

/// The checks' verdicts so far: `None` is not decided.
struct Run<'a> {
    provider: &'a OpenAiCompatible,
    secrets: Vec<String>,
    probes: Vec<Value>,
    endpoint: Option<(bool, String)>,
    model: Option<(bool, String)>,
    native: Option<(bool, String)>,
}

/// What `GET /models` said about the model.
enum Listing {
    Listed,
    /// The server offers no listing (or not one we can read): the chat request decides.
    NotOffered(String),
}

impl Run<'_> {
    async fn list_models(&mut self) -> Result<Listing, PreflightFailure> {
        let url = self.provider.models_url();
        let request = json!({ "method": "GET", "url": url, "body": null });
        let (status, body) = match self.provider.list_models().await {
            Ok(answer) => answer,
            Err(e) => {
                let text = self.clean(&error_chain(&e));
                self.probes.push(json!({ "request": request, "response": null, "error": text }));
                self.endpoint = Some((false, format!("no answer from GET {url}: {text}")));
                return Err(self.unreachable(text));
            }
        };
        let body = self.clean(&body);
        self.probes.push(json!({ "request": request, "response": self.response(status, Some(&body), true) }));
        if matches!(status, 401 | 403) {
            // Not decided: some endpoints (Anthropic's, gateways) authorise the listing otherwise
            // than chat. The chat request decides whether the key works.
            return Ok(Listing::NotOffered(format!(
                "GET /models answered HTTP {status}; the listing is not authorised like chat here, so the chat request decides"
            )));
        }
        self.endpoint = Some((true, format!("GET {url} answered HTTP {status}")));
        let ids = (status == 200).then(|| served_ids(&body)).flatten();
        let Some(ids) = ids else {
            let why = match status {
                200 => "GET /models answered without a model list".to_owned(),
                404 | 405 | 501 => format!("the server does not offer GET /models (HTTP {status})"),
                _ => format!("GET /models answered HTTP {status}"),
            };
            return Ok(Listing::NotOffered(why));
        };
        let model = &self.provider.config().model;
        if ids.iter().any(|id| same_model(id, model)) {
            self.model = Some((true, format!("GET /models lists `{model}` ({} model(s) served)", ids.len())));
            return Ok(Listing::Listed);
        }
        let quoted: Vec<String> = ids.iter().take(LISTED_IDS_QUOTED).map(|id| format!("`{id}`")).collect();
        let more = ids.len().saturating_sub(LISTED_IDS_QUOTED);
        let text = format!(
            "GET /models lists {} model(s) and not `{model}`: {}{}",
            ids.len(),
            if quoted.is_empty() { "(none)".to_owned() } else { quoted.join(", ") },
            if more > 0 { format!(" and {more} more") } else { String::new() }
        );
        self.model = Some((false, text.clone()));
        Err(PreflightFailure { kind: PreflightFailureKind::UnknownModel, provider_text: text, hint: unknown_model_hint(&self.provider.models_url()) })
    }

    async fn call_probe(&mut self, listing: Listing) -> Result<(), PreflightFailure> {
        let body = self.probe_body();
        let (outcome, exchange) = self.provider.exchange(&body).await;
        self.record(&body, &exchange);
        if exchange.status.is_some() && self.endpoint.is_none() {
            self.endpoint = Some((true, format!("POST {} answered HTTP {}", self.provider.chat_url(), exchange.status.unwrap_or_default())));
        }
        let model = self.provider.config().model.clone();
        // Any answer at all is the model being served, when the listing could not say so.
        let served = |why: &str| (true, format!("the chat request for `{model}` was answered ({why})"));
        let response = match outcome {
            AttemptOutcome::Answer(response, _) => response,
            AttemptOutcome::Limit(detail) => return Err(self.limit(detail)),
            AttemptOutcome::ContextExceeded(detail) => {
                let hint = "the one-line probe does not fit the model's context: check the server's context size (llama.cpp: -c) and --max-tokens";
                return Err(self.probe_failed(PreflightFailureKind::ProviderError, detail, hint.to_owned()));
            }
            AttemptOutcome::UnparseableOutput(detail) => {
                let hint = format!("the server's tool-call parser rejected what the model wrote for a one-function call. {}", tool_call_hint());
                return Err(self.probe_failed(PreflightFailureKind::ProviderError, detail, hint));
            }
            AttemptOutcome::Fatal(detail) | AttemptOutcome::Transient { detail, .. } => return Err(self.refused(exchange.status, detail)),
        };
        if let Listing::NotOffered(why) = &listing {
            self.model = Some(served(why));
        }
        if let Some(text) = response.limit_refusal() {
            return Err(self.limit(text));
        }
        let message = response.message();
        let finish = response.finish_reason().unwrap_or_else(|| "none".to_owned());
        let names: Vec<&str> = message.tool_calls.iter().map(|c| c.function.name.as_str()).collect();
        if let Some(call) = message.tool_calls.iter().find(|c| c.function.name == PROBE_FUNCTION) {
            let detail = format!("native tool call {PROBE_FUNCTION}({}) (finish_reason: {finish})", call.function.arguments_text());
            self.native = Some((true, self.clean(&detail)));
            return Ok(());
        }
        let text = message.text().map(|t| self.clean(&t));
        let (kind, provider_text, hint) = if names.is_empty() && finish == "length" {
            let limit = self.provider.config().max_tokens.map_or("the endpoint's own limit".to_owned(), |m| format!("--max-tokens {m}"));
            let hint = format!(
                "the answer was cut at the response limit ({limit}) before the model called the function: raise --max-tokens (reasoning models spend output tokens on reasoning first), or leave it unset"
            );
            (PreflightFailureKind::ProviderError, text.filter(|t| !t.is_empty()).unwrap_or_else(|| format!("(no content; finish_reason: {finish})")), hint)
        } else if !names.is_empty() {
            let text = format!("native tool calls to {names:?}, not to the one function offered, {PROBE_FUNCTION}");
            (PreflightFailureKind::NoToolCall, self.clean(&text), "the model called a function it was not offered: it cannot be relied on to use the functions it is given; try another model, or run with --skip-preflight (recorded)".to_owned())
        } else if let Some(t) = text.as_deref().filter(|t| tool_call_as_text(t, &[PROBE_FUNCTION.to_owned()]).is_some()) {
            let hint = format!("the model wrote the call as text and the server did not turn it into a tool call. {}", tool_call_hint());
            (PreflightFailureKind::ToolCallAsText, t.to_owned(), hint)
        } else {
            let hint = format!(
                "the model answered without calling the one function offered: the server may have dropped the tools (llama.cpp does so silently when the chat template has no tool support), or the model does not call tools. {}",
                tool_call_hint()
            );
            (PreflightFailureKind::NoToolCall, text.filter(|t| !t.is_empty()).unwrap_or_else(|| format!("(no content; finish_reason: {finish})")), hint)
        };
        self.native = Some((false, format!("{kind}: {}", shorten(&provider_text, SUMMARY_TEXT_LIMIT))));
        Err(PreflightFailure { kind, provider_text, hint })
    }

    /// A request the endpoint answered with an error (or that got no answer).
    fn refused(&mut self, status: Option<u16>, detail: String) -> PreflightFailure {
        let detail = self.clean(&detail);
        let hint = status.and_then(|s| self.rejection_hint(s, &detail));
        match status {
            None => {
                if let Some(probe) = self.probes.last_mut() {
                    probe["error"] = json!(detail);
                }
                self.endpoint = Some((false, format!("no answer from POST {}: {detail}", self.provider.chat_url())));
                self.unreachable(detail)
            }
            Some(s) if matches!(s, 401 | 403) || (s == 400 && names_a_bad_key(&detail)) => {
                self.endpoint = Some((false, format!("POST /chat/completions refused the key: HTTP {s}")));
                self.unauthorized(detail)
            }
            Some(s) if hint.is_some() => {
                self.endpoint = Some((true, format!("POST {} answered HTTP {s}", self.provider.chat_url())));
                self.probe_failed(PreflightFailureKind::RejectedParameter, detail, hint.unwrap_or_default())
            }
            Some(404) if names_the_model(&detail) => {
                self.model = Some((false, format!("the chat request for `{}` answered HTTP 404", self.provider.config().model)));
                PreflightFailure { kind: PreflightFailureKind::UnknownModel, provider_text: detail, hint: unknown_model_hint(&self.provider.models_url()) }
            }
            Some(404) => {
                let hint = "POST /chat/completions is not found under --base-url: give the API root that has it (it usually ends in /v1)";
                self.probe_failed(PreflightFailureKind::ProviderError, detail, hint.to_owned())
            }
            Some(_) => {
                let hint = "the endpoint failed the one probe request (it is not retried): fix what its text says, or run again if it was passing; --skip-preflight runs anyway (recorded)";
                self.probe_failed(PreflightFailureKind::ProviderError, detail, hint.to_owned())
            }
        }
    }

    fn rejection_hint(&self, status: u16, detail: &str) -> Option<String> {
        crate::dialect::rejection_hint(self.provider.config(), self.provider.has_api_version(), Some(status), detail)
    }

    fn probe_failed(&mut self, kind: PreflightFailureKind, detail: String, hint: String) -> PreflightFailure {
        let detail = self.clean(&detail);
        self.native = Some((false, format!("not checked: the probe request failed: {}", shorten(&detail, SUMMARY_TEXT_LIMIT))));
        PreflightFailure { kind, provider_text: detail, hint }
    }

    fn limit(&mut self, detail: String) -> PreflightFailure {
        let hint = "the provider refused for quota or a usage/session limit: wait for it to reset or raise it; no session was run";
        self.probe_failed(PreflightFailureKind::Limit, detail, hint.to_owned())
    }

    fn unreachable(&self, text: String) -> PreflightFailure {
        let hint = format!(
            "nothing answered at {}: check --base-url (it usually ends in /v1) and that the model server is running and reachable from here",
            self.provider.config().base_url
        );
        PreflightFailure { kind: PreflightFailureKind::Unreachable, provider_text: text, hint }
    }

    fn unauthorized(&self, text: String) -> PreflightFailure {
        let var = &self.provider.config().api_key_env;
        let hint = match self.provider.auth() {
            Auth::Key => format!("the endpoint refused the key read from ${var}: export the right key in it, or name another variable with --api-key-env"),
            // A loopback server started with a key (llama.cpp --api-key, vLLM --api-key) wants it.
            Auth::None => format!(
                "the endpoint wants a key and none was sent (${var} is unset): export the server's key in it, or name another variable with --api-key-env"
            ),
        };
        PreflightFailure { kind: PreflightFailureKind::Unauthorized, provider_text: text, hint }
    }

    fn probe_body(&self) -> Value {
        let messages = [json!({ "role": "system", "content": SYSTEM_PROMPT }), json!({ "role": "user", "content": PROBE_PROMPT })];
        // Exactly a session's request: a lower limit than the run's could be spent on reasoning
        // before any call, and a parameter the run does not send proves nothing about the run.
        self.provider.request_body(&messages, &[probe_function()])
    }

    fn record(&mut self, body: &Value, exchange: &Exchange) {
        let request = json!({ "method": "POST", "url": self.provider.chat_url(), "body": body });
        let probe = match exchange.status {
            None => json!({ "request": request, "response": null }),
            Some(status) => {
                let text = exchange.body.as_deref().map(|b| self.clean(b));
                json!({ "request": request, "response": self.response(status, text.as_deref(), exchange.verbatim) })
            }
        };
        self.probes.push(probe);
    }

    fn response(&self, status: u16, body: Option<&str>, verbatim: bool) -> Value {
        let mut response = json!({ "status": status, "body": body.map(|b| truncate(b, PROBE_BODY_LIMIT)) });
        if let Some(b) = body.filter(|b| b.len() > PROBE_BODY_LIMIT) {
            response["body_bytes"] = json!(b.len());
        }
        if !verbatim {
            // async-openai parses JSON answers and drops the bytes: this is the parsed value again.
            response["body_reserialised"] = json!(true);
        }
        response
    }

    /// A provider may echo what it was sent (a gateway quoting the rejected key): never keep it.
    fn clean(&self, text: &str) -> String {
        crate::provider::redact(&self.secrets, text.to_owned())
    }

    fn finish(self, failure: Option<PreflightFailure>) -> Preflight {
        let checks: Vec<PreflightCheck> = [("endpoint", self.endpoint), ("model", self.model), ("native_tool_calls", self.native)]
            .into_iter()
            .filter_map(|(name, verdict)| verdict.map(|(passed, detail)| PreflightCheck { name, passed, detail }))
            .collect();
        let passed = failure.is_none() && checks.len() == 3 && checks.iter().all(|c| c.passed);
        Preflight { passed, checks, failure, probes: self.probes }
    }
}

fn probe_function() -> Value {
    json!({
        "type": "function",
        "function": {
            "name": PROBE_FUNCTION,
            "description": "Echo a word back.",
            "parameters": {
                "type": "object",
                "properties": { "word": { "type": "string", "description": "The word to echo." } },
                "required": ["word"],
                "additionalProperties": false
            }
        }
    })
}

/// The ids of an OpenAI-style listing (`{"data": [{"id": …}, …]}`); `None` for any other body.
fn served_ids(body: &str) -> Option<Vec<String>> {
    let listing: Value = serde_json::from_str(body).ok()?;
    let data = listing.get("data")?.as_array()?;
    Some(data.iter().filter_map(|m| m.get("id").and_then(Value::as_str)).map(str::to_owned).collect())
}

/// Whether a listed id is the model asked for: as written, or without the `models/` prefix that
/// Gemini's OpenAI-compatible listing puts before every id.
fn same_model(listed: &str, model: &str) -> bool {
    listed == model || listed.strip_prefix("models/") == Some(model)
}

/// Whether a 400 says the key is wrong (Gemini's compatibility endpoint answers a bad key with
/// 400 `API_KEY_INVALID`, "API key not valid. Please pass a valid API key.").
fn names_a_bad_key(detail: &str) -> bool {
    let d = detail.to_lowercase();
    ["api key not valid", "api_key_invalid", "invalid api key", "incorrect api key"].iter().any(|p| d.contains(p))
}

/// Whether a 404 is about the model (OpenAI's `model_not_found`, vLLM's "The model `m` does not
/// exist", Ollama's "model \"m\" not found") rather than about the path.
fn names_the_model(detail: &str) -> bool {
    detail.to_lowercase().contains("model")
}

fn unknown_model_hint(models_url: &str) -> String {
    format!(
        "the endpoint does not serve this model id: pass one it serves to --models (GET {models_url} lists them where the server offers the listing; \
llama.cpp's server serves the name given by --alias, else the model file's path; Ollama: `ollama list`)"
    )
}

fn tool_call_hint() -> &'static str {
    "Tool calls must come back as native `tool_calls`. llama.cpp: start llama-server with --jinja and a chat template that supports tools (--chat-template-file FILE); \
vLLM: --enable-auto-tool-choice --tool-call-parser <the parser for this model>; Ollama: a model whose template supports tools (`ollama show MODEL` lists `tools` under Capabilities). \
--skip-preflight runs anyway (recorded in the manifest)."
}

/// At most `limit` bytes, cut at a character boundary.
fn truncate(text: &str, limit: usize) -> String {
    if text.len() <= limit {
        return text.to_owned();
    }
    let mut end = limit;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    text[..end].to_owned()
}

fn shorten(text: &str, limit: usize) -> String {
    let cut = truncate(text, limit);
    if cut.len() < text.len() { format!("{cut}…") } else { cut }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn listings_are_read_only_in_openai_shape() {
        assert_eq!(served_ids(r#"{"object":"list","data":[{"id":"a"},{"id":"b","object":"model"}]}"#), Some(vec!["a".into(), "b".into()]));
        assert_eq!(served_ids(r#"{"object":"list","data":[]}"#), Some(vec![]));
        assert_eq!(served_ids(r#"{"models":[{"name":"a"}]}"#), None);
        assert_eq!(served_ids("404 page not found"), None);
    }

    #[test]
    fn truncation_keeps_characters_whole() {
        assert_eq!(truncate("abc", 10), "abc");
        assert_eq!(truncate("aéb", 2), "a");
        assert_eq!(shorten("abcdef", 3), "abc…");
    }

    #[test]
    fn a_failure_summary_names_the_kind_quotes_the_text_and_gives_the_hint() {
        let p = Preflight {
            passed: false,
            checks: vec![],
            failure: Some(PreflightFailure { kind: PreflightFailureKind::NoToolCall, provider_text: "Ready!".into(), hint: "do this".into() }),
            probes: vec![],
        };
        assert_eq!(p.summary(), "preflight failed: no_tool_call: Ready!\nhint: do this");
        let multiline = Preflight {
            failure: Some(PreflightFailure { kind: PreflightFailureKind::ToolCallAsText, provider_text: "```json\n{}\n```".into(), hint: "h".into() }),
            ..p
        };
        assert_eq!(multiline.summary(), "preflight failed: tool_call_as_text: ```json\\n{}\\n```\nhint: h");
        assert_eq!(serde_json::to_value(PreflightFailureKind::ToolCallAsText).unwrap(), "tool_call_as_text");
    }
}
