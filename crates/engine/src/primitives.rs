//! The primitive types that values and the data structures behind them are built from. It sits
//! below both `value.rs` and `types/` (a sorted set is made of these, and a value holds a sorted
//! set), so that imports between them point one way; `value` re-exports them.

use smallvec::SmallVec;

/// Bytes stored inline when they fit in 16 bytes (typical keys such as `lock:order:12345`).
pub type SmallBytes = SmallVec<[u8; 16]>;

/// The hasher used by every hash table in the engine: fast, and randomly seeded per process so that
/// clients cannot craft colliding keys.
pub type Hasher = foldhash::fast::RandomState;

/// The bytes of a key or a string value: up to [`Str::INLINE`] bytes inline, longer ones in one heap
/// block. Keys of up to 22 bytes (`counter:000000012345`, `lock:order:123456789`) cost no
/// allocation and no pointer to follow when a lookup compares them.
///
/// 24 bytes, so that the keyspace's `Value` is 24 too: the inline form is a length byte and
/// 22 bytes of data; the heap form is the block (whose length is the capacity) and the string's
/// length in the 7 bytes beside the tag. The tag byte keeps spare values, which `Value`'s other
/// variants use as their own tags. Not a `SmallVec`, whose `usize` length and capacity make it 32
/// bytes at this inline size, nor a `thin_vec::ThinVec`, which copies bytes in one at a time.
///
/// A string edited in place moves to the heap once it outgrows the inline bytes and stays there
/// (as Redis's `raw` strings keep their buffer); growth doubles the capacity, so appending is
/// amortized O(1). Equality compares bytes, whatever the representation.
pub struct Str(Repr);

enum Repr {
    /// `len <= Str::INLINE`; the bytes after `len` are unused.
    Inline { len: u8, data: [u8; Str::INLINE] },
    /// `len` (56-bit little-endian) `<= buf.len()`, the capacity; the bytes after `len` are unused.
    Heap { buf: Box<[u8]>, len: [u8; 7] },
}

/// A heap length in the 7 bytes beside the tag. 2^56 bytes is beyond any allocation.
fn pack_len(len: usize) -> [u8; 7] {
    let b = (len as u64).to_le_bytes();
    assert_eq!(b[7], 0, "string length {len} exceeds 56 bits");
    [b[0], b[1], b[2], b[3], b[4], b[5], b[6]]
}

fn unpack_len(b: &[u8; 7]) -> usize {
    u64::from_le_bytes([b[0], b[1], b[2], b[3], b[4], b[5], b[6], 0]) as usize
}

impl Str {
    /// The most bytes kept inline.
    pub const INLINE: usize = 22;

    /// The empty string.
    pub const fn new() -> Str {
        Str(Repr::Inline { len: 0, data: [0; Str::INLINE] })
    }

    /// A copy of `b`: inline when it fits, else on the heap with exactly its length as capacity.
    pub fn from_slice(b: &[u8]) -> Str {
        if b.len() <= Str::INLINE {
            let mut data = [0; Str::INLINE];
            data[..b.len()].copy_from_slice(b);
            Str(Repr::Inline { len: b.len() as u8, data })
        } else {
            Str::heap(b.to_vec())
        }
    }

    /// `n` copies of `byte` (a zeroed string for SETRANGE and SETBIT on a new key).
    pub fn from_elem(byte: u8, n: usize) -> Str {
        if n <= Str::INLINE {
            let mut data = [0; Str::INLINE];
            data[..n].fill(byte);
            Str(Repr::Inline { len: n as u8, data })
        } else {
            Str::heap(vec![byte; n])
        }
    }

    /// Takes `v`'s bytes: inline when they fit, else `v`'s own allocation, without copying.
    pub fn from_vec(v: Vec<u8>) -> Str {
        if v.len() <= Str::INLINE { Str::from_slice(&v) } else { Str::heap(v) }
    }

    /// `v` on the heap whatever its length, keeping its allocation and its spare capacity.
    fn heap(mut v: Vec<u8>) -> Str {
        let len = pack_len(v.len());
        // The spare capacity becomes initialized bytes of the block (unused past `len`), so that
        // the conversion keeps the allocation instead of shrinking it.
        v.resize(v.capacity(), 0);
        Str(Repr::Heap { buf: v.into_boxed_slice(), len })
    }

    /// The bytes as a vector: a heap string's allocation, without copying.
    pub fn into_vec(self) -> Vec<u8> {
        match self.0 {
            Repr::Inline { len, data } => data[..len as usize].to_vec(),
            Repr::Heap { buf, len } => {
                let mut v = Vec::from(buf);
                v.truncate(unpack_len(&len));
                v
            }
        }
    }

    /// Length in bytes.
    pub fn len(&self) -> usize {
        match &self.0 {
            Repr::Inline { len, .. } => *len as usize,
            Repr::Heap { len, .. } => unpack_len(len),
        }
    }

    /// True for the empty string.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Bytes the string can hold without reallocating.
    pub fn capacity(&self) -> usize {
        match &self.0 {
            Repr::Inline { .. } => Str::INLINE,
            Repr::Heap { buf, .. } => buf.len(),
        }
    }

    /// True when the bytes are kept inline.
    pub fn is_inline(&self) -> bool {
        matches!(self.0, Repr::Inline { .. })
    }

    /// Bytes allocated on the heap (for `MEMORY USAGE`): the block's capacity, 0 inline.
    pub fn heap_bytes(&self) -> usize {
        match &self.0 {
            Repr::Inline { .. } => 0,
            Repr::Heap { buf, .. } => buf.len(),
        }
    }

    /// The bytes.
    pub fn as_slice(&self) -> &[u8] {
        match &self.0 {
            Repr::Inline { len, data } => &data[..*len as usize],
            Repr::Heap { buf, len } => &buf[..unpack_len(len)],
        }
    }

    /// The bytes, to change in place.
    pub fn as_mut_slice(&mut self) -> &mut [u8] {
        match &mut self.0 {
            Repr::Inline { len, data } => &mut data[..*len as usize],
            Repr::Heap { buf, len } => &mut buf[..unpack_len(len)],
        }
    }

    /// Makes room for `additional` more bytes, moving to the heap when they do not fit inline; the
    /// capacity at least doubles when it grows.
    pub fn reserve(&mut self, additional: usize) {
        if self.capacity() - self.len() >= additional {
            return;
        }
        let mut v = std::mem::take(self).into_vec();
        v.reserve(additional);
        *self = Str::heap(v);
    }

    /// Appends `b`.
    pub fn extend_from_slice(&mut self, b: &[u8]) {
        self.grow(b.len()).copy_from_slice(b);
    }

    /// Sets the length to `new_len`: cut, or padded with `byte`.
    pub fn resize(&mut self, new_len: usize, byte: u8) {
        match new_len.checked_sub(self.len()) {
            Some(more) => self.grow(more).fill(byte),
            None => self.truncate(new_len),
        }
    }

    /// Cuts the string to `len` bytes (nothing when it is not longer). The capacity stays.
    pub fn truncate(&mut self, new_len: usize) {
        if new_len < self.len() {
            match &mut self.0 {
                Repr::Inline { len, .. } => *len = new_len as u8,
                Repr::Heap { len, .. } => *len = pack_len(new_len),
            }
        }
    }

    /// Lengthens the string by `more` bytes and returns them, for the caller to write: they hold
    /// whatever the unused capacity held.
    fn grow(&mut self, more: usize) -> &mut [u8] {
        self.reserve(more);
        let old = self.len();
        let new_len = old + more;
        match &mut self.0 {
            Repr::Inline { len, data } => {
                *len = new_len as u8;
                &mut data[old..new_len]
            }
            Repr::Heap { buf, len } => {
                *len = pack_len(new_len);
                &mut buf[old..new_len]
            }
        }
    }
}

impl Default for Str {
    fn default() -> Str {
        Str::new()
    }
}

/// A copy holds only the bytes: a heap string's spare capacity is not copied.
impl Clone for Str {
    fn clone(&self) -> Str {
        Str::from_slice(self.as_slice())
    }
}

impl std::ops::Deref for Str {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        self.as_slice()
    }
}

impl std::ops::DerefMut for Str {
    fn deref_mut(&mut self) -> &mut [u8] {
        self.as_mut_slice()
    }
}

impl AsRef<[u8]> for Str {
    fn as_ref(&self) -> &[u8] {
        self.as_slice()
    }
}

impl From<&[u8]> for Str {
    fn from(b: &[u8]) -> Str {
        Str::from_slice(b)
    }
}

impl From<Vec<u8>> for Str {
    fn from(v: Vec<u8>) -> Str {
        Str::from_vec(v)
    }
}

impl PartialEq for Str {
    fn eq(&self, other: &Str) -> bool {
        self.as_slice() == other.as_slice()
    }
}

impl Eq for Str {}

/// Hashes as its bytes, as `[u8]` does: maps keyed by `Str` are searched with `&[u8]`.
impl std::hash::Hash for Str {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.as_slice().hash(state)
    }
}

impl std::borrow::Borrow<[u8]> for Str {
    fn borrow(&self) -> &[u8] {
        self.as_slice()
    }
}

/// Orders as its bytes.
impl PartialOrd for Str {
    fn partial_cmp(&self, other: &Str) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Str {
    fn cmp(&self, other: &Str) -> std::cmp::Ordering {
        self.as_slice().cmp(other.as_slice())
    }
}

impl std::fmt::Debug for Str {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        std::fmt::Debug::fmt(self.as_slice(), f)
    }
}
