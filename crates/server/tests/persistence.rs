//! RDB files through the real binary: what Latch saves, redis-check-rdb accepts and redis-server
//! loads to the same values; what redis-server saves, Latch loads; a restart keeps data, TTLs,
//! function libraries, native locks and the fencing counter; a corrupt file stops the server.

mod common;

use common::{Latch, Raw, RedisServer, TempDir};
use std::path::Path;

const KEYS: &[&str] = &["str", "int", "list", "intset", "set", "hash", "zset", "ttl", "bighash", "biglist"];

fn populate(c: &mut Raw) {
    for cmd in [
        &["SET", "str", "hello"][..],
        &["SET", "int", "12345"],
        &["RPUSH", "list", "a", "b", "1", "-5000", "3000000000"],
        &["SADD", "intset", "1", "2", "-70000"],
        &["SADD", "set", "a", "b", "c"],
        &["HSET", "hash", "f", "v", "n", "1"],
        &["ZADD", "zset", "1", "a", "2.5", "b"],
        &["SET", "ttl", "soon", "EX", "1000"],
        &["SELECT", "3"],
        &["SET", "db3", "three"],
        &["SELECT", "0"],
        &["FUNCTION", "LOAD", "#!lua name=lib1\nredis.register_function('f1', function() return 'from lib1' end)"],
    ] {
        let args: Vec<&[u8]> = cmd.iter().map(|a| a.as_bytes()).collect();
        let reply = c.cmd(&args);
        assert!(!reply.starts_with('-'), "{cmd:?}: {reply}");
    }
    for i in 0..300 {
        c.cmd(&[b"HSET", b"bighash", format!("f{i}").as_bytes(), "x".repeat(i % 90).as_bytes()]);
    }
    for i in 0..2000 {
        c.cmd(&[b"RPUSH", b"biglist", format!("element {i}").as_bytes()]);
    }
}

fn digests(c: &mut Raw) -> Vec<String> {
    KEYS.iter().map(|k| c.cmd(&[b"DEBUG", b"DIGEST-VALUE", k.as_bytes()])).collect()
}

fn latch_in(dir: &TempDir, file: &str, extra: &[&str]) -> Latch {
    let mut args = vec!["--dir", dir.path(), "--dbfilename", file, "--enable-debug-command", "yes"];
    args.extend(extra);
    Latch::start(&args)
}

#[test]
fn files_move_between_latch_and_redis() {
    let dir = TempDir::new("persistence-interop");
    let latch = latch_in(&dir, "latch.rdb", &["--save", ""]);
    let mut l = latch.raw();
    populate(&mut l);
    l.cmd(&[b"LOCK", b"res", b"owner", b"100000"]);
    assert_eq!(l.cmd(&[b"SAVE"]), "+OK\r\n");
    let want = digests(&mut l);
    let file = dir.0.join("latch.rdb");
    if let Ok(out) = std::process::Command::new("redis-check-rdb").arg(&file).output() {
        assert!(
            out.status.success(),
            "redis-check-rdb refused Latch's file:\n{}",
            String::from_utf8_lossy(&out.stdout)
        );
    }
    std::fs::copy(&file, dir.0.join("forredis.rdb")).expect("copy");
    let Some(redis) = RedisServer::start_with_or_skip(
        "loading Latch's RDB file into redis-server",
        &["--dir", dir.path(), "--dbfilename", "forredis.rdb", "--enable-debug-command", "yes"],
    ) else {
        return;
    };
    let mut r = redis.raw();
    redis.wait_loaded(&mut r);
    assert_eq!(digests(&mut r), want, "redis-server loaded other values");
    assert_eq!(r.cmd(&[b"EXISTS", b"res"]), ":0\r\n", "Redis has no lock type: it skips the lock's AUX field");
    let ttl: i64 = r.cmd(&[b"TTL", b"ttl"]).trim().trim_start_matches(':').parse().expect("ttl");
    assert!((990..=1000).contains(&ttl), "ttl {ttl}");
    assert_eq!(r.cmd(&[b"FCALL", b"f1", b"0"]), "$9\r\nfrom lib1\r\n");
    r.cmd(&[b"SELECT", b"3"]);
    assert_eq!(r.cmd(&[b"GET", b"db3"]), "$5\r\nthree\r\n");
    // And back: Redis's own file into a new Latch.
    r.cmd(&[b"SELECT", b"0"]);
    r.cmd(&[b"SET", b"from-redis", b"yes"]);
    assert_eq!(r.cmd(&[b"SAVE"]), "+OK\r\n");
    let latch2 = latch_in(&dir, "forredis.rdb", &["--save", ""]);
    let mut l2 = latch2.raw();
    assert_eq!(digests(&mut l2), want, "Latch loaded other values from Redis's file");
    assert_eq!(l2.cmd(&[b"GET", b"from-redis"]), "$3\r\nyes\r\n");
    assert_eq!(l2.cmd(&[b"FCALL", b"f1", b"0"]), "$9\r\nfrom lib1\r\n");
}

fn token(reply: &str) -> u64 {
    reply.trim().trim_start_matches(':').parse().unwrap_or_else(|_| panic!("not a token: {reply}"))
}

#[test]
fn restarts_keep_data_locks_and_fencing() {
    let dir = TempDir::new("persistence-restart");
    let saves = ["--save", "3600 1"];
    let first = {
        let latch = latch_in(&dir, "dump.rdb", &saves);
        let mut c = latch.raw();
        populate(&mut c);
        let t = token(&c.cmd(&[b"LOCK", b"res", b"owner", b"100000"]));
        let d = digests(&mut c);
        // SHUTDOWN with save points saves first.
        c.send(b"SHUTDOWN\r\n");
        assert!(c.closed());
        (t, d)
    };
    let latch = latch_in(&dir, "dump.rdb", &saves);
    let mut c = latch.raw();
    assert_eq!(digests(&mut c), first.1);
    let info = c.cmd(&[b"LOCKINFO", b"res"]);
    assert!(info.contains("owner") && info.contains(&first.0.to_string()), "{info}");
    let next = token(&c.cmd(&[b"LOCK", b"other", b"o", b"1000"]));
    assert!(next > first.0, "a token after the restart ({next}) must exceed the one before ({})", first.0);
    assert_eq!(c.cmd(&[b"FCALL", b"f1", b"0"]), "$9\r\nfrom lib1\r\n");
    // DEBUG RELOAD: save, empty, load back.
    assert_eq!(c.cmd(&[b"DEBUG", b"RELOAD"]), "+OK\r\n");
    assert_eq!(digests(&mut c), first.1);
    // FLUSHALL with save points saves the empty dataset: no changes left unsaved.
    c.cmd(&[b"FLUSHALL"]);
    assert!(c.cmd(&[b"INFO", b"persistence"]).contains("rdb_changes_since_last_save:0"));
}

#[test]
fn a_corrupt_file_stops_the_server() {
    let dir = TempDir::new("persistence-corrupt");
    {
        let latch = latch_in(&dir, "dump.rdb", &["--save", ""]);
        let mut c = latch.raw();
        populate(&mut c);
        assert_eq!(c.cmd(&[b"SAVE"]), "+OK\r\n");
    }
    let path = dir.0.join("dump.rdb");
    let mut bytes = std::fs::read(&path).expect("read");
    let at = bytes.len() / 2;
    bytes[at] ^= 0xFF;
    std::fs::write(&path, &bytes).expect("write");
    let port = common::free_port().to_string();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_latch-server"))
        .args(["--bind", "127.0.0.1", "--port", &port, "--dir", dir.path(), "--dbfilename", "dump.rdb"])
        .output()
        .expect("run latch-server");
    let log = String::from_utf8_lossy(&out.stdout);
    assert!(!out.status.success(), "started on a corrupt file:\n{log}");
    assert!(log.contains("Terminating server after rdb file reading failure."), "{log}");
    assert!(Path::new(&path).exists(), "the file is left for the operator");
}

/// A crash (SIGKILL) with no persistence at all: the next server's tokens still exceed every token
/// the crashed one handed out, by the clock floor (every token is at least the Unix time in
/// microseconds) — the guarantee docs/locks.md states for this case.
#[test]
fn fencing_tokens_grow_across_a_crash_without_persistence() {
    let dir = TempDir::new("persistence-crash");
    let mut before = 0;
    {
        let latch = latch_in(&dir, "dump.rdb", &["--save", ""]);
        let mut c = latch.raw();
        for i in 0..200 {
            before = before.max(token(&c.cmd(&[b"LOCK", format!("l{i}").as_bytes(), b"o", b"100000"])));
        }
        // Dropping the handle kills the process (SIGKILL): nothing is saved.
    }
    assert!(!dir.0.join("dump.rdb").exists(), "nothing was to be saved");
    let latch = latch_in(&dir, "dump.rdb", &["--save", ""]);
    let mut c = latch.raw();
    let after = token(&c.cmd(&[b"LOCK", b"l0", b"o", b"100000"]));
    assert!(after > before, "token after the crash {after} <= {before} before it");
}

/// A FLUSHALL (or SHUTDOWN) that saves while a BGSAVE of an older instant is still writing wins:
/// the background save is cancelled and never replaces the newer file (Redis kills its child).
/// Before, the old dataset came back after a restart.
#[test]
fn a_newer_save_cancels_a_running_bgsave() {
    let dir = TempDir::new("bgsave-cancel");
    {
        let l = latch_in(&dir, "dump.rdb", &["--save", "3600 1", "--rdbcompression", "no"]);
        let mut c = l.raw();
        assert_eq!(c.cmd(&[b"DEBUG", b"POPULATE", b"400000", b"key", b"100"]), "+OK\r\n");
        assert_eq!(c.cmd(&[b"BGSAVE"]), "+Background saving started\r\n");
        assert_eq!(c.cmd(&[b"FLUSHALL"]), "+OK\r\n");
        assert_eq!(c.cmd(&[b"SET", b"after", b"1"]), "+OK\r\n");
        for _ in 0..500 {
            if c.cmd(&[b"INFO", b"persistence"]).contains("rdb_bgsave_in_progress:0") {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        let info = c.cmd(&[b"INFO", b"persistence"]);
        assert!(info.contains("rdb_last_bgsave_status:ok"), "a cancelled save is no failure: {info}");
        assert_eq!(c.cmd(&[b"SET", b"k", b"v"]), "+OK\r\n", "writes go on");
        // Dropped: SIGKILL, so only what FLUSHALL saved is on disk.
    }
    let l = latch_in(&dir, "dump.rdb", &[]);
    let mut c = l.raw();
    assert_eq!(c.cmd(&[b"DBSIZE"]), ":0\r\n", "the flushed dataset came back from the cancelled BGSAVE");
    assert!(
        !std::fs::read_dir(dir.path())
            .expect("dir")
            .any(|e| { e.expect("entry").file_name().to_string_lossy().starts_with("temp-") }),
        "temporary files left behind"
    );
}

/// `rdb-key-save-delay` (Redis's tests slow a save down with it) makes a background save wait per
/// key without holding the keyspace: commands are served while it waits, INFO shows it part way.
#[test]
fn rdb_key_save_delay_slows_a_background_save_without_stopping_commands() {
    let dir = TempDir::new("bgsave-key-delay");
    let l = latch_in(&dir, "dump.rdb", &[]);
    let mut c = l.raw();
    for k in ["a", "b", "c"] {
        assert_eq!(c.cmd(&[b"SET", k.as_bytes(), b"v"]), "+OK\r\n");
    }
    // A second per key: the save cannot end within this test unless the delay is ignored.
    assert_eq!(c.cmd(&[b"CONFIG", b"SET", b"rdb-key-save-delay", b"1000000"]), "+OK\r\n");
    assert_eq!(c.cmd(&[b"BGSAVE"]), "+Background saving started\r\n");
    std::thread::sleep(std::time::Duration::from_millis(300));
    assert_eq!(c.cmd(&[b"SET", b"during", b"1"]), "+OK\r\n");
    assert_eq!(c.cmd(&[b"GET", b"a"]), "$1\r\nv\r\n");
    let info = c.cmd(&[b"INFO", b"persistence"]);
    assert!(info.contains("rdb_bgsave_in_progress:1\r\n"), "{info}");
    assert!(info.contains("current_save_keys_total:3\r\n"), "{info}");
    assert!(!info.contains("current_save_keys_processed:3\r\n"), "{info}");
    // FLUSHALL cancels it, as it kills Redis's child.
    assert_eq!(c.cmd(&[b"FLUSHALL"]), "+OK\r\n");
    for _ in 0..250 {
        if c.cmd(&[b"INFO", b"persistence"]).contains("rdb_bgsave_in_progress:0") {
            return;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    panic!("the cancelled save did not end");
}
