//! Property tests: no panics on arbitrary input, and decoding is independent
//! of how the input is split into reads.

use proptest::prelude::*;
use resp::{
    Bytes, BytesMut, Frame, Limits, Protocol, ProtocolError, RequestDecoder, decode_reply, encode, encode_request,
    format_double,
};

type Outcome = (Vec<Vec<Vec<u8>>>, Option<ProtocolError>);

/// Bytes biased towards protocol-significant characters so random inputs
/// actually reach the interesting branches.
fn proto_bytes(max: usize) -> impl Strategy<Value = Vec<u8>> {
    let byte = prop_oneof![
        3 => prop::sample::select(
            b"*$\r\n0123456789-+ \"'\\xaAfF\t\0:_#,(=%~>|!tn".to_vec()
        ),
        1 => any::<u8>(),
    ];
    prop::collection::vec(byte, 0..max)
}

/// Splits `input` into chunks whose sizes cycle through `sizes`.
fn chunks<'a>(input: &'a [u8], sizes: &[usize]) -> Vec<&'a [u8]> {
    let mut out = Vec::new();
    let mut rest = input;
    let mut i = 0;
    while !rest.is_empty() {
        let n = sizes[i % sizes.len()].clamp(1, rest.len());
        out.push(&rest[..n]);
        rest = &rest[n..];
        i += 1;
    }
    out
}

fn decode_requests(parts: &[&[u8]], limits: &Limits) -> Outcome {
    let mut d = RequestDecoder::new();
    let mut buf = BytesMut::new();
    let mut cmds = Vec::new();
    for part in parts {
        buf.extend_from_slice(part);
        loop {
            let _ = d.pending_bulk_remaining(&buf);
            let _ = d.in_progress();
            match d.decode(&mut buf, limits) {
                Ok(Some(args)) => {
                    assert!(!args.is_empty(), "commands always have arguments");
                    cmds.push(args.iter().map(|a| a.to_vec()).collect());
                }
                Ok(None) => break,
                Err(e) => return (cmds, Some(e)),
            }
        }
    }
    (cmds, None)
}

fn decode_replies(parts: &[&[u8]]) -> (Vec<Frame>, bool) {
    let mut buf = BytesMut::new();
    let mut frames = Vec::new();
    for part in parts {
        buf.extend_from_slice(part);
        loop {
            match decode_reply(&mut buf) {
                Ok(Some(f)) => frames.push(f),
                Ok(None) => break,
                Err(_) => return (frames, true),
            }
        }
    }
    (frames, false)
}

#[derive(Clone, Debug)]
enum Req {
    Multibulk(Vec<Vec<u8>>),
    /// Plain inline words.
    Inline(Vec<Vec<u8>>, bool),
    /// Inline with every argument double-quoted using escapes.
    Quoted(Vec<Vec<u8>>),
    Blank,
    Star0,
    StarNeg,
}

fn req() -> impl Strategy<Value = Req> {
    let word = prop::collection::vec(prop::sample::select(b"abcxyzABC0123456789*$:-_.".to_vec()), 1..8);
    let arg = prop::collection::vec(any::<u8>(), 0..40);
    prop_oneof![
        4 => prop::collection::vec(arg.clone(), 1..5).prop_map(Req::Multibulk),
        2 => (prop::collection::vec(word, 1..4), any::<bool>())
            .prop_filter("inline must not start with '*'", |(w, _)| w[0][0] != b'*')
            .prop_map(|(w, crlf)| Req::Inline(w, crlf)),
        2 => prop::collection::vec(arg, 1..4).prop_map(Req::Quoted),
        1 => Just(Req::Blank),
        1 => Just(Req::Star0),
        1 => Just(Req::StarNeg),
    ]
}

fn quote(arg: &[u8], out: &mut Vec<u8>) {
    out.push(b'"');
    for &b in arg {
        match b {
            b'"' => out.extend_from_slice(b"\\\""),
            b'\\' => out.extend_from_slice(b"\\\\"),
            b'\n' => out.extend_from_slice(b"\\n"),
            b'a'..=b'z' | b'0'..=b'9' | b' ' => out.push(b),
            _ => out.extend_from_slice(format!("\\x{b:02x}").as_bytes()),
        }
    }
    out.push(b'"');
}

fn render(reqs: &[Req]) -> (Vec<u8>, Vec<Vec<Vec<u8>>>) {
    let mut out = BytesMut::new();
    let mut expected = Vec::new();
    for r in reqs {
        match r {
            Req::Multibulk(args) => {
                encode_request(args, &mut out);
                expected.push(args.clone());
            }
            Req::Inline(words, crlf) => {
                out.extend_from_slice(&words.join(&b' '));
                out.extend_from_slice(if *crlf { b"\r\n" } else { b"\n" });
                expected.push(words.clone());
            }
            Req::Quoted(args) => {
                let mut line = b"cmd".to_vec();
                for a in args {
                    line.push(b' ');
                    quote(a, &mut line);
                }
                line.extend_from_slice(b"\r\n");
                out.extend_from_slice(&line);
                let mut cmd = vec![b"cmd".to_vec()];
                cmd.extend(args.iter().cloned());
                expected.push(cmd);
            }
            Req::Blank => out.extend_from_slice(b"\r\n"),
            Req::Star0 => out.extend_from_slice(b"*0\r\n"),
            Req::StarNeg => out.extend_from_slice(b"*-1\r\n"),
        }
    }
    (out.to_vec(), expected)
}

fn frame() -> impl Strategy<Value = Frame> {
    let bytes = prop::collection::vec(any::<u8>(), 0..20).prop_map(Bytes::from);
    let double = prop_oneof![
        any::<f64>().prop_filter("NaN never compares equal", |d| !d.is_nan()),
        Just(f64::INFINITY),
        Just(f64::NEG_INFINITY),
        Just(-0.0),
        (-1000i32..1000).prop_map(|i| f64::from(i) / 8.0),
    ];
    let leaf = prop_oneof![
        bytes.clone().prop_map(Frame::Simple),
        bytes.clone().prop_map(Frame::Error),
        any::<i64>().prop_map(Frame::Integer),
        bytes.clone().prop_map(Frame::Bulk),
        Just(Frame::Null),
        Just(Frame::NullArray),
        double.prop_map(Frame::Double),
        any::<bool>().prop_map(Frame::Boolean),
        "-?[1-9][0-9]{0,40}".prop_map(|s| Frame::BigNumber(Bytes::from(s))),
        (any::<[u8; 3]>(), bytes).prop_map(|(format, text)| Frame::Verbatim { format, text }),
    ];
    leaf.prop_recursive(4, 48, 6, |inner| {
        let pairs = prop::collection::vec((inner.clone(), inner.clone()), 0..4);
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..6).prop_map(Frame::Array),
            pairs.clone().prop_map(Frame::Map),
            prop::collection::vec(inner.clone(), 0..6).prop_map(Frame::Set),
            prop::collection::vec(inner.clone(), 0..6).prop_map(Frame::Push),
            (pairs, inner).prop_map(|(attrs, v)| Frame::Attribute { attrs, value: Box::new(v) }),
        ]
    })
}

fn no_crlf(b: &Bytes) -> Bytes {
    b.iter().map(|&c| if c == b'\r' || c == b'\n' { b' ' } else { c }).collect::<Vec<u8>>().into()
}

/// What a RESP3 client decodes after the server encodes `f`.
fn expect3(f: &Frame) -> Frame {
    match f {
        Frame::Simple(s) => Frame::Simple(no_crlf(s)),
        Frame::Error(s) => Frame::Error(no_crlf(s)),
        Frame::NullArray => Frame::Null,
        Frame::Array(v) => Frame::Array(v.iter().map(expect3).collect()),
        Frame::Set(v) => Frame::Set(v.iter().map(expect3).collect()),
        Frame::Push(v) => Frame::Push(v.iter().map(expect3).collect()),
        Frame::Map(p) => Frame::Map(p.iter().map(|(k, v)| (expect3(k), expect3(v))).collect()),
        Frame::Attribute { attrs, value } => Frame::Attribute {
            attrs: attrs.iter().map(|(k, v)| (expect3(k), expect3(v))).collect(),
            value: Box::new(expect3(value)),
        },
        other => other.clone(),
    }
}

/// What a RESP2 client decodes after the server encodes `f`.
fn expect2(f: &Frame) -> Frame {
    match f {
        Frame::Simple(s) => Frame::Simple(no_crlf(s)),
        Frame::Error(s) => Frame::Error(no_crlf(s)),
        Frame::Array(v) | Frame::Set(v) | Frame::Push(v) => Frame::Array(v.iter().map(expect2).collect()),
        Frame::Map(p) => Frame::Array(p.iter().flat_map(|(k, v)| [expect2(k), expect2(v)]).collect()),
        Frame::Double(d) => {
            let mut s = Vec::new();
            format_double(*d, &mut s);
            Frame::Bulk(s.into())
        }
        Frame::Boolean(b) => Frame::Integer(i64::from(*b)),
        Frame::BigNumber(n) => Frame::Bulk(n.clone()),
        Frame::Verbatim { text, .. } => Frame::Bulk(text.clone()),
        Frame::Attribute { value, .. } => expect2(value),
        other => other.clone(),
    }
}

proptest! {
    #[test]
    fn request_decoder_arbitrary_bytes(
        input in proto_bytes(400),
        sizes in prop::collection::vec(1usize..24, 1..8),
        auth in any::<bool>(),
    ) {
        let limits = Limits { auth_required: auth, ..Limits::default() };
        let whole = decode_requests(&[&input], &limits);
        let bytewise = decode_requests(&chunks(&input, &[1]), &limits);
        let chunked = decode_requests(&chunks(&input, &sizes), &limits);
        prop_assert_eq!(&whole, &bytewise);
        prop_assert_eq!(&whole, &chunked);
    }

    #[test]
    fn request_decoder_valid_streams(
        reqs in prop::collection::vec(req(), 0..12),
        sizes in prop::collection::vec(1usize..64, 1..8),
    ) {
        let (stream, expected) = render(&reqs);
        let limits = Limits::default();
        prop_assert_eq!(decode_requests(&[&stream], &limits), (expected.clone(), None));
        prop_assert_eq!(decode_requests(&chunks(&stream, &sizes), &limits), (expected.clone(), None));
        prop_assert_eq!(decode_requests(&chunks(&stream, &[1]), &limits), (expected, None));
    }

    #[test]
    fn split_args_never_panics(line in proto_bytes(200)) {
        let _ = resp::split_args(&line);
    }

    /// The words of any line, quoted back, split into the same words (the `inline` fuzz target).
    #[test]
    fn split_args_words_round_trip(line in proto_bytes(200)) {
        if let Some(words) = resp::split_args(&line) {
            let mut again = Vec::new();
            for w in &words {
                quote(w, &mut again);
                again.push(b' ');
            }
            prop_assert_eq!(resp::split_args(&again), Some(words));
        }
    }

    #[test]
    fn decode_reply_arbitrary_bytes(
        input in proto_bytes(400),
        sizes in prop::collection::vec(1usize..24, 1..8),
    ) {
        let whole = decode_replies(&[&input]);
        prop_assert_eq!(&whole, &decode_replies(&chunks(&input, &[1])));
        prop_assert_eq!(&whole, &decode_replies(&chunks(&input, &sizes)));
    }

    #[test]
    fn reply_round_trip(
        frames in prop::collection::vec(frame(), 1..4),
        sizes in prop::collection::vec(1usize..32, 1..8),
    ) {
        for (proto, expect) in [
            (Protocol::Resp3, expect3 as fn(&Frame) -> Frame),
            (Protocol::Resp2, expect2 as fn(&Frame) -> Frame),
        ] {
            let mut out = BytesMut::new();
            for f in &frames {
                encode(f, proto, &mut out);
            }
            let want: Vec<Frame> = frames.iter().map(expect).collect();
            prop_assert_eq!(decode_replies(&[&out]), (want.clone(), false));
            prop_assert_eq!(decode_replies(&chunks(&out, &sizes)), (want, false));
        }
    }

    #[test]
    fn double_round_trips_through_17g(d in any::<f64>()) {
        let mut s = Vec::new();
        format_double(d, &mut s);
        let back: f64 = std::str::from_utf8(&s).unwrap().parse().unwrap();
        prop_assert!(back == d || (back.is_nan() && d.is_nan()));
    }
}
