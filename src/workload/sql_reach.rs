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
    "INSERT",
    "REPLACE",
];

/// Words that end a list of tables (`FROM a, b WHERE …`).
const LIST_ENDS: &[&str] = &[
    "WHERE",
    "SET",
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

/// Functions that reach past the database whatever their arguments: files of the server,
/// other sessions, the server's settings, other servers.
const DENIED_FUNCTIONS: &[&str] = &[
    "SET_CONFIG",
    "PG_READ_FILE",
    "PG_READ_BINARY_FILE",
    "PG_LS_DIR",
    "PG_STAT_FILE",
    "PG_TERMINATE_BACKEND",
    "PG_CANCEL_BACKEND",
    "PG_RELOAD_CONF",
    "PG_ROTATE_LOGFILE",
    "LO_IMPORT",
    "LO_EXPORT",
    "DBLINK",
    "DBLINK_EXEC",
    "DBLINK_CONNECT",
    "LOAD_FILE",
    "SYS_EXEC",
    "SYS_EVAL",
];

/// What `CREATE`, `DROP` and `ALTER` may make or change on a target (the first of these
/// or of [`DENIED_OBJECTS`] after the verb names what the statement is about, whatever
/// `DEFINER = …`, `ALGORITHM = …` or `OR REPLACE` come before it).
const TAKEN_OBJECTS: &[&str] = &["TABLE", "INDEX", "VIEW", "SEQUENCE", "TYPE", "DOMAIN"];

/// The upper-cased name a token is, if it is one (a quoted identifier's too).
fn upper(t: &Token) -> Option<String> {
    t.name().map(str::to_ascii_uppercase)
}

fn reach(tokens: &[Token]) -> Option<String> {
    if let Some(t) = tokens.iter().find(|t| t.is(';')) {
        return Some(format!(
            "a `;` at character {} starts a second statement",
            t.at
        ));
    }
    let words: Vec<String> = tokens
        .iter()
        .skip_while(|t| t.is('('))
        .take(8)
        .map(|t| upper(t).unwrap_or_default())
        .collect();
    let w = |i: usize| words.get(i).map_or("", String::as_str);
    let head = w(0);
    let two = format!("{head} {}", w(1));
    if let Some(d) = DENIED_HEADS.iter().find(|d| **d == head || **d == two) {
        return Some(format!("`{d}` is not sent to a target"));
    }
    if head == "SET"
        && let Some(what) = server_wide_set(&words, tokens)
    {
        return Some(format!("`SET {what}` is not sent to a target"));
    }
    if matches!(head, "CREATE" | "DROP" | "ALTER" | "RENAME" | "COMMENT") {
        let object =
            tokens.iter().skip(1).filter_map(upper).find(|n| {
                DENIED_OBJECTS.contains(&n.as_str()) || TAKEN_OBJECTS.contains(&n.as_str())
            });
        if let Some(o) = object.filter(|o| DENIED_OBJECTS.contains(&o.as_str())) {
            return Some(format!("`{head} {o}` is not sent to a target"));
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
    if let Some(f) = tokens.windows(2).find_map(|p| {
        let name = upper(&p[0])?;
        (p[1].is('(') && DENIED_FUNCTIONS.contains(&name.as_str())).then_some(name)
    }) {
        return Some(format!(
            "`{}()` reaches past the database",
            f.to_ascii_lowercase()
        ));
    }
    qualified(tokens).map(|t| format!("{t} is named with a database or schema"))
}

/// What a `SET` changes beyond this session's own plain variables, if anything: `GLOBAL`
/// or `PERSIST` anywhere (`@@global.x`, `SET a = 1, GLOBAL b = 2`), a password, a role,
/// another session's authorization, PostgreSQL's `search_path` (which would point
/// unqualified names at another schema), and what changes how the server reads the SQL that
/// follows (`sql_mode`, `standard_conforming_strings`, `backslash_quote`: the checks read
/// it as the server's defaults do), or MariaDB's `SET STATEMENT … FOR` (a statement of its
/// own after `FOR`).
fn server_wide_set(words: &[String], tokens: &[Token]) -> Option<String> {
    const ANYWHERE: &[&str] = &[
        "GLOBAL",
        "PERSIST",
        "PERSIST_ONLY",
        "PASSWORD",
        "ROLE",
        "SEARCH_PATH",
        "SESSION_AUTHORIZATION",
        "AUTHORIZATION",
        "STATEMENT",
        "SQL_MODE",
        "STANDARD_CONFORMING_STRINGS",
        "BACKSLASH_QUOTE",
    ];
    if let Some(n) = tokens
        .iter()
        .filter_map(upper)
        .find(|n| ANYWHERE.contains(&n.as_str()))
    {
        return Some(n);
    }
    let second = words.get(1).map_or("", String::as_str);
    matches!(second, "DEFAULT" | "SCHEMA").then(|| second.to_string())
}

/// The first qualified name that reaches outside the statement's own tables: three parts
/// (`db.t.c`), a qualified name where a table goes (after `FROM`, `INTO`, `TABLE`, …, after
/// the modifiers that may stand between, or anywhere in a list of them), a qualified
/// function call (`other.f(…)`), or a qualifier the statement does not declare itself as a
/// table or an alias of one.
fn qualified(tokens: &[Token]) -> Option<String> {
    let declared = declared_names(tokens);
    let head_is_ddl = tokens
        .first()
        .and_then(upper)
        .is_some_and(|h| matches!(h.as_str(), "CREATE" | "DROP" | "ALTER"));
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
            let first = upper(t).unwrap_or_default();
            let call = tokens.get(chain_end).is_some_and(|n| n.is('('));
            if parts > 2 || table_next || call || !declared.contains(&first) {
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
        let word = upper(t).filter(|_| matches!(t.tok, Tok::Word(_)));
        match (&t.tok, word.as_deref()) {
            (Tok::Punct('('), _) => depth += 1,
            (Tok::Punct(')'), _) => {
                lists.retain(|d| *d < depth);
                depth = depth.saturating_sub(1);
            }
            (Tok::Punct(','), _) if lists.last() == Some(&depth) => table_next = true,
            // Words that may stand between a table word and its table.
            (_, Some(m)) if table_next && MODIFIERS.contains(&m) => {}
            (_, Some(w)) if TABLE_WORDS.contains(&w) || (head_is_ddl && w == "ON") => {
                table_next = true;
                if LIST_OPENERS.contains(&w) {
                    lists.retain(|d| *d != depth);
                    lists.push(depth);
                }
            }
            // A join's condition: the list of tables goes on after it.
            (_, Some("ON")) => table_next = false,
            (_, Some(w)) if LIST_ENDS.contains(&w) => {
                lists.retain(|d| *d != depth);
                table_next = false;
            }
            _ => table_next = false,
        }
        i += 1;
    }
    None
}

/// Words after a table word and before its table (`INSERT IGNORE INTO`, `FROM ONLY t`).
const MODIFIERS: &[&str] = &[
    "IGNORE",
    "LOW_PRIORITY",
    "HIGH_PRIORITY",
    "DELAYED",
    "QUICK",
    "ONLY",
    "LATERAL",
    "INTO",
    "TABLE",
    "IF",
    "NOT",
    "EXISTS",
];

/// Table words that begin a list of tables (`FROM a, b`, `DROP TABLE a, b`).
const LIST_OPENERS: &[&str] = &[
    "FROM", "UPDATE", "JOIN", "USING", "DELETE", "TABLE", "TABLES", "INSERT", "REPLACE",
    "TRUNCATE", "TO",
];

/// The names a statement declares for itself: each lone name where a table goes, and the
/// alias after it (`FROM t AS x`, `FROM t x`, `UPDATE t x`). A qualifier must be one of them.
fn declared_names(tokens: &[Token]) -> Vec<String> {
    // (name, whether it is a table: an alias follows only a table)
    let mut out: Vec<(String, bool)> = Vec::new();
    let keyword = |n: &str| {
        LIST_ENDS.contains(&n)
            || TABLE_WORDS.contains(&n)
            || MODIFIERS.contains(&n)
            || matches!(
                n,
                "ON" | "AS"
                    | "LEFT"
                    | "RIGHT"
                    | "INNER"
                    | "OUTER"
                    | "CROSS"
                    | "NATURAL"
                    | "FULL"
                    | "WITH"
                    | "VALUES"
                    | "PARTITION"
                    | "FORCE"
                    | "USE"
            )
    };
    for (i, t) in tokens.iter().enumerate() {
        let Some(prev) = i.checked_sub(1).map(|p| &tokens[p]) else {
            continue;
        };
        let Some(name) = upper(t).filter(|_| chain(tokens, i) == i + 1) else {
            continue;
        };
        let after_table_word = prev.is(',')
            || matches!(prev.tok, Tok::Word(_))
                && upper(prev).is_some_and(|p| {
                    TABLE_WORDS.contains(&p.as_str()) || MODIFIERS.contains(&p.as_str())
                });
        // After AS, or after a derived table's `)`: `FROM (SELECT …) a`.
        let after_as = prev.is_word("AS") || prev.is(')');
        // `FROM t x`: a name right after a lone table name is its alias.
        let after_table = out
            .last()
            .is_some_and(|(l, table)| *table && upper(prev).as_ref() == Some(l))
            && chain(tokens, i - 1) == i;
        if after_table_word && !keyword(&name) {
            out.push((name, true));
        } else if (after_as || after_table) && !keyword(&name) {
            out.push((name, false));
        }
    }
    out.into_iter().map(|(n, _)| n).collect()
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
            ("SET SESSION AUTHORIZATION postgres", "`SET AUTHORIZATION`"),
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
                "pg_read_file()",
            ),
            ("SELECT other.f(1)", "function other.f"),
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
            // What a review found past the first version of these checks.
            (
                "SET STATEMENT max_statement_time=1 FOR DROP DATABASE prod",
                "`SET STATEMENT`",
            ),
            ("SET sql_mode = 'ANSI_QUOTES'", "`SET SQL_MODE`"),
            (
                "SET standard_conforming_strings = off",
                "`SET STANDARD_CONFORMING_STRINGS`",
            ),
            ("SET \"search_path\" TO prod", "`SET SEARCH_PATH`"),
            (
                "DROP TABLE IF EXISTS prod, prod.secrets",
                "table prod.secrets",
            ),
            (
                "UPDATE IGNORE prod.t AS prod SET prod.a = 1",
                "table prod.t",
            ),
            (
                "INSERT IGNORE prod.t SELECT * FROM own AS prod",
                "table prod.t",
            ),
            (
                "RENAME TABLE prod TO p2, prod.secrets TO mine",
                "table prod.secrets",
            ),
            (
                "SELECT * FROM a JOIN b ON a.i = b.i, prod.s prod",
                "table prod.s",
            ),
            ("SELECT c.x FROM t WHERE c = 1", "table c.x"),
            (
                "CREATE DEFINER=CURRENT_USER EVENT e ON SCHEDULE EVERY 1 SECOND DO DELETE FROM own",
                "`CREATE EVENT`",
            ),
            (
                "SELECT set_config('search_path', 'prod', false)",
                "`set_config()`",
            ),
            ("SELECT LOAD_FILE('/etc/passwd')", "`load_file()`"),
            (
                "SELECT 1 AS \"\\\" , '\\' ' , (SELECT 1 FROM prod.s) -- ' \"",
                "table prod.s",
            ),
            (
                "SELECT * FROM t WHERE 1 --\u{a0} OR 1 IN (SELECT 1 FROM prod.s)",
                "table prod.s",
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

#[cfg(test)]
mod shipped {
    /// Every statement dbduel ships for studies to use on targets (the `init` template's
    /// schema and scripts, and the built-in pgbench scripts) passes the target checks.
    #[test]
    fn the_shipped_statements_pass() {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("studies/custom");
        let mut files = vec![];
        for dir in [root.clone(), root.join("scripts")] {
            for e in std::fs::read_dir(&dir).expect("dir").flatten() {
                if e.path().extension().is_some_and(|x| x == "sql") {
                    files.push(std::fs::read_to_string(e.path()).expect("read"));
                }
            }
        }
        for name in crate::workload::script::builtin::NAMES {
            files.push(crate::workload::script::builtin::get(name).unwrap_or_default());
        }
        assert!(files.len() >= 9, "{}", files.len());
        for text in files {
            let Ok(statements) = crate::workload::sql_file::split(&text) else {
                continue;
            };
            for s in statements {
                if s.text.trim_start().starts_with('\\') {
                    continue;
                }
                // A script's meta-commands sit on their own lines.
                let sql: String = s
                    .text
                    .lines()
                    .filter(|l| !l.trim_start().starts_with('\\'))
                    .collect::<Vec<_>>()
                    .join("\n");
                assert_eq!(super::outside_own_database(&sql), None, "{sql}");
            }
        }
    }
}
