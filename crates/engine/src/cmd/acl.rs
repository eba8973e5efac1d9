//! ACL and its subcommands (SETUSER, GETUSER, DELUSER, USERS, LIST, WHOAMI, CAT, GENPASS, LOG,
//! DRYRUN, SAVE, LOAD, HELP) over [`crate::acl`], and [`meta`]: the categories and key specs the
//! runtime's permission check reads, derived from the one metadata source (Redis 7.0.15's own
//! COMMAND answer for its commands, the table rows for Latch's).

use super::base::BASE;
use super::introspection::{acl_categories, redis_meta};
use crate::acl::{Begin, Find, KeySpec, Meta, key_flags};
use crate::command::Flags;
use crate::ctx::{Command, CommandTable, Ctx};
use bytes::Bytes;
use resp::Frame;
use std::sync::Arc;
use std::sync::atomic::Ordering;

const ADMIN: Flags = Flags::ADMIN.or(Flags::NOSCRIPT).or(Flags::LOADING).or(Flags::STALE);
const NS: Flags = Flags::NOSCRIPT.or(Flags::LOADING).or(Flags::STALE);

/// Table entries.
pub static COMMANDS: &[Command] = &[Command {
    name: "acl",
    arity: -2,
    group: crate::command::Group::Server,
    since: "6.0.0",
    subcommands: SUBCOMMANDS,
    ..BASE
}];

static SUBCOMMANDS: &[Command] = &[
    Command { name: "acl|cat", arity: -2, flags: NS, handler: cat, ..SUB },
    Command { name: "acl|deluser", arity: -3, flags: ADMIN, handler: deluser, ..SUB },
    Command { name: "acl|dryrun", arity: -4, flags: ADMIN, handler: dryrun, since: "7.0.0", ..SUB },
    Command { name: "acl|genpass", arity: -2, flags: NS, handler: genpass, ..SUB },
    Command { name: "acl|getuser", arity: 3, flags: ADMIN, handler: getuser, ..SUB },
    Command { name: "acl|help", arity: 2, flags: Flags::LOADING.or(Flags::STALE), handler: help, ..SUB },
    Command { name: "acl|list", arity: 2, flags: ADMIN, handler: list, ..SUB },
    Command { name: "acl|load", arity: 2, flags: ADMIN, handler: load, ..SUB },
    Command { name: "acl|log", arity: -2, flags: ADMIN, handler: log, ..SUB },
    Command { name: "acl|save", arity: 2, flags: ADMIN, handler: save, ..SUB },
    Command { name: "acl|setuser", arity: -3, flags: ADMIN, handler: setuser, ..SUB },
    Command { name: "acl|users", arity: 2, flags: ADMIN, handler: users, ..SUB },
    Command { name: "acl|whoami", arity: 2, flags: NS, handler: whoami, ..SUB },
];

const SUB: Command = Command { group: crate::command::Group::Server, since: "6.0.0", ..BASE };

/// The metadata the permission check needs, for every command of `table`.
pub fn meta(table: &'static CommandTable) -> Meta {
    let n = table.id_count();
    let mut categories = vec![0u32; n];
    let mut specs = vec![Vec::new(); n];
    for c in table.all().iter().flat_map(|c| std::iter::once(*c).chain(c.subcommands.iter())) {
        let id = usize::from(c.id);
        if id >= n {
            continue;
        }
        categories[id] = acl_categories(c)
            .iter()
            .filter_map(|s| crate::acl::category_bit(s.trim_start_matches('@').as_bytes()))
            .fold(0, |a, b| a | b);
        specs[id] = key_specs(c);
    }
    let mut m = Meta::new(table, categories, specs, Vec::new());
    // What the check can take as read per command: not SET's and BITFIELD's (their arguments
    // decide), nor SORT's (its STORE key is a write).
    m.uniform = vec![crate::acl::NOT_UNIFORM; n];
    for c in table.all().iter().flat_map(|c| std::iter::once(*c).chain(c.subcommands.iter())) {
        let id = usize::from(c.id);
        if id < n && !matches!(c.name, "set" | "bitfield" | "sort") {
            m.uniform[id] = m.uniform_flags_of(c, &[]).unwrap_or(crate::acl::NOT_UNIFORM);
        }
    }
    m
}

/// A command's key specs from Redis's COMMAND INFO entry (none for Latch's own commands: the check
/// derives their access from the flags).
fn key_specs(c: &Command) -> Vec<KeySpec> {
    let Some(m) = redis_meta(c.name) else { return Vec::new() };
    let Frame::Array(f) = &m.info else { return Vec::new() };
    let Some(Frame::Array(specs) | Frame::Set(specs)) = f.get(8) else { return Vec::new() };
    specs.iter().map(spec).collect()
}

fn text(f: &Frame) -> String {
    match f {
        Frame::Bulk(b) | Frame::Simple(b) => String::from_utf8_lossy(b).into_owned(),
        Frame::Integer(i) => i.to_string(),
        _ => String::new(),
    }
}

fn get<'f>(m: &'f Frame, key: &str) -> Option<&'f Frame> {
    match m {
        Frame::Map(pairs) => pairs.iter().find(|(k, _)| text(k) == key).map(|(_, v)| v),
        Frame::Array(v) => v.chunks(2).find(|p| text(&p[0]) == key).and_then(|p| p.get(1)),
        _ => None,
    }
}

fn int(m: Option<&Frame>, key: &str) -> i32 {
    m.and_then(|m| get(m, key)).and_then(|v| text(v).parse().ok()).unwrap_or(0)
}

fn spec(s: &Frame) -> KeySpec {
    let mut flags = 0;
    if let Some(Frame::Set(v) | Frame::Array(v)) = get(s, "flags") {
        for f in v {
            flags |= match text(f).to_ascii_lowercase().as_str() {
                "access" => key_flags::ACCESS,
                "insert" => key_flags::INSERT,
                "delete" => key_flags::DELETE,
                "update" => key_flags::UPDATE,
                "incomplete" => key_flags::INCOMPLETE,
                "not_key" => key_flags::NOT_KEY,
                _ => 0,
            };
        }
    }
    let bs = get(s, "begin_search");
    let bspec = bs.and_then(|b| get(b, "spec"));
    let begin = match bs.and_then(|b| get(b, "type")).map(text).as_deref() {
        Some("index") => Begin::Index(int(bspec, "index")),
        Some("keyword") => Begin::Keyword(
            bspec.and_then(|b| get(b, "keyword")).map(text).unwrap_or_default().into_bytes(),
            int(bspec, "startfrom"),
        ),
        _ => Begin::Unknown,
    };
    let fk = get(s, "find_keys");
    let fspec = fk.and_then(|f| get(f, "spec"));
    let find = match fk.and_then(|f| get(f, "type")).map(text).as_deref() {
        Some("range") => Find::Range(int(fspec, "lastkey"), int(fspec, "keystep"), int(fspec, "limit")),
        Some("keynum") => Find::Keynum(int(fspec, "keynumidx"), int(fspec, "firstkey"), int(fspec, "keystep")),
        _ => Find::Unknown,
    };
    KeySpec { flags, begin, find }
}

fn bulk(s: impl AsRef<[u8]>) -> Frame {
    Frame::bulk(Bytes::copy_from_slice(s.as_ref()))
}

fn lossy(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

fn no_meta() -> Frame {
    Frame::error("ERR ACL is not available on this server")
}

/// Keeps the `default` user's derived state in step after a change: whether new connections
/// must authenticate.
fn default_changed(ctx: &Ctx<'_, '_>) {
    let srv = ctx.srv;
    srv.config.has_password.store(!srv.acl.default().nopass_enabled(), Ordering::Relaxed);
}

fn sync_pubsub_default(ctx: &Ctx<'_, '_>) {
    ctx.srv.acl.pubsub_all.store(ctx.srv.config.acl_pubsub_all.load(Ordering::Relaxed), Ordering::Relaxed);
}

/// Disconnects every client authenticated as one of `gone` (deleted users), the caller after its
/// reply, as Redis's `ACLFreeUserAndKillClients`.
fn kill_users_clients(ctx: &mut Ctx<'_, '_>, gone: &[Arc<crate::acl::User>]) {
    if gone.is_empty() {
        return;
    }
    if let Some(me) = &ctx.client.user
        && gone.iter().any(|g| Arc::ptr_eq(g, me))
    {
        ctx.client.close_after_reply = true;
        ctx.client.authenticated = false;
    }
    for info in ctx.srv.clients.snapshot() {
        if info.id == ctx.client.id {
            continue;
        }
        let name = info.user.lock().clone();
        if gone.iter().any(|g| g.name == name) {
            info.kill();
            ctx.srv.clients.unregister(info.id);
        }
    }
}

fn setuser(ctx: &mut Ctx<'_, '_>) -> Frame {
    let name = ctx.arg(2);
    if name.iter().any(|b| b.is_ascii_whitespace() || *b == 0 || *b == 0x0b) {
        return Frame::error("ERR Usernames can't contain spaces or null characters");
    }
    if ctx.srv.acl.meta().is_none() {
        return no_meta();
    }
    sync_pubsub_default(ctx);
    match ctx.srv.acl.set_user(name, &ctx.args[3..]) {
        Ok(out) => {
            if let Some((user, allowed)) = out.revoked {
                for info in ctx.srv.pubsub.subscribers_outside(&user.name, &allowed) {
                    if info.id == ctx.client.id {
                        ctx.client.close_after_reply = true;
                    } else {
                        info.kill();
                        ctx.srv.clients.unregister(info.id);
                    }
                }
            }
            default_changed(ctx);
            Frame::ok()
        }
        Err(e) => Frame::error(format!("ERR {e}")),
    }
}

fn deluser(ctx: &mut Ctx<'_, '_>) -> Frame {
    if ctx.args[2..].iter().any(|n| &n[..] == b"default") {
        return Frame::error("ERR The 'default' user cannot be removed");
    }
    let gone = ctx.srv.acl.delete(&ctx.args[2..]);
    kill_users_clients(ctx, &gone);
    Frame::Integer(gone.len() as i64)
}

fn getuser(ctx: &mut Ctx<'_, '_>) -> Frame {
    let Some(meta) = ctx.srv.acl.meta() else { return no_meta() };
    let Some(u) = ctx.srv.acl.get(ctx.arg(2)) else { return Frame::Null };
    let d = u.data();
    let fields = d.selector_fields(meta);
    let (root, rest) = fields.split_first().unwrap_or_else(|| unreachable!("a user has a root selector"));
    let sel = |(c, k, ch): &(String, Vec<u8>, Vec<u8>)| {
        vec![(bulk("commands"), bulk(c)), (bulk("keys"), bulk(k)), (bulk("channels"), bulk(ch))]
    };
    let mut m = vec![
        (bulk("flags"), Frame::Set(d.flag_names().into_iter().map(bulk).collect())),
        (bulk("passwords"), Frame::Array(d.passwords().iter().map(bulk).collect())),
    ];
    m.extend(sel(root));
    m.push((bulk("selectors"), Frame::Array(rest.iter().map(|s| Frame::Map(sel(s))).collect())));
    Frame::Map(m)
}

fn list(ctx: &mut Ctx<'_, '_>) -> Frame {
    if ctx.srv.acl.meta().is_none() {
        return no_meta();
    }
    Frame::Array(ctx.srv.acl.list_lines().into_iter().map(|l| Frame::bulk(Bytes::from(l))).collect())
}

fn users(ctx: &mut Ctx<'_, '_>) -> Frame {
    Frame::Array(ctx.srv.acl.users().iter().map(|u| Frame::bulk(u.name.clone())).collect())
}

fn whoami(ctx: &mut Ctx<'_, '_>) -> Frame {
    match &ctx.client.user {
        Some(u) => Frame::bulk(u.name.clone()),
        None => Frame::Null,
    }
}

fn cat(ctx: &mut Ctx<'_, '_>) -> Frame {
    if ctx.argc() == 2 {
        return Frame::Array(crate::acl::CATEGORIES.iter().map(bulk).collect());
    }
    if ctx.argc() != 3 {
        return super::server::subcommand_syntax_error(ctx.arg(1), "ACL");
    }
    let Some(bit) = crate::acl::category_bit(ctx.arg(2)) else {
        return Frame::error(format!("ERR Unknown category '{}'", crate::error::trunc(ctx.arg(2), 128)));
    };
    let Some(meta) = ctx.srv.acl.meta() else { return no_meta() };
    let mut out = Vec::new();
    for c in meta.commands.iter().flat_map(|c| std::iter::once(c).chain(c.subcommands.iter())) {
        if meta.categories.get(usize::from(c.id)).is_some_and(|m| m & bit != 0) {
            out.push(bulk(c.name));
        }
    }
    Frame::Array(out)
}

fn genpass(ctx: &mut Ctx<'_, '_>) -> Frame {
    if ctx.argc() > 3 {
        return super::server::subcommand_syntax_error(ctx.arg(1), "ACL");
    }
    let mut bits = 256i64;
    if ctx.argc() == 3 {
        bits = match ctx.int_arg(2) {
            Ok(b) => b,
            Err(e) => return e,
        };
    }
    if bits <= 0 || bits > 4096 {
        return Frame::error(
            "ERR ACL GENPASS argument must be the number of bits for the output password, a positive number up to 4096",
        );
    }
    let chars = ((bits + 3) / 4) as usize;
    let mut s = String::with_capacity(chars);
    while s.len() < chars {
        let b: u8 = rand::random();
        s.push_str(&format!("{b:02x}"));
    }
    s.truncate(chars);
    bulk(s)
}

fn log(ctx: &mut Ctx<'_, '_>) -> Frame {
    if ctx.argc() > 3 {
        return super::server::subcommand_syntax_error(ctx.arg(1), "ACL");
    }
    let mut count = 10i64;
    if ctx.argc() == 3 {
        if ctx.arg(2).eq_ignore_ascii_case(b"reset") {
            ctx.srv.acl.log_reset();
            return Frame::ok();
        }
        count = match ctx.int_arg(2) {
            Ok(c) => c.max(0),
            Err(e) => return e,
        };
    }
    let now = ctx.srv.clock.unix_ms();
    let entries = ctx.srv.acl.log_entries(count as usize);
    Frame::Array(
        entries
            .into_iter()
            .map(|e| {
                Frame::Map(vec![
                    (bulk("count"), Frame::Integer(e.count as i64)),
                    (bulk("reason"), bulk(e.reason.name())),
                    (bulk("context"), bulk(e.context.name())),
                    (bulk("object"), Frame::bulk(e.object)),
                    (bulk("username"), Frame::bulk(e.username)),
                    (bulk("age-seconds"), Frame::Double((now - e.ctime) as f64 / 1000.0)),
                    (bulk("client-info"), bulk(e.cinfo)),
                ])
            })
            .collect(),
    )
}

fn dryrun(ctx: &mut Ctx<'_, '_>) -> Frame {
    let Some(u) = ctx.srv.acl.get(ctx.arg(2)) else {
        return Frame::error(format!("ERR User '{}' not found", lossy(ctx.arg(2))));
    };
    let args = &ctx.args[3..];
    let cmd = match ctx.srv.table.get(&args[0]) {
        Some(c) if c.subcommands.is_empty() => Some(c),
        Some(c) => args.get(1).and_then(|s| {
            let s = s.to_ascii_lowercase();
            c.subcommands.iter().find(|x| x.name.rsplit('|').next().map(str::as_bytes) == Some(&s[..]))
        }),
        None => None,
    };
    let Some(cmd) = cmd else {
        return Frame::error(format!("ERR Command '{}' not found", lossy(&args[0])));
    };
    if !cmd.arity_ok(args.len()) {
        return Frame::error(format!("ERR wrong number of arguments for '{}' command", cmd.name));
    }
    match ctx.srv.acl.check(&u, cmd, args) {
        Ok(()) => Frame::ok(),
        Err(crate::acl::Denied::Cmd) => bulk(format!("This user has no permissions to run the '{}' command", cmd.name)),
        Err(crate::acl::Denied::Key(i)) => {
            bulk(format!("This user has no permissions to access the '{}' key", lossy(&args[i])))
        }
        Err(crate::acl::Denied::Channel(i)) => {
            bulk(format!("This user has no permissions to access the '{}' channel", lossy(&args[i])))
        }
    }
}

/// The ACL file, if configured: its name as configured and its path (relative to `dir`, the
/// directory Redis runs in).
fn acl_file(ctx: &Ctx<'_, '_>) -> Option<(String, std::path::PathBuf)> {
    let name = ctx.srv.config.get("aclfile").unwrap_or_default();
    if name.is_empty() {
        return None;
    }
    let dir = ctx.srv.config.get("dir").unwrap_or_default();
    Some((name.clone(), std::path::Path::new(&dir).join(&name)))
}

const NO_FILE: &str = "ERR This Redis instance is not configured to use an ACL file. You may want to specify users \
                       via the ACL SETUSER command and then issue a CONFIG REWRITE (assuming you have a Redis \
                       configuration file set) in order to store users in the Redis configuration.";

/// `strerror` text of an IO error (without Rust's ` (os error N)`).
fn strerror(e: &std::io::Error) -> String {
    let s = e.to_string();
    match s.find(" (os error") {
        Some(i) => s[..i].to_string(),
        None => s,
    }
}

/// Loads the ACL file into the registry (ACL LOAD; also what the server does at startup with
/// `aclfile`), disconnecting the clients of users that went. Err holds Redis's error text.
pub fn load_file(
    srv: &crate::server::Server,
    name: &str,
    path: &std::path::Path,
) -> Result<Vec<Arc<crate::acl::User>>, String> {
    let text = srv
        .config
        .host()
        .read_bytes(path)
        .map_err(|e| format!("Error loading ACLs, opening file '{name}': {}", strerror(&e)))?;
    srv.acl.pubsub_all.store(srv.config.acl_pubsub_all.load(Ordering::Relaxed), Ordering::Relaxed);
    let gone = srv.acl.load(name, &text)?;
    srv.config.has_password.store(!srv.acl.default().nopass_enabled(), Ordering::Relaxed);
    Ok(gone)
}

/// Creates the users of the config file (`user` lines) and loads `aclfile`, at startup (Redis's
/// `ACLLoadUsersAtStartup`). Err holds the log line; the server exits.
pub fn load_at_startup(srv: &crate::server::Server) -> Result<(), String> {
    let lines = srv.config.acl_user_lines.lock().clone();
    let file = srv.config.get("aclfile").unwrap_or_default();
    if !file.is_empty() && !lines.is_empty() {
        return Err("Configuring Redis with users defined in redis.conf and at the same setting an ACL file path is \
                    invalid. This setup is very likely to lead to configuration errors and security holes, please \
                    define either an ACL file or declare users directly in your redis.conf, but not both."
            .into());
    }
    srv.acl.pubsub_all.store(srv.config.acl_pubsub_all.load(Ordering::Relaxed), Ordering::Relaxed);
    srv.acl.load_configured(&lines)?;
    if !file.is_empty() {
        let dir = srv.config.get("dir").unwrap_or_default();
        load_file(srv, &file, &std::path::Path::new(&dir).join(&file))
            .map_err(|e| format!("Aborting Redis startup because of ACL errors: {e}"))?;
    }
    srv.config.has_password.store(!srv.acl.default().nopass_enabled(), Ordering::Relaxed);
    Ok(())
}

fn load(ctx: &mut Ctx<'_, '_>) -> Frame {
    let Some((name, path)) = acl_file(ctx) else { return Frame::error(NO_FILE) };
    match load_file(ctx.srv, &name, &path) {
        Ok(gone) => {
            kill_users_clients(ctx, &gone);
            Frame::ok()
        }
        Err(e) => Frame::error(format!("ERR {e}")),
    }
}

fn save(ctx: &mut Ctx<'_, '_>) -> Frame {
    let Some((_, path)) = acl_file(ctx) else { return Frame::error(NO_FILE) };
    let mut text = Vec::new();
    for l in ctx.srv.acl.list_lines() {
        text.extend_from_slice(&l);
        text.push(b'\n');
    }
    match ctx.srv.config.host().write_durably(&path, &text) {
        Ok(()) => Frame::ok(),
        Err(e) => {
            ctx.srv
                .config
                .host()
                .log(crate::host::LogLevel::Warning, &format!("Renaming ACL file for ACL SAVE: {}", strerror(&e)));
            Frame::error(
                "ERR There was an error trying to save the ACLs. Please check the server logs for more information",
            )
        }
    }
}

fn help(_: &mut Ctx<'_, '_>) -> Frame {
    super::server::help_reply(
        "ACL",
        &[
            "CAT [<category>]",
            "    List all commands that belong to <category>, or all command categories",
            "    when no category is specified.",
            "DELUSER <username> [<username> ...]",
            "    Delete a list of users.",
            "DRYRUN <username> <command> [<arg> ...]",
            "    Returns whether the user can execute the given command without executing the command.",
            "GETUSER <username>",
            "    Get the user's details.",
            "GENPASS [<bits>]",
            "    Generate a secure 256-bit user password. The optional `bits` argument can",
            "    be used to specify a different size.",
            "LIST",
            "    Show users details in config file format.",
            "LOAD",
            "    Reload users from the ACL file.",
            "LOG [<count> | RESET]",
            "    Show the ACL log entries.",
            "SAVE",
            "    Save the current config to the ACL file.",
            "SETUSER <username> <attribute> [<attribute> ...]",
            "    Create or modify a user with the specified attributes.",
            "USERS",
            "    List all the registered usernames.",
            "WHOAMI",
            "    Return the current connection username.",
        ],
    )
}
