//! Fingerprints of one denied file: the byte strings whose presence in a server message
//! means the file's secret is crossing, in each encoding the tripwire covers.
//!
//! Only what looks like a secret is fingerprinted, so that ordinary words, paths, URLs and
//! git refs that also occur in a denied file never withhold a legitimate message:
//!
//! - **Text files**: each line yields candidates (the whole line when it has no space, the
//!   value of `KEY=VALUE` / `KEY: VALUE`, and its words split at spaces, quotes and URL
//!   punctuation). A candidate is kept when it is at least [`MIN_TOKEN`] bytes, has at least
//!   7 distinct bytes, and mixes letters with digits (or upper case, lower case and
//!   punctuation over 16 bytes). A kept candidate longer than [`WINDOW`] bytes also yields
//!   its windows of [`WINDOW`] bytes every [`STRIDE`] bytes (each kept by the same test),
//!   so any copied piece of at least `WINDOW + STRIDE - 1` bytes of it contains a whole
//!   window.
//! - **Binary files**: windows of [`WINDOW`] bytes every [`BINARY_STRIDE`] bytes with at
//!   least 10 distinct bytes, in encoded forms only (raw binary cannot cross as JSON text):
//!   an encoded piece of `WINDOW + BINARY_STRIDE - 1` bytes holds a whole window.
//!
//! A whole candidate is searched as text (ASCII case ignored), as base64 at the three byte
//! alignments (standard and URL-safe alphabets; the characters that depend on neighbouring
//! bytes left out), as hex, and percent-encoded; a window of it as text only (an encoded
//! copy of the file or the value holds the encoding of the whole value, searched already).
//! A binary file's windows (its first `MAX_BINARY_WINDOWS * BINARY_STRIDE` bytes) are
//! searched as base64 and hex.

use std::collections::HashSet;

/// Shortest candidate fingerprinted.
pub const MIN_TOKEN: usize = 10;
/// Window length (the matcher's long tier starts at 24 bytes).
pub const WINDOW: usize = 24;
/// Window step in text.
pub const STRIDE: usize = 8;
/// Window step in binary files.
pub const BINARY_STRIDE: usize = 64;
/// Needles per file at most (before encodings).
pub const MAX_NEEDLES_PER_FILE: usize = 1024;
/// Windows per binary file at most: its first `MAX_BINARY_WINDOWS * BINARY_STRIDE` bytes.
pub const MAX_BINARY_WINDOWS: usize = 128;

/// How a pattern encodes the secret.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Form {
    /// The bytes as they are (any ASCII case).
    Text,
    /// Base64, standard or URL-safe alphabet, at some alignment.
    Base64,
    /// Hexadecimal, any case.
    Hex,
    /// Percent-encoded.
    Percent,
}

impl Form {
    /// The word used in errors and audit records.
    pub fn as_str(self) -> &'static str {
        match self {
            Form::Text => "text",
            Form::Base64 => "base64",
            Form::Hex => "hex",
            Form::Percent => "percent-encoded",
        }
    }
}

/// One pattern and where in the file it comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pattern {
    /// The bytes searched for.
    pub bytes: Vec<u8>,
    /// 1-based line of the file (0 for binary files).
    pub line: u32,
    /// The encoding.
    pub form: Form,
}

/// The patterns of one file's content.
pub fn patterns(content: &[u8]) -> Vec<Pattern> {
    let text = !content.contains(&0)
        && std::str::from_utf8(content).is_ok_and(|t| {
            t.chars()
                .filter(|c| c.is_control() && !c.is_whitespace())
                .count()
                * 100
                <= t.len()
        });
    let mut needles: Vec<(Vec<u8>, u32, bool)> = Vec::new();
    let mut seen: HashSet<Vec<u8>> = HashSet::new();
    let mut push = |n: &[u8], line: u32, whole: bool, needles: &mut Vec<(Vec<u8>, u32, bool)>| {
        if needles.len() < MAX_NEEDLES_PER_FILE && seen.insert(n.to_ascii_lowercase()) {
            needles.push((n.to_vec(), line, whole));
        }
    };
    if text {
        let t = std::str::from_utf8(content).unwrap_or_default();
        for (i, line) in t.lines().enumerate() {
            let n = (i + 1) as u32;
            for c in candidates(line) {
                // URLs and paths are fingerprinted by their parts only (a password or a
                // token inside one is a part of its own): the whole would match every
                // mention of the same host or directory.
                let url_or_path =
                    c.contains("://") || c.starts_with(['/', '~']) || c.starts_with("./");
                if url_or_path || !looks_secret(c.as_bytes()) {
                    continue;
                }
                push(c.as_bytes(), n, true, &mut needles);
                for w in windows(c.as_bytes(), STRIDE) {
                    if looks_secret(w) {
                        push(w, n, false, &mut needles);
                    }
                }
            }
        }
    } else {
        for w in windows(content, BINARY_STRIDE)
            .into_iter()
            .take(MAX_BINARY_WINDOWS)
        {
            if distinct(w) >= 10 {
                push(w, 0, false, &mut needles);
            }
        }
    }
    let mut out = Vec::new();
    for (n, line, whole) in needles {
        if text {
            out.push(Pattern {
                bytes: n.clone(),
                line,
                form: Form::Text,
            });
            // A window of a text secret is searched as text only: an encoded copy of the
            // file or of a value holds the encoding of the whole value (or line), which is
            // searched already. Fewer patterns keep the search fast.
            if !whole {
                continue;
            }
        }
        for align in 0..3 {
            let b64 = base64_stable(&n, align, STD);
            if b64.len() >= MIN_TOKEN {
                if b64.iter().any(|b| matches!(b, b'+' | b'/')) {
                    let url: Vec<u8> = b64
                        .iter()
                        .map(|b| match b {
                            b'+' => b'-',
                            b'/' => b'_',
                            b => *b,
                        })
                        .collect();
                    out.push(Pattern {
                        bytes: url,
                        line,
                        form: Form::Base64,
                    });
                }
                out.push(Pattern {
                    bytes: b64,
                    line,
                    form: Form::Base64,
                });
            }
        }
        out.push(Pattern {
            bytes: hex(&n),
            line,
            form: Form::Hex,
        });
        if text && whole {
            let pct = percent(&n);
            if pct != n {
                out.push(Pattern {
                    bytes: pct,
                    line,
                    form: Form::Percent,
                });
            }
        }
    }
    out
}

/// Candidate secrets in one line of a text file.
fn candidates(line: &str) -> Vec<&str> {
    let t = line.trim();
    let mut out = Vec::new();
    if t.is_empty() {
        return out;
    }
    // The whole line, unless it is `KEY=VALUE` (its value is a candidate of its own, and
    // the key would make any line of that form look secret).
    if !t.contains(char::is_whitespace) && !t.contains('=') {
        out.push(t);
    }
    // KEY=VALUE, KEY: VALUE, export KEY=VALUE
    let body = t.strip_prefix("export ").unwrap_or(t);
    if let Some(pos) = body.find(['=', ':']) {
        let value = body[pos + 1..].trim();
        let value = value
            .strip_prefix(['"', '\'', '`'])
            .and_then(|v| v.strip_suffix(['"', '\'', '`']))
            .unwrap_or(value);
        if !value.is_empty() {
            out.push(value);
        }
    }
    let words = |c: char| {
        c.is_whitespace()
            || matches!(
                c,
                '"' | '\'' | '`' | ',' | ';' | '(' | ')' | '<' | '>' | '='
            )
    };
    out.extend(t.split(words).filter(|w| !w.is_empty()));
    let parts = |c: char| {
        words(c)
            || matches!(
                c,
                ':' | '/' | '@' | '?' | '&' | '=' | '#' | '[' | ']' | '{' | '}'
            )
    };
    out.extend(t.split(parts).filter(|w| !w.is_empty()));
    out
}

fn distinct(b: &[u8]) -> usize {
    let mut seen = [false; 256];
    let mut n = 0;
    for &x in b {
        if !seen[x as usize] {
            seen[x as usize] = true;
            n += 1;
        }
    }
    n
}

/// Whether a string looks like a secret rather than a word, a path or a URL.
pub fn looks_secret(b: &[u8]) -> bool {
    if b.len() < MIN_TOKEN || distinct(b) < 7 {
        return false;
    }
    if b.iter().any(|c| *c == b'"' || *c == b'\\' || *c < 0x20) {
        // JSON escapes these in transit; such a needle could never match the raw text.
        return false;
    }
    let letters = b.iter().filter(|c| c.is_ascii_alphabetic()).count();
    let digits = b.iter().filter(|c| c.is_ascii_digit()).count();
    let upper = b.iter().any(|c| c.is_ascii_uppercase());
    let lower = b.iter().any(|c| c.is_ascii_lowercase());
    let punct = b.iter().any(|c| c.is_ascii_punctuation());
    (letters >= 2 && digits >= 1) || (b.len() >= 16 && upper && lower && punct)
}

/// Windows of [`WINDOW`] bytes every `step` bytes, plus the last window, for inputs longer
/// than a window.
fn windows(b: &[u8], step: usize) -> Vec<&[u8]> {
    if b.len() <= WINDOW {
        return Vec::new();
    }
    let mut out: Vec<&[u8]> = (0..=b.len() - WINDOW)
        .step_by(step)
        .map(|i| &b[i..i + WINDOW])
        .collect();
    let last = &b[b.len() - WINDOW..];
    if out.last() != Some(&last) {
        out.push(last);
    }
    out
}

const STD: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

/// The base64 characters of `needle` that do not depend on its neighbours, when it starts
/// `align` bytes into a 3-byte group.
fn base64_stable(needle: &[u8], align: usize, alphabet: &[u8; 64]) -> Vec<u8> {
    let mut bytes = vec![0u8; align];
    bytes.extend_from_slice(needle);
    let bits = bytes.len() * 8;
    let mut chars = Vec::with_capacity(bits.div_ceil(6));
    for i in 0..bits.div_ceil(6) {
        let mut v = 0u8;
        for k in 0..6 {
            let bit = i * 6 + k;
            let set = bit < bits && bytes[bit / 8] & (0x80 >> (bit % 8)) != 0;
            v = (v << 1) | u8::from(set);
        }
        chars.push(alphabet[v as usize]);
    }
    // Character i covers bits [6i, 6i+6): keep those entirely inside the needle.
    let first = (8 * align).div_ceil(6);
    let end = bits / 6;
    if first >= end {
        return Vec::new();
    }
    chars[first..end].to_vec()
}

fn hex(b: &[u8]) -> Vec<u8> {
    const H: &[u8; 16] = b"0123456789abcdef";
    b.iter()
        .flat_map(|x| [H[(x >> 4) as usize], H[(x & 15) as usize]])
        .collect()
}

fn percent(b: &[u8]) -> Vec<u8> {
    const H: &[u8; 16] = b"0123456789ABCDEF";
    let mut out = Vec::with_capacity(b.len());
    for &x in b {
        if x.is_ascii_alphanumeric() || matches!(x, b'-' | b'.' | b'_' | b'~') {
            out.push(x);
        } else {
            out.extend([b'%', H[(x >> 4) as usize], H[(x & 15) as usize]]);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn std_b64(b: &[u8]) -> String {
        // A reference encoder with padding, for checking alignments.
        let mut out = String::new();
        for chunk in b.chunks(3) {
            let v = [
                chunk[0],
                *chunk.get(1).unwrap_or(&0),
                *chunk.get(2).unwrap_or(&0),
            ];
            let n = (u32::from(v[0]) << 16) | (u32::from(v[1]) << 8) | u32::from(v[2]);
            for i in 0..4 {
                if i <= chunk.len() {
                    out.push(STD[((n >> (18 - 6 * i)) & 63) as usize] as char);
                } else {
                    out.push('=');
                }
            }
        }
        out
    }

    #[test]
    fn base64_patterns_match_at_every_alignment_and_any_neighbours() {
        let secret = b"sk-live-0123456789abcdefXYZ";
        let pats: Vec<Vec<u8>> = (0..3).map(|a| base64_stable(secret, a, STD)).collect();
        for prefix in 0..6 {
            for suffix in 0..4 {
                let mut blob = vec![b'!'; prefix];
                blob.extend_from_slice(secret);
                blob.extend(std::iter::repeat_n(b'?', suffix));
                let enc = std_b64(&blob);
                assert!(
                    pats.iter()
                        .any(|p| enc.contains(std::str::from_utf8(p).unwrap())),
                    "prefix {prefix} suffix {suffix}: {enc}"
                );
            }
        }
    }

    #[test]
    fn only_secret_looking_strings_are_fingerprinted() {
        let env = b"# settings\nNODE_ENV=production\nPORT=3000\nDEBUG=true\n\
            API_URL=https://api.example.com/v1\n\
            DATABASE_URL=postgres://admin:S3cretPass@db:5432/app\n\
            STRIPE_KEY=\"sk_live_51H8xYzAbCdEfGh\"\n\
            [remote \"origin\"]\n\tfetch = +refs/heads/*:refs/remotes/origin/*\n\
            DATE=2024-01-01T00:00:00\n";
        let texts: Vec<String> = patterns(env)
            .into_iter()
            .filter(|p| p.form == Form::Text)
            .map(|p| String::from_utf8(p.bytes).unwrap())
            .collect();
        for want in ["sk_live_51H8xYzAbCdEfGh", "S3cretPass"] {
            assert!(texts.iter().any(|t| t == want), "{want} missing: {texts:?}");
        }
        for t in &texts {
            for common in [
                "production",
                "https://api.example.com",
                "refs/heads",
                "2024-01-01T00:00:00",
                "localhost",
                "3000",
            ] {
                assert!(
                    !t.contains(common) || t.contains("S3cret"),
                    "{t:?} is too common"
                );
            }
        }
    }

    #[test]
    fn long_secrets_yield_windows_and_binary_files_encoded_windows() {
        let pem =
            b"-----BEGIN PRIVATE KEY-----\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQC7\n";
        let p = patterns(pem);
        let line = "MIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQC7";
        assert!(p.iter().any(|x| x.bytes == line.as_bytes() && x.line == 2));
        assert!(p.iter().any(|x| x.bytes == line.as_bytes()[8..32]));
        let binary: Vec<u8> = (0..64u8).map(|i| i.wrapping_mul(37)).collect();
        let p = patterns(&binary);
        assert!(!p.is_empty());
        assert!(p.iter().all(|x| x.form != Form::Text));
        assert!(p.iter().any(|x| x.bytes == hex(&binary[..24])));
    }
}
