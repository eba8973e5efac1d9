//! Transcript tests for the string family. Unless marked otherwise, the expected replies were
//! produced by a real Redis 7.0.15; IFEQ, DELIFEQ and DELEX follow Valkey 9 / Redis 8.4.

use crate::testkit::{TestClient, TestServer};
use crate::value::{Entry, Value};

/// Stores an empty list under `key` in db 0, bypassing the list commands.
pub(crate) fn put_list(ts: &TestServer, key: &str) {
    let mut l = ts.srv.ks.lock_all();
    l.shard_for(key.as_bytes()).dbs[0].insert(key.as_bytes(), Entry::new(Value::List(Default::default())));
}

/// The TTL deadline of `key` in db 0 (monotonic ms), None when absent or persistent.
pub(crate) fn deadline(ts: &TestServer, key: &str) -> Option<u64> {
    let mut l = ts.srv.ks.lock_all();
    l.shard_for(key.as_bytes()).dbs[0].peek(key.as_bytes()).and_then(|e| e.expire_at())
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
    l.shard_for(key.as_bytes()).dbs[0].peek(key.as_bytes()).map(|e| e.value.encoding()).unwrap_or("none")
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
