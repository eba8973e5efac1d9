//! Background snapshots (`Server::begin_snapshot`, see `keyspace::Table::begin_snapshot`): the
//! file holds the data of the instant the snapshot began, whatever commands do while it is
//! written. Random command sequences (every family, key deletion and creation, renames, TTLs
//! passing lazily and actively, FLUSHDB, SWAPDB, locks) run between the chunks of the write, over
//! a dataset large enough that the walk takes many steps; the file, loaded into a fresh server,
//! must give the `DEBUG DIGEST` taken when the snapshot began. A second snapshot after it must
//! see the data as it is then (no entry mistaken for written by the first).
//!
//! `LATCH_SNAPSHOT_CASES=10000 cargo test -p engine --test snapshot --release` is the extended run.

mod vocab;

use engine::persistence::SnapshotKind;
use engine::testkit::{TestClient, TestServer};
use proptest::prelude::*;
use std::io::Write;

/// What runs between two chunks of the file.
#[derive(Clone, Debug)]
enum Step {
    /// A command of the shared vocabulary.
    Cmd(u8, u16, u16, u16),
    /// A command on the filler keys (the bulk the walk goes through).
    Filler(u8, u16, u16),
    /// Time passes.
    Advance(u16),
    /// The active expiry cycle runs.
    ActiveExpire,
}

const FILLER: u16 = 300;

fn filler(kind: u8, a: u16, b: u16) -> Vec<String> {
    let (k, k2) = (format!("f{}", a % FILLER), format!("f{}", b % FILLER));
    let line = match kind % 12 {
        0 => format!("DEL {k}"),
        1 => format!("SET {k} new{b}"),
        2 => format!("PEXPIRE {k} {}", b % 2000 + 1),
        3 => format!("RENAME {k} {k2}"),
        4 => format!("RPUSH {k} x{b}"),
        5 => format!("HSET {k} g{b} v"),
        6 => format!("UNLINK {k} {k2}"),
        7 => format!("PERSIST {k}"),
        8 => format!("MOVE {k} 1"),
        9 => format!("SET n{a} fresh PX {}", b % 3000 + 1),
        10 => format!("APPEND {k} z"),
        _ => format!("LOCK {k} o{b} {}", b % 3000 + 1),
    };
    line.split(' ').map(str::to_string).collect()
}

fn step() -> impl Strategy<Value = Step> {
    let cmd = (any::<u8>(), any::<u16>(), any::<u16>(), any::<u16>());
    prop_oneof![
        6 => cmd.prop_map(|(k, a, b, c)| Step::Cmd(k, a, b, c)),
        8 => (any::<u8>(), any::<u16>(), any::<u16>()).prop_map(|(k, a, b)| Step::Filler(k, a, b)),
        2 => any::<u16>().prop_map(Step::Advance),
        1 => Just(Step::ActiveExpire),
    ]
}

fn server() -> TestServer {
    let ts = TestServer::new();
    ts.srv.config.set("enable-debug-command", "yes", true).expect("valid");
    ts
}

fn digest(c: &mut TestClient) -> String {
    engine::testkit::show(&c.cmd(&["DEBUG", "DIGEST"]).expect("reply"))
}

/// Fills both databases: strings, lists, hashes, sets, sorted sets, some with TTLs, some locks.
fn fill(c: &mut TestClient, seed: u16) {
    for db in ["1", "0"] {
        c.cmd(&["SELECT", db]);
        for i in 0..FILLER {
            let k = format!("f{i}");
            let line = match (u32::from(i) + u32::from(seed)) % 6 {
                0 => format!("SET {k} v{i}"),
                1 => format!("RPUSH {k} a b {i}"),
                2 => format!("HSET {k} f {i} g x"),
                3 => format!("SADD {k} {i} m"),
                4 => format!("ZADD {k} {i} m 2 n"),
                _ => format!("LOCK {k} o{i} {}", 500 + i * 7),
            };
            c.cmd(&line.split(' ').collect::<Vec<_>>());
            if i % 4 == 1 {
                c.cmd(&["PEXPIRE", &k, &(100 + u32::from(i) * 11).to_string()]);
            }
        }
    }
}

/// Runs `steps` between the chunks of a snapshot's write: each write to the file runs the next
/// `per_chunk` of them.
struct Interleaved<'a> {
    file: Vec<u8>,
    steps: std::slice::Iter<'a, Step>,
    per_chunk: usize,
    ts: &'a TestServer,
    client: TestClient,
}

impl Interleaved<'_> {
    fn run(&mut self, n: usize) {
        for _ in 0..n {
            let Some(s) = self.steps.next() else { return };
            match s {
                Step::Cmd(k, a, b, c) => {
                    let unix_s = self.ts.srv.clock.unix_ms() / 1000;
                    self.client.cmd(&vocab::command(*k, *a, *b, *c, unix_s));
                }
                Step::Filler(k, a, b) => {
                    self.client.cmd(&filler(*k, *a, *b));
                }
                Step::Advance(ms) => self.ts.clock.advance_ms(u64::from(*ms % 700)),
                Step::ActiveExpire => {
                    self.ts.srv.active_expire_cycle(self.ts.srv.clock.now_ms(), 50);
                }
            }
        }
    }
}

impl Write for Interleaved<'_> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.file.extend_from_slice(buf);
        self.run(self.per_chunk);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// A background snapshot of `ts` taken now, written while `steps` run: the file it made.
fn snapshot_during(ts: &TestServer, steps: &[Step], per_chunk: usize, visits: usize, kind: SnapshotKind) -> Vec<u8> {
    let snap = ts.srv.begin_snapshot(&mut ts.srv.ks.lock_all(), kind).with_steps(visits, 64);
    let mut w = Interleaved { file: Vec::new(), steps: steps.iter(), per_chunk, ts, client: ts.client() };
    snap.write(&mut w, &ts.srv.fence).expect("written to memory");
    w.run(usize::MAX);
    w.file
}

/// The digest a fresh server has after loading `file`, at the monotonic time `at`.
fn loaded_digest(file: &[u8], at: u64, kind: SnapshotKind) -> Result<String, TestCaseError> {
    let b = server();
    b.clock.advance_ms(at.saturating_sub(b.srv.clock.now_ms()));
    let loaded = match kind {
        SnapshotKind::AofBaseCommands => {
            let d = engine::changes::decode_commands(file);
            prop_assert_eq!(d.end, engine::changes::AofEnd::Complete);
            b.srv.aof_replay(d.commands).map(drop)
        }
        _ => b.srv.rdb_load(file).map(drop),
    };
    prop_assert!(loaded.is_ok(), "the file does not load: {:?}", loaded);
    Ok(digest(&mut b.client()))
}

fn check(
    seed: u16,
    before: &[Step],
    during: &[Step],
    per_chunk: usize,
    visits: usize,
    kind: SnapshotKind,
) -> Result<(), TestCaseError> {
    let a = server();
    let mut c = a.client();
    fill(&mut c, seed);
    let mut prep = Interleaved { file: Vec::new(), steps: before.iter(), per_chunk: 0, ts: &a, client: a.client() };
    prep.run(usize::MAX);
    for round in 0..2 {
        // DEBUG DIGEST counts keys whose TTL passed but that are still stored, as Redis's does; a
        // file never holds them. Reclaim them first.
        a.srv.active_expire_cycle(a.srv.clock.now_ms(), 1_000_000);
        let (expected, at) = (digest(&mut c), a.srv.clock.now_ms());
        let file = snapshot_during(&a, during, per_chunk, visits, kind);
        prop_assert_eq!(loaded_digest(&file, at, kind)?, expected, "snapshot {} differs from its instant", round);
    }
    Ok(())
}

fn cases() -> u32 {
    std::env::var("LATCH_SNAPSHOT_CASES").ok().and_then(|v| v.parse().ok()).unwrap_or(48)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: cases(), ..ProptestConfig::default() })]

    #[test]
    fn a_snapshot_holds_the_data_of_its_instant(
        seed in any::<u16>(),
        before in proptest::collection::vec(step(), 0..20),
        during in proptest::collection::vec(step(), 1..150),
        per_chunk in 1usize..6,
        visits in 1usize..40,
        commands in any::<bool>(),
    ) {
        let kind = if commands { SnapshotKind::AofBaseCommands } else { SnapshotKind::Rdb };
        check(seed, &before, &during, per_chunk, visits, kind)?;
    }
}

/// Whole-table changes in the middle of a walk: FLUSHDB and SWAPDB finish the walk of the tables
/// they replace first.
#[test]
fn flushdb_and_swapdb_during_a_snapshot() {
    let during: Vec<Step> = [59u8, 60, 17, 58, 59]
        .iter()
        .flat_map(|&k| [Step::Filler(1, 3, 4), Step::Cmd(k, 0, 0, 8), Step::Filler(3, 5, 6)])
        .collect();
    check(0, &[], &during, 1, 5, SnapshotKind::Rdb).unwrap();
    check(0, &[], &during, 1, 5, SnapshotKind::AofBaseCommands).unwrap();
}

/// A snapshot whose file cannot be written ends its walk anyway: the next one is complete.
#[test]
fn a_failed_write_leaves_the_next_snapshot_whole() {
    struct Full(usize);
    impl Write for Full {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            if self.0 == 0 {
                return Err(std::io::Error::new(std::io::ErrorKind::StorageFull, "full"));
            }
            self.0 -= 1;
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let a = server();
    let mut c = a.client();
    fill(&mut c, 0);
    for _ in 0..3 {
        let snap = a.srv.begin_snapshot(&mut a.srv.ks.lock_all(), SnapshotKind::Rdb).with_steps(7, 64);
        assert!(snap.write(&mut Full(3), &a.srv.fence).is_err());
    }
    a.srv.active_expire_cycle(a.srv.clock.now_ms(), 1_000_000);
    let (expected, at) = (digest(&mut c), a.srv.clock.now_ms());
    let file = snapshot_during(&a, &[], 1, 7, SnapshotKind::Rdb);
    assert_eq!(loaded_digest(&file, at, SnapshotKind::Rdb).unwrap(), expected);
}

/// INFO's snapshot progress: every key counted once, and what stands for copy-on-write is the
/// records a command made the snapshot write ahead of its walk.
#[test]
fn a_snapshot_counts_its_keys_and_what_commands_made_it_copy() {
    use std::sync::atomic::Ordering;
    let a = server();
    let mut c = a.client();
    c.run("CONFIG SET rdbcompression no");
    for i in 0..100 {
        c.run(&format!("SET k{i} {}", "v".repeat(100)));
    }
    let snap = a.srv.begin_snapshot(&mut a.srv.ks.lock_all(), SnapshotKind::Rdb).with_steps(1, 1);
    let progress = a.srv.persistence.progress.lock().clone().expect("a snapshot runs");
    assert_eq!(progress.keys_total.load(Ordering::Relaxed), 100);
    assert_eq!(progress.copied_bytes.load(Ordering::Relaxed), 0);
    // Changed before the walk reached them: written ahead, as they were.
    for i in 0..10 {
        c.run(&format!("SET k{i} new"));
    }
    let copied = progress.copied_bytes.load(Ordering::Relaxed);
    assert!(copied >= 10 * 100, "ten records of 100-byte values: {copied}");
    snap.write(&mut Vec::new(), &a.srv.fence).unwrap();
    assert_eq!(progress.keys_written.load(Ordering::Relaxed), 100);
    assert_eq!(progress.copied_bytes.load(Ordering::Relaxed), copied, "the walk copies nothing");
}
