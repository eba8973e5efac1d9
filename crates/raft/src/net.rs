//! The transport between nodes: a framed TCP protocol on the raft port.
//!
//! A frame is `[length u32 little endian][postcard body]`. A node opens one connection per peer
//! it sends to and makes one call at a time on it: a [`Message`] carrying an [`Rpc`] (openraft's
//! append-entries, vote, pre-vote, or a whole snapshot), answered by a [`Message`] carrying an
//! [`RpcReply`].
//! Every message also carries the sender's id and its address book (raft id to the `host:port`
//! clients reach a node on), which is how a follower learns where to send clients (`-MOVED`) and
//! every node can describe the group in `CLUSTER SLOTS`.

use crate::machine::Raft;
use crate::types::{NodeId, Snapshot, SnapshotData, SnapshotMeta, TypeConfig, Vote};
use openraft::BasicNode;
use openraft::error::{NetworkError, RPCError, ReplicationClosed, StreamingError, Unreachable};
use openraft::network::{RPCOption, RaftNetworkFactory, RaftNetworkV2};
use openraft::raft::{AppendEntriesRequest, AppendEntriesResponse, SnapshotResponse, VoteRequest, VoteResponse};
use parking_lot::Mutex;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::future::Future;
use std::io;
use std::sync::Arc;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// The largest frame accepted (a snapshot travels as one frame).
const MAX_FRAME: usize = 1 << 30;

/// Raft id to the `host:port` clients reach that node on.
pub type AddressBook = Arc<Mutex<BTreeMap<NodeId, String>>>;

/// What a node sends.
#[derive(Serialize, Deserialize)]
pub enum Rpc {
    /// openraft's AppendEntries (heartbeats included).
    Append(AppendEntriesRequest<TypeConfig>),
    /// openraft's RequestVote.
    Vote(VoteRequest<TypeConfig>),
    /// openraft's pre-vote: would the receiver vote for the sender, were it to campaign (asked
    /// before a candidate raises its term, so a node cut off from the group does not depose a
    /// leader when it comes back).
    PreVote(VoteRequest<TypeConfig>),
    /// A whole snapshot, for a follower too far behind the log.
    Snapshot {
        /// The leader's vote.
        vote: Vote,
        /// What the snapshot covers.
        meta: SnapshotMeta,
        /// Its bytes (see `machine`).
        data: Vec<u8>,
    },
    /// Who is there: answered with the node's raft id (`CLUSTER MEET`, before adding a node).
    Hello,
    /// A lock waiter's connection went away on a node that does not lead: the leader proposes
    /// the wait's leave (see `waits`).
    LeaveQueue(crate::types::LeaveQueue),
}

/// What a node answers.
#[derive(Serialize, Deserialize)]
pub enum RpcReply {
    /// To [`Rpc::Append`].
    Append(AppendEntriesResponse<TypeConfig>),
    /// To [`Rpc::Vote`] and [`Rpc::PreVote`].
    Vote(VoteResponse<TypeConfig>),
    /// To [`Rpc::Snapshot`].
    Snapshot(SnapshotResponse<TypeConfig>),
    /// The receiving node's raft could not take it (shutting down).
    Failed(String),
    /// To [`Rpc::Hello`]: the receiving node's raft id.
    Hello(NodeId),
    /// To [`Rpc::LeaveQueue`]: the receiving node leads and committed the leave (a node that
    /// does not lead, or could not commit it in time, answers [`RpcReply::Failed`]).
    Taken,
}

/// A frame's contents: who sends, the addresses it knows, the body.
#[derive(Serialize, Deserialize)]
pub struct Message<T> {
    /// The sender's raft id.
    pub from: NodeId,
    /// The sender's address book.
    pub book: Vec<(NodeId, String)>,
    /// The RPC or its reply.
    pub body: T,
}

async fn write_frame<T: Serialize>(sock: &mut TcpStream, msg: &T) -> io::Result<()> {
    let body = postcard::to_allocvec(msg).map_err(io::Error::other)?;
    let mut buf = Vec::with_capacity(4 + body.len());
    buf.extend_from_slice(&(body.len() as u32).to_le_bytes());
    buf.extend_from_slice(&body);
    sock.write_all(&buf).await
}

async fn read_frame<T: for<'a> Deserialize<'a>>(sock: &mut TcpStream) -> io::Result<T> {
    let mut len = [0u8; 4];
    sock.read_exact(&mut len).await?;
    let len = u32::from_le_bytes(len) as usize;
    if len > MAX_FRAME {
        return Err(io::Error::new(io::ErrorKind::InvalidData, "raft frame too large"));
    }
    let mut body = vec![0u8; len];
    sock.read_exact(&mut body).await?;
    postcard::from_bytes(&body).map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e))
}

/// What this node tells its peers about itself and what it learns from them.
#[derive(Clone)]
pub struct Directory {
    /// This node's id.
    pub id: NodeId,
    /// The group's client addresses as known here.
    pub book: AddressBook,
}

impl Directory {
    fn message<T>(&self, body: T) -> Message<T> {
        let book = self.book.lock().iter().map(|(k, v)| (*k, v.clone())).collect();
        Message { from: self.id, book, body }
    }

    /// Learns the addresses a peer sent. A node's own entry is always its own.
    fn learn(&self, book: Vec<(NodeId, String)>) {
        let mut mine = self.book.lock();
        for (id, addr) in book {
            if id != self.id {
                mine.insert(id, addr);
            }
        }
    }
}

/// Where a node hands the [`Rpc::LeaveQueue`] calls it receives, each with where to say whether
/// it committed the leave.
pub type Leaves = tokio::sync::mpsc::UnboundedSender<(crate::types::LeaveQueue, tokio::sync::oneshot::Sender<bool>)>;

/// How long the node serving an [`Rpc::LeaveQueue`] waits for the leave to commit before it
/// answers that it did not (the caller tries again); [`forward_leave`] waits a little longer.
const LEAVE_COMMIT: Duration = Duration::from_secs(5);

/// Serves the raft port: each connection's calls are handed to `raft` in order, forwarded leaves
/// to `leaves`.
pub async fn serve(listener: TcpListener, raft: Raft, dir: Directory, leaves: Leaves) {
    loop {
        let (sock, peer) = match listener.accept().await {
            Ok(x) => x,
            Err(e) => {
                tracing::warn!("raft: accept failed: {e}");
                tokio::time::sleep(Duration::from_millis(50)).await;
                continue;
            }
        };
        let _ = sock.set_nodelay(true);
        let (raft, dir, leaves) = (raft.clone(), dir.clone(), leaves.clone());
        tokio::spawn(async move {
            if let Err(e) = serve_conn(sock, raft, dir, leaves).await
                && e.kind() != io::ErrorKind::UnexpectedEof
            {
                tracing::debug!("raft: connection from {peer} ended: {e}");
            }
        });
    }
}

async fn serve_conn(mut sock: TcpStream, raft: Raft, dir: Directory, leaves: Leaves) -> io::Result<()> {
    loop {
        let msg: Message<Rpc> = read_frame(&mut sock).await?;
        dir.learn(msg.book);
        let reply = match msg.body {
            Rpc::Append(req) => raft.append_entries(req).await.map(RpcReply::Append).map_err(|e| e.to_string()),
            Rpc::Vote(req) => raft.vote(req).await.map(RpcReply::Vote).map_err(|e| e.to_string()),
            Rpc::PreVote(req) => raft.pre_vote(req).await.map(RpcReply::Vote).map_err(|e| e.to_string()),
            Rpc::Snapshot { vote, meta, data } => {
                let snapshot = Snapshot { meta, snapshot: std::io::Cursor::new(data) };
                raft.install_full_snapshot(vote, snapshot).await.map(RpcReply::Snapshot).map_err(|e| e.to_string())
            }
            Rpc::Hello => Ok(RpcReply::Hello(dir.id)),
            Rpc::LeaveQueue(leave) => {
                let (tx, committed) = tokio::sync::oneshot::channel();
                let _ = leaves.send((leave, tx));
                match tokio::time::timeout(LEAVE_COMMIT, committed).await {
                    Ok(Ok(true)) => Ok(RpcReply::Taken),
                    _ => Err("the leave was not committed here".to_string()),
                }
            }
        };
        let reply = reply.unwrap_or_else(RpcReply::Failed);
        write_frame(&mut sock, &dir.message(reply)).await?;
    }
}

/// The raft id of the node whose raft port is `addr` (asked with [`Rpc::Hello`]).
pub async fn ask_id(addr: &str, dir: &Directory) -> io::Result<NodeId> {
    match call_once(addr, dir, Rpc::Hello, Duration::from_secs(5)).await? {
        RpcReply::Hello(id) => Ok(id),
        _ => Err(io::Error::other(format!("{addr} answered another call"))),
    }
}

/// Hands a lock waiter's leave to the node whose raft port is `addr` (the leader); Ok once that
/// node committed it.
pub async fn forward_leave(addr: &str, dir: &Directory, leave: crate::types::LeaveQueue) -> io::Result<()> {
    match call_once(addr, dir, Rpc::LeaveQueue(leave), LEAVE_COMMIT + Duration::from_secs(1)).await? {
        RpcReply::Taken => Ok(()),
        RpcReply::Failed(e) => Err(io::Error::other(format!("{addr}: {e}"))),
        _ => Err(io::Error::other(format!("{addr} answered another call"))),
    }
}

/// One call to the node whose raft port is `addr`, on a connection of its own (outside openraft's
/// replication, which keeps a [`Peer`] per member).
async fn call_once(addr: &str, dir: &Directory, rpc: Rpc, timeout: Duration) -> io::Result<RpcReply> {
    let mut peer = Peer { target: 0, addr: addr.to_string(), dir: dir.clone(), conn: None };
    peer.call(rpc, timeout).await.map_err(|(CallError::Unreachable(e) | CallError::Network(e))| e)
}

/// Makes a [`Peer`] for each node openraft replicates to.
pub struct Network {
    /// This node's directory.
    pub dir: Directory,
    /// How this node reaches each member (its own `raft-peers`). The group's membership records
    /// the addresses of the node that initialized it; a node's own list wins, so each node may
    /// reach a peer by its own route (a proxy, another interface: the fault-injection tests put
    /// a proxy on every link).
    pub routes: BTreeMap<NodeId, String>,
}

impl RaftNetworkFactory<TypeConfig> for Network {
    type Network = Peer;

    async fn new_client(&mut self, target: NodeId, node: &BasicNode) -> Peer {
        let addr = self.routes.get(&target).unwrap_or(&node.addr).clone();
        Peer { target, addr, dir: self.dir.clone(), conn: None }
    }
}

/// The connection to one peer (opened on the first call, opened again after a failure).
pub struct Peer {
    target: NodeId,
    addr: String,
    dir: Directory,
    conn: Option<TcpStream>,
}

/// Why a call failed: the peer could not be reached at all, or the exchange broke.
enum CallError {
    Unreachable(io::Error),
    Network(io::Error),
}

impl Peer {
    /// One call: the request, then its reply. The connection is taken out of `self` for the
    /// exchange and put back only after a whole one, so a call that is dropped half-way (openraft
    /// wraps its calls in timeouts of its own) closes the connection with it. Kept, the next call
    /// would read the dropped call's reply as its own: an append's `Success` carries no log id,
    /// so a leader would count entries as stored on a follower that never got them, commit them
    /// without a majority and acknowledge writes a later leader does not have.
    async fn call(&mut self, rpc: Rpc, ttl: Duration) -> Result<RpcReply, CallError> {
        let timed_out = || io::Error::new(io::ErrorKind::TimedOut, "raft call timed out");
        let mut sock = match self.conn.take() {
            Some(sock) => sock,
            None => {
                let sock = tokio::time::timeout(ttl, TcpStream::connect(&self.addr))
                    .await
                    .map_err(|_| CallError::Unreachable(timed_out()))?
                    .map_err(CallError::Unreachable)?;
                let _ = sock.set_nodelay(true);
                sock
            }
        };
        let msg = self.dir.message(rpc);
        let exchange = async {
            write_frame(&mut sock, &msg).await?;
            read_frame::<Message<RpcReply>>(&mut sock).await
        };
        match tokio::time::timeout(ttl, exchange).await {
            Ok(Ok(reply)) => {
                self.conn = Some(sock);
                self.dir.learn(reply.book);
                Ok(reply.body)
            }
            Ok(Err(e)) => Err(CallError::Network(e)),
            Err(_) => Err(CallError::Network(timed_out())),
        }
    }

    /// One of openraft's calls: `rpc`, and the reply `expected` takes (any other fails it).
    async fn unary<T>(
        &mut self,
        rpc: Rpc,
        option: RPCOption,
        expected: impl FnOnce(RpcReply) -> Result<T, RpcReply>,
    ) -> Result<T, RPCError<TypeConfig>> {
        match self.call(rpc, option.hard_ttl()).await {
            Ok(reply) => expected(reply).map_err(|other| self.rpc_error(mismatch(self.target, other))),
            Err(e) => Err(self.rpc_error(e)),
        }
    }

    fn rpc_error(&self, e: CallError) -> RPCError<TypeConfig> {
        match e {
            CallError::Unreachable(e) => RPCError::Unreachable(Unreachable::new(&e)),
            CallError::Network(e) => RPCError::Network(NetworkError::new(&e)),
        }
    }
}

/// Why a reply that is not the one a call expects failed it: the peer's error, or another
/// call's reply.
fn mismatch(target: NodeId, reply: RpcReply) -> CallError {
    match reply {
        RpcReply::Failed(e) => CallError::Network(io::Error::other(e)),
        _ => CallError::Network(io::Error::other(format!("node {target} answered another call"))),
    }
}

/// The reply a vote and a pre-vote take.
fn vote_reply(reply: RpcReply) -> Result<VoteResponse<TypeConfig>, RpcReply> {
    if let RpcReply::Vote(r) = reply { Ok(r) } else { Err(reply) }
}

impl RaftNetworkV2<TypeConfig> for Peer {
    type SnapshotData = SnapshotData;

    async fn append_entries(
        &mut self,
        rpc: AppendEntriesRequest<TypeConfig>,
        option: RPCOption,
    ) -> Result<AppendEntriesResponse<TypeConfig>, RPCError<TypeConfig>> {
        let append = |reply| if let RpcReply::Append(r) = reply { Ok(r) } else { Err(reply) };
        self.unary(Rpc::Append(rpc), option, append).await
    }

    async fn vote(
        &mut self,
        rpc: VoteRequest<TypeConfig>,
        option: RPCOption,
    ) -> Result<VoteResponse<TypeConfig>, RPCError<TypeConfig>> {
        self.unary(Rpc::Vote(rpc), option, vote_reply).await
    }

    async fn pre_vote(
        &mut self,
        rpc: VoteRequest<TypeConfig>,
        option: RPCOption,
    ) -> Result<VoteResponse<TypeConfig>, RPCError<TypeConfig>> {
        self.unary(Rpc::PreVote(rpc), option, vote_reply).await
    }

    async fn full_snapshot(
        &mut self,
        vote: Vote,
        snapshot: Snapshot,
        cancel: impl Future<Output = ReplicationClosed> + Send + 'static,
        option: RPCOption,
    ) -> Result<SnapshotResponse<TypeConfig>, StreamingError<TypeConfig>> {
        let rpc = Rpc::Snapshot { vote, meta: snapshot.meta, data: snapshot.snapshot.into_inner() };
        let to_streaming = |e: CallError| match e {
            CallError::Unreachable(e) => StreamingError::Unreachable(Unreachable::new(&e)),
            CallError::Network(e) => StreamingError::Network(NetworkError::new(&e)),
        };
        tokio::select! {
            closed = cancel => Err(StreamingError::Closed(closed)),
            r = self.call(rpc, option.hard_ttl()) => match r {
                Ok(RpcReply::Snapshot(r)) => Ok(r),
                Ok(other) => Err(to_streaming(mismatch(self.target, other))),
                Err(e) => Err(to_streaming(e)),
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A call dropped after its request went out (as openraft's own timeout drops one) must not
    /// leave its reply to be read by the next call on the connection.
    #[test]
    fn a_dropped_call_s_reply_is_never_read_by_the_next_call() {
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        rt.block_on(async {
            let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
            let addr = listener.local_addr().unwrap().to_string();
            // A peer that answers each call with 100 x the connection's number + the call's
            // number on it, the very first one late.
            tokio::spawn(async move {
                let mut conns = 0;
                loop {
                    let Ok((mut sock, _)) = listener.accept().await else { return };
                    conns += 1;
                    let conn = conns;
                    tokio::spawn(async move {
                        let dir = Directory { id: 9, book: Arc::default() };
                        let mut n = 0;
                        while let Ok(_msg) = read_frame::<Message<Rpc>>(&mut sock).await {
                            n += 1;
                            if conn == 1 && n == 1 {
                                tokio::time::sleep(Duration::from_millis(300)).await;
                            }
                            let reply = RpcReply::Hello(conn * 100 + n);
                            if write_frame(&mut sock, &dir.message(reply)).await.is_err() {
                                return;
                            }
                        }
                    });
                }
            });
            let dir = Directory { id: 1, book: Arc::default() };
            let mut peer = Peer { target: 9, addr, dir, conn: None };
            // Dropped by an outer timeout while its reply is on its way.
            let dropped =
                tokio::time::timeout(Duration::from_millis(100), peer.call(Rpc::Hello, Duration::from_secs(5)));
            assert!(dropped.await.is_err());
            tokio::time::sleep(Duration::from_millis(400)).await;
            // The next call gets its own reply (the first on a second connection), not the
            // dropped call's (101).
            match peer.call(Rpc::Hello, Duration::from_secs(5)).await {
                Ok(RpcReply::Hello(n)) => assert_eq!(n, 201, "read another call's reply"),
                _ => panic!("no reply"),
            }
            match peer.call(Rpc::Hello, Duration::from_secs(5)).await {
                Ok(RpcReply::Hello(n)) => assert_eq!(n, 202),
                _ => panic!("no reply"),
            }
        });
    }
}
