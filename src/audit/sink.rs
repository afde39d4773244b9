//! The file side of the writer: one [`Sink`] per log, owned by the writer thread. It takes
//! the log's lock once per batch, brings its idea of the chain head up to date, builds every
//! record of the batch into one buffer and hands it to the kernel with one `write()`, then
//! syncs per the policy; it rotates, applies retention, and recovers from a torn final line.
//!
//! # Why a lock per batch
//!
//! Several rootfence processes (one per wrapped server, all on the default path) may log to
//! one file. Each batch takes an exclusive `flock` on a sidecar `.<name>.lock`, checks that
//! its cached chain head still describes the file (same inode, same size), re-reads the
//! tail if another writer appended or rotated, then appends. So one file carries one chain
//! whatever the number of writers, and a lock held by a dead process is released by the
//! kernel. The lock is on a sidecar because rotation renames the log itself.
//!
//! # Durability
//!
//! A batch is built whole (every record's envelope, body and `\n`) and handed to the kernel
//! with one `write()` on an `O_APPEND` descriptor, with no user-space buffer kept across
//! batches. A write to a regular file is only cut short when it fails or when the process is
//! killed part-way through a multi-page write, so a kill -9 leaves whole records and at most
//! one incomplete final line. A writer that finds a log ending with an incomplete line never
//! edits it: it renames the file aside as the next rotated file and starts the new file with
//! a `log_recovered` record naming it and the hash of the torn bytes, chained from the last
//! complete record.

use std::fs::{File, OpenOptions};
use std::io::{self, Write};
use std::os::unix::fs::{DirBuilderExt, FileExt, MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

use nix::fcntl::{Flock, FlockArg};
use sha2::{Digest, Sha256};

use super::chain::{self, GENESIS, Hash};
use super::checkpoint::Checkpointer;
use super::event::{Event, LogPruned, LogRecovered, LogRewound, SinkDropped};
use super::retain;
use super::syslog::{Kind, REPORT_INTERVAL, Syslog};
use super::time::now_micros;
use super::{AuditConfig, AuditError, FsyncPolicy};

/// One record to write: its time, its body (from `Event::write_body`) and whether the
/// default fsync policy syncs for it.
pub(super) type Item<'a> = (i64, &'a [u8], bool);

/// The chain head as this writer last saw it, and which file it describes.
#[derive(Debug, Clone, Copy)]
struct Head {
    seq: u64,
    hash: Hash,
    ino: u64,
    /// The file's size, including what this writer wrote.
    size: u64,
}

/// The writer thread's view of the log.
pub(super) struct Sink {
    /// The log's settings (its checkpoint and syslog settings are taken out into
    /// `checkpoint` and `syslog`).
    pub(super) cfg: AuditConfig,
    dir: PathBuf,
    name: String,
    session: Arc<str>,
    lock: Option<File>,
    file: Option<File>,
    head: Option<Head>,
    recovered: Option<LogRecovered>,
    rewound: Option<LogRewound>,
    /// The batch being built: whole lines, written with one `write()`.
    out: Vec<u8>,
    /// When a write not yet synced happened (interval policy).
    pub(super) dirty_since: Option<Instant>,
    /// Records this session wrote, for `session_end`.
    pub(super) session_records: u64,
    /// Signed checkpoints of the chain head, when configured.
    pub(super) checkpoint: Option<Checkpointer>,
    /// Every written line is also queued here, when configured.
    pub(super) syslog: Option<Syslog>,
}

impl Sink {
    pub(super) fn new(cfg: &AuditConfig, session: &Arc<str>) -> Result<Sink, AuditError> {
        let path = cfg.path.clone();
        let name = path
            .file_name()
            .and_then(|n| n.to_str())
            .ok_or_else(|| {
                AuditError::open(
                    &path,
                    io::Error::new(
                        io::ErrorKind::InvalidInput,
                        "the audit log path must end with a UTF-8 file name",
                    ),
                )
            })?
            .to_owned();
        let dir = super::dir_of(&path).to_path_buf();
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(&dir)
            .map_err(|e| AuditError::open(&dir, e))?;
        let lock_path = dir.join(format!(".{name}.lock"));
        let lock = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .mode(0o600)
            .open(&lock_path)
            .map_err(|e| AuditError::open(&lock_path, e))?;
        let mut cfg = cfg.clone();
        let syslog = cfg.syslog.take().map(Syslog::start).transpose();
        let syslog = syslog.map_err(|e| AuditError::open(&path, e))?;
        let mut checkpoint = cfg.checkpoint.take().map(Checkpointer::new);
        if let (Some(c), Some(s)) = (checkpoint.as_mut(), syslog.as_ref()) {
            let h = s.handle.clone();
            c.copy = Some(Box::new(move |line| h.push(line, Kind::Checkpoint)));
        }
        Ok(Sink {
            syslog,
            checkpoint,
            cfg,
            dir,
            name,
            session: Arc::clone(session),
            lock: Some(lock),
            file: None,
            head: None,
            recovered: None,
            rewound: None,
            out: Vec::with_capacity(64 * 1024),
            dirty_since: None,
            session_records: 0,
        })
    }

    /// Syncs the active file's data.
    pub(super) fn sync(&mut self) -> Result<(), AuditError> {
        if let Some(f) = &self.file {
            f.sync_data()
                .map_err(|e| AuditError::write(&self.cfg.path, e))?;
        }
        self.dirty_since = None;
        Ok(())
    }

    /// Appends `items` under the lock with one `write()` (two or more only when the batch
    /// crosses a rotation), then syncs if the policy says so for any of them.
    pub(super) fn write_batch(&mut self, items: &[Item<'_>]) -> Result<(), AuditError> {
        self.locked(|s| {
            let r = s.write_locked(items);
            if r.is_err() {
                // Re-read the file's state next time: the failed write may have left a torn
                // line.
                s.head = None;
                s.out.clear();
            }
            r
        })
    }

    /// Runs `f` holding the log's lock.
    fn locked(
        &mut self,
        f: impl FnOnce(&mut Self) -> Result<(), AuditError>,
    ) -> Result<(), AuditError> {
        let lock = self.lock.take().ok_or(AuditError::Closed)?;
        let locked = match Flock::lock(lock, FlockArg::LockExclusive) {
            Ok(l) => l,
            Err((lock, errno)) => {
                self.lock = Some(lock);
                return Err(AuditError::write(&self.cfg.path, io::Error::from(errno)));
            }
        };
        let r = f(self);
        // Unlocking only fails on a bad descriptor; dropping the Flock unlocks too.
        self.lock = Some(match locked.unlock() {
            Ok(f) => f,
            Err((l, _)) => {
                drop(l);
                return r.and(Err(AuditError::Closed));
            }
        });
        r
    }

    /// A `sink_dropped` record when the syslog sink dropped lines since the last one, at
    /// most every [`REPORT_INTERVAL`] (at once when `closing`).
    pub(super) fn sink_dropped_due(&mut self, now: Instant, closing: bool) -> Option<SinkDropped> {
        let s = self.syslog.as_mut()?;
        let (total, reason) = s.handle.dropped();
        if total <= s.reported
            || (!closing
                && s.reported_at
                    .is_some_and(|t| now.duration_since(t) < REPORT_INTERVAL))
        {
            return None;
        }
        let d = SinkDropped {
            sink: "syslog".into(),
            dropped: total - s.reported,
            total,
            reason,
        };
        s.reported = total;
        s.reported_at = Some(now);
        Some(d)
    }

    /// Sends what the syslog queue holds (for a short grace) and stops its thread; says on
    /// stderr how many lines never reached syslog beyond those already audited.
    pub(super) fn close_syslog(&mut self) {
        if let Some(mut s) = self.syslog.take() {
            let lost = s.close(super::syslog::CLOSE_GRACE);
            if lost > s.reported {
                let (_, why) = s.handle.dropped();
                tracing::warn!(
                    "syslog: {} audit records were not delivered at session end ({why}); the \
                     log file has them all",
                    lost - s.reported
                );
            }
        }
    }

    /// When a checkpoint is due by time (records wait for one).
    pub(super) fn checkpoint_deadline(&self) -> Option<Instant> {
        self.checkpoint.as_ref().and_then(Checkpointer::deadline)
    }

    /// Signs the chain head and appends a checkpoint, when one is due (after N records or
    /// T time) or, with `force`, whenever records wait for one (session end). Under the
    /// log's lock, with the head brought up to date: it covers every writer's records, and
    /// writers sharing the log take turns on the checkpoint file too.
    pub(super) fn checkpoint(&mut self, force: bool) -> Result<(), AuditError> {
        let Some(mut c) = self.checkpoint.take() else {
            return Ok(());
        };
        let due = c.due(Instant::now()) || (force && c.pending > 0);
        let r = if due {
            self.locked(|s| {
                s.ensure_head()?;
                match s.head {
                    Some(h) if h.seq > 0 && h.seq != c.last_seq => {
                        c.write(&s.session, &s.name, h.seq, &h.hash)
                    }
                    _ => Ok(()),
                }
            })
        } else {
            Ok(())
        };
        if r.is_err() {
            c.retry_later();
        }
        self.checkpoint = Some(c);
        r
    }

    fn write_locked(&mut self, items: &[Item<'_>]) -> Result<(), AuditError> {
        self.ensure_head()?;
        self.out.clear();
        let mut critical = false;
        // Kept until written: a failed write leaves them for the next attempt.
        if let Some(rec) = self.recovered.clone() {
            self.push_event(&Event::LogRecovered(rec))?;
            critical = true;
        }
        if let Some(rew) = self.rewound.clone() {
            self.push_event(&Event::LogRewound(rew))?;
            critical = true;
        }
        for &(ts, body, crit) in items {
            self.push_line(ts, body, true)?;
            critical |= crit;
        }
        self.write_out()?;
        let must_sync = match self.cfg.fsync {
            FsyncPolicy::Always => true,
            FsyncPolicy::Denials => critical,
            FsyncPolicy::Interval(d) => {
                let since = *self.dirty_since.get_or_insert_with(Instant::now);
                since.elapsed() >= d
            }
            FsyncPolicy::Never => false,
        };
        if must_sync {
            self.sync()?;
        } else if self.cfg.fsync != FsyncPolicy::Never {
            self.dirty_since.get_or_insert_with(Instant::now);
        }
        Ok(())
    }

    fn push_event(&mut self, event: &Event) -> Result<(), AuditError> {
        self.push_line(now_micros(), &event.body(), true)
    }

    /// Adds one record to the batch, chained from the head; when it would overflow the
    /// active file, writes what is before it and rotates first. `may_rotate` is false once
    /// this line caused a rotation: retention's `log_pruned` record opens the new file, and
    /// when it and the line together exceed `rotate_bytes`, rotating again would loop
    /// forever (each turn pruning a file).
    fn push_line(&mut self, ts: i64, body: &[u8], may_rotate: bool) -> Result<(), AuditError> {
        let head = self.head.ok_or(AuditError::Closed)?;
        let start = self.out.len();
        chain::append_line(
            head.seq + 1,
            ts,
            &self.session,
            &head.hash,
            body,
            &mut self.out,
        );
        if let Some(max) = self.cfg.rotate_bytes.filter(|_| may_rotate) {
            let before = head.size + start as u64;
            if before > 0 && before + (self.out.len() - start) as u64 > max {
                self.out.truncate(start);
                self.write_out()?;
                self.rotate()?;
                // The line is built again: rotation may have added a record before it.
                return self.push_line(ts, body, false);
            }
        }
        let head = self.head.as_mut().ok_or(AuditError::Closed)?;
        head.seq += 1;
        head.hash = chain::sha256(&self.out[start..self.out.len() - 1]);
        self.session_records += 1;
        if let Some(c) = self.checkpoint.as_mut() {
            c.pending += 1;
        }
        Ok(())
    }

    /// Hands the batch built so far to the kernel: one `write()` unless it fails part-way
    /// (a short write only happens when the disk is full or a limit is hit, and then the
    /// retry inside `write_all` reports it).
    fn write_out(&mut self) -> Result<(), AuditError> {
        if self.out.is_empty() {
            return Ok(());
        }
        let file = self.file.as_mut().ok_or(AuditError::Closed)?;
        file.write_all(&self.out)
            .map_err(|e| AuditError::write(&self.cfg.path, e))?;
        if let Some(s) = &self.syslog {
            for line in self.out.split(|&b| b == b'\n').filter(|l| !l.is_empty()) {
                s.handle.push(line, Kind::Record);
            }
        }
        if let Some(tee) = &self.cfg.tee {
            (tee.0)(&self.out);
        }
        let head = self.head.as_mut().ok_or(AuditError::Closed)?;
        head.size += self.out.len() as u64;
        self.out.clear();
        // They are always first in a batch, so they are written now.
        self.recovered = None;
        self.rewound = None;
        Ok(())
    }

    /// Makes `file` and `head` describe the log as it is now.
    fn ensure_head(&mut self) -> Result<(), AuditError> {
        if let (Some(file), Some(head)) = (&self.file, &self.head) {
            let fm = file.metadata();
            let pm = std::fs::metadata(&self.cfg.path);
            if let (Ok(fm), Ok(pm)) = (fm, pm)
                && fm.dev() == pm.dev()
                && fm.ino() == pm.ino()
                && fm.ino() == head.ino
                && fm.len() == head.size
            {
                return Ok(());
            }
        }
        self.reload()
    }

    /// Reads the chain head from disk (under the lock), setting aside a torn active file.
    fn reload(&mut self) -> Result<(), AuditError> {
        self.file = None;
        // What this writer last knew; None after a failed write, when it knows nothing.
        let before = self.head.take();
        let mut file = self.open_active()?;
        let size = file.metadata().map_err(|e| self.open_err(e))?.len();
        let mut head: Option<(u64, Hash)> = None;
        if size > 0 {
            let tail = read_tail(&file, size).map_err(|e| self.open_err(e))?;
            match tail.torn {
                None => {
                    let line = tail.last_line.unwrap_or_default();
                    head = Some(head_from_line(&line, &self.cfg.path)?);
                }
                Some(torn) => {
                    // Evidence is never edited: the damaged file becomes a rotated file,
                    // and the next record says so.
                    let aside = self.set_aside()?;
                    self.recovered = Some(LogRecovered {
                        file: file_name(&aside),
                        ..torn
                    });
                    if let Some(line) = tail.last_line {
                        head = Some(head_from_line(&line, &aside)?);
                    }
                    file = self.open_active()?;
                }
            }
        }
        if head.is_none() {
            // An empty (or just set aside) active file continues the newest rotated file.
            let mut newest = true;
            for p in self.rotated_newest_first()? {
                let f = File::open(&p).map_err(|e| AuditError::open(&p, e))?;
                let size = f.metadata().map_err(|e| AuditError::open(&p, e))?.len();
                let tail = read_tail(&f, size).map_err(|e| AuditError::open(&p, e))?;
                if std::mem::take(&mut newest)
                    && self.recovered.is_none()
                    && let Some(torn) = tail.torn
                {
                    // Crashed after setting this file aside, before saying so.
                    self.recovered = Some(LogRecovered {
                        file: file_name(&p),
                        ..torn
                    });
                }
                if let Some(line) = tail.last_line {
                    head = Some(head_from_line(&line, &p)?);
                    break;
                }
            }
        }
        let (seq, hash) = head.unwrap_or((0, GENESIS));
        // The chain only grows (other writers append, rotation and recovery keep the head).
        // A head behind ours means records were removed while we had the log open.
        if let Some(b) = before
            && (seq < b.seq || (seq == b.seq && hash != b.hash))
        {
            self.rewound = Some(LogRewound {
                expected_seq: b.seq,
                expected_hash: chain::hex(&b.hash),
                found_seq: seq,
            });
        }
        let m = file.metadata().map_err(|e| self.open_err(e))?;
        self.head = Some(Head {
            seq,
            hash,
            ino: m.ino(),
            size: m.len(),
        });
        self.file = Some(file);
        Ok(())
    }

    fn open_err(&self, e: io::Error) -> AuditError {
        AuditError::open(&self.cfg.path, e)
    }

    fn open_active(&self) -> Result<File, AuditError> {
        open_append(&self.cfg.path).map_err(|e| self.open_err(e))
    }

    /// Rotates the full active file (under the lock) and opens a new one.
    fn rotate(&mut self) -> Result<(), AuditError> {
        if let Some(f) = &self.file
            && self.cfg.fsync != FsyncPolicy::Never
        {
            f.sync_data()
                .map_err(|e| AuditError::write(&self.cfg.path, e))?;
        }
        self.set_aside()?;
        let file = self.open_active()?;
        let m = file.metadata().map_err(|e| self.open_err(e))?;
        if let Some(h) = self.head.as_mut() {
            h.ino = m.ino();
            h.size = m.len();
        }
        self.file = Some(file);
        self.prune()
    }

    /// Retention, right after a rotation: removes the oldest rotated files beyond the
    /// limits, once a `log_pruned` record naming where the chain now starts is written (and
    /// synced, unless the policy is `never`). A crash in between leaves files that the next
    /// rotation removes; never a chain that starts where no record says it may.
    fn prune(&mut self) -> Result<(), AuditError> {
        if self.cfg.retain_files.is_none() && self.cfg.retain_bytes.is_none() {
            return Ok(());
        }
        let rotated = self.rotated_newest_first()?;
        let sizes: Vec<u64> = rotated
            .iter()
            .map(|p| std::fs::symlink_metadata(p).map_or(0, |m| m.len()))
            .collect();
        let keep = retain::keep_count(&sizes, self.cfg.retain_files, self.cfg.retain_bytes);
        if keep == rotated.len() {
            return Ok(());
        }
        let head = self.head.ok_or(AuditError::Closed)?;
        // The first complete record of the oldest file kept, or, when no rotated file is
        // kept, the record about to be written (this log_pruned record itself).
        let mut first = (self.name.clone(), head.seq + 1, head.hash);
        for p in rotated[..keep].iter().rev() {
            match retain::first_line(p)
                .map(|l| l.map(|l| chain::parse_envelope(&l).map(|e| (e.seq, e.prev))))
            {
                Ok(None) => continue,
                Ok(Some(Ok((seq, prev)))) => {
                    first = (file_name(p), seq, prev);
                    break;
                }
                // Not a file this writer can vouch for: keep everything rather than guess
                // where the chain starts.
                Ok(Some(Err(why))) => {
                    tracing::warn!(
                        "audit retention skipped: {} does not start with an audit record ({why})",
                        p.display()
                    );
                    return Ok(());
                }
                Err(e) => {
                    tracing::warn!("audit retention skipped: cannot read {}: {e}", p.display());
                    return Ok(());
                }
            }
        }
        let removed = &rotated[keep..];
        let record = LogPruned {
            removed: removed.iter().rev().map(|p| file_name(p)).collect(),
            removed_bytes: sizes[keep..].iter().sum(),
            first_file: first.0,
            first_seq: first.1,
            first_prev: chain::hex(&first.2),
        };
        self.push_event(&Event::LogPruned(record))?;
        self.write_out()?;
        if self.cfg.fsync != FsyncPolicy::Never {
            self.sync()?;
        }
        for p in removed {
            match std::fs::remove_file(p) {
                Ok(()) => {}
                Err(e) if e.kind() == io::ErrorKind::NotFound => {}
                Err(e) => return Err(AuditError::write(p, e)),
            }
        }
        if self.cfg.fsync != FsyncPolicy::Never {
            let _ = File::open(&self.dir).and_then(|d| d.sync_all());
        }
        Ok(())
    }

    /// Renames the active file to the next rotated name, never replacing a file.
    fn set_aside(&mut self) -> Result<PathBuf, AuditError> {
        let next = self
            .rotated_newest_first()?
            .first()
            .and_then(|p| rotation_number(&self.name, &file_name(p)))
            .unwrap_or(0)
            + 1;
        let target = self.dir.join(format!("{}.{next:06}", self.name));
        rename_noreplace(&self.cfg.path, &target)
            .map_err(|e| AuditError::write(&self.cfg.path, e))?;
        self.file = None;
        if self.cfg.fsync != FsyncPolicy::Never {
            // Make the rename itself durable; a failure here is not worth stopping for.
            let _ = File::open(&self.dir).and_then(|d| d.sync_all());
        }
        Ok(target)
    }

    fn rotated_newest_first(&self) -> Result<Vec<PathBuf>, AuditError> {
        let rd = std::fs::read_dir(&self.dir).map_err(|e| AuditError::open(&self.dir, e))?;
        let mut found: Vec<(u64, PathBuf)> = Vec::new();
        for ent in rd {
            let ent = ent.map_err(|e| AuditError::open(&self.dir, e))?;
            if let Some(n) = ent
                .file_name()
                .to_str()
                .and_then(|s| rotation_number(&self.name, s))
            {
                found.push((n, ent.path()));
            }
        }
        found.sort_by_key(|f| std::cmp::Reverse(f.0));
        Ok(found.into_iter().map(|(_, p)| p).collect())
    }
}

/// Opens (creating it, mode 0600) a file rootfence appends to: the log or its checkpoints.
pub(super) fn open_append(path: &Path) -> io::Result<File> {
    OpenOptions::new()
        .append(true)
        .read(true)
        .create(true)
        .mode(0o600)
        .custom_flags(libc::O_CLOEXEC)
        .open(path)
}

/// `Some(n)` when `file` is `<base>.<digits>`.
pub(crate) fn rotation_number(base: &str, file: &str) -> Option<u64> {
    let digits = file.strip_prefix(base)?.strip_prefix('.')?;
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    digits.parse().ok()
}

fn file_name(p: &Path) -> String {
    p.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
}

fn head_from_line(line: &[u8], path: &Path) -> Result<(u64, Hash), AuditError> {
    match chain::parse_envelope(line) {
        Ok(env) => Ok((env.seq, chain::sha256(line))),
        Err(why) => Err(AuditError::Corrupt {
            path: path.to_path_buf(),
            detail: format!("its last line is not an audit record ({why})"),
        }),
    }
}

#[cfg(all(target_os = "linux", target_env = "gnu"))]
fn rename_noreplace(from: &Path, to: &Path) -> io::Result<()> {
    use nix::fcntl::{AT_FDCWD, RenameFlags, renameat2};
    match renameat2(AT_FDCWD, from, AT_FDCWD, to, RenameFlags::RENAME_NOREPLACE) {
        Ok(()) => Ok(()),
        // File systems without RENAME_NOREPLACE: we hold the lock, so check-then-rename
        // only races with something that is not rootfence.
        Err(nix::errno::Errno::EINVAL) => rename_checked(from, to),
        Err(e) => Err(e.into()),
    }
}

#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
fn rename_noreplace(from: &Path, to: &Path) -> io::Result<()> {
    rename_checked(from, to)
}

fn rename_checked(from: &Path, to: &Path) -> io::Result<()> {
    if std::fs::symlink_metadata(to).is_ok() {
        return Err(io::Error::new(
            io::ErrorKind::AlreadyExists,
            format!("{} already exists", to.display()),
        ));
    }
    std::fs::rename(from, to)
}

/// The end of a log file.
#[derive(Debug, Default)]
struct Tail {
    /// The last complete line, without its `\n`.
    last_line: Option<Vec<u8>>,
    /// Bytes after the last `\n`: offset, length, SHA-256 hex (the file is named by the caller).
    torn: Option<LogRecovered>,
}

const TAIL_CHUNK: u64 = 64 * 1024;

fn read_tail(f: &File, size: u64) -> io::Result<Tail> {
    let mut t = Tail::default();
    if size == 0 {
        return Ok(t);
    }
    let last_nl = rfind_newline(f, size)?;
    let complete_end = last_nl.map_or(0, |p| p + 1);
    if complete_end < size {
        let mut h = Sha256::new();
        let mut off = complete_end;
        let mut buf = vec![0u8; TAIL_CHUNK as usize];
        while off < size {
            let n = (size - off).min(TAIL_CHUNK) as usize;
            f.read_exact_at(&mut buf[..n], off)?;
            h.update(&buf[..n]);
            off += n as u64;
        }
        let digest: Hash = h.finalize().into();
        t.torn = Some(LogRecovered {
            file: String::new(),
            offset: complete_end,
            len: size - complete_end,
            sha256: chain::hex(&digest),
        });
    }
    if let Some(p) = last_nl {
        let start = rfind_newline(f, p)?.map_or(0, |q| q + 1);
        let mut line = vec![0u8; (p - start) as usize];
        f.read_exact_at(&mut line, start)?;
        t.last_line = Some(line);
    }
    Ok(t)
}

/// Offset of the last `\n` before `before`.
fn rfind_newline(f: &File, before: u64) -> io::Result<Option<u64>> {
    let mut end = before;
    let mut buf = vec![0u8; TAIL_CHUNK as usize];
    while end > 0 {
        let start = end.saturating_sub(TAIL_CHUNK);
        let n = (end - start) as usize;
        f.read_exact_at(&mut buf[..n], start)?;
        if let Some(i) = memchr::memrchr(b'\n', &buf[..n]) {
            return Ok(Some(start + i as u64));
        }
        end = start;
    }
    Ok(None)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rotation_numbers() {
        let cases = [
            ("audit.jsonl.000001", Some(1)),
            ("audit.jsonl.12", Some(12)),
            ("audit.jsonl", None),
            ("audit.jsonl.", None),
            ("audit.jsonl.1a", None),
            ("audit.jsonl.lock", None),
            (".audit.jsonl.lock", None),
            ("xaudit.jsonl.3", None),
        ];
        for (f, want) in cases {
            assert_eq!(rotation_number("audit.jsonl", f), want, "{f}");
        }
    }

    #[test]
    fn tail_finds_last_line_and_torn_bytes() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("f");
        type Case<'a> = (&'a [u8], Option<&'a [u8]>, Option<(u64, u64)>);
        let cases: &[Case] = &[
            (b"", None, None),
            (b"a\n", Some(b"a"), None),
            (b"a\nbc\n", Some(b"bc"), None),
            (b"a\nbc\nde", Some(b"bc"), Some((5, 2))),
            (b"torn", None, Some((0, 4))),
            (b"\n", Some(b""), None),
        ];
        for (content, line, torn) in cases {
            std::fs::write(&p, content).unwrap();
            let f = File::open(&p).unwrap();
            let t = read_tail(&f, content.len() as u64).unwrap();
            assert_eq!(t.last_line.as_deref(), *line, "{content:?}");
            assert_eq!(
                t.torn.as_ref().map(|t| (t.offset, t.len)),
                *torn,
                "{content:?}"
            );
        }
        // A last line longer than one read chunk.
        let long = vec![b'x'; 3 * TAIL_CHUNK as usize + 5];
        let mut content = b"first\n".to_vec();
        content.extend_from_slice(&long);
        content.push(b'\n');
        std::fs::write(&p, &content).unwrap();
        let t = read_tail(&File::open(&p).unwrap(), content.len() as u64).unwrap();
        assert_eq!(t.last_line.unwrap(), long);
    }
}
