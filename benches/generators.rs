//! `cargo bench --bench generators` (part of `make bench`): rows a second each dataset
//! generator makes on one core, written to a sink — the time a user waits before every load.
//! Target: at least 2 M rows/s for every generator.

use dbduel::dataset::UserLogs;
use dbduel::dataset::codes::Codes;
use dbduel::dataset::sbtest::Sbtest;
use dbduel::dataset::tiers40::Tiers40;
use dbduel::dataset::tpcc::{TABLES, Tpcc};
use dbduel::dataset::tpch::{self, Tpch};
use std::time::Instant;

/// Rows per timed run, and runs per generator (the best is reported, as the least
/// disturbed by anything else on the machine); `GEN_ROWS` and `GEN_RUNS` change them, and
/// `GEN_ONLY` (names, comma-separated) runs only those generators, e.g. under a profiler.
fn setting(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn best_rate(runs: u64, rows: u64, one_run: impl Fn() -> std::io::Result<u64>) -> (f64, f64) {
    let mut best = 0.0f64;
    let mut bytes = 0;
    for _ in 0..runs {
        let t = Instant::now();
        bytes = one_run().expect("generate");
        best = best.max(rows as f64 / t.elapsed().as_secs_f64());
    }
    (best, bytes as f64 / rows as f64)
}

fn main() {
    const TARGET: f64 = 2_000_000.0;
    let (rows, runs) = (setting("GEN_ROWS", 2_000_000), setting("GEN_RUNS", 3));
    let only = std::env::var("GEN_ONLY").unwrap_or_default();
    let wanted = |name: &str| only.is_empty() || only.split(',').any(|n| n.trim() == name);
    // every table of as many warehouses as make about `rows` rows (550,000 each)
    let tpcc = Tpcc {
        seed: 42,
        warehouses: (rows / 550_000).max(1),
    };
    let tpcc_rows: u64 = TABLES.iter().map(|t| tpcc.rows(*t)).sum();
    // every table of the scale factor (in hundredths) that makes about `rows` rows (86,600
    // a hundredth), on one thread
    let tpch = Tpch {
        seed: 42,
        units: (rows / 86_600).max(1),
    };
    let tpch_rows: u64 = tpch::TABLES.iter().map(|t| tpch.rows(*t)).sum();
    type Generate<'a> = Box<dyn Fn() -> std::io::Result<u64> + 'a>;
    let generators: [(&str, u64, Generate); 6] = [
        (
            "user_logs",
            rows,
            Box::new(|| UserLogs::new(42, rows).write_tsv(0, rows, std::io::sink())),
        ),
        (
            "sbtest",
            rows,
            Box::new(|| {
                Sbtest {
                    seed: 42,
                    rows,
                    tables: 1,
                }
                .write_tsv(1, std::io::sink())
            }),
        ),
        (
            "codes",
            rows,
            Box::new(|| Codes { seed: 42, rows }.write_tsv(std::io::sink())),
        ),
        (
            "tiers40",
            rows,
            Box::new(|| {
                Tiers40 {
                    seed: 42,
                    rows,
                    tables: 40,
                }
                .write_tsv(0, std::io::sink())
            }),
        ),
        (
            "tpcc",
            tpcc_rows,
            Box::new(|| {
                TABLES
                    .iter()
                    .map(|t| tpcc.write_tsv(*t, &mut std::io::sink()))
                    .sum()
            }),
        ),
        (
            "tpch",
            tpch_rows,
            Box::new(|| {
                tpch::TABLES
                    .iter()
                    .map(|t| tpch.write_tsv_threads(*t, &mut std::io::sink(), 1))
                    .sum()
            }),
        ),
    ];
    println!(
        "{:<12} {:>14} {:>12} {:>10}",
        "generator", "rows/s", "bytes/row", "target"
    );
    let (mut met, mut ran) = (0, 0);
    for (name, n, generate) in generators.iter().filter(|(name, ..)| wanted(name)) {
        let (rate, bytes_per_row) = best_rate(runs, *n, generate);
        let ok = rate >= TARGET;
        met += usize::from(ok);
        ran += 1;
        println!(
            "{name:<12} {rate:>14.0} {:>12.0} {:>10}",
            bytes_per_row,
            if ok { "met" } else { "missed" }
        );
    }
    println!(
        "one core, {rows} rows a run, best of {runs}; target (>= 2,000,000 rows/s) met by {met} of {ran} generators"
    );
}
