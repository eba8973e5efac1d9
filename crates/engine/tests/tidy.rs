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
            "version",
            "message",
            "args",
            "error",
            "glob",
            "geohash",
            "clock",
            "primitives",
            "random",
            "densemap",
            "value",
            "types",
            "types::zset",
            "types::hash",
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
    // The runtime's vocabulary: commands as data (the table, flags, key positions), the parameter
    // rows, the counters and latency figures, the commands' documentation.
    ("runtime: vocabulary", &["command", "config", "stats", "latency", "docs"]),
    // The runtime's subsystems: each owns its state and takes what it uses (values, the keyspace,
    // the configuration, narrow traits of its own); none knows the server, dispatch or `Client`.
    (
        "runtime: subsystems",
        &[
            "clients",
            "waiters",
            "transactions",
            "pause",
            "acl",
            "evict",
            "lua",
            "persistence",
            "repl",
            "upstream",
            "pubsub",
            "notify",
            "tracking",
        ],
    ),
    // The composition: the server holds the subsystems and is the one place where one's result is
    // handed to another (`server/*.rs`, one file per subsystem it composes); dispatch runs a
    // command; `Client` assembles the per-client parts; `Ctx` is what a handler gets.
    ("runtime: composition", &["server", "dispatch", "client", "ctx"]),
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
    sources_of(&Path::new(env!("CARGO_MANIFEST_DIR")).join("src"))
}

/// The source files under `src`, sorted.
fn sources_of(src: &Path) -> (PathBuf, Vec<PathBuf>) {
    let src = src.to_path_buf();
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
    assert!(layer_of("pubsub") < layer_of("server") && layer_of("server::pubsub") == layer_of("server"));
    assert!(layer_of("command") < layer_of("acl") && layer_of("acl") < layer_of("client"));
    assert_eq!(code("a\n// crate::server\n#[cfg(test)]\nmod tests { crate::server }"), "a");
    assert!(code("#[cfg(test)]\nmod tests;\nfn f() { crate::server::x() }").contains("crate::server"));
}

/// Import cycles between source files that may stay, each with its reason. A cycle is written as its
/// files sorted by module path. Nothing else may import in a loop, and nothing listed may grow.
const ALLOWED_CYCLES: &[(&[&str], &str)] = &[
    (
        &["client", "ctx", "server"],
        "the composition's type knot: the server holds the command table, whose handlers take a `Ctx` \
         that lends them the server and the calling `Client`, which holds the MULTI queue and the \
         waiter of the table's commands",
    ),
    (
        &["lua", "lua::chunk", "lua::raw"],
        "one concern, the Lua VMs: the pool (`lua`) compiles through the parser's one door (`chunk`) and \
         runs through the C API (`raw`), whose `redis.call` reaches the run the pool published",
    ),
    (
        &["cmd", "cmd::lock"],
        "FENCED finds the keys of the command it wraps in the table that lists FENCED (a key finder \
         gets only the arguments)",
    ),
];

/// The files (modules) each file names: `crate::a::b` and `super::b` paths, and a parent module's
/// `child::` paths to the children it declares, each resolved to the deepest module that is a file.
fn file_graph(src: &Path) -> std::collections::BTreeMap<String, std::collections::BTreeSet<String>> {
    let (src, files) = sources_of(src);
    let modules: std::collections::BTreeMap<String, &PathBuf> = files.iter().map(|f| (module_of(&src, f), f)).collect();
    let resolve = |parts: &[&str]| -> Option<String> {
        (1..=parts.len()).rev().map(|k| parts[..k].join("::")).find(|m| modules.contains_key(m))
    };
    let mut graph = std::collections::BTreeMap::new();
    for (module, file) in &modules {
        if module.ends_with("::tests") || module == "lib" || module == "main" {
            continue;
        }
        let text = std::fs::read_to_string(file).expect("read");
        let code = code(&text);
        let own: Vec<&str> = module.split("::").collect();
        // `super` from `a/b.rs` (module a::b) is `a`; from `a/b/mod.rs` (also a::b) it is `a` too.
        let parent: Vec<&str> = own[..own.len() - 1].to_vec();
        let mut targets = std::collections::BTreeSet::new();
        for (prefix, base) in [("crate::", Vec::new()), ("super::", parent.clone())] {
            for path in paths_after(&code, prefix) {
                let mut parts = base.clone();
                parts.extend(path.split("::"));
                if let Some(t) = resolve(&parts) {
                    targets.insert(t);
                }
            }
        }
        // A parent naming its own children (`mod raw;` ... `raw::push`).
        let children: Vec<&str> = code
            .lines()
            .filter_map(|l| l.trim().trim_start_matches("pub ").trim_start_matches("pub(crate) ").strip_prefix("mod "))
            .filter_map(|l| l.strip_suffix(';'))
            .collect();
        for child in children {
            let needle = format!("{child}::");
            let used = code
                .match_indices(&needle)
                .any(|(i, _)| !code[..i].ends_with(|c: char| c.is_ascii_alphanumeric() || c == '_' || c == ':'));
            if used {
                let mut parts = own.clone();
                parts.push(child);
                if let Some(t) = resolve(&parts) {
                    targets.insert(t);
                }
            }
        }
        targets.remove(module);
        graph.insert(module.clone(), targets);
    }
    graph
}

/// The paths that follow each `prefix` in `code` (`crate::a::b::C` gives `a::b::C`); a group
/// (`crate::{a::X, b}`) gives each of its members.
fn paths_after(code: &str, prefix: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut rest = code;
    while let Some(i) = rest.find(prefix) {
        let before = &rest[..i];
        rest = &rest[i + prefix.len()..];
        if before.ends_with(|c: char| c.is_ascii_alphanumeric() || c == '_' || c == ':') {
            continue; // `foo::crate::` never happens; `self::super::` is rare: skip oddities
        }
        let end = rest.find(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == ':')).unwrap_or(rest.len());
        let head = rest[..end].trim_end_matches(':');
        if rest[end..].starts_with('{') && rest[..end].ends_with("::") || (end == 0 && rest.starts_with('{')) {
            let close = rest.find('}').unwrap_or(rest.len());
            for member in rest[end + 1..close].split(',') {
                let m = member.trim().split(" as ").next().unwrap_or("").trim();
                let m = m.trim_start_matches('{');
                if !m.is_empty() {
                    out.push(if head.is_empty() { m.to_string() } else { format!("{head}::{m}") });
                }
            }
        } else if !head.is_empty() {
            out.push(head.to_string());
        }
    }
    out
}

/// Strongly connected components of more than one file (Tarjan), each sorted, largest first.
fn cycles(graph: &std::collections::BTreeMap<String, std::collections::BTreeSet<String>>) -> Vec<Vec<String>> {
    struct Walk<'g> {
        graph: &'g std::collections::BTreeMap<String, std::collections::BTreeSet<String>>,
        index: std::collections::HashMap<&'g str, (usize, usize)>,
        stack: Vec<&'g str>,
        on_stack: std::collections::HashSet<&'g str>,
        next: usize,
        out: Vec<Vec<String>>,
    }
    impl<'g> Walk<'g> {
        fn visit(&mut self, v: &'g str) {
            self.index.insert(v, (self.next, self.next));
            self.next += 1;
            self.stack.push(v);
            self.on_stack.insert(v);
            for w in self.graph.get(v).into_iter().flatten() {
                let w = w.as_str();
                if !self.index.contains_key(w) {
                    self.visit(w);
                    let low = self.index[w].1.min(self.index[v].1);
                    self.index.get_mut(v).unwrap().1 = low;
                } else if self.on_stack.contains(w) {
                    let low = self.index[w].0.min(self.index[v].1);
                    self.index.get_mut(v).unwrap().1 = low;
                }
            }
            if self.index[v].0 == self.index[v].1 {
                let mut comp = Vec::new();
                loop {
                    let w = self.stack.pop().expect("on stack");
                    self.on_stack.remove(w);
                    comp.push(w.to_string());
                    if w == v {
                        break;
                    }
                }
                if comp.len() > 1 {
                    comp.sort();
                    self.out.push(comp);
                }
            }
        }
    }
    let mut walk = Walk {
        graph,
        index: Default::default(),
        stack: Vec::new(),
        on_stack: Default::default(),
        next: 0,
        out: Vec::new(),
    };
    for v in graph.keys() {
        if !walk.index.contains_key(v.as_str()) {
            walk.visit(v);
        }
    }
    walk.out.sort_by_key(|c| std::cmp::Reverse(c.len()));
    walk.out
}

#[test]
fn no_import_cycles_between_files() {
    let graph = file_graph(&Path::new(env!("CARGO_MANIFEST_DIR")).join("src"));
    let found = cycles(&graph);
    let mut wrong = Vec::new();
    for (files, _) in ALLOWED_CYCLES {
        if !found.iter().any(|c| files.iter().copied().eq(c.iter().map(String::as_str))) {
            wrong.push(format!("an allowed cycle is gone or changed, update ALLOWED_CYCLES: {files:?}"));
        }
    }
    for c in found {
        let allowed = ALLOWED_CYCLES.iter().any(|(files, _)| files.iter().copied().eq(c.iter().map(String::as_str)));
        if !allowed {
            let edges: Vec<String> = c
                .iter()
                .map(|f| {
                    let to: Vec<&str> = graph[f].iter().filter(|t| c.contains(t)).map(String::as_str).collect();
                    format!("  {f} -> {}", to.join(", "))
                })
                .collect();
            wrong.push(format!("a cycle of {} files:\n{}", c.len(), edges.join("\n")));
        }
    }
    assert!(wrong.is_empty(), "import cycles between engine source files:\n{}", wrong.join("\n"));
    for (files, why) in ALLOWED_CYCLES {
        assert!(files.len() <= 3 && !why.is_empty(), "an allowed cycle is at most 3 files, with its reason");
    }
}

/// The other crates of the workspace import one way between their files too (no exceptions).
#[test]
fn no_import_cycles_in_the_other_crates() {
    let crates = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut wrong = Vec::new();
    for e in std::fs::read_dir(&crates).expect("crates") {
        let dir = e.expect("entry").path();
        let src = dir.join("src");
        if dir.ends_with("engine") || !src.is_dir() {
            continue;
        }
        for c in cycles(&file_graph(&src)) {
            wrong.push(format!("{}: {}", dir.display(), c.join(" <-> ")));
        }
    }
    assert!(wrong.is_empty(), "import cycles between source files:\n{}", wrong.join("\n"));
}

#[test]
fn the_cycle_checker_sees_cycles() {
    let mut g = std::collections::BTreeMap::new();
    let set = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<std::collections::BTreeSet<_>>();
    g.insert("a".to_string(), set(&["b"]));
    g.insert("b".to_string(), set(&["c"]));
    g.insert("c".to_string(), set(&["a", "d"]));
    g.insert("d".to_string(), set(&[]));
    assert_eq!(cycles(&g), vec![vec!["a".to_string(), "b".to_string(), "c".to_string()]]);
    assert_eq!(paths_after("use crate::{a::X, b};", "crate::"), ["a::X", "b"]);
    assert_eq!(paths_after("use super::b::{C, D};", "super::"), ["b::C", "b::D"]);
}
