//! `rootfence wrap` and `rootfence unwrap` (issue 8): find the host configuration, check
//! the policies, plan the edit with `rootfence::wrap`, print what happens to each server
//! and a unified diff, and replace the file atomically with a backup.
//!
//! Exit codes: 0 every selected server is as asked (or there was nothing to do); 1 some
//! entries could not be handled (each is named on stderr; the others were still written);
//! 2 an error, and nothing was written.

use std::ffi::OsString;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, bail};
use rootfence::policy::{Policy, SandboxMode};
use rootfence::wrap::{self, Action, Host, HostEnv, Outcome, UnwrapOptions, WrapOptions};

const WRAP_DETAILS: &str = "\
Each stdio entry's command and arguments move behind `rootfence run --policy ... --`; every
other key, comment and the file's layout stay as they were. Remote (URL) servers are left
alone. Entries already wrapped are left alone, so running wrap twice changes nothing. The
change is printed to stdout as a unified diff; the previous file is kept beside it as
<file>.rootfence-backup-<UTC time>. `rootfence unwrap` restores the entries exactly.

Exit status: 0 every selected server is as asked; 1 some entries could not be handled
(each is named; the others were still written); 2 error, nothing written.

Examples:
  rootfence wrap --host claude-desktop --policy /etc/rootfence/org.toml
  rootfence wrap --host vscode --project . --policy org.toml --dry-run
  rootfence wrap ~/.cursor/mcp.json --policy org.toml --server filesystem
  rootfence wrap --host claude-code --policy new-org.toml --rewrap
  rootfence unwrap --host claude-desktop

See docs/wrap.md.";

const UNWRAP_DETAILS: &str = "\
Every wrapped entry gets its original command and arguments back, byte for byte (an `args`
key that wrap added is removed again). The change is printed to stdout as a unified diff;
the previous file is kept beside it as <file>.rootfence-backup-<UTC time>.

Examples:
  rootfence unwrap --host claude-desktop
  rootfence unwrap .vscode/mcp.json --server filesystem --dry-run";

/// Which host configuration to edit.
#[derive(Debug, clap::Args)]
pub struct Target {
    /// The host configuration file to edit (or use --host to find it).
    #[arg(
        value_name = "CONFIG",
        required_unless_present = "host",
        conflicts_with = "host"
    )]
    pub config: Option<PathBuf>,

    /// Edit this host's configuration, found where the host keeps it on this OS.
    #[arg(long, value_enum, value_name = "HOST")]
    pub host: Option<Host>,

    /// With --host: the project's file in DIR (`.mcp.json`, `.vscode/mcp.json`,
    /// `.cursor/mcp.json`) instead of the user-wide one.
    #[arg(long, value_name = "DIR", requires = "host")]
    pub project: Option<PathBuf>,

    /// Only this server (repeatable). Default: every server in the file.
    #[arg(long = "server", value_name = "NAME")]
    pub servers: Vec<String>,

    /// Print the diff, write nothing.
    #[arg(long)]
    pub dry_run: bool,

    /// Do not keep a backup of the previous file.
    #[arg(long)]
    pub no_backup: bool,

    /// With --host: a host whose configuration file does not exist is not an error (exit
    /// 0, nothing done). For scripts that go over every host on every machine.
    #[arg(long, requires = "host")]
    pub missing_ok: bool,
}

/// Rewrites a host configuration so each stdio server runs behind `rootfence run`.
///
/// (The subcommand's one-line help is the variant's doc in `src/main.rs`, which clap puts
/// last; the details go in `after_long_help`, which it keeps.)
#[derive(Debug, clap::Args)]
#[command(after_long_help = WRAP_DETAILS)]
pub struct WrapArgs {
    #[command(flatten)]
    pub target: Target,

    /// A policy layer for `rootfence run` (repeatable, in order: org, user, project).
    /// Checked now; stored as an absolute path. `builtin:default` and `builtin:strict`
    /// name the built-ins. Without any, servers run under the built-in default policy.
    #[arg(long = "policy", value_name = "FILE")]
    pub policies: Vec<PathBuf>,

    /// Another `rootfence run` option to put in each entry (repeatable), e.g.
    /// `--run-arg=--shutdown-grace=5s`.
    #[arg(long = "run-arg", value_name = "ARG", allow_hyphen_values = true)]
    pub run_args: Vec<String>,

    /// The command hosts should start: an absolute path to rootfence, or `rootfence` to
    /// find it on the host's PATH. Default: this rootfence, by its PATH location when it
    /// is on PATH.
    #[arg(long, value_name = "PATH")]
    pub rootfence_path: Option<String>,

    /// Replace rootfence's command and options in entries already wrapped with different
    /// ones (e.g. to roll out a new policy).
    #[arg(long)]
    pub rewrap: bool,

    /// Start each wrapped server once, as its host would (behind `rootfence run`, the
    /// default sandbox), up to `initialize` and `tools/list`; when it does not get there,
    /// learn the grants the sandbox denied it (a new state directory is created and
    /// granted, never its parent or the home), show each with why, and add them to the
    /// entry with consent (--yes, or a yes on the terminal). Starting a server can have
    /// side effects: nothing is started without this flag.
    #[arg(long)]
    pub learn: bool,

    /// With --learn: write the learned grants without asking.
    #[arg(long, requires = "learn")]
    pub yes: bool,

    /// With --learn: seconds each trial start may take (a first `uvx` or `npx -y` start
    /// downloads the server).
    #[arg(long, value_name = "SECS", default_value_t = 60, requires = "learn")]
    pub learn_timeout: u64,
}

/// Restores a host configuration rewritten by `rootfence wrap`.
#[derive(Debug, clap::Args)]
#[command(after_long_help = UNWRAP_DETAILS)]
pub struct UnwrapArgs {
    #[command(flatten)]
    pub target: Target,
}

pub fn wrap(args: WrapArgs) -> anyhow::Result<ExitCode> {
    let path = config_path(&args.target)?;
    let (policies, policy) = check_policies(&args.policies)?;
    check_run_args(&args.run_args)?;
    let root_given = args
        .run_args
        .iter()
        .any(|a| a == "--root" || a.starts_with("--root="));
    let rootfence = rootfence_command(args.rootfence_path.as_deref())?;
    let Some(original) = read_config(&path, &args.target)? else {
        return Ok(ExitCode::SUCCESS);
    };
    let mut opts = WrapOptions {
        rootfence,
        policies,
        run_args: args.run_args,
        servers: args.target.servers.clone(),
        rewrap: args.rewrap,
        derive: Some(derive_context(&path)),
        learned: Vec::new(),
        catalogue: Vec::new(),
    };
    let plan = |opts: &WrapOptions| {
        wrap::wrap_config(&original, opts)
            .with_context(|| format!("cannot wrap {}", path.display()))
    };
    let mut outcome = plan(&opts)?;
    if apply_catalogue(&mut opts, &outcome, &policy) {
        outcome = plan(&opts)?;
    }
    let mut target = args.target;
    let mut consent_missing = false;
    if args.learn {
        learn_grants(
            &mut opts,
            &original,
            &outcome,
            &policy,
            std::time::Duration::from_secs(args.learn_timeout),
        )?;
        if !opts.learned.is_empty() {
            outcome = plan(&opts)?;
            if !args.yes && !target.dry_run && !ask_consent(&outcome, &original, &path) {
                target.dry_run = true;
                consent_missing = true;
            }
        }
    }
    let mut err = std::io::stderr().lock();
    if args.policies.is_empty() {
        let _ = writeln!(
            err,
            "rootfence: note: no --policy given: the servers will run under rootfence's built-in default policy"
        );
    }
    for s in &outcome.servers {
        report_server(&mut err, s);
        if s.action.is_wrapped() {
            server_hints(&mut err, s, &policy);
            if s.derived.roots.is_empty() && !root_given && policy.roots().static_roots.is_empty() {
                // What is missing, the first time the user could need to know: no root
                // unless the host declares some.
                let _ = writeln!(
                    err,
                    "rootfence: note: `{}`: no root: its command line names no directory, so \
                     it gets roots only from the host; a host that declares none leaves it \
                     without any, and every file request is refused. To give it a project, \
                     wrap again with `--rewrap --run-arg=--root=DIR`",
                    s.label()
                );
            }
            for note in &s.derived.notes {
                let _ = writeln!(err, "rootfence: note: `{}`: {note}", s.label());
            }
        }
    }
    drop(err);
    if !target.dry_run {
        // A directory that does not exist cannot be granted: created as the server would.
        for (name, grants) in &opts.catalogue {
            for dir in wrap::learn::create_state_dirs(grants) {
                rootfence::stderr_line!(
                    "rootfence: created {} (mode 0700) for `{name}`'s state (catalogue)",
                    dir.display()
                );
            }
        }
    }
    let code = finish(&path, &original, &outcome, &target, "wrap")?;
    if consent_missing {
        rootfence::stderr_line!(
            "rootfence: the learned grants need your consent: nothing was written; run again \
             with --yes to write the wrap with them (or without --learn to write it without)"
        );
        return Ok(ExitCode::from(1));
    }
    Ok(code)
}

/// The built-in profile catalogue (`src/sandbox/profiles.toml`): per wrapped server, the
/// state directories its package is known to keep, each checked against the policy like a
/// `--write` (a refused one is left out, saying why), added to `opts.catalogue`. Returns
/// whether any was added.
fn apply_catalogue(opts: &mut WrapOptions, outcome: &Outcome, policy: &Policy) -> bool {
    use rootfence::policy::Grant;
    use rootfence::sandbox::catalogue;
    let Some(home) = opts.derive.as_ref().and_then(|c| c.home.clone()) else {
        return false;
    };
    let path_var = std::env::var_os("PATH");
    for s in &outcome.servers {
        if !s.action.is_wrapped() {
            continue;
        }
        let mut granted = Vec::new();
        for g in catalogue::grants(&s.server_argv, &home, path_var.as_deref()) {
            let shown = g.path.display().to_string();
            if s.derived.write.contains(&shown) {
                continue;
            }
            if let Err(refused) = policy.check_grant(Grant::Write(&g.path)) {
                rootfence::stderr_line!(
                    "rootfence: note: `{}`: not granted from the catalogue: --write {shown}: {refused}",
                    s.label()
                );
                continue;
            }
            granted.push(wrap::Learned {
                flag: "--write",
                path: shown,
                why: g.why,
            });
        }
        if !granted.is_empty() {
            opts.catalogue.push((s.name.clone(), granted));
        }
    }
    !opts.catalogue.is_empty()
}

/// The trial rounds of `--learn`: per wrapped server, start it; on failure learn grants,
/// add them to `opts.learned`, and start it again, up to [`LEARN_ROUNDS`] times.
fn learn_grants(
    opts: &mut WrapOptions,
    original: &str,
    first: &Outcome,
    policy: &Policy,
    timeout: std::time::Duration,
) -> anyhow::Result<()> {
    use rootfence::wrap::learn;
    let exe = std::env::current_exe().context("cannot find this rootfence's own path")?;
    let strace = rootfence::sandbox::probe::find_strace();
    if strace.is_none() {
        rootfence::stderr_line!(
            "rootfence: learn: strace not found: denials are read from the servers' stderr \
             only, which misses what they do not print (install strace for a full trial)"
        );
    }
    let ctx = opts.derive.clone().unwrap_or_default();
    // Where hosts start servers: the workspace folder for a project's file, else `/`.
    let cwd = ctx.workspace.clone().unwrap_or_else(|| PathBuf::from("/"));
    let expand = |v: &str| -> Option<String> {
        let v = match &ctx.workspace {
            Some(ws) => v.replace("${workspaceFolder}", &ws.display().to_string()),
            None => v.to_owned(),
        };
        (!v.contains("${")).then_some(v)
    };
    for name in first
        .servers
        .iter()
        .filter(|s| s.action.is_wrapped())
        .map(|s| &s.name)
    {
        for round in 1..=LEARN_ROUNDS {
            let outcome = wrap::wrap_config(original, opts)?;
            let Some(s) = outcome.servers.iter().find(|s| s.name == *name) else {
                break;
            };
            let mut argv: Vec<OsString> = vec![exe.clone().into(), "run".into()];
            for p in &opts.policies {
                argv.extend(["--policy".into(), p.into()]);
            }
            let options = opts
                .run_args
                .iter()
                .cloned()
                .chain(s.derived.options())
                .chain(std::iter::once("--".to_owned()))
                .chain(s.server_argv.iter().cloned());
            let mut unexpanded = false;
            for a in options {
                match expand(&a) {
                    Some(v) => argv.push(v.into()),
                    None => unexpanded = true,
                }
            }
            let env: Vec<(String, String)> = s
                .env_values
                .iter()
                .filter_map(|(k, v)| Some((k.clone(), expand(v)?)))
                .collect();
            if unexpanded || s.server_argv.is_empty() {
                rootfence::stderr_line!(
                    "rootfence: learn: `{name}`: its entry uses a host variable rootfence \
                     cannot expand here; not started"
                );
                break;
            }
            rootfence::stderr_line!(
                "rootfence: learn: starting `{name}` once{} (up to initialize and tools/list, \
                 at most {} s)",
                if round > 1 { " more" } else { "" },
                timeout.as_secs()
            );
            let t = learn::trial(&argv, &env, &cwd, timeout, strace.as_deref())
                .with_context(|| format!("cannot start `{name}` for a trial"))?;
            if t.started() {
                rootfence::stderr_line!(
                    "rootfence: learn: `{name}` starts under the sandbox (initialize and \
                     tools/list answered in {:.1} s)",
                    t.took.as_secs_f64()
                );
                break;
            }
            let (mut new, notes) = learn::learn(&t.findings, policy, ctx.home.as_deref(), &cwd);
            new.retain(|l| !s.derived.read.contains(&l.path) && !s.derived.write.contains(&l.path));
            for n in &notes {
                rootfence::stderr_line!("rootfence: learn: `{name}`: {n}");
            }
            if new.is_empty() {
                rootfence::stderr_line!(
                    "rootfence: learn: `{name}` did not {} within {} s, and no sandbox denial \
                     explains it; its last words:",
                    if t.initialized {
                        "answer tools/list"
                    } else {
                        "answer initialize"
                    },
                    timeout.as_secs()
                );
                for line in &t.stderr_tail {
                    rootfence::stderr_line!("rootfence:   | {line}");
                }
                rootfence::stderr_line!(
                    "rootfence: learn: next: `rootfence sandbox probe -- {}` shows every \
                     denial; a server that needs the network or a first download may need a \
                     longer --learn-timeout",
                    s.server_argv.join(" ")
                );
                break;
            }
            for dir in learn::create_state_dirs(&new) {
                rootfence::stderr_line!(
                    "rootfence: learn: created {} (mode 0700) for `{name}`'s state",
                    dir.display()
                );
            }
            for l in &new {
                rootfence::stderr_line!(
                    "rootfence: learn: `{name}` needs {} {}: {}",
                    l.flag,
                    l.path,
                    l.why
                );
            }
            match opts.learned.iter_mut().find(|(n, _)| n == name) {
                Some((_, list)) => list.extend(new),
                None => opts.learned.push((name.clone(), new)),
            }
        }
    }
    Ok(())
}

/// Trial rounds per server: each may add grants, and the next shows whether they suffice.
const LEARN_ROUNDS: usize = 4;

/// Shows the diff and asks on the terminal whether to write it; `false` without one.
fn ask_consent(outcome: &Outcome, original: &str, path: &Path) -> bool {
    use std::io::IsTerminal;
    if !std::io::stdin().is_terminal() {
        return false;
    }
    let diff = outcome.diff(original, &path.display().to_string());
    let mut err = std::io::stderr().lock();
    let _ = write!(
        err,
        "{diff}rootfence: write {} with the learned grants above? [y/N] ",
        path.display()
    );
    let _ = err.flush();
    drop(err);
    let mut line = String::new();
    std::io::stdin().read_line(&mut line).is_ok()
        && matches!(line.trim(), "y" | "Y" | "yes" | "Yes")
}

pub fn unwrap(args: UnwrapArgs) -> anyhow::Result<ExitCode> {
    let path = config_path(&args.target)?;
    let Some(original) = read_config(&path, &args.target)? else {
        return Ok(ExitCode::SUCCESS);
    };
    let opts = UnwrapOptions {
        servers: args.target.servers.clone(),
    };
    let outcome = wrap::unwrap_config(&original, &opts)
        .with_context(|| format!("cannot unwrap {}", path.display()))?;
    let mut err = std::io::stderr().lock();
    for s in &outcome.servers {
        report_server(&mut err, s);
    }
    drop(err);
    finish(&path, &original, &outcome, &args.target, "unwrap")
}

/// The config file: the one given, or the host's.
fn config_path(target: &Target) -> anyhow::Result<PathBuf> {
    // clap's `requires` gives way to the conflict between CONFIG and --host, so check here.
    if target.config.is_some() && (target.project.is_some() || target.missing_ok) {
        bail!("--project and --missing-ok go with --host, not with a config file path");
    }
    match (&target.config, target.host) {
        (Some(p), _) => Ok(p.clone()),
        (None, Some(h)) => Ok(wrap::config_path(
            h,
            target.project.as_deref(),
            &HostEnv::current(),
        )?),
        (None, None) => bail!("give a host configuration file, or --host to find one"),
    }
}

/// Reads the config, with messages for the usual mistakes; `None` when it does not exist
/// and `--missing-ok` says that is fine.
fn read_config(path: &Path, target: &Target) -> anyhow::Result<Option<String>> {
    let bytes = match std::fs::read(path) {
        Ok(b) => b,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            if target.missing_ok {
                rootfence::stderr_line!(
                    "rootfence: {} does not exist: nothing to do",
                    path.display()
                );
                return Ok(None);
            }
            return Err(match target.host {
                Some(h) => anyhow::anyhow!(
                    "{} keeps its servers in {}, which does not exist: is {} installed, with at least one MCP server added? (nothing to do until then; give the file's path if it lives elsewhere)",
                    h.name(),
                    path.display(),
                    h.name()
                ),
                None => anyhow::anyhow!(
                    "config file {} does not exist; check the path, or use --host claude-desktop|claude-code|vscode|cursor to find a host's file",
                    path.display()
                ),
            });
        }
        Err(e) if path.is_dir() => {
            return Err(e).with_context(|| {
                format!(
                    "{} is a directory; give the configuration file itself (e.g. {}/.vscode/mcp.json, or --host with --project)",
                    path.display(),
                    path.display()
                )
            });
        }
        Err(e) => return Err(e).with_context(|| format!("cannot read {}", path.display())),
    };
    String::from_utf8(bytes).map(Some).map_err(|e| {
        anyhow::anyhow!(
            "{} is not UTF-8 text (invalid byte at offset {}); host configurations are UTF-8 JSON",
            path.display(),
            e.utf8_error().valid_up_to()
        )
    })
}

/// Checks that every policy exists and that together they load; returns them as they will
/// be written (absolute paths, or `builtin:` names) and the loaded policy.
fn check_policies(given: &[PathBuf]) -> anyhow::Result<(Vec<String>, Policy)> {
    if given.is_empty() {
        return Ok((Vec::new(), Policy::builtin_default()));
    }
    let mut out = Vec::with_capacity(given.len());
    for p in given {
        let Some(s) = p.to_str() else {
            bail!(
                "policy path {} is not UTF-8: host configurations are JSON text and cannot hold it",
                p.display()
            );
        };
        if s.starts_with("builtin:") {
            out.push(s.to_string());
            continue;
        }
        match std::fs::metadata(p) {
            Ok(m) if m.is_dir() => bail!(
                "policy {} is a directory; give a policy file (a .toml file)",
                p.display()
            ),
            Ok(_) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => bail!(
                "policy file {} does not exist; nothing was wrapped (give an existing policy file, or builtin:default / builtin:strict)",
                p.display()
            ),
            Err(e) => {
                return Err(e).with_context(|| format!("cannot read policy {}", p.display()));
            }
        }
        // Absolute, but symlinks kept: an org policy linked to its current version must
        // keep following the link.
        let abs = std::path::absolute(p)
            .with_context(|| format!("cannot make {} absolute", p.display()))?;
        let abs = abs
            .to_str()
            .context("the absolute policy path is not UTF-8")?
            .to_string();
        out.push(abs);
    }
    let paths: Vec<PathBuf> = out.iter().map(PathBuf::from).collect();
    let policy = Policy::load(&paths).map_err(|errs| {
        anyhow::anyhow!(
            "{errs}\n\nnothing was wrapped: a policy that does not load would stop every wrapped server from starting; fix it (check with `rootfence policy check`) and run wrap again"
        )
    })?;
    Ok((out, policy))
}

/// Checks `--run-arg` values against `rootfence run`'s own parser.
fn check_run_args(run_args: &[String]) -> anyhow::Result<()> {
    for a in run_args {
        if a == "--" || a == wrap::NO_ARGS_MARKER {
            bail!("--run-arg `{a}` is reserved: rootfence wrap writes it itself");
        }
    }
    if run_args.is_empty() {
        return Ok(());
    }
    let cmd = <super::run::RunArgs as clap::Args>::augment_args(clap::Command::new("run"));
    let argv = std::iter::once("run")
        .chain(run_args.iter().map(String::as_str))
        .chain(["--", "server"]);
    let matches = cmd.try_get_matches_from(argv).map_err(|e| {
        let msg = e.render().to_string();
        let first = msg
            .lines()
            .next()
            .unwrap_or("")
            .trim_start_matches("error: ");
        anyhow::anyhow!(
            "--run-arg is not a valid `rootfence run` option: {first} (see `rootfence run --help`)"
        )
    })?;
    // `run` refuses to start when a --root does not exist (a typo must not leave the server
    // rootless); say so now rather than in the host's log. Relative roots depend on the
    // host's working directory and are not judged.
    let parsed = <super::run::RunArgs as clap::FromArgMatches>::from_arg_matches(&matches)
        .map_err(|e| anyhow::anyhow!("--run-arg: {e}"))?;
    for root in &parsed.options.roots {
        let path = root.strip_prefix("file://").unwrap_or(root);
        if Path::new(path).is_absolute() && !path.contains('%') && !Path::new(path).is_dir() {
            rootfence::stderr_line!(
                "rootfence: warning: --run-arg root {root} is not a directory on this machine; `rootfence run` will refuse to start the wrapped servers until it is"
            );
        }
    }
    Ok(())
}

/// The rootfence command hosts should start.
fn rootfence_command(chosen: Option<&str>) -> anyhow::Result<String> {
    let cmd = match chosen {
        Some(c) if c.contains(['/', '\\']) && !Path::new(c).is_absolute() => bail!(
            "--rootfence-path {c} is relative: hosts start servers from a directory of their choosing; give an absolute path, or `rootfence` to use the host's PATH"
        ),
        Some(c) => c.to_string(),
        None => this_rootfence()?,
    };
    // Wrapped entries are recognised by the command's file name, so it must be `rootfence`.
    if !wrap::is_rootfence_command(&cmd) {
        bail!(
            "the rootfence command must be a file named `rootfence` so that wrapped entries can be recognised (and not wrapped twice); got {cmd}: pass --rootfence-path with such a path"
        );
    }
    let p = Path::new(&cmd);
    if chosen.is_some() && p.is_absolute() && !p.exists() {
        rootfence::stderr_line!(
            "rootfence: warning: --rootfence-path {cmd} does not exist on this machine; hosts will fail to start the wrapped servers until it does"
        );
    }
    Ok(cmd)
}

/// This binary's absolute path, preferring its location on PATH (a symlink such as
/// `/usr/local/bin/rootfence` keeps working across upgrades; the resolved target may not).
fn this_rootfence() -> anyhow::Result<String> {
    let exe = std::env::current_exe().context("cannot find this rootfence's own path")?;
    let real = std::fs::canonicalize(&exe).unwrap_or_else(|_| exe.clone());
    let name = exe.file_name().map(OsString::from).unwrap_or_default();
    let on_path = std::env::var_os("PATH")
        .iter()
        .flat_map(std::env::split_paths)
        .filter(|d| d.is_absolute())
        .map(|d| d.join(&name))
        .find(|c| std::fs::canonicalize(c).is_ok_and(|r| r == real));
    let chosen = on_path.unwrap_or(exe);
    chosen.to_str().map(str::to_string).with_context(|| {
        format!(
            "this rootfence's path {} is not UTF-8; pass --rootfence-path",
            chosen.display()
        )
    })
}

fn report_server(err: &mut impl std::io::Write, s: &wrap::ServerReport) {
    let name = s.label();
    let cmd = s
        .command
        .as_deref()
        .map(|c| format!(" ({c})"))
        .unwrap_or_default();
    let derived = derived_summary(&s.derived);
    let _ = match &s.action {
        Action::Wrapped => writeln!(err, "rootfence: wrapped `{name}`{cmd}{derived}"),
        Action::AlreadyWrapped => writeln!(err, "rootfence: `{name}`{cmd} is already wrapped"),
        Action::Rewrapped => writeln!(err, "rootfence: rewrapped `{name}`{cmd}{derived}"),
        Action::Unwrapped => writeln!(err, "rootfence: unwrapped `{name}`{cmd}"),
        Action::NotWrapped => writeln!(err, "rootfence: `{name}`{cmd} is not wrapped"),
        Action::Remote(note) => writeln!(
            err,
            "rootfence: note: `{name}`: {note} (rootfence relays stdio servers only)"
        ),
        Action::Skipped(note) => writeln!(err, "rootfence: note: `{name}`: {note}"),
        Action::WrappedDifferently(why) | Action::Problem(why) => writeln!(
            err,
            "rootfence: warning: `{name}` (line {}): {why}; entry unchanged",
            s.line
        ),
    };
}

/// Hints about a wrapped server that would otherwise surprise at run time: a command that
/// is not found, and `env` values the sandbox will not pass on.
fn server_hints(err: &mut impl std::io::Write, s: &wrap::ServerReport, policy: &Policy) {
    let name = s.label();
    if let Some(cmd) = &s.command
        && !cmd.contains("${")
        && !command_exists(cmd)
    {
        let _ = writeln!(
            err,
            "rootfence: warning: `{name}`: command `{cmd}` was not found{}; the host will fail to start this server (GUI hosts may also use a shorter PATH than your shell: an absolute path is safest)",
            if Path::new(cmd).is_absolute() {
                ""
            } else {
                " on this PATH"
            }
        );
    }
    if policy.sandbox().mode == SandboxMode::Off && !s.derived.is_empty() {
        let _ = writeln!(
            err,
            "rootfence: note: `{name}`: the policy turns the sandbox off, so --env/--read/--write do nothing until it is on; --root still bounds the roots"
        );
    }
}

/// `; roots from its command line: ...; env passed: ...` for the wrap message.
fn derived_summary(d: &wrap::Derived) -> String {
    let mut parts = Vec::new();
    if !d.roots.is_empty() {
        parts.push(format!(
            "roots from its command line: {} (--root)",
            d.roots.join(", ")
        ));
    }
    if !d.env.is_empty() {
        parts.push(format!(
            "env passed to the server: {} (--env)",
            d.env.join(", ")
        ));
    }
    for (paths, access, flag) in [
        (&d.write, "read-write", "--write"),
        (&d.read, "read-only", "--read"),
    ] {
        // The learned and the catalogue's are shown with their reasons below.
        let paths: Vec<&str> = paths
            .iter()
            .filter(|p| !d.learned.iter().chain(&d.catalogue).any(|l| &l.path == *p))
            .map(String::as_str)
            .collect();
        if !paths.is_empty() {
            parts.push(format!(
                "its own state (paths its env or arguments name), {access}: {} ({flag})",
                paths.join(", ")
            ));
        }
    }
    for (grants, what) in [
        (&d.catalogue, "its known state"),
        (&d.learned, "learned by starting it once"),
    ] {
        if !grants.is_empty() {
            let each: Vec<String> = grants
                .iter()
                .map(|l| format!("{} {} ({})", l.flag, l.path, l.why))
                .collect();
            parts.push(format!("{what}: {}", each.join(", ")));
        }
    }
    parts.iter().map(|p| format!("; {p}")).collect()
}

/// What derivation needs: the home directory, and the workspace folder when the file is
/// a project's (`DIR/.vscode/mcp.json`, `DIR/.cursor/mcp.json`, `DIR/.mcp.json`).
fn derive_context(config: &Path) -> wrap::DeriveContext {
    let abs = std::path::absolute(config).unwrap_or_else(|_| config.to_owned());
    let parent = abs.parent();
    let workspace = match (
        parent.and_then(|p| p.file_name()).and_then(|n| n.to_str()),
        abs.file_name().and_then(|n| n.to_str()),
    ) {
        (Some(".vscode" | ".cursor"), Some("mcp.json")) => {
            parent.and_then(Path::parent).map(Path::to_path_buf)
        }
        (_, Some(".mcp.json")) => parent.map(Path::to_path_buf),
        _ => None,
    };
    wrap::DeriveContext {
        home: std::env::var_os("HOME")
            .map(PathBuf::from)
            .filter(|h| h.is_absolute()),
        workspace,
        assume: None,
    }
}

/// Whether a command would be found: an absolute path that exists, or a bare name on
/// PATH. Relative paths depend on the host's working directory and are not judged.
fn command_exists(cmd: &str) -> bool {
    let p = Path::new(cmd);
    if p.is_absolute() {
        return p.exists();
    }
    if cmd.contains(['/', '\\']) {
        return true;
    }
    super::run::on_path(p)
}

/// Prints the diff, writes unless dry-run, and picks the exit code.
fn finish(
    path: &Path,
    original: &str,
    outcome: &Outcome,
    target: &Target,
    verb: &str,
) -> anyhow::Result<ExitCode> {
    let diff = outcome.diff(original, &path.display().to_string());
    {
        let mut out = std::io::stdout().lock();
        out.write_all(diff.as_bytes())
            .and_then(|()| out.flush())
            .context("cannot write the diff to stdout")?;
    }
    let problems = outcome
        .servers
        .iter()
        .filter(|s| s.action.is_problem())
        .count();
    if outcome.servers.is_empty() {
        rootfence::stderr_line!(
            "rootfence: {} has no {}server entries: nothing to {verb}",
            path.display(),
            if target.servers.is_empty() {
                ""
            } else {
                "matching "
            }
        );
    } else if !outcome.changed {
        rootfence::stderr_line!("rootfence: {}: nothing to change", path.display());
    } else if target.dry_run {
        rootfence::stderr_line!("rootfence: dry run: {} was not changed", path.display());
    } else {
        let report = wrap::replace_file(
            path,
            original.as_bytes(),
            outcome.text.as_bytes(),
            !target.no_backup,
        )
        .with_context(|| format!("nothing was written to {}", path.display()))?;
        for w in &report.warnings {
            rootfence::stderr_line!("rootfence: warning: {w}");
        }
        match &report.backup {
            Some(b) => rootfence::stderr_line!(
                "rootfence: wrote {} (previous version: {})",
                report.target.display(),
                b.display()
            ),
            None => rootfence::stderr_line!("rootfence: wrote {}", report.target.display()),
        }
        rootfence::stderr_line!(
            "rootfence: restart the host (or reload its MCP servers) for the change to take effect"
        );
    }
    if problems > 0 {
        rootfence::stderr_line!(
            "rootfence: {problems} entr{} could not be handled (see the warnings above)",
            if problems == 1 { "y" } else { "ies" }
        );
        return Ok(ExitCode::from(1));
    }
    Ok(ExitCode::SUCCESS)
}
