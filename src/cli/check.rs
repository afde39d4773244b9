//! `rootfence check`: the verdicts `rootfence run` would give URIs, with the same policy
//! layers (`--policy`, the built-in default when none) and the same decision path
//! (`enforce::Checker`: scheme, strict parse, resolution beneath the roots, then the path
//! rules on the name and on the real path). The roots are the session's with `--root` and no
//! host roots: the `--root` directories (a `--root` the policy refuses is an error, as `run`
//! refuses to start with it) plus the policy's `roots.static`.
//!
//! Prints one JSON object per URI on stdout, in argument order, with the stable fields
//! `uri`, `decision` (`allow` or `deny`), `reason` (a code from `docs/reasons.md` or
//! `docs/policy.md`, null on allow), `canonical_uri` (null if the input did not parse) and
//! `root` (the root's canonical URI, null if none matched), plus `detail`, `kind`, `nlink`,
//! `rule` and `layer`. Exit status: 0 when every URI is allowed, 1 when any is denied, 2 on
//! a usage, policy or root error.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, anyhow, bail};
use serde::Serialize;

use rootfence::enforce::roots::OperatorRoots;
use rootfence::enforce::{Checker, Verdict};
use rootfence::policy::Policy;
use rootfence::roots::{RootSet, RootSpec, Verdict as RootVerdict};
use rootfence::uri::scheme_of;

/// Arguments of `rootfence check`.
#[derive(Debug, clap::Args)]
pub struct CheckArgs {
    /// A policy layer, as `run --policy` takes it (repeatable: org, then user, then
    /// project). Default: the built-in default policy, as `run` uses it.
    #[arg(long = "policy", value_name = "FILE")]
    pub policies: Vec<PathBuf>,
    /// A root, as a file URI or a path (repeatable). Relative paths are taken against the
    /// working directory.
    #[arg(long = "root", value_name = "URI_OR_PATH")]
    pub roots: Vec<String>,
    /// Follow no symbolic links at all, not even those that stay inside a root (as a
    /// further policy layer saying `roots.symlinks = "never"`).
    #[arg(long)]
    pub no_symlinks: bool,
    /// Deny files with more than one hard link (as a further policy layer saying
    /// `roots.hardlinks = "deny"`, which the built-in default already does).
    #[arg(long)]
    pub deny_hard_links: bool,
    /// The URIs to check.
    #[arg(value_name = "URI")]
    pub uris: Vec<String>,
}

pub fn run(args: CheckArgs) -> anyhow::Result<ExitCode> {
    if args.roots.is_empty() {
        bail!("no roots given; pass at least one `--root <dir or file:///uri>`");
    }
    if args.uris.is_empty() {
        bail!("no uris to check; pass one or more file: uris after the options");
    }
    let policy = load(&args)?;
    super::policy::warn_dropped(&policy);
    let specs = args
        .roots
        .iter()
        .map(|r| root_spec(r))
        .collect::<anyhow::Result<Vec<_>>>()?;
    // A root that does not open is an error here, as `run --root` makes it one.
    let (_, errors) = RootSet::open(specs.clone());
    if !errors.is_empty() {
        let lines: Vec<String> = errors.iter().map(|e| e.to_string()).collect();
        bail!("{}", lines.join("; "));
    }
    let mut all = specs;
    all.extend(
        policy
            .roots()
            .static_roots
            .iter()
            .map(|r| RootSpec::path(&r.path)),
    );
    // The same opening and policy filter as `run`.
    let (operator, dropped) = OperatorRoots::open(all, &policy);
    for d in &dropped {
        let given = args
            .roots
            .iter()
            .any(|r| d.uri.as_str().contains(r.trim_end_matches('/')));
        if given {
            bail!(
                "--root {}: {}; `rootfence run` refuses to start with this root (hint: give a \
                 root the policy allows, see `rootfence policy explain --as-root`)",
                d.uri.as_str(),
                d.reason
            );
        }
        rootfence::stderr_line!(
            "rootfence: warning: static root {} dropped: {}",
            d.uri.as_str(),
            d.reason
        );
    }
    let set = operator.set();
    let checker = Checker::new(&policy);

    let mut out = std::io::stdout().lock();
    let mut any_denied = false;
    for raw in &args.uris {
        let c = checker.uri(&policy, raw, Some(set));
        any_denied |= !c.allow;
        let detail = detail(&c, raw, set, &checker);
        let line = Line {
            uri: raw,
            decision: if c.allow { "allow" } else { "deny" },
            reason: (!c.allow).then_some(&*c.reason),
            canonical_uri: c.canonical.as_ref().map(|u| u.as_str()),
            root: c.root.as_ref().map(|u| u.as_str()),
            detail: detail.as_deref(),
            kind: c.allowed.as_ref().map(|a| a.kind.as_str()),
            nlink: c.allowed.as_ref().map(|a| a.nlink),
            rule: c.rule.as_deref(),
            layer: c.layer.as_deref(),
        };
        let text = serde_json::to_string(&line).context("encoding a verdict")?;
        writeln!(out, "{text}")?;
    }
    out.flush()?;
    Ok(ExitCode::from(u8::from(any_denied)))
}

/// The policy layers, plus the narrowing options as one more layer.
fn load(args: &CheckArgs) -> anyhow::Result<Policy> {
    let mut extra = String::new();
    if args.no_symlinks {
        extra.push_str("symlinks = \"never\"\n");
    }
    if args.deny_hard_links {
        extra.push_str("hardlinks = \"deny\"\n");
    }
    let loaded = if extra.is_empty() {
        Policy::load(&args.policies)
    } else {
        let text = format!("version = 1\n[roots]\n{extra}");
        Policy::load_then(&args.policies, "check options", &text)
    };
    loaded.map_err(|e| anyhow!("invalid policy\n{e}"))
}

/// One output line; the field order is part of the interface.
#[derive(Serialize)]
struct Line<'a> {
    uri: &'a str,
    decision: &'static str,
    reason: Option<&'a str>,
    canonical_uri: Option<&'a str>,
    root: Option<&'a str>,
    detail: Option<&'a str>,
    kind: Option<&'static str>,
    nlink: Option<u64>,
    rule: Option<&'a str>,
    layer: Option<&'a str>,
}

/// What people read about a denial: the root check's own explanation when it decided, the
/// rule when the policy did.
fn detail(c: &Verdict, raw: &str, set: &RootSet, checker: &Checker) -> Option<String> {
    if c.allow {
        return None;
    }
    if let Some(rule) = &c.rule {
        let layer = c.layer.as_deref().unwrap_or("built-in default");
        return Some(format!("denied by {layer} {rule}"));
    }
    match set.check_str(raw, checker.options()) {
        RootVerdict::Deny(d) if d.reason.code() == c.reason => Some(d.detail),
        _ => Some(format!("denied: {}", c.reason)),
    }
}

/// A `--root` value: a `file:` URI, or a path (made absolute against the working
/// directory), which becomes a file URI.
fn root_spec(arg: &str) -> anyhow::Result<RootSpec> {
    match scheme_of(arg) {
        Some(s) if s == "file" => return Ok(RootSpec::uri(arg)),
        Some(s) if arg.contains("://") => {
            bail!("root `{arg}` uses scheme `{s}`; only file: uris and paths can be roots")
        }
        _ => {}
    }
    if arg.starts_with('~') {
        bail!("root `{arg}`: `~` is not expanded; give an absolute path or a file:///uri");
    }
    let path = Path::new(arg);
    let abs = if path.is_absolute() {
        path.to_path_buf()
    } else {
        std::env::current_dir()
            .context("finding the working directory to resolve a relative --root")?
            .join(path)
    };
    Ok(RootSpec::path(abs))
}
