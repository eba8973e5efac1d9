//! docs/work-queue.md's session, run as it is written: each `name> COMMAND` line on the
//! connection `name`, its reply flattened and compared with the `=>` line after it, against
//! Latch and, when it is installed, redis-server.

mod common;

use common::{Latch, Raw, RedisServer};
use resp::{BytesMut, Frame};
use std::collections::HashMap;

/// The (client, command, expected reply) steps of the document's session.
fn session() -> Vec<(String, Vec<Vec<u8>>, String)> {
    let doc = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/work-queue.md")).unwrap();
    let block = doc.split("```text").nth(1).and_then(|b| b.split("```").next()).expect("a text block");
    let mut steps = Vec::new();
    let mut lines = block.lines().map(str::trim).filter(|l| !l.is_empty() && !l.starts_with('#'));
    while let Some(line) = lines.next() {
        let (who, cmd) = line.split_once("> ").unwrap_or_else(|| panic!("not a command line: {line}"));
        let want = lines.next().and_then(|l| l.strip_prefix("=> ")).unwrap_or_else(|| panic!("no reply for {line}"));
        let args = resp::split_args(cmd.as_bytes()).expect("arguments");
        steps.push((who.to_string(), args, want.to_string()));
    }
    steps
}

/// A reply's strings and integers in order, `(nil)` for a null.
fn flatten(f: &Frame, out: &mut Vec<String>) {
    match f {
        Frame::Simple(b) | Frame::Bulk(b) => out.push(String::from_utf8_lossy(b).into_owned()),
        Frame::Error(e) => out.push(format!("(error) {}", String::from_utf8_lossy(e))),
        Frame::Integer(i) => out.push(i.to_string()),
        Frame::Null | Frame::NullArray => out.push("(nil)".into()),
        Frame::Array(items) | Frame::Push(items) | Frame::Set(items) => items.iter().for_each(|i| flatten(i, out)),
        Frame::Map(pairs) => pairs.iter().for_each(|(k, v)| {
            flatten(k, out);
            flatten(v, out);
        }),
        other => out.push(format!("{other:?}")),
    }
}

fn run(what: &str, connect: impl Fn() -> Raw) {
    let mut conns: HashMap<String, Raw> = HashMap::new();
    for (who, args, want) in session() {
        let c = conns.entry(who.clone()).or_insert_with(&connect);
        let argv: Vec<&[u8]> = args.iter().map(Vec::as_slice).collect();
        let mut bytes = BytesMut::from(&c.cmd_bytes(&argv)[..]);
        let frame = resp::decode_reply(&mut bytes).expect("a reply").expect("a whole reply");
        let mut words = Vec::new();
        flatten(&frame, &mut words);
        let cmd = String::from_utf8_lossy(&args.join(&b' ')).into_owned();
        assert_eq!(words.join(" "), want, "{what}: {who}> {cmd}");
    }
}

#[test]
fn the_work_queue_session_runs_as_documented() {
    let l = Latch::start(&[]);
    run("latch", || l.raw());
    if let Some(r) = RedisServer::start_with_or_skip("work queue", &[]) {
        run("redis-server", || r.raw());
    }
}
