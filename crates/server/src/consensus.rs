//! Consensus mode in the connection layer (docs/consensus.md): when the node is a member of a
//! Raft group, every command goes through [`run`] instead of straight to the engine.

use bytes::Bytes;
use engine::client::{Client, ReplyMode};
use engine::server::Server;
use raft::{Answer, BlockWait, Consensus, Decision, LockWait};
use resp::Frame;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

/// The node's consensus handle, set once at startup when `raft-id` is given. A process is one
/// node of at most one group, and every connection task reads it, so it lives beside the
/// process's other once-set state rather than in each connection's arguments.
static NODE: OnceLock<Arc<Consensus>> = OnceLock::new();

/// Set at startup, before any listener, when the node is configured for consensus mode: from
/// then on no command reaches the engine around the group, even before the node has started.
static EXPECTED: AtomicBool = AtomicBool::new(false);

/// Marks the process as a consensus node (startup, before the listeners).
pub fn expect() {
    EXPECTED.store(true, Ordering::SeqCst);
}

/// Records the node's handle once it started.
pub fn install(node: Arc<Consensus>) {
    let _ = NODE.set(node);
}

/// In consensus mode, the node's handle, or the reply for a client that came before it
/// started; None outside consensus mode.
pub fn node() -> Option<Result<&'static Arc<Consensus>, Frame>> {
    if !EXPECTED.load(Ordering::Relaxed) {
        return None;
    }
    Some(NODE.get().ok_or_else(|| Frame::error("LOADING Redis is loading the dataset in memory")))
}

/// What [`run`] did with a command.
pub enum Ran {
    /// The reply (None: none is sent, as for the engine's `execute`).
    Reply(Option<Frame>),
    /// A `LOCK ... WAIT` queued: the connection waits for its outcome ([`LockWait::outcome`]).
    Waits(Arc<LockWait>),
    /// A blocking command found nothing: the connection waits on this node for one of its keys to
    /// serve it, then proposes the serve step (`conn.rs`, `wait_ringing`).
    Blocks(BlockWait),
}

/// Runs `args` for `client` in consensus mode: locally, after a linearizable check on the
/// leader, through the log, or answered with a redirection or a refusal.
pub async fn run(node: &Arc<Consensus>, srv: &Server, client: &mut Client, args: &[Bytes]) -> Ran {
    let reply = match node.decide(client, args) {
        Decision::Local => srv.execute(client, args),
        Decision::Info => {
            let mut reply = srv.execute(client, args);
            node.add_info(args, &mut reply);
            reply
        }
        Decision::Reply(f) => {
            // A command refused or redirected inside MULTI fails the transaction, as a queuing
            // error does (EXEC answers EXECABORT).
            if f.is_error() {
                client.multi.flag_error();
            }
            Some(f)
        }
        Decision::Read => match node.linearize(args).await {
            Ok(()) => srv.execute(client, args),
            Err(f) => Some(f),
        },
        Decision::Write => {
            let (db, proto) = (client.db, client.proto);
            match node.write(db, proto, args).await {
                Answer::Reply(reply) => with_reply_mode(client, Some(reply)),
                Answer::Queued(wait) => return Ran::Waits(wait),
                Answer::Nothing(Some(block)) => return Ran::Blocks(block),
                // Only a blocked client's serve step finds nothing without saying what to wait for.
                Answer::Nothing(None) => with_reply_mode(client, Some(Frame::Null)),
            }
        }
        Decision::Exec => {
            let reply = node.exec(client).await;
            with_reply_mode(client, reply)
        }
        Decision::Members => Some(node.change_members(args).await),
        Decision::ReadOnly(on) => {
            client.readonly = on;
            Some(Frame::ok())
        }
    };
    Ran::Reply(reply)
}

/// How long raft time may stand still under a queued `LOCK ... WAIT` with a timeout before its
/// client is told the group is down (its deadline is on raft time, which only a working group
/// moves).
const WAIT_STALL: Duration = Duration::from_secs(10);

/// Where raft time stood when a waiting connection last saw it move: (raft time, when seen).
pub type RaftTimeSeen = (u64, Instant);

/// The reply to a queued `LOCK ... WAIT` once there is one, as this node applied it: the grant's
/// token, or nil at its deadline; or `CLUSTERDOWN` when the wait has a timeout and raft time
/// (`seen`, updated here) stood still for [`WAIT_STALL`]: the wait stays queued, so a retry with
/// the same owner takes its place again. None: keep waiting (the connection layer waits for
/// [`LockWait::notified`], a poll period or the client, see `conn.rs`).
pub fn lock_outcome(srv: &Server, wait: &LockWait, seen: &mut RaftTimeSeen) -> Option<Frame> {
    if let Some(f) = wait.outcome() {
        return Some(f);
    }
    let now = srv.clock.now_ms();
    if now != seen.0 {
        *seen = (now, Instant::now());
    } else if wait.deadline_ms().is_some() && seen.1.elapsed() >= WAIT_STALL {
        return Some(Frame::error(format!(
            "{} (the lock wait's outcome is unknown; it stays queued)",
            raft::CLUSTERDOWN
        )));
    }
    None
}

/// CLIENT REPLY OFF / SKIP hold for replicated writes too (the engine's `execute` applies them to
/// the commands it runs for this client).
pub fn with_reply_mode(client: &mut Client, reply: Option<Frame>) -> Option<Frame> {
    match client.reply_mode {
        ReplyMode::Off => None,
        ReplyMode::SkipThis => {
            client.reply_mode = ReplyMode::On;
            None
        }
        ReplyMode::On | ReplyMode::Skip => reply,
    }
}
