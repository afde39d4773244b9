//! The telemetry handle of a build with the `otel` cargo feature: what the relay and the
//! enforcer call, each call a note pushed on the telemetry thread's inbox (`worker.rs`);
//! `off.rs` is the same API without the feature.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Instant, SystemTime};

use opentelemetry_sdk::trace::{IdGenerator, RandomIdGenerator};

use super::{Config, DecisionNote, QUEUE, SHUTDOWN_WAIT, config, context, worker};
use crate::jsonrpc::{Id, IdKey};
use crate::mcp::methods as m;
use crate::relay::{Answer, Observer};

/// The telemetry handle: cheap to clone; every method returns at once. Each relay session
/// uses a handle of its own ([`Telemetry::for_session`]), so request ids of different
/// sessions (`rootfence serve`) never meet.
#[derive(Clone, Debug)]
pub struct Telemetry {
    shared: Arc<Shared>,
    session: Arc<worker::SessionSlot>,
}

#[derive(Debug)]
struct Shared {
    inbox: Arc<worker::Inbox>,
    dropped: Arc<AtomicU64>,
    ids: RandomIdGenerator,
    next_session: AtomicU64,
    done: Mutex<Option<std::sync::mpsc::Receiver<()>>>,
}

impl Telemetry {
    /// Starts telemetry when the policy or the environment names a collector; says on
    /// stderr why not when it is asked for in a way that cannot work (the session runs
    /// without it: telemetry is never a reason to refuse a server).
    pub fn start(policy: &crate::policy::Policy) -> Option<Telemetry> {
        config::resolve(policy.telemetry(), |k| std::env::var(k).ok())
            .and_then(|c| c.as_ref().map(Telemetry::with_config).transpose())
            .unwrap_or_else(|why| {
                crate::stderr_line!("rootfence: warning: telemetry is off: {why}");
                None
            })
    }

    /// Starts the telemetry thread and the SDK's exporters for `config`.
    fn with_config(config: &Config) -> Result<Telemetry, String> {
        let inbox = Arc::new(worker::Inbox::new(QUEUE));
        let dropped = Arc::new(AtomicU64::new(0));
        let (done_tx, done_rx) = std::sync::mpsc::channel();
        let sdk = worker::Sdk::new(config, Arc::clone(&dropped))?;
        let dropped_for_worker = Arc::clone(&dropped);
        let inbox_for_worker = Arc::clone(&inbox);
        std::thread::Builder::new()
            .name("rootfence-telemetry".into())
            .spawn(move || {
                worker::run(sdk, &inbox_for_worker, dropped_for_worker);
                let _ = done_tx.send(());
            })
            .map_err(|e| format!("cannot start the telemetry thread: {e}"))?;
        Ok(Telemetry {
            shared: Arc::new(Shared {
                inbox,
                dropped,
                ids: RandomIdGenerator::default(),
                next_session: AtomicU64::new(1),
                done: Mutex::new(Some(done_rx)),
            }),
            session: Arc::default(),
        })
    }

    /// A handle for one more relay session (its requests' ids are its own).
    pub fn for_session(&self) -> Telemetry {
        Telemetry {
            shared: Arc::clone(&self.shared),
            session: Arc::new(worker::SessionSlot {
                n: self.shared.next_session.fetch_add(1, Ordering::Relaxed),
                id: OnceLock::new(),
            }),
        }
    }

    /// Sets the session id this session's spans carry (the audit log's, so spans and
    /// records join).
    pub fn set_session(&self, id: &str) {
        let _ = self.session.id.set(id.to_owned());
    }

    fn send(&self, msg: worker::Msg) {
        if !self.shared.inbox.push(msg) {
            self.shared.dropped.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// Notes one decision of the enforcer.
    pub fn decision(&self, d: &DecisionNote<'_>) {
        self.send(worker::Msg::Decision(Box::new(worker::Decision {
            key: d.request.map(|id| (self.session.n, id.key().clone())),
            from: d.from,
            method: d.method.into(),
            allow: d.allow,
            reason: d.reason.into(),
            rule: d.rule.map(Into::into),
            uri: d.uri.into(),
            count: d.count,
        })));
    }

    /// A function for the audit writer's thread: every line it wrote, to be exported as a
    /// log record with the same fields.
    pub fn audit_tee(&self) -> crate::audit::LineTee {
        let this = self.clone();
        crate::audit::LineTee::new(move |lines: &[u8]| {
            this.send(worker::Msg::Audit(lines.to_vec()));
        })
    }

    /// Ends every span still open, exports what is queued, and stops: waits at most
    /// [`SHUTDOWN_WAIT`] (a collector that does not answer loses the last batch, never
    /// delays rootfence's exit longer).
    pub fn shutdown(&self) {
        let deadline = Instant::now() + SHUTDOWN_WAIT;
        self.shared.inbox.close();
        let done = crate::relock(&self.shared.done).take();
        if let Some(done) = done {
            let left = deadline.saturating_duration_since(Instant::now());
            if done.recv_timeout(left).is_err() {
                tracing::warn!(
                    "the OpenTelemetry collector did not take the last telemetry within {:?}",
                    SHUTDOWN_WAIT
                );
            }
        }
    }
}

impl Observer for Telemetry {
    fn request(&self, id: &Id, method: &str, text: &str) -> Option<String> {
        let at = Instant::now();
        let wall = SystemTime::now();
        let probe = worker::Probe::read(method, text);
        let parent = probe
            .traceparent
            .as_deref()
            .and_then(|tp| context::parse(tp, probe.tracestate.as_deref()));
        let span_id = self.shared.ids.new_span_id();
        let trace_id = match &parent {
            Some(p) => p.trace_id(),
            None => self.shared.ids.new_trace_id(),
        };
        let rewrite = parent.as_ref().map(|p| context::format(p, span_id));
        let (IdKey::Str(id_text) | IdKey::Int(id_text)) = id.key();
        self.send(worker::Msg::Start(Box::new(worker::Start {
            key: (self.session.n, id.key().clone()),
            session: Arc::clone(&self.session),
            id: id_text.to_string(),
            method: method.into(),
            target: probe.name,
            uri: probe.uri,
            trace_id,
            span_id,
            parent,
            at,
            wall,
        })));
        rewrite
    }

    fn forwarded(&self, id: &Id) {
        self.send(worker::Msg::Forwarded {
            key: (self.session.n, id.key().clone()),
            at: Instant::now(),
        });
    }

    fn answered(&self, id: &Id, answer: Answer) {
        self.send(worker::Msg::Answered {
            key: (self.session.n, id.key().clone()),
            at: Instant::now(),
            answer,
        });
    }

    fn generation(&self, generation: crate::relay::Gen, started: bool) {
        self.send(worker::Msg::Generation {
            generation,
            started,
        });
    }
}

/// Whether a method's request names a tool or prompt (`params.name`) or a resource
/// (`params.uri`) worth a span attribute.
pub(super) fn names_target(method: &str) -> bool {
    matches!(
        method,
        m::TOOLS_CALL
            | m::PROMPTS_GET
            | m::RESOURCES_READ
            | m::RESOURCES_SUBSCRIBE
            | m::RESOURCES_UNSUBSCRIBE
    )
}
