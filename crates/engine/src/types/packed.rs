//! The byte vocabulary of the packed small forms (hashes, sets and sorted sets below their size
//! limits, as Redis keeps them in listpacks and intsets): one exact-size heap block per value, a
//! count byte first, then elements as LEB128 lengths and bytes. Each type lays its elements out
//! with these helpers; none of them allocates per element.

/// Appends `n` as LEB128.
pub fn put_varint(out: &mut Vec<u8>, mut n: u64) {
    while n >= 0x80 {
        out.push(n as u8 | 0x80);
        n >>= 7;
    }
    out.push(n as u8);
}

/// Bytes of `n` as LEB128.
pub fn varint_size(n: u64) -> usize {
    (u64::BITS - (n | 1).leading_zeros()).div_ceil(7) as usize
}

/// Reads a LEB128 number at `*at`, moving `*at` past it. The block is one this module's writers
/// made, so it is well formed.
#[inline]
pub fn read_varint(buf: &[u8], at: &mut usize) -> u64 {
    let (mut n, mut shift) = (0u64, 0);
    loop {
        let b = buf[*at];
        *at += 1;
        n |= u64::from(b & 0x7f) << shift;
        if b < 0x80 {
            return n;
        }
        shift += 7;
    }
}

/// Bytes one length-prefixed element takes.
pub fn bytes_size(b: &[u8]) -> usize {
    varint_size(b.len() as u64) + b.len()
}

/// Appends a length-prefixed element.
pub fn put_bytes(out: &mut Vec<u8>, b: &[u8]) {
    put_varint(out, b.len() as u64);
    out.extend_from_slice(b);
}

/// Reads a length-prefixed element at `*at`, moving `*at` past it.
#[inline]
pub fn read_bytes<'a>(buf: &'a [u8], at: &mut usize) -> &'a [u8] {
    let n = read_varint(buf, at) as usize;
    let b = &buf[*at..*at + n];
    *at += n;
    b
}

/// The top bit of the count byte: a mark a type may keep on its block (sets, hashes and sorted
/// sets: that Redis would hold the value in its large encoding). Counts stay below it: the small
/// forms hold at most 127 elements.
const MARK: u8 = 0x80;

/// A type's indexed form (the form past its packed one) with the bit its packed block keeps as
/// the mark ([`marked`]), so the bit survives the switch between the forms.
#[derive(Clone, Debug, Default)]
pub struct Indexed<T> {
    /// The indexed form itself.
    pub inner: T,
    /// The type's bit (sets, hashes and sorted sets: Redis would hold the value in its large
    /// encoding).
    pub converted: bool,
}

impl<T> std::ops::Deref for Indexed<T> {
    type Target = T;
    fn deref(&self) -> &T {
        &self.inner
    }
}

impl<T> std::ops::DerefMut for Indexed<T> {
    fn deref_mut(&mut self) -> &mut T {
        &mut self.inner
    }
}

/// A value's two forms: its packed block, and past that its indexed form. The block's mark and the
/// indexed form's `converted` are one bit (for sets, hashes and sorted sets: that Redis would hold
/// the value in its large encoding), which the switch from one form to the other carries over.
#[derive(Clone, Debug)]
pub enum Forms<T> {
    /// The packed form: empty (no allocation) for an empty value.
    Small(Box<[u8]>),
    /// The indexed form.
    Large(Box<Indexed<T>>),
}

impl<T> Forms<T> {
    /// The bit, from whichever form holds it.
    pub fn converted(&self) -> bool {
        match self {
            Forms::Small(b) => marked(b),
            Forms::Large(x) => x.converted,
        }
    }

    /// Sets or clears the bit (an empty packed block cannot hold it: see [`set_mark`]).
    pub fn set_converted(&mut self, on: bool) {
        match self {
            Forms::Small(b) => set_mark(b, on),
            Forms::Large(x) => x.converted = on,
        }
    }
}

/// The element count of a block (0 for the empty block, which has no allocation).
#[inline]
pub fn count(buf: &[u8]) -> usize {
    buf.first().map_or(0, |&n| usize::from(n & !MARK))
}

/// True when the block carries the mark ([`set_mark`]); the empty block never does.
#[inline]
pub fn marked(buf: &[u8]) -> bool {
    buf.first().is_some_and(|&n| n & MARK != 0)
}

/// Marks a non-empty block, or takes its mark away; the empty block, which has no byte to hold
/// it, stays unmarked.
pub fn set_mark(b: &mut [u8], on: bool) {
    if let Some(n) = b.first_mut() {
        *n = if on { *n | MARK } else { *n & !MARK };
    }
}

/// A block of `count` elements: the count byte, then `parts` concatenated; no allocation when
/// `count` is 0. `count` is below the mark bit (the small forms stay below 128 elements).
pub fn block(count: usize, parts: &[&[u8]]) -> Box<[u8]> {
    if count == 0 {
        return Box::default();
    }
    debug_assert!(count < usize::from(MARK));
    let mut v = Vec::with_capacity(1 + parts.iter().map(|p| p.len()).sum::<usize>());
    v.push(count as u8);
    for p in parts {
        v.extend_from_slice(p);
    }
    v.into_boxed_slice()
}

/// [`block`], keeping the mark of `old`, the block it replaces.
pub fn reblock(old: &[u8], count: usize, parts: &[&[u8]]) -> Box<[u8]> {
    let mut b = block(count, parts);
    set_mark(&mut b, marked(old));
    b
}

/// Appends `element` (already encoded) to the block in `b`, growing it by exactly its size; the
/// mark stays.
pub fn append(b: &mut Box<[u8]>, element: &[u8]) {
    let mut v = std::mem::take(b).into_vec();
    if v.is_empty() {
        v.push(0);
    }
    v.reserve_exact(element.len());
    debug_assert!(count(&v) + 1 < usize::from(MARK));
    v[0] += 1;
    v.extend_from_slice(element);
    *b = v.into_boxed_slice();
}

/// The entries of a block, front to back, each decoded by `read` (a type's layout of one entry:
/// a member, a field and its value, a score and its member), with the byte range of each for the
/// edits.
#[derive(Clone)]
pub struct Entries<'a, F> {
    buf: &'a [u8],
    at: usize,
    left: usize,
    read: F,
}

impl<'a, T, F: Fn(&'a [u8], &mut usize) -> T> Entries<'a, F> {
    /// The entries of block `buf`, read with `read`.
    pub fn new(buf: &'a [u8], read: F) -> Self {
        Entries { buf, at: 1, left: count(buf), read }
    }

    /// The next entry and the byte range it occupies.
    pub fn next_ranged(&mut self) -> Option<(T, std::ops::Range<usize>)> {
        if self.left == 0 {
            return None;
        }
        self.left -= 1;
        let start = self.at;
        let e = (self.read)(self.buf, &mut self.at);
        Some((e, start..self.at))
    }

    /// The first entry for which `hit` holds: its position, the entry and its byte range.
    pub fn find_ranged(mut self, hit: impl Fn(&T) -> bool) -> Option<(usize, T, std::ops::Range<usize>)> {
        let mut i = 0;
        while let Some((e, r)) = self.next_ranged() {
            if hit(&e) {
                return Some((i, e, r));
            }
            i += 1;
        }
        None
    }

    /// The byte range of the entry at position `i`.
    pub fn range_of(mut self, i: usize) -> Option<std::ops::Range<usize>> {
        for _ in 0..i {
            self.next_ranged()?;
        }
        self.next_ranged().map(|(_, r)| r)
    }
}

impl<'a, T, F: Fn(&'a [u8], &mut usize) -> T> Iterator for Entries<'a, F> {
    type Item = T;

    fn next(&mut self) -> Option<T> {
        self.next_ranged().map(|(e, _)| e)
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        (self.left, Some(self.left))
    }
}

/// Removes the element at byte range `r` of block `b` by moving the last element, which starts at
/// byte `last`, into its place (the small forms' swap-removal, as their indexed forms do it).
pub fn swap_out(b: &mut Box<[u8]>, r: std::ops::Range<usize>, last: usize) {
    let n = count(b);
    *b = if r.start == last {
        reblock(b, n - 1, &[&b[1..r.start]])
    } else {
        reblock(b, n - 1, &[&b[1..r.start], &b[last..], &b[r.end..last]])
    };
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn varints_and_elements_round_trip() {
        for n in [0u64, 1, 127, 128, 16383, 16384, 1 << 35, u64::MAX] {
            let mut v = Vec::new();
            put_varint(&mut v, n);
            assert_eq!(v.len(), varint_size(n), "{n}");
            let mut at = 0;
            assert_eq!((read_varint(&v, &mut at), at), (n, v.len()));
        }
        let mut v = Vec::new();
        for len in [0usize, 1, 127, 128, 300] {
            let e = vec![len as u8; len];
            put_bytes(&mut v, &e);
        }
        let mut at = 0;
        for len in [0usize, 1, 127, 128, 300] {
            assert_eq!(read_bytes(&v, &mut at), &vec![len as u8; len][..]);
        }
        assert_eq!(at, v.len());
        let mut b = Box::default();
        assert_eq!(count(&b), 0);
        append(&mut b, b"\x01a");
        append(&mut b, b"\x01b");
        assert_eq!(&b[..], b"\x02\x01a\x01b");
        assert_eq!(&block(2, &[b"\x01a", b"\x01b"])[..], &b[..]);
        assert!(block(0, &[]).is_empty());
        let mut b = block(3, &[b"\x01a\x02bb\x01c"]);
        swap_out(&mut b, 1..3, 6);
        assert_eq!(&b[..], b"\x02\x01c\x02bb");
        swap_out(&mut b, 3..6, 3);
        assert_eq!(&b[..], b"\x01\x01c");
        swap_out(&mut b, 1..3, 1);
        assert!(b.is_empty());
        let b = block(3, &[b"\x01a\x02bb\x01c"]);
        let e = || Entries::new(&b, read_bytes);
        assert_eq!(e().collect::<Vec<_>>(), vec![&b"a"[..], b"bb", b"c"]);
        assert_eq!(e().find_ranged(|m| *m == b"bb"), Some((1, &b"bb"[..], 3..6)));
        assert_eq!(e().find_ranged(|m| *m == b"x"), None);
        assert_eq!((e().range_of(2), e().range_of(3)), (Some(6..8), None));
    }
}
