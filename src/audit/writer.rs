//! The writer: [`AuditLog`] owns one writer thread per log; [`Auditor`] is the cheap handle
//! the relay's tasks record through.
//!
//! # Why a thread and a bounded queue
//!
//! `Auditor::record` runs on the relay's hot path, inside async tasks. It only serializes
//! the event (so bad input fails at the caller) and queues the bytes; the thread does the
//! I/O. The queue is bounded ([`QUEUE_DEPTH`]): when the disk is slower than the relay,
//! `record` waits for room instead of growing memory without bound or dropping records
//! (nothing may be lost). Callers that must know a record is on disk before they act (a
//! denial answered to the host) use `record_durable`, which resolves once the record is
//! written and, per the fsync policy, synced.
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
//! Each record is built whole (envelope, body and `\n`) and handed to the kernel with one
//! `write()` on an `O_APPEND` descriptor, with no user-space buffer, so a kill -9 leaves at
//! most one incomplete final line (a short write, which only happens when the write fails,
//! is completed by `write_all` or reported). A writer that finds a log ending with an
//! incomplete line never edits it: it renames the file aside as the next rotated file and
//! starts the new file with a `log_recovered` record naming it and the hash of the torn
//! bytes, chained from the last complete record.

use std::fs::{File, OpenOptions};
use std::io::{self, Write};
use std::os::unix::fs::{DirBuilderExt, FileExt, MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, SyncSender};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Instant;

use nix::fcntl::{Flock, FlockArg};
use sha2::{Digest, Sha256};

use super::chain::{self, GENESIS, Hash};
use super::event::{Event, LogRecovered, LogRewound, SessionEnd, SessionStart, Verdict};
use super::time::now_micros;
use super::{AuditConfig, AuditError, FsyncPolicy, OnFailure};

/// Records queued between the relay and the writer thread before `record` waits.
pub const QUEUE_DEPTH: usize = 8192;

/// Most records written under one lock acquisition.
const BATCH_MAX: usize = 512;

/// An open audit log. Records go through [`Auditor`] handles; [`AuditLog::close`] writes the
/// `session_end` record and waits until everything queued is written.
#[derive(Debug)]
pub struct AuditLog {
    auditor: Auditor,
    thread: Option<JoinHandle<()>>,
    session: Arc<str>,
}

/// A cheap, cloneable handle for recording events from any thread or task.
#[derive(Debug, Clone)]
pub struct Auditor {
    tx: SyncSender<Msg>,
    shared: Arc<Shared>,
}

#[derive(Debug)]
struct Shared {
    on_failure: OnFailure,
    log_allowed: bool,
    failed_flag: AtomicBool,
    failed: Mutex<Option<AuditError>>,
    failed_tx: tokio::sync::watch::Sender<bool>,
    allowed: AtomicU64,
    denied: AtomicU64,
    protocol_errors: AtomicU64,
}

impl Shared {
    fn set_failed(&self, err: &AuditError) {
        match self.on_failure {
            OnFailure::Stop => {
                let mut slot = self.failed.lock().unwrap_or_else(|p| p.into_inner());
                if slot.is_none() {
                    *slot = Some(err.clone());
                    self.failed_flag.store(true, Ordering::Release);
                    self.failed_tx.send_replace(true);
                }
            }
            OnFailure::Continue => {
                tracing::warn!("{err}; continuing because audit.on_failure = \"continue\"");
            }
        }
    }

    fn failed(&self) -> Option<AuditError> {
        if !self.failed_flag.load(Ordering::Acquire) {
            return None;
        }
        self.failed
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }
}

#[derive(Debug)]
enum Ack {
    Async(tokio::sync::oneshot::Sender<Result<(), AuditError>>),
    Sync(mpsc::SyncSender<Result<(), AuditError>>),
}

impl Ack {
    fn send(self, r: Result<(), AuditError>) {
        // A receiver that went away no longer cares.
        match self {
            Ack::Async(tx) => {
                let _ = tx.send(r);
            }
            Ack::Sync(tx) => {
                let _ = tx.send(r);
            }
        }
    }
}

#[derive(Debug)]
struct Rec {
    ts: i64,
    body: Vec<u8>,
    critical: bool,
    ack: Option<Ack>,
}

#[derive(Debug)]
enum Msg {
    Record(Rec),
    /// Write everything queued before it, fdatasync, then ack.
    Flush(Ack),
    /// Write `session_end` (counts filled in by the writer) and stop.
    Close(i64, Box<SessionEnd>, Ack),
    /// Write everything queued before it and stop (the log was dropped without `close`).
    Stop,
}

impl AuditLog {
    /// Opens (or creates, with its directory) the log at `cfg.path` and writes the
    /// `session_start` record before returning, so a log that cannot be written is known
    /// before the session starts. An existing file's chain is continued; a file ending with
    /// an incomplete line is set aside as described in the module docs. Prints nothing.
    pub fn open(cfg: AuditConfig, session_start: SessionStart) -> Result<AuditLog, AuditError> {
        let session: Arc<str> = new_session_id().into();
        let mut sink = Sink::new(&cfg, &session)?;
        let mut body = Vec::with_capacity(512);
        Event::SessionStart(session_start).write_body(&mut body);
        sink.write_batch(&[(now_micros(), &body[..], true)])?;

        let (failed_tx, _) = tokio::sync::watch::channel(false);
        let shared = Arc::new(Shared {
            on_failure: cfg.on_failure,
            log_allowed: cfg.log_allowed,
            failed_flag: AtomicBool::new(false),
            failed: Mutex::new(None),
            failed_tx,
            allowed: AtomicU64::new(0),
            denied: AtomicU64::new(0),
            protocol_errors: AtomicU64::new(0),
        });
        let (tx, rx) = mpsc::sync_channel(QUEUE_DEPTH);
        let thread_shared = Arc::clone(&shared);
        let thread = std::thread::Builder::new()
            .name("rootfence-audit".into())
            .spawn(move || {
                let path = sink.path.clone();
                let run = std::panic::AssertUnwindSafe(|| sink.run(&rx, &thread_shared));
                if std::panic::catch_unwind(run).is_err() {
                    // A writer that died must stop the session like a failed write would,
                    // not leave the relay logging into a closed queue unnoticed.
                    thread_shared.set_failed(&AuditError::write(
                        &path,
                        io::Error::other("the audit writer thread panicked"),
                    ));
                }
            })
            .map_err(|e| AuditError::open(&cfg.path, e))?;
        Ok(AuditLog {
            auditor: Auditor { tx, shared },
            thread: Some(thread),
            session,
        })
    }

    /// A handle for recording events.
    pub fn handle(&self) -> Auditor {
        self.auditor.clone()
    }

    /// This session's id (32 lowercase hex digits), as written in every record.
    pub fn session_id(&self) -> &str {
        &self.session
    }

    /// Writes `session_end` after everything already queued, with the decision and record
    /// counts filled in, syncs (unless the policy is `never`) and stops the writer thread.
    /// Handles used afterwards get [`AuditError::Closed`].
    pub fn close(mut self, end: SessionEnd) -> Result<(), AuditError> {
        let (tx, rx) = mpsc::sync_channel(1);
        let sent = self
            .auditor
            .tx
            .send(Msg::Close(now_micros(), Box::new(end), Ack::Sync(tx)));
        let r = match sent {
            Ok(()) => rx.recv().unwrap_or(Err(AuditError::Closed)),
            Err(_) => Err(self.auditor.closed_error()),
        };
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
        r
    }
}

impl Drop for AuditLog {
    fn drop(&mut self) {
        if let Some(t) = self.thread.take() {
            // Write what is queued, then stop; no session_end, so the log shows the session
            // did not end normally.
            let _ = self.auditor.tx.send(Msg::Stop);
            let _ = t.join();
        }
    }
}

impl Auditor {
    /// Queues `event` and returns at once (or when the queue has room again). Cheap: one
    /// serialization and a channel send, no I/O on the caller's thread.
    ///
    /// Errors: with `on_failure = "stop"`, once the log has failed every call returns the
    /// failure; the event types `session_start`, `session_end` and `log_recovered` are
    /// refused ([`AuditError::Reserved`]). With `on_failure = "continue"`, failures are only
    /// warned about on stderr.
    pub fn record(&self, event: Event) -> Result<(), AuditError> {
        match self.prepare(event)? {
            Some(rec) => self.send(rec),
            None => Ok(()),
        }
    }

    /// Like [`record`](Self::record), then waits (asynchronously) until the record is
    /// written and, when the fsync policy covers it, synced. Use it before acting on a
    /// denial, so the evidence exists before the effect.
    pub async fn record_durable(&self, event: Event) -> Result<(), AuditError> {
        let Some(mut rec) = self.prepare(event)? else {
            return Ok(());
        };
        let (tx, rx) = tokio::sync::oneshot::channel();
        rec.ack = Some(Ack::Async(tx));
        self.send(rec)?;
        let r = rx.await.unwrap_or(Err(AuditError::Closed));
        self.filter(r)
    }

    /// [`record_durable`](Self::record_durable) for synchronous code (blocks the thread;
    /// never call it from inside an async task).
    pub fn record_blocking(&self, event: Event) -> Result<(), AuditError> {
        let Some(mut rec) = self.prepare(event)? else {
            return Ok(());
        };
        let (tx, rx) = mpsc::sync_channel(1);
        rec.ack = Some(Ack::Sync(tx));
        self.send(rec)?;
        let r = rx.recv().unwrap_or(Err(AuditError::Closed));
        self.filter(r)
    }

    /// Waits until everything queued so far is written, then fdatasyncs, whatever the
    /// policy.
    pub async fn flush(&self) -> Result<(), AuditError> {
        let (tx, rx) = tokio::sync::oneshot::channel();
        self.tx
            .send(Msg::Flush(Ack::Async(tx)))
            .map_err(|_| self.closed_error())?;
        let r = rx.await.unwrap_or(Err(AuditError::Closed));
        self.filter(r)
    }

    /// The failure that stopped the log, if any (always `None` with
    /// `on_failure = "continue"`).
    pub fn failed(&self) -> Option<AuditError> {
        self.shared.failed()
    }

    /// Resolves when the log fails (never, with `on_failure = "continue"`). Made for
    /// `tokio::select!` in the relay, to stop the session.
    pub async fn failure(&self) -> AuditError {
        let mut rx = self.shared.failed_tx.subscribe();
        // The sender lives in `shared`, which we hold, so this only returns once failed.
        let _ = rx.wait_for(|f| *f).await;
        self.failed().unwrap_or(AuditError::Closed)
    }

    fn prepare(&self, event: Event) -> Result<Option<Rec>, AuditError> {
        match &event {
            Event::SessionStart(_) => return Err(AuditError::Reserved("session_start")),
            Event::SessionEnd(_) => return Err(AuditError::Reserved("session_end")),
            Event::LogRecovered(_) => return Err(AuditError::Reserved("log_recovered")),
            Event::LogRewound(_) => return Err(AuditError::Reserved("log_rewound")),
            _ => {}
        }
        if self.shared.on_failure == OnFailure::Stop
            && let Some(e) = self.shared.failed()
        {
            return Err(e);
        }
        match &event {
            Event::Decision(d) if d.decision == Verdict::Allow => {
                self.shared.allowed.fetch_add(1, Ordering::Relaxed);
                if !self.shared.log_allowed {
                    return Ok(None);
                }
            }
            Event::Decision(_) => {
                self.shared.denied.fetch_add(1, Ordering::Relaxed);
            }
            Event::ProtocolError(_) => {
                self.shared.protocol_errors.fetch_add(1, Ordering::Relaxed);
            }
            _ => {}
        }
        let ts = now_micros();
        let mut body = Vec::with_capacity(320);
        event.write_body(&mut body);
        Ok(Some(Rec {
            ts,
            body,
            critical: event.is_critical(),
            ack: None,
        }))
    }

    fn send(&self, rec: Rec) -> Result<(), AuditError> {
        self.tx
            .send(Msg::Record(rec))
            .map_err(|_| self.closed_error())
    }

    fn filter(&self, r: Result<(), AuditError>) -> Result<(), AuditError> {
        match (r, self.shared.on_failure) {
            (Err(AuditError::Closed), _) => Err(self.closed_error()),
            (Err(_), OnFailure::Continue) => Ok(()),
            (r, _) => r,
        }
    }

    fn closed_error(&self) -> AuditError {
        self.shared.failed().unwrap_or(AuditError::Closed)
    }
}

/// A random session id: 16 bytes from the kernel's CSPRNG, as hex. If `/dev/urandom` cannot
/// be read (a very odd sandbox), the hash of the time, pid and an address is unique enough
/// for an id; it is not used as a secret.
fn new_session_id() -> String {
    let mut b = [0u8; 16];
    let ok = File::open("/dev/urandom")
        .and_then(|mut f| io::Read::read_exact(&mut f, &mut b))
        .is_ok();
    if !ok {
        let seed = format!(
            "{}:{}:{:p}",
            now_micros(),
            std::process::id(),
            &b as *const _
        );
        b.copy_from_slice(&chain::sha256(seed.as_bytes())[..16]);
    }
    let h: Hash = {
        let mut h = [0u8; 32];
        h[..16].copy_from_slice(&b);
        h
    };
    chain::hex(&h)[..32].to_owned()
}

/// The chain head as this writer last saw it, and which file it describes.
#[derive(Debug, Clone, Copy)]
struct Head {
    seq: u64,
    hash: Hash,
    dev: u64,
    ino: u64,
    size: u64,
}

/// The writer thread's state.
#[derive(Debug)]
struct Sink {
    path: PathBuf,
    dir: PathBuf,
    name: String,
    fsync: FsyncPolicy,
    rotate_bytes: Option<u64>,
    session: Arc<str>,
    lock: Option<File>,
    file: Option<File>,
    head: Option<Head>,
    recovered: Option<LogRecovered>,
    rewound: Option<LogRewound>,
    line: Vec<u8>,
    /// When a write not yet synced happened (interval policy).
    dirty_since: Option<Instant>,
    session_records: u64,
    /// A failure has been reported and no write has succeeded since (warn once per streak).
    failing: bool,
}

impl Sink {
    fn new(cfg: &AuditConfig, session: &Arc<str>) -> Result<Sink, AuditError> {
        let path = cfg.path.clone();
        let name = path
            .file_name()
            .and_then(|n| n.to_str())
            .filter(|n| !n.is_empty())
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
        let dir = match path.parent() {
            Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
            _ => PathBuf::from("."),
        };
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
        Ok(Sink {
            path,
            dir,
            name,
            fsync: cfg.fsync,
            rotate_bytes: cfg.rotate_bytes,
            session: Arc::clone(session),
            lock: Some(lock),
            file: None,
            head: None,
            recovered: None,
            rewound: None,
            line: Vec::with_capacity(1024),
            dirty_since: None,
            session_records: 0,
            failing: false,
        })
    }

    /// The writer thread.
    fn run(mut self, rx: &Receiver<Msg>, shared: &Shared) {
        let mut batch: Vec<Msg> = Vec::with_capacity(BATCH_MAX);
        loop {
            let first = match (self.fsync, self.dirty_since) {
                (FsyncPolicy::Interval(d), Some(since)) => {
                    match rx.recv_timeout(d.saturating_sub(since.elapsed())) {
                        Ok(m) => m,
                        Err(RecvTimeoutError::Timeout) => {
                            self.sync_if_due(shared);
                            continue;
                        }
                        Err(RecvTimeoutError::Disconnected) => break,
                    }
                }
                _ => match rx.recv() {
                    Ok(m) => m,
                    Err(_) => break,
                },
            };
            batch.push(first);
            while batch.len() < BATCH_MAX {
                match rx.try_recv() {
                    Ok(m) => batch.push(m),
                    Err(_) => break,
                }
            }
            let mut recs: Vec<Rec> = Vec::with_capacity(batch.len());
            let mut stop = false;
            for msg in batch.drain(..) {
                match msg {
                    Msg::Record(r) => recs.push(r),
                    Msg::Flush(ack) => {
                        let r = self.flush_recs(&mut recs, shared);
                        ack.send(r.and_then(|()| self.sync(shared)));
                    }
                    Msg::Close(ts, mut end, ack) => {
                        let r = self.flush_recs(&mut recs, shared);
                        end.counts.allowed = shared.allowed.load(Ordering::Relaxed);
                        end.counts.denied = shared.denied.load(Ordering::Relaxed);
                        end.counts.protocol_errors = shared.protocol_errors.load(Ordering::Relaxed);
                        end.counts.records = self.session_records + 1;
                        let mut body = Vec::with_capacity(256);
                        Event::SessionEnd(*end).write_body(&mut body);
                        recs.push(Rec {
                            ts,
                            body,
                            critical: true,
                            ack: None,
                        });
                        let r2 = self.flush_recs(&mut recs, shared);
                        ack.send(r.and(r2));
                        stop = true;
                        break;
                    }
                    Msg::Stop => {
                        stop = true;
                        break;
                    }
                }
            }
            let _ = self.flush_recs(&mut recs, shared);
            if stop {
                break;
            }
        }
        // Whatever was written is synced before the thread ends, unless told never to.
        if self.dirty_since.is_some() && self.fsync != FsyncPolicy::Never {
            let _ = self.sync(shared);
        }
    }

    /// Writes `recs` (draining it) under one lock and acks each.
    fn flush_recs(&mut self, recs: &mut Vec<Rec>, shared: &Shared) -> Result<(), AuditError> {
        if recs.is_empty() {
            return Ok(());
        }
        let items: Vec<(i64, &[u8], bool)> = recs
            .iter()
            .map(|r| (r.ts, &r.body[..], r.critical))
            .collect();
        let r = self.write_batch(&items);
        match &r {
            Ok(()) => self.failing = false,
            Err(e) => {
                if !self.failing || shared.on_failure == OnFailure::Stop {
                    shared.set_failed(e);
                }
                self.failing = true;
            }
        }
        for rec in recs.drain(..) {
            if let Some(ack) = rec.ack {
                ack.send(r.clone());
            }
        }
        r
    }

    fn sync(&mut self, _shared: &Shared) -> Result<(), AuditError> {
        if let Some(f) = &self.file {
            f.sync_data()
                .map_err(|e| AuditError::write(&self.path, e))?;
        }
        self.dirty_since = None;
        Ok(())
    }

    fn sync_if_due(&mut self, shared: &Shared) {
        if let (FsyncPolicy::Interval(d), Some(since)) = (self.fsync, self.dirty_since)
            && since.elapsed() >= d
            && let Err(e) = self.sync(shared)
        {
            shared.set_failed(&e);
        }
    }

    /// Appends records under the lock: `(ts, body, critical)` each.
    fn write_batch(&mut self, items: &[(i64, &[u8], bool)]) -> Result<(), AuditError> {
        let lock = self.lock.take().ok_or(AuditError::Closed)?;
        let locked = match Flock::lock(lock, FlockArg::LockExclusive) {
            Ok(l) => l,
            Err((lock, errno)) => {
                self.lock = Some(lock);
                return Err(AuditError::write(&self.path, io::Error::from(errno)));
            }
        };
        let r = self.write_locked(items);
        if r.is_err() {
            // Re-read the file's state next time: the failed write may have left a torn line.
            self.head = None;
        }
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

    fn write_locked(&mut self, items: &[(i64, &[u8], bool)]) -> Result<(), AuditError> {
        self.ensure_head()?;
        let mut critical = false;
        if let Some(rec) = self.recovered.clone() {
            let mut body = Vec::with_capacity(256);
            Event::LogRecovered(rec).write_body(&mut body);
            self.append(now_micros(), &body)?;
            self.recovered = None;
            critical = true;
        }
        if let Some(rew) = self.rewound.clone() {
            let mut body = Vec::with_capacity(256);
            Event::LogRewound(rew).write_body(&mut body);
            self.append(now_micros(), &body)?;
            self.rewound = None;
            critical = true;
        }
        for &(ts, body, crit) in items {
            self.append(ts, body)?;
            critical |= crit;
        }
        let must_sync = match self.fsync {
            FsyncPolicy::Always => true,
            FsyncPolicy::Denials => critical,
            FsyncPolicy::Interval(d) => {
                let since = *self.dirty_since.get_or_insert_with(Instant::now);
                since.elapsed() >= d
            }
            FsyncPolicy::Never => false,
        };
        if must_sync {
            if let Some(f) = &self.file {
                f.sync_data()
                    .map_err(|e| AuditError::write(&self.path, e))?;
            }
            self.dirty_since = None;
        } else if self.fsync != FsyncPolicy::Never {
            self.dirty_since.get_or_insert_with(Instant::now);
        }
        Ok(())
    }

    /// Appends one record with one `write()`, rotating first if it would overflow.
    fn append(&mut self, ts: i64, body: &[u8]) -> Result<(), AuditError> {
        let head = self.head.ok_or(AuditError::Closed)?;
        chain::build_line(
            head.seq + 1,
            ts,
            &self.session,
            &head.hash,
            body,
            &mut self.line,
        );
        let len = self.line.len() as u64;
        if let Some(max) = self.rotate_bytes
            && head.size > 0
            && head.size + len > max
        {
            self.rotate()?;
        }
        let file = self.file.as_mut().ok_or(AuditError::Closed)?;
        // One write() in every case but a failing one: a short write only happens when the
        // disk is full or a limit is hit, and then the retry inside write_all reports it.
        file.write_all(&self.line)
            .map_err(|e| AuditError::write(&self.path, e))?;
        let head = self.head.as_mut().ok_or(AuditError::Closed)?;
        head.seq += 1;
        head.hash = chain::sha256(&self.line[..self.line.len() - 1]);
        head.size += len;
        self.session_records += 1;
        Ok(())
    }

    /// Makes `file` and `head` describe the log as it is now.
    fn ensure_head(&mut self) -> Result<(), AuditError> {
        if let (Some(file), Some(head)) = (&self.file, &self.head) {
            let fm = file.metadata();
            let pm = std::fs::metadata(&self.path);
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
                    head = Some(head_from_line(&line, &self.path)?);
                }
                Some((offset, len, sha256)) => {
                    // Evidence is never edited: the damaged file becomes a rotated file,
                    // and the next record says so.
                    let aside = self.set_aside()?;
                    self.recovered = Some(LogRecovered {
                        file: file_name(&aside),
                        offset,
                        len,
                        sha256,
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
                    && let Some((offset, len, sha256)) = tail.torn
                {
                    // Crashed after setting this file aside, before saying so.
                    self.recovered = Some(LogRecovered {
                        file: file_name(&p),
                        offset,
                        len,
                        sha256,
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
            dev: m.dev(),
            ino: m.ino(),
            size: m.len(),
        });
        self.file = Some(file);
        Ok(())
    }

    fn open_err(&self, e: io::Error) -> AuditError {
        AuditError::open(&self.path, e)
    }

    fn open_active(&self) -> Result<File, AuditError> {
        OpenOptions::new()
            .append(true)
            .read(true)
            .create(true)
            .mode(0o600)
            .custom_flags(libc::O_CLOEXEC)
            .open(&self.path)
            .map_err(|e| self.open_err(e))
    }

    /// Rotates the full active file (under the lock) and opens a new one.
    fn rotate(&mut self) -> Result<(), AuditError> {
        if let Some(f) = &self.file
            && self.fsync != FsyncPolicy::Never
        {
            f.sync_data()
                .map_err(|e| AuditError::write(&self.path, e))?;
        }
        self.set_aside()?;
        let file = self.open_active()?;
        let m = file.metadata().map_err(|e| self.open_err(e))?;
        if let Some(h) = self.head.as_mut() {
            h.dev = m.dev();
            h.ino = m.ino();
            h.size = m.len();
        }
        self.file = Some(file);
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
        rename_noreplace(&self.path, &target).map_err(|e| AuditError::write(&self.path, e))?;
        self.file = None;
        if self.fsync != FsyncPolicy::Never {
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
    /// Bytes after the last `\n`: offset, length, SHA-256 hex.
    torn: Option<(u64, u64, String)>,
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
        t.torn = Some((complete_end, size - complete_end, chain::hex(&digest)));
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
    fn handles_can_go_to_any_task() {
        fn assert_send_sync_clone<T: Send + Sync + Clone + 'static>() {}
        assert_send_sync_clone::<Auditor>();
        fn assert_send<T: Send>() {}
        assert_send::<AuditLog>();
    }

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
            assert_eq!(t.torn.as_ref().map(|t| (t.0, t.1)), *torn, "{content:?}");
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

    #[test]
    fn session_ids_are_hex_and_distinct() {
        let a = new_session_id();
        let b = new_session_id();
        assert_eq!(a.len(), 32);
        assert!(a.bytes().all(|c| c.is_ascii_hexdigit()));
        assert_ne!(a, b);
    }
}
