//! Process containment (issue 28): every server launch runs in a PID namespace of its own,
//! under a minimal init, so nothing the server starts outlives it; not a child that called
//! `setsid()` and daemonised, not after rootfence itself is killed with SIGKILL.
//!
//! The launcher calls [`contain`] once it has read its plan and before it restricts
//! itself. On success three processes stand where one stood:
//!
//! - the *keeper*: the process rootfence started, in rootfence's PID namespace. It waits
//!   for the init and then exits exactly as the server did (its code, or the same signal),
//!   so rootfence sees the server's status. It dies with rootfence (`PR_SET_PDEATHSIG`, set
//!   by the launcher before anything else).
//! - the *init*: PID 1 of the new namespace. It reaps every process orphaned in the
//!   namespace, forwards the signals it receives to the server's process group, and exits
//!   when the server exits. It dies with the keeper (`PR_SET_PDEATHSIG`). When it dies, for
//!   whatever reason, the kernel SIGKILLs every process left in the namespace: that is the
//!   guarantee, and it needs no cooperation from anything the server started.
//! - the server: PID 2, in a process group of its own, which goes on with the launcher's
//!   work (mount namespace, Landlock, report) and execs the command.
//!
//! rootfence signals the keeper's process group as before: the keeper ignores what it is
//! sent (the init receives the same signal), the init forwards it once. SIGKILL needs no
//! forwarding: it ends the keeper and the init, and with the init the whole namespace.
//!
//! As root the namespace needs nothing else; a normal user gets it inside a user namespace
//! that maps the user (and group) to themselves, so ownership and `getuid()` are unchanged.
//! When neither is allowed, [`contain`] says why and the launcher carries on as before: the
//! server runs in rootfence's process group with the parent-death signal, and a process
//! that leaves the group can outlive it (the report says so).
//!
//! Keeper and init are forks of the single-threaded launcher: they close every descriptor
//! they inherited (the server's stdio and the report pipe must reach end of file when the
//! server is done with them) and hold no memory of rootfence's beyond the launcher's.

#![allow(unsafe_code)]

use std::os::fd::{AsRawFd, OwnedFd, RawFd};

use nix::sched::{CloneFlags, unshare};
use nix::sys::signal::{SigSet, SigmaskHow, Signal, killpg, sigprocmask};
use nix::sys::wait::{WaitPidFlag, WaitStatus, waitpid};
use nix::unistd::{ForkResult, Pid, fork};

/// The environment variable that turns the PID namespace off (the server then runs as
/// before: process group and parent-death signal only), e.g. to see what a machine
/// without user namespaces gets.
pub const PIDNS_ENV: &str = "ROOTFENCE_SANDBOX_PIDNS";

/// Puts the rest of the launch in a PID namespace of its own. Returns in the server
/// process only (with how the namespace was made); the keeper and the init never return.
/// `Err(Uncontained::Without(why))` when no namespace could be made: nothing was changed
/// and the caller goes on as one process; `Err(Uncontained::Broken(why))` when a user
/// namespace was entered but the user could not be mapped in it: the launch must fail.
pub(crate) fn contain() -> Result<&'static str, Uncontained> {
    if std::env::var_os(PIDNS_ENV).is_some_and(|v| v == "off") {
        return Err(Uncontained::Without(format!("{PIDNS_ENV}=off")));
    }
    // The init learns that the keeper is gone through this pipe (end of file), in case the
    // keeper died before the init set its parent-death signal.
    let (alive_r, alive_w) = pipe().map_err(Uncontained::Without)?;
    // The init tells the keeper how the server ended (its raw wait status).
    let (status_r, status_w) = pipe().map_err(Uncontained::Without)?;
    let how = enter()?;
    // SAFETY: the launcher is single-threaded (see launcher.rs), so the child is a full
    // copy of a consistent process and may run any code.
    let forked = unsafe { fork() }
        .map_err(|e| Uncontained::Broken(format!("cannot start the namespace's init: {e}")))?;
    match forked {
        ForkResult::Parent { child } => {
            drop(alive_r);
            drop(status_w);
            keeper(child, status_r, alive_w)
        }
        ForkResult::Child => {
            drop(alive_w);
            drop(status_r);
            init(alive_r, status_w);
            Ok(how)
        }
    }
}

/// Why the server runs without a PID namespace of its own.
#[derive(Debug)]
pub(crate) enum Uncontained {
    /// None could be made; nothing changed.
    Without(String),
    /// Half made: the launch cannot go on.
    Broken(String),
}

/// Enters the namespace (for the process's future children); returns how, for the report.
fn enter() -> Result<&'static str, Uncontained> {
    let uid = nix::unistd::geteuid();
    let gid = nix::unistd::getegid();
    if uid.is_root() && unshare(CloneFlags::CLONE_NEWPID).is_ok() {
        return Ok("PID namespace with a minimal init");
    }
    unshare(CloneFlags::CLONE_NEWUSER | CloneFlags::CLONE_NEWPID).map_err(|e| {
        Uncontained::Without(format!(
            "no user namespace ({e}); they may be disabled or restricted"
        ))
    })?;
    super::mounts::map_to_self(uid, gid).map_err(Uncontained::Broken)?;
    Ok("PID namespace with a minimal init (in a user namespace)")
}

fn pipe() -> Result<(OwnedFd, OwnedFd), String> {
    nix::unistd::pipe2(nix::fcntl::OFlag::O_CLOEXEC)
        .map_err(|e| format!("cannot create a pipe for the namespace's init: {e}"))
}

/// The keeper: waits for the init, then ends as the server did.
fn keeper(init: Pid, status_r: OwnedFd, alive_w: OwnedFd) -> ! {
    // Signals sent to the keeper reach the init too (the process group): ignore them here.
    let _ = sigprocmask(SigmaskHow::SIG_BLOCK, Some(&SigSet::all()), None);
    close_all_except(&[status_r.as_raw_fd(), alive_w.as_raw_fd()]);
    let init_status = loop {
        match waitpid(init, None) {
            Ok(s) => break Some(s),
            Err(nix::Error::EINTR) => continue,
            Err(_) => break None,
        }
    };
    let mut buf = [0u8; 4];
    let server_status = match nix::unistd::read(&status_r, &mut buf) {
        Ok(4) => Some(i32::from_ne_bytes(buf)),
        _ => None,
    };
    drop(alive_w);
    match (server_status, init_status) {
        (Some(raw), _) => end_like_raw(raw),
        (None, Some(WaitStatus::Exited(_, code))) => exit(code),
        (None, Some(WaitStatus::Signaled(_, sig, _))) => end_by_signal(sig),
        _ => exit(i32::from(super::EXIT_LAUNCHER_ERROR)),
    }
}

/// The init's set-up; returns in the server process.
fn init(alive_r: OwnedFd, status_w: OwnedFd) {
    let _ = sigprocmask(SigmaskHow::SIG_BLOCK, Some(&SigSet::all()), None);
    let _ = nix::sys::prctl::set_pdeathsig(Signal::SIGKILL);
    // The keeper may have died before the line above: then no signal would come.
    let mut fds = [nix::poll::PollFd::new(
        std::os::fd::AsFd::as_fd(&alive_r),
        nix::poll::PollFlags::POLLIN,
    )];
    if nix::poll::poll(&mut fds, nix::poll::PollTimeout::ZERO).unwrap_or(1) != 0 {
        exit(i32::from(super::EXIT_LAUNCHER_ERROR));
    }
    // SAFETY: still single-threaded (a fork of the single-threaded launcher).
    match unsafe { fork() } {
        // Nothing can be reported from here but the status.
        Err(_) => exit(i32::from(super::EXIT_LAUNCHER_ERROR)),
        Ok(ForkResult::Child) => {
            drop(alive_r);
            drop(status_w);
            // The server's own process group, the one the init forwards signals to.
            let _ = nix::unistd::setpgid(Pid::from_raw(0), Pid::from_raw(0));
            let _ = sigprocmask(SigmaskHow::SIG_SETMASK, Some(&SigSet::empty()), None);
        }
        Ok(ForkResult::Parent { child }) => {
            // Both sides set the group, so a signal forwarded at once finds it.
            let _ = nix::unistd::setpgid(child, child);
            close_all_except(&[alive_r.as_raw_fd(), status_w.as_raw_fd()]);
            init_loop(child, status_w)
        }
    }
}

/// PID 1: reaps everything, forwards signals to the server's group, exits with the server.
fn init_loop(server: Pid, status_w: OwnedFd) -> ! {
    let all = SigSet::all();
    loop {
        let Ok(sig) = all.wait() else { continue };
        if sig != Signal::SIGCHLD {
            let _ = killpg(server, sig);
            continue;
        }
        loop {
            match waitpid(None, Some(WaitPidFlag::WNOHANG)) {
                Ok(WaitStatus::StillAlive) | Err(_) => break,
                Ok(status) if status.pid() == Some(server) => {
                    let raw = raw_status(status);
                    let _ = nix::unistd::write(&status_w, &raw.to_ne_bytes());
                    // Exiting ends every process left in the namespace.
                    exit(0);
                }
                Ok(_) => {}
            }
        }
    }
}

/// A wait status back in the kernel's raw form.
fn raw_status(status: WaitStatus) -> i32 {
    match status {
        WaitStatus::Exited(_, code) => (code & 0xff) << 8,
        WaitStatus::Signaled(_, sig, core) => sig as i32 | if core { 0x80 } else { 0 },
        _ => i32::from(super::EXIT_LAUNCHER_ERROR) << 8,
    }
}

fn end_like_raw(raw: i32) -> ! {
    if raw & 0x7f == 0 {
        exit((raw >> 8) & 0xff);
    }
    match Signal::try_from(raw & 0x7f) {
        Ok(sig) => end_by_signal(sig),
        Err(_) => exit(128 + (raw & 0x7f)),
    }
}

/// Ends this process by `sig`, as the server ended, without a core file of the keeper.
fn end_by_signal(sig: Signal) -> ! {
    let _ = nix::sys::resource::setrlimit(nix::sys::resource::Resource::RLIMIT_CORE, 0, 0);
    // SAFETY: restoring the default disposition installs no handler.
    let _ = unsafe { nix::sys::signal::signal(sig, nix::sys::signal::SigHandler::SigDfl) };
    let mut one = SigSet::empty();
    one.add(sig);
    let _ = nix::sys::signal::raise(sig);
    let _ = sigprocmask(SigmaskHow::SIG_UNBLOCK, Some(&one), None);
    // A signal whose default is not to terminate (it cannot have ended the server).
    exit(128 + sig as i32)
}

fn exit(code: i32) -> ! {
    // SAFETY: `_exit` ends the process at once; nothing of this fork needs flushing (its
    // stdio is closed) and running the launcher's exit handlers twice would be wrong.
    unsafe { libc::_exit(code) }
}

/// Closes every descriptor but `keep`.
fn close_all_except(keep: &[RawFd]) {
    let mut keep = keep.to_vec();
    keep.sort_unstable();
    let mut from: libc::c_uint = 0;
    for &k in &keep {
        let k = k as libc::c_uint;
        if k > from {
            close_range(from, k - 1);
        }
        from = k + 1;
    }
    close_range(from, libc::c_uint::MAX);
}

fn close_range(first: libc::c_uint, last: libc::c_uint) {
    // SAFETY: close_range(2) takes plain integers; the descriptors it closes are owned by
    // nothing else in this fork (the process ends without touching them again).
    let r = unsafe { libc::syscall(libc::SYS_close_range, first, last, 0 as libc::c_uint) };
    if r == 0 {
        return;
    }
    // Kernels before 5.11: close what /proc/self/fd lists in the range.
    for fd in super::fds::open_fds().unwrap_or_default() {
        if (first..=last).contains(&(fd as libc::c_uint)) {
            // SAFETY: as above; a number that was the directory's own descriptor fails
            // with EBADF, which is ignored.
            unsafe { libc::close(fd) };
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn raw_statuses_round_trip() {
        let p = Pid::from_raw(2);
        assert_eq!(raw_status(WaitStatus::Exited(p, 3)), 3 << 8);
        assert_eq!(
            raw_status(WaitStatus::Signaled(p, Signal::SIGKILL, false)),
            9
        );
        use std::os::unix::process::ExitStatusExt;
        let s = std::process::ExitStatus::from_raw(raw_status(WaitStatus::Signaled(
            p,
            Signal::SIGTERM,
            false,
        )));
        assert_eq!(s.signal(), Some(15));
    }
}
