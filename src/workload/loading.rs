//! What a load of generated rows and a load of a user's files share: how many tables load at
//! once, the loop that loads them side by side, the engine's warnings of every table together,
//! and the finished load's summary and figures.

use super::ctx::{StepError, summary};
use crate::dataset::TableDef;
use crate::engine::{EngineWarning, LoadOutcome};
use crate::results::{Better, Metric, Unit};

/// Tables loaded side by side: one at a time on an embedded engine (one writer at a time),
/// else `parallel` or the machine's cores, at most the tables.
pub(crate) fn tables_at_once(
    parallel: Option<u64>,
    engine: &dyn crate::engine::Engine,
    tables: usize,
) -> usize {
    if engine.embedded() {
        1
    } else {
        parallel.unwrap_or_else(cores).clamp(1, tables as u64) as usize
    }
}

/// A finished load's summary: its seconds, rows, rate and the rate's figures; and the method
/// the engine named for its first table (every table loads by the same path).
pub(crate) fn loaded_summary(
    title: String,
    loaded: u64,
    elapsed: f64,
    outcomes: &[LoadOutcome],
) -> (crate::results::StepSummary, String) {
    let rate = if elapsed > 0.0 {
        loaded as f64 / elapsed
    } else {
        0.0
    };
    let method = outcomes
        .first()
        .map(|o| o.method.clone())
        .unwrap_or_default();
    let mut s = summary(title);
    s.elapsed_s = Some(elapsed);
    s.rows = Some(loaded);
    s.ops_per_s = Some(rate);
    s.metrics = load_metrics(loaded, elapsed, rate);
    (s, method)
}

/// The load's figures: rows, seconds, rows a second.
fn load_metrics(loaded: u64, elapsed: f64, rate: f64) -> Vec<Metric> {
    vec![
        Metric::new("rows", "rows", loaded as f64, Unit::Count, Better::None),
        Metric::new(
            "elapsed_s",
            "seconds",
            elapsed,
            Unit::Seconds,
            Better::Lower,
        ),
        Metric::new(
            "rows_per_s",
            "rows/s",
            rate,
            Unit::PerSecond,
            Better::Higher,
        ),
    ]
}

/// The warnings of every table's load together.
#[derive(Debug, Clone, serde::Serialize)]
pub(crate) struct Warned {
    pub(crate) count: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    skipped: Option<u64>,
    pub(crate) serious: bool,
    /// The first few, each with its table.
    first: Vec<TableWarning>,
    /// Each table's summary line from the engine.
    info: Vec<String>,
}

#[derive(Debug, Clone, serde::Serialize)]
struct TableWarning {
    table: String,
    #[serde(flatten)]
    warning: EngineWarning,
}

/// Warnings shown in a note or an error.
const SHOWN_WARNINGS: usize = 3;

impl Warned {
    /// `None` when the engine reports no warnings.
    pub(crate) fn of(tables: &[TableDef], outcomes: &[LoadOutcome]) -> Option<Warned> {
        let names: Vec<String> = tables.iter().map(|t| t.name.clone()).collect();
        Self::of_names(&names, outcomes)
    }

    /// [`Warned::of`] for tables by name.
    pub(crate) fn of_names(tables: &[String], outcomes: &[LoadOutcome]) -> Option<Warned> {
        let mut all: Option<Warned> = None;
        for (t, o) in tables.iter().zip(outcomes) {
            let Some(w) = &o.warnings else { continue };
            let a = all.get_or_insert_with(|| Warned {
                count: 0,
                skipped: None,
                serious: false,
                first: Vec::new(),
                info: Vec::new(),
            });
            a.count += w.count;
            if let Some(n) = w.skipped {
                a.skipped = Some(a.skipped.unwrap_or(0) + n);
            }
            a.serious |= w.serious;
            a.first.extend(w.first.iter().map(|x| TableWarning {
                table: t.clone(),
                warning: x.clone(),
            }));
            a.first.truncate(5);
            a.info.extend(w.info.clone());
        }
        all
    }

    /// `641098 warnings (Records: …; first: Warning 1265: Data truncated …)`.
    pub(crate) fn describe(&self) -> String {
        let mut d = format!("{} warnings", self.count);
        let mut parts = Vec::new();
        if !self.info.is_empty() {
            parts.push(self.info.join("; "));
        }
        if !self.first.is_empty() {
            let first: Vec<String> = self
                .first
                .iter()
                .take(SHOWN_WARNINGS)
                .map(|w| w.warning.to_string())
                .collect();
            parts.push(format!("first: {}", first.join(" | ")));
        }
        if !parts.is_empty() {
            d.push_str(&format!(" ({})", parts.join("; ")));
        }
        d
    }

    /// Why the load fails, and how to let it go on.
    pub(crate) fn refusal(&self) -> String {
        format!(
            "the engine raised {}: values were truncated, converted or defaulted, or rows rejected; fix the data or the table, or set allow_warnings = true on this step to record them and go on",
            self.describe()
        )
    }

    /// The count when there were any, and rows rejected (generated but not loaded).
    pub(crate) fn figures(&self, generated: u64, loaded: u64) -> Vec<Metric> {
        let mut m = Vec::new();
        if self.count > 0 {
            m.push(Metric::new(
                "warnings",
                "warnings",
                self.count as f64,
                Unit::Count,
                Better::None,
            ));
        }
        let rejected = self
            .skipped
            .unwrap_or(0)
            .max(generated.saturating_sub(loaded));
        if rejected > 0 {
            m.push(Metric::new(
                "rows_rejected",
                "rows rejected",
                rejected as f64,
                Unit::Count,
                Better::None,
            ));
        }
        m
    }
}

pub(crate) fn cores() -> u64 {
    std::thread::available_parallelism()
        .map(|n| n.get() as u64)
        .unwrap_or(1)
}

/// Run `f(0..n)` on up to `threads` threads; results in index order, the first error wins.
pub(crate) fn in_parallel<T: Send>(
    n: usize,
    threads: usize,
    f: impl Fn(usize) -> crate::engine::Result<T> + Sync,
) -> Result<Vec<T>, StepError> {
    let next = std::sync::atomic::AtomicUsize::new(0);
    let mut slots: Vec<Option<crate::engine::Result<T>>> = (0..n).map(|_| None).collect();
    let done: Vec<Vec<(usize, crate::engine::Result<T>)>> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..threads.max(1).min(n.max(1)))
            .map(|_| {
                s.spawn(|| {
                    let mut mine = Vec::new();
                    loop {
                        let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                        if i >= n {
                            return mine;
                        }
                        let r = f(i);
                        let failed = r.is_err();
                        mine.push((i, r));
                        if failed {
                            // let the others finish their current item; take no more
                            next.store(n, std::sync::atomic::Ordering::Relaxed);
                        }
                    }
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| {
                h.join().unwrap_or_else(|payload| {
                    // A worker that panicked fails the step with its own words, not as
                    // "another failed first".
                    vec![(
                        usize::MAX,
                        Err(crate::engine::EngineError::new(
                            "panic",
                            format!(
                                "a worker panicked ({}); this is a bug in dbduel",
                                crate::runner::panic_message(payload.as_ref())
                            ),
                        )),
                    )]
                })
            })
            .collect()
    });
    // A panic is the first error, whatever else failed.
    if let Some((_, Err(e))) = done.iter().flatten().find(|(i, _)| *i == usize::MAX) {
        return Err(StepError::Engine(e.clone()));
    }
    for (i, r) in done.into_iter().flatten() {
        slots[i] = Some(r);
    }
    let mut out = Vec::with_capacity(n);
    for (i, slot) in slots.into_iter().enumerate() {
        match slot {
            Some(Ok(v)) => out.push(v),
            Some(Err(e)) => return Err(e.into()),
            None => {
                return Err(StepError::Check(format!(
                    "item {i} was not run because another failed first"
                )));
            }
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_worker_that_panics_fails_the_work_with_its_own_words() {
        let e = in_parallel(4, 2, |i| {
            if i == 1 {
                panic!("boom in item {i}");
            }
            Ok(i)
        })
        .map(|_| ())
        .expect_err("a panic fails it");
        let text = e.to_string();
        assert!(
            text.contains("a worker panicked (boom in item 1)") && !text.contains("failed first"),
            "{text}"
        );
        assert_eq!(in_parallel(3, 2, Ok).expect("no panic"), vec![0, 1, 2]);
    }
}
