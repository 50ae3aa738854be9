//! The comparison's view model, built once from a [`Comparison`]: its header lines, and each
//! row's values, change, noise and verdict in words. The renderers only lay it out.

use super::super::format;
use super::super::verdict;
use super::judge::{Comparison, MIN_SECONDS, Row, SIGMAS};
use crate::results::spread::MIN_SAMPLES;
use crate::results::{Better, Unit};

/// A comparison, ready to lay out.
pub struct CompareView<'a> {
    /// The comparison itself (JSON shows it as it is).
    pub c: &'a Comparison,
    /// What was compared and how to read it, one line each.
    pub header: Vec<String>,
    /// How many of each verdict.
    pub tally: String,
    /// Every row, in the comparison's order.
    pub rows: Vec<RowView<'a>>,
    /// The contenders, in the order of their first row.
    pub contenders: Vec<&'a str>,
}

/// One row's words.
pub struct RowView<'a> {
    pub row: &'a Row,
    /// The figure in run A, with its unit.
    pub a: String,
    /// The figure in run B, with its unit.
    pub b: String,
    /// `+3.1%`, `-12%`, `×9.50`; empty when there is no change to state.
    pub change: String,
    /// `±4.2%`, `none` for sizes, `unknown`, or empty.
    pub noise: String,
    /// The verdict in words, with why.
    pub verdict: String,
    /// What a regression line says after the figure: the change and its noise, or why.
    pub regression: String,
}

impl<'a> CompareView<'a> {
    /// The view of a comparison.
    pub fn build(c: &'a Comparison) -> Self {
        let mut contenders: Vec<&str> = Vec::new();
        for r in &c.rows {
            if !contenders.contains(&r.contender.as_str()) {
                contenders.push(&r.contender);
            }
        }
        CompareView {
            c,
            header: header_lines(c),
            tally: c.tally(),
            rows: c.rows.iter().map(row_view).collect(),
            contenders,
        }
    }
}

fn row_view(r: &Row) -> RowView<'_> {
    RowView {
        row: r,
        a: value_text(r.a, r.unit),
        b: value_text(r.b, r.unit),
        change: r.change.map(signed_pct).unwrap_or_default(),
        noise: noise_text(r),
        verdict: verdict_text(r),
        regression: match (r.change, r.noise) {
            (Some(x), Some(n)) => format!(" {} (noise ±{})", signed_pct(x), pct(n)),
            (Some(x), None) => format!(" {}", signed_pct(x)),
            _ => format!(" ({})", r.why),
        },
    }
}

/// `3.1%`, `12%`.
fn pct(x: f64) -> String {
    let p = x * 100.0;
    if p.abs() < 10.0 {
        format!("{p:.1}%")
    } else {
        format!("{p:.0}%")
    }
}

/// `+3.1%`, `-12%`.
fn signed_pct(x: f64) -> String {
    if x.is_infinite() {
        return if x > 0.0 {
            "+∞".into()
        } else {
            "-∞".into()
        };
    }
    if x >= 1.0 {
        // +850% reads better as 9.5×.
        return format!("×{}", verdict::ratio(1.0 + x).trim_end_matches('×'));
    }
    let s = pct(x);
    if x >= 0.0 { format!("+{s}") } else { s }
}

fn value_text(v: Option<f64>, unit: Option<Unit>) -> String {
    match (v, unit) {
        (Some(x), Some(u)) => format::value(x, u),
        _ => String::new(),
    }
}

fn noise_text(r: &Row) -> String {
    match (r.noise, r.unit) {
        (Some(n), _) => format!("±{}", pct(n)),
        (None, Some(Unit::Bytes)) => "none".into(),
        _ if r.change.is_some() && r.better != Some(Better::None) => "unknown".into(),
        _ => String::new(),
    }
}

fn verdict_text(r: &Row) -> String {
    if r.why.is_empty() {
        r.verdict.words().to_string()
    } else {
        format!("{} ({})", r.verdict.words(), r.why)
    }
}

fn header_lines(c: &Comparison) -> Vec<String> {
    let mut l = vec![
        format!("A: {} (started {})", c.a, c.a_started),
        format!("B: {} (started {})", c.b, c.b_started),
        format!(
            "a change counts beyond ±{} and beyond its noise: for figures repeated {MIN_SAMPLES} times or more a side, the two intervals for the median apart; else {SIGMAS:.0} standard errors of the per-second values",
            pct(c.threshold)
        ),
        format!(
            "not judged: measured once (one statement, or under {MIN_SECONDS} s of per-second data) or fewer than {MIN_SAMPLES} rounds a side; run with --repeat {MIN_SAMPLES}, or compare several runs a side (A1 A2 -- B1 B2)"
        ),
    ];
    if let Some((m, k)) = c.by_chance() {
        l.push(format!(
            "judged from repeated rounds: {m} figures; even if nothing changed, chance alone would set up to {k} of them apart (95%; figures of one step move together, so several apart in one step can be one chance event): read a lone change with care"
        ));
    }
    if c.differences.is_empty() {
        l.push("the runs' context is the same (study, settings, host, dbduel)".into());
    }
    l
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentages() {
        assert_eq!(signed_pct(0.0312), "+3.1%");
        assert_eq!(signed_pct(-0.123), "-12%");
        assert_eq!(signed_pct(f64::INFINITY), "+∞");
        assert_eq!(signed_pct(8.5), "×9.50");
        assert_eq!(signed_pct(99.0), "×100");
    }
}
