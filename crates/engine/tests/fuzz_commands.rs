//! Every command in the table, called with random arguments: no input may panic the engine (a panic
//! would be a key-spec gap, an unchecked index or an overflow). Deterministic: a fixed seed.

use engine::testkit::TestServer;
use rand::{Rng, SeedableRng};

const WORDS: &[&str] = &[
    "k",
    "k2",
    "{t}a",
    "0",
    "1",
    "-1",
    "2",
    "10",
    "-10",
    "100",
    "9223372036854775807",
    "-9223372036854775808",
    "18446744073709551616",
    "1.5",
    "-inf",
    "+inf",
    "nan",
    "",
    " ",
    "abc",
    "*",
    "?",
    "[",
    "\\",
    "NX",
    "XX",
    "GT",
    "LT",
    "EX",
    "PX",
    "EXAT",
    "PXAT",
    "KEEPTTL",
    "GET",
    "COUNT",
    "MATCH",
    "TYPE",
    "WITHSCORES",
    "LIMIT",
    "BY",
    "STORE",
    "LEFT",
    "RIGHT",
    "MIN",
    "MAX",
    "BYSCORE",
    "BYLEX",
    "REV",
    "(1",
    "[a",
    "-",
    "+",
    "WEIGHTS",
    "AGGREGATE",
    "SUM",
    "IFEQ",
    "WAIT",
    "OVERFLOW",
    "SAT",
    "u8",
    "i64",
    "#1",
    "INCRBY",
    "SET",
    "ALPHA",
    "DESC",
    "return 1",
    "return redis.call('get', KEYS[1])",
    "#!lua name=l\nredis.register_function('f', function() return 1 end)",
];

fn arg(rng: &mut impl Rng) -> String {
    if rng.random_bool(0.8) {
        WORDS[rng.random_range(0..WORDS.len())].to_string()
    } else {
        (0..rng.random_range(0..20)).map(|_| rng.random_range(0u8..=255) as char).collect()
    }
}

#[test]
fn random_arguments_never_panic() {
    let ts = TestServer::new();
    let mut names: Vec<Vec<String>> = Vec::new();
    for c in ts.srv.table.all() {
        if c.subcommands.is_empty() {
            names.push(vec![c.name.to_string()]);
        }
        for s in c.subcommands {
            let mut parts = s.name.split('|');
            names.push(parts.by_ref().map(str::to_string).collect());
        }
    }
    let mut rng = rand::rngs::StdRng::seed_from_u64(0x5eed);
    let mut c = ts.client();
    for round in 0..100 {
        for name in &names {
            // DEBUG SLEEP would sleep; SHUTDOWN and MONITOR change the client for the next rounds.
            if matches!(name[0].as_str(), "debug" | "shutdown" | "monitor" | "quit" | "reset" | "hello" | "auth") {
                continue;
            }
            let mut args: Vec<String> = name.clone();
            for _ in 0..rng.random_range(0..7) {
                args.push(arg(&mut rng));
            }
            let res = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| c.cmd(&args)));
            assert!(res.is_ok(), "round {round}: {args:?} panicked");
            // Leave MULTI and blocking states so every command keeps being exercised.
            let _ = c.cmd(&["DISCARD"]);
            if c.client.blocked.is_some() {
                let _ = c.time_out();
            }
            c.client.reply_mode = engine::client::ReplyMode::On;
            c.client.close_after_reply = false;
        }
        ts.clock.advance_ms(37);
    }
}
