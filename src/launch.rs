//! How a server generation is launched: the sandbox spec for a set of effective roots, from
//! the policy and the run options; the launcher command; and the enforcement report of the
//! process once it started. The enforcer decides *when* (see `enforce::follow`); this module
//! decides *how*, so the same code confines the first server process and every restart.

use std::ffi::OsString;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, OnceLock};

use crate::enforce::{ReportSlot, ServerLauncher};
use crate::policy::Policy;
use crate::relay::{Gen, Launch};
use crate::roots::RootSet;
use crate::sandbox::{self, SandboxMode, SandboxRoot, SandboxSpec};

/// Launches server generations confined by the OS sandbox.
#[derive(Debug)]
pub struct SandboxLauncher {
    policy: Arc<Policy>,
    mode: SandboxMode,
    argv: Vec<OsString>,
}

impl SandboxLauncher {
    /// A launcher for `argv` under the policy's `[sandbox]` settings, in `mode`.
    pub fn new(policy: Arc<Policy>, mode: SandboxMode, argv: Vec<OsString>) -> SandboxLauncher {
        SandboxLauncher { policy, mode, argv }
    }

    /// The sandbox spec for a server confined to `roots`.
    pub fn spec(&self, roots: &RootSet) -> SandboxSpec {
        let s = self.policy.sandbox();
        let mut spec = SandboxSpec::new(self.mode);
        spec.roots = self.grants(roots);
        spec.read = s.read.clone();
        spec.write = s.write.clone();
        spec.network = s.network.clone();
        spec.rlimits = s.rlimits;
        spec.env = s.env.clone();
        for pattern in &self.policy.resources().deny_globs {
            spec.add_deny_pattern(pattern);
        }
        spec
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
        let spec = self.spec(roots);
        let prepared = sandbox::prepare(&spec, &self.argv).map_err(|e| e.to_string())?;
        let session = Arc::new(Mutex::new(prepared.session));
        let slot: ReportSlot = Arc::new(OnceLock::new());
        let started = {
            let session = Arc::clone(&session);
            let slot = Arc::clone(&slot);
            move || -> Result<(), String> {
                let reader = session
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .take_report_reader();
                let Some(reader) = reader else {
                    return Ok(());
                };
                let report = reader
                    .read_blocking()
                    .map_err(|e| format!("the sandbox did not start the server: {e}"))?;
                if generation == 1 {
                    eprintln!("rootfence: {report}");
                } else {
                    eprintln!("rootfence: server generation {generation}: {report}");
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
