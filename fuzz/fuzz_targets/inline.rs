//! Inline commands and config lines (Redis's `sdssplitargs`) on arbitrary bytes: no panic, and the
//! words it returns, quoted back with `\xHH` escapes, split into the same words.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Some(words) = resp::split_args(data) else { return };
    let mut line = Vec::new();
    for w in &words {
        line.extend_from_slice(b"\"");
        for &b in w {
            line.extend_from_slice(format!("\\x{b:02x}").as_bytes());
        }
        line.extend_from_slice(b"\" ");
    }
    assert_eq!(resp::split_args(&line).as_ref(), Some(&words));
});
