//! The session pool (`--session-pool N`): sessions whose relay and sandboxed server are
//! started before any client asks, so that an `initialize` finds its server already up
//! instead of waiting for a sandboxed start (issue 30).
//!
//! When it applies, and why only then: a pre-started server is confined before anyone
//! knows which client will take it, so it may only be handed to a session whose grants
//! could not have been anything else.
//!
//! - The operator fixes the roots: `--root` (or the policy's `roots.static`) is given.
//!   Without them a session's roots would come from its client (or the server's command
//!   line), so the pool stays off and says so at start.
//! - The client's `initialize` declares no `roots` capability. Such a session's roots are
//!   exactly the operator's (see `enforce::roots::effective`), and so are its grants; the
//!   server's environment never depends on the session (`--env` is the operator's). A
//!   client that declares roots could narrow them (its roots are intersected with
//!   `--root`), so it never gets a pooled server: its session starts its own, confined to
//!   its roots, exactly as without a pool (counted as `bypassed`).
//!
//! Every pooled server serves one session at most: taking one removes it from the pool
//! for good, and its session ends with it. A pooled server that died (or whose relay
//! ended) before use is discarded, never handed out: each one is watched, and the check is
//! made again when it is taken. At a drain every pooled server is stopped at once (new
//! sessions are refused anyway) with the stdio shutdown sequence;
//! [`SessionPool::wait_all`] waits for them at the end.
//!
//! The pool is refilled off the request path by one background task, and off the burst's
//! too: a sandboxed start costs about 10 ms of CPU (docs/benchmarks.md), so refilling 200
//! servers while the 200 sessions that took them are relaying took CPU from them on a small
//! machine. The refill therefore waits until no session has opened for `QUIET` (the
//! opening burst is over), and then starts one server per `REFILL_GAP` while no session
//! request comes in, but only one per `BUSY_GAP` while sessions are being served. A pool
//! short for `MAX_DEFER` refills at the busy pace even while sessions keep opening, so a
//! steady stream of new sessions is not left without one.
//!
//! Each pooled server opens its audit session when it starts (`session_start`, then
//! `server_start` with trigger `pool`); one never taken ends with `host_closed`.

use std::collections::VecDeque;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tokio::sync::Notify;

use super::session::{HttpSession, Prestarted};
use crate::setup::Setup;

/// The default `--session-pool`: two servers ready per replica. A single session opened
/// at a time (the common case for a team's replica) never waits for a server start, while
/// the idle cost stays at two server processes (measured in docs/serve.md).
pub const DEFAULT_SIZE: usize = 2;

/// How often the refill task looks at the pool even when nothing told it to.
const SWEEP: Duration = Duration::from_secs(1);

/// The least time between two starts by the refill task while no session request comes
/// in. A sandboxed start costs about 10 ms of CPU (docs/benchmarks.md): at most 40% of one
/// core while the replica is otherwise idle.
const REFILL_GAP: Duration = Duration::from_millis(25);

/// The least time between two starts while sessions are being served: about 4% of a core,
/// so a refill does not compete with the sessions it was taken for.
const BUSY_GAP: Duration = Duration::from_millis(250);

/// How long after the latest take the refill waits (the sessions opening together have
/// found their servers, or started their own, before any refill starts).
const QUIET: Duration = Duration::from_millis(500);

/// The longest the refill waits for a quiet moment once the pool is short.
const MAX_DEFER: Duration = Duration::from_secs(5);

/// Pre-started sessions, waiting for clients.
pub struct SessionPool {
    setup: Setup,
    stall: Duration,
    /// How many it keeps ready (0 when it does not apply).
    pub size: usize,
    /// Why it is off although asked for, when it is.
    pub off_because: Option<&'static str>,
    ready: Mutex<VecDeque<Prestarted>>,
    wake: Notify,
    closed: AtomicBool,
    /// When the latest take was (`None`: none yet).
    last_take: Mutex<Option<Instant>>,
    /// Session requests seen (a busy replica refills at the slower pace).
    requests: AtomicU64,
    /// Started so far.
    pub started: AtomicU64,
    /// Handed to a session.
    pub taken: AtomicU64,
    /// Found dead before use and discarded.
    pub discarded: AtomicU64,
    /// Sessions that could not use it (their client declares roots).
    pub bypassed: AtomicU64,
    /// What stopped servers leave to wait for (at the end of a drain).
    stopping: Mutex<Vec<Pin<Box<dyn Future<Output = ()> + Send>>>>,
}

impl std::fmt::Debug for SessionPool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SessionPool")
            .field("size", &self.size)
            .field("ready", &self.ready())
            .finish_non_exhaustive()
    }
}

impl SessionPool {
    /// A pool of `asked` sessions for `setup`'s server (`None`: [`DEFAULT_SIZE`]), or an
    /// empty one (with the reason, said on stderr when the size was asked for) when pooling
    /// does not apply to this configuration.
    pub fn new(setup: &Setup, asked: Option<usize>, stall: Duration) -> Arc<SessionPool> {
        let explicit = asked.is_some();
        let asked = asked.unwrap_or(DEFAULT_SIZE);
        let off_because = (asked > 0 && setup.roots.is_empty()).then_some(
            "no --root (nor roots.static) was given, so each session's roots come from its \
             client; give the served directories with --root to pool servers",
        );
        if let Some(why) = off_because.filter(|_| explicit) {
            crate::stderr_line!("rootfence: --session-pool is off: {why}");
        }
        Arc::new(SessionPool {
            setup: setup.clone(),
            stall,
            size: if off_because.is_some() { 0 } else { asked },
            off_because,
            ready: Mutex::default(),
            wake: Notify::new(),
            closed: AtomicBool::new(false),
            last_take: Mutex::default(),
            requests: AtomicU64::new(0),
            started: AtomicU64::new(0),
            taken: AtomicU64::new(0),
            discarded: AtomicU64::new(0),
            bypassed: AtomicU64::new(0),
            stopping: Mutex::default(),
        })
    }

    fn queue(&self) -> std::sync::MutexGuard<'_, VecDeque<Prestarted>> {
        crate::relock(&self.ready)
    }

    /// Servers ready now.
    pub fn ready(&self) -> usize {
        self.queue().len()
    }

    /// Notes a request to a session (the refill slows down while sessions are served).
    pub fn saw_request(&self) {
        if self.size > 0 {
            self.requests.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// A pre-started session for the client whose `initialize` is `message`, made the
    /// session `id` of `principal`, opened from `client`; `None` when the pool does not apply to this client or
    /// is empty (the caller starts a session of its own).
    pub fn take(
        &self,
        message: &[u8],
        id: &str,
        principal: &Option<String>,
        client: Option<super::session::ClientAddr>,
    ) -> Option<Arc<HttpSession>> {
        if self.size == 0 || self.closed.load(Ordering::Relaxed) {
            return None;
        }
        if declares_roots(message) {
            self.bypassed.fetch_add(1, Ordering::Relaxed);
            return None;
        }
        let found = loop {
            match self.queue().pop_front() {
                Some(p) if !p.alive() => self.discard(p),
                next => break next,
            }
        };
        // Refill (or replace what was discarded) off the request path, once the burst
        // this take belongs to is over.
        *crate::relock(&self.last_take) = Some(Instant::now());
        self.wake.notify_one();
        let p = found?;
        self.taken.fetch_add(1, Ordering::Relaxed);
        tracing::info!(session = %id, pooled = %p.label, "session opened on a pre-started server");
        Some(HttpSession::adopt(
            p,
            id.to_owned(),
            principal.clone(),
            client,
        ))
    }

    fn discard(&self, p: Prestarted) {
        tracing::info!(pooled = %p.label, "a pre-started server ended before use; discarded");
        self.discarded.fetch_add(1, Ordering::Relaxed);
        self.keep_stopping(p.close());
    }

    fn keep_stopping(&self, ended: impl Future<Output = ()> + Send + 'static) {
        crate::relock(&self.stopping).push(Box::pin(ended));
    }

    /// The refill task: keeps [`SessionPool::size`] servers ready, paced as the module
    /// says, and drops the dead ones, until [`SessionPool::close`].
    pub async fn refill(self: Arc<Self>) {
        if self.size == 0 {
            return;
        }
        let mut n: u64 = 0;
        // Since when the pool has been short (for `MAX_DEFER`).
        let mut short_since: Option<Instant> = None;
        // Session requests seen at the previous start (busy when more came since).
        let mut seen = self.requests.load(Ordering::Relaxed);
        loop {
            if self.closed.load(Ordering::Relaxed) {
                return;
            }
            self.drop_dead();
            if self.ready() >= self.size {
                short_since = None;
                tokio::select! {
                    () = self.wake.notified() => {}
                    () = tokio::time::sleep(SWEEP) => {}
                }
                continue;
            }
            let short_for = short_since.get_or_insert_with(Instant::now).elapsed();
            let since_take = crate::relock(&self.last_take).map(|at| at.elapsed());
            if let Some(wait) = hold_back(since_take, short_for) {
                tokio::time::sleep(wait).await;
                continue;
            }
            n += 1;
            self.start_one(n);
            if self.closed.load(Ordering::Relaxed) {
                return;
            }
            let now = self.requests.load(Ordering::Relaxed);
            let busy = now != seen;
            seen = now;
            tokio::time::sleep(gap(busy)).await;
        }
    }

    /// Discards the pooled servers that ended.
    fn drop_dead(&self) {
        let dead: VecDeque<Prestarted> = {
            let mut q = self.queue();
            let (live, dead) = q.drain(..).partition(Prestarted::alive);
            *q = live;
            dead
        };
        for p in dead {
            self.discard(p);
        }
    }

    /// Starts one server into the pool.
    fn start_one(self: &Arc<Self>, n: u64) {
        let p = HttpSession::prestart(&self.setup, format!("pre-started-{n}"), self.stall);
        self.started.fetch_add(1, Ordering::Relaxed);
        // Told when it ends, so a dead one is replaced at once.
        let me = Arc::downgrade(self);
        let ended = p.ended();
        tokio::spawn(async move {
            ended.await;
            if let Some(me) = me.upgrade() {
                me.wake.notify_one();
            }
        });
        // Looked at under the queue's lock, which `close` drains under: a server started
        // while the pool closes is stopped, never left in it.
        let mut q = self.queue();
        if self.closed.load(Ordering::Relaxed) {
            drop(q);
            self.keep_stopping(p.close());
            return;
        }
        q.push_back(p);
    }

    /// Stops every pooled server and starts no more (a drain).
    pub fn close(&self) {
        self.closed.store(true, Ordering::Relaxed);
        let all: Vec<Prestarted> = self.queue().drain(..).collect();
        for p in all {
            self.keep_stopping(p.close());
        }
        self.wake.notify_one();
    }

    /// Waits until every pooled server stopped so far has ended.
    pub async fn wait_all(&self) {
        let all: Vec<_> = std::mem::take(&mut *crate::relock(&self.stopping));
        for ended in all {
            ended.await;
        }
    }
}

/// How long a refill start waits, when the latest take was `since_take` ago and the pool has
/// been short for `short_for`: until `QUIET` after the take (the burst is over), but never
/// beyond `MAX_DEFER` of being short. `None`: start now.
fn hold_back(since_take: Option<Duration>, short_for: Duration) -> Option<Duration> {
    let burst_left = QUIET.checked_sub(since_take?).filter(|d| !d.is_zero())?;
    let defer_left = MAX_DEFER.checked_sub(short_for).filter(|d| !d.is_zero())?;
    Some(burst_left.min(defer_left))
}

/// The pause after a refill start: longer while sessions were being served since the last.
fn gap(busy: bool) -> Duration {
    if busy { BUSY_GAP } else { REFILL_GAP }
}

/// Whether an `initialize` message declares the client's `roots` capability (then its
/// roots, and its server's grants, may differ from the operator's). A message that cannot
/// be read counts as declaring them: the session then starts its own server.
pub fn declares_roots(message: &[u8]) -> bool {
    #[derive(serde::Deserialize)]
    struct Init {
        params: Option<Params>,
    }
    #[derive(serde::Deserialize)]
    struct Params {
        capabilities: Option<std::collections::HashMap<String, serde::de::IgnoredAny>>,
    }
    serde_json::from_slice::<Init>(message).map_or(true, |init| {
        let caps = init.params.and_then(|p| p.capabilities);
        caps.is_some_and(|caps| caps.contains_key("roots"))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_refill_waits_for_the_opening_burst_to_end_but_not_forever() {
        let ms = Duration::from_millis;
        let cases: &[(Option<u64>, u64, Option<u64>)] = &[
            // Nothing taken yet (the first fill): at once.
            (None, 0, None),
            // A take just now: wait for the rest of the quiet time.
            (Some(0), 0, Some(500)),
            (Some(200), 100, Some(300)),
            // Quiet long enough: at once.
            (Some(500), 100, None),
            (Some(9_000), 100, None),
            // Takes keep coming, but the pool has been short for nearly MAX_DEFER: only
            // what is left of it; past it, at once.
            (Some(0), 4_800, Some(200)),
            (Some(0), 5_000, None),
            (Some(100), 60_000, None),
        ];
        for &(since, short, want) in cases {
            assert_eq!(
                hold_back(since.map(ms), ms(short)),
                want.map(ms),
                "since the take {since:?} ms, short for {short} ms"
            );
        }
        assert!(
            gap(true) >= gap(false) * 10,
            "a busy replica refills slowly"
        );
    }

    #[test]
    fn only_a_client_without_roots_may_take_a_pooled_server() {
        let cases: &[(&str, bool)] = &[
            (
                r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"capabilities":{}}}"#,
                false,
            ),
            (
                r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"capabilities":{"sampling":{}}}}"#,
                false,
            ),
            (
                r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{}}"#,
                false,
            ),
            (
                r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"capabilities":{"roots":{}}}}"#,
                true,
            ),
            (
                r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"capabilities":{"roots":{"listChanged":true}}}}"#,
                true,
            ),
            // Escaped key: still `roots`.
            (
                r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"capabilities":{"r\u006fots":{}}}}"#,
                true,
            ),
            ("not json", true),
        ];
        for (m, want) in cases {
            assert_eq!(declares_roots(m.as_bytes()), *want, "{m}");
        }
    }
}
