//! MIGRATE: moves (or copies) keys to another server, as Redis 7.0's `migrateCommand` does.
//!
//! The handler is a blocking client of the target: it sends `AUTH` (if asked), `SELECT` (unless the
//! connection already has the database selected) and one `RESTORE key ttl payload [REPLACE]` per
//! key in one write, then reads the replies, all under the keys' shard locks (Redis blocks its whole
//! event loop meanwhile). The payload is DUMP's ([`crate::rdb::dump`]) and the TTL what is left of
//! the key's. The keys the target acknowledged are deleted (unless `COPY`) and propagate as one
//! `DEL`, as Redis rewrites the command.
//!
//! Connections come from the host ([`crate::host::Host::connect`]) and stay open for the next
//! MIGRATE to the same `host:port` ([`crate::host::ConnCache`], INFO's `migrate_cached_sockets`)
//! until unused for 10 seconds. A failure on a connection closes it; if nothing was restored and it
//! was not a timeout, the command tries once more on a new connection (a cached connection the
//! target closed meanwhile is the common case).

use super::base::BASE;
use crate::args::eq_ic;
use crate::command::Keys;
use crate::ctx::{Command, Ctx};
use crate::error;
use crate::host::{CachedConn, HostConn, is_timeout};
use bytes::{Bytes, BytesMut};
use resp::Frame;
use std::io;

/// Table entries.
pub static COMMANDS: &[Command] = &[Command {
    name: "migrate",
    arity: -6,
    flags: super::base::f::W,
    keys: Keys::Custom { first: 3, last: 3, step: 1, find: migrate_keys },
    handler: migrate,
    ..BASE
}];

/// MIGRATE's keys (Redis's `migrateGetKeys`): argument 3, or everything after `KEYS` when argument
/// 3 is empty (none if it is not: the command refuses that). The words `AUTH` and `AUTH2` skip
/// their arguments on the way, so a password spelled `KEYS` is not taken for the option.
fn migrate_keys(args: &[Bytes]) -> Vec<usize> {
    let mut i = 6;
    while i < args.len() {
        let a = &args[i];
        if eq_ic(a, "keys") {
            if !args[3].is_empty() {
                return Vec::new();
            }
            return (i + 1..args.len()).collect();
        }
        if eq_ic(a, "auth") {
            i += 1;
        } else if eq_ic(a, "auth2") {
            i += 2;
        }
        i += 1;
    }
    vec![3]
}

/// What MIGRATE was asked, once its arguments passed Redis's checks.
struct Request<'a> {
    /// `COPY`: the keys stay here too.
    copy: bool,
    /// `REPLACE`: the target's keys of the same names are replaced.
    replace: bool,
    /// `AUTH password` or `AUTH2 username password` (the last given wins, field by field).
    username: Option<&'a [u8]>,
    password: Option<&'a [u8]>,
    /// The keys named (argument 3, or those after `KEYS`).
    keys: &'a [Bytes],
    /// The target's database.
    db: i64,
    /// Milliseconds every connect, read and write may take.
    timeout_ms: u64,
}

/// Parses MIGRATE's arguments with Redis's checks in Redis's order: the options first (syntax
/// errors, the `KEYS` rule), then the timeout and the database as integers (a timeout of 0 or less
/// is 1000 ms; the database is the target's to check).
fn parse(args: &[Bytes]) -> Result<Request<'_>, Frame> {
    let mut req = Request {
        copy: false,
        replace: false,
        username: None,
        password: None,
        keys: &args[3..4],
        db: 0,
        timeout_ms: 0,
    };
    let mut j = 6;
    while j < args.len() {
        let more = args.len() - 1 - j;
        let a = &args[j];
        if eq_ic(a, "copy") {
            req.copy = true;
        } else if eq_ic(a, "replace") {
            req.replace = true;
        } else if eq_ic(a, "auth") {
            if more == 0 {
                return Err(error::syntax());
            }
            j += 1;
            req.password = Some(&args[j]);
        } else if eq_ic(a, "auth2") {
            if more < 2 {
                return Err(error::syntax());
            }
            req.username = Some(&args[j + 1]);
            req.password = Some(&args[j + 2]);
            j += 2;
        } else if eq_ic(a, "keys") {
            if !args[3].is_empty() {
                return Err(Frame::error(
                    "ERR When using MIGRATE KEYS option, the key argument must be set to the empty string",
                ));
            }
            req.keys = &args[j + 1..];
            break;
        } else {
            return Err(error::syntax());
        }
        j += 1;
    }
    let int = |i: usize| crate::args::parse_i64_strict(&args[i]).ok_or_else(error::not_integer);
    let timeout = int(5)?;
    req.db = int(4)?;
    req.timeout_ms = if timeout <= 0 { 1000 } else { timeout as u64 };
    Ok(req)
}

/// The bytes of RESTORE's commands for `items` that have not expired by `now` (monotonic ms),
/// with AUTH and SELECT before them as needed. Returns the request and the items it restores.
fn requests(req: &Request<'_>, select: bool, items: &[Item], now: u64) -> (BytesMut, Vec<usize>) {
    let mut out = BytesMut::new();
    if let Some(pass) = req.password {
        match req.username {
            Some(user) => resp::encode_request(&[&b"AUTH"[..], user, pass], &mut out),
            None => resp::encode_request(&[&b"AUTH"[..], pass], &mut out),
        }
    }
    if select {
        resp::encode_request(&[&b"SELECT"[..], req.db.to_string().as_bytes()], &mut out);
    }
    let mut sent = Vec::with_capacity(items.len());
    for (i, it) in items.iter().enumerate() {
        let ttl = match it.deadline {
            None => 0,
            // Expired since it was looked up: left where it is (the cron or a lookup deletes it).
            Some(d) if d < now => continue,
            Some(d) => (d - now).max(1),
        };
        let ttl = ttl.to_string();
        let mut args: Vec<&[u8]> = vec![b"RESTORE", &it.key, ttl.as_bytes(), &it.payload];
        if req.replace {
            args.push(b"REPLACE");
        }
        resp::encode_request(&args, &mut out);
        sent.push(i);
    }
    (out, sent)
}

/// A key to migrate: its name, deadline (monotonic ms) and DUMP payload.
struct Item {
    key: Bytes,
    deadline: Option<u64>,
    payload: Vec<u8>,
}

/// How one exchange with the target went.
#[derive(Default)]
struct Exchange {
    /// Indexes (into the items) of the keys the target restored, in order.
    restored: Vec<usize>,
    /// The first error the target replied with (AUTH's, else SELECT's, else a RESTORE's).
    target_error: Option<Bytes>,
    /// The failure that ended the exchange early: `(while writing, error)`.
    failure: Option<(bool, io::Error)>,
}

/// Writes `buf` in chunks of 64 KiB, as Redis does, each bounded by the connection's timeout.
fn write_all(conn: &mut dyn HostConn, buf: &[u8]) -> io::Result<()> {
    for chunk in buf.chunks(64 * 1024) {
        io::Write::write_all(conn, chunk)?;
    }
    io::Write::flush(conn)
}

/// Reads the next reply from `conn`, `buf` holding what was read past the previous one.
fn read_reply(conn: &mut dyn HostConn, buf: &mut BytesMut) -> io::Result<Frame> {
    loop {
        match resp::decode_reply(buf) {
            Ok(Some(f)) => return Ok(f),
            Ok(None) => {}
            Err(e) => return Err(io::Error::new(io::ErrorKind::InvalidData, e)),
        }
        let mut chunk = [0u8; 4096];
        match conn.read(&mut chunk) {
            Ok(0) => return Err(io::ErrorKind::UnexpectedEof.into()),
            Ok(n) => buf.extend_from_slice(&chunk[..n]),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
}

/// The error text of a reply, if it is one.
fn error_text(f: &Frame) -> Option<Bytes> {
    match f {
        Frame::Error(e) => Some(e.clone()),
        _ => None,
    }
}

/// One exchange on `conn`: sends the commands, reads AUTH's and SELECT's replies and then one reply
/// per RESTORE (all of them, even after an error, as Redis does).
fn exchange(conn: &mut CachedConn, req: &Request<'_>, items: &[Item], now: u64) -> Exchange {
    let select = conn.last_db != req.db;
    let (out, sent) = requests(req, select, items, now);
    let mut ex = Exchange::default();
    let c = &mut *conn.conn;
    if let Err(e) = c.set_timeout(req.timeout_ms).and_then(|()| write_all(c, &out)) {
        ex.failure = Some((true, e));
        return ex;
    }
    let mut buf = BytesMut::new();
    let mut first_error = None;
    for needed in [req.password.is_some(), select] {
        if !needed {
            continue;
        }
        match read_reply(c, &mut buf) {
            Ok(f) => first_error = first_error.or_else(|| error_text(&f)),
            Err(e) => {
                ex.failure = Some((false, e));
                return ex;
            }
        }
    }
    for i in sent {
        let reply = match read_reply(c, &mut buf) {
            Ok(f) => f,
            Err(e) => {
                ex.failure = Some((false, e));
                return ex;
            }
        };
        match first_error.clone().or_else(|| error_text(&reply)) {
            // An AUTH or SELECT that failed fails every key (and the database is no longer known).
            Some(e) => {
                if ex.target_error.is_none() {
                    conn.last_db = -1;
                    ex.target_error = Some(e);
                }
            }
            None => ex.restored.push(i),
        }
    }
    ex
}

/// MIGRATE host port key|"" destination-db timeout [COPY] [REPLACE] [AUTH password]
/// [AUTH2 username password] [KEYS key [key ...]].
fn migrate(ctx: &mut Ctx<'_, '_>) -> Frame {
    let args = ctx.args;
    let req = match parse(args) {
        Ok(r) => r,
        Err(e) => return e,
    };
    // The keys that are here (looked up as reads: hits, misses, access times), with their payloads.
    let compress = ctx.srv.config.rdbcompression.load(std::sync::atomic::Ordering::Relaxed);
    let mut items = Vec::new();
    let mut db = ctx.db();
    for key in req.keys {
        let Some((e, deadline)) = db.read_with_deadline(key) else { continue };
        let Some(payload) = crate::rdb::dump(&e.value, compress) else {
            return Frame::error("ERR MIGRATE of a native lock is not supported: RDB has no lock type");
        };
        items.push(Item { key: key.clone(), deadline, payload });
    }
    if items.is_empty() {
        // Not an error: the keys often just expired.
        return Frame::simple("NOKEY");
    }
    // From here on the command waits on the network: let the connection's worker go.
    ctx.srv.long_op();
    let srv = ctx.srv;
    let name = [&args[1][..], b":", &args[2][..]].concat();
    let host = String::from_utf8_lossy(&args[1]).into_owned();
    // Redis's port: atoi into a C int, which getaddrinfo refuses when negative and htons truncates.
    let port = i32::try_from(resp::atoi(&args[2])).unwrap_or(-1);
    let port = u16::try_from(port).ok().or_else(|| (port > 0).then_some(port as u16));
    let mut may_retry = true;
    loop {
        let now_s = srv.clock.now_ms() / 1000;
        let opened = srv.migrate_sockets.get_or_open(&name, now_s, || match port {
            Some(port) => srv.config.host().connect(&host, port, req.timeout_ms),
            None => Err(io::ErrorKind::InvalidInput.into()),
        });
        let (shared, ex) = match opened {
            Ok(shared) => {
                let mut conn = shared.lock();
                conn.used_at(now_s);
                let ex = exchange(&mut conn, &req, &items, srv.clock.now_ms());
                if ex.failure.is_none() && ex.target_error.is_none() {
                    conn.last_db = req.db;
                }
                drop(conn);
                (Some(shared), ex)
            }
            Err(e) if matches!(e.kind(), io::ErrorKind::InvalidInput | io::ErrorKind::Unsupported) => {
                return Frame::error("IOERR error or timeout connecting to the client");
            }
            // Redis's blocking connect does not look at the socket's error: a refused or timed-out
            // connection fails at its first write.
            Err(e) => (None, Exchange { failure: Some((true, e)), ..Exchange::default() }),
        };
        let Some((writing, e)) = ex.failure else {
            // Every reply read.
            delete_restored(ctx, &req, &items, &ex.restored);
            return match ex.target_error {
                None => Frame::ok(),
                Some(e) => target_error(&e),
            };
        };
        if let Some(shared) = &shared {
            srv.migrate_sockets.close(&name, shared);
        }
        if ex.restored.is_empty() && ex.target_error.is_none() {
            // No RESTORE answered: a new connection may do better, unless the target is just slow.
            if may_retry && !is_timeout(&e) {
                may_retry = false;
                continue;
            }
            let what = if writing { "writing" } else { "reading" };
            return Frame::error(format!("IOERR error or timeout {what} to target instance"));
        }
        // Some replies came before the connection failed: those keys moved.
        delete_restored(ctx, &req, &items, &ex.restored);
        return match ex.target_error {
            Some(e) => target_error(&e),
            None => Frame::error("IOERR error or timeout reading to target instance"),
        };
    }
}

/// `ERR Target instance replied with error: <its error>`.
fn target_error(e: &[u8]) -> Frame {
    let mut m = b"ERR Target instance replied with error: ".to_vec();
    m.extend_from_slice(e);
    Frame::Error(Bytes::from(m))
}

/// Deletes the keys the target restored, unless COPY, and reports them as one `DEL` (Redis rewrites
/// the command so; one change per key, as Redis counts them).
fn delete_restored(ctx: &mut Ctx<'_, '_>, req: &Request<'_>, items: &[Item], restored: &[usize]) {
    if req.copy || restored.is_empty() {
        return;
    }
    for &i in restored {
        ctx.db().remove(&items[i].key);
    }
    ctx.changed(restored.len() as u64);
    if ctx.propagating() {
        let mut del: Vec<&[u8]> = vec![b"DEL"];
        del.extend(restored.iter().map(|&i| &items[i].key[..]));
        ctx.propagate_as(&del);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::host::MemoryHost;
    use crate::testkit::{TestClient, TestServer};
    use parking_lot::Mutex;
    use std::sync::Arc;

    /// How the in-memory target behaves.
    #[derive(Default)]
    struct Network {
        /// Connections opened so far.
        connects: usize,
        /// The next this many connections are dead: the first read sees the target close them.
        dead: usize,
        /// Replies never come: reads time out.
        stalled: bool,
        /// Every command the target received, by name.
        seen: Vec<String>,
    }

    /// A connection to a [`TestServer`]: what is written runs there, its replies are what is read.
    struct Peer {
        target: TestClient,
        net: Arc<Mutex<Network>>,
        dead: bool,
        decoder: resp::RequestDecoder,
        input: BytesMut,
        output: BytesMut,
    }

    impl io::Write for Peer {
        fn write(&mut self, b: &[u8]) -> io::Result<usize> {
            if self.dead {
                // The kernel takes the bytes; nobody reads them.
                return Ok(b.len());
            }
            self.input.extend_from_slice(b);
            while let Some(args) = self.decoder.decode(&mut self.input, &resp::Limits::default()).expect("valid") {
                self.net.lock().seen.push(String::from_utf8_lossy(&args[0]).to_uppercase());
                let reply = self.target.cmd(&args).expect("a reply");
                resp::encode(&reply, resp::Protocol::Resp2, &mut self.output);
            }
            Ok(b.len())
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    impl io::Read for Peer {
        fn read(&mut self, b: &mut [u8]) -> io::Result<usize> {
            if self.dead {
                return Ok(0);
            }
            if self.net.lock().stalled || self.output.is_empty() {
                return Err(io::ErrorKind::WouldBlock.into());
            }
            let n = b.len().min(self.output.len());
            b[..n].copy_from_slice(&self.output.split_to(n));
            Ok(n)
        }
    }

    impl HostConn for Peer {
        fn set_timeout(&mut self, _: u64) -> io::Result<()> {
            Ok(())
        }
    }

    /// A source server whose host reaches `target` at `target:1`.
    fn pair() -> (TestServer, Arc<TestServer>, Arc<Mutex<Network>>) {
        let (src, host): (TestServer, Arc<MemoryHost>) = TestServer::with_host();
        let target = Arc::new(TestServer::new());
        let net = Arc::new(Mutex::new(Network::default()));
        let (t, n) = (target.clone(), net.clone());
        host.set_connect_fn(Arc::new(move |h, port, _| {
            if (h, port) != ("target", 1) {
                return Err(io::ErrorKind::ConnectionRefused.into());
            }
            let mut net = n.lock();
            net.connects += 1;
            let dead = net.dead > 0;
            net.dead = net.dead.saturating_sub(1);
            Ok(Box::new(Peer {
                target: t.client(),
                net: n.clone(),
                dead,
                decoder: Default::default(),
                input: BytesMut::new(),
                output: BytesMut::new(),
            }))
        }));
        (src, target, net)
    }

    #[test]
    fn arguments_are_checked_as_redis_checks_them() {
        let ts = TestServer::new();
        ts.transcript(
            r#"
            > MIGRATE h 1 k 0 10 bogus
            -ERR syntax error
            > MIGRATE h 1 k 0 10 AUTH
            -ERR syntax error
            > MIGRATE h 1 k 0 10 AUTH2 user
            -ERR syntax error
            > MIGRATE h 1 k 0 10 KEYS a b
            -ERR When using MIGRATE KEYS option, the key argument must be set to the empty string
            > MIGRATE h 1 k x y bogus
            -ERR syntax error
            > MIGRATE h 1 k x y
            -ERR value is not an integer or out of range
            > MIGRATE h 1 k 0 10
            +NOKEY
            > MIGRATE h 1 "" 0 10 COPY REPLACE AUTH2 u p KEYS a b c
            +NOKEY
            > SET k v
            +OK
            > MIGRATE h 1 k 0 10
            -IOERR error or timeout connecting to the client
            > GET k
            "v"
            "#,
        );
    }

    #[test]
    fn key_positions_follow_migrate_get_keys() {
        let keys = |line: &str| {
            let args: Vec<Bytes> =
                resp::split_args(line.as_bytes()).expect("args").into_iter().map(Bytes::from).collect();
            migrate_keys(&args)
        };
        assert_eq!(keys("MIGRATE h 1 k 0 10"), [3]);
        assert_eq!(keys("MIGRATE h 1 k 0 10 COPY REPLACE"), [3]);
        assert_eq!(keys(r#"MIGRATE h 1 "" 0 10 KEYS a b"#), [7, 8]);
        assert_eq!(keys(r#"MIGRATE h 1 "" 0 10 AUTH keys KEYS a"#), [9]);
        assert_eq!(keys(r#"MIGRATE h 1 "" 0 10 AUTH2 keys keys KEYS a"#), [10]);
        assert_eq!(keys("MIGRATE h 1 k 0 10 KEYS a"), Vec::<usize>::new());
    }

    #[test]
    fn moves_keys_with_their_ttls_and_propagates_a_del() {
        let (src, target, net) = pair();
        src.srv.record_changes();
        let mut c = src.client();
        c.transcript(
            "> RPUSH list a b c
            :3
            > SET str hello PX 5000
            +OK
            > MIGRATE target 1 list 3 1000
            +OK
            > EXISTS list
            :0
            > MIGRATE target 1 \"\" 3 1000 KEYS nokey str
            +OK
            > DBSIZE
            :0",
        );
        target.transcript(
            "> SELECT 3
            +OK
            > LRANGE list 0 -1
            [\"a\", \"b\", \"c\"]
            > PTTL str
            :5000
            > GET str
            \"hello\"",
        );
        // One connection, SELECT once.
        let n = net.lock();
        assert_eq!(n.connects, 1);
        assert_eq!(n.seen, ["SELECT", "RESTORE", "RESTORE"]);
        assert_eq!(src.srv.migrate_sockets.len(), 1);
        let dels: Vec<Vec<Bytes>> = src
            .srv
            .changes
            .take()
            .into_iter()
            .flat_map(|u| u.effects)
            .map(|e| e.args)
            .filter(|a| a[0] == "DEL")
            .collect();
        assert_eq!(dels, [vec![Bytes::from("DEL"), Bytes::from("list")], vec![Bytes::from("DEL"), Bytes::from("str")]]);
        // Unused for more than 10 seconds, the connection is closed.
        src.srv.close_idle_connections(src.srv.clock.now_ms() + 10_000);
        assert_eq!(src.srv.migrate_sockets.len(), 1);
        src.srv.close_idle_connections(src.srv.clock.now_ms() + 11_000);
        assert_eq!(src.srv.migrate_sockets.len(), 0);
    }

    #[test]
    fn copy_replace_and_errors_from_the_target() {
        let (src, target, _) = pair();
        target.client().run("MSET c busy d busy");
        let mut c = src.client();
        c.transcript(
            "> MSET a 1 b 2 c 3 d 4
            +OK
            > MIGRATE target 1 a 0 1000 COPY
            +OK
            > MIGRATE target 1 a 0 1000 COPY
            -ERR Target instance replied with error: BUSYKEY Target key name already exists.
            > MIGRATE target 1 a 0 1000 COPY REPLACE
            +OK
            > EXISTS a
            :1
            > MIGRATE target 1 \"\" 0 1000 KEYS a b c d
            -ERR Target instance replied with error: BUSYKEY Target key name already exists.
            > MGET a b c d
            [\"1\", (nil), \"3\", \"4\"]
            > MIGRATE target 1 c 99 1000
            -ERR Target instance replied with error: ERR DB index is out of range
            > EXISTS c
            :1",
        );
        target.transcript(
            "> MGET a b c d
            [\"1\", \"2\", \"busy\", \"busy\"]",
        );
    }

    #[test]
    fn auth_comes_first() {
        let (src, target, net) = pair();
        target.client().run("CONFIG SET requirepass secret");
        let mut c = src.client();
        c.transcript(
            "> SET k v
            +OK
            > MIGRATE target 1 k 0 1000
            -ERR Target instance replied with error: NOAUTH Authentication required.
            > MIGRATE target 1 k 0 1000 AUTH wrong
            -ERR Target instance replied with error: WRONGPASS invalid username-password pair or user is disabled.
            > MIGRATE target 1 k 0 1000 AUTH2 default secret
            +OK
            > EXISTS k
            :0",
        );
        assert_eq!(&net.lock().seen[..4], ["SELECT", "RESTORE", "AUTH", "SELECT"]);
    }

    #[test]
    fn a_dead_connection_is_replaced_once_and_a_slow_target_times_out() {
        let (src, _target, net) = pair();
        let mut c = src.client();
        c.run("SET k v");
        net.lock().dead = 1;
        assert_eq!(c.run("MIGRATE target 1 k 0 1000 COPY"), "+OK");
        assert_eq!(net.lock().connects, 2);
        // Both dead: one retry only.
        net.lock().dead = 2;
        src.srv.migrate_sockets.close_idle(u64::MAX);
        assert_eq!(c.run("MIGRATE target 1 k 0 1000 COPY"), "-IOERR error or timeout reading to target instance");
        assert_eq!(net.lock().connects, 4);
        assert_eq!(src.srv.migrate_sockets.len(), 0);
        // A timeout is not retried.
        net.lock().stalled = true;
        assert_eq!(c.run("MIGRATE target 1 k 0 1000"), "-IOERR error or timeout reading to target instance");
        assert_eq!(net.lock().connects, 5);
        assert_eq!(c.run("EXISTS k"), ":1");
        // A refused connection fails at its first write, as in Redis, and is tried twice.
        let connects = net.lock().connects;
        assert_eq!(c.run("MIGRATE elsewhere 1 k 0 1000"), "-IOERR error or timeout writing to target instance");
        assert_eq!(net.lock().connects, connects);
    }

    #[test]
    fn a_native_lock_cannot_move() {
        let (src, _target, net) = pair();
        let mut c = src.client();
        c.run("LOCK lk owner 10000");
        assert_eq!(c.run("TYPE lk"), "+lock");
        assert_eq!(
            c.run("MIGRATE target 1 lk 0 1000"),
            "-ERR MIGRATE of a native lock is not supported: RDB has no lock type"
        );
        assert_eq!(net.lock().connects, 0);
    }
}
