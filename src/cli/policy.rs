//! `rootfence policy check|explain|show` (issue 4): validate policy layers, explain one
//! decision with its provenance, print the compiled effective policy.
//!
//! `explain` decides as `rootfence run` does, with the same library parts: the strict URI
//! parser (`uri::FileUri`), the root check beneath opened directory capabilities
//! (`roots::RootSet`, with the policy's symlink and hard-link stances), then the policy
//! rule on the canonical path. The first denial decides.
//!
//! Exit codes: `check` 0 = valid, 1 = policy errors; `explain` 0 = allowed, 1 = denied
//! (a URI that does not parse is denied, as `run` denies it), 2 = the policy or a `--root`
//! could not be read; `show` 0, or 1 on policy errors.

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, bail};
use rootfence::enforce::Checker;
use rootfence::policy::{Decision, Mode, Policy, Provenance};
use rootfence::roots::{CheckOptions, RootErrorKind, RootSet, RootSpec, Stamp, Verdict};
use rootfence::uri::{FileUri, Reason as UriReason, scheme_of};
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
        /// A recorded `tools/list` result (or response) of a server, JSON: also print, for
        /// each of its tools, which arguments `run` would judge as paths (`tools.infer`).
        #[arg(long, value_name = "FILE")]
        tools_list: Option<PathBuf>,
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
    /// A root directory (as `run --root`; repeat for several): the URI must also lie
    /// inside one of them, checked beneath the opened directory (symbolic links, hard
    /// links and `..` as `run` treats them). A root that `[roots]` refuses is dropped.
    #[arg(long = "root", value_name = "DIR")]
    roots: Vec<PathBuf>,
    /// Treat the argument as a root the host declares: a `file:` URI of a directory that
    /// opens, allowed by `[roots]` under its declared and its real path.
    #[arg(long, conflicts_with = "tool")]
    as_root: bool,
    /// Treat the argument as a tool name (decided by `[tools]`), and show which of its
    /// arguments are judged as paths (`tools.infer`).
    #[arg(long)]
    tool: bool,
    /// With `--tool`: a recorded `tools/list` result (or response) of the server, JSON; the
    /// tool's arguments are inferred from its schema there, as `run` does.
    #[arg(long, value_name = "FILE", requires = "tool")]
    tools_list: Option<PathBuf>,
    /// Print JSON instead of text.
    #[arg(long)]
    json: bool,
    /// The URI (or root URI, or tool name) to explain.
    #[arg(value_name = "URI")]
    target: String,
}

pub fn run(cmd: PolicyCommand) -> anyhow::Result<ExitCode> {
    match cmd {
        PolicyCommand::Check {
            each,
            files,
            tools_list,
        } => check(&files, each, tools_list.as_deref()),
        PolicyCommand::Explain(args) => explain(&args),
        PolicyCommand::Show { policies, json } => show(&policies, json),
    }
}

/// The policy stack every command loads (`Policy::load`: the built-in default under the
/// files given, unless the first says `base = "none"`), with the warnings of
/// [`warn_dropped`] on stderr; or its errors on stderr and `None`.
fn load(policies: &[PathBuf]) -> Option<Policy> {
    let policy = Policy::load(policies)
        .inspect_err(|errs| rootfence::stderr_line!("{errs}"))
        .ok()?;
    warn_dropped(&policy);
    Some(policy)
}

/// Warns loudly (stderr) when a policy opted out of the built-in default and so lacks some
/// of its protections; used by every command that loads a policy.
pub(crate) fn warn_dropped(policy: &Policy) {
    let dropped = policy.dropped_protections();
    if dropped.is_empty() {
        return;
    }
    let why = match policy.opted_out() {
        Some(p) => format!(
            "{} opts out of the built-in default with `base = \"none\"`",
            match p.file {
                Some(_) => p.location(false),
                None => "the policy".to_string(),
            }
        ),
        None => "the policy is not stacked on the built-in default".to_string(),
    };
    rootfence::stderr_line!(
        "rootfence: WARNING: {why} and drops {} of its protections:",
        dropped.len()
    );
    for d in dropped {
        rootfence::stderr_line!("rootfence: WARNING:   - {d}");
    }
    rootfence::stderr_line!(
        "rootfence: WARNING: hint: remove `base = \"none\"` to keep them (your file then \
         stacks on the default and may only narrow it), or copy them from \
         `rootfence policy show --policy builtin:default`"
    );
}

fn check(files: &[PathBuf], each: bool, tools_list: Option<&Path>) -> anyhow::Result<ExitCode> {
    let tools = tools_list.map(read_tools_list).transpose()?;
    let groups: Vec<&[PathBuf]> = if each {
        files.chunks(1).collect()
    } else {
        vec![files]
    };
    let mut out = std::io::stdout().lock();
    let mut failed = false;
    for group in groups {
        let names: Vec<String> = group.iter().map(|p| p.display().to_string()).collect();
        match Policy::load(group) {
            Ok(policy) => {
                let base = policy
                    .layers()
                    .iter()
                    .find(|l| l.base)
                    .map(|l| format!(" (stacked on {})", l.name))
                    .unwrap_or_default();
                warn_dropped(&policy);
                writeln!(out, "ok: {}{base}", names.join(" + "))?;
                if let Some(tools) = &tools {
                    write_inferred_tools(&mut out, &policy, tools)?;
                }
            }
            Err(errs) => {
                failed = true;
                rootfence::stderr_line!("{errs}");
            }
        }
    }
    out.flush()?;
    Ok(ExitCode::from(u8::from(failed)))
}

fn show(policies: &[PathBuf], as_json: bool) -> anyhow::Result<ExitCode> {
    let Some(policy) = load(policies) else {
        return Ok(ExitCode::from(1));
    };
    let mut out = std::io::stdout().lock();
    if as_json {
        writeln!(
            out,
            "{}",
            serde_json::to_string_pretty(&policy.show_json())?
        )?;
    } else {
        write!(out, "{}", policy.show_text())?;
    }
    out.flush()?;
    Ok(ExitCode::SUCCESS)
}

/// One step of an explanation: the URI parser, the root check, then the policy rule.
struct Step {
    /// `uri`, `roots`, `resources` or `tools`.
    check: &'static str,
    allow: bool,
    /// A policy reason code (`docs/policy.md`), a URI or root reason code
    /// (`docs/reasons.md`), or `inside_root` for a root check that passed.
    reason: &'static str,
    /// The policy rule that decided; `None` when the URI parser or the root check did.
    rule: Option<Provenance>,
    /// What the parser or the root check found, for people.
    detail: Option<String>,
}

impl Step {
    fn policy(check: &'static str, d: &Decision<'_>) -> Self {
        Step {
            check,
            allow: d.allow,
            reason: d.reason.as_str(),
            rule: Some(d.provenance.clone()),
            detail: None,
        }
    }

    fn refused(check: &'static str, reason: UriReason, detail: String) -> Self {
        Step {
            check,
            allow: false,
            reason: reason.code(),
            rule: None,
            detail: Some(detail),
        }
    }

    fn json(&self) -> serde_json::Value {
        let p = self.rule.as_ref();
        json!({
            "check": self.check,
            "decision": if self.allow { "allow" } else { "deny" },
            "reason": self.reason,
            "file": p.and_then(|p| p.file.as_deref()),
            "line": p.and_then(|p| p.line),
            "column": p.and_then(|p| p.column),
            "rule": p.map(|p| p.rule.as_str()),
            "detail": self.detail,
        })
    }

    /// The rule as written, or what decided when no policy rule did.
    fn rule_text(&self) -> String {
        match (&self.rule, self.check) {
            (Some(p), _) => p.rule.clone(),
            (None, "uri") => "none (decided by the uri parser)".into(),
            (None, _) => "none (decided by the root check)".into(),
        }
    }

    fn location(&self) -> String {
        match &self.rule {
            Some(p) => p.location(true),
            None if self.check == "uri" => "uri parser".into(),
            None => "root check".into(),
        }
    }
}

/// A `--root` that the policy's `[roots]` rules refuse: `run` drops it, so it does not
/// count for containment.
struct DroppedRoot {
    root: String,
    reason: &'static str,
    rule: Provenance,
}

fn provenance_json(p: Option<&Provenance>) -> serde_json::Value {
    json!({
        "file": p.and_then(|p| p.file.as_deref()),
        "line": p.and_then(|p| p.line),
        "column": p.and_then(|p| p.column),
        "rule": p.map(|p| p.rule.as_str()),
    })
}

fn explain(args: &ExplainArgs) -> anyhow::Result<ExitCode> {
    let Some(policy) = load(&args.policies) else {
        return Ok(ExitCode::from(2));
    };
    let mut steps = Vec::new();
    let mut dropped = Vec::new();
    // Whether the decision could change with roots that were not given: only for a
    // `file:` URI that parsed and reached the policy without a root check.
    let mut roots_unchecked = false;
    let mut inferred = None;
    let subject = if args.tool {
        steps.push(Step::policy("tools", &policy.decide_tool(&args.target)));
        inferred = Some(infer_for_tool(
            &policy,
            &args.target,
            args.tools_list.as_deref(),
        )?);
        json!({"tool": args.target})
    } else if args.as_root {
        explain_root(&policy, &args.target, &mut steps)
    } else {
        let scheme = scheme_of(&args.target).map(|s| s.into_owned());
        match scheme.as_deref() {
            Some(s) if s != "file" => {
                steps.push(Step::policy("resources", &policy.decide_resource(s, None)));
                json!({"uri": args.target, "scheme": s, "path": null, "canonical": null})
            }
            _ => match FileUri::parse(&args.target) {
                Err(e) => {
                    steps.push(Step::refused("uri", e.reason, e.detail));
                    json!({"uri": args.target, "scheme": scheme, "path": null, "canonical": null})
                }
                Ok(uri) => {
                    let mut real = None;
                    if args.roots.is_empty() {
                        roots_unchecked = true;
                    } else {
                        // The root-check options `run` derives from the policy's
                        // `[roots]` stances (the session starting now, for the hard-link
                        // stance).
                        let opts = Checker::options_for(&policy, Stamp::now());
                        let (step, resolved) =
                            root_check(&policy, &args.roots, &uri, &opts, &mut dropped)?;
                        steps.push(step);
                        real = resolved.filter(|r| r != uri.path());
                    }
                    let named = policy.decide_resource("file", Some(uri.path()));
                    steps.push(Step::policy("resources", &named));
                    // As `run`: the path rules also judge the file a link resolves to.
                    if let Some(real) = &real {
                        let d = policy.decide_resource("file", Some(real));
                        let mut step = Step::policy("resolved", &d);
                        if !d.allow && named.allow {
                            step.reason = "policy_deny_via_symlink";
                        }
                        step.detail = Some(format!("resolves to {real}"));
                        steps.push(step);
                    }
                    json!({
                        "uri": args.target,
                        "scheme": "file",
                        "path": uri.path(),
                        "canonical": uri.as_str(),
                    })
                }
            },
        }
    };
    // The first denying step decides, as in `run`; if none denies, the last (the policy
    // rule) does.
    let decisive = steps
        .iter()
        .find(|s| !s.allow)
        .unwrap_or_else(|| steps.last().expect("at least one step"));
    let allow = decisive.allow;
    let blocked = !allow && policy.mode() == Mode::Enforce;
    let mut out = std::io::stdout().lock();
    if args.json {
        let doc = json!({
            "subject": subject,
            "decision": if allow { "allow" } else { "deny" },
            "reason": decisive.reason,
            "mode": policy.mode().as_str(),
            "blocked": blocked,
            "provenance": provenance_json(decisive.rule.as_ref()),
            "detail": decisive.detail,
            "steps": steps.iter().map(Step::json).collect::<Vec<_>>(),
            "dropped_roots": dropped.iter().map(|d| json!({
                "root": d.root,
                "reason": d.reason,
                "file": d.rule.file.as_deref(),
                "line": d.rule.line,
                "column": d.rule.column,
                "rule": d.rule.rule,
            })).collect::<Vec<_>>(),
            "roots_checked": !roots_unchecked,
            "inferred": inferred.as_ref().map(|i| i.json()),
            "layers": policy.layers().iter().map(|l| json!({"name": l.name, "sha256": l.sha256})).collect::<Vec<_>>(),
        });
        writeln!(out, "{}", serde_json::to_string_pretty(&doc)?)?;
    } else {
        writeln!(out, "decision: {}", if allow { "allow" } else { "deny" })?;
        writeln!(out, "reason:   {}", decisive.reason)?;
        writeln!(out, "rule:     {}", decisive.rule_text())?;
        if let Some(detail) = &decisive.detail {
            writeln!(out, "detail:   {detail}")?;
        }
        writeln!(out, "layer:    {}", decisive.location())?;
        let mode = policy.mode().as_str();
        let effect = match (allow, blocked) {
            (true, _) => "passes",
            (false, true) => "blocked",
            (false, false) => "logged, not blocked",
        };
        writeln!(out, "mode:     {mode} ({effect})")?;
        if roots_unchecked {
            writeln!(
                out,
                "note:     roots not checked (pass --root DIR to check containment too)"
            )?;
        }
        for d in &dropped {
            writeln!(
                out,
                "dropped:  --root {}: {} {}  ({})",
                d.root,
                d.reason,
                d.rule.rule,
                d.rule.location(true)
            )?;
        }
        if let Some(i) = &inferred {
            i.write(&mut out)?;
        }
        if steps.len() > 1 {
            writeln!(out, "steps:")?;
            for s in &steps {
                let what = match (&s.rule, &s.detail) {
                    (Some(p), Some(d)) => format!("{}: {d}", p.rule),
                    (Some(p), None) => p.rule.clone(),
                    (None, d) => d.clone().unwrap_or_default(),
                };
                writeln!(
                    out,
                    "  {:<9} {:<5} {:<14} {what}  ({})",
                    s.check,
                    if s.allow { "allow" } else { "deny" },
                    s.reason,
                    s.location()
                )?;
            }
        }
    }
    out.flush()?;
    Ok(ExitCode::from(u8::from(!allow)))
}

/// What `run` would judge of a tool's arguments (`tools.infer`, `src/toolargs/`).
struct Inferred {
    infer: rootfence::policy::ToolInfer,
    rule: Provenance,
    /// The recorded list and what it taught about the tool (`None`: not listed there).
    listed: Option<(PathBuf, Option<rootfence::toolargs::ToolPlan>)>,
}

impl Inferred {
    fn json(&self) -> serde_json::Value {
        let plan = self.listed.as_ref().and_then(|(_, p)| p.as_ref());
        json!({
            "infer": self.infer.as_str(),
            "provenance": provenance_json(Some(&self.rule)),
            "tools_list": self.listed.as_ref().map(|(f, _)| f.display().to_string()),
            "listed": plan.is_some(),
            "overflow": plan.and_then(|p| p.overflow.as_deref()),
            "arguments": plan.map(|p| p.rules.iter().map(|r| json!({
                "pointer": r.pointer(),
                "role": r.role.as_str(),
                "why": r.why,
            })).collect::<Vec<_>>()),
            "notes": plan.map(|p| p.notes.clone()),
        })
    }

    fn write(&self, out: &mut impl std::io::Write) -> std::io::Result<()> {
        use rootfence::policy::ToolInfer;
        writeln!(
            out,
            "infer:    tools.infer = \"{}\" ({}: {})",
            self.infer.as_str(),
            self.rule.location(true),
            self.rule.rule
        )?;
        if self.infer == ToolInfer::Off {
            return writeln!(
                out,
                "          only the arguments [[tools.paths]] names are judged"
            );
        }
        let Some((file, plan)) = &self.listed else {
            return writeln!(
                out,
                "          (pass --tools-list FILE, a recorded tools/list, to see what its schema teaches)"
            );
        };
        let Some(plan) = plan else {
            return writeln!(
                out,
                "          not listed in {}: every string argument is judged by its shape",
                file.display()
            );
        };
        if let Some(why) = &plan.overflow {
            return writeln!(
                out,
                "          schema not read to the end ({why}): every string argument is judged by its shape"
            );
        }
        writeln!(out, "arguments (from {}):", file.display())?;
        for r in &plan.rules {
            let role = match (self.infer, r.role) {
                (ToolInfer::Strict, rootfence::toolargs::Role::Weak) => "path",
                (_, role) => role.as_str(),
            };
            writeln!(out, "  {:<24} {:<36} {}", r.pointer(), role, r.why)?;
        }
        for n in &plan.notes {
            writeln!(out, "  note: {n}")?;
        }
        writeln!(out, "  (any other string)       by value shape")
    }
}

/// A recorded `tools/list` result (a response's `result`, or the result itself).
fn read_tools_list(file: &Path) -> anyhow::Result<serde_json::Value> {
    let text = std::fs::read_to_string(file)
        .with_context(|| format!("cannot read the tools list {}", file.display()))?;
    let mut v: serde_json::Value = serde_json::from_str(&text).with_context(|| {
        format!(
            "{} is not JSON (write the tools/list result or response the server sent)",
            file.display()
        )
    })?;
    if let Some(result) = v.get_mut("result") {
        v = result.take();
    }
    if v.get("tools").and_then(|t| t.as_array()).is_none() {
        bail!(
            "{} has no `tools` array (write the tools/list result or response the server sent)",
            file.display()
        );
    }
    Ok(v)
}

/// For `policy check --tools-list`: each tool's stance and the arguments judged as paths.
fn write_inferred_tools(
    out: &mut impl std::io::Write,
    policy: &Policy,
    tools: &serde_json::Value,
) -> std::io::Result<()> {
    use rootfence::toolargs::Role;
    for (name, plan) in rootfence::toolargs::infer_list(tools) {
        let (infer, _) = policy.tool_infer(&name);
        let judged: Vec<String> = plan
            .rules
            .iter()
            .filter(|r| match r.role {
                Role::Path | Role::Uri => true,
                Role::Weak => infer == rootfence::policy::ToolInfer::Strict,
                _ => false,
            })
            .map(|r| format!("{} ({})", r.pointer(), r.why))
            .collect();
        let what = match (infer, &plan.overflow) {
            (rootfence::policy::ToolInfer::Off, _) => "only [[tools.paths]]".to_owned(),
            (_, Some(why)) => format!("every string by its shape ({why})"),
            (_, None) if judged.is_empty() => {
                "no path arguments; other strings by shape".to_owned()
            }
            (_, None) => format!("{}; other strings by shape", judged.join(", ")),
        };
        writeln!(out, "  tool {name} [infer {}]: {what}", infer.as_str())?;
    }
    Ok(())
}

/// The tool's `tools.infer` stance and, given a recorded `tools/list`, its inferred
/// arguments.
fn infer_for_tool(
    policy: &Policy,
    tool: &str,
    tools_list: Option<&std::path::Path>,
) -> anyhow::Result<Inferred> {
    let (infer, rule) = policy.tool_infer(tool);
    let listed = match tools_list {
        None => None,
        Some(file) => {
            let result = read_tools_list(file)?;
            let plan = rootfence::toolargs::infer_list(&result)
                .into_iter()
                .find(|(name, _)| name == tool)
                .map(|(_, p)| p);
            Some((file.to_owned(), plan))
        }
    };
    Ok(Inferred {
        infer,
        rule: rule.clone(),
        listed,
    })
}

/// A root the host declares (`--as-root`), as `run` judges it: a strict `file:` URI,
/// allowed by `[roots]` under its declared path, a directory that opens, and allowed by
/// `[roots]` under its real path too (a link to `/etc` is judged as `/etc`).
fn explain_root(policy: &Policy, raw: &str, steps: &mut Vec<Step>) -> serde_json::Value {
    let uri = match FileUri::parse(raw) {
        Ok(uri) => uri,
        Err(e) => {
            steps.push(Step::refused("uri", e.reason, e.detail));
            return json!({"root": raw, "path": null, "canonical": null});
        }
    };
    let subject = json!({"root": raw, "path": uri.path(), "canonical": uri.as_str()});
    let declared = policy.decide_root(uri.path());
    steps.push(Step::policy("roots", &declared));
    if !declared.allow {
        return subject;
    }
    let (set, errors) = RootSet::open([RootSpec::uri(uri.as_str())]);
    if let Some(e) = errors.into_iter().next() {
        let reason = match &e.kind {
            RootErrorKind::Invalid(u) | RootErrorKind::UnnamableRealPath { err: u, .. } => u.reason,
            RootErrorKind::NotFound => UriReason::NotFound,
            RootErrorKind::NotADirectory => UriReason::NotADirectory,
            _ => UriReason::IoError,
        };
        steps.push(Step::refused("roots", reason, e.to_string()));
        return subject;
    }
    let root = &set.roots()[0];
    if root.real_uri() != root.uri() {
        let real = policy.decide_root(root.real_uri().path());
        steps.push(Step {
            detail: Some(format!("the root resolves to {}", root.real_uri())),
            ..Step::policy("roots", &real)
        });
    }
    subject
}

/// The root check for `--root`: each root is opened as `run` opens it and must pass
/// `[roots]` under its declared and its real path (a root that does not is dropped, as
/// `run` drops it); the URI is then checked beneath the roots that remain.
fn root_check(
    policy: &Policy,
    roots: &[PathBuf],
    uri: &FileUri,
    opts: &CheckOptions,
    dropped: &mut Vec<DroppedRoot>,
) -> anyhow::Result<(Step, Option<String>)> {
    let mut kept = Vec::new();
    for arg in roots {
        let spec = root_spec(arg)?;
        let (one, errors) = RootSet::open([spec.clone()]);
        if let Some(e) = errors.into_iter().next() {
            return Err(e).context("cannot explain with this --root");
        }
        let root = &one.roots()[0];
        let refusal = [root.uri(), root.real_uri()]
            .into_iter()
            .map(|form| policy.decide_root(form.path()))
            .find(|d| !d.allow);
        match refusal {
            Some(d) => dropped.push(DroppedRoot {
                root: if root.real_uri() == root.uri() {
                    root.uri().path().to_string()
                } else {
                    format!(
                        "{} (real path {})",
                        root.uri().path(),
                        root.real_uri().path()
                    )
                },
                reason: d.reason.as_str(),
                rule: d.provenance.clone(),
            }),
            None => kept.push(spec),
        }
    }
    // The same roots again, as one set: `check` chooses among them as `run` does.
    let (set, errors) = RootSet::open(kept);
    if let Some(e) = errors.into_iter().next() {
        return Err(e).context("cannot explain: a --root changed while it was being opened");
    }
    Ok(match set.check(uri, opts) {
        Verdict::Allow(a) => (
            Step {
                check: "roots",
                allow: true,
                reason: "inside_root",
                rule: None,
                detail: Some(format!(
                    "inside the root {} ({})",
                    set.roots()[a.root].uri(),
                    a.kind.as_str()
                )),
            },
            set.real_path(&a),
        ),
        Verdict::Deny(d) => (Step::refused("roots", d.reason, d.detail), None),
    })
}

/// A `--root` argument as a root specification: relative paths are taken against the
/// working directory, as `run --root` takes them.
fn root_spec(arg: &Path) -> anyhow::Result<RootSpec> {
    if arg.as_os_str().as_encoded_bytes().starts_with(b"~") {
        bail!(
            "--root {}: `~` is not expanded here; give an absolute path",
            arg.display()
        );
    }
    let abs = std::path::absolute(arg)
        .with_context(|| format!("cannot make --root {} absolute", arg.display()))?;
    Ok(RootSpec::path(abs))
}
