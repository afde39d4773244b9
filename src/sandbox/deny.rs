//! What the policy denies or protects *inside* the roots, kept from the server's own
//! system calls: a function of the plan (roots, deny globs, read-only globs), computed in
//! the launcher at every launch (each server generation gets its own).
//!
//! 1. Each root is scanned (`scan.rs`, bounded) for deny-glob matches (hidden), read-only
//!    matches (read-only, in writable roots only) and what a bound left unscanned
//!    (hidden: fail closed).
//! 2. A private mount namespace covers them (`mounts.rs`), so the roots stay granted
//!    whole and names created later keep working.
//! 3. Whatever the namespace could not cover goes to the Landlock carve-out
//!    (`landlock.rs`): the directories on the way to such a path lose every right but
//!    listing, and names created in them later are unreachable.
//!
//! The outcome is the report's `filesystem.carve`, which says path by path how each is
//! enforced and what names created later can reach.

use std::fmt;
use std::path::PathBuf;

use cap_std::ambient_authority;
use cap_std::fs::Dir;
use serde::{Deserialize, Serialize};

use super::mounts::{self, Cover};
use super::plan::LaunchPlan;
use super::profile::Rights;
use super::scan::{self, Budget, Hit, Options, ScanRules};

/// Most paths listed one by one in the report (the rest are counted).
const REPORT_PATHS: usize = 200;

/// A path inside a grant the Landlock carve-out must treat specially.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Target {
    /// Absolute real path.
    pub path: PathBuf,
    /// Hidden (no right at all) or read-only.
    pub hide: bool,
}

/// What a path inside the roots is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum CarvedKind {
    /// A deny-glob match: the server cannot read it.
    Hidden,
    /// A read-only-glob match: the server can read it, not change, replace or remove it.
    ReadOnly,
    /// A directory the scan did not finish (a bound): hidden, fail closed.
    Unscanned,
    /// A deny-glob match inside `.git`, left to git (protocol layer and tripwire only).
    LeftToGit,
}

/// How it is enforced.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum CarvedBy {
    /// Covered in the server's private mount namespace.
    Mount,
    /// Carved out of the Landlock grants.
    Landlock,
    /// Not enforced by the sandbox (no namespace and no Landlock, or left to git).
    None,
}

/// One path of the carve-out.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct CarvedPath {
    /// Absolute path.
    pub path: String,
    /// What it is.
    pub kind: CarvedKind,
    /// A directory.
    pub dir: bool,
    /// The glob (or reason) that selected it.
    pub rule: String,
    /// How it is enforced.
    pub by: CarvedBy,
    /// Why the namespace could not cover it, when it could not.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// An empty directory rootfence made for a protected name that did not exist, so that
    /// the server cannot create it (`placeholder.rs`; marked `user.rootfence.placeholder`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub placeholder: bool,
}

/// The scan of one root.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct RootScan {
    /// The root.
    pub root: String,
    /// Directory entries examined.
    pub entries: usize,
    /// Milliseconds taken.
    pub elapsed_ms: u64,
    /// The bound that stopped it, if one did.
    pub bound: Option<String>,
}

/// The carve-out of denied and read-only paths inside the roots.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct CarveReport {
    /// The namespace used (`private mount namespace`, `... (in a user namespace)`), or
    /// `landlock` when every path went to the Landlock carve-out, or `none`.
    pub method: String,
    /// Why no namespace was used, when one was needed and not used.
    pub fallback: Option<String>,
    /// The paths, at most 200 (see `more`).
    pub paths: Vec<CarvedPath>,
    /// Paths beyond those listed.
    #[serde(default)]
    pub more: usize,
    /// One entry per scanned root.
    pub scans: Vec<RootScan>,
    /// What names created after launch inside the roots can reach.
    pub later: String,
}

/// The outcome of [`prepare`]: what Landlock still has to carve, and the report so far.
#[derive(Default)]
pub(crate) struct Prepared {
    pub targets: Vec<Target>,
    pub report: Option<CarveReport>,
    /// Problems to list as missing (a glob that does not compile).
    pub missing: Vec<String>,
}

/// Scans the roots of the plan and covers what it finds in a private mount namespace
/// where the kernel allows one. Runs in the launcher, before Landlock.
pub(crate) fn prepare(plan: &LaunchPlan) -> Prepared {
    let mut out = Prepared::default();
    let rules = match ScanRules::new(&plan.deny_globs, &plan.read_only_globs) {
        Ok(r) => r,
        Err(e) => {
            out.missing
                .push(format!("deny globs inside the roots: {e}"));
            return out;
        }
    };
    let mut roots: Vec<_> = plan.grants.iter().filter(|g| g.origin == "root").collect();
    if rules.is_empty() || roots.is_empty() {
        if plan.git_read_only.is_empty() {
            return out;
        }
        roots.clear();
    }
    let mut budget = Budget::new(plan.scan_limits);
    let mut report = CarveReport {
        method: "none".into(),
        ..CarveReport::default()
    };
    // (root dir, real path, relative path, what, rule, is dir)
    let mut work: Vec<(usize, PathBuf, CarvedKind, String, bool)> = Vec::new();
    let mut opened: Vec<(Dir, PathBuf)> = Vec::new();
    for grant in roots {
        let Ok(dir) = Dir::open_ambient_dir(&grant.path, ambient_authority()) else {
            continue; // reported as not found by the grants
        };
        let real = std::fs::canonicalize(&grant.path).unwrap_or_else(|_| grant.path.clone());
        let s = scan::scan(&dir, &real, &rules, &mut budget, Options::default());
        report.scans.push(RootScan {
            root: real.display().to_string(),
            entries: s.entries,
            elapsed_ms: s.elapsed.as_millis() as u64,
            bound: s.bound.clone(),
        });
        let i = opened.len();
        let mut add = |hits: Vec<Hit>, kind| {
            for h in hits {
                work.push((i, h.rel, kind, h.rule, h.dir));
            }
        };
        add(s.hidden, CarvedKind::Hidden);
        add(s.unscanned, CarvedKind::Unscanned);
        if grant.rights == Rights::ReadWrite {
            add(s.read_only, CarvedKind::ReadOnly);
        }
        // One entry per `.git` directory, not per file of it.
        let mut gits: Vec<Hit> = Vec::new();
        for h in s.git_denied {
            let dir = h.rel.parent().map(PathBuf::from).unwrap_or_default();
            if !gits.iter().any(|g| g.rel == dir) {
                gits.push(Hit {
                    rel: dir,
                    dir: true,
                    rule: h.rule,
                });
            }
        }
        add(gits, CarvedKind::LeftToGit);
        opened.push((dir, real));
    }
    // The parts of the roots' linked git directories that stay read-only (`gitdir.rs`),
    // each named relative to its parent directory.
    for p in &plan.git_read_only {
        let (Some(parent), Some(name)) = (p.parent(), p.file_name()) else {
            continue;
        };
        let i = match opened.iter().position(|(_, real)| real == parent) {
            Some(i) => i,
            None => match Dir::open_ambient_dir(parent, ambient_authority()) {
                Ok(dir) => {
                    opened.push((dir, parent.to_owned()));
                    opened.len() - 1
                }
                Err(_) => {
                    // Not coverable here: the Landlock carve-out keeps it read-only.
                    out.targets.push(Target {
                        path: p.clone(),
                        hide: false,
                    });
                    continue;
                }
            },
        };
        let dir = std::fs::symlink_metadata(p).is_ok_and(|m| m.is_dir());
        work.push((
            i,
            PathBuf::from(name),
            CarvedKind::ReadOnly,
            "a linked git directory's hooks/, config and pointers stay read-only".into(),
            dir,
        ));
    }
    // A root's own entry in `unscanned` (the root could not be listed at all) hides the
    // whole root: the carve-out handles the empty relative path as the grant itself.
    let needs_cover = work.iter().any(|w| w.2 != CarvedKind::LeftToGit);
    let mut results: Vec<(CarvedBy, Option<String>)> = vec![(CarvedBy::Landlock, None); work.len()];
    if needs_cover {
        match mounts::enter() {
            Ok(ns) => {
                report.method = ns.to_owned();
                // Descriptors opened before the namespace name the old namespace's
                // mounts, which cannot be mounted on from this one: open the roots again.
                let here: Vec<(Dir, PathBuf)> = opened
                    .iter()
                    .filter_map(|(_, real)| {
                        let d = Dir::open_ambient_dir(real, ambient_authority()).ok()?;
                        Some((d, real.clone()))
                    })
                    .collect();
                if here.len() == opened.len() {
                    cover_all(&here, &work, &mut results);
                } else {
                    report.fallback = Some("a root could not be opened again".into());
                }
            }
            Err(why) => {
                report.method = "landlock".into();
                report.fallback = Some(why);
            }
        }
    }
    for ((i, rel, kind, rule, dir), (mut by, error)) in work.into_iter().zip(results) {
        let path = opened[i].1.join(&rel);
        if kind == CarvedKind::LeftToGit {
            by = CarvedBy::None;
        } else if by == CarvedBy::Landlock {
            out.targets.push(Target {
                path: path.clone(),
                hide: kind != CarvedKind::ReadOnly,
            });
        }
        if report.paths.len() < REPORT_PATHS {
            report.paths.push(CarvedPath {
                path: path.display().to_string(),
                kind,
                dir,
                rule,
                by,
                error,
                placeholder: kind == CarvedKind::ReadOnly
                    && dir
                    && super::placeholder::is_marked(&path),
            });
        } else {
            report.more += 1;
        }
    }
    out.report = Some(report);
    out
}

/// The protected names a placeholder can stand in for (`placeholder.rs`): read-only globs
/// `**/NAME/**` with a literal NAME (`.vscode`, `.cursor`, `.claude` in the default list),
/// each with its glob. Only at the top of each root, where hosts and editors look for them;
/// files (`.mcp.json`) get none, since an empty directory there would break the host that
/// reads it (the wire refuses writing tools those names; see docs/sandbox.md).
pub(crate) fn placeholder_names(read_only_globs: &[String]) -> Vec<(&str, &str)> {
    read_only_globs
        .iter()
        .filter_map(|g| {
            let name = g.strip_prefix("**/")?.strip_suffix("/**")?;
            let literal = !name.is_empty()
                && name != "."
                && name != ".."
                && !name.contains(['/', '*', '?', '[', ']', '{', '}', '\\']);
            literal.then_some((name, g.as_str()))
        })
        .collect()
}

/// Pins, then read-only binds, then hidden covers (a hidden path inside a read-only
/// directory is covered inside the read-only mount).
fn cover_all(
    roots: &[(Dir, PathBuf)],
    work: &[(usize, PathBuf, CarvedKind, String, bool)],
    results: &mut [(CarvedBy, Option<String>)],
) {
    let mut pins: Vec<(usize, PathBuf)> = Vec::new();
    for (i, rel, kind, _, _) in work {
        if *kind != CarvedKind::ReadOnly {
            continue;
        }
        let above = rel.ancestors().skip(1);
        for dir in above.take_while(|d| !d.as_os_str().is_empty()) {
            let covered = work
                .iter()
                .any(|(j, r, k, _, _)| j == i && r == dir && *k != CarvedKind::LeftToGit);
            if !covered && !pins.iter().any(|(j, r)| j == i && r == dir) {
                pins.push((*i, dir.to_owned()));
            }
        }
    }
    // Outermost first, so inner mounts land inside the outer ones.
    pins.sort_by_key(|(_, r)| r.components().count());
    let mut pin_failed: Vec<(usize, PathBuf)> = Vec::new();
    let mut empty_dir = None;
    for (i, rel) in &pins {
        if mounts::apply(&roots[*i].0, rel, Cover::Pin, &mut empty_dir).is_err() {
            pin_failed.push((*i, rel.clone()));
        }
    }
    let mut order: Vec<usize> = (0..work.len()).collect();
    order.sort_by_key(|n| {
        let (_, rel, kind, _, _) = &work[*n];
        (*kind != CarvedKind::ReadOnly, rel.components().count())
    });
    for n in order {
        let (i, rel, kind, _, _) = &work[n];
        let how = match kind {
            CarvedKind::ReadOnly => Cover::ReadOnly,
            CarvedKind::Hidden | CarvedKind::Unscanned => Cover::Hide,
            CarvedKind::LeftToGit => continue,
        };
        let covered = if rel.as_os_str().is_empty() {
            Err("a whole root is carved by Landlock".to_owned())
        } else if how == Cover::ReadOnly
            && pin_failed.iter().any(|(j, p)| j == i && rel.starts_with(p))
        {
            // A read-only path whose pins failed could be renamed away and replaced: leave
            // it to Landlock, which forbids that by construction.
            Err("a directory above it could not be pinned".to_owned())
        } else {
            mounts::apply(&roots[*i].0, rel, how, &mut empty_dir)
        };
        results[n] = match covered {
            Ok(()) => (CarvedBy::Mount, None),
            Err(e) => (CarvedBy::Landlock, Some(e)),
        };
    }
}

impl CarveReport {
    /// Fills in what names created later can reach, once the Landlock carve-out is known
    /// (`carved_dirs`: the directories it left with listing only).
    pub(crate) fn finish(&mut self, carved_dirs: &[PathBuf], landlock: bool) {
        let mounted = self.paths.iter().any(|p| p.by == CarvedBy::Mount);
        let mut later = Vec::new();
        if mounted || self.method.starts_with("private") {
            later.push(
                "names created after launch are reachable like any other, including a \
                 denied name created later (hidden from the next server generation on) and \
                 a protected file name that did not exist (.mcp.json: the server can create \
                 it; writing tools are refused it on the wire); a protected directory that \
                 did not exist (.vscode/, .cursor/, .claude/) got an empty read-only \
                 placeholder, removed at the end of the session if still empty and no other \
                 session holds it"
                    .to_owned(),
            );
        }
        if !carved_dirs.is_empty() {
            if landlock {
                let shown: Vec<String> = carved_dirs
                    .iter()
                    .take(8)
                    .map(|d| d.display().to_string())
                    .collect();
                let more = match carved_dirs.len().saturating_sub(8) {
                    0 => String::new(),
                    n => format!(" and {n} more"),
                };
                later.push(format!(
                    "names created after launch directly in {}{more} cannot be created, \
                     read or written (Landlock carve-out: those directories keep listing \
                     only; files replaced by rename there become unreadable too)",
                    shown.join(", ")
                ));
            } else {
                let carved = self.paths.iter_mut().filter(|p| p.by == CarvedBy::Landlock);
                for p in carved {
                    p.by = CarvedBy::None;
                }
            }
        }
        self.later = later.join("; ");
    }
}

impl fmt::Display for CarveReport {
    /// Lines of the startup summary (each starts with two spaces, ends with a newline).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let list = |kind: CarvedKind| -> Vec<String> {
            self.paths
                .iter()
                .filter(|p| p.kind == kind)
                .map(|p| {
                    let by = match (p.by, &p.error) {
                        (CarvedBy::Mount | CarvedBy::None, _) => String::new(),
                        (CarvedBy::Landlock, _) if self.method == "landlock" => String::new(),
                        (CarvedBy::Landlock, Some(e)) => format!(" [landlock: {e}]"),
                        (CarvedBy::Landlock, None) => " [landlock]".into(),
                    };
                    let placeholder = if p.placeholder {
                        " (empty placeholder)"
                    } else {
                        ""
                    };
                    format!(
                        "{}{}{placeholder}{by}",
                        p.path,
                        if p.dir { "/" } else { "" }
                    )
                })
                .collect()
        };
        let lists = [
            (CarvedKind::Hidden, "hidden"),
            (CarvedKind::ReadOnly, "read-only"),
            (
                CarvedKind::Unscanned,
                "hidden, NOT scanned (bound reached; narrow the roots)",
            ),
            (
                CarvedKind::LeftToGit,
                "left to git (denied on the wire, its config fingerprinted)",
            ),
        ]
        .map(|(kind, label)| (label, list(kind)));
        if lists.iter().all(|(_, paths)| paths.is_empty()) {
            let entries: usize = self.scans.iter().map(|s| s.entries).sum();
            return writeln!(
                f,
                "  inside the roots: nothing denied or read-only found ({entries} entries scanned)"
            );
        }
        let method = match &self.fallback {
            Some(why) => format!("{} (no mount namespace: {why})", self.method),
            None => self.method.clone(),
        };
        writeln!(f, "  inside the roots ({method}):")?;
        for (label, paths) in &lists {
            if !paths.is_empty() {
                writeln!(f, "    {label}: {}", paths.join(", "))?;
            }
        }
        if self.more > 0 {
            writeln!(f, "    ... and {} more", self.more)?;
        }
        // Paths the sandbox does not keep from the server.
        let unenforced: Vec<&str> = self
            .paths
            .iter()
            .filter(|p| p.by == CarvedBy::None && p.kind != CarvedKind::LeftToGit)
            .map(|p| p.path.as_str())
            .collect();
        if !unenforced.is_empty() {
            writeln!(
                f,
                "    NOT enforced by the sandbox (protocol layer and tripwire only): {}",
                unenforced.join(", ")
            )?;
        }
        for s in &self.scans {
            if let Some(b) = &s.bound {
                writeln!(
                    f,
                    "    scan of {} stopped: {b} ({} entries, {} ms)",
                    s.root, s.entries, s.elapsed_ms
                )?;
            }
        }
        if !self.later.is_empty() {
            writeln!(f, "    later: {}", self.later)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::placeholder_names;

    #[test]
    fn placeholders_only_for_literal_directory_names() {
        let globs: Vec<String> = [
            "**/.git/hooks/**",
            "**/.git/config",
            "**/.vscode/**",
            "**/.mcp.json",
            "**/.claude/**",
            "**/*.d/**",
            "**/../**",
            "**/a[b]/**",
            "/abs/.vscode/**",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        let names: Vec<&str> = placeholder_names(&globs).iter().map(|(n, _)| *n).collect();
        assert_eq!(names, [".vscode", ".claude"]);
    }
}
