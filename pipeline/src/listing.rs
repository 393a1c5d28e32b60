//! An arm's tool manifest outside a session — for a plan, a freeze, a gate, `pipeline servers` —
//! listed the way a session lists it: a built-in server needs no backend to list (it never calls
//! one then), but an external arm gets a real, freshly seeded world, as its sessions do. A server
//! that reads the API when it starts (a server generated from the OpenAPI document is built that
//! way) could not start against the closed port listings used to give it.
//!
//! The world is started once per process, at the first external arm, reset before each listing,
//! and stopped by [`shutdown`] (the CLI calls it on its way out).

use anyhow::Context;
use backend::WorldSpec;
use backend::local::LocalBackend;
use servers::ToolManifest;
use servers::launch::ArmSettings;
use servers::registry::ServerEntry;

static WORLD: tokio::sync::Mutex<Option<LocalBackend>> = tokio::sync::Mutex::const_new(None);

/// External arms listed so far, by folder, folder hash and settings: the `[[variant]]`s of one
/// `arm.toml` are the same server (the same command, environment and files), so it is started
/// and listed once, and each variant's manifest is that listing under its own name.
static LISTED: std::sync::Mutex<Vec<(ListingKey, ToolManifest)>> = std::sync::Mutex::new(Vec::new());

type ListingKey = (std::path::PathBuf, String, String);

/// `arm`'s manifest with `settings`; an external arm's listed against a freshly seeded world.
pub async fn manifest(arm: &ServerEntry, settings: ArmSettings) -> anyhow::Result<ToolManifest> {
    let Some(ext) = arm.external() else {
        return ToolManifest::offline_with(arm, settings).await;
    };
    // `relays` is in the hashed `arm.toml` and shared by its variants: the hash covers it.
    let key: ListingKey = (ext.dir.clone(), ext.sha256.clone(), format!("{settings:?}"));
    let known = LISTED.lock().expect("listings").iter().find(|(k, _)| *k == key).map(|(_, m)| m.clone());
    if let Some(m) = known {
        return Ok(ToolManifest { server: arm.name.to_owned(), ..m });
    }
    let listed = list_external(arm, settings).await?;
    LISTED.lock().expect("listings").push((key, listed.clone()));
    Ok(listed)
}

async fn list_external(arm: &ServerEntry, settings: ArmSettings) -> anyhow::Result<ToolManifest> {
    let mut world = WORLD.lock().await;
    if world.is_none() {
        *world = Some(LocalBackend::start(WorldSpec::default()).await.context("starting a world to list the external arms against")?);
    }
    let b = world.as_ref().expect("started above");
    b.world().reset(WorldSpec::default()).await.context("resetting the listing world")?;
    ToolManifest::of_with(arm, b.url(), settings).await
}

/// Stops the listing world, if one was started.
pub async fn shutdown() {
    if let Some(b) = WORLD.lock().await.take()
        && let Err(e) = b.shutdown().await
    {
        eprintln!("warning: stopping the world the external arms were listed against: {e:#}");
    }
}
