//! Per-client transaction state (MULTI/EXEC) and WATCH registrations.

use crate::command::{Command, Runner};
use crate::keyspace::{WatchState, WatchedKey};
use crate::value::Key;
use bytes::Bytes;
use std::sync::Arc;
use std::sync::atomic::Ordering;

/// A client's MULTI and WATCH state.
pub struct MultiState<R: Runner> {
    /// Inside MULTI: the queued commands.
    pub queued: Option<Vec<(&'static Command<R>, Vec<Bytes>)>>,
    /// A command failed to queue: EXEC will answer EXECABORT.
    pub aborted: bool,
    /// The WATCH state shared with the tables holding the watched keys.
    pub watch: Arc<WatchState>,
    /// Watched keys: (db, key, registration). Dropping a registration is enough to unwatch: tables
    /// prune registrations nobody else holds.
    pub watched: Vec<(usize, Key, Arc<WatchedKey>)>,
}

impl<R: Runner> Default for MultiState<R> {
    fn default() -> Self {
        MultiState { queued: None, aborted: false, watch: Default::default(), watched: Vec::new() }
    }
}

impl<R: Runner> MultiState<R> {
    /// True inside MULTI.
    pub fn active(&self) -> bool {
        self.queued.is_some()
    }

    /// Whether `pred` holds for `cmd` run with `args` or, when `cmd` is EXEC, for any command it
    /// would run: Redis's `is_write_command`, `is_denyoom_command`... look into an EXEC's queue.
    pub fn any_run(&self, cmd: &Command<R>, args: &[Bytes], pred: impl Fn(&Command<R>, &[Bytes]) -> bool) -> bool {
        pred(cmd, args)
            || (cmd.name == "exec" && self.queued.as_ref().is_some_and(|q| q.iter().any(|(c, a)| pred(c, a))))
    }

    /// Forgets every watched key and the dirty flag.
    pub fn unwatch(&mut self) {
        self.watched.clear();
        if self.watch.dirty.load(Ordering::Relaxed) || Arc::strong_count(&self.watch) > 1 {
            self.watch = Arc::new(WatchState::default());
        }
    }

    /// Leaves MULTI and drops everything (DISCARD, EXEC, RESET).
    pub fn reset(&mut self) {
        self.queued = None;
        self.aborted = false;
        self.unwatch();
    }

    /// Marks the transaction as failed to queue (Redis's `flagTransaction`).
    pub fn flag_error(&mut self) {
        if self.active() {
            self.aborted = true;
        }
    }
}

/// Memory a queued command holds: its arguments and their bookkeeping (Redis's `multiCmd` and
/// the argument objects), for CLIENT LIST `multi-mem` and `maxmemory-clients`.
pub fn queued_size(args: &[Bytes]) -> usize {
    std::mem::size_of::<(&(), Vec<Bytes>)>()
        + args.iter().map(|a| a.len() + std::mem::size_of::<Bytes>()).sum::<usize>()
}
