//! RESP2/RESP3 codec for Latch.
//!
//! This crate is pure protocol logic: it never performs IO. The server feeds
//! bytes it read from a socket into [`RequestDecoder`] and writes the bytes
//! produced by [`encode`]; clients and tests use [`encode_request`] and
//! [`decode_reply`]. Behaviour (error texts, inline splitting, number
//! formatting) follows Redis 7.0 `networking.c` / `sds.c` byte for byte.

#![forbid(unsafe_code)]
#![warn(missing_docs)]

mod double;
mod encode;
mod frame;
mod reply;
mod repr;
mod request;

pub use bytes::{Bytes, BytesMut};

pub use double::{format_double, format_double_g};
pub use encode::{BulkArray, encode};
pub use frame::Frame;
pub use reply::{MAX_REPLY_DEPTH, ReplyError, decode_reply, encode_request};
pub use repr::repr;
pub use request::{
    Limits, PROTO_INLINE_MAX_SIZE, PROTO_MBULK_BIG_ARG, ProtocolError, RequestDecoder, atoi, split_args, string2ll,
};

/// The position of the first `a` or `b` in `s`. The protocol's lines are mostly short (a header's
/// `$3\r`, a reply's `OK`): a plain loop looks at the first 16 bytes, where it finds them before
/// memchr's vector setup would have started, and memchr takes the rest.
#[inline]
pub(crate) fn find2(a: u8, b: u8, s: &[u8]) -> Option<usize> {
    let near = s.len().min(16);
    if let Some(i) = s[..near].iter().position(|&c| c == a || c == b) {
        return Some(i);
    }
    memchr::memchr2(a, b, &s[near..]).map(|off| near + off)
}

/// Protocol version negotiated by HELLO.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Protocol {
    /// RESP2, the default for every new connection.
    #[default]
    Resp2,
    /// RESP3, selected with `HELLO 3`.
    Resp3,
}

#[cfg(test)]
mod tests {
    /// `find2` answers as memchr2 does, wherever the byte is: in its plain loop's 16 bytes, at
    /// their edge, beyond them, or nowhere.
    #[test]
    fn find2_answers_as_memchr2() {
        for len in 0..40 {
            for at in 0..=len {
                let mut s = vec![b'x'; len];
                if at < len {
                    s[at] = if at % 2 == 0 { b'\r' } else { 0 };
                }
                assert_eq!(super::find2(b'\r', 0, &s), memchr::memchr2(b'\r', 0, &s), "len {len} at {at}");
            }
        }
    }
}
