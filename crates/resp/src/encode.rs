//! Reply encoding (server -> client) for RESP2 and RESP3.

use bytes::{BufMut, BytesMut};

use crate::double::format_double;
use crate::{Frame, Protocol};

/// Encodes `frame` for a client speaking `proto`, appending to `out`.
///
/// RESP2 downgrades: Map -> flat array, Set/Push -> array, Double -> bulk string via
/// [`format_double`] (inf -> "inf", -inf -> "-inf"), Boolean -> `:1`/`:0`, BigNumber -> bulk,
/// Verbatim -> bulk of text, Null -> `$-1`, NullArray -> `*-1`, Attribute -> only the value.
/// RESP3: native types, Null and NullArray -> `_\r\n`, Double -> `,<%.17g>\r\n` with
/// `,inf`, `,-inf`, `,nan`.
/// Error and Simple payloads never contain CR or LF on the wire: any `'\r'` or `'\n'` is
/// replaced with `' '` (as Redis does for errors), because a raw newline would desync the
/// client's parser.
pub fn encode(frame: &Frame, proto: Protocol, out: &mut BytesMut) {
    let resp3 = proto == Protocol::Resp3;
    match frame {
        Frame::Simple(s) => line_sanitized(b'+', s, out),
        Frame::Error(e) => line_sanitized(b'-', e, out),
        Frame::Integer(i) => header(b':', *i, out),
        Frame::Bulk(b) => bulk(b, out),
        Frame::Null => out.extend_from_slice(if resp3 { b"_\r\n" } else { b"$-1\r\n" }),
        Frame::NullArray => out.extend_from_slice(if resp3 { b"_\r\n" } else { b"*-1\r\n" }),
        Frame::Array(items) => {
            header_len(b'*', items.len(), out);
            for f in items {
                encode(f, proto, out);
            }
        }
        Frame::Map(pairs) => {
            if resp3 {
                header_len(b'%', pairs.len(), out);
            } else {
                header_len(b'*', pairs.len().saturating_mul(2), out);
            }
            encode_pairs(pairs, proto, out);
        }
        Frame::Set(items) => {
            header_len(if resp3 { b'~' } else { b'*' }, items.len(), out);
            for f in items {
                encode(f, proto, out);
            }
        }
        Frame::Push(items) => {
            header_len(if resp3 { b'>' } else { b'*' }, items.len(), out);
            for f in items {
                encode(f, proto, out);
            }
        }
        Frame::Double(d) => {
            let mut buf = Vec::with_capacity(32);
            format_double(*d, &mut buf);
            if resp3 {
                out.put_u8(b',');
                out.extend_from_slice(&buf);
                out.extend_from_slice(b"\r\n");
            } else {
                bulk(&buf, out);
            }
        }
        Frame::Boolean(b) => {
            let s: &[u8] = match (resp3, *b) {
                (true, true) => b"#t\r\n",
                (true, false) => b"#f\r\n",
                (false, true) => b":1\r\n",
                (false, false) => b":0\r\n",
            };
            out.extend_from_slice(s);
        }
        Frame::BigNumber(n) => {
            if resp3 {
                // Big numbers are a single line; sanitizing keeps a malformed
                // payload from breaking framing.
                line_sanitized(b'(', n, out);
            } else {
                bulk(n, out);
            }
        }
        Frame::Verbatim { format, text } => {
            if resp3 {
                header_len(b'=', text.len().saturating_add(4), out);
                out.extend_from_slice(format);
                out.put_u8(b':');
                out.extend_from_slice(text);
                out.extend_from_slice(b"\r\n");
            } else {
                bulk(text, out);
            }
        }
        Frame::Attribute { attrs, value } => {
            if resp3 {
                header_len(b'|', attrs.len(), out);
                encode_pairs(attrs, proto, out);
            }
            encode(value, proto, out);
        }
        Frame::Encoded(b) => out.extend_from_slice(b),
    }
}

/// An aggregate of bulk strings encoded straight into its wire bytes, for replies that can be
/// large (KEYS, LRANGE, SRANDMEMBER with a negative count...): what the connection will write, no
/// more, allocated once when the caller knows the size (the sum of [`BulkArray::bulk_size`],
/// [`BulkArray::pair_size`] or [`BulkArray::scored_size`] of its elements).
pub struct BulkArray {
    out: BytesMut,
    proto: Protocol,
}

impl BulkArray {
    fn with_header(prefix: u8, n: usize, body: usize, proto: Protocol) -> BulkArray {
        let mut out = BytesMut::with_capacity(body.saturating_add(24));
        header_len(prefix, n, &mut out);
        BulkArray { out, proto }
    }

    /// An array of `count` elements taking `body` bytes.
    pub fn array(count: usize, body: usize, proto: Protocol) -> BulkArray {
        BulkArray::with_header(b'*', count, body, proto)
    }

    /// An array of `pairs` elements pushed with [`BulkArray::push_pair`] or
    /// [`BulkArray::push_scored`]: in RESP3 each is a two-element array, in RESP2 the two are
    /// flattened into the array.
    pub fn pairs(pairs: usize, body: usize, proto: Protocol) -> BulkArray {
        let n = if proto == Protocol::Resp3 { pairs } else { pairs.saturating_mul(2) };
        BulkArray::with_header(b'*', n, body, proto)
    }

    /// A map of `pairs` entries (RESP2: a flat array), each pushed as two [`BulkArray::push`].
    pub fn map(pairs: usize, body: usize, proto: Protocol) -> BulkArray {
        match proto {
            Protocol::Resp3 => BulkArray::with_header(b'%', pairs, body, proto),
            Protocol::Resp2 => BulkArray::with_header(b'*', pairs.saturating_mul(2), body, proto),
        }
    }

    /// A set of `count` members (RESP2: an array).
    pub fn set(count: usize, body: usize, proto: Protocol) -> BulkArray {
        let prefix = if proto == Protocol::Resp3 { b'~' } else { b'*' };
        BulkArray::with_header(prefix, count, body, proto)
    }

    /// The bytes of a bulk string of `n` bytes on the wire (`$n\r\n...\r\n`).
    pub fn bulk_size(n: usize) -> usize {
        let mut ib = itoa::Buffer::new();
        1 + ib.format(n).len() + 2 + n + 2
    }

    /// The bytes [`BulkArray::push_pair`] writes.
    pub fn pair_size(k: usize, v: usize, proto: Protocol) -> usize {
        let wrap = if proto == Protocol::Resp3 { 4 } else { 0 };
        wrap + BulkArray::bulk_size(k) + BulkArray::bulk_size(v)
    }

    /// The bytes [`BulkArray::push_scored`] writes.
    pub fn scored_size(m: usize, score: f64, proto: Protocol) -> usize {
        let mut d = Vec::new();
        format_double(score, &mut d);
        match proto {
            Protocol::Resp3 => 4 + BulkArray::bulk_size(m) + 1 + d.len() + 2,
            Protocol::Resp2 => BulkArray::bulk_size(m) + BulkArray::bulk_size(d.len()),
        }
    }

    /// Appends a bulk string.
    pub fn push(&mut self, b: &[u8]) {
        header_len(b'$', b.len(), &mut self.out);
        self.out.extend_from_slice(b);
        self.out.extend_from_slice(b"\r\n");
    }

    /// Appends a key and its value (see [`BulkArray::pairs`]).
    pub fn push_pair(&mut self, k: &[u8], v: &[u8]) {
        if self.proto == Protocol::Resp3 {
            self.out.extend_from_slice(b"*2\r\n");
        }
        self.push(k);
        self.push(v);
    }

    /// Appends a member and its score: a double in RESP3, its `%.17g` text in RESP2.
    pub fn push_scored(&mut self, m: &[u8], score: f64) {
        if self.proto == Protocol::Resp3 {
            self.out.extend_from_slice(b"*2\r\n");
            self.push(m);
            encode(&Frame::Double(score), Protocol::Resp3, &mut self.out);
        } else {
            self.push(m);
            let mut d = Vec::new();
            format_double(score, &mut d);
            self.push(&d);
        }
    }

    /// The reply.
    pub fn finish(self) -> Frame {
        Frame::Encoded(self.out.freeze())
    }
}

fn encode_pairs(pairs: &[(Frame, Frame)], proto: Protocol, out: &mut BytesMut) {
    for (k, v) in pairs {
        encode(k, proto, out);
        encode(v, proto, out);
    }
}

fn header(prefix: u8, n: i64, out: &mut BytesMut) {
    number_line(prefix, n < 0, n.unsigned_abs(), out);
}

fn header_len(prefix: u8, n: usize, out: &mut BytesMut) {
    number_line(prefix, false, n as u64, out);
}

/// `prefix`, `-` if `negative`, the decimal `n`, CRLF: built on the stack from its end and
/// appended at once (each append to a `BytesMut` checks its room and copies, and a header line
/// was three of them).
#[inline]
fn number_line(prefix: u8, negative: bool, mut n: u64, out: &mut BytesMut) {
    // The prefix, a sign, 20 digits (u64::MAX), CRLF.
    let mut line = [0u8; 24];
    let mut at = 22;
    line[22..].copy_from_slice(b"\r\n");
    loop {
        at -= 1;
        line[at] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    if negative {
        at -= 1;
        line[at] = b'-';
    }
    at -= 1;
    line[at] = prefix;
    out.extend_from_slice(&line[at..]);
}

fn bulk(b: &[u8], out: &mut BytesMut) {
    out.reserve(b.len() + 16);
    header_len(b'$', b.len(), out);
    out.extend_from_slice(b);
    out.extend_from_slice(b"\r\n");
}

/// Lines up to this long (`+OK`, most errors) are built on the stack and appended at once.
const SHORT_LINE: usize = 64;

fn line_sanitized(prefix: u8, s: &[u8], out: &mut BytesMut) {
    let clean = |c: u8| if c == b'\r' || c == b'\n' { b' ' } else { c };
    if s.len() <= SHORT_LINE {
        let mut line = [0u8; SHORT_LINE + 3];
        line[0] = prefix;
        for (to, &c) in line[1..].iter_mut().zip(s) {
            *to = clean(c);
        }
        line[s.len() + 1..s.len() + 3].copy_from_slice(b"\r\n");
        out.extend_from_slice(&line[..s.len() + 3]);
        return;
    }
    out.reserve(s.len() + 3);
    out.put_u8(prefix);
    if crate::find2(b'\r', b'\n', s).is_none() {
        out.extend_from_slice(s);
    } else {
        out.extend(s.iter().map(|&c| clean(c)));
    }
    out.extend_from_slice(b"\r\n");
}

#[cfg(test)]
mod tests {
    use super::*;
    use bytes::Bytes;

    fn enc(f: &Frame, p: Protocol) -> Vec<u8> {
        let mut out = BytesMut::new();
        encode(f, p, &mut out);
        out.to_vec()
    }

    fn both(f: Frame, resp2: &[u8], resp3: &[u8]) {
        assert_eq!(enc(&f, Protocol::Resp2), resp2, "RESP2 {f:?}");
        assert_eq!(enc(&f, Protocol::Resp3), resp3, "RESP3 {f:?}");
    }

    /// Header lines are the decimal text of their number, at every number of digits and at the
    /// ends of both types.
    #[test]
    fn number_lines_are_decimal() {
        let mut ints = vec![0, 1, -1, i64::MIN, i64::MAX, i64::MIN + 1];
        for p in 0..19 {
            let t = 10i64.pow(p);
            ints.extend([t, t - 1, t + 1, -t, -t + 1, -t - 1]);
        }
        for n in ints {
            let mut out = BytesMut::new();
            header(b':', n, &mut out);
            assert_eq!(&out[..], format!(":{n}\r\n").as_bytes());
        }
        for n in [0, 9, 10, 99, 100, usize::MAX, usize::MAX - 1, 1 << 40] {
            let mut out = BytesMut::new();
            header_len(b'*', n, &mut out);
            assert_eq!(&out[..], format!("*{n}\r\n").as_bytes());
        }
    }

    /// Lines on either side of `SHORT_LINE` (built on the stack, or appended in parts) come out
    /// alike: CR and LF anywhere become spaces.
    #[test]
    fn short_and_long_lines_are_cleaned_alike() {
        for len in 0..=2 * SHORT_LINE + 2 {
            for at in [0, len / 2, len.saturating_sub(1)] {
                for bad in [b'\r', b'\n'] {
                    let mut s: Vec<u8> = (0..len).map(|i| b'a' + (i % 26) as u8).collect();
                    if len > 0 {
                        s[at] = bad;
                    }
                    let mut want = vec![b'-'];
                    want.extend(s.iter().map(|&c| if c == b'\r' || c == b'\n' { b' ' } else { c }));
                    want.extend_from_slice(b"\r\n");
                    let mut out = BytesMut::from(&b"before"[..]);
                    line_sanitized(b'-', &s, &mut out);
                    assert_eq!(&out[..6], b"before");
                    assert_eq!(&out[6..], &want[..], "length {len}, {bad} at {at}");
                }
            }
        }
    }

    #[test]
    fn scalar_encodings() {
        both(Frame::ok(), b"+OK\r\n", b"+OK\r\n");
        both(Frame::error("ERR bad\r\nthing\n"), b"-ERR bad  thing \r\n", b"-ERR bad  thing \r\n");
        both(Frame::simple("a\nb"), b"+a b\r\n", b"+a b\r\n");
        // CR/LF within `find2`'s first 16 bytes and beyond them: both cleaned.
        both(Frame::simple("0123456789abcd\r\n"), b"+0123456789abcd  \r\n", b"+0123456789abcd  \r\n");
        both(Frame::simple("0123456789abcde\r\n"), b"+0123456789abcde  \r\n", b"+0123456789abcde  \r\n");
        both(Frame::simple("0123456789abcdef\r\n"), b"+0123456789abcdef  \r\n", b"+0123456789abcdef  \r\n");
        both(Frame::Integer(-42), b":-42\r\n", b":-42\r\n");
        both(Frame::Integer(i64::MIN), b":-9223372036854775808\r\n", b":-9223372036854775808\r\n");
        both(Frame::Integer(i64::MAX), b":9223372036854775807\r\n", b":9223372036854775807\r\n");
        both(Frame::Integer(0), b":0\r\n", b":0\r\n");
        both(Frame::Integer(-1), b":-1\r\n", b":-1\r\n");
        both(Frame::Integer(1_000_000), b":1000000\r\n", b":1000000\r\n");
        both(Frame::bulk("foo"), b"$3\r\nfoo\r\n", b"$3\r\nfoo\r\n");
        both(Frame::bulk(""), b"$0\r\n\r\n", b"$0\r\n\r\n");
        both(Frame::Null, b"$-1\r\n", b"_\r\n");
        both(Frame::NullArray, b"*-1\r\n", b"_\r\n");
        both(Frame::Double(1.5), b"$3\r\n1.5\r\n", b",1.5\r\n");
        both(Frame::Double(0.1), b"$19\r\n0.10000000000000001\r\n", b",0.10000000000000001\r\n");
        both(Frame::Double(f64::INFINITY), b"$3\r\ninf\r\n", b",inf\r\n");
        both(Frame::Double(f64::NEG_INFINITY), b"$4\r\n-inf\r\n", b",-inf\r\n");
        both(Frame::Double(f64::NAN), b"$3\r\nnan\r\n", b",nan\r\n");
        both(Frame::Boolean(true), b":1\r\n", b"#t\r\n");
        both(Frame::Boolean(false), b":0\r\n", b"#f\r\n");
        both(
            Frame::BigNumber(Bytes::from("12345678901234567890")),
            b"$20\r\n12345678901234567890\r\n",
            b"(12345678901234567890\r\n",
        );
        both(
            Frame::Verbatim { format: *b"txt", text: Bytes::from("hello") },
            b"$5\r\nhello\r\n",
            b"=9\r\ntxt:hello\r\n",
        );
    }

    #[test]
    fn aggregate_encodings() {
        both(
            Frame::Array(vec![Frame::Integer(1), Frame::bulk("a")]),
            b"*2\r\n:1\r\n$1\r\na\r\n",
            b"*2\r\n:1\r\n$1\r\na\r\n",
        );
        both(Frame::Array(vec![]), b"*0\r\n", b"*0\r\n");
        both(
            Frame::Map(vec![(Frame::bulk("k"), Frame::Integer(1))]),
            b"*2\r\n$1\r\nk\r\n:1\r\n",
            b"%1\r\n$1\r\nk\r\n:1\r\n",
        );
        both(Frame::Set(vec![Frame::bulk("x")]), b"*1\r\n$1\r\nx\r\n", b"~1\r\n$1\r\nx\r\n");
        both(Frame::Push(vec![Frame::bulk("message")]), b"*1\r\n$7\r\nmessage\r\n", b">1\r\n$7\r\nmessage\r\n");
        both(
            Frame::Attribute {
                attrs: vec![(Frame::simple("ttl"), Frame::Integer(3))],
                value: Box::new(Frame::Boolean(true)),
            },
            b":1\r\n",
            b"|1\r\n+ttl\r\n:3\r\n#t\r\n",
        );
    }
}
