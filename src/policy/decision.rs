//! Decisions and their provenance: what the engine answers for one URI, root, tool or
//! content item, with the stable reason code and the rule (layer file, line, text) that
//! decided. Provenance values live inside the compiled [`Policy`](super::Policy); a
//! [`Decision`] borrows one, so deciding never allocates.

use std::fmt;
use std::sync::Arc;

crate::coded::coded! {
    /// Why a decision came out as it did. The code (`as_str`) is stable: it goes into audit
    /// records and JSON-RPC error data.
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
    #[non_exhaustive]
    pub enum Reason {
        /// No rule applied; allowed by default.
        DefaultAllow => "default_allow",
        /// An allow rule matched (a glob of every layer's allow-list, or an allow-listed scheme).
        PolicyAllow => "policy_allow",
        /// A deny rule matched.
        PolicyDeny => "policy_deny",
        /// An allow-list is in force and nothing in it matched.
        NotAllowed => "not_allowed",
        /// The URI scheme is not allowed by `resources.other_schemes`.
        SchemeDenied => "scheme_denied",
        /// The input cannot be decided (no canonical path for a `file:` URI, a path that is
        /// not absolute and normalized, a malformed scheme); denied, fail closed.
        NotCanonical => "not_canonical",
        /// The tool name matched `tools.deny`.
        ToolDenied => "tool_denied",
        /// The tool is marked as writing and the policy is read-only.
        ReadOnly => "read_only",
        /// A content item is larger than `resources.max_bytes`.
        TooLarge => "too_large",
        /// A content item's MIME type is not in `resources.mime` (or has none).
        MimeDenied => "mime_denied",
    }
    /// The stable reason code.
    pub fn as_str;
}

impl fmt::Display for Reason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Where a rule or setting came from.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Provenance {
    /// Index into [`Policy::layers`](super::Policy::layers); `None` for built-in defaults.
    pub layer: Option<usize>,
    /// Display name of the layer's file; `None` for built-in defaults.
    pub file: Option<Arc<str>>,
    /// 1-based line of the rule in that file.
    pub line: Option<u32>,
    /// 1-based column.
    pub column: Option<u32>,
    /// The rule as written, e.g. `resources.deny = "**/.env"`, or `default`.
    pub rule: String,
}

impl Provenance {
    /// Provenance of a built-in default.
    pub(crate) fn default_rule(rule: impl Into<String>) -> Self {
        Provenance {
            rule: rule.into(),
            ..Provenance::default()
        }
    }

    /// Whether this is a built-in default rather than a rule from a file.
    pub fn is_default(&self) -> bool {
        self.layer.is_none()
    }

    /// Where the rule was written, for people: `file:line` (`file:line:column` with
    /// `column`), the file alone, or `built-in default`.
    pub fn location(&self, column: bool) -> String {
        match (&self.file, self.line, self.column) {
            (Some(f), Some(l), Some(c)) if column => format!("{f}:{l}:{c}"),
            (Some(f), Some(l), _) => format!("{f}:{l}"),
            (Some(f), _, _) => f.to_string(),
            _ => "built-in default".into(),
        }
    }
}

impl fmt::Display for Provenance {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (&self.file, self.line) {
            (Some(file), Some(line)) => write!(f, "{file}:{line}: {}", self.rule),
            (Some(file), None) => write!(f, "{file}: {}", self.rule),
            _ if self.rule == "default" => f.write_str("default"),
            _ => write!(f, "default: {}", self.rule),
        }
    }
}

/// The answer for one URI, root, tool or content item.
///
/// `allow == false` means the policy denies it; whether that blocks depends on the
/// policy's [`Mode`](super::Mode) (see [`Policy::blocks`](super::Policy::blocks)).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Decision<'p> {
    /// Whether the policy allows it.
    pub allow: bool,
    /// Why.
    pub reason: Reason,
    /// The rule that decided.
    pub provenance: &'p Provenance,
}

impl<'p> Decision<'p> {
    pub(crate) fn allow(reason: Reason, provenance: &'p Provenance) -> Self {
        Decision {
            allow: true,
            reason,
            provenance,
        }
    }

    pub(crate) fn deny(reason: Reason, provenance: &'p Provenance) -> Self {
        Decision {
            allow: false,
            reason,
            provenance,
        }
    }
}

/// How a tool argument named by `[[tools.paths]]` is read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ArgKind {
    /// A filesystem path string.
    Path,
    /// A URI string (checked like any URI crossing rootfence).
    Uri,
}

/// One argument of a tool call that must be checked against the roots.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolPath {
    /// RFC 6901 JSON pointer into `params.arguments`. When it points at an array, each
    /// string element is checked.
    pub pointer: String,
    /// Path or URI.
    pub kind: ArgKind,
    /// The server glob of the entry (`None`: the entry applies to every server).
    pub server: Option<String>,
    /// The `[[tools.paths]]` entry that names it.
    pub provenance: Provenance,
}

use globset::Candidate;

use super::compile::candidate;
use super::settings::SchemeStance;
use super::{AllowTable, Matchers, Policy};

impl Policy {
    /// Decides a resource URI: its scheme, and for `file:` its canonical path.
    ///
    /// `scheme` is the URI's scheme (any case). For `file`, `canonical_path` must be the
    /// canonical, decoded, absolute path (no `.`, `..` or empty components); anything else
    /// (including `None`) is denied with [`Reason::NotCanonical`]. The path is checked
    /// against every layer's `resources.deny` (any match denies) and `resources.allow`
    /// (each layer's list must match). Other schemes follow `resources.other_schemes`.
    ///
    /// This does not check roots: the roots module decides containment; this is the
    /// policy's part of the decision.
    pub fn decide_resource(&self, scheme: &str, canonical_path: Option<&str>) -> Decision<'_> {
        if !scheme.eq_ignore_ascii_case("file") {
            return self.decide_scheme(scheme);
        }
        match canonical_path.filter(|p| super::glob::is_normalized_absolute(p)) {
            Some(path) => self.decide_normalized_file(path),
            None => Decision::deny(Reason::NotCanonical, &self.m.not_canonical),
        }
    }

    /// [`Policy::decide_resource`] for a `file:` path already known to be absolute and
    /// normalized (a parsed `FileUri`'s path: no empty, `.` or `..` names, no NUL), so the
    /// check is not repeated for every entry of a page.
    pub fn decide_normalized_file(&self, path: &str) -> Decision<'_> {
        debug_assert!(super::glob::is_normalized_absolute(path), "{path}");
        let m = &self.m;
        let c = Candidate::from_bytes(path.as_bytes());
        if let Some((_, p)) = m.res_deny.find_rare(&c) {
            return Decision::deny(Reason::PolicyDeny, p);
        }
        allow_lists(&m.res_allow, &c, &m.default)
    }

    /// Decisions on many `file:` paths, most sharing their directory (a list page's): see
    /// [`FileJudge`].
    pub fn file_judge(&self) -> FileJudge<'_> {
        FileJudge {
            policy: self,
            deny: super::glob::Steps::new(&self.m.res_deny),
        }
    }

    fn decide_scheme(&self, scheme: &str) -> Decision<'_> {
        let m = &self.m;
        if !crate::uri::is_scheme(scheme) {
            return Decision::deny(Reason::NotCanonical, &m.not_canonical);
        }
        match &self.resources.other_schemes {
            SchemeStance::AllowAll if m.scheme_prov.is_default() => {
                Decision::allow(Reason::DefaultAllow, &m.scheme_prov)
            }
            SchemeStance::AllowAll => Decision::allow(Reason::PolicyAllow, &m.scheme_prov),
            SchemeStance::Only(list) if list.iter().any(|s| s.eq_ignore_ascii_case(scheme)) => {
                Decision::allow(Reason::PolicyAllow, &m.scheme_prov)
            }
            SchemeStance::Only(_) => Decision::deny(Reason::SchemeDenied, &m.scheme_prov),
        }
    }

    /// Decides whether a root (a host-declared or static root, by canonical path) may be
    /// used: denied if it matches `roots.deny` or `resources.deny` of any layer, or falls
    /// outside any layer's `roots.allow`.
    pub fn decide_root(&self, canonical_path: &str) -> Decision<'_> {
        decide_root_with(&self.m, canonical_path)
    }

    /// Decides a tool call by tool name: `tools.deny`, then the read-only stance
    /// (`tools.read_only` with `tools.writing`).
    pub fn decide_tool(&self, tool_name: &str) -> Decision<'_> {
        let m = &self.m;
        let c = Candidate::from_bytes(tool_name.as_bytes());
        if let Some((_, p)) = m.tool_deny.find_rare(&c) {
            return Decision::deny(Reason::ToolDenied, p);
        }
        if m.read_only
            && let Some((_, p)) = m.tool_writing.find_rare(&c)
        {
            return Decision::deny(Reason::ReadOnly, p);
        }
        Decision::allow(Reason::DefaultAllow, &m.default)
    }

    /// Whether a tool is marked as writing (`tools.writing`), whatever `read_only` says:
    /// its path arguments may not name a `sandbox.read_only_paths` match.
    pub fn tool_writes(&self, tool_name: &str) -> bool {
        let c = Candidate::from_bytes(tool_name.as_bytes());
        self.m.tool_writes.find_rare(&c).is_some()
    }

    /// Decides one content item of a result: its size in bytes (text length, or decoded
    /// blob length) against `resources.max_bytes`, and its MIME type (parameters ignored,
    /// any case) against `resources.mime`. With a MIME list in force, an item without a
    /// MIME type is denied (fail closed).
    pub fn decide_content(&self, mime: Option<&str>, bytes: u64) -> Decision<'_> {
        let m = &self.m;
        let r = &self.resources;
        if r.max_bytes.is_some_and(|max| bytes > max) {
            return Decision::deny(Reason::TooLarge, &m.max_bytes_prov);
        }
        if let Some(list) = &r.mime {
            let allowed = mime.is_some_and(|mt| list.iter().any(|p| mime_matches(p, mt)));
            return if allowed {
                Decision::allow(Reason::PolicyAllow, &m.mime_prov)
            } else {
                Decision::deny(Reason::MimeDenied, &m.mime_prov)
            };
        }
        if r.max_bytes.is_some() {
            return Decision::allow(Reason::PolicyAllow, &m.max_bytes_prov);
        }
        Decision::allow(Reason::DefaultAllow, &m.default)
    }

    /// The arguments of a tool call that must be checked as paths or URIs: every
    /// `[[tools.paths]]` entry whose `tool` glob matches the name and whose `server` glob
    /// (if any) matches the server's name (`serverInfo.name`), in declaration order.
    ///
    /// `server` is `None` while the server's identity is unknown (a 2026-07-28 server that
    /// has not named itself yet): then every matching entry applies, whatever server it
    /// describes, so an unknown server is checked more, never less.
    pub fn tool_path_pointers(&self, tool_name: &str, server: Option<&str>) -> Vec<&ToolPath> {
        let m = &self.m;
        if m.tool_paths.is_empty() {
            return Vec::new();
        }
        // `matches` gives the entries' indices in ascending order.
        (m.tool_paths_set.matches(tool_name).into_iter())
            .map(|i| &m.tool_paths[i])
            .filter(|e| match (&e.server, server) {
                (Some(glob), Some(name)) => glob.is_match(name),
                _ => true,
            })
            .flat_map(|e| e.paths.iter())
            .collect()
    }

    /// `tools.infer` for one tool, with the rule that set it: the narrowest
    /// `[[tools.infer_for]]` entry whose glob matches the name, else `tools.infer`.
    pub fn tool_infer(&self, tool_name: &str) -> (super::ToolInfer, &Provenance) {
        use super::settings::Ranked;
        let m = &self.m;
        m.infer_for
            .iter()
            .filter(|(_, g, _, _)| g.is_match(tool_name))
            .min_by_key(|(_, _, i, _)| i.rank())
            .map_or((m.infer.0, &m.infer.1), |(_, _, i, p)| (*i, p))
    }
}

/// Whether MIME pattern `pattern` (lowercase `type/subtype`, `type/*`, `*/*`) matches the
/// MIME type `mime` (any case, parameters ignored). No allocation. Between two patterns
/// (lowercase, as compiled), whether `pattern` covers every type the other one matches.
pub(super) fn mime_matches(pattern: &str, mime: &str) -> bool {
    let essence = mime.split(';').next().unwrap_or("").trim();
    let Some((t, s)) = essence.split_once('/') else {
        return false;
    };
    if t.is_empty() || s.is_empty() {
        return false;
    }
    match pattern.split_once('/') {
        Some(("*", "*")) => true,
        Some((pt, "*")) => pt.eq_ignore_ascii_case(t),
        Some((pt, ps)) => pt.eq_ignore_ascii_case(t) && ps.eq_ignore_ascii_case(s),
        None => false,
    }
}

/// Root decision on the compiled matchers (also used at load, for static roots).
pub(crate) fn decide_root_with<'p>(m: &'p Matchers, path: &str) -> Decision<'p> {
    let Some(c) = candidate(path) else {
        return Decision::deny(Reason::NotCanonical, &m.not_canonical);
    };
    if let Some((_, p)) = m.root_deny.find_rare(&c) {
        return Decision::deny(Reason::PolicyDeny, p);
    }
    // Another user's home, unless it is (or holds) the user's own: the superuser's `/root`
    // is refused to everyone but the superuser working in it.
    if let Some((_, p)) = m.root_other_homes.find_rare(&c) {
        let own = m
            .own_home
            .as_deref()
            .is_some_and(|h| super::glob::path_within(path, h));
        if !own {
            return Decision::deny(Reason::PolicyDeny, p);
        }
    }
    if let Some((_, p)) = m.res_deny.find_rare(&c) {
        return Decision::deny(Reason::PolicyDeny, p);
    }
    allow_lists(&m.root_allow, &c, &m.default)
}

/// Every layer's allow-list must match; the allow is attributed to the last layer's
/// matching entry (the most specific statement).
/// [`Policy::decide_normalized_file`] on one path after another: the deny globs' automaton
/// runs over each directory's text once and then only over each name (a page lists a
/// directory's names together), and a path a deny glob matches is decided in full (to name
/// the rule), so each decision is exactly the one `decide_normalized_file` gives.
#[derive(Debug)]
pub struct FileJudge<'p> {
    policy: &'p Policy,
    deny: super::glob::Steps<'p>,
}

impl<'p> FileJudge<'p> {
    /// [`Policy::decide_normalized_file`] of `path` (absolute and normalized).
    pub fn decide(&mut self, path: &str) -> Decision<'p> {
        debug_assert!(super::glob::is_normalized_absolute(path), "{path}");
        if self.deny.is_match(path) {
            return self.policy.decide_normalized_file(path);
        }
        let m = &self.policy.m;
        if m.res_allow.is_empty() {
            // No allow list to ask (the default policy): no candidate to build (its base
            // name and extension are searched for at construction).
            return Decision::allow(Reason::DefaultAllow, &m.default);
        }
        let c = Candidate::from_bytes(path.as_bytes());
        allow_lists(&m.res_allow, &c, &m.default)
    }
}

fn allow_lists<'p>(
    lists: &'p [AllowTable],
    c: &Candidate<'_>,
    default: &'p Provenance,
) -> Decision<'p> {
    let Some((last, earlier)) = lists.split_last() else {
        return Decision::allow(Reason::DefaultAllow, default);
    };
    for l in earlier {
        if !l.table.is_match(c) {
            return Decision::deny(Reason::NotAllowed, &l.miss);
        }
    }
    match last.table.find(c) {
        Some((_, p)) => Decision::allow(Reason::PolicyAllow, p),
        None => Decision::deny(Reason::NotAllowed, &last.miss),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mime_matching() {
        assert!(mime_matches("text/*", "text/plain; charset=utf-8"));
        assert!(mime_matches("text/plain", "TEXT/Plain"));
        assert!(mime_matches("*/*", "a/b"));
        assert!(!mime_matches("*/*", "garbage"));
        assert!(!mime_matches("text/*", "texts/plain"));
        assert!(!mime_matches("application/json", "application/json5"));
        assert!(!mime_matches("text/*", "/plain"));
    }
}
