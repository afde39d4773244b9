//! The sandbox spec of one server as `rootfence run` starts it: the policy's `[sandbox]`
//! table, the roots known at launch, and what the server's host entry adds on the command
//! line (`--env`, `--read`, `--write`, written by `rootfence wrap`).
//!
//! This is the one place where the policy and the command line meet for the sandbox, so
//! `run` (which rebuilds the sandbox per server generation from the current roots) and
//! `sandbox probe` build the same spec. It lives in `policy` because the policy composes
//! the sandbox's plain types (the sandbox never imports the policy).

use std::path::{Path, PathBuf};

use super::{Grant, GrantRefused, Policy};
use crate::sandbox::{
    EnvNameError, SandboxMode, SandboxRoot, SandboxSpec, ServerGrants, check_env_name,
};
use crate::uri::lexical;

/// A `--env`, `--read` or `--write` value `run` cannot use.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum GrantError {
    /// Not a usable environment variable name or pattern.
    #[error(transparent)]
    EnvName(#[from] EnvNameError),
    /// A grant the policy does not let the command line add: the policy layers decide
    /// what later layers, the command line included, may grant (`[sandbox.grantable]`;
    /// see `Policy::check_grant`).
    #[error("{flag} {given}: {refused}")]
    Refused {
        /// `--env`, `--read` or `--write`.
        flag: &'static str,
        /// The value given.
        given: String,
        /// Why, with the rule and what to do.
        refused: Box<GrantRefused>,
    },
}

/// The spec of one server: mode, the roots known at launch, the policy's `[sandbox]`
/// table and deny patterns, and the host entry's grants. Relative `--read`/`--write`
/// paths are taken relative to `cwd` (where the host started rootfence); a value the host
/// did not expand (`${workspaceFolder}` outside a workspace) is left out with a warning
/// in the returned list.
pub fn server_spec(
    policy: &Policy,
    mode: SandboxMode,
    roots: Vec<SandboxRoot>,
    grants: &ServerGrants,
    cwd: &Path,
) -> Result<(SandboxSpec, Vec<String>), GrantError> {
    for name in &grants.env {
        check_env_name(name)?;
        // The command line is the last layer: it may add what the policy makes grantable.
        policy
            .check_grant(Grant::Env(name))
            .map_err(|refused| GrantError::Refused {
                flag: "--env",
                given: name.clone(),
                refused: Box::new(refused),
            })?;
    }
    let s = policy.sandbox();
    let mut warnings = Vec::new();
    let mut spec = SandboxSpec::new(mode);
    spec.roots = roots;
    spec.read = s.read.clone();
    spec.write = s.write.clone();
    for (given, out, flag) in [
        (&grants.read, &mut spec.read, "--read"),
        (&grants.write, &mut spec.write, "--write"),
    ] {
        for p in given {
            match host_path(p, cwd) {
                Ok(path) => {
                    // Judged where the kernel will resolve it (a link to ~/.ssh is ~/.ssh).
                    let judged = std::fs::canonicalize(&path).unwrap_or_else(|_| lexical(&path));
                    let grant = if flag == "--write" {
                        Grant::Write(&judged)
                    } else {
                        Grant::Read(&judged)
                    };
                    if let Err(refused) = policy.check_grant(grant) {
                        return Err(GrantError::Refused {
                            flag,
                            given: p.display().to_string(),
                            refused: Box::new(refused),
                        });
                    }
                    if !out.contains(&path) {
                        out.push(path);
                    }
                }
                Err(why) => warnings.push(format!("{flag} {}: {why}", p.display())),
            }
        }
    }
    spec.network = s.network.clone();
    spec.rlimits = s.rlimits;
    spec.env = s.env.clone();
    for name in &grants.env {
        if !spec.env.contains(name) {
            spec.env.push(name.clone());
        }
    }
    for pattern in &policy.resources().deny_globs {
        spec.add_deny_pattern(pattern);
    }
    spec.read_only_paths = s.read_only_paths.clone();
    Ok((spec, warnings))
}

/// A path from a host entry: absolute as given, relative to `cwd`, or refused when it
/// still holds a host variable the host did not expand.
fn host_path(p: &Path, cwd: &Path) -> Result<PathBuf, String> {
    let text = p.to_string_lossy();
    if text.contains("${") {
        return Err(
            "holds a variable the host did not expand (VS Code expands ${workspaceFolder} \
             only with a folder open); not granted"
                .to_owned(),
        );
    }
    Ok(if p.is_absolute() {
        p.to_owned()
    } else {
        cwd.join(p)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_spec_merges_policy_and_host_entry() {
        let policy = Policy::builtin_default();
        let grants = ServerGrants {
            env: vec!["MEMORY_FILE_PATH".into(), "MEMORY_FILE_PATH".into()],
            read: vec!["conf.json".into()],
            write: vec![
                "/data/memory.json".into(),
                "${workspaceFolder}/state".into(),
            ],
        };
        let (spec, warnings) = server_spec(
            &policy,
            SandboxMode::BestEffort,
            Vec::new(),
            &grants,
            Path::new("/w"),
        )
        .unwrap();
        assert_eq!(spec.env, vec!["MEMORY_FILE_PATH".to_owned()]);
        assert_eq!(spec.read, vec![PathBuf::from("/w/conf.json")]);
        assert_eq!(spec.write, vec![PathBuf::from("/data/memory.json")]);
        assert_eq!(warnings.len(), 1);
        assert!(warnings[0].contains("did not expand"), "{warnings:?}");
        // The policy's deny patterns reach the sandbox.
        assert!(!spec.deny_globs.is_empty() || !spec.deny.is_empty());
        let bad = ServerGrants {
            env: vec!["*".into()],
            ..ServerGrants::default()
        };
        assert!(
            server_spec(
                &policy,
                SandboxMode::BestEffort,
                Vec::new(),
                &bad,
                Path::new("/")
            )
            .is_err()
        );
    }
}
