//! Known vectors come from redis-server 7.0.15 (`PFADD`, then `GET`, `PFDEBUG DECODE`, `PFCOUNT`).

use super::*;
use rand::{Rng, SeedableRng};
use sha1::{Digest, Sha1};

const MAX: usize = 3000;

fn hll_of<'a>(elements: impl IntoIterator<Item = &'a [u8]>, max_sparse: usize) -> (Vec<u8>, usize) {
    let mut s = new_sparse();
    let mut updated = 0;
    for e in elements {
        updated += add(&mut s, e, max_sparse).unwrap() as usize;
    }
    if updated > 0 {
        invalidate(&mut s);
    }
    (s, updated)
}

fn sha1_hex(b: &[u8]) -> String {
    Sha1::digest(b).iter().map(|x| format!("{x:02x}")).collect()
}

fn numbered(prefix: &str, n: usize) -> Vec<Vec<u8>> {
    (0..n).map(|i| format!("{prefix}{i}").into_bytes()).collect()
}

#[test]
fn empty_string_hashes_to_redis_register() {
    assert_eq!(pattern(b""), (5938, 2));
    let (s, _) = hll_of([&b""[..]], MAX);
    assert_eq!(decode(&s), "Z:5938 v:2,1 Z:10445");
}

#[test]
fn three_elements_match_redis_bytes() {
    let (mut s, updated) = hll_of([&b"a"[..], b"b", b"c"], MAX);
    assert_eq!(updated, 3);
    assert_eq!(s, b"HYLL\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x80`\xf3\x80P\xb1\x84K\xfb\x80BZ");
    assert_eq!(decode(&s), "Z:8436 v:1,1 Z:4274 v:2,1 Z:3068 v:1,1 Z:603");
    assert_eq!(cached(&s), None);
    let card = count(&s).unwrap();
    assert_eq!(card, 3);
    set_cached(&mut s, card);
    assert_eq!(s, b"HYLL\x01\x00\x00\x00\x03\x00\x00\x00\x00\x00\x00\x00`\xf3\x80P\xb1\x84K\xfb\x80BZ");
    // The same elements again change nothing.
    assert!(![&b"a"[..], b"b", b"c"].iter().any(|e| would_change(&s, e)));
}

#[test]
fn new_hll_is_one_xzero() {
    let s = new_sparse();
    assert_eq!(s, b"HYLL\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x7f\xff");
    assert_eq!(decode(&s), "Z:16384");
    assert_eq!(count(&s), Ok(0));
    assert_eq!(check(&s), Ok(Encoding::Sparse));
}

#[test]
fn sparse_300_elements_match_redis() {
    let els = numbered("el:", 300);
    let (mut s, _) = hll_of(els.iter().map(|e| &e[..]), MAX);
    assert_eq!(s.len(), 692);
    assert_eq!(sha1_hex(&s), "fb6c86fe158ae875f9e5f1407cb0b7711135c431");
    let card = count(&s).unwrap();
    assert_eq!(card, 303);
    set_cached(&mut s, card);
    assert_eq!(sha1_hex(&s), "df321a85046418fa1038e8f4fe0d1e86a04c6ddc");
}

#[test]
fn promoted_5000_elements_match_redis() {
    let els = numbered("el:", 5000);
    let (mut s, _) = hll_of(els.iter().map(|e| &e[..]), MAX);
    assert_eq!(check(&s), Ok(Encoding::Dense));
    assert_eq!(sha1_hex(&s), "4d0a18c3baa905e00c7b2a7dec642fe09c0d227e");
    let card = count(&s).unwrap();
    assert_eq!(card, 4959);
    set_cached(&mut s, card);
    assert_eq!(sha1_hex(&s), "06d0c8b66536365e146953882b85815e63bb59f1");
}

#[test]
fn sparse_and_dense_agree() {
    let mut rng = rand::rngs::StdRng::seed_from_u64(1);
    for n in [0usize, 1, 7, 50, 99, 400, 2000] {
        let els: Vec<Vec<u8>> = (0..n).map(|_| rng.random::<u64>().to_string().into_bytes()).collect();
        let (sparse, _) = hll_of(els.iter().map(|e| &e[..]), usize::MAX);
        let mut dense = new_sparse();
        to_dense(&mut dense).unwrap();
        for e in &els {
            add(&mut dense, e, MAX).unwrap();
        }
        assert_eq!(check(&sparse), Ok(Encoding::Sparse));
        assert_eq!(count(&sparse), count(&dense), "n = {n}");
        let mut promoted = sparse.clone();
        assert_eq!(to_dense(&mut promoted), Ok(true));
        assert_eq!(dense_registers(&promoted), dense_registers(&dense));
        let mut u = Union::default();
        u.merge(&sparse).unwrap();
        assert_eq!(u.count(), count(&dense).unwrap());
    }
}

#[test]
fn union_merges_sparse_and_dense() {
    let a = numbered("a", 100);
    let b = numbered("b", 3000);
    let (sa, _) = hll_of(a.iter().map(|e| &e[..]), MAX);
    let (sb, _) = hll_of(b.iter().map(|e| &e[..]), MAX);
    assert_eq!(check(&sb), Ok(Encoding::Dense));
    let (both, _) = hll_of(a.iter().chain(&b).map(|e| &e[..]), MAX);
    let mut u = Union::default();
    assert_eq!(u.merge(&sa), Ok(Encoding::Sparse));
    assert_eq!(u.merge(&sb), Ok(Encoding::Dense));
    assert_eq!(u.count(), count(&both).unwrap());
    let mut dest = new_sparse();
    u.store_into(&mut dest, MAX).unwrap();
    assert_eq!(dense_registers(&dest), dense_registers(&both));
}

#[test]
fn dense_registers_keep_their_values() {
    let mut rng = rand::rngs::StdRng::seed_from_u64(2);
    assert_eq!(selftest(&mut rng, 3, 100_000, MAX), Ok(()));
}

#[test]
fn header_checks() {
    assert_eq!(check(b"HYLL"), Err(NotHll));
    assert_eq!(check(b"HYLx\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x7f\xff"), Err(NotHll));
    assert_eq!(check(b"HYLL\x02\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x7f\xff"), Err(NotHll));
    // Dense must be exactly 12304 bytes.
    assert_eq!(check(b"HYLL\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x7f\xff"), Err(NotHll));
    let mut d = new_sparse();
    to_dense(&mut d).unwrap();
    assert_eq!(d.len(), DENSE_SIZE);
    assert_eq!(check(&d), Ok(Encoding::Dense));
}

#[test]
fn corrupted_sparse_is_detected() {
    let (mut s, _) = hll_of([&b"a"[..], b"b", b"c"], MAX);
    s.extend_from_slice(b"hello");
    assert_eq!(count(&s), Err(Corrupt));
    assert!(to_dense(&mut s.clone()).is_err());
    assert!(Union::default().merge(&s).is_err());
    // A header with no code at all.
    let mut bare = new_sparse();
    bare.truncate(HDR);
    assert!(would_change(&bare, b"x"));
    assert_eq!(add(&mut bare, b"x", MAX), Err(Corrupt));
    // An XZERO cut in half reads its missing byte as 0.
    let mut cut = new_sparse();
    cut.truncate(HDR + 1);
    assert_eq!(decode(&cut), "Z:16129");
}

#[test]
fn sparse_grows_to_its_limit_then_promotes() {
    let els = numbered("x", 2000);
    let mut s = new_sparse();
    for e in &els {
        add(&mut s, e, 300).unwrap();
        if s[4] == 1 {
            assert!(s.len() <= 300);
        }
    }
    assert_eq!(check(&s), Ok(Encoding::Dense));
}

#[test]
fn opcodes_past_the_last_register_are_corrupt() {
    // What redis-server 7.0.15 (with the CVE-2025-32023 fix) answers for a VAL after full coverage.
    let mut s = new_sparse();
    s.push(0x80);
    assert_eq!(Union::default().merge(&s), Err(Corrupt));
    assert_eq!(to_dense(&mut s.clone()), Err(Corrupt));
    assert_eq!(count(&s), Err(Corrupt));
}
