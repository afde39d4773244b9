//! `rootfence policy check|explain|show` (issue 4): validate policy layers, explain one
//! decision with its provenance, print the compiled effective policy.
//!
//! Exit codes: `check` 0 = valid, 1 = policy errors; `explain` 0 = allowed, 1 = denied,
//! 2 = the policy or the input could not be read; `show` 0, or 1 on policy errors.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, bail};
use rootfence::policy::{Decision, Policy, PolicyErrors};
use serde_json::json;

/// Validate, explain and show policies.
#[derive(Debug, clap::Subcommand)]
pub enum PolicyCommand {
    /// Validate policy files; report every error with file, line and column.
    ///
    /// The files are checked as layers in the order given (as `run --policy` would stack
    /// them), so a later file that widens an earlier one is an error. With `--each`, every
    /// file is checked on its own instead.
    Check {
        /// Check each file as a single-layer policy rather than as a stack of layers.
        #[arg(long)]
        each: bool,
        /// Policy files (`builtin:default` and `builtin:strict` name the built-ins).
        #[arg(value_name = "FILE", required = true)]
        files: Vec<PathBuf>,
    },
    /// Explain the policy's decision for a URI, a root or a tool name: the decision, the
    /// reason code, and the layer, line and rule that made it.
    Explain(ExplainArgs),
    /// Print the compiled effective policy, each setting with the layer and line it came
    /// from.
    Show {
        /// A policy layer; repeat in order (org, user, project). Default: the built-in
        /// default policy.
        #[arg(long = "policy", value_name = "FILE")]
        policies: Vec<PathBuf>,
        /// Print JSON instead of annotated TOML.
        #[arg(long)]
        json: bool,
    },
}

/// Arguments of `policy explain`.
#[derive(Debug, clap::Args)]
pub struct ExplainArgs {
    /// A policy layer; repeat in order (org, user, project). Default: the built-in default
    /// policy.
    #[arg(long = "policy", value_name = "FILE")]
    policies: Vec<PathBuf>,
    /// A root directory (as `run --root`): the URI must also lie inside one of them, and
    /// each root must itself pass `[roots]`.
    #[arg(long = "root", value_name = "DIR")]
    roots: Vec<PathBuf>,
    /// Treat the argument as a root the host declares (decided by `[roots]`).
    #[arg(long, conflicts_with = "tool")]
    as_root: bool,
    /// Treat the argument as a tool name (decided by `[tools]`).
    #[arg(long)]
    tool: bool,
    /// Print JSON instead of text.
    #[arg(long)]
    json: bool,
    /// The URI (or root URI, or tool name) to explain.
    #[arg(value_name = "URI")]
    target: String,
}

pub fn run(cmd: PolicyCommand) -> anyhow::Result<ExitCode> {
    match cmd {
        PolicyCommand::Check { each, files } => check(&files, each),
        PolicyCommand::Explain(args) => explain(&args),
        PolicyCommand::Show { policies, json } => show(&policies, json),
    }
}

fn load(policies: &[PathBuf]) -> Result<Policy, PolicyErrors> {
    if policies.is_empty() {
        Ok(Policy::builtin_default())
    } else {
        Policy::load(policies)
    }
}

fn check(files: &[PathBuf], each: bool) -> anyhow::Result<ExitCode> {
    let groups: Vec<&[PathBuf]> = if each {
        files.chunks(1).collect()
    } else {
        vec![files]
    };
    let mut failed = false;
    for group in groups {
        let names: Vec<String> = group.iter().map(|p| p.display().to_string()).collect();
        match Policy::load(group) {
            Ok(_) => println!("ok: {}", names.join(" + ")),
            Err(errs) => {
                failed = true;
                eprintln!("{errs}");
            }
        }
    }
    Ok(if failed {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}

fn show(policies: &[PathBuf], as_json: bool) -> anyhow::Result<ExitCode> {
    let policy = match load(policies) {
        Ok(p) => p,
        Err(errs) => {
            eprintln!("{errs}");
            return Ok(ExitCode::from(1));
        }
    };
    if as_json {
        println!("{}", serde_json::to_string_pretty(&policy.show_json())?);
    } else {
        print!("{}", policy.show_text());
    }
    Ok(ExitCode::SUCCESS)
}

/// One step of an explanation (roots first, then the policy rule).
struct Step {
    check: &'static str,
    allow: bool,
    reason: String,
    file: Option<String>,
    line: Option<u32>,
    column: Option<u32>,
    rule: String,
}

impl Step {
    fn from_decision(check: &'static str, d: &Decision<'_>) -> Self {
        Step {
            check,
            allow: d.allow,
            reason: d.reason.as_str().to_string(),
            file: d.provenance.file.as_deref().map(str::to_string),
            line: d.provenance.line,
            column: d.provenance.column,
            rule: d.provenance.rule.clone(),
        }
    }

    fn json(&self) -> serde_json::Value {
        json!({
            "check": self.check,
            "decision": if self.allow { "allow" } else { "deny" },
            "reason": self.reason,
            "file": self.file,
            "line": self.line,
            "column": self.column,
            "rule": self.rule,
        })
    }

    fn location(&self) -> String {
        match (&self.file, self.line, self.column) {
            (Some(f), Some(l), Some(c)) => format!("{f}:{l}:{c}"),
            (Some(f), _, _) => f.clone(),
            _ => "built-in default".into(),
        }
    }
}

fn explain(args: &ExplainArgs) -> anyhow::Result<ExitCode> {
    let policy = match load(&args.policies) {
        Ok(p) => p,
        Err(errs) => {
            eprintln!("{errs}");
            return Ok(ExitCode::from(2));
        }
    };
    let mut steps = Vec::new();
    let subject = if args.tool {
        steps.push(Step::from_decision(
            "tools",
            &policy.decide_tool(&args.target),
        ));
        json!({"tool": args.target})
    } else {
        let (scheme, path) = parse_uri_minimal(&args.target)
            .with_context(|| format!("cannot explain `{}`", args.target))?;
        if args.as_root {
            let Some(path) = path.as_deref() else {
                bail!("a root must be a file: URI, got scheme `{scheme}`");
            };
            steps.push(Step::from_decision("roots", &policy.decide_root(path)));
        } else {
            if scheme == "file" && !args.roots.is_empty() {
                if let Some(path) = path.as_deref() {
                    steps.extend(root_steps(&policy, &args.roots, path)?);
                }
            }
            steps.push(Step::from_decision(
                "resources",
                &policy.decide_resource(&scheme, path.as_deref()),
            ));
        }
        json!({"uri": args.target, "scheme": scheme, "path": path})
    };
    // The first denying step decides; if none denies, the last (the policy rule) does.
    let decisive = steps
        .iter()
        .find(|s| !s.allow)
        .unwrap_or_else(|| steps.last().expect("at least one step"));
    let allow = decisive.allow;
    let roots_checked = !args.roots.is_empty() || args.as_root || args.tool;
    let blocked = !allow && policy.mode() == rootfence::policy::Mode::Enforce;
    if args.json {
        let out = json!({
            "subject": subject,
            "decision": if allow { "allow" } else { "deny" },
            "reason": decisive.reason,
            "mode": policy.mode().as_str(),
            "blocked": blocked,
            "provenance": {
                "file": decisive.file,
                "line": decisive.line,
                "column": decisive.column,
                "rule": decisive.rule,
            },
            "steps": steps.iter().map(Step::json).collect::<Vec<_>>(),
            "roots_checked": roots_checked,
            "layers": policy.layers().iter().map(|l| json!({"name": l.name, "sha256": l.sha256})).collect::<Vec<_>>(),
        });
        println!("{}", serde_json::to_string_pretty(&out)?);
    } else {
        println!("decision: {}", if allow { "allow" } else { "deny" });
        println!("reason:   {}", decisive.reason);
        println!("rule:     {}", decisive.rule);
        println!("layer:    {}", decisive.location());
        let mode = policy.mode().as_str();
        let effect = match (allow, blocked) {
            (true, _) => "passes",
            (false, true) => "blocked",
            (false, false) => "logged, not blocked",
        };
        println!("mode:     {mode} ({effect})");
        if !roots_checked {
            println!("note:     roots not checked (pass --root DIR to check containment too)");
        }
        if steps.len() > 1 {
            println!("steps:");
            for s in &steps {
                println!(
                    "  {:<9} {:<5} {:<14} {}  ({})",
                    s.check,
                    if s.allow { "allow" } else { "deny" },
                    s.reason,
                    s.rule,
                    s.location()
                );
            }
        }
    }
    Ok(if allow {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}

/// Root steps for `--root`: each root must pass `[roots]`, and the path must lie inside
/// one of the roots that pass.
///
/// Containment here is lexical and component-wise on canonicalized root paths; the relay
/// decides containment beneath an open directory capability (issue 3), which also
/// resolves symlinks inside the URI's path.
fn root_steps(policy: &Policy, roots: &[PathBuf], path: &str) -> anyhow::Result<Vec<Step>> {
    let mut steps = Vec::new();
    let mut inside_allowed = false;
    for root in roots {
        let canon = canonical_root(root)?;
        let d = policy.decide_root(&canon);
        let mut step = Step::from_decision("roots", &d);
        step.rule = format!("--root {canon}: {}", step.rule);
        let inside = path == canon
            || canon == "/"
            || (path.starts_with(&canon) && path.as_bytes().get(canon.len()) == Some(&b'/'));
        inside_allowed |= d.allow && inside;
        if !d.allow {
            steps.push(step);
        }
    }
    if !inside_allowed {
        steps.push(Step {
            check: "roots",
            allow: false,
            reason: "outside_roots".into(),
            file: None,
            line: None,
            column: None,
            rule: format!(
                "path is outside every allowed --root ({} given)",
                roots.len()
            ),
        });
    } else {
        steps.push(Step {
            check: "roots",
            allow: true,
            reason: "inside_root".into(),
            file: None,
            line: None,
            column: None,
            rule: "path is inside an allowed --root".into(),
        });
    }
    Ok(steps)
}

/// The canonical path of a `--root` directory, as UTF-8.
fn canonical_root(root: &Path) -> anyhow::Result<String> {
    let canon = std::fs::canonicalize(root)
        .with_context(|| format!("cannot resolve --root {}", root.display()))?;
    canon
        .to_str()
        .map(str::to_string)
        .with_context(|| format!("--root {} is not UTF-8", root.display()))
}

/// Minimal URI reading for `explain`, until the strict parser of issue 3 (`uri::FileUri`)
/// is available on this branch: the scheme (lowercased), and for `file:` the decoded path.
///
/// Deliberately strict (it refuses what it cannot read unambiguously): the authority must
/// be empty or `localhost`; no query or fragment; percent-decoding once, refusing encoded
/// `/`, `\` and NUL, and non-UTF-8; the path must be absolute and normalized (no `.`, `..`
/// or empty components). It is never used on the relay's path.
fn parse_uri_minimal(raw: &str) -> anyhow::Result<(String, Option<String>)> {
    let Some((scheme, rest)) = raw.split_once(':') else {
        bail!("not a URI (no scheme)");
    };
    let mut chars = scheme.chars();
    let valid = chars.next().is_some_and(|c| c.is_ascii_alphabetic())
        && chars.all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'));
    if !valid {
        bail!("invalid URI scheme `{scheme}`");
    }
    let scheme = scheme.to_ascii_lowercase();
    if scheme != "file" {
        return Ok((scheme, None));
    }
    let Some(after) = rest.strip_prefix("//") else {
        bail!("a file: URI must be file:///absolute/path");
    };
    let (authority, path) = after.split_at(after.find('/').unwrap_or(after.len()));
    if !(authority.is_empty() || authority.eq_ignore_ascii_case("localhost")) {
        bail!("file: URI with host `{authority}` is not a local file");
    }
    if path.contains(['?', '#']) {
        bail!("file: URI with a query or fragment");
    }
    let bytes = path.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = bytes
                .get(i + 1..i + 3)
                .and_then(|h| std::str::from_utf8(h).ok())
                .and_then(|h| u8::from_str_radix(h, 16).ok())
                .context("bad percent-encoding")?;
            if matches!(hex, b'/' | b'\\' | 0) {
                bail!("encoded `/`, `\\` or NUL in a file: URI");
            }
            out.push(hex);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    let path = String::from_utf8(out).context("file: URI path is not UTF-8")?;
    let normalized = path == "/"
        || (path.starts_with('/')
            && path[1..]
                .split('/')
                .all(|c| !c.is_empty() && c != "." && c != ".."));
    if !normalized {
        bail!("file: URI path `{path}` is not absolute and normalized");
    }
    Ok((scheme, Some(path)))
}

#[cfg(test)]
mod tests {
    use super::parse_uri_minimal;

    #[test]
    fn minimal_uri_reading() {
        let ok = |u: &str| parse_uri_minimal(u).unwrap();
        assert_eq!(ok("file:///a/b"), ("file".into(), Some("/a/b".into())));
        assert_eq!(
            ok("FILE://localhost/a%20b"),
            ("file".into(), Some("/a b".into()))
        );
        assert_eq!(ok("https://x/y"), ("https".into(), None));
        for bad in [
            "file:///a/../b",
            "file:///a/%2e%2e/b",
            "file:///a%2fb",
            "file:///a//b",
            "file://evil/a",
            "file:///a?x",
            "file:a",
            "nope",
            "file:///a%ff",
            "file:///a%00",
        ] {
            assert!(parse_uri_minimal(bad).is_err(), "{bad}");
        }
    }
}
