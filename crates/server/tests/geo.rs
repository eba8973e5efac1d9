//! The geo commands against redis-server 7.0.15: the same commands on both servers must give
//! byte-identical replies (raw RESP, in RESP2 and RESP3), over a few hundred random points and
//! searches with every option, plus the edge cases: the poles' limits, the antimeridian, points
//! sharing a position (ties in distance, sorted with and without COUNT), missing keys and members,
//! wrong types, bad units and every argument error.

mod common;

use common::{Latch, Raw, RedisServer};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

/// A Latch and a Redis connection that must answer alike.
struct Pair {
    l: Raw,
    r: Raw,
    /// Commands compared so far.
    compared: usize,
    /// Differences (command and both replies), reported together at the end.
    differ: Vec<String>,
}

impl Pair {
    fn new(latch: &Latch, redis: &RedisServer, resp3: bool) -> Pair {
        let mut p = Pair { l: latch.raw(), r: redis.raw(), compared: 0, differ: Vec::new() };
        if resp3 {
            p.l.cmd(&[b"HELLO", b"3"]);
            p.r.cmd(&[b"HELLO", b"3"]);
        }
        p
    }

    /// Runs `line` (words split on spaces) on both; records a difference. Returns Redis's reply.
    fn same(&mut self, line: &str) -> String {
        let args: Vec<&[u8]> = line.split(' ').filter(|w| !w.is_empty()).map(str::as_bytes).collect();
        let (lr, rr) = (self.l.cmd_bytes(&args), self.r.cmd_bytes(&args));
        self.compared += 1;
        if lr != rr {
            self.differ.push(format!(
                "{line}\n  latch: {:?}\n  redis: {:?}",
                String::from_utf8_lossy(&lr),
                String::from_utf8_lossy(&rr)
            ));
        }
        String::from_utf8_lossy(&rr).into_owned()
    }

    fn check(self, what: &str) {
        assert!(
            self.differ.is_empty(),
            "{what}: {} of {} replies differ:\n{}",
            self.differ.len(),
            self.compared,
            self.differ.iter().take(20).cloned().collect::<Vec<_>>().join("\n")
        );
    }
}

const UNITS: [&str; 8] = ["m", "km", "ft", "mi", "M", "KM", "Ft", "mI"];

/// A random position, biased towards the edges: the poles' limits and the antimeridian.
fn position(rng: &mut StdRng) -> (f64, f64) {
    let lon = match rng.random_range(0..6) {
        0 => 180.0 - rng.random_range(0.0..0.5),
        1 => -180.0 + rng.random_range(0.0..0.5),
        _ => rng.random_range(-180.0..180.0),
    };
    let lat = match rng.random_range(0..6) {
        0 => 85.05112878 - rng.random_range(0.0..1.0),
        1 => -85.05112878 + rng.random_range(0.0..1.0),
        _ => rng.random_range(-85.05..85.05),
    };
    (lon, lat)
}

/// A coordinate as a client would type it (a few digits, sometimes many).
fn coord(rng: &mut StdRng, v: f64) -> String {
    match rng.random_range(0..3) {
        0 => format!("{v:.3}"),
        1 => format!("{v:.6}"),
        _ => format!("{v}"),
    }
}

fn radius(rng: &mut StdRng) -> String {
    match rng.random_range(0..5) {
        0 => format!("{}", rng.random_range(0..50)),
        1 => format!("{:.2}", rng.random_range(0.0..500.0)),
        2 => format!("{}", rng.random_range(100..5000)),
        3 => format!("{}", rng.random_range(1000..20_000_000)),
        _ => "0".to_string(),
    }
}

/// Random search options (the WITH* ones when `with`), in a random order.
fn options(rng: &mut StdRng, with: bool) -> String {
    let mut o = Vec::new();
    if with {
        for w in ["WITHDIST", "WITHHASH", "WITHCOORD"] {
            if rng.random_bool(0.5) {
                o.push(w.to_string());
            }
        }
    }
    match rng.random_range(0..3) {
        0 => o.push("ASC".into()),
        1 => o.push("DESC".into()),
        _ => {}
    }
    if rng.random_bool(0.5) {
        o.push(format!("COUNT {}", rng.random_range(1..40)));
        if rng.random_bool(0.4) {
            o.push("ANY".into());
        }
    }
    // Redis takes the options in any order.
    let n = o.len();
    for i in 0..n {
        o.swap(i, rng.random_range(i..n));
    }
    o.join(" ")
}

fn populate(p: &mut Pair, rng: &mut StdRng, members: &mut Vec<String>) {
    for batch in 0..30 {
        let mut line = String::from("GEOADD pts");
        if batch >= 20 {
            for o in ["NX", "XX", "CH"] {
                if rng.random_bool(0.3) {
                    line.push(' ');
                    line.push_str(o);
                }
            }
        }
        for _ in 0..10 {
            let (lon, lat) = position(rng);
            let name = if batch >= 20 && !members.is_empty() && rng.random_bool(0.5) {
                members[rng.random_range(0..members.len())].clone()
            } else {
                format!("m{}", members.len())
            };
            line.push_str(&format!(" {} {} {name}", coord(rng, lon), coord(rng, lat)));
            if !members.contains(&name) {
                members.push(name);
            }
        }
        p.same(&line);
    }
    // Ties: many members at one position, and pairs at mirrored positions.
    let mut line = String::from("GEOADD pts");
    for i in 0..60 {
        line.push_str(&format!(" 12.5 41.9 tie{i}"));
    }
    p.same(&line);
    p.same("GEOADD pts 12.51 41.9 east 12.49 41.9 west 12.5 41.91 north 12.5 41.89 south");
    // The exact limits.
    p.same("GEOADD pts 180 85.05112878 ne -180 -85.05112878 sw 180 -85.05112878 se -180 85.05112878 nw 0 0 null");
    p.same("ZRANGE pts 0 -1 WITHSCORES");
    members.extend((0..60).map(|i| format!("tie{i}")));
    members.extend(["east", "west", "north", "south", "ne", "sw", "se", "nw", "null"].map(String::from));
}

#[test]
fn geo_replies_match_redis_byte_for_byte() {
    let Some(redis) = RedisServer::start_or_skip("the geo comparison") else { return };
    let latch = Latch::start(&["--save", ""]);
    let mut rng = StdRng::seed_from_u64(0x6e0);
    let mut p = Pair::new(&latch, &redis, false);
    let mut p3 = Pair::new(&latch, &redis, true);
    let mut members = Vec::new();
    populate(&mut p, &mut rng, &mut members);

    // Positions, hashes and distances of every member, some missing ones among them.
    for chunk in members.chunks(25) {
        let list = chunk.join(" ");
        p.same(&format!("GEOPOS pts {list} nosuch"));
        p3.same(&format!("GEOPOS pts {list} nosuch"));
        p.same(&format!("GEOHASH pts {list} nosuch"));
    }
    for _ in 0..300 {
        let a = &members[rng.random_range(0..members.len())];
        let b = &members[rng.random_range(0..members.len())];
        let u = if rng.random_bool(0.3) { String::new() } else { format!(" {}", UNITS[rng.random_range(0..8)]) };
        p.same(&format!("GEODIST pts {a} {b}{u}"));
    }

    // Searches.
    let mut found = 0;
    for i in 0..600 {
        let resp3 = i % 5 == 0;
        let pp = if resp3 { &mut p3 } else { &mut p };
        let member = members[rng.random_range(0..members.len())].clone();
        let (lon, lat) = position(&mut rng);
        let (lon, lat) = (coord(&mut rng, lon), coord(&mut rng, lat));
        let unit = UNITS[rng.random_range(0..8)];
        let r = radius(&mut rng);
        let from =
            if rng.random_bool(0.5) { format!("FROMMEMBER {member}") } else { format!("FROMLONLAT {lon} {lat}") };
        let by = if rng.random_bool(0.5) {
            format!("BYRADIUS {r} {unit}")
        } else {
            format!("BYBOX {} {} {unit}", radius(&mut rng), radius(&mut rng))
        };
        match i % 6 {
            0 | 1 => {
                let reply = pp.same(&format!("GEOSEARCH pts {from} {by} {}", options(&mut rng, true)));
                found += usize::from(reply.starts_with('*') && !reply.starts_with("*0\r\n"));
            }
            2 => {
                let dist = if rng.random_bool(0.5) { " STOREDIST" } else { "" };
                pp.same(&format!("GEOSEARCHSTORE dst pts {from} {by} {}{dist}", options(&mut rng, false)));
                pp.same("ZRANGE dst 0 -1 WITHSCORES");
            }
            3 => {
                let ro = if rng.random_bool(0.5) { "_RO" } else { "" };
                pp.same(&format!("GEORADIUS{ro} pts {lon} {lat} {r} {unit} {}", options(&mut rng, true)));
            }
            4 => {
                let ro = if rng.random_bool(0.5) { "_RO" } else { "" };
                pp.same(&format!("GEORADIUSBYMEMBER{ro} pts {member} {r} {unit} {}", options(&mut rng, true)));
            }
            _ => {
                let store = if rng.random_bool(0.5) { "STORE" } else { "STOREDIST" };
                pp.same(&format!("GEORADIUS pts {lon} {lat} {r} {unit} {} {store} dst", options(&mut rng, false)));
                pp.same("ZRANGE dst 0 -1 WITHSCORES");
                pp.same(&format!(
                    "GEORADIUSBYMEMBER pts {member} {r} {unit} {store} dst2 {}",
                    options(&mut rng, false)
                ));
                pp.same("ZRANGE dst2 0 -1 WITHSCORES");
            }
        }
    }

    assert!(found > 50, "only {found} GEOSEARCHes found something: the searches test too little");

    // Ties: 60 members at one position, cut by COUNT (Redis's partial quicksort) or not.
    for n in [1, 2, 5, 7, 8, 13, 40, 41, 59, 60, 64] {
        p.same(&format!("GEOSEARCH pts FROMLONLAT 12.5 41.9 BYRADIUS 5 km COUNT {n}"));
        p.same(&format!("GEOSEARCH pts FROMLONLAT 12.5 41.9 BYRADIUS 5 km COUNT {n} DESC WITHDIST"));
        p.same(&format!("GEOSEARCH pts FROMMEMBER tie3 BYBOX 3 3 km COUNT {n} ANY ASC"));
        p.same(&format!("GEORADIUS pts 12.5 41.9 2 km COUNT {n} DESC"));
    }
    p.same("GEOSEARCH pts FROMLONLAT 12.5 41.9 BYRADIUS 5 km ASC");
    p.same("GEOSEARCH pts FROMLONLAT 12.5 41.9 BYRADIUS 5 km DESC");
    p.same("GEOSEARCH pts FROMLONLAT 12.5 41.9 BYRADIUS 5 km");

    // Around the antimeridian and the poles.
    for line in [
        "GEOSEARCH pts FROMLONLAT 180 0 BYRADIUS 3000 km ASC WITHCOORD WITHDIST",
        "GEOSEARCH pts FROMLONLAT -179.9 10 BYBOX 2000 4000 km DESC WITHHASH",
        "GEOSEARCH pts FROMLONLAT 0 85.05112878 BYRADIUS 500 km ASC WITHCOORD",
        "GEOSEARCH pts FROMLONLAT 0 -85.05112878 BYBOX 40000 300 km ASC WITHDIST",
        "GEOSEARCH pts FROMMEMBER ne BYRADIUS 100 km WITHDIST WITHCOORD WITHHASH",
        "GEOSEARCH pts FROMMEMBER sw BYRADIUS 20000 km COUNT 5",
        "GEORADIUS pts 179.99 -85 1000 km WITHCOORD",
        "GEODIST pts ne nw km",
        "GEODIST pts se sw mi",
        "GEOPOS pts ne sw se nw null",
        "GEOHASH pts ne sw se nw null",
    ] {
        p.same(line);
        p3.same(line);
    }

    // Missing keys and members, wrong types.
    p.same("SET str x");
    p.same("DEL dst");
    for line in [
        "GEOADD str 1 2 a",
        "GEOPOS str a",
        "GEOHASH str a",
        "GEODIST str a b",
        "GEOSEARCH str FROMLONLAT 0 0 BYRADIUS 1 km",
        "GEORADIUS str 0 0 1 km",
        "GEORADIUSBYMEMBER str a 1 km",
        "GEOSEARCHSTORE dst str FROMLONLAT 0 0 BYRADIUS 1 km",
        "GEOSEARCHSTORE str pts FROMLONLAT 0 0 BYRADIUS 1 km",
        "GET str",
        "GEOPOS nokey a b",
        "GEOHASH nokey a",
        "GEOHASH pts",
        "GEOPOS pts",
        "GEODIST nokey a b",
        "GEODIST pts m0 nosuch",
        "GEODIST pts nosuch m0 km",
        "GEODIST pts m0 m1 parsec",
        "GEODIST nokey a b parsec",
        "GEODIST pts m0 m1 km extra",
        "GEOSEARCH nokey FROMMEMBER a BYRADIUS 1 km",
        "GEOSEARCH nokey FROMLONLAT 0 0 BYBOX 1 1 km",
        "GEORADIUSBYMEMBER nokey a 1 parsec",
        "GEORADIUSBYMEMBER pts nosuch 1 km",
        "GEOSEARCH pts FROMMEMBER nosuch BYRADIUS 1 km",
        "SET dst x",
        "GEOSEARCHSTORE dst nokey FROMLONLAT 0 0 BYRADIUS 1 km",
        "EXISTS dst",
        "SET dst x",
        "GEORADIUS nokey 0 0 1 km STORE dst",
        "EXISTS dst",
        "GEOSEARCHSTORE dst pts FROMLONLAT 0 0 BYRADIUS 0.001 m",
        "GEORADIUS pts 0 0 1 km STOREDIST dst",
        "ZRANGE dst 0 -1 WITHSCORES",
        "GEOSEARCH pts FROMLONLAT 1 1 BYRADIUS 1 m",
    ] {
        p.same(line);
    }

    // Argument errors, in Redis's order of checks.
    for line in [
        "GEOADD k 1 2",
        "GEOADD k NX XX 1 2 a",
        "GEOADD k NX CH",
        "GEOADD k GT 1 2 a",
        "GEOADD k 181 0 a",
        "GEOADD k 0 85.06 a",
        "GEOADD k -180.000001 -85.1 a",
        "GEOADD k inf 0 a",
        "GEOADD k x 0 a",
        "GEOADD k 0 nan a",
        "GEOADD k 1 2 a 3 x b",
        "GEOADD k XX 1 2 a",
        "EXISTS k",
        "GEOADD k CH 1 2 a 1 2 a",
        "GEOADD k NX CH 1 2 a 3 4 b",
        "GEOADD k XX CH 5 6 a 7 8 c",
        "ZRANGE k 0 -1 WITHSCORES",
        "GEOSEARCH pts FROMLONLAT 0 0",
        "GEOSEARCH pts BYRADIUS 1 km",
        "GEOSEARCH pts FROMLONLAT 0 0 FROMMEMBER m0 BYRADIUS 1 km",
        "GEOSEARCH pts FROMMEMBER m0 FROMLONLAT 0 0 BYRADIUS 1 km",
        "GEOSEARCH pts FROMMEMBER m0 BYRADIUS 1 km BYBOX 1 1 km",
        "GEOSEARCH pts FROMMEMBER m0 BYBOX 1 1 km BYRADIUS 1 km",
        "geosearch pts WITHDIST BYRADIUS 1 km",
        "GeoSearch pts FROMLONLAT 0 0 WITHDIST",
        "GEOSEARCH pts FROMLONLAT 0 0 BYRADIUS -1 km",
        "GEOSEARCH pts FROMLONLAT 0 0 BYRADIUS x km",
        "GEOSEARCH pts FROMLONLAT 0 0 BYRADIUS 1 parsec",
        "GEOSEARCH pts FROMLONLAT 0 0 BYBOX -1 1 km",
        "GEOSEARCH pts FROMLONLAT 0 0 BYBOX 1 x km",
        "GEOSEARCH pts FROMLONLAT 0 0 BYBOX x 1 km",
        "GEOSEARCH pts FROMLONLAT 0 0 BYBOX 1 1 lightyears",
        "GEOSEARCH pts FROMLONLAT 200 0 BYRADIUS 1 km",
        "GEOSEARCH pts FROMLONLAT 0 0 BYRADIUS 1 km COUNT 0",
        "GEOSEARCH pts FROMLONLAT 0 0 BYRADIUS 1 km COUNT -3",
        "GEOSEARCH pts FROMLONLAT 0 0 BYRADIUS 1 km COUNT x",
        "GEOSEARCH pts FROMLONLAT 0 0 BYRADIUS 1 km COUNT",
        "GEOSEARCH pts FROMLONLAT 0 0 BYRADIUS 1 km ANY",
        "GEOSEARCH pts FROMLONLAT 0 0 BYRADIUS 1 km STORE x",
        "GEOSEARCH pts FROMLONLAT 0 0 BYRADIUS 1 km STOREDIST",
        "GEOSEARCH pts FROMLONLAT 0 0 BYRADIUS 1 km bogus",
        "GEOSEARCHSTORE dst pts FROMLONLAT 0 0 BYRADIUS 1 km WITHDIST",
        "GEOSEARCHSTORE dst pts FROMLONLAT 0 0 BYRADIUS 1 km WITHHASH",
        "GEOSEARCHSTORE dst pts FROMLONLAT 0 0 BYRADIUS 1 km STORE x",
        "GEOSEARCHSTORE dst nokey FROMMEMBER a BYRADIUS 1 km WITHCOORD",
        "GEORADIUS pts 0 0 1 km STORE dst WITHDIST",
        "GEORADIUS pts 0 0 1 km WITHCOORD STOREDIST dst",
        "GEORADIUS_RO pts 0 0 1 km STORE dst",
        "GEORADIUSBYMEMBER_RO pts m0 1 km STOREDIST dst",
        "GEORADIUS pts 0 0 1 km FROMMEMBER m0",
        "GEORADIUS pts 0 0 1 km BYBOX 1 1 km",
        "GEORADIUS pts 0 0 -1 km",
        "GEORADIUS pts 0 0 x km",
        "GEORADIUS pts 0 0 1 parsec",
        "GEORADIUS pts 0 91 1 km",
        "GEORADIUS pts x 0 1 km",
        "GEORADIUS pts 0 0 1 km ANY",
        "GEORADIUS pts 0 0 1 km COUNT 2 ANY STORE",
        "GEORADIUSBYMEMBER pts m0 x km",
        "GEORADIUSBYMEMBER pts nosuch x km",
        "GEORADIUSBYMEMBER nokey nosuch x km STORE dst WITHDIST",
        "GEORADIUSBYMEMBER nokey nosuch 1 km WITHDIST",
        "GEORADIUS",
        "GEOSEARCH pts FROMLONLAT 0 0",
    ] {
        p.same(line);
    }
    p.check("RESP2");
    p3.check("RESP3");
}

/// GEOADD is propagated as ZADD and notified as `zadd`; stored searches raise their own events.
#[test]
fn geo_keyspace_events_match_redis() {
    let Some(redis) = RedisServer::start_or_skip("the geo events comparison") else { return };
    let latch = Latch::start(&["--save", ""]);
    let mut subs = Vec::new();
    let mut p = Pair::new(&latch, &redis, false);
    p.same("CONFIG SET notify-keyspace-events KEA");
    for port in [latch.port, redis.port] {
        let mut s = Raw::connect(port);
        s.cmd(&[b"PSUBSCRIBE", b"__keyevent@0__:*"]);
        subs.push(s);
    }
    let lines = [
        "GEOADD g 1 2 a 3 4 b",
        "GEOADD g NX 1 2 a",
        "GEORADIUS g 1 2 1000 km STORE d1",
        "GEOSEARCHSTORE d2 g FROMLONLAT 1 2 BYRADIUS 1000 km",
        "GEORADIUSBYMEMBER g a 1 m STOREDIST d1",
        "GEOSEARCHSTORE d2 g FROMLONLAT 50 50 BYRADIUS 1 km",
        "SET done 1",
    ];
    for line in lines {
        p.same(line);
    }
    let mut got = Vec::new();
    for s in &mut subs {
        let mut events = Vec::new();
        loop {
            let msg = String::from_utf8_lossy(&s.reply_bytes()).into_owned();
            let done = msg.contains("done");
            events.push(msg);
            if done {
                break;
            }
        }
        got.push(events);
    }
    assert_eq!(got[0], got[1], "latch events (left) differ from redis's (right)");
    let all = got[1].concat();
    for ev in ["zadd", "georadiusstore", "geosearchstore", "del"] {
        assert!(all.contains(&format!(":{ev}\r\n")), "no {ev} event among {all:?}");
    }
    p.check("events");
}
