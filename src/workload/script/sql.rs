//! SQL text inside a script: where a statement ends (a `;` outside quotes and comments, as
//! pgbench reads it), its `:var` references turned into bind slots, its text for each
//! dialect's placeholders, and the column names a `\gset` after it stores.

use super::vars::{Names, Place};
use crate::engine::Dialect;

/// What a statement does to a transaction, so a failed script run can roll back.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Txn {
    Other,
    /// `BEGIN`, `START TRANSACTION`.
    Begin,
    /// `COMMIT`, `END`, `ROLLBACK`, `ABORT`.
    End,
}

/// A statement with its variables as bind slots.
#[derive(Debug, Clone)]
pub struct Bound {
    /// The text around the bind slots: one more piece than slots.
    pub pieces: Vec<String>,
    /// The variable slot of each bind parameter, in order.
    pub binds: Vec<usize>,
    pub txn: Txn,
}

impl Bound {
    /// The statement as `dialect` takes it: `?` for each slot, or `$1`, `$2`, … on
    /// PostgreSQL.
    pub fn render(&self, dialect: Dialect) -> String {
        let mut out = String::new();
        for (i, piece) in self.pieces.iter().enumerate() {
            out.push_str(piece);
            if i + 1 < self.pieces.len() {
                out.push_str(&dialect.bind_slot(i + 1));
            }
        }
        out
    }
}

/// Scanning state carried from one line of a statement to the next.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Lexical {
    #[default]
    Code,
    /// Inside a quoted string or identifier (`'`, `"` or `` ` ``).
    Quoted(char),
    /// Inside `/* … */`.
    Comment,
}

/// What [`scan`] found in a line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stop {
    /// The line ends inside the statement.
    End,
    /// A `--` comment starts at this byte: the rest of the line is not SQL.
    Comment(usize),
    /// A `;` ending the statement at this byte.
    Semicolon(usize),
    /// A `\` outside quotes at this byte (a meta-command such as `\gset`).
    Backslash(usize),
}

/// Scan `line` from byte `from` in state `st` (updated) to the first stop.
pub fn scan(line: &str, from: usize, st: &mut Lexical) -> Stop {
    let b = line.as_bytes();
    let mut i = from;
    while i < b.len() {
        match *st {
            Lexical::Quoted(q) => {
                if b[i] == b'\\' && q != '"' {
                    i += 1; // MySQL's backslash escapes; harmless elsewhere
                } else if b[i] == q as u8 {
                    *st = Lexical::Code;
                }
            }
            Lexical::Comment => {
                if b[i] == b'*' && b.get(i + 1) == Some(&b'/') {
                    *st = Lexical::Code;
                    i += 1;
                }
            }
            Lexical::Code => match b[i] {
                q @ (b'\'' | b'"' | b'`') => *st = Lexical::Quoted(q as char),
                b'-' if b.get(i + 1) == Some(&b'-') => return Stop::Comment(i),
                b'/' if b.get(i + 1) == Some(&b'*') => {
                    *st = Lexical::Comment;
                    i += 1;
                }
                b';' => return Stop::Semicolon(i),
                b'\\' => return Stop::Backslash(i),
                _ => {}
            },
        }
        i += 1;
    }
    Stop::End
}

/// Is `text` nothing but blanks and comments?
pub fn is_blank(text: &str) -> bool {
    let mut st = Lexical::Code;
    text.lines().all(|l| {
        let code: String = code_only(l, &mut st);
        code.trim().is_empty()
    })
}

/// The characters of `line` that are code (not comments), quotes kept.
fn code_only(line: &str, st: &mut Lexical) -> String {
    let b = line.as_bytes();
    let mut out = String::new();
    let mut i = 0;
    while i < b.len() {
        match *st {
            Lexical::Comment => {
                if b[i] == b'*' && b.get(i + 1) == Some(&b'/') {
                    *st = Lexical::Code;
                    i += 1;
                }
            }
            Lexical::Quoted(q) => {
                out.push(b[i] as char);
                if b[i] == q as u8 {
                    *st = Lexical::Code;
                }
            }
            Lexical::Code => match b[i] {
                b'-' if b.get(i + 1) == Some(&b'-') => break,
                b'/' if b.get(i + 1) == Some(&b'*') => {
                    *st = Lexical::Comment;
                    i += 1;
                }
                c => {
                    if matches!(c, b'\'' | b'"' | b'`') {
                        *st = Lexical::Quoted(c as char);
                    }
                    out.push(c as char);
                }
            },
        }
        i += 1;
    }
    out
}

/// Turn a statement's `:name` references (outside quotes and comments; not `::`, and a name
/// starting with a letter or `_`) into bind slots. The statement starts at `line`:`col` of
/// script `script`, for the places of its variables.
pub fn bind(text: &str, names: &mut Names, script: usize, line: usize, col: usize) -> Bound {
    let chars: Vec<char> = text.chars().collect();
    let mut pieces = vec![String::new()];
    let mut binds = Vec::new();
    let mut st = Lexical::Code;
    let (mut ln, mut line_start) = (line, 0usize);
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        let here = pieces.last_mut();
        let Some(piece) = here else { break };
        if c == '\n' {
            ln += 1;
            line_start = i + 1;
        }
        match st {
            Lexical::Quoted(q) if c == q => st = Lexical::Code,
            Lexical::Comment if c == '*' && chars.get(i + 1) == Some(&'/') => {
                piece.push(c);
                i += 1;
                st = Lexical::Code;
                piece.push('/');
                i += 1;
                continue;
            }
            Lexical::Code => match c {
                '\'' | '"' | '`' => st = Lexical::Quoted(c),
                '-' if chars.get(i + 1) == Some(&'-') => {
                    while i < chars.len() && chars[i] != '\n' {
                        piece.push(chars[i]);
                        i += 1;
                    }
                    continue;
                }
                '/' if chars.get(i + 1) == Some(&'*') => st = Lexical::Comment,
                ':' if chars.get(i + 1) == Some(&':') => {
                    piece.push_str("::");
                    i += 2;
                    continue;
                }
                ':' if chars
                    .get(i + 1)
                    .is_some_and(|n| n.is_ascii_alphabetic() || *n == '_') =>
                {
                    let s = i + 1;
                    let mut e = s;
                    while e < chars.len() && (chars[e].is_ascii_alphanumeric() || chars[e] == '_') {
                        e += 1;
                    }
                    let name: String = chars[s..e].iter().collect();
                    let c0 = if ln == line {
                        col + i
                    } else {
                        i - line_start + 1
                    };
                    let place = Place {
                        script,
                        line: ln,
                        col: c0,
                    };
                    binds.push(names.read(&name, place));
                    pieces.push(String::new());
                    i = e;
                    continue;
                }
                _ => {}
            },
            _ => {}
        }
        piece.push(c);
        i += 1;
    }
    Bound {
        pieces,
        binds,
        txn: txn_of(text),
    }
}

fn txn_of(text: &str) -> Txn {
    let mut st = Lexical::Code;
    let code: String = text.lines().map(|l| code_only(l, &mut st) + " ").collect();
    let mut words = code
        .split_whitespace()
        .map(|w| w.trim_end_matches(';').to_ascii_uppercase());
    match words.next().as_deref() {
        Some("BEGIN") => Txn::Begin,
        Some("START") if words.next().as_deref() == Some("TRANSACTION") => Txn::Begin,
        Some("COMMIT" | "END" | "ROLLBACK" | "ABORT") => Txn::End,
        _ => Txn::Other,
    }
}

/// Words that end a select list or a RETURNING list.
const LIST_END: &[&str] = &[
    "FROM",
    "WHERE",
    "INTO",
    "GROUP",
    "ORDER",
    "LIMIT",
    "HAVING",
    "UNION",
    "WINDOW",
    "OFFSET",
    "FOR",
    "FETCH",
    "EXCEPT",
    "INTERSECT",
];

/// The names of the columns a query returns, read from its last top-level `SELECT` or
/// `RETURNING` list: each item's `AS` alias, or a plain (qualified) column's name. An item
/// without one (`count(*)`, `*`) is an error saying to name it, since engines name such
/// columns each their own way.
pub fn result_columns(text: &str) -> Result<Vec<String>, String> {
    let mut st = Lexical::Code;
    let code: String = text.lines().map(|l| code_only(l, &mut st) + "\n").collect();
    let toks = tokens(&code);
    let start = toks
        .iter()
        .rposition(|(t, depth)| *depth == 0 && (t.eq_ignore_ascii_case("select") || t.eq_ignore_ascii_case("returning")))
        .ok_or("\\gset follows a statement that returns no columns (no SELECT or RETURNING list); put it after a query")?;
    let mut items: Vec<Vec<&str>> = vec![Vec::new()];
    for (t, depth) in &toks[start + 1..] {
        if *depth == 0 && LIST_END.iter().any(|k| t.eq_ignore_ascii_case(k)) {
            break;
        }
        if *depth == 0 && t == "," {
            items.push(Vec::new());
            continue;
        }
        if let Some(item) = items.last_mut() {
            item.push(t.as_str());
        }
    }
    if let Some(first) = items.first_mut()
        && first
            .first()
            .is_some_and(|w| w.eq_ignore_ascii_case("distinct") || w.eq_ignore_ascii_case("all"))
    {
        first.remove(0);
    }
    items.iter().map(|item| column_name(item)).collect()
}

fn column_name(item: &[&str]) -> Result<String, String> {
    let unquote = |w: &str| w.trim_matches(|c| c == '"' || c == '`').to_string();
    let ident = |w: &str| {
        let u = unquote(w);
        !u.is_empty()
            && u.chars().all(|c| c.is_alphanumeric() || c == '_')
            && !u.starts_with(|c: char| c.is_ascii_digit())
    };
    match item {
        [.., kw, alias] if kw.eq_ignore_ascii_case("as") && ident(alias) => Ok(unquote(alias)),
        [one] if one.split('.').all(ident) => {
            Ok(one.rsplit('.').next().map(unquote).unwrap_or_default())
        }
        [] => Err("\\gset: the query's column list has an empty item".into()),
        _ => Err(format!(
            "\\gset needs a name for the column `{}`: add AS name (engines name such columns differently)",
            item.join(" ")
        )),
    }
}

/// Words, quoted names, punctuation and parenthesised depth of each.
fn tokens(code: &str) -> Vec<(String, usize)> {
    let chars: Vec<char> = code.chars().collect();
    let mut out = Vec::new();
    let mut depth = 0usize;
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        if c.is_whitespace() {
            i += 1;
        } else if c == '(' {
            out.push(("(".to_string(), depth));
            depth += 1;
            i += 1;
        } else if c == ')' {
            depth = depth.saturating_sub(1);
            out.push((")".to_string(), depth));
            i += 1;
        } else if matches!(c, '\'' | '"' | '`') {
            let s = i;
            i += 1;
            while i < chars.len() && chars[i] != c {
                i += 1;
            }
            i += 1;
            out.push((chars[s..i.min(chars.len())].iter().collect(), depth));
        } else if c.is_alphanumeric() || c == '_' || c == '.' || c == ':' || c == '$' {
            let s = i;
            while i < chars.len()
                && (chars[i].is_alphanumeric()
                    || matches!(chars[i], '_' | '.' | ':' | '$' | '"' | '`'))
            {
                i += 1;
            }
            out.push((chars[s..i].iter().collect(), depth));
        } else {
            out.push((c.to_string(), depth));
            i += 1;
        }
    }
    out
}
