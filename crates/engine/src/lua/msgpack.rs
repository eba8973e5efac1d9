//! The `cmsgpack` library of Redis's Lua (lua-cmsgpack 0.4.0), written in Rust.
//!
//! Same encoding choices as the C original: integral numbers in the int64 range take the smallest
//! integer type, other numbers a float when that is exact and a double otherwise; a table whose keys
//! are exactly 1..N is an array, any other a map; tables nested 16 deep encode as nil (so circular
//! references terminate). Decoding accepts the types the C version knows (no bin/ext), returns
//! numbers as Lua numbers (uint64 above 2^63-1 wraps negative, as in Redis) and builds tables with
//! plain sets in input order, so later iteration order matches Redis's. The C version's Lua stack
//! limit (`LUAI_MAXCSTACK`, 8000 slots per C call) is accounted for so that the same inputs fail with
//! the same `stack overflow (...)` errors.

use super::libs::{Pending, arg_error, raise_bytes, raise_value, type_error};
use super::lstruct::c_long;
use mlua::{Lua, MultiValue, Table, Value};

/// `LUACMSGPACK_MAX_NESTING`: tables at this depth are encoded as nil.
const MAX_NESTING: usize = 16;
/// `LUAI_MAXCSTACK`: the Lua stack slots a C function may use.
const MAX_C_STACK: usize = 8000;

const TOO_MANY: &str = "too many return values at once; use unpack_one or unpack_limit instead.";

type R = mlua::Result<MultiValue>;

/// `luaL_checkstack(L, n, what)` for a C function using `top` slots.
fn check_stack(lua: &Lua, p: &Pending, top: usize, n: usize, what: &str) -> mlua::Result<()> {
    if top + n > MAX_C_STACK {
        return Err(raise_bytes(lua, p, format!("stack overflow ({what})").as_bytes()));
    }
    Ok(())
}

fn as_number(v: &Value) -> Option<f64> {
    match v {
        Value::Number(n) => Some(*n),
        Value::Integer(i) => Some(*i as f64),
        _ => None,
    }
}

/// `IS_INT64_EQUIVALENT`: finite and `(int64_t)n == n` (on x86-64 an out-of-range cast yields
/// INT64_MIN, which never compares equal to the value).
fn int64_equivalent(n: f64) -> bool {
    n.is_finite() && (-9_223_372_036_854_775_808.0..9_223_372_036_854_775_808.0).contains(&n) && n.trunc() == n
}

fn encode_int(n: i64, out: &mut Vec<u8>) {
    if n >= 0 {
        if n <= 127 {
            out.push(n as u8);
        } else if n <= 0xff {
            out.extend_from_slice(&[0xcc, n as u8]);
        } else if n <= 0xffff {
            out.push(0xcd);
            out.extend_from_slice(&(n as u16).to_be_bytes());
        } else if n <= 0xffff_ffff {
            out.push(0xce);
            out.extend_from_slice(&(n as u32).to_be_bytes());
        } else {
            out.push(0xcf);
            out.extend_from_slice(&n.to_be_bytes());
        }
    } else if n >= -32 {
        out.push(n as i8 as u8);
    } else if n >= -128 {
        out.extend_from_slice(&[0xd0, n as i8 as u8]);
    } else if n >= -32768 {
        out.push(0xd1);
        out.extend_from_slice(&(n as i16).to_be_bytes());
    } else if n >= -2_147_483_648 {
        out.push(0xd2);
        out.extend_from_slice(&(n as i32).to_be_bytes());
    } else {
        out.push(0xd3);
        out.extend_from_slice(&n.to_be_bytes());
    }
}

fn encode_number(n: f64, out: &mut Vec<u8>) {
    if int64_equivalent(n) {
        encode_int(n as i64, out);
        return;
    }
    let f = n as f32;
    if f as f64 == n {
        out.push(0xca);
        out.extend_from_slice(&f.to_be_bytes());
    } else {
        out.push(0xcb);
        out.extend_from_slice(&n.to_be_bytes());
    }
}

fn encode_bytes(s: &[u8], out: &mut Vec<u8>) {
    let len = s.len();
    if len < 32 {
        out.push(0xa0 | len as u8);
    } else if len <= 0xff {
        out.extend_from_slice(&[0xd9, len as u8]);
    } else if len <= 0xffff {
        out.push(0xda);
        out.extend_from_slice(&(len as u16).to_be_bytes());
    } else {
        out.push(0xdb);
        out.extend_from_slice(&(len as u32).to_be_bytes());
    }
    out.extend_from_slice(s);
}

/// Array and map headers share their layout: fix (`fix | n`), 16-bit and 32-bit lengths.
fn encode_header(n: usize, fix: u8, op16: u8, out: &mut Vec<u8>) {
    if n <= 15 {
        out.push(fix | n as u8);
    } else if n <= 0xffff {
        out.push(op16);
        out.extend_from_slice(&(n as u16).to_be_bytes());
    } else {
        out.push(op16 + 1);
        out.extend_from_slice(&(n as u32).to_be_bytes());
    }
}

/// `table_is_an_array`: every key a number in 1..=INT_MAX with no fraction, and the largest key
/// equal to the number of keys.
fn is_array(t: &Table) -> mlua::Result<bool> {
    let (mut count, mut max) = (0u64, 0u64);
    for pair in t.pairs::<Value, Value>() {
        let (k, _) = pair?;
        match as_number(&k) {
            Some(n) if n > 0.0 && n < 2_147_483_648.0 && n.trunc() == n => {
                max = max.max(n as u64);
                count += 1;
            }
            _ => return Ok(false),
        }
    }
    Ok(max == count)
}

/// Encodes `v`, at nesting `level`, while the C version would use `top` stack slots (`v` included).
fn encode(lua: &Lua, p: &Pending, v: &Value, level: usize, top: usize, out: &mut Vec<u8>) -> mlua::Result<()> {
    match v {
        Value::String(s) => encode_bytes(&s.as_bytes(), out),
        Value::Boolean(b) => out.push(if *b { 0xc3 } else { 0xc2 }),
        Value::Number(_) | Value::Integer(_) => encode_number(as_number(v).unwrap_or(0.0), out),
        Value::Table(t) if level < MAX_NESTING => {
            check_stack(lua, p, top, 2, "in function table_is_an_array")?;
            if is_array(t)? {
                check_stack(lua, p, top, 1, "in function mp_encode_lua_table_as_array")?;
                let len = t.raw_len();
                encode_header(len, 0x90, 0xdc, out);
                for j in 1..=len {
                    let item: Value = t.raw_get(j)?;
                    encode(lua, p, &item, level + 1, top + 1, out)?;
                }
            } else {
                check_stack(lua, p, top, 3, "in function mp_encode_lua_table_as_map")?;
                let mut len = 0usize;
                for pair in t.pairs::<Value, Value>() {
                    pair?;
                    len += 1;
                }
                encode_header(len, 0x80, 0xde, out);
                for pair in t.pairs::<Value, Value>() {
                    let (k, item) = pair?;
                    encode(lua, p, &k, level + 1, top + 3, out)?;
                    encode(lua, p, &item, level + 1, top + 2, out)?;
                }
            }
        }
        _ => out.push(0xc0),
    }
    Ok(())
}

/// Why decoding stopped.
enum DecErr {
    /// `MP_CUR_ERROR_EOF`: "Missing bytes in input."
    Eof,
    /// `MP_CUR_ERROR_BADFMT`: "Bad data format in input."
    BadFmt,
    /// A Lua error raised on the spot (stack overflow, nil or NaN table index).
    Lua(mlua::Error),
}

impl From<mlua::Error> for DecErr {
    fn from(e: mlua::Error) -> Self {
        DecErr::Lua(e)
    }
}

/// An open container while decoding.
enum Open {
    Array { t: Table, next: u64, left: u64, top: usize },
    MapKey { t: Table, left: u64, top: usize },
    MapVal { t: Table, key: Value, left: u64, top: usize },
}

impl Open {
    /// Stack slots in use when the container's next element starts decoding.
    fn child_top(&self) -> usize {
        match self {
            Open::Array { top, .. } | Open::MapVal { top, .. } => top + 2,
            Open::MapKey { top, .. } => top + 1,
        }
    }
    fn done(&self) -> bool {
        match self {
            Open::Array { left, .. } | Open::MapKey { left, .. } => *left == 0,
            Open::MapVal { .. } => false,
        }
    }
}

struct Cursor<'a> {
    s: &'a [u8],
    pos: usize,
}

impl<'a> Cursor<'a> {
    fn left(&self) -> usize {
        self.s.len() - self.pos
    }
    /// The next `n` bytes (after the `skip` bytes of a header), consuming `skip + n`.
    fn take(&mut self, skip: usize, n: usize) -> Result<&'a [u8], DecErr> {
        if self.left() < skip || self.left() - skip < n {
            return Err(DecErr::Eof);
        }
        let b = &self.s[self.pos + skip..self.pos + skip + n];
        self.pos += skip + n;
        Ok(b)
    }
    fn be(&mut self, n: usize) -> Result<u64, DecErr> {
        let b = self.take(1, n)?;
        Ok(b.iter().fold(0u64, |acc, &x| (acc << 8) | x as u64))
    }
}

/// What one header decodes to.
enum Item {
    Value(Value),
    Array(u64),
    Map(u64),
}

fn read_item(lua: &Lua, c: &mut Cursor<'_>) -> Result<Item, DecErr> {
    let b = c.s[c.pos];
    let num = |n: f64| Ok(Item::Value(Value::Number(n)));
    let string =
        |lua: &Lua, s: &[u8]| -> Result<Item, DecErr> { Ok(Item::Value(Value::String(lua.create_string(s)?))) };
    match b {
        0xcc => num(c.be(1)? as f64),
        0xd0 => num(c.be(1)? as u8 as i8 as f64),
        0xcd => num(c.be(2)? as f64),
        0xd1 => num(c.be(2)? as u16 as i16 as f64),
        0xce => num(c.be(4)? as f64),
        0xd2 => num(c.be(4)? as u32 as i32 as f64),
        // Pushed as a lua_Integer (int64) in Redis: values above INT64_MAX wrap negative.
        0xcf | 0xd3 => num(c.be(8)? as i64 as f64),
        0xc0 => {
            c.pos += 1;
            Ok(Item::Value(Value::Nil))
        }
        0xc2 | 0xc3 => {
            c.pos += 1;
            Ok(Item::Value(Value::Boolean(b == 0xc3)))
        }
        0xca => num(f32::from_bits(c.be(4)? as u32) as f64),
        0xcb => num(f64::from_bits(c.be(8)?)),
        0xd9 => {
            let l = *c.s.get(c.pos + 1).ok_or(DecErr::Eof)? as usize;
            let s = c.take(2, l)?;
            string(lua, s)
        }
        0xda => {
            let h = c.s.get(c.pos + 1..c.pos + 3).ok_or(DecErr::Eof)?;
            let l = u16::from_be_bytes([h[0], h[1]]) as usize;
            let s = c.take(3, l)?;
            string(lua, s)
        }
        0xdb => {
            let l = c.be(4)? as usize;
            let s = c.take(0, l)?;
            string(lua, s)
        }
        0xdc => Ok(Item::Array(c.be(2)?)),
        0xdd => Ok(Item::Array(c.be(4)?)),
        0xde => Ok(Item::Map(c.be(2)?)),
        0xdf => Ok(Item::Map(c.be(4)?)),
        _ if b & 0x80 == 0 => {
            c.pos += 1;
            num(b as f64)
        }
        _ if b & 0xe0 == 0xe0 => {
            c.pos += 1;
            num(b as i8 as f64)
        }
        _ if b & 0xe0 == 0xa0 => {
            let s = c.take(1, (b & 0x1f) as usize)?;
            string(lua, s)
        }
        _ if b & 0xf0 == 0x90 => {
            c.pos += 1;
            Ok(Item::Array((b & 0xf) as u64))
        }
        _ if b & 0xf0 == 0x80 => {
            c.pos += 1;
            Ok(Item::Map((b & 0xf) as u64))
        }
        _ => Err(DecErr::BadFmt),
    }
}

/// `lua_settable` on a fresh table: a nil or NaN key raises, with no position (the running
/// function is the C one).
fn set(lua: &Lua, p: &Pending, t: &Table, k: Value, v: Value) -> Result<(), DecErr> {
    let bad = match &k {
        Value::Nil => Some("table index is nil"),
        Value::Number(n) if n.is_nan() => Some("table index is NaN"),
        _ => None,
    };
    if let Some(msg) = bad {
        return Err(DecErr::Lua(raise_value(p, Value::String(lua.create_string(msg)?))));
    }
    t.raw_set(k, v)?;
    Ok(())
}

/// Decodes one top-level value, iteratively (nesting is bounded only by the stack accounting),
/// while the C version would use `top` stack slots before pushing it.
fn decode(lua: &Lua, p: &Pending, c: &mut Cursor<'_>, top: usize) -> Result<Value, DecErr> {
    let mut open: Vec<Open> = Vec::new();
    loop {
        let at = open.last().map_or(top, Open::child_top);
        if c.left() == 0 {
            return Err(DecErr::Eof);
        }
        check_stack(lua, p, at, 1, TOO_MANY)?;
        let v = match read_item(lua, c)? {
            Item::Value(v) => v,
            Item::Array(n) => {
                let t = lua.create_table()?;
                check_stack(lua, p, at + 1, 1, "in function mp_decode_to_lua_array")?;
                if n > 0 {
                    open.push(Open::Array { t, next: 1, left: n, top: at });
                    continue;
                }
                Value::Table(t)
            }
            Item::Map(n) => {
                let t = lua.create_table()?;
                if n > 0 {
                    open.push(Open::MapKey { t, left: n, top: at });
                    continue;
                }
                Value::Table(t)
            }
        };
        if let Some(v) = hand_up(lua, p, &mut open, v)? {
            return Ok(v);
        }
    }
}

/// Gives a decoded value to the innermost open container; a container this completes is handed up
/// in turn. Returns the top-level value once nothing is left open.
fn hand_up(lua: &Lua, p: &Pending, open: &mut Vec<Open>, mut v: Value) -> Result<Option<Value>, DecErr> {
    loop {
        let Some(o) = open.pop() else { return Ok(Some(v)) };
        let next = match o {
            Open::Array { t, next, left, top } => {
                set(lua, p, &t, Value::Number(next as f64), v)?;
                Open::Array { t, next: next + 1, left: left - 1, top }
            }
            Open::MapKey { t, left, top } => Open::MapVal { t, key: v, left, top },
            Open::MapVal { t, key, left, top } => {
                set(lua, p, &t, key, v)?;
                Open::MapKey { t, left: left - 1, top }
            }
        };
        if !next.done() {
            open.push(next);
            return Ok(None);
        }
        v = Value::Table(match next {
            Open::Array { t, .. } | Open::MapKey { t, .. } | Open::MapVal { t, .. } => t,
        });
    }
}

/// `mp_unpack_full`: decodes up to `limit` values from `offset` (all of them when both are 0, then
/// without the leading next-offset result). `base` is the stack slots the C function holds.
///
/// mlua keeps the `nargs` arguments on the stack and wants one spare slot when returning results,
/// one more than the C version needs: the largest result count Redis allows fails here, with the
/// error Redis gives one value later.
fn unpack_full(lua: &Lua, p: &Pending, s: &[u8], limit: i64, offset: i64, base: usize, nargs: usize) -> R {
    let len = s.len();
    let decode_all = limit == 0 && offset == 0;
    if offset < 0 || limit < 0 {
        let msg = format!("Invalid request to unpack with offset of {} and limit of {}.", offset as i32, len as i32);
        return Err(raise_bytes(lua, p, msg.as_bytes()));
    }
    if offset as u64 > len as u64 {
        let msg = format!("Start offset {} greater than input length {}.", offset as i32, len as i32);
        return Err(raise_bytes(lua, p, msg.as_bytes()));
    }
    let limit = if decode_all { i32::MAX as i64 } else { limit };
    let mut c = Cursor { s, pos: offset as usize };
    let mut out = Vec::new();
    while c.left() > 0 && (out.len() as i64) < limit {
        match decode(lua, p, &mut c, base + out.len()) {
            Ok(v) => out.push(v),
            Err(DecErr::Eof) => return Err(raise_bytes(lua, p, b"Missing bytes in input.")),
            Err(DecErr::BadFmt) => return Err(raise_bytes(lua, p, b"Bad data format in input.")),
            Err(DecErr::Lua(e)) => return Err(e),
        }
    }
    if !decode_all {
        check_stack(lua, p, base + out.len(), 1, "in function mp_unpack_full")?;
        let next = if c.left() == 0 { -1.0 } else { c.pos as f64 };
        out.insert(0, Value::Number(next));
    }
    if nargs + out.len() + 1 > MAX_C_STACK {
        let what = if decode_all { TOO_MANY } else { "in function mp_unpack_full" };
        return Err(raise_bytes(lua, p, format!("stack overflow ({what})").as_bytes()));
    }
    Ok(MultiValue::from_vec(out))
}

/// `luaL_checklstring` (numbers are converted as Lua does).
fn check_string(lua: &Lua, p: &Pending, args: &MultiValue, i: usize) -> mlua::Result<Vec<u8>> {
    let v = args.get(i - 1);
    match v.map(|v| lua.coerce_string(v.clone())).transpose()?.flatten() {
        Some(s) => Ok(s.as_bytes().to_vec()),
        None => Err(type_error(lua, p, i as i64, "string", v)),
    }
}

/// `luaL_checkinteger` (truncating, as `lua_tointeger` does).
fn check_integer(lua: &Lua, p: &Pending, args: &MultiValue, i: usize) -> mlua::Result<i64> {
    let v = args.get(i - 1);
    match v.map(|v| lua.coerce_number(v.clone())).transpose()?.flatten() {
        Some(n) => Ok(c_long(n)),
        None => Err(type_error(lua, p, i as i64, "number", v)),
    }
}

/// `luaL_optinteger`.
fn opt_integer(lua: &Lua, p: &Pending, args: &MultiValue, i: usize, default: i64) -> mlua::Result<i64> {
    match args.get(i - 1) {
        None | Some(Value::Nil) => Ok(default),
        Some(_) => check_integer(lua, p, args, i),
    }
}

/// Builds the `cmsgpack` table.
pub fn cmsgpack(lua: &Lua, err: &Pending) -> mlua::Result<Table> {
    let t = lua.create_table()?;
    let e = err.clone();
    t.raw_set(
        "pack",
        lua.create_function(move |lua, args: MultiValue| {
            let nargs = args.len();
            if nargs == 0 {
                return Err(arg_error(lua, &e, 0, b"MessagePack pack needs input."));
            }
            if nargs * 2 > MAX_C_STACK {
                return Err(arg_error(lua, &e, 0, b"Too many arguments for MessagePack pack."));
            }
            let mut out = Vec::new();
            for (i, v) in args.iter().enumerate() {
                encode(lua, &e, v, 0, nargs + i + 1, &mut out)?;
            }
            Ok(MultiValue::from_vec(vec![Value::String(lua.create_string(&out)?)]))
        })?,
    )?;
    let e = err.clone();
    t.raw_set(
        "unpack",
        lua.create_function(move |lua, args: MultiValue| {
            let s = check_string(lua, &e, &args, 1)?;
            unpack_full(lua, &e, &s, 0, 0, args.len(), args.len())
        })?,
    )?;
    let e = err.clone();
    t.raw_set(
        "unpack_one",
        lua.create_function(move |lua, args: MultiValue| {
            let offset = opt_integer(lua, &e, &args, 2, 0)?;
            let s = check_string(lua, &e, &args, 1)?;
            unpack_full(lua, &e, &s, 1, offset, 1, args.len())
        })?,
    )?;
    let e = err.clone();
    t.raw_set(
        "unpack_limit",
        lua.create_function(move |lua, args: MultiValue| {
            let limit = check_integer(lua, &e, &args, 2)?;
            let offset = opt_integer(lua, &e, &args, 3, 0)?;
            let s = check_string(lua, &e, &args, 1)?;
            unpack_full(lua, &e, &s, limit, offset, 1, args.len())
        })?,
    )?;
    t.raw_set("_NAME", "cmsgpack")?;
    t.raw_set("_VERSION", "lua-cmsgpack 0.4.0")?;
    t.raw_set("_COPYRIGHT", "Copyright (C) 2012, Salvatore Sanfilippo")?;
    t.raw_set("_DESCRIPTION", "MessagePack C implementation for Lua")?;
    Ok(t)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testkit::{TestServer, show};

    /// `EVAL <script> 0` and the reply redis-server 7.0.15 gave (encodings, decodings, errors).
    const CASES: &[(&str, &str)] = &[
        (
            r#"local function hex(s) return (s:gsub('.', function(c) return string.format('%02x', c:byte()) end)) end return {hex(cmsgpack.pack(0)), hex(cmsgpack.pack(127)), hex(cmsgpack.pack(128)), hex(cmsgpack.pack(255)), hex(cmsgpack.pack(256)), hex(cmsgpack.pack(65535)), hex(cmsgpack.pack(65536)), hex(cmsgpack.pack(4294967295)), hex(cmsgpack.pack(4294967296))}"#,
            r#"["00", "7f", "cc80", "ccff", "cd0100", "cdffff", "ce00010000", "ceffffffff", "cf0000000100000000"]"#,
        ),
        (
            r#"local function hex(s) return (s:gsub('.', function(c) return string.format('%02x', c:byte()) end)) end return {hex(cmsgpack.pack(-1)), hex(cmsgpack.pack(-32)), hex(cmsgpack.pack(-33)), hex(cmsgpack.pack(-128)), hex(cmsgpack.pack(-129)), hex(cmsgpack.pack(-32768)), hex(cmsgpack.pack(-32769)), hex(cmsgpack.pack(-2147483648)), hex(cmsgpack.pack(-2147483649))}"#,
            r#"["ff", "e0", "d0df", "d080", "d1ff7f", "d18000", "d2ffff7fff", "d280000000", "d3ffffffff7fffffff"]"#,
        ),
        (
            r#"local function hex(s) return (s:gsub('.', function(c) return string.format('%02x', c:byte()) end)) end return {hex(cmsgpack.pack(2^63)), hex(cmsgpack.pack(-2^63)), hex(cmsgpack.pack(2^62)), hex(cmsgpack.pack(2^64)), hex(cmsgpack.pack(1/0)), hex(cmsgpack.pack(-1/0)), hex(cmsgpack.pack(0/0)), hex(cmsgpack.pack(-0.0)), hex(cmsgpack.pack(0.5)), hex(cmsgpack.pack(0.1)), hex(cmsgpack.pack(1e300)), hex(cmsgpack.pack(-2.5))}"#,
            r#"["ca5f000000", "d38000000000000000", "cf4000000000000000", "ca5f800000", "ca7f800000", "caff800000", "cbfff8000000000000", "00", "ca3f000000", "cb3fb999999999999a", "cb7e37e43c8800759c", "cac0200000"]"#,
        ),
        (
            r#"local function hex(s) return (s:gsub('.', function(c) return string.format('%02x', c:byte()) end)) end return {hex(cmsgpack.pack(string.rep('x',31))):sub(1,6), hex(cmsgpack.pack(string.rep('x',32))):sub(1,6), hex(cmsgpack.pack(string.rep('x',255))):sub(1,6), hex(cmsgpack.pack(string.rep('x',256))):sub(1,8), hex(cmsgpack.pack(string.rep('x',65535))):sub(1,8), hex(cmsgpack.pack(string.rep('x',65536))):sub(1,12)}"#,
            r#"["bf7878", "d92078", "d9ff78", "da010078", "daffff78", "db0001000078"]"#,
        ),
        (
            r#"local function hex(s) return (s:gsub('.', function(c) return string.format('%02x', c:byte()) end)) end local t = {} for i=1,16 do t[i]=i end local m = {} for i=1,16 do m['k'..i]=i end return {hex(cmsgpack.pack(t)):sub(1,8), hex(cmsgpack.pack(m)):sub(1,8), #cmsgpack.pack(t), #cmsgpack.pack(m)}"#,
            r#"["dc001001", "de0010a3", :19, :74]"#,
        ),
        (
            r#"local function hex(s) return (s:gsub('.', function(c) return string.format('%02x', c:byte()) end)) end local t = {} for i=1,70000 do t[i]=1 end local m = {} for i=1,70000 do m['k'..i]=i end return {hex(cmsgpack.pack(t)):sub(1,12), hex(cmsgpack.pack(m)):sub(1,12)}"#,
            r#"["dd0001117001", "df00011170a6"]"#,
        ),
        (
            r#"local function hex(s) return (s:gsub('.', function(c) return string.format('%02x', c:byte()) end)) end local a = {} local cur = a for i=1,20 do cur[1] = {} cur = cur[1] end return hex(cmsgpack.pack(a))"#,
            r#""91919191919191919191919191919191c0""#,
        ),
        (
            r#"local function hex(s) return (s:gsub('.', function(c) return string.format('%02x', c:byte()) end)) end local a = {} a[a] = 1 return hex(cmsgpack.pack(a))"#,
            r#""81818181818181818181818181818181c001010101010101010101010101010101""#,
        ),
        (
            r#"local function hex(s) return (s:gsub('.', function(c) return string.format('%02x', c:byte()) end)) end return hex(cmsgpack.pack({a={b={c=1}}, [true]=false}))"#,
            r#""82a16181a16281a16301c3c2""#,
        ),
        (
            r#"return cmsgpack.pack()"#,
            r#"-ERR user_script:1: bad argument #0 to 'pack' (MessagePack pack needs input.) script: 6bc235afa55de88253e203cc5fe5844792e25209, on @user_script:1."#,
        ),
        (
            r#"return cmsgpack.unpack()"#,
            r#"-ERR user_script:1: bad argument #1 to 'unpack' (string expected, got no value) script: 78103c0f3f46e5897cb5d2fad8dfb28bd38e0eeb, on @user_script:1."#,
        ),
        (
            r#"return cmsgpack.unpack({})"#,
            r#"-ERR user_script:1: bad argument #1 to 'unpack' (string expected, got table) script: 1bf8d78c3e2298775df6934cb05254905d2c8ddc, on @user_script:1."#,
        ),
        (r#"return {cmsgpack.unpack('')}"#, r#"[]"#),
        (r#"return {cmsgpack.unpack(123)}"#, r#"[:49, :50, :51]"#),
        (
            r#"return cmsgpack.unpack('\205\1')"#,
            r#"-ERR user_script:1: Missing bytes in input. script: 4679240a23ff9735759d614fd4b677cab6fb1b9a, on @user_script:1."#,
        ),
        (
            r#"return cmsgpack.unpack('\193')"#,
            r#"-ERR user_script:1: Bad data format in input. script: dc135bd7bc2955014f03280e151acf74360378e7, on @user_script:1."#,
        ),
        (
            r#"return cmsgpack.unpack('\199')"#,
            r#"-ERR user_script:1: Bad data format in input. script: 3e8a2988a8dcf2e987b1cf873b43b7da8b98a196, on @user_script:1."#,
        ),
        (
            r#"return cmsgpack.unpack('\212')"#,
            r#"-ERR user_script:1: Bad data format in input. script: 8a253f2223e7a20b85ec7f2b71b09ca615c47e1e, on @user_script:1."#,
        ),
        (
            r#"return cmsgpack.unpack('\217\5abc')"#,
            r#"-ERR user_script:1: Missing bytes in input. script: dec19d8744f002d57aef4042a9eb73a0adfa00ba, on @user_script:1."#,
        ),
        (
            r#"return cmsgpack.unpack('\147\1\2')"#,
            r#"-ERR user_script:1: Missing bytes in input. script: 4b51d5e2e41b7e6e0a00e22021a6bde9b48efac5, on @user_script:1."#,
        ),
        (
            r#"return cmsgpack.unpack('\129\1')"#,
            r#"-ERR user_script:1: Missing bytes in input. script: 5c1d1e5f5218fca4c8c908d06c87704124e3e5db, on @user_script:1."#,
        ),
        (
            r#"return cmsgpack.unpack('\129\192\1')"#,
            r#"-ERR table index is nil script: fc5ecea28c7c4519bafde8e9710d8f45499f865b, on @user_script:1."#,
        ),
        (r#"return {pcall(cmsgpack.unpack, '\129\192\1')}"#, r#"[(nil), "table index is nil"]"#),
        (r#"return cmsgpack.unpack('\145\192')"#, r#"[]"#),
        (r#"return {cmsgpack.unpack('\147\1\192\3')}"#, r#"[[:1]]"#),
        (r#"return {cmsgpack.unpack('\1\2\3\4')}"#, r#"[:1, :2, :3, :4]"#),
        (r#"return {cmsgpack.unpack_one('\1\2\3\4')}"#, r#"[:1, :1]"#),
        (r#"return {cmsgpack.unpack_one('\1\2\3\4', 3)}"#, r#"[:-1, :4]"#),
        (r#"return {cmsgpack.unpack_one('\1\2\3\4', 4)}"#, r#"[:-1]"#),
        (
            r#"return {cmsgpack.unpack_one('\1\2\3\4', 5)}"#,
            r#"-ERR user_script:1: Start offset 5 greater than input length 4. script: 9d909ac1dff607edc35a2441c71d621d0ce15321, on @user_script:1."#,
        ),
        (
            r#"return {cmsgpack.unpack_one('\1\2\3\4', -1)}"#,
            r#"-ERR user_script:1: Invalid request to unpack with offset of -1 and limit of 4. script: 55ae292c2e9d803b71b5372b59470b12a01a6ce9, on @user_script:1."#,
        ),
        (
            r#"return {cmsgpack.unpack_one('\1\2\3\4', 'x')}"#,
            r#"-ERR user_script:1: bad argument #2 to 'unpack_one' (number expected, got string) script: 58ebf086807e945fdb546e0de2613b673ac03e5d, on @user_script:1."#,
        ),
        (r#"return {cmsgpack.unpack_one('\1\2\3\4', '2')}"#, r#"[:3, :3]"#),
        (r#"return {cmsgpack.unpack_one('\1\2\3\4', 1.9)}"#, r#"[:2, :2]"#),
        (r#"return {cmsgpack.unpack_limit('\1\2\3\4', 2)}"#, r#"[:2, :1, :2]"#),
        (r#"return {cmsgpack.unpack_limit('\1\2\3\4', 2, 1)}"#, r#"[:3, :2, :3]"#),
        (r#"return {cmsgpack.unpack_limit('\1\2\3\4', 0)}"#, r#"[:1, :2, :3, :4]"#),
        (r#"return {cmsgpack.unpack_limit('\1\2\3\4', 0, 1)}"#, r#"[:1]"#),
        (
            r#"return {cmsgpack.unpack_limit('\1\2\3\4', -1)}"#,
            r#"-ERR user_script:1: Invalid request to unpack with offset of 0 and limit of 4. script: 6e42f4674e68071193f66d771af0f338c25828b4, on @user_script:1."#,
        ),
        (
            r#"return {cmsgpack.unpack_limit('\1\2\3\4')}"#,
            r#"-ERR user_script:1: bad argument #2 to 'unpack_limit' (number expected, got no value) script: a4e09360e72a4066d8c115a046b84f95da139297, on @user_script:1."#,
        ),
        (r#"return {cmsgpack.unpack_limit('\1\2\3\4', 10, 2)}"#, r#"[:-1, :3, :4]"#),
        (r#"return {cmsgpack.unpack_limit('', 1)}"#, r#"[:-1]"#),
        (r#"return {cmsgpack.unpack_one('')}"#, r#"[:-1]"#),
        (
            r#"return {cmsgpack.unpack('\204\255\208\255\205\1\2\209\255\254\206\255\255\255\255\210\255\255\255\254')}"#,
            r#"[:255, :-1, :258, :-2, :4294967295, :-2]"#,
        ),
        (
            r#"return {tostring(cmsgpack.unpack('\207\255\255\255\255\255\255\255\255')), tostring(cmsgpack.unpack('\207\128\0\0\0\0\0\0\0')), tostring(cmsgpack.unpack('\211\255\255\255\255\255\255\255\255')), tostring(cmsgpack.unpack('\211\128\0\0\0\0\0\0\0'))}"#,
            r#"["-1", "-9.2233720368548e+18", "-1", "-9.2233720368548e+18"]"#,
        ),
        (
            r#"return {tostring(cmsgpack.unpack('\202\63\192\0\0')), tostring(cmsgpack.unpack('\203\63\185\153\153\153\153\153\154')), tostring(cmsgpack.unpack('\202\127\192\0\0'))}"#,
            r#"["1.5", "0.1", "nan"]"#,
        ),
        (
            r#"return {cmsgpack.unpack('\218\0\3abc'), cmsgpack.unpack('\219\0\0\0\3abc'), cmsgpack.unpack('\219\0\0\0\4abc')}"#,
            r#"-ERR user_script:1: Missing bytes in input. script: 9ce6dd655fff8a3a7e5dc0f1ec66c3c70c905e8b, on @user_script:1."#,
        ),
        (r#"return cmsgpack.unpack('\220\0\2\1\2')"#, r#"[:1, :2]"#),
        (r#"return cmsgpack.unpack('\221\0\0\0\2\1\2')"#, r#"[:1, :2]"#),
        (r#"return cmsgpack.unpack('\222\0\1\1\2')"#, r#"[:2]"#),
        (r#"return cmsgpack.unpack('\223\0\0\0\1\161a\2')"#, r#"[]"#),
        (
            r#"return cmsgpack.unpack('\223\0\0\0\1\161a')"#,
            r#"-ERR user_script:1: Missing bytes in input. script: 17f106e9c71ce703ed66ae804f7356f9f149ac0d, on @user_script:1."#,
        ),
        (r#"return {cmsgpack.unpack('\255\224\127\128\144\160')}"#, r#"[:-1, :-32, :127, [], [], ""]"#),
        (
            r#"return cmsgpack.unpack('\196\1a')"#,
            r#"-ERR user_script:1: Bad data format in input. script: 6f8b916f0f73238529184461236248e68f5e450b, on @user_script:1."#,
        ),
        (r#"return {cmsgpack.pack_x}"#, r#"[]"#),
        (
            r#"return {cmsgpack._NAME, cmsgpack._VERSION, cmsgpack._COPYRIGHT, cmsgpack._DESCRIPTION}"#,
            r#"["cmsgpack", "lua-cmsgpack 0.4.0", "Copyright (C) 2012, Salvatore Sanfilippo", "MessagePack C implementation for Lua"]"#,
        ),
        (r#"return #{cmsgpack.unpack(string.rep('\1', 7990))}"#, r#":7990"#),
        (r#"return #{cmsgpack.unpack(string.rep('\1', 7996))}"#, r#":7996"#),
        (
            r#"return #{cmsgpack.unpack(string.rep('\1', 10000))}"#,
            r#"-ERR user_script:1: stack overflow (too many return values at once; use unpack_one or unpack_limit instead.) script: e44efe902b654376dd5e73699f8ae828e9c954a9, on @user_script:1."#,
        ),
        (
            r#"local p = cmsgpack.pack return p()"#,
            r#"-ERR user_script:1: bad argument #0 to 'p' (MessagePack pack needs input.) script: 5f3a0b79a9cdb4e141eefe8280732c6ead34a7d3, on @user_script:1."#,
        ),
        (
            r#"return cmsgpack:unpack_one()"#,
            r#"-ERR user_script:1: calling 'unpack_one' on bad self (string expected, got table) script: 5aef9a7ea7f281ea0fd5182d2eecddef3671927b, on @user_script:1."#,
        ),
        (
            r#"return cmsgpack.unpack_one(nil)"#,
            r#"-ERR user_script:1: bad argument #1 to 'unpack_one' (string expected, got nil) script: e72462cbf4071960e7c4dba6cbbb5c1e163ad6f1, on @user_script:1."#,
        ),
        (
            r#"return cmsgpack.unpack_limit('x', nil)"#,
            r#"-ERR user_script:1: bad argument #2 to 'unpack_limit' (number expected, got nil) script: 8482b0b4f3ddd0bf3645bd82bfbd23779cb5c134, on @user_script:1."#,
        ),
        (r#"return {cmsgpack.unpack(cmsgpack.pack({1,2,{a={true,false,'x'}}}))}"#, r#"[[:1, :2, []]]"#),
        (
            r#"return cjson.encode(cmsgpack.unpack(cmsgpack.pack({1,2,{a={true,false,'x'}}, m={x=1.5,[2]=3}})))"#,
            r#""{\"1\":1,\"2\":2,\"3\":{\"a\":[true,false,\"x\"]},\"m\":{\"2\":3,\"x\":1.5}}""#,
        ),
        (
            r#"return cmsgpack.unpack('\145\145\145\145\145\145\145\145\145\145\145\145\145\145\145\145\145\145\145\145\145\145\145\145\1')[1][1][1][1][1][1][1][1][1][1][1][1][1][1][1][1][1][1][1][1][1][1][1][1]"#,
            r#":1"#,
        ),
        (r#"return {cmsgpack.unpack('\130\1\2\1\3')}"#, r#"[[:3]]"#),
        (
            r#"return cmsgpack.unpack('\129\202\127\192\0\0\1')"#,
            r#"-ERR table index is NaN script: b840e88d9baea5d6ac6fd3b4a68eeeb37c89c52c, on @user_script:1."#,
        ),
        (
            r#"return cmsgpack.unpack('\129\192')"#,
            r#"-ERR user_script:1: Missing bytes in input. script: 3402079390d5c1d43a2b48b49fdd15fbdb9f1410, on @user_script:1."#,
        ),
        (r#"return type(cmsgpack.unpack(string.rep('\145', 3990)..'\1'))"#, r#""table""#),
        (
            r#"return type(cmsgpack.unpack(string.rep('\145', 4000)..'\1'))"#,
            r#"-ERR user_script:1: stack overflow (in function mp_decode_to_lua_array) script: 05cf43317f57ebd3f6748b0ef92ec1064a7ea4a3, on @user_script:1."#,
        ),
        (
            r#"local t = {} for i=1,4001 do t[i]=i end return cmsgpack.pack(unpack(t))"#,
            r#"-ERR user_script:1: bad argument #0 to 'pack' (Too many arguments for MessagePack pack.) script: 55b25a6b798aa4cfe49cc032db71a396e37cde4a, on @user_script:1."#,
        ),
        (
            r#"local t = {} for i=1,3999 do t[i]=i end t[4000] = {{1}} return #cmsgpack.pack(unpack(t))"#,
            r#"-ERR user_script:1: stack overflow (in function table_is_an_array) script: 9192c7b6f9618a7e2828a77201b3b932f4cece29, on @user_script:1."#,
        ),
        (
            r#"local t = {} for i=1,3998 do t[i]=i end t[3999] = {{a=1}} return #cmsgpack.pack(unpack(t))"#,
            r#"-ERR user_script:1: stack overflow (in function table_is_an_array) script: 5c76ad4cffb516b7309295edf667ba83acb0a901, on @user_script:1."#,
        ),
        (r#"local t = {} for i=1,4000 do t[i]=i end return #cmsgpack.pack(unpack(t))"#, r#":11618"#),
        (
            r#"local function hex(s) return (s:gsub('.', function(c) return string.format('%02x', c:byte()) end)) end return hex(cmsgpack.pack(cmsgpack.unpack(cmsgpack.pack({z=1,y=2,x=3,w={1,2},[10]=5,[1]=7, ['10']=false}))))"#,
            r#""870107a17902a17803a17a010a05a177920102a23130c2""#,
        ),
        (
            r#"local function hex(s) return (s:gsub('.', function(c) return string.format('%02x', c:byte()) end)) end return hex(cmsgpack.pack(redis.call, cjson.null, '12', 1.5, {[2^31]=1}, {[2^31-1]=1}))"#,
            r#""c0c0a23132ca3fc0000081ce800000000181ce7fffffff01""#,
        ),
        (r#"return {cmsgpack.unpack_one('\1\2', '1', 'x', 'y')}"#, r#"[:-1, :2]"#),
        (r#"return {cmsgpack.unpack_limit('\1\2\3', '1', nil)}"#, r#"[:1, :1]"#),
        (r#"return {cmsgpack.unpack_limit('\1\2\3', 2^40)}"#, r#"[:-1, :1, :2, :3]"#),
        (
            r#"return {cmsgpack.unpack_one('\1\2\3', 2^32+1)}"#,
            r#"-ERR user_script:1: Start offset 1 greater than input length 3. script: 3b5ace72e6879150e6774b0d5423abd2c0cc7be7, on @user_script:1."#,
        ),
        (
            r#"return {cmsgpack.unpack_one('\1\2\3', -2^32-1)}"#,
            r#"-ERR user_script:1: Invalid request to unpack with offset of -1 and limit of 3. script: 634b83054299bb1ef0a653ef5e46891f87a6b580, on @user_script:1."#,
        ),
        (r#"return {pcall(cmsgpack.unpack)}"#, r#"[(nil), "bad argument #1 to '?' (string expected, got no value)"]"#),
    ];

    #[test]
    fn scripts_reply_as_in_redis() {
        let srv = TestServer::new();
        let mut c = srv.client();
        for (script, want) in CASES {
            let got = c.cmd(&["EVAL", script, "0"]).map(|f| show(&f)).unwrap_or_default();
            assert_eq!(&got, want, "\n  script: {script}");
        }
    }

    #[test]
    fn number_encodings() {
        let enc = |n: f64| {
            let mut out = Vec::new();
            encode_number(n, &mut out);
            out
        };
        assert_eq!(enc(-0.0), [0x00]);
        assert_eq!(enc(-1.0), [0xff]);
        assert_eq!(enc(9_223_372_036_854_775_808.0), [0xca, 0x5f, 0, 0, 0]);
        assert_eq!(enc(-9_223_372_036_854_775_808.0), [0xd3, 0x80, 0, 0, 0, 0, 0, 0, 0]);
        assert_eq!(enc(0.1), [0xcb, 0x3f, 0xb9, 0x99, 0x99, 0x99, 0x99, 0x99, 0x9a]);
        assert!(!int64_equivalent(f64::NAN));
        assert!(!int64_equivalent(f64::INFINITY));
    }
}
