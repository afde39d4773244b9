//! The multi-pattern search behind the tripwire: thousands of patterns (every fingerprint
//! in every encoding), ASCII case ignored, over every byte the server sends.
//!
//! Aho-Corasick was measured first: with the ~24,000 patterns of a realistic root (a
//! `.env`, a PEM key, a 64 KiB key store) its automaton searched 70-90 MiB/s and took a
//! second to build, far below the relay's speed. The patterns share a property that allows
//! much faster: each has a known minimum length. So the search *samples* the message: at
//! every `step`-th position it folds the next `q` bytes into one integer (ASCII case
//! folded), tests one bit of a bitmap indexed by its hash, and only on a set bit looks the
//! bytes up among the patterns' anchors and compares the candidates in full. An occurrence
//! of a pattern of at least `q + step - 1` bytes covers a sampled position whose `q` bytes
//! lie inside it, at one of the pattern's first `step` offsets, so each pattern contributes
//! `step` anchors.
//!
//! Two tiers keep the steps long: patterns of at least [`LONG`] bytes (the bulk: windows
//! and their encodings) use 8-byte anchors every 17 bytes; the few shorter ones (whole short
//! secrets) use 4-byte anchors every 7 bytes. Each bitmap has 16 to 32 bits per anchor
//! (3-6 % of samples reach the anchor table), so a root's bitmaps stay in the L1/L2 cache.

use std::collections::HashMap;

/// Shortest pattern searched.
pub const MIN_LEN: usize = 10;
/// Shortest pattern of the long tier.
pub const LONG: usize = 24;

const MUL: u64 = 0x9E37_79B9_7F4A_7C15;

/// Folded anchors and the patterns (index, offset) they start at, hashed with foldhash
/// (looked up only on a bitmap hit).
type Anchors = HashMap<u64, Vec<(u32, u8)>, foldhash::fast::RandomState>;

/// One tier: anchors of `q` bytes sampled every `step` bytes.
#[derive(Debug)]
struct Tier {
    q: usize,
    step: usize,
    anchors: Anchors,
    bitmap: Vec<u64>,
    shift: u32,
}

/// The anchor at the start of `b` (at least `q` bytes), ASCII case folded. The fold sets
/// bit 5 of every byte: exact for letters; it merges a few punctuation pairs too, which
/// only adds candidates (they are compared in full).
#[inline(always)]
fn anchor(b: &[u8], q: usize) -> u64 {
    if q == 8 {
        u64::from_le_bytes([b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7]]) | 0x2020_2020_2020_2020
    } else {
        u64::from(u32::from_le_bytes([b[0], b[1], b[2], b[3]]) | 0x2020_2020)
    }
}

impl Tier {
    fn new(q: usize, min_len: usize) -> Tier {
        Tier {
            q,
            step: min_len - q + 1,
            anchors: Anchors::default(),
            bitmap: Vec::new(),
            shift: 0,
        }
    }

    fn add(&mut self, i: u32, p: &[u8]) {
        for off in 0..self.step.min(p.len() - self.q + 1) {
            let list = self.anchors.entry(anchor(&p[off..], self.q)).or_default();
            if !list.contains(&(i, off as u8)) {
                list.push((i, off as u8));
            }
        }
    }

    fn seal(&mut self) {
        let bits = (self.anchors.len().max(1) * 16)
            .next_power_of_two()
            .max(1 << 12);
        self.shift = 64 - bits.trailing_zeros();
        self.bitmap = vec![0u64; bits / 64];
        for a in self.anchors.keys() {
            let h = (a.wrapping_mul(MUL) >> self.shift) as usize;
            self.bitmap[h >> 6] |= 1 << (h & 63);
        }
    }

    /// Samples `hay` every `step` bytes; `Q` is this tier's anchor length (4 or 8), a
    /// constant so each tier's loop compiles to straight-line loads, with four independent
    /// samples per iteration.
    #[inline]
    fn find<const Q: usize>(&self, hay: &[u8], patterns: &[Vec<u8>]) -> Option<(usize, usize)> {
        if self.anchors.is_empty() || hay.len() < Q {
            return None;
        }
        let step = self.step;
        let last = hay.len() - Q;
        let bit = |p: usize| -> (u64, bool) {
            let a = anchor(&hay[p..p + Q], Q);
            let h = (a.wrapping_mul(MUL) >> self.shift) as usize;
            (a, self.bitmap[h >> 6] & (1 << (h & 63)) != 0)
        };
        let mut p = 0;
        while p + 3 * step <= last {
            let (a0, b0) = bit(p);
            let (a1, b1) = bit(p + step);
            let (a2, b2) = bit(p + 2 * step);
            let (a3, b3) = bit(p + 3 * step);
            if b0 | b1 | b2 | b3 {
                for (k, (a, b)) in [(a0, b0), (a1, b1), (a2, b2), (a3, b3)]
                    .into_iter()
                    .enumerate()
                {
                    if b && let Some(found) = self.verify(hay, p + k * step, a, patterns) {
                        return Some(found);
                    }
                }
            }
            p += 4 * step;
        }
        while p <= last {
            let (a, b) = bit(p);
            if b && let Some(found) = self.verify(hay, p, a, patterns) {
                return Some(found);
            }
            p += step;
        }
        None
    }

    #[cold]
    fn verify(
        &self,
        hay: &[u8],
        p: usize,
        anchor: u64,
        patterns: &[Vec<u8>],
    ) -> Option<(usize, usize)> {
        for &(i, off) in self.anchors.get(&anchor)? {
            let Some(start) = p.checked_sub(off as usize) else {
                continue;
            };
            let pat = &patterns[i as usize];
            if hay
                .get(start..start + pat.len())
                .is_some_and(|w| w.eq_ignore_ascii_case(pat))
            {
                return Some((i as usize, start));
            }
        }
        None
    }
}

/// The compiled patterns.
#[derive(Debug)]
pub struct Matcher {
    patterns: Vec<Vec<u8>>,
    short: Tier,
    long: Tier,
}

impl Default for Matcher {
    fn default() -> Self {
        Matcher::new(Vec::new())
    }
}

impl Matcher {
    /// Compiles the patterns; those shorter than [`MIN_LEN`] are left out (the caller never
    /// makes any).
    pub fn new(patterns: Vec<Vec<u8>>) -> Matcher {
        let mut short = Tier::new(4, MIN_LEN);
        let mut long = Tier::new(8, LONG);
        for (i, p) in patterns.iter().enumerate() {
            if p.len() >= LONG {
                long.add(i as u32, p);
            } else if p.len() >= MIN_LEN {
                short.add(i as u32, p);
            }
        }
        short.seal();
        long.seal();
        Matcher {
            patterns,
            short,
            long,
        }
    }

    /// Whether there is nothing to search for.
    pub fn is_empty(&self) -> bool {
        self.short.anchors.is_empty() && self.long.anchors.is_empty()
    }

    /// A pattern found in `hay` (its index and where it starts), if any.
    pub fn find(&self, hay: &[u8]) -> Option<(usize, usize)> {
        self.long
            .find::<8>(hay, &self.patterns)
            .or_else(|| self.short.find::<4>(hay, &self.patterns))
    }

    /// The length of pattern `i`.
    pub fn pattern_len(&self, i: usize) -> usize {
        self.patterns[i].len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_every_pattern_at_every_offset_and_case() {
        let pats: Vec<Vec<u8>> = [
            "abcdefghij",
            "0123456789abcdefXYZ",
            "K9-zz_Q+/=mm",
            "a-long-pattern-of-thirty-two-b!!",
        ]
        .iter()
        .map(|s| s.as_bytes().to_vec())
        .collect();
        let m = Matcher::new(pats.clone());
        for (i, p) in pats.iter().enumerate() {
            for pre in 0..20 {
                for post in 0..4 {
                    let mut hay = vec![b'.'; pre];
                    hay.extend(p.to_ascii_uppercase());
                    hay.extend(vec![b'~'; post]);
                    assert_eq!(m.find(&hay), Some((i, pre)), "{i} {pre} {post}");
                }
            }
        }
        assert_eq!(m.find(b"abcdefghi"), None);
        assert_eq!(m.find(b"xxabcdefghXjxx"), None);
        assert!(
            Matcher::new(Vec::new())
                .find(b"anything at all here")
                .is_none()
        );
    }
}
