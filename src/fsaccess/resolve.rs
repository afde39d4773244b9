//! Resolution beneath a root: one `openat2` when no link is on the way, else a walk that
//! opens one name at a time beneath held descriptors and reads each link itself (see the
//! parent module for the rules and why they keep the kernel deciding).

use std::ffi::{OsStr, OsString};
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Component, Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};

use rustix::fs::{OFlags, ResolveFlags, fstat, openat, openat2, readlinkat};
use rustix::io::Errno;

use super::{BENEATH, Failed, Failure, FileKind, Found, NO_MODE, SymlinkStance};
use super::{errno_failed, failed, or_dot};

/// The most symbolic links one resolution follows: the kernel's own limit (`MAXSYMLINKS`).
pub(crate) const MAX_LINKS: u32 = 40;

/// Set once `openat2` is known to be missing (Linux before 5.6): the walk does everything.
static NO_OPENAT2: AtomicBool = AtomicBool::new(false);

/// A root as resolution needs it: its directory descriptor, and the absolute spellings by
/// which a symbolic link may name a place inside it (its real path, then its declared path).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Beneath<'a> {
    pub(crate) dir: BorrowedFd<'a>,
    prefixes: [Option<&'a Path>; 2],
}

impl<'a> Beneath<'a> {
    /// A root whose absolute links are followed when they name a place under `real` or
    /// `declared` (absolute, canonical paths).
    pub(crate) fn new(dir: BorrowedFd<'a>, real: &'a Path, declared: &'a Path) -> Beneath<'a> {
        let declared = (declared != real).then_some(declared);
        Beneath {
            dir,
            prefixes: [Some(real), declared],
        }
    }

    /// A root known only by its descriptor: every absolute link is an escape.
    pub(crate) fn bare(dir: BorrowedFd<'a>) -> Beneath<'a> {
        Beneath {
            dir,
            prefixes: [None, None],
        }
    }

    /// The part of an absolute link target below the root, if it names a place inside.
    fn inside<'t>(&self, target: &'t Path) -> Option<&'t Path> {
        self.prefixes
            .iter()
            .flatten()
            .find_map(|p| target.strip_prefix(p).ok())
    }
}

/// Where a resolution landed.
#[derive(Debug)]
pub(crate) struct Resolved {
    /// An `O_PATH` descriptor of what was found (the link itself when a final link was not
    /// followed).
    pub(crate) fd: OwnedFd,
    /// What it is.
    pub(crate) found: Found,
    /// Where it is below the root: every followed link resolved, no dot segments, "" for
    /// the root itself.
    pub(crate) path: PathBuf,
    /// Whether a symbolic link was followed on the way.
    pub(crate) via_link: bool,
}

/// Resolves `rel` (relative, canonical names) beneath the root. A final symbolic link is
/// followed when `follow_final` (and the stance allows it), else reported as a link.
pub(crate) fn resolve(
    b: &Beneath<'_>,
    rel: &Path,
    stance: SymlinkStance,
    follow_final: bool,
) -> Result<Resolved, Failed> {
    if !NO_OPENAT2.load(Ordering::Relaxed) {
        let flags = OFlags::PATH | OFlags::CLOEXEC | OFlags::NOFOLLOW;
        let how = BENEATH | ResolveFlags::NO_SYMLINKS;
        match openat2(b.dir, or_dot(rel), flags, NO_MODE, how) {
            Ok(fd) => {
                let found = Found::of(&fstat(&fd).map_err(errno_failed)?);
                if found.kind != FileKind::Symlink || !follow_final {
                    return Ok(Resolved {
                        fd,
                        found,
                        path: rel.to_path_buf(),
                        via_link: false,
                    });
                }
                // A final link to follow: the walk reads it.
            }
            // A link on the way (or a loop): the walk decides.
            Err(Errno::LOOP) => {}
            // A concurrent rename met during resolution: the walk does not care.
            Err(Errno::AGAIN) => {}
            Err(Errno::NOSYS) => NO_OPENAT2.store(true, Ordering::Relaxed),
            Err(e) => return Err(errno_failed(e)),
        }
    }
    walk(b, rel, stance, follow_final)
}

/// Opens `rel` beneath the root with `flags`, following no link at all (a path that
/// [`resolve`] produced has none left; one there now means it changed).
pub(crate) fn open_plain(b: &Beneath<'_>, rel: &Path, flags: OFlags) -> Result<OwnedFd, Errno> {
    let flags = flags | OFlags::CLOEXEC | OFlags::NOFOLLOW;
    if !NO_OPENAT2.load(Ordering::Relaxed) {
        let how = BENEATH | ResolveFlags::NO_SYMLINKS;
        match openat2(b.dir, or_dot(rel), flags, NO_MODE, how) {
            Err(Errno::NOSYS) => NO_OPENAT2.store(true, Ordering::Relaxed),
            other => return other,
        }
    }
    // Without openat2: open each directory with O_NOFOLLOW beneath the previous one.
    let mut cur: Option<OwnedFd> = None;
    let names: Vec<&OsStr> = rel
        .components()
        .filter_map(|c| match c {
            Component::Normal(n) => Some(n),
            _ => None,
        })
        .collect();
    let Some((last, parents)) = names.split_last() else {
        return openat(b.dir, ".", flags, NO_MODE);
    };
    for name in parents {
        let base = cur.as_ref().map_or(b.dir, |d| d.as_fd());
        let dir_flags = OFlags::PATH | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC;
        cur = Some(openat(base, *name, dir_flags, NO_MODE)?);
    }
    let base = cur.as_ref().map_or(b.dir, |d| d.as_fd());
    openat(base, *last, flags, NO_MODE)
}

/// Pushes the names of `path` onto `todo` so that they pop in order (`.` dropped, `..`
/// kept as a name the walk handles itself). `dir_after`: the path ends in `/` or `/.`,
/// where the kernel requires a directory (`ENOTDIR` otherwise); `components()` drops
/// both, so a `.` is pushed after the names, and the walk, which skips it, no longer sees
/// the name before it as the last one.
fn push_names(todo: &mut Vec<OsString>, path: &Path, dir_after: bool) {
    let start = todo.len();
    for c in path.components() {
        match c {
            Component::Normal(n) => todo.push(n.to_owned()),
            Component::ParentDir => todo.push(OsString::from("..")),
            Component::CurDir | Component::RootDir | Component::Prefix(_) => {}
        }
    }
    if dir_after {
        todo.push(OsString::from("."));
    }
    todo[start..].reverse();
}

/// Whether a link's text ends where the kernel requires a directory: `a/`, `a/.`, `.`.
fn ends_in_a_directory(target: &[u8]) -> bool {
    target.ends_with(b"/") || target.ends_with(b"/.") || target == b"."
}

/// One directory reached below the root by the walk. Its descriptor is opened lazily: a
/// run of directories reached in one `openat2` holds only the last one's.
struct Level {
    fd: Option<OwnedFd>,
    name: OsString,
}

/// The link-free path of the levels reached so far.
fn path_of(levels: &[Level]) -> PathBuf {
    levels.iter().map(|l| l.name.as_os_str()).collect()
}

/// Makes sure the deepest level has a descriptor (after `..` uncovered one opened in a run),
/// opening its link-free path beneath the root without following any link.
fn open_top(b: &Beneath<'_>, levels: &mut [Level]) -> Result<(), Failed> {
    let needs = levels.last().is_some_and(|l| l.fd.is_none());
    if needs {
        let path = path_of(levels);
        let fd = open_plain(b, &path, OFlags::PATH | OFlags::DIRECTORY).map_err(errno_failed)?;
        if let Some(top) = levels.last_mut() {
            top.fd = Some(fd);
        }
    }
    Ok(())
}

/// The walk: one name at a time beneath held descriptors, links read and followed by
/// rootfence (see the module docs of the parent). When the directory holding the last name
/// is reachable without any link (the usual place of a link is the last name), it is opened
/// in one call and the walk starts there.
fn walk(
    b: &Beneath<'_>,
    rel: &Path,
    stance: SymlinkStance,
    follow_final: bool,
) -> Result<Resolved, Failed> {
    if rel.is_absolute() {
        return Err(failed(Failure::Escape, "an absolute path leaves the root"));
    }
    let mut todo: Vec<OsString> = Vec::new();
    let mut levels: Vec<Level> = Vec::new();
    match (rel.parent(), rel.file_name()) {
        (Some(parent), Some(last)) if !parent.as_os_str().is_empty() => {
            match open_plain(b, parent, OFlags::PATH | OFlags::DIRECTORY) {
                Ok(fd) => {
                    levels.extend(parent.components().filter_map(|c| match c {
                        Component::Normal(n) => Some(Level {
                            fd: None,
                            name: n.to_owned(),
                        }),
                        _ => None,
                    }));
                    if let Some(top) = levels.last_mut() {
                        top.fd = Some(fd);
                    }
                    todo.push(last.to_owned());
                }
                Err(_) => push_names(&mut todo, rel, false),
            }
        }
        _ => push_names(&mut todo, rel, false),
    }
    let mut links = 0u32;
    let mut via_link = false;
    let mut buf: Vec<u8> = Vec::new();
    while let Some(name) = todo.pop() {
        if name == "." {
            // The mark of a link text ending in `/` or `/.` (see `push_names`): what came
            // before it was walked as a directory, and nothing is left to do here.
            continue;
        }
        if name == ".." {
            if levels.pop().is_none() {
                return Err(failed(Failure::Escape, "`..` leads above the root"));
            }
            continue;
        }
        open_top(b, &mut levels)?;
        let cur = levels
            .last()
            .and_then(|l| l.fd.as_ref())
            .map_or(b.dir, |fd| fd.as_fd());
        // A single name beneath a held directory, never following a link: the kernel
        // cannot be led out of `cur` by it.
        let fd = openat(
            cur,
            name.as_os_str(),
            OFlags::PATH | OFlags::NOFOLLOW | OFlags::CLOEXEC,
            NO_MODE,
        )
        .map_err(errno_failed)?;
        let found = Found::of(&fstat(&fd).map_err(errno_failed)?);
        let last = todo.is_empty();
        match found.kind {
            FileKind::Symlink if !last || follow_final => {
                if stance == SymlinkStance::Never {
                    return Err(failed(
                        Failure::SymlinkRefused,
                        "a symbolic link was met and symbolic links are not followed",
                    ));
                }
                links += 1;
                if links > MAX_LINKS {
                    return Err(failed(Failure::Loop, "too many levels of symbolic links"));
                }
                refuse_magic(cur, &name)?;
                // Read the link through its own descriptor: the one just judged a link.
                let target = readlinkat(&fd, "", std::mem::take(&mut buf)).map_err(errno_failed)?;
                let target_bytes = target.as_bytes();
                if target_bytes.is_empty() {
                    return Err(failed(Failure::NotFound, "an empty symbolic link"));
                }
                via_link = true;
                let target_path = Path::new(OsStr::from_bytes(target_bytes));
                let dir_after = ends_in_a_directory(target_bytes);
                if target_path.is_absolute() {
                    let Some(rest) = b.inside(target_path) else {
                        return Err(failed(
                            Failure::Escape,
                            "an absolute symbolic link names a place outside the root",
                        ));
                    };
                    levels.clear();
                    push_names(&mut todo, rest, dir_after);
                } else {
                    push_names(&mut todo, target_path, dir_after);
                }
                buf = target.into_bytes_with_nul();
                buf.clear();
            }
            FileKind::Directory => levels.push(Level { fd: Some(fd), name }),
            _ if !last => {
                return Err(failed(
                    Failure::NotADirectory,
                    "a name in the path is not a directory",
                ));
            }
            _ => {
                let mut path = path_of(&levels);
                path.push(&name);
                return Ok(Resolved {
                    fd,
                    found,
                    path,
                    via_link,
                });
            }
        }
    }
    // The walk ended on a directory (or on the root itself).
    open_top(b, &mut levels)?;
    let path = path_of(&levels);
    let fd = match levels.pop().and_then(|l| l.fd) {
        Some(fd) => fd,
        None => {
            openat(b.dir, ".", OFlags::PATH | OFlags::CLOEXEC, NO_MODE).map_err(errno_failed)?
        }
    };
    let found = Found::of(&fstat(&fd).map_err(errno_failed)?);
    Ok(Resolved {
        fd,
        found,
        path,
        via_link,
    })
}

/// Refuses a `/proc` magic link (`/proc/<pid>/{cwd,root,exe,fd/N}`): its text is not where
/// it leads. The kernel tells them apart: following `name` with `RESOLVE_NO_MAGICLINKS`
/// gives `ELOOP` for one (or for a loop, refused either way).
fn refuse_magic(cur: BorrowedFd<'_>, name: &OsStr) -> Result<(), Failed> {
    if NO_OPENAT2.load(Ordering::Relaxed) {
        return Ok(());
    }
    match openat2(cur, name, OFlags::PATH | OFlags::CLOEXEC, NO_MODE, BENEATH) {
        Err(Errno::LOOP) => Err(failed(
            Failure::Loop,
            "too many levels of symbolic links, or a /proc magic link",
        )),
        _ => Ok(()),
    }
}
