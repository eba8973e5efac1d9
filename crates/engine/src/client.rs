//! A connection's state as handlers see it: [`Client`], owned by the connection task, assembled
//! from the per-client parts the subsystems define (the ACL rules copy, subscriptions, MULTI
//! state, the blocked state). The part other clients may read (`CLIENT LIST`, `CLIENT KILL`,
//! `INFO clients`) is its [`ClientInfo`], shared through an `Arc` ([`crate::clients`]).
//! Nothing but the runtime's composition (the server, dispatch, the handlers' context) imports it.

use crate::clients::{ClientInfo, ClientRegistry};
use resp::Protocol;
use std::sync::Arc;

/// What happens to replies (`CLIENT REPLY`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum ReplyMode {
    /// Normal.
    #[default]
    On,
    /// No replies until `CLIENT REPLY ON`.
    Off,
    /// Skip the reply of the next command only.
    Skip,
    /// Internal: the command after a `CLIENT REPLY SKIP` is running; its reply is dropped.
    SkipThis,
}

/// A connection's state as handlers see it.
pub struct Client {
    /// Unique, increasing id (`CLIENT ID`).
    pub id: u64,
    /// Selected database.
    pub db: usize,
    /// Negotiated protocol.
    pub proto: Protocol,
    /// Whether AUTH succeeded (or no password is required).
    pub authenticated: bool,
    /// The ACL user the client runs as; None for the server's own clients (AOF loading, a
    /// blocked client's stand-in), which may run anything, as Redis's `c->user == NULL`.
    pub user: Option<Arc<crate::acl::User>>,
    /// Reply mode.
    pub reply_mode: ReplyMode,
    /// Close the connection once the current reply is written (QUIT, protocol errors, CLIENT KILL self).
    pub close_after_reply: bool,
    /// This client's SHUTDOWN stops the server: its connection stays open until the server closed
    /// its listeners and closes every client, as Redis's exits under it.
    pub shut_down_server: bool,
    /// The reply of the command running now was counted in the error statistics already (a
    /// script's error from a command inside it): `execute` does not count it again.
    pub error_counted: bool,
    /// `SCRIPT DEBUG SYNC`: the client's EVALs run under the Lua debugger.
    pub ldb_sync: bool,
    /// The debugger's link to this client, given by the connection for the EVAL it is about to run.
    pub ldb_link: Option<crate::lua::DebugLink>,
    /// A reply would have gone over `client-output-buffer-limit`: close the connection now, without
    /// the replies still buffered (Redis stops such a reply mid-run).
    pub obuf_overflow: bool,
    /// `CLIENT NO-TOUCH on`: reads do not update access times.
    pub no_touch: bool,
    /// `CLIENT NO-EVICT on`.
    pub no_evict: bool,
    /// Set by MONITOR.
    pub monitor: bool,
    /// The AOF loader's client: Redis's loading mode (no key expires, a past deadline is kept).
    pub loading: bool,
    /// The client a replica runs its primary's stream on: obeyed whatever this server's role and
    /// limits, and its effects reach this server's replicas as the primary's bytes.
    pub from_primary: bool,
    /// WAIT that could not answer at once: the offset to reach, how many replicas, the deadline
    /// (monotonic ms; None waits forever). The connection waits for acknowledgements.
    pub wait_acks: Option<WaitAcks>,
    /// SHUTDOWN waits for lagging replicas: the connection blocks the client until the server
    /// exits or the shutdown fails (answered with an error then).
    pub shutdown_wait: bool,
    /// A command that reads or writes data ran since the replies were last written: with
    /// `appendfsync always` they wait until the AOF is on disk (set by `Server::call`, taken by
    /// the connection). Rejected commands and those that show no data (PING, INFO) do not wait.
    pub wait_durable: bool,
    /// Drop the reply of the command now running (SHUTDOWN, which closes instead of replying).
    pub suppress_reply: bool,
    /// MULTI/WATCH state.
    pub multi: crate::ctx::MultiState,
    /// Set by a blocking handler that found nothing to serve (see [`crate::waiters`]).
    pub block: Option<crate::waiters::BlockRequest>,
    /// While blocked: the queued waiter, whose outcome the connection layer awaits.
    pub blocked: Option<Arc<crate::ctx::Waiter>>,
    /// How a blocked client is woken; installed by the connection layer.
    pub block_waker: Option<Arc<dyn Fn() + Send + Sync>>,
    /// Blocking commands answer at once as if timed out (inside EXEC and scripts, as in Redis).
    pub deny_blocking: bool,
    /// A blocking command that finds nothing (and may block) queues no waiter: `execute` answers its
    /// timeout reply and leaves its request in [`Client::block`] for the caller, who waits its own
    /// way (a consensus node's apply client: the connection that proposed the command waits on
    /// the node it is connected to, see [`crate::server::Server::block_ringing`]).
    pub defer_blocking: bool,
    /// `READONLY` was sent (Redis Cluster's CLIENT_READONLY): a consensus node that does not
    /// lead serves this client's reads from its own data, possibly stale, instead of `-MOVED`.
    /// `READWRITE` and `RESET` clear it.
    pub readonly: bool,
    /// Running inside a script (Redis's `CLIENT_SCRIPT`): SORT orders unsorted set output.
    pub in_script: bool,
    /// Running EXEC's queued commands (Redis keeps `CLIENT_MULTI` then): ACL log context `multi`.
    pub in_exec: bool,
    /// Memory was over `maxmemory`, with nothing to evict, when the current command started (Redis's
    /// `pre_command_oom_state`): scripts and EXEC check their writes against it.
    pub oom: bool,
    /// Shared, externally visible information.
    pub info: Arc<ClientInfo>,
    /// Effects of the top-level command now running, while the change stream records (see
    /// [`crate::changes`]).
    pub effects: Vec<crate::changes::Effect>,
    /// Where the effects of its commands go ([`crate::changes::Effect::targets`]): everywhere,
    /// but narrowed by a script's `redis.set_repl` for the commands it calls.
    pub propagate_to: u8,
    /// Channels, patterns and shard channels this client is subscribed to (see [`crate::pubsub`]).
    pub subs: crate::pubsub::Subscriptions,
    /// A MONITOR client's line for its own command: written after that command's reply, where
    /// Redis writes it (other clients' lines go through the outbox).
    pub monitor_echo: std::cell::Cell<Option<bytes::Bytes>>,
    /// Tracking is on (the state is in `info.tracking`).
    pub tracking: bool,
    /// The running script called a read command (tracking remembers the script's keys).
    pub script_read: bool,
    /// A copy of the rules of its ACL user (the user, its rules' version, the rules), so that the
    /// per-command check of a restricted user takes no lock (see `acl::User::rules_for`).
    pub acl_rules: std::cell::Cell<Option<crate::acl::RulesCopy>>,
    /// Messages for this client caused by its own command (tracking invalidations), written after
    /// that command's reply as Redis writes its pending invalidations; RESP2-encoded, like the
    /// outbox's.
    pub after_reply: Vec<bytes::Bytes>,
    /// Set by SYNC / PSYNC: the connection becomes a replica's and sends this (see
    /// [`crate::repl::SyncJob`]).
    pub sync: Option<crate::repl::SyncJob>,
    /// The seeded generator its commands' random choices come from (SPOP, SRANDMEMBER, Lua's
    /// `math.random`...), set for a client whose commands must come out the same on every node that
    /// runs them (consensus mode's apply client); None: the thread's generator.
    pub random: Option<crate::random::Seeded>,
    /// The last top-level command its requests named, as they spelled it (a pipeline mostly
    /// repeats one): the next request spelling it the same skips the table's lookup.
    pub recent: Option<RecentCommand>,
    /// The connection is a replica's, as CLIENT LIST's `S` flag says ([`Client::become_replica`]
    /// sets both): read here by every command without locking the flags.
    pub is_replica: bool,
    /// What `info.last_cmd` (CLIENT LIST's `cmd=`) holds, so that it is locked and written only
    /// when it changes.
    pub last_cmd_shown: &'static str,
}

/// A command name as a request spelled it and what it resolved to (see [`Client::recent`]).
#[derive(Clone, Copy)]
pub struct RecentCommand {
    spelled: [u8; RecentCommand::MAX],
    len: u8,
    /// The command.
    pub cmd: &'static crate::ctx::Command,
}

impl RecentCommand {
    const MAX: usize = 16;

    /// Remembers that `name` resolved to `cmd` without a subcommand (None: not worth keeping, or
    /// `cmd` is a subcommand or a container, which depend on more than the name).
    pub fn new(name: &[u8], cmd: &'static crate::ctx::Command) -> Option<RecentCommand> {
        if name.len() > Self::MAX || !cmd.subcommands.is_empty() || cmd.name.contains('|') {
            return None;
        }
        let mut spelled = [0u8; Self::MAX];
        spelled[..name.len()].copy_from_slice(name);
        Some(RecentCommand { spelled, len: name.len() as u8, cmd })
    }

    /// True when `name` is spelled exactly as the remembered one.
    #[inline]
    pub fn named(&self, name: &[u8]) -> bool {
        name.len() == usize::from(self.len) && name == &self.spelled[..name.len()]
    }
}

impl Client {
    /// A new client registered in `registry`.
    pub fn new(registry: &ClientRegistry, addr: String, laddr: String, now_ms: u64, authenticated: bool) -> Client {
        let info = registry.register(addr, laddr, now_ms);
        Client { authenticated, deny_blocking: false, ..Client::detached(info, 0, Protocol::Resp2) }
    }
}

impl Client {
    /// A waiter for this client's blocking command `args` (`cmd`), which asked to block with `req`;
    /// its wake-up is [`Client::block_waker`].
    pub fn waiter(
        &self,
        cmd: &'static crate::ctx::Command,
        args: &[bytes::Bytes],
        req: crate::waiters::BlockRequest,
    ) -> crate::ctx::Waiter {
        let wake = self.block_waker.clone().unwrap_or_else(|| Arc::new(|| {}));
        crate::waiters::Waiter::new(self.info.clone(), self.db, self.proto, cmd, args.to_vec(), req, wake)
    }

    /// Sets CLIENT LIST's `cmd=` to `name` (locking it only when it changes).
    pub fn show_last_cmd(&mut self, name: &'static str) {
        if !std::ptr::eq(self.last_cmd_shown, name) {
            *self.info.last_cmd.lock() = name;
            self.last_cmd_shown = name;
        }
    }

    /// Makes the connection a replica's (SYNC, PSYNC): CLIENT LIST's `S` flag, and
    /// [`Client::is_replica`], which every command reads without locking the flags.
    pub fn become_replica(&mut self) {
        self.info.set_flag('S', true);
        self.is_replica = true;
    }

    /// Leaves MULTI and unwatches everything (DISCARD, EXEC, RESET), keeping CLIENT LIST in step.
    pub fn leave_multi(&mut self) {
        use std::sync::atomic::Ordering;
        self.multi.reset();
        self.info.set_watch_state(None);
        self.info.set_flag('x', false);
        self.info.multi.store(-1, Ordering::Relaxed);
        self.info.multi_mem.store(0, Ordering::Relaxed);
        self.info.watched_mem.store(0, Ordering::Relaxed);
    }

    /// A stand-in for a blocked client while a writer serves it on its behalf: same id, info, db and
    /// protocol; never blocks; not registered.
    pub fn detached(info: Arc<ClientInfo>, db: usize, proto: Protocol) -> Client {
        Client {
            id: info.id,
            db,
            proto,
            authenticated: true,
            user: None,
            reply_mode: ReplyMode::On,
            close_after_reply: false,
            shut_down_server: false,
            error_counted: false,
            ldb_sync: false,
            ldb_link: None,
            obuf_overflow: false,
            no_touch: false,
            no_evict: false,
            monitor: false,
            loading: false,
            from_primary: false,
            wait_acks: None,
            shutdown_wait: false,
            wait_durable: false,
            suppress_reply: false,
            multi: Default::default(),
            block: None,
            blocked: None,
            block_waker: None,
            deny_blocking: true,
            defer_blocking: false,
            readonly: false,
            in_script: false,
            in_exec: false,
            oom: false,
            info,
            effects: Vec::new(),
            propagate_to: crate::changes::Effect::ALL,
            subs: Default::default(),
            monitor_echo: Default::default(),
            tracking: false,
            script_read: false,
            acl_rules: Default::default(),
            after_reply: Vec::new(),
            sync: None,
            random: None,
            recent: None,
            is_replica: false,
            last_cmd_shown: "NULL",
        }
    }
}

/// A WAIT waiting for replicas' acknowledgements (see [`Client::wait_acks`]).
#[derive(Clone, Copy, Debug)]
pub struct WaitAcks {
    /// The stream offset the replicas must acknowledge.
    pub offset: u64,
    /// How many replicas.
    pub replicas: usize,
    /// Deadline on the monotonic timeline (ms), if any.
    pub deadline: Option<u64>,
}
