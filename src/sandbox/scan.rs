//! The bounded scan of a root for the policy's deny globs and read-only globs: which
//! existing paths inside a root the server must not read (hidden) or not change
//! (read-only). The launcher uses it to build the carve-out (mounts or Landlock rules);
//! the content tripwire uses it to find the denied files it fingerprints.
//!
//! # How it walks
//!
//! Every directory is opened relative to its parent's descriptor with `O_NOFOLLOW`
//! (`open_dir_nofollow`), so a directory swapped for a symbolic link while the scan runs
//! is refused, never followed out of the root. Each directory is listed completely before
//! any of its subdirectories is entered, so a bound that stops the scan leaves a precise
//! set of directories not scanned (the one being listed and the subdirectories still
//! queued), never a half-known parent. Directories that are usually large and rarely hold
//! secrets (`node_modules`, `.venv`, `target`, ...) are scanned last, so a bound hits
//! them first.
//!
//! # What it matches
//!
//! Paths are matched as the policy matches them (`src/policy/glob.rs`): globset with
//! `literal_separator`, case-insensitive (deny-side rules), and `X/**` also matching `X`.
//! A matched directory is not entered (everything beneath is covered by it).
//!
//! `.git` is git's own: deny globs do not apply to it or inside it (git-based servers
//! need it, and the default policy's `**/.git/**` is about serving its files on the
//! wire). Its direct entries are matched against the read-only globs (`hooks`,
//! `config`) and, for the tripwire only, against the deny globs (`git_denied`). Nothing
//! deeper in `.git` is scanned, but for the git directories of submodules and linked
//! worktrees beneath `.git/modules/` and `.git/worktrees/` (a directory there holding a
//! `HEAD`), whose direct entries are checked the same way.
//!
//! # Bounds
//!
//! [`Limits`]: entries examined, directory depth, wall time. Past a bound, what was not
//! scanned is reported in [`Scan::unscanned`]; the launcher hides those directories
//! (fail closed), the tripwire says it could not fingerprint them.

use std::collections::{HashSet, VecDeque};
use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use cap_fs_ext::DirExt;
use cap_std::fs::{Dir, MetadataExt};
use globset::{Candidate, GlobBuilder, GlobSet, GlobSetBuilder};
use serde::{Deserialize, Serialize};

/// Directory names scanned after everything else: large, regenerated, rarely holding a
/// secret of the project. A bound then stops in them first.
const BULKY: &[&str] = &[
    "node_modules",
    ".venv",
    "venv",
    "target",
    "dist",
    "build",
    "vendor",
    "__pycache__",
    ".cache",
    ".tox",
    ".mypy_cache",
    ".next",
    ".gradle",
];

/// The name git keeps its repository under (see the module doc).
pub(crate) const GIT_DIR: &str = ".git";

/// The read-only globs that apply when a policy says nothing: places inside a writable
/// root where a file written now runs code outside the sandbox later (a git hook at the
/// user's next commit, an editor's tasks, a host's MCP configuration).
pub const DEFAULT_READ_ONLY_PATHS: &[&str] = &[
    "**/.git/hooks/**",
    "**/.git/config",
    "**/.git/modules/**/hooks/**",
    "**/.git/modules/**/config",
    "**/config.worktree",
    "**/.vscode/**",
    "**/.mcp.json",
    "**/.cursor/**",
    "**/.claude/**",
];

/// Bounds of one scan.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Limits {
    /// Directory entries examined, over all roots of one scan.
    pub max_entries: usize,
    /// Depth below the root (the root's entries are at depth 1).
    pub max_depth: usize,
    /// Wall time.
    #[serde(with = "millis")]
    pub max_time: Duration,
    /// Matches recorded (hidden, read-only and unscanned together).
    pub max_hits: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_entries: 200_000,
            max_depth: 48,
            max_time: Duration::from_secs(2),
            max_hits: 4096,
        }
    }
}

mod millis {
    use std::time::Duration;

    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_u64(d.as_millis() as u64)
    }
    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Duration, D::Error> {
        Ok(Duration::from_millis(u64::deserialize(d)?))
    }
}

/// One compiled glob list, remembering each glob's text.
#[derive(Debug, Clone)]
struct Globs {
    set: GlobSet,
    /// For each glob in the set, the index of the text it came from.
    owner: Vec<usize>,
    texts: Vec<String>,
}

impl Globs {
    fn new(texts: &[String]) -> Result<Globs, String> {
        let mut b = GlobSetBuilder::new();
        let mut owner = Vec::new();
        for (i, text) in texts.iter().enumerate() {
            let mut patterns = vec![text.as_str()];
            // `X/**` also matches `X`, as in the policy.
            if let Some(parent) = text.strip_suffix("/**")
                && !parent.is_empty()
                && parent != "**"
            {
                patterns.push(parent);
            }
            for p in patterns {
                let glob = GlobBuilder::new(p)
                    .literal_separator(true)
                    .case_insensitive(true)
                    .build()
                    .map_err(|e| format!("invalid glob \"{text}\": {}", e.kind()))?;
                b.add(glob);
                owner.push(i);
            }
        }
        Ok(Globs {
            set: b.build().map_err(|e| e.to_string())?,
            owner,
            texts: texts.to_vec(),
        })
    }

    /// The text of the first glob matching `c`.
    fn first(&self, c: &Candidate<'_>, buf: &mut Vec<usize>) -> Option<&str> {
        if self.texts.is_empty() {
            return None;
        }
        self.set.matches_candidate_into(c, buf);
        buf.iter()
            .map(|i| self.owner[*i])
            .min()
            .map(|i| self.texts[i].as_str())
    }
}

/// The compiled deny and read-only globs a scan matches.
#[derive(Debug, Clone)]
pub struct ScanRules {
    deny: Globs,
    read_only: Globs,
}

impl ScanRules {
    /// Compiles the globs (already expanded: `~` replaced, absolute or `**/`-prefixed).
    pub fn new(deny: &[String], read_only: &[String]) -> Result<ScanRules, String> {
        Ok(ScanRules {
            deny: Globs::new(deny)?,
            read_only: Globs::new(read_only)?,
        })
    }

    /// True when there is nothing to match.
    pub fn is_empty(&self) -> bool {
        self.deny.texts.is_empty() && self.read_only.texts.is_empty()
    }
}

/// One match.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Hit {
    /// Path relative to the root.
    pub rel: PathBuf,
    /// A directory (everything beneath it is covered).
    pub dir: bool,
    /// The glob that matched, or why the path is covered (`unscanned: ...`,
    /// `hard link of ...`, `symlinked from ...`).
    pub rule: String,
}

/// What a scan found in one root.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Scan {
    /// Deny-glob matches: the server must not read them.
    pub hidden: Vec<Hit>,
    /// Read-only-glob matches: the server may read them, not change them.
    pub read_only: Vec<Hit>,
    /// Deny-glob matches among `.git`'s direct entries: left reachable (see the module
    /// doc), fingerprinted by the tripwire.
    pub git_denied: Vec<Hit>,
    /// Regular files beneath hidden directories (only with [`Options::files_in_hidden`]).
    pub hidden_files: Vec<Hit>,
    /// Directories whose content was not (completely) scanned, because of a bound.
    pub unscanned: Vec<Hit>,
    /// The bound that stopped the scan, if one did.
    pub bound: Option<String>,
    /// Directory entries examined.
    pub entries: usize,
    /// Time taken.
    #[serde(with = "millis")]
    pub elapsed: Duration,
}

/// What else a scan collects.
#[derive(Debug, Clone, Copy, Default)]
pub struct Options {
    /// Also list the regular files beneath hidden directories (the tripwire reads them).
    pub files_in_hidden: bool,
}

/// A directory waiting to be scanned.
struct Pending {
    rel: PathBuf,
    depth: usize,
    bulky: bool,
    /// Inside a read-only directory (read-only matches beneath it add nothing).
    read_only: bool,
    /// Below `.git/modules/` or `.git/worktrees/`: a directory holding a `HEAD` there is a
    /// git directory of its own (a submodule's, a linked worktree's), scanned as `.git` is.
    in_git: bool,
}

/// The budget shared by the scans of one launch (several roots).
#[derive(Debug)]
pub struct Budget {
    limits: Limits,
    started: Instant,
    entries: usize,
    hits: usize,
}

impl Budget {
    /// A fresh budget.
    pub fn new(limits: Limits) -> Budget {
        Budget {
            limits,
            started: Instant::now(),
            entries: 0,
            hits: 0,
        }
    }

    fn exhausted(&self) -> Option<String> {
        let l = &self.limits;
        if self.entries >= l.max_entries {
            return Some(format!("{} entries examined", l.max_entries));
        }
        if self.hits >= l.max_hits {
            return Some(format!("{} matches recorded", l.max_hits));
        }
        // Reading the clock every entry would cost more than the match itself.
        if self.entries.is_multiple_of(256) && self.started.elapsed() >= l.max_time {
            return Some(format!("{} ms elapsed", l.max_time.as_millis()));
        }
        None
    }
}

/// Scans `root` (whose real path is `root_path`) for the rules. Never fails: what cannot be
/// listed is reported as unscanned.
pub fn scan(
    root: &Dir,
    root_path: &Path,
    rules: &ScanRules,
    budget: &mut Budget,
    opts: Options,
) -> Scan {
    let started = Instant::now();
    let mut out = Scan::default();
    let entries_before = budget.entries;
    if rules.is_empty() {
        return out;
    }
    let mut buf = Vec::new();
    let mut queue: VecDeque<Pending> = VecDeque::new();
    let mut bulky: VecDeque<Pending> = VecDeque::new();
    queue.push_back(Pending {
        rel: PathBuf::new(),
        depth: 0,
        bulky: false,
        read_only: false,
        in_git: false,
    });
    let mut stop: Option<String> = None;
    // Depth-first over directories (a stack), each listed completely first.
    let mut stack: Vec<Pending> = Vec::new();
    loop {
        let next = stack
            .pop()
            .or_else(|| queue.pop_front())
            .or_else(|| bulky.pop_front());
        let Some(dir) = next else { break };
        if let Some(why) = stop.clone().or_else(|| budget.exhausted()) {
            stop = Some(why.clone());
            unscanned(&mut out, dir.rel, &why);
            continue;
        }
        if dir.depth >= budget.limits.max_depth {
            let why = format!("deeper than {} levels", budget.limits.max_depth);
            unscanned(&mut out, dir.rel, &why);
            continue;
        }
        let listed = open_rel(root, &dir.rel)
            .map_err(|e| format!("cannot open: {e}"))
            .and_then(|h| Ok((h.entries().map_err(|e| format!("cannot list: {e}"))?, h)));
        let (listing, handle) = match listed {
            Ok(l) => l,
            Err(why) => {
                unscanned(&mut out, dir.rel, &why);
                continue;
            }
        };
        let is_git = dir.rel.file_name() == Some(OsStr::new(GIT_DIR))
            || (dir.in_git && handle.symlink_metadata("HEAD").is_ok_and(|m| m.is_file()));
        let mut subdirs = Vec::new();
        let mut cut = None;
        for entry in listing {
            budget.entries += 1;
            if let Some(why) = budget.exhausted() {
                cut = Some(why);
                break;
            }
            let Ok(entry) = entry else { continue };
            let name = entry.file_name();
            let Ok(ft) = entry.file_type() else { continue };
            let rel = dir.rel.join(&name);
            let abs = root_path.join(&rel);
            let candidate = Candidate::new(&abs);
            let is_dir = ft.is_dir();
            let ro = if dir.read_only {
                None
            } else {
                rules.read_only.first(&candidate, &mut buf)
            };
            if is_git || dir.in_git {
                // Only `.git`'s direct entries, never deeper (see the module doc), except
                // the git directories of submodules and linked worktrees under `modules/`
                // and `worktrees/`, whose `hooks/` and `config` run code as `.git`'s do.
                if let Some(rule) = ro {
                    record(&mut out.read_only, budget, &rel, is_dir, rule);
                }
                let nested = !is_git || name == "modules" || name == "worktrees";
                if ft.is_dir() && nested && ro.is_none() {
                    subdirs.push(Pending {
                        rel,
                        depth: dir.depth + 1,
                        bulky: false,
                        read_only: dir.read_only,
                        in_git: true,
                    });
                    continue;
                }
                if !is_git {
                    continue;
                }
                if !is_dir
                    && ft.is_file()
                    && let Some(rule) = rules.deny.first(&candidate, &mut buf)
                {
                    record(&mut out.git_denied, budget, &rel, false, rule);
                }
                continue;
            }
            let deny = if name == GIT_DIR {
                None
            } else {
                rules.deny.first(&candidate, &mut buf)
            };
            if let Some(rule) = deny {
                if ft.is_symlink() {
                    // The link itself holds nothing; what it names inside the root is
                    // hidden under the denial too.
                    if let Ok(target) = root.canonicalize(&rel) {
                        let dir = root.symlink_metadata(&target).is_ok_and(|m| m.is_dir());
                        let why = format!("symlinked from {} ({rule})", rel.display());
                        record(&mut out.hidden, budget, &target, dir, &why);
                    }
                    continue;
                }
                record(&mut out.hidden, budget, &rel, is_dir, rule);
                if is_dir && opts.files_in_hidden {
                    files_beneath(root, &rel, budget, &mut out.hidden_files, rule);
                }
                continue;
            }
            if let Some(rule) = ro
                && !ft.is_symlink()
            {
                record(&mut out.read_only, budget, &rel, is_dir, rule);
            }
            // A read-only directory is still entered: a denied file inside it must be
            // hidden all the same.
            if is_dir {
                let is_bulky = dir.bulky || name.to_str().is_some_and(|n| BULKY.contains(&n));
                subdirs.push(Pending {
                    rel,
                    depth: dir.depth + 1,
                    bulky: is_bulky,
                    read_only: dir.read_only || ro.is_some(),
                    in_git: false,
                });
            }
        }
        if let Some(why) = cut {
            // The directory being listed is not fully known: all of it is unscanned (its
            // queued subdirectories are inside it).
            unscanned(&mut out, dir.rel, &why);
            stop = Some(why);
            continue;
        }
        for sub in subdirs.into_iter().rev() {
            if sub.bulky && !dir.bulky {
                bulky.push_back(sub);
            } else {
                stack.push(sub);
            }
        }
    }
    alias_hard_links(root, &mut out, budget);
    out.bound = stop;
    out.entries = budget.entries - entries_before;
    out.elapsed = started.elapsed();
    out
}

fn record(list: &mut Vec<Hit>, budget: &mut Budget, rel: &Path, dir: bool, rule: &str) {
    budget.hits += 1;
    list.push(Hit {
        rel: rel.to_owned(),
        dir,
        rule: rule.to_owned(),
    });
}

/// Not counted against `max_hits`: these are what the hit bound produces.
fn unscanned(out: &mut Scan, rel: PathBuf, why: &str) {
    out.unscanned.push(Hit {
        rel,
        dir: true,
        rule: format!("unscanned: {why}"),
    });
}

/// Opens the directory at `rel` beneath `root`, one component at a time, refusing any
/// symbolic link on the way.
pub(crate) fn open_rel(root: &Dir, rel: &Path) -> std::io::Result<Dir> {
    let mut dir = root.try_clone()?;
    for comp in rel.components() {
        dir = dir.open_dir_nofollow(comp.as_os_str())?;
    }
    Ok(dir)
}

/// The regular files beneath a hidden directory (bounded by the same budget).
fn files_beneath(root: &Dir, rel: &Path, budget: &mut Budget, out: &mut Vec<Hit>, rule: &str) {
    let mut stack = vec![(rel.to_owned(), rel.components().count())];
    while let Some((dir_rel, depth)) = stack.pop() {
        if depth >= budget.limits.max_depth || budget.exhausted().is_some() {
            return;
        }
        let Ok(dir) = open_rel(root, &dir_rel) else {
            continue;
        };
        let Ok(listing) = dir.entries() else { continue };
        for entry in listing.flatten() {
            budget.entries += 1;
            if budget.exhausted().is_some() {
                return;
            }
            let Ok(ft) = entry.file_type() else { continue };
            let child = dir_rel.join(entry.file_name());
            if ft.is_dir() {
                stack.push((child, depth + 1));
            } else if ft.is_file() {
                record(out, budget, &child, false, rule);
            }
        }
    }
}

/// Other names of hidden files with several hard links, inside the same root: hidden too
/// (Landlock and mounts act on paths, not on inodes). Costs one `stat` per regular file,
/// and only when some hidden file has more than one link.
fn alias_hard_links(root: &Dir, out: &mut Scan, budget: &mut Budget) {
    let mut wanted: HashSet<(u64, u64)> = HashSet::new();
    for hit in out.hidden.iter().filter(|h| !h.dir) {
        if let Ok(m) = root.symlink_metadata(&hit.rel)
            && m.is_file()
            && m.nlink() > 1
        {
            wanted.insert((m.dev(), m.ino()));
        }
    }
    if wanted.is_empty() {
        return;
    }
    let known: HashSet<PathBuf> = out.hidden.iter().map(|h| h.rel.clone()).collect();
    let mut stack = vec![(PathBuf::new(), 0usize)];
    let mut found = Vec::new();
    while let Some((dir_rel, depth)) = stack.pop() {
        if depth >= budget.limits.max_depth || budget.exhausted().is_some() {
            break;
        }
        if known.contains(&dir_rel) && !dir_rel.as_os_str().is_empty() {
            continue;
        }
        let Ok(dir) = open_rel(root, &dir_rel) else {
            continue;
        };
        let Ok(listing) = dir.entries() else { continue };
        for entry in listing.flatten() {
            budget.entries += 1;
            let Ok(ft) = entry.file_type() else { continue };
            let child = dir_rel.join(entry.file_name());
            if ft.is_dir() {
                stack.push((child, depth + 1));
            } else if ft.is_file()
                && !known.contains(&child)
                && let Ok(m) = entry.metadata()
                && m.nlink() > 1
                && wanted.contains(&(m.dev(), m.ino()))
            {
                found.push(child);
            }
        }
    }
    for rel in found {
        record(
            &mut out.hidden,
            budget,
            &rel,
            false,
            "hard link of a hidden file",
        );
    }
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::symlink;

    use cap_std::ambient_authority;

    use super::*;

    fn rules() -> ScanRules {
        let deny: Vec<String> = ["**/.env", "**/*.pem", "**/.ssh/**", "**/.git/**"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        let ro: Vec<String> = DEFAULT_READ_ONLY_PATHS
            .iter()
            .map(|s| s.to_string())
            .collect();
        ScanRules::new(&deny, &ro).unwrap()
    }

    fn tree(files: &[&str], dirs: &[&str]) -> (tempfile::TempDir, PathBuf, Dir) {
        let t = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(t.path()).unwrap();
        for d in dirs {
            std::fs::create_dir_all(root.join(d)).unwrap();
        }
        for f in files {
            let p = root.join(f);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, "x").unwrap();
        }
        let dir = Dir::open_ambient_dir(&root, ambient_authority()).unwrap();
        (t, root, dir)
    }

    fn rels(hits: &[Hit]) -> Vec<String> {
        let mut v: Vec<String> = hits.iter().map(|h| h.rel.display().to_string()).collect();
        v.sort();
        v
    }

    #[test]
    fn finds_denied_and_read_only_paths_and_leaves_git_alone() {
        let (_t, root, dir) = tree(
            &[
                ".env",
                "a/b/.ENV",
                "a/key.pem",
                "ok.txt",
                ".git/config",
                ".git/HEAD",
                ".git/hooks/pre-commit.sample",
                ".git/objects/ab/cdef",
                ".vscode/settings.json",
                ".vscode/.env",
                ".ssh/id_rsa",
                "node_modules/x/.env",
            ],
            &["empty"],
        );
        std::fs::write(root.join(".mcp.json"), "{}").unwrap();
        let mut budget = Budget::new(Limits::default());
        let s = scan(
            &dir,
            &root,
            &rules(),
            &mut budget,
            Options {
                files_in_hidden: true,
            },
        );
        assert_eq!(
            rels(&s.hidden),
            [
                ".env",
                ".ssh",
                ".vscode/.env",
                "a/b/.ENV",
                "a/key.pem",
                "node_modules/x/.env"
            ]
        );
        assert_eq!(
            rels(&s.read_only),
            [".git/config", ".git/hooks", ".mcp.json", ".vscode"]
        );
        assert_eq!(rels(&s.git_denied), [".git/HEAD", ".git/config"]);
        assert_eq!(rels(&s.hidden_files), [".ssh/id_rsa"]);
        assert!(s.unscanned.is_empty() && s.bound.is_none());
        let hooks = s
            .read_only
            .iter()
            .find(|h| h.rel.ends_with("hooks"))
            .unwrap();
        assert!(hooks.dir);
        assert_eq!(hooks.rule, "**/.git/hooks/**");
    }

    #[test]
    fn a_bound_leaves_exactly_the_unscanned_directories_and_bulky_ones_go_last() {
        let mut files = vec![".env"];
        let names: Vec<String> = (0..50).map(|i| format!("node_modules/p{i}/f")).collect();
        files.extend(names.iter().map(String::as_str));
        files.push("src/deep/.env");
        let (_t, root, dir) = tree(&files, &[]);
        let mut budget = Budget::new(Limits {
            max_entries: 20,
            ..Limits::default()
        });
        let s = scan(&dir, &root, &rules(), &mut budget, Options::default());
        // The project's own directories were scanned before node_modules.
        assert_eq!(rels(&s.hidden), [".env", "src/deep/.env"]);
        assert_eq!(rels(&s.unscanned), ["node_modules"]);
        assert!(s.bound.as_deref().unwrap().contains("20 entries"));

        let mut budget = Budget::new(Limits {
            max_depth: 2,
            ..Limits::default()
        });
        let s = scan(&dir, &root, &rules(), &mut budget, Options::default());
        assert!(rels(&s.unscanned).contains(&"src/deep".to_owned()));
        assert!(!rels(&s.hidden).contains(&"src/deep/.env".to_owned()));
    }

    #[test]
    fn symlinked_denials_hide_their_target_and_hard_links_are_found() {
        let (_t, root, dir) = tree(&["config/prod.settings", "secret.txt"], &[]);
        symlink("config/prod.settings", root.join(".env")).unwrap();
        std::fs::write(root.join("id.pem"), "k").unwrap();
        std::fs::hard_link(root.join("id.pem"), root.join("config/copy.txt")).unwrap();
        let mut budget = Budget::new(Limits::default());
        let s = scan(&dir, &root, &rules(), &mut budget, Options::default());
        assert_eq!(
            rels(&s.hidden),
            ["config/copy.txt", "config/prod.settings", "id.pem"]
        );
    }

    #[test]
    fn a_directory_swapped_for_a_symlink_is_not_followed() {
        let (_t, root, dir) = tree(&["a/x"], &[]);
        let outside = tempfile::tempdir().unwrap();
        std::fs::write(outside.path().join(".env"), "s").unwrap();
        std::fs::remove_dir_all(root.join("a")).unwrap();
        symlink(outside.path(), root.join("a")).unwrap();
        let mut budget = Budget::new(Limits::default());
        let s = scan(&dir, &root, &rules(), &mut budget, Options::default());
        assert!(s.hidden.is_empty(), "{:?}", s.hidden);
        assert!(open_rel(&dir, Path::new("a")).is_err());
    }
}
