//! Request decoding (client -> server): RESP multibulk and inline commands.
//!
//! Mirrors `processInputBuffer`, `processMultibulkBuffer` and
//! `processInlineBuffer` from Redis 7.0 `networking.c`, including their
//! quirks (which bytes are skipped unchecked, which limits are strict
//! inequalities, how a NUL byte stops the line search), so that clients see
//! the same results and the same error texts.

use bytes::{Buf, Bytes, BytesMut};

use crate::Frame;

/// Maximum size of an unterminated inline request or of an unterminated
/// multibulk/bulk header line (Redis `PROTO_INLINE_MAX_SIZE`).
pub const PROTO_INLINE_MAX_SIZE: usize = 64 * 1024;

/// Bulk arguments at least this long are split out of the read buffer without
/// copying (Redis `PROTO_MBULK_BIG_ARG`). Shorter ones are copied so that a
/// small key or value kept alive by the keyspace does not pin the whole
/// read-buffer allocation it arrived in, and so the read buffer stays uniquely
/// owned and can be reused in place.
pub const PROTO_MBULK_BIG_ARG: usize = 32 * 1024;

/// Multibulk counts above this are rejected for unauthenticated clients.
const UNAUTH_MAX_MULTIBULK_LEN: i64 = 10;
/// Bulk lengths above this are rejected for unauthenticated clients.
const UNAUTH_MAX_BULK_LEN: i64 = 16384;

/// Errors that make the server reply `-ERR Protocol error: ...` and close the connection.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ProtocolError {
    /// "Protocol error: too big inline request"
    TooBigInlineRequest,
    /// "Protocol error: unbalanced quotes in request"
    UnbalancedQuotes,
    /// "Protocol error: too big mbulk count string"
    TooBigMbulkCountString,
    /// "Protocol error: invalid multibulk length"
    InvalidMultibulkLength,
    /// "Protocol error: unauthenticated multibulk length"
    UnauthenticatedMultibulkLength,
    /// "Protocol error: too big bulk count string"
    TooBigBulkCountString,
    /// "Protocol error: expected '$', got '%c'"
    ExpectedDollar(u8),
    /// "Protocol error: invalid bulk length"
    InvalidBulkLength,
    /// "Protocol error: unauthenticated bulk length"
    UnauthenticatedBulkLength,
}

impl ProtocolError {
    /// The exact Redis error text as raw bytes, starting with "Protocol error: ".
    ///
    /// For [`ProtocolError::ExpectedDollar`] the offending byte is inserted
    /// verbatim (it may not be UTF-8), except that CR and LF become a space,
    /// as `addReplyErrorFormat` does.
    pub fn message_bytes(&self) -> Vec<u8> {
        let fixed: &str = match self {
            ProtocolError::TooBigInlineRequest => "Protocol error: too big inline request",
            ProtocolError::UnbalancedQuotes => "Protocol error: unbalanced quotes in request",
            ProtocolError::TooBigMbulkCountString => "Protocol error: too big mbulk count string",
            ProtocolError::InvalidMultibulkLength => "Protocol error: invalid multibulk length",
            ProtocolError::UnauthenticatedMultibulkLength => "Protocol error: unauthenticated multibulk length",
            ProtocolError::TooBigBulkCountString => "Protocol error: too big bulk count string",
            ProtocolError::InvalidBulkLength => "Protocol error: invalid bulk length",
            ProtocolError::UnauthenticatedBulkLength => "Protocol error: unauthenticated bulk length",
            ProtocolError::ExpectedDollar(b) => {
                let c = if *b == b'\r' || *b == b'\n' { b' ' } else { *b };
                let mut v = b"Protocol error: expected '$', got '".to_vec();
                v.push(c);
                v.push(b'\'');
                return v;
            }
        };
        fixed.as_bytes().to_vec()
    }

    /// The exact Redis error text, starting with "Protocol error: ".
    ///
    /// A non-ASCII byte in [`ProtocolError::ExpectedDollar`] cannot be
    /// represented in a `String` and is shown as U+FFFD; use
    /// [`ProtocolError::message_bytes`] or [`ProtocolError::to_frame`] to send
    /// the byte-exact text.
    pub fn message(&self) -> String {
        String::from_utf8_lossy(&self.message_bytes()).into_owned()
    }

    /// The byte-exact error reply Redis sends (`-ERR Protocol error: ...`).
    pub fn to_frame(&self) -> Frame {
        let mut v = b"ERR ".to_vec();
        v.extend_from_slice(&self.message_bytes());
        Frame::Error(Bytes::from(v))
    }
}

impl std::fmt::Display for ProtocolError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message())
    }
}

impl std::error::Error for ProtocolError {}

/// Limits applied while decoding requests.
#[derive(Clone, Copy, Debug)]
pub struct Limits {
    /// Largest accepted bulk argument (`proto-max-bulk-len`), default 512 MiB.
    pub proto_max_bulk_len: i64,
    /// When true (client not yet authenticated), a multibulk count > 10 and a bulk
    /// length > 16384 are rejected, as in Redis.
    pub auth_required: bool,
}

impl Default for Limits {
    fn default() -> Self {
        Limits { proto_max_bulk_len: 512 * 1024 * 1024, auth_required: false }
    }
}

/// The argument vectors a decoder keeps for reuse: a connection decodes up to this many requests
/// of a pipeline before running them (to load their keys' memory ahead), and gives each back.
pub const SPARE_VECTORS: usize = 32;

/// Incremental request decoder (client -> server). Keeps partial state between calls so a request
/// that arrives in many small reads is parsed in linear time (never re-scans from the start), and a
/// large bulk argument is split out of the buffer without copying it (`BytesMut::split_to` + `freeze`).
///
/// The caller must only append to `buf` between calls (the decoder remembers how far it has already
/// searched for a line terminator).
#[derive(Default, Debug)]
pub struct RequestDecoder {
    /// Bulk arguments still expected for the current multibulk request;
    /// zero means we are between requests.
    multibulk_remaining: usize,
    /// Length of the bulk argument whose `$<len>` header has been consumed
    /// but whose payload has not.
    bulk_len: Option<usize>,
    /// Arguments of the current multibulk request decoded so far.
    args: Vec<Bytes>,
    /// Vectors finished requests gave back ([`RequestDecoder::recycle`]), for the next ones: up to
    /// [`SPARE_VECTORS`], as many as a connection may hold decoded before they run.
    spares: Vec<Vec<Bytes>>,
    /// Number of leading bytes of the buffer already searched for the line
    /// terminator without finding it, so repeated calls with a growing,
    /// unterminated line stay linear.
    scanned: usize,
    /// The terminator search hit a NUL byte first. Redis searches with
    /// `strchr`, which stops at NUL, so such a line can never complete; it
    /// only errors once the buffer exceeds the size limit.
    scan_hit_nul: bool,
}

impl RequestDecoder {
    /// Creates a decoder in the "between requests" state.
    pub fn new() -> Self {
        Self::default()
    }

    /// Decodes the next complete request from `buf`, consuming the bytes it used.
    ///
    /// * `Ok(Some(args))` — a complete command (`args.len() >= 1`).
    /// * `Ok(None)` — need more data (or buffer empty).
    /// * `Err(e)` — protocol error; the caller replies `-ERR {e.message()}` and closes.
    ///
    /// Empty inline lines and `*0`/`*-1` multibulk headers produce no command (they are consumed
    /// and decoding continues with the rest of the buffer). Inline commands (first byte not `'*'`)
    /// are split with Redis's sdssplitargs rules (see [`split_args`]), terminated by `"\n"` or
    /// `"\r\n"`. Like Redis, the 2 bytes after a bulk payload (and after the CR of a header line)
    /// are skipped without being checked.
    pub fn decode(&mut self, buf: &mut BytesMut, limits: &Limits) -> Result<Option<Vec<Bytes>>, ProtocolError> {
        loop {
            if self.multibulk_remaining == 0 {
                let Some(&first) = buf.first() else {
                    return Ok(None);
                };
                if first == b'*' {
                    if self.scanned == 0
                        && !self.scan_hit_nul
                        && let Some(args) = self.whole_request(buf, limits)
                    {
                        return Ok(Some(args));
                    }
                    if !self.multibulk_header(buf, limits)? {
                        return Ok(None);
                    }
                    if self.multibulk_remaining == 0 {
                        // "*0" / "*-1": consumed, no command.
                        continue;
                    }
                } else {
                    match self.inline(buf)? {
                        None => return Ok(None),
                        Some(args) if args.is_empty() => continue,
                        Some(args) => return Ok(Some(args)),
                    }
                }
            }

            while self.multibulk_remaining > 0 {
                let len = match self.bulk_len {
                    Some(len) => len,
                    None => match self.bulk_header(buf, limits)? {
                        Some(len) => len,
                        None => return Ok(None),
                    },
                };
                if buf.len() < len.saturating_add(2) {
                    return Ok(None);
                }
                let arg = if len >= PROTO_MBULK_BIG_ARG {
                    buf.split_to(len).freeze()
                } else {
                    let arg = Bytes::copy_from_slice(&buf[..len]);
                    buf.advance(len);
                    arg
                };
                // The trailing CRLF is not verified (Redis doesn't either).
                buf.advance(2);
                self.bulk_len = None;
                self.reset_scan();
                self.args.push(arg);
                self.multibulk_remaining -= 1;
            }
            return Ok(Some(std::mem::take(&mut self.args)));
        }
    }

    /// The common case, read in one go: a multibulk request that is whole in `buf`, well formed, of
    /// at most [`WHOLE_MAX_ARGS`] arguments each shorter than [`PROTO_MBULK_BIG_ARG`]. A cursor walks
    /// it and the buffer is advanced once, where the general path advances it three times an
    /// argument and keeps its place in the decoder between them. Anything else (a request not all
    /// arrived, any error, a big argument, an unauthenticated client's limits) returns None having
    /// consumed nothing and changed nothing, and the general path decodes it: both answer alike
    /// (`a_whole_request_decodes_as_one_arriving_bytewise`). Runs at most once per request: a
    /// request the general path has begun is in progress, and its next calls come here no more.
    fn whole_request(&mut self, buf: &mut BytesMut, limits: &Limits) -> Option<Vec<Bytes>> {
        let b: &[u8] = buf;
        let (count, mut at) = number_line(b, 0)?;
        if !(1..=WHOLE_MAX_ARGS).contains(&count) || (count > UNAUTH_MAX_MULTIBULK_LEN && limits.auth_required) {
            return None;
        }
        let mut args = self.spares.pop().unwrap_or_default();
        args.reserve(count as usize);
        for _ in 0..count {
            let arg = (b.get(at) == Some(&b'$'))
                .then(|| number_line(b, at))
                .flatten()
                .filter(|&(len, _)| {
                    (0..PROTO_MBULK_BIG_ARG as i64).contains(&len)
                        && len <= limits.proto_max_bulk_len
                        && !(len > UNAUTH_MAX_BULK_LEN && limits.auth_required)
                })
                .map(|(len, start)| (start, start + len as usize))
                .filter(|&(_, end)| end + 2 <= b.len());
            let Some((start, end)) = arg else {
                args.clear();
                self.spares.push(args);
                return None;
            };
            args.push(Bytes::copy_from_slice(&b[start..end]));
            // The two bytes after the payload are skipped unchecked, as below.
            at = end + 2;
        }
        buf.advance(at);
        Some(args)
    }

    /// Bytes of the arguments of a partially decoded request, held until it completes (Redis's
    /// `argv_len_sum` while a multibulk request arrives): what a client holds besides its buffer.
    pub fn pending_args_bytes(&self) -> usize {
        self.args.iter().map(Bytes::len).sum()
    }

    /// Takes back the vector of a request that has run, emptied, to hold a later request's
    /// arguments (a request then costs no allocation for its vector). One of over 1024 slots
    /// (a request that long) is dropped, as preallocation never asks for more, and so is one
    /// beyond [`SPARE_VECTORS`] kept.
    pub fn recycle(&mut self, mut args: Vec<Bytes>) {
        if args.capacity() <= 1024 && self.spares.len() < SPARE_VECTORS {
            args.clear();
            self.spares.push(args);
        }
    }

    /// True when a request has been partially decoded (used for query-buffer accounting).
    pub fn in_progress(&self) -> bool {
        self.multibulk_remaining > 0
    }

    /// When a bulk argument of known length `n` is being read, returns the number of bytes still
    /// missing from `buf` to complete it, including its trailing CRLF (so the caller can `reserve`
    /// exactly once and avoid quadratic regrowth of its read buffer).
    pub fn pending_bulk_remaining(&self, buf: &BytesMut) -> Option<usize> {
        if self.multibulk_remaining == 0 {
            return None;
        }
        self.bulk_len.map(|n| n.saturating_add(2).saturating_sub(buf.len()))
    }

    fn reset_scan(&mut self) {
        self.scanned = 0;
        self.scan_hit_nul = false;
    }

    /// Finds the first `term` in `buf`, emulating C `strchr` (a NUL byte ends
    /// the search) while never searching the same bytes twice.
    fn find(&mut self, buf: &[u8], term: u8) -> Option<usize> {
        if self.scan_hit_nul {
            return None;
        }
        let start = self.scanned.min(buf.len());
        match crate::find2(term, 0, &buf[start..]) {
            Some(off) if buf[start + off] == 0 => {
                self.scan_hit_nul = true;
                self.scanned = buf.len();
                None
            }
            Some(off) => {
                self.scanned = start + off;
                Some(start + off)
            }
            None => {
                self.scanned = buf.len();
                None
            }
        }
    }

    /// Locates a complete `<prefix><number>\r?` header line. Returns the
    /// index of the CR, or None if more data is needed; `too_big` is returned
    /// when no CR is found and the buffer exceeds the inline limit.
    fn header_line(&mut self, buf: &[u8], too_big: ProtocolError) -> Result<Option<usize>, ProtocolError> {
        match self.find(buf, b'\r') {
            None => {
                if buf.len() > PROTO_INLINE_MAX_SIZE {
                    Err(too_big)
                } else {
                    Ok(None)
                }
            }
            // Redis only requires one more byte after the CR and skips it
            // without checking that it is LF.
            Some(cr) if cr + 2 > buf.len() => Ok(None),
            Some(cr) => Ok(Some(cr)),
        }
    }

    /// Parses `*<count>\r\n`. Returns false when more data is needed.
    fn multibulk_header(&mut self, buf: &mut BytesMut, limits: &Limits) -> Result<bool, ProtocolError> {
        let Some(cr) = self.header_line(buf, ProtocolError::TooBigMbulkCountString)? else {
            return Ok(false);
        };
        let count = match string2ll(&buf[1..cr]) {
            Some(n) if n <= i64::from(i32::MAX) => n,
            _ => return Err(ProtocolError::InvalidMultibulkLength),
        };
        if count > UNAUTH_MAX_MULTIBULK_LEN && limits.auth_required {
            return Err(ProtocolError::UnauthenticatedMultibulkLength);
        }
        buf.advance(cr + 2);
        self.reset_scan();
        if count > 0 {
            // count <= i32::MAX, so this conversion cannot fail on any
            // platform with at least 32-bit usize.
            self.multibulk_remaining = usize::try_from(count).unwrap_or(usize::MAX);
            self.bulk_len = None;
            // Like Redis, don't trust the count for preallocation.
            self.args = self.spares.pop().unwrap_or_default();
            self.args.reserve(self.multibulk_remaining.min(1024));
        }
        Ok(true)
    }

    /// Parses `$<len>\r\n`, returning the bulk length (also stored in
    /// `self.bulk_len`), or None when more data is needed.
    fn bulk_header(&mut self, buf: &mut BytesMut, limits: &Limits) -> Result<Option<usize>, ProtocolError> {
        let Some(cr) = self.header_line(buf, ProtocolError::TooBigBulkCountString)? else {
            return Ok(None);
        };
        if buf[0] != b'$' {
            return Err(ProtocolError::ExpectedDollar(buf[0]));
        }
        let len = match string2ll(&buf[1..cr]) {
            Some(n) if n >= 0 && n <= limits.proto_max_bulk_len => n,
            _ => return Err(ProtocolError::InvalidBulkLength),
        };
        if len > UNAUTH_MAX_BULK_LEN && limits.auth_required {
            return Err(ProtocolError::UnauthenticatedBulkLength);
        }
        let len = usize::try_from(len).map_err(|_| ProtocolError::InvalidBulkLength)?;
        buf.advance(cr + 2);
        self.reset_scan();
        self.bulk_len = Some(len);
        Ok(Some(len))
    }

    /// Parses one inline command line. Returns None when more data is
    /// needed, Some(empty) for a blank line.
    fn inline(&mut self, buf: &mut BytesMut) -> Result<Option<Vec<Bytes>>, ProtocolError> {
        let Some(nl) = self.find(buf, b'\n') else {
            if buf.len() > PROTO_INLINE_MAX_SIZE {
                return Err(ProtocolError::TooBigInlineRequest);
            }
            return Ok(None);
        };
        let end = if nl > 0 && buf[nl - 1] == b'\r' { nl - 1 } else { nl };
        let args = split_args(&buf[..end]).ok_or(ProtocolError::UnbalancedQuotes)?;
        buf.advance(nl + 1);
        self.reset_scan();
        Ok(Some(args.into_iter().map(Bytes::from).collect()))
    }
}

/// Requests of more arguments than this take the general path (`RequestDecoder::whole_request`).
const WHOLE_MAX_ARGS: i64 = 1024;

/// A header line at `at` (its prefix byte, `*` or `$`, not checked) in the plainest form: 1 to 10
/// digits with no leading zero (or a lone `0`), then a CR and one more byte. Its number and where
/// the next line begins; None for any other line, which the general path then reads (the same line
/// there gives the same number: its CR is the first byte after the digits, and `string2ll` accepts
/// such digits as they are).
#[inline(always)]
pub(crate) fn number_line(b: &[u8], at: usize) -> Option<(i64, usize)> {
    // One or two digits (argument counts, names, keys, small values) read without the loop.
    match b.get(at + 1..at + 5) {
        Some(&[d @ b'0'..=b'9', b'\r', _, _]) => return Some((i64::from(d - b'0'), at + 4)),
        Some(&[d @ b'1'..=b'9', e @ b'0'..=b'9', b'\r', _]) => {
            return Some((i64::from(d - b'0') * 10 + i64::from(e - b'0'), at + 5));
        }
        _ => {}
    }
    number_line_loop(b, at)
}

/// [`number_line`] digit by digit (out of line, so that the shortcut inlines where it is read).
#[inline(never)]
fn number_line_loop(b: &[u8], at: usize) -> Option<(i64, usize)> {
    let first = at + 1;
    let mut i = first;
    let mut v: i64 = 0;
    loop {
        match *b.get(i)? {
            c @ b'0'..=b'9' if i - first < 10 && (i == first || v != 0) => v = v * 10 + i64::from(c - b'0'),
            b'\r' if i > first && i + 2 <= b.len() => return Some((v, i + 2)),
            _ => return None,
        }
        i += 1;
    }
}

/// C's `atoi`, as Redis uses it where it does not validate (DEBUG switches) and redis-cli for
/// ports and db numbers: leading blanks, an optional sign, then as many digits as there are; 0 when
/// there are none. Saturates where C would overflow.
pub fn atoi(s: &[u8]) -> i64 {
    let start = s.iter().position(|b| !b.is_ascii_whitespace()).unwrap_or(s.len());
    let t = &s[start..];
    let (neg, digits) = match t.first() {
        Some(b'-') => (true, &t[1..]),
        Some(b'+') => (false, &t[1..]),
        _ => (false, t),
    };
    let mut v: i64 = 0;
    for &c in digits.iter().take_while(|c| c.is_ascii_digit()) {
        v = v.saturating_mul(10).saturating_add(i64::from(c - b'0'));
    }
    if neg { -v } else { v }
}

/// Parses a signed 64-bit integer with Redis's strict `string2ll` rules: an
/// optional `-`, then digits with no leading zeros (except the string `"0"`),
/// no `+`, no spaces, fewer than 21 bytes, and a value that fits in `i64`.
pub fn string2ll(s: &[u8]) -> Option<i64> {
    // LONG_STR_SIZE in Redis is 21: longer strings are rejected outright.
    if s.is_empty() || s.len() >= 21 {
        return None;
    }
    if s == b"0" {
        return Some(0);
    }
    let (negative, digits) = match s.split_first() {
        Some((b'-', rest)) => (true, rest),
        _ => (false, s),
    };
    match digits.first() {
        Some(b'1'..=b'9') => {}
        _ => return None,
    }
    let mut v: u64 = 0;
    for &c in digits {
        if !c.is_ascii_digit() {
            return None;
        }
        v = v.checked_mul(10)?.checked_add(u64::from(c - b'0'))?;
    }
    if negative {
        if v > i64::MAX as u64 + 1 {
            return None;
        }
        Some((v as i64).wrapping_neg())
    } else {
        i64::try_from(v).ok()
    }
}

/// C `isspace` in the "C" locale.
fn is_c_space(c: u8) -> bool {
    matches!(c, b' ' | b'\t' | b'\n' | 0x0b | 0x0c | b'\r')
}

fn hex_val(c: u8) -> Option<u8> {
    match c {
        b'0'..=b'9' => Some(c - b'0'),
        b'a'..=b'f' => Some(c - b'a' + 10),
        b'A'..=b'F' => Some(c - b'A' + 10),
        _ => None,
    }
}

/// Splits a line into arguments exactly like Redis's sdssplitargs (used for inline commands,
/// config files and the CLI). Returns None on unbalanced quotes.
///
/// Rules: arguments are separated by whitespace; `"double quotes"` support `\xHH`, `\n`, `\r`,
/// `\t`, `\b`, `\a` and `\<any>` escapes; `'single quotes'` support only `\'`; a closing quote
/// must be followed by whitespace or the end of the line. Like the C original, which works on
/// NUL-terminated strings, the line ends at its first NUL byte.
pub fn split_args(line: &[u8]) -> Option<Vec<Vec<u8>>> {
    let line = match memchr::memchr(0, line) {
        Some(n) => &line[..n],
        None => line,
    };
    // Reading past the end yields NUL, which is exactly what the C code sees.
    let at = |k: usize| line.get(k).copied().unwrap_or(0);
    let mut args = Vec::new();
    let mut p = 0;
    loop {
        while is_c_space(at(p)) {
            p += 1;
        }
        if at(p) == 0 {
            return Some(args);
        }
        let mut in_dq = false;
        let mut in_sq = false;
        let mut cur = Vec::new();
        loop {
            let c = at(p);
            if in_dq {
                if c == b'\\'
                    && at(p + 1) == b'x'
                    && let (Some(h), Some(l)) = (hex_val(at(p + 2)), hex_val(at(p + 3)))
                {
                    cur.push(h * 16 + l);
                    p += 4;
                    continue;
                }
                if c == b'\\' && at(p + 1) != 0 {
                    p += 1;
                    cur.push(match at(p) {
                        b'n' => b'\n',
                        b'r' => b'\r',
                        b't' => b'\t',
                        b'b' => 0x08,
                        b'a' => 0x07,
                        other => other,
                    });
                } else if c == b'"' {
                    // The closing quote must be followed by a space or nothing.
                    if at(p + 1) != 0 && !is_c_space(at(p + 1)) {
                        return None;
                    }
                    p += 1;
                    break;
                } else if c == 0 {
                    return None;
                } else {
                    cur.push(c);
                }
            } else if in_sq {
                if c == b'\\' && at(p + 1) == b'\'' {
                    p += 1;
                    cur.push(b'\'');
                } else if c == b'\'' {
                    if at(p + 1) != 0 && !is_c_space(at(p + 1)) {
                        return None;
                    }
                    p += 1;
                    break;
                } else if c == 0 {
                    return None;
                } else {
                    cur.push(c);
                }
            } else {
                match c {
                    b' ' | b'\n' | b'\r' | b'\t' | 0 => {
                        if c != 0 {
                            p += 1;
                        }
                        break;
                    }
                    b'"' => in_dq = true,
                    b'\'' => in_sq = true,
                    _ => cur.push(c),
                }
            }
            p += 1;
        }
        args.push(cur);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    type Cmd = Vec<Vec<u8>>;

    #[test]
    fn short_number_lines_read_as_the_loop_reads_them() {
        // Every line of up to 6 bytes after the prefix from an alphabet of digits, CR, LF and
        // others: the shortcut for one and two digits answers as the loop does.
        let alphabet = b"0159\r\nx";
        let mut taken = 0;
        for len in 0..=6u32 {
            for mut n in 0..alphabet.len().pow(len) {
                let mut line = vec![b'$'];
                for _ in 0..len {
                    line.push(alphabet[n % alphabet.len()]);
                    n /= alphabet.len();
                }
                let got = number_line(&line, 0);
                assert_eq!(got, number_line_loop(&line, 0), "{:?}", String::from_utf8_lossy(&line));
                taken += usize::from(got.is_some());
            }
        }
        assert!(taken > 100, "the alphabet makes numbers: {taken}");
    }

    fn cmd(args: &[&[u8]]) -> Cmd {
        args.iter().map(|a| a.to_vec()).collect()
    }

    /// Decodes everything in `input` fed at once, returning commands and the
    /// terminal error (if any).
    fn decode_all(input: &[u8], limits: &Limits) -> (Vec<Cmd>, Option<ProtocolError>) {
        let mut d = RequestDecoder::new();
        let mut buf = BytesMut::from(input);
        let mut out = Vec::new();
        loop {
            match d.decode(&mut buf, limits) {
                Ok(Some(args)) => {
                    assert!(!args.is_empty());
                    out.push(args.iter().map(|a| a.to_vec()).collect());
                }
                Ok(None) => return (out, None),
                Err(e) => return (out, Some(e)),
            }
        }
    }

    /// Same, but feeding one byte at a time.
    fn decode_bytewise(input: &[u8], limits: &Limits) -> (Vec<Cmd>, Option<ProtocolError>) {
        let mut d = RequestDecoder::new();
        let mut buf = BytesMut::new();
        let mut out = Vec::new();
        for &b in input {
            buf.extend_from_slice(&[b]);
            loop {
                match d.decode(&mut buf, limits) {
                    Ok(Some(args)) => out.push(args.iter().map(|a| a.to_vec()).collect()),
                    Ok(None) => break,
                    Err(e) => return (out, Some(e)),
                }
            }
        }
        (out, None)
    }

    fn ok(input: &[u8]) -> Vec<Cmd> {
        let (cmds, err) = decode_all(input, &Limits::default());
        assert_eq!(err, None, "input {:?}", String::from_utf8_lossy(input));
        assert_eq!(decode_bytewise(input, &Limits::default()), (cmds.clone(), None));
        cmds
    }

    fn err(input: &[u8], limits: &Limits) -> ProtocolError {
        let (_, e) = decode_all(input, limits);
        e.expect("expected a protocol error")
    }

    #[test]
    fn error_messages_are_exact() {
        let cases = [
            (ProtocolError::TooBigInlineRequest, "Protocol error: too big inline request"),
            (ProtocolError::UnbalancedQuotes, "Protocol error: unbalanced quotes in request"),
            (ProtocolError::TooBigMbulkCountString, "Protocol error: too big mbulk count string"),
            (ProtocolError::InvalidMultibulkLength, "Protocol error: invalid multibulk length"),
            (ProtocolError::UnauthenticatedMultibulkLength, "Protocol error: unauthenticated multibulk length"),
            (ProtocolError::TooBigBulkCountString, "Protocol error: too big bulk count string"),
            (ProtocolError::ExpectedDollar(b'f'), "Protocol error: expected '$', got 'f'"),
            (ProtocolError::ExpectedDollar(b'\r'), "Protocol error: expected '$', got ' '"),
            (ProtocolError::InvalidBulkLength, "Protocol error: invalid bulk length"),
            (ProtocolError::UnauthenticatedBulkLength, "Protocol error: unauthenticated bulk length"),
        ];
        for (e, msg) in cases {
            assert_eq!(e.message(), msg);
            assert_eq!(e.to_string(), msg);
            assert_eq!(e.message_bytes(), msg.as_bytes());
            assert_eq!(e.to_frame(), Frame::error(format!("ERR {msg}")));
        }
        assert_eq!(ProtocolError::ExpectedDollar(0xff).message_bytes(), b"Protocol error: expected '$', got '\xff'");
    }

    #[test]
    fn multibulk_basic() {
        assert_eq!(
            ok(b"*3\r\n$3\r\nSET\r\n$3\r\nfoo\r\n$0\r\n\r\n*1\r\n$4\r\nPING\r\n"),
            vec![cmd(&[b"SET", b"foo", b""]), cmd(&[b"PING"])]
        );
    }

    #[test]
    fn multibulk_empty_and_negative_counts_produce_nothing() {
        assert_eq!(ok(b"*0\r\n*-1\r\n*-10\r\n*1\r\n$4\r\nPING\r\n"), vec![cmd(&[b"PING"])]);
        let mut d = RequestDecoder::new();
        let mut buf = BytesMut::from(&b"*0\r\n*-1\r\n"[..]);
        assert_eq!(d.decode(&mut buf, &Limits::default()), Ok(None));
        assert!(buf.is_empty());
        assert!(!d.in_progress());
    }

    #[test]
    fn bytes_after_cr_and_payload_are_not_checked() {
        // Redis skips the byte after '\r' and the two bytes after a payload blindly.
        assert_eq!(ok(b"*1\rX$4\rYPINGab"), vec![cmd(&[b"PING"])]);
    }

    #[test]
    fn multibulk_count_errors() {
        let l = Limits::default();
        assert_eq!(err(b"*3000000000\r\n", &l), ProtocolError::InvalidMultibulkLength);
        assert_eq!(err(b"*2147483648\r\n", &l), ProtocolError::InvalidMultibulkLength);
        assert_eq!(err(b"*abc\r\n", &l), ProtocolError::InvalidMultibulkLength);
        assert_eq!(err(b"*\r\n", &l), ProtocolError::InvalidMultibulkLength);
        assert_eq!(err(b"*+1\r\n", &l), ProtocolError::InvalidMultibulkLength);
        assert_eq!(err(b"*01\r\n", &l), ProtocolError::InvalidMultibulkLength);
        assert_eq!(err(b"* 1\r\n", &l), ProtocolError::InvalidMultibulkLength);
        assert_eq!(err(b"*-0\r\n", &l), ProtocolError::InvalidMultibulkLength);
        assert_eq!(err(b"*1\n\r\n", &l), ProtocolError::InvalidMultibulkLength);
        // i32::MAX itself is accepted (and then waits for data).
        assert_eq!(decode_all(b"*2147483647\r\n", &l), (vec![], None));
    }

    #[test]
    fn unauthenticated_limits() {
        let auth = Limits { auth_required: true, ..Limits::default() };
        assert_eq!(err(b"*11\r\n", &auth), ProtocolError::UnauthenticatedMultibulkLength);
        assert_eq!(decode_all(b"*10\r\n", &auth), (vec![], None));
        assert_eq!(err(b"*1\r\n$16385\r\n", &auth), ProtocolError::UnauthenticatedBulkLength);
        assert_eq!(decode_all(b"*1\r\n$16384\r\n", &auth), (vec![], None));
        // Invalid counts are reported as invalid even when unauthenticated.
        assert_eq!(err(b"*x\r\n", &auth), ProtocolError::InvalidMultibulkLength);
        assert_eq!(err(b"*1\r\n$-1\r\n", &auth), ProtocolError::InvalidBulkLength);
        // Without auth_required the same input is fine.
        assert_eq!(decode_all(b"*11\r\n", &Limits::default()), (vec![], None));
    }

    #[test]
    fn bulk_header_errors() {
        let l = Limits::default();
        assert_eq!(err(b"*3\r\n$3\r\nSET\r\n$1\r\nx\r\nfooz\r\n", &l), ProtocolError::ExpectedDollar(b'f'));
        assert_eq!(err(b"*1\r\nfoo\r\n", &l), ProtocolError::ExpectedDollar(b'f'));
        assert_eq!(err(b"*1\r\n\r\n", &l), ProtocolError::ExpectedDollar(b'\r'));
        assert_eq!(err(b"*3\r\n$3\r\nSET\r\n$1\r\nx\r\n$-10\r\n", &l), ProtocolError::InvalidBulkLength);
        assert_eq!(err(b"*3\r\n$3\r\nSET\r\n$1\r\nx\r\n$2000000000\r\n", &l), ProtocolError::InvalidBulkLength);
        assert_eq!(err(b"*1\r\n$blabla\r\n", &l), ProtocolError::InvalidBulkLength);
        assert_eq!(err(b"*1\r\n$\r\n", &l), ProtocolError::InvalidBulkLength);
        assert_eq!(err(b"*1\r\n$-1\r\n", &l), ProtocolError::InvalidBulkLength);
        let small = Limits { proto_max_bulk_len: 10, ..Limits::default() };
        assert_eq!(err(b"*1\r\n$11\r\n", &small), ProtocolError::InvalidBulkLength);
        assert_eq!(decode_all(b"*1\r\n$10\r\n0123456789\r\n", &small).0.len(), 1);
        // The "$" check only happens once the header line is complete.
        assert_eq!(decode_all(b"*1\r\nfoo", &l), (vec![], None));
    }

    #[test]
    fn too_big_header_lines() {
        let l = Limits::default();
        let mut big = b"*".to_vec();
        big.extend(std::iter::repeat_n(b'1', PROTO_INLINE_MAX_SIZE));
        // Exactly 64 KiB + 1 unterminated bytes: error (Redis uses '>').
        assert_eq!(err(&big, &l), ProtocolError::TooBigMbulkCountString);
        // 64 KiB: still waiting.
        assert_eq!(decode_all(&big[..PROTO_INLINE_MAX_SIZE], &l), (vec![], None));

        let mut big = b"*1\r\n$".to_vec();
        big.extend(std::iter::repeat_n(b'1', PROTO_INLINE_MAX_SIZE));
        assert_eq!(err(&big, &l), ProtocolError::TooBigBulkCountString);
        assert_eq!(decode_all(&big[..PROTO_INLINE_MAX_SIZE + 4], &l), (vec![], None));

        // A terminated but long count line is parsed (and rejected as invalid).
        let mut big = b"*".to_vec();
        big.extend(std::iter::repeat_n(b'1', 70_000));
        big.extend_from_slice(b"\r\n");
        assert_eq!(err(&big, &l), ProtocolError::InvalidMultibulkLength);
    }

    /// Pieces of a request stream: whole requests (arguments of any bytes, short and at the big
    /// argument's edge), the odd inline line, and the damage a buggy client sends.
    fn stream_piece() -> impl proptest::strategy::Strategy<Value = Vec<u8>> {
        use proptest::prelude::*;
        let arg = prop_oneof![
            4 => proptest::collection::vec(any::<u8>(), 0..12),
            1 => proptest::collection::vec(prop_oneof![Just(b'\r'), Just(b'\n'), Just(0u8), Just(b'$')], 0..6),
            1 => (PROTO_MBULK_BIG_ARG - 2..PROTO_MBULK_BIG_ARG + 2).prop_map(|n| vec![b'x'; n]),
        ];
        let request = proptest::collection::vec(arg, 1..14).prop_map(|args| {
            let mut out = format!("*{}\r\n", args.len()).into_bytes();
            for a in args {
                out.extend_from_slice(format!("${}\r\n", a.len()).as_bytes());
                out.extend_from_slice(&a);
                out.extend_from_slice(b"\r\n");
            }
            out
        });
        let damage = prop_oneof![
            Just(b"*0\r\n".to_vec()),
            Just(b"*-1\r\n".to_vec()),
            Just(b"*12\r\n".to_vec()),
            Just(b"*1025\r\n".to_vec()),
            Just(b"*2\r\n$3\r\nGET\r\n".to_vec()),
            Just(b"$20000\r\n".to_vec()),
            Just(b"*1\r\n$-1\r\n".to_vec()),
            Just(b"*1\rX$4\rYPINGab".to_vec()),
            Just(b"*1\0\r\n".to_vec()),
            Just(b"*01\r\n$1\r\na\r\n".to_vec()),
            Just(b"*1\r\n$03\r\nabc\r\n".to_vec()),
            Just(b"*1\r\n$+3\r\nabc\r\n".to_vec()),
            Just(b"*1\r\n$00000000003\r\nabc\r\n".to_vec()),
            Just(b"*1\r\n$3 \r\nabc\r\n".to_vec()),
            Just(b"PING\r\n".to_vec()),
            Just(b"\r\n".to_vec()),
            proptest::collection::vec(any::<u8>(), 1..8),
        ];
        prop_oneof![6 => request, 1 => damage]
    }

    proptest::proptest! {
        /// Requests that arrive whole take the one-pass path (`whole_request`); the same bytes fed
        /// one at a time never do, as a request is never whole before its last byte. Both give the
        /// same commands and the same error, under each client's limits.
        #[test]
        fn a_whole_request_decodes_as_one_arriving_bytewise(
            pieces in proptest::collection::vec(stream_piece(), 1..8),
            auth in proptest::bool::ANY,
            small in proptest::bool::ANY,
        ) {
            let input = pieces.concat();
            let limits = Limits { proto_max_bulk_len: if small { 5 } else { 512 << 20 }, auth_required: auth };
            proptest::prop_assert_eq!(decode_all(&input, &limits), decode_bytewise(&input, &limits));
        }
    }

    #[test]
    fn whole_requests_in_one_buffer_leave_nothing_behind() {
        let mut d = RequestDecoder::new();
        let mut buf = BytesMut::from(&b"*2\r\n$3\r\nGET\r\n$1\r\nk\r\n*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$1\r\nv"[..]);
        let l = Limits::default();
        let first = d.decode(&mut buf, &l).unwrap().unwrap();
        assert_eq!(first, vec![Bytes::from("GET"), Bytes::from("k")]);
        d.recycle(first);
        // The second lacks its last CRLF: it waits, in progress, and completes when the rest comes.
        assert_eq!(d.decode(&mut buf, &l), Ok(None));
        assert!(d.in_progress());
        buf.extend_from_slice(b"\r\n");
        let second = d.decode(&mut buf, &l).unwrap().unwrap();
        assert_eq!(second, vec![Bytes::from("SET"), Bytes::from("k"), Bytes::from("v")]);
        assert!(buf.is_empty() && !d.in_progress());
    }

    #[test]
    fn nul_stops_line_search_like_strchr() {
        let l = Limits::default();
        // Redis never finds the CR after a NUL, so the header never completes.
        assert_eq!(decode_all(b"*1\0\r\n$4\r\nPING\r\n", &l), (vec![], None));
        assert_eq!(decode_all(b"PING\0\n", &l), (vec![], None));
        // The same beyond the first 16 bytes of a line (past `find2`'s plain loop, where memchr looks),
        // whole or a byte at a time.
        for pad in [0, 10, 11, 12, 30, 100] {
            let line = |end: &[u8]| [&b"ECHO abc"[..], &vec![b' '; pad], end].concat();
            let ok = vec![vec![b"ECHO".to_vec(), b"abc".to_vec()]];
            assert_eq!(decode_all(&line(b"\r\n"), &l), (ok.clone(), None), "pad {pad}");
            assert_eq!(decode_bytewise(&line(b"\r\n"), &l), (ok, None), "pad {pad}");
            assert_eq!(decode_all(&line(b"\0\r\n"), &l), (vec![], None), "pad {pad}");
            assert_eq!(decode_bytewise(&line(b"\0\r\n"), &l), (vec![], None), "pad {pad}");
        }
        // Desync regression test from the Redis suite: NUL then lots of data.
        for prefix in [&b"\x00"[..], b"*\x00", b"$\x00"] {
            let mut input = prefix.to_vec();
            input.extend(std::iter::repeat_n(b"payload\n"[0], 70_000));
            input.extend_from_slice(b"\r\n\n");
            let e = err(&input, &l);
            assert!(matches!(e, ProtocolError::TooBigInlineRequest | ProtocolError::TooBigMbulkCountString), "{e:?}");
        }
    }

    #[test]
    fn inline_commands() {
        assert_eq!(ok(b"PING\r\n"), vec![cmd(&[b"PING"])]);
        assert_eq!(ok(b"PING\n"), vec![cmd(&[b"PING"])]);
        assert_eq!(ok(b"  set a   b  \r\n"), vec![cmd(&[b"set", b"a", b"b"])]);
        assert_eq!(ok(b"set \"foo bar\" 'x\\'y' \"\\x41\\n\"\r\n"), vec![cmd(&[b"set", b"foo bar", b"x'y", b"A\n"])]);
        // Empty lines produce no command.
        assert_eq!(ok(b"\r\n\n   \r\nPING\r\n"), vec![cmd(&[b"PING"])]);
        // '*' only matters as the first byte.
        assert_eq!(ok(b"get *\r\n"), vec![cmd(&[b"get", b"*"])]);
        // Mixed inline and multibulk.
        assert_eq!(
            ok(b"PING\r\n*1\r\n$4\r\nPING\r\necho x\n"),
            vec![cmd(&[b"PING"]), cmd(&[b"PING"]), cmd(&[b"echo", b"x"])]
        );
        // A lone '\r' before '\n' is stripped; others stay as separators.
        assert_eq!(ok(b"a\rb\r\n"), vec![cmd(&[b"a", b"b"])]);
    }

    #[test]
    fn inline_errors() {
        let l = Limits::default();
        assert_eq!(err(b"set \"\"\"test-key\"\"\" test-value\r\nping\r\n", &l), ProtocolError::UnbalancedQuotes);
        assert_eq!(err(b"set \"abc\r\n", &l), ProtocolError::UnbalancedQuotes);
        assert_eq!(err(b"set 'abc\r\n", &l), ProtocolError::UnbalancedQuotes);
        let mut big = vec![b'a'; PROTO_INLINE_MAX_SIZE + 1];
        assert_eq!(err(&big, &l), ProtocolError::TooBigInlineRequest);
        big.pop();
        assert_eq!(decode_all(&big, &l), (vec![], None));
        // A long line that is already terminated is fine, like in Redis.
        let mut big = vec![b'a'; 100_000];
        big.push(b'\n');
        assert_eq!(decode_all(&big, &l).0.len(), 1);
    }

    #[test]
    fn split_args_rules() {
        let s = |x: &[u8]| split_args(x);
        assert_eq!(s(b""), Some(vec![]));
        assert_eq!(s(b"   \t "), Some(vec![]));
        assert_eq!(s(b"a b"), Some(cmd(&[b"a", b"b"])));
        assert_eq!(s(b"\"\""), Some(cmd(&[b""])));
        assert_eq!(s(b"''"), Some(cmd(&[b""])));
        assert_eq!(s(b"\"\\n\\r\\t\\b\\a\\z\\\\\\\"\""), Some(cmd(&[b"\n\r\t\x08\x07z\\\""])));
        assert_eq!(s(b"\"\\x4a\\x4B\\xzz\\x4\""), Some(cmd(&[b"JKxzzx4"])));
        assert_eq!(s(b"\"\\x00\""), Some(cmd(&[b"\0"])));
        assert_eq!(s(b"'a\\nb\\'c'"), Some(cmd(&[b"a\\nb'c"])));
        // Quotes may start mid-token; the closing one must end it.
        assert_eq!(s(b"foo\"bar baz\""), Some(cmd(&[b"foobar baz"])));
        assert_eq!(s(b"\"foo\"bar"), None);
        assert_eq!(s(b"'foo'bar"), None);
        assert_eq!(s(b"\"foo\"\x0bbar"), Some(cmd(&[b"foo", b"bar"])));
        // Vertical tab / form feed do not split unquoted tokens but are skipped between them.
        assert_eq!(s(b"a\x0bb \x0cc"), Some(cmd(&[b"a\x0bb", b"c"])));
        assert_eq!(s(b"\"abc"), None);
        assert_eq!(s(b"\"abc\\"), None);
        assert_eq!(s(b"'abc"), None);
        // C-string semantics: the line ends at NUL.
        assert_eq!(s(b"a b\0c d"), Some(cmd(&[b"a", b"b"])));
        assert_eq!(s(b"\"a\0\""), None);
        assert_eq!(s(b"\xff\xfe"), Some(cmd(&[b"\xff\xfe"])));
    }

    #[test]
    fn pending_args_are_counted_until_the_request_completes() {
        let mut d = RequestDecoder::new();
        let mut buf = BytesMut::from(&b"*3\r\n$3\r\nSET\r\n$5\r\nhello\r\n$2\r\nw"[..]);
        assert_eq!(d.decode(&mut buf, &Limits::default()), Ok(None));
        assert_eq!(d.pending_args_bytes(), 8);
        buf.extend_from_slice(b"o\r\n");
        assert!(d.decode(&mut buf, &Limits::default()).unwrap().is_some());
        assert_eq!(d.pending_args_bytes(), 0);
    }

    #[test]
    fn c_atoi() {
        assert_eq!(atoi(b"12abc"), 12);
        assert_eq!(atoi(b" -3"), -3);
        assert_eq!(atoi(b"+7"), 7);
        assert_eq!(atoi(b"x"), 0);
        assert_eq!(atoi(b""), 0);
        assert_eq!(atoi(b"99999999999999999999"), i64::MAX);
    }

    #[test]
    fn string2ll_rules() {
        assert_eq!(string2ll(b"0"), Some(0));
        assert_eq!(string2ll(b"-1"), Some(-1));
        assert_eq!(string2ll(b"9223372036854775807"), Some(i64::MAX));
        assert_eq!(string2ll(b"-9223372036854775808"), Some(i64::MIN));
        assert_eq!(string2ll(b"9223372036854775808"), None);
        assert_eq!(string2ll(b"-9223372036854775809"), None);
        assert_eq!(string2ll(b"99999999999999999999"), None);
        for bad in [&b""[..], b"-", b"+1", b"01", b"-0", b" 1", b"1 ", b"1a", b"00"] {
            assert_eq!(string2ll(bad), None, "{:?}", String::from_utf8_lossy(bad));
        }
    }

    #[test]
    fn split_reads_byte_by_byte() {
        let input = b"*2\r\n$4\r\nECHO\r\n$11\r\nhello world\r\nPING\r\n\r\n*0\r\n\
                      set \"a b\" c\n*1\r\n$4\r\nQUIT\r\n";
        let cmds = ok(input);
        assert_eq!(
            cmds,
            vec![cmd(&[b"ECHO", b"hello world"]), cmd(&[b"PING"]), cmd(&[b"set", b"a b", b"c"]), cmd(&[b"QUIT"]),]
        );
    }

    #[test]
    fn large_arg_across_reads_is_zero_copy() {
        let n = 1 << 20;
        let payload: Vec<u8> = (0..n).map(|i| (i % 251) as u8).collect();
        let mut stream = format!("*2\r\n$3\r\nSET\r\n${n}\r\n").into_bytes();
        stream.extend_from_slice(&payload);
        stream.extend_from_slice(b"\r\n");

        let l = Limits::default();
        let mut d = RequestDecoder::new();
        let mut buf = BytesMut::new();
        let mut result = None;
        let mut reserved_once = false;
        for chunk in stream.chunks(7919) {
            if let Some(missing) = d.pending_bulk_remaining(&buf) {
                assert!(d.in_progress());
                if !reserved_once {
                    assert_eq!(missing, n + 2 - buf.len());
                    buf.reserve(missing);
                    reserved_once = true;
                }
            }
            buf.extend_from_slice(chunk);
            if let Some(args) = d.decode(&mut buf, &l).unwrap() {
                result = Some(args);
            }
        }
        assert!(reserved_once);
        let args = result.expect("command decoded");
        assert_eq!(args.len(), 2);
        assert_eq!(&args[0][..], b"SET");
        assert_eq!(&args[1][..], &payload[..]);
        assert!(buf.is_empty());
        assert!(!d.in_progress());
        assert_eq!(d.pending_bulk_remaining(&buf), None);
    }

    #[test]
    fn partial_state_is_kept() {
        let l = Limits::default();
        let mut d = RequestDecoder::new();
        let mut buf = BytesMut::from(&b"*2\r\n$3\r\nGET\r\n$3\r\nk"[..]);
        assert_eq!(d.decode(&mut buf, &l), Ok(None));
        assert!(d.in_progress());
        // The parsed argument and headers were consumed.
        assert_eq!(&buf[..], b"k");
        assert_eq!(d.pending_bulk_remaining(&buf), Some(4));
        buf.extend_from_slice(b"ey\r\n");
        let args = d.decode(&mut buf, &l).unwrap().unwrap();
        assert_eq!(args, vec![Bytes::from("GET"), Bytes::from("key")]);
        assert!(!d.in_progress());
    }

    #[test]
    fn many_small_reads_of_a_long_line_stay_linear() {
        // 60 KiB inline line in 1-byte reads: with rescanning this would be
        // ~1.8e9 byte comparisons; with the scan memo it is instant.
        let l = Limits::default();
        let mut d = RequestDecoder::new();
        let mut buf = BytesMut::new();
        for _ in 0..60_000 {
            buf.extend_from_slice(b"a");
            assert_eq!(d.decode(&mut buf, &l), Ok(None));
        }
        buf.extend_from_slice(b"\r\n");
        assert_eq!(d.decode(&mut buf, &l).unwrap().unwrap()[0].len(), 60_000);
    }
}
