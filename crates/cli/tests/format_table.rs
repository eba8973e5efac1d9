//! Replays tests/data/format.txt: for each case, the RESP bytes a server sent and what the real
//! redis-cli 7.0.15 printed for them with --no-raw and --raw (recorded by
//! tests/data/record_format.py). latch-cli's rendering of the decoded frames must be identical.

use cli::opts::OutputMode;
use cli::session::{render_push, render_reply};
use resp::{BytesMut, Frame};

/// Undoes the recorder's escaping: `\r`, `\n`, `\\` and `\xHH`.
fn unescape(s: &str) -> Vec<u8> {
    let b = s.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'\\' {
            match b.get(i + 1) {
                Some(b'r') => out.push(b'\r'),
                Some(b'n') => out.push(b'\n'),
                Some(b'\\') => out.push(b'\\'),
                Some(b'x') => {
                    let hex = std::str::from_utf8(&b[i + 2..i + 4]).unwrap();
                    out.push(u8::from_str_radix(hex, 16).unwrap());
                    i += 2;
                }
                other => panic!("bad escape {other:?} in {s}"),
            }
            i += 2;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    out
}

struct Case {
    name: String,
    resp: Vec<u8>,
    tty: Vec<u8>,
    raw: Vec<u8>,
}

fn parse_cases(text: &str) -> Vec<Case> {
    let mut cases = Vec::new();
    for block in text.split("\n=== ").skip(1) {
        let mut lines = block.lines();
        let name = lines.next().unwrap().to_string();
        let mut resp = Vec::new();
        let (mut tty, mut raw) = (Vec::new(), Vec::new());
        let mut target: Option<&mut Vec<u8>> = None;
        for line in lines {
            if let Some(r) = line.strip_prefix("< ") {
                resp = unescape(r);
            } else if line == "tty" {
                target = Some(&mut tty);
            } else if line == "raw" {
                target = Some(&mut raw);
            } else if let Some(l) = line.strip_prefix("|x ") {
                let t = target.as_mut().expect("output line before tty/raw");
                t.extend_from_slice(&unescape(l));
                t.push(b'\n');
            } else if let Some(l) = line.strip_prefix("| ").or(if line == "|" { Some("") } else { None }) {
                let t = target.as_mut().expect("output line before tty/raw");
                t.extend_from_slice(l.as_bytes());
                t.push(b'\n');
            } else {
                assert!(line.is_empty(), "unexpected line {line:?} in case {name}");
            }
        }
        cases.push(Case { name, resp, tty, raw });
    }
    cases
}

/// Prints the frames of one case as redis-cli does in a one-shot run: every push before the
/// command's reply goes through the push handler, the last frame is the reply.
fn render(frames: &[Frame], mode: OutputMode) -> Vec<u8> {
    let mut out = Vec::new();
    for (i, f) in frames.iter().enumerate() {
        if i + 1 < frames.len() {
            assert!(matches!(f, Frame::Push(_)), "only pushes may precede the reply");
            render_push(f, mode, b"\n", b"\n", &mut out);
        } else {
            render_reply(f, mode, b"\n", b"\n", &mut out);
        }
    }
    out
}

#[test]
fn redis_cli_format_table() {
    let text = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/format.txt")).unwrap();
    let cases = parse_cases(&text);
    assert!(cases.len() >= 50, "only {} cases parsed", cases.len());
    let mut failures = Vec::new();
    for c in &cases {
        let mut buf = BytesMut::from(&c.resp[..]);
        let mut frames = Vec::new();
        while let Some(f) = resp::decode_reply(&mut buf).unwrap_or_else(|e| panic!("{}: {e}", c.name)) {
            frames.push(f);
        }
        assert!(buf.is_empty(), "{}: undecoded bytes", c.name);
        for (mode, want) in [(OutputMode::Standard, &c.tty), (OutputMode::Raw, &c.raw)] {
            let got = render(&frames, mode);
            if &got != want {
                failures.push(format!(
                    "case {:?} {mode:?}:\n  want {:?}\n  got  {:?}",
                    c.name,
                    String::from_utf8_lossy(want),
                    String::from_utf8_lossy(&got)
                ));
            }
        }
    }
    assert!(failures.is_empty(), "{} mismatches:\n{}", failures.len(), failures.join("\n"));
}
