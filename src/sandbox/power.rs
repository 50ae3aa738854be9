//! A sandbox's power loss: its data directory served through [`lazyfs`](super::lazyfs) while
//! a power loss is to come, then the server killed with what that filesystem held unsynced.
//! Stopping the server ([`Sandbox::stop`]) puts the directory back on its own filesystem.

use super::lazyfs::{LazyMount, Lost};
use super::{Result, Sandbox, SandboxError, io_err};

impl Sandbox {
    /// Stop the server cleanly, mount the power-loss filesystem over its data directory
    /// (names durable only at their directory's sync when `strict_names`, else at any sync)
    /// and start it again on it.
    pub fn power_on(&mut self, strict_names: bool) -> Result<()> {
        self.stop()?;
        let at = self.layout.datadir.clone();
        let m = LazyMount::over(&at, strict_names)
            .map_err(|e| io_err("cannot mount the power-loss filesystem over", &at, e))?;
        self.power = Some(m);
        self.start()
    }

    /// The power goes: the server is killed, what its files held unsynced is forgotten, and
    /// the directory is served afresh (as a machine coming back finds its disk), the server
    /// not started yet.
    pub fn lose_power(&mut self) -> Result<Lost> {
        if self.power.is_none() {
            return Err(SandboxError::Failed {
                what: format!("cutting the power of {}", self.recipe.flavor()),
                detail: "its data directory is not on the power-loss filesystem".into(),
            });
        }
        self.crash()?;
        let m = self.power.take().expect("checked above");
        let (at, strict) = (m.path().to_path_buf(), m.strict_names());
        let lost = m
            .lose_power()
            .map_err(|e| io_err("cannot cut the power of the filesystem over", &at, e))?;
        let again = LazyMount::over(&at, strict)
            .map_err(|e| io_err("cannot mount the power-loss filesystem over", &at, e))?;
        self.power = Some(again);
        Ok(lost)
    }
}

/// The environment variable naming the device a power loss's filesystem is mounted through,
/// in place of /dev/fuse, for the test of a machine without it (tests/e2e_durability.rs).
/// Read only by debug builds — the ones tests run.
pub const FUSE_DEVICE_ENV: &str = "DBDUEL_TEST_FUSE_DEVICE";

/// Why a power loss cannot be had here, if it cannot: the FUSE device must open, and only
/// root may mount a filesystem over a server's data directory.
pub fn unavailable() -> Option<String> {
    let device = match std::env::var_os(FUSE_DEVICE_ENV) {
        Some(d) if cfg!(debug_assertions) => std::path::PathBuf::from(d),
        _ => std::path::PathBuf::from("/dev/fuse"),
    };
    if let Err(e) = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(&device)
    {
        return Some(format!("{} cannot be opened: {e}", device.display()));
    }
    // SAFETY: geteuid has no preconditions and cannot fail.
    if unsafe { libc::geteuid() } != 0 {
        return Some(
            "dbduel is not running as root, and only root mounts over a server's data directory"
                .into(),
        );
    }
    None
}
