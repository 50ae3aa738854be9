//! The process's stop request: SIGINT (Ctrl-C), SIGTERM and SIGHUP (a terminal or ssh session
//! that went away) all raise one flag that every long phase looks at — dataset generation,
//! bulk loads, server starts, restart commands and the steps — so the first signal stops the
//! run within moments, with servers stopped and partial results written; a second one exits
//! at once. A signal is process-wide, so its flag is too. Also the guard every helper
//! thread's flag is raised by, so no thread waits forever on code that panicked.

use std::io::Read;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, LazyLock};

/// The flag the signal handlers raise.
static FLAG: LazyLock<Arc<AtomicBool>> = LazyLock::new(|| Arc::new(AtomicBool::new(false)));

/// The signals that stop a run: the first raises the flag, the second exits with `code`.
const SIGNALS: [i32; 3] = [libc::SIGINT, libc::SIGTERM, libc::SIGHUP];

/// The process's stop flag, for code that takes one by reference.
pub fn flag() -> &'static AtomicBool {
    &FLAG
}

/// Has a stop been asked for (a signal, or [`request`])?
pub fn requested() -> bool {
    FLAG.load(Ordering::Relaxed)
}

/// Ask for a stop, as a signal would.
pub fn request() {
    FLAG.store(true, Ordering::Relaxed);
}

/// Install the handlers: the first SIGINT, SIGTERM or SIGHUP raises the flag; a second one
/// exits the process at once with `second_exit`. Installed once however often it is called
/// (twice, the first signal would meet the second pair's exit with the flag already raised).
pub fn install(second_exit: i32) -> std::io::Result<()> {
    static INSTALLED: std::sync::Mutex<bool> = std::sync::Mutex::new(false);
    let mut installed = INSTALLED.lock().unwrap_or_else(|p| p.into_inner());
    if *installed {
        return Ok(());
    }
    for sig in SIGNALS {
        signal_hook::flag::register_conditional_shutdown(sig, second_exit, Arc::clone(&FLAG))?;
        signal_hook::flag::register(sig, Arc::clone(&FLAG))?;
    }
    *installed = true;
    Ok(())
}

/// The message of an operation ended by a stop request.
pub const INTERRUPTED: &str = "interrupted (Ctrl-C or a termination signal)";

/// A reader that fails once a stop is asked for: a bulk load streaming a dataset file
/// through it ends within one read (its transaction then rolls back), instead of running to
/// the end of the file.
pub struct Reader<R>(pub R);

impl<R: Read> Read for Reader<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        if requested() {
            // Not ErrorKind::Interrupted: readers retry that one.
            return Err(std::io::Error::other(INTERRUPTED));
        }
        self.0.read(buf)
    }
}

/// A writer that fails once `stop` is raised: dataset generation writing through it ends
/// within one write.
pub struct Writer<'a, W> {
    pub inner: W,
    pub stop: &'a AtomicBool,
}

impl<W: std::io::Write> std::io::Write for Writer<'_, W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        if self.stop.load(Ordering::Relaxed) {
            return Err(std::io::Error::other(INTERRUPTED));
        }
        self.inner.write(buf)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.inner.flush()
    }
}

/// Wait for `child` (spawned with its stderr piped, in a process group of its own), killing
/// its group if a stop is asked for meanwhile. Its exit status and what it wrote to stderr.
pub fn wait_child(
    mut child: std::process::Child,
) -> std::io::Result<(std::process::ExitStatus, String)> {
    // Read stderr beside the wait, so a chatty child never blocks on a full pipe.
    let reader = child.stderr.take().map(|mut e| {
        std::thread::spawn(move || {
            let mut text = String::new();
            let _ = e.read_to_string(&mut text);
            text
        })
    });
    let poll = std::time::Duration::from_millis(50);
    let status = loop {
        if let Some(status) = child.try_wait()? {
            break status;
        }
        if requested() {
            // SAFETY: kill(2) with the child's own process group; no memory is involved.
            unsafe { libc::kill(-(child.id() as i32), libc::SIGKILL) };
            let _ = child.kill();
            let _ = child.wait();
            return Err(std::io::Error::other(INTERRUPTED));
        }
        std::thread::sleep(poll);
    };
    let text = reader.and_then(|r| r.join().ok()).unwrap_or_default();
    Ok((status, text))
}

/// Raises its flag when dropped: a thread that waits on the flag stops however the code
/// beside it ends, by a return or a panic.
pub struct RaiseOnDrop<'a>(pub &'a AtomicBool);

impl Drop for RaiseOnDrop<'_> {
    fn drop(&mut self) {
        self.0.store(true, Ordering::Relaxed);
    }
}
