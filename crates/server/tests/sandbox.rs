//! The Lua sandbox against the attacks Redis has fixed, through the real binary. Expected replies
//! are redis-server 7.0.15's, byte for byte.
//!
//! Precompiled chunks: Lua 5.1 runs any chunk starting with `ESC` through its undumper, which
//! trusts the bytecode (crafted bytecode reads and writes arbitrary memory). Redis refuses them
//! since CVE-2015-4335; every route a chunk can take to the parser is tried here with a real chunk,
//! `string.dump`'s output, and with a tampered one.
//!
//! Then one test per class of Redis's Lua library CVEs, each showing Latch answers as a fixed Redis.

mod common;
use common::{Latch, Raw};

/// A chunk precompiled by the server's own Lua (`string.dump`), as a script would make one.
fn dumped(r: &mut Raw) -> Vec<u8> {
    let bytes = r.cmd_bytes(&[b"EVAL", b"return string.dump(function() return 7 end)", b"0"]);
    let start = bytes.iter().position(|&b| b == b'\n').unwrap() + 1;
    let chunk = bytes[start..bytes.len() - 2].to_vec();
    assert_eq!(&chunk[..5], b"\x1bLuaQ", "string.dump gives a Lua 5.1 chunk");
    chunk
}

fn with(prefix: &[u8], chunk: &[u8]) -> Vec<u8> {
    [prefix, chunk].concat()
}

#[test]
fn precompiled_chunks_are_refused_on_every_route() {
    let l = Latch::start(&[]);
    let mut r = l.raw();
    let chunk = dumped(&mut r);
    // Tampered: the header kept, the code replaced by bytes no compiler makes.
    let mut tampered = chunk.clone();
    let n = tampered.len();
    tampered[n / 2..].fill(0xff);

    for c in [&chunk, &tampered] {
        let compile =
            "-ERR Error compiling script (new function): user_script:1: unexpected symbol near 'char(27)'\r\n";
        assert_eq!(r.cmd(&[b"EVAL", c, b"0"]), compile);
        assert_eq!(r.cmd(&[b"SCRIPT", b"LOAD", c]), compile);
        let line2 = "-ERR Error compiling script (new function): user_script:2: unexpected symbol near 'char(27)'\r\n";
        assert_eq!(r.cmd(&[b"EVAL", &with(b"#!lua\n", c), b"0"]), line2);
        assert_eq!(r.cmd(&[b"EVAL", &with(b"#!lua flags=no-writes\n", c), b"0"]), line2);
        assert_eq!(
            r.cmd(&[b"FUNCTION", b"LOAD", &with(b"#!lua name=lib\n", c)]),
            "-ERR Error compiling function: user_function:2: unexpected symbol near 'char(27)'\r\n"
        );

        // Inside a script: loadstring, and load with a reader giving the chunk whole, a byte at a
        // time, or after an empty first piece (which Lua's lookahead passes over).
        let calls: [(&[u8], &str); 5] = [
            (b"local f, e = loadstring(ARGV[1]) return {type(f), e}", "[string \"\x1bLuaQ\"]:1:"),
            (b"local f, e = loadstring(ARGV[1], 'chunk') return {type(f), e}", "[string \"chunk\"]:1:"),
            (
                b"local done = false local f, e = load(function() if done then return nil end done = true \
                  return ARGV[1] end) return {type(f), e}",
                "(load):1:",
            ),
            (
                b"local i, d = 0, ARGV[1] local f, e = load(function() i = i + 1 if i <= #d then \
                  return d:sub(i, i) end end, '=piece') return {type(f), e}",
                "piece:1:",
            ),
            (
                b"local i, p = 0, {'', ARGV[1]} local f, e = load(function() i = i + 1 return p[i] end) \
                  return {type(f), e}",
                "(load):1:",
            ),
        ];
        for (script, at) in calls {
            let msg = format!("{at} unexpected symbol near 'char(27)'");
            let want = format!("*2\r\n$3\r\nnil\r\n${}\r\n{msg}\r\n", msg.len());
            assert_eq!(r.cmd(&[b"EVAL", script, b"0", c]), want, "{}", String::from_utf8_lossy(script));
        }
        // Functions reach the same loaders.
        r.cmd(&[b"FUNCTION", b"FLUSH"]);
        assert_eq!(
            r.cmd(&[
                b"FUNCTION",
                b"LOAD",
                b"#!lua name=ld\nredis.register_function('ld', function(k, a) local f, e = loadstring(a[1]) \
                  return {type(f), e} end)"
            ]),
            "$2\r\nld\r\n"
        );
        let msg = "[string \"\x1bLuaQ\"]:1: unexpected symbol near 'char(27)'";
        assert_eq!(r.cmd(&[b"FCALL", b"ld", b"0", c]), format!("*2\r\n$3\r\nnil\r\n${}\r\n{msg}\r\n", msg.len()));
    }
    // Text still loads through every route.
    assert_eq!(r.cmd(&[b"EVAL", b"return loadstring(ARGV[1])()", b"0", b"return 6 * 7"]), ":42\r\n");
    assert_eq!(
        r.cmd(&[
            b"EVAL",
            b"local i, p = 0, {'return ', '6 * ', '7'} return load(function() i = i + 1 return p[i] end)()",
            b"0"
        ]),
        ":42\r\n"
    );
}

#[test]
fn loader_errors_name_no_internals() {
    let l = Latch::start(&[]);
    let mut r = l.raw();
    for (script, want) in [
        (
            &b"return loadstring()"[..],
            "-ERR user_script:1: bad argument #1 to 'loadstring' (string expected, got no value) script: ",
        ),
        (b"return load('x')", "-ERR user_script:1: bad argument #1 to 'load' (function expected, got string) script: "),
    ] {
        let got = r.cmd(&[b"EVAL", script, b"0"]);
        assert!(got.starts_with(want), "{got}");
    }
    // A reader's error passes through the script's error handler, as under Redis: `e` is the
    // handler's error table, so returning it is an error reply.
    assert_eq!(
        r.cmd(&[b"EVAL", b"local f, e = load(function() return nosuch end) return e", b"0"]),
        "-ERR user_script:1: Script attempted to access nonexistent global variable 'nosuch'\r\n"
    );
    assert_eq!(
        r.cmd(&[b"EVAL", b"local f, e = load(function() return {} end) return e", b"0"]),
        "-ERR user_script:1: reader function must return a string\r\n"
    );
}

/// Errors raised by the sandbox's own functions read as Redis's C functions' do: the caller's
/// position, the name it called the function by, the script suffix, and no Latch internals.
#[test]
fn sandbox_errors_read_as_redis() {
    let l = Latch::start(&[]);
    let mut r = l.raw();
    for (script, want) in [
        (
            "return setmetatable(1, {})",
            "-ERR user_script:1: bad argument #1 to 'setmetatable' (table expected, got number) script: cde81fee4cf25bd0b7dc3685af446d862fd43845, on @user_script:1.\r\n",
        ),
        (
            "return setmetatable({}, 1)",
            "-ERR user_script:1: bad argument #2 to 'setmetatable' (nil or table expected) script: edfb36201dfdaf2c684477466ddae43ab9ff3c77, on @user_script:1.\r\n",
        ),
        (
            "return getmetatable()",
            "-ERR user_script:1: bad argument #1 to 'getmetatable' (value expected) script: 079907dcac7a4f1ecf68e10e298d3983826b55b6, on @user_script:1.\r\n",
        ),
        (
            "return rawset()",
            "-ERR user_script:1: bad argument #1 to 'rawset' (table expected, got no value) script: e083c3c3169b550515eb809bb88641ea21ea5e1b, on @user_script:1.\r\n",
        ),
        (
            "return rawset({}, nil, 1)",
            "-ERR table index is nil script: 5896009464192fbab25680c7f3a63b35ca0d9242, on @user_script:1.\r\n",
        ),
        (
            "local m = getmetatable('') return rawset(m, 'x', 1)",
            "-ERR Attempt to modify a readonly table script: b49f4242220175cef6e66d2f019d5eb0634fbd67, on @user_script:1.\r\n",
        ),
        (
            "local t = setmetatable({}, {__metatable = 'locked'}) return setmetatable(t, {})",
            "-ERR user_script:1: cannot change a protected metatable script: a5c896b8b788c3a102e5252d09f3591e746f4d48, on @user_script:1.\r\n",
        ),
        (
            "return redis.acl_check_cmd('nosuch')",
            "-ERR Invalid command passed to redis.acl_check_cmd() script: d2491587bab5149c93be0dce4426f7a06ba9e1a1, on @user_script:1.\r\n",
        ),
        (
            "return redis.acl_check_cmd({})",
            "-ERR Lua redis lib command arguments must be strings or integers script: 8b3d233cc233d15538b743edd3bc4603509e4325, on @user_script:1.\r\n",
        ),
        ("return redis.acl_check_cmd('config', 'get')", ":1\r\n"),
        ("return {pcall(bit.band, {})}", "*2\r\n$-1\r\n$51\r\nbad argument #1 to '?' (number expected, got table)\r\n"),
        (
            "return bit.band({})",
            "-ERR user_script:1: bad argument #1 to 'band' (number expected, got table) script: fdfcd4a526b9032c8d0b9f05f3e3b149837d79ec, on @user_script:1.\r\n",
        ),
        (
            "local sm = setmetatable sm(1)",
            "-ERR user_script:1: bad argument #1 to 'sm' (table expected, got number) script: 30ed2d491001bfb2db330d328b0222096ed20014, on @user_script:1.\r\n",
        ),
    ] {
        assert_eq!(eval(&mut r, script), want, "{script}");
    }
}

/// Redis 7.0.15's globals, `pairs(_G)` sorted (its Debian build has no `os` yet): nothing more is
/// reachable by name.
#[test]
fn globals_are_redis_s() {
    let l = Latch::start(&[]);
    let mut r = l.raw();
    let got = r.cmd(&[b"EVAL", b"local t = {} for k in pairs(_G) do t[#t+1] = k end table.sort(t) return t", b"0"]);
    let names = [
        "ARGV",
        "KEYS",
        "_G",
        "_VERSION",
        "__redis__err__handler",
        "assert",
        "bit",
        "cjson",
        "cmsgpack",
        "collectgarbage",
        "coroutine",
        "error",
        "gcinfo",
        "getmetatable",
        "ipairs",
        "load",
        "loadstring",
        "math",
        "next",
        "pairs",
        "pcall",
        "rawequal",
        "rawget",
        "rawset",
        "redis",
        "select",
        "setmetatable",
        "string",
        "struct",
        "table",
        "tonumber",
        "tostring",
        "type",
        "unpack",
        "xpcall",
    ];
    let want: String =
        format!("*{}\r\n", names.len()) + &names.iter().map(|n| format!("${}\r\n{n}\r\n", n.len())).collect::<String>();
    assert_eq!(got, want);
    for name in ["getfenv", "setfenv", "newproxy", "print", "dofile", "loadfile", "require", "module", "io", "debug"] {
        let got = r.cmd(&[b"EVAL", format!("return {name}").as_bytes(), b"0"]);
        assert!(got.contains(&format!("nonexistent global variable '{name}'")), "{name}: {got}");
    }
    assert_eq!(eval(&mut r, "return {pcall(rawset, _G, 'x', 1)}"), failed("Attempt to modify a readonly table"));
    assert_eq!(
        eval(&mut r, "return {pcall(function() string.x = 1 end)}"),
        failed("user_script:1: Attempt to modify a readonly table")
    );
}

/// Sends `EVAL script 0` and returns the reply.
fn eval(r: &mut Raw, script: &str) -> String {
    r.cmd(&[b"EVAL", script.as_bytes(), b"0"])
}

fn bulk(s: &str) -> String {
    format!("${}\r\n{s}\r\n", s.len())
}

/// `pcall` of a failing call as a script returns it: `[nil, message]` becomes `[false]` in RESP
/// (a Lua false is a null bulk), then the message.
fn failed(msg: &str) -> String {
    format!("*2\r\n$-1\r\n{}", bulk(msg))
}

/// CVE-2024-31449: `bit.tohex` with INT_MIN digits overflowed a stack buffer.
#[test]
fn cve_2024_31449_bit_tohex() {
    let l = Latch::start(&[]);
    let mut r = l.raw();
    assert_eq!(eval(&mut r, "return bit.tohex(65535, -2147483648)"), bulk("0000FFFF"));
    assert_eq!(eval(&mut r, "return bit.tohex(-1, 2147483647)"), bulk("ffffffff"));
}

/// CVE-2022-24834: cjson's encoder sized its buffer with an int (escaped strings of 1/6 the limit
/// overflowed it), and decoding ran unbounded recursion.
#[test]
fn cve_2022_24834_cjson() {
    let l = Latch::start(&[]);
    let mut r = l.raw();
    // Every byte of the string becomes a six-byte \u escape, plus the quotes.
    assert_eq!(eval(&mut r, "return #cjson.encode(string.rep('\\1', 100000))"), ":600002\r\n");
    let deep = "Found too many nested data structures (1001) at character 1001";
    assert_eq!(
        eval(&mut r, "return {pcall(cjson.decode, string.rep('[', 1001) .. string.rep(']', 1001))}"),
        failed(deep)
    );
    assert_eq!(
        eval(&mut r, "return {pcall(cjson.decode, string.rep('{\"a\":', 1001))}"),
        failed("Found too many nested data structures (1001) at character 5001")
    );
    assert_eq!(
        eval(&mut r, "local t = {1,2} t[3] = t return {pcall(cjson.encode, t)}"),
        failed("Cannot serialise, excessive nesting (1001)")
    );
    // Raising the limit does not let the recursion run past Lua's C stack bound.
    assert_eq!(
        eval(
            &mut r,
            "cjson.decode_max_depth(100000) local r = {pcall(cjson.decode, string.rep('{\"a\":', 100000))} \
             cjson.decode_max_depth(1000) return r"
        ),
        failed("Found too many nested data structures (4000) at character 19996")
    );
    assert_eq!(
        eval(&mut r, "return {pcall(cjson.decode_max_depth, 0)}"),
        failed("bad argument #1 to '?' (expected integer between 1 and 2147483647)")
    );
}

/// CVE-2020-14147 (and CVE-2018-11218): struct's sizes and alignments overflowed.
#[test]
fn cve_2020_14147_struct() {
    let l = Latch::start(&[]);
    let mut r = l.raw();
    assert_eq!(
        eval(&mut r, "return {pcall(struct.unpack, 'i2147483647', 'x')}"),
        failed("integral size 2147483647 is larger than limit of 32")
    );
    assert_eq!(
        eval(&mut r, "return {pcall(struct.pack, '!2147483647i', 1)}"),
        failed("alignment 2147483647 is not a power of 2")
    );
    assert_eq!(
        eval(&mut r, "return {pcall(struct.unpack, 'c2147483647', 'x')}"),
        failed("bad argument #2 to '?' (data string too short)")
    );
    assert_eq!(
        eval(&mut r, "return {pcall(struct.pack, 'c2147483647', 'x')}"),
        failed("bad argument #3 to '?' (string too short)")
    );
    assert_eq!(eval(&mut r, "return struct.pack('c0', 'x')"), bulk("x"));
}

/// CVE-2021-32626: scripts could grow the Lua stack past its end (many return values, many
/// arguments, deep msgpack arrays).
#[test]
fn cve_2021_32626_stack_growth() {
    let l = Latch::start(&[]);
    let mut r = l.raw();
    assert_eq!(
        eval(&mut r, "local t = {} for i = 1, 1000000 do t[i] = i end return {pcall(unpack, t)}"),
        failed("too many results to unpack")
    );
    assert_eq!(
        eval(&mut r, "return {pcall(cmsgpack.unpack, string.rep(cmsgpack.pack(1), 100000))}"),
        failed("stack overflow (too many return values at once; use unpack_one or unpack_limit instead.)")
    );
    assert_eq!(
        eval(&mut r, "return {pcall(cmsgpack.unpack, string.rep('\\145', 100000) .. '\\1')}"),
        failed("stack overflow (in function mp_decode_to_lua_array)")
    );
    assert_eq!(
        eval(&mut r, "local a = {} for i = 1, 7000 do a[i] = 'k' end return redis.call('del', unpack(a))"),
        ":0\r\n"
    );
}

/// CVE-2018-11218/11219: cmsgpack trusted lengths in its input and nested without bound.
#[test]
fn cmsgpack_lengths_and_nesting() {
    let l = Latch::start(&[]);
    let mut r = l.raw();
    for s in ["\\221\\255\\255\\255\\255", "\\223\\255\\255\\255\\255", "\\219\\255\\255\\255\\255x"] {
        assert_eq!(
            eval(&mut r, &format!("return {{pcall(cmsgpack.unpack, '{s}')}}")),
            failed("Missing bytes in input.")
        );
    }
    // Tables nested deeper than 16 are packed as nil; a table containing itself terminates.
    let packed = r.cmd_bytes(&[
        b"EVAL",
        b"local t = {} local c = t for i = 1, 100 do c[1] = {} c = c[1] end return cmsgpack.pack(t)",
        b"0",
    ]);
    assert_eq!(packed, [b"$17\r\n".as_slice(), &[0x91; 16], b"\xc0\r\n"].concat());
    assert_eq!(eval(&mut r, "local t = {} t[1] = t return #cmsgpack.pack(t)"), ":17\r\n");
}

/// CVE-2025-49844: stock Lua 5.1's parser does not anchor the chunk name, so a collection while
/// parsing could free it. Latch names every chunk with a live string; this runs the parser under
/// full collections with fresh names, which would crash a server that freed one.
#[test]
fn cve_2025_49844_chunk_names_survive_collections() {
    let l = Latch::start(&[]);
    let mut r = l.raw();
    let script = "local n = 0 for i = 1, 300 do collectgarbage('collect') \
                  local f = loadstring(string.rep(' ', 2000) .. 'return ' .. i, 'chunk' .. i .. string.rep('x', i)) \
                  local j = 0 local g = load(function() j = j + 1 collectgarbage('collect') \
                  if j == 1 then return 'return ' elseif j == 2 then return tostring(i) end end) \
                  n = n + f() + g() end return n";
    assert_eq!(eval(&mut r, script), format!(":{}\r\n", 300 * 301));
    assert_eq!(r.cmd(&[b"PING"]), "+PONG\r\n");
}
