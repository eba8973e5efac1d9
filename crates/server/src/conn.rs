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

use bytes::BytesMut;
use engine::server::Server;
use resp::{Frame, Limits, RequestDecoder};
use std::sync::Arc;
use std::sync::atomic::Ordering;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::sync::Notify;

const READ_CHUNK: usize = 16 * 1024;
/// Write buffers larger than this are released once written.
const KEEP_BUF: usize = 64 * 1024;
/// A query buffer over this size shrinks to its recent peak (Redis's `PROTO_RESIZE_THRESHOLD`).
const RESIZE_THRESHOLD: usize = 32 * 1024;
/// Redis's per-client static reply buffer (`PROTO_REPLY_CHUNK_BYTES`): only output beyond it counts
/// against `client-output-buffer-limit` (and shows as `omem`).
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
    fn over(&mut self, srv: &Server, pending: usize) -> bool {
        let used = pending.saturating_sub(REPLY_CHUNK) as u64;
        srv.config.normal_obuf_limits().over(used, srv.clock.now_ms() / 1000, &mut self.soft_since)
    }
}

/// Moves the messages waiting in the client's outbox into `wbuf`; a RESP3 client gets the arrays
/// as pushes.
fn take_outbox(client: &engine::client::Client, msgs: &mut Vec<bytes::Bytes>, wbuf: &mut BytesMut) {
    client.info.outbox.take(msgs);
    for m in msgs.drain(..) {
        engine::pubsub::put_message(wbuf, client.proto, &m);
    }
}

/// Serves one connection until the peer closes, a protocol error, QUIT, CLIENT KILL or shutdown (which
/// kills every client).
pub async fn serve<S>(srv: Arc<Server>, aof: Arc<crate::aof::Aof>, stream: S, peer: String, local: String)
where
    S: AsyncRead + AsyncWrite + Unpin,
{
    let (mut rd, mut wr) = tokio::io::split(stream);
    let mut client = srv.new_client(peer, local);
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
    // Messages taken from the outbox (the vector is reused).
    let mut msgs: Vec<bytes::Bytes> = Vec::new();
    let mut rbuf = BytesMut::with_capacity(READ_CHUNK);
    let mut wbuf = BytesMut::with_capacity(client.info.rbs.load(Ordering::Relaxed));
    let mut dec = RequestDecoder::new();
    let mut obuf = Obuf::default();
    // The largest the query buffer has been since the last resize pass, and whether the buffer was
    // given back while idle (it is allocated again by the next read).
    let mut peak = 0usize;
    let mut idle_released = false;
    'conn: loop {
        // What this thread allocated and freed so far counts in used_memory from here.
        crate::alloc::publish();
        // Execute everything already buffered.
        loop {
            let limits = Limits {
                proto_max_bulk_len: srv.config.proto_max_bulk_len.load(Ordering::Relaxed),
                auth_required: !client.authenticated,
            };
            match dec.decode(&mut rbuf, &limits) {
                Ok(Some(args)) => {
                    let mut reply = srv.execute(&mut client, &args);
                    // A blocking command that found nothing: wait for a writer to serve it, the
                    // timeout, or the client to go away. Later pipelined commands wait behind it.
                    while let Some(w) = client.blocked.clone() {
                        if flush(&srv, &aof, &client.info, &mut client.wait_durable, &kill, &mut wr, &mut wbuf)
                            .await
                            .is_err()
                        {
                            w.cancel();
                            srv.unblocked(&mut client);
                            break 'conn;
                        }
                        let outcome =
                            wait_blocked(&srv, &w, &mut rd, &mut rbuf, &unblock, &kill, &client.info.killed).await;
                        srv.unblocked(&mut client);
                        match outcome {
                            Blocked::Reply(f) => {
                                // Served by another client's write.
                                client.wait_durable = true;
                                reply = Some(f);
                            }
                            Blocked::Retry => reply = srv.execute(&mut client, &args),
                            Blocked::Gone => break 'conn,
                        }
                    }
                    // Messages the command sent this client (a subscription's confirmations, a
                    // message it published to itself) go before its reply, as in Redis.
                    if client.info.outbox.pending() {
                        take_outbox(&client, &mut msgs, &mut wbuf);
                    }
                    if client.obuf_overflow {
                        tracing::warn!(
                            client = client.id,
                            addr = %client.info.addr,
                            "Client scheduled to be closed ASAP for overcoming of output buffer limits."
                        );
                        break 'conn;
                    }
                    if let Some(Frame::Encoded(big)) = &reply
                        && big.len() >= FLUSH_AT
                    {
                        // A large reply built as its wire bytes (resp::BulkArray) goes out as it is,
                        // after what is buffered, rather than through a copy into `wbuf`.
                        if obuf.over(&srv, wbuf.len() + big.len()) {
                            tracing::warn!(
                                client = client.id,
                                addr = %client.info.addr,
                                omem = wbuf.len() + big.len() - REPLY_CHUNK,
                                "Client scheduled to be closed ASAP for overcoming of output buffer limits."
                            );
                            break 'conn;
                        }
                        if srv.config.normal_obuf_limits().hard == 0 {
                            if flush(&srv, &aof, &client.info, &mut client.wait_durable, &kill, &mut wr, &mut wbuf)
                                .await
                                .is_err()
                                || write_out(&srv, &client.info, &kill, &mut wr, big).await.is_err()
                            {
                                break 'conn;
                            }
                        } else {
                            wbuf.extend_from_slice(big);
                        }
                    } else if let Some(reply) = reply {
                        resp::encode(&reply, client.proto, &mut wbuf);
                        if wbuf.len() > REPLY_CHUNK {
                            if obuf.over(&srv, wbuf.len()) {
                                tracing::warn!(
                                    client = client.id,
                                    addr = %client.info.addr,
                                    omem = wbuf.len() - REPLY_CHUNK,
                                    "Client scheduled to be closed ASAP for overcoming of output buffer limits."
                                );
                                break 'conn;
                            }
                            if wbuf.len() >= FLUSH_AT
                                && srv.config.normal_obuf_limits().hard == 0
                                && flush(&srv, &aof, &client.info, &mut client.wait_durable, &kill, &mut wr, &mut wbuf)
                                    .await
                                    .is_err()
                            {
                                break 'conn;
                            }
                        }
                    }
                    if let Some(line) = client.monitor_echo.take() {
                        wbuf.extend_from_slice(&line);
                    }
                    // Invalidations its own command caused go after its reply.
                    for m in client.after_reply.drain(..) {
                        engine::pubsub::put_message(&mut wbuf, client.proto, &m);
                    }
                    if client.close_after_reply || client.info.killed.load(Ordering::Relaxed) {
                        let _ =
                            flush(&srv, &aof, &client.info, &mut client.wait_durable, &kill, &mut wr, &mut wbuf).await;
                        break 'conn;
                    }
                }
                Ok(None) => break,
                Err(e) => {
                    tracing::debug!(client = client.id, "protocol error: {e}");
                    resp::encode(&Frame::error(format!("ERR {}", e.message())), client.proto, &mut wbuf);
                    let _ = flush(&srv, &aof, &client.info, &mut client.wait_durable, &kill, &mut wr, &mut wbuf).await;
                    break 'conn;
                }
            }
        }
        if client.info.outbox.pending() {
            take_outbox(&client, &mut msgs, &mut wbuf);
        }
        if !wbuf.is_empty() {
            // Let the other connections whose requests are ready run first, then write: tokio runs a
            // yielded task after its next look at the sockets, so replies go out in a burst after a
            // pass over every ready client, as Redis writes them all in `beforeSleep`. Writing at
            // once woke the client process for each reply: the kernel's share of the server's CPU
            // fell from 34% to 23% with the yield, and EVALSHA at -P 16 went from 0.99x to 1.2x
            // Redis's rate (docs/performance.md).
            tokio::task::yield_now().await;
            if flush(&srv, &aof, &client.info, &mut client.wait_durable, &kill, &mut wr, &mut wbuf).await.is_err() {
                break;
            }
        }
        let limit = srv.config.client_query_buffer_limit.load(Ordering::Relaxed).max(0) as usize;
        if rbuf.len() > limit {
            tracing::warn!(client = client.id, addr = %client.info.addr, qbuf = rbuf.len(), "closing client that reached max query buffer length");
            break;
        }
        client.info.qbuf.store(rbuf.len(), Ordering::Relaxed);
        // The query buffer follows its recent peak (Redis's clientsCronResizeQueryBuffer): one
        // over 32 KiB whose half is more than the largest request seen since the last pass shrinks
        // to that peak, and the cron asks for an idle client's drained buffer back.
        // Idle: the reply buffer takes the size the cron chose.
        if wbuf.is_empty() && wbuf.capacity() != client.info.rbs.load(Ordering::Relaxed) {
            fit_reply_buffer(&client.info, &mut wbuf, true);
        }
        if client.info.trim_qbuf.swap(false, Ordering::Relaxed) && rbuf.is_empty() {
            rbuf = BytesMut::new();
            idle_released = true;
        } else if rbuf.capacity() > RESIZE_THRESHOLD
            && rbuf.capacity() - rbuf.len() > 4096
            && rbuf.capacity() / 2 > peak
        {
            let mut smaller = BytesMut::with_capacity(peak.max(rbuf.len()));
            smaller.extend_from_slice(&rbuf);
            rbuf = smaller;
        }
        peak = rbuf.len();
        // Biased: the socket first, and the kill and MONITOR branches are polled (a Notify and a
        // channel registering this task) only when it has nothing to read. A client that always has
        // bytes ready (a large argument arriving) is still seen killed through the flag.
        if client.info.killed.load(Ordering::Relaxed) {
            break;
        }
        if !idle_released {
            let want = dec.pending_bulk_remaining(&rbuf).unwrap_or(0).max(READ_CHUNK);
            rbuf.reserve(want);
        }
        client.info.qbuf_cap.store(rbuf.capacity(), Ordering::Relaxed);
        client.info.argv_mem.store(dec.pending_args_bytes(), Ordering::Relaxed);
        // maxmemory-clients: this client's buffers as they are now count toward the limit, and
        // the largest clients are closed when all together are over it (this one included).
        if srv.client_memory(&client.info) {
            break;
        }
        // Messages that arrived while the replies were written (their wake-up went to the write).
        if client.info.outbox.pending() {
            continue;
        }
        tokio::select! {
            biased;
            r = rd.read_buf(&mut rbuf) => match r {
                Ok(0) | Err(_) => break,
                Ok(n) => {
                    srv.stats.add_net_input(n as u64);
                    peak = peak.max(rbuf.len());
                    idle_released = false;
                }
            },
            // A kill, messages in the outbox, or the server's cron asking for the query buffer
            // back (`trim_qbuf`).
            _ = kill.notified() => if client.info.killed.load(Ordering::Relaxed) { break },
        }
    }
    srv.client_closed(&client);
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

/// Waits for a blocked client's outcome. Bytes the client sends meanwhile are buffered (Redis does
/// not run them until it is unblocked), which is also how a disconnect is noticed.
async fn wait_blocked<R: AsyncRead + Unpin>(
    srv: &Server,
    w: &engine::waiters::Waiter,
    rd: &mut R,
    rbuf: &mut BytesMut,
    unblock: &Notify,
    kill: &Notify,
    killed: &std::sync::atomic::AtomicBool,
) -> Blocked {
    use engine::waiters::WaitState;
    loop {
        match w.take() {
            WaitState::Served(f) => return Blocked::Reply(f),
            WaitState::Retry => return Blocked::Retry,
            WaitState::Done => return Blocked::Reply(w.timeout_reply.clone()),
            WaitState::Waiting | WaitState::Claimed => {}
        }
        let left = w.deadline.map(|d| d.saturating_sub(srv.clock.now_ms()));
        let timer = async {
            match left {
                Some(ms) => tokio::time::sleep(std::time::Duration::from_millis(ms)).await,
                None => std::future::pending().await,
            }
        };
        rbuf.reserve(READ_CHUNK);
        tokio::select! {
            _ = unblock.notified() => {}
            _ = timer => {
                if w.cancel() {
                    return Blocked::Reply(w.timeout_reply.clone());
                }
                // A writer is serving it right now: its outcome is coming.
            }
            _ = kill.notified() => if killed.load(Ordering::Relaxed) { w.cancel(); return Blocked::Gone; },
            r = rd.read_buf(rbuf) => match r {
                Ok(0) | Err(_) => { w.cancel(); return Blocked::Gone; }
                Ok(n) => {
                    srv.stats.add_net_input(n as u64);
                    let limit = srv.config.client_query_buffer_limit.load(Ordering::Relaxed).max(0) as usize;
                    if rbuf.len() > limit {
                        w.cancel();
                        return Blocked::Gone;
                    }
                }
            },
        }
    }
}

/// Writes `out`; while the client is not reading, CLIENT LIST's `omem` shows what is still waiting
/// beyond Redis's static reply buffer.
/// A client killed meanwhile (CLIENT KILL, a MONITOR over its limit, shutdown) stops the write.
async fn write_out<W: AsyncWrite + Unpin>(
    srv: &Server,
    info: &engine::clients::ClientInfo,
    kill: &Notify,
    wr: &mut W,
    out: &[u8],
) -> std::io::Result<()> {
    let mut r = Ok(());
    let mut off = 0;
    while off < out.len() {
        info.omem.store((out.len() - off).saturating_sub(REPLY_CHUNK), Ordering::Relaxed);
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
async fn flush<W: AsyncWrite + Unpin>(
    srv: &Server,
    aof: &crate::aof::Aof,
    info: &engine::clients::ClientInfo,
    wait_durable: &mut bool,
    kill: &Notify,
    wr: &mut W,
    wbuf: &mut BytesMut,
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
    let r = write_out(srv, info, kill, wr, wbuf).await;
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
