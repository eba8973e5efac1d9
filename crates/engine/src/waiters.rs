//! Clients blocked on keys (BLPOP, BLMOVE, BZPOPMIN...), served by hand-off.
//!
//! A blocking command that finds nothing to do asks to block ([`BlockRequest`]); `Server::execute`
//! then queues a [`Waiter`] on each of its keys, in the tables holding them, while it still holds
//! those shards' locks. A later write to such a key marks it ready, and before the writer releases its
//! locks, `Server::call` serves the queued waiters in arrival order: the waiter's command runs on the
//! writer's thread against the writer's locks (its table entry's `serve` function), and the reply is
//! handed to the waiting connection. No other client can take the element in between, which is
//! Redis's guarantee, and no waiter polls.
//!
//! A waiter leaves its queues lazily: once served, timed out, or disconnected, its state is no longer
//! `Waiting` and queues skip and drop it when they next look.
//!
//! A *ringing* waiter ([`Waiter::ringing`]) is never served on the writer's thread: its command must
//! run elsewhere (a consensus node proposes it through the group's log, so that every node pops
//! the same element). A write that makes its key ready rings it instead: its connection is woken
//! to run the command's serve step itself, and the waiter keeps its place in the queue meanwhile.
//! Of the ringing waiters on a key, only the first that the key can serve is rung (or, while its
//! connection is running, told to try again when that run finds nothing); the others wait for its
//! outcome, which keeps them in the order they blocked.

use crate::clients::ClientInfo;
use crate::command::{Command, Runner};
use bytes::Bytes;
use parking_lot::Mutex;
use resp::{Frame, Protocol};
use std::sync::Arc;

/// What a blocking handler asks for when it cannot be served now.
pub struct BlockRequest {
    /// The keys to wait on (any of them becoming ready may serve the client).
    pub keys: Vec<Bytes>,
    /// Deadline on the monotonic timeline (ms); None blocks forever.
    pub deadline: Option<u64>,
    /// The reply to send on timeout.
    pub timeout_reply: Frame,
    /// The arguments the serve step reads instead of the command's own (XREAD's `$` resolved to
    /// the ID it stood for when the client blocked); None: the command's.
    pub serve_args: Option<Vec<Bytes>>,
}

/// What a command's serve step did with a ready key (see [`crate::ctx::Command::serve`]).
pub enum Serve {
    /// Served: the waiter's reply.
    Reply(Frame),
    /// The key cannot serve this waiter (still empty, wrong type...): it stays queued.
    NotNow,
    /// Serving needs locks the writer could not take: wake the waiter to run its command itself.
    Retry,
    /// This waiter cannot be served by the key's state, but the ones queued after it may be
    /// (stream readers each wait for entries after their own ID): it stays queued, the next is
    /// tried.
    Pass,
}

/// Where a waiter stands.
#[derive(Debug)]
pub enum WaitState {
    /// Queued.
    Waiting,
    /// A writer is serving it right now (holding the key's shard lock).
    Claimed,
    /// Served: this is the reply.
    Served(Frame),
    /// Woken to run its command again itself (its serve step needed locks the writer could not take).
    Retry,
    /// Gone: timed out, disconnected, or its result already taken.
    Done,
    /// A ringing waiter was rung by these keys: its connection runs the serve step for them.
    Rung(Vec<Bytes>),
    /// A ringing waiter's connection is running the serve step; these keys were written meanwhile
    /// and can serve it (tried again if the run finds nothing).
    Running(Vec<Bytes>),
}

/// A blocked client, as the key queues see it.
pub struct Waiter<R: Runner> {
    /// The client.
    pub info: Arc<ClientInfo>,
    /// Database the command runs in.
    pub db: usize,
    /// Protocol of the client (serve functions shape replies by it).
    pub proto: Protocol,
    /// The blocking command.
    pub cmd: &'static Command<R>,
    /// Its arguments.
    pub args: Vec<Bytes>,
    /// Deadline (monotonic ms), if any.
    pub deadline: Option<u64>,
    /// Reply on timeout.
    pub timeout_reply: Frame,
    /// Rung instead of served (see the module's documentation).
    rings: bool,
    state: Mutex<WaitState>,
    wake: Arc<dyn Fn() + Send + Sync>,
}

impl<R: Runner> Waiter<R> {
    /// A waiting waiter; `wake` tells its connection to look at its state.
    pub fn new(
        info: Arc<ClientInfo>,
        db: usize,
        proto: Protocol,
        cmd: &'static Command<R>,
        args: Vec<Bytes>,
        req: BlockRequest,
        wake: Arc<dyn Fn() + Send + Sync>,
    ) -> Waiter<R> {
        Waiter {
            info,
            db,
            proto,
            cmd,
            args: req.serve_args.unwrap_or(args),
            deadline: req.deadline,
            timeout_reply: req.timeout_reply,
            rings: false,
            state: Mutex::new(WaitState::Waiting),
            wake,
        }
    }

    /// This waiter as a ringing one (see the module's documentation): a write that makes one of its
    /// keys ready wakes its connection, which runs the serve step itself.
    pub fn ringing(self) -> Waiter<R> {
        Waiter { rings: true, ..self }
    }

    /// Whether this waiter is rung rather than served.
    pub fn rings(&self) -> bool {
        self.rings
    }

    /// True while queued (waiting, being served by a writer right now, or, for a ringing waiter,
    /// rung or running its serve step).
    pub fn is_waiting(&self) -> bool {
        matches!(
            *self.state.lock(),
            WaitState::Waiting | WaitState::Claimed | WaitState::Rung(_) | WaitState::Running(_)
        )
    }

    /// `key`, which can serve this ringing waiter, was written: a waiting one is rung (its
    /// connection woken), one rung or running already notes the key. False if it no longer waits.
    pub fn ring(&self, key: &[u8]) -> bool {
        let mut s = self.state.lock();
        match &mut *s {
            WaitState::Waiting => {
                *s = WaitState::Rung(vec![Bytes::copy_from_slice(key)]);
                drop(s);
                (self.wake)();
                true
            }
            WaitState::Rung(keys) | WaitState::Running(keys) => {
                if !keys.iter().any(|k| &k[..] == key) {
                    keys.push(Bytes::copy_from_slice(key));
                }
                true
            }
            _ => false,
        }
    }

    /// The serve step a ringing waiter's connection ran found nothing: the keys written meanwhile
    /// to run it again for (it stays running), or None when there are none (it waits again).
    pub fn rest(&self) -> Option<Vec<Bytes>> {
        let mut s = self.state.lock();
        match &mut *s {
            WaitState::Running(keys) if !keys.is_empty() => Some(std::mem::take(keys)),
            WaitState::Running(_) => {
                *s = WaitState::Waiting;
                None
            }
            _ => None,
        }
    }

    /// The waiter's connection is done with it (served, timed out, gone): it leaves its queues.
    pub fn end(&self) {
        *self.state.lock() = WaitState::Done;
    }

    /// A writer takes the waiter to serve it; false if it is no longer waiting (timed out, gone,
    /// already served). A claimed waiter cannot be cancelled, so a popped element is never lost.
    pub fn claim(&self) -> bool {
        let mut s = self.state.lock();
        if matches!(*s, WaitState::Waiting) {
            *s = WaitState::Claimed;
            true
        } else {
            false
        }
    }

    /// Ends a claim with `to` (Served, Retry, or back to Waiting) and wakes the waiter's connection.
    pub fn finish(&self, to: WaitState) {
        *self.state.lock() = to;
        (self.wake)();
    }

    /// Gives up waiting (timeout, disconnect). Returns false if it was already served or woken, in
    /// which case the caller must still take that outcome with [`Waiter::take`].
    pub fn cancel(&self) -> bool {
        let mut s = self.state.lock();
        if matches!(*s, WaitState::Waiting) {
            *s = WaitState::Done;
            true
        } else {
            false
        }
    }

    /// Takes the outcome (the waiter's connection calls this when woken): Served or Retry once,
    /// Rung once (the waiter is then running: see [`Waiter::rest`]), otherwise the current state
    /// (Waiting, Claimed, Running or Done) without change.
    pub fn take(&self) -> WaitState {
        let mut s = self.state.lock();
        match &mut *s {
            WaitState::Served(_) | WaitState::Retry => std::mem::replace(&mut *s, WaitState::Done),
            WaitState::Rung(keys) => {
                let keys = std::mem::take(keys);
                *s = WaitState::Running(Vec::new());
                WaitState::Rung(keys)
            }
            WaitState::Waiting => WaitState::Waiting,
            WaitState::Claimed => WaitState::Claimed,
            WaitState::Running(_) => WaitState::Running(Vec::new()),
            WaitState::Done => WaitState::Done,
        }
    }
}

/// Parses a blocking timeout in seconds (a float, as Redis 6+ accepts) into a deadline: None for 0.
pub fn parse_timeout(arg: &[u8], now: u64) -> Result<Option<u64>, Frame> {
    let secs = crate::args::parse_f64(arg)
        .filter(|v| v.is_finite())
        .ok_or_else(|| Frame::error("ERR timeout is not a float or out of range"))?;
    if secs < 0.0 {
        return Err(Frame::error("ERR timeout is negative"));
    }
    let ms = secs * 1000.0;
    if ms > i64::MAX as f64 / 2.0 {
        return Err(Frame::error("ERR timeout is out of range"));
    }
    let ms = ms as u64;
    if ms == 0 {
        // Redis: a timeout that rounds to 0 ms blocks forever only when it was exactly 0.
        return Ok(if secs == 0.0 { None } else { Some(now) });
    }
    Ok(Some(now.saturating_add(ms)))
}

impl<R: Runner> crate::keyspace::Waiting for Waiter<R> {
    fn is_waiting(&self) -> bool {
        Waiter::is_waiting(self)
    }
    fn into_any(self: Arc<Self>) -> Arc<dyn std::any::Any + Send + Sync> {
        self
    }
}
