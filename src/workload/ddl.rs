//! `ddl`: one schema change (create/drop index, add/drop/rename column), timed, in each
//! engine's own syntax.

use super::ctx::{StepCtx, StepError, StepOutput, summary};
use crate::decode::{DecodeError, KeyPath, by_name};
use crate::engine::{Dialect, Session};
use crate::results::{Better, Metric, Unit};
use serde::Deserialize;
use std::time::Instant;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DdlAction {
    CreateIndex,
    DropIndex,
    AddColumn,
    DropColumn,
    /// TokuDB's "Hot Column Rename": `column` becomes `to`.
    RenameColumn,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DdlParams {
    #[serde(deserialize_with = "by_name")]
    pub action: DdlAction,
    /// Index name, for `create_index` and `drop_index`.
    #[serde(default)]
    pub index: Option<String>,
    /// Indexed columns, for `create_index`.
    #[serde(default)]
    pub columns: Vec<String>,
    /// Column name, for `add_column` and `drop_column`.
    #[serde(default)]
    pub column: Option<String>,
    /// SQL type of the new column, for `add_column`, e.g. `VARCHAR(20)`.
    #[serde(default)]
    pub column_type: Option<String>,
    /// The column's new name, for `rename_column`.
    #[serde(default)]
    pub to: Option<String>,
    /// The `ALTER TABLE` algorithm to force (`copy`, `inplace`, `instant`, `nocopy`) instead
    /// of the cheapest the server accepts: `copy` rebuilds the table by copying it (the
    /// shoot-out's stand-in for the rebuild its original's servers did in place). An engine without algorithms (SQLite, PostgreSQL) skips the step, saying so.
    #[serde(default)]
    pub algorithm: Option<String>,
}

/// The algorithms `algorithm` may force, as the study writes them.
pub const ALGORITHMS: &[&str] = &["copy", "inplace", "instant", "nocopy"];

fn identifier(s: &str) -> bool {
    !s.is_empty() && s.len() <= 64 && s.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// A column type's words: names, numbers and `(`, `,`, `)`; `None` for any other character.
fn type_tokens(t: &str) -> Option<Vec<String>> {
    let mut out = Vec::new();
    let mut word = String::new();
    for c in t.chars() {
        if c.is_ascii_alphanumeric() || c == '_' {
            word.push(c.to_ascii_uppercase());
            continue;
        }
        if !word.is_empty() {
            out.push(std::mem::take(&mut word));
        }
        match c {
            '(' | ')' | ',' => out.push(c.to_string()),
            ' ' => {}
            _ => return None,
        }
    }
    if !word.is_empty() {
        out.push(word);
    }
    Some(out)
}

/// Is `t` a plain column type: a name (`DOUBLE PRECISION`, `CHARACTER VARYING` too), an
/// optional `(n)` or `(n,m)`, then only `UNSIGNED`, `SIGNED`, `ZEROFILL`, `WITH`/`WITHOUT
/// TIME ZONE`, `CHARACTER SET name`, `CHARSET name` or `COLLATE name`? Nothing else reaches
/// the `ALTER TABLE`: no constraint, default or second clause.
fn column_type_ok(t: &str) -> bool {
    let Some(tokens) = type_tokens(t) else {
        return false;
    };
    let word = |s: &str| s.chars().next().is_some_and(|c| c.is_ascii_alphabetic());
    let number = |s: &str| !s.is_empty() && s.len() <= 5 && s.chars().all(|c| c.is_ascii_digit());
    let toks: Vec<&str> = tokens.iter().map(String::as_str).collect();
    let mut rest: &[&str] = &toks;
    let Some((&name, tail)) = rest.split_first() else {
        return false;
    };
    if !word(name) || name.len() > 64 {
        return false;
    }
    rest = tail;
    if let ["PRECISION" | "VARYING", tail @ ..] = rest {
        rest = tail;
    }
    rest = match rest {
        ["(", n, ")", tail @ ..] if number(n) => tail,
        ["(", n, ",", m, ")", tail @ ..] if number(n) && number(m) => tail,
        _ => rest,
    };
    loop {
        rest = match rest {
            [] => return true,
            ["UNSIGNED" | "SIGNED" | "ZEROFILL", tail @ ..] => tail,
            ["WITH" | "WITHOUT", "TIME", "ZONE", tail @ ..] => tail,
            ["CHARACTER", "SET", n, tail @ ..] | ["CHARSET" | "COLLATE", n, tail @ ..]
                if word(n) =>
            {
                tail
            }
            _ => return false,
        };
    }
}

/// A required identifier parameter.
fn ident<'a>(key: &str, v: &'a Option<String>, action: &str) -> Result<&'a str, DecodeError> {
    match v {
        None => Err(DecodeError::at(
            KeyPath::root().key(key),
            format!("action = \"{action}\" needs {key} = \"...\""),
        )),
        Some(s) if !identifier(s) => Err(DecodeError::at(
            KeyPath::root().key(key),
            format!("{key} = {s:?} must be 1-64 letters, digits or _"),
        )),
        Some(s) => Ok(s),
    }
}

impl DdlParams {
    /// The statement's target names, checked: (index or column name, action label).
    fn target(&self) -> Result<&str, DecodeError> {
        match self.action {
            DdlAction::CreateIndex => ident("index", &self.index, "create_index"),
            DdlAction::DropIndex => ident("index", &self.index, "drop_index"),
            DdlAction::AddColumn => ident("column", &self.column, "add_column"),
            DdlAction::DropColumn => ident("column", &self.column, "drop_column"),
            DdlAction::RenameColumn => ident("column", &self.column, "rename_column"),
        }
    }

    /// The statement in `d`'s syntax on `table`, and a title for it.
    pub fn statement(
        &self,
        d: Dialect,
        table: &str,
    ) -> Result<(String, &'static str), DecodeError> {
        let target = self.target()?;
        Ok(match self.action {
            DdlAction::CreateIndex => {
                (d.create_index(table, target, &self.columns), "create index")
            }
            DdlAction::DropIndex => (d.drop_index(table, target), "drop index"),
            DdlAction::AddColumn => (
                d.add_column(table, target, self.column_type.as_deref().unwrap_or("TEXT")),
                "add column",
            ),
            DdlAction::DropColumn => (d.drop_column(table, target), "drop column"),
            DdlAction::RenameColumn => (
                d.rename_column(table, target, self.to.as_deref().unwrap_or("")),
                "rename column",
            ),
        })
    }

    /// The forced algorithm in SQL's words (`COPY`), checked; `None`: the cheapest.
    pub fn forced(&self) -> Result<Option<&'static str>, DecodeError> {
        let Some(a) = &self.algorithm else {
            return Ok(None);
        };
        match ALGORITHMS.iter().position(|k| k.eq_ignore_ascii_case(a)) {
            Some(i) => Ok(Some(["COPY", "INPLACE", "INSTANT", "NOCOPY"][i])),
            None => Err(DecodeError::at(
                KeyPath::root().key("algorithm"),
                format!(
                    "algorithm = {a:?}; use one of: {} (or leave it out: the cheapest the server accepts)",
                    ALGORITHMS.join(", ")
                ),
            )),
        }
    }

    pub fn validate(&self) -> Result<(), DecodeError> {
        self.target()?;
        self.forced()?;
        match self.action {
            DdlAction::CreateIndex if self.columns.is_empty() => Err(DecodeError::at(
                KeyPath::root().key("columns"),
                "create_index needs columns = [\"...\"]",
            )),
            DdlAction::CreateIndex => match self.columns.iter().position(|c| !identifier(c)) {
                Some(i) => Err(DecodeError::at(
                    KeyPath::root().key("columns").index(i),
                    "column names must be 1-64 letters, digits or _",
                )),
                None => Ok(()),
            },
            DdlAction::AddColumn => match &self.column_type {
                None => Err(DecodeError::at(
                    KeyPath::root().key("column_type"),
                    "add_column needs column_type, e.g. \"VARCHAR(20)\"",
                )),
                Some(t) if !column_type_ok(t) => Err(DecodeError::at(
                    KeyPath::root().key("column_type"),
                    format!(
                        "column_type = {t:?} is not a plain SQL type: give a type name, an optional (n) or (n,m), and after it only UNSIGNED, SIGNED, ZEROFILL, PRECISION, VARYING, WITH/WITHOUT TIME ZONE, CHARACTER SET name or COLLATE name, e.g. \"VARCHAR(20)\" or \"DECIMAL(10,2) UNSIGNED\" (no constraints or defaults)"
                    ),
                )),
                Some(_) => Ok(()),
            },
            DdlAction::RenameColumn => ident("to", &self.to, "rename_column").map(drop),
            DdlAction::DropIndex | DdlAction::DropColumn => Ok(()),
        }
    }
}

/// A schema change as it ran.
pub struct Applied {
    pub elapsed_s: f64,
    /// The statement as sent (with the algorithm that was accepted).
    pub ran: String,
    pub algorithm: Option<&'static str>,
    /// The server's refusals of cheaper algorithms.
    pub refused: Vec<String>,
}

/// The attempts [`apply`] makes: every algorithm the engine has, cheapest first, or only
/// `forced`. An engine without algorithms cannot be forced: the step is skipped, saying why.
fn attempts(
    engine: &dyn crate::engine::Engine,
    sql: &str,
    forced: Option<&'static str>,
) -> Result<Vec<(String, Option<&'static str>)>, StepError> {
    let all = engine.dialect().ddl_attempts(sql, engine.ddl_algorithms());
    let Some(f) = forced else {
        return Ok(all);
    };
    if all.iter().all(|(_, a)| a.is_none()) {
        return Err(StepError::Skipped(format!(
            "algorithm = \"{}\" forces an ALTER TABLE algorithm, and this engine has none (only MariaDB and MySQL have them): the change was not made",
            f.to_ascii_lowercase()
        )));
    }
    if all.iter().any(|(_, a)| *a == Some(f)) {
        return Ok(all.into_iter().filter(|(_, a)| *a == Some(f)).collect());
    }
    let has: Vec<&str> = all.iter().filter_map(|(_, a)| *a).collect();
    Err(StepError::Check(format!(
        "algorithm = \"{}\": this server has no ALGORITHM={f}; it has {}",
        f.to_ascii_lowercase(),
        has.join(", ")
    )))
}

/// Run `sql` on `session` with the cheapest algorithm the server accepts (MariaDB), or only
/// `forced`, timed. The algorithms tried are the engine's (its dialect's, unless the server
/// has its own list).
pub fn apply(
    session: &mut dyn Session,
    engine: &dyn crate::engine::Engine,
    sql: &str,
    forced: Option<&'static str>,
) -> Result<Applied, StepError> {
    let mut refused = Vec::new();
    let sql = &engine.ddl_statement(sql)?;
    for (attempt, algorithm) in attempts(engine, sql, forced)? {
        let t = Instant::now();
        match session.execute(&attempt) {
            Ok(_) => {
                return Ok(Applied {
                    elapsed_s: t.elapsed().as_secs_f64(),
                    ran: attempt,
                    algorithm,
                    refused,
                });
            }
            Err(e) if e.kind == "unsupported_algorithm" => refused.push(e.message),
            Err(e) => return Err(e.into()),
        }
    }
    Err(StepError::Check(format!(
        "the server refused every algorithm for `{sql}`: {}",
        refused.join("; ")
    )))
}

impl super::kind::StepKind for DdlParams {
    fn validate(&self) -> Result<(), DecodeError> {
        DdlParams::validate(self)
    }
    fn needs(&self, tables: &[String]) -> Option<super::kind::TableNeed> {
        Some(super::kind::TableNeed::one(
            KeyPath::root().key("action"),
            format!("changes table {}", super::kind::first(tables)),
        ))
    }
    fn run(&self, ctx: &StepCtx<'_>) -> Result<StepOutput, StepError> {
        run(self, ctx)
    }
}

pub fn run(p: &DdlParams, ctx: &StepCtx<'_>) -> Result<StepOutput, StepError> {
    let d = ctx.engine.dialect();
    let table = &ctx.table().name;
    let (sql, title) = p
        .statement(d, table)
        .map_err(|e| StepError::Check(e.message))?;
    let forced = p.forced().map_err(|e| StepError::Check(e.message))?;
    let mut session = ctx.engine.connect()?;
    let Applied {
        elapsed_s: elapsed,
        ran,
        algorithm,
        refused,
    } = apply(session.as_mut(), ctx.engine, &sql, forced).map_err(|e| match e {
        StepError::Skipped(why) => {
            StepError::Skipped(format!("contender {}: {why}", ctx.contender))
        }
        e => e,
    })?;
    let mut s = summary(ctx.title(title));
    s.elapsed_s = Some(elapsed);
    s.note = Some(match algorithm {
        Some(a) if forced.is_some() => format!("{sql} (ALGORITHM={a}, forced)"),
        Some(a) => format!("{sql} (ALGORITHM={a})"),
        None => sql.clone(),
    });
    s.metrics = vec![Metric::new(
        "elapsed_s",
        "seconds",
        elapsed,
        Unit::Seconds,
        Better::Lower,
    )];
    Ok(StepOutput {
        summary: s,
        details: serde_json::json!({
            "sql": sql,
            "ran": ran,
            "algorithm": algorithm,
            "algorithm_forced": forced.is_some(),
            "algorithms_refused": refused,
            "elapsed_s": elapsed,
        }),
        seconds: 0,
        interrupted: false,
    })
}

#[cfg(test)]
mod tests {
    use super::{DdlParams, column_type_ok};

    fn params(toml_text: &str) -> DdlParams {
        toml::from_str(toml_text).expect("parses")
    }

    #[test]
    fn a_forced_algorithm_is_one_the_servers_name() {
        let base = "action = \"drop_column\"\ncolumn = \"c\"\n";
        assert_eq!(params(base).forced().unwrap(), None);
        for (given, sql) in [
            ("copy", "COPY"),
            ("INPLACE", "INPLACE"),
            ("instant", "INSTANT"),
            ("nocopy", "NOCOPY"),
        ] {
            let p = params(&format!("{base}algorithm = \"{given}\"\n"));
            assert_eq!(p.forced().unwrap(), Some(sql));
            assert!(p.validate().is_ok());
        }
        let e = params(&format!("{base}algorithm = \"rebuild\"\n"))
            .validate()
            .unwrap_err();
        assert_eq!(e.path.to_string(), "algorithm");
        assert!(
            e.message.contains("copy, inplace, instant, nocopy"),
            "{}",
            e.message
        );
    }

    #[test]
    fn column_types_are_a_name_a_size_and_a_few_words() {
        for ok in [
            "INT",
            "varchar(20)",
            "DECIMAL(10, 2) UNSIGNED",
            "DOUBLE PRECISION",
            "character varying(40)",
            "TIMESTAMP(3) WITH TIME ZONE",
            "VARCHAR(20) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin",
            "TEXT CHARSET latin1",
        ] {
            assert!(column_type_ok(ok), "{ok}");
        }
        for bad in [
            "",
            "INT NOT NULL",
            "INT DEFAULT 5",
            "INT PRIMARY KEY",
            "INT; DROP TABLE t",
            "INT GENERATED ALWAYS AS (1)",
            "INT REFERENCES t(id)",
            "VARCHAR(20) COLLATE",
            "INT, ADD COLUMN y INT",
            "ENUM('a')",
            "INT -- x",
            "(20)",
            "INT(1)(2)",
        ] {
            assert!(!column_type_ok(bad), "{bad}");
        }
    }
}
