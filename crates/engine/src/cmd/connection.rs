//! Connection commands: PING, ECHO, QUIT, SELECT, RESET, AUTH, HELLO and MONITOR. The CLIENT
//! container is [`super::client`], which reads and sets the connection state kept here (the name,
//! the protocol).

use super::base::BASE;
use crate::args::eq_ic;
use crate::client::ReplyMode;
use crate::command::Flags;
use crate::ctx::{Command, Ctx};
use bytes::Bytes;
use resp::{Frame, Protocol};
use std::sync::atomic::Ordering;

/// `noscript loading stale`, the flags most connection commands share.
const NLS: Flags = Flags::NOSCRIPT.or(Flags::LOADING).or(Flags::STALE);
/// `noscript loading stale fast no_auth allow_busy` (AUTH, HELLO, RESET).
const AUTHLIKE: Flags = NLS.or(Flags::FAST).or(Flags::NO_AUTH).or(Flags::ALLOW_BUSY);
/// `admin noscript loading stale`.
const ADMIN_NLS: Flags = Flags::ADMIN.or(NLS);

/// Table entries.
pub static COMMANDS: &[Command] = &[
    Command {
        name: "ping",
        arity: -1,
        flags: Flags::FAST,
        group: crate::command::Group::Connection,
        handler: ping,
        ..BASE
    },
    Command {
        name: "echo",
        arity: 2,
        flags: Flags::LOADING.or(Flags::STALE).or(Flags::FAST),
        group: crate::command::Group::Connection,
        handler: echo,
        ..BASE
    },
    Command {
        name: "quit",
        arity: -1,
        flags: Flags::ALLOW_BUSY.or(NLS).or(Flags::FAST).or(Flags::NO_AUTH),
        group: crate::command::Group::Connection,
        handler: quit,
        ..BASE
    },
    Command {
        name: "select",
        arity: 2,
        flags: Flags::LOADING.or(Flags::STALE).or(Flags::FAST),
        group: crate::command::Group::Connection,
        handler: select,
        ..BASE
    },
    Command {
        name: "reset",
        arity: 1,
        flags: AUTHLIKE,
        group: crate::command::Group::Connection,
        handler: reset,
        ..BASE
    },
    Command {
        name: "auth",
        arity: -2,
        flags: AUTHLIKE,
        group: crate::command::Group::Connection,
        handler: auth,
        ..BASE
    },
    Command {
        name: "hello",
        arity: -1,
        flags: AUTHLIKE,
        group: crate::command::Group::Connection,
        handler: hello,
        ..BASE
    },
    Command {
        name: "monitor",
        arity: 1,
        flags: ADMIN_NLS,
        group: crate::command::Group::Server,
        handler: monitor,
        ..BASE
    },
];

// ---------------------------------------------------------------------------------------------
// Helpers
// ---------------------------------------------------------------------------------------------

/// Redis's `getRangeLongFromObjectOrReply` message when no custom one is given.
fn range_error(min: i64, max: i64) -> Frame {
    Frame::error(format!("ERR value is out of range, value must between {min} and {max}"))
}

/// Redis's `validateClientAttr`: only printable ASCII without spaces (`'!'..='~'`).
pub(super) fn valid_attr(b: &[u8]) -> bool {
    b.iter().all(|&c| (b'!'..=b'~').contains(&c))
}

/// Sets (or, for an empty name, clears) the client name; the error reply if it is invalid (HELLO
/// SETNAME and CLIENT SETNAME).
pub(super) fn set_name(ctx: &mut Ctx<'_, '_>, name: &[u8]) -> Result<(), Frame> {
    if !valid_attr(name) {
        return Err(Frame::error("ERR Client names cannot contain spaces, newlines or special characters."));
    }
    *ctx.client.info.name.lock() = (!name.is_empty()).then(|| name.to_vec());
    Ok(())
}

/// Authenticates the client as `user` if `pass` opens it (Redis's `ACLAuthenticateUser`); a
/// failure goes to the ACL log.
fn authenticate(ctx: &mut Ctx<'_, '_>, user: &[u8], pass: &[u8]) -> bool {
    match ctx.srv.acl.authenticate(user, pass) {
        Some(u) => {
            ctx.client.authenticated = true;
            *ctx.client.info.user.lock() = u.name.clone();
            ctx.client.user = Some(u);
            true
        }
        None => {
            let context = if ctx.client.multi.active() || ctx.client.in_exec {
                crate::acl::Context::Multi
            } else {
                crate::acl::Context::Toplevel
            };
            let object = ctx.args[0].clone();
            ctx.srv.acl_denied(
                ctx.client,
                crate::acl::Reason::Auth,
                context,
                object,
                Some(Bytes::copy_from_slice(user)),
            );
            false
        }
    }
}

fn wrongpass() -> Frame {
    Frame::error("WRONGPASS invalid username-password pair or user is disabled.")
}

/// The protocol's number, as HELLO and CLIENT LIST / INFO (`resp=`) show it.
pub(super) fn proto_number(p: Protocol) -> usize {
    match p {
        Protocol::Resp2 => 2,
        Protocol::Resp3 => 3,
    }
}

fn set_proto(ctx: &mut Ctx<'_, '_>, p: Protocol) {
    ctx.client.proto = p;
    ctx.client.info.resp.store(proto_number(p), Ordering::Relaxed);
}

// ---------------------------------------------------------------------------------------------
// Handlers
// ---------------------------------------------------------------------------------------------

fn ping(ctx: &mut Ctx<'_, '_>) -> Frame {
    if ctx.argc() > 2 {
        return crate::error::wrong_arity("ping");
    }
    // A RESP2 client in pub/sub context gets the pong as a message-like array.
    if ctx.client.proto == Protocol::Resp2 && ctx.client.info.has_flag('P') {
        let msg = if ctx.argc() == 2 { ctx.args[1].clone() } else { Bytes::new() };
        return Frame::Array(vec![Frame::bulk(Bytes::from_static(b"pong")), Frame::bulk(msg)]);
    }
    match ctx.argc() {
        1 => Frame::simple("PONG"),
        _ => Frame::bulk(ctx.args[1].clone()),
    }
}

fn echo(ctx: &mut Ctx<'_, '_>) -> Frame {
    Frame::bulk(ctx.args[1].clone())
}

fn quit(ctx: &mut Ctx<'_, '_>) -> Frame {
    ctx.client.close_after_reply = true;
    Frame::ok()
}

fn select(ctx: &mut Ctx<'_, '_>) -> Frame {
    let i = match ctx.int_arg(1) {
        Ok(i) => i,
        Err(e) => return e,
    };
    if i < i32::MIN as i64 || i > i32::MAX as i64 {
        return range_error(i32::MIN as i64, i32::MAX as i64);
    }
    if i < 0 || i as usize >= ctx.srv.ks.ndbs() {
        return crate::error::db_out_of_range();
    }
    ctx.client.db = i as usize;
    ctx.client.info.db.store(ctx.client.db, Ordering::Relaxed);
    Frame::ok()
}

fn reset(ctx: &mut Ctx<'_, '_>) -> Frame {
    // Discard the MULTI state and unwatch every key, as Redis's discardTransaction() does.
    super::multi::leave(ctx);
    ctx.srv.unsubscribe_all(ctx.client);
    ctx.srv.disable_tracking(ctx.client);
    if ctx.client.monitor {
        ctx.srv.remove_monitor(ctx.client.id);
        ctx.client.monitor = false;
        ctx.client.info.set_flag('O', false);
    }
    ctx.client.db = 0;
    ctx.client.info.db.store(0, Ordering::Relaxed);
    set_proto(ctx, Protocol::Resp2);
    // Back to the default user, authenticated if it needs no password (Redis's clientSetDefaultAuth).
    let default = ctx.srv.acl.default().clone();
    ctx.client.authenticated = default.nopass_enabled();
    *ctx.client.info.user.lock() = default.name.clone();
    ctx.client.user = Some(default);
    *ctx.client.info.name.lock() = None;
    // lib-name and lib-ver are kept: they still describe the library behind the connection.
    // A pending CLIENT REPLY SKIP applies to this very command (Redis clears only SKIP_NEXT/OFF).
    if ctx.client.reply_mode != ReplyMode::SkipThis {
        ctx.client.reply_mode = ReplyMode::On;
    }
    // NO-TOUCH (7.2) goes, as in Redis 7.2; NO-EVICT stays, as in Redis 7.0 (its
    // clearClientConnectionState leaves CLIENT_NO_EVICT).
    ctx.client.no_touch = false;
    ctx.client.info.set_flag('T', false);
    // READONLY goes, as Redis's clearClientConnectionState clears CLIENT_READONLY.
    ctx.client.readonly = false;
    Frame::simple("RESET")
}

fn auth(ctx: &mut Ctx<'_, '_>) -> Frame {
    if ctx.argc() > 3 {
        return crate::error::syntax();
    }
    let (user, pass): (&[u8], &[u8]) = if ctx.argc() == 2 {
        if ctx.srv.acl.default().nopass() {
            return Frame::error(
                "ERR AUTH <password> called without any password configured for the default user. \
                 Are you sure your configuration is correct?",
            );
        }
        (b"default", ctx.arg(1))
    } else {
        (ctx.arg(1), ctx.arg(2))
    };
    if authenticate(ctx, user, pass) { Frame::ok() } else { wrongpass() }
}

fn hello(ctx: &mut Ctx<'_, '_>) -> Frame {
    let mut ver = None;
    if ctx.argc() >= 2 {
        let Some(v) = crate::args::parse_i64_strict(ctx.arg(1)) else {
            return Frame::error("ERR Protocol version is not an integer or out of range");
        };
        ver = match v {
            2 => Some(Protocol::Resp2),
            3 => Some(Protocol::Resp3),
            _ => return Frame::error("NOPROTO unsupported protocol version"),
        };
    }
    // Options apply in order, as in Redis 7.0: an AUTH takes effect even if a later option fails.
    let mut j = 2;
    while j < ctx.argc() {
        let more = ctx.argc() - 1 - j;
        let opt = ctx.arg(j);
        if eq_ic(opt, "auth") && more >= 2 {
            let (user, pass) = (ctx.arg(j + 1), ctx.arg(j + 2));
            if !authenticate(ctx, user, pass) {
                return wrongpass();
            }
            j += 3;
        } else if eq_ic(opt, "setname") && more >= 1 {
            let name = ctx.arg(j + 1);
            if let Err(e) = set_name(ctx, name) {
                return e;
            }
            j += 2;
        } else {
            return Frame::error(format!("ERR Syntax error in HELLO option '{}'", String::from_utf8_lossy(opt)));
        }
    }
    if !ctx.client.authenticated {
        return Frame::error(
            "NOAUTH HELLO must be called with the client already authenticated, otherwise the HELLO AUTH \
             <user> <pass> option can be used to authenticate the client and select the RESP protocol version \
             at the same time",
        );
    }
    if let Some(p) = ver {
        set_proto(ctx, p);
    }
    let s = |v: &'static str| Frame::bulk(Bytes::from_static(v.as_bytes()));
    Frame::Map(vec![
        (s("server"), s("redis")),
        (s("version"), s(crate::server::REDIS_VERSION)),
        (s("proto"), Frame::Integer(proto_number(ctx.client.proto) as i64)),
        (s("id"), Frame::Integer(ctx.client.id as i64)),
        (s("mode"), s("standalone")),
        (s("role"), s("master")),
        (s("modules"), Frame::Array(Vec::new())),
    ])
}

fn monitor(ctx: &mut Ctx<'_, '_>) -> Frame {
    // Hook (transactions): inside MULTI Redis replies "ERR MONITOR isn't allowed for DENY BLOCKING
    // client" (MULTI clients deny blocking).
    if ctx.client.monitor {
        // Already monitoring: Redis ignores the command without replying.
        ctx.client.suppress_reply = true;
        return Frame::ok();
    }
    ctx.client.monitor = true;
    ctx.client.info.set_flag('O', true);
    ctx.srv.add_monitor(ctx.client.info.clone());
    Frame::ok()
}

#[cfg(test)]
mod tests {
    use crate::testkit::TestServer;
    use resp::Protocol;
    use std::sync::atomic::Ordering;

    #[test]
    fn ping_echo_quit() {
        let ts = TestServer::new();
        let mut c = ts.client();
        c.transcript(
            r#"
            > PING
            +PONG
            > PING hello
            "hello"
            > PING a b
            -ERR wrong number of arguments for 'ping' command
            > ECHO "hi there"
            "hi there"
            > ECHO
            -ERR wrong number of arguments for 'echo' command
            > ECHO a b
            -ERR wrong number of arguments for 'echo' command
            > HELLO 3
            {"server": "redis", "version": "7.0.15", "proto": :3, "id": :1, "mode": "standalone", "role": "master", "modules": []}
            > PING
            +PONG
            "#,
        );
        // A RESP2 client in pub/sub context gets an array.
        c.transcript("> HELLO 2\n{\"server\": \"redis\", \"version\": \"7.0.15\", \"proto\": :2, \"id\": :1, \"mode\": \"standalone\", \"role\": \"master\", \"modules\": []}");
        c.client.info.set_flag('P', true);
        c.transcript(
            r#"
            > PING
            ["pong", ""]
            > PING x
            ["pong", "x"]
            "#,
        );
        c.client.proto = Protocol::Resp3;
        c.transcript("> PING x\n\"x\"");
        c.client.info.set_flag('P', false);
        assert!(!c.client.close_after_reply);
        c.transcript("> QUIT\n+OK");
        assert!(c.client.close_after_reply);
        let mut c = ts.client();
        c.transcript("> QUIT extra args\n+OK");
        assert!(c.client.close_after_reply);
    }

    #[test]
    fn select() {
        let ts = TestServer::new();
        let mut c = ts.client();
        c.transcript(
            r#"
            > SELECT 1
            +OK
            > SET k v
            +OK
            > SELECT 0
            +OK
            > GET k
            (nil)
            > SELECT 15
            +OK
            > SELECT 16
            -ERR DB index is out of range
            > SELECT -1
            -ERR DB index is out of range
            > SELECT 99999999999
            -ERR value is out of range, value must between -2147483648 and 2147483647
            > SELECT 1.5
            -ERR value is not an integer or out of range
            > SELECT x
            -ERR value is not an integer or out of range
            > SELECT
            -ERR wrong number of arguments for 'select' command
            > SELECT 1
            +OK
            > GET k
            "v"
            "#,
        );
        assert_eq!(c.client.db, 1);
        assert_eq!(c.client.info.db.load(Ordering::Relaxed), 1);
    }

    #[test]
    fn auth_with_password() {
        let ts = TestServer::new();
        let mut before = ts.client();
        ts.srv.config.set("requirepass", "pw", false).unwrap();
        // Connections made before requirepass stay authenticated, as in Redis.
        before.transcript("> PING\n+PONG");
        let mut c = ts.client();
        c.transcript(
            r#"
            > SET foo bar
            -NOAUTH Authentication required.
            > PING
            -NOAUTH Authentication required.
            > CLIENT ID
            -NOAUTH Authentication required.
            > SELECT 1
            -NOAUTH Authentication required.
            > AUTH wrong
            -WRONGPASS invalid username-password pair or user is disabled.
            > AUTH bob pw
            -WRONGPASS invalid username-password pair or user is disabled.
            > AUTH DEFAULT pw
            -WRONGPASS invalid username-password pair or user is disabled.
            > AUTH a b c
            -ERR syntax error
            > GET foo
            -NOAUTH Authentication required.
            > AUTH pw
            +OK
            > SET foo 100
            +OK
            > INCR-NOT-A-COMMAND
            -ERR unknown command 'INCR-NOT-A-COMMAND', with args beginning with: 
            > AUTH wrong
            -WRONGPASS invalid username-password pair or user is disabled.
            > GET foo
            "100"
            > RESET
            +RESET
            > GET foo
            -NOAUTH Authentication required.
            > AUTH default pw
            +OK
            > GET foo
            "100"
            "#,
        );
        let mut c = ts.client();
        c.transcript(
            r#"
            > HELLO 3
            -NOAUTH HELLO must be called with the client already authenticated, otherwise the HELLO AUTH <user> <pass> option can be used to authenticate the client and select the RESP protocol version at the same time
            > HELLO
            -NOAUTH HELLO must be called with the client already authenticated, otherwise the HELLO AUTH <user> <pass> option can be used to authenticate the client and select the RESP protocol version at the same time
            > HELLO 3 AUTH default nope
            -WRONGPASS invalid username-password pair or user is disabled.
            > HELLO 3 AUTH bob pw
            -WRONGPASS invalid username-password pair or user is disabled.
            > HELLO 3 SETNAME "a b"
            -ERR Client names cannot contain spaces, newlines or special characters.
            > PING
            -NOAUTH Authentication required.
            > HELLO 3 AUTH default pw SETNAME bar
            {"server": "redis", "version": "7.0.15", "proto": :3, "id": :3, "mode": "standalone", "role": "master", "modules": []}
            > CLIENT GETNAME
            "bar"
            "#,
        );
        assert_eq!(c.client.proto, Protocol::Resp3);
        assert!(c.client.authenticated);
        // QUIT is allowed before authenticating.
        let mut c = ts.client();
        c.transcript("> QUIT\n+OK");
        assert!(c.client.close_after_reply);
        // HELLO AUTH takes effect even when a later option fails (Redis 7.0 order).
        let mut c = ts.client();
        c.transcript(
            r#"
            > HELLO 2 AUTH default pw SETNAME "x y"
            -ERR Client names cannot contain spaces, newlines or special characters.
            > PING
            +PONG
            "#,
        );
    }

    #[test]
    fn hello() {
        let ts = TestServer::new();
        let mut c = ts.client();
        c.transcript(
            r#"
            > HELLO
            {"server": "redis", "version": "7.0.15", "proto": :2, "id": :1, "mode": "standalone", "role": "master", "modules": []}
            > HELLO 4
            -NOPROTO unsupported protocol version
            > HELLO 1
            -NOPROTO unsupported protocol version
            > HELLO x
            -ERR Protocol version is not an integer or out of range
            > HELLO 99999999999999999999
            -ERR Protocol version is not an integer or out of range
            > HELLO 3 foo
            -ERR Syntax error in HELLO option 'foo'
            > HELLO 3 auth a
            -ERR Syntax error in HELLO option 'auth'
            > HELLO 3 setname
            -ERR Syntax error in HELLO option 'setname'
            > HELLO 3 setname "a b"
            -ERR Client names cannot contain spaces, newlines or special characters.
            > CLIENT INFO
            "id=1 addr=127.0.0.1:50000 laddr=127.0.0.1:6379 fd=8 name= age=0 idle=0 flags=N db=0 sub=0 psub=0 ssub=0 multi=-1 qbuf=26 qbuf-free=0 argv-mem=10 multi-mem=0 rbs=16384 rbp=16384 obl=0 oll=0 omem=0 tot-mem=17210 events=r cmd=client|info user=default redir=-1 resp=2 lib-name= lib-ver=\n"
            > HELLO 3 AUTH default whatever SETNAME n1
            {"server": "redis", "version": "7.0.15", "proto": :3, "id": :1, "mode": "standalone", "role": "master", "modules": []}
            > HELLO
            {"server": "redis", "version": "7.0.15", "proto": :3, "id": :1, "mode": "standalone", "role": "master", "modules": []}
            > CLIENT GETNAME
            "n1"
            > HELLO 2 setname ""
            {"server": "redis", "version": "7.0.15", "proto": :2, "id": :1, "mode": "standalone", "role": "master", "modules": []}
            > CLIENT GETNAME
            (nil)
            "#,
        );
        assert_eq!(c.client.proto, Protocol::Resp2);
        c.transcript("> HELLO 3\n{\"server\": \"redis\", \"version\": \"7.0.15\", \"proto\": :3, \"id\": :1, \"mode\": \"standalone\", \"role\": \"master\", \"modules\": []}");
        assert_eq!(c.client.proto, Protocol::Resp3);
        assert_eq!(c.client.info.resp.load(Ordering::Relaxed), 3);
    }

    #[test]
    fn reset() {
        let ts = TestServer::new();
        let mut c = ts.client();
        c.transcript(
            r#"
            > SELECT 2
            +OK
            > CLIENT SETNAME foo
            +OK
            > CLIENT SETINFO lib-name mylib
            +OK
            > CLIENT NO-TOUCH on
            +OK
            > CLIENT NO-EVICT on
            +OK
            > MONITOR
            +OK
            > HELLO 3
            {"server": "redis", "version": "7.0.15", "proto": :3, "id": :1, "mode": "standalone", "role": "master", "modules": []} | +1700000000.000000 [2 127.0.0.1:50000] "HELLO" "3"
            > RESET
            +RESET
            > CLIENT INFO
            "id=1 addr=127.0.0.1:50000 laddr=127.0.0.1:6379 fd=8 name= age=0 idle=0 flags=e db=0 sub=0 psub=0 ssub=0 multi=-1 qbuf=26 qbuf-free=0 argv-mem=10 multi-mem=0 rbs=16384 rbp=16384 obl=0 oll=0 omem=0 tot-mem=17210 events=r cmd=client|info user=default redir=-1 resp=2 lib-name=mylib lib-ver=\n"
            > RESET x
            -ERR wrong number of arguments for 'reset' command
            "#,
        );
        assert_eq!(c.client.proto, Protocol::Resp2);
        assert!(!c.client.monitor && !c.client.no_touch && c.client.no_evict);
        assert_eq!(c.client.db, 0);
        // RESET turns CLIENT REPLY OFF back on, and replies.
        c.transcript(
            r#"
            > CLIENT REPLY OFF
            (no reply)
            > RESET
            +RESET
            > PING
            +PONG
            "#,
        );
        // ...but a pending SKIP swallows RESET's own reply, as in Redis.
        c.transcript(
            r#"
            > CLIENT REPLY SKIP
            (no reply)
            > RESET
            (no reply)
            > PING e
            "e"
            "#,
        );
    }

    #[test]
    fn monitor() {
        let ts = TestServer::new();
        let mut c = ts.client();
        let mut other = ts.client();
        c.transcript("> MONITOR\n+OK");
        assert!(c.client.monitor);
        // A second MONITOR is ignored without a reply.
        c.transcript("> MONITOR\n(no reply)");
        assert!(other.run("CLIENT LIST").contains(" flags=O "));
        // A MONITOR client is a normal client.
        assert!(other.run("CLIENT LIST TYPE normal").contains(" flags=O "));
        other.transcript("> MONITOR x\n-ERR wrong number of arguments for 'monitor' command");
    }
}
