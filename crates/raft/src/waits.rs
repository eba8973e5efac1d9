//! Lock waiters in consensus mode (`LOCK key owner ttl WAIT timeout`), as replicated state.
//!
//! A `LOCK ... WAIT` that finds the lock held is queued by every node's state machine, in log
//! order, in the engine's own FIFO queue on the key (the one single-node mode uses). The grant to
//! the next waiter therefore happens inside the apply of the entry that freed the lock (`UNLOCK`,
//! `DEL`, or the entry whose raft time passed its TTL), on every node alike, with the same token.
//! A waiter's deadline is on raft time: at the start of each entry, before anything expires at
//! that entry's time, the waiters whose deadline passed are dropped, so a lock is never handed to
//! a waiter that already gave up (etcd granted one to a waiter whose lease had expired in the
//! queue: etcd-io/etcd#11456). The queue is part of snapshots, so a new leader, a restarted node
//! and one that installed a snapshot hold the same waiters in the same order.
//!
//! The waiting client's connection holds a [`LockWait`] and learns the outcome from the node it
//! is connected to, once that node applies it: a leader that lost its leadership still applies
//! what the new leader commits, so its waiting clients are answered there. A client that asks
//! again with the same owner while its earlier request still waits (after a lost connection, on
//! another node) takes the same place in the queue rather than a new one.
//!
//! A connection that goes away takes its wait out of the queue through the log (`LeaveQueue`),
//! proposed by the leader, or forwarded to the leader by a node that no longer leads. Each ask
//! of a place is numbered in log order; a leave names the ask its connection made and takes
//! effect only if no later ask came, so a connection lost after its client asked again elsewhere
//! does not take the client's place away.

use bytes::Bytes;
use engine::ctx::Waiter;
use engine::server::Server;
use engine::waiters::WaitState;
use parking_lot::Mutex;
use resp::Frame;
use serde::{Deserialize, Serialize};
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};

/// True for `LOCK key owner ttl WAIT timeout` (the form that may queue).
pub fn is_lock_wait(args: &[Bytes]) -> bool {
    args.len() == 6 && args[0].eq_ignore_ascii_case(b"lock") && args[4].eq_ignore_ascii_case(b"wait")
}

/// A place in a lock's queue, as the state machine keeps it.
struct Place {
    db: u32,
    key: Bytes,
    owner: Bytes,
    /// The LOCK command as proposed.
    args: Vec<Bytes>,
    resp3: bool,
    /// Its place among all waiters (log order; snapshots keep it).
    seq: AtomicU64,
    /// How many times the owner asked for it (the first request and its retries; replicated,
    /// snapshots keep it).
    asks: AtomicU64,
    /// The engine's waiter (replaced when a snapshot is loaded and the wait is in it).
    waiter: Mutex<Arc<Waiter>>,
    /// The outcome once taken from the engine's waiter.
    result: OnceLock<Frame>,
    notify: Arc<tokio::sync::Notify>,
}

impl Place {
    /// The place of `args` (`LOCK key owner ttl WAIT timeout`, checked by the caller) at `seq`,
    /// asked for `asks` times, on the engine's `waiter`, whose wake callback rings `notify`.
    fn new(
        db: u32,
        resp3: bool,
        args: Vec<Bytes>,
        seq: u64,
        asks: u64,
        waiter: Arc<Waiter>,
        notify: Arc<tokio::sync::Notify>,
    ) -> Arc<Place> {
        Arc::new(Place {
            db,
            key: args[1].clone(),
            owner: args[2].clone(),
            args,
            resp3,
            seq: AtomicU64::new(seq),
            asks: AtomicU64::new(asks),
            waiter: Mutex::new(waiter),
            result: OnceLock::new(),
            notify,
        })
    }

    fn is_waiting(&self) -> bool {
        self.result.get().is_none() && self.waiter.lock().is_waiting()
    }
}

/// A queued `LOCK ... WAIT` as one waiting connection holds it: its place in the queue, and
/// which ask of that place the connection made.
pub struct LockWait {
    place: Arc<Place>,
    ask: u64,
}

impl std::fmt::Debug for LockWait {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let p = &self.place;
        f.debug_struct("LockWait").field("db", &p.db).field("key", &p.key).field("owner", &p.owner).finish()
    }
}

impl LockWait {
    /// The database, key and owner of the wait.
    pub(crate) fn id(&self) -> (u32, &Bytes, &Bytes) {
        (self.place.db, &self.place.key, &self.place.owner)
    }

    /// Which ask of its place this connection made (1 for the first request).
    pub(crate) fn ask(&self) -> u64 {
        self.ask
    }

    /// True while this ask still holds the place as this node applied it: queued, and no later
    /// ask of the same owner since (a leave would then change nothing).
    pub(crate) fn still_asked(&self) -> bool {
        self.place.is_waiting() && self.place.asks.load(Ordering::Relaxed) == self.ask
    }

    /// Another handle on the same ask of the same place.
    pub(crate) fn handle(&self) -> LockWait {
        LockWait { place: self.place.clone(), ask: self.ask }
    }

    /// True if `other` waits on the same place.
    #[cfg(test)]
    pub(crate) fn same_place(&self, other: &LockWait) -> bool {
        Arc::ptr_eq(&self.place, &other.place)
    }

    /// The outcome once this node applied it: the grant's fencing token, or nil (the wait timed
    /// out or was cancelled). None while still queued.
    pub fn outcome(&self) -> Option<Frame> {
        let p = &self.place;
        let w = p.waiter.lock();
        if let Some(f) = p.result.get() {
            return Some(f.clone());
        }
        let f = match w.take() {
            WaitState::Served(f) => f,
            WaitState::Done | WaitState::Retry => Frame::Null,
            // Lock waiters are served, never rung.
            WaitState::Waiting | WaitState::Claimed | WaitState::Rung(_) | WaitState::Running(_) => return None,
        };
        Some(p.result.get_or_init(|| f).clone())
    }

    /// The wait's deadline on raft time (None: no timeout).
    pub fn deadline_ms(&self) -> Option<u64> {
        self.place.waiter.lock().deadline
    }

    /// Resolves when the outcome may have changed. Enable it before reading [`LockWait::outcome`]
    /// (tokio's `Notified::enable`), or a change between the two is missed.
    pub fn notified(&self) -> tokio::sync::futures::Notified<'_> {
        self.place.notify.notified()
    }
}

/// A waiter as a snapshot carries it.
#[derive(Serialize, Deserialize, Debug, PartialEq, Eq)]
pub(crate) struct SavedWait {
    db: u32,
    resp3: bool,
    deadline: Option<u64>,
    args: Vec<Bytes>,
    /// How many times the owner asked for the place.
    asks: u64,
}

/// A waiter as a snapshot of the third format (`LATCHSNAP3`) carries it: no count of asks.
#[derive(Serialize, Deserialize, Debug, PartialEq, Eq)]
pub(crate) struct SavedWaitV3 {
    db: u32,
    resp3: bool,
    deadline: Option<u64>,
    args: Vec<Bytes>,
}

#[cfg(test)]
impl SavedWaitV3 {
    /// `w` in the third format (for tests of loading it).
    pub(crate) fn of(w: &SavedWait) -> SavedWaitV3 {
        SavedWaitV3 { db: w.db, resp3: w.resp3, deadline: w.deadline, args: w.args.clone() }
    }
}

impl From<SavedWaitV3> for SavedWait {
    /// Every node loading the same snapshot counts one ask.
    fn from(w: SavedWaitV3) -> SavedWait {
        SavedWait { db: w.db, resp3: w.resp3, deadline: w.deadline, args: w.args, asks: 1 }
    }
}

/// The node's queued lock waiters, by (database, key, owner).
#[derive(Default)]
pub struct Waits {
    inner: Mutex<Inner>,
}

#[derive(Default)]
struct Inner {
    by_owner: HashMap<(u32, Bytes, Bytes), Arc<Place>>,
    next_seq: u64,
}

impl Waits {
    /// True when no waiter is known (the state machine's per-entry pass is skipped).
    pub(crate) fn is_empty(&self) -> bool {
        self.inner.lock().by_owner.is_empty()
    }

    /// How many waits are queued.
    pub(crate) fn len(&self) -> usize {
        self.inner.lock().by_owner.values().filter(|w| w.is_waiting()).count()
    }

    fn waiting(&self, db: u32, key: &Bytes, owner: &Bytes) -> Option<Arc<Place>> {
        let k = (db, key.clone(), owner.clone());
        self.inner.lock().by_owner.get(&k).filter(|w| w.is_waiting()).cloned()
    }

    /// `owner` asks again for its place on `key` while it is still queued (a retry, after a lost
    /// connection, on this node or another): the place, as this ask holds it. None if it has no
    /// place there.
    pub(crate) fn ask_again(&self, db: u32, key: &Bytes, owner: &Bytes) -> Option<Arc<LockWait>> {
        let place = self.waiting(db, key, owner)?;
        let ask = place.asks.fetch_add(1, Ordering::Relaxed) + 1;
        Some(Arc::new(LockWait { place, ask }))
    }

    /// Records the engine waiter a LOCK ... WAIT (`args`, run for a client of database `db`)
    /// queued; `notify` is the one its wake callback rings.
    pub(crate) fn add(
        &self,
        db: u32,
        resp3: bool,
        args: Vec<Bytes>,
        waiter: Arc<Waiter>,
        notify: Arc<tokio::sync::Notify>,
    ) -> Arc<LockWait> {
        let mut inner = self.inner.lock();
        inner.next_seq += 1;
        let place = Place::new(db, resp3, args, inner.next_seq, 1, waiter, notify);
        // A finished wait of the same owner, not yet pruned, is replaced.
        inner.by_owner.insert((db, place.key.clone(), place.owner.clone()), place.clone());
        Arc::new(LockWait { place, ask: 1 })
    }

    /// Drops the waiters whose deadline is at or before raft time `now` (they answer nil), before
    /// anything is handed on at that time.
    pub(crate) fn time_out(&self, now: u64) {
        for w in self.inner.lock().by_owner.values() {
            let engine_waiter = w.waiter.lock().clone();
            if engine_waiter.deadline.is_some_and(|d| d <= now) && engine_waiter.cancel() {
                w.notify.notify_waiters();
            }
        }
    }

    /// Cancels `owner`'s wait on `key` if it is still queued (its client went away) and, with
    /// `ask`, only if that was the last ask of the place; true if it was cancelled.
    pub(crate) fn cancel(&self, db: u32, key: &Bytes, owner: &Bytes, ask: Option<u64>) -> bool {
        let Some(w) = self.waiting(db, key, owner) else { return false };
        if ask.is_some_and(|a| a != w.asks.load(Ordering::Relaxed)) {
            return false;
        }
        let cancelled = w.waiter.lock().cancel();
        if cancelled {
            w.notify.notify_waiters();
        }
        cancelled
    }

    /// Forgets the waits that are over (served, timed out, cancelled): their connections keep
    /// their own handle. Each stops counting in `blocked_clients`.
    pub(crate) fn prune(&self, srv: &Server) {
        self.inner.lock().by_owner.retain(|_, w| {
            let keep = w.waiter.lock().is_waiting();
            if !keep {
                srv.forget_waiter();
            }
            keep
        });
    }

    /// The queued waiters in their order, as a snapshot keeps them.
    pub(crate) fn saved(&self) -> Vec<SavedWait> {
        let inner = self.inner.lock();
        let mut queued: Vec<&Arc<Place>> = inner.by_owner.values().filter(|w| w.is_waiting()).collect();
        queued.sort_by_key(|w| w.seq.load(Ordering::Relaxed));
        queued
            .into_iter()
            .map(|w| SavedWait {
                db: w.db,
                resp3: w.resp3,
                deadline: w.waiter.lock().deadline,
                args: w.args.clone(),
                asks: w.asks.load(Ordering::Relaxed),
            })
            .collect()
    }

    /// Replaces the waiters with a snapshot's, while `locked` holds every shard and the snapshot's
    /// data is loaded: each is queued again in the engine, in its order. A wait this node knew
    /// that the snapshot still holds keeps its handle (its connection goes on waiting); one it no
    /// longer holds was decided in the entries the snapshot covers: granted if the lock is now
    /// its owner's (the token is the lock's), else nil.
    pub(crate) fn load(
        &self,
        srv: &Server,
        locked: &mut engine::keyspace::Locked<'_>,
        info: &Arc<engine::clients::ClientInfo>,
        saved: Vec<SavedWait>,
    ) -> Result<(), String> {
        let mut inner = self.inner.lock();
        let mut old = std::mem::take(&mut inner.by_owner);
        for _ in 0..old.len() {
            srv.forget_waiter();
        }
        for s in saved {
            if !is_lock_wait(&s.args) {
                return Err("a lock waiter of the snapshot is not a LOCK ... WAIT".into());
            }
            let id = (s.db, s.args[1].clone(), s.args[2].clone());
            let kept = old.remove(&id).filter(|w| w.result.get().is_none());
            let notify = kept.as_ref().map_or_else(|| Arc::new(tokio::sync::Notify::new()), |w| w.notify.clone());
            let ring = notify.clone();
            let proto = if s.resp3 { resp::Protocol::Resp3 } else { resp::Protocol::Resp2 };
            let engine_waiter = srv
                .restore_waiter(
                    locked,
                    info.clone(),
                    s.db as usize,
                    proto,
                    s.args.clone(),
                    s.deadline,
                    Arc::new(move || ring.notify_waiters()),
                )
                .map_err(|e| format!("a lock waiter of the snapshot: {e:?}"))?;
            inner.next_seq += 1;
            let w = match kept {
                Some(w) => {
                    // The same handle, on the engine waiter queued now, at the snapshot's place.
                    let mut current = w.waiter.lock();
                    current.cancel();
                    *current = engine_waiter;
                    drop(current);
                    w.seq.store(inner.next_seq, Ordering::Relaxed);
                    w.asks.store(s.asks, Ordering::Relaxed);
                    w
                }
                None => Place::new(s.db, s.resp3, s.args, inner.next_seq, s.asks, engine_waiter, notify),
            };
            inner.by_owner.insert(id, w);
        }
        // The waits the snapshot no longer holds were decided while this node was behind: granted
        // if the lock is now their owner's (the token is the lock's), else nil.
        for ((db, key, owner), w) in old {
            let current = w.waiter.lock();
            current.cancel();
            if w.result.get().is_none() {
                let decided = match current.take() {
                    WaitState::Served(f) => f,
                    _ => match locked.shard_for(&key).dbs[db as usize].peek(&key).map(|e| &e.value) {
                        Some(engine::value::Value::Lock(l)) if l.owner[..] == owner[..] => {
                            Frame::Integer(l.token.min(i64::MAX as u64) as i64)
                        }
                        _ => Frame::Null,
                    },
                };
                let _ = w.result.set(decided);
            }
            drop(current);
            w.notify.notify_waiters();
        }
        Ok(())
    }
}
