//! The telemetry handle of a build without the `otel` cargo feature: the same API as the
//! OpenTelemetry one, but no handle can ever exist, so the relay's calls compile away and
//! the SDK, the OTLP exporter and their HTTP client are not linked. A collector named by the
//! policy or the environment is reported once on stderr (telemetry is never a reason to
//! refuse a server, so the session runs without it).

use crate::jsonrpc::Id;
use crate::relay::{Answer, Observer};

use super::DecisionNote;

/// Why telemetry is off in this build, with what to do about it.
const NOT_BUILT: &str = "this rootfence was built without OpenTelemetry (the `otel` cargo \
     feature); reinstall it with default features (`cargo install --path .`) or add \
     `--features otel`";

/// No value of this type exists in a build without `otel`: [`Telemetry::start`] always
/// returns `None`.
#[derive(Clone, Debug)]
pub struct Telemetry {
    never: std::convert::Infallible,
}

impl Telemetry {
    /// Says on stderr that a collector was asked for but cannot be used; always `None`.
    pub fn start(policy: &crate::policy::Policy) -> Option<Telemetry> {
        match super::config::resolve(policy.telemetry(), |k| std::env::var(k).ok()) {
            Ok(None) => {}
            Ok(Some(_)) => {
                crate::stderr_line!("rootfence: warning: telemetry is off: {NOT_BUILT}")
            }
            Err(why) => crate::stderr_line!("rootfence: warning: telemetry is off: {why}"),
        }
        None
    }

    /// Unreachable: no handle exists.
    pub fn for_session(&self) -> Telemetry {
        match self.never {}
    }

    /// Unreachable: no handle exists.
    pub fn set_session(&self, _id: &str) {
        match self.never {}
    }

    /// Unreachable: no handle exists.
    pub fn decision(&self, _d: &DecisionNote<'_>) {
        match self.never {}
    }

    /// Unreachable: no handle exists.
    pub fn audit_tee(&self) -> crate::audit::LineTee {
        match self.never {}
    }

    /// Unreachable: no handle exists.
    pub fn shutdown(&self) {
        match self.never {}
    }
}

impl Observer for Telemetry {
    fn request(&self, _id: &Id, _method: &str, _text: &str) -> Option<String> {
        match self.never {}
    }

    fn answered(&self, _id: &Id, _answer: Answer) {
        match self.never {}
    }

    fn generation(&self, _generation: crate::relay::Gen, _started: bool) {
        match self.never {}
    }
}
