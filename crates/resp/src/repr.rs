//! Redis's `sdscatrepr`: bytes quoted and escaped as redis-server and redis-cli show them (MONITOR,
//! CLIENT LIST, error messages, the Lua debugger, redis-cli's replies).

/// Appends `s` quoted and escaped like Redis's `sdscatrepr`: `"`, `\`, `\n`, `\r`, `\t`, `\a`,
/// `\b` get a backslash escape, other bytes outside printable ASCII become `\xHH`.
pub fn repr(s: &[u8], out: &mut Vec<u8>) {
    out.push(b'"');
    for &c in s {
        match c {
            b'\\' | b'"' => out.extend_from_slice(&[b'\\', c]),
            b'\n' => out.extend_from_slice(b"\\n"),
            b'\r' => out.extend_from_slice(b"\\r"),
            b'\t' => out.extend_from_slice(b"\\t"),
            0x07 => out.extend_from_slice(b"\\a"),
            0x08 => out.extend_from_slice(b"\\b"),
            0x20..=0x7e => out.push(c),
            _ => {
                const HEX: &[u8; 16] = b"0123456789abcdef";
                out.extend_from_slice(&[b'\\', b'x', HEX[usize::from(c >> 4)], HEX[usize::from(c & 15)]]);
            }
        }
    }
    out.push(b'"');
}
