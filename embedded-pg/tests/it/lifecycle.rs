//! In-process lifecycle tests against real PostgreSQL binaries.

use std::time::{Duration, Instant};

use crate::common::{ShmSnapshot, answers_on_socket_and_wants_a_password, assert_cleaned_up, psql_query};
use embedded_pg::{EmbeddedPostgres, Error, Options};

#[test]
fn stop_removes_everything() {
    let before = ShmSnapshot::take();
    let pg = EmbeddedPostgres::start().expect("start");
    let (pid, dir) = (pg.pid(), pg.data_dir().to_path_buf());
    assert!(dir.is_dir());
    assert!(pg.socket_dir().starts_with(&dir));
    answers_on_socket_and_wants_a_password(pg.socket_dir(), pg.port());
    // The URL form is what the product hands to sqlx; libpq parses it the same way.
    assert_eq!(psql_query(&[&pg.url("postgres")], "select 1"), "1");
    pg.stop().expect("stop");
    assert_cleaned_up(pid, &dir, &before);
}

#[test]
fn drop_removes_everything() {
    let before = ShmSnapshot::take();
    let pg = EmbeddedPostgres::start().expect("start");
    let (pid, dir) = (pg.pid(), pg.data_dir().to_path_buf());
    answers_on_socket_and_wants_a_password(pg.socket_dir(), pg.port());
    drop(pg);
    assert_cleaned_up(pid, &dir, &before);
}

#[test]
fn two_clusters_are_independent() {
    let before = ShmSnapshot::take();
    let a = EmbeddedPostgres::start().expect("start a");
    let b = EmbeddedPostgres::start().expect("start b");
    assert_ne!(a.pid(), b.pid());
    assert_ne!(a.data_dir(), b.data_dir());
    psql_query(&[&a.url("postgres")], "create table only_in_a (x int)");
    psql_query(&[&a.url("postgres")], "create database bench");
    assert_eq!(psql_query(&[&a.url("bench")], "select current_database()"), "bench");
    assert_eq!(psql_query(&[&b.url("postgres")], "select count(*) from pg_tables where tablename = 'only_in_a'"), "0");
    let (a_pid, a_dir) = (a.pid(), a.data_dir().to_path_buf());
    a.stop().expect("stop a");
    // b keeps serving after a is gone.
    answers_on_socket_and_wants_a_password(b.socket_dir(), b.port());
    let (b_pid, b_dir) = (b.pid(), b.data_dir().to_path_buf());
    b.stop().expect("stop b");
    assert_cleaned_up(a_pid, &a_dir, &before);
    assert_cleaned_up(b_pid, &b_dir, &before);
}

#[test]
fn settings_reach_the_server() {
    let pg = EmbeddedPostgres::start_with(Options::default().setting("work_mem", "7MB")).expect("start");
    assert_eq!(psql_query(&[&pg.url("postgres")], "show work_mem"), "7MB");
    assert_eq!(psql_query(&[&pg.url("postgres")], "show fsync"), "off");
    assert_eq!(psql_query(&[&pg.url("postgres")], "show dynamic_shared_memory_type"), "mmap");
    pg.stop().expect("stop");
}

#[test]
fn server_failure_reports_the_log_and_cleans_up() {
    let base = tempfile::Builder::new().prefix("epg-").tempdir_in("/tmp").unwrap();
    let err =
        EmbeddedPostgres::start_with(Options::default().base_dir(base.path()).setting("shared_buffers", "not-a-size")).expect_err("a bad setting must fail");
    let msg = err.to_string();
    assert!(matches!(err, Error::ServerExited { .. }), "{msg}");
    assert!(msg.contains("shared_buffers"), "log tail missing: {msg}");
    // Nothing of the cluster is left; the initdb image it was copied from is kept for the next.
    let left: Vec<String> = std::fs::read_dir(base.path()).unwrap().flatten().map(|e| e.file_name().to_string_lossy().into_owned()).collect();
    assert!(left.iter().all(|n| n.starts_with(embedded_pg::IMAGE_PREFIX)), "left behind: {left:?}");
}

/// The first start under a base folder keeps its `initdb` output as an image; later starts copy
/// it, and each copy gets a password of its own: a cluster's URL opens it, and no other's does.
/// A broken image is removed and the start falls back to `initdb`; with the image off, nothing
/// but the cluster is made.
#[test]
fn clusters_copied_from_the_initdb_image_are_independent_and_keep_their_own_passwords() {
    let base = tempfile::Builder::new().prefix("epg-").tempdir_in("/tmp").unwrap();
    let images = || -> Vec<std::path::PathBuf> {
        std::fs::read_dir(base.path())
            .unwrap()
            .flatten()
            .map(|e| e.path())
            .filter(|p| p.file_name().unwrap().to_string_lossy().starts_with(embedded_pg::IMAGE_PREFIX))
            .collect()
    };
    let opts = || Options::default().base_dir(base.path());
    let a = EmbeddedPostgres::start_with(opts()).expect("start a");
    let image = images();
    assert_eq!(image.len(), 1, "the first start keeps one image: {image:?}");
    assert!(image[0].join("data/global/pg_control").is_file());
    let inode = |p: &std::path::Path| std::os::unix::fs::MetadataExt::ino(&std::fs::metadata(p).unwrap());
    let made = inode(&image[0]);
    let b = EmbeddedPostgres::start_with(opts()).expect("start b, from the image");
    assert_eq!(images(), image);
    assert_eq!(inode(&image[0]), made, "the image is reused, not made again");
    for pg in [&a, &b] {
        assert_eq!(psql_query(&[&pg.url("postgres")], "select 1"), "1");
        answers_on_socket_and_wants_a_password(pg.socket_dir(), pg.port());
    }
    psql_query(&[&a.url("postgres")], "create table only_in_a (x int)");
    assert_eq!(psql_query(&[&b.url("postgres")], "select count(*) from pg_tables where tablename = 'only_in_a'"), "0");
    // b's password does not open a, and the other way round.
    let swapped = a.url("postgres").replace(&password_of(&a.url("postgres")), &password_of(&b.url("postgres")));
    assert_ne!(password_of(&a.url("postgres")), password_of(&b.url("postgres")));
    let out = std::process::Command::new(crate::common::psql()).args([swapped.as_str(), "-X", "-w", "-Atc", "select 1"]).output().unwrap();
    assert!(!out.status.success() && String::from_utf8_lossy(&out.stderr).contains("password"), "{out:?}");
    a.stop().unwrap();
    b.stop().unwrap();

    // A broken image: the start still succeeds (by initdb), and the image is gone.
    std::fs::write(image[0].join("data/PG_VERSION"), "7\n").unwrap();
    let c = EmbeddedPostgres::start_with(opts()).expect("start c despite the broken image");
    assert_eq!(psql_query(&[&c.url("postgres")], "select 1"), "1");
    assert!(images().is_empty(), "the broken image was removed: {:?}", images());
    c.stop().unwrap();

    // An image whose maker died half-way is swept by the next start; one being made is not.
    let dead = embedded_pg::IMAGE_PREFIX.to_owned() + "0000000000000000.building-999999999-1";
    let alive = format!("{}0000000000000000.building-{}-1", embedded_pg::IMAGE_PREFIX, std::process::id());
    for d in [&dead, &alive] {
        std::fs::create_dir(base.path().join(d)).unwrap();
    }
    EmbeddedPostgres::start_with(opts()).expect("start e").stop().unwrap();
    assert!(!base.path().join(&dead).exists() && base.path().join(&alive).exists());

    let off = tempfile::Builder::new().prefix("epg-").tempdir_in("/tmp").unwrap();
    let d = EmbeddedPostgres::start_with(Options::default().base_dir(off.path()).initdb_image(false)).expect("start d without an image");
    assert_eq!(std::fs::read_dir(off.path()).unwrap().count(), 1, "only the cluster's own folder");
    d.stop().unwrap();
    assert_eq!(std::fs::read_dir(off.path()).unwrap().count(), 0);
}

fn password_of(url: &str) -> String {
    url.split_once("postgres:").unwrap().1.split_once('@').unwrap().0.to_owned()
}

#[test]
fn empty_bin_dir_is_an_actionable_error() {
    let empty = tempfile::tempdir().unwrap();
    let started = Instant::now();
    let err = EmbeddedPostgres::start_with(Options::default().bin_dir(empty.path())).expect_err("no binaries");
    assert!(started.elapsed() < Duration::from_secs(10));
    let msg = err.to_string();
    assert!(matches!(err, Error::NoBinaries { .. }), "{msg}");
    assert!(msg.contains("docker compose up -d"), "{msg}");
    assert!(msg.contains("DATABASE_URL"), "{msg}");
}

#[test]
fn binaries_are_found() {
    let dir = embedded_pg::binaries_available().expect("binaries on this machine");
    assert!(dir.join("initdb").exists() && dir.join("postgres").exists());
}

#[test]
fn long_base_dir_is_rejected_clearly() {
    let base = tempfile::tempdir().unwrap();
    let long = base.path().join("x".repeat(100));
    std::fs::create_dir_all(&long).unwrap();
    let err = EmbeddedPostgres::start_with(Options::default().base_dir(&long)).expect_err("socket path too long");
    assert!(matches!(err, Error::SocketPathTooLong { .. }), "{err}");
    assert_eq!(std::fs::read_dir(&long).unwrap().count(), 0);
}
