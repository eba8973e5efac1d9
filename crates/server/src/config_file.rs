//! Reading redis.conf-style files and `--name value` arguments into the engine's [`Config`].

use engine::config::Config;
use std::fmt;

/// A configuration problem; printed like Redis's "FATAL CONFIG FILE ERROR" and startup stops.
#[derive(Debug)]
pub struct ConfigError {
    /// Where: "at line N" of a file, or "from the command line".
    pub location: String,
    /// The offending line.
    pub line: String,
    /// Why.
    pub reason: String,
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "\n*** FATAL CONFIG FILE ERROR (Latch {}) ***", engine::server::LATCH_VERSION)?;
        writeln!(f, "Reading the configuration file, {}", self.location)?;
        writeln!(f, ">>> '{}'", self.line)?;
        write!(f, "{}", self.reason)
    }
}

impl std::error::Error for ConfigError {}

/// Builds configuration text from `argv[1..]` the way redis-server does: an optional config file path
/// first (or `-` for stdin), then `--name value [value...]` options, each becoming a line.
pub fn assemble(args: &[String], read_file: impl Fn(&str) -> std::io::Result<String>) -> Result<String, String> {
    let mut text = String::new();
    let mut i = 0;
    if let Some(first) = args.first()
        && !first.starts_with("--")
    {
        {
            let content =
                read_file(first).map_err(|e| format!("Fatal error, can't open config file '{first}': {e}"))?;
            text.push_str(&content);
            text.push('\n');
            i = 1;
        }
    }
    // Redis appends the options after a newline, file or not: without a file they start at line 2.
    if i == 0 && !args.is_empty() {
        text.push('\n');
    }
    let mut line = String::new();
    // Redis's rule: right after an option name that came without a value, the next argument is
    // its value even when it starts with `--` (`--port --loglevel` gives port the value
    // "--loglevel"); once an option has a value, `--name` starts the next one.
    let mut awaiting_value = false;
    while i < args.len() {
        let a = &args[i];
        match a.strip_prefix("--") {
            Some(name) if !awaiting_value => {
                if !line.is_empty() {
                    text.push_str(&line);
                    text.push('\n');
                }
                line = name.to_string();
                // "--maxmemory 700mb" in one argument carries its value.
                awaiting_value = resp::split_args(name.as_bytes()).is_some_and(|w| w.len() == 1);
                // `--save` followed by another option, or last: an empty save, as in Redis 7.0.1+.
                let next_is_option = args.get(i + 1).is_none_or(|n| n.starts_with("--"));
                if awaiting_value && name.eq_ignore_ascii_case("save") && next_is_option {
                    line.push_str(" \"\"");
                    awaiting_value = false;
                }
            }
            _ => {
                // A bare word with no option before it starts a line of its own, as in Redis
                // (`redis-server file loglevel verbose` works there too).
                if !line.is_empty() {
                    line.push(' ');
                }
                line.push_str(&quote(a));
                awaiting_value = false;
            }
        }
        i += 1;
    }
    if !line.is_empty() {
        text.push_str(&line);
        text.push('\n');
    }
    Ok(text)
}

/// Quotes an argument so that `split_args` gives it back unchanged (empty strings included).
fn quote(a: &str) -> String {
    let mut s = String::from("\"");
    for c in a.chars() {
        match c {
            '"' => s.push_str("\\\""),
            '\\' => s.push_str("\\\\"),
            '\n' => s.push_str("\\n"),
            '\r' => s.push_str("\\r"),
            c => s.push(c),
        }
    }
    s.push('"');
    s
}

/// Applies configuration text to `config`.
pub fn apply(config: &Config, text: &str) -> Result<(), ConfigError> {
    // The first `save` line replaces the default; each later one adds its points (Redis's
    // `save` special case while loading).
    let mut saw_save = false;
    for (n, raw) in text.lines().enumerate() {
        let trimmed = raw.trim();
        if trimmed.is_empty() || trimmed.starts_with('#') {
            continue;
        }
        let err =
            |reason: String| ConfigError { location: format!("at line {}", n + 1), line: trimmed.to_string(), reason };
        let Some(parts) = resp::split_args(trimmed.as_bytes()) else {
            return Err(err("Unbalanced quotes in configuration line".into()));
        };
        let parts: Vec<String> = parts.into_iter().map(|p| String::from_utf8_lossy(&p).into_owned()).collect();
        let Some((name, values)) = parts.split_first() else { continue };
        if name.eq_ignore_ascii_case("rename-command") {
            let [old, new] = values else {
                return Err(err("Bad directive or wrong number of arguments".into()));
            };
            let mut renames = config.renames.lock();
            renames.push((old.clone(), new.clone()));
            engine::cmd::table().renamed(&renames).map_err(err)?;
            continue;
        }
        if name.eq_ignore_ascii_case("user") && !values.is_empty() {
            let words: Vec<bytes::Bytes> = parts.iter().map(|p| bytes::Bytes::from(p.clone().into_bytes())).collect();
            let mut users = config.acl_user_lines.lock();
            let dup = users.iter().any(|u| u.first() == words.get(1));
            let checked = if dup {
                Err((1, "Duplicate user found. A user can only be defined once in config files"))
            } else {
                engine::acl::validate_user_line(&words[2..])
            };
            if let Err((at, why)) = checked {
                let word = parts.get(at).cloned().unwrap_or_default();
                return Err(err(format!("Error in user declaration '{word}': {why}")));
            }
            users.push(words[1..].to_vec());
            continue;
        }
        // A parameter taking several arguments may be given none (`save` alone, as the Tcl suite
        // writes `save ""`): Redis hands its setter an empty list. Any other needs exactly one.
        let param = engine::config::find(name);
        let multi = param.is_some_and(|p| p.flags & engine::config::MULTI != 0);
        if !multi && (values.is_empty() || (param.is_some() && values.len() != 1)) {
            return Err(err("wrong number of arguments".into()));
        }
        let mut value = values.join(" ");
        if name.eq_ignore_ascii_case("save") {
            let before = config.get("save").unwrap_or_default();
            if saw_save && !before.is_empty() && !value.trim().is_empty() {
                value = format!("{before} {value}");
            }
            saw_save = true;
        }
        config.set(&name.to_ascii_lowercase(), &value, true).map_err(|reason| {
            if reason.starts_with("Unknown option") {
                err(format!("Bad directive or wrong number of arguments: unknown option '{name}'"))
            } else {
                err(format!("Invalid value for '{name}': {reason}"))
            }
        })?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn args_become_lines() {
        let args: Vec<String> =
            ["--port", "7000", "--save", "", "--bind", "127.0.0.1", "::1"].iter().map(|s| s.to_string()).collect();
        let text = assemble(&args, |_| unreachable!()).unwrap();
        assert_eq!(text, "\nport \"7000\"\nsave \"\"\nbind \"127.0.0.1\" \"::1\"\n");
        let c = Config::new();
        apply(&c, &text).unwrap();
        assert_eq!(c.get("port").as_deref(), Some("7000"));
        assert_eq!(c.get("bind").as_deref(), Some("127.0.0.1 ::1"));
    }

    /// redis-server 7.0's argument rules (unit/introspection's "command line arguments" tests).
    #[test]
    fn redis_argument_rules() {
        let lines = |a: &[&str]| {
            let args: Vec<String> = a.iter().map(|s| s.to_string()).collect();
            assemble(&args, |_| Ok(String::new())).unwrap()
        };
        // A value may start with `--` right after its option's name.
        assert_eq!(lines(&["--port", "--loglevel", "verbose"]), "\nport \"--loglevel\" \"verbose\"\n");
        assert_eq!(lines(&["--port", "--bla", "--loglevel", "verbose"]), "\nport \"--bla\"\nloglevel \"verbose\"\n");
        // Name and value in one argument.
        assert_eq!(lines(&["--maxmemory 700mb", "--loglevel", "debug"]), "\nmaxmemory 700mb\nloglevel \"debug\"\n");
        // `--save` alone, before another option or last, is an empty save.
        assert_eq!(lines(&["--save", "--loglevel", "verbose"]), "\nsave \"\"\nloglevel \"verbose\"\n");
        assert_eq!(lines(&["--loglevel", "verbose", "--save"]), "\nloglevel \"verbose\"\nsave \"\"\n");
        // Bare words after the file form a line of their own.
        assert_eq!(lines(&["f.conf", "loglevel", "verbose"]), "\n\"loglevel\" \"verbose\"\n");
        // A single-value parameter given two values, or none: Redis's error.
        let c = Config::new();
        let e = apply(&c, &lines(&["--port", "6379", "6380"])).unwrap_err();
        assert_eq!((e.line.as_str(), e.reason.as_str()), ("port \"6379\" \"6380\"", "wrong number of arguments"));
        let e = apply(&c, &lines(&["--port", "--bla", "--loglevel", "verbose"])).unwrap_err();
        assert!(e.reason.contains("argument couldn't be parsed into an integer"), "{e}");
    }

    #[test]
    fn file_then_args_and_errors_name_the_option() {
        let args: Vec<String> = vec!["my.conf".into(), "--port".into(), "7001".into()];
        let text = assemble(&args, |_| Ok("# comment\nport 7000\nhz 20\n".into())).unwrap();
        let c = Config::new();
        apply(&c, &text).unwrap();
        assert_eq!(c.get("port").as_deref(), Some("7001"));
        assert_eq!(c.get("hz").as_deref(), Some("20"));
        let e = apply(&c, "port 7000\nfrobnicate yes\n").unwrap_err();
        assert_eq!(e.location, "at line 2");
        assert!(e.reason.contains("frobnicate"), "{e}");
        let e = apply(&c, "port nope").unwrap_err();
        assert!(e.reason.contains("port"), "{e}");
        // save lines add up after the first.
        let c2 = Config::new();
        apply(&c2, "save 900 1\nsave 100 100\n").unwrap();
        assert_eq!(c2.get("save").as_deref(), Some("900 1 100 100"));
        apply(&c2, "save \"\"\nsave 60 5\n").unwrap();
        assert_eq!(c2.get("save").as_deref(), Some("60 5"));
        // A bare multi-argument directive is its empty value; a bare single-argument one is an error.
        apply(&c, "save \n").unwrap();
        assert_eq!(c.get("save").as_deref(), Some(""));
        assert_eq!(apply(&c, "hz").unwrap_err().reason, "wrong number of arguments");
    }
}
