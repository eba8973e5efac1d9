//! Arbitrary bytes through the Lua libraries' decoders and back to RESP (cjson, cmsgpack, struct,
//! and the parser through loadstring), and arbitrary RESP replies of redis.call converted to Lua
//! and back: every script replies, nothing panics or escapes. Mirrors the proptest
//! `lua_decoders_take_any_bytes`.
#![no_main]

use engine::testkit::{LUA_DECODER_SCRIPTS, TestServer};
use libfuzzer_sys::fuzz_target;
use std::sync::{LazyLock, Mutex};

static ENGINE: LazyLock<Mutex<TestServer>> = LazyLock::new(|| Mutex::new(TestServer::new()));

fuzz_target!(|data: &[u8]| {
    let Some((&pick, input)) = data.split_first() else { return };
    let ts = ENGINE.lock().unwrap_or_else(|e| e.into_inner());
    let mut c = ts.client();
    let script = LUA_DECODER_SCRIPTS[pick as usize % LUA_DECODER_SCRIPTS.len()];
    let reply = c.cmd(&[b"EVAL".as_slice(), script.as_bytes(), b"0", input]);
    assert!(reply.is_some());
    // RESP -> Lua -> RESP: the bytes stored, read back by a script through redis.call.
    c.cmd(&[b"SET".as_slice(), b"v", input]);
    let back = c.cmd(&[b"EVAL".as_slice(), b"return redis.call('get', KEYS[1])", b"1", b"v"]);
    assert_eq!(back, Some(engine::Frame::Bulk(engine::Bytes::copy_from_slice(input))));
});
