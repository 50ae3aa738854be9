//! What a study's statement reaches, read from its tokens under every dialect
//! (`sql_lex.rs`): on a target dbduel works only inside its own database, so a statement
//! about databases, schemas, accounts or the server, dynamic SQL, a table or function named
//! with a database or schema (`prod.t`, `prod . t`, `` `prod`.`t` ``, a second table of a
//! multi-table `UPDATE`), and a second statement are refused before anything runs. This is
//! the second line: the first is an account that can reach nothing else (the preflight's
//! privilege check).

use super::sql_lex::{self, EVERY_DIALECT, Tok, Token};

/// First words never sent to a target: statements about the server, its accounts, other
/// databases, files, or SQL built from strings (`PREPARE … FROM '…'`, `EXECUTE`).
const DENIED_HEADS: &[&str] = &[
    "USE",
    "GRANT",
    "REVOKE",
    "RESET",
    "FLUSH",
    "KILL",
    "SHUTDOWN",
    "RESTART",
    "INSTALL",
    "UNINSTALL",
    "LOAD",
    "COPY",
    "VACUUM",
    "CHECKPOINT",
    "REINDEX",
    "CLUSTER",
    "CALL",
    "DO",
    "PURGE",
    "CHANGE",
    "START",
    "STOP",
    "LOCK",
    "PREPARE",
    "EXECUTE",
    "DEALLOCATE",
    "BINLOG",
    "CLONE",
    "BACKUP",
    "IMPORT",
    "HANDLER",
    "SECURITY",
    "REASSIGN",
    "ALTER SYSTEM",
];

/// What `CREATE`, `DROP` and `ALTER` may not be about on a target.
const DENIED_OBJECTS: &[&str] = &[
    "DATABASE",
    "SCHEMA",
    "USER",
    "ROLE",
    "SERVER",
    "TABLESPACE",
    "EXTENSION",
    "SYSTEM",
    "INSTANCE",
    "LOGFILE",
    "FUNCTION",
    "PROCEDURE",
    "TRIGGER",
    "EVENT",
    "LANGUAGE",
    "FOREIGN",
    "PUBLICATION",
    "SUBSCRIPTION",
    "DEFINER",
    "AGGREGATE",
    "CAST",
    "OPERATOR",
    "RULE",
    "POLICY",
];

/// Words after which a name is a table's.
const TABLE_WORDS: &[&str] = &[
    "TABLE",
    "TABLES",
    "INTO",
    "FROM",
    "UPDATE",
    "JOIN",
    "REFERENCES",
    "EXISTS",
    "TO",
    "TRUNCATE",
    "USING",
    "LIKE",
    "DELETE",
    "DESCRIBE",
    "STRAIGHT_JOIN",
];

/// Words that end a list of tables (`FROM a, b WHERE …`).
const LIST_ENDS: &[&str] = &[
    "WHERE",
    "SET",
    "ON",
    "GROUP",
    "ORDER",
    "HAVING",
    "LIMIT",
    "WINDOW",
    "UNION",
    "SELECT",
    "VALUES",
    "RETURNING",
    "FOR",
    "INTERSECT",
    "EXCEPT",
    "OFFSET",
    "FETCH",
];

/// The refusal of a statement that reaches outside dbduel's database (`why`), sent for
/// `contender`, which runs on a target.
pub fn on_target(why: &str, contender: &str) -> String {
    format!(
        "{why}; contender `{contender}` runs on someone else's server (a target), where dbduel works only inside its own database: name tables without a database or schema, send one statement at a time, and leave databases, accounts and server settings to the server's owner"
    )
}

/// Why `sql` would reach outside dbduel's own database (or hold a second statement), read
/// under every dialect; `None` when it would not.
pub fn outside_own_database(sql: &str) -> Option<String> {
    EVERY_DIALECT
        .into_iter()
        .find_map(|d| reach(&sql_lex::lex(sql, d)))
}

/// The first table or function named with a database or schema (`other.t`), under any
/// dialect's reading.
pub fn qualified_table(sql: &str) -> Option<String> {
    EVERY_DIALECT
        .into_iter()
        .find_map(|d| qualified(&sql_lex::lex(sql, d)))
}

fn reach(tokens: &[Token]) -> Option<String> {
    if let Some(t) = tokens.iter().find(|t| t.is(';')) {
        return Some(format!(
            "a `;` at character {} starts a second statement",
            t.at
        ));
    }
    let words: Vec<&str> = tokens
        .iter()
        .skip_while(|t| t.is('('))
        .take(8)
        .map(|t| t.name().unwrap_or(""))
        .collect();
    let w = |i: usize| words.get(i).copied().unwrap_or("");
    let head = w(0);
    let two = format!("{head} {}", w(1));
    if let Some(d) = DENIED_HEADS.iter().find(|d| **d == head || **d == two) {
        return Some(format!("`{d}` is not sent to a target"));
    }
    if head == "SET" && !session_set(&words, tokens) {
        let what = ["GLOBAL", "PERSIST", "PERSIST_ONLY"]
            .into_iter()
            .find(|g| tokens.iter().any(|t| t.name() == Some(g)))
            .unwrap_or(w(1));
        return Some(format!("`SET {what}` is not sent to a target"));
    }
    if matches!(head, "CREATE" | "DROP" | "ALTER" | "RENAME" | "COMMENT") {
        let mut i = 1;
        while matches!(
            w(i),
            "OR" | "REPLACE"
                | "TEMPORARY"
                | "TEMP"
                | "UNIQUE"
                | "UNLOGGED"
                | "IF"
                | "NOT"
                | "EXISTS"
                | "ON"
                | "DEFINER"
                | "ALGORITHM"
                | "SQL"
                | "SECURITY"
        ) {
            i += 1;
        }
        if let Some(object) = DENIED_OBJECTS.iter().find(|o| **o == w(i)) {
            return Some(format!("`{head} {object}` is not sent to a target"));
        }
    }
    if let Some(at) = tokens
        .windows(2)
        .position(|p| p[0].is_word("INTO") && matches!(p[1].name(), Some("OUTFILE" | "DUMPFILE")))
    {
        return Some(format!(
            "`INTO {}` writes a file on the server",
            tokens[at + 1].name().unwrap_or_default()
        ));
    }
    qualified(tokens).map(|t| format!("{t} is named with a database or schema"))
}

/// `SET` of this session's own variables only: never `GLOBAL` or `PERSIST` (anywhere in
/// the statement, `@@global.x` and `SET a = 1, GLOBAL b = 2` included), a password, a role,
/// another session's authorization or PostgreSQL's `search_path` (which would point
/// unqualified names at another schema).
fn session_set(words: &[&str], tokens: &[Token]) -> bool {
    let second = words.get(1).copied().unwrap_or("");
    let third = words.get(2).copied().unwrap_or("");
    let denied = [
        "PASSWORD",
        "ROLE",
        "DEFAULT",
        "SEARCH_PATH",
        "SCHEMA",
        "SESSION_AUTHORIZATION",
    ];
    let session_of = matches!(second, "SESSION" | "LOCAL")
        && matches!(third, "AUTHORIZATION" | "ROLE" | "SEARCH_PATH" | "SCHEMA");
    let server_wide = tokens
        .iter()
        .any(|t| matches!(t.name(), Some("GLOBAL" | "PERSIST" | "PERSIST_ONLY")));
    !(denied.contains(&second) || session_of || server_wide)
}

/// The first qualified name that reaches outside the statement's own tables: three parts
/// (`db.t.c`), a qualified name where a table goes (after `FROM`, `INTO`, …, or in a list of
/// them), a qualified function call (`other.f(…)`), or a qualifier the statement names
/// nowhere on its own (neither a table nor an alias of its own).
fn qualified(tokens: &[Token]) -> Option<String> {
    let standalone = |name: &str| {
        tokens.iter().enumerate().any(|(i, t)| {
            t.name() == Some(name)
                && !tokens.get(i + 1).is_some_and(|n| n.is('.'))
                && !(i > 0 && tokens[i - 1].is('.'))
        })
    };
    let head_is_ddl = tokens
        .first()
        .and_then(Token::name)
        .is_some_and(|h| matches!(h, "CREATE" | "DROP" | "ALTER"));
    let mut table_next = false;
    // The parenthesis depth of each open list of tables.
    let mut lists: Vec<usize> = Vec::new();
    let mut depth = 0usize;
    let mut i = 0;
    while i < tokens.len() {
        let t = &tokens[i];
        let chain_end = chain(tokens, i);
        if chain_end > i + 1 {
            let parts = (chain_end - i).div_ceil(2);
            let text = (i..chain_end)
                .map(|j| tokens[j].name().map_or(".".to_string(), str::to_string))
                .collect::<String>();
            let first = t.name().unwrap_or_default();
            let call = tokens.get(chain_end).is_some_and(|n| n.is('('));
            if parts > 2 || table_next || call || !standalone(first) {
                let what = if call && !table_next {
                    "function"
                } else {
                    "table"
                };
                return Some(format!("{what} {}", text.to_lowercase()));
            }
            table_next = false;
            i = chain_end;
            continue;
        }
        match &t.tok {
            Tok::Punct('(') => depth += 1,
            Tok::Punct(')') => {
                lists.retain(|d| *d < depth);
                depth = depth.saturating_sub(1);
            }
            Tok::Punct(',') if lists.last() == Some(&depth) => table_next = true,
            Tok::Word(w) if TABLE_WORDS.contains(&w.as_str()) || (head_is_ddl && w == "ON") => {
                table_next = true;
                if matches!(w.as_str(), "FROM" | "UPDATE" | "JOIN" | "USING" | "DELETE") {
                    lists.retain(|d| *d != depth);
                    lists.push(depth);
                }
                i += 1;
                continue;
            }
            Tok::Word(w) if LIST_ENDS.contains(&w.as_str()) => {
                lists.retain(|d| *d != depth);
                table_next = false;
            }
            _ => table_next = false,
        }
        i += 1;
    }
    None
}

/// The index just past the dotted name starting at `tokens[i]` (`a`, `a.b`, `a.b.c`, `a.*`);
/// `i + 1` for a lone name, `i` for no name at all.
fn chain(tokens: &[Token], i: usize) -> usize {
    if tokens[i].name().is_none() || (i > 0 && tokens[i - 1].is('.')) {
        return i;
    }
    let mut j = i + 1;
    while j + 1 < tokens.len()
        && tokens[j].is('.')
        && (tokens[j + 1].name().is_some() || tokens[j + 1].is('*'))
    {
        j += 2;
    }
    j
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statements_for_a_target_stay_in_dbduels_database() {
        for ok in [
            "CREATE TABLE orders (id INT PRIMARY KEY)",
            "INSERT INTO orders VALUES (1.5)",
            "CREATE INDEX i ON orders (id)",
            "SET NAMES utf8mb4",
            "SET foreign_key_checks = 0",
            "SELECT 'a.b' FROM orders",
            "SELECT o.id, x.k FROM orders o JOIN items AS x ON x.k = o.id WHERE o.id > 1",
            "UPDATE orders o, items i SET o.k = i.k WHERE o.id = i.id",
            "TRUNCATE orders",
            "TRUNCATE TABLE orders",
            "SELECT COUNT(*) FROM (SELECT id FROM orders) AS s WHERE s.id > 0",
            "DELETE FROM orders WHERE id IN (SELECT id FROM items)",
            "INSERT INTO t (a) SELECT a FROM u",
        ] {
            assert_eq!(outside_own_database(ok), None, "{ok}");
        }
        for (bad, why) in [
            ("DROP DATABASE prod", "`DROP DATABASE`"),
            ("CREATE SCHEMA x", "`CREATE SCHEMA`"),
            ("INSERT INTO prod.orders VALUES (1)", "table prod.orders"),
            (
                "CREATE TABLE IF NOT EXISTS other.t (a INT)",
                "table other.t",
            ),
            ("UPDATE `prod`.`t` SET a = 1", "table prod.t"),
            ("SET GLOBAL max_connections = 1", "`SET GLOBAL`"),
            ("SET search_path = prod", "`SET SEARCH_PATH`"),
            ("SET @@global.max_connections = 1", "`SET GLOBAL`"),
            ("SET a = 1, GLOBAL b = 2", "`SET GLOBAL`"),
            ("SET SESSION AUTHORIZATION postgres", "`SET SESSION`"),
            ("GRANT ALL ON *.* TO x", "`GRANT`"),
            ("CREATE USER x", "`CREATE USER`"),
            ("USE prod", "`USE`"),
            // The forms a list of first words let through.
            ("TRUNCATE db.t", "table db.t"),
            ("TRUNCATE TABLE db . t", "table db.t"),
            ("PREPARE s FROM 'DROP TABLE prod.t'", "`PREPARE`"),
            ("EXECUTE s", "`EXECUTE`"),
            (
                "DELETE FROM t WHERE 1 = 1; DROP TABLE x",
                "second statement",
            ),
            ("UPDATE own, other.t SET own.a = 1", "table other.t"),
            (
                "UPDATE own JOIN other . t ON own.a = t.a SET own.a = 1",
                "table other.t",
            ),
            ("SELECT * FROM t, prod.secrets", "table prod.secrets"),
            ("SELECT prod.t.c FROM t", "table prod.t.c"),
            (
                "SELECT pg_catalog.pg_read_file('/etc/passwd')",
                "function pg_catalog.pg_read_file",
            ),
            ("SELECT a FROM t INTO OUTFILE '/tmp/x'", "`INTO OUTFILE`"),
            ("/*!50000 DROP DATABASE prod */", "`DROP DATABASE`"),
            (
                "UPDATE t AS `x'\\` SET k = k ; DROP TABLE prod.victim -- ` '",
                "second statement",
            ),
            (
                "CREATE FUNCTION f() RETURNS INT RETURN 1",
                "`CREATE FUNCTION`",
            ),
        ] {
            let got = outside_own_database(bad);
            assert!(
                got.as_deref().is_some_and(|g| g.contains(why)),
                "{bad}: {got:?}, want {why}"
            );
        }
    }
}
