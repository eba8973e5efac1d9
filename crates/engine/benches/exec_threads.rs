//! Cost of shared bookkeeping when several threads run commands at once, without sockets:
//! `cargo bench -p engine --bench exec_threads` (`THREADS=4`, `N=...` to change the defaults).
//!
//! Each thread has its own client and its own keys in its own shards (so shard locks are not shared)
//! and runs GET, then SET, through `Server::execute` on a real clock. The same loop runs on one thread
//! and on `THREADS` threads; the median wall and CPU nanoseconds per command per thread are printed
//! for both. With nothing shared between the threads but the server's counters, the CPU numbers are
//! equal (the wall ones too, given a free core per thread); the gap is what the cache lines written by
//! every command cost.

use bytes::Bytes;
use engine::clock::SystemClock;
use engine::config::Config;
use engine::server::Server;
use std::sync::{Arc, Barrier};
use std::time::Instant;

fn args(v: &[&str]) -> Vec<Bytes> {
    v.iter().map(|s| Bytes::copy_from_slice(s.as_bytes())).collect()
}

/// CPU time of the calling thread in nanoseconds (Linux `/proc/thread-self/schedstat`), if known.
fn thread_cpu_ns() -> Option<u64> {
    std::fs::read_to_string("/proc/thread-self/schedstat").ok()?.split_whitespace().next()?.parse().ok()
}

/// Runs `n` commands per thread on `threads` threads at once; returns the medians over the threads
/// of the wall and CPU nanoseconds per command.
fn run(srv: &Arc<Server>, threads: usize, n: usize, cmd: &'static str) -> (f64, f64) {
    let barrier = Arc::new(Barrier::new(threads));
    let handles: Vec<_> = (0..threads)
        .map(|t| {
            let srv = srv.clone();
            let barrier = barrier.clone();
            std::thread::spawn(move || {
                let mut c = srv.new_client(format!("127.0.0.1:{}", 50000 + t), "127.0.0.1:6379".into());
                // Keys whose shards belong to this thread only (a contiguous range of them, so that
                // neighbouring shards, which may share cache lines, are not split between threads
                // either): shard locks are not shared.
                let nshards = srv.ks.nshards();
                let keys: Vec<String> = (0..)
                    .map(|i| format!("t{t}:k{i}"))
                    .filter(|k| srv.ks.shard_of(k.as_bytes()) * threads / nshards == t)
                    .take(64)
                    .collect();
                let cmds: Vec<Vec<Bytes>> = keys
                    .iter()
                    .map(|k| if cmd == "GET" { args(&["GET", k]) } else { args(&["SET", k, "v"]) })
                    .collect();
                barrier.wait();
                let (start, cpu0) = (Instant::now(), thread_cpu_ns());
                for i in 0..n {
                    std::hint::black_box(srv.execute(&mut c, &cmds[i % cmds.len()]));
                }
                let wall = start.elapsed().as_nanos() as f64 / n as f64;
                let cpu = thread_cpu_ns().zip(cpu0).map(|(b, a)| b.saturating_sub(a) as f64 / n as f64);
                (wall, cpu.unwrap_or(f64::NAN))
            })
        })
        .collect();
    let per: Vec<(f64, f64)> = handles.into_iter().map(|h| h.join().expect("bench thread")).collect();
    (median(per.iter().map(|p| p.0).collect()), median(per.iter().map(|p| p.1).collect()))
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn main() {
    let n: usize = std::env::var("N").ok().and_then(|v| v.parse().ok()).unwrap_or(1_000_000);
    let threads: usize = std::env::var("THREADS").ok().and_then(|v| v.parse().ok()).unwrap_or(2);
    let rounds = 5;
    let srv = Arc::new(Server::new(Config::new(), Arc::new(SystemClock::new())));
    for cmd in ["GET", "SET"] {
        for t in [1, threads] {
            let r: Vec<(f64, f64)> = (0..rounds).map(|_| run(&srv, t, n, cmd)).collect();
            let (wall, cpu) = (median(r.iter().map(|p| p.0).collect()), median(r.iter().map(|p| p.1).collect()));
            println!(
                "{cmd} x{t} threads: {wall:6.0} ns/op wall, {cpu:6.0} ns/op CPU, per thread (median of {rounds} rounds of {n})"
            );
        }
    }
}
