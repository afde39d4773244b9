//! The sandbox spec of one server as `rootfence run` starts it: the policy's `[sandbox]`
//! table, the roots known at launch, and what the server's host entry adds on the command
//! line (`--env`, `--read`, `--write`, written by `rootfence wrap`).
//!
//! This is the one place where the policy and the command line meet for the sandbox, so
//! `run` (which rebuilds the sandbox per server generation from the current roots) and
//! `sandbox probe` build the same spec. It reads the compiled policy; the policy itself
//! only reuses the sandbox's plain types.

use std::path::{Path, PathBuf};

use super::{SandboxMode, SandboxRoot, SandboxSpec};
use crate::policy::Policy;

/// What a server's host entry adds to the sandbox, from `rootfence run`'s command line.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ServerGrants {
    /// Environment variables passed on top of the baseline and the policy's list: exact
    /// names or `PREFIX*` (`--env`). A host entry's `env` names reach the server this way.
    pub env: Vec<String>,
    /// Extra paths the server may read (`--read`): its own configuration.
    pub read: Vec<PathBuf>,
    /// Extra paths the server may read and write (`--write`): its own state, such as the
    /// file a host entry's `MEMORY_FILE_PATH` names.
    pub write: Vec<PathBuf>,
}

/// A `--env`, `--read` or `--write` value `run` cannot use.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum GrantError {
    /// Not a usable environment variable name or pattern.
    #[error("--env {given:?}: {why}")]
    EnvName {
        /// The value given.
        given: String,
        /// What is wrong, with what to give instead.
        why: String,
    },
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
        refused: Box<crate::policy::GrantRefused>,
    },
}

/// Checks one `--env` value: a variable name, or a prefix ending in `*`. `*` alone would
/// pass every variable (agent sockets, cloud credentials, the host's own tokens) and is
/// refused.
pub fn check_env_name(given: &str) -> Result<(), GrantError> {
    let err = |why: &str| {
        Err(GrantError::EnvName {
            given: given.to_owned(),
            why: why.to_owned(),
        })
    };
    let name = given.strip_suffix('*').unwrap_or(given);
    if given.is_empty() {
        return err("an empty name; give a variable name such as MEMORY_FILE_PATH");
    }
    if name.is_empty() {
        return err(
            "`*` alone would pass every variable, including agent sockets and credentials; \
             name the variables, or a prefix such as `MYSERVER_*`",
        );
    }
    if name.contains(['=', '\0']) {
        return err(
            "a variable name cannot contain `=` or NUL; give the name only (the value comes \
             from the environment the host starts rootfence with)",
        );
    }
    if name.contains('*') {
        return err("`*` is allowed only at the end, as a prefix pattern such as `MYSERVER_*`");
    }
    Ok(())
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
            .check_grant(crate::policy::Grant::Env(name))
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
                        crate::policy::Grant::Write(&judged)
                    } else {
                        crate::policy::Grant::Read(&judged)
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

/// `.` and `..` taken out by name (for judging a path that does not exist yet).
fn lexical(p: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for c in p.components() {
        match c {
            std::path::Component::ParentDir => {
                out.pop();
            }
            std::path::Component::CurDir => {}
            other => out.push(other),
        }
    }
    out
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
    fn env_names_and_patterns() {
        for ok in ["MEMORY_FILE_PATH", "LC_*", "x", "GITHUB_TOKEN"] {
            assert!(check_env_name(ok).is_ok(), "{ok}");
        }
        for (bad, hint) in [
            ("", "empty"),
            ("*", "every variable"),
            ("A=B", "`=`"),
            ("A*B", "only at the end"),
            ("A\0", "NUL"),
        ] {
            let e = check_env_name(bad).unwrap_err().to_string();
            assert!(e.contains(hint), "{bad:?}: {e}");
            assert!(e.starts_with("--env "), "{e}");
        }
    }

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
