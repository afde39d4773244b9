//! OpenTelemetry: a span per relayed host request (MCP semantic conventions plus
//! rootfence's decision), W3C trace context continued through `params._meta`, metrics, and
//! the audit log's records as OTLP log records. Off unless a collector is named (see
//! `config.rs`, docs/siem.md).
//!
//! # Never in the relay's way
//!
//! The relay's thread only notes facts: a host request's id, method and times, the decisions
//! made on it, how it was answered. Each note is pushed on a bounded inbox ([`QUEUE`]
//! entries; one uncontended lock, no system call: the telemetry thread is never woken per
//! note, it takes the whole inbox every [`TICK`]) and the telemetry thread builds the spans,
//! metrics and log records with the SDK; the SDK's batch processors export from threads of
//! their own. When the inbox is full, the note is dropped and counted, and the count is
//! itself exported (`rootfence.telemetry.dropped`); a collector that is down or slow backs up
//! the SDK's own bounded queues, which drop too, never the inbox. Nothing here ever waits on
//! a collector except [`Telemetry::shutdown`], bounded by [`SHUTDOWN_WAIT`].
//!
//! The one thing done on the relay's thread besides the note: choosing the span id of the
//! request's span (random), so that a host `traceparent` can be rewritten to name it before
//! the request is forwarded, and the server's own spans become its children.
//!
//! The audit records reach the telemetry thread from the audit writer's thread (what was
//! written, line by line), never from the relay's.

pub mod config;
#[cfg(feature = "otel")]
mod context;
#[cfg(feature = "otel")]
mod http;
#[cfg(not(feature = "otel"))]
mod off;
#[cfg(feature = "otel")]
mod otel;
#[cfg(feature = "otel")]
mod worker;

use std::time::Duration;

use crate::jsonrpc::Id;
use crate::relay::Side;

pub use config::Config;
#[cfg(not(feature = "otel"))]
pub use off::Telemetry;
#[cfg(feature = "otel")]
pub use otel::Telemetry;

/// Notes queued for the telemetry thread, at most.
pub const QUEUE: usize = 8192;

/// How often the telemetry thread takes the notes queued.
pub const TICK: Duration = Duration::from_millis(25);

/// How long the end of a session waits for the last telemetry to be exported.
pub const SHUTDOWN_WAIT: Duration = Duration::from_millis(1500);

/// One decision, as the enforcer made it.
#[derive(Debug)]
pub struct DecisionNote<'a> {
    /// The request the decision belongs to: the host request, or the host request a server
    /// response answers (`None` for notifications and the server's own requests).
    pub request: Option<&'a Id>,
    /// Where the message came from.
    pub from: Side,
    /// The message's method (for a response, its request's).
    pub method: &'a str,
    /// Allowed or denied.
    pub allow: bool,
    /// The reason code (`outside_roots`, `default_allow`, ...).
    pub reason: &'a str,
    /// The deciding rule, when one decided.
    pub rule: Option<&'a str>,
    /// The URI judged, as it came.
    pub uri: &'a str,
    /// How many entries this note stands for (a list page's allowed entries are one note).
    pub count: u64,
}
