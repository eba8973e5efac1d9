//! Blocking pops over real connections: hand-off order, timeouts, disconnects, pipelining behind a
//! blocked command.

mod common;
use common::Latch;
use std::time::{Duration, Instant};

#[test]
fn blpop_is_served_by_a_push_from_another_connection() {
    let l = Latch::start(&[]);
    let mut waiter = l.raw();
    let mut pusher = l.raw();
    waiter.send(b"BLPOP jobs 0\r\nPING\r\n");
    std::thread::sleep(Duration::from_millis(100));
    assert_eq!(pusher.call(b"RPUSH jobs j1\r\n"), ":1\r\n");
    assert_eq!(waiter.reply_bytes(), b"*2\r\n$4\r\njobs\r\n$2\r\nj1\r\n");
    // The pipelined PING waited behind the blocked command.
    assert_eq!(waiter.reply_bytes(), b"+PONG\r\n");
    assert_eq!(pusher.call(b"LLEN jobs\r\n"), ":0\r\n");
}

#[test]
fn fifo_among_waiters_and_timeouts() {
    let l = Latch::start(&[]);
    let mut first = l.raw();
    let mut second = l.raw();
    let mut pusher = l.raw();
    first.send(b"BRPOP q 5\r\n");
    std::thread::sleep(Duration::from_millis(50));
    second.send(b"BRPOP q 5\r\n");
    std::thread::sleep(Duration::from_millis(50));
    assert_eq!(pusher.call(b"LPUSH q a\r\n"), ":1\r\n");
    assert_eq!(first.reply_bytes(), b"*2\r\n$1\r\nq\r\n$1\r\na\r\n");
    assert_eq!(pusher.call(b"LPUSH q b\r\n"), ":1\r\n");
    assert_eq!(second.reply_bytes(), b"*2\r\n$1\r\nq\r\n$1\r\nb\r\n");
    // Timeout: nil array after about the requested time.
    let t = Instant::now();
    assert_eq!(first.call(b"BLPOP empty 0.2\r\n"), "*-1\r\n");
    assert!(t.elapsed() >= Duration::from_millis(150), "{:?}", t.elapsed());
    assert_eq!(first.call(b"BLMOVE empty x LEFT LEFT 0.05\r\n"), "$-1\r\n");
}

#[test]
fn a_waiter_that_disconnects_does_not_swallow_data() {
    let l = Latch::start(&[]);
    let mut gone = l.raw();
    gone.send(b"BLPOP q 0\r\n");
    std::thread::sleep(Duration::from_millis(50));
    drop(gone);
    std::thread::sleep(Duration::from_millis(100));
    let mut c = l.raw();
    assert_eq!(c.call(b"RPUSH q x\r\n"), ":1\r\n");
    assert_eq!(c.call(b"LRANGE q 0 -1\r\n"), "*1\r\n$1\r\nx\r\n");
    let info = c.call(b"INFO clients\r\n");
    assert!(info.contains("blocked_clients:0"), "{info}");
}

/// A key that expires while the transaction that pushed it runs (a DEBUG SLEEP inside it) serves
/// nobody: blocked clients are served against the time after the command, as Redis updates its
/// cached time before serving them.
#[test]
fn a_push_whose_key_expired_during_its_transaction_serves_nobody() {
    let l = Latch::start(&["--enable-debug-command", "yes"]);
    let mut waiter = l.raw();
    let mut w = l.raw();
    assert_eq!(w.call(b"DEBUG SET-ACTIVE-EXPIRE 0\r\n"), "+OK\r\n");
    let id = waiter.call(b"CLIENT ID\r\n");
    let id = id.trim_start_matches(':').trim_end();
    waiter.send(b"BRPOP k 0\r\n");
    std::thread::sleep(Duration::from_millis(100));
    for cmd in ["MULTI", "RPUSH k hello", "PEXPIRE k 100", "DEBUG SLEEP 0.2"] {
        w.call(format!("{cmd}\r\n").as_bytes());
    }
    assert_eq!(w.call(b"EXEC\r\n"), "*3\r\n:1\r\n:1\r\n+OK\r\n");
    let list = w.call(format!("CLIENT LIST ID {id}\r\n").as_bytes());
    assert!(list.contains("flags=b"), "still blocked: {list}");
    assert_eq!(w.call(format!("CLIENT UNBLOCK {id}\r\n").as_bytes()), ":1\r\n");
    assert_eq!(waiter.reply_bytes(), b"*-1\r\n");
}
