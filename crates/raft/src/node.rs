//! A node of the group: openraft started on its own runtime, the raft port served, the leader's
//! raft time, and what the connection layer asks: where a command goes, proposing a write,
//! checking a read, and the group as `CLUSTER` and `INFO` describe it.

use crate::machine::{Raft, RaftClock, StateMachine};
use crate::net::{AddressBook, Directory, Network};
use crate::options::Options;
use crate::route::{self, Class};
use crate::store::LogStore;
use crate::types::{BlockWait, Command, LeaveQueue, NodeId, Op, Request, ServeWaiter, Transaction, WatchGuard, Work};
use crate::waits::{LockWait, Waits};
use bytes::Bytes;
use engine::client::Client;
use engine::keyspace::{WatchState, WatchedKey};
use engine::server::Server;
use openraft::async_runtime::WatchReceiver;
use openraft::error::{ClientWriteError, LinearizableReadError, RaftError};
use openraft::{BasicNode, ServerState};
use parking_lot::Mutex;
use resp::Frame;
use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// How long a client waits for its write to commit (or its read to be confirmed) before it is
/// told the group could not do it in time.
const CLIENT_TIMEOUT: Duration = Duration::from_secs(10);
/// How long a lock waiter's leave is tried again until it commits ([`Consensus::cancel_wait`]).
const LEAVE_RETRY_FOR: Duration = Duration::from_secs(300);
/// How often the leader checks whether raft time should advance by itself (a tick entry).
const TICK: Duration = Duration::from_millis(100);

/// The reply when no leader is known.
pub const CLUSTERDOWN: &str = "CLUSTERDOWN The cluster is down";

/// What the connection layer does with a command.
#[derive(Debug)]
pub enum Decision {
    /// Run it on this node's engine as usual.
    Local,
    /// Run it here, then add the `consensus` section to its reply ([`Consensus::add_info`]).
    Info,
    /// This is the reply (MOVED, CLUSTERDOWN, a refusal, a CLUSTER answer).
    Reply(Frame),
    /// This node leads: confirm leadership ([`Consensus::linearize`]), then run it here.
    Read,
    /// This node leads: propose it ([`Consensus::write`]); the reply is the apply's.
    Write,
    /// EXEC of a transaction: [`Consensus::exec`].
    Exec,
    /// `CLUSTER MEET` or `CLUSTER FORGET` on the leader: [`Consensus::change_members`].
    Members,
    /// `READONLY` (true) or `READWRITE` (false): set the client's flag, answer `+OK`.
    ReadOnly(bool),
}

/// The raft time the current leader proposes with: the applied raft time when this node became
/// leader (or, for the first leader of a new group, the wall clock), then the node's monotonic
/// clock. Time stands still between two leaders.
struct LeaderTime {
    term: u64,
    base_ms: u64,
    since: Instant,
}

/// The most writes one entry carries.
const MAX_BATCH: usize = 512;

/// How many entries the leader's proposer keeps proposed and not yet applied at a time. One
/// was the most that paid while openraft 0.9 made the leader sync an entry before it replicated
/// it (a second one waited for that sync anyway); openraft 0.10 replicates an entry while the
/// leader syncs it, so the next entry's append and sync overlap the previous one's round trip.
/// With 2 and 4 a contended lock changed hands 17-20% more often than with one (2 rounds each,
/// on a build with a pipelined append stream that was not kept: docs/consensus.md, "openraft
/// 0.10").
const PROPOSALS_IN_FLIGHT: usize = 4;

/// A write waiting for its entry: the command or transaction, the slot its redirection names, the
/// client's WATCH to check first, where its reply goes.
struct Queued {
    work: Work,
    slot: u16,
    watch: Option<PendingWatch>,
    tx: tokio::sync::oneshot::Sender<Answer>,
}

/// What a proposal came to, as the leader applied it.
#[derive(Debug)]
pub enum Answer {
    /// The apply's reply.
    Reply(Frame),
    /// A `LOCK ... WAIT` queued: its client waits for the outcome.
    Queued(Arc<LockWait>),
    /// A blocking command, or a blocked client's run ([`Consensus::serve`]), found nothing to serve
    /// it: the client waits on this node (the command hands back what for).
    Nothing(Option<BlockWait>),
}

/// A transaction's WATCH as the leader's engine keeps it: the state every applied change to a
/// watched key marks dirty, and the registrations (held until the check, which keeps them live).
struct PendingWatch {
    state: Arc<WatchState>,
    watched: Vec<(usize, engine::value::Key, Arc<WatchedKey>)>,
}

/// A runtime shut down without waiting when dropped (see [`Consensus::start`]).
struct RuntimeGuard(Option<tokio::runtime::Runtime>);

impl Drop for RuntimeGuard {
    fn drop(&mut self) {
        if let Some(rt) = self.0.take() {
            rt.shutdown_background();
        }
    }
}

/// This node's part in the group.
pub struct Consensus {
    raft: Raft,
    opts: Options,
    srv: Arc<Server>,
    clock: Arc<RaftClock>,
    book: AddressBook,
    committed: Arc<AtomicU64>,
    lead: Mutex<Option<LeaderTime>>,
    /// Writes waiting for the next entry, and whether a proposer is at work (see
    /// [`Consensus::write`]).
    queue: Mutex<(Vec<Queued>, bool)>,
    /// Entries proposed and not yet applied may number at most [`PROPOSALS_IN_FLIGHT`].
    in_flight: Arc<tokio::sync::Semaphore>,
    /// The lock waiters the state machine queues.
    waits: Arc<Waits>,
    /// Whether this node leads, and the leader it knows, for blocked clients (see
    /// [`Consensus::leadership`]); kept by a task that follows openraft's metrics.
    leadership: Arc<tokio::sync::watch::Sender<(bool, Option<NodeId>)>>,
    /// The runtime openraft, the transport and the ticker run on (off the client runtime, so an
    /// fsync or a long apply delays neither clients nor heartbeats).
    rt: Option<tokio::runtime::Runtime>,
}

impl Drop for Consensus {
    fn drop(&mut self) {
        if let Some(rt) = self.rt.take() {
            rt.shutdown_background();
        }
    }
}

/// Worker threads of the raft runtime. openraft's core, its replication streams, the state
/// machine and the raft port's connections are tasks there; a second worker lets them run in
/// parallel, but on a 2-core machine, which the client runtime, the log's sync thread and the
/// other processes share, it mostly adds wake-ups between threads: with one, a 3-node group on one
/// 2-core machine ran 9,500-11,000 lock cycles/s against 7,700-8,900 (50 clients on distinct keys)
/// and handed a contended lock over 10-20% more often (docs/consensus.md).
fn raft_threads() -> usize {
    match std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1) {
        ..=2 => 1,
        _ => 2,
    }
}

impl Consensus {
    /// Starts the node: opens the log and the snapshot under `opts.dir`, starts openraft, serves
    /// the raft port, and initializes the group with `raft-peers` if the log is new (every member
    /// does the same, which openraft allows). `client_addr` is where clients reach this node.
    pub async fn start(
        srv: Arc<Server>,
        clock: Arc<RaftClock>,
        opts: Options,
        client_addr: String,
    ) -> Result<Arc<Consensus>, String> {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(raft_threads())
            .thread_name("raft")
            .enable_all()
            .build()
            .map_err(|e| format!("cannot start the raft runtime: {e}"))?;
        // On an error below the runtime goes away without waiting for its tasks: dropping it here,
        // in an async context, would panic and hide the error.
        let mut guard = RuntimeGuard(Some(rt));
        let rt = guard.0.as_ref().expect("just set");
        let committed = Arc::new(AtomicU64::new(0));
        let log = LogStore::open(&opts.dir, committed.clone()).map_err(|e| format!("cannot open the raft log: {e}"))?;
        let sm = StateMachine::open(srv.clone(), clock.clone(), &opts.dir)?;
        let waits = sm.waits();
        let book: AddressBook = Arc::new(Mutex::new(BTreeMap::from([(opts.id, client_addr)])));
        let dir = Directory { id: opts.id, book: book.clone() };
        let config = openraft::Config {
            cluster_name: "latch".into(),
            heartbeat_interval: opts.heartbeat_ms,
            election_timeout_min: opts.election_ms,
            election_timeout_max: opts.election_ms.saturating_mul(2),
            install_snapshot_timeout: 10_000,
            snapshot_policy: openraft::SnapshotPolicy::LogsSinceLast(opts.snapshot_every),
            // A follower this far behind gets the snapshot rather than the entries.
            max_in_snapshot_log_to_keep: (opts.snapshot_every / 2).min(1000),
            purge_batch_size: (opts.snapshot_every / 2).clamp(1, 256),
            ..Default::default()
        }
        .validate()
        .map_err(|e| format!("raft configuration: {e}"))?;
        let own = opts.peers[&opts.id].clone();
        let listener = rt
            .spawn(async move { tokio::net::TcpListener::bind(own).await })
            .await
            .map_err(|e| e.to_string())?
            .map_err(|e| format!("cannot listen on the raft port {}: {e}", opts.port))?;
        let (id, net) = (opts.id, Network { dir: dir.clone(), routes: opts.peers.clone() });
        let raft = rt
            .spawn(async move { Raft::new(id, Arc::new(config), net, log, sm).await })
            .await
            .map_err(|e| e.to_string())?
            .map_err(|e| format!("cannot start raft: {e}"))?;
        let (leaves, mut forwarded) = tokio::sync::mpsc::unbounded_channel();
        rt.spawn(crate::net::serve(listener, raft.clone(), dir, leaves));
        let members: BTreeMap<NodeId, BasicNode> =
            opts.peers.iter().map(|(id, addr)| (*id, BasicNode { addr: addr.clone() })).collect();
        let r = raft.clone();
        let join = opts.join;
        let initialized = rt
            .spawn(async move {
                if join || r.is_initialized().await.unwrap_or(true) {
                    return Ok(false);
                }
                r.initialize(members).await.map(|()| true)
            })
            .await
            .map_err(|e| e.to_string())?;
        match initialized {
            Ok(true) => tracing::info!("raft: new group initialized with {} members", opts.peers.len()),
            Ok(false) if opts.join => tracing::info!("raft: waiting to be added to a group (raft-join)"),
            Ok(false) => tracing::info!("raft: continuing the group from {}", opts.dir.display()),
            // Another member's initialization reached this node first.
            Err(e) => tracing::info!("raft: not initializing: {e}"),
        }
        let leadership = Arc::new(tokio::sync::watch::Sender::new((false, None)));
        rt.spawn(follow_leadership(raft.server_metrics(), leadership.clone(), opts.id));
        let node = Arc::new(Consensus {
            raft,
            opts,
            srv,
            clock,
            book,
            committed,
            lead: Mutex::new(None),
            queue: Mutex::new((Vec::new(), false)),
            in_flight: Arc::new(tokio::sync::Semaphore::new(PROPOSALS_IN_FLIGHT)),
            waits,
            leadership,
            rt: None,
        });
        rt.spawn(ticker(Arc::downgrade(&node)));
        let weak = Arc::downgrade(&node);
        rt.spawn(async move {
            while let Some((leave, committed)) = forwarded.recv().await {
                let Some(node) = weak.upgrade() else { break };
                tokio::spawn(async move {
                    let _ = committed.send(node.propose_leave(leave).await);
                });
            }
        });
        // The runtime lives as long as the node.
        let rt = guard.0.take().expect("still set");
        let mut node = node;
        if let Some(n) = Arc::get_mut(&mut node) {
            n.rt = Some(rt);
        } else {
            // The ticker holds only a weak reference, so this does not happen; keep the runtime
            // alive anyway rather than stop the node.
            std::mem::forget(rt);
        }
        Ok(node)
    }

    /// This node's id and the group's client addresses, as its raft-port calls carry them.
    fn directory(&self) -> Directory {
        Directory { id: self.opts.id, book: self.book.clone() }
    }

    /// This node's id.
    pub fn id(&self) -> NodeId {
        self.opts.id
    }

    /// The leader as this node knows it: its id, and whether it is this node.
    fn leader(&self) -> Option<NodeId> {
        let m = self.raft.metrics();
        let m = m.borrow_watched();
        m.current_leader.filter(|&l| l != self.opts.id || m.state == ServerState::Leader)
    }

    /// The reply sending a client to the leader, or CLUSTERDOWN when none is known.
    fn redirect(&self, slot: u16, leader: Option<NodeId>) -> Frame {
        match leader.and_then(|l| self.book.lock().get(&l).cloned()) {
            Some(addr) => Frame::error(format!("MOVED {slot} {addr}")),
            None => Frame::error(CLUSTERDOWN),
        }
    }

    /// Where `args`, sent by `client`, goes.
    pub fn decide(&self, client: &Client, args: &[Bytes]) -> Decision {
        let Ok(cmd) = self.srv.table.resolve(args) else { return Decision::Local };
        if !cmd.arity_ok(args.len()) || (!client.authenticated && self.srv.config.has_password.load(Ordering::Relaxed))
        {
            return Decision::Local;
        }
        if client.multi.active() {
            return self.decide_queued(cmd, args, route::classify_queued(self.srv.table, cmd, args));
        }
        let class = route::classify(self.srv.table, cmd, args);
        match class {
            Class::Local | Class::Exec => Decision::Local,
            Class::Info => Decision::Info,
            Class::Ok => match cmd.name {
                "readonly" => Decision::ReadOnly(true),
                "readwrite" => Decision::ReadOnly(false),
                _ => Decision::Reply(Frame::ok()),
            },
            Class::Cluster if matches!(cmd.name, "cluster|meet" | "cluster|forget") => {
                if self.srv.acl_check(client, cmd, args, engine::acl::Context::Toplevel).is_err() {
                    return Decision::Local;
                }
                match self.leader() {
                    Some(l) if l == self.opts.id => Decision::Members,
                    other => Decision::Reply(self.redirect(0, other)),
                }
            }
            Class::Cluster => Decision::Reply(self.cluster(cmd.name, args)),
            Class::Unsupported => Decision::Reply(unsupported(cmd.name)),
            class @ (Class::Read | Class::Write) => {
                // A command the client may not run is refused by the engine, here.
                if self.srv.acl_check(client, cmd, args, engine::acl::Context::Toplevel).is_err() {
                    return Decision::Local;
                }
                match self.leader() {
                    Some(l) if l == self.opts.id => {
                        if class == Class::Read {
                            Decision::Read
                        } else {
                            Decision::Write
                        }
                    }
                    _ if route::FOLLOWERS_RUN_LOCALLY.contains(&cmd.name) => Decision::Local,
                    // After READONLY a node that does not lead serves reads from its own data, as a
                    // Redis Cluster replica does: possibly stale, never a write.
                    _ if class == Class::Read && client.readonly && !matches!(cmd.name, "watch") => Decision::Local,
                    other => Decision::Reply(self.redirect(route::first_key_slot(cmd, args), other)),
                }
            }
        }
    }

    /// Where a command sent inside MULTI goes: EXEC proposes the transaction; reads and writes are
    /// queued by the engine on the leader, and answered `-MOVED` elsewhere (as a Redis Cluster node
    /// answers a key it does not own inside MULTI; the connection layer then flags the transaction,
    /// so EXEC answers EXECABORT); a few harmless local commands are queued too; anything else is
    /// refused, since the transaction runs on the applying nodes' internal client, whose connection
    /// state it must not change.
    fn decide_queued(&self, cmd: &engine::ctx::Command, args: &[Bytes], class: Class) -> Decision {
        match class {
            Class::Exec => Decision::Exec,
            _ if matches!(cmd.name, "multi" | "watch" | "discard") => Decision::Local,
            Class::Read | Class::Write => match self.leader() {
                Some(l) if l == self.opts.id => Decision::Local,
                other => Decision::Reply(self.redirect(route::first_key_slot(cmd, args), other)),
            },
            Class::Local if route::QUEUEABLE_LOCAL.contains(&cmd.name) => Decision::Local,
            Class::Unsupported => Decision::Reply(unsupported(cmd.name)),
            _ => Decision::Reply(Frame::error(format!(
                "ERR {} inside MULTI is not supported in consensus mode",
                cmd.name.replace('|', " ").to_uppercase()
            ))),
        }
    }

    /// EXEC of `client`'s transaction: proposed as one entry, whose apply runs MULTI, the queued
    /// commands and EXEC on every node; the reply is the leader's EXEC reply. A transaction that
    /// failed to queue (EXECABORT), holds only local commands, or whose WATCH already fired is
    /// answered by the engine here, and one that only reads runs here after the ReadIndex check. A watched transaction is checked by the proposer first
    /// ([`Consensus::check_watch`]).
    pub async fn exec(self: &Arc<Self>, client: &mut Client) -> Option<Frame> {
        let exec = [Bytes::from_static(b"EXEC")];
        let needs_log = client
            .multi
            .queued
            .as_ref()
            .is_some_and(|q| q.iter().any(|(c, _)| !route::QUEUEABLE_LOCAL.contains(&c.name)));
        if client.multi.aborted || !needs_log || client.multi.watch.dirty.load(Ordering::Relaxed) {
            return self.srv.execute(client, &exec);
        }
        // A transaction that only reads runs here, on the leader, after the ReadIndex check, like
        // a read: no entry needed (the engine's EXEC is atomic against the applies, and its WATCH
        // check is exact on the node that applies).
        let reads_only = client.multi.queued.as_ref().is_some_and(|q| {
            q.iter().all(|(c, a)| {
                route::QUEUEABLE_LOCAL.contains(&c.name) || route::classify_queued(self.srv.table, c, a) == Class::Read
            })
        });
        if reads_only && self.leader() == Some(self.opts.id) {
            return match self.linearize(&exec).await {
                Ok(()) => self.srv.execute(client, &exec),
                Err(reply) => {
                    client.leave_multi();
                    Some(reply)
                }
            };
        }
        let queued = client.multi.queued.take().unwrap_or_default();
        let slot = queued.iter().map(|(c, a)| route::first_key_slot(c, a)).find(|&s| s != 0).unwrap_or(0);
        let watch =
            PendingWatch { state: client.multi.watch.clone(), watched: std::mem::take(&mut client.multi.watched) };
        let watch = (!watch.watched.is_empty()).then_some(watch);
        client.leave_multi();
        match self.leader() {
            Some(l) if l == self.opts.id => {}
            other => return Some(self.redirect(slot, other)),
        }
        let mut commands = Vec::with_capacity(queued.len());
        for (_, args) in &queued {
            match with_script_body(&self.srv, args) {
                Ok(a) => commands.push(a),
                Err(Frame::Error(e)) => {
                    return Some(Frame::error(format!(
                        "EXECABORT Transaction discarded because of: {}",
                        String::from_utf8_lossy(&e)
                    )));
                }
                Err(other) => return Some(other),
            }
        }
        let t =
            Transaction { db: client.db as u32, resp3: client.proto == resp::Protocol::Resp3, commands, watch: None };
        // A transaction's commands never wait.
        match self.submit(Work::Transaction(t), slot, watch).await {
            Answer::Reply(reply) => Some(reply),
            Answer::Queued(_) | Answer::Nothing(_) => Some(Frame::Null),
        }
    }

    /// The raft time a proposal made now carries. The leader's time base is taken the first time
    /// it is needed in a term (a write may come before the ticker noticed the election).
    fn proposal_time(&self) -> u64 {
        let (state, term) = {
            let m = self.raft.metrics();
            let m = m.borrow_watched();
            (m.state, m.current_term)
        };
        let applied = self.clock.applied_ms();
        let mut lead = self.lead.lock();
        if state != ServerState::Leader {
            // Not leading: a proposal is refused anyway (ForwardToLeader).
            *lead = None;
            return applied;
        }
        if lead.as_ref().is_none_or(|l| l.term != term) {
            // The first leader of a new group starts raft time at the wall clock, so that TIME
            // and absolute expiry times read like Unix time; later leaders go on from the
            // group's time and never read a wall clock.
            let base_ms = if applied == 0 { unix_ms() } else { applied };
            *lead = Some(LeaderTime { term, base_ms, since: Instant::now() });
        }
        let l = lead.as_ref().expect("set above");
        (l.base_ms + l.since.elapsed().as_millis() as u64).max(applied)
    }

    /// The reply to an error of `client_write` or of a linearizable check.
    fn failed(&self, slot: u16, forward: Option<Option<NodeId>>, e: &dyn std::fmt::Display) -> Frame {
        match forward {
            Some(leader) => self.redirect(slot, leader),
            None => {
                tracing::debug!("raft: request failed: {e}");
                Frame::error(CLUSTERDOWN)
            }
        }
    }

    /// Proposes `args` (a write of a client with database `db` selected, speaking `proto`) and
    /// returns the reply the leader's apply produced, once the group committed and applied it; for
    /// a `LOCK ... WAIT` that queued, the wait (see [`LockWait`]); for a blocking command that
    /// found nothing (every node ran it as its non-blocking form, which changed nothing), what the
    /// client waits for on this node: the connection queues it in the engine as a ringing waiter
    /// (`Server::block_ringing`), and a write that makes one of its keys ready wakes it to propose
    /// the serve step ([`Consensus::serve`]).
    ///
    /// Writes are batched: one proposal is in flight at a time, and the writes that arrive
    /// meanwhile go together in the next entry (at most [`MAX_BATCH`]), so concurrent clients
    /// share one log append, one fsync and one round trip to the followers.
    pub async fn write(self: &Arc<Self>, db: usize, proto: resp::Protocol, args: &[Bytes]) -> Answer {
        let slot = self.srv.table.resolve(args).map_or(0, |c| route::first_key_slot(c, args));
        let args = match with_script_body(&self.srv, args) {
            Ok(args) => args,
            Err(reply) => return Answer::Reply(reply),
        };
        let cmd = Command { db: db as u32, resp3: proto == resp::Protocol::Resp3, args };
        self.submit(Work::Command(cmd), slot, None).await
    }

    /// Proposes the serve step of a blocked client's command (`args`: its waiter's arguments) for
    /// the first of `keys` that serves it, as a write that made a key ready serves a waiter in
    /// Redis: every node runs it (see `Server::serve_now`). The reply, or [`Answer::Nothing`] when
    /// none of the keys served it (another client took what was there first).
    pub async fn serve(self: &Arc<Self>, db: usize, proto: resp::Protocol, args: &[Bytes], keys: Vec<Bytes>) -> Answer {
        let slot = self.srv.table.resolve(args).map_or(0, |c| route::first_key_slot(c, args));
        let work = ServeWaiter { db: db as u32, resp3: proto == resp::Protocol::Resp3, args: args.to_vec(), keys };
        self.submit(Work::Serve(work), slot, None).await
    }

    /// Watches this node's part in the group for a blocked client: changes when this node starts
    /// or stops leading, or learns of another leader (see [`Consensus::moved_away`]).
    pub fn leadership(&self) -> tokio::sync::watch::Receiver<(bool, Option<NodeId>)> {
        self.leadership.subscribe()
    }

    /// The `-MOVED` to the leader for a client blocked here on `args` once this node no longer
    /// leads and knows who does (Redis Cluster redirects a blocked client so when its slot moves);
    /// None while it leads, or while no leader is known (the client waits on).
    pub fn moved_away(&self, args: &[Bytes]) -> Option<Frame> {
        let leader = self.leader()?;
        if leader == self.opts.id {
            return None;
        }
        let slot = self.srv.table.resolve(args).map_or(0, |c| route::first_key_slot(c, args));
        let addr = self.book.lock().get(&leader).cloned()?;
        Some(Frame::error(format!("MOVED {slot} {addr}")))
    }

    /// Queues `work` for the next entry and waits for its reply (see [`Consensus::write`]).
    async fn submit(self: &Arc<Self>, work: Work, slot: u16, watch: Option<PendingWatch>) -> Answer {
        let (tx, rx) = tokio::sync::oneshot::channel();
        let start = {
            let mut q = self.queue.lock();
            q.0.push(Queued { work, slot, watch, tx });
            !std::mem::replace(&mut q.1, true)
        };
        if start {
            // The proposer outlives this client (it may disconnect meanwhile).
            tokio::spawn(self.clone().propose());
        }
        rx.await.unwrap_or_else(|_| Answer::Reply(Frame::error(CLUSTERDOWN)))
    }

    /// Takes `wait` out of the lock's queue (its client went away), if it still waits there and
    /// its owner has not asked for the place again since: through the log, proposed here if this
    /// node leads, else by the leader this node knows, which it is forwarded to and which answers
    /// once the leave committed. Until then the leave is tried again (no leader known, the leader
    /// changed or could not commit it), every 50 ms at first, then every second, for up to
    /// [`LEAVE_RETRY_FOR`], and no longer once this node applied the wait's outcome or a later ask.
    /// A leave is idempotent (it names its ask), so trying it twice is harmless. A wait granted
    /// before its leave commits holds the lock until its TTL runs out.
    pub fn cancel_wait(self: &Arc<Self>, wait: &LockWait) {
        if wait.outcome().is_some() {
            return;
        }
        let (db, key, owner) = wait.id();
        let leave = LeaveQueue { db, key: key.clone(), owner: owner.clone(), ask: wait.ask() };
        let (wait, node) = (wait.handle(), Arc::downgrade(self));
        tokio::spawn(async move {
            let give_up = tokio::time::Instant::now() + LEAVE_RETRY_FOR;
            let mut pause = Duration::from_millis(50);
            loop {
                let Some(n) = node.upgrade() else { return };
                if !wait.still_asked() || n.leave(&leave).await {
                    return;
                }
                drop(n);
                if tokio::time::Instant::now() + pause > give_up {
                    tracing::warn!(
                        "raft: a lock waiter's leave ({:?} of {:?}) was not committed within {} s; it waits until its deadline",
                        String::from_utf8_lossy(&leave.owner),
                        String::from_utf8_lossy(&leave.key),
                        LEAVE_RETRY_FOR.as_secs()
                    );
                    return;
                }
                tokio::time::sleep(pause).await;
                pause = (pause * 2).min(Duration::from_secs(1));
            }
        });
    }

    /// One try of `leave`: proposed here if this node leads, else forwarded to the leader it
    /// knows. True once committed.
    async fn leave(self: &Arc<Self>, leave: &LeaveQueue) -> bool {
        match self.leader() {
            Some(id) if id == self.opts.id => self.propose_leave(leave.clone()).await,
            Some(id) => {
                // This node's own route to the leader, else the address the membership records.
                let route = self.opts.peers.get(&id).cloned();
                let Some(addr) = route.or_else(|| self.members().into_iter().find(|m| m.0 == id).map(|m| m.1)) else {
                    return false;
                };
                match crate::net::forward_leave(&addr, &self.directory(), leave.clone()).await {
                    Ok(()) => true,
                    Err(e) => {
                        tracing::debug!("raft: a lock waiter's leave was not taken by {addr}: {e}");
                        false
                    }
                }
            }
            None => false,
        }
    }

    /// Proposes `leave` if this node leads; true once it committed (a leave forwarded to a node
    /// that no longer leads is refused, and its sender tries again: see [`Consensus::cancel_wait`]).
    async fn propose_leave(self: &Arc<Self>, leave: LeaveQueue) -> bool {
        if self.leader() != Some(self.opts.id) {
            return false;
        }
        matches!(self.submit(Work::LeaveQueue(leave), 0, None).await, Answer::Reply(Frame::Integer(_)))
    }

    /// Proposes what is queued until nothing is: each entry carries what was queued when it
    /// was proposed, with at most [`PROPOSALS_IN_FLIGHT`] entries proposed and not yet applied
    /// at a time (openraft replicates an entry while the leader syncs it).
    async fn propose(self: Arc<Self>) {
        loop {
            let Ok(permit) = self.in_flight.clone().acquire_owned().await else { return };
            let mut batch: Vec<Queued> = {
                let mut q = self.queue.lock();
                if q.0.is_empty() {
                    q.1 = false;
                    return;
                }
                // A watched transaction is checked with nothing of this leader's before it still to
                // apply: it starts an entry.
                let n = q.0.iter().take(MAX_BATCH).enumerate().position(|(i, w)| i > 0 && w.watch.is_some());
                let n = n.unwrap_or(q.0.len().min(MAX_BATCH));
                q.0.drain(..n).collect()
            };
            if let Some(watch) = batch[0].watch.take() {
                match self.check_watch(watch).await {
                    Ok(guard) => {
                        if let Work::Transaction(t) = &mut batch[0].work {
                            t.watch = Some(guard);
                        }
                    }
                    Err(reply) => {
                        let _ = batch.remove(0).tx.send(Answer::Reply(reply));
                        if batch.is_empty() {
                            continue;
                        }
                    }
                }
            }
            let (work, waiting): (Vec<Work>, Vec<(u16, tokio::sync::oneshot::Sender<Answer>)>) =
                batch.into_iter().map(|q| (q.work, (q.slot, q.tx))).unzip();
            // Entries of plain commands keep the first format (`Op::Commands`).
            let op = if work.iter().all(|w| matches!(w, Work::Command(_))) {
                Op::Commands(
                    work.into_iter().filter_map(|w| if let Work::Command(c) = w { Some(c) } else { None }).collect(),
                )
            } else {
                Op::Batch(work)
            };
            let req = Request { time_ms: self.proposal_time(), op };
            // Submitted here, in queue order; its outcome is awaited beside the next proposals.
            let (responder, done) = openraft::impls::ProgressResponder::complete_only();
            if let Err(fatal) = self.raft.client_write_ff(req, Some(responder)).await {
                answer_all(waiting, |slot| self.failed(slot, None, &fatal));
                continue;
            }
            let node = self.clone();
            tokio::spawn(async move {
                let outcome = match tokio::time::timeout(CLIENT_TIMEOUT, done).await {
                    Ok(Ok(r)) => Some(r),
                    // The responder went without an answer: the node is shutting down.
                    Ok(Err(_)) => None,
                    Err(_) => {
                        let late = format!(
                            "ERR consensus: the write was not committed within {} ms; it may still be applied",
                            CLIENT_TIMEOUT.as_millis()
                        );
                        answer_all(waiting, |_| Frame::error(late.clone()));
                        return;
                    }
                };
                drop(permit);
                node.answer(waiting, outcome);
            });
        }
    }

    /// Hands each client of an entry its reply once the entry applied (or why it was not).
    fn answer(
        &self,
        waiting: Vec<(u16, tokio::sync::oneshot::Sender<Answer>)>,
        outcome: Option<openraft::raft::ClientWriteResult<crate::types::TypeConfig>>,
    ) {
        match outcome {
            Some(Ok(r)) => {
                let crate::types::Reply(replies, waits, blocked) = r.data;
                let mut waits = waits.into_iter().peekable();
                let mut blocked = blocked.into_iter().peekable();
                for (i, ((_, tx), reply)) in
                    waiting.into_iter().zip(replies.into_iter().chain(std::iter::repeat(None))).enumerate()
                {
                    let answer = match (waits.next_if(|(at, _)| *at == i), blocked.next_if(|(at, _)| *at == i)) {
                        (Some((_, wait)), _) => Answer::Queued(wait),
                        (None, Some((_, block))) => Answer::Nothing(block),
                        (None, None) => Answer::Reply(reply.unwrap_or(Frame::Null)),
                    };
                    let _ = tx.send(answer);
                }
            }
            Some(Err(ClientWriteError::ForwardToLeader(f))) => {
                answer_all(waiting, |slot| self.failed(slot, Some(f.leader_id), &"not the leader"));
            }
            Some(Err(e)) => answer_all(waiting, |slot| self.failed(slot, None, &e)),
            None => answer_all(waiting, |slot| self.failed(slot, None, &"the node is shutting down")),
        }
    }

    /// The leader's check of a transaction's WATCH, made when this node has applied every entry of
    /// its log and has no other proposal in flight: the engine's watch state then tells whether a
    /// watched key changed since WATCH (Err: the null array EXEC answers, or the error when the log
    /// could not be applied in time). The guard lets every node repeat the verdict for the entries
    /// that come between this check and the transaction's own (see [`WatchGuard`]).
    async fn check_watch(&self, w: PendingWatch) -> Result<WatchGuard, Frame> {
        let last = self.raft.metrics().borrow_watched().last_log_index.unwrap_or(0);
        let applied = self.raft.wait(Some(CLIENT_TIMEOUT)).applied_index_at_least(Some(last), "watch check").await;
        if let Err(e) = applied {
            tracing::debug!("raft: watch check: {e}");
            return Err(Frame::error(CLUSTERDOWN));
        }
        let now = self.clock.applied_ms();
        let mut locked = self.srv.ks.lock_all();
        let mut alive = Vec::new();
        for (db, key, reg) in &w.watched {
            let t = &locked.shard_for(key).dbs[*db];
            let stale = t.is_stale(key, now);
            // A watched key that expired since WATCH counts as modified (Redis's isWatchedKeyExpired).
            if stale && !reg.expired.load(Ordering::Relaxed) {
                return Err(Frame::NullArray);
            }
            if t.peek(key).is_some() && !stale {
                alive.push((*db as u32, Bytes::copy_from_slice(key)));
            }
        }
        if w.state.dirty.load(Ordering::Relaxed) {
            return Err(Frame::NullArray);
        }
        Ok(WatchGuard { checked_at: last, alive })
    }

    /// Confirms that this node still leads and has applied everything committed before now
    /// (openraft's ReadIndex); Err is the reply to send instead of running the read.
    pub async fn linearize(&self, args: &[Bytes]) -> Result<(), Frame> {
        let slot = self.srv.table.resolve(args).map_or(0, |c| route::first_key_slot(c, args));
        match tokio::time::timeout(CLIENT_TIMEOUT, self.raft.ensure_linearizable(openraft::ReadPolicy::ReadIndex)).await
        {
            Ok(Ok(_)) => Ok(()),
            Ok(Err(RaftError::APIError(LinearizableReadError::ForwardToLeader(f)))) => {
                Err(self.failed(slot, Some(f.leader_id), &"not the leader"))
            }
            Ok(Err(e)) => Err(self.failed(slot, None, &e)),
            Err(_) => Err(Frame::error(CLUSTERDOWN)),
        }
    }

    /// The group's members: id, raft address, client address if known.
    fn members(&self) -> Vec<(NodeId, String, Option<String>)> {
        let m = self.raft.metrics();
        let membership = m.borrow_watched().membership_config.clone();
        let book = self.book.lock();
        membership.nodes().map(|(id, n)| (*id, n.addr.clone(), book.get(id).cloned())).collect()
    }

    /// `CLUSTER MEET ip port [bus-port]` and `CLUSTER FORGET node-id` on the leader: membership
    /// changes through openraft's joint consensus. MEET asks the node whose raft port is
    /// `ip:bus-port` (Redis's default bus port: `port` + 10000) for its raft id, adds it as a
    /// learner, waits until it caught up with the log, then makes it a voter. FORGET removes a
    /// member (the leader too: it steps down once the change is committed). Both answer `+OK`
    /// once the new membership is committed; adding a member again or forgetting a node that is
    /// not one changes nothing.
    pub async fn change_members(&self, args: &[Bytes]) -> Frame {
        let text = |i: usize| String::from_utf8_lossy(&args[i]).into_owned();
        let sub = text(1).to_ascii_lowercase();
        let voters = || -> std::collections::BTreeSet<NodeId> {
            self.raft.metrics().borrow_watched().membership_config.membership().voter_ids().collect()
        };
        let failed = |e: &dyn std::fmt::Display| Frame::error(format!("ERR consensus: {e}"));
        if sub == "forget" {
            let Some(id) = NodeId::from_str_radix(&text(2), 16).ok().filter(|id| voters().contains(id)) else {
                return Frame::error(format!("ERR Unknown node {}", text(2)));
            };
            let change = openraft::ChangeMembers::RemoveVoters([id].into());
            return match self.raft.change_membership(change, false).await {
                Ok(_) => {
                    self.book.lock().remove(&id);
                    Frame::ok()
                }
                Err(e) => failed(&e),
            };
        }
        if args.len() > 5 {
            return Frame::error("ERR syntax error");
        }
        let port = |i: usize| text(i).parse::<u16>().ok().filter(|p| *p != 0);
        let (Some(port), bus) = (port(3), args.get(4).map(|_| port(4))) else {
            return Frame::error(format!("ERR Invalid node address specified: {}:{}", text(2), text(3)));
        };
        let Some(bus) = bus.unwrap_or(port.checked_add(10000)) else {
            return Frame::error(format!("ERR Invalid node address specified: {}:{}", text(2), text(3)));
        };
        let addr = format!("{}:{bus}", text(2));
        let dir = self.directory();
        let id = match crate::net::ask_id(&addr, &dir).await {
            Ok(id) => id,
            Err(e) => return failed(&format!("no raft node answers at {addr}: {e}")),
        };
        if voters().contains(&id) {
            return Frame::ok();
        }
        if let Err(e) = self.raft.add_learner(id, BasicNode { addr }, true).await {
            return failed(&e);
        }
        match self.raft.change_membership(openraft::ChangeMembers::AddVoterIds([id].into()), false).await {
            Ok(_) => Frame::ok(),
            Err(e) => failed(&e),
        }
    }

    /// A node's Redis Cluster id: 40 hex digits derived from its raft id.
    fn node_name(id: NodeId) -> String {
        format!("{id:040x}")
    }

    /// `CLUSTER <sub> ...` in consensus mode: the group as one shard owning every slot, the
    /// leader its master and the other members its replicas.
    fn cluster(&self, name: &str, args: &[Bytes]) -> Frame {
        let leader = self.leader();
        let members = self.members();
        let split = |addr: &str| -> (String, i64) {
            match addr.rsplit_once(':') {
                Some((h, p)) => (h.to_string(), p.parse().unwrap_or(0)),
                None => (addr.to_string(), 0),
            }
        };
        // The leader first, then the others in id order; only members whose client address is
        // known (a member never heard from cannot be offered to clients).
        let mut ordered: Vec<&(NodeId, String, Option<String>)> = members.iter().collect();
        ordered.sort_by_key(|(id, ..)| (Some(*id) != leader, *id));
        match name {
            "cluster|myid" => Frame::bulk(Self::node_name(self.opts.id)),
            "cluster|keyslot" => Frame::Integer(route::key_slot(&args[2]) as i64),
            "cluster|slots" => {
                let Some(_) = leader else { return Frame::Array(Vec::new()) };
                let mut entry = vec![Frame::Integer(0), Frame::Integer(16383)];
                for (id, _, addr) in &ordered {
                    let Some(addr) = addr else { continue };
                    let (host, port) = split(addr);
                    entry.push(Frame::Array(vec![
                        Frame::bulk(host),
                        Frame::Integer(port),
                        Frame::bulk(Self::node_name(*id)),
                    ]));
                }
                Frame::Array(vec![Frame::Array(entry)])
            }
            "cluster|shards" => {
                let Some(_) = leader else { return Frame::Array(Vec::new()) };
                let match_index = self.match_indexes();
                let nodes = ordered
                    .iter()
                    .filter_map(|(id, _, addr)| {
                        let (host, port) = split(addr.as_ref()?);
                        let master = Some(*id) == leader;
                        let offset = match_index.get(id).copied().flatten().unwrap_or(0);
                        Some(Frame::Map(vec![
                            (Frame::bulk("id"), Frame::bulk(Self::node_name(*id))),
                            (Frame::bulk("port"), Frame::Integer(port)),
                            (Frame::bulk("ip"), Frame::bulk(host.clone())),
                            (Frame::bulk("endpoint"), Frame::bulk(host)),
                            (Frame::bulk("role"), Frame::bulk(if master { "master" } else { "replica" })),
                            (Frame::bulk("replication-offset"), Frame::Integer(offset as i64)),
                            (Frame::bulk("health"), Frame::bulk("online")),
                        ]))
                    })
                    .collect();
                Frame::Array(vec![Frame::Map(vec![
                    (Frame::bulk("slots"), Frame::Array(vec![Frame::Integer(0), Frame::Integer(16383)])),
                    (Frame::bulk("nodes"), Frame::Array(nodes)),
                ])])
            }
            "cluster|nodes" => {
                let mut out = String::new();
                for (id, raft_addr, addr) in &ordered {
                    let (host, port) = split(addr.as_deref().unwrap_or(raft_addr));
                    let port = if addr.is_some() { port } else { 0 };
                    let cport = split(raft_addr).1;
                    let master = Some(*id) == leader;
                    let mut flags = Vec::new();
                    if *id == self.opts.id {
                        flags.push("myself");
                    }
                    flags.push(if master { "master" } else { "slave" });
                    if addr.is_none() {
                        flags.push("noaddr");
                    }
                    let of = match (master, leader) {
                        (false, Some(l)) => Self::node_name(l),
                        _ => "-".into(),
                    };
                    let term = self.raft.metrics().borrow_watched().current_term;
                    out.push_str(&format!(
                        "{} {host}:{port}@{cport} {} {of} 0 0 {term} connected{}\n",
                        Self::node_name(*id),
                        flags.join(","),
                        if master { " 0-16383" } else { "" }
                    ));
                }
                Frame::bulk(out)
            }
            "cluster|info" => {
                let m = self.raft.metrics();
                let m = m.borrow_watched();
                let ok = leader.is_some();
                let text = format!(
                    "cluster_enabled:1\r\ncluster_state:{}\r\ncluster_slots_assigned:16384\r\ncluster_slots_ok:{}\r\n\
                     cluster_slots_pfail:0\r\ncluster_slots_fail:{}\r\ncluster_known_nodes:{}\r\ncluster_size:1\r\n\
                     cluster_current_epoch:{}\r\ncluster_my_epoch:{}\r\n",
                    if ok { "ok" } else { "fail" },
                    if ok { 16384 } else { 0 },
                    if ok { 0 } else { 16384 },
                    members.len(),
                    m.current_term,
                    m.current_term
                );
                Frame::Verbatim { format: *b"txt", text: text.into() }
            }
            _ => Frame::error(format!(
                "ERR {} is not supported in consensus mode",
                name.replace('|', " ").to_uppercase()
            )),
        }
    }

    /// The leader's replication progress: member id to the index of its last matching entry
    /// (empty on other nodes, which do not track it).
    fn match_indexes(&self) -> BTreeMap<NodeId, Option<u64>> {
        let m = self.raft.metrics();
        let m = m.borrow_watched();
        match &m.replication {
            Some(r) => r.iter().map(|(id, l)| (*id, l.map(|l| l.index))).collect(),
            None => BTreeMap::new(),
        }
    }

    /// INFO's `consensus` section.
    pub fn info_section(&self) -> String {
        let m = self.raft.metrics();
        let (state, term, leader, last_log, applied, snapshot, purged) = {
            let m = m.borrow_watched();
            let index = |l: Option<crate::types::LogId>| l.map(|l| l.index);
            (
                m.state,
                m.current_term,
                m.current_leader,
                m.last_log_index,
                index(m.last_applied),
                index(m.snapshot),
                index(m.purged),
            )
        };
        let role = match state {
            ServerState::Leader => "leader",
            ServerState::Follower => "follower",
            ServerState::Candidate => "candidate",
            ServerState::Learner => "learner",
            ServerState::Shutdown => "shutdown",
        };
        let book = self.book.lock().clone();
        let opt = |v: Option<u64>| v.map_or("-1".to_string(), |v| v.to_string());
        let mut s = String::from("# Consensus\r\n");
        s.push_str(&format!("consensus_id:{}\r\n", self.opts.id));
        s.push_str(&format!("consensus_role:{role}\r\n"));
        s.push_str(&format!("consensus_term:{term}\r\n"));
        s.push_str(&format!("consensus_leader:{}\r\n", leader.map_or(String::new(), |l| l.to_string())));
        s.push_str(&format!(
            "consensus_leader_addr:{}\r\n",
            leader.and_then(|l| book.get(&l).cloned()).unwrap_or_default()
        ));
        s.push_str(&format!("consensus_commit_index:{}\r\n", self.committed.load(Ordering::Relaxed)));
        s.push_str(&format!("consensus_applied_index:{}\r\n", opt(applied)));
        s.push_str(&format!("consensus_last_log_index:{}\r\n", opt(last_log)));
        s.push_str(&format!("consensus_snapshot_index:{}\r\n", opt(snapshot)));
        s.push_str(&format!("consensus_purged_index:{}\r\n", opt(purged)));
        s.push_str(&format!("consensus_raft_time_ms:{}\r\n", self.clock.applied_ms()));
        s.push_str(&format!("consensus_lock_waiters:{}\r\n", self.waits.len()));
        let matches = self.match_indexes();
        for (i, (id, raft_addr, addr)) in self.members().iter().enumerate() {
            s.push_str(&format!(
                "consensus_peer{i}:id={id},addr={},raft_addr={raft_addr},match_index={}\r\n",
                addr.clone().unwrap_or_default(),
                opt(matches.get(id).copied().flatten())
            ));
        }
        s
    }

    /// Adds the `consensus` section to the reply of `INFO` when the sections asked for include it
    /// (none named, `default`, `all`, `everything` or `consensus`).
    pub fn add_info(&self, args: &[Bytes], reply: &mut Option<Frame>) {
        let wanted = args.len() == 1
            || args[1..].iter().any(|a| {
                ["default", "all", "everything", "consensus"].iter().any(|w| a.eq_ignore_ascii_case(w.as_bytes()))
            });
        if !wanted {
            return;
        }
        let section = self.info_section();
        let extend = |text: &Bytes| -> Bytes {
            let mut t = text.to_vec();
            if !t.is_empty() {
                t.extend_from_slice(b"\r\n");
            }
            t.extend_from_slice(section.as_bytes());
            t.into()
        };
        match reply {
            Some(Frame::Bulk(text)) => *text = extend(text),
            Some(Frame::Verbatim { text, .. }) => *text = extend(text),
            _ => {}
        }
    }
}

/// The leader's clock work, every [`TICK`]: notes when this node became leader (the base of its
/// raft time), and while keys with a TTL or lock waiters exist (or no entry has set raft time
/// yet) proposes a tick
/// so that raft time, and with it expiry, follows the leader's clock without waiting for a write.
async fn ticker(node: std::sync::Weak<Consensus>) {
    let mut interval = tokio::time::interval(TICK);
    interval.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        interval.tick().await;
        let Some(node) = node.upgrade() else { return };
        // Starts (or ends) the leader's time base as leadership comes and goes.
        let time_ms = node.proposal_time();
        if node.lead.lock().is_none() {
            continue;
        }
        let behind = time_ms.saturating_sub(node.clock.applied_ms());
        // Lock waiters' deadlines are on raft time too (a waiter may outlive every TTL: one queued
        // on a key that came to hold another type).
        if behind >= TICK.as_millis() as u64
            && (node.clock.applied_ms() == 0 || has_volatile_keys(&node.srv) || !node.waits.is_empty())
        {
            let req = Request { time_ms, op: Op::Tick };
            let raft = node.raft.clone();
            drop(node);
            let _ = tokio::time::timeout(CLIENT_TIMEOUT, raft.client_write(req)).await;
        }
    }
}

/// Answers every client of an entry with the reply `reply` makes from its key slot.
fn answer_all(waiting: Vec<(u16, tokio::sync::oneshot::Sender<Answer>)>, reply: impl Fn(u16) -> Frame) {
    for (slot, tx) in waiting {
        let _ = tx.send(Answer::Reply(reply(slot)));
    }
}

/// Keeps `to` at (this node leads, the leader it knows) as openraft's server metrics change:
/// blocked clients wait on it. The server metrics change with the vote, the state, the leader and
/// the membership only; the whole metrics change with every entry, and following them woke this
/// task several times an entry.
async fn follow_leadership(
    mut metrics: openraft::alias::WatchReceiverOf<
        crate::types::TypeConfig,
        openraft::metrics::RaftServerMetrics<crate::types::TypeConfig>,
    >,
    to: Arc<tokio::sync::watch::Sender<(bool, Option<NodeId>)>>,
    id: NodeId,
) {
    loop {
        let now = {
            let m = metrics.borrow_watched();
            let leads = m.state == ServerState::Leader;
            (leads, m.current_leader.filter(|&l| l != id || leads))
        };
        to.send_if_modified(|seen| std::mem::replace(seen, now) != now);
        if metrics.changed().await.is_err() {
            return;
        }
    }
}

/// `args` as the log carries them: an EVALSHA (also inside FENCED) becomes the EVAL of the body
/// this node's script cache holds for the sha, so that what a node applies never depends on its own
/// cache (a node that installed a snapshot, or restarted, may lack a script the leader has). An
/// unknown sha is answered here, as EVALSHA would answer it, without a proposal.
fn with_script_body(srv: &Server, args: &[Bytes]) -> Result<Vec<Bytes>, Frame> {
    let Some(name) = args.first() else { return Ok(Vec::new()) };
    if name.eq_ignore_ascii_case(b"fenced") && args.len() > 3 {
        let mut out = args[..3].to_vec();
        out.extend(with_script_body(srv, &args[3..])?);
        return Ok(out);
    }
    let ro = name.eq_ignore_ascii_case(b"evalsha_ro");
    if !(ro || name.eq_ignore_ascii_case(b"evalsha")) || args.len() < 3 {
        return Ok(args.to_vec());
    }
    let sha = String::from_utf8_lossy(&args[1]).to_ascii_lowercase();
    let body = srv.scripting.scripts.lock().get(&sha).map(|m| m.body.clone());
    let Some(body) = body else {
        // EVALSHA's own checks, in its order: the key count, then the sha.
        let rest = args.len() as i64 - 3;
        return Err(match engine::args::parse_i64_strict(&args[2]) {
            None => Frame::error("ERR value is not an integer or out of range"),
            Some(n) if n > rest => Frame::error("ERR Number of keys can't be greater than number of args"),
            Some(n) if n < 0 => Frame::error("ERR Number of keys can't be negative"),
            Some(_) => Frame::error("NOSCRIPT No matching script. Please use EVAL."),
        });
    };
    let mut out = Vec::with_capacity(args.len());
    out.push(Bytes::from_static(if ro { b"EVAL_RO" } else { b"EVAL" }));
    out.push(body);
    out.extend_from_slice(&args[2..]);
    Ok(out)
}

/// The refusal of a command consensus mode does not run.
fn unsupported(name: &str) -> Frame {
    let what = match name {
        "fenced" => "FENCED of a blocking command".to_string(),
        "xread" | "xreadgroup" => format!("{} with BLOCK", name.to_uppercase()),
        name => name.replace('|', " ").to_uppercase(),
    };
    Frame::error(format!("ERR {what} is not supported in consensus mode"))
}

fn unix_ms() -> u64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_millis() as u64)
}

/// Whether any key has a TTL (ticks are only worth writing then).
fn has_volatile_keys(srv: &Server) -> bool {
    let mut locked = srv.ks.lock_all();
    locked.shards_mut().any(|s| s.dbs.iter().any(|t| t.volatile_len() > 0))
}
