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

    /// One read of whatever a non-blocking `src` holds, into the room left (made by moving
    /// the unconsumed bytes to the front, or by growing a full buffer): `Ok(false)` when it
    /// has nothing now; the peer closing is an `UnexpectedEof` error.
    pub fn fill_available(&mut self, src: &mut impl Read) -> std::io::Result<bool> {
        if self.end == self.buf.len() {
            if self.pos > 0 {
                self.buf.copy_within(self.pos..self.end, 0);
                self.end -= self.pos;
                self.pos = 0;
            } else {
                self.buf.resize(self.buf.len() * 2, 0);
            }
        }
        match src.read(&mut self.buf[self.end..]) {
            Ok(0) => Err(std::io::Error::new(
                ErrorKind::UnexpectedEof,
                "the server closed the connection",
            )),
            Ok(got) => {
                self.end += got;
                Ok(true)
            }
            Err(e) if e.kind() == ErrorKind::WouldBlock => Ok(false),
            Err(e) if e.kind() == ErrorKind::Interrupted => Ok(true),
            Err(e) => Err(e),
        }
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
    fn reads_what_is_there_without_waiting_and_makes_room() {
        let mut rb = RecvBuf::with_capacity(4);
        let mut src = Trickle((0u8..10).collect(), 3);
        assert!(rb.fill_available(&mut src).unwrap());
        assert_eq!(rb.unread(), &[0, 1, 2]);
        assert!(rb.fill_available(&mut src).unwrap());
        assert_eq!(rb.unread(), &[0, 1, 2, 3]);
        rb.consume(2);
        // full: the unconsumed bytes move to the front
        assert!(rb.fill_available(&mut src).unwrap());
        assert_eq!(rb.unread(), &[2, 3, 4, 5]);
        // full from the front: it grows
        assert!(rb.fill_available(&mut src).unwrap());
        assert_eq!(rb.unread(), &[2, 3, 4, 5, 6, 7, 8]);
        assert!(rb.fill_available(&mut src).unwrap());
        assert_eq!(rb.unread().len(), 8);
        let mut empty = std::io::Cursor::new(Vec::<u8>::new());
        let eof = rb.fill_available(&mut empty).unwrap_err();
        assert_eq!(eof.kind(), ErrorKind::UnexpectedEof);
        assert!(!rb.fill_available(&mut WouldBlock).unwrap());
    }

    /// A non-blocking source with nothing to read.
    struct WouldBlock;

    impl Read for WouldBlock {
        fn read(&mut self, _: &mut [u8]) -> std::io::Result<usize> {
            Err(ErrorKind::WouldBlock.into())
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
