//! The Lua scripting engine behind EVAL and FCALL: a pool of Lua 5.1 VMs (through `mlua`), Redis's
//! sandbox and `redis.*` API, and the Lua <-> RESP conversions.
//!
//! A script locks only the shards of its declared keys (undeclared ones are taken on the fly, see
//! [`ensure_shards`]), so atomicity does not depend on which VM runs it: two scripts on different keys
//! run in parallel, each on its own VM of the pool (a thread first tries the VM it used last). The
//! global `scripts` / `libraries` maps are the source of truth; each VM compiles a script the first
//! time it runs it, and drops its compiled scripts / reloads every library when the matching
//! generation counter moved (SCRIPT FLUSH, FUNCTION LOAD/DELETE/FLUSH/RESTORE), collecting the garbage
//! at once. SCRIPT FLUSH also drops the idle VMs outright, as Redis starts a new interpreter; a new VM
//! is made on the next run. Each VM has its own
//! [`RunState`], readable without locks: `Server::execute` uses them to answer `-BUSY` once a script
//! has run past `busy-reply-threshold`, and SCRIPT KILL / FUNCTION KILL set the kill flag, checked by
//! a count hook every 100k instructions.

mod chunk;
mod ldb;
pub mod libs;
pub use ldb::DebugLink;
mod lstruct;
mod msgpack;
mod raw;

use crate::command::{Command, CommandTable, Runner};
use crate::keyspace::Locked;
use bytes::Bytes;
use mlua::{Function, HookTriggers, Lua, LuaOptions, MultiValue, RegistryKey, StdLib, Table, Value, VmState};
use parking_lot::Mutex;
use resp::Frame;
use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicPtr, AtomicU8, AtomicU64, AtomicUsize, Ordering};

/// Script flag: no shebang (EVAL compatibility mode).
pub const FLAG_COMPAT: u32 = 1;
/// `no-writes`
pub const FLAG_NO_WRITES: u32 = 2;
/// `allow-oom`
pub const FLAG_ALLOW_OOM: u32 = 4;
/// `allow-stale`
pub const FLAG_ALLOW_STALE: u32 = 8;
/// `no-cluster`
pub const FLAG_NO_CLUSTER: u32 = 16;
/// `allow-cross-slot-keys`
pub const FLAG_ALLOW_CROSS_SLOT: u32 = 32;

/// Flag names, as in shebangs and FUNCTION LIST.
pub const FLAG_NAMES: &[(u32, &str)] = &[
    (FLAG_NO_WRITES, "no-writes"),
    (FLAG_ALLOW_OOM, "allow-oom"),
    (FLAG_ALLOW_STALE, "allow-stale"),
    (FLAG_NO_CLUSTER, "no-cluster"),
    (FLAG_ALLOW_CROSS_SLOT, "allow-cross-slot-keys"),
];

/// What a running script exposes to other threads.
#[derive(Default)]
pub struct RunState {
    /// A script is running.
    pub running: AtomicBool,
    /// Monotonic ms when it started.
    pub start_ms: AtomicU64,
    /// It was started by EVAL (as opposed to FCALL).
    pub eval: AtomicBool,
    /// SCRIPT KILL / FUNCTION KILL asked it to stop.
    pub killed: AtomicBool,
    /// It ran a write command (it can no longer be killed).
    pub wrote: AtomicBool,
    /// It reached for a key it did not declare.
    pub undeclared: AtomicBool,
    /// It must start over holding every shard: it reached for an undeclared key whose shard another
    /// client held, before writing anything (see [`ensure_shards`]). Its further calls are refused
    /// and the hook ends it; nothing it did is kept.
    pub restart: AtomicBool,
    /// RESP version of its redis.call replies (redis.setresp).
    pub resp: AtomicU8,
    /// Where the effects of the commands it calls go from now on (`redis.set_repl`: a
    /// [`crate::changes::Effect::targets`] value, `REPL_ALL` at the start).
    pub repl: AtomicU8,
    /// Name and command of the running function (FUNCTION STATS).
    pub info: Mutex<(String, Vec<Bytes>)>,
    /// The network layer was told this run is long.
    pub handed_off: AtomicBool,
    /// What to call when a run gets long (`Server::long_op`).
    pub long_op: Mutex<Option<Arc<dyn Fn() + Send + Sync>>>,
    /// `busy-reply-threshold` when the run started (ms; 0: none).
    pub threshold_ms: AtomicI64,
    /// The run was logged as slow (once per run, as Redis's "Slow script detected").
    pub slow_logged: AtomicBool,
}

/// A cached EVAL script.
pub struct ScriptMeta {
    /// The body as sent.
    pub body: Bytes,
    /// `FLAG_*` bits.
    pub flags: u32,
}

/// A registered function.
#[derive(Clone)]
pub struct FunctionMeta {
    /// Name.
    pub name: String,
    /// Description, if given.
    pub desc: Option<String>,
    /// `FLAG_*` bits.
    pub flags: u32,
}

/// A function library.
#[derive(Clone)]
pub struct Library {
    /// Library name.
    pub name: String,
    /// Full code, shebang included.
    pub code: Bytes,
    /// Functions by name.
    pub functions: BTreeMap<String, FunctionMeta>,
}

/// One VM of the pool and what it exposes while running.
#[repr(align(128))]
struct Slot {
    vm: Mutex<Option<Vm>>,
    run: Arc<RunState>,
}

/// Scripting state of a server.
pub struct Scripting {
    pool: Box<[Slot]>,
    /// Bumped by SCRIPT FLUSH: VMs with an older one drop their compiled scripts.
    script_gen: AtomicU64,
    /// Bumped when the libraries change: VMs with an older one reload them all before an FCALL.
    lib_gen: AtomicU64,
    /// EVAL script cache by lowercase sha1.
    pub scripts: Mutex<HashMap<String, ScriptMeta, foldhash::fast::RandomState>>,
    /// Function libraries by name.
    pub libraries: Mutex<BTreeMap<String, Library>>,
    /// Function name, lowercased (Redis's function names are case-insensitive) -> library name.
    pub functions: Mutex<HashMap<String, String>>,
    /// Scripts and functions seen touching keys they did not declare ([`script_id`]): they run
    /// with every shard locked from then on, as a whole-keyspace command (Redis runs every script
    /// that way), so they never meet a lock they cannot take in order.
    escalated: parking_lot::RwLock<std::collections::HashSet<u64, foldhash::fast::RandomState>>,
    /// True once `escalated` has a member: the only check other scripts pay for.
    any_escalated: AtomicBool,
    /// Scripts and functions seen running through without touching an undeclared key, by
    /// [`script_id`] in a slot of their own (a collision only costs a script one more run with every
    /// shard). Until a script is here it runs with every shard locked: its first run cannot meet a
    /// lock it would have to wait for out of order.
    verified: Box<[AtomicU64]>,
    /// The command table as defined (before `rename-command`): what `redis.call` resolves names in
    /// when the server renamed nothing, and what `redis.acl_check_cmd` checks.
    pub table: &'static dyn Names,
    /// What the instruction hook reads the time on and logs to (a run past the threshold).
    watch: SlowWatch,
}

/// The clock and the log a running script is watched with.
#[derive(Clone)]
struct SlowWatch {
    clock: Arc<dyn crate::clock::Clock>,
    host: Arc<dyn crate::host::Host>,
}

impl SlowWatch {
    /// Called by the instruction hook: logs the run once it is past its threshold (Redis's
    /// "Slow script detected" warning).
    fn check(&self, r: &RunState) {
        let threshold = r.threshold_ms.load(Ordering::Relaxed);
        if threshold <= 0 || r.slow_logged.load(Ordering::Relaxed) {
            return;
        }
        let elapsed = self.clock.now_ms().saturating_sub(r.start_ms.load(Ordering::Relaxed));
        if (elapsed as i64) < threshold || r.slow_logged.swap(true, Ordering::Relaxed) {
            return;
        }
        let (kill, name) = if r.eval.load(Ordering::Relaxed) {
            ("SCRIPT KILL", String::new())
        } else {
            ("FUNCTION KILL", format!(" Script name is: {}.", r.info.lock().0))
        };
        self.host.log(
            crate::host::LogLevel::Warning,
            &format!(
                "Slow script detected: still in execution after {elapsed} milliseconds. You can try killing the script using the {kill} command.{name}"
            ),
        );
    }
}

/// Slots of `Scripting::verified`.
const VERIFIED_SLOTS: usize = 4096;

/// Identifies the script an EVAL/EVALSHA/FCALL (or an `_RO` form; `name` in any case) runs: a
/// hash of its body, sha (lowercased) or function name, then the command's kind. Every command with
/// an argument asks on its way to its locks, so other names are turned away first, and a short
/// body is hashed in one call from the stack (no allocation, no streaming state: the same hash).
#[inline]
fn script_id(name: &[u8], what: &[u8]) -> Option<u64> {
    // Every script command's name begins with `e` or `f`: most others end here, before the six
    // comparisons below.
    if !matches!(name.first(), Some(b'e' | b'E' | b'f' | b'F')) {
        return None;
    }
    let is = |a: &[u8]| name.eq_ignore_ascii_case(a);
    let kind: &'static [u8] = if is(b"eval") || is(b"eval_ro") {
        b"eval"
    } else if is(b"evalsha") || is(b"evalsha_ro") {
        b"evalsha"
    } else if is(b"fcall") || is(b"fcall_ro") {
        b"fcall"
    } else {
        return None;
    };
    Some(script_hash(kind, what))
}

/// [`script_id`]'s hash of `what` (lowercased for `evalsha`) and `kind`. Kept out of line: the
/// turn-away above is inlined into every command's way to its locks, this buffer is not.
#[inline(never)]
fn script_hash(kind: &'static [u8], what: &[u8]) -> u64 {
    let lower = kind == b"evalsha";
    let mut buf = [0u8; 96];
    if let Some(body) = buf.get_mut(..what.len()) {
        body.copy_from_slice(what);
        if lower {
            body.make_ascii_lowercase();
        }
        let n = what.len() + kind.len();
        if let Some(tail) = buf.get_mut(what.len()..n) {
            tail.copy_from_slice(kind);
            return xxhash_rust::xxh3::xxh3_64(&buf[..n]);
        }
    }
    let mut h = xxhash_rust::xxh3::Xxh3::new();
    if lower {
        h.update(&what.to_ascii_lowercase());
    } else {
        h.update(what);
    }
    h.update(kind);
    h.digest()
}

impl Scripting {
    /// Scripting for a server whose commands are `table` (as defined, before `rename-command`).
    pub fn new(
        table: &'static dyn Names,
        clock: Arc<dyn crate::clock::Clock>,
        host: Arc<dyn crate::host::Host>,
    ) -> Self {
        let n = std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1).saturating_mul(2).max(2);
        Scripting {
            pool: (0..n).map(|_| Slot { vm: Mutex::new(None), run: Arc::default() }).collect(),
            script_gen: AtomicU64::new(0),
            lib_gen: AtomicU64::new(0),
            scripts: Mutex::default(),
            libraries: Mutex::default(),
            functions: Mutex::default(),
            escalated: Default::default(),
            any_escalated: AtomicBool::new(false),
            verified: (0..VERIFIED_SLOTS).map(|_| AtomicU64::new(0)).collect(),
            table,
            watch: SlowWatch { clock, host },
        }
    }
}

thread_local! {
    /// The pool slot this thread tried first last time (cache affinity); `usize::MAX` until set.
    static HOME: std::cell::Cell<usize> = const { std::cell::Cell::new(usize::MAX) };
}

/// Hands out home slots round-robin to new threads.
static NEXT_HOME: AtomicUsize = AtomicUsize::new(0);

type Pending = Arc<Mutex<Option<Vec<(FunctionMeta, Function)>>>>;

/// The command table as scripts name commands (as defined, before `rename-command`).
pub trait Names: Send + Sync {
    /// The number ([`Command::id`]) and static name of the top-level command without subcommands
    /// whose name is exactly `name` (lowercase, as scripts usually write it), so that `redis.call`
    /// reuses the name and the host finds the command without a second lookup.
    fn plain(&self, name: &[u8]) -> Option<(u16, &'static str)>;
    /// The static name of the command numbered `id` (one [`Names::plain`] returned).
    fn name_of(&self, id: u16) -> &'static str;
}

impl<R: Runner> Names for CommandTable<R> {
    fn plain(&self, name: &[u8]) -> Option<(u16, &'static str)> {
        let cmd = self.get(name)?;
        (cmd.subcommands.is_empty() && cmd.name.as_bytes() == name).then_some((cmd.id, cmd.name))
    }

    fn name_of(&self, id: u16) -> &'static str {
        self.by_id(id).map_or("", |c| c.name)
    }
}

/// What one `redis.call` came to, before it is pushed.
pub enum Outcome {
    /// The command ran: its reply, and whether the script asked for RESP3 (redis.setresp).
    Reply(Frame, bool),
    /// Refused before running: message, and whether its first word is the error code.
    Refused(Vec<u8>, bool),
    /// Called outside a run.
    Outside,
    /// A Rust panic, parked in the host.
    Panicked,
}

/// The command running a script, as the script reaches it (`redis.call`, `redis.pcall`,
/// `redis.acl_check_cmd`) and as a run needs it (time, BUSY, the configuration's say). The
/// runtime's composition implements it for a server, the calling client and its locked shards;
/// scripting knows no server.
pub trait ScriptHost {
    /// `redis.call(argv...)`: resolves (`named`: [`Names::plain`]'s number for argv[0]), checks
    /// (for `script`) and runs one command.
    fn call(&mut self, named: Option<u16>, argv: &[Bytes], script: &ScriptCall<'_>) -> Outcome;
    /// `redis.acl_check_cmd(argv...)`: whether the caller's user may run the command, or the
    /// error when argv names none.
    fn acl_allows(&self, argv: &[Bytes]) -> Result<bool, &'static str>;
    /// The run turned out long: the host lets other connections run meanwhile.
    fn long_op(&self);
    /// `-BUSY` for the calling command, while it waits for a VM behind a script past the threshold.
    fn busy_error(&self) -> Option<Frame>;
    /// The clock's monotonic milliseconds now.
    fn now_ms(&self) -> u64;
    /// The calling command's time (monotonic ms).
    fn started_ms(&self) -> u64;
    /// `busy-reply-threshold`.
    fn busy_reply_threshold(&self) -> i64;
    /// `min-replicas-to-write` is not met: scripts that may write are refused.
    fn writes_need_replicas(&self) -> bool;
    /// Memory was over `maxmemory` when the calling command started.
    fn oom(&self) -> bool;
    /// A replica with its link down that serves no stale data: scripts without flags do not run.
    fn running_stale(&self) -> bool;
    /// The run's error reply is an error a command inside it returned or was refused with, counted
    /// in the error statistics then: the reply is not counted again (Redis's
    /// `ignore_error_stats_update`).
    fn error_counted(&mut self);
    /// The script starts: the client's state a script's commands change (database, protocol) is
    /// kept, and blocking commands answer at once (Redis).
    fn enter(&mut self);
    /// The script ended: the client's state is as before [`ScriptHost::enter`].
    fn leave(&mut self);
    /// A run that gave up before writing starts again holding every shard.
    fn relock_all(&mut self);
    /// The seed `math.random` starts each run from, when the run must draw the same numbers on
    /// every node that runs it (consensus mode); None: the generator goes on from where the VM's
    /// last run left it, as in Redis 7.0. Called after [`ScriptHost::enter`].
    fn random_seed(&self) -> Option<u64> {
        None
    }
}

/// What a host's [`ScriptHost::call`] may read of the running script.
pub struct ScriptCall<'a> {
    /// The EVAL/EVALSHA/FCALL running the script.
    pub command: &'a [Bytes],
    /// Write commands are refused.
    pub read_only: bool,
    /// The script's `allow-oom` flag.
    pub allow_oom: bool,
    /// The run's state (wrote, restart, protocol, undeclared keys).
    pub run: &'a RunState,
    /// The scripting the run belongs to (what it learns of undeclared keys).
    pub scripting: &'a Scripting,
}

/// What `redis.call` / `redis.pcall` act on while one script runs.
struct CallCtx<'a> {
    host: &'a mut dyn ScriptHost,
    script: ScriptCall<'a>,
}

/// The run a VM is executing, published to its `redis.call` / `redis.pcall` C functions (made once
/// per VM, see [`raw`]); they reach the running command's client and locked shards through this slot.
#[derive(Default)]
struct ActiveRun(AtomicPtr<()>);

impl ActiveRun {
    /// Runs `f` (which runs Lua code) with `ctx` published to the callbacks.
    fn publish<R>(&self, ctx: &mut CallCtx<'_>, f: impl FnOnce() -> R) -> R {
        struct Clear<'a>(&'a AtomicPtr<()>);
        impl Drop for Clear<'_> {
            fn drop(&mut self) {
                self.0.store(std::ptr::null_mut(), Ordering::Release);
            }
        }
        self.0.store((ctx as *mut CallCtx<'_>).cast(), Ordering::Release);
        let _clear = Clear(&self.0);
        f()
    }

    /// Calls `f` on the published context; None outside a run (or inside `f` itself).
    #[allow(unsafe_code)]
    fn with<R>(&self, f: impl FnOnce(&mut CallCtx<'_>) -> R) -> Option<R> {
        struct Restore<'a>(&'a AtomicPtr<()>, *mut ());
        impl Drop for Restore<'_> {
            fn drop(&mut self) {
                self.0.store(self.1, Ordering::Release);
            }
        }
        let p = self.0.swap(std::ptr::null_mut(), Ordering::Acquire);
        if p.is_null() {
            return None;
        }
        let _restore = Restore(&self.0, p);
        // SAFETY: a non-null pointer was stored by `publish` from a `&mut CallCtx` that `publish`
        // holds exclusively borrowed until its `Clear` guard nulls the slot, so the pointee is alive
        // and nothing else uses it while the slot is non-null. The callbacks that reach here run only
        // synchronously inside `publish`'s `f`, on the thread that holds this VM's lock (mlua's Lua
        // state is not used concurrently), so `publish` cannot return before `Restore` runs. The swap
        // to null makes this the only `&mut` at a time: a nested call sees null and gets `None`. The
        // lifetimes are erased: `f` is generic over them, so it cannot keep any reference it reaches
        // through `ctx` past this call, and `R` cannot borrow from it.
        let ctx = unsafe { &mut *p.cast::<CallCtx<'_>>() };
        Some(f(ctx))
    }
}

struct Vm {
    lua: Lua,
    /// The debugging session of a debugged run (`SCRIPT DEBUG SYNC`).
    ldb: ldb::Slot,
    /// The count hook's work: long runs handed off and logged, SCRIPT KILL, restarts.
    busy: Busy,
    /// While FUNCTION LOAD runs a library's code: when it is cut short (monotonic ms; 0 none).
    load_deadline: Arc<AtomicU64>,
    /// The time FUNCTION LOAD's deadline is set on.
    clock: Arc<dyn crate::clock::Clock>,
    /// The value an error raised from Rust carries to the scripts' error handler.
    raised: libs::Pending,
    /// The same state, for the per-run hot path ([`raw`]).
    raw: raw::RawState,
    /// What `redis.call` / `redis.pcall` reach while a run is active.
    host: Arc<raw::Host>,
    /// The error handler every run is called under (bootstrap.lua's `handler`).
    handler: RegistryKey,
    pg: Table,
    fg: Table,
    run_load: Function,
    set_load_mode: Function,
    /// Compiled EVAL scripts and their `FLAG_*` bits, by sha.
    scripts: HashMap<String, (RegistryKey, u32), foldhash::fast::RandomState>,
    /// Functions of the loaded libraries, by name.
    callbacks: HashMap<String, RegistryKey>,
    loading: Pending,
    /// `Scripting::script_gen` its `scripts` match.
    script_gen: u64,
    /// `Scripting::lib_gen` its `callbacks` match (`u64::MAX`: never loaded).
    lib_gen: u64,
    /// `math.random`'s generator, reseeded for a run whose host asks for it
    /// ([`ScriptHost::random_seed`]).
    rand: Arc<Mutex<Rand48>>,
    /// Runs since the heap was last checked against [`GC_SLACK_KB`].
    runs: u32,
    /// KiB the heap held after its last full collection.
    live_kb: std::ffi::c_int,
}

/// Runs of a VM between two looks at its heap (Redis's `LUA_GC_CYCLE_PERIOD`).
const GC_CHECK_EVERY: u32 = 50;

/// KiB of garbage a VM's heap may hold above what its last full collection left before the next
/// one. Left to itself, Lua 5.1's collector lets the heap reach twice its live size and overshoots
/// while its incremental cycle runs (Latch's VM, 51 KiB live, swung between 66 and 119 KiB under
/// EVALs). Redis runs a collector step worth 50 KiB every 50 calls (`luaCallFunction`), which keeps
/// `used_memory_lua` at the live size but cost 5% more instructions per EVALSHA of the lock
/// release here; a full collection only once this much garbage built up (the release leaves about
/// 200 bytes a run) bounds the heap under 100 KiB for 1% (docs/performance.md).
const GC_SLACK_KB: std::ffi::c_int = 32;

/// What the count hook runs every [`BUSY_CHECK_EVERY`] instructions.
type Busy = Arc<dyn Fn(&Lua) -> mlua::Result<VmState> + Send + Sync>;

/// Instructions between two runs of the count hook.
const BUSY_CHECK_EVERY: u32 = 100_000;

/// How long FUNCTION LOAD lets a library's code run (Redis's `LOAD_TIMEOUT_MS`).
const LOAD_TIMEOUT_MS: u64 = 500;

/// Redis's `redisLrand48`, the generator behind `math.random` (its state is never reseeded between
/// scripts in Redis 7.0). Each VM of the pool has its own state, so the sequence a client sees
/// depends on the VM that runs its scripts (Redis has a single one).
struct Rand48(u64);

impl Rand48 {
    fn next(&mut self) -> i32 {
        self.0 = (self.0.wrapping_mul(0x5DEECE66D).wrapping_add(0xB)) & 0xFFFF_FFFF_FFFF;
        (self.0 >> 17) as i32
    }
    fn seed(&mut self, s: i32) {
        self.0 = ((s as u32 as u64) << 16) | 0x330E;
    }
}

fn sha1hex(b: &[u8]) -> String {
    use sha1::Digest;
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let d = sha1::Sha1::digest(b);
    let mut s = String::with_capacity(40);
    for x in d.iter() {
        s.push(HEX[usize::from(x >> 4)] as char);
        s.push(HEX[usize::from(x & 15)] as char);
    }
    s
}

/// SHA1 of a script body, lowercase hex.
pub fn script_sha(body: &[u8]) -> String {
    sha1hex(body)
}

impl Vm {
    fn new(run: Arc<RunState>, table: &'static dyn Names, watch: SlowWatch) -> mlua::Result<Vm> {
        let lua = Lua::new_with(StdLib::TABLE | StdLib::STRING | StdLib::MATH, LuaOptions::default())?;
        let raised: libs::Pending = Arc::new(Mutex::new(None));
        let ldb_slot = ldb::Slot::default();
        let host = Arc::new(raw::Host::new(table, Arc::new(ldb::SlotLog(ldb_slot.clone()))));
        let err = raised.clone();
        let rt = lua.create_table()?;
        let p = raised.clone();
        rt.raw_set("take_raised", lua.create_function(move |_, ()| Ok(p.lock().take().unwrap_or(Value::Nil)))?)?;
        rt.raw_set("version", crate::version::REDIS_VERSION)?;
        let e1 = raised.clone();
        rt.raw_set("version_num", 0x07000f)?;
        rt.raw_set(
            "sha1hex",
            lua.create_function(move |lua, args: MultiValue| {
                if args.len() != 1 {
                    return Err(raise_err(lua, &e1, "wrong number of arguments"));
                }
                let v = &args[0];
                let b = match v {
                    Value::String(s) => s.as_bytes().to_vec(),
                    Value::Number(n) => lua_num_str(*n).into_bytes(),
                    Value::Integer(i) => i.to_string().into_bytes(),
                    _ => Vec::new(),
                };
                lua.create_string(sha1hex(&b))
            })?,
        )?;
        let r = run.clone();
        rt.raw_set("killed", lua.create_function(move |_, ()| Ok(r.killed.load(Ordering::Relaxed)))?)?;
        let r = run.clone();
        rt.raw_set("running", lua.create_function(move |_, ()| Ok(r.running.load(Ordering::Relaxed)))?)?;
        let (r, e) = (run.clone(), raised.clone());
        rt.raw_set(
            "setresp",
            lua.create_function(move |lua, args: MultiValue| {
                if !r.running.load(Ordering::Relaxed) {
                    return Err(raise_err(lua, &e, "redis.setresp can only be called inside a script invocation"));
                }
                if args.len() != 1 {
                    return Err(raise_err(lua, &e, "redis.setresp() requires one argument."));
                }
                let v = lua_tonumber(&args[0]).unwrap_or(0.0) as i64;
                if v != 2 && v != 3 {
                    return Err(raise_err(lua, &e, "RESP version must be 2 or 3."));
                }
                r.resp.store(v as u8, Ordering::Relaxed);
                Ok(())
            })?,
        )?;
        let (r, e) = (run.clone(), raised.clone());
        rt.raw_set(
            "set_repl",
            lua.create_function(move |lua, args: MultiValue| {
                if !r.running.load(Ordering::Relaxed) {
                    return Err(raise_err(lua, &e, "redis.set_repl can only be called inside a script invocation"));
                }
                if args.len() != 1 {
                    return Err(raise_err(lua, &e, "redis.set_repl() requires two arguments."));
                }
                let v = lua_tonumber(&args[0]).unwrap_or(0.0) as i64;
                if !(0..=3).contains(&v) {
                    return Err(raise_err(
                        lua,
                        &e,
                        "Invalid replication flags. Use REPL_AOF, REPL_REPLICA, REPL_ALL or REPL_NONE.",
                    ));
                }
                r.repl.store(v as u8, Ordering::Relaxed);
                Ok(())
            })?,
        )?;
        let e = raised.clone();
        rt.raw_set(
            "log",
            lua.create_function(move |lua, args: MultiValue| {
                if args.len() < 2 {
                    return Err(raise_err(lua, &e, "redis.log() requires two arguments or more."));
                }
                let Some(level) = lua_tonumber(&args[0]) else {
                    return Err(raise_err(lua, &e, "First argument must be a number (log level)."));
                };
                if !(0.0..4.0).contains(&level) {
                    return Err(raise_err(lua, &e, "Invalid debug level."));
                }
                Ok(())
            })?,
        )?;
        let (r, e, h) = (run.clone(), raised.clone(), host.clone());
        rt.raw_set(
            "acl_check_cmd",
            lua.create_function(move |lua, args: MultiValue| {
                if !r.running.load(Ordering::Relaxed) {
                    return Err(raise_err(
                        lua,
                        &e,
                        "redis.acl_check_cmd can only be called inside a script invocation",
                    ));
                }
                let argv = acl_check_args(&args).map_err(|m| raise_err(lua, &e, m))?;
                // The caller's user decides (Redis: the script's original client).
                match h.active.with(|c| c.host.acl_allows(&argv)) {
                    Some(Ok(allowed)) => Ok(allowed),
                    Some(Err(m)) => Err(raise_err(lua, &e, m)),
                    None => Ok(true),
                }
            })?,
        )?;
        let rng = Arc::new(Mutex::new(Rand48(0x1234_ABCD_330E)));
        let g = rng.clone();
        rt.raw_set(
            "random",
            lua.create_function(move |_, args: MultiValue| {
                const MAX: i64 = i32::MAX as i64;
                let r = (g.lock().next() as i64 % MAX) as f64 / MAX as f64;
                let arg = |i: usize| -> mlua::Result<i64> {
                    match args.get(i) {
                        Some(Value::Number(n)) => Ok(*n as i64),
                        Some(Value::Integer(n)) => Ok(*n),
                        Some(Value::String(s)) => s
                            .to_str()
                            .ok()
                            .and_then(|s| s.trim().parse::<f64>().ok())
                            .map(|f| f as i64)
                            .ok_or_else(|| {
                                mlua::Error::runtime(format!("bad argument #{} to 'random' (number expected)", i + 1))
                            }),
                        _ => {
                            Err(mlua::Error::runtime(format!("bad argument #{} to 'random' (number expected)", i + 1)))
                        }
                    }
                };
                match args.len() {
                    0 => Ok(r),
                    1 => {
                        let u = arg(0)?;
                        if u < 1 {
                            return Err(mlua::Error::runtime("bad argument #1 to 'random' (interval is empty)"));
                        }
                        Ok((r * u as f64).floor() + 1.0)
                    }
                    2 => {
                        let (l, u) = (arg(0)?, arg(1)?);
                        if l > u {
                            return Err(mlua::Error::runtime("bad argument #2 to 'random' (interval is empty)"));
                        }
                        Ok((r * (u - l + 1) as f64).floor() + l as f64)
                    }
                    _ => Err(mlua::Error::runtime("wrong number of arguments")),
                }
            })?,
        )?;
        let rand = rng.clone();
        let g = rng;
        rt.raw_set(
            "randomseed",
            lua.create_function(move |_, s: f64| {
                g.lock().seed(s as i64 as i32);
                Ok(())
            })?,
        )?;
        rt.raw_set("bit", libs::bit(&lua, &err)?)?;
        rt.raw_set("cjson", libs::cjson(&lua, &err)?)?;
        rt.raw_set("struct", lstruct::structlib(&lua, &err)?)?;
        rt.raw_set("cmsgpack", msgpack::cmsgpack(&lua, &err)?)?;
        let loading: Pending = Arc::new(Mutex::new(None));
        let p = loading.clone();
        let e = raised.clone();
        rt.raw_set(
            "register_function",
            lua.create_function(move |lua, args: MultiValue| {
                let fail = |m: &str| -> mlua::Result<MultiValue> { Err(raise_err(lua, &e, m)) };
                let mut guard = p.lock();
                let Some(list) = guard.as_mut() else {
                    return fail("redis.register_function can only be called on FUNCTION LOAD command");
                };
                match register_args(&args) {
                    Ok((meta, f)) => {
                        if let Err(m) = check_function_name(&meta.name) {
                            return fail(&m);
                        }
                        if list.iter().any(|(m, _)| m.name == meta.name) {
                            return fail("Function already exists in the library");
                        }
                        list.push((meta, f));
                        Ok(MultiValue::new())
                    }
                    Err(m) => fail(&m),
                }
            })?,
        )?;
        let globals = lua.globals();
        rt.raw_set(
            "getinfo",
            lua.create_function(|lua, level: usize| {
                Ok(lua
                    .inspect_stack(level, |d| {
                        let src = d.source();
                        (
                            src.what.to_string(),
                            src.source.map(|s| s.into_owned()),
                            d.current_line().map(|l| l as i64).unwrap_or(-1),
                        )
                    })
                    .map(|(w, s, l)| (Some(w), s, Some(l)))
                    .unwrap_or((None, None, None)))
            })?,
        )?;
        let slot = ldb_slot.clone();
        rt.raw_set(
            "debug",
            lua.create_function(move |lua, args: MultiValue| {
                ldb::debug_values(lua, &raw::LuaStack, &slot, args);
                Ok(())
            })?,
        )?;
        let slot = ldb_slot.clone();
        rt.raw_set("breakpoint", lua.create_function(move |_, ()| Ok(ldb::breakpoint(&slot)))?)?;
        let boot = lua.load(include_str!("bootstrap.lua")).set_name("@latch_internal").into_function()?;
        #[allow(clippy::type_complexity)]
        let (pg, fg, handler, run_load, set_load_mode, redis, protected, seal_functions_env, sandbox): (
            Table,
            Table,
            Function,
            Function,
            Function,
            Table,
            Table,
            Function,
            Table,
        ) = boot.call((rt.clone(), globals.clone()))?;
        let raw = raw::RawState::of(&lua)?;
        raw.install_call(lua.create_registry_value(redis)?.id(), &host);
        let globals_ref = lua.create_registry_value(globals)?;
        raw.install_iterators(globals_ref.id(), lua.create_registry_value(protected)?.id());
        let handler = lua.create_registry_value(handler)?;
        raw.install_loaders(globals_ref.id(), lua.create_registry_value(pg.clone())?.id(), handler.id());
        raw.install_metatable_access(globals_ref.id(), lua.create_registry_value(sandbox)?.id());
        seal_functions_env.call::<()>(())?;
        let r = run.clone();
        let load_deadline = Arc::new(AtomicU64::new(0));
        let (deadline, clock, vm_clock) = (load_deadline.clone(), watch.clock.clone(), watch.clock.clone());
        let load_raised = raised.clone();
        let busy: Busy = Arc::new(move |lua| {
            // FUNCTION LOAD's run of a library's code (Redis's luaEngineLoadHook).
            let d = deadline.load(Ordering::Relaxed);
            if d != 0 {
                if clock.now_ms() >= d {
                    return Err(raise_err(lua, &load_raised, "FUNCTION LOAD timeout"));
                }
                return Ok(VmState::Continue);
            }
            if !r.handed_off.swap(true, Ordering::Relaxed) {
                let f = r.long_op.lock().clone();
                if let Some(f) = f {
                    f();
                }
            }
            watch.check(&r);
            if r.killed.load(Ordering::Relaxed) {
                return Err(mlua::Error::runtime("Script killed by user with SCRIPT KILL..."));
            }
            if r.restart.load(Ordering::Relaxed) {
                return Err(mlua::Error::runtime("script restarting with every shard"));
            }
            Ok(VmState::Continue)
        });
        let b = busy.clone();
        lua.set_global_hook(HookTriggers::new().every_nth_instruction(BUSY_CHECK_EVERY), move |lua, _| b(lua))?;
        Ok(Vm {
            ldb: ldb_slot,
            busy,
            load_deadline,
            clock: vm_clock,
            raised: raised.clone(),
            raw,
            host,
            handler,
            pg,
            fg,
            run_load,
            set_load_mode,
            scripts: HashMap::default(),
            callbacks: HashMap::new(),
            loading,
            script_gen: 0,
            lib_gen: u64::MAX,
            rand,
            runs: 0,
            live_kb: 0,
            lua,
        })
    }
}

/// Redis 7.0 says "Library names" here too (its functionLibCreateFunction), and clients see that.
fn check_function_name(name: &str) -> Result<(), String> {
    if name.is_empty() || !name.bytes().all(|c| c.is_ascii_alphanumeric() || c == b'_') {
        return Err("Library names can only contain letters, numbers, or underscores(_) and must be at least one character long".into());
    }
    Ok(())
}

fn register_args(args: &MultiValue) -> Result<(FunctionMeta, Function), String> {
    match args.len() {
        1 => {
            let Some(Value::Table(t)) = args.front() else {
                return Err("calling redis.register_function with a single argument is only applicable to Lua table (representing named arguments).".into());
            };
            let (mut name, mut desc, mut cb, mut flags) = (None, None, None, 0u32);
            for pair in t.pairs::<Value, Value>() {
                let (k, v) = pair.map_err(|e| e.to_string())?;
                let key = match &k {
                    Value::String(s) => s.to_string_lossy(),
                    Value::Number(n) => lua_num_str(*n),
                    Value::Integer(i) => i.to_string(),
                    _ => return Err("named argument key given to redis.register_function is not a string".into()),
                };
                match key.to_ascii_lowercase().as_str() {
                    "function_name" => match v {
                        Value::String(s) => name = Some(s.to_string_lossy()),
                        Value::Number(n) => name = Some(lua_num_str(n)),
                        _ => {
                            return Err(
                                "function_name argument given to redis.register_function must be a string".into()
                            );
                        }
                    },
                    "description" => match v {
                        Value::String(s) => desc = Some(s.to_string_lossy()),
                        _ => {
                            return Err("description argument given to redis.register_function must be a string".into());
                        }
                    },
                    "callback" => match v {
                        Value::Function(f) => cb = Some(f),
                        _ => return Err("callback argument given to redis.register_function must be a function".into()),
                    },
                    "flags" => {
                        let Value::Table(ft) = v else {
                            return Err(
                                "flags argument to redis.register_function must be a table representing function flags"
                                    .into(),
                            );
                        };
                        for i in 1.. {
                            let f: Value = ft.raw_get(i).map_err(|e| e.to_string())?;
                            let s = match f {
                                Value::Nil => break,
                                Value::String(s) => s.to_string_lossy(),
                                _ => return Err("unknown flag given".into()),
                            };
                            match FLAG_NAMES.iter().find(|(_, n)| n.eq_ignore_ascii_case(&s)) {
                                Some((b, _)) => flags |= b,
                                None => return Err("unknown flag given".into()),
                            }
                        }
                    }
                    _ => return Err("unknown argument given to redis.register_function".into()),
                }
            }
            let Some(name) = name else {
                return Err("redis.register_function must get a function name argument".into());
            };
            let Some(cb) = cb else { return Err("redis.register_function must get a callback argument".into()) };
            Ok((FunctionMeta { name, desc, flags }, cb))
        }
        2 => {
            let name = match &args[0] {
                Value::String(s) => s.to_string_lossy(),
                Value::Number(n) => lua_num_str(*n),
                _ => return Err("first argument to redis.register_function must be a string".into()),
            };
            let Value::Function(f) = &args[1] else {
                return Err("second argument to redis.register_function must be a function".into());
            };
            Ok((FunctionMeta { name, desc: None, flags: 0 }, f.clone()))
        }
        _ => Err("wrong number of arguments to redis.register_function".into()),
    }
}

/// Lua's own number-to-string (`%.14g`).
fn lua_num_str(n: f64) -> String {
    let mut out = Vec::new();
    resp::format_double_g(n, 14, &mut out);
    String::from_utf8_lossy(&out).into_owned()
}

/// Parses a shebang line: returns (flags, length of the shebang line).
pub fn parse_shebang(body: &[u8]) -> Result<(u32, usize), String> {
    if !body.starts_with(b"#!") {
        return Ok((FLAG_COMPAT, 0));
    }
    let Some(end) = body.iter().position(|&c| c == b'\n') else {
        return Err("Invalid script shebang".into());
    };
    let parts = resp::split_args(&body[..end]).unwrap_or_default();
    if parts.is_empty() {
        return Err("Invalid engine in script shebang".into());
    }
    if &parts[0][..] != b"#!lua" {
        return Err(format!("Unexpected engine in script shebang: {}", String::from_utf8_lossy(&parts[0])));
    }
    let mut flags = 0;
    for p in &parts[1..] {
        if let Some(list) = p.strip_prefix(b"flags=") {
            if list.is_empty() {
                continue;
            }
            for f in list.split(|&c| c == b',') {
                match FLAG_NAMES.iter().find(|(_, n)| n.as_bytes() == f) {
                    Some((b, _)) => flags |= b,
                    None => return Err(format!("Unexpected flag in script shebang: {}", String::from_utf8_lossy(f))),
                }
            }
        } else {
            return Err(format!("Unknown lua shebang option: {}", String::from_utf8_lossy(p)));
        }
    }
    Ok((flags, end))
}

/// Whether a script with these `FLAG_*` bits may run (Redis's `scriptPrepareForRun`), called plainly
/// or through an `_RO` variant (`ro`), by a command that found memory over `maxmemory` as it started
/// (`oom`): `Ok(read_only)`, or the error refusing it.
pub fn eval_policy(flags: u32, ro: bool, need_replicas: bool, oom: bool) -> Result<bool, Frame> {
    let compat = flags & FLAG_COMPAT != 0;
    let may_write = !compat && flags & FLAG_NO_WRITES == 0;
    if may_write && ro {
        return Err(Frame::error("ERR Can not execute a script with write flag using *_ro command."));
    }
    if may_write && need_replicas {
        return Err(Frame::error(crate::error::NOREPLICAS));
    }
    if !compat && oom && flags & (FLAG_ALLOW_OOM | FLAG_NO_WRITES) == 0 {
        return Err(Frame::error(
            "OOM allow-oom flag is not set on the script, can not run it when used memory > 'maxmemory'",
        ));
    }
    Ok(ro || (!compat && flags & FLAG_NO_WRITES != 0))
}

/// Whether a script with these `FLAG_*` bits counts as a `denyoom` command, refused while memory is
/// over `maxmemory` (Redis's `scriptFlagsToCmdFlags`): one with a shebang that neither allows OOM
/// nor declares `no-writes`. Scripts without a shebang are checked per write command instead.
pub fn flags_deny_oom(flags: u32) -> bool {
    flags & FLAG_COMPAT == 0 && flags & (FLAG_ALLOW_OOM | FLAG_NO_WRITES) == 0
}

/// Whether a script with these `FLAG_*` bits may run deny-oom commands while memory is over the limit.
pub fn flags_allow_oom(flags: u32) -> bool {
    flags & FLAG_COMPAT == 0 && flags & FLAG_ALLOW_OOM != 0
}

/// Which kind of script runs.
pub enum Callable<'a> {
    /// EVAL / EVALSHA (`ro`: the `_RO` variants): the cached script with this sha (lowercase).
    Eval {
        /// The script's sha1, lowercase hex.
        sha: &'a str,
        /// Called through EVAL_RO / EVALSHA_RO.
        ro: bool,
    },
    /// FCALL: the function with this name.
    Function(&'a str),
}

/// Everything a run needs from the calling command.
pub struct RunArgs<'a> {
    /// The calling command as the script reaches it.
    pub host: &'a mut dyn ScriptHost,
    /// KEYS.
    pub keys: &'a [Bytes],
    /// ARGV.
    pub argv: &'a [Bytes],
    /// Refuse write commands.
    pub read_only: bool,
    /// The script declared `allow-oom`.
    pub allow_oom: bool,
    /// The calling command's arguments (FUNCTION STATS).
    pub command: &'a [Bytes],
    /// An EVAL run under the debugger (`SCRIPT DEBUG SYNC`): its link to the client.
    pub debug: Option<DebugLink>,
}

/// A VM of the pool, locked (created on first use).
type VmGuard<'a> = (parking_lot::MappedMutexGuard<'a, Vm>, &'a Arc<RunState>);

/// What `INFO memory` reports about scripting.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct MemoryInfo {
    /// Bytes held by the pool's idle Lua VMs (a VM that is running a script is skipped). Latch's VMs
    /// host both EVAL scripts and function libraries, so this is the total.
    pub vm_bytes: u64,
    /// Scripts in the EVAL cache.
    pub scripts: u64,
    /// Bytes of their bodies.
    pub script_bytes: u64,
    /// Registered functions.
    pub functions: u64,
    /// Loaded libraries.
    pub libraries: u64,
    /// Bytes of the libraries' code.
    pub library_bytes: u64,
}

impl Scripting {
    /// Whether this EVAL/EVALSHA/FCALL runs a script seen touching undeclared keys, so it must lock
    /// every shard (see `escalated`).
    pub fn needs_all_shards<R: Runner>(&self, cmd: &Command<R>, args: &[Bytes]) -> bool {
        let Some(id) = args.get(1).and_then(|what| script_id(cmd.name.as_bytes(), what)) else { return false };
        !self.is_verified(id) || (self.any_escalated.load(Ordering::Relaxed) && self.escalated.read().contains(&id))
    }

    fn is_verified(&self, id: u64) -> bool {
        self.verified[id as usize % VERIFIED_SLOTS].load(Ordering::Relaxed) == id
    }

    /// Records that the script `command` runs went through touching declared keys only.
    fn verify(&self, command: &[Bytes]) {
        let (Some(name), Some(what)) = (command.first(), command.get(1)) else { return };
        if let Some(id) = script_id(name, what) {
            self.verified[id as usize % VERIFIED_SLOTS].store(id, Ordering::Relaxed);
        }
    }

    /// Whether this EVAL/EVALSHA/FCALL (and `_RO`) call counts as `denyoom` by its script's flags
    /// (see [`flags_deny_oom`]); false for any other command, and for scripts not found (they fail
    /// on their own).
    pub fn denies_oom<R: Runner>(&self, cmd: &Command<R>, args: &[Bytes]) -> bool {
        self.script_flags(cmd, args).is_some_and(flags_deny_oom)
    }

    /// Whether `cmd` runs a script that declared its flags and may write (no `no-writes`): such a
    /// call is a write command (Redis's `scriptFlagsToCmdFlags`); a script without a shebang is
    /// checked at each write it makes instead.
    pub fn may_write<R: Runner>(&self, cmd: &Command<R>, args: &[Bytes]) -> bool {
        self.script_flags(cmd, args).is_some_and(|f| f & (FLAG_COMPAT | FLAG_NO_WRITES) == 0)
    }

    /// Whether `cmd` may run on a stale replica: its own `stale` flag, or for a script that declared
    /// its flags, `allow-stale` (Redis's `scriptFlagsToCmdFlags`).
    pub fn may_run_stale<R: Runner>(&self, cmd: &Command<R>, args: &[Bytes]) -> bool {
        match self.script_flags(cmd, args) {
            Some(f) if f & FLAG_COMPAT == 0 => f & FLAG_ALLOW_STALE != 0,
            _ => cmd.flags.has(crate::command::Flags::STALE),
        }
    }

    /// True for EVAL, EVALSHA, FCALL and their `_RO` variants: the commands whose flags their
    /// script's flags replace (Redis's `getCommandFlags`).
    pub fn is_script_call<R: Runner>(&self, cmd: &Command<R>) -> bool {
        matches!(cmd.name.strip_suffix("_ro").unwrap_or(cmd.name), "eval" | "evalsha" | "fcall")
    }

    /// Whether this EVAL/EVALSHA/FCALL (or `_RO`) call may write or replicate, as CLIENT PAUSE WRITE
    /// asks (Redis's `getCommandFlags` and `scriptFlagsToCmdFlags`): a script with flags (a
    /// shebang, or a function) may unless it declares `no-writes`; otherwise (no shebang, a script or
    /// function not found) the command's own flags say (`may_replicate` for EVAL, not for EVAL_RO).
    pub fn may_replicate<R: Runner>(&self, cmd: &Command<R>, args: &[Bytes]) -> bool {
        match self.script_flags(cmd, args) {
            Some(flags) if flags & FLAG_COMPAT == 0 => flags & FLAG_NO_WRITES == 0,
            _ => cmd.flags.has(crate::command::Flags::WRITE) || cmd.flags.has(crate::command::Flags::MAY_REPLICATE),
        }
    }

    /// The `FLAG_*` bits of the script an EVAL/EVALSHA/FCALL (or `_RO`) call runs: from EVAL's
    /// shebang, the cached script of EVALSHA, the registered function of FCALL; None for other
    /// commands and for scripts not found (they fail on their own).
    fn script_flags<R: Runner>(&self, cmd: &Command<R>, args: &[Bytes]) -> Option<u32> {
        let what = args.get(1)?;
        match cmd.name.strip_suffix("_ro").unwrap_or(cmd.name) {
            "eval" => parse_shebang(what).map(|(f, _)| f).ok(),
            "evalsha" => {
                let sha = String::from_utf8_lossy(what).to_ascii_lowercase();
                self.scripts.lock().get(&sha).map(|m| m.flags)
            }
            "fcall" => self.function_flags(&String::from_utf8_lossy(what)),
            _ => None,
        }
    }

    /// Records that the script `command` runs touched a key it did not declare.
    fn escalate(&self, command: &[Bytes]) {
        let (Some(name), Some(what)) = (command.first(), command.get(1)) else { return };
        if let Some(id) = script_id(name, what)
            && !self.escalated.read().contains(&id)
            && self.escalated.write().insert(id)
        {
            self.any_escalated.store(true, Ordering::Relaxed);
        }
    }
}

impl Scripting {
    /// Counts for `INFO memory`.
    pub fn memory_info(&self) -> MemoryInfo {
        let mut m = MemoryInfo::default();
        for slot in self.pool.iter() {
            if let Some(guard) = slot.vm.try_lock()
                && let Some(vm) = guard.as_ref()
            {
                m.vm_bytes += vm.lua.used_memory() as u64;
            }
        }
        {
            let scripts = self.scripts.lock();
            m.scripts = scripts.len() as u64;
            m.script_bytes = scripts.values().map(|s| s.body.len() as u64).sum();
        }
        {
            let libs = self.libraries.lock();
            m.libraries = libs.len() as u64;
            m.functions = libs.values().map(|l| l.functions.len() as u64).sum();
            m.library_bytes = libs.values().map(|l| l.code.len() as u64).sum();
        }
        m
    }
}

impl Scripting {
    /// Takes a free VM: every slot is tried without waiting, starting with the thread's home slot;
    /// when all are busy, waits on the home slot in short steps, calling `give_up` between them (an
    /// error reply from it ends the wait).
    fn acquire(&self, mut give_up: impl FnMut() -> Option<Frame>) -> Result<VmGuard<'_>, Frame> {
        let n = self.pool.len();
        let home = HOME.with(|h| {
            if h.get() == usize::MAX {
                h.set(NEXT_HOME.fetch_add(1, Ordering::Relaxed) % n);
            }
            h.get() % n
        });
        let (i, mut g) = 'found: {
            for k in 0..n {
                let i = (home + k) % n;
                if let Some(g) = self.pool[i].vm.try_lock() {
                    break 'found (i, g);
                }
            }
            loop {
                if let Some(g) = self.pool[home].vm.try_lock_for(std::time::Duration::from_millis(2)) {
                    break 'found (home, g);
                }
                if let Some(e) = give_up() {
                    return Err(e);
                }
            }
        };
        if i != home {
            HOME.with(|h| h.set(i));
        }
        let slot = &self.pool[i];
        if g.is_none() {
            match Vm::new(slot.run.clone(), self.table, self.watch.clone()) {
                Ok(vm) => *g = Some(vm),
                Err(e) => return Err(Frame::error(format!("ERR Lua initialisation failed: {e}"))),
            }
        }
        let mut vm = parking_lot::MutexGuard::map(g, |v| v.as_mut().expect("just created"));
        let gen_now = self.script_gen.load(Ordering::Acquire);
        if vm.script_gen != gen_now {
            vm.script_gen = gen_now;
            if !vm.scripts.is_empty() {
                vm.scripts.clear();
                vm.lua.expire_registry_values();
                let _ = vm.lua.gc_collect();
            }
        }
        Ok((vm, &slot.run))
    }

    /// Run states of the pool's VMs.
    pub fn states(&self) -> impl Iterator<Item = &RunState> {
        self.pool.iter().map(|s| &*s.run)
    }

    /// Some script is running on some VM.
    pub fn any_running(&self) -> bool {
        self.pool.iter().any(|s| s.run.running.load(Ordering::Relaxed))
    }

    /// Installs what a VM calls when its run gets long (`Server::set_long_op_hook`).
    pub fn set_long_op_hook(&self, f: Arc<dyn Fn() + Send + Sync>) {
        for s in self.pool.iter() {
            *s.run.long_op.lock() = Some(f.clone());
        }
    }

    /// Compiles and caches an EVAL script (no-op if cached). Returns its sha.
    pub fn create_script(&self, body: &Bytes) -> Result<String, Frame> {
        let sha = sha1hex(body);
        if self.scripts.lock().contains_key(&sha) {
            return Ok(sha);
        }
        let (flags, skip) = parse_shebang(body).map_err(|m| Frame::error(format!("ERR {m}")))?;
        let (mut vm, _) = self.acquire(|| None)?;
        vm.compile_script(&sha, &body[skip..], flags)?;
        self.scripts.lock().insert(sha.clone(), ScriptMeta { body: body.clone(), flags });
        Ok(sha)
    }

    /// Forgets every EVAL script (SCRIPT FLUSH). Like Redis, which starts a new Lua interpreter, the
    /// idle VMs are dropped (a new one is made on next use, reloading the function libraries), so the
    /// memory they held is freed now; a VM in use drops its compiled scripts at its next run.
    pub fn flush_scripts(&self) {
        let mut g = self.scripts.lock();
        g.clear();
        // What was learned about the flushed scripts' keys goes with them (it grows with EVAL
        // bodies, as the cache does).
        self.escalated.write().clear();
        self.script_gen.fetch_add(1, Ordering::AcqRel);
        drop(g);
        for slot in self.pool.iter() {
            if let Some(mut vm) = slot.vm.try_lock() {
                *vm = None;
            }
        }
    }

    /// Reloads every library into `vm` if they changed since it last loaded them.
    fn sync_libraries(&self, vm: &mut Vm) {
        let gen_now = self.lib_gen.load(Ordering::Acquire);
        if vm.lib_gen == gen_now {
            return;
        }
        let codes = self.library_codes();
        vm.callbacks.clear();
        vm.lua.expire_registry_values();
        for code in codes {
            let Ok((_, skip)) = parse_library_shebang(&code) else { continue };
            if let Ok(list) = vm.load_library(&code, skip) {
                for (meta, f) in list {
                    if let Ok(key) = vm.lua.create_registry_value(f) {
                        vm.callbacks.insert(meta.name, key);
                    }
                }
            }
        }
        vm.lib_gen = gen_now;
        // The old libraries are garbage now: collect them at once, as after SCRIPT FLUSH, rather than
        // let a VM whose libraries keep changing (FUNCTION LOAD REPLACE in a loop) grow until Lua's
        // collector catches up.
        let _ = vm.lua.gc_collect();
    }

    /// Runs a cached script or a function on a free VM of the pool. The caller holds the shards of the
    /// declared keys. When every VM is busy the wait is bounded like a shard wait (BUSY past the
    /// threshold).
    pub fn run(&self, what: Callable<'_>, mut a: RunArgs<'_>) -> Frame {
        let mut handed_off = false;
        let (mut vm, run) = match self.acquire(|| {
            if !handed_off {
                handed_off = true;
                a.host.long_op();
            }
            a.host.busy_error()
        }) {
            Ok(x) => x,
            Err(e) => return e,
        };
        let (func, name, eval) = match what {
            Callable::Eval { sha, ro } => {
                let (f, flags) = match vm.scripts.get(sha) {
                    Some((f, flags)) => (f.id(), *flags),
                    None => {
                        let Some((body, flags)) = self.scripts.lock().get(sha).map(|m| (m.body.clone(), m.flags))
                        else {
                            return Frame::error("NOSCRIPT No matching script. Please use EVAL.");
                        };
                        let skip = parse_shebang(&body).map(|(_, s)| s).unwrap_or(0);
                        match vm.compile_script(sha, &body[skip..], flags) {
                            Ok(id) => (id, flags),
                            Err(e) => return e,
                        }
                    }
                };
                // Redis's scriptPrepareForRun for scripts without a shebang on a stale replica.
                if flags & FLAG_COMPAT != 0 && a.host.running_stale() {
                    return Frame::error(crate::error::MASTERDOWN);
                }
                match eval_policy(flags, ro, a.host.writes_need_replicas(), a.host.oom()) {
                    Ok(read_only) => a.read_only = read_only,
                    Err(e) => return e,
                }
                a.allow_oom = flags_allow_oom(flags);
                (f, sha, true)
            }
            Callable::Function(n) => {
                self.sync_libraries(&mut vm);
                match vm.callbacks.get(n) {
                    Some(f) => (f.id(), n, false),
                    None => return Frame::error("ERR Function not found"),
                }
            }
        };
        let run_arc = run;
        let run = &**run;
        // The command's own start time, unless it had to wait for a VM.
        let start_ms = if handed_off { a.host.now_ms() } else { a.host.started_ms() };
        run.start_ms.store(start_ms, Ordering::Relaxed);
        run.eval.store(eval, Ordering::Relaxed);
        run.killed.store(false, Ordering::Relaxed);
        run.restart.store(false, Ordering::Relaxed);
        run.undeclared.store(false, Ordering::Relaxed);
        run.wrote.store(false, Ordering::Relaxed);
        run.resp.store(2, Ordering::Relaxed);
        run.repl.store(crate::changes::Effect::ALL, Ordering::Relaxed);
        run.handed_off.store(false, Ordering::Relaxed);
        run.slow_logged.store(false, Ordering::Relaxed);
        run.threshold_ms.store(a.host.busy_reply_threshold(), Ordering::Relaxed);
        if !eval {
            // FUNCTION STATS shows the running function (it answers BUSY during EVAL).
            *run.info.lock() = (name.to_string(), a.command.to_vec());
        }
        run.running.store(true, Ordering::SeqCst);
        let debugged = match a.debug.take() {
            Some(link) if eval => {
                self.start_debugging(&mut vm, run_arc, link, a.command.get(1).map_or(&[][..], |b| &b[..]));
                true
            }
            _ => false,
        };
        let mut reply = run_in_vm(self, &mut vm, run, func, name, eval, &mut a);
        // A run that had to give up before writing starts again holding every shard; later runs of
        // the script take them all up front (`escalate`), so this happens once per script.
        if run.restart.swap(false, Ordering::Relaxed) {
            a.host.relock_all();
            run.wrote.store(false, Ordering::Relaxed);
            run.resp.store(2, Ordering::Relaxed);
            run.repl.store(crate::changes::Effect::ALL, Ordering::Relaxed);
            reply = run_in_vm(self, &mut vm, run, func, name, eval, &mut a);
        }
        if debugged {
            self.end_debugging(&mut vm);
        }
        vm.runs += 1;
        if vm.runs == GC_CHECK_EVERY {
            vm.runs = 0;
            if vm.raw.heap_kb() >= vm.live_kb + GC_SLACK_KB {
                vm.raw.collect();
                vm.live_kb = vm.raw.heap_kb();
            }
        }
        if vm.host.error_counted.swap(false, Ordering::Relaxed) && reply.is_error() {
            a.host.error_counted();
        }
        if !run.undeclared.load(Ordering::Relaxed) && !reply.is_error() {
            self.verify(a.command);
        }
        run.running.store(false, Ordering::SeqCst);
        reply
    }

    /// Puts the VM under the debugger for one run of the script `body`: a session stopping at its
    /// first line, and a hook on every line (and on the count, for the time limit and SCRIPT KILL).
    fn start_debugging(&self, vm: &mut Vm, run: &Arc<RunState>, link: DebugLink, body: &[u8]) {
        *vm.ldb.lock() = Some(ldb::Session::new(link, body));
        vm.host.ldb_on.store(true, Ordering::Relaxed);
        let (slot, busy, r, clock) = (vm.ldb.clone(), vm.busy.clone(), run.clone(), self.watch.clock.clone());
        let raised = vm.raised.clone();
        let hooked = vm.lua.set_global_hook(
            HookTriggers::new().every_line().every_nth_instruction(BUSY_CHECK_EVERY),
            move |lua, d| {
                let count = matches!(d.event(), mlua::debug::DebugEvent::Count);
                if count {
                    busy(lua)?;
                }
                if !d.source().short_src.is_some_and(|s| s.contains("user_script")) {
                    return Ok(VmState::Continue);
                }
                let line = d.current_line().map_or(0, |l| l as i64);
                // Redis's limit for a run between two stops: busy-reply-threshold, else 5 s.
                let limit = match r.threshold_ms.load(Ordering::Relaxed) {
                    t if t > 0 => t as u64,
                    _ => 5000,
                };
                let timed_out = count && clock.now_ms().saturating_sub(r.start_ms.load(Ordering::Relaxed)) >= limit;
                if count && !timed_out {
                    return Ok(VmState::Continue);
                }
                if ldb::on_line(lua, &raw::LuaStack, &slot, line, timed_out).map_err(|e| raise_err(lua, &raised, e))? {
                    r.start_ms.store(clock.now_ms(), Ordering::Relaxed);
                }
                Ok(VmState::Continue)
            },
        );
        if hooked.is_err() {
            self.end_debugging(vm);
        }
    }

    /// Ends the VM's debugging session (`<endsession>` to the client) and puts back its count hook.
    fn end_debugging(&self, vm: &mut Vm) {
        vm.host.ldb_on.store(false, Ordering::Relaxed);
        if let Some(s) = vm.ldb.lock().take() {
            s.end();
        }
        let b = vm.busy.clone();
        let _ =
            vm.lua.set_global_hook(HookTriggers::new().every_nth_instruction(BUSY_CHECK_EVERY), move |lua, _| b(lua));
    }
}

/// Makes sure the script holds the shards `cmd` will touch. Declared keys are locked before the
/// script starts; others are taken here without waiting in line (a blocking wait out of shard order
/// could deadlock), retrying for a short while. Returns the key that could not be had.
pub fn ensure_shards<R: Runner>(
    ks: &crate::keyspace::Keyspace,
    script: &ScriptCall<'_>,
    locked: &mut Locked<'_>,
    cmd: &Command<R>,
    argv: &[Bytes],
) -> Result<(), Vec<u8>> {
    let (run, command) = (script.run, script.command);
    if locked.is_all() {
        // Holding every shard, nothing to take; note whether a partial run would have had to.
        // (A script declaring no key runs with every shard by design: nothing to note.)
        let n = command.get(2).and_then(|b| std::str::from_utf8(b).ok()?.parse::<usize>().ok()).unwrap_or(0);
        if n > 0 && !run.undeclared.load(Ordering::Relaxed) {
            let declared = |shard: usize| command.iter().skip(3).take(n).any(|k| ks.shard_of(k) == shard);
            let undeclared = if cmd.needs_all_shards(argv) {
                true
            } else {
                cmd.keys.positions(argv).into_iter().any(|i| !declared(ks.shard_of(&argv[i])))
            };
            if undeclared {
                run.undeclared.store(true, Ordering::Relaxed);
                script.scripting.escalate(command);
            }
        }
        return Ok(());
    }
    let mut deadline = None; // read the clock only once a shard is contended
    let mut take = |shard: usize, key: &[u8]| -> Result<(), Vec<u8>> {
        if locked.holds(shard) {
            return Ok(());
        }
        // A key the script did not declare: its later runs lock every shard up front.
        if !run.undeclared.swap(true, Ordering::Relaxed) {
            script.scripting.escalate(command);
        }
        // Above every shard held: wait for it, in the order all lockers follow. Below one: only a
        // bounded spin is safe (its holder may be waiting, in order, for a shard this run holds).
        if locked.try_add(shard) || locked.add_in_order(shard) {
            return Ok(());
        }
        while !locked.try_add(shard) {
            let now = std::time::Instant::now();
            if now >= *deadline.get_or_insert(now + std::time::Duration::from_millis(50)) {
                return Err(key.to_vec());
            }
            std::thread::yield_now();
        }
        Ok(())
    };
    if cmd.needs_all_shards(argv) {
        (0..ks.nshards()).try_for_each(|i| take(i, b"*"))
    } else {
        cmd.keys.positions(argv).into_iter().try_for_each(|i| take(ks.shard_of(&argv[i]), &argv[i]))
    }
}

/// Runs the function in registry slot `func` with the caller's context published to `redis.call`.
fn run_in_vm(
    scripting: &Scripting,
    vm: &mut Vm,
    run: &RunState,
    func: std::ffi::c_int,
    name: &str,
    eval: bool,
    a: &mut RunArgs<'_>,
) -> Frame {
    let (keys, argv) = (a.keys, a.argv);
    let script = ScriptCall { command: a.command, read_only: a.read_only, allow_oom: a.allow_oom, run, scripting };
    a.host.enter();
    if let Some(seed) = a.host.random_seed() {
        // Redis's generator takes 32 bits of seed: all of the 64 bits go into them (splitmix64's
        // finalizer), so that seeds differing only in their high bits start different sequences.
        let mut z = seed.wrapping_add(0x9E37_79B9_7F4A_7C15);
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        vm.rand.lock().seed((z ^ (z >> 31)) as i32);
    }
    let mut cctx = CallCtx { host: &mut *a.host, script };
    let (raw, host, handler) = (&vm.raw, &vm.host, vm.handler.id());
    let reply = host.active.publish(&mut cctx, || {
        raw.call(host, handler, func, keys, argv, eval, || run.resp.load(Ordering::Relaxed) == 3, name)
    });
    a.host.leave();
    reply
}

/// The message of an mlua error without mlua's decorations.
fn lua_error_text(e: &mlua::Error) -> String {
    match e {
        mlua::Error::SyntaxError { message, .. } => message.clone(),
        mlua::Error::RuntimeError(m) => m.clone(),
        mlua::Error::CallbackError { cause, .. } => lua_error_text(cause),
        other => other.to_string(),
    }
}

/// An `{err="ERR msg"}` table (Redis's `luaPushError`).
fn err_table(lua: &Lua, msg: &str) -> mlua::Result<Table> {
    let t = lua.create_table()?;
    t.raw_set("err", lua.create_string(format!("ERR {}", msg.trim_matches(['\r', '\n'])))?)?;
    Ok(t)
}

/// Raises an `{err="ERR msg"}` table.
fn raise_err(lua: &Lua, p: &libs::Pending, msg: &str) -> mlua::Error {
    match err_table(lua, msg) {
        Ok(t) => libs::raise_value(p, Value::Table(t)),
        Err(e) => e,
    }
}

/// The arguments of `redis.acl_check_cmd(cmd, ...)` (Redis's
/// `luaRedisAclCheckCmdPermissionsCommand`) as a command's, for the host's check.
fn acl_check_args(args: &MultiValue) -> Result<Vec<Bytes>, &'static str> {
    let mut argv = Vec::with_capacity(args.len());
    for a in args.iter() {
        match a {
            Value::String(s) => argv.push(Bytes::copy_from_slice(&s.as_bytes())),
            Value::Integer(_) | Value::Number(_) => {
                let mut o = Vec::new();
                resp::format_double(lua_tonumber(a).unwrap_or(0.0), &mut o);
                argv.push(Bytes::from(o));
            }
            _ => return Err("Lua redis lib command arguments must be strings or integers"),
        }
    }
    if argv.is_empty() {
        return Err("Please specify at least one argument for this redis lib call");
    }
    Ok(argv)
}

/// Lua's `lua_tonumber`: numbers and numeric strings.
fn lua_tonumber(v: &Value) -> Option<f64> {
    match v {
        Value::Number(n) => Some(*n),
        Value::Integer(i) => Some(*i as f64),
        Value::String(s) => s.to_str().ok()?.trim().parse().ok(),
        _ => None,
    }
}

/// Parses a library's shebang (`#!lua name=mylib`): returns (name, shebang length).
pub fn parse_library_shebang(code: &[u8]) -> Result<(String, usize), String> {
    if !code.starts_with(b"#!") {
        return Err("Missing library metadata".into());
    }
    let Some(end) = code.iter().position(|&c| c == b'\n') else {
        return Err("Invalid library metadata".into());
    };
    let parts = resp::split_args(&code[..end]).unwrap_or_default();
    if parts.is_empty() {
        return Err("Invalid library metadata".into());
    }
    let mut name = None;
    for p in &parts[1..] {
        if p.len() >= 5 && p[..5].eq_ignore_ascii_case(b"name=") {
            if name.is_some() {
                return Err("Invalid metadata value, name argument was given multiple times".into());
            }
            name = Some(String::from_utf8_lossy(&p[5..]).into_owned());
            continue;
        }
        return Err(format!("Invalid metadata value given: {}", String::from_utf8_lossy(p)));
    }
    let Some(name) = name else { return Err("Library name was not given".into()) };
    if name.is_empty() || !name.bytes().all(|c| c.is_ascii_alphanumeric() || c == b'_') {
        return Err("Library names can only contain letters, numbers, or underscores(_) and must be at least one character long".into());
    }
    // Engine names are matched case-insensitively (Redis's engine dictionary compares so).
    if !parts[0][2..].eq_ignore_ascii_case(b"lua") {
        return Err(format!("Engine '{}' not found", String::from_utf8_lossy(&parts[0][2..])));
    }
    Ok((name, end))
}

impl Vm {
    /// Compiles an EVAL script's code (after its shebang) in the sandbox and caches it with its
    /// flags under `sha`; returns its registry slot.
    fn compile_script(&mut self, sha: &str, code: &[u8], flags: u32) -> Result<std::ffi::c_int, Frame> {
        let f = chunk::compile(&self.lua, code, "@user_script", self.pg.clone())
            .map_err(|e| Frame::error(format!("ERR Error compiling script (new function): {e}")))?;
        match self.lua.create_registry_value(f) {
            Ok(key) => {
                let id = key.id();
                self.scripts.insert(sha.to_string(), (key, flags));
                Ok(id)
            }
            Err(e) => Err(Frame::error(format!("ERR Error compiling script (new function): {}", lua_error_text(&e)))),
        }
    }

    /// Runs a library's code (after its shebang, at `skip`) in load mode, collecting the functions it
    /// registers.
    fn load_library(&mut self, code: &[u8], skip: usize) -> Result<Vec<(FunctionMeta, Function)>, String> {
        let f = chunk::compile(&self.lua, &code[skip..], "@user_function", self.fg.clone())
            .map_err(|e| format!("Error compiling function: {e}"))?;
        *self.loading.lock() = Some(Vec::new());
        let _ = self.set_load_mode.call::<()>(true);
        self.load_deadline.store(self.clock.now_ms() + LOAD_TIMEOUT_MS, Ordering::Relaxed);
        let r: mlua::Result<(bool, Value)> = self.run_load.call((f,));
        self.load_deadline.store(0, Ordering::Relaxed);
        let _ = self.set_load_mode.call::<()>(false);
        let list = self.loading.lock().take().unwrap_or_default();
        match r {
            Ok((true, _)) => Ok(list),
            Ok((false, Value::Table(t))) => {
                let m = t.raw_get::<Value>("err").ok();
                let m = match m {
                    Some(Value::String(s)) => s.to_string_lossy(),
                    _ => String::new(),
                };
                Err(format!("Error registering functions: {m}"))
            }
            Ok((false, _)) => Err("Error registering functions: ".into()),
            Err(e) => Err(format!("Error registering functions: {}", lua_error_text(&e))),
        }
    }
}

impl Scripting {
    /// Compiles and runs a library's code in one VM of the pool, collecting its functions (FUNCTION
    /// LOAD validation). Does not install it.
    pub fn compile_library(&self, code: &Bytes) -> Result<Library, String> {
        let (name, skip) = parse_library_shebang(code)?;
        let r = {
            let (mut vm, _) = self.acquire(|| None).map_err(|f| match f {
                Frame::Error(e) => String::from_utf8_lossy(&e).into_owned(),
                _ => String::new(),
            })?;
            // The compiled functions die with the VM lock held (they belong to that VM).
            vm.load_library(code, skip)?.into_iter().map(|(meta, _)| meta).collect::<Vec<_>>()
        };
        if r.is_empty() {
            return Err("No functions registered".into());
        }
        let mut lib = Library { name, code: code.clone(), functions: BTreeMap::new() };
        for meta in r {
            lib.functions.insert(meta.name.clone(), meta);
        }
        Ok(lib)
    }

    /// Installs compiled libraries, replacing those of the same name. Checks function name clashes
    /// with other libraries first. VMs load them at their next FCALL.
    pub fn install_libraries(&self, libs: Vec<Library>, replace: bool) -> Result<(), String> {
        let mut libraries = self.libraries.lock();
        let mut functions = self.functions.lock();
        for lib in &libs {
            if libraries.contains_key(&lib.name) && !replace {
                return Err(format!("Library '{}' already exists", lib.name));
            }
            for f in lib.functions.keys() {
                if let Some(owner) = functions.get(&f.to_ascii_lowercase())
                    && owner != &lib.name
                {
                    return Err(format!("Function {f} already exists"));
                }
            }
        }
        for lib in libs {
            if let Some(old) = libraries.remove(&lib.name) {
                for f in old.functions.keys() {
                    functions.remove(&f.to_ascii_lowercase());
                }
            }
            for f in lib.functions.keys() {
                functions.insert(f.to_ascii_lowercase(), lib.name.clone());
            }
            libraries.insert(lib.name.clone(), lib);
        }
        self.lib_gen.fetch_add(1, Ordering::AcqRel);
        Ok(())
    }

    /// Deletes a library; false if absent.
    pub fn delete_library(&self, name: &str) -> bool {
        let mut libraries = self.libraries.lock();
        let Some(old) = libraries.remove(name) else { return false };
        let mut functions = self.functions.lock();
        for f in old.functions.keys() {
            functions.remove(&f.to_ascii_lowercase());
        }
        self.lib_gen.fetch_add(1, Ordering::AcqRel);
        true
    }

    /// Every library's code, in name order (an RDB file's function records carry them so).
    pub fn library_codes(&self) -> Vec<Bytes> {
        self.libraries.lock().values().map(|l| l.code.clone()).collect()
    }

    /// Deletes every library.
    pub fn flush_functions(&self) {
        let mut libraries = self.libraries.lock();
        libraries.clear();
        self.functions.lock().clear();
        self.lib_gen.fetch_add(1, Ordering::AcqRel);
    }

    /// Flags of a function and its library name.
    pub fn function_flags(&self, name: &str) -> Option<u32> {
        self.function(name).map(|(_, flags)| flags)
    }

    /// A function by name, whatever its case: its registered name and flags.
    pub fn function(&self, name: &str) -> Option<(String, u32)> {
        let lib = self.functions.lock().get(&name.to_ascii_lowercase())?.clone();
        let libraries = self.libraries.lock();
        let f = libraries.get(&lib)?.functions.values().find(|f| f.name.eq_ignore_ascii_case(name))?;
        Some((f.name.clone(), f.flags))
    }
}

#[cfg(test)]
mod pool_tests {
    use crate::testkit::TestServer;

    /// FUNCTION LOAD stops a library whose code runs past 500 ms (Redis's "LIBRARIES - load
    /// timeout"), measured on the server's clock, and the VM serves the next load; a function
    /// name Redis refuses gets Redis 7.0's text, which says "Library names".
    #[test]
    fn function_load_times_out_and_names_are_checked() {
        let ts = TestServer::new();
        let mut c = ts.client();
        let clock = ts.clock.clone();
        let ticker = std::thread::spawn(move || {
            std::thread::sleep(std::time::Duration::from_millis(50));
            clock.advance_ms(499);
            std::thread::sleep(std::time::Duration::from_millis(50));
            clock.advance_ms(1);
        });
        let started = std::time::Instant::now();
        let r = c.run("FUNCTION LOAD \"#!lua name=lib\nlocal a = 1 while 1 do a = a + 1 end\"");
        assert_eq!(r, "-ERR Error registering functions: ERR FUNCTION LOAD timeout");
        assert!(started.elapsed() >= std::time::Duration::from_millis(100), "not before 500 ms of the clock");
        ticker.join().unwrap();
        let r = c.run("FUNCTION LOAD \"#!lua name=lib2\nredis.register_function('', function() return 1 end)\"");
        assert_eq!(
            r,
            "-ERR Error registering functions: ERR Library names can only contain letters, numbers, or \
             underscores(_) and must be at least one character long"
        );
        assert_eq!(
            c.run("FUNCTION LOAD \"#!lua name=ok\nredis.register_function('f', function() return 1 end)\""),
            "\"ok\""
        );
        assert_eq!(c.run("FCALL f 0"), ":1");
    }

    #[test]
    fn a_busy_vm_does_not_block_other_scripts() {
        let ts = TestServer::new();
        let mut c = ts.client();
        assert_eq!(c.run("EVAL \"return 1\" 0"), ":1");
        assert_eq!(
            c.run("FUNCTION LOAD \"#!lua name=l\\nredis.register_function('f', function() return 2 end)\""),
            "\"l\""
        );
        // Hold every VM but one (as long scripts would): scripts still run, compiling lazily.
        let sc = &ts.srv.scripting;
        let held: Vec<_> =
            (1..sc.pool.len()).map(|_| sc.acquire(|| None).unwrap_or_else(|_| panic!("free VM"))).collect();
        assert_eq!(c.run("EVAL \"return 1\" 0"), ":1");
        assert_eq!(c.run("FCALL f 0"), ":2");
        assert_eq!(c.run("FUNCTION DELETE l"), "+OK");
        assert_eq!(c.run("FCALL f 0"), "-ERR Function not found");
        drop(held);
        assert!(sc.pool.len() >= 2);
    }

    #[test]
    fn only_a_long_run_is_handed_off() {
        // The count hook fires every 100k instructions of one run: 10k short scripts on one VM
        // (about 25 instructions each, 250k in all) never look long, one looping past 100k does.
        let ts = TestServer::new();
        let calls = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let seen = calls.clone();
        ts.srv.set_long_op_hook(std::sync::Arc::new(move || {
            seen.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        }));
        let mut c = ts.client();
        for _ in 0..10_000 {
            assert_eq!(c.run("EVAL \"local n = 0 for i = 1, 10 do n = n + 1 end return n\" 0"), ":10");
        }
        assert_eq!(calls.load(std::sync::atomic::Ordering::Relaxed), 0);
        assert_eq!(c.run("EVAL \"local n = 0 for i = 1, 200000 do n = n + 1 end return n\" 0"), ":200000");
        assert_eq!(calls.load(std::sync::atomic::Ordering::Relaxed), 1);
    }
}

#[cfg(test)]
mod script_id_tests {
    use super::script_id;
    use xxhash_rust::xxh3::xxh3_64;

    /// A script's id is the hash of its body (a sha lowercased) then its kind, whatever the
    /// command's case or `_RO` form, and whichever way the body is hashed (short ones from the
    /// stack, long ones streamed); other commands have none.
    #[test]
    fn a_script_has_one_id_whatever_the_spelling() {
        let sha = b"B70C2384248F88E6B75B9F89241A180F856AD852";
        let lower = sha.to_ascii_lowercase();
        let want = xxh3_64(&[&lower[..], b"evalsha"].concat());
        for name in [&b"evalsha"[..], b"EVALSHA", b"EvalSha_RO", b"evalsha_ro"] {
            assert_eq!(script_id(name, sha), Some(want));
            assert_eq!(script_id(name, &lower), Some(want));
        }
        for len in [0, 1, 88, 89, 90, 96, 97, 500] {
            let body = vec![b'X'; len];
            assert_eq!(script_id(b"EVAL_ro", &body), Some(xxh3_64(&[&body[..], b"eval"].concat())), "{len}");
            let sha = vec![b'A'; len];
            let want = xxh3_64(&[&sha.to_ascii_lowercase()[..], b"evalsha"].concat());
            assert_eq!(script_id(b"evalsha", &sha), Some(want), "{len}");
        }
        assert_eq!(script_id(b"fcall", b"f"), Some(xxh3_64(b"ffcall")));
        assert_ne!(script_id(b"eval", b"x"), script_id(b"fcall", b"x"));
        for other in [&b"get"[..], b"evalsha2", b"eva", b"script"] {
            assert_eq!(script_id(other, sha), None);
        }
    }
}
