//! Reply formatting, byte-identical to redis-cli 7.0.15.
//!
//! Two renderings exist, as in redis-cli: the "tty" one (`--no-raw`, the default when stdout is a
//! terminal) quotes strings and numbers nested aggregates (`cliFormatReplyTTY`), the raw one
//! (`--raw`, the default otherwise) prints payloads as they are (`cliFormatReplyRaw`).
//!
//! Frames map onto hiredis reply types the way redis-cli sees them: [`Frame::Null`] and
//! [`Frame::NullArray`] are both "nil", a double is shown with the text the server sent, which
//! for Redis 7.0 (and Latch) is `%.17g`, i.e. [`resp::format_double`]. Two types make redis-cli
//! 7.0.15 abort ("Unknown reply type" for big numbers, a protocol error for attributes); here a
//! big number is printed as later redis-cli versions do (`(big number) 123`) and an attribute is
//! transparent: only the value it describes is printed.

use resp::Frame;

pub use resp::repr;

/// The part of `s` a C `%s` would print: everything before the first NUL byte.
fn c_str(s: &[u8]) -> &[u8] {
    match s.iter().position(|&c| c == 0) {
        Some(n) => &s[..n],
        None => s,
    }
}

/// The value an attribute frame describes (attributes themselves are not shown).
fn strip_attrs(mut f: &Frame) -> &Frame {
    while let Frame::Attribute { value, .. } = f {
        f = value;
    }
    f
}

fn double_text(d: f64, out: &mut Vec<u8>) {
    resp::format_double(d, out);
}

/// True if the tty rendering of `f` spans several lines (`cliIsMultilineValueTTY`).
fn is_multiline(f: &Frame) -> bool {
    match strip_attrs(f) {
        Frame::Array(v) | Frame::Set(v) | Frame::Push(v) => match v.as_slice() {
            [] => false,
            [only] => is_multiline(only),
            _ => true,
        },
        Frame::Map(pairs) => match pairs.as_slice() {
            [] => false,
            [(_, v)] => is_multiline(v),
            _ => true,
        },
        _ => false,
    }
}

/// Appends the tty ("no-raw") rendering of a reply, including the final newline.
pub fn format_tty(f: &Frame, out: &mut Vec<u8>) {
    tty(f, b"", out);
}

fn tty(f: &Frame, prefix: &[u8], out: &mut Vec<u8>) {
    match strip_attrs(f) {
        Frame::Error(e) => {
            out.extend_from_slice(b"(error) ");
            out.extend_from_slice(c_str(e));
            out.push(b'\n');
        }
        Frame::Simple(s) => {
            out.extend_from_slice(c_str(s));
            out.push(b'\n');
        }
        Frame::Integer(n) => {
            out.extend_from_slice(format!("(integer) {n}\n").as_bytes());
        }
        Frame::Double(d) => {
            out.extend_from_slice(b"(double) ");
            double_text(*d, out);
            out.push(b'\n');
        }
        Frame::BigNumber(n) => {
            out.extend_from_slice(b"(big number) ");
            out.extend_from_slice(c_str(n));
            out.push(b'\n');
        }
        Frame::Bulk(b) => {
            repr(b, out);
            out.push(b'\n');
        }
        Frame::Verbatim { text, .. } => {
            out.extend_from_slice(text);
            out.push(b'\n');
        }
        Frame::Null | Frame::NullArray => out.extend_from_slice(b"(nil)\n"),
        Frame::Boolean(b) => out.extend_from_slice(if *b { b"(true)\n" } else { b"(false)\n" }),
        Frame::Array(v) => tty_list(v, b')', b"(empty array)\n", prefix, out),
        Frame::Set(v) => tty_list(v, b'~', b"(empty set)\n", prefix, out),
        Frame::Push(v) => tty_list(v, b')', b"(empty push)\n", prefix, out),
        Frame::Map(pairs) => tty_map(pairs, prefix, out),
        Frame::Attribute { .. } => unreachable!("strip_attrs removed every attribute"),
        Frame::Encoded(_) => unreachable!("replies read from the wire are decoded, never Encoded"),
    }
}

/// Number of decimal digits of `n` (at least one).
fn digits(mut n: usize) -> usize {
    let mut len = 1;
    while n >= 10 {
        n /= 10;
        len += 1;
    }
    len
}

/// Writes the `"%s%*d%c "` entry header of element `idx` (1-based).
fn entry_header(prefix: &[u8], width: usize, idx: usize, sep: u8, out: &mut Vec<u8>) {
    out.extend_from_slice(prefix);
    out.extend_from_slice(format!("{idx:>width$}").as_bytes());
    out.push(sep);
    out.push(b' ');
}

/// The prefix of nested lines: the parent's plus room for the index column and its separator.
fn child_prefix(prefix: &[u8], width: usize) -> Vec<u8> {
    let mut p = prefix.to_vec();
    p.resize(prefix.len() + width + 2, b' ');
    p
}

fn tty_list(items: &[Frame], sep: u8, empty: &[u8], prefix: &[u8], out: &mut Vec<u8>) {
    if items.is_empty() {
        out.extend_from_slice(empty);
        return;
    }
    let width = digits(items.len());
    let nested = child_prefix(prefix, width);
    for (i, item) in items.iter().enumerate() {
        // The first line's prefix was already written by whoever printed our own index.
        entry_header(if i == 0 { b"" } else { prefix }, width, i + 1, sep, out);
        tty(item, &nested, out);
    }
}

fn tty_map(pairs: &[(Frame, Frame)], prefix: &[u8], out: &mut Vec<u8>) {
    if pairs.is_empty() {
        out.extend_from_slice(b"(empty hash)\n");
        return;
    }
    let width = digits(pairs.len());
    let nested = child_prefix(prefix, width);
    for (i, (k, v)) in pairs.iter().enumerate() {
        entry_header(if i == 0 { b"" } else { prefix }, width, i + 1, b'#', out);
        tty(k, &nested, out);
        // The key's rendering ends with a newline; the value goes on the same line.
        out.pop();
        out.extend_from_slice(b" => ");
        if is_multiline(v) {
            out.push(b'\n');
            out.extend_from_slice(&nested);
        }
        tty(v, &nested, out);
    }
}

/// Appends the raw rendering of a reply (`--raw`), without the final command delimiter; elements
/// of aggregates are separated by `mb_delim` (redis-cli's `-d`, a newline by default).
pub fn format_raw(f: &Frame, mb_delim: &[u8], out: &mut Vec<u8>) {
    match strip_attrs(f) {
        Frame::Null | Frame::NullArray => {}
        Frame::Error(e) => {
            out.extend_from_slice(e);
            out.push(b'\n');
        }
        Frame::Simple(s) | Frame::Bulk(s) | Frame::BigNumber(s) => out.extend_from_slice(s),
        Frame::Verbatim { text, .. } => out.extend_from_slice(text),
        Frame::Boolean(b) => out.extend_from_slice(if *b { b"(true)" } else { b"(false)" }),
        Frame::Integer(n) => out.extend_from_slice(n.to_string().as_bytes()),
        Frame::Double(d) => double_text(*d, out),
        Frame::Array(v) | Frame::Set(v) | Frame::Push(v) => {
            for (i, item) in v.iter().enumerate() {
                if i > 0 {
                    out.extend_from_slice(mb_delim);
                }
                format_raw(item, mb_delim, out);
            }
        }
        Frame::Map(pairs) => {
            for (i, (k, v)) in pairs.iter().enumerate() {
                if i > 0 {
                    out.extend_from_slice(mb_delim);
                }
                format_raw(k, mb_delim, out);
                out.push(b' ');
                format_raw(v, mb_delim, out);
            }
        }
        Frame::Attribute { .. } => unreachable!("strip_attrs removed every attribute"),
        Frame::Encoded(_) => unreachable!("replies read from the wire are decoded, never Encoded"),
    }
}

/// If `f` is a RESP3 client-tracking `invalidate` push (`>2` of "invalidate" and an array of
/// keys), returns the tty line redis-cli prints for it: `-> invalidate: 'k1', 'k2'`.
pub fn format_invalidate_tty(f: &Frame) -> Option<Vec<u8>> {
    let Frame::Push(items) = f else { return None };
    let [Frame::Bulk(kind), Frame::Array(keys)] = items.as_slice() else {
        return None;
    };
    if !kind.starts_with(b"invalidate") {
        return None;
    }
    let mut out = b"-> invalidate: ".to_vec();
    for (i, key) in keys.iter().enumerate() {
        let Frame::Bulk(k) = key else { return None };
        out.push(b'\'');
        out.extend_from_slice(c_str(k));
        out.push(b'\'');
        if i + 1 < keys.len() {
            out.extend_from_slice(b", ");
        }
    }
    out.push(b'\n');
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use resp::Bytes;

    fn bulk(s: &str) -> Frame {
        Frame::Bulk(Bytes::copy_from_slice(s.as_bytes()))
    }

    fn tty_s(f: &Frame) -> String {
        let mut out = Vec::new();
        format_tty(f, &mut out);
        String::from_utf8(out).unwrap()
    }

    fn raw_s(f: &Frame) -> String {
        let mut out = Vec::new();
        format_raw(f, b"\n", &mut out);
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn repr_escapes_like_sdscatrepr() {
        let mut out = Vec::new();
        repr(b"a\"b\\c\n\r\t\x07\x08\x00\x7f\xff ~", &mut out);
        assert_eq!(out, br#""a\"b\\c\n\r\t\a\b\x00\x7f\xff ~""#);
    }

    // Types redis-cli 7.0.15 cannot print (it aborts): the format of later redis-cli versions.
    #[test]
    fn big_number_and_attribute() {
        let big = Frame::BigNumber(Bytes::from_static(b"1234567999999999999999999999999999999"));
        assert_eq!(tty_s(&big), "(big number) 1234567999999999999999999999999999999\n");
        assert_eq!(raw_s(&big), "1234567999999999999999999999999999999");
        let attr = Frame::Attribute {
            attrs: vec![(bulk("key-popularity"), Frame::Array(vec![bulk("a"), Frame::Double(0.5)]))],
            value: Box::new(Frame::Array(vec![Frame::Integer(2), Frame::Integer(9)])),
        };
        assert_eq!(tty_s(&attr), "1) (integer) 2\n2) (integer) 9\n");
        assert_eq!(raw_s(&attr), "2\n9");
        let nested = Frame::Array(vec![Frame::Attribute {
            attrs: vec![],
            value: Box::new(Frame::Array(vec![Frame::Integer(1), Frame::Integer(2)])),
        }]);
        assert_eq!(tty_s(&nested), "1) 1) (integer) 1\n   2) (integer) 2\n");
    }

    #[test]
    fn invalidate_push() {
        let f = Frame::Push(vec![bulk("invalidate"), Frame::Array(vec![bulk("a"), bulk("b")])]);
        assert_eq!(format_invalidate_tty(&f).unwrap(), b"-> invalidate: 'a', 'b'\n");
        let other = Frame::Push(vec![bulk("message"), bulk("ch"), bulk("x")]);
        assert_eq!(format_invalidate_tty(&other), None);
    }

    #[test]
    fn status_and_error_stop_at_nul_in_tty_only() {
        let e = Frame::Error(Bytes::from_static(b"ERR a\0b"));
        assert_eq!(tty_s(&e), "(error) ERR a\n");
        assert_eq!(raw_s(&e), "ERR a\0b\n");
    }

    #[test]
    fn wide_index_column() {
        let f = Frame::Array((1..=10).map(Frame::Integer).collect());
        let s = tty_s(&f);
        assert!(s.starts_with(" 1) (integer) 1\n 2) (integer) 2\n"), "{s}");
        assert!(s.ends_with("10) (integer) 10\n"), "{s}");
    }
}
