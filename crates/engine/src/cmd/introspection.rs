//! COMMAND and its subcommands: the command table as clients see it (`COMMAND`, `COMMAND INFO`,
//! `COMMAND DOCS`, `COMMAND COUNT`, `COMMAND LIST`, `COMMAND GETKEYS[ANDFLAGS]`).
//!
//! Most of a reply derives from the table entry: flags, arity, the legacy key range and a key spec
//! from [`Keys`], ACL categories from the flags (as Redis's `setImplicitACLCategories`) and the
//! group, arguments from the `syntax` string ([`crate::docs`]). What the table cannot carry
//! (explicit ACL categories, tips, key-spec access flags, history, doc flags) comes from [`META`], a
//! digest of Redis 7.0.15's `src/commands/*.json`.

use super::base::BASE;
use super::server::help_reply;
use crate::command::{Flags, Keys};
use crate::ctx::{Command, Ctx};
use crate::docs::{Arg, ArgType};
use bytes::Bytes;
use resp::Frame;

const FLAGS: Flags = Flags::LOADING.or(Flags::STALE);

/// Table entries.
pub static COMMANDS: &[Command] = &[Command {
    name: "command",
    arity: -1,
    flags: FLAGS,
    group: crate::command::Group::Server,
    handler: command_all,
    subcommands: SUBCOMMANDS,
    ..BASE
}];

static SUBCOMMANDS: &[Command] = &[
    Command {
        name: "command|count",
        arity: 2,
        flags: FLAGS,
        group: crate::command::Group::Server,
        handler: command_count,
        ..BASE
    },
    Command {
        name: "command|docs",
        arity: -2,
        flags: FLAGS,
        group: crate::command::Group::Server,
        handler: command_docs,
        ..BASE
    },
    Command {
        name: "command|getkeys",
        arity: -4,
        flags: FLAGS,
        group: crate::command::Group::Server,
        handler: command_getkeys,
        ..BASE
    },
    Command {
        name: "command|getkeysandflags",
        arity: -4,
        flags: FLAGS,
        group: crate::command::Group::Server,
        handler: command_getkeysandflags,
        ..BASE
    },
    Command {
        name: "command|help",
        arity: 2,
        flags: FLAGS,
        group: crate::command::Group::Server,
        handler: command_help,
        ..BASE
    },
    Command {
        name: "command|info",
        arity: -2,
        flags: FLAGS,
        group: crate::command::Group::Server,
        handler: command_info,
        ..BASE
    },
    Command {
        name: "command|list",
        arity: -2,
        flags: FLAGS,
        group: crate::command::Group::Server,
        handler: command_list,
        ..BASE
    },
];

/// Redis 7.0.15's own metadata for the commands it has: what its `COMMAND` (element by element) and
/// `COMMAND DOCS` answer, generated into `crates/engine/data/` by `cargo run -p xtask --
/// redis-commands` (whose test fails when the file is stale). COMMAND INFO and COMMAND DOCS answer
/// from it for every command Redis has, so the two agree with Redis by construction; what Latch
/// itself enforces (arity, flags, key positions) is checked against it by this module's tests.
/// Commands Redis does not have are described by their table rows.
pub struct RedisMeta {
    /// The `COMMAND INFO` entry.
    pub info: Frame,
    /// The `COMMAND DOCS` map.
    pub docs: Frame,
}

/// The Redis metadata of a command or subcommand (`config|get`) by full name.
pub fn redis_meta(name: &str) -> Option<&'static RedisMeta> {
    static DATA: std::sync::OnceLock<std::collections::HashMap<String, RedisMeta>> = std::sync::OnceLock::new();
    DATA.get_or_init(|| {
        let raw: &[u8] = include_bytes!("../../data/redis-7.0.15-commands.resp");
        let mut buf = resp::BytesMut::from(raw);
        let Ok(Some(Frame::Map(entries))) = resp::decode_reply(&mut buf) else {
            panic!("crates/engine/data/redis-7.0.15-commands.resp is not a RESP3 map (regenerate it with xtask)")
        };
        let mut out = std::collections::HashMap::new();
        for (_, entry) in entries {
            if let Frame::Array(mut pair) = entry
                && pair.len() == 2
            {
                let docs = pair.pop().unwrap_or(Frame::Null);
                let info = pair.pop().unwrap_or(Frame::Null);
                collect(info, docs, &mut out);
            }
        }
        out
    })
    .get(name)
}

/// Indexes an INFO entry and its DOCS map, subcommands included.
fn collect(info: Frame, docs: Frame, out: &mut std::collections::HashMap<String, RedisMeta>) {
    let Frame::Array(fields) = &info else { return };
    let Some(name) = fields.first().and_then(frame_text) else { return };
    if let Some(Frame::Array(subs)) = fields.get(9) {
        let sub_docs = map_get(&docs, "subcommands");
        for sub in subs.clone() {
            let sub_name = match &sub {
                Frame::Array(f) => f.first().and_then(frame_text).unwrap_or_default(),
                _ => String::new(),
            };
            let d = sub_docs.and_then(|m| map_get(m, &sub_name)).cloned().unwrap_or(Frame::Null);
            collect(sub, d, out);
        }
    }
    out.insert(name, RedisMeta { info, docs });
}

fn frame_text(f: &Frame) -> Option<String> {
    match f {
        Frame::Bulk(b) | Frame::Simple(b) => Some(String::from_utf8_lossy(b).into_owned()),
        _ => None,
    }
}

/// The value under `key` in a map frame.
fn map_get<'f>(m: &'f Frame, key: &str) -> Option<&'f Frame> {
    match m {
        Frame::Map(pairs) => pairs.iter().find(|(k, _)| frame_text(k).as_deref() == Some(key)).map(|(_, v)| v),
        _ => None,
    }
}

/// The strings of a set or array frame.
fn texts(f: Option<&Frame>) -> Vec<String> {
    match f {
        Some(Frame::Set(v) | Frame::Array(v)) => v.iter().filter_map(frame_text).collect(),
        _ => Vec::new(),
    }
}

/// The ACL categories of a command: implicit ones from its flags, explicit ones from Redis's
/// metadata or, for commands Redis does not have, from its group. Returned in Redis's order.
pub fn acl_categories(c: &Command) -> Vec<String> {
    if let Some(m) = redis_meta(c.name)
        && let Frame::Array(f) = &m.info
    {
        return texts(f.get(6));
    }
    let mut set: Vec<&'static str> = Vec::new();
    set.extend(c.group.acl_category());
    let f = c.flags;
    if f.has(Flags::WRITE) {
        set.push("@write");
    }
    if f.has(Flags::READONLY) && !set.contains(&"@scripting") {
        set.push("@read");
    }
    if f.has(Flags::ADMIN) {
        set.push("@admin");
        set.push("@dangerous");
    }
    if f.has(Flags::PUBSUB) {
        set.push("@pubsub");
    }
    if f.has(Flags::FAST) {
        set.push("@fast");
    }
    if f.has(Flags::BLOCKING) {
        set.push("@blocking");
    }
    if !set.contains(&"@fast") {
        set.push("@slow");
    }
    const ORDER: &[&str] = &[
        "@keyspace",
        "@read",
        "@write",
        "@set",
        "@sortedset",
        "@list",
        "@hash",
        "@string",
        "@bitmap",
        "@hyperloglog",
        "@geo",
        "@stream",
        "@pubsub",
        "@admin",
        "@fast",
        "@slow",
        "@blocking",
        "@dangerous",
        "@connection",
        "@transaction",
        "@scripting",
        "@latch-lock",
    ];
    ORDER.iter().filter(|o| set.contains(o)).map(|o| o.to_string()).collect()
}

/// The flag names COMMAND reports, in Redis's order (`may_replicate` is hidden, as in Redis;
/// `movablekeys` is derived from custom key finders).
pub fn flag_names(c: &Command) -> Vec<&'static str> {
    const ORDER: &[(Flags, &str)] = &[
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
        (Flags::NO_MANDATORY_KEYS, "no_mandatory_keys"),
        (Flags::NO_ASYNC_LOADING, "no_async_loading"),
        (Flags::NO_MULTI, "no_multi"),
    ];
    let mut v: Vec<&str> = ORDER.iter().filter(|(f, _)| c.flags.has(*f)).map(|(_, n)| *n).collect();
    if matches!(c.keys, Keys::Custom { .. }) {
        v.push("movablekeys");
    }
    if c.flags.has(Flags::ALLOW_BUSY) {
        v.push("allow_busy");
    }
    v
}

/// The key specs of Redis's COMMAND INFO for `name` (None for commands Redis does not have).
fn redis_key_specs(name: &str) -> Option<&'static [Frame]> {
    match &redis_meta(name)?.info {
        Frame::Array(f) => match f.get(8) {
            Some(Frame::Set(specs) | Frame::Array(specs)) => Some(specs),
            _ => None,
        },
        _ => None,
    }
}

/// Access flags of the command's key spec, as COMMAND prints them (`RO`, `access`...).
fn key_flags(c: &Command) -> Vec<String> {
    if let Some(first) = redis_key_specs(c.name).and_then(|specs| specs.first()) {
        return texts(map_get(first, "flags"));
    }
    let raw: &[&str] = if c.flags.has(Flags::READONLY) {
        &["RO", "access"]
    } else if c.flags.has(Flags::WRITE) {
        &["RW", "update"]
    } else {
        &["RO"]
    };
    raw.iter().map(|f| f.to_string()).collect()
}

fn bulk(s: &str) -> Frame {
    Frame::bulk(Bytes::copy_from_slice(s.as_bytes()))
}

fn map(pairs: Vec<(&str, Frame)>) -> Frame {
    Frame::Map(pairs.into_iter().map(|(k, v)| (bulk(k), v)).collect())
}

fn status_set(v: impl IntoIterator<Item = impl AsRef<str>>) -> Frame {
    Frame::Set(v.into_iter().map(|s| Frame::simple(s.as_ref())).collect())
}

/// The key specs derived from the table's [`Keys`].
fn key_specs(c: &Command) -> Vec<Frame> {
    let (first, last, step) = match c.keys {
        Keys::None => return Vec::new(),
        Keys::Range { first, last, step } | Keys::Custom { first, last, step, .. } => (first, last, step),
    };
    let flags = ("flags", status_set(key_flags(c)));
    if first <= 0 {
        return vec![map(vec![
            flags,
            ("begin_search", map(vec![("type", bulk("unknown")), ("spec", Frame::Map(Vec::new()))])),
            ("find_keys", map(vec![("type", bulk("unknown")), ("spec", Frame::Map(Vec::new()))])),
        ])];
    }
    let lastkey = if last < 0 { last } else { last - first };
    vec![map(vec![
        flags,
        (
            "begin_search",
            map(vec![("type", bulk("index")), ("spec", map(vec![("index", Frame::Integer(first as i64))]))]),
        ),
        (
            "find_keys",
            map(vec![
                ("type", bulk("range")),
                (
                    "spec",
                    map(vec![
                        ("lastkey", Frame::Integer(lastkey as i64)),
                        ("keystep", Frame::Integer(step as i64)),
                        ("limit", Frame::Integer(0)),
                    ]),
                ),
            ]),
        ),
    ])]
}

/// One command's `COMMAND INFO` reply.
pub fn command_info_frame(c: &Command) -> Frame {
    let subcommands = || {
        if c.subcommands.is_empty() {
            Frame::Set(Vec::new())
        } else {
            Frame::Array(c.subcommands.iter().map(command_info_frame).collect())
        }
    };
    if let Some(m) = redis_meta(c.name)
        && let Frame::Array(mut f) = m.info.clone()
        && f.len() == 10
    {
        // Redis's entry, with the subcommands this server has (in its table's order).
        f[9] = subcommands();
        return Frame::Array(f);
    }
    let (first, last, step) = c.keys.legacy();
    Frame::Array(vec![
        bulk(c.name),
        Frame::Integer(c.arity as i64),
        status_set(flag_names(c)),
        Frame::Integer(first as i64),
        Frame::Integer(last as i64),
        Frame::Integer(step as i64),
        status_set(acl_categories(c)),
        Frame::Set(Vec::new()),
        Frame::Set(key_specs(c)),
        subcommands(),
    ])
}

fn arg_frames(args: &[Arg], key_index: &mut i64, nspecs: i64) -> Frame {
    Frame::Array(
        args.iter()
            .map(|a| {
                let mut m = vec![("name", bulk(&a.name)), ("type", bulk(a.typ.as_str()))];
                if a.typ == ArgType::Key && nspecs > 0 {
                    m.push(("key_spec_index", Frame::Integer((*key_index).min(nspecs - 1))));
                    *key_index += 1;
                }
                if let Some(t) = &a.token {
                    m.push(("token", bulk(t)));
                }
                let flags: Vec<&str> =
                    [(a.optional, "optional"), (a.multiple, "multiple"), (a.multiple_token, "multiple_token")]
                        .iter()
                        .filter(|(on, _)| *on)
                        .map(|(_, n)| *n)
                        .collect();
                if !flags.is_empty() {
                    m.push(("flags", status_set(flags)));
                }
                if matches!(a.typ, ArgType::OneOf | ArgType::Block) {
                    m.push(("arguments", arg_frames(&a.args, key_index, nspecs)));
                }
                map(m)
            })
            .collect(),
    )
}

/// One command's `COMMAND DOCS` map.
pub fn command_docs_frame(c: &Command) -> Frame {
    let subcommands = || Frame::Map(c.subcommands.iter().map(|s| (bulk(s.name), command_docs_frame(s))).collect());
    if let Some(m) = redis_meta(c.name)
        && let Frame::Map(mut pairs) = m.docs.clone()
    {
        // Redis's map, with the subcommands this server has (in its table's order).
        pairs.retain(|(k, _)| frame_text(k).as_deref() != Some("subcommands"));
        if !c.subcommands.is_empty() {
            pairs.push((bulk("subcommands"), subcommands()));
        }
        return Frame::Map(pairs);
    }
    let mut m = vec![("summary", bulk(c.summary)), ("since", bulk(c.since)), ("group", bulk(c.group.name()))];
    if !c.complexity.is_empty() {
        m.push(("complexity", bulk(c.complexity)));
    }
    if let Ok(args) = crate::docs::parse(c.syntax)
        && !args.is_empty()
    {
        let nspecs = if matches!(c.keys, Keys::None) { 0 } else { 1 };
        m.push(("arguments", arg_frames(&args, &mut 0, nspecs)));
    }
    if !c.subcommands.is_empty() {
        m.push(("subcommands", subcommands()));
    }
    map(m)
}

fn command_all(ctx: &mut Ctx<'_, '_>) -> Frame {
    Frame::Array(ctx.srv.table.all().iter().map(|c| command_info_frame(c)).collect())
}

fn command_count(ctx: &mut Ctx<'_, '_>) -> Frame {
    Frame::Integer(ctx.srv.table.all().len() as i64)
}

/// Resolves `name` or `container|sub` to a table entry.
fn lookup<'a>(ctx: &Ctx<'a, '_>, name: &[u8]) -> Option<&'static Command> {
    let name = String::from_utf8_lossy(name).to_ascii_lowercase();
    match name.split_once('|') {
        None => ctx.srv.table.get(name.as_bytes()),
        Some((c, _)) => ctx.srv.table.get(c.as_bytes())?.subcommands.iter().find(|s| s.name == name),
    }
}

fn command_info(ctx: &mut Ctx<'_, '_>) -> Frame {
    if ctx.argc() == 2 {
        return command_all(ctx);
    }
    Frame::Array(ctx.args[2..].iter().map(|n| lookup(ctx, n).map_or(Frame::NullArray, command_info_frame)).collect())
}

fn command_docs(ctx: &mut Ctx<'_, '_>) -> Frame {
    let cmds: Vec<&'static Command> = if ctx.argc() == 2 {
        ctx.srv.table.all().to_vec()
    } else {
        ctx.args[2..].iter().filter_map(|n| lookup(ctx, n)).collect()
    };
    Frame::Map(cmds.into_iter().map(|c| (bulk(c.name), command_docs_frame(c))).collect())
}

fn command_list(ctx: &mut Ctx<'_, '_>) -> Frame {
    enum Filter {
        None,
        Module,
        AclCat(String),
        Pattern(Bytes),
    }
    let mut filter = Filter::None;
    let mut i = 2;
    while i < ctx.argc() {
        let more = ctx.argc() - 1 - i;
        if crate::args::eq_ic(ctx.arg(i), "filterby") && more == 2 {
            let kind = ctx.arg(i + 1).to_ascii_lowercase();
            let val = ctx.args[i + 2].clone();
            filter = match kind.as_slice() {
                b"module" => Filter::Module,
                b"aclcat" => Filter::AclCat(format!("@{}", String::from_utf8_lossy(&val).to_ascii_lowercase())),
                b"pattern" => Filter::Pattern(val),
                _ => return crate::error::syntax(),
            };
            i += 3;
        } else {
            return crate::error::syntax();
        }
    }
    let mut out = Vec::new();
    for c in ctx.srv.table.all() {
        for cmd in std::iter::once(*c).chain(c.subcommands.iter()) {
            let keep = match &filter {
                Filter::None => true,
                Filter::Module => false,
                Filter::AclCat(cat) => acl_categories(cmd).contains(cat),
                Filter::Pattern(p) => crate::glob::matches(p, cmd.name.as_bytes(), true),
            };
            if keep {
                out.push(bulk(cmd.name));
            }
        }
    }
    Frame::Array(out)
}

/// The command named by `args[0..]` of COMMAND GETKEYS, with Redis's errors.
fn getkeys_target(ctx: &Ctx<'_, '_>) -> Result<(&'static Command, Vec<usize>), Frame> {
    let args = &ctx.args[2..];
    let Some(base) = ctx.srv.table.get(&args[0]) else {
        return Err(Frame::error("ERR Invalid command specified"));
    };
    let cmd = if !base.subcommands.is_empty() && args.len() >= 2 {
        let sub = args[1].to_ascii_lowercase();
        match base.subcommands.iter().find(|s| s.name.rsplit('|').next().map(str::as_bytes) == Some(&sub[..])) {
            Some(s) => s,
            None => return Err(Frame::error("ERR Invalid command specified")),
        }
    } else {
        base
    };
    if matches!(cmd.keys, Keys::None) {
        return Err(Frame::error("ERR The command has no key arguments"));
    }
    if !cmd.arity_ok(args.len()) {
        return Err(Frame::error("ERR Invalid number of arguments specified for command"));
    }
    let pos = cmd.keys.positions(args);
    if pos.is_empty() && !cmd.flags.has(Flags::NO_MANDATORY_KEYS) {
        return Err(Frame::error("ERR Invalid arguments specified for command"));
    }
    Ok((cmd, pos.into_vec()))
}

fn command_getkeys(ctx: &mut Ctx<'_, '_>) -> Frame {
    match getkeys_target(ctx) {
        Ok((_, pos)) => Frame::Array(pos.into_iter().map(|p| Frame::Bulk(ctx.args[p + 2].clone())).collect()),
        Err(e) => e,
    }
}

fn command_getkeysandflags(ctx: &mut Ctx<'_, '_>) -> Frame {
    let (cmd, pos) = match getkeys_target(ctx) {
        Ok(x) => x,
        Err(e) => return e,
    };
    let args = &ctx.args[2..];
    let owned = |f: &[&str]| f.iter().map(|t| t.to_string()).collect::<Vec<_>>();
    let specs = redis_key_specs(cmd.name);
    let meta = ctx.srv.acl.meta();
    // The flags of SET, BITFIELD and SORT depend on their arguments: Redis asks their getkeys
    // functions (setGetKeys, bitfieldGetKeys, sortGetKeys), as the ACL does.
    let variable = match (cmd.name, meta.and_then(|m| m.uniform_flags_of(cmd, args))) {
        ("set", Some(f)) if f & crate::acl::key_flags::ACCESS != 0 => Some(owned(&["RW", "access", "update"])),
        ("set", Some(_)) => Some(owned(&["OW", "update"])),
        ("bitfield", Some(f)) if f & crate::acl::key_flags::UPDATE == 0 => Some(owned(&["RO", "access"])),
        ("bitfield", Some(_)) => Some(owned(&["RW", "access", "update"])),
        _ => None,
    };
    let found = match meta {
        Some(m) => m.specs_finding(cmd, args, pos),
        None => pos.into_iter().map(|p| (p, Vec::new())).collect(),
    };
    let keys = found
        .into_iter()
        .map(|(p, specs_found)| {
            let flags = if let Some(v) = &variable {
                v.clone()
            } else if cmd.name == "sort" {
                owned(if p == 1 { &["RO", "access"] } else { &["OW", "update"] })
            } else {
                // The first spec that finds the key, as Redis's getKeysUsingKeySpecs reports it.
                match (specs, specs_found.first()) {
                    (Some(s), Some(&i)) if i < s.len() => texts(map_get(&s[i], "flags")),
                    _ => key_flags(cmd),
                }
            };
            Frame::Array(vec![Frame::Bulk(args[p].clone()), status_set(&flags)])
        })
        .collect();
    Frame::Array(keys)
}

fn command_help(_: &mut Ctx<'_, '_>) -> Frame {
    help_reply(
        "COMMAND",
        &[
            "(no subcommand)",
            "    Return details about all Redis commands.",
            "COUNT",
            "    Return the total number of commands in this Redis server.",
            "LIST",
            "    Return a list of all commands in this Redis server.",
            "INFO [<command-name> ...]",
            "    Return details about multiple Redis commands.",
            "    If no command names are given, documentation details for all",
            "    commands are returned.",
            "DOCS [<command-name> ...]",
            "    Return documentation details about multiple Redis commands.",
            "    If no command names are given, documentation details for all",
            "    commands are returned.",
            "GETKEYS <full-command>",
            "    Return the keys from a full Redis command.",
            "GETKEYSANDFLAGS <full-command>",
            "    Return the keys and the access flags from a full Redis command.",
        ],
    )
}

#[cfg(test)]
mod tests {
    /// What Latch enforces for a command Redis has agrees with what COMMAND reports for it (Redis's
    /// own metadata): arity, legacy key positions, and every flag Latch models.
    #[test]
    fn the_table_agrees_with_redis_metadata() {
        let mut wrong = Vec::new();
        let mut checked = 0;
        for c in crate::cmd::table().all() {
            for c in std::iter::once(*c).chain(c.subcommands.iter()) {
                let Some(m) = super::redis_meta(c.name) else { continue };
                let crate::Frame::Array(f) = &m.info else { panic!("{}: INFO is not an array", c.name) };
                checked += 1;
                let int = |i: usize| match &f[i] {
                    crate::Frame::Integer(n) => *n,
                    other => panic!("{}: field {i} is {other:?}", c.name),
                };
                if int(1) != i64::from(c.arity) {
                    wrong.push(format!("{}: arity {} (Redis {})", c.name, c.arity, int(1)));
                }
                let (first, last, step) = c.keys.legacy();
                if (int(3), int(4), int(5)) != (i64::from(first), i64::from(last), i64::from(step)) {
                    wrong.push(format!(
                        "{}: keys {first} {last} {step} (Redis {} {} {})",
                        c.name,
                        int(3),
                        int(4),
                        int(5)
                    ));
                }
                let redis: std::collections::BTreeSet<String> = super::texts(f.get(2)).into_iter().collect();
                let ours: std::collections::BTreeSet<String> =
                    super::flag_names(c).into_iter().map(str::to_string).collect();
                // Redis hides it from COMMAND (and Latch decides it per script).
                const UNMODELLED: &[&str] = &["may_replicate"];
                let redis: std::collections::BTreeSet<String> =
                    redis.into_iter().filter(|f| !UNMODELLED.contains(&f.as_str())).collect();
                if redis != ours {
                    wrong.push(format!("{}: flags {ours:?} (Redis {redis:?})", c.name));
                }
            }
        }
        assert!(checked > 250, "only {checked} commands have Redis metadata");
        assert!(wrong.is_empty(), "{} disagreements:\n{}", wrong.len(), wrong.join("\n"));
    }

    use super::*;
    use crate::testkit::{TestServer, show};

    /// Walks the whole command table for consistency.
    #[test]
    fn table_is_consistent() {
        let ts = TestServer::new();
        for c in ts.srv.table.all() {
            let all = std::iter::once(*c).chain(c.subcommands.iter());
            for cmd in all {
                assert_eq!(cmd.name, cmd.name.to_ascii_lowercase(), "{} lowercase", cmd.name);
                assert_ne!(cmd.arity, 0, "{} arity", cmd.name);
                assert!(
                    !(cmd.flags.has(Flags::READONLY) && cmd.flags.has(Flags::WRITE)),
                    "{} both readonly and write",
                    cmd.name
                );
                crate::docs::parse(cmd.syntax).unwrap_or_else(|e| panic!("{}: syntax {:?}: {e}", cmd.name, cmd.syntax));
                if let Keys::Range { first, last, step } = cmd.keys {
                    assert!(first >= 1 && step >= 1, "{} key range", cmd.name);
                    if cmd.arity > 0 {
                        assert!(first < cmd.arity && (last < 0 || last < cmd.arity), "{} keys beyond arity", cmd.name);
                    }
                }
                // One source: Redis's metadata describes the commands Redis has, the row the others.
                if redis_meta(cmd.name).is_some() {
                    assert!(cmd.summary.is_empty() && cmd.syntax.is_empty(), "{}: docs in the row too", cmd.name);
                } else {
                    assert!(!cmd.summary.is_empty(), "{} summary", cmd.name);
                }
            }
            for s in c.subcommands {
                assert!(s.name.starts_with(&format!("{}|", c.name)), "{} prefix", s.name);
                assert!(s.subcommands.is_empty());
            }
        }
    }

    #[test]
    fn command_info_get_matches_redis() {
        let ts = TestServer::new();
        let mut c = ts.client();
        assert_eq!(
            c.run("COMMAND INFO get"),
            "[[\"get\", :2, ~[+readonly, +fast], :1, :1, :1, ~[+@read, +@string, +@fast], ~[], \
             ~[{\"flags\": ~[+RO, +access], \"begin_search\": {\"type\": \"index\", \"spec\": {\"index\": :1}}, \
             \"find_keys\": {\"type\": \"range\", \"spec\": {\"lastkey\": :0, \"keystep\": :1, \"limit\": :0}}}], ~[]]]"
        );
        assert_eq!(c.run("COMMAND INFO nosuch get|x"), "[(nil-array), (nil-array)]");
        let cfg = c.run("COMMAND INFO config");
        assert!(cfg.starts_with("[[\"config\", :-2, ~[], :0, :0, :0, ~[+@slow], ~[], ~[], [[\"config|get\", :-3, ~[+admin, +noscript, +loading, +stale]"), "{cfg}");
        assert!(c.run("COMMAND INFO config|set").contains(
            "~[+@admin, +@slow, +@dangerous], ~[\"request_policy:all_nodes\", \"response_policy:all_succeeded\"]"
        ));
    }

    #[test]
    fn command_docs_set_matches_redis_shape() {
        let ts = TestServer::new();
        let mut c = ts.client();
        let d = c.run("COMMAND DOCS set");
        assert!(d.starts_with("{\"set\": {\"summary\": "), "{d}");
        assert!(
            d.contains(
                "\"since\": \"1.0.0\", \"group\": \"string\", \"complexity\": \"O(1)\", \"history\": ~[[\"2.6.12\", "
            ),
            "{d}"
        );
        // Redis's own argument tree (Latch's IFEQ extension is not in it: these are Redis's docs).
        assert!(d.contains("{\"name\": \"condition\", \"type\": \"oneof\", \"since\": \"2.6.12\", \"flags\": ~[+optional], \"arguments\": [{\"name\": \"nx\", \"type\": \"pure-token\", \"token\": \"NX\"}"), "{d}");
        assert!(
            d.contains("{\"name\": \"seconds\", \"type\": \"integer\", \"token\": \"EX\", \"since\": \"2.6.12\"}"),
            "{d}"
        );
        assert_eq!(c.run("COMMAND DOCS nosuch"), "{}");
        // Redis prints the sorted-set group with a dash (commandGroupStr), for every zset command.
        for z in ["zadd", "zrangestore", "bzpopmin", "bzmpop"] {
            let d = c.run(&format!("COMMAND DOCS {z}"));
            assert!(d.contains("\"group\": \"sorted-set\""), "{d}");
        }
        let cfg = c.run("COMMAND DOCS config");
        assert!(
            cfg.contains(
                "\"subcommands\": {\"config|get\": {\"summary\": \"Get the values of configuration parameters\""
            ),
            "{cfg}"
        );
        assert!(cfg.contains("{\"name\": \"parameter_value\", \"type\": \"block\", \"flags\": ~[+multiple], \"arguments\": [{\"name\": \"parameter\", \"type\": \"string\"}, {\"name\": \"value\", \"type\": \"string\"}]}"), "{cfg}");
        // A command Redis does not have is described by its row.
        let lock = c.run("COMMAND DOCS lock");
        assert!(lock.contains("\"group\": \"lock\""), "{lock}");
    }

    #[test]
    fn command_count_list_getkeys_help() {
        let ts = TestServer::new();
        let n = ts.srv.table.all().len();
        let mut c = ts.client();
        assert_eq!(c.run("COMMAND COUNT"), format!(":{n}"));
        match c.cmd(&["COMMAND"]) {
            Some(Frame::Array(v)) => assert_eq!(v.len(), n),
            other => panic!("{other:?}"),
        }
        let list = c.run("COMMAND LIST");
        assert!(list.contains("\"config|get\"") && list.contains("\"get\""));
        assert_eq!(c.run("COMMAND LIST FILTERBY PATTERN config|g*"), "[\"config|get\"]");
        assert_eq!(c.run("COMMAND LIST FILTERBY MODULE foo"), "[]");
        assert_eq!(c.run("COMMAND LIST FILTERBY ACLCAT nosuchcat"), "[]");
        assert!(c.run("COMMAND LIST FILTERBY ACLCAT string").contains("\"get\""));
        assert!(!c.run("COMMAND LIST FILTERBY ACLCAT string").contains("\"ping\""));
        c.transcript(
            r#"
            > COMMAND LIST FILTERBY foo bar
            -ERR syntax error
            > COMMAND LIST bar
            -ERR syntax error
            > COMMAND GETKEYS get
            -ERR wrong number of arguments for 'command|getkeys' command
            > COMMAND GETKEYS foo a
            -ERR Invalid command specified
            > COMMAND GETKEYS ping x y
            -ERR The command has no key arguments
            > COMMAND GETKEYS set a
            -ERR Invalid number of arguments specified for command
            > COMMAND GETKEYS set a b
            ["a"]
            > COMMAND GETKEYSANDFLAGS set a b
            [["a", ~[+OW, +update]]]
            > COMMAND GETKEYSANDFLAGS set a b GET
            [["a", ~[+RW, +access, +update]]]
            > COMMAND GETKEYSANDFLAGS mset a 1 b 2
            [["a", ~[+OW, +update]], ["b", ~[+OW, +update]]]
            > COMMAND GETKEYSANDFLAGS lmove a b left right
            [["a", ~[+RW, +access, +delete]], ["b", ~[+RW, +insert]]]
            > COMMAND GETKEYSANDFLAGS sort a store b
            [["a", ~[+RO, +access]], ["b", ~[+OW, +update]]]
            > COMMAND GETKEYSANDFLAGS bitfield a get u8 0
            [["a", ~[+RO, +access]]]
            > COMMAND GETKEYSANDFLAGS bitfield a incrby u8 0 1
            [["a", ~[+RW, +access, +update]]]
            > COMMAND GETKEYS config get x
            -ERR The command has no key arguments
            > COMMAND FOO
            -ERR unknown subcommand 'FOO'. Try COMMAND HELP.
            "#,
        );
        let help = c.run("COMMAND HELP");
        assert!(
            help.starts_with("[+COMMAND <subcommand> [<arg> [value] [opt] ...]. Subcommands are:, +(no subcommand),")
        );
        assert!(help.ends_with("+HELP, +    Prints this help.]"));
        let _ = show;
    }
}
