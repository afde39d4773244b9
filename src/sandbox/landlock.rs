//! Landlock ruleset construction for the launcher: grants → path rules (with denied
//! paths carved out of granted trees), network ports, scopes, with an explicit
//! compatibility level, and the honest account of what the kernel enforces.
//!
//! Only the launcher calls [`restrict`]; it confines the calling (single) thread and,
//! through exec, the server. Nothing here has a process-wide side effect before that.
//!
//! # Denied paths inside a grant
//!
//! Landlock only allows; rules attach to file hierarchies and every right granted on a
//! directory applies to everything beneath it. A denied path `D` strictly inside a grant
//! `G` is therefore expressed by *not* granting `G` but each entry on the way down to
//! `D` individually:
//! - `G` and every directory between `G` and `D` get listing (`READ_DIR`) only, and only
//!   if the grant included it. Their names stay listable; nothing else is granted there,
//!   so entries created directly in them after launch are unreachable.
//! - Every other entry of those directories is granted with the grant's rights (files
//!   get the file subset). Symbolic links are not granted: access through them is
//!   checked on their target.
//! - `D` itself gets nothing: its content cannot be read, written, executed, renamed,
//!   linked or removed. If `D` is a directory, its entries' names can still be listed
//!   (listing is inherited from the ancestors); their contents cannot be opened.
//!
//! Sound for literal paths only. Globs cannot be expressed (they would match files that
//! do not exist yet, anywhere), nor can other hard links to a denied file that live
//! elsewhere inside a grant (Landlock checks the path used, not the inode).

use std::fs::File;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

use cap_fs_ext::{DirExt, FollowSymlinks, OpenOptionsFollowExt};
use cap_std::fs::{Dir, OpenOptionsExt as _};
use landlock::{
    ABI, Access, AccessFs, AccessNet, BitFlags, CompatLevel, Compatible, LandlockStatus, NetPort,
    PathBeneath, RestrictSelf, Ruleset, RulesetAttr, RulesetCreatedAttr, RulesetStatus, Scope,
};

use super::Network;
use super::deny::Target;
use super::plan::{Grant, LaunchPlan};
use super::profile::Rights;
use super::report::{
    DenyReport, DenyStatus, Enforcement, GrantReport, GrantStatus, LandlockReport, NetworkReport,
    ScopeReport,
};
use super::{SandboxMode, Scopes};
use crate::uri::lexical;

/// The Landlock ABI whose features rootfence requests, pinned as the crate advises so a
/// newer kernel never changes behaviour silently. Tested on Linux 6.18 (ABI 7, which adds
/// audit-log flags only). ABI 8 (thread sync) is moot for a single-threaded launcher;
/// ABI 9 (pathname unix sockets) is not requested until it can be tested.
pub(crate) const PINNED_ABI: ABI = ABI::V6;
/// [`PINNED_ABI`] as a number, for reports.
pub(crate) const PINNED_ABI_NUMBER: u8 = 6;

/// The kernel's Landlock ABI, without side effects (no flags are requested, so the
/// crate makes no restrict call).
pub(crate) fn kernel_abi() -> Option<u8> {
    let status = RestrictSelf::default().no_new_privs(false).apply().ok()?;
    match status.landlock {
        LandlockStatus::Available {
            effective_abi,
            kernel_abi,
        } => match kernel_abi {
            Some(v) => u8::try_from(v).ok(),
            None => effective_abi.to_string().parse().ok(),
        },
        _ => None,
    }
}

/// Landlock access bits of a grant's rights.
pub(crate) fn access_of(rights: Rights) -> BitFlags<AccessFs> {
    match rights {
        Rights::Read => AccessFs::ReadFile | AccessFs::ReadDir,
        Rights::ReadExec => AccessFs::from_read(PINNED_ABI),
        Rights::ReadWrite => AccessFs::from_all(PINNED_ABI),
        Rights::WriteFiles => {
            AccessFs::from_read(PINNED_ABI)
                | AccessFs::WriteFile
                | AccessFs::Truncate
                | AccessFs::MakeReg
                | AccessFs::RemoveFile
        }
        Rights::Device => {
            AccessFs::ReadFile | AccessFs::WriteFile | AccessFs::Truncate | AccessFs::IoctlDev
        }
    }
}

/// Filesystem rights newer than ABI 1, with the ABI that introduced them.
const FS_RIGHTS_BY_ABI: &[(u8, &str, &str)] = &[
    (2, "refer", "5.19"),
    (3, "truncate", "6.2"),
    (5, "ioctl_dev", "6.10"),
];

/// One path rule, opened (O_PATH) in the launcher.
struct PathRule {
    file: File,
    access: BitFlags<AccessFs>,
}

/// What [`restrict`] did.
pub(crate) struct Outcome {
    pub landlock: LandlockReport,
    pub grants: Vec<GrantReport>,
    pub deny: Vec<DenyReport>,
    pub network: NetworkReport,
    pub scopes: ScopeReport,
    pub no_new_privs: bool,
    /// Requested but not enforced, human-readable.
    pub missing: Vec<String>,
    pub enforcement: Enforcement,
    /// Directories the carve-out left with listing only (names created in them later
    /// are unreachable).
    pub carved_dirs: Vec<PathBuf>,
}

/// Why [`restrict`] did not confine.
pub(crate) enum Failure {
    /// Strict mode: something requested is not supported by the kernel.
    Refused(Box<Outcome>),
    /// A Landlock call failed.
    Error(String),
}

/// Builds the ruleset from the plan and restricts the calling thread (and, through
/// exec, the server). Sets `no_new_privs`.
pub(crate) fn restrict(plan: &LaunchPlan, targets: &[Target]) -> Result<Outcome, Failure> {
    let strict = plan.mode == SandboxMode::Strict;
    let abi = kernel_abi();
    let k = abi.unwrap_or(0);

    let Resolved {
        rules,
        grants,
        mut deny,
        carved_dirs,
    } = resolve_paths(&plan.grants, &plan.deny, targets);

    // What the kernel cannot do, computed from its ABI so the report names each missing
    // feature; the crate's own status is cross-checked below.
    let mut missing = Vec::new();
    if k == 0 {
        missing.push(
            "landlock is unavailable: no filesystem, network or scope confinement \
             (needs Linux 5.13+ with landlock in the lsm= boot parameter or CONFIG_LSM)"
                .to_owned(),
        );
    } else {
        for (min, name, linux) in FS_RIGHTS_BY_ABI {
            if k < *min {
                missing.push(format!(
                    "filesystem right {name} (needs Landlock ABI {min}, Linux {linux})"
                ));
            }
        }
    }
    let net_requested = plan.network != Network::Allow;
    if net_requested && k < 4 {
        missing.push("TCP network restriction (needs Landlock ABI 4, Linux 6.7)".to_owned());
    }
    let Scopes {
        signals,
        abstract_unix_sockets,
    } = plan.scopes;
    if signals && k < 6 {
        missing.push("signal scoping (needs Landlock ABI 6, Linux 6.12)".to_owned());
    }
    if abstract_unix_sockets && k < 6 {
        missing.push("abstract unix socket scoping (needs Landlock ABI 6, Linux 6.12)".to_owned());
    }

    let network = NetworkReport {
        requested: plan.network.clone(),
        enforced: !net_requested || k >= 4,
    };
    let scopes = ScopeReport {
        signals_requested: signals,
        signals: signals && k >= 6,
        abstract_unix_sockets_requested: abstract_unix_sockets,
        abstract_unix_sockets: abstract_unix_sockets && k >= 6,
    };
    if k == 0 {
        for d in &mut deny {
            if d.status == DenyStatus::CarvedOut {
                d.status = DenyStatus::NotEnforced;
            }
        }
    }
    let rule_count = rules.len()
        + match &plan.network {
            Network::Ports(p) => p.len(),
            _ => 0,
        };
    let mut outcome = Outcome {
        landlock: LandlockReport {
            abi,
            requested_abi: PINNED_ABI_NUMBER,
            ruleset: Enforcement::None,
            rules: rule_count,
        },
        grants,
        deny,
        network,
        scopes,
        no_new_privs: false,
        enforcement: Enforcement::None,
        missing,
        carved_dirs,
    };
    if strict && !outcome.missing.is_empty() {
        return Err(Failure::Refused(Box::new(outcome)));
    }

    let level = if strict {
        CompatLevel::HardRequirement
    } else {
        CompatLevel::BestEffort
    };
    let status = match build_and_restrict(plan, rules, level) {
        Ok(status) => status,
        Err(e) if strict => {
            // A hard requirement the ABI table above did not predict: still a refusal.
            outcome.missing.push(format!("landlock: {e}"));
            return Err(Failure::Refused(Box::new(outcome)));
        }
        Err(e) => return Err(Failure::Error(format!("landlock: {e}"))),
    };

    outcome.no_new_privs = status.no_new_privs;
    outcome.landlock.ruleset = match status.ruleset {
        RulesetStatus::FullyEnforced => Enforcement::Full,
        RulesetStatus::PartiallyEnforced => Enforcement::Partial,
        RulesetStatus::NotEnforced => Enforcement::None,
    };
    if !status.no_new_privs {
        outcome
            .missing
            .push("no_new_privs could not be set".to_owned());
    }
    if outcome.landlock.ruleset == Enforcement::Partial && outcome.missing.is_empty() {
        outcome
            .missing
            .push("landlock reported partial enforcement for an unlisted feature".to_owned());
    }
    outcome.enforcement = match outcome.landlock.ruleset {
        Enforcement::None => Enforcement::None,
        _ if outcome.missing.is_empty() => Enforcement::Full,
        _ => Enforcement::Partial,
    };
    if strict && outcome.enforcement != Enforcement::Full {
        // Unreachable with HardRequirement; kept so strict can never start partial.
        return Err(Failure::Refused(Box::new(outcome)));
    }
    Ok(outcome)
}

fn build_and_restrict(
    plan: &LaunchPlan,
    rules: Vec<PathRule>,
    level: CompatLevel,
) -> Result<landlock::RestrictionStatus, landlock::RulesetError> {
    let mut ruleset = Ruleset::default()
        .set_compatibility(level)
        .handle_access(AccessFs::from_all(PINNED_ABI))?;
    if plan.network != Network::Allow {
        ruleset = ruleset.handle_access(AccessNet::from_all(ABI::V4))?;
    }
    let mut scopes = BitFlags::<Scope>::empty();
    if plan.scopes.signals {
        scopes |= Scope::Signal;
    }
    if plan.scopes.abstract_unix_sockets {
        scopes |= Scope::AbstractUnixSocket;
    }
    if !scopes.is_empty() {
        ruleset = ruleset.scope(scopes)?;
    }
    let mut created = ruleset.create()?;
    for rule in rules {
        created = created.add_rule(PathBeneath::new(rule.file, rule.access))?;
    }
    if let Network::Ports(ports) = &plan.network {
        for port in ports {
            created = created.add_rule(NetPort::new(*port, AccessNet::from_all(ABI::V4)))?;
        }
    }
    created.no_new_privs(true).restrict_self()
}

/// What [`resolve_paths`] produced.
struct Resolved {
    rules: Vec<PathRule>,
    grants: Vec<GrantReport>,
    deny: Vec<DenyReport>,
    /// Directories the carve-out left with listing only.
    carved_dirs: Vec<PathBuf>,
}

/// Resolves grants, literal denies and the targets found inside the roots (`deny.rs`) into
/// opened path rules, with the carve-out, and the report entries.
fn resolve_paths(grants: &[Grant], denies: &[PathBuf], targets: &[Target]) -> Resolved {
    let denies: Vec<(PathBuf, PathBuf)> = denies
        .iter()
        .map(|d| (d.clone(), canonical_or_lexical(d)))
        .collect();
    // Paths to carve out of every grant that contains them: the literal denies (hidden)
    // and the targets; a read-only one keeps at most read-exec.
    let read_only = access_of(Rights::ReadExec);
    let carves: Vec<Target> = denies
        .iter()
        .map(|(_, c)| Target {
            path: c.clone(),
            hide: true,
        })
        .chain(targets.iter().cloned())
        .collect();
    let mut deny_hits: Vec<Vec<String>> = vec![Vec::new(); denies.len()];
    let mut rules = Vec::new();
    let mut reports = Vec::new();
    let mut carved_dirs = Vec::new();

    for g in grants {
        let mut report = GrantReport {
            path: g.path.display().to_string(),
            resolved: None,
            rights: g.rights,
            origin: g.origin.clone(),
            why: g.why.clone(),
            status: GrantStatus::Granted,
        };
        report.status = 'status: {
            // One resolution: the O_PATH descriptor is both the rule's anchor and, through
            // /proc/self/fd, the resolved path the report shows and denials are matched on.
            let file = match open_path(&g.path) {
                Ok(f) => f,
                Err(e) => {
                    let error = e.to_string();
                    break 'status GrantStatus::NotFound { error };
                }
            };
            let resolved = fd_path(&file)
                .or_else(|| std::fs::canonicalize(&g.path).ok())
                .unwrap_or_else(|| g.path.clone());
            if resolved != g.path {
                report.resolved = Some(resolved.display().to_string());
            }
            if let Some(c) = carves
                .iter()
                .find(|c| c.hide && resolved.starts_with(&c.path))
            {
                let deny = c.path.display().to_string();
                break 'status GrantStatus::Denied { deny };
            }
            let mut access = access_of(g.rights);
            // A read-only target at or above the grant caps the whole grant.
            if carves
                .iter()
                .any(|c| !c.hide && resolved.starts_with(&c.path))
            {
                access &= read_only;
            }
            // Only a directory can hold a carved path (one "beneath" a file cannot exist),
            // and a read-only target matters only where the grant gives more than read.
            let is_dir = file.metadata().map(|m| m.is_dir()).unwrap_or(false);
            let inside: Vec<(PathBuf, Option<BitFlags<AccessFs>>)> = carves
                .iter()
                .filter(|c| is_dir && c.path != resolved && c.path.starts_with(&resolved))
                .filter(|c| c.hide || !read_only.contains(access))
                .filter_map(|c| {
                    let rel = c.path.strip_prefix(&resolved).ok()?.to_owned();
                    Some((rel, (!c.hide).then_some(read_only)))
                })
                .collect();
            for (i, (_, c)) in denies.iter().enumerate() {
                if is_dir && c != &resolved && c.starts_with(&resolved) {
                    deny_hits[i].push(resolved.display().to_string());
                }
            }
            if inside.is_empty() {
                rules.extend(path_rule(file, access));
                break 'status GrantStatus::Granted;
            }
            // The carve-out lists and opens everything relative to the grant's descriptor,
            // never by path again: a directory swapped for a symbolic link meanwhile is
            // refused instead of followed.
            let Ok(dir) = Dir::from_std_file(file).open_dir(".") else {
                // Fail closed: a grant that cannot be listed grants nothing beneath it.
                break 'status GrantStatus::Carved {
                    entries: 0,
                    directories: 0,
                };
            };
            let mut stats = CarveStats::default();
            carve(&dir, &resolved, access, &inside, &mut rules, &mut stats);
            let directories = stats.dirs.len();
            carved_dirs.extend(stats.dirs);
            GrantStatus::Carved {
                entries: stats.entries,
                directories,
            }
        };
        reports.push(report);
    }

    let deny_reports = denies
        .iter()
        .zip(deny_hits)
        .map(|((orig, canon), within)| {
            let (status, detail) = if within.is_empty() {
                (DenyStatus::OutsideGrants, String::new())
            } else {
                let names = if canon.is_dir() {
                    "names of its entries stay listable, their contents do not; "
                } else {
                    ""
                };
                let detail = format!(
                    "within {}: {names}entries created later directly in its parent \
                     directories are unreachable; other hard links to it are not covered",
                    within.join(", ")
                );
                (DenyStatus::CarvedOut, detail)
            };
            DenyReport {
                path: orig.display().to_string(),
                status,
                detail,
            }
        })
        .collect();
    Resolved {
        rules,
        grants: reports,
        deny: deny_reports,
        carved_dirs,
    }
}

#[derive(Default)]
struct CarveStats {
    entries: usize,
    dirs: Vec<PathBuf>,
}

/// Grants `dir`'s entries one by one around the carved paths (relative to `dir`),
/// recursing into the directories that contain carved paths. A hidden path gets nothing,
/// a read-only one the read subset; the directories on the way get listing only.
fn carve(
    dir: &Dir,
    dir_path: &Path,
    access: BitFlags<AccessFs>,
    carves: &[(PathBuf, Option<BitFlags<AccessFs>>)],
    rules: &mut Vec<PathRule>,
    stats: &mut CarveStats,
) {
    stats.dirs.push(dir_path.to_owned());
    if access.contains(AccessFs::ReadDir)
        && let Ok(file) = dir.try_clone()
    {
        rules.push(PathRule {
            file: file.into_std_file(),
            access: AccessFs::ReadDir.into(),
        });
    }
    // Fail closed: a directory that cannot be listed grants nothing beneath it.
    let Ok(entries) = dir.entries() else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let direct = carves.iter().find(|(rel, _)| rel.as_os_str() == name);
        let beneath: Vec<(PathBuf, Option<BitFlags<AccessFs>>)> = carves
            .iter()
            .filter_map(|(rel, r)| {
                let rest = rel.strip_prefix(&name).ok()?;
                (!rest.as_os_str().is_empty()).then(|| (rest.to_owned(), *r))
            })
            .collect();
        let child_access = match direct {
            Some((_, None)) => continue,
            Some((_, Some(r))) => access & *r,
            None => access,
        };
        // O_NOFOLLOW: a symlink is opened as itself, never as its target.
        let Ok(file) = dir.open_with(
            &name,
            cap_std::fs::OpenOptions::new()
                .read(true)
                .follow(FollowSymlinks::No)
                .custom_flags(libc::O_PATH),
        ) else {
            continue;
        };
        let Ok(meta) = file.metadata() else { continue };
        if meta.file_type().is_symlink() {
            continue;
        }
        if beneath.is_empty() || !meta.is_dir() {
            // Only a directory can hold a carved path: one "beneath" a file cannot exist.
            if let Some(r) = path_rule(file.into_std(), child_access) {
                rules.push(r);
                stats.entries += 1;
            }
        } else {
            drop(file);
            let Ok(child) = dir.open_dir_nofollow(&name) else {
                continue;
            };
            carve(
                &child,
                &dir_path.join(&name),
                child_access,
                &beneath,
                rules,
                stats,
            );
        }
    }
}

/// Opens a path as `O_PATH`, following symlinks.
fn open_path(path: &Path) -> std::io::Result<File> {
    std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_PATH)
        .open(path)
}

/// The path a descriptor refers to, from `/proc/self/fd` (one syscall instead of a
/// `realpath` walk); `None` when `/proc` is not mounted or the name is not a path.
fn fd_path(file: &File) -> Option<PathBuf> {
    use std::os::fd::AsRawFd;
    let p = std::fs::read_link(format!("/proc/self/fd/{}", file.as_raw_fd())).ok()?;
    p.is_absolute().then_some(p)
}

/// A rule for an opened path; a non-directory gets the file subset of the rights, and
/// nothing when that subset is empty.
fn path_rule(file: File, access: BitFlags<AccessFs>) -> Option<PathRule> {
    let is_dir = file.metadata().map(|m| m.is_dir()).unwrap_or(false);
    let access = if is_dir {
        access
    } else {
        access & AccessFs::from_file(PINNED_ABI)
    };
    if access.is_empty() {
        return None;
    }
    Some(PathRule { file, access })
}

/// The canonical form of a path that may not exist yet: the longest existing ancestor
/// canonicalized, the rest appended lexically (`.` dropped, `..` popped).
pub(crate) fn canonical_or_lexical(path: &Path) -> PathBuf {
    if let Ok(c) = std::fs::canonicalize(path) {
        return c;
    }
    let mut existing = path.to_path_buf();
    let mut rest = Vec::new();
    while let Some(name) = existing.file_name().map(|n| n.to_owned()) {
        existing.pop();
        rest.push(name);
        if let Ok(c) = std::fs::canonicalize(&existing) {
            let mut out = c;
            for n in rest.iter().rev() {
                out.push(n);
            }
            return lexical(&out);
        }
    }
    lexical(path)
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::symlink;

    use super::*;

    fn grant(path: &Path, rights: Rights) -> Grant {
        Grant {
            path: path.to_owned(),
            rights,
            origin: "root".into(),
            why: String::new(),
        }
    }

    #[test]
    fn kernel_abi_is_stable_between_calls() {
        assert_eq!(kernel_abi(), kernel_abi());
    }

    #[test]
    fn rights_are_subsets_of_the_handled_set() {
        let handled = AccessFs::from_all(PINNED_ABI);
        for r in [
            Rights::Read,
            Rights::ReadExec,
            Rights::ReadWrite,
            Rights::WriteFiles,
            Rights::Device,
        ] {
            assert!(handled.contains(access_of(r)), "{r}");
        }
        assert!(!access_of(Rights::WriteFiles).contains(AccessFs::MakeDir));
        assert!(!access_of(Rights::Read).contains(AccessFs::Execute));
        assert!(access_of(Rights::ReadExec).contains(AccessFs::Execute));
    }

    #[test]
    fn canonical_of_missing_paths() {
        let dir = tempfile::tempdir().unwrap();
        let base = std::fs::canonicalize(dir.path()).unwrap();
        std::fs::create_dir(base.join("a")).unwrap();
        assert_eq!(
            canonical_or_lexical(&base.join("a/./b/../c/d")),
            base.join("a/c/d")
        );
        symlink(base.join("a"), base.join("link")).unwrap();
        assert_eq!(canonical_or_lexical(&base.join("link/x")), base.join("a/x"));
    }

    /// The carve-out, checked on the rules it produces (which paths get a rule and with
    /// which rights), without restricting the test process.
    #[test]
    fn carve_out_grants_everything_but_the_denied_path() {
        let dir = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(dir.path()).unwrap();
        for d in ["sub/deeper", "other"] {
            std::fs::create_dir_all(root.join(d)).unwrap();
        }
        for f in [
            "top.txt",
            "sub/.env",
            "sub/ok.txt",
            "sub/deeper/x",
            "other/y",
        ] {
            std::fs::write(root.join(f), f).unwrap();
        }
        // A symlink in a carved directory pointing at the secret must not be granted.
        symlink(root.join("sub/.env"), root.join("sub/alias")).unwrap();

        let Resolved {
            rules,
            grants,
            deny,
            ..
        } = resolve_paths(
            &[grant(&root, Rights::ReadWrite)],
            &[root.join("sub/.env")],
            &[],
        );
        let ruled: Vec<(PathBuf, BitFlags<AccessFs>)> = rules
            .iter()
            .map(|r| {
                let p = std::fs::read_link(format!(
                    "/proc/self/fd/{}",
                    std::os::fd::AsRawFd::as_raw_fd(&r.file)
                ))
                .unwrap();
                (p, r.access)
            })
            .collect();
        let rights_of = |p: &str| {
            ruled
                .iter()
                .filter(|(q, _)| *q == root.join(p))
                .map(|(_, a)| *a)
                .collect::<Vec<_>>()
        };
        let listing: BitFlags<AccessFs> = AccessFs::ReadDir.into();
        assert_eq!(rights_of(""), vec![listing], "root: listing only");
        assert_eq!(rights_of("sub"), vec![listing], "ancestor: listing only");
        assert!(rights_of("sub/.env").is_empty(), "the secret gets nothing");
        assert!(rights_of("sub/alias").is_empty(), "symlinks get nothing");
        assert_eq!(
            rights_of("sub/ok.txt"),
            vec![AccessFs::from_file(PINNED_ABI)]
        );
        assert_eq!(
            rights_of("sub/deeper"),
            vec![AccessFs::from_all(PINNED_ABI)]
        );
        assert_eq!(rights_of("other"), vec![AccessFs::from_all(PINNED_ABI)]);
        assert_eq!(rights_of("top.txt"), vec![AccessFs::from_file(PINNED_ABI)]);
        assert!(matches!(
            grants[0].status,
            GrantStatus::Carved {
                entries: 4,
                directories: 2
            }
        ));
        assert_eq!(deny[0].status, DenyStatus::CarvedOut);
    }

    mod carve_props {
        use proptest::prelude::*;

        use super::*;

        /// Relative paths over a tiny alphabet, so trees, denials and collisions are dense.
        fn rel_path() -> impl Strategy<Value = String> {
            prop::collection::vec(prop::sample::select(vec!["a", "b", "c"]), 1..=3)
                .prop_map(|v| v.join("/"))
        }

        proptest! {
            #![proptest_config(ProptestConfig::with_cases(64))]
            /// For any tree and any denials: no rule reaches a denied path or anything
            /// beneath it beyond listing its ancestors, and every other existing file
            /// stays readable through some rule.
            #[test]
            fn carve_out_is_sound_and_complete(
                files in prop::collection::vec(rel_path(), 1..12),
                denies in prop::collection::vec(rel_path(), 1..4),
            ) {
                let dir = tempfile::tempdir().unwrap();
                let root = std::fs::canonicalize(dir.path()).unwrap();
                for f in &files {
                    let p = root.join(f);
                    // A path that is already a directory (or under a file) is skipped.
                    if let Some(parent) = p.parent()
                        && std::fs::create_dir_all(parent).is_err() {
                            continue;
                        }
                    let _ = std::fs::write(&p, "x");
                }
                let denies: Vec<PathBuf> = denies.iter().map(|d| root.join(d)).collect();
                let rules = resolve_paths(
                    &[grant(&root, Rights::ReadWrite)],
                    &denies,
                    &[],
                ).rules;
                let ruled: Vec<(PathBuf, BitFlags<AccessFs>)> = rules
                    .iter()
                    .map(|r| (fd_path(&r.file).unwrap(), r.access))
                    .collect();
                let listing: BitFlags<AccessFs> = AccessFs::ReadDir.into();
                for d in &denies {
                    for (p, access) in &ruled {
                        // Beneath (or at) a denied path: nothing at all.
                        prop_assert!(!p.starts_with(d), "rule on {p:?} inside denied {d:?}");
                        // A directory above a denied path: listing only. (A file "above"
                        // one only means the denied path cannot exist.)
                        if d.starts_with(p) && p.is_dir() {
                            prop_assert_eq!(*access, listing, "ancestor {:?} of {:?}", p, d);
                        }
                    }
                }
                for f in &files {
                    let f = root.join(f);
                    if !f.is_file() || denies.iter().any(|d| f.starts_with(d)) {
                        continue;
                    }
                    let covered = ruled.iter().any(|(p, a)| {
                        f.starts_with(p) && a.contains(AccessFs::ReadFile)
                    });
                    prop_assert!(covered, "{f:?} is not readable; rules {ruled:?}");
                }
            }
        }
    }

    #[test]
    fn a_file_grant_with_an_impossible_deny_beneath_is_still_granted() {
        let dir = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(dir.path()).unwrap();
        std::fs::write(root.join("f"), "x").unwrap();
        let Resolved { rules, grants, .. } = resolve_paths(
            &[grant(&root.join("f"), Rights::Read)],
            &[root.join("f/x")],
            &[],
        );
        assert_eq!(rules.len(), 1);
        assert_eq!(grants[0].status, GrantStatus::Granted);
    }

    #[test]
    fn grants_inside_a_denied_path_are_dropped_and_outside_denies_reported() {
        let dir = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(dir.path()).unwrap();
        std::fs::create_dir_all(root.join("secrets/inner")).unwrap();
        std::fs::create_dir_all(root.join("pub")).unwrap();
        let Resolved {
            rules,
            grants,
            deny,
            ..
        } = resolve_paths(
            &[
                grant(&root.join("secrets/inner"), Rights::Read),
                grant(&root.join("pub"), Rights::Read),
                grant(&root.join("missing"), Rights::Read),
            ],
            &[
                root.join("secrets"),
                PathBuf::from("/nonexistent/rf/secret"),
            ],
            &[],
        );
        assert!(matches!(grants[0].status, GrantStatus::Denied { .. }));
        assert_eq!(grants[1].status, GrantStatus::Granted);
        assert!(matches!(grants[2].status, GrantStatus::NotFound { .. }));
        assert_eq!(rules.len(), 1);
        assert_eq!(deny[0].status, DenyStatus::OutsideGrants);
        assert_eq!(deny[1].status, DenyStatus::OutsideGrants);
    }

    #[test]
    fn a_denied_path_reached_through_a_symlinked_grant_is_still_carved() {
        let dir = tempfile::tempdir().unwrap();
        let base = std::fs::canonicalize(dir.path()).unwrap();
        std::fs::create_dir_all(base.join("real")).unwrap();
        std::fs::write(base.join("real/key"), "k").unwrap();
        std::fs::write(base.join("real/ok"), "o").unwrap();
        symlink(base.join("real"), base.join("alias")).unwrap();
        // Granted through the alias, denied through the real path.
        let Resolved { grants, deny, .. } = resolve_paths(
            &[grant(&base.join("alias"), Rights::Read)],
            &[base.join("real/key")],
            &[],
        );
        assert!(matches!(grants[0].status, GrantStatus::Carved { .. }));
        assert_eq!(deny[0].status, DenyStatus::CarvedOut);
        // And the other way round.
        let Resolved { grants, .. } = resolve_paths(
            &[grant(&base.join("real"), Rights::Read)],
            &[base.join("alias/key")],
            &[],
        );
        assert!(matches!(grants[0].status, GrantStatus::Carved { .. }));
    }
}
