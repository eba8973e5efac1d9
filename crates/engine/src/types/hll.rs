//! HyperLogLog as Redis 7.0 stores it: an ordinary string, so GET, SET, DUMP/RESTORE, RDB files
//! and the AOF carry it byte for byte between Latch and Redis.
//!
//! The layout (documented at the top of Redis's `hyperloglog.c`):
//! - a 16-byte header: `HYLL`, one encoding byte (0 dense, 1 sparse), three unused bytes, and the
//!   cached cardinality as a little-endian u64 whose most significant bit marks it stale;
//! - dense: 16384 registers of 6 bits, packed from the least significant bit of each byte up;
//! - sparse: a run-length code of the registers: `00xxxxxx` (ZERO: 1..64 zero registers),
//!   `01xxxxxx yyyyyyyy` (XZERO: 1..16384 zero registers) and `1vvvvvxx` (VAL: 1..4 registers of
//!   value 1..32).
//!
//! Elements are hashed with MurmurHash64A (seed `0xadc83b19`); the low 14 bits pick the register,
//! the position of the first set bit in the rest is the value. Counting is Ertl's improved
//! estimator, as Redis 7.0 computes it, so the same registers give the same estimate.
//!
//! Everything here is bytes in, bytes or values out. Malformed input is handled as Redis handles
//! it (same walks, same outcome), including reading a missing last byte of an XZERO as the zero
//! that terminates every Redis string.

/// Size of the header.
pub const HDR: usize = 16;
/// Number of registers (2^14).
pub const REGISTERS: usize = 1 << P;
/// Size of a dense HyperLogLog: the header and 16384 six-bit registers.
pub const DENSE_SIZE: usize = HDR + (REGISTERS * BITS).div_ceil(8);

const P: usize = 14;
const Q: usize = 64 - P;
const BITS: usize = 6;
const REG_MAX: u8 = (1 << BITS) - 1;
const SEED: u64 = 0xadc83b19;
/// 0.5 / ln 2 (Redis writes it 0.721347520444481703680: the same double).
const ALPHA_INF: f64 = 0.721_347_520_444_481_7;
const DENSE: u8 = 0;
const SPARSE: u8 = 1;
const VAL_MAX_VALUE: u8 = 32;
const VAL_MAX_LEN: usize = 4;
const ZERO_MAX_LEN: usize = 64;

/// A representation, as the header's encoding byte names it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Encoding {
    /// 16384 packed six-bit registers.
    Dense,
    /// The run-length code.
    Sparse,
}

impl Encoding {
    /// The name PFDEBUG ENCODING answers.
    pub fn name(self) -> &'static str {
        match self {
            Encoding::Dense => "dense",
            Encoding::Sparse => "sparse",
        }
    }
}

/// The string is not a HyperLogLog (Redis's `-WRONGTYPE Key is not a valid HyperLogLog string
/// value.`).
#[derive(Debug, PartialEq, Eq)]
pub struct NotHll;

/// The registers do not decode (Redis's `-INVALIDOBJ Corrupted HLL object detected`).
#[derive(Debug, PartialEq, Eq)]
pub struct Corrupt;

/// Redis's `isHLLObjectOrReply` on a string's bytes: the magic, a known encoding, and for dense
/// the exact size. The sparse code itself is checked only when walked.
pub fn check(s: &[u8]) -> Result<Encoding, NotHll> {
    if s.len() < HDR || &s[..4] != b"HYLL" {
        return Err(NotHll);
    }
    match s[4] {
        DENSE if s.len() == DENSE_SIZE => Ok(Encoding::Dense),
        SPARSE => Ok(Encoding::Sparse),
        _ => Err(NotHll),
    }
}

/// A new, empty HyperLogLog: sparse, one XZERO covering every register, cardinality 0 (valid).
pub fn new_sparse() -> Vec<u8> {
    let mut s = Vec::with_capacity(HDR + 2);
    s.extend_from_slice(b"HYLL");
    s.push(SPARSE);
    s.resize(HDR, 0);
    push_xzero(&mut s, REGISTERS);
    s
}

/// The cached cardinality, if the header's stale bit is clear.
pub fn cached(s: &[u8]) -> Option<u64> {
    let card = u64::from_le_bytes(s[8..16].try_into().expect("header checked"));
    (card >> 63 == 0).then_some(card)
}

/// Stores `card` as the cached cardinality (valid).
pub fn set_cached(s: &mut [u8], card: u64) {
    s[8..16].copy_from_slice(&card.to_le_bytes());
}

/// Marks the cached cardinality stale.
pub fn invalidate(s: &mut [u8]) {
    s[15] |= 0x80;
}

/// MurmurHash64A, little-endian reads on every machine, as Redis modified it.
pub fn murmur64a(data: &[u8], seed: u64) -> u64 {
    const M: u64 = 0xc6a4a7935bd1e995;
    const R: u32 = 47;
    let mut h = seed ^ (data.len() as u64).wrapping_mul(M);
    let mut chunks = data.chunks_exact(8);
    for c in &mut chunks {
        let mut k = u64::from_le_bytes(c.try_into().expect("8 bytes"));
        k = k.wrapping_mul(M);
        k ^= k >> R;
        k = k.wrapping_mul(M);
        h ^= k;
        h = h.wrapping_mul(M);
    }
    let tail = chunks.remainder();
    if !tail.is_empty() {
        for (i, &b) in tail.iter().enumerate() {
            h ^= (b as u64) << (8 * i);
        }
        h = h.wrapping_mul(M);
    }
    h ^= h >> R;
    h = h.wrapping_mul(M);
    h ^= h >> R;
    h
}

/// The register an element falls in and the value it proposes: one more than the number of
/// zero bits above the index bits before the first one (1..=51).
pub fn pattern(ele: &[u8]) -> (usize, u8) {
    let hash = murmur64a(ele, SEED);
    let index = (hash as usize) & (REGISTERS - 1);
    let rest = (hash >> P) | (1u64 << Q);
    (index, rest.trailing_zeros() as u8 + 1)
}

// ---------------------------------------------------------------------------------------------
// Dense registers.

/// Register `i` of the packed registers `r` (a byte past the end reads as 0).
fn dense_get(r: &[u8], i: usize) -> u8 {
    let (byte, fb) = (i * BITS / 8, (i * BITS) & 7);
    let b0 = r[byte] as u32;
    let b1 = r.get(byte + 1).copied().unwrap_or(0) as u32;
    (((b0 >> fb) | (b1 << (8 - fb))) & REG_MAX as u32) as u8
}

/// Sets register `i` of the packed registers `r` to `v` (at most 63).
fn dense_put(r: &mut [u8], i: usize, v: u8) {
    let (byte, fb) = (i * BITS / 8, (i * BITS) & 7);
    let (v, max) = (v as u32, REG_MAX as u32);
    r[byte] &= !((max << fb) as u8);
    r[byte] |= (v << fb) as u8;
    if let Some(b) = r.get_mut(byte + 1) {
        *b &= !((max >> (8 - fb)) as u8);
        *b |= (v >> (8 - fb)) as u8;
    }
}

/// Raises register `i` to `v` if it is lower; true if it changed.
fn dense_raise(r: &mut [u8], i: usize, v: u8) -> bool {
    if v > dense_get(r, i) {
        dense_put(r, i, v);
        true
    } else {
        false
    }
}

// ---------------------------------------------------------------------------------------------
// Sparse opcodes.

/// One sparse opcode: how many bytes it takes, how many registers it covers, their value.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Op {
    width: usize,
    run: usize,
    value: u8,
}

impl Op {
    fn is_xzero(self) -> bool {
        self.width == 2
    }
}

/// The opcode at `p` of `s` (the byte after the end reads as 0, Redis's string terminator).
fn op_at(s: &[u8], p: usize) -> Op {
    let b = s[p];
    if b & 0xc0 == 0 {
        Op { width: 1, run: (b & 0x3f) as usize + 1, value: 0 }
    } else if b & 0x80 == 0 {
        let lo = s.get(p + 1).copied().unwrap_or(0) as usize;
        Op { width: 2, run: ((((b & 0x3f) as usize) << 8) | lo) + 1, value: 0 }
    } else {
        Op { width: 1, run: (b & 3) as usize + 1, value: ((b >> 2) & 0x1f) + 1 }
    }
}

fn is_val(b: u8) -> bool {
    b & 0x80 != 0
}

fn val_byte(value: u8, run: usize) -> u8 {
    0x80 | ((value - 1) << 2) | (run as u8 - 1)
}

fn push_zero(out: &mut Vec<u8>, run: usize) {
    if run > ZERO_MAX_LEN {
        push_xzero(out, run);
    } else {
        out.push(run as u8 - 1);
    }
}

fn push_xzero(out: &mut Vec<u8>, run: usize) {
    let l = run - 1;
    out.push(0x40 | (l >> 8) as u8);
    out.push((l & 0xff) as u8);
}

/// The sparse opcodes of `s` with their offsets.
fn sparse_ops(s: &[u8]) -> impl Iterator<Item = (usize, Op)> + '_ {
    let mut p = HDR;
    std::iter::from_fn(move || {
        (p < s.len()).then(|| {
            let op = op_at(s, p);
            let at = p;
            p += op.width;
            (at, op)
        })
    })
}

/// Calls `f(index, value)` for each register a VAL opcode covers; Err, stopping there, at an
/// opcode that would run past the last register, and when the code covers fewer than 16384 (the
/// walk of `hllSparseToDense` and `hllMerge` with the CVE-2025-32023 fix, which Redis 7.0.15 as
/// distributions ship it has: 7.0.15 itself accepted opcodes after the last register).
fn sparse_values(s: &[u8], mut f: impl FnMut(usize, u8)) -> Result<(), Corrupt> {
    let mut idx = 0;
    for (_, op) in sparse_ops(s) {
        if idx + op.run > REGISTERS {
            return Err(Corrupt);
        }
        if op.value != 0 {
            for i in idx..idx + op.run {
                f(i, op.value);
            }
        }
        idx += op.run;
    }
    if idx == REGISTERS { Ok(()) } else { Err(Corrupt) }
}

/// Where register `index` is coded: the opcode's offset, the first register it covers, the
/// previous opcode's offset. Err when the walk runs out (Redis's `hllSparseSet` step 1).
fn sparse_find(s: &[u8], index: usize) -> Result<(usize, usize, Option<usize>), Corrupt> {
    let (mut p, mut first, mut prev, mut span) = (HDR, 0, None, 0);
    while p < s.len() {
        let op = op_at(s, p);
        span = op.run;
        if index < first + span {
            break;
        }
        prev = Some(p);
        p += op.width;
        first += span;
    }
    if span == 0 || p >= s.len() { Err(Corrupt) } else { Ok((p, first, prev)) }
}

// ---------------------------------------------------------------------------------------------
// Changing registers.

/// Converts a sparse HyperLogLog to dense in place, keeping the header (and its cached
/// cardinality). Ok(false) when it already was dense.
pub fn to_dense(s: &mut Vec<u8>) -> Result<bool, Corrupt> {
    if s[4] == DENSE {
        return Ok(false);
    }
    let mut dense = vec![0u8; DENSE_SIZE];
    dense[..HDR].copy_from_slice(&s[..HDR]);
    dense[4] = DENSE;
    sparse_values(s, |i, v| dense_put(&mut dense[HDR..], i, v))?;
    *s = dense;
    Ok(true)
}

/// Raises register `index` to `count` if it is lower, promoting a sparse HyperLogLog to dense when
/// the value does not fit a VAL opcode or the code would grow past `max_sparse` bytes (Redis's
/// `hllDenseSet`/`hllSparseSet`, the same bytes for the same calls). Ok(true) if it changed. The
/// cached cardinality is left as it is: callers invalidate it once.
pub fn set(s: &mut Vec<u8>, index: usize, count: u8, max_sparse: usize) -> Result<bool, Corrupt> {
    if s[4] == DENSE {
        return Ok(dense_raise(&mut s[HDR..], index, count));
    }
    if count > VAL_MAX_VALUE {
        return promote(s, index, count);
    }
    let (p, first, prev) = sparse_find(s, index)?;
    let op = op_at(s, p);
    if op.value != 0 {
        if op.value >= count {
            return Ok(false);
        }
        if op.run == 1 {
            s[p] = val_byte(count, 1);
            merge_vals(s, prev);
            return Ok(true);
        }
    } else if !op.is_xzero() && op.run == 1 {
        s[p] = val_byte(count, 1);
        merge_vals(s, prev);
        return Ok(true);
    }
    // Split the opcode into up to three: the registers before, ours, the registers after.
    let last = first + op.run - 1;
    let mut seq = Vec::with_capacity(5);
    if index != first {
        match op.value {
            0 => push_zero(&mut seq, index - first),
            v => seq.push(val_byte(v, index - first)),
        }
    }
    seq.push(val_byte(count, 1));
    if index != last {
        match op.value {
            0 => push_zero(&mut seq, last - index),
            v => seq.push(val_byte(v, last - index)),
        }
    }
    let end = s.len();
    let new_len = end + seq.len() - op.width;
    if seq.len() > op.width && new_len > max_sparse {
        return promote(s, index, count);
    }
    // An XZERO missing its last byte is replaced as if it were whole, as Redis does.
    s.splice(p..(p + op.width).min(end), seq);
    s.truncate(new_len);
    merge_vals(s, prev);
    Ok(true)
}

/// Redis's `hllSparseSet` step 4: from the opcode before the changed one, up to five opcodes,
/// adjacent VALs of one value whose runs fit one opcode are joined.
fn merge_vals(s: &mut Vec<u8>, prev: Option<usize>) {
    let mut p = prev.unwrap_or(HDR);
    let mut scan = 5;
    while p < s.len() && scan > 0 {
        scan -= 1;
        let op = op_at(s, p);
        if op.value == 0 {
            p += op.width;
            continue;
        }
        if p + 1 < s.len() && is_val(s[p + 1]) {
            let next = op_at(s, p + 1);
            let run = op.run + next.run;
            if next.value == op.value && run <= VAL_MAX_LEN {
                s[p + 1] = val_byte(op.value, run);
                s.remove(p);
                continue;
            }
        }
        p += 1;
    }
}

fn promote(s: &mut Vec<u8>, index: usize, count: u8) -> Result<bool, Corrupt> {
    to_dense(s)?;
    dense_raise(&mut s[HDR..], index, count);
    Ok(true)
}

/// Adds an element (Redis's `hllAdd`): Ok(true) if a register changed.
pub fn add(s: &mut Vec<u8>, ele: &[u8], max_sparse: usize) -> Result<bool, Corrupt> {
    let (index, count) = pattern(ele);
    set(s, index, count, max_sparse)
}

/// Whether adding `ele` would change anything (or fail), without changing `s`: a PFADD whose
/// elements change nothing does not write its key.
pub fn would_change(s: &[u8], ele: &[u8]) -> bool {
    let (index, count) = pattern(ele);
    if s[4] == DENSE {
        return count > dense_get(&s[HDR..], index);
    }
    if count > VAL_MAX_VALUE {
        return true;
    }
    match sparse_find(s, index) {
        Ok((p, _, _)) => op_at(s, p).value < count,
        Err(Corrupt) => true,
    }
}

// ---------------------------------------------------------------------------------------------
// Counting and merging.

type Histogram = [u32; 64];

/// The register values' histogram; for sparse, Err when the code does not cover 16384 registers.
fn histogram(s: &[u8]) -> Result<Histogram, Corrupt> {
    let mut h = [0u32; 64];
    if s[4] == DENSE {
        for i in 0..REGISTERS {
            h[dense_get(&s[HDR..], i) as usize] += 1;
        }
        return Ok(h);
    }
    let mut idx = 0;
    for (_, op) in sparse_ops(s) {
        h[op.value as usize] += op.run as u32;
        idx += op.run;
    }
    if idx == REGISTERS { Ok(h) } else { Err(Corrupt) }
}

/// The estimated cardinality (Redis's `hllCount`), computed from the registers, not the cache.
pub fn count(s: &[u8]) -> Result<u64, Corrupt> {
    histogram(s).map(|h| estimate(&h))
}

/// Ertl's sigma, "New cardinality estimation algorithms for HyperLogLog sketches".
fn sigma(mut x: f64) -> f64 {
    if x == 1.0 {
        return f64::INFINITY;
    }
    let (mut y, mut z) = (1.0, x);
    loop {
        x *= x;
        let before = z;
        z += x * y;
        y += y;
        if before == z {
            return z;
        }
    }
}

/// Ertl's tau.
fn tau(mut x: f64) -> f64 {
    if x == 0.0 || x == 1.0 {
        return 0.0;
    }
    let (mut y, mut z) = (1.0, 1.0 - x);
    loop {
        x = x.sqrt();
        let before = z;
        y *= 0.5;
        z -= (1.0 - x) * (1.0 - x) * y;
        if before == z {
            return z / 3.0;
        }
    }
}

fn estimate(h: &Histogram) -> u64 {
    let m = REGISTERS as f64;
    let mut z = m * tau((m - h[Q + 1] as f64) / m);
    for j in (1..=Q).rev() {
        z += h[j] as f64;
        z *= 0.5;
    }
    z += m * sigma(h[0] as f64 / m);
    // llroundl: halves away from zero; an empty sketch gives z = inf and 0.
    (ALPHA_INF * m * m / z).round() as i64 as u64
}

/// Registers as one byte each: the union of several HyperLogLogs.
pub struct Union(Box<[u8; REGISTERS]>);

impl Default for Union {
    fn default() -> Self {
        Union(Box::new([0; REGISTERS]))
    }
}

impl Union {
    /// Raises each register to the one of `s` (Redis's `hllMerge`); Err for a sparse code that
    /// does not cover 16384 registers. Returns the encoding of `s`.
    pub fn merge(&mut self, s: &[u8]) -> Result<Encoding, Corrupt> {
        let max = &mut self.0;
        if s[4] == DENSE {
            for (i, m) in max.iter_mut().enumerate() {
                *m = (*m).max(dense_get(&s[HDR..], i));
            }
            return Ok(Encoding::Dense);
        }
        sparse_values(s, |i, v| max[i] = max[i].max(v))?;
        Ok(Encoding::Sparse)
    }

    /// The estimated cardinality of the union.
    pub fn count(&self) -> u64 {
        let mut h = [0u32; 64];
        for &r in self.0.iter() {
            h[r as usize] += 1;
        }
        estimate(&h)
    }

    /// Raises the registers of `s` to the union's, one register at a time in index order (as
    /// PFMERGE writes its destination), and marks its cached cardinality stale.
    pub fn store_into(&self, s: &mut Vec<u8>, max_sparse: usize) -> Result<(), Corrupt> {
        for (i, &v) in self.0.iter().enumerate() {
            if v != 0 {
                set(s, i, v, max_sparse)?;
            }
        }
        invalidate(s);
        Ok(())
    }
}

// ---------------------------------------------------------------------------------------------
// Debugging.

/// The 16384 register values of a dense HyperLogLog.
pub fn dense_registers(s: &[u8]) -> Vec<u8> {
    (0..REGISTERS).map(|i| dense_get(&s[HDR..], i)).collect()
}

/// PFDEBUG DECODE: the sparse opcodes as `z:N`, `Z:N` and `v:VALUE,N`, space-separated.
pub fn decode(s: &[u8]) -> String {
    let words: Vec<String> = sparse_ops(s)
        .map(|(_, op)| match op {
            Op { value: 0, width: 1, run } => format!("z:{run}"),
            Op { value: 0, run, .. } => format!("Z:{run}"),
            Op { value, run, .. } => format!("v:{value},{run}"),
        })
        .collect();
    words.join(" ")
}

/// PFSELFTEST (Redis's `pfselftestCommand`): the dense registers keep what is stored in them
/// (`cycles` rounds of random values), and a dense and a sparse HyperLogLog fed the same
/// `elements` unique elements agree, stay sparse while small, and err within six standard errors
/// at each power of ten. Err holds the error reply's text.
pub fn selftest(rng: &mut impl rand::Rng, cycles: usize, elements: u64, max_sparse: usize) -> Result<(), String> {
    let mut dense = vec![0u8; DENSE_SIZE];
    dense[..4].copy_from_slice(b"HYLL");
    let mut bytes = vec![0u8; REGISTERS];
    for _ in 0..cycles {
        for (i, b) in bytes.iter_mut().enumerate() {
            *b = rng.random::<u8>() & REG_MAX;
            dense_put(&mut dense[HDR..], i, *b);
        }
        for (i, &b) in bytes.iter().enumerate() {
            let got = dense_get(&dense[HDR..], i);
            if got != b {
                return Err(format!("TESTFAILED Register {i} should be {b} but is {got}"));
            }
        }
    }
    dense[HDR..].fill(0);
    let mut sparse = new_sparse();
    let relerr = 1.04 / (REGISTERS as f64).sqrt();
    let seed: u64 = rng.random();
    let mut checkpoint: u64 = 1;
    for j in 1..=elements {
        let ele = (j ^ seed).to_le_bytes();
        let (index, value) = pattern(&ele);
        dense_raise(&mut dense[HDR..], index, value);
        set(&mut sparse, index, value, max_sparse).map_err(|_| "TESTFAILED corrupted sparse".to_string())?;
        if j != checkpoint {
            continue;
        }
        if j < (max_sparse / 2) as u64 && sparse[4] != SPARSE {
            return Err("TESTFAILED sparse encoding not used".into());
        }
        let card = count(&dense).expect("dense");
        if count(&sparse) != Ok(card) {
            return Err("TESTFAILED dense/sparse disagree".into());
        }
        let abserr = checkpoint.abs_diff(card);
        let maxerr = if j == 10 { 1 } else { (relerr * 6.0 * checkpoint as f64).ceil() as u64 };
        if abserr > maxerr {
            return Err(format!("TESTFAILED Too big error. card:{checkpoint} abserr:{abserr}"));
        }
        checkpoint *= 10;
    }
    Ok(())
}

#[cfg(test)]
mod tests;
