//! `HELP <command>` and `HELP @<group>`, built from the server's `COMMAND DOCS` like redis-cli 7.
//!
//! Each command and subcommand becomes an entry (`SET`, `CONFIG GET`) with an argument summary
//! rendered from the docs' argument tree (`key value [NX|XX] [GET] ...`). Entries are sorted by
//! name; `HELP` matches the words typed against the entry's words, case-insensitively.

use resp::Frame;

/// One command's help.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HelpEntry {
    /// Upper-case words of the name: `["CONFIG", "GET"]`.
    pub words: Vec<String>,
    /// The full name: `CONFIG GET`.
    pub full: String,
    /// Argument summary, e.g. `key value [NX|XX]`.
    pub params: String,
    /// One-line summary.
    pub summary: String,
    /// Version that introduced the command, if known.
    pub since: Option<String>,
    /// Command group, e.g. `string`.
    pub group: String,
}

fn text(f: &Frame) -> Option<String> {
    match f {
        Frame::Bulk(b) | Frame::Simple(b) => Some(String::from_utf8_lossy(b).into_owned()),
        Frame::Verbatim { text, .. } => Some(String::from_utf8_lossy(text).into_owned()),
        _ => None,
    }
}

/// Key/value pairs of a RESP3 map or of its RESP2 form, a flat array.
fn pairs(f: &Frame) -> Vec<(&Frame, &Frame)> {
    match f {
        Frame::Map(p) => p.iter().map(|(k, v)| (k, v)).collect(),
        Frame::Array(v) => v.chunks_exact(2).map(|c| (&c[0], &c[1])).collect(),
        _ => Vec::new(),
    }
}

fn list(f: &Frame) -> &[Frame] {
    match f {
        Frame::Array(v) | Frame::Set(v) => v,
        _ => &[],
    }
}

/// Appends `value`, or `""` when it is empty (redis-cli's sdscat_orempty).
fn push_or_empty(out: &mut String, value: &str) {
    out.push_str(if value.is_empty() { "\"\"" } else { value });
}

fn concat_arguments(out: &mut String, args: &[Frame], sep: &str) {
    for (i, a) in args.iter().enumerate() {
        add_argument(out, a);
        if i + 1 != args.len() {
            out.push_str(sep);
        }
    }
}

/// Renders one argument of the docs tree (cliAddArgument).
fn add_argument(out: &mut String, arg: &Frame) {
    let (mut name, mut typ) = (String::new(), String::new());
    let mut token: Option<String> = None;
    let mut nested: &[Frame] = &[];
    let (mut optional, mut multiple, mut multiple_token) = (false, false, false);
    for (k, v) in pairs(arg) {
        match text(k).as_deref() {
            Some("name") => name = text(v).unwrap_or_default(),
            Some("token") => token = text(v),
            Some("type") => typ = text(v).unwrap_or_default(),
            Some("arguments") => nested = list(v),
            Some("flags") => {
                for flag in list(v).iter().filter_map(text) {
                    match flag.as_str() {
                        "optional" => optional = true,
                        "multiple" => multiple = true,
                        "multiple_token" => multiple_token = true,
                        _ => {}
                    }
                }
            }
            _ => {}
        }
    }
    let mut token_part = String::new();
    if let Some(t) = token {
        push_or_empty(&mut token_part, &t);
    }
    let mut repeat = String::new();
    match typ.as_str() {
        "key" | "string" | "integer" | "double" | "pattern" | "unix-time" | "token" => {
            push_or_empty(&mut repeat, &name)
        }
        "oneof" => concat_arguments(&mut repeat, nested, "|"),
        "block" => concat_arguments(&mut repeat, nested, " "),
        _ => {}
    }
    if !token_part.is_empty() && typ != "pure-token" {
        token_part.push(' ');
    }
    if optional {
        out.push('[');
    }
    out.push_str(&token_part);
    out.push_str(&repeat);
    if multiple {
        out.push_str(" [");
        if multiple_token {
            out.push_str(&token_part);
        }
        out.push_str(&repeat);
        out.push_str(" ...]");
    }
    if optional {
        out.push(']');
    }
}

fn add_entries(cmd: &str, sub: Option<&str>, docs: &Frame, out: &mut Vec<HelpEntry>) {
    let mut words = vec![cmd.to_ascii_uppercase()];
    if let Some(s) = sub {
        // Subcommands are named "container|sub".
        words.push(s.split_once('|').map_or(s, |(_, b)| b).to_ascii_uppercase());
    }
    let mut e = HelpEntry {
        full: words.join(" "),
        words,
        params: String::new(),
        summary: String::new(),
        since: None,
        group: String::new(),
    };
    let mut subs = Vec::new();
    for (k, v) in pairs(docs) {
        match text(k).as_deref() {
            Some("summary") => e.summary = text(v).unwrap_or_default(),
            Some("since") => e.since = text(v),
            Some("group") => e.group = text(v).unwrap_or_default(),
            Some("arguments") => concat_arguments(&mut e.params, list(v), " "),
            Some("subcommands") => subs = pairs(v),
            _ => {}
        }
    }
    out.push(e);
    for (name, sub_docs) in subs {
        if let Some(name) = text(name) {
            add_entries(cmd, Some(&name), sub_docs, out);
        }
    }
}

/// Builds the sorted help table from a `COMMAND DOCS` reply (map or flat array).
pub fn entries_from_docs(docs: &Frame) -> Vec<HelpEntry> {
    let mut out = Vec::new();
    for (name, d) in pairs(docs) {
        if let Some(name) = text(name) {
            add_entries(&name, None, d, &mut out);
        }
    }
    out.sort_by(|a, b| a.full.as_bytes().cmp(b.full.as_bytes()));
    out
}

/// The command groups present in the table, sorted (used for completion of `HELP @`).
pub fn groups(entries: &[HelpEntry]) -> Vec<String> {
    let mut g: Vec<String> = entries.iter().map(|e| e.group.clone()).filter(|g| !g.is_empty()).collect();
    g.sort();
    g.dedup();
    g
}

fn output_entry(e: &HelpEntry, with_group: bool, out: &mut String) {
    out.push_str(&format!("\r\n  \x1b[1m{}\x1b[0m \x1b[90m{}\x1b[0m\r\n", e.full, e.params));
    out.push_str(&format!("  \x1b[33msummary:\x1b[0m {}\r\n", e.summary));
    if let Some(since) = &e.since {
        out.push_str(&format!("  \x1b[33msince:\x1b[0m {since}\r\n"));
    }
    if with_group {
        out.push_str(&format!("  \x1b[33mgroup:\x1b[0m {}\r\n", e.group));
    }
}

/// The text `HELP` prints without arguments.
pub fn generic_help() -> String {
    format!(
        "latch-cli {}\n\
         To get help about Latch commands type:\n      \
         \"help @<group>\" to get a list of commands in <group>\n      \
         \"help <command>\" for help on <command>\n      \
         \"help <tab>\" to get a list of possible help topics\n      \
         \"quit\" to exit\n\
         \n\
         To set latch-cli preferences:\n      \
         \":set hints\" enable online hints\n      \
         \":set nohints\" disable online hints\n\
         Set your preferences in ~/.latchclirc\n",
        env!("CARGO_PKG_VERSION")
    )
}

/// The text `HELP <args>` prints (`args` are the words after HELP, at least one).
pub fn output_help(entries: &[HelpEntry], args: &[String]) -> String {
    let mut out = String::new();
    let group = args.first().and_then(|a| a.strip_prefix('@'));
    for e in entries {
        match group {
            Some(g) => {
                if g.eq_ignore_ascii_case(&e.group) {
                    output_entry(e, false, &mut out);
                }
            }
            None => {
                if args.len() <= e.words.len() && args.iter().zip(&e.words).all(|(a, w)| a.eq_ignore_ascii_case(w)) {
                    output_entry(e, true, &mut out);
                }
            }
        }
    }
    out.push_str("\r\n");
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use resp::Bytes;

    fn b(s: &str) -> Frame {
        Frame::Bulk(Bytes::copy_from_slice(s.as_bytes()))
    }

    fn st(s: &str) -> Frame {
        Frame::Simple(Bytes::copy_from_slice(s.as_bytes()))
    }

    fn map(kv: Vec<(&str, Frame)>) -> Frame {
        Frame::Map(kv.into_iter().map(|(k, v)| (b(k), v)).collect())
    }

    fn arg(name: &str, typ: &str, extra: Vec<(&str, Frame)>) -> Frame {
        let mut kv = vec![("name", b(name)), ("type", b(typ))];
        kv.extend(extra);
        map(kv)
    }

    /// The docs of SET and CONFIG (with CONFIG GET) in the shape Redis 7.0 sends them.
    fn docs() -> Frame {
        let opt = || ("flags", Frame::Set(vec![st("optional")]));
        let set_args = Frame::Array(vec![
            arg("key", "key", vec![]),
            arg("value", "string", vec![]),
            arg(
                "condition",
                "oneof",
                vec![
                    opt(),
                    (
                        "arguments",
                        Frame::Array(vec![
                            arg("nx", "pure-token", vec![("token", b("NX"))]),
                            arg("xx", "pure-token", vec![("token", b("XX"))]),
                        ]),
                    ),
                ],
            ),
            arg("get", "pure-token", vec![("token", b("GET")), opt()]),
            arg(
                "expiration",
                "oneof",
                vec![
                    opt(),
                    (
                        "arguments",
                        Frame::Array(vec![
                            arg("seconds", "integer", vec![("token", b("EX"))]),
                            arg("keepttl", "pure-token", vec![("token", b("KEEPTTL"))]),
                        ]),
                    ),
                ],
            ),
        ]);
        let config_get = map(vec![
            ("summary", b("Get the values of configuration parameters")),
            ("since", b("2.0.0")),
            ("group", b("server")),
            (
                "arguments",
                Frame::Array(vec![arg(
                    "parameter",
                    "block",
                    vec![
                        ("flags", Frame::Set(vec![st("multiple")])),
                        ("arguments", Frame::Array(vec![arg("parameter", "string", vec![])])),
                    ],
                )]),
            ),
        ]);
        Frame::Map(vec![
            (
                b("set"),
                map(vec![
                    ("summary", b("Set the string value of a key")),
                    ("since", b("1.0.0")),
                    ("group", b("string")),
                    ("arguments", set_args),
                ]),
            ),
            (
                b("config"),
                map(vec![
                    ("summary", b("A container for server configuration commands")),
                    ("since", b("2.0.0")),
                    ("group", b("server")),
                    ("subcommands", Frame::Map(vec![(b("config|get"), config_get)])),
                ]),
            ),
        ])
    }

    #[test]
    fn params_rendering() {
        let e = entries_from_docs(&docs());
        let names: Vec<&str> = e.iter().map(|e| e.full.as_str()).collect();
        assert_eq!(names, ["CONFIG", "CONFIG GET", "SET"]);
        assert_eq!(e[2].params, "key value [NX|XX] [GET] [EX seconds|KEEPTTL]");
        assert_eq!(e[1].params, "parameter [parameter ...]");
        assert_eq!(e[0].params, "");
        assert_eq!(groups(&e), ["server", "string"]);
    }

    // Expected texts recorded from redis-cli 7.0.15 (`redis-cli help set`, `help config get`).
    #[test]
    fn help_output() {
        let e = entries_from_docs(&docs());
        assert_eq!(
            output_help(&e, &["config".into(), "GET".into()]),
            "\r\n  \x1b[1mCONFIG GET\x1b[0m \x1b[90mparameter [parameter ...]\x1b[0m\r\n  \x1b[33msummary:\x1b[0m Get \
             the values of configuration parameters\r\n  \x1b[33msince:\x1b[0m 2.0.0\r\n  \x1b[33mgroup:\x1b[0m \
             server\r\n\r\n"
        );
        let config = output_help(&e, &["Config".into()]);
        assert_eq!(config.matches("summary:").count(), 2);
        assert_eq!(output_help(&e, &["nosuch".into()]), "\r\n");
        let group = output_help(&e, &["@STRING".into()]);
        assert!(group.starts_with("\r\n  \x1b[1mSET\x1b[0m"), "{group:?}");
        assert!(!group.contains("group:"));
    }

    #[test]
    fn resp2_flat_docs() {
        // RESP2 sends maps as flat arrays and sets as arrays.
        let d = Frame::Array(vec![
            b("get"),
            Frame::Array(vec![
                b("summary"),
                b("Get the value of a key"),
                b("group"),
                b("string"),
                b("arguments"),
                Frame::Array(vec![Frame::Array(vec![b("name"), b("key"), b("type"), b("key")])]),
            ]),
        ]);
        let e = entries_from_docs(&d);
        assert_eq!(e.len(), 1);
        assert_eq!((e[0].full.as_str(), e[0].params.as_str(), e[0].since.as_deref()), ("GET", "key", None));
    }
}
