//! 2026-07-28 stateless requests (placeholder while the session path is built).

use std::sync::Arc;
use std::time::Duration;

use axum::http::StatusCode;
use axum::http::request::Parts;
use axum::response::Response;

use super::http::{App, Incoming, rpc_error};
use crate::setup::Setup;

/// How stateless requests are served.
#[derive(Debug, Clone)]
pub struct StatelessConfig {
    /// The key that signs the state requests carry (shared by every replica).
    pub key: Vec<u8>,
    /// Server processes kept, one per set of grants.
    pub pool: usize,
    /// How long signed state stays valid.
    pub ttl: Duration,
}

/// The stateless handler.
#[derive(Debug)]
pub struct Stateless {
    /// Whether the listener speaks TLS (for URLs in metadata).
    pub tls: bool,
}

impl Stateless {
    /// The handler for `setup`'s server.
    pub fn new(_setup: &Setup, _cfg: StatelessConfig, tls: bool) -> Stateless {
        Stateless { tls }
    }

    /// Answers one stateless request.
    pub async fn handle(
        &self,
        _app: &Arc<App>,
        _principal: Option<String>,
        _parts: &Parts,
        incoming: Incoming,
    ) -> Response {
        rpc_error(
            StatusCode::BAD_REQUEST,
            incoming.requests.first().map(|(id, _)| id),
            -32022,
            "2026-07-28 is not served yet",
        )
    }

    /// Closes long-lived streams (at shutdown).
    pub fn close_streams(&self) {}

    /// Ends every pooled server.
    pub fn close_all(&self) {}

    /// Waits until every pooled server has ended.
    pub async fn wait_all(&self) {}
}

impl App {
    /// Ends idle pooled servers, until the process ends.
    pub async fn stateless_reaper(self: Arc<Self>) {}
}
