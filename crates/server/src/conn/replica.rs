//! A replica's connection, the primary's side: after SYNC or PSYNC the connection sends the
//! replica its full sync (the fork-less snapshot, as `$<len>` and the file, or diskless as
//! `$EOF:<mark>`, the file and the mark) or nothing (a partial resync), then the replication stream
//! from its offset, as it grows. What the replica sends (`REPLCONF ACK`) runs as commands whose
//! replies are dropped, as Redis writes nothing to a replica.

use super::{Close, Conn, Step};
use engine::repl::{Behind, SyncJob};
use std::convert::Infallible;
use std::io::Write;
use std::sync::atomic::Ordering;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};

/// Most stream bytes written in one go.
const STREAM_CHUNK: usize = 256 * 1024;

/// Chunks of a snapshot being written on a blocking thread, for the connection to send.
struct Chunks(tokio::sync::mpsc::Sender<Vec<u8>>, Vec<u8>);

impl Write for Chunks {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.1.extend_from_slice(buf);
        if self.1.len() >= 64 * 1024 {
            self.flush()?;
        }
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        if !self.1.is_empty() {
            let chunk = std::mem::take(&mut self.1);
            self.0.blocking_send(chunk).map_err(|_| std::io::Error::other("replica gone"))?;
        }
        Ok(())
    }
}

impl<S> Conn<S>
where
    S: AsyncRead + AsyncWrite + Unpin,
{
    /// Serves the connection as a replica's until it closes.
    pub(super) async fn serve_replica(&mut self, job: SyncJob) -> Result<Infallible, Close> {
        self.flush().await?;
        let id = self.client.id;
        let job = match job {
            SyncJob::Wait { psync, eof, until } => self.wait_for_snapshot(psync, eof, until).await?,
            job => job,
        };
        let mut next = match job {
            SyncJob::Wait { .. } => unreachable!("a waiting sync was started above"),
            SyncJob::Partial { from } => from,
            SyncJob::Full { snapshot, offset, eof, slot } => {
                self.send_snapshot(snapshot, eof).await?;
                // The file is written: another snapshot may start.
                drop(slot);
                if eof {
                    // The stream starts once the replica acknowledged the file (Redis's
                    // `repl_start_cmd_stream_on_ack`).
                    while !self.srv.repl.has_acked(id) {
                        self.replica_input().await?;
                    }
                }
                self.srv.repl.online(id, self.srv.clock.now_ms());
                tracing::info!("Synchronization with replica {} succeeded", self.client.info.addr);
                offset + 1
            }
        };
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
    async fn wait_for_snapshot(&mut self, psync: bool, eof: bool, until: u64) -> Result<SyncJob, Close> {
        let mut last_newline = self.srv.clock.now_ms();
        loop {
            // DEBUG SLEEP freezes the keep-alives too.
            self.srv.wait_thawed();
            let now = self.srv.clock.now_ms();
            if now >= until
                && let Some(reply) = self.srv.try_full_sync(&mut self.client, psync, eof)
            {
                if let Some(line) = reply {
                    resp::encode(&line, self.client.proto, &mut self.wbuf);
                    self.flush().await?;
                }
                return self.client.sync.take().ok_or(Close);
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
                    self.wbuf.clear();
                }
            },
        }
        Ok(())
    }

    /// Sends a full sync's file: diskless (`eof`) as it is written, else whole after its length.
    async fn send_snapshot(&mut self, snapshot: engine::persistence::Snapshot, eof: bool) -> Step {
        let fence = self.srv.fence.clone();
        if eof {
            let mark = engine::server::random_id();
            self.wr.write_all(format!("$EOF:{mark}\r\n").as_bytes()).await.map_err(|_| Close)?;
            let (tx, mut rx) = tokio::sync::mpsc::channel::<Vec<u8>>(8);
            let writer = tokio::task::spawn_blocking(move || {
                let mut w = Chunks(tx, Vec::new());
                snapshot.write(&mut w, &fence).and_then(|()| w.flush())
            });
            while let Some(chunk) = rx.recv().await {
                self.wr.write_all(&chunk).await.map_err(|_| Close)?;
                self.srv.stats.add_net_output(chunk.len() as u64);
            }
            match writer.await {
                Ok(Ok(())) => {}
                _ => {
                    tracing::warn!("Diskless full sync to replica {} failed", self.client.info.addr);
                    return Err(Close);
                }
            }
            self.wr.write_all(mark.as_bytes()).await.map_err(|_| Close)?;
        } else {
            let file = tokio::task::spawn_blocking(move || {
                let mut data = Vec::new();
                snapshot.write(&mut data, &fence).map(|()| data)
            })
            .await;
            let Ok(Ok(data)) = file else {
                tracing::warn!("Full sync to replica {} failed", self.client.info.addr);
                return Err(Close);
            };
            self.wr.write_all(format!("${}\r\n", data.len()).as_bytes()).await.map_err(|_| Close)?;
            self.wr.write_all(&data).await.map_err(|_| Close)?;
            self.srv.stats.add_net_output(data.len() as u64);
        }
        self.wr.flush().await.map_err(|_| Close)
    }
}
