//! The engine's layers, enforced: every source file belongs to one layer, and a file may name (through
//! `crate::...` paths) only modules of its own layer or of a lower one. The graph is written once,
//! here, and drawn in ARCHITECTURE.md; there is no list of exceptions.
//!
//! Also the engine's absences: no sockets, files or tokio (what it needs from the machine comes
//! through `Host`).

use std::path::{Path, PathBuf};

/// Lowest layer first. A module is a top-level module of the crate, or `parent::child` where a
/// layer names a child on its own.
const LAYERS: &[(&str, &[&str])] = &[
    // Values and the vocabulary everything shares; no state.
    (
        "base",
        &[
            "args",
            "error",
            "glob",
            "clock",
            "primitives",
            "value",
            "types",
            "types::zset",
            "changes",
            "host",
            "lzf",
            "rdb",
        ],
    ),
    // The sharded keyspace and a database as a command sees it.
    ("store", &["keyspace", "db"]),
    // Data-type operations, each written once, on a `Db`.
    ("ops", &["ops", "types::access"]),
    // Running commands: the table and `Ctx`, the server's state and dispatch, clients, waiters,
    // transactions, scripting, configuration, statistics, eviction, RDB files.
    (
        "runtime",
        &[
            "acl",
            "command",
            "server",
            "dispatch",
            "client",
            "waiters",
            "pause",
            "transactions",
            "config",
            "stats",
            "latency",
            "evict",
            "lua",
            "docs",
            "persistence",
            "pubsub",
            "notify",
            "tracking",
        ],
    ),
    // The command families.
    ("families", &["cmd"]),
    // What joins the families to the runtime, and the test kit.
    ("assembly", &["assemble", "testkit", "lib"]),
];

/// The layer of module `m` (`a::b` if a layer names it, else `a`).
fn layer_of(m: &str) -> Option<usize> {
    let find = |name: &str| LAYERS.iter().position(|(_, mods)| mods.contains(&name));
    let mut parts = m.splitn(3, "::");
    let top = parts.next()?;
    match parts.next() {
        Some(child) => find(&format!("{top}::{child}")).or_else(|| find(top)),
        None => find(top),
    }
}

/// The module a source file is (`src/types/zset.rs` is `types::zset`, `src/cmd/string/tests.rs` is
/// `cmd::string::tests`, `src/lua/mod.rs` is `lua`).
fn module_of(src: &Path, file: &Path) -> String {
    let rel = file.strip_prefix(src).expect("under src").with_extension("");
    let mut parts: Vec<String> = rel.iter().map(|p| p.to_string_lossy().into_owned()).collect();
    if parts.last().is_some_and(|p| p == "mod") {
        parts.pop();
    }
    parts.join("::")
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).expect("read src") {
        let p = e.expect("entry").path();
        if p.is_dir() {
            rust_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

/// The code of a file without comments and without its test modules (tests may reach anything; by
/// this codebase's convention they close the file).
fn code(text: &str) -> String {
    // `#[cfg(test)] mod tests { ... }` closes the file; `#[cfg(test)] mod tests;` may sit anywhere
    // (its file is skipped on its own).
    let mut end = text.len();
    let mut from = 0;
    while let Some(i) = text[from..].find("#[cfg(test)]\nmod ") {
        let at = from + i;
        let line_end = text[at..].find('{').map(|j| at + j);
        let decl_end = text[at..].find(';').map(|j| at + j);
        match (line_end, decl_end) {
            (Some(b), Some(d)) if d < b => from = d,
            (Some(_), _) => {
                end = at;
                break;
            }
            _ => break,
        }
    }
    text[..end].lines().filter(|l| !l.trim_start().starts_with("//")).collect::<Vec<_>>().join("\n")
}

/// Every `crate::a::b` path in `code`, as `a::b` (or `a`).
fn crate_paths(code: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut rest = code;
    while let Some(i) = rest.find("crate::") {
        rest = &rest[i + "crate::".len()..];
        let end = rest.find(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == ':')).unwrap_or(rest.len());
        let path: Vec<&str> = rest[..end].split("::").filter(|s| !s.is_empty()).take(2).collect();
        if let Some(first) = path.first()
            && first.starts_with(|c: char| c.is_ascii_lowercase())
        {
            out.push(path.join("::"));
        }
    }
    out
}

fn sources() -> (PathBuf, Vec<PathBuf>) {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    files.sort();
    (src, files)
}

#[test]
fn layers_import_only_downward() {
    let (src, files) = sources();
    let mut wrong = Vec::new();
    for f in &files {
        let module = module_of(&src, f);
        if module.ends_with("::tests") {
            continue; // a test module in a file of its own (`#[cfg(test)] mod tests;`)
        }
        let Some(own) = layer_of(&module) else {
            wrong.push(format!("{module}: in no layer (add it to LAYERS and to ARCHITECTURE.md)"));
            continue;
        };
        let text = std::fs::read_to_string(f).expect("read");
        for path in crate_paths(&code(&text)) {
            match layer_of(&path) {
                Some(l) if l > own => {
                    wrong.push(format!("{module} ({}) names crate::{path} ({})", LAYERS[own].0, LAYERS[l].0))
                }
                Some(_) => {}
                None => {
                    // A re-export from the crate root (`crate::Bytes`) or an unknown module.
                    if !matches!(path.as_str(), "Bytes" | "Frame" | "Protocol") {
                        wrong.push(format!("{module} names crate::{path}, which is in no layer"));
                    }
                }
            }
        }
    }
    wrong.sort();
    wrong.dedup();
    assert!(wrong.is_empty(), "{} upward or unplaced references:\n{}", wrong.len(), wrong.join("\n"));
}

#[test]
fn the_engine_does_no_io() {
    let (src, files) = sources();
    let mut wrong = Vec::new();
    for f in &files {
        let text = std::fs::read_to_string(f).expect("read");
        for needle in ["std::net", "std::fs", "tokio", "std::process"] {
            if code(&text).contains(needle) {
                wrong.push(format!("{} uses {needle}", module_of(&src, f)));
            }
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

#[test]
fn the_checker_sees_upward_references() {
    assert_eq!(
        crate_paths("use crate::server::Server; let x = crate::cmd::table();"),
        ["server::Server", "cmd::table"]
    );
    assert_eq!(layer_of("types::zset"), Some(0));
    assert_eq!(layer_of("types::access"), Some(2));
    assert_eq!(layer_of("types::Access"), Some(0));
    assert!(layer_of("cmd::string") > layer_of("server"));
    assert!(layer_of("keyspace") < layer_of("waiters"));
    assert_eq!(code("a\n// crate::server\n#[cfg(test)]\nmod tests { crate::server }"), "a");
    assert!(code("#[cfg(test)]\nmod tests;\nfn f() { crate::server::x() }").contains("crate::server"));
}
