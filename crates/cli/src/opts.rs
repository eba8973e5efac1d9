//! Command-line options, spelled as redis-cli's.
//!
//! Like redis-cli, options come first and the first word that is not an option starts the
//! command: everything after it is passed to the server untouched (`latch-cli INCRBY k -5`).

use std::ffi::OsString;

use clap::{ArgAction, Parser};

/// Output rendering of replies.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OutputMode {
    /// Quoted strings, `(integer)` tags and numbered aggregates (redis-cli `--no-raw`).
    Standard,
    /// Payloads as they are, one element per line (redis-cli `--raw`).
    Raw,
}

/// The connection options of latch-cli and of `latch-cli lock` (redis-cli's -h -p -s -a --user -u
/// -n), written once and flattened into both.
#[derive(clap::Args, Debug, Default, Clone)]
pub struct ConnArgs {
    /// Server hostname (default: 127.0.0.1).
    #[arg(short = 'h', value_name = "hostname")]
    pub host: Option<String>,
    /// Server port (default: 6379).
    #[arg(short = 'p', value_name = "port")]
    pub port: Option<u16>,
    /// Server socket (overrides hostname and port).
    #[arg(short = 's', value_name = "socket")]
    pub socket: Option<String>,
    /// Password to use when connecting to the server (LATCHCLI_AUTH or REDISCLI_AUTH in the
    /// environment is safer).
    #[arg(short = 'a', long = "pass", value_name = "password")]
    pub pass: Option<String>,
    /// Used to send ACL style 'AUTH username pass'. Needs -a.
    #[arg(long = "user", value_name = "username")]
    pub user: Option<String>,
    /// Server URI: redis://[[user]:password@]host[:port][/db].
    #[arg(short = 'u', value_name = "uri")]
    pub uri: Option<String>,
    /// Database number.
    #[arg(short = 'n', value_name = "db")]
    pub db: Option<i64>,
    /// Establish a secure TLS connection.
    #[arg(long = "tls")]
    pub tls: bool,
    /// Server name indication for TLS.
    #[arg(long = "sni", value_name = "host")]
    pub sni: Option<String>,
    /// CA Certificate file to verify with.
    #[arg(long = "cacert", value_name = "file")]
    pub cacert: Option<String>,
    /// Directory where trusted CA certificates are stored. If neither cacert nor cacertdir are
    /// specified, the default system-wide trusted root certs configuration will apply.
    #[arg(long = "cacertdir", value_name = "dir")]
    pub cacertdir: Option<String>,
    /// Allow insecure TLS connection by skipping cert validation.
    #[arg(long = "insecure")]
    pub insecure: bool,
    /// Client certificate to authenticate with.
    #[arg(long = "cert", value_name = "file")]
    pub cert: Option<String>,
    /// Private key file to authenticate with.
    #[arg(long = "key", value_name = "file")]
    pub key: Option<String>,
}

impl ConnArgs {
    /// These options over `conn`: each one given replaces what `conn` has, the URI last.
    pub fn apply(&self, mut conn: ConnInfo) -> Result<ConnInfo, String> {
        if let Some(h) = &self.host {
            conn.host = h.clone();
        }
        if let Some(p) = self.port {
            conn.port = p;
        }
        if self.socket.is_some() {
            conn.socket = self.socket.clone();
        }
        if self.pass.is_some() {
            conn.auth = self.pass.clone();
        }
        if self.user.is_some() {
            conn.user = self.user.clone();
        }
        if let Some(n) = self.db {
            conn.db = n;
        }
        if self.tls {
            conn.tls.enabled = true;
        }
        let t = &mut conn.tls;
        for (field, value) in [
            (&mut t.sni, &self.sni),
            (&mut t.cacert, &self.cacert),
            (&mut t.cacertdir, &self.cacertdir),
            (&mut t.cert, &self.cert),
            (&mut t.key, &self.key),
        ] {
            if value.is_some() {
                *field = value.clone();
            }
        }
        if self.insecure {
            t.insecure = true;
        }
        if let Some(u) = &self.uri {
            apply_uri(u, &mut conn).map_err(|e| e.0)?;
        }
        Ok(conn)
    }
}

/// latch-cli's command line as parsed by clap.
#[derive(Parser, Debug, Default)]
#[command(
    name = "latch-cli",
    about = "Command-line client for Latch (and any Redis-compatible server)",
    disable_help_flag = true,
    disable_version_flag = true,
    override_usage = "latch-cli [OPTIONS] [cmd [arg [arg ...]]]"
)]
pub struct Args {
    /// Where and as whom to connect.
    #[command(flatten)]
    pub conn: ConnArgs,
    /// Execute the command N times (negative: forever).
    #[arg(short = 'r', value_name = "repeat", allow_negative_numbers = true)]
    pub repeat: Option<i64>,
    /// When -r is used, waits this many seconds (may be fractional) between commands.
    #[arg(short = 'i', value_name = "interval")]
    pub interval: Option<f64>,
    /// Read the last argument from standard input.
    #[arg(short = 'x')]
    pub stdin_last_arg: bool,
    /// Exit with an error status (and the error on stderr) when a command fails.
    #[arg(short = 'e')]
    pub errcode: bool,
    /// Start the session in RESP2 protocol mode.
    #[arg(short = '2', long = "resp2")]
    pub resp2: bool,
    /// Start the session in RESP3 protocol mode (HELLO 3).
    #[arg(short = '3', long = "resp3")]
    pub resp3: bool,
    /// Use raw formatting for replies (default when stdout is not a tty).
    #[arg(long = "raw", overrides_with = "no_raw")]
    pub raw: bool,
    /// Force formatted output even when stdout is not a tty.
    #[arg(long = "no-raw", overrides_with = "raw")]
    pub no_raw: bool,
    /// Delimiter between elements of a raw-formatted aggregate (default: \n).
    #[arg(short = 'd', value_name = "delimiter")]
    pub mb_delim: Option<String>,
    /// Delimiter between raw-formatted replies (default: \n).
    #[arg(short = 'D', value_name = "delimiter")]
    pub cmd_delim: Option<String>,
    /// Don't warn about the password given with -a or -u.
    #[arg(long = "no-auth-warning")]
    pub no_auth_warning: bool,
    /// Show RESP3 push messages: y(es) or n(o) (default: yes when stdout is a tty).
    #[arg(long = "show-pushes", value_name = "yn")]
    pub show_pushes: Option<String>,
    /// Output this help and exit.
    #[arg(long = "help", action = ArgAction::Help)]
    pub help: Option<bool>,
    /// Output version and exit.
    #[arg(short = 'v', long = "version")]
    pub version: bool,
    /// The command and its arguments; without one, latch-cli starts an interactive session.
    #[arg(trailing_var_arg = true, allow_hyphen_values = true, value_name = "cmd")]
    pub command: Vec<OsString>,
}

/// Connection target and credentials, after merging -h/-p/-a/--user/-n with -u.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConnInfo {
    /// Host name or address.
    pub host: String,
    /// TCP port.
    pub port: u16,
    /// Unix socket path, used instead of host/port when set.
    pub socket: Option<String>,
    /// ACL user for `AUTH user pass`.
    pub user: Option<String>,
    /// Password (`AUTH pass`).
    pub auth: Option<String>,
    /// Database to SELECT after connecting.
    pub db: i64,
    /// TLS, as redis-cli's `--tls` options (or a `rediss://` URI) ask.
    pub tls: TlsInfo,
}

/// redis-cli's TLS options: `--tls`, `--sni`, `--cacert`, `--cacertdir`, `--insecure`, `--cert`,
/// `--key`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TlsInfo {
    /// Connect over TLS.
    pub enabled: bool,
    /// The server name sent and verified (default: the host).
    pub sni: Option<String>,
    /// A PEM file of trusted CAs.
    pub cacert: Option<String>,
    /// A directory of PEM files of trusted CAs.
    pub cacertdir: Option<String>,
    /// Skip verifying the server's certificate.
    pub insecure: bool,
    /// Client certificate (PEM).
    pub cert: Option<String>,
    /// Client private key (PEM).
    pub key: Option<String>,
}

impl Default for ConnInfo {
    fn default() -> ConnInfo {
        ConnInfo {
            host: "127.0.0.1".into(),
            port: 6379,
            socket: None,
            user: None,
            auth: None,
            db: 0,
            tls: TlsInfo::default(),
        }
    }
}

/// A `-u` URI that cannot be used.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UriError(pub String);

/// Decodes `%XX` escapes (as redis-cli's percentDecode: an invalid escape is kept as is).
fn percent_decode(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%' && i + 2 < b.len() {
            let hex = std::str::from_utf8(&b[i + 1..i + 3]).ok();
            if let Some(v) = hex.and_then(|h| u8::from_str_radix(h, 16).ok()) {
                out.push(v);
                i += 3;
                continue;
            }
        }
        out.push(b[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Applies a `redis://[[user]:password@]host[:port][/db]` URI to `info`, following redis-cli's
/// parseRedisUri (`rediss://` turns TLS on).
pub fn apply_uri(uri: &str, info: &mut ConnInfo) -> Result<(), UriError> {
    let lower = uri.to_ascii_lowercase();
    let rest = if lower.starts_with("rediss://") {
        info.tls.enabled = true;
        &uri["rediss://".len()..]
    } else if lower.starts_with("redis://") {
        &uri["redis://".len()..]
    } else {
        return Err(UriError("Invalid URI scheme".into()));
    };
    let mut cur = rest;
    if cur.is_empty() {
        return Ok(());
    }
    if let Some(at) = cur.find('@') {
        let userinfo = &cur[..at];
        match userinfo.find(':') {
            Some(colon) => {
                info.user = Some(percent_decode(&userinfo[..colon]));
                info.auth = Some(percent_decode(&userinfo[colon + 1..]));
            }
            None => info.auth = Some(percent_decode(userinfo)),
        }
        cur = &cur[at + 1..];
    }
    if cur.is_empty() {
        return Ok(());
    }
    let path = cur.find('/');
    if !cur.starts_with('/') {
        let hostport = &cur[..path.unwrap_or(cur.len())];
        match hostport.find(':') {
            Some(colon) => {
                info.port = u16::try_from(resp::atoi(&hostport.as_bytes()[colon + 1..])).unwrap_or(0);
                info.host = hostport[..colon].to_string();
            }
            None => info.host = hostport.to_string(),
        }
    }
    if let Some(p) = path {
        let db = &cur[p + 1..];
        if !db.is_empty() {
            info.db = resp::atoi(db.as_bytes());
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(args: &[&str]) -> Args {
        Args::try_parse_from(std::iter::once("latch-cli").chain(args.iter().copied())).unwrap()
    }

    #[test]
    fn options_stop_at_the_command() {
        let a = parse(&["-h", "10.0.0.1", "-p", "7000", "-n", "2", "incrby", "k", "-5", "-p"]);
        assert_eq!(a.conn.host.as_deref(), Some("10.0.0.1"));
        assert_eq!(a.conn.port, Some(7000));
        assert_eq!(a.conn.db, Some(2));
        assert_eq!(a.command, ["incrby", "k", "-5", "-p"]);
    }

    #[test]
    fn raw_flags_last_one_wins() {
        let a = parse(&["--raw", "--no-raw"]);
        assert!(a.no_raw && !a.raw);
        let a = parse(&["--no-raw", "--raw", "ping"]);
        assert!(a.raw && !a.no_raw);
    }

    #[test]
    fn flags() {
        let a = parse(&["-x", "-e", "-3", "-r", "-1", "-i", "0.5", "--no-auth-warning", "set", "k"]);
        assert!(a.stdin_last_arg && a.errcode && a.resp3 && a.no_auth_warning);
        assert_eq!(a.repeat, Some(-1));
        assert_eq!(a.interval, Some(0.5));
        let a = parse(&["--user", "bob", "--pass", "pw", "--resp2"]);
        assert_eq!((a.conn.user.as_deref(), a.conn.pass.as_deref(), a.resp2), (Some("bob"), Some("pw"), true));
    }

    #[test]
    fn uri() {
        let mut info = ConnInfo::default();
        apply_uri("redis://bob:s%40cret@example.com:7000/3", &mut info).unwrap();
        assert_eq!(info.user.as_deref(), Some("bob"));
        assert_eq!(info.auth.as_deref(), Some("s@cret"));
        assert_eq!((info.host.as_str(), info.port, info.db), ("example.com", 7000, 3));

        let mut info = ConnInfo::default();
        apply_uri("redis://pw@h", &mut info).unwrap();
        assert_eq!((info.user, info.auth.as_deref(), info.host.as_str(), info.port), (None, Some("pw"), "h", 6379));

        let mut info = ConnInfo::default();
        apply_uri("REDIS:///5", &mut info).unwrap();
        assert_eq!((info.host.as_str(), info.db), ("127.0.0.1", 5));

        assert_eq!(apply_uri("http://x", &mut ConnInfo::default()), Err(UriError("Invalid URI scheme".into())));
        let mut info = ConnInfo::default();
        apply_uri("rediss://x:7000", &mut info).unwrap();
        assert!(info.tls.enabled);
        assert_eq!((info.host.as_str(), info.port), ("x", 7000));
    }
}
