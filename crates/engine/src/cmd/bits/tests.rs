//! Transcript tests for the bit commands; expected replies produced by a real Redis 7.0.15.

use crate::cmd::string::tests::put_list;
use crate::testkit::TestServer;

#[test]
fn setbit_getbit_bitcount_bitpos_bitop() {
    TestServer::new().transcript(
        r#"
            > SETBIT mykey 1 1
            :0
            > GET mykey
            "@"
            > SET mykey "@"
            +OK
            > SETBIT mykey 2 1
            :0
            > GET mykey
            "`"
            > SETBIT mykey 1 0
            :1
            > GET mykey
            " "
            > SET mykey 1
            +OK
            > SETBIT mykey 6 1
            :0
            > GET mykey
            "3"
            > SETBIT mykey 2 0
            :1
            > GET mykey
            "\x13"
            > SETBIT mykey 4294967296 1
            -ERR bit offset is not an integer or out of range
            > SETBIT mykey -1 1
            -ERR bit offset is not an integer or out of range
            > SETBIT mykey abc 1
            -ERR bit offset is not an integer or out of range
            > SETBIT mykey #1 1
            -ERR bit offset is not an integer or out of range
            > SETBIT mykey 0 -1
            -ERR bit is not an integer or out of range
            > SETBIT mykey 0 2
            -ERR bit is not an integer or out of range
            > SETBIT mykey 0 abc
            -ERR bit is not an integer or out of range
            > SETBIT mykey abc abc
            -ERR bit offset is not an integer or out of range
            > SETBIT mykey 4294967295 abc
            -ERR bit is not an integer or out of range
            > SETBIT sb 20 1
            :0
            > GET sb
            "\x00\x00\b"
            > SETBIT sb 20 1
            :1
            > SETBIT sb 20 0
            :1
            > GETBIT nokey 0
            :0
            > GETBIT nokey abc
            -ERR bit offset is not an integer or out of range
            > GETBIT nokey 4294967296
            -ERR bit offset is not an integer or out of range
            > SET gb "`"
            +OK
            > GETBIT gb 0
            :0
            > GETBIT gb 1
            :1
            > GETBIT gb 2
            :1
            > GETBIT gb 3
            :0
            > GETBIT gb 8
            :0
            > GETBIT gb 10000
            :0
            > SET gi 1
            +OK
            > GETBIT gi 2
            :1
            > GETBIT gi 3
            :1
            > GETBIT gi 7
            :1
            > BITCOUNT no-key
            :0
            > BITCOUNT no-key 0 1000 bit
            :0
            > BITCOUNT no-key 0
            :0
            > BITCOUNT no-key a b c d
            :0
            > SET s foobar
            +OK
            > BITCOUNT s
            :26
            > BITCOUNT s 0 -1
            :26
            > BITCOUNT s 1 -2
            :18
            > BITCOUNT s -2 1
            :0
            > BITCOUNT s 0 1000
            :26
            > BITCOUNT s 0 -1 bit
            :26
            > BITCOUNT s 10 14 bit
            :4
            > BITCOUNT s 3 14 bit
            :7
            > BITCOUNT s 3 29 bit
            :16
            > BITCOUNT s 10 -34 bit
            :4
            > BITCOUNT s 3 -34 bit
            :7
            > BITCOUNT s -2 1 bit
            :0
            > BITCOUNT s 0 1000 bit
            :26
            > BITCOUNT s 0 1000 BYTE
            :26
            > BITCOUNT s -6 -7
            :0
            > BITCOUNT s -6 -15 bit
            :0
            > BITCOUNT s -6 -7 foo
            :0
            > BITCOUNT s 0
            -ERR syntax error
            > BITCOUNT s 0 1 hello
            -ERR syntax error
            > BITCOUNT s 0 1 bit extra
            -ERR syntax error
            > BITCOUNT s a 1
            -ERR value is not an integer or out of range
            > BITCOUNT s 0 4294967296
            :26
            > BITCOUNT s 0 a bit
            -ERR value is not an integer or out of range
            > BITCOUNT s 7 7 bit
            :0
            > BITCOUNT s 1 1 bit
            :1
            > BITCOUNT s 47 47 bit
            :0
            > SET str ab
            +OK
            > BITCOUNT str 1 -1
            :3
            > SET str __PPxxxxxxxxxxxxxxxxRR__
            +OK
            > BITCOUNT str 2 -3
            :74
            > SET in 12345
            +OK
            > BITCOUNT in
            :17
            > SET e ""
            +OK
            > BITCOUNT e
            :0
            > BITCOUNT e 0 -1 bit
            :0
            > BITPOS e 0
            :-1
            > BITPOS e 1
            :-1
            > BITPOS e 0 0 -1
            :-1
            > BITPOS nokey 0
            :0
            > BITPOS nokey 1
            :-1
            > BITPOS nokey 0 0 -1 bit
            :0
            > BITPOS nokey 1 0 -1 foo
            :-1
            > BITPOS nokey 2
            -ERR The bit argument must be 1 or 0.
            > BITPOS nokey abc
            -ERR value is not an integer or out of range
            > SET str "\xff\xf0\x00"
            +OK
            > BITPOS str 0
            :12
            > BITPOS str 0 0 -1 bit
            :12
            > BITPOS str 0 1
            :12
            > BITPOS str 0 1 -1 bit
            :12
            > SET str "\x00\x0f\xff"
            +OK
            > BITPOS str 1
            :12
            > BITPOS str 1 1
            :12
            > BITPOS str 1 1 -1 bit
            :12
            > SET str "\x00\xff\x00"
            +OK
            > BITPOS str 0 0 -1
            :0
            > BITPOS str 0 1 -1
            :16
            > BITPOS str 0 2 -1
            :16
            > BITPOS str 0 2 200
            :16
            > BITPOS str 0 1 1
            :-1
            > BITPOS str 0 0 -1 bit
            :0
            > BITPOS str 0 8 -1 bit
            :16
            > BITPOS str 0 16 -1 bit
            :16
            > BITPOS str 0 16 200 bit
            :16
            > BITPOS str 0 8 8 bit
            :-1
            > BITPOS str 1 0 -1
            :8
            > BITPOS str 1 1 -1
            :8
            > BITPOS str 1 2 -1
            :-1
            > BITPOS str 1 2 200
            :-1
            > BITPOS str 1 1 1
            :8
            > BITPOS str 1 0 -1 bit
            :8
            > BITPOS str 1 8 -1 bit
            :8
            > BITPOS str 1 16 -1 bit
            :-1
            > BITPOS str 1 16 200 bit
            :-1
            > BITPOS str 1 8 8 bit
            :8
            > BITPOS str 1 9 14 bit
            :9
            > BITPOS str 0 9 14 bit
            :-1
            > BITPOS str 0 3 5 bit
            :3
            > BITPOS str 1 5 3 bit
            :-1
            > BITPOS str 1 -1 -3
            :-1
            > BITPOS str 0 2 1
            :-1
            > BITPOS str 1 a
            -ERR value is not an integer or out of range
            > BITPOS str 1 0 a
            -ERR value is not an integer or out of range
            > BITPOS str 1 0 -1 foo
            -ERR syntax error
            > BITPOS str 1 0 -1 bit extra
            -ERR syntax error
            > SET str "\xff\xff\xff"
            +OK
            > BITPOS str 0
            :24
            > BITPOS str 0 0
            :24
            > BITPOS str 0 0 -1
            :-1
            > BITPOS str 0 0 -1 bit
            :-1
            > BITPOS str 0 3
            :-1
            > BITPOS str 0 1 2 byte
            :-1
            > BITPOS str 0 5 20 bit
            :-1
            > SET str "\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\x0f"
            +OK
            > BITPOS str 0
            :216
            > BITPOS str 0 5
            :216
            > BITPOS str 0 9 -1 bit
            :216
            > BITPOS str 0 65 -1 bit
            :216
            > SET str "\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\xf0"
            +OK
            > BITPOS str 1
            :216
            > BITPOS str 1 3
            :216
            > BITPOS str 1 17 -1 bit
            :216
            > SET in 12345
            +OK
            > BITPOS in 0
            :0
            > BITPOS in 1 1
            :10
            > SET a foobar
            +OK
            > SET b abcdef
            +OK
            > BITOP AND d1 a b
            :6
            > GET d1
            "`bc`ab"
            > BITOP OR d2 a b
            :6
            > GET d2
            "goofev"
            > BITOP XOR d3 a b
            :6
            > GET d3
            "\a\r\x0c\x06\x04\x14"
            > BITOP NOT d4 a
            :6
            > GET d4
            "\x99\x90\x90\x9d\x9e\x8d"
            > BITOP not d4 a b
            -ERR BITOP NOT must be called with a single source key.
            > BITOP nand d4 a b
            -ERR syntax error
            > BITOP and d5 a nokey
            :6
            > GET d5
            "\x00\x00\x00\x00\x00\x00"
            > BITOP or d6 a nokey in
            :6
            > GET d6
            "w\x7f\x7fvur"
            > BITOP xor d7 nokey in
            :5
            > GET d7
            "12345"
            > BITOP and d1 nokey nokey2
            :0
            > GET d1
            (nil)
            > SET e ""
            +OK
            > BITOP not d2 e
            :0
            > GET d2
            (nil)
            > BITOP and d3
            -ERR wrong number of arguments for 'bitop' command
            > SET short "\xff"
            +OK
            > SET long "\x0f\x0f\x0f"
            +OK
            > BITOP and d8 short long
            :3
            > GET d8
            "\x0f\x00\x00"
            > BITOP or d8 short long
            :3
            > GET d8
            "\xff\x0f\x0f"
            > BITOP and d9 a a a a a a a a a a a a a a a a a a
            :6
            > GET d9
            "foobar"
        "#,
    );
}

#[test]
fn bitfield() {
    TestServer::new().transcript(
        r#"
            > BITFIELD bits set i8 0 -100
            [:0]
            > BITFIELD bits set i8 0 101
            [:-100]
            > BITFIELD bits get i8 0
            [:101]
            > BITFIELD bits set u8 0 255
            [:101]
            > BITFIELD bits set u8 0 100
            [:255]
            > BITFIELD bits get u8 0
            [:100]
            > BITFIELD bits set i8 0 255 set i8 0 100 get i8 0
            [:100, :-1, :100]
            > BITFIELD bits set u8 0 255 incrby u8 0 100 get u8 0
            [:100, :99, :99]
            > BITFIELD bits
            []
            > BITFIELD nokey
            []
            > BITFIELD nokey get u8 0 get i64 100
            [:0, :0]
            > BITFIELD b2 set u8 #0 65 set u8 #1 66 set u8 #2 67
            [:0, :0, :0]
            > GET b2
            "ABC"
            > BITFIELD b2 get u8 #1 get u4 #3 get i4 #3 get u16 8
            [:66, :2, :2, :16963]
            > BITFIELD bits set u8 #0 10
            [:99]
            > BITFIELD bits incrby u8 #0 100 incrby u8 #0 100
            [:110, :210]
            > BITFIELD bits set u8 #0 100
            [:210]
            > BITFIELD bits overflow wrap incrby u8 #0 257
            [:101]
            > BITFIELD bits get u8 #0
            [:101]
            > BITFIELD bits overflow wrap incrby u8 #0 255
            [:100]
            > BITFIELD bits get u8 #0
            [:100]
            > BITFIELD bits set u8 #0 100
            [:100]
            > BITFIELD bits overflow sat incrby u8 #0 257
            [:255]
            > BITFIELD bits overflow sat incrby u8 #0 -255
            [:0]
            > BITFIELD bits set u8 #0 100
            [:0]
            > BITFIELD bits overflow fail incrby u8 #0 257
            [(nil)]
            > BITFIELD bits get u8 #0
            [:100]
            > BITFIELD bits overflow fail incrby u8 #0 -255
            [(nil)]
            > BITFIELD bits overflow FAIL incrby u8 #0 -100
            [:0]
            > BITFIELD bits set i8 #0 100
            [:0]
            > BITFIELD bits overflow wrap incrby i8 #0 257
            [:101]
            > BITFIELD bits overflow wrap incrby i8 #0 255
            [:100]
            > BITFIELD bits overflow sat incrby i8 #0 200
            [:127]
            > BITFIELD bits overflow sat incrby i8 #0 -300
            [:-128]
            > BITFIELD bits overflow fail incrby i8 #0 -300 incrby i8 #0 10
            [(nil), :-118]
            > BITFIELD bits overflow sat set i8 0 1000 set i8 0 -1000 get i8 0
            [:-118, :127, :-128]
            > BITFIELD bits overflow fail set i8 0 1000 set u8 0 -1 overflow wrap set u8 0 -1 get u8 0
            [(nil), (nil), :128, :255]
            > BITFIELD bits overflow sat set u8 0 -1 get u8 0
            [:255, :255]
            > BITFIELD bits set i64 0 -9223372036854775808 get i64 0
            [:-72057594037927936, :-9223372036854775808]
            > BITFIELD bits overflow wrap incrby i64 0 -1
            [:9223372036854775807]
            > BITFIELD bits overflow sat incrby i64 0 1 incrby i64 0 9223372036854775807 incrby i64 0 1
            [:9223372036854775807, :9223372036854775807, :9223372036854775807]
            > BITFIELD bits overflow fail incrby i64 0 1
            [(nil)]
            > BITFIELD bits set u63 0 9223372036854775807 incrby u63 0 1 overflow sat incrby u63 0 -1 incrby u63 0 -9223372036854775807
            [:4611686018427387903, :0, :0, :0]
            > BITFIELD bits set i1 0 1 set i1 0 -1 get i1 0 get u1 0
            [:0, :-1, :-1, :1]
            > BITFIELD bits set u2 100 1 get u2 100
            [:0, :1]
            > STRLEN bits
            :13
            > BITFIELD bits set i3 5 -3 get i3 5 get u3 5 get i16 0
            [:0, :-3, :5, :-31488]
            > BITFIELD bits get u64 0
            -ERR Invalid bitfield type. Use something like i16 u8. Note that u64 is not supported but i64 is.
            > BITFIELD bits get i65 0
            -ERR Invalid bitfield type. Use something like i16 u8. Note that u64 is not supported but i64 is.
            > BITFIELD bits get u0 0
            -ERR Invalid bitfield type. Use something like i16 u8. Note that u64 is not supported but i64 is.
            > BITFIELD bits get x8 0
            -ERR Invalid bitfield type. Use something like i16 u8. Note that u64 is not supported but i64 is.
            > BITFIELD bits get I8 0
            -ERR Invalid bitfield type. Use something like i16 u8. Note that u64 is not supported but i64 is.
            > BITFIELD bits get i8 -1
            -ERR bit offset is not an integer or out of range
            > BITFIELD bits get i8 abc
            -ERR bit offset is not an integer or out of range
            > BITFIELD bits get i8 #-1
            -ERR bit offset is not an integer or out of range
            > BITFIELD bits get i8 4294967296
            -ERR bit offset is not an integer or out of range
            > BITFIELD bits get i8 4294967295
            [:0]
            > BITFIELD bits get i8 #536870912
            -ERR bit offset is not an integer or out of range
            > BITFIELD bits set i8 0 abc
            -ERR value is not an integer or out of range
            > BITFIELD bits set i8 0
            -ERR syntax error
            > BITFIELD bits get i8
            -ERR syntax error
            > BITFIELD bits overflow
            -ERR syntax error
            > BITFIELD bits overflow foo get i8 0
            -ERR Invalid OVERFLOW type specified
            > BITFIELD bits foo
            -ERR syntax error
            > BITFIELD bits get i8 0 foo
            -ERR syntax error
            > BITFIELD bits incrby i8 0 1 get
            -ERR syntax error
            > BITFIELD_RO bits get u8 0 get i8 8
            [:133, :0]
            > BITFIELD_RO bits set u8 0 1
            -ERR BITFIELD_RO only supports the GET subcommand
            > BITFIELD_RO bits incrby u8 0 1 get u8 0
            -ERR BITFIELD_RO only supports the GET subcommand
            > BITFIELD_RO bits overflow sat get u8 0
            [:133]
            > BITFIELD_RO bits
            []
            > BITFIELD_RO nokey get u8 0
            [:0]
            > BITFIELD_RO bits get x8 0
            -ERR Invalid bitfield type. Use something like i16 u8. Note that u64 is not supported but i64 is.
            > BITFIELD_RO bits foo 1 2
            -ERR syntax error
            > SET bint 12345
            +OK
            > BITFIELD bint get u8 0 get u16 8
            [:49, :12851]
            > BITFIELD bint set u8 0 50 get u8 0
            [:49, :50]
            > GET bint
            "22345"
            > BITFIELD nk2 get u8 1000 set u8 16 255
            [:0, :0]
            > GET nk2
            "\x00\x00\xff"
            > BITFIELD nk3 overflow fail set u8 0 300
            [(nil)]
            > GET nk3
            "\x00"
        "#,
    );
}

#[test]
fn wrong_type() {
    let ts = TestServer::new();
    put_list(&ts, "l");
    ts.transcript(
        r#"
        > SETBIT l 0 1
        -WRONGTYPE Operation against a key holding the wrong kind of value
        > SETBIT l -1 1
        -ERR bit offset is not an integer or out of range
        > GETBIT l 0
        -WRONGTYPE Operation against a key holding the wrong kind of value
        > BITCOUNT l
        -WRONGTYPE Operation against a key holding the wrong kind of value
        > BITCOUNT l 0
        -WRONGTYPE Operation against a key holding the wrong kind of value
        > BITPOS l 1
        -WRONGTYPE Operation against a key holding the wrong kind of value
        > BITPOS l 2
        -ERR The bit argument must be 1 or 0.
        > BITOP AND dest l
        -WRONGTYPE Operation against a key holding the wrong kind of value
        > BITFIELD l get u8 0
        -WRONGTYPE Operation against a key holding the wrong kind of value
        > BITFIELD l set u8 0 1
        -WRONGTYPE Operation against a key holding the wrong kind of value
        > BITFIELD l get x8 0
        -ERR Invalid bitfield type. Use something like i16 u8. Note that u64 is not supported but i64 is.
        > BITFIELD_RO l get u8 0
        -WRONGTYPE Operation against a key holding the wrong kind of value
        > SET d x
        +OK
        > BITOP AND l nokey
        :0
        > GET l
        (nil)
        "#,
    );
    // The destination of BITOP may hold any type: it is overwritten.
    put_list(&ts, "l2");
    ts.transcript("> BITOP OR l2 d\n:1\n> GET l2\n\"x\"");
}

/// As tests/unit/bitops.tcl "SETBIT/BITFIELD only increase dirty when the value changed".
#[test]
fn dirty_only_on_change() {
    let ts = TestServer::new();
    let dirty = || ts.srv.stats.dirty();
    let mut c = ts.client();
    let d0 = dirty();
    c.run("SETBIT foo 0 0");
    c.run("BITFIELD foo2 SET i5 0 0");
    assert_eq!(dirty(), d0 + 2);
    c.run("SETBIT foo 0 0");
    c.run("BITFIELD foo2 SET i5 0 0");
    assert_eq!(dirty(), d0 + 2);
    for cmd in ["SETBIT foo 0 1", "SETBIT foo 0 1", "SETBIT foo 0 0", "SETBIT foo 0 0"] {
        c.run(cmd);
    }
    for cmd in
        ["BITFIELD foo2 SET i5 0 1", "BITFIELD foo2 SET i5 0 1", "BITFIELD foo2 SET i5 0 0", "BITFIELD foo2 SET i5 0 0"]
    {
        c.run(cmd);
    }
    assert_eq!(dirty(), d0 + 6);
    c.run("BITFIELD foo3 INCRBY i5 0 1");
    c.run("BITFIELD foo3 INCRBY i5 0 1");
    assert_eq!(dirty(), d0 + 8);
    c.run("SETBIT foo 90 0");
    c.run("BITFIELD foo2 SET i5 90 0");
    assert_eq!(dirty(), d0 + 10);
}

#[test]
fn offsets_limited_by_proto_max_bulk_len() {
    let ts = TestServer::new();
    ts.srv.config.set("proto-max-bulk-len", "1048576", false).expect("valid");
    ts.transcript(
        r#"
        > SETBIT k 8388608 1
        -ERR bit offset is not an integer or out of range
        > GETBIT k 8388608
        -ERR bit offset is not an integer or out of range
        > SETBIT k 8388607 1
        :0
        > STRLEN k
        :1048576
        > BITCOUNT k
        :1
        > BITPOS k 1
        :8388607
        > BITFIELD k get u8 #1048576
        -ERR bit offset is not an integer or out of range
        > BITFIELD k get u8 #1048575
        [:1]
        "#,
    );
}

/// Redis's range clamping (negative = from the end) over `total` units.
fn clamp(mut s: i64, mut e: i64, total: i64) -> (i64, i64) {
    if s < 0 {
        s += total;
    }
    if e < 0 {
        e += total;
    }
    (s.max(0), e.max(0).min(total - 1))
}

/// BITCOUNT and BITPOS against a naive bit-by-bit model, on random data and ranges.
#[test]
fn bit_ranges_match_model() {
    use rand::{Rng, SeedableRng};
    let mut rng = rand::rngs::StdRng::seed_from_u64(42);
    let ts = TestServer::new();
    let mut c = ts.client();
    for round in 0..300 {
        let len = rng.random_range(1..40usize);
        let data: Vec<u8> = (0..len).map(|_| if round % 3 == 0 { 0xff } else { rng.random() }).collect();
        c.cmd(&[&b"SET"[..], b"k", &data]);
        let bit = |i: i64| data[(i / 8) as usize] & (0x80 >> (i % 8)) != 0;
        let nbits = len as i64 * 8;
        let s = rng.random_range(-nbits - 5..nbits + 5);
        let e = rng.random_range(-nbits - 5..nbits + 5);
        // Bit ranges.
        let (bs, be) = clamp(s, e, nbits);
        let want = if s < 0 && e < 0 && s > e { 0 } else { (bs..=be).filter(|&i| bit(i)).count() };
        assert_eq!(c.run(&format!("BITCOUNT k {s} {e} BIT")), format!(":{want}"), "{data:?} {s} {e}");
        for b in [0, 1] {
            let want = (bs..=be).find(|&i| bit(i) == (b == 1)).unwrap_or(-1);
            assert_eq!(c.run(&format!("BITPOS k {b} {s} {e} BIT")), format!(":{want}"), "{data:?} {s} {e}");
        }
        // Byte ranges.
        let (s, e) = (s / 8, e / 8);
        let (ys, ye) = clamp(s, e, len as i64);
        let want = if s < 0 && e < 0 && s > e { 0 } else { (ys * 8..ye * 8 + 8).filter(|&i| bit(i)).count() };
        assert_eq!(c.run(&format!("BITCOUNT k {s} {e}")), format!(":{want}"), "{data:?} {s} {e}");
        let want = (ys * 8..ye * 8 + 8).find(|&i| !bit(i)).unwrap_or(-1);
        assert_eq!(c.run(&format!("BITPOS k 0 {s} {e}")), format!(":{want}"), "{data:?} {s} {e}");
        // Without an end, a string of ones is followed by an implicit zero.
        let (ys, _) = clamp(s, -1, len as i64);
        let want = if ys >= len as i64 { -1 } else { (ys * 8..nbits).find(|&i| !bit(i)).unwrap_or(nbits) };
        assert_eq!(c.run(&format!("BITPOS k 0 {s}")), format!(":{want}"), "{data:?} {s}");
    }
}
