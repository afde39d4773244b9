//! The observation point: what the relay tells an observer (OpenTelemetry, see
//! `src/telemetry/`) about each host request's life, without the relay knowing who listens.
//!
//! With no observer set ([`super::RelayConfig::observer`] is `None`, the default), the relay
//! makes no call and no extra work: one `Option` test per host request and per answer.
//!
//! An observer is called on the relay's thread, so every method must return at once: no I/O,
//! no lock held for long, no waiting on a queue (hand the work to a thread of its own and
//! drop it when that thread falls behind).

use crate::jsonrpc::Id;

use super::session::Gen;

/// How a host request was answered.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Answer {
    /// The server's response went to the host (as it came, or as rootfence changed it).
    Server {
        /// The JSON-RPC error code of the answer the host got, if it was an error.
        error: Option<i64>,
        /// Bytes of the server's answer that rootfence withheld from the host (a filtered
        /// item, a response replaced by a denial).
        withheld: u64,
    },
    /// rootfence answered the request itself (a denial, a locally served read, a refusal).
    Local {
        /// The JSON-RPC error code of the answer, if it was an error.
        error: Option<i64>,
        /// Bytes of the request that never reached the server.
        withheld: u64,
    },
    /// The host cancelled the request (`notifications/cancelled`).
    Cancelled,
    /// The server went away before answering; rootfence answered with an error.
    ServerGone,
}

/// Hooks the relay calls on its own thread; keep each one cheap and non-blocking.
pub trait Observer: Send + Sync + std::fmt::Debug + 'static {
    /// A host request was accepted for routing (not a duplicate or reserved id). `text` is
    /// the request's JSON text. Returns the `traceparent` to forward in its `params._meta`
    /// in place of the host's, when the host sent one (the observer's own span is then the
    /// parent the server sees).
    fn request(&self, id: &Id, method: &str, text: &str) -> Option<String>;

    /// A host request was forwarded to the server: from here to its answer, rootfence is
    /// the server's MCP client (`mcp.client.operation.duration`). Not called for a request
    /// rootfence answers itself.
    fn forwarded(&self, id: &Id) {
        let _ = id;
    }

    /// A host request got its one answer (or was cancelled, or lost its server).
    fn answered(&self, id: &Id, answer: Answer);

    /// A server generation was started (`started`) or could not start.
    fn generation(&self, generation: Gen, started: bool);
}
