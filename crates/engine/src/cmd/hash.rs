//! The hash family: HSET, HGET, HGETALL, HINCRBY, HRANDFIELD, HSCAN...

use super::base::BASE;
use crate::args::parse_i64_strict;
use crate::command::{Flags, Keys};
use crate::ctx::{Command, Ctx};
use crate::error;
use crate::types::access::{
    bulk, create_hash, parse_scan, read_hash, remove_if_empty, scan_match, scan_positions, scan_reply, write_hash,
};
use resp::Frame;

/// Table entries.
pub static COMMANDS: &[Command] = &[
    Command {
        name: "hset",
        arity: -4,
        flags: Flags::WRITE.or(Flags::DENYOOM).or(Flags::FAST),
        keys: Keys::ONE,
        group: crate::command::Group::Hash,
        handler: hset,
        ..BASE
    },
    Command {
        name: "hsetnx",
        arity: 4,
        flags: Flags::WRITE.or(Flags::DENYOOM).or(Flags::FAST),
        keys: Keys::ONE,
        group: crate::command::Group::Hash,
        handler: hsetnx,
        ..BASE
    },
    Command {
        name: "hmset",
        arity: -4,
        flags: Flags::WRITE.or(Flags::DENYOOM).or(Flags::FAST),
        keys: Keys::ONE,
        group: crate::command::Group::Hash,
        handler: hmset,
        ..BASE
    },
    Command {
        name: "hget",
        arity: 3,
        flags: Flags::READONLY.or(Flags::FAST),
        keys: Keys::ONE,
        group: crate::command::Group::Hash,
        handler: hget,
        ..BASE
    },
    Command {
        name: "hmget",
        arity: -3,
        flags: Flags::READONLY.or(Flags::FAST),
        keys: Keys::ONE,
        group: crate::command::Group::Hash,
        handler: hmget,
        ..BASE
    },
    Command {
        name: "hgetall",
        arity: 2,
        flags: Flags::READONLY,
        keys: Keys::ONE,
        group: crate::command::Group::Hash,
        handler: hgetall,
        ..BASE
    },
    Command {
        name: "hdel",
        arity: -3,
        flags: Flags::WRITE.or(Flags::FAST),
        keys: Keys::ONE,
        group: crate::command::Group::Hash,
        handler: hdel,
        ..BASE
    },
    Command {
        name: "hlen",
        arity: 2,
        flags: Flags::READONLY.or(Flags::FAST),
        keys: Keys::ONE,
        group: crate::command::Group::Hash,
        handler: hlen,
        ..BASE
    },
    Command {
        name: "hexists",
        arity: 3,
        flags: Flags::READONLY.or(Flags::FAST),
        keys: Keys::ONE,
        group: crate::command::Group::Hash,
        handler: hexists,
        ..BASE
    },
    Command {
        name: "hkeys",
        arity: 2,
        flags: Flags::READONLY,
        keys: Keys::ONE,
        group: crate::command::Group::Hash,
        handler: hkeys,
        ..BASE
    },
    Command {
        name: "hvals",
        arity: 2,
        flags: Flags::READONLY,
        keys: Keys::ONE,
        group: crate::command::Group::Hash,
        handler: hvals,
        ..BASE
    },
    Command {
        name: "hincrby",
        arity: 4,
        flags: Flags::WRITE.or(Flags::DENYOOM).or(Flags::FAST),
        keys: Keys::ONE,
        group: crate::command::Group::Hash,
        handler: hincrby,
        ..BASE
    },
    Command {
        name: "hincrbyfloat",
        arity: 4,
        flags: Flags::WRITE.or(Flags::DENYOOM).or(Flags::FAST),
        keys: Keys::ONE,
        group: crate::command::Group::Hash,
        handler: hincrbyfloat,
        ..BASE
    },
    Command {
        name: "hstrlen",
        arity: 3,
        flags: Flags::READONLY.or(Flags::FAST),
        keys: Keys::ONE,
        group: crate::command::Group::Hash,
        handler: hstrlen,
        ..BASE
    },
    Command {
        name: "hrandfield",
        arity: -2,
        flags: Flags::READONLY,
        keys: Keys::ONE,
        group: crate::command::Group::Hash,
        handler: hrandfield,
        ..BASE
    },
    Command {
        name: "hscan",
        arity: -3,
        flags: Flags::READONLY,
        keys: Keys::ONE,
        group: crate::command::Group::Hash,
        handler: hscan,
        ..BASE
    },
];

fn hset_generic(ctx: &mut Ctx<'_, '_>) -> Result<i64, Frame> {
    if ctx.argc() % 2 == 1 {
        return Err(error::wrong_arity(ctx.cmd.name));
    }
    let key = ctx.arg(1);
    let args = ctx.args;
    let (entries, value_max) = ctx.srv.config.hash_listpack_limits();
    let mut db = ctx.db();
    let h = create_hash(&mut db, key)?;
    let mut added = 0;
    for pair in args[2..].chunks_exact(2) {
        if h.set_under(&pair[0], &pair[1], entries, value_max) {
            added += 1;
        }
    }
    ctx.changed(args[2..].len() as u64 / 2);
    Ok(added)
}

fn hset(ctx: &mut Ctx<'_, '_>) -> Frame {
    hset_generic(ctx).map_or_else(|e| e, Frame::Integer)
}

fn hmset(ctx: &mut Ctx<'_, '_>) -> Frame {
    hset_generic(ctx).map_or_else(|e| e, |_| Frame::ok())
}

fn hsetnx(ctx: &mut Ctx<'_, '_>) -> Frame {
    let (key, field, val) = (ctx.arg(1), ctx.arg(2), ctx.arg(3));
    let (entries, value_max) = ctx.srv.config.hash_listpack_limits();
    let mut db = ctx.db();
    let h = match create_hash(&mut db, key) {
        Ok(h) => h,
        Err(e) => return e,
    };
    if h.contains_key(field) {
        return Frame::Integer(0);
    }
    h.set_under(field, val, entries, value_max);
    ctx.changed(1);
    Frame::Integer(1)
}

fn hget(ctx: &mut Ctx<'_, '_>) -> Frame {
    let (key, field) = (ctx.arg(1), ctx.arg(2));
    match read_hash(&mut ctx.db(), key) {
        Ok(Some(h)) => h.get(field).map(bulk).unwrap_or(Frame::Null),
        Ok(None) => Frame::Null,
        Err(e) => e,
    }
}

fn hmget(ctx: &mut Ctx<'_, '_>) -> Frame {
    let key = ctx.arg(1);
    let fields = &ctx.args[2..];
    match read_hash(&mut ctx.db(), key) {
        Ok(h) => Frame::Array(
            fields.iter().map(|f| h.as_ref().and_then(|h| h.get(&f[..])).map(bulk).unwrap_or(Frame::Null)).collect(),
        ),
        Err(e) => e,
    }
}

fn hgetall(ctx: &mut Ctx<'_, '_>) -> Frame {
    let key = ctx.arg(1);
    let proto = ctx.client.proto;
    match read_hash(&mut ctx.db(), key) {
        Ok(Some(h)) => {
            let body = h.iter().map(|(k, v)| resp::BulkArray::bulk_size(k.len()) + resp::BulkArray::bulk_size(v.len()));
            let mut out = resp::BulkArray::map(h.len(), body.sum(), proto);
            for (k, v) in h.iter() {
                out.push(k);
                out.push(v);
            }
            out.finish()
        }
        Ok(None) => Frame::Map(Vec::new()),
        Err(e) => e,
    }
}

/// The bulk strings `items` yields, encoded straight into an array reply (see [`resp::BulkArray`]).
pub(crate) fn encoded_array<'a, I>(items: impl Fn() -> I, proto: resp::Protocol) -> Frame
where
    I: Iterator<Item = &'a [u8]>,
{
    let (n, body) = items().fold((0, 0), |(n, b), x| (n + 1, b + resp::BulkArray::bulk_size(x.len())));
    let mut out = resp::BulkArray::array(n, body, proto);
    for x in items() {
        out.push(x);
    }
    out.finish()
}

fn hkeys(ctx: &mut Ctx<'_, '_>) -> Frame {
    let key = ctx.arg(1);
    let proto = ctx.client.proto;
    match read_hash(&mut ctx.db(), key) {
        Ok(Some(h)) => encoded_array(|| h.keys(), proto),
        Ok(None) => Frame::Array(Vec::new()),
        Err(e) => e,
    }
}

fn hvals(ctx: &mut Ctx<'_, '_>) -> Frame {
    let key = ctx.arg(1);
    let proto = ctx.client.proto;
    match read_hash(&mut ctx.db(), key) {
        Ok(Some(h)) => encoded_array(|| h.values(), proto),
        Ok(None) => Frame::Array(Vec::new()),
        Err(e) => e,
    }
}

fn hdel(ctx: &mut Ctx<'_, '_>) -> Frame {
    let key = ctx.arg(1);
    let fields = &ctx.args[2..];
    let mut db = ctx.db();
    let h = match write_hash(&mut db, key) {
        Ok(Some(h)) => h,
        Ok(None) => return Frame::Integer(0),
        Err(e) => return e,
    };
    let mut n = 0;
    for f in fields {
        if h.swap_remove(&f[..]) {
            n += 1;
        }
        if h.is_empty() {
            break;
        }
    }
    remove_if_empty(&mut db, key);
    ctx.changed(n as u64);
    Frame::Integer(n)
}

fn hlen(ctx: &mut Ctx<'_, '_>) -> Frame {
    let key = ctx.arg(1);
    match read_hash(&mut ctx.db(), key) {
        Ok(h) => Frame::Integer(h.map_or(0, |h| h.len() as i64)),
        Err(e) => e,
    }
}

fn hexists(ctx: &mut Ctx<'_, '_>) -> Frame {
    let (key, field) = (ctx.arg(1), ctx.arg(2));
    match read_hash(&mut ctx.db(), key) {
        Ok(h) => Frame::Integer(h.is_some_and(|h| h.contains_key(field)) as i64),
        Err(e) => e,
    }
}

fn hstrlen(ctx: &mut Ctx<'_, '_>) -> Frame {
    let (key, field) = (ctx.arg(1), ctx.arg(2));
    match read_hash(&mut ctx.db(), key) {
        Ok(h) => Frame::Integer(h.and_then(|h| h.get(field)).map_or(0, |v| v.len() as i64)),
        Err(e) => e,
    }
}

fn hincrby(ctx: &mut Ctx<'_, '_>) -> Frame {
    let incr = match ctx.int_arg(3) {
        Ok(i) => i,
        Err(e) => return e,
    };
    let (key, field) = (ctx.arg(1), ctx.arg(2));
    let (entries, value_max) = ctx.srv.config.hash_listpack_limits();
    let mut db = ctx.db();
    let h = match create_hash(&mut db, key) {
        Ok(h) => h,
        Err(e) => return e,
    };
    let cur = match h.get(field) {
        Some(v) => match parse_i64_strict(v) {
            Some(n) => n,
            None => return Frame::error("ERR hash value is not an integer"),
        },
        None => 0,
    };
    let Some(new) = cur.checked_add(incr) else {
        return error::overflow();
    };
    let s = itoa::Buffer::new().format(new).as_bytes().to_vec();
    h.set_under(field, &s, entries, value_max);
    ctx.changed(1);
    Frame::Integer(new)
}

fn hincrbyfloat(ctx: &mut Ctx<'_, '_>) -> Frame {
    let Some(incr) = ldouble::LongDouble::parse(ctx.arg(3)) else {
        return error::not_float();
    };
    if incr.is_nan() || incr.is_infinite() {
        return Frame::error("ERR value is NaN or Infinity");
    }
    let (key, field) = (ctx.arg(1), ctx.arg(2));
    let (entries, value_max) = ctx.srv.config.hash_listpack_limits();
    let mut db = ctx.db();
    let h = match create_hash(&mut db, key) {
        Ok(h) => h,
        Err(e) => return e,
    };
    let cur = match h.get(field) {
        Some(v) => match ldouble::LongDouble::parse(v) {
            Some(n) => n,
            None => return Frame::error("ERR hash value is not a float"),
        },
        None => ldouble::LongDouble::from_i64(0),
    };
    let new = cur.add(incr);
    if new.is_nan() || new.is_infinite() {
        remove_if_empty(&mut db, key);
        return Frame::error("ERR increment would produce NaN or Infinity");
    }
    let s = new.to_human_string();
    h.set_under(field, s.as_bytes(), entries, value_max);
    ctx.changed(1);
    // Replays as the value it produced (Redis's HSET rewrite): floating point need not agree.
    ctx.propagate_as(&[&b"HSET"[..], key, field, s.as_bytes()]);
    Frame::Bulk(bytes::Bytes::from(s))
}

fn hrandfield(ctx: &mut Ctx<'_, '_>) -> Frame {
    use crate::random::canonical_order;
    use rand::Rng;
    let key = ctx.arg(1);
    if ctx.argc() == 2 {
        let (mut db, mut rng) = ctx.db_rng();
        return match read_hash(&mut db, key) {
            Ok(Some(h)) if !h.is_empty() => {
                let field = |i: usize| h.get_index(i).map_or(&[][..], |(k, _)| k);
                let n = rng.random_range(0..h.len());
                let i = canonical_order(&rng, h.len(), field).map_or(n, |o| o[n]);
                h.get_index(i).map(|(k, _)| bulk(k)).unwrap_or(Frame::Null)
            }
            Ok(_) => Frame::Null,
            Err(e) => e,
        };
    }
    let (l, withvalues) = match super::set::random_count_with(ctx, "withvalues") {
        Ok(x) => x,
        Err(e) => return e,
    };
    let proto = ctx.client.proto;
    let cap = ctx.reply_cap();
    let reply = {
        let (mut db, mut rng) = ctx.db_rng();
        let h = match read_hash(&mut db, key) {
            Ok(Some(h)) => h,
            Ok(None) => return Frame::Array(Vec::new()),
            Err(e) => return e,
        };
        let entry = |i: usize| h.get_index(i).unwrap_or((&[], &[]));
        let order = canonical_order(&rng, h.len(), |i| entry(i).0);
        if withvalues {
            super::set::random_reply(
                &mut rng,
                order.as_deref(),
                h.len(),
                l,
                cap,
                |i| resp::BulkArray::pair_size(entry(i).0.len(), entry(i).1.len(), proto),
                |n, body| resp::BulkArray::pairs(n, body, proto),
                |out, i| out.push_pair(entry(i).0, entry(i).1),
            )
        } else {
            super::set::random_reply(
                &mut rng,
                order.as_deref(),
                h.len(),
                l,
                cap,
                |i| resp::BulkArray::bulk_size(entry(i).0.len()),
                |n, body| resp::BulkArray::array(n, body, proto),
                |out, i| out.push(entry(i).0),
            )
        }
    };
    reply.unwrap_or_else(|| ctx.reply_too_large())
}

fn hscan(ctx: &mut Ctx<'_, '_>) -> Frame {
    let opts = match parse_scan(ctx.args, 2) {
        Ok(o) => o,
        Err(e) => return e,
    };
    let key = ctx.arg(1);
    let mut db = ctx.db();
    let h = match read_hash(&mut db, key) {
        Ok(Some(h)) => h,
        Ok(None) => return scan_reply(0, Vec::new()),
        Err(e) => return e,
    };
    // Small hashes (Redis's listpack encoding) are returned whole, in one call, in order.
    let mut items = Vec::new();
    if h.len() <= 128 && opts.upper.is_none() {
        for (k, v) in h.iter().filter(|(k, _)| scan_match(&opts.pattern, k)) {
            items.push(bulk(k));
            items.push(bulk(v));
        }
        return scan_reply(0, items);
    }
    let cursor = scan_positions(h.len(), opts.upper, opts.count, |i| {
        if let Some((k, v)) = h.get_index(i)
            && scan_match(&opts.pattern, k)
        {
            items.push(bulk(k));
            items.push(bulk(v));
        }
    });
    scan_reply(cursor, items)
}

#[cfg(test)]
mod tests {
    use crate::testkit::TestServer;

    /// Replies verified against redis-server 7.0.15 (RESP3).
    #[test]
    fn hash_transcript_resp3() {
        let ts = TestServer::new();
        let mut c = ts.client();
        c.client.proto = resp::Protocol::Resp3;
        c.transcript(
            r#"
            > hset h a 1 b 2
            :2
            > hset h a 10 c 3
            :1
            > hset h x
            -ERR wrong number of arguments for 'hset' command
            > hset h x y z
            -ERR wrong number of arguments for 'hset' command
            > hmset h d 4
            +OK
            > hmset h d
            -ERR wrong number of arguments for 'hmset' command
            > hsetnx h a 5
            :0
            > hsetnx h e 5
            :1
            > hget h a
            "10"
            > hget h zz
            (nil)
            > hget nope a
            (nil)
            > hmget h a zz b
            ["10", (nil), "2"]
            > hmget nope a b
            [(nil), (nil)]
            > hgetall h
            {"a": "10", "b": "2", "c": "3", "d": "4", "e": "5"}
            > hgetall nope
            {}
            > hkeys h
            ["a", "b", "c", "d", "e"]
            > hvals h
            ["10", "2", "3", "4", "5"]
            > hkeys nope
            []
            > hvals nope
            []
            > hlen h
            :5
            > hlen nope
            :0
            > hexists h a
            :1
            > hexists h zz
            :0
            > hexists nope a
            :0
            > hstrlen h a
            :2
            > hstrlen h zz
            :0
            > hstrlen nope a
            :0
            > hdel h a zz b
            :2
            > hdel nope a
            :0
            > hdel h c d e
            :3
            > get h
            (nil)
            > set s v
            +OK
            > hset s a 1
            -WRONGTYPE Operation against a key holding the wrong kind of value
            > hsetnx s a 1
            -WRONGTYPE Operation against a key holding the wrong kind of value
            > hget s a
            -WRONGTYPE Operation against a key holding the wrong kind of value
            > hmget s a
            -WRONGTYPE Operation against a key holding the wrong kind of value
            > hgetall s
            -WRONGTYPE Operation against a key holding the wrong kind of value
            > hkeys s
            -WRONGTYPE Operation against a key holding the wrong kind of value
            > hvals s
            -WRONGTYPE Operation against a key holding the wrong kind of value
            > hlen s
            -WRONGTYPE Operation against a key holding the wrong kind of value
            > hexists s a
            -WRONGTYPE Operation against a key holding the wrong kind of value
            > hstrlen s a
            -WRONGTYPE Operation against a key holding the wrong kind of value
            > hdel s a
            -WRONGTYPE Operation against a key holding the wrong kind of value
            > hincrby s a 1
            -WRONGTYPE Operation against a key holding the wrong kind of value
            > hincrbyfloat s a 1
            -WRONGTYPE Operation against a key holding the wrong kind of value
            > hrandfield s
            -WRONGTYPE Operation against a key holding the wrong kind of value
            > hrandfield s 1
            -WRONGTYPE Operation against a key holding the wrong kind of value
            > hscan s 0
            -WRONGTYPE Operation against a key holding the wrong kind of value
            # incr
            > hincrby n a 5
            :5
            > hincrby n a -7
            :-2
            > hincrby n a x
            -ERR value is not an integer or out of range
            > hincrby n a 1.5
            -ERR value is not an integer or out of range
            > hset n big 9223372036854775807 str hello f 1.5 sp " 1"
            :4
            > hincrby n big 1
            -ERR increment or decrement would overflow
            > hincrby n str 1
            -ERR hash value is not an integer
            > hincrby n f 1
            -ERR hash value is not an integer
            > hincrby n sp 1
            -ERR hash value is not an integer
            > hincrby n2 a 9223372036854775807
            :9223372036854775807
            > hincrby n2 a 1
            -ERR increment or decrement would overflow
            > hincrbyfloat n f 1.1
            "2.6"
            > hincrbyfloat n f -0.1
            "2.5"
            > hincrbyfloat n a 1e3
            "998"
            > hincrbyfloat n new 3.0e3
            "3000"
            > hincrbyfloat n new2 1.23456789012345678
            "1.23456789012345678"
            > hincrbyfloat n str 1
            -ERR hash value is not a float
            > hincrbyfloat n f x
            -ERR value is not a valid float
            > hincrbyfloat n f inf
            -ERR value is NaN or Infinity
            > hincrbyfloat n f nan
            -ERR value is not a valid float
            > hincrbyfloat n big 1
            "9223372036854775808"
            > hincrbyfloat nf f 1.5
            "1.5"
            > hget nf f
            "1.5"
            # random
            > hset r only v
            :1
            > hrandfield r
            "only"
            > hrandfield nope
            (nil)
            > hrandfield r 0
            []
            > hrandfield r 5
            ["only"]
            > hrandfield r -3
            ["only", "only", "only"]
            > hrandfield r -3 withvalues
            [["only", "v"], ["only", "v"], ["only", "v"]]
            > hrandfield r 2 withvalues
            [["only", "v"]]
            > hrandfield nope 3
            []
            > hrandfield nope 3 withvalues
            []
            > hrandfield r 1 foo
            -ERR syntax error
            > hrandfield r 1 withvalues x
            -ERR syntax error
            > hrandfield r x
            -ERR value is not an integer or out of range
            > hrandfield r -9223372036854775808
            -ERR value is out of range, value must between -9223372036854775807 and 9223372036854775807
            > hrandfield r -9223372036854775807 withvalues
            -ERR value is out of range
            > hrandfield r 9223372036854775807 withvalues
            -ERR value is out of range
            > hset r2 a 1 b 2 c 3
            :3
            > hrandfield r2 3
            ["a", "b", "c"]
            > hrandfield r2 10 withvalues
            [["a", "1"], ["b", "2"], ["c", "3"]]
            # scan
            > hscan r2 0
            ["0", ["a", "1", "b", "2", "c", "3"]]
            > hscan r2 0 match a*
            ["0", ["a", "1"]]
            > hscan r2 0 count 1
            ["0", ["a", "1", "b", "2", "c", "3"]]
            > hscan r2 0 count 0
            -ERR syntax error
            > hscan r2 0 count x
            -ERR value is not an integer or out of range
            > hscan r2 0 foo
            -ERR syntax error
            > hscan r2 x
            -ERR invalid cursor
            > hscan nope 0
            ["0", []]
            "#,
        );
    }

    /// A full HSCAN iteration returns every element present throughout, while others churn.
    #[test]
    fn hscan_full_iteration() {
        use resp::Frame;
        let ts = TestServer::new();
        let mut c = ts.client();
        for i in 0..1000 {
            c.cmd(&["HSET", "k", &format!("m{i}"), "v"]);
        }
        let mut seen = std::collections::HashSet::new();
        let mut cursor = "0".to_string();
        let mut round = 0;
        loop {
            let Some(Frame::Array(r)) = c.cmd(&["HSCAN", "k", &cursor, "COUNT", "7"]) else { panic!() };
            let (Frame::Bulk(cur), Frame::Array(items)) = (&r[0], &r[1]) else { panic!() };
            for it in items.iter().step_by(2) {
                let Frame::Bulk(m) = it else { panic!() };
                seen.insert(m.clone());
            }
            // churn: delete some late elements, add new ones
            round += 1;
            c.cmd(&["HDEL", "k", &format!("m{}", 500 + round)]);
            c.cmd(&["HSET", "k", &format!("n{round}"), "v"]);
            cursor = String::from_utf8(cur.to_vec()).unwrap();
            if cursor == "0" {
                break;
            }
        }
        assert!(round > 10);
        for i in 0..500 {
            assert!(seen.contains(format!("m{i}").as_bytes()), "missed m{i}");
        }
    }
}
