//! COMMAND and its subcommands: the command table as clients see it (`COMMAND`, `COMMAND INFO`,
//! `COMMAND DOCS`, `COMMAND COUNT`, `COMMAND LIST`, `COMMAND GETKEYS[ANDFLAGS]`).
//!
//! Most of a reply derives from the table entry: flags, arity, the legacy key range and a key spec
//! from [`Keys`], ACL categories from the flags (as Redis's `setImplicitACLCategories`) and the
//! group, arguments from the `syntax` string ([`crate::docs`]). What the table cannot carry
//! (explicit ACL categories, tips, key-spec access flags, history, doc flags) comes from [`META`], a
//! digest of Redis 7.0.15's `src/commands/*.json`.

use super::BASE;
use super::server::help_reply;
use crate::command::{Command, Ctx, Flags, Keys};
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
    since: "2.8.13",
    summary: "Get array of Redis command details",
    complexity: "O(N) where N is the total number of Redis commands",
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
        since: "2.8.13",
        summary: "Get total number of Redis commands",
        handler: command_count,
        ..BASE
    },
    Command {
        name: "command|docs",
        arity: -2,
        flags: FLAGS,
        group: crate::command::Group::Server,
        since: "7.0.0",
        summary: "Get array of specific Redis command documentation",
        complexity: "O(N) where N is the number of commands to look up",
        syntax: "[command-name [command-name ...]]",
        handler: command_docs,
        ..BASE
    },
    Command {
        name: "command|getkeys",
        arity: -4,
        flags: FLAGS,
        group: crate::command::Group::Server,
        since: "2.8.13",
        summary: "Extract keys given a full Redis command",
        complexity: "O(N) where N is the number of arguments to the command",
        handler: command_getkeys,
        ..BASE
    },
    Command {
        name: "command|getkeysandflags",
        arity: -4,
        flags: FLAGS,
        group: crate::command::Group::Server,
        since: "7.0.0",
        summary: "Extract keys and access flags given a full Redis command",
        complexity: "O(N) where N is the number of arguments to the command",
        handler: command_getkeysandflags,
        ..BASE
    },
    Command {
        name: "command|help",
        arity: 2,
        flags: FLAGS,
        group: crate::command::Group::Server,
        since: "5.0.0",
        summary: "Show helpful text about the different subcommands",
        handler: command_help,
        ..BASE
    },
    Command {
        name: "command|info",
        arity: -2,
        flags: FLAGS,
        group: crate::command::Group::Server,
        since: "2.8.13",
        summary: "Get array of specific Redis command details, or all when no argument is given.",
        complexity: "O(N) where N is the number of commands to look up",
        syntax: "[command-name [command-name ...]]",
        handler: command_info,
        ..BASE
    },
    Command {
        name: "command|list",
        arity: -2,
        flags: FLAGS,
        group: crate::command::Group::Server,
        since: "7.0.0",
        summary: "Get an array of Redis command names",
        complexity: "O(N) where N is the total number of Redis commands",
        syntax: "[FILTERBY <MODULE module-name | ACLCAT category | PATTERN pattern>]",
        handler: command_list,
        ..BASE
    },
];

/// What Redis's JSON command files say that a table entry cannot express.
pub struct Meta {
    /// Full name (`config|get`).
    pub name: &'static str,
    /// Explicit ACL categories, comma-separated (`@string`).
    pub acl: &'static str,
    /// Command tips, comma-separated.
    pub tips: &'static str,
    /// Flags of the first key spec (`RO,ACCESS`).
    pub key_flags: &'static str,
    /// (version, change) pairs.
    pub history: &'static [(&'static str, &'static str)],
    /// Doc flags (`syscmd`, `deprecated`).
    pub doc_flags: &'static str,
    /// Version that deprecated the command.
    pub deprecated_since: &'static str,
    /// What replaces it.
    pub replaced_by: &'static str,
}

/// Looks up the Redis metadata of a command by full name.
pub fn meta(name: &str) -> Option<&'static Meta> {
    META.binary_search_by(|m| m.name.cmp(name)).ok().map(|i| &META[i])
}

/// The ACL categories of a command: implicit ones from its flags, explicit ones from Redis's
/// metadata or, for commands Redis does not have, from its group. Returned in Redis's order.
pub fn acl_categories(c: &Command) -> Vec<&'static str> {
    let mut set: Vec<&'static str> = Vec::new();
    match meta(c.name) {
        Some(m) => set.extend(m.acl.split(',').filter(|s| !s.is_empty())),
        None => set.extend(c.group.acl_category()),
    }
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
    ];
    ORDER.iter().copied().filter(|o| set.contains(o)).collect()
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

/// Access flags of the command's key spec, as COMMAND prints them (`RO`, `access`...).
fn key_flags(c: &Command) -> Vec<String> {
    let from_meta = meta(c.name).map(|m| m.key_flags).filter(|f| !f.is_empty());
    let raw: Vec<&str> = match from_meta {
        Some(f) => f.split(',').collect(),
        None if c.flags.has(Flags::READONLY) => vec!["RO", "ACCESS"],
        None if c.flags.has(Flags::WRITE) => vec!["RW", "UPDATE"],
        None => vec!["RO"],
    };
    raw.into_iter()
        .map(|f| if matches!(f, "RO" | "RW" | "OW" | "RM") { f.to_string() } else { f.to_ascii_lowercase() })
        .collect()
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
    let (first, last, step) = c.keys.legacy();
    let tips = meta(c.name).map(|m| m.tips).unwrap_or("");
    Frame::Array(vec![
        bulk(c.name),
        Frame::Integer(c.arity as i64),
        status_set(flag_names(c)),
        Frame::Integer(first as i64),
        Frame::Integer(last as i64),
        Frame::Integer(step as i64),
        status_set(acl_categories(c)),
        Frame::Set(tips.split(',').filter(|t| !t.is_empty()).map(bulk).collect()),
        Frame::Set(key_specs(c)),
        if c.subcommands.is_empty() {
            Frame::Set(Vec::new())
        } else {
            Frame::Array(c.subcommands.iter().map(command_info_frame).collect())
        },
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
    let mut m = vec![("summary", bulk(c.summary)), ("since", bulk(c.since)), ("group", bulk(c.group.name()))];
    if !c.complexity.is_empty() {
        m.push(("complexity", bulk(c.complexity)));
    }
    if let Some(md) = meta(c.name) {
        if !md.doc_flags.is_empty() {
            m.push(("doc_flags", status_set(md.doc_flags.split(','))));
        }
        if !md.deprecated_since.is_empty() {
            m.push(("deprecated_since", bulk(md.deprecated_since)));
        }
        if !md.replaced_by.is_empty() {
            m.push(("replaced_by", bulk(md.replaced_by)));
        }
        if !md.history.is_empty() {
            m.push((
                "history",
                Frame::Set(md.history.iter().map(|(v, t)| Frame::Array(vec![bulk(v), bulk(t)])).collect()),
            ));
        }
    }
    if let Ok(args) = crate::docs::parse(c.syntax)
        && !args.is_empty()
    {
        let nspecs = if matches!(c.keys, Keys::None) { 0 } else { 1 };
        m.push(("arguments", arg_frames(&args, &mut 0, nspecs)));
    }
    if !c.subcommands.is_empty() {
        m.push((
            "subcommands",
            Frame::Map(c.subcommands.iter().map(|s| (bulk(s.name), command_docs_frame(s))).collect()),
        ));
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
                Filter::AclCat(cat) => acl_categories(cmd).contains(&cat.as_str()),
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
    Ok((cmd, pos))
}

fn command_getkeys(ctx: &mut Ctx<'_, '_>) -> Frame {
    match getkeys_target(ctx) {
        Ok((_, pos)) => Frame::Array(pos.into_iter().map(|p| Frame::Bulk(ctx.args[p + 2].clone())).collect()),
        Err(e) => e,
    }
}

fn command_getkeysandflags(ctx: &mut Ctx<'_, '_>) -> Frame {
    match getkeys_target(ctx) {
        Ok((cmd, pos)) => {
            let flags = key_flags(cmd);
            Frame::Array(
                pos.into_iter()
                    .map(|p| Frame::Array(vec![Frame::Bulk(ctx.args[p + 2].clone()), status_set(&flags)]))
                    .collect(),
            )
        }
        Err(e) => e,
    }
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

/// Redis 7.0.15's per-command metadata, sorted by name (generated from `src/commands/*.json`).
#[rustfmt::skip]
pub static META: &[Meta] = &[
    Meta { name: "acl", acl: "", tips: "", key_flags: "", history: &[], doc_flags: "", deprecated_since: "", replaced_by: "" },
    Meta { name: "acl|cat", acl: "", tips: "", key_flags: "", history: &[], doc_flags: "", deprecated_since: "", replaced_by: "" },
    Meta { name: "acl|deluser", acl: "", tips: "", key_flags: "", history: &[], doc_flags: "", deprecated_since: "", replaced_by: "" },
    Meta { name: "acl|dryrun", acl: "", tips: "", key_flags: "", history: &[], doc_flags: "", deprecated_since: "", replaced_by: "" },
    Meta { name: "acl|genpass", acl: "", tips: "", key_flags: "", history: &[], doc_flags: "", deprecated_since: "", replaced_by: "" },
    Meta { name: "acl|getuser", acl: "", tips: "", key_flags: "", history: &[("6.2.0", "Added Pub/Sub channel patterns."), ("7.0.0", "Added selectors and changed the format of key and channel patterns from a list to their rule representation.")], doc_flags: "", deprecated_since: "", replaced_by: "" },
    Meta { name: "acl|help", acl: "", tips: "", key_flags: "", history: &[], doc_flags: "", deprecated_since: "", replaced_by: "" },
    Meta { name: "acl|list", acl: "", tips: "", key_flags: "", history: &[], doc_flags: "", deprecated_since: "", replaced_by: "" },
    Meta { name: "acl|load", acl: "", tips: "", key_flags: "", history: &[], doc_flags: "", deprecated_since: "", replaced_by: "" },
    Meta { name: "acl|log", acl: "", tips: "", key_flags: "", history: &[], doc_flags: "", deprecated_since: "", replaced_by: "" },
    Meta { name: "acl|save", acl: "", tips: "", key_flags: "", history: &[], doc_flags: "", deprecated_since: "", replaced_by: "" },
    Meta { name: "acl|setuser", acl: "", tips: "", key_flags: "", history: &[("6.2.0", "Added Pub/Sub channel patterns."), ("7.0.0", "Added selectors and key based permissions.")], doc_flags: "", deprecated_since: "", replaced_by: "" },
    Meta { name: "acl|users", acl: "", tips: "", key_flags: "", history: &[], doc_flags: "", deprecated_since: "", replaced_by: "" },
    Meta { name: "acl|whoami", acl: "", tips: "", key_flags: "", history: &[], doc_flags: "", deprecated_since: "", replaced_by: "" },
    Meta { name: "append", acl: "@string", tips: "", key_flags: "RW,INSERT", history: &[], doc_flags: "", deprecated_since: "", replaced_by: "" },
    Meta { name: "asking", acl: "@connection", tips: "", key_flags: "", history: &[], doc_flags: "", deprecated_since: "", replaced_by: "" },
    Meta { name: "auth", acl: "@connection", tips: "", key_flags: "", history: &[("6.0.0", "Added ACL style (username and password).")], doc_flags: "", deprecated_since: "", replaced_by: "" },
    Meta { name: "bgrewriteaof", acl: "", tips: "", key_flags: "", history: &[], doc_flags: "", deprecated_since: "", replaced_by: "" },
    Meta { name: "bgsave", acl: "", tips: "", key_flags: "", history: &[("3.2.2", "Added the `SCHEDULE` option.")], doc_flags: "", deprecated_since: "", replaced_by: "" },
    Meta { name: "bitcount", acl: "@bitmap", tips: "", key_flags: "RO,ACCESS", history: &[("7.0.0", "Added the `BYTE|BIT` option.")], doc_flags: "", deprecated_since: "", replaced_by: "" },
    Meta { name: "bitfield", acl: "@bitmap", tips: "", key_flags: "RW,UPDATE,ACCESS,VARIABLE_FLAGS", history: &[], doc_flags: "", deprecated_since: "", replaced_by: "" },
    Meta { name: "bitfield_ro", acl: "@bitmap", tips: "", key_flags: "RO,ACCESS", history: &[], doc_flags: "", deprecated_since: "", replaced_by: "" },
    Meta { name: "bitop", acl: "@bitmap", tips: "", key_flags: "OW,UPDATE", history: &[], doc_flags: "", deprecated_since: "", replaced_by: "" },
    Meta { name: "bitpos", acl: "@bitmap", tips: "", key_flags: "RO,ACCESS", history: &[("7.0.0", "Added the `BYTE|BIT` option.")], doc_flags: "", deprecated_since: "", replaced_by: "" },
    Meta { name: "blmove", acl: "@list", tips: "", key_flags: "RW,ACCESS,DELETE", history: &[], doc_flags: "", deprecated_since: "", replaced_by: "" },
    Meta { name: "blmpop", acl: "@list", tips: "", key_flags: "RW,ACCESS,DELETE", history: &[], doc_flags: "", deprecated_since: "", replaced_by: "" },
    Meta { name: "blpop", acl: "@list", tips: "", key_flags: "RW,ACCESS,DELETE", history: &[("6.0.0", "`timeout` is interpreted as a double instead of an integer.")], doc_flags: "", deprecated_since: "", replaced_by: "" },
    Meta { name: "brpop", acl: "@list", tips: "", key_flags: "RW,ACCESS,DELETE", history: &[("6.0.0", "`timeout` is interpreted as a double instead of an integer.")], doc_flags: "", deprecated_since: "", replaced_by: "" },
    Meta { name: "brpoplpush", acl: "@list", tips: "", key_flags: "RW,ACCESS,DELETE", history: &[("6.0.0", "`timeout` is interpreted as a double instead of an integer.")], doc_flags: "deprecated", deprecated_since: "6.2.0", replaced_by: "`BLMOVE` with the `RIGHT` and `LEFT` arguments" },
    Meta { name: "bzmpop", acl: "@sortedset", tips: "", key_flags: "RW,ACCESS,DELETE", history: &[], doc_flags: "", deprecated_since: "", replaced_by: "" },
    Meta { name: "bzpopmax", acl: "@sortedset", tips: "", key_flags: "RW,ACCESS,DELETE", history: &[("6.0.0", "`timeout` is interpreted as a double instead of an integer.")], doc_flags: "", deprecated_since: "", replaced_by: "" },
    Meta { name: "bzpopmin", acl: "@sortedset", tips: "", key_flags: "RW,ACCESS,DELETE", history: &[("6.0.0", "`timeout` is interpreted as a double instead of an integer.")], doc_flags: "", deprecated_since: "", replaced_by: "" },
    Meta { name: "client", acl: "", tips: "", key_flags: "", history: &[], doc_flags: "", deprecated_since: "", replaced_by: "" },
    Meta { name: "client|caching", acl: "@connection", tips: "", key_flags: "", history: &[], doc_flags: "", deprecated_since: "", replaced_by: "" },
    Meta { name: "client|getname", acl: "@connection", tips: "", key_flags: "", history: &[], doc_flags: "", deprecated_since: "", replaced_by: "" },
    Meta { name: "client|getredir", acl: "@connection", tips: "", key_flags: "", history: &[], doc_flags: "", deprecated_since: "", replaced_by: "" },
    Meta { name: "client|help", acl: "@connection", tips: "", key_flags: "", history: &[], doc_flags: "", deprecated_since: "", replaced_by: "" },
    Meta { name: "client|id", acl: "@connection", tips: "", key_flags: "", history: &[], doc_flags: "", deprecated_since: "", replaced_by: "" },
    Meta { name: "client|info", acl: "@connection", tips: "nondeterministic_output", key_flags: "", history: &[], doc_flags: "", deprecated_since: "", replaced_by: "" },
    Meta { name: "client|kill", acl: "@connection", tips: "", key_flags: "", history: &[("2.8.12", "Added new filter format."), ("2.8.12", "`ID` option."), ("3.2.0", "Added `master` type in for `TYPE` option."), ("5.0.0", "Replaced `slave` `TYPE` with `replica`. `slave` still supported for backward compatibility."), ("6.2.0", "`LADDR` option.")], doc_flags: "", deprecated_since: "", replaced_by: "" },
    Meta { name: "client|list", acl: "@connection", tips: "nondeterministic_output", key_flags: "", history: &[("2.8.12", "Added unique client `id` field."), ("5.0.0", "Added optional `TYPE` filter."), ("6.0.0", "Added `user` field."), ("6.2.0", "Added `argv-mem`, `tot-mem`, `laddr` and `redir` fields and the optional `ID` filter."), ("7.0.0", "Added `resp`, `multi-mem`, `rbs` and `rbp` fields."), ("7.0.3", "Added `ssub` field.")], doc_flags: "", deprecated_since: "", replaced_by: "" },
    Meta { name: "client|no-evict", acl: "@connection", tips: "", key_flags: "", history: &[], doc_flags: "", deprecated_since: "", replaced_by: "" },
    Meta { name: "client|pause", acl: "@connection", tips: "", key_flags: "", history: &[("6.2.0", "`CLIENT PAUSE WRITE` mode added along with the `mode` option.")], doc_flags: "", deprecated_since: "", replaced_by: "" },
    Meta { name: "client|reply", acl: "@connection", tips: "", key_flags: "", history: &[], doc_flags: "", deprecated_since: "", replaced_by: "" },
    Meta { name: "client|setname", acl: "@connection", tips: "", key_flags: "", history: &[], doc_flags: "", deprecated_since: "", replaced_by: "" },
    Meta { name: "client|tracking", acl: "@connection", tips: "", key_flags: "", history: &[], doc_flags: "", deprecated_since: "", replaced_by: "" },
    Meta { name: "client|trackinginfo", acl: "@connection", tips: "", key_flags: "", history: &[], doc_flags: "", deprecated_since: "", replaced_by: "" },
    Meta { name: "client|unblock", acl: "@connection", tips: "", key_flags: "", history: &[], doc_flags: "", deprecated_since: "", replaced_by: "" },
    Meta { name: "client|unpause", acl: "@connection", tips: "", key_flags: "", history: &[], doc_flags: "", deprecated_since: "", replaced_by: "" },
    Meta { name: "cluster", acl: "", tips: "", key_flags: "", history: &[], doc_flags: "", deprecated_since: "", replaced_by: "" },
    Meta { name: "cluster|addslots", acl: "", tips: "", key_flags: "", history: &[], doc_flags: "", deprecated_since: "", replaced_by: "" },
    Meta { name: "cluster|addslotsrange", acl: "", tips: "", key_flags: "", history: &[], doc_flags: "", deprecated_since: "", replaced_by: "" },
    Meta { name: "cluster|bumpepoch", acl: "", tips: "nondeterministic_output", key_flags: "", history: &[], doc_flags: "", deprecated_since: "", replaced_by: "" },
    Meta { name: "cluster|count-failure-reports", acl: "", tips: "nondeterministic_output", key_flags: "", history: &[], doc_flags: "", deprecated_since: "", replaced_by: "" },
    Meta { name: "cluster|countkeysinslot", acl: "", tips: "", key_flags: "", history: &[], doc_flags: "", deprecated_since: "", replaced_by: "" },
    Meta { name: "cluster|delslots", acl: "", tips: "", key_flags: "", history: &[], doc_flags: "", deprecated_since: "", replaced_by: "" },
    Meta { name: "cluster|delslotsrange", acl: "", tips: "", key_flags: "", history: &[], doc_flags: "", deprecated_since: "", replaced_by: "" },
    Meta { name: "cluster|failover", acl: "", tips: "", key_flags: "", history: &[], doc_flags: "", deprecated_since: "", replaced_by: "" },
    Meta { name: "cluster|flushslots", acl: "", tips: "", key_flags: "", history: &[], doc_flags: "", deprecated_since: "", replaced_by: "" },
    Meta { name: "cluster|forget", acl: "", tips: "", key_flags: "", history: &[], doc_flags: "", deprecated_since: "", replaced_by: "" },
    Meta { name: "cluster|getkeysinslot", acl: "", tips: "nondeterministic_output", key_flags: "", history: &[], doc_flags: "", deprecated_since: "", replaced_by: "" },
    Meta { name: "cluster|help", acl: "", tips: "", key_flags: "", history: &[], doc_flags: "", deprecated_since: "", replaced_by: "" },
    Meta { name: "cluster|info", acl: "", tips: "nondeterministic_output", key_flags: "", history: &[], doc_flags: "", deprecated_since: "", replaced_by: "" },
    Meta { name: "cluster|keyslot", acl: "", tips: "", key_flags: "", history: &[], doc_flags: "", deprecated_since: "", replaced_by: "" },
    Meta { name: "cluster|links", acl: "", tips: "nondeterministic_output", key_flags: "", history: &[], doc_flags: "", deprecated_since: "", replaced_by: "" },
    Meta { name: "cluster|meet", acl: "", tips: "", key_flags: "", history: &[("4.0.0", "Added the optional `cluster_bus_port` argument.")], doc_flags: "", deprecated_since: "", replaced_by: "" },
    Meta { name: "cluster|myid", acl: "", tips: "", key_flags: "", history: &[], doc_flags: "", deprecated_since: "", replaced_by: "" },
    Meta { name: "cluster|nodes", acl: "", tips: "nondeterministic_output", key_flags: "", history: &[], doc_flags: "", deprecated_since: "", replaced_by: "" },
    Meta { name: "cluster|replicas", acl: "", tips: "nondeterministic_output", key_flags: "", history: &[], doc_flags: "", deprecated_since: "", replaced_by: "" },
    Meta { name: "cluster|replicate", acl: "", tips: "", key_flags: "", history: &[], doc_flags: "", deprecated_since: "", replaced_by: "" },
    Meta { name: "cluster|reset", acl: "", tips: "", key_flags: "", history: &[], doc_flags: "", deprecated_since: "", replaced_by: "" },
    Meta { name: "cluster|saveconfig", acl: "", tips: "", key_flags: "", history: &[], doc_flags: "", deprecated_since: "", replaced_by: "" },
    Meta { name: "cluster|set-config-epoch", acl: "", tips: "", key_flags: "", history: &[], doc_flags: "", deprecated_since: "", replaced_by: "" },
    Meta { name: "cluster|setslot", acl: "", tips: "", key_flags: "", history: &[], doc_flags: "", deprecated_since: "", replaced_by: "" },
    Meta { name: "cluster|shards", acl: "", tips: "nondeterministic_output", key_flags: "", history: &[], doc_flags: "", deprecated_since: "", replaced_by: "" },
    Meta { name: "cluster|slaves", acl: "", tips: "nondeterministic_output", key_flags: "", history: &[], doc_flags: "deprecated", deprecated_since: "5.0.0", replaced_by: "`CLUSTER REPLICAS`" },
    Meta { name: "cluster|slots", acl: "", tips: "nondeterministic_output", key_flags: "", history: &[("4.0.0", "Added node IDs."), ("7.0.0", "Added additional networking metadata field.")], doc_flags: "deprecated", deprecated_since: "7.0.0", replaced_by: "`CLUSTER SHARDS`" },
    Meta { name: "command", acl: "@connection", tips: "nondeterministic_output_order", key_flags: "", history: &[], doc_flags: "", deprecated_since: "", replaced_by: "" },
    Meta { name: "command|count", acl: "@connection", tips: "", key_flags: "", history: &[], doc_flags: "", deprecated_since: "", replaced_by: "" },
    Meta { name: "command|docs", acl: "@connection", tips: "nondeterministic_output_order", key_flags: "", history: &[], doc_flags: "", deprecated_since: "", replaced_by: "" },
    Meta { name: "command|getkeys", acl: "@connection", tips: "", key_flags: "", history: &[], doc_flags: "", deprecated_since: "", replaced_by: "" },
    Meta { name: "command|getkeysandflags", acl: "@connection", tips: "", key_flags: "", history: &[], doc_flags: "", deprecated_since: "", replaced_by: "" },
    Meta { name: "command|help", acl: "@connection", tips: "", key_flags: "", history: &[], doc_flags: "", deprecated_since: "", replaced_by: "" },
    Meta { name: "command|info", acl: "@connection", tips: "nondeterministic_output_order", key_flags: "", history: &[("7.0.0", "Allowed to be called with no argument to get info on all commands.")], doc_flags: "", deprecated_since: "", replaced_by: "" },
    Meta { name: "command|list", acl: "@connection", tips: "nondeterministic_output_order", key_flags: "", history: &[], doc_flags: "", deprecated_since: "", replaced_by: "" },
    Meta { name: "config", acl: "", tips: "", key_flags: "", history: &[], doc_flags: "", deprecated_since: "", replaced_by: "" },
    Meta { name: "config|get", acl: "", tips: "", key_flags: "", history: &[("7.0.0", "Added the ability to pass multiple pattern parameters in one call")], doc_flags: "", deprecated_since: "", replaced_by: "" },
    Meta { name: "config|help", acl: "", tips: "", key_flags: "", history: &[], doc_flags: "", deprecated_since: "", replaced_by: "" },
    Meta { name: "config|resetstat", acl: "", tips: "", key_flags: "", history: &[], doc_flags: "", deprecated_since: "", replaced_by: "" },
    Meta { name: "config|rewrite", acl: "", tips: "", key_flags: "", history: &[], doc_flags: "", deprecated_since: "", replaced_by: "" },
    Meta { name: "config|set", acl: "", tips: "request_policy:all_nodes,response_policy:all_succeeded", key_flags: "", history: &[("7.0.0", "Added the ability to set multiple parameters in one call.")], doc_flags: "", deprecated_since: "", replaced_by: "" },
    Meta { name: "copy", acl: "@keyspace", tips: "", key_flags: "RO,ACCESS", history: &[], doc_flags: "", deprecated_since: "", replaced_by: "" },
    Meta { name: "dbsize", acl: "@keyspace", tips: "request_policy:all_shards,response_policy:agg_sum", key_flags: "", history: &[], doc_flags: "", deprecated_since: "", replaced_by: "" },
    Meta { name: "debug", acl: "", tips: "", key_flags: "", history: &[], doc_flags: "syscmd", deprecated_since: "", replaced_by: "" },
    Meta { name: "decr", acl: "@string", tips: "", key_flags: "RW,ACCESS,UPDATE", history: &[], doc_flags: "", deprecated_since: "", replaced_by: "" },
    Meta { name: "decrby", acl: "@string", tips: "", key_flags: "RW,ACCESS,UPDATE", history: &[], doc_flags: "", deprecated_since: "", replaced_by: "" },
    Meta { name: "del", acl: "@keyspace", tips: "request_policy:multi_shard,response_policy:agg_sum", key_flags: "RM,DELETE", history: &[], doc_flags: "", deprecated_since: "", replaced_by: "" },
    Meta { name: "discard", acl: "@transaction", tips: "", key_flags: "", history: &[], doc_flags: "", deprecated_since: "", replaced_by: "" },
    Meta { name: "dump", acl: "@keyspace", tips: "nondeterministic_output", key_flags: "RO,ACCESS", history: &[], doc_flags: "", deprecated_since: "", replaced_by: "" },
    Meta { name: "echo", acl: "@connection", tips: "", key_flags: "", history: &[], doc_flags: "", deprecated_since: "", replaced_by: "" },
    Meta { name: "eval", acl: "@scripting", tips: "", key_flags: "RW,ACCESS,UPDATE", history: &[], doc_flags: "", deprecated_since: "", replaced_by: "" },
    Meta { name: "eval_ro", acl: "@scripting", tips: "", key_flags: "RO,ACCESS", history: &[], doc_flags: "", deprecated_since: "", replaced_by: "" },
    Meta { name: "evalsha", acl: "@scripting", tips: "", key_flags: "RW,ACCESS,UPDATE", history: &[], doc_flags: "", deprecated_since: "", replaced_by: "" },
    Meta { name: "evalsha_ro", acl: "@scripting", tips: "", key_flags: "RO,ACCESS", history: &[], doc_flags: "", deprecated_since: "", replaced_by: "" },
    Meta { name: "exec", acl: "@transaction", tips: "", key_flags: "", history: &[], doc_flags: "", deprecated_since: "", replaced_by: "" },
    Meta { name: "exists", acl: "@keyspace", tips: "request_policy:multi_shard,response_policy:agg_sum", key_flags: "RO", history: &[("3.0.3", "Accepts multiple `key` arguments.")], doc_flags: "", deprecated_since: "", replaced_by: "" },
    Meta { name: "expire", acl: "@keyspace", tips: "", key_flags: "RW,UPDATE", history: &[("7.0.0", "Added options: `NX`, `XX`, `GT` and `LT`.")], doc_flags: "", deprecated_since: "", replaced_by: "" },
    Meta { name: "expireat", acl: "@keyspace", tips: "", key_flags: "RW,UPDATE", history: &[("7.0.0", "Added options: `NX`, `XX`, `GT` and `LT`.")], doc_flags: "", deprecated_since: "", replaced_by: "" },
    Meta { name: "expiretime", acl: "@keyspace", tips: "", key_flags: "RO,ACCESS", history: &[], doc_flags: "", deprecated_since: "", replaced_by: "" },
    Meta { name: "failover", acl: "", tips: "", key_flags: "", history: &[], doc_flags: "", deprecated_since: "", replaced_by: "" },
    Meta { name: "fcall", acl: "@scripting", tips: "", key_flags: "RW,ACCESS,UPDATE", history: &[], doc_flags: "", deprecated_since: "", replaced_by: "" },
    Meta { name: "fcall_ro", acl: "@scripting", tips: "", key_flags: "RO,ACCESS", history: &[], doc_flags: "", deprecated_since: "", replaced_by: "" },
    Meta { name: "flushall", acl: "@keyspace,@dangerous", tips: "request_policy:all_shards,response_policy:all_succeeded", key_flags: "", history: &[("4.0.0", "Added the `ASYNC` flushing mode modifier."), ("6.2.0", "Added the `SYNC` flushing mode modifier.")], doc_flags: "", deprecated_since: "", replaced_by: "" },
    Meta { name: "flushdb", acl: "@keyspace,@dangerous", tips: "request_policy:all_shards,response_policy:all_succeeded", key_flags: "", history: &[("4.0.0", "Added the `ASYNC` flushing mode modifier."), ("6.2.0", "Added the `SYNC` flushing mode modifier.")], doc_flags: "", deprecated_since: "", replaced_by: "" },
    Meta { name: "function", acl: "", tips: "", key_flags: "", history: &[], doc_flags: "", deprecated_since: "", replaced_by: "" },
    Meta { name: "function|delete", acl: "@scripting", tips: "request_policy:all_shards,response_policy:all_succeeded", key_flags: "", history: &[], doc_flags: "", deprecated_since: "", replaced_by: "" },
    Meta { name: "function|dump", acl: "@scripting", tips: "", key_flags: "", history: &[], doc_flags: "", deprecated_since: "", replaced_by: "" },
    Meta { name: "function|flush", acl: "@scripting", tips: "request_policy:all_shards,response_policy:all_succeeded", key_flags: "", history: &[], doc_flags: "", deprecated_since: "", replaced_by: "" },
    Meta { name: "function|help", acl: "@scripting", tips: "", key_flags: "", history: &[], doc_flags: "", deprecated_since: "", replaced_by: "" },
    Meta { name: "function|kill", acl: "@scripting", tips: "request_policy:all_shards,response_policy:one_succeeded", key_flags: "", history: &[], doc_flags: "", deprecated_since: "", replaced_by: "" },
    Meta { name: "function|list", acl: "@scripting", tips: "nondeterministic_output_order", key_flags: "", history: &[], doc_flags: "", deprecated_since: "", replaced_by: "" },
    Meta { name: "function|load", acl: "@scripting", tips: "request_policy:all_shards,response_policy:all_succeeded", key_flags: "", history: &[], doc_flags: "", deprecated_since: "", replaced_by: "" },
    Meta { name: "function|restore", acl: "@scripting", tips: "request_policy:all_shards,response_policy:all_succeeded", key_flags: "", history: &[], doc_flags: "", deprecated_since: "", replaced_by: "" },
    Meta { name: "function|stats", acl: "@scripting", tips: "nondeterministic_output,request_policy:all_shards,response_policy:special", key_flags: "", history: &[], doc_flags: "", deprecated_since: "", replaced_by: "" },
    Meta { name: "geoadd", acl: "@geo", tips: "", key_flags: "RW,UPDATE", history: &[("6.2.0", "Added the `CH`, `NX` and `XX` options.")], doc_flags: "", deprecated_since: "", replaced_by: "" },
    Meta { name: "geodist", acl: "@geo", tips: "", key_flags: "RO,ACCESS", history: &[], doc_flags: "", deprecated_since: "", replaced_by: "" },
    Meta { name: "geohash", acl: "@geo", tips: "", key_flags: "RO,ACCESS", history: &[], doc_flags: "", deprecated_since: "", replaced_by: "" },
    Meta { name: "geopos", acl: "@geo", tips: "", key_flags: "RO,ACCESS", history: &[], doc_flags: "", deprecated_since: "", replaced_by: "" },
    Meta { name: "georadius", acl: "@geo", tips: "", key_flags: "RO,ACCESS", history: &[("6.2.0", "Added the `ANY` option for `COUNT`."), ("7.0.0", "Added support for uppercase unit names.")], doc_flags: "deprecated", deprecated_since: "6.2.0", replaced_by: "`GEOSEARCH` and `GEOSEARCHSTORE` with the `BYRADIUS` argument" },
    Meta { name: "georadius_ro", acl: "@geo", tips: "", key_flags: "RO,ACCESS", history: &[("6.2.0", "Added the `ANY` option for `COUNT`.")], doc_flags: "deprecated", deprecated_since: "6.2.0", replaced_by: "`GEOSEARCH` with the `BYRADIUS` argument" },
    Meta { name: "georadiusbymember", acl: "@geo", tips: "", key_flags: "RO,ACCESS", history: &[("7.0.0", "Added support for uppercase unit names.")], doc_flags: "deprecated", deprecated_since: "6.2.0", replaced_by: "`GEOSEARCH` and `GEOSEARCHSTORE` with the `BYRADIUS` and `FROMMEMBER` arguments" },
    Meta { name: "georadiusbymember_ro", acl: "@geo", tips: "", key_flags: "RO,ACCESS", history: &[], doc_flags: "deprecated", deprecated_since: "6.2.0", replaced_by: "`GEOSEARCH` with the `BYRADIUS` and `FROMMEMBER` arguments" },
    Meta { name: "geosearch", acl: "@geo", tips: "", key_flags: "RO,ACCESS", history: &[("7.0.0", "Added support for uppercase unit names.")], doc_flags: "", deprecated_since: "", replaced_by: "" },
    Meta { name: "geosearchstore", acl: "@geo", tips: "", key_flags: "OW,UPDATE", history: &[("7.0.0", "Added support for uppercase unit names.")], doc_flags: "", deprecated_since: "", replaced_by: "" },
    Meta { name: "get", acl: "@string", tips: "", key_flags: "RO,ACCESS", history: &[], doc_flags: "", deprecated_since: "", replaced_by: "" },
    Meta { name: "getbit", acl: "@bitmap", tips: "", key_flags: "RO,ACCESS", history: &[], doc_flags: "", deprecated_since: "", replaced_by: "" },
    Meta { name: "getdel", acl: "@string", tips: "", key_flags: "RW,ACCESS,DELETE", history: &[], doc_flags: "", deprecated_since: "", replaced_by: "" },
    Meta { name: "getex", acl: "@string", tips: "", key_flags: "RW,ACCESS,UPDATE", history: &[], doc_flags: "", deprecated_since: "", replaced_by: "" },
    Meta { name: "getrange", acl: "@string", tips: "", key_flags: "RO,ACCESS", history: &[], doc_flags: "", deprecated_since: "", replaced_by: "" },
    Meta { name: "getset", acl: "@string", tips: "", key_flags: "RW,ACCESS,UPDATE", history: &[], doc_flags: "deprecated", deprecated_since: "6.2.0", replaced_by: "`SET` with the `!GET` argument" },
    Meta { name: "hdel", acl: "@hash", tips: "", key_flags: "RW,DELETE", history: &[("2.4.0", "Accepts multiple `field` arguments.")], doc_flags: "", deprecated_since: "", replaced_by: "" },
    Meta { name: "hello", acl: "@connection", tips: "", key_flags: "", history: &[("6.2.0", "`protover` made optional; when called without arguments the command reports the current connection's context.")], doc_flags: "", deprecated_since: "", replaced_by: "" },
    Meta { name: "hexists", acl: "@hash", tips: "", key_flags: "RO", history: &[], doc_flags: "", deprecated_since: "", replaced_by: "" },
    Meta { name: "hget", acl: "@hash", tips: "", key_flags: "RO,ACCESS", history: &[], doc_flags: "", deprecated_since: "", replaced_by: "" },
    Meta { name: "hgetall", acl: "@hash", tips: "nondeterministic_output_order", key_flags: "RO,ACCESS", history: &[], doc_flags: "", deprecated_since: "", replaced_by: "" },
    Meta { name: "hincrby", acl: "@hash", tips: "", key_flags: "RW,ACCESS,UPDATE", history: &[], doc_flags: "", deprecated_since: "", replaced_by: "" },
    Meta { name: "hincrbyfloat", acl: "@hash", tips: "", key_flags: "RW,ACCESS,UPDATE", history: &[], doc_flags: "", deprecated_since: "", replaced_by: "" },
    Meta { name: "hkeys", acl: "@hash", tips: "nondeterministic_output_order", key_flags: "RO,ACCESS", history: &[], doc_flags: "", deprecated_since: "", replaced_by: "" },
    Meta { name: "hlen", acl: "@hash", tips: "", key_flags: "RO", history: &[], doc_flags: "", deprecated_since: "", replaced_by: "" },
    Meta { name: "hmget", acl: "@hash", tips: "", key_flags: "RO,ACCESS", history: &[], doc_flags: "", deprecated_since: "", replaced_by: "" },
    Meta { name: "hmset", acl: "@hash", tips: "", key_flags: "RW,UPDATE", history: &[], doc_flags: "deprecated", deprecated_since: "4.0.0", replaced_by: "`HSET` with multiple field-value pairs" },
    Meta { name: "hrandfield", acl: "@hash", tips: "nondeterministic_output", key_flags: "RO,ACCESS", history: &[], doc_flags: "", deprecated_since: "", replaced_by: "" },
    Meta { name: "hscan", acl: "@hash", tips: "nondeterministic_output", key_flags: "RO,ACCESS", history: &[], doc_flags: "", deprecated_since: "", replaced_by: "" },
    Meta { name: "hset", acl: "@hash", tips: "", key_flags: "RW,UPDATE", history: &[("4.0.0", "Accepts multiple `field` and `value` arguments.")], doc_flags: "", deprecated_since: "", replaced_by: "" },
    Meta { name: "hsetnx", acl: "@hash", tips: "", key_flags: "RW,INSERT", history: &[], doc_flags: "", deprecated_since: "", replaced_by: "" },
    Meta { name: "hstrlen", acl: "@hash", tips: "", key_flags: "RO", history: &[], doc_flags: "", deprecated_since: "", replaced_by: "" },
    Meta { name: "hvals", acl: "@hash", tips: "nondeterministic_output_order", key_flags: "RO,ACCESS", history: &[], doc_flags: "", deprecated_since: "", replaced_by: "" },
    Meta { name: "incr", acl: "@string", tips: "", key_flags: "RW,ACCESS,UPDATE", history: &[], doc_flags: "", deprecated_since: "", replaced_by: "" },
    Meta { name: "incrby", acl: "@string", tips: "", key_flags: "RW,ACCESS,UPDATE", history: &[], doc_flags: "", deprecated_since: "", replaced_by: "" },
    Meta { name: "incrbyfloat", acl: "@string", tips: "", key_flags: "RW,ACCESS,UPDATE", history: &[], doc_flags: "", deprecated_since: "", replaced_by: "" },
    Meta { name: "info", acl: "@dangerous", tips: "nondeterministic_output,request_policy:all_shards,response_policy:special", key_flags: "", history: &[("7.0.0", "Added support for taking multiple section arguments.")], doc_flags: "", deprecated_since: "", replaced_by: "" },
    Meta { name: "keys", acl: "@keyspace,@dangerous", tips: "request_policy:all_shards,nondeterministic_output_order", key_flags: "", history: &[], doc_flags: "", deprecated_since: "", replaced_by: "" },
    Meta { name: "lastsave", acl: "@admin,@dangerous", tips: "nondeterministic_output", key_flags: "", history: &[], doc_flags: "", deprecated_since: "", replaced_by: "" },
    Meta { name: "latency", acl: "", tips: "", key_flags: "", history: &[], doc_flags: "", deprecated_since: "", replaced_by: "" },
    Meta { name: "latency|doctor", acl: "", tips: "nondeterministic_output,request_policy:all_nodes,response_policy:special", key_flags: "", history: &[], doc_flags: "", deprecated_since: "", replaced_by: "" },
    Meta { name: "latency|graph", acl: "", tips: "nondeterministic_output,request_policy:all_nodes,response_policy:special", key_flags: "", history: &[], doc_flags: "", deprecated_since: "", replaced_by: "" },
    Meta { name: "latency|help", acl: "", tips: "", key_flags: "", history: &[], doc_flags: "", deprecated_since: "", replaced_by: "" },
    Meta { name: "latency|histogram", acl: "", tips: "nondeterministic_output,request_policy:all_nodes,response_policy:special", key_flags: "", history: &[], doc_flags: "", deprecated_since: "", replaced_by: "" },
    Meta { name: "latency|history", acl: "", tips: "nondeterministic_output,request_policy:all_nodes,response_policy:special", key_flags: "", history: &[], doc_flags: "", deprecated_since: "", replaced_by: "" },
    Meta { name: "latency|latest", acl: "", tips: "nondeterministic_output,request_policy:all_nodes,response_policy:special", key_flags: "", history: &[], doc_flags: "", deprecated_since: "", replaced_by: "" },
    Meta { name: "latency|reset", acl: "", tips: "request_policy:all_nodes,response_policy:all_succeeded", key_flags: "", history: &[], doc_flags: "", deprecated_since: "", replaced_by: "" },
    Meta { name: "lcs", acl: "@string", tips: "", key_flags: "RO,ACCESS", history: &[], doc_flags: "", deprecated_since: "", replaced_by: "" },
    Meta { name: "lindex", acl: "@list", tips: "", key_flags: "RO,ACCESS", history: &[], doc_flags: "", deprecated_since: "", replaced_by: "" },
    Meta { name: "linsert", acl: "@list", tips: "", key_flags: "RW,INSERT", history: &[], doc_flags: "", deprecated_since: "", replaced_by: "" },
    Meta { name: "llen", acl: "@list", tips: "", key_flags: "RO", history: &[], doc_flags: "", deprecated_since: "", replaced_by: "" },
    Meta { name: "lmove", acl: "@list", tips: "", key_flags: "RW,ACCESS,DELETE", history: &[], doc_flags: "", deprecated_since: "", replaced_by: "" },
    Meta { name: "lmpop", acl: "@list", tips: "", key_flags: "RW,ACCESS,DELETE", history: &[], doc_flags: "", deprecated_since: "", replaced_by: "" },
    Meta { name: "lolwut", acl: "", tips: "", key_flags: "", history: &[], doc_flags: "", deprecated_since: "", replaced_by: "" },
    Meta { name: "lpop", acl: "@list", tips: "", key_flags: "RW,ACCESS,DELETE", history: &[("6.2.0", "Added the `count` argument.")], doc_flags: "", deprecated_since: "", replaced_by: "" },
    Meta { name: "lpos", acl: "@list", tips: "", key_flags: "RO,ACCESS", history: &[], doc_flags: "", deprecated_since: "", replaced_by: "" },
    Meta { name: "lpush", acl: "@list", tips: "", key_flags: "RW,INSERT", history: &[("2.4.0", "Accepts multiple `element` arguments.")], doc_flags: "", deprecated_since: "", replaced_by: "" },
    Meta { name: "lpushx", acl: "@list", tips: "", key_flags: "RW,INSERT", history: &[("4.0.0", "Accepts multiple `element` arguments.")], doc_flags: "", deprecated_since: "", replaced_by: "" },
    Meta { name: "lrange", acl: "@list", tips: "", key_flags: "RO,ACCESS", history: &[], doc_flags: "", deprecated_since: "", replaced_by: "" },
    Meta { name: "lrem", acl: "@list", tips: "", key_flags: "RW,DELETE", history: &[], doc_flags: "", deprecated_since: "", replaced_by: "" },
    Meta { name: "lset", acl: "@list", tips: "", key_flags: "RW,UPDATE", history: &[], doc_flags: "", deprecated_since: "", replaced_by: "" },
    Meta { name: "ltrim", acl: "@list", tips: "", key_flags: "RW,DELETE", history: &[], doc_flags: "", deprecated_since: "", replaced_by: "" },
    Meta { name: "memory", acl: "", tips: "", key_flags: "", history: &[], doc_flags: "", deprecated_since: "", replaced_by: "" },
    Meta { name: "memory|doctor", acl: "", tips: "nondeterministic_output,request_policy:all_shards,response_policy:special", key_flags: "", history: &[], doc_flags: "", deprecated_since: "", replaced_by: "" },
    Meta { name: "memory|help", acl: "", tips: "", key_flags: "", history: &[], doc_flags: "", deprecated_since: "", replaced_by: "" },
    Meta { name: "memory|malloc-stats", acl: "", tips: "nondeterministic_output,request_policy:all_shards,response_policy:special", key_flags: "", history: &[], doc_flags: "", deprecated_since: "", replaced_by: "" },
    Meta { name: "memory|purge", acl: "", tips: "request_policy:all_shards,response_policy:all_succeeded", key_flags: "", history: &[], doc_flags: "", deprecated_since: "", replaced_by: "" },
    Meta { name: "memory|stats", acl: "", tips: "nondeterministic_output,request_policy:all_shards,response_policy:special", key_flags: "", history: &[], doc_flags: "", deprecated_since: "", replaced_by: "" },
    Meta { name: "memory|usage", acl: "", tips: "", key_flags: "RO", history: &[], doc_flags: "", deprecated_since: "", replaced_by: "" },
    Meta { name: "mget", acl: "@string", tips: "request_policy:multi_shard", key_flags: "RO,ACCESS", history: &[], doc_flags: "", deprecated_since: "", replaced_by: "" },
    Meta { name: "migrate", acl: "@keyspace,@dangerous", tips: "nondeterministic_output", key_flags: "RW,ACCESS,DELETE", history: &[("3.0.0", "Added the `COPY` and `REPLACE` options."), ("3.0.6", "Added the `KEYS` option."), ("4.0.7", "Added the `AUTH` option."), ("6.0.0", "Added the `AUTH2` option.")], doc_flags: "", deprecated_since: "", replaced_by: "" },
    Meta { name: "module", acl: "", tips: "", key_flags: "", history: &[], doc_flags: "", deprecated_since: "", replaced_by: "" },
    Meta { name: "module|help", acl: "", tips: "", key_flags: "", history: &[], doc_flags: "", deprecated_since: "", replaced_by: "" },
    Meta { name: "module|list", acl: "", tips: "nondeterministic_output_order", key_flags: "", history: &[], doc_flags: "", deprecated_since: "", replaced_by: "" },
    Meta { name: "module|load", acl: "", tips: "", key_flags: "", history: &[], doc_flags: "", deprecated_since: "", replaced_by: "" },
    Meta { name: "module|loadex", acl: "", tips: "", key_flags: "", history: &[], doc_flags: "", deprecated_since: "", replaced_by: "" },
    Meta { name: "module|unload", acl: "", tips: "", key_flags: "", history: &[], doc_flags: "", deprecated_since: "", replaced_by: "" },
    Meta { name: "monitor", acl: "", tips: "", key_flags: "", history: &[], doc_flags: "", deprecated_since: "", replaced_by: "" },
    Meta { name: "move", acl: "@keyspace", tips: "", key_flags: "RW,ACCESS,UPDATE", history: &[], doc_flags: "", deprecated_since: "", replaced_by: "" },
    Meta { name: "mset", acl: "@string", tips: "request_policy:multi_shard,response_policy:all_succeeded", key_flags: "OW,UPDATE", history: &[], doc_flags: "", deprecated_since: "", replaced_by: "" },
    Meta { name: "msetnx", acl: "@string", tips: "request_policy:multi_shard,response_policy:agg_min", key_flags: "OW,INSERT", history: &[], doc_flags: "", deprecated_since: "", replaced_by: "" },
    Meta { name: "multi", acl: "@transaction", tips: "", key_flags: "", history: &[], doc_flags: "", deprecated_since: "", replaced_by: "" },
    Meta { name: "object", acl: "", tips: "", key_flags: "", history: &[], doc_flags: "", deprecated_since: "", replaced_by: "" },
    Meta { name: "object|encoding", acl: "@keyspace", tips: "nondeterministic_output", key_flags: "RO", history: &[], doc_flags: "", deprecated_since: "", replaced_by: "" },
    Meta { name: "object|freq", acl: "@keyspace", tips: "nondeterministic_output", key_flags: "RO", history: &[], doc_flags: "", deprecated_since: "", replaced_by: "" },
    Meta { name: "object|help", acl: "@keyspace", tips: "", key_flags: "", history: &[], doc_flags: "", deprecated_since: "", replaced_by: "" },
    Meta { name: "object|idletime", acl: "@keyspace", tips: "nondeterministic_output", key_flags: "RO", history: &[], doc_flags: "", deprecated_since: "", replaced_by: "" },
    Meta { name: "object|refcount", acl: "@keyspace", tips: "nondeterministic_output", key_flags: "RO", history: &[], doc_flags: "", deprecated_since: "", replaced_by: "" },
    Meta { name: "persist", acl: "@keyspace", tips: "", key_flags: "RW,UPDATE", history: &[], doc_flags: "", deprecated_since: "", replaced_by: "" },
    Meta { name: "pexpire", acl: "@keyspace", tips: "", key_flags: "RW,UPDATE", history: &[("7.0.0", "Added options: `NX`, `XX`, `GT` and `LT`.")], doc_flags: "", deprecated_since: "", replaced_by: "" },
    Meta { name: "pexpireat", acl: "@keyspace", tips: "", key_flags: "RW,UPDATE", history: &[("7.0.0", "Added options: `NX`, `XX`, `GT` and `LT`.")], doc_flags: "", deprecated_since: "", replaced_by: "" },
    Meta { name: "pexpiretime", acl: "@keyspace", tips: "", key_flags: "RO,ACCESS", history: &[], doc_flags: "", deprecated_since: "", replaced_by: "" },
    Meta { name: "pfadd", acl: "@hyperloglog", tips: "", key_flags: "RW,INSERT", history: &[], doc_flags: "", deprecated_since: "", replaced_by: "" },
    Meta { name: "pfcount", acl: "@hyperloglog", tips: "", key_flags: "RW,ACCESS", history: &[], doc_flags: "", deprecated_since: "", replaced_by: "" },
    Meta { name: "pfdebug", acl: "@hyperloglog", tips: "", key_flags: "RW,ACCESS", history: &[], doc_flags: "syscmd", deprecated_since: "", replaced_by: "" },
    Meta { name: "pfmerge", acl: "@hyperloglog", tips: "", key_flags: "RW,ACCESS,INSERT", history: &[], doc_flags: "", deprecated_since: "", replaced_by: "" },
    Meta { name: "pfselftest", acl: "@hyperloglog", tips: "", key_flags: "", history: &[], doc_flags: "syscmd", deprecated_since: "", replaced_by: "" },
    Meta { name: "ping", acl: "@connection", tips: "request_policy:all_shards,response_policy:all_succeeded", key_flags: "", history: &[], doc_flags: "", deprecated_since: "", replaced_by: "" },
    Meta { name: "psetex", acl: "@string", tips: "", key_flags: "OW,UPDATE", history: &[], doc_flags: "", deprecated_since: "", replaced_by: "" },
    Meta { name: "psubscribe", acl: "", tips: "", key_flags: "", history: &[], doc_flags: "", deprecated_since: "", replaced_by: "" },
    Meta { name: "psync", acl: "", tips: "", key_flags: "", history: &[], doc_flags: "", deprecated_since: "", replaced_by: "" },
    Meta { name: "pttl", acl: "@keyspace", tips: "nondeterministic_output", key_flags: "RO,ACCESS", history: &[("2.8.0", "Added the -2 reply.")], doc_flags: "", deprecated_since: "", replaced_by: "" },
    Meta { name: "publish", acl: "", tips: "", key_flags: "", history: &[], doc_flags: "", deprecated_since: "", replaced_by: "" },
    Meta { name: "pubsub", acl: "", tips: "", key_flags: "", history: &[], doc_flags: "", deprecated_since: "", replaced_by: "" },
    Meta { name: "pubsub|channels", acl: "", tips: "", key_flags: "", history: &[], doc_flags: "", deprecated_since: "", replaced_by: "" },
    Meta { name: "pubsub|help", acl: "", tips: "", key_flags: "", history: &[], doc_flags: "", deprecated_since: "", replaced_by: "" },
    Meta { name: "pubsub|numpat", acl: "", tips: "", key_flags: "", history: &[], doc_flags: "", deprecated_since: "", replaced_by: "" },
    Meta { name: "pubsub|numsub", acl: "", tips: "", key_flags: "", history: &[], doc_flags: "", deprecated_since: "", replaced_by: "" },
    Meta { name: "pubsub|shardchannels", acl: "", tips: "", key_flags: "", history: &[], doc_flags: "", deprecated_since: "", replaced_by: "" },
    Meta { name: "pubsub|shardnumsub", acl: "", tips: "", key_flags: "", history: &[], doc_flags: "", deprecated_since: "", replaced_by: "" },
    Meta { name: "punsubscribe", acl: "", tips: "", key_flags: "", history: &[], doc_flags: "", deprecated_since: "", replaced_by: "" },
    Meta { name: "quit", acl: "@connection", tips: "", key_flags: "", history: &[], doc_flags: "", deprecated_since: "", replaced_by: "" },
    Meta { name: "randomkey", acl: "@keyspace", tips: "request_policy:all_shards,nondeterministic_output", key_flags: "", history: &[], doc_flags: "", deprecated_since: "", replaced_by: "" },
    Meta { name: "readonly", acl: "@connection", tips: "", key_flags: "", history: &[], doc_flags: "", deprecated_since: "", replaced_by: "" },
    Meta { name: "readwrite", acl: "@connection", tips: "", key_flags: "", history: &[], doc_flags: "", deprecated_since: "", replaced_by: "" },
    Meta { name: "rename", acl: "@keyspace", tips: "", key_flags: "RW,ACCESS,DELETE", history: &[], doc_flags: "", deprecated_since: "", replaced_by: "" },
    Meta { name: "renamenx", acl: "@keyspace", tips: "", key_flags: "RW,ACCESS,DELETE", history: &[("3.2.0", "The command no longer returns an error when source and destination names are the same.")], doc_flags: "", deprecated_since: "", replaced_by: "" },
    Meta { name: "replconf", acl: "", tips: "", key_flags: "", history: &[], doc_flags: "syscmd", deprecated_since: "", replaced_by: "" },
    Meta { name: "replicaof", acl: "", tips: "", key_flags: "", history: &[], doc_flags: "", deprecated_since: "", replaced_by: "" },
    Meta { name: "reset", acl: "@connection", tips: "", key_flags: "", history: &[], doc_flags: "", deprecated_since: "", replaced_by: "" },
    Meta { name: "restore", acl: "@keyspace,@dangerous", tips: "", key_flags: "OW,UPDATE", history: &[("3.0.0", "Added the `REPLACE` modifier."), ("5.0.0", "Added the `ABSTTL` modifier."), ("5.0.0", "Added the `IDLETIME` and `FREQ` options.")], doc_flags: "", deprecated_since: "", replaced_by: "" },
    Meta { name: "restore-asking", acl: "@keyspace,@dangerous", tips: "", key_flags: "OW,UPDATE", history: &[("3.0.0", "Added the `REPLACE` modifier."), ("5.0.0", "Added the `ABSTTL` modifier."), ("5.0.0", "Added the `IDLETIME` and `FREQ` options.")], doc_flags: "syscmd", deprecated_since: "", replaced_by: "" },
    Meta { name: "role", acl: "@admin,@dangerous", tips: "", key_flags: "", history: &[], doc_flags: "", deprecated_since: "", replaced_by: "" },
    Meta { name: "rpop", acl: "@list", tips: "", key_flags: "RW,ACCESS,DELETE", history: &[("6.2.0", "Added the `count` argument.")], doc_flags: "", deprecated_since: "", replaced_by: "" },
    Meta { name: "rpoplpush", acl: "@list", tips: "", key_flags: "RW,ACCESS,DELETE", history: &[], doc_flags: "deprecated", deprecated_since: "6.2.0", replaced_by: "`LMOVE` with the `RIGHT` and `LEFT` arguments" },
    Meta { name: "rpush", acl: "@list", tips: "", key_flags: "RW,INSERT", history: &[("2.4.0", "Accepts multiple `element` arguments.")], doc_flags: "", deprecated_since: "", replaced_by: "" },
    Meta { name: "rpushx", acl: "@list", tips: "", key_flags: "RW,INSERT", history: &[("4.0.0", "Accepts multiple `element` arguments.")], doc_flags: "", deprecated_since: "", replaced_by: "" },
    Meta { name: "sadd", acl: "@set", tips: "", key_flags: "RW,INSERT", history: &[("2.4.0", "Accepts multiple `member` arguments.")], doc_flags: "", deprecated_since: "", replaced_by: "" },
    Meta { name: "save", acl: "", tips: "", key_flags: "", history: &[], doc_flags: "", deprecated_since: "", replaced_by: "" },
    Meta { name: "scan", acl: "@keyspace", tips: "nondeterministic_output,request_policy:special", key_flags: "", history: &[("6.0.0", "Added the `TYPE` subcommand.")], doc_flags: "", deprecated_since: "", replaced_by: "" },
    Meta { name: "scard", acl: "@set", tips: "", key_flags: "RO", history: &[], doc_flags: "", deprecated_since: "", replaced_by: "" },
    Meta { name: "script", acl: "", tips: "", key_flags: "", history: &[], doc_flags: "", deprecated_since: "", replaced_by: "" },
    Meta { name: "script|debug", acl: "@scripting", tips: "", key_flags: "", history: &[], doc_flags: "", deprecated_since: "", replaced_by: "" },
    Meta { name: "script|exists", acl: "@scripting", tips: "request_policy:all_shards,response_policy:agg_logical_and", key_flags: "", history: &[], doc_flags: "", deprecated_since: "", replaced_by: "" },
    Meta { name: "script|flush", acl: "@scripting", tips: "request_policy:all_nodes,response_policy:all_succeeded", key_flags: "", history: &[("6.2.0", "Added the `ASYNC` and `SYNC` flushing mode modifiers.")], doc_flags: "", deprecated_since: "", replaced_by: "" },
    Meta { name: "script|help", acl: "@scripting", tips: "", key_flags: "", history: &[], doc_flags: "", deprecated_since: "", replaced_by: "" },
    Meta { name: "script|kill", acl: "@scripting", tips: "request_policy:all_shards,response_policy:one_succeeded", key_flags: "", history: &[], doc_flags: "", deprecated_since: "", replaced_by: "" },
    Meta { name: "script|load", acl: "@scripting", tips: "request_policy:all_nodes,response_policy:all_succeeded", key_flags: "", history: &[], doc_flags: "", deprecated_since: "", replaced_by: "" },
    Meta { name: "sdiff", acl: "@set", tips: "nondeterministic_output_order", key_flags: "RO,ACCESS", history: &[], doc_flags: "", deprecated_since: "", replaced_by: "" },
    Meta { name: "sdiffstore", acl: "@set", tips: "", key_flags: "OW,UPDATE", history: &[], doc_flags: "", deprecated_since: "", replaced_by: "" },
    Meta { name: "select", acl: "@connection", tips: "", key_flags: "", history: &[], doc_flags: "", deprecated_since: "", replaced_by: "" },
    Meta { name: "sentinel", acl: "", tips: "", key_flags: "", history: &[], doc_flags: "", deprecated_since: "", replaced_by: "" },
    Meta { name: "sentinel|ckquorum", acl: "", tips: "", key_flags: "", history: &[], doc_flags: "", deprecated_since: "", replaced_by: "" },
    Meta { name: "sentinel|config", acl: "", tips: "", key_flags: "", history: &[], doc_flags: "", deprecated_since: "", replaced_by: "" },
    Meta { name: "sentinel|debug", acl: "", tips: "", key_flags: "", history: &[], doc_flags: "", deprecated_since: "", replaced_by: "" },
    Meta { name: "sentinel|failover", acl: "", tips: "", key_flags: "", history: &[], doc_flags: "", deprecated_since: "", replaced_by: "" },
    Meta { name: "sentinel|flushconfig", acl: "", tips: "", key_flags: "", history: &[], doc_flags: "", deprecated_since: "", replaced_by: "" },
    Meta { name: "sentinel|get-master-addr-by-name", acl: "", tips: "", key_flags: "", history: &[], doc_flags: "", deprecated_since: "", replaced_by: "" },
    Meta { name: "sentinel|help", acl: "", tips: "", key_flags: "", history: &[], doc_flags: "", deprecated_since: "", replaced_by: "" },
    Meta { name: "sentinel|info-cache", acl: "", tips: "", key_flags: "", history: &[], doc_flags: "", deprecated_since: "", replaced_by: "" },
    Meta { name: "sentinel|is-master-down-by-addr", acl: "", tips: "", key_flags: "", history: &[], doc_flags: "", deprecated_since: "", replaced_by: "" },
    Meta { name: "sentinel|master", acl: "", tips: "", key_flags: "", history: &[], doc_flags: "", deprecated_since: "", replaced_by: "" },
    Meta { name: "sentinel|masters", acl: "", tips: "", key_flags: "", history: &[], doc_flags: "", deprecated_since: "", replaced_by: "" },
    Meta { name: "sentinel|monitor", acl: "", tips: "", key_flags: "", history: &[], doc_flags: "", deprecated_since: "", replaced_by: "" },
    Meta { name: "sentinel|myid", acl: "", tips: "", key_flags: "", history: &[], doc_flags: "", deprecated_since: "", replaced_by: "" },
    Meta { name: "sentinel|pending-scripts", acl: "", tips: "", key_flags: "", history: &[], doc_flags: "", deprecated_since: "", replaced_by: "" },
    Meta { name: "sentinel|remove", acl: "", tips: "", key_flags: "", history: &[], doc_flags: "", deprecated_since: "", replaced_by: "" },
    Meta { name: "sentinel|replicas", acl: "", tips: "", key_flags: "", history: &[], doc_flags: "", deprecated_since: "", replaced_by: "" },
    Meta { name: "sentinel|reset", acl: "", tips: "", key_flags: "", history: &[], doc_flags: "", deprecated_since: "", replaced_by: "" },
    Meta { name: "sentinel|sentinels", acl: "", tips: "", key_flags: "", history: &[], doc_flags: "", deprecated_since: "", replaced_by: "" },
    Meta { name: "sentinel|set", acl: "", tips: "", key_flags: "", history: &[], doc_flags: "", deprecated_since: "", replaced_by: "" },
    Meta { name: "sentinel|simulate-failure", acl: "", tips: "", key_flags: "", history: &[], doc_flags: "", deprecated_since: "", replaced_by: "" },
    Meta { name: "sentinel|slaves", acl: "", tips: "", key_flags: "", history: &[], doc_flags: "deprecated", deprecated_since: "5.0.0", replaced_by: "`SENTINEL REPLICAS`" },
    Meta { name: "set", acl: "@string", tips: "", key_flags: "RW,ACCESS,UPDATE,VARIABLE_FLAGS", history: &[("2.6.12", "Added the `EX`, `PX`, `NX` and `XX` options."), ("6.0.0", "Added the `KEEPTTL` option."), ("6.2.0", "Added the `GET`, `EXAT` and `PXAT` option."), ("7.0.0", "Allowed the `NX` and `GET` options to be used together.")], doc_flags: "", deprecated_since: "", replaced_by: "" },
    Meta { name: "setbit", acl: "@bitmap", tips: "", key_flags: "RW,ACCESS,UPDATE", history: &[], doc_flags: "", deprecated_since: "", replaced_by: "" },
    Meta { name: "setex", acl: "@string", tips: "", key_flags: "OW,UPDATE", history: &[], doc_flags: "", deprecated_since: "", replaced_by: "" },
    Meta { name: "setnx", acl: "@string", tips: "", key_flags: "OW,INSERT", history: &[], doc_flags: "", deprecated_since: "", replaced_by: "" },
    Meta { name: "setrange", acl: "@string", tips: "", key_flags: "RW,UPDATE", history: &[], doc_flags: "", deprecated_since: "", replaced_by: "" },
    Meta { name: "shutdown", acl: "", tips: "", key_flags: "", history: &[("7.0.0", "Added the `NOW`, `FORCE` and `ABORT` modifiers.")], doc_flags: "", deprecated_since: "", replaced_by: "" },
    Meta { name: "sinter", acl: "@set", tips: "nondeterministic_output_order", key_flags: "RO,ACCESS", history: &[], doc_flags: "", deprecated_since: "", replaced_by: "" },
    Meta { name: "sintercard", acl: "@set", tips: "", key_flags: "RO,ACCESS", history: &[], doc_flags: "", deprecated_since: "", replaced_by: "" },
    Meta { name: "sinterstore", acl: "@set", tips: "", key_flags: "RW,UPDATE", history: &[], doc_flags: "", deprecated_since: "", replaced_by: "" },
    Meta { name: "sismember", acl: "@set", tips: "", key_flags: "RO", history: &[], doc_flags: "", deprecated_since: "", replaced_by: "" },
    Meta { name: "slaveof", acl: "", tips: "", key_flags: "", history: &[], doc_flags: "deprecated", deprecated_since: "5.0.0", replaced_by: "`REPLICAOF`" },
    Meta { name: "slowlog", acl: "", tips: "", key_flags: "", history: &[], doc_flags: "", deprecated_since: "", replaced_by: "" },
    Meta { name: "slowlog|get", acl: "", tips: "request_policy:all_nodes,nondeterministic_output", key_flags: "", history: &[("4.0.0", "Added client IP address, port and name to the reply.")], doc_flags: "", deprecated_since: "", replaced_by: "" },
    Meta { name: "slowlog|help", acl: "", tips: "", key_flags: "", history: &[], doc_flags: "", deprecated_since: "", replaced_by: "" },
    Meta { name: "slowlog|len", acl: "", tips: "request_policy:all_nodes,response_policy:agg_sum,nondeterministic_output", key_flags: "", history: &[], doc_flags: "", deprecated_since: "", replaced_by: "" },
    Meta { name: "slowlog|reset", acl: "", tips: "request_policy:all_nodes,response_policy:all_succeeded", key_flags: "", history: &[], doc_flags: "", deprecated_since: "", replaced_by: "" },
    Meta { name: "smembers", acl: "@set", tips: "nondeterministic_output_order", key_flags: "RO,ACCESS", history: &[], doc_flags: "", deprecated_since: "", replaced_by: "" },
    Meta { name: "smismember", acl: "@set", tips: "", key_flags: "RO,ACCESS", history: &[], doc_flags: "", deprecated_since: "", replaced_by: "" },
    Meta { name: "smove", acl: "@set", tips: "", key_flags: "RW,ACCESS,DELETE", history: &[], doc_flags: "", deprecated_since: "", replaced_by: "" },
    Meta { name: "sort", acl: "@set,@sortedset,@list,@dangerous", tips: "", key_flags: "RO,ACCESS", history: &[], doc_flags: "", deprecated_since: "", replaced_by: "" },
    Meta { name: "sort_ro", acl: "@set,@sortedset,@list,@dangerous", tips: "", key_flags: "RO,ACCESS", history: &[], doc_flags: "", deprecated_since: "", replaced_by: "" },
    Meta { name: "spop", acl: "@set", tips: "nondeterministic_output", key_flags: "RW,ACCESS,DELETE", history: &[("3.2.0", "Added the `count` argument.")], doc_flags: "", deprecated_since: "", replaced_by: "" },
    Meta { name: "spublish", acl: "", tips: "", key_flags: "NOT_KEY", history: &[], doc_flags: "", deprecated_since: "", replaced_by: "" },
    Meta { name: "srandmember", acl: "@set", tips: "nondeterministic_output", key_flags: "RO,ACCESS", history: &[("2.6.0", "Added the optional `count` argument.")], doc_flags: "", deprecated_since: "", replaced_by: "" },
    Meta { name: "srem", acl: "@set", tips: "", key_flags: "RW,DELETE", history: &[("2.4.0", "Accepts multiple `member` arguments.")], doc_flags: "", deprecated_since: "", replaced_by: "" },
    Meta { name: "sscan", acl: "@set", tips: "nondeterministic_output", key_flags: "RO,ACCESS", history: &[], doc_flags: "", deprecated_since: "", replaced_by: "" },
    Meta { name: "ssubscribe", acl: "", tips: "", key_flags: "NOT_KEY", history: &[], doc_flags: "", deprecated_since: "", replaced_by: "" },
    Meta { name: "strlen", acl: "@string", tips: "", key_flags: "RO", history: &[], doc_flags: "", deprecated_since: "", replaced_by: "" },
    Meta { name: "subscribe", acl: "", tips: "", key_flags: "", history: &[], doc_flags: "", deprecated_since: "", replaced_by: "" },
    Meta { name: "substr", acl: "@string", tips: "", key_flags: "RO,ACCESS", history: &[], doc_flags: "deprecated", deprecated_since: "2.0.0", replaced_by: "`GETRANGE`" },
    Meta { name: "sunion", acl: "@set", tips: "nondeterministic_output_order", key_flags: "RO,ACCESS", history: &[], doc_flags: "", deprecated_since: "", replaced_by: "" },
    Meta { name: "sunionstore", acl: "@set", tips: "", key_flags: "OW,UPDATE", history: &[], doc_flags: "", deprecated_since: "", replaced_by: "" },
    Meta { name: "sunsubscribe", acl: "", tips: "", key_flags: "NOT_KEY", history: &[], doc_flags: "", deprecated_since: "", replaced_by: "" },
    Meta { name: "swapdb", acl: "@keyspace,@dangerous", tips: "", key_flags: "", history: &[], doc_flags: "", deprecated_since: "", replaced_by: "" },
    Meta { name: "sync", acl: "", tips: "", key_flags: "", history: &[], doc_flags: "", deprecated_since: "", replaced_by: "" },
    Meta { name: "time", acl: "", tips: "nondeterministic_output", key_flags: "", history: &[], doc_flags: "", deprecated_since: "", replaced_by: "" },
    Meta { name: "touch", acl: "@keyspace", tips: "request_policy:multi_shard,response_policy:agg_sum", key_flags: "RO", history: &[], doc_flags: "", deprecated_since: "", replaced_by: "" },
    Meta { name: "ttl", acl: "@keyspace", tips: "nondeterministic_output", key_flags: "RO,ACCESS", history: &[("2.8.0", "Added the -2 reply.")], doc_flags: "", deprecated_since: "", replaced_by: "" },
    Meta { name: "type", acl: "@keyspace", tips: "", key_flags: "RO", history: &[], doc_flags: "", deprecated_since: "", replaced_by: "" },
    Meta { name: "unlink", acl: "@keyspace", tips: "request_policy:multi_shard,response_policy:agg_sum", key_flags: "RM,DELETE", history: &[], doc_flags: "", deprecated_since: "", replaced_by: "" },
    Meta { name: "unsubscribe", acl: "", tips: "", key_flags: "", history: &[], doc_flags: "", deprecated_since: "", replaced_by: "" },
    Meta { name: "unwatch", acl: "@transaction", tips: "", key_flags: "", history: &[], doc_flags: "", deprecated_since: "", replaced_by: "" },
    Meta { name: "wait", acl: "@connection", tips: "request_policy:all_shards,response_policy:agg_min", key_flags: "", history: &[], doc_flags: "", deprecated_since: "", replaced_by: "" },
    Meta { name: "watch", acl: "@transaction", tips: "", key_flags: "RO", history: &[], doc_flags: "", deprecated_since: "", replaced_by: "" },
    Meta { name: "xack", acl: "@stream", tips: "", key_flags: "RW,UPDATE", history: &[], doc_flags: "", deprecated_since: "", replaced_by: "" },
    Meta { name: "xadd", acl: "@stream", tips: "nondeterministic_output", key_flags: "RW,UPDATE", history: &[("6.2.0", "Added the `NOMKSTREAM` option, `MINID` trimming strategy and the `LIMIT` option."), ("7.0.0", "Added support for the `<ms>-*` explicit ID form.")], doc_flags: "", deprecated_since: "", replaced_by: "" },
    Meta { name: "xautoclaim", acl: "@stream", tips: "nondeterministic_output", key_flags: "RW,DELETE", history: &[("7.0.0", "Added an element to the reply array, containing deleted entries the command cleared from the PEL")], doc_flags: "", deprecated_since: "", replaced_by: "" },
    Meta { name: "xclaim", acl: "@stream", tips: "nondeterministic_output", key_flags: "RW,UPDATE", history: &[], doc_flags: "", deprecated_since: "", replaced_by: "" },
    Meta { name: "xdel", acl: "@stream", tips: "", key_flags: "RW,DELETE", history: &[], doc_flags: "", deprecated_since: "", replaced_by: "" },
    Meta { name: "xgroup", acl: "", tips: "", key_flags: "", history: &[], doc_flags: "", deprecated_since: "", replaced_by: "" },
    Meta { name: "xgroup|create", acl: "@stream", tips: "", key_flags: "RW,INSERT", history: &[("7.0.0", "Added the `entries_read` named argument.")], doc_flags: "", deprecated_since: "", replaced_by: "" },
    Meta { name: "xgroup|createconsumer", acl: "@stream", tips: "", key_flags: "RW,INSERT", history: &[], doc_flags: "", deprecated_since: "", replaced_by: "" },
    Meta { name: "xgroup|delconsumer", acl: "@stream", tips: "", key_flags: "RW,DELETE", history: &[], doc_flags: "", deprecated_since: "", replaced_by: "" },
    Meta { name: "xgroup|destroy", acl: "@stream", tips: "", key_flags: "RW,DELETE", history: &[], doc_flags: "", deprecated_since: "", replaced_by: "" },
    Meta { name: "xgroup|help", acl: "@stream", tips: "", key_flags: "", history: &[], doc_flags: "", deprecated_since: "", replaced_by: "" },
    Meta { name: "xgroup|setid", acl: "@stream", tips: "", key_flags: "RW,UPDATE", history: &[("7.0.0", "Added the optional `entries_read` argument.")], doc_flags: "", deprecated_since: "", replaced_by: "" },
    Meta { name: "xinfo", acl: "", tips: "", key_flags: "", history: &[], doc_flags: "", deprecated_since: "", replaced_by: "" },
    Meta { name: "xinfo|consumers", acl: "@stream", tips: "nondeterministic_output", key_flags: "RO,ACCESS", history: &[], doc_flags: "", deprecated_since: "", replaced_by: "" },
    Meta { name: "xinfo|groups", acl: "@stream", tips: "", key_flags: "RO,ACCESS", history: &[("7.0.0", "Added the `entries-read` and `lag` fields")], doc_flags: "", deprecated_since: "", replaced_by: "" },
    Meta { name: "xinfo|help", acl: "@stream", tips: "", key_flags: "", history: &[], doc_flags: "", deprecated_since: "", replaced_by: "" },
    Meta { name: "xinfo|stream", acl: "@stream", tips: "", key_flags: "RO,ACCESS", history: &[("6.0.0", "Added the `FULL` modifier."), ("7.0.0", "Added the `max-deleted-entry-id`, `entries-added`, `recorded-first-entry-id`, `entries-read` and `lag` fields")], doc_flags: "", deprecated_since: "", replaced_by: "" },
    Meta { name: "xlen", acl: "@stream", tips: "", key_flags: "RO", history: &[], doc_flags: "", deprecated_since: "", replaced_by: "" },
    Meta { name: "xpending", acl: "@stream", tips: "nondeterministic_output", key_flags: "RO,ACCESS", history: &[("6.2.0", "Added the `IDLE` option and exclusive range intervals.")], doc_flags: "", deprecated_since: "", replaced_by: "" },
    Meta { name: "xrange", acl: "@stream", tips: "", key_flags: "RO,ACCESS", history: &[("6.2.0", "Added exclusive ranges.")], doc_flags: "", deprecated_since: "", replaced_by: "" },
    Meta { name: "xread", acl: "@stream", tips: "", key_flags: "RO,ACCESS", history: &[], doc_flags: "", deprecated_since: "", replaced_by: "" },
    Meta { name: "xreadgroup", acl: "@stream", tips: "", key_flags: "RO,ACCESS", history: &[], doc_flags: "", deprecated_since: "", replaced_by: "" },
    Meta { name: "xrevrange", acl: "@stream", tips: "", key_flags: "RO,ACCESS", history: &[("6.2.0", "Added exclusive ranges.")], doc_flags: "", deprecated_since: "", replaced_by: "" },
    Meta { name: "xsetid", acl: "@stream", tips: "", key_flags: "RW,UPDATE", history: &[("7.0.0", "Added the `entries_added` and `max_deleted_entry_id` arguments.")], doc_flags: "", deprecated_since: "", replaced_by: "" },
    Meta { name: "xtrim", acl: "@stream", tips: "nondeterministic_output", key_flags: "RW,DELETE", history: &[("6.2.0", "Added the `MINID` trimming strategy and the `LIMIT` option.")], doc_flags: "", deprecated_since: "", replaced_by: "" },
    Meta { name: "zadd", acl: "@sortedset", tips: "", key_flags: "RW,UPDATE", history: &[("2.4.0", "Accepts multiple elements."), ("3.0.2", "Added the `XX`, `NX`, `CH` and `INCR` options."), ("6.2.0", "Added the `GT` and `LT` options.")], doc_flags: "", deprecated_since: "", replaced_by: "" },
    Meta { name: "zcard", acl: "@sortedset", tips: "", key_flags: "RO", history: &[], doc_flags: "", deprecated_since: "", replaced_by: "" },
    Meta { name: "zcount", acl: "@sortedset", tips: "", key_flags: "RO,ACCESS", history: &[], doc_flags: "", deprecated_since: "", replaced_by: "" },
    Meta { name: "zdiff", acl: "@sortedset", tips: "", key_flags: "RO,ACCESS", history: &[], doc_flags: "", deprecated_since: "", replaced_by: "" },
    Meta { name: "zdiffstore", acl: "@sortedset", tips: "", key_flags: "OW,UPDATE", history: &[], doc_flags: "", deprecated_since: "", replaced_by: "" },
    Meta { name: "zincrby", acl: "@sortedset", tips: "", key_flags: "RW,ACCESS,UPDATE", history: &[], doc_flags: "", deprecated_since: "", replaced_by: "" },
    Meta { name: "zinter", acl: "@sortedset", tips: "", key_flags: "RO,ACCESS", history: &[], doc_flags: "", deprecated_since: "", replaced_by: "" },
    Meta { name: "zintercard", acl: "@sortedset", tips: "", key_flags: "RO,ACCESS", history: &[], doc_flags: "", deprecated_since: "", replaced_by: "" },
    Meta { name: "zinterstore", acl: "@sortedset", tips: "", key_flags: "OW,UPDATE", history: &[], doc_flags: "", deprecated_since: "", replaced_by: "" },
    Meta { name: "zlexcount", acl: "@sortedset", tips: "", key_flags: "RO,ACCESS", history: &[], doc_flags: "", deprecated_since: "", replaced_by: "" },
    Meta { name: "zmpop", acl: "@sortedset", tips: "", key_flags: "RW,ACCESS,DELETE", history: &[], doc_flags: "", deprecated_since: "", replaced_by: "" },
    Meta { name: "zmscore", acl: "@sortedset", tips: "", key_flags: "RO,ACCESS", history: &[], doc_flags: "", deprecated_since: "", replaced_by: "" },
    Meta { name: "zpopmax", acl: "@sortedset", tips: "", key_flags: "RW,ACCESS,DELETE", history: &[], doc_flags: "", deprecated_since: "", replaced_by: "" },
    Meta { name: "zpopmin", acl: "@sortedset", tips: "", key_flags: "RW,ACCESS,DELETE", history: &[], doc_flags: "", deprecated_since: "", replaced_by: "" },
    Meta { name: "zrandmember", acl: "@sortedset", tips: "nondeterministic_output", key_flags: "RO,ACCESS", history: &[], doc_flags: "", deprecated_since: "", replaced_by: "" },
    Meta { name: "zrange", acl: "@sortedset", tips: "", key_flags: "RO,ACCESS", history: &[("6.2.0", "Added the `REV`, `BYSCORE`, `BYLEX` and `LIMIT` options.")], doc_flags: "", deprecated_since: "", replaced_by: "" },
    Meta { name: "zrangebylex", acl: "@sortedset", tips: "", key_flags: "RO,ACCESS", history: &[], doc_flags: "deprecated", deprecated_since: "6.2.0", replaced_by: "`ZRANGE` with the `BYLEX` argument" },
    Meta { name: "zrangebyscore", acl: "@sortedset", tips: "", key_flags: "RO,ACCESS", history: &[("2.0.0", "Added the `WITHSCORES` modifier.")], doc_flags: "deprecated", deprecated_since: "6.2.0", replaced_by: "`ZRANGE` with the `BYSCORE` argument" },
    Meta { name: "zrangestore", acl: "@sortedset", tips: "", key_flags: "OW,UPDATE", history: &[], doc_flags: "", deprecated_since: "", replaced_by: "" },
    Meta { name: "zrank", acl: "@sortedset", tips: "", key_flags: "RO,ACCESS", history: &[], doc_flags: "", deprecated_since: "", replaced_by: "" },
    Meta { name: "zrem", acl: "@sortedset", tips: "", key_flags: "RW,DELETE", history: &[("2.4.0", "Accepts multiple elements.")], doc_flags: "", deprecated_since: "", replaced_by: "" },
    Meta { name: "zremrangebylex", acl: "@sortedset", tips: "", key_flags: "RW,DELETE", history: &[], doc_flags: "", deprecated_since: "", replaced_by: "" },
    Meta { name: "zremrangebyrank", acl: "@sortedset", tips: "", key_flags: "RW,DELETE", history: &[], doc_flags: "", deprecated_since: "", replaced_by: "" },
    Meta { name: "zremrangebyscore", acl: "@sortedset", tips: "", key_flags: "RW,DELETE", history: &[], doc_flags: "", deprecated_since: "", replaced_by: "" },
    Meta { name: "zrevrange", acl: "@sortedset", tips: "", key_flags: "RO,ACCESS", history: &[], doc_flags: "deprecated", deprecated_since: "6.2.0", replaced_by: "`ZRANGE` with the `REV` argument" },
    Meta { name: "zrevrangebylex", acl: "@sortedset", tips: "", key_flags: "RO,ACCESS", history: &[], doc_flags: "deprecated", deprecated_since: "6.2.0", replaced_by: "`ZRANGE` with the `REV` and `BYLEX` arguments" },
    Meta { name: "zrevrangebyscore", acl: "@sortedset", tips: "", key_flags: "RO,ACCESS", history: &[("2.1.6", "`min` and `max` can be exclusive.")], doc_flags: "deprecated", deprecated_since: "6.2.0", replaced_by: "`ZRANGE` with the `REV` and `BYSCORE` arguments" },
    Meta { name: "zrevrank", acl: "@sortedset", tips: "", key_flags: "RO,ACCESS", history: &[], doc_flags: "", deprecated_since: "", replaced_by: "" },
    Meta { name: "zscan", acl: "@sortedset", tips: "nondeterministic_output", key_flags: "RO,ACCESS", history: &[], doc_flags: "", deprecated_since: "", replaced_by: "" },
    Meta { name: "zscore", acl: "@sortedset", tips: "", key_flags: "RO,ACCESS", history: &[], doc_flags: "", deprecated_since: "", replaced_by: "" },
    Meta { name: "zunion", acl: "@sortedset", tips: "", key_flags: "RO,ACCESS", history: &[], doc_flags: "", deprecated_since: "", replaced_by: "" },
    Meta { name: "zunionstore", acl: "@sortedset", tips: "", key_flags: "OW,UPDATE", history: &[], doc_flags: "", deprecated_since: "", replaced_by: "" },
];

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testkit::{TestServer, show};

    /// Walks the whole command table for consistency.
    #[test]
    fn table_is_consistent() {
        assert!(META.windows(2).all(|w| w[0].name < w[1].name), "META sorted");
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
                assert!(!cmd.summary.is_empty(), "{} summary", cmd.name);
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
        assert!(d.contains("\"arguments\": [{\"name\": \"key\", \"type\": \"key\", \"key_spec_index\": :0}, {\"name\": \"value\", \"type\": \"string\"}, {\"name\": \"nx_xx_comparison-value\", \"type\": \"oneof\", \"flags\": ~[+optional], \"arguments\": [{\"name\": \"nx\", \"type\": \"pure-token\", \"token\": \"NX\"}"), "{d}");
        assert!(d.contains("{\"name\": \"seconds\", \"type\": \"integer\", \"token\": \"EX\"}"), "{d}");
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
            [["a", ~[+RW, +access, +update, +variable_flags]]]
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
