//! The composition's view of a command: [`Ctx`], what a handler receives (the server, the calling
//! client, the locked shards, the arguments), and [`Engine`], the one [`Runner`] of the command
//! table, whose handlers take a `Ctx`. With the server and the client this is the runtime's top: the
//! server holds the table, a handler's context lends it the server and the client, a type knot no
//! command table escapes (Redis's `redisCommandProc` takes a `client *`, which reaches the server).
//! Every subsystem below reads commands as data ([`crate::command`]).

use crate::client::Client;
use crate::command::Runner;
use crate::keyspace::Locked;
use crate::server::Server;
use bytes::Bytes;
use resp::Frame;

/// The runner of Latch's command table: handlers and serve functions take a [`Ctx`].
pub enum Engine {}

impl Runner for Engine {
    type Handler = Handler;
    type Serve = ServeFn;
    type Ready = ReadyFn;
}

/// A command handler: reads `ctx.args`, works on `ctx.db()`, returns the reply.
pub type Handler = fn(&mut Ctx<'_, '_>) -> Frame;

/// See [`Command::serve`].
pub type ServeFn = fn(&mut Ctx<'_, '_>, &[u8]) -> crate::waiters::Serve;

/// See [`Command::ready`].
pub type ReadyFn = fn(&mut Ctx<'_, '_>, &[u8]) -> bool;

/// An entry of Latch's command table.
pub type Command = crate::command::Command<Engine>;

/// Latch's command table.
pub type CommandTable = crate::command::CommandTable<Engine>;

/// A client blocked on keys, waiting to run one of Latch's commands.
pub type Waiter = crate::waiters::Waiter<Engine>;

/// A client's MULTI/WATCH state, queuing Latch's commands.
pub type MultiState = crate::transactions::MultiState<Engine>;

/// A handler for container commands invoked without a valid subcommand; dispatch never calls it.
pub fn container_handler(_: &mut Ctx<'_, '_>) -> Frame {
    Frame::error("ERR container command called without subcommand")
}

/// Everything a handler may touch.
pub struct Ctx<'a, 'k> {
    /// Server-wide state.
    pub srv: &'a Server,
    /// The calling client.
    pub client: &'a mut Client,
    /// The locked shards.
    pub locked: &'a mut Locked<'k>,
    /// The arguments, `args[0]` being the command name as sent.
    pub args: &'a [Bytes],
    /// Monotonic milliseconds, fixed for the duration of the command (and of a whole EXEC or script,
    /// as in Redis).
    pub now: u64,
    /// The command being run.
    pub cmd: &'static Command,
    /// Changes made so far ([`Ctx::changed`]).
    pub dirty: u64,
    /// What the command propagates as instead of its arguments ([`Ctx::propagate_as`]).
    pub rewrite: Option<Vec<Vec<Bytes>>>,
    /// The keyspace events its change raises when its name does not tell ([`Ctx::event`]).
    /// Inline for the one or two a command names: XADD names one per call.
    pub events: smallvec::SmallVec<[&'static str; 2]>,
}

impl<'a, 'k> Ctx<'a, 'k> {
    /// A context for running `cmd` with `args`.
    pub fn new(
        srv: &'a Server,
        client: &'a mut Client,
        locked: &'a mut Locked<'k>,
        args: &'a [Bytes],
        now: u64,
        cmd: &'static Command,
    ) -> Self {
        Ctx { srv, client, locked, args, now, cmd, dirty: 0, rewrite: None, events: smallvec::SmallVec::new() }
    }

    /// Reports `n` changes to the data (Redis's `server.dirty += n`: the count behind
    /// `rdb_changes_since_last_save`, and what makes the command reach the change stream; see
    /// [`crate::changes`]). Zero means the command changed nothing after all.
    #[inline]
    pub fn changed(&mut self, n: u64) {
        self.dirty += n;
    }

    /// Propagates the command as `args` instead of its own arguments (Redis's
    /// `rewriteClientCommandVector`/`alsoPropagate`); called several times, as several commands. The
    /// command is propagated even if it reports no change (Redis's `forceCommandPropagation`).
    pub fn propagate_as<A: AsRef<[u8]>>(&mut self, args: &[A]) {
        if !self.propagating() {
            return;
        }
        let v = args.iter().map(|a| Bytes::copy_from_slice(a.as_ref())).collect();
        self.rewrite.get_or_insert_with(Vec::new).push(v);
    }

    /// [`Ctx::propagate_as`] for arguments already built as `Bytes`, taken without a copy.
    pub fn propagate_owned(&mut self, args: Vec<Bytes>) {
        if self.propagating() {
            self.rewrite.get_or_insert_with(Vec::new).push(args);
        }
    }

    /// Names a keyspace event (class `t`, streams) that the command's change raises, in order: the
    /// stream commands raise events by what they did (XADD's `xtrim` only when it trimmed,
    /// XREADGROUP's `xgroup-createconsumer` only when it made one), which their name cannot tell.
    /// The composition raises them after the command, as every other event.
    pub fn event(&mut self, name: &'static str) {
        self.events.push(name);
    }

    /// Propagates nothing for this command, whatever it changed (Redis's
    /// `preventCommandPropagation`), beyond what it asked for with [`Ctx::propagate_as`].
    pub fn propagate_nothing(&mut self) {
        if self.propagating() {
            self.rewrite.get_or_insert_with(Vec::new);
        }
    }

    /// Propagates the command as it was sent even if it reports no change (FLUSHALL on an empty
    /// server, as Redis's `forceCommandPropagation`).
    pub fn force_propagate(&mut self) {
        if !self.propagating() {
            return;
        }
        let v = self.args.to_vec();
        self.rewrite.get_or_insert_with(Vec::new).push(v);
    }

    /// True when the change stream records effects (a handler may skip building a rewrite if not).
    pub fn propagating(&self) -> bool {
        self.srv.changes.enabled()
    }

    /// The most bytes a reply to this client may take: what `client-output-buffer-limit`'s hard
    /// limit for the normal class lets through beyond Redis's 16 KiB reply buffer, or no bound
    /// (none set, or a script's call, whose result is checked when the script replies). Commands
    /// that can build huge replies size them first and refuse them with [`Ctx::reply_too_large`].
    pub fn reply_cap(&self) -> usize {
        let hard = self.srv.config.normal_obuf_limits().hard;
        if hard == 0 || self.client.in_script {
            return usize::MAX;
        }
        usize::try_from(hard).unwrap_or(usize::MAX).saturating_add(16 * 1024)
    }

    /// Gives up a reply over [`Ctx::reply_cap`] before building it: the client is closed without
    /// it, as Redis closes a client whose reply outgrows the limit mid-run.
    pub fn reply_too_large(&mut self) -> Frame {
        self.client.obuf_overflow = true;
        Frame::Null
    }

    /// The client's selected database.
    pub fn db(&mut self) -> crate::db::Db<'_, 'k> {
        self.db_at(self.client.db)
    }

    /// The command's database view and the generator its random choices come from (the client's
    /// seeded one in consensus mode, see `crate::random`), borrowed together.
    pub fn db_rng(&mut self) -> (crate::db::Db<'_, 'k>, crate::random::Source<'_>) {
        let db = db_view(self.locked, self.srv, self.client, self.client.db, self.now);
        (db, crate::random::Source::of(self.client.random.as_mut()))
    }

    /// Another database (MOVE, COPY ... DB).
    pub fn db_at(&mut self, index: usize) -> crate::db::Db<'_, 'k> {
        db_view(self.locked, self.srv, self.client, index, self.now)
    }
    /// Argument `i`.
    pub fn arg(&self, i: usize) -> &'a [u8] {
        &self.args[i]
    }
    /// Number of arguments including the name.
    pub fn argc(&self) -> usize {
        self.args.len()
    }
    /// Argument `i` as a strict integer, or the standard error reply.
    pub fn int_arg(&self, i: usize) -> Result<i64, Frame> {
        crate::args::parse_i64_strict(&self.args[i]).ok_or_else(crate::error::not_integer)
    }
    /// Argument `i` as a float, or the standard error reply.
    pub fn float_arg(&self, i: usize) -> Result<f64, Frame> {
        crate::args::parse_f64(&self.args[i]).ok_or_else(crate::error::not_float)
    }
    /// The Unix time in ms of a deadline on the monotonic timeline (what `PXAT`/`PEXPIREAT` take).
    pub fn to_unix_ms(&self, deadline: u64) -> i64 {
        (deadline as i64).saturating_add(self.srv.clock.wall_offset_ms())
    }
    /// Unix time in ms matching `self.now`.
    pub fn unix_ms(&self) -> i64 {
        self.now as i64 + self.srv.clock.wall_offset_ms()
    }
}

/// Database `index` as a command of `client` sees it at `now`; from the context's fields, so that
/// others (the client's generator) can be borrowed beside it.
fn db_view<'s, 'k>(
    locked: &'s mut Locked<'k>,
    srv: &'s Server,
    client: &Client,
    index: usize,
    now: u64,
) -> crate::db::Db<'s, 'k> {
    crate::db::Db::new(locked, index, now, srv.config.access(), client.no_touch, srv.table_eviction())
        .loading_if(client.loading)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_numbers_every_command_and_subcommand_densely() {
        let t = crate::cmd::table();
        let mut seen = vec![false; t.id_count()];
        for c in t.all() {
            for c in std::iter::once(*c).chain(c.subcommands.iter()) {
                let id = usize::from(c.id);
                assert!(id < seen.len(), "{} has id {id}", c.name);
                assert!(!seen[id], "{} reuses id {id}", c.name);
                seen[id] = true;
            }
        }
        assert!(seen.iter().all(|s| *s), "ids not dense");
        // What dispatch hands out is numbered, subcommands included, and agrees with `all`.
        let args = |v: &[&str]| v.iter().map(|s| Bytes::copy_from_slice(s.as_bytes())).collect::<Vec<_>>();
        let get = t.resolve(&args(&["GeT", "k"])).expect("get");
        assert!(std::ptr::eq(get, t.get(b"get").expect("get")));
        assert!(t.all().iter().any(|c| std::ptr::eq(*c, get)));
        let cg = t.resolve(&args(&["CONFIG", "get", "hz"])).expect("config|get");
        assert_eq!(cg.name, "config|get");
        let config = t.get(b"config").expect("config");
        assert!(config.subcommands.iter().any(|s| std::ptr::eq(s, cg)));
        assert!(usize::from(config.id) < usize::from(cg.id) && usize::from(cg.id) < t.id_count());
        // The definitions themselves stay unnumbered.
        assert!(crate::cmd::FAMILIES.iter().flat_map(|f| f.iter()).all(|c| c.id == Command::NO_ID));
        // A server uses the process-wide table.
        let srv = Server::new(crate::config::Config::new(), std::sync::Arc::new(crate::clock::ManualClock::new(0)));
        assert!(std::ptr::eq(srv.table, t));
    }
}
