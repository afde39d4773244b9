//! Connections: how many may be open, how long one may sit without a request, and which
//! one gives way when the cap is reached.
//!
//! Before any authentication, a client can open sockets and send nothing (or only the
//! HTTP/2 preface, or TLS bytes one at a time). Each costs a descriptor; enough of them and
//! nobody is served. So:
//!
//! - **Descriptors.** At start the soft `RLIMIT_NOFILE` is raised to the hard limit, and
//!   the connection cap is set below it with a reserve for what sessions need (each session's
//!   server pipes and audit file), so accepting never fails for lack of descriptors.
//! - **Handshake.** A connection must start its first request (TLS handshake, HTTP/1
//!   headers, or an HTTP/2 preface and HEADERS) within [`Conns::handshake`], whatever the
//!   protocol.
//! - **Idle.** A connection with no request in flight for [`Conns::idle`] is closed (keep-
//!   alive, HTTP/2 with only PINGs or SETTINGS). A request in flight, including a long SSE
//!   stream, keeps its connection.
//! - **At the cap**, a new connection is still accepted: the oldest connection that has
//!   never started a request is closed to make room (else the one idle the longest); only if
//!   every connection is serving a request is the new one closed. A flood of idle sockets
//!   therefore cannot keep out a real client or a health check: they are its first victims.

use std::collections::HashMap;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use bytes::Bytes;
use tokio::sync::Notify;

/// Descriptors kept back from the connection cap: listener, runtime, logs, and margin.
const BASE_RESERVE: u64 = 64;
/// Descriptors kept back per session or pooled server (its pipes, audit file, pidfd).
const PER_SESSION: u64 = 8;
/// The highest soft limit rootfence asks for (a hard limit of 2^30 is common in containers;
/// a cap that large buys nothing).
const WANTED_NOFILE: u64 = 1 << 20;

/// The open connections.
#[derive(Debug)]
pub struct Conns {
    map: Mutex<HashMap<u64, Arc<Conn>>>,
    next: AtomicU64,
    epoch: Instant,
    /// Most connections open at once.
    pub max: usize,
    /// How long a new connection may take to start its first request.
    pub handshake: Duration,
    /// How long a connection may go without a request in flight.
    pub idle: Duration,
    /// Connections closed to make room (or refused) at the cap.
    pub shed: AtomicU64,
}

/// One connection's state.
#[derive(Debug)]
pub struct Conn {
    id: u64,
    in_flight: AtomicUsize,
    started: AtomicBool,
    /// Milliseconds since the table's epoch when the connection last became idle.
    idle_since: AtomicU64,
    close: Notify,
}

/// Removes its connection from the table when the connection ends.
#[derive(Debug)]
pub struct ConnGuard {
    conns: Arc<Conns>,
    /// The connection.
    pub conn: Arc<Conn>,
}

impl Drop for ConnGuard {
    fn drop(&mut self) {
        self.conns.lock().remove(&self.conn.id);
    }
}

/// The descriptor limit after raising the soft limit as far as allowed: (soft, hard).
pub fn raise_nofile() -> (u64, u64) {
    use nix::sys::resource::{Resource, getrlimit, setrlimit};
    let Ok((soft, hard)) = getrlimit(Resource::RLIMIT_NOFILE) else {
        return (1024, 1024);
    };
    let target = hard.min(WANTED_NOFILE).max(soft);
    if target > soft && setrlimit(Resource::RLIMIT_NOFILE, target, hard).is_ok() {
        return (target, hard);
    }
    (soft, hard)
}

/// The connection cap under a descriptor limit `nofile` for `sessions` sessions and pooled
/// servers; `None` when the limit leaves no room for connections.
pub fn cap_for(nofile: u64, sessions: usize) -> Option<usize> {
    let reserve = BASE_RESERVE + PER_SESSION * sessions as u64;
    let room = nofile.checked_sub(reserve)?;
    (room >= 16).then(|| usize::try_from(room).unwrap_or(usize::MAX))
}

impl Conns {
    /// An empty table.
    pub fn new(max: usize, handshake: Duration, idle: Duration) -> Arc<Conns> {
        Arc::new(Conns {
            map: Mutex::default(),
            next: AtomicU64::new(0),
            epoch: Instant::now(),
            max: max.max(1),
            handshake,
            idle,
            shed: AtomicU64::new(0),
        })
    }

    fn lock(&self) -> MutexGuard<'_, HashMap<u64, Arc<Conn>>> {
        self.map.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn now_ms(&self) -> u64 {
        u64::try_from(self.epoch.elapsed().as_millis()).unwrap_or(u64::MAX)
    }

    /// Open connections.
    pub fn len(&self) -> usize {
        self.lock().len()
    }

    /// Whether none is open.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Registers a new connection, closing another to make room at the cap; `None` when
    /// every open connection is serving a request (the new one is then closed).
    pub fn admit(self: &Arc<Self>) -> Option<ConnGuard> {
        let now = self.now_ms();
        let mut map = self.lock();
        if map.len() >= self.max {
            // The oldest connection that never started a request, else the longest idle.
            let victim = map
                .values()
                .filter(|c| !c.started.load(Ordering::Relaxed))
                .min_by_key(|c| c.id)
                .or_else(|| {
                    map.values()
                        .filter(|c| c.in_flight.load(Ordering::Relaxed) == 0)
                        .min_by_key(|c| c.idle_since.load(Ordering::Relaxed))
                })
                .cloned();
            self.shed.fetch_add(1, Ordering::Relaxed);
            let victim = victim?;
            map.remove(&victim.id);
            victim.close.notify_one();
            tracing::debug!(
                "at the connection cap ({}): closed an idle connection",
                self.max
            );
        }
        let id = self.next.fetch_add(1, Ordering::Relaxed);
        let conn = Arc::new(Conn {
            id,
            in_flight: AtomicUsize::new(0),
            started: AtomicBool::new(false),
            idle_since: AtomicU64::new(now),
            close: Notify::new(),
        });
        map.insert(id, Arc::clone(&conn));
        Some(ConnGuard {
            conns: Arc::clone(self),
            conn,
        })
    }

    /// Resolves when `conn` must be closed: evicted, or idle (or without a first request)
    /// for too long.
    pub async fn expired(&self, conn: &Conn) {
        loop {
            let limit = if conn.started.load(Ordering::Relaxed) {
                self.idle
            } else {
                self.handshake
            };
            let wait = if conn.in_flight.load(Ordering::Relaxed) > 0 {
                limit
            } else {
                let since = conn.idle_since.load(Ordering::Relaxed);
                let idle_for = Duration::from_millis(self.now_ms().saturating_sub(since));
                match limit.checked_sub(idle_for) {
                    Some(left) if !left.is_zero() => left,
                    _ => return,
                }
            };
            tokio::select! {
                () = conn.close.notified() => return,
                () = tokio::time::sleep(wait) => {}
            }
        }
    }

    /// Notes that a request started on `conn`; the returned guard ends it (moved into the
    /// response body, so a streamed response counts until its last byte).
    pub fn begin(self: &Arc<Self>, conn: &Arc<Conn>) -> InFlight {
        conn.started.store(true, Ordering::Relaxed);
        conn.in_flight.fetch_add(1, Ordering::Relaxed);
        InFlight {
            conns: Arc::clone(self),
            conn: Arc::clone(conn),
        }
    }
}

/// A request in flight on a connection.
#[derive(Debug)]
pub struct InFlight {
    conns: Arc<Conns>,
    conn: Arc<Conn>,
}

impl Drop for InFlight {
    fn drop(&mut self) {
        if self.conn.in_flight.fetch_sub(1, Ordering::Relaxed) == 1 {
            self.conn
                .idle_since
                .store(self.conns.now_ms(), Ordering::Relaxed);
        }
    }
}

/// A response body that keeps its request counted as in flight until it is done.
#[derive(Debug)]
pub struct Tracked {
    inner: axum::body::Body,
    _in_flight: InFlight,
}

impl Tracked {
    /// Wraps `inner`.
    pub fn new(inner: axum::body::Body, in_flight: InFlight) -> Tracked {
        Tracked {
            inner,
            _in_flight: in_flight,
        }
    }
}

impl http_body::Body for Tracked {
    type Data = Bytes;
    type Error = axum::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<http_body::Frame<Bytes>, axum::Error>>> {
        Pin::new(&mut self.inner).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> http_body::SizeHint {
        self.inner.size_hint()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cap_leaves_a_reserve_for_sessions() {
        assert_eq!(cap_for(1024, 4), Some(1024 - 64 - 32));
        assert_eq!(cap_for(1024, 200), None);
        assert_eq!(cap_for(100, 4), None);
    }

    #[tokio::test]
    async fn at_the_cap_the_oldest_connection_without_a_request_gives_way() {
        let conns = Conns::new(2, Duration::from_secs(10), Duration::from_secs(60));
        let a = conns.admit().unwrap();
        let b = conns.admit().unwrap();
        let _busy = conns.begin(&b.conn);
        let c = conns.admit().expect("room is made");
        // `a` never started a request: it was told to close.
        tokio::time::timeout(Duration::from_secs(1), conns.expired(&a.conn))
            .await
            .expect("the idle connection is evicted");
        assert_eq!(conns.len(), 2);
        // Every remaining connection busy: a new one is refused.
        let _busy_c = conns.begin(&c.conn);
        assert!(conns.admit().is_none());
        assert_eq!(conns.shed.load(Ordering::Relaxed), 2);
        drop(a);
    }

    #[tokio::test]
    async fn a_connection_without_a_request_expires_and_one_in_flight_does_not() {
        let conns = Conns::new(8, Duration::from_millis(50), Duration::from_millis(50));
        let quiet = conns.admit().unwrap();
        tokio::time::timeout(Duration::from_secs(2), conns.expired(&quiet.conn))
            .await
            .expect("expires");
        let busy = conns.admit().unwrap();
        let in_flight = conns.begin(&busy.conn);
        assert!(
            tokio::time::timeout(Duration::from_millis(200), conns.expired(&busy.conn))
                .await
                .is_err(),
            "a request in flight keeps its connection"
        );
        drop(in_flight);
        tokio::time::timeout(Duration::from_secs(2), conns.expired(&busy.conn))
            .await
            .expect("idle after its request");
    }
}
