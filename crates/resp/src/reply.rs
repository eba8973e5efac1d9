//! Reply decoding (server -> client) and request encoding, for clients and tests.

use bytes::{BufMut, Bytes, BytesMut};

use crate::Frame;

/// Maximum nesting depth of aggregates accepted by [`decode_reply`]. The
/// parser itself is iterative, but dropping, comparing, printing and
/// re-encoding a [`Frame`] recurse, so a hostile stream like
/// `*1\r\n*1\r\n...` must not produce a value deep enough to overflow the
/// stack. Real Redis replies nest only a handful of levels.
pub const MAX_REPLY_DEPTH: usize = 512;

/// A malformed reply stream; the text describes what was wrong.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReplyError(pub String);

impl std::fmt::Display for ReplyError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for ReplyError {}

/// Encodes a command (array of bulk strings) as a RESP request, for clients.
pub fn encode_request<A: AsRef<[u8]>>(args: &[A], out: &mut BytesMut) {
    let mut ib = itoa::Buffer::new();
    out.put_u8(b'*');
    out.extend_from_slice(ib.format(args.len()).as_bytes());
    out.extend_from_slice(b"\r\n");
    for a in args {
        let a = a.as_ref();
        out.reserve(a.len() + 16);
        out.put_u8(b'$');
        out.extend_from_slice(ib.format(a.len()).as_bytes());
        out.extend_from_slice(b"\r\n");
        out.extend_from_slice(a);
        out.extend_from_slice(b"\r\n");
    }
}

/// Reply decoder (server -> client), for clients and tests. Parses every RESP2 and RESP3 type
/// (streamed aggregates are not supported): nested types, attributes (`|`), push (`>`),
/// verbatim (`=`), big numbers (`(`), doubles (`,` incl. inf/-inf/nan), booleans, `_` null,
/// blob errors (`!`, returned as [`Frame::Error`]), `$-1` -> [`Frame::Null`],
/// `*-1` -> [`Frame::NullArray`].
///
/// `Ok(Some(frame))` consumes the bytes of that frame (bulk payloads are sliced from the buffer
/// without copying); `Ok(None)` needs more data and consumes nothing; `Err` on malformed input
/// (nothing consumed).
pub fn decode_reply(buf: &mut BytesMut) -> Result<Option<Frame>, ReplyError> {
    // Pass 1 validates and measures without allocating, so an incomplete
    // reply costs only a scan of its headers.
    let end = {
        let mut p = Parser { buf: &buf[..], pos: 0, src: None };
        match p.frame() {
            Ok(_) => p.pos,
            Err(Fail::Incomplete) => return Ok(None),
            Err(Fail::Bad(e)) => return Err(ReplyError(e)),
        }
    };
    // Pass 2 builds the frame, slicing payloads out of the frozen bytes.
    let bytes = buf.split_to(end).freeze();
    let mut p = Parser { buf: &bytes[..], pos: 0, src: Some(&bytes) };
    match p.frame() {
        Ok(f) => Ok(Some(f)),
        Err(Fail::Incomplete) => Err(ReplyError("internal error: reply shrank".into())),
        Err(Fail::Bad(e)) => Err(ReplyError(e)),
    }
}

enum Fail {
    Incomplete,
    Bad(String),
}

fn bad<T>(msg: impl Into<String>) -> Result<T, Fail> {
    Err(Fail::Bad(msg.into()))
}

struct Parser<'a> {
    buf: &'a [u8],
    pos: usize,
    /// The frozen buffer to slice payloads from; None in the measuring pass,
    /// where no values are built.
    src: Option<&'a Bytes>,
}

impl<'a> Parser<'a> {
    fn building(&self) -> bool {
        self.src.is_some()
    }

    fn slice(&self, start: usize, end: usize) -> Bytes {
        match self.src {
            Some(b) => b.slice(start..end),
            None => Bytes::new(),
        }
    }

    /// Returns the (start, end) of the next CRLF-terminated line and moves past it.
    fn line(&mut self) -> Result<(usize, usize), Fail> {
        let rest = self.buf.get(self.pos..).unwrap_or(&[]);
        let Some(off) = memchr::memchr(b'\r', rest) else {
            return Err(Fail::Incomplete);
        };
        let cr = self.pos + off;
        match self.buf.get(cr + 1) {
            None => Err(Fail::Incomplete),
            Some(b'\n') => {
                let start = self.pos;
                self.pos = cr + 2;
                Ok((start, cr))
            }
            Some(_) => bad("Protocol error: CR not followed by LF"),
        }
    }

    fn int_line(&mut self) -> Result<i64, Fail> {
        let (s, e) = self.line()?;
        parse_i64(&self.buf[s..e])
    }

    /// Reads `len` payload bytes followed by CRLF.
    fn payload(&mut self, len: i64) -> Result<(usize, usize), Fail> {
        let len = usize::try_from(len).map_err(|_| Fail::Bad("Protocol error: bad length".into()))?;
        let start = self.pos;
        let end = start.checked_add(len).ok_or_else(|| Fail::Bad("Protocol error: bad length".into()))?;
        if self.buf.len() < end.saturating_add(2) {
            return Err(Fail::Incomplete);
        }
        if &self.buf[end..end + 2] != b"\r\n" {
            return bad("Protocol error: bulk payload not followed by CRLF");
        }
        self.pos = end + 2;
        Ok((start, end))
    }

    fn count(&mut self) -> Result<usize, Fail> {
        let n = self.int_line()?;
        usize::try_from(n).map_err(|_| Fail::Bad(format!("Protocol error: invalid aggregate length {n}")))
    }

    /// Parses one complete frame. Aggregates are tracked on an explicit
    /// stack rather than by recursion, so nesting depth costs heap, not
    /// thread stack (recursive frames take several KiB each in debug builds).
    fn frame(&mut self) -> Result<Frame, Fail> {
        let mut stack: Vec<Pending> = Vec::new();
        loop {
            let mut value = match self.item()? {
                Item::Value(v) => v,
                Item::Open(kind, n) => {
                    let needed = match kind {
                        Kind::Array | Kind::Set | Kind::Push => Some(n),
                        Kind::Map => n.checked_mul(2),
                        Kind::Attribute => n.checked_mul(2).and_then(|m| m.checked_add(1)),
                    };
                    // A count this large can never be satisfied by a real buffer.
                    let needed = needed.ok_or(Fail::Incomplete)?;
                    if needed == 0 {
                        kind.build(Vec::new())
                    } else {
                        if stack.len() >= MAX_REPLY_DEPTH {
                            return bad("Protocol error: reply nested too deeply");
                        }
                        // While building, all elements are known to be
                        // present, so `needed` is bounded by the buffer size.
                        let cap = if self.building() { needed } else { 0 };
                        stack.push(Pending { kind, needed, items: Vec::with_capacity(cap) });
                        continue;
                    }
                }
            };
            // Feed the completed value to the enclosing aggregates, closing
            // every aggregate it completes.
            loop {
                let Some(top) = stack.last_mut() else {
                    return Ok(value);
                };
                if self.src.is_some() {
                    top.items.push(value);
                }
                top.needed -= 1;
                if top.needed > 0 {
                    break;
                }
                let Some(done) = stack.pop() else {
                    return bad("internal error: empty aggregate stack");
                };
                value = done.kind.build(done.items);
            }
        }
    }

    /// Parses one type byte and either a whole scalar or an aggregate header.
    fn item(&mut self) -> Result<Item, Fail> {
        let Some(&kind) = self.buf.get(self.pos) else {
            return Err(Fail::Incomplete);
        };
        self.pos += 1;
        let v = match kind {
            b'+' => {
                let (s, e) = self.line()?;
                Frame::Simple(self.slice(s, e))
            }
            b'-' => {
                let (s, e) = self.line()?;
                Frame::Error(self.slice(s, e))
            }
            b':' => Frame::Integer(self.int_line()?),
            b'$' => {
                let n = self.int_line()?;
                if n == -1 {
                    return Ok(Item::Value(Frame::Null));
                }
                let (s, e) = self.payload(n)?;
                Frame::Bulk(self.slice(s, e))
            }
            b'!' => {
                let n = self.int_line()?;
                let (s, e) = self.payload(n)?;
                Frame::Error(self.slice(s, e))
            }
            b'=' => {
                let n = self.int_line()?;
                let (s, e) = self.payload(n)?;
                if e - s < 4 || self.buf[s + 3] != b':' {
                    return bad("Protocol error: malformed verbatim string");
                }
                let format = [self.buf[s], self.buf[s + 1], self.buf[s + 2]];
                Frame::Verbatim { format, text: self.slice(s + 4, e) }
            }
            b'*' => {
                let n = self.int_line()?;
                if n == -1 {
                    return Ok(Item::Value(Frame::NullArray));
                }
                let n =
                    usize::try_from(n).map_err(|_| Fail::Bad(format!("Protocol error: invalid array length {n}")))?;
                return Ok(Item::Open(Kind::Array, n));
            }
            b'~' => return Ok(Item::Open(Kind::Set, self.count()?)),
            b'>' => return Ok(Item::Open(Kind::Push, self.count()?)),
            b'%' => return Ok(Item::Open(Kind::Map, self.count()?)),
            b'|' => return Ok(Item::Open(Kind::Attribute, self.count()?)),
            b'_' => {
                let (s, e) = self.line()?;
                if s != e {
                    return bad("Protocol error: malformed null");
                }
                Frame::Null
            }
            b'#' => {
                let (s, e) = self.line()?;
                match &self.buf[s..e] {
                    b"t" => Frame::Boolean(true),
                    b"f" => Frame::Boolean(false),
                    _ => return bad("Protocol error: malformed boolean"),
                }
            }
            b',' => {
                let (s, e) = self.line()?;
                let d = std::str::from_utf8(&self.buf[s..e])
                    .ok()
                    .and_then(|t| t.parse::<f64>().ok())
                    .ok_or_else(|| Fail::Bad("Protocol error: malformed double".into()))?;
                Frame::Double(d)
            }
            b'(' => {
                let (s, e) = self.line()?;
                let digits = &self.buf[s..e];
                let body = digits.strip_prefix(b"-").unwrap_or(digits);
                if body.is_empty() || !body.iter().all(u8::is_ascii_digit) {
                    return bad("Protocol error: malformed big number");
                }
                Frame::BigNumber(self.slice(s, e))
            }
            other => {
                return bad(format!("Protocol error, got {:?} as reply type byte", char::from(other)));
            }
        };
        Ok(Item::Value(v))
    }
}

/// Result of parsing one type byte.
enum Item {
    /// A complete value (scalar, null, or empty aggregate).
    Value(Frame),
    /// An aggregate header announcing `n` elements (pairs for maps/attributes).
    Open(Kind, usize),
}

#[derive(Clone, Copy)]
enum Kind {
    Array,
    Set,
    Push,
    Map,
    Attribute,
}

impl Kind {
    /// Builds the aggregate from its raw element list (keys and values
    /// interleaved for maps; for attributes, the described value comes last).
    fn build(self, mut items: Vec<Frame>) -> Frame {
        match self {
            Kind::Array => Frame::Array(items),
            Kind::Set => Frame::Set(items),
            Kind::Push => Frame::Push(items),
            Kind::Map => Frame::Map(pairs(items)),
            Kind::Attribute => {
                // In the measuring pass items is empty; the value is unused.
                let value = items.pop().unwrap_or(Frame::Null);
                Frame::Attribute { attrs: pairs(items), value: Box::new(value) }
            }
        }
    }
}

fn pairs(items: Vec<Frame>) -> Vec<(Frame, Frame)> {
    let mut out = Vec::with_capacity(items.len() / 2);
    let mut it = items.into_iter();
    while let (Some(k), Some(v)) = (it.next(), it.next()) {
        out.push((k, v));
    }
    out
}

/// An aggregate whose elements are still being parsed.
struct Pending {
    kind: Kind,
    /// Elements still to parse.
    needed: usize,
    /// Elements parsed so far (only kept in the building pass).
    items: Vec<Frame>,
}

fn parse_i64(s: &[u8]) -> Result<i64, Fail> {
    std::str::from_utf8(s)
        .ok()
        .and_then(|t| t.parse::<i64>().ok())
        .ok_or_else(|| Fail::Bad("Protocol error: malformed integer".into()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Protocol, encode};

    fn dec(input: &[u8]) -> Result<Option<Frame>, ReplyError> {
        decode_reply(&mut BytesMut::from(input))
    }

    fn one(input: &[u8]) -> Frame {
        let mut buf = BytesMut::from(input);
        let f = decode_reply(&mut buf).unwrap().unwrap();
        assert!(buf.is_empty(), "trailing bytes after {f:?}");
        // Every strict prefix is incomplete and consumes nothing.
        for i in 0..input.len() {
            let mut p = BytesMut::from(&input[..i]);
            assert_eq!(decode_reply(&mut p), Ok(None), "prefix {i} of {input:?}");
            assert_eq!(p.len(), i);
        }
        f
    }

    fn b(s: &str) -> Bytes {
        Bytes::copy_from_slice(s.as_bytes())
    }

    #[test]
    fn decodes_resp2_types() {
        assert_eq!(one(b"+OK\r\n"), Frame::ok());
        assert_eq!(one(b"-ERR bad\r\n"), Frame::error("ERR bad"));
        assert_eq!(one(b":-12\r\n"), Frame::Integer(-12));
        assert_eq!(one(b"$3\r\na\rb\r\n"), Frame::Bulk(b("a\rb")));
        assert_eq!(one(b"$0\r\n\r\n"), Frame::Bulk(Bytes::new()));
        assert_eq!(one(b"$-1\r\n"), Frame::Null);
        assert_eq!(one(b"*-1\r\n"), Frame::NullArray);
        assert_eq!(one(b"*0\r\n"), Frame::Array(vec![]));
        assert_eq!(
            one(b"*2\r\n*1\r\n:1\r\n$1\r\nx\r\n"),
            Frame::Array(vec![Frame::Array(vec![Frame::Integer(1)]), Frame::bulk("x")])
        );
    }

    #[test]
    fn decodes_resp3_types() {
        assert_eq!(one(b"_\r\n"), Frame::Null);
        assert_eq!(one(b"#t\r\n"), Frame::Boolean(true));
        assert_eq!(one(b"#f\r\n"), Frame::Boolean(false));
        assert_eq!(one(b",1.5\r\n"), Frame::Double(1.5));
        assert_eq!(one(b",inf\r\n"), Frame::Double(f64::INFINITY));
        assert_eq!(one(b",-inf\r\n"), Frame::Double(f64::NEG_INFINITY));
        assert_eq!(one(b",1e+20\r\n"), Frame::Double(1e20));
        assert!(matches!(one(b",nan\r\n"), Frame::Double(d) if d.is_nan()));
        assert_eq!(one(b"(-123456789012345678901234\r\n"), Frame::BigNumber(b("-123456789012345678901234")));
        assert_eq!(one(b"=15\r\ntxt:Some string\r\n"), Frame::Verbatim { format: *b"txt", text: b("Some string") });
        assert_eq!(one(b"!5\r\nERR x\r\n"), Frame::error("ERR x"));
        assert_eq!(
            one(b"%2\r\n+a\r\n:1\r\n+b\r\n_\r\n"),
            Frame::Map(vec![(Frame::simple("a"), Frame::Integer(1)), (Frame::simple("b"), Frame::Null)])
        );
        assert_eq!(one(b"~1\r\n:1\r\n"), Frame::Set(vec![Frame::Integer(1)]));
        assert_eq!(
            one(b">2\r\n+pubsub\r\n+message\r\n"),
            Frame::Push(vec![Frame::simple("pubsub"), Frame::simple("message")])
        );
        assert_eq!(
            one(b"*2\r\n|1\r\n+key-popularity\r\n%1\r\n$1\r\na\r\n,0.19\r\n:2039123\r\n:9543892\r\n"),
            Frame::Array(vec![
                Frame::Attribute {
                    attrs: vec![(
                        Frame::simple("key-popularity"),
                        Frame::Map(vec![(Frame::bulk("a"), Frame::Double(0.19))])
                    )],
                    value: Box::new(Frame::Integer(2039123)),
                },
                Frame::Integer(9543892),
            ])
        );
    }

    #[test]
    fn decodes_consecutive_frames_zero_copy() {
        let mut buf = BytesMut::from(&b"$5\r\nhello\r\n:1\r\n+x"[..]);
        let f = decode_reply(&mut buf).unwrap().unwrap();
        assert_eq!(f, Frame::bulk("hello"));
        assert_eq!(decode_reply(&mut buf), Ok(Some(Frame::Integer(1))));
        assert_eq!(decode_reply(&mut buf), Ok(None));
        assert_eq!(&buf[..], b"+x");
        assert_eq!(decode_reply(&mut BytesMut::new()), Ok(None));
    }

    #[test]
    fn rejects_malformed_replies() {
        for bad in [
            &b"?x\r\n"[..],
            b":abc\r\n",
            b":1\rx",
            b"$3\r\nabcde",
            b"$-2\r\n",
            b"*-2\r\n",
            b"%-1\r\n",
            b"~x\r\n",
            b"#x\r\n",
            b",abc\r\n",
            b"(12a\r\n",
            b"(\r\n",
            b"_x\r\n",
            b"=3\r\ntxt\r\n",
            b"=5\r\ntxtxx\r\n",
            b"$99999999999999999999999\r\n",
        ] {
            let mut buf = BytesMut::from(bad);
            assert!(decode_reply(&mut buf).is_err(), "{bad:?}");
            assert_eq!(buf.len(), bad.len(), "nothing consumed on error");
        }
    }

    #[test]
    fn nesting_is_bounded() {
        let deep = b"*1\r\n".repeat(MAX_REPLY_DEPTH + 1);
        let mut input = deep.clone();
        input.extend_from_slice(b":1\r\n");
        assert!(dec(&input).is_err());
        let mut input = b"*1\r\n".repeat(MAX_REPLY_DEPTH);
        input.extend_from_slice(b":1\r\n");
        assert!(matches!(dec(&input), Ok(Some(Frame::Array(_)))));
        // Huge hostile nesting fails fast instead of overflowing the stack.
        assert!(dec(&b"*1\r\n".repeat(1_000_000)).is_err());
    }

    #[test]
    fn huge_counts_do_not_allocate() {
        assert_eq!(dec(b"*9223372036854775807\r\n:1\r\n"), Ok(None));
        assert_eq!(dec(b"%9223372036854775807\r\n"), Ok(None));
        assert_eq!(dec(b"$9223372036854775807\r\nab"), Ok(None));
    }

    #[test]
    fn encode_request_format() {
        let mut out = BytesMut::new();
        encode_request(&["SET", "k", ""], &mut out);
        assert_eq!(&out[..], b"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$0\r\n\r\n");
        let mut out = BytesMut::new();
        encode_request::<&[u8]>(&[], &mut out);
        assert_eq!(&out[..], b"*0\r\n");
    }

    fn sample_frames() -> Vec<Frame> {
        vec![
            Frame::ok(),
            Frame::error("ERR syntax error"),
            Frame::Integer(i64::MIN),
            Frame::bulk("bulk\r\nwith crlf"),
            Frame::Null,
            Frame::NullArray,
            Frame::Array(vec![Frame::Integer(1), Frame::Array(vec![])]),
            Frame::Map(vec![(Frame::bulk("k"), Frame::Set(vec![Frame::bulk("v")]))]),
            Frame::Set(vec![Frame::Integer(2)]),
            Frame::Double(-0.1),
            Frame::Double(f64::INFINITY),
            Frame::Double(f64::NEG_INFINITY),
            Frame::Boolean(true),
            Frame::Boolean(false),
            Frame::BigNumber(b("3492890328409238509324850943850943825024385")),
            Frame::Verbatim { format: *b"mkd", text: b("# title") },
            Frame::Push(vec![Frame::bulk("message"), Frame::bulk("ch"), Frame::bulk("hi")]),
            Frame::Attribute {
                attrs: vec![(Frame::bulk("a"), Frame::Double(1.0))],
                value: Box::new(Frame::Array(vec![Frame::Null])),
            },
        ]
    }

    #[test]
    fn round_trip_resp3() {
        for f in sample_frames() {
            let mut out = BytesMut::new();
            encode(&f, Protocol::Resp3, &mut out);
            let want = match &f {
                Frame::NullArray => Frame::Null,
                other => other.clone(),
            };
            assert_eq!(one(&out), want);
        }
    }

    #[test]
    fn round_trip_resp2() {
        let expect = [
            Frame::ok(),
            Frame::error("ERR syntax error"),
            Frame::Integer(i64::MIN),
            Frame::bulk("bulk\r\nwith crlf"),
            Frame::Null,
            Frame::NullArray,
            Frame::Array(vec![Frame::Integer(1), Frame::Array(vec![])]),
            Frame::Array(vec![Frame::bulk("k"), Frame::Array(vec![Frame::bulk("v")])]),
            Frame::Array(vec![Frame::Integer(2)]),
            Frame::bulk("-0.10000000000000001"),
            Frame::bulk("inf"),
            Frame::bulk("-inf"),
            Frame::Integer(1),
            Frame::Integer(0),
            Frame::bulk("3492890328409238509324850943850943825024385"),
            Frame::bulk("# title"),
            Frame::Array(vec![Frame::bulk("message"), Frame::bulk("ch"), Frame::bulk("hi")]),
            Frame::Array(vec![Frame::Null]),
        ];
        for (f, want) in sample_frames().into_iter().zip(expect) {
            let mut out = BytesMut::new();
            encode(&f, Protocol::Resp2, &mut out);
            assert_eq!(one(&out), want, "{f:?}");
        }
    }

    #[test]
    fn nan_round_trips() {
        for p in [Protocol::Resp2, Protocol::Resp3] {
            let mut out = BytesMut::new();
            encode(&Frame::Double(f64::NAN), p, &mut out);
            match one(&out) {
                Frame::Double(d) => assert!(d.is_nan()),
                Frame::Bulk(s) => assert_eq!(&s[..], b"nan"),
                other => panic!("{other:?}"),
            }
        }
    }

    #[test]
    fn error_display() {
        let e = ReplyError("boom".into());
        assert_eq!(e.to_string(), "boom");
    }
}
