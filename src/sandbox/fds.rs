//! Descriptor plumbing between rootfence and its launcher, and the only unsafe code of
//! the sandbox: clearing close-on-exec in the forked child, adopting the two descriptors
//! the launcher is given, and marking every other inherited descriptor close-on-exec.
//!
//! Why unsafe is needed: the standard library opens everything close-on-exec and offers
//! no stable way to pass a descriptor to a child, so the plan and report descriptors are
//! made inheritable in a `pre_exec` hook; and a descriptor *number* received on the
//! command line can only become an `OwnedFd` through `from_raw_fd`.

#![allow(unsafe_code)]

use std::io::{Seek, Write};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::process::CommandExt;
use std::process::Command;

use nix::fcntl::{FcntlArg, OFlag, SealFlag, fcntl};
use nix::sys::memfd::{MFdFlags, memfd_create};

use super::SandboxError;
use super::plan::LaunchPlan;

/// The parent's side of the launcher channel.
pub(crate) struct LauncherChannel {
    /// Sealed memfd holding the plan; inherited by the launcher.
    pub plan_fd: OwnedFd,
    /// Write end of the report pipe; inherited by the launcher.
    pub report_write: OwnedFd,
    /// Read end of the report pipe; stays in rootfence.
    pub report_read: OwnedFd,
}

impl LauncherChannel {
    pub(crate) fn new(plan: &LaunchPlan) -> Result<LauncherChannel, SandboxError> {
        let memfd = memfd_create(
            c"rootfence-sandbox-plan",
            MFdFlags::MFD_CLOEXEC | MFdFlags::MFD_ALLOW_SEALING,
        )
        .map_err(chan("memfd"))?;
        let mut file = std::fs::File::from(memfd);
        file.write_all(&plan.to_json())
            .and_then(|_| file.rewind())
            .map_err(chan("memfd write"))?;
        // Sealed: nothing, not even a compromised sibling holding the descriptor, can
        // change the plan between here and the launcher's read.
        fcntl(
            &file,
            FcntlArg::F_ADD_SEALS(
                SealFlag::F_SEAL_WRITE
                    | SealFlag::F_SEAL_GROW
                    | SealFlag::F_SEAL_SHRINK
                    | SealFlag::F_SEAL_SEAL,
            ),
        )
        .map_err(chan("memfd seal"))?;
        let plan_fd = above_stdio(OwnedFd::from(file))?;
        let (report_read, report_write) =
            nix::unistd::pipe2(OFlag::O_CLOEXEC).map_err(chan("report pipe"))?;
        let report_write = above_stdio(report_write)?;
        Ok(LauncherChannel {
            plan_fd,
            report_write,
            report_read,
        })
    }
}

/// Moves a descriptor above 2: the child's stdio is set up with `dup2` before the
/// pre-exec hook runs and would overwrite a descriptor numbered 0..=2 (possible when
/// rootfence itself was started with a closed stdio stream).
fn above_stdio(fd: OwnedFd) -> Result<OwnedFd, SandboxError> {
    if fd.as_raw_fd() > 2 {
        return Ok(fd);
    }
    // `try_clone` duplicates with F_DUPFD_CLOEXEC and a minimum of 3.
    fd.try_clone().map_err(chan("dup"))
}

/// The error of one step of setting up the channel.
fn chan<E: Into<std::io::Error>>(what: &'static str) -> impl FnOnce(E) -> SandboxError {
    move |e| SandboxError::Channel {
        what,
        source: e.into(),
    }
}

/// Makes `fds` survive the exec of the launcher, in the child only: the parent's copies
/// stay close-on-exec, so no other child of rootfence inherits them.
pub(crate) fn inherit_in_child(command: &mut Command, fds: [RawFd; 2]) {
    // SAFETY: the hook runs in the forked child between fork and exec. It calls only
    // fcntl(2), which is async-signal-safe, allocates nothing and takes no lock
    // (`io::Error::last_os_error` stores the errno inline). The descriptors stay open in
    // the parent until after spawn (`SandboxSession::child_ends`).
    unsafe {
        command.pre_exec(move || {
            for fd in fds {
                if libc::fcntl(fd, libc::F_SETFD, 0) == -1 {
                    return Err(std::io::Error::last_os_error());
                }
            }
            Ok(())
        });
    }
}

/// Launcher side: takes ownership of a descriptor number given on the command line,
/// checking that it is open and above stdio.
pub(crate) fn adopt(raw: RawFd) -> Result<OwnedFd, String> {
    if raw <= 2 {
        return Err(format!("descriptor {raw} is stdio, not a launcher channel"));
    }
    // SAFETY: F_GETFD only queries the flags of a descriptor number; no memory is touched.
    if unsafe { libc::fcntl(raw, libc::F_GETFD) } == -1 {
        return Err(format!(
            "descriptor {raw} is not open: {}",
            std::io::Error::last_os_error()
        ));
    }
    // SAFETY: the descriptor is open (checked above), was created for this launcher by
    // rootfence, and is adopted exactly once (each number appears once in argv).
    let fd = unsafe { OwnedFd::from_raw_fd(raw) };
    fcntl(&fd, FcntlArg::F_SETFD(nix::fcntl::FdFlag::FD_CLOEXEC))
        .map_err(|e| format!("cannot set close-on-exec on descriptor {raw}: {e}"))?;
    Ok(fd)
}

/// Launcher side: marks every descriptor above stderr close-on-exec, so the server
/// inherits stdio only. Returns how it was done, for the report.
pub(crate) fn cloexec_all_above_stdio() -> Result<&'static str, String> {
    // SAFETY: close_range(2) with CLOSE_RANGE_CLOEXEC only changes descriptor flags; it
    // takes plain integers and touches no memory.
    let r = unsafe {
        libc::syscall(
            libc::SYS_close_range,
            3 as libc::c_uint,
            libc::c_uint::MAX,
            libc::CLOSE_RANGE_CLOEXEC,
        )
    };
    if r == 0 {
        return Ok("close_range");
    }
    // Kernels before 5.11: walk /proc/self/fd.
    let fds = open_fds()
        .map_err(|e| format!("cannot list /proc/self/fd to close inherited descriptors: {e}"))?;
    for fd in fds.into_iter().filter(|fd| *fd > 2) {
        // SAFETY: F_SETFD on a descriptor number changes only its flags; a number that was
        // the (now closed) directory descriptor fails with EBADF, which is ignored.
        unsafe { libc::fcntl(fd, libc::F_SETFD, libc::FD_CLOEXEC) };
    }
    Ok("/proc/self/fd")
}

/// The open descriptors, as `/proc/self/fd` lists them (where `close_range` is missing).
/// Collected before any is changed, so the listing's own descriptor is not disturbed
/// while it is read.
pub(crate) fn open_fds() -> std::io::Result<Vec<RawFd>> {
    Ok(std::fs::read_dir("/proc/self/fd")?
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse().ok())
        .collect())
}

#[cfg(test)]
mod tests {
    use std::io::Read;

    use super::*;
    use crate::sandbox::{SandboxSpec, plan};

    #[test]
    fn plan_memfd_is_sealed_and_readable_from_the_start() {
        let spec = SandboxSpec {
            default_profile: false,
            ..SandboxSpec::default()
        };
        let p = plan::build(&spec, &["true".into()], None, &[]).unwrap();
        let chan = LauncherChannel::new(&p).unwrap();
        assert!(chan.plan_fd.as_raw_fd() > 2);
        let mut f = std::fs::File::from(chan.plan_fd);
        assert!(f.write_all(b"x").is_err(), "the plan must be sealed");
        let mut buf = Vec::new();
        f.read_to_end(&mut buf).unwrap();
        assert_eq!(LaunchPlan::from_json(&buf).unwrap().version, p.version);
    }

    #[test]
    fn adopt_refuses_stdio_and_closed_numbers() {
        assert!(adopt(1).is_err());
        assert!(adopt(987_654).is_err());
    }
}
