//! LZF compression as Redis's bundled liblzf does it (`lzf_compress` built with `HLOG 16`,
//! `VERY_FAST`): the format RDB files and DUMP payloads carry compressed strings in.
//!
//! The `lzf` crate decompresses (see [`crate::rdb`]); its compressor zeroes a 512 KiB table on every
//! call, which made saving a dataset of small values eight times slower than Redis, and it finds
//! fewer matches. This one keeps its table between calls, as liblzf without `INIT_HTAB` does: a
//! stale slot only proposes a position, and a match is taken only after its bytes are compared.
//!
//! Format: `000LLLLL` + L+1 literal bytes; `LLLooooo oooooooo` a back reference of L+2 bytes
//! (L < 7) at distance o+1; `111ooooo LLLLLLLL oooooooo` one of L+9 bytes.

const HLOG: u32 = 16;
const HSIZE: usize = 1 << HLOG;
const MAX_LIT: usize = 1 << 5;
const MAX_OFF: usize = 1 << 13;
const MAX_REF: usize = (1 << 8) + (1 << 3);

/// A compressor; reuse it, its table is what costs to make.
pub struct Lzf {
    /// Hash of 3 bytes → their last position + 1 (0: none), possibly from an earlier input.
    htab: Box<[u32]>,
}

impl Default for Lzf {
    fn default() -> Lzf {
        Lzf { htab: vec![0; HSIZE].into_boxed_slice() }
    }
}

#[inline]
fn idx(h: u32) -> usize {
    ((h >> (3 * 8 - HLOG)).wrapping_sub(h.wrapping_mul(5)) as usize) & (HSIZE - 1)
}

impl Lzf {
    /// Appends `input` compressed to `out` if that takes at most `max_out` bytes (Redis asks for
    /// at most `len - 4`); false (and `out` unchanged) otherwise, or for empty input.
    pub fn compress(&mut self, input: &[u8], out: &mut Vec<u8>, max_out: usize) -> bool {
        let in_len = input.len();
        if in_len == 0 || max_out == 0 || in_len > u32::MAX as usize - 1 {
            return false;
        }
        let start = out.len();
        out.resize(start + max_out, 0);
        let n = self.compress_into(input, &mut out[start..]);
        out.truncate(start + n.unwrap_or(0));
        n.is_some()
    }

    fn compress_into(&mut self, input: &[u8], o: &mut [u8]) -> Option<usize> {
        let (in_len, out_end) = (input.len(), o.len());
        let htab = &mut self.htab;
        let frst = |p: usize| (u32::from(input[p]) << 8) | u32::from(input[p + 1]);
        let next = |v: u32, p: usize| (v << 8) | u32::from(input[p + 2]);
        let (mut ip, mut op, mut lit) = (0usize, 1usize, 0usize);
        if in_len < 3 {
            // Too short for a reference: one literal run.
            if in_len + 1 > out_end {
                return None;
            }
            o[0] = (in_len - 1) as u8;
            o[1..=in_len].copy_from_slice(input);
            return Some(in_len + 1);
        }
        let mut hval = frst(ip);
        while ip < in_len - 2 {
            hval = next(hval, ip);
            let slot = idx(hval);
            let r = htab[slot] as usize; // position + 1, 0 for none
            htab[slot] = ip as u32 + 1;
            let found = r > 1 && r - 1 < ip && {
                let r = r - 1;
                ip - r - 1 < MAX_OFF && input[r..r + 3] == input[ip..ip + 3]
            };
            if found {
                let r = r - 1;
                let off = ip - r - 1;
                let mut len = 2usize;
                let maxlen = (in_len - ip - len).min(MAX_REF);
                if op + 3 + 1 >= out_end && op - usize::from(lit == 0) + 3 + 1 >= out_end {
                    return None;
                }
                o[op - lit - 1] = (lit as u8).wrapping_sub(1); // stop run
                op -= usize::from(lit == 0); // undo run if length is zero
                loop {
                    len += 1;
                    if len >= maxlen || input[r + len] != input[ip + len] {
                        break;
                    }
                }
                len -= 2; // len is now #octets - 1
                ip += 1;
                if len < 7 {
                    o[op] = ((off >> 8) + (len << 5)) as u8;
                    op += 1;
                } else {
                    o[op] = ((off >> 8) + (7 << 5)) as u8;
                    o[op + 1] = (len - 7) as u8;
                    op += 2;
                }
                o[op] = off as u8;
                op += 2; // start run
                lit = 0;
                ip += len + 1;
                if ip >= in_len - 2 {
                    break;
                }
                // VERY_FAST: the two positions before the next one go into the table.
                ip -= 2;
                hval = frst(ip);
                hval = next(hval, ip);
                htab[idx(hval)] = ip as u32 + 1;
                ip += 1;
                hval = next(hval, ip);
                htab[idx(hval)] = ip as u32 + 1;
                ip += 1;
            } else {
                if op >= out_end {
                    return None;
                }
                literal(o, &mut op, &mut lit, input[ip]);
                ip += 1;
            }
        }
        if op + 3 > out_end {
            return None;
        }
        while ip < in_len {
            literal(o, &mut op, &mut lit, input[ip]);
            ip += 1;
        }
        o[op - lit - 1] = (lit as u8).wrapping_sub(1); // end run
        op -= usize::from(lit == 0);
        Some(op)
    }
}

/// Appends one literal byte to the open run; a run of `MAX_LIT` is closed (its length byte written
/// before it) and the next one opened.
#[inline(always)]
fn literal(o: &mut [u8], op: &mut usize, lit: &mut usize, byte: u8) {
    *lit += 1;
    o[*op] = byte;
    *op += 1;
    if *lit == MAX_LIT {
        o[*op - *lit - 1] = (*lit - 1) as u8;
        *lit = 0;
        *op += 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn round_trip(lzf: &mut Lzf, data: &[u8]) -> Option<usize> {
        let mut out = vec![7u8; 3];
        if !lzf.compress(data, &mut out, data.len() + 64) {
            assert_eq!(out, [7, 7, 7], "a failed compression leaves the output alone");
            return None;
        }
        assert_eq!(&out[..3], [7, 7, 7]);
        let back = lzf::decompress(&out[3..], data.len()).expect("valid LZF");
        assert_eq!(back, data);
        Some(out.len() - 3)
    }

    #[test]
    fn redis_populate_values_compress_as_liblzf_does() {
        // DEBUG POPULATE's value: "value:1" padded with zeros to 1000 bytes. The bytes are those in
        // redis-server 7.0.15's `DUMP key:1`.
        let mut v = b"value:1".to_vec();
        v.resize(1000, 0);
        let mut lzf = Lzf::default();
        assert_eq!(round_trip(&mut lzf, &v), Some(24));
        let mut out = Vec::new();
        assert!(lzf.compress(&v, &mut out, 996));
        assert_eq!(out, b"\x07value:1\x00\xe0\xff\x00\xe0\xff\x00\xe0\xff\x00\xe0\xbd\x00\x01\x00\x00");
        // Within Redis's limit of len - 4, or not at all.
        let mut out = Vec::new();
        assert!(!lzf.compress(b"abcdefghijklmnopqrstuvwxyz", &mut out, 22));
        assert!(out.is_empty());
    }

    proptest! {
        #[test]
        fn compresses_and_decompresses_back(
            inputs in proptest::collection::vec(
                proptest::collection::vec(prop_oneof![Just(0u8), Just(b'a'), any::<u8>()], 0..3000),
                1..6,
            )
        ) {
            // One compressor for all: stale table entries from earlier inputs must not matter.
            let mut lzf = Lzf::default();
            for data in &inputs {
                if data.is_empty() {
                    continue;
                }
                round_trip(&mut lzf, data);
            }
        }
    }
}
