//! How a server generation is launched: the sandbox spec for a set of effective roots, from
//! the policy and the run options; the launcher command; and the enforcement report of the
//! process once it started. The enforcer decides *when* (see `enforce::follow`); this module
//! decides *how*, so the same code confines the first server process and every restart.

use std::ffi::OsString;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

use crate::enforce::{ReportSlot, ServerLauncher};
use crate::policy::Policy;
use crate::relay::{Gen, Launch};
use crate::roots::RootSet;
use crate::sandbox::{self, SandboxMode, SandboxRoot, ServerGrants};

/// Launches server generations of `argv` confined by the OS sandbox, under the policy's
/// `[sandbox]` settings and the host entry's grants, in `mode`.
#[derive(Debug)]
pub struct SandboxLauncher {
    pub(crate) policy: Arc<Policy>,
    pub(crate) mode: SandboxMode,
    pub(crate) argv: Vec<OsString>,
    /// What the host entry adds (`--env`, `--read`, `--write`).
    pub(crate) host_grants: ServerGrants,
    /// Where the host started rootfence (relative `--read`/`--write` paths).
    pub(crate) cwd: PathBuf,
    /// Set once some launcher sharing it printed its report: `rootfence serve` starts a
    /// server per session, and prints the (same) report once, not once per session (later
    /// reports go to the debug log).
    pub(crate) reported: Option<Arc<AtomicBool>>,
    /// The placeholders of protected directory names held for the session (made before
    /// each generation's launch), released by [`SandboxLauncher::remove_placeholders`].
    pub(crate) placeholders: sandbox::Placeholders,
}

impl SandboxLauncher {
    /// Releases the session's placeholders: those no other session holds are removed while
    /// still empty. Call it once the session is over (no server runs).
    pub fn remove_placeholders(&self) {
        self.placeholders.release();
    }
}

impl ServerLauncher for SandboxLauncher {
    fn grants(&self, roots: &RootSet) -> Vec<SandboxRoot> {
        let access = &self.policy.sandbox();
        let mut grants: Vec<SandboxRoot> = roots
            .roots()
            .iter()
            .map(|r| SandboxRoot {
                path: PathBuf::from(r.real_uri().path()),
                access: access.access_for_root(r.uri().path()),
            })
            .collect();
        grants.sort_by(|a, b| a.path.cmp(&b.path));
        grants.dedup();
        grants
    }

    fn prepare(&self, roots: &RootSet, generation: Gen) -> Result<(Launch, ReportSlot), String> {
        // The sandbox spec for a server confined to `roots` (`policy::server_spec`, the one
        // place the policy and the command line meet; its warnings were said at start).
        let (spec, _warnings) = crate::policy::server_spec(
            &self.policy,
            self.mode,
            self.grants(roots),
            &self.host_grants,
            &self.cwd,
        )
        .map_err(|e| e.to_string())?;
        if spec.mode != SandboxMode::Off && sandbox::mount_namespace_likely() {
            self.placeholders.hold(&spec.roots, &spec.read_only_paths);
        }
        let prepared = sandbox::prepare(&spec, &self.argv).map_err(|e| e.to_string())?;
        let session = Arc::new(Mutex::new(prepared.session));
        let slot: ReportSlot = Arc::new(OnceLock::new());
        let started = {
            let session = Arc::clone(&session);
            let slot = Arc::clone(&slot);
            let reported = self.reported.clone();
            move || -> Result<(), String> {
                let Some(reader) = crate::relock(&session).take_report_reader() else {
                    return Ok(());
                };
                let report = reader
                    .read_blocking()
                    .map_err(|e| format!("the sandbox did not start the server: {e}"))?;
                if reported.is_some_and(|r| r.swap(true, Ordering::Relaxed)) {
                    tracing::debug!(%generation, "sandbox: {report}");
                } else if generation == 1 {
                    crate::stderr_line!("rootfence: {report}");
                } else {
                    crate::stderr_line!("rootfence: server generation {generation}: {report}");
                }
                let _ = slot.set(report);
                Ok(())
            }
        };
        Ok((
            Launch {
                command: prepared.command,
                started: Some(Box::new(started)),
                keep: Some(Box::new(session)),
            },
            slot,
        ))
    }

    fn confines(&self) -> bool {
        self.mode != SandboxMode::Off
    }
}
