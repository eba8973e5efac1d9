//! The reply value type shared by the server (encoding) and clients (decoding).

use bytes::Bytes;

/// A reply value (also used by clients to represent decoded replies).
///
/// The server builds replies in terms of RESP3 types; [`crate::encode`]
/// downgrades them for RESP2 clients exactly like Redis's `addReply*`
/// helpers do, so command code never needs to look at the protocol version.
#[derive(Clone, Debug, PartialEq)]
pub enum Frame {
    /// Simple string, `+OK` (payload without '+' and CRLF).
    Simple(Bytes),
    /// Error, `-ERR x` (payload without '-' and CRLF, e.g. `b"ERR syntax error"`).
    Error(Bytes),
    /// Integer, `:1`.
    Integer(i64),
    /// Bulk string, `$3\r\nfoo`.
    Bulk(Bytes),
    /// Null: RESP2 `$-1\r\n`, RESP3 `_\r\n`.
    Null,
    /// Null array: RESP2 `*-1\r\n`, RESP3 `_\r\n`.
    NullArray,
    /// Array, `*n`.
    Array(Vec<Frame>),
    /// RESP3 map `%n`; RESP2: flat array of 2n elements.
    Map(Vec<(Frame, Frame)>),
    /// RESP3 set `~n`; RESP2: array.
    Set(Vec<Frame>),
    /// RESP3 double `,`; RESP2: bulk string formatted with `%.17g`.
    Double(f64),
    /// RESP3 boolean `#t`/`#f`; RESP2: integer 1/0.
    Boolean(bool),
    /// RESP3 big number `(`; RESP2: bulk string.
    BigNumber(Bytes),
    /// RESP3 verbatim string `=` ("txt:..."); RESP2: bulk string of `text`.
    Verbatim {
        /// Three-byte format tag such as `txt` or `mkd`.
        format: [u8; 3],
        /// The text after the `fmt:` prefix.
        text: Bytes,
    },
    /// RESP3 push `>`; RESP2: array.
    Push(Vec<Frame>),
    /// RESP3 attribute `|`: the attributes, then the value they describe;
    /// RESP2: just the value.
    Attribute {
        /// Attribute key/value pairs.
        attrs: Vec<(Frame, Frame)>,
        /// The reply the attributes are attached to.
        value: Box<Frame>,
    },
    /// A reply already encoded for the protocol of the client it answers, written as it is: large
    /// replies are built this way ([`crate::BulkArray`]), at the size of their bytes on the wire
    /// rather than a frame per element. The decoder never produces it.
    Encoded(Bytes),
}

impl Frame {
    /// The `+OK` status reply.
    pub fn ok() -> Frame {
        Frame::Simple(Bytes::from_static(b"OK"))
    }

    /// A simple-string (status) reply.
    pub fn simple(s: &str) -> Frame {
        Frame::Simple(Bytes::copy_from_slice(s.as_bytes()))
    }

    /// An error reply; `msg` is the full text including the code, e.g. `"ERR syntax error"`.
    pub fn error(msg: impl Into<String>) -> Frame {
        Frame::Error(Bytes::from(msg.into()))
    }

    /// A bulk-string reply (converts into `Bytes`, copying only when the source type requires it).
    pub fn bulk(b: impl Into<Bytes>) -> Frame {
        Frame::Bulk(b.into())
    }

    /// True for [`Frame::Error`].
    pub fn is_error(&self) -> bool {
        matches!(self, Frame::Error(_))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn constructors() {
        assert_eq!(Frame::ok(), Frame::Simple(Bytes::from_static(b"OK")));
        assert_eq!(Frame::simple("PONG"), Frame::Simple(Bytes::from("PONG")));
        assert_eq!(Frame::error("ERR syntax error"), Frame::Error(Bytes::from("ERR syntax error")));
        assert_eq!(Frame::bulk(&b"abc"[..]), Frame::Bulk(Bytes::from("abc")));
        assert_eq!(Frame::bulk(vec![1u8, 2]), Frame::Bulk(Bytes::from(vec![1u8, 2])));
        assert!(Frame::error("ERR x").is_error());
        assert!(!Frame::ok().is_error());
    }
}
