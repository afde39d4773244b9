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

use std::collections::BTreeSet;
use std::ops::Range;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use globset::{Candidate, Glob, GlobSetBuilder};

use super::decision::{ArgKind, Provenance, ToolPath};
use super::error::{ErrorKind, PolicyError, PolicyErrors, Related, Source};
use super::glob::{self, GlobTable, PathGlob, Problem, Side};
use super::grant::{self, Grantable, Grants};
use super::raw::{self, Entry, FsyncWord, RawLayer, RawNetwork, RawSchemes, Sp};
use super::settings::{
    Access, AuditSettings, CommandRoots, FollowRoots, HardlinkStance, Mode, Network, Ranked,
    ReadStance, ResourceSettings, Rlimits, RootsFallback, RootsSettings, SandboxMode,
    SandboxSettings, SchemeStance, StaticRoot, SymlinkStance, ToolInfer, Word, env_pattern_covers,
    fsync_rank,
};
use super::telemetry::TelemetrySettings;
use super::{AllowTable, LayerInfo, Matchers, Policy, ToolPaths};
use crate::audit::syslog::{SyslogConfig, Transport};
use crate::audit::{AllowedRecords, FsyncPolicy as Fsync, OnFailure};

/// Default wait for the host's `roots/list` answer.
const DEFAULT_LIST_TIMEOUT_MS: u64 = 3_000;
/// Default wait for the host's early roots answer before the server starts anyway (some
/// hosts answer only once their `initialize` is answered).
const DEFAULT_LAUNCH_WAIT_MS: u64 = 1_000;
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
    /// A built-in policy as a layer.
    pub(crate) fn builtin(name: &str, text: &str, base: bool) -> LayerInput {
        LayerInput {
            name: format!("builtin:{name}").into(),
            path: None,
            sha256: super::sha256_hex(text.as_bytes()),
            text: text.to_owned(),
            builtin: true,
            base,
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
    fn default(v: T, rule: impl Into<String>) -> Self {
        Setting {
            v,
            prov: Provenance::default_rule(rule),
        }
    }

    fn is_set(&self) -> bool {
        self.prov.layer.is_some()
    }
}

/// A glob with its text as written.
type NamedGlob = (String, Glob);

/// One layer's allow-list for roots or resources.
struct AllowList {
    key_prov: Provenance,
    globs: Vec<(PathGlob, Provenance)>,
}

/// The effective policy while layers are applied.
struct Acc {
    mode: Setting<Mode>,

    roots_allow: Vec<AllowList>,
    roots_deny: Vec<(PathGlob, Provenance)>,
    roots_other_homes: Vec<(PathGlob, Provenance)>,
    /// Static roots with the span of each entry in its layer.
    roots_static: Setting<Vec<(StaticRoot, Range<usize>)>>,
    list_timeout_ms: Setting<u64>,
    launch_wait_ms: Setting<u64>,
    on_timeout: Setting<RootsFallback>,
    symlinks: Setting<SymlinkStance>,
    hardlinks: Setting<HardlinkStance>,
    from_command: Setting<CommandRoots>,

    schemes: Setting<Option<Vec<String>>>,
    res_allow: Vec<AllowList>,
    res_deny: Vec<(PathGlob, Provenance)>,
    max_bytes: Setting<Option<u64>>,
    mime: Setting<Option<Vec<String>>>,
    read: Setting<ReadStance>,

    tools_deny: Vec<(String, Glob, Provenance)>,
    tools_writing: Vec<(String, Glob, Provenance)>,
    read_only: Setting<bool>,
    /// `[[tools.paths]]`: tool glob text and glob, server glob, the checked arguments.
    tool_paths: Vec<(String, Glob, Option<NamedGlob>, Vec<ToolPath>)>,
    infer: Setting<ToolInfer>,
    /// `[[tools.infer_for]]`: tool glob text and glob, its stance.
    infer_for: Vec<(String, Glob, ToolInfer, Provenance)>,

    audit_path: Setting<Option<String>>,
    fsync: Setting<Fsync>,
    rotate_bytes: Setting<Option<u64>>,
    on_failure: Setting<OnFailure>,
    log_allowed: Setting<bool>,
    allowed: Setting<AllowedRecords>,
    retain_files: Setting<Option<u64>>,
    retain_bytes: Setting<Option<u64>>,
    checkpoint_key: Setting<Option<String>>,
    checkpoint_path: Setting<Option<String>>,
    checkpoint_every_records: Setting<Option<u64>>,
    checkpoint_every_ms: Setting<Option<u64>>,
    syslog: Setting<Option<SyslogConfig>>,

    sb_mode: Setting<SandboxMode>,
    /// Grants accumulate: each entry with where it was granted.
    sb_read: Vec<(String, Provenance)>,
    sb_write: Vec<(String, Provenance)>,
    network: Setting<Network>,
    env: Vec<(String, Provenance)>,
    /// What a later layer may add to the grants above.
    grant_env: Setting<Vec<String>>,
    grant_read: Setting<Vec<PathGlob>>,
    grant_write: Setting<Vec<PathGlob>>,
    root_access: Setting<Access>,
    follow_roots: Setting<FollowRoots>,
    read_only_roots: Vec<(PathGlob, Provenance)>,
    /// `None` until a layer sets it: the built-in list applies.
    read_only_paths: Option<Vec<(PathGlob, Provenance)>>,
    rl_nofile: Setting<Option<u64>>,
    rl_as: Setting<Option<u64>>,
    rl_cpu: Setting<Option<u64>>,
    rl_nproc: Setting<Option<u64>>,

    tel_endpoint: Setting<Option<String>>,
    tel_protocol: Setting<Option<String>>,
    tel_service_name: Setting<Option<String>>,
    tel_resource_attributes: Setting<Option<String>>,
}

impl Acc {
    fn defaults() -> Self {
        Acc {
            mode: Setting::default(Mode::Enforce, "mode = \"enforce\""),
            roots_allow: Vec::new(),
            roots_deny: Vec::new(),
            roots_other_homes: Vec::new(),
            roots_static: Setting::default(Vec::new(), "roots.static = []"),
            list_timeout_ms: Setting::default(
                DEFAULT_LIST_TIMEOUT_MS,
                format!("roots.list_timeout_ms = {DEFAULT_LIST_TIMEOUT_MS}"),
            ),
            launch_wait_ms: Setting::default(
                DEFAULT_LAUNCH_WAIT_MS,
                format!("roots.launch_wait_ms = {DEFAULT_LAUNCH_WAIT_MS}"),
            ),
            on_timeout: Setting::default(RootsFallback::Static, "roots.on_timeout = \"static\""),
            symlinks: Setting::default(
                SymlinkStance::FollowWithinRoot,
                "roots.symlinks = \"follow-within-root\"",
            ),
            from_command: Setting::default(
                CommandRoots::Directories,
                "roots.from_command = \"directories\"",
            ),
            hardlinks: Setting::default(
                HardlinkStance::AllowPreexisting,
                "roots.hardlinks = \"allow-preexisting\"",
            ),
            schemes: Setting::default(None, "resources.other_schemes = \"allow\""),
            res_allow: Vec::new(),
            res_deny: Vec::new(),
            max_bytes: Setting::default(None, "resources.max_bytes unlimited"),
            mime: Setting::default(None, "resources.mime: any type"),
            read: Setting::default(ReadStance::Forward, "resources.read = \"forward\""),
            tools_deny: Vec::new(),
            tools_writing: Vec::new(),
            read_only: Setting::default(false, "tools.read_only = false"),
            tool_paths: Vec::new(),
            infer: Setting::default(ToolInfer::Schema, "tools.infer = \"schema\""),
            infer_for: Vec::new(),
            audit_path: Setting::default(None, "audit.path: the audit module's default"),
            fsync: Setting::default(Fsync::Denials, "audit.fsync = \"denials\""),
            rotate_bytes: Setting::default(None, "audit.rotate_bytes: the audit module's default"),
            on_failure: Setting::default(OnFailure::Stop, "audit.on_failure = \"stop\""),
            log_allowed: Setting::default(true, "audit.log_allowed = true"),
            allowed: Setting::default(AllowedRecords::Summary, "audit.allowed = \"summary\""),
            retain_files: Setting::default(None, "audit.retain_files: the audit module's default"),
            retain_bytes: Setting::default(None, "audit.retain_bytes unlimited"),
            checkpoint_key: Setting::default(None, "audit.checkpoint_key: no checkpoints"),
            checkpoint_path: Setting::default(None, "audit.checkpoint_path: beside the log"),
            checkpoint_every_records: Setting::default(
                None,
                "audit.checkpoint_every_records: the audit module's default",
            ),
            checkpoint_every_ms: Setting::default(
                None,
                "audit.checkpoint_every_ms: the audit module's default",
            ),
            syslog: Setting::default(None, "audit.syslog: none"),
            sb_mode: Setting::default(SandboxMode::BestEffort, "sandbox.mode = \"best-effort\""),
            sb_read: Vec::new(),
            sb_write: Vec::new(),
            network: Setting::default(Network::Allow, "sandbox.network = \"allow\""),
            env: Vec::new(),
            grant_env: Setting::default(Vec::new(), "sandbox.grantable.env = []"),
            grant_read: Setting::default(Vec::new(), "sandbox.grantable.read = []"),
            grant_write: Setting::default(Vec::new(), "sandbox.grantable.write = []"),
            root_access: Setting::default(
                Access::ReadWrite,
                "sandbox.root_access = \"read-write\"",
            ),
            follow_roots: Setting::default(
                FollowRoots::Restart,
                "sandbox.follow_roots = \"restart\"",
            ),
            read_only_roots: Vec::new(),
            read_only_paths: None,
            rl_nofile: Setting::default(None, "sandbox.rlimits.nofile: inherited"),
            rl_as: Setting::default(None, "sandbox.rlimits.address_space: inherited"),
            rl_cpu: Setting::default(None, "sandbox.rlimits.cpu_seconds: inherited"),
            rl_nproc: Setting::default(None, "sandbox.rlimits.processes: inherited"),
            tel_endpoint: Setting::default(None, "telemetry.endpoint: OTEL_EXPORTER_OTLP_ENDPOINT"),
            tel_protocol: Setting::default(None, "telemetry.protocol: http/protobuf"),
            tel_service_name: Setting::default(None, "telemetry.service_name: OTEL_SERVICE_NAME"),
            tel_resource_attributes: Setting::default(
                None,
                "telemetry.resource_attributes: OTEL_RESOURCE_ATTRIBUTES",
            ),
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
        let err = self.src.error(span, p.kind, p.message).hint(p.hint);
        self.errs.push(err);
    }

    fn error(&mut self, span: &Range<usize>, kind: ErrorKind, msg: String, hint: &str) {
        let err = self.src.error(span, kind, msg).hint(hint);
        self.errs.push(err);
    }

    /// A widening error at `span`, naming the earlier rule.
    fn widening(&mut self, span: &Range<usize>, what: String, earlier: &Provenance, hint: String) {
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
            .related(related(earlier))
            .hint(hint);
        self.errs.push(err);
    }
}

fn related(p: &Provenance) -> Related {
    Related {
        label: "earlier",
        file: p
            .file
            .clone()
            .unwrap_or_else(|| Arc::from("built-in default")),
        line: p.line,
        column: p.column,
        rule: p.rule.clone(),
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
    match raw.as_ref().and_then(|r| r.base.as_ref()) {
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
        let raw = raw::parse_layer(src, &mut errs);
        let Some(raw) = raw else {
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
        let checked = if builtin[i] {
            None
        } else {
            check_base(&mut cx, &raw, i == first_user)
        };
        if let Some(p) = checked {
            opted_out = Some(p);
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

/// An order description for hints, narrowest first.
fn order_of<T: Ranked + Word + Copy>(words: &[(&str, T)]) -> String {
    let mut v: Vec<_> = words.iter().map(|(w, t)| (t.rank(), *w)).collect();
    v.sort();
    let list: Vec<String> = v.iter().map(|(_, w)| format!("\"{w}\"")).collect();
    format!(
        "a later layer may only narrow: the order is {} (narrowest first)",
        list.join(" < ")
    )
}

/// Applies an ordered (ranked) setting.
fn ranked<T: Ranked + Word + Copy>(
    cx: &mut Cx<'_, '_>,
    set: &mut Setting<T>,
    e: &Option<Entry<T>>,
    words: &[(&str, T)],
) {
    let Some(e) = e else { return };
    if cx.check && e.v.rank() > set.v.rank() {
        let what = format!(
            "`{} = \"{}\"` is wider than the earlier `\"{}\"`",
            e.key,
            e.v.word(),
            set.v.word()
        );
        cx.widening(&e.span, what, &set.prov.clone(), order_of(words));
        return;
    }
    *set = Setting {
        v: e.v,
        prov: cx.prov(e),
    };
}

/// Applies a boolean whose `true` is narrower.
fn ranked_bool(cx: &mut Cx<'_, '_>, set: &mut Setting<bool>, e: &Option<Entry<bool>>) {
    let Some(e) = e else { return };
    if cx.check && e.v.rank() > set.v.rank() {
        let what = format!(
            "`{} = {}` is wider than the earlier `{}`",
            e.key, e.v, set.v
        );
        let hint = format!(
            "a later layer may only narrow: `{} = true` is the narrow value",
            e.key
        );
        cx.widening(&e.span, what, &set.prov.clone(), hint);
        return;
    }
    *set = Setting {
        v: e.v,
        prov: cx.prov(e),
    };
}

/// Applies a limit where a smaller number is narrower (`None` is unlimited).
fn limit(cx: &mut Cx<'_, '_>, set: &mut Setting<Option<u64>>, e: &Option<Entry<u64>>) {
    let Some(e) = e else { return };
    if cx.check {
        if let Some(old) = set.v {
            if e.v > old {
                let what = format!(
                    "`{} = {}` is larger than the earlier limit",
                    e.key,
                    cx.src.snippet(&e.span)
                );
                let hint = "a later layer may only lower a limit".to_string();
                cx.widening(&e.span, what, &set.prov.clone(), hint);
                return;
            }
        }
    }
    *set = Setting {
        v: Some(e.v),
        prov: cx.prov(e),
    };
}

/// Applies a fixed operational setting: a later layer may only repeat it.
fn fixed<T: PartialEq + Clone + std::fmt::Debug>(
    cx: &mut Cx<'_, '_>,
    set: &mut Setting<T>,
    span: &Range<usize>,
    new: T,
    prov: Provenance,
) {
    if cx.check && set.is_set() && !cx.set_by_builtin(&set.prov) && set.v != new {
        let err = cx
            .src
            .error(
                span,
                ErrorKind::Conflict,
                format!(
                    "`{}` conflicts with the value set by an earlier layer",
                    prov.rule
                ),
            )
            .related(related(&set.prov))
            .hint(
                "this setting is fixed by the first layer that sets it; remove it here or \
                 repeat the same value",
            );
        cx.errs.push(err);
        return;
    }
    *set = Setting { v: new, prov };
}

/// Expands and compiles a list of path globs; `None` if any entry is bad.
fn path_globs(
    cx: &mut Cx<'_, '_>,
    e: &Entry<Vec<Sp<String>>>,
    side: Side,
) -> Option<Vec<(PathGlob, Provenance)>> {
    let mut out = Vec::with_capacity(e.v.len());
    let mut ok = true;
    for item in &e.v {
        match glob::expand(&item.v, cx.home, true).and_then(|t| glob::path_glob(&t, side)) {
            Ok(g) => out.push((g, cx.prov_item(e.key, &item.span))),
            Err(p) => {
                ok = false;
                cx.problem(&item.span, p);
            }
        }
    }
    ok.then_some(out)
}

/// `sandbox.read_only_paths` when no layer sets it.
fn default_read_only_paths() -> Vec<(PathGlob, Provenance)> {
    crate::sandbox::scan::DEFAULT_READ_ONLY_PATHS
        .iter()
        .filter_map(|t| {
            let g = glob::path_glob(t, Side::Deny).ok()?;
            Some((
                g,
                Provenance::default_rule("sandbox.read_only_paths: built-in list"),
            ))
        })
        .collect()
}

/// Compiles a list of name globs; `None` if any entry is bad.
fn name_globs(
    cx: &mut Cx<'_, '_>,
    e: &Entry<Vec<Sp<String>>>,
) -> Option<Vec<(String, Glob, Provenance)>> {
    let mut out = Vec::with_capacity(e.v.len());
    let mut ok = true;
    for item in &e.v {
        match glob::name_glob(&item.v, Side::Deny) {
            Ok(g) => out.push((item.v.clone(), g, cx.prov_item(e.key, &item.span))),
            Err(p) => {
                ok = false;
                cx.problem(&item.span, p);
            }
        }
    }
    ok.then_some(out)
}

/// Expands and checks a list of plain paths; `None` if any entry is bad.
fn paths(cx: &mut Cx<'_, '_>, e: &Entry<Vec<Sp<String>>>) -> Option<Vec<(String, Range<usize>)>> {
    let mut out = Vec::with_capacity(e.v.len());
    let mut ok = true;
    for item in &e.v {
        match glob::expand(&item.v, cx.home, false).and_then(|p| glob::check_path(&p).map(|()| p)) {
            Ok(p) => out.push((p, item.span.clone())),
            Err(p) => {
                ok = false;
                cx.problem(&item.span, p);
            }
        }
    }
    ok.then_some(out)
}

/// Applies one layer's allow-list (roots or resources).
fn allow_list(cx: &mut Cx<'_, '_>, lists: &mut Vec<AllowList>, e: &Option<Entry<Vec<Sp<String>>>>) {
    let Some(e) = e else { return };
    let Some(globs) = path_globs(cx, e, Side::Allow) else {
        return;
    };
    if cx.check {
        for ((g, _), item) in globs.iter().zip(&e.v) {
            for earlier in lists.iter() {
                if !earlier.globs.iter().any(|(eg, _)| eg.covers(g)) {
                    let what = format!(
                        "`{}` entry \"{}\" is not inside the earlier `{}` list",
                        e.key, item.v, e.key
                    );
                    let hint = "allow-lists of all layers must all match, so a wider entry \
                                here would not do what it says: each entry must be a literal \
                                path an earlier entry matches, or a glob under an earlier \
                                `dir/**` entry (rootfence does not try to prove other glob \
                                inclusions)"
                        .to_string();
                    cx.widening(&item.span, what, &earlier.key_prov.clone(), hint);
                    break;
                }
            }
        }
    }
    lists.push(AllowList {
        key_prov: cx.at(
            &e.key_span,
            format!("{} = {}", e.key, cx.src.snippet(&e.span)),
        ),
        globs,
    });
}

/// Checks a layer's `base`. In the first layer given, `"none"` opts out of the built-in
/// default (its provenance is returned, for `policy show` and the warnings) and
/// `"builtin:<name>"` names the base (already stacked by [`base_of`]); a later layer may
/// only name a built-in the stack already holds.
fn check_base(cx: &mut Cx<'_, '_>, raw: &RawLayer, first: bool) -> Option<Provenance> {
    let e = raw.base.as_ref()?;
    let v = e.v.as_str();
    let not_first = "only the first policy layer chooses what the stack is based on; remove \
                     `base` here (a later layer always stacks on the layers before it)";
    if v == "none" {
        if first {
            return Some(cx.prov(e));
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
    ranked(cx, &mut acc.mode, &raw.mode, Mode::WORDS);
    apply_roots(acc, raw, cx);
    apply_resources(acc, raw, cx);
    apply_tools(acc, raw, cx);
    apply_audit(acc, raw, cx);
    apply_sandbox(acc, raw, cx);
    apply_telemetry(acc, raw, cx);
}

fn apply_telemetry(acc: &mut Acc, raw: &RawLayer, cx: &mut Cx<'_, '_>) {
    if let Some(e) = &raw.tel_endpoint {
        match super::telemetry::check_endpoint(&e.v) {
            Ok(()) => {
                let prov = cx.prov(e);
                fixed(cx, &mut acc.tel_endpoint, &e.span, Some(e.v.clone()), prov);
            }
            Err(why) => cx.error(
                &e.span,
                ErrorKind::BadValue,
                format!("`telemetry.endpoint = \"{}\"`: {why}", e.v),
                "e.g. endpoint = \"http://localhost:4318\"",
            ),
        }
    }
    if let Some(e) = &raw.tel_protocol {
        let prov = cx.prov(e);
        fixed(
            cx,
            &mut acc.tel_protocol,
            &e.span,
            Some(e.v.to_owned()),
            prov,
        );
    }
    if let Some(e) = &raw.tel_service_name {
        if e.v.trim().is_empty() {
            cx.error(
                &e.span,
                ErrorKind::BadValue,
                "`telemetry.service_name` is empty".into(),
                "name the service, e.g. service_name = \"rootfence\", or remove the key",
            );
        } else {
            let prov = cx.prov(e);
            fixed(
                cx,
                &mut acc.tel_service_name,
                &e.span,
                Some(e.v.clone()),
                prov,
            );
        }
    }
    if let Some(e) = &raw.tel_resource_attributes {
        match super::telemetry::parse_attributes(&e.v) {
            Ok(_) => {
                let prov = cx.prov(e);
                fixed(
                    cx,
                    &mut acc.tel_resource_attributes,
                    &e.span,
                    Some(e.v.clone()),
                    prov,
                );
            }
            Err(why) => cx.error(
                &e.span,
                ErrorKind::BadValue,
                format!("`telemetry.resource_attributes`: {why}"),
                "write key=value pairs separated by commas, e.g. \"team=sec,deployment.environment.name=prod\"",
            ),
        }
    }
}

fn apply_roots(acc: &mut Acc, raw: &RawLayer, cx: &mut Cx<'_, '_>) {
    allow_list(cx, &mut acc.roots_allow, &raw.roots_allow);
    if let Some(e) = &raw.roots_deny {
        if let Some(g) = path_globs(cx, e, Side::Deny) {
            acc.roots_deny.extend(g);
        }
    }
    if let Some(e) = &raw.roots_other_homes {
        if let Some(g) = path_globs(cx, e, Side::Deny) {
            acc.roots_other_homes.extend(g);
        }
    }
    // Static roots are not a permission of their own: every one must pass the root rules
    // of all layers (checked in `build`), which is where the bound lives. So a later layer
    // replaces the list, e.g. a project names its own directory.
    if let Some(e) = &raw.roots_static {
        if let Some(list) = paths(cx, e) {
            let roots = list
                .iter()
                .map(|(p, span)| {
                    let root = StaticRoot {
                        path: p.clone(),
                        provenance: cx.prov_item(e.key, span),
                    };
                    (root, span.clone())
                })
                .collect();
            acc.roots_static = Setting {
                v: roots,
                prov: cx.prov(e),
            };
        }
    }
    if let Some(e) = &raw.roots_list_timeout_ms {
        let prov = cx.prov(e);
        fixed(cx, &mut acc.list_timeout_ms, &e.span, e.v, prov);
    }
    if let Some(e) = &raw.roots_launch_wait_ms {
        let prov = cx.prov(e);
        fixed(cx, &mut acc.launch_wait_ms, &e.span, e.v, prov);
    }
    ranked(
        cx,
        &mut acc.on_timeout,
        &raw.roots_on_timeout,
        RootsFallback::WORDS,
    );
    ranked(
        cx,
        &mut acc.symlinks,
        &raw.roots_symlinks,
        SymlinkStance::WORDS,
    );
    ranked(
        cx,
        &mut acc.hardlinks,
        &raw.roots_hardlinks,
        HardlinkStance::WORDS,
    );
    ranked(
        cx,
        &mut acc.from_command,
        &raw.roots_from_command,
        CommandRoots::WORDS,
    );
}

/// Schemes with the span of each entry.
type SchemeList = Vec<(String, Range<usize>)>;

/// RFC 3986 scheme syntax.
fn valid_scheme(s: &str) -> bool {
    let mut chars = s.chars();
    chars.next().is_some_and(|c| c.is_ascii_alphabetic())
        && chars.all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'))
}

/// RFC 6838 restricted-name characters.
fn mime_token(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= 127
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || "!#$&-^_.+".contains(c))
}

/// Whether MIME pattern `outer` covers `inner` (a type or a pattern).
pub(crate) fn mime_covers(outer: &str, inner: &str) -> bool {
    if outer == "*/*" || outer == inner {
        return true;
    }
    match (outer.split_once('/'), inner.split_once('/')) {
        (Some((ot, "*")), Some((it, _))) => ot == it,
        _ => false,
    }
}

fn apply_resources(acc: &mut Acc, raw: &RawLayer, cx: &mut Cx<'_, '_>) {
    if let Some(e) = &raw.res_other_schemes {
        // Outer `None`: the entry was bad. Inner `None`: every scheme allowed.
        let new: Option<Option<SchemeList>> = match &e.v {
            RawSchemes::Allow => Some(None),
            RawSchemes::Deny => Some(Some(Vec::new())),
            RawSchemes::List(items) => {
                let mut out = Vec::new();
                let mut ok = true;
                for item in items {
                    let s = item.v.to_ascii_lowercase();
                    if s == "file" {
                        ok = false;
                        cx.error(
                            &item.span,
                            ErrorKind::BadValue,
                            "`resources.other_schemes` lists \"file\"".into(),
                            "`file:` is always allowed subject to the roots and path rules; \
                             list only the other schemes to allow",
                        );
                    } else if !valid_scheme(&s) {
                        ok = false;
                        cx.error(
                            &item.span,
                            ErrorKind::BadValue,
                            format!("\"{}\" is not a URI scheme", item.v),
                            "write the scheme name without `:` or `//`, e.g. \"https\"",
                        );
                    } else if !out.iter().any(|(o, _)| *o == s) {
                        out.push((s, item.span.clone()));
                    }
                }
                ok.then_some(Some(out))
            }
        };
        if let Some(new) = new {
            let mut ok = true;
            if cx.check {
                if let Some(old) = &acc.schemes.v {
                    let earlier = acc.schemes.prov.clone();
                    match &new {
                        None => {
                            ok = false;
                            let what = "`resources.other_schemes = \"allow\"` is wider than the \
                                        earlier scheme list"
                                .to_string();
                            let hint =
                                "a later layer may only narrow: \"deny\" < a list < \"allow\", \
                                        and a later list must be a subset"
                                    .to_string();
                            cx.widening(&e.span, what, &earlier, hint);
                        }
                        Some(list) => {
                            for (s, span) in list {
                                if !old.contains(s) {
                                    ok = false;
                                    let what = format!(
                                        "`resources.other_schemes` allows \"{s}\", which an earlier \
                                         layer does not"
                                    );
                                    let hint = "a later layer may only narrow: a later scheme \
                                                list must be a subset of the earlier one"
                                        .to_string();
                                    cx.widening(span, what, &earlier, hint);
                                }
                            }
                        }
                    }
                }
            }
            if ok {
                acc.schemes = Setting {
                    v: new.map(|l| l.into_iter().map(|(s, _)| s).collect()),
                    prov: cx.prov(e),
                };
            }
        }
    }
    allow_list(cx, &mut acc.res_allow, &raw.res_allow);
    if let Some(e) = &raw.res_deny {
        if let Some(g) = path_globs(cx, e, Side::Deny) {
            acc.res_deny.extend(g);
        }
    }
    limit(cx, &mut acc.max_bytes, &raw.res_max_bytes);
    if let Some(e) = &raw.res_mime {
        let mut list: Vec<(String, Range<usize>)> = Vec::new();
        let mut ok = true;
        for item in &e.v {
            let m = item.v.to_ascii_lowercase();
            let valid = match m.split_once('/') {
                Some(("*", "*")) => true,
                Some((t, "*")) => mime_token(t),
                Some((t, s)) => mime_token(t) && mime_token(s),
                None => false,
            };
            if !valid {
                ok = false;
                cx.error(
                    &item.span,
                    ErrorKind::BadValue,
                    format!("\"{}\" is not a MIME type pattern", item.v),
                    "write `type/subtype`, `type/*` or `*/*`, without parameters, e.g. \
                     \"text/*\" or \"application/json\"",
                );
            } else {
                list.push((m, item.span.clone()));
            }
        }
        if ok && cx.check {
            if let Some(old) = &acc.mime.v {
                let earlier = acc.mime.prov.clone();
                for (m, span) in &list {
                    if !old.iter().any(|o| mime_covers(o, m)) {
                        ok = false;
                        let what = format!(
                            "`resources.mime` entry \"{m}\" is not covered by the earlier MIME list"
                        );
                        let hint = "a later layer may only narrow: each MIME pattern must be \
                                    covered by an earlier one (`text/*` covers `text/plain`)"
                            .to_string();
                        cx.widening(span, what, &earlier, hint);
                    }
                }
            }
        }
        if ok {
            acc.mime = Setting {
                v: Some(list.into_iter().map(|(m, _)| m).collect()),
                prov: cx.prov(e),
            };
        }
    }
    ranked(cx, &mut acc.read, &raw.res_read, ReadStance::WORDS);
}

/// RFC 6901 JSON pointer check.
fn check_pointer(p: &str) -> Result<(), String> {
    if p.is_empty() {
        return Err(
            "the empty pointer names the whole arguments object, which is not a path".into(),
        );
    }
    if !p.starts_with('/') {
        return Err(format!("JSON pointer \"{p}\" does not start with `/`"));
    }
    let b = p.as_bytes();
    for (i, _) in p.match_indices('~') {
        if !matches!(b.get(i + 1), Some(b'0' | b'1')) {
            return Err(format!(
                "JSON pointer \"{p}\" has `~` not followed by `0` or `1`"
            ));
        }
    }
    Ok(())
}

fn apply_tools(acc: &mut Acc, raw: &RawLayer, cx: &mut Cx<'_, '_>) {
    if let Some(e) = &raw.tools_deny {
        if let Some(g) = name_globs(cx, e) {
            acc.tools_deny.extend(g);
        }
    }
    if let Some(e) = &raw.tools_writing {
        if let Some(g) = name_globs(cx, e) {
            acc.tools_writing.extend(g);
        }
    }
    ranked_bool(cx, &mut acc.read_only, &raw.tools_read_only);
    apply_infer(acc, raw, cx);
    for entry in &raw.tools_paths {
        let (Some(tool), Some(pointers)) = (&entry.tool, &entry.pointers) else {
            continue;
        };
        // Deny side: checking the arguments of more tools is the safe error.
        let glob = match glob::name_glob(&tool.v, Side::Deny) {
            Ok(g) => g,
            Err(p) => {
                cx.problem(&tool.span, p);
                continue;
            }
        };
        let kind = entry.kind.as_ref().map_or(ArgKind::Path, |k| k.v);
        // Deny side too: a server glob that matches more servers checks more calls.
        let server = match &entry.server {
            None => None,
            Some(e) => match glob::name_glob(&e.v, Side::Deny) {
                Ok(g) => Some((e.v.clone(), g)),
                Err(p) => {
                    cx.problem(&e.span, p);
                    continue;
                }
            },
        };
        let server_rule = entry
            .server
            .as_ref()
            .map(|e| format!(", server = {}", cx.src.snippet(&e.span)))
            .unwrap_or_default();
        if pointers.v.is_empty() {
            cx.error(
                &pointers.span,
                ErrorKind::BadPointer,
                "`tools.paths.pointers` is empty".into(),
                "list the JSON pointers of the arguments that hold paths, e.g. [\"/path\"]",
            );
            continue;
        }
        let mut list = Vec::new();
        for item in &pointers.v {
            match check_pointer(&item.v) {
                Ok(()) => list.push(ToolPath {
                    pointer: item.v.clone(),
                    kind,
                    server: server.as_ref().map(|(t, _)| t.clone()),
                    provenance: cx.at(
                        &item.span,
                        format!(
                            "[[tools.paths]] tool = {}{server_rule}, pointers = {}, kind = \"{}\"",
                            cx.src.snippet(&tool.span),
                            cx.src.snippet(&item.span),
                            kind.as_str()
                        ),
                    ),
                }),
                Err(msg) => cx.error(
                    &item.span,
                    ErrorKind::BadPointer,
                    msg,
                    "write an RFC 6901 JSON pointer into the tool's arguments, e.g. \"/path\" \
                     or \"/options/target\"; escape `~` as `~0` and `/` as `~1`",
                ),
            }
        }
        if list.len() == pointers.v.len() {
            acc.tool_paths.push((tool.v.clone(), glob, server, list));
        }
    }
}

/// `tools.infer` and its per-tool overrides. The inference is a heuristic whose misses a
/// user must be able to correct: while only built-in layers (or the default) set the stance,
/// any layer may set it or override it for a tool; once an operator's layer set it, later
/// layers may only narrow it (the tool overrides too).
fn apply_infer(acc: &mut Acc, raw: &RawLayer, cx: &mut Cx<'_, '_>) {
    let builtin = cx.set_by_builtin(&acc.infer.prov);
    if builtin {
        if let Some(e) = &raw.tools_infer {
            acc.infer = Setting {
                v: e.v,
                prov: cx.prov(e),
            };
        }
    } else {
        ranked(cx, &mut acc.infer, &raw.tools_infer, ToolInfer::WORDS);
    }
    for entry in &raw.tools_infer_for {
        let (Some(tool), Some(infer)) = (&entry.tool, &entry.infer) else {
            continue;
        };
        let glob = match glob::name_glob(&tool.v, Side::Deny) {
            Ok(g) => g,
            Err(p) => {
                cx.problem(&tool.span, p);
                continue;
            }
        };
        if cx.check && !builtin && infer.v.rank() > acc.infer.v.rank() {
            let what = format!(
                "`[[tools.infer_for]] infer = \"{}\"` is wider than the earlier `tools.infer = \"{}\"`",
                infer.v.word(),
                acc.infer.v.word()
            );
            let earlier = acc.infer.prov.clone();
            cx.widening(&infer.span, what, &earlier, order_of(ToolInfer::WORDS));
            continue;
        }
        let prov = cx.at(
            &tool.span,
            format!(
                "[[tools.infer_for]] tool = {}, infer = \"{}\"",
                cx.src.snippet(&tool.span),
                infer.v.word()
            ),
        );
        acc.infer_for.push((tool.v.clone(), glob, infer.v, prov));
    }
}

fn apply_audit(acc: &mut Acc, raw: &RawLayer, cx: &mut Cx<'_, '_>) {
    if let Some(e) = &raw.audit_path {
        match glob::expand(&e.v, cx.home, false).and_then(|p| glob::check_path(&p).map(|()| p)) {
            Ok(p) => {
                let prov = cx.prov(e);
                fixed(cx, &mut acc.audit_path, &e.span, Some(p), prov);
            }
            Err(p) => cx.problem(&e.span, p),
        }
    }
    // fsync and its interval form one setting.
    let interval = raw.audit_fsync_interval_ms.as_ref();
    let new = match (&raw.audit_fsync, interval) {
        (None, None) => None,
        (Some(w), _) if w.v != FsyncWord::Interval => {
            if let Some(i) = interval {
                cx.error(
                    &i.key_span,
                    ErrorKind::BadValue,
                    format!(
                        "`audit.fsync_interval_ms` set, but `audit.fsync = \"{}\"`",
                        word_of(w.v)
                    ),
                    "remove `fsync_interval_ms`, or set `fsync = \"interval\"`",
                );
                None
            } else {
                let f = match w.v {
                    FsyncWord::Always => Fsync::Always,
                    FsyncWord::Denials => Fsync::Denials,
                    _ => Fsync::Never,
                };
                Some((f, w.span.clone(), cx.prov(w)))
            }
        }
        (Some(w), i) => {
            let ms = i.map(|i| i.v).unwrap_or(match acc.fsync.v {
                Fsync::Interval(d) => d.as_millis() as u64,
                _ => DEFAULT_FSYNC_INTERVAL_MS,
            });
            let mut prov = cx.prov(w);
            if let Some(i) = i {
                prov.rule.push_str(&format!(", {} = {}", i.key, i.v));
            }
            Some((
                Fsync::Interval(Duration::from_millis(ms)),
                w.span.clone(),
                prov,
            ))
        }
        (None, Some(i)) => {
            if matches!(acc.fsync.v, Fsync::Interval(_)) {
                Some((
                    Fsync::Interval(Duration::from_millis(i.v)),
                    i.span.clone(),
                    cx.prov(i),
                ))
            } else {
                cx.error(
                    &i.key_span,
                    ErrorKind::BadValue,
                    "`audit.fsync_interval_ms` set, but `audit.fsync` is not \"interval\"".into(),
                    "add `fsync = \"interval\"`, or remove `fsync_interval_ms`",
                );
                None
            }
        }
    };
    if let Some((f, span, prov)) = new {
        if cx.check && fsync_rank(&f) > fsync_rank(&acc.fsync.v) {
            let what = format!("`{}` is wider than the earlier fsync stance", prov.rule);
            let hint = "a later layer may only narrow: \"always\" < \"denials\" < \"interval\" \
                        (shorter first) < \"never\""
                .to_string();
            cx.widening(&span, what, &acc.fsync.prov.clone(), hint);
        } else {
            acc.fsync = Setting { v: f, prov };
        }
    }
    if let Some(e) = &raw.audit_rotate_bytes {
        let prov = cx.prov(e);
        fixed(cx, &mut acc.rotate_bytes, &e.span, Some(e.v), prov);
    }
    ranked(
        cx,
        &mut acc.on_failure,
        &raw.audit_on_failure,
        OnFailure::WORDS,
    );
    ranked_bool(cx, &mut acc.log_allowed, &raw.audit_log_allowed);
    ranked(
        cx,
        &mut acc.allowed,
        &raw.audit_allowed,
        AllowedRecords::WORDS,
    );
    if let Some(e) = &raw.audit_retain_files {
        let prov = cx.prov(e);
        fixed(cx, &mut acc.retain_files, &e.span, Some(e.v), prov);
    }
    if let Some(e) = &raw.audit_retain_bytes {
        let prov = cx.prov(e);
        fixed(cx, &mut acc.retain_bytes, &e.span, Some(e.v), prov);
    }
    // Checkpoints are operational, like the log's path: the first layer that sets one fixes
    // it (a project layer cannot move the org's checkpoints or swap its key).
    for (raw_e, set) in [
        (&raw.audit_checkpoint_key, &mut acc.checkpoint_key),
        (&raw.audit_checkpoint_path, &mut acc.checkpoint_path),
    ] {
        if let Some(e) = raw_e {
            match glob::expand(&e.v, cx.home, false).and_then(|p| glob::check_path(&p).map(|()| p))
            {
                Ok(p) => {
                    let prov = cx.prov(e);
                    fixed(cx, set, &e.span, Some(p), prov);
                }
                Err(p) => cx.problem(&e.span, p),
            }
        }
    }
    for (raw_e, set) in [
        (
            &raw.audit_checkpoint_every_records,
            &mut acc.checkpoint_every_records,
        ),
        (&raw.audit_checkpoint_every_ms, &mut acc.checkpoint_every_ms),
    ] {
        if let Some(e) = raw_e {
            let prov = cx.prov(e);
            fixed(cx, set, &e.span, Some(e.v), prov);
        }
    }
    apply_syslog(acc, raw, cx);
}

/// `[audit.syslog]`: one fixed setting as a whole (the first layer that configures it
/// fixes where records go; a later layer may only repeat it).
fn apply_syslog(acc: &mut Acc, raw: &RawLayer, cx: &mut Cx<'_, '_>) {
    let Some(addr) = &raw.syslog_address else {
        for (set, span) in [
            (
                raw.syslog_facility.is_some(),
                raw.syslog_facility.as_ref().map(|e| e.key_span.clone()),
            ),
            (
                raw.syslog_format.is_some(),
                raw.syslog_format.as_ref().map(|e| e.key_span.clone()),
            ),
            (
                raw.syslog_queue.is_some(),
                raw.syslog_queue.as_ref().map(|e| e.key_span.clone()),
            ),
            (
                raw.syslog_sd_id.is_some(),
                raw.syslog_sd_id.as_ref().map(|e| e.key_span.clone()),
            ),
            (
                raw.syslog_max_message.is_some(),
                raw.syslog_max_message.as_ref().map(|e| e.key_span.clone()),
            ),
        ] {
            if let (true, Some(span)) = (set, span) {
                cx.error(
                    &span,
                    ErrorKind::BadValue,
                    "`[audit.syslog]` without `address`".into(),
                    "add `address = \"udp://host:514\"`, `\"tcp://host:601\"` or `\"unix:///dev/log\"`",
                );
                return;
            }
        }
        return;
    };
    let transport = match addr.v.parse::<Transport>() {
        Ok(t) => t,
        Err(e) => {
            cx.error(
                &addr.span,
                ErrorKind::BadValue,
                e,
                "e.g. `address = \"tcp://logs.example.org:601\"`",
            );
            return;
        }
    };
    let mut c = SyslogConfig::new(transport);
    if let Some(f) = &raw.syslog_facility {
        c.facility = f.v;
    }
    if let Some(f) = &raw.syslog_format {
        c.format = f.v;
    }
    if let Some(q) = &raw.syslog_queue {
        c.queue = q.v as usize;
    }
    if let Some(m) = &raw.syslog_max_message {
        c.max_message = m.v as usize;
    }
    if let Some(id) = &raw.syslog_sd_id {
        let ok = !id.v.is_empty()
            && id.v.len() <= 32
            && id
                .v
                .bytes()
                .all(|b| (33..=126).contains(&b) && !matches!(b, b'=' | b']' | b'"'));
        if !ok {
            cx.error(
                &id.span,
                ErrorKind::BadValue,
                format!("invalid syslog SD-ID `{}`", id.v),
                "1 to 32 printable ASCII characters without `=`, `]`, `\"` or spaces, e.g. \
                 `rootfence@<your private enterprise number>`",
            );
            return;
        }
        c.sd_id = id.v.clone();
    }
    let prov = cx.prov(addr);
    fixed(cx, &mut acc.syslog, &addr.span, Some(c), prov);
}

fn word_of(w: FsyncWord) -> &'static str {
    match w {
        FsyncWord::Always => "always",
        FsyncWord::Denials => "denials",
        FsyncWord::Interval => "interval",
        FsyncWord::Never => "never",
    }
}

fn network_rank(n: &Network) -> u8 {
    match n {
        Network::Deny => 0,
        Network::Ports(_) => 1,
        Network::Allow => 2,
    }
}

fn network_word(n: &Network) -> String {
    match n {
        Network::Deny => "\"deny\"".into(),
        Network::Allow => "\"allow\"".into(),
        Network::Ports(p) => format!("{p:?}"),
    }
}

fn valid_env_pattern(s: &str) -> bool {
    let name = s.strip_suffix('*').unwrap_or(s);
    (name.is_empty() && s == "*")
        || (name
            .chars()
            .next()
            .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
            && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_'))
}

fn apply_sandbox(acc: &mut Acc, raw: &RawLayer, cx: &mut Cx<'_, '_>) {
    ranked(cx, &mut acc.sb_mode, &raw.sb_mode, SandboxMode::WORDS);
    // Grants are judged against what earlier layers made grantable, so a layer's own
    // `[sandbox.grantable]` only binds the layers after it.
    if let Some(e) = &raw.sb_read {
        if let Some(list) = paths(cx, e) {
            for (p, span) in list {
                if grant_path(cx, acc, e.key, &p, &span, false) {
                    let prov = cx.prov_item(e.key, &span);
                    acc.sb_read.push((p, prov));
                }
            }
        }
    }
    if let Some(e) = &raw.sb_write {
        if let Some(list) = paths(cx, e) {
            for (p, span) in list {
                if grant_path(cx, acc, e.key, &p, &span, true) {
                    let prov = cx.prov_item(e.key, &span);
                    acc.sb_write.push((p, prov));
                }
            }
        }
    }
    if let Some(e) = &raw.sb_network {
        let new = match &e.v {
            RawNetwork::Allow => Network::Allow,
            RawNetwork::Deny => Network::Deny,
            RawNetwork::Ports(p) => {
                let set: BTreeSet<u16> = p.iter().map(|s| s.v).collect();
                Network::Ports(set.into_iter().collect())
            }
        };
        let old = &acc.network.v;
        let wider = match (&new, old) {
            (Network::Ports(n), Network::Ports(o)) => n.iter().any(|p| !o.contains(p)),
            _ => network_rank(&new) > network_rank(old),
        };
        if cx.check && wider {
            let what = format!(
                "`sandbox.network = {}` is wider than the earlier {}",
                network_word(&new),
                network_word(old)
            );
            let hint = "a later layer may only narrow: \"deny\" < a port list (a later list \
                        must be a subset) < \"allow\""
                .to_string();
            cx.widening(&e.span, what, &acc.network.prov.clone(), hint);
        } else {
            acc.network = Setting {
                v: new,
                prov: cx.prov(e),
            };
        }
    }
    if let Some(e) = &raw.sb_env {
        for item in &e.v {
            if !valid_env_pattern(&item.v) {
                cx.error(
                    &item.span,
                    ErrorKind::BadValue,
                    format!("\"{}\" is not an environment variable name", item.v),
                    "write a name such as \"RUST_LOG\", or a prefix ending in `*` such as \"LC_*\"",
                );
            } else if grant_env(cx, acc, &item.v, &item.span) {
                let prov = cx.prov_item(e.key, &item.span);
                acc.env.push((item.v.clone(), prov));
            }
        }
    }
    if let Some(e) = &raw.sb_read_only_paths {
        if let Some(g) = path_globs(cx, e, Side::Deny) {
            // The first layer may replace the built-in list; a later layer only adds to
            // what the earlier ones left (adding is narrower).
            let base = match acc.read_only_paths.take() {
                Some(earlier) => earlier,
                None if cx.layer == 0 => Vec::new(),
                None => default_read_only_paths(),
            };
            let mut all = base;
            all.extend(g);
            acc.read_only_paths = Some(all);
        }
    }
    apply_grantable(acc, raw, cx);
    ranked(cx, &mut acc.root_access, &raw.sb_root_access, Access::WORDS);
    // Operational, not a permission: the first layer that sets it fixes it (an org layer can
    // pin it; otherwise a user layer may opt out for a server that cannot be restarted).
    if let Some(e) = &raw.sb_follow_roots {
        let prov = cx.prov(e);
        fixed(cx, &mut acc.follow_roots, &e.span, e.v, prov);
    }
    if let Some(e) = &raw.sb_read_only_roots {
        if let Some(g) = path_globs(cx, e, Side::Deny) {
            acc.read_only_roots.extend(g);
        }
    }
    limit(cx, &mut acc.rl_nofile, &raw.sb_nofile);
    limit(cx, &mut acc.rl_as, &raw.sb_address_space);
    limit(cx, &mut acc.rl_cpu, &raw.sb_cpu_seconds);
    limit(cx, &mut acc.rl_nproc, &raw.sb_processes);
}

/// Whether a later layer may add this `sandbox.env` entry (see `grant.rs`); reports why not.
fn grant_env(cx: &mut Cx<'_, '_>, acc: &Acc, name: &str, span: &Range<usize>) -> bool {
    if !cx.check {
        return true;
    }
    let r = grant::judge_env(name, &acc.env, &acc.grant_env.v, &acc.grant_env.prov);
    match r {
        Ok(()) => true,
        Err(refusal) => {
            grant_error(cx, "sandbox.env", name, span, refusal);
            false
        }
    }
}

/// Whether a later layer may add this `sandbox.read` (`write = false`) or `sandbox.write`
/// path (see `grant.rs`); reports why not.
fn grant_path(
    cx: &mut Cx<'_, '_>,
    acc: &Acc,
    key: &str,
    path: &str,
    span: &Range<usize>,
    write: bool,
) -> bool {
    if !cx.check {
        return true;
    }
    let grantable = Grantable {
        env: Vec::new(),
        env_prov: acc.grant_env.prov.clone(),
        read: acc.grant_read.v.clone(),
        read_prov: acc.grant_read.prov.clone(),
        write: acc.grant_write.v.clone(),
        write_prov: acc.grant_write.prov.clone(),
    };
    let rules = grant::PathRules {
        read: &acc.sb_read,
        write: &acc.sb_write,
        grantable: &grantable,
        home: cx.home,
    };
    let denied = |p: &str| {
        acc.res_deny
            .iter()
            .find(|(g, _)| g.matches_path(p))
            .map(|(g, prov)| (g.text.clone(), prov.clone()))
    };
    match grant::judge_path(path, write, &rules, denied) {
        Ok(()) => true,
        Err(refusal) => {
            grant_error(cx, key, path, span, refusal);
            false
        }
    }
}

fn grant_error(
    cx: &mut Cx<'_, '_>,
    key: &str,
    value: &str,
    span: &Range<usize>,
    refusal: grant::Refusal,
) {
    use grant::Refusal as R;
    match refusal {
        R::NotGrantable(prov) => {
            let what = format!("`{key}` entry \"{value}\" is not grantable here");
            let list = match key {
                "sandbox.env" => "env",
                "sandbox.write" => "write",
                _ => "read` or `write",
            };
            let hint = format!(
                "an earlier layer decides what later layers may grant the server: it must \
                 cover this entry in `[sandbox.grantable] {list}`, or grant it itself"
            );
            cx.widening(span, what, &prov, hint);
        }
        R::EveryVariable => cx.error(
            span,
            ErrorKind::Widening,
            format!("`{key}` entry \"*\" would pass every variable, secrets included"),
            "name the variables the server needs (e.g. \"MEMORY_FILE_PATH\", \"GIT_*\")",
        ),
        R::TooWide(what) => cx.error(
            span,
            ErrorKind::BadPath,
            format!("`{key}` entry \"{value}\" would grant the server {what}"),
            "grant the server's own state only, e.g. \"~/.gitconfig\" or \"~/.cache/<tool>\"",
        ),
        R::Denied(glob, prov) => {
            let err = cx
                .src
                .error(
                    span,
                    ErrorKind::Widening,
                    format!("`{key}` entry \"{value}\" is denied by the policy (`{glob}`)"),
                )
                .related(Related {
                    label: "denied by",
                    ..related(&prov)
                })
                .hint(
                    "a grant cannot reach what the policy denies: grant the server's own \
                     state, not a secret",
                );
            cx.errs.push(err);
        }
    }
}

/// `[sandbox.grantable]`: what the layers after this one may add. Like an allow-list, a
/// later list must lie inside the earlier one.
fn apply_grantable(acc: &mut Acc, raw: &RawLayer, cx: &mut Cx<'_, '_>) {
    if let Some(e) = &raw.sb_grant_env {
        let mut ok = true;
        for item in &e.v {
            if !valid_env_pattern(&item.v) {
                ok = false;
                cx.error(
                    &item.span,
                    ErrorKind::BadValue,
                    format!("\"{}\" is not an environment variable name", item.v),
                    "write a name such as \"RUST_LOG\", or a prefix ending in `*` such as \"LC_*\"",
                );
            } else if cx.check
                && !acc
                    .grant_env
                    .v
                    .iter()
                    .any(|o| env_pattern_covers(o, &item.v))
            {
                ok = false;
                let what = format!(
                    "`sandbox.grantable.env` entry \"{}\" is not in the earlier grantable list",
                    item.v
                );
                let hint = "a later layer may only narrow what is grantable: each entry must \
                            be covered by an earlier `[sandbox.grantable] env` entry"
                    .to_string();
                cx.widening(&item.span, what, &acc.grant_env.prov.clone(), hint);
            }
        }
        if ok {
            acc.grant_env = Setting {
                v: e.v.iter().map(|s| s.v.clone()).collect(),
                prov: cx.prov(e),
            };
        }
    }
    for write in [false, true] {
        let (entry, set) = if write {
            (&raw.sb_grant_write, &mut acc.grant_write)
        } else {
            (&raw.sb_grant_read, &mut acc.grant_read)
        };
        let Some(e) = entry else { continue };
        let Some(globs) = path_globs(cx, e, Side::Allow) else {
            continue;
        };
        let mut ok = true;
        if cx.check {
            for ((g, _), item) in globs.iter().zip(&e.v) {
                if !set.v.iter().any(|earlier| earlier.covers(g)) {
                    ok = false;
                    let what = format!(
                        "`{}` entry \"{}\" is not inside the earlier grantable list",
                        e.key, item.v
                    );
                    let hint = "a later layer may only narrow what is grantable: each entry \
                                must be a literal path an earlier entry matches, or a glob \
                                under an earlier `dir/**` entry"
                        .to_string();
                    cx.widening(&item.span, what, &set.prov.clone(), hint);
                }
            }
        }
        if ok {
            *set = Setting {
                v: globs.into_iter().map(|(g, _)| g).collect(),
                prov: cx.prov(e),
            };
        }
    }
}

fn table(rules: &[(PathGlob, Provenance)]) -> Result<GlobTable, globset::Error> {
    GlobTable::build(
        rules
            .iter()
            .map(|(g, p)| (g.text.clone(), g.globs.clone(), p.clone()))
            .collect(),
    )
}

fn name_table(rules: &[(String, Glob, Provenance)]) -> Result<GlobTable, globset::Error> {
    GlobTable::build(
        rules
            .iter()
            .map(|(t, g, p)| (t.clone(), vec![g.clone()], p.clone()))
            .collect(),
    )
}

fn allow_tables(lists: &[AllowList]) -> Result<Vec<AllowTable>, globset::Error> {
    lists
        .iter()
        .map(|l| {
            let mut miss = l.key_prov.clone();
            miss.rule.push_str(" (no entry matched)");
            Ok(AllowTable {
                table: table(&l.globs)?,
                miss,
            })
        })
        .collect()
}

fn fmt_size(n: u64) -> String {
    for (unit, shift) in [("TiB", 40), ("GiB", 30), ("MiB", 20), ("KiB", 10)] {
        if n >= 1 << shift && n.is_multiple_of(1 << shift) {
            return format!("\"{} {unit}\"", n >> shift);
        }
    }
    n.to_string()
}

/// The user's own home for `roots.other_homes`: `HOME` when it is an absolute path other
/// than `/` (a home of `/` would make every path "inside the own home"), without a
/// trailing `/`.
fn own_home(home: Option<&str>) -> Option<String> {
    let h = home?.trim_end_matches('/');
    (h.starts_with('/') && glob::check_path(h).is_ok()).then(|| h.to_owned())
}

/// Builds the matchers and the settings, and checks the static roots against the rules.
fn build(
    acc: Acc,
    layers: Vec<LayerInfo>,
    sources: &[Source<'_>],
    opted_out: Option<Provenance>,
    home: Option<String>,
) -> Result<Policy, Vec<PolicyError>> {
    let mut errs = Vec::new();
    let set_err = |e: globset::Error| {
        vec![
            PolicyError::unlocated(
                &Arc::from(""),
                ErrorKind::BadGlob,
                format!("the globs could not be compiled together: {e}"),
            )
            .hint("use fewer or simpler globs"),
        ]
    };
    let root_deny = table(&acc.roots_deny).map_err(set_err)?;
    let root_other_homes = table(&acc.roots_other_homes).map_err(set_err)?;
    let res_deny = table(&acc.res_deny).map_err(set_err)?;
    let root_allow = allow_tables(&acc.roots_allow).map_err(set_err)?;
    let res_allow = allow_tables(&acc.res_allow).map_err(set_err)?;
    let tool_deny = name_table(&acc.tools_deny).map_err(set_err)?;
    let writing: Vec<(String, Glob, Provenance)> = if acc.read_only.v {
        acc.tools_writing
            .iter()
            .map(|(t, g, p)| {
                let mut p = p.clone();
                p.rule.push_str(&format!(" with {}", acc.read_only.prov));
                (t.clone(), g.clone(), p)
            })
            .collect()
    } else {
        Vec::new()
    };
    let tool_writing = name_table(&writing).map_err(set_err)?;
    let tool_writes = name_table(&acc.tools_writing).map_err(set_err)?;
    let mut tp = GlobSetBuilder::new();
    for (_, g, _, _) in &acc.tool_paths {
        tp.add(g.clone());
    }
    let tool_paths_set = tp.build().map_err(set_err)?;
    let mut ro = GlobSetBuilder::new();
    for (g, _) in &acc.read_only_roots {
        for g in &g.globs {
            ro.add(g.clone());
        }
    }
    let read_only_roots_set = ro.build().map_err(set_err)?;
    let read_only_paths = acc
        .read_only_paths
        .clone()
        .unwrap_or_else(default_read_only_paths);
    let mut rop = GlobSetBuilder::new();
    for (g, _) in &read_only_paths {
        for g in &g.globs {
            rop.add(g.clone());
        }
    }
    let read_only_paths_set = rop.build().map_err(set_err)?;

    let m = Matchers {
        root_deny,
        root_other_homes,
        own_home: own_home(home.as_deref()),
        root_allow,
        res_deny,
        res_allow,
        scheme_prov: acc.schemes.prov.clone(),
        tool_deny,
        tool_writing,
        tool_writes,
        read_only: acc.read_only.v,
        tool_paths_set,
        tool_paths: acc
            .tool_paths
            .iter()
            .map(|(t, _, server, l)| ToolPaths {
                tool: t.clone(),
                server: server.as_ref().map(|(_, g)| g.compile_matcher()),
                paths: l.clone(),
            })
            .collect(),
        infer: (acc.infer.v, acc.infer.prov.clone()),
        infer_for: acc
            .infer_for
            .iter()
            .map(|(t, g, i, p)| (t.clone(), g.compile_matcher(), *i, p.clone()))
            .collect(),
        max_bytes_prov: acc.max_bytes.prov.clone(),
        mime_prov: acc.mime.prov.clone(),
        default: Provenance::default_rule("default"),
        not_canonical: Provenance::default_rule("undecidable input is denied"),
    };

    // Static roots must pass the root rules. One denied by its own or an earlier layer is
    // a mistake in the file (an error); one denied by a later layer was narrowed away.
    let mut static_roots = Vec::new();
    for (r, span) in &acc.roots_static.v {
        let d = super::decision::decide_root_with(&m, &r.path);
        if d.allow {
            static_roots.push(r.clone());
            continue;
        }
        let own = r.provenance.layer;
        if d.provenance.layer.is_none() || d.provenance.layer <= own {
            let err = sources[own.unwrap_or(0)]
                .error(
                    span,
                    ErrorKind::BadPath,
                    format!("static root \"{}\" is refused by the root rules", r.path),
                )
                .related(Related {
                    label: "refused by",
                    ..related(d.provenance)
                })
                .hint("remove the static root, or change the rule that refuses it");
            errs.push(err);
        }
    }
    if !errs.is_empty() {
        return Err(errs);
    }

    let fsync_shown = match acc.fsync.v {
        Fsync::Interval(d) => format!("\"interval\", fsync_interval_ms = {}", d.as_millis()),
        f => format!(
            "\"{}\"",
            match f {
                Fsync::Always => "always",
                Fsync::Denials => "denials",
                _ => "never",
            }
        ),
    };
    let opt = |v: Option<u64>, size: bool| match v {
        Some(n) if size => fmt_size(n),
        Some(n) => n.to_string(),
        None => "(none)".into(),
    };
    let list = |v: &[String]| {
        let items: Vec<String> = v.iter().map(|s| format!("{s:?}")).collect();
        format!("[{}]", items.join(", "))
    };
    let shown = vec![
        (
            "mode",
            format!("\"{}\"", acc.mode.v.word()),
            acc.mode.prov.clone(),
        ),
        (
            "roots.static",
            list(
                &static_roots
                    .iter()
                    .map(|r| r.path.clone())
                    .collect::<Vec<_>>(),
            ),
            acc.roots_static.prov.clone(),
        ),
        (
            "roots.list_timeout_ms",
            acc.list_timeout_ms.v.to_string(),
            acc.list_timeout_ms.prov.clone(),
        ),
        (
            "roots.launch_wait_ms",
            acc.launch_wait_ms.v.to_string(),
            acc.launch_wait_ms.prov.clone(),
        ),
        (
            "roots.on_timeout",
            format!("\"{}\"", acc.on_timeout.v.word()),
            acc.on_timeout.prov.clone(),
        ),
        (
            "roots.symlinks",
            format!("\"{}\"", acc.symlinks.v.word()),
            acc.symlinks.prov.clone(),
        ),
        (
            "roots.hardlinks",
            format!("\"{}\"", acc.hardlinks.v.word()),
            acc.hardlinks.prov.clone(),
        ),
        (
            "roots.from_command",
            format!("\"{}\"", acc.from_command.v.word()),
            acc.from_command.prov.clone(),
        ),
        (
            "resources.other_schemes",
            match &acc.schemes.v {
                None => "\"allow\"".into(),
                Some(l) if l.is_empty() => "\"deny\"".into(),
                Some(l) => list(l),
            },
            acc.schemes.prov.clone(),
        ),
        (
            "resources.max_bytes",
            opt(acc.max_bytes.v, true),
            acc.max_bytes.prov.clone(),
        ),
        (
            "resources.mime",
            acc.mime.v.as_deref().map_or("(any)".into(), list),
            acc.mime.prov.clone(),
        ),
        (
            "resources.read",
            format!("\"{}\"", acc.read.v.word()),
            acc.read.prov.clone(),
        ),
        (
            "tools.read_only",
            acc.read_only.v.to_string(),
            acc.read_only.prov.clone(),
        ),
        (
            "tools.infer",
            format!("\"{}\"", acc.infer.v.word()),
            acc.infer.prov.clone(),
        ),
        (
            "audit.path",
            acc.audit_path
                .v
                .as_deref()
                .map_or("(default)".into(), |p| format!("{p:?}")),
            acc.audit_path.prov.clone(),
        ),
        ("audit.fsync", fsync_shown, acc.fsync.prov.clone()),
        (
            "audit.rotate_bytes",
            opt(acc.rotate_bytes.v, true),
            acc.rotate_bytes.prov.clone(),
        ),
        (
            "audit.on_failure",
            format!("\"{}\"", acc.on_failure.v.word()),
            acc.on_failure.prov.clone(),
        ),
        (
            "audit.log_allowed",
            acc.log_allowed.v.to_string(),
            acc.log_allowed.prov.clone(),
        ),
        (
            "audit.allowed",
            format!("\"{}\"", acc.allowed.v.word()),
            acc.allowed.prov.clone(),
        ),
        (
            "audit.retain_files",
            acc.retain_files
                .v
                .map_or("(default)".into(), |n| n.to_string()),
            acc.retain_files.prov.clone(),
        ),
        (
            "audit.retain_bytes",
            opt(acc.retain_bytes.v, true),
            acc.retain_bytes.prov.clone(),
        ),
        (
            "audit.checkpoint_key",
            acc.checkpoint_key
                .v
                .as_deref()
                .map_or("(none: no checkpoints)".into(), |p| format!("{p:?}")),
            acc.checkpoint_key.prov.clone(),
        ),
        (
            "audit.checkpoint_path",
            acc.checkpoint_path
                .v
                .as_deref()
                .map_or("(beside the log)".into(), |p| format!("{p:?}")),
            acc.checkpoint_path.prov.clone(),
        ),
        (
            "audit.checkpoint_every_records",
            acc.checkpoint_every_records
                .v
                .map_or("(default)".into(), |n| n.to_string()),
            acc.checkpoint_every_records.prov.clone(),
        ),
        (
            "audit.syslog",
            acc.syslog
                .v
                .as_ref()
                .map_or("(none)".into(), |c| format!("{:?}", c.transport)),
            acc.syslog.prov.clone(),
        ),
        (
            "audit.checkpoint_every_ms",
            acc.checkpoint_every_ms
                .v
                .map_or("(default)".into(), |n| n.to_string()),
            acc.checkpoint_every_ms.prov.clone(),
        ),
        (
            "sandbox.mode",
            format!("\"{}\"", acc.sb_mode.v.word()),
            acc.sb_mode.prov.clone(),
        ),
        (
            "sandbox.read",
            list(&texts(&acc.sb_read)),
            last_prov(&acc.sb_read, "sandbox.read = []"),
        ),
        (
            "sandbox.write",
            list(&texts(&acc.sb_write)),
            last_prov(&acc.sb_write, "sandbox.write = []"),
        ),
        (
            "sandbox.network",
            network_word(&acc.network.v),
            acc.network.prov.clone(),
        ),
        (
            "sandbox.env",
            list(&texts(&acc.env)),
            last_prov(&acc.env, "sandbox.env = []"),
        ),
        (
            "sandbox.root_access",
            format!("\"{}\"", acc.root_access.v.word()),
            acc.root_access.prov.clone(),
        ),
        (
            "sandbox.follow_roots",
            format!("\"{}\"", acc.follow_roots.v.word()),
            acc.follow_roots.prov.clone(),
        ),
        (
            "sandbox.rlimits.nofile",
            opt(acc.rl_nofile.v, false),
            acc.rl_nofile.prov.clone(),
        ),
        (
            "sandbox.rlimits.address_space",
            opt(acc.rl_as.v, true),
            acc.rl_as.prov.clone(),
        ),
        (
            "sandbox.rlimits.cpu_seconds",
            opt(acc.rl_cpu.v, false),
            acc.rl_cpu.prov.clone(),
        ),
        (
            "sandbox.rlimits.processes",
            opt(acc.rl_nproc.v, false),
            acc.rl_nproc.prov.clone(),
        ),
        (
            "telemetry.endpoint",
            acc.tel_endpoint
                .v
                .as_deref()
                .map_or("(environment)".into(), |e| format!("{e:?}")),
            acc.tel_endpoint.prov.clone(),
        ),
        (
            "telemetry.service_name",
            acc.tel_service_name
                .v
                .as_deref()
                .map_or("(environment)".into(), |e| format!("{e:?}")),
            acc.tel_service_name.prov.clone(),
        ),
        (
            "sandbox.grantable.env",
            list(&acc.grant_env.v),
            acc.grant_env.prov.clone(),
        ),
        (
            "sandbox.grantable.read",
            list(&glob_texts(&acc.grant_read.v)),
            acc.grant_read.prov.clone(),
        ),
        (
            "sandbox.grantable.write",
            list(&glob_texts(&acc.grant_write.v)),
            acc.grant_write.prov.clone(),
        ),
    ];

    Ok(Policy {
        layers,
        mode: acc.mode.v,
        roots: RootsSettings {
            static_roots,
            list_timeout: Duration::from_millis(acc.list_timeout_ms.v),
            launch_wait: Duration::from_millis(acc.launch_wait_ms.v),
            on_timeout: acc.on_timeout.v,
            symlinks: acc.symlinks.v,
            hardlinks: acc.hardlinks.v,
            from_command: acc.from_command.v,
        },
        resources: ResourceSettings {
            other_schemes: match acc.schemes.v {
                None => SchemeStance::AllowAll,
                Some(l) => SchemeStance::Only(l),
            },
            max_bytes: acc.max_bytes.v,
            mime: acc.mime.v,
            read: acc.read.v,
            deny_globs: acc.res_deny.iter().map(|(g, _)| g.text.clone()).collect(),
        },
        audit: AuditSettings {
            path: acc.audit_path.v.map(PathBuf::from),
            fsync: acc.fsync.v,
            rotate_bytes: acc.rotate_bytes.v,
            on_failure: acc.on_failure.v,
            log_allowed: acc.log_allowed.v,
            allowed: acc.allowed.v,
            retain_files: acc.retain_files.v,
            retain_bytes: acc.retain_bytes.v,
            checkpoint_key: acc.checkpoint_key.v.map(PathBuf::from),
            checkpoint_path: acc.checkpoint_path.v.map(PathBuf::from),
            checkpoint_every_records: acc.checkpoint_every_records.v,
            checkpoint_every_ms: acc.checkpoint_every_ms.v,
            syslog: acc.syslog.v.clone(),
        },
        sandbox: SandboxSettings {
            mode: acc.sb_mode.v,
            read: acc.sb_read.iter().map(|(p, _)| PathBuf::from(p)).collect(),
            write: acc.sb_write.iter().map(|(p, _)| PathBuf::from(p)).collect(),
            network: acc.network.v,
            rlimits: Rlimits {
                nofile: acc.rl_nofile.v,
                address_space: acc.rl_as.v,
                cpu_seconds: acc.rl_cpu.v,
                processes: acc.rl_nproc.v,
            },
            env: texts(&acc.env),
            grants: Grants {
                env: acc.env.clone(),
                read: acc.sb_read.clone(),
                write: acc.sb_write.clone(),
            },
            grantable: Grantable {
                env: acc.grant_env.v.clone(),
                env_prov: acc.grant_env.prov.clone(),
                read: acc.grant_read.v.clone(),
                read_prov: acc.grant_read.prov.clone(),
                write: acc.grant_write.v.clone(),
                write_prov: acc.grant_write.prov.clone(),
            },
            root_access: acc.root_access.v,
            follow_roots: acc.follow_roots.v,
            read_only_roots: acc
                .read_only_roots
                .iter()
                .map(|(g, _)| g.text.clone())
                .collect(),
            read_only_roots_set,
            read_only_paths: read_only_paths
                .iter()
                .map(|(g, _)| g.text.clone())
                .collect(),
            read_only_paths_set,
        },
        telemetry: TelemetrySettings {
            endpoint: acc.tel_endpoint.v,
            protocol: acc.tel_protocol.v,
            service_name: acc.tel_service_name.v,
            resource_attributes: acc.tel_resource_attributes.v,
        },
        m,
        shown,
        opted_out,
        home,
        dropped: std::sync::OnceLock::new(),
    })
}

fn texts(list: &[(String, Provenance)]) -> Vec<String> {
    list.iter().map(|(t, _)| t.clone()).collect()
}

fn glob_texts(list: &[PathGlob]) -> Vec<String> {
    list.iter().map(|g| g.text.clone()).collect()
}

/// The provenance shown for an accumulated list: its latest entry's.
fn last_prov(list: &[(String, Provenance)], empty: &str) -> Provenance {
    list.last()
        .map_or_else(|| Provenance::default_rule(empty), |(_, p)| p.clone())
}

/// Whether `path` is a canonical absolute path (used by the decision functions).
#[inline]
pub(crate) fn candidate(path: &str) -> Option<Candidate<'_>> {
    glob::is_normalized_absolute(path).then(|| Candidate::from_bytes(path.as_bytes()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pointers() {
        assert!(check_pointer("/path").is_ok());
        assert!(check_pointer("/a~1b/c~0d").is_ok());
        assert!(check_pointer("/").is_ok());
        assert!(check_pointer("").is_err());
        assert!(check_pointer("path").is_err());
        assert!(check_pointer("/a~2").is_err());
        assert!(check_pointer("/a~").is_err());
    }

    #[test]
    fn mime_cover() {
        assert!(mime_covers("*/*", "text/plain"));
        assert!(mime_covers("text/*", "text/plain"));
        assert!(mime_covers("text/*", "text/*"));
        assert!(!mime_covers("text/*", "*/*"));
        assert!(!mime_covers("text/plain", "text/*"));
        assert!(!mime_covers("text/*", "textual/x"));
    }

    #[test]
    fn env_patterns() {
        for ok in ["PATH", "LC_*", "_X1", "*"] {
            assert!(valid_env_pattern(ok), "{ok}");
        }
        for bad in ["", "1X", "A-B", "A*B", "**"] {
            assert!(!valid_env_pattern(bad), "{bad}");
        }
    }

    #[test]
    fn tools_infer_narrows_once_an_operator_set_it() {
        let load = |layers: &[&str]| {
            let mut sources = vec![(
                "builtin:default".to_owned(),
                include_str!("../../policies/default.toml").to_owned(),
            )];
            sources.extend(
                layers
                    .iter()
                    .enumerate()
                    .map(|(i, t)| (format!("l{i}.toml"), format!("version = 1\n{t}"))),
            );
            crate::policy::Policy::from_sources(&sources)
        };
        let p = load(&[]).unwrap();
        assert_eq!(p.tool_infer("read_file").0, ToolInfer::Schema);
        // Over the built-in default, a user may loosen it, for all tools or one.
        let p = load(&[
            "[tools]\ninfer = \"off\"\n[[tools.infer_for]]\ntool = \"fs_*\"\ninfer = \"strict\"",
        ])
        .unwrap();
        assert_eq!(p.tool_infer("search").0, ToolInfer::Off);
        assert_eq!(p.tool_infer("fs_read").0, ToolInfer::Strict);
        let p = load(&["[[tools.infer_for]]\ntool = \"search\"\ninfer = \"off\""]).unwrap();
        assert_eq!(p.tool_infer("search").0, ToolInfer::Off);
        assert_eq!(p.tool_infer("other").0, ToolInfer::Schema);
        // Once an operator set it, later layers only narrow.
        let org = "[tools]\ninfer = \"strict\"";
        let e = load(&[org, "[tools]\ninfer = \"schema\""])
            .unwrap_err()
            .to_string();
        assert!(e.contains("is wider than the earlier"), "{e}");
        let e = load(&[org, "[[tools.infer_for]]\ntool = \"x\"\ninfer = \"off\""])
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("[[tools.infer_for]] infer = \"off\"` is wider"),
            "{e}"
        );
        // The narrowest matching override wins.
        let p = load(&[
            "[[tools.infer_for]]\ntool = \"*\"\ninfer = \"off\"\n[[tools.infer_for]]\ntool = \"run\"\ninfer = \"strict\"",
        ])
        .unwrap();
        assert_eq!(p.tool_infer("run").0, ToolInfer::Strict);
        assert_eq!(p.tool_infer("ls").0, ToolInfer::Off);
        let e = load(&["[[tools.infer_for]]\ninfer = \"off\""])
            .unwrap_err()
            .to_string();
        assert!(e.contains("without `tool`"), "{e}");
    }

    #[test]
    fn the_telemetry_table_is_validated_and_fixed_by_its_first_layer() {
        let load = |layers: &[&str]| {
            let sources: Vec<(String, String)> = layers
                .iter()
                .enumerate()
                .map(|(i, t)| (format!("l{i}.toml"), format!("version = 1\n{t}")))
                .collect();
            crate::policy::Policy::from_sources(&sources)
        };
        let p = load(&["[telemetry]\nendpoint = \"http://localhost:4318\"\n\
                        protocol = \"http/protobuf\"\nservice_name = \"fleet\"\n\
                        resource_attributes = \"team=sec\""])
        .unwrap();
        assert_eq!(
            p.telemetry().endpoint.as_deref(),
            Some("http://localhost:4318")
        );
        assert_eq!(p.telemetry().service_name.as_deref(), Some("fleet"));
        assert_eq!(
            p.telemetry().resource_attributes.as_deref(),
            Some("team=sec")
        );
        assert_eq!(
            load(&[""]).unwrap().telemetry(),
            &TelemetrySettings::default()
        );
        for (bad, says) in [
            ("endpoint = \"https://c:4318\"", "plain HTTP"),
            ("endpoint = \"c:4318\"", "http:// URL"),
            ("protocol = \"grpc\"", "http/protobuf"),
            ("service_name = \" \"", "empty"),
            ("resource_attributes = \"team\"", "key=value"),
            ("endpont = \"http://c:4318\"", "endpoint"),
        ] {
            let err = load(&[&format!("[telemetry]\n{bad}")])
                .unwrap_err()
                .to_string();
            assert!(err.contains(says), "{bad}: {err}");
        }
        // A later layer may repeat the organisation's collector, not move it.
        let org = "[telemetry]\nendpoint = \"http://localhost:4318\"";
        assert!(load(&[org, org]).is_ok());
        let moved = load(&[org, "[telemetry]\nendpoint = \"http://elsewhere:4318\""]);
        assert!(moved.unwrap_err().to_string().contains("conflicts"));
    }

    #[test]
    fn read_only_paths_default_replace_first_and_only_add_later() {
        let load = |layers: &[&str]| {
            let sources: Vec<(String, String)> = layers
                .iter()
                .enumerate()
                .map(|(i, t)| (format!("l{i}.toml"), format!("version = 1\n{t}")))
                .collect();
            crate::policy::Policy::from_sources(&sources).unwrap()
        };
        let none = load(&[""]);
        assert!(none.sandbox().is_read_only_path("/p/.git/hooks/pre-commit"));
        assert!(none.sandbox().is_read_only_path("/p/.git/hooks"));
        assert!(none.sandbox().is_read_only_path("/p/.MCP.json"));
        assert!(!none.sandbox().is_read_only_path("/p/src/main.rs"));
        // The first layer replaces the built-in list.
        let own = load(&["[sandbox]\nread_only_paths = [\"**/Makefile\"]"]);
        assert!(own.sandbox().is_read_only_path("/p/Makefile"));
        assert!(!own.sandbox().is_read_only_path("/p/.vscode/tasks.json"));
        // A later layer adds to the built-in list, never removes from it.
        let later = load(&["", "[sandbox]\nread_only_paths = []"]);
        assert!(later.sandbox().is_read_only_path("/p/.vscode/tasks.json"));
        let more = load(&["", "[sandbox]\nread_only_paths = [\"**/.husky/**\"]"]);
        assert!(more.sandbox().is_read_only_path("/p/.husky/pre-commit"));
        assert!(more.sandbox().is_read_only_path("/p/.claude/settings.json"));
    }

    #[test]
    fn sizes_shown_in_units() {
        assert_eq!(fmt_size(16 << 20), "\"16 MiB\"");
        assert_eq!(fmt_size(1000), "1000");
    }
}
