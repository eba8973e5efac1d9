//! The committed command metadata is what redis-server 7.0.15 answers today: regenerated from the
//! `redis-server` on PATH and compared byte for byte. A missing redis-server fails loudly, unless the
//! run asked to go without one (`LATCH_TESTS_WITHOUT_REDIS=1`).

use std::path::Path;

#[test]
fn redis_command_metadata_is_current() {
    let Some(server) = xtask::RedisServer::start() else {
        assert!(
            std::env::var_os("LATCH_TESTS_WITHOUT_REDIS").is_some(),
            "redis-server is not on PATH (apt-get install redis-server), so the command metadata cannot be \
             checked; set LATCH_TESTS_WITHOUT_REDIS=1 to skip it knowingly"
        );
        eprintln!("LATCH_TESTS_WITHOUT_REDIS set: skipping the command metadata check");
        return;
    };
    let fresh = xtask::redis_commands(server.port).expect("metadata from redis-server");
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..").join(xtask::DATA_FILE);
    let committed = std::fs::read(&path).expect("the committed data file");
    assert!(
        fresh == committed,
        "{} is stale: run `cargo run -p xtask -- redis-commands` and commit the result",
        xtask::DATA_FILE
    );
}
