//! Fingerprints of one denied file: the byte strings whose presence in a server message
//! means the file's secret is crossing, in each encoding the tripwire covers.
//!
//! Secrets are fingerprinted, not identifiers: a user name, a project or remote name, a host
//! or a path component that also occurs in a denied file must never withhold a legitimate
//! message (the project `~/jsmith1987/app` whose `.git/config` says
//! `origin = git@github.com:jsmith1987/app.git`). So:
//!
//! - **Nothing that occurs in the roots' own paths** is a fingerprint (`known`): the server
//!   names its roots in ordinary answers.
//! - **Text files** (`.env`, `.netrc`, PEM keys, ...): each line yields candidates, each
//!   either a credential *by position* (the value of a key named like a secret,
//!   `PASSWORD=...`, `api_key: ...`; a URL's password, `https://user:PASSWORD@host`; a word
//!   with a known token prefix, `ghp_`, `AKIA`, `sk_live_`, ...) or a candidate *by shape*
//!   (the whole line when it has no space, any other value, its words split at spaces,
//!   quotes and URL punctuation). Both must be at least [`MIN_TOKEN`] bytes with at least 7
//!   distinct bytes and mix letters with digits (or upper case, lower case and punctuation
//!   over 16 bytes); one by shape must also not read as an identifier (words of letters
//!   then digits, `jsmith1987`, `node18-alpine`, `v1.2.3-beta`: see [`identifier_like`]).
//!   A kept candidate longer than [`WINDOW`] bytes also yields its windows of [`WINDOW`]
//!   bytes every [`STRIDE`] bytes (each kept by the same test), so any copied piece of at
//!   least `WINDOW + STRIDE - 1` bytes of it contains a whole window.
//! - **git's config** ([`Source::GitConfig`]) holds credentials only by position: a URL's
//!   password (or a token-shaped user name, `https://ghp_...@github.com`), the value of an
//!   `extraheader` or of a key named like a secret, a word with a known token prefix. Its
//!   user names, remote names, hosts and paths are never fingerprinted.
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

use base64::Engine as _;

use crate::audit::chain::hex;

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

crate::coded::coded! {
    /// How a pattern encodes the secret.
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
    pub enum Form {
        /// The bytes as they are (any ASCII case).
        Text => "text",
        /// Base64, standard or URL-safe alphabet, at some alignment.
        Base64 => "base64",
        /// Hexadecimal, any case.
        Hex => "hex",
        /// Percent-encoded.
        Percent => "percent-encoded",
    }
    /// The word used in errors and audit records.
    pub fn as_str;
}

/// What kind of denied file the content comes from: which of its strings can be secrets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Source {
    /// A file the policy denies for what it holds (`.env`, a key, `.netrc`): credentials by
    /// position and anything shaped like a secret.
    Denied,
    /// git's `config`: it is denied for the credentials it may hold, and is otherwise full
    /// of identifiers (user, remote and branch names, hosts, paths) the server names
    /// legitimately. Only credentials by position are fingerprinted.
    GitConfig,
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

/// Why a candidate may be a secret.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Basis {
    /// Where it stands says it is a credential (a password's value, a URL's password).
    Position,
    /// Only its shape: kept when it does not read as an identifier.
    Shape,
}

impl Basis {
    /// `Position` when where the candidate stands marks it (a secret's key, a token
    /// prefix), else `Shape`.
    fn position_if(yes: bool) -> Basis {
        if yes { Basis::Position } else { Basis::Shape }
    }
}

/// The patterns of one file's content. `known` says whether a candidate (its bytes, any
/// case) occurs where the server legitimately names it (the roots' own paths): such a
/// candidate is never a fingerprint.
pub fn patterns(content: &[u8], source: Source, known: &dyn Fn(&[u8]) -> bool) -> Vec<Pattern> {
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
            let found = match source {
                Source::Denied => candidates(line),
                Source::GitConfig => git_credentials(line),
            };
            for (c, basis) in found {
                // URLs, paths, addresses and scp-style remotes (`git@host:owner/repo`)
                // are fingerprinted by their parts only (a password or a token inside one
                // is a part of its own): the whole would match every mention of the same
                // host, directory or person.
                let url_or_path = c.contains("://")
                    || c.starts_with(['/', '~'])
                    || c.starts_with("./")
                    || (basis == Basis::Shape && c.contains('@'));
                let b = c.as_bytes();
                if url_or_path
                    || !looks_secret(b)
                    || (basis == Basis::Shape && identifier_like(b))
                    || known(b)
                {
                    continue;
                }
                push(b, n, true, &mut needles);
                for w in windows(b, STRIDE) {
                    if looks_secret(w) && !known(w) {
                        push(w, n, false, &mut needles);
                    }
                }
            }
        }
    } else if source == Source::Denied {
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
        let mut add = |bytes: Vec<u8>, form: Form| out.push(Pattern { bytes, line, form });
        if text {
            add(n.clone(), Form::Text);
            // A window of a text secret is searched as text only: an encoded copy of the
            // file or of a value holds the encoding of the whole value (or line), which is
            // searched already. Fewer patterns keep the search fast.
            if !whole {
                continue;
            }
        }
        for align in 0..3 {
            let b64 = base64_stable(&n, align);
            if b64.len() >= MIN_TOKEN {
                if b64.iter().any(|b| matches!(b, b'+' | b'/')) {
                    let url = b64.iter().map(|b| match b {
                        b'+' => b'-',
                        b'/' => b'_',
                        b => *b,
                    });
                    add(url.collect(), Form::Base64);
                }
                add(b64, Form::Base64);
            }
        }
        add(hex(&n).into_bytes(), Form::Hex);
        if text && whole {
            let pct = percent(&n);
            if pct != n {
                add(pct, Form::Percent);
            }
        }
    }
    out
}

/// Words of a key's name that say its value is a credential.
const SECRET_KEYS: &[&str] = &[
    "pass",
    "pwd",
    "secret",
    "token",
    "key",
    "auth",
    "credential",
    "private",
    "cookie",
    "session",
    "signature",
    "salt",
    "dsn",
    "bearer",
];

/// Prefixes that make a word a credential whatever its shape: tokens of GitHub, GitLab,
/// Slack, Stripe, OpenAI-style APIs, AWS, Google, npm, PyPI, Hugging Face, DigitalOcean,
/// SendGrid.
const TOKEN_PREFIXES: &[&str] = &[
    "ghp_",
    "gho_",
    "ghu_",
    "ghs_",
    "ghr_",
    "github_pat_",
    "glpat-",
    "xoxb-",
    "xoxp-",
    "xoxa-",
    "xapp-",
    "sk-",
    "sk_live_",
    "sk_test_",
    "rk_live_",
    "AKIA",
    "ASIA",
    "AIza",
    "ya29.",
    "npm_",
    "pypi-",
    "hf_",
    "dop_v1_",
    "SG.",
];

fn secret_key(key: &str) -> bool {
    let k = key.trim().to_ascii_lowercase();
    SECRET_KEYS.iter().any(|w| k.contains(w))
}

fn token_prefixed(word: &str) -> bool {
    TOKEN_PREFIXES.iter().any(|p| word.starts_with(p))
}

/// The credentials in URLs' user information (`scheme://user:password@host`): the
/// password by position, a lone user name by shape (a token given as the user name,
/// `https://ghp_...@github.com`); a user name beside a password is an identifier.
fn url_credentials<'a>(line: &'a str, out: &mut Vec<(&'a str, Basis)>) {
    for (at, _) in line.match_indices("://") {
        let rest = &line[at + 3..];
        let end = rest
            .find(|c: char| c.is_whitespace() || matches!(c, '/' | '"' | '\'' | '`' | '?' | '#'))
            .unwrap_or(rest.len());
        let authority = &rest[..end];
        let Some(userinfo) = authority.rfind('@').map(|i| &authority[..i]) else {
            continue;
        };
        match userinfo.split_once(':') {
            Some((_, password)) if !password.is_empty() => out.push((password, Basis::Position)),
            Some((user, _)) => out.push((user, Basis::Shape)),
            None => out.push((userinfo, Basis::Shape)),
        }
    }
}

/// Candidate secrets in one line of a text file.
fn candidates(line: &str) -> Vec<(&str, Basis)> {
    let t = line.trim();
    let mut out = Vec::new();
    if t.is_empty() {
        return out;
    }
    // The whole line, unless it is `KEY=VALUE` (its value is a candidate of its own, and
    // the key would make any line of that form look secret).
    if !t.contains(char::is_whitespace) && !t.contains('=') {
        out.push((t, Basis::Shape));
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
            out.push((value, Basis::position_if(secret_key(&body[..pos]))));
        }
    }
    url_credentials(t, &mut out);
    // Words (split at spaces and quotes), then their parts (split at URL punctuation too).
    for w in t.split(word_sep).chain(t.split(part_sep)) {
        if !w.is_empty() {
            out.push((w, Basis::position_if(token_prefixed(w))));
        }
    }
    out
}

/// Where a line splits into words: spaces, quotes and list punctuation.
fn word_sep(c: char) -> bool {
    c.is_whitespace()
        || matches!(
            c,
            '"' | '\'' | '`' | ',' | ';' | '(' | ')' | '<' | '>' | '='
        )
}

/// Where a word splits into parts: [`word_sep`] and URL punctuation.
fn part_sep(c: char) -> bool {
    word_sep(c) || matches!(c, ':' | '/' | '@' | '?' | '&' | '#' | '[' | ']' | '{' | '}')
}

/// Credentials in one line of git's config (see [`Source::GitConfig`]): never its names,
/// hosts or paths.
fn git_credentials(line: &str) -> Vec<(&str, Basis)> {
    let t = line.trim();
    let mut out = Vec::new();
    if t.is_empty() || t.starts_with(['#', ';']) {
        return out;
    }
    url_credentials(t, &mut out);
    if let Some((key, value)) = t.split_once('=') {
        let key = key.trim().to_ascii_lowercase();
        let value = value.trim().trim_matches('"');
        if key == "extraheader" || key.ends_with(".extraheader") {
            // `AUTHORIZATION: basic <base64>`, `Authorization: Bearer <token>`.
            if let Some(last) = value.split_whitespace().last() {
                out.push((last, Basis::Position));
            }
        } else if secret_key(&key) && !value.contains("://") {
            out.push((value, Basis::Position));
        }
    }
    out.extend(
        t.split(part_sep)
            .filter(|w| token_prefixed(w))
            .map(|w| (w, Basis::Position)),
    );
    out
}

/// Whether a string reads as an identifier rather than a generated secret: only letters,
/// digits, `-`, `_` and `.`, and each part between those separators is letters then digits
/// or digits then letters at most (`jsmith1987`, `node18-alpine`, `v1.2.3-beta`,
/// `MyProject2024`). Generated secrets alternate (`sk_live_51H8xYzAb`, `a3f9c2e1`,
/// `AKIAIOSFODNN7EXAMPLE`).
pub fn identifier_like(b: &[u8]) -> bool {
    if !b
        .iter()
        .all(|c| c.is_ascii_alphanumeric() || matches!(c, b'-' | b'_' | b'.'))
    {
        return false;
    }
    b.split(|c| matches!(c, b'-' | b'_' | b'.')).all(|part| {
        let runs = part
            .windows(2)
            .filter(|w| w[0].is_ascii_digit() != w[1].is_ascii_digit())
            .count()
            + 1;
        runs <= 2
    })
}

fn distinct(b: &[u8]) -> usize {
    let mut seen = [false; 256];
    b.iter()
        .filter(|&&x| !std::mem::replace(&mut seen[x as usize], true))
        .count()
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

/// The base64 characters (standard alphabet) of `needle` that do not depend on its
/// neighbours, when it starts `align` bytes into a 3-byte group.
fn base64_stable(needle: &[u8], align: usize) -> Vec<u8> {
    let mut bytes = vec![0u8; align];
    bytes.extend_from_slice(needle);
    let chars = base64::engine::general_purpose::STANDARD_NO_PAD.encode(&bytes);
    // Character i covers bits [6i, 6i+6): keep those entirely inside the needle.
    let first = (8 * align).div_ceil(6);
    let end = bytes.len() * 8 / 6;
    chars
        .as_bytes()
        .get(first..end)
        .unwrap_or_default()
        .to_vec()
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
        base64::engine::general_purpose::STANDARD.encode(b)
    }

    #[test]
    fn base64_patterns_match_at_every_alignment_and_any_neighbours() {
        let secret = b"sk-live-0123456789abcdefXYZ";
        let pats: Vec<Vec<u8>> = (0..3).map(|a| base64_stable(secret, a)).collect();
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
        let texts: Vec<String> = patterns(env, Source::Denied, &|_| false)
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
        let p = patterns(pem, Source::Denied, &|_| false);
        let line = "MIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQC7";
        assert!(p.iter().any(|x| x.bytes == line.as_bytes() && x.line == 2));
        assert!(p.iter().any(|x| x.bytes == line.as_bytes()[8..32]));
        let binary: Vec<u8> = (0..64u8).map(|i| i.wrapping_mul(37)).collect();
        let p = patterns(&binary, Source::Denied, &|_| false);
        assert!(!p.is_empty());
        assert!(p.iter().all(|x| x.form != Form::Text));
        assert!(p.iter().any(|x| x.bytes == hex(&binary[..24]).into_bytes()));
    }

    fn texts(content: &[u8], source: Source, known: &dyn Fn(&[u8]) -> bool) -> Vec<String> {
        patterns(content, source, known)
            .into_iter()
            .filter(|p| p.form == Form::Text)
            .map(|p| String::from_utf8(p.bytes).unwrap())
            .collect()
    }

    #[test]
    fn git_config_yields_its_credentials_and_never_its_names() {
        let config = b"[core]\n\trepositoryformatversion = 0\n\
            [remote \"origin\"]\n\turl = git@github.com:jsmith1987/app.git\n\
            \tfetch = +refs/heads/*:refs/remotes/origin/*\n\
            [remote \"mirror\"]\n\turl = https://jsmith1987:ghp_R4nd0mT0kenAbCdEf123456@github.com/jsmith1987/app.git\n\
            [remote \"ci\"]\n\turl = https://glpat-Zx9Yw8Vu7Ts6Rq5P@gitlab.example.com/team2024/app.git\n\
            [http \"https://github.com/\"]\n\textraheader = AUTHORIZATION: basic eDphY2Nlc3MtdG9rZW4xMjM0NTY=\n\
            [branch \"feature-2024q3\"]\n\tremote = origin\n\
            [user]\n\tname = jsmith1987\n\temail = jsmith1987@example.com\n";
        let t = texts(config, Source::GitConfig, &|_| false);
        for want in [
            "ghp_R4nd0mT0kenAbCdEf123456",
            "glpat-Zx9Yw8Vu7Ts6Rq5P",
            "eDphY2Nlc3MtdG9rZW4xMjM0NTY=",
        ] {
            assert!(t.iter().any(|x| x == want), "{want} missing: {t:?}");
        }
        for x in &t {
            for name in [
                "jsmith1987",
                "team2024",
                "feature-2024q3",
                "github.com",
                "app.git",
            ] {
                assert!(!x.contains(name), "{x:?} holds the identifier {name}");
            }
        }
    }

    #[test]
    fn identifiers_and_the_roots_own_path_words_are_not_secrets() {
        let netrc = b"machine github.com login jsmith1987 password ghp_R4nd0mT0kenAbCdEf123456\n\
            APP_NAME=myproject2024\nIMAGE=node18-alpine\nVERSION=v1.2.3-beta\n\
            DB_PASSWORD=hunter2hunter2x9\nAWS_ID=AKIAIOSFODNN7EXAMPLE\n\
            REMOTE=git@github.com:jsmith1987/app.git\n";
        let t = texts(netrc, Source::Denied, &|_| false);
        for want in [
            "ghp_R4nd0mT0kenAbCdEf123456",
            "hunter2hunter2x9",
            "AKIAIOSFODNN7EXAMPLE",
        ] {
            assert!(t.iter().any(|x| x == want), "{want} missing: {t:?}");
        }
        for x in &t {
            for name in [
                "jsmith1987",
                "myproject2024",
                "node18-alpine",
                "v1.2.3-beta",
            ] {
                assert!(!x.contains(name), "{x:?} holds the identifier {name}");
            }
        }
        // What the roots' paths name is never a fingerprint, whatever its shape.
        let env = b"PROJECT=a1b2c3d4e5f6\nAPI_TOKEN=a1b2c3d4e5f6\n";
        assert!(!texts(env, Source::Denied, &|_| false).is_empty());
        let known = |b: &[u8]| {
            b"/home/u/a1b2c3d4e5f6/app"
                .to_ascii_lowercase()
                .windows(b.len())
                .any(|w| w == b.to_ascii_lowercase())
        };
        assert_eq!(texts(env, Source::Denied, &known), Vec::<String>::new());
    }

    #[test]
    fn identifier_shapes() {
        for id in [
            "jsmith1987",
            "node18-alpine",
            "v1.2.3-beta",
            "MyProject2024",
            "release-2024-q3",
        ] {
            assert!(identifier_like(id.as_bytes()), "{id}");
        }
        for secret in [
            "sk_live_51H8xYzAbCdEfGh",
            "a3f9c2e1b7d4",
            "AKIAIOSFODNN7EXAMPLE",
            "S3cretPass",
            "550e8400-e29b-41d4-a716-446655440000",
            "ghp_R4nd0mT0ken",
            "abc+def/ghi123",
        ] {
            assert!(!identifier_like(secret.as_bytes()), "{secret}");
        }
    }
}
