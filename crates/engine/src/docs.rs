//! Parses a command table entry's `syntax` string (Redis's documentation notation, e.g.
//! `key value [NX | XX] [GET] [EX seconds | PX milliseconds | KEEPTTL]`) into the argument structure
//! `COMMAND DOCS` reports: named arguments with a type (`key`, `string`, `integer`, `double`,
//! `pattern`, `unix-time`, `pure-token`, `oneof`, `block`), an optional token and the flags
//! `optional`, `multiple`, `multiple_token`.
//!
//! Notation: `UPPERCASE` words are tokens, lowercase words are arguments, `[...]` is optional,
//! `(...)` or `<...>` groups, `a | b` is a choice, `x [x ...]` / `x ...` repeats. A token followed by
//! one argument becomes that argument's token (`EX seconds`); a token heading a group of several
//! arguments becomes a block's token (`LIMIT offset count`). Names the notation cannot carry (Redis's
//! `condition` for `NX | XX`) are made by joining the member names with `_` (`nx_xx`), the convention
//! Redis itself uses for such groups (`nosave_save`).

/// An argument's type, named as COMMAND DOCS names it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ArgType {
    /// Any string.
    String,
    /// An integer.
    Integer,
    /// A floating point number.
    Double,
    /// A key name.
    Key,
    /// A glob-style pattern.
    Pattern,
    /// A Unix timestamp.
    UnixTime,
    /// A literal token with no value.
    PureToken,
    /// Exactly one of the sub-arguments.
    OneOf,
    /// All the sub-arguments, in order.
    Block,
}

impl ArgType {
    /// The name COMMAND DOCS prints.
    pub fn as_str(self) -> &'static str {
        match self {
            ArgType::String => "string",
            ArgType::Integer => "integer",
            ArgType::Double => "double",
            ArgType::Key => "key",
            ArgType::Pattern => "pattern",
            ArgType::UnixTime => "unix-time",
            ArgType::PureToken => "pure-token",
            ArgType::OneOf => "oneof",
            ArgType::Block => "block",
        }
    }
}

/// One documented argument.
#[derive(Clone, Debug, PartialEq)]
pub struct Arg {
    /// Name (lowercase).
    pub name: String,
    /// Type.
    pub typ: ArgType,
    /// The token that introduces it, if any.
    pub token: Option<String>,
    /// May be omitted.
    pub optional: bool,
    /// May be repeated.
    pub multiple: bool,
    /// Each repetition repeats the token too.
    pub multiple_token: bool,
    /// Members of a `oneof` or `block`.
    pub args: Vec<Arg>,
}

impl Arg {
    fn new(name: String, typ: ArgType) -> Arg {
        Arg { name, typ, token: None, optional: false, multiple: false, multiple_token: false, args: Vec::new() }
    }
    fn same_shape(&self, other: &Arg) -> bool {
        self.name == other.name && self.typ == other.typ && self.token == other.token && self.args == other.args
    }
}

#[derive(Debug, PartialEq)]
enum Tok {
    Word(String),
    Open(char),
    Close(char),
    Bar,
    Ellipsis,
}

fn lex(s: &str) -> Result<Vec<Tok>, String> {
    let mut out = Vec::new();
    let b = s.as_bytes();
    let mut i = 0;
    while i < b.len() {
        let c = b[i] as char;
        match c {
            ' ' | '\t' => i += 1,
            '[' | '(' | '<' => {
                out.push(Tok::Open(c));
                i += 1
            }
            ']' | ')' | '>' => {
                out.push(Tok::Close(c));
                i += 1
            }
            '|' => {
                out.push(Tok::Bar);
                i += 1
            }
            '.' if s[i..].starts_with("...") => {
                out.push(Tok::Ellipsis);
                i += 3
            }
            _ => {
                let start = i;
                while i < b.len() && !matches!(b[i], b' ' | b'\t' | b'[' | b']' | b'(' | b')' | b'<' | b'>' | b'|') {
                    if s[i..].starts_with("...") {
                        break;
                    }
                    i += 1;
                }
                if start == i {
                    return Err(format!("unexpected character {c:?} in {s:?}"));
                }
                out.push(Tok::Word(s[start..i].to_string()));
            }
        }
    }
    Ok(out)
}

fn is_token(w: &str) -> bool {
    w.chars().any(|c| c.is_ascii_uppercase()) && !w.chars().any(|c| c.is_ascii_lowercase())
}

/// Guesses the type of a lowercase argument from its name.
fn type_of(name: &str) -> ArgType {
    const INTEGERS: &[&str] = &[
        "count",
        "seconds",
        "milliseconds",
        "numkeys",
        "index",
        "start",
        "end",
        "stop",
        "offset",
        "db",
        "port",
        "decrement",
        "delta",
        "ttl",
        "len",
        "rank",
        "maxlen",
        "numreplicas",
        "cursor",
        "integer",
        "timeout-ms",
        "numerator",
        "pivot-index",
        "maxidle",
        "position",
        "version",
        "bit",
        "millis",
    ];
    const DOUBLES: &[&str] = &["score", "longitude", "latitude", "radius", "weight", "float", "min-score", "max-score"];
    if name == "key" || name.ends_with("key") || name == "destination" || name == "source" {
        ArgType::Key
    } else if name == "pattern" {
        ArgType::Pattern
    } else if name.starts_with("unix-time") {
        ArgType::UnixTime
    } else if INTEGERS.contains(&name) {
        ArgType::Integer
    } else if DOUBLES.contains(&name) {
        ArgType::Double
    } else {
        ArgType::String
    }
}

struct Parser {
    toks: Vec<Tok>,
    pos: usize,
    group_repeats: bool,
}

impl Parser {
    /// alts := seq ('|' seq)*
    fn alts(&mut self) -> Result<Vec<Vec<Arg>>, String> {
        let mut v = vec![self.seq()?];
        while self.toks.get(self.pos) == Some(&Tok::Bar) {
            self.pos += 1;
            v.push(self.seq()?);
        }
        Ok(v)
    }

    /// seq := (atom '...'?)*
    fn seq(&mut self) -> Result<Vec<Arg>, String> {
        let mut items = Vec::new();
        loop {
            let a = match self.toks.get(self.pos) {
                None | Some(Tok::Bar) | Some(Tok::Close(_)) => break,
                Some(Tok::Ellipsis) => return Err("'...' without an argument".into()),
                Some(Tok::Word(w)) => {
                    let w = w.clone();
                    self.pos += 1;
                    if is_token(&w) {
                        let mut a = Arg::new(w.to_ascii_lowercase(), ArgType::PureToken);
                        a.token = Some(w);
                        a
                    } else {
                        Arg::new(w.clone(), type_of(&w))
                    }
                }
                Some(Tok::Open(c)) => {
                    let c = *c;
                    self.pos += 1;
                    self.group_repeats = false;
                    let alts = self.alts()?;
                    let repeats = std::mem::take(&mut self.group_repeats);
                    let want = match c {
                        '[' => ']',
                        '(' => ')',
                        _ => '>',
                    };
                    if self.toks.get(self.pos) != Some(&Tok::Close(want)) {
                        return Err(format!("unbalanced '{c}'"));
                    }
                    self.pos += 1;
                    let mut g = group(alts)?;
                    g.multiple |= repeats;
                    if c == '[' {
                        g.optional = true;
                    }
                    g
                }
            };
            items.push(a);
            if self.toks.get(self.pos) == Some(&Tok::Ellipsis) {
                self.pos += 1;
                // `[a b ...]`: an ellipsis closing a group of several items repeats the whole group.
                if items.len() > 1 && matches!(self.toks.get(self.pos), Some(Tok::Close(_))) {
                    self.group_repeats = true;
                } else if let Some(last) = items.last_mut() {
                    last.multiple = true;
                }
            }
        }
        Ok(finish_seq(items))
    }
}

/// Turns a parsed group into one argument: a choice, a block, or the single member.
fn group(mut alts: Vec<Vec<Arg>>) -> Result<Arg, String> {
    if alts.iter().any(Vec::is_empty) {
        return Err("empty group".into());
    }
    if alts.len() == 1 {
        let seq = alts.pop().unwrap_or_default();
        return Ok(block(seq));
    }
    let members: Vec<Arg> = alts.into_iter().map(block).collect();
    let name = members.iter().map(|m| m.name.as_str()).collect::<Vec<_>>().join("_");
    let mut a = Arg::new(name, ArgType::OneOf);
    a.args = members;
    Ok(a)
}

fn block(mut seq: Vec<Arg>) -> Arg {
    if seq.len() == 1 {
        return seq.pop().unwrap_or_else(|| Arg::new(String::new(), ArgType::Block));
    }
    // A token heading several arguments is the block's token (`LIMIT offset count`).
    let mut token = None;
    if seq.first().is_some_and(|a| a.typ == ArgType::PureToken && !a.optional && !a.multiple) {
        let t = seq.remove(0);
        token = t.token;
        if seq.len() == 1 {
            let mut a = seq.remove(0);
            a.token = token;
            return a;
        }
    }
    let name = match &token {
        Some(t) => t.to_ascii_lowercase(),
        None => seq.iter().map(|a| a.name.as_str()).collect::<Vec<_>>().join("_"),
    };
    let mut a = Arg::new(name, ArgType::Block);
    a.token = token;
    a.args = seq;
    a
}

/// Collapses repetitions (`x [x ...]`, `a b [a b ...]`) and attaches tokens to the single argument
/// that follows them (`EX seconds`).
fn finish_seq(items: Vec<Arg>) -> Vec<Arg> {
    collapse_repeats(attach_tokens(items))
}

/// Token + one following argument. A token heading a run of two or more plain arguments that fills
/// the rest of the sequence is left for `block` (`LIMIT offset count`).
fn attach_tokens(out: Vec<Arg>) -> Vec<Arg> {
    let plain = |a: &Arg| a.token.is_none() && !a.optional && a.typ != ArgType::PureToken;
    if out.len() > 2 && out[0].typ == ArgType::PureToken && !out[0].optional && out[1..].iter().all(plain) {
        return out;
    }
    let mut merged: Vec<Arg> = Vec::new();
    let mut it = out.into_iter().peekable();
    while let Some(a) = it.next() {
        if a.typ == ArgType::PureToken
            && !a.optional
            && !a.multiple
            && it.peek().is_some_and(plain)
            && let Some(mut n) = it.next()
        {
            n.token = a.token;
            merged.push(n);
            continue;
        }
        merged.push(a);
    }
    merged
}

/// `x [x ...]` and `a b [a b ...]` become one repeated argument or block.
fn collapse_repeats(items: Vec<Arg>) -> Vec<Arg> {
    let mut out: Vec<Arg> = Vec::new();
    for a in items {
        if a.optional && a.multiple {
            let rep: Vec<Arg> = if a.typ == ArgType::Block && a.token.is_none() {
                a.args.clone()
            } else {
                let mut one = a.clone();
                one.optional = false;
                one.multiple = false;
                vec![one]
            };
            let k = rep.len();
            // `TOKEN x [x ...]`: the token is given once, the values repeat.
            let same = |x: &Arg, y: &Arg| {
                x.same_shape(y)
                    || (k == 1 && y.token.is_none() && x.name == y.name && x.typ == y.typ && x.args == y.args)
            };
            if k > 0 && out.len() >= k && out[out.len() - k..].iter().zip(&rep).all(|(x, y)| same(x, y)) {
                let prev: Vec<Arg> = out.drain(out.len() - k..).collect();
                let mut m = if k == 1 { prev.into_iter().next().unwrap_or_else(|| a.clone()) } else { block(prev) };
                m.multiple = true;
                if rep.iter().any(|r| r.token.is_some()) {
                    m.multiple_token = true;
                }
                out.push(m);
                continue;
            }
        }
        out.push(a);
    }
    out
}

/// Parses a syntax string into COMMAND DOCS arguments.
pub fn parse(syntax: &str) -> Result<Vec<Arg>, String> {
    let mut p = Parser { toks: lex(syntax)?, pos: 0, group_repeats: false };
    let alts = p.alts()?;
    if p.pos != p.toks.len() {
        return Err(format!("unbalanced brackets in {syntax:?}"));
    }
    if alts.len() > 1 {
        return Ok(vec![group(alts)?]);
    }
    Ok(alts.into_iter().next().unwrap_or_default())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn show(args: &[Arg]) -> String {
        args.iter()
            .map(|a| {
                let mut s = format!("{}:{}", a.name, a.typ.as_str());
                if let Some(t) = &a.token {
                    s.push_str(&format!("={t}"));
                }
                for (f, n) in [(a.optional, "?"), (a.multiple, "*"), (a.multiple_token, "+")] {
                    if f {
                        s.push_str(n);
                    }
                }
                if !a.args.is_empty() {
                    s.push_str(&format!("({})", show(&a.args)));
                }
                s
            })
            .collect::<Vec<_>>()
            .join(" ")
    }

    #[test]
    fn set_syntax() {
        let a = parse(
            "key value [NX | XX] [GET] [EX seconds | PX milliseconds | EXAT unix-time-seconds | PXAT unix-time-milliseconds | KEEPTTL]",
        )
        .unwrap();
        assert_eq!(
            show(&a),
            "key:key value:string nx_xx:oneof?(nx:pure-token=NX xx:pure-token=XX) get:pure-token=GET? \
             seconds_milliseconds_unix-time-seconds_unix-time-milliseconds_keepttl:oneof?(seconds:integer=EX \
             milliseconds:integer=PX unix-time-seconds:unix-time=EXAT unix-time-milliseconds:unix-time=PXAT keepttl:pure-token=KEEPTTL)"
        );
    }

    #[test]
    fn repetitions_and_blocks() {
        assert_eq!(show(&parse("key [key ...]").unwrap()), "key:key*");
        assert_eq!(show(&parse("[section [section ...]]").unwrap()), "section:string?*");
        assert_eq!(
            show(&parse("parameter value [parameter value ...]").unwrap()),
            "parameter_value:block*(parameter:string value:string)"
        );
        assert_eq!(
            show(&parse("key [BY pattern] [LIMIT offset count] [GET pattern [GET pattern ...]]").unwrap()),
            "key:key pattern:pattern=BY? limit:block=LIMIT?(offset:integer count:integer) pattern:pattern=GET?*+"
        );
        assert_eq!(show(&parse("[count]").unwrap()), "count:integer?");
        assert_eq!(show(&parse("").unwrap()), "");
        assert_eq!(
            show(&parse("[FILTERBY <MODULE module-name | ACLCAT category | PATTERN pattern>]").unwrap()),
            "module-name_category_pattern:oneof=FILTERBY?(module-name:string=MODULE category:string=ACLCAT pattern:pattern=PATTERN)"
        );
        assert_eq!(
            show(&parse("key [key ...] [WEIGHTS weight [weight ...]]").unwrap()),
            "key:key* weight:double=WEIGHTS?*"
        );
        assert!(parse("[a").is_err());
        assert!(parse("a]").is_err());
        assert!(parse("...").is_err());
    }
}
