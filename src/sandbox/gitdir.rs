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
//! - the common directory: **read** as a whole (git reads its `config`, `HEAD`,
//!   `packed-refs`, `info/`, and runs its `hooks/`: read-exec), and for a writable root
//!   read-write on exactly `objects/`, `refs/` and `logs/` (what a commit, a branch or a
//!   tag writes) and an existing `COMMIT_EDITMSG` (GitPython writes a commit's message
//!   there, not in the worktree's own directory). Its `hooks/` and `config` stay read-only, as the read-only globs keep a
//!   root's own `.git/hooks/**` and `.git/config`: a file written there runs code outside
//!   the sandbox later (at the user's next commit in the main checkout).
//!
//! A git directory without `commondir` (a submodule opened as the root) is a whole
//! repository of its own: it is granted read-exec, with `objects/`, `refs/` and `logs/`
//! read-write; its `index` cannot be rewritten (git reads the state, a commit there fails),
//! since a writable grant of the directory would also make its `hooks/` and `config`
//! writable.
//!
//! The wire is unchanged: `**/.git/**` still denies serving these files as URIs, and the
//! tripwire fingerprints the common directory's `config` (`src/tripwire/`).

use std::path::{Path, PathBuf};

use super::Access;
use super::profile::Rights;

/// Largest `.git` file or `commondir` file read (they hold one path).
const MAX_POINTER: u64 = 4096;

/// One grant for a root's git directories: path, rights, why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct GitGrant {
    pub path: PathBuf,
    pub rights: Rights,
    pub why: String,
}

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

/// The grants for a root's linked git directories (see the module doc); none when the
/// root's `.git` is a directory or absent, or when they lie inside the root already.
pub(crate) fn grants(root: &Path, access: Access) -> Vec<GitGrant> {
    let Some((gitdir, common)) = linked_dirs(root) else {
        return Vec::new();
    };
    let real_root = std::fs::canonicalize(root).unwrap_or_else(|_| root.to_owned());
    let writable = access == Access::ReadWrite;
    let mut out = Vec::new();
    let writable_parts = |dir: &Path, whose: &str, out: &mut Vec<GitGrant>| {
        if !writable {
            return;
        }
        // GitPython (mcp-server-git) writes a commit's message to the common directory's
        // `COMMIT_EDITMSG`: that file alone, when it exists (a file cannot be created in a
        // directory granted read-only).
        let msg = dir.join("COMMIT_EDITMSG");
        if std::fs::symlink_metadata(&msg).is_ok_and(|m| m.is_file()) {
            out.push(GitGrant {
                path: msg,
                rights: Rights::ReadWrite,
                why: "the message of a commit, which GitPython writes there".into(),
            });
        }
        for part in ["objects", "refs", "logs"] {
            let p = dir.join(part);
            if p.is_dir() {
                out.push(GitGrant {
                    path: p,
                    rights: Rights::ReadWrite,
                    why: format!(
                        "{whose} `{part}/`, written by a commit, a branch or a tag in the \
                         worktree {}",
                        root.display()
                    ),
                });
            }
        }
    };
    match common {
        Some(common) => {
            if !gitdir.starts_with(&real_root) {
                out.push(GitGrant {
                    path: gitdir.clone(),
                    rights: if writable {
                        Rights::ReadWrite
                    } else {
                        Rights::ReadExec
                    },
                    why: format!(
                        "the git directory of the linked worktree {} (its HEAD, index and \
                         logs), as its own .git/ would be",
                        root.display()
                    ),
                });
            }
            if !common.starts_with(&real_root) {
                out.push(GitGrant {
                    path: common.clone(),
                    rights: Rights::ReadExec,
                    why: format!(
                        "the main repository's .git that the worktree {} shares (config, \
                         HEAD, packed-refs, hooks), read only: its hooks/ and config stay \
                         unwritable",
                        root.display()
                    ),
                });
                writable_parts(&common, "the shared", &mut out);
            }
        }
        None => {
            if !gitdir.starts_with(&real_root) {
                out.push(GitGrant {
                    path: gitdir.clone(),
                    rights: Rights::ReadExec,
                    why: format!(
                        "the git directory {} names (a submodule's), read only: its hooks/ \
                         and config stay unwritable, so its index cannot be rewritten",
                        root.display()
                    ),
                });
                writable_parts(&gitdir, "its", &mut out);
            }
        }
    }
    out
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
        let g = grants(&wt, Access::ReadWrite);
        let find = |p: PathBuf| g.iter().find(|x| x.path == p).map(|x| x.rights);
        assert_eq!(
            find(main.join(".git/worktrees/wt")),
            Some(Rights::ReadWrite),
            "{g:#?}"
        );
        assert_eq!(find(main.join(".git")), Some(Rights::ReadExec), "{g:#?}");
        assert_eq!(find(main.join(".git/objects")), Some(Rights::ReadWrite));
        assert_eq!(find(main.join(".git/refs")), Some(Rights::ReadWrite));
        assert_eq!(
            find(main.join(".git/hooks")),
            None,
            "hooks are never writable"
        );
        // Read-only roots: nothing writable.
        let ro = grants(&wt, Access::ReadOnly);
        assert!(ro.iter().all(|x| x.rights != Rights::ReadWrite), "{ro:#?}");
        // The main checkout itself (`.git` a directory) needs nothing more.
        assert!(grants(&main, Access::ReadWrite).is_empty());
        // A `.git` file pointing nowhere: nothing.
        let odd = base.join("odd");
        std::fs::create_dir_all(&odd).unwrap();
        std::fs::write(odd.join(".git"), "gitdir: /nonexistent/x\n").unwrap();
        assert!(grants(&odd, Access::ReadWrite).is_empty());
    }
}
