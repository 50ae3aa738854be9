//! The SQL text a study sends (`update`'s `sql`, `queries`' `queries`) read before anything
//! runs: one statement only. A `;` outside quotes and comments would let a second statement
//! ride along (`UPDATE t SET a = 1; DROP DATABASE prod`) on a server dbduel does not own, so
//! it is refused at validation, with where it is. The wire clients refuse several statements
//! too (multi-statements off, the extended protocol); this check says so before a run starts.

use crate::decode::{DecodeError, KeyPath};

/// How a server reads quotes and comments: MariaDB's rules or PostgreSQL's.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Rules {
    /// Backslash escapes in quotes, `` ` `` quotes, `-- ` (with a space) and `#` comments,
    /// `/*! … */` run as SQL.
    Mysql,
    /// No backslash escapes, `--` always a comment, no `#` comments, no backticks.
    Postgres,
}

/// The 1-based character position of the first `;` outside quotes and comments under
/// `rules`. A quote or comment left open hides nothing a server would run.
fn separator_under(chars: &[char], rules: Rules) -> Option<usize> {
    let my = rules == Rules::Mysql;
    let to_line_end = |mut i: usize| {
        while i < chars.len() && chars[i] != '\n' {
            i += 1;
        }
        i
    };
    let mut i = 0;
    while i < chars.len() {
        match chars[i] {
            q @ ('\'' | '"') | q @ '`' if q != '`' || my => {
                i += 1;
                while i < chars.len() && chars[i] != q {
                    i += if my && chars[i] == '\\' { 2 } else { 1 };
                }
            }
            '-' if chars.get(i + 1) == Some(&'-')
                && (!my || chars.get(i + 2).is_none_or(|c| c.is_whitespace())) =>
            {
                i = to_line_end(i);
            }
            '#' if my => i = to_line_end(i),
            '/' if chars.get(i + 1) == Some(&'*')
                && !(my && matches!(chars.get(i + 2), Some('!' | 'M'))) =>
            {
                i += 2;
                while i + 1 < chars.len() && !(chars[i] == '*' && chars[i + 1] == '/') {
                    i += 1;
                }
                i += 1;
            }
            ';' => return Some(i + 1),
            _ => {}
        }
        i += 1;
    }
    None
}

/// The character position (1-based) of the first `;` outside quotes and comments, read by
/// MariaDB's rules and by PostgreSQL's (a `;` either server would see counts), if any.
pub fn separator_at(sql: &str) -> Option<usize> {
    let chars: Vec<char> = sql.chars().collect();
    [Rules::Mysql, Rules::Postgres]
        .into_iter()
        .filter_map(|r| separator_under(&chars, r))
        .min()
}

/// Fail, placed at `at` and naming the text `what`, when `sql` holds more than one statement (any `;` outside quotes
/// and comments, a trailing one included).
pub fn one_statement(sql: &str, at: KeyPath, what: &str) -> Result<(), DecodeError> {
    match separator_at(sql) {
        None => Ok(()),
        Some(n) => Err(DecodeError::at(
            at,
            format!(
                "{what} holds a `;` at character {n}: a step sends one statement, so remove the `;` (and anything after it) or give each statement its own step"
            ),
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_separator_counts_only_outside_quotes_and_comments() {
        assert_eq!(separator_at("UPDATE t SET a = 1"), None);
        assert_eq!(
            separator_at("UPDATE t SET a=1; DROP DATABASE prod"),
            Some(17)
        );
        assert_eq!(separator_at("SELECT 1;"), Some(9));
        assert_eq!(separator_at("SELECT ';', \";\", `ab` FROM t"), None);
        assert_eq!(separator_at("SELECT 'it''s;' FROM t"), None);
        assert_eq!(separator_at("SELECT 1 -- a; b\nFROM t"), None);
        // Read one way a statement hides the `;`, read the other it does not: refused.
        assert_eq!(separator_at("SELECT 1 # a; b\nFROM t"), Some(13));
        assert_eq!(separator_at("SELECT 'a\\'; DROP TABLE t; -- '"), Some(12));
        assert_eq!(separator_at("SELECT 1--1; DROP TABLE t"), Some(12));
        assert_eq!(separator_at("SELECT 1 /*! ; DROP TABLE t */"), Some(14));
        assert_eq!(separator_at("SELECT `a;b` FROM t"), Some(10));
        assert_eq!(separator_at("SELECT /* ; */ 1"), None);
        assert_eq!(separator_at("SELECT /* x */ 1; SELECT 2"), Some(17));
        assert_eq!(separator_at("SELECT 'é'; x"), Some(11));
    }
}
