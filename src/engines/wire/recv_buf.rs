//! The receive side of the lean wire clients (`wire::mysql`, `wire::pg`): bytes read from a
//! blocking socket in as few `recv` calls as the buffer allows and parsed where they lie.

use std::io::{ErrorKind, Read};

/// The receive buffer a session starts with: 16 KiB, as libpq and libmariadb start theirs
/// (`net_buffer_length`). It grows only to the largest single message, never to a whole
/// result, so a thousand sessions hold about 16 MiB of them.
pub const RECV_BUF_BYTES: usize = 16 * 1024;

/// A growable buffer; `buf[pos..end]` is received and not yet consumed.
pub struct RecvBuf {
    buf: Vec<u8>,
    pos: usize,
    end: usize,
}

impl RecvBuf {
    pub fn with_capacity(n: usize) -> Self {
        RecvBuf {
            buf: vec![0; n],
            pos: 0,
            end: 0,
        }
    }

    /// Make at least `n` unconsumed bytes available, reading from `src` as needed; the
    /// peer closing first is an `UnexpectedEof` error.
    pub fn fill(&mut self, src: &mut impl Read, n: usize) -> std::io::Result<()> {
        if self.end - self.pos >= n {
            return Ok(());
        }
        if self.pos + n > self.buf.len() {
            self.buf.copy_within(self.pos..self.end, 0);
            self.end -= self.pos;
            self.pos = 0;
            if n > self.buf.len() {
                self.buf.resize(n.next_power_of_two(), 0);
            }
        }
        while self.end - self.pos < n {
            match src.read(&mut self.buf[self.end..]) {
                Ok(0) => {
                    return Err(std::io::Error::new(
                        ErrorKind::UnexpectedEof,
                        "the server closed the connection",
                    ));
                }
                Ok(got) => self.end += got,
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        Ok(())
    }

    /// The unconsumed bytes.
    pub fn unread(&self) -> &[u8] {
        &self.buf[self.pos..self.end]
    }

    /// Consume `n` bytes; returns where they were, for [`RecvBuf::at`].
    pub fn consume(&mut self, n: usize) -> (usize, usize) {
        let start = self.pos;
        self.pos += n.min(self.end - self.pos);
        (start, self.pos)
    }

    /// Bytes consumed earlier, valid until the next `fill`.
    pub fn at(&self, (start, end): (usize, usize)) -> &[u8] {
        &self.buf[start..end]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A source that hands out its bytes a few at a time, as a socket may.
    struct Trickle(Vec<u8>, usize);

    impl Read for Trickle {
        fn read(&mut self, out: &mut [u8]) -> std::io::Result<usize> {
            let n = self.1.min(out.len()).min(self.0.len());
            out[..n].copy_from_slice(&self.0[..n]);
            self.0.drain(..n);
            Ok(n)
        }
    }

    #[test]
    fn fills_across_short_reads_compacts_and_grows() {
        let data: Vec<u8> = (0..=255u8).cycle().take(10_000).collect();
        let mut src = Trickle(data.clone(), 7);
        let mut b = RecvBuf::with_capacity(16);
        let mut seen = Vec::new();
        for chunk in [3usize, 16, 1, 4000, 5980] {
            b.fill(&mut src, chunk).unwrap();
            let at = b.consume(chunk);
            seen.extend_from_slice(b.at(at));
        }
        assert_eq!(seen, data);
        let e = b.fill(&mut src, 1).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::UnexpectedEof);
    }
}
