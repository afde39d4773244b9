//! What one guarded session is built from, shared by `rootfence run` (one session on stdio)
//! and `rootfence serve` (one per HTTP session, or per pooled server process): the policy,
//! the operator roots, how each server generation is confined and started, the audit log's
//! settings and the relay's timing. [`Setup::session`] builds one session's enforcer (with its
//! sandbox launcher and the hook that opens its audit session); [`Setup::finish`] closes that
//! audit session with the relay's outcome.
//!
//! The command line front ends parse and check their options into a [`Setup`] once; a
//! `Setup` can then build any number of independent sessions.

use std::ffi::OsString;
use std::path::PathBuf;
use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::audit::{
    self, AuditConfig, AuditError, AuditLog, AuditUri, DroppedRoot, PolicyFile, SessionEnd,
    SessionStart,
};
use crate::enforce::{Enforcer, StartHook, Started};
use crate::launch::SandboxLauncher;
use crate::policy::Policy;
use crate::relay::{EndCause, Outcome, RelayConfig};
use crate::roots::RootSpec;
use crate::sandbox::{SandboxMode, ServerGrants};

/// Everything a session needs, checked once.
#[derive(Debug, Clone)]
pub struct Setup {
    /// The compiled policy layers.
    pub policy: Arc<Policy>,
    /// The operator roots: `--root` plus the policy's `roots.static`.
    pub roots: Vec<RootSpec>,
    /// The roots taken from the server's command line (`roots.from_command`), used only
    /// when the host declares none and there are no operator roots.
    pub command_roots: Vec<RootSpec>,
    /// How the server is confined.
    pub sandbox: SandboxMode,
    /// The server command line.
    pub command: Vec<OsString>,
    /// What the host entry adds to the sandbox (`--env`, `--read`, `--write`).
    pub grants: ServerGrants,
    /// Where rootfence was started (relative paths, the server's working directory).
    pub cwd: PathBuf,
    /// The audit log.
    pub audit: AuditConfig,
    /// The longest message accepted from either side, in bytes.
    pub max_message: usize,
    /// The stdio shutdown grace (stdin closed → SIGTERM → SIGKILL).
    pub shutdown_grace: Duration,
    /// How long a replaced server generation may finish what it holds.
    pub restart_grace: Duration,
    /// Shared by every session's launcher when set: the sandbox report is printed once
    /// (`rootfence serve`), not once per session.
    pub report_once: Option<Arc<AtomicBool>>,
    /// OpenTelemetry, when on: each session gets a handle of its own
    /// ([`crate::telemetry::Telemetry::for_session`]); the audit config's `tee` feeds it the
    /// records.
    pub telemetry: Option<crate::telemetry::Telemetry>,
}

/// The audit session of one relay session, once its start hook opened it.
pub type AuditSlot = Arc<Mutex<Option<AuditLog>>>;

impl Setup {
    /// The audit settings the policy gives for a log at `path`.
    pub fn audit_config(policy: &Policy, path: PathBuf) -> AuditConfig {
        let a = policy.audit();
        let mut cfg = AuditConfig::new(path);
        cfg.fsync = a.fsync;
        cfg.rotate_bytes = a.rotate_bytes.or(cfg.rotate_bytes);
        cfg.on_failure = a.on_failure;
        cfg.log_allowed = a.log_allowed;
        cfg.retain_files = a.retain_files.or(cfg.retain_files);
        cfg.retain_bytes = a.retain_bytes;
        cfg.syslog = a.syslog.clone();
        cfg
    }

    /// An enforcer for one session, confining its server generations with the sandbox
    /// launcher, under `roots` as the operator roots (normally [`Setup::roots`]). Returns the
    /// operator roots that were dropped (unopenable, or refused by the policy), and the
    /// launcher, whose placeholders the caller removes once the session is over
    /// ([`SandboxLauncher::remove_placeholders`]).
    pub fn enforcer(
        &self,
        roots: Vec<RootSpec>,
    ) -> (Enforcer, Vec<DroppedRoot>, Arc<SandboxLauncher>) {
        let launcher = Arc::new(SandboxLauncher {
            policy: Arc::clone(&self.policy),
            mode: self.sandbox,
            argv: self.command.clone(),
            host_grants: self.grants.clone(),
            cwd: self.cwd.clone(),
            reported: self.report_once.clone(),
            placeholders: Default::default(),
        });
        let (enforcer, dropped) = Enforcer::with_command_roots(
            Arc::clone(&self.policy),
            roots,
            self.command_roots.clone(),
            Some(Arc::clone(&launcher) as Arc<dyn crate::enforce::ServerLauncher>),
        );
        (enforcer, dropped, launcher)
    }

    /// One session's enforcer, with the hook that opens its audit session when the relay
    /// starts (`describe` may add to the `session_start` record), the slot that then holds
    /// the audit log until [`Setup::finish`], and the session's launcher (remove its
    /// placeholders once every server of the session has stopped).
    pub fn session(
        &self,
        roots: Vec<RootSpec>,
        describe: impl FnOnce(&mut SessionStart) + Send + 'static,
    ) -> (Enforcer, AuditSlot, Arc<SandboxLauncher>) {
        let (enforcer, _dropped, launcher) = self.enforcer(roots);
        let telemetry = self.telemetry.as_ref().map(|t| t.for_session());
        let enforcer = match &telemetry {
            Some(t) => enforcer.with_telemetry(t.clone()),
            None => enforcer,
        };
        let mut start = self.session_start(&enforcer);
        describe(&mut start);
        let slot: AuditSlot = Arc::default();
        let hook_slot = Arc::clone(&slot);
        let cfg = self.audit.clone();
        let hook: StartHook = Box::new(move |_session| {
            let log = AuditLog::open(cfg, start)
                .map_err(|e| format!("cannot open the audit log: {e}"))?;
            if let Some(t) = &telemetry {
                t.set_session(log.session_id());
            }
            let auditor = log.handle();
            *crate::relock(&hook_slot) = Some(log);
            Ok(Started {
                auditor: Some(auditor),
            })
        });
        (enforcer.with_start(hook), slot, launcher)
    }

    /// The relay settings: the message limit and the grace periods. (A session's telemetry
    /// observer is its enforcer's: [`Enforcer::observer`].)
    pub fn relay_config(&self) -> RelayConfig {
        let mut config = RelayConfig::deferred();
        config.max_line = self.max_message;
        config.shutdown_grace = self.shutdown_grace;
        config.timing.grace = self.restart_grace;
        config
    }

    /// The `session_start` record of a session run by `enforcer`.
    fn session_start(&self, enforcer: &Enforcer) -> SessionStart {
        let mut ss = SessionStart::new(&self.command, &self.cwd);
        ss.policy_files = policy_files(&self.policy);
        ss.mode = Some(self.policy.mode().as_str().to_owned());
        ss.effective_roots = enforcer
            .operator_roots()
            .roots()
            .iter()
            .map(|r| AuditUri::new(r.uri().as_str()))
            .collect();
        ss
    }

    /// Closes a session's audit log (if its start hook opened one) with the relay's outcome.
    pub fn finish(slot: &AuditSlot, outcome: &Outcome) -> Result<(), AuditError> {
        let log = crate::relock(slot).take();
        log.map_or(Ok(()), |log| log.close(session_end(outcome)))
    }
}

/// A policy's layers as the audit log names them (`session_start`, `policy_reload`).
pub fn policy_files(policy: &Policy) -> Vec<PolicyFile> {
    policy
        .layers()
        .iter()
        .map(|l| PolicyFile {
            path: l.name.clone(),
            sha256: l.sha256.clone(),
        })
        .collect()
}

/// The `session_end` record for a relay outcome.
pub fn session_end(outcome: &Outcome) -> SessionEnd {
    use std::sync::atomic::Ordering::Relaxed;
    SessionEnd {
        cause: match outcome.cause {
            EndCause::HostClosedInput | EndCause::HostClosedOutput => audit::EndCause::HostClosed,
            EndCause::ServerClosedOutput | EndCause::ServerExited => audit::EndCause::ServerExited,
            EndCause::Stopped => audit::EndCause::AuditFailure,
            EndCause::ServerFailed => audit::EndCause::Error,
        },
        detail: (outcome.cause == EndCause::ServerFailed)
            .then(|| "a server generation could not be started".to_owned()),
        exit_code: outcome.status.code(),
        signal: std::os::unix::process::ExitStatusExt::signal(&outcome.status),
        protocol_version: outcome.session.revision().map(|r| r.to_string()),
        counts: audit::Counts {
            from_host: outcome.session.counters.from_host.load(Relaxed),
            from_server: outcome.session.counters.from_server.load(Relaxed),
            ..audit::Counts::default()
        },
    }
}
