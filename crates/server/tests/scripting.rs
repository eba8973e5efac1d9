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

/// The Lua debugger in Redis's synchronous form, through raw bytes as `redis-cli --ldb-sync-mode`
/// speaks it: the script stops at its first line, steps (with the commands it calls and their
/// replies logged), shows locals, runs commands for the user, takes breakpoints, and ends with
/// `<endsession>`, the script's reply and the connection closed. Other clients are served meanwhile.
#[test]
fn script_debug_sync_steps_through_a_script() {
    let l = Latch::start(&[]);
    let mut c = l.raw();
    assert!(c.cmd(&[b"SCRIPT", b"DEBUG", b"YES"]).starts_with("-ERR SCRIPT DEBUG YES"));
    assert_eq!(c.cmd(&[b"SCRIPT", b"DEBUG", b"SYNC"]), "+OK\r\n");
    // EVALSHA is not debugged: Redis answers NOSCRIPT.
    assert!(c.cmd(&[b"EVALSHA", &[b'a'; 40], b"0"]).starts_with("-NOSCRIPT"));
    let script = b"local n = 41\nredis.call('set', KEYS[1], n + 1)\nreturn redis.call('get', KEYS[1])\n";
    assert_eq!(
        c.cmd(&[b"EVAL", script, b"1", b"k"]),
        "*2\r\n+* Stopped at 1, stop reason = step over\r\n+-> 1   local n = 41\r\n"
    );
    assert_eq!(
        c.cmd(&[b"step"]),
        "*2\r\n+* Stopped at 2, stop reason = step over\r\n+-> 2   redis.call('set', KEYS[1], n + 1)\r\n"
    );
    assert_eq!(c.cmd(&[b"print"]), "*1\r\n+<value> n = 41\r\n");
    assert_eq!(c.cmd(&[b"print", b"KEYS"]), "*1\r\n+<value> {\"k\"}\r\n");
    assert_eq!(c.cmd(&[b"print", b"nope"]), "*1\r\n+No such variable.\r\n");
    assert_eq!(
        c.cmd(&[b"step"]),
        "*4\r\n+<redis> set k 42\r\n+<reply> \"+OK\"\r\n+* Stopped at 3, stop reason = step over\r\n+-> 3   return redis.call('get', KEYS[1])\r\n"
    );
    // Another client is served while the script waits (it holds only its key's shard).
    assert_eq!(l.raw().cmd(&[b"PING"]), "+PONG\r\n");
    // `eval` runs in a callframe of its own: the script's locals are not there.
    assert_eq!(c.cmd(&[b"eval", b"6", b"*", b"7"]), "*1\r\n+<retval> 42\r\n");
    assert!(c.cmd(&[b"redis", b"incrby", b"k", b"nope"]).contains("<error> -ERR value is not an integer"));
    assert_eq!(c.cmd(&[b"break", b"9"]), "*1\r\n+Wrong line number.\r\n");
    assert_eq!(
        c.cmd(&[b"nonsense"]),
        "*1\r\n+<error> Unknown Redis Lua debugger command or wrong number of arguments.\r\n"
    );
    // A redis command of many arguments is shown with its first ten and "(argc - 11 more)", as
    // Redis counts (its stack-overflow test).
    let mut many: Vec<&[u8]> = vec![b"redis"];
    many.extend(std::iter::repeat_n(b"test".as_slice(), 100));
    let r = c.cmd(&many);
    assert!(r.contains("+<redis> test test test test test test test test test test ... (89 more)\r\n"), "{r}");
    assert!(r.contains("+<error> Unknown Redis command called from script\r\n"), "{r}");
    c.send(b"*1\r\n$1\r\nc\r\n");
    assert_eq!(String::from_utf8_lossy(&c.reply_bytes()), "*1\r\n+<endsession>\r\n");
    assert_eq!(String::from_utf8_lossy(&c.reply_bytes()), "$2\r\n42\r\n");
    assert!(c.closed(), "the session's connection stays open");
    assert_eq!(l.raw().cmd(&[b"GET", b"k"]), "$2\r\n42\r\n");
}

/// A debugged script whose client goes away runs to its end without stopping.
#[test]
fn a_debugged_script_runs_on_when_its_client_leaves() {
    let l = Latch::start(&[]);
    let mut c = l.raw();
    assert_eq!(c.cmd(&[b"SCRIPT", b"DEBUG", b"SYNC"]), "+OK\r\n");
    let r = c.cmd(&[b"EVAL", b"redis.call('set', 'left', 1)\nredis.breakpoint()\nredis.call('incr', 'left')", b"0"]);
    assert!(r.contains("Stopped at 1"), "{r}");
    drop(c);
    let mut other = l.raw();
    let deadline = Instant::now() + Duration::from_secs(10);
    while other.cmd(&[b"GET", b"left"]) != "$1\r\n2\r\n" {
        assert!(Instant::now() < deadline, "the script did not finish");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// A command refused inside a script counts once, where it was refused (its `rejected_calls`, the
/// error's errorstat), not again as the script's error reply, whether the script raised it or
/// returned pcall's error table; the script's own call counts as failed (Redis 7.0's accounting).
#[test]
fn errors_inside_scripts_are_counted_once() {
    let l = Latch::start(&[]);
    let mut c = l.raw();
    let stat = |c: &mut common::Raw, section: &[u8], prefix: &str| -> String {
        let info = c.cmd(&[b"INFO", section]);
        info.lines().find(|l| l.starts_with(prefix)).unwrap_or_default().to_string()
    };
    assert_eq!(c.cmd(&[b"CONFIG", b"SET", b"maxmemory", b"1"]), "+OK\r\n");
    for script in [&b"return redis.call('set','x','y')"[..], b"return redis.pcall('set','x','y')"] {
        assert_eq!(c.cmd(&[b"CONFIG", b"RESETSTAT"]), "+OK\r\n");
        let r = c.cmd(&[b"EVAL", script, b"1", b"x"]);
        assert!(r.starts_with("-OOM command not allowed"), "{r}");
        assert_eq!(stat(&mut c, b"errorstats", "errorstat_OOM:"), "errorstat_OOM:count=1");
        assert_eq!(stat(&mut c, b"stats", "total_error_replies:"), "total_error_replies:1");
        let set = stat(&mut c, b"commandstats", "cmdstat_set:");
        assert!(set.contains("calls=0,") && set.contains("rejected_calls=1,failed_calls=0"), "{set}");
        let eval = stat(&mut c, b"commandstats", "cmdstat_eval:");
        assert!(eval.contains("calls=1,") && eval.ends_with("rejected_calls=0,failed_calls=1"), "{eval}");
    }
    // A script's own error (not from a command) counts as its reply.
    assert_eq!(c.cmd(&[b"CONFIG", b"RESETSTAT"]), "+OK\r\n");
    assert!(c.cmd(&[b"EVAL", b"return redis.error_reply('MINE oops')", b"0"]).starts_with("-MINE oops"));
    assert_eq!(stat(&mut c, b"errorstats", "errorstat_MINE:"), "errorstat_MINE:count=1");
}
