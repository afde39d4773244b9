//! From raw layers to one immutable [`Policy`]: expansion and validation of every value,
//! the layering rules, and compilation of the matchers.
//!
//! # Layering
//!
//! Layers are applied in order onto an effective policy that starts at the built-in
//! defaults. The first layer may set anything. Every later layer may only narrow the
//! effective policy built so far (defaults included):
//!
//! - deny lists (`roots.deny`, `resources.deny`, `tools.deny`, `tools.writing`,
//!   `sandbox.read_only_roots`, `[[tools.paths]]`) accumulate: adding is always narrower;
//! - allow-lists (`roots.allow`, `resources.allow`) intersect: a path must match every
//!   layer's list. A later entry must also be provably inside an earlier list (a literal
//!   path an earlier entry matches, or a glob under an earlier `dir/**`), else it is
//!   rejected as widening, because it would not do what its author expects;
//! - ordered settings (stances, modes, limits, sets) may only move toward their narrow
//!   end (see `settings::Ranked` and docs/policy.md for each order);
//! - `roots.static` is replaced by a later layer that sets it; every static root must
//!   pass the root rules of all layers, which are the actual bound;
//! - fixed operational settings (`roots.list_timeout_ms`, `roots.launch_wait_ms`, `audit.path`,
//!   `audit.rotate_bytes`, `audit.checkpoint_*`, `sandbox.follow_roots`, every `telemetry.*`
//!   key) are not permissions: the first layer that sets one fixes it, and a later layer may
//!   only repeat the same value.

mod audit;
mod build;
mod effective;
mod layering;
mod roots;
mod sandbox;
mod subset;
mod tools;

use std::collections::BTreeSet;
use std::ops::Range;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use globset::{Candidate, Glob, GlobSet};

use super::decision::{ArgKind, Provenance, ToolPath};
use super::error::{ErrorKind, PolicyError, PolicyErrors, Source};
use super::glob::{self, GlobTable, PathGlob, Problem, Side};
use super::grant::{self, Grantable, Grants};
use super::raw::{self, Entry, RawLayer, Sp, Val};
use super::schema::{self, Kind, Narrow, SETTINGS, Spec};
use super::settings::{
    AuditSettings, Network, Ranked, ResourceSettings, Rlimits, RootsSettings, SandboxSettings,
    SchemeStance, StaticRoot, ToolInfer, Word, env_pattern_covers, fsync_rank,
};
use super::telemetry::TelemetrySettings;
use super::{AllowTable, LayerInfo, Matchers, Policy, ToolPaths};
use crate::audit::FsyncPolicy as Fsync;
use crate::audit::syslog::{SyslogConfig, Transport};

// The children apply one concern each and share this module's accumulator and context.
use audit::*;
use build::*;
use layering::*;
use roots::*;
use sandbox::*;
use subset::apply_subsets;
use tools::*;

/// Default fsync interval when `fsync = "interval"` gives none.
const DEFAULT_FSYNC_INTERVAL_MS: u64 = 1_000;

/// One layer's source, as read.
pub(crate) struct LayerInput {
    pub(crate) name: Arc<str>,
    pub(crate) path: Option<PathBuf>,
    pub(crate) text: String,
    pub(crate) sha256: String,
    /// A built-in policy (`builtin:<name>`): its fixed settings are defaults, not an
    /// operator's decision, so a later layer may change them.
    pub(crate) builtin: bool,
    /// Stacked under the given layers because the first of them did not opt out.
    pub(crate) base: bool,
}

impl LayerInput {
    /// An operator's layer: its text, and the file it was read from if any.
    pub(crate) fn new(name: Arc<str>, path: Option<PathBuf>, text: String) -> LayerInput {
        LayerInput {
            name,
            path,
            sha256: super::sha256_hex(text.as_bytes()),
            text,
            builtin: false,
            base: false,
        }
    }

    /// A built-in policy as a layer.
    pub(crate) fn builtin(name: &str, text: &str, base: bool) -> LayerInput {
        let name = format!("builtin:{name}").into();
        LayerInput {
            builtin: true,
            base,
            ..LayerInput::new(name, None, text.to_owned())
        }
    }
}

/// An effective setting and where it came from (`layer: None` is the built-in default).
#[derive(Debug, Clone)]
struct Setting<T> {
    v: T,
    prov: Provenance,
}

impl<T> Setting<T> {
    /// A setting at its declared default (`schema::SETTINGS`), which its provenance names.
    fn declared(v: T, key: &str) -> Self {
        Setting {
            v,
            prov: declared(key),
        }
    }

    fn is_set(&self) -> bool {
        self.prov.layer.is_some()
    }
}

/// The provenance of a setting at its declared default (`schema::SETTINGS`).
fn declared(key: &str) -> Provenance {
    let default = SETTINGS[schema::index(key)].default;
    Provenance::default_rule(format!("{key} = {}", default.replace('`', "")))
}

/// A glob with its text as written.
type NamedGlob = (String, Glob);

/// One layer's allow-list for roots or resources.
struct AllowList {
    key_prov: Provenance,
    globs: Vec<(PathGlob, Provenance)>,
}

/// A declared setting's state while layers are applied.
enum Slot {
    /// A plain scalar (`None`: unset, as its declared default describes).
    Val(Setting<Option<Val>>),
    /// A deny list of path globs: every layer's rules.
    Globs(Vec<(PathGlob, Provenance)>),
    /// A list of tool name globs: every layer's rules.
    Names(Vec<(String, Glob, Provenance)>),
    /// An allow-list: each layer's list.
    Allow(Vec<AllowList>),
    /// A list a later layer may only narrow to a subset of, its entries as checked
    /// (`None`: every entry, as `"allow"` or an unset list of any says).
    Subset(Setting<Option<Vec<String>>>),
    /// A rule of its own: a field of [`Acc`].
    Own,
}

impl Slot {
    /// The slot of a declared setting: a plain one (see `schema::Kind`) is applied by the
    /// rule of its kind (`layering::apply_plain`); any other by hand.
    fn of(spec: &Spec) -> Slot {
        match (spec.narrow, spec.kind) {
            (Narrow::Accumulate, Kind::PathGlobs) => Slot::Globs(Vec::new()),
            (Narrow::Accumulate, Kind::NameGlobs) => Slot::Names(Vec::new()),
            (Narrow::Intersect, Kind::PathGlobs) => Slot::Allow(Vec::new()),
            (Narrow::Subset, Kind::Schemes | Kind::Mimes | Kind::EnvNames | Kind::PathGlobs) => {
                let empty = (spec.default == "`[]`").then(Vec::new);
                Slot::Subset(Setting::declared(empty, spec.key))
            }
            (
                Narrow::Ranked | Narrow::Limit | Narrow::Fixed,
                Kind::Bool | Kind::Int(..) | Kind::Size | Kind::Word(_) | Kind::Str | Kind::Path,
            ) => Slot::Val(Setting::declared(default_value(spec), spec.key)),
            _ => Slot::Own,
        }
    }
}

/// The accessors of declared settings by the kind of their slot.
///
/// # Panics
///
/// When `key`'s slot is of another kind (a mistake in the code that any compile finds).
macro_rules! slot_accessors {
    ($($(#[$doc:meta])* $name:ident: $variant:ident -> $ty:ty, $what:literal;)+) => {$(
        $(#[$doc])*
        fn $name(&self, key: &str) -> &$ty {
            match &self.slots[schema::index(key)] {
                Slot::$variant(s) => s,
                _ => panic!("`{key}` is not {}", $what),
            }
        }
    )+};
}

/// The effective policy while layers are applied.
struct Acc {
    /// Every declared setting, in `SETTINGS` order.
    slots: Vec<Slot>,
    /// Static roots with the span of each entry in its layer.
    roots_static: Setting<Vec<(StaticRoot, Range<usize>)>>,
    /// `[[tools.paths]]`: tool glob text and glob, server glob, the checked arguments.
    tool_paths: Vec<(String, Glob, Option<NamedGlob>, Vec<ToolPath>)>,
    infer: Setting<ToolInfer>,
    /// `[[tools.infer_for]]`: tool glob text and glob, its stance.
    infer_for: Vec<(String, Glob, ToolInfer, Provenance)>,
    fsync: Setting<Fsync>,
    /// `[audit.syslog]`: its address as written, and the configuration.
    syslog: Setting<Option<(String, SyslogConfig)>>,
    /// Grants accumulate: each entry with where it was granted.
    grants: Grants,
    network: Setting<Network>,
    /// `None` until a layer sets it: the built-in list applies.
    read_only_paths: Option<Vec<(PathGlob, Provenance)>>,
}

impl Acc {
    fn defaults() -> Self {
        Acc {
            slots: SETTINGS.iter().map(Slot::of).collect(),
            roots_static: Setting::declared(Vec::new(), "roots.static"),
            tool_paths: Vec::new(),
            infer: Setting::declared(ToolInfer::Schema, "tools.infer"),
            infer_for: Vec::new(),
            fsync: Setting::declared(Fsync::Denials, "audit.fsync"),
            syslog: Setting {
                v: None,
                prov: Provenance::default_rule("audit.syslog: none"),
            },
            grants: Grants::default(),
            network: Setting::declared(Network::Allow, "sandbox.network"),
            read_only_paths: None,
        }
    }

    slot_accessors! {
        /// A plain scalar setting.
        val: Val -> Setting<Option<Val>>, "a plain scalar setting";
        /// A deny list's rules.
        globs: Globs -> [(PathGlob, Provenance)], "a list of path globs";
        names: Names -> [(String, Glob, Provenance)], "a list of name globs";
        allow: Allow -> [AllowList], "an allow-list";
        subset: Subset -> Setting<Option<Vec<String>>>, "a list narrowed to a subset";
    }

    /// A word setting (every one has a default), as its type.
    fn word<T: Word + Copy>(&self, key: &str) -> T {
        let found = self.val(key).v.as_ref().and_then(Val::word);
        found.unwrap_or_else(|| panic!("`{key}` has no word"))
    }

    fn int(&self, key: &str) -> Option<u64> {
        self.val(key).v.as_ref().and_then(Val::int)
    }

    fn flag(&self, key: &str) -> bool {
        self.val(key).v == Some(Val::Bool(true))
    }

    fn text(&self, key: &str) -> Option<String> {
        self.val(key)
            .v
            .as_ref()
            .and_then(Val::text)
            .map(str::to_owned)
    }

    /// `[sandbox.grantable]` as the layers so far left it.
    fn grantable(&self) -> Grantable {
        let list = |key| {
            let s = self.subset(key);
            (s.v.clone().unwrap_or_default(), s.prov.clone())
        };
        let globs = |key| {
            let (l, prov): (Vec<String>, _) = list(key);
            let g = l
                .iter()
                .filter_map(|t| glob::path_glob(t, Side::Allow).ok());
            (g.collect(), prov)
        };
        Grantable {
            env: list("sandbox.grantable.env"),
            read: globs("sandbox.grantable.read"),
            write: globs("sandbox.grantable.write"),
        }
    }
}

/// Per-layer context: where errors and provenance point.
struct Cx<'a, 's> {
    layer: usize,
    src: &'a Source<'s>,
    /// Whether widening checks run: not for the first layer, and not after an earlier
    /// layer failed to parse (its missing rules would make the checks meaningless).
    check: bool,
    home: Option<&'a str>,
    errs: &'a mut Vec<PolicyError>,
    /// Per layer: whether it is a built-in policy.
    builtin: &'a [bool],
    /// The names of every layer of the stack (to accept a later `base` naming one).
    names: &'a [Arc<str>],
}

impl Cx<'_, '_> {
    /// Whether a setting's provenance is a built-in policy's (or the defaults').
    fn set_by_builtin(&self, p: &Provenance) -> bool {
        p.layer
            .is_none_or(|l| self.builtin.get(l).copied().unwrap_or(false))
    }

    fn at(&self, span: &Range<usize>, rule: String) -> Provenance {
        let (line, column) = self.src.line_col(span.start);
        Provenance {
            layer: Some(self.layer),
            file: Some(self.src.name.clone()),
            line: Some(line),
            column: Some(column),
            rule,
        }
    }

    /// Provenance of a whole key: its position, `key = value` as written.
    fn prov<T>(&self, e: &Entry<T>) -> Provenance {
        self.at(
            &e.key_span,
            format!("{} = {}", e.key, self.src.snippet(&e.span)),
        )
    }

    /// Provenance of one list element: its position, `key = element`.
    fn prov_item(&self, key: &str, span: &Range<usize>) -> Provenance {
        self.at(span, format!("{key} = {}", self.src.snippet(span)))
    }

    fn problem(&mut self, span: &Range<usize>, p: Problem) {
        self.error(span, p.kind, p.message, &p.hint);
    }

    fn error(&mut self, span: &Range<usize>, kind: ErrorKind, msg: String, hint: &str) {
        let err = self.src.error(span, kind, msg).hint(hint);
        self.errs.push(err);
    }

    /// A widening error at `span`, naming the earlier rule.
    fn widening(&mut self, span: &Range<usize>, what: String, earlier: &Provenance, hint: &str) {
        let hint = if earlier.is_default() {
            format!(
                "{hint}; the earlier layers leave this at its built-in default, so to let \
                 later layers choose, set the widest value you accept in the first layer"
            )
        } else {
            format!("{hint}; change the earlier layer, or remove this setting")
        };
        let err = self
            .src
            .error(span, ErrorKind::Widening, what)
            .related("earlier", earlier)
            .hint(hint);
        self.errs.push(err);
    }
}

/// The built-in policy a stack is based on: none when its first layer is a built-in itself
/// or says `base = "none"`; `builtin:default` when the first layer says nothing and
/// `implicit` (files given on the command line); the named built-in for `base =
/// "builtin:<name>"`. A bad value is reported when the layer is applied.
fn base_of(inputs: &[LayerInput], implicit: bool) -> Option<(&'static str, &'static str)> {
    let first = inputs.first()?;
    if first.builtin {
        return None;
    }
    let src = Source::new(first.name.clone(), &first.text);
    // Parsed quietly here: its errors are reported when the layer is applied.
    let raw = raw::parse_layer(&src, &mut Vec::new());
    match raw.as_ref().and_then(|r| r.read("base", Val::text)) {
        None if implicit => super::builtin("default"),
        None => None,
        Some(e) => e.v.strip_prefix("builtin:").and_then(super::builtin),
    }
}

/// Compiles layers into a policy, or returns every error found. With `implicit_base`,
/// a first layer that does not say `base = "none"` is stacked on `builtin:default`.
pub(crate) fn compile(
    mut inputs: Vec<LayerInput>,
    home: Option<&str>,
    implicit_base: bool,
) -> Result<Policy, PolicyErrors> {
    if let Some((name, text)) = base_of(&inputs, implicit_base) {
        inputs.insert(0, LayerInput::builtin(name, text, true));
    }
    // A built-in's `~` rules must expand even where HOME is unusable: to a home that does
    // not exist rather than to an error the user did not write.
    let fallback_home = home.or(Some("/nonexistent"));
    let builtin: Vec<bool> = inputs.iter().map(|l| l.builtin).collect();
    let names: Vec<Arc<str>> = inputs.iter().map(|l| l.name.clone()).collect();
    let first_user = inputs.iter().position(|l| !l.base).unwrap_or(0);
    let mut errs = Vec::new();
    let mut acc = Acc::defaults();
    let mut all_parsed = true;
    let mut opted_out = None;
    let sources: Vec<Source<'_>> = inputs
        .iter()
        .map(|l| Source::new(l.name.clone(), &l.text))
        .collect();
    for (i, src) in sources.iter().enumerate() {
        let Some(raw) = raw::parse_layer(src, &mut errs) else {
            all_parsed = false;
            continue;
        };
        let mut cx = Cx {
            layer: i,
            src,
            check: i > 0 && all_parsed,
            home: if builtin[i] { fallback_home } else { home },
            errs: &mut errs,
            builtin: &builtin,
            names: &names,
        };
        // A built-in's own `base` (what a copy of it says) changes nothing.
        if !builtin[i] {
            opted_out = check_base(&mut cx, &raw, i == first_user).or(opted_out);
        }
        apply_layer(&mut acc, &raw, &mut cx);
    }
    if inputs.is_empty() {
        errs.push(PolicyError::unlocated(
            &Arc::from("policy"),
            ErrorKind::Io,
            "no policy layers given".into(),
        ));
    }
    if !errs.is_empty() {
        return Err(sorted(errs, &inputs));
    }
    let layers: Vec<LayerInfo> = inputs
        .iter()
        .map(|l| LayerInfo {
            name: l.name.to_string(),
            path: l.path.clone(),
            sha256: l.sha256.clone(),
            base: l.base,
        })
        .collect();
    let last_name: Arc<str> = inputs
        .last()
        .map_or_else(|| "policy".into(), |l| l.name.clone());
    let home = home.map(str::to_owned);
    build(acc, layers, &sources, opted_out, home).map_err(|mut e| {
        for err in &mut e {
            if err.file.is_empty() {
                err.file = last_name.clone();
            }
        }
        sorted(e, &inputs)
    })
}

/// Orders errors by layer, then position, so the output reads top to bottom.
fn sorted(mut errs: Vec<PolicyError>, inputs: &[LayerInput]) -> PolicyErrors {
    let order = |f: &Arc<str>| {
        inputs
            .iter()
            .position(|l| &l.name == f)
            .unwrap_or(usize::MAX)
    };
    errs.sort_by(|a, b| {
        (order(&a.file), a.line, a.column).cmp(&(order(&b.file), b.line, b.column))
    });
    PolicyErrors(errs)
}

/// Checks a layer's `base`. In the first layer given, `"none"` opts out of the built-in
/// default (its provenance is returned, for `policy show` and the warnings) and
/// `"builtin:<name>"` names the base (already stacked by [`base_of`]); a later layer may
/// only name a built-in the stack already holds.
fn check_base(cx: &mut Cx<'_, '_>, raw: &RawLayer, first: bool) -> Option<Provenance> {
    let e = raw.read("base", Val::text)?;
    let v = e.v;
    let not_first = "only the first policy layer chooses what the stack is based on; remove \
                     `base` here (a later layer always stacks on the layers before it)";
    if v == "none" {
        if first {
            return Some(cx.prov(&e));
        }
        let msg = "`base = \"none\"` in a layer that is not the first".to_string();
        cx.error(&e.span, ErrorKind::Conflict, msg, not_first);
        return None;
    }
    if v.strip_prefix("builtin:")
        .and_then(super::builtin)
        .is_none()
    {
        cx.error(
            &e.span,
            ErrorKind::BadValue,
            format!("`base` has no value \"{v}\""),
            "use \"builtin:default\" (what a file without `base` stacks on), \
             \"builtin:strict\", or \"none\" (replace the built-in default entirely; \
             `rootfence policy check` then lists the protections that drops)",
        );
        return None;
    }
    if !first && !cx.names.iter().any(|n| &**n == v) {
        let msg = format!("`base = \"{v}\"` in a layer that is not the first");
        cx.error(&e.span, ErrorKind::Conflict, msg, not_first);
    }
    None
}

fn apply_layer(acc: &mut Acc, raw: &RawLayer, cx: &mut Cx<'_, '_>) {
    apply_plain(acc, raw, cx);
    apply_static_roots(acc, raw, cx);
    apply_tools(acc, raw, cx);
    apply_audit(acc, raw, cx);
    apply_sandbox(acc, raw, cx);
    // Last: a layer's own `[sandbox.grantable]` binds only the layers after it.
    apply_subsets(acc, raw, cx);
}

/// Whether `path` is a canonical absolute path (used by the decision functions).
#[inline]
pub(crate) fn candidate(path: &str) -> Option<Candidate<'_>> {
    glob::is_normalized_absolute(path).then(|| Candidate::from_bytes(path.as_bytes()))
}
