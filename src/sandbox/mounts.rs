//! The launcher's private mount namespace: each hidden path inside a root is covered by an
//! object that gives nothing away (`/dev/null` on a read-only `nodev` mount for a file,
//! which no one can open; an empty read-only tmpfs for a directory), each read-only path is bound onto itself read-only, and the directories
//! between a root and a read-only path are pinned (bound onto themselves), so they cannot
//! be renamed away and replaced. The roots themselves stay granted whole, so names the
//! server creates later keep working.
//!
//! Only the server's namespace sees these mounts; they vanish with it. Once Landlock
//! applies, the server cannot unmount, mount or remount anything (Landlock refuses every
//! mount operation to a restricted process), and a nested namespace cannot separate them
//! either (mounts inherited from a more privileged namespace are locked together).
//!
//! The namespace needs `CAP_SYS_ADMIN`: as root, a mount namespace alone; otherwise a user
//! namespace mapping the user to itself (so ownership and `getuid()` are unchanged). When
//! neither is allowed (user namespaces disabled, an AppArmor restriction, a container's
//! seccomp filter), [`cover`] says why and every path falls back to the Landlock
//! carve-out. `ROOTFENCE_SANDBOX_MOUNTS=off` forces that fallback.
//!
//! Every mount target is named through a descriptor (`/proc/self/fd/N` of an `O_PATH`
//! open relative to its parent's descriptor with `O_NOFOLLOW`), never by a path string
//! walked again, so a directory swapped for a symbolic link meanwhile cannot redirect it.

use std::ffi::OsStr;
use std::os::fd::AsRawFd;
use std::path::Path;

use cap_fs_ext::{FollowSymlinks, OpenOptionsFollowExt};
use cap_std::fs::{Dir, File, OpenOptions, OpenOptionsExt};
use nix::mount::{MsFlags, mount};
use nix::sched::{CloneFlags, unshare};
use nix::sys::statvfs::{FsFlags, fstatvfs};

use super::scan::open_rel;

/// The environment variable that turns the mount namespace off (the Landlock carve-out
/// then does all the work), e.g. to see what a machine without user namespaces gets.
pub const MOUNTS_ENV: &str = "ROOTFENCE_SANDBOX_MOUNTS";

/// What to cover, relative to one root's descriptor.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Cover {
    /// Replace with an empty read-only object.
    Hide,
    /// Bind onto itself read-only.
    ReadOnly,
    /// Bind onto itself (read-write): a mount point cannot be renamed or removed.
    Pin,
}

/// Enters a private mount namespace. Called once, before any [`apply`], only when there
/// is something to cover. Returns how, for the report: a mount namespace (rootfence runs
/// with `CAP_SYS_ADMIN`), or one in a user namespace mapping the user to itself.
pub(crate) fn enter() -> Result<&'static str, String> {
    if std::env::var_os(MOUNTS_ENV).is_some_and(|v| v == "off") {
        return Err(format!("{MOUNTS_ENV}=off"));
    }
    let uid = nix::unistd::geteuid();
    let gid = nix::unistd::getegid();
    let ns = if uid.is_root() && unshare(CloneFlags::CLONE_NEWNS).is_ok() {
        "private mount namespace"
    } else {
        unshare(CloneFlags::CLONE_NEWUSER | CloneFlags::CLONE_NEWNS)
            .map_err(|e| format!("no user namespace ({e}); they may be disabled or restricted"))?;
        map_to_self(uid, gid)?;
        "private mount namespace (in a user namespace)"
    };
    // Nothing mounted from here on may propagate back to the system's namespace.
    mount(
        None::<&str>,
        "/",
        None::<&str>,
        MsFlags::MS_REC | MsFlags::MS_SLAVE,
        None::<&str>,
    )
    .map_err(|e| format!("cannot make the mount namespace private: {e}"))?;
    Ok(ns)
}

/// In a new user namespace: maps the user (and group) to themselves, so nothing the server
/// sees changes.
pub(super) fn map_to_self(uid: nix::unistd::Uid, gid: nix::unistd::Gid) -> Result<(), String> {
    let maps = [
        ("/proc/self/setgroups", "deny".to_owned()),
        ("/proc/self/uid_map", format!("{uid} {uid} 1")),
        ("/proc/self/gid_map", format!("{gid} {gid} 1")),
    ];
    for (file, text) in maps {
        // setgroups is absent on kernels before 3.19, where gid_map needs no "deny".
        if let Err(e) = std::fs::write(file, text)
            && file != "/proc/self/setgroups"
        {
            return Err(format!("cannot write {file}: {e}"));
        }
    }
    Ok(())
}

/// Covers one path (`rel`, relative to `root`). `empty_dir` is the first hidden directory
/// already covered (later ones are bound from it: one tmpfs for all).
pub(crate) fn apply(
    root: &Dir,
    rel: &Path,
    how: Cover,
    empty_dir: &mut Option<File>,
) -> Result<(), String> {
    let (parent, name) = split(root, rel)?;
    let target = open_leaf(&parent, name).map_err(|e| format!("cannot open: {e}"))?;
    let is_dir = target.metadata().map(|m| m.is_dir()).unwrap_or(false);
    match how {
        Cover::Pin => bind(&fd_path(&target), &target),
        Cover::ReadOnly => {
            bind(&fd_path(&target), &target)?;
            remount(&parent, name, MsFlags::MS_RDONLY)
        }
        Cover::Hide if !is_dir => {
            // `/dev/null` on a `nodev` mount: opening it fails with EACCES, for reading and
            // writing alike (a read-only mount does not stop writes to a device).
            bind(Path::new("/dev/null"), &target)?;
            remount(&parent, name, MsFlags::MS_RDONLY | MsFlags::MS_NODEV)
        }
        Cover::Hide => {
            if let Some(empty) = empty_dir {
                return bind(&fd_path(empty), &target);
            }
            mount(
                Some("rootfence-hidden"),
                fd_path(&target).as_path(),
                Some("tmpfs"),
                MsFlags::MS_RDONLY | MsFlags::MS_NOSUID | MsFlags::MS_NODEV | MsFlags::MS_NOEXEC,
                Some("size=4k,nr_inodes=1,mode=0555"),
            )
            .map_err(|e| format!("cannot mount an empty directory over it: {e}"))?;
            *empty_dir = Some(open_leaf(&parent, name).map_err(|e| e.to_string())?);
            Ok(())
        }
    }
}

/// The parent directory of `rel` (opened without following links) and its last name.
fn split<'a>(root: &Dir, rel: &'a Path) -> Result<(Dir, &'a OsStr), String> {
    let name = rel
        .file_name()
        .ok_or_else(|| "a root itself is never covered".to_owned())?;
    let parent = open_rel(root, rel.parent().unwrap_or(Path::new("")))
        .map_err(|e| format!("cannot open its directory: {e}"))?;
    Ok((parent, name))
}

/// `O_PATH | O_NOFOLLOW` beneath `parent`: the object itself, or the root of a mount on it.
fn open_leaf(parent: &Dir, name: &OsStr) -> std::io::Result<File> {
    let f = parent.open_with(
        name,
        OpenOptions::new()
            .read(true)
            .follow(FollowSymlinks::No)
            .custom_flags(libc::O_PATH),
    )?;
    if f.metadata()?.file_type().is_symlink() {
        return Err(std::io::Error::other("it is a symbolic link"));
    }
    Ok(f)
}

fn fd_path(f: &File) -> std::path::PathBuf {
    format!("/proc/self/fd/{}", f.as_raw_fd()).into()
}

fn bind(source: &Path, target: &File) -> Result<(), String> {
    mount(
        Some(source),
        fd_path(target).as_path(),
        None::<&str>,
        MsFlags::MS_BIND,
        None::<&str>,
    )
    .map_err(|e| format!("cannot bind-mount over it: {e}"))
}

/// Remounts the mount now at `parent/name` with `flags` (read-only, ...). A bind mount
/// ignores them, so this is a second step, on a descriptor of the new mount's root (the
/// old descriptor still names what lies beneath). Flags the kernel locks in a user
/// namespace (`nosuid`, `nodev`, `noexec`, atime) must be repeated or the remount is
/// refused.
fn remount(parent: &Dir, name: &OsStr, flags: MsFlags) -> Result<(), String> {
    let top = open_leaf(parent, name).map_err(|e| format!("cannot reopen: {e}"))?;
    let locked = fstatvfs(&top)
        .map(|s| {
            [
                (FsFlags::ST_NOSUID, MsFlags::MS_NOSUID),
                (FsFlags::ST_NODEV, MsFlags::MS_NODEV),
                (FsFlags::ST_NOEXEC, MsFlags::MS_NOEXEC),
                (FsFlags::ST_NOATIME, MsFlags::MS_NOATIME),
                (FsFlags::ST_NODIRATIME, MsFlags::MS_NODIRATIME),
                (FsFlags::ST_RELATIME, MsFlags::MS_RELATIME),
            ]
            .into_iter()
            .filter(|(fs, _)| s.flags().contains(*fs))
            .fold(MsFlags::empty(), |m, (_, ms)| m | ms)
        })
        .unwrap_or(MsFlags::empty());
    mount(
        None::<&str>,
        fd_path(&top).as_path(),
        None::<&str>,
        MsFlags::MS_REMOUNT | MsFlags::MS_BIND | flags | locked,
        None::<&str>,
    )
    .map_err(|e| format!("cannot make it read-only: {e}"))
}
