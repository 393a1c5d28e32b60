//! The model provider: one OpenAI-compatible chat-completions endpoint (OpenAI, vLLM, Ollama,
//! llama.cpp's server, LiteLLM, …), with retries that the harness decides and counts itself.
//!
//! * Requests go through async-openai's `create_byot` path: the request is JSON we build, and the
//!   response is parsed into `wire::ChatResponse`, our own tolerant type (real providers omit
//!   `total_tokens`, `created` or `object`, invent finish reasons such as `"eos"`, send null usage).
//! * async-openai's default client wraps every request in a retry layer (three retries of 429/5xx
//!   within about 0.7 s) that the caller never sees. We install our own tower service through
//!   its `middleware` feature instead, so each HTTP request is exactly one attempt; the retry loop
//!   lives in `OpenAiCompatible::complete` and every retry is counted. The service also keeps
//!   the status and headers of the attempt, which async-openai's error type drops (`Retry-After`).
//! * An endpoint that says it could not parse the model's own output (llama.cpp's, Ollama's
//!   wording in `failure::UNPARSEABLE_OUTPUT_PHRASES`) is told apart from other server errors: it is the
//!   model's doing. With pinned sampling it is retried once: a second identical answer shows the
//!   model writes the same thing again, and more retries would only spend tokens. Otherwise it is
//!   retried as any transient fault.
//! * The API key is read once from a named environment variable and lives only inside
//!   async-openai's `SecretString`; extra header values (possibly secrets too) live only in its
//!   header map. Neither is reachable through `Debug`, [`ProviderConfig::record_params`](crate::config::ProviderConfig::record_params) or any
//!   transcript event.
//! * The endpoint's dialect ([`crate::dialect`]) decides how the key is sent (`Authorization:
//!   Bearer`, Azure's `api-key`), the query every request keeps, and the names of the parameters;
//!   a parameter goes out only when the plan sets it.
//! * A loopback endpoint (127.0.0.0/8, `[::1]`, `localhost`) may be used without a key: local
//!   servers (llama.cpp, Ollama, vLLM) need none, and a made-up key would be recorded as if one
//!   authenticated the run. Then no auth header is sent and [`OpenAiCompatible::auth`] says
//!   [`Auth::None`](records::Auth::None). Anywhere else a missing key refuses, as a remote
//!   endpoint that answers without one is a misconfiguration worth stopping for.
//! * What a provider reports beyond usage — llama.cpp's `timings`, `system_fingerprint`, the
//!   model id that answered — is kept per turn as given
//!   ([`ProviderExtras`](records::ProviderExtras)), null when absent.
//!
//! The parts: `client` (the requests, retries and redaction), `failure` (what an attempt came to,
//! and why a turn got no answer), `wire` (the answer as providers send it). What pins all this is
//! [`crate::config`]'s, a module below both this one and the dialect.

mod client;
mod failure;
mod wire;

pub use client::OpenAiCompatible;
pub(crate) use client::{Exchange, redact};
pub(crate) use failure::{AttemptOutcome, ProviderFailure, error_chain};
pub(crate) use wire::WireToolCall;
