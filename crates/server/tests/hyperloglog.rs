//! HyperLogLog against redis-server 7.0.15: the same commands give the same reply bytes and leave
//! byte-identical values (GET) on both servers, sparse and dense, across promotion and merges;
//! DUMP payloads restore across servers to the same value and count; corrupted and foreign strings
//! get Redis's errors, and randomly corrupted values answer as Redis answers.

mod common;

use common::{Latch, Raw, RedisServer};
use rand::{Rng, SeedableRng};

/// Both servers and a connection to each.
struct Pair {
    _latch: Latch,
    _redis: RedisServer,
    l: Raw,
    r: Raw,
}

impl Pair {
    fn start(what: &str) -> Option<Pair> {
        let redis = RedisServer::start_or_skip(what)?;
        let latch = Latch::start(&["--save", ""]);
        let (l, r) = (latch.raw(), redis.raw());
        Some(Pair { _latch: latch, _redis: redis, l, r })
    }

    /// Runs `args` on both and asserts that the replies are the same bytes; returns them.
    fn same(&mut self, args: &[&[u8]]) -> Vec<u8> {
        let (lr, rr) = (self.l.cmd_bytes(args), self.r.cmd_bytes(args));
        assert_eq!(
            String::from_utf8_lossy(&lr),
            String::from_utf8_lossy(&rr),
            "latch and redis differ on {:?}",
            args.iter().map(|a| String::from_utf8_lossy(a)).collect::<Vec<_>>()
        );
        lr
    }

    fn same_str(&mut self, args: &[&str]) -> Vec<u8> {
        let args: Vec<&[u8]> = args.iter().map(|a| a.as_bytes()).collect();
        self.same(&args)
    }

    /// PFADD of `elements` in batches of `batch`, then GET, PFCOUNT, GET (the cached count) and
    /// PFDEBUG ENCODING, all compared.
    fn add_and_compare(&mut self, key: &str, elements: &[String], batch: usize) {
        for chunk in elements.chunks(batch.max(1)) {
            let mut args: Vec<&[u8]> = vec![b"PFADD", key.as_bytes()];
            args.extend(chunk.iter().map(|e| e.as_bytes()));
            self.same(&args);
        }
        self.same_str(&["GET", key]);
        self.same_str(&["PFCOUNT", key]);
        self.same_str(&["GET", key]);
        self.same_str(&["PFDEBUG", "ENCODING", key]);
    }
}

fn elements(prefix: &str, n: usize) -> Vec<String> {
    (0..n).map(|i| format!("{prefix}:{i}")).collect()
}

#[test]
fn sparse_dense_and_promotion_are_byte_identical() {
    let Some(mut p) = Pair::start("the HyperLogLog byte comparison") else { return };
    p.same_str(&["PFADD", "empty"]);
    p.same_str(&["GET", "empty"]);
    p.same_str(&["PFADD", "empty"]);
    p.same_str(&["PFCOUNT", "empty"]);
    p.same_str(&["PFCOUNT", "missing"]);
    p.same_str(&["PFADD", "e", ""]);
    p.same_str(&["PFDEBUG", "DECODE", "e"]);
    for (i, n) in [1usize, 3, 10, 50, 200, 700, 1500, 2500, 4000, 12000, 40000].into_iter().enumerate() {
        let key = format!("h{i}");
        p.add_and_compare(&key, &elements(&key, n), 1 + n / 20);
        // Adding the same elements again changes nothing.
        p.add_and_compare(&key, &elements(&key, n.min(500)), 100);
    }
    // One element at a time, with a count after each (cache written, then invalidated).
    for e in elements("one", 300) {
        p.same_str(&["PFADD", "one", &e]);
        p.same_str(&["PFCOUNT", "one"]);
    }
    p.same_str(&["GET", "one"]);
    p.same_str(&["PFDEBUG", "DECODE", "one"]);
    // Other sparse limits: promotion earlier, later, and values that only dense holds.
    for max in ["0", "100", "1000", "10000"] {
        p.same_str(&["CONFIG", "SET", "hll-sparse-max-bytes", max]);
        let key = format!("max{max}");
        p.add_and_compare(&key, &elements(&key, 3000), 7);
    }
    p.same_str(&["CONFIG", "SET", "hll-sparse-max-bytes", "3000"]);
    // Debug conversions.
    p.add_and_compare("todense", &elements("td", 100), 100);
    p.same_str(&["PFDEBUG", "TODENSE", "todense"]);
    p.same_str(&["PFDEBUG", "TODENSE", "todense"]);
    p.same_str(&["GET", "todense"]);
    p.add_and_compare("todense", &elements("td2", 100), 100);
    p.add_and_compare("getreg", &elements("gr", 30), 30);
    p.same_str(&["PFDEBUG", "GETREG", "getreg"]);
    p.same_str(&["GET", "getreg"]);
}

#[test]
fn merges_are_byte_identical() {
    let Some(mut p) = Pair::start("the PFMERGE comparison") else { return };
    p.add_and_compare("s1", &elements("a", 40), 40);
    p.add_and_compare("s2", &elements("b", 120), 60);
    p.add_and_compare("s3", &elements("a", 90), 90);
    p.add_and_compare("d1", &elements("c", 5000), 500);
    p.add_and_compare("d2", &elements("b", 9000), 500);
    let merges: &[&[&str]] = &[
        &["PFMERGE", "m1", "s1", "s2"],
        &["PFMERGE", "m2", "s1", "s2", "s3"],
        &["PFMERGE", "m3", "s1", "d1"],
        &["PFMERGE", "m4", "d1", "d2", "s2"],
        &["PFMERGE", "m5"],
        &["PFMERGE", "m5", "missing"],
        &["PFMERGE", "s3", "s1", "s2"],
        &["PFMERGE", "s1", "d2"],
        &["PFMERGE", "m6", "m6", "s2", "nothing"],
        &["PFMERGE", "m1", "m1"],
    ];
    for m in merges {
        p.same_str(m);
        p.same_str(&["GET", m[1]]);
        p.same_str(&["PFCOUNT", m[1]]);
        p.same_str(&["PFDEBUG", "ENCODING", m[1]]);
        p.same_str(&["GET", m[1]]);
    }
    // Many keys merged aside: no key changes.
    for keys in [&["s2", "s3"][..], &["s2", "d1", "missing"], &["d1", "d2"], &["m1", "m2", "m3", "m4", "s3"]] {
        let before: Vec<Vec<u8>> = keys.iter().map(|k| p.same_str(&["GET", k])).collect();
        let mut args = vec!["PFCOUNT"];
        args.extend_from_slice(keys);
        p.same_str(&args);
        let after: Vec<Vec<u8>> = keys.iter().map(|k| p.same_str(&["GET", k])).collect();
        assert_eq!(before, after);
    }
    // A merge into a sparse destination large enough to promote while being written.
    p.same_str(&["CONFIG", "SET", "hll-sparse-max-bytes", "300"]);
    p.add_and_compare("big1", &elements("x", 100), 100);
    p.same_str(&["CONFIG", "SET", "hll-sparse-max-bytes", "3000"]);
    p.add_and_compare("big2", &elements("y", 1500), 100);
    p.same_str(&["CONFIG", "SET", "hll-sparse-max-bytes", "300"]);
    p.same_str(&["PFMERGE", "big1", "big2"]);
    p.same_str(&["GET", "big1"]);
    p.same_str(&["PFDEBUG", "ENCODING", "big1"]);
}

fn bulk(reply: &[u8]) -> Vec<u8> {
    match resp::decode_reply(&mut resp::BytesMut::from(reply)) {
        Ok(Some(resp::Frame::Bulk(b))) => b.to_vec(),
        other => panic!("not a bulk: {other:?}"),
    }
}

#[test]
fn dump_restore_both_ways() {
    let Some(mut p) = Pair::start("the HyperLogLog DUMP/RESTORE comparison") else { return };
    for (key, n) in [("small", 5usize), ("sparse", 800), ("dense", 20000)] {
        p.add_and_compare(key, &elements(key, n), 1000);
        for (from_latch, target) in [(true, "from_latch"), (false, "from_redis")] {
            let (src, dst) = if from_latch { (&mut p.l, &mut p.r) } else { (&mut p.r, &mut p.l) };
            let payload = bulk(&src.cmd_bytes(&[b"DUMP", key.as_bytes()]));
            let tkey = format!("{target}:{key}");
            assert_eq!(dst.cmd(&[b"RESTORE", tkey.as_bytes(), b"0", &payload]), "+OK\r\n");
            assert_eq!(dst.cmd_bytes(&[b"GET", tkey.as_bytes()]), src.cmd_bytes(&[b"GET", key.as_bytes()]));
            assert_eq!(dst.cmd(&[b"PFCOUNT", tkey.as_bytes()]), src.cmd(&[b"PFCOUNT", key.as_bytes()]));
            // The restored value keeps working as a HyperLogLog.
            assert_eq!(
                dst.cmd(&[b"PFADD", tkey.as_bytes(), b"one more"]),
                src.cmd(&[b"PFADD", key.as_bytes(), b"one more"])
            );
            assert_eq!(dst.cmd_bytes(&[b"GET", tkey.as_bytes()]), src.cmd_bytes(&[b"GET", key.as_bytes()]));
        }
    }
}

#[test]
fn errors_match_redis() {
    let Some(mut p) = Pair::start("the HyperLogLog error comparison") else { return };
    p.same_str(&["RPUSH", "list", "a"]);
    p.same_str(&["SET", "str", "not a hyperloglog"]);
    p.same_str(&["SET", "int", "12345"]);
    p.same_str(&["SET", "short", "HYLL"]);
    for key in ["list", "str", "int", "short"] {
        p.same_str(&["PFADD", key, "a"]);
        p.same_str(&["PFADD", key]);
        p.same_str(&["PFCOUNT", key]);
        p.same_str(&["PFCOUNT", key, "missing"]);
        p.same_str(&["PFCOUNT", "missing", key]);
        p.same_str(&["PFMERGE", "dest", key]);
        p.same_str(&["PFMERGE", key, "missing"]);
        p.same_str(&["PFDEBUG", "ENCODING", key]);
    }
    p.same_str(&["EXISTS", "dest"]);
    p.same_str(&["PFDEBUG", "ENCODING", "missing"]);
    p.same_str(&["PFDEBUG", "NOSUCH", "missing"]);
    p.same_str(&["PFADD", "h", "a", "b", "c"]);
    p.same_str(&["PFDEBUG", "NOSUCH", "h"]);
    p.same_str(&["PFDEBUG", "ENCODING"]);
    p.same_str(&["PFSELFTEST", "extra"]);
    p.same_str(&["PFADD"]);
    p.same_str(&["PFCOUNT"]);
    p.same_str(&["PFMERGE"]);
    // Redis's unit: extra bytes at the tail, broken magic, unknown encoding, dense of wrong length.
    let corruptions: &[&[&str]] = &[
        &["APPEND", "c", "hello"],
        &["SETRANGE", "c", "0", "0123"],
        &["SETRANGE", "c", "4", "x"],
        &["SETRANGE", "c", "4", "\x00"],
    ];
    for c in corruptions {
        p.same_str(&["DEL", "c"]);
        p.same_str(&["PFADD", "c", "a", "b", "c"]);
        p.same_str(c);
        p.same_str(&["PFCOUNT", "c"]);
        p.same_str(&["PFADD", "c", "zzz", "yyy"]);
        p.same_str(&["PFCOUNT", "c", "h"]);
        p.same_str(&["PFMERGE", "h2", "c"]);
        p.same_str(&["GET", "c"]);
    }
    p.same_str(&["PFADD", "d", "a"]);
    p.same_str(&["PFDEBUG", "TODENSE", "d"]);
    p.same_str(&["PFDEBUG", "DECODE", "d"]);
}

#[test]
fn random_corruption_answers_as_redis() {
    let Some(mut p) = Pair::start("the HyperLogLog corruption fuzz") else { return };
    let mut rng = rand::rngs::StdRng::seed_from_u64(28);
    for round in 0..300 {
        let key = "fz";
        p.same_str(&["DEL", key]);
        let n = rng.random_range(0..3000);
        let els: Vec<String> = (0..n).map(|_| rng.random::<u32>().to_string()).collect();
        for chunk in els.chunks(500) {
            let mut args: Vec<&[u8]> = vec![b"PFADD", key.as_bytes()];
            args.extend(chunk.iter().map(|e| e.as_bytes()));
            p.same(&args);
        }
        if n == 0 {
            p.same_str(&["PFADD", key]);
        }
        for _ in 0..5 {
            let len = match p.same_str(&["STRLEN", key]).as_slice() {
                [b':', rest @ ..] => std::str::from_utf8(rest).unwrap().trim().parse::<usize>().unwrap(),
                other => panic!("STRLEN: {other:?}"),
            };
            // Sparse bodies are the interesting part: corrupt them more often.
            let pos =
                if len > 16 && rng.random_bool(0.8) { rng.random_range(16..len) } else { rng.random_range(0..len) };
            let byte = [rng.random::<u8>()];
            p.same(&[b"SETRANGE", key.as_bytes(), pos.to_string().as_bytes(), &byte]);
            if rng.random_bool(0.5) {
                break;
            }
        }
        p.same_str(&["GET", key]);
        p.same_str(&["PFCOUNT", key]);
        p.same_str(&["GET", key]);
        let extra = format!("extra{round}");
        p.same_str(&["PFADD", key, &extra, "a", "b"]);
        p.same_str(&["GET", key]);
        p.same_str(&["PFCOUNT", key, "other"]);
        p.same_str(&["GET", key]);
        p.same_str(&["PFMERGE", "dst", key]);
        p.same_str(&["GET", "dst"]);
        p.same_str(&["DEL", "dst"]);
    }
}

#[test]
fn selftest_passes() {
    let latch = Latch::start(&["--save", ""]);
    let mut l = latch.raw();
    l.s.set_read_timeout(Some(std::time::Duration::from_secs(120))).unwrap();
    assert_eq!(l.cmd(&[b"PFSELFTEST"]), "+OK\r\n");
}
