//! The replica's link to its primary (Redis's `connectWithMaster`, `syncWithMaster`,
//! `readSyncBulkPayload` and the master client): connects, sends the handshake a stock Redis
//! replica sends, asks to continue where this server's stream is (`PSYNC <replid> <offset>`),
//! loads a full sync when the primary answers `+FULLRESYNC`, then runs the primary's stream on the
//! primary's client and acknowledges what it applied every second and when asked.
//!
//! The engine keeps the state (`engine::upstream`, the ids and offsets in `engine::repl`); this
//! task does the IO, one link at a time, started again a second after a link ends or at once when
//! REPLICAOF names another primary.

use bytes::{Bytes, BytesMut};
use engine::rdb::Input;
use engine::server::Server;
use engine::upstream::{LinkState, Primary};
use resp::{Frame, Limits, Protocol, RequestDecoder};
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::sync::Notify;

/// Starts the link's task; REPLICAOF and the configuration ring it through the engine.
pub fn spawn(srv: Arc<Server>) {
    let ring = Arc::new(Notify::new());
    {
        let r = ring.clone();
        srv.upstream.set_waker(Arc::new(move || r.notify_one()));
    }
    tokio::spawn(run(srv, ring));
}

/// What a read that waited `repl-timeout` in vain fails with.
const TIMEOUT: &str = "timeout";

/// Why a link ended.
enum End {
    /// REPLICAOF changed the primary (or ended replication): start over at once.
    Replaced,
    /// Failed or lost: try again in a second.
    Retry,
}

async fn run(srv: Arc<Server>, ring: Arc<Notify>) {
    loop {
        let Some((primary, generation)) = srv.upstream.target() else {
            ring.notified().await;
            continue;
        };
        let end = Link { srv: &srv, primary: &primary, generation, ring: &ring }.run().await;
        if !srv.upstream.current(generation) {
            continue;
        }
        srv.upstream.set_state(LinkState::Connect, srv.clock.now_ms());
        if let End::Retry = end {
            // Redis's replicationCron retries once a second.
            tokio::select! {
                _ = tokio::time::sleep(Duration::from_secs(1)) => {}
                _ = ring.notified() => {}
            }
        }
    }
}

/// One link to one primary.
struct Link<'a> {
    srv: &'a Arc<Server>,
    primary: &'a Primary,
    generation: u64,
    ring: &'a Notify,
}

/// The link's connection: plain TCP, or TLS over it (`tls-replication yes`).
trait Io: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send {}
impl<T: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send> Io for T {}
type Sock = Box<dyn Io>;

/// The socket and what was read from it but not used yet.
struct Wire {
    sock: Sock,
    /// The connection's two ends (`addr` and `laddr` of the primary's client).
    peer: String,
    local: String,
    buf: BytesMut,
}

impl Wire {
    /// One line (without its CRLF or LF), waiting at most `timeout`.
    async fn line(&mut self, timeout: Duration) -> Result<String, String> {
        loop {
            if let Some(i) = self.buf.iter().position(|&b| b == b'\n') {
                let line = self.buf.split_to(i + 1);
                let text = String::from_utf8_lossy(&line[..i]).trim_end_matches('\r').to_string();
                return Ok(text);
            }
            self.fill(timeout).await?;
        }
    }

    /// A line that is not empty: the primary sends `\n` to keep a replica waiting for its sync.
    async fn reply_line(&mut self, timeout: Duration) -> Result<String, String> {
        loop {
            let l = self.line(timeout).await?;
            if !l.is_empty() {
                return Ok(l);
            }
        }
    }

    /// Reads more into the buffer.
    async fn fill(&mut self, timeout: Duration) -> Result<usize, String> {
        self.buf.reserve(64 * 1024);
        match tokio::time::timeout(timeout, self.sock.read_buf(&mut self.buf)).await {
            Err(_) => Err(TIMEOUT.into()),
            Ok(Ok(0)) => Err("connection lost".into()),
            Ok(Ok(n)) => Ok(n),
            Ok(Err(e)) => Err(e.to_string()),
        }
    }

    /// Sends one command.
    async fn send(&mut self, args: &[&[u8]]) -> Result<(), String> {
        let mut out = Vec::new();
        engine::changes::encode_command(&mut out, args);
        self.sock.write_all(&out).await.map_err(|e| e.to_string())
    }
}

/// How the primary answered PSYNC.
enum Sync {
    Full { replid: String, offset: u64 },
    Partial { replid: Option<String> },
}

impl Link<'_> {
    fn timeout(&self) -> Duration {
        Duration::from_secs(self.srv.config.get_i64("repl-timeout").max(1) as u64)
    }

    fn state(&self, s: LinkState) {
        self.srv.upstream.set_state(s, self.srv.clock.now_ms());
    }

    fn log(&self, line: &str) {
        self.srv.log_link(false, line);
    }

    fn warn(&self, line: &str) {
        self.srv.log_link(true, line);
    }

    /// One step of connecting (TCP, then TLS) under the link's timeout: its result, or Redis's
    /// log line for its failure.
    async fn connect_step<T, E: std::fmt::Display>(
        &self,
        step: impl std::future::Future<Output = Result<T, E>>,
    ) -> Option<T> {
        match tokio::time::timeout(self.timeout(), step).await {
            Ok(Ok(s)) => Some(s),
            Ok(Err(e)) => {
                self.warn(&format!("Error condition on socket for SYNC: {e}"));
                None
            }
            Err(_) => {
                self.warn("Timeout connecting to the MASTER...");
                None
            }
        }
    }

    async fn run(&self) -> End {
        self.state(LinkState::Connecting);
        let source = self.srv.config.get("bind-source-addr").unwrap_or_default();
        let Some(sock) = self.connect_step(connect_from(&self.primary.host, self.primary.port, &source)).await else {
            return End::Retry;
        };
        let _ = sock.set_nodelay(true);
        let peer = sock.peer_addr().map(|a| a.to_string()).unwrap_or_default();
        let local = sock.local_addr().map(|a| a.to_string()).unwrap_or_default();
        let sock = if self.srv.config.get("tls-replication").as_deref() == Some("yes") {
            let Some(connector) = crate::tls::connector() else {
                self.warn("Error condition on socket for SYNC: TLS is not configured (tls-replication needs a CA)");
                return End::Retry;
            };
            let name = match rustls_pki_types::ServerName::try_from(self.primary.host.clone()) {
                Ok(n) => n,
                Err(e) => {
                    self.warn(&format!("Error condition on socket for SYNC: {e}"));
                    return End::Retry;
                }
            };
            match self.connect_step(connector.connect(name, sock)).await {
                Some(s) => Box::new(s) as Sock,
                None => return End::Retry,
            }
        } else {
            Box::new(sock)
        };
        self.log("MASTER <-> REPLICA sync started");
        let mut wire = Wire { sock, peer, local, buf: BytesMut::new() };
        self.state(LinkState::Handshake);
        let sync = match self.handshake(&mut wire).await {
            Ok(s) => s,
            Err(e) if e == TIMEOUT => {
                self.warn("Timeout connecting to the MASTER...");
                return End::Retry;
            }
            Err(e) => {
                if !e.is_empty() {
                    self.warn(&e);
                }
                return End::Retry;
            }
        };
        if !self.srv.upstream.current(self.generation) {
            return End::Replaced;
        }
        match sync {
            Sync::Full { replid, offset } => {
                self.state(LinkState::Sync);
                if let Err(e) = self.full_sync(&mut wire, &replid, offset).await {
                    if e.ends_with(TIMEOUT) {
                        self.warn("Timeout receiving bulk data from MASTER... If the problem persists try to set the 'repl-timeout' parameter in redis.conf to a larger value.");
                    } else {
                        self.warn(&e);
                    }
                    return End::Retry;
                }
            }
            Sync::Partial { replid } => {
                self.srv.continue_from_primary(replid.as_deref());
                self.log("Successful partial resynchronization with master.");
            }
        }
        self.stream(wire).await
    }

    /// PING, AUTH, REPLCONF and PSYNC, as `syncWithMaster` sends them.
    async fn handshake(&self, wire: &mut Wire) -> Result<Sync, String> {
        let t = self.timeout();
        wire.send(&[b"PING"]).await?;
        let pong = wire.reply_line(t).await?;
        if pong.starts_with('-')
            && !pong.starts_with("-NOAUTH")
            && !pong.starts_with("-NOPERM")
            && !pong.starts_with("-ERR operation not permitted")
        {
            return Err(format!("Error reply to PING from master: '{}'", &pong[1..]));
        }
        self.log("Master replied to PING, replication can continue...");
        let auth = self.srv.config.get("masterauth").unwrap_or_default();
        if !auth.is_empty() {
            let user = self.srv.config.get("masteruser").unwrap_or_default();
            if user.is_empty() {
                wire.send(&[b"AUTH", auth.as_bytes()]).await?;
            } else {
                wire.send(&[b"AUTH", user.as_bytes(), auth.as_bytes()]).await?;
            }
            let r = wire.reply_line(t).await?;
            if let Some(e) = r.strip_prefix('-') {
                return Err(format!("Unable to AUTH to MASTER: {e}"));
            }
        }
        let announce_port = self.srv.config.get_i64("replica-announce-port");
        let port = if announce_port > 0 { announce_port as u64 } else { self.srv.tcp_port.load(Ordering::Relaxed) };
        wire.send(&[b"REPLCONF", b"listening-port", port.to_string().as_bytes()]).await?;
        let r = wire.reply_line(t).await?;
        if r.starts_with('-') {
            self.log(&format!("(Non critical) Master does not understand REPLCONF listening-port: {r}"));
        }
        let ip = self.srv.config.get("replica-announce-ip").unwrap_or_default();
        if !ip.is_empty() {
            wire.send(&[b"REPLCONF", b"ip-address", ip.as_bytes()]).await?;
            let r = wire.reply_line(t).await?;
            if r.starts_with('-') {
                self.log(&format!("(Non critical) Master does not understand REPLCONF ip-address: {r}"));
            }
        }
        // `latch`: this replica takes Latch's own commands (a Redis primary ignores the word).
        wire.send(&[b"REPLCONF", b"capa", b"eof", b"capa", b"psync2", b"capa", b"latch"]).await?;
        let r = wire.reply_line(t).await?;
        if r.starts_with('-') {
            self.log(&format!("(Non critical) Master does not understand REPLCONF capa: {r}"));
        }
        let (replid, offset) = self.srv.psync_request();
        self.log(&format!("Trying a partial resynchronization (request {replid}:{offset})."));
        // A primary handing over (FAILOVER) asks its target to take over.
        let failover = self.srv.failing_over();
        if failover {
            wire.send(&[b"PSYNC", replid.as_bytes(), offset.to_string().as_bytes(), b"FAILOVER"]).await?;
        } else {
            wire.send(&[b"PSYNC", replid.as_bytes(), offset.to_string().as_bytes()]).await?;
        }
        let r = wire.reply_line(t).await?;
        if failover {
            if r.starts_with("+FULLRESYNC") || r.starts_with("+CONTINUE") {
                self.srv.failover_done();
            } else {
                self.srv.failover_abort("Failover target rejected psync request");
                return Err(format!("Unexpected reply to PSYNC from master: {r}"));
            }
        }
        if let Some(rest) = r.strip_prefix("+FULLRESYNC") {
            let mut parts = rest.split_whitespace();
            let (Some(id), Some(off)) = (parts.next(), parts.next().and_then(|o| o.parse::<u64>().ok())) else {
                return Err("Master replied with wrong +FULLRESYNC syntax.".into());
            };
            self.log(&format!("Full resync from master: {id}:{off}"));
            return Ok(Sync::Full { replid: id.to_string(), offset: off });
        }
        if let Some(rest) = r.strip_prefix("+CONTINUE") {
            let id = rest.trim();
            return Ok(Sync::Partial { replid: (id.len() == 40).then(|| id.to_string()) });
        }
        if r.starts_with("-NOMASTERLINK") || r.starts_with("-LOADING") {
            self.log(&format!("Master is currently unable to PSYNC but should be in the future: {r}"));
            return Err(String::new());
        }
        Err(format!("Unexpected reply to PSYNC from master: {r}"))
    }

    /// Receives the primary's RDB file (`$<len>` or `$EOF:<mark>`) and loads it: as it arrives
    /// (Redis's diskless load: `repl-diskless-load swapdb`, or `on-empty-db` with no key), else
    /// once it is whole.
    async fn full_sync(&self, wire: &mut Wire, replid: &str, offset: u64) -> Result<(), String> {
        let t = self.timeout();
        let head = wire.reply_line(t).await.map_err(|e| format!("I/O error reading bulk count from MASTER: {e}"))?;
        if let Some(e) = head.strip_prefix('-') {
            return Err(format!("MASTER aborted replication with an error: {e}"));
        }
        let Some(spec) = head.strip_prefix('$') else {
            return Err(format!(
                "Bad protocol from MASTER, the first byte is not '$' (we received '{head}'), are you sure the host and port are right?"
            ));
        };
        let now = || self.srv.clock.now_ms();
        let mode = self.srv.config.get("repl-diskless-load").unwrap_or_default();
        let from_socket = mode == "swapdb" || (mode == "on-empty-db" && self.srv.dbsize_all() == 0);
        // Meanwhile the replica shows it loads: asynchronously (the old dataset served, the same
        // replication history: Redis's async loading) or not (clients get -LOADING).
        let flag = if from_socket && mode == "swapdb" && self.srv.repl.replid() == replid {
            &self.srv.async_loading
        } else {
            &self.srv.loading
        };
        let _loading = Loading::start(flag, from_socket);
        let to = if from_socket { "to parser" } else { "to disk" };
        let end = if let Some(mark) = spec.strip_prefix("EOF:") {
            self.log(&format!("MASTER <-> REPLICA sync: receiving streamed RDB from master with EOF {to}"));
            self.srv.upstream.begin_sync(0, now());
            FileEnd::Mark(mark.as_bytes().to_vec())
        } else {
            let len: usize = spec.parse().map_err(|_| format!("Bad bulk length from MASTER: {spec}"))?;
            self.log(&format!("MASTER <-> REPLICA sync: receiving {len} bytes from master {to}"));
            self.srv.upstream.begin_sync(len as u64, now());
            FileEnd::Len(len)
        };
        let loaded = if from_socket {
            self.load_from_socket(wire, end, replid, offset, mode == "swapdb").await?
        } else {
            let data = match end {
                FileEnd::Mark(mark) => {
                    let mut data = std::mem::take(&mut wire.buf).to_vec();
                    while !data.ends_with(&mark) {
                        let n = wire.fill(t).await.map_err(|e| format!("I/O error trying to sync with MASTER: {e}"))?;
                        data.extend_from_slice(&wire.buf.split());
                        self.srv.upstream.sync_progress(n as u64, now());
                    }
                    data.truncate(data.len() - mark.len());
                    data
                }
                FileEnd::Len(len) => {
                    while wire.buf.len() < len {
                        let n = wire.fill(t).await.map_err(|e| format!("I/O error trying to sync with MASTER: {e}"))?;
                        self.srv.upstream.sync_progress(n as u64, now());
                    }
                    wire.buf.split_to(len).to_vec()
                }
            };
            // Loading now (a file received whole is loaded after it came).
            _loading.set();
            let srv = self.srv.clone();
            let replid = replid.to_string();
            tokio::task::spawn_blocking(move || {
                srv.load_full_sync(&mut engine::rdb::SliceInput(&data), &replid, offset, false)
            })
            .await
            .unwrap_or_else(|_| Err(String::new()))
        };
        loaded.map_err(|e| {
            for line in e.lines() {
                self.warn(line);
            }
            "Failed trying to load the MASTER synchronization DB from socket".to_string()
        })
    }

    /// Loads the file as it arrives: this task reads the socket and hands what came to the load,
    /// which runs on a blocking thread; a load slower than the network slows the reads (the
    /// primary sees a slow replica, as Redis's blocking read does). The outer error is the
    /// socket's; the inner one the load's.
    async fn load_from_socket(
        &self,
        wire: &mut Wire,
        end: FileEnd,
        replid: &str,
        offset: u64,
        aside: bool,
    ) -> Result<Result<(), String>, String> {
        let t = self.timeout();
        let (tx, rx) = tokio::sync::mpsc::channel::<Bytes>(16);
        let mut loader = {
            let srv = self.srv.clone();
            let replid = replid.to_string();
            tokio::task::spawn_blocking(move || {
                let mut input = Arrivals { rx, buf: Vec::new(), start: 0 };
                let r = srv.load_full_sync(&mut input, &replid, offset, aside);
                // What follows the file (the mark) arrives whole before the feed ends.
                while r.is_ok() && input.more(usize::MAX) {}
                (r, input.window().to_vec())
            })
        };
        // The feed: what the socket brings, up to the end of the file.
        let mut received = 0usize;
        let mut last = Vec::new();
        let mut fed = Ok(());
        loop {
            if !wire.buf.is_empty() {
                let chunk = match &end {
                    FileEnd::Len(len) => wire.buf.split_to(wire.buf.len().min(len - received)),
                    FileEnd::Mark(_) => wire.buf.split(),
                };
                received += chunk.len();
                last.extend_from_slice(&chunk[chunk.len().saturating_sub(40)..]);
                last.drain(..last.len().saturating_sub(40));
                let chunk = chunk.freeze();
                tokio::select! {
                    sent = tx.send(chunk) => if sent.is_err() { break },
                    _ = &mut loader => break,
                }
            }
            let done = match &end {
                FileEnd::Len(len) => received >= *len,
                FileEnd::Mark(mark) => last.ends_with(mark),
            };
            if done {
                break;
            }
            tokio::select! {
                n = wire.fill(t) => match n {
                    Ok(n) => self.srv.upstream.sync_progress(n as u64, self.srv.clock.now_ms()),
                    Err(e) => {
                        fed = Err(format!("I/O error trying to sync with MASTER: {e}"));
                        break;
                    }
                },
                _ = &mut loader => break,
            }
        }
        drop(tx);
        let (loaded, rest) = loader.await.unwrap_or_else(|_| (Err(String::new()), Vec::new()));
        if loaded.is_ok() {
            let intact = match &end {
                FileEnd::Len(_) => rest.is_empty(),
                FileEnd::Mark(mark) => rest == *mark,
            };
            if !intact {
                return Ok(Err("Replication stream EOF marker is broken".into()));
            }
        } else if let Err(e) = fed {
            // The load failed because the connection did: both are told.
            return Ok(loaded.map_err(|l| format!("{l}\n{e}")));
        }
        Ok(loaded)
    }

    /// Runs the primary's stream until the link ends.
    async fn stream(&self, wire: Wire) -> End {
        let srv = self.srv;
        let Wire { sock, peer, local, buf } = wire;
        let (mut rd, mut wr) = tokio::io::split(sock);
        let mut client = srv.primary_client(peer, local);
        let killed = Arc::new(Notify::new());
        {
            let k = killed.clone();
            client.info.set_waker(Box::new(move || k.notify_one()));
        }
        srv.upstream.heard(srv.clock.now_ms());
        self.state(LinkState::Connected);
        // What was read (`rbuf`, which the decoder consumes) and the same bytes kept until they
        // are applied (`raw`), for this server's backlog and replicas.
        let mut rbuf = buf;
        let mut raw = BytesMut::from(&rbuf[..]);
        let mut dec = RequestDecoder::new();
        let limits = Limits { proto_max_bulk_len: i64::MAX, auth_required: false };
        let mut ack = tokio::time::interval(Duration::from_secs(1));
        ack.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        let mut out = BytesMut::new();
        let mut bad = false;
        // Where the next command starts in `raw`, and where Latch's own commands sit in it.
        let (mut start, mut native) = (0usize, Vec::new());
        // A command CLIENT PAUSE holds back: applied once the pause ends, the stream read meanwhile.
        let mut held: Option<Vec<Bytes>> = None;
        // The most the two buffers held since they were last fitted to it (a large value's
        // bytes pass through both).
        let mut peak = rbuf.len();
        let end = loop {
            // Applies every complete command read so far.
            loop {
                let next = match held.take() {
                    Some(args) => Ok(Some(args)),
                    None => dec.decode(&mut rbuf, &limits),
                };
                match next {
                    Ok(Some(args)) => {
                        // REPLICAOF changed the primary meanwhile: nothing more of this one.
                        if !srv.upstream.current(self.generation) {
                            bad = true;
                            break;
                        }
                        if srv.pause_holds_primary(&client, &args) {
                            held = Some(args);
                            break;
                        }
                        if let Some(reply) = srv.execute(&mut client, &args) {
                            Self::answer(srv, &args, &reply, &mut out);
                        }
                        let end = raw.len() - rbuf.len();
                        if engine::repl::is_native(&args[0]) {
                            native.push((start, end - start));
                        }
                        start = end;
                        // Inside a transaction the offset moves at its EXEC (Redis's
                        // `commandProcessed`).
                        if !client.multi.active() {
                            srv.upstream.stream_db.store(client.db, Ordering::Relaxed);
                            srv.applied_from_primary(&raw.split_to(end), &native);
                            native.clear();
                            start = 0;
                        }
                    }
                    Ok(None) => break,
                    Err(e) => {
                        self.warn(&format!("Protocol error from master: {}", e.message()));
                        bad = true;
                        break;
                    }
                }
            }
            if bad {
                break End::Retry;
            }
            srv.upstream.set_read_offset(srv.repl.offset() + raw.len() as u64);
            if !out.is_empty() {
                if wr.write_all(&out).await.is_err() {
                    break End::Retry;
                }
                out.clear();
            }
            if client.info.killed.load(Ordering::Relaxed) {
                break End::Retry;
            }
            // As a client's query buffer: the room a large command grew is given back once it
            // was applied (Redis trims its primary's client the same way).
            crate::conn::shrink_to_peak(&mut rbuf, peak);
            crate::conn::shrink_to_peak(&mut raw, peak);
            peak = rbuf.len().max(raw.len());
            rbuf.reserve(64 * 1024);
            let before = rbuf.len();
            tokio::select! {
                r = rd.read_buf(&mut rbuf) => match r {
                    Ok(0) | Err(_) => {
                        self.log("Connection with master lost.");
                        break End::Retry;
                    }
                    Ok(n) => {
                        srv.stats.add_net_input(n as u64);
                        srv.upstream.heard(srv.clock.now_ms());
                        raw.extend_from_slice(&rbuf[before..]);
                        peak = peak.max(raw.len());
                    }
                },
                _ = ack.tick() => {
                    // DEBUG SLEEP freezes the acknowledgements too.
                    srv.wait_thawed();
                    let off = srv.repl.offset().to_string();
                    let mut cmd = Vec::new();
                    engine::changes::encode_command(&mut cmd, &[&b"REPLCONF"[..], b"ACK", off.as_bytes()]);
                    if wr.write_all(&cmd).await.is_err() {
                        break End::Retry;
                    }
                    let silent = srv.clock.now_ms().saturating_sub(srv.upstream.last_io());
                    if silent > self.timeout().as_millis() as u64 {
                        self.warn("MASTER timeout: no data nor PING received...");
                        break End::Retry;
                    }
                }
                _ = killed.notified() => {}
                // The pause's end is looked for as Redis's cron does.
                _ = tokio::time::sleep(Duration::from_millis(10)), if held.is_some() => {}
                _ = self.ring.notified() => {
                    if !srv.upstream.current(self.generation) {
                        break End::Replaced;
                    }
                }
            }
        };
        srv.upstream.master_client.store(0, Ordering::Relaxed);
        srv.client_closed(&client);
        end
    }

    /// The primary hears back only the acknowledgement it asked for (`REPLCONF GETACK`); any other
    /// reply is dropped, an error logged as Redis logs it.
    fn answer(srv: &Server, args: &[Bytes], reply: &Frame, out: &mut BytesMut) {
        let getack =
            args.len() >= 2 && args[0].eq_ignore_ascii_case(b"replconf") && args[1].eq_ignore_ascii_case(b"getack");
        if getack {
            resp::encode(reply, Protocol::Resp2, out);
        } else if let Frame::Error(e) = reply {
            let name = String::from_utf8_lossy(&args[0]);
            srv.log_link(
                true,
                &format!(
                    "== CRITICAL == This replica is sending an error to its master: '{}' after processing the command '{name}'",
                    String::from_utf8_lossy(e)
                ),
            );
        }
    }
}

/// Connects to `host`:`port`, from the address `source` when one is given (`bind-source-addr`,
/// as Redis binds its replica link's socket before it connects), each of the host's addresses
/// in turn.
async fn connect_from(host: &str, port: u16, source: &str) -> std::io::Result<TcpStream> {
    if source.is_empty() {
        return TcpStream::connect((host, port)).await;
    }
    let from: std::net::IpAddr = source
        .parse()
        .map_err(|_| std::io::Error::new(std::io::ErrorKind::InvalidInput, format!("bad bind-source-addr {source}")))?;
    let mut last = std::io::Error::new(std::io::ErrorKind::NotFound, format!("{host} has no address"));
    for to in tokio::net::lookup_host((host, port)).await? {
        let sock = if to.is_ipv4() { tokio::net::TcpSocket::new_v4()? } else { tokio::net::TcpSocket::new_v6()? };
        if let Err(e) = sock.bind(std::net::SocketAddr::new(from, 0)) {
            last = e;
            continue;
        }
        match sock.connect(to).await {
            Ok(s) => return Ok(s),
            Err(e) => last = e,
        }
    }
    Err(last)
}

/// Where the primary's file ends: after `$<len>` bytes, or at the mark `$EOF:<mark>` named.
enum FileEnd {
    Len(usize),
    Mark(Vec<u8>),
}

/// The primary's file as it arrives, for the load on its blocking thread.
struct Arrivals {
    rx: tokio::sync::mpsc::Receiver<Bytes>,
    buf: Vec<u8>,
    /// Where the window starts in `buf`.
    start: usize,
}

impl Input for Arrivals {
    fn window(&self) -> &[u8] {
        &self.buf[self.start..]
    }

    fn consume(&mut self, n: usize) {
        self.start += n;
        if self.start == self.buf.len() {
            self.buf.clear();
            self.start = 0;
        }
    }

    fn more(&mut self, want: usize) -> bool {
        self.buf.drain(..self.start);
        self.start = 0;
        let before = self.buf.len();
        while self.buf.len() < want {
            match self.rx.blocking_recv() {
                Some(chunk) => self.buf.extend_from_slice(&chunk),
                None => break,
            }
        }
        self.buf.len() > before
    }

    fn arriving(&self) -> bool {
        true
    }
}

/// A replica's loading flag (INFO's `loading` or `async_loading`) while its full sync is loaded:
/// set from when the file starts to arrive if it is loaded from the socket, else once it is
/// whole; cleared however the sync ends.
struct Loading<'a>(&'a std::sync::atomic::AtomicBool);

impl<'a> Loading<'a> {
    fn start(flag: &'a std::sync::atomic::AtomicBool, now: bool) -> Loading<'a> {
        if now {
            flag.store(true, Ordering::SeqCst);
        }
        Loading(flag)
    }

    fn set(&self) {
        self.0.store(true, Ordering::SeqCst);
    }
}

impl Drop for Loading<'_> {
    fn drop(&mut self) {
        self.0.store(false, Ordering::SeqCst);
    }
}
