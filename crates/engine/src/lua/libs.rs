//! The libraries Redis bundles with its Lua (`bit`, `cjson`, `struct`, `cmsgpack`), written in Rust.
//! Functions report errors as `(ERR, message)`; the bootstrap's wrappers raise them with the
//! caller's position, as `luaL_error` does in the C originals.

use mlua::{LightUserData, Lua, MultiValue, Table, Value};
use parking_lot::Mutex;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

type R = mlua::Result<MultiValue>;

/// Where a Rust function leaves the Lua value it raises: mlua would wrap a callback's error in a
/// userdata, so the bootstrap's error handler and `pcall` pick the real value up from here.
pub type Pending = Arc<Mutex<Option<Value>>>;

/// Raises `v` as the Lua error of the current callback.
pub fn raise_value(p: &Pending, v: Value) -> mlua::Error {
    *p.lock() = Some(v);
    mlua::Error::runtime("latch: pending script error")
}

/// `luaL_where(L, 1)`: the caller's `chunk:line: ` prefix.
pub fn where_prefix(lua: &Lua) -> String {
    lua.inspect_stack(1, |d| {
        let line = d.current_line().map(|l| l as i64).unwrap_or(-1);
        let src = d.source().short_src.map(|s| s.into_owned()).unwrap_or_default();
        if line > 0 { format!("{src}:{line}: ") } else { String::new() }
    })
    .unwrap_or_default()
}

/// Raises a string error with the caller's position, as `luaL_error` does.
pub fn raise_msg(lua: &Lua, p: &Pending, msg: &str) -> mlua::Error {
    match lua.create_string(format!("{}{msg}", where_prefix(lua))) {
        Ok(s) => raise_value(p, Value::String(s)),
        Err(e) => e,
    }
}

/// Raises a byte-string error with the caller's position, as `luaL_error` does.
pub fn raise_bytes(lua: &Lua, p: &Pending, msg: &[u8]) -> mlua::Error {
    let mut text = where_prefix(lua).into_bytes();
    text.extend_from_slice(msg);
    match lua.create_string(&text) {
        Ok(s) => raise_value(p, Value::String(s)),
        Err(e) => e,
    }
}

/// `luaL_argerror`: `bad argument #N to 'f' (msg)`, naming the function as the caller's code
/// does (`?` when unknown; `calling 'f' on bad self` for a method call's receiver).
pub fn arg_error(lua: &Lua, p: &Pending, narg: i64, msg: &[u8]) -> mlua::Error {
    let (name, method) = lua
        .inspect_stack(0, |d| {
            let n = d.names();
            (n.name.map(|s| s.into_owned()), n.name_what == Some("method"))
        })
        .unwrap_or((None, false));
    let name = name.unwrap_or_else(|| "?".to_string());
    let mut narg = narg;
    let mut text = Vec::new();
    if method {
        narg -= 1;
        if narg == 0 {
            text.extend_from_slice(format!("calling '{name}' on bad self (").as_bytes());
        }
    }
    if text.is_empty() {
        text.extend_from_slice(format!("bad argument #{narg} to '{name}' (").as_bytes());
    }
    text.extend_from_slice(msg);
    text.push(b')');
    raise_bytes(lua, p, &text)
}

/// The name the running function was called by, as `luaL_argerror` finds it (`?` when unknown).
fn callee(lua: &Lua) -> String {
    lua.inspect_stack(0, |d| d.names().name.map(|s| s.into_owned())).flatten().unwrap_or_else(|| "?".into())
}

/// `luaL_typename` of argument `v` (`None`: the argument is absent).
pub fn arg_type_name(v: Option<&Value>) -> &'static str {
    match v {
        None => "no value",
        Some(Value::Nil) => "nil",
        Some(Value::Thread(_)) => "thread",
        Some(v) => type_name(v),
    }
}

/// `luaL_typerror`: `bad argument #N to 'f' (T expected, got U)`.
pub fn type_error(lua: &Lua, p: &Pending, narg: i64, expected: &str, got: Option<&Value>) -> mlua::Error {
    arg_error(lua, p, narg, format!("{expected} expected, got {}", arg_type_name(got)).as_bytes())
}

fn fail(lua: &Lua, err: &Pending, msg: String) -> R {
    Err(raise_msg(lua, err, &msg))
}

fn one(v: Value) -> R {
    Ok(MultiValue::from_vec(vec![v]))
}

fn num(v: &Value) -> Option<f64> {
    match v {
        Value::Number(n) => Some(*n),
        Value::Integer(i) => Some(*i as f64),
        Value::String(s) => {
            let s = s.to_str().ok()?;
            let t = s.trim();
            if let Some(h) = t.strip_prefix("0x").or_else(|| t.strip_prefix("0X")) {
                return u64::from_str_radix(h, 16).ok().map(|v| v as f64);
            }
            t.parse::<f64>().ok()
        }
        _ => None,
    }
}

fn type_name(v: &Value) -> &'static str {
    match v {
        Value::Nil => "no value",
        Value::Boolean(_) => "boolean",
        Value::Number(_) | Value::Integer(_) => "number",
        Value::String(_) => "string",
        Value::Table(_) => "table",
        Value::Function(_) => "function",
        _ => "userdata",
    }
}

/// LuaBitOp's `tobit`: round to nearest (ties to even) and keep the low 32 bits.
fn tobit(n: f64) -> i32 {
    (n + 6755399441055744.0).to_bits() as u32 as i32
}

/// Builds the `bit` table.
pub fn bit(lua: &Lua, err: &Pending) -> mlua::Result<Table> {
    let t = lua.create_table()?;
    type Op = fn(i32, i32) -> i32;
    let folds: &[(&str, Op)] = &[("band", |a, b| a & b), ("bor", |a, b| a | b), ("bxor", |a, b| a ^ b)];
    for &(name, op) in folds {
        let e = err.clone();
        t.raw_set(
            name,
            lua.create_function(move |lua, args: MultiValue| {
                let mut acc: Option<i32> = None;
                for (i, a) in args.iter().enumerate() {
                    let Some(n) = num(a) else {
                        return fail(
                            lua,
                            &e,
                            format!(
                                "bad argument #{} to '{}' (number expected, got {})",
                                i + 1,
                                callee(lua),
                                type_name(a)
                            ),
                        );
                    };
                    let v = tobit(n);
                    acc = Some(acc.map_or(v, |x| op(x, v)));
                }
                match acc {
                    Some(v) => one(Value::Number(v as f64)),
                    None => {
                        fail(lua, &e, format!("bad argument #1 to '{}' (number expected, got no value)", callee(lua)))
                    }
                }
            })?,
        )?;
    }
    let shifts: &[(&str, Op)] = &[
        ("lshift", |a, b| ((a as u32) << (b & 31)) as i32),
        ("rshift", |a, b| ((a as u32) >> (b & 31)) as i32),
        ("arshift", |a, b| a >> (b & 31)),
        ("rol", |a, b| (a as u32).rotate_left((b & 31) as u32) as i32),
        ("ror", |a, b| (a as u32).rotate_right((b & 31) as u32) as i32),
    ];
    for &(name, op) in shifts {
        let e = err.clone();
        t.raw_set(
            name,
            lua.create_function(move |lua, (a, b): (Value, Value)| {
                let Some(x) = num(&a) else {
                    return fail(
                        lua,
                        &e,
                        format!("bad argument #1 to '{}' (number expected, got {})", callee(lua), type_name(&a)),
                    );
                };
                let Some(y) = num(&b) else {
                    return fail(
                        lua,
                        &e,
                        format!("bad argument #2 to '{}' (number expected, got {})", callee(lua), type_name(&b)),
                    );
                };
                one(Value::Number(op(tobit(x), tobit(y)) as f64))
            })?,
        )?;
    }
    let e = err.clone();
    t.raw_set(
        "tobit",
        lua.create_function(move |lua, a: Value| match num(&a) {
            Some(x) => one(Value::Number(tobit(x) as f64)),
            None => {
                fail(lua, &e, format!("bad argument #1 to '{}' (number expected, got {})", callee(lua), type_name(&a)))
            }
        })?,
    )?;
    let e = err.clone();
    t.raw_set(
        "bnot",
        lua.create_function(move |lua, a: Value| match num(&a) {
            Some(x) => one(Value::Number(!tobit(x) as f64)),
            None => {
                fail(lua, &e, format!("bad argument #1 to '{}' (number expected, got {})", callee(lua), type_name(&a)))
            }
        })?,
    )?;
    let e = err.clone();
    t.raw_set(
        "bswap",
        lua.create_function(move |lua, a: Value| match num(&a) {
            Some(x) => one(Value::Number(tobit(x).swap_bytes() as f64)),
            None => {
                fail(lua, &e, format!("bad argument #1 to '{}' (number expected, got {})", callee(lua), type_name(&a)))
            }
        })?,
    )?;
    let e = err.clone();
    t.raw_set(
        "tohex",
        lua.create_function(move |lua, (a, n): (Value, Value)| {
            let Some(x) = num(&a) else {
                return fail(
                    lua,
                    &e,
                    format!("bad argument #1 to '{}' (number expected, got {})", callee(lua), type_name(&a)),
                );
            };
            let mut n = if matches!(n, Value::Nil) { 8 } else { num(&n).map(tobit).unwrap_or(8) };
            let upper = n < 0;
            if upper {
                n = n.saturating_neg();
            }
            let n = n.clamp(1, 8) as usize;
            let v = tobit(x) as u32;
            let s = if upper { format!("{v:08X}") } else { format!("{v:08x}") };
            one(Value::String(lua.create_string(&s[8 - n..])?))
        })?,
    )?;
    Ok(t)
}

/// C's `%.14g`, as cjson formats numbers.
fn fmt_num(n: f64) -> String {
    let mut out = Vec::new();
    resp::format_double_g(n, 14, &mut out);
    String::from_utf8_lossy(&out).into_owned()
}

fn json_escape(s: &[u8], out: &mut Vec<u8>) {
    out.push(b'"');
    for &c in s {
        match c {
            b'"' => out.extend_from_slice(b"\\\""),
            b'\\' => out.extend_from_slice(b"\\\\"),
            b'/' => out.extend_from_slice(b"\\/"),
            b'\n' => out.extend_from_slice(b"\\n"),
            b'\r' => out.extend_from_slice(b"\\r"),
            b'\t' => out.extend_from_slice(b"\\t"),
            8 => out.extend_from_slice(b"\\b"),
            12 => out.extend_from_slice(b"\\f"),
            c if c < 0x20 || c == 0x7f => out.extend_from_slice(format!("\\u{c:04x}").as_bytes()),
            c => out.push(c),
        }
    }
    out.push(b'"');
}

/// cjson settings changed by `cjson.encode_max_depth` and friends (global, as in Redis).
struct JsonCfg {
    encode_max_depth: AtomicUsize,
    decode_max_depth: AtomicUsize,
    encode_invalid_numbers: AtomicBool,
}

static JSON_CFG: JsonCfg = JsonCfg {
    encode_max_depth: AtomicUsize::new(1000),
    decode_max_depth: AtomicUsize::new(1000),
    encode_invalid_numbers: AtomicBool::new(false),
};

/// `LUAI_MAXCSTACK`: the most stack slots a C function may hold (`lua_checkstack` fails beyond).
const LUA_MAX_CSTACK: usize = 8000;

/// Encodes `v`, found inside `depth` tables whose traversal holds `used` slots of a C function's
/// Lua stack in Redis's cjson (the argument, then a value per array and a key and value per object).
/// Like cjson's `json_check_encode_depth`, a table past `encode_max_depth`, or one whose traversal
/// would not find 3 free slots on that stack, is "excessive nesting": the same bound Redis has, and
/// one that keeps this recursion shallow.
fn json_encode(v: &Value, depth: usize, used: usize, out: &mut Vec<u8>) -> Result<(), String> {
    match v {
        Value::Nil => out.extend_from_slice(b"null"),
        Value::LightUserData(p) if p.0.is_null() => out.extend_from_slice(b"null"),
        Value::Boolean(b) => out.extend_from_slice(if *b { b"true" } else { b"false" }),
        Value::Integer(i) => out.extend_from_slice(i.to_string().as_bytes()),
        Value::Number(n) => {
            if n.is_nan() || n.is_infinite() {
                if !JSON_CFG.encode_invalid_numbers.load(Ordering::Relaxed) {
                    return Err("Cannot serialise number: must not be NaN or Inf".into());
                }
                out.extend_from_slice(if n.is_nan() {
                    b"nan"
                } else if *n > 0.0 {
                    b"inf"
                } else {
                    b"-inf"
                });
                return Ok(());
            }
            out.extend_from_slice(fmt_num(*n).as_bytes())
        }
        Value::String(s) => json_escape(&s.as_bytes(), out),
        Value::Table(t) => {
            let depth = depth + 1;
            if depth > JSON_CFG.encode_max_depth.load(Ordering::Relaxed) || used + 3 > LUA_MAX_CSTACK {
                return Err(format!("Cannot serialise, excessive nesting ({depth})"));
            }
            // Array if every key is a positive integer; sparse arrays are padded with null.
            let mut max = 0usize;
            let mut count = 0usize;
            let mut is_array = true;
            for pair in t.pairs::<Value, Value>() {
                let (k, _) = pair.map_err(|e| e.to_string())?;
                count += 1;
                match k {
                    Value::Number(n) if n >= 1.0 && n.fract() == 0.0 => max = max.max(n as usize),
                    Value::Integer(i) if i >= 1 => max = max.max(i as usize),
                    _ => {
                        is_array = false;
                        break;
                    }
                }
            }
            if is_array && count > 0 && max > count * 2 && max > 10 {
                return Err("Cannot serialise table: excessively sparse array".into());
            }
            if is_array && count > 0 {
                out.push(b'[');
                for i in 1..=max {
                    if i > 1 {
                        out.push(b',');
                    }
                    let v: Value = t.raw_get(i).map_err(|e| e.to_string())?;
                    json_encode(&v, depth, used + 1, out)?;
                }
                out.push(b']');
            } else {
                out.push(b'{');
                let mut first = true;
                for pair in t.pairs::<Value, Value>() {
                    let (k, v) = pair.map_err(|e| e.to_string())?;
                    if !first {
                        out.push(b',');
                    }
                    first = false;
                    match &k {
                        Value::String(s) => json_escape(&s.as_bytes(), out),
                        Value::Number(n) => json_escape(fmt_num(*n).as_bytes(), out),
                        Value::Integer(i) => json_escape(i.to_string().as_bytes(), out),
                        _ => return Err("Cannot serialise table: table key must be a number or string".into()),
                    }
                    out.push(b':');
                    json_encode(&v, depth, used + 2, out)?;
                }
                out.push(b'}');
            }
        }
        other => return Err(format!("Cannot serialise {}: type not supported", type_name(other))),
    }
    Ok(())
}

/// cjson's `json_integer_option(l, 1, setting, 1, INT_MAX)`: no argument (or nil) reads the
/// setting, an integer in range (numbers truncate, numeric strings convert) sets it; either way the
/// setting is returned.
fn depth_option(lua: &Lua, err: &Pending, setting: &AtomicUsize, v: &Value) -> R {
    if !matches!(v, Value::Nil) {
        let Some(n) = num(v) else {
            return Err(type_error(lua, err, 1, "number", Some(v)));
        };
        let n = n.trunc();
        if !(1.0..=f64::from(i32::MAX)).contains(&n) {
            return Err(arg_error(lua, err, 1, b"expected integer between 1 and 2147483647"));
        }
        setting.store(n as usize, Ordering::Relaxed);
    }
    one(Value::Integer(setting.load(Ordering::Relaxed) as i64))
}

/// A token of cjson's decoder (`json_token_type_t`; whitespace is skipped, never returned).
#[derive(Clone, Copy, Debug, PartialEq)]
enum Tok {
    ObjBegin,
    ObjEnd,
    ArrBegin,
    ArrEnd,
    /// A string, unescaped onto the end of the parser's `tmp` buffer (from `str_start`).
    Str,
    Num(f64),
    Bool(bool),
    Null,
    Colon,
    Comma,
    End,
    /// A token cjson could not read, with its reason ("invalid token", "invalid number", ...).
    Error(&'static str),
}

impl Tok {
    /// What cjson's parse errors say was found: the type's name, or the reason of an error token.
    fn found(self) -> &'static str {
        match self {
            Tok::ObjBegin => "T_OBJ_BEGIN",
            Tok::ObjEnd => "T_OBJ_END",
            Tok::ArrBegin => "T_ARR_BEGIN",
            Tok::ArrEnd => "T_ARR_END",
            Tok::Str => "T_STRING",
            Tok::Num(_) => "T_NUMBER",
            Tok::Bool(_) => "T_BOOLEAN",
            Tok::Null => "T_NULL",
            Tok::Colon => "T_COLON",
            Tok::Comma => "T_COMMA",
            Tok::End => "T_END",
            Tok::Error(why) => why,
        }
    }
}

/// A token and its 0-based offset: where it starts, or for an error inside a string, where the
/// error is (cjson's `token->index`).
#[derive(Clone, Copy, Debug, PartialEq)]
struct Token {
    tok: Tok,
    index: usize,
}

/// `strncasecmp(s, word, word.len()) == 0`.
fn starts_with_ci(s: &[u8], word: &[u8]) -> bool {
    s.len() >= word.len() && s[..word.len()].eq_ignore_ascii_case(word)
}

fn hex_value(c: u8) -> Option<u64> {
    (c as char).to_digit(16).map(u64::from)
}

/// glibc's `strtod` on the start of `s` (which ends where the C string would): the value and how
/// many bytes it took, or `None` where `strtod` reads nothing. Leading whitespace is not skipped
/// (cjson only calls it on a sign, a digit, or the start of `inf`/`nan`).
fn strtod(s: &[u8]) -> Option<(f64, usize)> {
    let (neg, sign) = match s.first() {
        Some(b'-') => (true, 1),
        Some(b'+') => (false, 1),
        _ => (false, 0),
    };
    let (v, len) = strtod_unsigned(&s[sign..])?;
    Some((if neg { -v } else { v }, sign + len))
}

fn strtod_unsigned(s: &[u8]) -> Option<(f64, usize)> {
    let at = |i: usize| s.get(i).copied().unwrap_or(0);
    if starts_with_ci(s, b"inf") {
        return Some((f64::INFINITY, if starts_with_ci(s, b"infinity") { 8 } else { 3 }));
    }
    if starts_with_ci(s, b"nan") {
        // `nan(chars)`: the chars, read by `strtoull(.., 0)`, are the payload if all of them count.
        let mut bits = f64::NAN.to_bits();
        let mut len = 3;
        if at(3) == b'(' {
            let mut end = 4;
            while at(end).is_ascii_alphanumeric() || at(end) == b'_' {
                end += 1;
            }
            if at(end) == b')' {
                if let Some(payload) = strtoull_whole(&s[4..end]) {
                    bits |= payload & ((1 << 51) - 1);
                }
                len = end + 1;
            }
        }
        return Some((f64::from_bits(bits), len));
    }
    // "0x" with no hex digits after it is read as just the "0".
    if at(0) == b'0'
        && at(1) | 0x20 == b'x'
        && let Some((v, len)) = hex_float(&s[2..])
    {
        return Some((v, len + 2));
    }
    let digits = |from: usize| s[from.min(s.len())..].iter().take_while(|c| c.is_ascii_digit()).count();
    let int = digits(0);
    let mut len = int;
    if at(len) == b'.' {
        let frac = digits(len + 1);
        if int == 0 && frac == 0 {
            return None;
        }
        len += 1 + frac;
    } else if int == 0 {
        return None;
    }
    if at(len) | 0x20 == b'e' {
        let sign = usize::from(matches!(at(len + 1), b'+' | b'-'));
        let exp = digits(len + 1 + sign);
        if exp > 0 {
            len += 1 + sign + exp;
        }
    }
    // Rust's parser reads this grammar, rounding correctly as glibc does (overflow: inf).
    let v = std::str::from_utf8(&s[..len]).ok()?.parse::<f64>().ok()?;
    Some((v, len))
}

/// `strtoull(s, &end, 0)` when it reads all of `s` (`None` otherwise); past `u64::MAX` it saturates.
fn strtoull_whole(s: &[u8]) -> Option<u64> {
    let (radix, digits) = match s {
        [b'0', x, rest @ ..] if x | 0x20 == b'x' && rest.first().is_some_and(u8::is_ascii_hexdigit) => (16, rest),
        [b'0', ..] => (8, s),
        _ => (10, s),
    };
    let mut v: u64 = 0;
    for &c in digits {
        let d = (c as char).to_digit(radix)?;
        v = v.saturating_mul(u64::from(radix)).saturating_add(u64::from(d));
    }
    Some(v)
}

/// A hexadecimal float after its "0x" (`1F`, `1.8`, `.8p-3`...): its value, rounded to nearest
/// even as glibc rounds it, and its length; `None` without a hex digit.
fn hex_float(s: &[u8]) -> Option<(f64, usize)> {
    let at = |i: usize| s.get(i).copied().unwrap_or(0);
    // The value is mant * 2^exp, plus something below mant's last bit when `sticky`.
    let mut mant: u64 = 0;
    let mut exp: i64 = 0;
    let mut sticky = false;
    let mut any = false;
    let mut len = 0;
    let mut fraction = false;
    loop {
        if let Some(d) = hex_value(at(len)) {
            any = true;
            if mant >> 60 == 0 {
                mant = mant << 4 | d;
                if fraction {
                    exp -= 4;
                }
            } else {
                sticky |= d != 0;
                if !fraction {
                    exp += 4;
                }
            }
            len += 1;
        } else if at(len) == b'.' && !fraction {
            fraction = true;
            len += 1;
        } else {
            break;
        }
    }
    if !any {
        return None;
    }
    if at(len) | 0x20 == b'p' {
        let sign = usize::from(matches!(at(len + 1), b'+' | b'-'));
        let from = len + 1 + sign;
        let n = s[from.min(s.len())..].iter().take_while(|c| c.is_ascii_digit()).count();
        if n > 0 {
            let e = s[from..from + n].iter().fold(0i64, |e, c| (e * 10 + i64::from(c - b'0')).min(1 << 40));
            exp += if at(len + 1) == b'-' { -e } else { e };
            len = from + n;
        }
    }
    if mant == 0 {
        return Some((0.0, len));
    }
    // Normalise to a top bit at 63: the value's binary exponent is then 63 + exp. A double's 53
    // bits, the first bit past them, and whether any other is set:
    let lz = mant.leading_zeros();
    let mant = mant << lz;
    let top = 63 + exp - i64::from(lz);
    let m53 = mant >> 11;
    let first_past = mant >> 10 & 1 == 1;
    let more = mant & 0x3ff != 0 || sticky;
    let round = |kept: u64, half: bool, more: bool| kept + u64::from(half && (more || kept & 1 == 1));
    if top > 1023 {
        return Some((f64::INFINITY, len));
    }
    if top >= -1022 {
        // A normal number's hidden bit adds one to its exponent field, and a carry out of the
        // mantissa moves it up one more (to infinity past the largest finite).
        let bits = (((top + 1022) as u64) << 52) + round(m53, first_past, more);
        return Some((f64::from_bits(bits), len));
    }
    if top < -1075 {
        return Some((0.0, len));
    }
    // A subnormal: glibc shifts the 53 bits right and rounds on the bits shifted out, forgetting
    // the first bit past the 53 (so 0x1.00000000000018p-1070 is taken for a tie and rounds to
    // even). A carry out makes the smallest normal number.
    let shift = (-1022 - top) as u32;
    let half = m53 >> (shift - 1) & 1 == 1;
    let below = m53 & ((1 << (shift - 1)) - 1) != 0;
    let bits = round(m53 >> shift, half, below || more);
    Some((f64::from_bits(bits), len))
}

/// cjson's decoder: a tokenizer (`json_next_token`) and a recursive parser on top of it.
struct JsonParser<'a> {
    /// The input up to its first NUL: cjson reads a C string, so a NUL is the end (`T_END`).
    s: &'a [u8],
    i: usize,
    /// Unescaped strings: the last string token's from `str_start`, after the keys of the objects
    /// being read (each kept until its value is read, and only then made a Lua string, so the
    /// Lua references held while parsing are one per open container, as in cjson).
    tmp: Vec<u8>,
    str_start: usize,
}

impl<'a> JsonParser<'a> {
    fn new(data: &'a [u8]) -> Self {
        let end = data.iter().position(|&c| c == 0).unwrap_or(data.len());
        JsonParser { s: &data[..end], i: 0, tmp: Vec::new(), str_start: 0 }
    }
    /// The byte at `i`, or NUL past the end.
    fn at(&self, i: usize) -> u8 {
        self.s.get(i).copied().unwrap_or(0)
    }
    /// `json_next_token`: skips whitespace and reads one token. A bad token leaves `i` at the error.
    fn next_token(&mut self) -> Token {
        while matches!(self.at(self.i), b' ' | b'\t' | b'\n' | b'\r') {
            self.i += 1;
        }
        let index = self.i;
        let rest = &self.s[index..];
        let single = match self.at(index) {
            0 => return Token { tok: Tok::End, index },
            b'{' => Some(Tok::ObjBegin),
            b'}' => Some(Tok::ObjEnd),
            b'[' => Some(Tok::ArrBegin),
            b']' => Some(Tok::ArrEnd),
            b',' => Some(Tok::Comma),
            b':' => Some(Tok::Colon),
            _ => None,
        };
        if let Some(tok) = single {
            self.i += 1;
            return Token { tok, index };
        }
        let (tok, len) = match self.at(index) {
            b'"' => return self.string_token(),
            b'-' | b'0'..=b'9' => return self.number_token(),
            b't' if rest.starts_with(b"true") => (Tok::Bool(true), 4),
            b'f' if rest.starts_with(b"false") => (Tok::Bool(false), 5),
            b'n' if rest.starts_with(b"null") => (Tok::Null, 4),
            // With decode_invalid_numbers on (its default), what strict JSON would reject as a
            // number (`+1`, `inf`, `NaN`...) is still read as one, by `strtod`.
            b'+' => return self.number_token(),
            b'i' | b'I' | b'n' | b'N' if starts_with_ci(rest, b"inf") || starts_with_ci(rest, b"nan") => {
                return self.number_token();
            }
            _ => (Tok::Error("invalid token"), 0),
        };
        self.i += len;
        Token { tok, index }
    }
    /// `json_next_number_token`: whatever `strtod` reads at `i`.
    fn number_token(&mut self) -> Token {
        let index = self.i;
        match strtod(&self.s[index..]) {
            Some((n, len)) => {
                self.i += len;
                Token { tok: Tok::Num(n), index }
            }
            None => Token { tok: Tok::Error("invalid number"), index },
        }
    }
    /// `json_next_string_token`: the string at `i` (a `"`), unescaped onto `tmp`. Escapes are the
    /// JSON ones only, and `\u` escapes must be valid UTF-16 (a high surrogate followed by a low
    /// one); an error token's index is where the bad escape, or the end of the data, is.
    fn string_token(&mut self) -> Token {
        let bad = |at: usize, why: &'static str| Token { tok: Tok::Error(why), index: at };
        let index = self.i;
        self.str_start = self.tmp.len();
        self.i += 1;
        loop {
            let c = self.at(self.i);
            match c {
                0 => return bad(self.i, "unexpected end of string"),
                b'"' => {
                    self.i += 1;
                    return Token { tok: Tok::Str, index };
                }
                b'\\' => {
                    let plain = match self.at(self.i + 1) {
                        e @ (b'"' | b'\\' | b'/') => e,
                        b'b' => 8,
                        b'f' => 12,
                        b'n' => b'\n',
                        b'r' => b'\r',
                        b't' => b'\t',
                        b'u' => {
                            let Some((cp, len)) = self.unicode_escape() else {
                                return bad(self.i, "invalid unicode escape code");
                            };
                            let mut buf = [0u8; 4];
                            self.tmp.extend_from_slice(cp.encode_utf8(&mut buf).as_bytes());
                            self.i += len;
                            continue;
                        }
                        _ => return bad(self.i, "invalid escape code"),
                    };
                    self.tmp.push(plain);
                    self.i += 2;
                }
                c => {
                    self.tmp.push(c);
                    self.i += 1;
                }
            }
        }
    }
    /// The `\uXXXX` escape (or surrogate pair `\uD8xx\uDCxx`) at `self.i`, and its length in bytes.
    fn unicode_escape(&self) -> Option<(char, usize)> {
        let hex4 = |at: usize| {
            let h = self.s.get(at..at + 4)?;
            h.iter().try_fold(0u32, |v, &c| Some(v << 4 | hex_value(c)? as u32))
        };
        let unit = hex4(self.i + 2)?;
        if unit & 0xF800 != 0xD800 {
            return Some((char::from_u32(unit)?, 6));
        }
        if unit & 0x400 != 0 || self.s.get(self.i + 6..self.i + 8) != Some(b"\\u") {
            return None;
        }
        let low = hex4(self.i + 8)?;
        if low & 0xFC00 != 0xDC00 {
            return None;
        }
        Some((char::from_u32((((unit & 0x3FF) << 10) | (low & 0x3FF)) + 0x10000)?, 12))
    }
    /// `json_throw_parse_error`'s message.
    fn parse_error(expected: &str, t: Token) -> String {
        format!("Expected {expected} but found {} at character {}", t.tok.found(), t.index + 1)
    }
    /// Entering the object or array whose opening token was just read, `depth` containers deep, with
    /// `used` slots of Redis's cjson's Lua stack held (the argument, a table per enclosing array, a
    /// table and a key per enclosing object) and `slots` more needed: cjson's `json_decode_descend`,
    /// which counts containers only and reports the offset just past the opening token. The stack
    /// bound is Redis's too, and keeps this recursion shallow whatever `decode_max_depth` says.
    fn descend(&self, depth: usize, used: usize, slots: usize) -> Result<(), String> {
        if depth > JSON_CFG.decode_max_depth.load(Ordering::Relaxed) || used + slots > LUA_MAX_CSTACK {
            return Err(format!("Found too many nested data structures ({depth}) at character {}", self.i));
        }
        Ok(())
    }
    /// `json_process_value`: the value starting with token `t`, inside `depth` containers, which
    /// hold `used` stack slots (see [`Self::descend`]).
    fn value(&mut self, lua: &Lua, t: Token, depth: usize, used: usize) -> Result<Value, String> {
        let lua_err = |e: mlua::Error| e.to_string();
        match t.tok {
            Tok::Str => {
                let s = lua.create_string(&self.tmp[self.str_start..]).map_err(lua_err)?;
                self.tmp.truncate(self.str_start);
                Ok(Value::String(s))
            }
            Tok::Num(n) => Ok(Value::Number(n)),
            Tok::Bool(b) => Ok(Value::Boolean(b)),
            Tok::Null => Ok(Value::LightUserData(LightUserData(std::ptr::null_mut()))),
            Tok::ObjBegin => self.object(lua, depth + 1, used),
            Tok::ArrBegin => self.array(lua, depth + 1, used),
            _ => Err(Self::parse_error("value", t)),
        }
    }
    /// `json_parse_object_context`, its `{` just read.
    fn object(&mut self, lua: &Lua, depth: usize, used: usize) -> Result<Value, String> {
        let lua_err = |e: mlua::Error| e.to_string();
        self.descend(depth, used, 3)?;
        let table = lua.create_table().map_err(lua_err)?;
        let mut t = self.next_token();
        if t.tok == Tok::ObjEnd {
            return Ok(Value::Table(table));
        }
        loop {
            if t.tok != Tok::Str {
                return Err(Self::parse_error("object key string", t));
            }
            let key_start = self.str_start;
            t = self.next_token();
            if t.tok != Tok::Colon {
                return Err(Self::parse_error("colon", t));
            }
            t = self.next_token();
            let v = self.value(lua, t, depth, used + 2)?;
            let key = lua.create_string(&self.tmp[key_start..]).map_err(lua_err)?;
            self.tmp.truncate(key_start);
            table.raw_set(key, v).map_err(lua_err)?;
            t = self.next_token();
            match t.tok {
                Tok::ObjEnd => return Ok(Value::Table(table)),
                Tok::Comma => t = self.next_token(),
                _ => return Err(Self::parse_error("comma or object end", t)),
            }
        }
    }
    /// `json_parse_array_context`, its `[` just read.
    fn array(&mut self, lua: &Lua, depth: usize, used: usize) -> Result<Value, String> {
        let lua_err = |e: mlua::Error| e.to_string();
        self.descend(depth, used, 2)?;
        let table = lua.create_table().map_err(lua_err)?;
        let mut t = self.next_token();
        if t.tok == Tok::ArrEnd {
            return Ok(Value::Table(table));
        }
        for n in 1.. {
            let v = self.value(lua, t, depth, used + 1)?;
            table.raw_set(n, v).map_err(lua_err)?;
            t = self.next_token();
            match t.tok {
                Tok::ArrEnd => break,
                Tok::Comma => t = self.next_token(),
                _ => return Err(Self::parse_error("comma or array end", t)),
            }
        }
        Ok(Value::Table(table))
    }
}

/// cjson's `json_decode` past its argument checks: one value, then the end of the data.
fn json_decode(lua: &Lua, data: &[u8]) -> Result<Value, String> {
    // cjson's guard against UTF-16/32 input: its first character must be ASCII, so not NUL-padded.
    if data.len() >= 2 && (data[0] == 0 || data[1] == 0) {
        return Err("JSON parser does not support UTF-16 or UTF-32".into());
    }
    let mut p = JsonParser::new(data);
    let t = p.next_token();
    let v = p.value(lua, t, 0, 1)?;
    let t = p.next_token();
    if t.tok != Tok::End {
        return Err(JsonParser::parse_error("the end", t));
    }
    Ok(v)
}

/// Builds the `cjson` table.
pub fn cjson(lua: &Lua, err: &Pending) -> mlua::Result<Table> {
    let t = lua.create_table()?;
    let e = err.clone();
    t.raw_set(
        "encode",
        lua.create_function(move |lua, args: MultiValue| {
            if args.len() != 1 {
                return Err(arg_error(lua, &e, 1, b"expected 1 argument"));
            }
            let mut out = Vec::new();
            match json_encode(&args[0], 0, 1, &mut out) {
                Ok(()) => one(Value::String(lua.create_string(&out)?)),
                Err(m) => fail(lua, &e, m),
            }
        })?,
    )?;
    let e = err.clone();
    t.raw_set(
        "decode",
        lua.create_function(move |lua, args: MultiValue| {
            if args.len() != 1 {
                return Err(arg_error(lua, &e, 1, b"expected 1 argument"));
            }
            // `luaL_checklstring`: a number is read as its string form.
            let Some(s) = lua.coerce_string(args[0].clone())? else {
                return Err(type_error(lua, &e, 1, "string", Some(&args[0])));
            };
            match json_decode(lua, &s.as_bytes()) {
                Ok(v) => one(v),
                Err(m) => fail(lua, &e, m),
            }
        })?,
    )?;
    t.raw_set("null", Value::LightUserData(LightUserData(std::ptr::null_mut())))?;
    for (name, setting) in
        [("encode_max_depth", &JSON_CFG.encode_max_depth), ("decode_max_depth", &JSON_CFG.decode_max_depth)]
    {
        let e = err.clone();
        t.raw_set(name, lua.create_function(move |lua, v: Value| depth_option(lua, &e, setting, &v))?)?;
    }
    t.raw_set(
        "encode_invalid_numbers",
        lua.create_function(|_, b: Option<bool>| {
            let v = b.unwrap_or(false);
            JSON_CFG.encode_invalid_numbers.store(v, Ordering::Relaxed);
            Ok(v)
        })?,
    )?;
    for name in ["encode_keep_buffer", "decode_invalid_numbers", "encode_sparse_array", "encode_number_precision"] {
        t.raw_set(name, lua.create_function(|_, _: MultiValue| Ok(()))?)?;
    }
    Ok(t)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tobit_matches_luabitop() {
        assert_eq!(tobit(1.5), 2);
        assert_eq!(tobit(2.5), 2);
        assert_eq!(tobit(4294967295.0), -1);
        assert_eq!(tobit(-1.0), -1);
        assert_eq!(fmt_num(1.0 / 3.0), "0.33333333333333");
        assert_eq!(fmt_num(1e20), "1e+20");
    }

    /// Tokens of `s` up to the end or an error, as (type or error, 1-based character).
    fn tokens(s: &[u8]) -> Vec<(&'static str, usize)> {
        let mut p = JsonParser::new(s);
        let mut out = Vec::new();
        loop {
            let t = p.next_token();
            out.push((t.tok.found(), t.index + 1));
            if matches!(t.tok, Tok::End | Tok::Error(_)) {
                return out;
            }
        }
    }

    #[test]
    fn tokenizer_reads_as_cjson() {
        assert_eq!(
            tokens(b" {\"a\" :[1,-2.5e3, true,false,null]}\n"),
            [
                ("T_OBJ_BEGIN", 2),
                ("T_STRING", 3),
                ("T_COLON", 7),
                ("T_ARR_BEGIN", 8),
                ("T_NUMBER", 9),
                ("T_COMMA", 10),
                ("T_NUMBER", 11),
                ("T_COMMA", 17),
                ("T_BOOLEAN", 19),
                ("T_COMMA", 23),
                ("T_BOOLEAN", 24),
                ("T_COMMA", 29),
                ("T_NULL", 30),
                ("T_ARR_END", 34),
                ("T_OBJ_END", 35),
                ("T_END", 37),
            ]
        );
        // A NUL ends the data; numbers are what strtod reads, and the rest is another token.
        assert_eq!(tokens(b"1\x002"), [("T_NUMBER", 1), ("T_END", 2)]);
        assert_eq!(tokens(b"1e"), [("T_NUMBER", 1), ("invalid token", 2)]);
        assert_eq!(tokens(b"0x1g"), [("T_NUMBER", 1), ("invalid token", 4)]);
        assert_eq!(tokens(b"infinit"), [("T_NUMBER", 1), ("invalid token", 4)]);
        assert_eq!(tokens(b"+-1"), [("invalid number", 1)]);
        assert_eq!(tokens(b"truex"), [("T_BOOLEAN", 1), ("invalid token", 5)]);
        // An error inside a string is placed where it is, not where the string starts.
        assert_eq!(tokens(b"[\"ab\\x\"]"), [("T_ARR_BEGIN", 1), ("invalid escape code", 5)]);
    }

    /// `pcall(cjson.decode, s)`'s error in redis-server 7.0.15.
    #[test]
    fn decode_errors_match_redis() {
        let lua = Lua::new();
        let cases: &[(&[u8], &str)] = &[
            (b"\x00", "Expected value but found T_END at character 1"),
            (b"\x00\x00", "JSON parser does not support UTF-16 or UTF-32"),
            (b"a\x00", "JSON parser does not support UTF-16 or UTF-32"),
            (b"\x00a", "JSON parser does not support UTF-16 or UTF-32"),
            (b"", "Expected value but found T_END at character 1"),
            (b"   ", "Expected value but found T_END at character 4"),
            (b"[-]", "Expected value but found invalid number at character 2"),
            (b"-", "Expected value but found invalid number at character 1"),
            (b"+", "Expected value but found invalid number at character 1"),
            (b"[+x]", "Expected value but found invalid number at character 2"),
            (b".", "Expected value but found invalid token at character 1"),
            (b"[1.5.5]", "Expected comma or array end but found invalid token at character 5"),
            (b"true false", "Expected the end but found T_BOOLEAN at character 6"),
            (b"{1:2}", "Expected object key string but found T_NUMBER at character 2"),
            (b"{\"a\" 2}", "Expected colon but found T_NUMBER at character 6"),
            (b"{\"a\" \"b\"}", "Expected colon but found T_STRING at character 6"),
            (b"{\"a\":}", "Expected value but found T_OBJ_END at character 6"),
            (b"{\"a\":1,}", "Expected object key string but found T_OBJ_END at character 8"),
            (b"{\"a\":1 \"b\":2}", "Expected comma or object end but found T_STRING at character 8"),
            (b"{\"a\":1]", "Expected comma or object end but found T_ARR_END at character 7"),
            (b"{", "Expected object key string but found T_END at character 2"),
            (b"{[", "Expected object key string but found T_ARR_BEGIN at character 2"),
            (b"[", "Expected value but found T_END at character 2"),
            (b"[1", "Expected comma or array end but found T_END at character 3"),
            (b"[1,", "Expected value but found T_END at character 4"),
            (b"[1,]", "Expected value but found T_ARR_END at character 4"),
            (b"[1 2]", "Expected comma or array end but found T_NUMBER at character 4"),
            (b"[1}", "Expected comma or array end but found T_OBJ_END at character 3"),
            (b"[1:2]", "Expected comma or array end but found T_COLON at character 3"),
            (b"[}", "Expected value but found T_OBJ_END at character 2"),
            (b",", "Expected value but found T_COMMA at character 1"),
            (b":", "Expected value but found T_COLON at character 1"),
            (b"]", "Expected value but found T_ARR_END at character 1"),
            (b"}", "Expected value but found T_OBJ_END at character 1"),
            (b"x", "Expected value but found invalid token at character 1"),
            (b"nul", "Expected value but found invalid token at character 1"),
            (b"tru", "Expected value but found invalid token at character 1"),
            (b"fals", "Expected value but found invalid token at character 1"),
            (b"True", "Expected value but found invalid token at character 1"),
            (b"[infin]", "Expected comma or array end but found invalid token at character 5"),
            (b"[nan(]", "Expected comma or array end but found invalid token at character 5"),
            (b"[0x]", "Expected comma or array end but found invalid token at character 3"),
            (b"[0xg]", "Expected comma or array end but found invalid token at character 3"),
            (b"[1e]", "Expected comma or array end but found invalid token at character 3"),
            (b"[1]]", "Expected the end but found T_ARR_END at character 4"),
            (b"[1] x", "Expected the end but found invalid token at character 5"),
            (b"1 null", "Expected the end but found T_NULL at character 3"),
            (b"\"a\" 1", "Expected the end but found T_NUMBER at character 5"),
            (b"[] {}", "Expected the end but found T_OBJ_BEGIN at character 4"),
            (b"{} ,", "Expected the end but found T_COMMA at character 4"),
            (b"[] :", "Expected the end but found T_COLON at character 4"),
            (b"\"abc", "Expected value but found unexpected end of string at character 5"),
            (b"\"\\q\"", "Expected value but found invalid escape code at character 2"),
            (b"\"\\u12\"", "Expected value but found invalid unicode escape code at character 2"),
            (b"\"\\ud800\"", "Expected value but found invalid unicode escape code at character 2"),
            (b"\"ab\\udc00\"", "Expected value but found invalid unicode escape code at character 4"),
            (b"[\x0b1]", "Expected value but found invalid token at character 2"),
            (b"\xff", "Expected value but found invalid token at character 1"),
            (b"{\"a\":1,\"b\"}", "Expected colon but found T_OBJ_END at character 11"),
            (b"{\"a\"", "Expected colon but found T_END at character 5"),
            (b"{\"a\":", "Expected value but found T_END at character 6"),
            (b"{\"a\":1", "Expected comma or object end but found T_END at character 7"),
            (b"{\"a\":1,", "Expected object key string but found T_END at character 8"),
            (b"{,", "Expected object key string but found T_COMMA at character 2"),
            (b"{\"a\"]", "Expected colon but found T_ARR_END at character 5"),
            (b"[1\x00]", "Expected comma or array end but found T_END at character 3"),
            (b"[[[{\"a\":[1,{\"b\":tru}]}]]]", "Expected value but found invalid token at character 17"),
            (b"\x09\x0a\x0d x", "Expected value but found invalid token at character 5"),
        ];
        for (input, want) in cases {
            let got = json_decode(&lua, input).err();
            assert_eq!(got.as_deref(), Some(*want), "input {:?}", String::from_utf8_lossy(input));
        }
    }

    #[test]
    fn decode_values() {
        let lua = Lua::new();
        let Ok(Value::Table(t)) = json_decode(&lua, b"[1]\x00x") else { panic!("not a table") };
        assert_eq!(t.raw_len(), 1);
        let Ok(Value::Table(t)) = json_decode(&lua, b"{\"a\":{\"b\":[\"x\",\"y\"]},\"c\":\"z\"}") else {
            panic!("not a table")
        };
        let a: Table = t.raw_get("a").unwrap();
        let b: Table = a.raw_get("b").unwrap();
        assert_eq!(b.raw_get::<String>(2).unwrap(), "y");
        assert_eq!(t.raw_get::<String>("c").unwrap(), "z");
        assert!(matches!(json_decode(&lua, b"null"), Ok(Value::LightUserData(p)) if p.0.is_null()));
        assert!(matches!(json_decode(&lua, b" true "), Ok(Value::Boolean(true))));
    }

    /// The double `cjson.decode('[' .. s .. ']')[1]` gives in redis-server 7.0.15 (glibc's strtod,
    /// hex floats, NaN payloads and the rounding of hex subnormals included).
    #[test]
    fn numbers_match_redis() {
        let cases: &[(&str, u64)] = &[
            ("0", 0x0000000000000000),
            ("-0", 0x8000000000000000),
            ("1.5", 0x3ff8000000000000),
            ("5.", 0x4014000000000000),
            ("+1", 0x3ff0000000000000),
            ("1e5", 0x40f86a0000000000),
            ("1E-5", 0x3ee4f8b588e368f1),
            ("1.e5", 0x40f86a0000000000),
            ("1e999", 0x7ff0000000000000),
            ("-1e999", 0xfff0000000000000),
            ("1e-400", 0x0000000000000000),
            ("2.5e-324", 0x0000000000000001),
            ("1.7976931348623158e308", 0x7fefffffffffffff),
            ("9007199254740993", 0x4340000000000000),
            ("0x10", 0x4030000000000000),
            ("-0x10", 0xc030000000000000),
            ("0X1F", 0x403f000000000000),
            ("0x1p3", 0x4020000000000000),
            ("0x1.8p1", 0x4008000000000000),
            ("0x.8", 0x3fe0000000000000),
            ("0x1p-1074", 0x0000000000000001),
            ("0x1p-1075", 0x0000000000000000),
            ("0x3p-1076", 0x0000000000000001),
            ("0x1p1024", 0x7ff0000000000000),
            ("0x1fffffffffffff", 0x433fffffffffffff),
            ("0x20000000000001", 0x4340000000000000),
            ("0x20000000000003", 0x4340000000000002),
            ("0x34114d2ed02491p-1079", 0x0001a08a69768124),
            ("0x1a08a69768124.88p-1074", 0x0001a08a69768124),
            ("0x1a08a69768124.81p-1074", 0x0001a08a69768125),
            ("0x1.00000000000018p-1070", 0x0000000000000010),
            ("0x123456789abcdef0123456789", 0x45f23456789abcdf),
            ("0x1p99999999999999999999", 0x7ff0000000000000),
            ("0x0p99999", 0x0000000000000000),
            ("nan", 0x7ff8000000000000),
            ("NaN", 0x7ff8000000000000),
            ("-nan", 0xfff8000000000000),
            ("nan()", 0x7ff8000000000000),
            ("nan(123)", 0x7ff800000000007b),
            ("nan(0x7)", 0x7ff8000000000007),
            ("nan(018)", 0x7ff8000000000000),
            ("nan(abc)", 0x7ff8000000000000),
            ("-nan(5)", 0xfff8000000000005),
            ("nan(18446744073709551616)", 0x7fffffffffffffff),
            ("inf", 0x7ff0000000000000),
            ("INF", 0x7ff0000000000000),
            ("-inf", 0xfff0000000000000),
            ("+inf", 0x7ff0000000000000),
            ("infinity", 0x7ff0000000000000),
            ("-Infinity", 0xfff0000000000000),
            ("00", 0x0000000000000000),
            ("01", 0x3ff0000000000000),
            ("-01", 0xbff0000000000000),
        ];
        for (input, want) in cases {
            let got = strtod(input.as_bytes()).map(|(v, len)| (v.to_bits(), len));
            assert_eq!(got, Some((*want, input.len())), "input {input}");
        }
        assert_eq!(strtod(b".5"), Some((0.5, 2)));
        assert_eq!(strtod(b"0x"), Some((0.0, 1)));
        assert_eq!(strtod(b"1e+"), Some((1.0, 1)));
        assert_eq!(strtod(b"nan(1").map(|(v, len)| (v.to_bits(), len)), Some((f64::NAN.to_bits(), 3)));
        assert_eq!(strtod(b"-"), None);
        assert_eq!(strtod(b"."), None);
        assert_eq!(strtod(b"x"), None);
    }

    /// The same reading as the C library's `strtod`, on a spread of generated numbers (test only:
    /// calling glibc's `strtod` is the one unsafe part, a plain C call on a NUL-terminated string).
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    #[allow(unsafe_code)]
    #[test]
    fn strtod_matches_glibc() {
        unsafe extern "C" {
            fn strtod(s: *const std::ffi::c_char, end: *mut *mut std::ffi::c_char) -> f64;
        }
        let mut seed: u64 = 0x9e3779b97f4a7c15;
        let mut next = |n: u64| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed % n
        };
        const HEX: &[u8] = b"0123456789abcdefABCDEF";
        for _ in 0..200_000 {
            let mut s = Vec::new();
            match next(3) {
                0 => s.push(b'-'),
                1 => s.push(b'+'),
                _ => {}
            }
            let hex = next(2) == 0;
            if hex {
                s.extend_from_slice(b"0x");
            }
            let digits = next(24) as usize;
            let point = next(digits as u64 + 2) as usize;
            for i in 0..digits {
                if i == point {
                    s.push(b'.');
                }
                s.push(if hex { HEX[next(22) as usize] } else { b'0' + next(10) as u8 });
            }
            if next(3) > 0 {
                s.push(if hex { b'p' } else { b'e' });
                if next(2) == 0 {
                    s.push(b'-');
                }
                let e = if hex { next(1200) } else { next(360) };
                s.extend_from_slice(e.to_string().as_bytes());
            }
            let c = std::ffi::CString::new(s.clone()).unwrap();
            let mut end = std::ptr::null_mut();
            // SAFETY: `c` is a NUL-terminated string that outlives the call; `end` is a valid out
            // pointer, set by strtod to a position inside `c`.
            let want = unsafe { strtod(c.as_ptr(), &mut end) };
            let len = end as usize - c.as_ptr() as usize;
            let want = (len > 0).then_some((want.to_bits(), len));
            let got = super::strtod(&s).map(|(v, len)| (v.to_bits(), len));
            assert_eq!(got, want, "input {}", String::from_utf8_lossy(&s));
        }
    }

    /// `EVAL <script> 0` and the reply redis-server 7.0.15 gave: cjson's argument checks.
    #[test]
    fn cjson_arguments_as_in_redis() {
        let cases: &[(&str, &str)] = &[
            ("return {pcall(cjson.decode)}", "[(nil), \"bad argument #1 to '?' (expected 1 argument)\"]"),
            ("return {pcall(cjson.decode, '[1]', nil)}", "[(nil), \"bad argument #1 to '?' (expected 1 argument)\"]"),
            ("return {pcall(cjson.decode, nil)}", "[(nil), \"bad argument #1 to '?' (string expected, got nil)\"]"),
            ("return {pcall(cjson.decode, {})}", "[(nil), \"bad argument #1 to '?' (string expected, got table)\"]"),
            ("return cjson.decode(12)", ":12"),
            ("return cjson.decode(1e15)", ":1000000000000000"),
            ("return {pcall(cjson.encode)}", "[(nil), \"bad argument #1 to '?' (expected 1 argument)\"]"),
            ("return {pcall(cjson.encode, 1, 2)}", "[(nil), \"bad argument #1 to '?' (expected 1 argument)\"]"),
            ("return cjson.encode(nil)", "\"null\""),
            (
                "return cjson.decode()",
                "-ERR user_script:1: bad argument #1 to 'decode' (expected 1 argument) script: 5378278d59343caf5c3375a655dfea5e69ab8a74, on @user_script:1.",
            ),
            (
                "return cjson.decode('[1,]')",
                "-ERR user_script:1: Expected value but found T_ARR_END at character 4 script: d31ab1dd313d99d4ad3dac6e48cdff283bea270c, on @user_script:1.",
            ),
            (
                "return cjson.decode('\\0\\0')",
                "-ERR user_script:1: JSON parser does not support UTF-16 or UTF-32 script: 0d9e33f53417bbf2cd75611e70c42a5a09cff13e, on @user_script:1.",
            ),
        ];
        let srv = crate::testkit::TestServer::new();
        let mut c = srv.client();
        for (script, want) in cases {
            let got = c.cmd(&["EVAL", script, "0"]).map(|f| crate::testkit::show(&f)).unwrap_or_default();
            assert_eq!(&got, want, "\n  script: {script}");
        }
    }
}
