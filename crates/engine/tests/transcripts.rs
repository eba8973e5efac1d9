//! Transcript tests as data: every `tests/transcripts/<family>/<case>.txt` runs on a fresh server
//! (`> command` lines, each followed by the expected reply in the test kit's notation; `#` starts a
//! comment). Replies were verified against redis-server 7.0.15 unless a file says otherwise.

use std::path::{Path, PathBuf};

fn cases(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).expect("read transcripts") {
        let p = e.expect("entry").path();
        if p.is_dir() {
            cases(&p, out);
        } else if p.extension().is_some_and(|x| x == "txt") {
            out.push(p);
        }
    }
}

#[test]
fn every_transcript_replays() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/transcripts");
    let mut files = Vec::new();
    cases(&dir, &mut files);
    files.sort();
    assert!(files.len() >= 24, "only {} transcripts found under {}", files.len(), dir.display());
    let mut failed = Vec::new();
    for f in &files {
        let text = std::fs::read_to_string(f).expect("read transcript");
        let run = std::panic::catch_unwind(|| engine::testkit::TestServer::new().transcript(&text));
        if let Err(e) = run {
            let msg = e.downcast_ref::<String>().cloned().unwrap_or_default();
            failed.push(format!("{}: {msg}", f.strip_prefix(&dir).unwrap_or(f).display()));
        }
    }
    assert!(failed.is_empty(), "{} of {} transcripts failed:\n{}", failed.len(), files.len(), failed.join("\n"));
}
