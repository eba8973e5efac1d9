//! Random commands with arguments drawn from the fuzzer's bytes, against one engine (flushed per
//! input): every command gets a reply and nothing panics. Mirrors the proptest
//! `random_commands_always_get_a_reply` (crates/engine/tests/fuzz_props.rs).
#![no_main]

use engine::testkit::{FUZZ_WORDS, TestClient, TestServer, fuzzable_commands};
use libfuzzer_sys::fuzz_target;
use std::sync::{LazyLock, Mutex};

static ENGINE: LazyLock<Mutex<(TestServer, Vec<&'static str>)>> = LazyLock::new(|| {
    let ts = TestServer::new();
    // Strings may grow to 1 MiB, not 512: SETRANGE/SETBIT at a far offset stay fast (the limit's
    // error path is fuzzed all the same).
    ts.client().run("CONFIG SET proto-max-bulk-len 1048576");
    Mutex::new((ts, fuzzable_commands()))
});

/// Reads the next argument: a word of the vocabulary, or up to 15 raw bytes.
fn next_arg<'a>(data: &mut &'a [u8]) -> Option<Vec<u8>> {
    let (&tag, rest) = data.split_first()?;
    *data = rest;
    if tag & 0x80 == 0 {
        return Some(FUZZ_WORDS[tag as usize % FUZZ_WORDS.len()].as_bytes().to_vec());
    }
    let n = ((tag & 0x0f) as usize).min(data.len());
    let (raw, rest) = data.split_at(n);
    *data = rest;
    Some(raw.to_vec())
}

fuzz_target!(|data: &[u8]| {
    let guard = ENGINE.lock().unwrap_or_else(|e| e.into_inner());
    let (ts, names) = &*guard;
    let mut c: TestClient = ts.client();
    c.run("FLUSHALL");
    let mut data = data;
    while let Some((&pick, rest)) = data.split_first() {
        data = rest;
        let name = names[pick as usize % names.len()];
        let nargs = data.first().map_or(0, |b| b % 6);
        data = data.get(1..).unwrap_or_default();
        let mut argv = vec![name.as_bytes().to_vec()];
        for _ in 0..nargs {
            match next_arg(&mut data) {
                Some(a) => argv.push(a),
                None => break,
            }
        }
        // UNSUBSCRIBE and its kin answer with messages (pushes) only.
        assert!(c.cmd(&argv).is_some() || !c.pushes().is_empty(), "no reply to {name}");
    }
});
