//! The per-run hot path on Lua's C API: calling a script or function, building KEYS / ARGV,
//! `redis.call` / `redis.pcall`, and the Lua <-> RESP conversions; also `next`, `pairs` and `rawget`
//! that see through the sandbox's read-only proxies.
//!
//! Through mlua every value crossing the boundary is an owned handle (a slot on an auxiliary thread,
//! released on drop) and every call takes mlua's lock and a protected frame: about half of an
//! EVALSHA's cost. Here values stay on the Lua stack, as in Redis's own `eval.c`.
//!
//! # Soundness
//! Everything unsafe in Latch's engine is in this module and `ActiveRun::with`. The arguments:
//!
//! 1. **Exclusive use of the state.** A [`RawState`] is a field of its VM, and a VM is only used
//!    by the thread holding its pool slot's lock ([`super::Scripting::acquire`]), with no mlua call
//!    in progress on it while this module drives it. So no two threads ever touch one `lua_State`,
//!    which is what mlua's own `Send` rests on too. mlua callbacks reached from inside a run (cjson,
//!    `redis.sha1hex`...) are called by Lua on this same thread.
//! 2. **No longjmp over Rust frames that own anything.** Lua reports errors with `longjmp`, which
//!    must not cross a Rust frame holding values with destructors. The API calls used outside a
//!    protected call can raise only (a) memory errors and (b) errors from `__gc` metamethods run by
//!    a collection step. (a) cannot happen: mlua's allocator aborts the process instead of returning
//!    NULL when no memory limit is set, and Latch never sets one. (b) cannot happen: only userdata
//!    have `__gc` in Lua 5.1, scripts cannot make userdata (the sandbox has no `newproxy`), and the
//!    only userdata in a VM are mlua's callback handles, whose `__gc` only drops Rust closures.
//!    `lua_next` can also raise for a key it cannot place; it is only called in traversals that
//!    start from nil and go on from the keys it returned ([`reused_is_clean`]), which it places.
//!    The deliberate longjmps: `lua_error` in the `redis.call` C function, after every owned value
//!    of that call was dropped (see [`redis_call`]), and the argument errors of the `next`, `pairs`
//!    and `rawget` C functions ([`seen_next`]), whose frames own nothing.
//! 3. **Stack space.** Every push is covered by a `lua_checkstack` on the same path.
//! 4. **Panics never unwind into Lua's C frames.** The Rust part of `redis.call` runs under
//!    `catch_unwind`; a panic is parked in [`Host`], turned into a Lua error, and resumed by the
//!    runner once Lua has returned.
//! 5. **Pointers.** String pointers from `lua_tolstring` are read while the value is on the stack.
//!    The light userdata upvalue of the C functions points to the VM's [`Host`], which lives in an
//!    `Arc` owned by the VM, and so outlives the Lua state that can call them.

#![allow(unsafe_code)]

use super::{ActiveRun, Names, Outcome, lstruct, lua_num_str};
use bytes::Bytes;
use mlua::ffi;
use resp::Frame;
use std::any::Any;
use std::ffi::c_int;
use std::ptr::NonNull;
use std::sync::Arc;

/// The field of an error table from `redis.call` whose error was already counted.
const IGNORE_STATS: &[u8] = b"ignore_error_stats_update";

/// Deepest Lua table nesting converted to a reply (Redis: "reached lua stack limit").
const MAX_DEPTH: usize = 2000;

/// Most entries a reused KEYS or ARGV table takes (a longer list gets a table of its own).
const REUSED_MAX: usize = 32;

/// KiB a VM's heap may grow during one EVAL run with its KEYS and ARGV tables kept for the next.
/// Past it they are let go: the script may have grown their array parts, which nothing in Lua's
/// API reports, and a reused table would hold that memory for the VM's lifetime.
const REUSED_GROWTH_KB: c_int = 16;

/// The main `lua_State` of one VM.
pub(super) struct RawState {
    state: NonNull<ffi::lua_State>,
    /// Registry slots of the strings "KEYS" and "ARGV", the globals an EVAL run sees its tables as.
    names: [c_int; 2],
    /// Registry slots of the tables an EVAL run sees as KEYS and ARGV, filled anew on every run
    /// instead of allocated: the two tables were four fifths of the garbage an EVALSHA of the lock
    /// release left (docs/performance.md, "KEYS and ARGV without garbage").
    reused: [c_int; 2],
    /// How many entries (1..=n) the last run wrote into each of `reused`.
    reused_len: std::cell::Cell<[usize; 2]>,
    /// Whether the globals KEYS and ARGV are the tables of `reused`. They stay set between runs:
    /// only EVAL scripts read these globals, and every run fills them first (functions see a copy
    /// of the globals taken before the first run).
    reused_set: std::cell::Cell<[bool; 2]>,
}

// SAFETY: see the module docs, point 1: the state is only used by the thread that holds its VM's
// lock, so moving the handle between threads along with that lock is fine.
unsafe impl Send for RawState {}

/// What the `redis.call` / `redis.pcall` C functions reach through their upvalue.
pub(super) struct Host {
    /// The run being executed.
    pub active: ActiveRun,
    /// A panic caught inside `redis.call`, resumed when the script returns.
    pub panic: parking_lot::Mutex<Option<Box<dyn Any + Send>>>,
    /// The command table as defined (before `rename-command`), whose static names argv[0] reuses.
    pub names: &'static dyn Names,
    /// The debugger's log of the calls a debugged run makes (`SCRIPT DEBUG SYNC`).
    pub ldb: Arc<dyn super::ldb::CallLog>,
    /// Whether the run is debugged (read on every `redis.call`).
    pub ldb_on: std::sync::atomic::AtomicBool,
    /// The run's error reply was counted already, where the command inside failed.
    pub error_counted: std::sync::atomic::AtomicBool,
    /// The commands `redis.call` found by [`Names::plain`] last, as id + 1 (0: none), most recent
    /// first: a script's calls name a few commands over and over, and comparing a name with the
    /// static name of a command found before is cheaper than the table's case-folding lookup.
    recent: [std::sync::atomic::AtomicU16; RECENT],
}

/// How many commands [`Host::plain`] remembers.
const RECENT: usize = 4;

impl Host {
    /// A host for a VM of a server whose commands are `names` (before renames), whose debugged
    /// runs log their calls to `ldb`.
    pub fn new(names: &'static dyn Names, ldb: Arc<dyn super::ldb::CallLog>) -> Host {
        Host {
            active: ActiveRun::default(),
            panic: Default::default(),
            names,
            ldb,
            ldb_on: Default::default(),
            error_counted: Default::default(),
            recent: Default::default(),
        }
    }

    /// [`Names::plain`], answered from the commands found last where one of them is `name`.
    fn plain(&self, name: &[u8]) -> Option<(u16, &'static str)> {
        use std::sync::atomic::Ordering::Relaxed;
        for slot in &self.recent {
            let v = slot.load(Relaxed);
            if v == 0 {
                break;
            }
            let known = self.names.name_of(v - 1);
            if known.as_bytes() == name {
                return Some((v - 1, known));
            }
        }
        let (id, known) = self.names.plain(name)?;
        for i in (1..RECENT).rev() {
            self.recent[i].store(self.recent[i - 1].load(Relaxed), Relaxed);
        }
        self.recent[0].store(id + 1, Relaxed);
        Some((id, known))
    }
}

impl RawState {
    /// The main state of `lua` (read once, while creating the VM).
    pub fn of(lua: &mlua::Lua) -> mlua::Result<RawState> {
        let mut p: *mut ffi::lua_State = std::ptr::null_mut();
        let (mut names, mut reused) = ([0; 2], [0; 2]);
        // SAFETY: the closure runs protected (inside mlua's pcall) on `state`, which has the
        // LUA_MINSTACK free slots of a C function; it copies the pointer and anchors two strings
        // and two tables.
        unsafe {
            lua.exec_raw::<()>((), |state| {
                p = state;
                for (slot, name) in names.iter_mut().zip([&b"KEYS"[..], b"ARGV"]) {
                    push_bytes(state, name);
                    *slot = ffi::luaL_ref(state, ffi::LUA_REGISTRYINDEX);
                }
                for slot in &mut reused {
                    ffi::lua_createtable(state, 0, 0);
                    *slot = ffi::luaL_ref(state, ffi::LUA_REGISTRYINDEX);
                }
            })?
        };
        let state = NonNull::new(p).ok_or_else(|| mlua::Error::runtime("no Lua state"))?;
        Ok(RawState { state, names, reused, reused_len: Default::default(), reused_set: Default::default() })
    }

    fn l(&self) -> *mut ffi::lua_State {
        self.state.as_ptr()
    }

    /// Sets `redis.call` and `redis.pcall` in the table held by registry slot `redis_ref`.
    pub fn install_call(&self, redis_ref: c_int, host: &Arc<Host>) {
        let l = self.l();
        // SAFETY: points 1-3 of the module docs; `host` outlives the state (point 5).
        unsafe {
            ffi::lua_checkstack(l, 4);
            ffi::lua_rawgeti_(l, ffi::LUA_REGISTRYINDEX, redis_ref);
            for (name, f) in [
                ("call", redis_call::<true> as ffi::lua_CFunction),
                ("pcall", redis_call::<false> as ffi::lua_CFunction),
            ] {
                push_bytes(l, name.as_bytes());
                ffi::lua_pushlightuserdata(l, Arc::as_ptr(host) as *mut std::ffi::c_void);
                ffi::lua_pushcclosure(l, f, 1);
                ffi::lua_rawset(l, -3);
            }
            ffi::lua_settop(l, -2);
        }
    }

    /// Replaces the globals `next`, `pairs` and `rawget` (read through the real globals table, held
    /// by registry slot `globals_ref`) with versions that look through the sandbox's read-only
    /// proxies: `protected_ref` is bootstrap.lua's weak map from each proxy to the table it guards.
    /// Redis marks the real tables read-only instead, so `pairs(_G)` or `next(redis)` list their
    /// contents there; on an empty proxy they would list nothing.
    pub fn install_iterators(&self, globals_ref: c_int, protected_ref: c_int) {
        let l = self.l();
        // SAFETY: points 1-3 of the module docs (five slots reserved, all pushes counted).
        unsafe {
            ffi::lua_checkstack(l, 5);
            ffi::lua_rawgeti_(l, ffi::LUA_REGISTRYINDEX, globals_ref);
            ffi::lua_rawgeti_(l, ffi::LUA_REGISTRYINDEX, protected_ref);
            push_bytes(l, b"next");
            ffi::lua_pushvalue(l, -2);
            ffi::lua_pushcclosure(l, seen_next, 1);
            // globals, protected, "next", next: keep a copy of `next` for pairs' upvalue.
            ffi::lua_pushvalue(l, -1);
            ffi::lua_insert(l, -3);
            ffi::lua_rawset(l, -5);
            // globals, protected, next
            push_bytes(l, b"pairs");
            ffi::lua_insert(l, -2);
            ffi::lua_pushcclosure(l, seen_pairs, 1);
            ffi::lua_rawset(l, -4);
            // globals, protected
            push_bytes(l, b"rawget");
            ffi::lua_insert(l, -2);
            ffi::lua_pushcclosure(l, seen_rawget, 1);
            ffi::lua_rawset(l, -3);
            ffi::lua_settop(l, -2);
        }
    }

    /// Replaces the globals `setmetatable`, `getmetatable` and `rawset` (in the real globals table,
    /// registry slot `globals_ref`) with C functions that refuse to change read-only tables, as
    /// Redis's patched Lua does, and report every other error as Lua's own functions do (a Lua
    /// wrapper would name itself and its chunk in them). `sandbox_ref` holds the sandbox's
    /// bookkeeping: `protected` (proxy -> table), `proxy_mt_of` (proxy -> the read-only view of its
    /// metatable), `string_mt` and `string_mt_proxy` (the strings' metatable and its view).
    pub fn install_metatable_access(&self, globals_ref: c_int, sandbox_ref: c_int) {
        let l = self.l();
        // SAFETY: points 1-3 of the module docs (eight slots reserved, all pushes counted).
        unsafe {
            ffi::lua_checkstack(l, 8);
            ffi::lua_rawgeti_(l, ffi::LUA_REGISTRYINDEX, globals_ref);
            ffi::lua_rawgeti_(l, ffi::LUA_REGISTRYINDEX, sandbox_ref);
            // globals, sandbox
            let fields = [c"protected", c"proxy_mt_of", c"string_mt", c"string_mt_proxy"];
            for (name, f, upvalues) in [
                ("setmetatable", sandbox_setmetatable as ffi::lua_CFunction, 1),
                ("getmetatable", sandbox_getmetatable as ffi::lua_CFunction, 4),
                ("rawset", sandbox_rawset as ffi::lua_CFunction, 1),
            ] {
                push_bytes(l, name.as_bytes());
                // globals, sandbox, name, then the fields pushed so far.
                for (i, field) in fields[..upvalues].iter().enumerate() {
                    ffi::lua_getfield(l, -2 - i as c_int, field.as_ptr());
                }
                ffi::lua_pushcclosure(l, f, upvalues as c_int);
                ffi::lua_rawset(l, -4);
            }
            ffi::lua_settop(l, -3);
        }
    }

    /// Replaces the globals `loadstring` and `load` (in the real globals table, registry slot
    /// `globals_ref`) with [`sandbox_loadstring`] and [`sandbox_load`], whose chunks get the globals in
    /// registry slot `env_ref` (the scripts' read-only view); `handler_ref` holds the scripts' error
    /// handler, which Lua's `load` applies to its reader's errors (they are raised while the script's
    /// handler is the current one).
    pub fn install_loaders(&self, globals_ref: c_int, env_ref: c_int, handler_ref: c_int) {
        let l = self.l();
        // SAFETY: points 1-3 of the module docs (five slots reserved, all pushes counted).
        unsafe {
            ffi::lua_checkstack(l, 5);
            ffi::lua_rawgeti_(l, ffi::LUA_REGISTRYINDEX, globals_ref);
            for (name, f) in
                [("loadstring", sandbox_loadstring as ffi::lua_CFunction), ("load", sandbox_load as ffi::lua_CFunction)]
            {
                push_bytes(l, name.as_bytes());
                ffi::lua_rawgeti_(l, ffi::LUA_REGISTRYINDEX, env_ref);
                ffi::lua_rawgeti_(l, ffi::LUA_REGISTRYINDEX, handler_ref);
                ffi::lua_pushcclosure(l, f, 2);
                ffi::lua_rawset(l, -3);
            }
            ffi::lua_settop(l, -2);
        }
    }

    /// KiB the VM's heap holds (`lua_gc(LUA_GCCOUNT)`).
    pub fn heap_kb(&self) -> c_int {
        // SAFETY: reads a counter of the state (module docs, point 1); raises nothing.
        unsafe { ffi::lua_gc(self.l(), ffi::LUA_GCCOUNT, 0) }
    }

    /// A full cycle of Lua's collector (`lua_gc(LUA_GCCOLLECT)`).
    pub fn collect(&self) {
        // SAFETY: module docs, point 2: outside a protected call a collection can only raise a
        // memory error (mlua aborts instead) or an error from a userdata's `__gc` (only mlua's
        // callback handles have one, and it drops a Rust closure); it pushes nothing (point 3).
        unsafe {
            ffi::lua_gc(self.l(), ffi::LUA_GCCOLLECT, 0);
        }
    }

    /// Calls the function in registry slot `func` under the error handler in slot `handler`. An EVAL
    /// script (`as_globals`) sees `keys` / `argv` as the globals KEYS and ARGV; a function gets them
    /// as its two arguments. Returns the reply, or for an error the handler's value turned into one.
    #[allow(clippy::too_many_arguments)]
    pub fn call(
        &self,
        host: &Host,
        handler: c_int,
        func: c_int,
        keys: &[Bytes],
        argv: &[Bytes],
        as_globals: bool,
        resp3: impl FnOnce() -> bool,
        name: &str,
    ) -> Frame {
        let l = self.l();
        // SAFETY: points 1-3 of the module docs. The script runs inside `lua_pcall`, so its errors
        // come back as a status; Rust panics inside it were caught (point 4) and are resumed below.
        let reply = unsafe {
            let top = ffi::lua_gettop(l);
            if ffi::lua_checkstack(l, 8) == 0 {
                return Frame::error("ERR reached lua stack limit");
            }
            // An EVAL run's stack below the handler: the tables of KEYS and ARGV at top+1 and
            // top+2 (read again after the run).
            let heap_before = if as_globals { ffi::lua_gc(l, ffi::LUA_GCCOUNT, 0) } else { 0 };
            if as_globals {
                let (lens, mut set) = (self.reused_len.get(), self.reused_set.get());
                for (i, items) in [keys, argv].into_iter().enumerate() {
                    let reuse = items.len() <= REUSED_MAX;
                    if reuse {
                        ffi::lua_rawgeti_(l, ffi::LUA_REGISTRYINDEX, self.reused[i]);
                        fill_reused(l, items, lens[i]);
                    } else {
                        push_array(l, items);
                    }
                    if !(reuse && set[i]) {
                        ffi::lua_rawgeti_(l, ffi::LUA_REGISTRYINDEX, self.names[i]);
                        ffi::lua_pushvalue(l, -2);
                        ffi::lua_rawset(l, ffi::LUA_GLOBALSINDEX);
                        set[i] = reuse;
                    }
                }
                self.reused_set.set(set);
            }
            let below = ffi::lua_gettop(l);
            ffi::lua_rawgeti_(l, ffi::LUA_REGISTRYINDEX, handler);
            ffi::lua_rawgeti_(l, ffi::LUA_REGISTRYINDEX, func);
            let nargs = if as_globals {
                0
            } else {
                push_array(l, keys);
                push_array(l, argv);
                2
            };
            // Restart the count hook's instruction count: it checks for SCRIPT KILL and hands a long
            // run off every 100k instructions of this run, not of the VM's lifetime (which would
            // treat every few thousandth short script as long).
            if let Some(hook) = ffi::lua_gethook(l) {
                ffi::lua_sethook(l, Some(hook), ffi::lua_gethookmask(l), ffi::lua_gethookcount(l));
            }
            let status = ffi::lua_pcall(l, nargs, 1, below + 1);
            let reply = if status == 0 {
                let f = to_frame(l, -1, resp3(), 0);
                // A script returning the error table of a failed `redis.call` (pcall's result).
                if f.is_error() && counted_error(l, -1) {
                    host.error_counted.store(true, std::sync::atomic::Ordering::Relaxed);
                }
                f
            } else {
                error_frame(l, -1, name, host)
            };
            if as_globals {
                ffi::lua_settop(l, below);
                let grown = ffi::lua_gc(l, ffi::LUA_GCCOUNT, 0) > heap_before + REUSED_GROWTH_KB;
                let (mut lens, mut set) = (self.reused_len.get(), self.reused_set.get());
                for (i, items) in [keys, argv].into_iter().enumerate() {
                    let keep = items.len() <= REUSED_MAX;
                    if keep && !grown && reused_is_clean(l, top + 1 + i as c_int, items.len()) {
                        lens[i] = items.len();
                        continue;
                    }
                    // Let the run's table go now rather than at the next run.
                    ffi::lua_rawgeti_(l, ffi::LUA_REGISTRYINDEX, self.names[i]);
                    ffi::lua_pushnil(l);
                    ffi::lua_rawset(l, ffi::LUA_GLOBALSINDEX);
                    set[i] = false;
                    if keep {
                        ffi::lua_createtable(l, 0, 0);
                        ffi::lua_rawseti_(l, ffi::LUA_REGISTRYINDEX, self.reused[i]);
                        lens[i] = 0;
                    }
                }
                self.reused_len.set(lens);
                self.reused_set.set(set);
            }
            ffi::lua_settop(l, top);
            reply
        };
        if let Some(p) = host.panic.lock().take() {
            std::panic::resume_unwind(p);
        }
        reply
    }
}

/// Pushes a Lua string.
///
/// # Safety
/// `l` is usable (module docs) and has a free stack slot.
unsafe fn push_bytes(l: *mut ffi::lua_State, b: &[u8]) {
    unsafe { ffi::lua_pushlstring_(l, b.as_ptr().cast(), b.len()) }
}

/// Pushes `{items...}`.
///
/// # Safety
/// As [`push_bytes`], with two free slots.
unsafe fn push_array(l: *mut ffi::lua_State, items: &[Bytes]) {
    unsafe {
        ffi::lua_createtable(l, c_int::try_from(items.len()).unwrap_or(0), 0);
        for (i, it) in items.iter().enumerate() {
            push_bytes(l, it);
            ffi::lua_rawseti_(l, -2, (i + 1) as c_int);
        }
    }
}

/// Fills the table on top of the stack with `items` at 1..=n and nil at n+1..=`stale` (what the
/// last run left there).
///
/// # Safety
/// As [`push_bytes`], with two free slots.
unsafe fn fill_reused(l: *mut ffi::lua_State, items: &[Bytes], stale: usize) {
    unsafe {
        for (i, it) in items.iter().enumerate() {
            push_bytes(l, it);
            ffi::lua_rawseti_(l, -2, (i + 1) as c_int);
        }
        for i in items.len()..stale {
            ffi::lua_pushnil(l);
            ffi::lua_rawseti_(l, -2, (i + 1) as c_int);
        }
    }
}

/// Whether the table at stack index `table` (absolute) can serve the next run as it is: no
/// metatable, and no key but the integers 1..=`len`, which the next run overwrites or clears. A
/// script may have changed it any way it liked (`KEYS.x = 1`, `setmetatable(ARGV, ...)`).
///
/// # Safety
/// As [`push_bytes`], with two free slots. Leaves the stack as it found it.
unsafe fn reused_is_clean(l: *mut ffi::lua_State, table: c_int, len: usize) -> bool {
    unsafe {
        let top = ffi::lua_gettop(l);
        let mut clean = ffi::lua_getmetatable(l, table) == 0;
        if clean {
            // The traversal starts from nil and goes on from the keys it returns, so `lua_next`
            // never meets a key it cannot place (its only error).
            ffi::lua_pushnil(l);
            while ffi::lua_next(l, table) != 0 {
                ffi::lua_settop(l, -2);
                // `lua_tonumber` of a number converts nothing, so the key stays as `lua_next` gave it.
                let k = if ffi::lua_type(l, -1) == ffi::LUA_TNUMBER { ffi::lua_tonumber(l, -1) } else { 0.0 };
                if k < 1.0 || k > len as f64 || k.fract() != 0.0 {
                    clean = false;
                    break;
                }
            }
        }
        ffi::lua_settop(l, top);
        clean
    }
}

/// The string at `idx` (no conversion: strings only).
///
/// # Safety
/// `l` is usable and `idx` is a string; the slice lives as long as that value stays on the stack.
unsafe fn str_at<'a>(l: *mut ffi::lua_State, idx: c_int) -> &'a [u8] {
    unsafe {
        let mut len = 0usize;
        let p = ffi::lua_tolstring(l, idx, &mut len);
        if p.is_null() { &[] } else { std::slice::from_raw_parts(p.cast::<u8>(), len) }
    }
}

/// Pushes `t[key]` (raw) of the table at `idx` and returns its type.
///
/// # Safety
/// `l` is usable, has two free slots, `idx` is a table given as an absolute index.
unsafe fn field(l: *mut ffi::lua_State, idx: c_int, key: &[u8]) -> c_int {
    unsafe {
        push_bytes(l, key);
        ffi::lua_rawget_(l, idx);
        ffi::lua_type(l, -1)
    }
}

/// `\r` and `\n` become spaces (status and error lines).
fn one_line(b: &[u8]) -> Bytes {
    Bytes::from(b.iter().map(|&c| if c == b'\r' || c == b'\n' { b' ' } else { c }).collect::<Vec<u8>>())
}

/// Converts the value at `idx` to a reply (Redis's `luaReplyToRedisReply`).
///
/// # Safety
/// `l` is usable (module docs); `idx` is a valid index.
unsafe fn to_frame(l: *mut ffi::lua_State, idx: c_int, resp3: bool, depth: usize) -> Frame {
    unsafe {
        if depth > MAX_DEPTH || ffi::lua_checkstack(l, 4) == 0 {
            return Frame::error("ERR reached lua stack limit");
        }
        let idx = if idx < 0 { ffi::lua_gettop(l) + idx + 1 } else { idx };
        match ffi::lua_type(l, idx) {
            ffi::LUA_TSTRING => Frame::Bulk(Bytes::copy_from_slice(str_at(l, idx))),
            ffi::LUA_TBOOLEAN => {
                let b = ffi::lua_toboolean(l, idx) != 0;
                if resp3 {
                    Frame::Boolean(b)
                } else if b {
                    Frame::Integer(1)
                } else {
                    Frame::Null
                }
            }
            // `(long long)n` as x86-64 computes it: NaN and out-of-range numbers give LLONG_MIN.
            ffi::LUA_TNUMBER => Frame::Integer(lstruct::c_long(ffi::lua_tonumber(l, idx))),
            ffi::LUA_TTABLE => {
                let top = ffi::lua_gettop(l);
                let out = table_to_frame(l, idx, resp3, depth);
                ffi::lua_settop(l, top);
                out
            }
            _ => Frame::Null,
        }
    }
}

/// [`to_frame`] for a table at absolute index `t`; may leave values on the stack.
///
/// # Safety
/// As [`to_frame`], with four free slots.
unsafe fn table_to_frame(l: *mut ffi::lua_State, t: c_int, resp3: bool, depth: usize) -> Frame {
    unsafe {
        let top = ffi::lua_gettop(l);
        // Each probe leaves one value; the stack goes back to `top` after every miss.
        let probe = |key: &[u8], want: c_int| -> bool {
            ffi::lua_settop(l, top);
            field(l, t, key) == want
        };
        if probe(b"err", ffi::LUA_TSTRING) {
            return Frame::Error(one_line(str_at(l, -1)));
        }
        if probe(b"ok", ffi::LUA_TSTRING) {
            return Frame::Simple(one_line(str_at(l, -1)));
        }
        if probe(b"double", ffi::LUA_TNUMBER) {
            return Frame::Double(ffi::lua_tonumber(l, -1));
        }
        if probe(b"big_number", ffi::LUA_TSTRING) {
            return Frame::BigNumber(one_line(str_at(l, -1)));
        }
        if probe(b"verbatim_string", ffi::LUA_TTABLE) {
            let vt = ffi::lua_gettop(l);
            if field(l, vt, b"format") == ffi::LUA_TSTRING && field(l, vt, b"string") == ffi::LUA_TSTRING {
                let mut fmt = [b' '; 3];
                for (i, c) in str_at(l, -2).iter().take(3).enumerate() {
                    fmt[i] = *c;
                }
                return Frame::Verbatim { format: fmt, text: Bytes::copy_from_slice(str_at(l, -1)) };
            }
        }
        if probe(b"map", ffi::LUA_TTABLE) {
            let m = ffi::lua_gettop(l);
            let mut v = Vec::new();
            ffi::lua_pushnil(l);
            while ffi::lua_next(l, m) != 0 {
                let k = to_frame(l, -2, resp3, depth + 1);
                let x = to_frame(l, -1, resp3, depth + 1);
                v.push((k, x));
                ffi::lua_settop(l, -2);
            }
            return Frame::Map(v);
        }
        if probe(b"set", ffi::LUA_TTABLE) {
            let m = ffi::lua_gettop(l);
            let mut v = Vec::new();
            ffi::lua_pushnil(l);
            while ffi::lua_next(l, m) != 0 {
                v.push(to_frame(l, -2, resp3, depth + 1));
                ffi::lua_settop(l, -2);
            }
            return Frame::Set(v);
        }
        ffi::lua_settop(l, top);
        let mut out = Vec::new();
        let mut i: c_int = 1;
        loop {
            ffi::lua_rawgeti_(l, t, i);
            if ffi::lua_type(l, -1) == ffi::LUA_TNIL {
                break;
            }
            out.push(to_frame(l, -1, resp3, depth + 1));
            ffi::lua_settop(l, -2);
            i = match i.checked_add(1) {
                Some(n) => n,
                None => break,
            };
        }
        Frame::Array(out)
    }
}

/// The reply for a failed run: the error handler's `{err=..., source=..., line=...}` table, or
/// whatever else was raised.
///
/// # Safety
/// As [`to_frame`].
unsafe fn error_frame(l: *mut ffi::lua_State, idx: c_int, name: &str, host: &Host) -> Frame {
    unsafe {
        let idx = if idx < 0 { ffi::lua_gettop(l) + idx + 1 } else { idx };
        if ffi::lua_type(l, idx) != ffi::LUA_TTABLE {
            let msg = if ffi::lua_type(l, idx) == ffi::LUA_TSTRING {
                String::from_utf8_lossy(str_at(l, idx)).chars().take(100).collect()
            } else {
                "execution failure".to_string()
            };
            return Frame::error(format!("ERR Error running script {name}, {msg}"));
        }
        ffi::lua_checkstack(l, 4);
        let top = ffi::lua_gettop(l);
        let s = |key: &[u8]| -> Option<String> {
            let v = match field(l, idx, key) {
                ffi::LUA_TSTRING => Some(String::from_utf8_lossy(str_at(l, -1)).into_owned()),
                ffi::LUA_TNUMBER => Some(lua_num_str(ffi::lua_tonumber(l, -1))),
                _ => None,
            };
            ffi::lua_settop(l, top);
            v
        };
        if counted_error(l, idx) {
            host.error_counted.store(true, std::sync::atomic::Ordering::Relaxed);
        }
        let mut msg = s(b"err").unwrap_or_default();
        if let (Some(src), Some(line)) = (s(b"source"), s(b"line")) {
            msg.push_str(&format!(" script: {name}, on {src}:{line}."));
        }
        Frame::Error(one_line(msg.as_bytes()))
    }
}

/// Whether the value at `idx` is an error table from `redis.call` whose error was counted already.
///
/// # Safety
/// `l` is usable, with two free slots; the stack is left as it was.
unsafe fn counted_error(l: *mut ffi::lua_State, idx: c_int) -> bool {
    unsafe {
        let idx = if idx < 0 { ffi::lua_gettop(l) + idx + 1 } else { idx };
        if ffi::lua_type(l, idx) != ffi::LUA_TTABLE || ffi::lua_checkstack(l, 2) == 0 {
            return false;
        }
        let top = ffi::lua_gettop(l);
        let counted = field(l, idx, IGNORE_STATS) == ffi::LUA_TBOOLEAN && ffi::lua_toboolean(l, -1) != 0;
        ffi::lua_settop(l, top);
        counted
    }
}

/// Pushes `{err = "CODE message"}` (Redis's `luaPushErrorBuff`): with `from_reply` the code is the
/// error's first word, otherwise ERR.
///
/// # Safety
/// `l` is usable, with three free slots.
unsafe fn push_err_table(l: *mut ffi::lua_State, msg: &[u8], from_reply: bool) {
    let (code, rest): (&[u8], &[u8]) = if from_reply {
        match msg.iter().position(|&c| c == b' ') {
            Some(p) => (&msg[..p], &msg[p + 1..]),
            None => (b"ERR", msg),
        }
    } else {
        (b"ERR", msg)
    };
    let mut rest = rest;
    while let [b'\r' | b'\n', r @ ..] = rest {
        rest = r;
    }
    while let [r @ .., b'\r' | b'\n'] = rest {
        rest = r;
    }
    let mut full = Vec::with_capacity(code.len() + 1 + rest.len());
    full.extend_from_slice(code);
    full.push(b' ');
    full.extend_from_slice(rest);
    unsafe {
        ffi::lua_createtable(l, 0, 1);
        push_bytes(l, b"err");
        push_bytes(l, &full);
        ffi::lua_rawset(l, -3);
        // Redis's `ignore_error_stats_update`: the error was counted where the command failed,
        // so the script's error reply made of this table is not counted again.
        push_bytes(l, IGNORE_STATS);
        ffi::lua_pushboolean(l, 1);
        ffi::lua_rawset(l, -3);
    }
}

/// Pushes a reply converted for Lua (Redis's `redisProtocolToLuaType`).
///
/// # Safety
/// `l` is usable (module docs).
unsafe fn push_frame(l: *mut ffi::lua_State, f: &Frame, resp3: bool) {
    unsafe {
        // Room for this level: a map entry holds wrapper, key, inner table, key and value. Replies
        // of commands nest a handful of levels (COMMAND DOCS is the deepest), far below the 8000
        // slots a C function may reserve, so this cannot fail.
        ffi::lua_checkstack(l, 8);
        match f {
            Frame::Simple(s) => {
                ffi::lua_createtable(l, 0, 1);
                push_bytes(l, b"ok");
                push_bytes(l, s);
                ffi::lua_rawset(l, -3);
            }
            Frame::Error(e) => push_err_table(l, e, true),
            Frame::Integer(i) => ffi::lua_pushnumber(l, *i as f64),
            Frame::Bulk(b) => push_bytes(l, b),
            Frame::Null | Frame::NullArray => {
                if resp3 {
                    ffi::lua_pushnil(l)
                } else {
                    ffi::lua_pushboolean(l, 0)
                }
            }
            Frame::Array(v) | Frame::Push(v) => push_list(l, v.iter(), v.len(), resp3),
            Frame::Map(v) => {
                if resp3 {
                    ffi::lua_createtable(l, 0, 1);
                    push_bytes(l, b"map");
                    ffi::lua_createtable(l, 0, c_int::try_from(v.len()).unwrap_or(0));
                    for (k, x) in v {
                        push_frame(l, k, resp3);
                        push_frame(l, x, resp3);
                        ffi::lua_rawset(l, -3);
                    }
                    ffi::lua_rawset(l, -3);
                } else {
                    push_list(l, v.iter().flat_map(|(k, x)| [k, x]), v.len() * 2, resp3);
                }
            }
            Frame::Set(v) => {
                if resp3 {
                    ffi::lua_createtable(l, 0, 1);
                    push_bytes(l, b"set");
                    ffi::lua_createtable(l, 0, c_int::try_from(v.len()).unwrap_or(0));
                    for k in v {
                        push_frame(l, k, resp3);
                        ffi::lua_pushboolean(l, 1);
                        ffi::lua_rawset(l, -3);
                    }
                    ffi::lua_rawset(l, -3);
                } else {
                    push_list(l, v.iter(), v.len(), resp3);
                }
            }
            Frame::Double(d) => {
                if resp3 {
                    ffi::lua_createtable(l, 0, 1);
                    push_bytes(l, b"double");
                    ffi::lua_pushnumber(l, *d);
                    ffi::lua_rawset(l, -3);
                } else {
                    let mut o = Vec::new();
                    resp::format_double(*d, &mut o);
                    push_bytes(l, &o);
                }
            }
            Frame::Boolean(b) => {
                if resp3 {
                    ffi::lua_pushboolean(l, c_int::from(*b))
                } else {
                    ffi::lua_pushnumber(l, if *b { 1.0 } else { 0.0 })
                }
            }
            Frame::BigNumber(b) => {
                if resp3 {
                    ffi::lua_createtable(l, 0, 1);
                    push_bytes(l, b"big_number");
                    push_bytes(l, b);
                    ffi::lua_rawset(l, -3);
                } else {
                    push_bytes(l, b)
                }
            }
            Frame::Verbatim { format, text } => {
                if resp3 {
                    ffi::lua_createtable(l, 0, 1);
                    push_bytes(l, b"verbatim_string");
                    ffi::lua_createtable(l, 0, 2);
                    push_bytes(l, b"format");
                    push_bytes(l, format);
                    ffi::lua_rawset(l, -3);
                    push_bytes(l, b"string");
                    push_bytes(l, text);
                    ffi::lua_rawset(l, -3);
                    ffi::lua_rawset(l, -3);
                } else {
                    push_bytes(l, text)
                }
            }
            Frame::Attribute { value, .. } => push_frame(l, value, resp3),
            // A reply built as its wire bytes: the script gets what a client would decode.
            Frame::Encoded(b) => match resp::decode_reply(&mut resp::BytesMut::from(&b[..])) {
                Ok(Some(f)) => push_frame(l, &f, resp3),
                _ => ffi::lua_pushnil(l),
            },
        }
    }
}

/// Pushes `{items...}` converted with [`push_frame`].
///
/// # Safety
/// As [`push_frame`].
unsafe fn push_list<'a>(l: *mut ffi::lua_State, items: impl Iterator<Item = &'a Frame>, n: usize, resp3: bool) {
    unsafe {
        ffi::lua_createtable(l, c_int::try_from(n).unwrap_or(0), 0);
        for (i, x) in items.enumerate() {
            push_frame(l, x, resp3);
            ffi::lua_rawseti_(l, -2, c_int::try_from(i + 1).unwrap_or(c_int::MAX));
        }
    }
}

/// Replaces the table at stack index 1 by the table it guards when it is a read-only proxy (upvalue 1
/// is the proxy -> table map). Leaves the stack as it was otherwise.
///
/// # Safety
/// Called from the C functions below, with a table at index 1 and a free stack slot.
unsafe fn unproxy_first(l: *mut ffi::lua_State) {
    unsafe {
        ffi::lua_pushvalue(l, 1);
        ffi::lua_rawget(l, ffi::lua_upvalueindex(1));
        if ffi::lua_type(l, -1) == ffi::LUA_TTABLE {
            ffi::lua_replace(l, 1);
        } else {
            ffi::lua_settop(l, -2);
        }
    }
}

/// `next` that sees through read-only proxies (Lua 5.1's `luaB_next` otherwise).
///
/// # Safety
/// Called by Lua only, as a C closure made by [`RawState::install_iterators`]. Its errors (a
/// non-table argument, an invalid key) longjmp over this frame, which owns nothing (module docs,
/// point 2); it uses at most the LUA_MINSTACK slots Lua guarantees a C function.
unsafe extern "C-unwind" fn seen_next(l: *mut ffi::lua_State) -> c_int {
    unsafe {
        ffi::luaL_checktype(l, 1, ffi::LUA_TTABLE);
        ffi::lua_settop(l, 2);
        unproxy_first(l);
        if ffi::lua_next(l, 1) != 0 {
            2
        } else {
            ffi::lua_pushnil(l);
            1
        }
    }
}

/// `pairs`, whose generator is [`seen_next`] (upvalue 1), as `luaB_pairs` returns `next`.
///
/// # Safety
/// As [`seen_next`].
unsafe extern "C-unwind" fn seen_pairs(l: *mut ffi::lua_State) -> c_int {
    unsafe {
        ffi::luaL_checktype(l, 1, ffi::LUA_TTABLE);
        ffi::lua_pushvalue(l, ffi::lua_upvalueindex(1));
        ffi::lua_pushvalue(l, 1);
        ffi::lua_pushnil(l);
        3
    }
}

/// `rawget` that sees through read-only proxies (`luaB_rawget` otherwise).
///
/// # Safety
/// As [`seen_next`].
unsafe extern "C-unwind" fn seen_rawget(l: *mut ffi::lua_State) -> c_int {
    unsafe {
        ffi::luaL_checktype(l, 1, ffi::LUA_TTABLE);
        ffi::luaL_checkany(l, 2);
        ffi::lua_settop(l, 2);
        unproxy_first(l);
        ffi::lua_rawget(l, 1);
        1
    }
}

/// Whether the value at `idx` is a read-only proxy (a key of the `protected` table, upvalue 1).
///
/// # Safety
/// In a C closure made by [`RawState::install_metatable_access`], with a free stack slot.
unsafe fn is_protected(l: *mut ffi::lua_State, idx: c_int) -> bool {
    unsafe {
        ffi::lua_pushvalue(l, idx);
        ffi::lua_rawget(l, ffi::lua_upvalueindex(1));
        let found = ffi::lua_type(l, -1) != ffi::LUA_TNIL;
        ffi::lua_settop(l, -2);
        found
    }
}

/// Raises Redis's error for a write to a read-only table. Like Redis's (raised inside the Lua API
/// by a C function), it carries no position.
///
/// # Safety
/// In a C function called by Lua, with a free stack slot; longjmps.
unsafe fn readonly_error(l: *mut ffi::lua_State) -> c_int {
    unsafe {
        push_bytes(l, b"Attempt to modify a readonly table");
        ffi::lua_error(l)
    }
}

/// `setmetatable(t, mt)`: Lua 5.1's `luaB_setmetatable`, and a read-only table refused.
///
/// # Safety
/// Called by Lua only, as a C closure made by [`RawState::install_metatable_access`]. Its errors
/// longjmp over this frame, which owns nothing (module docs, point 2).
unsafe extern "C-unwind" fn sandbox_setmetatable(l: *mut ffi::lua_State) -> c_int {
    unsafe {
        let t = ffi::lua_type(l, 2);
        ffi::luaL_checktype(l, 1, ffi::LUA_TTABLE);
        if t != ffi::LUA_TNIL && t != ffi::LUA_TTABLE {
            ffi::luaL_argerror(l, 2, c"nil or table expected".as_ptr());
        }
        if ffi::luaL_getmetafield(l, 1, c"__metatable".as_ptr()) != ffi::LUA_TNIL {
            return ffi::luaL_error(l, c"cannot change a protected metatable".as_ptr());
        }
        if is_protected(l, 1) {
            return readonly_error(l);
        }
        ffi::lua_settop(l, 2);
        ffi::lua_setmetatable(l, 1);
        1
    }
}

/// `getmetatable(v)`: Lua 5.1's `luaB_getmetatable`, except that a read-only proxy's metatable and
/// the strings' shared metatable are given as their read-only views (upvalues 2 and 4).
///
/// # Safety
/// As [`sandbox_setmetatable`].
unsafe extern "C-unwind" fn sandbox_getmetatable(l: *mut ffi::lua_State) -> c_int {
    unsafe {
        ffi::luaL_checkany(l, 1);
        ffi::lua_settop(l, 1);
        if is_protected(l, 1) {
            ffi::lua_pushvalue(l, 1);
            ffi::lua_rawget(l, ffi::lua_upvalueindex(2));
            return 1;
        }
        if ffi::lua_getmetatable(l, 1) == 0 {
            ffi::lua_pushnil(l);
            return 1;
        }
        if ffi::lua_rawequal(l, -1, ffi::lua_upvalueindex(3)) != 0 {
            ffi::lua_pushvalue(l, ffi::lua_upvalueindex(4));
            return 1;
        }
        ffi::luaL_getmetafield(l, 1, c"__metatable".as_ptr());
        1
    }
}

/// `rawset(t, k, v)`: Lua 5.1's `luaB_rawset`, and a read-only table refused.
///
/// # Safety
/// As [`sandbox_setmetatable`].
unsafe extern "C-unwind" fn sandbox_rawset(l: *mut ffi::lua_State) -> c_int {
    unsafe {
        ffi::luaL_checktype(l, 1, ffi::LUA_TTABLE);
        ffi::luaL_checkany(l, 2);
        ffi::luaL_checkany(l, 3);
        ffi::lua_settop(l, 3);
        if is_protected(l, 1) {
            return readonly_error(l);
        }
        ffi::lua_rawset(l, 1);
        1
    }
}

/// Compiles the string at stack index `code` as Lua text named `name`, through
/// [`super::chunk::refuse_binary`], and returns what `loadstring` returns: the function (its globals
/// set to upvalue 1) or nil and the message.
///
/// # Safety
/// Called from the loaders below, with a string at `code`, `name` a NUL-terminated string that stays
/// alive during the call, and two free stack slots. `luaL_loadbuffer` runs Lua's parser protected:
/// its syntax errors come back as a status, never as a longjmp.
unsafe fn load_text(l: *mut ffi::lua_State, code: c_int, name: *const std::ffi::c_char) -> c_int {
    unsafe {
        let mut len = 0;
        let p = ffi::lua_tolstring(l, code, &mut len);
        let text = std::slice::from_raw_parts(p.cast::<u8>(), len);
        let chunkname = std::ffi::CStr::from_ptr(name).to_bytes();
        if let Err(msg) = super::chunk::refuse_binary(text, chunkname) {
            ffi::lua_pushnil(l);
            push_bytes(l, &msg);
            return 2;
        }
        if ffi::luaL_loadbuffer(l, p, len, name) != 0 {
            ffi::lua_pushnil(l);
            ffi::lua_insert(l, -2);
            return 2;
        }
        ffi::lua_pushvalue(l, ffi::lua_upvalueindex(1));
        ffi::lua_setfenv(l, -2);
        1
    }
}

/// `loadstring(s [, chunkname])` (Lua 5.1's `luaB_loadstring`), text only.
///
/// # Safety
/// Called by Lua only, as a C closure made by [`RawState::install_loaders`]. Its argument errors
/// longjmp over this frame, which owns nothing (module docs, point 2).
unsafe extern "C-unwind" fn sandbox_loadstring(l: *mut ffi::lua_State) -> c_int {
    unsafe {
        ffi::luaL_checklstring(l, 1, std::ptr::null_mut());
        let name = ffi::luaL_optlstring(l, 2, ffi::lua_tolstring(l, 1, std::ptr::null_mut()), std::ptr::null_mut());
        ffi::lua_settop(l, 2);
        load_text(l, 1, name)
    }
}

/// Reader pieces concatenated at a time while collecting them, to bound the stack.
const LOAD_PIECES: c_int = 32;

/// `load(reader [, chunkname])` (Lua 5.1's `luaB_load`), text only. Lua's own `load` feeds the
/// reader's pieces to `lua_load` one at a time, and would look only at the first piece to choose
/// the undumper; here the pieces are collected first and the whole chunk goes through
/// [`load_text`], the same check as `loadstring`. As in Lua, an error raised by the reader, or a
/// piece that is not a string, makes `load` return nil and the error, which has passed through the
/// script's error handler (upvalue 2), as Lua's `load` does under Redis's `lua_pcall`.
///
/// # Safety
/// As [`sandbox_loadstring`]. The reader and the handler run under `lua_pcall`, so their errors do
/// not cross this frame; at most `LOAD_PIECES` + 6 slots are used, all reserved first.
unsafe extern "C-unwind" fn sandbox_load(l: *mut ffi::lua_State) -> c_int {
    unsafe {
        ffi::luaL_optlstring(l, 2, c"=(load)".as_ptr(), std::ptr::null_mut());
        ffi::luaL_checktype(l, 1, ffi::LUA_TFUNCTION);
        ffi::lua_settop(l, 2);
        if ffi::lua_checkstack(l, LOAD_PIECES + 6) == 0 {
            return ffi::luaL_error(l, c"too many nested functions".as_ptr());
        }
        // The default name as a Lua string on the stack, not a C literal: stock Lua 5.1's parser
        // interns the name without anchoring it, and a collection during parsing could free it
        // (CVE-2025-49844). A name that is already a live string is interned to that string.
        if ffi::lua_type(l, 2) <= ffi::LUA_TNIL {
            ffi::lua_settop(l, 1);
            push_bytes(l, b"=(load)");
        }
        let name = ffi::lua_tolstring(l, 2, std::ptr::null_mut());
        // 1 reader, 2 name, 3 handler, then the pieces.
        ffi::lua_pushvalue(l, ffi::lua_upvalueindex(2));
        let mut pieces = 0;
        // Lua 5.1's `f_parser` peeks at the first character (`luaZ_lookahead`) and the lexer then
        // reads on, so an end of input (nil or "") from the reader's first call is passed over;
        // from then on the first end of input ends the chunk.
        let mut first = true;
        loop {
            ffi::lua_pushvalue(l, 1);
            if ffi::lua_pcall(l, 0, 1, 3) != 0 {
                ffi::lua_pushnil(l);
                ffi::lua_insert(l, -2);
                return 2;
            }
            match ffi::lua_type(l, -1) {
                ffi::LUA_TNIL => {
                    ffi::lua_settop(l, -2);
                    if std::mem::take(&mut first) {
                        continue;
                    }
                    break;
                }
                ffi::LUA_TSTRING | ffi::LUA_TNUMBER => {
                    let mut len = 0;
                    ffi::lua_tolstring(l, -1, &mut len);
                    if len == 0 {
                        ffi::lua_settop(l, -2);
                        if std::mem::take(&mut first) {
                            continue;
                        }
                        break;
                    }
                    first = false;
                    pieces += 1;
                    if pieces == LOAD_PIECES {
                        ffi::lua_concat(l, pieces);
                        pieces = 1;
                    }
                }
                _ => {
                    // `luaL_error` from the reader: the caller's position, then the handler.
                    ffi::lua_pushvalue(l, 3);
                    ffi::luaL_where(l, 1);
                    push_bytes(l, b"reader function must return a string");
                    ffi::lua_concat(l, 2);
                    ffi::lua_pcall(l, 1, 1, 0);
                    ffi::lua_pushnil(l);
                    ffi::lua_insert(l, -2);
                    return 2;
                }
            }
        }
        match pieces {
            0 => push_bytes(l, b""),
            1 => {}
            n => ffi::lua_concat(l, n),
        }
        let code = ffi::lua_gettop(l);
        load_text(l, code, name)
    }
}

/// `redis.call` (`RAISE`) and `redis.pcall` (Redis's `luaRedisGenericCommand`), as a Lua C function
/// whose upvalue is the VM's [`Host`].
///
/// # Safety
/// Called by Lua only, as a C closure made by [`RawState::install_call`].
unsafe extern "C-unwind" fn redis_call<const RAISE: bool>(l: *mut ffi::lua_State) -> c_int {
    // SAFETY: the upvalue was set by `install_call` to the VM's `Host`, alive as long as the state
    // (module docs, point 5). The Rust work runs in `outcome`, under `catch_unwind`; pushing the
    // result needs only the stack space Lua guarantees a C function (LUA_MINSTACK) plus the
    // `lua_checkstack` calls inside `push_frame`.
    unsafe {
        let host = &*(ffi::lua_touserdata(l, ffi::lua_upvalueindex(1)) as *const Host);
        let outcome = outcome(l, host);
        let raise = match &outcome {
            Outcome::Reply(f, resp3) => {
                push_frame(l, f, *resp3);
                RAISE && f.is_error()
            }
            Outcome::Refused(msg, from_reply) => {
                push_err_table(l, msg, *from_reply);
                RAISE
            }
            Outcome::Outside => {
                push_err_table(l, b"redis.call/pcall can only be called inside a script invocation", false);
                true
            }
            Outcome::Panicked => {
                push_bytes(l, b"panic in redis.call");
                true
            }
        };
        drop(outcome);
        if raise {
            // Nothing with a destructor is alive in this frame (module docs, point 2).
            ffi::lua_error(l);
        }
        1
    }
}

/// Reads the arguments and runs the command; never unwinds.
///
/// # Safety
/// `l` is the state of a running `redis.call`.
unsafe fn outcome(l: *mut ffi::lua_State, host: &Host) -> Outcome {
    let n = unsafe { ffi::lua_gettop(l) };
    let mut argv: smallvec::SmallVec<[Bytes; 8]> = smallvec::SmallVec::new();
    // The command, when the name is exactly a top-level command's (lowercase, as scripts usually
    // write it): its argv[0] is then the table's own static name, not a copy.
    let mut named = None;
    for i in 1..=n {
        // SAFETY: `i` is a valid index; strings are copied while on the stack.
        match unsafe { ffi::lua_type(l, i) } {
            ffi::LUA_TSTRING => {
                let b = unsafe { str_at(l, i) };
                if i == 1
                    && let Some((id, name)) = host.plain(b)
                {
                    named = Some(id);
                    argv.push(Bytes::from_static(name.as_bytes()));
                } else {
                    argv.push(Bytes::copy_from_slice(b));
                }
            }
            ffi::LUA_TNUMBER => {
                let mut o = Vec::new();
                resp::format_double(unsafe { ffi::lua_tonumber(l, i) }, &mut o);
                argv.push(Bytes::from(o));
            }
            _ => {
                return Outcome::Refused(
                    b"Lua redis lib command arguments must be strings or integers".to_vec(),
                    false,
                );
            }
        }
    }
    let debugged = host.ldb_on.load(std::sync::atomic::Ordering::Relaxed);
    let run = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        if debugged {
            host.ldb.call(&argv);
        }
        let o = host.active.with(|c| c.host.call(named, &argv, &c.script)).unwrap_or(Outcome::Outside);
        if debugged {
            match &o {
                Outcome::Reply(f, resp3) => host.ldb.outcome(Ok((f, *resp3))),
                Outcome::Refused(msg, _) => host.ldb.outcome(Err(msg)),
                _ => {}
            }
        }
        o
    }));
    match run {
        Ok(o) => o,
        Err(p) => {
            *host.panic.lock() = Some(p);
            Outcome::Panicked
        }
    }
}

/// Redis's `LDB_MAX_VALUES_DEPTH` (LUA_MINSTACK / 2): how deep the debugger shows nested tables.
const LDB_MAX_DEPTH: usize = 10;

/// The value at `idx` as the debugger shows it (Redis's `ldbCatStackValueRec`): strings quoted,
/// numbers as `%g`, tables as `{1; 2}` when they are arrays and `{[k]=v; ...}` otherwise, other
/// values as `"type@address"`.
///
/// # Safety
/// `l` is usable (module docs) and `idx` a valid index. Pushes at most three values per level,
/// each level checked with `lua_checkstack`, and leaves the stack as it found it.
unsafe fn ldb_repr_at(l: *mut ffi::lua_State, idx: c_int, level: usize, out: &mut Vec<u8>) {
    if level == LDB_MAX_DEPTH {
        out.extend_from_slice(b"<max recursion level reached! Nested table?>");
        return;
    }
    unsafe {
        let idx = if idx < 0 { ffi::lua_gettop(l) + idx + 1 } else { idx };
        match ffi::lua_type(l, idx) {
            ffi::LUA_TSTRING => resp::repr(str_at(l, idx), out),
            ffi::LUA_TBOOLEAN => {
                out.extend_from_slice(if ffi::lua_toboolean(l, idx) != 0 { b"true" } else { b"false" })
            }
            ffi::LUA_TNUMBER => resp::format_double_g(ffi::lua_tonumber(l, idx), 6, out),
            ffi::LUA_TNIL => out.extend_from_slice(b"nil"),
            ffi::LUA_TTABLE => {
                if ffi::lua_checkstack(l, 3) == 0 {
                    out.extend_from_slice(b"<max recursion level reached! Nested table?>");
                    return;
                }
                let (mut as_array, mut as_map) = (Vec::new(), Vec::new());
                let mut expected = 1.0;
                let mut is_array = true;
                ffi::lua_pushnil(l);
                while ffi::lua_next(l, idx) != 0 {
                    if is_array && (ffi::lua_type(l, -2) != ffi::LUA_TNUMBER || ffi::lua_tonumber(l, -2) != expected) {
                        is_array = false;
                    }
                    ldb_repr_at(l, -1, level + 1, &mut as_array);
                    as_array.extend_from_slice(b"; ");
                    as_map.push(b'[');
                    ldb_repr_at(l, -2, level + 1, &mut as_map);
                    as_map.extend_from_slice(b"]=");
                    ldb_repr_at(l, -1, level + 1, &mut as_map);
                    as_map.extend_from_slice(b"; ");
                    ffi::lua_settop(l, -2);
                    expected += 1.0;
                }
                let body = if is_array { as_array } else { as_map };
                out.push(b'{');
                out.extend_from_slice(body.strip_suffix(b"; ").unwrap_or(&body));
                out.push(b'}');
            }
            t => {
                let name = match t {
                    ffi::LUA_TFUNCTION => "function",
                    ffi::LUA_TUSERDATA => "userdata",
                    ffi::LUA_TTHREAD => "thread",
                    ffi::LUA_TLIGHTUSERDATA => "light-userdata",
                    _ => {
                        out.extend_from_slice(b"\"<unknown-lua-type>\"");
                        return;
                    }
                };
                out.extend_from_slice(format!("\"{name}@{:p}\"", ffi::lua_topointer(l, idx)).as_bytes());
            }
        }
    }
}

/// The debugger's reader of the running script's Lua stack.
pub(super) struct LuaStack;

impl super::ldb::Stack for LuaStack {
    /// `values` as the debugger shows them (`redis.debug`).
    fn reprs(&self, lua: &mlua::Lua, values: mlua::MultiValue) -> Vec<Vec<u8>> {
        let mut out = Vec::new();
        // SAFETY: the closure runs protected on the running state with the values as its stack; the
        // calls it makes cannot raise (module docs, point 2), and `ldb_repr_at` checks its stack space.
        let _ = unsafe {
            lua.exec_raw::<()>(values, |l| {
                for i in 1..=ffi::lua_gettop(l) {
                    let mut s = Vec::new();
                    ldb_repr_at(l, i, 0, &mut s);
                    out.push(s);
                }
                ffi::lua_settop(l, 0);
            })
        };
        out
    }

    /// The debugger's `eval`: `code` compiled as an expression (`return <code>`), else as a statement,
    /// and called; its value as shown, or the error (Redis's `ldbEval`).
    fn eval(&self, lua: &mlua::Lua, code: &[u8]) -> Result<Vec<u8>, Vec<u8>> {
        let mut result = Err(Vec::new());
        let expr = [b"return ".as_slice(), code].concat();
        // SAFETY: as `ldb_reprs`; the loads report errors as a status and the call is protected.
        let _ = unsafe {
            lua.exec_raw::<()>((), |l| {
                let load =
                    |src: &[u8]| ffi::luaL_loadbuffer(l, src.as_ptr().cast(), src.len(), c"@ldb_eval".as_ptr()) == 0;
                if !load(&expr) {
                    ffi::lua_settop(l, -2);
                    if !load(code) {
                        result = Err(str_at(l, -1).to_vec());
                        ffi::lua_settop(l, 0);
                        return;
                    }
                }
                if ffi::lua_pcall(l, 0, 1, 0) != 0 {
                    result = Err(str_at(l, -1).to_vec());
                } else {
                    let mut s = Vec::new();
                    ldb_repr_at(l, -1, 0, &mut s);
                    result = Ok(s);
                }
                ffi::lua_settop(l, 0);
            })
        };
        result
    }

    /// The debugger's `print`: with a name, `<value> ...` of the innermost local of that name (or of
    /// the globals KEYS and ARGV), None when there is none; without, `<value> name = ...` for each
    /// local of the current function (Redis's `ldbPrint` / `ldbPrintAll`).
    fn print(&self, lua: &mlua::Lua, var: Option<&[u8]>) -> Option<Vec<Vec<u8>>> {
        let mut lines = Vec::new();
        let mut found = var.is_none();
        // SAFETY: as `ldb_reprs`. `lua_getlocal` pushes one value, popped after it is shown; level 0
        // is the protected frame `exec_raw` runs in, a C function without locals.
        let _ = unsafe {
            lua.exec_raw::<()>((), |l| {
                let mut ar: ffi::lua_Debug = std::mem::zeroed();
                let mut level = 0;
                'levels: while ffi::lua_getstack(l, level, &mut ar) != 0 {
                    level += 1;
                    if var.is_none() && (ffi::lua_getinfo(l, c"S".as_ptr(), &mut ar) == 0 || *ar.what == b'C' as _) {
                        continue;
                    }
                    let mut i = 1;
                    loop {
                        if ffi::lua_checkstack(l, 4) == 0 {
                            break 'levels;
                        }
                        let name = ffi::lua_getlocal(l, &ar, i);
                        if name.is_null() {
                            break;
                        }
                        i += 1;
                        let name = std::ffi::CStr::from_ptr(name).to_bytes();
                        match var {
                            Some(v) if v == name => {
                                let mut s = b"<value> ".to_vec();
                                ldb_repr_at(l, -1, 0, &mut s);
                                lines.push(s);
                                found = true;
                                ffi::lua_settop(l, -2);
                                break 'levels;
                            }
                            None if !name.windows(12).any(|w| w == b"(*temporary)") => {
                                let mut s = b"<value> ".to_vec();
                                s.extend_from_slice(name);
                                s.extend_from_slice(b" = ");
                                ldb_repr_at(l, -1, 0, &mut s);
                                lines.push(s);
                            }
                            _ => {}
                        }
                        ffi::lua_settop(l, -2);
                    }
                    if var.is_none() {
                        break;
                    }
                }
                if !found && let Some(v @ (b"KEYS" | b"ARGV")) = var {
                    ffi::lua_getfield(l, ffi::LUA_GLOBALSINDEX, if v == b"KEYS" { c"KEYS" } else { c"ARGV" }.as_ptr());
                    let mut s = b"<value> ".to_vec();
                    ldb_repr_at(l, -1, 0, &mut s);
                    lines.push(s);
                    found = true;
                }
                ffi::lua_settop(l, 0);
            })
        };
        found.then_some(lines)
    }
}
