//! Globs and paths in policies: `~`/`${HOME}` expansion (once, at load), validation that a
//! glob can match a canonical path at all, compilation (path globs always with
//! `GlobBuilder::literal_separator(true)`, because a bare globset `*` crosses `/`; tool-name
//! globs deliberately not, see [`name_glob`]), glob tables that remember which rule each
//! glob came from, and the conservative containment test behind the "a later layer may
//! only narrow" rule.
//!
//! Path globs follow one convenience rule: a glob ending in `/**` also matches the
//! directory it names (`**/.ssh/**` denies `.ssh` itself and everything in it), so
//! denying a directory's contents never leaves the directory listable.

use std::cell::RefCell;
use std::sync::{Mutex, OnceLock};

use globset::{Candidate, Glob, GlobBuilder, GlobMatcher, GlobSet, GlobSetBuilder};

use super::decision::Provenance;
use super::error::ErrorKind;

/// A problem with one value, located by the caller.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Problem {
    pub(crate) kind: ErrorKind,
    pub(crate) message: String,
    pub(crate) hint: String,
}

fn problem(kind: ErrorKind, message: impl Into<String>, hint: impl Into<String>) -> Problem {
    Problem {
        kind,
        message: message.into(),
        hint: hint.into(),
    }
}

/// Glob metacharacters (globset syntax, with backslash escapes as on Unix).
const META: &[char] = &['*', '?', '[', ']', '{', '}', '\\'];

/// Expands a leading `~` or `${HOME}`. Any other `$` is an error, so a policy never means
/// something different depending on the environment it is loaded in. `home` is the value
/// of `HOME`; in a glob it is inserted escaped, so a home directory containing `[` or `*`
/// cannot turn into a pattern.
pub(crate) fn expand(raw: &str, home: Option<&str>, glob: bool) -> Result<String, Problem> {
    let rest = if let Some(rest) = raw.strip_prefix("${HOME}") {
        Some(rest)
    } else if let Some(rest) = raw.strip_prefix('~') {
        if !(rest.is_empty() || rest.starts_with('/')) {
            return Err(problem(
                ErrorKind::BadVariable,
                format!("`~user` is not supported in \"{raw}\""),
                "only `~` and `${HOME}` (the current user's home) are expanded; \
                 write the absolute path instead",
            ));
        }
        Some(rest)
    } else {
        None
    };
    let check_dollar = |s: &str| -> Result<(), Problem> {
        let bytes = s.as_bytes();
        for (i, _) in s.match_indices('$') {
            // `[$]` is how a glob matches a literal dollar sign.
            let escaped = glob && i > 0 && bytes[i - 1] == b'[' && bytes.get(i + 1) == Some(&b']');
            if escaped {
                continue;
            }
            let var = s[i..]
                .strip_prefix("${")
                .and_then(|v| v.find('}').map(|end| &v[..end]));
            let message = match var {
                Some("HOME") => format!("`${{HOME}}` is only expanded at the start of \"{raw}\""),
                Some(v) => format!("unsupported variable `${{{v}}}` in \"{raw}\""),
                None if s[i..].starts_with("$HOME") => {
                    format!("`$HOME` is not expanded in \"{raw}\"; write `${{HOME}}` or `~`")
                }
                None => format!("unexpected `$` in \"{raw}\""),
            };
            let mut hint = String::from(
                "only a leading `~` or `${HOME}` is expanded; other variables are not, so \
                 a policy means the same in every environment",
            );
            if glob {
                hint.push_str("; to match a literal `$` write `[$]`");
            }
            return Err(problem(ErrorKind::BadVariable, message, hint));
        }
        Ok(())
    };
    let Some(rest) = rest else {
        check_dollar(raw)?;
        return Ok(raw.to_string());
    };
    check_dollar(rest)?;
    let home = match home {
        Some(h)
            if is_normalized_absolute(h.trim_end_matches('/'))
                || h.trim_end_matches('/').is_empty() && h.starts_with('/') =>
        {
            h.trim_end_matches('/')
        }
        Some(h) => {
            return Err(problem(
                ErrorKind::BadVariable,
                format!(
                    "cannot expand \"{raw}\": HOME (\"{h}\") is not an absolute, normalized path"
                ),
                "set HOME to an absolute path, or write the absolute path in the policy",
            ));
        }
        None => {
            return Err(problem(
                ErrorKind::BadVariable,
                format!("cannot expand \"{raw}\": HOME is not set"),
                "set HOME, or write the absolute path in the policy",
            ));
        }
    };
    let mut out = if glob {
        globset::escape(home)
    } else {
        home.to_string()
    };
    out.push_str(rest);
    if out.is_empty() {
        out.push('/');
    }
    Ok(out)
}

/// Whether `p` is absolute and normalized: starts with `/`, and (unless it is `/`) has no
/// empty, `.` or `..` component, no trailing `/`, and no NUL.
pub(crate) fn is_normalized_absolute(p: &str) -> bool {
    let b = p.as_bytes();
    if b == b"/" {
        return true;
    }
    if b.first() != Some(&b'/') {
        return false;
    }
    // One pass over the bytes (this runs on every path decided): each name between `/`s is
    // non-empty and neither `.` nor `..`, and there is no NUL.
    let mut start = 1;
    for i in 1..=b.len() {
        if i < b.len() && b[i] != b'/' {
            if b[i] == 0 {
                return false;
            }
            continue;
        }
        if matches!(&b[start..i], b"" | b"." | b"..") {
            return false;
        }
        start = i + 1;
    }
    true
}

/// Validates an expanded path (not a glob): absolute and normalized.
pub(crate) fn check_path(p: &str) -> Result<(), Problem> {
    if is_normalized_absolute(p) {
        Ok(())
    } else {
        Err(problem(
            ErrorKind::BadPath,
            format!("\"{p}\" is not an absolute, normalized path"),
            "write an absolute path (or start with `~/`) without `.`, `..`, `//` or a \
             trailing `/`",
        ))
    }
}

/// Whether `inner` is `outer` or below it, compared component-wise (never by string
/// prefix: `/root_evil` is not inside `/root`).
pub(crate) fn path_within(inner: &str, outer: &str) -> bool {
    if outer == "/" {
        return inner.starts_with('/');
    }
    inner == outer
        || (inner.len() > outer.len()
            && inner.starts_with(outer)
            && inner.as_bytes()[outer.len()] == b'/')
}

/// A compiled path glob with what containment checks need.
#[derive(Debug, Clone)]
pub(crate) struct PathGlob {
    /// The expanded pattern.
    pub(crate) text: String,
    /// What is compiled into a set: the pattern, plus `X` for a pattern `X/**`.
    pub(crate) globs: Vec<Glob>,
    /// For an allow-side `X/**`: the glob `X`, used to prove that every path under some
    /// directory is covered. `None` for other patterns and for deny-side globs.
    parent: Option<Glob>,
    /// Matchers for containment checks, compiled on first use: only a later layer's
    /// allow-list ever needs them, and most policies have none.
    matchers: OnceLock<Matchers>,
    /// `**` or `/**`: matches every absolute path.
    match_all: bool,
}

/// Which way a glob errs when case is ambiguous (case-insensitive filesystems: vfat,
/// ext4 casefold directories, macOS, where `.ENV` opens `.env`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Side {
    /// Deny-side rules (deny lists, writing marks, read-only roots, checked tool names)
    /// match case-insensitively: they can only deny more.
    Deny,
    /// Allow-lists match case-sensitively: they can only allow less.
    Allow,
}

fn build_with(pattern: &str, side: Side, literal_separator: bool) -> Result<Glob, Problem> {
    GlobBuilder::new(pattern)
        .literal_separator(literal_separator)
        .case_insensitive(side == Side::Deny)
        .build()
        .map_err(|e| {
            problem(
                ErrorKind::BadGlob,
                format!("invalid glob \"{pattern}\": {}", e.kind()),
                glob_hint(&e),
            )
        })
}

fn glob_hint(e: &globset::Error) -> String {
    match e.kind() {
        globset::ErrorKind::UnclosedClass => {
            "close the character class with `]`, or match a literal `[` with `[[]`".into()
        }
        globset::ErrorKind::UnopenedAlternates | globset::ErrorKind::UnclosedAlternates => {
            "balance the `{` and `}`, or match them literally with `[{]` / `[}]`".into()
        }
        globset::ErrorKind::DanglingEscape => "a glob cannot end with `\\`; write `\\\\`".into(),
        _ => "see the glob syntax in docs/policy.md".into(),
    }
}

/// Compiles a path glob (already expanded). Rejects globs that can never match a
/// canonical path, rather than letting a rule silently do nothing.
pub(crate) fn path_glob(text: &str, side: Side) -> Result<PathGlob, Problem> {
    if text.is_empty() {
        return Err(problem(
            ErrorKind::BadGlob,
            "empty glob",
            "remove the empty string, or write `**` to match everything",
        ));
    }
    let absolute = text.starts_with('/');
    let anywhere = text == "**" || text.starts_with("**/");
    if !absolute && !anywhere {
        return Err(problem(
            ErrorKind::BadGlob,
            format!("glob \"{text}\" is relative and can never match a canonical path"),
            format!(
                "rules match absolute canonical paths: write \"**/{text}\" to match at any \
                 depth, or start with `/` or `~/`"
            ),
        ));
    }
    if text != "/" {
        let body = text.strip_prefix('/').unwrap_or(text);
        if body
            .split('/')
            .any(|c| c.is_empty() || c == "." || c == "..")
        {
            return Err(problem(
                ErrorKind::BadGlob,
                format!("glob \"{text}\" can never match a canonical path"),
                "canonical paths have no empty, `.` or `..` components and no trailing \
                 `/`; remove them (write `dir/**` for everything under a directory)",
            ));
        }
    }
    let mut globs = vec![build_with(text, side, true)?];
    let mut parent_glob = None;
    let match_all = text == "**" || text == "/**";
    if let Some(parent) = text.strip_suffix("/**") {
        // `X/**` also matches `X` itself. For `/**`, X is `/`.
        let parent = if parent.is_empty() { "/" } else { parent };
        if parent != "**" {
            let pg = build_with(parent, side, true)?;
            // Only allow-lists are ever compared for containment.
            if side == Side::Allow {
                parent_glob = Some(pg.clone());
            }
            globs.push(pg);
        }
    }
    Ok(PathGlob {
        text: text.to_string(),
        globs,
        parent: parent_glob,
        matchers: OnceLock::new(),
        match_all,
    })
}

/// Compiles a tool-name glob.
///
/// The one place `literal_separator` is off: a tool name is not a path, and every
/// tool-name glob is deny-side (denied tools, writing marks, which tools get their
/// arguments checked), so letting `*` cross `/` only ever denies or checks more. With it
/// on, a hostile server could evade `*shell*` by naming its tool `x/run_shell`.
pub(crate) fn name_glob(text: &str, side: Side) -> Result<Glob, Problem> {
    if text.is_empty() {
        return Err(problem(
            ErrorKind::BadGlob,
            "empty tool name glob",
            "write a tool name, or a glob such as \"write_*\"",
        ));
    }
    build_with(text, side, false)
}

/// The directory every match of `text` lies strictly below, when the glob has a literal
/// leading part: `/home/u/code/*.rs` -> `/home/u/code`. `None` when the first component
/// is already a pattern (or the glob is a literal path).
fn literal_dir(text: &str) -> Option<&str> {
    let body = text.strip_prefix('/')?;
    let mut end = 0;
    for comp in body.split('/') {
        if comp.contains(META) {
            return (end > 0).then(|| &text[..end]);
        }
        end += 1 + comp.len();
    }
    None
}

/// Lazily compiled matchers of one allow glob.
#[derive(Debug, Clone)]
struct Matchers {
    /// Each compiled glob (for testing a literal path).
    globs: Vec<GlobMatcher>,
    /// For `X/**`: matchers of `X` and of `X/**`.
    dir: Option<(GlobMatcher, GlobMatcher)>,
}

impl PathGlob {
    fn matchers(&self) -> &Matchers {
        self.matchers.get_or_init(|| Matchers {
            globs: self.globs.iter().map(Glob::compile_matcher).collect(),
            dir: self
                .parent
                .as_ref()
                .map(|p| (p.compile_matcher(), self.globs[0].compile_matcher())),
        })
    }

    /// Whether this glob matches a canonical path (for a `X/**` glob, `X` too).
    pub(crate) fn matches_path(&self, path: &str) -> bool {
        self.match_all || self.matchers().globs.iter().any(|m| m.is_match(path))
    }

    /// Whether every path this glob matches is provably matched by `self`. Conservative:
    /// `false` means "not proven", which the caller reports as widening.
    pub(crate) fn covers(&self, later: &PathGlob) -> bool {
        if self.match_all || self.text == later.text {
            return true;
        }
        if !later.text.contains(META) {
            // A literal path: test it.
            return self
                .matchers()
                .globs
                .iter()
                .any(|m| m.is_match(&later.text));
        }
        // Every match of `later` is below its literal directory D. If D is `X` or below
        // `X` and `self` is `X/**`, everything below D is covered.
        match (&self.matchers().dir, literal_dir(&later.text)) {
            (Some((parent, below)), Some(d)) => parent.is_match(d) || below.is_match(d),
            _ => false,
        }
    }
}

/// The globs' regexes (as globset compiles each: bytes, `.` matching every byte, each
/// anchored at both ends) as one lazy DFA, or `None` (then nothing is stepped by hand).
fn steps_dfa(regexes: &[String]) -> Option<Automaton> {
    use regex_automata::hybrid::dfa::DFA;
    use regex_automata::nfa::thompson;
    use regex_automata::util::syntax;
    if regexes.is_empty() {
        return None;
    }
    DFA::builder()
        .syntax(syntax::Config::new().utf8(false).dot_matches_new_line(true))
        .thompson(
            thompson::Config::new()
                .utf8(false)
                .nfa_size_limit(Some(10 << 20)),
        )
        .configure(
            DFA::config()
                .match_kind(regex_automata::MatchKind::All)
                .cache_capacity(2 << 20),
        )
        .build_many(regexes)
        .ok()
        .map(|dfa| Automaton {
            dfa,
            spare: Mutex::new(Vec::new()),
        })
}

/// A table's lazy DFA, and the caches its [`Steps`] left behind (a few: a large page is
/// judged in two halves at once): the states a page computed serve the next page instead of
/// being computed again (a page's directory and names reach the same few dozen states page
/// after page).
#[derive(Debug)]
pub(crate) struct Automaton {
    dfa: regex_automata::hybrid::dfa::DFA,
    spare: Mutex<Vec<regex_automata::hybrid::dfa::Cache>>,
}

/// Whether some glob of a [`GlobTable`] matches paths that share their directory, asked
/// one after the other (a list page): the table's automaton is run over each directory's
/// text once, and only over each name after it. The answer is the table's own
/// [`GlobTable::is_match`], from the same regexes; whatever the automaton cannot answer
/// (it was not built, or its cache gave up) is asked of the table.
#[derive(Debug)]
pub(crate) struct Steps<'t> {
    table: &'t GlobTable,
    dfa: Option<(&'t Automaton, regex_automata::hybrid::dfa::Cache)>,
    /// The directory text (up to and including its last `/`) the automaton was last run
    /// over, the state it reached, and whether a match was seen on the way.
    dir: String,
    at: Option<(regex_automata::hybrid::LazyStateID, bool)>,
}

impl<'t> Steps<'t> {
    pub(crate) fn new(table: &'t GlobTable) -> Steps<'t> {
        Steps {
            table,
            dfa: (!table.rules.is_empty())
                .then(|| table.dfa())
                .flatten()
                .map(|a| {
                    let spare = crate::relock(&a.spare).pop();
                    (a, spare.unwrap_or_else(|| a.dfa.create_cache()))
                }),
            dir: String::new(),
            at: None,
        }
    }

    /// [`GlobTable::is_match`] of `path`.
    pub(crate) fn is_match(&mut self, path: &str) -> bool {
        self.run(path)
            .unwrap_or_else(|| self.table.is_match(&Candidate::from_bytes(path.as_bytes())))
    }

    /// The automaton's answer, `None` when it has none.
    fn run(&mut self, path: &str) -> Option<bool> {
        use regex_automata::Anchored;
        use regex_automata::hybrid::{LazyStateID, dfa::Cache};
        use regex_automata::util::start;
        let (a, cache) = self.dfa.as_mut()?;
        let dfa = &a.dfa;
        // Runs the automaton over `text` up to a dead or quit state, noting in `hit` whether
        // a match was seen on the way; `None` when the cache gave up.
        let step = |cache: &mut Cache, mut sid: LazyStateID, text: &str, hit: &mut bool| {
            for &b in text.as_bytes() {
                sid = dfa.next_state(cache, sid, b).ok()?;
                *hit |= sid.is_match();
                if sid.is_dead() || sid.is_quit() {
                    break;
                }
            }
            Some(sid)
        };
        let cut = crate::uri::last_slash(path).map_or(0, |i| i + 1);
        let (dir, name) = path.split_at(cut);
        if self.at.is_none() || self.dir != dir {
            self.at = None;
            let sid = dfa
                .start_state(cache, &start::Config::new().anchored(Anchored::Yes))
                .ok()?;
            let mut hit = false;
            let sid = step(cache, sid, dir, &mut hit)?;
            self.dir.clear();
            self.dir.push_str(dir);
            self.at = Some((sid, hit));
        }
        let (mut sid, mut hit) = self.at?;
        if sid.is_quit() {
            return None;
        }
        if !sid.is_dead() {
            sid = step(cache, sid, name, &mut hit)?;
            if sid.is_quit() {
                return None;
            }
            if !sid.is_dead() {
                sid = dfa.next_eoi_state(cache, sid).ok()?;
                hit |= sid.is_match();
            }
        }
        Some(hit)
    }
}

/// Caches an [`Automaton`] keeps for the next pages (each at most the DFA's cache capacity).
const SPARE_CACHES: usize = 2;

impl Drop for Steps<'_> {
    /// Leaves the cache to the next page of the same table.
    fn drop(&mut self) {
        if let Some((a, cache)) = self.dfa.take() {
            let mut spare = crate::relock(&a.spare);
            if spare.len() < SPARE_CACHES {
                spare.push(cache);
            }
        }
    }
}

thread_local! {
    /// Reused match-index buffer, so finding which rule matched never allocates on the
    /// hot path after a thread's first decision.
    static SCRATCH: RefCell<Vec<usize>> = const { RefCell::new(Vec::new()) };
}

/// A set of globs, each mapped back to the rule (and provenance) it came from.
#[derive(Debug, Clone)]
pub(crate) struct GlobTable {
    set: GlobSet,
    /// The globs' regexes, for [`GlobTable::dfa`].
    regexes: std::sync::Arc<[String]>,
    /// The same globs as one lazy DFA that [`Steps`] drives by hand, built the first time a
    /// page asks (`None`: it could not be built, and every question goes to `set`).
    dfa: OnceLock<Option<std::sync::Arc<Automaton>>>,
    /// Glob index in `set` -> rule index.
    rule_of: Vec<u32>,
    /// One per rule, in declaration order.
    pub(crate) rules: Vec<Provenance>,
    /// Expanded pattern text of each rule.
    pub(crate) texts: Vec<String>,
}

impl GlobTable {
    /// Builds a table from rules, each one or more globs.
    pub(crate) fn build(
        rules: impl IntoIterator<Item = (String, Vec<Glob>, Provenance)>,
    ) -> Result<Self, globset::Error> {
        let mut b = GlobSetBuilder::new();
        let mut rule_of = Vec::new();
        let mut provs = Vec::new();
        let mut texts = Vec::new();
        let mut regexes = Vec::new();
        for (i, (text, globs, prov)) in rules.into_iter().enumerate() {
            for g in globs {
                regexes.push(g.regex().to_owned());
                b.add(g);
                rule_of.push(i as u32);
            }
            provs.push(prov);
            texts.push(text);
        }
        Ok(GlobTable {
            set: b.build()?,
            regexes: regexes.into(),
            dfa: OnceLock::new(),
            rule_of,
            rules: provs,
            texts,
        })
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.rules.is_empty()
    }

    /// The automaton [`Steps`] drives, built on first use.
    fn dfa(&self) -> Option<&Automaton> {
        self.dfa
            .get_or_init(|| steps_dfa(&self.regexes).map(std::sync::Arc::new))
            .as_deref()
    }

    /// Whether any glob matches.
    #[inline]
    pub(crate) fn is_match(&self, cand: &Candidate<'_>) -> bool {
        !self.rules.is_empty() && self.set.is_match_candidate(cand)
    }

    /// The earliest-declared rule that matches, if any.
    pub(crate) fn find(&self, cand: &Candidate<'_>) -> Option<(usize, &Provenance)> {
        if self.rules.is_empty() {
            return None;
        }
        SCRATCH.with(|s| {
            let mut s = s.borrow_mut();
            self.set.matches_candidate_into(cand, &mut s);
            let rule = s.iter().map(|&g| self.rule_of[g]).min()? as usize;
            Some((rule, &self.rules[rule]))
        })
    }

    /// Like [`find`](Self::find), but answers the common "no match" case with the cheaper
    /// `is_match` first (used for deny sets, which rarely match).
    #[inline]
    pub(crate) fn find_rare(&self, cand: &Candidate<'_>) -> Option<(usize, &Provenance)> {
        self.is_match(cand).then(|| self.find(cand)).flatten()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn m(pattern: &str, path: &str) -> bool {
        let g = path_glob(pattern, Side::Allow).unwrap();
        let t = GlobTable::build(vec![(
            g.text.clone(),
            g.globs.clone(),
            Provenance::default_rule("t"),
        )])
        .unwrap();
        t.is_match(&Candidate::from_bytes(path.as_bytes()))
    }

    #[test]
    fn normalized_absolute_paths() {
        for p in ["/", "/a", "/a/b.c", "/a/...", "/.a/b..", "/a b/c"] {
            assert!(is_normalized_absolute(p), "{p}");
        }
        for p in [
            "", "a", "a/b", "//", "/a/", "/a//b", "/.", "/..", "/a/./b", "/a/../b", "/a/.",
            "/a/..", "/a\0b",
        ] {
            assert!(!is_normalized_absolute(p), "{p:?}");
        }
    }

    /// Table of (glob, path, expected). The separator rule is the point of most rows.
    #[test]
    fn matching_table() {
        let table: &[(&str, &str, bool)] = &[
            ("**/.env", "/home/u/app/.env", true),
            ("**/.env", "/.env", true),
            ("**/.env", "/home/u/app/.env.example", false),
            ("**/*.pem", "/home/u/k.pem", true),
            ("**/*.pem", "/home/u/.k.pem", true),
            ("/home/u/*.pem", "/home/u/sub/k.pem", false), // `*` never crosses `/`
            ("/home/*/k", "/home/u/v/k", false),
            ("/home/?/k", "/home/u/k", true),
            ("/home/?", "/home/u/", false),
            ("**/.ssh/**", "/home/u/.ssh/id_rsa", true),
            ("**/.ssh/**", "/home/u/.ssh", true), // the directory itself
            ("**/.ssh/**", "/home/u/.sshx/id", false),
            ("/root/**", "/root_evil/x", false), // CVE-2025-53110 shape
            ("/root/**", "/root", true),
            ("/**", "/", true),
            ("/**", "/etc/passwd", true),
            ("/", "/", true),
            ("/", "/etc", false),
            ("**", "/anything/at/all", true),
            ("/home/u/{a,b}/**", "/home/u/b/x", true),
            ("/home/u/[!.]*", "/home/u/.hidden", false),
        ];
        for (g, p, want) in table {
            assert_eq!(m(g, p), *want, "{g} vs {p}");
        }
    }

    #[test]
    fn deny_side_ignores_case_allow_side_does_not() {
        let c = Candidate::from_bytes(b"/p/.ENV");
        let t = |side| {
            let g = path_glob("**/.env", side).unwrap();
            GlobTable::build(vec![(g.text, g.globs, Provenance::default_rule("t"))]).unwrap()
        };
        assert!(t(Side::Deny).is_match(&c));
        assert!(!t(Side::Allow).is_match(&c));
    }

    #[test]
    fn rejects_globs_that_never_match() {
        for bad in [
            "", "*.pem", ".env", "/home/u/", "/home//u", "/a/./b", "/a/../b", "a/**",
        ] {
            let e = path_glob(bad, Side::Deny).unwrap_err();
            assert_eq!(e.kind, ErrorKind::BadGlob, "{bad}");
        }
        assert_eq!(
            path_glob("/a/[b", Side::Deny).unwrap_err().kind,
            ErrorKind::BadGlob
        );
        assert_eq!(
            path_glob("/a/{b", Side::Deny).unwrap_err().kind,
            ErrorKind::BadGlob
        );
    }

    #[test]
    fn expansion() {
        let h = Some("/home/u");
        assert_eq!(expand("~", h, true).unwrap(), "/home/u");
        assert_eq!(expand("~/code/**", h, true).unwrap(), "/home/u/code/**");
        assert_eq!(expand("${HOME}/x", h, true).unwrap(), "/home/u/x");
        assert_eq!(expand("~/x", Some("/home/u/"), true).unwrap(), "/home/u/x");
        assert_eq!(expand("~/x", Some("/"), true).unwrap(), "/x");
        assert_eq!(expand("~", Some("/"), true).unwrap(), "/");
        assert_eq!(expand("/a/b~", h, true).unwrap(), "/a/b~");
        // A home directory with glob metacharacters is inserted literally.
        assert_eq!(
            expand("~/x", Some("/home/a*b"), true).unwrap(),
            "/home/a[*]b/x"
        );
        assert_eq!(
            expand("~/x", Some("/home/a*b"), false).unwrap(),
            "/home/a*b/x"
        );
        assert_eq!(expand("/a/[$]b", h, true).unwrap(), "/a/[$]b");
        for bad in ["~root/x", "${USER}/x", "/a/${HOME}", "$HOME/x", "/a$b"] {
            assert_eq!(
                expand(bad, h, true).unwrap_err().kind,
                ErrorKind::BadVariable,
                "{bad}"
            );
        }
        assert_eq!(
            expand("~/x", None, true).unwrap_err().kind,
            ErrorKind::BadVariable
        );
        assert_eq!(
            expand("~/x", Some("rel"), true).unwrap_err().kind,
            ErrorKind::BadVariable
        );
        assert_eq!(
            expand("/no/home/needed", None, true).unwrap(),
            "/no/home/needed"
        );
    }

    #[test]
    fn component_wise_containment() {
        assert!(path_within("/root", "/root"));
        assert!(path_within("/root/a", "/root"));
        assert!(!path_within("/root_evil", "/root"));
        assert!(!path_within("/roo", "/root"));
        assert!(path_within("/x", "/"));
    }

    #[test]
    fn glob_containment_is_sound_on_examples() {
        let c = |earlier: &str, later: &str| {
            path_glob(earlier, Side::Allow)
                .unwrap()
                .covers(&path_glob(later, Side::Allow).unwrap())
        };
        assert!(c("/home/u/code/**", "/home/u/code/app/**"));
        assert!(c("/home/u/code/**", "/home/u/code/**"));
        assert!(c("/home/u/code/**", "/home/u/code"));
        assert!(c("/home/u/code/**", "/home/u/code/*.rs"));
        assert!(c("/home/*/code/**", "/home/u/code/app/**"));
        assert!(c("**", "**/.env"));
        assert!(c("/**", "/etc/**"));
        assert!(c("/home/u/*", "/home/u/file"));
        assert!(!c("/home/u/code/**", "/home/u/**"));
        assert!(!c("/home/u/code/**", "/home/u/code_evil/**"));
        assert!(!c("/home/u/code/**", "**/code/**"));
        assert!(!c("/home/u/code", "/home/u/code/**"));
        assert!(!c("/home/u/*.rs", "/home/u/*")); // not proven, so rejected
        assert!(!c("/home/u/code/**", "/home/u/code_evil"));
    }

    /// Globs for the property below: the default policy's deny list and shapes it lacks.
    const STEP_GLOBS: &[&str] = &[
        "**/.env",
        "**/.env.*",
        "**/*.pem",
        "**/id_rsa*",
        "**/.ssh/**",
        "**/.config/gcloud/**",
        "**/.docker/config.json",
        "**/.git/**",
        "/home/*/k",
        "/a/**",
        "**/a?b",
        "**/{x,y}/**",
        "/[ab]*/c",
        "**",
        "/",
        "/a",
        "/*",
        "**/*",
        "/a/*/b/**",
        "**/é*",
        "/x/**/y",
        "**/.[a-z]*",
    ];
    /// Names the paths are made of.
    const STEP_NAMES: &[&str] = &[
        "a",
        "b",
        "x",
        "y",
        "c",
        "k",
        ".env",
        ".ENV",
        ".env.local",
        "id_rsa",
        "ID_RSA.pub",
        "x.pem",
        ".ssh",
        ".git",
        "config.json",
        ".docker",
        ".config",
        "gcloud",
        "axb",
        "é",
        "a b",
        "home",
        "u",
    ];

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(1000))]

        /// The automaton driven by hand over a directory once and each name after it gives
        /// exactly the table's answer, whatever the order of the paths asked, and with a
        /// cache an earlier page left.
        #[test]
        fn steps_answer_exactly_what_the_table_answers(
            globs in proptest::collection::vec(proptest::sample::select(STEP_GLOBS), 1..6),
            deny in proptest::bool::ANY,
            paths in proptest::collection::vec(
                (
                    proptest::collection::vec(proptest::sample::select(STEP_NAMES), 0..4),
                    proptest::collection::vec(proptest::sample::select(STEP_NAMES), 1..4),
                ),
                1..6,
            ),
        ) {
            let side = if deny { Side::Deny } else { Side::Allow };
            let rules = globs.iter().map(|t| {
                let g = path_glob(t, side).unwrap();
                (g.text.clone(), g.globs.clone(), Provenance::default_rule("t"))
            });
            let table = GlobTable::build(rules).unwrap();
            proptest::prop_assert!(table.dfa().is_some());
            let mut steps = Some(Steps::new(&table));
            for (i, (dir, names)) in paths.iter().enumerate() {
                if i % 2 == 1 {
                    // A later page: it takes the automaton's cache the last one left.
                    drop(steps.take());
                    steps = Some(Steps::new(&table));
                }
                let steps = steps.as_mut().unwrap();
                for name in names {
                    let mut path = String::new();
                    for n in dir.iter().chain([name]) {
                        path.push('/');
                        path.push_str(n);
                    }
                    let want = table.is_match(&Candidate::from_bytes(path.as_bytes()));
                    proptest::prop_assert_eq!(steps.run(&path), Some(want), "{}", path);
                    proptest::prop_assert_eq!(steps.is_match(&path), want, "{}", path);
                }
            }
        }
    }
}
