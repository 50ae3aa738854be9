//! One dataset file written from chunks generated on several threads: each chunk is a pure
//! function of its number, made into its own buffer by whichever thread takes it, and the
//! buffers are written in chunk order — so the file is the same byte for byte whatever the
//! number of threads.

use std::collections::BTreeMap;
use std::io::{self, Write};
use std::sync::{Condvar, Mutex};

/// Chunks generated ahead of the one being written, per thread: bounds the memory held.
const AHEAD_PER_THREAD: u64 = 2;

struct Shared {
    /// The next chunk number a generating thread takes.
    next: u64,
    /// Chunks written so far (all below this number).
    written: u64,
    /// Chunks made and not yet written, by number.
    done: BTreeMap<u64, Vec<u8>>,
    /// Emptied buffers to reuse.
    free: Vec<Vec<u8>>,
    /// The writer failed: generating threads stop.
    failed: bool,
}

/// Write chunks `0..chunks` to `out` in order, each made by `make(chunk, buf)` into an
/// empty buffer, on `threads` generating threads (1: all on the calling thread). Returns
/// the bytes written. `make` must depend on nothing but the chunk number.
pub fn write_in_order<W: Write + ?Sized>(
    out: &mut W,
    chunks: u64,
    threads: usize,
    make: impl Fn(u64, &mut Vec<u8>) + Sync,
) -> io::Result<u64> {
    if threads <= 1 || chunks <= 1 {
        let mut buf = Vec::new();
        let mut bytes = 0;
        for c in 0..chunks {
            buf.clear();
            make(c, &mut buf);
            out.write_all(&buf)?;
            bytes += buf.len() as u64;
        }
        return Ok(bytes);
    }
    let window = AHEAD_PER_THREAD * threads as u64;
    let state = Mutex::new(Shared {
        next: 0,
        written: 0,
        done: BTreeMap::new(),
        free: Vec::new(),
        failed: false,
    });
    let changed = Condvar::new();
    let lock = || state.lock().unwrap_or_else(|e| e.into_inner());
    std::thread::scope(|s| {
        for _ in 0..threads {
            s.spawn(|| {
                loop {
                    let mut g = lock();
                    while !g.failed && g.next < chunks && g.next >= g.written + window {
                        g = changed.wait(g).unwrap_or_else(|e| e.into_inner());
                    }
                    if g.failed || g.next >= chunks {
                        return;
                    }
                    let c = g.next;
                    g.next += 1;
                    let mut buf = g.free.pop().unwrap_or_default();
                    drop(g);
                    buf.clear();
                    make(c, &mut buf);
                    lock().done.insert(c, buf);
                    changed.notify_all();
                }
            });
        }
        let mut bytes = 0u64;
        for c in 0..chunks {
            let mut g = lock();
            let buf = loop {
                if let Some(b) = g.done.remove(&c) {
                    break b;
                }
                g = changed.wait(g).unwrap_or_else(|e| e.into_inner());
            };
            drop(g);
            let len = buf.len() as u64;
            let wrote = out.write_all(&buf);
            let mut g = lock();
            g.written = c + 1;
            g.free.push(buf);
            if wrote.is_err() {
                g.failed = true;
            }
            drop(g);
            changed.notify_all();
            wrote?;
            bytes += len;
        }
        Ok(bytes)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn make(c: u64, buf: &mut Vec<u8>) {
        // chunks of different sizes, so a reordering would show
        for i in 0..(c % 7 + 1) * 100 {
            buf.extend_from_slice(format!("{c}:{i}\n").as_bytes());
        }
    }

    #[test]
    fn threads_write_the_same_bytes_as_one() {
        let mut one = Vec::new();
        let n1 = write_in_order(&mut one, 50, 1, make).expect("one");
        for threads in [2, 3, 8] {
            let mut many = Vec::new();
            let n = write_in_order(&mut many, 50, threads, make).expect("many");
            assert_eq!(n, n1);
            assert!(many == one, "{threads} threads wrote other bytes");
        }
        assert_eq!(n1, one.len() as u64);
    }

    struct Fails(usize);
    impl Write for Fails {
        fn write(&mut self, b: &[u8]) -> io::Result<usize> {
            if self.0 == 0 {
                return Err(io::Error::other("disk full"));
            }
            self.0 -= 1;
            Ok(b.len())
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn a_failed_write_stops_every_thread_and_is_returned() {
        let e = write_in_order(&mut Fails(3), 1_000, 3, make).expect_err("fails");
        assert_eq!(e.to_string(), "disk full");
    }
}
