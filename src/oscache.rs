//! The OS page cache of an engine's data files: evicting it for cold reads and measuring how
//! much of it is still resident, so a "cold" result is verified rather than assumed.

use std::fs::File;
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};

/// Outcome of an eviction attempt.
#[derive(Debug, Clone)]
pub struct Eviction {
    /// How the cache was dropped (or why it could not be).
    pub method: String,
    /// Bytes of the files still resident afterwards (mincore), when measurable.
    pub resident_bytes: Option<u64>,
    /// Total size of the files.
    pub total_bytes: u64,
}

impl Eviction {
    /// Cold when at most 1% (and at most 1 MiB) of the files stayed in the cache.
    pub fn is_cold(&self) -> bool {
        match self.resident_bytes {
            Some(r) => r <= warm_threshold(self.total_bytes),
            None => false,
        }
    }
}

/// What a restart did to the page cache of `files`: (verified cold, how, resident bytes).
/// With `cold` false the cache is left as it is.
pub fn drop_for_restart(files: &[PathBuf], cold: bool) -> (bool, String, Option<u64>) {
    if !cold {
        return (false, "warm: page cache left as is".to_string(), None);
    }
    let ev = evict(files);
    let ok = ev.is_cold();
    let how = if ok {
        ev.method
    } else {
        format!("warm-restart: page cache not emptied ({})", ev.method)
    };
    (ok, how, ev.resident_bytes)
}

/// Resident bytes above which files count as still cached: 1% of them, at least 1 MiB.
fn warm_threshold(total_bytes: u64) -> u64 {
    (total_bytes / 100).max(1 << 20)
}

/// Every regular file under `dir`, recursively.
pub fn files_under(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&d) else {
            continue;
        };
        for e in entries.flatten() {
            match e.file_type() {
                Ok(t) if t.is_dir() => stack.push(e.path()),
                Ok(t) if t.is_file() => out.push(e.path()),
                _ => {}
            }
        }
    }
    out.sort();
    out
}

/// Flush and evict `files` from the page cache.
///
/// First `fsync` + `posix_fadvise(DONTNEED)` on each file (works for any file we may open,
/// root or not, and touches nothing else on the machine); if pages remain and we are root,
/// fall back to `sync` + `/proc/sys/vm/drop_caches`. Residency is then measured with mincore.
pub fn evict(files: &[PathBuf]) -> Eviction {
    for f in files {
        if let Ok(file) = File::open(f) {
            let _ = file.sync_all();
            // SAFETY: plain syscall on an open fd; offset 0 and len 0 mean the whole file.
            unsafe {
                libc::posix_fadvise(file.as_raw_fd(), 0, 0, libc::POSIX_FADV_DONTNEED);
            }
        }
    }
    let mut method = "fsync + posix_fadvise(DONTNEED) on each data file".to_string();
    let (mut resident, total) = resident_bytes(files);
    let still_warm = |r: Option<u64>| r.is_some_and(|r| r > warm_threshold(total));
    if still_warm(resident) && is_root() {
        // SAFETY: sync() takes no arguments and cannot fail.
        unsafe { libc::sync() };
        if std::fs::write("/proc/sys/vm/drop_caches", "1").is_ok() {
            method.push_str(", then sync + drop_caches");
            resident = resident_bytes(files).0;
        }
    }
    Eviction {
        method,
        resident_bytes: resident,
        total_bytes: total,
    }
}

fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() == 0 }
}

/// Bytes of `files` resident in the page cache, and their total size. Residency is `None` when
/// any file could not be measured.
pub fn resident_bytes(files: &[PathBuf]) -> (Option<u64>, u64) {
    let mut resident = Some(0u64);
    let mut total = 0u64;
    for f in files {
        let Ok(file) = File::open(f) else { continue };
        let Ok(meta) = file.metadata() else { continue };
        let len = meta.len();
        total += len;
        if len == 0 {
            continue;
        }
        match file_resident(&file, len) {
            Some(r) => resident = resident.map(|x| x + r),
            None => resident = None,
        }
    }
    (resident, total)
}

fn file_resident(file: &File, len: u64) -> Option<u64> {
    // SAFETY: sysconf has no preconditions.
    let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    if page <= 0 {
        return None;
    }
    let page = page as u64;
    let len_usize = usize::try_from(len).ok()?;
    // SAFETY: read-only shared mapping of an open file for its length; unmapped below and
    // never dereferenced (mincore only inspects the page tables).
    let addr = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            len_usize,
            libc::PROT_READ,
            libc::MAP_SHARED,
            file.as_raw_fd(),
            0,
        )
    };
    if addr == libc::MAP_FAILED {
        return None;
    }
    let pages = len.div_ceil(page) as usize;
    let mut vec = vec![0u8; pages];
    // SAFETY: addr/len describe the mapping made above; vec has one byte per page.
    let rc = unsafe { libc::mincore(addr, len_usize, vec.as_mut_ptr()) };
    // SAFETY: unmapping exactly what was mapped.
    unsafe { libc::munmap(addr, len_usize) };
    if rc != 0 {
        return None;
    }
    let resident_pages = vec.iter().filter(|b| **b & 1 == 1).count() as u64;
    Some((resident_pages * page).min(len))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    #[test]
    fn eviction_empties_the_cache_of_a_written_file() {
        let dir = tempfile::tempdir().expect("tempdir");
        let p = dir.path().join("f");
        let mut f = File::create(&p).expect("create");
        f.write_all(&vec![7u8; 8 << 20]).expect("write");
        f.sync_all().expect("sync");
        let files = vec![p];
        let (before, total) = resident_bytes(&files);
        assert_eq!(total, 8 << 20);
        assert!(
            before.expect("measurable") > 0,
            "freshly written file should be cached"
        );
        let ev = evict(&files);
        assert!(
            ev.is_cold(),
            "still resident: {:?} via {}",
            ev.resident_bytes,
            ev.method
        );
        assert_eq!(files_under(dir.path()).len(), 1);
    }
}
