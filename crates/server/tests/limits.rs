//! Client limits through the real binary, as Redis enforces them: `client-output-buffer-limit`
//! (normal class), output that stalls a non-reading client instead of growing the server,
//! `client-query-buffer-limit`, `proto-max-bulk-len`, `timeout`, and the query buffer given back by
//! idle clients. The expected behaviour is redis-server 7.0.15's (its unit/obuf-limits, unit/querybuf
//! and unit/limits cases, replayed by hand against it).

mod common;
use common::{Latch, Raw};
use std::io::Read;
use std::time::{Duration, Instant};

fn client_list(r: &mut Raw) -> String {
    r.cmd(&[b"CLIENT", b"LIST"])
}

/// The CLIENT LIST line of the client named `name`.
fn line_of(r: &mut Raw, name: &str) -> Option<String> {
    client_list(r).lines().find(|l| l.contains(&format!(" name={name} "))).map(str::to_string)
}

fn field(line: &str, key: &str) -> u64 {
    let at = line.find(&format!(" {key}=")).unwrap_or_else(|| panic!("{key} in {line}")) + key.len() + 2;
    line[at..].split(' ').next().unwrap().parse().unwrap()
}

/// Waits (bounded) until `f` holds.
fn eventually(limit: Duration, mut f: impl FnMut() -> bool) -> bool {
    let start = Instant::now();
    while start.elapsed() < limit {
        if f() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    false
}

/// A server with `maxmemory-clients` at `limit` (`CONFIG SET`'s form), and a control connection
/// that is never evicted itself (CLIENT NO-EVICT on).
fn under_client_limit(limit: &str) -> (Latch, Raw) {
    let l = Latch::start(&[]);
    let mut r = l.raw();
    assert_eq!(r.cmd(&[b"CLIENT", b"NO-EVICT", b"on"]), "+OK\r\n");
    assert_eq!(r.cmd(&[b"CONFIG", b"SET", b"maxmemory-clients", limit.as_bytes()]), "+OK\r\n");
    (l, r)
}

/// The number INFO's `section` shows for `field`.
fn info_number(r: &mut Raw, section: &str, field: &str) -> u64 {
    let info = r.cmd(&[b"INFO", section.as_bytes()]);
    let n = info.lines().find_map(|l| l.strip_prefix(field)?.strip_prefix(':')).unwrap_or_else(|| panic!("{info}"));
    n.parse().unwrap()
}

/// INFO's `evicted_clients`.
fn evicted_clients(r: &mut Raw) -> u64 {
    info_number(r, "stats", "evicted_clients")
}

/// Reads what the server sent before closing; `None` if it did not close within the limit.
fn until_closed(r: &mut Raw) -> Option<Vec<u8>> {
    r.s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    let mut got = Vec::new();
    let mut chunk = [0u8; 65536];
    loop {
        match r.s.read(&mut chunk) {
            Ok(0) => return Some(got),
            Ok(n) => got.extend_from_slice(&chunk[..n]),
            Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => return Some(got),
            Err(_) => return None,
        }
    }
}

#[test]
fn output_buffer_hard_limit_closes_without_a_reply() {
    let l = Latch::start(&[]);
    let mut admin = l.raw();
    assert_eq!(admin.cmd(&[b"CONFIG", b"SET", b"client-output-buffer-limit", b"normal 100000 0 0"]), "+OK\r\n");
    let item = vec![b'x'; 1000];
    for _ in 0..150 {
        admin.cmd(&[b"LPUSH", b"mylist", &item]);
    }
    // One reply over the limit: the client is closed, and nothing of the reply is sent.
    let mut c = l.raw();
    assert_eq!(c.cmd(&[b"CLIENT", b"SETNAME", b"mybiglist"]), "+OK\r\n");
    c.send(b"*4\r\n$6\r\nLRANGE\r\n$6\r\nmylist\r\n$1\r\n0\r\n$2\r\n-1\r\n");
    assert_eq!(until_closed(&mut c), Some(Vec::new()));
    assert_eq!(line_of(&mut admin, "mybiglist"), None);

    // A pipeline whose replies add up over the limit: none of them is sent.
    admin.cmd(&[b"SET", b"bigkey", &[b'x'; 10000]]);
    let mut p = l.raw();
    assert_eq!(p.cmd(&[b"CLIENT", b"SETNAME", b"multicommands"]), "+OK\r\n");
    let mut buf = Vec::new();
    for i in 0..15 {
        buf.extend_from_slice(format!("set {i} {i}\r\nget {i}\r\ndel {i}\r\nget bigkey\r\n").as_bytes());
    }
    p.send(&buf);
    assert_eq!(until_closed(&mut p), Some(Vec::new()));

    // A transaction runs to its end even though its reply closes the client.
    let mut t = l.raw();
    assert_eq!(t.cmd(&[b"SET", b"k1", b"v1"]), "+OK\r\n");
    assert_eq!(t.cmd(&[b"MULTI"]), "+OK\r\n");
    assert_eq!(t.cmd(&[b"SET", b"k2", b"v2"]), "+QUEUED\r\n");
    assert_eq!(t.cmd(&[b"LRANGE", b"mylist", b"0", b"-1"]), "+QUEUED\r\n");
    assert_eq!(t.cmd(&[b"SET", b"k3", b"v3"]), "+QUEUED\r\n");
    assert_eq!(t.cmd(&[b"DEL", b"k1"]), "+QUEUED\r\n");
    t.send(b"*1\r\n$4\r\nEXEC\r\n");
    assert_eq!(until_closed(&mut t), Some(Vec::new()));
    assert_eq!(admin.cmd(&[b"MGET", b"k1", b"k2", b"k3"]), "*3\r\n$-1\r\n$2\r\nv2\r\n$2\r\nv3\r\n");

    // Under the limit, replies flow as usual.
    assert_eq!(admin.cmd(&[b"CONFIG", b"SET", b"client-output-buffer-limit", b"normal 0 0 0"]), "+OK\r\n");
    let mut ok = l.raw();
    let reply = ok.cmd_bytes(&[b"LRANGE", b"mylist", b"0", b"-1"]);
    assert!(reply.starts_with(b"*150\r\n"));
}

/// A client that pipelines large replies and never reads stalls on its own socket: the server keeps
/// serving others, and CLIENT LIST's `omem` shows the output waiting for it.
#[test]
fn unread_replies_wait_in_the_socket_not_the_server() {
    let l = Latch::start(&[]);
    let mut admin = l.raw();
    admin.cmd(&[b"SET", b"big", &vec![b'x'; 1 << 20]]);
    let mut lazy = l.raw();
    assert_eq!(lazy.cmd(&[b"CLIENT", b"SETNAME", b"lazy"]), "+OK\r\n");
    let get = b"*2\r\n$3\r\nGET\r\n$3\r\nbig\r\n".repeat(64);
    lazy.s.set_nonblocking(true).unwrap();
    let mut sent = 0;
    let start = Instant::now();
    // Keep pipelining until the server stops taking requests (it stopped reading them), bounded.
    while start.elapsed() < Duration::from_secs(3) {
        match std::io::Write::write(&mut lazy.s, &get) {
            Ok(n) => sent += n,
            Err(_) => break,
        }
    }
    assert!(sent > 0);
    let waiting = eventually(Duration::from_secs(5), || {
        line_of(&mut admin, "lazy").is_some_and(|l| field(&l, "omem") > 0 && field(&l, "tot-mem") > field(&l, "omem"))
    });
    assert!(waiting, "{:?}", line_of(&mut admin, "lazy"));
    // The server is not stuck behind it.
    assert_eq!(admin.cmd(&[b"PING"]), "+PONG\r\n");
    // Far fewer replies are buffered than were requested: 64 MB of GET replies per 1.5 KB sent.
    let omem = field(&line_of(&mut admin, "lazy").unwrap(), "omem");
    assert!(omem <= 4 << 20, "omem {omem}");
}

/// A large reply that waits for a client that does not read is held once, in the output that
/// CLIENT LIST's `omem` counts and `maxmemory-clients` weighs: its frame (here MGET's copy of the
/// value) is not kept beside it until the write is done.
#[test]
fn a_waiting_reply_is_held_once() {
    let l = Latch::start(&[]);
    let mut admin = l.raw();
    let size: u64 = 16 << 20;
    admin.cmd(&[b"SET", b"big", &vec![b'x'; size as usize]]);
    let used = |r: &mut Raw| info_number(r, "memory", "used_memory");
    let before = used(&mut admin);
    let mut lazy = l.raw();
    assert_eq!(lazy.cmd(&[b"CLIENT", b"SETNAME", b"lazy"]), "+OK\r\n");
    std::io::Write::write_all(&mut lazy.s, b"*3\r\n$4\r\nMGET\r\n$3\r\nbig\r\n$5\r\nother\r\n").unwrap();
    // 16 MiB is more than the two sockets take: the rest waits in the server.
    let waiting =
        eventually(Duration::from_secs(5), || line_of(&mut admin, "lazy").is_some_and(|l| field(&l, "omem") > 0));
    let line = line_of(&mut admin, "lazy").unwrap();
    assert!(waiting, "{line}");
    let grown = used(&mut admin).saturating_sub(before);
    assert!(grown < size * 3 / 2, "used_memory grew by {grown} for one {size}-byte reply waiting");
    assert!(field(&line, "tot-mem") > size / 2, "{line}");
}

/// A client that sends a long pipeline whole before it reads any reply: while the server waits to
/// write replies, it reads what the client sends into the query buffer (as Redis keeps reading),
/// so neither side waits on the other once the sockets' buffers are full.
#[test]
fn a_pipeline_sent_whole_before_reading_completes() {
    let l = Latch::start(&[]);
    let mut c = l.raw();
    let value = vec![b'v'; 8192];
    assert_eq!(c.cmd(&[b"SET", b"k", &value]), "+OK\r\n");
    // 24 MB each way: far past what the sockets hold.
    let n = 3000;
    let mut one = format!("*3\r\n$6\r\nGETSET\r\n$1\r\nk\r\n${}\r\n", value.len()).into_bytes();
    one.extend_from_slice(&value);
    one.extend_from_slice(b"\r\n");
    c.s.set_write_timeout(Some(Duration::from_secs(30))).unwrap();
    for _ in 0..n {
        std::io::Write::write_all(&mut c.s, &one).expect("the server keeps reading the pipeline");
    }
    let reply = format!("${}\r\n", value.len()).len() + value.len() + 2;
    let mut left = n * reply;
    let mut buf = vec![0; 1 << 16];
    while left > 0 {
        let got = c.s.read(&mut buf).expect("replies");
        assert!(got > 0, "closed with {left} bytes of replies left");
        left = left.saturating_sub(got);
    }
    assert_eq!(c.cmd(&[b"PING"]), "+PONG\r\n");
}

#[test]
fn query_buffer_and_bulk_limits() {
    let l = Latch::start(&[]);
    let mut admin = l.raw();
    // proto-max-bulk-len: a longer bulk is refused before it is read, with Redis's error.
    assert_eq!(admin.cmd(&[b"CONFIG", b"SET", b"proto-max-bulk-len", b"1048576"]), "+OK\r\n");
    let mut c = l.raw();
    c.send(b"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$1048577\r\n");
    assert_eq!(until_closed(&mut c), Some(b"-ERR Protocol error: invalid bulk length\r\n".to_vec()));
    assert_eq!(admin.cmd(&[b"CONFIG", b"SET", b"proto-max-bulk-len", b"536870912"]), "+OK\r\n");
    // client-query-buffer-limit: a client whose unfinished request outgrows it is closed.
    assert_eq!(admin.cmd(&[b"CONFIG", b"SET", b"client-query-buffer-limit", b"1048576"]), "+OK\r\n");
    let mut q = l.raw();
    q.send(b"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$4000000\r\n");
    let chunk = vec![b'x'; 64 * 1024];
    for _ in 0..40 {
        if std::io::Write::write_all(&mut q.s, &chunk).is_err() {
            break;
        }
    }
    assert!(until_closed(&mut q).is_some());
    assert_eq!(admin.cmd(&[b"EXISTS", b"k"]), ":0\r\n");
}

/// `timeout`: an idle client is closed; a blocked one is not. An idle client's query buffer is
/// given back after 2 seconds (Redis's unit/querybuf).
#[test]
fn idle_clients_are_closed_and_trimmed() {
    let l = Latch::start(&[]);
    let mut admin = l.raw();
    let mut idle = l.raw();
    assert_eq!(idle.cmd(&[b"CLIENT", b"SETNAME", b"idle"]), "+OK\r\n");
    let qbuf = |r: &mut Raw| line_of(r, "idle").map(|l| field(&l, "qbuf") + field(&l, "qbuf-free"));
    let first = qbuf(&mut admin).unwrap();
    assert!((16384..32768).contains(&first), "{first}");
    assert!(eventually(Duration::from_secs(6), || qbuf(&mut admin) == Some(0)));
    // It still works: the buffer comes back with the next request.
    assert_eq!(idle.cmd(&[b"PING"]), "+PONG\r\n");

    let mut blocked = l.raw();
    assert_eq!(blocked.cmd(&[b"CLIENT", b"SETNAME", b"blocked"]), "+OK\r\n");
    blocked.send(b"*3\r\n$5\r\nBLPOP\r\n$6\r\nnolist\r\n$1\r\n0\r\n");
    assert!(
        eventually(Duration::from_secs(2), || line_of(&mut admin, "blocked").is_some_and(|l| l.contains("flags=b")))
    );
    assert_eq!(admin.cmd(&[b"CONFIG", b"SET", b"timeout", b"1"]), "+OK\r\n");
    assert_eq!(until_closed(&mut idle), Some(Vec::new()));
    // The admin connection went idle too; a fresh one sees the blocked client still there.
    let mut fresh = l.raw();
    assert!(line_of(&mut fresh, "blocked").is_some());
    assert_eq!(fresh.cmd(&[b"CONFIG", b"SET", b"timeout", b"0"]), "+OK\r\n");
}

/// Replies built straight into their wire bytes (SRANDMEMBER/HRANDFIELD/ZRANDMEMBER with a count,
/// KEYS, LRANGE, SMEMBERS, HGETALL...) read back as Redis's: every element, the right shapes.
#[test]
fn large_replies_are_whole() {
    let l = Latch::start(&[]);
    let mut c = l.conn();
    let _: () = redis::cmd("SADD").arg("s").arg(&["a", "b", "c"]).query(&mut c).unwrap();
    let picks: Vec<String> = redis::cmd("SRANDMEMBER").arg("s").arg(-200_000).query(&mut c).unwrap();
    assert_eq!(picks.len(), 200_000);
    assert!(picks.iter().all(|m| ["a", "b", "c"].contains(&m.as_str())));
    for m in ["a", "b", "c"] {
        // 200k uniform picks among 3: each member far from absent.
        assert!(picks.iter().filter(|p| *p == m).count() > 50_000, "{m}");
    }
    let _: () = redis::cmd("HSET").arg("h").arg(&["f1", "v1", "f2", "v2"]).query(&mut c).unwrap();
    let flat: Vec<String> = redis::cmd("HRANDFIELD").arg("h").arg(-1000).arg("WITHVALUES").query(&mut c).unwrap();
    assert_eq!(flat.len(), 2000);
    assert!(flat.chunks(2).all(|p| (p[0] == "f1" && p[1] == "v1") || (p[0] == "f2" && p[1] == "v2")));
    let _: () = redis::cmd("ZADD").arg("z").arg(&["1.5", "m"]).query(&mut c).unwrap();
    let scored: Vec<String> = redis::cmd("ZRANDMEMBER").arg("z").arg(-3).arg("WITHSCORES").query(&mut c).unwrap();
    assert_eq!(scored, ["m", "1.5", "m", "1.5", "m", "1.5"]);
    let _: () = redis::cmd("EVAL")
        .arg("for i = 1, 20000 do redis.call('set', 'k:' .. i, i) redis.call('rpush', 'list', i) end")
        .arg(0)
        .query(&mut c)
        .unwrap();
    let keys: Vec<String> = redis::cmd("KEYS").arg("k:*").query(&mut c).unwrap();
    assert_eq!(keys.len(), 20_000);
    let range: Vec<i64> = redis::cmd("LRANGE").arg("list").arg(0).arg(-1).query(&mut c).unwrap();
    assert_eq!(range, (1..=20_000).collect::<Vec<_>>());
    // Inside a script, the same replies are Lua tables.
    let n: i64 = redis::cmd("EVAL").arg("return #redis.call('keys', 'k:*')").arg(0).query(&mut c).unwrap();
    assert_eq!(n, 20_000);
    // And inside a transaction.
    let _: () = redis::cmd("MULTI").query(&mut c).unwrap();
    let _: () = redis::cmd("LRANGE").arg("list").arg(0).arg(2).query(&mut c).unwrap();
    let _: () = redis::cmd("HGETALL").arg("h").query(&mut c).unwrap();
    let (r, h): (Vec<i64>, std::collections::HashMap<String, String>) = redis::cmd("EXEC").query(&mut c).unwrap();
    assert_eq!(r, [1, 2, 3]);
    assert_eq!(h.len(), 2);
}

/// A reply that would pass the hard output limit is given up before it is built, as Redis stops it
/// mid-run (its unit/obuf-limits "HRANDFIELD with huge count" and "KEYS stopped mid-run").
#[test]
fn huge_replies_stop_at_the_output_limit() {
    let l = Latch::start(&[]);
    let mut admin = l.raw();
    assert_eq!(admin.cmd(&[b"CONFIG", b"SET", b"client-output-buffer-limit", b"normal 1000000 0 0"]), "+OK\r\n");
    admin.cmd(&[b"HSET", b"myhash", b"a", b"b"]);
    let mut c = l.raw();
    // 999,999,999 picks would be 7 GB: the client is closed without a reply, and quickly (the
    // sizing stops once over the limit).
    let start = Instant::now();
    c.send(b"*3\r\n$10\r\nHRANDFIELD\r\n$6\r\nmyhash\r\n$10\r\n-999999999\r\n");
    assert_eq!(until_closed(&mut c), Some(Vec::new()));
    assert!(start.elapsed() < Duration::from_secs(5));
    let prefix = vec![b'k'; 100];
    for i in 0..1500 {
        let mut k = prefix.clone();
        k.extend_from_slice(i.to_string().as_bytes());
        admin.cmd(&[b"SET", &k, b"v"]);
    }
    assert_eq!(admin.cmd(&[b"CONFIG", b"SET", b"client-output-buffer-limit", b"normal 100000 0 0"]), "+OK\r\n");
    let mut k = l.raw();
    k.send(b"*2\r\n$4\r\nKEYS\r\n$1\r\n*\r\n");
    assert_eq!(until_closed(&mut k), Some(Vec::new()));
    assert_eq!(admin.cmd(&[b"PING"]), "+PONG\r\n");
}

/// A MONITOR client that does not read is closed once the lines waiting for it pass the hard limit
/// (a monitor is a normal client); without it, a kill still ends a client stuck writing.
#[test]
fn monitor_that_never_reads_is_closed_at_the_limit() {
    let l = Latch::start(&[]);
    let mut admin = l.raw();
    assert_eq!(admin.cmd(&[b"CONFIG", b"SET", b"client-output-buffer-limit", b"normal 100000 0 0"]), "+OK\r\n");
    let mut m = l.raw();
    assert_eq!(m.cmd(&[b"CLIENT", b"SETNAME", b"watcher"]), "+OK\r\n");
    assert_eq!(m.cmd(&[b"MONITOR"]), "+OK\r\n");
    // 40 MB of lines: more than the kernel's socket buffers hold for the idle reader.
    let value = vec![b'v'; 20_000];
    for i in 0..2000 {
        admin.cmd(&[b"SET", format!("k{i}").as_bytes(), &value]);
    }
    assert!(eventually(Duration::from_secs(5), || line_of(&mut admin, "watcher").is_none()));
    assert_eq!(admin.cmd(&[b"PING"]), "+PONG\r\n");
}

/// The reply buffer follows Redis's cron (clientsCronResizeOutputBuffer): an idle client's shrinks to
/// 1 KiB, one that keeps getting large replies grows back to 16 KiB; CLIENT LIST's `rbs` shows it.
#[test]
fn reply_buffers_shrink_when_idle_and_grow_under_large_replies() {
    let l = Latch::start(&["--enable-debug-command", "yes"]);
    let mut r = l.raw();
    assert_eq!(r.cmd(&[b"DEBUG", b"REPLYBUFFER", b"PEAK-RESET-TIME", b"100"]), "+OK\r\n");
    let mut tc = l.raw();
    assert_eq!(tc.cmd(&[b"CLIENT", b"SETNAME", b"tc"]), "+OK\r\n");
    let rbs = |r: &mut Raw| -> usize {
        let list = r.cmd(&[b"CLIENT", b"LIST"]);
        let line = list.lines().find(|l| l.contains("name=tc ")).expect("tc listed").to_string();
        line.split(' ').find_map(|f| f.strip_prefix("rbs=")).expect("rbs").parse().unwrap()
    };
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while rbs(&mut r) != 1024 {
        assert!(std::time::Instant::now() < deadline, "the idle client's reply buffer did not shrink");
        std::thread::sleep(Duration::from_millis(50));
    }
    let big = vec![b'x'; 32768];
    assert_eq!(r.cmd(&[b"SET", b"bigval", &big]), "+OK\r\n");
    assert_eq!(r.cmd(&[b"DEBUG", b"REPLYBUFFER", b"PEAK-RESET-TIME", b"never"]), "+OK\r\n");
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    loop {
        assert_eq!(tc.cmd_bytes(&[b"GET", b"bigval"]).len(), 32768 + 10);
        let n = rbs(&mut r);
        if (16384..32768).contains(&n) {
            break;
        }
        assert!(std::time::Instant::now() < deadline, "the busy client's reply buffer is {n}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// maxmemory-clients (Redis's client eviction): a client whose buffers push all clients over the
/// limit is closed, unless it set CLIENT NO-EVICT; INFO counts it in evicted_clients.
#[test]
fn maxmemory_clients_closes_the_largest_client() {
    let (l, mut r) = under_client_limit("3000000");
    // Within the limit: served.
    let mut ok = l.raw();
    let big = vec![b'v'; 1_000_000];
    assert_eq!(ok.cmd(&[b"SET", b"k", &big]), "+OK\r\n");
    // A 3 MB argument that never completes: its query buffer alone is over the limit.
    let mut hog = l.raw();
    // The server may close it before it has sent everything (the write then fails), and closes it
    // with unread bytes pending (a reset, not an orderly end): both are the close we look for.
    let _ = std::io::Write::write_all(&mut hog.s, b"*1\r\n$3000000\r\n");
    let _ = std::io::Write::write_all(&mut hog.s, &vec![b'v'; 1_000_000]);
    let mut buf = [0u8; 64];
    let gone = match hog.s.read(&mut buf) {
        Ok(0) => true,
        Err(e) => matches!(e.kind(), std::io::ErrorKind::ConnectionReset | std::io::ErrorKind::BrokenPipe),
        Ok(_) => false,
    };
    assert!(gone, "the client over maxmemory-clients was not closed");
    assert_eq!(evicted_clients(&mut r), 1);
    // The protected client is never a candidate, even alone over the limit: its 3 MB request
    // completes and gets its reply (an unknown command's error).
    r.send(b"*1\r\n$3000000\r\n");
    r.send(&vec![b'v'; 1_000_000]);
    std::thread::sleep(Duration::from_millis(100));
    r.send(&vec![b'v'; 2_000_000]);
    r.send(b"\r\n");
    assert!(String::from_utf8_lossy(&r.reply_bytes()).starts_with("-ERR unknown command 'vvvv"));
    assert_eq!(r.cmd(&[b"PING"]), "+PONG\r\n");
}

/// INFO inside a transaction that locks a key's shard once waited forever on that very shard,
/// and every client using the shard hung behind it. Through the real server: it answers, and the
/// shard stays usable.
#[test]
fn info_inside_exec_answers_and_frees_the_shard() {
    let l = Latch::start(&[]);
    let mut a = l.raw();
    assert_eq!(a.call(b"MULTI\r\nSET k v\r\nINFO memory\r\n"), "+OK\r\n");
    assert_eq!(String::from_utf8_lossy(&a.reply_bytes()), "+QUEUED\r\n");
    assert_eq!(String::from_utf8_lossy(&a.reply_bytes()), "+QUEUED\r\n");
    let exec = a.cmd(&[b"EXEC"]);
    assert!(exec.starts_with("*2\r\n+OK\r\n$") && exec.contains("used_memory:"), "{exec}");
    let mut b = l.raw();
    assert_eq!(b.cmd(&[b"GET", b"k"]), "$1\r\nv\r\n");
}

/// maxmemory-clients weighs a client as others write to it, not only when its own connection
/// looks: the target of a tracking redirection that never reads is evicted while another client's
/// writes fill it (Redis's unit/client-eviction "client evicted due to tracking redirection").
#[test]
fn maxmemory_clients_evicts_a_tracking_redirections_silent_target() {
    let (l, mut r) = under_client_limit("3000000");
    let mut target = l.raw();
    assert_eq!(target.cmd(&[b"CLIENT", b"SETNAME", b"redirected"]), "+OK\r\n");
    let id = target.cmd(&[b"CLIENT", b"ID"]);
    let id = id.trim_start_matches(':').trim_end();
    target.send(b"*2\r\n$9\r\nSUBSCRIBE\r\n$20\r\n__redis__:invalidate\r\n");
    let mut writer = l.raw();
    assert_eq!(writer.cmd(&[b"CLIENT", b"NO-EVICT", b"on"]), "+OK\r\n");
    assert_eq!(writer.cmd(&[b"CLIENT", b"TRACKING", b"on", b"REDIRECT", id.as_bytes(), b"BCAST"]), "+OK\r\n");
    // Each write of the 200 KB key sends the target an invalidation naming it.
    let script = format!("redis.call('incr', '{}')", "k".repeat(200 * 1024));
    let sha = writer.cmd(&[b"SCRIPT", b"LOAD", script.as_bytes()]);
    let sha = sha.lines().nth(1).unwrap().to_string();
    let mut writes = 0;
    while line_of(&mut r, "redirected").is_some() {
        assert!(writes < 1000, "the silent target was never evicted");
        writer.cmd(&[b"EVALSHA", sha.as_bytes(), b"0"]);
        writes += 1;
    }
    assert_eq!(evicted_clients(&mut r), 1);
}

/// A client's BCAST prefixes count in its memory: one that registers prefixes without end is
/// evicted (Redis's "client evicted due to client tracking prefixes").
#[test]
fn maxmemory_clients_counts_tracking_prefixes() {
    let (l, _control) = under_client_limit("200000");
    let mut rr = l.raw();
    let mut added = 0;
    loop {
        let prefix = format!("{added:012}");
        rr.send(&common::encode(&[&b"CLIENT"[..], b"TRACKING", b"on", b"PREFIX", prefix.as_bytes(), b"BCAST"]));
        let mut buf = [0u8; 64];
        match rr.s.read(&mut buf) {
            Ok(n) if n > 0 => assert_eq!(&buf[..n], b"+OK\r\n"),
            _ => break,
        }
        added += 1;
        // About 2,400 prefixes of 12 bytes reach 200 KB.
        assert!(added < 10_000, "not evicted after {added} prefixes");
    }
    assert!(added > 100, "evicted after {added} prefixes");
}

/// A large argument's query buffer is made as large as the argument, not twice that: 6 MB of
/// a request still arriving keep a client under a 10 MB `maxmemory-clients` (Redis's "avoid
/// client eviction when client is freed by output buffer limit" fills one so).
#[test]
fn a_large_argument_takes_its_own_size_of_query_buffer() {
    let (l, mut r) = under_client_limit("10mb");
    let mut big = l.raw();
    assert_eq!(big.cmd(&[b"CLIENT", b"SETNAME", b"qbuf-client"]), "+OK\r\n");
    let size = 6 << 20;
    big.send(format!("*1\r\n${size}\r\n").as_bytes());
    big.send(&vec![b'v'; size]);
    let arrived = eventually(Duration::from_secs(10), || {
        line_of(&mut r, "qbuf-client").is_some_and(|line| field(&line, "qbuf") >= size as u64)
    });
    let line = line_of(&mut r, "qbuf-client").expect("the client was evicted");
    assert!(arrived, "{line}");
    let (qbuf, free, tot) = (field(&line, "qbuf"), field(&line, "qbuf-free"), field(&line, "tot-mem"));
    assert!(free < 1 << 20 && tot < 7 << 20, "qbuf {qbuf}, qbuf-free {free}, tot-mem {tot}");
}

/// A client that asks for large replies and never reads them is evicted once it puts all clients
/// over `maxmemory-clients`, before CLIENT LIST could show it over the limit (Redis's "client
/// evicted due to output buf"). Latch runs no more of its requests while its output waits, so
/// what grows is its query buffer, which counts as each read arrives.
#[test]
fn maxmemory_clients_evicts_a_client_that_never_reads() {
    let (l, mut r) = under_client_limit("3000000");
    assert_eq!(r.cmd(&[b"SETRANGE", b"k", b"200000", b"v"]), ":200001\r\n");
    let mut reader = l.raw();
    assert_eq!(reader.cmd(&[b"CLIENT", b"SETNAME", b"test_client"]), "+OK\r\n");
    let gets = common::encode(&[&b"GET"[..], b"k"]).repeat(1000);
    let mut sent = 0;
    while let Some(line) = line_of(&mut r, "test_client") {
        assert!(field(&line, "tot-mem") < 3_000_000, "over the limit and still here: {line}");
        assert!(sent < 400, "never evicted: {line}");
        if std::io::Write::write_all(&mut reader.s, &gets).is_err() {
            break;
        }
        sent += 1;
    }
    assert!(eventually(Duration::from_secs(5), || line_of(&mut r, "test_client").is_none()));
    assert_eq!(evicted_clients(&mut r), 1);
}

/// Lowering `maxmemory-clients` evicts at once, the largest clients first, until all are under
/// it (Redis's "decrease maxmemory-clients causes client eviction" and "evict clients only until
/// below limit"): idle clients holding large arguments half-sent are not left to their own next
/// read.
#[test]
fn a_lowered_maxmemory_clients_evicts_the_largest_until_under_it() {
    let l = Latch::start(&[]);
    let mut r = l.raw();
    assert_eq!(r.cmd(&[b"CLIENT", b"SETNAME", b"control"]), "+OK\r\n");
    assert_eq!(r.cmd(&[b"CLIENT", b"NO-EVICT", b"on"]), "+OK\r\n");
    let mut held = Vec::new();
    for (i, size) in [100_000usize, 100_000, 1_000_000, 1_000_000].into_iter().enumerate() {
        let mut c = l.raw();
        let name = format!("client{i}");
        assert_eq!(c.cmd(&[b"CLIENT", b"SETNAME", name.as_bytes()]), "+OK\r\n");
        c.send(format!("*2\r\n${size}\r\n").as_bytes());
        c.send(&vec![b'v'; size]);
        assert!(eventually(Duration::from_secs(5), || {
            line_of(&mut r, &name).is_some_and(|line| field(&line, "qbuf") >= size as u64)
        }));
        held.push(c);
    }
    let clients =
        |r: &mut Raw| client_list(r).lines().filter(|l| l.starts_with("id=")).map(str::to_string).collect::<Vec<_>>();
    let total: u64 = clients(&mut r).iter().map(|line| field(&format!(" {line}"), "tot-mem")).sum();
    assert_eq!(r.cmd(&[b"CONFIG", b"SET", b"maxmemory-clients", b"10mb"]), "+OK\r\n");
    assert_eq!(clients(&mut r).len(), 5);
    // Room for all but the two large ones: those go, the small ones stay.
    let limit = (total - 1_500_000).to_string();
    assert_eq!(r.cmd(&[b"CONFIG", b"SET", b"maxmemory-clients", limit.as_bytes()]), "+OK\r\n");
    let list = clients(&mut r);
    let names: Vec<&str> = list.iter().filter_map(|l| l.split(' ').find_map(|f| f.strip_prefix("name="))).collect();
    assert_eq!(names, ["control", "client0", "client1"], "{list:?}");
    assert_eq!(evicted_clients(&mut r), 2);
}
