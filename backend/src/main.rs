//! `backend`: serves the synthetic backend API on one world database.
//!
//! Postgres comes from `DATABASE_URL`, else an embedded throwaway cluster. In a container
//! (compose.yaml) it listens on 0.0.0.0:8080 (the API) and 0.0.0.0:8081 (the control plane, where
//! `POST /admin/reset` needs BACKEND_ADMIN_TOKEN).
//! Most users run it as `pipeline backend` instead; both share `backend::cli`.

use clap::Parser;

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    backend::cli::init_tracing();
    backend::cli::run(backend::cli::ServeArgs::parse()).await
}
