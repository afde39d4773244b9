//! `rootfence run`: the relay around a server command, with the policy, the roots, the audit
//! log and the OS sandbox wired together.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context as _, anyhow, bail};
use rootfence::audit::{self, PolicyFile, checkpoint};
use rootfence::enforce::Enforcer;
use rootfence::policy::Policy;
use rootfence::relay::{self, EndCause};
use rootfence::roots::RootSpec;
use rootfence::sandbox::{self, SandboxMode};
use rootfence::setup::Setup;

/// Runs an MCP server behind rootfence.
///
/// rootfence starts the server command as its child, relays JSON-RPC between your MCP host
/// (on rootfence's stdin/stdout) and the server, and checks every URI that crosses against
/// the roots and the policy. It exits with the server's exit status (128 + signal when the
/// server was killed).
///
/// Roots: the host's roots (`roots/list`), bounded by `--root` and the policy's
/// `roots.static`; with neither, the host's roots minus the policy's denials.
///
/// Example, as the command of an MCP server entry in a host configuration:
///
///     rootfence run --root ~/project -- npx -y @modelcontextprotocol/server-filesystem ~/project
#[derive(Debug, clap::Args)]
#[command(verbatim_doc_comment)]
pub struct RunArgs {
    #[command(flatten)]
    pub options: ServerOptions,

    /// No effect. `rootfence wrap` writes it into a host entry that had no `args` key, so
    /// that `rootfence unwrap` removes the key again instead of leaving an empty one.
    #[arg(long, hide = true)]
    #[allow(dead_code)] // read from host configurations by `unwrap`, never here
    pub wrapped_without_args: bool,

    /// The server command and its arguments, after `--`.
    #[arg(last = true, required = true, value_name = "COMMAND")]
    pub command: Vec<OsString>,
}

/// The options of a guarded server, shared by `rootfence run` and `rootfence serve`: the
/// policy, the roots, the sandbox and what it passes, the audit log, limits and grace periods.
#[derive(Debug, clap::Args)]
pub struct ServerOptions {
    /// A policy file (repeatable: org, then user, then project; later files may only
    /// narrow). Without any, the built-in default policy applies (`rootfence policy show`).
    #[arg(long = "policy", value_name = "FILE")]
    pub policies: Vec<PathBuf>,

    /// A root the server may be given: a directory path or a file: URI (repeatable). Host
    /// roots outside every --root are dropped, host roots containing one are narrowed to it.
    #[arg(long = "root", value_name = "DIR_OR_URI")]
    pub roots: Vec<String>,

    /// An environment variable passed to the sandboxed server besides the baseline (PATH,
    /// HOME, locale, proxies, ...): an exact name or a PREFIX* pattern (repeatable).
    /// `rootfence wrap` writes one for each name in a host entry's env/envFile. Every other
    /// variable is dropped and named at start.
    #[arg(long = "env", value_name = "NAME")]
    pub env: Vec<String>,

    /// An extra path the sandboxed server may read (repeatable): its own configuration
    /// outside the roots. Not a root: URIs under it are still checked against the roots.
    #[arg(long = "read", value_name = "PATH")]
    pub read: Vec<PathBuf>,

    /// An extra path the sandboxed server may read and write (repeatable): its own state,
    /// e.g. the file a host entry's MEMORY_FILE_PATH names. Not a root.
    #[arg(long = "write", value_name = "PATH")]
    pub write: Vec<PathBuf>,

    /// The audit log file (JSON Lines, hash-chained). Default: the policy's `audit.path`,
    /// else $XDG_STATE_HOME/rootfence/audit.jsonl (~/.local/state/rootfence/audit.jsonl).
    #[arg(long, value_name = "FILE")]
    pub audit_log: Option<PathBuf>,

    /// OS confinement of the server (Landlock): off, best-effort (confine as far as the
    /// kernel allows and say what is missing) or strict (refuse to start unless fully
    /// enforced). Default: the policy's `sandbox.mode`.
    #[arg(long, value_name = "MODE")]
    pub sandbox: Option<SandboxMode>,

    /// Longest JSON-RPC message accepted from either side (bytes; suffixes KiB, MiB, GiB).
    /// Longer messages are rejected, never truncated.
    #[arg(long, value_name = "SIZE", default_value = "64MiB", value_parser = parse_size)]
    pub max_message_size: usize,

    /// When a session ends (the host closes rootfence's stdin; over HTTP, the session is
    /// deleted, reaped or drained), how long the server gets to exit after its stdin is
    /// closed, and again after SIGTERM, before SIGKILL (e.g. 500ms, 2s).
    #[arg(long, value_name = "DURATION", default_value = "2s", value_parser = parse_duration)]
    pub shutdown_grace: Duration,

    /// When the roots move and the server is restarted under new grants, how long the
    /// previous server process may go on answering the requests it holds before they are
    /// answered with an error asking the host to send them again (e.g. 500ms, 5s).
    #[arg(long, value_name = "DURATION", default_value = "5s", value_parser = parse_duration)]
    pub restart_grace: Duration,
}

pub fn run(args: RunArgs) -> anyhow::Result<ExitCode> {
    let setup = setup(&args.options, &args.command)?;
    let (enforcer, audit, launcher) = setup.session(setup.roots.clone(), |_| {});
    let reloader = enforcer.clone();
    let mut config = setup.relay_config();
    // SIGHUP reloads the policy (it is not forwarded to the server).
    config.forward_hangup = false;
    let policy_files = args.options.policies.clone();
    config.observer = enforcer.observer();

    // One thread: the relay is two pumps and two writers, all I/O-bound; a single-threaded
    // runtime keeps every hand-off on one core with no cross-thread wake-ups.
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    let outcome = runtime.block_on(async move {
        let reloads = tokio::spawn(reload_on_sighup(reloader, policy_files));
        let outcome = relay::run(config, Arc::new(enforcer)).await;
        reloads.abort();
        outcome
    });
    // A read of a terminal stdin may still be parked on a blocking thread; don't wait for it.
    runtime.shutdown_background();
    // Every server of the session has stopped: the placeholders can go.
    launcher.remove_placeholders();
    let outcome = outcome?;

    let finished = Setup::finish(&audit, &outcome);
    // After the audit log's last record (`session_end`) went to the telemetry too.
    if let Some(t) = &setup.telemetry {
        t.shutdown();
    }
    if let Err(e) = finished {
        rootfence::stderr_line!("rootfence: error: could not finish the audit log: {e}");
        return Ok(ExitCode::from(2));
    }
    if matches!(outcome.cause, EndCause::Stopped | EndCause::ServerFailed) {
        // rootfence ended the session itself (its error is on stderr): its own failure code,
        // not the status of the server it stopped.
        return Ok(ExitCode::from(2));
    }
    Ok(ExitCode::from(outcome.exit_code))
}

/// Checks the shared options and the server command into a [`Setup`] (what every session is
/// built from), saying on stderr what the user should know: dropped variables, static roots
/// that could not be used, where the audit log goes.
pub(crate) fn setup(opts: &ServerOptions, command: &[OsString]) -> anyhow::Result<Setup> {
    if command.is_empty() {
        bail!("no server command given; put it after `--`");
    }
    check_command(&command[0])?;
    let policy = Policy::load(&opts.policies)
        .map_err(|e| anyhow!("invalid policy; the session was not started\n{e}"))?;
    super::policy::warn_dropped(&policy);
    let policy = Arc::new(policy);
    let cwd = std::env::current_dir().context("cannot read the current directory")?;

    // Operator roots: --root (must exist: a typo must not silently leave the server without
    // its root), then the policy's static roots (may be absent on this machine).
    let mut specs = Vec::new();
    for root in &opts.roots {
        if root.contains("${") {
            // VS Code expands ${workspaceFolder} only with a folder open; without one the
            // entry still starts, with one root fewer.
            rootfence::stderr_line!(
                "rootfence: warning: --root {root}: the host did not expand this variable \
                 (is a folder open?); not used as a root"
            );
            continue;
        }
        specs.push(root_spec(root, &cwd)?);
    }
    for root in &policy.roots().static_roots {
        specs.push(RootSpec::path(&root.path));
    }
    // Nothing bounds the roots: when the host declares none either, the directories the
    // server's own command line names are its roots, as `rootfence wrap` would have made
    // them `--root` (said on stderr when they are used).
    let command_roots: Vec<RootSpec> = if specs.is_empty()
        && policy.roots().from_command == rootfence::policy::CommandRoots::Directories
    {
        let home = std::env::var_os("HOME").map(PathBuf::from);
        rootfence::wrap::command_roots(command, &cwd, home.as_deref())
            .into_iter()
            .map(RootSpec::path)
            .collect()
    } else {
        Vec::new()
    };
    // The server is started by the enforcer, once the roots it must be confined to are known
    // (the host's, asked for before its `initialize` is answered), and started again under
    // new grants whenever they move (`[sandbox] follow_roots`).
    let mode = opts.sandbox.unwrap_or(policy.sandbox().mode);
    // What the host entry adds to the sandbox (--env, --read, --write): checked once now, so
    // a bad value stops the start with its reason, and its warnings are said once.
    let grants = sandbox::ServerGrants {
        env: opts.env.clone(),
        read: opts.read.clone(),
        write: opts.write.clone(),
    };
    let (spec, warnings) =
        rootfence::policy::server_spec(&policy, mode, Vec::new(), &grants, &cwd)?;
    for w in warnings {
        rootfence::stderr_line!("rootfence: warning: {w}");
    }
    let audit_path = match opts
        .audit_log
        .clone()
        .or_else(|| policy.audit().path.clone())
    {
        Some(p) => p,
        None => audit::default_log_path().map_err(|e| anyhow!("{e}"))?,
    };
    // OpenTelemetry, when the policy or the environment names a collector (off otherwise,
    // and then nothing touches it).
    let telemetry = rootfence::telemetry::Telemetry::start(&policy);
    let mut audit = Setup::audit_config(&policy, audit_path);
    audit.tee = telemetry.as_ref().map(|t| t.audit_tee());
    let mut setup = Setup {
        audit,
        telemetry,
        policy,
        roots: specs,
        command_roots,
        sandbox: mode,
        command: command.to_vec(),
        grants,
        cwd,
        max_message: opts.max_message_size,
        shutdown_grace: opts.shutdown_grace,
        restart_grace: opts.restart_grace,
        report_once: None,
    };
    let (enforcer, dropped, _) = setup.enforcer(setup.roots.clone());
    for d in &dropped {
        let given = opts
            .roots
            .iter()
            .any(|r| d.uri.as_str().contains(r.trim_end_matches('/')));
        if given {
            bail!("--root {}: {}", d.uri.as_str(), d.reason);
        }
        if !setup.command_roots.is_empty() {
            rootfence::stderr_line!(
                "rootfence: warning: the server's command line names {}, not used as a root: {}",
                d.uri.as_str(),
                d.reason
            );
            continue;
        }
        rootfence::stderr_line!(
            "rootfence: warning: static root {} dropped: {}",
            d.uri.as_str(),
            d.reason
        );
    }
    rootfence::stderr_line!("rootfence: audit log: {}", setup.audit.path.display());
    setup.audit.checkpoint = checkpoint_config(&setup.policy, &setup.audit.path, &enforcer, &spec)?;
    Ok(setup)
}

/// The checkpoint signer, when the policy names a key: the key is read now (a bad one stops
/// the start), and neither it nor the checkpoint file may be where the server can reach
/// (its operator roots and sandbox grants; the server could read the key, or rewrite the
/// checkpoints, there).
fn checkpoint_config(
    policy: &Policy,
    log: &Path,
    enforcer: &Enforcer,
    spec: &sandbox::SandboxSpec,
) -> anyhow::Result<Option<checkpoint::CheckpointConfig>> {
    let a = policy.audit();
    let Some(key_path) = &a.checkpoint_key else {
        return Ok(None);
    };
    let mut reach: checkpoint::Reach = Vec::new();
    for r in enforcer.operator_roots().roots() {
        reach.push((r.identity(), format!("the root {}", r.uri().as_str())));
    }
    for (list, what) in [(&spec.read, "read"), (&spec.write, "write")] {
        for p in list {
            if let Some(id) = checkpoint::identity(p) {
                reach.push((id, format!("the sandbox {what} grant {}", p.display())));
            }
        }
    }
    checkpoint::outside_reach("audit.checkpoint_key", key_path, &reach)
        .map_err(|e| anyhow!("{e}; the session was not started"))?;
    let key = checkpoint::CheckpointKey::load(key_path)
        .map_err(|e| anyhow!("{e}; the session was not started"))?;
    let mut cfg = checkpoint::CheckpointConfig::new(key, log);
    cfg.path = a.checkpoint_path.clone().unwrap_or(cfg.path);
    checkpoint::outside_reach("audit.checkpoint_path", &cfg.path, &reach)
        .map_err(|e| anyhow!("{e}; the session was not started"))?;
    cfg.every_records = a.checkpoint_every_records.unwrap_or(cfg.every_records);
    cfg.every = a
        .checkpoint_every_ms
        .map_or(cfg.every, Duration::from_millis);
    rootfence::stderr_line!("rootfence: audit checkpoints: {}", cfg.path.display());
    Ok(Some(cfg))
}

/// Reloads the policy files on each SIGHUP, off the relay's thread. A policy that does not
/// load (the same validation as at start and as `policy check`, layering rules included)
/// is refused: the previous one stays in force, and stderr and the audit log say why.
async fn reload_on_sighup(enforcer: Enforcer, files: Vec<PathBuf>) {
    use tokio::signal::unix::{SignalKind, signal};
    let mut hup = match signal(SignalKind::hangup()) {
        Ok(h) => h,
        Err(e) => {
            rootfence::stderr_line!(
                "rootfence: warning: cannot listen for SIGHUP, policy reload is off: {e}"
            );
            return;
        }
    };
    while hup.recv().await.is_some() {
        let (e, f) = (enforcer.clone(), files.clone());
        let _ = tokio::task::spawn_blocking(move || reload_policy(&e, &f)).await;
    }
}

fn reload_policy(enforcer: &Enforcer, files: &[PathBuf]) {
    use rootfence::audit::{Event, PolicyReload};
    let shown = if files.is_empty() {
        "the built-in default policy".to_owned()
    } else {
        files
            .iter()
            .map(|f| f.display().to_string())
            .collect::<Vec<_>>()
            .join(", ")
    };
    match Policy::load(files) {
        Ok(new) => {
            super::policy::warn_dropped(&new);
            let deferred = rootfence::enforce::reload_deferred(&enforcer.policy(), &new);
            let policy_files = rootfence::setup::policy_files(&new);
            // The record is on disk before the new policy decides anything, and before
            // stderr announces it: whoever reads the message finds its record.
            let mut report =
                format!("rootfence: policy reloaded from {shown}: decisions from now on use it\n");
            for d in &deferred {
                report.push_str(&format!("rootfence: policy reload: not applied now: {d}\n"));
            }
            enforcer.record_durable_blocking(Event::PolicyReload(PolicyReload {
                ok: true,
                policy_files,
                error: None,
                deferred,
            }));
            enforcer.reload(Arc::new(new));
            rootfence::stderr_line!("{}", report.trim_end());
        }
        Err(e) => {
            // The files as they are now (one that cannot be read is named in the error).
            let policy_files = files
                .iter()
                .filter_map(|f| {
                    use sha2::Digest;
                    let b = std::fs::read(f).ok()?;
                    Some(PolicyFile {
                        path: f.display().to_string(),
                        sha256: sha2::Sha256::digest(&b)
                            .iter()
                            .map(|x| format!("{x:02x}"))
                            .collect(),
                    })
                })
                .collect();
            enforcer.record_durable_blocking(Event::PolicyReload(PolicyReload {
                ok: false,
                policy_files,
                error: Some(e.to_string()),
                deferred: Vec::new(),
            }));
            // One write (`rootfence::stderr`): whoever sees the first line sees the reason.
            rootfence::stderr_line!(
                "rootfence: policy reload refused; the previous policy stays in force\n{e}"
            );
        }
    }
}

/// Refuses a server command that cannot run, before anything starts, with the same clear
/// error whether or not the sandbox launcher would run it.
fn check_command(program: &OsString) -> anyhow::Result<()> {
    let shown = program.to_string_lossy();
    let path = Path::new(program);
    let named = path.components().count() > 1;
    let found = if named { path.exists() } else { on_path(path) };
    if !found {
        bail!("server command not found: `{shown}`; check the spelling and that it is on PATH");
    }
    if named && !rootfence::sandbox::is_executable_file(path) {
        bail!("server command `{shown}` cannot be executed; check its permissions (chmod +x)");
    }
    Ok(())
}

/// Whether an executable file `name` is in a directory of `PATH`.
pub(crate) fn on_path(name: &Path) -> bool {
    std::env::var_os("PATH").is_some_and(|dirs| {
        std::env::split_paths(&dirs).any(|d| rootfence::sandbox::is_executable_file(&d.join(name)))
    })
}

fn root_spec(root: &str, cwd: &Path) -> anyhow::Result<RootSpec> {
    if root.contains(':') && rootfence::uri::scheme_of(root).is_some() {
        return Ok(RootSpec::uri(root));
    }
    let path = cwd.join(root);
    if !path.exists() {
        bail!(
            "--root {root}: {} does not exist (hint: create it, or fix the path)",
            path.display()
        );
    }
    if !path.is_dir() {
        bail!(
            "--root {root}: {} is not a directory (hint: name the directory that holds it)",
            path.display()
        );
    }
    Ok(RootSpec::path(path))
}

/// Parses `1048576`, `64MiB`, `512KiB`, `1GiB` (also `K`/`M`/`G` as binary units).
pub fn parse_size(s: &str) -> Result<usize, String> {
    let s = s.trim();
    let split = s.find(|c: char| !c.is_ascii_digit()).unwrap_or(s.len());
    let (digits, unit) = s.split_at(split);
    let n: usize = digits
        .parse()
        .map_err(|_| format!("invalid size `{s}`; use e.g. 1048576, 512KiB or 64MiB"))?;
    let mult: usize = match unit.trim() {
        "" | "B" => 1,
        "K" | "KiB" => 1 << 10,
        "M" | "MiB" => 1 << 20,
        "G" | "GiB" => 1 << 30,
        other => return Err(format!("unknown size unit `{other}`; use KiB, MiB or GiB")),
    };
    let size = n
        .checked_mul(mult)
        .ok_or_else(|| format!("size `{s}` is too large"))?;
    if size == 0 {
        return Err("size must be at least 1 byte".into());
    }
    Ok(size)
}

/// Parses `250ms`, `2s`, `1m`.
pub fn parse_duration(s: &str) -> Result<Duration, String> {
    let s = s.trim();
    let split = s.find(|c: char| !c.is_ascii_digit()).unwrap_or(s.len());
    let (digits, unit) = s.split_at(split);
    let n: u64 = digits
        .parse()
        .map_err(|_| format!("invalid duration `{s}`; use e.g. 500ms, 2s or 1m"))?;
    match unit.trim() {
        "ms" => Ok(Duration::from_millis(n)),
        "s" | "" => Ok(Duration::from_secs(n)),
        "m" => Ok(Duration::from_secs(n.saturating_mul(60))),
        other => Err(format!("unknown duration unit `{other}`; use ms, s or m")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_and_durations() {
        assert_eq!(parse_size("64MiB"), Ok(64 << 20));
        assert_eq!(parse_size("512K"), Ok(512 << 10));
        assert_eq!(parse_size("100"), Ok(100));
        assert!(parse_size("0").is_err());
        assert!(parse_size("12XB").is_err());
        assert!(parse_size("MiB").is_err());
        assert_eq!(parse_duration("500ms"), Ok(Duration::from_millis(500)));
        assert_eq!(parse_duration("2s"), Ok(Duration::from_secs(2)));
        assert_eq!(parse_duration("1m"), Ok(Duration::from_secs(60)));
        assert!(parse_duration("2h").is_err());
    }
}
