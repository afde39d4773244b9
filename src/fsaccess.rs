//! The only place in rootfence that opens files: the one ambient open of a root directory,
//! and capability-safe, non-blocking, size-capped resolution and reads beneath it.
//!
//! Owned by issue 3.
//!
//! Everything except [`open_root_dir`] works through a `cap_std::fs::Dir`: on Linux every
//! lookup is one `openat2(RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS)` relative to the root's
//! descriptor (cap-std falls back to a component-by-component walk on kernels without
//! `openat2`), so a symbolic link, `..` or absolute path that leads out is refused by the
//! kernel itself, at the moment of the open, with no check-then-use window.
//!
//! Resolution (for checks) uses `O_PATH`: it needs no read permission, has no side effect
//! on devices, and cannot block on a FIFO. Reads open in two steps: `O_PATH` + `fstat`
//! first, so anything but a regular file is refused without ever being opened for
//! reading; then `O_RDONLY | O_NONBLOCK | O_NOCTTY` and a second `fstat` that must show the
//! same inode (a swap in between is reported as [`FsError::Changed`]). The byte cap is an
//! error, never a truncation.

use std::io::{self, Read};
use std::path::{Component, Path, PathBuf};

use cap_fs_ext::{DirExt, FollowSymlinks, OpenOptionsFollowExt};
use cap_std::ambient_authority;
use cap_std::fs::{Dir, FileType, FileTypeExt, Metadata, MetadataExt, OpenOptions, OpenOptionsExt};

use crate::uri::Reason;

/// How symbolic links beneath a root are treated.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum SymlinkStance {
    /// Follow symbolic links whose whole resolution stays beneath the root (the kernel
    /// refuses any that lead out). The default.
    #[default]
    FollowWithinRoot,
    /// Follow no symbolic link at all, even one that stays inside.
    Never,
}

/// What a path resolves to.
#[non_exhaustive]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum FileKind {
    /// A regular file.
    Regular,
    /// A directory.
    Directory,
    /// A symbolic link (only seen where links are not followed).
    Symlink,
    /// A named pipe.
    Fifo,
    /// A unix socket.
    Socket,
    /// A character device.
    CharDevice,
    /// A block device.
    BlockDevice,
    /// Anything else.
    Other,
    /// Nothing exists there yet; its deepest existing ancestor is a directory inside the
    /// root.
    Missing,
}

impl FileKind {
    /// The stable lowercase name (`regular`, `directory`, `fifo`, …, `missing`).
    pub fn as_str(&self) -> &'static str {
        match self {
            FileKind::Regular => "regular",
            FileKind::Directory => "directory",
            FileKind::Symlink => "symlink",
            FileKind::Fifo => "fifo",
            FileKind::Socket => "socket",
            FileKind::CharDevice => "char_device",
            FileKind::BlockDevice => "block_device",
            FileKind::Other => "other",
            FileKind::Missing => "missing",
        }
    }

    fn of(ft: FileType) -> FileKind {
        if ft.is_file() {
            FileKind::Regular
        } else if ft.is_dir() {
            FileKind::Directory
        } else if ft.is_symlink() {
            FileKind::Symlink
        } else if ft.is_fifo() {
            FileKind::Fifo
        } else if ft.is_socket() {
            FileKind::Socket
        } else if ft.is_char_device() {
            FileKind::CharDevice
        } else if ft.is_block_device() {
            FileKind::BlockDevice
        } else {
            FileKind::Other
        }
    }
}

impl std::fmt::Display for FileKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A root directory opened once, with what identifies it.
#[derive(Debug)]
pub struct OpenedRoot {
    /// The capability every later lookup goes through.
    pub dir: Dir,
    /// The root's real path (symbolic links resolved) at the time it was opened.
    pub real_path: PathBuf,
    /// Device and inode of the directory, so its identity survives renames.
    pub dev: u64,
    /// See `dev`.
    pub ino: u64,
}

/// Opens a root directory: the single ambient open in rootfence.
///
/// # Ambient Authority
///
/// This resolves `path` against the whole filesystem, as the process sees it. It is meant
/// for roots the operator or host named, and is called once per root. The real path is
/// computed first and then opened; the directory opened must be the one `path` names
/// (same device and inode), or the open fails (the root was swapped while being opened).
pub fn open_root_dir(path: &Path) -> io::Result<OpenedRoot> {
    let real_path = std::fs::canonicalize(path)?;
    let dir = Dir::open_ambient_dir(&real_path, ambient_authority())?;
    let meta = dir.dir_metadata()?;
    if !meta.is_dir() {
        return Err(io::Error::new(
            io::ErrorKind::NotADirectory,
            "not a directory",
        ));
    }
    let named = std::fs::metadata(path)?;
    {
        use std::os::unix::fs::MetadataExt as _;
        if (named.dev(), named.ino()) != (meta.dev(), meta.ino()) {
            return Err(io::Error::other(
                "the directory changed while it was being opened; try again",
            ));
        }
    }
    Ok(OpenedRoot {
        dir,
        real_path,
        dev: meta.dev(),
        ino: meta.ino(),
    })
}

/// Whether the directory `path` names (ambiently) is still the one with this identity.
///
/// # Ambient Authority
///
/// Looks `path` up against the whole filesystem; used only to re-validate roots.
pub fn same_dir_identity(path: &Path, dev: u64, ino: u64) -> io::Result<bool> {
    use std::os::unix::fs::MetadataExt as _;
    let m = std::fs::metadata(path)?;
    Ok(m.is_dir() && (m.dev(), m.ino()) == (dev, ino))
}

/// What a resolution beneath a root found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Found {
    pub(crate) kind: FileKind,
    pub(crate) nlink: u64,
    pub(crate) dev: u64,
    pub(crate) ino: u64,
}

impl Found {
    fn of(m: &Metadata) -> Found {
        Found {
            kind: FileKind::of(m.file_type()),
            nlink: m.nlink(),
            dev: m.dev(),
            ino: m.ino(),
        }
    }
}

/// How a failed lookup beneath a root is classified.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Failure {
    Escape,
    Loop,
    SymlinkRefused,
    NotFound,
    NotADirectory,
    TooLong,
    Other,
}

impl Failure {
    pub(crate) fn reason(self) -> Reason {
        match self {
            Failure::Escape => Reason::SymlinkEscape,
            Failure::Loop => Reason::SymlinkLoop,
            Failure::SymlinkRefused => Reason::SymlinkRefused,
            Failure::NotFound => Reason::NotFound,
            Failure::NotADirectory => Reason::NotADirectory,
            Failure::TooLong => Reason::TooLong,
            Failure::Other => Reason::IoError,
        }
    }
}

/// Classifies an error from a cap-std lookup.
///
/// cap-std turns the kernel's `EXDEV` ("resolution would leave the directory") into a
/// `PermissionDenied` error that carries no OS error number; a real `EACCES` keeps its
/// number. That difference is how an escape is told apart from a permission problem.
pub(crate) fn classify(err: &io::Error, stance: SymlinkStance) -> Failure {
    match err.raw_os_error() {
        None if err.kind() == io::ErrorKind::PermissionDenied => Failure::Escape,
        Some(libc::EXDEV) => Failure::Escape,
        // With O_NOFOLLOW nothing can loop: ELOOP means "the name is a symbolic link".
        Some(libc::ELOOP) if stance == SymlinkStance::Never => Failure::SymlinkRefused,
        Some(libc::ELOOP) => Failure::Loop,
        Some(libc::ENOENT) => Failure::NotFound,
        Some(libc::ENOTDIR) => Failure::NotADirectory,
        Some(libc::ENAMETOOLONG) => Failure::TooLong,
        _ => Failure::Other,
    }
}

/// `"."` for the root itself, else the relative path: cap-std refuses an empty path.
fn or_dot(rel: &Path) -> &Path {
    if rel.as_os_str().is_empty() {
        Path::new(".")
    } else {
        rel
    }
}

/// Resolves `rel` beneath `dir` (following the final name per `stance`) without opening
/// it for reading, and reports what is there.
pub(crate) fn stat_beneath(
    dir: &Dir,
    rel: &Path,
    stance: SymlinkStance,
) -> Result<Found, (Failure, io::Error)> {
    match stance {
        SymlinkStance::FollowWithinRoot => dir
            .metadata(or_dot(rel))
            .map(|m| Found::of(&m))
            .map_err(|e| (classify(&e, stance), e)),
        SymlinkStance::Never => {
            let (parent, last) = walk_nofollow(dir, rel)?;
            let parent = parent.as_ref().unwrap_or(dir);
            let m = match last {
                Some(name) => parent.symlink_metadata(name),
                None => parent.dir_metadata(),
            }
            .map_err(|e| (classify(&e, stance), e))?;
            let found = Found::of(&m);
            if found.kind == FileKind::Symlink {
                return Err((Failure::SymlinkRefused, symlink_refused()));
            }
            Ok(found)
        }
    }
}

/// Where the kernel's resolution of `rel` beneath `dir` lands, relative to `dir`: every
/// symbolic link followed (they all stay beneath `dir`, or the resolution fails). Policy path
/// rules are applied to this as well as to the canonical text, so a link inside a root
/// cannot rename a denied file into an allowed one.
pub(crate) fn resolve_beneath(dir: &Dir, rel: &Path) -> io::Result<PathBuf> {
    dir.canonicalize(or_dot(rel))
}

/// Looks at the entry `rel` names beneath `dir` without following a final symbolic link
/// (intermediate links inside the root are followed).
pub(crate) fn lstat_beneath(dir: &Dir, rel: &Path) -> Result<Found, (Failure, io::Error)> {
    dir.symlink_metadata(or_dot(rel))
        .map(|m| Found::of(&m))
        .map_err(|e| (classify(&e, SymlinkStance::FollowWithinRoot), e))
}

fn symlink_refused() -> io::Error {
    io::Error::other("a symbolic link was met and symbolic links are not followed")
}

/// The parent directory reached by [`walk_nofollow`] (None: the root itself) and the last
/// name (None: the root itself).
type Walked<'a> = (Option<Dir>, Option<&'a Path>);

/// Opens every directory of `rel` but the last name, one name at a time, refusing any
/// symbolic link (`O_NOFOLLOW | O_DIRECTORY` beneath the previous descriptor). Returns the
/// parent (None for `dir` itself) and the last name (None when `rel` is the root).
fn walk_nofollow<'a>(dir: &Dir, rel: &'a Path) -> Result<Walked<'a>, (Failure, io::Error)> {
    let names: Vec<&Path> = rel
        .components()
        .filter_map(|c| match c {
            Component::Normal(n) => Some(Path::new(n)),
            _ => None,
        })
        .collect();
    let Some((last, parents)) = names.split_last() else {
        return Ok((None, None));
    };
    let mut cur: Option<Dir> = None;
    for name in parents {
        let base = cur.as_ref().unwrap_or(dir);
        let next = base.open_dir_nofollow(name).map_err(|e| {
            // O_DIRECTORY | O_NOFOLLOW on a symbolic link gives ENOTDIR, as for a file:
            // look at the entry itself to say which.
            let is_link = base
                .symlink_metadata(name)
                .is_ok_and(|m| m.file_type().is_symlink());
            if is_link {
                (Failure::SymlinkRefused, symlink_refused())
            } else {
                (classify(&e, SymlinkStance::Never), e)
            }
        })?;
        cur = Some(next);
    }
    Ok((cur, Some(last)))
}

/// The bytes of a regular file read beneath a root, with its identity.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileRead {
    /// The whole content (never truncated: over the cap is an error).
    pub bytes: Vec<u8>,
    /// Device of the file read.
    pub dev: u64,
    /// Inode of the file read.
    pub ino: u64,
    /// Its hard-link count (more than one: the same inode may be reachable elsewhere).
    pub nlink: u64,
}

/// Why a read beneath a root failed.
#[non_exhaustive]
#[derive(Debug, thiserror::Error)]
pub enum FsError {
    /// Resolution was refused by the kernel: a symbolic link leads out of the root.
    #[error("a symbolic link leads outside the root (resolution beneath the root refused)")]
    Escape,
    /// Too many symbolic links, or a `/proc` magic link.
    #[error("too many levels of symbolic links, or a /proc magic link")]
    Loop,
    /// A symbolic link was met and the stance forbids following any.
    #[error("a symbolic link was met and symbolic links are not followed")]
    SymlinkRefused,
    /// Nothing exists there.
    #[error("no such file")]
    NotFound,
    /// A name that must be a directory is not.
    #[error("a name in the path is not a directory")]
    NotADirectory,
    /// Not a regular file: only regular files are read.
    #[error("not a regular file ({kind}); only regular files can be read")]
    NotRegular {
        /// What is there instead.
        kind: FileKind,
    },
    /// Larger than the cap.
    #[error("the file is larger than the {limit}-byte read cap")]
    TooLarge {
        /// The cap that was exceeded.
        limit: u64,
    },
    /// A non-directory with more than one hard link, and the caller refuses those.
    #[error(
        "the file has {nlink} hard links; the same file may be reachable from outside the root"
    )]
    HardLink {
        /// The link count.
        nlink: u64,
    },
    /// The file was swapped for another during the read or since the check.
    #[error("the file changed while it was being opened; try again")]
    Changed,
    /// The path is too long for the operating system.
    #[error("the path is too long")]
    TooLong,
    /// Any other operating-system error.
    #[error("i/o error: {0}")]
    Io(io::Error),
}

impl FsError {
    /// The stable reason code for this failure.
    pub fn reason(&self) -> Reason {
        match self {
            FsError::Escape => Reason::SymlinkEscape,
            FsError::Loop => Reason::SymlinkLoop,
            FsError::SymlinkRefused => Reason::SymlinkRefused,
            FsError::NotFound => Reason::NotFound,
            FsError::NotADirectory => Reason::NotADirectory,
            FsError::NotRegular { .. } => Reason::NotRegularFile,
            FsError::TooLarge { .. } => Reason::FileTooLarge,
            FsError::HardLink { .. } => Reason::HardLink,
            FsError::Changed => Reason::FileChanged,
            FsError::TooLong => Reason::TooLong,
            FsError::Io(_) => Reason::IoError,
        }
    }

    fn from_failure((failure, err): (Failure, io::Error)) -> FsError {
        match failure {
            Failure::Escape => FsError::Escape,
            Failure::Loop => FsError::Loop,
            Failure::SymlinkRefused => FsError::SymlinkRefused,
            Failure::NotFound => FsError::NotFound,
            Failure::NotADirectory => FsError::NotADirectory,
            Failure::TooLong => FsError::TooLong,
            Failure::Other => FsError::Io(err),
        }
    }
}

/// Reads the regular file `relative` names beneath `dir`, at most `max_bytes` of it.
///
/// `relative` is a path relative to the root (as in [`crate::roots::Allowed::relative`]);
/// an absolute path or one that leads out is refused by the kernel. FIFOs, sockets,
/// devices and directories are refused without being opened for reading, so the call
/// never blocks. A file larger than `max_bytes` is an error, not a truncated read.
pub fn read_beneath(
    dir: &Dir,
    relative: &Path,
    max_bytes: u64,
    stance: SymlinkStance,
) -> Result<FileRead, FsError> {
    let (parent, name): (Option<Dir>, &Path) = match stance {
        SymlinkStance::FollowWithinRoot => (None, or_dot(relative)),
        SymlinkStance::Never => {
            let (parent, last) = walk_nofollow(dir, relative).map_err(FsError::from_failure)?;
            (parent, last.unwrap_or(Path::new(".")))
        }
    };
    let base = parent.as_ref().unwrap_or(dir);
    let follow = match stance {
        SymlinkStance::FollowWithinRoot => FollowSymlinks::Yes,
        SymlinkStance::Never => FollowSymlinks::No,
    };
    let fail = |e: io::Error| FsError::from_failure((classify(&e, stance), e));

    // Step 1: O_PATH, so nothing but a regular file is ever opened for reading.
    let probe = base
        .open_with(
            name,
            OpenOptions::new()
                .read(true)
                .follow(follow)
                .custom_flags(libc::O_PATH),
        )
        .map_err(fail)?;
    let first = probe.metadata().map_err(FsError::Io)?;
    let kind = FileKind::of(first.file_type());
    match kind {
        FileKind::Regular => {}
        FileKind::Symlink => return Err(FsError::SymlinkRefused),
        kind => return Err(FsError::NotRegular { kind }),
    }
    if first.len() > max_bytes {
        return Err(FsError::TooLarge { limit: max_bytes });
    }
    drop(probe);

    // Step 2: open for reading; never blocks, never takes a controlling terminal.
    let file = base
        .open_with(
            name,
            OpenOptions::new()
                .read(true)
                .follow(follow)
                .custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY),
        )
        .map_err(fail)?;
    let second = file.metadata().map_err(FsError::Io)?;
    if (second.dev(), second.ino()) != (first.dev(), first.ino()) || !second.is_file() {
        return Err(FsError::Changed);
    }
    let mut bytes = Vec::with_capacity(second.len().min(max_bytes) as usize);
    // One byte more than the cap tells "exactly the cap" from "larger" (the file may grow).
    (&file)
        .take(max_bytes.saturating_add(1))
        .read_to_end(&mut bytes)
        .map_err(FsError::Io)?;
    if bytes.len() as u64 > max_bytes {
        return Err(FsError::TooLarge { limit: max_bytes });
    }
    Ok(FileRead {
        bytes,
        dev: second.dev(),
        ino: second.ino(),
        nlink: second.nlink(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tree() -> (tempfile::TempDir, Dir) {
        let t = tempfile::tempdir().unwrap();
        let root = t.path().join("root");
        std::fs::create_dir_all(root.join("sub")).unwrap();
        std::fs::write(root.join("a.txt"), b"inside").unwrap();
        std::fs::write(root.join("sub/b.txt"), b"bee").unwrap();
        std::fs::write(t.path().join("secret"), b"SECRET").unwrap();
        std::os::unix::fs::symlink("sub/b.txt", root.join("in_link")).unwrap();
        std::os::unix::fs::symlink("../secret", root.join("out_link")).unwrap();
        nix::unistd::mkfifo(&root.join("fifo"), nix::sys::stat::Mode::S_IRWXU).unwrap();
        let opened = open_root_dir(&root).unwrap();
        (t, opened.dir)
    }

    #[test]
    fn reads_regular_files_and_follows_links_that_stay_inside() {
        let (_t, dir) = tree();
        let f = |p: &str| read_beneath(&dir, Path::new(p), 100, SymlinkStance::default());
        assert_eq!(f("a.txt").unwrap().bytes, b"inside");
        assert_eq!(f("sub/b.txt").unwrap().bytes, b"bee");
        assert_eq!(f("in_link").unwrap().bytes, b"bee");
        assert!(matches!(f("out_link"), Err(FsError::Escape)));
        assert!(matches!(f("../secret"), Err(FsError::Escape)));
        assert!(matches!(f("nope"), Err(FsError::NotFound)));
        assert!(matches!(f("a.txt/x"), Err(FsError::NotADirectory)));
        assert!(matches!(
            f("sub"),
            Err(FsError::NotRegular {
                kind: FileKind::Directory
            })
        ));
        assert!(matches!(
            f(""),
            Err(FsError::NotRegular {
                kind: FileKind::Directory
            })
        ));
    }

    #[test]
    fn fifo_is_refused_without_blocking() {
        let (_t, dir) = tree();
        let r = read_beneath(&dir, Path::new("fifo"), 100, SymlinkStance::default());
        assert!(matches!(
            r,
            Err(FsError::NotRegular {
                kind: FileKind::Fifo
            })
        ));
        assert_eq!(r.unwrap_err().reason(), Reason::NotRegularFile);
    }

    #[test]
    fn byte_cap_is_an_error_not_a_truncation() {
        let (_t, dir) = tree();
        let f = |n| read_beneath(&dir, Path::new("a.txt"), n, SymlinkStance::default());
        assert_eq!(f(6).unwrap().bytes, b"inside");
        assert!(matches!(f(5), Err(FsError::TooLarge { limit: 5 })));
        assert!(matches!(f(0), Err(FsError::TooLarge { limit: 0 })));
    }

    #[test]
    fn never_stance_refuses_every_symlink() {
        let (_t, dir) = tree();
        let f = |p: &str| read_beneath(&dir, Path::new(p), 100, SymlinkStance::Never);
        assert_eq!(f("sub/b.txt").unwrap().bytes, b"bee");
        assert!(matches!(f("in_link"), Err(FsError::SymlinkRefused)));
        let t = tempfile::tempdir().unwrap();
        std::fs::create_dir(t.path().join("real")).unwrap();
        std::fs::write(t.path().join("real/x"), b"x").unwrap();
        std::os::unix::fs::symlink("real", t.path().join("dirlink")).unwrap();
        let d = open_root_dir(t.path()).unwrap().dir;
        let r = read_beneath(&d, Path::new("dirlink/x"), 10, SymlinkStance::Never);
        assert!(matches!(r, Err(FsError::SymlinkRefused)), "{r:?}");
        let r = read_beneath(&d, Path::new("dirlink/x"), 10, SymlinkStance::default());
        assert_eq!(r.unwrap().bytes, b"x");
    }

    #[test]
    fn root_open_reports_real_path_and_identity() {
        let t = tempfile::tempdir().unwrap();
        std::fs::create_dir(t.path().join("real")).unwrap();
        std::os::unix::fs::symlink("real", t.path().join("alias")).unwrap();
        let r = open_root_dir(&t.path().join("alias")).unwrap();
        assert_eq!(
            r.real_path,
            std::fs::canonicalize(t.path().join("real")).unwrap()
        );
        assert!(same_dir_identity(&t.path().join("real"), r.dev, r.ino).unwrap());
        assert!(!same_dir_identity(t.path(), r.dev, r.ino).unwrap());
        let e = open_root_dir(&t.path().join("missing")).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::NotFound);
        std::fs::write(t.path().join("file"), b"").unwrap();
        assert!(open_root_dir(&t.path().join("file")).is_err());
    }
}
