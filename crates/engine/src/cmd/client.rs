//! The CLIENT container: ID, INFO, LIST, KILL, SETNAME, GETNAME, SETINFO, NO-EVICT, NO-TOUCH, REPLY,
//! TRACKING, CACHING, GETREDIR, TRACKINGINFO, PAUSE, UNPAUSE, UNBLOCK and HELP.

use super::base::BASE;
use super::connection::{proto_number, set_name, valid_attr};
use crate::args::eq_ic;
use crate::client::ReplyMode;
use crate::clients::ClientInfo;
use crate::command::Flags;
use crate::ctx::{Command, Ctx};
use crate::pause::PauseKind;
use bytes::Bytes;
use resp::Frame;
use std::fmt::Write as _;
use std::sync::atomic::Ordering;

/// `noscript loading stale`, the flags most CLIENT subcommands share.
const NLS: Flags = Flags::NOSCRIPT.or(Flags::LOADING).or(Flags::STALE);
/// `admin noscript loading stale`.
const ADMIN_NLS: Flags = Flags::ADMIN.or(NLS);

/// CLIENT subcommands.
static CLIENT_SUBCOMMANDS: &[Command] = &[
    Command {
        name: "client|getname",
        arity: 2,
        flags: NLS,
        group: crate::command::Group::Connection,
        handler: client_getname,
        ..BASE
    },
    Command {
        name: "client|getredir",
        arity: 2,
        flags: NLS,
        group: crate::command::Group::Connection,
        handler: client_getredir,
        ..BASE
    },
    Command {
        name: "client|help",
        arity: 2,
        flags: Flags::LOADING.or(Flags::STALE),
        group: crate::command::Group::Connection,
        handler: client_help,
        ..BASE
    },
    Command {
        name: "client|id",
        arity: 2,
        flags: NLS,
        group: crate::command::Group::Connection,
        handler: client_id,
        ..BASE
    },
    Command {
        name: "client|info",
        arity: 2,
        flags: NLS,
        group: crate::command::Group::Connection,
        handler: client_info,
        ..BASE
    },
    Command {
        name: "client|kill",
        arity: -3,
        flags: ADMIN_NLS,
        group: crate::command::Group::Connection,
        handler: client_kill,
        ..BASE
    },
    Command {
        name: "client|list",
        arity: -2,
        flags: ADMIN_NLS,
        group: crate::command::Group::Connection,
        handler: client_list,
        ..BASE
    },
    Command {
        name: "client|no-evict",
        arity: 3,
        flags: ADMIN_NLS,
        group: crate::command::Group::Connection,
        handler: client_no_evict,
        ..BASE
    },
    Command {
        name: "client|no-touch",
        arity: 3,
        flags: NLS,
        group: crate::command::Group::Connection,
        since: "7.2.0",
        summary: "Controls whether commands sent by the client affect the LRU/LFU of accessed keys.",
        syntax: "<ON | OFF>",
        handler: client_no_touch,
        ..BASE
    },
    Command {
        name: "client|pause",
        arity: -3,
        flags: ADMIN_NLS,
        group: crate::command::Group::Connection,
        handler: client_pause,
        ..BASE
    },
    Command {
        name: "client|reply",
        arity: 3,
        flags: NLS,
        group: crate::command::Group::Connection,
        handler: client_reply,
        ..BASE
    },
    Command {
        name: "client|setinfo",
        arity: 4,
        flags: NLS,
        group: crate::command::Group::Connection,
        since: "7.2.0",
        summary: "Sets information specific to the client or connection.",
        syntax: "<LIB-NAME libname | LIB-VER libver>",
        handler: client_setinfo,
        ..BASE
    },
    Command {
        name: "client|setname",
        arity: 3,
        flags: NLS,
        group: crate::command::Group::Connection,
        handler: client_setname,
        ..BASE
    },
    Command {
        name: "client|tracking",
        arity: -3,
        flags: NLS,
        group: crate::command::Group::Connection,
        handler: client_tracking,
        ..BASE
    },
    Command {
        name: "client|caching",
        arity: 3,
        flags: NLS,
        group: crate::command::Group::Connection,
        handler: client_caching,
        ..BASE
    },
    Command {
        name: "client|unblock",
        arity: -3,
        flags: ADMIN_NLS,
        group: crate::command::Group::Connection,
        handler: client_unblock,
        ..BASE
    },
    Command {
        name: "client|unpause",
        arity: 2,
        flags: ADMIN_NLS,
        group: crate::command::Group::Connection,
        handler: client_unpause,
        ..BASE
    },
    Command {
        name: "client|trackinginfo",
        arity: 2,
        flags: NLS,
        group: crate::command::Group::Connection,
        handler: client_trackinginfo,
        ..BASE
    },
];

/// Table entries.
pub static COMMANDS: &[Command] = &[Command {
    name: "client",
    arity: -2,
    group: crate::command::Group::Connection,
    subcommands: CLIENT_SUBCOMMANDS,
    ..BASE
}];

// ---------------------------------------------------------------------------------------------
// Helpers
// ---------------------------------------------------------------------------------------------

fn decimal_len(mut n: usize) -> usize {
    let mut d = 1;
    while n >= 10 {
        n /= 10;
        d += 1;
    }
    d
}

/// Size of `args` as a RESP multibulk request: what Redis's query buffer holds while the command runs.
fn request_len(args: &[Bytes]) -> usize {
    let mut n = 3 + decimal_len(args.len());
    for a in args {
        n = n.saturating_add(5 + decimal_len(a.len()) + a.len());
    }
    n
}

/// The part of a `CLIENT LIST` line that the caller shows live: the database, the protocol, the
/// query buffer and argument memory of the running command, the reply buffer.
struct Shown {
    db: usize,
    resp: usize,
    qbuf: usize,
    argv_mem: usize,
    rbs: usize,
    rbp: usize,
}

impl Shown {
    /// From the caller's context `me` when it is given, else as `info` last recorded it.
    fn of(info: &ClientInfo, me: Option<&Ctx<'_, '_>>) -> Shown {
        let (rbs, rbp) = (info.rbs.load(Ordering::Relaxed), info.rbp.load(Ordering::Relaxed));
        match me {
            Some(ctx) => Shown {
                db: ctx.client.db,
                resp: proto_number(ctx.client.proto),
                qbuf: request_len(ctx.args),
                argv_mem: ctx.args.iter().map(|a| a.len()).sum(),
                rbs,
                rbp,
            },
            None => Shown {
                db: info.db.load(Ordering::Relaxed),
                resp: info.resp.load(Ordering::Relaxed),
                qbuf: info.qbuf.load(Ordering::Relaxed),
                argv_mem: info.argv_mem.load(Ordering::Relaxed),
                rbs,
                rbp,
            },
        }
    }
}

/// One `CLIENT LIST` / `CLIENT INFO` line (without the trailing newline), in Redis 7.2's format.
/// `me` is the calling client's context when `info` describes it: its live state is used, and its
/// query buffer holds the running command as in Redis.
pub(crate) fn client_line(out: &mut String, info: &ClientInfo, now: u64, me: Option<&Ctx<'_, '_>>) {
    let name = info.name.lock().clone().unwrap_or_default();
    let lib_name = info.lib_name.lock().clone().unwrap_or_default();
    let lib_ver = info.lib_ver.lock().clone().unwrap_or_default();
    let flags = info.flags_shown();
    let age = now.saturating_sub(info.created_ms) / 1000;
    let idle = now.saturating_sub(info.last_active_ms.load(Ordering::Relaxed)) / 1000;
    let omem = info.output_pending();
    let Shown { db, resp, qbuf, argv_mem, rbs, rbp } = Shown::of(info, me);
    // The query buffer as the connection layer last saw it (its running command included).
    let qbuf_alloc = info.qbuf_cap.load(Ordering::Relaxed).max(qbuf);
    let qbuf_free = qbuf_alloc - qbuf;
    let multi_mem = info.multi_mem_total();
    let tot_mem = crate::clients::tot_mem(rbs, qbuf_alloc, argv_mem, omem, info.state_mem());
    let _ = write!(
        out,
        "id={} addr={} laddr={} fd={} name={} age={} idle={} flags={} db={} sub={} psub={} ssub={} multi={} \
         qbuf={} qbuf-free={} argv-mem={} multi-mem={} rbs={} rbp={} obl=0 oll=0 omem={} tot-mem={} events=r \
         cmd={} user={} redir={} resp={} lib-name={} lib-ver={}",
        info.id,
        info.addr,
        info.laddr,
        info.fd,
        String::from_utf8_lossy(&name),
        age,
        idle,
        flags,
        db,
        info.sub.load(Ordering::Relaxed),
        info.psub.load(Ordering::Relaxed),
        info.ssub.load(Ordering::Relaxed),
        info.multi.load(Ordering::Relaxed),
        qbuf,
        qbuf_free,
        argv_mem,
        multi_mem,
        rbs,
        rbp,
        omem,
        tot_mem,
        *info.last_cmd.lock(),
        String::from_utf8_lossy(&info.user.lock()),
        info.tracking.lock().as_ref().map_or(-1, |t| t.redirect as i64),
        resp,
        String::from_utf8_lossy(&lib_name),
        String::from_utf8_lossy(&lib_ver),
    );
}

fn verbatim(s: String) -> Frame {
    Frame::Verbatim { format: *b"txt", text: Bytes::from(s) }
}

/// Parses a client type name as Redis's `getClientTypeByName` (`replica` and `slave` are the same).
fn client_type(name: &[u8]) -> Option<&'static str> {
    if eq_ic(name, "normal") {
        Some("normal")
    } else if eq_ic(name, "slave") || eq_ic(name, "replica") {
        Some("slave")
    } else if eq_ic(name, "pubsub") {
        Some("pubsub")
    } else if eq_ic(name, "master") {
        Some("master")
    } else {
        None
    }
}

fn unknown_type(name: &[u8]) -> Frame {
    Frame::error(format!("ERR Unknown client type '{}'", String::from_utf8_lossy(name)))
}

/// Parses ON/OFF.
fn on_off(b: &[u8]) -> Option<bool> {
    if eq_ic(b, "on") {
        Some(true)
    } else if eq_ic(b, "off") {
        Some(false)
    } else {
        None
    }
}

// ---------------------------------------------------------------------------------------------
// Handlers
// ---------------------------------------------------------------------------------------------

fn client_id(ctx: &mut Ctx<'_, '_>) -> Frame {
    Frame::Integer(ctx.client.id as i64)
}

fn client_info(ctx: &mut Ctx<'_, '_>) -> Frame {
    let mut s = String::new();
    let info = ctx.client.info.clone();
    client_line(&mut s, &info, ctx.now, Some(ctx));
    s.push('\n');
    verbatim(s)
}

/// CLIENT LIST's options: `TYPE type`, `ID id [id ...]` or none, as (the type, the ids).
fn list_options(ctx: &Ctx<'_, '_>) -> Result<(Option<&'static str>, Option<Vec<i64>>), Frame> {
    let argc = ctx.argc();
    if argc == 4 && eq_ic(ctx.arg(2), "type") {
        match client_type(ctx.arg(3)) {
            Some(t) => Ok((Some(t), None)),
            None => Err(unknown_type(ctx.arg(3))),
        }
    } else if argc > 3 && eq_ic(ctx.arg(2), "id") {
        let mut v = Vec::with_capacity(argc - 3);
        for a in &ctx.args[3..] {
            match crate::args::parse_i64_strict(a) {
                Some(id) => v.push(id),
                None => return Err(Frame::error("ERR Invalid client ID")),
            }
        }
        Ok((None, Some(v)))
    } else if argc != 2 {
        Err(crate::error::syntax())
    } else {
        Ok((None, None))
    }
}

fn client_list(ctx: &mut Ctx<'_, '_>) -> Frame {
    let (wanted_type, ids) = match list_options(ctx) {
        Ok(o) => o,
        Err(e) => return e,
    };
    let infos: Vec<_> = match ids {
        Some(ids) => {
            ids.into_iter().filter_map(|id| u64::try_from(id).ok().and_then(|id| ctx.srv.clients.get(id))).collect()
        }
        None => ctx.srv.clients.snapshot(),
    };
    let mut out = String::new();
    for info in infos {
        if info.killed.load(Ordering::Relaxed) || wanted_type.is_some_and(|t| info.type_name() != t) {
            continue;
        }
        let me = (info.id == ctx.client.id).then_some(&*ctx);
        client_line(&mut out, &info, ctx.now, me);
        out.push('\n');
    }
    verbatim(out)
}

/// The clients CLIENT KILL closes: those that match every filter given.
struct KillFilter<'a> {
    addr: Option<&'a [u8]>,
    laddr: Option<&'a [u8]>,
    wanted_type: Option<&'static str>,
    /// 0: any.
    id: u64,
    user: Option<&'a [u8]>,
    /// Whether the caller is spared.
    skipme: bool,
}

impl<'a> KillFilter<'a> {
    /// The old form, `CLIENT KILL addr:port` (which may kill the caller), or the new one's
    /// `<option> <value>` pairs, checked in order as Redis does.
    fn parse(ctx: &Ctx<'a, '_>) -> Result<KillFilter<'a>, Frame> {
        let argc = ctx.argc();
        let mut f = KillFilter { addr: None, laddr: None, wanted_type: None, id: 0, user: None, skipme: true };
        if argc == 3 {
            f.addr = Some(ctx.arg(2));
            f.skipme = false;
            return Ok(f);
        }
        let mut i = 2;
        while i < argc {
            let opt = ctx.arg(i);
            if i + 1 >= argc {
                return Err(crate::error::syntax());
            }
            let val = ctx.arg(i + 1);
            if eq_ic(opt, "id") {
                match crate::args::parse_i64_strict(val) {
                    Some(v) if v >= 1 => f.id = v as u64,
                    _ => return Err(Frame::error("ERR client-id should be greater than 0")),
                }
            } else if eq_ic(opt, "type") {
                match client_type(val) {
                    Some(t) => f.wanted_type = Some(t),
                    None => return Err(unknown_type(val)),
                }
            } else if eq_ic(opt, "addr") {
                f.addr = Some(val);
            } else if eq_ic(opt, "laddr") {
                f.laddr = Some(val);
            } else if eq_ic(opt, "user") {
                if ctx.srv.acl.get(val).is_none() {
                    return Err(Frame::error(format!("ERR No such user '{}'", String::from_utf8_lossy(val))));
                }
                f.user = Some(val);
            } else if eq_ic(opt, "skipme") {
                if eq_ic(val, "yes") {
                    f.skipme = true;
                } else if eq_ic(val, "no") {
                    f.skipme = false;
                } else {
                    return Err(crate::error::syntax());
                }
            } else {
                return Err(crate::error::syntax());
            }
            i += 2;
        }
        Ok(f)
    }

    /// Whether `info` passes every filter (the caller's SKIPME aside).
    fn matches(&self, info: &ClientInfo) -> bool {
        self.addr.is_none_or(|a| info.addr.as_bytes() == a)
            && self.laddr.is_none_or(|a| info.laddr.as_bytes() == a)
            && self.wanted_type.is_none_or(|t| info.type_name() == t)
            && (self.id == 0 || info.id == self.id)
            && self.user.is_none_or(|u| info.user.lock()[..] == *u)
    }
}

fn client_kill(ctx: &mut Ctx<'_, '_>) -> Frame {
    let filter = match KillFilter::parse(ctx) {
        Ok(f) => f,
        Err(e) => return e,
    };
    let mut killed = 0i64;
    for info in ctx.srv.clients.snapshot() {
        if info.killed.load(Ordering::Relaxed) || !filter.matches(&info) {
            continue;
        }
        let is_me = info.id == ctx.client.id;
        if is_me && filter.skipme {
            continue;
        }
        if is_me {
            // Closed once the reply is written.
            ctx.client.close_after_reply = true;
        } else {
            info.kill();
            // Gone at once for everybody else, as Redis frees the client synchronously.
            ctx.srv.clients.unregister(info.id);
        }
        killed += 1;
    }
    if ctx.argc() == 3 {
        if killed == 0 { Frame::error("ERR No such client") } else { Frame::ok() }
    } else {
        Frame::Integer(killed)
    }
}

fn client_setname(ctx: &mut Ctx<'_, '_>) -> Frame {
    let name = ctx.arg(2);
    match set_name(ctx, name) {
        Ok(()) => Frame::ok(),
        Err(e) => e,
    }
}

fn client_getname(ctx: &mut Ctx<'_, '_>) -> Frame {
    match &*ctx.client.info.name.lock() {
        Some(n) => Frame::bulk(n.clone()),
        None => Frame::Null,
    }
}

fn client_setinfo(ctx: &mut Ctx<'_, '_>) -> Frame {
    let (attr, val) = (ctx.arg(2), ctx.arg(3));
    let slot = if eq_ic(attr, "lib-name") {
        &ctx.client.info.lib_name
    } else if eq_ic(attr, "lib-ver") {
        &ctx.client.info.lib_ver
    } else {
        return Frame::error(format!("ERR Unrecognized option '{}'", String::from_utf8_lossy(attr)));
    };
    if !valid_attr(val) {
        return Frame::error(format!(
            "ERR {} cannot contain spaces, newlines or special characters.",
            String::from_utf8_lossy(attr)
        ));
    }
    *slot.lock() = (!val.is_empty()).then(|| val.to_vec());
    Frame::ok()
}

fn client_no_evict(ctx: &mut Ctx<'_, '_>) -> Frame {
    let Some(on) = on_off(ctx.arg(2)) else {
        return crate::error::syntax();
    };
    ctx.client.no_evict = on;
    ctx.client.info.set_flag('e', on);
    Frame::ok()
}

fn client_no_touch(ctx: &mut Ctx<'_, '_>) -> Frame {
    let Some(on) = on_off(ctx.arg(2)) else {
        return crate::error::syntax();
    };
    ctx.client.no_touch = on;
    ctx.client.info.set_flag('T', on);
    Frame::ok()
}

fn client_reply(ctx: &mut Ctx<'_, '_>) -> Frame {
    let mode = ctx.arg(2);
    if eq_ic(mode, "on") {
        ctx.client.reply_mode = ReplyMode::On;
        return Frame::ok();
    }
    if eq_ic(mode, "off") {
        ctx.client.reply_mode = ReplyMode::Off;
    } else if eq_ic(mode, "skip") {
        if ctx.client.reply_mode != ReplyMode::Off {
            ctx.client.reply_mode = ReplyMode::Skip;
        }
    } else {
        return crate::error::syntax();
    }
    // OFF and SKIP send nothing themselves.
    ctx.client.suppress_reply = true;
    Frame::ok()
}

fn client_getredir(ctx: &mut Ctx<'_, '_>) -> Frame {
    Frame::Integer(ctx.client.info.tracking.lock().as_ref().map_or(-1, |t| t.redirect as i64))
}

/// CLIENT TRACKING (ON|OFF) [REDIRECT id] [BCAST] [PREFIX p]... [OPTIN] [OPTOUT] [NOLOOP], with
/// Redis's checks in Redis's order: the options are read first, whether ON or OFF.
fn client_tracking(ctx: &mut Ctx<'_, '_>) -> Frame {
    let (mut opts, prefixes) = match tracking_options(ctx) {
        Ok(o) => o,
        Err(e) => return e,
    };
    if eq_ic(ctx.arg(2), "off") {
        ctx.srv.disable_tracking(ctx.client);
        return Frame::ok();
    }
    if !eq_ic(ctx.arg(2), "on") {
        return crate::error::syntax();
    }
    let current = ctx.client.info.tracking.lock().clone();
    if let Err(e) = check_tracking(&opts, &prefixes, current.as_ref()) {
        return e;
    }
    opts.prefixes = prefixes.into_iter().collect();
    ctx.srv.enable_tracking(ctx.client, opts);
    Frame::ok()
}

/// CLIENT TRACKING's options after ON|OFF, and the BCAST prefixes in the order given; the REDIRECT
/// target must be a connected client.
fn tracking_options(ctx: &Ctx<'_, '_>) -> Result<(crate::tracking::ClientTracking, Vec<Bytes>), Frame> {
    let mut opts = crate::tracking::ClientTracking::default();
    let mut prefixes: Vec<Bytes> = Vec::new();
    let mut j = 3;
    while j < ctx.argc() {
        let more = ctx.argc() - 1 - j;
        let a = ctx.arg(j);
        if eq_ic(a, "redirect") && more > 0 {
            j += 1;
            if opts.redirect != 0 {
                return Err(Frame::error("ERR A client can only redirect to a single other client"));
            }
            let Some(id) = crate::args::parse_i64_strict(ctx.arg(j)) else {
                return Err(crate::error::not_integer());
            };
            if id <= 0 || ctx.srv.clients.get(id as u64).is_none() {
                return Err(Frame::error("ERR The client ID you want redirect to does not exist"));
            }
            opts.redirect = id as u64;
        } else if eq_ic(a, "bcast") {
            opts.bcast = true;
        } else if eq_ic(a, "optin") {
            opts.optin = true;
        } else if eq_ic(a, "optout") {
            opts.optout = true;
        } else if eq_ic(a, "noloop") {
            opts.noloop = true;
        } else if eq_ic(a, "prefix") && more > 0 {
            j += 1;
            prefixes.push(ctx.args[j].clone());
        } else {
            return Err(crate::error::syntax());
        }
        j += 1;
    }
    Ok((opts, prefixes))
}

/// Whether tracking may be turned on with `opts` and `prefixes` when the client's tracking is
/// `current`: the modes agree with each other and with the current ones, and no prefix overlaps
/// another.
fn check_tracking(
    opts: &crate::tracking::ClientTracking,
    prefixes: &[Bytes],
    current: Option<&crate::tracking::ClientTracking>,
) -> Result<(), Frame> {
    if !opts.bcast && !prefixes.is_empty() {
        return Err(Frame::error("ERR PREFIX option requires BCAST mode to be enabled"));
    }
    if let Some(cur) = current
        && cur.bcast != opts.bcast
    {
        return Err(Frame::error(
            "ERR You can't switch BCAST mode on/off before disabling tracking for this client, and then re-enabling it with a different mode.",
        ));
    }
    if opts.bcast && (opts.optin || opts.optout) {
        return Err(Frame::error("ERR OPTIN and OPTOUT are not compatible with BCAST"));
    }
    if opts.optin && opts.optout {
        return Err(Frame::error("ERR You can't specify both OPTIN mode and OPTOUT mode"));
    }
    if let Some(cur) = current
        && ((opts.optin && cur.optout) || (opts.optout && cur.optin))
    {
        return Err(Frame::error(
            "ERR You can't switch OPTIN/OPTOUT mode before disabling tracking for this client, and then re-enabling it with a different mode.",
        ));
    }
    if opts.bcast {
        // No prefix may be a prefix of another, among the new ones and the client's own.
        let overlap = |a: &[u8], b: &[u8]| a.starts_with(b) || b.starts_with(a);
        let show = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
        for (i, p) in prefixes.iter().enumerate() {
            if let Some(c) = current.iter().flat_map(|c| c.prefixes.iter()).find(|c| overlap(c, p)) {
                return Err(Frame::error(format!(
                    "ERR Prefix '{}' overlaps with an existing prefix '{}'. Prefixes for a single client must not overlap.",
                    show(p),
                    show(c)
                )));
            }
            if let Some(q) = prefixes[i + 1..].iter().find(|q| overlap(p, q)) {
                return Err(Frame::error(format!(
                    "ERR Prefix '{}' overlaps with another provided prefix '{}'. Prefixes for a single client must not overlap.",
                    show(p),
                    show(q)
                )));
            }
        }
    }
    Ok(())
}

/// CLIENT CACHING YES|NO: whether the next command's keys are tracked (OPTIN / OPTOUT).
fn client_caching(ctx: &mut Ctx<'_, '_>) -> Frame {
    let mut t = ctx.client.info.tracking.lock();
    let Some(t) = t.as_mut() else {
        return Frame::error(
            "ERR CLIENT CACHING can be called only when the client is in tracking mode with OPTIN or OPTOUT mode enabled",
        );
    };
    if eq_ic(ctx.arg(2), "yes") {
        if !t.optin {
            return Frame::error("ERR CLIENT CACHING YES is only valid when tracking is enabled in OPTIN mode.");
        }
    } else if eq_ic(ctx.arg(2), "no") {
        if !t.optout {
            return Frame::error("ERR CLIENT CACHING NO is only valid when tracking is enabled in OPTOUT mode.");
        }
    } else {
        return crate::error::syntax();
    }
    t.caching = true;
    Frame::ok()
}

/// CLIENT UNBLOCK id [TIMEOUT|ERROR]: answers a blocked client now, with its timeout reply or an
/// UNBLOCKED error.
fn client_unblock(ctx: &mut Ctx<'_, '_>) -> Frame {
    let Some(id) = crate::args::parse_i64_strict(ctx.arg(2)) else { return crate::error::not_integer() };
    let error = match ctx.argc() {
        3 => false,
        4 if eq_ic(ctx.arg(3), "timeout") => false,
        4 if eq_ic(ctx.arg(3), "error") => true,
        4 => return Frame::error("ERR CLIENT UNBLOCK reason should be TIMEOUT or ERROR"),
        _ => return super::server::subcommand_syntax_error(ctx.arg(1), "CLIENT"),
    };
    let waiter = u64::try_from(id)
        .ok()
        .and_then(|id| ctx.srv.clients.get(id))
        .and_then(|c| c.blocked_on())
        .and_then(|w| w.into_any().downcast::<crate::ctx::Waiter>().ok());
    let Some(w) = waiter else { return Frame::Integer(0) };
    if !w.claim() {
        return Frame::Integer(0);
    }
    let reply =
        if error { Frame::error("UNBLOCKED client unblocked via CLIENT UNBLOCK") } else { w.timeout_reply.clone() };
    w.finish(crate::waiters::WaitState::Served(reply));
    Frame::Integer(1)
}

/// CLIENT PAUSE timeout [WRITE|ALL]: holds back every command, or those that may write, for
/// `timeout` milliseconds (see [`crate::pause`]). The mode is checked before the timeout, as in Redis.
fn client_pause(ctx: &mut Ctx<'_, '_>) -> Frame {
    let kind = match ctx.argc() {
        3 => PauseKind::All,
        4 if eq_ic(ctx.arg(3), "write") => PauseKind::Write,
        4 if eq_ic(ctx.arg(3), "all") => PauseKind::All,
        4 => return Frame::error("ERR CLIENT PAUSE mode must be WRITE or ALL"),
        _ => return super::server::subcommand_syntax_error(ctx.arg(1), "CLIENT"),
    };
    let end = match crate::pause::parse_pause_timeout(ctx.arg(2), ctx.now) {
        Ok(end) => end,
        Err(e) => return e,
    };
    ctx.srv.pause_clients(kind, end, ctx.now);
    Frame::ok()
}

/// CLIENT UNPAUSE: ends the pause; the clients it held back run their commands, in arrival order.
fn client_unpause(ctx: &mut Ctx<'_, '_>) -> Frame {
    ctx.srv.unpause_clients();
    Frame::ok()
}

fn client_trackinginfo(ctx: &mut Ctx<'_, '_>) -> Frame {
    let s = |v: &'static str| Frame::bulk(Bytes::from_static(v.as_bytes()));
    let t = ctx.client.info.tracking.lock().clone();
    let mut flags = vec![s(if t.is_some() { "on" } else { "off" })];
    let mut redirect = -1;
    let mut prefixes = Vec::new();
    if let Some(t) = t {
        for (on, name) in [
            (t.bcast, "bcast"),
            (t.optin, "optin"),
            (t.optin && t.caching, "caching-yes"),
            (t.optout, "optout"),
            (t.optout && t.caching, "caching-no"),
            (t.noloop, "noloop"),
            (t.broken, "broken_redirect"),
        ] {
            if on {
                flags.push(s(name));
            }
        }
        redirect = t.redirect as i64;
        prefixes = t.prefixes.into_iter().map(Frame::Bulk).collect();
    }
    Frame::Map(vec![
        (s("flags"), Frame::Set(flags)),
        (s("redirect"), Frame::Integer(redirect)),
        (s("prefixes"), Frame::Array(prefixes)),
    ])
}

/// CLIENT HELP, as Redis 7.2 prints it.
const CLIENT_HELP: &[&str] = &[
    "CACHING (YES|NO)",
    "    Enable/disable tracking of the keys for next command in OPTIN/OPTOUT modes.",
    "GETREDIR",
    "    Return the client ID we are redirecting to when tracking is enabled.",
    "GETNAME",
    "    Return the name of the current connection.",
    "ID",
    "    Return the ID of the current connection.",
    "INFO",
    "    Return information about the current client connection.",
    "KILL <ip:port>",
    "    Kill connection made from <ip:port>.",
    "KILL <option> <value> [<option> <value> [...]]",
    "    Kill connections. Options are:",
    "    * ADDR (<ip:port>|<unixsocket>:0)",
    "      Kill connections made from the specified address",
    "    * LADDR (<ip:port>|<unixsocket>:0)",
    "      Kill connections made to specified local address",
    "    * TYPE (NORMAL|MASTER|REPLICA|PUBSUB)",
    "      Kill connections by type.",
    "    * USER <username>",
    "      Kill connections authenticated by <username>.",
    "    * SKIPME (YES|NO)",
    "      Skip killing current connection (default: yes).",
    "LIST [options ...]",
    "    Return information about client connections. Options:",
    "    * TYPE (NORMAL|MASTER|REPLICA|PUBSUB)",
    "      Return clients of specified type.",
    "UNPAUSE",
    "    Stop the current client pause, resuming traffic.",
    "PAUSE <timeout> [WRITE|ALL]",
    "    Suspend all, or just write, clients for <timeout> milliseconds.",
    "REPLY (ON|OFF|SKIP)",
    "    Control the replies sent to the current connection.",
    "SETNAME <name>",
    "    Assign the name <name> to the current connection.",
    "SETINFO <option> <value>",
    "    Set client meta attr. Options are:",
    "    * LIB-NAME: the client lib name.",
    "    * LIB-VER: the client lib version.",
    "UNBLOCK <clientid> [TIMEOUT|ERROR]",
    "    Unblock the specified blocked client.",
    "TRACKING (ON|OFF) [REDIRECT <id>] [BCAST] [PREFIX <prefix> [...]]",
    "         [OPTIN] [OPTOUT] [NOLOOP]",
    "    Control server assisted client side caching.",
    "TRACKINGINFO",
    "    Report tracking status for the current connection.",
    "NO-EVICT (ON|OFF)",
    "    Protect current client connection from eviction.",
    "NO-TOUCH (ON|OFF)",
    "    Will not touch LRU/LFU stats when this mode is on.",
];

fn client_help(ctx: &mut Ctx<'_, '_>) -> Frame {
    let cmd = String::from_utf8_lossy(ctx.arg(0)).to_ascii_uppercase();
    let mut v = Vec::with_capacity(CLIENT_HELP.len() + 3);
    v.push(Frame::simple(&format!("{cmd} <subcommand> [<arg> [value] [opt] ...]. Subcommands are:")));
    v.extend(CLIENT_HELP.iter().map(|l| Frame::simple(l)));
    v.push(Frame::simple("HELP"));
    v.push(Frame::simple("    Prints this help."));
    Frame::Array(v)
}

#[cfg(test)]
mod tests {
    use crate::client::ReplyMode;
    use crate::testkit::{TestClient, TestServer};
    use std::sync::atomic::Ordering;

    /// A client connected from `addr` (TestServer's clients all share one address).
    fn conn_from(ts: &TestServer, addr: &str) -> TestClient {
        let mut c = ts.client();
        ts.srv.clients.unregister(c.client.id);
        c.client = ts.srv.new_client(addr.into(), "127.0.0.1:6379".into());
        c
    }

    /// The CLIENT INFO line of a fresh, idle-less caller, with the fields that vary spelled out.
    fn line(id: u64, addr: &str, fd: u32, rest: &str) -> String {
        format!("id={id} addr={addr} laddr=127.0.0.1:6379 fd={fd} {rest}")
    }

    #[test]
    fn client_reply() {
        let ts = TestServer::new();
        let mut c = ts.client();
        c.transcript(
            r#"
            > CLIENT REPLY SKIP
            (no reply)
            > PING a
            (no reply)
            > PING b
            "b"
            > CLIENT REPLY OFF
            (no reply)
            > PING c
            (no reply)
            > CLIENT REPLY SKIP
            (no reply)
            > PING d
            (no reply)
            > CLIENT REPLY ON
            +OK
            > PING e
            "e"
            > CLIENT REPLY SKIP
            (no reply)
            > CLIENT REPLY ON
            +OK
            > PING
            +PONG
            > CLIENT REPLY SKIP
            (no reply)
            > CLIENT REPLY SKIP
            (no reply)
            > PING f
            (no reply)
            > PING g
            "g"
            > CLIENT REPLY maybe
            -ERR syntax error
            > CLIENT REPLY
            -ERR wrong number of arguments for 'client|reply' command
            "#,
        );
        assert_eq!(c.client.reply_mode, ReplyMode::On);
    }

    /// A repeated command name skips the table's lookup (`Client::recent`): whatever the spelling,
    /// subcommands still resolve by their second argument, and CLIENT LIST's `cmd=` follows each
    /// command, rejected ones included.
    #[test]
    fn repeated_names_resolve_as_the_table_does() {
        let ts = TestServer::new();
        let mut a = ts.client();
        let mut b = ts.client();
        let cmd_of = |b: &mut TestClient, id: u64| {
            let list = b.run("CLIENT LIST");
            let line = list.lines().find(|l| l.contains(&format!("id={id} "))).expect("listed").to_string();
            line.split(' ').find_map(|f| f.strip_prefix("cmd=")).expect("cmd=").to_string()
        };
        let id = a.client.id;
        a.transcript("> SET k v\n+OK\n> set k w\n+OK\n> Set k x\n+OK\n> GET k\n\"x\"\n> gEt k\n\"x\"");
        assert_eq!(cmd_of(&mut b, id), "get");
        a.transcript("> GET\n-ERR wrong number of arguments for 'get' command");
        assert_eq!(cmd_of(&mut b, id), "get");
        a.transcript(&format!("> CLIENT ID\n:{id}\n> client id\n:{id}"));
        assert_eq!(cmd_of(&mut b, id), "client|id");
        assert!(a.run("CLIENT GETNAME").contains("nil"));
        assert_eq!(cmd_of(&mut b, id), "client|getname");
        a.transcript("> NOSUCH x\n-ERR unknown command 'NOSUCH', with args beginning with: 'x' ");
        assert_eq!(cmd_of(&mut b, id), "NULL");
        a.transcript("> GET k\n\"x\"\n> GETX k\n-ERR unknown command 'GETX', with args beginning with: 'k' ");
        assert_eq!(cmd_of(&mut b, id), "NULL");
    }

    #[test]
    fn client_id_name_setinfo() {
        let ts = TestServer::new();
        // The first client goes away: the second gets its fd number back, as a new connection does.
        ts.client().transcript("> CLIENT ID\n:1");
        ts.client().transcript(
            r#"
            > CLIENT ID
            :2
            > CLIENT ID x
            -ERR wrong number of arguments for 'client|id' command
            > CLIENT GETNAME
            (nil)
            > CLIENT SETNAME myname
            +OK
            > CLIENT GETNAME
            "myname"
            > CLIENT SETNAME "a b"
            -ERR Client names cannot contain spaces, newlines or special characters.
            > CLIENT SETNAME "a\nb"
            -ERR Client names cannot contain spaces, newlines or special characters.
            > CLIENT SETNAME "caf\xc3\xa9"
            -ERR Client names cannot contain spaces, newlines or special characters.
            > CLIENT GETNAME
            "myname"
            > CLIENT SETNAME ""
            +OK
            > CLIENT GETNAME
            (nil)
            > CLIENT SETNAME
            -ERR wrong number of arguments for 'client|setname' command
            > CLIENT GETNAME x
            -ERR wrong number of arguments for 'client|getname' command
            > CLIENT SETINFO LIB-NAME redis-py
            +OK
            > CLIENT SETINFO lib-ver 5.0.1
            +OK
            > CLIENT SETINFO LIB-NAME "a b"
            -ERR LIB-NAME cannot contain spaces, newlines or special characters.
            > CLIENT SETINFO lib-ver "1\n"
            -ERR lib-ver cannot contain spaces, newlines or special characters.
            > CLIENT SETINFO foo bar
            -ERR Unrecognized option 'foo'
            > CLIENT SETINFO lib-name
            -ERR wrong number of arguments for 'client|setinfo' command
            > CLIENT INFO
            "id=2 addr=127.0.0.1:50000 laddr=127.0.0.1:6379 fd=8 name= age=0 idle=0 flags=N db=0 sub=0 psub=0 ssub=0 multi=-1 qbuf=26 qbuf-free=0 argv-mem=10 multi-mem=0 rbs=16384 rbp=16384 obl=0 oll=0 omem=0 tot-mem=17210 events=r cmd=client|info user=default redir=-1 resp=2 lib-name=redis-py lib-ver=5.0.1\n"
            > CLIENT SETINFO lib-ver ""
            +OK
            > CLIENT SETNAME n
            +OK
            > CLIENT INFO
            "id=2 addr=127.0.0.1:50000 laddr=127.0.0.1:6379 fd=8 name=n age=0 idle=0 flags=N db=0 sub=0 psub=0 ssub=0 multi=-1 qbuf=26 qbuf-free=0 argv-mem=10 multi-mem=0 rbs=16384 rbp=16384 obl=0 oll=0 omem=0 tot-mem=17210 events=r cmd=client|info user=default redir=-1 resp=2 lib-name=redis-py lib-ver=\n"
            > CLIENT INFO x
            -ERR wrong number of arguments for 'client|info' command
            "#,
        );
    }

    #[test]
    fn client_list() {
        let ts = TestServer::new();
        let mut a = conn_from(&ts, "10.0.0.1:1111");
        let mut b = conn_from(&ts, "10.0.0.2:2222");
        assert_eq!((a.client.id, b.client.id), (2, 4));
        a.transcript("> SELECT 3\n+OK");
        ts.clock.advance_ms(5_000);
        b.transcript("> HELLO 3\n{\"server\": \"redis\", \"version\": \"7.0.15\", \"proto\": :3, \"id\": :4, \"mode\": \"standalone\", \"role\": \"master\", \"modules\": []}");
        ts.clock.advance_ms(2_000);
        // Two cron passes: the first resets the reply buffers' peaks, the second shrinks the
        // buffers to 1 KiB (neither client has had a reply in the buffer since).
        ts.srv.clients_cron(crate::clock::Clock::now_ms(&*ts.clock));
        ts.srv.clients_cron(crate::clock::Clock::now_ms(&*ts.clock));
        let la = line(
            2,
            "10.0.0.1:1111",
            8,
            "name= age=7 idle=7 flags=N db=3 sub=0 psub=0 ssub=0 multi=-1 qbuf=0 qbuf-free=0 argv-mem=0 \
             multi-mem=0 rbs=1024 rbp=0 obl=0 oll=0 omem=0 tot-mem=1814 events=r cmd=select user=default redir=-1 \
             resp=2 lib-name= lib-ver=",
        );
        let lb = line(
            4,
            "10.0.0.2:2222",
            9,
            "name= age=7 idle=0 flags=N db=0 sub=0 psub=0 ssub=0 multi=-1 qbuf=26 qbuf-free=0 argv-mem=10 \
             multi-mem=0 rbs=1024 rbp=0 obl=0 oll=0 omem=0 tot-mem=1850 events=r cmd=client|list \
             user=default redir=-1 resp=3 lib-name= lib-ver=",
        );
        assert_eq!(b.run("CLIENT LIST"), crate::args::repr(format!("{la}\n{lb}\n").as_bytes()));
        let lb48 = lb.replace("qbuf=26 qbuf-free=0 argv-mem=10", "qbuf=48 qbuf-free=0 argv-mem=20");
        let lb48 = lb48.replace("tot-mem=1850", "tot-mem=1882");
        assert_eq!(b.run("CLIENT LIST TYPE normal"), crate::args::repr(format!("{la}\n{lb48}\n").as_bytes()));
        assert_eq!(b.run("CLIENT LIST TYPE NORMAL"), crate::args::repr(format!("{la}\n{lb48}\n").as_bytes()));
        let lbid = lb
            .replace("qbuf=26 qbuf-free=0 argv-mem=10", "qbuf=71 qbuf-free=0 argv-mem=19")
            .replace("tot-mem=1850", "tot-mem=1904");
        assert_eq!(
            b.run("CLIENT LIST ID 4 99 -5 2 4"),
            crate::args::repr(format!("{lbid}\n{la}\n{lbid}\n").as_bytes())
        );
        b.transcript(
            r#"
            > CLIENT LIST TYPE replica
            ""
            > CLIENT LIST TYPE slave
            ""
            > CLIENT LIST TYPE master
            ""
            > CLIENT LIST TYPE pubsub
            ""
            > CLIENT LIST ID 99
            ""
            > CLIENT LIST TYPE foo
            -ERR Unknown client type 'foo'
            > CLIENT LIST ID 1 x
            -ERR Invalid client ID
            > CLIENT LIST ID 1 1.5
            -ERR Invalid client ID
            > CLIENT LIST foo
            -ERR syntax error
            > CLIENT LIST ID
            -ERR syntax error
            > CLIENT LIST TYPE
            -ERR syntax error
            > CLIENT LIST TYPE normal extra
            -ERR syntax error
            "#,
        );
        // Pub/sub clients are listed by type.
        a.client.info.set_flag('P', true);
        assert!(b.run("CLIENT LIST TYPE pubsub").starts_with("\"id=2 addr=10.0.0.1:1111 "));
        assert!(b.run("CLIENT LIST TYPE normal").starts_with("\"id=4 addr=10.0.0.2:2222 "));
    }

    #[test]
    fn client_kill() {
        let ts = TestServer::new();
        let mut me = conn_from(&ts, "10.0.0.1:1");
        let other = conn_from(&ts, "10.0.0.2:2");
        me.transcript(
            r#"
            > CLIENT KILL
            -ERR wrong number of arguments for 'client|kill' command
            > CLIENT KILL id 10 wrong_arg
            -ERR syntax error
            > CLIENT KILL id str
            -ERR client-id should be greater than 0
            > CLIENT KILL id -1
            -ERR client-id should be greater than 0
            > CLIENT KILL id 0
            -ERR client-id should be greater than 0
            > CLIENT KILL id 9223372036854775808
            -ERR client-id should be greater than 0
            > CLIENT KILL type wrong_type
            -ERR Unknown client type 'wrong_type'
            > CLIENT KILL user wrong_user
            -ERR No such user 'wrong_user'
            > CLIENT KILL skipme yes_or_no
            -ERR syntax error
            > CLIENT KILL foo bar
            -ERR syntax error
            > CLIENT KILL 1.2.3.4:5
            -ERR No such client
            > CLIENT KILL id 99
            :0
            > CLIENT KILL addr 10.0.0.2:2 laddr 1.1.1.1:1
            :0
            > CLIENT KILL addr 10.0.0.2:2 type pubsub
            :0
            > CLIENT KILL addr 10.0.0.2:2 id 2
            :0
            > CLIENT KILL 10.0.0.2:2
            +OK
            > CLIENT KILL 10.0.0.2:2
            -ERR No such client
            "#,
        );
        assert!(other.client.info.killed.load(Ordering::Relaxed));
        assert!(ts.srv.clients.get(other.client.id).is_none());
        assert!(!me.client.close_after_reply);

        // New form: filters combine; SKIPME defaults to yes.
        let o1 = conn_from(&ts, "10.0.0.3:3");
        let o2 = conn_from(&ts, "10.0.0.4:4");
        let o3 = conn_from(&ts, "10.0.0.5:5");
        me.transcript(&format!("> CLIENT KILL ID {} ADDR 10.0.0.3:3\n:1", o1.client.id));
        assert!(o1.client.info.killed.load(Ordering::Relaxed));
        me.transcript(
            r#"
            > CLIENT KILL LADDR 127.0.0.1:6379 USER default TYPE normal
            :2
            > CLIENT KILL TYPE normal
            :0
            "#,
        );
        assert!(o2.client.info.killed.load(Ordering::Relaxed) && o3.client.info.killed.load(Ordering::Relaxed));
        assert!(!me.client.close_after_reply);
        assert_eq!(ts.srv.clients.len(), 1);

        // Killing yourself: the reply is sent, then the connection closes.
        me.transcript("> CLIENT KILL SKIPME no\n:1");
        assert!(me.client.close_after_reply);
        let mut me = conn_from(&ts, "10.0.0.9:9");
        me.transcript("> CLIENT KILL 10.0.0.9:9\n+OK");
        assert!(me.client.close_after_reply);
        assert!(!me.client.info.killed.load(Ordering::Relaxed));
        let mut me = conn_from(&ts, "10.0.0.8:8");
        me.transcript(&format!("> CLIENT KILL ID {} SKIPME yes\n:0", me.client.id));
        me.transcript(&format!("> CLIENT KILL ID {} SKIPME NO\n:1", me.client.id));
        assert!(me.client.close_after_reply);
    }

    #[test]
    fn no_evict_no_touch_flags() {
        let ts = TestServer::new();
        let mut c = ts.client();
        c.transcript(
            r#"
            > CLIENT NO-EVICT on
            +OK
            > CLIENT NO-TOUCH ON
            +OK
            > CLIENT NO-EVICT maybe
            -ERR syntax error
            > CLIENT NO-TOUCH maybe
            -ERR syntax error
            > CLIENT NO-TOUCH
            -ERR wrong number of arguments for 'client|no-touch' command
            > CLIENT NO-EVICT
            -ERR wrong number of arguments for 'client|no-evict' command
            "#,
        );
        assert!(c.client.no_evict && c.client.no_touch);
        assert_eq!(*c.client.info.flags.lock(), "eT");
        assert!(c.run("CLIENT INFO").contains(" flags=eT "));
        c.transcript("> CLIENT NO-EVICT off\n+OK");
        assert_eq!(*c.client.info.flags.lock(), "T");
        c.transcript("> CLIENT NO-TOUCH off\n+OK");
        assert!(!c.client.no_evict && !c.client.no_touch);
        assert_eq!(*c.client.info.flags.lock(), "N");
    }

    /// The fields of another client's CLIENT LIST line named in `keys`, as `key=value` words.
    fn fields(observer: &mut TestClient, id: u64, keys: &[&str]) -> Vec<String> {
        let line = observer.run(&format!("CLIENT LIST ID {id}"));
        line.trim_matches('"')
            .trim_end_matches("\\n")
            .split(' ')
            .filter(|w| keys.iter().any(|k| w.split('=').next() == Some(k)))
            .map(String::from)
            .collect()
    }

    /// What Redis 7.0.15 shows of a client as its state changes (checked against redis-server).
    #[test]
    fn client_list_follows_redis_lastcmd_flags_and_argv() {
        let ts = TestServer::new();
        let mut me = ts.client();
        let mut c = ts.client();
        let id = c.client.id;
        let show = |me: &mut TestClient| fields(me, id, &["flags", "cmd", "argv-mem"]);
        // `cmd=` is the command as looked up, whether it ran or not.
        c.run("GET a b");
        assert_eq!(show(&mut me), ["flags=N", "argv-mem=0", "cmd=get"]);
        c.run("NOSUCHCOMMAND");
        assert_eq!(show(&mut me), ["flags=N", "argv-mem=0", "cmd=NULL"]);
        c.run("CLIENT NOSUCH");
        assert_eq!(show(&mut me), ["flags=N", "argv-mem=0", "cmd=NULL"]);
        c.run("CLIENT");
        assert_eq!(show(&mut me), ["flags=N", "argv-mem=0", "cmd=client"]);
        c.transcript("> MULTI\n+OK\n> CLIENT ID\n+QUEUED");
        assert_eq!(show(&mut me), ["flags=x", "argv-mem=0", "cmd=client|id"]);
        c.transcript("> DISCARD\n+OK");
        // `d` once a watched key is touched, until UNWATCH / EXEC / DISCARD.
        c.transcript("> WATCH k\n+OK\n> MULTI\n+OK");
        assert_eq!(show(&mut me), ["flags=x", "argv-mem=0", "cmd=multi"]);
        me.transcript("> SET k 1\n+OK");
        assert_eq!(show(&mut me), ["flags=xd", "argv-mem=0", "cmd=multi"]);
        c.transcript("> EXEC\n(nil-array)");
        assert_eq!(show(&mut me), ["flags=N", "argv-mem=0", "cmd=exec"]);
        c.transcript("> WATCH k\n+OK");
        me.transcript("> DEL k\n:1");
        assert_eq!(show(&mut me), ["flags=d", "argv-mem=0", "cmd=watch"]);
        c.transcript("> UNWATCH\n+OK");
        assert_eq!(show(&mut me), ["flags=N", "argv-mem=0", "cmd=unwatch"]);
        // A blocked client keeps its command's arguments.
        assert_eq!(c.cmd(&["BLPOP", "nokey", "0"]), None);
        assert_eq!(show(&mut me), ["flags=b", "argv-mem=11", "cmd=blpop"]);
        me.transcript(&format!("> CLIENT UNBLOCK {id}\n:1"));
        assert_eq!(c.blocked_reply().as_deref(), Some("(nil-array)"));
        assert_eq!(show(&mut me), ["flags=N", "argv-mem=0", "cmd=blpop"]);
        // A client with subscriptions is of type pubsub.
        c.client.info.sub.store(1, Ordering::Relaxed);
        assert!(me.run("CLIENT LIST TYPE pubsub").contains(&format!("id={id} ")));
        assert!(!me.run("CLIENT LIST TYPE normal").contains(&format!("id={id} ")));
        me.transcript("> CLIENT KILL TYPE pubsub\n:1");
        assert!(c.client.info.killed.load(Ordering::Relaxed));
        me.transcript(
            r#"
            > CLIENT UNBLOCK 1 timeout x
            -ERR unknown subcommand or wrong number of arguments for 'UNBLOCK'. Try CLIENT HELP.
            "#,
        );
    }

    #[test]
    fn help_getredir_trackinginfo_errors() {
        let ts = TestServer::new();
        let mut c = ts.client();
        let help = c.cmd(&["client", "help"]).unwrap();
        let resp::Frame::Array(lines) = help else { panic!("not an array") };
        assert_eq!(lines.len(), 54);
        assert_eq!(lines[0], resp::Frame::simple("CLIENT <subcommand> [<arg> [value] [opt] ...]. Subcommands are:"));
        assert_eq!(lines[1], resp::Frame::simple("CACHING (YES|NO)"));
        assert_eq!(lines[51], resp::Frame::simple("    Will not touch LRU/LFU stats when this mode is on."));
        assert_eq!(lines[52], resp::Frame::simple("HELP"));
        assert_eq!(lines[53], resp::Frame::simple("    Prints this help."));
        c.transcript(
            r#"
            > CLIENT GETREDIR
            :-1
            > CLIENT TRACKINGINFO
            {"flags": ~["off"], "redirect": :-1, "prefixes": []}
            > CLIENT
            -ERR wrong number of arguments for 'client' command
            > CLIENT foo
            -ERR unknown subcommand 'foo'. Try CLIENT HELP.
            > CLIENT HELP x
            -ERR wrong number of arguments for 'client|help' command
            "#,
        );
    }

    #[test]
    fn fd_numbers_are_reused() {
        let ts = TestServer::new();
        let a = ts.client();
        let b = ts.client();
        assert_eq!((a.client.info.fd, b.client.info.fd), (8, 9));
        ts.srv.client_closed(&a.client);
        let c = ts.client();
        assert_eq!(c.client.info.fd, 8);
        let d = ts.client();
        assert_eq!(d.client.info.fd, 10);
    }

    #[test]
    fn flag_letters_keep_redis_order() {
        let ts = TestServer::new();
        let c = ts.client();
        let info = &c.client.info;
        info.set_flag('T', true);
        info.set_flag('x', true);
        info.set_flag('O', true);
        info.set_flag('e', true);
        assert_eq!(*info.flags.lock(), "OxeT");
        assert!(info.has_flag('x') && !info.has_flag('N'));
        info.set_flag('x', true);
        assert_eq!(*info.flags.lock(), "OxeT");
        for l in ['O', 'x', 'e', 'T'] {
            info.set_flag(l, false);
        }
        assert_eq!(*info.flags.lock(), "N");
        assert_eq!(info.type_name(), "normal");
    }
}
