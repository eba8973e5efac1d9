//! Line input for the interactive session: rustyline on a terminal (editing, history file,
//! completion and argument hints like redis-cli's linenoise set-up), plain line reading when
//! stdin is a pipe or a file, and the `:set hints|nohints` preference lines (typed or in the rc file).

use std::borrow::Cow;
use std::cell::Cell;
use std::io::BufRead;
use std::path::PathBuf;

use rustyline::completion::Completer;
use rustyline::error::ReadlineError;
use rustyline::highlight::Highlighter;
use rustyline::hint::Hinter;
use rustyline::history::DefaultHistory;
use rustyline::validate::Validator;
use rustyline::{Context, Helper};

use crate::help::{self, HelpEntry};

/// The outcome of reading one line.
pub enum ReadLine {
    /// A line, without its newline.
    Line(Vec<u8>),
    /// End of input (Ctrl-D on an empty line, or end of the piped input).
    Eof,
    /// Ctrl-C.
    Interrupted,
}

/// A source of command lines.
pub trait LineReader {
    /// Reads the next line, showing `prompt` if the input is a terminal.
    fn read_line(&mut self, prompt: &str) -> ReadLine;
    /// Records a line in the history (and saves the history file).
    fn add_history(&mut self, _line: &[u8]) {}
    /// Turns argument hints on or off.
    fn set_hints(&mut self, _on: bool) {}
    /// Clears the screen.
    fn clear_screen(&mut self) {}
}

/// Lines from a non-terminal stdin.
pub struct Piped<R> {
    input: R,
}

impl<R: BufRead> Piped<R> {
    /// Reads lines from `input`.
    pub fn new(input: R) -> Piped<R> {
        Piped { input }
    }
}

impl<R: BufRead> LineReader for Piped<R> {
    fn read_line(&mut self, _prompt: &str) -> ReadLine {
        match read_piped_line(&mut self.input) {
            Some(l) => ReadLine::Line(l),
            None => ReadLine::Eof,
        }
    }
}

/// The history file: `$LATCHCLI_HISTFILE` (`/dev/null` disables it), else `~/.latchcli_history`.
pub fn history_path() -> Option<PathBuf> {
    dotfile_path("LATCHCLI_HISTFILE", ".latchcli_history")
}

/// The preferences file: `$LATCHCLI_RCFILE`, else `~/.latchclirc`.
pub fn rc_path() -> Option<PathBuf> {
    dotfile_path("LATCHCLI_RCFILE", ".latchclirc")
}

fn dotfile_path(env: &str, name: &str) -> Option<PathBuf> {
    match std::env::var_os(env) {
        Some(p) if !p.is_empty() => (p != "/dev/null").then(|| PathBuf::from(p)),
        _ => std::env::var_os("HOME").filter(|h| !h.is_empty()).map(|h| PathBuf::from(h).join(name)),
    }
}

/// Completion and hints from the help table.
pub struct CliHelper {
    entries: Vec<HelpEntry>,
    groups: Vec<String>,
    hints: Cell<bool>,
}

impl CliHelper {
    /// A helper over the given help table, hints on.
    pub fn new(entries: Vec<HelpEntry>) -> CliHelper {
        let groups = help::groups(&entries).into_iter().map(|g| format!("@{g}")).collect();
        CliHelper { entries, groups, hints: Cell::new(true) }
    }

    /// The hint shown after `line`: the arguments of the longest matching command that are not
    /// typed yet (redis-cli's hintsCallback).
    pub fn hint_for(&self, line: &str) -> Option<String> {
        if !self.hints.get() {
            return None;
        }
        let argv = resp::split_args(line.as_bytes())?;
        if argv.is_empty() {
            return None;
        }
        let mut best: Option<&HelpEntry> = None;
        let mut matchlen = 0;
        for e in &self.entries {
            let n = e.words.len();
            if n <= argv.len()
                && n > matchlen
                && e.words.iter().zip(&argv).all(|(w, a)| w.as_bytes().eq_ignore_ascii_case(a))
            {
                matchlen = n;
                best = Some(e);
            }
        }
        let e = best?;
        let mut hint = e.params.as_str();
        let mut to_remove = argv.len() - matchlen;
        while to_remove > 0 && !hint.is_empty() {
            if hint.starts_with('[') {
                break;
            }
            if hint.starts_with(' ') {
                to_remove -= 1;
            }
            hint = &hint[1..];
        }
        let ends_with_space = line.as_bytes().last().is_some_and(|c| c.is_ascii_whitespace());
        Some(if ends_with_space { hint.to_string() } else { format!(" {hint}") })
    }

    /// Completions of `line` (whole-line candidates, as linenoise): command names, or after
    /// `help ` command and group names. Returns the start of the replaced part and candidates.
    pub fn complete_line(&self, line: &str) -> (usize, Vec<String>) {
        let is_help = line.len() >= 5 && line.as_bytes()[..5].eq_ignore_ascii_case(b"help ");
        let start = if is_help { 5 + line[5..].bytes().take_while(u8::is_ascii_whitespace).count() } else { 0 };
        let typed = &line[start..];
        let names = self.entries.iter().map(|e| &e.full);
        let groups = self.groups.iter().filter(|_| is_help);
        let mut out: Vec<String> = groups
            .chain(names)
            .filter(|n| n.len() >= typed.len() && n.as_bytes()[..typed.len()].eq_ignore_ascii_case(typed.as_bytes()))
            .cloned()
            .collect();
        out.sort();
        out.dedup();
        (start, out)
    }
}

impl Completer for CliHelper {
    type Candidate = String;

    fn complete(&self, line: &str, pos: usize, _ctx: &Context<'_>) -> rustyline::Result<(usize, Vec<String>)> {
        if pos != line.len() {
            return Ok((pos, Vec::new()));
        }
        Ok(self.complete_line(line))
    }
}

impl Hinter for CliHelper {
    type Hint = String;

    fn hint(&self, line: &str, pos: usize, _ctx: &Context<'_>) -> Option<String> {
        if pos != line.len() { None } else { self.hint_for(line) }
    }
}

impl Highlighter for CliHelper {
    fn highlight_hint<'h>(&self, hint: &'h str) -> Cow<'h, str> {
        Cow::Owned(format!("\x1b[0;90;49m{hint}\x1b[0m"))
    }
}

impl Validator for CliHelper {}

impl Helper for CliHelper {}

/// The terminal line editor.
pub struct Editor {
    ed: Option<rustyline::Editor<CliHelper, DefaultHistory>>,
    history: Option<PathBuf>,
}

impl Editor {
    /// Opens the editor with history loaded and preferences from the rc file applied.
    pub fn new(entries: Vec<HelpEntry>) -> Editor {
        let history = history_path();
        let ed = match rustyline::Editor::<CliHelper, DefaultHistory>::new() {
            Ok(mut ed) => {
                ed.set_helper(Some(CliHelper::new(entries)));
                if let Some(p) = &history {
                    let _ = ed.load_history(p);
                }
                Some(ed)
            }
            Err(e) => {
                eprintln!("Cannot open the line editor: {e}");
                None
            }
        };
        let mut me = Editor { ed, history };
        me.load_preferences();
        me
    }

    fn load_preferences(&mut self) {
        let Some(path) = rc_path() else { return };
        let Ok(text) = std::fs::read(path) else {
            return;
        };
        for line in text.split(|&c| c == b'\n') {
            let Some(words) = resp::split_args(line) else {
                continue;
            };
            if words.is_empty() {
                continue;
            }
            let words: Vec<String> = words.iter().map(|w| String::from_utf8_lossy(w).into_owned()).collect();
            match set_preference(&words) {
                Ok(on) => self.set_hints(on),
                Err(msg) => print!(".latchclirc: {msg}"),
            }
        }
    }
}

impl LineReader for Editor {
    fn read_line(&mut self, prompt: &str) -> ReadLine {
        let Some(ed) = self.ed.as_mut() else {
            return ReadLine::Eof;
        };
        match ed.readline(prompt) {
            Ok(l) => ReadLine::Line(l.into_bytes()),
            Err(ReadlineError::Interrupted) => ReadLine::Interrupted,
            Err(_) => ReadLine::Eof,
        }
    }

    fn add_history(&mut self, line: &[u8]) {
        let Some(ed) = self.ed.as_mut() else { return };
        let _ = ed.add_history_entry(String::from_utf8_lossy(line));
        if let Some(p) = &self.history {
            let _ = ed.save_history(p);
        }
    }

    fn set_hints(&mut self, on: bool) {
        if let Some(h) = self.ed.as_mut().and_then(|ed| ed.helper_mut()) {
            h.hints.set(on);
        }
    }

    fn clear_screen(&mut self) {
        if let Some(ed) = self.ed.as_mut() {
            let _ = ed.clear_screen();
        }
    }
}

/// Applies a `:set hints|nohints` line; returns the new hints setting or the message to print.
pub fn set_preference(words: &[String]) -> Result<bool, String> {
    if words[0].eq_ignore_ascii_case(":set") && words.len() >= 2 {
        if words[1].eq_ignore_ascii_case("hints") {
            Ok(true)
        } else if words[1].eq_ignore_ascii_case("nohints") {
            Ok(false)
        } else {
            Err(format!("unknown latch-cli preference '{}'\n", words[1]))
        }
    } else {
        Err(format!("unknown latch-cli internal command '{}'\n", words[0]))
    }
}

/// Reads lines from a non-terminal stdin (no prompt, no history), like linenoise does.
pub fn read_piped_line<R: BufRead>(r: &mut R) -> Option<Vec<u8>> {
    let mut line = Vec::new();
    match r.read_until(b'\n', &mut line) {
        Ok(0) | Err(_) => None,
        Ok(_) => {
            if line.last() == Some(&b'\n') {
                line.pop();
            }
            Some(line)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(full: &str, params: &str, group: &str) -> HelpEntry {
        HelpEntry {
            words: full.split(' ').map(str::to_string).collect(),
            full: full.into(),
            params: params.into(),
            summary: String::new(),
            since: None,
            group: group.into(),
        }
    }

    fn helper() -> CliHelper {
        CliHelper::new(vec![
            entry("CONFIG", "", "server"),
            entry("CONFIG GET", "parameter [parameter ...]", "server"),
            entry("GET", "key", "string"),
            entry("GETDEL", "key", "string"),
            entry("SET", "key value [NX|XX] [GET]", "string"),
        ])
    }

    #[test]
    fn hints() {
        let h = helper();
        assert_eq!(h.hint_for("set").as_deref(), Some(" key value [NX|XX] [GET]"));
        assert_eq!(h.hint_for("set ").as_deref(), Some("key value [NX|XX] [GET]"));
        assert_eq!(h.hint_for("SET k").as_deref(), Some(" value [NX|XX] [GET]"));
        assert_eq!(h.hint_for("set k v ").as_deref(), Some("[NX|XX] [GET]"));
        assert_eq!(h.hint_for("config get").as_deref(), Some(" parameter [parameter ...]"));
        assert_eq!(h.hint_for("nosuch"), None);
        assert_eq!(h.hint_for(""), None);
        h.hints.set(false);
        assert_eq!(h.hint_for("set"), None);
    }

    #[test]
    fn completion() {
        let h = helper();
        assert_eq!(h.complete_line("ge"), (0, vec!["GET".to_string(), "GETDEL".to_string()]));
        assert_eq!(h.complete_line("config"), (0, vec!["CONFIG".to_string(), "CONFIG GET".to_string()]));
        assert_eq!(h.complete_line("help @s"), (5, vec!["@server".to_string(), "@string".to_string()]));
        assert_eq!(h.complete_line("HELP  se"), (6, vec!["SET".to_string()]));
    }

    #[test]
    fn dotfiles() {
        // Only the naming rule is checked here: the environment is shared by parallel tests.
        assert!(dotfile_path("LATCHCLI_TEST_UNSET_VAR", ".x").is_none_or(|p| p.ends_with(".x")));
    }

    #[test]
    fn preferences() {
        assert_eq!(set_preference(&[":set".into(), "HINTS".into()]), Ok(true));
        assert_eq!(set_preference(&[":set".into(), "nohints".into()]), Ok(false));
        assert_eq!(set_preference(&[":set".into(), "x".into()]), Err("unknown latch-cli preference 'x'\n".into()));
        assert_eq!(set_preference(&[":foo".into()]), Err("unknown latch-cli internal command ':foo'\n".into()));
    }

    #[test]
    fn piped_lines() {
        let mut r = std::io::Cursor::new(b"get a\r\n\nlast".to_vec());
        assert_eq!(read_piped_line(&mut r).unwrap(), b"get a\r");
        assert_eq!(read_piped_line(&mut r).unwrap(), b"");
        assert_eq!(read_piped_line(&mut r).unwrap(), b"last");
        assert_eq!(read_piped_line(&mut r), None);
    }
}
