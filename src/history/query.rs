//! Reading the catalogue: the runs a filter picks (study, contender, engine, engine version,
//! host, dates), and one figure's values across them, in time order.

use super::catalogue::{Catalogue, HistoryError};
use rusqlite::types::Value;

/// Which runs to show. Every field narrows; empty picks all.
#[derive(Debug, Clone, Default)]
pub struct Filter {
    pub study: Option<String>,
    /// Runs with this contender.
    pub contender: Option<String>,
    /// Runs with a contender on this engine (`sqlite`, `mariadb`, ...).
    pub engine: Option<String>,
    /// Runs with a contender whose engine version contains this text (`10.11`).
    pub version: Option<String>,
    /// The host name the run ran on.
    pub host: Option<String>,
    /// Runs started on or after this date or time (`2026-11-25`, RFC 3339 prefix).
    pub since: Option<String>,
    /// Runs started on or before this date or time (a prefix: `2026-11-25` takes that day).
    pub until: Option<String>,
}

impl Filter {
    /// The `WHERE` clause over `runs r` (and its `contexts`), with its parameters.
    fn clause(&self) -> (String, Vec<Value>) {
        let mut conds = vec!["1 = 1".to_string()];
        let mut args: Vec<Value> = Vec::new();
        let mut add = |cond: &str, v: &Option<String>| {
            if let Some(v) = v {
                args.push(Value::Text(v.clone()));
                conds.push(cond.replace('?', &format!("?{}", args.len())));
            }
        };
        add("r.study = ?", &self.study);
        add("r.host = ?", &self.host);
        add("r.started_at >= ?", &self.since);
        add("substr(r.started_at, 1, length(?)) <= ?", &self.until);
        add(
            "EXISTS (SELECT 1 FROM contexts x WHERE x.run = r.run AND x.contender = ?)",
            &self.contender,
        );
        add(
            "EXISTS (SELECT 1 FROM contexts x WHERE x.run = r.run AND x.engine = ?)",
            &self.engine,
        );
        add(
            "EXISTS (SELECT 1 FROM contexts x WHERE x.run = r.run AND instr(x.version, ?) > 0)",
            &self.version,
        );
        (conds.join(" AND "), args)
    }
}

/// One run as `dbduel history` lists it.
#[derive(Debug, Clone, PartialEq)]
pub struct RunRow {
    pub run: String,
    pub study: String,
    pub scale: Option<String>,
    pub status: String,
    pub started_at: String,
    pub host: String,
    /// `contender (engine version)` for each contender.
    pub contenders: Vec<String>,
}

/// One run's value of a figure, for a trend.
#[derive(Debug, Clone, PartialEq)]
pub struct Point {
    pub run: String,
    pub started_at: String,
    pub contender: String,
    pub version: String,
    pub status: String,
    pub value: f64,
    pub unit: String,
    pub better: String,
    /// Measurements behind the value; with 2 or more, `lo..hi` is the interval for the median.
    pub n: u32,
    pub lo: Option<f64>,
    pub hi: Option<f64>,
    /// Relative standard error of the run's per-second values behind the figure.
    pub rse: Option<f64>,
}

impl Catalogue {
    /// The runs `f` picks, oldest first.
    pub fn runs(&self, f: &Filter) -> Result<Vec<RunRow>, HistoryError> {
        let (cond, args) = f.clause();
        let sql = format!(
            "SELECT r.run, r.study, r.scale, r.status, r.started_at, r.host,
                    (SELECT group_concat(x.contender || ' (' || x.engine || ' ' || x.version || ')', ', ')
                       FROM (SELECT * FROM contexts c WHERE c.run = r.run ORDER BY c.contender) x)
             FROM runs r WHERE {cond} ORDER BY r.started_at, r.run"
        );
        self.sql(|c| {
            let mut st = c.prepare(&sql)?;
            let rows = st.query_map(rusqlite::params_from_iter(args), |r| {
                let cs: Option<String> = r.get(6)?;
                Ok(RunRow {
                    run: r.get(0)?,
                    study: r.get(1)?,
                    scale: r.get(2)?,
                    status: r.get(3)?,
                    started_at: r.get(4)?,
                    host: r.get(5)?,
                    contenders: cs
                        .map(|s| s.split(", ").map(String::from).collect())
                        .unwrap_or_default(),
                })
            })?;
            rows.collect()
        })
    }

    /// Figure `figure` of step `step` in the runs `f` picks, per contender (the filter's
    /// contender only, when it names one), oldest run first.
    pub fn trend(&self, f: &Filter, step: &str, figure: &str) -> Result<Vec<Point>, HistoryError> {
        let (cond, mut args) = f.clause();
        args.push(Value::Text(step.into()));
        args.push(Value::Text(figure.into()));
        let (s, fg) = (args.len() - 1, args.len());
        let mut only = String::new();
        if let Some(c) = &f.contender {
            args.push(Value::Text(c.clone()));
            only = format!(" AND g.contender = ?{}", args.len());
        }
        let sql = format!(
            "SELECT r.run, r.started_at, g.contender, coalesce(x.version, ''), g.status, g.value,
                    g.unit, g.better, g.n, g.lo, g.hi, g.rse
             FROM runs r JOIN figures g ON g.run = r.run
             LEFT JOIN contexts x ON x.run = g.run AND x.contender = g.contender
             WHERE {cond} AND g.step = ?{s} AND g.figure = ?{fg}{only}
             ORDER BY g.contender, r.started_at, r.run"
        );
        self.sql(|c| {
            let mut st = c.prepare(&sql)?;
            let rows = st.query_map(rusqlite::params_from_iter(args), |r| {
                Ok(Point {
                    run: r.get(0)?,
                    started_at: r.get(1)?,
                    contender: r.get(2)?,
                    version: r.get(3)?,
                    status: r.get(4)?,
                    value: r.get(5)?,
                    unit: r.get(6)?,
                    better: r.get(7)?,
                    n: r.get(8)?,
                    lo: r.get(9)?,
                    hi: r.get(10)?,
                    rse: r.get(11)?,
                })
            })?;
            rows.collect()
        })
    }

    /// Every row of every table as text, in key order: two catalogues with the same dump
    /// hold the same.
    pub fn dump(&self) -> Result<String, HistoryError> {
        let mut out = String::new();
        for (table, order) in [
            ("runs", "run"),
            ("contexts", "run, contender"),
            ("figures", "run, contender, step, figure"),
        ] {
            let sql = format!("SELECT * FROM {table} ORDER BY {order}");
            let rows: Vec<String> = self.sql(|c| {
                let mut st = c.prepare(&sql)?;
                let n = st.column_count();
                let rows = st.query_map([], |r| {
                    (0..n)
                        .map(|i| r.get::<_, Value>(i).map(|v| format!("{v:?}")))
                        .collect::<rusqlite::Result<Vec<_>>>()
                        .map(|vs| format!("{table}: {}", vs.join(" | ")))
                })?;
                rows.collect()
            })?;
            for r in rows {
                out.push_str(&r);
                out.push('\n');
            }
        }
        Ok(out)
    }
}
