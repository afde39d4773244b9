//! Signed checkpoints: the audit chain's head, signed with an Ed25519 key the server cannot
//! reach, written to a file apart from the log (and to syslog when configured).
//!
//! A hash chain shows any edit *before* its last record, but not records cut from its end,
//! nor a chain whose every hash was recomputed after an edit (the hashes are unkeyed). A
//! checkpoint closes both: it says "record seq N hashed to H", and only the key holder can
//! say it. `audit verify --checkpoints FILE --pubkey KEY` then finds:
//!
//! - records removed from the end: a checkpoint names a seq the log no longer has;
//! - a rewritten tail, or a re-hashed chain: the log's record seq N no longer hashes to H;
//! - a forged, altered, removed or reordered checkpoint: each one is signed and chained to
//!   the one before it in the file (`prev`, numbered `n`).
//!
//! What it cannot show: records appended after the last checkpoint and then removed, or the
//! last checkpoints removed together with the records they cover. Checkpoints are written
//! every N records, every T seconds and at session end to bound the first; a copy off the
//! machine (syslog) bounds the second. See docs/audit-schema.md, "Signed checkpoints".
//!
//! # Format
//!
//! One JSON line per checkpoint, keys in this order, no whitespace:
//!
//! ```text
//! {"v":1,"n":3,"ts":"...","session":"<32 hex>","log":"audit.jsonl","seq":1042,"head":"<64 hex>","prev":"<64 hex>","key":"<64 hex>","sig":"<128 hex>"}
//! ```
//!
//! `head` is the SHA-256 of record `seq`'s line (what the next record's `prev` would be);
//! `prev` the SHA-256 of the checkpoint line before it in the file (zeros for the first);
//! `key` the public key; `sig` the Ed25519 signature of [`SIG_CONTEXT`] followed by the
//! line's bytes up to (not including) `,"sig":`. Signing the bytes as written means the
//! verifier checks exactly what it then reads, with no canonical form to get wrong.
//!
//! # Keys
//!
//! PKCS#8 PEM private keys and SPKI PEM public keys, as `rootfence audit keygen` and
//! `openssl genpkey -algorithm ed25519` write them. A private key file must be a regular
//! file, owned by the user running rootfence (or root), and readable by nobody else;
//! `rootfence run` also refuses one inside the roots or the sandbox's grants (the server
//! could read it there).

use std::collections::BTreeMap;
use std::fs::{File, OpenOptions};
use std::io::{self, Read, Write};
use std::os::unix::fs::{FileExt, MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use ed25519_dalek::pkcs8::{DecodePrivateKey, DecodePublicKey, EncodePrivateKey, EncodePublicKey};
use ed25519_dalek::{Signature, Signer, SigningKey, Verifier, VerifyingKey};

use super::AuditError;
use super::chain::{self, GENESIS, Hash, hex, parse_hex};
use super::time::{now_micros, rfc3339};

/// Domain separation: a signature over a checkpoint can never pass for one over anything
/// else signed with the same key.
pub const SIG_CONTEXT: &[u8] = b"rootfence audit checkpoint v1\n";

/// Checkpoint after this many records by default.
pub const DEFAULT_EVERY_RECORDS: u64 = 1000;

/// Checkpoint at least this often (while records are written) by default.
pub const DEFAULT_EVERY: Duration = Duration::from_secs(60);

/// The longest key file read (a PEM key is about 120 bytes).
const MAX_KEY_FILE: u64 = 16 * 1024;

/// A key file problem, in words the operator can act on.
#[derive(Debug, Clone, thiserror::Error)]
#[error("{0}")]
pub struct KeyError(pub String);

fn key_err(path: &Path, what: impl std::fmt::Display) -> KeyError {
    KeyError(format!("checkpoint key {}: {what}", path.display()))
}

/// The signing key, loaded once at start. Its `Debug` shows only the public half.
#[derive(Clone)]
pub struct CheckpointKey {
    key: Arc<SigningKey>,
    /// Where it was read from (for messages).
    pub path: PathBuf,
}

impl std::fmt::Debug for CheckpointKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CheckpointKey")
            .field("path", &self.path)
            .field("public", &hex(self.key.verifying_key().as_bytes()))
            .finish()
    }
}

impl CheckpointKey {
    /// Reads a PKCS#8 PEM Ed25519 private key, refusing a file others may read or write.
    pub fn load(path: &Path) -> Result<CheckpointKey, KeyError> {
        let unreadable = |e: io::Error| key_err(path, format!("cannot be read: {e}"));
        let mut f = OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_CLOEXEC | libc::O_NOFOLLOW)
            .open(path)
            .map_err(|e| match e.raw_os_error() {
                Some(libc::ELOOP) => key_err(
                    path,
                    "is a symbolic link; name the key file itself (a link can be repointed)",
                ),
                _ => key_err(
                    path,
                    format!("cannot be read: {e}; make one with `rootfence audit keygen`"),
                ),
            })?;
        let m = f.metadata().map_err(unreadable)?;
        if !m.is_file() {
            return Err(key_err(path, "is not a regular file"));
        }
        if m.mode() & 0o077 != 0 {
            return Err(key_err(
                path,
                format!(
                    "is readable or writable by group or others (mode {:o}); run `chmod 600 {}`",
                    m.mode() & 0o777,
                    path.display()
                ),
            ));
        }
        let me = nix::unistd::geteuid().as_raw();
        if m.uid() != me && m.uid() != 0 {
            return Err(key_err(
                path,
                format!(
                    "is owned by uid {}, not by the user running rootfence (uid {me}) or root",
                    m.uid()
                ),
            ));
        }
        if m.len() > MAX_KEY_FILE {
            return Err(key_err(path, "is too large to be a PEM key"));
        }
        let mut text = String::new();
        f.read_to_string(&mut text).map_err(unreadable)?;
        let key = SigningKey::from_pkcs8_pem(&text).map_err(|e| {
            key_err(
                path,
                format!(
                    "is not a PKCS#8 PEM Ed25519 private key ({e}); make one with \
                     `rootfence audit keygen` or `openssl genpkey -algorithm ed25519`"
                ),
            )
        })?;
        Ok(CheckpointKey {
            key: Arc::new(key),
            path: path.to_path_buf(),
        })
    }

    /// The public half.
    pub fn verifying_key(&self) -> VerifyingKey {
        self.key.verifying_key()
    }
}

/// Reads an SPKI PEM Ed25519 public key (`rootfence audit keygen`'s `.pub` file).
pub fn load_public_key(path: &Path) -> Result<VerifyingKey, KeyError> {
    let err = |what: String| KeyError(format!("public key {}: {what}", path.display()));
    let text = std::fs::read_to_string(path).map_err(|e| err(format!("cannot be read: {e}")))?;
    VerifyingKey::from_public_key_pem(&text).map_err(|e| {
        err(format!(
            "not an SPKI PEM Ed25519 public key ({e}); give the .pub file `rootfence audit \
             keygen` wrote (or `openssl pkey -pubout`)"
        ))
    })
}

/// Makes a key pair: `private` (created, mode 0600; an existing file is never replaced) and
/// `public` (mode 0644). Returns the public key.
pub fn keygen(private: &Path, public: &Path) -> Result<VerifyingKey, KeyError> {
    let mut seed = [0u8; 32];
    File::open("/dev/urandom")
        .and_then(|mut f| f.read_exact(&mut seed))
        .map_err(|e| KeyError(format!("cannot read the kernel's random source: {e}")))?;
    let key = SigningKey::from_bytes(&seed);
    seed.fill(0);
    let pem = key
        .to_pkcs8_pem(ed25519_dalek::pkcs8::spki::der::pem::LineEnding::LF)
        .map_err(|e| KeyError(format!("cannot encode the private key: {e}")))?;
    let vk = key.verifying_key();
    let pub_pem = vk
        .to_public_key_pem(ed25519_dalek::pkcs8::spki::der::pem::LineEnding::LF)
        .map_err(|e| KeyError(format!("cannot encode the public key: {e}")))?;
    for p in [private, public] {
        if std::fs::symlink_metadata(p).is_ok() {
            return Err(KeyError(format!(
                "{} already exists; keygen never replaces a key (move it aside or choose \
                 another name)",
                p.display()
            )));
        }
    }
    let create = |p: &Path, mode: u32, bytes: &[u8]| -> Result<(), KeyError> {
        let mut f = OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(mode)
            .custom_flags(libc::O_CLOEXEC | libc::O_NOFOLLOW)
            .open(p)
            .map_err(|e| KeyError(format!("cannot create {}: {e}", p.display())))?;
        f.write_all(bytes)
            .and_then(|()| f.sync_all())
            .map_err(|e| KeyError(format!("cannot write {}: {e}", p.display())))
    };
    create(private, 0o600, pem.as_bytes())?;
    create(public, 0o644, pub_pem.as_bytes())?;
    Ok(vk)
}

/// What the server may reach: each directory or file by the kernel's identity (device,
/// inode), with words naming it for the message.
pub type Reach = Vec<((u64, u64), String)>;

/// The identity of `path` (following links), if it exists.
pub fn identity(path: &Path) -> Option<(u64, u64)> {
    std::fs::metadata(path).ok().map(|m| (m.dev(), m.ino()))
}

/// Refuses `path` when it lies beneath one of `reach` (the server's roots and sandbox
/// grants), judged by the identity of each directory on the way up from where `path`
/// really is, so links, `..` and bind mounts do not hide it. `what` names the path in the
/// message.
pub fn outside_reach(
    what: &str,
    path: &Path,
    reach: &[((u64, u64), String)],
) -> Result<(), String> {
    // The file itself may not exist yet (a checkpoint file): judge its directory.
    let mut at = std::fs::canonicalize(path).ok().or_else(|| {
        let dir = std::fs::canonicalize(super::dir_of(path)).ok()?;
        Some(dir.join(path.file_name()?))
    });
    while let Some(p) = at {
        if let Some(id) = identity(&p)
            && let Some((_, why)) = reach.iter().find(|(r, _)| *r == id)
        {
            return Err(format!(
                "{what} {} is inside {why}, where the server can reach it; move it outside \
                 every root and sandbox grant (e.g. to /etc/rootfence/ or ~/.config/rootfence/)",
                path.display(),
            ));
        }
        at = p.parent().map(Path::to_path_buf);
    }
    Ok(())
}

/// How the writer checkpoints.
#[derive(Debug, Clone)]
pub struct CheckpointConfig {
    /// The signing key.
    pub key: CheckpointKey,
    /// The checkpoint file (JSON Lines, appended; never rotated).
    pub path: PathBuf,
    /// Checkpoint after this many records written by this session since the last one.
    pub every_records: u64,
    /// Checkpoint this long after the last one, when records were written since.
    pub every: Duration,
}

impl CheckpointConfig {
    /// The defaults for `key`: beside the log as `<stem>.checkpoints.jsonl` (not matched by
    /// `audit.jsonl*`, so a glob over the log's files does not pick it up).
    pub fn new(key: CheckpointKey, log: &Path) -> CheckpointConfig {
        CheckpointConfig {
            key,
            path: default_path(log),
            every_records: DEFAULT_EVERY_RECORDS,
            every: DEFAULT_EVERY,
        }
    }
}

/// `<dir>/<log stem>.checkpoints.jsonl`.
pub fn default_path(log: &Path) -> PathBuf {
    let stem = log
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_else(|| "audit".into());
    log.with_file_name(format!("{stem}.checkpoints.jsonl"))
}

/// A copy of each checkpoint line (syslog), called on the writer thread.
pub(super) type CopyFn = Box<dyn FnMut(&[u8]) + Send>;

/// The writer thread's checkpointing state.
pub(super) struct Checkpointer {
    cfg: CheckpointConfig,
    public_hex: String,
    last_at: Instant,
    /// Records written by this session since its last checkpoint.
    pub(super) pending: u64,
    /// The head seq of this session's last checkpoint.
    pub(super) last_seq: u64,
    /// A copy of each checkpoint line goes here too (syslog), when set.
    pub(super) copy: Option<CopyFn>,
}

impl Checkpointer {
    pub(super) fn new(cfg: CheckpointConfig) -> Checkpointer {
        Checkpointer {
            public_hex: hex(cfg.key.verifying_key().as_bytes()),
            cfg,
            last_at: Instant::now(),
            pending: 0,
            last_seq: 0,
            copy: None,
        }
    }

    /// Whether a checkpoint is due now.
    pub(super) fn due(&self, now: Instant) -> bool {
        self.pending > 0
            && (self.pending >= self.cfg.every_records
                || now.duration_since(self.last_at) >= self.cfg.every)
    }

    /// When the next checkpoint by time is due, if records wait for one.
    pub(super) fn deadline(&self) -> Option<Instant> {
        (self.pending > 0).then(|| self.last_at + self.cfg.every)
    }

    /// Signs `(seq, head)` and appends the checkpoint. Called by the sink under the log's
    /// lock, which also serialises the checkpoint file among writers sharing the log.
    pub(super) fn write(
        &mut self,
        session: &str,
        log_name: &str,
        seq: u64,
        head: &Hash,
    ) -> Result<(), AuditError> {
        let path = self.cfg.path.clone();
        let werr = |e: io::Error| AuditError::write(&path, e);
        let mut f = super::sink::open_append(&path).map_err(|e| AuditError::open(&path, e))?;
        let size = f.metadata().map_err(werr)?.len();
        let (n, prev, torn) = last_checkpoint(&f, size).map_err(werr)?;
        let mut line = Vec::with_capacity(512);
        if torn {
            // An earlier write was cut short: end that line, so ours is whole. The verifier
            // reports the broken line; nothing is edited.
            line.push(b'\n');
        }
        let start = line.len();
        let fields = Fields {
            v: 1,
            n: n + 1,
            ts: rfc3339(now_micros()),
            session: session.to_owned(),
            log: log_name.to_owned(),
            seq,
            head: hex(head),
            prev: hex(&prev),
            key: self.public_hex.clone(),
            sig: String::new(),
        };
        // Serializing to a Vec cannot fail. The closing brace goes: the signature of what
        // is written so far comes last.
        let _ = serde_json::to_writer(&mut line, &fields);
        line.pop();
        let sig = self
            .cfg
            .key
            .key
            .sign(&[SIG_CONTEXT, &line[start..]].concat());
        line.extend_from_slice(b",\"sig\":\"");
        line.extend_from_slice(hex(&sig.to_bytes()).as_bytes());
        line.extend_from_slice(b"\"}\n");
        f.write_all(&line).map_err(werr)?;
        f.sync_data().map_err(werr)?;
        if let Some(copy) = self.copy.as_mut() {
            copy(&line[start..line.len() - 1]);
        }
        self.pending = 0;
        self.last_seq = seq;
        self.last_at = Instant::now();
        Ok(())
    }

    /// After a failed attempt: try again a period later, not at once (the writer would
    /// spin), or with the next batch.
    pub(super) fn retry_later(&mut self) {
        self.last_at = Instant::now();
    }
}

/// The number and hash of the file's last checkpoint line, and whether the file ends with
/// an incomplete line.
fn last_checkpoint(f: &File, size: u64) -> io::Result<(u64, Hash, bool)> {
    if size == 0 {
        return Ok((0, GENESIS, false));
    }
    let window = size.min(64 * 1024);
    let mut buf = vec![0u8; window as usize];
    f.read_exact_at(&mut buf, size - window)?;
    let torn = buf.last() != Some(&b'\n');
    let body = buf.strip_suffix(b"\n").unwrap_or(&buf);
    let line = memchr::memrchr(b'\n', body).map_or(body, |i| &body[i + 1..]);
    let n = serde_json::from_slice::<Fields>(line).map_or(0, |c| c.n);
    Ok((n, chain::sha256(line), torn))
}

/// The fields of a checkpoint line, in the order they are written (`sig` is appended after
/// the others are signed).
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct Fields {
    v: u32,
    n: u64,
    ts: String,
    session: String,
    log: String,
    seq: u64,
    head: String,
    prev: String,
    key: String,
    #[serde(skip_serializing)]
    sig: String,
}

/// One verified checkpoint.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Checkpoint {
    /// Its line in the checkpoint file (1-based).
    pub line: u64,
    /// Its number.
    pub n: u64,
    /// When it was signed.
    pub ts: String,
    /// The seq it covers.
    pub seq: u64,
    /// The hash of record `seq`.
    pub head: Hash,
}

/// A checkpoint file, read and checked against a public key.
#[derive(Debug, Clone, Default)]
pub struct Checkpoints {
    /// The file.
    pub file: PathBuf,
    /// Every checkpoint up to the first bad line, in file order.
    pub list: Vec<Checkpoint>,
    /// The first bad line and why (forged, altered, reordered, removed...).
    pub broken: Option<String>,
}

impl Checkpoints {
    /// Reads `file` and checks every line: its signature under `key`, its chaining to the
    /// line before (`prev`, `n`), and that heads only move forward.
    pub fn read(file: &Path, key: &VerifyingKey) -> io::Result<Checkpoints> {
        let text = std::fs::read(file).map_err(|e| super::read::with_path(file, e))?;
        let mut out = Checkpoints {
            file: file.to_path_buf(),
            ..Checkpoints::default()
        };
        let want_key = hex(key.as_bytes());
        let mut prev_hash = GENESIS;
        let mut prev: Option<&Checkpoint> = None;
        let mut list = Vec::new();
        // Each line with its `\n`: the file's final `\n` ends a line and starts none.
        for (no, line) in (1u64..).zip(text.split_inclusive(|&b| b == b'\n')) {
            let line = line.strip_suffix(b"\n").unwrap_or(line);
            match check_line(line, no, &want_key, key, &prev_hash, prev) {
                Ok(c) => {
                    prev_hash = chain::sha256(line);
                    list.push(c);
                    prev = list.last();
                }
                Err(why) => {
                    out.broken = Some(format!(
                        "{}: line {no}: {why}",
                        super::show::disp_path(file)
                    ));
                    break;
                }
            }
        }
        out.list = list;
        Ok(out)
    }

    /// The checkpoints by the seq they cover (the last one for a seq).
    pub(super) fn by_seq(&self) -> BTreeMap<u64, &Checkpoint> {
        self.list.iter().map(|c| (c.seq, c)).collect()
    }
}

fn check_line(
    line: &[u8],
    no: u64,
    want_key: &str,
    key: &VerifyingKey,
    prev_hash: &Hash,
    prev: Option<&Checkpoint>,
) -> Result<Checkpoint, String> {
    let f: Fields = serde_json::from_slice(line)
        .map_err(|e| format!("not a checkpoint line (torn or edited): {e}"))?;
    if f.v != 1 {
        return Err(format!(
            "checkpoint format version {} is not supported",
            f.v
        ));
    }
    if f.key != want_key {
        return Err(format!(
            "signed by another key ({}), not the public key given: a forged checkpoint, or \
             the wrong --pubkey",
            f.key
        ));
    }
    const SIG: &[u8] = b",\"sig\":\"";
    let at = memchr::memmem::rfind(line, SIG)
        .filter(|_| line.ends_with(b"\"}"))
        .ok_or("the signature is not the last field")?;
    let sig_hex = &line[at + SIG.len()..line.len() - 2];
    if sig_hex != f.sig.as_bytes() {
        return Err("the signature is not the last field".into());
    }
    let sig = parse_hex::<64>(sig_hex)
        .map(|b| Signature::from_bytes(&b))
        .ok_or("the signature is not 128 lowercase hex digits")?;
    key.verify(&[SIG_CONTEXT, &line[..at]].concat(), &sig)
        .map_err(|_| {
            "the signature does not verify: this checkpoint was forged or altered after it was \
         signed"
                .to_owned()
        })?;
    let head = parse_hex::<32>(f.head.as_bytes()).ok_or("head is not 64 lowercase hex digits")?;
    let chained =
        parse_hex::<32>(f.prev.as_bytes()).ok_or("prev is not 64 lowercase hex digits")?;
    let want_n = prev.map_or(1, |p| p.n + 1);
    if chained != *prev_hash || f.n != want_n {
        let what = if no == 1 {
            "the first line does not start a checkpoint chain (n 1, zero prev): earlier \
             checkpoints were removed"
                .to_owned()
        } else {
            format!(
                "checkpoint n {} does not follow the one before it (n {}): checkpoints were \
                 removed, inserted or reordered",
                f.n,
                want_n - 1
            )
        };
        return Err(what);
    }
    if let Some(p) = prev
        && (f.seq < p.seq || (f.seq == p.seq && head != p.head))
    {
        return Err(format!(
            "checkpoint n {} signs seq {} after checkpoint n {} signed seq {}: the log was \
             rewound or replaced between them",
            f.n, f.seq, p.n, p.seq
        ));
    }
    Ok(Checkpoint {
        line: no,
        n: f.n,
        ts: f.ts,
        seq: f.seq,
        head,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key() -> CheckpointKey {
        CheckpointKey {
            key: Arc::new(SigningKey::from_bytes(&[7; 32])),
            path: PathBuf::from("k"),
        }
    }

    fn write_n(path: &Path, heads: &[(u64, Hash)]) {
        let cfg = CheckpointConfig {
            key: key(),
            path: path.to_path_buf(),
            every_records: 1,
            every: Duration::from_secs(1),
        };
        let mut c = Checkpointer::new(cfg);
        for (seq, h) in heads {
            c.write("00112233445566778899aabbccddeeff", "audit.jsonl", *seq, h)
                .unwrap();
        }
    }

    #[test]
    fn written_checkpoints_verify_and_tampering_is_named() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("c.jsonl");
        write_n(
            &p,
            &[(3, [1; 32]), (9, [2; 32]), (9, [2; 32]), (12, [3; 32])],
        );
        let vk = key().verifying_key();
        let c = Checkpoints::read(&p, &vk).unwrap();
        assert_eq!(c.broken, None);
        assert_eq!(c.list.len(), 4);
        assert_eq!(c.list[3].seq, 12);
        assert_eq!(c.list[3].head, [3; 32]);

        let text = std::fs::read_to_string(&p).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        let cases: Vec<(String, &str)> = vec![
            // A forged head: the signature no longer matches.
            (
                text.replacen(&chain::hex(&[3; 32]), &chain::hex(&[4; 32]), 1),
                "line 4: the signature does not verify",
            ),
            // Two lines swapped.
            (
                format!("{}\n{}\n{}\n{}\n", lines[0], lines[2], lines[1], lines[3]),
                "line 2: checkpoint n 3 does not follow",
            ),
            // One removed from the middle.
            (
                format!("{}\n{}\n{}\n", lines[0], lines[2], lines[3]),
                "line 2: checkpoint n 3 does not follow",
            ),
            // The first removed.
            (
                format!("{}\n", lines[1]),
                "line 1: the first line does not start",
            ),
            (format!("{}x\n", lines[0]), "line 1: not a checkpoint line"),
        ];
        for (t, want) in cases {
            std::fs::write(&p, &t).unwrap();
            let c = Checkpoints::read(&p, &vk).unwrap();
            let b = c.broken.unwrap_or_default();
            assert!(b.contains(want), "{b} lacks {want}");
        }
        // Another key's checkpoints.
        std::fs::write(&p, &text).unwrap();
        let other = SigningKey::from_bytes(&[8; 32]).verifying_key();
        let b = Checkpoints::read(&p, &other).unwrap().broken.unwrap();
        assert!(b.contains("signed by another key"), "{b}");
    }

    #[test]
    fn keys_round_trip_and_loose_modes_are_refused() {
        use std::os::unix::fs::PermissionsExt;
        let d = tempfile::tempdir().unwrap();
        let sk = d.path().join("k");
        let pk = d.path().join("k.pub");
        let vk = keygen(&sk, &pk).unwrap();
        assert_eq!(
            std::fs::metadata(&sk).unwrap().permissions().mode() & 0o777,
            0o600
        );
        assert_eq!(CheckpointKey::load(&sk).unwrap().verifying_key(), vk);
        assert_eq!(load_public_key(&pk).unwrap(), vk);
        assert!(keygen(&sk, &d.path().join("x")).is_err(), "never replaces");
        std::fs::set_permissions(&sk, std::fs::Permissions::from_mode(0o640)).unwrap();
        let e = CheckpointKey::load(&sk).unwrap_err().0;
        assert!(e.contains("group or others (mode 640)"), "{e}");
        let link = d.path().join("link");
        std::os::unix::fs::symlink(&sk, &link).unwrap();
        let e = CheckpointKey::load(&link).unwrap_err().0;
        assert!(e.contains("symbolic link"), "{e}");
        assert!(
            CheckpointKey::load(&pk).is_err(),
            "a public key is not a private key"
        );
    }

    #[test]
    fn reach_is_judged_by_directory_identity() {
        let d = tempfile::tempdir().unwrap();
        let root = d.path().join("root");
        std::fs::create_dir_all(root.join("sub")).unwrap();
        let inside = root.join("sub/../sub/key");
        let outside = d.path().join("key");
        let reach = vec![(identity(&root).unwrap(), "root".to_owned())];
        assert!(outside_reach("k", &inside, &reach).is_err());
        assert!(outside_reach("k", &outside, &reach).is_ok());
        let link = d.path().join("via-link");
        std::os::unix::fs::symlink(root.join("sub"), &link).unwrap();
        assert!(outside_reach("k", &link.join("key"), &reach).is_err());
    }
}
