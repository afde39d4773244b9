//! The server process: spawning it in its own process group with a parent-death signal,
//! passing its stderr through line by line, signalling its group, and reading its exit.
//!
//! The child runs in its own process group so that signals rootfence forwards (and the final
//! SIGKILL) reach everything it started, e.g. `npx` and the `node` it runs. `PR_SET_PDEATHSIG`
//! makes the kernel SIGKILL the child if rootfence dies without cleaning up (even `kill -9`).
//! The signal fires when the *thread* that spawned the child exits, so [`spawn`] must be
//! called from a thread that lives as long as the session: the relay calls it from the task
//! `block_on` drives on the main thread.

use std::ffi::OsString;
use std::io::{BufRead, BufReader, Read, Write};
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::process::{ExitStatus, Stdio};

use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;
use tokio::process::{Child, ChildStdin, ChildStdout};

/// Longest stderr line passed through in one write; longer lines are passed in pieces.
const STDERR_LINE: u64 = 64 * 1024;

/// Why the server could not be started.
#[derive(Debug, thiserror::Error)]
pub enum SpawnError {
    /// The program does not exist.
    #[error(
        "server command not found: `{program}`; check the spelling and that it is on PATH ({source})"
    )]
    NotFound {
        /// The program as given.
        program: String,
        /// The OS error.
        source: std::io::Error,
    },
    /// The program exists but cannot be executed.
    #[error("server command `{program}` cannot be executed; check its permissions ({source})")]
    NotExecutable {
        /// The program as given.
        program: String,
        /// The OS error.
        source: std::io::Error,
    },
    /// Anything else.
    #[error("could not start server command `{program}`: {source}")]
    Other {
        /// The program as given.
        program: String,
        /// The OS error.
        source: std::io::Error,
    },
}

/// A running server.
#[derive(Debug)]
pub struct ServerProcess {
    /// The child, to wait for.
    pub child: Child,
    /// Its process group (its own pid).
    pub pgid: Pid,
    /// Its stdin.
    pub stdin: ChildStdin,
    /// Its stdout.
    pub stdout: ChildStdout,
}

/// Starts the server command: stdin and stdout piped, stderr passed through to rootfence's
/// stderr line by line, in its own process group, killed if rootfence dies.
pub fn spawn(mut cmd: std::process::Command) -> Result<ServerProcess, SpawnError> {
    let program = display_program(cmd.get_program());
    let other = |source| SpawnError::Other {
        program: program.clone(),
        source,
    };
    let (stderr_read, stderr_write) = std::io::pipe().map_err(other)?;
    cmd.stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(stderr_write)
        .process_group(0);
    let parent = nix::unistd::getpid();
    // SAFETY: the closure runs in the forked child before exec, where only async-signal-safe
    // operations are allowed. prctl(2) and getppid(2) are plain syscalls; the closure does not
    // allocate (errors are built from raw errno values, which `io::Error` stores inline), take
    // locks, or touch state shared with other threads.
    #[allow(unsafe_code)]
    unsafe {
        cmd.pre_exec(move || {
            nix::sys::prctl::set_pdeathsig(Signal::SIGKILL)
                .map_err(|e| std::io::Error::from_raw_os_error(e as i32))?;
            // rootfence may have died between fork and prctl: then no signal would ever come.
            if nix::unistd::getppid() != parent {
                return Err(std::io::Error::from_raw_os_error(nix::libc::ESRCH));
            }
            Ok(())
        });
    }
    let mut cmd = tokio::process::Command::from(cmd);
    // If rootfence unwinds without reaching its shutdown path, the child still dies.
    cmd.kill_on_drop(true);
    let spawned = cmd.spawn();
    // Our copy of the stderr write end must close, or the pass-through never sees EOF.
    drop(cmd);
    let mut child = spawned.map_err(|source| match source.kind() {
        std::io::ErrorKind::NotFound => SpawnError::NotFound {
            program: program.clone(),
            source,
        },
        std::io::ErrorKind::PermissionDenied => SpawnError::NotExecutable {
            program: program.clone(),
            source,
        },
        _ => other(source),
    })?;
    let pid = child.id().expect("a just-spawned child has a pid");
    let stdin = child.stdin.take().expect("stdin was piped");
    let stdout = child.stdout.take().expect("stdout was piped");
    std::thread::Builder::new()
        .name("server-stderr".into())
        .spawn(move || pass_stderr(stderr_read))
        .map_err(other)?;
    Ok(ServerProcess {
        child,
        pgid: Pid::from_raw(pid as i32),
        stdin,
        stdout,
    })
}

/// Copies the server's stderr to rootfence's stderr one line per write, so its lines never
/// interleave with rootfence's own diagnostics mid-line. It runs on its own thread with
/// blocking I/O: stderr is not the protocol, and a host that stops reading it must not stall
/// the relay.
fn pass_stderr(from: std::io::PipeReader) {
    let mut reader = BufReader::with_capacity(STDERR_LINE as usize, from);
    let mut line = Vec::new();
    loop {
        line.clear();
        match (&mut reader).take(STDERR_LINE).read_until(b'\n', &mut line) {
            Ok(0) | Err(_) => return,
            Ok(_) => {
                let _ = std::io::stderr().write_all(&line);
            }
        }
    }
}

/// Sends a signal to the server's whole process group. A group that is already gone is fine.
pub fn signal_group(pgid: Pid, signal: Signal) {
    match killpg(pgid, signal) {
        Ok(()) | Err(nix::errno::Errno::ESRCH) => {}
        Err(e) => tracing::warn!("could not send {signal} to the server's process group: {e}"),
    }
}

/// rootfence's exit code for the server's exit status: its code, or 128 + the signal.
pub fn exit_code(status: ExitStatus) -> u8 {
    match (status.code(), status.signal()) {
        (Some(code), _) => code as u8,
        (None, Some(sig)) => 128u8.saturating_add(sig as u8),
        (None, None) => 1,
    }
}

/// A human description of an exit status: "exited with status 3", "was killed by SIGKILL".
pub fn describe_status(status: ExitStatus) -> String {
    match (status.code(), status.signal()) {
        (Some(code), _) => format!("the server exited with status {code}"),
        (None, Some(sig)) => match Signal::try_from(sig) {
            Ok(s) => format!("the server was killed by {s}"),
            Err(_) => format!("the server was killed by signal {sig}"),
        },
        (None, None) => "the server ended".into(),
    }
}

fn display_program(p: &std::ffi::OsStr) -> String {
    OsString::from(p).to_string_lossy().into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exit_codes_follow_the_shell_convention() {
        assert_eq!(exit_code(ExitStatus::from_raw(3 << 8)), 3);
        assert_eq!(exit_code(ExitStatus::from_raw(9)), 137);
        assert_eq!(exit_code(ExitStatus::from_raw(15)), 143);
        assert_eq!(
            describe_status(ExitStatus::from_raw(9)),
            "the server was killed by SIGKILL"
        );
        assert_eq!(
            describe_status(ExitStatus::from_raw(0)),
            "the server exited with status 0"
        );
    }
}
