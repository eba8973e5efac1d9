//! A replica's connection, the primary's side: after SYNC or PSYNC the connection sends the
//! replica its full sync (the fork-less snapshot, as `$<len>` and the file, or diskless as
//! `$EOF:<mark>`, the file and the mark) or nothing (a partial resync), then the replication stream
//! from its offset, as it grows. What the replica sends (`REPLCONF ACK`) runs as commands whose
//! replies are dropped, as Redis writes nothing to a replica.

use super::{Close, Conn, Step};
use bytes::Bytes;
use engine::repl::{Behind, SyncJob};
use parking_lot::Mutex;
use std::collections::HashMap;
use std::convert::Infallible;
use std::io::Write;
use std::sync::LazyLock;
use std::sync::atomic::Ordering;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::sync::mpsc::{Receiver, Sender, channel};

/// Most stream bytes written in one go.
const STREAM_CHUNK: usize = 256 * 1024;

/// Snapshot chunks queued per replica before the writer waits for it.
const CHUNKS_QUEUED: usize = 8;

/// What the writer of a diskless full sync sends each replica taking it.
enum Feed {
    /// The next bytes of the file.
    Chunk(Bytes),
    /// The end: the whole file was written (true), or the write failed.
    End(bool),
}

/// A diskless full sync's file, as it is written on a blocking thread, to every replica taking it
/// (Redis's one child writing to all the replicas that waited together). A replica that goes away
/// drops out; the write fails only when none is left.
struct FanOut {
    to: Vec<Sender<Feed>>,
    buf: Vec<u8>,
}

impl FanOut {
    fn send(&mut self, f: impl Fn() -> Feed) -> std::io::Result<()> {
        self.to.retain(|tx| tx.blocking_send(f()).is_ok());
        if self.to.is_empty() {
            tracing::warn!(
                "Diskless rdb transfer, last replica dropped, killing fork child (the snapshot's writer stops)."
            );
            Err(std::io::Error::other("every replica went away"))
        } else {
            Ok(())
        }
    }
}

impl Write for FanOut {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.buf.extend_from_slice(buf);
        if self.buf.len() >= 64 * 1024 {
            self.flush()?;
        }
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        if !self.buf.is_empty() {
            let chunk = Bytes::from(std::mem::take(&mut self.buf));
            self.send(|| Feed::Chunk(chunk.clone()))?;
        }
        Ok(())
    }
}

/// A full sync another replica's connection started, handed to a replica that waited for one:
/// its `+FULLRESYNC` line (to PSYNC), the sync's offset, and the file.
struct Joined {
    line: Option<String>,
    offset: u64,
    file: SyncFile,
}

/// The file of a full sync handed over.
enum SyncFile {
    /// A diskless one's, as it comes.
    Diskless(Receiver<Feed>),
    /// A disk-based one's, written (and unlinked): the open handle and the length.
    Disk(std::sync::Arc<std::fs::File>, u64),
}

/// The syncs handed over and not yet taken, by (server, client id): the waiting connection takes
/// its own when woken.
static JOINED: LazyLock<Mutex<HashMap<(usize, u64), Joined>>> = LazyLock::new(Default::default);

/// Hands `joined` to the waiting connection of joiner `j` and wakes it. A connection that closed
/// meanwhile will not take it (it forgot its entry before this one was made): dropped here, so a
/// diskless writer does not wait for it.
fn hand_over(srv: &std::sync::Arc<engine::server::Server>, j: engine::repl::Joiner, joined: Joined) {
    let key = (std::sync::Arc::as_ptr(srv) as usize, j.info.id);
    JOINED.lock().insert(key, joined);
    if !srv.repl.knows(j.info.id) {
        JOINED.lock().remove(&key);
    }
    j.info.wake();
}

/// How a waiting replica's full sync started.
enum Started {
    /// Its own (it may have others joining).
    Own(SyncJob),
    /// Another replica's, which it joined.
    Joined(Joined),
}

impl<S> Conn<S>
where
    S: AsyncRead + AsyncWrite + Unpin,
{
    /// Serves the connection as a replica's until it closes.
    pub(super) async fn serve_replica(&mut self, job: SyncJob) -> Result<Infallible, Close> {
        self.flush().await?;
        let id = self.client.id;
        let started = match job {
            SyncJob::Wait { psync, eof, until } => self.wait_for_snapshot(psync, eof, until).await?,
            job => Started::Own(job),
        };
        let (offset, eof) = match started {
            Started::Own(SyncJob::Partial { from }) => (from - 1, None),
            Started::Own(SyncJob::Wait { .. }) => unreachable!("a waiting sync was started above"),
            Started::Own(SyncJob::Full { snapshot, offset, eof: false, slot, .. }) => {
                let (f, len) = self.write_file(snapshot, slot, offset).await?;
                self.send_file(f, len).await?;
                (offset, Some(false))
            }
            Started::Own(SyncJob::Full { snapshot, offset, eof: true, slot, joined }) => {
                let feed = self.share_snapshot(snapshot, slot, joined, offset);
                self.send_diskless(feed).await?;
                (offset, Some(true))
            }
            Started::Joined(j) => {
                if let Some(line) = j.line {
                    self.wr.write_all(format!("+{line}\r\n").as_bytes()).await.map_err(|_| Close)?;
                }
                match j.file {
                    SyncFile::Diskless(feed) => {
                        self.send_diskless(feed).await?;
                        (j.offset, Some(true))
                    }
                    SyncFile::Disk(f, len) => {
                        self.send_file(f, len).await?;
                        (j.offset, Some(false))
                    }
                }
            }
        };
        if let Some(eof) = eof {
            if eof {
                // The stream starts once the replica acknowledged the file (Redis's
                // `repl_start_cmd_stream_on_ack`).
                while !self.srv.repl.has_acked(id) {
                    self.replica_input().await?;
                }
            }
            self.srv.repl.online(id, self.srv.clock.now_ms());
            tracing::info!("Synchronization with replica {} succeeded", self.client.info.addr);
        }
        let mut next = offset + 1;
        // A stock replica gets Latch's own commands as no-ops of their length.
        let latch = self.srv.repl.capa_latch(id);
        loop {
            match self.srv.repl.read(next, STREAM_CHUNK, latch) {
                Err(Behind) => {
                    tracing::warn!(
                        "Client id={} addr={} closed: the replication stream it needs is gone (output buffer limit)",
                        id,
                        self.client.info.addr
                    );
                    return Err(Close);
                }
                Ok(bytes) if !bytes.is_empty() => {
                    self.wr.write_all(&bytes).await.map_err(|_| Close)?;
                    self.srv.stats.add_net_output(bytes.len() as u64);
                    next += bytes.len() as u64;
                    self.srv.repl.sent(id, next - 1);
                    continue;
                }
                Ok(_) => {}
            }
            self.wr.flush().await.map_err(|_| Close)?;
            if self.client.info.killed.load(Ordering::Relaxed) {
                return Err(Close);
            }
            self.replica_input().await?;
        }
    }

    /// A full sync waits (`repl-diskless-sync-delay`, or another snapshot running), sending the
    /// replica a newline every second so it keeps waiting (Redis's keep-alive in
    /// WAIT_BGSAVE_START), then starts: `+FULLRESYNC` (to PSYNC) and the job.
    async fn wait_for_snapshot(&mut self, psync: bool, eof: bool, until: u64) -> Result<Started, Close> {
        let mut last_newline = self.srv.clock.now_ms();
        let me = self.joined_key();
        // A sync handed over once this connection is gone is dropped when it closes (after the
        // server forgot the client: see [`Conn::share_snapshot`]).
        self.on_close.push(Box::new(move || {
            JOINED.lock().remove(&me);
        }));
        loop {
            // DEBUG SLEEP freezes the keep-alives too.
            self.srv.wait_thawed();
            if let Some(j) = JOINED.lock().remove(&me) {
                return Ok(Started::Joined(j));
            }
            let now = self.srv.clock.now_ms();
            // Redis's replicationStartPendingFork: the delay is over, or enough replicas wait.
            if (now >= until || (eof && self.srv.diskless_batch_ready()))
                && let Some(reply) = self.srv.try_full_sync(&mut self.client, psync, eof)
            {
                if let Some(line) = reply {
                    resp::encode(&line, self.client.proto, &mut self.wbuf);
                    self.flush().await?;
                }
                return self.client.sync.take().map(Started::Own).ok_or(Close);
            }
            if now.saturating_sub(last_newline) >= 1000 {
                self.wr.write_all(b"\n").await.map_err(|_| Close)?;
                self.wr.flush().await.map_err(|_| Close)?;
                last_newline = now;
            }
            let wait = until.saturating_sub(now).clamp(50, 1000);
            tokio::select! {
                _ = tokio::time::sleep(std::time::Duration::from_millis(wait)) => {}
                r = self.replica_input() => r?,
            }
        }
    }

    /// Waits for more stream (the feed wakes the replica) or for bytes from the replica, and runs
    /// what it sent; replies are dropped.
    async fn replica_input(&mut self) -> Step {
        tokio::select! {
            biased;
            _ = self.kill.notified() => {
                if self.client.info.killed.load(Ordering::Relaxed) {
                    return Err(Close);
                }
            }
            r = self.rd.read_buf(&mut self.rbuf) => match r {
                Ok(0) | Err(_) => return Err(Close),
                Ok(n) => {
                    self.srv.stats.add_net_input(n as u64);
                    self.run_buffered().await?;
                    if !self.wbuf.is_empty() {
                        // Nothing is written to a replica but the stream: a command of its
                        // own that answered ends its link, as Redis's does.
                        let name = self.client.info.last_cmd.lock().to_string();
                        if let Some(line) = self.wbuf.strip_prefix(b"-") {
                            let line = line.split(|&b| b == b'\r').next().unwrap_or_default();
                            tracing::warn!(
                                "== CRITICAL == This master is sending an error to its replica: '{}' after processing the command '{name}'",
                                String::from_utf8_lossy(line)
                            );
                        }
                        let mut shown = Vec::new();
                        resp::repr(&self.wbuf, &mut shown);
                        tracing::warn!(
                            "Replica generated a reply to command '{name}', disconnecting it: {}",
                            String::from_utf8_lossy(&shown)
                        );
                        return Err(Close);
                    }
                }
            },
        }
        Ok(())
    }

    /// This connection's key in [`JOINED`].
    fn joined_key(&self) -> (usize, u64) {
        (std::sync::Arc::as_ptr(&self.srv) as usize, self.client.id)
    }

    /// Writes a disk-based full sync's file (Redis's disk-based sync), beside the RDB file under a
    /// name of its own, and unlinks it as soon as it is written: the open handle keeps it
    /// readable, memory holds a chunk at a time, and nothing is left behind whatever happens next.
    /// Unlike Redis, the file does not become `dbfilename` (as with Redis's `rdb-del-sync-files
    /// yes`): saving is `save`'s and BGSAVE's business. The replicas that came while it was written
    /// take it too ([`Server::join_disk_sync`](engine::server::Server::join_disk_sync)).
    async fn write_file(
        &mut self,
        snapshot: engine::persistence::Snapshot,
        slot: engine::persistence::ReplSnapshot,
        offset: u64,
    ) -> Result<(std::sync::Arc<std::fs::File>, u64), Close> {
        let fence = self.srv.fence.clone();
        let path =
            self.srv.rdb_path().with_file_name(format!("temp-{}-repl-{}.rdb", std::process::id(), self.client.id));
        let (srv, owner) = (self.srv.clone(), self.client.id);
        let mut writer = tokio::task::spawn_blocking(move || {
            let written = (|| {
                let f = std::fs::File::options().read(true).write(true).create(true).truncate(true).open(&path)?;
                let mut w = std::io::BufWriter::with_capacity(STREAM_CHUNK, f);
                snapshot.write(&mut w, &fence)?;
                let f = w.into_inner().map_err(|e| e.into_error())?;
                let len = f.metadata()?.len();
                Ok::<_, std::io::Error>((std::sync::Arc::new(f), len))
            })();
            let _ = std::fs::remove_file(&path);
            if let Ok((f, len)) = &written {
                let line = |psync: bool| psync.then(|| format!("FULLRESYNC {} {offset}", srv.repl.replid()));
                for j in srv.join_disk_sync(owner, offset) {
                    let joined = Joined { line: line(j.psync), offset, file: SyncFile::Disk(f.clone(), *len) };
                    hand_over(&srv, j, joined);
                }
            }
            // The file is written and handed over: another snapshot may start.
            drop(slot);
            written
        });
        // The replica hears a newline every second while the file is written, as Redis keeps a
        // replica in WAIT_BGSAVE_END alive: a long write does not reach its `repl-timeout`.
        let mut tick = tokio::time::interval(std::time::Duration::from_secs(1));
        tick.tick().await;
        let file = loop {
            tokio::select! {
                done = &mut writer => break done,
                _ = tick.tick() => {
                    self.wr.write_all(b"\n").await.map_err(|_| Close)?;
                    self.wr.flush().await.map_err(|_| Close)?;
                }
            }
        };
        match file {
            Ok(Ok(done)) => Ok(done),
            Ok(Err(e)) => {
                tracing::warn!("Full sync to replica {} failed: {e}", self.client.info.addr);
                Err(Close)
            }
            Err(_) => Err(Close),
        }
    }

    /// Sends a disk-based full sync's file whole after its length (`$<len>`), a chunk at a time.
    async fn send_file(&mut self, f: std::sync::Arc<std::fs::File>, len: u64) -> Step {
        self.wr.write_all(format!("${len}\r\n").as_bytes()).await.map_err(|_| Close)?;
        let mut buf = vec![0u8; STREAM_CHUNK];
        let mut at = 0u64;
        while at < len {
            // Disk reads on a blocking thread, a chunk at a time.
            let file = f.clone();
            let (read, back) = tokio::task::spawn_blocking(move || {
                let r = std::os::unix::fs::FileExt::read_at(&*file, &mut buf, at);
                (r, buf)
            })
            .await
            .map_err(|_| Close)?;
            buf = back;
            let n = match read {
                Ok(0) | Err(_) => {
                    tracing::warn!("Full sync to replica {} failed: the file could not be read", self.client.info.addr);
                    return Err(Close);
                }
                Ok(n) => n.min((len - at) as usize),
            };
            self.write_timed(&buf[..n]).await?;
            self.srv.stats.add_net_output(n as u64);
            at += n as u64;
        }
        self.wr.flush().await.map_err(|_| Close)
    }

    /// Starts writing a diskless full sync's file on a blocking thread, for this replica and the
    /// ones that joined it (each is handed its feed and woken); this replica's feed is returned.
    /// The writer holds the snapshot slot until the file is written, whichever replicas are left.
    fn share_snapshot(
        &self,
        snapshot: engine::persistence::Snapshot,
        slot: engine::persistence::ReplSnapshot,
        joined: Vec<engine::repl::Joiner>,
        offset: u64,
    ) -> Receiver<Feed> {
        let (tx, rx) = channel(CHUNKS_QUEUED);
        let mut to = vec![tx];
        for j in joined {
            let (tx, feed) = channel(CHUNKS_QUEUED);
            to.push(tx);
            let line = j.psync.then(|| format!("FULLRESYNC {} {offset}", self.srv.repl.replid()));
            hand_over(&self.srv, j, Joined { line, offset, file: SyncFile::Diskless(feed) });
        }
        let fence = self.srv.fence.clone();
        tokio::task::spawn_blocking(move || {
            let mut out = FanOut { to, buf: Vec::new() };
            let ok = snapshot.write(&mut out, &fence).and_then(|()| out.flush()).is_ok();
            drop(slot);
            if ok {
                out.to.retain(|tx| !tx.is_closed());
                tracing::info!("Diskless rdb transfer, done reading from pipe, {} replicas still up.", out.to.len());
            }
            if !out.to.is_empty() {
                let _ = out.send(|| Feed::End(ok));
            }
        });
        rx
    }

    /// Writes part of a diskless full sync. A replica that takes nothing for `repl-timeout` (read
    /// each second, so a change applies to a transfer under way) is let go: Redis's
    /// replicationCron checks a socket transfer's last progress so.
    async fn write_timed(&mut self, mut chunk: &[u8]) -> Result<(), Close> {
        let mut progress = tokio::time::Instant::now();
        let mut tick = tokio::time::interval(std::time::Duration::from_secs(1));
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        while !chunk.is_empty() {
            tokio::select! {
                // A write that has not completed wrote nothing: dropping it for the tick is safe.
                n = self.wr.write(chunk) => match n {
                    Ok(0) | Err(_) => return Err(Close),
                    Ok(n) => {
                        chunk = &chunk[n..];
                        progress = tokio::time::Instant::now();
                    }
                },
                _ = tick.tick() => {
                    let timeout = self.srv.config.get_i64("repl-timeout").max(1) as u64;
                    if progress.elapsed() > std::time::Duration::from_secs(timeout) {
                        tracing::warn!("Disconnecting timedout replica (full sync): {}", self.client.info.addr);
                        return Err(Close);
                    }
                }
            }
        }
        Ok(())
    }

    /// Sends a diskless full sync (`$EOF:<mark>`, the file as it comes, the mark).
    async fn send_diskless(&mut self, mut feed: Receiver<Feed>) -> Step {
        let mark = engine::server::random_id();
        self.wr.write_all(format!("$EOF:{mark}\r\n").as_bytes()).await.map_err(|_| Close)?;
        loop {
            // The replica is read meanwhile: a replica that closes or is killed (its buffer over
            // the limit) is let go now, not when the file is written.
            let next = tokio::select! {
                biased;
                f = feed.recv() => Some(f),
                r = self.replica_input() => {
                    r?;
                    None
                }
            };
            let Some(next) = next else { continue };
            match next {
                Some(Feed::Chunk(chunk)) => {
                    self.write_timed(&chunk).await?;
                    self.srv.stats.add_net_output(chunk.len() as u64);
                }
                Some(Feed::End(true)) => break,
                Some(Feed::End(false)) | None => {
                    tracing::warn!("Diskless full sync to replica {} failed", self.client.info.addr);
                    return Err(Close);
                }
            }
        }
        self.wr.write_all(mark.as_bytes()).await.map_err(|_| Close)?;
        self.wr.flush().await.map_err(|_| Close)
    }
}
