//! Consensus mode in the connection layer (docs/consensus.md): when the node is a member of a
//! Raft group, every command goes through [`run`] instead of straight to the engine.

use bytes::Bytes;
use engine::client::Client;
use engine::server::Server;
use raft::{Consensus, Decision};
use resp::Frame;
use std::sync::{Arc, OnceLock};

/// The node's consensus handle, set once at startup when `raft-id` is given. A process is one
/// node of at most one group, and every connection task reads it, so it lives beside the
/// process's other once-set state rather than in each connection's arguments.
static NODE: OnceLock<Arc<Consensus>> = OnceLock::new();

/// Records the node's handle (startup, before the data is marked loaded).
pub fn install(node: Arc<Consensus>) {
    let _ = NODE.set(node);
}

/// The node's handle, in consensus mode.
pub fn node() -> Option<&'static Arc<Consensus>> {
    NODE.get()
}

/// Runs `args` for `client` in consensus mode: locally, after a linearizable check on the
/// leader, through the log, or answered with a redirection or a refusal.
pub async fn run(node: &Consensus, srv: &Server, client: &mut Client, args: &[Bytes]) -> Option<Frame> {
    match node.decide(client, args) {
        Decision::Local => srv.execute(client, args),
        Decision::Info => {
            let mut reply = srv.execute(client, args);
            node.add_info(args, &mut reply);
            reply
        }
        Decision::Reply(f) => Some(f),
        Decision::Read => match node.linearize(args).await {
            Ok(()) => srv.execute(client, args),
            Err(f) => Some(f),
        },
        Decision::Write => {
            let (db, proto) = (client.db, client.proto);
            Some(node.write(db, proto, args).await)
        }
    }
}
