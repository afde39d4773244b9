//! The writer: [`AuditLog`] owns one writer thread per log; [`Auditor`] is the cheap handle
//! the relay's tasks record through.
//!
//! # Group commit
//!
//! `Auditor::record` runs on the relay's hot path. It serializes the event straight into the
//! shared batch buffer (so bad input fails at the caller, and no per-record allocation or
//! copy happens) and returns: no I/O, and no wake-up of the writer for an ordinary record.
//! The writer thread owns the file. It takes everything that has accumulated in one go and
//! writes it with one `write()` under one lock (see `sink`), keeping the hash chain.
//!
//! When it writes:
//! - at once for a record the fsync policy syncs for (a denial, with the default policy),
//!   for [`Auditor::record_blocking`] and `session_end`, and for every record with
//!   `fsync = "always"`;
//! - otherwise within [`ALLOW_DELAY`] of the first record that is waiting (allowed
//!   decisions, roots updates...), or as soon as the queue is half full.
//!
//! The queue is bounded ([`QUEUE_DEPTH`] records, [`QUEUE_BYTES`] bytes): when the disk is
//! slower than the relay, `record` waits for room instead of growing memory without bound
//! or dropping records (nothing may be lost).
//!
//! # Durability before effect
//!
//! Every record gets a [`Receipt`]. [`Auditor::durable`] resolves once the writer has
//! written that record and, when the policy covers it, synced it. The relay answers a denial
//! only after its receipt resolves, so the evidence is on disk before the effect; allowed
//! messages never wait.

use std::fs::File;
use std::io;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc;
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use super::chain;
use super::event::{DecisionRef, Event, SessionEnd, SessionStart, Verdict, write_named_decision};
use super::repeat::Repeats;
use super::sink::{Item, Sink};
use super::time::now_micros;
use super::{AuditConfig, AuditError, FsyncPolicy, OnFailure};

/// Records queued before `record` waits for the writer.
pub const QUEUE_DEPTH: usize = 8192;

/// Bytes of serialized records queued before `record` waits for the writer.
pub const QUEUE_BYTES: usize = 2 << 20;

/// Longest time a record that nothing waits for (an allowed decision, a roots update, a
/// protocol error) stays queued before it is written.
pub const ALLOW_DELAY: Duration = Duration::from_millis(50);

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
    shared: Arc<Shared>,
}

/// A record's place in the log's queue, to wait for with [`Auditor::durable`]. The default
/// receipt (of a record that was not queued, e.g. an allowed decision that is not logged)
/// is already durable.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord)]
pub struct Receipt(u64);

impl Receipt {
    /// Nothing to wait for.
    pub const NONE: Receipt = Receipt(0);

    /// Whether there is nothing to wait for.
    pub fn is_none(self) -> bool {
        self.0 == 0
    }
}

/// Records waiting for the writer: their bodies back to back in one buffer.
#[derive(Debug, Default)]
struct Batch {
    buf: Vec<u8>,
    /// `(ts, end of the body in buf, critical)`.
    recs: Vec<(i64, usize, bool)>,
}

/// What a `close` hands the writer.
type CloseRequest = (
    i64,
    Box<SessionEnd>,
    mpsc::SyncSender<Result<(), AuditError>>,
);

#[derive(Debug, Default)]
struct Queue {
    batch: Batch,
    /// The last receipt handed out.
    last: u64,
    /// The last receipt the writer has handled (written, and synced when due).
    done: u64,
    /// When the oldest record nothing waits for was queued.
    oldest: Option<Instant>,
    /// Something waits: write now.
    urgent: bool,
    /// The writer is waiting on `wake`.
    writer_waiting: bool,
    /// Threads waiting on `room` (for room in the queue, or for `done` to move).
    waiters: usize,
    close: Option<CloseRequest>,
    stop: bool,
    /// No more records are taken.
    closed: bool,
}

#[derive(Debug)]
struct Shared {
    on_failure: OnFailure,
    log_allowed: bool,
    /// `fsync = "always"`: every record is written at once.
    always: bool,
    failed_flag: AtomicBool,
    failed: Mutex<Option<AuditError>>,
    failed_tx: tokio::sync::watch::Sender<bool>,
    /// The first receipt of the first batch that could not be written (`u64::MAX`: none).
    failed_from: AtomicU64,
    allowed: AtomicU64,
    denied: AtomicU64,
    protocol_errors: AtomicU64,
    queue: Mutex<Queue>,
    /// The writer waits here for records.
    wake: Condvar,
    /// Producers wait here for room, and blocking `durable` callers for the writer.
    room: Condvar,
    /// The last receipt handled, for async waiters.
    done_tx: tokio::sync::watch::Sender<u64>,
    repeats: Mutex<Repeats>,
}

impl Shared {
    fn queue(&self) -> MutexGuard<'_, Queue> {
        crate::relock(&self.queue)
    }

    fn set_failed(&self, err: &AuditError) {
        match self.on_failure {
            OnFailure::Stop => {
                let mut slot = crate::relock(&self.failed);
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
        crate::relock(&self.failed).clone()
    }

    /// Publishes that every receipt up to `last` is handled.
    fn publish(&self, last: u64) {
        let mut q = self.queue();
        q.done = q.done.max(last);
        if q.waiters > 0 {
            self.room.notify_all();
        }
        drop(q);
        self.done_tx.send_if_modified(|d| {
            let moved = last > *d;
            *d = (*d).max(last);
            moved
        });
    }
}

impl AuditLog {
    /// Opens (or creates, with its directory) the log at `cfg.path` and writes the
    /// `session_start` record before returning, so a log that cannot be written is known
    /// before the session starts. An existing file's chain is continued; a file ending with
    /// an incomplete line is set aside as described in `docs/audit-schema.md`. Prints
    /// nothing.
    pub fn open(cfg: AuditConfig, session_start: SessionStart) -> Result<AuditLog, AuditError> {
        let session: Arc<str> = new_session_id().into();
        let mut sink = Sink::new(&cfg, &session)?;
        let body = Event::SessionStart(session_start).body();
        sink.write_batch(&[(now_micros(), &body[..], true)])?;

        let (failed_tx, _) = tokio::sync::watch::channel(false);
        let (done_tx, _) = tokio::sync::watch::channel(0);
        let shared = Arc::new(Shared {
            on_failure: cfg.on_failure,
            log_allowed: cfg.log_allowed,
            always: cfg.fsync == FsyncPolicy::Always,
            failed_flag: AtomicBool::new(false),
            failed: Mutex::new(None),
            failed_tx,
            failed_from: AtomicU64::new(u64::MAX),
            allowed: AtomicU64::new(0),
            denied: AtomicU64::new(0),
            protocol_errors: AtomicU64::new(0),
            queue: Mutex::new(Queue::default()),
            wake: Condvar::new(),
            room: Condvar::new(),
            done_tx,
            repeats: Mutex::new(Repeats::default()),
        });
        let thread_shared = Arc::clone(&shared);
        let thread = std::thread::Builder::new()
            .name("rootfence-audit".into())
            .spawn(move || {
                let path = sink.cfg.path.clone();
                let run = std::panic::AssertUnwindSafe(|| run(sink, &thread_shared));
                if std::panic::catch_unwind(run).is_err() {
                    // A writer that died must stop the session like a failed write would,
                    // and release everyone waiting for it.
                    thread_shared.set_failed(&AuditError::write(
                        &path,
                        io::Error::other("the audit writer thread panicked"),
                    ));
                    thread_shared.failed_from.store(0, Ordering::Release);
                    thread_shared.queue().closed = true;
                    thread_shared.publish(u64::MAX);
                }
            })
            .map_err(|e| AuditError::open(&cfg.path, e))?;
        Ok(AuditLog {
            auditor: Auditor { shared },
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
        let shared = &self.auditor.shared;
        let sent = {
            let mut q = shared.queue();
            let open = !std::mem::replace(&mut q.closed, true);
            if open {
                q.close = Some((now_micros(), Box::new(end), tx));
                shared.wake.notify_one();
            }
            open
        };
        let r = if sent {
            rx.recv().unwrap_or(Err(AuditError::Closed))
        } else {
            Err(self.auditor.closed_error())
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
            {
                let mut q = self.auditor.shared.queue();
                q.closed = true;
                q.stop = true;
                self.auditor.shared.wake.notify_one();
            }
            let _ = t.join();
        }
    }
}

impl Auditor {
    /// Queues `event` and returns at once (or when the queue has room again). Cheap: one
    /// serialization into the shared batch, no I/O and, for a record nothing waits for, no
    /// wake-up of the writer.
    ///
    /// Errors: with `on_failure = "stop"`, once the log has failed every call returns the
    /// failure; the event types the log writes itself (`session_start`, `session_end`,
    /// `log_recovered`, `log_rewound`, `log_pruned`, `protocol_error_repeated`) are refused
    /// ([`AuditError::Reserved`]). With `on_failure = "continue"`, failures are only warned
    /// about on stderr.
    pub fn record(&self, event: Event) -> Result<(), AuditError> {
        self.submit(event, false).map(|_| ())
    }

    /// Like [`record`](Self::record), and returns the record's receipt, to wait for with
    /// [`durable`](Self::durable) before acting on it. A record the fsync policy syncs for
    /// (a denial, by default) is written at once; others within 50 ms (`ALLOW_DELAY`).
    pub fn submit(&self, event: Event, urgent: bool) -> Result<Receipt, AuditError> {
        let shared = &*self.shared;
        if event.is_reserved() {
            return Err(AuditError::Reserved(event.name()));
        }
        let counted = match &event {
            Event::Decision(d) => Some((d.decision, 1)),
            Event::DecisionSummary(s) => Some((Verdict::Allow, s.allowed)),
            _ => None,
        };
        if !self.admit(counted)? {
            return Ok(Receipt::NONE);
        }
        let event = match event {
            Event::ProtocolError(p) => {
                shared.protocol_errors.fetch_add(1, Ordering::Relaxed);
                let admitted = crate::relock(&shared.repeats).admit(p, Instant::now());
                match admitted {
                    Some(p) => Event::ProtocolError(p),
                    None => return Ok(Receipt::default()),
                }
            }
            other => other,
        };
        let critical = event.is_critical();
        self.push(
            |buf| event.write_body(buf),
            critical,
            urgent || critical || shared.always,
        )
    }

    /// [`submit`](Self::submit) for a decision whose strings are borrowed: serialized
    /// straight into the queue, without building an owned [`Decision`](super::Decision).
    pub fn submit_decision(
        &self,
        d: &DecisionRef<'_>,
        urgent: bool,
    ) -> Result<Receipt, AuditError> {
        if !self.admit(Some((d.decision, 1)))? {
            return Ok(Receipt::NONE);
        }
        let critical = d.decision == Verdict::Deny;
        self.push(
            |buf| write_named_decision(d, buf),
            critical,
            urgent || critical || self.shared.always,
        )
    }

    /// Refuses a record once the log has failed (`on_failure = "stop"`); counts a decision
    /// (or a page's `n` allowed entries) for `session_end`, and says whether it is logged.
    fn admit(&self, counted: Option<(Verdict, u64)>) -> Result<bool, AuditError> {
        let shared = &*self.shared;
        if shared.on_failure == OnFailure::Stop
            && let Some(e) = shared.failed()
        {
            return Err(e);
        }
        Ok(match counted {
            Some((Verdict::Deny, n)) => {
                shared.denied.fetch_add(n, Ordering::Relaxed);
                true
            }
            Some((Verdict::Allow, n)) => {
                shared.allowed.fetch_add(n, Ordering::Relaxed);
                shared.log_allowed
            }
            None => true,
        })
    }

    fn push(
        &self,
        write: impl FnOnce(&mut Vec<u8>),
        critical: bool,
        urgent: bool,
    ) -> Result<Receipt, AuditError> {
        let shared = &*self.shared;
        let ts = now_micros();
        let mut q = shared.queue();
        loop {
            if q.closed {
                drop(q);
                return Err(self.closed_error());
            }
            if q.batch.recs.len() < QUEUE_DEPTH && q.batch.buf.len() < QUEUE_BYTES {
                break;
            }
            q.urgent = true;
            if q.writer_waiting {
                q.writer_waiting = false;
                shared.wake.notify_one();
            }
            q.waiters += 1;
            q = shared.room.wait(q).unwrap_or_else(|p| p.into_inner());
            q.waiters -= 1;
        }
        write(&mut q.batch.buf);
        let end = q.batch.buf.len();
        q.batch.recs.push((ts, end, critical));
        q.last += 1;
        let receipt = Receipt(q.last);
        let full = q.batch.recs.len() >= QUEUE_DEPTH / 2 || end >= QUEUE_BYTES / 2;
        // Wake the writer only when this record changes when it must write: the first
        // record of a batch starts the delay, an urgent one ends it. Everything else rides
        // along, so an allowed decision costs no system call here.
        let wake = if urgent || full {
            !std::mem::replace(&mut q.urgent, true)
        } else if q.oldest.is_none() {
            q.oldest = Some(Instant::now());
            true
        } else {
            false
        };
        if wake && q.writer_waiting {
            q.writer_waiting = false;
            shared.wake.notify_one();
        }
        Ok(receipt)
    }

    /// Counts `n` allowed decisions that are not logged (`log_allowed = false`), for
    /// `session_end`, without building their records.
    pub fn note_allowed(&self, n: u64) {
        self.shared.allowed.fetch_add(n, Ordering::Relaxed);
    }

    /// Resolves once the record with this receipt is written and, when the fsync policy
    /// covers it, synced; or with the failure that prevented it (`on_failure = "stop"`).
    pub async fn durable(&self, receipt: Receipt) -> Result<(), AuditError> {
        if receipt.is_none() {
            return Ok(());
        }
        if *self.shared.done_tx.borrow() < receipt.0 {
            let mut rx = self.shared.done_tx.subscribe();
            // The sender lives in `shared`, which we hold: this only returns once done.
            let _ = rx.wait_for(|&d| d >= receipt.0).await;
        }
        self.outcome(receipt)
    }

    /// Whether the record with this receipt is already durable (or failed).
    pub fn is_durable(&self, receipt: Receipt) -> bool {
        *self.shared.done_tx.borrow() >= receipt.0
    }

    /// [`durable`](Self::durable) for synchronous code (blocks the thread; never call it
    /// from inside an async task).
    pub fn durable_blocking(&self, receipt: Receipt) -> Result<(), AuditError> {
        if receipt.is_none() {
            return Ok(());
        }
        let mut q = self.shared.queue();
        while q.done < receipt.0 {
            q.waiters += 1;
            q = self.shared.room.wait(q).unwrap_or_else(|p| p.into_inner());
            q.waiters -= 1;
        }
        drop(q);
        self.outcome(receipt)
    }

    fn outcome(&self, receipt: Receipt) -> Result<(), AuditError> {
        if receipt.0 < self.shared.failed_from.load(Ordering::Acquire)
            || self.shared.on_failure == OnFailure::Continue
        {
            return Ok(());
        }
        Err(self.shared.failed().unwrap_or(AuditError::Closed))
    }

    /// Records `event`, then waits (blocking the thread; never call it from inside an async
    /// task) until it is written and, when the fsync policy covers it, synced. Use it before
    /// acting on a denial, so the evidence exists before the effect.
    pub fn record_blocking(&self, event: Event) -> Result<(), AuditError> {
        let receipt = self.submit(event, true)?;
        self.durable_blocking(receipt)
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

    fn closed_error(&self) -> AuditError {
        self.shared.failed().unwrap_or(AuditError::Closed)
    }
}

/// What the writer takes from the queue in one go.
struct Taken {
    last: u64,
    close: Option<CloseRequest>,
    stop: bool,
}

/// The writer thread: waits for work, takes the whole queue, writes it as one batch.
fn run(mut sink: Sink, shared: &Shared) {
    let mut spare = Batch::default();
    let mut failing = false;
    let mut handled: u64 = 0;
    loop {
        let taken = take(shared, &sink, &mut spare);
        let closing = taken.close.is_some() || taken.stop;
        let repeated = crate::relock(&shared.repeats).due(Instant::now(), closing);
        let mut extra: Vec<(i64, Vec<u8>)> = repeated
            .into_iter()
            .map(|r| (now_micros(), Event::ProtocolErrorRepeated(r).body()))
            .collect();
        if let Some(d) = sink.sink_dropped_due(Instant::now(), closing) {
            extra.push((now_micros(), Event::SinkDropped(d).body()));
        }
        let mut items: Vec<Item<'_>> = Vec::with_capacity(spare.recs.len() + extra.len());
        let mut start = 0;
        for &(ts, end, critical) in &spare.recs {
            items.push((ts, &spare.buf[start..end], critical));
            start = end;
        }
        items.extend(extra.iter().map(|(ts, b)| (*ts, &b[..], false)));
        let r = if items.is_empty() {
            Ok(())
        } else {
            sink.write_batch(&items)
        };
        drop(items);
        let r = r
            .and_then(|()| sync_if_due(&mut sink))
            .and_then(|()| sink.checkpoint(false));
        match &r {
            Ok(()) => failing = false,
            Err(e) => {
                shared.failed_from.fetch_min(handled + 1, Ordering::AcqRel);
                if !failing || shared.on_failure == OnFailure::Stop {
                    shared.set_failed(e);
                }
                failing = true;
            }
        }
        handled = taken.last;
        shared.publish(taken.last);
        spare.buf.clear();
        spare.recs.clear();
        if let Some((ts, mut end, reply)) = taken.close {
            end.counts.allowed = shared.allowed.load(Ordering::Relaxed);
            end.counts.denied = shared.denied.load(Ordering::Relaxed);
            end.counts.protocol_errors = shared.protocol_errors.load(Ordering::Relaxed);
            end.counts.records = sink.session_records + 1;
            let body = Event::SessionEnd(*end).body();
            let r2 = sink.write_batch(&[(ts, &body[..], true)]);
            if let Err(e) = &r2 {
                shared.set_failed(e);
            }
            let r3 = finish(&mut sink, shared, handled);
            let _ = reply.send(r.and(r2).and(r3));
            return;
        }
        if taken.stop {
            let _ = finish(&mut sink, shared, handled);
            return;
        }
    }
}

/// Whatever was written is synced before the thread ends, unless told never to; nobody may
/// be left waiting.
/// The session's last checkpoint covers its last record (`session_end`, when closed).
fn finish(sink: &mut Sink, shared: &Shared, handled: u64) -> Result<(), AuditError> {
    if sink.dirty_since.is_some() {
        let _ = sink.sync();
    }
    let r = sink.checkpoint(true);
    if let Err(e) = &r {
        shared.set_failed(e);
    }
    sink.close_syslog();
    shared.queue().closed = true;
    shared.publish(handled);
    r
}

/// Syncs when the interval policy's time has come. A failed sync is tried again an interval
/// later (not at once: the writer would spin).
fn sync_if_due(sink: &mut Sink) -> Result<(), AuditError> {
    if let (FsyncPolicy::Interval(d), Some(since)) = (sink.cfg.fsync, sink.dirty_since)
        && since.elapsed() >= d
    {
        let r = sink.sync();
        if r.is_err() {
            sink.dirty_since = Some(Instant::now());
        }
        return r;
    }
    Ok(())
}

/// Waits until there is something to write (or a deadline: the delay of the oldest record,
/// the interval fsync, the end of a repeated-error interval), then takes the whole queue
/// into `into` (which must be empty) and gives the queue its buffers back.
fn take(shared: &Shared, sink: &Sink, into: &mut Batch) -> Taken {
    let mut q = shared.queue();
    loop {
        if q.urgent || q.close.is_some() || q.stop {
            break;
        }
        let now = Instant::now();
        let sync_at = match (sink.cfg.fsync, sink.dirty_since) {
            (FsyncPolicy::Interval(d), Some(since)) => Some(since + d),
            _ => None,
        };
        let repeats_at = crate::relock(&shared.repeats).next_deadline();
        let deadline = [
            q.oldest.map(|o| o + ALLOW_DELAY),
            sync_at,
            repeats_at,
            sink.checkpoint_deadline(),
        ]
        .into_iter()
        .flatten()
        .min();
        q.writer_waiting = true;
        q = match deadline {
            Some(d) if d <= now => {
                q.writer_waiting = false;
                break;
            }
            Some(d) => {
                shared
                    .wake
                    .wait_timeout(q, d - now)
                    .unwrap_or_else(|p| p.into_inner())
                    .0
            }
            None => shared.wake.wait(q).unwrap_or_else(|p| p.into_inner()),
        };
        q.writer_waiting = false;
    }
    std::mem::swap(&mut q.batch, into);
    q.urgent = false;
    q.oldest = None;
    if q.waiters > 0 {
        shared.room.notify_all();
    }
    Taken {
        last: q.last,
        close: q.close.take(),
        stop: q.stop,
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
    chain::hex(&b)
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
    fn session_ids_are_hex_and_distinct() {
        let a = new_session_id();
        let b = new_session_id();
        assert_eq!(a.len(), 32);
        assert!(a.bytes().all(|c| c.is_ascii_hexdigit()));
        assert_ne!(a, b);
    }
}
