//! Does a study fit this machine? Memory for each contender's caches and connections, and
//! disk for the dataset file and a table, checked before anything runs.

use super::Study;
use super::decode::{DecodeError, KeyPath};
use std::path::Path;

/// What this machine offers a run.
#[derive(Debug, Clone, Copy)]
pub struct Machine {
    pub mem_bytes: u64,
    /// Free space on the filesystem that will hold the results, when known.
    pub disk_free_bytes: Option<u64>,
    /// Files dbduel's process may keep open (its limit, raised as far as allowed).
    pub open_files: u64,
}

impl Machine {
    /// This machine, for results written under `out` (which need not exist yet).
    pub fn here(out: &Path) -> Machine {
        Machine {
            mem_bytes: crate::sysmon::host_facts().mem_total_bytes,
            disk_free_bytes: free_bytes(out),
            open_files: crate::fdlimit::raise_to(crate::fdlimit::needed(
                crate::workload::queries::MAX_CLIENTS * 2,
            )),
        }
    }
}

/// Free bytes (for an unprivileged user) on the filesystem of `path` or its nearest
/// existing ancestor.
fn free_bytes(path: &Path) -> Option<u64> {
    let abs = std::path::absolute(path).ok()?;
    let existing = abs.ancestors().find(|p| p.exists())?;
    let c = std::ffi::CString::new(existing.as_os_str().as_encoded_bytes()).ok()?;
    // SAFETY: statvfs fills the struct we own from a valid NUL-terminated path.
    let mut st: libc::statvfs = unsafe { std::mem::zeroed() };
    if unsafe { libc::statvfs(c.as_ptr(), &mut st) } != 0 {
        return None;
    }
    Some(st.f_bavail as u64 * st.f_frsize as u64)
}

/// Bytes of one generated row in the dataset file, on average (user_logs: ~800 bytes of
/// text plus ids), and how much a table can take beyond it on disk (uncompressed engines
/// with their page overhead; measured InnoDB took ~1.25× the file).
const FILE_BYTES_PER_ROW: u64 = 820;
const TABLE_FACTOR: f64 = 1.5;

fn gib(b: u64) -> String {
    format!("{:.1} GiB", b as f64 / (1u64 << 30) as f64)
}

/// Check the study against the machine. Errors carry the key path that decides the need.
pub fn check(study: &Study, m: &Machine) -> Result<(), DecodeError> {
    let clients = study.max_clients();
    let widest = study
        .steps
        .iter()
        .enumerate()
        .max_by_key(|(_, s)| s.params.clients());
    for (i, c) in study.contenders.iter().enumerate() {
        let files = crate::fdlimit::needed(clients.saturating_mul(c.engine.files_per_client()));
        if let (true, Some((s, step))) = (files > m.open_files, widest) {
            return Err(DecodeError::at(
                KeyPath::root().key("step").index(s),
                format!(
                    "step `{}` opens {clients} clients on contender `{}`, which need about {files} open files; this process may open {} (`ulimit -n`): raise the limit or use fewer clients",
                    step.name, c.name, m.open_files
                ),
            ));
        }
        let (need, key) = c.engine.memory_estimate(clients);
        if need > m.mem_bytes {
            let path = KeyPath::root().key("contender").index(i).join(&key);
            return Err(DecodeError::at(
                path,
                format!(
                    "contender `{}` needs about {} of memory with {clients} clients; this machine has {}",
                    c.name,
                    gib(need),
                    gib(m.mem_bytes)
                ),
            ));
        }
    }
    if let Some(free) = m.disk_free_bytes {
        let rows = study
            .file
            .dataset
            .rows
            .saturating_mul(study.file.dataset.tables);
        let file = rows.saturating_mul(FILE_BYTES_PER_ROW);
        let need = file.saturating_add((file as f64 * TABLE_FACTOR) as u64);
        if need > free {
            return Err(DecodeError::at(
                KeyPath::root().key("dataset").key("rows"),
                format!(
                    "{rows} rows need about {} of disk (the dataset file and one contender's table at a time); the results directory's filesystem has {} free",
                    gib(need),
                    gib(free)
                ),
            ));
        }
    }
    Ok(())
}
