//! One decision on one URI or path: scheme, strict parse, resolution beneath an effective root
//! by the kernel, then the policy's path rules, in that order. The first refusal decides, so
//! the reason given is the most basic thing wrong with the URI.

use crate::policy::{HardlinkStance, Policy};
use crate::roots::{Allowed, CheckOptions, RootSet, Verdict};
use crate::uri::{self, FileUri};

/// A rule as the audit log and denial errors name it: the rule and its line (the file is
/// named separately, as the layer).
pub fn rule_text(p: &crate::policy::Provenance) -> String {
    match p.line {
        Some(line) => format!("line {line}: {}", p.rule),
        None => p.rule.clone(),
    }
}

/// Schemes hosts resolve to local files: `jar:file:…!/x`, `view-source:file:…`, VS Code's
/// `vscode-file://vscode-app/<path>`, resource, remote and user-data schemes, and any
/// `scheme:file:…` form.
pub(super) fn wraps_a_file(raw: &str, scheme: &str) -> bool {
    const LOCAL: [&str; 8] = [
        "jar",
        "view-source",
        "vscode-file",
        "vscode-resource",
        "vscode-webview-resource",
        "vscode-remote",
        "vscode-remote-resource",
        "vscode-userdata",
    ];
    if LOCAL.contains(&scheme) {
        return true;
    }
    let rest = raw.get(scheme.len() + 1..).unwrap_or("").trim_start();
    rest.get(..5)
        .is_some_and(|p| p.eq_ignore_ascii_case("file:"))
}

/// The outcome of checking one URI (or path).
#[derive(Clone, Debug)]
pub struct Checked {
    /// Whether it may cross.
    pub allow: bool,
    /// Stable reason code (reasons.md or policy.md).
    pub reason: String,
    /// The canonical form (for `file:`), to forward instead of the raw text.
    pub canonical: Option<FileUri>,
    /// The root it was checked against (the one containing it, for an allow).
    pub root: Option<FileUri>,
    /// The policy layer (file) that decided, if a rule did.
    pub layer: Option<String>,
    /// The rule that decided, if a rule did.
    pub rule: Option<String>,
    /// The root verdict of an allowed `file:` URI (to read the same file later).
    pub allowed: Option<Allowed>,
}

impl Checked {
    /// A policy decision (on something that is not a resolved path: a scheme, a tool name,
    /// a content item), with the rule that made it.
    pub(super) fn from_policy(d: &crate::policy::Decision<'_>) -> Checked {
        Checked {
            allow: d.allow,
            reason: d.reason.as_str().to_owned(),
            layer: d.provenance.file.as_deref().map(str::to_owned),
            rule: Some(rule_text(d.provenance)),
            ..Checked::deny("")
        }
    }

    /// A refusal with this reason and nothing else known.
    pub(super) fn deny(reason: impl Into<String>) -> Checked {
        Checked {
            allow: false,
            reason: reason.into(),
            canonical: None,
            root: None,
            layer: None,
            rule: None,
            allowed: None,
        }
    }
}

/// Decides URIs and paths against the roots and the policy.
#[derive(Debug)]
pub struct Checker {
    opts: CheckOptions,
}

impl Checker {
    /// A checker with the policy's symlink and hard-link stances.
    pub fn new(policy: &Policy) -> Checker {
        Checker {
            opts: CheckOptions {
                symlinks: policy.roots().symlinks,
                deny_hard_links: policy.roots().hardlinks == HardlinkStance::Deny,
            },
        }
    }

    /// The options every root check uses.
    pub fn options(&self) -> &CheckOptions {
        &self.opts
    }

    /// Checks a URI of any scheme. `roots` is `None` while the roots are not known: a `file:`
    /// URI is then denied (`roots_unknown`), never allowed.
    pub fn uri(&self, policy: &Policy, raw: &str, roots: Option<&RootSet>) -> Checked {
        let Some(scheme) = uri::scheme_of(raw) else {
            return Checked::deny("not_a_uri");
        };
        if scheme != "file" {
            // Schemes that wrap a file: URI, or name local files themselves, are file access
            // in disguise to the hosts that resolve them: never waved through as "another
            // scheme".
            if wraps_a_file(raw, &scheme) {
                return Checked::deny("wrapped_file_uri");
            }
            return Checked::from_policy(&policy.decide_resource(&scheme, None));
        }
        let Some(roots) = roots else {
            let mut c = Checked::deny("roots_unknown");
            c.canonical = FileUri::parse(raw).ok();
            return c;
        };
        self.file(policy, roots.check_str(raw, &self.opts), roots)
    }

    /// Checks an absolute filesystem path (a tool argument the policy names as a path).
    pub fn path(&self, policy: &Policy, raw: &str, roots: Option<&RootSet>) -> Checked {
        let path = std::path::Path::new(raw);
        if !path.is_absolute() {
            // A relative path means whatever the server's working directory makes of it.
            return Checked::deny("relative_path");
        }
        let uri = match FileUri::from_path(path) {
            Ok(u) => u,
            Err(e) => return Checked::deny(e.reason.code()),
        };
        let Some(roots) = roots else {
            let mut c = Checked::deny("roots_unknown");
            c.canonical = Some(uri);
            return c;
        };
        self.file(policy, roots.check(&uri, &self.opts), roots)
    }

    /// The policy's path rules, on a root verdict.
    fn file(&self, policy: &Policy, verdict: Verdict, roots: &RootSet) -> Checked {
        let root_uri = |i: usize| roots.roots().get(i).map(|r| r.uri().clone());
        match verdict {
            Verdict::Deny(d) => Checked {
                allow: false,
                reason: d.reason.code().to_owned(),
                canonical: d.canonical,
                root: d.root.and_then(root_uri),
                layer: None,
                rule: None,
                allowed: None,
            },
            Verdict::Allow(a) => {
                // The path rules judge the name asked for and the file the kernel resolves it
                // to: a link inside the root must not turn a denied file into an allowed name.
                let named = policy.decide_resource("file", Some(a.canonical.path()));
                let Some(real) = roots.real_path(&a) else {
                    let mut c = Checked::deny("io_error");
                    c.canonical = Some(a.canonical.clone());
                    return c;
                };
                let real = Some(real);
                let resolved = match &real {
                    Some(p) if p != a.canonical.path() => {
                        Some(policy.decide_resource("file", Some(p.as_str())))
                    }
                    _ => None,
                };
                let d = match resolved {
                    Some(r) if !r.allow && named.allow => r,
                    _ => named,
                };
                let mut reason = d.reason.as_str().to_owned();
                if resolved.is_some_and(|r| !r.allow) && named.allow {
                    // Say why a name that looks allowed was refused.
                    reason = format!("{reason}_via_symlink");
                }
                Checked {
                    allow: d.allow,
                    reason,
                    canonical: Some(a.canonical.clone()),
                    root: root_uri(a.root),
                    layer: d.provenance.file.as_deref().map(str::to_owned),
                    rule: Some(rule_text(d.provenance)),
                    allowed: d.allow.then_some(a),
                }
            }
        }
    }
}
