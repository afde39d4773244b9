//! `rootfence serve`: an MCP server behind rootfence, over Streamable HTTP. The options
//! shared with `run` (policy, roots, sandbox, audit, limits) are `run`'s own
//! ([`ServerOptions`]); this file adds the HTTP side and starts the server.

use std::ffi::OsString;
use std::net::{SocketAddr, ToSocketAddrs};
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::{Context as _, bail};
use rootfence::serve::auth::Auth;
use rootfence::serve::stateless::StatelessConfig;
use rootfence::serve::{self, ServeConfig};

use super::run::{ServerOptions, parse_duration, setup};

/// Serves an MCP server over Streamable HTTP, with the same enforcement as `rootfence run`.
///
/// Clients connect to http://ADDR/mcp (https with --tls-cert). Each session (protocol
/// revisions 2025-03-26 to 2025-11-25, `Mcp-Session-Id`) gets its own sandboxed server
/// process, its own roots (from that client, bounded by --root) and its own audit session;
/// 2026-07-28 requests are stateless and served by a pool of server processes keyed by the
/// roots they run under. /healthz and /readyz are for probes (ready means "can serve its
/// sessions"; a full replica stays ready), /capacity (JSON) and /metrics (Prometheus) say
/// how full it is.
///
/// Security: bind to loopback unless clients are elsewhere; beyond loopback, authenticate
/// (--auth-token-file, or an authenticating proxy in front) and use TLS
/// or a TLS-terminating proxy. Browser origins are refused unless listed (--allowed-origin).
/// SIGTERM or SIGINT drains: no new sessions, live sessions are kept until they end or
/// --drain-timeout, then servers stop.
///
/// Example:
///
///     rootfence serve --listen 127.0.0.1:8080 -- npx -y @modelcontextprotocol/server-everything
#[derive(Debug, clap::Args)]
#[command(verbatim_doc_comment)]
pub struct ServeArgs {
    /// The address to listen on (host:port; port 0 picks a free port, printed at start).
    #[arg(long, value_name = "ADDR", default_value = "127.0.0.1:8080")]
    pub listen: String,

    #[command(flatten)]
    pub options: ServerOptions,

    /// A browser origin allowed to use the server (repeatable), e.g. http://localhost:6274.
    /// Requests with any other Origin header get 403 (DNS rebinding protection).
    #[arg(long = "allowed-origin", value_name = "ORIGIN", help_heading = "HTTP")]
    pub origins: Vec<String>,

    /// A host name clients reach the server by (repeatable; `name` or `name:port`). On
    /// loopback, localhost names are always allowed; elsewhere, without any, Host is not
    /// checked.
    #[arg(long = "allowed-host", value_name = "NAME", help_heading = "HTTP")]
    pub hosts: Vec<String>,

    /// Require `Authorization: Bearer <token>` with one of the tokens in FILE (one per line).
    #[arg(long, value_name = "FILE", help_heading = "HTTP")]
    pub auth_token_file: Option<PathBuf>,

    /// Serve without authentication on a non-loopback address (an authenticating proxy in
    /// front does it).
    #[arg(long, help_heading = "HTTP")]
    pub allow_unauthenticated: bool,

    /// TLS certificate chain (PEM, leaf first). Without it, plain HTTP (put a TLS proxy in
    /// front beyond loopback).
    #[arg(long, value_name = "FILE", requires = "tls_key", help_heading = "HTTP")]
    pub tls_cert: Option<PathBuf>,

    /// TLS private key (PEM) of --tls-cert.
    #[arg(
        long,
        value_name = "FILE",
        requires = "tls_cert",
        help_heading = "HTTP"
    )]
    pub tls_key: Option<PathBuf>,

    /// Most sessions open at once (each runs its own server process); more get 503.
    #[arg(long, value_name = "N", default_value_t = 64, help_heading = "HTTP")]
    pub max_sessions: usize,

    /// End a session with no open stream and no message for this long.
    #[arg(long, value_name = "DURATION", default_value = "10m", value_parser = parse_duration, help_heading = "HTTP")]
    pub session_idle: Duration,

    /// At shutdown (SIGTERM), how long live sessions are kept, served as before, before they
    /// are ended; rootfence exits as soon as they have all ended. Readiness is 503 meanwhile.
    #[arg(long, value_name = "DURATION", default_value = "30s", value_parser = parse_duration, help_heading = "HTTP")]
    pub drain_timeout: Duration,

    /// How long a client may leave one of its streams unread before rootfence closes it.
    #[arg(long, value_name = "DURATION", default_value = "30s", value_parser = parse_duration, help_heading = "HTTP")]
    pub stream_stall: Duration,

    /// The key (at least 32 bytes) that signs the state 2026-07-28 requests carry between
    /// requests; give every replica the same file. Default: a random key per process (state
    /// is then only valid on this replica).
    #[arg(long, value_name = "FILE", help_heading = "HTTP")]
    pub state_key_file: Option<PathBuf>,

    /// Most sessions one token may hold (and, likewise, pooled servers: half of
    /// --pool-size). Default: half of --max-sessions when the token file holds several tokens,
    /// so one client cannot take every slot; all of them otherwise.
    #[arg(long, value_name = "N", help_heading = "HTTP")]
    pub max_sessions_per_token: Option<usize>,

    /// The address (host:port) the other replicas reach this one at (in Kubernetes, the pod
    /// IP from the downward API). Session ids then name their replica, and a request, GET
    /// stream or DELETE for a session another replica holds is forwarded to it, so sessions
    /// work behind any load balancer, round-robin included. Needs --state-key-file (the same
    /// key on every replica).
    #[arg(long, value_name = "ADDR", help_heading = "HTTP")]
    pub advertise: Option<String>,

    /// Most connections open at once. Default: what the descriptor limit allows (the soft
    /// limit is raised to the hard one at start), less a reserve for sessions. At the cap,
    /// the oldest connection that has not sent a request is closed to make room.
    #[arg(long, value_name = "N", help_heading = "HTTP")]
    pub max_connections: Option<usize>,

    /// Close a connection with no request in flight for this long (keep-alive, HTTP/2). A new
    /// connection must start its first request within 10s.
    #[arg(long, value_name = "DURATION", default_value = "60s", value_parser = parse_duration, help_heading = "HTTP")]
    pub connection_idle: Duration,

    /// Most JSON values (and keys) in one POST body; a body with more gets 413 as soon as
    /// the limit is crossed, before anything is parsed (nesting is limited to 128 levels).
    #[arg(long, value_name = "N", default_value_t = rootfence::serve::limits::DEFAULT_MAX_VALUES, help_heading = "HTTP")]
    pub max_json_values: usize,

    /// Server processes kept for 2026-07-28 requests (one per set of roots); the least
    /// recently used is stopped beyond this.
    #[arg(long, value_name = "N", default_value_t = 8, help_heading = "HTTP")]
    pub pool_size: usize,

    /// Sessions kept pre-started (a sandboxed server up before any client asks), so that
    /// opening a session does not wait for a server start. Used only when the roots are the
    /// operator's (--root or roots.static given) and the client's `initialize` declares no
    /// roots: then no session could get other grants. 0 turns it off. Default: 2 (when it
    /// applies).
    #[arg(long, value_name = "N", help_heading = "HTTP")]
    pub session_pool: Option<usize>,

    /// The server command and its arguments, after `--`.
    #[arg(last = true, required = true, value_name = "COMMAND")]
    pub command: Vec<OsString>,
}

pub fn serve(args: ServeArgs) -> anyhow::Result<ExitCode> {
    let mut setup = setup(&args.options, &args.command)?;
    setup.report_once = Some(Default::default());
    let addr = resolve(&args.listen)?;
    let auth = auth(&args, addr)?;
    let key = state_key(args.state_key_file.as_deref())?;
    if let Some(a) = &args.advertise {
        if args.state_key_file.is_none() {
            bail!(
                "--advertise {a} needs --state-key-file: session ids are protected with the key every replica shares"
            );
        }
        if resolve(a).is_err() {
            bail!("--advertise {a}: not host:port (the address other replicas reach this one at)");
        }
    }
    if args.max_sessions == 0 {
        bail!("--max-sessions must be at least 1");
    }
    let max_connections = connection_cap(&args)?;
    // Several tokens: each gets a share, so one cannot take every slot.
    let shared = auth.principals() > 1;
    let listener = std::net::TcpListener::bind(addr)
        .with_context(|| format!("cannot listen on {addr} (is it in use? try another --listen)"))?;
    let local = listener
        .local_addr()
        .context("cannot read the listening address")?;
    let scheme = if args.tls_cert.is_some() {
        "https"
    } else {
        "http"
    };
    rootfence::stderr_line!("rootfence: serving {scheme}://{local}/mcp");
    let cfg = ServeConfig {
        listener,
        tls: args.tls_cert.clone().zip(args.tls_key.clone()),
        origins: args.origins.clone(),
        hosts: args.hosts.clone(),
        auth,
        max_sessions: args.max_sessions,
        per_principal: args
            .max_sessions_per_token
            .unwrap_or(if shared {
                args.max_sessions / 2
            } else {
                args.max_sessions
            })
            .max(1),
        idle: args.session_idle,
        drain: args.drain_timeout,
        stall: args.stream_stall,
        stateless: StatelessConfig {
            key,
            pool: args.pool_size.max(1),
            per_principal: if shared {
                args.pool_size.div_ceil(2)
            } else {
                args.pool_size
            },
            ttl: Duration::from_secs(600),
        },
        max_connections,
        connection_idle: args.connection_idle,
        max_values: args.max_json_values.max(1),
        advertise: args.advertise.clone(),
        session_pool: args.session_pool,
    };
    // Worker threads live as long as the runtime: server processes are started from them,
    // and their parent-death signal is tied to the thread that started them.
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    let telemetry = setup.telemetry.clone();
    let result = runtime.block_on(serve::serve(setup, cfg, shutdown_signal()));
    runtime.shutdown_timeout(Duration::from_secs(1));
    // Every session has ended (drained): what telemetry still holds goes out, bounded.
    if let Some(t) = telemetry {
        t.shutdown();
    }
    result?;
    Ok(ExitCode::SUCCESS)
}

/// The connection cap: raises the soft descriptor limit, then keeps a reserve for sessions.
fn connection_cap(args: &ServeArgs) -> anyhow::Result<usize> {
    let (nofile, hard) = serve::conns::raise_nofile();
    let session_pool = args
        .session_pool
        .unwrap_or(rootfence::serve::pool::DEFAULT_SIZE);
    let sessions = args.max_sessions + args.pool_size.max(1) + session_pool;
    let Some(auto) = serve::conns::cap_for(nofile, sessions) else {
        bail!(
            "the open-file limit ({nofile}, hard {hard}) leaves no room for connections beside --max-sessions {}, --pool-size {} and --session-pool {}: raise it (ulimit -n, LimitNOFILE=) or lower those",
            args.max_sessions,
            args.pool_size,
            session_pool
        );
    };
    Ok(match args.max_connections {
        Some(0) => bail!("--max-connections must be at least 1"),
        Some(n) if n > auto => {
            rootfence::stderr_line!(
                "rootfence: warning: --max-connections {n} lowered to {auto}: the open-file limit is {nofile}"
            );
            auto
        }
        Some(n) => n,
        None => auto,
    })
}

/// `host:port` to an address (the first a name resolves to).
fn resolve(listen: &str) -> anyhow::Result<SocketAddr> {
    if let Ok(addr) = listen.parse() {
        return Ok(addr);
    }
    listen
        .to_socket_addrs()
        .with_context(|| format!("--listen {listen}: not host:port (e.g. 127.0.0.1:8080)"))?
        .next()
        .with_context(|| format!("--listen {listen}: the name resolves to no address"))
}

fn auth(args: &ServeArgs, addr: SocketAddr) -> anyhow::Result<Auth> {
    let auth = match &args.auth_token_file {
        Some(file) => Auth::token_file(file)?,
        None => Auth::Open,
    };
    if matches!(auth, Auth::Open) && !addr.ip().is_loopback() {
        if !args.allow_unauthenticated {
            bail!(
                "--listen {addr} is reachable beyond this machine and no authentication is set: anyone who reaches it could use the server; give --auth-token-file, or --allow-unauthenticated if a proxy in front authenticates"
            );
        }
        rootfence::stderr_line!(
            "rootfence: warning: serving {addr} without authentication (--allow-unauthenticated)"
        );
    }
    if !addr.ip().is_loopback() && args.tls_cert.is_none() {
        rootfence::stderr_line!(
            "rootfence: warning: plain HTTP on {addr}: put a TLS-terminating proxy in front, or give --tls-cert and --tls-key"
        );
    }
    Ok(auth)
}

fn state_key(file: Option<&std::path::Path>) -> anyhow::Result<Vec<u8>> {
    match file {
        Some(path) => {
            let bytes = std::fs::read(path)
                .with_context(|| format!("cannot read --state-key-file {}", path.display()))?;
            let key: Vec<u8> = bytes.trim_ascii().to_vec();
            if key.len() < 32 {
                bail!(
                    "--state-key-file {}: the key must be at least 32 bytes (e.g. `head -c 32 /dev/urandom | base64 > {}`)",
                    path.display(),
                    path.display()
                );
            }
            Ok(key)
        }
        None => {
            let mut key = vec![0u8; 32];
            getrandom::getrandom(&mut key).context("the OS random source is not available")?;
            Ok(key)
        }
    }
}

/// Resolves on SIGTERM, SIGINT or SIGHUP.
async fn shutdown_signal() {
    use tokio::signal::unix::{SignalKind, signal};
    let (Ok(mut term), Ok(mut int), Ok(mut hup)) = (
        signal(SignalKind::terminate()),
        signal(SignalKind::interrupt()),
        signal(SignalKind::hangup()),
    ) else {
        tracing::error!("cannot install signal handlers; stop rootfence serve with SIGKILL");
        return std::future::pending().await;
    };
    tokio::select! {
        _ = term.recv() => {}
        _ = int.recv() => {}
        _ = hup.recv() => {}
    }
}
