//! Redis-style glob matching (`KEYS`, `SCAN MATCH`, `CONFIG GET`): `*`, `?`, `[abc]`, `[^a-z]`,
//! and `\x` escapes. Matching is iterative with single-star backtracking, so patterns such as
//! `*a*a*a*a*b` run in O(pattern x subject) instead of exploding.

/// True if `subject` matches `pattern`.
pub fn matches(pattern: &[u8], subject: &[u8], nocase: bool) -> bool {
    let eq = |a: u8, b: u8| if nocase { a.eq_ignore_ascii_case(&b) } else { a == b };
    let (mut p, mut s) = (0usize, 0usize);
    let mut star: Option<(usize, usize)> = None; // (pattern pos after '*', subject pos)
    while s < subject.len() {
        if p < pattern.len() {
            match pattern[p] {
                b'*' => {
                    while p < pattern.len() && pattern[p] == b'*' {
                        p += 1;
                    }
                    if p == pattern.len() {
                        return true;
                    }
                    star = Some((p, s));
                    continue;
                }
                b'?' => {
                    p += 1;
                    s += 1;
                    continue;
                }
                b'[' => {
                    if let Some((true, next)) = class(pattern, p, subject[s], nocase) {
                        p = next;
                        s += 1;
                        continue;
                    }
                }
                b'\\' if p + 1 < pattern.len() => {
                    if eq(pattern[p + 1], subject[s]) {
                        p += 2;
                        s += 1;
                        continue;
                    }
                }
                c => {
                    if eq(c, subject[s]) {
                        p += 1;
                        s += 1;
                        continue;
                    }
                }
            }
        }
        match star {
            Some((sp, ss)) => {
                p = sp;
                s = ss + 1;
                star = Some((sp, ss + 1));
            }
            None => return false,
        }
    }
    pattern[p..].iter().all(|&c| c == b'*')
}

/// Matches one character against the class starting at `pattern[p] == '['`. Returns (matched, position
/// after the class). An unterminated class extends to the end of the pattern, as in Redis.
fn class(pattern: &[u8], p: usize, c: u8, nocase: bool) -> Option<(bool, usize)> {
    let mut i = p + 1;
    let not = pattern.get(i) == Some(&b'^');
    if not {
        i += 1;
    }
    let lc = |x: u8| if nocase { x.to_ascii_lowercase() } else { x };
    let c = lc(c);
    let mut hit = false;
    loop {
        match pattern.get(i) {
            None => break,
            Some(b']') => {
                i += 1;
                break;
            }
            Some(b'\\') if i + 1 < pattern.len() => {
                if lc(pattern[i + 1]) == c {
                    hit = true;
                }
                i += 2;
            }
            Some(&a) if pattern.get(i + 1) == Some(&b'-') && i + 2 < pattern.len() && pattern[i + 2] != b']' => {
                let (mut lo, mut hi) = (lc(a), lc(pattern[i + 2]));
                if lo > hi {
                    std::mem::swap(&mut lo, &mut hi);
                }
                if c >= lo && c <= hi {
                    hit = true;
                }
                i += 3;
            }
            Some(&a) => {
                if lc(a) == c {
                    hit = true;
                }
                i += 1;
            }
        }
    }
    Some((hit != not, i))
}

#[cfg(test)]
mod tests {
    use super::matches;

    #[test]
    fn cases() {
        let m = |p: &str, s: &str| matches(p.as_bytes(), s.as_bytes(), false);
        assert!(m("*", ""));
        assert!(m("foo*", "foobar"));
        assert!(!m("foo*", "fo"));
        assert!(m("h?llo", "hello"));
        assert!(m("h[ae]llo", "hallo"));
        assert!(!m("h[^e]llo", "hello"));
        assert!(m("h[a-b]llo", "hbllo"));
        assert!(m("h[b-a]llo", "hbllo"));
        assert!(m("a\\*b", "a*b"));
        assert!(!m("a\\*b", "axb"));
        assert!(m("*a*b*", "xxaxxbxx"));
        assert!(matches(b"FOO*", b"foobar", true));
        let long = "a".repeat(50);
        assert!(!m("*a*a*a*a*a*a*a*a*a*a*a*a*b", &long));
    }
}
