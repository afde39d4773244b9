//! The telemetry thread: turns the relay's notes into spans, metrics and log records with
//! the OpenTelemetry SDK, whose batch processors and metric reader export over OTLP/HTTP.
//!
//! A request's span is built when its answer is noted, with the times noted by the relay
//! and the span id the relay already wrote into the forwarded `traceparent` (the SDK takes
//! it from [`PresetIds`]). Decisions noted in between are folded into it.

use std::cell::Cell;
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, OnceLock};
use std::time::{Duration, Instant, SystemTime};

use opentelemetry::logs::{AnyValue, LogRecord as _, Logger as _, LoggerProvider as _, Severity};
use opentelemetry::metrics::{Counter, Histogram, Meter, MeterProvider as _};
use opentelemetry::trace::{
    Span as _, SpanContext, SpanId, SpanKind, Status, TraceContextExt, TraceId, Tracer as _,
    TracerProvider as _,
};
use opentelemetry::{Context, KeyValue};
use opentelemetry_otlp::{WithExportConfig, WithHttpConfig};
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::logs::SdkLoggerProvider;
use opentelemetry_sdk::metrics::{PeriodicReader, SdkMeterProvider};
use opentelemetry_sdk::trace::{IdGenerator, RandomIdGenerator, SdkTracerProvider};

use super::config::Config;
use crate::jsonrpc::IdKey;
use crate::mcp::methods as m;
use crate::relay::{Answer, Gen, Side};

/// Spans open at most (requests noted and not yet answered); past this a new request gets no
/// span (and is counted as dropped) rather than memory growing without bound.
const MAX_OPEN: usize = 16_384;

/// The instrumentation scope of everything rootfence exports.
const SCOPE: &str = "rootfence";

/// A request's key: its session's number and its id.
pub(super) type Key = (u64, IdKey);

/// One relay session, as its spans name it.
#[derive(Debug, Default)]
pub(crate) struct SessionSlot {
    /// Distinguishes the session's request ids from other sessions'.
    pub n: u64,
    /// The audit session id (`mcp.session.id`), once its log is open.
    pub id: OnceLock<String>,
}

/// What the relay, the enforcer and the audit writer tell the telemetry thread.
#[derive(Debug)]
pub(super) enum Msg {
    Start(Box<Start>),
    Decision(Box<Decision>),
    /// A host request went to the server (the start of `mcp.client.operation.duration`).
    Forwarded {
        key: Key,
        at: Instant,
    },
    Answered {
        key: Key,
        at: Instant,
        answer: Answer,
    },
    Generation {
        generation: Gen,
        started: bool,
    },
    /// Whole audit records, one per line, as written.
    Audit(Vec<u8>),
}

/// The notes waiting for the telemetry thread: bounded, and taken whole every
/// [`super::TICK`], so a note costs its sender one uncontended lock and never a wake-up.
#[derive(Debug)]
pub(super) struct Inbox {
    state: Mutex<InboxState>,
    closed: Condvar,
    cap: usize,
}

#[derive(Debug, Default)]
struct InboxState {
    items: Vec<Msg>,
    closed: bool,
}

impl Inbox {
    pub(super) fn new(cap: usize) -> Inbox {
        Inbox {
            state: Mutex::new(InboxState {
                items: Vec::with_capacity(256),
                closed: false,
            }),
            closed: Condvar::new(),
            cap,
        }
    }

    /// Queues a note; false (dropped) when the inbox is full or closed.
    pub(super) fn push(&self, msg: Msg) -> bool {
        let mut st = crate::relock(&self.state);
        if st.closed || st.items.len() >= self.cap {
            return false;
        }
        st.items.push(msg);
        true
    }

    /// Stops taking notes and wakes the telemetry thread for its last round.
    pub(super) fn close(&self) {
        crate::relock(&self.state).closed = true;
        self.closed.notify_all();
    }

    /// Waits one tick (or until closed), then takes everything queued; the flag says the
    /// inbox is closed (this is the last round).
    fn take(&self, into: &mut Vec<Msg>) -> bool {
        let st = crate::relock(&self.state);
        let (mut st, _) = self
            .closed
            .wait_timeout_while(st, super::TICK, |st| !st.closed)
            .unwrap_or_else(|e| e.into_inner());
        std::mem::swap(&mut st.items, into);
        st.closed
    }
}

/// A host request, as it arrived.
#[derive(Debug)]
pub(super) struct Start {
    pub key: Key,
    pub session: Arc<SessionSlot>,
    /// `jsonrpc.request.id`: the id's value as a string.
    pub id: String,
    pub method: Box<str>,
    /// `params.name` of a tool call or a prompt.
    pub target: Option<String>,
    /// `params.uri` of a resource request.
    pub uri: Option<String>,
    pub trace_id: TraceId,
    pub span_id: SpanId,
    /// The host's span, from its `traceparent`.
    pub parent: Option<SpanContext>,
    pub at: Instant,
    pub wall: SystemTime,
}

/// One decision (or a list page's allowed entries, counted).
#[derive(Debug)]
pub(super) struct Decision {
    pub key: Option<Key>,
    pub from: Side,
    pub method: Box<str>,
    pub allow: bool,
    pub reason: Box<str>,
    pub rule: Option<Box<str>>,
    pub uri: Box<str>,
    pub count: u64,
}

/// The fields of a request's text a span needs.
#[derive(Debug, Default)]
pub(super) struct Probe {
    pub name: Option<String>,
    pub uri: Option<String>,
    pub traceparent: Option<String>,
    pub tracestate: Option<String>,
}

impl Probe {
    /// Reads what a span needs from a request's text: only for methods that name a target
    /// or text that holds a `traceparent` (so most requests are not parsed a second time).
    pub(super) fn read(method: &str, text: &str) -> Probe {
        let traced = memchr::memmem::find(text.as_bytes(), b"\"traceparent\"").is_some();
        if !traced && !super::otel::names_target(method) {
            return Probe::default();
        }
        #[derive(serde::Deserialize)]
        struct Message {
            params: Option<Params>,
        }
        #[derive(serde::Deserialize)]
        struct Params {
            name: Option<serde_json::Value>,
            uri: Option<serde_json::Value>,
            #[serde(rename = "_meta")]
            meta: Option<Meta>,
        }
        #[derive(serde::Deserialize, Default)]
        struct Meta {
            traceparent: Option<serde_json::Value>,
            tracestate: Option<serde_json::Value>,
        }
        let text_of = |v: Option<serde_json::Value>| match v {
            Some(serde_json::Value::String(s)) => Some(s),
            _ => None,
        };
        let Ok(Message { params: Some(p) }) = serde_json::from_str::<Message>(text) else {
            return Probe::default();
        };
        let meta = p.meta.unwrap_or_default();
        Probe {
            name: text_of(p.name),
            uri: text_of(p.uri),
            traceparent: text_of(meta.traceparent),
            tracestate: text_of(meta.tracestate),
        }
    }
}

thread_local! {
    /// The ids the next span built on this thread takes.
    static PRESET: Cell<Option<(TraceId, SpanId)>> = const { Cell::new(None) };
}

/// The SDK's id generator: the ids chosen on the relay's thread when a span is built for a
/// request, random ones otherwise.
#[derive(Debug, Default)]
pub(crate) struct PresetIds(RandomIdGenerator);

impl IdGenerator for PresetIds {
    fn new_trace_id(&self) -> TraceId {
        PRESET
            .with(Cell::get)
            .map_or_else(|| self.0.new_trace_id(), |(t, _)| t)
    }

    fn new_span_id(&self) -> SpanId {
        PRESET
            .with(Cell::get)
            .map_or_else(|| self.0.new_span_id(), |(_, s)| s)
    }
}

/// The SDK's providers and rootfence's instruments.
pub(super) struct Sdk {
    tracer: Option<(SdkTracerProvider, opentelemetry_sdk::trace::SdkTracer)>,
    meter: Option<(SdkMeterProvider, Instruments)>,
    logger: Option<(SdkLoggerProvider, opentelemetry_sdk::logs::SdkLogger)>,
}

struct Instruments {
    duration: Histogram<f64>,
    client_duration: Histogram<f64>,
    session_duration: Histogram<f64>,
    requests: Counter<u64>,
    decisions: Counter<u64>,
    denied_bytes: Counter<u64>,
    generations: Counter<u64>,
    restarts: Counter<u64>,
}

impl Sdk {
    pub(super) fn new(config: &Config, dropped: Arc<AtomicU64>) -> Result<Sdk, String> {
        let timeout = export_timeout();
        let mut attrs = vec![KeyValue::new(
            "service.version",
            env!("CARGO_PKG_VERSION").to_owned(),
        )];
        attrs.extend(
            config
                .resource
                .iter()
                .map(|(k, v)| KeyValue::new(k.clone(), v.clone())),
        );
        let resource = Resource::builder_empty()
            .with_service_name(config.service_name.clone())
            .with_attributes(attrs)
            .build();

        // The three exporters are built alike but are types of their own, with no common
        // builder trait: a macro says it once.
        macro_rules! exporter {
            ($exporter:ident, $path:literal, $what:literal) => {{
                let mut b = opentelemetry_otlp::$exporter::builder()
                    .with_http()
                    .with_http_client(super::http::Client::new(timeout))
                    .with_protocol(opentelemetry_otlp::Protocol::HttpBinary)
                    .with_timeout(timeout);
                if let Some(e) = config.signal_endpoint($path) {
                    b = b.with_endpoint(e);
                }
                b.build()
                    .map_err(|e| format!("the OTLP {} exporter: {e}", $what))?
            }};
        }

        // Each signal on is its provider and what rootfence calls it through.
        let tracer = signal(config.traces, || {
            let provider = SdkTracerProvider::builder()
                .with_batch_exporter(exporter!(SpanExporter, "v1/traces", "trace"))
                .with_id_generator(PresetIds::default())
                .with_resource(resource.clone())
                .build();
            let tracer = provider.tracer(SCOPE);
            Ok((provider, tracer))
        })?;
        let meter = signal(config.metrics, || {
            let exporter = exporter!(MetricExporter, "v1/metrics", "metric");
            let provider = SdkMeterProvider::builder()
                .with_reader(PeriodicReader::builder(exporter).build())
                .with_resource(resource.clone())
                .build();
            let instruments = Instruments::new(&provider.meter(SCOPE), dropped);
            Ok((provider, instruments))
        })?;
        let logger = signal(config.logs, move || {
            let provider = SdkLoggerProvider::builder()
                .with_batch_exporter(exporter!(LogExporter, "v1/logs", "log"))
                .with_resource(resource)
                .build();
            let logger = provider.logger(SCOPE);
            Ok((provider, logger))
        })?;
        Ok(Sdk {
            tracer,
            meter,
            logger,
        })
    }

    fn shutdown(self) {
        // Each flushes what it holds, bounded by the exporter's own timeout; the caller
        // waits for this at most `SHUTDOWN_WAIT`.
        let _ = self.tracer.map(|(p, _)| p.shutdown());
        let _ = self.logger.map(|(p, _)| p.shutdown());
        let _ = self.meter.map(|(p, _)| p.shutdown());
    }
}

/// What `make` builds for a signal that is on, in order: the first that fails stops the rest.
fn signal<T>(on: bool, make: impl FnOnce() -> Result<T, String>) -> Result<Option<T>, String> {
    on.then(make).transpose()
}

/// `OTEL_EXPORTER_OTLP_TIMEOUT` (milliseconds), as the exporter reads it, for the client.
fn export_timeout() -> Duration {
    std::env::var("OTEL_EXPORTER_OTLP_TIMEOUT")
        .ok()
        .and_then(|v| v.trim().parse::<u64>().ok())
        .map_or(Duration::from_secs(10), Duration::from_millis)
}

impl Instruments {
    fn new(meter: &Meter, dropped: Arc<AtomicU64>) -> Instruments {
        // The buckets the MCP semantic conventions advise for operation durations.
        let buckets = vec![
            0.001, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1.0, 2.0, 5.0, 10.0, 30.0, 60.0, 120.0,
            300.0,
        ];
        meter
            .u64_observable_counter("rootfence.telemetry.dropped")
            .with_unit("{event}")
            .with_description(
                "Telemetry notes dropped because the telemetry thread or the collector fell behind",
            )
            .with_callback(move |o| o.observe(dropped.load(Ordering::Relaxed), &[]))
            .build();
        let histogram = |name: &'static str, description: &'static str| {
            meter
                .f64_histogram(name)
                .with_unit("s")
                .with_description(description)
                .with_boundaries(buckets.clone())
                .build()
        };
        let counter = |name: &'static str, unit: &'static str, description: &'static str| {
            meter
                .u64_counter(name)
                .with_unit(unit)
                .with_description(description)
                .build()
        };
        Instruments {
            duration: histogram(
                "mcp.server.operation.duration",
                "Time from a host request's arrival at rootfence to its answer leaving",
            ),
            client_duration: histogram(
                "mcp.client.operation.duration",
                "Time from rootfence forwarding a host request to the server until the \
                 server's answer arrived (rootfence as the server's MCP client)",
            ),
            session_duration: histogram(
                "mcp.server.session.duration",
                "Time from a session's session_start record to its session_end record",
            ),
            requests: counter(
                "rootfence.requests",
                "{request}",
                "Host requests relayed, by method and how they were answered",
            ),
            decisions: counter(
                "rootfence.decisions",
                "{decision}",
                "URI decisions, by verdict and reason",
            ),
            denied_bytes: counter(
                "rootfence.denied.bytes",
                "By",
                "Bytes a denial kept from crossing: denied requests not forwarded, \
                 answers withheld or filtered",
            ),
            generations: counter(
                "rootfence.server.generations",
                "{generation}",
                "Server processes started (outcome=started) or failed",
            ),
            restarts: counter(
                "rootfence.server.restarts",
                "{restart}",
                "Server generations after the first (the roots moved)",
            ),
        }
    }
}

/// A request's span in the making.
struct Open {
    start: Box<Start>,
    decisions: u64,
    denied: u64,
    /// The decision the span reports: the first denial, else the last allow.
    verdict: Option<Box<Decision>>,
    /// When rootfence forwarded it to the server, if it did.
    forwarded: Option<Instant>,
}

/// The telemetry thread's loop: until the inbox is closed.
pub(super) fn run(sdk: Sdk, inbox: &Inbox, dropped: Arc<AtomicU64>) {
    let mut open: HashMap<Key, Open> = HashMap::new();
    let w = Worker {
        sdk,
        dropped,
        sessions: std::cell::RefCell::new(HashMap::new()),
    };
    let mut batch = Vec::with_capacity(256);
    loop {
        let last = inbox.take(&mut batch);
        for msg in batch.drain(..) {
            w.handle(msg, &mut open);
        }
        if last {
            break;
        }
    }
    let now = Instant::now();
    for (_, o) in open.drain() {
        w.finish(o, now, None);
    }
    w.sdk.shutdown();
}

struct Worker {
    sdk: Sdk,
    dropped: Arc<AtomicU64>,
    /// Per audit session, from its records: the negotiated protocol revision (for
    /// `mcp.protocol.version`) and when it started (for `mcp.server.session.duration`).
    sessions: std::cell::RefCell<HashMap<String, SessionFacts>>,
}

#[derive(Default)]
struct SessionFacts {
    protocol: Option<String>,
    started: Option<SystemTime>,
}

/// Sessions tracked at most (one per `serve` session alive; ended ones are removed).
const MAX_SESSIONS: usize = 65_536;

impl Worker {
    fn handle(&self, msg: Msg, open: &mut HashMap<Key, Open>) {
        match msg {
            Msg::Start(start) => {
                if open.len() >= MAX_OPEN {
                    self.dropped.fetch_add(1, Ordering::Relaxed);
                    return;
                }
                let key = start.key.clone();
                let fresh = Open {
                    start,
                    decisions: 0,
                    denied: 0,
                    verdict: None,
                    forwarded: None,
                };
                // An id reused while its first request still had no answer noted (the
                // answer's note was dropped): the old one ends here.
                if let Some(old) = open.insert(key, fresh) {
                    self.finish(old, Instant::now(), None);
                }
            }
            Msg::Decision(d) => {
                self.count_decision(&d);
                if let Some(o) = d.key.as_ref().and_then(|k| open.get_mut(k)) {
                    o.decisions += d.count;
                    if !d.allow {
                        o.denied += d.count;
                    }
                    let first_denial = !d.allow && o.verdict.as_ref().is_none_or(|v| v.allow);
                    if first_denial || d.allow && o.denied == 0 {
                        o.verdict = Some(d);
                    }
                }
            }
            Msg::Forwarded { key, at } => {
                if let Some(o) = open.get_mut(&key) {
                    o.forwarded = Some(at);
                }
            }
            Msg::Answered { key, at, answer } => {
                if let Some(o) = open.remove(&key) {
                    self.finish(o, at, Some(answer));
                }
            }
            Msg::Generation {
                generation,
                started,
            } => self.generation(generation, started),
            Msg::Audit(lines) => self.audit(&lines),
        }
    }

    fn count_decision(&self, d: &Decision) {
        if let Some((_, i)) = &self.sdk.meter {
            i.decisions.add(
                d.count,
                &[
                    verdict(d.allow),
                    KeyValue::new("rootfence.decision.reason", d.reason.to_string()),
                    KeyValue::new("mcp.method.name", d.method.to_string()),
                    KeyValue::new(
                        "rootfence.direction",
                        match d.from {
                            Side::Host => "host_to_server",
                            Side::Server => "server_to_host",
                        },
                    ),
                ],
            );
        }
    }

    fn generation(&self, generation: Gen, started: bool) {
        if let Some((_, i)) = &self.sdk.meter {
            let outcome = if started { "started" } else { "failed" };
            i.generations
                .add(1, &[KeyValue::new("rootfence.generation.outcome", outcome)]);
            if started && generation > 1 {
                i.restarts.add(1, &[]);
            }
        }
    }

    /// Builds a request's span and records its metrics. `answer` is `None` when the session
    /// ended (or the note was lost) before it was answered.
    fn finish(&self, o: Open, at: Instant, answer: Option<Answer>) {
        let s = &o.start;
        let elapsed = at.saturating_duration_since(s.at);
        let (answered_by, error, withheld) = match answer {
            Some(Answer::Server { error, withheld }) => ("server", error, withheld),
            Some(Answer::Local { error, withheld }) => ("rootfence", error, withheld),
            Some(Answer::Cancelled) => ("cancelled", None, 0),
            Some(Answer::ServerGone) => {
                ("server_gone", Some(crate::jsonrpc::error::SERVER_GONE), 0)
            }
            None => ("unanswered", None, 0),
        };
        let method = s.method.to_string();
        let mut common = vec![KeyValue::new("mcp.method.name", method.clone())];
        if let Some(v) = s.session.id.get().and_then(|id| {
            self.sessions
                .borrow()
                .get(id)
                .and_then(|f| f.protocol.clone())
        }) {
            common.push(KeyValue::new("mcp.protocol.version", v));
        }
        if let Some(code) = error {
            common.push(KeyValue::new("error.type", code.to_string()));
        }
        if let Some(t) = s.target.as_ref().filter(|_| &*s.method == m::TOOLS_CALL) {
            common.push(KeyValue::new("gen_ai.tool.name", t.clone()));
        }

        if let Some((_, i)) = &self.sdk.meter {
            i.duration.record(elapsed.as_secs_f64(), &common);
            // Only where rootfence was the server's client: the request went to the server
            // and the server answered it (not a local answer, a cancel, a lost server).
            if let (Some(sent), Some(Answer::Server { .. })) = (o.forwarded, answer) {
                let mut attrs = common.clone();
                attrs.push(KeyValue::new("network.transport", "pipe"));
                i.client_duration
                    .record(at.saturating_duration_since(sent).as_secs_f64(), &attrs);
            }
            let mut attrs = common.clone();
            attrs.push(KeyValue::new("rootfence.answered_by", answered_by));
            attrs.extend(o.verdict.as_ref().map(|v| verdict(v.allow)));
            i.requests.add(1, &attrs);
            if o.denied > 0 && withheld > 0 {
                i.denied_bytes.add(
                    withheld,
                    &[KeyValue::new("mcp.method.name", method.clone())],
                );
            }
        }

        let Some((_, tracer)) = &self.sdk.tracer else {
            return;
        };
        let mut attrs = common;
        attrs.push(KeyValue::new("jsonrpc.request.id", s.id.clone()));
        attrs.push(KeyValue::new("network.transport", "pipe"));
        attrs.push(KeyValue::new("rootfence.answered_by", answered_by));
        if let Some(session) = s.session.id.get() {
            attrs.push(KeyValue::new("mcp.session.id", session.clone()));
        }
        let name = match (&*s.method, &s.target) {
            (m::TOOLS_CALL, Some(t)) => {
                attrs.push(KeyValue::new("gen_ai.operation.name", "execute_tool"));
                format!("{method} {t}")
            }
            (m::PROMPTS_GET, Some(p)) => {
                attrs.push(KeyValue::new("gen_ai.prompt.name", p.clone()));
                format!("{method} {p}")
            }
            _ => method.clone(),
        };
        if let Some(uri) = &s.uri {
            attrs.push(KeyValue::new("mcp.resource.uri", uri.clone()));
        }
        if let Some(code) = error {
            attrs.push(KeyValue::new("rpc.response.status_code", code.to_string()));
        }
        if let Some(d) = o.verdict.as_deref() {
            attrs.push(verdict(d.allow));
            attrs.push(KeyValue::new(
                "rootfence.decision.reason",
                d.reason.to_string(),
            ));
            if let Some(rule) = &d.rule {
                attrs.push(KeyValue::new("rootfence.decision.rule", rule.to_string()));
            }
            if !d.allow {
                attrs.push(KeyValue::new("rootfence.decision.uri", d.uri.to_string()));
            }
            attrs.push(KeyValue::new("rootfence.decisions", o.decisions as i64));
            attrs.push(KeyValue::new("rootfence.decisions.denied", o.denied as i64));
        }
        if withheld > 0 && o.denied > 0 {
            attrs.push(KeyValue::new("rootfence.denied.bytes", withheld as i64));
        }
        let parent = match &s.parent {
            Some(p) => Context::new().with_remote_span_context(p.clone()),
            None => Context::new(),
        };
        let builder = tracer
            .span_builder(name)
            .with_kind(SpanKind::Server)
            .with_start_time(s.wall)
            .with_attributes(attrs);
        PRESET.with(|p| p.set(Some((s.trace_id, s.span_id))));
        let mut span = tracer.build_with_context(builder, &parent);
        PRESET.with(|p| p.set(None));
        match (error, o.verdict.as_deref()) {
            (Some(code), Some(d)) if !d.allow => {
                span.set_status(Status::error(format!("denied: {} ({code})", d.reason)));
            }
            (Some(code), _) => span.set_status(Status::error(format!("JSON-RPC error {code}"))),
            _ => {}
        }
        span.end_with_timestamp(s.wall + elapsed);
    }

    /// Audit records, as the writer wrote them: one log record each, with the record's
    /// fields as attributes under the same names; the sessions' `session_start`,
    /// `initialized` and `session_end` records are followed too ([`Worker::track`]). A
    /// record that neither needs is not parsed; one both need is parsed once.
    fn audit(&self, lines: &[u8]) {
        let logger = self.sdk.logger.as_ref().map(|(_, l)| l);
        for line in lines.split(|b| *b == b'\n').filter(|l| !l.is_empty()) {
            let tracked = [
                b"\"event\":\"session_start\"".as_slice(),
                b"\"event\":\"initialized\"",
                b"\"event\":\"session_end\"",
            ]
            .iter()
            .position(|event| memchr::memmem::find(line, event).is_some());
            if tracked.is_none() && logger.is_none() {
                continue;
            }
            let Ok(serde_json::Value::Object(record)) = serde_json::from_slice(line) else {
                continue;
            };
            if let Some(kind) = tracked {
                self.track(kind, &record);
            }
            let Some(logger) = logger else {
                continue;
            };
            let mut log = logger.create_log_record();
            let event = record
                .get("event")
                .and_then(serde_json::Value::as_str)
                .unwrap_or("record")
                .to_owned();
            let denied = record.get("decision").and_then(serde_json::Value::as_str) == Some("deny");
            let severity = match event.as_str() {
                "protocol_error" | "log_recovered" | "log_rewound" => Severity::Warn,
                _ if denied => Severity::Warn,
                _ => Severity::Info,
            };
            log.set_severity_number(severity);
            log.set_severity_text(severity.name());
            log.set_event_name("rootfence.audit");
            if let Some(ts) = record
                .get("ts")
                .and_then(serde_json::Value::as_str)
                .and_then(parse_rfc3339)
            {
                log.set_timestamp(ts);
            }
            log.set_body(AnyValue::String(format!("rootfence audit: {event}").into()));
            for (k, v) in record {
                log.add_attribute(k, any_value(v));
            }
            logger.emit(log);
        }
    }

    /// Follows a session's record (`kind`: 0 `session_start`, 1 `initialized`, 2
    /// `session_end`): the protocol revision for the spans and metrics that follow, and the
    /// session's duration when it ends.
    fn track(&self, kind: usize, r: &serde_json::Map<String, serde_json::Value>) {
        let str_of = |k: &str| r.get(k).and_then(serde_json::Value::as_str);
        let Some(session) = str_of("session") else {
            return;
        };
        let ts = str_of("ts").and_then(parse_rfc3339);
        let mut sessions = self.sessions.borrow_mut();
        if !sessions.contains_key(session) && sessions.len() >= MAX_SESSIONS {
            return;
        }
        let facts = sessions.entry(session.to_owned()).or_default();
        match kind {
            0 => facts.started = ts,
            1 => facts.protocol = str_of("protocol_version").map(str::to_owned),
            _ => {
                let facts = sessions.remove(session).unwrap_or_default();
                let protocol = facts
                    .protocol
                    .or_else(|| str_of("protocol_version").map(str::to_owned));
                let (Some(start), Some(end), Some((_, i))) = (facts.started, ts, &self.sdk.meter)
                else {
                    return;
                };
                let secs = end.duration_since(start).unwrap_or_default().as_secs_f64();
                let mut attrs = vec![KeyValue::new("network.transport", "pipe")];
                if let Some(v) = protocol {
                    attrs.push(KeyValue::new("mcp.protocol.version", v));
                }
                let cause = str_of("cause").unwrap_or("unknown");
                if !matches!(cause, "host_closed") {
                    attrs.push(KeyValue::new("error.type", cause.to_owned()));
                }
                i.session_duration.record(secs, &attrs);
            }
        }
    }
}

/// `rootfence.decision`: `allow` or `deny`.
fn verdict(allow: bool) -> KeyValue {
    KeyValue::new("rootfence.decision", if allow { "allow" } else { "deny" })
}

/// A JSON value as an OTLP value: objects and arrays keep their structure.
fn any_value(v: serde_json::Value) -> AnyValue {
    use serde_json::Value as J;
    match v {
        J::Null => AnyValue::String("".into()),
        J::Bool(b) => AnyValue::Boolean(b),
        J::Number(n) => match n.as_i64() {
            Some(i) => AnyValue::Int(i),
            None => n
                .as_f64()
                .map_or_else(|| AnyValue::String(n.to_string().into()), AnyValue::Double),
        },
        J::String(s) => AnyValue::String(s.into()),
        J::Array(a) => AnyValue::ListAny(Box::new(a.into_iter().map(any_value).collect())),
        J::Object(o) => AnyValue::Map(Box::new(
            o.into_iter()
                .map(|(k, v)| (k.into(), any_value(v)))
                .collect(),
        )),
    }
}

/// `2026-11-24T18:14:01.123456Z` (the audit log's `ts`) as a time.
fn parse_rfc3339(ts: &str) -> Option<SystemTime> {
    let micros = crate::audit::parse_ts_micros(ts)?;
    let d = Duration::from_micros(u64::try_from(micros).ok()?);
    SystemTime::UNIX_EPOCH.checked_add(d)
}
