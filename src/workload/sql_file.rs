//! `sql`: a file of the user's own statements (a schema, seed rows) run in order on every
//! contender, with per-engine variants beside the plain file (`schema.postgres.sql` before
//! `schema.sql` on PostgreSQL). The files are read and split into statements when the study
//! is read, so a missing file or an unclosed quote stops the run before anything starts.
//!
//! This file owns the step: its parameters, the variant lookup, the statement splitter, the
//! checks made on statements sent to someone else's server, and the step's figures.

use super::ctx::{StepCtx, StepError, StepOutput, summary};
use super::kind::ContenderUse;
use crate::decode::{DecodeError, KeyPath};
use crate::results::{Better, Metric, Unit};
use serde::Deserialize;
use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;
use std::time::Instant;

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SqlParams {
    /// The statements' file, relative to the study file; variants for an engine are named
    /// with the engine before the extension (`schema.mysql.sql`).
    pub file: String,
    /// The files read and split ([`SqlParams::load`]).
    #[serde(skip)]
    pub loaded: Option<Arc<Variants>>,
}

/// One file's statements.
#[derive(Debug, Clone)]
pub struct SqlText {
    /// The file as read (its path, for messages).
    pub path: String,
    pub statements: Vec<Statement>,
}

/// One statement and where it starts in its file.
#[derive(Debug, Clone, PartialEq)]
pub struct Statement {
    pub line: usize,
    pub col: usize,
    pub text: String,
}

/// The variants found, and the one each engine of the study runs.
#[derive(Debug, Clone, Default)]
pub struct Variants {
    /// The files found, by variant (`""` for the plain file, `mysql`, `postgres`, …).
    pub files: BTreeMap<String, SqlText>,
    /// The variant each engine of the study runs, by engine name, chosen when the study
    /// was read.
    pub chosen: BTreeMap<String, String>,
}

/// Why a `sql` step's files could not be used.
#[derive(Debug, Clone, thiserror::Error)]
pub enum SqlFileError {
    /// About the study's own text: the key (relative to the step) and what is wrong.
    #[error("{1}")]
    At(KeyPath, String),
    /// In a statement file, located there.
    #[error("{file}:{line}:{col}: {message}")]
    File {
        file: String,
        line: usize,
        col: usize,
        message: String,
    },
}

/// `schema.sql` with `variant` before its extension: `schema.mysql.sql`.
pub fn variant_name(file: &str, variant: &str) -> String {
    if variant.is_empty() {
        return file.to_string();
    }
    let p = Path::new(file);
    let name = p.file_name().and_then(|n| n.to_str()).unwrap_or(file);
    let named = match name.rsplit_once('.') {
        Some((stem, ext)) if !stem.is_empty() => format!("{stem}.{variant}.{ext}"),
        _ => format!("{name}.{variant}"),
    };
    match p.parent().filter(|d| !d.as_os_str().is_empty()) {
        Some(dir) => dir.join(named).display().to_string(),
        None => named,
    }
}

impl SqlParams {
    pub fn validate(&self) -> Result<(), DecodeError> {
        if self.file.trim().is_empty() {
            return Err(DecodeError::at(
                KeyPath::root().key("file"),
                "file names the statements' file, relative to the study file (e.g. file = \"schema.sql\")",
            ));
        }
        Ok(())
    }

    /// Read every variant of the file beside `base` (the study file's directory) and check
    /// each contender finds one; statements for a contender with a target are checked to stay
    /// inside dbduel's own database.
    pub fn load(
        &mut self,
        base: &Path,
        contenders: &[ContenderUse<'_>],
    ) -> Result<(), SqlFileError> {
        let mut found = Variants::default();
        let mut wanted: Vec<&str> = Vec::new();
        for v in contenders.iter().flat_map(|c| c.variants) {
            if !wanted.contains(v) {
                wanted.push(v);
            }
        }
        for v in wanted {
            let rel = variant_name(&self.file, v);
            let full = base.join(&rel);
            match std::fs::read_to_string(&full) {
                Ok(text) => {
                    let path = full.display().to_string();
                    let statements =
                        split(&text).map_err(|(line, col, message)| SqlFileError::File {
                            file: path.clone(),
                            line,
                            col,
                            message,
                        })?;
                    found
                        .files
                        .insert(v.to_string(), SqlText { path, statements });
                }
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => {
                    return Err(SqlFileError::At(
                        KeyPath::root().key("file"),
                        format!("cannot read {}: {e}", full.display()),
                    ));
                }
            }
        }
        for c in contenders.iter().filter(|c| !c.variants.is_empty()) {
            let Some((variant, _)) = found.pick(c.variants) else {
                let names: Vec<String> = c
                    .variants
                    .iter()
                    .map(|v| variant_name(&self.file, v))
                    .collect();
                return Err(SqlFileError::At(
                    KeyPath::root().key("file"),
                    format!(
                        "no statements' file for contender `{}` ({}): looked for {} in {}; write one of them, or fix the path (it is relative to the study file)",
                        c.name,
                        c.engine,
                        names.join(", "),
                        if base.as_os_str().is_empty() {
                            Path::new(".")
                        } else {
                            base
                        }
                        .display()
                    ),
                ));
            };
            found.chosen.insert(c.engine.to_string(), variant.clone());
            let text = &found.files[&variant];
            if c.target {
                for s in &text.statements {
                    if let Some(why) = outside_own_database(&s.text) {
                        return Err(SqlFileError::File {
                            file: text.path.clone(),
                            line: s.line,
                            col: s.col,
                            message: super::sql_reach::on_target(&why, c.name),
                        });
                    }
                }
            }
        }
        self.loaded = Some(Arc::new(found));
        Ok(())
    }
}

impl Variants {
    /// The first of `order` (an engine's variants, most specific first) found: its variant
    /// and its file.
    pub fn pick(&self, order: &[&str]) -> Option<(String, &SqlText)> {
        order
            .iter()
            .find_map(|v| self.files.get(*v).map(|t| (v.to_string(), t)))
    }

    /// The file the engine named `engine` runs, as chosen when the study was read.
    pub fn for_engine(&self, engine: &str) -> Option<&SqlText> {
        self.files.get(self.chosen.get(engine)?)
    }
}

pub use super::sql_reach::{outside_own_database, qualified_table};

/// Split a file into statements at `;` outside quotes (`'…'`, `"…"`, `` `…` ``, PostgreSQL's
/// `$tag$…$tag$`) and comments (`-- …`, `# …` at a line's start, `/* … */`); each
/// statement with the line and column it starts at, comments and blank statements left out.
/// An unclosed quote or comment is an error at where it opens.
pub fn split(text: &str) -> Result<Vec<Statement>, SplitError> {
    let mut s = Cursor {
        chars: text.chars().collect(),
        i: 0,
        line: 1,
        col: 1,
        cur: String::new(),
    };
    let mut out = Vec::new();
    let mut start: Option<(usize, usize)> = None;
    while let Some(c) = s.at(0) {
        let next = s.at(1);
        if (c == '-' && next == Some('-')) || (c == '#' && s.at_line_start()) {
            while s.at(0).is_some_and(|c| c != '\n') {
                s.take(false);
            }
            continue;
        }
        if c == '/' && next == Some('*') {
            s.block_comment()?;
            continue;
        }
        if c.is_whitespace() && start.is_none() {
            s.take(false);
            continue;
        }
        if start.is_none() {
            start = Some(s.here());
        }
        match c {
            ';' => {
                s.take(false);
                push(&mut out, &mut s.cur, start.take());
            }
            '\'' | '"' | '`' => s.quoted(c)?,
            '$' => s.dollar_quoted()?,
            _ => s.take(true),
        }
    }
    push(&mut out, &mut s.cur, start);
    Ok(out)
}

/// Where a text that does not split is wrong: its line, its column and why.
type SplitError = (usize, usize, String);

/// Where [`split`] is in the text: the character, its line and column, and the statement so
/// far.
struct Cursor {
    chars: Vec<char>,
    i: usize,
    line: usize,
    col: usize,
    cur: String,
}

impl Cursor {
    /// The character `k` after the current one.
    fn at(&self, k: usize) -> Option<char> {
        self.chars.get(self.i + k).copied()
    }

    fn here(&self) -> (usize, usize) {
        (self.line, self.col)
    }

    /// Advance over the current character, keeping it in the statement when `keep`.
    fn take(&mut self, keep: bool) {
        let c = self.chars[self.i];
        if keep {
            self.cur.push(c);
        }
        if c == '\n' {
            self.line += 1;
            self.col = 1;
        } else {
            self.col += 1;
        }
        self.i += 1;
    }

    fn take_n(&mut self, n: usize, keep: bool) {
        for _ in 0..n {
            self.take(keep);
        }
    }

    /// Nothing but blanks before the current character, in the statement and on its line.
    fn at_line_start(&self) -> bool {
        self.cur.trim().is_empty()
            && self.chars[..self.i]
                .iter()
                .rev()
                .take_while(|c| **c != '\n')
                .all(|c| c.is_whitespace())
    }

    /// A `/* … */` comment, left out of the statement (a space in its place).
    fn block_comment(&mut self) -> Result<(), SplitError> {
        let open = self.here();
        self.take_n(2, false);
        while self.at(0).is_some() && !(self.at(0) == Some('*') && self.at(1) == Some('/')) {
            self.take(false);
        }
        if self.at(0).is_none() {
            return Err((open.0, open.1, "this comment is never closed (`*/`)".into()));
        }
        self.take_n(2, false);
        self.cur.push(' ');
        Ok(())
    }

    /// A string or name quoted by `q`, kept whole; a backslash escapes the next character
    /// in a '…' string only (a backtick or double-quoted name knows no escape).
    fn quoted(&mut self, q: char) -> Result<(), SplitError> {
        let open = self.here();
        self.take(true);
        loop {
            let Some(d) = self.at(0) else {
                return Err((open.0, open.1, format!("this {q}quote{q} is never closed")));
            };
            if d == '\\' && q == '\'' && self.at(1).is_some() {
                self.take_n(2, true);
                continue;
            }
            self.take(true);
            if d == q {
                return Ok(());
            }
        }
    }

    /// `$tag$ … $tag$` (a PostgreSQL function body), kept whole; a `$` that opens none (`$1`,
    /// a placeholder) is kept as it is.
    fn dollar_quoted(&mut self) -> Result<(), SplitError> {
        let Some(tag_len) = super::sql_lex::dollar_tag(&self.chars, self.i) else {
            self.take(true);
            return Ok(());
        };
        let tag: Vec<char> = self.chars[self.i..self.i + tag_len + 2].to_vec();
        let open = self.here();
        self.take_n(tag.len(), true);
        loop {
            if self.at(0).is_none() {
                let tag: String = tag.iter().collect();
                return Err((open.0, open.1, format!("this {tag} quote is never closed")));
            }
            if self.chars[self.i..].starts_with(&tag) {
                self.take_n(tag.len(), true);
                return Ok(());
            }
            self.take(true);
        }
    }
}

fn push(out: &mut Vec<Statement>, cur: &mut String, start: Option<(usize, usize)>) {
    let text = cur.trim().to_string();
    cur.clear();
    if let (false, Some((line, col))) = (text.is_empty(), start) {
        out.push(Statement { line, col, text });
    }
}

impl super::kind::StepKind for SqlParams {
    fn validate(&self) -> Result<(), DecodeError> {
        SqlParams::validate(self)
    }
    fn makes_own_tables(&self) -> bool {
        true
    }
    fn read_beside(
        &mut self,
        beside: &super::kind::Beside<'_>,
    ) -> Result<(), super::kind::BesideError> {
        use super::kind::BesideError;
        self.load(beside.base, beside.users).map_err(|e| match e {
            SqlFileError::At(path, message) => BesideError::At(path, message),
            SqlFileError::File {
                file,
                line,
                col,
                message,
            } => BesideError::In {
                file,
                line,
                col,
                message,
            },
        })
    }
    fn run(&self, ctx: &StepCtx<'_>) -> Result<StepOutput, StepError> {
        run(self, ctx)
    }
}

pub fn run(p: &SqlParams, ctx: &StepCtx<'_>) -> Result<StepOutput, StepError> {
    let engine = ctx.engine.kind();
    let variants = p.loaded.as_ref().ok_or_else(|| {
        StepError::Check(format!(
            "the statements of {} were not read with the study",
            p.file
        ))
    })?;
    let text = variants.for_engine(engine).ok_or_else(|| {
        StepError::Check(format!(
            "no statements' file of {} was chosen for {engine} when the study was read",
            p.file
        ))
    })?;
    ctx.progress.status(&format!(
        "running {} statement(s) of {}",
        text.statements.len(),
        text.path
    ));
    let mut session = ctx.engine.connect()?;
    let t = Instant::now();
    let mut rows = 0u64;
    for s in &text.statements {
        if ctx.stop.load(std::sync::atomic::Ordering::Relaxed) {
            return Err(StepError::Run(crate::runner::RunError::Interrupted));
        }
        rows += session.execute(&s.text).map_err(|e| {
            StepError::Check(format!(
                "{}:{}:{}: {engine} refused this statement: {e}",
                text.path, s.line, s.col
            ))
        })?;
    }
    let elapsed = t.elapsed().as_secs_f64();
    drop(session);
    let n = text.statements.len() as u64;
    let mut s = summary(ctx.title("statements"));
    s.elapsed_s = Some(elapsed);
    s.rows = Some(rows);
    s.note = Some(format!(
        "{n} statement(s) of {}, one session, in order",
        text.path
    ));
    s.metrics = vec![
        Metric::new(
            "statements",
            "statements",
            n as f64,
            Unit::Count,
            Better::None,
        ),
        Metric::new(
            "rows",
            "rows affected",
            rows as f64,
            Unit::Count,
            Better::None,
        ),
        Metric::new(
            "elapsed_s",
            "seconds",
            elapsed,
            Unit::Seconds,
            Better::Lower,
        ),
    ];
    Ok(StepOutput {
        summary: s,
        details: serde_json::json!({
            "file": text.path,
            "statements": n,
            "rows_affected": rows,
            "elapsed_s": elapsed,
        }),
        seconds: 0,
        interrupted: false,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn texts(sql: &str) -> Vec<(usize, usize, String)> {
        split(sql)
            .expect("splits")
            .into_iter()
            .map(|s| (s.line, s.col, s.text))
            .collect()
    }

    #[test]
    fn statements_split_at_semicolons_outside_quotes_and_comments() {
        let got = texts(
            "-- a schema; with a comment\nCREATE TABLE t (a INT, b TEXT DEFAULT ';');\n\n  INSERT INTO t VALUES (1, 'it''s; fine'), (2, \"x;y\") /* ; */;\n# mysql comment; here\nSELECT `a;b` FROM t",
        );
        assert_eq!(
            got,
            vec![
                (
                    2,
                    1,
                    "CREATE TABLE t (a INT, b TEXT DEFAULT ';')".to_string()
                ),
                (
                    4,
                    3,
                    "INSERT INTO t VALUES (1, 'it''s; fine'), (2, \"x;y\")".to_string()
                ),
                (6, 1, "SELECT `a;b` FROM t".to_string()),
            ]
        );
    }

    #[test]
    fn dollar_quotes_hold_semicolons_and_placeholders_do_not_open_one() {
        let got = texts(
            "CREATE FUNCTION f() RETURNS int AS $body$ BEGIN RETURN 1; END; $body$ LANGUAGE plpgsql;\nSELECT $1, $$a;b$$;",
        );
        assert_eq!(got.len(), 2, "{got:?}");
        assert!(got[0].2.ends_with("LANGUAGE plpgsql"));
        assert_eq!(got[1].2, "SELECT $1, $$a;b$$");
    }

    #[test]
    fn an_unclosed_quote_is_an_error_where_it_opens() {
        let e = split("SELECT 1;\nINSERT INTO t VALUES ('oops);\n").expect_err("unclosed");
        assert_eq!((e.0, e.1), (2, 23));
        let e = split("/* never").expect_err("unclosed comment");
        assert_eq!((e.0, e.1), (1, 1));
    }

    #[test]
    fn variants_sit_before_the_extension() {
        assert_eq!(variant_name("schema.sql", "mysql"), "schema.mysql.sql");
        assert_eq!(
            variant_name("db/schema.sql", "postgres"),
            "db/schema.postgres.sql"
        );
        assert_eq!(variant_name("schema", "sqlite"), "schema.sqlite");
        assert_eq!(variant_name("schema.sql", ""), "schema.sql");
        let mut v = Variants::default();
        for k in ["", "mysql"] {
            v.files.insert(
                k.to_string(),
                SqlText {
                    path: k.to_string(),
                    statements: Vec::new(),
                },
            );
        }
        let path = |order: &[&str]| v.pick(order).map(|(_, t)| t.path.clone());
        assert_eq!(path(&["mariadb", "mysql", ""]), Some("mysql".into()));
        assert_eq!(path(&["mysql", ""]), Some("mysql".into()));
        assert_eq!(path(&["postgres", ""]), Some(String::new()));
        assert_eq!(path(&["sqlite"]), None);
    }
}
