//! One HTTP session (2025-03-26 to 2025-11-25, `Mcp-Session-Id`): a relay of its own, run over
//! in-memory host streams, with its own enforcer, sandboxed server process (and generations),
//! roots and audit session, and the router that delivers the relay's output to the
//! session's HTTP streams.
//!
//! The session ends when its input is closed ([`HttpSession::close`]: DELETE, the idle
//! reaper, a drain), which the relay sees as the host closing its stdin: the server gets the
//! stdio shutdown sequence and every request still waiting is answered; or when its server
//! ends. Either way the router then closes every stream and the audit session is closed.

use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use bytes::Bytes;
use tokio::sync::watch;

use super::pipe::{self, Closed, HostInput};
use super::router::Router;
use crate::audit;
use crate::jsonrpc::LineReader;
use crate::relay;
use crate::setup::Setup;

/// The address of the connection a request came on (a request extension set when the
/// connection is accepted): audited as the principal's `client_address`.
#[derive(Debug, Clone, Copy)]
pub struct ClientAddr(pub std::net::SocketAddr);

/// A live HTTP session.
#[derive(Debug)]
pub struct HttpSession {
    /// Its `Mcp-Session-Id`.
    pub id: String,
    /// Who opened it (the authenticated principal); only they may use it.
    pub principal: Option<String>,
    /// Routes the relay's output to this session's streams.
    pub router: Arc<Router>,
    /// The relay's input; `None` once closed.
    input: Mutex<Option<HostInput>>,
    /// Set when the relay has ended and its audit session is closed.
    done: watch::Receiver<bool>,
}

impl HttpSession {
    /// Starts a session's relay (its server starts once the enforcer knows the roots), opened
    /// by `principal` from `client`.
    ///
    /// `pooled`: a relay of the 2026-07-28 pool, shared by every request of one principal
    /// under one set of roots, from any connection (so no `client` and no HTTP session),
    /// delivering only responses (by the ids the pool gives).
    pub fn start(
        setup: &Setup,
        id: String,
        principal: Option<String>,
        client: Option<ClientAddr>,
        stall: Duration,
        pooled: bool,
    ) -> Arc<Self> {
        let who = audit::Principal::served(
            principal.as_deref(),
            client.map(|c| c.0.to_string()),
            (!pooled).then(|| id.clone()),
        );
        let label = Arc::new(OnceLock::from(id.clone()));
        let relay = Relay::start(setup, stall, pooled, Some(who), label);
        Self::with_relay(relay, id, principal)
    }

    /// A session's relay and server, started before any client asks for it (`pool.rs`):
    /// its server starts at once under the operator roots. `label` names it in the log
    /// until a client takes it ([`HttpSession::adopt`]).
    pub fn prestart(setup: &Setup, label: String, stall: Duration) -> Prestarted {
        let relay = Relay::start(setup, stall, false, None, Arc::new(OnceLock::new()));
        Prestarted { relay, label }
    }

    /// Makes a pre-started relay the session `id` of `principal`, opened from `client`:
    /// its decisions name the principal from now on (before the client's first message
    /// reaches it), and its `initialized` record gives the whole principal, since its
    /// `session_start` was written before anyone took it.
    pub fn adopt(
        p: Prestarted,
        id: String,
        principal: Option<String>,
        client: Option<ClientAddr>,
    ) -> Arc<Self> {
        let _ = p
            .relay
            .label
            .set(format!("{id} (pre-started as {})", p.label));
        p.relay.enforcer.adopt_principal(audit::Principal::served(
            principal.as_deref(),
            client.map(|c| c.0.to_string()),
            Some(id.clone()),
        ));
        Self::with_relay(p.relay, id, principal)
    }

    fn with_relay(relay: Relay, id: String, principal: Option<String>) -> Arc<Self> {
        Arc::new(HttpSession {
            id,
            principal,
            router: relay.router,
            input: Mutex::new(Some(relay.input)),
            done: relay.done,
        })
    }

    /// Sends one message (without a newline) to the relay.
    pub async fn send(&self, message: Bytes) -> Result<(), Closed> {
        let input = crate::relock(&self.input).clone().ok_or(Closed)?;
        input.send(message).await.map_err(|_| Closed)
    }

    /// Ends the session: the relay sees its host close the input.
    pub fn close(&self) {
        crate::relock(&self.input).take();
    }

    /// Whether the session still takes messages.
    pub fn is_open(&self) -> bool {
        !*self.done.borrow() && !self.router.ended() && crate::relock(&self.input).is_some()
    }

    /// Whether the relay has ended (and the audit session is closed).
    pub fn is_done(&self) -> bool {
        *self.done.borrow()
    }

    /// Waits until the relay has ended and the audit session is closed.
    pub async fn wait(&self) {
        let mut done = self.done.clone();
        let _ = done.wait_for(|d| *d).await;
    }
}

/// A relay running for one session: its input, its router, and whether it has ended.
#[derive(Debug)]
struct Relay {
    input: HostInput,
    router: Arc<Router>,
    done: watch::Receiver<bool>,
    /// The session's name in the log (set when a client takes a pre-started relay).
    label: Arc<OnceLock<String>>,
    /// The session's enforcer, to name the principal of a pre-started relay when taken.
    enforcer: Arc<crate::enforce::Enforcer>,
}

impl Relay {
    fn start(
        setup: &Setup,
        stall: Duration,
        pooled: bool,
        who: Option<audit::Principal>,
        label: Arc<OnceLock<String>>,
    ) -> Relay {
        // Without a principal, the relay is pre-started for the pool: its server starts at
        // once, and the principal comes when a client takes it (`HttpSession::adopt`).
        let (input, reader) = pipe::host_input();
        let (relay_out, router_in) = tokio::io::duplex(pipe::OUTPUT_PIPE);
        let router = Router::new(stall, Some(&input), pooled);
        let subject = who.as_ref().map(|w| w.subject.clone());
        let (enforcer, audit, launcher) = setup.session(setup.roots.clone(), move |start| {
            start.principal = who;
        });
        let enforcer = match subject {
            Some(subject) => enforcer.with_principal(subject),
            None => enforcer.prestarted(),
        };
        let enforcer = Arc::new(enforcer);
        let handle = Arc::clone(&enforcer);
        let mut config = setup.relay_config();
        config.observer = enforcer.observer();
        // The process's signals mean "drain", handled once for every session.
        config.forward_signals = false;
        let (done_tx, done) = watch::channel(false);
        let audit_for_log = Arc::clone(&audit);
        let name = Arc::clone(&label);
        tokio::spawn(async move {
            let outcome = relay::run_with(config, enforcer, reader, relay_out).await;
            // Every server of the session has stopped: the placeholders can go.
            launcher.remove_placeholders();
            let label = name
                .get()
                .map_or("(pre-started, never used)", String::as_str);
            match outcome {
                Ok(outcome) => {
                    let audit_session = crate::relock(&audit_for_log)
                        .as_ref()
                        .map(|l| l.session_id().to_owned());
                    tracing::info!(
                        session = %label,
                        audit_session = audit_session.as_deref().unwrap_or("-"),
                        cause = outcome.cause.as_str(),
                        "session ended"
                    );
                    if let Err(e) = Setup::finish(&audit, &outcome) {
                        tracing::error!(session = %label, "could not finish the audit log: {e}");
                    }
                }
                Err(e) => tracing::error!(session = %label, "the session could not run: {e}"),
            }
            let _ = done_tx.send(true);
        });
        tokio::spawn(Arc::clone(&router).run(LineReader::new(router_in, setup.max_message.max(1))));
        Relay {
            input,
            router,
            done,
            label,
            enforcer: handle,
        }
    }
}

/// A session's relay and server started ahead of any client, waiting in the pool.
#[derive(Debug)]
pub struct Prestarted {
    relay: Relay,
    /// Its name in the log while pooled.
    pub label: String,
}

impl Prestarted {
    /// Whether it can still be handed out: its relay (and so its server) has not ended.
    pub fn alive(&self) -> bool {
        !*self.relay.done.borrow() && !self.relay.router.ended()
    }

    /// Waits until its relay has ended.
    pub fn ended(&self) -> impl std::future::Future<Output = ()> + Send + use<> {
        let mut done = self.relay.done.clone();
        async move {
            let _ = done.wait_for(|d| *d).await;
        }
    }

    /// Stops it (its server gets the stdio shutdown sequence); returns a future that
    /// completes once its relay has ended.
    pub fn close(self) -> impl std::future::Future<Output = ()> + Send + 'static {
        let ended = self.ended();
        drop(self.relay.input);
        ended
    }
}
