//! A run as CSV for spreadsheets: every figure (one row per contender × step × figure, with
//! its unit, better direction and, over repeated rounds, its interval), or the per-second
//! series of the client steps (`--series`); and a comparison, one row per figure with A, B,
//! the change and the verdict. Read from the run directories alone, like every other
//! report; the columns are stable, as `summary.json`'s field names are.

use super::compare::{Comparison, Row};
use super::series::RunData;
use crate::results::{Better, Metric, Summary, Unit};
use serde::Serialize;

/// One figure of one step of one contender: a row of `report --format csv`.
#[derive(Debug, Clone, Serialize)]
pub struct FigureRow<'a> {
    #[serde(serialize_with = "cell")]
    pub study: &'a str,
    #[serde(serialize_with = "cell")]
    pub contender: &'a str,
    #[serde(serialize_with = "cell")]
    pub engine: &'a str,
    #[serde(serialize_with = "cell")]
    pub step: &'a str,
    #[serde(serialize_with = "cell")]
    pub kind: &'a str,
    /// `ok`, `failed`, `skipped`, `interrupted`.
    #[serde(serialize_with = "cell")]
    pub status: &'a str,
    /// The figure's stable key (`rows_per_s`); empty for a step without figures.
    #[serde(serialize_with = "cell")]
    pub figure: &'a str,
    #[serde(serialize_with = "cell")]
    pub label: &'a str,
    /// The figure in its unit (over repeated rounds, the median); empty when none.
    pub value: Option<f64>,
    /// `summary.json`'s unit name: `count`, `seconds`, `bytes`, `per_second`, `micros`,
    /// `percent`, `bytes_per_second`.
    #[serde(serialize_with = "cell")]
    pub unit: &'a str,
    /// `higher`, `lower` or `none`.
    #[serde(serialize_with = "cell")]
    pub better: &'a str,
    /// Measurements behind the value (1 without repeated rounds).
    pub n: usize,
    /// The interval for the median (repeated rounds only).
    pub lo: Option<f64>,
    pub hi: Option<f64>,
    /// The interval's confidence, 0–1.
    pub confidence: Option<f64>,
    pub min: Option<f64>,
    pub max: Option<f64>,
    /// Why a step has no figures (failed, skipped).
    #[serde(serialize_with = "cell")]
    pub note: &'a str,
}

/// The name `summary.json` gives a unit.
pub fn unit_name(u: Unit) -> &'static str {
    match u {
        Unit::Count => "count",
        Unit::Seconds => "seconds",
        Unit::Bytes => "bytes",
        Unit::PerSecond => "per_second",
        Unit::Micros => "micros",
        Unit::Percent => "percent",
        Unit::BytesPerSecond => "bytes_per_second",
    }
}

/// The name `summary.json` gives a better direction.
pub fn better_name(b: Better) -> &'static str {
    match b {
        Better::Higher => "higher",
        Better::Lower => "lower",
        Better::None => "none",
    }
}

/// Every row of the figures' CSV, in the summary's order.
pub fn figure_rows(summary: &Summary) -> Vec<FigureRow<'_>> {
    let mut rows = Vec::new();
    for c in &summary.contenders {
        for st in &c.steps {
            let base = FigureRow {
                study: &summary.study,
                contender: &c.name,
                engine: &c.engine,
                step: &st.name,
                kind: &st.kind,
                status: st.status.as_str(),
                figure: "",
                label: "",
                value: None,
                unit: "",
                better: "",
                n: 0,
                lo: None,
                hi: None,
                confidence: None,
                min: None,
                max: None,
                note: "",
            };
            if st.metrics.is_empty() {
                rows.push(FigureRow {
                    note: st.note.as_deref().unwrap_or(""),
                    ..base
                });
                continue;
            }
            rows.extend(st.metrics.iter().map(|m| figure(base.clone(), m)));
        }
    }
    rows
}

fn figure<'a>(base: FigureRow<'a>, m: &'a Metric) -> FigureRow<'a> {
    let spread = m.repeated();
    FigureRow {
        figure: &m.key,
        label: &m.label,
        value: Some(m.value),
        unit: unit_name(m.unit),
        better: better_name(m.better),
        n: spread.map_or(1, |s| s.n),
        lo: spread.map(|s| s.lo),
        hi: spread.map(|s| s.hi),
        confidence: spread.map(|s| s.confidence),
        min: spread.map(|s| s.min),
        max: spread.map(|s| s.max),
        ..base
    }
}

/// One second of a client step: a row of `report --series`.
#[derive(Debug, Clone, Serialize)]
pub struct SecondRow<'a> {
    #[serde(serialize_with = "cell")]
    pub contender: &'a str,
    #[serde(serialize_with = "cell")]
    pub step: &'a str,
    /// Seconds after the step's start (the second covers `[tick, t_s)`).
    pub tick: u64,
    pub t_s: f64,
    /// The sweep level (clients) the second belongs to, when the step sweeps.
    pub level: Option<u64>,
    pub warmup: bool,
    /// Operations completed in the second (all op kinds).
    pub ops: u64,
    pub ops_per_s: f64,
    pub errors: u64,
    pub p50_us: Option<f64>,
    pub p95_us: Option<f64>,
    pub p99_us: Option<f64>,
    pub p999_us: Option<f64>,
    pub max_us: Option<f64>,
    pub mean_us: Option<f64>,
}

/// Every second of every client step, contender by contender in the summary's order.
pub fn second_rows(run: &RunData) -> Vec<SecondRow<'_>> {
    let mut rows = Vec::new();
    for c in &run.summary.contenders {
        for st in &c.steps {
            let Some(s) = run.step(&c.name, &st.name) else {
                continue;
            };
            rows.extend(s.intervals.iter().map(|iv| {
                let l = iv.latency_us;
                SecondRow {
                    contender: &c.name,
                    step: &st.name,
                    tick: iv.tick,
                    t_s: iv.t_s,
                    level: iv.level,
                    warmup: iv.warmup,
                    ops: iv.per_op.iter().map(|o| o.ops).sum(),
                    ops_per_s: iv.ops_per_s,
                    errors: iv.errors,
                    p50_us: l.map(|l| l.p50),
                    p95_us: l.map(|l| l.p95),
                    p99_us: l.map(|l| l.p99),
                    p999_us: l.map(|l| l.p999),
                    max_us: l.map(|l| l.max),
                    mean_us: l.map(|l| l.mean),
                }
            }));
        }
    }
    rows
}

/// One figure of one step of one contender in two runs: a row of `compare --format csv`.
#[derive(Debug, Clone, Serialize)]
pub struct ChangeRow<'a> {
    #[serde(serialize_with = "cell")]
    pub study: &'a str,
    #[serde(serialize_with = "cell")]
    pub contender: &'a str,
    #[serde(serialize_with = "cell")]
    pub step: &'a str,
    /// The figure's stable key; `status` for a step-level row.
    #[serde(serialize_with = "cell")]
    pub figure: &'a str,
    #[serde(serialize_with = "cell")]
    pub label: &'a str,
    #[serde(serialize_with = "cell")]
    pub unit: &'a str,
    #[serde(serialize_with = "cell")]
    pub better: &'a str,
    pub a: Option<f64>,
    pub b: Option<f64>,
    /// (B − A) / A.
    pub change: Option<f64>,
    /// Half-width of the change's noise band, relative.
    pub noise: Option<f64>,
    /// `regressed`, `improved`, `no_significant_change`, `not_judged`, `differs`,
    /// `only_in_one`, `disturbed` (as the comparison's JSON says).
    pub verdict: String,
    #[serde(serialize_with = "cell")]
    pub why: &'a str,
}

/// Every row of a comparison's CSV, in the comparison's order.
pub fn change_rows(c: &Comparison) -> Vec<ChangeRow<'_>> {
    c.rows
        .iter()
        .map(|r: &Row| ChangeRow {
            study: &c.study,
            contender: &r.contender,
            step: &r.step,
            figure: &r.key,
            label: &r.figure,
            unit: r.unit.map_or("", unit_name),
            better: r.better.map_or("", better_name),
            a: r.a,
            b: r.b,
            change: r.change,
            noise: r.noise,
            verdict: serde_json::to_value(r.verdict)
                .ok()
                .and_then(|v| v.as_str().map(str::to_string))
                .unwrap_or_default(),
            why: &r.why,
        })
        .collect()
}

/// A comparison's CSV.
pub fn comparison(c: &Comparison) -> Result<String, String> {
    to_csv(&change_rows(c), CHANGE_COLUMNS)
}

/// The header of a comparison's CSV ([`ChangeRow`]'s fields in order).
pub const CHANGE_COLUMNS: &[&str] = &[
    "study",
    "contender",
    "step",
    "figure",
    "label",
    "unit",
    "better",
    "a",
    "b",
    "change",
    "noise",
    "verdict",
    "why",
];

/// A text cell as a spreadsheet may safely open it: one that starts a formula (`=`, `+`,
/// `-`, `@`, a tab or a carriage return, OWASP's list) gets a leading `'`, so a step's note
/// or a contender's name is shown, never run.
fn cell<S: serde::Serializer>(text: &&str, s: S) -> Result<S::Ok, S::Error> {
    if text.starts_with(['=', '+', '-', '@', '\t', '\r']) {
        s.serialize_str(&format!("'{text}"))
    } else {
        s.serialize_str(text)
    }
}

/// Rows as CSV text with a header line (the header alone when there are none); a row that
/// cannot be written is an error, never a shorter text.
pub fn to_csv<T: Serialize>(rows: &[T], header: &[&str]) -> Result<String, String> {
    let mut w = csv::WriterBuilder::new()
        .has_headers(false)
        .from_writer(Vec::new());
    let err = |e: csv::Error| format!("cannot write CSV: {e}");
    w.write_record(header).map_err(err)?;
    for r in rows {
        w.serialize(r).map_err(err)?;
    }
    let bytes = w
        .into_inner()
        .map_err(|e| format!("cannot write CSV: {}", e.error()))?;
    String::from_utf8(bytes).map_err(|e| format!("cannot write CSV: {e}"))
}

/// The figures' CSV of a run.
pub fn figures(summary: &Summary) -> Result<String, String> {
    to_csv(&figure_rows(summary), FIGURE_COLUMNS)
}

/// The per-second series' CSV of a run.
pub fn seconds(run: &RunData) -> Result<String, String> {
    to_csv(&second_rows(run), SECOND_COLUMNS)
}

/// The header of the figures' CSV ([`FigureRow`]'s fields in order).
pub const FIGURE_COLUMNS: &[&str] = &[
    "study",
    "contender",
    "engine",
    "step",
    "kind",
    "status",
    "figure",
    "label",
    "value",
    "unit",
    "better",
    "n",
    "lo",
    "hi",
    "confidence",
    "min",
    "max",
    "note",
];

/// The header of the series' CSV ([`SecondRow`]'s fields in order).
pub const SECOND_COLUMNS: &[&str] = &[
    "contender",
    "step",
    "tick",
    "t_s",
    "level",
    "warmup",
    "ops",
    "ops_per_s",
    "errors",
    "p50_us",
    "p95_us",
    "p99_us",
    "p999_us",
    "max_us",
    "mean_us",
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn headers_name_every_field() {
        // serde's own header would name the same fields: the constants must not drift.
        let mut w = csv::Writer::from_writer(Vec::new());
        let s: Summary = serde_json::from_value(serde_json::json!({
            "schema_version": 1, "study": "s", "started_at": "x", "status": "ok",
            "contenders": [{"name": "a", "engine": "sqlite", "steps": [
                {"name": "load", "kind": "load", "status": "failed", "note": "boom"}]}]
        }))
        .expect("summary");
        w.serialize(&figure_rows(&s)[0]).expect("row");
        let text = String::from_utf8(w.into_inner().expect("bytes")).expect("utf8");
        assert_eq!(text.lines().next(), Some(FIGURE_COLUMNS.join(",").as_str()));
        assert!(text.contains(",failed,") && text.contains("boom"), "{text}");
    }

    #[test]
    fn a_comparison_has_a_row_per_figure_with_its_verdict() {
        let c: Comparison = serde_json::from_value(serde_json::json!({
            "a": "runs/a", "b": "runs/b", "a_started": "x", "b_started": "y", "study": "s",
            "threshold": 0.05, "differences": [],
            "rows": [{"contender": "=c", "step": "q", "title": "t", "figure": "queries/s",
                      "key": "qps", "unit": "per_second", "better": "higher", "a": 100.0,
                      "b": 80.0, "change": -0.2, "noise": 0.01, "verdict": "regressed",
                      "why": "worse by 20%"}]
        }))
        .expect("comparison");
        let text = comparison(&c).expect("csv");
        let mut w = csv::Writer::from_writer(Vec::new());
        w.serialize(&change_rows(&c)[0]).expect("row");
        let serde_header = String::from_utf8(w.into_inner().expect("bytes")).expect("utf8");
        assert_eq!(
            serde_header.lines().next(),
            Some(CHANGE_COLUMNS.join(",").as_str()),
            "the constant names every field"
        );
        let mut r = csv::Reader::from_reader(text.as_bytes());
        let row = r.records().next().expect("a row").expect("record");
        let get = |k: &str| &row[CHANGE_COLUMNS.iter().position(|c| *c == k).expect(k)];
        assert_eq!(
            (
                get("contender"),
                get("a"),
                get("b"),
                get("change"),
                get("verdict")
            ),
            ("'=c", "100.0", "80.0", "-0.2", "regressed")
        );
        assert_eq!(get("unit"), "per_second");
    }

    #[test]
    fn a_text_cell_never_starts_a_formula() {
        let s: Summary = serde_json::from_value(serde_json::json!({
            "schema_version": 1, "study": "s", "started_at": "x", "status": "ok",
            "contenders": [{"name": "@a", "engine": "sqlite", "steps": [
                {"name": "-load", "kind": "load", "status": "failed",
                 "note": "=HYPERLINK(\"http://x\",\"y\")"},
                {"name": "q", "kind": "load", "status": "failed", "note": "+1"}]}]
        }))
        .expect("summary");
        let text = figures(&s).expect("csv");
        let mut r = csv::Reader::from_reader(text.as_bytes());
        let rows: Vec<csv::StringRecord> = r.records().map(|r| r.expect("row")).collect();
        let get = |row: &csv::StringRecord, k: &str| {
            row[FIGURE_COLUMNS.iter().position(|c| *c == k).expect(k)].to_string()
        };
        assert_eq!(get(&rows[0], "note"), "'=HYPERLINK(\"http://x\",\"y\")");
        assert_eq!(get(&rows[0], "contender"), "'@a");
        assert_eq!(get(&rows[0], "step"), "'-load");
        assert_eq!(get(&rows[1], "note"), "'+1");
        assert_eq!(get(&rows[1], "step"), "q");
    }

    #[test]
    fn repeated_figures_carry_their_interval() {
        let m = Metric::new("tps", "tps", 0.0, Unit::PerSecond, Better::Higher)
            .with_samples(vec![10.0, 12.0, 11.0, 9.0, 13.0]);
        let mut s: Summary = serde_json::from_value(serde_json::json!({
            "schema_version": 1, "study": "s", "started_at": "x", "status": "ok",
            "contenders": [{"name": "a", "engine": "sqlite", "steps": [
                {"name": "q", "kind": "queries", "status": "ok"}]}]
        }))
        .expect("summary");
        s.contenders[0].steps[0].metrics.push(m);
        let text = figures(&s).expect("csv");
        let mut r = csv::Reader::from_reader(text.as_bytes());
        let row = r.records().next().expect("a row").expect("record");
        let get = |k: &str| &row[FIGURE_COLUMNS.iter().position(|c| *c == k).expect(k)];
        assert_eq!(
            (get("value"), get("n"), get("lo"), get("hi")),
            ("11.0", "5", "9.0", "13.0")
        );
        assert_eq!(get("confidence"), "0.9375");
        assert_eq!(get("unit"), "per_second");
    }
}
