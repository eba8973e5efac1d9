//! `printf("%.*g")`-compatible double formatting.
//!
//! Redis formats doubles in replies with `%.17g`. Clients (and the Redis test
//! suite) compare these strings literally, so the output must be identical to
//! glibc's. Rust's `{:.*e}` formatting produces exactly rounded digits (like
//! glibc, which is exact as well), so we only need to re-layout those digits
//! following the C standard's rules for `%g`.

use std::fmt::Write as _;

/// Formats a double the way Redis 7.0 does in replies: `%.17g` (C printf), with "inf" / "-inf",
/// and "nan" for NaN. E.g. 1.5 -> "1.5", 0.1 -> "0.10000000000000001", 1e20 -> "1e+20", 100 -> "100",
/// 3.0e-5 -> "3.0000000000000001e-05". Byte-identical to glibc's printf("%.17g")
/// (except that a NaN with the sign bit set is printed as "nan", not "-nan").
pub fn format_double(d: f64, out: &mut Vec<u8>) {
    format_double_g(d, 17, out)
}

/// Precision above which `%g` output no longer changes: a double has at most
/// 767 significant decimal digits and its decimal exponent is below 309, so
/// with a larger precision every extra digit is a zero (stripped by `%g`) and
/// the fixed-notation branch is always taken. Capping keeps absurd
/// precisions from allocating gigabytes while producing identical output.
const MAX_USEFUL_PREC: usize = 1000;

/// Same as [`format_double`] but with a caller-chosen number of significant digits
/// (`"%.{prec}g"`; like C, a precision of 0 is treated as 1).
pub fn format_double_g(d: f64, prec: usize, out: &mut Vec<u8>) {
    if d.is_nan() {
        out.extend_from_slice(b"nan");
        return;
    }
    if d.is_infinite() {
        out.extend_from_slice(if d > 0.0 { b"inf" } else { b"-inf" });
        return;
    }
    let p = prec.clamp(1, MAX_USEFUL_PREC);
    if d.is_sign_negative() {
        // Includes -0.0, which glibc prints as "-0".
        out.push(b'-');
    }
    let a = d.abs();

    // Scientific form with p significant digits, e.g. "1.2340000000000000e-5".
    // A stack buffer avoids a heap allocation for the common %.17g case.
    let mut stack = StackBuf::new();
    let heap;
    let sci: &[u8] = if write!(stack, "{:.*e}", p - 1, a).is_ok() {
        stack.as_bytes()
    } else {
        heap = format!("{:.*e}", p - 1, a);
        heap.as_bytes()
    };
    layout_g(sci, p, out);
}

/// Re-lays out Rust's `d.ddde<x>` output as C's `%g` would print it.
fn layout_g(sci: &[u8], p: usize, out: &mut Vec<u8>) {
    let epos = sci.iter().position(|&b| b == b'e').unwrap_or(sci.len());
    let mantissa = &sci[..epos];
    let exp: i64 =
        std::str::from_utf8(sci.get(epos + 1..).unwrap_or(b"0")).ok().and_then(|s| s.parse().ok()).unwrap_or(0);

    // The p significant digits, without the decimal point.
    let mut digits: Vec<u8> = Vec::with_capacity(p);
    digits.extend(mantissa.iter().filter(|b| b.is_ascii_digit()));

    // C: "Let P equal the precision ... if P > X >= -4, the conversion is
    // with style f and precision P - 1 - X, otherwise style e and precision
    // P - 1". Trailing zeros are then removed, and the point if nothing
    // follows it.
    if exp < -4 || exp >= p as i64 {
        let (first, rest) = digits.split_first().map_or((b'0', &[][..]), |(f, r)| (*f, r));
        let rest = strip_trailing_zeros(rest);
        out.push(first);
        if !rest.is_empty() {
            out.push(b'.');
            out.extend_from_slice(rest);
        }
        out.push(b'e');
        out.push(if exp < 0 { b'-' } else { b'+' });
        let ae = exp.unsigned_abs();
        if ae < 10 {
            // C always prints at least two exponent digits.
            out.push(b'0');
        }
        let mut ib = itoa::Buffer::new();
        out.extend_from_slice(ib.format(ae).as_bytes());
    } else if exp >= 0 {
        let int_len = (exp as usize + 1).min(digits.len());
        out.extend_from_slice(&digits[..int_len]);
        let frac = strip_trailing_zeros(&digits[int_len..]);
        if !frac.is_empty() {
            out.push(b'.');
            out.extend_from_slice(frac);
        }
    } else {
        // -4 <= exp <= -1: "0.000ddd".
        let frac = strip_trailing_zeros(&digits);
        out.push(b'0');
        if !frac.is_empty() {
            out.push(b'.');
            for _ in 0..(-exp - 1) {
                out.push(b'0');
            }
            out.extend_from_slice(frac);
        }
    }
}

fn strip_trailing_zeros(s: &[u8]) -> &[u8] {
    let end = s.iter().rposition(|&b| b != b'0').map_or(0, |i| i + 1);
    &s[..end]
}

/// Fixed-capacity `fmt::Write` sink; reports an error instead of growing so
/// the caller can fall back to a heap `String` for huge precisions.
struct StackBuf {
    buf: [u8; 64],
    len: usize,
}

impl StackBuf {
    fn new() -> Self {
        StackBuf { buf: [0; 64], len: 0 }
    }

    fn as_bytes(&self) -> &[u8] {
        &self.buf[..self.len]
    }
}

impl std::fmt::Write for StackBuf {
    fn write_str(&mut self, s: &str) -> std::fmt::Result {
        let end = self.len + s.len();
        let dst = self.buf.get_mut(self.len..end).ok_or(std::fmt::Error)?;
        dst.copy_from_slice(s.as_bytes());
        self.len = end;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn g17(d: f64) -> String {
        let mut v = Vec::new();
        format_double(d, &mut v);
        String::from_utf8(v).unwrap()
    }

    fn g(d: f64, p: usize) -> String {
        let mut v = Vec::new();
        format_double_g(d, p, &mut v);
        String::from_utf8(v).unwrap()
    }

    // Expected values produced with python3 `'%.17g' % x` (C double printf).
    #[test]
    fn matches_printf_17g() {
        let cases: &[(f64, &str)] = &[
            (0.0, "0"),
            (-0.0, "-0"),
            (1.0, "1"),
            (-1.0, "-1"),
            (1.5, "1.5"),
            (100.0, "100"),
            (0.1, "0.10000000000000001"),
            (0.2, "0.20000000000000001"),
            (0.3, "0.29999999999999999"),
            (1.1, "1.1000000000000001"),
            (3.25, "3.25"),
            (2.675, "2.6749999999999998"),
            (1e20, "1e+20"),
            (1e16, "10000000000000000"),
            (1e17, "1e+17"),
            (123456789012345678.0, "1.2345678901234568e+17"),
            (12345678901234567.0, "12345678901234568"),
            (3.0e-5, "3.0000000000000001e-05"),
            (1e-4, "0.0001"),
            (1.5e-4, "0.00014999999999999999"),
            (1e-5, "1.0000000000000001e-05"),
            (1e-300, "1e-300"),
            (1e300, "1.0000000000000001e+300"),
            (f64::MAX, "1.7976931348623157e+308"),
            (f64::MIN_POSITIVE, "2.2250738585072014e-308"),
            (5e-324, "4.9406564584124654e-324"),
            (-2.5, "-2.5"),
            (9007199254740993.0, "9007199254740992"),
            (0.5, "0.5"),
            (2.0f64.powi(60), "1.152921504606847e+18"),
            (1.0 / 3.0, "0.33333333333333331"),
            (2.0 / 3.0, "0.66666666666666663"),
            (99999999999999999.0, "1e+17"),
            (f64::INFINITY, "inf"),
            (f64::NEG_INFINITY, "-inf"),
            (f64::NAN, "nan"),
            (-f64::NAN, "nan"),
        ];
        for &(d, want) in cases {
            assert_eq!(g17(d), want, "formatting {d:e}");
        }
    }

    #[test]
    fn matches_printf_other_precisions() {
        let cases: &[(f64, usize, &str)] = &[
            (2.5, 0, "2"),
            (2.5, 1, "2"),
            (3.5, 1, "4"),
            (0.25, 1, "0.2"),
            (9.9996, 3, "10"),
            (9.9996, 4, "10"),
            (123456.0, 6, "123456"),
            (1234567.0, 6, "1.23457e+06"),
            (0.0001234, 6, "0.0001234"),
            (0.00001234, 6, "1.234e-05"),
            (1e100, 6, "1e+100"),
            (0.1, 1, "0.1"),
            (0.1, 60, "0.1000000000000000055511151231257827021181583404541015625"),
            (1e22, 30, "10000000000000000000000"),
            (0.1, usize::MAX, "0.1000000000000000055511151231257827021181583404541015625"),
            (1.5, 2, "1.5"),
            (15.0, 1, "2e+01"),
        ];
        for &(d, p, want) in cases {
            assert_eq!(g(d, p), want, "formatting {d:e} with %.{p}g");
        }
    }
}
