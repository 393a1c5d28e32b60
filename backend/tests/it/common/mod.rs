//! Shared fixture: a real Postgres (DATABASE_URL, else an embedded cluster) and the backend
//! served over real HTTP on a loopback port.
#![allow(dead_code)]

pub mod tools;

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};

use backend::postgres::PostgresSource;
use backend::{AppState, Cluster, World, WorldSpec};
use serde_json::Value;

pub struct TestBackend {
    pub base: String,
    /// The control plane's base URL (its own listener, as a standalone backend serves it).
    pub admin_base: String,
    pub client: reqwest::Client,
    pub world: Arc<World>,
    pub cluster: Arc<Cluster>,
    server: tokio::task::JoinHandle<()>,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    // Dropped last: stops an embedded cluster after everything using it.
    source: Option<PostgresSource>,
}

/// Postgres for the tests, found as the product finds it: `DATABASE_URL` (e.g. compose.yaml's
/// Postgres 16: `docker compose up -d postgres`, then
/// `DATABASE_URL=postgres://bench:bench@localhost:5433/bench`), else an embedded cluster.
pub async fn test_postgres() -> Result<PostgresSource, String> {
    PostgresSource::from_env().await.map_err(|e| e.to_string())
}

/// A world name unique across test processes sharing one DATABASE_URL server.
pub fn unique_world() -> String {
    static N: AtomicU32 = AtomicU32::new(0);
    format!("t{}_{}", std::process::id(), N.fetch_add(1, Ordering::Relaxed))
}

impl TestBackend {
    pub async fn start() -> Self {
        Self::start_with(WorldSpec::default(), None).await
    }

    pub async fn start_with(spec: WorldSpec, admin_token: Option<&str>) -> Self {
        let source = test_postgres().await.unwrap_or_else(|e| panic!("{e}"));
        let cluster = Cluster::connect(&source.admin_url()).await.expect("connect");
        let world = World::create(cluster.clone(), &unique_world(), spec).await.expect("world");
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let base = format!("http://{}", listener.local_addr().unwrap());
        let admin = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let admin_base = format!("http://{}", admin.local_addr().unwrap());
        let (tx, rx) = tokio::sync::oneshot::channel::<()>();
        let state = AppState::new(world.clone()).with_admin_token(admin_token.map(str::to_owned));
        let server = tokio::spawn(async move {
            let (stop_admin, admin_stopped) = tokio::sync::oneshot::channel::<()>();
            let control = tokio::spawn(backend::serve_control(admin, state.clone(), async move {
                let _ = admin_stopped.await;
            }));
            backend::serve(listener, state, async move {
                let _ = rx.await;
            })
            .await
            .unwrap();
            let _ = stop_admin.send(());
            control.await.unwrap().unwrap();
        });
        Self { base, admin_base, client: http_client(), world, cluster, server, stop: Some(tx), source: Some(source) }
    }

    /// The server's admin URL (a connection outside the world's pool).
    pub fn admin_url(&self) -> String {
        self.source.as_ref().expect("the backend is running").admin_url()
    }

    pub fn url(&self, path: &str) -> String {
        format!("{}{}", self.base, path)
    }

    pub async fn get(&self, path: &str) -> (u16, Value) {
        let resp = self.client.get(self.url(path)).send().await.unwrap();
        decode(resp).await
    }

    pub async fn send(&self, method: reqwest::Method, path: &str, body: Value) -> (u16, Value) {
        let resp = self.client.request(method, self.url(path)).json(&body).send().await.unwrap();
        decode(resp).await
    }

    pub async fn post(&self, path: &str, body: Value) -> (u16, Value) {
        self.send(reqwest::Method::POST, path, body).await
    }

    /// POST to the control plane.
    pub async fn admin_post(&self, path: &str, body: Value) -> (u16, Value) {
        let resp = self.client.post(format!("{}{path}", self.admin_base)).json(&body).send().await.unwrap();
        decode(resp).await
    }

    pub async fn patch(&self, path: &str, body: Value) -> (u16, Value) {
        self.send(reqwest::Method::PATCH, path, body).await
    }

    pub async fn dump_hash(&self) -> String {
        backend::world::canonical_dump_hash(&self.world.pool()).await.unwrap()
    }

    pub async fn shutdown(mut self) {
        if let Some(tx) = self.stop.take() {
            let _ = tx.send(());
        }
        let _ = (&mut self.server).await;
        self.world.destroy().await.unwrap();
        self.cluster.close().await;
        if let Some(source) = self.source.take() {
            source.shutdown().unwrap();
        }
    }
}

pub async fn decode(resp: reqwest::Response) -> (u16, Value) {
    let status = resp.status().as_u16();
    let ctype = resp.headers().get("content-type").map(|v| v.to_str().unwrap().to_owned()).unwrap_or_default();
    let text = resp.text().await.unwrap();
    assert!(ctype.starts_with("application/json"), "status {status}: body is not JSON ({ctype}): {text}");
    (status, serde_json::from_str(&text).unwrap_or_else(|e| panic!("invalid JSON ({e}): {text}")))
}

/// A plain HTTP client. In a workspace build reqwest has rustls without a cryptography provider
/// (the servers crate's `tls` module says why), so one is installed first.
pub fn http_client() -> reqwest::Client {
    if rustls::crypto::CryptoProvider::get_default().is_none() {
        let _ = rustls::crypto::ring::default_provider().install_default();
    }
    reqwest::Client::new()
}
