//! Runtime configuration: one table of parameters serves the config file, `--name value` arguments,
//! `CONFIG GET/SET/REWRITE`, and the hot values the engine reads on every command (kept in atomics).

use parking_lot::RwLock;
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, Ordering};

/// How a parameter's value is validated and normalised.
#[derive(Clone, Copy, Debug)]
pub enum Kind {
    /// yes/no.
    Bool,
    /// Integer in [min, max].
    Int(i64, i64),
    /// Memory size with unit suffixes (k, kb, m, mb, g, gb), in [min, max] bytes.
    Memory(i64, i64),
    /// One of these words (case-insensitive).
    Enum(&'static [&'static str]),
    /// Any string.
    Str,
}

/// A parameter definition.
pub struct Param {
    /// Name as in redis.conf.
    pub name: &'static str,
    /// Older names accepted too.
    pub alias: Option<&'static str>,
    /// Validation.
    pub kind: Kind,
    /// Default value, as CONFIG GET shows it.
    pub default: &'static str,
    /// Can only be set at startup.
    pub immutable: bool,
}

const fn p(name: &'static str, kind: Kind, default: &'static str) -> Param {
    Param { name, alias: None, kind, default, immutable: false }
}
const fn imm(name: &'static str, kind: Kind, default: &'static str) -> Param {
    Param { name, alias: None, kind, default, immutable: true }
}

const MEM_MAX: i64 = i64::MAX;

/// Every parameter Latch knows. Parameters that only matter to Redis features Latch does not have yet
/// are accepted and stored so that clients and Redis's test suite can set them.
pub static PARAMS: &[Param] = &[
    imm("port", Kind::Int(0, 65535), "6379"),
    imm("bind", Kind::Str, "127.0.0.1 -::1"),
    imm("databases", Kind::Int(1, i32::MAX as i64), "16"),
    imm("daemonize", Kind::Bool, "no"),
    imm("io-threads", Kind::Int(0, 128), "0"),
    imm("shards", Kind::Int(0, 4096), "0"),
    p("requirepass", Kind::Str, ""),
    p("proto-max-bulk-len", Kind::Memory(1024 * 1024, MEM_MAX), "536870912"),
    p("client-query-buffer-limit", Kind::Memory(1024 * 1024, MEM_MAX), "1073741824"),
    p("maxclients", Kind::Int(1, i32::MAX as i64), "10000"),
    p("timeout", Kind::Int(0, i32::MAX as i64), "0"),
    p("tcp-keepalive", Kind::Int(0, i32::MAX as i64), "300"),
    p("hz", Kind::Int(1, 500), "10"),
    p("loglevel", Kind::Enum(&["debug", "verbose", "notice", "warning", "nothing"]), "notice"),
    p("logfile", Kind::Str, ""),
    p("slowlog-log-slower-than", Kind::Int(-1, i64::MAX), "10000"),
    p("slowlog-max-len", Kind::Int(0, i64::MAX), "128"),
    p("maxmemory", Kind::Memory(0, MEM_MAX), "0"),
    p(
        "maxmemory-policy",
        Kind::Enum(&[
            "volatile-lru",
            "volatile-lfu",
            "volatile-random",
            "volatile-ttl",
            "allkeys-lru",
            "allkeys-lfu",
            "allkeys-random",
            "noeviction",
        ]),
        "noeviction",
    ),
    p("lua-time-limit", Kind::Int(0, i64::MAX), "5000"),
    p("busy-reply-threshold", Kind::Int(0, i64::MAX), "5000"),
    p("save", Kind::Str, ""),
    p("appendonly", Kind::Bool, "no"),
    p("dir", Kind::Str, "."),
    p("dbfilename", Kind::Str, "dump.rdb"),
    p("notify-keyspace-events", Kind::Str, ""),
    p("protected-mode", Kind::Bool, "yes"),
    p("latency-tracking", Kind::Bool, "yes"),
];

/// The live configuration.
pub struct Config {
    values: RwLock<BTreeMap<&'static str, String>>,
    /// Hot copy of `proto-max-bulk-len`.
    pub proto_max_bulk_len: AtomicI64,
    /// Hot copy of `client-query-buffer-limit`.
    pub client_query_buffer_limit: AtomicI64,
    /// Hot copy of `slowlog-log-slower-than` (microseconds, -1 disables).
    pub slowlog_log_slower_than: AtomicI64,
    /// Hot copy of `slowlog-max-len`.
    pub slowlog_max_len: AtomicI64,
    /// Hot copy of `maxclients`.
    pub maxclients: AtomicI64,
    /// Hot copy of `timeout` (seconds, 0 = never).
    pub timeout: AtomicI64,
    /// Hot copy of `hz`.
    pub hz: AtomicU64,
    /// True when `requirepass` is non-empty.
    pub has_password: AtomicBool,
    requirepass: RwLock<Vec<u8>>,
}

impl Default for Config {
    fn default() -> Self {
        Config::new()
    }
}

fn find(name: &str) -> Option<&'static Param> {
    PARAMS.iter().find(|p| p.name.eq_ignore_ascii_case(name) || p.alias.is_some_and(|a| a.eq_ignore_ascii_case(name)))
}

/// Parses a memory size the way redis.conf does ("1gb", "512mb", "100k", "42").
pub fn parse_memory(s: &str) -> Option<i64> {
    let l = s.to_ascii_lowercase();
    let split = l.find(|c: char| !c.is_ascii_digit() && c != '-').unwrap_or(l.len());
    let (num, unit) = l.split_at(split);
    let n: i64 = num.parse().ok()?;
    let mul: i64 = match unit {
        "" | "b" => 1,
        "k" => 1000,
        "kb" => 1024,
        "m" => 1000 * 1000,
        "mb" => 1024 * 1024,
        "g" => 1000 * 1000 * 1000,
        "gb" => 1024 * 1024 * 1024,
        _ => return None,
    };
    n.checked_mul(mul)
}

impl Config {
    /// Defaults.
    pub fn new() -> Config {
        let c = Config {
            values: RwLock::new(BTreeMap::new()),
            proto_max_bulk_len: AtomicI64::new(0),
            client_query_buffer_limit: AtomicI64::new(0),
            slowlog_log_slower_than: AtomicI64::new(0),
            slowlog_max_len: AtomicI64::new(0),
            maxclients: AtomicI64::new(0),
            timeout: AtomicI64::new(0),
            hz: AtomicU64::new(10),
            has_password: AtomicBool::new(false),
            requirepass: RwLock::new(Vec::new()),
        };
        for p in PARAMS {
            c.set(p.name, p.default, true).expect("defaults are valid");
        }
        c
    }

    /// The value of a parameter, as CONFIG GET shows it.
    pub fn get(&self, name: &str) -> Option<String> {
        let p = find(name)?;
        self.values.read().get(p.name).cloned()
    }

    /// An integer parameter (0 if unset or not numeric).
    pub fn get_i64(&self, name: &str) -> i64 {
        self.get(name).and_then(|v| v.parse().ok()).unwrap_or(0)
    }

    /// The password, if one is required.
    pub fn requirepass(&self) -> Option<Vec<u8>> {
        let p = self.requirepass.read();
        (!p.is_empty()).then(|| p.clone())
    }

    /// Sets a parameter. `startup` allows immutable parameters. The error text is the reason part of
    /// Redis's message (the caller wraps it).
    pub fn set(&self, name: &str, value: &str, startup: bool) -> Result<(), String> {
        let p = find(name).ok_or_else(|| "Unknown option or number of arguments for CONFIG SET".to_string())?;
        if p.immutable && !startup {
            return Err("can't set immutable config".into());
        }
        let norm = match p.kind {
            Kind::Bool => match value.to_ascii_lowercase().as_str() {
                "yes" => "yes".to_string(),
                "no" => "no".to_string(),
                _ => return Err("argument must be 'yes' or 'no'".into()),
            },
            Kind::Int(min, max) => {
                let v: i64 = value.parse().map_err(|_| "argument couldn't be parsed into an integer".to_string())?;
                if v < min || v > max {
                    return Err(format!("argument must be between {min} and {max} inclusive"));
                }
                v.to_string()
            }
            Kind::Memory(min, max) => {
                let v = parse_memory(value).ok_or_else(|| "argument must be a memory value".to_string())?;
                if v < min || v > max {
                    return Err(format!("argument must be between {min} and {max} inclusive"));
                }
                v.to_string()
            }
            Kind::Enum(words) => {
                let l = value.to_ascii_lowercase();
                if !words.contains(&l.as_str()) {
                    return Err(format!("argument(s) must be one of the following: {}", words.join(", ")));
                }
                l
            }
            Kind::Str => value.to_string(),
        };
        self.apply(p.name, &norm);
        self.values.write().insert(p.name, norm);
        Ok(())
    }

    fn apply(&self, name: &str, v: &str) {
        let i = || v.parse::<i64>().unwrap_or(0);
        match name {
            "proto-max-bulk-len" => self.proto_max_bulk_len.store(i(), Ordering::Relaxed),
            "client-query-buffer-limit" => self.client_query_buffer_limit.store(i(), Ordering::Relaxed),
            "slowlog-log-slower-than" => self.slowlog_log_slower_than.store(i(), Ordering::Relaxed),
            "slowlog-max-len" => self.slowlog_max_len.store(i(), Ordering::Relaxed),
            "maxclients" => self.maxclients.store(i(), Ordering::Relaxed),
            "timeout" => self.timeout.store(i(), Ordering::Relaxed),
            "hz" => self.hz.store(i() as u64, Ordering::Relaxed),
            "requirepass" => {
                *self.requirepass.write() = v.as_bytes().to_vec();
                self.has_password.store(!v.is_empty(), Ordering::Relaxed);
            }
            "maxmemory-policy" => {
                crate::types::LFU_ENABLED.store(v.ends_with("lfu"), Ordering::Relaxed);
            }
            _ => {}
        }
    }

    /// (name, value) pairs whose name matches the glob `pattern`, sorted by name.
    pub fn matching(&self, pattern: &[u8]) -> Vec<(&'static str, String)> {
        let vals = self.values.read();
        let mut out = Vec::new();
        for p in PARAMS {
            let hit = crate::glob::matches(pattern, p.name.as_bytes(), true)
                || p.alias.is_some_and(|a| crate::glob::matches(pattern, a.as_bytes(), true));
            if hit && let Some(v) = vals.get(p.name) {
                out.push((p.name, v.clone()));
            }
        }
        out
    }

    /// Every (name, value), for CONFIG REWRITE.
    pub fn all(&self) -> Vec<(&'static str, String)> {
        self.values.read().iter().map(|(k, v)| (*k, v.clone())).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_and_validation() {
        let c = Config::new();
        assert_eq!(c.get("port").as_deref(), Some("6379"));
        assert_eq!(c.proto_max_bulk_len.load(Ordering::Relaxed), 512 * 1024 * 1024);
        c.set("maxmemory", "1mb", false).unwrap();
        assert_eq!(c.get("maxmemory").as_deref(), Some("1048576"));
        assert!(c.set("port", "1", false).is_err());
        assert!(c.set("hz", "0", false).is_err());
        assert!(c.set("appendonly", "maybe", false).is_err());
        c.set("requirepass", "s3cret", false).unwrap();
        assert_eq!(c.requirepass().as_deref(), Some(&b"s3cret"[..]));
    }
}
