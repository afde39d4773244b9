//! The only place in rootfence that opens files: the one ambient open of a root directory,
//! and capability-safe, non-blocking, size-capped resolution, listings and reads beneath it.
//!
//! Owned by issue 3 (resolution and reads), issue 12 (links that stay inside) and issue 14
//! (list pages).
//!
//! Everything except [`open_root_dir`] works from a root's directory descriptor, and the
//! kernel decides every step (`resolve`):
//!
//! - **No link on the way** (the common case): one `openat2(RESOLVE_BENEATH |
//!   RESOLVE_NO_SYMLINKS)` of the whole relative path, then `fstat`. The kernel refuses `..`
//!   above the root; any symbolic link makes it stop (`ELOOP`) and hand over to the walk.
//! - **Links**: a walk, one name at a time, each `openat(O_PATH | O_NOFOLLOW)` beneath the
//!   descriptor of the directory reached so far (a single name cannot leave it; `..` pops a
//!   descriptor rootfence holds and never climbs above the root). A link met on the way is
//!   read (`readlinkat` on the link's own descriptor, so it cannot be swapped in between): a
//!   relative target continues from the link's directory; an absolute target that names a
//!   place inside the root (by the root's real or declared path, component-wise) continues
//!   from the root's descriptor; any other absolute target is an escape. At most 40 links
//!   are followed (the kernel's own limit); `/proc` magic links are refused (the kernel is
//!   asked with `RESOLVE_NO_MAGICLINKS` before one is followed).
//!
//! So absolute links that stay inside a root work (`follow-within-root` means what it says),
//! while the containment decision is still the kernel's: rootfence never compares a path it
//! is about to open with a root by string, it only ever opens names beneath descriptors.
//!
//! Resolution uses `O_PATH`: it needs no read permission, has no side effect on devices, and
//! cannot block on a FIFO. Reads ([`read_beneath`]) resolve first, refuse anything but a
//! regular file without opening it for reading, then open the resolved (link-free) path
//! with `O_RDONLY | O_NONBLOCK | O_NOCTTY` and `RESOLVE_NO_SYMLINKS`, and require the same
//! inode: a swap in between is [`FsError::Changed`]. The byte cap is an error, never a
//! truncation. A read reports the path it was read at, so callers can judge the object
//! actually opened, not only the name asked for.

mod listing;
mod resolve;

use std::io::{self, Read};
use std::os::fd::AsFd;
use std::path::{Path, PathBuf};

use cap_std::ambient_authority;
use cap_std::fs::{Dir, MetadataExt};
use rustix::fs::{FileType, Mode, OFlags, ResolveFlags};

use crate::uri::Reason;

pub(crate) use listing::{EntryKind, keeps_own_times, list_dir, stat_entry};
pub(crate) use resolve::{Beneath, Resolved, resolve};

/// How symbolic links beneath a root are treated.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum SymlinkStance {
    /// Follow symbolic links whose whole resolution stays beneath the root: relative links,
    /// and absolute links that name a place inside the same root. Any that lead out are
    /// refused. The default.
    #[default]
    FollowWithinRoot,
    /// Follow no symbolic link at all, even one that stays inside.
    Never,
}

/// How non-directories with more than one hard link are treated.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum HardlinkStance {
    /// Files with several links are served like any other.
    Allow,
    /// Files with several links are served when every link predates the session: the file's
    /// status (`ctime`, which `link(2)` and `rename(2)` update) or its directory's is older
    /// than the session. A link made while rootfence runs is refused (a server planting a
    /// link to a file outside the roots). The default: `uv` virtual environments and `pnpm`
    /// stores, which hard-link every file from a cache, keep working.
    #[default]
    AllowPreexisting,
    /// Files with several links are refused: another name of the same file may be outside
    /// the roots.
    Deny,
}

crate::coded::coded! {
    /// What a path resolves to.
    #[non_exhaustive]
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
    pub enum FileKind {
        /// A regular file.
        Regular => "regular",
        /// A directory.
        Directory => "directory",
        /// A symbolic link (only seen where links are not followed).
        Symlink => "symlink",
        /// A named pipe.
        Fifo => "fifo",
        /// A unix socket.
        Socket => "socket",
        /// A character device.
        CharDevice => "char_device",
        /// A block device.
        BlockDevice => "block_device",
        /// Anything else.
        Other => "other",
        /// Nothing exists there yet; its deepest existing ancestor is a directory inside the
        /// root.
        Missing => "missing",
    }
    /// The stable lowercase name (`regular`, `directory`, `fifo`, …, `missing`).
    pub fn as_str;
}

impl FileKind {
    fn of(ft: FileType) -> FileKind {
        match ft {
            FileType::RegularFile => FileKind::Regular,
            FileType::Directory => FileKind::Directory,
            FileType::Symlink => FileKind::Symlink,
            FileType::Fifo => FileKind::Fifo,
            FileType::Socket => FileKind::Socket,
            FileType::CharacterDevice => FileKind::CharDevice,
            FileType::BlockDevice => FileKind::BlockDevice,
            _ => FileKind::Other,
        }
    }
}

impl std::fmt::Display for FileKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A moment on the clock the kernel stamps inode changes with.
///
/// Inode times come from the kernel's coarse clock (`current_time()`, updated once per
/// tick), which may lag the precise clock by a few milliseconds, or, where the filesystem
/// keeps multigrain times (Linux 6.13+), from the precise clock when the time was looked at
/// since the last change (then ahead of the coarse clock). [`Stamp::now`] reads the coarse
/// clock, so an inode changed after `now()` returned always carries a time at or after it:
/// "changed before the session" is decided without a margin. (An inode changed in the tick
/// before may carry a later time too: it is then taken for new, the safe side.)
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Stamp {
    secs: i64,
    nanos: i64,
}

impl Stamp {
    /// The coarse real-time clock now (`CLOCK_REALTIME_COARSE`).
    pub fn now() -> Stamp {
        let t = rustix::time::clock_gettime(rustix::time::ClockId::RealtimeCoarse);
        Stamp::from_parts(t.tv_sec, t.tv_nsec)
    }

    /// A stamp from seconds and nanoseconds since the epoch.
    pub fn from_parts(secs: i64, nanos: i64) -> Stamp {
        Stamp { secs, nanos }
    }

    /// The start of this stamp's second.
    pub fn whole_second(self) -> Stamp {
        Stamp { nanos: 0, ..self }
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

/// What a resolution beneath a root found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Found {
    pub(crate) kind: FileKind,
    pub(crate) nlink: u64,
    pub(crate) dev: u64,
    pub(crate) ino: u64,
    pub(crate) size: u64,
    /// The inode's last status change (`ctime`).
    pub(crate) changed: Stamp,
}

impl Found {
    // `struct stat`'s field types differ by architecture: the casts are not the same
    // everywhere.
    #[allow(clippy::unnecessary_cast)]
    pub(crate) fn of(st: &rustix::fs::Stat) -> Found {
        Found {
            kind: FileKind::of(FileType::from_raw_mode(st.st_mode as _)),
            nlink: st.st_nlink as u64,
            dev: st.st_dev as u64,
            ino: st.st_ino as u64,
            size: u64::try_from(st.st_size).unwrap_or(0),
            changed: Stamp::from_parts(st.st_ctime as i64, st.st_ctime_nsec as i64),
        }
    }

    /// A non-directory with more than one hard link.
    pub(crate) fn is_linked(&self) -> bool {
        self.nlink > 1 && !matches!(self.kind, FileKind::Directory | FileKind::Missing)
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
        // The same as the read error it becomes (an unallocated error stands in for the
        // cause, which the reason does not depend on).
        FsError::from_failure((self, io::ErrorKind::Other.into())).reason()
    }

    /// Classifies an error number from a lookup beneath a root (`EXDEV`: the kernel refused
    /// to leave the root).
    pub(crate) fn of_errno(e: rustix::io::Errno) -> Failure {
        match e {
            rustix::io::Errno::XDEV => Failure::Escape,
            rustix::io::Errno::LOOP => Failure::Loop,
            rustix::io::Errno::NOENT => Failure::NotFound,
            rustix::io::Errno::NOTDIR => Failure::NotADirectory,
            rustix::io::Errno::NAMETOOLONG => Failure::TooLong,
            _ => Failure::Other,
        }
    }
}

/// A failed lookup: how it is classified, and the error behind it.
pub(crate) type Failed = (Failure, io::Error);

pub(crate) fn failed(failure: Failure, what: &str) -> Failed {
    (failure, io::Error::other(what.to_owned()))
}

pub(crate) fn errno_failed(e: rustix::io::Errno) -> Failed {
    (Failure::of_errno(e), io::Error::from(e))
}

/// `"."` for the root itself, else the relative path: an empty path names nothing.
pub(crate) fn or_dot(rel: &Path) -> &Path {
    if rel.as_os_str().is_empty() {
        Path::new(".")
    } else {
        rel
    }
}

/// Looks at the entry `rel` names beneath the root without following a final symbolic link
/// (intermediate links inside the root are followed).
pub(crate) fn lstat_beneath(b: &Beneath<'_>, rel: &Path) -> Result<Found, Failed> {
    resolve(b, rel, SymlinkStance::FollowWithinRoot, false).map(|r| r.found)
}

/// The status-change time of the directory holding `path` (a link-free path beneath the
/// root, as [`Resolved::path`] gives), looked up beneath the root without following links.
pub(crate) fn parent_changed(b: &Beneath<'_>, path: &Path) -> Option<Stamp> {
    let parent = path.parent().unwrap_or(Path::new(""));
    let fd = resolve::open_plain(b, parent, OFlags::PATH | OFlags::DIRECTORY).ok()?;
    rustix::fs::fstat(&fd).ok().map(|st| Found::of(&st).changed)
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
    /// Where it was read, below the root's real directory: every link resolved, no dot
    /// segments (the object actually opened, whatever name was asked for).
    pub path: PathBuf,
    /// Its last status change (`ctime`).
    pub changed: Stamp,
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
    /// A non-directory with more than one hard link that was linked (or otherwise changed
    /// status) after the session started, in a directory that changed too.
    #[error(
        "the file has {nlink} hard links and was linked or changed after this session          started; a link planted to a file outside the root looks the same"
    )]
    NewHardLink {
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
            FsError::HardLink { .. } | FsError::NewHardLink { .. } => Reason::HardLink,
            FsError::Changed => Reason::FileChanged,
            FsError::TooLong => Reason::TooLong,
            FsError::Io(_) => Reason::IoError,
        }
    }

    pub(crate) fn from_failure((failure, err): Failed) -> FsError {
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
/// an absolute path or one that leads out is refused by the kernel. This form knows no
/// spelling of the root, so an absolute symbolic link is refused even when it names a place
/// inside; [`crate::roots::RootSet::read`] follows those. FIFOs, sockets, devices and
/// directories are refused without being opened for reading, so the call never blocks. A
/// file larger than `max_bytes` is an error, not a truncated read.
pub fn read_beneath(
    dir: &Dir,
    relative: &Path,
    max_bytes: u64,
    stance: SymlinkStance,
) -> Result<FileRead, FsError> {
    read_in(&Beneath::bare(dir.as_fd()), relative, max_bytes, stance)
}

/// [`read_beneath`] with the root's spellings, so absolute links inside it are followed.
pub(crate) fn read_in(
    b: &Beneath<'_>,
    relative: &Path,
    max_bytes: u64,
    stance: SymlinkStance,
) -> Result<FileRead, FsError> {
    // Step 1: resolve with O_PATH, so nothing but a regular file is ever opened for reading.
    let probe = resolve(b, relative, stance, true).map_err(FsError::from_failure)?;
    match probe.found.kind {
        FileKind::Regular => {}
        FileKind::Symlink => return Err(FsError::SymlinkRefused),
        kind => return Err(FsError::NotRegular { kind }),
    }
    if probe.found.size > max_bytes {
        return Err(FsError::TooLarge { limit: max_bytes });
    }
    // Step 2: open the resolved, link-free path for reading, refusing any link now on the
    // way; never blocks, never takes a controlling terminal. It must be the same inode.
    let flags = OFlags::RDONLY | OFlags::NONBLOCK | OFlags::NOCTTY;
    let fd = resolve::open_plain(b, &probe.path, flags).map_err(|e| match e {
        rustix::io::Errno::ACCESS | rustix::io::Errno::PERM => FsError::Io(e.into()),
        _ => FsError::Changed,
    })?;
    let st = rustix::fs::fstat(&fd).map_err(|e| FsError::Io(e.into()))?;
    let second = Found::of(&st);
    if (second.dev, second.ino) != (probe.found.dev, probe.found.ino)
        || second.kind != FileKind::Regular
    {
        return Err(FsError::Changed);
    }
    let file = std::fs::File::from(fd);
    let mut bytes = Vec::with_capacity(second.size.min(max_bytes) as usize);
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
        dev: second.dev,
        ino: second.ino,
        nlink: second.nlink,
        path: probe.path,
        changed: second.changed,
    })
}

/// The flags every lookup beneath a root uses.
pub(crate) const BENEATH: ResolveFlags = ResolveFlags::BENEATH.union(ResolveFlags::NO_MAGICLINKS);

/// No file is ever created: lookups pass no mode.
pub(crate) const NO_MODE: Mode = Mode::empty();

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

    /// Found by `tests/uri_prop.rs`: a link whose text ends in `/` or `/.` names a directory
    /// to the kernel (`ENOTDIR` for a file); the walk once dropped the suffix with the dot
    /// segments and read the file behind it.
    #[test]
    fn link_text_ending_in_a_slash_or_dot_needs_a_directory() {
        let t = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(t.path()).unwrap();
        std::fs::write(root.join("a"), b"file").unwrap();
        std::fs::create_dir(root.join("d")).unwrap();
        std::fs::write(root.join("d/x"), b"x").unwrap();
        let abs_dot = format!("{}/a/.", root.display());
        for (name, target) in [
            ("dot", "a/."),
            ("slash", "a/"),
            ("slashes", "a//"),
            ("abs_dot", abs_dot.as_str()),
        ] {
            std::os::unix::fs::symlink(target, root.join(name)).unwrap();
        }
        std::os::unix::fs::symlink("d/.", root.join("dir_dot")).unwrap();
        std::os::unix::fs::symlink("dir_dot/", root.join("link_slash")).unwrap();
        let opened = open_root_dir(&root).unwrap();
        let b = Beneath::new(opened.dir.as_fd(), &root, &root);
        let read = |rel: &str| read_in(&b, Path::new(rel), 100, SymlinkStance::default());
        for name in ["dot", "slash", "slashes", "abs_dot"] {
            // The kernel agrees: opening it fails.
            assert!(std::fs::read(root.join(name)).is_err(), "{name}");
            let r = read(name);
            assert!(matches!(r, Err(FsError::NotADirectory)), "{name}: {r:?}");
        }
        assert_eq!(read("dir_dot/x").unwrap().bytes, b"x");
        assert_eq!(read("link_slash/x").unwrap().bytes, b"x");
    }

    #[test]
    fn absolute_links_are_followed_only_when_the_root_is_known_and_they_stay_inside() {
        let t = tempfile::tempdir().unwrap();
        let top = std::fs::canonicalize(t.path()).unwrap();
        let root = top.join("root");
        std::fs::create_dir_all(root.join("sub")).unwrap();
        std::fs::write(root.join("sub/b.txt"), b"bee").unwrap();
        std::fs::write(top.join("secret"), b"SECRET").unwrap();
        std::os::unix::fs::symlink(root.join("sub"), root.join("abs_dir")).unwrap();
        std::os::unix::fs::symlink(top.join("secret"), root.join("abs_out")).unwrap();
        std::os::unix::fs::symlink(top.join("root/../secret"), root.join("abs_dotdot")).unwrap();
        let opened = open_root_dir(&root).unwrap();
        let b = Beneath::new(opened.dir.as_fd(), &root, &root);
        let read = |rel: &str| read_in(&b, Path::new(rel), 100, SymlinkStance::default());
        let r = read("abs_dir/b.txt").unwrap();
        assert_eq!(r.bytes, b"bee");
        assert_eq!(
            r.path,
            Path::new("sub/b.txt"),
            "the path read at, links resolved"
        );
        assert!(matches!(read("abs_out"), Err(FsError::Escape)));
        assert!(matches!(read("abs_dotdot"), Err(FsError::Escape)));
        // Without the root's spelling, every absolute link is an escape.
        let bare = read_beneath(
            &opened.dir,
            Path::new("abs_dir/b.txt"),
            100,
            SymlinkStance::default(),
        );
        assert!(matches!(bare, Err(FsError::Escape)));
        let never = read_in(&b, Path::new("abs_dir/b.txt"), 100, SymlinkStance::Never);
        assert!(matches!(never, Err(FsError::SymlinkRefused)));
    }

    #[test]
    fn a_directory_is_listed_with_entry_types_until_told_to_stop() {
        let (_t, dir) = tree();
        let mut seen = Vec::new();
        let mut buf = Vec::new();
        let stopped = list_dir(dir.as_fd(), 100, &mut buf, |name, kind| {
            seen.push((name.to_str().unwrap().to_owned(), kind));
            true
        })
        .unwrap();
        assert!(!stopped);
        seen.sort_by(|a, b| a.0.cmp(&b.0));
        let names: Vec<&str> = seen.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(names, ["a.txt", "fifo", "in_link", "out_link", "sub"]);
        let kind = |n: &str| seen.iter().find(|(m, _)| m == n).unwrap().1;
        assert_eq!(kind("a.txt"), EntryKind::Known(FileKind::Regular));
        assert_eq!(kind("sub"), EntryKind::Known(FileKind::Directory));
        assert_eq!(kind("in_link"), EntryKind::Known(FileKind::Symlink));
        let stopped = list_dir(dir.as_fd(), 2, &mut buf, |_, _| true).unwrap();
        assert!(stopped, "the budget stops the read");
        let f = stat_entry(dir.as_fd(), "a.txt").unwrap();
        assert_eq!((f.kind, f.nlink, f.size), (FileKind::Regular, 1, 6));
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
        let identity = |p: &Path| {
            use std::os::unix::fs::MetadataExt as _;
            let m = std::fs::metadata(p).unwrap();
            (m.dev(), m.ino())
        };
        assert_eq!(identity(&t.path().join("real")), (r.dev, r.ino));
        assert_ne!(identity(t.path()), (r.dev, r.ino));
        let e = open_root_dir(&t.path().join("missing")).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::NotFound);
        std::fs::write(t.path().join("file"), b"").unwrap();
        assert!(open_root_dir(&t.path().join("file")).is_err());
    }
}
