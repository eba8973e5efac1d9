//! Scripting over the wire: the lock pattern of the seeds (SET NX PX + Lua compare-and-delete via
//! `redis::Script`, i.e. EVALSHA with an EVAL fallback), and -BUSY / SCRIPT KILL with two clients.

mod common;
use common::Latch;
use std::time::{Duration, Instant};

const RELEASE: &str =
    "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) else return 0 end";

#[test]
fn lock_acquire_and_compare_and_delete_release() {
    let l = Latch::start(&[]);
    let mut c = l.conn();
    let release = redis::Script::new(RELEASE);
    let ok: Option<String> =
        redis::cmd("SET").arg("lock:a").arg("token-1").arg("NX").arg("PX").arg(30000).query(&mut c).unwrap();
    assert_eq!(ok.as_deref(), Some("OK"));
    let again: Option<String> =
        redis::cmd("SET").arg("lock:a").arg("token-2").arg("NX").arg("PX").arg(30000).query(&mut c).unwrap();
    assert_eq!(again, None);
    // Wrong token: nothing deleted (first call loads the script through the EVALSHA -> EVAL fallback).
    let n: i64 = release.key("lock:a").arg("token-2").invoke(&mut c).unwrap();
    assert_eq!(n, 0);
    let n: i64 = release.key("lock:a").arg("token-1").invoke(&mut c).unwrap();
    assert_eq!(n, 1);
    let exists: i64 = redis::cmd("EXISTS").arg("lock:a").query(&mut c).unwrap();
    assert_eq!(exists, 0);
    let loaded: Vec<i64> = redis::cmd("SCRIPT").arg("EXISTS").arg(release.get_hash()).query(&mut c).unwrap();
    assert_eq!(loaded, vec![1]);
}

#[test]
fn busy_script_then_script_kill() {
    expect_killed("local i = 0 while true do i = i + 1 end");
}

/// The busy check and SCRIPT KILL reach code running in a coroutine, and an endless `pcall` loop
/// (which catches each kill error) still ends.
#[test]
fn busy_coroutine_and_pcall_loops_are_killed() {
    // As in Redis, the kill error ends the coroutine, `resume` returns it, and the script returns.
    let ended = busy_then_killed("local co = coroutine.create(function() while true do end end) coroutine.resume(co)");
    assert_eq!(ended.unwrap(), redis::Value::Nil);
    expect_killed("while true do pcall(function() while true do end end) end");
    expect_killed(
        "local co = coroutine.wrap(function() while true do pcall(function() while true do end end) end end) co()",
    );
}

fn expect_killed(script: &'static str) {
    let err = busy_then_killed(script).unwrap_err().to_string();
    assert!(err.contains("Script killed by user with SCRIPT KILL"), "{err}");
}

/// Runs `script` until other clients get -BUSY, kills it and returns what its caller got.
fn busy_then_killed(script: &'static str) -> redis::RedisResult<redis::Value> {
    let l = Latch::start(&[]);
    let mut admin = l.conn();
    let _: () = redis::cmd("CONFIG").arg("SET").arg("busy-reply-threshold").arg(50).query(&mut admin).unwrap();
    let url = l.url();
    let runner = std::thread::spawn(move || {
        let mut c = redis::Client::open(url).unwrap().get_connection().unwrap();
        redis::cmd("EVAL").arg(script).arg(0).query::<redis::Value>(&mut c)
    });
    // Other clients get -BUSY (bounded: they never block on the script's locks for long).
    let start = Instant::now();
    let busy = loop {
        let r: redis::RedisResult<Option<String>> = redis::cmd("GET").arg("x").query(&mut admin);
        if let Err(e) = r {
            break e.to_string();
        }
        assert!(start.elapsed() < Duration::from_secs(10), "never got BUSY");
        std::thread::sleep(Duration::from_millis(20));
    };
    assert!(busy.contains("BUSY"), "{busy}");
    let killed: String = redis::cmd("SCRIPT").arg("KILL").query(&mut admin).unwrap();
    assert_eq!(killed, "OK");
    let ended = runner.join().unwrap();
    let pong: String = redis::cmd("PING").query(&mut admin).unwrap();
    assert_eq!(pong, "PONG");
    assert!(start.elapsed() < Duration::from_secs(10));
    ended
}

/// Scripts touching keys they did not declare run atomically and without error under contention
/// from many connections and IO threads (Redis, outside cluster mode, runs them): after its first
/// such access, a script runs with every shard locked.
#[test]
fn undeclared_keys_under_contention() {
    let l = Latch::start(&["--io-threads", "4"]);
    let url = l.url();
    let workers: Vec<_> = (0..8)
        .map(|w| {
            let url = url.clone();
            std::thread::spawn(move || {
                let mut c = redis::Client::open(url).unwrap().get_connection().unwrap();
                let mut errors = Vec::new();
                for i in 0..300u64 {
                    let (a, b) = ((i * 7 + w) % 64, (i * 13 + w * 5) % 64);
                    let r: redis::RedisResult<i64> = if i % 2 == 0 {
                        redis::cmd("EVAL")
                            .arg(
                                "for i = 1, 20 do redis.call('incr', ARGV[1]) redis.call('incr', ARGV[2]) end return 1",
                            )
                            .arg(0)
                            .arg(format!("u:{a}"))
                            .arg(format!("u:{b}"))
                            .query(&mut c)
                    } else {
                        redis::cmd("EVAL")
                            .arg(
                                "for i = 1, 20 do redis.call('incr', KEYS[1]) redis.call('incr', ARGV[1]) end return 1",
                            )
                            .arg(1)
                            .arg(format!("u:{a}"))
                            .arg(format!("u:{b}"))
                            .query(&mut c)
                    };
                    if let Err(e) = r {
                        errors.push(e.to_string());
                    }
                }
                errors
            })
        })
        .collect();
    let errors: Vec<String> = workers.into_iter().flat_map(|w| w.join().unwrap()).collect();
    assert!(errors.is_empty(), "{} errors, first: {:?}", errors.len(), errors.first());
    // Every increment happened: 8 workers x 300 runs x 40 increments.
    let mut c = l.conn();
    let keys: Vec<String> = redis::cmd("KEYS").arg("u:*").query(&mut c).unwrap();
    let total: i64 = keys.iter().map(|k| redis::cmd("GET").arg(k).query::<i64>(&mut c).unwrap()).sum();
    assert_eq!(total, 8 * 300 * 40);
}
