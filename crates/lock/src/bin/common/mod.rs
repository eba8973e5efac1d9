//! Command-line pieces shared by the `lock-bench` and `lock-harness` binaries.

use std::collections::HashMap;

/// Prints `<binary>: msg` and exits with status 2 (bad usage or a setup failure).
pub fn die(msg: String) -> ! {
    eprintln!("{}: {msg}", env!("CARGO_BIN_NAME"));
    std::process::exit(2)
}

/// Command-line options as `--name value` pairs.
pub struct Opts(HashMap<String, String>);

impl Opts {
    /// Parses `--name value` pairs; anything else ends the process through [`die`].
    pub fn parse(args: &[String]) -> Opts {
        let mut m = HashMap::new();
        let mut it = args.iter();
        while let Some(a) = it.next() {
            let Some(name) = a.strip_prefix("--") else { die(format!("unexpected argument {a}")) };
            let Some(v) = it.next() else { die(format!("--{name} needs a value")) };
            m.insert(name.to_string(), v.clone());
        }
        Opts(m)
    }

    /// The value of `--k`, if given.
    pub fn get(&self, k: &str) -> Option<&str> {
        self.0.get(k).map(String::as_str)
    }

    /// The value of `--k`, or `default`.
    pub fn get_or(&self, k: &str, default: &str) -> String {
        self.get(k).unwrap_or(default).to_string()
    }

    /// `--k` as a number, or `default`; a value that is not one ends the process.
    pub fn num(&self, k: &str, default: u64) -> u64 {
        self.0.get(k).map_or(default, |v| v.parse().unwrap_or_else(|_| die(format!("--{k}: not a number: {v}"))))
    }
}
