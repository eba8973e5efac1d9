//! The random command vocabulary the property tests share (`replay`, `snapshot`): a command of
//! every family from four random numbers, over a handful of keys of each type.

// Each test crate uses its own part of the vocabulary.
#![allow(dead_code)]

pub const STRINGS: &[&str] = &["s0", "s1"];
pub const LISTS: &[&str] = &["l0", "l1"];
pub const HASHES: &[&str] = &["h0"];
pub const SETS: &[&str] = &["t0", "t1"];
pub const ZSETS: &[&str] = &["z0", "z1"];
pub const STREAMS: &[&str] = &["x0", "x1"];
pub const ANY: &[&str] = &["s0", "s1", "l0", "l1", "h0", "t0", "t1", "z0", "z1", "lk", "x0", "x1"];
pub const WORDS: &[&str] = &["a", "b", "c", "d", "10", "-3", "1.5"];

/// Picks from a slice by a random number.
pub fn pick<'a>(v: &[&'a str], n: u16) -> &'a str {
    v[n as usize % v.len()]
}

/// A command of every family, from four random numbers.
pub fn command(kind: u8, a: u16, b: u16, c: u16, unix_s: i64) -> Vec<Vec<u8>> {
    let (s, s2) = (pick(STRINGS, a), pick(STRINGS, b));
    let (l, l2) = (pick(LISTS, a), pick(LISTS, b));
    let h = pick(HASHES, a);
    let (t, t2) = (pick(SETS, a), pick(SETS, b));
    let (z, z2) = (pick(ZSETS, a), pick(ZSETS, b));
    let (k, k2) = (pick(ANY, a), pick(ANY, b));
    let w = pick(WORDS, c);
    let n = (c % 5 + 1).to_string();
    let ms = (u32::from(c) * 37 % 3000 + 1).to_string();
    let line: String = match kind % 64 {
        0 => format!("SET {s} {w}"),
        1 => format!("SET {s} {w} PX {ms}"),
        2 => format!("SET {s} {w} EX {n} NX"),
        3 => format!("SET {s} {w} XX GET KEEPTTL"),
        4 => format!("SETEX {s} {n} {w}"),
        5 => format!("PSETEX {s} {ms} {w}"),
        6 => format!("GETDEL {s}"),
        7 => format!("GETEX {s} PX {ms}"),
        8 => format!("GETEX {s} PERSIST"),
        9 => format!("APPEND {s} {w}"),
        10 => format!("SETRANGE {s} {n} {w}"),
        11 => format!("INCRBY {s} {n}"),
        12 => format!("INCRBYFLOAT {s} {w}"),
        13 => format!("MSET {s} {w} {s2} {n}"),
        14 => format!("SETBIT {s} {} 1", c % 40),
        15 => format!("BITFIELD {s} INCRBY u8 0 {n}"),
        16 => format!("DELIFEQ {s} {w}"),
        17 => format!("LPUSH {l} {w} {n}"),
        18 => format!("RPUSH {l} {w}"),
        19 => format!("LPOP {l}"),
        20 => format!("RPOP {l} {n}"),
        21 => format!("LMOVE {l} {l2} LEFT RIGHT"),
        22 => format!("LMPOP 2 {l} {l2} RIGHT COUNT {n}"),
        23 => format!("LREM {l} 0 {w}"),
        24 => format!("LTRIM {l} 0 {n}"),
        25 => format!("LSET {l} 0 {w}"),
        26 => format!("LINSERT {l} BEFORE {w} x"),
        27 => format!("HSET {h} {w} {n} f {w}"),
        28 => format!("HDEL {h} {w}"),
        29 => format!("HINCRBY {h} n {n}"),
        30 => format!("HINCRBYFLOAT {h} fl {w}"),
        31 => format!("SADD {t} {w} {n}"),
        32 => format!("SREM {t} {w}"),
        33 => format!("SPOP {t}"),
        34 => format!("SPOP {t} {n}"),
        35 => format!("SMOVE {t} {t2} {w}"),
        36 => format!("SINTERSTORE {t2} {t} {t2}"),
        37 => format!("SUNIONSTORE {t2} {t} {t2}"),
        38 => format!("ZADD {z} {n} {w}"),
        39 => format!("ZINCRBY {z} {w} {w}"),
        40 => format!("ZPOPMIN {z} {n}"),
        41 => format!("ZPOPMAX {z}"),
        42 => format!("ZMPOP 2 {z} {z2} MIN COUNT {n}"),
        43 => format!("ZREMRANGEBYSCORE {z} 0 {n}"),
        44 => format!("ZUNIONSTORE {z2} 2 {z} {z2}"),
        45 => format!("ZRANGESTORE {z2} {z} 0 {n}"),
        46 => format!("DEL {k} {k2}"),
        47 => format!("EXPIRE {k} {n}"),
        48 => format!("PEXPIRE {k} {ms}"),
        49 => format!("EXPIREAT {k} {}", unix_s + i64::from(c % 4)),
        50 => format!("PERSIST {k}"),
        51 => format!("RENAME {k} {k2}"),
        52 => format!("COPY {k} {k2} REPLACE"),
        53 => format!("MOVE {k} 1"),
        54 => format!("SORT {l} STORE {l2}"),
        55 => format!("LOCK lk o{} {ms}", c % 2),
        56 => format!("UNLOCK lk o{}", c % 2),
        57 => format!("LOCKEXTEND lk o{} {ms}", c % 2),
        58 => format!("SELECT {}", c % 2),
        59 => "SWAPDB 0 1".to_string(),
        60 if c.is_multiple_of(8) => "FLUSHDB".to_string(),
        60 => format!("GETSET {s} {w}"),
        61 => format!("BITOP OR {s2} {s} {s2}"),
        62 => format!("ZADD {z} INCR {w} {w}"),
        // A DUMP payload of "hello" (redis-server 7.0.15's): a relative TTL replays as ABSTTL.
        63 if c.is_multiple_of(2) => format!(r#"RESTORE {s} {ms} "\x00\x05hello\n\x00cr\xdfve4 \n" REPLACE"#),
        63 if c % 4 == 1 => format!("HSETNX {h} {w} {n}"),
        // Streams: clock-made IDs, trims, groups, reads that claim, claims of deleted entries.
        63 => {
            let x = pick(STREAMS, a);
            match (c / 4) % 9 {
                0 => format!("XADD {x} * f {w}"),
                1 => format!("XADD {x} MAXLEN ~ {n} * f {w} g {n}"),
                2 => format!("XGROUP CREATE {x} g $ MKSTREAM"),
                3 => format!("XREADGROUP GROUP g c{} COUNT {n} STREAMS {x} >", b % 2),
                4 => format!("XAUTOCLAIM {x} g c2 0 0 COUNT {n}"),
                5 => format!("XTRIM {x} MAXLEN {n}"),
                6 => format!("XREADGROUP GROUP g c1 NOACK STREAMS {x} >"),
                7 => format!("XGROUP SETID {x} g 0"),
                _ => format!("XADD {x} MINID ~ 0 * h {w}"),
            }
        }
        _ => format!("HSETNX {h} {w} {n}"),
    };
    resp::split_args(line.as_bytes()).expect("balanced quotes")
}
