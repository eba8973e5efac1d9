//! The wire: RESP and inline requests, pipelining, protocol errors, large arguments, hostile input.

mod common;
use common::Latch;
use rand::{Rng, SeedableRng};
use std::io::Write;
use std::time::{Duration, Instant};

#[test]
fn inline_and_multibulk_pipelined_in_one_write() {
    let l = Latch::start(&[]);
    let mut raw = l.raw();
    raw.send(b"PING\r\n*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$2\r\nv1\r\nset \"a b\" 'c d'\r\n\r\n*2\r\n$3\r\nGET\r\n$3\r\na b\r\nget k\n");
    assert_eq!(raw.reply_bytes(), b"+PONG\r\n");
    assert_eq!(raw.reply_bytes(), b"+OK\r\n");
    assert_eq!(raw.reply_bytes(), b"+OK\r\n");
    assert_eq!(raw.reply_bytes(), b"$3\r\nc d\r\n");
    assert_eq!(raw.reply_bytes(), b"$2\r\nv1\r\n");
}

#[test]
fn user_errors_keep_the_connection() {
    let l = Latch::start(&[]);
    let mut raw = l.raw();
    assert_eq!(raw.call(b"NOSUCH x\r\n"), "-ERR unknown command 'NOSUCH', with args beginning with: 'x' \r\n");
    assert_eq!(raw.call(b"GET\r\n"), "-ERR wrong number of arguments for 'get' command\r\n");
    assert_eq!(raw.call(b"PING\r\n"), "+PONG\r\n");
}

#[test]
fn protocol_errors_reply_then_close() {
    let l = Latch::start(&[]);
    for (req, want) in [
        (&b"*3000000000\r\n"[..], "-ERR Protocol error: invalid multibulk length\r\n"),
        (b"*1\r\n$-10\r\n", "-ERR Protocol error: invalid bulk length\r\n"),
        (b"*1\r\n$2000000000\r\n", "-ERR Protocol error: invalid bulk length\r\n"),
        (b"*1\r\nfoo\r\n", "-ERR Protocol error: expected '$', got 'f'\r\n"),
        (b"*20\r\n$3\r\nfoo\r\n$x\r\n", "-ERR Protocol error: invalid bulk length\r\n"),
        (b"set \"unbalanced\r\n", "-ERR Protocol error: unbalanced quotes in request\r\n"),
    ] {
        let mut raw = l.raw();
        assert_eq!(raw.call(req), want, "request {:?}", String::from_utf8_lossy(req));
        assert!(raw.closed(), "connection must close after {:?}", String::from_utf8_lossy(req));
    }
    // The server is still fine.
    assert_eq!(l.raw().call(b"PING\r\n"), "+PONG\r\n");
}

#[test]
fn too_big_inline_request() {
    let l = Latch::start(&[]);
    let mut raw = l.raw();
    raw.send(&vec![b'a'; 70 * 1024]);
    assert_eq!(String::from_utf8_lossy(&raw.reply_bytes()), "-ERR Protocol error: too big inline request\r\n");
    assert!(raw.closed());
}

#[test]
fn large_argument_in_small_pieces() {
    let l = Latch::start(&[]);
    let mut raw = l.raw();
    let n = 8 * 1024 * 1024;
    let mut req = format!("*3\r\n$3\r\nSET\r\n$3\r\nbig\r\n${n}\r\n").into_bytes();
    req.extend(std::iter::repeat_n(b'x', n));
    req.extend_from_slice(b"\r\n");
    for chunk in req.chunks(7 * 1024) {
        raw.s.write_all(chunk).unwrap();
    }
    assert_eq!(raw.reply_bytes(), b"+OK\r\n");
    raw.send(b"*2\r\n$3\r\nGET\r\n$3\r\nbig\r\n");
    let r = raw.reply_bytes();
    assert_eq!(r.len(), n + format!("${n}\r\n\r\n").len());
    assert!(r[r.len() - 2 - n..r.len() - 2].iter().all(|&b| b == b'x'));
}

#[test]
fn many_arguments() {
    let l = Latch::start(&[]);
    let mut raw = l.raw();
    let n = 100_000;
    let mut req = format!("*{}\r\n$4\r\nECHO\r\n", 2).into_bytes();
    let arg = "y".repeat(n);
    req.extend_from_slice(format!("${n}\r\n{arg}\r\n").as_bytes());
    assert_eq!(raw.call(&req).len(), n + format!("${n}\r\n\r\n").len());
    // 50k arguments in one command (MSET-like arity error keeps it cheap to check)
    let count = 50_001;
    let mut req = format!("*{count}\r\n$4\r\nPING\r\n").into_bytes();
    for _ in 1..count {
        req.extend_from_slice(b"$1\r\nz\r\n");
    }
    assert_eq!(raw.call(&req), "-ERR wrong number of arguments for 'ping' command\r\n");
}

/// One client sends random garbage over many connections while another keeps working; the server must
/// neither crash nor disturb the well-behaved client. Bounded in count and time.
#[test]
fn random_bytes_never_disturb_other_clients() {
    let l = Latch::start(&[]);
    let mut good = l.raw();
    assert_eq!(good.call(b"SET mine 1\r\n"), "+OK\r\n");
    let mut rng = rand::rngs::StdRng::seed_from_u64(0x1a7c4);
    let started = Instant::now();
    for round in 0..300 {
        if started.elapsed() > Duration::from_secs(20) {
            break;
        }
        let mut bad = l.raw();
        bad.s.set_read_timeout(Some(Duration::from_millis(50))).unwrap();
        let len = rng.random_range(1..4096);
        let mut junk: Vec<u8> = (0..len).map(|_| rng.random()).collect();
        if round % 3 == 0 {
            // Start like a real request so deeper parser states are reached.
            let mut prefix = format!("*{}\r\n${}\r\n", rng.random_range(1..5), rng.random_range(0..8)).into_bytes();
            prefix.append(&mut junk);
            junk = prefix;
        }
        let _ = bad.s.write_all(&junk);
        drop(bad);
        assert_eq!(good.call(b"GET mine\r\n"), "$1\r\n1\r\n", "after round {round}");
    }
    assert_eq!(good.call(b"PING\r\n"), "+PONG\r\n");
}

/// Requests pipelined in one write are decoded ahead of their turn (to load their keys ahead), but
/// never past a request that changes how the next ones decode: each decodes under the limits in
/// force when it runs, as Redis parses a request only after the one before it ran. The replies
/// are redis-server 7.0.15's for the same bytes.
#[test]
fn pipelined_requests_decode_under_the_limits_their_predecessors_set() {
    let l = Latch::start(&["--requirepass", "pw"]);
    let enc = common::encode::<&[u8]>;
    let authenticated = || {
        let mut raw = l.raw();
        assert_eq!(raw.cmd(&[b"AUTH", b"pw"]), "+OK\r\n");
        raw
    };
    let big = vec![b'x'; 20_000];
    // AUTH lifts the unauthenticated client's 16 KiB bulk limit for the request after it.
    let mut raw = l.raw();
    let mut pipeline = enc(&[b"AUTH", b"pw"]);
    pipeline.extend(enc(&[b"SET", b"k", &big]));
    pipeline.extend(enc(&[b"STRLEN", b"k"]));
    raw.send(&pipeline);
    assert_eq!(raw.reply_bytes(), b"+OK\r\n");
    assert_eq!(raw.reply_bytes(), b"+OK\r\n");
    assert_eq!(raw.reply_bytes(), b":20000\r\n");
    // RESET ends the authentication: the request after it is held to the limit again.
    let mut raw = authenticated();
    let mut pipeline = enc(&[b"GET", b"nokey"]);
    pipeline.extend(enc(&[b"RESET"]));
    pipeline.extend_from_slice(b"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$20000\r\n");
    raw.send(&pipeline);
    assert_eq!(raw.reply_bytes(), b"$-1\r\n");
    assert_eq!(raw.reply_bytes(), b"+RESET\r\n");
    assert_eq!(raw.reply_bytes(), b"-ERR Protocol error: unauthenticated bulk length\r\n");
    assert!(raw.closed());
    // CONFIG SET proto-max-bulk-len applies to the next request, not only to the next read.
    let mut raw = authenticated();
    let mut pipeline = enc(&[b"SET", b"a", b"1"]);
    pipeline.extend(enc(&[b"CONFIG", b"SET", b"proto-max-bulk-len", b"1mb"]));
    pipeline.extend_from_slice(b"*3\r\n$3\r\nSET\r\n$1\r\nb\r\n$2000000\r\n");
    raw.send(&pipeline);
    assert_eq!(raw.reply_bytes(), b"+OK\r\n");
    assert_eq!(raw.reply_bytes(), b"+OK\r\n");
    assert_eq!(raw.reply_bytes(), b"-ERR Protocol error: invalid bulk length\r\n");
    assert!(raw.closed());
    // A protocol error after good requests: they run and answer first.
    let mut raw = l.raw();
    let mut pipeline = enc(&[b"AUTH", b"pw"]);
    for _ in 0..3 {
        pipeline.extend(enc(&[b"INCR", b"n"]));
    }
    pipeline.extend_from_slice(b"*2\r\n$3\r\nGET\r\n$x\r\n");
    raw.send(&pipeline);
    assert_eq!(raw.reply_bytes(), b"+OK\r\n");
    for n in 1..=3 {
        assert_eq!(raw.reply_bytes(), format!(":{n}\r\n").as_bytes());
    }
    assert_eq!(raw.reply_bytes(), b"-ERR Protocol error: invalid bulk length\r\n");
    assert!(raw.closed());
    // A blocking command holds the requests after it, which then run in order.
    let mut raw = l.raw();
    let mut pipeline = enc(&[b"AUTH", b"pw"]);
    pipeline.extend(enc(&[b"SET", b"a", b"1"]));
    pipeline.extend(enc(&[b"BLPOP", b"list", b"0.1"]));
    pipeline.extend(enc(&[b"GET", b"a"]));
    raw.send(&pipeline);
    assert_eq!(raw.reply_bytes(), b"+OK\r\n");
    assert_eq!(raw.reply_bytes(), b"+OK\r\n");
    assert_eq!(raw.reply_bytes(), b"*-1\r\n");
    assert_eq!(raw.reply_bytes(), b"$1\r\n1\r\n");
}
