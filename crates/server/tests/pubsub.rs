//! Pub/sub through the real binary: the `redis` crate's PubSub API, the exact bytes of RESP2's
//! subscribed mode and of RESP3 pushes, and a subscriber that never reads (closed at the pubsub
//! class of `client-output-buffer-limit` while the publisher and a subscriber that reads go on).
//!
//! Every check runs against Latch and against a real redis-server 7.0.15 on a loopback port: the
//! expected values are what Redis does (replayed by hand against it first, and asserted here on
//! both, so that a Redis that behaved otherwise would fail the test, not pass it silently).

mod common;
use common::{Latch, Raw, RedisServer};
use redis::Commands;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// A server under test.
struct Target {
    name: &'static str,
    port: u16,
    pid: u32,
}

impl Target {
    fn raw(&self) -> Raw {
        Raw::connect(self.port)
    }

    fn client(&self) -> redis::Client {
        redis::Client::open(format!("redis://127.0.0.1:{}/", self.port)).expect("client")
    }
}

/// Runs `check` on a fresh Latch, then on a fresh redis-server (unless the run goes without one,
/// `LATCH_TESTS_WITHOUT_REDIS=1`).
fn on_both(what: &str, check: impl Fn(&Target)) {
    let latch = Latch::start(&[]);
    check(&Target { name: "latch", port: latch.port, pid: latch.pid() });
    drop(latch);
    if let Some(redis) = RedisServer::start_or_skip(what) {
        check(&Target { name: "redis", port: redis.port, pid: redis.pid() });
    }
}

/// Waits (at most `limit`) until `f` holds.
fn eventually(limit: Duration, mut f: impl FnMut() -> bool) -> bool {
    let deadline = Instant::now() + limit;
    loop {
        if f() {
            return true;
        }
        if Instant::now() >= deadline {
            return false;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

fn numsub(c: &mut redis::Connection, channel: &str) -> i64 {
    let (_, n): (String, i64) = redis::cmd("PUBSUB").arg("NUMSUB").arg(channel).query(c).expect("PUBSUB NUMSUB");
    n
}

fn numpat(c: &mut redis::Connection) -> i64 {
    redis::cmd("PUBSUB").arg("NUMPAT").query(c).expect("PUBSUB NUMPAT")
}

#[test]
fn redis_crate_pubsub_plain_pattern_and_unsubscribe() {
    on_both("the pub/sub comparison", |t| {
        let who = t.name;
        let client = t.client();
        let mut publisher = client.get_connection().expect("connect");
        let mut con = client.get_connection().expect("connect");
        let mut ps = con.as_pubsub();
        ps.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        ps.subscribe("news.tech").unwrap();
        ps.psubscribe("news.*").unwrap();
        assert_eq!(numsub(&mut publisher, "news.tech"), 1, "{who}");
        assert_eq!(numpat(&mut publisher), 1, "{who}");
        let channels: Vec<String> = redis::cmd("PUBSUB").arg("CHANNELS").query(&mut publisher).unwrap();
        assert_eq!(channels, ["news.tech"], "{who}");

        // One channel subscriber and one matching pattern: two receivers, the channel's message
        // first, then the pattern's.
        let n: i64 = publisher.publish("news.tech", "hello").unwrap();
        assert_eq!(n, 2, "{who}");
        let m = ps.get_message().unwrap();
        assert_eq!((m.get_channel_name(), m.get_payload::<String>().unwrap()), ("news.tech", "hello".into()), "{who}");
        assert_eq!(m.get_pattern::<Option<String>>().unwrap(), None, "{who}");
        let m = ps.get_message().unwrap();
        assert_eq!((m.get_channel_name(), m.get_payload::<String>().unwrap()), ("news.tech", "hello".into()), "{who}");
        assert_eq!(m.get_pattern::<Option<String>>().unwrap(), Some("news.*".into()), "{who}");

        // The pattern alone; binary payloads arrive whole.
        let n: i64 = publisher.publish("news.sport", b"\x00\xff\r\n".as_slice()).unwrap();
        assert_eq!(n, 1, "{who}");
        let m = ps.get_message().unwrap();
        assert_eq!(m.get_channel_name(), "news.sport", "{who}");
        assert_eq!(m.get_payload_bytes(), b"\x00\xff\r\n", "{who}");
        assert_eq!(m.get_pattern::<Option<String>>().unwrap(), Some("news.*".into()), "{who}");

        // Nobody listens to "weather": no receiver, and nothing arrives (the next message is the
        // marker published after it).
        let n: i64 = publisher.publish("weather", "rain").unwrap();
        assert_eq!(n, 0, "{who}");

        ps.unsubscribe("news.tech").unwrap();
        assert_eq!(numsub(&mut publisher, "news.tech"), 0, "{who}");
        let n: i64 = publisher.publish("news.tech", "after unsubscribe").unwrap();
        assert_eq!(n, 1, "{who}: the pattern still matches");
        let m = ps.get_message().unwrap();
        assert_eq!(m.get_payload::<String>().unwrap(), "after unsubscribe", "{who}: nothing from 'weather' came first");
        assert_eq!(m.get_pattern::<Option<String>>().unwrap(), Some("news.*".into()), "{who}");

        ps.punsubscribe("news.*").unwrap();
        assert_eq!(numpat(&mut publisher), 0, "{who}");
        let n: i64 = publisher.publish("news.tech", "nobody").unwrap();
        assert_eq!(n, 0, "{who}");

        // Leaving pub/sub mode (the crate unsubscribes from everything on drop): commands again.
        drop(ps);
        let _: () = publisher.set("k", "v").unwrap();
        let v: String = con.get("k").unwrap();
        assert_eq!(v, "v", "{who}");
    });
}

#[test]
fn resp2_subscribed_mode_refuses_commands_and_pings_as_an_array() {
    on_both("the RESP2 subscribed-mode comparison", |t| {
        let who = t.name;
        let mut s = t.raw();
        assert_eq!(s.cmd(&[b"SUBSCRIBE", b"ch"]), "*3\r\n$9\r\nsubscribe\r\n$2\r\nch\r\n:1\r\n", "{who}");
        assert_eq!(
            s.cmd(&[b"GET", b"k"]),
            "-ERR Can't execute 'get': only (P|S)SUBSCRIBE / (P|S)UNSUBSCRIBE / PING / QUIT / RESET are allowed in this context\r\n",
            "{who}"
        );
        // The name is the command's, in lower case, whatever the client sent.
        assert_eq!(
            s.call(b"SET k v\r\n"),
            "-ERR Can't execute 'set': only (P|S)SUBSCRIBE / (P|S)UNSUBSCRIBE / PING / QUIT / RESET are allowed in this context\r\n",
            "{who}"
        );
        assert_eq!(s.cmd(&[b"PING"]), "*2\r\n$4\r\npong\r\n$0\r\n\r\n", "{who}");
        assert_eq!(s.cmd(&[b"PING", b"hello"]), "*2\r\n$4\r\npong\r\n$5\r\nhello\r\n", "{who}");
        assert_eq!(s.cmd(&[b"PSUBSCRIBE", b"c*"]), "*3\r\n$10\r\npsubscribe\r\n$2\r\nc*\r\n:2\r\n", "{who}");
        assert_eq!(s.cmd(&[b"UNSUBSCRIBE"]), "*3\r\n$11\r\nunsubscribe\r\n$2\r\nch\r\n:1\r\n", "{who}");
        // Still subscribed to a pattern: still refused.
        assert!(s.cmd(&[b"GET", b"k"]).starts_with("-ERR Can't execute 'get'"), "{who}");
        assert_eq!(s.cmd(&[b"PUNSUBSCRIBE"]), "*3\r\n$12\r\npunsubscribe\r\n$2\r\nc*\r\n:0\r\n", "{who}");
        // Nothing left to leave: one confirmation with a nil channel.
        assert_eq!(s.cmd(&[b"UNSUBSCRIBE"]), "*3\r\n$11\r\nunsubscribe\r\n$-1\r\n:0\r\n", "{who}");
        assert_eq!(s.cmd(&[b"GET", b"k"]), "$-1\r\n", "{who}");
        assert_eq!(s.cmd(&[b"PING"]), "+PONG\r\n", "{who}");
    });
}

#[test]
fn resp3_push_arrives_before_the_reply_of_the_publish_that_sent_it() {
    on_both("the RESP3 push comparison", |t| {
        let who = t.name;
        let mut s = t.raw();
        assert!(s.cmd(&[b"HELLO", b"3"]).starts_with('%'), "{who}");
        assert_eq!(s.cmd(&[b"SUBSCRIBE", b"ch"]), ">3\r\n$9\r\nsubscribe\r\n$2\r\nch\r\n:1\r\n", "{who}");
        // Publishing to its own channel: the push first, then PUBLISH's `:1`.
        s.send(b"*3\r\n$7\r\nPUBLISH\r\n$2\r\nch\r\n$2\r\nhi\r\n");
        assert_eq!(s.reply_bytes(), b">3\r\n$7\r\nmessage\r\n$2\r\nch\r\n$2\r\nhi\r\n", "{who}");
        assert_eq!(s.reply_bytes(), b":1\r\n", "{who}");
        // RESP3 clients run any command while subscribed.
        assert_eq!(s.cmd(&[b"GET", b"k"]), "_\r\n", "{who}");
        assert_eq!(s.cmd(&[b"SET", b"k", b"v"]), "+OK\r\n", "{who}");
        assert_eq!(s.cmd(&[b"GET", b"k"]), "$1\r\nv\r\n", "{who}");
        assert_eq!(s.cmd(&[b"PING"]), "+PONG\r\n", "{who}");
        // With a matching pattern too: both pushes, channel first, before `:2`.
        assert_eq!(s.cmd(&[b"PSUBSCRIBE", b"c*"]), ">3\r\n$10\r\npsubscribe\r\n$2\r\nc*\r\n:2\r\n", "{who}");
        s.send(b"*3\r\n$7\r\nPUBLISH\r\n$2\r\nch\r\n$2\r\nhi\r\n");
        assert_eq!(s.reply_bytes(), b">3\r\n$7\r\nmessage\r\n$2\r\nch\r\n$2\r\nhi\r\n", "{who}");
        assert_eq!(s.reply_bytes(), b">4\r\n$8\r\npmessage\r\n$2\r\nc*\r\n$2\r\nch\r\n$2\r\nhi\r\n", "{who}");
        assert_eq!(s.reply_bytes(), b":2\r\n", "{who}");
        // Another client's message arrives as a push on its own.
        let mut p = t.raw();
        assert_eq!(p.cmd(&[b"PUBLISH", b"cat", b"x"]), ":1\r\n", "{who}");
        assert_eq!(s.reply_bytes(), b">4\r\n$8\r\npmessage\r\n$2\r\nc*\r\n$3\r\ncat\r\n$1\r\nx\r\n", "{who}");
    });
}

/// In RESP3, an UNSUBSCRIBE / PUNSUBSCRIBE / SUNSUBSCRIBE that finds nothing to leave confirms
/// with RESP3's null (`_`) for the channel, as Redis does.
#[test]
fn resp3_unsubscribe_from_nothing_confirms_with_a_resp3_null() {
    on_both("the RESP3 null-channel comparison", |t| {
        let who = t.name;
        let mut s = t.raw();
        assert!(s.cmd(&[b"HELLO", b"3"]).starts_with('%'), "{who}");
        assert_eq!(s.cmd(&[b"UNSUBSCRIBE"]), ">3\r\n$11\r\nunsubscribe\r\n_\r\n:0\r\n", "{who}");
        assert_eq!(s.cmd(&[b"PUNSUBSCRIBE"]), ">3\r\n$12\r\npunsubscribe\r\n_\r\n:0\r\n", "{who}");
        assert_eq!(s.cmd(&[b"SUNSUBSCRIBE"]), ">3\r\n$12\r\nsunsubscribe\r\n_\r\n:0\r\n", "{who}");
        // In RESP2 the same confirmation carries `$-1`.
        assert_eq!(s.cmd(&[b"HELLO", b"2"]).get(..4), Some("*14\r"), "{who}");
        assert_eq!(s.cmd(&[b"UNSUBSCRIBE"]), "*3\r\n$11\r\nunsubscribe\r\n$-1\r\n:0\r\n", "{who}");
    });
}

fn vm_kib(pid: u32, field: &str) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).expect("/proc/PID/status");
    let line = status.lines().find(|l| l.starts_with(field)).unwrap_or_else(|| panic!("{field} in {status}"));
    line.split_whitespace().nth(1).unwrap().parse().unwrap()
}

/// The exact bytes of message `i` of the slow-subscriber test: its number, then padding.
fn slow_test_message(i: u64, size: usize) -> (Vec<u8>, Vec<u8>) {
    let mut payload = format!("{i:010}:").into_bytes();
    payload.resize(size, b'.');
    let mut wire = format!("*3\r\n$7\r\nmessage\r\n$2\r\nch\r\n${size}\r\n").into_bytes();
    wire.extend_from_slice(&payload);
    wire.extend_from_slice(b"\r\n");
    (payload, wire)
}

#[test]
fn a_subscriber_that_never_reads_is_closed_and_the_others_get_everything() {
    on_both("the slow-subscriber comparison", |t| {
        let who = t.name;
        // 8,192 messages of 32 KiB: 256 MiB through the server, far more than the bound on its
        // memory asserted below, so that a server that kept the slow subscriber's messages fails.
        const MESSAGES: u64 = 8192;
        const SIZE: usize = 32 * 1024;
        // The fast subscriber stays at most this many messages behind (96 KiB, under the soft
        // limit): its lag is the test's doing, not the server's.
        const AHEAD: u64 = 3;
        let mut ctl = t.raw();
        assert_eq!(
            ctl.cmd(&[b"CONFIG", b"SET", b"client-output-buffer-limit", b"pubsub 1mb 256kb 1"]),
            "+OK\r\n",
            "{who}"
        );
        assert!(
            ctl.cmd(&[b"CONFIG", b"GET", b"client-output-buffer-limit"]).contains("pubsub 1048576 262144 1"),
            "{who}"
        );

        let mut slow = t.raw();
        assert_eq!(slow.cmd(&[b"CLIENT", b"SETNAME", b"slow"]), "+OK\r\n", "{who}");
        assert_eq!(slow.cmd(&[b"SUBSCRIBE", b"ch"]), "*3\r\n$9\r\nsubscribe\r\n$2\r\nch\r\n:1\r\n", "{who}");
        let mut fast = t.raw();
        assert_eq!(fast.cmd(&[b"CLIENT", b"SETNAME", b"fast"]), "+OK\r\n", "{who}");
        assert_eq!(fast.cmd(&[b"SUBSCRIBE", b"ch"]), "*3\r\n$9\r\nsubscribe\r\n$2\r\nch\r\n:1\r\n", "{who}");
        let rss_before = vm_kib(t.pid, "VmRSS:");

        // The fast subscriber checks every message's bytes and order, and reports each one read.
        let (got_tx, got_rx) = mpsc::channel::<u64>();
        let mut fast_sock: TcpStream = fast.s.try_clone().unwrap();
        let reader = std::thread::spawn(move || -> Result<u64, String> {
            let mut buf = vec![0u8; SIZE + 64];
            for i in 0..MESSAGES {
                let (_, want) = slow_test_message(i, SIZE);
                let got = &mut buf[..want.len()];
                fast_sock.read_exact(got).map_err(|e| format!("message {i}: {e}"))?;
                if got != &want[..] {
                    return Err(format!("message {i} differs: {:?}", String::from_utf8_lossy(&got[..64])));
                }
                let _ = got_tx.send(i + 1);
            }
            Ok(MESSAGES)
        });

        let mut publisher = TcpStream::connect(("127.0.0.1", t.port)).unwrap();
        publisher.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        let mut replies: Vec<i64> = Vec::with_capacity(MESSAGES as usize);
        let mut fast_read = 0;
        let mut reply = [0u8; 4];
        for i in 0..MESSAGES {
            while fast_read + AHEAD < i {
                fast_read = got_rx
                    .recv_timeout(Duration::from_secs(10))
                    .unwrap_or_else(|_| panic!("{who}: the fast subscriber stopped at {fast_read} of {i} published"));
            }
            let (payload, _) = slow_test_message(i, SIZE);
            let mut req = format!("*3\r\n$7\r\nPUBLISH\r\n$2\r\nch\r\n${SIZE}\r\n").into_bytes();
            req.extend_from_slice(&payload);
            req.extend_from_slice(b"\r\n");
            publisher.write_all(&req).unwrap();
            // Every PUBLISH is answered (`:2` or `:1`), however full the slow subscriber is.
            publisher.read_exact(&mut reply).unwrap_or_else(|e| panic!("{who}: PUBLISH {i} got no reply: {e}"));
            let n = match &reply {
                b":2\r\n" => 2,
                b":1\r\n" => 1,
                other => panic!("{who}: PUBLISH {i} answered {:?}", String::from_utf8_lossy(other)),
            };
            replies.push(n);
        }
        assert_eq!(reader.join().unwrap(), Ok(MESSAGES), "{who}: the fast subscriber got every message");

        // Two receivers until the slow one was closed, one after, never two again.
        let first_one = replies.iter().position(|&n| n == 1).unwrap_or_else(|| panic!("{who}: never closed"));
        assert!(first_one > 0, "{who}: the slow subscriber was there at first");
        assert!(replies[first_one..].iter().all(|&n| n == 1), "{who}: {replies:?}");
        assert!(
            (first_one as u64) < MESSAGES / 2,
            "{who}: closed only after {first_one} messages ({} MiB)",
            (first_one * SIZE) >> 20
        );

        // It is gone from the server: CLIENT LIST, PUBSUB NUMSUB, and its socket reaches EOF after
        // what the kernel's buffers held (less than everything).
        assert!(
            eventually(Duration::from_secs(10), || !ctl.cmd(&[b"CLIENT", b"LIST"]).contains(" name=slow ")),
            "{who}: the slow subscriber is still in CLIENT LIST"
        );
        assert!(ctl.cmd(&[b"CLIENT", b"LIST"]).contains(" name=fast "), "{who}");
        assert_eq!(ctl.cmd(&[b"PUBSUB", b"NUMSUB", b"ch"]), "*2\r\n$2\r\nch\r\n:1\r\n", "{who}");
        slow.s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        let mut received = 0usize;
        let mut chunk = vec![0u8; 1 << 20];
        loop {
            match slow.s.read(&mut chunk) {
                Ok(0) => break,
                Ok(n) => received += n,
                Err(e) => panic!("{who}: the slow subscriber's socket did not reach EOF ({received} bytes read): {e}"),
            }
        }
        assert!((received as u64) < MESSAGES * SIZE as u64 / 2, "{who}: the slow subscriber got {received} bytes");

        // The server never held the messages it could not send: its peak RSS stayed far below the
        // 256 MiB published.
        let peak = vm_kib(t.pid, "VmHWM:");
        let rss = vm_kib(t.pid, "VmRSS:");
        assert!(peak < 128 * 1024, "{who}: peak RSS {peak} KiB (before: {rss_before} KiB, now {rss} KiB)");
        eprintln!(
            "{who}: slow subscriber closed after {first_one} messages, {received} bytes reached it; RSS {rss_before} -> {rss} KiB, peak {peak} KiB"
        );
    });
}

#[test]
fn a_subscriber_over_the_soft_limit_is_closed_after_its_seconds() {
    on_both("the soft-limit comparison", |t| {
        let who = t.name;
        // No hard limit: only staying over 64 KiB for more than a second closes the client.
        const SIZE: usize = 1024;
        const AHEAD: u64 = 8;
        let mut ctl = t.raw();
        assert_eq!(
            ctl.cmd(&[b"CONFIG", b"SET", b"client-output-buffer-limit", b"pubsub 0 64kb 1"]),
            "+OK\r\n",
            "{who}"
        );
        let mut slow = t.raw();
        assert_eq!(slow.cmd(&[b"SUBSCRIBE", b"ch"]), "*3\r\n$9\r\nsubscribe\r\n$2\r\nch\r\n:1\r\n", "{who}");
        let fast = t.raw();
        let mut fast_sock = fast.s.try_clone().unwrap();
        fast_sock.write_all(b"SUBSCRIBE ch\r\n").unwrap();
        let mut confirmation = [0u8; 31];
        fast_sock.read_exact(&mut confirmation).unwrap();
        assert_eq!(&confirmation, b"*3\r\n$9\r\nsubscribe\r\n$2\r\nch\r\n:1\r\n", "{who}");

        // Publish (the fast subscriber at most AHEAD messages behind) until a PUBLISH reaches one
        // receiver only: bounded by a count and a deadline, never by a sleep.
        let (got_tx, got_rx) = mpsc::channel::<u64>();
        let reader = std::thread::spawn(move || -> Result<u64, String> {
            let mut buf = vec![0u8; SIZE + 64];
            let mut i = 0;
            loop {
                let (_, want) = slow_test_message(i, SIZE);
                let got = &mut buf[..want.len()];
                match fast_sock.read_exact(got) {
                    // The test shut the socket down once it had read everything.
                    Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => return Ok(i),
                    r => r.map_err(|e| format!("message {i}: {e}"))?,
                }
                if got != &want[..] {
                    return Err(format!("message {i} differs"));
                }
                i += 1;
                let _ = got_tx.send(i);
            }
        });
        let mut publisher = t.raw();
        let deadline = Instant::now() + Duration::from_secs(60);
        let (mut i, mut fast_read, mut twos) = (0u64, 0u64, 0u64);
        loop {
            assert!(Instant::now() < deadline && i < 2_000_000, "{who}: still two receivers after {i} messages");
            while fast_read + AHEAD < i {
                fast_read = got_rx.recv_timeout(Duration::from_secs(10)).expect("the fast subscriber stopped");
            }
            let (payload, _) = slow_test_message(i, SIZE);
            let n = publisher.cmd(&[b"PUBLISH", b"ch", &payload]);
            i += 1;
            match n.as_str() {
                ":2\r\n" => twos += 1,
                ":1\r\n" => break,
                other => panic!("{who}: PUBLISH answered {other:?}"),
            }
        }
        assert_eq!(twos, i - 1, "{who}");
        // Well past the soft limit before it was closed (the socket's buffers hold much more).
        assert!(twos * SIZE as u64 > 64 * 1024, "{who}: closed after {twos} messages");
        // Messages after the close still reach the fast subscriber; it got every one.
        for _ in 0..10 {
            let (payload, _) = slow_test_message(i, SIZE);
            assert_eq!(publisher.cmd(&[b"PUBLISH", b"ch", &payload]), ":1\r\n", "{who}");
            i += 1;
        }
        while fast_read < i {
            fast_read = got_rx.recv_timeout(Duration::from_secs(10)).expect("the fast subscriber stopped");
        }
        assert_eq!(ctl.cmd(&[b"PUBSUB", b"NUMSUB", b"ch"]), "*2\r\n$2\r\nch\r\n:1\r\n", "{who}");
        fast.s.shutdown(std::net::Shutdown::Both).unwrap();
        assert_eq!(reader.join().unwrap(), Ok(i), "{who}: the fast subscriber got every message");
        assert!(slow.closed(), "{who}: the slow subscriber's socket did not reach EOF");
        eprintln!("{who}: soft limit closed the slow subscriber after {twos} messages of {SIZE} bytes");
    });
}
