//! SQL read as each server reads it: one lexer per dialect that knows its identifiers,
//! strings, comments and dollar quotes, so the checks on a study's SQL (one statement, and
//! on a target nothing outside dbduel's database: `sql_text.rs`, `sql_file.rs`) see the
//! tokens the server will run, not the words a list of first words would.
//!
//! Hand-written rather than a parser crate's: the checks need only tokens, read the way a
//! server's own lexer reads them (MariaDB's backslash escapes and executable comments,
//! PostgreSQL's dollar quotes and `E''` strings), and `sqlparser` would reject much of what
//! the servers take, or read it otherwise.

/// How a server reads quotes and comments.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Dialect {
    /// MariaDB and MySQL: backslash escapes in `'…'` and `"…"` (never in `` `…` ``),
    /// `` ` `` identifiers, `"…"` an identifier under `ANSI_QUOTES`, `-- ` (with a space)
    /// and `#` comments, `/*! … */` and `/*M! … */` run as SQL.
    Mysql,
    /// MariaDB and MySQL with `NO_BACKSLASH_ESCAPES` in `sql_mode`: a backslash is a
    /// character like any other.
    MysqlNoBackslash,
    /// MariaDB and MySQL with `ANSI_QUOTES`: `"…"` an identifier, in which a backslash
    /// escapes nothing, while `'…'` keeps its escapes.
    MysqlAnsiQuotes,
    /// PostgreSQL: `''` doubling only (backslashes only in `E'…'`), `"…"` identifiers,
    /// `$tag$…$tag$` quotes, `--` always a comment, nested `/* */`.
    Postgres,
    /// PostgreSQL with `standard_conforming_strings = off`: backslashes escape in `'…'` too.
    PostgresEscapes,
}

/// Every reading a check must pass: a text one server would read otherwise is refused.
pub const EVERY_DIALECT: [Dialect; 5] = [
    Dialect::Mysql,
    Dialect::MysqlNoBackslash,
    Dialect::MysqlAnsiQuotes,
    Dialect::Postgres,
    Dialect::PostgresEscapes,
];

/// One token.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Tok {
    /// A bare word (keyword or name), upper-cased.
    Word(String),
    /// A quoted identifier, its text as the server reads it.
    Ident(String),
    /// A string literal (its text does not matter to the checks).
    Str,
    /// A number.
    Num,
    /// Any other character: `.`, `;`, `(`, `,`, operators.
    Punct(char),
}

/// A token and the 1-based character position it starts at.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Token {
    pub tok: Tok,
    pub at: usize,
}

impl Token {
    /// The name it is, when it is a word or a quoted identifier (words upper-cased).
    pub fn name(&self) -> Option<&str> {
        match &self.tok {
            Tok::Word(w) | Tok::Ident(w) => Some(w),
            _ => None,
        }
    }

    pub fn is_word(&self, w: &str) -> bool {
        matches!(&self.tok, Tok::Word(x) if x == w)
    }

    pub fn is(&self, c: char) -> bool {
        self.tok == Tok::Punct(c)
    }
}

fn word_char(c: char) -> bool {
    c.is_alphanumeric() || c == '_' || c == '$' || !c.is_ascii()
}

/// The tokens of `sql` under `dialect`. A quote or comment left open ends the text: what
/// it hides is nothing a server would run (it refuses the statement).
pub fn lex(sql: &str, dialect: Dialect) -> Vec<Token> {
    let chars: Vec<char> = sql.chars().collect();
    let my = !matches!(dialect, Dialect::Postgres | Dialect::PostgresEscapes);
    // Backslash escapes in '…' strings, and in "…" ones.
    let backslash = matches!(
        dialect,
        Dialect::Mysql | Dialect::MysqlAnsiQuotes | Dialect::PostgresEscapes
    );
    let backslash_dq = dialect == Dialect::Mysql;
    let mut out = Vec::new();
    let mut i = 0;
    // Inside MariaDB's `/*! … */`: its `*/` closes nothing but the comment's marker.
    let mut executable = false;
    let end_of_line = |mut i: usize| {
        while i < chars.len() && chars[i] != '\n' {
            i += 1;
        }
        i
    };
    while i < chars.len() {
        let c = chars[i];
        let next = chars.get(i + 1).copied();
        let at = i + 1;
        let mut push = |tok: Tok| out.push(Token { tok, at });
        match c {
            _ if c.is_ascii_whitespace() || (!my && c.is_whitespace()) => i += 1,
            // MariaDB's `--` starts a comment only before an ASCII space or control
            // character (not U+00A0, which it reads as part of a name).
            '-' if next == Some('-')
                && (!my
                    || chars
                        .get(i + 2)
                        .is_none_or(|c| c.is_ascii_whitespace() || c.is_ascii_control())) =>
            {
                i = end_of_line(i);
            }
            '#' if my => i = end_of_line(i),
            '*' if executable && next == Some('/') => {
                executable = false;
                i += 2;
            }
            '/' if next == Some('*') => (executable, i) = after_slash_star(&chars, i, my),
            '\'' => {
                // PostgreSQL's E'…' takes backslash escapes; its word E was pushed already.
                let e_string = !my
                    && matches!(out.last(), Some(Token { tok: Tok::Word(w), at: a }) if w == "E" && *a + 1 == at);
                let escapes = backslash || e_string;
                if e_string {
                    out.pop();
                }
                i = quoted_end(&chars, i, '\'', escapes);
                out.push(Token { tok: Tok::Str, at });
            }
            '"' => {
                let tok;
                (tok, i) = quoted_ident(&chars, i, '"', backslash_dq);
                push(tok);
            }
            // A backtick identifier knows no escape: only a doubled backtick.
            '`' if my => {
                let tok;
                (tok, i) = quoted_ident(&chars, i, '`', false);
                push(tok);
            }
            '$' if !my => {
                let tok;
                (tok, i) = dollar(&chars, i);
                push(tok);
            }
            _ if c.is_ascii_digit() || (c == '.' && next.is_some_and(|d| d.is_ascii_digit())) => {
                let tok;
                (tok, i) = number(&chars, i, my);
                push(tok);
            }
            _ if word_char(c) => {
                let end = word_end(&chars, i);
                push(word(&chars[i..end]));
                i = end;
            }
            _ => {
                push(Tok::Punct(c));
                i += 1;
            }
        }
    }
    out
}

/// After `/*` at `chars[i]`: MariaDB's `/*!NNNNN` and `/*M!NNNNN` open SQL, not a comment
/// (true, and the index past the marker); anything else is a comment (false, and the index
/// past it).
fn after_slash_star(chars: &[char], i: usize, my: bool) -> (bool, usize) {
    let marker = match (chars.get(i + 2), chars.get(i + 3)) {
        (Some('!'), _) if my => 3,
        (Some('M'), Some('!')) if my => 4,
        _ => return (false, block_comment_end(chars, i, !my)),
    };
    let mut i = i + marker;
    while chars.get(i).is_some_and(char::is_ascii_digit) {
        i += 1;
    }
    (true, i)
}

/// A name quoted by `q` at `chars[open]`: its text, a doubled quote made one, and the index
/// past it.
fn quoted_ident(chars: &[char], open: usize, q: char, escapes: bool) -> (Tok, usize) {
    let end = quoted_end(chars, open, q, escapes);
    let text: String = chars[open + 1..end.saturating_sub(1).max(open + 1)]
        .iter()
        .collect();
    (
        Tok::Ident(text.replace(&format!("{q}{q}"), &q.to_string())),
        end,
    )
}

/// PostgreSQL's `$tag$ … $tag$` at `chars[i]` (a string), or a lone `$`: the token and the
/// index past it.
fn dollar(chars: &[char], i: usize) -> (Tok, usize) {
    let Some(len) = dollar_tag(chars, i) else {
        return (Tok::Punct('$'), i + 1);
    };
    let tag = &chars[i..i + len + 2];
    let mut j = i + tag.len();
    while j < chars.len() && !chars[j..].starts_with(tag) {
        j += 1;
    }
    (Tok::Str, (j + tag.len()).min(chars.len()))
}

/// A number at `chars[start]` (`12`, `1.5`, `.5`, `1e3`), or in MariaDB a name that starts
/// with digits (`1db.t`): the token and the index past it.
fn number(chars: &[char], start: usize, my: bool) -> (Tok, usize) {
    let c = chars[start];
    let mut i = word_end(chars, start);
    let digits = chars[start..i].iter().all(char::is_ascii_digit);
    if my && !digits && c != '.' {
        return (word(&chars[start..i]), i);
    }
    if chars.get(i) == Some(&'.') && c != '.' {
        i += 1;
    }
    while i < chars.len() && (word_char(chars[i]) || chars[i] == '.') {
        i += 1;
    }
    (Tok::Num, i)
}

/// The index past the word characters from `chars[start]`.
fn word_end(chars: &[char], start: usize) -> usize {
    let mut i = start;
    while i < chars.len() && word_char(chars[i]) {
        i += 1;
    }
    i
}

/// A word, upper-cased.
fn word(chars: &[char]) -> Tok {
    Tok::Word(chars.iter().collect::<String>().to_uppercase())
}

/// The index just past the quote `q` opened at `chars[open]` (doubled quotes stay inside;
/// with `escapes`, a backslash takes the next character), or the text's end.
fn quoted_end(chars: &[char], open: usize, q: char, escapes: bool) -> usize {
    let mut i = open + 1;
    while i < chars.len() {
        match chars[i] {
            '\\' if escapes => i += 2,
            d if d == q => {
                if chars.get(i + 1) == Some(&q) {
                    i += 2;
                } else {
                    return i + 1;
                }
            }
            _ => i += 1,
        }
    }
    chars.len()
}

/// The index just past the block comment opened at `chars[open]`; PostgreSQL's nest.
fn block_comment_end(chars: &[char], open: usize, nested: bool) -> usize {
    let mut depth = 0usize;
    let mut i = open;
    while i + 1 < chars.len() {
        if chars[i] == '/' && chars[i + 1] == '*' && (nested || depth == 0) {
            depth += 1;
            i += 2;
        } else if chars[i] == '*' && chars[i + 1] == '/' {
            depth -= 1;
            i += 2;
            if depth == 0 {
                return i;
            }
        } else {
            i += 1;
        }
    }
    chars.len()
}

/// The length of the tag of a dollar quote opening at `chars[i]` (`$$`: 0, `$body$`: 4);
/// `None` for a `$` that opens none (`$1`).
pub fn dollar_tag(chars: &[char], i: usize) -> Option<usize> {
    let len = chars[i + 1..]
        .iter()
        .take_while(|d| d.is_ascii_alphanumeric() || **d == '_')
        .count();
    let opens = chars.get(i + 1 + len) == Some(&'$')
        && !chars.get(i + 1).is_some_and(|d| d.is_ascii_digit());
    opens.then_some(len)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kinds(sql: &str, d: Dialect) -> Vec<Tok> {
        lex(sql, d).into_iter().map(|t| t.tok).collect()
    }

    #[test]
    fn each_dialect_reads_its_own_quotes() {
        use Tok::*;
        let w = |s: &str| Word(s.into());
        // A backslash inside backticks escapes nothing on MariaDB.
        assert_eq!(
            kinds("`x'\\` ;", Dialect::Mysql),
            vec![Ident("x'\\".into()), Punct(';')]
        );
        assert_eq!(
            kinds("'a\\'' ;", Dialect::Mysql),
            vec![Str, Punct(';')],
            "the escaped quote is inside, the last one closes"
        );
        assert_eq!(
            kinds("'a\\'' ;", Dialect::Postgres),
            vec![Str],
            "PostgreSQL: a doubled quote, then the string runs on unclosed"
        );
        assert_eq!(kinds("E'a\\'' ;", Dialect::Postgres), vec![Str, Punct(';')]);
        assert_eq!(
            kinds("$f$ ; $f$ ;", Dialect::Postgres),
            vec![Str, Punct(';')]
        );
        assert_eq!(kinds("$1", Dialect::Postgres), vec![Punct('$'), Num]);
        assert_eq!(
            kinds("/* /* ; */ ; */ x", Dialect::Postgres),
            vec![w("X")],
            "PostgreSQL's comments nest"
        );
        assert_eq!(
            kinds("/*!50000 DROP */ x", Dialect::Mysql),
            vec![w("DROP"), w("X")]
        );
        assert_eq!(
            kinds("db . t", Dialect::Mysql),
            vec![w("DB"), Punct('.'), w("T")]
        );
        assert_eq!(kinds("1.5 1db", Dialect::Mysql), vec![Num, w("1DB")]);
        assert_eq!(
            kinds("t1.c", Dialect::Mysql),
            vec![w("T1"), Punct('.'), w("C")]
        );
        assert_eq!(kinds("-- x\n#y\nz", Dialect::Mysql), vec![w("Z")]);
        assert_eq!(
            kinds("1--1", Dialect::Mysql),
            vec![Num, Punct('-'), Punct('-'), Num]
        );
    }
}
