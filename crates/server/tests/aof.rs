//! The append-only file through the real binary: acknowledged writes survive SIGKILL (at once with
//! `appendfsync always`, after a second with `everysec`), BGREWRITEAOF keeps everything, a torn tail
//! loads as `aof-load-truncated` says, and AOF directories move between Latch and redis-server.

mod common;

use common::{Latch, Raw, RedisServer, TempDir};
use std::time::Duration;

fn latch(dir: &TempDir, fsync: &str, extra: &[&str]) -> Latch {
    let mut args = vec![
        "--dir",
        dir.path(),
        "--appendonly",
        "yes",
        "--appendfsync",
        fsync,
        "--save",
        "",
        "--enable-debug-command",
        "yes",
    ];
    args.extend(extra);
    Latch::start(&args)
}

fn write_some(c: &mut Raw, from: usize, to: usize) {
    for i in from..to {
        let (k, v) = (format!("k{i}"), format!("v{i}"));
        assert_eq!(c.cmd(&[b"SET", k.as_bytes(), v.as_bytes()]), "+OK\r\n");
    }
    c.cmd(&[b"RPUSH", b"list", b"a", b"b"]);
    c.cmd(&[b"SET", b"ttl", b"x", b"PX", b"100000"]);
    c.cmd(&[
        b"EVAL",
        b"redis.call('incr', KEYS[1]); return redis.call('incrbyfloat', KEYS[2], '0.5')",
        b"2",
        b"n",
        b"f",
    ]);
}

/// redis-check-aof (when installed) accepts the AOF directory in `dir`.
fn redis_check_aof(dir: &TempDir) {
    let manifest = dir.0.join("appendonlydir/appendonly.aof.manifest");
    if let Ok(out) = std::process::Command::new("redis-check-aof").arg(&manifest).output() {
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success() && text.contains("All AOF files and manifest are valid"),
            "redis-check-aof refused Latch's AOF:\n{text}"
        );
    } else {
        assert!(std::env::var_os("CI").is_none(), "redis-check-aof is missing (apt-get install redis-tools)");
    }
}

fn digest(c: &mut Raw) -> String {
    c.cmd(&[b"DEBUG", b"DIGEST"])
}

#[test]
fn always_keeps_every_acknowledged_write_through_sigkill() {
    let dir = TempDir::new("aof-always");
    let before = {
        let l = latch(&dir, "always", &[]);
        let mut c = l.raw();
        write_some(&mut c, 0, 200);
        c.cmd(&[b"LOCK", b"res", b"owner", b"100000"]);
        digest(&mut c)
        // Dropped: SIGKILL right after the last reply.
    };
    let l = latch(&dir, "always", &[]);
    let mut c = l.raw();
    assert_eq!(digest(&mut c), before);
    assert!(c.cmd(&[b"LOCKINFO", b"res"]).contains("owner"));
}

#[test]
fn everysec_keeps_writes_a_second_old_and_rewrites_keep_everything() {
    let dir = TempDir::new("aof-everysec");
    let before = {
        let l = latch(&dir, "everysec", &[]);
        let mut c = l.raw();
        write_some(&mut c, 0, 100);
        assert_eq!(c.cmd(&[b"BGREWRITEAOF"]), "+Background append only file rewriting started\r\n");
        std::thread::sleep(Duration::from_millis(600));
        write_some(&mut c, 100, 150);
        std::thread::sleep(Duration::from_millis(1500));
        let info = c.cmd(&[b"INFO", b"persistence"]);
        assert!(info.contains("aof_enabled:1") && info.contains("aof_rewrites:1"), "{info}");
        digest(&mut c)
    };
    let manifest = std::fs::read_to_string(dir.0.join("appendonlydir/appendonly.aof.manifest")).expect("manifest");
    assert!(manifest.contains("appendonly.aof.2.base.rdb seq 2 type b"), "{manifest}");
    let l = latch(&dir, "everysec", &[]);
    let mut c = l.raw();
    assert_eq!(digest(&mut c), before);
}

#[test]
fn a_torn_tail_loads_only_when_allowed() {
    let dir = TempDir::new("aof-torn");
    let before = {
        let l = latch(&dir, "always", &[]);
        let mut c = l.raw();
        write_some(&mut c, 0, 10);
        digest(&mut c)
    };
    let incr = dir.0.join("appendonlydir/appendonly.aof.1.incr.aof");
    let mut data = std::fs::read(&incr).expect("incr file");
    data.extend_from_slice(b"*3\r\n$3\r\nSET\r\n$1\r\nz");
    std::fs::write(&incr, &data).expect("write");
    let port = common::free_port().to_string();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_latch-server"))
        .args(["--bind", "127.0.0.1", "--port", &port, "--dir", dir.path(), "--appendonly", "yes"])
        .args(["--aof-load-truncated", "no"])
        .output()
        .expect("run latch-server");
    assert!(!out.status.success(), "loaded a torn AOF with aof-load-truncated no");
    let l = latch(&dir, "always", &[]);
    let mut c = l.raw();
    assert_eq!(digest(&mut c), before);
}

#[test]
fn aof_directories_move_between_latch_and_redis() {
    let dir = TempDir::new("aof-interop");
    let before = {
        let l = latch(&dir, "always", &[]);
        let mut c = l.raw();
        write_some(&mut c, 0, 50);
        c.cmd(&[b"LOCK", b"res", b"owner", b"100000"]);
        c.cmd(&[b"DEL", b"res"]);
        digest(&mut c)
    };
    redis_check_aof(&dir);
    let Some(redis) = RedisServer::start_with_or_skip(
        "loading Latch's AOF into redis-server",
        &["--dir", dir.path(), "--appendonly", "yes", "--appendfsync", "always", "--enable-debug-command", "yes"],
    ) else {
        return;
    };
    let mut r = redis.raw();
    redis.wait_loaded(&mut r);
    let got = digest(&mut r);
    assert_eq!(got, before, "redis-server loaded another dataset from Latch's AOF");
    r.cmd(&[b"SET", b"from-redis", b"1"]);
    let after = digest(&mut r);
    drop(redis);
    let l = latch(&dir, "always", &[]);
    let mut c = l.raw();
    assert_eq!(digest(&mut c), after, "Latch loaded another dataset from Redis's AOF");
}

/// DEBUG LOADAOF empties the data and loads the AOF again (base and incr files), before and after
/// a rewrite; what it loads is not written to the AOF a second time.
#[test]
fn debug_loadaof_reloads_what_the_aof_holds() {
    let dir = TempDir::new("aof-loadaof");
    let l = latch(&dir, "everysec", &[]);
    let mut c = l.raw();
    write_some(&mut c, 0, 30);
    c.cmd(&[b"LOCK", b"res", b"owner", b"100000"]);
    let before = digest(&mut c);
    assert_eq!(c.cmd(&[b"DEBUG", b"LOADAOF"]), "+OK\r\n");
    assert_eq!(digest(&mut c), before);
    assert!(c.cmd(&[b"INFO", b"persistence"]).contains("rdb_changes_since_last_save:0"));
    assert_eq!(c.cmd(&[b"BGREWRITEAOF"]), "+Background append only file rewriting started\r\n");
    for _ in 0..200 {
        std::thread::sleep(Duration::from_millis(20));
        let info = c.cmd(&[b"INFO", b"persistence"]);
        if info.contains("aof_rewrites:1") && info.contains("aof_rewrite_in_progress:0") {
            break;
        }
    }
    write_some(&mut c, 30, 40);
    let before = digest(&mut c);
    assert_eq!(c.cmd(&[b"DEBUG", b"LOADAOF"]), "+OK\r\n");
    assert_eq!(c.cmd(&[b"DEBUG", b"LOADAOF"]), "+OK\r\n");
    assert_eq!(digest(&mut c), before);
    drop(l);
    // Loading twice added nothing to the files: a restart has the same data.
    let l = latch(&dir, "everysec", &[]);
    assert_eq!(digest(&mut l.raw()), before);
}

/// `aof-use-rdb-preamble no`: the rewrite's base is commands (`.base.aof`, with the function
/// libraries as FUNCTION LOAD and locks as `#latch:` annotations), which Latch and redis-server
/// both load.
#[test]
fn a_base_of_commands_loads_in_latch_and_redis() {
    let dir = TempDir::new("aof-base-commands");
    let (before, plain) = {
        let l = latch(&dir, "always", &["--aof-use-rdb-preamble", "no"]);
        let mut c = l.raw();
        write_some(&mut c, 0, 100);
        let many: Vec<Vec<u8>> = (0..150).map(|i| format!("m{i}").into_bytes()).collect();
        let mut sadd: Vec<&[u8]> = vec![b"SADD", b"big"];
        sadd.extend(many.iter().map(|m| &m[..]));
        c.cmd(&sadd);
        c.cmd(&[b"ZADD", b"z", b"1.5", b"a", b"-inf", b"b"]);
        c.cmd(&[b"HSET", b"h", b"f", b"v", b"g", b"w"]);
        c.cmd(&[b"FUNCTION", b"LOAD", b"#!lua name=lib\nredis.register_function('f', function() return 1 end)"]);
        let plain = digest(&mut c);
        c.cmd(&[b"LOCK", b"res", b"owner", b"100000"]);
        assert_eq!(c.cmd(&[b"BGREWRITEAOF"]), "+Background append only file rewriting started\r\n");
        for _ in 0..200 {
            std::thread::sleep(Duration::from_millis(20));
            if c.cmd(&[b"INFO", b"persistence"]).contains("aof_rewrite_in_progress:0") {
                break;
            }
        }
        (digest(&mut c), plain)
    };
    let manifest = std::fs::read_to_string(dir.0.join("appendonlydir/appendonly.aof.manifest")).expect("manifest");
    assert!(manifest.contains("appendonly.aof.2.base.aof seq 2 type b"), "{manifest}");
    redis_check_aof(&dir);
    let base = std::fs::read(dir.0.join("appendonlydir/appendonly.aof.2.base.aof")).expect("base");
    assert!(base.starts_with(b"*3\r\n$8\r\nFUNCTION\r\n$4\r\nLOAD\r\n"), "{}", String::from_utf8_lossy(&base[..40]));
    {
        let l = latch(&dir, "always", &[]);
        let mut c = l.raw();
        assert_eq!(digest(&mut c), before);
        assert!(c.cmd(&[b"LOCKINFO", b"res"]).contains("owner"));
    }
    let Some(redis) = RedisServer::start_with_or_skip(
        "loading Latch's command base into redis-server",
        &["--dir", dir.path(), "--appendonly", "yes", "--enable-debug-command", "yes"],
    ) else {
        return;
    };
    let mut r = redis.raw();
    redis.wait_loaded(&mut r);
    assert_eq!(digest(&mut r), plain, "redis-server loaded another dataset (locks aside)");
}

/// A BGREWRITEAOF while the AOF is off leaves files behind; turning the AOF on later numbers its
/// files past them and removes them once its base is named (as Redis 7.0 does), so the incr file
/// holds only what came after the new base and DEBUG LOADAOF gives back the dataset.
#[test]
fn turning_the_aof_on_after_an_offline_rewrite_starts_clean_files() {
    let dir = TempDir::new("aof-off-rewrite");
    let l = Latch::start(&["--dir", dir.path(), "--save", "", "--enable-debug-command", "yes"]);
    let mut c = l.raw();
    let wait_rewrite = |c: &mut Raw| {
        for _ in 0..250 {
            std::thread::sleep(Duration::from_millis(20));
            if c.cmd(&[b"INFO", b"persistence"]).contains("aof_rewrite_in_progress:0") {
                return;
            }
        }
        panic!("the rewrite did not end: {}", c.cmd(&[b"INFO", b"persistence"]));
    };
    c.cmd(&[b"SET", b"old", b"1"]);
    assert_eq!(c.cmd(&[b"BGREWRITEAOF"]), "+Background append only file rewriting started\r\n");
    wait_rewrite(&mut c);
    // Written while the AOF is off: in no file, and gone with the FLUSHALL below.
    c.cmd(&[b"SET", b"gone", b"1"]);
    c.cmd(&[b"FLUSHALL"]);
    assert_eq!(c.cmd(&[b"CONFIG", b"SET", b"aof-use-rdb-preamble", b"no"]), "+OK\r\n");
    assert_eq!(c.cmd(&[b"CONFIG", b"SET", b"appendonly", b"yes"]), "+OK\r\n");
    c.cmd(&[b"SET", b"x", b"v", b"EX", b"1000"]);
    c.cmd(&[b"SETEX", b"y", b"2000", b"v"]);
    wait_rewrite(&mut c);
    c.cmd(&[b"PSETEX", b"py", b"2000000", b"v"]);
    let before = digest(&mut c);
    assert_eq!(c.cmd(&[b"DEBUG", b"LOADAOF"]), "+OK\r\n");
    assert_eq!(digest(&mut c), before);
    assert_eq!(c.cmd(&[b"DBSIZE"]), ":3\r\n");
    let ttl = c.cmd(&[b"TTL", b"y"]);
    assert!(ttl.starts_with(":19") || ttl == ":2000\r\n", "{ttl}");
    let mut files: Vec<String> = std::fs::read_dir(dir.0.join("appendonlydir"))
        .expect("appendonlydir")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .collect();
    files.sort();
    assert_eq!(files, ["appendonly.aof.2.base.aof", "appendonly.aof.2.incr.aof", "appendonly.aof.manifest"]);
    redis_check_aof(&dir);
}

/// `CONFIG SET appendonly yes` inside a transaction schedules the AOF's start (Redis's
/// `aof_rewrite_scheduled`), which the cron runs even when the files an offline BGREWRITEAOF left
/// are still open (it closes them only on its next pass: a start in between used to be lost).
#[test]
fn an_aof_start_scheduled_in_a_transaction_runs() {
    let dir = TempDir::new("aof-multi-start");
    let l = Latch::start(&["--dir", dir.path(), "--save", ""]);
    let mut c = l.raw();
    let info = |c: &mut Raw| c.cmd(&[b"INFO", b"persistence"]);
    assert_eq!(c.cmd(&[b"BGREWRITEAOF"]), "+Background append only file rewriting started\r\n");
    while !info(&mut c).contains("aof_rewrites:1") {
        std::thread::sleep(Duration::from_millis(1));
    }
    c.cmd(&[b"MULTI"]);
    c.cmd(&[b"SET", b"foo", b"bar"]);
    c.cmd(&[b"CONFIG", b"SET", b"appendonly", b"yes"]);
    assert_eq!(c.cmd(&[b"EXEC"]), "*2\r\n+OK\r\n+OK\r\n");
    for _ in 0..250 {
        let i = info(&mut c);
        if i.contains("aof_enabled:1") && i.contains("aof_rewrites:2") && i.contains("aof_rewrite_in_progress:0") {
            return;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    panic!("the scheduled AOF start did not run: {}", info(&mut c));
}

/// Turning the AOF off stops a rewrite that runs (Redis kills its child), so the next
/// BGREWRITEAOF is not refused as already in progress.
#[test]
fn turning_the_aof_off_stops_a_running_rewrite() {
    aof_off_after_bgrewriteaof("aof-off-cancels", Duration::from_millis(300));
}

/// The same right after BGREWRITEAOF, before the AOF's cron started the rewrite: Redis forked it
/// at once and kills it; the request is dropped (it used to start anyway, with the AOF off, and
/// run on: Redis's unit/aofrw "Turning off AOF kills the background writing child if any").
#[test]
fn turning_the_aof_off_drops_a_rewrite_not_started_yet() {
    aof_off_after_bgrewriteaof("aof-off-drops", Duration::ZERO);
}

/// `appendonly yes` then `no` at once (before the cron starts the first rewrite) leaves no rewrite
/// in progress: BGREWRITEAOF is accepted and runs.
#[test]
fn the_aof_turned_on_and_off_at_once_leaves_no_rewrite_in_progress() {
    let dir = TempDir::new("aof-on-off");
    let l = Latch::start(&["--dir", dir.path(), "--save", ""]);
    let mut c = l.raw();
    for _ in 0..5 {
        assert_eq!(c.cmd(&[b"CONFIG", b"SET", b"appendonly", b"yes"]), "+OK\r\n");
        assert_eq!(c.cmd(&[b"CONFIG", b"SET", b"appendonly", b"no"]), "+OK\r\n");
    }
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while c.cmd(&[b"INFO", b"persistence"]).contains("aof_rewrite_in_progress:1") {
        assert!(std::time::Instant::now() < deadline, "a rewrite stays in progress");
        std::thread::sleep(Duration::from_millis(20));
    }
    assert_eq!(c.cmd(&[b"BGREWRITEAOF"]), "+Background append only file rewriting started\r\n");
    while !c.cmd(&[b"INFO", b"persistence"]).contains("aof_rewrite_in_progress:0") {
        assert!(std::time::Instant::now() < deadline, "the BGREWRITEAOF did not end");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// A BGREWRITEAOF while the AOF is off writes the dataset and then nothing more: a write right
/// after it ends reaches no file (it used to go to the incr file until the cron's next pass, and
/// a FUNCTION FLUSH there undid the base's functions at the next DEBUG LOADAOF: Redis's
/// unit/aofrw "AOF rewrite functions").
#[test]
fn a_rewrite_while_the_aof_is_off_leaves_nothing_open() {
    let dir = TempDir::new("aof-off-rewrite");
    let l = Latch::start(&["--dir", dir.path(), "--save", ""]);
    let mut c = l.raw();
    c.cmd(&[b"SET", b"before", b"1"]);
    assert_eq!(c.cmd(&[b"BGREWRITEAOF"]), "+Background append only file rewriting started\r\n");
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while c.cmd(&[b"INFO", b"persistence"]).contains("aof_rewrite_in_progress:1") {
        assert!(std::time::Instant::now() < deadline, "the BGREWRITEAOF did not end");
        std::thread::sleep(Duration::from_millis(1));
    }
    c.cmd(&[b"SET", b"after", b"2"]);
    std::thread::sleep(Duration::from_millis(300));
    let mut written = Vec::new();
    for e in std::fs::read_dir(std::path::Path::new(dir.path()).join("appendonlydir")).expect("the AOF directory") {
        written.extend(std::fs::read(e.expect("an entry").path()).expect("a file"));
    }
    let text = String::from_utf8_lossy(&written);
    assert!(text.contains("before"), "the rewrite wrote the dataset: {text:?}");
    assert!(!text.contains("after"), "a write after the rewrite reached a file: {text:?}");
}

fn aof_off_after_bgrewriteaof(name: &str, pause: Duration) {
    let dir = TempDir::new(name);
    let l = latch(&dir, "everysec", &[]);
    let mut c = l.raw();
    let in_progress = |c: &mut Raw| c.cmd(&[b"INFO", b"persistence"]).contains("aof_rewrite_in_progress:1");
    for _ in 0..250 {
        if !in_progress(&mut c) {
            break;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    c.cmd(&[b"SET", b"k", b"v"]);
    // A thousand seconds a key: the rewrite cannot end by itself within the test.
    c.cmd(&[b"CONFIG", b"SET", b"rdb-key-save-delay", b"1000000000"]);
    assert_eq!(c.cmd(&[b"BGREWRITEAOF"]), "+Background append only file rewriting started\r\n");
    std::thread::sleep(pause);
    assert!(in_progress(&mut c));
    assert_eq!(c.cmd(&[b"CONFIG", b"SET", b"appendonly", b"no"]), "+OK\r\n");
    let mut stopped = false;
    for _ in 0..250 {
        if !in_progress(&mut c) {
            stopped = true;
            break;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(stopped, "the rewrite still runs");
    c.cmd(&[b"CONFIG", b"SET", b"rdb-key-save-delay", b"0"]);
    assert_eq!(c.cmd(&[b"BGREWRITEAOF"]), "+Background append only file rewriting started\r\n");
}
