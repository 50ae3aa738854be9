//! `update`: one bulk `UPDATE` statement, timed, with the rows it matched and — where the
//! engine tells them apart — the rows whose values it changed. MariaDB says both (`Rows
//! matched: 81099  Changed: 80952`: a row set to the value it already had is matched, not
//! changed); PostgreSQL's command tag and SQLite's `changes()` count every matched row.

use super::ctx::{StepCtx, StepError, StepOutput, summary};
use crate::decode::{DecodeError, KeyPath};
use crate::engine::Changes;
use crate::results::{Better, Metric, Unit};
use serde::Deserialize;
use std::time::Instant;

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct UpdateParams {
    /// The statement, in SQL every contender accepts.
    pub sql: String,
}

impl UpdateParams {
    pub fn validate(&self) -> Result<(), DecodeError> {
        let head = self.sql.trim_start().to_ascii_uppercase();
        if !head.starts_with("UPDATE ") {
            return Err(DecodeError::at(
                KeyPath::root().key("sql"),
                "sql must be one UPDATE statement (use kind = \"ddl\" for schema changes)",
            ));
        }
        super::sql_text::one_statement(&self.sql, KeyPath::root().key("sql"), "sql")
    }
}

impl super::kind::StepKind for UpdateParams {
    // The study's own statement reaches a target only inside dbduel's database, as a `sql`
    // step's and a `script` step's do.
    fn read_beside(
        &mut self,
        beside: &super::kind::Beside<'_>,
    ) -> Result<(), super::kind::BesideError> {
        super::kind::own_sql_stays_inside(beside, KeyPath::root().key("sql"), &self.sql)
    }
    fn validate(&self) -> Result<(), DecodeError> {
        UpdateParams::validate(self)
    }
    fn needs(&self, tables: &[String]) -> Option<super::kind::TableNeed> {
        let t = updated_table(&self.sql).unwrap_or(super::kind::first(tables));
        Some(super::kind::TableNeed::one(
            KeyPath::root().key("sql"),
            format!("updates table {t}"),
        ))
    }
    fn names_table(&self) -> Option<(KeyPath, &'static str, String)> {
        let t = updated_table(&self.sql)?;
        Some((KeyPath::root().key("sql"), "sql updates", t.to_string()))
    }
    fn run(&self, ctx: &StepCtx<'_>) -> Result<StepOutput, StepError> {
        run(self, ctx)
    }
}

/// The table an `UPDATE` statement changes (its first, unqualified), if it can be told.
fn updated_table(sql: &str) -> Option<&str> {
    let start = sql.trim_start();
    let rest = start
        .get(..7)?
        .eq_ignore_ascii_case("UPDATE ")
        .then(|| &start[7..])?;
    let mut tokens = rest.split_whitespace();
    let name = tokens.find(|t| {
        !["LOW_PRIORITY", "IGNORE", "ONLY"]
            .iter()
            .any(|m| t.eq_ignore_ascii_case(m))
    })?;
    let name = name.split(',').next()?.rsplit('.').next()?;
    let name = name.trim_matches(|c| c == '"' || c == '`');
    (!name.is_empty()).then_some(name)
}

pub fn run(p: &UpdateParams, ctx: &StepCtx<'_>) -> Result<StepOutput, StepError> {
    let mut session = ctx.engine.connect()?;
    let t = Instant::now();
    let ch = session.execute_counted(&p.sql)?;
    let elapsed = t.elapsed().as_secs_f64();
    drop(session);
    let mut s = summary(ctx.title("bulk update"));
    s.elapsed_s = Some(elapsed);
    s.rows = Some(ch.matched.unwrap_or(ch.affected));
    s.metrics = figures(&ch, elapsed);
    s.note = Some(note(&ch));
    Ok(StepOutput {
        summary: s,
        details: serde_json::json!({
            "sql": p.sql,
            "rows_affected": ch.affected,
            "rows_matched": ch.matched,
            "rows_changed": ch.changed,
            "warnings": ch.warnings,
            "info": ch.info,
            "elapsed_s": elapsed,
        }),
        seconds: 0,
        interrupted: false,
    })
}

/// Rows matched (or, from an engine that says only one count, rows), rows changed where the
/// engine tells them apart, seconds, and warnings when there were any.
fn figures(ch: &Changes, elapsed: f64) -> Vec<Metric> {
    let label = if ch.matched.is_some() {
        "rows matched"
    } else {
        "rows"
    };
    let mut m = vec![Metric::new(
        "rows",
        label,
        ch.matched.unwrap_or(ch.affected) as f64,
        Unit::Count,
        Better::None,
    )];
    if let Some(changed) = ch.changed {
        m.push(Metric::new(
            "rows_changed",
            "rows changed",
            changed as f64,
            Unit::Count,
            Better::None,
        ));
    }
    m.push(Metric::new(
        "elapsed_s",
        "seconds",
        elapsed,
        Unit::Seconds,
        Better::Lower,
    ));
    if let Some(w) = ch.warnings.filter(|w| *w > 0) {
        m.push(Metric::new(
            "warnings",
            "warnings",
            w as f64,
            Unit::Count,
            Better::None,
        ));
    }
    m
}

/// The engine's own summary where it gives one, else what its count means.
fn note(ch: &Changes) -> String {
    match (&ch.info, ch.matched, ch.changed) {
        (Some(info), _, _) => info.clone(),
        (None, Some(_), None) => {
            "rows matched: the engine does not count rows left at their value apart".into()
        }
        _ => "rows affected, as the engine counts them".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn update_statements_name_their_table() {
        assert_eq!(
            updated_table("UPDATE user_logs SET a = 1"),
            Some("user_logs")
        );
        assert_eq!(
            updated_table("  update LOW_PRIORITY IGNORE `db`.`t` SET a = 1"),
            Some("t")
        );
        assert_eq!(updated_table("UPDATE ONLY \"t\" SET a = 1"), Some("t"));
        assert_eq!(updated_table("UPDATE a, b SET a.x = b.x"), Some("a"));
        assert_eq!(updated_table("DELETE FROM t"), None);
    }

    #[test]
    fn matched_and_changed_are_both_shown_where_the_engine_gives_both() {
        // MariaDB's words for MySQL's run in the shoot-out's original study.
        let ch = crate::engines::wire::mysql::changes_from_ok(
            80952,
            0,
            "Rows matched: 81099  Changed: 80952  Warnings: 0",
        );
        let m = figures(&ch, 5.32);
        let shown: Vec<(&str, &str, f64)> = m
            .iter()
            .map(|m| (m.key.as_str(), m.label.as_str(), m.value))
            .collect();
        assert_eq!(
            shown,
            vec![
                ("rows", "rows matched", 81099.0),
                ("rows_changed", "rows changed", 80952.0),
                ("elapsed_s", "seconds", 5.32),
            ]
        );
        assert_eq!(
            note(&ch),
            "Rows matched: 81099  Changed: 80952  Warnings: 0"
        );
        // PostgreSQL and SQLite: matched only.
        let ch = Changes {
            affected: 11,
            matched: Some(11),
            ..Changes::default()
        };
        let m = figures(&ch, 1.0);
        assert_eq!(m.len(), 2);
        assert_eq!((m[0].label.as_str(), m[0].value), ("rows matched", 11.0));
        assert!(note(&ch).starts_with("rows matched"));
        // An engine with only a count, and warnings.
        let ch = Changes {
            affected: 3,
            warnings: Some(2),
            ..Changes::default()
        };
        let m = figures(&ch, 1.0);
        assert_eq!(m[0].label, "rows");
        assert_eq!(m.last().map(|m| m.key.as_str()), Some("warnings"));
    }
}
