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
//!
//! One start at a time (issue 28): while a generation is starting, a change of roots does
//! not start another; the newest grants wait, prepared, and start once the start under way
//! is over (a change back to the grants being started cancels the wait). So a storm of
//! changes costs at most one start at a time, and a change never cuts a start short (which
//! would count as "could not start" and end the session). Meanwhile the protocol layer
//! already enforces the newest roots; the kernel's boundary catches up when the waiting
//! generation is up.

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
    state: Arc<Mutex<State>>,
}

#[derive(Default)]
struct State {
    /// The newest generation asked for or waiting (0: none yet).
    generation: Gen,
    /// Its grants.
    grants: Vec<SandboxRoot>,
    /// A generation is starting (asked of the relay, not yet up or failed), with its grants.
    starting: Option<Vec<SandboxRoot>>,
    /// The generation to start once the start under way is over (the newest grants).
    waiting: Option<Start>,
}

/// A prepared generation and what its audit record needs.
struct Start {
    generation: Gen,
    launch: Launch,
    report: ReportSlot,
    grants: Vec<SandboxRoot>,
    record: audit::ServerStart,
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
            state: Arc::default(),
        }
    }

    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        crate::relock(&self.state)
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
        let grants = launcher.grants(roots);
        if st.waiting.is_some() && st.starting.as_ref() == Some(&grants) {
            // Back to the grants being started: nothing more to start.
            tracing::info!(
                "the roots moved back ({trigger}); the waiting generation is not needed"
            );
            st.waiting = None;
            st.grants = grants;
            return;
        }
        // A waiting generation is replaced: it keeps its number.
        let generation = st
            .waiting
            .as_ref()
            .map_or(st.generation + 1, |w| w.generation);
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
        st.grants = grants.clone();
        let start = Start {
            generation,
            launch,
            report,
            grants,
            record: audit::ServerStart {
                generation,
                trigger: trigger.to_owned(),
                roots: super::uris(roots),
                ..audit::ServerStart::default()
            },
        };
        if st.starting.is_some() {
            tracing::info!(
                "server generation {generation} waits for the start under way to finish"
            );
            st.waiting = Some(start);
            return;
        }
        st.starting = Some(start.grants.clone());
        // Asked of the session now, not in the task: from this moment on, host messages go
        // to the new generation.
        let started = start.ask(session);
        tokio::spawn(starts(
            Arc::clone(&self.state),
            Arc::clone(session),
            self.audit.clone(),
            started,
        ));
    }
}

/// A generation asked of the relay, waiting for its answer.
struct Started {
    generation: Gen,
    report: ReportSlot,
    record: audit::ServerStart,
    answer: tokio::sync::oneshot::Receiver<Result<crate::relay::Launched, String>>,
}

impl Start {
    fn ask(self, session: &Session) -> Started {
        Started {
            generation: self.generation,
            report: self.report,
            record: self.record,
            answer: session.launch(self.launch),
        }
    }
}

/// Waits for `started`, then starts each generation that waited for it, one at a time.
async fn starts(
    state: Arc<Mutex<State>>,
    session: Arc<Session>,
    audit: Recorder,
    started: Started,
) {
    let mut next = Some(started);
    while let Some(Started {
        generation,
        report,
        record,
        answer,
    }) = next.take()
    {
        let ok = match answer.await {
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
                true
            }
            Ok(Err(e)) => {
                crate::stderr_line!(
                    "rootfence: error: server generation {generation} did not start: {e}"
                );
                false
            }
            Err(_) => false,
        };
        let mut st = crate::relock(&state);
        // After a failed start the session is ending: start nothing more.
        let waiting = st.waiting.take().filter(|_| ok);
        st.starting = waiting.as_ref().map(|w| w.grants.clone());
        // Asked under the lock, so a change of roots meanwhile sees it as starting.
        next = waiting.map(|w| w.ask(&session));
    }
}
