//! Sandbox grants: the environment variables and extra read/write paths a server is given
//! beyond its roots, and who may add them.
//!
//! Grants are the one thing a later layer may add rather than only narrow, and only what an
//! earlier layer made grantable (`[sandbox.grantable]`): the organisation decides which
//! variables and paths projects and users may grant, and the built-in default lets a user
//! grant what real servers need (a variable such as `MEMORY_FILE_PATH`, `~/.gitconfig`, a
//! tool's own cache directory). File access through rootfence (URIs, roots, the path rules)
//! stays narrowing-only. The same judgement applies to grants made outside the policy files,
//! such as `rootfence run --env NAME`: see [`Policy::check_grant`].

use std::fmt;
use std::path::Path;

use globset::Candidate;

use super::Policy;
use super::decision::Provenance;
use super::glob::{self, PathGlob};
use super::settings::env_pattern_covers;

/// Every grant of the layers, in order, each with the rule that made it.
#[derive(Debug, Clone, Default)]
#[non_exhaustive]
pub struct Grants {
    /// `sandbox.env` entries (exact names or `PREFIX*`).
    pub env: Vec<(String, Provenance)>,
    /// `sandbox.read` paths (absolute, normalized, expanded).
    pub read: Vec<(String, Provenance)>,
    /// `sandbox.write` paths.
    pub write: Vec<(String, Provenance)>,
}

/// `[sandbox.grantable]` as it stands after the last layer: what a grant made after the
/// policy (the command line) may add, each list with the rule that set it.
#[derive(Debug, Clone)]
pub struct Grantable {
    pub(crate) env: (Vec<String>, Provenance),
    pub(crate) read: (Vec<PathGlob>, Provenance),
    pub(crate) write: (Vec<PathGlob>, Provenance),
}

/// A grant to judge: what a command-line option (or a later layer) wants to add.
#[derive(Debug, Clone, Copy)]
pub enum Grant<'a> {
    /// An environment variable name, or a `PREFIX*` pattern.
    Env(&'a str),
    /// A path the server may read.
    Read(&'a Path),
    /// A path the server may read and write.
    Write(&'a Path),
}

/// Why a grant may not be added.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refusal {
    /// Nothing earlier grants it or makes it grantable; the rule that decides what is
    /// grantable is named.
    NotGrantable(Provenance),
    /// `*` as an environment entry: every variable, secrets included.
    EveryVariable,
    /// `/` or the home directory (or an ancestor of it).
    TooWide(&'static str),
    /// A path a `resources.deny` glob denies (the glob's text, its rule).
    Denied(String, Provenance),
}

/// A grant refused by [`Policy::check_grant`], with what to do about it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GrantRefused {
    /// The grant as given (`--env NAME`, a path).
    pub grant: String,
    /// Why.
    pub refusal: Refusal,
}

impl fmt::Display for GrantRefused {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let g = &self.grant;
        match &self.refusal {
            Refusal::NotGrantable(p) => write!(
                f,
                "{g} is not grantable under the policy ({p}); hint: an earlier policy layer \
                 decides what may be granted: list it in `[sandbox.grantable]` there, or \
                 grant it in a policy layer"
            ),
            Refusal::EveryVariable => write!(
                f,
                "{g} would pass every environment variable, secrets included; hint: name the \
                 variables the server needs"
            ),
            Refusal::TooWide(what) => write!(
                f,
                "{g} would grant the server {what}; hint: grant the server's own state only, \
                 e.g. ~/.gitconfig or ~/.cache/<tool>"
            ),
            Refusal::Denied(glob, p) => write!(
                f,
                "{g} is denied by the policy (`{glob}`, {p}); hint: a grant cannot reach what \
                 the policy denies"
            ),
        }
    }
}

impl std::error::Error for GrantRefused {}

/// Judges an environment grant against earlier grants and the grantable list in force.
pub(crate) fn judge_env(
    name: &str,
    granted: &[(String, Provenance)],
    (grantable, grantable_prov): &(Vec<String>, Provenance),
) -> Result<(), Refusal> {
    if granted.iter().any(|(o, _)| env_pattern_covers(o, name)) {
        return Ok(());
    }
    if name == "*" {
        return Err(Refusal::EveryVariable);
    }
    if grantable.iter().any(|g| env_pattern_covers(g, name)) {
        return Ok(());
    }
    Err(Refusal::NotGrantable(grantable_prov.clone()))
}

/// What a path grant is judged against.
pub(crate) struct PathRules<'a> {
    pub(crate) grants: &'a Grants,
    pub(crate) grantable: &'a Grantable,
    pub(crate) home: Option<&'a str>,
}

/// Judges a path grant (`write`: read and write) against earlier grants, the grantable
/// lists in force, and the policy's denials (`denied` names the deny glob and rule that
/// match a path, if any).
pub(crate) fn judge_path(
    path: &str,
    write: bool,
    rules: &PathRules<'_>,
    denied: impl Fn(&str) -> Option<(String, Provenance)>,
) -> Result<(), Refusal> {
    let inside =
        |list: &[(String, Provenance)]| list.iter().any(|(o, _)| glob::path_within(path, o));
    if inside(&rules.grants.write) || (!write && inside(&rules.grants.read)) {
        return Ok(());
    }
    let g = rules.grantable;
    let covers = |(list, _): &(Vec<PathGlob>, _)| list.iter().any(|x| x.matches_path(path));
    let grantable = covers(&g.write) || (!write && covers(&g.read));
    if !grantable {
        let prov = if write { &g.write.1 } else { &g.read.1 };
        return Err(Refusal::NotGrantable(prov.clone()));
    }
    if path == "/" {
        return Err(Refusal::TooWide("the whole filesystem"));
    }
    if let Some(home) = rules.home.filter(|h| *h != "/") {
        if home == path {
            return Err(Refusal::TooWide("the whole home directory"));
        }
        if glob::path_within(home, path) {
            return Err(Refusal::TooWide("a directory holding the home directory"));
        }
    }
    if let Some((glob, prov)) = denied(path) {
        return Err(Refusal::Denied(glob, prov));
    }
    Ok(())
}

impl Policy {
    /// Judges a grant made after the policy layers (e.g. `rootfence run --env NAME`) the
    /// way a further layer's `[sandbox]` entry would be judged: allowed when an earlier
    /// grant already covers it, or when `[sandbox.grantable]` does (never `*`, `/`, the home
    /// directory, or a path `resources.deny` denies).
    ///
    /// # Errors
    ///
    /// [`GrantRefused`], whose `Display` names the rule and says what to do.
    pub fn check_grant(&self, grant: Grant<'_>) -> Result<(), GrantRefused> {
        let sb = &self.sandbox;
        let (shown, result) = match grant {
            Grant::Env(name) => (
                format!("environment variable {name}"),
                judge_env(name, &sb.grants.env, &sb.grantable.env),
            ),
            Grant::Read(p) | Grant::Write(p) => {
                let write = matches!(grant, Grant::Write(_));
                let shown = format!(
                    "{} path {}",
                    if write { "write" } else { "read" },
                    p.display()
                );
                let rules = PathRules {
                    grants: &sb.grants,
                    grantable: &sb.grantable,
                    home: self.home.as_deref(),
                };
                let denied = |path: &str| {
                    let deny = &self.m.res_deny;
                    let c = Candidate::from_bytes(path.as_bytes());
                    deny.find_rare(&c)
                        .map(|(i, p)| (deny.texts[i].clone(), p.clone()))
                };
                let result = match p.to_str().filter(|s| glob::is_normalized_absolute(s)) {
                    None => Err(Refusal::TooWide(
                        "a path that is not absolute and normalized",
                    )),
                    Some(path) => judge_path(path, write, &rules, denied),
                };
                (shown, result)
            }
        };
        result.map_err(|refusal| GrantRefused {
            grant: shown,
            refusal,
        })
    }
}
