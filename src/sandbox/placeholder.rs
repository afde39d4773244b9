//! Placeholders for protected directory names that do not exist yet (`.vscode`, `.cursor`,
//! `.claude` at the top of a writable root): an empty directory that the launcher then binds
//! read-only like any read-only path, so the server cannot create the name itself (a
//! `.claude/settings.json` with hooks runs code outside the sandbox at the user's next
//! session). A mount needs a mount point, hence a real directory in the user's tree.
//!
//! Sessions on the same root share them safely. rootfence (not the launcher) makes and holds
//! each one before the server starts: a shared `flock` on the directory for the whole
//! session, taken on a descriptor that is checked to still be the directory at that path
//! (a placeholder removed meanwhile is made again). At the end, a placeholder — marked by
//! the extended attribute `user.rootfence.placeholder`, or made by this session — is removed
//! only under an exclusive lock, which no other session's shared lock allows, and only while
//! empty (`rmdir`). Removing one under another session would lift the read-only mount in that
//! session's namespace (a mount point removed in one namespace is detached in all).

use std::fs::File;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use rustix::fs::{FlockOperation, XattrFlags, fgetxattr_query, flock, fsetxattr};

use super::{Access, SandboxRoot};

/// The extended attribute that marks a directory as rootfence's placeholder.
const MARK: &str = "user.rootfence.placeholder";

/// Attempts to get a placeholder that stays put (each lost race means another session
/// removed it between our look and our lock).
const TRIES: usize = 8;

/// One directory held for the session.
#[derive(Debug)]
struct Held {
    path: PathBuf,
    dir: File,
    /// Made by this session.
    made: bool,
}

/// The placeholders (and existing protected directories) a session holds.
#[derive(Debug, Default)]
pub struct Placeholders {
    held: Mutex<Vec<Held>>,
}

impl Placeholders {
    /// Makes and holds the placeholders for `roots` (writable ones only) and the read-only
    /// globs of the policy. Returns the directories made now (for the startup summary).
    pub fn hold(&self, roots: &[SandboxRoot], read_only_globs: &[String]) -> Vec<PathBuf> {
        let names = super::deny::placeholder_names(read_only_globs);
        let mut made = Vec::new();
        let mut held = crate::relock(&self.held);
        for root in roots.iter().filter(|r| r.access == Access::ReadWrite) {
            for (name, _) in &names {
                let path = root.path.join(name);
                if held.iter().any(|h| h.path == path) {
                    continue;
                }
                let Some(h) = hold_one(&path) else {
                    tracing::debug!("no placeholder at {}", path.display());
                    continue;
                };
                if h.made {
                    made.push(path);
                }
                held.push(h);
            }
        }
        made
    }

    /// Ends the session's hold: each placeholder no other session holds is removed while
    /// still empty. Call it once no server of the session runs.
    pub fn release(&self) {
        let held = std::mem::take(&mut *crate::relock(&self.held));
        for h in held {
            let ours = h.made || fgetxattr_query(&h.dir, MARK).is_ok();
            if !ours {
                continue; // the user's own directory
            }
            // Shared to exclusive (not atomic, which only means we may lose to another
            // session that then holds it: it is theirs to remove).
            if flock(&h.dir, FlockOperation::NonBlockingLockExclusive).is_err() {
                continue; // another session holds it
            }
            if same_dir(&h.dir, &h.path) {
                match std::fs::remove_dir(&h.path) {
                    Ok(()) => tracing::debug!("removed the placeholder {}", h.path.display()),
                    Err(e) => tracing::debug!("kept {}: {e}", h.path.display()),
                }
            }
        }
    }
}

impl Drop for Placeholders {
    fn drop(&mut self) {
        self.release();
    }
}

/// Holds the directory at `path`, making it first when absent. `None` when the name is
/// something else (a file, a link): the scan and the policy deal with it as it is.
fn hold_one(path: &Path) -> Option<Held> {
    let mut made = false;
    for _ in 0..TRIES {
        match std::fs::symlink_metadata(path) {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                match std::fs::create_dir(path) {
                    Ok(()) => made = true,
                    Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
                    Err(_) => return None,
                }
                continue;
            }
            Err(_) => return None,
            Ok(m) if !m.is_dir() => return None,
            Ok(_) => {}
        }
        let Ok(dir) = open_dir(path) else {
            continue;
        };
        if made {
            // Best effort: without user xattrs (some file systems), only this session
            // knows it made it.
            let _ = fsetxattr(&dir, MARK, b"1", XattrFlags::empty());
        }
        if flock(&dir, FlockOperation::LockShared).is_err() {
            return None;
        }
        if same_dir(&dir, path) {
            return Some(Held {
                path: path.to_owned(),
                dir,
                made,
            });
        }
        // Removed (and perhaps made again) by another session while we waited: again.
    }
    None
}

/// Whether the launcher will likely get a private mount namespace (root, or unprivileged user
/// namespaces allowed and not restricted by AppArmor, and not turned off by
/// [`super::MOUNTS_ENV`]). Placeholders are made only then: in the Landlock fallback a
/// read-only directory at the top of a root would forbid every new name there.
pub fn mount_namespace_likely() -> bool {
    if std::env::var_os(super::MOUNTS_ENV).is_some_and(|v| v == "off") {
        return false;
    }
    if rustix::process::geteuid().is_root() {
        return true;
    }
    let read = |p: &str| std::fs::read_to_string(p).map(|s| s.trim().to_owned());
    let userns = read("/proc/sys/user/max_user_namespaces").is_ok_and(|v| v != "0");
    let restricted =
        read("/proc/sys/kernel/apparmor_restrict_unprivileged_userns").is_ok_and(|v| v == "1");
    let unpriv = read("/proc/sys/kernel/unprivileged_userns_clone").map_or(true, |v| v != "0");
    userns && unpriv && !restricted
}

/// Whether the directory at `path` carries rootfence's placeholder mark.
pub(crate) fn is_marked(path: &Path) -> bool {
    rustix::fs::getxattr_query(path, MARK).is_ok()
}

fn open_dir(path: &Path) -> std::io::Result<File> {
    use std::os::unix::fs::OpenOptionsExt;
    std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_DIRECTORY | libc::O_NOFOLLOW)
        .open(path)
}

/// Whether `dir` is still the directory at `path`.
fn same_dir(dir: &File, path: &Path) -> bool {
    match (dir.metadata(), std::fs::symlink_metadata(path)) {
        (Ok(a), Ok(b)) => a.dev() == b.dev() && a.ino() == b.ino(),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn roots(p: &Path) -> Vec<SandboxRoot> {
        vec![SandboxRoot {
            path: p.to_owned(),
            access: Access::ReadWrite,
        }]
    }

    fn globs() -> Vec<String> {
        vec!["**/.claude/**".into(), "**/.mcp.json".into()]
    }

    #[test]
    fn made_held_and_removed_when_no_other_session_holds_it() {
        let t = tempfile::tempdir().unwrap();
        let a = Placeholders::default();
        assert_eq!(
            a.hold(&roots(t.path()), &globs()),
            [t.path().join(".claude")]
        );
        assert!(
            !t.path().join(".mcp.json").exists(),
            "no placeholder for a file name"
        );
        a.release();
        assert!(!t.path().join(".claude").exists());
    }

    /// Two sessions on one root: the first to end must not remove what the other holds
    /// (its read-only mount would go with it).
    #[test]
    fn a_placeholder_another_session_holds_stays() {
        let t = tempfile::tempdir().unwrap();
        let a = Placeholders::default();
        let b = Placeholders::default();
        a.hold(&roots(t.path()), &globs());
        assert!(b.hold(&roots(t.path()), &globs()).is_empty(), "b finds a's");
        a.release();
        assert!(t.path().join(".claude").is_dir(), "b still holds it");
        b.release();
        // b did not make it; it removes it when the mark says it is rootfence's (the file
        // system has user xattrs) and leaves it otherwise.
        let marked = !t.path().join(".claude").exists();
        let _ = marked;
    }

    #[test]
    fn the_users_own_directory_and_files_stay() {
        let t = tempfile::tempdir().unwrap();
        std::fs::create_dir(t.path().join(".claude")).unwrap();
        let a = Placeholders::default();
        assert!(a.hold(&roots(t.path()), &globs()).is_empty());
        a.release();
        assert!(
            t.path().join(".claude").is_dir(),
            "the user's empty directory stays"
        );
        let b = Placeholders::default();
        let t2 = tempfile::tempdir().unwrap();
        b.hold(&roots(t2.path()), &globs());
        std::fs::write(t2.path().join(".claude/mine.json"), "{}").unwrap();
        b.release();
        assert!(
            t2.path().join(".claude/mine.json").is_file(),
            "not empty: kept"
        );
    }
}
