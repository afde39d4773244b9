//! Replacing a host configuration file atomically, with a backup.
//!
//! The new text goes to a temporary file in the same directory, created with the original's
//! permission bits (and, when they differ and rootfence may, its owner and group), is
//! flushed with `fsync`, renamed over the original, and the directory is synced. A reader
//! (the host) therefore sees the old file or the new one, never a torn one, and a crash
//! leaves the old file in place. Before that, the old bytes are copied to a backup beside
//! the file, `<name>.rootfence-backup-<UTC time>` (a new name every time, never overwriting
//! an earlier backup).
//!
//! A symbolic link is followed: the file it points to is replaced and the link is kept
//! (dotfile managers link these files). Right before replacing, the file is read again: if
//! it no longer holds the bytes that were edited (a running host rewrote it), nothing is
//! written.
//!
//! This module opens paths the user named on the command line (their own configuration),
//! not paths from an untrusted peer, so it uses `std::fs` directly.

use std::fs::{self, File, OpenOptions};
use std::io::{self, Write};
use std::os::unix::fs::{MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

/// What a write did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WriteReport {
    /// The file that was replaced (the target of a symlink, if the path was one).
    pub target: PathBuf,
    /// The backup of the old content, when one was asked for.
    pub backup: Option<PathBuf>,
    /// Things that could not be kept exactly (e.g. the group), for the user to know.
    pub warnings: Vec<String>,
}

/// Why a write did not happen.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum WriteError {
    /// An I/O step failed.
    #[error("cannot {what} {}: {source}", path.display())]
    Io {
        /// The step.
        what: &'static str,
        /// The path involved.
        path: PathBuf,
        /// The cause.
        #[source]
        source: io::Error,
    },
    /// The file changed between reading and writing.
    #[error(
        "{} changed while rootfence was editing it (is the host running and rewriting it?); nothing was written: quit the host and run the command again",
        path.display()
    )]
    Changed {
        /// The file.
        path: PathBuf,
    },
    /// The owner could not be kept.
    #[error(
        "cannot give the new {} its owner (uid {uid}): {source}; run rootfence as the file's owner (e.g. `sudo -u <user> rootfence ...`)",
        path.display()
    )]
    Owner {
        /// The file.
        path: PathBuf,
        /// The original owner.
        uid: u32,
        /// The cause.
        #[source]
        source: io::Error,
    },
}

fn io_err<'a>(what: &'static str, path: &'a Path) -> impl FnOnce(io::Error) -> WriteError + 'a {
    move |source| WriteError::Io {
        what,
        path: path.to_path_buf(),
        source,
    }
}

/// Replaces the file at `path`, which must still hold `expected_old`, with `new`; keeps a
/// backup of the old bytes unless `backup` is false.
pub fn replace_file(
    path: &Path,
    expected_old: &[u8],
    new: &[u8],
    backup: bool,
) -> Result<WriteReport, WriteError> {
    let target = fs::canonicalize(path).map_err(io_err("resolve", path))?;
    let meta = fs::metadata(&target).map_err(io_err("read the metadata of", &target))?;
    let dir = target.parent().unwrap_or(Path::new("/")).to_path_buf();
    let name = target
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let mode = meta.permissions().mode() & 0o7777;
    let mut warnings = Vec::new();

    let current = fs::read(&target).map_err(io_err("read", &target))?;
    if current != expected_old {
        return Err(WriteError::Changed { path: target });
    }

    let backup_path = backup
        .then(|| write_backup(&dir, &name, expected_old, mode, &meta, &mut warnings))
        .transpose()?;

    let mut tmp = tempfile::Builder::new()
        .prefix(&format!(".{name}."))
        .suffix(".rootfence-tmp")
        .tempfile_in(&dir)
        .map_err(io_err("create a temporary file in", &dir))?;
    // Owner first: changing the owner clears set-id bits that chmod would have set.
    keep_owner(tmp.as_file(), tmp.path(), &meta, &mut warnings)?;
    tmp.as_file()
        .set_permissions(fs::Permissions::from_mode(mode))
        .map_err(io_err("set the permissions of", tmp.path()))?;
    let tmp_path = tmp.path().to_path_buf();
    tmp.write_all(new).map_err(io_err("write", &tmp_path))?;
    tmp.as_file()
        .sync_all()
        .map_err(io_err("sync", &tmp_path))?;

    // Last look: a host that rewrote the file meanwhile must not lose its change.
    let current = fs::read(&target).map_err(io_err("read", &target))?;
    if current != expected_old {
        return Err(WriteError::Changed { path: target });
    }
    tmp.persist(&target)
        .map_err(|e| io_err("replace", &target)(e.error))?;
    sync_dir(&dir);
    Ok(WriteReport {
        target,
        backup: backup_path,
        warnings,
    })
}

/// Writes the backup under a fresh name (`create_new`: never over an earlier file).
fn write_backup(
    dir: &Path,
    name: &str,
    old: &[u8],
    mode: u32,
    meta: &fs::Metadata,
    warnings: &mut Vec<String>,
) -> Result<PathBuf, WriteError> {
    let stamp = utc_stamp(SystemTime::now());
    for n in 0..1000u32 {
        let file_name = if n == 0 {
            format!("{name}.rootfence-backup-{stamp}")
        } else {
            format!("{name}.rootfence-backup-{stamp}-{n}")
        };
        let path = dir.join(file_name);
        let file = OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(mode & 0o777)
            .open(&path);
        let mut file = match file {
            Ok(f) => f,
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(io_err("create the backup", &path)(e)),
        };
        keep_owner(&file, &path, meta, warnings)?;
        // The umask may have narrowed the mode; the backup is as private as the original.
        file.set_permissions(fs::Permissions::from_mode(mode & 0o777))
            .map_err(io_err("set the permissions of", &path))?;
        file.write_all(old).map_err(io_err("write", &path))?;
        file.sync_all().map_err(io_err("sync", &path))?;
        return Ok(path);
    }
    Err(WriteError::Io {
        what: "find a free backup name beside",
        path: dir.join(name),
        source: io::Error::from(io::ErrorKind::AlreadyExists),
    })
}

/// Gives `file` the owner and group of the original when they differ (rootfence run as
/// root over a user's file). A different owner that cannot be set is an error (the user
/// would lose their own config); a group that cannot be set is a warning.
fn keep_owner(
    file: &File,
    path: &Path,
    meta: &fs::Metadata,
    warnings: &mut Vec<String>,
) -> Result<(), WriteError> {
    let now = file
        .metadata()
        .map_err(io_err("read the metadata of", path))?;
    if now.uid() != meta.uid() {
        std::os::unix::fs::fchown(file, Some(meta.uid()), Some(meta.gid())).map_err(|source| {
            WriteError::Owner {
                path: path.to_path_buf(),
                uid: meta.uid(),
                source,
            }
        })?;
    } else if now.gid() != meta.gid()
        && let Err(e) = std::os::unix::fs::fchown(file, None, Some(meta.gid()))
    {
        warnings.push(format!(
            "{} has group {} instead of {}: {e}",
            path.display(),
            now.gid(),
            meta.gid()
        ));
    }
    Ok(())
}

/// Makes the rename durable. Best effort: some filesystems refuse to sync a directory.
fn sync_dir(dir: &Path) {
    if let Ok(d) = File::open(dir) {
        let _ = d.sync_all();
    }
}

/// `YYYYMMDDTHHMMSSZ` for a backup name.
pub(crate) fn utc_stamp(t: SystemTime) -> String {
    let secs = t
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() as i64);
    let days = secs.div_euclid(86_400);
    let sod = secs.rem_euclid(86_400);
    let (y, m, d) = crate::audit::time::civil_from_days(days);
    format!(
        "{y:04}{m:02}{d:02}T{:02}{:02}{:02}Z",
        sod / 3600,
        (sod / 60) % 60,
        sod % 60
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn stamps() {
        assert_eq!(utc_stamp(UNIX_EPOCH), "19700101T000000Z");
        assert_eq!(
            utc_stamp(UNIX_EPOCH + Duration::from_secs(1_795_326_331)),
            "20261122T054531Z"
        );
        assert_eq!(
            utc_stamp(UNIX_EPOCH + Duration::from_secs(951_782_400)),
            "20000229T000000Z"
        );
    }
}
