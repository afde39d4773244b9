//! The content tripwire: fingerprints of the denied files inside the roots, searched in every
//! message the server sends, so that a denied file's secret does not reach the host even
//! through free text (a tool's output, an error message, a log notification), whatever
//! field carries it.
//!
//! It stands behind the sandbox, which keeps denied files from the server's own system
//! calls; it is what is left when that cannot hold (the sandbox off, a kernel without
//! Landlock, another hard link, a file created after launch). It catches copies of a
//! secret, not transformations: see `docs/sandbox.md` for its reach and limits.
//!
//! - Fingerprints (`fingerprint.rs`) are built from the deny-glob matches the scan finds
//!   in the roots (`sandbox::scan`), read through the root capability (`fsaccess`), and
//!   compiled into one multi-pattern matcher (ASCII case ignored). They are rebuilt when
//!   the roots change; until the new set is built, a message waits for it (never checked
//!   against a stale set). The search (`matcher.rs`) samples each message with a bitmap
//!   of anchors; see there why not Aho-Corasick.
//! - A message is searched raw first (one pass, no parse: the relay's speed for messages
//!   without a hit); then, only when it holds `\u` or `\/` escapes or several `text`
//!   values, its decoded and joined views (`json.rs`).
//! - Secret bytes are never logged: a hit names the file, the line and the encoding, and a
//!   short SHA-256 of the pattern.

mod fingerprint;
pub(crate) mod json;
mod matcher;

use std::path::{Path, PathBuf};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use cap_std::fs::Dir;
use sha2::Digest;

pub use fingerprint::{Form, Source};

use crate::fsaccess::{self, SymlinkStance};
use crate::sandbox::scan::{self, Budget, Limits, Options, ScanRules};

/// Largest denied file read for fingerprints.
const MAX_FILE_BYTES: u64 = 1 << 20;
/// Denied files fingerprinted at most, over all roots.
const MAX_FILES: usize = 1024;
/// Patterns at most (memory of the automaton).
const MAX_PATTERNS: usize = 100_000;

crate::coded::coded! {
    /// Where a hit was found in the message.
    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    pub enum View {
        /// The message as it came.
        Raw => "as sent",
        /// With its string escapes decoded.
        Decoded => "after decoding JSON escapes",
        /// Its `text` values joined.
        Joined => "across text blocks",
    }
    fn as_str;
}

/// A fingerprint found in a message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Hit {
    /// The denied file (absolute path).
    pub file: PathBuf,
    /// Its line (1-based; 0 for a binary file).
    pub line: u32,
    /// How the secret was encoded.
    pub form: Form,
    /// In which view of the message.
    pub view: View,
    /// The first 12 hex digits of the SHA-256 of the pattern (never the pattern).
    pub pattern_sha256: String,
}

impl Hit {
    /// A one-line description without any secret byte.
    pub fn describe(&self) -> String {
        let line = if self.line > 0 {
            format!("line {}", self.line)
        } else {
            "binary content".to_owned()
        };
        format!(
            "{} of {} ({}, {}; fingerprint sha256:{})",
            line,
            self.file.display(),
            self.form.as_str(),
            self.view.as_str(),
            self.pattern_sha256
        )
    }
}

/// Where a pattern came from.
#[derive(Debug, Clone)]
struct Origin {
    file: usize,
    line: u32,
    form: Form,
}

/// The compiled fingerprints of the denied files inside some roots.
#[derive(Debug, Default)]
pub struct Fingerprints {
    matcher: matcher::Matcher,
    origins: Vec<Origin>,
    files: Vec<PathBuf>,
    /// What could not be fingerprinted, one line each (no secret in them).
    pub gaps: Vec<String>,
    /// How long the build took.
    pub built_in: Duration,
}

impl Fingerprints {
    /// Builds the fingerprints of the deny-glob matches inside `roots` (each a directory
    /// capability and its real path); `named` are the paths the server legitimately names
    /// (every root, nested ones included): nothing that occurs in them is a fingerprint.
    pub fn build(rules: &ScanRules, roots: &[(&Dir, &Path)], named: &[&Path]) -> Fingerprints {
        let started = Instant::now();
        let named: Vec<Vec<u8>> = named
            .iter()
            .map(|p| p.as_os_str().as_encoded_bytes().to_ascii_lowercase())
            .collect();
        let known = |b: &[u8]| {
            let b = b.to_ascii_lowercase();
            named.iter().any(|n| memchr::memmem::find(n, &b).is_some())
        };
        let mut out = Fingerprints::default();
        let mut budget = Budget::new(Limits::default());
        let mut patterns: Vec<Vec<u8>> = Vec::new();
        for (dir, real) in roots {
            let s = scan::scan(
                dir,
                real,
                rules,
                &mut budget,
                Options {
                    files_in_hidden: true,
                },
            );
            for u in &s.unscanned {
                out.gaps.push(format!(
                    "{} not scanned ({})",
                    real.join(&u.rel).display(),
                    u.rule
                ));
            }
            // `.git`'s own files are left out (SHAs and refs are not secrets, and would
            // withhold every git log), except its config, which can hold credentials.
            let git_config = s
                .git_denied
                .into_iter()
                .filter(|h| h.rel.file_name().is_some_and(|n| n == "config"));
            let files = s
                .hidden
                .into_iter()
                .filter(|h| !h.dir)
                .chain(s.hidden_files)
                .map(|h| (h, Source::Denied))
                .chain(git_config.map(|h| (h, Source::GitConfig)));
            // A linked worktree's `.git` is a file: the config git uses (and the server can
            // read, `sandbox/gitdir.rs`) is the common directory's, outside the root.
            let linked = crate::sandbox::gitdir::linked_dirs(real)
                .map(|(gitdir, common)| common.unwrap_or(gitdir))
                .and_then(|dir| {
                    let cap = Dir::open_ambient_dir(&dir, cap_std::ambient_authority()).ok()?;
                    Some((cap, dir))
                });
            if let Some((cap, dir)) = &linked {
                out.add(
                    &mut patterns,
                    cap,
                    Path::new("config"),
                    dir.join("config"),
                    Source::GitConfig,
                    &known,
                );
            }
            for (hit, source) in files {
                if out.files.len() >= MAX_FILES {
                    out.gaps.push(format!(
                        "more than {MAX_FILES} denied files; the rest are not fingerprinted"
                    ));
                    break;
                }
                let path = real.join(&hit.rel);
                out.add(&mut patterns, dir, &hit.rel, path, source, &known);
            }
        }
        if patterns.len() >= MAX_PATTERNS {
            out.gaps.push(format!(
                "more than {MAX_PATTERNS} fingerprints; the rest are left out"
            ));
        }
        out.matcher = matcher::Matcher::new(patterns);
        out.built_in = started.elapsed();
        out
    }

    /// Reads `rel` beneath `dir` (the denied file `file`) and records it and its patterns
    /// (into `patterns`, up to [`MAX_PATTERNS`] in all), or a gap when it cannot be read.
    fn add(
        &mut self,
        patterns: &mut Vec<Vec<u8>>,
        dir: &Dir,
        rel: &Path,
        file: PathBuf,
        source: Source,
        known: &dyn Fn(&[u8]) -> bool,
    ) {
        let found = match fsaccess::read_beneath(dir, rel, MAX_FILE_BYTES, SymlinkStance::Never) {
            Ok(r) => fingerprint::patterns(&r.bytes, source, known),
            Err(e) => {
                return self
                    .gaps
                    .push(format!("{}: not read ({e})", file.display()));
            }
        };
        let index = self.files.len();
        self.files.push(file);
        let room = MAX_PATTERNS.saturating_sub(patterns.len());
        for p in found.into_iter().take(room) {
            patterns.push(p.bytes);
            let (file, line, form) = (index, p.line, p.form);
            self.origins.push(Origin { file, line, form });
        }
    }

    /// Number of denied files fingerprinted.
    pub fn files(&self) -> usize {
        self.files.len()
    }

    /// Number of patterns searched.
    pub fn patterns(&self) -> usize {
        self.origins.len()
    }

    /// Searches one message (its raw JSON text).
    pub fn check(&self, line: &[u8]) -> Option<Hit> {
        if self.matcher.is_empty() {
            return None;
        }
        if let Some((i, at)) = self.matcher.find(line) {
            return Some(self.hit(i, View::Raw, line, at));
        }
        let decode = json::needs_decoding(line);
        let join = json::several_texts(line);
        if !decode && !join {
            return None;
        }
        let (decoded, joined) = json::views(line, decode, join);
        for (view, hay) in [(View::Decoded, &decoded), (View::Joined, &joined)] {
            if let Some((i, at)) = self.matcher.find(hay) {
                return Some(self.hit(i, view, hay, at));
            }
        }
        None
    }

    /// Replaces every fingerprint found in the message's string values (escapes decoded,
    /// as the value holds them) with a marker naming the file; returns what was redacted.
    /// A fingerprint cut across strings, or in a key or a number, is not redacted here:
    /// the caller checks the result again ([`Fingerprints::check`]) and withholds the
    /// message when anything is left.
    pub fn redact(&self, message: &mut serde_json::Value) -> Vec<Hit> {
        let mut hits = Vec::new();
        if !self.matcher.is_empty() {
            self.redact_value(message, &mut hits);
        }
        hits
    }

    fn redact_value(&self, v: &mut serde_json::Value, hits: &mut Vec<Hit>) {
        use serde_json::Value;
        match v {
            Value::String(s) => self.redact_str(s, hits),
            Value::Array(a) => a.iter_mut().for_each(|x| self.redact_value(x, hits)),
            Value::Object(o) => o.values_mut().for_each(|x| self.redact_value(x, hits)),
            _ => {}
        }
    }

    fn redact_str(&self, s: &mut String, hits: &mut Vec<Hit>) {
        let mut out: Option<String> = None;
        let mut pos = 0;
        while let Some((i, at)) = self.matcher.find(&s.as_bytes()[pos..]) {
            let found = pos + at;
            let len = self.matcher.pattern_len(i);
            // A window of a text secret may start or end inside a character: the span
            // widens to whole characters.
            let mut start = found;
            while !s.is_char_boundary(start) {
                start -= 1;
            }
            let mut end = found + len;
            while !s.is_char_boundary(end) {
                end += 1;
            }
            let hit = self.hit(i, View::Decoded, s.as_bytes(), found);
            let o = out.get_or_insert_with(|| String::with_capacity(s.len()));
            o.push_str(&s[pos..start]);
            o.push_str(&format!(
                "[secret redacted by rootfence: text from {}]",
                hit.file.display()
            ));
            hits.push(hit);
            pos = end;
        }
        if let Some(mut o) = out {
            o.push_str(&s[pos..]);
            *s = o;
        }
    }

    fn hit(&self, pattern: usize, view: View, hay: &[u8], at: usize) -> Hit {
        let o = &self.origins[pattern];
        let len = self.matcher.pattern_len(pattern);
        // The matched bytes equal the pattern up to ASCII case: hash them lowercased, so
        // the record is the same whatever the case of the copy.
        let digest = sha2::Sha256::digest(hay[at..at + len].to_ascii_lowercase());
        let short = crate::audit::chain::hex(&digest[..6]);
        Hit {
            file: self.files[o.file].clone(),
            line: o.line,
            form: o.form,
            view,
            pattern_sha256: short,
        }
    }
}

/// The roots a set of fingerprints was built for (real paths, sorted).
type Key = Vec<PathBuf>;

#[derive(Debug)]
struct State {
    key: Option<Key>,
    current: Arc<Fingerprints>,
    /// A build in progress, for this key.
    building: Option<Key>,
}

/// The fingerprints of the current roots, rebuilt when they change.
#[derive(Debug)]
pub struct Tripwire {
    rules: Option<ScanRules>,
    state: Mutex<State>,
    built: Condvar,
}

impl Tripwire {
    /// A tripwire for these deny globs (the policy's `resources.deny`). `None` rules (a
    /// glob that does not compile, which the policy already refuses) disable it.
    pub fn new(deny_globs: &[String]) -> Tripwire {
        let rules = ScanRules::new(deny_globs, &[]).ok();
        Tripwire {
            rules,
            state: Mutex::new(State {
                key: None,
                current: Arc::new(Fingerprints::default()),
                building: None,
            }),
            built: Condvar::new(),
        }
    }

    /// The fingerprints for `roots` (directory capability, real path), building them first
    /// when they are not the current ones, or waiting for a build of them in progress. With
    /// `refresh`, they are built again even when current (denied files created or changed
    /// since); callers meanwhile keep the current ones.
    pub fn for_roots(&self, roots: &[(&Dir, &Path)], refresh: bool) -> Arc<Fingerprints> {
        let key = key_of(roots);
        let mut st = crate::relock(&self.state);
        loop {
            if refresh && st.building.is_none() {
                break;
            }
            if st.key.as_ref() == Some(&key) {
                return Arc::clone(&st.current);
            }
            if st.building.as_ref() == Some(&key) {
                st = self.built.wait(st).unwrap_or_else(|e| e.into_inner());
                continue;
            }
            break;
        }
        st.building = Some(key.clone());
        drop(st);
        let fresh = Arc::new(self.build(roots));
        let mut st = crate::relock(&self.state);
        st.building = None;
        st.key = Some(key);
        st.current = Arc::clone(&fresh);
        self.built.notify_all();
        fresh
    }

    fn build(&self, roots: &[(&Dir, &Path)]) -> Fingerprints {
        let Some(rules) = &self.rules else {
            return Fingerprints::default();
        };
        // A root inside another is covered by the other's scan.
        let outer: Vec<(&Dir, &Path)> = roots
            .iter()
            .filter(|(_, p)| !roots.iter().any(|(_, q)| q != p && p.starts_with(q)))
            .copied()
            .collect();
        let named: Vec<&Path> = roots.iter().map(|(_, p)| *p).collect();
        let f = Fingerprints::build(rules, &outer, &named);
        tracing::debug!(
            files = f.files(),
            patterns = f.patterns(),
            ms = f.built_in.as_millis() as u64,
            "tripwire fingerprints built"
        );
        for gap in &f.gaps {
            tracing::warn!("tripwire: {gap}");
        }
        f
    }
}

fn key_of(roots: &[(&Dir, &Path)]) -> Key {
    let mut k: Vec<PathBuf> = roots.iter().map(|(_, p)| p.to_path_buf()).collect();
    k.sort();
    k.dedup();
    k
}

#[cfg(test)]
mod tests {
    use cap_std::ambient_authority;

    use super::*;

    const SECRET: &str = "sk-live-4f1c0ffee5e11e7c0de9a8b7c6d5e4f3";

    fn root_with_env() -> (tempfile::TempDir, PathBuf, Dir) {
        let t = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(t.path()).unwrap();
        std::fs::write(root.join(".env"), format!("# keys\nAPI_KEY={SECRET}\n")).unwrap();
        std::fs::write(root.join("README.md"), "API_KEY is in .env\n").unwrap();
        let dir = Dir::open_ambient_dir(&root, ambient_authority()).unwrap();
        (t, root, dir)
    }

    fn wire() -> Tripwire {
        Tripwire::new(&[
            "**/.env".to_owned(),
            "**/.env.*".to_owned(),
            "**/*.pem".to_owned(),
        ])
    }

    fn b64(b: &[u8]) -> String {
        const A: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
        let mut out = String::new();
        for c in b.chunks(3) {
            let v = [c[0], *c.get(1).unwrap_or(&0), *c.get(2).unwrap_or(&0)];
            let n = (u32::from(v[0]) << 16) | (u32::from(v[1]) << 8) | u32::from(v[2]);
            for i in 0..=c.len() {
                out.push(A[((n >> (18 - 6 * i)) & 63) as usize] as char);
            }
        }
        out
    }

    #[test]
    fn every_covered_encoding_is_caught_and_ordinary_text_is_not() {
        let (_t, root, dir) = root_with_env();
        let w = wire();
        let fp = w.for_roots(&[(&dir, &root)], false);
        assert_eq!(fp.files(), 1);
        let unicode: String = SECRET
            .chars()
            .map(|c| format!("\\u{:04x}", c as u32))
            .collect();
        let (a, b) = SECRET.split_at(13);
        let cases = [
            format!(r#"{{"result":{{"content":[{{"type":"text","text":"key: {SECRET}"}}]}}}}"#),
            format!(
                r#"{{"error":{{"code":1,"message":"{}"}}}}"#,
                SECRET.to_uppercase()
            ),
            format!(r#"{{"params":{{"data":"{unicode}"}}}}"#),
            format!(r#"{{"blob":"{}"}}"#, b64(format!("x{SECRET}").as_bytes())),
            format!(r#"{{"blob":"{}"}}"#, b64(format!("xy{SECRET}").as_bytes())),
            format!(r#"{{"blob":"{}"}}"#, b64(SECRET.as_bytes())),
            format!(
                r#"{{"content":[{{"type":"text","text":"{a}"}},{{"type":"text","text":"{b}"}}]}}"#
            ),
            // Any piece of WINDOW + STRIDE - 1 bytes holds a whole window.
            format!(r#"{{"structuredContent":{{"k":"{}"}}}}"#, &SECRET[3..34]),
        ];
        for c in &cases {
            let hit = fp.check(c.as_bytes());
            assert!(hit.is_some(), "missed: {c}");
            let hit = hit.unwrap();
            assert_eq!(hit.file, root.join(".env"));
            assert_eq!(hit.line, 2);
            assert!(!hit.describe().contains(SECRET));
        }
        for clean in [
            r#"{"result":{"content":[{"type":"text","text":"API_KEY is in .env"}]}}"#,
            r#"{"result":{"tools":[{"name":"read_file"}]}}"#,
        ] {
            assert_eq!(fp.check(clean.as_bytes()), None, "{clean}");
        }
    }

    #[test]
    fn fingerprints_follow_the_roots() {
        let (_t, root, dir) = root_with_env();
        let t2 = tempfile::tempdir().unwrap();
        let root2 = std::fs::canonicalize(t2.path()).unwrap();
        std::fs::write(root2.join("k.pem"), "MIIEvQIBADANBgkqhkiG9w0BAQEFAASC\n").unwrap();
        let dir2 = Dir::open_ambient_dir(&root2, ambient_authority()).unwrap();
        let w = wire();
        let first = w.for_roots(&[(&dir, &root)], false);
        assert!(
            Arc::ptr_eq(&first, &w.for_roots(&[(&dir, &root)], false)),
            "cached"
        );
        // A denied file created later is fingerprinted at the next refresh.
        std::fs::write(root.join(".env.local"), "TOKEN=ghp_0123456789abcdefABCDEF").unwrap();
        assert!(first.check(b"ghp_0123456789abcdefABCDEF").is_none());
        let refreshed = w.for_roots(&[(&dir, &root)], true);
        assert!(refreshed.check(b"ghp_0123456789abcdefABCDEF").is_some());
        assert!(Arc::ptr_eq(
            &refreshed,
            &w.for_roots(&[(&dir, &root)], false)
        ));
        let second = w.for_roots(&[(&dir2, &root2)], false);
        assert_eq!(second.files(), 1);
        assert!(second.check(SECRET.as_bytes()).is_none());
        assert!(second.check(b"MIIEvQIBADANBgkqhkiG9w0BAQEFAASC").is_some());
    }

    #[test]
    fn redaction_replaces_only_the_secret_spans_and_leaves_nothing() {
        let (_t, root, dir) = root_with_env();
        let fp = wire().for_roots(&[(&dir, &root)], false);
        let mut v = serde_json::json!({"result": {"content": [
            {"type": "text", "text": format!("wrote é{SECRET}é and {} too", SECRET.to_uppercase())},
            {"type": "text", "text": "nothing here"},
        ], "isError": false}});
        let hits = fp.redact(&mut v);
        assert_eq!(hits.len(), 2);
        let marker = format!(
            "[secret redacted by rootfence: text from {}]",
            root.join(".env").display()
        );
        assert_eq!(
            v["result"]["content"][0]["text"],
            format!("wrote é{marker}é and {marker} too")
        );
        assert_eq!(v["result"]["content"][1]["text"], "nothing here");
        assert!(fp.check(&serde_json::to_vec(&v).unwrap()).is_none());
        // A secret cut across two strings is not redacted here (the caller withholds).
        let blocks: Vec<serde_json::Value> = SECRET
            .as_bytes()
            .chunks(8)
            .map(|c| serde_json::json!({"type": "text", "text": std::str::from_utf8(c).unwrap()}))
            .collect();
        let mut split = serde_json::json!({ "content": blocks });
        assert!(fp.redact(&mut split).is_empty());
        assert!(fp.check(&serde_json::to_vec(&split).unwrap()).is_some());
    }
}
