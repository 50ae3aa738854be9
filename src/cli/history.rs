//! `dbduel history`: the runs recorded in a results root's catalogue, filtered; one figure's
//! trend across them with the noise band `compare` uses (`--figure STEP.KEY`); `history
//! import DIR` (runs made elsewhere) and `history rebuild` (the catalogue again from the run
//! directories).

use super::failure::Failure;
use super::output::outln;
use crate::history::{self, Catalogue, Filter, trend};
use crate::report::compare::parse_threshold;
use crate::results::{Unit, format};
use std::path::PathBuf;

/// `dbduel history`'s arguments.
#[derive(clap::Args, Debug)]
pub struct HistoryArgs {
    #[command(subcommand)]
    action: Option<HistoryAction>,
    /// Results root whose catalogue to read.
    #[arg(long, default_value = "dbduel-results", global = true)]
    out: PathBuf,
    /// Only runs of this study.
    #[arg(long)]
    study: Option<String>,
    /// Only runs with this contender (and with --figure, only its values).
    #[arg(long)]
    contender: Option<String>,
    /// Only runs with a contender on this engine (sqlite, mariadb, postgres, ...).
    #[arg(long)]
    engine: Option<String>,
    /// Only runs with a contender whose engine version contains this (`10.11`).
    #[arg(long = "engine-version", value_name = "TEXT")]
    version: Option<String>,
    /// Only runs made on this host.
    #[arg(long)]
    host: Option<String>,
    /// Only runs started on or after this date (2026-11-25, or a longer RFC 3339 prefix).
    #[arg(long, value_name = "DATE")]
    since: Option<String>,
    /// Only runs started on or before this date (the whole day when a date).
    #[arg(long, value_name = "DATE")]
    until: Option<String>,
    /// Follow one figure across the runs: STEP.KEY (`point-select.tps`, keys as in
    /// `report --format csv`), each change judged as `compare` judges it.
    #[arg(long, value_name = "STEP.KEY")]
    figure: Option<String>,
    /// With --figure: a change counts beyond this and beyond its noise.
    #[arg(long, default_value = "5%")]
    threshold: String,
}

/// `history import` and `history rebuild`.
#[derive(clap::Subcommand, Debug)]
pub enum HistoryAction {
    /// Copy run directories made elsewhere (shards, other machines) into the results root
    /// and record them: DIR is a run directory or a directory of them.
    Import { dir: PathBuf },
    /// Make the catalogue again from the run directories under the results root.
    Rebuild,
}

/// Run `dbduel history`.
pub(super) fn exec(args: HistoryArgs) -> Result<(), Failure> {
    let fail = |e: history::HistoryError| Failure::bad_input(e.to_string());
    match &args.action {
        Some(HistoryAction::Import { dir }) => {
            let runs = history::import(&args.out, dir).map_err(fail)?;
            for r in &runs {
                outln!("imported {}", r.display());
            }
            return Ok(());
        }
        Some(HistoryAction::Rebuild) => {
            let n = Catalogue::rebuild(&args.out).map_err(fail)?;
            outln!(
                "{}: {n} runs recorded",
                args.out.join(history::FILE).display()
            );
            return Ok(());
        }
        None => {}
    }
    if !args.out.join(history::FILE).is_file() {
        // Runs made before the catalogue existed are recorded now.
        Catalogue::rebuild(&args.out).map_err(fail)?;
    }
    let cat = Catalogue::open(&args.out).map_err(fail)?;
    let filter = Filter {
        study: args.study.clone(),
        contender: args.contender.clone(),
        engine: args.engine.clone(),
        version: args.version.clone(),
        host: args.host.clone(),
        since: args.since.clone(),
        until: args.until.clone(),
    };
    match &args.figure {
        Some(f) => figure_trend(&cat, &filter, f, &args.threshold),
        None => list(&cat, &filter),
    }
}

fn list(cat: &Catalogue, filter: &Filter) -> Result<(), Failure> {
    let runs = cat
        .runs(filter)
        .map_err(|e| Failure::bad_input(e.to_string()))?;
    if runs.is_empty() {
        outln!("no recorded run matches");
    }
    for r in runs {
        outln!(
            "{}  {:<11} {:<12} {:<8} {:<14} {}  {}",
            r.started_at,
            r.status,
            r.study,
            r.scale.as_deref().unwrap_or("-"),
            r.host,
            r.run,
            r.contenders.join(", ")
        );
    }
    Ok(())
}

fn figure_trend(cat: &Catalogue, filter: &Filter, f: &str, threshold: &str) -> Result<(), Failure> {
    let threshold = parse_threshold(threshold).map_err(Failure::bad_input)?;
    let Some((step, key)) = f.rsplit_once('.') else {
        return Err(Failure::bad_input(format!(
            "--figure {f}: expected STEP.KEY, like point-select.tps"
        )));
    };
    let points = cat
        .trend(filter, step, key)
        .map_err(|e| Failure::bad_input(e.to_string()))?;
    if points.is_empty() {
        return Err(Failure::bad_input(format!(
            "--figure {f}: no recorded run has figure `{key}` of step `{step}` (see `dbduel report RUN --format csv` for the keys)"
        )));
    }
    outln!(
        "{f}: a change counts beyond ±{:.1}% and beyond its noise (2 standard errors of the per-second values, or the intervals of repeated rounds apart)",
        threshold * 100.0
    );
    let mut contender = String::new();
    for s in trend::judge(points, threshold) {
        let p = &s.point;
        if p.contender != contender {
            outln!("{} ({} is better)", p.contender, p.better);
            contender.clone_from(&p.contender);
        }
        let unit = unit_of(&p.unit);
        let band = s
            .own_band
            .map(|b| format!("±{:.1}%", b * 100.0))
            .unwrap_or_else(|| "-".into());
        let change = match (s.change, s.band, s.verdict) {
            (Some(c), b, Some(k)) => {
                let noise = b.map(|b| format!(" (noise ±{:.1}%)", b * 100.0));
                let why = if s.why.is_empty() {
                    String::new()
                } else {
                    format!(": {}", s.why)
                };
                format!(
                    "{:+.1}%{}  {}{why}",
                    c * 100.0,
                    noise.unwrap_or_default(),
                    k.words()
                )
            }
            _ => String::new(),
        };
        outln!(
            "  {}  {:<32} {:<10} {:>12} {:>7}  {}",
            p.started_at,
            p.run,
            p.version,
            unit.map_or_else(|| p.value.to_string(), |u| format::value(p.value, u)),
            band,
            change
        );
    }
    Ok(())
}

/// The unit a catalogue row names.
fn unit_of(name: &str) -> Option<Unit> {
    serde_json::from_value(serde_json::Value::String(name.into())).ok()
}
