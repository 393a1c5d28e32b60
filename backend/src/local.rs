//! The backend run in-process on loopback, with its Postgres: what the pipeline and the tests
//! of other crates use to get a real backend over real HTTP without a separate process.

use std::sync::Arc;

use crate::postgres::{PostgresSource, SourceError};
use crate::recorder::Recorder;
use crate::world::WorldError;
use crate::{AppState, Cluster, World, WorldSpec};

#[derive(Debug, thiserror::Error)]
pub enum LocalError {
    #[error(transparent)]
    Source(#[from] SourceError),
    #[error(transparent)]
    World(#[from] WorldError),
    #[error("could not listen on loopback: {0}")]
    Bind(std::io::Error),
}

/// One world served over HTTP on `127.0.0.1:<free port>`.
#[derive(Debug)]
pub struct LocalBackend {
    url: String,
    world: Arc<World>,
    cluster: Arc<Cluster>,
    server: tokio::task::JoinHandle<std::io::Result<()>>,
    stop: tokio::sync::oneshot::Sender<()>,
    source: Option<PostgresSource>,
}

impl LocalBackend {
    /// Starts Postgres (`DATABASE_URL`, else embedded), seeds a world and serves it.
    pub async fn start(spec: WorldSpec) -> Result<Self, LocalError> {
        let source = PostgresSource::from_env().await?;
        let cluster = Cluster::connect(&source.admin_url()).await?;
        let mut me = Self::serve(cluster, &unique_world_name(), spec).await?;
        me.source = Some(source);
        Ok(me)
    }

    /// [`Self::start`], with every request's operation recorded in `recorder`.
    pub async fn start_recorded(spec: WorldSpec, recorder: &Recorder) -> Result<Self, LocalError> {
        let source = PostgresSource::from_env().await?;
        let cluster = Cluster::connect(&source.admin_url()).await?;
        let mut me = Self::serve_with(cluster, &unique_world_name(), spec, Some(recorder)).await?;
        me.source = Some(source);
        Ok(me)
    }

    /// Serves a new world named `name` on an existing cluster.
    pub async fn serve(cluster: Arc<Cluster>, name: &str, spec: WorldSpec) -> Result<Self, LocalError> {
        Self::serve_with(cluster, name, spec, None).await
    }

    async fn serve_with(cluster: Arc<Cluster>, name: &str, spec: WorldSpec, recorder: Option<&Recorder>) -> Result<Self, LocalError> {
        let world = World::create(cluster.clone(), name, spec).await?;
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.map_err(LocalError::Bind)?;
        let url = format!("http://{}", listener.local_addr().map_err(LocalError::Bind)?);
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let state = AppState::new(world.clone());
        let app = crate::app(state);
        let app = match recorder {
            Some(r) => r.layer(app),
            None => app,
        };
        let server = tokio::spawn(crate::serve_router(listener, app, async move {
            let _ = stopped.await;
        }));
        Ok(Self { url, world, cluster, server, stop, source: None })
    }

    /// Base URL of the API, e.g. `http://127.0.0.1:41234`.
    pub fn url(&self) -> &str {
        &self.url
    }

    pub fn world(&self) -> &Arc<World> {
        &self.world
    }

    pub fn cluster(&self) -> &Arc<Cluster> {
        &self.cluster
    }

    /// Stops serving, drops the world's databases and stops an embedded Postgres.
    pub async fn shutdown(self) -> Result<(), LocalError> {
        let _ = self.stop.send(());
        let _ = self.server.await;
        self.world.destroy().await?;
        if let Some(source) = self.source {
            self.cluster.close().await;
            source.shutdown()?;
        }
        Ok(())
    }
}

/// A world name unique across processes sharing one Postgres server.
pub fn unique_world_name() -> String {
    use std::sync::atomic::{AtomicU32, Ordering};
    static N: AtomicU32 = AtomicU32::new(0);
    format!("p{}_{}", std::process::id(), N.fetch_add(1, Ordering::Relaxed))
}
