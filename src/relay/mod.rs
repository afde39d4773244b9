//! The relay: session state, one pump per direction, interception, child lifecycle.
//!
//! [`run`] starts the server, then runs four tasks (two pumps, two writers) and watches, in one
//! place, for the events that end a session:
//!
//! - the host closes rootfence's stdin: the server's stdin is closed after everything queued,
//!   then, after a grace period each, SIGTERM and SIGKILL go to the server's process group
//!   (the MCP stdio shutdown order);
//! - the host stops reading rootfence's stdout: handled the same way;
//! - the server closes its stdout: every host request still waiting is answered with an error
//!   at once, then the server is shut down the same way;
//! - the server exits: its remaining output is relayed (for a bounded time), stragglers in its
//!   process group are killed, every host request still waiting is answered with an error
//!   naming the cause, and the session ends with the server's exit status (128 + signal).
//!
//! SIGINT, SIGTERM and SIGHUP sent to rootfence are forwarded to the server's process group;
//! the server decides what they mean, and its exit ends the session.

mod child;
pub mod intercept;
mod pump;
pub mod session;
mod stdio;

use std::sync::Arc;
use std::time::Duration;

use nix::sys::signal::Signal;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::signal::unix::{SignalKind, signal};
use tokio::sync::mpsc;

pub use child::SpawnError;
pub use intercept::{Action, Deferred, Intercepted, Interceptor, PassThrough, ProtocolError};
pub use session::{PeerInfo, Pending, Session, Side};

use crate::jsonrpc::framing::{DEFAULT_MAX_LINE, LineReader};

/// Messages queued per direction before forwarding waits (flow control).
const QUEUE: usize = 1024;

/// How a relay session is run.
#[derive(Debug)]
pub struct RelayConfig {
    /// The server command (possibly already wrapped by the sandbox launcher).
    pub command: std::process::Command,
    /// The longest message accepted from either side, in bytes.
    pub max_line: usize,
    /// How long to wait after closing the server's stdin before SIGTERM, and after SIGTERM
    /// before SIGKILL.
    pub shutdown_grace: Duration,
    /// How long to keep relaying the server's output after it exited (its stdout may be held
    /// open by a process it left behind).
    pub drain: Duration,
}

impl RelayConfig {
    /// Defaults for a command: 64 MiB lines, a 2 s grace period, 1 s to drain.
    pub fn new(command: std::process::Command) -> Self {
        RelayConfig {
            command,
            max_line: DEFAULT_MAX_LINE,
            shutdown_grace: Duration::from_secs(2),
            drain: Duration::from_secs(1),
        }
    }
}

/// Why a session ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EndCause {
    /// The host closed rootfence's stdin.
    HostClosedInput,
    /// The host stopped reading rootfence's stdout.
    HostClosedOutput,
    /// The server closed its stdout.
    ServerClosedOutput,
    /// The server exited on its own.
    ServerExited,
}

impl EndCause {
    /// A stable name for the audit log.
    pub fn as_str(self) -> &'static str {
        match self {
            EndCause::HostClosedInput => "host_closed_input",
            EndCause::HostClosedOutput => "host_closed_output",
            EndCause::ServerClosedOutput => "server_closed_output",
            EndCause::ServerExited => "server_exited",
        }
    }
}

/// How a session ended.
#[derive(Debug)]
pub struct Outcome {
    /// What ended it.
    pub cause: EndCause,
    /// The server's exit status.
    pub status: std::process::ExitStatus,
    /// rootfence's exit code: the server's code, or 128 + signal.
    pub exit_code: u8,
    /// The session (counters, peers) as it ended.
    pub session: Arc<Session>,
}

/// Why the relay could not run.
#[derive(Debug, thiserror::Error)]
pub enum RelayError {
    /// The server did not start.
    #[error(transparent)]
    Spawn(#[from] SpawnError),
    /// rootfence's own stdio or signals could not be set up, or waiting for the child failed.
    #[error("{what}: {source}")]
    Io {
        /// What was being done.
        what: &'static str,
        /// The OS error.
        source: std::io::Error,
    },
}

fn io_err(what: &'static str) -> impl FnOnce(std::io::Error) -> RelayError {
    move |source| RelayError::Io { what, source }
}

/// Runs a session between rootfence's own stdin/stdout and the server command.
///
/// Call it from the future that `block_on` drives on the main thread (see the parent-death
/// note in the child module).
pub async fn run<I: Interceptor>(cfg: RelayConfig, icpt: Arc<I>) -> Result<Outcome, RelayError> {
    let (host_in, host_out) =
        stdio::host_streams().map_err(io_err("cannot use rootfence's stdin/stdout"))?;
    run_with(cfg, icpt, host_in, host_out).await
}

/// Runs a session over the given host streams.
pub async fn run_with<I, R, W>(
    cfg: RelayConfig,
    icpt: Arc<I>,
    host_in: R,
    host_out: W,
) -> Result<Outcome, RelayError>
where
    I: Interceptor,
    R: AsyncRead + Send + Unpin + 'static,
    W: AsyncWrite + Send + Unpin + 'static,
{
    let mut signals = Signals::new().map_err(io_err("cannot install signal handlers"))?;
    let server = child::spawn(cfg.command)?;
    let pgid = server.pgid;
    let mut child = server.child;

    let (to_host, to_host_queue) = mpsc::channel(QUEUE);
    let (to_server, to_server_queue) = mpsc::channel(QUEUE);
    let session = Arc::new(Session::new(to_host, to_server));
    icpt.on_start(&session);

    let mut host_writer = tokio::spawn(pump::writer(host_out, to_host_queue));
    let server_writer = tokio::spawn(pump::writer(server.stdin, to_server_queue));
    let mut host_pump = tokio::spawn(pump::pump(
        Side::Host,
        LineReader::new(host_in, cfg.max_line),
        cfg.max_line,
        Arc::clone(&session),
        Arc::clone(&icpt),
    ));
    let mut server_pump = tokio::spawn(pump::pump(
        Side::Server,
        LineReader::new(server.stdout, cfg.max_line),
        cfg.max_line,
        Arc::clone(&session),
        Arc::clone(&icpt),
    ));

    let mut cause = None;
    let (mut host_in_done, mut host_out_done, mut server_out_done) = (false, false, false);
    let mut shutdown = Shutdown::new(pgid, cfg.shutdown_grace);
    let status = loop {
        tokio::select! {
            status = child.wait() => break status.map_err(io_err("waiting for the server failed"))?,
            result = &mut host_pump, if !host_in_done => {
                host_in_done = true;
                log_task_end("reading the host", result);
                cause.get_or_insert(EndCause::HostClosedInput);
                shutdown.begin(&session).await;
            }
            result = &mut host_writer, if !host_out_done => {
                host_out_done = true;
                log_task_end("writing to the host", result);
                cause.get_or_insert(EndCause::HostClosedOutput);
                shutdown.begin(&session).await;
            }
            result = &mut server_pump, if !server_out_done => {
                server_out_done = true;
                log_task_end("reading the server", result);
                // A server that exits closes its output a moment before its exit status can
                // be read: give it that moment, so requests are answered with the real cause.
                if let Ok(status) = tokio::time::timeout(cfg.drain, child.wait()).await {
                    break status.map_err(io_err("waiting for the server failed"))?;
                }
                cause.get_or_insert(EndCause::ServerClosedOutput);
                answer_waiting(&session, "the server closed its output");
                shutdown.begin(&session).await;
            }
            Some(sig) = signals.recv() => {
                tracing::info!("forwarding {sig} to the server");
                child::signal_group(pgid, sig);
            }
            () = shutdown.tick() => {}
        }
    };

    // The server exited: let its last output through, then clear its process group.
    if !server_out_done
        && tokio::time::timeout(cfg.drain, &mut server_pump)
            .await
            .is_err()
    {
        tracing::warn!("the server's output stayed open after it exited; stopped reading it");
        server_pump.abort();
    }
    child::signal_group(pgid, Signal::SIGKILL);
    server_writer.abort();
    answer_waiting(&session, &child::describe_status(status));

    // Everything for the host is queued; let the writer finish it.
    if !host_out_done {
        session.close_host_output().await;
        if tokio::time::timeout(cfg.drain, &mut host_writer)
            .await
            .is_err()
        {
            tracing::warn!("the host did not take rootfence's last messages in time");
        }
    }
    host_pump.abort();
    Ok(Outcome {
        cause: cause.unwrap_or(EndCause::ServerExited),
        status,
        exit_code: child::exit_code(status),
        session,
    })
}

/// Answers every host request still waiting for the server with an error naming `cause`.
fn answer_waiting(session: &Arc<Session>, cause: &str) {
    for pending in session.server_gone(cause) {
        let line = pump::server_gone_error(&pending.id, &pending.method, cause);
        session.send_detached(Side::Host, line);
    }
}

fn log_task_end(what: &str, result: Result<std::io::Result<()>, tokio::task::JoinError>) {
    match result {
        Ok(Ok(())) => tracing::debug!("{what}: end of stream"),
        Ok(Err(e)) => tracing::debug!("{what}: {e}"),
        Err(e) => tracing::error!("{what}: task failed: {e}"),
    }
}

/// The stdio shutdown sequence: close the server's stdin, wait, SIGTERM, wait, SIGKILL.
struct Shutdown {
    pgid: nix::unistd::Pid,
    grace: Duration,
    /// Signals still to send, in order, each after a grace period.
    next: Vec<Signal>,
    deadline: Option<tokio::time::Instant>,
}

impl Shutdown {
    fn new(pgid: nix::unistd::Pid, grace: Duration) -> Self {
        Shutdown {
            pgid,
            grace,
            next: Vec::new(),
            deadline: None,
        }
    }

    async fn begin(&mut self, session: &Session) {
        if self.deadline.is_some() {
            return;
        }
        session.close_server_input().await;
        self.next = vec![Signal::SIGKILL, Signal::SIGTERM];
        self.deadline = Some(tokio::time::Instant::now() + self.grace);
    }

    /// Completes when the next signal is due (never, before `begin`), and sends it.
    async fn tick(&mut self) {
        let Some(deadline) = self.deadline else {
            return std::future::pending().await;
        };
        tokio::time::sleep_until(deadline).await;
        if let Some(sig) = self.next.pop() {
            tracing::info!(
                "the server is still running after {:?}; sending {sig}",
                self.grace
            );
            child::signal_group(self.pgid, sig);
        }
        self.deadline = (!self.next.is_empty()).then(|| tokio::time::Instant::now() + self.grace);
    }
}

/// SIGINT, SIGTERM and SIGHUP, merged into one stream.
struct Signals {
    int: tokio::signal::unix::Signal,
    term: tokio::signal::unix::Signal,
    hup: tokio::signal::unix::Signal,
}

impl Signals {
    fn new() -> std::io::Result<Self> {
        Ok(Signals {
            int: signal(SignalKind::interrupt())?,
            term: signal(SignalKind::terminate())?,
            hup: signal(SignalKind::hangup())?,
        })
    }

    async fn recv(&mut self) -> Option<Signal> {
        tokio::select! {
            Some(()) = self.int.recv() => Some(Signal::SIGINT),
            Some(()) = self.term.recv() => Some(Signal::SIGTERM),
            Some(()) = self.hup.recv() => Some(Signal::SIGHUP),
            else => None,
        }
    }
}
