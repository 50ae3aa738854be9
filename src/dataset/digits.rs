//! ASCII formatting of numbers and dates for the generators' text, without `fmt`: digits
//! two at a time from a table, and, for the short numbers a row is full of, whole 8-byte
//! words built in registers and stored at once.

pub(crate) const DIGIT_PAIRS: [u8; 200] = {
    let mut t = [0u8; 200];
    let mut i = 0;
    while i < 100 {
        t[2 * i] = b'0' + (i / 10) as u8;
        t[2 * i + 1] = b'0' + (i % 10) as u8;
        i += 1;
    }
    t
};

pub(crate) const HEX: &[u8; 16] = b"0123456789abcdef";

/// Decimal digits of `v`, written at the end of `buf`.
pub(crate) fn format_u64(mut v: u64, buf: &mut [u8; 20]) -> &[u8] {
    let mut pos = buf.len();
    while v >= 100 {
        let r = (v % 100) as usize * 2;
        v /= 100;
        pos -= 2;
        buf[pos..pos + 2].copy_from_slice(&DIGIT_PAIRS[r..r + 2]);
    }
    if v >= 10 {
        let r = v as usize * 2;
        pos -= 2;
        buf[pos..pos + 2].copy_from_slice(&DIGIT_PAIRS[r..r + 2]);
    } else {
        pos -= 1;
        buf[pos] = b'0' + v as u8;
    }
    &buf[pos..]
}

/// The decimal digits of `v` (below 10^8) as the low bytes of a little-endian word, first
/// digit first, and how many there are: stored as one word, they need no buffer on the
/// stack. Writing digits into a stack buffer and copying it out at once stalls the CPU
/// (a wide load of bytes just stored one or two at a time cannot be forwarded from the
/// store buffer), and that was a tenth of the `user_logs` generator's time.
#[inline]
pub(crate) fn decimal_word(v: u32) -> (u64, usize) {
    debug_assert!(v < 100_000_000);
    if v < 10_000 {
        // most of a row's numbers: two pairs, and the length by comparisons
        let len = 1 + usize::from(v >= 10) + usize::from(v >= 100) + usize::from(v >= 1000);
        let w = pair(v / 100) | pair(v % 100) << 16;
        return (w >> (8 * (4 - len)), len);
    }
    let len = v.ilog10() as usize + 1;
    (padded_word(v) >> (8 * (8 - len)), len)
}

/// The two decimal digits of `v` (below 100) as a little-endian 16-bit word.
#[inline]
pub(crate) fn pair(v: u32) -> u64 {
    let r = v as usize * 2;
    u64::from(u16::from_le_bytes([DIGIT_PAIRS[r], DIGIT_PAIRS[r + 1]]))
}

/// The last 8 decimal digits of `v`, zero-padded, as a little-endian word (first digit in
/// the low byte): `padded_word(v) >> (8 * (8 - w))` keeps the last `w`.
#[inline]
pub(crate) fn padded_word(v: u32) -> u64 {
    pair(v / 1_000_000 % 100)
        | pair(v / 10_000 % 100) << 16
        | pair(v / 100 % 100) << 32
        | pair(v % 100) << 48
}

/// `YYYY-MM-DD HH:MM:SS` of Unix seconds (UTC).
pub(crate) fn format_datetime(secs: u64) -> [u8; 19] {
    let mut buf = [b' '; 19];
    buf[..10].copy_from_slice(&format_date(secs / 86_400));
    let s = secs % 86_400;
    for (pos, v) in [(11, s / 3600), (14, s / 60 % 60), (17, s % 60)] {
        let r = v as usize * 2;
        buf[pos..pos + 2].copy_from_slice(&DIGIT_PAIRS[r..r + 2]);
    }
    buf[13] = b':';
    buf[16] = b':';
    buf
}

/// `YYYY-MM-DD` of a day number since 1970-01-01 (Hinnant's `civil_from_days`, years
/// 1970..=9999).
pub(crate) fn format_date(days: u64) -> [u8; 10] {
    let z = days + 719_468;
    let era = z / 146_097;
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + u64::from(month <= 2);
    let mut d = [b'-'; 10];
    let (hi, lo) = ((year / 100 % 100) as usize * 2, (year % 100) as usize * 2);
    d[0..2].copy_from_slice(&DIGIT_PAIRS[hi..hi + 2]);
    d[2..4].copy_from_slice(&DIGIT_PAIRS[lo..lo + 2]);
    let m = month as usize * 2;
    d[5..7].copy_from_slice(&DIGIT_PAIRS[m..m + 2]);
    let dd = day as usize * 2;
    d[8..10].copy_from_slice(&DIGIT_PAIRS[dd..dd + 2]);
    d
}

#[cfg(test)]
mod tests {
    use super::*;

    fn word_text(w: u64, len: usize) -> String {
        String::from_utf8(w.to_le_bytes()[..len].to_vec()).unwrap()
    }

    #[test]
    fn words_hold_the_digits_format_u64_writes() {
        let mut buf = [0u8; 20];
        for v in (0..1000).chain([9_999, 10_000, 123_456, 9_999_999, 10_000_000, 99_999_999]) {
            let (w, len) = decimal_word(v);
            assert_eq!(
                word_text(w, len).as_bytes(),
                format_u64(u64::from(v), &mut buf),
                "{v}"
            );
        }
        assert_eq!(word_text(padded_word(7) >> 40, 3), "007");
        assert_eq!(word_text(padded_word(12_345_678), 8), "12345678");
    }
}
