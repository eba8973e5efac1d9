//! The `struct` library of Redis's Lua (Roberto Ierusalimschy's lstruct), written in Rust.
//!
//! Formats as in Redis on x86-64 Linux: native order little-endian, `long` and `size_t` 8 bytes,
//! `int` 4, maximum alignment 8; integers up to 32 bytes, computed in 64 bits (wider sizes pad with
//! zero bytes when packing and keep only 64 bits when unpacking, as the C code does). Number-to-integer
//! casts follow what x86-64 does for out-of-range values (the C code has undefined behaviour there).
//! The C version's Lua stack use is accounted for: arguments missing from `pack` read as the `nil`
//! mark it pushes, and `unpack` fails with `stack overflow (too many results)` at the same count.

use super::libs::{Pending, arg_error, raise_bytes, type_error};
use mlua::{Lua, MultiValue, Table, Value};

/// `LUAI_MAXCSTACK`: the Lua stack slots a C function may use.
const MAX_C_STACK: usize = 8000;
/// `MAXINTSIZE`: the largest integral size.
const MAX_INT_SIZE: usize = 32;
/// `MAXALIGN` on x86-64.
const MAX_ALIGN: usize = 8;

/// `(long)d` as x86-64 computes it (`cvttsd2si`): NaN and out-of-range values give `i64::MIN`.
pub(super) fn c_long(d: f64) -> i64 {
    if d.is_nan() || !(-9_223_372_036_854_775_808.0..9_223_372_036_854_775_808.0).contains(&d) {
        i64::MIN
    } else {
        d as i64
    }
}

/// `(unsigned long)d` as gcc compiles it on x86-64.
fn c_ulong(d: f64) -> u64 {
    if d.is_nan() || d < 9_223_372_036_854_775_808.0 {
        c_long(d) as u64
    } else {
        (c_long(d - 9_223_372_036_854_775_808.0) as u64) ^ (1 << 63)
    }
}

/// The parse state of a format: position, byte order and maximum alignment.
struct Fmt<'a> {
    s: &'a [u8],
    i: usize,
    little: bool,
    align: usize,
}

impl Fmt<'_> {
    fn new(s: &[u8]) -> Fmt<'_> {
        // A C string: the format ends at the first NUL.
        let end = memchr::memchr(0, s).unwrap_or(s.len());
        Fmt { s: &s[..end], i: 0, little: true, align: 1 }
    }

    fn next_opt(&mut self) -> Option<u8> {
        let c = self.s.get(self.i).copied();
        self.i += 1;
        c
    }

    /// `getnum`: an optional decimal count.
    fn num(&mut self, lua: &Lua, p: &Pending, default: usize) -> mlua::Result<usize> {
        if !self.s.get(self.i).is_some_and(u8::is_ascii_digit) {
            return Ok(default);
        }
        let mut a: i32 = 0;
        while let Some(&d) = self.s.get(self.i).filter(|c| c.is_ascii_digit()) {
            let d = (d - b'0') as i32;
            a = match a.checked_mul(10).and_then(|x| x.checked_add(d)) {
                Some(x) => x,
                None => return Err(raise_bytes(lua, p, b"integral size overflow")),
            };
            self.i += 1;
        }
        Ok(a as usize)
    }

    /// `optsize`: the size of option `opt` (0 for options without one).
    fn size(&mut self, lua: &Lua, p: &Pending, opt: u8) -> mlua::Result<usize> {
        Ok(match opt {
            b'b' | b'B' | b'x' => 1,
            b'h' | b'H' => 2,
            b'l' | b'L' | b'T' | b'd' => 8,
            b'f' => 4,
            b'c' => self.num(lua, p, 1)?,
            b'i' | b'I' => {
                let sz = self.num(lua, p, 4)?;
                if sz > MAX_INT_SIZE {
                    let msg = format!("integral size {sz} is larger than limit of {MAX_INT_SIZE}");
                    return Err(raise_bytes(lua, p, msg.as_bytes()));
                }
                sz
            }
            _ => 0,
        })
    }

    /// `gettoalign`: padding before an item of `size` bytes at offset `len`.
    fn to_align(&self, len: usize, opt: u8, size: usize) -> usize {
        if size == 0 || opt == b'c' {
            return 0;
        }
        let size = size.min(self.align);
        size.wrapping_sub(len & (size - 1)) & (size - 1)
    }

    /// `controloptions`: spaces, byte order, alignment; anything else is an invalid option.
    fn control(&mut self, lua: &Lua, p: &Pending, opt: u8) -> mlua::Result<()> {
        match opt {
            b' ' => {}
            b'>' => self.little = false,
            b'<' => self.little = true,
            b'!' => {
                let a = self.num(lua, p, MAX_ALIGN)?;
                if !a.is_power_of_two() {
                    return Err(raise_bytes(lua, p, format!("alignment {a} is not a power of 2").as_bytes()));
                }
                self.align = a;
            }
            _ => {
                let mut msg = b"invalid format option '".to_vec();
                msg.push(opt);
                msg.push(b'\'');
                return Err(arg_error(lua, p, 1, &msg));
            }
        }
        Ok(())
    }
}

fn is_integer_opt(opt: u8) -> bool {
    matches!(opt, b'b' | b'B' | b'h' | b'H' | b'l' | b'L' | b'T' | b'i' | b'I')
}

/// Argument `i` (1-based) as `b_pack` sees it: past the arguments sits the `nil` it pushes.
fn pack_arg(args: &MultiValue, i: usize) -> Option<&Value> {
    const NIL: &Value = &Value::Nil;
    match args.get(i - 1) {
        Some(v) => Some(v),
        None if i == args.len() + 1 => Some(NIL),
        None => None,
    }
}

/// `luaL_checklstring` (numbers are converted as Lua does).
fn check_string(lua: &Lua, p: &Pending, v: Option<&Value>, i: usize) -> mlua::Result<Vec<u8>> {
    match v.map(|v| lua.coerce_string(v.clone())).transpose()?.flatten() {
        Some(s) => Ok(s.as_bytes().to_vec()),
        None => Err(type_error(lua, p, i as i64, "string", v)),
    }
}

/// `luaL_checknumber`.
fn check_number(lua: &Lua, p: &Pending, v: Option<&Value>, i: usize) -> mlua::Result<f64> {
    match v.map(|v| lua.coerce_number(v.clone())).transpose()?.flatten() {
        Some(n) => Ok(n),
        None => Err(type_error(lua, p, i as i64, "number", v)),
    }
}

fn pack(lua: &Lua, p: &Pending, args: &MultiValue) -> mlua::Result<Vec<u8>> {
    let fmt = check_string(lua, p, args.front(), 1)?;
    let mut f = Fmt::new(&fmt);
    let mut out = Vec::new();
    let mut arg = 2;
    let mut total = 0usize;
    while let Some(opt) = f.next_opt() {
        let mut size = f.size(lua, p, opt)?;
        let pad = f.to_align(total, opt, size);
        total = total.wrapping_add(pad);
        out.resize(out.len() + pad, 0);
        match opt {
            _ if is_integer_opt(opt) => {
                let n = check_number(lua, p, pack_arg(args, arg), arg)?;
                arg += 1;
                let mut v = if n < 0.0 { c_long(n) as u64 } else { c_ulong(n) };
                let mut buf = [0u8; MAX_INT_SIZE];
                for b in buf.iter_mut().take(size) {
                    *b = v as u8;
                    v >>= 8;
                }
                if !f.little {
                    buf[..size].reverse();
                }
                out.extend_from_slice(&buf[..size]);
            }
            b'x' => out.push(0),
            b'f' => {
                let n = check_number(lua, p, pack_arg(args, arg), arg)? as f32;
                arg += 1;
                out.extend_from_slice(&if f.little { n.to_le_bytes() } else { n.to_be_bytes() });
            }
            b'd' => {
                let n = check_number(lua, p, pack_arg(args, arg), arg)?;
                arg += 1;
                out.extend_from_slice(&if f.little { n.to_le_bytes() } else { n.to_be_bytes() });
            }
            b'c' | b's' => {
                let s = check_string(lua, p, pack_arg(args, arg), arg)?;
                arg += 1;
                if size == 0 {
                    size = s.len();
                }
                if s.len() < size {
                    // luaL_argcheck runs after the argument index moved on.
                    return Err(arg_error(lua, p, arg as i64, b"string too short"));
                }
                out.extend_from_slice(&s[..size]);
                if opt == b's' {
                    out.push(0);
                    size += 1;
                }
            }
            _ => f.control(lua, p, opt)?,
        }
        total = total.wrapping_add(size);
    }
    Ok(out)
}

/// `getinteger`: 64-bit accumulation (wider items keep their last 64 bits read), sign extension
/// from the item's top bit (the shift taken modulo 64, as x86 does).
fn get_integer(b: &[u8], little: bool, signed: bool) -> f64 {
    let fold = |acc: u64, &x: &u8| (acc << 8) | x as u64;
    let l = if little { b.iter().rev().fold(0, fold) } else { b.iter().fold(0, fold) };
    if !signed {
        return l as f64;
    }
    let shift = ((b.len() as i64) * 8 - 1) & 63;
    let mask = u64::MAX << shift;
    let l = if l & mask != 0 { l | mask } else { l };
    l as i64 as f64
}

fn unpack(lua: &Lua, p: &Pending, args: &MultiValue) -> mlua::Result<Vec<Value>> {
    let fmt = check_string(lua, p, args.front(), 1)?;
    let data = check_string(lua, p, args.get(1), 2)?;
    let ld = data.len();
    let pos = match args.get(2) {
        None | Some(Value::Nil) => 1,
        v => match v.map(|v| lua.coerce_number(v.clone())).transpose()?.flatten() {
            Some(n) => c_long(n),
            None => return Err(type_error(lua, p, 3, "number", v)),
        },
    };
    let mut pos = pos as u64 as usize;
    if pos == 0 {
        return Err(arg_error(lua, p, 3, b"offset must be 1 or greater"));
    }
    pos -= 1;
    let mut f = Fmt::new(&fmt);
    let mut out: Vec<Value> = Vec::new();
    while let Some(opt) = f.next_opt() {
        let mut size = f.size(lua, p, opt)?;
        pos = pos.wrapping_add(f.to_align(pos, opt, size));
        if size > ld || pos > ld - size {
            return Err(arg_error(lua, p, 2, b"data string too short"));
        }
        if args.len() + out.len() + 2 > MAX_C_STACK {
            return Err(raise_bytes(lua, p, b"stack overflow (too many results)"));
        }
        match opt {
            _ if is_integer_opt(opt) => {
                let n = get_integer(&data[pos..pos + size], f.little, opt.is_ascii_lowercase());
                out.push(Value::Number(n));
            }
            b'x' => {}
            b'f' => {
                let b: [u8; 4] = data[pos..pos + 4].try_into().unwrap_or_default();
                let n = if f.little { f32::from_le_bytes(b) } else { f32::from_be_bytes(b) };
                out.push(Value::Number(n as f64));
            }
            b'd' => {
                let b: [u8; 8] = data[pos..pos + 8].try_into().unwrap_or_default();
                let n = if f.little { f64::from_le_bytes(b) } else { f64::from_be_bytes(b) };
                out.push(Value::Number(n));
            }
            b'c' => {
                if size == 0 {
                    // The size is the previous result, if that is a number (or numeric string).
                    let prev = match out.last() {
                        Some(v) => lua.coerce_number(v.clone())?,
                        None => None,
                    };
                    let Some(n) = prev else {
                        return Err(raise_bytes(lua, p, b"format 'c0' needs a previous size"));
                    };
                    size = c_ulong(n) as usize;
                    out.pop();
                    if size > ld || pos > ld - size {
                        return Err(arg_error(lua, p, 2, b"data string too short"));
                    }
                }
                out.push(Value::String(lua.create_string(&data[pos..pos + size])?));
            }
            b's' => {
                let Some(len) = memchr::memchr(0, &data[pos..]) else {
                    return Err(raise_bytes(lua, p, b"unfinished string in data"));
                };
                size = len + 1;
                out.push(Value::String(lua.create_string(&data[pos..pos + len])?));
            }
            _ => f.control(lua, p, opt)?,
        }
        pos = pos.wrapping_add(size);
    }
    out.push(Value::Number(pos.wrapping_add(1) as i64 as f64));
    // mlua keeps the arguments on the stack and wants one spare slot to return results, one more
    // than C: the largest result count Redis allows fails here, with Redis's error.
    if args.len() + out.len() + 1 > MAX_C_STACK {
        return Err(raise_bytes(lua, p, b"stack overflow (too many results)"));
    }
    Ok(out)
}

fn size(lua: &Lua, p: &Pending, args: &MultiValue) -> mlua::Result<f64> {
    let fmt = check_string(lua, p, args.front(), 1)?;
    let mut f = Fmt::new(&fmt);
    let mut pos = 0usize;
    while let Some(opt) = f.next_opt() {
        let size = f.size(lua, p, opt)?;
        pos = pos.wrapping_add(f.to_align(pos, opt, size));
        if opt == b's' {
            return Err(arg_error(lua, p, 1, b"option 's' has no fixed size"));
        }
        if opt == b'c' && size == 0 {
            return Err(arg_error(lua, p, 1, b"option 'c0' has no fixed size"));
        }
        if !opt.is_ascii_alphanumeric() {
            f.control(lua, p, opt)?;
        }
        pos = pos.wrapping_add(size);
    }
    Ok(pos as i64 as f64)
}

/// Builds the `struct` table.
pub fn structlib(lua: &Lua, err: &Pending) -> mlua::Result<Table> {
    let t = lua.create_table()?;
    let e = err.clone();
    t.raw_set(
        "pack",
        lua.create_function(move |lua, args: MultiValue| {
            let out = pack(lua, &e, &args)?;
            Ok(Value::String(lua.create_string(&out)?))
        })?,
    )?;
    let e = err.clone();
    t.raw_set(
        "unpack",
        lua.create_function(move |lua, args: MultiValue| Ok(MultiValue::from_vec(unpack(lua, &e, &args)?)))?,
    )?;
    let e = err.clone();
    t.raw_set("size", lua.create_function(move |lua, args: MultiValue| Ok(Value::Number(size(lua, &e, &args)?)))?)?;
    Ok(t)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testkit::{TestServer, show};

    /// `EVAL <script> 0` and the reply redis-server 7.0.15 gave (formats, alignment, errors).
    const CASES: &[(&str, &str)] = &[
        (
            r#"local function hex(s) return (s:gsub('.', function(c) return string.format('%02x', c:byte()) end)) end return {hex(struct.pack('bBhHlLTiI', -1, 255, -2, 65535, -3, 2^40, 7, -4, 5)), hex(struct.pack('>bBhHlLTiI', -1, 255, -2, 65535, -3, 2^40, 7, -4, 5))}"#,
            r#"["fffffefffffffdffffffffffffff00000000000100000700000000000000fcffffff05000000", "fffffffefffffffffffffffffffd00000100000000000000000000000007fffffffc00000005"]"#,
        ),
        (
            r#"local function hex(s) return (s:gsub('.', function(c) return string.format('%02x', c:byte()) end)) end return {hex(struct.pack('i1i2i3i5i8i9i16', 1, -2, 3, -4, 5, -6, 7)), hex(struct.pack('>i3I9', -2, 2^63))}"#,
            r#"["01feff030000fcffffffff0500000000000000faffffffffffffff0007000000000000000000000000000000", "fffffe008000000000000000"]"#,
        ),
        (
            r#"local function hex(s) return (s:gsub('.', function(c) return string.format('%02x', c:byte()) end)) end return {hex(struct.pack('<L', 2^64)), hex(struct.pack('<L', 0/0)), hex(struct.pack('<l', -2^64)), hex(struct.pack('<L', 2^63)), hex(struct.pack('<L', 2^63+2^20)), hex(struct.pack('<l', -1.5)), hex(struct.pack('<L', 1.9)), hex(struct.pack('<L', 1e30)), hex(struct.pack('<l', -1/0)), hex(struct.pack('<L', 1/0))}"#,
            r#"["0000000000000000", "0000000000000080", "0000000000000080", "0000000000000080", "0000100000000080", "ffffffffffffffff", "0100000000000000", "0000000000000000", "0000000000000080", "0000000000000000"]"#,
        ),
        (
            r#"local function hex(s) return (s:gsub('.', function(c) return string.format('%02x', c:byte()) end)) end return {hex(struct.pack('fd', 1.5, 0.1)), hex(struct.pack('>fd', 1.5, 0.1)), hex(struct.pack('f', 1e300))}"#,
            r#"["0000c03f9a9999999999b93f", "3fc000003fb999999999999a", "0000807f"]"#,
        ),
        (
            r#"local function hex(s) return (s:gsub('.', function(c) return string.format('%02x', c:byte()) end)) end return {hex(struct.pack('!bi', 1, 2)), hex(struct.pack('!4bd', 1, 2)), hex(struct.pack('!2bdbh', 1, 2, 3, 4)), hex(struct.pack('!bi3', 1, 2)), hex(struct.pack('!8bi3bi5bi6', 1, 2,3,4,5,6)), hex(struct.pack('!b xh', 1, 2)), hex(struct.pack('!bcs', 1, 'a', 'bc'))}"#,
            r#"["0100000002000000", "010000000000000000000040", "0100000000000000004003000400", "010000020000", "0100000200000304000000000500060000000000", "01000200", "0161626300"]"#,
        ),
        (
            r#"local function hex(s) return (s:gsub('.', function(c) return string.format('%02x', c:byte()) end)) end return {hex(struct.pack('c3', 'abcdef')), hex(struct.pack('c0', 'abcdef')), hex(struct.pack('s', 'abc')), hex(struct.pack('sb', 'a\0b', 1)), hex(struct.pack('x')), hex(struct.pack('c', 'xy'))}"#,
            r#"["616263", "616263646566", "61626300", "6100620001", "00", "78"]"#,
        ),
        (
            r#"return struct.pack('c5', 'ab')"#,
            r#"-ERR user_script:1: bad argument #3 to 'pack' (string too short) script: cec53901ab5000b5eccda51f64e59e716bdfd4ba, on @user_script:1."#,
        ),
        (
            r#"return struct.pack('bc5', 1, 'ab')"#,
            r#"-ERR user_script:1: bad argument #4 to 'pack' (string too short) script: a52af14a8791d84ca73f46282ce25f618ce05687, on @user_script:1."#,
        ),
        (
            r#"return struct.pack('s', {})"#,
            r#"-ERR user_script:1: bad argument #2 to 'pack' (string expected, got table) script: 5cf444f359bf1c8e7834932265689f94ec6774d9, on @user_script:1."#,
        ),
        (
            r#"return struct.pack('b')"#,
            r#"-ERR user_script:1: bad argument #2 to 'pack' (number expected, got nil) script: fd20463fb1ef62aa4fafca9dfa083b276ab7d453, on @user_script:1."#,
        ),
        (
            r#"return struct.pack('b', 'x')"#,
            r#"-ERR user_script:1: bad argument #2 to 'pack' (number expected, got string) script: 4dd446e0275d5497e0d9aa9aba420730a071833c, on @user_script:1."#,
        ),
        (r#"return struct.pack('b', '12')"#, r#""\x0c""#),
        (
            r#"return struct.pack('z', 1)"#,
            r#"-ERR user_script:1: bad argument #1 to 'pack' (invalid format option 'z') script: b1a49a62278d772f47cfca6a679bc33c0fa64430, on @user_script:1."#,
        ),
        (
            r#"return struct.pack('b2', 1)"#,
            r#"-ERR user_script:1: bad argument #1 to 'pack' (invalid format option '2') script: 4d685574d8ee8771b79f50542c513c029b6a9863, on @user_script:1."#,
        ),
        (
            r#"return struct.pack('i33', 1)"#,
            r#"-ERR user_script:1: integral size 33 is larger than limit of 32 script: 0a76c071d82805e752befa6958961c98c39f358f, on @user_script:1."#,
        ),
        (
            r#"return struct.pack('i99999999999', 1)"#,
            r#"-ERR user_script:1: integral size overflow script: 55da9dc87c031781cab77cd7caa7180a2f334e7e, on @user_script:1."#,
        ),
        (
            r#"return struct.pack('!3b', 1)"#,
            r#"-ERR user_script:1: alignment 3 is not a power of 2 script: 24d4777a319f8eeaa696bfdeddfe012c9833d525, on @user_script:1."#,
        ),
        (
            r#"return struct.pack('!0b', 1)"#,
            r#"-ERR user_script:1: alignment 0 is not a power of 2 script: e4a2363cc48b43d29d0d9bf346a8831a2281cbdc, on @user_script:1."#,
        ),
        (
            r#"return struct.pack()"#,
            r#"-ERR user_script:1: bad argument #1 to 'pack' (string expected, got no value) script: c9b8aed4f0633591e6252db264bf8b86b82828d5, on @user_script:1."#,
        ),
        (
            r#"return struct.pack(12, 1)"#,
            r#"-ERR user_script:1: bad argument #1 to 'pack' (invalid format option '1') script: 1e6f677941d2e400128bbd862a35df6cc2b3a05e, on @user_script:1."#,
        ),
        (r#"return struct.pack('b\0b', 1, 2)"#, r#""\x01""#),
        (r#"return {struct.unpack('bBhH', '\255\255\254\255\255\255')}"#, r#"[:-1, :255, :-2, :65535, :7]"#),
        (r#"return {struct.unpack('>bBhH', '\255\255\254\255\255\255')}"#, r#"[:-1, :255, :-257, :65535, :7]"#),
        (
            r#"return {struct.unpack('<lL', '\255\255\255\255\255\255\255\255\255\255\255\255\255\255\255\255')}"#,
            r#"[:-1, :-9223372036854775808, :17]"#,
        ),
        (r#"return {tostring(struct.unpack('<L', '\0\0\0\0\0\0\0\128'))}"#, r#"["9.2233720368548e+18"]"#),
        (r#"return {struct.unpack('<i3>i3', '\255\255\255\255\255\254')}"#, r#"[:-1, :-2, :7]"#),
        (r#"return {struct.unpack('<i9', '\255\255\255\255\255\255\255\255\1')}"#, r#"[:-1, :10]"#),
        (r#"return {struct.unpack('>i9', '\1\255\255\255\255\255\255\255\255')}"#, r#"[:-1, :10]"#),
        (r#"return {struct.unpack('<i9', '\1\0\0\0\0\0\0\0\255')}"#, r#"[:1, :10]"#),
        (r#"return {struct.unpack('>I9', '\1\0\0\0\0\0\0\0\255')}"#, r#"[:255, :10]"#),
        (r#"return {struct.unpack('<i12', '\255\255\255\255\255\255\255\127\0\0\0\0')}"#, r#"[:-1, :13]"#),
        (r#"return {struct.unpack('<i0', '')}"#, r#"[:0, :1]"#),
        (
            r#"return {tostring(struct.unpack('f', '\0\0\192\63')), tostring(struct.unpack('>d', '\63\185\153\153\153\153\153\154'))}"#,
            r#"["1.5", "0.1"]"#,
        ),
        (
            r#"return {struct.unpack('c3c0', '3abcdefg')}"#,
            r#"-ERR user_script:1: format 'c0' needs a previous size script: 83d95a7940cd7f92de036a22926b01c0186bb981, on @user_script:1."#,
        ),
        (r#"return {struct.unpack('bc0', '\3abcdefg')}"#, r#"["abc", :5]"#),
        (r#"return {struct.unpack('c1c0', '3abcdefg')}"#, r#"["abc", :5]"#),
        (
            r#"return {struct.unpack('c0', 'abc')}"#,
            r#"-ERR user_script:1: format 'c0' needs a previous size script: b3fd8e7c8bb6ee20854fafea5b84014791ec5cf5, on @user_script:1."#,
        ),
        (
            r#"return {struct.unpack('bc0', '\9abc')}"#,
            r#"-ERR user_script:1: bad argument #2 to 'unpack' (data string too short) script: 2ca8a7c0e82d71d35f5a82edebe08cc4e65da9d8, on @user_script:1."#,
        ),
        (
            r#"return {struct.unpack('s', 'abc')}"#,
            r#"-ERR user_script:1: unfinished string in data script: 492b42cd22537e0bb82c111843dde3f2c69bafe9, on @user_script:1."#,
        ),
        (r#"return {struct.unpack('ssb', 'ab\0\0c')}"#, r#"["ab", "", :99, :6]"#),
        (r#"return {struct.unpack('b', 'abc', 2)}"#, r#"[:98, :3]"#),
        (r#"return {struct.unpack('b', 'abc', 3)}"#, r#"[:99, :4]"#),
        (
            r#"return {struct.unpack('b', 'abc', 4)}"#,
            r#"-ERR user_script:1: bad argument #2 to 'unpack' (data string too short) script: 497ccd0cb357739ee2c61753c141f871f79d4fab, on @user_script:1."#,
        ),
        (
            r#"return {struct.unpack('x', 'abc', 4)}"#,
            r#"-ERR user_script:1: bad argument #2 to 'unpack' (data string too short) script: a7e70a3669f0b25f3851e8cc15d5ffbc6d84d4ab, on @user_script:1."#,
        ),
        (
            r#"return {struct.unpack('s', 'abc', 4)}"#,
            r#"-ERR user_script:1: unfinished string in data script: 0aec7f1eb629c16c087a514ba3db6a43e2fa3158, on @user_script:1."#,
        ),
        (r#"return {struct.unpack('', 'abc', 4)}"#, r#"[:4]"#),
        (r#"return {struct.unpack('', 'abc', 5)}"#, r#"[:5]"#),
        (
            r#"return {struct.unpack('b', 'abc', 0)}"#,
            r#"-ERR user_script:1: bad argument #3 to 'unpack' (offset must be 1 or greater) script: 79de5b09e3b045084f761eb72f7ae8f435666337, on @user_script:1."#,
        ),
        (
            r#"return {struct.unpack('b', 'abc', -1)}"#,
            r#"-ERR user_script:1: bad argument #2 to 'unpack' (data string too short) script: a99362aa05fa96318d668c42e37cbc7b78d13a09, on @user_script:1."#,
        ),
        (
            r#"return {struct.unpack('b', 'abc', 'x')}"#,
            r#"-ERR user_script:1: bad argument #3 to 'unpack' (number expected, got string) script: 8b4c56e914adc19984ed1b3d14c6b4f46e3c68b5, on @user_script:1."#,
        ),
        (r#"return {struct.unpack('b', 'abc', '2')}"#, r#"[:98, :3]"#),
        (r#"return {struct.unpack('b', 'abc', 1.7)}"#, r#"[:97, :2]"#),
        (r#"return {struct.unpack('!bi', '\1\0\0\0\2\0\0\0')}"#, r#"[:1, :2, :9]"#),
        (
            r#"return {struct.unpack('!bi', '\1\0\0\0\2\0\0')}"#,
            r#"-ERR user_script:1: bad argument #2 to 'unpack' (data string too short) script: 53494cd50efac85f1177207610c5d76568e3beba, on @user_script:1."#,
        ),
        (
            r#"return {struct.unpack('b')}"#,
            r#"-ERR user_script:1: bad argument #2 to 'unpack' (string expected, got no value) script: 6525302830df3d67940cd767f77af1613a3665b4, on @user_script:1."#,
        ),
        (r#"return {struct.unpack('b', 12)}"#, r#"[:49, :2]"#),
        (
            r#"return {struct.unpack('q', 'abc')}"#,
            r#"-ERR user_script:1: bad argument #1 to 'unpack' (invalid format option 'q') script: 06ac1d89304ecb919d42278bb60041542ec99f8e, on @user_script:1."#,
        ),
        (r#"return {struct.unpack('!bxxh', '\1\0\0\0\2\0')}"#, r#"[:1, :2, :7]"#),
        (
            r#"return {struct.size('bhilTfdxc5'), struct.size('!bhilTfdxc5'), struct.size('!4bd'), struct.size('z'), struct.size('b2'), struct.size('i7'), struct.size('')}"#,
            r#"[:41, :46, :12, :0, :1, :7, :0]"#,
        ),
        (
            r#"return struct.size('s')"#,
            r#"-ERR user_script:1: bad argument #1 to 'size' (option 's' has no fixed size) script: a2a0525826ab7939ccd3f54427a862205642f28f, on @user_script:1."#,
        ),
        (
            r#"return struct.size('c0')"#,
            r#"-ERR user_script:1: bad argument #1 to 'size' (option 'c0' has no fixed size) script: 18f217e7d560de92703dc71e9797e043b536e0e6, on @user_script:1."#,
        ),
        (r#"return struct.size('bc')"#, r#":2"#),
        (
            r#"return struct.size('!3')"#,
            r#"-ERR user_script:1: alignment 3 is not a power of 2 script: e85d1ac33cd35488c9a4f9b4f97cb56bbfae9248, on @user_script:1."#,
        ),
        (
            r#"return struct.size('?')"#,
            r#"-ERR user_script:1: bad argument #1 to 'size' (invalid format option '?') script: 7bbb71570e714600c71d9cc568bccd7730051b1f, on @user_script:1."#,
        ),
        (
            r#"return struct.size()"#,
            r#"-ERR user_script:1: bad argument #1 to 'size' (string expected, got no value) script: 4c30ee4bce24a141420f334922489017312786e7, on @user_script:1."#,
        ),
        (r#"return struct.size(' <>!')"#, r#":0"#),
        (
            r#"return {struct.unpack('c2147483647', 'abc')}"#,
            r#"-ERR user_script:1: bad argument #2 to 'unpack' (data string too short) script: 7a46e84d4d2b2cb7912bb8b74fab3077238a50df, on @user_script:1."#,
        ),
        (
            r#"return struct.pack('c2147483648', 'a')"#,
            r#"-ERR user_script:1: integral size overflow script: 09631919f28a2e546344b038ddcc76b31aeaa3d2, on @user_script:1."#,
        ),
        (
            r#"local s = struct return s.size('s')"#,
            r#"-ERR user_script:1: bad argument #1 to 'size' (option 's' has no fixed size) script: dcbfeaa15dbbff5604dbd296d9935aa7a270cd6a, on @user_script:1."#,
        ),
        (
            r#"return struct:size()"#,
            r#"-ERR user_script:1: calling 'size' on bad self (string expected, got table) script: 3300cb393cd4721f68c3fa450407c2b46bbc1b15, on @user_script:1."#,
        ),
        (r#"return {pcall(struct.size, 's')}"#, r#"[(nil), "bad argument #1 to '?' (option 's' has no fixed size)"]"#),
        (
            r#"return #{struct.unpack(string.rep('b', 7998), string.rep('a', 8000))}"#,
            r#"-ERR user_script:1: stack overflow (too many results) script: 3b176f270818cf338229c5f26a8e7a1943a1bed9, on @user_script:1."#,
        ),
        (
            r#"return {pcall(struct.pack, 'i', 'x')}"#,
            r#"[(nil), "bad argument #2 to '?' (number expected, got string)"]"#,
        ),
        (
            r#"return {struct.pack('bbb', 1)}"#,
            r#"-ERR user_script:1: bad argument #3 to 'pack' (number expected, got nil) script: 25929c234c38ed36ac5d4da7047183221ac7150a, on @user_script:1."#,
        ),
        (
            r#"return {struct.pack('bcb', 1)}"#,
            r#"-ERR user_script:1: bad argument #3 to 'pack' (string expected, got nil) script: a09e218b768ce7ba5572973f875443fd997edddc, on @user_script:1."#,
        ),
        (
            r#"return {struct.unpack('>h<h!2bi3', struct.pack('>h<h!2bi3', 1000, -1000, 5, -77))}"#,
            r#"[:1000, :-1000, :5, :-77, :10]"#,
        ),
        (r#"return {struct.unpack('c3', 'abc'), struct.size('!4c3i'), struct.size('!4i3bi3')}"#, r#"["abc", :8, :9]"#),
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
    fn c_casts_follow_x86_64() {
        assert_eq!(c_long(f64::NAN), i64::MIN);
        assert_eq!(c_long(1e30), i64::MIN);
        assert_eq!(c_long(-1.9), -1);
        assert_eq!(c_ulong(18_446_744_073_709_551_616.0), 0);
        assert_eq!(c_ulong(f64::NAN), 1 << 63);
        assert_eq!(c_ulong(9_223_372_036_854_775_808.0), 1 << 63);
        assert_eq!(get_integer(&[0xff; 9], true, true), -1.0);
        assert_eq!(get_integer(&[0, 0, 0, 0, 0, 0, 0, 0x80], true, false), 9_223_372_036_854_775_808.0);
    }
}
