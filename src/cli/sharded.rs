//! What `dbduel k8s` and `dbduel slurm` share before each prints its own objects: the shard
//! count checked, and the study read and checked for sharding as the copies will read it.

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
