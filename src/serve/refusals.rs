//! The audit session of the front door: requests `serve` refuses before any session or
//! pooled server sees them (today: routing headers that disagree with the body), each
//! written as a `protocol_error` record with the message's length and SHA-256, never its
//! content.
//!
//! The session is opened at the first such refusal (a server that never refuses writes
//! nothing) and closed at shutdown. If the log cannot be written, the refusal still
//! happens; the failure is logged to stderr.

use std::sync::Mutex;

use crate::audit::{
    self, AuditLog, Direction, Event, ProtocolError, ProtocolErrorKind, RpcId, SessionEnd,
};
use crate::jsonrpc::Id;
use crate::setup::Setup;

/// The front door's audit session.
#[derive(Debug, Default)]
pub struct Refusals {
    log: Mutex<Option<AuditLog>>,
}

impl Refusals {
    fn lock(&self) -> std::sync::MutexGuard<'_, Option<AuditLog>> {
        crate::relock(&self.log)
    }

    /// Records that the message `line` (request `id`, if any) was refused: `code` and
    /// `detail` say why.
    pub fn refused(&self, setup: &Setup, line: &[u8], id: Option<&Id>, code: i64, detail: &str) {
        let mut log = self.lock();
        if log.is_none() {
            let mut start = audit::SessionStart::new(&setup.command, &setup.cwd);
            start.mode = Some(setup.policy.mode().as_str().to_owned());
            match AuditLog::open(setup.audit.clone(), start) {
                Ok(l) => *log = Some(l),
                Err(e) => {
                    tracing::error!("cannot open the audit log for a refused request: {e}");
                    return;
                }
            }
        }
        let Some(l) = log.as_ref() else { return };
        let sha256 = crate::audit::chain::sha256_hex(line);
        let event = Event::ProtocolError(ProtocolError {
            direction: Direction::HostToServer,
            kind: ProtocolErrorKind::Other,
            detail: format!("{code}: {detail}"),
            len: line.len() as u64,
            sha256: Some(sha256),
            id: id.and_then(|i| RpcId::from_json(i.raw())),
        });
        if let Err(e) = l.handle().record(event) {
            tracing::error!("cannot audit a refused request: {e}");
        }
    }

    /// Closes the session (at shutdown), if one was opened.
    pub fn close(&self) {
        if let Some(l) = self.lock().take() {
            let end = SessionEnd {
                cause: audit::EndCause::Signal,
                detail: Some(
                    "rootfence serve's front door: requests refused before any session".into(),
                ),
                ..SessionEnd::default()
            };
            if let Err(e) = l.close(end) {
                tracing::error!("could not close the front door's audit session: {e}");
            }
        }
    }
}
