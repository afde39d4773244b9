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
//! - **At the cap**, before the next connection is accepted, room is made: the oldest
//!   connection that has never started a request is closed (else the one idle the longest),
//!   and the next is accepted once its descriptor is released. If every connection is
//!   serving a request, the next waits in the kernel's listen queue (costing rootfence no
//!   descriptor) until one ends. A flood of idle sockets therefore cannot keep out a real
//!   client or a health check: they are the first to go.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

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
    /// Connections closed to make room at the cap.
    pub shed: AtomicU64,
    /// Signalled when a connection's descriptor is released.
    room: Notify,
}

/// One connection's state.
#[derive(Debug, Default)]
pub struct Conn {
    id: u64,
    in_flight: AtomicUsize,
    started: AtomicBool,
    /// Told to close to make room (still counted until it has).
    evicted: AtomicBool,
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
        self.conns.room.notify_one();
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
            room: Notify::new(),
        })
    }

    fn lock(&self) -> MutexGuard<'_, HashMap<u64, Arc<Conn>>> {
        crate::relock(&self.map)
    }

    fn now_ms(&self) -> u64 {
        u64::try_from(self.epoch.elapsed().as_millis()).unwrap_or(u64::MAX)
    }

    /// Open connections.
    pub(crate) fn len(&self) -> usize {
        self.lock().len()
    }

    /// Returns once there is room for one more connection: at the cap, the oldest
    /// connection that never started a request (else the longest idle) is told to close, and
    /// this waits until a descriptor is released. Call before accepting.
    pub async fn make_room(&self) {
        loop {
            {
                let map = self.lock();
                if map.len() < self.max {
                    return;
                }
                // One closing at a time: it is still counted until its socket is closed.
                if !map.values().any(|c| c.evicted.load(Ordering::Relaxed)) {
                    let victim = map
                        .values()
                        .filter(|c| !c.started.load(Ordering::Relaxed))
                        .min_by_key(|c| c.id)
                        .or_else(|| {
                            map.values()
                                .filter(|c| c.in_flight.load(Ordering::Relaxed) == 0)
                                .min_by_key(|c| c.idle_since.load(Ordering::Relaxed))
                        });
                    if let Some(v) = victim {
                        v.evicted.store(true, Ordering::Relaxed);
                        v.close.notify_one();
                        self.shed.fetch_add(1, Ordering::Relaxed);
                        tracing::debug!(
                            "at the connection cap ({}): closing an idle connection",
                            self.max
                        );
                    }
                }
            }
            // A guard dropped, or look again (a busy connection may have gone idle).
            tokio::select! {
                () = self.room.notified() => {}
                () = tokio::time::sleep(Duration::from_millis(50)) => {}
            }
        }
    }

    /// Registers a connection just accepted (after [`Conns::make_room`]).
    pub fn admit(self: &Arc<Self>) -> ConnGuard {
        let now = self.now_ms();
        let id = self.next.fetch_add(1, Ordering::Relaxed);
        let conn = Arc::new(Conn {
            id,
            idle_since: AtomicU64::new(now),
            ..Conn::default()
        });
        self.lock().insert(id, Arc::clone(&conn));
        ConnGuard {
            conns: Arc::clone(self),
            conn,
        }
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
        let a = conns.admit();
        let b = conns.admit();
        let _busy = conns.begin(&b.conn);
        // Room is made by closing `a` (it never started a request); it counts until closed.
        let room = conns.make_room();
        tokio::pin!(room);
        assert!(
            tokio::time::timeout(Duration::from_millis(100), &mut room)
                .await
                .is_err()
        );
        tokio::time::timeout(Duration::from_secs(1), conns.expired(&a.conn))
            .await
            .expect("the idle connection is told to close");
        drop(a);
        tokio::time::timeout(Duration::from_secs(1), room)
            .await
            .expect("room once it closed");
        let c = conns.admit();
        let _busy_c = conns.begin(&c.conn);
        // Every connection busy: no room until one ends.
        assert!(
            tokio::time::timeout(Duration::from_millis(200), conns.make_room())
                .await
                .is_err()
        );
        assert_eq!(conns.shed.load(Ordering::Relaxed), 1);
        drop(c);
        tokio::time::timeout(Duration::from_secs(1), conns.make_room())
            .await
            .expect("room once one ended");
    }

    #[tokio::test]
    async fn a_connection_without_a_request_expires_and_one_in_flight_does_not() {
        let conns = Conns::new(8, Duration::from_millis(50), Duration::from_millis(50));
        let quiet = conns.admit();
        tokio::time::timeout(Duration::from_secs(2), conns.expired(&quiet.conn))
            .await
            .expect("expires");
        let busy = conns.admit();
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
