//! The one TLS set-up of every HTTP client in the workspace.
//!
//! reqwest is built with rustls but no cryptography provider of its own (its `rustls` feature
//! would bring aws-lc, a C library built beside the ring rustls already has), and cargo
//! unifies that choice for every crate in a build. A `reqwest::Client` built before a provider is
//! installed panics, whatever URL it is for — the servers' backend client, the MCP client's HTTP
//! transport, a model provider's client, the trace exporter. Each of those calls
//! [`install_crypto_provider`] on its way to building one.

/// Installs rustls' ring provider as the process default. Idempotent and cheap: a second call
/// finds one installed and does nothing.
pub fn install_crypto_provider() {
    if rustls::crypto::CryptoProvider::get_default().is_none() {
        // Another thread may have installed one in between: that one stays, which is as good.
        let _ = rustls::crypto::ring::default_provider().install_default();
    }
}

/// rmcp's streamable-HTTP client transport for `url`, built after the provider is installed
/// (rmcp builds a default `reqwest::Client` inside).
pub fn http_transport(url: impl Into<std::sync::Arc<str>>) -> rmcp::transport::StreamableHttpClientTransport<reqwest::Client> {
    install_crypto_provider();
    rmcp::transport::StreamableHttpClientTransport::from_uri(url)
}
