//! The change stream's contract (see `engine::changes`): random command sequences run on server A
//! (every family, MULTI, scripts with random and time-dependent writes, blocking pops and lock waits
//! served by later writes, expiries lazily and actively, native locks) and A's stream replayed into
//! a fresh server B, each unit at the time A ran it, leave B with A's data: same `DEBUG DIGEST`
//! (values, TTLs, lock holders and tokens) and the same fencing counter.
//!
//! `LATCH_REPLAY_CASES=100000 cargo test -p engine --test replay --release` is the extended run.

use engine::testkit::{TestClient, TestServer};
use proptest::prelude::*;

mod vocab;

use vocab::{LISTS, ZSETS, command, pick};

/// Scripts whose effects are random or time-dependent, with the key types they expect.
const SCRIPTS: &[(&str, &[&str])] = &[
    ("local m = redis.call('spop', KEYS[1]) if m then redis.call('rpush', KEYS[2], m) end return m", &["t0", "l0"]),
    ("redis.call('set', KEYS[1], redis.call('time')[2]) return redis.call('incr', KEYS[2])", &["s0", "s1"]),
    ("redis.call('lpush', KEYS[1], 'x') redis.call('pexpire', KEYS[1], 500) return 1", &["l1"]),
    ("return redis.call('incrbyfloat', KEYS[1], '0.1')", &["s1"]),
];

/// What a step of a sequence does.
#[derive(Clone, Debug)]
enum Step {
    /// A command on the main client.
    Cmd(u8, u16, u16, u16),
    /// A transaction of up to three commands.
    Multi(Vec<(u8, u16, u16, u16)>),
    /// A script from [`SCRIPTS`].
    Eval(u8),
    /// A blocking command on the second client (if it is not blocked already).
    Block(u8, u16),
    /// Time passes.
    Advance(u16),
    /// The active expiry cycle runs.
    ActiveExpire,
}

fn step() -> impl Strategy<Value = Step> {
    let cmd = (any::<u8>(), any::<u16>(), any::<u16>(), any::<u16>());
    prop_oneof![
        12 => cmd.prop_map(|(k, a, b, c)| Step::Cmd(k, a, b, c)),
        1 => proptest::collection::vec(cmd, 1..4).prop_map(Step::Multi),
        1 => any::<u8>().prop_map(Step::Eval),
        2 => (any::<u8>(), any::<u16>()).prop_map(|(k, a)| Step::Block(k, a)),
        2 => any::<u16>().prop_map(Step::Advance),
        1 => Just(Step::ActiveExpire),
    ]
}

fn run<A: AsRef<[u8]>>(c: &mut TestClient, args: &[A]) {
    c.cmd(args);
}

fn server() -> TestServer {
    let ts = TestServer::new();
    ts.srv.config.set("enable-debug-command", "yes", true).expect("valid");
    ts
}

/// Runs `steps` on a recording server, replays its stream into a fresh one and compares.
fn check(steps: &[Step]) -> Result<(), TestCaseError> {
    let a = server();
    a.srv.record_changes();
    let mut main = a.client();
    let mut waiter = a.client();
    for s in steps {
        let unix_s = a.srv.clock.unix_ms() / 1000;
        match s {
            Step::Cmd(k, x, y, z) => run(&mut main, &command(*k, *x, *y, *z, unix_s)),
            Step::Multi(cmds) => {
                run(&mut main, &["MULTI".to_string()]);
                for (k, x, y, z) in cmds {
                    let c = command(*k, *x, *y, *z, unix_s);
                    if c[0] != b"SELECT" {
                        run(&mut main, &c);
                    }
                }
                run(&mut main, &["EXEC".to_string()]);
            }
            Step::Eval(i) => {
                let (body, keys) = SCRIPTS[*i as usize % SCRIPTS.len()];
                let mut args = vec!["EVAL".to_string(), body.to_string(), keys.len().to_string()];
                args.extend(keys.iter().map(|k| k.to_string()));
                run(&mut main, &args);
            }
            Step::Block(k, x) => {
                if waiter.client.blocked.is_some() {
                    // Still waiting: collect a reply if a writer served it since.
                    waiter.blocked_reply();
                    continue;
                }
                let (l, l2, z) = (pick(LISTS, *x), pick(LISTS, x / 7), pick(ZSETS, *x));
                let line = match k % 7 {
                    5 => format!("XREAD BLOCK 0 STREAMS {} $", pick(vocab::STREAMS, *x)),
                    6 => format!("XREADGROUP GROUP g cw BLOCK 0 STREAMS {} >", pick(vocab::STREAMS, *x)),
                    0 => format!("BLPOP {l} 0"),
                    1 => format!("BLMOVE {l} {l2} LEFT LEFT 0"),
                    2 => format!("BZPOPMIN {z} 0"),
                    3 => format!("BLMPOP 0 1 {l} RIGHT COUNT 2"),
                    _ => format!("LOCK lk w {} WAIT 0", x % 2000 + 1),
                };
                run(&mut waiter, &line.split(' ').map(str::to_string).collect::<Vec<_>>());
            }
            Step::Advance(ms) => a.clock.advance_ms(u64::from(*ms % 1500)),
            Step::ActiveExpire => {
                a.srv.active_expire_cycle(a.srv.clock.now_ms(), 100);
            }
        }
        if waiter.client.blocked.is_some() {
            waiter.blocked_reply();
        }
    }
    let units = a.srv.changes.take();
    let b = server();
    let mut replay = b.client();
    let mut db = 0usize;
    for u in &units {
        let now = b.srv.clock.now_ms();
        prop_assert!(u.at >= now, "units out of time order");
        b.clock.advance_ms(u.at - now);
        let wrap = u.effects.len() > 1;
        if wrap {
            replay.cmd(&["MULTI"]);
        }
        for e in &u.effects {
            if e.db != db {
                replay.cmd(&["SELECT".to_string(), e.db.to_string()]);
                db = e.db;
            }
            let reply = replay.cmd(&e.args);
            if !wrap {
                let reply = engine::testkit::show(&reply.unwrap_or(engine::Frame::Null));
                prop_assert!(!reply.starts_with('-'), "effect {:?} failed on replay: {}", e.args, reply);
            }
        }
        if wrap {
            let reply = replay.cmd(&["EXEC"]).unwrap_or(engine::Frame::Null);
            let failed = match &reply {
                engine::Frame::Array(v) => v.iter().any(|f| matches!(f, engine::Frame::Error(_))),
                _ => true,
            };
            prop_assert!(!failed, "unit {:?} failed on replay: {}", u.effects, engine::testkit::show(&reply));
        }
    }
    b.clock.advance_ms(a.srv.clock.now_ms() - b.srv.clock.now_ms());
    let digest = |c: &mut TestClient| engine::testkit::show(&c.cmd(&["DEBUG", "DIGEST"]).expect("reply"));
    let (da, db_) = (digest(&mut a.client()), digest(&mut b.client()));
    prop_assert_eq!(da, db_, "data differs after replaying {} units", units.len());
    // Streams' consumer groups are not in the digest: compare what XINFO GROUPS shows.
    for d in ["0", "1"] {
        for x in vocab::STREAMS {
            let groups = |c: &mut TestClient| {
                c.cmd(&["SELECT", d]);
                engine::testkit::show(&c.cmd(&["XINFO", "GROUPS", x]).expect("reply"))
            };
            let (ga, gb) = (groups(&mut a.client()), groups(&mut b.client()));
            prop_assert_eq!(ga, gb, "groups of {} in db {} differ", x, d);
        }
    }
    let fence = |t: &TestServer| t.srv.fence.load(std::sync::atomic::Ordering::Relaxed);
    prop_assert_eq!(fence(&a), fence(&b), "fencing counters differ");
    Ok(())
}

fn cases() -> u32 {
    std::env::var("LATCH_REPLAY_CASES").ok().and_then(|v| v.parse().ok()).unwrap_or(64)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: cases(), ..ProptestConfig::default() })]

    #[test]
    fn replaying_the_change_stream_gives_the_same_data(steps in proptest::collection::vec(step(), 1..60)) {
        check(&steps)?;
    }
}

/// A fixed sequence through each rewrite rule, so that a default run covers them all.
#[test]
fn every_rewrite_rule_replays() {
    let mut steps: Vec<Step> =
        (0..64u8).map(|k| Step::Cmd(k, u16::from(k), u16::from(k) / 3, u16::from(k) * 7)).collect();
    steps.push(Step::Block(0, 0));
    steps.push(Step::Cmd(17, 0, 0, 1));
    steps.push(Step::Block(4, 100));
    steps.push(Step::Cmd(55, 0, 0, 0));
    steps.push(Step::Advance(1400));
    steps.push(Step::Advance(1400));
    steps.push(Step::ActiveExpire);
    steps.extend((0..4).map(Step::Eval));
    steps.push(Step::Multi(vec![(1, 0, 0, 5), (33, 0, 0, 0), (12, 1, 0, 6)]));
    steps.push(Step::Cmd(63, 0, 0, 2));
    check(&steps).unwrap();
}

/// Found by the property: a served BLMOVE whose destination had expired. The destination's `DEL`
/// must come before the move in the stream, or the replica deletes what was moved there.
#[test]
fn a_served_move_onto_an_expired_key() {
    check(&[Step::Eval(2), Step::Advance(501), Step::Block(1, 51222), Step::Cmd(17, 0, 0, 0)]).unwrap();
}

/// Found by the property: EXEC serves the clients blocked on what it pushed under its own locks, so
/// its unit must be published before theirs (LPUSH, then the served LPOP).
#[test]
fn a_transaction_that_serves_a_blocked_pop() {
    check(&[Step::Block(0, 0), Step::Multi(vec![(17, 0, 0, 0)])]).unwrap();
}

/// Found by the extended run: a transaction that swaps databases and then touches a key that had
/// expired. The key's `DEL` belongs after the SWAPDB, inside the transaction's unit.
#[test]
fn an_expired_key_deleted_after_a_swap_in_the_same_transaction() {
    let steps = [
        Step::Cmd(55, 0, 0, 0),
        Step::Cmd(51, 28789, 34147, 0),
        Step::Cmd(58, 0, 0, 39889),
        Step::Advance(2),
        Step::Multi(vec![(59, 0, 0, 0), (46, 451, 47097, 0)]),
    ];
    check(&steps).unwrap();
}

/// The stream commands of the vocabulary in turn, with blocked XREAD and XREADGROUP readers that
/// later XADDs serve: clock-made IDs, approximate trims and group reads (XCLAIM effects) replay
/// to the same entries and groups.
#[test]
fn stream_effects_replay() {
    let mut steps = Vec::new();
    for round in 0..4u16 {
        for k in 0..9u16 {
            steps.push(Step::Cmd(63, round, k, 4 * k + 3));
            if k == 2 {
                steps.push(Step::Block(if round % 2 == 0 { 6 } else { 5 }, round));
            }
        }
        steps.push(Step::Advance(3));
    }
    check(&steps).unwrap();
}
