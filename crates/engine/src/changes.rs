//! The change stream: what every change to the data was, as commands that reproduce it.
//!
//! Each command that changes data reports it once, through its [`crate::command::Ctx`]:
//! [`Ctx::changed`](crate::command::Ctx::changed) counts the changes (Redis's `server.dirty`, which
//! `rdb_changes_since_last_save` shows), and
//! [`Ctx::propagate_as`](crate::command::Ctx::propagate_as) replaces the command's own arguments with
//! the *effect* when replaying the arguments would not reproduce the same data. The rules are
//! Redis's: relative expiries become absolute (`SET ... PX` → `SET ... PXAT`, `EXPIRE` →
//! `PEXPIREAT`), served blocking pops propagate as their non-blocking form, random and floating
//! point results as the values they produced (`SPOP` → `SREM`, `INCRBYFLOAT` → `SET ... KEEPTTL`),
//! scripts and transactions as the effects of the commands they ran, wrapped in `MULTI`/`EXEC` when
//! there are several, and keys the server deletes on its own (expired, evicted) as `DEL`.
//!
//! [`crate::server::Server::call`] is the one place that turns a report into an [`Effect`]: a
//! command whose count is not zero, or that asked to be propagated, adds one effect per command it
//! propagates as, unless commands it ran on its behalf (EXEC's, a script's, FENCED's) already did.
//! The effects of one top-level command form a [`Unit`], published while the command still holds
//! its shard locks, so two units that touch a common key appear in the order they ran. A key a table
//! deleted on its own while a command ran (found expired, evicted) becomes a `DEL` in that command's
//! unit, before the command's own effect; one deleted outside any command (the active expiry cycle,
//! eviction) is a unit of its own.
//!
//! WATCH and blocked clients learn of changes a level lower, from the tables themselves
//! ([`crate::keyspace::Table`]): every mutation there touches watchers and marks waiting keys ready.
//!
//! Until persistence exists the stream's consumer is the replay test: effects replayed into a fresh
//! server give the same data. The stream records nothing unless [`ChangeStream::enable`] was called,
//! and costs a relaxed load per write command when it is off.

use bytes::Bytes;
use parking_lot::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};

/// One command that reproduces a change, in the database it applies to.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Effect {
    /// Database index.
    pub db: usize,
    /// The command and its arguments.
    pub args: Vec<Bytes>,
}

impl Effect {
    /// An effect from string-like arguments.
    pub fn new<A: AsRef<[u8]>>(db: usize, args: &[A]) -> Effect {
        Effect { db, args: args.iter().map(|a| Bytes::copy_from_slice(a.as_ref())).collect() }
    }
}

/// The effects of one top-level command (or one served waiter, or one key the server deleted), to be
/// applied atomically: consumers wrap a unit of several effects in `MULTI`/`EXEC`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Unit {
    /// The command's time (monotonic ms, the server clock's timeline).
    pub at: u64,
    /// What it changed, in order.
    pub effects: Vec<Effect>,
}

/// Where units go. Today one consumer reads them back (tests); the AOF and replicas will follow.
#[derive(Default)]
pub struct ChangeStream {
    enabled: AtomicBool,
    log: Mutex<Vec<Unit>>,
}

impl ChangeStream {
    /// True when units are being recorded.
    #[inline]
    pub fn enabled(&self) -> bool {
        self.enabled.load(Ordering::Relaxed)
    }

    /// Starts recording. Call before the first command whose changes must be seen (the tables learn
    /// it through [`crate::server::Server::record_changes`]).
    pub(crate) fn enable(&self) {
        self.enabled.store(true, Ordering::SeqCst);
    }

    /// Appends a unit (nothing for an empty one).
    pub(crate) fn publish(&self, at: u64, effects: Vec<Effect>) {
        if !effects.is_empty() {
            self.log.lock().push(Unit { at, effects });
        }
    }

    /// Takes the units recorded so far.
    pub fn take(&self) -> Vec<Unit> {
        std::mem::take(&mut *self.log.lock())
    }
}
