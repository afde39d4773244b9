//! The effective roots: operator bounds (`--root`, `roots.static`, `roots.allow`/`deny`)
//! intersected with what the host declares, recomputed whenever the host's roots change, and
//! the "not known yet" state that `file:` decisions wait on.
//!
//! Containment between host and operator roots is decided on canonical URIs, component-wise,
//! with each root's real path (symlinks resolved when it was opened) as a second form, so a
//! root named through a symlink still matches the same directory named directly.

use std::sync::{Arc, Mutex};
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

/// The operator's roots: opened once at start (so their real paths are known).
#[derive(Debug)]
pub struct OperatorRoots {
    set: RootSet,
}

impl OperatorRoots {
    /// Opens the operator roots. Roots the policy's `roots.allow`/`roots.deny` refuse, and
    /// roots that cannot be opened, are returned as dropped (with the reason).
    pub fn open(specs: Vec<RootSpec>, policy: &Policy) -> (OperatorRoots, Vec<DroppedRoot>) {
        let (set, errors) = RootSet::open(specs);
        let mut dropped: Vec<DroppedRoot> = errors
            .into_iter()
            .map(|e| DroppedRoot {
                uri: AuditUri::new(&e.location),
                reason: format!("unavailable: {}", e.kind),
            })
            .collect();
        let (kept, refused) = filter_by_policy(&set, policy);
        dropped.extend(refused);
        let set = if kept.len() == set.roots().len() {
            set
        } else {
            RootSet::open(kept).0
        };
        (OperatorRoots { set }, dropped)
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

/// Keeps the roots the policy allows; the others become dropped entries.
fn filter_by_policy(set: &RootSet, policy: &Policy) -> (Vec<RootSpec>, Vec<DroppedRoot>) {
    let mut kept = Vec::new();
    let mut dropped = Vec::new();
    for root in set.roots() {
        // Both names of the root must pass: a deny rule on the real path cannot be evaded by
        // declaring a symlink to it.
        let refusal = [root.uri(), root.real_uri()]
            .into_iter()
            .map(|u| policy.decide_root(u.path()))
            .find(|d| !d.allow);
        match refusal {
            None => kept.push(spec_of(root)),
            Some(d) => dropped.push(DroppedRoot {
                uri: AuditUri::new(root.uri().as_str()),
                reason: format!("{} ({})", d.reason.as_str(), d.provenance),
            }),
        }
    }
    (kept, dropped)
}

fn spec_of(root: &Root) -> RootSpec {
    let spec = RootSpec::uri(root.uri().as_str());
    match root.name() {
        Some(n) => spec.with_name(n),
        None => spec,
    }
}

/// The forms a root can be named by: its declared canonical URI and its real path.
fn forms(root: &Root) -> [&FileUri; 2] {
    [root.uri(), root.real_uri()]
}

/// `a` is inside `b` (or is `b`), under any naming of either.
fn inside(a: &Root, b: &Root) -> bool {
    forms(a)
        .iter()
        .any(|fa| forms(b).iter().any(|fb| fa.starts_with(fb)))
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
        dropped: Vec::new(),
        narrowed: Vec::new(),
        effective: Vec::new(),
        outside_sandbox: Vec::new(),
    };
    if host.is_empty() {
        // A host that declares no roots leaves the operator's.
        let set = reopen(operator.set().roots().iter().map(spec_of));
        update.effective = uris(&set);
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
    update
        .dropped
        .extend(errors.into_iter().map(|e| DroppedRoot {
            uri: AuditUri::new(&e.location),
            reason: format!("unavailable: {}", e.kind),
        }));
    let (allowed, refused) = filter_by_policy(&host_set, policy);
    update.dropped.extend(refused);
    let host_set = reopen(allowed);

    let mut out: Vec<RootSpec> = Vec::new();
    for h in host_set.roots() {
        if operator.is_empty() || operator.set().roots().iter().any(|o| inside(h, o)) {
            out.push(spec_of(h));
            continue;
        }
        let narrowed: Vec<&Root> = operator
            .set()
            .roots()
            .iter()
            .filter(|o| inside(o, h))
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
            out.extend(narrowed.into_iter().map(spec_of));
        }
    }
    // The same directory named twice (two host roots narrowed to one operator root).
    let mut seen = std::collections::HashSet::new();
    out.retain(|s| seen.insert(s.location()));
    let set = reopen(out);
    update.effective = uris(&set);
    (set, update)
}

fn reopen(specs: impl IntoIterator<Item = RootSpec>) -> RootSet {
    // These roots were opened a moment ago; one that vanished since is simply left out.
    RootSet::open(specs).0
}

fn uris(set: &RootSet) -> Vec<AuditUri> {
    set.roots()
        .iter()
        .map(|r| AuditUri::new(r.uri().as_str()))
        .collect()
}

/// The roots as they stand, shared by the interceptor and every deferred decision.
#[derive(Debug)]
pub struct Tracker {
    tx: watch::Sender<RootsState>,
    /// The latest host roots, for recomputing.
    host: Mutex<Option<Vec<HostRoot>>>,
}

impl Tracker {
    /// A tracker whose roots are not known yet.
    pub fn new() -> Self {
        Tracker {
            tx: watch::Sender::new(RootsState::Unknown { asking: false }),
            host: Mutex::new(None),
        }
    }

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
        match &*self.tx.borrow() {
            RootsState::Known(set) => Some(Arc::clone(set)),
            RootsState::Unknown { .. } => None,
        }
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

    /// Remembers the host's latest roots.
    pub fn remember_host(&self, roots: Vec<HostRoot>) {
        *self.host.lock().unwrap_or_else(|e| e.into_inner()) = Some(roots);
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
            Ok(Ok(state)) => match &*state {
                RootsState::Known(set) => Some(Arc::clone(set)),
                RootsState::Unknown { .. } => None,
            },
            _ => None,
        }
    }
}

impl Default for Tracker {
    fn default() -> Self {
        Tracker::new()
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
    }

    #[tokio::test]
    async fn decisions_wait_only_while_asking() {
        let t = Tracker::new();
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
