//! The opt-in Docker path of the test fixture fails fast and says so when no engine answers.
//! (CI machines have no Docker engine; this file is its own process, so the environment
//! change below cannot leak into other tests.)

mod common;

#[tokio::test]
async fn docker_path_without_an_engine_fails_fast_and_says_so() {
    // Point the client at a socket that cannot exist, whatever this machine has.
    // SAFETY of the env change: this test binary runs this one test only.
    unsafe_env("DOCKER_HOST", "unix:///nonexistent/mcp-pattern-bench/docker.sock");
    unsafe_env(common::DOCKER_ENV, "1");
    let started = std::time::Instant::now();
    let err = match common::test_postgres().await {
        Ok(_) => panic!("a container started against a socket that does not exist"),
        Err(e) => e,
    };
    assert!(started.elapsed() < common::DOCKER_PROBE_TIMEOUT + std::time::Duration::from_secs(2), "took {:?}", started.elapsed());
    assert!(err.contains(common::DOCKER_ENV) && err.contains("Docker"), "{err}");
}

#[allow(unsafe_code)]
fn unsafe_env(key: &str, value: &str) {
    // SAFETY: single-threaded at this point of the only test in this binary; nothing else reads
    // the environment concurrently.
    unsafe { std::env::set_var(key, value) };
}
