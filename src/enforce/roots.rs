//! The effective roots: operator bounds (`--root`, `roots.static`, `roots.allow`/`deny`)
//! intersected with what the host declares, recomputed whenever the host's roots change, and
//! the "not known yet" state that `file:` decisions wait on. Host roots that miss every
//! operator root (a user-wide entry for a vault while the host has an unrelated project
//! open) leave the operator roots, never an empty set that serves no one.
//!
//! Containment between host and operator roots is decided by the kernel, not by spelling
//! ([`Root::contains`]): the inner root's real path, expressed below the outer root's real
//! path, must resolve beneath the outer root's descriptor to the inner root's very directory.
//! A host root named through a symbolic link inside an operator root but leading out of it
//! is outside, whatever its spelling says. The roots kept are the directories opened and
//! judged (their descriptors are moved or duplicated), never looked up again by path.

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::watch;

use crate::audit::{AuditUri, DroppedRoot, NarrowedRoot, RootsUpdate};
use crate::policy::Policy;
use crate::roots::{Root, RootSet, RootSpec};
use crate::uri::FileUri;

/// A root as declared by the host (`roots/list` result entry).
#[derive(Clone, Debug)]
pub struct HostRoot {
    /// The URI as the host sent it.
    pub uri: String,
    /// Its display name.
    pub name: Option<String>,
}

/// Where the roots stand.
#[derive(Clone, Debug)]
pub enum RootsState {
    /// Not known yet; `asking` while a request for them is outstanding (decisions wait).
    Unknown {
        /// rootfence is waiting for the host's answer.
        asking: bool,
    },
    /// Known.
    Known(Arc<RootSet>),
}

impl RootsState {
    /// The roots if known.
    fn known(&self) -> Option<Arc<RootSet>> {
        match self {
            RootsState::Known(set) => Some(Arc::clone(set)),
            RootsState::Unknown { .. } => None,
        }
    }
}

/// The operator's roots: opened once at start (so their real paths are known).
#[derive(Debug)]
pub struct OperatorRoots {
    set: RootSet,
    /// The roots taken from the server's command line (`roots.from_command`): used only
    /// when the host declares no roots and there are no operator roots; never a bound on
    /// the host's roots.
    from_command: RootSet,
}

impl OperatorRoots {
    /// Opens the operator roots. Roots the policy's `roots.allow`/`roots.deny` refuse, and
    /// roots that cannot be opened, are returned as dropped (with the reason).
    pub fn open(specs: Vec<RootSpec>, policy: &Policy) -> (OperatorRoots, Vec<DroppedRoot>) {
        let (set, dropped) = opened(specs, policy);
        let from_command = RootSet::empty();
        (OperatorRoots { set, from_command }, dropped)
    }

    /// Adds the roots taken from the server's command line (see [`OperatorRoots`]): opened
    /// and judged by the policy as any root. Returns those dropped.
    pub fn with_command_roots(
        mut self,
        specs: Vec<RootSpec>,
        policy: &Policy,
    ) -> (OperatorRoots, Vec<DroppedRoot>) {
        let (set, dropped) = opened(specs, policy);
        self.from_command = set;
        (self, dropped)
    }

    /// The roots of a session whose host declares none: the operator roots, or with none,
    /// those from the server's command line.
    pub fn without_host(&self) -> &RootSet {
        if self.set.is_empty() {
            &self.from_command
        } else {
            &self.set
        }
    }

    /// Whether the roots of a host without roots come from the server's command line.
    pub fn uses_command_roots(&self) -> bool {
        self.set.is_empty() && !self.from_command.is_empty()
    }

    /// The operator roots.
    pub fn set(&self) -> &RootSet {
        &self.set
    }

    /// Whether there are any.
    pub fn is_empty(&self) -> bool {
        self.set.is_empty()
    }
}

/// Opens `specs` and keeps the roots the policy allows; those that cannot be opened or that
/// it refuses are returned as dropped (with the reason).
fn opened(specs: Vec<RootSpec>, policy: &Policy) -> (RootSet, Vec<DroppedRoot>) {
    let (set, errors) = RootSet::open(specs);
    let mut dropped: Vec<DroppedRoot> = errors.into_iter().map(unavailable).collect();
    let (kept, refused) = filter_by_policy(set.into_roots(), policy);
    dropped.extend(refused);
    (RootSet::from_roots(kept), dropped)
}

fn unavailable(e: crate::roots::RootError) -> DroppedRoot {
    DroppedRoot {
        uri: AuditUri::new(&e.location),
        reason: format!("unavailable: {}", e.kind),
    }
}

/// Keeps the roots the policy allows; the others become dropped entries.
fn filter_by_policy(roots: Vec<Root>, policy: &Policy) -> (Vec<Root>, Vec<DroppedRoot>) {
    let mut kept = Vec::new();
    let mut dropped = Vec::new();
    for root in roots {
        // Both names of the root must pass: a deny rule on the real path cannot be evaded by
        // declaring a symlink to it.
        let refusal = [root.uri(), root.real_uri()]
            .into_iter()
            .map(|u| policy.decide_root(u.path()))
            .find(|d| !d.allow);
        match refusal {
            None => kept.push(root),
            Some(d) => dropped.push(DroppedRoot {
                uri: AuditUri::new(root.uri().as_str()),
                reason: format!("{} ({})", d.reason.as_str(), d.provenance),
            }),
        }
    }
    (kept, dropped)
}

/// A duplicate of an operator root for an effective set (same directory, no lookup by path).
fn dup(root: &Root) -> Option<Root> {
    root.try_clone()
        .inspect_err(|e| tracing::warn!("cannot duplicate the root {}: {e}", root.uri()))
        .ok()
}

/// Duplicates of every root of `set` that can be duplicated.
fn dup_all(set: &RootSet) -> RootSet {
    RootSet::from_roots(set.roots().iter().filter_map(dup).collect())
}

/// The effective roots of a session whose host declares no roots (it has no roots
/// capability): [`OperatorRoots::without_host`].
pub fn effective_without_host(
    operator: &OperatorRoots,
    policy: &Policy,
    trigger: &str,
) -> (RootSet, RootsUpdate) {
    let (mut set, mut update) = effective(&[], operator, policy, trigger);
    if operator.uses_command_roots() {
        set = dup_all(operator.without_host());
        update.effective = super::uris(&set);
    }
    (set, update)
}

/// What is missing when a roots update leaves the server without roots: one line for
/// stderr saying why and the exact argument to add, or `None` when there are roots.
/// `host_has_roots` is whether the host declares roots at all.
pub fn missing(
    update: &RootsUpdate,
    operator: &OperatorRoots,
    host_has_roots: bool,
) -> Option<String> {
    let consequence = "the server has no roots, so every file request is refused";
    let operator_paths = super::paths(operator.set());
    let host_paths: Vec<String> = update
        .dropped
        .iter()
        .filter(|d| d.reason == "outside_operator_roots")
        .filter_map(|d| FileUri::parse(d.uri.as_str()).ok())
        .map(|u| u.path().to_owned())
        .collect();
    let add: Vec<String> = host_paths.iter().map(|p| format!("--root {p}")).collect();
    if !update.effective.is_empty() {
        // The disjoint case `effective` resolved by keeping the entry's own roots.
        return is_disjoint(update, operator).then(|| {
            format!(
                "rootfence: note: the host's roots ({}) and --root ({}) do not overlap: the \
                 server keeps its own --root ({}) and is not given the host's; for a server \
                 meant to work in the project the host has open, give it `{}` instead",
                host_paths.join(", "),
                operator_paths.join(", "),
                operator_paths.join(", "),
                add.join(" "),
            )
        });
    }
    if !host_paths.is_empty() {
        return Some(format!(
            "rootfence: warning: the host's roots ({}) and --root ({}) do not overlap: \
             {consequence}; to serve the host's roots add `{}` to this server's arguments \
             before `--` (or open {} in the host)",
            host_paths.join(", "),
            operator_paths.join(", "),
            add.join(" "),
            operator_paths.join(" or "),
        ));
    }
    if !update.dropped.is_empty() {
        let what: Vec<String> = update
            .dropped
            .iter()
            .map(|d| format!("{} ({})", d.uri.as_str(), d.reason))
            .collect();
        return Some(format!(
            "rootfence: warning: every root was dropped: {}: {consequence}; declare a \
             project directory instead (`--root DIR` before `--`, or open it in the host)",
            what.join(", ")
        ));
    }
    if update.received.is_empty() && operator.without_host().is_empty() {
        let why = if host_has_roots {
            "the host declared no roots"
        } else {
            "the host does not declare roots"
        };
        return Some(format!(
            "rootfence: warning: no roots: {why} and no --root was given (and the server's \
             command line names no directory): {consequence}; add `--root DIR` before `--` \
             in this server's entry, DIR being the project it should work in"
        ));
    }
    None
}

/// The effective roots for a host answer, and the audit record of how they were formed.
pub fn effective(
    host: &[HostRoot],
    operator: &OperatorRoots,
    policy: &Policy,
    trigger: &str,
) -> (RootSet, RootsUpdate) {
    let mut update = RootsUpdate {
        trigger: trigger.to_owned(),
        received: host.iter().map(|r| AuditUri::new(&r.uri)).collect(),
        ..RootsUpdate::default()
    };
    if host.is_empty() {
        // A host that declares no roots leaves the operator's.
        let set = dup_all(operator.set());
        update.effective = super::uris(&set);
        return (set, update);
    }
    // Only `file:` roots that parse strictly are considered at all.
    let mut specs = Vec::new();
    for r in host {
        match FileUri::parse(&r.uri) {
            Ok(uri) => {
                let spec = RootSpec::uri(uri.as_str());
                specs.push(match &r.name {
                    Some(n) => spec.with_name(n.clone()),
                    None => spec,
                });
            }
            Err(e) => update.dropped.push(DroppedRoot {
                uri: AuditUri::new(&r.uri),
                reason: e.reason.code().to_owned(),
            }),
        }
    }
    let (host_set, errors) = RootSet::open(specs);
    update.dropped.extend(errors.into_iter().map(unavailable));
    let (host_roots, refused) = filter_by_policy(host_set.into_roots(), policy);
    update.dropped.extend(refused);

    let mut out: Vec<Root> = Vec::new();
    for h in host_roots {
        if operator.is_empty() || operator.set().roots().iter().any(|o| o.contains(&h)) {
            out.push(h);
            continue;
        }
        let narrowed: Vec<&Root> = operator
            .set()
            .roots()
            .iter()
            .filter(|o| h.contains(o))
            .collect();
        if narrowed.is_empty() {
            update.dropped.push(DroppedRoot {
                uri: AuditUri::new(h.uri().as_str()),
                reason: "outside_operator_roots".into(),
            });
        } else {
            update.narrowed.push(NarrowedRoot {
                uri: AuditUri::new(h.uri().as_str()),
                to: narrowed
                    .iter()
                    .map(|o| AuditUri::new(o.uri().as_str()))
                    .collect(),
            });
            out.extend(narrowed.into_iter().filter_map(dup));
        }
    }
    // The same directory named twice (two host roots narrowed to one operator root).
    let mut seen = std::collections::HashSet::new();
    out.retain(|r| seen.insert(r.uri().as_str().to_owned()));
    if out.is_empty() && is_disjoint(&update, operator) {
        // The host's roots are about something else (a user-wide entry for a notes vault
        // while the host has an unrelated project open, issue 27): intersecting leaves
        // nothing, which serves no one. The entry's own `--root` is what the operator gave
        // this server, so it keeps exactly that, never more; the dropped host roots stay in
        // the audit record, and stderr says so (`missing`).
        out = operator.set().roots().iter().filter_map(dup).collect();
    }
    let set = RootSet::from_roots(out);
    update.effective = super::uris(&set);
    (set, update)
}

/// Whether a host answer misses the operator roots entirely: it named roots, every one was
/// dropped, at least one for lying outside every `--root` and none narrowed to one.
fn is_disjoint(update: &RootsUpdate, operator: &OperatorRoots) -> bool {
    !operator.is_empty()
        && !update.received.is_empty()
        && update.narrowed.is_empty()
        && update.dropped.len() == update.received.len()
        && update
            .dropped
            .iter()
            .any(|d| d.reason == "outside_operator_roots")
}

/// The roots as they stand, shared by the interceptor and every deferred decision.
#[derive(Debug)]
pub struct Tracker {
    tx: watch::Sender<RootsState>,
}

impl Tracker {
    /// The current state.
    pub fn state(&self) -> RootsState {
        self.tx.borrow().clone()
    }

    /// A receiver that sees every change of the roots (for work that follows them, such
    /// as the tripwire's fingerprints).
    pub fn subscribe(&self) -> watch::Receiver<RootsState> {
        self.tx.subscribe()
    }

    /// The roots if known.
    pub fn known(&self) -> Option<Arc<RootSet>> {
        self.tx.borrow().known()
    }

    /// Marks that rootfence asked the host and is waiting (decisions then wait too).
    pub fn asking(&self) {
        self.tx.send_if_modified(|s| match s {
            RootsState::Unknown { asking } if !*asking => {
                *asking = true;
                true
            }
            _ => false,
        });
    }

    /// Sets the roots (known from now on).
    pub fn set(&self, set: RootSet) {
        self.tx.send_replace(RootsState::Known(Arc::new(set)));
    }

    /// Sets the roots only if they are still unknown (a fallback must not override an answer).
    pub fn set_if_unknown(&self, set: RootSet) -> bool {
        let set = Arc::new(set);
        self.tx.send_if_modified(|s| match s {
            RootsState::Unknown { .. } => {
                *s = RootsState::Known(Arc::clone(&set));
                true
            }
            RootsState::Known(_) => false,
        })
    }

    /// Waits until the roots are known, but only while someone is asking and at most
    /// `limit`. `None` means still unknown: `file:` then stays denied.
    pub async fn wait(&self, limit: Duration) -> Option<Arc<RootSet>> {
        let mut rx = self.tx.subscribe();
        let ready = rx.wait_for(|s| match s {
            RootsState::Known(_) => true,
            RootsState::Unknown { asking } => !asking,
        });
        match tokio::time::timeout(limit, ready).await {
            Ok(Ok(state)) => state.known(),
            _ => None,
        }
    }
}

impl Default for Tracker {
    /// A tracker whose roots are not known yet.
    fn default() -> Self {
        Tracker {
            tx: watch::Sender::new(RootsState::Unknown { asking: false }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn policy() -> Policy {
        Policy::from_sources(&[(
            "t.toml".into(),
            "version = 1\n[roots]\ndeny = [\"/etc/**\"]\n".into(),
        )])
        .unwrap()
    }

    fn host(uris: &[String]) -> Vec<HostRoot> {
        uris.iter()
            .map(|u| HostRoot {
                uri: u.clone(),
                name: None,
            })
            .collect()
    }

    fn paths(set: &RootSet) -> Vec<String> {
        set.roots()
            .iter()
            .map(|r| r.uri().path().to_owned())
            .collect()
    }

    #[test]
    fn host_roots_are_intersected_with_operator_roots() {
        let t = tempfile::tempdir().unwrap();
        let base = t.path().canonicalize().unwrap();
        for d in ["ws/a", "ws/b", "ws_evil", "other"] {
            std::fs::create_dir_all(base.join(d)).unwrap();
        }
        let p = |d: &str| base.join(d).to_string_lossy().into_owned();
        let u = |d: &str| {
            FileUri::from_path(&base.join(d))
                .unwrap()
                .as_str()
                .to_owned()
        };
        let policy = policy();
        let (op, dropped) = OperatorRoots::open(vec![RootSpec::path(p("ws"))], &policy);
        assert!(dropped.is_empty());

        // Inside an operator root: stays. Containing one: narrowed to it. Disjoint or a
        // string-prefix sibling: dropped. Not a file URI: dropped.
        let whole = FileUri::from_path(&base).unwrap().as_str().to_owned();
        let (set, update) = effective(
            &host(&[
                u("ws/a"),
                whole,
                u("ws_evil"),
                u("other"),
                "https://x/".into(),
            ]),
            &op,
            &policy,
            "test",
        );
        assert_eq!(paths(&set), [p("ws/a"), p("ws")]);
        assert_eq!(update.narrowed.len(), 1);
        let reasons: Vec<&str> = update.dropped.iter().map(|d| d.reason.as_str()).collect();
        assert_eq!(
            reasons,
            [
                "not_a_file_uri",
                "outside_operator_roots",
                "outside_operator_roots"
            ]
        );

        // No operator roots: the host's roots minus the policy's denies.
        let (none, _) = OperatorRoots::open(Vec::new(), &policy);
        let (set, update) = effective(
            &host(&[u("ws/a"), "file:///etc".into()]),
            &none,
            &policy,
            "test",
        );
        assert_eq!(paths(&set), [p("ws/a")]);
        assert!(
            update.dropped[0].reason.starts_with("policy_deny"),
            "{:?}",
            update.dropped
        );

        // A host that declares none leaves the operator roots.
        let (set, _) = effective(&[], &op, &policy, "test");
        assert_eq!(paths(&set), [p("ws")]);

        // A host whose roots all miss the operator roots (an unrelated project open): the
        // operator roots, the host's dropped and audited, and stderr says so.
        let (set, update) = effective(&host(&[u("other"), u("ws_evil")]), &op, &policy, "test");
        assert_eq!(paths(&set), [p("ws")]);
        assert_eq!(update.dropped.len(), 2);
        let note = missing(&update, &op, true).expect("the disjoint roots are said");
        assert!(
            note.contains("do not overlap: the server keeps its own --root"),
            "{note}"
        );
        // One host root kept: no fallback, nothing said.
        let (set, update) = effective(&host(&[u("other"), u("ws/a")]), &op, &policy, "test");
        assert_eq!(paths(&set), [p("ws/a")]);
        assert_eq!(missing(&update, &op, true), None);

        // Named through links inside the operator root: judged by where the kernel resolves
        // them. One leading out is dropped; one staying inside is kept.
        std::os::unix::fs::symlink(base.join("other"), base.join("ws/out")).unwrap();
        std::os::unix::fs::symlink(base.join("ws/a"), base.join("ws/in")).unwrap();
        let (set, update) = effective(&host(&[u("ws/out"), u("ws/in")]), &op, &policy, "test");
        assert_eq!(paths(&set), [p("ws/in")]);
        assert_eq!(update.dropped.len(), 1, "{:?}", update.dropped);
        assert_eq!(update.dropped[0].reason, "outside_operator_roots");
        assert_eq!(set.roots()[0].real_uri().path(), p("ws/a"));
    }

    #[tokio::test]
    async fn decisions_wait_only_while_asking() {
        let t = Tracker::default();
        // Nobody asking: no wait at all.
        assert!(t.wait(Duration::from_secs(5)).await.is_none());
        t.asking();
        let started = std::time::Instant::now();
        assert!(t.wait(Duration::from_millis(50)).await.is_none());
        assert!(started.elapsed() >= Duration::from_millis(50));
        t.set(RootSet::empty());
        assert!(t.wait(Duration::from_secs(5)).await.is_some());
        assert!(
            !t.set_if_unknown(RootSet::empty()),
            "a fallback never overrides an answer"
        );
    }
}
