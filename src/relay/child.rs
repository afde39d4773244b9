//! The server process: spawning it in its own process group with a parent-death signal,
//! passing its stderr through line by line (prefixed with the server's name and stripped of
//! control characters, see [`clean_line`]; its last lines kept in a [`StderrTail`]),
//! signalling its group, and reading its exit.
//!
//! The child runs in its own process group so that signals rootfence forwards (and the final
//! SIGKILL) reach everything it started, e.g. `npx` and the `node` it runs. `PR_SET_PDEATHSIG`
//! makes the kernel SIGKILL the child if rootfence dies without cleaning up (even `kill -9`).
//! The signal fires when the *thread* that spawned the child exits, so [`spawn`] must be
//! called from a thread that lives as long as the session: the relay calls it from the task
//! `block_on` drives on the main thread.

use std::collections::VecDeque;
use std::ffi::OsString;
use std::io::{BufRead, BufReader, Write};
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::process::{ExitStatus, Stdio};
use std::sync::{Arc, Mutex};

use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;
use tokio::process::{Child, ChildStdin, ChildStdout};

use crate::sandbox::LAUNCHER_ARG;

/// Longest stderr line passed through; the rest of a longer line is dropped and counted
/// (a server cannot make rootfence hold more than this per line).
const STDERR_LINE: usize = 4 * 1024;
/// How many of the server's last stderr lines are kept (for the error when it dies before
/// answering `initialize`).
const TAIL_LINES: usize = 20;
/// How many denied paths seen on stderr are kept.
const TAIL_DENIED: usize = 10;

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
    /// The last lines of its stderr, and its command line.
    pub words: super::last_words::LastWords,
}

/// The last lines a server wrote to stderr (cleaned, as shown), and the paths those lines
/// say were denied (`EACCES`, `EPERM`). Bounded: [`TAIL_LINES`] lines of at most
/// [`STDERR_LINE`] bytes, [`TAIL_DENIED`] paths.
#[derive(Debug, Default)]
pub struct StderrTail {
    inner: Mutex<TailInner>,
    /// The server's stderr reached end of file.
    done: std::sync::atomic::AtomicBool,
}

#[derive(Debug, Default)]
struct TailInner {
    lines: VecDeque<String>,
    denied: Vec<String>,
}

impl StderrTail {
    fn push(&self, line: &str) {
        let mut t = crate::relock(&self.inner);
        if t.lines.len() == TAIL_LINES {
            t.lines.pop_front();
        }
        t.lines.push_back(line.to_owned());
        for path in denied_paths(line) {
            if t.denied.len() < TAIL_DENIED && !t.denied.contains(&path) {
                t.denied.push(path);
            }
        }
    }

    /// Whether the server's stderr was read to its end.
    pub fn finished(&self) -> bool {
        self.done.load(std::sync::atomic::Ordering::Acquire)
    }

    /// The last lines, oldest first.
    pub fn lines(&self) -> Vec<String> {
        crate::relock(&self.inner).lines.iter().cloned().collect()
    }

    /// Paths the lines said were denied.
    pub fn denied(&self) -> Vec<String> {
        crate::relock(&self.inner).denied.clone()
    }
}

/// Starts the server command: stdin and stdout piped, stderr passed through to rootfence's
/// stderr line by line (each prefixed with `[name]`), in its own process group, killed if
/// rootfence dies.
pub fn spawn(mut cmd: std::process::Command) -> Result<ServerProcess, SpawnError> {
    let program = display_program(cmd.get_program());
    let argv = server_argv(&cmd);
    let prefix = format!("[{}] ", server_name(&argv));
    let sandboxed = cmd.get_args().next().is_some_and(|a| a == LAUNCHER_ARG);
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
    grow_pipe(&stdin);
    grow_pipe(&stdout);
    let tail = Arc::new(StderrTail::default());
    {
        let tail = Arc::clone(&tail);
        std::thread::Builder::new()
            .name("server-stderr".into())
            .spawn(move || pass_stderr(stderr_read, &prefix, &tail))
            .map_err(other)?;
    }
    Ok(ServerProcess {
        child,
        pgid: Pid::from_raw(pid as i32),
        stdin,
        stdout,
        words: super::last_words::LastWords {
            tail,
            argv,
            sandboxed,
        },
    })
}

/// The server's own command line: after `--` when `cmd` is the sandbox launcher, else the
/// command itself.
pub fn server_argv(cmd: &std::process::Command) -> Vec<String> {
    let args: Vec<String> = cmd
        .get_args()
        .map(|a| a.to_string_lossy().into_owned())
        .collect();
    if args.first().map(String::as_str) == Some(LAUNCHER_ARG)
        && let Some(dash) = args.iter().position(|a| a == "--")
    {
        return args[dash + 1..].to_vec();
    }
    std::iter::once(display_program(cmd.get_program()))
        .chain(args)
        .collect()
}

/// Programs that only run the server: its name is the package or script they are given.
const RUNNERS: &[&str] = &[
    "npx", "uvx", "uv", "node", "python", "python3", "bunx", "bun", "pnpm", "deno", "pipx", "npm",
    "yarn", "docker", "podman",
];
/// Subcommands of those runners that come before the package.
const RUNNER_VERBS: &[&str] = &["run", "dlx", "exec", "x", "tool"];

/// A short name for the server's stderr lines: the program's file name, and for a runner
/// (`npx`, `uvx`, `node`, ...) the package or script it runs. Control characters are
/// dropped and the length bounded, so the name itself cannot forge anything.
pub fn server_name(argv: &[String]) -> String {
    let base = |s: &str| {
        s.trim_end_matches('/')
            .rsplit('/')
            .next()
            .unwrap_or(s)
            .to_owned()
    };
    let Some(first) = argv.first() else {
        return "server".into();
    };
    let mut name = base(first);
    let runner = name.trim_end_matches(|c: char| c.is_ascii_digit() || c == '.');
    if (RUNNERS.contains(&name.as_str()) || RUNNERS.contains(&runner))
        && let Some(what) = argv[1..]
            .iter()
            .find(|a| !a.starts_with('-') && !RUNNER_VERBS.contains(&a.as_str()))
            .filter(|a| !a.contains(char::is_whitespace))
    {
        name = format!("{name} {}", base(what));
    }
    let out: String = clean_line(name.as_bytes()).chars().take(64).collect();
    if out.is_empty() { "server".into() } else { out }
}

/// A server's stderr line as it may be shown: invalid UTF-8 replaced, escape sequences
/// (CSI, OSC, DCS, ...) removed whole, every other control character (C0 but tab, DEL, C1,
/// the bidirectional overrides) removed, tabs turned to spaces. What is left cannot move
/// the cursor, set a title, rewrite a line already written, or reorder text.
pub fn clean_line(raw: &[u8]) -> String {
    let text = String::from_utf8_lossy(raw);
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\u{1b}' => match chars.next() {
                // CSI: parameters and intermediates, then one final byte.
                Some('[') => {
                    for c in chars.by_ref() {
                        if ('\u{40}'..='\u{7e}').contains(&c) {
                            break;
                        }
                    }
                }
                // OSC, DCS, SOS, PM, APC: up to BEL or ST (ESC \).
                Some(']' | 'P' | 'X' | '^' | '_') => {
                    while let Some(c) = chars.next() {
                        if c == '\u{7}' || c == '\u{9c}' {
                            break;
                        }
                        if c == '\u{1b}' && chars.peek() == Some(&'\\') {
                            chars.next();
                            break;
                        }
                    }
                }
                // A two-character escape (or ESC at the end): both dropped.
                _ => {}
            },
            '\t' => out.push(' '),
            c if c.is_control() => {}
            '\u{200e}' | '\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}' => {}
            c => out.push(c),
        }
    }
    out
}

/// Absolute paths named in a line that reports a denial (`Permission denied`, `EACCES`,
/// `Operation not permitted`, `EPERM`).
fn denied_paths(line: &str) -> Vec<String> {
    const SIGNS: &[&str] = &[
        "Permission denied",
        "permission denied",
        "EACCES",
        "Operation not permitted",
        "EPERM",
        "os error 13",
        "os error 1)",
    ];
    if !SIGNS.iter().any(|s| line.contains(s)) {
        return Vec::new();
    }
    line.split(|c: char| c.is_whitespace() || matches!(c, '\'' | '"' | '`' | '(' | ')' | ','))
        .map(|w| w.trim_end_matches([':', ';', '.', ',']))
        .filter(|w| w.starts_with('/') && w.len() > 1)
        .map(str::to_owned)
        .collect()
}

/// Copies the server's stderr to rootfence's stderr one line per write, prefixed with
/// `prefix` and cleaned ([`clean_line`]), so its lines never interleave with rootfence's own
/// mid-line and can never pass for them. A line longer than [`STDERR_LINE`] is cut and the
/// rest counted, so memory stays bounded whatever the server writes. It runs on its own
/// thread with blocking I/O: stderr is not the protocol, and a host that stops reading it
/// must not stall the relay.
fn pass_stderr(from: std::io::PipeReader, prefix: &str, tail: &StderrTail) {
    let mut reader = BufReader::with_capacity(STDERR_LINE, from);
    let mut line = Vec::with_capacity(STDERR_LINE);
    loop {
        line.clear();
        let mut cut = 0usize;
        // Read up to the newline, keeping the first STDERR_LINE bytes.
        let eof = loop {
            let buf = match reader.fill_buf() {
                Ok([]) => break true,
                Ok(b) => b,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(_) => break true,
            };
            let (chunk, done) = match memchr::memchr(b'\n', buf) {
                Some(i) => (&buf[..i], Some(i + 1)),
                None => (buf, None),
            };
            let room = STDERR_LINE - line.len();
            line.extend_from_slice(&chunk[..chunk.len().min(room)]);
            cut += chunk.len().saturating_sub(room);
            let used = done.unwrap_or(buf.len());
            reader.consume(used);
            if done.is_some() {
                break false;
            }
        };
        // (Nothing after the last newline at the end of the stream: no line to show.)
        if !(eof && line.is_empty() && cut == 0) {
            let mut shown = clean_line(&line);
            if cut > 0 {
                shown.push_str(&format!(" [{cut} more bytes of this line not shown]"));
            }
            tail.push(&shown);
            let _ = std::io::stderr().write_all(format!("{prefix}{shown}\n").as_bytes());
        }
        if eof {
            tail.done.store(true, std::sync::atomic::Ordering::Release);
            return;
        }
    }
}

/// Pipe capacity rootfence asks for on the pipes it relays: with the default 64 KiB, a large
/// message costs a context switch per 64 KiB on each hop.
pub(crate) const PIPE_SIZE: i32 = 1 << 20;

/// Grows a pipe's buffer to [`PIPE_SIZE`]. Best effort: the limit is
/// `/proc/sys/fs/pipe-max-size` (1 MiB by default) and a smaller pipe still works.
pub(crate) fn grow_pipe(fd: impl std::os::fd::AsFd) {
    use nix::fcntl::{FcntlArg, fcntl};
    if let Err(e) = fcntl(fd, FcntlArg::F_SETPIPE_SZ(PIPE_SIZE)) {
        tracing::debug!("could not grow a pipe to {PIPE_SIZE} bytes: {e}");
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
    fn stderr_lines_lose_every_control_character() {
        for (raw, want) in [
            ("plain text", "plain text"),
            ("a\tb\r", "a b"),
            ("\u{1b}[2J\u{1b}[1;1Hrootfence: forged", "rootfence: forged"),
            ("\u{1b}]0;owned title\u{7}after", "after"),
            ("\u{1b}]0;title\u{1b}\\after", "after"),
            ("bell\u{7} del\u{7f} c1\u{9b}31m", "bell del c131m"),
            ("\u{202e}evil", "evil"),
            ("esc at end\u{1b}", "esc at end"),
            ("\u{1b}Pdcs stuff\u{1b}\\ok", "ok"),
        ] {
            assert_eq!(clean_line(raw.as_bytes()), want, "{raw:?}");
        }
        assert_eq!(clean_line(b"bad \xff utf8"), "bad \u{fffd} utf8");
    }

    #[test]
    fn server_names_follow_runners_to_the_package() {
        let n = |v: &[&str]| server_name(&v.iter().map(|s| s.to_string()).collect::<Vec<_>>());
        assert_eq!(n(&["/usr/bin/test_server", "--log", "x"]), "test_server");
        assert_eq!(
            n(&["npx", "-y", "@modelcontextprotocol/server-filesystem", "/d"]),
            "npx server-filesystem"
        );
        assert_eq!(n(&["uvx", "mcp-server-git"]), "uvx mcp-server-git");
        assert_eq!(n(&["python3.12", "-m", "srv"]), "python3.12 srv");
        assert_eq!(n(&["uv", "run", "server.py"]), "uv server.py");
        assert_eq!(n(&["evil\u{1b}[2Jname"]), "evilname");
        assert_eq!(n(&[]), "server");
        assert_eq!(n(&["sh", "-c", "exec x"]), "sh");
    }

    #[test]
    fn denied_paths_are_read_from_permission_errors() {
        assert_eq!(
            denied_paths("error: Permission denied (os error 13): '/home/u/.local/bin/uv'"),
            ["/home/u/.local/bin/uv"]
        );
        assert_eq!(
            denied_paths("Error: EACCES: permission denied, open '/data/x.json'"),
            ["/data/x.json"]
        );
        assert!(denied_paths("reading /etc/hosts").is_empty());
    }

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
