//! Access control lists, as Redis 7.0.15's `acl.c`: users, their selectors (command bitmaps,
//! first-arg exceptions, key and channel patterns), the permission check every command path runs,
//! the ACL log, and the text forms (`ACL SETUSER` rules in, `ACL LIST`/`GETUSER` out).
//!
//! A [`User`] is shared by the clients authenticated as it and changed in place (as Redis mutates
//! its `user` struct), so a client sees a rule change at its next command. The check's fast path is
//! one relaxed load: [`User::unrestricted`], true while the user's root selector allows every
//! command, key and channel (the `default` user out of the box).
//!
//! Command metadata (categories, key-spec flags) comes from the families through [`Meta`], installed
//! once by the assembly layer; the runtime itself knows no command.

use crate::command::Flags;
use crate::command::{Command, CommandTable, Runner};
use bytes::Bytes;
use parking_lot::{Mutex, RwLock};
use std::collections::{BTreeMap, VecDeque};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};

/// Redis's ACL categories, in its order (`ACL CAT`, the describe algorithm's order), then Latch's.
pub const CATEGORIES: &[&str] = &[
    "keyspace",
    "read",
    "write",
    "set",
    "sortedset",
    "list",
    "hash",
    "string",
    "bitmap",
    "hyperloglog",
    "geo",
    "stream",
    "pubsub",
    "admin",
    "fast",
    "slow",
    "blocking",
    "dangerous",
    "connection",
    "transaction",
    "scripting",
    // Latch's own: the native lock commands (LOCK, UNLOCK, LOCKEXTEND, LOCKINFO, FENCED...).
    "latch-lock",
];

/// The category bit of `name` (without `@`), case-insensitively.
pub fn category_bit(name: &[u8]) -> Option<u32> {
    CATEGORIES.iter().position(|c| c.as_bytes().eq_ignore_ascii_case(name)).map(|i| 1 << i)
}

/// Size of a selector's command bitmap; the last bit is the "future commands" bit `+@all` sets.
const BITS: usize = 1024;
const WORDS: usize = BITS / 64;
const FUTURE: usize = BITS - 1;

/// Key-spec flags the check reads (Redis's `CMD_KEY_*`).
pub mod key_flags {
    /// Reads the key's value.
    pub const ACCESS: u32 = 1;
    /// Adds data.
    pub const INSERT: u32 = 2;
    /// Removes data.
    pub const DELETE: u32 = 4;
    /// Changes data.
    pub const UPDATE: u32 = 8;
    /// The spec does not find every key (SORT's STORE, MIGRATE's KEYS).
    pub const INCOMPLETE: u32 = 16;
    /// Not a key (excluded from ACL checks).
    pub const NOT_KEY: u32 = 32;
}

const READ: u8 = 1;
const WRITE: u8 = 2;

/// Where a key spec's search begins.
#[derive(Clone, Debug)]
pub enum Begin {
    /// At this argument.
    Index(i32),
    /// After `keyword`, searched from `from` (negative: from the end, backwards).
    Keyword(Vec<u8>, i32),
    /// Not expressible.
    Unknown,
}

/// How a key spec finds its keys once begun.
#[derive(Clone, Debug)]
pub enum Find {
    /// A range: `last` relative to the first (negative: from the end), every `step`, `limit`.
    Range(i32, i32, i32),
    /// A count at `idx`, keys from `first`, every `step` (all relative to the begin).
    Keynum(i32, i32, i32),
    /// Not expressible.
    Unknown,
}

/// One key spec of a command, as Redis's COMMAND INFO describes it.
#[derive(Clone, Debug)]
pub struct KeySpec {
    /// `key_flags` bits.
    pub flags: u32,
    /// See [`Begin`].
    pub begin: Begin,
    /// See [`Find`].
    pub find: Find,
}

impl KeySpec {
    /// Argument positions this spec finds in `args` (Redis's `getKeysUsingKeySpecs`, one spec).
    fn positions(&self, args: &[Bytes]) -> Vec<usize> {
        let argc = args.len() as i64;
        let first = match &self.begin {
            Begin::Index(i) => i64::from(*i),
            Begin::Keyword(kw, from) => {
                let from = i64::from(*from);
                let (start, end, dir) = if from >= 0 { (from, argc - 1, 1) } else { (argc + from, 0, -1) };
                let mut i = start;
                let mut found = None;
                while (dir > 0 && i <= end) || (dir < 0 && i >= end) {
                    if i >= 0 && i < argc && args[i as usize].eq_ignore_ascii_case(kw) {
                        found = Some(i + 1);
                        break;
                    }
                    i += dir;
                }
                match found {
                    Some(f) => f,
                    None => return Vec::new(),
                }
            }
            Begin::Unknown => return Vec::new(),
        };
        let (first, last, step) = match self.find {
            Find::Range(lastkey, step, limit) => {
                let last = if lastkey >= 0 {
                    first + i64::from(lastkey)
                } else if limit == 0 {
                    argc + i64::from(lastkey)
                } else {
                    first + ((argc - first) / i64::from(limit) + i64::from(lastkey))
                };
                (first, last, i64::from(step))
            }
            Find::Keynum(idx, fk, step) => {
                let at = first + i64::from(idx);
                if at < 0 || at >= argc {
                    return Vec::new();
                }
                let Some(n) = crate::args::parse_i64_strict(&args[at as usize]).filter(|n| *n >= 0) else {
                    return Vec::new();
                };
                let first = first + i64::from(fk);
                (first, first + n * i64::from(step.max(1)) - 1, i64::from(step))
            }
            Find::Unknown => return Vec::new(),
        };
        let mut v = Vec::new();
        let mut i = first;
        while i <= last && step > 0 && i >= 1 && i < argc {
            v.push(i as usize);
            i += step;
        }
        v
    }
}

/// A command as the ACL's rules name it: its number in the table, its name, its subcommands.
pub struct Row {
    /// [`Command::id`].
    pub id: u16,
    /// Full name (`config|get` for a subcommand).
    pub name: &'static str,
    /// A container's subcommands.
    pub subcommands: Vec<Row>,
}

impl Row {
    fn of<R: Runner>(c: &Command<R>) -> Row {
        Row { id: c.id, name: c.name, subcommands: c.subcommands.iter().map(Row::of).collect() }
    }
}

/// Command metadata the ACL needs, by [`Command::id`]: the commands' names, category bits and key
/// specs.
pub struct Meta {
    /// Every top-level command of the table (the original one: ACL rules name commands as Redis
    /// defines them, whatever `rename-command` did), in table order.
    pub commands: Vec<Row>,
    /// Index in `commands` by name.
    by_name: std::collections::HashMap<&'static str, usize>,
    /// Category bits (see [`category_bit`]) per command id.
    pub categories: Vec<u32>,
    /// Key specs per command id.
    pub specs: Vec<Vec<KeySpec>>,
    /// Per command id, the access flags all its keys share ([`NOT_UNIFORM`] when they differ or
    /// depend on the arguments): see [`Meta::uniform_flags`].
    pub uniform: Vec<u32>,
}

/// [`Meta::uniform`]'s "ask [`Meta::uniform_flags`]".
pub const NOT_UNIFORM: u32 = u32::MAX;

impl Meta {
    /// Metadata for the commands of `table`, with the categories, key specs and shared key flags
    /// (see the fields) the caller worked out.
    pub fn new<R: Runner>(
        table: &CommandTable<R>,
        categories: Vec<u32>,
        specs: Vec<Vec<KeySpec>>,
        uniform: Vec<u32>,
    ) -> Meta {
        let commands: Vec<Row> = table.all().iter().map(|c| Row::of(*c)).collect();
        let by_name = commands.iter().enumerate().map(|(i, c)| (c.name, i)).collect();
        Meta { commands, by_name, categories, specs, uniform }
    }

    fn cats(&self, c: &Row) -> u32 {
        self.categories.get(usize::from(c.id)).copied().unwrap_or(0)
    }

    /// Every command and subcommand, containers first, in table order.
    fn each(&self) -> impl Iterator<Item = &Row> + '_ {
        self.commands.iter().flat_map(|c| std::iter::once(c).chain(c.subcommands.iter()))
    }

    /// Looks a command up by its full name (`config|get`), as Redis's `ACLLookupCommand`.
    fn lookup(&self, name: &[u8]) -> Option<&Row> {
        let lower = name.to_ascii_lowercase();
        let mut parts = lower.splitn(2, |b| *b == b'|');
        let top = &self.commands[*self.by_name.get(std::str::from_utf8(parts.next()?).ok()?)?];
        match parts.next() {
            None => Some(top),
            Some(sub) => top.subcommands.iter().find(|s| s.name.rsplit('|').next().map(str::as_bytes) == Some(sub)),
        }
    }

    /// The key positions of `args` with their access flags: the table's positions (what the
    /// command touches), each with the flags of the key spec that finds it; a position no complete
    /// spec finds (SORT's STORE key) takes an incomplete spec's flags, or all of them.
    pub fn keys_with_flags<R: Runner>(&self, cmd: &Command<R>, args: &[Bytes]) -> Vec<(usize, u32)> {
        let pos = cmd.keys.positions(args);
        if pos.is_empty() {
            return pos.into_iter().map(|p| (p, 0)).collect();
        }
        if let Some(f) = self.uniform_flags(cmd, args) {
            return pos.into_iter().map(|p| (p, f)).collect();
        }
        // SORT's keys come from its getkeys function in Redis (sortGetKeys): the sorted key is
        // read, the STORE key written.
        if cmd.name == "sort" {
            return pos.into_iter().map(|p| (p, if p == 1 { key_flags::ACCESS } else { key_flags::UPDATE })).collect();
        }
        let specs = &self.specs[usize::from(cmd.id)];
        let fallback = specs
            .iter()
            .find(|s| {
                s.flags & key_flags::INCOMPLETE != 0
                    || matches!(s.begin, Begin::Unknown)
                    || matches!(s.find, Find::Unknown)
            })
            .map(|s| s.flags)
            .unwrap_or_else(|| specs.iter().fold(0, |a, s| a | s.flags));
        self.specs_finding(cmd, args, pos)
            .into_iter()
            .filter_map(|(p, found)| {
                let mut flags = None;
                for i in found {
                    let s = &specs[i];
                    if s.flags & key_flags::NOT_KEY != 0 {
                        return None;
                    }
                    flags = Some(flags.unwrap_or(0) | s.flags);
                }
                Some((p, flags.unwrap_or(fallback)))
            })
            .collect()
    }

    /// Each of the key positions `pos` of `args` with the indices of `cmd`'s key specs that find
    /// it, in spec order (none: no complete spec finds it, as SORT's STORE key).
    pub fn specs_finding<R: Runner>(
        &self,
        cmd: &Command<R>,
        args: &[Bytes],
        pos: impl IntoIterator<Item = usize>,
    ) -> Vec<(usize, Vec<usize>)> {
        let specs = self.specs.get(usize::from(cmd.id)).map_or(&[][..], Vec::as_slice);
        let found: Vec<Vec<usize>> = specs.iter().map(|s| s.positions(args)).collect();
        pos.into_iter()
            .map(|p| (p, found.iter().enumerate().filter(|(_, f)| f.contains(&p)).map(|(i, _)| i).collect()))
            .collect()
    }
}

impl Meta {
    /// The access flags every key of `cmd` has, when they are all alike: SET's and BITFIELD's
    /// (they depend on the arguments, as Redis asks the command: setGetKeys, bitfieldGetKeys), a
    /// command without key specs (by its write flag), or one whose specs all have the same flags
    /// (most commands have one). None when its keys must be matched to their specs one by one.
    fn uniform_flags<R: Runner>(&self, cmd: &Command<R>, args: &[Bytes]) -> Option<u32> {
        match self.uniform.get(usize::from(cmd.id)) {
            Some(&f) if f != NOT_UNIFORM => Some(f),
            _ => self.uniform_flags_of(cmd, args),
        }
    }

    /// [`Meta::uniform_flags`] worked out from the specs (and, for SET and BITFIELD, `args`).
    pub fn uniform_flags_of<R: Runner>(&self, cmd: &Command<R>, args: &[Bytes]) -> Option<u32> {
        if let Some(f) = variable_flags(cmd, args) {
            return Some(f);
        }
        if cmd.name == "sort" {
            return None;
        }
        match self.specs.get(usize::from(cmd.id)) {
            Some(specs) if !specs.is_empty() => {
                let f0 = specs[0].flags;
                (f0 & key_flags::NOT_KEY == 0 && specs.iter().all(|s| s.flags == f0)).then_some(f0)
            }
            _ => Some(if cmd.flags.has(Flags::WRITE) { key_flags::UPDATE } else { key_flags::ACCESS }),
        }
    }
}

/// The key flags of SET and BITFIELD, which depend on their arguments (Redis's `setGetKeys` and
/// `bitfieldGetKeys`): SET reads its key only with GET, BITFIELD writes only with SET or INCRBY.
fn variable_flags<R: Runner>(cmd: &Command<R>, args: &[Bytes]) -> Option<u32> {
    use key_flags::{ACCESS, UPDATE};
    match cmd.name {
        "set" => {
            Some(if args.iter().skip(3).any(|a| a.eq_ignore_ascii_case(b"get")) { ACCESS | UPDATE } else { UPDATE })
        }
        "bitfield" => {
            let mut i = 2;
            let mut readonly = true;
            while i < args.len() {
                let rem = args.len() - i - 1;
                let a = &args[i];
                if a.eq_ignore_ascii_case(b"get") && rem >= 2 {
                    i += 2;
                } else if (a.eq_ignore_ascii_case(b"set") || a.eq_ignore_ascii_case(b"incrby")) && rem >= 3 {
                    readonly = false;
                    break;
                } else if a.eq_ignore_ascii_case(b"overflow") && rem >= 1 {
                    i += 1;
                } else {
                    readonly = false;
                    break;
                }
                i += 1;
            }
            Some(if readonly { ACCESS } else { ACCESS | UPDATE })
        }
        _ => None,
    }
}

/// A key pattern with its permissions (`~`: both, `%R~`, `%W~`).
#[derive(Clone, PartialEq, Eq, Debug)]
struct KeyPattern {
    pattern: Vec<u8>,
    perm: u8,
    /// The pattern is this many plain bytes then one `*` (`key:*`, the common form): matched by
    /// comparing the prefix.
    prefix: Option<usize>,
}

impl KeyPattern {
    fn new(pattern: Vec<u8>, perm: u8) -> KeyPattern {
        let prefix = match pattern.split_last() {
            Some((b'*', head)) if !head.iter().any(|c| matches!(c, b'*' | b'?' | b'[' | b'\\')) => Some(head.len()),
            _ => None,
        };
        KeyPattern { pattern, perm, prefix }
    }

    /// Whether `key` matches (Redis's `stringmatchlen`).
    fn matches(&self, key: &[u8]) -> bool {
        match self.prefix {
            Some(n) => key.starts_with(&self.pattern[..n]),
            None => crate::glob::matches(&self.pattern, key, false),
        }
    }

    fn describe(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(match self.perm {
            READ => b"%R~".as_slice(),
            WRITE => b"%W~",
            _ => b"~",
        });
        out.extend_from_slice(&self.pattern);
    }
}

/// One selector: the root one (the user's own rules) or one in parentheses.
#[derive(Clone, Debug)]
pub struct Selector {
    root: bool,
    allkeys: bool,
    allchannels: bool,
    allcommands: bool,
    bits: [u64; WORDS],
    firstargs: BTreeMap<u16, Vec<Vec<u8>>>,
    keys: Vec<KeyPattern>,
    channels: Vec<Vec<u8>>,
}

/// Why a rule was refused (Redis's errno values of `ACLSetUser`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RuleError {
    /// ENOENT.
    UnknownCommand,
    /// EINVAL.
    Syntax,
    /// EEXIST.
    KeyAfterAll,
    /// EISDIR.
    ChannelAfterAll,
    /// ENODEV.
    NoSuchPassword,
    /// EBADMSG.
    BadHash,
    /// ECHILD.
    FirstArgOfSub,
}

impl RuleError {
    /// Redis's `ACLSetUserStringError` text.
    pub fn text(self) -> &'static str {
        match self {
            RuleError::UnknownCommand => "Unknown command or category name in ACL",
            RuleError::Syntax => "Syntax error",
            RuleError::KeyAfterAll => {
                "Adding a pattern after the * pattern (or the 'allkeys' flag) is not valid and does not have any \
                 effect. Try 'resetkeys' to start with an empty list of patterns"
            }
            RuleError::ChannelAfterAll => {
                "Adding a pattern after the * pattern (or the 'allchannels' flag) is not valid and does not have any \
                 effect. Try 'resetchannels' to start with an empty list of channels"
            }
            RuleError::NoSuchPassword => "The password you are trying to remove from the user does not exist",
            RuleError::BadHash => {
                "The password hash must be exactly 64 characters and contain only lowercase hexadecimal characters"
            }
            RuleError::FirstArgOfSub => "Allowing first-arg of a subcommand is not supported",
        }
    }
}

fn has_spaces(s: &[u8]) -> bool {
    s.iter().any(|b| b.is_ascii_whitespace() || *b == 0 || *b == 0x0b)
}

impl Selector {
    fn new(root: bool, allchannels: bool) -> Selector {
        Selector {
            root,
            allkeys: false,
            allchannels,
            allcommands: false,
            bits: [0; WORDS],
            firstargs: BTreeMap::new(),
            keys: Vec::new(),
            channels: Vec::new(),
        }
    }

    fn bit(&self, id: usize) -> bool {
        id < BITS && self.bits[id / 64] & (1 << (id % 64)) != 0
    }

    fn set_bit(&mut self, id: usize, on: bool) {
        if id >= BITS {
            return;
        }
        if on {
            self.bits[id / 64] |= 1 << (id % 64);
        } else {
            self.bits[id / 64] &= !(1 << (id % 64));
            self.allcommands = false;
        }
    }

    /// Redis's `ACLChangeSelectorPerm`: a container's subcommands follow it.
    fn change(&mut self, c: &Row, on: bool) {
        self.set_bit(usize::from(c.id), on);
        self.firstargs.remove(&c.id);
        for s in &c.subcommands {
            self.set_bit(usize::from(s.id), on);
        }
    }

    fn change_category(&mut self, meta: &Meta, cat: u32, on: bool) {
        for c in meta.each() {
            if meta.cats(c) & cat != 0 {
                self.change(c, on);
            }
        }
    }

    /// True when the selector allows everything (the fast path's condition).
    fn unrestricted(&self) -> bool {
        self.allcommands && self.allkeys && self.allchannels
    }

    /// Redis's `ACLSetSelector`.
    fn apply(&mut self, op: &[u8], meta: Option<&Meta>) -> Result<(), RuleError> {
        let is = |w: &str| op.eq_ignore_ascii_case(w.as_bytes());
        if is("allkeys") || op == b"~*" {
            self.allkeys = true;
            self.keys.clear();
        } else if is("resetkeys") {
            self.allkeys = false;
            self.keys.clear();
        } else if is("allchannels") || op == b"&*" {
            self.allchannels = true;
            self.channels.clear();
        } else if is("resetchannels") {
            self.allchannels = false;
            self.channels.clear();
        } else if is("allcommands") || is("+@all") {
            self.bits = [u64::MAX; WORDS];
            self.allcommands = true;
            self.firstargs.clear();
        } else if is("nocommands") || is("-@all") {
            self.bits = [0; WORDS];
            self.allcommands = false;
            self.firstargs.clear();
        } else if op[0] == b'~' || op[0] == b'%' {
            if self.allkeys {
                return Err(RuleError::KeyAfterAll);
            }
            let mut perm = 0;
            let mut offset = 1;
            if op[0] == b'%' {
                loop {
                    match op.get(offset).map(u8::to_ascii_uppercase) {
                        Some(b'R') if perm & READ == 0 => perm |= READ,
                        Some(b'W') if perm & WRITE == 0 => perm |= WRITE,
                        Some(b'~') => {
                            offset += 1;
                            break;
                        }
                        // Redis leaves the loop at the end of the op with what it read (`%R`
                        // becomes an empty read pattern).
                        None => break,
                        _ => return Err(RuleError::Syntax),
                    }
                    offset += 1;
                }
            } else {
                perm = READ | WRITE;
            }
            let pattern = op.get(offset..).unwrap_or_default().to_vec();
            if has_spaces(&pattern) {
                return Err(RuleError::Syntax);
            }
            match self.keys.iter_mut().find(|k| k.pattern == pattern) {
                Some(k) => k.perm |= perm,
                None => self.keys.push(KeyPattern::new(pattern, perm)),
            }
            self.allkeys = false;
        } else if op[0] == b'&' {
            if self.allchannels {
                return Err(RuleError::ChannelAfterAll);
            }
            let pattern = op[1..].to_vec();
            if has_spaces(&pattern) {
                return Err(RuleError::Syntax);
            }
            if !self.channels.contains(&pattern) {
                self.channels.push(pattern);
            }
            self.allchannels = false;
        } else if op[0] == b'+' && op.get(1) != Some(&b'@') {
            let meta = meta.ok_or(RuleError::UnknownCommand)?;
            let name = &op[1..];
            match name.iter().rposition(|b| *b == b'|') {
                None => {
                    let c = meta.lookup(name).filter(|c| !c.name.contains('|')).ok_or(RuleError::UnknownCommand)?;
                    self.change(c, true);
                }
                Some(bar) => {
                    let (top, sub) = (&name[..bar], &name[bar + 1..]);
                    if top.contains(&b'|') {
                        // `+config|get|x`: Redis looks up `config|get` and finds a subcommand.
                        return Err(if meta.lookup(top).is_some() {
                            RuleError::FirstArgOfSub
                        } else {
                            RuleError::UnknownCommand
                        });
                    }
                    let c = meta.lookup(top).ok_or(RuleError::UnknownCommand)?;
                    if sub.is_empty() {
                        return Err(RuleError::Syntax);
                    }
                    if !c.subcommands.is_empty() {
                        let s = meta.lookup(name).ok_or(RuleError::UnknownCommand)?;
                        self.change(s, true);
                    } else {
                        let list = self.firstargs.entry(c.id).or_default();
                        if !list.iter().any(|a| a.eq_ignore_ascii_case(sub)) {
                            list.push(sub.to_vec());
                        }
                    }
                }
            }
        } else if op[0] == b'-' && op.get(1) != Some(&b'@') {
            let meta = meta.ok_or(RuleError::UnknownCommand)?;
            let c = meta.lookup(&op[1..]).ok_or(RuleError::UnknownCommand)?;
            self.change(c, false);
        } else if (op[0] == b'+' || op[0] == b'-') && op.get(1) == Some(&b'@') {
            let cat = category_bit(&op[2..]).ok_or(RuleError::UnknownCommand)?;
            let meta = meta.ok_or(RuleError::UnknownCommand)?;
            self.change_category(meta, cat, op[0] == b'+');
        } else {
            return Err(RuleError::Syntax);
        }
        Ok(())
    }

    /// Commands allowed and denied in category `cat` (Redis's `ACLCountCategoryBitsForSelector`).
    fn count(&self, meta: &Meta, cat: u32) -> (usize, usize) {
        let (mut on, mut off) = (0, 0);
        for c in meta.each() {
            if meta.cats(c) & cat != 0 {
                if self.bit(usize::from(c.id)) {
                    on += 1;
                } else {
                    off += 1;
                }
            }
        }
        (on, off)
    }

    /// Redis's `ACLDescribeSelectorCommandRules`: `+@all`/`-@all`, the best-fitting categories,
    /// then single commands and first-args.
    fn describe_commands(&self, meta: &Meta) -> String {
        let additive = !self.bit(FUTURE);
        let mut rules = String::from(if additive { "-@all " } else { "+@all " });
        let mut fake = Selector::new(false, false);
        let _ = fake.apply(if additive { b"-@all" } else { b"+@all" }, Some(meta));
        let mut temp = Selector::new(false, false);
        temp.bits = self.bits;
        let mut applied = [false; 32];
        loop {
            let mut best = None;
            let (mut mindiff, mut maxsame) = (usize::MAX, 0);
            for (j, _) in CATEGORIES.iter().enumerate() {
                if applied[j] {
                    continue;
                }
                let (on, off) = temp.count(meta, 1 << j);
                let (diff, same) = if additive { (off, on) } else { (on, off) };
                if same > diff && (diff < mindiff || (diff == mindiff && same > maxsame)) {
                    best = Some(j);
                    mindiff = diff;
                    maxsame = same;
                }
            }
            let Some(j) = best else { break };
            fake.change_category(meta, 1 << j, additive);
            temp.change_category(meta, 1 << j, !additive);
            rules.push_str(if additive { "+@" } else { "-@" });
            rules.push_str(CATEGORIES[j]);
            rules.push(' ');
            applied[j] = true;
        }
        for c in meta.each() {
            let id = usize::from(c.id);
            let (user, faked) = (self.bit(id), fake.bit(id));
            if user != faked {
                rules.push(if user { '+' } else { '-' });
                rules.push_str(c.name);
                rules.push(' ');
                fake.change(c, user);
            }
            if !user && let Some(args) = self.firstargs.get(&c.id) {
                for a in args {
                    rules.push('+');
                    rules.push_str(c.name);
                    rules.push('|');
                    rules.push_str(&String::from_utf8_lossy(a));
                    rules.push(' ');
                }
            }
        }
        rules.pop();
        rules
    }

    /// The key patterns as GETUSER shows them.
    fn describe_keys(&self) -> Vec<u8> {
        if self.allkeys {
            return b"~*".to_vec();
        }
        let mut out = Vec::new();
        for (i, k) in self.keys.iter().enumerate() {
            if i > 0 {
                out.push(b' ');
            }
            k.describe(&mut out);
        }
        out
    }

    /// The channel patterns as GETUSER shows them.
    fn describe_channels(&self) -> Vec<u8> {
        if self.allchannels {
            return b"&*".to_vec();
        }
        let mut out = Vec::new();
        for (i, c) in self.channels.iter().enumerate() {
            if i > 0 {
                out.push(b' ');
            }
            out.push(b'&');
            out.extend_from_slice(c);
        }
        out
    }

    /// Redis's `ACLDescribeSelector`.
    fn describe(&self, meta: &Meta) -> Vec<u8> {
        let mut out = Vec::new();
        if self.allkeys {
            out.extend_from_slice(b"~* ");
        } else {
            for k in &self.keys {
                k.describe(&mut out);
                out.push(b' ');
            }
        }
        if self.allchannels {
            out.extend_from_slice(b"&* ");
        } else {
            out.extend_from_slice(b"resetchannels ");
            for c in &self.channels {
                out.push(b'&');
                out.extend_from_slice(c);
                out.push(b' ');
            }
        }
        out.extend_from_slice(self.describe_commands(meta).as_bytes());
        out
    }

    fn key_ok(&self, key: &[u8], flags: u32) -> bool {
        if self.allkeys {
            return true;
        }
        let mut need = 0;
        if flags & key_flags::ACCESS != 0 {
            need |= READ;
        }
        if flags & (key_flags::INSERT | key_flags::DELETE | key_flags::UPDATE) != 0 {
            need |= WRITE;
        }
        self.keys.iter().any(|p| p.perm & need == need && p.matches(key))
    }

    fn channel_ok(&self, channel: &[u8], is_pattern: bool) -> bool {
        self.allchannels
            || self
                .channels
                .iter()
                .any(|p| if is_pattern { p[..] == *channel } else { crate::glob::matches(p, channel, false) })
    }

    /// Whether every key is reachable with `flags`' access (Redis's
    /// `ACLSelectorHasUnrestrictedKeyAccess`).
    fn all_keys_for(&self, flags: u32) -> bool {
        self.allkeys || self.keys.iter().any(|p| p.pattern == b"*" && self.key_perm_covers(p, flags))
    }

    fn key_perm_covers(&self, p: &KeyPattern, flags: u32) -> bool {
        let mut need = 0;
        if flags & key_flags::ACCESS != 0 {
            need |= READ;
        }
        if flags & (key_flags::INSERT | key_flags::DELETE | key_flags::UPDATE) != 0 {
            need |= WRITE;
        }
        p.perm & need == need
    }

    /// Redis's `ACLSelectorCheckCmd`.
    fn check<R: Runner>(
        &self,
        meta: &Meta,
        cmd: &Command<R>,
        args: &[Bytes],
        keys: &mut Option<Vec<(usize, u32)>>,
    ) -> Verdict {
        if !self.allcommands && !cmd.flags.has(Flags::NO_AUTH) && !self.bit(usize::from(cmd.id)) {
            let idx = if cmd.name.contains('|') { 2 } else { 1 };
            let ok = args.len() >= 2
                && self
                    .firstargs
                    .get(&cmd.id)
                    .is_some_and(|l| args.get(idx).is_some_and(|a| l.iter().any(|f| f.eq_ignore_ascii_case(a))));
            if !ok {
                return Verdict::DeniedCmd;
            }
        }
        if !self.allkeys {
            // Keys at fixed steps with one set of flags (most commands): checked where they are,
            // with nothing allocated.
            if let crate::command::Keys::Range { .. } = cmd.keys
                && let Some(f) = meta.uniform_flags(cmd, args)
            {
                for i in cmd.keys.range_positions(args.len()) {
                    if !self.key_ok(&args[i], f) {
                        return Verdict::DeniedKey(i);
                    }
                }
                return self.check_channels(cmd, args);
            }
            let keys = keys.get_or_insert_with(|| meta.keys_with_flags(cmd, args));
            for &(i, f) in keys.iter() {
                if !self.key_ok(&args[i], f) {
                    return Verdict::DeniedKey(i);
                }
            }
        }
        self.check_channels(cmd, args)
    }

    /// The channel part of [`Selector::check`].
    fn check_channels<R: Runner>(&self, cmd: &Command<R>, args: &[Bytes]) -> Verdict {
        if !self.allchannels && cmd.flags.has(Flags::PUBSUB) {
            for (i, pattern) in channels(cmd, args) {
                if !self.channel_ok(&args[i], pattern) {
                    return Verdict::DeniedChannel(i);
                }
            }
        }
        Verdict::Ok
    }
}

/// The channel arguments of a pub/sub command that publishes or subscribes, with whether each is
/// a pattern (Redis's `getChannelsFromCommand` with PUBLISH|SUBSCRIBE flags).
fn channels<R: Runner>(cmd: &Command<R>, args: &[Bytes]) -> Vec<(usize, bool)> {
    match cmd.name {
        "publish" | "spublish" => (args.len() > 1).then_some((1, false)).into_iter().collect(),
        "subscribe" | "ssubscribe" => (1..args.len()).map(|i| (i, false)).collect(),
        "psubscribe" => (1..args.len()).map(|i| (i, true)).collect(),
        _ => Vec::new(),
    }
}

/// A selector's answer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Verdict {
    Ok,
    DeniedCmd,
    DeniedKey(usize),
    DeniedChannel(usize),
}

/// Why a command was denied; the argument index of the key or channel.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Denied {
    /// The command (or subcommand).
    Cmd,
    /// The key at this argument.
    Key(usize),
    /// The channel at this argument.
    Channel(usize),
}

impl Denied {
    /// The reply at the top level (Redis's processCommand).
    pub fn reply<R: Runner>(self, cmd: &Command<R>) -> String {
        match self {
            Denied::Cmd => format!("NOPERM this user has no permissions to run the '{}' command", cmd.name),
            Denied::Key(_) => "NOPERM this user has no permissions to access one of the keys used as arguments".into(),
            Denied::Channel(_) => {
                "NOPERM this user has no permissions to access one of the channels used as arguments".into()
            }
        }
    }

    /// Redis's `getAclErrorMessage` (scripts).
    pub fn message(self) -> &'static str {
        match self {
            Denied::Cmd => "can't run this command or subcommand",
            Denied::Key(_) => "can't access at least one of the keys mentioned in the command arguments",
            Denied::Channel(_) => "can't publish to the channel mentioned in the command",
        }
    }

    /// EXEC's reason when rules changed after queuing.
    pub fn exec_reason(self) -> &'static str {
        match self {
            Denied::Cmd => "no permission to execute the command or subcommand",
            Denied::Key(_) => "no permission to touch the specified keys",
            Denied::Channel(_) => "no permission to access one of the channels used as arguments",
        }
    }

    fn rank(self) -> (u8, usize) {
        match self {
            Denied::Cmd => (1, 0),
            Denied::Key(i) => (2, i),
            Denied::Channel(i) => (4, i),
        }
    }
}

/// A user's state, behind its lock.
#[derive(Clone, Debug)]
pub struct UserData {
    enabled: bool,
    nopass: bool,
    /// 0: neither flag; 1: skip-sanitize-payload; 2: sanitize-payload.
    sanitize: u8,
    passwords: Vec<String>,
    selectors: Vec<Selector>,
}

impl UserData {
    fn new(allchannels: bool) -> UserData {
        UserData {
            enabled: false,
            nopass: false,
            sanitize: 0,
            passwords: Vec::new(),
            selectors: vec![Selector::new(true, allchannels)],
        }
    }

    /// Redis's `ACLSetUser`: one rule.
    pub fn apply(&mut self, op: &[u8], meta: Option<&Meta>, pubsub_all: bool) -> Result<(), RuleError> {
        if op.is_empty() {
            return Ok(());
        }
        let is = |w: &str| op.eq_ignore_ascii_case(w.as_bytes());
        if is("on") {
            self.enabled = true;
        } else if is("off") {
            self.enabled = false;
        } else if is("skip-sanitize-payload") {
            self.sanitize = 1;
        } else if is("sanitize-payload") {
            self.sanitize = 2;
        } else if is("nopass") {
            self.nopass = true;
            self.passwords.clear();
        } else if is("resetpass") {
            self.nopass = false;
            self.passwords.clear();
        } else if op[0] == b'>' || op[0] == b'#' {
            let hash = if op[0] == b'>' { hash_password(&op[1..]) } else { valid_hash(&op[1..])? };
            if !self.passwords.contains(&hash) {
                self.passwords.push(hash);
            }
            self.nopass = false;
        } else if op[0] == b'<' || op[0] == b'!' {
            let hash = if op[0] == b'<' { hash_password(&op[1..]) } else { valid_hash(&op[1..])? };
            let Some(i) = self.passwords.iter().position(|p| *p == hash) else {
                return Err(RuleError::NoSuchPassword);
            };
            self.passwords.remove(i);
        } else if op[0] == b'(' && op[op.len() - 1] == b')' {
            let mut s = Selector::new(false, pubsub_all);
            let inner = String::from_utf8_lossy(&op[1..op.len() - 1]).into_owned();
            let parts = resp::split_args(inner.as_bytes()).ok_or(RuleError::Syntax)?;
            for p in parts {
                s.apply(&p, meta)?;
            }
            self.selectors.push(s);
        } else if is("clearselectors") {
            self.selectors.truncate(1);
        } else if is("reset") {
            self.passwords.clear();
            self.nopass = false;
            let root = &mut self.selectors[0];
            root.allkeys = false;
            root.keys.clear();
            root.allchannels = pubsub_all;
            root.channels.clear();
            self.enabled = false;
            self.sanitize = 2;
            self.selectors.truncate(1);
            self.selectors[0].apply(b"-@all", meta)?;
        } else {
            self.selectors[0].apply(op, meta)?;
        }
        Ok(())
    }

    /// Redis's `ACLDescribeUser`: flags, password hashes, the root selector, the others in
    /// parentheses.
    pub fn describe(&self, meta: &Meta) -> Vec<u8> {
        let mut out = Vec::new();
        for f in self.flag_names() {
            out.extend_from_slice(f.as_bytes());
            out.push(b' ');
        }
        for p in &self.passwords {
            out.push(b'#');
            out.extend_from_slice(p.as_bytes());
            out.push(b' ');
        }
        for s in &self.selectors {
            if s.root {
                out.extend_from_slice(&s.describe(meta));
            } else {
                out.extend_from_slice(b" (");
                out.extend_from_slice(&s.describe(meta));
                out.push(b')');
            }
        }
        out
    }

    /// The flags GETUSER lists, in Redis's order.
    pub fn flag_names(&self) -> Vec<&'static str> {
        let mut v = vec![if self.enabled { "on" } else { "off" }];
        if self.nopass {
            v.push("nopass");
        }
        match self.sanitize {
            1 => v.push("skip-sanitize-payload"),
            2 => v.push("sanitize-payload"),
            _ => {}
        }
        v
    }

    /// The password hashes.
    pub fn passwords(&self) -> &[String] {
        &self.passwords
    }

    /// GETUSER's selector fields: (commands, keys, channels) of each selector, the root first.
    pub fn selector_fields(&self, meta: &Meta) -> Vec<(String, Vec<u8>, Vec<u8>)> {
        self.selectors.iter().map(|s| (s.describe_commands(meta), s.describe_keys(), s.describe_channels())).collect()
    }

    fn unrestricted(&self) -> bool {
        self.selectors[0].unrestricted()
    }

    /// The channel patterns, if some selector does not allow every channel (for killing
    /// subscribers whose channels were revoked).
    fn channel_list(&self) -> Option<Vec<Vec<u8>>> {
        if self.selectors.iter().any(|s| s.allchannels) {
            return None;
        }
        Some(self.selectors.iter().flat_map(|s| s.channels.iter().cloned()).collect())
    }

    /// Whether the user can authenticate with `pass`.
    fn accepts(&self, pass: &[u8]) -> bool {
        if !self.enabled {
            return false;
        }
        if self.nopass {
            return true;
        }
        let h = hash_password(pass);
        // Every stored hash is compared, each in fixed time.
        self.passwords.iter().fold(false, |ok, p| ct_eq(p.as_bytes(), h.as_bytes()) | ok)
    }
}

/// Compares equal-length strings without an early exit.
fn ct_eq(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// SHA-256 of `pass` in lowercase hex (Redis's `ACLHashPassword`).
pub fn hash_password(pass: &[u8]) -> String {
    use sha2::Digest;
    let d = sha2::Sha256::digest(pass);
    let mut s = String::with_capacity(64);
    for b in d.iter() {
        s.push_str(&format!("{b:02x}"));
    }
    s
}

fn valid_hash(h: &[u8]) -> Result<String, RuleError> {
    if h.len() != 64 || !h.iter().all(|c| matches!(c, b'0'..=b'9' | b'a'..=b'f')) {
        return Err(RuleError::BadHash);
    }
    Ok(String::from_utf8_lossy(h).into_owned())
}

/// A client's copy of its user's rules: the user, the version of its rules, the rules.
pub type RulesCopy = (Arc<User>, u64, Arc<UserData>);

/// A user, shared by the clients authenticated as it.
pub struct User {
    /// The name.
    pub name: Bytes,
    unrestricted: AtomicBool,
    /// Set when the user was deleted (its clients are being disconnected).
    deleted: AtomicBool,
    data: RwLock<Arc<UserData>>,
    /// Bumped by every change of `data`: a client's copy of the rules (`Client::acl_rules`) is good
    /// while it matches, so the per-command check takes no lock.
    version: AtomicU64,
}

impl User {
    fn new(name: Bytes, data: UserData) -> User {
        User {
            name,
            unrestricted: AtomicBool::new(data.unrestricted()),
            deleted: AtomicBool::new(false),
            data: RwLock::new(Arc::new(data)),
            version: AtomicU64::new(0),
        }
    }

    /// Runs `f` on the user's rules as a client last saw them (its `copy`), refreshed when they
    /// changed since. The copy holds the user itself, so no other user can take its address while
    /// it exists.
    pub fn with_rules<T>(
        self: &Arc<User>,
        copy: &std::cell::Cell<Option<RulesCopy>>,
        f: impl FnOnce(&UserData) -> T,
    ) -> T {
        let version = self.version.load(Ordering::Acquire);
        let kept = match copy.take() {
            Some((who, v, data)) if Arc::ptr_eq(&who, self) && v == version => (who, v, data),
            _ => (self.clone(), version, self.data.read().clone()),
        };
        let r = f(&kept.2);
        copy.set(Some(kept));
        r
    }

    /// True while the user may run anything: the per-command fast path.
    #[inline]
    pub fn unrestricted(&self) -> bool {
        self.unrestricted.load(Ordering::Relaxed)
    }

    /// True with the `skip-sanitize-payload` flag: under `sanitize-dump-payload clients`, this
    /// user's RESTORE payloads get only the shallow checks.
    pub fn skips_sanitize(&self) -> bool {
        self.data.read().sanitize == 1
    }

    /// A copy of the user's state.
    pub fn data(&self) -> UserData {
        UserData::clone(&self.data.read())
    }

    /// Replaces the user's state.
    fn set(&self, data: UserData) {
        self.unrestricted.store(data.unrestricted(), Ordering::Relaxed);
        *self.data.write() = Arc::new(data);
        self.version.fetch_add(1, Ordering::Release);
    }

    /// Whether the user can log in without a password (Redis: nopass and not disabled).
    pub fn nopass_enabled(&self) -> bool {
        let d = self.data.read();
        d.nopass && d.enabled
    }

    /// Whether the user has the `nopass` flag.
    pub fn nopass(&self) -> bool {
        self.data.read().nopass
    }

    /// The name as text.
    pub fn name_str(&self) -> String {
        String::from_utf8_lossy(&self.name).into_owned()
    }

    /// Whether the user was deleted.
    pub fn deleted(&self) -> bool {
        self.deleted.load(Ordering::Relaxed)
    }
}

impl std::fmt::Debug for User {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "User({})", self.name_str())
    }
}

/// Why an entry went into the ACL log.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Reason {
    /// A command.
    Command,
    /// A key.
    Key,
    /// A channel.
    Channel,
    /// A failed AUTH.
    Auth,
}

impl Reason {
    /// The name ACL LOG shows.
    pub fn name(self) -> &'static str {
        match self {
            Reason::Command => "command",
            Reason::Key => "key",
            Reason::Channel => "channel",
            Reason::Auth => "auth",
        }
    }
}

/// Where the denied command ran.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Context {
    /// Sent by the client.
    Toplevel,
    /// Queued in or run by MULTI/EXEC.
    Multi,
    /// Called by a script.
    Lua,
}

impl Context {
    /// The name ACL LOG shows.
    pub fn name(self) -> &'static str {
        match self {
            Context::Toplevel => "toplevel",
            Context::Multi => "multi",
            Context::Lua => "lua",
        }
    }
}

/// One ACL LOG entry.
#[derive(Clone, Debug)]
pub struct LogEntry {
    /// Times it happened (merged within 60 s).
    pub count: u64,
    /// Why.
    pub reason: Reason,
    /// Where.
    pub context: Context,
    /// The command, key or channel (AUTH: the command name as sent).
    pub object: Bytes,
    /// The user (AUTH: the name tried).
    pub username: Bytes,
    /// Unix ms of the last occurrence.
    pub ctime: i64,
    /// The client's CLIENT LIST line at the last occurrence.
    pub cinfo: String,
}

/// A client's CLIENT LIST line, provided by the families (the ACL log records it).
pub type ClientLineFn = fn(&crate::clients::ClientInfo, u64) -> String;

/// Every user, the log and the counters.
pub struct Acl {
    users: RwLock<BTreeMap<Bytes, Arc<User>>>,
    default: Arc<User>,
    meta: OnceLock<Meta>,
    client_line: OnceLock<ClientLineFn>,
    log: Mutex<VecDeque<LogEntry>>,
    /// INFO stats `acl_access_denied_auth`.
    pub denied_auth: AtomicU64,
    /// INFO stats `acl_access_denied_cmd`.
    pub denied_cmd: AtomicU64,
    /// INFO stats `acl_access_denied_key`.
    pub denied_key: AtomicU64,
    /// INFO stats `acl_access_denied_channel`.
    pub denied_channel: AtomicU64,
    /// `acl-pubsub-default` is `allchannels`.
    pub pubsub_all: AtomicBool,
}

impl Acl {
    /// A fresh registry around `default` (the user `requirepass` drives, owned by the
    /// configuration).
    pub fn new(default: Arc<User>) -> Acl {
        let mut users = BTreeMap::new();
        users.insert(default.name.clone(), default.clone());
        Acl {
            users: RwLock::new(users),
            default,
            meta: OnceLock::new(),
            client_line: OnceLock::new(),
            log: Mutex::new(VecDeque::new()),
            denied_auth: AtomicU64::new(0),
            denied_cmd: AtomicU64::new(0),
            denied_key: AtomicU64::new(0),
            denied_channel: AtomicU64::new(0),
            pubsub_all: AtomicBool::new(false),
        }
    }

    /// A new `default` user: all commands, keys and channels, on, nopass (Redis's
    /// `ACLCreateDefaultUser`).
    pub fn default_user() -> Arc<User> {
        let mut d = UserData::new(false);
        for op in ["+@all", "~*", "&*", "on", "nopass"] {
            let _ = d.apply(op.as_bytes(), None, false);
        }
        Arc::new(User::new(Bytes::from_static(b"default"), d))
    }

    /// Installs the command metadata (once, by the assembly layer).
    pub fn install(&self, meta: Meta, client_line: ClientLineFn) {
        let _ = self.meta.set(meta);
        let _ = self.client_line.set(client_line);
    }

    /// The command metadata, if installed.
    pub fn meta(&self) -> Option<&Meta> {
        self.meta.get()
    }

    /// The `default` user.
    pub fn default(&self) -> &Arc<User> {
        &self.default
    }

    /// A user by name.
    pub fn get(&self, name: &[u8]) -> Option<Arc<User>> {
        self.users.read().get(name).cloned()
    }

    /// Every user, by name.
    pub fn users(&self) -> Vec<Arc<User>> {
        self.users.read().values().cloned().collect()
    }

    /// Redis's `ACLCheckUserCredentials`: the user if `pass` opens it.
    pub fn authenticate(&self, name: &[u8], pass: &[u8]) -> Option<Arc<User>> {
        let u = self.get(name)?;
        let ok = u.data.read().accepts(pass);
        ok.then_some(u)
    }

    fn pubsub_all(&self) -> bool {
        self.pubsub_all.load(Ordering::Relaxed)
    }

    /// Applies `rules` to user `name` (created if missing) all or nothing, as `ACL SETUSER`:
    /// selectors spread over several arguments are joined first. Returns Redis's error text,
    /// and the channel patterns the user lost (subscribers to revoked channels must go) as
    /// `Some(None)`... see [`SetOutcome`].
    pub fn set_user(&self, name: &[u8], rules: &[Bytes]) -> Result<SetOutcome, String> {
        let merged = merge_selectors(rules).map_err(|i| {
            format!("Unmatched parenthesis in acl selector starting at '{}'.", String::from_utf8_lossy(&rules[i]))
        })?;
        let existing = self.get(name);
        let mut data = match &existing {
            Some(u) => u.data(),
            None => UserData::new(self.pubsub_all()),
        };
        for op in &merged {
            data.apply(op, self.meta(), self.pubsub_all()).map_err(|e| {
                format!("Error in ACL SETUSER modifier '{}': {}", String::from_utf8_lossy(op), e.text())
            })?;
        }
        let mut revoked = None;
        match existing {
            Some(u) => {
                let before = u.data();
                if let Some(new) = data.channel_list()
                    && (before.selectors.iter().any(|s| s.allchannels)
                        || before.selectors.iter().flat_map(|s| s.channels.iter()).any(|c| !new.contains(c)))
                {
                    revoked = Some((u.clone(), new));
                }
                u.set(data);
            }
            None => {
                let u = Arc::new(User::new(Bytes::copy_from_slice(name), data));
                self.users.write().insert(u.name.clone(), u);
            }
        }
        Ok(SetOutcome { revoked })
    }

    /// Deletes users; returns those deleted (their clients must be disconnected).
    pub fn delete(&self, names: &[Bytes]) -> Vec<Arc<User>> {
        let mut users = self.users.write();
        let mut gone = Vec::new();
        for n in names {
            if let Some(u) = users.remove(&n[..]) {
                u.deleted.store(true, Ordering::Relaxed);
                gone.push(u);
            }
        }
        gone
    }

    /// Checks whether `user` may run `cmd` with `args` (Redis's `ACLCheckAllUserCommandPerm`).
    pub fn check<R: Runner>(&self, user: &User, cmd: &Command<R>, args: &[Bytes]) -> Result<(), Denied> {
        self.check_rules(&user.data.read(), cmd, args)
    }

    /// [`Acl::check`] against rules already read.
    pub fn check_rules<R: Runner>(&self, data: &UserData, cmd: &Command<R>, args: &[Bytes]) -> Result<(), Denied> {
        let Some(meta) = self.meta() else { return Ok(()) };
        let mut keys = None;
        let mut worst: Option<Denied> = None;
        for s in &data.selectors {
            let d = match s.check(meta, cmd, args, &mut keys) {
                Verdict::Ok => return Ok(()),
                Verdict::DeniedCmd => Denied::Cmd,
                Verdict::DeniedKey(i) => Denied::Key(i),
                Verdict::DeniedChannel(i) => Denied::Channel(i),
            };
            if worst.is_none_or(|w| d.rank() > w.rank()) {
                worst = Some(d);
            }
        }
        Err(worst.unwrap_or(Denied::Cmd))
    }

    /// Whether `user` may run `cmd` and reach every key with `flags`' access (SORT's BY/GET;
    /// Redis's `ACLUserCheckCmdWithUnrestrictedKeyAccess`).
    pub fn check_all_keys<R: Runner>(&self, user: &User, cmd: &Command<R>, args: &[Bytes], flags: u32) -> bool {
        let Some(meta) = self.meta() else { return true };
        let data = user.data.read();
        let mut keys = None;
        data.selectors.iter().any(|s| s.check(meta, cmd, args, &mut keys) == Verdict::Ok && s.all_keys_for(flags))
    }

    /// Whether `user` may use `channel` (Redis's `ACLUserCheckChannelPerm`).
    pub fn check_channel(&self, user: &User, channel: &[u8], is_pattern: bool) -> bool {
        user.data.read().selectors.iter().any(|s| s.channel_ok(channel, is_pattern))
    }

    /// Adds a log entry (Redis's `addACLLogEntry`), merging with a similar one of the last 10
    /// within 60 seconds, and counts it in INFO stats.
    #[allow(clippy::too_many_arguments)]
    pub fn log(
        &self,
        reason: Reason,
        context: Context,
        object: Bytes,
        username: Bytes,
        info: &crate::clients::ClientInfo,
        now_ms: u64,
        unix_ms: i64,
        max_len: usize,
    ) {
        match reason {
            Reason::Auth => &self.denied_auth,
            Reason::Command => &self.denied_cmd,
            Reason::Key => &self.denied_key,
            Reason::Channel => &self.denied_channel,
        }
        .fetch_add(1, Ordering::Relaxed);
        let cinfo = self.client_line.get().map(|f| f(info, now_ms)).unwrap_or_default();
        let mut log = self.log.lock();
        let similar = log.iter().take(10).position(|e| {
            e.reason == reason
                && e.context == context
                && (e.ctime - unix_ms).abs() <= 60_000
                && e.object == object
                && e.username == username
        });
        if let Some(i) = similar {
            let mut e = log.remove(i).unwrap_or_else(|| unreachable!("index from position"));
            e.cinfo = cinfo;
            e.ctime = unix_ms;
            e.count += 1;
            log.push_front(e);
        } else {
            log.push_front(LogEntry { count: 1, reason, context, object, username, ctime: unix_ms, cinfo });
            log.truncate(max_len);
        }
    }

    /// The newest `count` log entries.
    pub fn log_entries(&self, count: usize) -> Vec<LogEntry> {
        self.log.lock().iter().take(count).cloned().collect()
    }

    /// ACL LOG RESET.
    pub fn log_reset(&self) {
        self.log.lock().clear();
    }

    /// Every user as ACL LIST and the ACL file write it (`user <name> <rules>`).
    pub fn list_lines(&self) -> Vec<Vec<u8>> {
        let Some(meta) = self.meta() else { return Vec::new() };
        self.users()
            .iter()
            .map(|u| {
                let mut line = b"user ".to_vec();
                line.extend_from_slice(&u.name);
                line.push(b' ');
                line.extend_from_slice(&u.data.read().describe(meta));
                line
            })
            .collect()
    }

    /// Redis's `ACLUpdateDefaultUserPassword` (`requirepass`): empty means nopass.
    fn set_default_password(default: &User, pass: &[u8]) {
        let mut d = default.data();
        let _ = d.apply(b"resetpass", None, false);
        if pass.is_empty() {
            let _ = d.apply(b"nopass", None, false);
        } else {
            let mut op = b">".to_vec();
            op.extend_from_slice(pass);
            let _ = d.apply(&op, None, false);
        }
        default.set(d);
    }

    /// Replaces every user with those `lines` describe (ACL LOAD, `aclfile` at startup: Redis's
    /// `ACLLoadFromFile`), all or nothing. `file` names the file in errors. Returns the users that
    /// no longer exist (or were replaced) so their clients can be disconnected.
    pub fn load(&self, file: &str, text: &[u8]) -> Result<Vec<Arc<User>>, String> {
        let mut errors = String::new();
        let mut fresh: BTreeMap<Bytes, UserData> = BTreeMap::new();
        for (i, raw) in text.split(|b| *b == b'\n').enumerate() {
            let linenum = i + 1;
            let line = trim(raw, b" \t\r\n");
            if line.is_empty() {
                continue;
            }
            let argv: Vec<&[u8]> = line.split(|b| *b == b' ').collect();
            if argv[0] != b"user" || argv.len() < 2 {
                errors.push_str(&format!("{file}:{linenum} should start with user keyword followed by the username. "));
                continue;
            }
            let name = argv[1];
            if has_spaces(name) {
                errors.push_str(&format!(
                    "'{file}:{linenum}: username '{}' contains invalid characters. ",
                    String::from_utf8_lossy(name)
                ));
                continue;
            }
            if fresh.contains_key(name) {
                errors.push_str(&format!(
                    "WARNING: Duplicate user '{}' found on line {linenum}. ",
                    String::from_utf8_lossy(name)
                ));
                continue;
            }
            let mut data = UserData::new(self.pubsub_all());
            let rules: Vec<Bytes> = argv[2..].iter().map(|a| Bytes::copy_from_slice(a)).collect();
            let merged = match merge_selectors(&rules) {
                Ok(m) => m,
                Err(_) => {
                    errors.push_str(&format!("{file}:{linenum}: Unmatched parenthesis in selector definition."));
                    Vec::new()
                }
            };
            let mut syntax_error = false;
            for op in &merged {
                let op = trim(op, b"\t\r\n");
                if let Err(e) = data.apply(op, self.meta(), self.pubsub_all()) {
                    if e == RuleError::UnknownCommand {
                        errors.push_str(&format!(
                            "{file}:{linenum}: Error in applying operation '{}': {}. ",
                            String::from_utf8_lossy(op),
                            e.text()
                        ));
                    } else if !syntax_error {
                        errors.push_str(&format!("{file}:{linenum}: {}. ", e.text()));
                        syntax_error = true;
                    }
                }
            }
            fresh.insert(Bytes::copy_from_slice(name), data);
        }
        if !errors.is_empty() {
            errors.push_str("WARNING: ACL errors detected, no change to the previously active ACL rules was performed");
            return Err(errors);
        }
        let default_data = match fresh.remove(&b"default"[..]) {
            Some(d) => d,
            None => Acl::default_user().data(),
        };
        self.default.set(default_data);
        let mut users = self.users.write();
        let old = std::mem::take(&mut *users);
        users.insert(self.default.name.clone(), self.default.clone());
        for (name, data) in fresh {
            users.insert(name.clone(), Arc::new(User::new(name, data)));
        }
        let gone: Vec<Arc<User>> = old.into_values().filter(|u| !Arc::ptr_eq(u, &self.default)).collect();
        for u in &gone {
            u.deleted.store(true, Ordering::Relaxed);
        }
        Ok(gone)
    }
}

/// Validates a config file's `user <name> <rules...>` line (Redis's `ACLAppendUserForLoading`):
/// unknown commands pass here (Redis resolves them once modules are loaded), other errors come back
/// with the index Redis reports (of the merged rules, applied to the line's words as Redis does).
pub fn validate_user_line(rules: &[Bytes]) -> Result<(), (usize, &'static str)> {
    let merged = merge_selectors(rules).map_err(|i| (i, "Syntax error"))?;
    let mut d = UserData::new(false);
    for (j, op) in merged.iter().enumerate() {
        match d.apply(op, None, false) {
            Ok(()) | Err(RuleError::UnknownCommand) => {}
            Err(e) => return Err((j, e.text())),
        }
    }
    Ok(())
}

impl Acl {
    /// Creates the users of the config file's `user` lines (Redis's `ACLLoadConfiguredUsers`);
    /// `default` is reset first. Err holds the log line.
    pub fn load_configured(&self, lines: &[Vec<Bytes>]) -> Result<(), String> {
        for line in lines {
            let (name, rules) = line.split_first().ok_or_else(String::new)?;
            if has_spaces(name) {
                return Err("Spaces not allowed in ACL usernames".into());
            }
            let merged = merge_selectors(rules).map_err(|_| "Unmatched parenthesis".to_string())?;
            let mut data = UserData::new(self.pubsub_all());
            if &name[..] == b"default" {
                let _ = data.apply(b"reset", self.meta(), self.pubsub_all());
            }
            for op in &merged {
                data.apply(op, self.meta(), self.pubsub_all()).map_err(|e| {
                    format!(
                        "Error loading ACL rule '{}' for the user named '{}': {}",
                        String::from_utf8_lossy(op),
                        String::from_utf8_lossy(name),
                        e.text()
                    )
                })?;
            }
            if &name[..] == b"default" {
                self.default.set(data);
            } else {
                let u = Arc::new(User::new(name.clone(), data));
                self.users.write().insert(name.clone(), u);
            }
        }
        Ok(())
    }
}

/// What [`Acl::set_user`] changed beyond the user.
pub struct SetOutcome {
    /// The user lost channel permissions: its pub/sub clients subscribed to a channel outside
    /// these patterns must be disconnected.
    pub revoked: Option<(Arc<User>, Vec<Vec<u8>>)>,
}

impl SetOutcome {
    /// Whether a subscriber with `channels` (and `patterns`) must go (Redis's
    /// `ACLKillPubsubClientsIfNeeded`).
    pub fn kills(allowed: &[Vec<u8>], channels: &[Bytes], patterns: &[Bytes]) -> bool {
        patterns.iter().any(|p| !allowed.iter().any(|a| a[..] == p[..]))
            || channels.iter().any(|c| !allowed.iter().any(|a| crate::glob::matches(a, c, false)))
    }
}

fn trim<'a>(mut s: &'a [u8], set: &[u8]) -> &'a [u8] {
    while let Some((f, rest)) = s.split_first()
        && set.contains(f)
    {
        s = rest;
    }
    while let Some((l, rest)) = s.split_last()
        && set.contains(l)
    {
        s = rest;
    }
    s
}

/// Redis's `ACLMergeSelectorArguments`: `(` ... `)` spread over arguments become one; Err holds
/// the index of an unclosed opening.
pub fn merge_selectors(args: &[Bytes]) -> Result<Vec<Vec<u8>>, usize> {
    let mut out = Vec::new();
    let mut open: Option<(usize, Vec<u8>)> = None;
    for (j, a) in args.iter().enumerate() {
        if open.is_none() && a.first() == Some(&b'(') && a.last() != Some(&b')') {
            open = Some((j, a.to_vec()));
            continue;
        }
        if let Some((_, sel)) = open.as_mut() {
            sel.push(b' ');
            sel.extend_from_slice(a);
            if a.last() == Some(&b')') {
                out.push(open.take().map(|(_, s)| s).unwrap_or_default());
            }
            continue;
        }
        out.push(a.to_vec());
    }
    match open {
        Some((j, _)) => Err(j),
        None => Ok(out),
    }
}

impl crate::config::DefaultPassword for User {
    fn set_password(&self, pass: &[u8]) -> bool {
        Acl::set_default_password(self, pass);
        !self.nopass_enabled()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hashes_are_sha256_hex() {
        assert_eq!(hash_password(b"foo"), "2c26b46b68ffc68ff99b453c1d30413413422d706483bfa0f98a5e886266e7ae");
    }

    #[test]
    fn selectors_spread_over_arguments_merge() {
        let a: Vec<Bytes> = ["on", "(~x", "+get)", "(+set)"].iter().map(|s| Bytes::from_static(s.as_bytes())).collect();
        assert_eq!(merge_selectors(&a).unwrap(), vec![b"on".to_vec(), b"(~x +get)".to_vec(), b"(+set)".to_vec()]);
        let bad: Vec<Bytes> = ["(~x", "+get"].iter().map(|s| Bytes::from_static(s.as_bytes())).collect();
        assert_eq!(merge_selectors(&bad), Err(0));
    }

    #[test]
    fn key_patterns_parse_like_redis() {
        let mut s = Selector::new(true, false);
        s.apply(b"%R~r*", None).unwrap();
        s.apply(b"%W~w*", None).unwrap();
        s.apply(b"%RW~rw*", None).unwrap();
        s.apply(b"%R~w*", None).unwrap();
        assert_eq!(String::from_utf8(s.describe_keys()).unwrap(), "%R~r* ~w* ~rw*");
        assert_eq!(s.apply(b"%X~a", None), Err(RuleError::Syntax));
        assert!(s.key_ok(b"r1", key_flags::ACCESS));
        assert!(!s.key_ok(b"r1", key_flags::UPDATE));
        s.apply(b"allkeys", None).unwrap();
        assert_eq!(s.apply(b"~foo", None), Err(RuleError::KeyAfterAll));
    }

    use crate::testkit::TestServer;

    /// Rules in, descriptions out, error texts: what redis-server 7.0.15 answers.
    #[test]
    fn setuser_getuser_list_as_redis() {
        let ts = TestServer::new();
        ts.transcript(
            r#"
            > ACL SETUSER newuser on >pass1 ~obj:* &chan +get +set -@all +@string
            +OK
            > ACL GETUSER newuser
            {"flags": ~["on"], "passwords": ["e6c3da5b206634d7f3f3586d747ffdb36b5c675757b380c6a5fe5c570c714349"], "commands": "-@all +@string", "keys": "~obj:*", "channels": "&chan", "selectors": []}
            > ACL SETUSER u2 on nopass %R~r* %W~w* ~x +@all -debug "(+get ~sel*)"
            +OK
            > ACL LIST
            ["user default on nopass ~* &* +@all", "user newuser on #e6c3da5b206634d7f3f3586d747ffdb36b5c675757b380c6a5fe5c570c714349 ~obj:* resetchannels &chan -@all +@string", "user u2 on nopass %R~r* %W~w* ~x resetchannels +@all -debug (~sel* resetchannels -@all +get)"]
            > ACL DRYRUN u2 set r1 v
            "This user has no permissions to access the 'r1' key"
            > ACL DRYRUN u2 get sel1
            +OK
            > ACL DRYRUN u2 debug sleep 0
            "This user has no permissions to run the 'debug' command"
            > ACL SETUSER bad (~x
            -ERR Unmatched parenthesis in acl selector starting at '(~x'.
            > ACL SETUSER bad >x <y
            -ERR Error in ACL SETUSER modifier '<y': The password you are trying to remove from the user does not exist
            > ACL SETUSER bad #abc
            -ERR Error in ACL SETUSER modifier '#abc': The password hash must be exactly 64 characters and contain only lowercase hexadecimal characters
            > ACL SETUSER bad +config|get|x
            -ERR Error in ACL SETUSER modifier '+config|get|x': Allowing first-arg of a subcommand is not supported
            > ACL SETUSER bad +nosuch
            -ERR Error in ACL SETUSER modifier '+nosuch': Unknown command or category name in ACL
            > ACL SETUSER bad ~x allkeys ~y
            -ERR Error in ACL SETUSER modifier '~y': Adding a pattern after the * pattern (or the 'allkeys' flag) is not valid and does not have any effect. Try 'resetkeys' to start with an empty list of patterns
            > ACL SETUSER sel1 on nopass -@all +select|0 &foo* ~a %R~b
            +OK
            > ACL GETUSER sel1
            {"flags": ~["on", "nopass"], "passwords": [], "commands": "-@all +select|0", "keys": "~a %R~b", "channels": "&foo*", "selectors": []}
            > ACL DRYRUN u2 nosuchcmd
            -ERR Command 'nosuchcmd' not found
            > ACL DRYRUN u2 get
            -ERR wrong number of arguments for 'get' command
            > ACL DRYRUN u2 config nosuch
            -ERR Command 'config' not found
            > ACL SETUSER ps on nopass +@all ~* resetchannels &news.*
            +OK
            > ACL DRYRUN ps publish other hi
            "This user has no permissions to access the 'other' channel"
            > ACL DRYRUN ps psubscribe news.*
            +OK
            > ACL DRYRUN ps psubscribe news.x
            "This user has no permissions to access the 'news.x' channel"
            > ACL SETUSER cats on nopass -@all +@hash +@set -hdel
            +OK
            > ACL GETUSER cats
            {"flags": ~["on", "nopass"], "passwords": [], "commands": "-@all +@set +@hash -hdel", "keys": "", "channels": "", "selectors": []}
            > ACL DELUSER default
            -ERR The 'default' user cannot be removed
            > ACL CAT nosuch
            -ERR Unknown category 'nosuch'
            > ACL GENPASS 0
            -ERR ACL GENPASS argument must be the number of bits for the output password, a positive number up to 4096
            > ACL LOAD
            -ERR This Redis instance is not configured to use an ACL file. You may want to specify users via the ACL SETUSER command and then issue a CONFIG REWRITE (assuming you have a Redis configuration file set) in order to store users in the Redis configuration.
            "#,
        );
    }

    /// A restricted user is refused commands, keys and channels on every route: direct, queued in
    /// MULTI (and at EXEC when the rules changed meanwhile), from a script, SORT's patterns, FENCED.
    /// A `literal*` pattern's prefix comparison answers as the glob matcher does.
    #[test]
    fn prefix_patterns_match_as_globs() {
        for pat in ["key:*", "*", "a*", "k\\*x*", "k?*", "k[a]*", "ab", "a*b*"] {
            let p = KeyPattern::new(pat.as_bytes().to_vec(), READ);
            for key in ["key:1", "key:", "ke", "", "a", "ab", "abc", "k*x1", "kax", "b"] {
                assert_eq!(
                    p.matches(key.as_bytes()),
                    crate::glob::matches(pat.as_bytes(), key.as_bytes(), false),
                    "{pat} vs {key}"
                );
            }
        }
    }

    /// A client's copy of its user's rules follows every change of the user, at its next command.
    #[test]
    fn rule_changes_reach_authenticated_clients_at_once() {
        let ts = TestServer::new();
        let mut admin = ts.client();
        admin.run("ACL SETUSER carol on >pw ~c:* +get");
        let mut carol = ts.client();
        carol.run("AUTH carol pw");
        carol.transcript("> GET c:1\n(nil)");
        admin.run("ACL SETUSER carol -get");
        carol.transcript("> GET c:1\n-NOPERM this user has no permissions to run the 'get' command");
        admin.run("ACL SETUSER carol +get resetkeys ~d:*");
        carol.transcript(
            "> GET c:1\n-NOPERM this user has no permissions to access one of the keys used as arguments\n> GET d:1\n(nil)",
        );
        // Another user's rules, after AUTH as that user.
        admin.run("ACL SETUSER dave on >pw ~c:* +get");
        carol.run("AUTH dave pw");
        carol.transcript("> GET c:1\n(nil)");
    }

    /// Latch's own category `@latch-lock` holds the native lock commands.
    #[test]
    fn native_locks_have_their_own_category() {
        let ts = TestServer::new();
        let mut admin = ts.client();
        let cats = admin.run("ACL CAT");
        assert!(cats.ends_with("\"scripting\", \"latch-lock\"]"), "{cats}");
        let members = admin.run("ACL CAT latch-lock");
        for c in ["\"lock\"", "\"unlock\"", "\"lockextend\"", "\"fenced\""] {
            assert!(members.contains(c), "{c} in {members}");
        }
        admin.run("ACL SETUSER app on >pw ~* +@all -@latch-lock");
        let mut app = ts.client();
        app.run("AUTH app pw");
        app.transcript(
            r#"
            > LOCK res owner 1000
            -NOPERM this user has no permissions to run the 'lock' command
            > SET res x
            +OK
            "#,
        );
    }

    #[test]
    fn restricted_user_is_checked_on_every_route() {
        let ts = TestServer::new();
        let mut admin = ts.client();
        admin
            .run("ACL SETUSER bob on >pw ~bob:* &news -@all +get +set +multi +exec +eval +sort +publish +fenced +lock");
        let mut bob = ts.client();
        bob.transcript(
            r#"
            > AUTH bob wrong
            -WRONGPASS invalid username-password pair or user is disabled.
            > AUTH bob pw
            +OK
            > ACL WHOAMI
            -NOPERM this user has no permissions to run the 'acl|whoami' command
            > SET bob:1 x
            +OK
            > SET alice:1 x
            -NOPERM this user has no permissions to access one of the keys used as arguments
            > DEL bob:1
            -NOPERM this user has no permissions to run the 'del' command
            > PUBLISH other m
            -NOPERM this user has no permissions to access one of the channels used as arguments
            > PUBLISH news m
            :0
            > EVAL "return redis.call('get', 'alice:1')" 0
            -ERR The user executing the script can't access at least one of the keys mentioned in the command arguments script: d680ceb8f2b763c0e4db7528370a2e467cc6a49f, on @user_script:1.
            > SORT bob:list BY alice:*
            -ERR BY option of SORT denied due to insufficient ACL permissions.
            > SORT bob:list GET #
            -ERR GET option of SORT denied due to insufficient ACL permissions.
            > MULTI
            +OK
            > GET alice:1
            -NOPERM this user has no permissions to access one of the keys used as arguments
            > EXEC
            -EXECABORT Transaction discarded because of previous errors.
            > MULTI
            +OK
            > GET bob:1
            +QUEUED
            "#,
        );
        admin.run("ACL SETUSER bob -get");
        bob.transcript(
            r#"
            > EXEC
            [-NOPERM ACLs rules changed between the moment the transaction was accumulated and the EXEC call. This command is no longer allowed for the following reason: no permission to execute the command or subcommand]
            "#,
        );
        let token = bob.run("LOCK bob:l owner 1000");
        let token = token.trim_start_matches(':');
        assert_eq!(
            bob.run(&format!("FENCED bob:l {token} SET alice:1 y")),
            "-NOPERM this user has no permissions to access one of the keys used as arguments"
        );
        assert_eq!(bob.run(&format!("FENCED bob:l {token} SET bob:2 y")), "+OK");
        let log = admin.run("ACL LOG");
        assert!(log.contains("\"reason\": \"key\"") && log.contains("\"context\": \"lua\""), "{log}");
        assert!(log.contains("\"reason\": \"auth\"") && log.contains("\"object\": \"AUTH\""), "{log}");
        let info = admin.run("INFO stats");
        assert!(info.contains("acl_access_denied_auth:1"), "{info}");
        // CLIENT LIST shows the real user; deleting it disconnects its clients.
        assert!(admin.run("CLIENT LIST").contains("user=bob"));
        assert_eq!(admin.run("ACL DELUSER bob nobody"), ":1");
        assert!(bob.client.info.killed.load(Ordering::Relaxed));
    }

    /// `requirepass` is the default user's password; a default user with rules stays checked.
    #[test]
    fn requirepass_drives_the_default_user() {
        let ts = TestServer::new();
        let mut c = ts.client();
        c.run("CONFIG SET requirepass secret");
        assert!(c.run("ACL GETUSER default").contains("\"flags\": ~[\"on\"]"));
        let mut d = ts.client();
        d.transcript(
            r#"
            > GET x
            -NOAUTH Authentication required.
            > AUTH default secret
            +OK
            > ACL SETUSER default resetkeys ~a*
            +OK
            > GET b
            -NOPERM this user has no permissions to access one of the keys used as arguments
            > CONFIG SET requirepass ""
            +OK
            "#,
        );
        assert!(c.run("ACL LIST").contains("user default on nopass ~a* &* +@all"));
    }
}
