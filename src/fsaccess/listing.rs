//! One read of a directory for a list page: entry names and types straight from `getdents`
//! into a reused buffer (no allocation, no system call per entry), and the single-name
//! `fstatat` for an entry whose status is needed.

use std::ffi::CStr;
use std::mem::MaybeUninit;
use std::os::fd::BorrowedFd;

use rustix::fs::{AtFlags, FileType, OFlags, RawDir, openat, statat};
use rustix::io::Errno;

use super::{FileKind, Found, NO_MODE};

/// An entry's type as the directory read reports it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum EntryKind {
    /// A type the directory read gave (`d_type`).
    Known(FileKind),
    /// The filesystem does not report types in directory reads (`DT_UNKNOWN`).
    Unknown,
}

impl EntryKind {
    fn of(ft: FileType) -> EntryKind {
        match ft {
            FileType::Unknown => EntryKind::Unknown,
            ft => EntryKind::Known(FileKind::of(ft)),
        }
    }
}

/// Reads the directory `dir` (an `O_PATH` descriptor of it is enough) and calls `each` with
/// every entry's name and type, until `each` returns false or `budget` entries were read.
/// `buf` is the read buffer, kept by the caller across directories. Returns whether the
/// read stopped early (on `each` or on the budget).
pub(crate) fn list_dir(
    dir: BorrowedFd<'_>,
    budget: usize,
    buf: &mut Vec<MaybeUninit<u8>>,
    mut each: impl FnMut(&CStr, EntryKind) -> bool,
) -> Result<bool, Errno> {
    let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC | OFlags::NOFOLLOW;
    let fd = openat(dir, ".", flags, NO_MODE)?;
    if buf.len() < 32 * 1024 {
        buf.resize(32 * 1024, MaybeUninit::uninit());
    }
    let mut entries = RawDir::new(fd, buf.as_mut_slice());
    let mut read = 0usize;
    while let Some(entry) = entries.next() {
        let entry = entry?;
        let name = entry.file_name();
        if name.to_bytes() == b"." || name.to_bytes() == b".." {
            continue;
        }
        read += 1;
        if !each(name, EntryKind::of(entry.file_type())) || read >= budget {
            return Ok(true);
        }
    }
    Ok(false)
}

/// The status of the entry `name` (one name, no `/`) of the directory `dir`, without
/// following it if it is a link.
pub(crate) fn stat_entry(dir: BorrowedFd<'_>, name: &str) -> Result<Found, Errno> {
    debug_assert!(!name.contains('/') && name != "." && name != "..");
    statat(dir, name, AtFlags::SYMLINK_NOFOLLOW).map(|st| Found::of(&st))
}

/// Whether the directory `dir` lies on a local filesystem whose inode times this kernel
/// keeps itself (ext2/3/4, XFS, Btrfs, F2FS, tmpfs): there, every change to a directory's
/// entries (a name added, removed or renamed, so also a file swapped for a link) gives it a
/// status-change time at or after the moment of the change, which is what lets a listing
/// be reused while that time is unchanged (`roots/batch.rs`). Network, FUSE and layered
/// filesystems report times kept elsewhere (or cached), so their listings are never reused.
pub(crate) fn keeps_own_times(dir: BorrowedFd<'_>) -> bool {
    const LOCAL: [u32; 6] = [
        0xEF53,      // ext2, ext3, ext4
        0x5846_5342, // XFS
        0x9123_683E, // Btrfs
        0xF2F5_2010, // F2FS
        0x0102_1994, // tmpfs
        0x8584_58F6, // ramfs
    ];
    // `f_type`'s width differs by architecture; the magic numbers are 32 bits.
    #[allow(clippy::unnecessary_cast)]
    rustix::fs::fstatfs(dir).is_ok_and(|st| LOCAL.contains(&(st.f_type as u32)))
}
