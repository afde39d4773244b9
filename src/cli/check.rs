//! `rootfence check`: URI verdicts against a root set (issue 3).
//!
//! Prints one JSON object per URI on stdout, in argument order, with the stable fields
//! `uri`, `decision` (`allow` or `deny`), `reason` (a code from `docs/reasons.md`, null on
//! allow), `canonical_uri` (null if the input did not parse) and `root` (the root's
//! canonical URI, null if none matched), plus `detail`, `kind` and `nlink`. Exit status:
//! 0 when every URI is allowed, 1 when any is denied, 2 on a usage or root error.

use std::io::Write;
use std::path::Path;
use std::process::ExitCode;

use anyhow::{Context, bail};
use serde::Serialize;

use rootfence::roots::{CheckOptions, RootSet, RootSpec, SymlinkStance, Verdict};
use rootfence::uri::{FileUri, scheme_of};

/// Arguments of `rootfence check`.
#[derive(Debug, clap::Args)]
pub struct CheckArgs {
    /// A root, as a file URI or a path (repeatable). Relative paths are taken against the
    /// working directory.
    #[arg(long = "root", value_name = "URI_OR_PATH")]
    pub roots: Vec<String>,
    /// Follow no symbolic links at all, not even those that stay inside a root.
    #[arg(long)]
    pub no_symlinks: bool,
    /// Deny files with more than one hard link.
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
    let specs = args
        .roots
        .iter()
        .map(|r| root_spec(r))
        .collect::<anyhow::Result<Vec<_>>>()?;
    let (set, errors) = RootSet::open(specs);
    if !errors.is_empty() {
        let lines: Vec<String> = errors.iter().map(|e| e.to_string()).collect();
        bail!("{}", lines.join("; "));
    }
    let opts = CheckOptions {
        symlinks: if args.no_symlinks {
            SymlinkStance::Never
        } else {
            SymlinkStance::FollowWithinRoot
        },
        deny_hard_links: args.deny_hard_links,
        ..CheckOptions::default()
    };

    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    let mut any_denied = false;
    for raw in &args.uris {
        let verdict = set.check_str(raw, &opts);
        let line = match &verdict {
            Verdict::Allow(a) => Line {
                uri: raw,
                decision: "allow",
                reason: None,
                canonical_uri: Some(a.canonical.as_str()),
                root: Some(set.roots()[a.root].uri().as_str()),
                detail: None,
                kind: Some(a.kind.as_str()),
                nlink: Some(a.nlink),
            },
            Verdict::Deny(d) => {
                any_denied = true;
                Line {
                    uri: raw,
                    decision: "deny",
                    reason: Some(d.reason.code()),
                    canonical_uri: d.canonical.as_ref().map(FileUri::as_str),
                    root: d.root.map(|i| set.roots()[i].uri().as_str()),
                    detail: Some(&d.detail),
                    kind: None,
                    nlink: None,
                }
            }
        };
        let text = serde_json::to_string(&line).context("encoding a verdict")?;
        writeln!(out, "{text}").context("writing a verdict to stdout")?;
    }
    out.flush().context("writing verdicts to stdout")?;
    Ok(if any_denied {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}

/// One output line; the field order is part of the interface.
#[derive(Serialize)]
struct Line<'a> {
    uri: &'a str,
    decision: &'static str,
    reason: Option<&'static str>,
    canonical_uri: Option<&'a str>,
    root: Option<&'a str>,
    detail: Option<&'a str>,
    kind: Option<&'static str>,
    nlink: Option<u64>,
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
