//! The request decoder on arbitrary bytes, delivered in arbitrary pieces: it never panics, a
//! protocol error ends the connection, and every request it yields survives a round trip (encoded
//! as a client would send it, decoded again in one piece: the same arguments).
#![no_main]

use libfuzzer_sys::fuzz_target;
use resp::{BytesMut, Limits, RequestDecoder, encode_request};

fuzz_target!(|data: &[u8]| {
    let Some((&seed, input)) = data.split_first() else { return };
    // The low bits pick the piece size (1..=32 bytes, or everything at once); bit 7 is AUTH state.
    let piece = match seed & 0x3f {
        0 => input.len().max(1),
        n => (n as usize % 32) + 1,
    };
    let limits = Limits { proto_max_bulk_len: 512 * 1024 * 1024, auth_required: seed & 0x80 != 0 };
    let mut dec = RequestDecoder::new();
    let mut buf = BytesMut::new();
    for chunk in input.chunks(piece) {
        buf.extend_from_slice(chunk);
        loop {
            match dec.decode(&mut buf, &limits) {
                Ok(Some(args)) => {
                    assert!(!args.is_empty());
                    let mut wire = BytesMut::new();
                    encode_request(&args, &mut wire);
                    // Re-decoded as an authenticated client's: an inline request before AUTH may have
                    // more than the 10 arguments a multibulk one may (as in Redis).
                    let mut again = RequestDecoder::new();
                    let authed = Limits { auth_required: false, ..limits };
                    let back = again.decode(&mut wire, &authed).expect("a re-encoded request decodes");
                    assert_eq!(back.as_deref(), Some(&args[..]));
                    assert!(wire.is_empty());
                }
                Ok(None) => break,
                Err(_) => return,
            }
        }
    }
});
