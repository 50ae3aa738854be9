//! TPC-H's text (specification clause 4.2.2.10): the weighted word lists and the sentence
//! grammar its comments are made of, a seeded text pool built from them once, and the
//! random-length substrings of it that fill the refresh sets' `*_comment` columns (the
//! loaded rows' comments are dbgen's own, from `tpchgen`'s pool).
//!
//! The pool is a fixed function of nothing (its own constant seed), as dbgen's is, so a
//! dataset's seed only chooses where each comment starts and how long it is.

use super::rng::SplitMix64;
use std::sync::LazyLock;

/// A weighted list: each entry is drawn with probability weight / total.
type Weighted = &'static [(&'static str, u32)];

pub const NOUNS: Weighted = &[
    ("packages", 40),
    ("requests", 40),
    ("accounts", 40),
    ("deposits", 40),
    ("foxes", 20),
    ("ideas", 20),
    ("theodolites", 20),
    ("pinto beans", 20),
    ("instructions", 20),
    ("dependencies", 10),
    ("excuses", 10),
    ("platelets", 10),
    ("asymptotes", 10),
    ("courts", 5),
    ("dolphins", 5),
    ("multipliers", 1),
    ("sauternes", 1),
    ("warthogs", 1),
    ("frets", 1),
    ("dinos", 1),
    ("attainments", 1),
    ("somas", 1),
    ("Tiresias", 1),
    ("patterns", 1),
    ("forges", 1),
    ("braids", 1),
    ("frays", 1),
    ("warhorses", 1),
    ("dugouts", 1),
    ("notornis", 1),
    ("epitaphs", 1),
    ("pearls", 1),
    ("tithes", 1),
    ("waters", 1),
    ("orbits", 1),
    ("gifts", 1),
    ("sheaves", 1),
    ("depths", 1),
    ("sentiments", 1),
    ("decoys", 1),
    ("realms", 1),
    ("pains", 1),
    ("grouches", 1),
    ("escapades", 1),
    ("hockey players", 1),
];

pub const VERBS: Weighted = &[
    ("sleep", 20),
    ("wake", 20),
    ("are", 20),
    ("cajole", 20),
    ("haggle", 20),
    ("nag", 10),
    ("use", 10),
    ("boost", 10),
    ("affix", 5),
    ("detect", 5),
    ("integrate", 5),
    ("maintain", 1),
    ("nod", 1),
    ("was", 1),
    ("lose", 1),
    ("sublate", 1),
    ("solve", 1),
    ("thrash", 1),
    ("promise", 1),
    ("engage", 1),
    ("hinder", 1),
    ("print", 1),
    ("x-ray", 1),
    ("breach", 1),
    ("eat", 1),
    ("grow", 1),
    ("impress", 1),
    ("mold", 1),
    ("poach", 1),
    ("serve", 1),
    ("run", 1),
    ("dazzle", 1),
    ("snooze", 1),
    ("doze", 1),
    ("unwind", 1),
    ("kindle", 1),
    ("play", 1),
    ("hang", 1),
    ("believe", 1),
    ("doubt", 1),
];

pub const ADJECTIVES: Weighted = &[
    ("special", 20),
    ("pending", 20),
    ("unusual", 20),
    ("express", 20),
    ("furious", 1),
    ("sly", 1),
    ("careful", 1),
    ("blithe", 1),
    ("quick", 1),
    ("fluffy", 1),
    ("slow", 1),
    ("quiet", 1),
    ("ruthless", 1),
    ("thin", 1),
    ("close", 1),
    ("dogged", 1),
    ("daring", 1),
    ("brave", 1),
    ("stealthy", 1),
    ("permanent", 1),
    ("enticing", 1),
    ("idle", 1),
    ("busy", 1),
    ("regular", 50),
    ("final", 40),
    ("ironic", 40),
    ("even", 30),
    ("bold", 20),
    ("silent", 10),
];

pub const ADVERBS: Weighted = &[
    ("sometimes", 1),
    ("always", 1),
    ("never", 1),
    ("furiously", 50),
    ("slyly", 50),
    ("carefully", 50),
    ("blithely", 40),
    ("quickly", 30),
    ("fluffily", 20),
    ("slowly", 1),
    ("quietly", 1),
    ("ruthlessly", 1),
    ("thinly", 1),
    ("closely", 1),
    ("doggedly", 1),
    ("daringly", 1),
    ("bravely", 1),
    ("stealthily", 1),
    ("permanently", 1),
    ("enticingly", 1),
    ("idly", 1),
    ("busily", 1),
    ("regularly", 1),
    ("finally", 1),
    ("ironically", 1),
    ("evenly", 1),
    ("boldly", 1),
    ("silently", 1),
];

pub const PREPOSITIONS: Weighted = &[
    ("about", 50),
    ("above", 50),
    ("according to", 50),
    ("across", 50),
    ("after", 50),
    ("against", 40),
    ("along", 40),
    ("alongside of", 30),
    ("among", 30),
    ("around", 20),
    ("at", 10),
    ("atop", 1),
    ("before", 1),
    ("behind", 1),
    ("beneath", 1),
    ("beside", 1),
    ("besides", 1),
    ("between", 1),
    ("beyond", 1),
    ("by", 1),
    ("despite", 1),
    ("during", 1),
    ("except", 1),
    ("for", 1),
    ("from", 1),
    ("in place of", 1),
    ("inside", 1),
    ("instead of", 1),
    ("into", 1),
    ("near", 1),
    ("of", 1),
    ("on", 1),
    ("outside", 1),
    ("over", 1),
    ("past", 1),
    ("since", 1),
    ("through", 1),
    ("throughout", 1),
    ("to", 1),
    ("toward", 1),
    ("under", 1),
    ("until", 1),
    ("up", 1),
    ("upon", 1),
    ("without", 1),
    ("with", 1),
    ("within", 1),
];

pub const AUXILIARIES: Weighted = &[
    ("do", 1),
    ("may", 1),
    ("might", 1),
    ("shall", 1),
    ("will", 1),
    ("would", 1),
    ("can", 1),
    ("could", 1),
    ("should", 1),
    ("ought to", 1),
    ("must", 1),
    ("will have to", 1),
    ("shall have to", 1),
    ("could have to", 1),
    ("should have to", 1),
    ("must have to", 1),
    ("need to", 1),
    ("try to", 1),
];

pub const TERMINATORS: Weighted = &[(".", 50), (";", 1), (":", 1), ("?", 1), ("!", 1), ("--", 1)];

/// Sentence shapes (N noun phrase, V verb phrase, P prepositional phrase, T terminator).
const SENTENCES: Weighted = &[
    ("NVT", 3),
    ("NVPT", 3),
    ("NVNT", 3),
    ("NPVNT", 1),
    ("NPVPT", 1),
];
/// Noun phrases: N noun, J adjective, `,` a comma after the previous word, D adverb.
const NOUN_PHRASES: Weighted = &[("N", 10), ("JN", 20), ("J,JN", 10), ("DJN", 50)];
/// Verb phrases: V verb, X auxiliary, D adverb.
const VERB_PHRASES: Weighted = &[("V", 30), ("XV", 1), ("VD", 40), ("XVD", 1)];

/// Bytes in the text pool. dbgen keeps 300 MB; comments are at most 198 bytes, so a pool
/// this size makes the same mix of words and phrases with fewer repeats than any table has
/// rows sharing a comment by chance at small scales.
pub const POOL_BYTES: usize = 8 << 20;

/// One entry of a weighted list.
pub fn pick(rng: &mut SplitMix64, list: Weighted) -> &'static str {
    let total: u32 = list.iter().map(|(_, w)| w).sum();
    let mut r = rng.below(total);
    for (word, w) in list {
        if r < *w {
            return word;
        }
        r -= w;
    }
    list[list.len() - 1].0
}

/// One sentence of the grammar, words separated by single spaces, into `out`.
pub fn sentence(rng: &mut SplitMix64, out: &mut Vec<u8>) {
    let word = |out: &mut Vec<u8>, w: &str| {
        if !out.is_empty() && out.last() != Some(&b' ') {
            out.push(b' ');
        }
        out.extend_from_slice(w.as_bytes());
    };
    for part in pick(rng, SENTENCES).bytes() {
        match part {
            b'N' => noun_phrase(rng, out, &word),
            b'V' => {
                for p in pick(rng, VERB_PHRASES).bytes() {
                    let list = match p {
                        b'X' => AUXILIARIES,
                        b'V' => VERBS,
                        _ => ADVERBS,
                    };
                    word(out, pick(rng, list));
                }
            }
            b'P' => {
                word(out, pick(rng, PREPOSITIONS));
                word(out, "the");
                noun_phrase(rng, out, &word);
            }
            // the terminator follows the last word with no space
            _ => out.extend_from_slice(pick(rng, TERMINATORS).as_bytes()),
        }
    }
}

fn noun_phrase(rng: &mut SplitMix64, out: &mut Vec<u8>, word: &impl Fn(&mut Vec<u8>, &str)) {
    for p in pick(rng, NOUN_PHRASES).bytes() {
        match p {
            b'N' => word(out, pick(rng, NOUNS)),
            b'J' => word(out, pick(rng, ADJECTIVES)),
            b'D' => word(out, pick(rng, ADVERBS)),
            _ => out.push(b','),
        }
    }
}

/// The text pool: sentences of the grammar one after another, [`POOL_BYTES`] long.
pub static POOL: LazyLock<Vec<u8>> = LazyLock::new(|| {
    let mut rng = SplitMix64(0x7470_6368_7465_7874); // "tpchtext"
    let mut pool = Vec::with_capacity(POOL_BYTES + 256);
    while pool.len() < POOL_BYTES {
        if !pool.is_empty() {
            pool.push(b' ');
        }
        sentence(&mut rng, &mut pool);
    }
    pool.truncate(POOL_BYTES);
    pool
});

/// A comment of clause 4.2.2.10 for a column of mean length `mean`: a substring of the pool
/// at a random offset, its length uniform in `[0.4 × mean, 1.6 × mean]` (rounded down at
/// both ends, as the specification's ranges are). Returns (offset, length).
#[inline]
pub fn text_span(rng: &mut SplitMix64, mean: u32) -> (u32, u32) {
    let (lo, hi) = (mean * 2 / 5, mean * 8 / 5);
    let len = lo + rng.below(hi - lo + 1);
    let off = rng.below(POOL_BYTES as u32 - len);
    (off, len)
}

/// The text of a span from [`text_span`].
#[inline]
pub fn text(pool: &[u8], (off, len): (u32, u32)) -> &[u8] {
    &pool[off as usize..(off + len) as usize]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sentences_follow_the_grammar_and_the_pool_is_plain_text() {
        let mut rng = SplitMix64(7);
        let mut s = Vec::new();
        for _ in 0..200 {
            s.clear();
            sentence(&mut rng, &mut s);
            let text = std::str::from_utf8(&s).expect("ascii");
            let last = text.split(' ').next_back().unwrap_or_default();
            assert!(
                TERMINATORS.iter().any(|(t, _)| last.ends_with(t)),
                "{text:?} ends without a terminator"
            );
            let first = text.split(' ').next().unwrap_or_default();
            let noun_phrase_start = NOUNS
                .iter()
                .chain(ADJECTIVES)
                .chain(ADVERBS)
                .any(|(w, _)| first.trim_end_matches(',') == w.split(' ').next().unwrap_or(""));
            assert!(noun_phrase_start, "{text:?} starts with {first:?}");
        }
        let pool = &*POOL;
        assert_eq!(pool.len(), POOL_BYTES);
        assert!(
            pool.iter()
                .all(|b| (b.is_ascii_graphic() || *b == b' ') && *b != b'\\')
        );
        // Q13's pattern and Q16's words are in it
        let has = |w: &[u8]| pool.windows(w.len()).any(|x| x == w);
        assert!(has(b"special requests") || has(b"special packages"));
        assert!(has(b"carefully regular"));
    }

    #[test]
    fn spans_keep_their_lengths() {
        let mut rng = SplitMix64(9);
        let (mut min, mut max) = (u32::MAX, 0);
        for _ in 0..20_000 {
            let (off, len) = text_span(&mut rng, 14);
            assert!(off as usize + len as usize <= POOL_BYTES);
            min = min.min(len);
            max = max.max(len);
        }
        assert_eq!((min, max), (5, 22));
    }
}
