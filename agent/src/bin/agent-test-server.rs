//! `agent-test-server [BACKEND_URL]`: the `wrapper` server over stdio, as a child process the
//! agent's tests can kill mid-session. Writes its pid to `$AGENT_TEST_SERVER_PID_FILE` when set.
//! (A cargo test cannot name another crate's binary, so the agent crate carries this one.)

use servers::transport::Transport;

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    // Linked with the agent, reqwest has rustls without a provider: the backend client needs one.
    agent::config::install_crypto_provider();
    if let Some(path) = std::env::var_os("AGENT_TEST_SERVER_PID_FILE") {
        std::fs::write(path, std::process::id().to_string())?;
    }
    let backend_url = std::env::args().nth(1).unwrap_or_else(|| "http://127.0.0.1:1".into());
    let entry = servers::registry::find("wrapper").expect("the wrapper server is registered");
    servers::transport::serve(entry, Transport::Stdio, "127.0.0.1:0".parse()?, &backend_url).await
}
