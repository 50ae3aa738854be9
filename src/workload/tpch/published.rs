//! The specification's published answers: the 22 queries' results at SF 1 with the
//! validation parameters ([`super::queries::validation_params`]), as the TPC-H tools print
//! them, read from the `tpchgen` crate (which carries them). A `tpch-power` step with
//! `validation = true` on SF 1 checks each answer against them, by the same rule contenders
//! are compared with ([`Answer::differs_from`]).
//!
//! One published column is not whole: Q11's `ps_partkey` was printed right-aligned in 6
//! characters and cut to the first 4 (129760 as `1297`, 34452 as ` 344`, 9403 as `  94`), so
//! Q11's keys are compared as cut the same way ([`as_published`]); its values in full.

use super::QueryRun;
use super::answer::{Answer, cell};
use crate::engine::Value;

/// Are the published answers those of scale factor `sf` (SF 1)?
pub fn applies(sf: f64) -> bool {
    (sf - 1.0).abs() < 1e-9
}

/// The published answer of query `q` in canonical form, `None` outside 1 to 22.
pub fn answer(q: u8) -> Option<Answer> {
    let text = tpchgen::q_and_a::answers_sf1::answer(i32::from(q))?;
    Some(parse(text))
}

/// An answer as the tools print it: a header line, then one line a row, cells separated by
/// `|` and padded with spaces to the column's width (numbers on either side).
fn parse(text: &str) -> Answer {
    let mut lines = text.lines().filter(|l| !l.trim().is_empty());
    let columns = lines.next().map_or(0, |h| h.split('|').count());
    let mut values = Vec::new();
    let mut rows = 0;
    for line in lines {
        values.extend(line.split('|').take(columns).map(|c| {
            // text keeps a leading space of its own (a comment may start with one); a
            // number's padding goes
            let t = c.trim_end();
            let v = match cell(&Value::Text(t.trim_start().to_string())) {
                canonical if canonical.parse::<f64>().is_ok() => canonical,
                _ => t.to_string(),
            };
            Value::Text(v)
        }));
        rows += 1;
    }
    Answer::of(&values, rows)
}

/// Check each run's answer against the published one: a differing answer fails the query,
/// naming the first differing row. Returns how many answers agreed.
pub fn check(runs: &mut [QueryRun]) -> usize {
    let mut agreed = 0;
    for run in runs.iter_mut() {
        let (Some(mine), Some(published)) = (&run.answer, answer(run.query)) else {
            continue;
        };
        match as_published(run.query, mine).differs_from(&published) {
            Some(why) if run.status == "ok" => {
                run.status = format!("failed: the answer differs from the published one: {why}")
            }
            Some(_) => {}
            None => agreed += 1,
        }
    }
    agreed
}

/// `mine` as the published answer of query `q` prints it: Q11's first column cut as the
/// module's documentation says; every other answer as it is.
fn as_published(q: u8, mine: &Answer) -> Answer {
    let mut cut = mine.clone();
    if q == 11 {
        for row in &mut cut.rows {
            if let Some(key) = row.first_mut() {
                let whole = key.split('.').next().unwrap_or_default();
                let printed = format!("{whole:>6}");
                let kept = printed.get(..4).unwrap_or(&printed).trim().to_string();
                *key = cell(&Value::Text(kept));
            }
        }
    }
    cut
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_published_answer_parses_into_rows_of_its_columns() {
        let counts: Vec<u64> = (1..=22)
            .map(|q| answer(q).expect("1 to 22").row_count)
            .collect();
        assert_eq!(counts[0], 4, "Q1: four flag and status groups");
        assert_eq!(counts[1], 100, "Q2: the top 100");
        assert_eq!(counts[2], 10, "Q3: the top 10");
        assert_eq!(counts[5], 1, "Q6: one sum");
        assert!(answer(23).is_none() && answer(0).is_none());
        let q1 = answer(1).expect("Q1");
        assert_eq!(q1.columns, 10);
        assert_eq!(q1.rows[0][0], "A");
        assert_eq!(q1.rows[0][9], "1478493.0000");
        let q2 = answer(2).expect("Q2");
        assert_eq!(q2.rows[0][3], "185358.0000", "a right-aligned number");
        assert!(
            q2.rows.iter().any(|r| r[7].starts_with(' ')),
            "a comment's own leading space is kept"
        );
    }

    #[test]
    fn q11s_keys_are_compared_as_the_published_answer_cut_them() {
        let key = |k: &str| {
            let a = Answer::of(&[Value::Text(k.into()), Value::Text("1.00".into())], 1);
            as_published(11, &a).rows[0][0].clone()
        };
        assert_eq!(key("129760"), "1297.0000");
        assert_eq!(key("34452"), "344.0000");
        assert_eq!(key("9403"), "94.0000");
        let published = answer(11).expect("Q11");
        assert_eq!(published.rows[0][0], "1297.0000");
        assert_eq!(published.rows[0][1], "17538456.8600");
        assert_eq!(published.row_count, 1048);
    }

    /// Q6 is 123,141,078.23: a relative millionth is $123, so $1,000 off fails.
    #[test]
    fn an_answer_within_the_tolerance_agrees_and_another_fails_the_query() {
        let q6 = answer(6).expect("Q6");
        let revenue: f64 = q6.rows[0][0].parse().expect("a number");
        let run = |v: f64| QueryRun {
            query: 6,
            params: Default::default(),
            sql: String::new(),
            cold_s: Some(1.0),
            restart: None,
            hot_s: Vec::new(),
            best_s: Some(1.0),
            status: "ok".into(),
            answer: Some(Answer::of(&[Value::Text(format!("{v:.4}"))], 1)),
            reference: None,
        };
        let mut runs = [run(revenue + 0.004), run(revenue + 1_000.0)];
        assert_eq!(check(&mut runs), 1);
        assert_eq!(runs[0].status, "ok");
        assert!(
            runs[1]
                .status
                .starts_with("failed: the answer differs from the published one: row 1"),
            "{}",
            runs[1].status
        );
    }
}
