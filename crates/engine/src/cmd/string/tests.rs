//! Transcript tests for the string family. Unless marked otherwise, the expected replies were
//! produced by a real Redis 7.0.15; IFEQ, DELIFEQ and DELEX follow Valkey 9 / Redis 8.4.

use crate::testkit::{TestClient, TestServer};
use crate::value::{Entry, Value};

/// Stores an empty list under `key` in db 0, bypassing the list commands.
pub(crate) fn put_list(ts: &TestServer, key: &str) {
    let mut l = ts.srv.ks.lock_all();
    l.shard_for(key.as_bytes()).dbs[0].insert(key.as_bytes(), Entry::new(Value::List(Default::default())), 0);
}

/// The TTL deadline of `key` in db 0 (monotonic ms), None when absent or persistent.
pub(crate) fn deadline(ts: &TestServer, key: &str) -> Option<u64> {
    let mut l = ts.srv.ks.lock_all();
    l.shard_for(key.as_bytes()).dbs[0].deadline_of(key.as_bytes())
}

/// True if `key` is stored in db 0 (even if stale).
fn stored(ts: &TestServer, key: &str) -> bool {
    let mut l = ts.srv.ks.lock_all();
    l.shard_for(key.as_bytes()).dbs[0].peek(key.as_bytes()).is_some()
}

fn now(ts: &TestServer) -> u64 {
    use crate::clock::Clock;
    ts.clock.now_ms()
}

fn encoding(ts: &TestServer, key: &str) -> &'static str {
    let mut l = ts.srv.ks.lock_all();
    l.shard_for(key.as_bytes()).dbs[0].peek(key.as_bytes()).map(|e| e.encoding()).unwrap_or("none")
}

/// Strings edited in place are `raw` until they get a new value, as Redis's
/// dbUnshareStringValue makes them (unit/type/string's SETRANGE and APPEND encoding tests).
#[test]
fn in_place_edits_make_raw_strings() {
    let ts = TestServer::new();
    let mut c = ts.client();
    c.run("SET k 1234");
    assert_eq!(encoding(&ts, "k"), "int");
    assert_eq!(c.run("SETRANGE k 0 \"\""), ":4");
    assert_eq!(encoding(&ts, "k"), "int");
    assert_eq!(c.run("SETRANGE k 0 2"), ":4");
    assert_eq!(encoding(&ts, "k"), "raw");
    assert_eq!(c.run("GET k"), "\"2234\"");
    c.run("SET k abc");
    assert_eq!(encoding(&ts, "k"), "embstr");
    c.run("APPEND k d");
    assert_eq!(encoding(&ts, "k"), "raw");
    c.run("SETRANGE fresh 3 x");
    assert_eq!(encoding(&ts, "fresh"), "raw");
    c.run("SETBIT bits 1 1");
    assert_eq!(encoding(&ts, "bits"), "raw");
    c.run("SET k v KEEPTTL");
    assert_eq!(encoding(&ts, "k"), "embstr");
    c.run("APPEND new x");
    assert_eq!(encoding(&ts, "new"), "embstr");
}

#[test]
fn set_get_and_variants() {
    TestServer::new().transcript(
        r#"
            > SET foo bar
            +OK
            > GET foo
            "bar"
            > SET foo bar2 NX
            (nil)
            > SET foo bar3 XX
            +OK
            > GET foo
            "bar3"
            > SET nokey v XX
            (nil)
            > GET nokey
            (nil)
            > SET foo x NX XX
            -ERR syntax error
            > SET foo x XX NX
            -ERR syntax error
            > SET foo x nx nx
            (nil)
            > SET foo x EX
            -ERR syntax error
            > SET foo x EX 10 PX 100
            -ERR syntax error
            > SET foo x EX 10 KEEPTTL
            -ERR syntax error
            > SET foo x KEEPTTL EX 10
            -ERR syntax error
            > SET foo x EX 10 EX 20
            +OK
            > SET foo x PXAT 10 EXAT 10
            -ERR syntax error
            > SET foo x BADOPT
            -ERR syntax error
            > SET foo x EX 0
            -ERR invalid expire time in 'set' command
            > SET foo x EX -1
            -ERR invalid expire time in 'set' command
            > SET foo x PX 0
            -ERR invalid expire time in 'set' command
            > SET foo x EXAT 0
            -ERR invalid expire time in 'set' command
            > SET foo x PXAT -5
            -ERR invalid expire time in 'set' command
            > SET foo x EX abc
            -ERR value is not an integer or out of range
            > SET foo x EX 1.5
            -ERR value is not an integer or out of range
            > SET foo x EX 9223372036854775807
            -ERR invalid expire time in 'set' command
            > SET foo x EX 9223372036854775
            -ERR invalid expire time in 'set' command
            > SET foo x PX 9223372036854775807
            -ERR invalid expire time in 'set' command
            > SET foo x EXAT 9223372036854775807
            -ERR invalid expire time in 'set' command
            > SET foo x EXAT 9223372036854775
            +OK
            > SET foo x EX 9223372036854775808
            -ERR value is not an integer or out of range
            > SET g1 v1 GET
            (nil)
            > SET g1 v2 GET
            "v1"
            > SET g1 v3 GET NX
            "v2"
            > GET g1
            "v2"
            > SET g2 v GET NX
            (nil)
            > GET g2
            "v"
            > SET g3 v GET XX
            (nil)
            > GET g3
            (nil)
            > SET g2 w XX GET
            "v"
            > SET g2 w2 get get
            "w"
            > SET e ""
            +OK
            > GET e
            ""
            > STRLEN e
            :0
            > SET n 12345
            +OK
            > GET n
            "12345"
            > SET foo x EX 100 GET
            "x"
            > SET foo y XX PX 100000 GET
            "x"
            > GET foo
            "y"
            > SETNX sn a
            :1
            > SETNX sn b
            :0
            > GET sn
            "a"
            > SETEX se 0 v
            -ERR invalid expire time in 'setex' command
            > SETEX se -10 v
            -ERR invalid expire time in 'setex' command
            > SETEX se abc v
            -ERR value is not an integer or out of range
            > SETEX se 100 v
            +OK
            > GET se
            "v"
            > SETEX se 9223372036854775807 v
            -ERR invalid expire time in 'setex' command
            > PSETEX pse 0 v
            -ERR invalid expire time in 'psetex' command
            > PSETEX pse 100000 v
            +OK
            > GET pse
            "v"
            > GETSET gs new
            (nil)
            > GETSET gs newer
            "new"
            > GET gs
            "newer"
            > GETDEL gs
            "newer"
            > GETDEL gs
            (nil)
            > GET gs
            (nil)
            > GETEX gs
            (nil)
            > SET gx bar
            +OK
            > GETEX gx
            "bar"
            > GETEX gx ex 100
            "bar"
            > GETEX gx px 100 ex 100
            -ERR syntax error
            > GETEX gx persist ex 10
            -ERR syntax error
            > GETEX gx keepttl
            -ERR syntax error
            > GETEX gx nx
            -ERR syntax error
            > GETEX gx bad
            -ERR syntax error
            > GETEX gx ex 0
            -ERR invalid expire time in 'getex' command
            > GETEX gx ex -1
            -ERR invalid expire time in 'getex' command
            > GETEX gx ex abc
            -ERR value is not an integer or out of range
            > GETEX gx ex 9223372036854775807
            -ERR invalid expire time in 'getex' command
            > GETEX gx pxat 0
            -ERR invalid expire time in 'getex' command
            > GETEX gx persist
            "bar"
            > GETEX gx persist persist
            "bar"
            > GETEX missing ex -1
            (nil)
            > GETEX missing ex abc
            (nil)
            > GETEX
            -ERR wrong number of arguments for 'getex' command
            > MSET m1 a m2 b m3 c
            +OK
            > MGET m1 m2 nokey m3
            ["a", "b", (nil), "c"]
            > MSET m1 a m2
            -ERR wrong number of arguments for 'mset' command
            > MSETNX m1 x m4 y
            :0
            > MGET m1 m4
            ["a", (nil)]
            > MSETNX m4 x m5 y
            :1
            > MGET m4 m5
            ["x", "y"]
            > MSETNX m6 x m6 y
            :1
            > GET m6
            "y"
            > MSETNX m6 x m6 y
            :0
            > MSETNX m7 x
            :1
            > MSETNX m8
            -ERR wrong number of arguments for 'msetnx' command
            > MGET
            -ERR wrong number of arguments for 'mget' command
            > SET a1 -555
            +OK
            > STRLEN a1
            :4
            > STRLEN nokey
            :0
            > SET a2 "foozzz0123456789 baz"
            +OK
            > STRLEN a2
            :20
            > APPEND ap hello
            :5
            > APPEND ap " world"
            :11
            > GET ap
            "hello world"
            > SET ap2 12
            +OK
            > APPEND ap2 34
            :4
            > GET ap2
            "1234"
            > INCR ap2
            :1235
            > APPEND ap3 ""
            :0
            > GET ap3
            ""
        "#,
    );
}

#[test]
fn ranges_and_counters() {
    let ts = TestServer::new();
    let mut c: TestClient = ts.client();
    let big = c.run("INCRBYFLOAT fbig 1e4000");
    assert_eq!(big.len(), 4002, "{big}");
    assert!(big.starts_with("\"99999999999999999999654638"));
    c.transcript(
        r#"
            > SET r "Hello World"
            +OK
            > GETRANGE r 0 3
            "Hell"
            > GETRANGE r 0 -1
            "Hello World"
            > GETRANGE r -4 -1
            "orld"
            > GETRANGE r 5 3
            ""
            > GETRANGE r 5 5000
            " World"
            > GETRANGE r -5000 10000
            "Hello World"
            > GETRANGE r -1 -5
            ""
            > GETRANGE r 0 4294967297
            "Hello World"
            > GETRANGE r a 1
            -ERR value is not an integer or out of range
            > GETRANGE r 0 b
            -ERR value is not an integer or out of range
            > GETRANGE nokey 0 -1
            ""
            > GETRANGE nokey a 1
            -ERR value is not an integer or out of range
            > SUBSTR r 0 4
            "Hello"
            > SET ri 1234
            +OK
            > GETRANGE ri 0 2
            "123"
            > GETRANGE ri -3 -1
            "234"
            > GETRANGE ri 3 5000
            "4"
            > SET emp ""
            +OK
            > GETRANGE emp 0 -1
            ""
            > GETRANGE emp 0 0
            ""
            > SETRANGE sr 0 foo
            :3
            > GET sr
            "foo"
            > SETRANGE sr2 0 ""
            :0
            > GET sr2
            (nil)
            > SETRANGE sr3 1 foo
            :4
            > GET sr3
            "\x00foo"
            > SET sr4 foo
            +OK
            > SETRANGE sr4 0 b
            :3
            > SETRANGE sr4 0 ""
            :3
            > SETRANGE sr4 1 b
            :3
            > GET sr4
            "bbo"
            > SETRANGE sr4 4 bar
            :7
            > GET sr4
            "bbo\x00bar"
            > SET sr5 1234
            +OK
            > SETRANGE sr5 0 2
            :4
            > GET sr5
            "2234"
            > SETRANGE sr5 5 2
            :6
            > GET sr5
            "2234\x002"
            > SETRANGE sr5 -1 x
            -ERR offset is out of range
            > SETRANGE sr5 abc x
            -ERR value is not an integer or out of range
            > SETRANGE sr6 536870908 world
            -ERR string exceeds maximum allowed size (proto-max-bulk-len)
            > SETRANGE sr5 536870908 world
            -ERR string exceeds maximum allowed size (proto-max-bulk-len)
            > SETRANGE sr5 9223372036854775807 A
            -ERR string exceeds maximum allowed size (proto-max-bulk-len)
            > SETRANGE sr7 -1 ""
            -ERR offset is out of range
            > SETRANGE sr7 9223372036854775807 ""
            :0
            > INCR novar
            :1
            > INCR novar
            :2
            > GET novar
            "2"
            > SET novar "    11"
            +OK
            > INCR novar
            -ERR value is not an integer or out of range
            > SET novar "11    "
            +OK
            > INCR novar
            -ERR value is not an integer or out of range
            > SET novar 17179869184
            +OK
            > INCR novar
            :17179869185
            > INCRBY novar 17179869184
            :34359738369
            > DECRBY novar 17179869185
            :17179869184
            > DECRBY novar -1
            :17179869185
            > DECR novar
            :17179869184
            > DECRBY novar -9223372036854775808
            -ERR decrement would overflow
            > INCRBY novar abc
            -ERR value is not an integer or out of range
            > INCRBY novar 1.5
            -ERR value is not an integer or out of range
            > SET big 9223372036854775807
            +OK
            > INCR big
            -ERR increment or decrement would overflow
            > INCRBY big -1
            :9223372036854775806
            > SET small -9223372036854775808
            +OK
            > DECR small
            -ERR increment or decrement would overflow
            > INCRBY small 9223372036854775807
            :-1
            > SET s1 012
            +OK
            > INCR s1
            -ERR value is not an integer or out of range
            > SET s2 "+1"
            +OK
            > INCR s2
            -ERR value is not an integer or out of range
            > SET s3 1e3
            +OK
            > INCR s3
            -ERR value is not an integer or out of range
            > SET s4 abc
            +OK
            > DECR s4
            -ERR value is not an integer or out of range
            > INCRBYFLOAT f 1
            "1"
            > INCRBYFLOAT f 0.25
            "1.25"
            > SET f 17179869184
            +OK
            > INCRBYFLOAT f 1.5
            "17179869185.5"
            > INCRBYFLOAT f 17179869184
            "34359738369.5"
            > SET f 1
            +OK
            > INCRBYFLOAT f -1.1
            "-0.1"
            > SET f 1
            +OK
            > INCRBYFLOAT f 1.1
            "2.1"
            > SET f "    11"
            +OK
            > INCRBYFLOAT f 1
            -ERR value is not a valid float
            > SET f "11    "
            +OK
            > INCRBYFLOAT f 1
            -ERR value is not a valid float
            > SET f 5
            +OK
            > INCRBYFLOAT f abc
            -ERR value is not a valid float
            > INCRBYFLOAT f ""
            -ERR value is not a valid float
            > INCRBYFLOAT f "1 "
            -ERR value is not a valid float
            > INCRBYFLOAT f +inf
            -ERR increment would produce NaN or Infinity
            > INCRBYFLOAT f nan
            -ERR value is not a valid float
            > INCRBYFLOAT f 0x10
            "21"
            > INCRBYFLOAT f -21.000000000000001
            "-0.000000000000001"
            > INCRBYFLOAT f 3.0e3
            "2999.99999999999999889"
            > INCRBYFLOAT f 1e-400
            "2999.99999999999999889"
            > INCRBYFLOAT f -inf
            -ERR increment would produce NaN or Infinity
            > STRLEN fbig
            :4000
            > INCRBYFLOAT fbig -1e4000
            "0"
            > INCRBYFLOAT g 0.1
            "0.1"
            > INCRBYFLOAT g 0.2
            "0.3"
            > INCRBYFLOAT h 5.0e3
            "5000"
            > INCRBYFLOAT h 2.0e2
            "5200"
            > SET z 1
            +OK
            > SETRANGE z 2 2
            :3
            > INCRBYFLOAT z 1
            -ERR value is not a valid float
            > INCRBYFLOAT neg 0.024390243902439025
            "0.02439024390243902"
            > INCRBYFLOAT neg -0.024390243902439025
            "0"
            > GET neg
            "0"
            > SET huge 1e4932
            +OK
            > INCRBYFLOAT huge 1e4932
            -ERR increment would produce NaN or Infinity
            > INCRBYFLOAT huge2 1e4933
            -ERR value is not a valid float
            > SET fl 1.5
            +OK
            > INCR fl
            -ERR value is not an integer or out of range
            > INCRBY fl 1
            -ERR value is not an integer or out of range
            > INCRBYFLOAT fl 1
            "2.5"
            > INCRBYFLOAT fl
            -ERR wrong number of arguments for 'incrbyfloat' command
        "#,
    );
}

#[test]
fn lcs() {
    TestServer::new().transcript(
        r#"
            > SET virus1 CACCTTCCCAGGTAACAAACCAACCAACTTTCGATCTCTTGTAGATCTGTTCTCTAAACGAACTTTAAAATCTGTGTGGCTGTCACTCGGCTGCATGCTTAGTGCACTCACGCAGTATAATTAATAACTAATTACTGTCGTTGACAGGACACGAGTAACTCGTCTATCTTCTGCAGGCTGCTTACGGTTTCGTCCGTGTTGCAGCCGATCATCAGCACATCTAGGTTTCGTCCGGGTGTG
            +OK
            > SET virus2 ATTAAAGGTTTATACCTTCCCAGGTAACAAACCAACCAACTTTCGATCTCTTGTAGATCTGTTCTCTAAACGAACTTTAAAATCTGTGTGGCTGTCACTCGGCTGCATGCTTAGTGCACTCACGCAGTATAATTAATAACTAATTACTGTCGTTGACAGGACACGAGTAACTCGTCTATCTTCTGCAGGCTGCTTACGGTTTCGTCCGTGTTGCAGCCGATCATCAGCACATCTAGGTTT
            +OK
            > LCS virus1 virus2
            "ACCTTCCCAGGTAACAAACCAACCAACTTTCGATCTCTTGTAGATCTGTTCTCTAAACGAACTTTAAAATCTGTGTGGCTGTCACTCGGCTGCATGCTTAGTGCACTCACGCAGTATAATTAATAACTAATTACTGTCGTTGACAGGACACGAGTAACTCGTCTATCTTCTGCAGGCTGCTTACGGTTTCGTCCGTGTTGCAGCCGATCATCAGCACATCTAGGTTT"
            > LCS virus1 virus2 LEN
            :227
            > LCS virus1 virus2 IDX
            {"matches": [[[:238, :238], [:239, :239]], [[:236, :236], [:238, :238]], [[:229, :230], [:236, :237]], [[:224, :224], [:235, :235]], [[:1, :222], [:13, :234]]], "len": :227}
            > LCS virus1 virus2 IDX WITHMATCHLEN
            {"matches": [[[:238, :238], [:239, :239], :1], [[:236, :236], [:238, :238], :1], [[:229, :230], [:236, :237], :2], [[:224, :224], [:235, :235], :1], [[:1, :222], [:13, :234], :222]], "len": :227}
            > LCS virus1 virus2 IDX WITHMATCHLEN MINMATCHLEN 5
            {"matches": [[[:1, :222], [:13, :234], :222]], "len": :227}
            > LCS virus1 virus2 IDX MINMATCHLEN -5 LEN
            -ERR If you want both the length and indexes, please just use IDX.
            > LCS virus1 virus2 LEN IDX
            -ERR If you want both the length and indexes, please just use IDX.
            > LCS virus1 virus2 MINMATCHLEN
            -ERR syntax error
            > LCS virus1 virus2 MINMATCHLEN x
            -ERR value is not an integer or out of range
            > LCS virus1 virus2 FOO
            -ERR syntax error
            > SET k1 ohmytext
            +OK
            > SET k2 mynewtext
            +OK
            > LCS k1 k2
            "mytext"
            > LCS k1 k2 len
            :6
            > LCS k1 k2 idx minmatchlen 4 withmatchlen
            {"matches": [[[:4, :7], [:5, :8], :4]], "len": :6}
            > LCS k1 nokey
            ""
            > LCS nokey1 nokey2 IDX
            {"matches": [], "len": :0}
            > LCS nokey1 nokey2 LEN
            :0
            > SET i1 12345
            +OK
            > SET i2 2345
            +OK
            > LCS i1 i2
            "2345"
            > LCS k1
            -ERR wrong number of arguments for 'lcs' command
        "#,
    );
}

#[test]
fn wrong_type() {
    let ts = TestServer::new();
    put_list(&ts, "l");
    ts.transcript(
        r#"
        > GET l
        -WRONGTYPE Operation against a key holding the wrong kind of value
        > SET l v GET
        -WRONGTYPE Operation against a key holding the wrong kind of value
        > SET l v GET NX
        -WRONGTYPE Operation against a key holding the wrong kind of value
        > SET l v NX
        (nil)
        > SETNX l v
        :0
        > GETSET l v
        -WRONGTYPE Operation against a key holding the wrong kind of value
        > GETDEL l
        -WRONGTYPE Operation against a key holding the wrong kind of value
        > GETEX l
        -WRONGTYPE Operation against a key holding the wrong kind of value
        > GETEX l EX 0
        -WRONGTYPE Operation against a key holding the wrong kind of value
        > GETEX l BAD
        -ERR syntax error
        > MGET a l b
        [(nil), (nil), (nil)]
        > APPEND l x
        -WRONGTYPE Operation against a key holding the wrong kind of value
        > STRLEN l
        -WRONGTYPE Operation against a key holding the wrong kind of value
        > GETRANGE l 0 1
        -WRONGTYPE Operation against a key holding the wrong kind of value
        > GETRANGE l x 1
        -ERR value is not an integer or out of range
        > SETRANGE l 0 x
        -WRONGTYPE Operation against a key holding the wrong kind of value
        > SETRANGE l 0 ""
        -WRONGTYPE Operation against a key holding the wrong kind of value
        > SETRANGE l -1 x
        -ERR offset is out of range
        > INCR l
        -WRONGTYPE Operation against a key holding the wrong kind of value
        > DECRBY l 5
        -WRONGTYPE Operation against a key holding the wrong kind of value
        > INCRBYFLOAT l 1.5
        -WRONGTYPE Operation against a key holding the wrong kind of value
        > INCRBYFLOAT l abc
        -WRONGTYPE Operation against a key holding the wrong kind of value
        > LCS l l
        -ERR The specified keys must contain string values
        > LCS l l BADOPT
        -ERR The specified keys must contain string values
        > SET l str
        +OK
        > GET l
        "str"
        "#,
    );
    // MSET and MSETNX overwrite / see other types.
    put_list(&ts, "l2");
    ts.transcript(
        r#"
        > MSETNX l2 a z b
        :0
        > MSET l2 a
        +OK
        > GET l2
        "a"
        "#,
    );
}

#[test]
fn ttl_interactions() {
    let ts = TestServer::new();
    let mut c = ts.client();
    let t0 = now(&ts);
    c.transcript("> SET k v EX 10\n+OK");
    assert_eq!(deadline(&ts, "k"), Some(t0 + 10_000));
    // A plain SET clears the TTL, KEEPTTL keeps it.
    c.transcript("> SET k v2 KEEPTTL\n+OK");
    assert_eq!(deadline(&ts, "k"), Some(t0 + 10_000));
    c.transcript("> SET k v3\n+OK");
    assert_eq!(deadline(&ts, "k"), None);
    c.transcript("> SET k v PX 1500\n+OK");
    ts.clock.advance_ms(1500);
    c.transcript("> GET k\n\"v\"");
    ts.clock.advance_ms(1);
    c.transcript("> GET k\n(nil)\n> SET k v XX\n(nil)");
    // SETNX on an expired volatile key succeeds.
    c.transcript("> SETEX k 1 old\n+OK");
    ts.clock.advance_ms(1001);
    c.transcript("> SETNX k new\n:1\n> GET k\n\"new\"");
    // Absolute times are Unix times.
    let unix = ts.srv.clock.unix_ms();
    c.run(&format!("SET abs v EXAT {}", unix / 1000 + 100));
    assert_eq!(deadline(&ts, "abs"), Some(now(&ts) + 100_000 - (unix % 1000) as u64));
    assert_eq!(c.run(&format!("SET abs v PXAT {}", unix + 5)), "+OK");
    assert_eq!(deadline(&ts, "abs"), Some(now(&ts) + 5));
    // A deadline already in the past: the key does not survive.
    assert_eq!(c.run(&format!("SET past v PXAT {}", unix - 1)), "+OK");
    assert!(!stored(&ts, "past"));
    c.transcript("> GET past\n(nil)");
    assert_eq!(c.run("SET past2 v GET PXAT 1"), "(nil)");
    assert!(!stored(&ts, "past2"));
    c.transcript("> SET old x\n+OK");
    assert_eq!(c.run("SET old v GET EXAT 1"), "\"x\"");
    assert!(!stored(&ts, "old"));
    // After a wall-clock step, absolute times are still read as Unix times.
    ts.clock.step_wall_ms(60_000);
    let unix = ts.srv.clock.unix_ms();
    c.run(&format!("SET abs v PXAT {}", unix + 1000));
    assert_eq!(deadline(&ts, "abs"), Some(now(&ts) + 1000));
    // SETEX / PSETEX.
    c.transcript("> PSETEX p 250 v\n+OK");
    assert_eq!(deadline(&ts, "p"), Some(now(&ts) + 250));
    c.transcript("> SETEX s 7 v\n+OK");
    assert_eq!(deadline(&ts, "s"), Some(now(&ts) + 7000));
    // INCR, INCRBYFLOAT, APPEND, SETRANGE keep the TTL; GETSET and MSET clear it.
    for cmd in ["INCR s", "INCRBY s 2", "DECR s", "INCRBYFLOAT s 1.5", "APPEND s x", "SETRANGE s 0 y"] {
        c.run("SETEX s 7 5");
        c.run(cmd);
        assert_eq!(deadline(&ts, "s"), Some(now(&ts) + 7000), "{cmd}");
    }
    for cmd in ["GETSET s 1", "MSET s 1", "SET s 1"] {
        c.run("SETEX s 7 5");
        c.run(cmd);
        assert_eq!(deadline(&ts, "s"), None, "{cmd}");
    }
}

#[test]
fn getex_ttl() {
    let ts = TestServer::new();
    let mut c = ts.client();
    c.transcript("> SET foo bar\n+OK\n> GETEX foo EX 10\n\"bar\"");
    assert_eq!(deadline(&ts, "foo"), Some(now(&ts) + 10_000));
    c.transcript("> GETEX foo PX 500\n\"bar\"");
    assert_eq!(deadline(&ts, "foo"), Some(now(&ts) + 500));
    c.transcript("> GETEX foo\n\"bar\"");
    assert_eq!(deadline(&ts, "foo"), Some(now(&ts) + 500));
    c.transcript("> GETEX foo PERSIST\n\"bar\"");
    assert_eq!(deadline(&ts, "foo"), None);
    let unix = ts.srv.clock.unix_ms();
    assert_eq!(c.run(&format!("GETEX foo EXAT {}", unix / 1000 + 10)), "\"bar\"");
    assert_eq!(deadline(&ts, "foo"), Some(now(&ts) + 10_000 - (unix % 1000) as u64));
    assert_eq!(c.run(&format!("GETEX foo PXAT {}", unix + 42)), "\"bar\"");
    assert_eq!(deadline(&ts, "foo"), Some(now(&ts) + 42));
    // An absolute time in the past deletes the key after replying.
    assert_eq!(c.run(&format!("GETEX foo PXAT {}", unix - 10)), "\"bar\"");
    assert!(!stored(&ts, "foo"));
    c.transcript("> SET foo bar\n+OK\n> GETEX foo EXAT 1\n\"bar\"\n> GET foo\n(nil)");
    // GETEX with an expire on an expired key.
    c.transcript("> SET e v PX 10\n+OK");
    ts.clock.advance_ms(11);
    c.transcript("> GETEX e PERSIST\n(nil)");
}

#[test]
fn int_encoding_is_kept() {
    let ts = TestServer::new();
    let mut c = ts.client();
    c.transcript("> SET n 10\n+OK\n> INCR n\n:11\n> INCRBY n 100\n:111\n> INCR fresh\n:1");
    assert_eq!(encoding(&ts, "n"), "int");
    assert_eq!(encoding(&ts, "fresh"), "int");
    c.transcript("> SETRANGE n 0 \"\"\n:3");
    assert_eq!(encoding(&ts, "n"), "int");
    c.transcript("> SETRANGE n 0 2\n:3\n> GET n\n\"211\"\n> INCR n\n:212");
    assert_eq!(encoding(&ts, "n"), "int");
    c.transcript("> SET s 1234\n+OK\n> SETRANGE s 1 3\n:4\n> GET s\n\"1334\"");
    // Edited in place: raw, as in Redis.
    assert_eq!(encoding(&ts, "s"), "raw");
    c.transcript("> INCRBYFLOAT fl 3\n\"3\"\n> INCR fl\n:4");
}

#[test]
fn string_size_limit() {
    let ts = TestServer::new();
    ts.srv.config.set("proto-max-bulk-len", "1048576", false).expect("valid");
    let big = "x".repeat(1024 * 1024 - 3);
    let mut c = ts.client();
    assert_eq!(c.run(&format!("SET k {big}")), "+OK");
    c.transcript(
        r#"
        > APPEND k abc
        :1048576
        > APPEND k d
        -ERR string exceeds maximum allowed size (proto-max-bulk-len)
        > SETRANGE k 1048575 a
        :1048576
        > SETRANGE k 1048576 a
        -ERR string exceeds maximum allowed size (proto-max-bulk-len)
        > SETRANGE new 1048570 abcdefg
        -ERR string exceeds maximum allowed size (proto-max-bulk-len)
        > SETRANGE new 1048570 abcdef
        :1048576
        > STRLEN new
        :1048576
        "#,
    );
    // A big GET.
    let got = c.cmd(&["GET", "k"]).expect("reply");
    assert!(matches!(got, resp::Frame::Bulk(ref b) if b.len() == 1024 * 1024));
}

// Not in Redis 7.0: IFEQ follows Valkey 8.1 / Redis 8.4.
#[test]
fn set_ifeq() {
    let ts = TestServer::new();
    put_list(&ts, "l");
    ts.transcript(
        r#"
        > SET k v1 IFEQ v0
        (nil)
        > GET k
        (nil)
        > SET k v1
        +OK
        > SET k v2 IFEQ nope
        (nil)
        > GET k
        "v1"
        > SET k v2 IFEQ v1
        +OK
        > GET k
        "v2"
        > SET k v3 IFEQ v2 GET
        "v2"
        > SET k v4 IFEQ nope GET
        "v3"
        > GET k
        "v3"
        > SET missing v IFEQ x GET
        (nil)
        > SET n 42
        +OK
        > SET n 43 ifeq 42
        +OK
        > GET n
        "43"
        > SET k v IFEQ v3 NX
        -ERR syntax error
        > SET k v XX IFEQ v3
        -ERR syntax error
        > SET k v NX IFEQ v3
        -ERR syntax error
        > SET k v IFEQ
        -ERR syntax error
        > SET l v IFEQ x
        -WRONGTYPE Operation against a key holding the wrong kind of value
        > SET l v IFEQ x GET
        -WRONGTYPE Operation against a key holding the wrong kind of value
        > SET k v5 IFEQ v3 KEEPTTL
        +OK
        > GET k
        "v5"
        "#,
    );
    let mut c = ts.client();
    c.transcript("> SET t v IFEQ v5 PX 100\n(nil)\n> SET t a\n+OK\n> SET t b IFEQ a PX 100\n+OK");
    assert_eq!(deadline(&ts, "t"), Some(now(&ts) + 100));
}

// Not in Redis 7.0: DELIFEQ follows Valkey 9.0.
#[test]
fn delifeq() {
    let ts = TestServer::new();
    put_list(&ts, "l");
    ts.transcript(
        r#"
        > DELIFEQ lock token
        :0
        > SET lock token PX 30000
        +OK
        > DELIFEQ lock other
        :0
        > GET lock
        "token"
        > DELIFEQ lock token
        :1
        > GET lock
        (nil)
        > DELIFEQ lock token
        :0
        > SET n 100
        +OK
        > DELIFEQ n 100
        :1
        > DELIFEQ l x
        -WRONGTYPE Operation against a key holding the wrong kind of value
        > DELIFEQ lock
        -ERR wrong number of arguments for 'delifeq' command
        "#,
    );
    // An expired lock is gone: the owner's release finds nothing.
    let mut c = ts.client();
    c.transcript("> SET lock me PX 100\n+OK");
    ts.clock.advance_ms(101);
    c.transcript("> DELIFEQ lock me\n:0");
}

// Not in Redis 7.0: DELEX follows Redis 8.4.
#[test]
fn delex() {
    let ts = TestServer::new();
    put_list(&ts, "l");
    ts.transcript(
        r#"
        > DELEX nokey
        :0
        > DELEX l
        :1
        > SET k v
        +OK
        > DELEX k
        :1
        > DELEX k IFEQ v
        :0
        > SET k v
        +OK
        > DELEX k IFEQ w
        :0
        > DELEX k IFNE v
        :0
        > DELEX k IFEQ v
        :1
        > SET k v
        +OK
        > DELEX k IFNE w
        :1
        > DELEX k IFNE w
        :0
        > SET k 7
        +OK
        > DELEX k ifeq 7
        :1
        > SET k v
        +OK
        > DELEX k IFEQ
        -ERR syntax error
        > DELEX k IFXX v
        -ERR syntax error
        > DELEX k IFEQ v extra
        -ERR syntax error
        > GET k
        "v"
        > DELEX
        -ERR wrong number of arguments for 'delex' command
        "#,
    );
    put_list(&ts, "l");
    ts.transcript(
        r#"
        > DELEX l IFEQ x
        -WRONGTYPE Operation against a key holding the wrong kind of value
        > DELEX l IFDNE 0000000000000000
        -WRONGTYPE Operation against a key holding the wrong kind of value
        "#,
    );
}

// XXH3-64 digests: known test vectors of the reference implementation (seed 0).
#[test]
fn delex_digest() {
    assert_eq!(super::digest_hex(b""), "2d06800538d394c2");
    let ts = TestServer::new();
    let d = super::digest_hex(b"hello");
    let mut c = ts.client();
    c.transcript("> SET k hello\n+OK\n> DELEX k IFDEQ 0123456789abcdef\n:0\n> DELEX k IFDNE 0123456789abcdef\n:1");
    c.transcript("> SET k hello\n+OK");
    assert_eq!(c.run(&format!("DELEX k IFDNE {d}")), ":0");
    assert_eq!(c.run(&format!("DELEX k IFDEQ {}", d.to_uppercase())), ":1");
    c.transcript("> GET k\n(nil)\n> DELEX k IFDEQ x\n:0");
}
