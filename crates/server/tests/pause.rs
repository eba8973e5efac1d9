//! CLIENT PAUSE over real connections: a paused writer waits while readers are served, and is
//! released by CLIENT UNPAUSE or by the pause's deadline, in arrival order.

mod common;
use common::{Latch, Raw};
use std::time::{Duration, Instant};

/// INFO's `blocked_clients`.
fn blocked_clients(c: &mut redis::Connection) -> u64 {
    let info: String = redis::cmd("INFO").arg("clients").query(c).expect("INFO");
    info.lines()
        .find_map(|l| l.strip_prefix("blocked_clients:"))
        .and_then(|v| v.trim().parse().ok())
        .expect("blocked_clients")
}

/// Waits until `n` clients are blocked (Redis's `wait_for_blocked_clients_count`).
fn wait_blocked(c: &mut redis::Connection, n: u64) {
    let t = Instant::now();
    while blocked_clients(c) != n {
        assert!(t.elapsed() < Duration::from_secs(5), "blocked_clients never reached {n}");
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// True if a reply arrives within `ms` milliseconds.
fn replies_within(r: &mut Raw, ms: u64) -> bool {
    r.s.set_read_timeout(Some(Duration::from_millis(ms))).expect("timeout");
    let mut probe = [0u8; 1];
    let got = r.s.peek(&mut probe).is_ok_and(|n| n > 0);
    r.s.set_read_timeout(Some(Duration::from_secs(10))).expect("timeout");
    got
}

#[test]
fn a_paused_writer_waits_while_a_reader_is_served_until_unpause() {
    let l = Latch::start(&[]);
    let mut admin = l.conn();
    let mut reader = l.conn();
    let mut writer = l.raw();
    let _: () = redis::cmd("SET").arg("foo").arg("old").query(&mut admin).expect("SET");
    let _: () = redis::cmd("CLIENT").arg("PAUSE").arg(100_000).arg("WRITE").query(&mut admin).expect("PAUSE");
    // The write and the read pipelined behind it wait; other clients' reads do not.
    writer.send(b"SET foo new\r\nGET foo\r\n");
    wait_blocked(&mut reader, 1);
    let v: String = redis::cmd("GET").arg("foo").query(&mut reader).expect("GET");
    assert_eq!(v, "old");
    assert!(!replies_within(&mut writer, 200), "the paused write was answered");
    let list: String = redis::cmd("CLIENT").arg("LIST").query(&mut reader).expect("CLIENT LIST");
    assert!(list.lines().any(|l| l.contains(" flags=b ") && l.contains(" cmd=set ")), "{list}");
    let _: () = redis::cmd("CLIENT").arg("UNPAUSE").query(&mut admin).expect("UNPAUSE");
    assert_eq!(writer.reply_bytes(), b"+OK\r\n");
    assert_eq!(writer.reply_bytes(), b"$3\r\nnew\r\n");
    assert_eq!(blocked_clients(&mut reader), 0);
}

#[test]
fn the_pause_deadline_releases_waiting_clients_in_arrival_order() {
    let l = Latch::start(&[]);
    let mut admin = l.conn();
    let start = Instant::now();
    let _: () = redis::cmd("CLIENT").arg("PAUSE").arg(600).arg("WRITE").query(&mut admin).expect("PAUSE");
    let mut writers: Vec<Raw> = (0..3).map(|_| l.raw()).collect();
    for (i, w) in writers.iter_mut().enumerate() {
        w.send(format!("RPUSH l {i}\r\n").as_bytes());
        wait_blocked(&mut admin, i as u64 + 1);
    }
    for (i, w) in writers.iter_mut().enumerate() {
        assert_eq!(w.reply_bytes(), format!(":{}\r\n", i + 1).into_bytes());
    }
    assert!(start.elapsed() >= Duration::from_millis(590), "released after {:?}", start.elapsed());
    let l: Vec<String> = redis::cmd("LRANGE").arg("l").arg(0).arg(-1).query(&mut admin).expect("LRANGE");
    assert_eq!(l, ["0", "1", "2"]);
    assert_eq!(blocked_clients(&mut admin), 0);
}

#[test]
fn a_pause_all_holds_reads_and_unpause_itself() {
    let l = Latch::start(&[]);
    let mut admin = l.raw();
    let mut reader = l.raw();
    let start = Instant::now();
    assert_eq!(admin.call(b"CLIENT PAUSE 400 ALL\r\n"), "+OK\r\n");
    reader.send(b"PING\r\n");
    admin.send(b"CLIENT UNPAUSE\r\n");
    assert!(!replies_within(&mut reader, 150), "PING answered during a pause ALL");
    assert_eq!(reader.reply_bytes(), b"+PONG\r\n");
    assert_eq!(admin.reply_bytes(), b"+OK\r\n");
    assert!(start.elapsed() >= Duration::from_millis(390), "released after {:?}", start.elapsed());
}
