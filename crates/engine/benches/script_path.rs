//! In-process cost of the scripting path, without sockets: `cargo bench -p engine --bench script_path`.
//!
//! Runs each command (or cycle of commands) through `Server::execute` (resolve, arity, shard locking, the VM pool, Lua, the
//! conversions) on a real clock, several rounds, and prints the median nanoseconds per command. GET is
//! the baseline for everything that is not scripting.

use bytes::Bytes;
use engine::clock::SystemClock;
use engine::config::Config;
use engine::server::Server;
use std::sync::Arc;
use std::time::Instant;

const RELEASE: &str = "if redis.call('get',KEYS[1]) == ARGV[1] then return redis.call('del',KEYS[1]) else return 0 end";

fn args(v: &[&str]) -> Vec<Bytes> {
    v.iter().map(|s| Bytes::copy_from_slice(s.as_bytes())).collect()
}

fn main() {
    let n: usize = std::env::var("N").ok().and_then(|v| v.parse().ok()).unwrap_or(300_000);
    let rounds = 5;
    let srv = Arc::new(Server::new(Config::new(), Arc::new(SystemClock::new())));
    let mut c = srv.new_client("127.0.0.1:50000".into(), "127.0.0.1:6379".into());
    let sha = match srv.execute(&mut c, &args(&["SCRIPT", "LOAD", RELEASE])) {
        Some(resp::Frame::Bulk(b)) => String::from_utf8(b.to_vec()).expect("hex"),
        other => panic!("SCRIPT LOAD: {other:?}"),
    };
    srv.execute(&mut c, &args(&["SET", "lock:held", "tok"]));
    // Each case is a cycle of commands; the figure is per cycle.
    let cases: Vec<(&str, Vec<Vec<Bytes>>)> = vec![
        ("GET (miss)", vec![args(&["GET", "lock:free"])]),
        ("EVALSHA release (key missing)", vec![args(&["EVALSHA", &sha, "1", "lock:free", "tok"])]),
        ("EVALSHA release (other owner)", vec![args(&["EVALSHA", &sha, "1", "lock:held", "nope"])]),
        ("EVAL return 1", vec![args(&["EVAL", "return 1", "0"])]),
        ("SET NX PX", vec![args(&["SET", "lock:c", "tok", "NX", "PX", "30000"]), args(&["DEL", "lock:c"])]),
        (
            "SET NX PX + EVALSHA release",
            vec![args(&["SET", "lock:c", "tok", "NX", "PX", "30000"]), args(&["EVALSHA", &sha, "1", "lock:c", "tok"])],
        ),
    ];
    let only = std::env::var("ONLY").unwrap_or_default();
    for (name, cycle) in cases.iter().filter(|(name, _)| name.contains(only.as_str())) {
        let mut per_round = Vec::with_capacity(rounds);
        for _ in 0..rounds {
            let t = Instant::now();
            for _ in 0..n {
                for cmd in cycle {
                    std::hint::black_box(srv.execute(&mut c, cmd));
                }
            }
            per_round.push(t.elapsed().as_nanos() as f64 / n as f64);
        }
        per_round.sort_by(f64::total_cmp);
        println!("{name:32} {:8.0} ns/cycle (median of {rounds} rounds of {n})", per_round[rounds / 2]);
    }
}
