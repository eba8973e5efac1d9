//! Redis's RDB value encoding (version 10, Redis 7.0), both ways: what `DUMP`/`RESTORE` payloads are
//! made of, and the body of RDB files.
//!
//! Writing follows Redis 7.0's choices, so that Redis loads what Latch writes into the same
//! encodings it would have used: strings as integers when they are canonical integers of at most 32
//! bits, LZF-compressed above 20 bytes when that saves at least 4 (`rdbcompression`), raw otherwise;
//! lists as quicklist 2 (listpack nodes of at most 8 KiB, Redis's `list-max-listpack-size -2`);
//! sets as an intset or a plain set, hashes and sorted sets as a listpack or a plain map (binary
//! double scores), by the encoding Redis holds each in ([`Value::encoding`]: the `*-max-*` limits
//! in effect at the value's last write).
//!
//! Reading takes every encoding Redis 7.0 loads for these types, the older ones included (ziplist,
//! zipmap-free quicklist 1, string-scored zsets), and never trusts a length: each is checked against
//! what is left of the input before anything is allocated, so a hostile payload gets an error, not
//! an allocation it names. Types Latch does not have (streams, modules) are reported as such.
//!
//! A `DUMP` payload is a value (type byte and encoding), the RDB version as two little-endian bytes,
//! and the CRC-64 (Jones polynomial, Redis's `crc64.c`) of everything before it, little-endian.

use crate::types::listpack as lp;
use crate::types::stream::{self, Consumer, Group, Nack, Stream, StreamId};
use crate::types::zset::ZSet;
use crate::value::{
    Damaged, EncodingLimits, Entry, HashValue, ListValue, LockValue, SetValue, SmallBytes, Value, canonical_i64,
};

/// The RDB version Latch writes (Redis 7.0's).
pub const RDB_VERSION: u16 = 10;

/// Value type bytes (`RDB_TYPE_*` in Redis's `rdb.h`).
pub mod types {
    /// String.
    pub const STRING: u8 = 0;
    /// List of strings (before quicklists).
    pub const LIST: u8 = 1;
    /// Plain set.
    pub const SET: u8 = 2;
    /// Sorted set with string scores (before 5).
    pub const ZSET: u8 = 3;
    /// Plain hash.
    pub const HASH: u8 = 4;
    /// Sorted set with binary double scores.
    pub const ZSET_2: u8 = 5;
    /// Module value (two encodings).
    pub const MODULE: u8 = 6;
    /// Module value, version 2.
    pub const MODULE_2: u8 = 7;
    /// Hash as a zipmap (Redis 2.x).
    pub const HASH_ZIPMAP: u8 = 9;
    /// List as a ziplist.
    pub const LIST_ZIPLIST: u8 = 10;
    /// Set of integers.
    pub const SET_INTSET: u8 = 11;
    /// Sorted set as a ziplist.
    pub const ZSET_ZIPLIST: u8 = 12;
    /// Hash as a ziplist.
    pub const HASH_ZIPLIST: u8 = 13;
    /// List as a quicklist of ziplists.
    pub const LIST_QUICKLIST: u8 = 14;
    /// Stream.
    pub const STREAM_LISTPACKS: u8 = 15;
    /// Hash as a listpack.
    pub const HASH_LISTPACK: u8 = 16;
    /// Sorted set as a listpack.
    pub const ZSET_LISTPACK: u8 = 17;
    /// List as a quicklist of listpacks (Redis 7.0).
    pub const LIST_QUICKLIST_2: u8 = 18;
    /// Stream, version 2.
    pub const STREAM_LISTPACKS_2: u8 = 19;
}

/// A type's name as redis-check-rdb prints it (`rdb_type_string`).
pub fn type_name(t: u8) -> &'static str {
    const NAMES: [&str; 20] = [
        "string",
        "list-linked",
        "set-hashtable",
        "zset-v1",
        "hash-hashtable",
        "zset-v2",
        "module-pre-release",
        "module-value",
        "",
        "hash-zipmap",
        "list-ziplist",
        "set-intset",
        "zset-ziplist",
        "hash-ziplist",
        "quicklist",
        "stream",
        "hash-listpack",
        "zset-listpack",
        "quicklist-v2",
        "stream-v2",
    ];
    NAMES.get(usize::from(t)).copied().unwrap_or("unknown")
}

/// Why a value could not be read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DecodeError {
    /// The input is not a valid encoding (truncated, inconsistent lengths, unknown encodings).
    BadFormat,
    /// An encoded aggregate failed its integrity check: Redis's message for it (what Redis logs,
    /// e.g. "Zset ziplist integrity check failed.").
    Corrupt(&'static str),
    /// An aggregate with no element: Redis skips such keys when it loads a file, and RESTORE
    /// refuses them.
    EmptyKey,
    /// A valid type that Latch has no data type for (a stream, a module value): its name.
    Unsupported(&'static str),
    /// Without deep sanitization, a corruption Redis meets while it loads the value by a failed
    /// assertion or a panic (its server exits): `what` failed. Latch refuses the value and logs
    /// [`crash_report`].
    Fatal {
        /// The check that failed.
        what: String,
        /// A panic (Redis's `serverPanic`) rather than a failed assertion.
        panic: bool,
    },
}

/// How deeply a value read from a RESTORE payload or an RDB file is checked.
#[derive(Clone, Copy, Debug)]
pub struct Checks {
    /// Redis's deep sanitization (`sanitize-dump-payload yes`): every check, and a failed one is
    /// an error. Without it, Redis checks listpacks, intsets and stream nodes only shallowly (their
    /// headers) and keeps what passes; Latch still checks everything, and keeps a value that
    /// passes Redis's checks but not its own as [`Value::Damaged`].
    pub deep: bool,
    /// The encoding limits in effect: a listpack above them Redis converts at once, walking it,
    /// so it meets a corrupt one while loading.
    pub limits: EncodingLimits,
}

impl Default for Checks {
    fn default() -> Checks {
        Checks { deep: true, limits: EncodingLimits::default() }
    }
}

/// The log lines Redis writes when the corruption it meets is a failed assertion (`_serverAssert`)
/// or a panic (`_serverPanic`), for a value Latch found corrupt where Redis, without deep
/// sanitization, would have met it that way. Latch keeps running.
pub fn crash_report(what: &str, panic: bool) -> Vec<String> {
    let mut out = if panic {
        vec!["------------------------------------------------".to_string(), format!("Guru Meditation: {what}")]
    } else {
        vec!["=== ASSERTION FAILED ===".to_string(), format!("==> '{what}' is not true")]
    };
    out.push(
        "Latch checked the value in full: it does not crash, and commands that would read the value answer an error"
            .to_string(),
    );
    out
}

/// The CRC-64 Redis puts in RDB files and DUMP payloads.
pub fn crc64(data: &[u8]) -> u64 {
    CRC64.checksum(data)
}

// ---- writing ---------------------------------------------------------------------------------------

/// Appends RDB encodings to a buffer.
pub struct Writer {
    /// What was written.
    pub buf: Vec<u8>,
    /// `rdbcompression`: LZF-compress strings longer than 20 bytes when it pays.
    pub compress: bool,
    /// The compressor and its output buffer, made on first use (its table is 256 KiB).
    lzf: Option<Box<(crate::lzf::Lzf, Vec<u8>)>>,
}

/// The largest listpack node Latch writes into a quicklist (Redis's `list-max-listpack-size -2`).
const QUICKLIST_NODE_BYTES: usize = 8 * 1024;

impl Writer {
    /// An empty writer.
    pub fn new(compress: bool) -> Writer {
        Writer { buf: Vec::new(), compress, lzf: None }
    }

    /// A length (`rdbSaveLen`): 6 bits, 14 bits, 32 or 64 bits big-endian.
    pub fn len(&mut self, n: u64) {
        if n < 1 << 6 {
            self.buf.push(n as u8);
        } else if n < 1 << 14 {
            self.buf.extend_from_slice(&[0x40 | (n >> 8) as u8, n as u8]);
        } else if n <= u64::from(u32::MAX) {
            self.buf.push(0x80);
            self.buf.extend_from_slice(&(n as u32).to_be_bytes());
        } else {
            self.buf.push(0x81);
            self.buf.extend_from_slice(&n.to_be_bytes());
        }
    }

    /// A string (`rdbSaveRawString`): as an integer when it is a canonical one of at most 32 bits,
    /// LZF-compressed when allowed and worth it, raw otherwise.
    pub fn string(&mut self, s: &[u8]) {
        if s.len() <= 11
            && let Some(i) = canonical_i64(s)
            && self.int_encoded(i)
        {
            return;
        }
        if self.compress && s.len() > 20 {
            // Redis's `rdbSaveLzfStringObject`: worth it only at 4 bytes or more saved. The header
            // goes before the data, whose size is known after: compress aside first.
            let (lzf, out) = &mut **self.lzf.get_or_insert_with(Box::default);
            out.clear();
            if lzf.compress(s, out, s.len() - 4) {
                let c = std::mem::take(out);
                self.buf.push(0xC3);
                self.len(c.len() as u64);
                self.len(s.len() as u64);
                self.buf.extend_from_slice(&c);
                self.lzf.as_mut().expect("made above").1 = c;
                return;
            }
        }
        self.len(s.len() as u64);
        self.buf.extend_from_slice(s);
    }

    /// An integer as a string: the integer encodings when it fits 32 bits, its digits otherwise.
    pub fn int(&mut self, i: i64) {
        if !self.int_encoded(i) {
            let mut b = itoa::Buffer::new();
            let s = b.format(i);
            self.len(s.len() as u64);
            self.buf.extend_from_slice(s.as_bytes());
        }
    }

    fn int_encoded(&mut self, i: i64) -> bool {
        if let Ok(v) = i8::try_from(i) {
            self.buf.extend_from_slice(&[0xC0, v as u8]);
        } else if let Ok(v) = i16::try_from(i) {
            self.buf.push(0xC1);
            self.buf.extend_from_slice(&v.to_le_bytes());
        } else if let Ok(v) = i32::try_from(i) {
            self.buf.push(0xC2);
            self.buf.extend_from_slice(&v.to_le_bytes());
        } else {
            return false;
        }
        true
    }

    /// A value: its type byte, then its encoding (`rdbSaveObjectType` + `rdbSaveObject`). Locks have
    /// no RDB type: None, nothing written.
    pub fn value(&mut self, v: &Value) -> Option<()> {
        match v {
            Value::Int(i) => {
                self.buf.push(types::STRING);
                self.int(*i);
            }
            Value::Str(s) => {
                self.buf.push(types::STRING);
                self.string(s);
            }
            Value::List(l) => {
                self.buf.push(types::LIST_QUICKLIST_2);
                self.quicklist(l);
            }
            Value::Set(s) => match v.encoding() {
                "intset" => {
                    self.buf.push(types::SET_INTSET);
                    self.string(&intset(s));
                }
                _ => {
                    self.buf.push(types::SET);
                    self.len(s.len() as u64);
                    for m in s.iter() {
                        self.string(m);
                    }
                }
            },
            Value::Hash(h) => match value_listpack(v) {
                Some(lp) => {
                    self.buf.push(types::HASH_LISTPACK);
                    self.string(&lp);
                }
                _ => {
                    self.buf.push(types::HASH);
                    self.len(h.len() as u64);
                    for (f, v) in h.iter() {
                        self.string(f);
                        self.string(v);
                    }
                }
            },
            Value::ZSet(z) => match value_listpack(v) {
                Some(lp) => {
                    self.buf.push(types::ZSET_LISTPACK);
                    self.string(&lp);
                }
                _ => {
                    self.buf.push(types::ZSET_2);
                    self.len(z.len() as u64);
                    // Highest first, as Redis saves a skiplist (it loads faster that way).
                    for (m, s) in z.range_iter(0, z.len()).rev() {
                        self.string(m);
                        self.buf.extend_from_slice(&s.to_le_bytes());
                    }
                }
            },
            Value::Lock(_) => return None,
            Value::Damaged(d) => {
                self.buf.push(d.rdb_type);
                self.buf.extend_from_slice(&d.body);
            }
            Value::Stream(st) => {
                self.buf.push(types::STREAM_LISTPACKS_2);
                self.stream(st);
            }
        }
        Some(())
    }

    /// A stream as Redis 7.0 saves it (`RDB_TYPE_STREAM_LISTPACKS_2`): its nodes as they are, the
    /// stream's counters, then each group with its PEL and consumers.
    fn stream(&mut self, s: &Stream) {
        self.len(s.node_count() as u64);
        for (master, node) in s.nodes() {
            self.string(&master.to_be());
            self.string(node);
        }
        self.len(s.length);
        for id in [s.last_id, s.first_id, s.max_deleted] {
            self.len(id.ms);
            self.len(id.seq);
        }
        self.len(s.entries_added);
        self.len(s.groups.len() as u64);
        for (name, g) in &s.groups {
            self.string(name);
            self.len(g.last_id.ms);
            self.len(g.last_id.seq);
            self.len(g.entries_read as u64);
            self.len(g.pel.len() as u64);
            for (id, n) in &g.pel {
                self.buf.extend_from_slice(&id.to_be());
                self.buf.extend_from_slice(&n.delivery_time.to_le_bytes());
                self.len(n.delivery_count);
            }
            self.len(g.consumers.len() as u64);
            for (cname, c) in &g.consumers {
                self.string(cname);
                self.buf.extend_from_slice(&c.seen_time.to_le_bytes());
                self.len(c.pel.len() as u64);
                for id in &c.pel {
                    self.buf.extend_from_slice(&id.to_be());
                }
            }
        }
    }

    /// A list as quicklist 2: listpack nodes of at most [`QUICKLIST_NODE_BYTES`].
    fn quicklist(&mut self, l: &ListValue) {
        let nodes = quicklist_nodes(l);
        self.len(nodes.len() as u64);
        for n in nodes {
            self.len(2); // QUICKLIST_NODE_CONTAINER_PACKED
            self.string(&n);
        }
    }
}

/// A list's quicklist nodes as files carry them: listpacks of at most [`QUICKLIST_NODE_BYTES`].
pub fn quicklist_nodes(l: &ListValue) -> Vec<Vec<u8>> {
    let mut nodes: Vec<Vec<u8>> = Vec::new();
    let mut lp = Listpack::default();
    for e in l.iter() {
        // Redis's rule (`_quicklistNodeAllowInsert`): the node's size, the element and an
        // 8-byte overhead estimate must stay within the limit.
        if lp.count > 0 && lp.body.len() + 7 + e.len() + 8 > QUICKLIST_NODE_BYTES {
            nodes.push(std::mem::take(&mut lp).finish());
        }
        lp.push(e);
    }
    if lp.count > 0 {
        nodes.push(lp.finish());
    }
    nodes
}

/// The listpack a hash or sorted set of encoding "listpack" is saved as (field, value or member,
/// score pairs); None for any other value or encoding.
pub fn value_listpack(v: &Value) -> Option<Vec<u8>> {
    if v.encoding() != "listpack" {
        return None;
    }
    let mut lp = Listpack::default();
    match v {
        Value::Hash(h) => {
            for (f, v) in h.iter() {
                lp.push(f);
                lp.push(v);
            }
        }
        Value::ZSet(z) => {
            for (m, s) in z.iter() {
                lp.push(m);
                lp.push(&score_text(s));
            }
        }
        _ => return None,
    }
    Some(lp.finish())
}

/// A score as Redis writes it into a listpack (`%.17g`, integers without a fraction).
fn score_text(s: f64) -> Vec<u8> {
    let mut out = Vec::new();
    resp::format_double(s, &mut out);
    out
}

/// An intset blob: encoding width, count, values ascending, little-endian.
fn intset(s: &SetValue) -> Vec<u8> {
    let mut v: Vec<i64> = s.iter().filter_map(canonical_i64).collect();
    v.sort_unstable();
    let width: usize = if v.iter().all(|i| i16::try_from(*i).is_ok()) {
        2
    } else if v.iter().all(|i| i32::try_from(*i).is_ok()) {
        4
    } else {
        8
    };
    let mut out = Vec::with_capacity(8 + width * v.len());
    out.extend_from_slice(&(width as u32).to_le_bytes());
    out.extend_from_slice(&(v.len() as u32).to_le_bytes());
    for i in v {
        out.extend_from_slice(&i.to_le_bytes()[..width]);
    }
    out
}

/// A listpack under construction, encoded as Redis encodes one (`lpAppend`): canonical integers as
/// integers of the smallest width, other entries as strings.
#[derive(Default)]
struct Listpack {
    body: Vec<u8>,
    count: usize,
}

impl Listpack {
    fn push(&mut self, s: &[u8]) {
        let start = self.body.len();
        let n = s.len();
        if n <= 20
            && let Some(v) = canonical_i64(s)
        {
            if (0..=127).contains(&v) {
                self.body.push(v as u8);
            } else if (-4096..=4095).contains(&v) {
                let u = (v as u16) & 0x1FFF;
                self.body.extend_from_slice(&[0xC0 | (u >> 8) as u8, u as u8]);
            } else if let Ok(x) = i16::try_from(v) {
                self.body.push(0xF1);
                self.body.extend_from_slice(&x.to_le_bytes());
            } else if (-8_388_608..=8_388_607).contains(&v) {
                self.body.push(0xF2);
                self.body.extend_from_slice(&(v as i32).to_le_bytes()[..3]);
            } else if let Ok(x) = i32::try_from(v) {
                self.body.push(0xF3);
                self.body.extend_from_slice(&x.to_le_bytes());
            } else {
                self.body.push(0xF4);
                self.body.extend_from_slice(&v.to_le_bytes());
            }
        } else {
            if n < 64 {
                self.body.push(0x80 | n as u8);
            } else if n < 4096 {
                self.body.extend_from_slice(&[0xE0 | (n >> 8) as u8, n as u8]);
            } else {
                self.body.push(0xF0);
                self.body.extend_from_slice(&(n as u32).to_le_bytes());
            }
            self.body.extend_from_slice(s);
        }
        let (b, n) = backlen((self.body.len() - start) as u64);
        self.body.extend_from_slice(&b[..n]);
        self.count += 1;
    }

    fn finish(self) -> Vec<u8> {
        let total = 6 + self.body.len() + 1;
        let mut out = Vec::with_capacity(total);
        out.extend_from_slice(&(total as u32).to_le_bytes());
        out.extend_from_slice(&(self.count.min(65535) as u16).to_le_bytes());
        out.extend_from_slice(&self.body);
        out.push(0xFF);
        out
    }
}

/// A DUMP payload for `v`; None for a value RDB cannot hold (a native lock).
pub fn dump(v: &Value, compress: bool) -> Option<Vec<u8>> {
    let mut w = Writer::new(compress);
    w.value(v)?;
    w.buf.extend_from_slice(&RDB_VERSION.to_le_bytes());
    let crc = crc64(&w.buf);
    w.buf.extend_from_slice(&crc.to_le_bytes());
    Some(w.buf)
}

/// Checks a DUMP payload's footer (Redis's `verifyDumpPayload`): an RDB version Latch reads and a
/// matching checksum. Returns the value's bytes.
pub fn verify_dump(payload: &[u8]) -> Option<&[u8]> {
    verify_dump_with(payload, false)
}

/// [`verify_dump`], the checksum not checked with `skip_crc` (DEBUG SET-SKIP-CHECKSUM-VALIDATION).
pub fn verify_dump_with(payload: &[u8], skip_crc: bool) -> Option<&[u8]> {
    if payload.len() < 10 {
        return None;
    }
    let (body, footer) = payload.split_at(payload.len() - 10);
    let version = u16::from_le_bytes([footer[0], footer[1]]);
    if version > RDB_VERSION {
        return None;
    }
    let crc = u64::from_le_bytes(footer[2..10].try_into().ok()?);
    (skip_crc || crc == crc64(&payload[..payload.len() - 8])).then_some(body)
}

/// Reads a DUMP payload's value (after [`verify_dump`]); the whole input must be one value.
pub fn restore(body: &[u8]) -> Result<Value, DecodeError> {
    restore_checked(body, Checks::default())
}

/// [`restore`] with the given [`Checks`].
pub fn restore_checked(body: &[u8], checks: Checks) -> Result<Value, DecodeError> {
    let mut r = Reader::new(body).with_checks(checks);
    let t = r.byte()?;
    let v = r.value(t)?;
    if r.rest().is_empty() { Ok(v) } else { Err(DecodeError::BadFormat) }
}

// ---- file records ----------------------------------------------------------------------------------

/// Opcodes of an RDB file (`RDB_OPCODE_*`).
pub mod op {
    /// A function library (Redis 7.0).
    pub const FUNCTION2: u8 = 245;
    /// A function library, pre-release format.
    pub const FUNCTION: u8 = 246;
    /// Module auxiliary data.
    pub const MODULE_AUX: u8 = 247;
    /// The LRU idle time of the key that follows.
    pub const IDLE: u8 = 248;
    /// The LFU counter of the key that follows.
    pub const FREQ: u8 = 249;
    /// An auxiliary field (name, value).
    pub const AUX: u8 = 250;
    /// Sizes of the database's tables (a hint).
    pub const RESIZEDB: u8 = 251;
    /// The deadline of the key that follows, Unix milliseconds.
    pub const EXPIRETIME_MS: u8 = 252;
    /// The deadline of the key that follows, Unix seconds.
    pub const EXPIRETIME: u8 = 253;
    /// The database the keys that follow belong to.
    pub const SELECTDB: u8 = 254;
    /// End of the file (the checksum follows).
    pub const EOF: u8 = 255;
}

/// What a key's record carries besides its value: the access data of the eviction policy.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AccessField {
    /// Nothing (no LRU or LFU policy).
    None,
    /// `IDLE`: seconds since the last access (an LRU policy).
    Idle,
    /// `FREQ`: the LFU counter (an LFU policy).
    Freq,
}

/// How the records of one snapshot are written: fixed when it starts, so that every record in a
/// file, whenever it is encoded, describes the same instant.
#[derive(Clone, Debug)]
pub struct RecordSpec {
    /// `rdbcompression`.
    pub compress: bool,
    /// The eviction policy's access field.
    pub access: AccessField,
    /// The snapshot's instant on the monotonic clock (ms): keys whose deadline is before it are
    /// not written.
    pub now_ms: u64,
    /// `unix_ms - monotonic_ms` at that instant: deadlines are written as Unix milliseconds.
    pub wall_offset_ms: i64,
    /// Records as the commands that rebuild each key (an AOF base without the RDB preamble,
    /// `aof-use-rdb-preamble no`), not RDB records.
    pub commands: bool,
    /// How far the snapshot has come (INFO reads it while it runs).
    pub progress: std::sync::Arc<SnapshotProgress>,
}

/// A running snapshot's progress, for INFO's `current_save_keys_processed`/`_total` and
/// `current_cow_size`. Latch's snapshot has no child process; what stands for the memory a fork's
/// copy-on-write costs is the records encoded ahead of the walk because a command was about to
/// change or delete their key (kept until the writer takes them).
#[derive(Debug, Default)]
pub struct SnapshotProgress {
    /// Keys in the keyspace when the snapshot began.
    pub keys_total: std::sync::atomic::AtomicU64,
    /// Keys written so far (by the walk, or ahead of it).
    pub keys_written: std::sync::atomic::AtomicU64,
    /// Bytes of the records written ahead of the walk.
    pub copied_bytes: std::sync::atomic::AtomicU64,
}

impl RecordSpec {
    /// True when a key with the deadline `at` (0: none) existed at the snapshot's instant (its
    /// TTL had not passed).
    pub fn live(&self, at: u64) -> bool {
        at == 0 || at >= self.now_ms
    }
}

/// Appends the record of one key of database `db`, with the deadline `at` (monotonic ms; 0: none),
/// to `out`: `EXPIRETIME_MS`, the access field, then type, key and value; for a native lock (which
/// has no RDB type) a `latch-lock` AUX field. `scratch` is reused between calls (the type byte
/// precedes the key, so the value is encoded aside first).
pub fn write_record(
    spec: &RecordSpec,
    db: usize,
    key: &[u8],
    e: &Entry,
    at: u64,
    out: &mut Writer,
    scratch: &mut Writer,
) {
    // An RDB file keeps keys whose TTL passed but that are still stored, as Redis's rdbSave does
    // (the loader drops them and counts them in `rdb_last_load_keys_expired`); a rewrite into
    // commands leaves them out, as Redis's AOF rewrite does.
    if spec.commands {
        if !spec.live(at) {
            return;
        }
        write_commands(spec, key, e, at, &mut out.buf);
        return;
    }
    let deadline = at as i64 + spec.wall_offset_ms;
    if let Value::Lock(l) = &e.value {
        out.buf.push(op::AUX);
        out.string(b"latch-lock");
        out.string(&lock_field(db, key, l, if at == 0 { 0 } else { deadline }));
        return;
    }
    if at != 0 {
        out.buf.push(op::EXPIRETIME_MS);
        out.buf.extend_from_slice(&deadline.to_le_bytes());
    }
    match spec.access {
        AccessField::None => {}
        AccessField::Freq => {
            out.buf.push(op::FREQ);
            out.buf.push(e.lfu());
        }
        AccessField::Idle => {
            out.buf.push(op::IDLE);
            out.len(u64::from(e.idle_s((spec.now_ms / 1000) as u32)));
        }
    }
    scratch.buf.clear();
    scratch.compress = spec.compress;
    // Not a lock (handled above): every other value has an RDB type.
    scratch.value(&e.value);
    out.buf.push(scratch.buf[0]);
    out.string(key);
    out.buf.extend_from_slice(&scratch.buf[1..]);
}

/// Items per command when a key is rewritten as commands (Redis's `AOF_REWRITE_ITEMS_PER_CMD`).
const ITEMS_PER_CMD: usize = 64;

/// A key as the commands that rebuild it, as Redis's AOF rewrite writes them: SET, RPUSH, SADD,
/// ZADD, HMSET of up to 64 items each, then PEXPIREAT (`at`: the deadline, 0: none); a lock as a
/// `#latch:` annotation (LOCKRESTORE, and PERSIST for a lock without TTL).
fn write_commands(spec: &RecordSpec, key: &[u8], e: &Entry, at: u64, out: &mut Vec<u8>) {
    use crate::changes::encode_command;
    let deadline = (at as i64 + spec.wall_offset_ms).to_string();
    let batches = |out: &mut Vec<u8>, cmd: &[u8], items: &mut dyn Iterator<Item = Vec<SmallBytes>>| {
        let mut args: Vec<SmallBytes> = Vec::new();
        let mut n = 0;
        for item in items {
            args.extend(item);
            n += 1;
            if n == ITEMS_PER_CMD {
                let all: Vec<&[u8]> = [cmd, key].into_iter().chain(args.iter().map(|a| &a[..])).collect();
                encode_command(out, &all);
                (args, n) = (Vec::new(), 0);
            }
        }
        if n > 0 {
            let all: Vec<&[u8]> = [cmd, key].into_iter().chain(args.iter().map(|a| &a[..])).collect();
            encode_command(out, &all);
        }
    };
    match &e.value {
        // No command rebuilds what cannot be read (Redis's rewrite would fail its assertion).
        Value::Damaged(_) => return,
        Value::Lock(l) => {
            let mut cmds = Vec::new();
            let until = if at == 0 { (i64::MAX / 2).to_string() } else { deadline.clone() };
            encode_command(
                &mut cmds,
                &[&b"LOCKRESTORE"[..], key, &l.owner, until.as_bytes(), l.token.to_string().as_bytes()],
            );
            if at == 0 {
                encode_command(&mut cmds, &[&b"PERSIST"[..], key]);
            }
            crate::changes::encode_annotation(out, &cmds);
            return;
        }
        Value::List(l) => batches(out, b"RPUSH", &mut l.iter().map(|m| vec![m.clone()])),
        Value::Set(s) => batches(out, b"SADD", &mut s.iter().map(|m| vec![SmallBytes::from_slice(m)])),
        Value::ZSet(z) => batches(
            out,
            b"ZADD",
            &mut z.iter().map(|(m, score)| vec![SmallBytes::from_slice(&score_text(score)), SmallBytes::from_slice(m)]),
        ),
        Value::Hash(h) => batches(
            out,
            b"HMSET",
            &mut h.iter().map(|(f, v)| vec![SmallBytes::from_slice(f), SmallBytes::from_slice(v)]),
        ),
        Value::Stream(st) => stream_commands(key, st, out),
        v => {
            let bytes = v.as_bytes().unwrap_or_default();
            encode_command(out, &[&b"SET"[..], key, &bytes]);
        }
    }
    if at != 0 {
        encode_command(out, &[&b"PEXPIREAT"[..], key, deadline.as_bytes()]);
    }
}

/// A stream as the commands Redis's AOF rewrite writes (`rewriteStreamObject`): an XADD per
/// entry (or an XADD that leaves it empty), XSETID with its counters, and per group XGROUP CREATE,
/// an XCLAIM per pending entry and XGROUP CREATECONSUMER for consumers with nothing pending.
fn stream_commands(key: &[u8], s: &Stream, out: &mut Vec<u8>) {
    use crate::changes::encode_command;
    let t = |id: StreamId| id.to_string().into_bytes();
    if s.length > 0 {
        for (id, fields) in s.range(StreamId::MIN, StreamId::MAX, false, 0) {
            let idt = t(id);
            let mut args: Vec<&[u8]> = vec![b"XADD", key, &idt];
            args.extend(fields.iter().map(|f| &f[..]));
            encode_command(out, &args);
        }
    } else {
        encode_command(out, &[&b"XADD"[..], key, b"MAXLEN", b"0", b"0-1", b"x", b"y"]);
    }
    let added = s.entries_added.to_string();
    encode_command(
        out,
        &[&b"XSETID"[..], key, &t(s.last_id), b"ENTRIESADDED", added.as_bytes(), b"MAXDELETEDID", &t(s.max_deleted)],
    );
    for (name, g) in &s.groups {
        let read = g.entries_read.to_string();
        encode_command(out, &[&b"XGROUP"[..], b"CREATE", key, name, &t(g.last_id), b"ENTRIESREAD", read.as_bytes()]);
        for (cname, c) in &g.consumers {
            if c.pel.is_empty() {
                encode_command(out, &[&b"XGROUP"[..], b"CREATECONSUMER", key, name, cname]);
                continue;
            }
            for id in &c.pel {
                let Some(n) = g.pel.get(id) else { continue };
                let (time, count) = (n.delivery_time.to_string(), n.delivery_count.to_string());
                encode_command(
                    out,
                    &[
                        &b"XCLAIM"[..],
                        key,
                        name,
                        cname,
                        b"0",
                        &t(*id),
                        b"TIME",
                        time.as_bytes(),
                        b"RETRYCOUNT",
                        count.as_bytes(),
                        b"JUSTID",
                        b"FORCE",
                    ],
                );
            }
        }
    }
}

/// The value of a `latch-lock` AUX field: database, key, owner, deadline (Unix ms; 0 for none),
/// token.
pub fn lock_field(db: usize, key: &[u8], l: &LockValue, deadline_unix: i64) -> Vec<u8> {
    let mut w = Writer::new(false);
    w.len(db as u64);
    w.string(key);
    w.string(&l.owner);
    w.buf.extend_from_slice(&deadline_unix.to_le_bytes());
    w.buf.extend_from_slice(&l.token.to_le_bytes());
    w.buf
}

/// Reads a `latch-lock` AUX field back: (database, key, lock, deadline in Unix ms).
pub fn parse_lock_field(b: &[u8]) -> Option<(usize, SmallBytes, LockValue, i64)> {
    let mut r = Reader::new(b);
    let db = usize::try_from(r.length().ok()?).ok()?;
    let key = r.string().ok()?;
    let owner = r.string().ok()?;
    let at = i64::from_le_bytes(r.bytes(8).ok()?.try_into().ok()?);
    let token = u64::from_le_bytes(r.bytes(8).ok()?.try_into().ok()?);
    r.rest().is_empty().then_some((db, key, LockValue { owner, token }, at))
}

/// The CRC-64 of an RDB file, fed as the file is written.
pub struct Crc64(crc::Digest<'static, u64, crc::Table<16>>);

/// Slice-by-16 tables (32 KiB): a byte-at-a-time CRC took most of the time of a save (Redis uses
/// `crcspeed`'s slice-by-8 for the same reason).
static CRC64: crc::Crc<u64, crc::Table<16>> = crc::Crc::<u64, crc::Table<16>>::new(&crc::CRC_64_REDIS);

impl Default for Crc64 {
    fn default() -> Crc64 {
        Crc64(CRC64.digest())
    }
}

impl Crc64 {
    /// Adds bytes.
    pub fn update(&mut self, b: &[u8]) {
        self.0.update(b);
    }
    /// The checksum of everything added.
    pub fn finish(self) -> u64 {
        self.0.finalize()
    }
}

// ---- reading ---------------------------------------------------------------------------------------

/// Where a load reads a file from: all of it at hand ([`SliceInput`]), or as it arrives (a replica
/// loading its primary's file from the socket, Redis's diskless load). The loader parses a record
/// from the window; when the window ends inside it, it asks for more and parses the record again.
pub trait Input {
    /// The bytes at hand not read yet.
    fn window(&self) -> &[u8];
    /// The first `n` bytes of the window were read.
    fn consume(&mut self, n: usize);
    /// Waits until the window holds at least `want` bytes or nothing more will come; false when
    /// nothing came.
    fn more(&mut self, want: usize) -> bool;
    /// True if the file is still arriving (a short read is then a lost connection, not a short file).
    fn arriving(&self) -> bool {
        false
    }
}

/// A file all at hand.
pub struct SliceInput<'a>(pub &'a [u8]);

impl Input for SliceInput<'_> {
    fn window(&self) -> &[u8] {
        self.0
    }
    fn consume(&mut self, n: usize) {
        self.0 = &self.0[n..];
    }
    fn more(&mut self, _want: usize) -> bool {
        false
    }
}

/// Reads RDB encodings from a byte slice.
pub struct Reader<'a> {
    data: &'a [u8],
    pos: usize,
    checks: Checks,
    /// Set while a value is read when a check failed that Redis skips without deep sanitization:
    /// the check's message, and whether Redis would panic (rather than fail an assertion) on it.
    damage: Option<(String, bool)>,
    /// Set when a read wanted bytes past the end of `data`: a file still arriving may hold them.
    ran_out: bool,
}

type R<T> = Result<T, DecodeError>;

const BAD: DecodeError = DecodeError::BadFormat;

/// A length or an encoded-integer marker (`rdbLoadLenByRef`'s `isencoded`).
enum Len {
    Plain(u64),
    Encoded(u8),
}

impl<'a> Reader<'a> {
    /// A reader at the start of `data`.
    pub fn new(data: &'a [u8]) -> Reader<'a> {
        Reader { data, pos: 0, checks: Checks::default(), damage: None, ran_out: false }
    }

    /// The reader with these checks.
    pub fn with_checks(mut self, checks: Checks) -> Reader<'a> {
        self.checks = checks;
        self
    }

    /// A check that failed: an error with deep checks; otherwise the value is damaged (the first
    /// failure is the one reported) and reading goes on.
    fn damaged(&mut self, what: &str, panic: bool) -> R<()> {
        if self.checks.deep {
            return Err(DecodeError::Fatal { what: what.to_string(), panic });
        }
        self.damage.get_or_insert_with(|| (what.to_string(), panic));
        Ok(())
    }

    /// What is left.
    pub fn rest(&self) -> &'a [u8] {
        &self.data[self.pos..]
    }

    /// Bytes read so far.
    pub fn consumed(&self) -> usize {
        self.pos
    }

    /// True if a read wanted bytes past the end of the input: what failed may succeed once more of
    /// a file that is still arriving is there.
    pub fn ran_out(&self) -> bool {
        self.ran_out
    }

    /// The end of the input was reached where more was needed.
    fn out(&mut self) -> DecodeError {
        self.ran_out = true;
        BAD
    }

    /// One byte.
    pub fn byte(&mut self) -> R<u8> {
        let Some(&b) = self.data.get(self.pos) else {
            return Err(self.out());
        };
        self.pos += 1;
        Ok(b)
    }

    /// `n` bytes.
    pub fn bytes(&mut self, n: u64) -> R<&'a [u8]> {
        let n = usize::try_from(n).map_err(|_| BAD)?;
        let Some(end) = self.pos.checked_add(n).filter(|e| *e <= self.data.len()) else {
            return Err(self.out());
        };
        let s = &self.data[self.pos..end];
        self.pos = end;
        Ok(s)
    }

    fn len_or_encoded(&mut self) -> R<Len> {
        let b = self.byte()?;
        Ok(match b >> 6 {
            0 => Len::Plain(u64::from(b & 0x3F)),
            1 => Len::Plain((u64::from(b & 0x3F) << 8) | u64::from(self.byte()?)),
            2 => match b {
                0x80 => Len::Plain(u64::from(u32::from_be_bytes(self.bytes(4)?.try_into().map_err(|_| BAD)?))),
                0x81 => Len::Plain(u64::from_be_bytes(self.bytes(8)?.try_into().map_err(|_| BAD)?)),
                _ => return Err(BAD),
            },
            _ => Len::Encoded(b & 0x3F),
        })
    }

    /// A length (`rdbLoadLen`).
    pub fn length(&mut self) -> R<u64> {
        match self.len_or_encoded()? {
            Len::Plain(n) => Ok(n),
            Len::Encoded(_) => Err(BAD),
        }
    }

    /// A count of items that each take at least `min_bytes` of input: refused when the input
    /// cannot hold that many (no allocation is ever sized by an unchecked length).
    fn count(&mut self, min_bytes: usize) -> R<usize> {
        let n = self.length()?;
        let room = (self.data.len() - self.pos) / min_bytes.max(1);
        if n > room as u64 {
            return Err(self.out());
        }
        Ok(n as usize)
    }

    /// A string (`rdbGenericLoadStringObject`): raw, integer-encoded or LZF.
    pub fn string(&mut self) -> R<SmallBytes> {
        match self.len_or_encoded()? {
            Len::Plain(n) => Ok(SmallBytes::from_slice(self.bytes(n)?)),
            Len::Encoded(0) => Ok(int_bytes(i64::from(self.byte()? as i8))),
            Len::Encoded(1) => Ok(int_bytes(i64::from(i16::from_le_bytes(self.array()?)))),
            Len::Encoded(2) => Ok(int_bytes(i64::from(i32::from_le_bytes(self.array()?)))),
            Len::Encoded(3) => {
                let clen = self.length()?;
                let len = self.length()?;
                let c = self.bytes(clen)?;
                // LZF expands at most ~8000x per byte pair; refuse what cannot be the output of
                // `c`, before allocating it.
                if len == 0 || len > (c.len() as u64).saturating_mul(8192) {
                    return Err(BAD);
                }
                let out = lzf::decompress(c, len as usize).map_err(|_| BAD)?;
                if out.len() as u64 != len {
                    return Err(BAD);
                }
                Ok(SmallBytes::from_vec(out))
            }
            Len::Encoded(_) => Err(BAD),
        }
    }

    fn array<const N: usize>(&mut self) -> R<[u8; N]> {
        self.bytes(N as u64)?.try_into().map_err(|_| BAD)
    }

    /// A binary double (`rdbLoadBinaryDoubleValue`).
    fn binary_double(&mut self) -> R<f64> {
        Ok(f64::from_le_bytes(self.array()?))
    }

    /// A string-encoded double (`rdbLoadDoubleValue`: length byte, 253 nan, 254 +inf, 255 -inf).
    fn text_double(&mut self) -> R<f64> {
        match self.byte()? {
            253 => Ok(f64::NAN),
            254 => Ok(f64::INFINITY),
            255 => Ok(f64::NEG_INFINITY),
            n => parse_score(self.bytes(u64::from(n))?),
        }
    }

    /// A value of type `t` (`rdbLoadObject`): [`Value::Damaged`] when, without deep checks, it
    /// passed Redis's checks but not Latch's.
    pub fn value(&mut self, t: u8) -> R<Value> {
        let start = self.pos;
        self.damage = None;
        let mut v = self.value_inner(t)?;
        Ok(match self.damage.take() {
            None => {
                // Redis converts while it loads: the encoding starts from what the value holds.
                v.settle(&self.checks.limits);
                v
            }
            Some((what, panic)) => Value::Damaged(Box::new(Damaged {
                rdb_type: t,
                body: self.data[start..self.pos].to_vec(),
                what,
                panic,
            })),
        })
    }

    /// A listpack of a hash or sorted set (`lpPairsValidateIntegrityAndDups`) as field-value
    /// pairs. Without deep checks Redis looks at the header only, and walks the listpack at once
    /// only when it is above the type's `*-max-listpack-entries` (it converts it): corruption met
    /// then is a failed assertion, a duplicate a panic for a hash; below the limit it keeps it.
    fn listpack_pairs<T>(
        &mut self,
        msg: &'static str,
        max_entries: usize,
        hash: bool,
        build: impl Fn(Vec<SmallBytes>) -> R<T>,
    ) -> R<Option<T>> {
        let blob = self.string()?;
        if !lp::header_ok(&blob) {
            return Err(DecodeError::Corrupt(msg));
        }
        if self.checks.deep {
            return parse_listpack(&blob).and_then(&build).map(Some).map_err(corrupt(msg));
        }
        let count = u16::from_le_bytes([blob[4], blob[5]]);
        if count == 0 {
            return Err(DecodeError::EmptyKey);
        }
        let items = match parse_listpack(&blob) {
            Ok(items) => items,
            Err(_) if usize::from(count / 2) > max_entries => {
                return Err(DecodeError::Fatal { what: format!("{msg} (an entry is not valid)"), panic: false });
            }
            Err(_) => {
                self.damaged(msg, false)?;
                return Ok(None);
            }
        };
        let converts = items.len() / 2 > max_entries;
        match build(items) {
            Ok(v) => Ok(Some(v)),
            Err(_) if converts && hash => Err(DecodeError::Fatal {
                what: "Listpack corruption detected: listpack with dup elements".into(),
                panic: true,
            }),
            Err(_) if converts => {
                Err(DecodeError::Fatal { what: format!("{msg} (duplicate or missing elements)"), panic: false })
            }
            Err(_) => {
                self.damaged(msg, false)?;
                Ok(None)
            }
        }
    }

    fn value_inner(&mut self, t: u8) -> R<Value> {
        use types::*;
        Ok(match t {
            STRING => Value::string(&self.string()?),
            LIST => {
                let n = self.count(1)?;
                let mut l = ListValue::with_capacity(n);
                for _ in 0..n {
                    l.push_back(self.string()?);
                }
                non_empty(Value::List(Box::new(l)))?
            }
            SET => {
                let n = self.count(1)?;
                let mut s = SetValue::with_capacity(n);
                for _ in 0..n {
                    if !s.insert(&self.string()?) {
                        return Err(DecodeError::Corrupt("Duplicate set members detected"));
                    }
                }
                non_empty(Value::Set(s))?
            }
            ZSET | ZSET_2 => {
                let n = self.count(2)?;
                let mut z = ZSet::new();
                for _ in 0..n {
                    let m = self.string()?;
                    let s = if t == ZSET_2 { self.binary_double()? } else { self.text_double()? };
                    if s.is_nan() {
                        return Err(BAD);
                    }
                    if z.insert(&m, s).is_some() {
                        return Err(DecodeError::Corrupt("Duplicate zset fields detected"));
                    }
                }
                non_empty(Value::ZSet(z))?
            }
            HASH => {
                let n = self.count(2)?;
                let mut h = HashValue::with_capacity(n);
                for _ in 0..n {
                    let f = self.string()?;
                    let v = self.string()?;
                    if !h.insert(&f, &v) {
                        return Err(DecodeError::Corrupt("Duplicate hash fields detected"));
                    }
                }
                non_empty(Value::Hash(h))?
            }
            SET_INTSET => {
                let blob = self.string()?;
                let (v, ascending) = parse_intset(&blob).map_err(corrupt("Intset integrity check failed."))?;
                if !ascending {
                    // Redis checks the order only in deep sanitization.
                    if self.checks.deep {
                        return Err(DecodeError::Corrupt("Intset integrity check failed."));
                    }
                    self.damaged("Intset integrity check failed.", false)?;
                }
                let mut s = SetValue::default();
                for i in v {
                    s.insert(&int_bytes(i));
                }
                if self.damage.is_some() { Value::Set(s) } else { non_empty(Value::Set(s))? }
            }
            LIST_ZIPLIST => {
                let blob = self.string()?;
                let items = parse_ziplist(&blob).map_err(corrupt("Ziplist integrity check failed."))?;
                non_empty(Value::List(Box::new(items.into_iter().collect())))?
            }
            ZSET_LISTPACK => {
                let max = self.checks.limits.zset_entries;
                match self
                    .listpack_pairs("Zset listpack integrity check failed.", max, false, |i| zset_from_pairs(&i))?
                {
                    Some(z) => non_empty(Value::ZSet(z))?,
                    None => Value::ZSet(ZSet::default()),
                }
            }
            ZSET_ZIPLIST => {
                let blob = self.string()?;
                let z = parse_ziplist(&blob)
                    .and_then(|i| zset_from_pairs(&i))
                    .map_err(corrupt("Zset ziplist integrity check failed."))?;
                non_empty(Value::ZSet(z))?
            }
            HASH_LISTPACK => {
                let max = self.checks.limits.hash_entries;
                match self.listpack_pairs("Hash listpack integrity check failed.", max, true, hash_from_pairs)? {
                    Some(h) => non_empty(Value::Hash(h))?,
                    None => Value::Hash(HashValue::default()),
                }
            }
            HASH_ZIPLIST => {
                let blob = self.string()?;
                let h = parse_ziplist(&blob)
                    .and_then(hash_from_pairs)
                    .map_err(corrupt("Hash ziplist integrity check failed."))?;
                non_empty(Value::Hash(h))?
            }
            LIST_QUICKLIST | LIST_QUICKLIST_2 => {
                let nodes = self.count(1)?;
                let mut l = ListValue::new();
                for _ in 0..nodes {
                    let container = if t == LIST_QUICKLIST_2 { self.length()? } else { 2 };
                    let blob = self.string()?;
                    if blob.is_empty() {
                        // Redis: a node whose encoded length is 0 is a bad format.
                        return Err(BAD);
                    }
                    match (t, container) {
                        (LIST_QUICKLIST, _) => {
                            l.extend(parse_ziplist(&blob).map_err(corrupt("Ziplist integrity check failed."))?)
                        }
                        (_, 1) => l.push_back(blob),
                        (_, 2) if !lp::header_ok(&blob) => {
                            return Err(DecodeError::Corrupt("Listpack integrity check failed."));
                        }
                        (_, 2) => match parse_listpack(&blob) {
                            Ok(items) => l.extend(items),
                            // Without deep checks Redis keeps the node (unless its header counts
                            // no element) and meets its corruption when a command walks it.
                            Err(_) if self.checks.deep => {
                                return Err(DecodeError::Corrupt("Listpack integrity check failed."));
                            }
                            Err(_) if u16::from_le_bytes([blob[4], blob[5]]) == 0 => {}
                            Err(_) => self.damaged("Listpack integrity check failed.", false)?,
                        },
                        _ => return Err(BAD),
                    }
                }
                if self.damage.is_some() { Value::List(Box::new(l)) } else { non_empty(Value::List(Box::new(l)))? }
            }
            STREAM_LISTPACKS | STREAM_LISTPACKS_2 => Value::Stream(Box::new(self.stream(t == STREAM_LISTPACKS_2)?)),
            MODULE | MODULE_2 => return Err(DecodeError::Unsupported("module")),
            HASH_ZIPMAP => {
                let blob = self.string()?;
                let h =
                    parse_zipmap(&blob).and_then(hash_from_pairs).map_err(corrupt("Zipmap integrity check failed."))?;
                non_empty(Value::Hash(h))?
            }
            _ => return Err(BAD),
        })
    }
}

impl Reader<'_> {
    /// A stream (`RDB_TYPE_STREAM_LISTPACKS` and `_2`). With deep checks every node and reference
    /// is checked (Redis's deep sanitization, and more: Latch's walks trust the nodes). Without,
    /// Redis checks each node's header and first entry and the references it must resolve; a
    /// stream that fails only Latch's other checks is damaged (see [`Reader::value`]).
    fn stream(&mut self, v2: bool) -> R<Stream> {
        const NODE: &str = "Stream listpack integrity check failed.";
        let deep = self.checks.deep;
        let mut s = Stream::new();
        let nodes = self.count(2)?;
        let mut nodes_ok = true;
        for _ in 0..nodes {
            let key = self.string()?;
            let master = StreamId::from_be(&key)
                .ok_or(DecodeError::Corrupt("Stream node key entry is not the size of a stream ID"))?;
            let node = self.string()?;
            if deep && !stream::validate_node(&node) {
                return Err(DecodeError::Corrupt(NODE));
            }
            if !lp::header_ok(&node) {
                return Err(DecodeError::Corrupt(NODE));
            }
            if node[lp::HEADER] == 0xFF {
                return Err(DecodeError::Corrupt("Empty listpack inside stream"));
            }
            if !lp::first_ok(&node) {
                // Redis's lpFirst asserts on it while loading.
                return Err(DecodeError::Fatal {
                    what: format!("{NODE} (lpFirst: invalid first entry)"),
                    panic: false,
                });
            }
            if !stream::validate_node(&node) {
                nodes_ok = false;
                self.damaged(NODE, false)?;
            }
            if !s.insert_node(master, node.to_vec()) {
                return Err(DecodeError::Corrupt("Listpack re-added with existing key"));
            }
        }
        s.length = self.length()?;
        s.last_id = StreamId::new(self.length()?, self.length()?);
        if v2 {
            s.first_id = StreamId::new(self.length()?, self.length()?);
            s.max_deleted = StreamId::new(self.length()?, self.length()?);
            s.entries_added = self.length()?;
        } else {
            s.entries_added = s.length;
            s.first_id = if nodes_ok { s.edge_id(true, false).unwrap_or(StreamId::MAX) } else { StreamId::MAX };
        }
        if s.length > 0 && s.node_count() == 0 {
            return Err(DecodeError::Corrupt("Stream length inconsistent with rax entries"));
        }
        // Latch adds to what Redis checks: the counts agree with the nodes and the IDs ascend
        // (only on nodes that passed: walks trust them).
        if nodes_ok && s.check_nodes() != Some(s.length) {
            if deep {
                return Err(DecodeError::Corrupt("Stream length inconsistent with rax entries"));
            }
            match s.last_valid_id() {
                // `streamLastValidID` panics on it.
                None if s.length > 0 => {
                    self.damaged(&format!("Corrupt stream, length is {}, but no max id", s.length), true)?
                }
                _ => self.damaged("Stream length inconsistent with rax entries", false)?,
            }
        }
        if nodes_ok && s.last_valid_id().is_some_and(|l| l > s.last_id) {
            if deep {
                return Err(DecodeError::Corrupt("Stream entry above the last ID"));
            }
            self.damaged("Stream entry above the last ID", false)?;
        }
        let groups = self.count(3)?;
        for _ in 0..groups {
            let name = self.string()?;
            let last = StreamId::new(self.length()?, self.length()?);
            let read = if v2 { self.length()? as i64 } else { s.estimate_distance(last) };
            if s.groups.contains_key(&name[..]) {
                return Err(DecodeError::Corrupt("Duplicated consumer group name"));
            }
            let mut g = Group::new(last, read);
            let pel = self.count(17)?;
            let mut owned: std::collections::HashSet<StreamId> = std::collections::HashSet::new();
            for _ in 0..pel {
                let id = StreamId::from_be(self.bytes(16)?).ok_or(BAD)?;
                let time = i64::from_le_bytes(self.array()?);
                let count = self.length()?;
                let nack = Nack { delivery_time: time, delivery_count: count, consumer: SmallBytes::new() };
                if g.pel.insert(id, nack).is_some() {
                    return Err(DecodeError::Corrupt("Duplicated global PEL entry loading stream consumer group"));
                }
            }
            let consumers = self.count(9)?;
            for _ in 0..consumers {
                let cname = self.string()?;
                let seen = i64::from_le_bytes(self.array()?);
                if g.consumers.contains_key(&cname[..]) {
                    return Err(DecodeError::Corrupt("Duplicate stream consumer detected."));
                }
                let mut c = Consumer { seen_time: seen, pel: Default::default() };
                let n = self.count(16)?;
                for _ in 0..n {
                    let id = StreamId::from_be(self.bytes(16)?).ok_or(BAD)?;
                    let Some(nack) = g.pel.get_mut(&id) else {
                        return Err(DecodeError::Corrupt("Consumer entry not found in group global PEL"));
                    };
                    if !owned.insert(id) || !c.pel.insert(id) {
                        return Err(DecodeError::Corrupt(
                            "Duplicated consumer PEL entry  loading a stream consumer group",
                        ));
                    }
                    nack.consumer = cname.clone();
                }
                g.consumers.insert(cname, c);
            }
            if owned.len() != g.pel.len() {
                // Checked by Redis in deep sanitization only.
                if deep {
                    return Err(DecodeError::Corrupt("Stream CG PEL entry without consumer"));
                }
                self.damaged("Stream CG PEL entry without consumer", false)?;
            }
            s.groups.insert(name, g);
        }
        Ok(s)
    }
}

/// Maps a failed check of an encoded aggregate to Redis's message for it.
fn corrupt(msg: &'static str) -> impl Fn(DecodeError) -> DecodeError {
    move |e| if e == BAD { DecodeError::Corrupt(msg) } else { e }
}

/// An empty aggregate is not a valid value (Redis skips them in files, refuses them in RESTORE).
fn non_empty(v: Value) -> R<Value> {
    let empty = match &v {
        Value::List(l) => l.is_empty(),
        Value::Set(s) => s.is_empty(),
        Value::Hash(h) => h.is_empty(),
        Value::ZSet(z) => z.is_empty(),
        _ => false,
    };
    if empty { Err(DecodeError::EmptyKey) } else { Ok(v) }
}

fn int_bytes(i: i64) -> SmallBytes {
    SmallBytes::from_slice(itoa::Buffer::new().format(i).as_bytes())
}

fn parse_score(b: &[u8]) -> R<f64> {
    let s = std::str::from_utf8(b).map_err(|_| BAD)?;
    match s {
        "inf" | "+inf" => Ok(f64::INFINITY),
        "-inf" => Ok(f64::NEG_INFINITY),
        _ => s.parse::<f64>().ok().filter(|d| !d.is_nan()).ok_or(BAD),
    }
}

/// Fields and values alternating, each field once.
fn hash_from_pairs(items: Vec<SmallBytes>) -> R<HashValue> {
    if !items.len().is_multiple_of(2) {
        return Err(BAD);
    }
    let mut h = HashValue::with_capacity(items.len() / 2);
    let mut it = items.into_iter();
    while let (Some(f), Some(v)) = (it.next(), it.next()) {
        if !h.insert(&f, &v) {
            return Err(BAD);
        }
    }
    Ok(h)
}

fn zset_from_pairs(items: &[SmallBytes]) -> R<ZSet> {
    if !items.len().is_multiple_of(2) {
        return Err(BAD);
    }
    let mut z = ZSet::new();
    for p in items.chunks(2) {
        if z.insert(&p[0], parse_score(&p[1])?).is_some() {
            return Err(BAD);
        }
    }
    Ok(z)
}

/// An intset's values, and whether they ascend strictly (the check Redis makes only in deep
/// sanitization); the header, size and count are always checked (`intsetValidateIntegrity`).
fn parse_intset(b: &[u8]) -> R<(Vec<i64>, bool)> {
    if b.len() < 8 {
        return Err(BAD);
    }
    let width = u32::from_le_bytes(b[0..4].try_into().map_err(|_| BAD)?) as usize;
    let n = u32::from_le_bytes(b[4..8].try_into().map_err(|_| BAD)?) as usize;
    if !matches!(width, 2 | 4 | 8) || b.len() != 8 + width.checked_mul(n).ok_or(BAD)? {
        return Err(BAD);
    }
    let v: Vec<i64> = b[8..]
        .chunks(width)
        .map(|c| match width {
            2 => i64::from(i16::from_le_bytes([c[0], c[1]])),
            4 => i64::from(i32::from_le_bytes([c[0], c[1], c[2], c[3]])),
            _ => i64::from_le_bytes([c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7]]),
        })
        .collect();
    // Redis's intsetValidateIntegrity: not empty; strictly ascending (sorted, no duplicates).
    if n == 0 {
        return Err(BAD);
    }
    let ascending = v.windows(2).all(|w| w[0] < w[1]);
    Ok((v, ascending))
}

/// A zipmap's fields and values, alternating (the hash encoding of Redis before 2.6, which RDB
/// files from then still carry): a count byte, then per pair `len field len free value free-bytes`,
/// lengths in one byte below 254 or 254 and four bytes, and 255 at the end.
fn parse_zipmap(b: &[u8]) -> R<Vec<SmallBytes>> {
    let mut r = Reader { data: b, pos: 1, checks: Checks::default(), damage: None, ran_out: false };
    let mut out = Vec::new();
    let len = |r: &mut Reader<'_>| -> R<Option<u64>> {
        Ok(match r.byte()? {
            255 => None,
            254 => Some(u64::from(u32::from_le_bytes(r.array()?))),
            n => Some(u64::from(n)),
        })
    };
    while let Some(flen) = len(&mut r)? {
        out.push(SmallBytes::from_slice(r.bytes(flen)?));
        let vlen = len(&mut r)?.ok_or(BAD)?;
        let free = r.byte()?;
        out.push(SmallBytes::from_slice(r.bytes(vlen)?));
        r.bytes(u64::from(free))?;
    }
    if b.is_empty() || r.pos != b.len() || out.is_empty() {
        return Err(BAD);
    }
    Ok(out)
}

/// A listpack entry's back-length (Redis's `lpEncodeBacklen`): the entry's size in 1 to 5 bytes,
/// read right to left, 7 bits each; every byte but the first (the most significant group) has
/// the high bit set.
fn backlen(size: u64) -> ([u8; 5], usize) {
    let n = match size {
        0..=127 => 1,
        128..16383 => 2,
        16383..2_097_151 => 3,
        2_097_151..268_435_455 => 4,
        _ => 5,
    };
    let mut b = [0u8; 5];
    for (i, slot) in b[..n].iter_mut().enumerate() {
        let group = ((size >> (7 * (n - 1 - i))) & 127) as u8;
        *slot = if i == 0 { group } else { group | 128 };
    }
    (b, n)
}

/// A listpack's entries as strings (integers in their decimal form).
fn parse_listpack(b: &[u8]) -> R<Vec<SmallBytes>> {
    if b.len() < 7 || u32::from_le_bytes(b[0..4].try_into().map_err(|_| BAD)?) as usize != b.len() {
        return Err(BAD);
    }
    let mut r = Reader { data: b, pos: 6, checks: Checks::default(), damage: None, ran_out: false };
    let mut out = Vec::new();
    loop {
        let start = r.pos;
        let e = r.byte()?;
        if e == 0xFF {
            break;
        }
        let item = if e & 0x80 == 0 {
            int_bytes(i64::from(e & 0x7F))
        } else if e & 0xC0 == 0x80 {
            SmallBytes::from_slice(r.bytes(u64::from(e & 0x3F))?)
        } else if e & 0xE0 == 0xC0 {
            let v = (u16::from(e & 0x1F) << 8) | u16::from(r.byte()?);
            // 13-bit two's complement.
            int_bytes(if v >= 1 << 12 { i64::from(v) - (1 << 13) } else { i64::from(v) })
        } else if e & 0xF0 == 0xE0 {
            let n = (u64::from(e & 0x0F) << 8) | u64::from(r.byte()?);
            SmallBytes::from_slice(r.bytes(n)?)
        } else {
            match e {
                0xF0 => {
                    let n = u32::from_le_bytes(r.array()?);
                    SmallBytes::from_slice(r.bytes(u64::from(n))?)
                }
                0xF1 => int_bytes(i64::from(i16::from_le_bytes(r.array()?))),
                0xF2 => {
                    let [a, b2, c] = r.array::<3>()?;
                    int_bytes(i64::from(i32::from_le_bytes([0, a, b2, c]) >> 8))
                }
                0xF3 => int_bytes(i64::from(i32::from_le_bytes(r.array()?))),
                0xF4 => int_bytes(i64::from_le_bytes(r.array()?)),
                _ => return Err(BAD),
            }
        };
        // The back-length must say the size of the entry so far.
        let (want, n) = backlen((r.pos - start) as u64);
        if r.bytes(n as u64)? != &want[..n] {
            return Err(BAD);
        }
        out.push(item);
    }
    // The header's element count, unless it says "too many to count" (65535).
    let count = u16::from_le_bytes([b[4], b[5]]);
    if r.pos != b.len() || (count != u16::MAX && usize::from(count) != out.len()) {
        return Err(BAD);
    }
    Ok(out)
}

/// A ziplist's entries as strings (Redis before 7.0 wrote small lists, hashes and sorted sets so).
fn parse_ziplist(b: &[u8]) -> R<Vec<SmallBytes>> {
    if b.len() < 11 || u32::from_le_bytes(b[0..4].try_into().map_err(|_| BAD)?) as usize != b.len() {
        return Err(BAD);
    }
    let mut r = Reader { data: b, pos: 10, checks: Checks::default(), damage: None, ran_out: false };
    let mut out = Vec::new();
    // Redis's ziplistValidateIntegrity: each entry's prevlen is the size of the one before it,
    // the tail offset names the last entry, the count (unless 65535) is the number of entries.
    let (mut prev_size, mut last) = (0u64, 10usize);
    loop {
        let start = r.pos;
        let first = r.byte()?;
        if first == 0xFF {
            break;
        }
        // prevlen: one byte, or 0xFE and four.
        let prevlen = if first == 0xFE { u64::from(u32::from_le_bytes(r.array()?)) } else { u64::from(first) };
        if prevlen != prev_size {
            return Err(BAD);
        }
        let e = r.byte()?;
        let item = match e >> 6 {
            0 => SmallBytes::from_slice(r.bytes(u64::from(e & 0x3F))?),
            1 => {
                let n = (u64::from(e & 0x3F) << 8) | u64::from(r.byte()?);
                SmallBytes::from_slice(r.bytes(n)?)
            }
            2 => {
                let n = u32::from_be_bytes(r.array()?);
                SmallBytes::from_slice(r.bytes(u64::from(n))?)
            }
            _ => match e {
                0xC0 => int_bytes(i64::from(i16::from_le_bytes(r.array()?))),
                0xD0 => int_bytes(i64::from(i32::from_le_bytes(r.array()?))),
                0xE0 => int_bytes(i64::from_le_bytes(r.array()?)),
                0xF0 => {
                    let [a, b2, c] = r.array::<3>()?;
                    int_bytes(i64::from(i32::from_le_bytes([0, a, b2, c]) >> 8))
                }
                0xFE => int_bytes(i64::from(r.byte()? as i8)),
                0xF1..=0xFD => int_bytes(i64::from(e & 0x0F) - 1),
                _ => return Err(BAD),
            },
        };
        out.push(item);
        prev_size = (r.pos - start) as u64;
        last = start;
    }
    let tail = u32::from_le_bytes(b[4..8].try_into().map_err(|_| BAD)?) as usize;
    let count = u16::from_le_bytes([b[8], b[9]]);
    if r.pos != b.len() || tail != last || (count != u16::MAX && usize::from(count) != out.len()) {
        return Err(BAD);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn limits() -> EncodingLimits {
        EncodingLimits::default()
    }

    /// Back-lengths as redis-server 7.0.15 writes them (a 200-byte list element is a 202-byte
    /// entry: `01 CA`; Latch wrote `81 4A` before, which Redis reads backwards as 74).
    #[test]
    fn listpack_backlen_is_redis_s() {
        assert_eq!(backlen(10), ([10, 0, 0, 0, 0], 1));
        assert_eq!(backlen(202), ([0x01, 0xCA, 0, 0, 0], 2));
        assert_eq!(backlen(16382).1, 2);
        assert_eq!(backlen(16383), ([0, 0xFF, 0xFF, 0, 0], 3));
        let mut v = ListValue::new();
        v.push_back(SmallBytes::from_slice(&[b'a'; 200]));
        let p = dump(&Value::List(Box::new(v)), false).expect("dumpable");
        let tail = &p[p.len() - 13..p.len() - 10];
        assert_eq!(tail, [0x01, 0xCA, 0xFF], "the element's back-length and the listpack's end");
    }

    fn roundtrip(v: &Value) -> Value {
        let p = dump(v, true).expect("dumpable");
        restore(verify_dump(&p).expect("valid footer")).expect("readable")
    }

    fn sb(s: &str) -> SmallBytes {
        SmallBytes::from_slice(s.as_bytes())
    }

    #[test]
    fn crc_is_redis_crc64() {
        assert_eq!(crc64(b"123456789"), 0xe9c6d914c4b8d9ca);
    }

    /// Payloads as redis-server 7.0.15's DUMP gives them.
    #[test]
    fn redis_payloads_read_and_strings_write_the_same() {
        let hello = b"\x00\x05hello\n\x00cr\xdfve4 \n";
        assert_eq!(restore(verify_dump(hello).unwrap()).unwrap().as_bytes().as_deref(), Some(&b"hello"[..]));
        assert_eq!(dump(&Value::string(b"hello"), true).unwrap(), hello.to_vec());
        let int = b"\x00\xc0{\n\x00H\xe2S\xe1\x00zg\xb9";
        assert_eq!(restore(verify_dump(int).unwrap()).unwrap().as_bytes().as_deref(), Some(&b"123"[..]));
        assert_eq!(dump(&Value::Int(123), true).unwrap(), int.to_vec());
    }

    #[test]
    fn every_type_and_encoding_round_trips() {
        let list: ListValue = (0..5000).map(|i| sb(&format!("element-{i}"))).collect();
        let small_set: SetValue = ["1", "2", "-70000", "3000000000"].iter().map(|s| sb(s)).collect();
        let big_set: SetValue = ["a", "b", "c"].iter().map(|s| sb(s)).collect();
        let small_hash: HashValue = [("f", "v"), ("n", "12")].iter().map(|(a, b)| (sb(a), sb(b))).collect();
        let big_hash: HashValue = (0..300).map(|i| (sb(&format!("f{i}")), sb(&"x".repeat(i)))).collect();
        let mut small_z = ZSet::new();
        small_z.insert(b"a", 1.5);
        small_z.insert(b"b", -3.0);
        small_z.insert(b"c", f64::INFINITY);
        let mut big_z = ZSet::new();
        for i in 0..500 {
            big_z.insert(format!("m{i}").as_bytes(), f64::from(i) / 3.0);
        }
        for mut v in [
            Value::string(b"a string long enough to be compressed compressed compressed"),
            Value::Int(-9_223_372_036_854_775_808),
            Value::List(Box::new(list)),
            Value::Set(small_set),
            Value::Set(big_set),
            Value::Hash(small_hash),
            Value::Hash(big_hash),
            Value::ZSet(small_z),
            Value::ZSet(big_z),
        ] {
            // Made whole, as a load makes a value: its encoding from what it holds.
            v.settle(&limits());
            let back = roundtrip(&v);
            let digest = |v: &Value| crate::cmd::debug::value_digest(&crate::value::Entry::new(v.clone()));
            assert_eq!(digest(&back), digest(&v));
        }
    }

    #[test]
    fn bad_payloads_are_refused_not_trusted() {
        let p = dump(&Value::string(b"hello"), true).unwrap();
        let mut flipped = p.clone();
        flipped[3] ^= 1;
        assert!(verify_dump(&flipped).is_none());
        let mut newer = p.clone();
        newer[7] = 11;
        assert!(verify_dump(&newer).is_none());
        // A length naming far more than the input holds.
        assert_eq!(restore(&[types::SET, 0x81, 0xFF, 0, 0, 0, 0, 0, 0, 0]).err(), Some(DecodeError::BadFormat));
        assert_eq!(restore(&[types::STREAM_LISTPACKS_2]).err(), Some(DecodeError::BadFormat));
        assert_eq!(restore(&[types::MODULE_2]).err(), Some(DecodeError::Unsupported("module")));
        assert_eq!(restore(&[types::SET, 0]).err(), Some(DecodeError::EmptyKey));
        assert_eq!(restore(&[types::STRING, 0xC3, 1, 0x7F, 0]).err(), Some(DecodeError::BadFormat));
    }

    #[test]
    fn streams_round_trip_and_every_flipped_byte_is_safe() {
        use crate::types::stream::{Group, NewId, NodeLimits, StreamId};
        let mut st = Stream::new();
        for i in 1..=150u64 {
            let v = i.to_string();
            let f: [&[u8]; 4] = [b"f", v.as_bytes(), b"g", b"x"];
            st.append(&f, NewId::Exact(StreamId::new(i, 0)), 0, NodeLimits::default()).unwrap();
        }
        st.delete_ids(&[StreamId::new(3, 0)]);
        let mut g = Group::new(StreamId::new(10, 0), 10);
        g.consumers.insert(SmallBytes::from_slice(b"c"), Consumer { seen_time: 5, pel: [StreamId::new(4, 0)].into() });
        g.pel.insert(
            StreamId::new(4, 0),
            Nack { delivery_time: 7, delivery_count: 2, consumer: SmallBytes::from_slice(b"c") },
        );
        st.groups.insert(SmallBytes::from_slice(b"grp"), g);
        let v = Value::Stream(Box::new(st.clone()));
        let body = dump(&v, false).unwrap();
        let Value::Stream(back) = roundtrip(&v) else { panic!("not a stream") };
        assert_eq!(*back, st);
        let inner = &body[..body.len() - 10];
        for i in 0..inner.len() {
            let mut bad = inner.to_vec();
            bad[i] ^= 0xA5;
            let shallow = restore_checked(&bad, Checks { deep: false, limits: limits() });
            for v in [restore(&bad), shallow] {
                if let Ok(Value::Stream(s)) = v {
                    // Accepted: every walk over it stays safe.
                    let _ = s.range(StreamId::MIN, StreamId::MAX, false, 0);
                    let _ = s.range(StreamId::MIN, StreamId::MAX, true, 0);
                    let _ = s.edge_id(true, true);
                }
            }
        }
    }

    fn shallow(limits: EncodingLimits) -> Checks {
        Checks { deep: false, limits }
    }

    /// Payloads of Redis 7.0.15's tests/integration/corrupt-dump.tcl (without their footer).
    const STREAM_BAD_LP_COUNT: &[u8] = b"\x0f\x01\x10\x00\x00\x01\x73\xde\xdf\x7d\x9b\x00\x00\x00\x00\x00\x00\x00\x00\x40\x42\x42\x00\x00\x00\x18\x00\x03\x01\x00\x01\x02\x01\x84\x69\x74\x65\x6d\x05\x85\x76\x61\x6c\x75\x65\x06\x00\x01\x02\x01\x00\x01\x00\x01\x01\x01\x00\x01\x56\x01\x02\x01\x22\x01\x00\x01\x01\x01\x82\x5f\x31\x03\x05\x01\x02\x01\x2c\x01\x00\x01\x01\x01\x02\x01\x05\x01\xff\x03\x81\x00\x00\x01\x73\xde\xdf\x7d\xc7\x00\x01\x07\x6d\x79\x67\x72\x6f\x75\x70\x81\x00\x00\x01\x73\xde\xdf\x7d\x9b\x00\x01\x00\x00\x01\x73\xde\xdf\x7d\x9b\x00\x00\x00\x00\x00\x00\x00\x00\xf9\x7d\xdf\xde\x73\x01\x00\x00\x01\x01\x05\x41\x6c\x69\x63\x65\xeb\x7d\xdf\xde\x73\x01\x00\x00\x01\x00\x00\x01\x73\xde\xdf\x7d\x9b\x00\x00\x00\x00\x00\x00\x00\x00";
    const STREAM_TOO_LONG_ENTRY: &[u8] = b"\x0f\x01\x10\x00\x00\x00\x00\x00\x00\x00\x02\x00\x00\x00\x00\x00\x00\x00\x02\x40\x55\x55\x00\x00\x00\x0f\x00\x01\x01\x00\x01\x02\x01\x88\x31\x00\x00\x00\x00\x00\x00\x00\x09\x88\x32\x00\x00\x00\x00\x00\x00\x00\x09\x00\x01\x00\x01\x00\x01\x00\x01\x02\x02\x89\x31\x00\x00\x00\x00\x00\x00\x00\x09\x88\x61\x00\x00\x00\x00\x00\x00\x00\x09\x88\x32\x00\x00\x00\x00\x00\x00\x00\x09\x88\x62\x00\x00\x00\x00\x00\x00\x00\x09\x08\x01\xff\x0a\x01\x00\x00";
    const HASH_LISTPACK_DUP: &[u8] =
        b"\x10\x17\x17\x00\x00\x00\x04\x00\x82\x61\x00\x03\x82\x62\x00\x03\x82\x61\x00\x03\x82\x64\x00\x03\xff";
    const HASH_LISTPACK_BAD_LAST_ENTRY: &[u8] = b"\x10\x39\x39\x00\x00\x00\x14\x00\x06\x01\x06\x01\x03\x01\x82\x5f\x33\x03\x07\x01\x82\x5f\x37\x03\x00\x01\x00\x01\x04\x01\x04\x01\x09\x01\x82\x5f\x39\x03\x05\x01\x82\x5f\x35\x03\x08\x01\x08\x01\x01\x01\x82\x5f\x31\x03\x02\x01\xf0\x01\xff";

    /// Without deep sanitization Redis keeps a stream whose node fails the deep check (and fails
    /// an assertion when a command walks it): Latch keeps it unread, and its DUMP is the payload.
    #[test]
    fn unsanitized_stream_with_a_bad_node_is_kept_damaged() {
        let v = restore_checked(STREAM_BAD_LP_COUNT, shallow(limits())).expect("kept");
        let Value::Damaged(d) = &v else { panic!("not damaged: {v:?}") };
        assert_eq!(
            (d.type_name(), d.what.as_str(), d.panic),
            ("stream", "Stream listpack integrity check failed.", false)
        );
        let p = dump(&v, true).unwrap();
        assert_eq!(&p[..p.len() - 10], STREAM_BAD_LP_COUNT, "DUMP gives the bytes back");
        assert_eq!(
            restore(STREAM_BAD_LP_COUNT).err(),
            Some(DecodeError::Corrupt("Stream listpack integrity check failed."))
        );
    }

    /// A node with an entry whose string length runs into the next one: kept damaged without
    /// deep checks; when that entry is the first, Redis's lpFirst asserts while loading it.
    #[test]
    fn unsanitized_stream_with_a_bad_entry() {
        let deep_err = Some(DecodeError::Corrupt("Stream listpack integrity check failed."));
        assert_eq!(restore(STREAM_TOO_LONG_ENTRY).err(), deep_err);
        assert!(matches!(restore_checked(STREAM_TOO_LONG_ENTRY, shallow(limits())), Ok(Value::Damaged(_))));
        // Type, node count, key (16 bytes), node length (2 bytes), the node's 6-byte header: its
        // first entry at 27 becomes a 9-byte string.
        let mut first = STREAM_TOO_LONG_ENTRY.to_vec();
        first[27] = 0x89;
        let e = restore_checked(&first, shallow(limits())).unwrap_err();
        assert!(matches!(e, DecodeError::Fatal { panic: false, .. }), "{e:?}");
        assert_eq!(restore(&first).err(), deep_err);
    }

    /// A hash listpack with a field twice: refused with deep checks; without, kept damaged below
    /// `hash-max-listpack-entries`, and above it the panic Redis's conversion meets.
    #[test]
    fn unsanitized_hash_listpack_with_duplicates() {
        assert_eq!(
            restore(HASH_LISTPACK_DUP).err(),
            Some(DecodeError::Corrupt("Hash listpack integrity check failed."))
        );
        assert!(matches!(restore_checked(HASH_LISTPACK_DUP, shallow(limits())), Ok(Value::Damaged(_))));
        let small = EncodingLimits { hash_entries: 1, ..limits() };
        match restore_checked(HASH_LISTPACK_DUP, shallow(small)) {
            Err(DecodeError::Fatal { what, panic: true }) => assert!(what.contains("listpack with dup elements")),
            other => panic!("{other:?}"),
        }
        let report = crash_report("x", true).join("\n");
        assert!(report.contains("Guru Meditation: x"));
        assert_eq!(crash_report("y", false)[0], "=== ASSERTION FAILED ===");
    }

    /// A hash listpack whose last entry names a length past its end (the lpFind fuzzer finding).
    #[test]
    fn unsanitized_hash_listpack_with_a_bad_entry_is_kept_damaged() {
        let v = restore_checked(HASH_LISTPACK_BAD_LAST_ENTRY, shallow(limits())).expect("kept");
        assert_eq!(v.type_name(), "hash");
        assert!(matches!(&v, Value::Damaged(d) if d.encoding() == "listpack"));
        assert_eq!(
            restore(HASH_LISTPACK_BAD_LAST_ENTRY).err(),
            Some(DecodeError::Corrupt("Hash listpack integrity check failed."))
        );
        // A header Redis's shallow check refuses is refused either way.
        let mut bad = HASH_LISTPACK_BAD_LAST_ENTRY.to_vec();
        bad[2] = 0x38;
        assert_eq!(
            restore_checked(&bad, shallow(limits())).err(),
            Some(DecodeError::Corrupt("Hash listpack integrity check failed."))
        );
    }

    /// An intset out of order: Redis checks the order only in deep sanitization.
    #[test]
    fn unsanitized_intset_out_of_order_is_kept_damaged() {
        let mut body = vec![types::SET_INTSET, 12];
        body.extend_from_slice(&[2, 0, 0, 0, 2, 0, 0, 0, 5, 0, 3, 0]);
        assert_eq!(restore(&body).err(), Some(DecodeError::Corrupt("Intset integrity check failed.")));
        assert!(matches!(restore_checked(&body, shallow(limits())), Ok(Value::Damaged(_))));
    }

    proptest::proptest! {
        #[test]
        fn any_bytes_decode_to_a_value_or_an_error(bytes in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..256)) {
            let _ = restore(&bytes);
            if let Some(body) = verify_dump(&bytes) {
                let _ = restore(body);
            }
            // Without deep checks: what is kept is a value Latch can walk, or a damaged one,
            // whose DUMP gives its bytes back.
            let shallow = Checks { deep: false, limits: EncodingLimits { hash_entries: 2, zset_entries: 2, ..EncodingLimits::default() } };
            match restore_checked(&bytes, shallow) {
                Ok(v @ Value::Damaged(_)) => {
                    let p = dump(&v, false).expect("dumpable");
                    proptest::prop_assert_eq!(&p[..p.len() - 10], &bytes[..]);
                }
                Ok(Value::Stream(s)) => {
                    let _ = s.range(StreamId::MIN, StreamId::MAX, true, 0);
                }
                _ => {}
            }
        }
    }
}
