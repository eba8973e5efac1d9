//! One client connection: read, decode, execute, encode, write. The only place that touches sockets.
//!
//! Every complete request in the read buffer is executed before replies are written with one
//! `write_all`, so a pipeline of N commands costs one read and one write.
//!
//! Output is bounded. Replies are written out once `FLUSH_AT` bytes are waiting, before more
//! requests run, so a client that pipelines large replies and never reads stalls itself rather than
//! growing the server (Redis would keep buffering them). When the normal class of
//! `client-output-buffer-limit` has a hard limit, replies are held back until the batch ends, as
//! Redis holds them, and a client over a limit is closed without the replies (`Obuf`).

use bytes::{Bytes, BytesMut};
use engine::client::Client;
use engine::ctx::Waiter;
use engine::keyspace::PREFETCH_BATCH;
use engine::server::Server;
use resp::{Frame, Limits, RequestDecoder};
use std::collections::VecDeque;
use std::convert::Infallible;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, ReadHalf, WriteHalf};
use tokio::sync::Notify;

mod replica;

const READ_CHUNK: usize = 16 * 1024;
/// Turns of `run_buffered`'s loop (a request each, or the buffer's end) run without a prefetch after
/// one that found nothing worth loading ahead: a small database stays small for a while, and
/// looking costs about as much as a GET of a small table.
const PREFETCH_REST: u32 = 64;
/// Write buffers larger than this are released once written.
const KEEP_BUF: usize = 64 * 1024;
/// A query buffer over this size shrinks to its recent peak (Redis's `PROTO_RESIZE_THRESHOLD`).
const RESIZE_THRESHOLD: usize = 32 * 1024;

/// A query buffer over [`RESIZE_THRESHOLD`] whose half is more than `peak`, the most it held
/// since the last look, shrinks to that peak, keeping what it holds (Redis's
/// `clientsCronResizeQueryBuffer`): a large argument's room is given back once it is applied.
pub(crate) fn shrink_to_peak(buf: &mut BytesMut, peak: usize) {
    if buf.capacity() > RESIZE_THRESHOLD && buf.capacity() - buf.len() > 4096 && buf.capacity() / 2 > peak {
        let mut smaller = BytesMut::with_capacity(peak.max(buf.len()));
        smaller.extend_from_slice(buf);
        *buf = smaller;
    }
}
/// Pending replies are checked against `client-output-buffer-limit` once past this many bytes
/// (Redis's largest static reply buffer, `PROTO_REPLY_CHUNK_BYTES`), which keeps the check off the
/// path of small replies; past it they count as Redis counts them, beyond the client's own reply
/// buffer (`engine::clients::reply_bytes`).
const REPLY_CHUNK: usize = 16 * 1024;
/// Pending output that is written out before the next request runs (no hard limit configured).
const FLUSH_AT: usize = 64 * 1024;

/// `client-output-buffer-limit` for the replies of one connection (the normal class; messages
/// waiting in the outbox are checked as they are queued, see `engine::pubsub`): Redis's
/// `checkClientOutputBufferLimits`.
#[derive(Default)]
struct Obuf {
    /// Unix second the soft limit was first seen reached, while it stays reached.
    soft_since: Option<u64>,
}

impl Obuf {
    /// Whether `pending` bytes of output put the client over its limits (hard at once, soft when
    /// reached continuously for more than its seconds).
    fn over(&mut self, srv: &Server, info: &engine::clients::ClientInfo, pending: usize) -> bool {
        let used = engine::clients::reply_bytes(pending, info.rbs.load(Ordering::Relaxed)) as u64;
        srv.config.normal_obuf_limits().over(used, srv.clock.now_ms() / 1000, &mut self.soft_since)
    }
}

/// Moves the messages waiting in the client's outbox into `wbuf`; a RESP3 client gets the arrays
/// as pushes.
fn take_outbox(client: &Client, msgs: &mut Vec<Bytes>, wbuf: &mut BytesMut) {
    client.info.outbox.take(msgs);
    for m in msgs.drain(..) {
        engine::message::put_message(wbuf, client.proto, &m);
    }
}

/// EVAL or EVAL_RO, which a client in `SCRIPT DEBUG SYNC` mode runs under the debugger.
fn is_eval(args: &[Bytes]) -> bool {
    args.first().is_some_and(|n| n.eq_ignore_ascii_case(b"eval") || n.eq_ignore_ascii_case(b"eval_ro"))
}

/// Serves one connection until the peer closes, a protocol error, QUIT, CLIENT KILL or shutdown (which
/// kills every client).
pub async fn serve<S>(srv: Arc<Server>, aof: Arc<crate::aof::Aof>, stream: S, peer: String, local: String)
where
    S: AsyncRead + AsyncWrite + Unpin,
{
    let mut conn = Conn::new(srv, aof, stream, peer, local);
    let Err(Close) = conn.run().await;
    conn.srv.client_closed(&conn.client);
    for f in conn.on_close.drain(..) {
        f();
    }
}

/// The connection ends (why was logged where it was decided, when it is worth a line).
struct Close;

/// One step of a connection: go on, or close it.
type Step = Result<(), Close>;

/// A connection's state: its client, its socket halves and buffers.
struct Conn<S> {
    srv: Arc<Server>,
    aof: Arc<crate::aof::Aof>,
    client: Client,
    rd: ReadHalf<S>,
    wr: WriteHalf<S>,
    /// Rung by a kill, by messages arriving in the outbox, and by the server's cron asking for the
    /// query buffer back (`trim_qbuf`).
    kill: Arc<Notify>,
    /// Rung when a blocked client's wait has an outcome.
    unblock: Arc<Notify>,
    /// Messages taken from the outbox (the vector is reused).
    msgs: Vec<Bytes>,
    /// The query buffer.
    rbuf: BytesMut,
    /// Bytes were read into `rbuf` while replies were written (see `Input`).
    arrived: bool,
    /// Replies waiting to be written.
    wbuf: BytesMut,
    dec: RequestDecoder,
    obuf: Obuf,
    /// The largest the query buffer has been since the last resize pass.
    peak: usize,
    /// Whether the query buffer was given back while idle (it is allocated again by the next read).
    idle_released: bool,
    /// Turns of `run_buffered`'s loop still to run without a prefetch (`PREFETCH_REST`).
    prefetch_rest: u32,
    /// Requests decoded ahead of their turn, in order, with the position of each one's first key
    /// (`Conn::decode_ahead`).
    ready: VecDeque<(Vec<Bytes>, Option<usize>)>,
    /// The protocol error that ended decoding ahead: answered once the requests before it ran.
    ahead_error: Option<resp::ProtocolError>,
    /// Run once the connection closed and the server forgot its client (a replica's connection
    /// drops the full sync handed to it and not taken).
    on_close: Vec<Box<dyn FnOnce() + Send>>,
}

impl<S> Conn<S>
where
    S: AsyncRead + AsyncWrite + Unpin,
{
    /// Registers a client for the connection and the wakers that reach its task.
    fn new(srv: Arc<Server>, aof: Arc<crate::aof::Aof>, stream: S, peer: String, local: String) -> Conn<S> {
        let (rd, wr) = tokio::io::split(stream);
        // A Unix socket's clients are named by the socket's path (`path:0`); TCP peers are
        // `ip:port` and never start with '/'.
        let unix = peer.starts_with('/');
        let mut client = srv.new_client(peer, local);
        if unix {
            client.info.set_flag('U', true);
        }
        let kill = Arc::new(Notify::new());
        {
            let k = kill.clone();
            client.info.set_waker(Box::new(move || k.notify_one()));
        }
        let unblock = Arc::new(Notify::new());
        {
            let u = unblock.clone();
            client.block_waker = Some(Arc::new(move || u.notify_one()));
        }
        let wbuf = BytesMut::with_capacity(client.info.rbs.load(Ordering::Relaxed));
        Conn {
            srv,
            aof,
            client,
            rd,
            wr,
            kill,
            unblock,
            msgs: Vec::new(),
            rbuf: BytesMut::with_capacity(READ_CHUNK),
            arrived: false,
            wbuf,
            dec: RequestDecoder::new(),
            obuf: Obuf::default(),
            peak: 0,
            idle_released: false,
            prefetch_rest: 0,
            ready: VecDeque::new(),
            ahead_error: None,
            on_close: Vec::new(),
        }
    }

    /// The connection's loop: run what is buffered, write the replies, account for the buffers,
    /// read more. Returns only to close.
    async fn run(&mut self) -> Result<Infallible, Close> {
        loop {
            // What this thread allocated and freed so far counts in used_memory from here.
            crate::alloc::publish();
            self.run_buffered().await?;
            self.write_replies().await?;
            if let Some(job) = self.client.sync.take() {
                return self.serve_replica(job).await;
            }
            self.check_query_buffer_limit()?;
            self.resize_buffers();
            // Biased: the socket first, and the kill and MONITOR branches are polled (a Notify and a
            // channel registering this task) only when it has nothing to read. A client that always
            // has bytes ready (a large argument arriving) is still seen killed through the flag.
            if self.client.info.killed.load(Ordering::Relaxed) {
                return Err(Close);
            }
            self.prepare_read();
            // maxmemory-clients: this client's buffers as they are now count toward the limit, and
            // the largest clients are closed when all together are over it (this one included).
            if self.srv.client_memory(&self.client.info) {
                return Err(Close);
            }
            // Messages that arrived while the replies were written (their wake-up went to the write),
            // and requests read meanwhile, run before waiting for more.
            if self.client.info.outbox.pending() || std::mem::take(&mut self.arrived) {
                continue;
            }
            self.read_more().await?;
        }
    }

    /// Decodes and executes every complete request in the query buffer. A protocol error is
    /// answered, then closes the connection.
    async fn run_buffered(&mut self) -> Step {
        loop {
            // Between requests, with none decoded ahead: the next ones waiting whole in the buffer
            // are decoded and their keys' memory loaded ahead (`decode_ahead`). After a look that
            // found nothing worth loading (a small database, commands without keys), the next
            // `PREFETCH_REST` turns decode one request at a time.
            if self.ready.is_empty() && self.ahead_error.is_none() && !self.dec.in_progress() {
                if self.rbuf.is_empty() {
                    return Ok(());
                }
                if self.prefetch_rest > 0 {
                    self.prefetch_rest -= 1;
                } else {
                    self.decode_ahead();
                }
            }
            let args = match self.ready.pop_front() {
                Some((args, _)) => args,
                None => {
                    let decoded = match self.ahead_error.take() {
                        Some(e) => Err(e),
                        None => {
                            let limits = self.limits();
                            self.dec.decode(&mut self.rbuf, &limits)
                        }
                    };
                    match decoded {
                        Ok(Some(args)) => args,
                        Ok(None) => return Ok(()),
                        Err(e) => {
                            tracing::debug!(client = self.client.id, "protocol error: {e}");
                            let error = Frame::error(format!("ERR {}", e.message()));
                            resp::encode(&error, self.client.proto, &mut self.wbuf);
                            let _ = self.flush().await;
                            return Err(Close);
                        }
                    }
                }
            };
            self.run_request(&args).await?;
            self.dec.recycle(args);
            // SYNC / PSYNC: the connection is a replica's from here on (no request is decoded
            // ahead past it: `Server::look_ahead`).
            if self.client.sync.is_some() {
                return Ok(());
            }
        }
    }

    /// The decoder's limits for this client's next request.
    fn limits(&self) -> Limits {
        Limits {
            proto_max_bulk_len: self.srv.config.proto_max_bulk_len.load(Ordering::Relaxed),
            auth_required: !self.client.authenticated,
        }
    }

    /// Decodes the requests waiting whole in the buffer, up to a batch, before any of them runs,
    /// and starts loading the memory of their keys (`Server::prefetch`): Redis waits for each
    /// key's memory in turn, here the loads of a batch overlap. Decoding stops after a request
    /// whose running could change how the next ones decode (`Server::look_ahead`), and at a
    /// protocol error, which is answered when the requests before it have run. What is decoded
    /// ahead runs in order before anything else is decoded, so only the time of decoding moves.
    fn decode_ahead(&mut self) {
        let limits = self.limits();
        while self.ready.len() < PREFETCH_BATCH {
            match self.dec.decode(&mut self.rbuf, &limits) {
                Ok(Some(args)) => {
                    let ahead = self.srv.look_ahead(&self.client, &args);
                    self.ready.push_back((args, ahead.key));
                    if !ahead.decode_past {
                        break;
                    }
                }
                Ok(None) => break,
                Err(e) => {
                    self.ahead_error = Some(e);
                    break;
                }
            }
        }
        let keys = self.ready.iter().filter_map(|(args, key)| key.map(|k| &args[k][..]));
        if !self.srv.prefetch(&self.client, keys) {
            self.prefetch_rest = PREFETCH_REST;
        }
    }

    /// Executes one request (waiting while it is blocked) and queues its reply, with the messages
    /// that go before and after it.
    async fn run_request(&mut self, args: &[Bytes]) -> Step {
        let mut reply = if self.client.ldb_sync && is_eval(args) {
            self.execute_debugged(args).await?
        } else if let Some(node) = crate::consensus::node() {
            match node {
                Ok(node) => match crate::consensus::run(node, &self.srv, &mut self.client, args).await {
                    crate::consensus::Ran::Reply(reply) => reply,
                    crate::consensus::Ran::Waits(wait) => {
                        let reply = self.wait_lock(node, &wait).await?;
                        crate::consensus::with_reply_mode(&mut self.client, Some(reply))
                    }
                    crate::consensus::Ran::Blocks(block) => {
                        let reply = self.wait_ringing(node, block, args).await?;
                        crate::consensus::with_reply_mode(&mut self.client, Some(reply))
                    }
                },
                Err(loading) => Some(loading),
            }
        } else {
            self.srv.execute(&mut self.client, args)
        };
        // A blocking command that found nothing: wait for a writer to serve it, the timeout, or the
        // client to go away. Later pipelined commands wait behind it.
        while let Some(w) = self.client.blocked.clone() {
            reply = self.wait_unblocked(&w, args).await?;
        }
        if let Some(w) = self.client.wait_acks.take() {
            reply = Some(self.wait_acks(w, args).await?);
        }
        if std::mem::take(&mut self.client.shutdown_wait) {
            reply = self.wait_shutdown(args).await?;
        }
        // Messages the command sent this client (a subscription's confirmations, a message it
        // published to itself) go before its reply, as in Redis.
        if self.client.info.outbox.pending() {
            take_outbox(&self.client, &mut self.msgs, &mut self.wbuf);
        }
        if self.client.obuf_overflow {
            tracing::warn!(
                client = self.client.id,
                addr = %self.client.info.addr,
                "Client scheduled to be closed ASAP for overcoming of output buffer limits."
            );
            return Err(Close);
        }
        match reply {
            Some(Frame::Encoded(big)) if big.len() >= FLUSH_AT => self.send_large(&big).await?,
            Some(reply) => {
                resp::encode(&reply, self.client.proto, &mut self.wbuf);
                // The reply is in `wbuf` now: its frame (a copy of a large value, say) must not
                // wait beside it while a client that does not read holds the write back.
                drop(reply);
                self.check_output().await?;
            }
            None => {}
        }
        if let Some(line) = self.client.monitor_echo.take() {
            self.wbuf.extend_from_slice(&line);
        }
        // Invalidations its own command caused go after its reply.
        if !self.client.after_reply.is_empty() {
            for m in self.client.after_reply.drain(..) {
                engine::message::put_message(&mut self.wbuf, self.client.proto, &m);
            }
        }
        if self.client.close_after_reply || self.client.info.killed.load(Ordering::Relaxed) {
            let _ = self.flush().await;
            // SHUTDOWN: the client sees its connection close when the server is gone, after the
            // listeners closed (a reconnect is refused), as Redis exits under it.
            while self.client.shut_down_server && !self.client.info.killed.load(Ordering::Relaxed) {
                self.kill.notified().await;
            }
            return Err(Close);
        }
        Ok(())
    }

    /// Runs an EVAL under the Lua debugger (`SCRIPT DEBUG SYNC`): the script runs on a thread of its
    /// own while this one carries the debugger's lines to the client and its commands back, until
    /// the run ends. Like Redis's synchronous session, the connection is the debugger's meanwhile.
    async fn execute_debugged(&mut self, args: &[Bytes]) -> Result<Option<Frame>, Close> {
        self.flush().await?;
        let (out_tx, mut out_rx) = tokio::sync::mpsc::unbounded_channel::<Vec<u8>>();
        let (in_tx, in_rx) = std::sync::mpsc::channel::<Vec<u8>>();
        self.client.ldb_link = Some(engine::lua::DebugLink {
            send: Box::new(move |b| {
                let _ = out_tx.send(b);
            }),
            input: in_rx,
        });
        let Conn { srv, client, rd, wr, .. } = self;
        let srv: &Server = srv;
        let rt = tokio::runtime::Handle::current();
        let ran = tokio::task::block_in_place(|| {
            std::thread::scope(|scope| {
                let runner = scope.spawn(|| {
                    let reply = srv.execute(client, args);
                    // A run that never started its session drops the link here: the loop below ends.
                    client.ldb_link = None;
                    reply
                });
                rt.block_on(async {
                    let mut input = Some(in_tx);
                    let mut buf = vec![0u8; 1024];
                    let mut writable = true;
                    loop {
                        tokio::select! {
                            out = out_rx.recv() => match out {
                                Some(bytes) => {
                                    if writable && (wr.write_all(&bytes).await.is_err() || wr.flush().await.is_err()) {
                                        writable = false;
                                    }
                                }
                                None => break,
                            },
                            n = rd.read(&mut buf), if input.is_some() => match n {
                                Ok(n) if n > 0 => {
                                    if let Some(tx) = &input {
                                        let _ = tx.send(buf[..n].to_vec());
                                    }
                                }
                                // The client went away: the script runs on without stopping.
                                _ => input = None,
                            },
                        }
                    }
                });
                runner.join()
            })
        });
        match ran {
            Ok(reply) => Ok(reply),
            Err(p) => std::panic::resume_unwind(p),
        }
    }

    /// One wait of a blocked command: writes what is queued, waits for the outcome, and returns the
    /// reply (the command's own when it ran again, which may block it again).
    async fn wait_unblocked(&mut self, w: &Waiter, args: &[Bytes]) -> Result<Option<Frame>, Close> {
        if self.flush().await.is_err() {
            w.cancel();
            self.srv.unblocked(&mut self.client);
            return Err(Close);
        }
        // A reader blocked on a consensus node (XREAD ... BLOCK) is sent to the new leader once
        // this node no longer leads, unless it asked for READONLY, as Redis Cluster does.
        let redirect = match crate::consensus::node() {
            Some(Ok(node)) if !self.client.readonly => Some(Redirect { node, args, leadership: node.leadership() }),
            _ => None,
        };
        let outcome = self.wait_blocked(w, redirect).await;
        self.srv.unblocked(&mut self.client);
        match outcome {
            Blocked::Reply(f) => {
                // Served by another client's write.
                self.srv.count_blocked_reply(w, &f);
                self.client.wait_durable = true;
                Ok(Some(f))
            }
            Blocked::Retry => Ok(self.srv.execute(&mut self.client, args)),
            Blocked::Gone => Err(Close),
        }
    }

    /// SHUTDOWN while lagging replicas are waited for: blocked until the server exits (the
    /// connection then closes with it, as SHUTDOWN's does) or the shutdown fails or is aborted
    /// (an error reply). Bytes the client sends meanwhile are buffered.
    async fn wait_shutdown(&mut self, args: &[Bytes]) -> Result<Option<Frame>, Close> {
        use engine::server::shutdown::ShutdownPhase;
        if self.flush().await.is_err() {
            return Err(Close);
        }
        self.srv.mark_blocked(&mut self.client, args);
        let outcome = loop {
            match self.srv.shutdown_phase() {
                ShutdownPhase::Waiting { .. } => {}
                ShutdownPhase::Exiting => {
                    self.client.suppress_reply = true;
                    self.client.close_after_reply = true;
                    self.client.shut_down_server = true;
                    break Ok(None);
                }
                ShutdownPhase::Idle => break Ok(Some(Frame::error("ERR Errors trying to SHUTDOWN. Check logs."))),
            }
            if let Err(c) = self.wait_step(tokio::time::sleep(std::time::Duration::from_millis(10)), None).await {
                break Err(c);
            }
        };
        self.srv.unmark_blocked(&self.client);
        outcome
    }

    /// WAIT: waits until enough replicas acknowledged the offset or the deadline passes, and
    /// answers how many did. Bytes the client sends meanwhile are buffered, as for a blocked
    /// command.
    async fn wait_acks(&mut self, w: engine::client::WaitAcks, args: &[Bytes]) -> Result<Frame, Close> {
        if self.flush().await.is_err() {
            return Err(Close);
        }
        self.srv.wait_acks_begin(&mut self.client, args);
        let outcome = loop {
            let reached = self.srv.acks_reached(w.offset);
            let now = self.srv.clock.now_ms();
            if reached >= w.replicas || w.deadline.is_some_and(|d| now >= d) {
                break Ok(Frame::Integer(reached as i64));
            }
            let end = w
                .deadline
                .map(|d| tokio::time::Instant::now() + std::time::Duration::from_millis(d.saturating_sub(now)));
            if let Err(c) = self.wait_step(until(end), None).await {
                break Err(c);
            }
        };
        self.srv.wait_acks_end(&mut self.client);
        outcome
    }

    /// A `LOCK ... WAIT` that queued in consensus mode: waits until this node applied its outcome
    /// ([`crate::consensus::lock_outcome`]), what the client sends meanwhile buffered. A client
    /// that goes away, is killed or passes `client-query-buffer-limit` leaves the lock's queue
    /// ([`raft::Consensus::cancel_wait`]).
    async fn wait_lock(&mut self, node: &Arc<raft::Consensus>, wait: &raft::LockWait) -> Result<Frame, Close> {
        if self.flush().await.is_err() {
            node.cancel_wait(wait);
            return Err(Close);
        }
        let mut seen = (self.srv.clock.now_ms(), std::time::Instant::now());
        loop {
            let changed = wait.notified();
            tokio::pin!(changed);
            changed.as_mut().enable();
            if let Some(reply) = crate::consensus::lock_outcome(&self.srv, wait, &mut seen) {
                return Ok(reply);
            }
            // Rung by the apply that decides it; the poll notices raft time standing still.
            let timer = async {
                tokio::select! {
                    _ = &mut changed => {}
                    _ = tokio::time::sleep(std::time::Duration::from_millis(500)) => {}
                }
            };
            if self.wait_step(timer, None).await.is_err() {
                node.cancel_wait(wait);
                return Err(Close);
            }
        }
    }

    /// A blocking command that found nothing in consensus mode (a pop, XREADGROUP ... BLOCK):
    /// the client waits on this node as a ringing waiter (`Server::block_ringing`) until one of
    /// its keys can serve it, then its serve step is proposed through the log
    /// (`Consensus::serve`), again if what it found was taken first. It gets its timeout reply at
    /// its timeout (measured on this node), what CLIENT UNBLOCK gives it, or `-MOVED` to the new
    /// leader once this node no longer leads (as Redis Cluster redirects a blocked client whose
    /// slot moved). What the client sends meanwhile is buffered. A serve step proposed before the
    /// client went away still applies.
    async fn wait_ringing(
        &mut self,
        node: &Arc<raft::Consensus>,
        block: raft::BlockWait,
        args: &[Bytes],
    ) -> Result<Frame, Close> {
        if block.timeout == Some(std::time::Duration::ZERO) {
            return Ok(block.request.timeout_reply);
        }
        let end = block.timeout.map(|t| tokio::time::Instant::now() + t);
        let (db, keys) = (self.client.db, block.request.keys.clone());
        let w = match self.srv.block_ringing(&mut self.client, args, block.request) {
            Ok(w) => w,
            Err(e) => return Ok(e),
        };
        let outcome = self.ringing(node, &w, end, args).await;
        // The queues drop it; a ring it took and did not use goes to the next waiter.
        w.end();
        self.srv.unblocked(&mut self.client);
        self.srv.pass_on(db, &keys);
        let reply = outcome?;
        self.srv.count_blocked_reply(&w, &reply);
        self.client.wait_durable = true;
        Ok(reply)
    }

    /// The wait of [`Conn::wait_ringing`], until its reply (Err: the client is gone or killed).
    async fn ringing(
        &mut self,
        node: &Arc<raft::Consensus>,
        w: &Waiter,
        end: Option<tokio::time::Instant>,
        args: &[Bytes],
    ) -> Result<Frame, Close> {
        use engine::waiters::WaitState;
        self.flush().await?;
        let mut leadership = node.leadership();
        loop {
            if self.client.info.killed.load(Ordering::Relaxed) {
                return Err(Close);
            }
            let timed_out = end.is_some_and(|t| t <= tokio::time::Instant::now());
            match w.take() {
                // CLIENT UNBLOCK.
                WaitState::Served(f) => return Ok(f),
                WaitState::Rung(_) if timed_out => return Ok(w.timeout_reply.clone()),
                // One of its keys can serve it: the serve step through the log, again for the keys
                // written meanwhile while it finds nothing.
                WaitState::Rung(mut keys) => loop {
                    match node.serve(w.db, w.proto, &w.args, keys).await {
                        raft::Answer::Nothing(_) => match w.rest() {
                            Some(more) => keys = more,
                            None => break,
                        },
                        raft::Answer::Reply(f) => return Ok(f),
                        raft::Answer::Queued(_) => return Ok(w.timeout_reply.clone()),
                    }
                },
                WaitState::Done => return Ok(w.timeout_reply.clone()),
                WaitState::Waiting | WaitState::Claimed | WaitState::Running(_) | WaitState::Retry => {}
            }
            if let Some(moved) = node.moved_away(args)
                && w.cancel()
            {
                return Ok(moved);
            }
            if let Woke::Timer = self.wait_step(until(end), Some(&mut leadership)).await?
                && w.cancel()
            {
                return Ok(w.timeout_reply.clone());
            }
        }
    }

    /// One step of every wait a connection does (a blocked command, a ringing waiter, WAIT,
    /// SHUTDOWN, a queued `LOCK ... WAIT`): until CLIENT UNBLOCK or a writer rings it, `timer` ends
    /// (`Woke::Timer`), the node's leadership changes (when `leadership` is given), or bytes
    /// arrive (buffered for after the wait, as Redis does not run them). Err once the client is
    /// killed, goes away or passes `client-query-buffer-limit`; the caller then drops its wait.
    async fn wait_step(
        &mut self,
        timer: impl std::future::Future<Output = ()>,
        leadership: Option<&mut tokio::sync::watch::Receiver<(bool, Option<u64>)>>,
    ) -> Result<Woke, Close> {
        let led = async {
            let changed = match leadership {
                Some(l) => l.changed().await.is_ok(),
                None => false,
            };
            if !changed {
                std::future::pending::<()>().await;
            }
        };
        self.rbuf.reserve(READ_CHUNK);
        tokio::select! {
            _ = self.unblock.notified() => {}
            _ = led => {}
            _ = timer => return Ok(Woke::Timer),
            _ = self.kill.notified() => if self.client.info.killed.load(Ordering::Relaxed) { return Err(Close) },
            r = self.rd.read_buf(&mut self.rbuf) => match r {
                Ok(0) | Err(_) => return Err(Close),
                Ok(n) => {
                    self.srv.stats.add_net_input(n as u64);
                    self.check_query_buffer_limit()?;
                }
            },
        }
        Ok(Woke::Other)
    }

    /// Waits for a blocked client's outcome (see [`Conn::wait_step`] for what it does meanwhile).
    async fn wait_blocked(&mut self, w: &Waiter, mut redirect: Option<Redirect<'_>>) -> Blocked {
        use engine::waiters::WaitState;
        // The deadline is on the server's clock, which in consensus mode is raft time: it moves only
        // with entries, so the time left is taken once and counted on this node.
        let end = w.deadline.map(|d| {
            tokio::time::Instant::now() + std::time::Duration::from_millis(d.saturating_sub(self.srv.clock.now_ms()))
        });
        loop {
            match w.take() {
                WaitState::Served(f) => return Blocked::Reply(f),
                WaitState::Retry => return Blocked::Retry,
                WaitState::Done => return Blocked::Reply(w.timeout_reply.clone()),
                // Rung and running are a ringing waiter's (`Conn::wait_ringing`), never this one's.
                WaitState::Waiting | WaitState::Claimed | WaitState::Rung(_) | WaitState::Running(_) => {}
            }
            if let Some(r) = &redirect
                && let Some(moved) = r.node.moved_away(r.args)
                && w.cancel()
            {
                return Blocked::Reply(moved);
            }
            match self.wait_step(until(end), redirect.as_mut().map(|r| &mut r.leadership)).await {
                Err(Close) => {
                    w.cancel();
                    return Blocked::Gone;
                }
                // Unless a writer is serving it right now: its outcome is coming.
                Ok(Woke::Timer) if w.cancel() => return Blocked::Reply(w.timeout_reply.clone()),
                Ok(_) => {}
            }
        }
    }

    /// A large reply built as its wire bytes (resp::BulkArray) goes out as it is, after what is
    /// buffered, rather than through a copy into `wbuf` (unless a hard limit holds replies back).
    async fn send_large(&mut self, big: &[u8]) -> Step {
        let pending = self.wbuf.len() + big.len();
        if self.obuf.over(&self.srv, &self.client.info, pending) {
            return Err(self.over_output_limit(pending));
        }
        if self.srv.config.normal_obuf_limits().hard == 0 {
            self.flush().await?;
            let input = Input { rd: &mut self.rd, rbuf: &mut self.rbuf, open: true, arrived: &mut self.arrived };
            write_out(&self.srv, &self.client.info, &self.kill, &mut self.wr, big, input).await.map_err(|_| Close)
        } else {
            self.wbuf.extend_from_slice(big);
            Ok(())
        }
    }

    /// After a reply was queued: closes a client over its output limits, and without a hard limit
    /// writes out a large batch before more requests run.
    async fn check_output(&mut self) -> Step {
        if self.wbuf.len() > REPLY_CHUNK {
            if self.obuf.over(&self.srv, &self.client.info, self.wbuf.len()) {
                return Err(self.over_output_limit(self.wbuf.len()));
            }
            if self.wbuf.len() >= FLUSH_AT && self.srv.config.normal_obuf_limits().hard == 0 {
                self.flush().await?;
            }
        }
        Ok(())
    }

    /// Logs why a client with `pending` bytes of output is closed.
    fn over_output_limit(&self, pending: usize) -> Close {
        tracing::warn!(
            client = self.client.id,
            addr = %self.client.info.addr,
            omem = engine::clients::reply_bytes(pending, self.client.info.rbs.load(Ordering::Relaxed)),
            "Client scheduled to be closed ASAP for overcoming of output buffer limits."
        );
        Close
    }

    /// Writes the batch's replies and the messages waiting in the outbox.
    async fn write_replies(&mut self) -> Step {
        if self.client.info.outbox.pending() {
            take_outbox(&self.client, &mut self.msgs, &mut self.wbuf);
        }
        if !self.wbuf.is_empty() {
            // Let the other connections whose requests are ready run first, then write: tokio runs a
            // yielded task after its next look at the sockets, so replies go out in a burst after a
            // pass over every ready client, as Redis writes them all in `beforeSleep`. Writing at
            // once woke the client process for each reply: the kernel's share of the server's CPU
            // fell from 34% to 23% with the yield, and EVALSHA at -P 16 went from 0.99x to 1.2x
            // Redis's rate (docs/performance.md).
            tokio::task::yield_now().await;
            self.flush().await?;
        }
        Ok(())
    }

    /// Closes a client whose query buffer is over `client-query-buffer-limit`.
    fn check_query_buffer_limit(&self) -> Step {
        let limit = self.srv.config.client_query_buffer_limit.load(Ordering::Relaxed).max(0) as usize;
        if self.rbuf.len() > limit {
            tracing::warn!(
                client = self.client.id,
                addr = %self.client.info.addr,
                qbuf = self.rbuf.len(),
                "closing client that reached max query buffer length"
            );
            return Err(Close);
        }
        Ok(())
    }

    /// Between batches: the buffers take the sizes their use calls for.
    fn resize_buffers(&mut self) {
        let info = &self.client.info;
        info.qbuf.store(self.rbuf.len(), Ordering::Relaxed);
        // The query buffer follows its recent peak (Redis's clientsCronResizeQueryBuffer): one
        // over 32 KiB whose half is more than the largest request seen since the last pass shrinks
        // to that peak, and the cron asks for an idle client's drained buffer back.
        // Idle: the reply buffer takes the size the cron chose.
        if self.wbuf.is_empty() && self.wbuf.capacity() != info.rbs.load(Ordering::Relaxed) {
            fit_reply_buffer(info, &mut self.wbuf, true);
        }
        let rbuf = &mut self.rbuf;
        if info.trim_qbuf.swap(false, Ordering::Relaxed) && rbuf.is_empty() {
            *rbuf = BytesMut::new();
            self.idle_released = true;
        } else if self.dec.pending_bulk_remaining(rbuf).is_none() {
            // (An argument still arriving keeps the room made for it: `prepare_read`.)
            shrink_to_peak(rbuf, self.peak);
        }
        self.peak = rbuf.len();
    }

    /// Makes room for the next read and publishes the query buffer's size for CLIENT LIST.
    fn prepare_read(&mut self) {
        if !self.idle_released {
            let rest = self.dec.pending_bulk_remaining(&self.rbuf).unwrap_or(0);
            let (len, free) = (self.rbuf.len(), self.rbuf.capacity() - self.rbuf.len());
            if rest > 0 && len + rest >= resp::PROTO_MBULK_BIG_ARG {
                // A large argument arriving (it is split off the buffer whole): room for exactly
                // what it still needs, as Redis's `sdsMakeRoomForNonGreedy`, not the doubling
                // `reserve` chooses (the query buffer counts toward maxmemory-clients).
                if free < rest {
                    let mut exact = BytesMut::with_capacity(len + rest);
                    exact.extend_from_slice(&self.rbuf);
                    self.rbuf = exact;
                }
            } else {
                self.rbuf.reserve(rest.max(READ_CHUNK));
            }
        }
        self.client.info.qbuf_cap.store(self.rbuf.capacity(), Ordering::Relaxed);
        self.client.info.argv_mem.store(self.dec.pending_args_bytes(), Ordering::Relaxed);
    }

    /// Waits for bytes from the client, or a wake-up: a kill, messages in the outbox, or the
    /// server's cron asking for the query buffer back (`trim_qbuf`).
    async fn read_more(&mut self) -> Step {
        tokio::select! {
            biased;
            r = self.rd.read_buf(&mut self.rbuf) => match r {
                Ok(0) | Err(_) => return Err(Close),
                Ok(n) => {
                    self.srv.stats.add_net_input(n as u64);
                    self.peak = self.peak.max(self.rbuf.len());
                    self.idle_released = false;
                }
            },
            _ = self.kill.notified() => if self.client.info.killed.load(Ordering::Relaxed) { return Err(Close) },
        }
        Ok(())
    }

    /// Writes out `wbuf` and empties it.
    async fn flush(&mut self) -> Step {
        let input = Input { rd: &mut self.rd, rbuf: &mut self.rbuf, open: true, arrived: &mut self.arrived };
        flush(
            &self.srv,
            &self.aof,
            &self.client.info,
            &mut self.client.wait_durable,
            &self.kill,
            &mut self.wr,
            &mut self.wbuf,
            input,
        )
        .await
        .map_err(|_| Close)
    }
}

/// How a blocked client's wait ended.
enum Blocked {
    /// Served by a writer, or timed out: send this.
    Reply(Frame),
    /// Run the command again (its serve step needed locks the writer could not take).
    Retry,
    /// The client disconnected, was killed, or the server is stopping.
    Gone,
}

/// Sleeps until `end`, or forever without one.
async fn until(end: Option<tokio::time::Instant>) {
    match end {
        Some(t) => tokio::time::sleep_until(t).await,
        None => std::future::pending().await,
    }
}

/// What ended a [`Conn::wait_step`] that did not end the wait.
enum Woke {
    /// Its timer.
    Timer,
    /// Anything else: a ring, CLIENT UNBLOCK, a leadership change, bytes from the client.
    Other,
}

/// A client blocked on a consensus node, answered `-MOVED` once the node no longer leads (see
/// [`raft::Consensus::moved_away`]).
struct Redirect<'a> {
    node: &'a raft::Consensus,
    /// The blocked command.
    args: &'a [Bytes],
    /// Changes when the node's leadership does.
    leadership: tokio::sync::watch::Receiver<(bool, Option<u64>)>,
}

/// The client's side of a connection while its output is written: what it sends meanwhile is read
/// into its query buffer (to run after the write), as Redis keeps reading a client whose output is
/// pending. A client that pipelines a long batch before reading any reply would otherwise wait on
/// the server while the server waits on it, once the sockets' buffers are full.
struct Input<'a, R> {
    rd: &'a mut R,
    rbuf: &'a mut BytesMut,
    /// Still reading (false once the client closed its side or a read failed: the connection's
    /// next read sees it).
    open: bool,
    /// Set when bytes arrived: the connection runs them before it waits for more.
    arrived: &'a mut bool,
}

impl<R: AsyncRead + Unpin> Input<'_, R> {
    /// Reads what the client sent into the query buffer. Err when the query buffer passes
    /// `client-query-buffer-limit` (the client is closed, as its next read would close it).
    async fn read(&mut self, srv: &Server, info: &engine::clients::ClientInfo) -> std::io::Result<()> {
        if self.rbuf.capacity() - self.rbuf.len() < READ_CHUNK / 4 {
            self.rbuf.reserve(READ_CHUNK);
        }
        match self.rd.read_buf(self.rbuf).await {
            Ok(0) | Err(_) => self.open = false,
            Ok(n) => {
                *self.arrived = true;
                srv.stats.add_net_input(n as u64);
                info.qbuf.store(self.rbuf.len(), Ordering::Relaxed);
                info.qbuf_cap.store(self.rbuf.capacity(), Ordering::Relaxed);
                let limit = srv.config.client_query_buffer_limit.load(Ordering::Relaxed).max(0) as usize;
                if self.rbuf.len() > limit {
                    tracing::warn!(
                        client = info.id,
                        addr = %info.addr,
                        qbuf = self.rbuf.len(),
                        "closing client that reached max query buffer length"
                    );
                    return Err(std::io::ErrorKind::ConnectionAborted.into());
                }
                // maxmemory-clients: the output still waiting (`omem`) and what arrived meanwhile
                // count now, not when the write is done; over the limit, the largest clients go.
                if srv.client_memory(info) {
                    return Err(std::io::ErrorKind::ConnectionAborted.into());
                }
            }
        }
        Ok(())
    }
}

/// Writes `out`; while the client is not reading, CLIENT LIST's `omem` counts what is still waiting
/// (as Redis's reply nodes: [`engine::clients::reply_bytes`]), and what the client sends is read into its query buffer
/// (`input`).
/// A client killed meanwhile (CLIENT KILL, a MONITOR over its limit, shutdown) stops the write.
async fn write_out<W: AsyncWrite + Unpin, R: AsyncRead + Unpin>(
    srv: &Server,
    info: &engine::clients::ClientInfo,
    kill: &Notify,
    wr: &mut W,
    out: &[u8],
    mut input: Input<'_, R>,
) -> std::io::Result<()> {
    let mut r = Ok(());
    let mut off = 0;
    while off < out.len() {
        info.omem.store(out.len() - off, Ordering::Relaxed);
        // maxmemory-clients: a large output counts before it waits on the client, as Redis weighs
        // a client's replies as they are added; over the limit, the largest clients go.
        if out.len() - off > REPLY_CHUNK && srv.config.clients_memory_limit() != 0 && srv.client_memory(info) {
            r = Err(std::io::ErrorKind::ConnectionAborted.into());
            break;
        }
        let wrote = tokio::select! {
            biased;
            w = wr.write(&out[off..]) => w,
            _ = kill.notified() => {
                if info.killed.load(Ordering::Relaxed) {
                    Err(std::io::ErrorKind::ConnectionAborted.into())
                } else {
                    continue;
                }
            }
            read = input.read(srv, info), if input.open => match read {
                Ok(()) => continue,
                Err(e) => Err(e),
            },
        };
        match wrote {
            Ok(0) => {
                r = Err(std::io::ErrorKind::WriteZero.into());
                break;
            }
            Ok(w) => off += w,
            Err(e) => {
                r = Err(e);
                break;
            }
        }
    }
    info.omem.store(0, Ordering::Relaxed);
    srv.stats.add_net_output(off as u64);
    r
}

/// Writes out `wbuf` and empties it.
#[allow(clippy::too_many_arguments)]
async fn flush<W: AsyncWrite + Unpin, R: AsyncRead + Unpin>(
    srv: &Server,
    aof: &crate::aof::Aof,
    info: &engine::clients::ClientInfo,
    wait_durable: &mut bool,
    kill: &Notify,
    wr: &mut W,
    wbuf: &mut BytesMut,
    input: Input<'_, R>,
) -> std::io::Result<()> {
    if wbuf.is_empty() {
        return Ok(());
    }
    // `appendfsync always`: no reply of a command that ran goes out before everything it wrote or
    // could have read is on disk; `everysec` and `no`: before it is written to the file (a killed
    // process loses nothing acknowledged). Replies of rejected commands (MISCONF while the disk is
    // full, arity and auth errors) show no data and do not wait.
    if std::mem::take(wait_durable) {
        if srv.config.appendfsync_always.load(Ordering::Relaxed) {
            aof.durable().await;
        } else {
            aof.write_through();
        }
    }
    // The reply buffer's peak: what it held, up to its size (Redis's buf_peak of its static buffer;
    // beyond that, Redis's replies go to its reply list).
    // Only this task raises the peak (the cron resets it), so no read-modify-write is needed.
    let peak = wbuf.len().min(info.rbs.load(Ordering::Relaxed));
    if peak > info.rbp.load(Ordering::Relaxed) {
        info.rbp.store(peak, Ordering::Relaxed);
    }
    let r = write_out(srv, info, kill, wr, wbuf, input).await;
    fit_reply_buffer(info, wbuf, false);
    r
}

/// Empties `wbuf`, and gives it the size the cron chose (`rbs`) when it is smaller than that or
/// larger than it may stay: twice `rbs` for an idle client, [`KEEP_BUF`] between the replies of a
/// busy one (a buffer that grew for a burst is kept for the next).
fn fit_reply_buffer(info: &engine::clients::ClientInfo, wbuf: &mut BytesMut, idle: bool) {
    let rbs = info.rbs.load(Ordering::Relaxed);
    let keep = if idle { 2 * rbs } else { KEEP_BUF.max(rbs) };
    let cap = wbuf.capacity();
    if cap < rbs || cap > keep {
        *wbuf = BytesMut::with_capacity(rbs);
    } else {
        wbuf.clear();
    }
}
