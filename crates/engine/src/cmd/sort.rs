//! SORT and SORT_RO.
//!
//! `BY` and `GET` patterns read keys that are not among the arguments (`weight_*`, `obj_*->field`).
//! A handler may only touch the shards its command locked, and no key spec can name pattern keys,
//! so the entries carry [`Command::all_shards_if`]: when some `BY`/`GET` pattern would look keys
//! up, the whole keyspace is locked for that call (as `KEYS` does); a plain `SORT key [STORE dst]`
//! locks only its keys.

use super::base::BASE;
use crate::args::eq_ic;
use crate::command::{Flags, Keys};
use crate::ctx::{Command, Ctx};
use crate::error;
use crate::types::access::bulk;
use crate::value::{SmallBytes, Value};
use bytes::Bytes;
use resp::Frame;
use std::cmp::Ordering;

/// Table entries.
pub static COMMANDS: &[Command] = &[
    Command {
        name: "sort",
        arity: -2,
        flags: Flags::WRITE.or(Flags::DENYOOM),
        keys: Keys::Custom { first: 1, last: 1, step: 1, find: sort_keys },
        group: crate::command::Group::Generic,
        handler: sort,
        all_shards_if: Some(has_lookup_patterns),
        ..BASE
    },
    Command {
        name: "sort_ro",
        arity: -2,
        flags: Flags::READONLY,
        keys: Keys::Custom { first: 1, last: 1, step: 1, find: sort_ro_keys },
        group: crate::command::Group::Generic,
        handler: sort_ro,
        all_shards_if: Some(has_lookup_patterns),
        ..BASE
    },
];

/// The sorted key and the `STORE` destination, found by the same walk as the handler's option
/// parser (so the key locked is always the key written; Redis's sortGetKeys differs only for
/// destinations named like an option, e.g. `STORE limit`). Stops where the parser would fail.
fn sort_keys(args: &[Bytes]) -> Vec<usize> {
    let mut v = vec![1];
    let mut store = None;
    let mut j = 2;
    while j < args.len() {
        let left = args.len() - j - 1;
        let a = &args[j];
        if eq_ic(a, "asc") || eq_ic(a, "desc") || eq_ic(a, "alpha") {
        } else if eq_ic(a, "limit") && left >= 2 {
            j += 2;
        } else if eq_ic(a, "store") && left >= 1 {
            store = Some(j + 1);
            j += 1;
        } else if (eq_ic(a, "by") || eq_ic(a, "get")) && left >= 1 {
            j += 1;
        } else {
            break;
        }
        j += 1;
    }
    v.extend(store);
    v
}

/// SORT_RO's key (declared as movable, as Redis does, because of the patterns).
fn sort_ro_keys(_: &[Bytes]) -> Vec<usize> {
    vec![1]
}

/// True if some `BY` or `GET` argument is a pattern that looks keys up (contains `*`). Errs on the
/// side of locking everything: any `BY`/`GET` word followed by such an argument counts.
fn has_lookup_patterns(args: &[Bytes]) -> bool {
    args.windows(2).skip(2).any(|w| (eq_ic(&w[0], "by") || eq_ic(&w[0], "get")) && w[1].contains(&b'*'))
}

fn sort(ctx: &mut Ctx<'_, '_>) -> Frame {
    sort_generic(ctx, false)
}
fn sort_ro(ctx: &mut Ctx<'_, '_>) -> Frame {
    sort_generic(ctx, true)
}

/// What a pattern lookup found.
enum Looked {
    /// No such key / wrong type / no such field / pattern without `*`.
    None,
    /// A value.
    Val(SmallBytes),
}

/// Redis's lookupKeyByPattern: `#` is the element itself; otherwise the first `*` is replaced by
/// the element, and `->field` after it reads a hash field.
fn lookup(ctx: &mut Ctx<'_, '_>, pattern: &[u8], elem: &[u8]) -> Looked {
    if pattern == b"#" {
        return Looked::Val(SmallBytes::from_slice(elem));
    }
    let Some(star) = pattern.iter().position(|&c| c == b'*') else { return Looked::None };
    let rest = &pattern[star + 1..];
    let arrow = rest.windows(2).position(|w| w == b"->").filter(|&a| a + 2 < rest.len());
    let (postfix, field) = match arrow {
        Some(a) => (&rest[..a], Some(&rest[a + 2..])),
        None => (rest, None),
    };
    let mut key = Vec::with_capacity(pattern.len() + elem.len());
    key.extend_from_slice(&pattern[..star]);
    key.extend_from_slice(elem);
    key.extend_from_slice(postfix);
    let mut db = ctx.db();
    let Some(e) = db.read(&key) else { return Looked::None };
    match (&e.value, field) {
        (Value::Hash(h), Some(f)) => h.get(f).map(|v| Looked::Val(SmallBytes::from_slice(v))).unwrap_or(Looked::None),
        (v, None) if v.is_string() => match v.as_bytes() {
            Some(b) => Looked::Val(SmallBytes::from_slice(&b)),
            None => Looked::None,
        },
        _ => Looked::None,
    }
}

/// C's strtod over the whole string, as SORT uses it: Some(score) or None for a conversion error
/// (trailing garbage, overflow, NaN). The empty string reads as 0.
fn sort_score(b: &[u8]) -> Option<f64> {
    if b.is_empty() {
        return Some(0.0);
    }
    let s = std::str::from_utf8(b).ok()?;
    let t = s.trim_start_matches([' ', '\t', '\n', '\r', '\x0b', '\x0c']);
    if t.is_empty() {
        return None;
    }
    let v: f64 = match t.parse() {
        Ok(v) => v,
        Err(_) => {
            // strtod also reads hexadecimal.
            let (neg, h) = match t.as_bytes()[0] {
                b'-' => (true, &t[1..]),
                b'+' => (false, &t[1..]),
                _ => (false, t),
            };
            let h = h.strip_prefix("0x").or_else(|| h.strip_prefix("0X"))?;
            let n = u64::from_str_radix(h, 16).ok()? as f64;
            if neg { -n } else { n }
        }
    };
    if v.is_nan() {
        return None;
    }
    let lower = t.to_ascii_lowercase();
    // Overflow (ERANGE): an infinite result from finite text.
    if v.is_infinite() && !lower.trim_start_matches(['+', '-']).starts_with("inf") {
        return None;
    }
    // Underflow (ERANGE): a zero result from text with a non-zero digit in its mantissa.
    if v == 0.0 {
        let mantissa = lower.split('e').next().unwrap_or("");
        if mantissa.bytes().any(|c| (b'1'..=b'9').contains(&c)) {
            return None;
        }
    }
    Some(v)
}

/// One element being sorted.
struct Item {
    elem: SmallBytes,
    score: f64,
    /// The BY value for ALPHA sorts by pattern (None sorts first).
    cmp: Option<SmallBytes>,
}

fn sort_generic(ctx: &mut Ctx<'_, '_>, readonly: bool) -> Frame {
    let mut desc = false;
    let mut alpha = false;
    let (mut limit_start, mut limit_count) = (0i64, -1i64);
    let mut sortby: Option<Bytes> = None;
    let mut dontsort = false;
    let mut store: Option<Bytes> = None;
    let mut gets: Vec<Bytes> = Vec::new();
    // BY and GET patterns reach arbitrary keys: only a user who may read every key gets them.
    let full_key_access = match &ctx.client.user {
        Some(u) if !u.unrestricted() => ctx.srv.acl.check_all_keys(u, ctx.cmd, ctx.args, crate::acl::key_flags::ACCESS),
        _ => true,
    };
    let mut j = 2;
    while j < ctx.argc() {
        let left = ctx.argc() - j - 1;
        let a = ctx.arg(j);
        if eq_ic(a, "asc") {
            desc = false;
        } else if eq_ic(a, "desc") {
            desc = true;
        } else if eq_ic(a, "alpha") {
            alpha = true;
        } else if eq_ic(a, "limit") && left >= 2 {
            match (ctx.int_arg(j + 1), ctx.int_arg(j + 2)) {
                (Ok(s), Ok(c)) => (limit_start, limit_count) = (s, c),
                (Err(e), _) | (_, Err(e)) => return e,
            }
            j += 2;
        } else if !readonly && eq_ic(a, "store") && left >= 1 {
            store = Some(ctx.args[j + 1].clone());
            j += 1;
        } else if eq_ic(a, "by") && left >= 1 {
            let p = ctx.args[j + 1].clone();
            // A BY pattern without '*' is constant: nothing to sort by.
            dontsort = !p.contains(&b'*');
            if !dontsort && !full_key_access {
                return Frame::error("ERR BY option of SORT denied due to insufficient ACL permissions.");
            }
            sortby = Some(p);
            j += 1;
        } else if eq_ic(a, "get") && left >= 1 {
            if !full_key_access {
                return Frame::error("ERR GET option of SORT denied due to insufficient ACL permissions.");
            }
            gets.push(ctx.args[j + 1].clone());
            j += 1;
        } else {
            return error::syntax();
        }
        j += 1;
    }
    // Defensive: pattern lookups need every shard (see `all_shards_if`); never touch an unlocked one.
    if has_lookup_patterns(ctx.args) && !ctx.locked.is_all() {
        return Frame::error("ERR SORT with BY/GET patterns needs the whole keyspace in this context");
    }

    // Load the elements in the order Redis would.
    enum Kind {
        List,
        Set,
        ZSet,
    }
    let key = ctx.arg(1);
    let (kind, mut elems): (Kind, Vec<SmallBytes>) = {
        let mut db = ctx.db();
        match db.read(key).map(|e| &e.value) {
            None => (Kind::List, Vec::new()),
            Some(Value::List(l)) => (Kind::List, l.iter().cloned().collect()),
            Some(Value::Set(s)) => (Kind::Set, s.iter().map(SmallBytes::from_slice).collect()),
            Some(Value::ZSet(z)) => (Kind::ZSet, z.iter().map(|(m, _)| SmallBytes::from_slice(m)).collect()),
            Some(Value::Damaged(d)) if matches!(d.type_name(), "list" | "set" | "zset") => return d.refusal(),
            Some(_) => return error::wrong_type(),
        }
    };
    // An unsorted set result would depend on the hash order: with STORE or inside a script it is
    // sorted (ALPHA, no BY), so replicas and replays see the same order, as in Redis.
    if dontsort && matches!(kind, Kind::Set) && (store.is_some() || ctx.client.in_script) {
        dontsort = false;
        alpha = true;
        sortby = None;
    }
    let len = elems.len() as i64;
    let mut start = limit_start.max(0).min(len);
    let limit_count = limit_count.max(-1).min(len);
    let mut end = if limit_count < 0 { len - 1 } else { start + limit_count - 1 };
    if start >= len {
        start = len - 1;
        end = len - 2;
    }
    if end >= len {
        end = len - 1;
    }
    let mut items: Vec<Item>;
    if dontsort && matches!(kind, Kind::List | Kind::ZSet) {
        // Native order (reversed for DESC), LIMIT applied directly.
        if desc {
            elems.reverse();
        }
        items = if end >= start {
            elems.drain(start as usize..=end as usize).map(|elem| Item { elem, score: 0.0, cmp: None }).collect()
        } else {
            Vec::new()
        };
        end -= start;
        start = 0;
    } else {
        items = elems.into_iter().map(|elem| Item { elem, score: 0.0, cmp: None }).collect();
    }
    let mut conversion_error = false;
    if !dontsort {
        for it in items.iter_mut() {
            let Some(p) = &sortby else {
                // By the element itself: ALPHA compares the elements, numeric sorts parse them.
                if !alpha {
                    match sort_score(&it.elem) {
                        Some(s) => it.score = s,
                        None => conversion_error = true,
                    }
                }
                continue;
            };
            let byval = match lookup(ctx, p, &it.elem) {
                Looked::Val(v) => v,
                Looked::None => continue,
            };
            if alpha {
                it.cmp = Some(byval);
            } else {
                match sort_score(&byval) {
                    Some(s) => it.score = s,
                    None => conversion_error = true,
                }
            }
        }
        let by_pattern = sortby.is_some();
        items.sort_by(|a, b| {
            let c = if !alpha {
                a.score.partial_cmp(&b.score).unwrap_or(Ordering::Equal).then_with(|| a.elem.cmp(&b.elem))
            } else if by_pattern {
                match (&a.cmp, &b.cmp) {
                    (None, None) => Ordering::Equal,
                    (None, Some(_)) => Ordering::Less,
                    (Some(_), None) => Ordering::Greater,
                    (Some(x), Some(y)) => x.cmp(y),
                }
            } else {
                a.elem.cmp(&b.elem)
            };
            if desc { c.reverse() } else { c }
        });
    }
    if conversion_error {
        return Frame::error("ERR One or more scores can't be converted into double");
    }
    let range: &[Item] = if end >= start { &items[start as usize..=end as usize] } else { &[] };
    if gets.is_empty() && store.is_none() {
        // The sorted elements straight into the reply's wire bytes (see `resp::BulkArray`).
        let body = range.iter().map(|it| resp::BulkArray::bulk_size(it.elem.len())).sum();
        let mut reply = resp::BulkArray::array(range.len(), body, ctx.client.proto);
        for it in range {
            reply.push(&it.elem);
        }
        return reply.finish();
    }
    let mut out: Vec<Option<SmallBytes>> = Vec::with_capacity(range.len() * gets.len().max(1));
    for it in range {
        if gets.is_empty() {
            out.push(Some(it.elem.clone()));
        }
        for g in &gets {
            out.push(match lookup(ctx, g, &it.elem) {
                Looked::Val(v) => Some(v),
                Looked::None => None,
            });
        }
    }
    match store {
        None => Frame::Array(out.into_iter().map(|v| v.map(|b| bulk(&b)).unwrap_or(Frame::Null)).collect()),
        Some(dst) => {
            let n = out.len();
            let mut db = ctx.db();
            let changes = if n == 0 {
                u64::from(db.remove(&dst).is_some())
            } else {
                let l: crate::value::ListValue = out.into_iter().map(|v| v.unwrap_or_default()).collect();
                db.set(&dst, Value::List(Box::new(l)), false);
                n as u64
            };
            ctx.changed(changes);
            Frame::Integer(n as i64)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::sort_score;
    use crate::testkit::TestServer;

    #[test]
    fn strtod_like_scores() {
        assert_eq!(sort_score(b""), Some(0.0));
        assert_eq!(sort_score(b" 1.5"), Some(1.5));
        assert_eq!(sort_score(b"0x10"), Some(16.0));
        assert_eq!(sort_score(b"-inf"), Some(f64::NEG_INFINITY));
        assert_eq!(sort_score(b"1e999"), None);
        assert_eq!(sort_score(b"1e-400"), None);
        assert_eq!(sort_score(b"0e-400"), Some(0.0));
        assert_eq!(sort_score(b"nan"), None);
        assert_eq!(sort_score(b"1x"), None);
        assert_eq!(sort_score(b" "), None);
    }

    /// Replies verified byte for byte against redis-server 7.0.15 in RESP2 and RESP3.
    #[test]
    fn sort_transcript() {
        let ts = TestServer::new();
        let mut c = ts.client();
        c.client.proto = resp::Protocol::Resp3;
        c.transcript(
            r#"
            > rpush l 3 1 2 10
            :4
            > sort l
            ["1", "2", "3", "10"]
            > sort l desc
            ["10", "3", "2", "1"]
            > sort l alpha
            ["1", "10", "2", "3"]
            > sort l limit 1 2
            ["2", "3"]
            > sort l limit -5 2
            ["1", "2"]
            > sort l limit 2 -1
            ["3", "10"]
            > sort l limit 10 2
            []
            > sort l limit x 2
            -ERR value is not an integer or out of range
            > sort l by nosort
            ["3", "1", "2", "10"]
            > sort l by nosort desc
            ["10", "2", "1", "3"]
            > sort l by nosort limit 1 2
            ["1", "2"]
            > sort l by nosort desc limit 1 2
            ["2", "1"]
            > mset w_3 30 w_1 100 w_2 20 o_1 one o_3 three
            +OK
            > hset h_1 f hf1
            :1
            > hset h_2 f hf2
            :1
            > sort l by w_*
            ["10", "2", "3", "1"]
            > sort l by w_* desc get # get o_* get h_*->f get h_*-> get nostar
            ["1", "one", "hf1", (nil), (nil), "3", "three", (nil), (nil), (nil), "2", (nil), "hf2", (nil), (nil), "10", (nil), (nil), (nil), (nil)]
            > sort l by h_*->f alpha
            ["3", "10", "1", "2"]
            > sort l by w_* alpha
            ["10", "1", "2", "3"]
            > sort l by w_* store dst
            :4
            > lrange dst 0 -1
            ["10", "2", "3", "1"]
            > sort l get o_* store dst
            :4
            > lrange dst 0 -1
            ["one", "", "three", ""]
            > sort nosuch store dst
            :0
            > exists dst
            :0
            > sadd s b a c
            :3
            > sort s alpha
            ["a", "b", "c"]
            > sort s
            -ERR One or more scores can't be converted into double
            > sort s by nosort store dst
            :3
            > lrange dst 0 -1
            ["a", "b", "c"]
            > zadd z 3 a 1 b 2 c
            :3
            > sort z by nosort
            ["b", "c", "a"]
            > sort z by nosort desc limit 0 2
            ["a", "c"]
            > sort z alpha desc
            ["c", "b", "a"]
            > rpush bad 1 x
            :2
            > sort bad
            -ERR One or more scores can't be converted into double
            > sort bad alpha
            ["1", "x"]
            > rpush e "" " 2" 0x10 1.5
            :4
            > sort e
            ["", "1.5", " 2", "0x10"]
            > set str x
            +OK
            > sort str
            -WRONGTYPE Operation against a key holding the wrong kind of value
            > sort l foo
            -ERR syntax error
            > sort l store
            -ERR syntax error
            > sort_ro l store dst
            -ERR syntax error
            > sort_ro l by w_* get o_*
            [(nil), (nil), "three", "one"]
            > sort l get
            -ERR syntax error
            > sort l limit 1
            -ERR syntax error
            > rpush ties b a c
            :3
            > sort ties by nosuch_*
            ["a", "b", "c"]
            > sort ties by nosuch_* desc
            ["c", "b", "a"]
            "#,
        );
    }

    #[test]
    fn pattern_lookups_lock_every_shard() {
        use super::{has_lookup_patterns, sort_keys};
        let a = |s: &str| s.split(' ').map(|x| bytes::Bytes::copy_from_slice(x.as_bytes())).collect::<Vec<_>>();
        assert!(!has_lookup_patterns(&a("sort l")));
        assert!(!has_lookup_patterns(&a("sort l by nosort get # store d")));
        assert!(has_lookup_patterns(&a("sort l by w_*")));
        assert!(has_lookup_patterns(&a("sort l GET o_*->f")));
        assert!(!has_lookup_patterns(&a("sort by_* alpha")));
        assert_eq!(sort_keys(&a("sort l store d1 limit 0 1 get store store d2")), vec![1, 10]);
        assert_eq!(sort_keys(&a("sort l store limit store x")), vec![1, 5]);
        assert_eq!(sort_keys(&a("sort l desc alpha store get")), vec![1, 5]);
        assert_eq!(sort_keys(&a("sort l foo store x")), vec![1]);
        assert_eq!(sort_keys(&a("sort l by store")), vec![1]);
        let ts = TestServer::new();
        let mut c = ts.client();
        // Inside MULTI the transaction takes every shard too.
        c.transcript(
            r#"
            > rpush l 2 1
            :2
            > set w_1 9
            +OK
            > multi
            +OK
            > sort l by w_* get w_*
            +QUEUED
            > exec
            [[(nil), "9"]]
            "#,
        );
    }

    #[test]
    fn scripts_get_set_output_sorted_and_can_use_patterns() {
        // Redis 7.0.15: inside a script, SORT of a set BY a constant is ALPHA-sorted; GET patterns
        // reach keys the script did not declare.
        TestServer::new().transcript(
            r#"
            > sadd myset c a b aa
            :4
            > set _:b x
            +OK
            > eval "return redis.call('sort',KEYS[1],'by','_')" 1 myset
            ["a", "aa", "b", "c"]
            > eval "return redis.call('sort',KEYS[1],'by','_','get','#','get','_:*')" 1 myset
            ["a", (nil), "aa", (nil), "b", "x", "c", (nil)]
            "#,
        );
    }
}
