//! Typed access to aggregate values for handlers: look a key up as a list/hash/set/zset, answering
//! WRONGTYPE for other types, creating it on demand, and deleting it once emptied (Redis semantics).

use crate::db::Db;
use crate::error;
use crate::types::stream::Stream;
use crate::types::zset::ZSet;
use crate::value::{HashValue, ListValue, SetValue, SmallBytes, Value};
use bytes::Bytes;
use resp::Frame;

macro_rules! accessors {
    ($variant:ident, $name:literal, $ty:ty, $read:ident, $write:ident, $create:ident) => {
        /// Looks the key up for reading (counts a hit/miss): Ok(None) if missing, WRONGTYPE for
        /// another type, the refusal of a damaged value of this type.
        pub fn $read<'a>(db: &'a mut Db<'_, '_>, key: &[u8]) -> Result<Option<&'a $ty>, Frame> {
            match db.read(key) {
                None => Ok(None),
                Some(e) => match &e.value {
                    Value::$variant(v) => Ok(Some(std::borrow::Borrow::<$ty>::borrow(v))),
                    Value::Damaged(d) if d.type_name() == $name => Err(d.refusal()),
                    _ => Err(error::wrong_type()),
                },
            }
        }
        /// Looks the key up for modification: Ok(None) if missing, WRONGTYPE for another type.
        pub fn $write<'a>(db: &'a mut Db<'_, '_>, key: &[u8]) -> Result<Option<&'a mut $ty>, Frame> {
            match db.write(key) {
                None => Ok(None),
                Some(e) => match &mut e.value {
                    Value::$variant(v) => Ok(Some(std::borrow::BorrowMut::<$ty>::borrow_mut(v))),
                    Value::Damaged(d) if d.type_name() == $name => Err(d.refusal()),
                    _ => Err(error::wrong_type()),
                },
            }
        }
        /// The value for modification, created empty when missing (the caller must add to it or
        /// call [`remove_if_empty`]); WRONGTYPE for another type.
        pub fn $create<'a>(db: &'a mut Db<'_, '_>, key: &[u8]) -> Result<&'a mut $ty, Frame> {
            if !db.exists(key) {
                db.set(key, Value::$variant(Default::default()), false);
            }
            match db.write(key) {
                Some(e) => match &mut e.value {
                    Value::$variant(v) => Ok(std::borrow::BorrowMut::<$ty>::borrow_mut(v)),
                    Value::Damaged(d) if d.type_name() == $name => Err(d.refusal()),
                    _ => Err(error::wrong_type()),
                },
                None => Err(error::no_such_key()),
            }
        }
    };
}

accessors!(List, "list", ListValue, read_list, write_list, create_list);
accessors!(Hash, "hash", HashValue, read_hash, write_hash, create_hash);
accessors!(Set, "set", SetValue, read_set, write_set, create_set);
accessors!(ZSet, "zset", ZSet, read_zset, write_zset, create_zset);
accessors!(Stream, "stream", Stream, read_stream, write_stream, create_stream);

/// The first of `keys` for which `f` finds something (the MPOP family and the blocking pops look
/// for the first non-empty key): that key and what `f` gave, or Ok(None).
pub fn first_key<T>(
    keys: &[Bytes],
    mut f: impl FnMut(&[u8]) -> Result<Option<T>, Frame>,
) -> Result<Option<(&[u8], T)>, Frame> {
    for key in keys {
        if let Some(v) = f(key)? {
            return Ok(Some((key, v)));
        }
    }
    Ok(None)
}

/// Deletes `key` if it holds an empty aggregate.
pub fn remove_if_empty(db: &mut Db<'_, '_>, key: &[u8]) {
    let empty = match db.peek(key).map(|e| &e.value) {
        Some(Value::List(l)) => l.is_empty(),
        Some(Value::Hash(h)) => h.is_empty(),
        Some(Value::Set(s)) => s.is_empty(),
        Some(Value::ZSet(z)) => z.is_empty(),
        _ => false,
    };
    if empty {
        db.remove(key);
    }
}

/// A bulk reply copying `b`.
pub fn bulk(b: &[u8]) -> Frame {
    Frame::Bulk(Bytes::copy_from_slice(b))
}

/// `SmallBytes` from an argument.
pub fn sb(b: &[u8]) -> SmallBytes {
    SmallBytes::from_slice(b)
}

/// Parsed `[MATCH pattern] [COUNT count]` of the *SCAN commands.
pub struct ScanOpts {
    /// Where to resume: None = from the top (cursor 0).
    pub upper: Option<usize>,
    /// MATCH pattern.
    pub pattern: Option<Bytes>,
    /// COUNT hint.
    pub count: usize,
}

/// Parses `cursor [MATCH pattern] [COUNT count]` starting at `args[i]` (the cursor), with Redis's
/// errors.
pub fn parse_scan(args: &[Bytes], i: usize) -> Result<ScanOpts, Frame> {
    let cursor = parse_cursor(&args[i]).ok_or_else(|| Frame::error("ERR invalid cursor"))?;
    let mut o = ScanOpts { upper: (cursor != 0).then_some(cursor as usize), pattern: None, count: 10 };
    let mut j = i + 1;
    while j < args.len() {
        let more = j + 1 < args.len();
        if crate::args::eq_ic(&args[j], "count") && more {
            let n = crate::args::parse_i64_strict(&args[j + 1]).ok_or_else(error::not_integer)?;
            if n < 1 {
                return Err(error::syntax());
            }
            o.count = n as usize;
            j += 2;
        } else if crate::args::eq_ic(&args[j], "match") && more {
            let p = &args[j + 1];
            o.pattern = (&p[..] != b"*").then(|| p.clone());
            j += 2;
        } else {
            return Err(error::syntax());
        }
    }
    Ok(o)
}

/// Redis parses SCAN cursors with strtoull: digits only (an optional leading '+' or '-' is
/// accepted by strtoull, but we only accept what Redis documents).
fn parse_cursor(b: &[u8]) -> Option<u64> {
    if b.is_empty() || !b.iter().all(u8::is_ascii_digit) {
        return None;
    }
    std::str::from_utf8(b).ok()?.parse().ok()
}

/// Walks positions `[0, len)` downward from `upper` (exclusive; None = from the top) visiting
/// about `budget` of them (Redis's COUNT is a hint: large values walk further); calls `visit(pos)`.
/// Returns the cursor to send back: the next upper bound, 0 when done.
pub fn scan_positions(len: usize, upper: Option<usize>, budget: usize, mut visit: impl FnMut(usize)) -> u64 {
    let mut pos = upper.unwrap_or(len).min(len);
    let mut n = 0;
    while pos > 0 && n < budget {
        pos -= 1;
        n += 1;
        visit(pos);
    }
    pos as u64
}

/// The `[cursor, [items]]` reply of the *SCAN commands.
pub fn scan_reply(cursor: u64, items: Vec<Frame>) -> Frame {
    Frame::Array(vec![Frame::Bulk(Bytes::from(cursor.to_string())), Frame::Array(items)])
}

/// True if `b` matches the optional pattern.
pub fn scan_match(pattern: &Option<Bytes>, b: &[u8]) -> bool {
    pattern.as_ref().is_none_or(|p| crate::glob::matches(p, b, false))
}

/// Key finder for `numkeys key [key ...]` commands whose numkeys is at position `I`. An invalid
/// numkeys yields no key (the handler then replies with the parse error without touching keys).
pub fn numkeys_keys<const I: usize>(args: &[Bytes]) -> Vec<usize> {
    let Some(n) = args.get(I).and_then(|a| crate::args::parse_i64_strict(a)) else {
        return Vec::new();
    };
    if n < 1 || (n as u64) > args.len() as u64 {
        return Vec::new();
    }
    (I + 1..I + 1 + n as usize).filter(|&i| i < args.len()).collect()
}

/// The arguments of LMPOP, ZMPOP, BLMPOP and BZMPOP: `numkeys key [key ...] <word0 | word1> [COUNT n]`.
pub struct MPop {
    /// Positions of the keys in the arguments.
    pub keys: std::ops::Range<usize>,
    /// True if the first of the two words was given (LEFT, MIN).
    pub first: bool,
    /// Elements to pop (COUNT, default 1).
    pub count: usize,
}

/// Parses `numkeys key [key ...] <words[0] | words[1]> [COUNT n]` with `numkeys` at `numkeys_at`,
/// with Redis's messages ("numkeys should be greater than 0" also for a non-integer).
pub fn parse_mpop(args: &[Bytes], numkeys_at: usize, words: [&str; 2]) -> Result<MPop, Frame> {
    let eq = crate::args::eq_ic;
    let numkeys = match args.get(numkeys_at).and_then(|a| crate::args::parse_i64_strict(a)) {
        Some(n) if n >= 1 => n as u64,
        _ => return Err(Frame::error("ERR numkeys should be greater than 0")),
    };
    let w = (numkeys_at as u64 + 1).saturating_add(numkeys);
    if w >= args.len() as u64 {
        return Err(error::syntax());
    }
    let w = w as usize;
    let first = if eq(&args[w], words[0]) {
        true
    } else if eq(&args[w], words[1]) {
        false
    } else {
        return Err(error::syntax());
    };
    let mut count = None;
    let mut j = w + 1;
    while j < args.len() {
        if count.is_none() && eq(&args[j], "count") && j + 1 < args.len() {
            match crate::args::parse_i64_strict(&args[j + 1]) {
                Some(n) if n >= 1 => count = Some(n as usize),
                _ => return Err(Frame::error("ERR count should be greater than 0")),
            }
            j += 2;
        } else {
            return Err(error::syntax());
        }
    }
    Ok(MPop { keys: numkeys_at + 1..w, first, count: count.unwrap_or(1) })
}
