//! One decision on one URI or path: scheme, strict parse, resolution beneath an effective root
//! by the kernel, then the policy's path rules, in that order. The first refusal decides, so
//! the reason given is the most basic thing wrong with the URI. Also: a page of URIs at once
//! (per directory: `paged.rs`'s [`Checker::page`]), relative tool paths (resolved against
//! the server's working directory when it lies inside a root), and reads judged again on
//! the file opened ([`read_judged`]).

use std::borrow::Cow;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::fsaccess::{FileRead, FsError, Stamp};
use crate::policy::Policy;
use crate::roots::{Allowed, CheckOptions, RootSet, Verdict as RootVerdict};
use crate::uri::{self, FileUri};

/// A rule as the audit log and denial errors name it: the rule and its line (the file is
/// named separately, as the layer).
pub fn rule_text(p: &crate::policy::Provenance) -> String {
    match p.line {
        Some(line) => format!("line {line}: {}", p.rule),
        None => p.rule.clone(),
    }
}

/// The enforcer's one verdict: whether one URI (or path, tool name, content item) may
/// cross, and why. Every check of the enforcer returns it; the roots' and the policy's own
/// results ([`crate::roots::Verdict`], [`crate::policy::Decision`]) are converted to it where
/// they are read (`Checker::file`, `Verdict::from_policy`, `path_verdict`). Its default is a
/// refusal with nothing known.
#[derive(Clone, Debug, Default)]
pub struct Verdict {
    /// Whether it may cross.
    pub allow: bool,
    /// Stable reason code (reasons.md or policy.md); static for every code but the
    /// `…_via_symlink` ones, so a page of allowed entries allocates no reason.
    pub reason: Cow<'static, str>,
    /// The canonical form (for `file:`), to forward instead of the raw text.
    pub canonical: Option<FileUri>,
    /// The root it was checked against (the one containing it, for an allow); shared with
    /// the root set.
    pub root: Option<Arc<FileUri>>,
    /// The policy layer (file) that decided, if a rule did (shared: a page's entries are
    /// decided by a few rules).
    pub layer: Option<Arc<str>>,
    /// The rule that decided, if a rule did.
    pub rule: Option<Arc<str>>,
    /// The root verdict of an allowed `file:` URI (to read the same file later). `None` for
    /// the entries of a page checked with [`Checker::page`]: nothing
    /// reads those. Boxed: a page's value path holds a `Verdict` per entry, and this is most
    /// of its size.
    pub allowed: Option<Box<Allowed>>,
    /// What the user or the model can do instead, for refusals where that is not obvious
    /// from the reason (a relative path: "use an absolute path inside …").
    pub hint: Option<String>,
}

impl Verdict {
    /// A policy decision (on something that is not a resolved path: a scheme, a tool name,
    /// a content item), with the rule that made it.
    pub(super) fn from_policy(d: &crate::policy::Decision<'_>) -> Verdict {
        Verdict {
            allow: d.allow,
            reason: Cow::Borrowed(d.reason.as_str()),
            layer: d.provenance.file.as_deref().map(Arc::from),
            rule: Some(rule_text(d.provenance).into()),
            ..Verdict::deny("")
        }
    }

    /// A refusal with this reason and nothing else known.
    pub(super) fn deny(reason: impl Into<Cow<'static, str>>) -> Verdict {
        Verdict {
            reason: reason.into(),
            ..Verdict::default()
        }
    }

    /// The same refusal with a hint.
    pub(super) fn with_hint(mut self, hint: impl Into<String>) -> Verdict {
        self.hint = Some(hint.into());
        self
    }
}

/// Decides URIs and paths against the roots and the policy.
#[derive(Debug)]
pub struct Checker {
    opts: CheckOptions,
    /// The server's working directory, against which it resolves relative paths.
    server_cwd: Option<PathBuf>,
    /// When the session started (the hard-link stance's "new" is after it).
    session_start: Stamp,
}

impl Checker {
    /// A checker with the policy's symlink and hard-link stances. Call it before the server
    /// starts: the session starts now, for the hard-link stance (a link made later is new).
    /// The server's working directory is taken to be rootfence's own (it inherits it).
    pub fn new(policy: &Policy) -> Checker {
        let session_start = Stamp::now();
        Checker {
            opts: Checker::options_for(policy, session_start),
            server_cwd: std::env::current_dir().ok(),
            session_start,
        }
    }

    /// The same checker under a reloaded policy: its stances, the same session start and
    /// server working directory.
    pub fn reloaded(&self, policy: &Policy) -> Checker {
        Checker {
            opts: Checker::options_for(policy, self.session_start),
            server_cwd: self.server_cwd.clone(),
            session_start: self.session_start,
        }
    }

    /// The check options a policy states, for a session that started at `session_start`.
    pub fn options_for(policy: &Policy, session_start: Stamp) -> CheckOptions {
        CheckOptions {
            symlinks: policy.roots().symlinks,
            ..CheckOptions::default()
        }
        .with_hardlinks(policy.roots().hardlinks, session_start)
    }

    /// The server's working directory, when known (tool arguments inferred as paths are
    /// resolved against it: `tools.rs`).
    pub(super) fn server_cwd(&self) -> Option<&Path> {
        self.server_cwd.as_deref()
    }

    /// The options every root check uses.
    pub fn options(&self) -> &CheckOptions {
        &self.opts
    }

    /// Checks a URI of any scheme. `roots` is `None` while the roots are not known: a `file:`
    /// URI is then denied (`roots_unknown`), never allowed.
    pub fn uri(&self, policy: &Policy, raw: &str, roots: Option<&RootSet>) -> Verdict {
        match self.file_uri(policy, raw, roots) {
            Ok((uri, roots)) => self.file(policy, roots.check(&uri, &self.opts), roots),
            Err(done) => *done,
        }
    }

    /// Everything before the root check: scheme, roots known, strict parse. `Err` is the
    /// decision when one of those settles it.
    pub(super) fn file_uri<'r>(
        &self,
        policy: &Policy,
        raw: &str,
        roots: Option<&'r RootSet>,
    ) -> Result<(FileUri, &'r RootSet), Box<Verdict>> {
        let Some(scheme) = uri::scheme_of(raw) else {
            return Err(Box::new(Verdict::deny("not_a_uri")));
        };
        if scheme != "file" {
            // Schemes that wrap a file: URI, or name local files themselves, are file access
            // in disguise to the hosts that resolve them: never waved through as "another
            // scheme".
            if crate::uri::wraps_a_file(raw, &scheme) {
                return Err(Box::new(Verdict::deny("wrapped_file_uri")));
            }
            return Err(Box::new(Verdict::from_policy(
                &policy.decide_resource(&scheme, None),
            )));
        }
        let Some(roots) = roots else {
            let mut c = Verdict::deny("roots_unknown");
            c.canonical = FileUri::parse(raw).ok();
            return Err(Box::new(c));
        };
        match FileUri::parse(raw) {
            Ok(uri) => Ok((uri, roots)),
            Err(e) => Err(Box::new(Verdict::deny(e.reason.code()))),
        }
    }

    /// Checks a page of URIs (the entries of a `resources/list` result): the same decisions
    /// as [`Checker::uri`] on each, in order ([`Checker::page`], expanded). Allowed entries
    /// carry no [`Verdict::allowed`]. (The page benchmark's measure, `benches/uri_check.rs`.)
    pub fn uris<'a>(
        &self,
        policy: &Policy,
        raws: impl IntoIterator<Item = &'a str>,
        roots: Option<&RootSet>,
    ) -> Vec<Verdict> {
        let raws: Vec<&str> = raws.into_iter().collect();
        self.page(policy, &raws, roots).into_verdicts()
    }

    /// Checks a filesystem path (a tool argument the policy names as a path). A relative
    /// path is resolved against the server's working directory when that lies inside a root
    /// (the server would resolve it there), and the absolute path checked is what the caller
    /// forwards; otherwise it is refused with what to send instead.
    pub fn path(&self, policy: &Policy, raw: &str, roots: Option<&RootSet>) -> Verdict {
        let path = Path::new(raw);
        let absolute;
        let path = if path.is_absolute() {
            path
        } else {
            match self.relative_base(policy, raw, roots) {
                Ok(base) => {
                    absolute = base.join(path);
                    absolute.as_path()
                }
                Err(refusal) => return *refusal,
            }
        };
        let uri = match FileUri::from_path(path) {
            Ok(u) => u,
            Err(e) => return Verdict::deny(e.reason.code()),
        };
        let Some(roots) = roots else {
            let mut c = Verdict::deny("roots_unknown");
            c.canonical = Some(uri);
            return c;
        };
        self.file(policy, roots.check(&uri, &self.opts), roots)
    }

    /// The directory a relative tool path is resolved against: the server's working
    /// directory, when it is a directory inside a root that the policy allows. Else the
    /// refusal, saying what to send.
    fn relative_base(
        &self,
        policy: &Policy,
        raw: &str,
        roots: Option<&RootSet>,
    ) -> Result<PathBuf, Box<Verdict>> {
        let inside = match roots {
            Some(set) if !set.is_empty() => super::paths(set).join(", "),
            _ => "a root".to_owned(),
        };
        // The path as the hint shows it: whole when short, cut when long.
        let shown = super::shorten(raw, 120);
        let refuse = |why: &str| {
            let hint = format!("`{shown}` {why}; use an absolute path inside {inside}");
            Box::new(Verdict::deny("relative_path").with_hint(hint))
        };
        if raw.starts_with('~') {
            return Err(refuse(
                "starts with `~`, which servers expand differently (or not at all)",
            ));
        }
        let Some(cwd) = &self.server_cwd else {
            return Err(refuse(
                "is relative and the server's working directory is unknown",
            ));
        };
        let Some(roots) = roots else {
            return Err(refuse("is relative and the roots are not known yet"));
        };
        let c = match FileUri::from_path(cwd) {
            Ok(u) => self.file(policy, roots.check(&u, &self.opts), roots),
            Err(_) => Verdict::deny("not_canonical"),
        };
        let is_dir = c
            .allowed
            .as_ref()
            .is_some_and(|a| a.kind == crate::roots::FileKind::Directory);
        if !(c.allow && is_dir) {
            return Err(refuse(&format!(
                "is relative and the server's working directory ({}) is not inside a root",
                cwd.display()
            )));
        }
        Ok(cwd.clone())
    }

    /// The policy's path rules, on a root verdict.
    pub(super) fn file(&self, policy: &Policy, verdict: RootVerdict, roots: &RootSet) -> Verdict {
        match verdict {
            RootVerdict::Deny(d) => Verdict {
                canonical: d.canonical,
                root: d
                    .root
                    .and_then(|i| roots.roots().get(i).map(|r| Arc::clone(r.shared_uri()))),
                ..Verdict::deny(d.reason.code())
            },
            RootVerdict::Allow(a) => {
                let Some(real) = roots.real_path(&a) else {
                    let mut c = Verdict::deny("io_error");
                    c.canonical = Some(a.canonical.clone());
                    return c;
                };
                let real = (real != a.canonical.path()).then_some(real);
                let (canonical, root) = (a.canonical.clone(), a.root);
                judge_paths(policy, canonical, root, real.as_deref(), roots, Some(a))
            }
        }
    }
}

/// Reads the file an allow verdict names (the `serve` and `verify` stances), judged again on
/// the file actually opened: its identity when the check saw one, the hard-link stance, and
/// the policy's path rules on where it was opened. A path that did not exist when it was
/// checked is only ever judged here, so a name flipped to a link (to `.env`, say) after the
/// check is refused, never read out.
pub fn read_judged(
    policy: &Policy,
    opts: &CheckOptions,
    roots: &RootSet,
    allowed: &Allowed,
    limit: u64,
) -> Result<FileRead, ReadRefusal> {
    let read = roots.read(allowed, limit, opts).map_err(ReadRefusal::Fs)?;
    let Some(real) = roots.real_path_at(allowed.root, &read.path) else {
        return Err(ReadRefusal::Refused(Box::new(Verdict::deny("io_error"))));
    };
    let c = judge_paths(
        policy,
        allowed.canonical.clone(),
        allowed.root,
        (real != allowed.canonical.path()).then_some(real.as_str()),
        roots,
        None,
    );
    if c.allow {
        Ok(read)
    } else {
        Err(ReadRefusal::Refused(Box::new(c)))
    }
}

/// The path rules on a URI inside root `root`: the name asked for, and `real`, where the
/// kernel resolves it when that differs. A link inside the root must not turn a denied file
/// into an allowed name.
fn judge_paths(
    policy: &Policy,
    canonical: FileUri,
    root: usize,
    real: Option<&str>,
    roots: &RootSet,
    allowed: Option<Allowed>,
) -> Verdict {
    let texts = &mut RuleTexts::default();
    let (mut v, _) = path_verdict(policy, canonical.path(), real, None, root, roots, texts);
    v.canonical = Some(canonical);
    if v.allow {
        v.allowed = allowed.map(Box::new);
    }
    v
}

/// The texts a decision's rule is recorded with, made once per rule for a page (most entries
/// of a page are decided by the same one or two rules).
#[derive(Default)]
pub(super) struct RuleTexts {
    /// (the rule, its text and its layer's name).
    made: Vec<(*const crate::policy::Provenance, RuleText)>,
}

/// A rule's text and its layer's name, shared by the decisions it made.
type RuleText = (Arc<str>, Option<Arc<str>>);

impl RuleTexts {
    fn of(&mut self, p: &crate::policy::Provenance) -> RuleText {
        let key: *const crate::policy::Provenance = p;
        if let Some((_, made)) = self.made.iter().find(|(k, _)| *k == key) {
            return made.clone();
        }
        let made: RuleText = (rule_text(p).into(), p.file.clone());
        if self.made.len() < 16 {
            self.made.push((key, made.clone()));
        }
        made
    }
}

/// The path rules' verdict on `path` inside root `root` (without a canonical form), and on
/// `real`, where the kernel resolves it when that differs (see [`judge_paths`]), with the
/// rule that decided (a page's runs share verdicts by it: `paged.rs`). The policy's
/// [`Decision`](crate::policy::Decision) is converted here, at the edge.
pub(super) fn path_verdict<'p>(
    policy: &'p Policy,
    path: &str,
    real: Option<&str>,
    judge: Option<&mut crate::policy::FileJudge<'p>>,
    root: usize,
    roots: &RootSet,
    texts: &mut RuleTexts,
) -> (Verdict, &'p crate::policy::Provenance) {
    let named = match judge {
        Some(j) => j.decide(path),
        None => policy.decide_normalized_file(path),
    };
    let resolved = real.map(|p| policy.decide_resource("file", Some(p)));
    // A name that looks allowed, refused at its real path: the refusal decides, and its
    // reason says so.
    let via_link = named.allow && resolved.as_ref().is_some_and(|r| !r.allow);
    let d = match resolved {
        Some(r) if via_link => r,
        _ => named,
    };
    let reason = if via_link {
        Cow::Owned(format!("{}_via_symlink", d.reason.as_str()))
    } else {
        Cow::Borrowed(d.reason.as_str())
    };
    let (rule, layer) = texts.of(d.provenance);
    let v = Verdict {
        allow: d.allow,
        reason,
        root: roots.roots().get(root).map(|r| Arc::clone(r.shared_uri())),
        layer,
        rule: Some(rule),
        ..Verdict::default()
    };
    (v, d.provenance)
}

/// Why [`read_judged`] refused.
#[derive(Debug)]
pub enum ReadRefusal {
    /// The file could not be read as checked (gone, changed, a link now on the way, a hard
    /// link the stance refuses, …).
    Fs(FsError),
    /// The file opened is one the policy denies (it was reached through a link made after
    /// the check, say).
    Refused(Box<Verdict>),
}

#[cfg(test)]
mod tests {
    use crate::enforce::testing::World;

    /// A page gives each entry, in order, the decision a single check gives it, wherever
    /// the entries settled without the page check (other schemes, text that is no URI, a
    /// URI outside every root) fall among the files: first, between siblings, last, in runs.
    #[test]
    fn a_page_gives_each_entry_the_decision_of_its_single_check_in_order() {
        let w = World::new(
            &["d", "e"],
            &["d/a.txt", "d/b.txt", "d/.env", "e/c.txt"],
            None,
        );
        let live = w.enforcer.inner.live();
        let set = w.enforcer.inner.operator.set();
        let u = |rel: &str| w.uri(rel);
        let outside = format!("file://{}/outside/secret.txt", w.base);
        let pages: Vec<Vec<String>> = vec![
            vec!["https://example.com/x".into(), u("d/a.txt"), u("d/b.txt")],
            vec![u("d/a.txt"), "not a uri".into(), u("d/b.txt"), u("d/.env")],
            vec![u("d/a.txt"), u("d/b.txt"), "mailto:x@y".into()],
            vec![
                "a:".into(),
                "b:".into(),
                u("d/a.txt"),
                "c:".into(),
                "d:".into(),
            ],
            vec![
                u("d/a.txt"),
                outside.clone(),
                u("d/b.txt"),
                u("out/secret.txt"),
            ],
            vec![
                u("e/c.txt"),
                u("d/a.txt"),
                u("d/missing"),
                u("e/c.txt"),
                u(""),
            ],
            vec!["x:".into(), "y:".into()],
            vec![],
        ];
        for page in &pages {
            let raws: Vec<&str> = page.iter().map(String::as_str).collect();
            let checks = live.page(&raws, Some(set)).into_verdicts();
            assert_eq!(checks.len(), page.len(), "{page:?}");
            for (raw, c) in page.iter().zip(&checks) {
                let one = live.uri(raw, Some(set));
                assert_eq!(
                    (c.allow, &c.reason, c.canonical.as_ref().map(|u| u.as_str())),
                    (
                        one.allow,
                        &one.reason,
                        one.canonical.as_ref().map(|u| u.as_str())
                    ),
                    "{raw} in {page:?}"
                );
            }
        }
        // Without roots nothing is a file verdict, and the order still holds.
        let page = [u("d/a.txt"), "https://example.com/".to_owned()];
        let raws: Vec<&str> = page.iter().map(String::as_str).collect();
        let checks = live.page(&raws, None).into_verdicts();
        let single: Vec<_> = page.iter().map(|r| live.uri(r, None).reason).collect();
        let paged: Vec<_> = checks.into_iter().map(|c| c.reason).collect();
        assert_eq!(paged, single);
    }
}
