//! COMMAND INFO and COMMAND DOCS answer as redis-server 7.0.15 does for every command both have, in
//! RESP3 and RESP2 (subcommands may come in another order: Redis lists them in its hash table's).
//! The client subcommands Latch lacks or adds are the known difference (issue-tracked: tracking,
//! pause and caching are not built yet; NO-TOUCH and SETINFO are newer Redis commands).

mod common;

use common::{Latch, Raw, RedisServer};
use resp::Frame;

fn text(f: &Frame) -> String {
    match f {
        Frame::Bulk(b) | Frame::Simple(b) => String::from_utf8_lossy(b).into_owned(),
        other => format!("{other:?}"),
    }
}

/// A COMMAND INFO entry with its subcommand entries in name order.
fn sorted_info(f: Frame) -> Frame {
    match f {
        Frame::Array(mut v) if v.len() == 10 => {
            if let Frame::Array(subs) = &mut v[9] {
                let mut s: Vec<Frame> = std::mem::take(subs).into_iter().map(sorted_info).collect();
                s.sort_by_key(|e| match e {
                    Frame::Array(e) => e.first().map(text).unwrap_or_default(),
                    _ => String::new(),
                });
                *subs = s;
            }
            Frame::Array(v)
        }
        other => other,
    }
}

/// A COMMAND DOCS map (RESP3) or flattened map (RESP2) with its subcommands in name order.
fn sorted_docs(f: Frame) -> Frame {
    let sort_pairs = |pairs: Vec<(Frame, Frame)>| {
        let mut pairs: Vec<(Frame, Frame)> = pairs.into_iter().map(|(n, d)| (n, sorted_docs(d))).collect();
        pairs.sort_by_key(|(n, _)| text(n));
        pairs
    };
    match f {
        Frame::Map(pairs) => Frame::Map(
            pairs
                .into_iter()
                .map(|(k, v)| match v {
                    Frame::Map(subs) if text(&k) == "subcommands" => (k, Frame::Map(sort_pairs(subs))),
                    v => (k, v),
                })
                .collect(),
        ),
        Frame::Array(mut v) if v.len() % 2 == 0 => {
            if let Some(i) = (0..v.len()).step_by(2).find(|&i| text(&v[i]) == "subcommands")
                && let Frame::Array(flat) = &mut v[i + 1]
            {
                let pairs = std::mem::take(flat).chunks(2).map(|p| (p[0].clone(), p[1].clone())).collect();
                *flat = sort_pairs(pairs).into_iter().flat_map(|(n, d)| [n, d]).collect();
            }
            Frame::Array(v)
        }
        other => other,
    }
}

/// A whole COMMAND INFO or COMMAND DOCS reply, normalised as above.
fn normalize(sub: &str, f: Frame) -> Frame {
    match (sub, f) {
        ("INFO", Frame::Array(v)) => Frame::Array(v.into_iter().map(sorted_info).collect()),
        ("DOCS", Frame::Map(pairs)) => Frame::Map(pairs.into_iter().map(|(n, d)| (n, sorted_docs(d))).collect()),
        ("DOCS", Frame::Array(v)) => Frame::Array(v.into_iter().map(sorted_docs).collect()),
        (_, other) => other,
    }
}

fn reply(c: &mut Raw, args: &[&[u8]]) -> Frame {
    let bytes = c.cmd_bytes(args);
    resp::decode_reply(&mut resp::BytesMut::from(&bytes[..])).expect("valid reply").expect("complete reply")
}

fn names(c: &mut Raw) -> Vec<String> {
    match reply(c, &[b"COMMAND", b"LIST"]) {
        Frame::Array(v) => v.iter().map(text).collect(),
        other => panic!("COMMAND LIST: {other:?}"),
    }
}

#[test]
fn command_info_and_docs_match_redis() {
    let Some(redis) = RedisServer::start_or_skip("the COMMAND INFO/DOCS comparison") else { return };
    let latch = Latch::start(&[]);
    for proto in ["2", "3"] {
        let (mut l, mut r) = (latch.raw(), redis.raw());
        l.cmd(&[b"HELLO", proto.as_bytes()]);
        r.cmd(&[b"HELLO", proto.as_bytes()]);
        let ours = names(&mut l);
        let common: Vec<String> = names(&mut r).into_iter().filter(|n| ours.contains(n)).collect();
        assert!(common.len() > 250, "only {} commands in common", common.len());
        let mut differ = Vec::new();
        for n in &common {
            if n == "client" {
                continue; // its subcommand list differs, as the module docs say
            }
            for sub in ["INFO", "DOCS"] {
                let args: [&[u8]; 3] = [b"COMMAND", sub.as_bytes(), n.as_bytes()];
                let (a, b) = (normalize(sub, reply(&mut l, &args)), normalize(sub, reply(&mut r, &args)));
                if a != b {
                    differ.push(format!("COMMAND {sub} {n}:\n  latch {a:?}\n  redis {b:?}"));
                }
            }
        }
        assert!(differ.is_empty(), "RESP{proto}: {} differ:\n{}", differ.len(), differ.join("\n"));
    }
}
