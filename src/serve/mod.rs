//! `rootfence serve`: the same enforcement as `rootfence run`, over MCP Streamable HTTP.
//!
//! - `http.rs`: the endpoint (`/mcp`), health and readiness, status codes.
//! - `origin.rs`: Host and Origin validation (DNS rebinding).
//! - `headers.rs`: routing headers (`Mcp-Method`, `Mcp-Name`) that must agree with the body;
//!   `refusals.rs` audits what is refused before any session.
//! - `auth.rs`: bearer tokens from a token file.
//! - `capacity.rs`: the one capacity model of sessions and pooled servers (caps, shares,
//!   eviction, idle reaper).
//! - `session.rs`: one 2025-03-26…2025-11-25 session: a relay of its own over in-memory
//!   streams (`pipe.rs`), with its own sandboxed server, roots and audit session.
//! - `router.rs`: delivers a relay's output to the right HTTP stream; `sse.rs` streams it.
//! - `stateless.rs`, `state.rs`: 2026-07-28 requests, served by a pool of server processes
//!   keyed by the grants they run under, with the state the protocol echoes signed.
//! - `pool.rs`: sessions whose sandboxed server is started before a client asks
//!   (`--session-pool`), for the sessions whose grants cannot depend on the client.
//! - `tls.rs`: rustls.
//!
//! Messages are never re-serialized on their way through: a POST body is scanned (the same
//! strict envelope scan as stdio), put on one line, and handed to the relay, which checks it
//! and forwards exactly what it checked; what the relay writes toward the host goes out as
//! the HTTP body or SSE event data byte for byte.
//!
//! [`serve`] runs until its shutdown future resolves, then drains: readiness turns 503 (the
//! load balancer sends new sessions elsewhere), new sessions and stateless requests are
//! refused, and the live sessions are kept, served as before, until they end (DELETE, idle)
//! or [`ServeConfig::drain`] has passed. Then the listener closes, GET streams are closed,
//! requests in flight get what is left of the deadline (at least a second), and every
//! session still open is ended (its server gets the stdio shutdown sequence, its audit
//! session is closed).

pub mod auth;
pub mod capacity;
pub mod conns;
pub mod headers;
pub mod http;
pub mod limits;
pub mod origin;
pub mod owner;
pub mod pipe;
pub mod pool;
pub mod refusals;
pub mod router;
pub mod session;
pub mod splice;
pub mod sse;
pub mod state;
pub mod stateless;
pub mod tls;

use std::convert::Infallible;
use std::future::Future;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use http_body_util::BodyExt as _;
use hyper::service::Service as _;
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use hyper_util::server::conn::auto::Builder;
use hyper_util::service::TowerToHyperService;
use tokio::net::TcpListener;

use crate::setup::Setup;
use auth::Auth;
use capacity::Capacity;
use conns::Conns;
use http::App;
use origin::OriginRules;

/// How long a new connection may take to start its first request (TLS handshake, HTTP/1
/// headers, HTTP/2 preface and HEADERS).
pub const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);
/// How long a client may take to send a request's headers.
const HEADER_TIMEOUT: Duration = Duration::from_secs(30);

/// How `rootfence serve` listens and whom it serves.
#[derive(Debug)]
pub struct ServeConfig {
    /// The listening socket (already bound, so the caller can report the real port).
    pub listener: std::net::TcpListener,
    /// TLS certificate chain and key (PEM), or `None` for plain HTTP (behind a TLS proxy).
    pub tls: Option<(PathBuf, PathBuf)>,
    /// Allowed browser origins.
    pub origins: Vec<String>,
    /// Allowed host names.
    pub hosts: Vec<String>,
    /// Authentication.
    pub auth: Auth,
    /// Most sessions open at once.
    pub max_sessions: usize,
    /// Most sessions, and pooled servers, one principal may hold.
    pub per_principal: usize,
    /// A session idle this long is ended.
    pub idle: Duration,
    /// At shutdown, how long live sessions are kept (and requests in flight may take).
    pub drain: Duration,
    /// How long a client may leave one of its streams unread before it is closed.
    pub stall: Duration,
    /// 2026-07-28 requests.
    pub stateless: stateless::StatelessConfig,
    /// Most connections open at once (below the descriptor limit: [`conns::cap_for`]).
    pub max_connections: usize,
    /// How long a connection may stay open without a request in flight.
    pub connection_idle: Duration,
    /// Most JSON values in one POST body ([`limits`]).
    pub max_values: usize,
    /// The address peers reach this replica at: session ids name it, and requests for
    /// sessions other replicas hold are forwarded to them ([`owner`]).
    pub advertise: Option<String>,
    /// Sessions kept pre-started for clients whose grants are the operator's ([`pool`]);
    /// `None`: the default, where it applies (and nothing said where it does not).
    pub session_pool: Option<usize>,
}

/// Why the server could not run.
#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    /// TLS could not be set up.
    #[error(transparent)]
    Tls(#[from] tls::TlsError),
    /// The listener could not be used.
    #[error("cannot listen: {0}")]
    Listen(std::io::Error),
}

/// Serves until `shutdown` resolves, then drains.
pub async fn serve(
    setup: Setup,
    cfg: ServeConfig,
    shutdown: impl Future<Output = ()>,
) -> Result<(), ServeError> {
    cfg.listener
        .set_nonblocking(true)
        .map_err(ServeError::Listen)?;
    let local: SocketAddr = cfg.listener.local_addr().map_err(ServeError::Listen)?;
    let listener = TcpListener::from_std(cfg.listener).map_err(ServeError::Listen)?;
    let tls = cfg
        .tls
        .as_ref()
        .map(|(c, k)| tls::acceptor(c, k))
        .transpose()?;
    let owner = cfg.advertise.clone().map(|advertise| owner::Owner {
        advertise,
        key: cfg.stateless.key.clone(),
    });
    let table = Arc::new(Capacity::new(
        cfg.max_sessions,
        cfg.per_principal,
        cfg.idle,
        false,
    ));
    let conns = Conns::new(
        cfg.max_connections,
        HANDSHAKE_TIMEOUT.min(cfg.connection_idle),
        cfg.connection_idle,
    );
    let pool = pool::SessionPool::new(&setup, cfg.session_pool, cfg.stall);
    let app = Arc::new(App {
        pool: Arc::clone(&pool),
        stateless: stateless::Stateless::new(cfg.stateless),
        setup,
        table: Arc::clone(&table),
        owner,
        origin: OriginRules::new(local.ip(), &cfg.origins, &cfg.hosts),
        auth: cfg.auth,
        stall: cfg.stall,
        draining: Default::default(),
        refusals: Default::default(),
        max_values: cfg.max_values,
        conns: Arc::clone(&conns),
    });
    let reaper = tokio::spawn(Arc::clone(&table).reaper());
    let pool_reaper = tokio::spawn(Arc::clone(&app.stateless.pool).reaper());
    let refill = tokio::spawn(Arc::clone(&pool).refill());
    let service = TowerToHyperService::new(http::routes(Arc::clone(&app)));
    let mut builder = Builder::new(TokioExecutor::new());
    builder
        .http1()
        .timer(TokioTimer::new())
        .header_read_timeout(HEADER_TIMEOUT);
    let builder = Arc::new(builder);
    let graceful = hyper_util::server::graceful::GracefulShutdown::new();
    tracing::info!(
        address = %local,
        tls = tls.is_some(),
        max_connections = cfg.max_connections,
        "rootfence serve is listening; the MCP endpoint is /mcp"
    );
    tokio::pin!(shutdown);
    let mut deadline: Option<tokio::time::Instant> = None;
    loop {
        // While draining: done when every session has ended, or at the deadline.
        let drained = async {
            match deadline {
                None => std::future::pending().await,
                Some(at) => loop {
                    if table.is_empty() || tokio::time::Instant::now() >= at {
                        return;
                    }
                    tokio::time::sleep(Duration::from_millis(100)).await;
                },
            }
        };
        let (stream, peer) = tokio::select! {
            // Room first (at the cap an idle connection is closed), then the next connection.
            accepted = async {
                conns.make_room().await;
                listener.accept().await
            } => match accepted {
                Ok(a) => a,
                Err(e) => {
                    // Out of descriptors or similar: wait a moment instead of spinning.
                    tracing::warn!("accepting a connection failed: {e}");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
            () = &mut shutdown, if deadline.is_none() => {
                tracing::info!(
                    sessions = table.len(),
                    "shutting down: new sessions go elsewhere; live sessions are kept until they end or for {:?}",
                    cfg.drain
                );
                app.draining.store(true, Ordering::Relaxed);
                // New sessions are refused from now on: the pre-started servers can go.
                pool.close();
                deadline = Some(tokio::time::Instant::now() + cfg.drain);
                continue;
            }
            () = drained => break,
        };
        let guard = conns.admit();
        let _ = stream.set_nodelay(true);
        let watcher = graceful.watcher();
        let builder = Arc::clone(&builder);
        let tls = tls.clone();
        let conns = Arc::clone(&conns);
        // Each request on the connection counts as in flight until its response's last byte.
        let tracked = {
            let conns = Arc::clone(&conns);
            let conn = Arc::clone(&guard.conn);
            let service = service.clone();
            hyper::service::service_fn(move |mut req: hyper::Request<hyper::body::Incoming>| {
                let in_flight = conns.begin(&conn);
                // Who opened a session is audited with the address it came from (issue 29).
                req.extensions_mut().insert(session::ClientAddr(peer));
                let call = service.call(req);
                async move {
                    let resp = call.await?;
                    // The guard lives in the body (in its error mapper, which changes nothing
                    // else: size and end of stream are the body's), so it ends with the body.
                    let body = move |body: axum::body::Body| {
                        body.map_err(move |e| {
                            let _in_flight = &in_flight;
                            e
                        })
                    };
                    Ok::<_, Infallible>(resp.map(body))
                }
            })
        };
        tokio::spawn(async move {
            let work = async move {
                match tls {
                    Some(acceptor) => match acceptor.accept(stream).await {
                        Ok(stream) => {
                            let conn = builder
                                .serve_connection_with_upgrades(TokioIo::new(stream), tracked);
                            watcher.watch(conn.into_owned()).await
                        }
                        Err(e) => {
                            tracing::debug!(%peer, "TLS handshake failed: {e}");
                            Ok(())
                        }
                    },
                    None => {
                        let conn =
                            builder.serve_connection_with_upgrades(TokioIo::new(stream), tracked);
                        watcher.watch(conn.into_owned()).await
                    }
                }
            };
            tokio::select! {
                result = work => {
                    if let Err(e) = result {
                        tracing::debug!(%peer, "connection ended: {e}");
                    }
                }
                // No first request in time, idle too long, or closed to make room.
                () = conns.expired(&guard.conn) => {
                    tracing::debug!(%peer, "closed an idle connection");
                }
            }
            drop(guard);
        });
    }

    // Drained, or out of time.
    drop(listener);
    for s in table.all() {
        s.router.close_get();
    }
    let left = deadline
        .map(|at| at.saturating_duration_since(tokio::time::Instant::now()))
        .unwrap_or_default()
        .max(Duration::from_secs(1));
    if tokio::time::timeout(left, graceful.shutdown())
        .await
        .is_err()
    {
        tracing::warn!(
            "requests were still in flight after {:?}; ending their sessions",
            cfg.drain
        );
    }
    reaper.abort();
    pool_reaper.abort();
    pool.close();
    refill.abort();
    let mut sessions = table.all();
    sessions.extend(app.stateless.pool.all());
    for s in &sessions {
        s.close();
    }
    let grace = app.setup.shutdown_grace * 2 + Duration::from_secs(5);
    let all_done = async {
        for s in &sessions {
            s.wait().await;
        }
        pool.wait_all().await;
    };
    if tokio::time::timeout(grace, all_done).await.is_err() {
        tracing::warn!("some sessions did not end within {grace:?}");
    }
    app.refusals.close();
    tracing::info!("rootfence serve stopped");
    Ok(())
}
