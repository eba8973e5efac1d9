//! The change stream: what every change to the data was, as commands that reproduce it.
//!
//! Each command that changes data reports it once, through its [`crate::ctx::Ctx`]:
//! [`Ctx::changed`](crate::ctx::Ctx::changed) counts the changes (Redis's `server.dirty`, which
//! `rdb_changes_since_last_save` shows), and
//! [`Ctx::propagate_as`](crate::ctx::Ctx::propagate_as) replaces the command's own arguments with
//! the *effect* when replaying the arguments would not reproduce the same data. The rules are
//! Redis's: relative expiries become absolute (`SET ... PX` → `SET ... PXAT`, `EXPIRE` →
//! `PEXPIREAT`), served blocking pops propagate as their non-blocking form, random and floating
//! point results as the values they produced (`SPOP` → `SREM`, `INCRBYFLOAT` → `SET ... KEEPTTL`),
//! scripts and transactions as the effects of the commands they ran, wrapped in `MULTI`/`EXEC` when
//! there are several, and keys the server deletes on its own (expired, evicted) as `DEL`.
//!
//! [`crate::server::Server::call`] is the one place that turns a report into an [`Effect`]: a
//! command whose count is not zero, or that asked to be propagated, adds one effect per command it
//! propagates as, unless commands it ran on its behalf (EXEC's, a script's, FENCED's) already did.
//! The effects of one top-level command form a [`Unit`], published while the command still holds
//! its shard locks, so two units that touch a common key appear in the order they ran. A key a table
//! deleted on its own while a command ran (found expired, evicted) becomes a `DEL` in that command's
//! unit, before the command's own effect; one deleted outside any command (the active expiry cycle,
//! eviction) is a unit of its own.
//!
//! WATCH and blocked clients learn of changes a level lower, from the tables themselves
//! ([`crate::keyspace::Table`]): every mutation there touches watchers and marks waiting keys ready.
//!
//! Until persistence exists the stream's consumer is the replay test: effects replayed into a fresh
//! server give the same data. The stream records nothing unless [`ChangeStream::enable`] was called,
//! and costs a relaxed load per write command when it is off.

use bytes::Bytes;
use parking_lot::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};

/// One command that reproduces a change, in the database it applies to.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Effect {
    /// Database index.
    pub db: usize,
    /// The command and its arguments.
    pub args: Vec<Bytes>,
    /// Where it goes: [`Effect::AOF`], [`Effect::REPLICAS`] or both ([`Effect::ALL`]). Only a
    /// script's `redis.set_repl` narrows it (Redis's `PROPAGATE_AOF`/`PROPAGATE_REPL`); the unit
    /// is wrapped in `MULTI`/`EXEC` by its whole count all the same, as Redis's
    /// `propagatePendingCommands` wraps it.
    pub targets: u8,
}

impl Effect {
    /// To the AOF (Redis's `PROPAGATE_AOF`, Lua's `redis.REPL_AOF`).
    pub const AOF: u8 = 1;
    /// To the replicas (`PROPAGATE_REPL`, `redis.REPL_REPLICA`).
    pub const REPLICAS: u8 = 2;
    /// Everywhere (`redis.REPL_ALL`).
    pub const ALL: u8 = 3;

    /// An effect from string-like arguments, for every target.
    pub fn new<A: AsRef<[u8]>>(db: usize, args: &[A]) -> Effect {
        Effect::of(db, args.iter().map(|a| Bytes::copy_from_slice(a.as_ref())).collect())
    }

    /// An effect of `args`, for every target.
    pub fn of(db: usize, args: Vec<Bytes>) -> Effect {
        Effect { db, args, targets: Effect::ALL }
    }

    /// True if it goes to `target`.
    pub fn goes_to(&self, target: u8) -> bool {
        self.targets & target != 0
    }
}

/// The effects of one top-level command (or one served waiter, or one key the server deleted), to be
/// applied atomically: consumers wrap a unit of several effects in `MULTI`/`EXEC`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Unit {
    /// The command's time (monotonic ms, the server clock's timeline).
    pub at: u64,
    /// What it changed, in order.
    pub effects: Vec<Effect>,
}

/// True if a unit writes anything for `target`: an effect that goes there, or the `MULTI`/`EXEC`
/// around several effects, which every target gets.
pub fn unit_reaches(effects: &[Effect], target: u8) -> bool {
    effects.len() > 1 || effects.iter().any(|e| e.goes_to(target))
}

/// Writes a unit for `target` as Redis's `propagatePendingCommands` frames it: several effects in
/// `MULTI` (in the first effect's database) and `EXEC` (in the last one's), whichever of them go
/// to `target`; each of those through `write`, after a `SELECT` when its database is not
/// `seldb`, the one the output last selected.
pub fn encode_unit(
    out: &mut Vec<u8>,
    seldb: &mut Option<usize>,
    effects: &[Effect],
    target: u8,
    mut write: impl FnMut(&mut Vec<u8>, &Effect),
) {
    let mut select = |out: &mut Vec<u8>, db: usize| {
        if *seldb != Some(db) {
            encode_command(out, &[&b"SELECT"[..], db.to_string().as_bytes()]);
            *seldb = Some(db);
        }
    };
    let wrap = effects.len() > 1;
    if wrap {
        select(out, effects[0].db);
        encode_command(out, &[&b"MULTI"[..]]);
    }
    for e in effects.iter().filter(|e| e.goes_to(target)) {
        select(out, e.db);
        write(out, e);
    }
    if wrap {
        select(out, effects[effects.len() - 1].db);
        encode_command(out, &[&b"EXEC"[..]]);
    }
}

/// Where units go: the AOF (encoded as the commands Redis's AOF holds) and, for tests, a log of
/// the units themselves.
#[derive(Default)]
pub struct ChangeStream {
    enabled: AtomicBool,
    logging: AtomicBool,
    log: Mutex<Vec<Unit>>,
    aof_on: AtomicBool,
    aof: Mutex<AofBuffer>,
    /// `AofBuffer::appended`, readable without the lock (every reply flush asks).
    appended: std::sync::atomic::AtomicU64,
    /// The allocation of `AofBuffer::bytes`, readable without the lock (eviction asks before
    /// every command under `maxmemory`).
    aof_allocated: std::sync::atomic::AtomicU64,
}

/// Units encoded for the AOF and not yet taken by its writer.
#[derive(Default)]
struct AofBuffer {
    bytes: Vec<u8>,
    /// The database the encoded commands last selected (None: the next unit starts with SELECT).
    db: Option<usize>,
    /// Bytes ever appended (the offset a client waits for under `appendfsync always`).
    appended: u64,
    /// The Unix second of the last `#TS:` annotation.
    last_ts: i64,
}

impl ChangeStream {
    /// True when units are being recorded.
    #[inline]
    pub fn enabled(&self) -> bool {
        self.enabled.load(Ordering::Relaxed)
    }

    /// Starts logging units for [`ChangeStream::take`] (tests). The tables learn it through
    /// [`crate::server::Server::record_changes`].
    pub(crate) fn enable(&self) {
        self.logging.store(true, Ordering::SeqCst);
        self.enabled.store(true, Ordering::SeqCst);
    }

    /// Records units from now on for a consumer that takes them as they are published (the
    /// replication stream), without logging them.
    pub(crate) fn record(&self) {
        self.enabled.store(true, Ordering::SeqCst);
    }

    /// Starts or stops encoding units for the AOF.
    pub(crate) fn set_aof(&self, on: bool) {
        let mut b = self.aof.lock();
        b.db = None;
        self.aof_on.store(on, Ordering::SeqCst);
        if on {
            self.enabled.store(true, Ordering::SeqCst);
        }
    }

    /// True while units go to the AOF.
    pub fn aof_on(&self) -> bool {
        self.aof_on.load(Ordering::Relaxed)
    }

    /// Appends a unit (nothing for an empty one). With `ts` (`aof-timestamp-enabled`), a unit in
    /// a new second starts with Redis's `#TS:<unix seconds>` annotation.
    pub(crate) fn publish(&self, at: u64, ts: Option<i64>, effects: Vec<Effect>) {
        if effects.is_empty() {
            return;
        }
        if self.aof_on.load(Ordering::Relaxed) && unit_reaches(&effects, Effect::AOF) {
            let mut b = self.aof.lock();
            let start = b.bytes.len();
            if let Some(ts) = ts
                && ts != b.last_ts
            {
                b.bytes.extend_from_slice(format!("#TS:{ts}\r\n").as_bytes());
                b.last_ts = ts;
            }
            let b = &mut *b;
            encode_unit(&mut b.bytes, &mut b.db, &effects, Effect::AOF, |out, e| {
                if e.args.first().is_some_and(|a| a.eq_ignore_ascii_case(b"LOCKRESTORE")) {
                    let mut cmd = Vec::new();
                    encode_command(&mut cmd, &e.args);
                    encode_annotation(out, &cmd);
                } else {
                    encode_command(out, &e.args);
                }
            });
            let added = (b.bytes.len() - start) as u64;
            b.appended += added;
            self.appended.store(b.appended, Ordering::Release);
            self.aof_allocated.store(b.bytes.capacity() as u64, Ordering::Relaxed);
        }
        if self.logging.load(Ordering::Relaxed) {
            self.log.lock().push(Unit { at, effects });
        }
    }

    /// Takes the units logged so far.
    pub fn take(&self) -> Vec<Unit> {
        std::mem::take(&mut *self.log.lock())
    }

    /// Takes the AOF bytes encoded so far, with the offset they end at.
    pub fn take_aof(&self) -> (Vec<u8>, u64) {
        let mut b = self.aof.lock();
        self.aof_allocated.store(0, Ordering::Relaxed);
        (std::mem::take(&mut b.bytes), b.appended)
    }

    /// Takes the AOF bytes for a file being closed: what follows starts with its own SELECT.
    pub fn rotate_aof(&self) -> (Vec<u8>, u64) {
        let mut b = self.aof.lock();
        b.db = None;
        self.aof_allocated.store(0, Ordering::Relaxed);
        (std::mem::take(&mut b.bytes), b.appended)
    }

    /// Bytes the AOF buffer (what the writer has not taken yet) takes, 0 while the AOF is off:
    /// Redis's `aof_buf` (INFO's `mem_aof_buffer`).
    pub fn aof_buffer_bytes(&self) -> u64 {
        if self.aof_on() { self.aof_allocated.load(Ordering::Relaxed) } else { 0 }
    }

    /// Bytes ever encoded for the AOF.
    pub fn aof_appended(&self) -> u64 {
        self.appended.load(Ordering::Acquire)
    }
}

/// The prefix of an AOF line holding a command only Latch has (a lock grant), hex-encoded: Redis
/// skips lines that start with `#` (its annotations), so Redis still loads the file.
pub const LATCH_ANNOTATION: &[u8] = b"#latch:";

/// How the commands of an AOF file end (see [`decode_commands`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AofEnd {
    /// After a complete command.
    Complete,
    /// Inside a command, or inside a MULTI never closed by its EXEC: a write cut short (Redis's
    /// "Unexpected end of file"; `aof-load-truncated` may allow it).
    Truncated,
    /// On something that is not a command (Redis's "Bad file format").
    Bad,
}

/// The commands of an AOF file, as Redis's loader reads them.
#[derive(Debug)]
pub struct Decoded {
    /// The commands, up to the last complete one (a transaction the file does not finish left out).
    pub commands: Vec<Vec<bytes::Bytes>>,
    /// Bytes those commands take from the start (where a torn file is cut).
    pub good: usize,
    /// How the file ends.
    pub end: AofEnd,
}

/// Reads the RESP commands of an AOF file, skipping Redis's `#` annotations and taking Latch's own
/// (`#latch:` lock grants).
pub fn decode_commands(data: &[u8]) -> Decoded {
    let mut commands = Vec::new();
    let mut pos = 0;
    // Where the open MULTI started: (commands before it, its offset).
    let mut multi: Option<(usize, usize)> = None;
    let line = |from: usize| -> Option<(&[u8], usize)> {
        let end = memchr::memchr(b'\n', &data[from..])? + from;
        (end > from && data[end - 1] == b'\r').then(|| (&data[from..end - 1], end + 1))
    };
    let end = 'outer: loop {
        if pos >= data.len() {
            break AofEnd::Complete;
        }
        if data[pos] == b'#' {
            let Some((text, next)) = line(pos) else { break AofEnd::Truncated };
            if let Some(hex) = text.strip_prefix(LATCH_ANNOTATION) {
                let raw: Option<Vec<u8>> = hex
                    .chunks(2)
                    .map(|p| std::str::from_utf8(p).ok().and_then(|h| u8::from_str_radix(h, 16).ok()))
                    .collect();
                match raw.map(|r| decode_commands(&r)) {
                    Some(inner) if inner.end == AofEnd::Complete => commands.extend(inner.commands),
                    _ => break AofEnd::Bad,
                }
            }
            pos = next;
            continue;
        }
        let Some((head, mut at)) = line(pos) else { break AofEnd::Truncated };
        // Redis's loader: a command is an array of at least one bulk string.
        let Some(n) = head.strip_prefix(b"*").and_then(|n| std::str::from_utf8(n).ok()?.parse::<usize>().ok()) else {
            break AofEnd::Bad;
        };
        if n == 0 {
            break AofEnd::Bad;
        }
        let mut args = Vec::with_capacity(n.min(1024));
        for _ in 0..n {
            let Some((h, next)) = line(at) else { break 'outer AofEnd::Truncated };
            let Some(len) = h.strip_prefix(b"$").and_then(|l| std::str::from_utf8(l).ok()?.parse::<usize>().ok())
            else {
                break 'outer AofEnd::Bad;
            };
            if next + len + 2 > data.len() {
                break 'outer AofEnd::Truncated;
            }
            args.push(bytes::Bytes::copy_from_slice(&data[next..next + len]));
            at = next + len + 2;
        }
        if args[0].eq_ignore_ascii_case(b"multi") {
            multi = Some((commands.len(), pos));
        } else if args[0].eq_ignore_ascii_case(b"exec") {
            multi = None;
        }
        commands.push(args);
        pos = at;
    };
    match (end, multi) {
        (AofEnd::Bad, _) => Decoded { commands, good: pos, end },
        (_, Some((n, at))) => {
            commands.truncate(n);
            Decoded { commands, good: at, end: AofEnd::Truncated }
        }
        (_, None) => Decoded { commands, good: pos, end },
    }
}

/// Commands only Latch has (RESP bytes `cmds`) as an AOF line Redis skips: Redis has no lock
/// type, so a lock grant is an annotation (`#...`, Redis's comment lines), the commands' RESP in
/// hex, which Latch's loader replays.
pub fn encode_annotation(out: &mut Vec<u8>, cmds: &[u8]) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    out.extend_from_slice(LATCH_ANNOTATION);
    for byte in cmds {
        out.extend_from_slice(&[HEX[usize::from(byte >> 4)], HEX[usize::from(byte & 15)]]);
    }
    out.extend_from_slice(b"\r\n");
}

/// One command as RESP (an array of bulk strings), as Redis writes its AOF.
pub fn encode_command<A: AsRef<[u8]>>(out: &mut Vec<u8>, args: &[A]) {
    out.push(b'*');
    out.extend_from_slice(itoa::Buffer::new().format(args.len()).as_bytes());
    out.extend_from_slice(b"\r\n");
    for a in args {
        let a = a.as_ref();
        out.push(b'$');
        out.extend_from_slice(itoa::Buffer::new().format(a.len()).as_bytes());
        out.extend_from_slice(b"\r\n");
        out.extend_from_slice(a);
        out.extend_from_slice(b"\r\n");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The AOF takes a unit's effects that go to it, framed by the whole unit (MULTI in the first
    /// effect's database even when that effect goes to the replicas only); a unit with nothing
    /// for it writes nothing, not even its `#TS:` annotation.
    #[test]
    fn the_aof_takes_only_what_goes_to_it() {
        let c = ChangeStream::default();
        c.set_aof(true);
        let only = |targets, e: Effect| Effect { targets, ..e };
        c.publish(0, Some(5), vec![only(Effect::REPLICAS, Effect::new(0, &["SET", "x", "1"]))]);
        assert_eq!(c.take_aof(), (Vec::new(), 0));
        c.publish(
            0,
            Some(6),
            vec![only(Effect::REPLICAS, Effect::new(1, &["SET", "x", "1"])), Effect::new(0, &["SET", "y", "2"])],
        );
        let want = b"#TS:6\r\n*2\r\n$6\r\nSELECT\r\n$1\r\n1\r\n*1\r\n$5\r\nMULTI\r\n*2\r\n$6\r\nSELECT\r\n$1\r\n0\r\n\
                     *3\r\n$3\r\nSET\r\n$1\r\ny\r\n$1\r\n2\r\n*1\r\n$4\r\nEXEC\r\n";
        let (bytes, offset) = c.take_aof();
        assert_eq!(String::from_utf8_lossy(&bytes), String::from_utf8_lossy(want));
        assert_eq!(offset, want.len() as u64);
    }
}
