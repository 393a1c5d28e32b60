//! Sessions as OpenTelemetry traces, sent over OTLP/HTTP (`--otlp-endpoint`, or the standard
//! `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` / `OTEL_EXPORTER_OTLP_ENDPOINT`) to any collector or
//! observability tool that reads OTLP: Phoenix, Jaeger, Tempo, Langfuse, an OpenTelemetry
//! Collector.
//!
//! Each session becomes one trace, built from its record once the record is on disk — so a trace
//! says what the record says, nothing the record does not: an `invoke_agent` root span with the
//! experiment, arm, task, rep, validity and outcome; under it the world reset, a `chat` span per
//! model request (model, usage, finish reason), an `execute_tool` span per tool call (name,
//! argument and result sizes, error) and the verification. Names and attributes follow the
//! OpenTelemetry GenAI semantic conventions (`gen_ai.*`, `mcp.method.name`, `error.type`); the
//! bench's own facts are under `mcpbench.*`. Trace and span ids are derived from the session's
//! identity (experiment, model, server, task, rep, attempt, start time), so the same record always
//! gives the same trace.
//!
//! Export never blocks or fails a session: records are queued to a background task that sends
//! them in batches; a dead or refusing collector is one warning on stderr and a count in the
//! manifest (`otlp`), and the run's results are the same with or without it.

use std::borrow::Cow;
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

use opentelemetry::trace::{SpanContext, SpanId, SpanKind, Status, TraceFlags, TraceId, TraceState};
use opentelemetry::{InstrumentationScope, KeyValue, Value};
use opentelemetry_otlp::{WithExportConfig, WithHttpConfig};
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::trace::{SpanData, SpanEvents, SpanExporter as _, SpanLinks};
use records::outcome::CallKind;
use records::{SessionRecord, Validity};
use sha2::{Digest, Sha256};

/// Attribute names of the OpenTelemetry semantic conventions: GenAI (`gen_ai.*`, development
/// status, kept in their own repository since the conventions crate deprecated its copies), MCP
/// (`mcp.*`) and the general `error.type`.
mod semconv {
    pub const ERROR_TYPE: &str = "error.type";
    pub const GEN_AI_OPERATION_NAME: &str = "gen_ai.operation.name";
    pub const GEN_AI_PROVIDER_NAME: &str = "gen_ai.provider.name";
    pub const GEN_AI_AGENT_NAME: &str = "gen_ai.agent.name";
    pub const GEN_AI_CONVERSATION_ID: &str = "gen_ai.conversation.id";
    pub const GEN_AI_REQUEST_MODEL: &str = "gen_ai.request.model";
    pub const GEN_AI_REQUEST_TEMPERATURE: &str = "gen_ai.request.temperature";
    pub const GEN_AI_REQUEST_MAX_TOKENS: &str = "gen_ai.request.max_tokens";
    pub const GEN_AI_REQUEST_SEED: &str = "gen_ai.request.seed";
    pub const GEN_AI_RESPONSE_MODEL: &str = "gen_ai.response.model";
    pub const GEN_AI_RESPONSE_FINISH_REASONS: &str = "gen_ai.response.finish_reasons";
    pub const GEN_AI_USAGE_INPUT_TOKENS: &str = "gen_ai.usage.input_tokens";
    pub const GEN_AI_USAGE_CACHE_READ_INPUT_TOKENS: &str = "gen_ai.usage.cache_read.input_tokens";
    pub const GEN_AI_USAGE_OUTPUT_TOKENS: &str = "gen_ai.usage.output_tokens";
    pub const GEN_AI_USAGE_REASONING_OUTPUT_TOKENS: &str = "gen_ai.usage.reasoning.output_tokens";
    pub const GEN_AI_TOOL_NAME: &str = "gen_ai.tool.name";
    pub const GEN_AI_TOOL_TYPE: &str = "gen_ai.tool.type";
    pub const MCP_METHOD_NAME: &str = "mcp.method.name";
    pub const MCP_RESOURCE_URI: &str = "mcp.resource.uri";
}

/// The standard variables, read when `--otlp-endpoint` is not given (in this order).
pub const TRACES_ENDPOINT_ENV: &str = "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT";
pub const ENDPOINT_ENV: &str = "OTEL_EXPORTER_OTLP_ENDPOINT";

/// Sessions waiting to be sent; beyond this a session's trace is counted as not exported.
const QUEUE: usize = 4096;
/// Sessions per OTLP request.
const BATCH: usize = 64;
/// One export request's limit unless `OTEL_EXPORTER_OTLP_TRACES_TIMEOUT` or
/// `OTEL_EXPORTER_OTLP_TIMEOUT` (milliseconds, as the OTLP exporter spec names them) says
/// otherwise: a collector that does not answer costs a run this much per batch. At the run's end
/// the queue gets three times this to drain.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(5);
pub const TRACES_TIMEOUT_ENV: &str = "OTEL_EXPORTER_OTLP_TRACES_TIMEOUT";
pub const TIMEOUT_ENV: &str = "OTEL_EXPORTER_OTLP_TIMEOUT";

/// The request timeout the variables give (the first that parses), else [`REQUEST_TIMEOUT`].
fn request_timeout(vars: &dyn Fn(&str) -> Option<String>) -> Duration {
    [TRACES_TIMEOUT_ENV, TIMEOUT_ENV]
        .iter()
        .find_map(|name| vars(name).and_then(|v| v.trim().parse::<u64>().ok()))
        .map_or(REQUEST_TIMEOUT, Duration::from_millis)
}

/// Where traces go: the full OTLP/HTTP traces URL.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Target {
    pub url: String,
    /// What said so: `--otlp-endpoint` or the variable's name.
    pub source: &'static str,
}

impl Target {
    /// The URL as the manifest and the summary show it: no userinfo, no query.
    pub fn shown(&self) -> String {
        crate::redact::url(&self.url)
    }
}

/// The traces URL from the flag (a base URL: `/v1/traces` is appended, as the OTLP spec says for
/// `OTEL_EXPORTER_OTLP_ENDPOINT`), else `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` (used as given), else
/// `OTEL_EXPORTER_OTLP_ENDPOINT` (`/v1/traces` appended); none of them: no export. A value that is
/// not an http(s) URL is refused before anything runs.
pub fn target(flag: Option<&str>) -> anyhow::Result<Option<Target>> {
    target_from(flag, &|name| std::env::var(name).ok())
}

/// [`target`] with the environment given.
fn target_from(flag: Option<&str>, vars: &dyn Fn(&str) -> Option<String>) -> anyhow::Result<Option<Target>> {
    let env = |name: &str| vars(name).filter(|v| !v.trim().is_empty());
    let (base, source, append) = match (flag, env(TRACES_ENDPOINT_ENV), env(ENDPOINT_ENV)) {
        (Some(f), _, _) => (f.to_owned(), "--otlp-endpoint", true),
        (None, Some(t), _) => (t, TRACES_ENDPOINT_ENV, false),
        (None, None, Some(e)) => (e, ENDPOINT_ENV, true),
        (None, None, None) => return Ok(None),
    };
    let base = base.trim();
    let parsed: Option<(&str, &str)> = base.split_once("://").filter(|(scheme, rest)| matches!(*scheme, "http" | "https") && !rest.is_empty());
    anyhow::ensure!(
        parsed.is_some() && !base.contains(char::is_whitespace),
        "{source} {base:?} is not an http(s) URL; give the collector's OTLP/HTTP address, e.g. http://127.0.0.1:4318 (the traces path /v1/traces is added)"
    );
    let url = if append { format!("{}/v1/traces", base.trim_end_matches('/')) } else { base.to_owned() };
    Ok(Some(Target { url, source }))
}

/// What an export reached, for the manifest and the closing summary.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Stats {
    pub sessions: u64,
    pub exported_sessions: u64,
    pub exported_spans: u64,
    pub last_error: Option<String>,
}

impl Stats {
    pub fn not_exported(&self) -> u64 {
        self.sessions - self.exported_sessions
    }

    pub fn manifest(&self, target: &Target) -> records::manifest::OtlpExport {
        records::manifest::OtlpExport {
            endpoint: target.shown(),
            sessions: Some(self.sessions),
            exported_sessions: Some(self.exported_sessions),
            exported_spans: Some(self.exported_spans),
            not_exported_sessions: Some(self.not_exported()),
            last_error: self.last_error.clone(),
        }
    }
}

/// The manifest's entry before the run has counted anything.
pub fn planned(target: &Target) -> records::manifest::OtlpExport {
    records::manifest::OtlpExport {
        endpoint: target.shown(),
        sessions: None,
        exported_sessions: None,
        exported_spans: None,
        not_exported_sessions: None,
        last_error: None,
    }
}

/// A run's exporter: [`Exporter::send`] queues a finished session, a background task sends.
pub struct Exporter {
    target: Target,
    queue: tokio::sync::mpsc::Sender<Vec<SpanData>>,
    stats: Arc<Mutex<Stats>>,
    task: tokio::task::JoinHandle<()>,
    /// How long [`Exporter::finish`] waits for the queue.
    drain: Duration,
}

impl Exporter {
    /// Builds the OTLP/HTTP exporter (headers from `OTEL_EXPORTER_OTLP_HEADERS`, as every OTLP
    /// exporter reads them) and starts the sending task. Needs a Tokio runtime.
    pub fn start(target: Target, experiment: &str) -> anyhow::Result<Self> {
        let timeout = request_timeout(&|name| std::env::var(name).ok());
        // Its HTTP client is a reqwest client (servers::tls).
        servers::tls::install_crypto_provider();
        let mut exporter = opentelemetry_otlp::SpanExporter::builder()
            .with_http()
            .with_endpoint(target.url.clone())
            .with_timeout(timeout)
            .with_headers(Default::default())
            .build()
            .map_err(|e| anyhow::anyhow!("setting up the trace export to {}: {e}", target.shown()))?;
        exporter.set_resource(&resource(experiment));
        let (queue, mut rx) = tokio::sync::mpsc::channel::<Vec<SpanData>>(QUEUE);
        let stats = Arc::new(Mutex::new(Stats::default()));
        let (counts, shown) = (stats.clone(), target.shown());
        let task = tokio::spawn(async move {
            while let Some(first) = rx.recv().await {
                let mut sessions = vec![first];
                while sessions.len() < BATCH {
                    match rx.try_recv() {
                        Ok(s) => sessions.push(s),
                        Err(_) => break,
                    }
                }
                let n = sessions.len() as u64;
                let spans: Vec<SpanData> = sessions.into_iter().flatten().collect();
                let n_spans = spans.len() as u64;
                let result = exporter.export(spans).await;
                let mut s = counts.lock().expect("otlp stats");
                match result {
                    Ok(()) => {
                        s.exported_sessions += n;
                        s.exported_spans += n_spans;
                    }
                    Err(e) => {
                        if s.last_error.is_none() {
                            eprintln!(
                                "warning: exporting traces to {shown} failed ({e}); sessions go on unaffected, and the manifest counts the traces not exported"
                            );
                        }
                        s.last_error = Some(e.to_string());
                    }
                }
            }
            let _ = exporter.shutdown();
        });
        Ok(Self { target, queue, stats, task, drain: timeout * 3 })
    }

    pub fn target(&self) -> &Target {
        &self.target
    }

    /// Queues `record`'s trace; never waits. A full queue counts the session as not exported.
    pub fn send(&self, record: &SessionRecord) {
        self.stats.lock().expect("otlp stats").sessions += 1;
        if self.queue.try_send(spans_of(record)).is_err() {
            let mut s = self.stats.lock().expect("otlp stats");
            s.last_error = Some(format!("the export queue was full ({QUEUE} sessions): the collector is slower than the run"));
        }
    }

    /// Sends what is queued, waiting at most three request timeouts; what is still unsent then is
    /// not exported.
    pub async fn finish(self) -> Stats {
        let Self { queue, stats, mut task, drain: wait, .. } = self;
        drop(queue);
        if tokio::time::timeout(wait, &mut task).await.is_err() {
            task.abort();
            let mut s = stats.lock().expect("otlp stats");
            let unsent = s.sessions - s.exported_sessions;
            s.last_error.get_or_insert_with(|| format!("{unsent} session(s) still unsent after waiting {:.1} s for the collector", wait.as_secs_f64()));
        }
        stats.lock().expect("otlp stats").clone()
    }
}

/// What every trace of the run shares: the bench as the service, the experiment as the project
/// (Phoenix reads `openinference.project.name`; other tools group by `service.name`).
fn resource(experiment: &str) -> Resource {
    Resource::builder_empty()
        .with_service_name("mcp-pattern-bench")
        .with_attributes([
            KeyValue::new("service.version", crate::build_info::VERSION),
            KeyValue::new("mcpbench.experiment", experiment.to_owned()),
            KeyValue::new("openinference.project.name", experiment.to_owned()),
        ])
        .build()
}

/// The trace of one session record: its spans, root first.
pub fn spans_of(r: &SessionRecord) -> Vec<SpanData> {
    let ids = Ids::of(r);
    let started = system_time(r.started_at);
    let ended = system_time(r.ended_at).max(started);
    // The agent's part runs from started_at to ended_at; before it, the world reset and the
    // server's start (the session's time the agent's part does not cover); after it, the verifier.
    let agent_ms = ended.duration_since(started).unwrap_or_default().as_secs_f64() * 1000.0;
    let connect_ms = (r.harness.session_ms - agent_ms).max(0.0);
    let reset_start = before(started, connect_ms + r.harness.reset_ms);
    let verify_end = after(ended, r.harness.verify_ms);

    let mut spans = Vec::new();
    let model = r.model.id.clone();
    let provider = r.model.provider.as_str();
    let mut root = span(&ids, 0, None, SpanKind::Internal, format!("invoke_agent {}", r.server), reset_start, verify_end);
    root.attributes = vec![
        kv(semconv::GEN_AI_OPERATION_NAME, "invoke_agent"),
        kv(semconv::GEN_AI_AGENT_NAME, r.server.clone()),
        kv(semconv::GEN_AI_PROVIDER_NAME, provider),
        kv(semconv::GEN_AI_REQUEST_MODEL, model.clone()),
        kv("openinference.span.kind", "AGENT"),
        kv("mcpbench.experiment", r.experiment.clone()),
        kv("mcpbench.module", r.module.clone()),
        kv("mcpbench.arm", r.server.clone()),
        kv("mcpbench.role", r.role.as_str()),
        kv("mcpbench.task", r.task.clone()),
        kv("mcpbench.split", if r.split.is_dev() { "dev" } else { "held_out" }),
        kv("mcpbench.rep", i64::from(r.rep)),
        kv("mcpbench.turns", r.turns as i64),
        kv("mcpbench.tool_calls", r.tool_calls.len() as i64),
        kv("mcpbench.turn_cap_hit", r.turn_cap_hit),
    ];
    if let Some(attempt) = r.attempt {
        root.attributes.push(kv("mcpbench.attempt", i64::from(attempt)));
    }
    if let Some(fp) = &r.fingerprint_sha256 {
        root.attributes.push(kv("mcpbench.fingerprint_sha256", fp.clone()));
    }
    if let Some(c) = &r.conversation {
        root.attributes.push(kv(semconv::GEN_AI_CONVERSATION_ID, c.id.clone()));
    }
    push_usage(&mut root.attributes, r.totals.input_tokens, r.totals.cached_input_tokens, r.totals.output_tokens, r.totals.reasoning_tokens);
    match &r.validity {
        Validity::Valid => {
            root.attributes.push(kv("mcpbench.validity", "valid"));
            let outcome = r.verifier.as_ref().map_or("not_scored".to_owned(), |v| format!("{:?}", v.verdict).to_lowercase());
            root.attributes.push(kv("mcpbench.outcome", outcome));
        }
        Validity::Invalid { reason, detail } => {
            root.attributes.push(kv("mcpbench.validity", "invalid"));
            root.attributes.push(kv("mcpbench.invalid_reason", reason.to_string()));
            root.attributes.push(kv(semconv::ERROR_TYPE, reason.to_string()));
            root.status = Status::error(format!("invalid session ({reason}): {}", clip(detail)));
        }
    }
    spans.push(root);

    let mut next = 1u64;
    let mut child = |kind, name: String, start, end| {
        let s = span(&ids, next, Some(0), kind, name, start, end);
        next += 1;
        s
    };
    let mut reset = child(SpanKind::Internal, "reset world".into(), reset_start, after(reset_start, r.harness.reset_ms));
    reset.attributes =
        vec![kv("mcpbench.world_seed", r.world_seed as i64), kv("mcpbench.world_scale", i64::from(r.world_scale)), kv("mcpbench.reset_ms", r.harness.reset_ms)];
    spans.push(reset);

    // Requests and calls in the order they were made; one without a recorded time (older
    // records) follows the one before it.
    let mut cursor_ms = 0.0f64;
    for t in &r.turn_records {
        let at = t.at_ms.unwrap_or(cursor_ms);
        cursor_ms = at + t.latency_ms;
        let mut s = child(SpanKind::Client, format!("chat {model}"), after(started, at), after(started, cursor_ms));
        s.attributes = chat_attributes(provider, &model, t.index, t.retries);
        s.attributes.push(kv("mcpbench.tool_calls_requested", i64::from(t.tool_calls)));
        if let Some(served) = &t.extras.served_model {
            s.attributes.push(kv(semconv::GEN_AI_RESPONSE_MODEL, served.clone()));
        }
        if let Some(records::Temperature::Value(v)) = r.model.temperature {
            s.attributes.push(kv(semconv::GEN_AI_REQUEST_TEMPERATURE, v));
        }
        if let Some(m) = r.model.max_tokens {
            s.attributes.push(kv(semconv::GEN_AI_REQUEST_MAX_TOKENS, i64::from(m)));
        }
        if let Some(seed) = r.model.seed {
            s.attributes.push(kv(semconv::GEN_AI_REQUEST_SEED, seed as i64));
        }
        if let Some(f) = &t.finish_reason {
            s.attributes.push(KeyValue::new(
                semconv::GEN_AI_RESPONSE_FINISH_REASONS,
                Value::Array(opentelemetry::Array::String(vec![opentelemetry::StringValue::from(f.clone())])),
            ));
        }
        let u = &t.usage;
        push_usage(&mut s.attributes, u.prompt_tokens, u.cached_prompt_tokens, u.completion_tokens, u.reasoning_tokens);
        spans.push(s);
        for c in r.tool_calls.iter().filter(|c| c.turn == t.index) {
            cursor_ms = push_call(&mut spans, &mut child, started, c, cursor_ms);
        }
    }
    // The oracle's calls (turn 0: it has no model requests).
    for c in r.tool_calls.iter().filter(|c| c.turn == 0) {
        cursor_ms = push_call(&mut spans, &mut child, started, c, cursor_ms);
    }
    if let Some(f) = &r.failed_turn {
        let mut s = child(SpanKind::Client, format!("chat {model}"), ended, ended);
        s.attributes = chat_attributes(provider, &model, f.index, f.retries);
        s.attributes.push(kv(semconv::ERROR_TYPE, "no_answer"));
        s.status = Status::error(format!("the request got no answer: {}", clip(&f.detail)));
        spans.push(s);
    }
    if let Some(v) = &r.verifier {
        let mut s = child(SpanKind::Internal, "verify".into(), ended, verify_end);
        s.attributes = vec![
            kv("mcpbench.outcome", format!("{:?}", v.verdict).to_lowercase()),
            kv("mcpbench.checks", v.checks.len() as i64),
            kv("mcpbench.checks_failed", v.checks.iter().filter(|c| !c.held).count() as i64),
        ];
        spans.push(s);
    }
    spans
}

/// What every model request's span says, answered or not.
fn chat_attributes(provider: &'static str, model: &str, turn: u32, retries: u32) -> Vec<KeyValue> {
    vec![
        kv(semconv::GEN_AI_OPERATION_NAME, "chat"),
        kv(semconv::GEN_AI_PROVIDER_NAME, provider),
        kv(semconv::GEN_AI_REQUEST_MODEL, model.to_owned()),
        kv("openinference.span.kind", "LLM"),
        kv("mcpbench.turn", i64::from(turn)),
        kv("mcpbench.retries", i64::from(retries)),
    ]
}

fn push_call(
    spans: &mut Vec<SpanData>,
    child: &mut impl FnMut(SpanKind, String, SystemTime, SystemTime) -> SpanData,
    started: SystemTime,
    c: &records::ToolCallRecord,
    cursor_ms: f64,
) -> f64 {
    let at = c.at_ms.unwrap_or(cursor_ms);
    let end_ms = at + c.latency_ms;
    let mut s = child(SpanKind::Internal, format!("execute_tool {}", c.name), after(started, at), after(started, end_ms));
    let method = match c.kind {
        CallKind::Tool => "tools/call",
        CallKind::ReadResource => "resources/read",
        CallKind::ListResources => "resources/list",
    };
    s.attributes = vec![
        kv(semconv::GEN_AI_OPERATION_NAME, "execute_tool"),
        kv(semconv::GEN_AI_TOOL_NAME, c.name.clone()),
        kv(semconv::GEN_AI_TOOL_TYPE, "function"),
        kv(semconv::MCP_METHOD_NAME, method),
        kv("openinference.span.kind", "TOOL"),
        kv("mcpbench.turn", i64::from(c.turn)),
        kv("mcpbench.arguments_bytes", c.args_bytes as i64),
        kv("mcpbench.result_bytes", c.result_bytes as i64),
    ];
    if c.kind == CallKind::ReadResource {
        s.attributes.push(kv(semconv::MCP_RESOURCE_URI, c.name.clone()));
    }
    if c.is_error {
        let kind = if c.unknown_tool {
            "unknown_tool"
        } else if c.invalid_arguments {
            "invalid_arguments"
        } else {
            "tool_error"
        };
        s.attributes.push(kv(semconv::ERROR_TYPE, kind));
        s.status = Status::error(kind);
    }
    spans.push(s);
    end_ms
}

/// Token counts as the conventions name them; a count the record does not hold is left out,
/// never sent as 0.
fn push_usage(attrs: &mut Vec<KeyValue>, input: Option<u64>, cached: Option<u64>, output: Option<u64>, reasoning: Option<u64>) {
    for (key, value) in [
        (semconv::GEN_AI_USAGE_INPUT_TOKENS, input),
        (semconv::GEN_AI_USAGE_CACHE_READ_INPUT_TOKENS, cached),
        (semconv::GEN_AI_USAGE_OUTPUT_TOKENS, output),
        (semconv::GEN_AI_USAGE_REASONING_OUTPUT_TOKENS, reasoning),
    ] {
        if let Some(v) = value {
            attrs.push(kv(key, v as i64));
        }
    }
}

/// A session's trace id and its spans' ids, from its identity.
struct Ids {
    trace: [u8; 16],
    seed: [u8; 32],
}

impl Ids {
    fn of(r: &SessionRecord) -> Self {
        let identity = format!(
            "{}\u{0}{}\u{0}{}\u{0}{}\u{0}{}\u{0}{}\u{0}{}",
            r.experiment,
            r.model.id,
            r.server,
            r.task,
            r.rep,
            r.attempt.unwrap_or(1),
            r.started_at.to_rfc3339()
        );
        let seed: [u8; 32] = Sha256::digest(identity.as_bytes()).into();
        let mut trace = [0u8; 16];
        trace.copy_from_slice(&seed[..16]);
        trace[15] |= 1; // never the invalid all-zero id
        Self { trace, seed }
    }

    /// The `n`th span's id (0 = the root).
    fn span(&self, n: u64) -> SpanId {
        let mut h = Sha256::new();
        h.update(self.seed);
        h.update(n.to_be_bytes());
        let digest = h.finalize();
        let mut id = [0u8; 8];
        id.copy_from_slice(&digest[..8]);
        id[7] |= 1;
        SpanId::from_bytes(id)
    }
}

/// Trace and span ids of a record's trace as hex, root span first (what a collector shows).
pub fn ids_hex(r: &SessionRecord) -> (String, String) {
    let ids = Ids::of(r);
    (TraceId::from_bytes(ids.trace).to_string(), ids.span(0).to_string())
}

fn span(ids: &Ids, n: u64, parent: Option<u64>, kind: SpanKind, name: String, start: SystemTime, end: SystemTime) -> SpanData {
    SpanData {
        span_context: SpanContext::new(TraceId::from_bytes(ids.trace), ids.span(n), TraceFlags::SAMPLED, false, TraceState::default()),
        parent_span_id: parent.map_or(SpanId::INVALID, |p| ids.span(p)),
        parent_span_is_remote: false,
        span_kind: kind,
        name: Cow::Owned(name),
        start_time: start,
        end_time: end.max(start),
        attributes: Vec::new(),
        dropped_attributes_count: 0,
        events: SpanEvents::default(),
        links: SpanLinks::default(),
        status: Status::Unset,
        instrumentation_scope: InstrumentationScope::builder("mcp-pattern-bench").with_version(crate::build_info::VERSION).build(),
    }
}

fn kv(key: &'static str, value: impl Into<Value>) -> KeyValue {
    KeyValue::new(key, value)
}

fn system_time(t: chrono::DateTime<chrono::Utc>) -> SystemTime {
    SystemTime::from(t)
}

fn after(t: SystemTime, ms: f64) -> SystemTime {
    t + Duration::from_secs_f64(ms.max(0.0) / 1000.0)
}

fn before(t: SystemTime, ms: f64) -> SystemTime {
    t.checked_sub(Duration::from_secs_f64(ms.max(0.0) / 1000.0)).unwrap_or(t)
}

/// A detail short enough for a span status.
fn clip(text: &str) -> String {
    const MAX: usize = 500;
    match text.char_indices().nth(MAX) {
        Some((i, _)) => format!("{}…", &text[..i]),
        None => text.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vars(pairs: &'static [(&'static str, &'static str)]) -> impl Fn(&str) -> Option<String> {
        move |name| pairs.iter().find(|(k, _)| *k == name).map(|(_, v)| (*v).to_owned())
    }

    #[test]
    fn the_flag_wins_then_the_traces_variable_as_given_then_the_base_variable_with_the_path() {
        let both: &[(&str, &str)] = &[(TRACES_ENDPOINT_ENV, "http://t.example/custom"), (ENDPOINT_ENV, "http://b.example:4318/")];
        let t = target_from(Some("http://flag.example:4318/"), &vars(both)).unwrap().unwrap();
        assert_eq!((t.url.as_str(), t.source), ("http://flag.example:4318/v1/traces", "--otlp-endpoint"));
        let t = target_from(None, &vars(both)).unwrap().unwrap();
        assert_eq!((t.url.as_str(), t.source), ("http://t.example/custom", TRACES_ENDPOINT_ENV));
        let t = target_from(None, &vars(&[(ENDPOINT_ENV, "https://b.example:4318/")])).unwrap().unwrap();
        assert_eq!((t.url.as_str(), t.source), ("https://b.example:4318/v1/traces", ENDPOINT_ENV));
        assert_eq!(target_from(None, &vars(&[(ENDPOINT_ENV, "  ")])).unwrap(), None, "an empty variable is unset");
        assert_eq!(target_from(None, &vars(&[])).unwrap(), None);
    }

    #[test]
    fn what_is_not_an_http_url_is_refused_naming_where_it_came_from() {
        for bad in ["localhost:4318", "grpc://c:4317", "http://", "http://a b"] {
            let e = target_from(Some(bad), &vars(&[])).unwrap_err().to_string();
            assert!(e.starts_with(&format!("--otlp-endpoint {bad:?} is not an http(s) URL")), "{e}");
        }
    }

    #[test]
    fn the_request_timeout_reads_the_standard_variables_in_milliseconds() {
        assert_eq!(request_timeout(&vars(&[])), REQUEST_TIMEOUT);
        assert_eq!(request_timeout(&vars(&[(TIMEOUT_ENV, "1500")])), Duration::from_millis(1500));
        assert_eq!(request_timeout(&vars(&[(TRACES_TIMEOUT_ENV, "200"), (TIMEOUT_ENV, "1500")])), Duration::from_millis(200));
        assert_eq!(request_timeout(&vars(&[(TRACES_TIMEOUT_ENV, "soon"), (TIMEOUT_ENV, "1500")])), Duration::from_millis(1500));
    }

    #[test]
    fn the_shown_endpoint_keeps_no_credential() {
        let t = Target { url: "https://user:pw@c.example:4318/v1/traces?api_key=k".into(), source: ENDPOINT_ENV };
        assert_eq!(t.shown(), "https://c.example:4318/v1/traces?<redacted>");
    }
}
