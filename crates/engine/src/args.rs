//! Argument parsing with Redis's exact acceptance rules.

/// Redis's `string2ll`: optional '-', no '+', no leading zeros, no spaces, fits in i64. One
/// implementation, `resp`'s, which also reads the lengths of requests.
pub use resp::string2ll as parse_i64_strict;

/// Redis's `string2d`/`getDoubleFromObject`: a whole-string strtod that rejects NaN, leading space,
/// overflow to infinity and underflow to zero. "inf", "+inf", "-inf" are accepted.
pub fn parse_f64(b: &[u8]) -> Option<f64> {
    if b.is_empty() || b[0].is_ascii_whitespace() {
        return None;
    }
    let s = std::str::from_utf8(b).ok()?;
    let lower = s.to_ascii_lowercase();
    let body = lower.trim_start_matches(['+', '-']);
    let v: f64 = if body.starts_with("0x") {
        parse_hex_float(&lower)?
    } else {
        if lower.contains('_') {
            return None;
        }
        s.parse().ok()?
    };
    if v.is_nan() {
        return None;
    }
    let explicit_inf = body == "inf" || body == "infinity";
    if v.is_infinite() && !explicit_inf {
        return None; // ERANGE overflow
    }
    if v == 0.0 && body.bytes().take_while(|c| *c != b'e').any(|c| (b'1'..=b'9').contains(&c)) {
        return None; // ERANGE underflow
    }
    Some(v)
}

/// A minimal strtod hex-float reader ("0x1.8p3"), as glibc accepts them.
fn parse_hex_float(s: &str) -> Option<f64> {
    let (neg, rest) = match s.as_bytes().first()? {
        b'-' => (true, &s[1..]),
        b'+' => (false, &s[1..]),
        _ => (false, s),
    };
    let rest = rest.strip_prefix("0x")?;
    let (mant, exp) = match rest.split_once('p') {
        Some((m, e)) => (m, e.parse::<i32>().ok()?),
        None => (rest, 0),
    };
    let (int, frac) = mant.split_once('.').unwrap_or((mant, ""));
    if int.is_empty() && frac.is_empty() {
        return None;
    }
    let mut v = 0f64;
    for c in int.chars() {
        v = v * 16.0 + c.to_digit(16)? as f64;
    }
    let mut scale = 1.0 / 16.0;
    for c in frac.chars() {
        v += c.to_digit(16)? as f64 * scale;
        scale /= 16.0;
    }
    let v = v * 2f64.powi(exp);
    Some(if neg { -v } else { v })
}

/// Case-insensitive comparison of an argument with an ASCII keyword.
#[inline]
pub fn eq_ic(arg: &[u8], kw: &str) -> bool {
    arg.eq_ignore_ascii_case(kw.as_bytes())
}

/// Quotes bytes the way Redis's `sdscatrepr` does (MONITOR, CLIENT LIST, error messages):
/// `"foo\r\n\x01"`.
pub fn repr(b: &[u8]) -> String {
    let mut out = Vec::with_capacity(b.len() + 2);
    resp::repr(b, &mut out);
    // Every byte outside printable ASCII was escaped: the text is ASCII.
    String::from_utf8_lossy(&out).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strict_integers() {
        assert_eq!(parse_i64_strict(b"9223372036854775807"), Some(i64::MAX));
        assert_eq!(parse_i64_strict(b"-9223372036854775808"), Some(i64::MIN));
        for bad in [&b""[..], b"-", b"+1", b"01", b"-0", b"1.0", b" 1", b"9223372036854775808", b"1a"] {
            assert_eq!(parse_i64_strict(bad), None, "{:?}", String::from_utf8_lossy(bad));
        }
    }

    #[test]
    fn floats() {
        assert_eq!(parse_f64(b"1.5"), Some(1.5));
        assert_eq!(parse_f64(b"+inf"), Some(f64::INFINITY));
        assert_eq!(parse_f64(b"-inf"), Some(f64::NEG_INFINITY));
        assert_eq!(parse_f64(b"0x10"), Some(16.0));
        assert_eq!(parse_f64(b"5."), Some(5.0));
        assert_eq!(parse_f64(b"0"), Some(0.0));
        assert_eq!(parse_f64(b"0e5"), Some(0.0));
        for bad in [&b""[..], b" 1", b"1 ", b"nan", b"1e400", b"1e-400", b"abc", b"1_0"] {
            assert_eq!(parse_f64(bad), None, "{:?}", String::from_utf8_lossy(bad));
        }
    }
}
