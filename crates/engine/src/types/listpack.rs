//! Redis's listpack (`listpack.c`), the byte layout Redis keeps small aggregates and stream nodes
//! in: a 4-byte total size and a 2-byte element count (both little-endian), the elements, and 0xFF.
//! Each element is an encoding byte (integers of 7, 13, 16, 24, 32 or 64 bits; strings with a 6,
//! 12 or 32-bit length), its data, and its "back-length" (the size of encoding and data in 1 to 5
//! bytes, read right to left) so that it can be walked backwards.
//!
//! Positions are byte offsets of an element's first byte. The functions that walk a listpack trust
//! it (Latch built it, or [`offsets`] checked it first).

/// Header size: total bytes (4) and element count (2).
pub const HEADER: usize = 6;
/// The end marker.
const EOF: u8 = 0xFF;
/// The element count a header holds when it no longer counts (`LP_HDR_NUMELE_UNKNOWN`).
const COUNT_UNKNOWN: u16 = u16::MAX;

/// An element: an integer, or a string.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Ele<'a> {
    /// An integer-encoded element.
    Int(i64),
    /// A string element.
    Str(&'a [u8]),
}

impl Ele<'_> {
    /// The element as Redis hands it out: strings as they are, integers in decimal.
    pub fn to_bytes(self) -> crate::primitives::SmallBytes {
        match self {
            Ele::Int(i) => crate::primitives::SmallBytes::from_slice(itoa::Buffer::new().format(i).as_bytes()),
            Ele::Str(s) => crate::primitives::SmallBytes::from_slice(s),
        }
    }

    /// True if the element equals `b` as Redis compares them (`lpCompare`: an integer equals its
    /// decimal text).
    pub fn eq_bytes(self, b: &[u8]) -> bool {
        match self {
            Ele::Str(s) => s == b,
            Ele::Int(i) => itoa::Buffer::new().format(i).as_bytes() == b,
        }
    }

    /// The element as an integer (`lpGetIntegerIfValid`): a string element must be a canonical one.
    pub fn as_int(self) -> Option<i64> {
        match self {
            Ele::Int(i) => Some(i),
            Ele::Str(s) => crate::args::parse_i64_strict(s),
        }
    }
}

/// An empty listpack in an allocation of `capacity` bytes (`lpNew`: at least the empty form's 7).
pub fn new(capacity: usize) -> Vec<u8> {
    let mut lp = Vec::with_capacity(alloc_class(capacity.max(HEADER + 1)));
    lp.extend_from_slice(&((HEADER + 1) as u32).to_le_bytes());
    lp.extend_from_slice(&0u16.to_le_bytes());
    lp.push(EOF);
    lp
}

/// The bytes jemalloc hands out for a request of `n` (its size classes on x86-64 and aarch64: 8,
/// then steps of 16 up to 128, then four classes per doubling), which is what listpack.c reads as
/// a listpack's room (`lp_malloc_size`) and what Redis's `MEMORY USAGE` counts for one.
pub fn alloc_class(n: usize) -> usize {
    if n <= 8 {
        return 8;
    }
    if n <= 128 {
        return n.next_multiple_of(16);
    }
    // Four classes between 2^k and 2^(k+1): steps of 2^(k-2).
    let k = usize::BITS - 1 - (n - 1).leading_zeros();
    n.next_multiple_of(1 << (k - 2))
}

/// Makes room in `lp` for `new_len` bytes as listpack.c does (`lpInsert`): its allocation grows
/// to the size class of the new length only when the room (the `Vec`'s capacity, kept at a class
/// size) is exceeded.
fn grow_to(lp: &mut Vec<u8>, new_len: usize) {
    if new_len > lp.capacity() {
        lp.reserve_exact(alloc_class(new_len) - lp.len());
    }
}

/// Gives back the room past the size class of `lp`'s length (`lpShrinkToFit`, and `lpInsert` when
/// a listpack got shorter).
pub fn shrink_to_fit(lp: &mut Vec<u8>) {
    lp.shrink_to(alloc_class(lp.len()));
}

/// An element's back-length (`lpEncodeBacklen`): `size` in 1 to 5 bytes, 7 bits each; every byte
/// but the first (the most significant group) has the high bit set.
pub fn backlen(size: u64) -> ([u8; 5], usize) {
    let n = match size {
        0..=127 => 1,
        128..16383 => 2,
        16383..2_097_151 => 3,
        2_097_151..268_435_455 => 4,
        _ => 5,
    };
    let mut b = [0u8; 5];
    for (i, slot) in b[..n].iter_mut().enumerate() {
        let group = ((size >> (7 * (n - 1 - i))) & 127) as u8;
        *slot = if i == 0 { group } else { group | 128 };
    }
    (b, n)
}

/// Integer `v`'s encoding in its smallest width, without its back-length: the bytes and how
/// many of them are used.
fn int_encoding(v: i64) -> ([u8; 9], usize) {
    let mut b = [0u8; 9];
    let n = if (0..=127).contains(&v) {
        b[0] = v as u8;
        1
    } else if (-4096..=4095).contains(&v) {
        let u = (v as u16) & 0x1FFF;
        b[..2].copy_from_slice(&[0xC0 | (u >> 8) as u8, u as u8]);
        2
    } else if let Ok(x) = i16::try_from(v) {
        b[0] = 0xF1;
        b[1..3].copy_from_slice(&x.to_le_bytes());
        3
    } else if (-8_388_608..=8_388_607).contains(&v) {
        b[0] = 0xF2;
        b[1..4].copy_from_slice(&(v as i32).to_le_bytes()[..3]);
        4
    } else if let Ok(x) = i32::try_from(v) {
        b[0] = 0xF3;
        b[1..5].copy_from_slice(&x.to_le_bytes());
        5
    } else {
        b[0] = 0xF4;
        b[1..9].copy_from_slice(&v.to_le_bytes());
        9
    };
    (b, n)
}

/// The encoding byte(s) of a string of `n` bytes (a 6, 12 or 32-bit length), and how many.
fn str_header(n: usize) -> ([u8; 5], usize) {
    let mut b = [0u8; 5];
    let used = if n < 64 {
        b[0] = 0x80 | n as u8;
        1
    } else if n < 4096 {
        b[..2].copy_from_slice(&[0xE0 | (n >> 8) as u8, n as u8]);
        2
    } else {
        b[0] = 0xF0;
        b[1..5].copy_from_slice(&(n as u32).to_le_bytes());
        5
    };
    (b, used)
}

/// An element as [`encode`] chooses to store it.
fn classify(s: &[u8]) -> Ele<'_> {
    let int = if s.len() <= 20 { crate::args::parse_i64_strict(s) } else { None };
    int.map_or(Ele::Str(s), Ele::Int)
}

/// Bytes of an element's encoding with its back-length.
fn ele_size(e: Ele<'_>) -> usize {
    let size = match e {
        Ele::Int(v) => int_encoding(v).1,
        Ele::Str(s) => str_header(s.len()).1 + s.len(),
    };
    size + backlen(size as u64).1
}

/// Appends the encoding of integer `v` in its smallest width, with its back-length.
pub fn encode_int(out: &mut Vec<u8>, v: i64) {
    let (b, n) = int_encoding(v);
    out.extend_from_slice(&b[..n]);
    let (b, m) = backlen(n as u64);
    out.extend_from_slice(&b[..m]);
}

/// Appends the encoding of `s` as Redis's `lpAppend` chooses it: a canonical integer of at most 20
/// characters as an integer, anything else as a string.
pub fn encode(out: &mut Vec<u8>, s: &[u8]) {
    encode_ele(out, classify(s))
}

fn encode_ele(out: &mut Vec<u8>, e: Ele<'_>) {
    let s = match e {
        Ele::Int(v) => return encode_int(out, v),
        Ele::Str(s) => s,
    };
    let (h, used) = str_header(s.len());
    out.extend_from_slice(&h[..used]);
    out.extend_from_slice(s);
    let (b, n) = backlen((used + s.len()) as u64);
    out.extend_from_slice(&b[..n]);
}

fn set_total(lp: &mut [u8]) {
    let total = lp.len() as u32;
    lp[0..4].copy_from_slice(&total.to_le_bytes());
}

fn add_count(lp: &mut [u8], by: u16) {
    let n = u16::from_le_bytes([lp[4], lp[5]]);
    if n != COUNT_UNKNOWN {
        let m = n.saturating_add(by);
        lp[4..6].copy_from_slice(&m.to_le_bytes());
    }
}

/// Appends the string `s` (see [`encode`]).
pub fn append(lp: &mut Vec<u8>, s: &[u8]) {
    let e = classify(s);
    grow_to(lp, lp.len() + ele_size(e));
    lp.pop();
    encode_ele(lp, e);
    lp.push(EOF);
    add_count(lp, 1);
    set_total(lp);
}

/// Appends the integer `v`.
pub fn append_int(lp: &mut Vec<u8>, v: i64) {
    grow_to(lp, lp.len() + ele_size(Ele::Int(v)));
    lp.pop();
    encode_int(lp, v);
    lp.push(EOF);
    add_count(lp, 1);
    set_total(lp);
}

/// The size of the element at `p` without its back-length: (header, data).
fn element_size(lp: &[u8], p: usize) -> (usize, usize) {
    let e = lp[p];
    if e & 0x80 == 0 {
        (1, 0)
    } else if e & 0xC0 == 0x80 {
        (1, usize::from(e & 0x3F))
    } else if e & 0xE0 == 0xC0 {
        (2, 0)
    } else if e & 0xF0 == 0xE0 {
        (2, (usize::from(e & 0x0F) << 8) | usize::from(lp[p + 1]))
    } else {
        match e {
            0xF0 => (5, u32::from_le_bytes([lp[p + 1], lp[p + 2], lp[p + 3], lp[p + 4]]) as usize),
            0xF1 => (3, 0),
            0xF2 => (4, 0),
            0xF3 => (5, 0),
            _ => (9, 0),
        }
    }
}

/// The whole size of the element at `p`, back-length included.
fn full_size(lp: &[u8], p: usize) -> usize {
    let (h, d) = element_size(lp, p);
    h + d + backlen((h + d) as u64).1
}

/// Redis's `lpRepr`, the text DEBUG LISTPACK prints: the header, then each element's address,
/// offset, sizes, bytes and value (its first 40 bytes).
pub fn repr(lp: &[u8]) -> String {
    use std::fmt::Write;
    let mut out = format!("{{total bytes {}}} {{num entries {}}}\n", lp.len(), count(lp));
    let mut at = first(lp);
    let mut index = 0;
    while let Some(p) = at {
        let (h, d) = element_size(lp, p);
        let encoded = h + d;
        let back = backlen(encoded as u64).1;
        // Redis counts an integer's type byte as its header, a string's length bytes too.
        let is_str = lp[p] & 0xC0 == 0x80 || lp[p] & 0xF0 == 0xE0 || lp[p] == 0xF0;
        let hdr = if is_str { h } else { 1 };
        let _ = write!(
            out,
            "{{\n\taddr: 0x{:08x},\n\tindex: {index:2},\n\toffset: {p},\n\thdr+entrylen+backlen: {:2},\n\thdrlen: {hdr:3},\n\tbacklen: {back:2},\n\tpayload: {}\n\tbytes: ",
            lp.as_ptr() as usize + p,
            encoded + back,
            encoded - hdr
        );
        for b in &lp[p..p + encoded + back] {
            let _ = write!(out, "{b:02x}|");
        }
        let value = get(lp, p).to_bytes();
        let shown = &value[..value.len().min(40)];
        let _ = write!(
            out,
            "\n\t[str]{}{}\n}}\n",
            String::from_utf8_lossy(shown),
            if value.len() > 40 { "..." } else { "" }
        );
        index += 1;
        at = next(lp, p);
    }
    out.push_str("{end}\n\n");
    out
}

/// The first element, None when empty.
pub fn first(lp: &[u8]) -> Option<usize> {
    (lp[HEADER] != EOF).then_some(HEADER)
}

/// The element after `p`, None at the end.
pub fn next(lp: &[u8], p: usize) -> Option<usize> {
    let q = p + full_size(lp, p);
    (lp[q] != EOF).then_some(q)
}

/// The element before `p`, None at the start.
pub fn prev(lp: &[u8], p: usize) -> Option<usize> {
    if p <= HEADER {
        return None;
    }
    // The back-length ends right before `p`: read it right to left.
    let mut size: usize = 0;
    let mut shift = 0;
    let mut q = p - 1;
    loop {
        let b = lp[q];
        size |= usize::from(b & 127) << shift;
        shift += 7;
        if b & 128 == 0 || q == 0 {
            break;
        }
        q -= 1;
    }
    let bl = backlen(size as u64).1;
    Some(p - bl - size)
}

/// The last element, None when empty.
pub fn last(lp: &[u8]) -> Option<usize> {
    prev(lp, lp.len() - 1)
}

/// The element at `p`.
pub fn get(lp: &[u8], p: usize) -> Ele<'_> {
    let e = lp[p];
    let (h, d) = element_size(lp, p);
    if e & 0x80 == 0 {
        Ele::Int(i64::from(e & 0x7F))
    } else if e & 0xC0 == 0x80 || e & 0xF0 == 0xE0 || e == 0xF0 {
        Ele::Str(&lp[p + h..p + h + d])
    } else if e & 0xE0 == 0xC0 {
        let v = (u16::from(e & 0x1F) << 8) | u16::from(lp[p + 1]);
        Ele::Int(if v >= 1 << 12 { i64::from(v) - (1 << 13) } else { i64::from(v) })
    } else {
        let b = &lp[p + 1..];
        Ele::Int(match e {
            0xF1 => i64::from(i16::from_le_bytes([b[0], b[1]])),
            0xF2 => i64::from(i32::from_le_bytes([0, b[0], b[1], b[2]]) >> 8),
            0xF3 => i64::from(i32::from_le_bytes([b[0], b[1], b[2], b[3]])),
            _ => i64::from_le_bytes([b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7]]),
        })
    }
}

/// The element at `p` as an integer (0 if it is not one: never in a listpack Latch built).
pub fn get_int(lp: &[u8], p: usize) -> i64 {
    get(lp, p).as_int().unwrap_or(0)
}

/// Replaces the element at `p` with integer `v` (`lpReplaceInteger`); the elements after it move
/// when the width changes. Positions after `p` shift by the returned difference.
pub fn replace_int(lp: &mut Vec<u8>, p: usize, v: i64) -> isize {
    let old = full_size(lp, p);
    let mut enc = Vec::with_capacity(11);
    encode_int(&mut enc, v);
    let new_len = lp.len() + enc.len() - old;
    let diff = enc.len() as isize - old as isize;
    grow_to(lp, new_len);
    lp.splice(p..p + old, enc);
    if diff < 0 {
        // A listpack that got shorter is reallocated to its new length.
        shrink_to_fit(lp);
    }
    set_total(lp);
    diff
}

/// Number of elements.
pub fn count(lp: &[u8]) -> usize {
    let n = u16::from_le_bytes([lp[4], lp[5]]);
    if n != COUNT_UNKNOWN {
        return usize::from(n);
    }
    let mut c = 0;
    let mut p = first(lp);
    while let Some(q) = p {
        c += 1;
        p = next(lp, q);
    }
    c
}

/// Redis's shallow listpack check (`lpValidateIntegrity` without deep checks): the header can be
/// read, its size is the blob's, and the blob ends with the end marker. The elements are not looked at.
pub fn header_ok(b: &[u8]) -> bool {
    b.len() > HEADER && u32::from_le_bytes([b[0], b[1], b[2], b[3]]) as usize == b.len() && b[b.len() - 1] == EOF
}

/// True when the first element (if any) lies within the blob with a matching back-length: what
/// Redis's `lpFirst` asserts (`lpAssertValidEntry`). Needs [`header_ok`].
pub fn first_ok(b: &[u8]) -> bool {
    b.get(HEADER) == Some(&EOF) || entry_end(b, HEADER).is_some()
}

/// The end of the element at `p` (where the next one starts), None when it does not fit in `b`
/// (before the end marker), has an unknown encoding or a wrong back-length.
fn entry_end(b: &[u8], p: usize) -> Option<usize> {
    let e = *b.get(p)?;
    let (h, d): (usize, usize) = match e {
        _ if e & 0x80 == 0 => (1, 0),
        _ if e & 0xC0 == 0x80 => (1, usize::from(e & 0x3F)),
        _ if e & 0xE0 == 0xC0 => (2, 0),
        _ if e & 0xF0 == 0xE0 => (2, (usize::from(e & 0x0F) << 8) | usize::from(*b.get(p + 1)?)),
        0xF0 => {
            let l = b.get(p + 1..p + 5)?;
            (5, u32::from_le_bytes([l[0], l[1], l[2], l[3]]) as usize)
        }
        0xF1 => (3, 0),
        0xF2 => (4, 0),
        0xF3 => (5, 0),
        0xF4 => (9, 0),
        _ => return None,
    };
    let size = h.checked_add(d)?;
    let (want, n) = backlen(size as u64);
    let end = p.checked_add(size)?.checked_add(n)?;
    if end >= b.len() || b[p + size..end] != want[..n] {
        return None;
    }
    Some(end)
}

/// Checks an untrusted listpack (`lpValidateIntegrity` with deep checks): the header's size, every
/// element within bounds with a matching back-length, the end marker last, and the count. Returns
/// the positions of its elements.
pub fn offsets(b: &[u8]) -> Option<Vec<usize>> {
    if b.len() < HEADER + 1 || u32::from_le_bytes([b[0], b[1], b[2], b[3]]) as usize != b.len() {
        return None;
    }
    let mut out = Vec::new();
    let mut p = HEADER;
    while *b.get(p)? != EOF {
        out.push(p);
        p = entry_end(b, p)?;
    }
    let count = u16::from_le_bytes([b[4], b[5]]);
    if p != b.len() - 1 || (count != COUNT_UNKNOWN && usize::from(count) != out.len()) {
        return None;
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn append_walk_and_replace() {
        let mut lp = new(0);
        let items: Vec<Vec<u8>> = vec![
            b"0".to_vec(),
            b"127".to_vec(),
            b"-4096".to_vec(),
            b"30000".to_vec(),
            b"8000000".to_vec(),
            b"2000000000".to_vec(),
            b"9000000000000".to_vec(),
            b"hello".to_vec(),
            vec![b'x'; 100],
            vec![b'y'; 5000],
            b"-0".to_vec(),
        ];
        for i in &items {
            append(&mut lp, i);
        }
        let offs = offsets(&lp).expect("valid");
        assert_eq!(offs.len(), items.len());
        for (p, want) in offs.iter().zip(&items) {
            assert!(get(&lp, *p).eq_bytes(want));
            assert_eq!(&get(&lp, *p).to_bytes()[..], &want[..]);
        }
        // Forward and backward walks agree.
        let mut fwd = Vec::new();
        let mut p = first(&lp);
        while let Some(q) = p {
            fwd.push(q);
            p = next(&lp, q);
        }
        assert_eq!(fwd, offs);
        let mut back = Vec::new();
        let mut p = last(&lp);
        while let Some(q) = p {
            back.push(q);
            p = prev(&lp, q);
        }
        back.reverse();
        assert_eq!(back, offs);
        // A wider integer moves what follows.
        let d = replace_int(&mut lp, offs[1], 100_000);
        assert_eq!(d, 3);
        let offs2 = offsets(&lp).expect("still valid");
        assert_eq!(get(&lp, offs2[1]), Ele::Int(100_000));
        assert!(get(&lp, offs2[7]).eq_bytes(b"hello"));
        assert_eq!(count(&lp), items.len());
        // Corruption is refused.
        let mut bad = lp.clone();
        bad[HEADER + 1] ^= 0x55;
        let _ = offsets(&bad);
        bad.truncate(bad.len() - 2);
        assert!(offsets(&bad).is_none());
    }

    #[test]
    fn allocation_classes_are_jemallocs() {
        let classes: Vec<usize> = [0, 1, 8, 9, 16, 17, 100, 128, 129, 160, 161, 256, 257, 4096, 4097, 5121, 20000]
            .iter()
            .map(|&n| alloc_class(n))
            .collect();
        assert_eq!(classes, [8, 8, 8, 16, 16, 32, 112, 128, 160, 160, 192, 256, 320, 4096, 5120, 6144, 20480]);
    }

    #[test]
    fn the_room_grows_and_shrinks_as_listpack_c_makes_it() {
        let mut lp = new(100);
        assert_eq!(lp.capacity(), 112);
        // Every element's size is known before it is written: the room grows only when exceeded,
        // and then to the class of the new length.
        let mut grew = 0;
        for i in 0..40 {
            let room = lp.capacity();
            if i % 3 == 0 {
                append_int(&mut lp, i64::from(i) * 1_000_003);
            } else {
                append(&mut lp, &vec![b'z'; i as usize]);
            }
            let want = if lp.len() <= room { room } else { alloc_class(lp.len()) };
            assert_eq!(lp.capacity(), want, "after element {i}, {} bytes", lp.len());
            grew += usize::from(want != room);
        }
        assert!(grew > 3, "{grew}");
        // A narrower integer shortens it and gives the room back down to its new length's class.
        let p = first(&lp).expect("elements");
        assert_eq!(replace_int(&mut lp, p, 1), 0);
        let p = next(&lp, p).expect("a second element");
        // The third element is the string "zz": an integer is shorter.
        let third = next(&lp, p).expect("a third element");
        let d = replace_int(&mut lp, third, 7);
        assert!(d < 0, "{d}");
        assert_eq!(lp.capacity(), alloc_class(lp.len()));
        shrink_to_fit(&mut lp);
        assert_eq!(lp.capacity(), alloc_class(lp.len()));
        assert!(offsets(&lp).is_some());
    }
}
