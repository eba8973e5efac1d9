//! SHUTDOWN and the signals' shutdown, as Redis 7.0's `prepareForShutdown` and `finishShutdown`:
//! unless `NOW` is given, a primary whose replicas have not acknowledged the whole stream pauses
//! writes, asks them for an acknowledgement and waits for them (`shutdown-timeout` seconds at
//! most, INFO's `shutdown_in_milliseconds`) before it saves and exits; the SHUTDOWN clients wait
//! blocked meanwhile. A shutdown that cannot finish (a save that fails without `FORCE`, the
//! initial AOF still being written) or SHUTDOWN ABORT ends the wait: writes go on and the waiting
//! clients are answered with an error.
//!
//! The process's exit is the network layer's: [`Server::request_shutdown`] asks for it once the
//! shutdown finished here.

use super::Server;
use crate::host::LogLevel;
pub use crate::persistence::{Shutdown, ShutdownFlags, ShutdownPhase};
use std::sync::atomic::Ordering;

impl Server {
    /// Asks for a shutdown (Redis's `prepareForShutdown`): finishes it at once, or starts waiting
    /// for lagging replicas (writes paused, an acknowledgement asked for). A shutdown already
    /// waiting is joined.
    /// `locked`: every shard, when the caller (the SHUTDOWN command) holds them.
    pub fn prepare_shutdown(
        &self,
        mut flags: ShutdownFlags,
        now: u64,
        locked: Option<&mut crate::keyspace::Locked<'_>>,
    ) -> Shutdown {
        {
            let mut phase = self.persistence.shutdown.lock();
            match *phase {
                ShutdownPhase::Waiting { .. } => return Shutdown::Waiting,
                ShutdownPhase::Exiting => return Shutdown::Exiting,
                ShutdownPhase::Idle => {}
            }
            // While loading, nothing half-read is saved over the file.
            if self.loading.load(Ordering::Relaxed) {
                flags.save = false;
                flags.nosave = true;
            }
            self.config.host().log(LogLevel::Warning, "User requested shutdown...");
            let timeout_s = self.config.get_i64("shutdown-timeout").max(0) as u64;
            if !flags.now && timeout_s != 0 && !self.replicas_in_sync() {
                *phase = ShutdownPhase::Waiting { deadline: now.saturating_add(timeout_s * 1000), flags };
                drop(phase);
                if !self.pause_in_force() {
                    self.feed_replicas(&["REPLCONF", "GETACK", "*"]);
                }
                self.pause_clients(crate::pause::PauseKind::Write, u64::MAX, now);
                self.config.host().log(LogLevel::Notice, "Waiting for replicas before shutting down.");
                return Shutdown::Waiting;
            }
        }
        self.finish_shutdown(flags, now, locked)
    }

    /// Every replica acknowledged the whole stream (Redis's `isReadyToShutdown`).
    fn replicas_in_sync(&self) -> bool {
        !self.repl.active() || self.repl.lagging(0).1.is_empty()
    }

    /// The cron's part: a waiting shutdown finishes once the replicas caught up or its time is
    /// up.
    pub fn shutdown_cron(&self, now: u64) {
        let ShutdownPhase::Waiting { deadline, flags } = *self.persistence.shutdown.lock() else { return };
        if now >= deadline || self.replicas_in_sync() {
            self.finish_shutdown(flags, now, None);
        }
    }

    /// SHUTDOWN ABORT: true if a shutdown was waiting (it is cancelled, its clients answered).
    pub fn abort_shutdown(&self) -> bool {
        if !matches!(*self.persistence.shutdown.lock(), ShutdownPhase::Waiting { .. }) {
            return false;
        }
        self.cancel_shutdown();
        self.config.host().log(LogLevel::Notice, "Shutdown manually aborted.");
        true
    }

    /// Where the shutdown is (a waiting SHUTDOWN client polls it).
    pub fn shutdown_phase(&self) -> ShutdownPhase {
        *self.persistence.shutdown.lock()
    }

    /// INFO's `shutdown_in_milliseconds` while a shutdown waits.
    pub fn shutdown_in_ms(&self, now: u64) -> Option<i64> {
        match *self.persistence.shutdown.lock() {
            ShutdownPhase::Waiting { deadline, .. } => Some(deadline as i64 - now as i64),
            _ => None,
        }
    }

    fn cancel_shutdown(&self) {
        *self.persistence.shutdown.lock() = ShutdownPhase::Idle;
        self.unpause_clients();
    }

    /// Redis's `finishShutdown`: the lagging replicas logged, the AOF flushed by the network
    /// layer at exit, the final save; then the process is asked to exit.
    fn finish_shutdown(
        &self,
        flags: ShutdownFlags,
        now: u64,
        locked: Option<&mut crate::keyspace::Locked<'_>>,
    ) -> Shutdown {
        let host = self.config.host();
        let (replicas, lagging) = self.repl.lagging(now);
        for (name, behind, lag, state) in &lagging {
            host.log(
                LogLevel::Warning,
                &format!("Lagging replica {name} reported offset {behind} behind master, lag={lag}, state={state}."),
            );
        }
        if replicas > 0 {
            host.log(
                LogLevel::Notice,
                &format!("{} of {replicas} replicas are in sync when shutting down.", replicas - lagging.len()),
            );
        }
        let p = &self.persistence;
        if p.aof_starting.load(Ordering::SeqCst) && p.aof_rewrite_in_progress.load(Ordering::SeqCst) {
            if flags.force {
                host.log(LogLevel::Warning, "Writing initial AOF. Exit anyway.");
            } else {
                host.log(LogLevel::Warning, "Writing initial AOF, can't exit.");
                return self.shutdown_failed();
            }
        }
        if flags.save || (!flags.nosave && !self.save_points().is_empty()) {
            host.log(LogLevel::Warning, "Saving the final RDB snapshot before exiting.");
            let saved = match locked {
                Some(locked) => self.write_rdb_locked(locked),
                None => self.write_rdb_locked(&mut self.ks.lock_all()),
            };
            match saved {
                Ok(()) => host.log(LogLevel::Notice, "DB saved on disk"),
                Err(e) if !flags.force => {
                    host.log(LogLevel::Warning, &format!("Error trying to save the DB, can't exit: {e}"));
                    return self.shutdown_failed();
                }
                Err(e) => host.log(LogLevel::Warning, &format!("Error trying to save the DB: {e}")),
            }
        }
        *self.persistence.shutdown.lock() = ShutdownPhase::Exiting;
        self.request_shutdown();
        Shutdown::Exiting
    }

    fn shutdown_failed(&self) -> Shutdown {
        self.config
            .host()
            .log(LogLevel::Warning, "Errors trying to shut down the server. Check the logs for more information.");
        self.cancel_shutdown();
        Shutdown::Failed
    }
}
