//! The geo family: GEOADD, GEODIST, GEOHASH, GEOPOS, GEOSEARCH, GEOSEARCHSTORE and the GEORADIUS
//! forms, on sorted sets whose scores are 52-bit geohashes ([`crate::geohash`]).
//!
//! GEOADD is ZADD with computed scores, and is propagated (and notified) as that ZADD, as Redis
//! rewrites it. Searches read the nine cells around the center, keep the points inside the
//! shape, then sort as Redis does: a stable sort when every point is returned (glibc's `qsort` is
//! a merge sort), a partial quicksort when COUNT cuts the result ([`partial_sort`]), so points at
//! equal distances come out in Redis's order too.

use super::base::BASE;
use crate::args::{eq_ic, parse_f64, parse_i64_strict};
use crate::command::{Flags, Group, Keys};
use crate::ctx::{Command, Ctx};
use crate::db::Db;
use crate::error;
use crate::geohash::{self, Extent, LAT_MAX, LAT_MIN, LON_MAX, LON_MIN, Shape};
use crate::types::access::{bulk, create_zset, read_zset};
use crate::types::zset::ZSet;
use crate::value::{SmallBytes, Value};
use bytes::Bytes;
use resp::{Frame, Protocol};
use std::cmp::Ordering;

/// Table entries.
pub static COMMANDS: &[Command] = &[
    Command {
        name: "geoadd",
        arity: -5,
        flags: Flags::WRITE.or(Flags::DENYOOM),
        keys: Keys::ONE,
        group: Group::Geo,
        handler: geoadd,
        ..BASE
    },
    Command {
        name: "geodist",
        arity: -4,
        flags: Flags::READONLY,
        keys: Keys::ONE,
        group: Group::Geo,
        handler: geodist,
        ..BASE
    },
    Command {
        name: "geohash",
        arity: -2,
        flags: Flags::READONLY,
        keys: Keys::ONE,
        group: Group::Geo,
        handler: geohash,
        ..BASE
    },
    Command {
        name: "geopos",
        arity: -2,
        flags: Flags::READONLY,
        keys: Keys::ONE,
        group: Group::Geo,
        handler: geopos,
        ..BASE
    },
    Command {
        name: "georadius",
        arity: -6,
        flags: Flags::WRITE.or(Flags::DENYOOM),
        keys: Keys::Custom { first: 1, last: 1, step: 1, find: radius_keys },
        group: Group::Geo,
        handler: georadius,
        ..BASE
    },
    Command {
        name: "georadius_ro",
        arity: -6,
        flags: Flags::READONLY,
        keys: Keys::ONE,
        group: Group::Geo,
        handler: georadius_ro,
        ..BASE
    },
    Command {
        name: "georadiusbymember",
        arity: -5,
        flags: Flags::WRITE.or(Flags::DENYOOM),
        keys: Keys::Custom { first: 1, last: 1, step: 1, find: radius_keys },
        group: Group::Geo,
        handler: georadiusbymember,
        ..BASE
    },
    Command {
        name: "georadiusbymember_ro",
        arity: -5,
        flags: Flags::READONLY,
        keys: Keys::ONE,
        group: Group::Geo,
        handler: georadiusbymember_ro,
        ..BASE
    },
    Command {
        name: "geosearch",
        arity: -7,
        flags: Flags::READONLY,
        keys: Keys::ONE,
        group: Group::Geo,
        handler: geosearch,
        ..BASE
    },
    Command {
        name: "geosearchstore",
        arity: -8,
        flags: Flags::WRITE.or(Flags::DENYOOM),
        keys: Keys::Range { first: 1, last: 2, step: 1 },
        group: Group::Geo,
        handler: geosearchstore,
        ..BASE
    },
];

/// GEORADIUS[BYMEMBER]'s keys: the source and the last `STORE`/`STOREDIST` destination, found as
/// Redis's `georadiusGetKeys` finds it (every argument from the fifth, skipping a destination).
/// The handler's option walk names the same destination whenever it accepts the command: the
/// only argument it skips besides a destination is COUNT's, which must be an integer.
fn radius_keys(args: &[Bytes]) -> Vec<usize> {
    let mut dst = None;
    let mut i = 5;
    while i < args.len() {
        if (eq_ic(&args[i], "store") || eq_ic(&args[i], "storedist")) && i + 1 < args.len() {
            dst = Some(i + 1);
            i += 1;
        }
        i += 1;
    }
    std::iter::once(1).chain(dst).collect()
}

// ---- argument helpers ----

/// Meters per unit, or Redis's error for an unknown unit.
fn unit(arg: &[u8]) -> Result<f64, Frame> {
    match arg.to_ascii_lowercase().as_slice() {
        b"m" => Ok(1.0),
        b"km" => Ok(1000.0),
        b"ft" => Ok(0.3048),
        b"mi" => Ok(1609.34),
        _ => Err(Frame::error("ERR unsupported unit provided. please use M, KM, FT, MI")),
    }
}

/// A float argument; `msg` replaces the generic "not a valid float" error.
fn float(arg: &[u8], msg: Option<&str>) -> Result<f64, Frame> {
    parse_f64(arg).ok_or_else(|| msg.map_or_else(error::not_float, |m| Frame::error(format!("ERR {m}"))))
}

/// A longitude/latitude pair, checked against the ranges scores can encode.
fn lon_lat(lon: &[u8], lat: &[u8]) -> Result<(f64, f64), Frame> {
    let (x, y) = (float(lon, None)?, float(lat, None)?);
    if !(LON_MIN..=LON_MAX).contains(&x) || !(LAT_MIN..=LAT_MAX).contains(&y) {
        return Err(Frame::error(format!("ERR invalid longitude,latitude pair {x:.6},{y:.6}")));
    }
    Ok((x, y))
}

/// `radius unit`: the radius and meters per unit.
fn radius(r: &[u8], u: &[u8]) -> Result<(f64, f64), Frame> {
    let r = float(r, Some("need numeric radius"))?;
    if r < 0.0 {
        return Err(Frame::error("ERR radius cannot be negative"));
    }
    Ok((r, unit(u)?))
}

/// `width height unit`: the box and meters per unit.
fn box_size(w: &[u8], h: &[u8], u: &[u8]) -> Result<(f64, f64, f64), Frame> {
    let w = float(w, Some("need numeric width"))?;
    let h = float(h, Some("need numeric height"))?;
    if h < 0.0 || w < 0.0 {
        return Err(Frame::error("ERR height or width cannot be negative"));
    }
    Ok((w, h, unit(u)?))
}

// ---- reply helpers ----

/// A distance as Redis replies it: fixed point, four decimals (its `fixedpoint_d2string`, which
/// rounds half to even through `llrint`).
fn distance_text(d: f64) -> String {
    if d == 0.0 {
        return "0.0000".to_string();
    }
    let scaled = (d * 10000.0).round_ties_even();
    let v = if (-9.2e18..9.2e18).contains(&scaled) { scaled as i64 } else { i64::MIN };
    let sign = if v < 0 { "-" } else { "" };
    let m = v.unsigned_abs();
    format!("{sign}{}.{:04}", m / 10000, m % 10000)
}

/// A coordinate as Redis replies it (`addReplyHumanLongDouble`): the double widened to a long
/// double, printed `%.17Lf` with trailing zeros cut; a bulk string in RESP2, a double in RESP3.
fn coordinate(v: f64, proto: Protocol) -> Frame {
    let text = ldouble::LongDouble::from_f64(v).to_human_string();
    match proto {
        Protocol::Resp2 => Frame::bulk(text),
        _ => Frame::Encoded(Bytes::from(format!(",{text}\r\n"))),
    }
}

fn position(lon: f64, lat: f64, proto: Protocol) -> Frame {
    Frame::Array(vec![coordinate(lon, proto), coordinate(lat, proto)])
}

/// 2^63, where C's conversions of a double to a 64-bit integer leave the range.
const TWO_63: f64 = 9_223_372_036_854_775_808.0;

/// A score as C's `(long long)` conversion gives it on x86-64 (WITHHASH): out of range, the
/// conversion's "integer indefinite" value.
fn hash_integer(score: f64) -> i64 {
    if (-TWO_63..TWO_63).contains(&score) { score as i64 } else { i64::MIN }
}

/// The sorted set at `key` without counting a keyspace hit (the command has looked it up once).
fn peek_zset<'a>(db: &'a mut Db<'_, '_>, key: &[u8]) -> Option<&'a ZSet> {
    match db.peek(key).map(|e| &e.value) {
        Some(Value::ZSet(z)) => Some(z),
        _ => None,
    }
}

// ---- GEOADD ----

/// GEOADD key [NX | XX] [CH] longitude latitude member [longitude latitude member ...]
fn geoadd(ctx: &mut Ctx<'_, '_>) -> Frame {
    let (mut nx, mut xx, mut ch) = (false, false, false);
    let mut first = 2;
    while first < ctx.argc() {
        let o = ctx.arg(first);
        if eq_ic(o, "nx") {
            nx = true;
        } else if eq_ic(o, "xx") {
            xx = true;
        } else if eq_ic(o, "ch") {
            ch = true;
        } else {
            break;
        }
        first += 1;
    }
    let rest = ctx.argc() - first;
    if !rest.is_multiple_of(3) || (nx && xx) || rest == 0 {
        return error::syntax();
    }
    let args = ctx.args;
    let mut items = Vec::with_capacity(rest / 3);
    for t in args[first..].chunks_exact(3) {
        let (lon, lat) = match lon_lat(&t[0], &t[1]) {
            Ok(p) => p,
            Err(e) => return e,
        };
        // In range, so encodable.
        let score = geohash::score_of(lon, lat).unwrap_or(0);
        items.push((score, &t[2][..]));
    }
    let key = ctx.arg(1);
    let (entries, value_max) = ctx.srv.config.zset_listpack_limits();
    let mut db = ctx.db();
    let exists = match read_zset(&mut db, key) {
        Ok(z) => z.is_some(),
        Err(e) => return e,
    };
    let (mut added, mut updated) = (0i64, 0i64);
    if exists || !xx {
        let z = match create_zset(&mut db, key) {
            Ok(z) => z,
            Err(e) => return e,
        };
        for &(score, m) in &items {
            let score = score as f64;
            match z.score(m) {
                Some(_) if nx => {}
                Some(cur) => {
                    if cur != score {
                        z.insert(m, score);
                        updated += 1;
                    }
                }
                None if xx => {}
                None => {
                    z.add_under(m, score, entries, value_max);
                    added += 1;
                }
            }
        }
    }
    ctx.changed((added + updated) as u64);
    if added + updated > 0 {
        // Redis runs (and so propagates) GEOADD as the ZADD it rewrites it into.
        let mut zadd: Vec<Bytes> = Vec::with_capacity(first + 2 * items.len());
        zadd.push(Bytes::from_static(b"zadd"));
        zadd.extend(args[1..first].iter().cloned());
        for &(score, m) in &items {
            zadd.push(Bytes::from(score.to_string()));
            zadd.push(Bytes::copy_from_slice(m));
        }
        ctx.propagate_as(&zadd);
    }
    Frame::Integer(if ch { added + updated } else { added })
}

// ---- GEODIST / GEOHASH / GEOPOS ----

/// GEODIST key member1 member2 [M | KM | FT | MI]
fn geodist(ctx: &mut Ctx<'_, '_>) -> Frame {
    let to_meters = match ctx.argc() {
        4 => 1.0,
        5 => match unit(ctx.arg(4)) {
            Ok(u) => u,
            Err(e) => return e,
        },
        _ => return error::syntax(),
    };
    let (key, a, b) = (ctx.arg(1), ctx.arg(2), ctx.arg(3));
    let z = match read_zset(&mut ctx.db(), key) {
        Ok(Some(z)) => z.score(a).zip(z.score(b)),
        Ok(None) => None,
        Err(e) => return e,
    };
    let Some((sa, sb)) = z else { return Frame::Null };
    let ((lon1, lat1), (lon2, lat2)) = (geohash::decode_score(sa), geohash::decode_score(sb));
    Frame::bulk(distance_text(geohash::distance(lon1, lat1, lon2, lat2) / to_meters))
}

/// The scores of `members` (None for a missing one), or WRONGTYPE.
fn scores_of(ctx: &mut Ctx<'_, '_>) -> Result<Vec<Option<f64>>, Frame> {
    let key = ctx.arg(1);
    let args = ctx.args;
    let mut db = ctx.db();
    let z = read_zset(&mut db, key)?;
    Ok(args[2..].iter().map(|m| z.and_then(|z| z.score(m))).collect())
}

/// GEOHASH key [member ...]
fn geohash(ctx: &mut Ctx<'_, '_>) -> Frame {
    match scores_of(ctx) {
        Ok(v) => Frame::Array(
            v.into_iter()
                .map(|s| s.map_or(Frame::Null, |s| Frame::bulk(geohash::standard_string(s).to_vec())))
                .collect(),
        ),
        Err(e) => e,
    }
}

/// GEOPOS key [member ...]
fn geopos(ctx: &mut Ctx<'_, '_>) -> Frame {
    let proto = ctx.client.proto;
    match scores_of(ctx) {
        Ok(v) => Frame::Array(
            v.into_iter()
                .map(|s| {
                    s.map_or(Frame::NullArray, |s| {
                        let (lon, lat) = geohash::decode_score(s);
                        position(lon, lat, proto)
                    })
                })
                .collect(),
        ),
        Err(e) => e,
    }
}

// ---- searches ----

/// Which command runs a search.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Form {
    /// GEORADIUS[_RO] key longitude latitude radius unit ...
    Radius,
    /// GEORADIUSBYMEMBER[_RO] key member radius unit ...
    RadiusByMember,
    /// GEOSEARCH key FROM... BY... ...
    Search,
    /// GEOSEARCHSTORE destination source FROM... BY... ...
    SearchStore,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Order {
    None,
    Asc,
    Desc,
}

/// A point found by a search.
struct Found {
    member: SmallBytes,
    score: f64,
    lon: f64,
    lat: f64,
    /// Meters from the center.
    dist: f64,
}

fn georadius(ctx: &mut Ctx<'_, '_>) -> Frame {
    search(ctx, Form::Radius, true)
}
fn georadius_ro(ctx: &mut Ctx<'_, '_>) -> Frame {
    search(ctx, Form::Radius, false)
}
fn georadiusbymember(ctx: &mut Ctx<'_, '_>) -> Frame {
    search(ctx, Form::RadiusByMember, true)
}
fn georadiusbymember_ro(ctx: &mut Ctx<'_, '_>) -> Frame {
    search(ctx, Form::RadiusByMember, false)
}
fn geosearch(ctx: &mut Ctx<'_, '_>) -> Frame {
    search(ctx, Form::Search, false)
}
fn geosearchstore(ctx: &mut Ctx<'_, '_>) -> Frame {
    search(ctx, Form::SearchStore, false)
}

/// The center of a search around a member, or Redis's error when it has no position.
fn member_center(ctx: &mut Ctx<'_, '_>, src: &[u8], member: &[u8]) -> Result<(f64, f64), Frame> {
    match peek_zset(&mut ctx.db(), src).and_then(|z| z.score(member)) {
        Some(s) => Ok(geohash::decode_score(s)),
        None => Err(Frame::error("ERR could not decode requested zset member")),
    }
}

/// Redis's georadiusGeneric: parses in Redis's order (so the same error wins), searches, then
/// replies or stores. `may_store` is false for the `_RO` forms.
fn search(ctx: &mut Ctx<'_, '_>, form: Form, may_store: bool) -> Frame {
    match search_inner(ctx, form, may_store) {
        Ok(f) | Err(f) => f,
    }
}

fn search_inner(ctx: &mut Ctx<'_, '_>, form: Form, may_store: bool) -> Result<Frame, Frame> {
    let args = ctx.args;
    let src_at = if form == Form::SearchStore { 2 } else { 1 };
    let src = ctx.arg(src_at);
    let exists = read_zset(&mut ctx.db(), src)?.is_some();
    let is_search = matches!(form, Form::Search | Form::SearchStore);

    let mut center = None;
    let mut extent = None;
    let mut to_meters = 1.0;
    let base = match form {
        Form::Radius => {
            center = Some(lon_lat(&args[2], &args[3])?);
            let (r, u) = radius(&args[4], &args[5])?;
            (extent, to_meters) = (Some(Extent::Radius(r)), u);
            6
        }
        Form::RadiusByMember if !exists => 5,
        Form::RadiusByMember => {
            center = Some(member_center(ctx, src, &args[2])?);
            let (r, u) = radius(&args[3], &args[4])?;
            (extent, to_meters) = (Some(Extent::Radius(r)), u);
            5
        }
        Form::Search => 2,
        Form::SearchStore => 3,
    };

    let mut store: Option<&[u8]> = (form == Form::SearchStore).then(|| ctx.arg(1));
    let mut store_dist = false;
    let (mut withdist, mut withhash, mut withcoord, mut any) = (false, false, false, false);
    let (mut from_member, mut from_lonlat, mut by_radius, mut by_box) = (false, false, false, false);
    let mut order = Order::None;
    let mut count: i64 = 0;
    let opts = &args[base..];
    let mut i = 0;
    while i < opts.len() {
        let a = &opts[i][..];
        let left = opts.len() - i - 1;
        if eq_ic(a, "withdist") {
            withdist = true;
        } else if eq_ic(a, "withhash") {
            withhash = true;
        } else if eq_ic(a, "withcoord") {
            withcoord = true;
        } else if eq_ic(a, "any") {
            any = true;
        } else if eq_ic(a, "asc") {
            order = Order::Asc;
        } else if eq_ic(a, "desc") {
            order = Order::Desc;
        } else if eq_ic(a, "count") && left >= 1 {
            count = parse_i64_strict(&opts[i + 1]).ok_or_else(error::not_integer)?;
            if count <= 0 {
                return Err(Frame::error("ERR COUNT must be > 0"));
            }
            i += 1;
        } else if (eq_ic(a, "store") || eq_ic(a, "storedist")) && left >= 1 && may_store && !is_search {
            store = Some(&opts[i + 1]);
            store_dist = eq_ic(a, "storedist");
            i += 1;
        } else if eq_ic(a, "storedist") && form == Form::SearchStore {
            store_dist = true;
        } else if eq_ic(a, "frommember") && left >= 1 && is_search && !from_lonlat {
            if exists {
                center = Some(member_center(ctx, src, &opts[i + 1])?);
            }
            from_member = true;
            i += 1;
        } else if eq_ic(a, "fromlonlat") && left >= 2 && is_search && !from_member {
            center = Some(lon_lat(&opts[i + 1], &opts[i + 2])?);
            from_lonlat = true;
            i += 2;
        } else if eq_ic(a, "byradius") && left >= 2 && is_search && !by_box {
            let (r, u) = radius(&opts[i + 1], &opts[i + 2])?;
            (extent, to_meters) = (Some(Extent::Radius(r)), u);
            by_radius = true;
            i += 2;
        } else if eq_ic(a, "bybox") && left >= 3 && is_search && !by_radius {
            let (w, h, u) = box_size(&opts[i + 1], &opts[i + 2], &opts[i + 3])?;
            (extent, to_meters) = (Some(Extent::Box { width: w, height: h }), u);
            by_box = true;
            i += 3;
        } else {
            return Err(error::syntax());
        }
        i += 1;
    }

    if store.is_some() && (withdist || withhash || withcoord) {
        let who = if form == Form::SearchStore { "GEOSEARCHSTORE" } else { "STORE option in GEORADIUS" };
        return Err(Frame::error(format!("ERR {who} is not compatible with WITHDIST, WITHHASH and WITHCOORD options")));
    }
    let name = String::from_utf8_lossy(ctx.arg(0)).into_owned();
    if is_search && !(from_member || from_lonlat) {
        return Err(Frame::error(format!("ERR exactly one of FROMMEMBER or FROMLONLAT can be specified for {name}")));
    }
    if is_search && !(by_radius || by_box) {
        return Err(Frame::error(format!("ERR exactly one of BYRADIUS and BYBOX can be specified for {name}")));
    }
    if any && count == 0 {
        return Err(Frame::error("ERR the ANY argument requires COUNT argument"));
    }

    let (Some((lon, lat)), Some(extent), true) = (center, extent, exists) else {
        // No source: an empty reply, or an emptied destination.
        return Ok(match store {
            Some(dst) => {
                if ctx.db().remove(dst).is_some() {
                    ctx.changed(1);
                }
                Frame::Integer(0)
            }
            None => Frame::Array(Vec::new()),
        });
    };
    if count != 0 && order == Order::None && !any {
        order = Order::Asc;
    }
    let shape = Shape { lon, lat, extent, to_meters };
    let limit = if any { count as usize } else { 0 };
    let mut found = match peek_zset(&mut ctx.db(), src) {
        Some(z) => collect(z, &shape, limit),
        None => Vec::new(),
    };
    if found.is_empty() && store.is_none() {
        return Ok(Frame::Array(Vec::new()));
    }
    let returned = if count == 0 { found.len() } else { found.len().min(count as usize) };
    if order != Order::None {
        let by_dist = |a: &Found, b: &Found| {
            let o = compare_dist(a.dist, b.dist);
            if order == Order::Desc { o.reverse() } else { o }
        };
        if returned == found.len() {
            found.sort_by(by_dist);
        } else {
            partial_sort(&mut found, returned, &by_dist);
        }
    }
    found.truncate(returned);

    if let Some(dst) = store {
        let mut z = ZSet::new();
        for f in &found {
            z.insert(&f.member, if store_dist { f.dist / to_meters } else { f.score });
        }
        let (entries, value_max) = ctx.srv.config.zset_listpack_limits();
        z.settle(entries, value_max);
        let mut db = ctx.db();
        if !z.is_empty() {
            db.set(dst, Value::ZSet(z), false);
            ctx.changed(returned as u64);
        } else if db.remove(dst).is_some() {
            ctx.changed(1);
        }
        return Ok(Frame::Integer(returned as i64));
    }
    let proto = ctx.client.proto;
    let extras = usize::from(withdist) + usize::from(withhash) + usize::from(withcoord);
    let reply = found
        .into_iter()
        .map(|f| {
            if extras == 0 {
                return bulk(&f.member);
            }
            let mut item = Vec::with_capacity(extras + 1);
            item.push(bulk(&f.member));
            if withdist {
                item.push(Frame::bulk(distance_text(f.dist / to_meters)));
            }
            if withhash {
                item.push(Frame::Integer(hash_integer(f.score)));
            }
            if withcoord {
                item.push(position(f.lon, f.lat, proto));
            }
            Frame::Array(item)
        })
        .collect();
    Ok(Frame::Array(reply))
}

/// Redis's comparison of two distances (`sort_gp_asc`): greater, equal, else less (so a NaN
/// sorts first).
fn compare_dist(a: f64, b: f64) -> Ordering {
    if a > b {
        Ordering::Greater
    } else if a == b {
        Ordering::Equal
    } else {
        Ordering::Less
    }
}

/// The points of `z` inside `shape`, cell by cell in Redis's order, each cell in score order;
/// with a `limit` (COUNT ... ANY) it stops once that many are found.
fn collect(z: &ZSet, shape: &Shape, limit: usize) -> Vec<Found> {
    let mut out = Vec::new();
    let cells = geohash::search_cells(shape);
    let full = |out: &Vec<Found>| limit != 0 && out.len() >= limit;
    // Redis skips a cell equal to the one read just before it, unless that one was the center.
    let mut last = 0;
    for (i, cell) in cells.iter().enumerate() {
        let Some(cell) = *cell else { continue };
        if last != 0 && cells[last] == Some(cell) {
            continue;
        }
        if full(&out) {
            break;
        }
        let (min, max) = cell.score_range();
        let start = z.count_before(|s, _| s < min);
        for (m, s) in z.range_iter(start, z.len()) {
            if s >= max {
                break;
            }
            let (lon, lat) = geohash::decode_score(s);
            if let Some(dist) = shape.contains(lon, lat) {
                out.push(Found { member: SmallBytes::from_slice(m), score: s, lon, lat, dist });
            }
            if full(&out) {
                break;
            }
        }
        last = i;
    }
    out
}

/// Sorts `v` enough that its first `keep` elements are the smallest, in order: the quicksort of
/// Bentley and McIlroy ("Engineering a Sort Function", 1993: median of three or of nine as pivot,
/// elements equal to the pivot gathered at both ends then swapped to the middle, insertion sort
/// below seven elements) that recurses only into parts overlapping the first `keep` positions.
/// Redis sorts a COUNT-limited search this way (`pqsort`); being unstable, its order of equal
/// distances is only reproduced by doing the same swaps.
fn partial_sort<T>(v: &mut [T], keep: usize, cmp: &dyn Fn(&T, &T) -> Ordering) {
    let mut lo = 0;
    let mut n = v.len();
    loop {
        if n < 7 {
            for m in lo + 1..lo + n {
                let mut l = m;
                while l > lo && cmp(&v[l - 1], &v[l]) == Ordering::Greater {
                    v.swap(l, l - 1);
                    l -= 1;
                }
            }
            return;
        }
        let med3 = |v: &[T], a: usize, b: usize, c: usize| {
            if cmp(&v[a], &v[b]) == Ordering::Less {
                if cmp(&v[b], &v[c]) == Ordering::Less {
                    b
                } else if cmp(&v[a], &v[c]) == Ordering::Less {
                    c
                } else {
                    a
                }
            } else if cmp(&v[b], &v[c]) == Ordering::Greater {
                b
            } else if cmp(&v[a], &v[c]) == Ordering::Less {
                a
            } else {
                c
            }
        };
        let mut pm = lo + n / 2;
        if n > 7 {
            let (mut pl, mut pn) = (lo, lo + n - 1);
            if n > 40 {
                let d = n / 8;
                pl = med3(v, pl, pl + d, pl + 2 * d);
                pm = med3(v, pm - d, pm, pm + d);
                pn = med3(v, pn - 2 * d, pn - d, pn);
            }
            pm = med3(v, pl, pm, pn);
        }
        v.swap(lo, pm);
        // [lo+1, pa): equal to the pivot; [pa, pb): less; (pc, pd]: greater; (pd, end): equal.
        let (mut pa, mut pb) = (lo + 1, lo + 1);
        let (mut pc, mut pd) = (lo + n - 1, lo + n - 1);
        loop {
            while pb <= pc {
                let o = cmp(&v[pb], &v[lo]);
                if o == Ordering::Greater {
                    break;
                }
                if o == Ordering::Equal {
                    v.swap(pa, pb);
                    pa += 1;
                }
                pb += 1;
            }
            while pb <= pc {
                let o = cmp(&v[pc], &v[lo]);
                if o == Ordering::Less {
                    break;
                }
                if o == Ordering::Equal {
                    v.swap(pc, pd);
                    pd -= 1;
                }
                pc -= 1;
            }
            if pb > pc {
                break;
            }
            v.swap(pb, pc);
            pb += 1;
            pc -= 1;
        }
        let end = lo + n;
        let swap_runs = |v: &mut [T], a: usize, b: usize, k: usize| (0..k).for_each(|i| v.swap(a + i, b + i));
        let r = (pa - lo).min(pb - pa);
        swap_runs(v, lo, pb - r, r);
        let r = (pd - pc).min(end - pd - 1);
        swap_runs(v, pb, end - r, r);
        let less = pb - pa;
        if less > 1 && lo < keep {
            partial_sort_from(v, lo, less, keep, cmp);
        }
        let greater = pd - pc;
        if greater > 1 && end - greater < keep {
            lo = end - greater;
            n = greater;
            continue;
        }
        return;
    }
}

/// [`partial_sort`] of `v[lo..lo + n]`, keeping the absolute `keep` bound.
fn partial_sort_from<T>(v: &mut [T], lo: usize, n: usize, keep: usize, cmp: &dyn Fn(&T, &T) -> Ordering) {
    partial_sort(&mut v[lo..lo + n], keep - lo, cmp);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn distances_are_fixed_point_with_four_decimals() {
        assert_eq!(distance_text(0.0), "0.0000");
        assert_eq!(distance_text(166274.15156960033), "166274.1516");
        assert_eq!(distance_text(0.00004), "0.0000");
        assert_eq!(distance_text(0.00005), "0.0000"); // half to even (0.5 -> 0)
        assert_eq!(distance_text(0.00025), "0.0002"); // 2.5 -> 2
        assert_eq!(distance_text(0.00035), "0.0004"); // 3.5 -> 4
        assert_eq!(distance_text(12.3), "12.3000");
    }

    #[test]
    fn coordinates_are_human_long_doubles() {
        let (lon, lat) = geohash::decode_score(3479099956230698.0);
        assert_eq!(coordinate(lon, Protocol::Resp2), Frame::bulk("13.36138933897018433"));
        assert_eq!(coordinate(lat, Protocol::Resp2), Frame::bulk("38.11555639549629859"));
        assert_eq!(coordinate(lat, Protocol::Resp3), Frame::Encoded(Bytes::from(",38.11555639549629859\r\n")));
    }

    #[test]
    fn radius_keys_find_the_last_destination() {
        let a = |s: &str| s.split(' ').map(|w| Bytes::copy_from_slice(w.as_bytes())).collect::<Vec<_>>();
        assert_eq!(radius_keys(&a("georadius k 1 2 3 km store d")), vec![1, 7]);
        assert_eq!(radius_keys(&a("georadius k 1 2 3 km store d storedist e")), vec![1, 9]);
        assert_eq!(radius_keys(&a("georadiusbymember k m 3 km count 2 storedist e")), vec![1, 8]);
        assert_eq!(radius_keys(&a("georadius k 1 2 3 km store")), vec![1]);
    }

    #[test]
    fn partial_sort_orders_the_kept_prefix() {
        let mut rng = 0x2545F4914F6CDD1Du64;
        for len in [0usize, 1, 5, 7, 8, 40, 41, 200] {
            for keep in [1usize, 3, 10, 100] {
                let mut v: Vec<u32> = (0..len)
                    .map(|_| {
                        rng ^= rng << 13;
                        rng ^= rng >> 7;
                        rng ^= rng << 17;
                        (rng % 50) as u32
                    })
                    .collect();
                let mut sorted = v.clone();
                sorted.sort();
                partial_sort(&mut v, keep.min(len), &|a: &u32, b: &u32| a.cmp(b));
                let k = keep.min(len);
                assert_eq!(v[..k], sorted[..k], "len {len} keep {keep}");
            }
        }
    }
}
