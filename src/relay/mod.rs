//! The relay: session state, one pump per direction (one per server generation on the server
//! side), interception, the server's lifecycle across generations.
//!
//! [`run_with`] relays between the host's streams and the server, and watches, in one place,
//! for the events that end a session:
//!
//! - the host closes rootfence's stdin: every server generation's stdin is closed after
//!   everything queued, then, after a grace period each, SIGTERM and SIGKILL go to its process
//!   group (the MCP stdio shutdown order);
//! - the host stops reading rootfence's stdout (or lets rootfence's own queue to it fill up):
//!   handled the same way;
//! - the server (its newest generation) closes its stdout: every host request still waiting is
//!   answered with an error at once, then the server is shut down the same way;
//! - the server exits: its remaining output is relayed (for a bounded time), stragglers in its
//!   process group are killed, every host request still waiting is answered with an error
//!   naming the cause, and the session ends with the server's exit status (128 + signal);
//! - a new server generation cannot start: the session ends the same way (fail closed).
//!
//! The server is started either at once ([`RelayConfig::command`]) or when the interceptor asks
//! for it ([`RelayConfig::deferred`], [`Session::launch`]): rootfence's enforcer waits for the
//! host's roots so the first server process is confined to them, and starts a new generation
//! whenever they change (see `generation.rs`).
//!
//! SIGINT, SIGTERM and SIGHUP sent to rootfence are forwarded to every live generation's
//! process group; the server decides what they mean, and its exit ends the session.
//! (`RelayConfig::forward_hangup = false` keeps SIGHUP for the caller: `rootfence run`
//! reloads its policy on it.)

mod child;
pub mod generation;
pub mod intercept;
mod last_words;
pub mod observe;
mod pump;
pub mod session;
mod stdio;

use std::collections::BTreeMap;
use std::os::unix::process::ExitStatusExt;
use std::process::ExitStatus;
use std::sync::Arc;
use std::time::Duration;

use nix::sys::signal::Signal;
use nix::unistd::Pid;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::signal::unix::{SignalKind, signal};
use tokio::sync::{mpsc, watch};
use tokio::task::{JoinHandle, JoinSet};

pub use child::{SpawnError, exit_code};
pub use generation::{GenTiming, Launch, Launched};
pub use intercept::{
    Action, Drain, Intercepted, Interceptor, Offered, PassThrough, ProtocolError, Screened,
};
use last_words::LastWords;
pub use observe::{Answer, Observer};
pub use session::{Gen, Pending, Session, Side};

use crate::jsonrpc::framing::{DEFAULT_MAX_LINE, LineReader};
use pump::Origin;
use session::{Event, Lanes, LaunchRequest};

/// How a relay session is run.
#[derive(Debug)]
pub struct RelayConfig {
    /// The server command, started at once; `None` to wait until the interceptor calls
    /// [`Session::launch`].
    pub command: Option<std::process::Command>,
    /// The longest message accepted from either side, in bytes.
    pub max_line: usize,
    /// How long to wait after closing the server's stdin before SIGTERM, and after SIGTERM
    /// before SIGKILL.
    pub shutdown_grace: Duration,
    /// How long to keep relaying the server's output after it exited (its stdout may be held
    /// open by a process it left behind).
    pub drain: Duration,
    /// How generations are brought up and retired.
    pub timing: GenTiming,
    /// Who is told about each host request's life (telemetry); `None` costs nothing.
    pub observer: Option<Arc<dyn Observer>>,
    /// The most server generations of the session alive at once (at least 2: the one
    /// serving and the one starting). Starting one more ends the oldest beyond it at once:
    /// what they still hold is answered with an error asking the host to send it again,
    /// and their processes are killed.
    pub max_generations: usize,
    /// Forward SIGINT, SIGTERM and SIGHUP sent to rootfence to the server (true for
    /// `rootfence run`, whose signals are the session's). `rootfence serve` runs many
    /// sessions in one process and turns its own signals into a drain instead.
    pub forward_signals: bool,
    /// Whether SIGHUP is among the signals forwarded (true) or left to the caller (false:
    /// `rootfence run` reloads its policy on SIGHUP instead).
    pub forward_hangup: bool,
}

impl RelayConfig {
    /// Defaults for a server the interceptor starts itself ([`Session::launch`]): 64 MiB
    /// lines, a 2 s grace period, 1 s to drain. (Set `command` to start one at once.)
    pub fn deferred() -> Self {
        RelayConfig {
            command: None,
            max_line: DEFAULT_MAX_LINE,
            shutdown_grace: Duration::from_secs(2),
            drain: Duration::from_secs(1),
            timing: GenTiming {
                start_timeout: Duration::from_secs(30),
                grace: Duration::from_secs(5),
            },
            observer: None,
            max_generations: DEFAULT_MAX_GENERATIONS,
            forward_signals: true,
            forward_hangup: true,
        }
    }
}

/// Default of [`RelayConfig::max_generations`]: the generation serving, the one starting,
/// and one finishing what it holds.
pub const DEFAULT_MAX_GENERATIONS: usize = 3;

crate::coded::coded! {
    /// Why a session ended.
    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    pub enum EndCause {
        /// The host closed rootfence's stdin.
        HostClosedInput => "host_closed_input",
        /// The host stopped reading rootfence's stdout.
        HostClosedOutput => "host_closed_output",
        /// The server closed its stdout.
        ServerClosedOutput => "server_closed_output",
        /// The server exited on its own.
        ServerExited => "server_exited",
        /// A server generation could not start or be brought up.
        ServerFailed => "server_failed",
        /// rootfence stopped the session (see [`Interceptor::fatal`]).
        Stopped => "stopped",
    }
    /// A stable name for the audit log.
    pub fn as_str;
}

/// How a session ended.
#[derive(Debug)]
pub struct Outcome {
    /// What ended it.
    pub cause: EndCause,
    /// The server's exit status (its newest generation's; success when no server ever
    /// started).
    pub status: ExitStatus,
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

/// Runs a session between rootfence's own stdin/stdout and the server.
///
/// Call it from the future that `block_on` drives on the main thread (see the parent-death
/// note in the child module).
pub async fn run<I: Interceptor>(cfg: RelayConfig, icpt: Arc<I>) -> Result<Outcome, RelayError> {
    let (host_in, host_out) =
        stdio::host_streams().map_err(io_err("cannot use rootfence's stdin/stdout"))?;
    run_with(cfg, icpt, host_in, host_out).await
}

/// A server generation's process, as the main loop holds it.
struct Running {
    pgid: Pid,
    pump: JoinHandle<()>,
    /// Its stdio shutdown sequence once begun ([`Loop::stop`]); dropping it (the generation
    /// exited, or the session ended) ends the sequence, so no signal reaches a reused pid.
    stopping: JoinSet<()>,
    _keep: Option<Box<dyn std::any::Any + Send>>,
}

/// Runs a session over the given host streams.
pub async fn run_with<I, R, W>(
    mut cfg: RelayConfig,
    icpt: Arc<I>,
    host_in: R,
    host_out: W,
) -> Result<Outcome, RelayError>
where
    I: Interceptor,
    R: AsyncRead + Send + Unpin + 'static,
    W: AsyncWrite + Send + Unpin + 'static,
{
    // SIGINT, SIGTERM and (unless the caller takes it) SIGHUP, merged into one channel.
    let (signal_tx, mut signals) = mpsc::channel::<Signal>(8);
    if cfg.forward_signals {
        let hangup = cfg
            .forward_hangup
            .then_some((SignalKind::hangup(), Signal::SIGHUP));
        let kinds = [
            (SignalKind::interrupt(), Signal::SIGINT),
            (SignalKind::terminate(), Signal::SIGTERM),
        ];
        for (kind, sig) in kinds.into_iter().chain(hangup) {
            let mut stream = signal(kind).map_err(io_err("cannot install signal handlers"))?;
            let tx = signal_tx.clone();
            tokio::spawn(async move {
                while stream.recv().await.is_some() && tx.send(sig).await.is_ok() {}
            });
        }
    }
    let first_command = cfg.command.take();
    let (to_host, host_lanes) = Lanes::new();
    let (events_tx, mut events) = mpsc::channel(256);
    let session = Arc::new(Session::new(
        to_host,
        events_tx.clone(),
        cfg.observer.clone(),
    ));
    let mut loop_state = Loop {
        cfg: &cfg,
        session: Arc::clone(&session),
        events: events_tx,
        running: BTreeMap::new(),
        host_in_done: false,
        cause: None,
        failed: false,
        newest_words: None,
    };
    if let Some(command) = first_command {
        // Asked for like any generation (nobody waits for the answer), started now.
        drop(session.launch(Launch::command(command)));
        if let Ok(Event::Launch(request)) = events.try_recv() {
            loop_state.launch(*request, &icpt, true)?;
        }
    }
    icpt.on_start(&session);

    let (_host_gate, host_gate_rx) = watch::channel(true);
    let mut host_writer = tokio::spawn(pump::writer(host_out, host_lanes, host_gate_rx));
    let mut host_pump = tokio::spawn(pump::pump(
        Origin {
            side: Side::Host,
            generation: 0,
        },
        LineReader::new(host_in, cfg.max_line),
        cfg.max_line,
        Arc::clone(&session),
        Arc::clone(&icpt),
    ));

    let mut host_out_done = false;
    let fatal = icpt.fatal();
    tokio::pin!(fatal);
    let mut stopped = false;
    // While the host has closed its input but a server is still to be launched for what it
    // sent: bounded, so a session whose interceptor never launches still ends.
    let mut launch_wait: Option<tokio::time::Instant> = None;
    let final_status = loop {
        tokio::select! {
            Some(event) = events.recv() => match event {
                Event::Launch(request) => {
                    if let Err(e) = loop_state.launch(*request, &icpt, false) {
                        tracing::error!("{e}");
                    }
                    if !stopped {
                        launch_wait = None;
                    }
                }
                Event::Stuck { side: Side::Host, .. } => {
                    if !host_out_done {
                        host_out_done = true;
                        host_writer.abort();
                        loop_state.cause.get_or_insert(EndCause::HostClosedOutput);
                        loop_state.stop_all();
                    }
                }
                Event::Stuck { side: Side::Server, generation } => {
                    if let Some(r) = loop_state.running.get(&generation) {
                        tracing::error!("server generation {generation} does not read its input; stopping it");
                        child::signal_group(r.pgid, Signal::SIGKILL);
                    }
                }
                event => {
                    if let Some(status) = loop_state.on_gen_event(event).await {
                        break status;
                    }
                    if loop_state.failed && loop_state.running.is_empty() {
                        break ExitStatus::from_raw(1 << 8);
                    }
                }
            },
            result = &mut host_pump, if !loop_state.host_in_done => {
                loop_state.host_in_done = true;
                log_task_end("reading the host", result);
                loop_state.cause.get_or_insert(EndCause::HostClosedInput);
                if loop_state.running.is_empty() && (stopped || loop_state.failed) {
                    break ExitStatus::from_raw(if stopped { 2 << 8 } else { 1 << 8 });
                }
                if !session.launched() {
                    if !session.host_spoke() {
                        break ExitStatus::from_raw(0);
                    }
                    launch_wait = Some(tokio::time::Instant::now() + Duration::from_secs(30));
                }
                loop_state.stop_all();
            }
            // (A disabled branch's future is made, never polled.)
            () = tokio::time::sleep_until(launch_wait.unwrap_or_else(tokio::time::Instant::now)),
                if launch_wait.is_some() => {
                if stopped {
                    break ExitStatus::from_raw(2 << 8);
                }
                tracing::warn!("the host closed its input and no server was started");
                break ExitStatus::from_raw(0);
            }
            result = &mut host_writer, if !host_out_done => {
                host_out_done = true;
                log_task_end("writing to the host", result);
                loop_state.cause.get_or_insert(EndCause::HostClosedOutput);
                loop_state.stop_all();
                if !session.launched() {
                    break ExitStatus::from_raw(0);
                }
            }
            reason = &mut fatal, if !stopped => {
                stopped = true;
                tracing::error!("stopping the session: {reason}");
                loop_state.cause = Some(EndCause::Stopped);
                answer_waiting(&session, &format!("rootfence stopped the session ({reason})"));
                loop_state.stop_all();
                if loop_state.running.is_empty() {
                    // No server to wait for: what the host sends in the next moment is still
                    // answered (with the error), then the session ends.
                    launch_wait = Some(tokio::time::Instant::now() + cfg.drain);
                }
            }
            Some(sig) = signals.recv() => {
                tracing::info!("forwarding {sig} to the server");
                for r in loop_state.running.values() {
                    child::signal_group(r.pgid, sig);
                }
            }
        }
    };

    // The server exited: clear every process group left, answer what still waits.
    for r in std::mem::take(&mut loop_state.running).into_values() {
        child::signal_group(r.pgid, Signal::SIGKILL);
        r.pump.abort();
    }
    let cause = child::describe_status(final_status);
    let waiting = session.server_gone(&cause);
    // The server ended on its own before answering `initialize` (the host's is waiting, or
    // the host has not sent it yet): say why, with its last words.
    let initialize_waiting = waiting
        .iter()
        .any(|p| &*p.method == crate::mcp::methods::INITIALIZE);
    let ended_alone = session.handshake().first_result.is_none();
    let server_ended = matches!(
        loop_state.cause,
        None | Some(EndCause::ServerExited | EndCause::ServerClosedOutput)
    );
    let death = match loop_state.newest_words.take() {
        Some(words) if server_ended && (initialize_waiting || ended_alone) => {
            // Let the stderr thread read what the server wrote last (bounded: a process it
            // left behind may hold the pipe open when there is no PID namespace).
            let until = tokio::time::Instant::now() + cfg.drain;
            while !words.tail.finished() && tokio::time::Instant::now() < until {
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
            let death = words.diagnose(&cause);
            crate::stderr_line!("rootfence: {}", death.text);
            Some(death)
        }
        _ => None,
    };
    for pending in waiting {
        let line = match &death {
            Some(d) if &*pending.method == crate::mcp::methods::INITIALIZE => d.error(&pending.id),
            _ => pump::server_gone_error(&pending.id, &pending.method, &cause),
        };
        session.send_detached(line);
    }

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
        cause: loop_state.cause.unwrap_or(EndCause::ServerExited),
        status: final_status,
        exit_code: child::exit_code(final_status),
        session,
    })
}

/// The main loop's state.
struct Loop<'c> {
    cfg: &'c RelayConfig,
    session: Arc<Session>,
    events: mpsc::Sender<Event>,
    running: BTreeMap<Gen, Running>,
    host_in_done: bool,
    cause: Option<EndCause>,
    /// A generation failed: the session is ending.
    failed: bool,
    /// The newest generation's stderr tail and command line.
    newest_words: Option<LastWords>,
}

impl Loop<'_> {
    /// Starts a generation's process and its tasks. An error is returned only for the first
    /// generation started up front (the session cannot begin); later failures end the session
    /// through [`Event::Failed`].
    fn launch<I: Interceptor>(
        &mut self,
        request: LaunchRequest,
        icpt: &Arc<I>,
        up_front: bool,
    ) -> Result<(), RelayError> {
        let (generation, launch, reply) = (request.generation, request.launch, request.reply);
        let Some((receivers, gate)) = request.lanes else {
            let _ = reply.send(Err("this generation was already started".into()));
            return Ok(());
        };
        if let Some(cause) = self.session.server_gone_cause() {
            // The session is ending (stopped, or a generation failed): start nothing more.
            let _ = reply.send(Err(cause));
            return Ok(());
        }
        let mut server = match child::spawn(launch.command) {
            Ok(s) => s,
            Err(e) if up_front => return Err(e.into()),
            Err(e) => {
                let cause = e.to_string();
                let _ = reply.send(Err(cause.clone()));
                let _ = self.events.try_send(Event::Failed(generation, cause));
                return Ok(());
            }
        };
        let pgid = server.pgid;
        self.newest_words = Some(server.words);
        if let Some(o) = self.session.observer() {
            o.generation(generation, true);
        }
        let session = Arc::clone(&self.session);
        tokio::spawn(pump::writer(server.stdin, receivers, gate));
        let tx = self.events.clone();
        let pump_task = {
            let session = Arc::clone(&session);
            let icpt = Arc::clone(icpt);
            let tx = tx.clone();
            let (max, drain) = (self.cfg.max_line, self.cfg.drain);
            tokio::spawn(async move {
                let result = pump::pump(
                    Origin {
                        side: Side::Server,
                        generation,
                    },
                    LineReader::new(server.stdout, max),
                    max,
                    session,
                    icpt,
                )
                .await;
                if let Err(e) = result {
                    tracing::debug!("reading server generation {generation}: {e}");
                }
                // A server that exits closes its output a moment before its exit status can be
                // read: give it that moment, so requests are answered with the real cause.
                tokio::spawn(async move {
                    tokio::time::sleep(drain).await;
                    let _ = tx.send(Event::OutputClosed(generation)).await;
                });
            })
        };
        let exited = tx.clone();
        tokio::spawn(async move {
            let status = server.child.wait().await;
            let _ = exited.send(Event::Exited(generation, status)).await;
        });
        self.running.insert(
            generation,
            Running {
                pgid,
                pump: pump_task,
                stopping: JoinSet::new(),
                _keep: launch.keep,
            },
        );
        self.make_room(generation);
        let timing = self.cfg.timing;
        let started = launch.started;
        tokio::spawn(async move {
            let outcome = async {
                if let Some(started) = started {
                    tokio::task::spawn_blocking(started)
                        .await
                        .map_err(|e| format!("the launch check failed: {e}"))??;
                }
                if generation == 1 {
                    return Ok(Launched::default());
                }
                generation::bring_up(Arc::clone(&session), generation, timing).await
            }
            .await;
            match outcome {
                Ok(launched) => {
                    let _ = reply.send(Ok(launched));
                    let _ = tx.send(Event::Up(generation)).await;
                }
                Err(cause) => {
                    let _ = reply.send(Err(cause.clone()));
                    let _ = tx.send(Event::Failed(generation, cause)).await;
                }
            }
        });
        if self.host_in_done {
            // The host is gone already: this generation only answers what it was sent.
            self.stop(generation);
        }
        Ok(())
    }

    /// Ends the oldest generations beyond [`RelayConfig::max_generations`] (never `newest`):
    /// their requests are answered with an error asking the host to send them again, their
    /// process groups (and with the PID namespace, everything they started) killed.
    fn make_room(&mut self, newest: Gen) {
        let max = self.cfg.max_generations.max(2);
        while self.running.len() > max {
            let Some(&oldest) = self.running.keys().next().filter(|&&g| g != newest) else {
                return;
            };
            tracing::warn!(
                "{} server generations alive (at most {max}): ending generation {oldest}",
                self.running.len()
            );
            generation::restart_pending(&self.session, oldest);
            if let Some(r) = self.running.remove(&oldest) {
                child::signal_group(r.pgid, Signal::SIGKILL);
            }
        }
    }

    /// Handles one generation event; `Some(status)` when the session ends.
    async fn on_gen_event(&mut self, event: Event) -> Option<ExitStatus> {
        let newest = self.running.keys().next_back().copied();
        match event {
            Event::Exited(generation, status) => {
                let status = status.unwrap_or_else(|e| {
                    tracing::error!("waiting for server generation {generation} failed: {e}");
                    ExitStatus::from_raw(1 << 8)
                });
                let is_newest =
                    newest == Some(generation) && self.session.generation() == generation;
                let running = self.running.remove(&generation);
                if is_newest {
                    if let Some(mut r) = running {
                        r.stopping.abort_all();
                        // Let its last output through, then the session ends.
                        if tokio::time::timeout(self.cfg.drain, &mut r.pump)
                            .await
                            .is_err()
                        {
                            tracing::warn!(
                                "the server's output stayed open after it exited; stopped reading it"
                            );
                        }
                        child::signal_group(r.pgid, Signal::SIGKILL);
                    }
                    return Some(status);
                }
                if let Some(r) = running {
                    child::signal_group(r.pgid, Signal::SIGKILL);
                }
                let ended = child::describe_status(status);
                let cause = format!("a previous server generation ended ({ended})");
                let pending = self.session.take_pending_of(generation);
                answer_gone(&self.session, pending, &cause);
                if self.failed && self.running.is_empty() {
                    return Some(status);
                }
                None
            }
            Event::OutputClosed(generation) => {
                if self.running.contains_key(&generation) && self.session.generation() == generation
                {
                    self.cause.get_or_insert(EndCause::ServerClosedOutput);
                    answer_waiting(&self.session, "the server closed its output");
                    self.stop_all();
                }
                None
            }
            Event::Up(generation) => {
                if generation > 1 {
                    tracing::info!("server generation {generation} is up");
                    let caps = self.session.peers().server_capabilities;
                    generation::notify_host_lists(&self.session, caps.as_ref());
                }
                for old in self.session.older_than(generation) {
                    let session = Arc::clone(&self.session);
                    let tx = self.events.clone();
                    let grace = self.cfg.timing.grace;
                    tokio::spawn(async move {
                        generation::retire(session, old, grace).await;
                        let _ = tx.send(Event::Retired(old)).await;
                    });
                }
                None
            }
            Event::Retired(generation) => {
                self.stop(generation);
                None
            }
            // Handled by the loop itself.
            Event::Launch(_) | Event::Stuck { .. } => None,
            Event::Failed(generation, cause)
                if generation < self.session.generation()
                    || !self.running.contains_key(&generation) && newest > Some(generation) =>
            {
                // A newer generation was asked for while this one started (or it was ended
                // to make room): superseded, not a failure of the session.
                tracing::info!(
                    "server generation {generation} was superseded while starting ({cause})"
                );
                generation::restart_pending(&self.session, generation);
                if let Some(r) = self.running.get(&generation) {
                    child::signal_group(r.pgid, Signal::SIGKILL);
                }
                None
            }
            Event::Failed(generation, cause) => {
                tracing::error!("server generation {generation} could not start: {cause}");
                if let Some(o) = self.session.observer() {
                    o.generation(generation, false);
                }
                self.failed = true;
                self.cause.get_or_insert(EndCause::ServerFailed);
                answer_waiting(
                    &self.session,
                    &format!("the server could not be started under the current roots ({cause})"),
                );
                for r in self.running.values() {
                    child::signal_group(r.pgid, Signal::SIGKILL);
                }
                None
            }
        }
    }

    /// Starts the stdio shutdown sequence of one generation: its stdin is closed after
    /// everything queued, then, a grace period apart, SIGTERM and SIGKILL go to its process
    /// group.
    fn stop(&mut self, generation: Gen) {
        let Some(r) = self.running.get_mut(&generation) else {
            return;
        };
        let session = Arc::clone(&self.session);
        tokio::spawn(async move { session.close_server_input(generation).await });
        if !r.stopping.is_empty() {
            return;
        }
        let (pgid, grace) = (r.pgid, self.cfg.shutdown_grace);
        r.stopping.spawn(async move {
            for sig in [Signal::SIGTERM, Signal::SIGKILL] {
                tokio::time::sleep(grace).await;
                tracing::info!(
                    "server generation {generation} is still running after {grace:?}; sending {sig}"
                );
                child::signal_group(pgid, sig);
            }
        });
    }

    /// Starts the shutdown sequence of every generation not yet stopping.
    fn stop_all(&mut self) {
        let gens: Vec<Gen> = self
            .running
            .iter()
            .filter(|(_, r)| r.stopping.is_empty())
            .map(|(g, _)| *g)
            .collect();
        for g in gens {
            self.stop(g);
        }
    }
}

/// Answers every host request still waiting for the server with an error naming `cause`.
fn answer_waiting(session: &Arc<Session>, cause: &str) {
    answer_gone(session, session.server_gone(cause), cause);
}

/// Answers these host requests with an error naming `cause`.
fn answer_gone(session: &Arc<Session>, pending: Vec<Pending>, cause: &str) {
    for p in pending {
        let line = pump::server_gone_error(&p.id, &p.method, cause);
        session.send_detached(line);
    }
}

fn log_task_end(what: &str, result: Result<std::io::Result<()>, tokio::task::JoinError>) {
    match result {
        Ok(Ok(())) => tracing::debug!("{what}: end of stream"),
        Ok(Err(e)) => tracing::debug!("{what}: {e}"),
        Err(e) if e.is_cancelled() => {}
        Err(e) => tracing::error!("{what}: task failed: {e}"),
    }
}
