//! The command table: one entry per command drives dispatch, arity checks, key extraction (and so
//! shard locking), `COMMAND` introspection and flags. Families (`cmd/*.rs`) each export a slice of
//! [`Command`]s; [`CommandTable`] indexes them by name.
//!
//! Commands here are data: the functions a command holds are typed by a [`Runner`], which the
//! runtime's composition names once (`crate::ctx::Engine`, whose handlers receive its `Ctx`). This
//! file knows nothing of the server that runs them, so every subsystem may read command metadata
//! without importing the server.

use bytes::Bytes;
use resp::Frame;
use std::collections::HashMap;

/// Command flags, named as in Redis's `COMMAND` output.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct Flags(pub u32);

#[allow(missing_docs)]
impl Flags {
    pub const WRITE: Flags = Flags(1);
    pub const READONLY: Flags = Flags(1 << 1);
    pub const DENYOOM: Flags = Flags(1 << 2);
    pub const ADMIN: Flags = Flags(1 << 3);
    pub const PUBSUB: Flags = Flags(1 << 4);
    pub const NOSCRIPT: Flags = Flags(1 << 5);
    pub const BLOCKING: Flags = Flags(1 << 6);
    pub const LOADING: Flags = Flags(1 << 7);
    pub const STALE: Flags = Flags(1 << 8);
    pub const SKIP_MONITOR: Flags = Flags(1 << 9);
    pub const SKIP_SLOWLOG: Flags = Flags(1 << 10);
    pub const FAST: Flags = Flags(1 << 11);
    pub const NO_AUTH: Flags = Flags(1 << 12);
    pub const MAY_REPLICATE: Flags = Flags(1 << 13);
    pub const NO_MANDATORY_KEYS: Flags = Flags(1 << 14);
    pub const ALLOW_BUSY: Flags = Flags(1 << 15);
    pub const NO_MULTI: Flags = Flags(1 << 16);
    /// Denied while a replica loads a dataset asynchronously (`no_async_loading`).
    pub const NO_ASYNC_LOADING: Flags = Flags(1 << 17);
    /// Latch-internal: the command needs every shard of the keyspace locked (KEYS, SCAN, FLUSHALL...).
    pub const ALL_SHARDS: Flags = Flags(1 << 24);

    /// Flag names reported by `COMMAND`, in Redis's order.
    pub const NAMES: &'static [(Flags, &'static str)] = &[
        (Flags::WRITE, "write"),
        (Flags::READONLY, "readonly"),
        (Flags::DENYOOM, "denyoom"),
        (Flags::ADMIN, "admin"),
        (Flags::PUBSUB, "pubsub"),
        (Flags::NOSCRIPT, "noscript"),
        (Flags::BLOCKING, "blocking"),
        (Flags::LOADING, "loading"),
        (Flags::STALE, "stale"),
        (Flags::SKIP_MONITOR, "skip_monitor"),
        (Flags::SKIP_SLOWLOG, "skip_slowlog"),
        (Flags::FAST, "fast"),
        (Flags::NO_AUTH, "no_auth"),
        (Flags::MAY_REPLICATE, "may_replicate"),
        (Flags::NO_MANDATORY_KEYS, "no_mandatory_keys"),
        (Flags::ALLOW_BUSY, "allow_busy"),
        (Flags::NO_MULTI, "no_multi"),
        (Flags::NO_ASYNC_LOADING, "no_async_loading"),
    ];

    /// True if every flag of `other` is set.
    pub const fn has(self, other: Flags) -> bool {
        self.0 & other.0 == other.0
    }
    /// Union.
    pub const fn or(self, other: Flags) -> Flags {
        Flags(self.0 | other.0)
    }
}

impl std::ops::BitOr for Flags {
    type Output = Flags;
    fn bitor(self, o: Flags) -> Flags {
        Flags(self.0 | o.0)
    }
}

/// Where a command's keys are.
#[derive(Clone, Copy)]
pub enum Keys {
    /// No keys.
    None,
    /// Redis's legacy (first, last, step) triple; `last` negative counts from the end.
    Range {
        /// Index of the first key (1-based, as `argv[0]` is the name).
        first: i32,
        /// Index of the last key; -1 = last argument, -2 = the one before...
        last: i32,
        /// Distance between keys.
        step: i32,
    },
    /// Keys found by a function of the arguments (Redis's "movablekeys"); `(first, last, step)` is
    /// what `COMMAND` reports.
    Custom {
        /// What COMMAND reports as first key.
        first: i32,
        /// What COMMAND reports as last key.
        last: i32,
        /// What COMMAND reports as step.
        step: i32,
        /// Returns the positions of the keys in `args`.
        find: fn(&[Bytes]) -> Vec<usize>,
    },
}

/// Key positions in a command's arguments (see [`Keys::positions`]).
pub type Positions = smallvec::SmallVec<[usize; 4]>;

impl Keys {
    /// Shorthand for one key at position 1.
    pub const ONE: Keys = Keys::Range { first: 1, last: 1, step: 1 };
    /// Shorthand for every argument from position 1 being a key.
    pub const ALL: Keys = Keys::Range { first: 1, last: -1, step: 1 };

    /// Positions of the keys in `args` (`args[0]` is the command name); up to four without
    /// allocating (every command's way to its locks asks this).
    pub fn positions(&self, args: &[Bytes]) -> Positions {
        match *self {
            Keys::None => Positions::new(),
            Keys::Range { .. } => {
                // A plain loop: collecting `range_positions` cost more than the rest of the lookup.
                let (first, last, step) = self.range_bounds(args.len());
                let mut out = Positions::new();
                let mut i = first;
                while i <= last {
                    out.push(i as usize);
                    i += step;
                }
                out
            }
            Keys::Custom { find, .. } => find(args).into_iter().filter(|&i| i < args.len()).collect(),
        }
    }

    /// The one position [`Keys::positions`] finds among `argc` arguments when the spec is a
    /// `Range` of a single key that is there (GET's, SET's, INCR's ...), None otherwise: the
    /// common case of the way to the locks, without building the positions.
    #[inline]
    pub fn single(&self, argc: usize) -> Option<usize> {
        match *self {
            Keys::Range { first, last, step } if first == last && first > 0 && step > 0 && (first as usize) < argc => {
                Some(first as usize)
            }
            _ => None,
        }
    }

    /// The positions a `Range` finds among `argc` arguments, without allocating (none for the
    /// other kinds).
    pub fn range_positions(&self, argc: usize) -> impl Iterator<Item = usize> {
        let (first, last, step) = self.range_bounds(argc);
        (first..=last).step_by(step as usize).map(|i| i as usize)
    }

    /// A `Range`'s first and last position among `argc` arguments (a negative last counts from
    /// the end) and its step; an empty range for the other kinds.
    fn range_bounds(&self, argc: usize) -> (i32, i32, i32) {
        let (first, last, step) = match *self {
            Keys::Range { first, last, step } if step > 0 => (first, last, step),
            _ => (1, 0, 1),
        };
        let argc = argc as i32;
        let last = if last < 0 { argc + last } else { last };
        (first, last.min(argc - 1), step)
    }

    /// The (first, last, step) triple COMMAND reports.
    pub fn legacy(&self) -> (i32, i32, i32) {
        match *self {
            Keys::None => (0, 0, 0),
            Keys::Range { first, last, step } | Keys::Custom { first, last, step, .. } => (first, last, step),
        }
    }
}

/// What runs commands: the types of the functions a [`Command`] holds. One implementation exists
/// (`crate::ctx::Engine`); the parameter keeps the table free of the server it serves.
pub trait Runner: 'static {
    /// A command handler: reads its context's arguments, works on the data, returns the reply.
    type Handler: Copy + Send + Sync + 'static;
    /// See [`Command::serve`].
    type Serve: Copy + Send + Sync + 'static;
    /// See [`Command::ready`].
    type Ready: Copy + Send + Sync + 'static;
}

/// A command's group, as COMMAND DOCS names it (Redis's `commandGroupStr`), plus Latch's own
/// `lock` group for the native lock commands.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Group {
    /// `generic (keyspace)`
    Generic,
    /// `string`
    String,
    /// `list`
    List,
    /// `set`
    Set,
    /// `sorted-set`
    SortedSet,
    /// `hash`
    Hash,
    /// `pubsub`
    PubSub,
    /// `transactions`
    Transactions,
    /// `connection`
    Connection,
    /// `server`
    Server,
    /// `scripting`
    Scripting,
    /// `hyperloglog`
    HyperLogLog,
    /// `cluster`
    Cluster,
    /// `geo`
    Geo,
    /// `stream`
    Stream,
    /// `bitmap`
    Bitmap,
    /// `lock (Latch's native locks)`
    Lock,
}

impl Group {
    /// The name COMMAND DOCS prints.
    pub const fn name(self) -> &'static str {
        match self {
            Group::Generic => "generic",
            Group::String => "string",
            Group::List => "list",
            Group::Set => "set",
            Group::SortedSet => "sorted-set",
            Group::Hash => "hash",
            Group::PubSub => "pubsub",
            Group::Transactions => "transactions",
            Group::Connection => "connection",
            Group::Server => "server",
            Group::Scripting => "scripting",
            Group::HyperLogLog => "hyperloglog",
            Group::Cluster => "cluster",
            Group::Geo => "geo",
            Group::Stream => "stream",
            Group::Bitmap => "bitmap",
            Group::Lock => "lock",
        }
    }

    /// The ACL category a command of this group belongs to (for commands Redis does not have).
    pub const fn acl_category(self) -> Option<&'static str> {
        match self {
            Group::Generic => Some("@keyspace"),
            Group::String => Some("@string"),
            Group::List => Some("@list"),
            Group::Hash => Some("@hash"),
            Group::Set => Some("@set"),
            Group::SortedSet => Some("@sortedset"),
            Group::Bitmap => Some("@bitmap"),
            Group::HyperLogLog => Some("@hyperloglog"),
            Group::Geo => Some("@geo"),
            Group::Stream => Some("@stream"),
            Group::PubSub => Some("@pubsub"),
            Group::Connection => Some("@connection"),
            Group::Transactions => Some("@transaction"),
            Group::Scripting => Some("@scripting"),
            Group::Lock => Some("@latch-lock"),
            Group::Server | Group::Cluster => None,
        }
    }
}

/// One entry of the command table.
pub struct Command<R: Runner> {
    /// Lowercase name; subcommands are named `container|sub` as in Redis.
    pub name: &'static str,
    /// Redis arity: positive = exact argc, negative = at least -arity.
    pub arity: i32,
    /// Flags.
    pub flags: Flags,
    /// Key positions.
    pub keys: Keys,
    /// Command group (COMMAND DOCS `group`).
    pub group: Group,
    /// Version that introduced the command (as Redis documents it).
    pub since: &'static str,
    /// One-line summary (COMMAND DOCS, latch-cli HELP).
    pub summary: &'static str,
    /// Time complexity text.
    pub complexity: &'static str,
    /// Argument syntax after the name, in Redis's documentation notation
    /// (`key value [NX | XX] [GET] [EX seconds | PX milliseconds]`). Parsed for COMMAND DOCS.
    pub syntax: &'static str,
    /// Handler (unused for containers, whose subcommands have their own).
    pub handler: R::Handler,
    /// Subcommands of a container command.
    pub subcommands: &'static [Command<R>],
    /// For blocking commands: serves a blocked client of this command from `key`, which just became
    /// ready (see [`crate::waiters`]). Runs with the waiter's arguments in `ctx.args` and a stand-in
    /// client with the waiter's db and protocol, against the writer's locks.
    pub serve: Option<R::Serve>,
    /// For blocking commands: whether `key` holds what would serve a blocked client of this
    /// command, without changing any value (a ringing waiter is rung only then, see
    /// [`crate::waiters`]). Same arguments as [`Command::serve`]. None: whenever the key exists.
    pub ready: Option<R::Ready>,
    /// For commands that need the whole keyspace only with some arguments (SORT with BY/GET
    /// patterns): returns true when `args` (`args[0]` = name) needs every shard locked, like
    /// [`Flags::ALL_SHARDS`]. Whoever locks for a command asks [`Command::needs_all_shards`].
    pub all_shards_if: Option<fn(&[Bytes]) -> bool>,
    /// Dense index of this command among all commands and subcommands of the [`CommandTable`] it
    /// came from (`0..CommandTable::id_count()`), for per-command state kept in arrays (statistics).
    /// The table numbers its own copies of the definitions; the definitions keep [`Command::NO_ID`].
    pub id: u16,
}

impl<R: Runner> Clone for Command<R> {
    fn clone(&self) -> Self {
        Command { ..*self }
    }
}

impl<R: Runner> Command<R> {
    /// [`Command::id`] of a definition no table has numbered.
    pub const NO_ID: u16 = u16::MAX;

    /// True if arity allows `argc` arguments (name included).
    pub fn arity_ok(&self, argc: usize) -> bool {
        let a = self.arity;
        (a > 0 && argc as i32 == a) || (a < 0 && argc as i32 >= -a)
    }
    /// True if running this command with `args` needs every shard locked: the
    /// [`Flags::ALL_SHARDS`] flag, or [`Command::all_shards_if`] says so for these arguments.
    pub fn needs_all_shards(&self, args: &[Bytes]) -> bool {
        self.flags.has(Flags::ALL_SHARDS) || self.all_shards_if.is_some_and(|f| f(args))
    }
}

/// All commands, indexed by lowercase name.
///
/// The table holds numbered copies of the families' definitions (see [`Command::id`]): every
/// `&'static Command<R>` it hands out, subcommands included, carries a dense id. The copies live for the
/// rest of the process, so the table is meant to be built once: [`crate::cmd::table`].
pub struct CommandTable<R: Runner> {
    /// Keyed by lowercase name. The keys are the table's own, so a fast unkeyed hash is safe here.
    by_name: HashMap<Vec<u8>, &'static Command<R>, foldhash::fast::FixedState>,
    all: Vec<&'static Command<R>>,
    /// Every command and subcommand by [`Command::id`].
    by_id: Vec<&'static Command<R>>,
    ids: usize,
}

impl<R: Runner> CommandTable<R> {
    /// Builds the table from the families' slices, numbering the commands in name order, each
    /// container followed by its subcommands.
    pub fn new(families: &[&'static [Command<R>]]) -> CommandTable<R> {
        let mut defs: Vec<&'static Command<R>> = families.iter().flat_map(|f| f.iter()).collect();
        defs.sort_by_key(|c| c.name);
        let mut next: usize = 0;
        let mut number = |c: &Command<R>| {
            let id = u16::try_from(next).ok().filter(|&id| id != Command::<R>::NO_ID).expect("too many commands");
            next += 1;
            Command { id, ..c.clone() }
        };
        let mut copies = Vec::with_capacity(defs.len());
        for def in &defs {
            let mut c = number(def);
            let subs: Vec<Command<R>> = def.subcommands.iter().map(&mut number).collect();
            if !subs.is_empty() {
                c.subcommands = Box::leak(subs.into_boxed_slice());
            }
            copies.push(c);
        }
        let copies: &'static [Command<R>] = Box::leak(copies.into_boxed_slice());
        let mut by_name = HashMap::with_hasher(foldhash::fast::FixedState::default());
        for c in copies {
            let prev = by_name.insert(c.name.as_bytes().to_vec(), c);
            assert!(prev.is_none(), "duplicate command {}", c.name);
        }
        let mut by_id: Vec<&'static Command<R>> =
            copies.iter().flat_map(|c| std::iter::once(c).chain(c.subcommands.iter())).collect();
        by_id.sort_by_key(|c| c.id);
        CommandTable { by_name, all: copies.iter().collect(), by_id, ids: next }
    }

    /// This table after the config file's `rename-command old new` lines, in order, as Redis applies
    /// them: `old` must name a command ("No such command in rename-command"), leaves the table, and
    /// comes back under `new` unless `new` is empty ("Target command name already exists" if taken).
    /// A renamed command keeps its own name in COMMAND's replies, as in Redis.
    pub fn renamed(&self, renames: &[(String, String)]) -> Result<CommandTable<R>, String> {
        let mut by_name = self.by_name.clone();
        for (old, new) in renames {
            let Some(cmd) = by_name.remove(old.to_ascii_lowercase().as_bytes()) else {
                return Err("No such command in rename-command".into());
            };
            if !new.is_empty() && by_name.insert(new.to_ascii_lowercase().into_bytes(), cmd).is_some() {
                return Err("Target command name already exists".into());
            }
        }
        let all = self.all.iter().copied().filter(|c| by_name.values().any(|v| std::ptr::eq(*v, *c))).collect();
        Ok(CommandTable { by_name, all, by_id: self.by_id.clone(), ids: self.ids })
    }

    /// Number of ids handed out: every [`Command::id`] from this table is below it.
    pub fn id_count(&self) -> usize {
        self.ids
    }

    /// The command or subcommand numbered `id` ([`Command::id`]) in the table this one was made
    /// from (a renamed view answers for the commands it renamed away too).
    pub fn by_id(&self, id: u16) -> Option<&'static Command<R>> {
        self.by_id.get(usize::from(id)).copied()
    }

    /// Finds a top-level command by name, case-insensitively.
    pub fn get(&self, name: &[u8]) -> Option<&'static Command<R>> {
        if name.len() > 64 {
            return None;
        }
        let mut buf = [0u8; 64];
        let lower = &mut buf[..name.len()];
        lower.copy_from_slice(name);
        lower.make_ascii_lowercase();
        self.by_name.get(&lower[..]).copied()
    }

    /// Resolves `args` to the command that will run: a top-level command or, for containers, the
    /// subcommand named by `args[1]`.
    pub fn resolve(&self, args: &[Bytes]) -> Result<&'static Command<R>, Frame> {
        let Some(cmd) = self.get(&args[0]) else {
            return Err(crate::error::unknown_command(args));
        };
        if cmd.subcommands.is_empty() {
            return Ok(cmd);
        }
        if args.len() < 2 {
            // A container whose arity allows no subcommand (COMMAND) runs its own handler.
            if cmd.arity == -1 {
                return Ok(cmd);
            }
            return Err(crate::error::wrong_arity(cmd.name));
        }
        let sub = args[1].to_ascii_lowercase();
        match cmd.subcommands.iter().find(|s| s.name.rsplit('|').next().map(str::as_bytes) == Some(&sub[..])) {
            Some(s) => Ok(s),
            None => Err(crate::error::unknown_subcommand(&args[1], cmd.name)),
        }
    }

    /// Every top-level command, sorted by name.
    pub fn all(&self) -> &[&'static Command<R>] {
        &self.all
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_single_key_is_where_positions_finds_it_alone() {
        fn find(args: &[Bytes]) -> Vec<usize> {
            (1..args.len()).collect()
        }
        let specs = [
            ("none", Keys::None),
            ("one", Keys::ONE),
            ("all", Keys::ALL),
            ("second", Keys::Range { first: 2, last: 2, step: 1 }),
            ("step 0", Keys::Range { first: 3, last: 3, step: 0 }),
            ("two", Keys::Range { first: 1, last: 2, step: 1 }),
            ("every other", Keys::Range { first: 1, last: -1, step: 2 }),
            ("all but the last", Keys::Range { first: 1, last: -2, step: 1 }),
            ("the name", Keys::Range { first: 0, last: 0, step: 1 }),
            ("custom", Keys::Custom { first: 1, last: 1, step: 1, find }),
        ];
        let mut singles = 0;
        for (name, spec) in specs {
            for argc in 1..8 {
                let args = vec![Bytes::from_static(b"x"); argc];
                let pos = spec.positions(&args);
                match spec.single(argc) {
                    Some(i) => {
                        singles += 1;
                        assert_eq!(pos[..], [i], "{name}, {argc} arguments");
                    }
                    // Not a one-key range, or its key is not there: positions answers (one
                    // position too, for Custom).
                    None => assert!(
                        !matches!(spec, Keys::Range { first, last, step } if first == last && first > 0 && step > 0)
                            || pos.is_empty(),
                        "{name}, {argc} arguments: {pos:?}"
                    ),
                }
            }
        }
        assert_eq!(singles, 6 + 5, "one from 2 arguments, the second from 3");
    }
}
