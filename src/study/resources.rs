//! Does a study fit this machine? Memory for each contender's caches and connections, and
//! disk for the dataset file and a table, checked before anything runs.

use super::Study;
use crate::decode::{DecodeError, KeyPath};
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
                crate::workload::sweep::MAX_CLIENTS * 2,
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
    if let (Some(free), Some(g)) = (m.disk_free_bytes, study.generator) {
        use crate::dataset::Sizing;
        let ds = &study.file.dataset;
        let (units, what, key) = match g.descriptor().sizing {
            Sizing::Warehouses => {
                let w = ds.warehouses.unwrap_or(0);
                (w, format!("{w} warehouses"), "warehouses")
            }
            Sizing::ScaleFactor => (
                ds.scale(),
                format!("scale factor {}", ds.sf.unwrap_or_default()),
                "sf",
            ),
            Sizing::Rows { .. } => {
                let rows = ds.rows.saturating_mul(ds.tables);
                (rows, format!("{rows} rows"), "rows")
            }
        };
        let (per_unit, table_factor) = g.disk_per_unit();
        let file = units.saturating_mul(per_unit);
        let need = file.saturating_add((file as f64 * table_factor) as u64);
        if need > free {
            return Err(DecodeError::at(
                KeyPath::root().key("dataset").key(key),
                format!(
                    "{what} need about {} of disk (the dataset files and one contender's tables at a time); the results directory's filesystem has {} free: use a smaller scale or put the results (--out) on a larger filesystem",
                    gib(need),
                    gib(free)
                ),
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::study::{Request, load};

    const GIB: u64 = 1 << 30;

    fn fits(study: &str, scale: &str, disk_gib: u64) -> Result<(), String> {
        let req = Request {
            study: study.into(),
            scale: Some(scale.into()),
            all_contenders: true,
            ..Request::default()
        };
        let s = load(&req).map_err(|e| e.to_string())?;
        let m = Machine {
            mem_bytes: 1 << 40,
            disk_free_bytes: Some(disk_gib * GIB),
            open_files: 1 << 20,
        };
        check(&s, &m).map_err(|e| format!("{}: {}", e.path, e.message))
    }

    #[test]
    fn disk_need_follows_the_generator() {
        // 10 M codes are ~0.5 GiB of file: they fit a small disk that 10 M log rows would not
        assert_eq!(fits("point-lookups", "quick", 3), Ok(()));
        let e = fits("point-lookups", "full", 3).unwrap_err();
        assert!(
            e.starts_with("dataset.rows: 1000000000 rows need about"),
            "{e}"
        );
        // a TPC-C dataset is sized by its warehouses, and says so
        let e = fits("tpcc", "full", 3).unwrap_err();
        assert!(e.starts_with("dataset.warehouses: "), "{e}");
        assert!(e.contains("warehouses need about"), "{e}");
    }

    #[test]
    fn every_quick_scale_fits_a_modest_disk() {
        for name in crate::study::builtin::names() {
            if let Err(e) = fits(name, "quick", 8) {
                assert!(e.contains("has no scale `quick`"), "{name}: {e}");
            }
        }
    }
}
