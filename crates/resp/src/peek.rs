//! Looking at the requests waiting in a buffer without decoding them: what a server needs to start
//! loading the memory those requests will touch before it runs the first of them.

use crate::request::{PROTO_MBULK_BIG_ARG, number_line};

/// How many of a peeked request's arguments (the name first) are kept.
pub const PEEKED_ARGS: usize = 4;

/// A complete multibulk request at the front of a buffer, seen without being decoded: how many
/// arguments it has and the first [`PEEKED_ARGS`] of them.
#[derive(Clone, Copy, Debug)]
pub struct Peeked<'b> {
    argc: usize,
    args: [&'b [u8]; PEEKED_ARGS],
}

impl<'b> Peeked<'b> {
    /// The number of arguments, the name included.
    pub fn argc(&self) -> usize {
        self.argc
    }

    /// Argument `i` (0 is the name), if it is one of the first [`PEEKED_ARGS`].
    pub fn arg(&self, i: usize) -> Option<&'b [u8]> {
        (i < self.argc.min(PEEKED_ARGS)).then(|| self.args[i])
    }
}

/// The complete multibulk requests at the front of `buf`, in order, without consuming anything.
///
/// It stops at the first request that is incomplete, inline, not in the strict form clients send
/// (`*<n>\r\n` then `$<len>\r\n<bytes>\r\n` for each argument, plain digits), or that carries an
/// argument of [`PROTO_MBULK_BIG_ARG`] bytes or more. It never reads past `buf` and takes time
/// linear in the requests it yields. Only a hint: the decoder decides what the bytes mean.
/// `buf` must start at a request's first byte (no request partly decoded).
pub fn peek(buf: &[u8]) -> impl Iterator<Item = Peeked<'_>> {
    let mut at = 0;
    std::iter::from_fn(move || {
        let (req, len) = peek_one(&buf[at..])?;
        at += len;
        Some(req)
    })
}

/// The request at the front of `buf` and its length in bytes. Header lines are read as the
/// decoder's one-pass path reads them ([`crate::request::number_line`]), so a request peeked is
/// one that path takes whole.
fn peek_one(buf: &[u8]) -> Option<(Peeked<'_>, usize)> {
    if buf.first() != Some(&b'*') {
        return None;
    }
    let (argc, mut at) = number_line(buf, 0)?;
    if argc == 0 {
        return None;
    }
    let mut args: [&[u8]; PEEKED_ARGS] = [&[]; PEEKED_ARGS];
    for i in 0..argc as usize {
        if buf.get(at) != Some(&b'$') {
            return None;
        }
        let (len, start) = number_line(buf, at)?;
        if len as usize >= PROTO_MBULK_BIG_ARG {
            return None;
        }
        let end = start + len as usize;
        if buf.len() < end + 2 {
            return None;
        }
        if let Some(arg) = args.get_mut(i) {
            *arg = &buf[start..end];
        }
        at = end + 2;
    }
    Some((Peeked { argc: argc as usize, args }, at))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(buf: &[u8]) -> Vec<Vec<Vec<u8>>> {
        peek(buf).map(|r| (0..r.argc().min(PEEKED_ARGS)).map(|i| r.arg(i).unwrap().to_vec()).collect()).collect()
    }

    #[test]
    fn yields_complete_requests_in_order_with_their_first_arguments() {
        let buf = b"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$2\r\nv1\r\n*2\r\n$3\r\nGET\r\n$1\r\nk\r\n";
        assert_eq!(
            names(buf),
            vec![vec![b"SET".to_vec(), b"k".to_vec(), b"v1".to_vec()], vec![b"GET".to_vec(), b"k".to_vec()]]
        );
        let r = peek(buf).next().unwrap();
        assert_eq!(r.argc(), 3);
        assert_eq!(r.arg(3), None);
    }

    #[test]
    fn keeps_the_first_four_arguments_of_longer_requests() {
        let buf = b"*6\r\n$4\r\nMSET\r\n$1\r\na\r\n$1\r\n1\r\n$1\r\nb\r\n$1\r\n2\r\n$0\r\n\r\n*1\r\n$4\r\nPING\r\n";
        let reqs: Vec<_> = peek(buf).collect();
        assert_eq!(reqs.len(), 2);
        assert_eq!(reqs[0].argc(), 6);
        assert_eq!(reqs[0].arg(3), Some(&b"b"[..]));
        assert_eq!(reqs[0].arg(4), None);
        assert_eq!(reqs[1].arg(0), Some(&b"PING"[..]));
    }

    #[test]
    fn stops_at_what_is_incomplete_or_unusual() {
        let whole = b"*2\r\n$3\r\nGET\r\n$3\r\nkey\r\n".to_vec();
        // Every proper prefix of a request yields nothing.
        for cut in 0..whole.len() {
            assert_eq!(peek(&whole[..cut]).count(), 0, "cut at {cut}");
        }
        let mut two = whole.clone();
        two.extend_from_slice(b"PING\r\n");
        assert_eq!(peek(&two).count(), 1, "an inline request ends the peek");
        for bad in [
            &b"*0\r\n"[..],
            b"*-1\r\n",
            b"*2\r\n$3\r\nGET\r\n:3\r\n",
            b"*1\r\n$-1\r\n",
            b"*1\r\n$ 3\r\nGET\r\n",
            b"*1\n$3\r\nGET\r\n",
            b"*1\r\n$1234567890\r\n",
        ] {
            assert_eq!(peek(bad).count(), 0, "{:?}", String::from_utf8_lossy(bad));
        }
        let big = format!("*2\r\n$3\r\nSET\r\n${}\r\n{}\r\n", PROTO_MBULK_BIG_ARG, "x".repeat(PROTO_MBULK_BIG_ARG));
        assert_eq!(peek(big.as_bytes()).count(), 0);
    }

    #[test]
    fn never_reads_past_the_buffer_whatever_the_bytes() {
        let mut seed = 0x9e37_79b9_7f4a_7c15u64;
        let alphabet = b"*$\r\n0123456789ab";
        for _ in 0..20_000 {
            let mut buf = Vec::new();
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            let len = (seed % 40) as usize;
            for j in 0..len {
                buf.push(alphabet[((seed >> (j % 60)) as usize + j) % alphabet.len()]);
            }
            for r in peek(&buf) {
                assert!(r.argc() > 0);
            }
        }
    }
}
