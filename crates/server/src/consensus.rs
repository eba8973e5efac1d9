//! Consensus mode in the connection layer (docs/consensus.md): when the node is a member of a
//! Raft group, every command goes through [`run`] instead of straight to the engine.

use bytes::Bytes;
use engine::client::{Client, ReplyMode};
use engine::server::Server;
use raft::{Consensus, Decision};
use resp::Frame;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};

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

/// Runs `args` for `client` in consensus mode: locally, after a linearizable check on the
/// leader, through the log, or answered with a redirection or a refusal.
pub async fn run(node: &Arc<Consensus>, srv: &Server, client: &mut Client, args: &[Bytes]) -> Option<Frame> {
    match node.decide(client, args) {
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
            let reply = node.write(db, proto, args).await;
            with_reply_mode(client, Some(reply))
        }
        Decision::Exec => {
            let reply = node.exec(client).await;
            with_reply_mode(client, reply)
        }
        Decision::Members => Some(node.change_members(args).await),
    }
}

/// CLIENT REPLY OFF / SKIP hold for replicated writes too (the engine's `execute` applies them to
/// the commands it runs for this client).
fn with_reply_mode(client: &mut Client, reply: Option<Frame>) -> Option<Frame> {
    match client.reply_mode {
        ReplyMode::Off => None,
        ReplyMode::SkipThis => {
            client.reply_mode = ReplyMode::On;
            None
        }
        ReplyMode::On | ReplyMode::Skip => reply,
    }
}
