//! The git directories of a root that is a linked worktree (`git worktree add`): its `.git`
//! is a file, `gitdir: <main>/.git/worktrees/<name>`, outside the root, and that directory's
//! `commondir` names the main repository's `.git`, which holds the objects, refs and config
//! the worktree shares. Without grants for them git fails in the worktree, and a git server
//! opened on it dies before `initialize`.
//!
//! They get what the root's own `.git/` gets, as git needs it:
//!
//! - the worktree's own git directory (`HEAD`, `index`, `logs/`, its private refs): the
//!   root's access (read-write for a writable root), as a `.git/` inside the root;
//! - the common directory, for a writable root: its files writable ([`Rights::WriteFiles`]:
//!   create, write, remove regular files, never a directory, link or device), since
//!   GitPython (`mcp-server-git`'s `git_commit`) creates and removes `COMMIT_EDITMSG` there;
//!   `objects/`, `refs/` and `logs/` read-write (what a commit, a branch or a tag writes);
//!   for a read-only root, read-exec as a whole;
//! - kept read-only (`GitDirs::read_only`, a read-only bind in the launcher's private
//!   mount namespace, else the Landlock carve-out, which then also leaves the directory's
//!   own files unwritable): its `hooks/` and `config` (a file written there runs code outside
//!   the sandbox at the user's next git command), `modules/` (its submodules' git
//!   directories, each with hooks and config) and the other worktrees' directories; the
//!   worktree's `commondir` and `gitdir` pointers and the root's `.git` file, which would
//!   otherwise redirect git to a directory the server made. A common `config` that turns
//!   on `extensions.worktreeConfig` keeps the directory read-only (a `config.worktree` the
//!   server created would be read as configuration).
//!
//! A git directory without `commondir` (a submodule checkout opened as the root: its `.git`
//! file points into the superproject's `.git/modules/<name>`) is a whole repository of its
//! own and gets the same: its files writable (`HEAD`, `index`, `COMMIT_EDITMSG`),
//! `objects/`, `refs/` and `logs/` read-write, `hooks/`, `config` and `modules/` read-only.
//!
//! The wire is unchanged: `**/.git/**` still denies serving these files as URIs, and the
//! tripwire fingerprints the common directory's `config` (`src/tripwire/`).

use std::path::{Path, PathBuf};

use super::Access;
use super::plan::Grant;
use super::profile::Rights;

/// Largest `.git` file or `commondir` file read (they hold one path).
const MAX_POINTER: u64 = 4096;

/// The git directory a root's `.git` file points to, and the common directory (the main
/// repository's `.git`) when it has one; `None` when the root's `.git` is not such a file.
pub(crate) fn linked_dirs(root: &Path) -> Option<(PathBuf, Option<PathBuf>)> {
    let dot_git = root.join(".git");
    let meta = std::fs::symlink_metadata(&dot_git).ok()?;
    if !meta.is_file() || meta.len() > MAX_POINTER {
        return None;
    }
    let text = std::fs::read_to_string(&dot_git).ok()?;
    let target = text.lines().next()?.strip_prefix("gitdir:")?.trim();
    let gitdir = std::fs::canonicalize(root.join(target)).ok()?;
    if !gitdir.is_dir() {
        return None;
    }
    let common = std::fs::metadata(gitdir.join("commondir"))
        .ok()
        .filter(|m| m.is_file() && m.len() <= MAX_POINTER)
        .and_then(|_| std::fs::read_to_string(gitdir.join("commondir")).ok())
        .and_then(|c| std::fs::canonicalize(gitdir.join(c.trim())).ok())
        .filter(|c| c.is_dir());
    Some((gitdir, common))
}

/// What a root's linked git directories get: grants, and paths inside them (or the root's
/// `.git` file) the launcher keeps read-only (`deny.rs`: a read-only bind in the private
/// mount namespace, else the Landlock carve-out).
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub(crate) struct GitDirs {
    pub grants: Vec<Grant>,
    pub read_only: Vec<PathBuf>,
}

/// The grants for a root's linked git directories (see the module doc); none when the
/// root's `.git` is a directory or absent, or when they lie inside the root already.
pub(crate) fn grants(root: &Path, access: Access) -> GitDirs {
    let mut out = GitDirs::default();
    let Some((gitdir, common)) = linked_dirs(root) else {
        return out;
    };
    let real_root = std::fs::canonicalize(root).unwrap_or_else(|_| root.to_owned());
    let writable = access == Access::ReadWrite;
    if writable {
        // Rewritten, the `.git` file would send the user's next git command in this
        // checkout to a git directory the server made, with hooks of its own.
        out.read_only.push(real_root.join(".git"));
    }
    if common.is_some() && !gitdir.starts_with(&real_root) {
        let rights = if writable {
            Rights::ReadWrite
        } else {
            Rights::ReadExec
        };
        let why = format!(
            "the git directory of the linked worktree {} (its HEAD, index and logs), as its \
             own .git/ would be",
            root.display()
        );
        out.grants.push(git_grant(&gitdir, rights, &why));
        if writable {
            // Its pointers back: rewritten, they would redirect git as the `.git` file
            // would.
            for f in ["commondir", "gitdir"] {
                push_existing(&mut out.read_only, gitdir.join(f));
            }
        }
    }
    // The directory with the config and hooks: a linked worktree's shared one, else the
    // one the `.git` file names (a submodule's).
    let (dir, own, what, whose, written) = match &common {
        Some(common) => (
            common,
            Some(gitdir.as_path()),
            format!(
                "the main repository's .git that the worktree {} shares (config, HEAD, \
                 packed-refs, hooks)",
                root.display()
            ),
            "the shared",
            "; files in it can be written (GitPython writes a commit's message there), never \
             a new directory; its hooks/, config and modules/ stay read-only",
        ),
        None => (
            &gitdir,
            None,
            format!("the git directory {} names (a submodule's)", root.display()),
            "its",
            ": its files (HEAD, index, a commit's message) can be written, never a new \
             directory; its hooks/, config and modules/ stay read-only",
        ),
    };
    if !dir.starts_with(&real_root) {
        let files = writable && files_may_be_written(dir);
        let unwritable = ", read only: its hooks/ and config stay unwritable";
        let (rights, how) = if files {
            (Rights::WriteFiles, written)
        } else {
            (Rights::ReadExec, unwritable)
        };
        out.grants
            .push(git_grant(dir, rights, &format!("{what}{how}")));
        if files {
            protect(dir, own, &mut out.read_only);
        }
        // What a commit, a branch or a tag writes.
        for part in ["objects", "refs", "logs"] {
            let p = dir.join(part);
            if writable && p.is_dir() {
                let why = format!(
                    "{whose} `{part}/`, written by a commit, a branch or a tag in {}",
                    root.display()
                );
                out.grants.push(git_grant(&p, Rights::ReadWrite, &why));
            }
        }
    }
    out
}

/// Whether the files of a git directory outside the root may be made writable
/// ([`Rights::WriteFiles`]): only when its `config` can be read and does not turn on
/// per-worktree configuration (`extensions.worktreeConfig`), since a `config.worktree`
/// the server creates would then be read as configuration (hooks path, fsmonitor: code
/// that runs outside the sandbox). Fails closed: any mention of it, or no readable
/// config, keeps the directory read-only.
fn files_may_be_written(dir: &Path) -> bool {
    let Ok(text) = std::fs::read_to_string(dir.join("config")) else {
        return false;
    };
    !text.to_ascii_lowercase().contains("worktreeconfig")
}

/// The parts of a git directory that stay read-only when its files are writable: what
/// git runs or reads as configuration (`hooks/`, `config`), the git directories of its
/// submodules (`modules/`, each with hooks and config of its own), and the other linked
/// worktrees' directories (`worktrees/<name>`, whose `commondir` and `gitdir` redirect
/// git), all but `own`.
fn protect(dir: &Path, own: Option<&Path>, out: &mut Vec<PathBuf>) {
    for name in ["hooks", "config", "modules"] {
        push_existing(out, dir.join(name));
    }
    if let Ok(entries) = std::fs::read_dir(dir.join("worktrees")) {
        for e in entries.flatten() {
            let p = e.path();
            if own.is_none_or(|o| o != p) {
                push_existing(out, p);
            }
        }
    }
}

fn git_grant(path: &Path, rights: Rights, why: &str) -> Grant {
    Grant::new(path, rights, "root-git", why)
}

fn push_existing(out: &mut Vec<PathBuf>, p: PathBuf) {
    if std::fs::symlink_metadata(&p).is_ok() {
        out.push(p);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn git(dir: &Path, args: &[&str]) {
        let ok = std::process::Command::new("git")
            .args(args)
            .current_dir(dir)
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .env("HOME", dir)
            .output()
            .map(|o| o.status.success())
            .unwrap_or(false);
        assert!(ok, "git {args:?}");
    }

    #[test]
    fn a_linked_worktree_gets_its_gitdir_and_the_shared_parts_of_the_common_dir() {
        let t = tempfile::tempdir().unwrap();
        let base = std::fs::canonicalize(t.path()).unwrap();
        let main = base.join("main");
        std::fs::create_dir_all(&main).unwrap();
        git(&main, &["init", "-q"]);
        git(
            &main,
            &[
                "-c",
                "user.name=a",
                "-c",
                "user.email=a@b",
                "commit",
                "-q",
                "--allow-empty",
                "-m",
                "i",
            ],
        );
        git(&main, &["worktree", "add", "-q", "../wt"]);
        let wt = base.join("wt");
        let dirs = grants(&wt, Access::ReadWrite);
        let g = &dirs.grants;
        let find = |p: PathBuf| g.iter().find(|x| x.path == p).map(|x| x.rights);
        assert_eq!(
            find(main.join(".git/worktrees/wt")),
            Some(Rights::ReadWrite),
            "{g:#?}"
        );
        // Its files writable (GitPython's COMMIT_EDITMSG), never a new directory; hooks/,
        // config, and the pointers that redirect git read-only.
        assert_eq!(find(main.join(".git")), Some(Rights::WriteFiles), "{g:#?}");
        for p in [
            main.join(".git/hooks"),
            main.join(".git/config"),
            main.join(".git/worktrees/wt/commondir"),
            main.join(".git/worktrees/wt/gitdir"),
            wt.join(".git"),
        ] {
            assert!(
                dirs.read_only.contains(&p),
                "{p:?} in {:#?}",
                dirs.read_only
            );
        }
        assert!(!dirs.read_only.contains(&main.join(".git/worktrees/wt")));
        assert_eq!(find(main.join(".git/objects")), Some(Rights::ReadWrite));
        assert_eq!(find(main.join(".git/refs")), Some(Rights::ReadWrite));
        assert_eq!(
            find(main.join(".git/hooks")),
            None,
            "hooks are never writable"
        );
        // Read-only roots: nothing writable.
        let ro = grants(&wt, Access::ReadOnly).grants;
        assert!(
            ro.iter()
                .all(|x| x.rights != Rights::ReadWrite && x.rights != Rights::WriteFiles),
            "{ro:#?}"
        );
        // A repository with per-worktree configuration: a `config.worktree` the server
        // made would be read as configuration, so the shared directory stays read-only.
        git(&main, &["config", "extensions.worktreeConfig", "true"]);
        let g = grants(&wt, Access::ReadWrite).grants;
        assert!(
            g.iter()
                .any(|x| x.path == main.join(".git") && x.rights == Rights::ReadExec),
            "{g:#?}"
        );
        // The main checkout itself (`.git` a directory) needs nothing more.
        assert_eq!(grants(&main, Access::ReadWrite), GitDirs::default());
        // A `.git` file pointing nowhere: nothing.
        let odd = base.join("odd");
        std::fs::create_dir_all(&odd).unwrap();
        std::fs::write(odd.join(".git"), "gitdir: /nonexistent/x\n").unwrap();
        assert_eq!(grants(&odd, Access::ReadWrite), GitDirs::default());
    }
}
