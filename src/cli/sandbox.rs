//! `rootfence sandbox probe` and `rootfence sandbox exec` (issue 7). (The hidden
//! launcher entry point is `rootfence::sandbox::launcher`, called from `main`.)
//!
//! `exec` runs a command confined, without the MCP relay, and prints the enforcement
//! report on stderr: a quick way to see what a `[sandbox]` table does. `probe` does the
//! same under strace (when installed) and prints the paths and ports the command was
//! denied as a `[sandbox]` snippet on stdout.

use std::ffi::OsString;
use std::io::Write;
use std::os::fd::AsFd;
use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::process::{ExitCode, ExitStatus, Stdio};
use std::time::Duration;

use anyhow::{Context, bail};
use rootfence::sandbox::{self, Access, Network, SandboxMode, SandboxRoot, SandboxSpec, probe};

#[derive(Debug, clap::Subcommand)]
pub enum SandboxCommand {
    /// Run a command confined and report which paths it was denied, as a `[sandbox]`
    /// snippet on stdout. The command's own stdout goes to stderr; pipe MCP requests to
    /// its stdin to exercise it.
    Probe(Box<ProbeArgs>),
    /// Run a command confined (no MCP relay) and print the enforcement report on stderr.
    Exec(Box<ExecArgs>),
}

/// What to grant; the same vocabulary as the policy's `[sandbox]` table.
#[derive(Debug, clap::Args)]
pub struct SpecArgs {
    /// A policy layer whose [sandbox] table and deny rules apply, as `rootfence run`
    /// applies them (repeatable, in order). The flags below add to it.
    #[arg(long = "policy", value_name = "FILE")]
    policies: Vec<PathBuf>,
    /// A root the command may read and write (repeatable).
    #[arg(long = "root", value_name = "PATH")]
    roots: Vec<PathBuf>,
    /// A root the command may only read (repeatable).
    #[arg(long = "root-ro", value_name = "PATH")]
    roots_ro: Vec<PathBuf>,
    /// An extra path the command may read (repeatable).
    #[arg(long, value_name = "PATH")]
    read: Vec<PathBuf>,
    /// An extra path the command may read and write (repeatable).
    #[arg(long, value_name = "PATH")]
    write: Vec<PathBuf>,
    /// A path kept unreachable even inside a root (repeatable; globs are reported only).
    #[arg(long, value_name = "PATH")]
    deny: Vec<String>,
    /// TCP network: allow, deny, or a comma-separated list of ports. Default: the
    /// policy's, else allow.
    #[arg(long, value_name = "allow|deny|PORTS")]
    network: Option<String>,
    /// An environment variable passed through (exact name or PREFIX*; repeatable).
    #[arg(long, value_name = "NAME")]
    env: Vec<String>,
    /// Do not grant the default profile (system, interpreter, caches, devices).
    #[arg(long)]
    no_default_profile: bool,
    /// Do not create a private temp dir.
    #[arg(long)]
    no_private_tmp: bool,
    /// best-effort, strict, or off (no confinement: the baseline for comparisons).
    #[arg(long, value_name = "MODE", default_value = "best-effort")]
    mode: String,
    /// RLIMIT_NOFILE.
    #[arg(long, value_name = "N")]
    nofile: Option<u64>,
    /// RLIMIT_AS in bytes.
    #[arg(long, value_name = "BYTES")]
    address_space: Option<u64>,
    /// RLIMIT_CPU in seconds.
    #[arg(long, value_name = "SECS")]
    cpu_seconds: Option<u64>,
    /// RLIMIT_NPROC.
    #[arg(long, value_name = "N")]
    processes: Option<u64>,
}

/// Arguments of `sandbox probe`.
#[derive(Debug, clap::Args)]
pub struct ProbeArgs {
    #[command(flatten)]
    spec: SpecArgs,
    /// Do not use strace even if installed; read denials from the command's stderr only.
    #[arg(long)]
    no_strace: bool,
    /// Stop the command (and everything it started) after this many seconds in all, then
    /// print what it was denied. Servers usually run until their stdin closes; Ctrl-C
    /// stops it early the same way.
    #[arg(long, value_name = "SECS", default_value_t = 30)]
    timeout: u64,
    /// The command and its arguments, after `--`.
    #[arg(last = true, required = true, value_name = "COMMAND")]
    command: Vec<OsString>,
}

/// Arguments of `sandbox exec`.
#[derive(Debug, clap::Args)]
pub struct ExecArgs {
    #[command(flatten)]
    spec: SpecArgs,
    /// Do not print the enforcement report.
    #[arg(long, short)]
    quiet: bool,
    /// The command and its arguments, after `--`.
    #[arg(last = true, required = true, value_name = "COMMAND")]
    command: Vec<OsString>,
}

pub fn run(cmd: SandboxCommand) -> anyhow::Result<ExitCode> {
    match cmd {
        SandboxCommand::Probe(args) => run_probe(*args),
        SandboxCommand::Exec(args) => run_exec(*args),
    }
}

fn build_spec(a: &SpecArgs) -> anyhow::Result<SandboxSpec> {
    let mode: SandboxMode = a.mode.parse().map_err(anyhow::Error::msg)?;
    let abs = |p: &PathBuf| {
        std::path::absolute(p).with_context(|| format!("cannot make '{}' absolute", p.display()))
    };
    let mut roots = Vec::new();
    for (paths, access) in [
        (&a.roots, Access::ReadWrite),
        (&a.roots_ro, Access::ReadOnly),
    ] {
        for p in paths {
            roots.push(SandboxRoot {
                path: abs(p)?,
                access,
            });
        }
    }
    let mut spec = if a.policies.is_empty() {
        for name in &a.env {
            sandbox::check_env_name(name)?;
        }
        let mut spec = SandboxSpec::new(mode);
        spec.roots = roots;
        spec.read = a.read.iter().map(abs).collect::<Result<_, _>>()?;
        spec.write = a.write.iter().map(abs).collect::<Result<_, _>>()?;
        spec.env = a.env.clone();
        spec
    } else {
        for p in &a.policies {
            let builtin = p.to_str().is_some_and(|s| s.starts_with("builtin:"));
            if !builtin && !p.exists() {
                bail!(
                    "policy file {} does not exist (hint: check the path, or use builtin:default)",
                    p.display()
                );
            }
        }
        let policy = rootfence::policy::Policy::load(&a.policies)
            .map_err(|e| anyhow::anyhow!("invalid policy\n{e}"))?;
        let grants = sandbox::ServerGrants {
            env: a.env.clone(),
            read: a.read.clone(),
            write: a.write.clone(),
        };
        let cwd = std::env::current_dir().context("cannot read the current directory")?;
        let (spec, warnings) = rootfence::policy::server_spec(&policy, mode, roots, &grants, &cwd)?;
        for w in warnings {
            rootfence::stderr_line!("rootfence: warning: {w}");
        }
        spec
    };
    for d in &a.deny {
        if d.contains(['*', '?', '[', '{']) {
            spec.add_deny_pattern(d);
        } else {
            spec.add_deny_pattern(&abs(&PathBuf::from(d))?.to_string_lossy());
        }
    }
    if let Some(n) = &a.network {
        spec.network = parse_network(n)?;
    }
    spec.default_profile = !a.no_default_profile;
    spec.private_tmp = !a.no_private_tmp;
    // A limit given on the command line replaces the default one; the others stay.
    let limits = &mut spec.rlimits;
    limits.nofile = a.nofile.or(limits.nofile);
    limits.address_space = a.address_space.or(limits.address_space);
    limits.cpu_seconds = a.cpu_seconds.or(limits.cpu_seconds);
    limits.processes = a.processes.or(limits.processes);
    Ok(spec)
}

fn parse_network(s: &str) -> anyhow::Result<Network> {
    Ok(match s {
        "allow" => Network::Allow,
        "deny" => Network::Deny,
        ports => Network::Ports(
            ports
                .split(',')
                .map(|p| {
                    p.trim().parse::<u16>().with_context(|| {
                        format!("'{p}' in --network is not a TCP port; use allow, deny or 80,443")
                    })
                })
                .collect::<Result<_, _>>()?,
        ),
    })
}

fn run_exec(args: ExecArgs) -> anyhow::Result<ExitCode> {
    let spec = build_spec(&args.spec)?;
    let sandbox::Prepared {
        mut command,
        mut session,
        ..
    } = sandbox::prepare(&spec, &args.command)?;
    let mut child = command
        .spawn()
        .context("cannot start the sandbox launcher")?;
    let reader = session
        .take_report_reader()
        .context("report reader already taken")?;
    let report = reader.read_blocking();
    if let Ok(report) = &report
        && !args.quiet
    {
        print_report(report);
    }
    let status = child.wait().context("cannot wait for the command")?;
    if let Err(e) = report {
        rootfence::stderr_line!("rootfence: error: {e}");
    }
    drop(session);
    // The server's exit as `sandbox exec`'s own, by the shell's convention (`run`'s too).
    Ok(ExitCode::from(rootfence::relay::exit_code(status)))
}

fn print_report(report: &sandbox::EnforcementReport) {
    let mut err = std::io::stderr().lock();
    for line in report.to_string().lines() {
        let _ = writeln!(err, "rootfence: {line}");
    }
}

/// Largest amount of the command's stderr kept for analysis.
const MAX_STDERR_KEPT: usize = 4 << 20;

fn run_probe(args: ProbeArgs) -> anyhow::Result<ExitCode> {
    let spec = build_spec(&args.spec)?;
    let exe = std::env::current_exe().context("cannot find the rootfence executable")?;
    let strace = (!args.no_strace).then(probe::find_strace).flatten();
    let logdir = tempfile::tempdir().context("cannot create a directory for the strace log")?;
    let log = logdir.path().join("strace.log");
    let prepared = match &strace {
        Some(s) => probe::prepare_traced(&spec, &args.command, &exe, s, &log)?,
        None => {
            rootfence::stderr_line!(
                "rootfence: strace not found{}: denials are read from the command's stderr \
                 only, which misses what it does not print (install strace for a full probe)",
                if args.no_strace { " (--no-strace)" } else { "" }
            );
            sandbox::prepare_with_launcher(&spec, &args.command, &exe)?
        }
    };
    let sandbox::Prepared {
        mut command,
        mut session,
        ..
    } = prepared;
    // The command's stdout would mix with the snippet: send it to stderr. Its own process
    // group, so that stopping it reaches everything it started (strace, the launcher, the
    // server and its children), and a terminal's Ctrl-C reaches rootfence only.
    let stdout_to_stderr = std::io::stderr()
        .as_fd()
        .try_clone_to_owned()
        .context("cannot duplicate stderr")?;
    command
        .stdout(Stdio::from(stdout_to_stderr))
        .stderr(Stdio::piped())
        .process_group(0);
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    let timeout = Duration::from_secs(args.timeout);
    let (end, stderr_text, report) = runtime.block_on(async {
        let mut child = tokio::process::Command::from(command)
            .spawn()
            .with_context(|| match &strace {
                Some(s) => format!("cannot start {}", s.display()),
                None => "cannot start the sandbox launcher".to_owned(),
            })?;
        let reader = session
            .take_report_reader()
            .context("report reader already taken")?;
        // The report is printed as soon as it arrives; under strace the pipe reaches end
        // of file only when strace exits, so it is read beside the wait, not before it.
        let report = std::thread::spawn(move || reader.read_each(print_report));
        let tee = tee_stderr(child.stderr.take());
        let end = wait_or_stop(&mut child, timeout).await?;
        // Bounded: a process that left the group could keep the pipe open.
        let stderr_text = tokio::time::timeout(Duration::from_secs(2), tee)
            .await
            .ok()
            .and_then(Result::ok)
            .unwrap_or_default();
        anyhow::Ok((end, stderr_text, report))
    })?;
    runtime.shutdown_background();
    let report = report.join().unwrap_or(Err(sandbox::LaunchError::NoReport));
    if let Err(e) = &report {
        rootfence::stderr_line!("rootfence: error: {e}");
    }
    rootfence::stderr_line!(
        "rootfence: probe: command ended: {}",
        match &end {
            ProbeEnd::Exited(s) => s.to_string(),
            ProbeEnd::Timeout => format!(
                "stopped after {} s (--timeout), with everything it started",
                args.timeout
            ),
            ProbeEnd::Signal(name) => format!("stopped on {name}, with everything it started"),
        }
    );

    let findings = if strace.is_some() {
        let findings = probe::read_strace_log(&log);
        if !findings.restricted && report.is_ok() {
            rootfence::stderr_line!(
                "rootfence: probe: the strace log shows no landlock_restrict_self; \
                 Landlock is not enforcing here, so nothing can be denied by it"
            );
        }
        findings
    } else {
        // Without strace, what the command printed is all there is to go on.
        probe::parse_stderr(&stderr_text)
    };

    for d in &findings.denials {
        rootfence::stderr_line!(
            "rootfence: probe: denied {} {} ({})",
            d.need.verb(),
            d.path.display(),
            d.op
        );
    }
    for p in &findings.connect_ports {
        rootfence::stderr_line!("rootfence: probe: denied TCP connect to port {p}");
    }
    for p in &findings.bind_ports {
        rootfence::stderr_line!("rootfence: probe: denied TCP bind to port {p}");
    }
    if findings.signals > 0 {
        rootfence::stderr_line!(
            "rootfence: probe: {} signal(s) to processes outside the sandbox refused",
            findings.signals
        );
    }
    let suggestion = probe::suggest_in(&findings, &spec, &probe::Context::current());
    for (p, why) in &suggestion.left_out {
        rootfence::stderr_line!("rootfence: probe: not suggested: {}: {why}", p.display());
    }
    let restricted = spec.network != Network::Allow;
    let snippet = probe::render_toml(&suggestion, restricted);
    let mut out = std::io::stdout().lock();
    // A closed stdout (`| head -1`) is not worth a panic.
    let _ = out.write_all(snippet.as_bytes()).and_then(|()| out.flush());
    drop(session);
    Ok(match end {
        ProbeEnd::Signal("SIGINT") => ExitCode::from(130),
        ProbeEnd::Signal("SIGHUP") => ExitCode::from(129),
        ProbeEnd::Signal(_) => ExitCode::from(143),
        _ => ExitCode::SUCCESS,
    })
}

/// How the probed command ended.
enum ProbeEnd {
    /// By itself.
    Exited(ExitStatus),
    /// Stopped at `--timeout`.
    Timeout,
    /// Stopped because rootfence got this signal.
    Signal(&'static str),
}

/// Waits for the command; at the timeout or on SIGINT/SIGTERM/SIGHUP, stops its whole
/// process group (TERM, then KILL after a grace period). Either way nothing of the group
/// is left running when this returns; a SIGKILL of rootfence itself is covered by the
/// parent-death signals of strace and the launcher.
async fn wait_or_stop(
    child: &mut tokio::process::Child,
    timeout: Duration,
) -> anyhow::Result<ProbeEnd> {
    use tokio::signal::unix::{SignalKind, signal};
    let pgid = child
        .id()
        .map(|id| nix::unistd::Pid::from_raw(-(id as i32)));
    let mut int = signal(SignalKind::interrupt())?;
    let mut term = signal(SignalKind::terminate())?;
    let mut hup = signal(SignalKind::hangup())?;
    let end = tokio::select! {
        s = child.wait() => ProbeEnd::Exited(s?),
        _ = tokio::time::sleep(timeout) => ProbeEnd::Timeout,
        _ = int.recv() => ProbeEnd::Signal("SIGINT"),
        _ = term.recv() => ProbeEnd::Signal("SIGTERM"),
        _ = hup.recv() => ProbeEnd::Signal("SIGHUP"),
    };
    let Some(pgid) = pgid else {
        return Ok(end);
    };
    let group_alive = || nix::sys::signal::kill(pgid, None).is_ok();
    if !matches!(end, ProbeEnd::Exited(_)) {
        let _ = nix::sys::signal::kill(pgid, nix::sys::signal::Signal::SIGTERM);
    }
    // A grace period for the group (the server's children included) to end by itself.
    let grace = tokio::time::Instant::now() + Duration::from_secs(2);
    while group_alive() && tokio::time::Instant::now() < grace {
        tokio::time::sleep(Duration::from_millis(20)).await;
        // Reap the leader, so it stops counting as a member.
        let _ = child.try_wait();
    }
    if group_alive() {
        let _ = nix::sys::signal::kill(pgid, nix::sys::signal::Signal::SIGKILL);
    }
    let _ = child.wait().await;
    Ok(end)
}

/// Copies the child's stderr to ours and keeps (a bounded amount of) it.
fn tee_stderr(pipe: Option<tokio::process::ChildStderr>) -> tokio::task::JoinHandle<String> {
    tokio::spawn(async move {
        use tokio::io::AsyncReadExt;
        let Some(mut pipe) = pipe else {
            return String::new();
        };
        let mut kept = Vec::new();
        let mut buf = [0u8; 8192];
        while let Ok(n) = pipe.read(&mut buf).await {
            if n == 0 {
                break;
            }
            let _ = std::io::stderr().write_all(&buf[..n]);
            if kept.len() < MAX_STDERR_KEPT {
                kept.extend_from_slice(&buf[..n]);
            }
        }
        String::from_utf8_lossy(&kept).into_owned()
    })
}
