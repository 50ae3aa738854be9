//! One file's writes not yet synced: the pages written since its last `fsync`, its size as
//! the writer sees it, and from where the synced file's bytes no longer count (a truncation
//! not yet synced). Reads see these over the synced file; a sync writes them to it; a power
//! loss forgets them.

use std::collections::HashMap;
use std::fs::File;
use std::io;
use std::os::unix::fs::FileExt;

/// The unit a write dirties, as a page cache's.
pub const PAGE: usize = 4096;

/// What a file holds beyond its synced bytes.
#[derive(Debug)]
pub struct Unsynced {
    pages: HashMap<u64, Box<[u8]>>,
    /// The file's size as its writers see it.
    pub size: u64,
    /// The synced file's bytes from here on read as zeros (a truncation below them since).
    zero_from: u64,
}

impl Unsynced {
    /// Nothing unsynced yet over a synced file of `size` bytes.
    pub fn over(size: u64) -> Unsynced {
        Unsynced {
            pages: HashMap::new(),
            size,
            zero_from: size,
        }
    }

    /// Bytes held in memory.
    pub fn held(&self) -> usize {
        self.pages.len() * PAGE
    }

    /// Page `p` as the synced file has it, zeros past its end or past `zero_from`.
    fn synced_page(&self, file: &File, p: u64) -> io::Result<Box<[u8]>> {
        let mut page = vec![0u8; PAGE].into_boxed_slice();
        let start = p * PAGE as u64;
        if start < self.zero_from {
            let n = (self.zero_from - start).min(PAGE as u64) as usize;
            let mut got = 0;
            while got < n {
                match file.read_at(&mut page[got..n], start + got as u64)? {
                    0 => break,
                    k => got += k,
                }
            }
        }
        Ok(page)
    }

    /// `len` bytes from `offset`, short at the file's end.
    pub fn read(&self, file: &File, offset: u64, len: usize) -> io::Result<Vec<u8>> {
        let end = (offset + len as u64).min(self.size);
        let mut out = Vec::with_capacity(end.saturating_sub(offset) as usize);
        let mut at = offset;
        while at < end {
            let p = at / PAGE as u64;
            let within = (at % PAGE as u64) as usize;
            let take = ((end - at) as usize).min(PAGE - within);
            match self.pages.get(&p) {
                Some(page) => out.extend_from_slice(&page[within..within + take]),
                None => out.extend_from_slice(&self.synced_page(file, p)?[within..within + take]),
            }
            at += take as u64;
        }
        Ok(out)
    }

    /// Write `data` at `offset`, in memory only.
    pub fn write(&mut self, file: &File, offset: u64, data: &[u8]) -> io::Result<()> {
        let mut done = 0;
        while done < data.len() {
            let at = offset + done as u64;
            let p = at / PAGE as u64;
            let within = (at % PAGE as u64) as usize;
            let take = (data.len() - done).min(PAGE - within);
            if !self.pages.contains_key(&p) {
                let page = self.synced_page(file, p)?;
                self.pages.insert(p, page);
            }
            let page = self.pages.get_mut(&p).expect("inserted above");
            page[within..within + take].copy_from_slice(&data[done..done + take]);
            done += take;
        }
        self.size = self.size.max(offset + data.len() as u64);
        Ok(())
    }

    /// Set the size: bytes past it are gone, and read as zeros if it grows again.
    pub fn truncate(&mut self, size: u64) {
        if size < self.size {
            let cut = size / PAGE as u64;
            self.pages.retain(|&p, _| p <= cut);
            if let Some(page) = self.pages.get_mut(&cut) {
                page[(size % PAGE as u64) as usize..].fill(0);
            }
            self.zero_from = self.zero_from.min(size);
        }
        self.size = size;
    }

    /// Write what is held to the synced file and sync it: afterwards nothing is unsynced.
    pub fn sync(&mut self, file: &File) -> io::Result<()> {
        let mut pages: Vec<_> = self.pages.drain().collect();
        pages.sort_unstable_by_key(|(p, _)| *p);
        file.set_len(self.zero_from.min(self.size))?;
        for (p, page) in pages {
            let start = p * PAGE as u64;
            if start >= self.size {
                continue;
            }
            let n = ((self.size - start) as usize).min(PAGE);
            file.write_all_at(&page[..n], start)?;
        }
        file.set_len(self.size)?;
        file.sync_data()?;
        self.zero_from = self.size;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file_with(bytes: &[u8]) -> (tempfile::TempDir, File) {
        let d = tempfile::tempdir().unwrap();
        let path = d.path().join("f");
        std::fs::write(&path, bytes).unwrap();
        let f = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .open(&path)
            .unwrap();
        (d, f)
    }

    #[test]
    fn writes_are_read_back_over_the_synced_bytes_and_reach_them_only_at_sync() {
        let (_d, f) = file_with(&[b'a'; 10_000]);
        let mut u = Unsynced::over(10_000);
        u.write(&f, 4090, b"0123456789").unwrap();
        u.write(&f, 12_000, b"end").unwrap();
        assert_eq!(u.size, 12_003);
        assert_eq!(u.read(&f, 4088, 14).unwrap(), b"aa0123456789aa");
        assert_eq!(u.read(&f, 10_000, 4000).unwrap()[..2000], [0u8; 2000]);
        assert_eq!(u.read(&f, 12_000, 100).unwrap(), b"end");
        // The synced file is as it was.
        let mut buf = vec![0; 10];
        f.read_exact_at(&mut buf, 4090).unwrap();
        assert_eq!(buf, [b'a'; 10]);
        assert_eq!(f.metadata().unwrap().len(), 10_000);
        u.sync(&f).unwrap();
        assert_eq!(f.metadata().unwrap().len(), 12_003);
        f.read_exact_at(&mut buf, 4090).unwrap();
        assert_eq!(&buf, b"0123456789");
        assert_eq!(u.held(), 0);
    }

    #[test]
    fn a_truncation_hides_the_synced_tail_until_it_is_synced_and_growth_reads_zeros() {
        let (_d, f) = file_with(&[b'x'; 9000]);
        let mut u = Unsynced::over(9000);
        u.truncate(100);
        assert_eq!(u.read(&f, 0, 9000).unwrap().len(), 100);
        u.write(&f, 8000, b"y").unwrap();
        let back = u.read(&f, 0, 9000).unwrap();
        assert_eq!(back.len(), 8001);
        assert!(back[..100].iter().all(|&b| b == b'x'));
        assert!(
            back[100..8000].iter().all(|&b| b == 0),
            "old bytes past the cut are gone"
        );
        assert_eq!(
            f.metadata().unwrap().len(),
            9000,
            "unsynced: the file keeps its bytes"
        );
        u.sync(&f).unwrap();
        let mut all = Vec::new();
        std::io::Read::read_to_end(&mut &f, &mut all).unwrap();
        assert_eq!(all, back);
    }
}
