//! The launch plan: a [`SandboxSpec`] plus the default profile, flattened into exactly
//! what the launcher applies, and its wire format (JSON in a sealed memfd).
//!
//! Paths and environment values are carried as bytes, not strings, so that non-UTF-8
//! paths survive exactly. The plan carries environment variable *names* only, never
//! values: the launcher takes values from the environment it inherits, so nothing secret
//! is written anywhere.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::profile::{Rights, default_profile};
use super::report::WithheldReport;
use super::{Access, Network, Rlimits, SandboxError, SandboxMode, SandboxSpec, Scopes};

/// Version of the plan format; the launcher refuses any other, so a rootfence upgraded
/// while a session starts fails closed instead of misreading the plan.
pub(crate) const PLAN_VERSION: u32 = 2;

/// Upper bound on the plan size the launcher reads.
pub(crate) const MAX_PLAN_BYTES: u64 = 16 << 20;

/// What the launcher applies.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct LaunchPlan {
    pub version: u32,
    pub mode: SandboxMode,
    pub grants: Vec<Grant>,
    #[serde(with = "bytes::paths")]
    pub deny: Vec<PathBuf>,
    /// Deny globs: matched inside the roots at launch (`deny.rs`), hidden from the server.
    pub deny_globs: Vec<String>,
    /// Read-only globs: matched inside writable roots at launch, read-only to the server.
    pub read_only_globs: Vec<String>,
    /// Bounds of the scan of the roots.
    pub scan_limits: super::scan::Limits,
    pub network: Network,
    pub scopes: Scopes,
    pub rlimits: Rlimits,
    /// Names (or `PREFIX*`) passed through from the inherited environment.
    pub env_allow: Vec<String>,
    /// Variables the launcher sets itself (the private temp dir); not secret.
    pub env_set: Vec<EnvSet>,
    /// Paths the profile deliberately did not grant, with the reason (for the report).
    pub withheld: Vec<WithheldReport>,
    /// Paths kept read-only in and around the roots' linked git directories (`gitdir.rs`):
    /// their `hooks/` and `config`, and a worktree's `.git` file.
    #[serde(default, with = "bytes::paths")]
    pub git_read_only: Vec<PathBuf>,
}

/// One granted path.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Grant {
    #[serde(with = "bytes::one")]
    pub path: PathBuf,
    pub rights: Rights,
    /// Where the grant comes from: `root`, `read`, `write`, `private-tmp`, `profile`.
    pub origin: String,
    /// Why (profile entries) or empty.
    pub why: String,
}

impl Grant {
    pub(crate) fn new(path: &Path, rights: Rights, origin: &str, why: &str) -> Grant {
        Grant {
            path: path.to_owned(),
            rights,
            origin: origin.to_owned(),
            why: why.to_owned(),
        }
    }
}

/// A variable the launcher sets.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct EnvSet {
    pub name: String,
    #[serde(with = "bytes::one")]
    pub value: OsString,
}

impl LaunchPlan {
    pub(crate) fn to_json(&self) -> Vec<u8> {
        // Serializing plain data into memory cannot fail.
        serde_json::to_vec(self).unwrap_or_default()
    }

    pub(crate) fn from_json(bytes: &[u8]) -> Result<LaunchPlan, String> {
        let plan: LaunchPlan =
            serde_json::from_slice(bytes).map_err(|e| format!("malformed plan: {e}"))?;
        if plan.version != PLAN_VERSION {
            return Err(format!(
                "plan version {} is not {PLAN_VERSION}; rootfence and its launcher differ",
                plan.version
            ));
        }
        if plan.mode == SandboxMode::Off {
            return Err("plan with mode off reached the launcher".into());
        }
        Ok(plan)
    }
}

/// Builds the plan for `argv`. `env` is rootfence's environment (for the profile).
pub(crate) fn build(
    spec: &SandboxSpec,
    argv: &[OsString],
    private_tmp: Option<&Path>,
    env: &[(OsString, OsString)],
) -> Result<LaunchPlan, SandboxError> {
    let paths = spec.roots.iter().map(|r| &r.path);
    let mut all = paths.chain(&spec.read).chain(&spec.write).chain(&spec.deny);
    if let Some(p) = all.find(|p| !p.is_absolute()) {
        return Err(SandboxError::RelativePath(p.clone()));
    }

    let mut grants = Vec::new();
    let mut env_allow = Vec::new();
    let mut withheld = Vec::new();
    if spec.default_profile {
        let profile = default_profile(argv, env);
        for dir in &profile.create_dirs {
            // A cache that does not exist yet cannot be granted; create it as the tool
            // would. Failure only means the grant is reported as not found.
            let _ = std::fs::DirBuilder::new()
                .recursive(true)
                .mode(0o700)
                .create(dir);
        }
        grants.extend(profile.entries);
        env_allow = profile.env;
        withheld = profile.withheld;
    }
    let mut git_read_only = Vec::new();
    for r in &spec.roots {
        let rights = match r.access {
            Access::ReadOnly => Rights::ReadExec,
            Access::ReadWrite => Rights::ReadWrite,
        };
        grants.push(Grant::new(&r.path, rights, "root", ""));
        // A linked worktree's or a submodule's git directories, outside the root
        // (`gitdir.rs`), and what in them stays read-only.
        let git = super::gitdir::grants(&r.path, r.access);
        grants.extend(git.grants);
        git_read_only.extend(git.read_only);
    }
    for (paths, rights, origin) in [
        (&spec.read, Rights::ReadExec, "read"),
        (&spec.write, Rights::ReadWrite, "write"),
    ] {
        grants.extend(paths.iter().map(|p| Grant::new(p, rights, origin, "")));
    }
    let mut env_set = Vec::new();
    if let Some(tmp) = private_tmp {
        let why = "per-session temp dir, removed at the end";
        grants.push(Grant::new(tmp, Rights::ReadWrite, "private-tmp", why));
        for name in ["TMPDIR", "TMP", "TEMP"] {
            env_set.push(EnvSet {
                name: name.into(),
                value: tmp.as_os_str().to_owned(),
            });
        }
    }
    for name in &spec.env {
        if !env_allow.contains(name) {
            env_allow.push(name.clone());
        }
    }
    let mut network = spec.network.clone();
    if let Network::Ports(ports) = &mut network {
        ports.sort_unstable();
        ports.dedup();
    }
    Ok(LaunchPlan {
        version: PLAN_VERSION,
        mode: spec.mode,
        grants,
        deny: spec.deny.clone(),
        deny_globs: spec.deny_globs.clone(),
        read_only_globs: spec.read_only_paths.clone(),
        scan_limits: spec.scan_limits,
        network,
        scopes: spec.scopes,
        rlimits: spec.rlimits,
        env_allow,
        env_set,
        withheld,
        git_read_only,
    })
}

use std::os::unix::fs::DirBuilderExt;

/// Whether `name` passes an allow-list of exact names and `PREFIX*` patterns.
pub(crate) fn env_allowed(allow: &[impl AsRef<str>], name: &str) -> bool {
    allow
        .iter()
        .any(|pat| match pat.as_ref().strip_suffix('*') {
            Some(prefix) => name.starts_with(prefix),
            None => pat.as_ref() == name,
        })
}

/// Serde helpers carrying OS strings as byte arrays.
mod bytes {
    use std::ffi::{OsStr, OsString};
    use std::os::unix::ffi::{OsStrExt, OsStringExt};
    use std::path::PathBuf;

    use serde::{Deserialize, Deserializer, Serializer};

    /// One OS string or path.
    pub(super) mod one {
        use super::*;

        pub fn serialize<S: Serializer>(v: &impl AsRef<OsStr>, s: S) -> Result<S::Ok, S::Error> {
            s.serialize_bytes(v.as_ref().as_bytes())
        }
        pub fn deserialize<'de, D: Deserializer<'de>, T: From<OsString>>(
            d: D,
        ) -> Result<T, D::Error> {
            Ok(OsString::from_vec(Vec::<u8>::deserialize(d)?).into())
        }
    }
    pub(super) mod paths {
        use super::*;

        pub fn serialize<S: Serializer>(v: &[PathBuf], s: S) -> Result<S::Ok, S::Error> {
            s.collect_seq(v.iter().map(|p| p.as_os_str().as_bytes()))
        }
        pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<PathBuf>, D::Error> {
            Ok(Vec::<Vec<u8>>::deserialize(d)?
                .into_iter()
                .map(|b| OsString::from_vec(b).into())
                .collect())
        }
    }
}

#[cfg(test)]
mod tests {
    use std::os::unix::ffi::OsStringExt;

    use super::*;
    use crate::sandbox::SandboxRoot;

    #[test]
    fn plan_round_trips_non_utf8_paths() {
        let mut spec = SandboxSpec::new(SandboxMode::Strict);
        spec.default_profile = false;
        let odd = PathBuf::from(OsString::from_vec(b"/tmp/\xff\xfe".to_vec()));
        spec.roots.push(SandboxRoot {
            path: odd.clone(),
            access: Access::ReadOnly,
        });
        spec.deny.push(odd.join("x"));
        spec.network = Network::Ports(vec![443, 80, 443]);
        let plan = build(&spec, &["true".into()], Some(Path::new("/tmp/p")), &[]).unwrap();
        let back = LaunchPlan::from_json(&plan.to_json()).unwrap();
        assert_eq!(back.grants[0].path, odd);
        assert_eq!(back.grants[0].rights, Rights::ReadExec);
        assert_eq!(back.deny, vec![odd.join("x")]);
        assert_eq!(back.network, Network::Ports(vec![80, 443]));
        assert_eq!(back.env_set.len(), 3);
        assert_eq!(back.env_set[0].value, "/tmp/p");
    }

    #[test]
    fn relative_paths_are_refused() {
        for field in 0..4 {
            let mut spec = SandboxSpec::default();
            let rel = PathBuf::from("rel/dir");
            match field {
                0 => spec.roots.push(SandboxRoot {
                    path: rel,
                    access: Access::ReadWrite,
                }),
                1 => spec.read.push(rel),
                2 => spec.write.push(rel),
                _ => spec.deny.push(rel),
            }
            assert!(matches!(
                build(&spec, &["true".into()], None, &[]),
                Err(SandboxError::RelativePath(_))
            ));
        }
    }

    #[test]
    fn wrong_version_and_off_mode_are_refused() {
        let spec = SandboxSpec {
            default_profile: false,
            ..SandboxSpec::default()
        };
        let mut plan = build(&spec, &["true".into()], None, &[]).unwrap();
        plan.version = 99;
        assert!(LaunchPlan::from_json(&plan.to_json()).is_err());
        plan.version = PLAN_VERSION;
        plan.mode = SandboxMode::Off;
        assert!(LaunchPlan::from_json(&plan.to_json()).is_err());
        assert!(LaunchPlan::from_json(b"{").is_err());
    }

    #[test]
    fn env_patterns() {
        let allow = vec!["PATH".to_owned(), "LC_*".to_owned()];
        assert!(env_allowed(&allow, "PATH"));
        assert!(env_allowed(&allow, "LC_ALL"));
        assert!(!env_allowed(&allow, "PATHX"));
        assert!(!env_allowed(&allow, "LANG"));
        assert!(!env_allowed(&Vec::<String>::new(), "PATH"));
    }
}
