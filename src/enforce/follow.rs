//! The OS sandbox follows the effective roots: the server process is started only once the
//! roots it must be confined to are known (or known to be unknowable), and whenever they move
//! so that it would need other grants, a new server generation is started under the new grants
//! and the session moves to it (see `relay::generation`). So the kernel's boundary is the
//! protocol's at every moment of a session, not just at launch: Landlock cannot widen a
//! running process's domain, nor narrow it from outside.
//!
//! `[sandbox] follow_roots = "launch"` keeps the launch grants instead (for servers that
//! cannot be restarted); roots beyond them are then reported as `outside_sandbox`.
//!
//! This module decides *when*; how a server is prepared for a set of roots (the sandbox spec,
//! the launcher command) is the [`ServerLauncher`]'s business, and how the switch is carried
//! out is the relay's.

use std::sync::{Arc, Mutex, OnceLock};

use tokio::sync::watch;

use crate::audit::{self, AuditUri, Event};
use crate::policy::FollowRoots;
use crate::relay::{Gen, Launch, Session};
use crate::roots::RootSet;
use crate::sandbox::{EnforcementReport, SandboxRoot};

use super::Recorder;

/// Where the enforcement report of a launched generation lands once its process started.
pub type ReportSlot = Arc<OnceLock<EnforcementReport>>;

/// Prepares server processes confined to a set of roots.
pub trait ServerLauncher: Send + Sync + 'static {
    /// The grants a server confined to `roots` gets, in a stable order: two root sets with
    /// the same grants need no new generation.
    fn grants(&self, roots: &RootSet) -> Vec<SandboxRoot>;

    /// Prepares generation `generation`, confined to `roots`. The slot receives its
    /// enforcement report once it started.
    fn prepare(&self, roots: &RootSet, generation: Gen) -> Result<(Launch, ReportSlot), String>;

    /// Whether the server is confined by the OS at all. When it is not, it is started at
    /// once and never restarted (there is no kernel boundary to keep equal to the roots).
    fn confines(&self) -> bool;
}

/// Decides when server generations start.
pub(super) struct Follower {
    launcher: Option<Arc<dyn ServerLauncher>>,
    mode: FollowRoots,
    audit: Recorder,
    fatal: watch::Sender<Option<String>>,
    state: Mutex<State>,
}

#[derive(Default)]
struct State {
    /// The newest generation asked for (0: none yet).
    generation: Gen,
    /// Its grants.
    grants: Vec<SandboxRoot>,
}

impl std::fmt::Debug for Follower {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Follower")
            .field("mode", &self.mode)
            .finish_non_exhaustive()
    }
}

impl Follower {
    pub(super) fn new(
        launcher: Option<Arc<dyn ServerLauncher>>,
        mode: FollowRoots,
        audit: Recorder,
        fatal: watch::Sender<Option<String>>,
    ) -> Follower {
        Follower {
            launcher,
            mode,
            audit,
            fatal,
            state: Mutex::default(),
        }
    }

    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Whether this enforcer starts the server itself (else the relay was given a command).
    pub(super) fn launches(&self) -> bool {
        self.launcher.is_some()
    }

    /// Whether the first generation still waits to be started.
    pub(super) fn unlaunched(&self) -> bool {
        self.launcher.is_some() && self.state().generation == 0
    }

    /// Whether the server is confined, so that its start waits for the host's roots.
    pub(super) fn waits_for_roots(&self) -> bool {
        self.launcher.as_ref().is_some_and(|l| l.confines())
    }

    /// Starts the first generation now if it was not started yet, confined to `roots`.
    pub(super) fn launch_first(&self, session: &Arc<Session>, roots: &RootSet, trigger: &str) {
        let mut st = self.state();
        if st.generation == 0 && self.launcher.is_some() {
            self.start(session, roots, trigger, &mut st);
        }
    }

    /// The effective roots moved to `roots`. Starts the first generation if it was waiting,
    /// or a new one if the grants differ and the policy says to follow. Returns the roots the
    /// running server cannot reach (when it does not follow).
    pub(super) fn follow(
        &self,
        session: &Arc<Session>,
        roots: &RootSet,
        trigger: &str,
    ) -> Vec<AuditUri> {
        let Some(launcher) = self.launcher.clone() else {
            return Vec::new();
        };
        let mut st = self.state();
        if st.generation == 0 {
            self.start(session, roots, trigger, &mut st);
            return Vec::new();
        }
        if !launcher.confines() {
            return Vec::new();
        }
        let grants = launcher.grants(roots);
        if grants == st.grants {
            return Vec::new();
        }
        match self.mode {
            FollowRoots::Restart => {
                tracing::info!(
                    "the roots moved ({trigger}); starting server generation {} under the new grants",
                    st.generation + 1
                );
                self.start(session, roots, trigger, &mut st);
                Vec::new()
            }
            FollowRoots::Launch => {
                let outside: Vec<AuditUri> = roots
                    .roots()
                    .iter()
                    .filter(|r| {
                        let real = std::path::Path::new(r.real_uri().path());
                        !st.grants.iter().any(|g| real.starts_with(&g.path))
                    })
                    .map(|r| AuditUri::new(r.uri().as_str()))
                    .collect();
                if !outside.is_empty() {
                    tracing::warn!(
                        "roots beyond what the sandbox granted at launch (follow_roots = \"launch\": the server cannot reach them): {:?}",
                        outside
                    );
                }
                outside
            }
        }
    }

    fn start(&self, session: &Arc<Session>, roots: &RootSet, trigger: &str, st: &mut State) {
        let Some(launcher) = &self.launcher else {
            return;
        };
        let generation = st.generation + 1;
        let (launch, report) = match launcher.prepare(roots, generation) {
            Ok(prepared) => prepared,
            Err(e) => {
                let reason = format!("the server could not be prepared for the roots: {e}");
                tracing::error!("{reason}");
                self.fatal.send_replace(Some(reason));
                return;
            }
        };
        st.generation = generation;
        st.grants = launcher.grants(roots);
        let answer = session.launch(launch);
        let audit = self.audit.clone();
        let record = audit::ServerStart {
            generation,
            trigger: trigger.to_owned(),
            roots: roots
                .roots()
                .iter()
                .map(|r| AuditUri::new(r.uri().as_str()))
                .collect(),
            ..audit::ServerStart::default()
        };
        tokio::spawn(async move {
            match answer.await {
                Ok(Ok(launched)) => {
                    for d in &launched.differences {
                        crate::stderr_line!(
                            "rootfence: warning: server generation {generation} answers `initialize` differently: {d}"
                        );
                    }
                    for uri in &launched.lost_subscriptions {
                        crate::stderr_line!(
                            "rootfence: warning: server generation {generation} did not renew the subscription to {uri}"
                        );
                    }
                    audit.record(Event::ServerStart(audit::ServerStart {
                        sandbox: report.get().map(EnforcementReport::audit_record),
                        differences: launched.differences,
                        lost_subscriptions: launched.lost_subscriptions,
                        ..record
                    }));
                }
                Ok(Err(e)) => {
                    crate::stderr_line!(
                        "rootfence: error: server generation {generation} did not start: {e}"
                    );
                }
                Err(_) => {}
            }
        });
    }
}
