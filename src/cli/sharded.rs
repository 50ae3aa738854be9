//! What `dbduel k8s` and `dbduel slurm` share before each prints its own objects: the shard
//! count checked, the study read and checked for sharding as the copies will read it, and the
//! `dbduel run` flags every copy adds.

use super::failure::Failure;
use crate::study::{self, Source, Study};

/// The study a scheduler's copies will run: its text (what they get) and that text checked,
/// with its passwords left to the machines that run the copies.
pub(super) fn load(
    printer: &str,
    study: &str,
    shards: u32,
    scale: Option<String>,
    sets: Vec<String>,
    contenders: Vec<String>,
) -> Result<(Source, Study), Failure> {
    if crate::shard::Shard::new(0, shards).is_none() {
        return Err(Failure::bad_input(format!(
            "--shards {shards}: use 1 to {}",
            crate::shard::MAX_SHARDS
        )));
    }
    let req = study::Request {
        study: study.to_string(),
        scale,
        sets,
        contenders,
        // the copies have the passwords, not necessarily this machine
        passwords_elsewhere: true,
        ..study::Request::default()
    };
    // the text the copies get is the text checked here
    let source = study::source(study).map_err(|e| Failure::bad_input(e.to_string()))?;
    let loaded = study::parse(&source, &req).map_err(|e| Failure::bad_input(e.to_string()))?;
    loaded
        .check_sharding()
        .map_err(|e| Failure::bad_input(format!("{printer}: {e}")))?;
    Ok((source, loaded))
}

/// The `dbduel run` flags each copy adds: `--scale`, `--set`s and `--contender`s as given.
pub(super) fn run_args(
    scale: Option<&String>,
    sets: &[String],
    contenders: &[String],
) -> Vec<String> {
    let mut run_args = Vec::new();
    for (flag, v) in scale
        .map(|s| ("--scale", s))
        .into_iter()
        .chain(sets.iter().map(|s| ("--set", s)))
        .chain(contenders.iter().map(|s| ("--contender", s)))
    {
        run_args.extend([flag.to_string(), v.clone()]);
    }
    run_args
}

/// `--metrics-port`'s number, checked: a copy listens on it (a Slurm task on it plus its
/// index), so 0 (any free port) would leave Prometheus nothing to find.
pub(super) fn metrics_port(port: Option<u16>, shards: u32) -> Result<Option<u16>, Failure> {
    match port {
        Some(p) if p == 0 || u32::from(p) + shards > 65_536 => Err(Failure::bad_input(format!(
            "--metrics-port {p}: give a port from 1 to {} (the copies listen on it{})",
            65_536 - shards,
            if shards > 1 {
                " and the ports after it"
            } else {
                ""
            }
        ))),
        p => Ok(p),
    }
}
