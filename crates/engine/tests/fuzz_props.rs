//! Properties a fuzzer would check, as proptests that run in `cargo test`: any sequence of commands
//! with arbitrary arguments, and any bytes handed to the Lua libraries' decoders, get a reply and
//! never panic the engine.

use engine::command::Flags;
use engine::testkit::TestServer;
use proptest::prelude::*;

/// Commands a fuzz run may call: not the ones that block, stop the server, sleep or turn the client
/// into something else (MONITOR, replication).
fn callable() -> Vec<&'static str> {
    engine::cmd::table()
        .all()
        .iter()
        .filter(|c| !c.flags.has(Flags::BLOCKING))
        .map(|c| c.name)
        .filter(|n| {
            !matches!(
                *n,
                "shutdown"
                    | "debug"
                    | "monitor"
                    | "sync"
                    | "psync"
                    | "wait"
                    | "waitaof"
                    | "failover"
                    | "replicaof"
                    | "slaveof"
                    | "quit"
                    | "subscribe"
                    | "psubscribe"
                    | "ssubscribe"
                    | "client"
                    | "script"
                    | "function"
                    | "eval"
                    | "evalsha"
                    | "eval_ro"
                    | "evalsha_ro"
                    | "fcall"
                    | "fcall_ro"
            )
        })
        .collect()
}

/// Arguments mostly from words commands care about, sometimes arbitrary bytes.
fn arg() -> impl Strategy<Value = Vec<u8>> {
    let words: Vec<&'static str> = vec![
        "k",
        "k2",
        "h",
        "0",
        "1",
        "-1",
        "10",
        "2147483648",
        "-9223372036854775808",
        "*",
        "x",
        "EX",
        "PX",
        "NX",
        "XX",
        "GT",
        "LT",
        "WITHSCORES",
        "LIMIT",
        "+inf",
        "-inf",
        "(1",
        "[a",
        "-",
        "+",
        "1.5",
        "nan",
        "",
        "COUNT",
        "MATCH",
        "TYPE",
        "BY",
        "GET",
        "STORE",
        "LEFT",
        "RIGHT",
        "BEFORE",
        "AFTER",
        "IDX",
        "LEN",
        "REV",
    ];
    prop_oneof![
        4 => proptest::sample::select(words).prop_map(|w| w.as_bytes().to_vec()),
        1 => proptest::collection::vec(any::<u8>(), 0..24),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 96, ..ProptestConfig::default() })]

    #[test]
    fn random_commands_always_get_a_reply(
        cmds in proptest::collection::vec(
            (proptest::sample::select(callable()), proptest::collection::vec(arg(), 0..6)),
            1..24,
        )
    ) {
        let ts = TestServer::new();
        let mut c = ts.client();
        for (name, args) in cmds {
            let mut argv: Vec<Vec<u8>> = vec![name.as_bytes().to_vec()];
            argv.extend(args);
            prop_assert!(c.cmd(&argv).is_some(), "no reply to {name}");
        }
    }

    #[test]
    fn lua_decoders_take_any_bytes(input in proptest::collection::vec(any::<u8>(), 0..256)) {
        let ts = TestServer::new();
        let mut c = ts.client();
        for script in [
            "return {pcall(cjson.decode, ARGV[1])}",
            "return {pcall(cmsgpack.unpack, ARGV[1])}",
            "return {pcall(struct.unpack, ARGV[1], ARGV[1])}",
            "return {pcall(struct.pack, ARGV[1], 1, 'x')}",
            "return {pcall(loadstring, ARGV[1])}",
        ] {
            let reply = c.cmd(&[b"EVAL".to_vec(), script.as_bytes().to_vec(), b"0".to_vec(), input.clone()]);
            prop_assert!(reply.is_some());
        }
    }
}
