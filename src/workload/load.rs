//! `load`: create the dataset's table and bulk-load the generated file into it, timed; then
//! check (untimed) that the table holds exactly the rows generated.

use super::{StepCtx, StepError, StepOutput, summary};
use crate::engine::LoadRequest;
use crate::results::{Better, Metric, Unit};
use crate::study::decode::{DecodeError, KeyPath};
use serde::Deserialize;
use std::time::Instant;

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LoadParams {
    /// Rows per transaction for engines that load by batched inserts.
    #[serde(default = "default_batch")]
    pub batch_rows: u64,
    /// Tables loaded at once on a server (default: the machine's cores).
    #[serde(default)]
    pub parallel: Option<u64>,
}

fn default_batch() -> u64 {
    50_000
}

impl LoadParams {
    pub fn validate(&self) -> Result<(), DecodeError> {
        if !(1..=10_000_000).contains(&self.batch_rows) {
            return Err(DecodeError::at(
                KeyPath::root().key("batch_rows"),
                format!(
                    "batch_rows = {} is out of range; use 1 to 10000000",
                    self.batch_rows
                ),
            ));
        }
        Ok(())
    }
}

pub fn run(p: &LoadParams, ctx: &StepCtx<'_>) -> Result<StepOutput, StepError> {
    let engine = ctx.engine;
    let dialect = engine.dialect();
    // Tables are (re)created in dbduel's own database only: a sandbox, an embedded file, or
    // a target database that carries dbduel's marker.
    let mut admin = engine.connect()?;
    let mut creates = Vec::new();
    for t in ctx.tables {
        admin.execute(&dialect.drop_table_if_exists(&t.name))?;
        let sql = dialect.create_table(t);
        admin.execute(&sql)?;
        creates.push(sql);
    }
    drop(admin);
    // An embedded engine has one writer at a time; servers load tables side by side.
    let parallel = if engine.embedded() {
        1
    } else {
        p.parallel
            .unwrap_or_else(cores)
            .clamp(1, ctx.tables.len() as u64) as usize
    };
    let total_rows = ctx.dataset_rows * ctx.tables.len() as u64;
    ctx.progress.status(&format!(
        "loading {} rows into {} table(s), {parallel} at a time",
        total_rows,
        ctx.tables.len()
    ));
    let t = Instant::now();
    let outcomes = in_parallel(ctx.tables.len(), parallel, |i| {
        engine.bulk_load(&LoadRequest {
            table: &ctx.tables[i],
            file: &ctx.dataset_files[i],
            batch_rows: p.batch_rows,
        })
    })?;
    let load_s = t.elapsed().as_secs_f64();
    // Secondary indexes after the rows are in: one sorted build instead of a tree
    // maintained row by row.
    let t = Instant::now();
    let indexes: Vec<(usize, &(String, Vec<String>))> = ctx
        .tables
        .iter()
        .enumerate()
        .flat_map(|(i, t)| t.indexes.iter().map(move |ix| (i, ix)))
        .collect();
    in_parallel(indexes.len(), parallel, |n| {
        let (i, (name, cols)) = indexes[n];
        engine
            .connect()?
            .execute(&dialect.create_index(&ctx.tables[i].name, name, cols))
    })?;
    let index_s = t.elapsed().as_secs_f64();
    let elapsed = load_s + index_s;

    let loaded: u64 = outcomes.iter().map(|o| o.rows).sum();
    let mut counted = None;
    if engine.kind() != "dry" {
        let mut c = engine.connect()?;
        let mut n_all = 0u64;
        for (t, o) in ctx.tables.iter().zip(&outcomes) {
            let n = c.query_i64(&dialect.count_rows(&t.name))?;
            if n < 0 || n as u64 != ctx.dataset_rows || o.rows != ctx.dataset_rows {
                return Err(StepError::Check(format!(
                    "table {}: loaded {} rows ({} counted in the table) but {} were generated",
                    t.name, o.rows, n, ctx.dataset_rows
                )));
            }
            n_all += n as u64;
        }
        counted = Some(n_all);
    }
    let rate = if elapsed > 0.0 {
        loaded as f64 / elapsed
    } else {
        0.0
    };
    let method = outcomes
        .first()
        .map(|o| o.method.clone())
        .unwrap_or_default();
    let mut s = summary(ctx.title("bulk load"));
    s.elapsed_s = Some(elapsed);
    s.rows = Some(loaded);
    s.ops_per_s = Some(rate);
    s.note = Some(if indexes.is_empty() {
        method.clone()
    } else {
        format!(
            "{method}; {} secondary index(es) built after the load ({index_s:.2} s, included)",
            indexes.len()
        )
    });
    s.metrics = vec![
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
    ];
    Ok(StepOutput {
        summary: s,
        details: serde_json::json!({
            "create_table": creates,
            "method": method,
            "tables": ctx.tables.len(),
            "parallel": parallel,
            "rows_loaded": loaded,
            "rows_counted": counted,
            "load_s": load_s,
            "index_s": index_s,
            "elapsed_s": elapsed,
        }),
        intervals: Vec::new(),
        interrupted: false,
    })
}

fn cores() -> u64 {
    std::thread::available_parallelism()
        .map(|n| n.get() as u64)
        .unwrap_or(1)
}

/// Run `f(0..n)` on up to `threads` threads; results in index order, the first error wins.
fn in_parallel<T: Send>(
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
            .map(|h| h.join().unwrap_or_default())
            .collect()
    });
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
