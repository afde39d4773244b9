//! What a policy reload cannot change in a running session, in words for the operator.

use crate::policy::Policy;

/// The settings of `new` that differ from `old` but stay as they were for this session,
/// in words: the audit log's settings and the sandbox of the running server are fixed when
/// the session starts; the static roots, the roots timeouts and the sandbox when rootfence
/// starts again. Everything else applies to the next decision.
pub fn reload_deferred(old: &Policy, new: &Policy) -> Vec<String> {
    let mut out = Vec::new();
    let (o, n) = (old.roots(), new.roots());
    let statics = |r: &crate::policy::RootsSettings| {
        r.static_roots
            .iter()
            .map(|s| s.path.clone())
            .collect::<Vec<_>>()
    };
    if statics(o) != statics(n) {
        out.push("roots.static: takes effect when rootfence next starts".to_owned());
    }
    if (o.list_timeout, o.launch_wait, o.on_timeout)
        != (n.list_timeout, n.launch_wait, n.on_timeout)
    {
        out.push(
            "roots.list_timeout_ms, launch_wait_ms, on_timeout: take effect when rootfence \
             next starts"
                .to_owned(),
        );
    }
    let (a, b) = (old.audit(), new.audit());
    if format!("{a:?}") != format!("{b:?}") {
        out.push(
            "[audit]: the log of this session stays as it was opened; the new settings take \
             effect when rootfence next starts"
                .to_owned(),
        );
    }
    let (x, y) = (old.sandbox(), new.sandbox());
    let sb = |s: &crate::policy::SandboxSettings| {
        format!(
            "{:?} {:?} {:?} {:?} {:?} {:?} {:?} {:?} {:?} {:?}",
            s.mode,
            s.read,
            s.write,
            s.network,
            s.rlimits,
            s.env,
            s.root_access,
            s.follow_roots,
            s.read_only_roots,
            s.read_only_paths
        )
    };
    if sb(x) != sb(y) {
        out.push(
            "[sandbox]: the running server's sandbox cannot change; the new settings take \
             effect when rootfence next starts"
                .to_owned(),
        );
    }
    out
}
