//! Geohash arithmetic as Redis 7.0 does it, so that the same coordinates become the same
//! sorted-set scores, the same distances and the same search cells.
//!
//! A position is a pair of cell indexes, one per axis, each `step` bits wide; the hash interleaves
//! them, latitude on the even bits and longitude on the odd ones. Redis stores the 26-step hash
//! (52 bits) as the member's score. Its latitude range is Web Mercator's (±85.05112878), not
//! ±90, so GEOHASH re-encodes decoded positions on the standard ranges before spelling them.
//!
//! Searches (GEOSEARCH, GEORADIUS) cover the query with the cell of the center and its eight
//! neighbours at a step estimated from the radius ([`search_cells`]), read each cell's score
//! interval from the sorted set, and keep the points the exact test accepts ([`Shape::contains`]).
//! The floating-point steps follow Redis's order of operations: a different order would round
//! differently and change which points fall inside.

use std::f64::consts::PI;

/// The finest step: 26 bits per axis, 52 bits in all (what fits a double exactly).
pub const STEP_MAX: u8 = 26;
/// Lowest latitude Redis accepts (Web Mercator's limit).
pub const LAT_MIN: f64 = -85.05112878;
/// Highest latitude Redis accepts.
pub const LAT_MAX: f64 = 85.05112878;
/// Lowest longitude.
pub const LON_MIN: f64 = -180.0;
/// Highest longitude.
pub const LON_MAX: f64 = 180.0;

/// Earth's quadratic mean radius for WGS-84, in meters, as Redis uses it.
const EARTH_RADIUS: f64 = 6372797.560856;
/// The largest Mercator coordinate, the span the step estimate halves down from.
const MERCATOR_MAX: f64 = 20037726.37;
/// Degrees to radians, computed as Redis's `M_PI / 180.0`.
const DEG_TO_RAD: f64 = PI / 180.0;

/// An interval of one coordinate.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Interval {
    /// Lower bound.
    pub min: f64,
    /// Upper bound.
    pub max: f64,
}

/// The coordinate ranges scores are encoded on.
const LON_RANGE: Interval = Interval { min: LON_MIN, max: LON_MAX };
const LAT_RANGE: Interval = Interval { min: LAT_MIN, max: LAT_MAX };

/// A cell: interleaved bits and the number of bits per axis.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Cell {
    /// Latitude index on the even bits, longitude index on the odd bits.
    pub bits: u64,
    /// Bits per axis.
    pub step: u8,
}

/// The rectangle a cell covers.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Area {
    /// Longitudes.
    pub lon: Interval,
    /// Latitudes.
    pub lat: Interval,
}

/// Places the 32 bits of `v` on the even bits of a `u64`.
fn spread(v: u32) -> u64 {
    const STAGES: [(u32, u64); 5] = [
        (16, 0x0000_FFFF_0000_FFFF),
        (8, 0x00FF_00FF_00FF_00FF),
        (4, 0x0F0F_0F0F_0F0F_0F0F),
        (2, 0x3333_3333_3333_3333),
        (1, 0x5555_5555_5555_5555),
    ];
    STAGES.iter().fold(u64::from(v), |x, &(shift, mask)| (x | (x << shift)) & mask)
}

/// Gathers the even bits of `v` into a `u32` (the inverse of [`spread`]).
fn squash(v: u64) -> u32 {
    const STAGES: [(u32, u64); 5] = [
        (1, 0x3333_3333_3333_3333),
        (2, 0x0F0F_0F0F_0F0F_0F0F),
        (4, 0x00FF_00FF_00FF_00FF),
        (8, 0x0000_FFFF_0000_FFFF),
        (16, 0x0000_0000_FFFF_FFFF),
    ];
    STAGES.iter().fold(v & 0x5555_5555_5555_5555, |x, &(shift, mask)| (x | (x >> shift)) & mask) as u32
}

impl Cell {
    /// The latitude index (even bits).
    fn lat_index(self) -> u32 {
        squash(self.bits)
    }
    /// The longitude index (odd bits).
    fn lon_index(self) -> u32 {
        squash(self.bits >> 1)
    }

    /// The hash left-aligned to 52 bits: the smallest score inside the cell.
    pub fn align52(self) -> u64 {
        self.bits << (52 - 2 * u32::from(self.step))
    }

    /// The score interval `[min, max)` of the points inside the cell.
    pub fn score_range(self) -> (f64, f64) {
        let next = Cell { bits: self.bits.wrapping_add(1), step: self.step };
        (self.align52() as f64, next.align52() as f64)
    }

    /// The cell `dlon` columns east and `dlat` rows north, wrapping around both axes. An axis that
    /// does not move keeps its bits as they are.
    fn moved(self, dlon: i8, dlat: i8) -> Cell {
        let width = 1u64 << self.step;
        let shift = |idx: u32, d: i8| ((u64::from(idx) + width).wrapping_add_signed(i64::from(d)) % width) as u32;
        let lon_part =
            if dlon == 0 { self.bits & 0xAAAA_AAAA_AAAA_AAAA } else { spread(shift(self.lon_index(), dlon)) << 1 };
        let lat_part =
            if dlat == 0 { self.bits & 0x5555_5555_5555_5555 } else { spread(shift(self.lat_index(), dlat)) };
        Cell { bits: lon_part | lat_part, step: self.step }
    }

    /// The eight neighbours, in Redis's search order: north, south, east, west, north-east,
    /// north-west, south-east, south-west.
    pub fn neighbours(self) -> [Cell; 8] {
        [
            self.moved(0, 1),
            self.moved(0, -1),
            self.moved(1, 0),
            self.moved(-1, 0),
            self.moved(1, 1),
            self.moved(-1, 1),
            self.moved(1, -1),
            self.moved(-1, -1),
        ]
    }

    /// The rectangle the cell covers on the given ranges.
    fn area_on(self, lon: Interval, lat: Interval) -> Area {
        let cells = (1u64 << self.step) as f64;
        let (ilat, ilon) = (self.lat_index(), self.lon_index());
        let edge = |r: Interval, i: u32| r.min + (f64::from(i) / cells) * (r.max - r.min);
        Area {
            lat: Interval { min: edge(lat, ilat), max: edge(lat, ilat.wrapping_add(1)) },
            lon: Interval { min: edge(lon, ilon), max: edge(lon, ilon.wrapping_add(1)) },
        }
    }

    /// The rectangle the cell covers on the score ranges.
    pub fn area(self) -> Area {
        self.area_on(LON_RANGE, LAT_RANGE)
    }
}

/// The cell of a position at `step` on the given ranges; None outside the ranges Redis accepts.
fn encode_on(lon_r: Interval, lat_r: Interval, lon: f64, lat: f64, step: u8) -> Option<Cell> {
    if !(1..=32).contains(&step) || !(LON_MIN..=LON_MAX).contains(&lon) || !(LAT_MIN..=LAT_MAX).contains(&lat) {
        return None;
    }
    if !(lat_r.min..=lat_r.max).contains(&lat) || !(lon_r.min..=lon_r.max).contains(&lon) {
        return None;
    }
    let cells = (1u64 << step) as f64;
    let lat_off = (lat - lat_r.min) / (lat_r.max - lat_r.min) * cells;
    let lon_off = (lon - lon_r.min) / (lon_r.max - lon_r.min) * cells;
    Some(Cell { bits: spread(lat_off as u32) | (spread(lon_off as u32) << 1), step })
}

/// The cell of a position at `step`; None outside the accepted ranges.
pub fn encode(lon: f64, lat: f64, step: u8) -> Option<Cell> {
    encode_on(LON_RANGE, LAT_RANGE, lon, lat, step)
}

/// The score GEOADD gives a position (None outside the accepted ranges).
pub fn score_of(lon: f64, lat: f64) -> Option<u64> {
    encode(lon, lat, STEP_MAX).map(Cell::align52)
}

/// A score as C's `(uint64_t)` conversion of it turns out on x86-64 (what Redis decodes): values
/// below 2^63 truncate through a signed conversion (negative ones wrap), larger ones through an
/// offset; the out-of-range cases give the conversion's "integer indefinite" value.
fn score_bits(score: f64) -> u64 {
    const TWO_63: f64 = 9_223_372_036_854_775_808.0;
    const INDEFINITE: u64 = 1 << 63;
    let signed = |x: f64| if (-TWO_63..TWO_63).contains(&x) { x as i64 as u64 } else { INDEFINITE };
    if score.is_nan() || score < TWO_63 { signed(score) } else { signed(score - TWO_63) ^ (1 << 63) }
}

/// The position (longitude, latitude) a score stands for: the center of its 52-bit cell, clamped
/// to the accepted ranges.
pub fn decode_score(score: f64) -> (f64, f64) {
    let a = Cell { bits: score_bits(score), step: STEP_MAX }.area();
    let lon = ((a.lon.min + a.lon.max) / 2.0).clamp(LON_MIN, LON_MAX);
    let lat = ((a.lat.min + a.lat.max) / 2.0).clamp(LAT_MIN, LAT_MAX);
    (lon, lat)
}

/// The 11-character standard geohash of a score (GEOHASH): the decoded position re-encoded on
/// ±180/±90; the 11th character stands for bits a 52-bit hash does not have, so it is `0`.
pub fn standard_string(score: f64) -> [u8; 11] {
    const ALPHABET: &[u8; 32] = b"0123456789bcdefghjkmnpqrstuvwxyz";
    let (lon, lat) = decode_score(score);
    let world_lat = Interval { min: -90.0, max: 90.0 };
    let bits = encode_on(LON_RANGE, world_lat, lon, lat, STEP_MAX).map_or(0, |c| c.bits);
    let mut out = [b'0'; 11];
    for (i, c) in out.iter_mut().take(10).enumerate() {
        *c = ALPHABET[((bits >> (47 - 5 * i)) & 0x1f) as usize];
    }
    out
}

fn rad(deg: f64) -> f64 {
    deg * DEG_TO_RAD
}
fn deg(rad: f64) -> f64 {
    rad / DEG_TO_RAD
}

/// The distance in meters between two latitudes on one meridian.
fn lat_distance(lat1: f64, lat2: f64) -> f64 {
    EARTH_RADIUS * (rad(lat2) - rad(lat1)).abs()
}

/// The haversine great-circle distance in meters, with Redis's shortcut for equal longitudes.
pub fn distance(lon1: f64, lat1: f64, lon2: f64, lat2: f64) -> f64 {
    let v = ((rad(lon2) - rad(lon1)) / 2.0).sin();
    if v == 0.0 {
        return lat_distance(lat1, lat2);
    }
    let (lat1r, lat2r) = (rad(lat1), rad(lat2));
    let u = ((lat2r - lat1r) / 2.0).sin();
    let a = u * u + lat1r.cos() * lat2r.cos() * v * v;
    2.0 * EARTH_RADIUS * a.sqrt().asin()
}

/// What a search covers, around its center, in meters once multiplied by `to_meters`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Extent {
    /// BYRADIUS: a radius.
    Radius(f64),
    /// BYBOX: width and height.
    Box {
        /// East-west size.
        width: f64,
        /// North-south size.
        height: f64,
    },
}

/// A search area: its center, its extent in the query's unit and that unit's size in meters.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Shape {
    /// Longitude of the center.
    pub lon: f64,
    /// Latitude of the center.
    pub lat: f64,
    /// The extent, in the query's unit.
    pub extent: Extent,
    /// Meters per unit.
    pub to_meters: f64,
}

impl Shape {
    /// The distance in meters from the center to a point inside the shape; None outside.
    pub fn contains(&self, lon: f64, lat: f64) -> Option<f64> {
        match self.extent {
            Extent::Radius(r) => {
                let d = distance(self.lon, self.lat, lon, lat);
                (d <= r * self.to_meters).then_some(d)
            }
            Extent::Box { width, height } => {
                if lat_distance(lat, self.lat) > height * self.to_meters / 2.0 {
                    return None;
                }
                if distance(lon, lat, self.lon, lat) > width * self.to_meters / 2.0 {
                    return None;
                }
                Some(distance(self.lon, self.lat, lon, lat))
            }
        }
    }

    /// Half sizes (north-south, east-west) in meters.
    fn half_sizes(&self) -> (f64, f64) {
        match self.extent {
            Extent::Radius(r) => (self.to_meters * r, self.to_meters * r),
            Extent::Box { width, height } => (self.to_meters * (height / 2.0), self.to_meters * (width / 2.0)),
        }
    }

    /// The longitude and latitude bounds (min lon, min lat, max lon, max lat) of the shape; the
    /// longitude span is taken on the parallel farther from the equator.
    fn bounds(&self) -> [f64; 4] {
        let (height, width) = self.half_sizes();
        let lat_delta = deg(height / EARTH_RADIUS);
        let lon_delta_top = deg(width / EARTH_RADIUS / rad(self.lat + lat_delta).cos());
        let lon_delta_bottom = deg(width / EARTH_RADIUS / rad(self.lat - lat_delta).cos());
        let lon_delta = if self.lat < 0.0 { lon_delta_bottom } else { lon_delta_top };
        [self.lon - lon_delta, self.lat - lat_delta, self.lon + lon_delta, self.lat + lat_delta]
    }

    /// The distance from the center that the cells must cover, in meters.
    fn reach(&self) -> f64 {
        let r = match self.extent {
            Extent::Radius(r) => r,
            Extent::Box { width, height } => ((width / 2.0) * (width / 2.0) + (height / 2.0) * (height / 2.0)).sqrt(),
        };
        r * self.to_meters
    }
}

/// The step whose cells are about as large as `meters` at latitude `lat` (coarser near the
/// poles), between 1 and 26.
pub fn estimate_step(meters: f64, lat: f64) -> u8 {
    if meters == 0.0 {
        return STEP_MAX;
    }
    let mut m = meters;
    let mut step: i32 = 1;
    while m < MERCATOR_MAX {
        m *= 2.0;
        step += 1;
    }
    step -= 2;
    if !(-66.0..=66.0).contains(&lat) {
        step -= 1;
        if !(-80.0..=80.0).contains(&lat) {
            step -= 1;
        }
    }
    step.clamp(1, i32::from(STEP_MAX)) as u8
}

/// The cells a search reads, in Redis's order: the center's cell, then north, south, east, west,
/// north-east, north-west, south-east, south-west; None for a neighbour that lies wholly beyond
/// the shape's bounds.
pub fn search_cells(shape: &Shape) -> [Option<Cell>; 9] {
    let [min_lon, min_lat, max_lon, max_lat] = shape.bounds();
    let mut step = estimate_step(shape.reach(), shape.lat);
    // The center is within the accepted ranges (checked when parsed, or decoded from a score).
    let at = |step| encode(shape.lon, shape.lat, step).unwrap_or(Cell { bits: 0, step });
    let mut center = at(step);
    let mut around = center.neighbours();
    // Near a cell's edge the estimated step can leave part of the shape outside the 3x3 block.
    let [n, s, e, w] = [around[0].area(), around[1].area(), around[2].area(), around[3].area()];
    let too_fine = n.lat.max < max_lat || s.lat.min > min_lat || e.lon.max < max_lon || w.lon.min > min_lon;
    if step > 1 && too_fine {
        step -= 1;
        center = at(step);
        around = center.neighbours();
    }
    let mut keep = [true; 8];
    if step >= 2 {
        let a = center.area();
        // Indexes into `around`: N S E W NE NW SE SW.
        let mut drop = |which: [usize; 3]| which.iter().for_each(|&i| keep[i] = false);
        if a.lat.min < min_lat {
            drop([1, 7, 6]);
        }
        if a.lat.max > max_lat {
            drop([0, 4, 5]);
        }
        if a.lon.min < min_lon {
            drop([3, 7, 5]);
        }
        if a.lon.max > max_lon {
            drop([2, 6, 4]);
        }
    }
    let mut out = [Some(center); 9];
    for i in 0..8 {
        out[i + 1] = keep[i].then_some(around[i]);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spread_and_squash_are_inverse() {
        for v in [0u32, 1, 2, 0xFFFF_FFFF, 0x0123_4567, 0x8000_0001] {
            assert_eq!(squash(spread(v)), v);
            assert_eq!(spread(v) & 0xAAAA_AAAA_AAAA_AAAA, 0);
        }
        assert_eq!(spread(0b1011), 0b1000101);
    }

    /// Scores Redis 7.0.15 gives (GEOADD then ZSCORE), from its own test suite's places.
    #[test]
    fn scores_match_redis() {
        assert_eq!(score_of(13.361389, 38.115556), Some(3479099956230698));
        assert_eq!(score_of(15.087269, 37.502669), Some(3479447370796909));
        assert_eq!(score_of(-73.9454966, 40.747533), Some(1791875804419201));
        assert_eq!(score_of(0.0, 0.0), Some(3377699720527872));
        assert_eq!(score_of(180.1, 0.0), None);
        assert_eq!(score_of(0.0, 85.06), None);
    }

    #[test]
    fn decode_gives_the_cell_center() {
        let (lon, lat) = decode_score(3479099956230698.0);
        assert_eq!(format!("{lon:.10} {lat:.10}"), "13.3613893390 38.1155563955");
    }

    #[test]
    fn geohash_strings_match_redis() {
        assert_eq!(&standard_string(3479099956230698.0), b"sqc8b49rny0");
        assert_eq!(&standard_string(3479447370796909.0), b"sqdtr74hyu0");
    }

    #[test]
    fn distances_match_redis() {
        let ((lon1, lat1), (lon2, lat2)) = (decode_score(3479099956230698.0), decode_score(3479447370796909.0));
        let d = distance(lon1, lat1, lon2, lat2);
        assert_eq!(format!("{d:.4}"), "166274.1516");
        // Same longitude: the meridian shortcut.
        assert_eq!(distance(10.0, 0.0, 10.0, 1.0), EARTH_RADIUS * rad(1.0));
    }

    #[test]
    fn score_bits_follow_the_c_conversion() {
        assert_eq!(score_bits(5.9), 5);
        assert_eq!(score_bits(-1.5), u64::MAX);
        assert_eq!(score_bits(f64::NEG_INFINITY), 1 << 63);
        assert_eq!(score_bits(1e19), 10_000_000_000_000_000_000);
        assert_eq!(score_bits(1e30), 0);
    }

    #[test]
    fn neighbours_wrap_around_the_antimeridian() {
        let c = encode(179.99, 0.0, 4).unwrap();
        let [_, _, east, west, ..] = c.neighbours();
        assert_eq!(east.lon_index(), 0);
        assert_eq!(west.lon_index(), 14);
        assert_eq!(east.lat_index(), c.lat_index());
        let n = c.moved(0, 1);
        assert_eq!(n.lat_index(), c.lat_index() + 1);
        assert_eq!(n.lon_index(), c.lon_index());
    }

    #[test]
    fn steps_shrink_with_the_radius_and_towards_the_poles() {
        assert_eq!(estimate_step(0.0, 0.0), 26);
        assert_eq!(estimate_step(1000.0, 0.0), 14);
        assert_eq!(estimate_step(1000.0, 70.0), 13);
        assert_eq!(estimate_step(1000.0, -85.0), 12);
        assert_eq!(estimate_step(5e7, 0.0), 1);
    }

    #[test]
    fn far_neighbours_are_left_out() {
        let shape = Shape { lon: 13.36, lat: 38.11, extent: Extent::Radius(1.0), to_meters: 1000.0 };
        let cells = search_cells(&shape);
        assert!(cells[0].is_some());
        assert!(cells.iter().flatten().all(|c| c.step == cells[0].unwrap().step));
    }
}
