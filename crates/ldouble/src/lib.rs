//! Software emulation of the x87 80-bit extended precision format, i.e. C
//! `long double` on x86_64 Linux, as used by Redis `INCRBYFLOAT` and
//! `HINCRBYFLOAT`.
//!
//! Redis parses both operands with `strtold`, adds them in `long double` and
//! prints the sum with `snprintf("%.17Lf")`, trimming trailing zeros. Doing the
//! same in `f64` gives visibly different replies (`1 + 1.1` prints as
//! `2.10000000000000009` instead of `2.1`), so this crate reproduces the x87
//! arithmetic bit for bit.
//!
//! # The format
//!
//! A value has a sign bit, a 15-bit biased exponent `exp` (bias 16383) and a
//! 64-bit significand `mant` whose top bit is the *explicit* integer bit:
//!
//! * `exp == 0`: zero (`mant == 0`) or subnormal, value `mant * 2^-16445`;
//! * `1 <= exp <= 0x7ffe`: normal (integer bit set), value
//!   `mant * 2^(exp - 16383 - 63)`;
//! * `exp == 0x7fff`: infinity (`mant == 1 << 63`) or NaN (anything else).
//!
//! So the precision is 64 bits, the largest finite value is about
//! `1.19e4932` and the smallest subnormal about `3.65e-4951`. All arithmetic
//! here rounds to nearest, ties to even, like the x87 FPU in its default
//! (extended precision) control mode.
//!
//! Decimal conversions are exact: parsing computes the correctly rounded
//! value with big integers (like glibc `strtold`), and printing expands the
//! binary value exactly before rounding at the 17th fractional digit (like
//! glibc `printf("%.17Lf")`).
//!
//! # Example
//!
//! ```
//! use ldouble::LongDouble;
//!
//! // SET k 1; INCRBYFLOAT k 1.1
//! let value = LongDouble::parse(b"1").unwrap();
//! let incr = LongDouble::parse(b"1.1").unwrap();
//! assert_eq!(value.add(incr).to_human_string(), "2.1");
//! assert_eq!(LongDouble::parse(b"1e5000"), None); // overflows
//! ```

#![forbid(unsafe_code)]
#![warn(missing_docs)]

use num_bigint::BigUint;

/// Exponent bias of the x87 format.
const EXP_BIAS: i64 = 16383;
/// Biased exponent of infinities and NaNs.
const EXP_SPECIAL: u16 = 0x7fff;
/// The explicit integer bit of a normal significand.
const INT_BIT: u64 = 1 << 63;
/// Weight exponent of the significand's last bit for subnormals and for
/// `exp == 1`: a subnormal is `mant * 2^Q_MIN`.
const Q_MIN: i64 = 1 - EXP_BIAS - 63;
/// Redis's `MAX_LONG_DOUBLE_CHARS`: inputs this long or longer are rejected.
const MAX_LONG_DOUBLE_CHARS: usize = 5 * 1024;
/// `10^17`, the scale of `%.17Lf`.
const TEN_POW_17: u128 = 100_000_000_000_000_000;

/// An x87 80-bit extended precision value (C `long double` on x86_64 Linux).
///
/// Values built by this crate are always canonical (normals carry the
/// integer bit, there is one NaN encoding), so the derived `PartialEq` is
/// bitwise equality: `-0 != 0` and a NaN equals itself.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct LongDouble {
    /// Sign bit (true for negative values, including `-0`).
    neg: bool,
    /// 15-bit biased exponent.
    exp: u16,
    /// 64-bit significand with explicit integer bit.
    mant: u64,
}

impl LongDouble {
    /// Positive zero.
    pub const ZERO: LongDouble = LongDouble::zero(false);

    /// The NaN produced by invalid operations (the x87 "real indefinite",
    /// which glibc prints as `-nan`).
    const NAN: LongDouble = LongDouble { neg: true, exp: EXP_SPECIAL, mant: 0xC000_0000_0000_0000 };

    const fn zero(neg: bool) -> LongDouble {
        LongDouble { neg, exp: 0, mant: 0 }
    }

    const fn infinity(neg: bool) -> LongDouble {
        LongDouble { neg, exp: EXP_SPECIAL, mant: INT_BIT }
    }

    /// Parses like Redis's `string2ld`: glibc `strtold` semantics (decimal with
    /// optional sign, fraction and exponent; hex floats such as `0x1.8p3`;
    /// `inf`/`infinity` in any case), correctly rounded to a 64-bit
    /// significand (round-half-even).
    ///
    /// Returns `None` unless the whole input is consumed, and for: empty input
    /// or input of 5120 bytes or more, leading whitespace, NaN, a finite
    /// literal that overflows to infinity, and a nonzero literal that
    /// underflows to zero. An explicit `inf` is accepted.
    pub fn parse(s: &[u8]) -> Option<LongDouble> {
        if s.is_empty() || s.len() >= MAX_LONG_DOUBLE_CHARS {
            return None;
        }
        let (neg, body) = match s[0] {
            b'-' => (true, &s[1..]),
            b'+' => (false, &s[1..]),
            _ => (false, s),
        };
        if body.eq_ignore_ascii_case(b"inf") || body.eq_ignore_ascii_case(b"infinity") {
            return Some(LongDouble::infinity(neg));
        }
        match body {
            [b'0', b'x' | b'X', rest @ ..] => parse_hex(neg, rest),
            _ => parse_decimal(neg, body),
        }
    }

    /// Converts an integer exactly (every `i64` fits in 64 bits).
    pub fn from_i64(v: i64) -> LongDouble {
        round_to_ld(v < 0, u128::from(v.unsigned_abs()), 0, false)
    }

    /// Converts an `f64` exactly (every `f64` value, including subnormals,
    /// infinities and signed zeros, is representable; NaNs become NaN).
    pub fn from_f64(v: f64) -> LongDouble {
        let bits = v.to_bits();
        let neg = bits >> 63 != 0;
        let biased = ((bits >> 52) & 0x7ff) as i64;
        let frac = bits & ((1 << 52) - 1);
        match biased {
            0x7ff if frac == 0 => LongDouble::infinity(neg),
            0x7ff => LongDouble::NAN,
            0 => round_to_ld(neg, u128::from(frac), -1074, false),
            _ => round_to_ld(neg, u128::from(frac | 1 << 52), biased - 1075, false),
        }
    }

    /// Converts to the nearest `f64` (round-half-even, overflowing to
    /// infinity and underflowing through subnormals to signed zero).
    pub fn to_f64(self) -> f64 {
        let sign = if self.neg { 1u64 << 63 } else { 0 };
        if self.is_nan() {
            return f64::NAN;
        }
        if self.is_infinite() {
            return f64::from_bits(sign | 0x7ff0_0000_0000_0000);
        }
        let (mant, q) = self.decode();
        let (m, q) = round_bits(u128::from(mant), q, false, 53, -1074);
        // `m < 2^53`, so the casts below are lossless.
        let bits = if m >> 52 == 0 {
            m as u64 // subnormal or zero: q == -1074
        } else if q + 1075 >= 0x7ff {
            0x7ff0_0000_0000_0000
        } else {
            ((q + 1075) as u64) << 52 | (m as u64 & ((1 << 52) - 1))
        };
        f64::from_bits(sign | bits)
    }

    /// IEEE addition rounded to nearest-even at 64-bit significand
    /// precision, with the x87 exponent range (overflow gives ±infinity,
    /// tiny results are subnormal). `inf + -inf` and NaN operands give NaN;
    /// an exact zero sum is `+0` unless both operands are `-0`.
    ///
    /// Also available as the `+` operator.
    #[allow(clippy::should_implement_trait)] // it is implemented, see below
    pub fn add(self, other: LongDouble) -> LongDouble {
        if self.is_nan() || other.is_nan() {
            return LongDouble::NAN;
        }
        match (self.is_infinite(), other.is_infinite()) {
            (true, true) if self.neg != other.neg => return LongDouble::NAN,
            (true, _) => return self,
            (false, true) => return other,
            (false, false) => {}
        }
        let (ma, qa) = self.decode();
        let (mb, qb) = other.decode();
        if ma == 0 && mb == 0 {
            return LongDouble::zero(self.neg && other.neg);
        }
        // Let `a` be the operand with the larger weight exponent.
        let ((a_neg, ma, qa), (b_neg, mb, qb)) = if qa >= qb {
            ((self.neg, ma, qa), (other.neg, mb, qb))
        } else {
            ((other.neg, mb, qb), (self.neg, ma, qa))
        };
        let d = qa - qb;
        // Keep at most 64 bits of alignment so everything fits in a u128. If
        // `b` is further down, `a` is normal and the result's rounding point
        // is at least 62 bits above `b`'s new last bit, so jamming the
        // shifted-out bits into that last bit ("sticky") rounds identically.
        let (shift_a, mb, qb) = if d > 64 {
            let drop = d - 64;
            let kept = if drop >= 64 { 0 } else { mb >> drop };
            let lost = drop >= 64 || mb & ((1u64 << drop) - 1) != 0;
            (64, kept | u64::from(lost && mb != 0), qa - 64)
        } else {
            (d, mb, qb)
        };
        let a = u128::from(ma) << shift_a;
        let b = u128::from(mb);
        let (neg, sum) = if a_neg == b_neg {
            (a_neg, a + b) // a < 2^128 - 2^64 and b < 2^64: no overflow
        } else if a >= b {
            (a_neg, a - b)
        } else {
            (b_neg, b - a)
        };
        if sum == 0 {
            return LongDouble::ZERO;
        }
        round_to_ld(neg, sum, qb, false)
    }

    /// True for zeros, subnormals and normals (not infinity or NaN).
    pub fn is_finite(self) -> bool {
        self.exp != EXP_SPECIAL
    }

    /// True for NaN.
    pub fn is_nan(self) -> bool {
        self.exp == EXP_SPECIAL && self.mant != INT_BIT
    }

    /// True for positive or negative infinity.
    pub fn is_infinite(self) -> bool {
        self.exp == EXP_SPECIAL && self.mant == INT_BIT
    }

    /// Formats like Redis's `ld2string(..., LD_STR_HUMAN)`: `inf`/`-inf` for
    /// infinities; otherwise exactly `printf("%.17Lf")` (the exact decimal
    /// expansion rounded half-even at the 17th fractional digit, as glibc
    /// does), then trailing zeros after the `.` removed, a trailing `.`
    /// removed, and `-0` turned into `0`. NaN prints as glibc does (`nan` or
    /// `-nan`).
    pub fn to_human_string(self) -> String {
        let sign = if self.neg { "-" } else { "" };
        if self.is_nan() {
            return format!("{sign}nan");
        }
        if self.is_infinite() {
            return format!("{sign}inf");
        }
        let (mant, q) = self.decode();
        let out = if q >= 0 {
            // An integer: no fractional digits survive the trimming.
            format!("{sign}{}", BigUint::from(mant) << q.unsigned_abs())
        } else {
            // value * 10^17 = mant * 10^17 / 2^s, with mant * 10^17 < 2^121.
            let s = q.unsigned_abs();
            let n = u128::from(mant) * TEN_POW_17;
            let r = if s >= 128 {
                0 // n < 2^121 <= half of 2^s: rounds to zero
            } else {
                let r = n >> s;
                let rem = n & ((1u128 << s) - 1);
                let half = 1u128 << (s - 1);
                if rem > half || (rem == half && r & 1 == 1) { r + 1 } else { r }
            };
            let (int, frac) = (r / TEN_POW_17, r % TEN_POW_17);
            if frac == 0 {
                format!("{sign}{int}")
            } else {
                let digits = format!("{frac:017}");
                format!("{sign}{int}.{}", digits.trim_end_matches('0'))
            }
        };
        if out == "-0" { "0".to_owned() } else { out }
    }

    /// Significand and weight exponent of a finite value: it equals
    /// `mant * 2^q`.
    fn decode(self) -> (u64, i64) {
        let q = if self.exp == 0 { Q_MIN } else { i64::from(self.exp) + Q_MIN - 1 };
        (self.mant, q)
    }
}

impl std::ops::Add for LongDouble {
    type Output = LongDouble;

    /// Same as [`LongDouble::add`].
    fn add(self, other: LongDouble) -> LongDouble {
        LongDouble::add(self, other)
    }
}

/// Rounds `m * 2^e` to `prec` significant bits with weight exponent at least
/// `q_min`, half to even. If `sticky` is set the exact value is slightly
/// above `m * 2^e` (by less than `2^e`); callers then guarantee `m` has at
/// least `prec + 2` bits, so the rounding point lies above `e`.
///
/// Returns `(mant, q)` with `mant < 2^prec`, `q >= q_min`, and the rounded
/// value equal to `mant * 2^q`; `mant < 2^(prec - 1)` only when `q == q_min`.
fn round_bits(m: u128, e: i64, sticky: bool, prec: u32, q_min: i64) -> (u128, i64) {
    if m == 0 {
        return (0, q_min.max(e));
    }
    let n = i64::from(128 - m.leading_zeros());
    let q = (e + n - i64::from(prec)).max(q_min);
    if q <= e {
        // Exact: `n + (e - q) <= prec`.
        return (m << (e - q), q);
    }
    let shift = q - e;
    let (mut mant, half, rest) = if shift > 128 {
        (0, false, true)
    } else if shift == 128 {
        (0, m >> 127 == 1, m & (u128::MAX >> 1) != 0)
    } else {
        let below = m & ((1u128 << (shift - 1)) - 1);
        (m >> shift, (m >> (shift - 1)) & 1 == 1, below != 0)
    };
    if half && (rest || sticky || mant & 1 == 1) {
        mant += 1;
        if mant >> prec != 0 {
            return (mant >> 1, q + 1);
        }
    }
    (mant, q)
}

/// Rounds `±m * 2^e` (see [`round_bits`]) into a `LongDouble`.
fn round_to_ld(neg: bool, m: u128, e: i64, sticky: bool) -> LongDouble {
    let (mant, q) = round_bits(m, e, sticky, 64, Q_MIN);
    // `mant < 2^64`, so the cast is lossless.
    let mant = mant as u64;
    if mant == 0 {
        LongDouble::zero(neg)
    } else if mant & INT_BIT == 0 {
        LongDouble { neg, exp: 0, mant } // subnormal: q == Q_MIN
    } else {
        let exp = q - Q_MIN + 1;
        if exp >= i64::from(EXP_SPECIAL) {
            LongDouble::infinity(neg)
        } else {
            LongDouble { neg, exp: exp as u16, mant }
        }
    }
}

/// Rounds `±m * 2^e` for a big `m`, first keeping its top 100 bits plus a
/// sticky bit (enough for one correct rounding to 64 bits).
fn round_big_to_ld(neg: bool, m: &BigUint, e: i64, sticky: bool) -> LongDouble {
    let n = m.bits();
    if n <= 100 {
        let small = u128::try_from(m).unwrap_or(u128::MAX);
        return round_to_ld(neg, small, e, sticky);
    }
    let drop = n - 100;
    let lost = m.trailing_zeros().is_some_and(|tz| tz < drop);
    let top = u128::try_from(m >> drop).unwrap_or(u128::MAX);
    round_to_ld(neg, top, e + drop as i64, sticky || lost)
}

/// Splits a `digits[.digits]` mantissa off `s`. Returns the digits without
/// the dot, how many followed the dot, and the unparsed rest; `None` if there
/// is no digit at all.
fn scan_mantissa(s: &[u8], is_digit: fn(&u8) -> bool) -> Option<(Vec<u8>, usize, &[u8])> {
    let int_len = s.iter().take_while(|c| is_digit(c)).count();
    let mut digits = s[..int_len].to_vec();
    let mut rest = &s[int_len..];
    let mut frac_len = 0;
    if let [b'.', after @ ..] = rest {
        frac_len = after.iter().take_while(|c| is_digit(c)).count();
        digits.extend_from_slice(&after[..frac_len]);
        rest = &after[frac_len..];
    }
    if digits.is_empty() {
        return None;
    }
    Some((digits, frac_len, rest))
}

/// Parses an optional exponent suffix (`e`/`E` or `p`/`P` as `marker`,
/// optional sign, at least one decimal digit) that must end the input.
/// Saturates far beyond any meaningful magnitude.
fn parse_exponent(s: &[u8], marker: u8) -> Option<i64> {
    let Some((first, rest)) = s.split_first() else {
        return Some(0);
    };
    if first.to_ascii_lowercase() != marker {
        return None;
    }
    let (neg, digits) = match rest {
        [b'-', d @ ..] => (true, d),
        [b'+', d @ ..] => (false, d),
        d => (false, d),
    };
    if digits.is_empty() || !digits.iter().all(u8::is_ascii_digit) {
        return None;
    }
    let magnitude = digits.iter().fold(0i64, |acc, d| (acc * 10 + i64::from(d - b'0')).min(1_000_000_000));
    Some(if neg { -magnitude } else { magnitude })
}

/// Applies string2ld's ERANGE rule to the rounding of a finite, nonzero
/// literal: overflow to infinity or underflow to zero is rejected.
fn range_checked(v: LongDouble) -> Option<LongDouble> {
    if v.is_infinite() || v.mant == 0 { None } else { Some(v) }
}

/// Parses an unsigned decimal literal, correctly rounded.
fn parse_decimal(neg: bool, s: &[u8]) -> Option<LongDouble> {
    let (digits, frac_len, rest) = scan_mantissa(s, u8::is_ascii_digit)?;
    let exp = parse_exponent(rest, b'e')?;
    let digits = match digits.iter().position(|&d| d != b'0') {
        Some(start) => &digits[start..],
        None => return Some(LongDouble::zero(neg)),
    };
    let trailing = digits.iter().rev().take_while(|&&d| d == b'0').count();
    let digits = &digits[..digits.len() - trailing];
    // value = D * 10^x with D an integer of `digits.len()` digits, so
    // 10^(x + len - 1) <= value < 10^(x + len).
    let x = exp - frac_len as i64 + trailing as i64;
    let top = x + digits.len() as i64;
    if !(-5000..=5000).contains(&top) {
        return None; // >= 1e5000 overflows, < 1e-5000 rounds to zero
    }
    let d = BigUint::parse_bytes(digits, 10)?;
    let ten = BigUint::from(10u32);
    if x >= 0 {
        return range_checked(round_big_to_ld(neg, &(d * ten.pow(x as u32)), 0, false));
    }
    // D / 10^-x: scale D by 2^k so the quotient has at least 66 bits.
    let p = ten.pow(x.unsigned_abs() as u32);
    let k = (p.bits() + 66).saturating_sub(d.bits());
    let num = d << k;
    let quot = &num / &p;
    let inexact = &quot * &p != num;
    range_checked(round_big_to_ld(neg, &quot, -(k as i64), inexact))
}

/// Parses the part of a hex float after `0x`, correctly rounded.
fn parse_hex(neg: bool, s: &[u8]) -> Option<LongDouble> {
    let (digits, frac_len, rest) = scan_mantissa(s, u8::is_ascii_hexdigit)?;
    let exp = parse_exponent(rest, b'p')?;
    let m = BigUint::parse_bytes(&digits, 16)?;
    if m.bits() == 0 {
        return Some(LongDouble::zero(neg));
    }
    // value = m * 2^e with 2^(e + bits - 1) <= value < 2^(e + bits).
    let e = exp - 4 * frac_len as i64;
    let top = e + m.bits() as i64;
    if !(Q_MIN - 2..=16400).contains(&top) {
        return None; // overflows, or below half the smallest subnormal
    }
    range_checked(round_big_to_ld(neg, &m, e, false))
}

#[cfg(test)]
mod tests;
