//! Layered TOML policies: raw schema, validation with spans, the compiled immutable policy,
//! and decisions that carry their provenance (layer file, line, rule).
//!
//! Owned by issue 4. The schema and every rule are documented in `docs/policy.md`.
//!
//! # Flow
//!
//! 1. `raw`: each file is parsed into toml's spanned tree and walked by hand: unknown keys
//!    and wrong types are collected (all of them, not just the first).
//! 2. `compile`: values are expanded (`~`, `${HOME}`), validated (globs, paths, JSON
//!    pointers, MIME types, schemes), and merged layer by layer. A later layer may only
//!    narrow; widening is an error naming both files and lines.
//! 3. [`Policy`]: immutable, `Send + Sync`; globs compiled once into `globset::GlobSet`s
//!    (path globs always with `literal_separator(true)`; tool names are not paths, see
//!    `glob.rs`). `decide_*` prepare a path once (`globset::Candidate`) and do not allocate.
//!
//! # Example
//!
//! ```
//! use rootfence::policy::{Policy, Reason};
//!
//! let policy = Policy::from_sources(&[(
//!     "org.toml".to_string(),
//!     "version = 1\n[resources]\ndeny = [\"**/.env\"]\n".to_string(),
//! )])
//! .unwrap();
//! let d = policy.decide_resource("file", Some("/srv/app/.env"));
//! assert!(!d.allow);
//! assert_eq!(d.reason, Reason::PolicyDeny);
//! assert_eq!(d.provenance.to_string(), "org.toml:3: resources.deny = \"**/.env\"");
//! ```

mod compile;
mod decision;
mod error;
mod glob;
mod grant;
mod protections;
mod raw;
mod schema;
mod server_spec;
mod settings;
mod show;
pub(crate) mod telemetry;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::audit::chain::sha256_hex;

pub use decision::{ArgKind, Decision, FileJudge, Provenance, Reason, ToolPath};
pub use error::{ErrorKind, PolicyError, PolicyErrors};
pub use grant::{Grant, GrantRefused};
pub use schema::reload_deferred;
pub use server_spec::server_spec;
pub use settings::{
    Access, AuditSettings, CommandRoots, FollowRoots, HardlinkStance, Mode, Network, ReadStance,
    ResourceSettings, RootsFallback, RootsSettings, SandboxMode, SandboxSettings, SchemeStance,
    StaticRoot, SymlinkStance, ToolInfer,
};
pub use telemetry::TelemetrySettings;

use glob::GlobTable;

/// The built-in default policy (`policies/default.toml`), used when no `--policy` is given.
pub const DEFAULT_POLICY: &str = include_str!("../../policies/default.toml");
/// The built-in strict policy (`policies/strict.toml`).
pub const STRICT_POLICY: &str = include_str!("../../policies/strict.toml");

/// The built-in policies, by the name `Policy::load` accepts as `builtin:<name>`.
const BUILTINS: &[(&str, &str)] = &[("default", DEFAULT_POLICY), ("strict", STRICT_POLICY)];

/// A built-in policy by name: its name (static) and text.
pub(crate) fn builtin(name: &str) -> Option<(&'static str, &'static str)> {
    BUILTINS.iter().find(|(n, _)| *n == name).copied()
}

/// The server whose tools the built-in `[[tools.paths]]` rules describe: the reference
/// filesystem server (`@modelcontextprotocol/server-filesystem`), by its `serverInfo.name`.
pub const REFERENCE_FILESYSTEM_SERVER: &str = "secure-filesystem-server";

/// One loaded layer, for `policy show` and the audit log's `session_start`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LayerInfo {
    /// Display name: the path as given, `builtin:<name>`, or the name passed to
    /// [`Policy::from_sources`].
    pub name: String,
    /// The file it was read from, when it was read from a file.
    pub path: Option<PathBuf>,
    /// SHA-256 of the layer's bytes, lowercase hex.
    pub sha256: String,
    /// Stacked under the given files because the first of them did not opt out
    /// (`base = "none"`): the built-in default, not named by the user.
    pub base: bool,
}

/// A compiled, effective policy: immutable, `Send + Sync`, cheap to share in an `Arc`.
#[derive(Debug)]
pub struct Policy {
    pub(crate) layers: Vec<LayerInfo>,
    pub(crate) mode: Mode,
    pub(crate) roots: RootsSettings,
    pub(crate) resources: ResourceSettings,
    pub(crate) audit: AuditSettings,
    pub(crate) sandbox: SandboxSettings,
    pub(crate) telemetry: TelemetrySettings,
    pub(crate) m: Matchers,
    /// The effective value of every declared setting (`schema::SETTINGS` order) with its
    /// origin: what `policy show` lists and what a reload compares.
    pub(crate) effective: Vec<(schema::Value, Provenance)>,
    /// The `base = "none"` line of the first layer, when it opted out of the default.
    pub(crate) opted_out: Option<Provenance>,
    /// The home directory `~` was expanded with.
    pub(crate) home: Option<String>,
    /// The built-in protections this policy lacks, computed on first use.
    pub(crate) dropped: std::sync::OnceLock<Vec<String>>,
}

/// One `[[tools.paths]]` entry, compiled.
#[derive(Debug)]
pub(crate) struct ToolPaths {
    /// The tool-name glob as written.
    pub(crate) tool: String,
    /// The server it describes (`None`: every server).
    pub(crate) server: Option<globset::GlobMatcher>,
    pub(crate) paths: Vec<ToolPath>,
}

/// An allow-list of one layer: a path must match every layer's list.
#[derive(Debug)]
pub(crate) struct AllowTable {
    pub(crate) table: GlobTable,
    /// Provenance reported when nothing in this list matches.
    pub(crate) miss: Provenance,
}

/// The compiled matchers behind the `decide_*` methods.
#[derive(Debug)]
pub(crate) struct Matchers {
    pub(crate) root_deny: GlobTable,
    /// `roots.other_homes`: other users' homes, refused unless inside `own_home`.
    pub(crate) root_other_homes: GlobTable,
    /// The user's own home (`HOME`, normalized), if usable.
    pub(crate) own_home: Option<String>,
    pub(crate) root_allow: Vec<AllowTable>,
    pub(crate) res_deny: GlobTable,
    pub(crate) res_allow: Vec<AllowTable>,
    pub(crate) scheme_prov: Provenance,
    pub(crate) tool_deny: GlobTable,
    /// Tools marked as writing; provenance names the `read_only` setting too.
    pub(crate) tool_writing: GlobTable,
    /// Tools marked as writing, whatever `read_only` says (their path arguments may not
    /// name a `sandbox.read_only_paths` match).
    pub(crate) tool_writes: GlobTable,
    pub(crate) read_only: bool,
    pub(crate) tool_paths_set: globset::GlobSet,
    pub(crate) tool_paths: Vec<ToolPaths>,
    /// `tools.infer` and where it was set.
    pub(crate) infer: (settings::ToolInfer, Provenance),
    /// `[[tools.infer_for]]`: tool glob as written, its matcher, stance, origin.
    pub(crate) infer_for: Vec<(
        String,
        globset::GlobMatcher,
        settings::ToolInfer,
        Provenance,
    )>,
    pub(crate) max_bytes_prov: Provenance,
    pub(crate) mime_prov: Provenance,
    pub(crate) default: Provenance,
    pub(crate) not_canonical: Provenance,
}

impl Policy {
    /// Loads the policy stack `run`, `check`, `policy explain|show|check` and `wrap` use:
    /// the files in order (e.g. org, then user, then project), stacked on the built-in
    /// default unless the first file says `base = "none"` (or names another built-in, or is
    /// a built-in itself). With no files, the built-in default alone.
    ///
    /// A path spelled `builtin:default` or `builtin:strict` loads the built-in policy of
    /// that name instead of a file. `~` and `${HOME}` are expanded with the current `HOME`.
    /// Every problem in every file is reported at once.
    pub fn load(files: &[PathBuf]) -> Result<Policy, PolicyErrors> {
        let home = std::env::var("HOME").ok();
        Self::load_with_home(files, home.as_deref())
    }

    /// [`load`](Self::load) with an explicit home directory (`None`: `~` is an error in the
    /// files; the built-in layers fall back to a home that does not exist).
    pub fn load_with_home(files: &[PathBuf], home: Option<&str>) -> Result<Policy, PolicyErrors> {
        if files.is_empty() {
            return Ok(Self::builtin_default_with_home(home));
        }
        let (inputs, mut errs) = read_layers(files);
        if !errs.is_empty() {
            // Still check the readable files, so every problem shows in one run.
            if let Err(PolicyErrors(more)) = compile::compile(inputs, home, true) {
                errs.extend(more);
            }
            return Err(PolicyErrors(errs));
        }
        compile::compile(inputs, home, true)
    }

    /// [`load`](Self::load) with one more layer after the files, given as TOML text: a
    /// command line's narrowing options (`check --no-symlinks` is `roots.symlinks =
    /// "never"`), judged like any later layer.
    pub fn load_then(files: &[PathBuf], name: &str, text: &str) -> Result<Policy, PolicyErrors> {
        let home = std::env::var("HOME").ok();
        let (mut inputs, errs) = read_layers(files);
        if !errs.is_empty() {
            return Err(PolicyErrors(errs));
        }
        if inputs.is_empty() {
            inputs.push(compile::LayerInput::builtin(
                "default",
                DEFAULT_POLICY,
                true,
            ));
        }
        inputs.push(compile::LayerInput::new(name.into(), None, text.to_owned()));
        compile::compile(inputs, home.as_deref(), true)
    }

    /// Compiles layers given as `(display name, TOML text)`, in order, exactly as given: no
    /// implicit base (a first layer's explicit `base = "builtin:<name>"` is honoured).
    pub fn from_sources(layers: &[(String, String)]) -> Result<Policy, PolicyErrors> {
        let home = std::env::var("HOME").ok();
        Self::from_sources_with_home(layers, home.as_deref())
    }

    /// [`from_sources`](Self::from_sources) with an explicit home directory.
    pub fn from_sources_with_home(
        layers: &[(String, String)],
        home: Option<&str>,
    ) -> Result<Policy, PolicyErrors> {
        let inputs = layers
            .iter()
            .map(|(name, text)| compile::LayerInput::new(name.as_str().into(), None, text.clone()))
            .collect();
        compile::compile(inputs, home, false)
    }

    /// The built-in default policy (`policies/default.toml`).
    ///
    /// # Panics
    ///
    /// Never in a tested build: the embedded file is checked by the test suite. If `HOME`
    /// is unusable, the `~` rules cannot be expanded, so this falls back to `/nonexistent`
    /// as home rather than dropping them.
    pub fn builtin_default() -> Policy {
        let home = std::env::var("HOME").ok();
        Self::builtin_default_with_home(home.as_deref())
    }

    fn builtin_default_with_home(home: Option<&str>) -> Policy {
        let home =
            home.filter(|h| glob::is_normalized_absolute(h.trim_end_matches('/')) || *h == "/");
        let home = home.unwrap_or("/nonexistent");
        let layer = compile::LayerInput::builtin("default", DEFAULT_POLICY, false);
        match compile::compile(vec![layer], Some(home), false) {
            Ok(p) => p,
            Err(e) => panic!("the built-in default policy does not compile: {e}"),
        }
    }

    /// The `base = "none"` line of the first layer, when the stack opted out of the
    /// built-in default.
    pub fn opted_out(&self) -> Option<&Provenance> {
        self.opted_out.as_ref()
    }

    /// The protections of the built-in default this policy does not have: its secret deny
    /// globs (`resources.deny`) and the path checks of the reference filesystem server's
    /// tools (`[[tools.paths]]`, the CVE-2025-53109/53110 surface), one line each. Empty
    /// when the stack includes the built-in default (the usual case) or repeats them.
    pub fn dropped_protections(&self) -> &[String] {
        self.dropped.get_or_init(|| {
            if self.layers.iter().any(|l| l.name == "builtin:default") {
                return Vec::new();
            }
            let reference = Self::builtin_default_with_home(self.home.as_deref());
            protections::dropped(&reference, self)
        })
    }

    /// Enforce or audit.
    pub fn mode(&self) -> Mode {
        self.mode
    }

    /// Whether a decision blocks: a denial in enforce mode. In audit mode nothing blocks.
    pub fn blocks(&self, decision: &Decision<'_>) -> bool {
        !decision.allow && self.mode == Mode::Enforce
    }

    /// `[roots]` settings.
    pub fn roots(&self) -> &RootsSettings {
        &self.roots
    }

    /// `[resources]` settings.
    pub fn resources(&self) -> &ResourceSettings {
        &self.resources
    }

    /// `[audit]` settings.
    pub fn audit(&self) -> &AuditSettings {
        &self.audit
    }

    /// `[sandbox]` settings.
    pub fn sandbox(&self) -> &SandboxSettings {
        &self.sandbox
    }

    /// `[telemetry]` settings.
    pub fn telemetry(&self) -> &TelemetrySettings {
        &self.telemetry
    }

    /// The layers, in order, with the SHA-256 of each.
    pub fn layers(&self) -> &[LayerInfo] {
        &self.layers
    }
}

/// Reads each file of a stack (a `builtin:<name>` reads the built-in): the layers read, and
/// an error for each that could not be.
fn read_layers(files: &[PathBuf]) -> (Vec<compile::LayerInput>, Vec<PolicyError>) {
    let mut inputs = Vec::with_capacity(files.len() + 1);
    let mut errs = Vec::new();
    for path in files {
        let name: Arc<str> = path.display().to_string().into();
        match read_layer(path) {
            Ok((text, from_file)) => inputs.push(compile::LayerInput {
                builtin: !from_file,
                ..compile::LayerInput::new(name, from_file.then(|| path.clone()), text)
            }),
            Err((message, hint)) => {
                errs.push(PolicyError::unlocated(&name, ErrorKind::Io, message).hint(hint))
            }
        }
    }
    (inputs, errs)
}

/// Reads one layer's text; `builtin:<name>` is served from the binary. Returns the text and
/// whether it came from a file, or the message and hint of why it cannot be read.
///
/// # Ambient authority
///
/// Policy files are operator configuration named on the command line and read once,
/// before any session exists, so they are read by path here rather than beneath a root.
fn read_layer(path: &Path) -> Result<(String, bool), (String, &'static str)> {
    let shown = path.display();
    if let Some(name) = path.to_str().and_then(|s| s.strip_prefix("builtin:")) {
        return match builtin(name) {
            Some((_, text)) => Ok((text.to_string(), false)),
            None => Err((
                format!("unknown built-in policy `{shown}`"),
                "the built-ins are builtin:default and builtin:strict",
            )),
        };
    }
    let bytes = std::fs::read(path).map_err(|e| match e.kind() {
        std::io::ErrorKind::NotFound => (
            format!("policy file {shown} does not exist"),
            "check the path given to --policy, or use builtin:default",
        ),
        std::io::ErrorKind::IsADirectory => (
            format!("policy {shown} is a directory"),
            "give a policy file (a .toml file)",
        ),
        _ => (
            format!("cannot read policy file: {e}"),
            "check the path given to --policy and its permissions",
        ),
    })?;
    String::from_utf8(bytes).map(|t| (t, true)).map_err(|_| {
        (
            "policy file is not UTF-8".to_string(),
            "save it as UTF-8 text",
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn policy_is_send_sync() {
        fn check<T: Send + Sync>() {}
        check::<Policy>();
        check::<Arc<Policy>>();
    }

    #[test]
    fn builtins_compile() {
        let p = Policy::builtin_default();
        assert_eq!(p.layers()[0].name, "builtin:default");
        assert_eq!(p.layers()[0].sha256, sha256_hex(DEFAULT_POLICY.as_bytes()));
        Policy::load_with_home(&[PathBuf::from("builtin:strict")], Some("/home/u")).unwrap();
        let e = Policy::load_with_home(&[PathBuf::from("builtin:nope")], Some("/h")).unwrap_err();
        assert_eq!(e.0[0].kind, ErrorKind::Io);
    }
}
