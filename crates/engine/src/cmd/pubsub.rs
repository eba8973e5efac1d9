//! Pub/sub commands: SUBSCRIBE, UNSUBSCRIBE, PSUBSCRIBE, PUNSUBSCRIBE, SSUBSCRIBE, SUNSUBSCRIBE,
//! PUBLISH, SPUBLISH and the PUBSUB container. The registry and delivery are `crate::pubsub`.
//!
//! Subscription confirmations are pushes, as in Redis: they go through the client's outbox
//! (written before the command's reply, which is empty), so CLIENT REPLY OFF does not hide them.
//! Inside EXEC they are the command's reply instead, in the transaction's array.

use super::base::BASE;
use crate::command::{Flags, Group, Keys};
use crate::ctx::{Command, Ctx};
use crate::pubsub::Kind;
use bytes::Bytes;
use resp::Frame;

/// `pubsub noscript loading stale`.
const SUB: Flags = Flags::PUBSUB.or(Flags::NOSCRIPT).or(Flags::LOADING).or(Flags::STALE);
/// `pubsub loading stale`.
const PLS: Flags = Flags::PUBSUB.or(Flags::LOADING).or(Flags::STALE);
/// `pubsub loading stale fast may_replicate` (PUBLISH and SPUBLISH go into Redis's replication
/// stream, so CLIENT PAUSE WRITE holds them back and read-only scripts may not call them).
const PUB: Flags = PLS.or(Flags::FAST).or(Flags::MAY_REPLICATE);

static PUBSUB_SUBCOMMANDS: &[Command] = &[
    Command { name: "pubsub|channels", arity: -2, flags: PLS, group: Group::PubSub, handler: channels, ..BASE },
    Command {
        name: "pubsub|help",
        arity: 2,
        flags: Flags::LOADING.or(Flags::STALE),
        group: Group::PubSub,
        handler: help,
        ..BASE
    },
    Command { name: "pubsub|numpat", arity: 2, flags: PLS, group: Group::PubSub, handler: numpat, ..BASE },
    Command { name: "pubsub|numsub", arity: -2, flags: PLS, group: Group::PubSub, handler: numsub, ..BASE },
    Command {
        name: "pubsub|shardchannels",
        arity: -2,
        flags: PLS,
        group: Group::PubSub,
        handler: shardchannels,
        ..BASE
    },
    Command { name: "pubsub|shardnumsub", arity: -2, flags: PLS, group: Group::PubSub, handler: shardnumsub, ..BASE },
];

/// The family's table.
pub static COMMANDS: &[Command] = &[
    Command { name: "subscribe", arity: -2, flags: SUB, group: Group::PubSub, handler: subscribe, ..BASE },
    Command { name: "psubscribe", arity: -2, flags: SUB, group: Group::PubSub, handler: psubscribe, ..BASE },
    Command {
        name: "ssubscribe",
        arity: -2,
        flags: SUB,
        keys: Keys::ALL,
        group: Group::PubSub,
        handler: ssubscribe,
        ..BASE
    },
    Command { name: "unsubscribe", arity: -1, flags: SUB, group: Group::PubSub, handler: unsubscribe, ..BASE },
    Command { name: "punsubscribe", arity: -1, flags: SUB, group: Group::PubSub, handler: punsubscribe, ..BASE },
    Command {
        name: "sunsubscribe",
        arity: -1,
        flags: SUB,
        keys: Keys::ALL,
        group: Group::PubSub,
        handler: sunsubscribe,
        ..BASE
    },
    Command { name: "publish", arity: 3, flags: PUB, group: Group::PubSub, handler: publish, ..BASE },
    Command {
        name: "spublish",
        arity: 3,
        flags: PUB,
        keys: Keys::ONE,
        group: Group::PubSub,
        handler: spublish,
        ..BASE
    },
    Command { name: "pubsub", arity: -2, group: Group::PubSub, subcommands: PUBSUB_SUBCOMMANDS, ..BASE },
];

/// Runs a (un)subscription and answers: nothing (the confirmations went to the outbox), or,
/// inside EXEC, the confirmations themselves.
fn confirmed(ctx: &mut Ctx<'_, '_>, run: impl FnOnce(&mut Ctx<'_, '_>)) -> Frame {
    run(ctx);
    if !ctx.client.deny_blocking {
        return Frame::Encoded(Bytes::new());
    }
    let mut msgs = Vec::new();
    ctx.client.info.outbox.take(&mut msgs);
    let mut out = bytes::BytesMut::with_capacity(msgs.iter().map(Bytes::len).sum());
    for m in msgs {
        crate::message::put_message(&mut out, ctx.client.proto, &m);
    }
    Frame::Encoded(out.freeze())
}

fn subscribe(ctx: &mut Ctx<'_, '_>) -> Frame {
    confirmed(ctx, |ctx| ctx.srv.subscribe(ctx.client, Kind::Channel, &ctx.args[1..]))
}

fn psubscribe(ctx: &mut Ctx<'_, '_>) -> Frame {
    confirmed(ctx, |ctx| ctx.srv.subscribe(ctx.client, Kind::Pattern, &ctx.args[1..]))
}

fn ssubscribe(ctx: &mut Ctx<'_, '_>) -> Frame {
    // Redis lets SUBSCRIBE and PSUBSCRIBE into a transaction for compatibility, not SSUBSCRIBE.
    if ctx.client.deny_blocking {
        return Frame::error("ERR SSUBSCRIBE isn't allowed for a DENY BLOCKING client");
    }
    confirmed(ctx, |ctx| ctx.srv.subscribe(ctx.client, Kind::Shard, &ctx.args[1..]))
}

fn unsubscribe(ctx: &mut Ctx<'_, '_>) -> Frame {
    confirmed(ctx, |ctx| ctx.srv.unsubscribe(ctx.client, Kind::Channel, &ctx.args[1..], true))
}

fn punsubscribe(ctx: &mut Ctx<'_, '_>) -> Frame {
    confirmed(ctx, |ctx| ctx.srv.unsubscribe(ctx.client, Kind::Pattern, &ctx.args[1..], true))
}

fn sunsubscribe(ctx: &mut Ctx<'_, '_>) -> Frame {
    confirmed(ctx, |ctx| ctx.srv.unsubscribe(ctx.client, Kind::Shard, &ctx.args[1..], true))
}

/// PUBLISH channel message; replicas publish it too (Redis propagates it to replicas, not to the
/// AOF).
fn publish(ctx: &mut Ctx<'_, '_>) -> Frame {
    ctx.srv.feed_replicas_in(ctx.client.db, ctx.args);
    Frame::Integer(ctx.srv.publish(false, &ctx.args[1], &ctx.args[2]) as i64)
}

/// SPUBLISH shardchannel message; replicas publish it too.
fn spublish(ctx: &mut Ctx<'_, '_>) -> Frame {
    ctx.srv.feed_replicas_in(ctx.client.db, ctx.args);
    Frame::Integer(ctx.srv.publish(true, &ctx.args[1], &ctx.args[2]) as i64)
}

/// PUBSUB CHANNELS / SHARDCHANNELS take one optional pattern.
fn list(ctx: &mut Ctx<'_, '_>, kind: Kind) -> Frame {
    if ctx.argc() > 3 {
        return subcommand_syntax(ctx);
    }
    let pattern = ctx.args.get(2).map(|p| &p[..]);
    Frame::Array(ctx.srv.pubsub.list(kind, pattern).into_iter().map(Frame::Bulk).collect())
}

fn channels(ctx: &mut Ctx<'_, '_>) -> Frame {
    list(ctx, Kind::Channel)
}

fn shardchannels(ctx: &mut Ctx<'_, '_>) -> Frame {
    list(ctx, Kind::Shard)
}

fn counts(ctx: &mut Ctx<'_, '_>, kind: Kind) -> Frame {
    let mut v = Vec::with_capacity(2 * (ctx.argc() - 2));
    for ch in &ctx.args[2..] {
        v.push(Frame::Bulk(ch.clone()));
        v.push(Frame::Integer(ctx.srv.pubsub.numsub(kind, ch) as i64));
    }
    Frame::Array(v)
}

fn numsub(ctx: &mut Ctx<'_, '_>) -> Frame {
    counts(ctx, Kind::Channel)
}

fn shardnumsub(ctx: &mut Ctx<'_, '_>) -> Frame {
    counts(ctx, Kind::Shard)
}

fn numpat(ctx: &mut Ctx<'_, '_>) -> Frame {
    Frame::Integer(ctx.srv.pubsub.len(Kind::Pattern) as i64)
}

/// Redis's `addReplySubcommandSyntaxError`.
fn subcommand_syntax(ctx: &Ctx<'_, '_>) -> Frame {
    Frame::error(format!(
        "ERR unknown subcommand or wrong number of arguments for '{}'. Try PUBSUB HELP.",
        crate::error::trunc(&ctx.args[1], 128)
    ))
}

const HELP: &[&str] = &[
    "CHANNELS [<pattern>]",
    "    Return the currently active channels matching a <pattern> (default: '*').",
    "NUMPAT",
    "    Return number of subscriptions to patterns.",
    "NUMSUB [<channel> ...]",
    "    Return the number of subscribers for the specified channels, excluding",
    "    pattern subscriptions(default: no channels).",
    "SHARDCHANNELS [<pattern>]",
    "    Return the currently active shard level channels matching a <pattern> (default: '*').",
    "SHARDNUMSUB [<shardchannel> ...]",
    "    Return the number of subscribers for the specified shard level channel(s)",
];

fn help(_ctx: &mut Ctx<'_, '_>) -> Frame {
    super::server::help_reply("PUBSUB", HELP)
}

#[cfg(test)]
mod tests {
    use crate::testkit::TestServer;

    #[test]
    fn subscribe_publish_and_introspection() {
        let ts = TestServer::new();
        let mut sub = ts.client();
        let mut publ = ts.client();
        sub.transcript(
            r#"
            > SUBSCRIBE a b a
            ["subscribe", "a", :1] | ["subscribe", "b", :2] | ["subscribe", "a", :2]
            "#,
        );
        publ.transcript(
            r#"
            > PUBLISH a hello
            :1
            > PUBSUB NUMSUB a b c
            ["a", :1, "b", :1, "c", :0]
            > PUBSUB NUMPAT
            :0
            > PUBSUB CHANNELS
            ["a", "b"]
            > PUBSUB CHANNELS b*
            ["b"]
            > PUBSUB CHANNELS a b
            -ERR unknown subcommand or wrong number of arguments for 'CHANNELS'. Try PUBSUB HELP.
            > PUBSUB NUMPAT x
            -ERR wrong number of arguments for 'pubsub|numpat' command
            "#,
        );
        // The message waits in the outbox and goes out before the next reply.
        sub.transcript(
            r#"
            > PING
            ["message", "a", "hello"] | ["pong", ""]
            > GET x
            -ERR Can't execute 'get': only (P|S)SUBSCRIBE / (P|S)UNSUBSCRIBE / PING / QUIT / RESET are allowed in this context
            > PSUBSCRIBE h*
            ["psubscribe", "h*", :3]
            "#,
        );
        assert_eq!(publ.run("PUBLISH hat x"), ":1");
        assert_eq!(publ.run("PUBLISH a y"), ":1");
        assert_eq!(sub.pushes(), ["[\"pmessage\", \"h*\", \"hat\", \"x\"]", "[\"message\", \"a\", \"y\"]"]);
        sub.transcript(
            r#"
            > UNSUBSCRIBE
            ["unsubscribe", "a", :2] | ["unsubscribe", "b", :1]
            > UNSUBSCRIBE
            ["unsubscribe", (nil), :1]
            > PUNSUBSCRIBE
            ["punsubscribe", "h*", :0]
            > GET x
            (nil)
            "#,
        );
        assert!(publ.run("INFO stats").contains("pubsub_channels:0"));
    }

    #[test]
    fn resp3_pushes_reply_off_reset_and_closing() {
        let ts = TestServer::new();
        let mut sub = ts.client();
        let mut publ = ts.client();
        sub.run("HELLO 3");
        sub.transcript(
            r#"
            > CLIENT REPLY OFF
            (no reply)
            > SSUBSCRIBE s
            >["ssubscribe", "s", :1]
            > SUBSCRIBE c
            >["subscribe", "c", :1]
            > CLIENT REPLY ON
            +OK
            > PUBLISH c self
            >["message", "c", "self"] | :1
            > GET x
            (nil)
            "#,
        );
        publ.transcript(
            r#"
            > SPUBLISH s m
            :1
            > PUBLISH s m
            :0
            > PUBSUB SHARDNUMSUB s
            ["s", :1]
            > PUBSUB SHARDCHANNELS
            ["s"]
            "#,
        );
        assert_eq!(sub.pushes(), [">[\"smessage\", \"s\", \"m\"]"]);
        let list = publ.run("CLIENT LIST TYPE pubsub");
        assert!(list.contains(" flags=P db=0 sub=1 psub=0 ssub=1 ") && list.matches("id=").count() == 1, "{list}");
        sub.run("RESET");
        assert_eq!(publ.run("PUBLISH c x"), ":0");
        assert_eq!(sub.pushes(), Vec::<String>::new());
        sub.run("SUBSCRIBE c");
        drop(sub);
        assert_eq!(publ.run("PUBLISH c x"), ":0");
        assert_eq!(publ.run("PUBSUB CHANNELS"), "[]");
    }

    #[test]
    fn subscriptions_in_exec_answer_inside_the_transaction() {
        let ts = TestServer::new();
        let mut c = ts.client();
        c.run("MULTI");
        c.run("SUBSCRIBE x");
        c.run("SSUBSCRIBE y");
        assert_eq!(
            c.run("EXEC"),
            "[[\"subscribe\", \"x\", :1], -ERR SSUBSCRIBE isn't allowed for a DENY BLOCKING client]"
        );
    }
}
