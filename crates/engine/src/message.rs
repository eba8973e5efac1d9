//! Messages that answer no command of the client receiving them (pub/sub messages and
//! confirmations, MONITOR lines, tracking invalidations): encoded once, as RESP2 bytes, and shared
//! by every receiver; a RESP3 connection writes an array's first byte as `>` (a push).

use bytes::{BufMut, Bytes, BytesMut};

/// Appends `msg` (RESP2-encoded, as outboxes hold messages) to `out` as a client speaking
/// `proto` gets it: a RESP3 client's arrays are pushes.
pub fn put_message(out: &mut BytesMut, proto: resp::Protocol, msg: &[u8]) {
    if proto == resp::Protocol::Resp3 && msg.first() == Some(&b'*') {
        out.put_u8(b'>');
        out.put_slice(&msg[1..]);
    } else {
        out.put_slice(msg);
    }
}

/// Appends `$<len>\r\n<s>\r\n`.
pub fn put_bulk(out: &mut BytesMut, s: &[u8]) {
    out.put_u8(b'$');
    out.put_slice(itoa::Buffer::new().format(s.len()).as_bytes());
    out.put_slice(b"\r\n");
    out.put_slice(s);
    out.put_slice(b"\r\n");
}

/// A message as RESP2 bytes: an array of bulk strings.
pub fn encode_message(parts: &[&[u8]]) -> Bytes {
    let mut out = BytesMut::with_capacity(16 + parts.iter().map(|p| p.len() + 16).sum::<usize>());
    out.put_u8(b'*');
    out.put_slice(itoa::Buffer::new().format(parts.len()).as_bytes());
    out.put_slice(b"\r\n");
    for p in parts {
        put_bulk(&mut out, p);
    }
    out.freeze()
}
