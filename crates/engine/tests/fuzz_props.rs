//! Properties a fuzzer would check, as proptests that run in `cargo test`: any sequence of commands
//! with arbitrary arguments, and any bytes handed to the Lua libraries' decoders, get a reply and
//! never panic the engine.

use engine::testkit::TestServer;
use proptest::prelude::*;

/// Arguments mostly from words commands care about, sometimes arbitrary bytes.
fn arg() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        4 => proptest::sample::select(engine::testkit::FUZZ_WORDS).prop_map(|w| w.as_bytes().to_vec()),
        1 => proptest::collection::vec(any::<u8>(), 0..24),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 96, ..ProptestConfig::default() })]

    #[test]
    fn random_commands_always_get_a_reply(
        cmds in proptest::collection::vec(
            (proptest::sample::select(engine::testkit::fuzzable_commands()), proptest::collection::vec(arg(), 0..6)),
            1..24,
        )
    ) {
        let ts = TestServer::new();
        let mut c = ts.client();
        for (name, args) in cmds {
            let mut argv: Vec<Vec<u8>> = vec![name.as_bytes().to_vec()];
            argv.extend(args);
            // UNSUBSCRIBE and its kin answer with messages (pushes) only.
            prop_assert!(c.cmd(&argv).is_some() || !c.pushes().is_empty(), "no reply to {name}");
        }
    }

    #[test]
    fn lua_decoders_take_any_bytes(input in proptest::collection::vec(any::<u8>(), 0..256)) {
        let ts = TestServer::new();
        let mut c = ts.client();
        for script in engine::testkit::LUA_DECODER_SCRIPTS {
            let reply = c.cmd(&[b"EVAL".to_vec(), script.as_bytes().to_vec(), b"0".to_vec(), input.clone()]);
            prop_assert!(reply.is_some());
        }
    }

    /// Any parameter set to any words: never a panic, and an accepted value reads back as a value
    /// accepted again unchanged (the `config` fuzz target; Redis's "CONFIG sanity").
    #[test]
    fn config_values_read_back(pick in any::<usize>(), words in proptest::collection::vec(arg(), 0..3)) {
        let config = engine::config::Config::new();
        let names: Vec<String> = config.get_matching(&[b"*".as_slice()]).into_iter().map(|(k, _)| k).collect();
        let name = &names[pick % names.len()];
        let value = words.iter().map(|w| String::from_utf8_lossy(w).into_owned()).collect::<Vec<_>>().join(" ");
        if config.set(name, &value, true).is_ok()
            && let Some(shown) = config.get(name)
            && !engine::testkit::redis_cannot_reload(name, &shown)
        {
            prop_assert!(config.set(name, &shown, true).is_ok(), "{} {:?} -> {:?}", name, value, shown);
            prop_assert_eq!(config.get(name), Some(shown));
        }
    }
}

/// Found by the property in CI: inputs that decode to hundreds of values (250 msgpack `true`s, a
/// struct format of 300 items).
#[test]
fn decoders_returning_hundreds_of_values() {
    let ts = TestServer::new();
    let mut c = ts.client();
    for input in [vec![0xc3u8; 250], b"b".repeat(300)] {
        for script in engine::testkit::LUA_DECODER_SCRIPTS {
            let reply = c.cmd(&[b"EVAL".to_vec(), script.as_bytes().to_vec(), b"0".to_vec(), input.clone()]);
            assert!(reply.is_some(), "{script}");
        }
    }
}
