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
mod peek;
mod reply;
mod repr;
mod request;

pub use bytes::{Bytes, BytesMut};

pub use double::{format_double, format_double_g};
pub use encode::{BulkArray, encode};
pub use frame::Frame;
pub use peek::{PEEKED_ARGS, Peeked, peek};
pub use reply::{MAX_REPLY_DEPTH, ReplyError, decode_reply, encode_request};
pub use repr::repr;
pub use request::{
    Limits, PROTO_INLINE_MAX_SIZE, PROTO_MBULK_BIG_ARG, ProtocolError, RequestDecoder, atoi, split_args, string2ll,
};

/// Protocol version negotiated by HELLO.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Protocol {
    /// RESP2, the default for every new connection.
    #[default]
    Resp2,
    /// RESP3, selected with `HELLO 3`.
    Resp3,
}
