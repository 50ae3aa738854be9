//! The SQL text a study sends (`update`'s `sql`, `queries`' `queries`) read before anything
//! runs: one statement only. A `;` outside quotes and comments would let a second statement
//! ride along (`UPDATE t SET a = 1; DROP DATABASE prod`) on a server dbduel does not own, so
//! it is refused at validation, with where it is. The wire clients refuse several statements
//! too (multi-statements off, the extended protocol); this check says so before a run starts.

use super::sql_lex::{self, EVERY_DIALECT};
use crate::decode::{DecodeError, KeyPath};

/// The character position (1-based) of the first `;` outside quotes and comments, read by
/// every dialect's rules (MariaDB's with and without backslash escapes, PostgreSQL's): a `;`
/// any server would see counts. A quote or comment left open hides nothing a server would
/// run.
pub fn separator_at(sql: &str) -> Option<usize> {
    EVERY_DIALECT
        .into_iter()
        .filter_map(|d| sql_lex::lex(sql, d).into_iter().find(|t| t.is(';')))
        .map(|t| t.at)
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
        // A backslash in a backtick identifier escapes nothing: the `;` after it counts.
        assert_eq!(
            separator_at("UPDATE t AS `x'\\` SET k = k ; DROP TABLE prod.victim -- ` '"),
            Some(29)
        );
        // Without backslash escapes (sql_mode NO_BACKSLASH_ESCAPES) the quote closes early.
        assert_eq!(separator_at("SELECT \"a\\\"; DROP TABLE t -- \""), Some(12));
    }
}
