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
                            format!("bad argument #{} to '{name}' (number expected, got {})", i + 1, type_name(a)),
                        );
                    };
                    let v = tobit(n);
                    acc = Some(acc.map_or(v, |x| op(x, v)));
                }
                match acc {
                    Some(v) => one(Value::Number(v as f64)),
                    None => fail(lua, &e, format!("bad argument #1 to '{name}' (number expected, got no value)")),
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
                        format!("bad argument #1 to '{name}' (number expected, got {})", type_name(&a)),
                    );
                };
                let Some(y) = num(&b) else {
                    return fail(
                        lua,
                        &e,
                        format!("bad argument #2 to '{name}' (number expected, got {})", type_name(&b)),
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
            None => fail(lua, &e, format!("bad argument #1 to 'tobit' (number expected, got {})", type_name(&a))),
        })?,
    )?;
    let e = err.clone();
    t.raw_set(
        "bnot",
        lua.create_function(move |lua, a: Value| match num(&a) {
            Some(x) => one(Value::Number(!tobit(x) as f64)),
            None => fail(lua, &e, format!("bad argument #1 to 'bnot' (number expected, got {})", type_name(&a))),
        })?,
    )?;
    let e = err.clone();
    t.raw_set(
        "bswap",
        lua.create_function(move |lua, a: Value| match num(&a) {
            Some(x) => one(Value::Number(tobit(x).swap_bytes() as f64)),
            None => fail(lua, &e, format!("bad argument #1 to 'bswap' (number expected, got {})", type_name(&a))),
        })?,
    )?;
    let e = err.clone();
    t.raw_set(
        "tohex",
        lua.create_function(move |lua, (a, n): (Value, Value)| {
            let Some(x) = num(&a) else {
                return fail(lua, &e, format!("bad argument #1 to 'tohex' (number expected, got {})", type_name(&a)));
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

fn json_encode(v: &Value, depth: usize, out: &mut Vec<u8>) -> Result<(), String> {
    let max = JSON_CFG.encode_max_depth.load(Ordering::Relaxed);
    if depth > max {
        return Err(format!("Cannot serialise, excessive nesting ({depth})"));
    }
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
                    json_encode(&v, depth + 1, out)?;
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
                    json_encode(&v, depth + 1, out)?;
                }
                out.push(b'}');
            }
        }
        other => return Err(format!("Cannot serialise {}: type not supported", type_name(other))),
    }
    Ok(())
}

struct JsonParser<'a> {
    s: &'a [u8],
    i: usize,
}

impl JsonParser<'_> {
    fn ws(&mut self) {
        while self.i < self.s.len() && matches!(self.s[self.i], b' ' | b'\t' | b'\n' | b'\r') {
            self.i += 1;
        }
    }
    fn token_name(&self) -> &'static str {
        match self.s.get(self.i) {
            None => "T_END",
            Some(b'{') => "T_OBJ_BEGIN",
            Some(b'}') => "T_OBJ_END",
            Some(b'[') => "T_ARR_BEGIN",
            Some(b']') => "T_ARR_END",
            Some(b',') => "T_COMMA",
            Some(b':') => "T_COLON",
            Some(b'"') => "T_STRING",
            _ => "invalid token",
        }
    }
    fn err(&self, expected: &str) -> String {
        format!("Expected {expected} but found {} at character {}", self.token_name(), self.i + 1)
    }
    fn value(&mut self, lua: &Lua, depth: usize) -> Result<Value, String> {
        if depth > JSON_CFG.decode_max_depth.load(Ordering::Relaxed) {
            return Err(format!("Found too many nested data structures ({depth}) at character {}", self.i + 1));
        }
        self.ws();
        let Some(&c) = self.s.get(self.i) else { return Err(self.err("value")) };
        match c {
            b'{' => {
                self.i += 1;
                let t = lua.create_table().map_err(|e| e.to_string())?;
                self.ws();
                if self.s.get(self.i) == Some(&b'}') {
                    self.i += 1;
                    return Ok(Value::Table(t));
                }
                loop {
                    self.ws();
                    if self.s.get(self.i) != Some(&b'"') {
                        return Err(self.err("object key string"));
                    }
                    let k = self.string()?;
                    self.ws();
                    if self.s.get(self.i) != Some(&b':') {
                        return Err(self.err("colon"));
                    }
                    self.i += 1;
                    let v = self.value(lua, depth + 1)?;
                    t.raw_set(lua.create_string(&k).map_err(|e| e.to_string())?, v).map_err(|e| e.to_string())?;
                    self.ws();
                    match self.s.get(self.i) {
                        Some(b',') => self.i += 1,
                        Some(b'}') => {
                            self.i += 1;
                            return Ok(Value::Table(t));
                        }
                        _ => return Err(self.err("comma or object end")),
                    }
                }
            }
            b'[' => {
                self.i += 1;
                let t = lua.create_table().map_err(|e| e.to_string())?;
                self.ws();
                if self.s.get(self.i) == Some(&b']') {
                    self.i += 1;
                    return Ok(Value::Table(t));
                }
                let mut n = 1;
                loop {
                    let v = self.value(lua, depth + 1)?;
                    t.raw_set(n, v).map_err(|e| e.to_string())?;
                    n += 1;
                    self.ws();
                    match self.s.get(self.i) {
                        Some(b',') => self.i += 1,
                        Some(b']') => {
                            self.i += 1;
                            return Ok(Value::Table(t));
                        }
                        _ => return Err(self.err("comma or array end")),
                    }
                }
            }
            b'"' => {
                let s = self.string()?;
                Ok(Value::String(lua.create_string(&s).map_err(|e| e.to_string())?))
            }
            b't' if self.s[self.i..].starts_with(b"true") => {
                self.i += 4;
                Ok(Value::Boolean(true))
            }
            b'f' if self.s[self.i..].starts_with(b"false") => {
                self.i += 5;
                Ok(Value::Boolean(false))
            }
            b'n' if self.s[self.i..].starts_with(b"null") => {
                self.i += 4;
                Ok(Value::LightUserData(LightUserData(std::ptr::null_mut())))
            }
            b'-' | b'0'..=b'9' => {
                let start = self.i;
                while self.i < self.s.len() && matches!(self.s[self.i], b'-' | b'+' | b'.' | b'e' | b'E' | b'0'..=b'9')
                {
                    self.i += 1;
                }
                let txt = std::str::from_utf8(&self.s[start..self.i]).unwrap_or("");
                match txt.parse::<f64>() {
                    Ok(n) => Ok(Value::Number(n)),
                    Err(_) => {
                        self.i = start;
                        Err(self.err("value"))
                    }
                }
            }
            _ => Err(self.err("value")),
        }
    }
    fn string(&mut self) -> Result<Vec<u8>, String> {
        let start = self.i;
        self.i += 1;
        let mut out = Vec::new();
        loop {
            let Some(&c) = self.s.get(self.i) else {
                self.i = start;
                return Err(format!("Expected value but found invalid token at character {}", start + 1));
            };
            self.i += 1;
            match c {
                b'"' => return Ok(out),
                b'\\' => {
                    let Some(&e) = self.s.get(self.i) else { continue };
                    self.i += 1;
                    match e {
                        b'n' => out.push(b'\n'),
                        b'r' => out.push(b'\r'),
                        b't' => out.push(b'\t'),
                        b'b' => out.push(8),
                        b'f' => out.push(12),
                        b'u' => {
                            let hex = self.s.get(self.i..self.i + 4).and_then(|h| std::str::from_utf8(h).ok());
                            let Some(cp) = hex.and_then(|h| u32::from_str_radix(h, 16).ok()) else {
                                return Err(format!(
                                    "Expected value but found invalid unicode escape code at character {}",
                                    start + 1
                                ));
                            };
                            self.i += 4;
                            let ch = char::from_u32(cp).unwrap_or('\u{fffd}');
                            let mut buf = [0u8; 4];
                            out.extend_from_slice(ch.encode_utf8(&mut buf).as_bytes());
                        }
                        other => out.push(other),
                    }
                }
                c => out.push(c),
            }
        }
    }
}

/// Builds the `cjson` table.
pub fn cjson(lua: &Lua, err: &Pending) -> mlua::Result<Table> {
    let t = lua.create_table()?;
    let e = err.clone();
    t.raw_set(
        "encode",
        lua.create_function(move |lua, v: Value| {
            let mut out = Vec::new();
            match json_encode(&v, 0, &mut out) {
                Ok(()) => one(Value::String(lua.create_string(&out)?)),
                Err(m) => fail(lua, &e, m),
            }
        })?,
    )?;
    let e = err.clone();
    t.raw_set(
        "decode",
        lua.create_function(move |lua, v: Value| {
            let Value::String(s) = &v else {
                return fail(lua, &e, format!("bad argument #1 to 'decode' (string expected, got {})", type_name(&v)));
            };
            let bytes = s.as_bytes().to_vec();
            let mut p = JsonParser { s: &bytes, i: 0 };
            let r = p.value(lua, 0).and_then(|v| {
                p.ws();
                if p.i < bytes.len() { Err(p.err("the end")) } else { Ok(v) }
            });
            match r {
                Ok(v) => one(v),
                Err(m) => fail(lua, &e, m),
            }
        })?,
    )?;
    t.raw_set("null", Value::LightUserData(LightUserData(std::ptr::null_mut())))?;
    t.raw_set(
        "encode_max_depth",
        lua.create_function(|_, n: Option<f64>| {
            let v = n.map(|n| n.max(1.0) as usize).unwrap_or(1000);
            JSON_CFG.encode_max_depth.store(v, Ordering::Relaxed);
            Ok(v)
        })?,
    )?;
    t.raw_set(
        "decode_max_depth",
        lua.create_function(|_, n: Option<f64>| {
            let v = n.map(|n| n.max(1.0) as usize).unwrap_or(1000);
            JSON_CFG.decode_max_depth.store(v, Ordering::Relaxed);
            Ok(v)
        })?,
    )?;
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
}
