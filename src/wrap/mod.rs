//! Rewriting host configuration files (Claude Desktop, Claude Code, VS Code, Cursor) so that
//! every stdio server runs behind `rootfence run`, and restoring them exactly.
//!
//! Owned by issue 8. The user-facing description is `docs/wrap.md`.
//!
//! # Flow
//!
//! 1. `jsonc`: the file is parsed into a tree that records the byte span of every token
//!    (JSON plus comments and trailing commas, as VS Code's `mcp.json` allows).
//! 2. `derive`: what the entry itself says the server needs (its env names, the
//!    directories on its command line, the files its env values name) becomes `--env`,
//!    `--root`, `--read`, `--write` options.
//! 3. `edit`: the server maps are found (`mcpServers`, `servers`, `mcp.servers`,
//!    `projects.<dir>.mcpServers`), each entry is classified (stdio, remote, already
//!    wrapped, malformed), and the wrap or unwrap is planned as byte-range replacements.
//!    Nothing outside those ranges changes, so comments, key order, indentation, CRLF and
//!    escapes survive, and unwrap gives back the original bytes.
//! 4. `diff`: a unified diff built from the same replacements.
//! 5. `write`: the atomic replacement of the file, with a backup (used by the CLI; the
//!    planning functions never touch the filesystem).
//!
//! # Example
//!
//! ```
//! use rootfence::wrap::{self, UnwrapOptions, WrapOptions};
//!
//! let original = r#"{"mcpServers": {"fs": {"command": "npx", "args": ["-y", "server-fs"]}}}"#;
//! let opts = WrapOptions {
//!     rootfence: "/usr/local/bin/rootfence".into(),
//!     policies: vec!["/etc/rootfence/org.toml".into()],
//!     ..WrapOptions::default()
//! };
//! let wrapped = wrap::wrap_config(original, &opts).unwrap();
//! assert_eq!(
//!     wrapped.text,
//!     r#"{"mcpServers": {"fs": {"command": "/usr/local/bin/rootfence", "args": ["run", "--policy", "/etc/rootfence/org.toml", "--", "npx", "-y", "server-fs"]}}}"#
//! );
//! // Wrapping again changes nothing; unwrapping gives the original bytes back.
//! assert!(!wrap::wrap_config(&wrapped.text, &opts).unwrap().changed);
//! let restored = wrap::unwrap_config(&wrapped.text, &UnwrapOptions::default()).unwrap();
//! assert_eq!(restored.text, original);
//! ```

mod derive;
mod diff;
mod edit;
mod hosts;
mod jsonc;
pub mod learn;
mod write;

pub use derive::{Assumed, DeriveContext, Derived, command_roots};
pub use edit::{
    NO_ARGS_MARKER, is_rootfence as is_rootfence_command, plan_unwrap as unwrap_config,
    plan_wrap as wrap_config,
};
pub use hosts::{Host, HostEnv, LocateError, Os, config_path};
pub use write::{WriteError, WriteReport, replace_file};

/// How to wrap.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct WrapOptions {
    /// The command the host should start: an absolute path to rootfence, or `rootfence`
    /// to find it on the host's `PATH`.
    pub rootfence: String,
    /// `--policy` values, in layer order, exactly as they should appear (absolute paths
    /// or `builtin:<name>`).
    pub policies: Vec<String>,
    /// More `rootfence run` options, placed after the policies.
    pub run_args: Vec<String>,
    /// Only these server names (all when empty).
    pub servers: Vec<String>,
    /// Replace rootfence's command and options in entries already wrapped differently.
    pub rewrap: bool,
    /// Derive options from each entry (`--env` for its env names, `--root` for the
    /// directories its command line names, `--read`/`--write` for paths in its env
    /// values; see `docs/wrap.md`). `None` derives nothing. Derivation reads the
    /// filesystem.
    pub derive: Option<DeriveContext>,
    /// Grants learned by trying the servers (`rootfence wrap --learn`), by server name:
    /// added to that entry's options after what derivation gives, each with its reason
    /// (kept in [`Derived::learned`] for the report).
    pub learned: Vec<(String, Vec<Learned>)>,
    /// Grants from rootfence's built-in profile catalogue (`src/sandbox/profiles.toml`),
    /// by server name, already checked against the policy: added after what derivation
    /// gives (kept in [`Derived::catalogue`] for the report).
    pub catalogue: Vec<(String, Vec<Learned>)>,
}

/// A grant `rootfence wrap --learn` found a server needs to start (see `docs/wrap.md`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Learned {
    /// `--read` or `--write`.
    pub flag: &'static str,
    /// The absolute path granted.
    pub path: String,
    /// Why: what the server was denied, and what was done.
    pub why: String,
}

/// How to unwrap.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct UnwrapOptions {
    /// Only these server names (all when empty).
    pub servers: Vec<String>,
}

/// The result of planning a wrap or an unwrap. Nothing has been written.
#[derive(Debug, Clone)]
pub struct Outcome {
    /// The new text of the file.
    pub text: String,
    /// Whether `text` differs from the input.
    pub changed: bool,
    /// What happened to each server entry considered, in file order.
    pub servers: Vec<ServerReport>,
    pub(crate) edits: Vec<edit::Edit>,
}

impl Outcome {
    /// A unified diff of the change (empty when nothing changed), labelled with `path`.
    pub fn diff(&self, original: &str, path: &str) -> String {
        diff::unified(path, original, &self.edits)
    }
}

/// One server entry and what was done to it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerReport {
    /// The entry's key.
    pub name: String,
    /// Empty for a top-level map; `project <dir>` for a Claude Code local-scope map.
    pub scope: String,
    /// 1-based line of the entry's key.
    pub line: usize,
    /// The server's own command (after `--` for a wrapped entry), when known.
    pub command: Option<String>,
    /// The options derived from the entry (empty without [`WrapOptions::derive`]).
    pub derived: Derived,
    /// The server's own command line (after `--` for a wrapped entry), as the entry
    /// spells it (host variables unexpanded).
    pub server_argv: Vec<String>,
    /// The entry's `env`, names with their string values.
    pub env_values: Vec<(String, String)>,
    /// What happened.
    pub action: Action,
}

impl ServerReport {
    /// `name`, or `name (project /dir)`.
    pub fn label(&self) -> String {
        edit::display_name(&self.name, &self.scope)
    }
}

/// What happened to one entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Action {
    /// Wrapped now.
    Wrapped,
    /// Already wrapped exactly as asked: unchanged.
    AlreadyWrapped,
    /// Wrapped with other options, replaced (`--rewrap`).
    Rewrapped,
    /// Wrapped with other options and left alone; the text says how it is wrapped.
    WrappedDifferently(String),
    /// Restored by unwrap.
    Unwrapped,
    /// Unwrap found an entry that is not wrapped.
    NotWrapped,
    /// A remote server (URL): rootfence relays stdio only, so it is left alone.
    Remote(String),
    /// Nothing to do (no command and no URL).
    Skipped(String),
    /// Could not be handled; the entry is unchanged and the text says why.
    Problem(String),
}

impl Action {
    /// A stable one-word name (for tests and scripts).
    pub fn kind(&self) -> &'static str {
        match self {
            Action::Wrapped => "wrapped",
            Action::AlreadyWrapped => "already-wrapped",
            Action::Rewrapped => "rewrapped",
            Action::WrappedDifferently(_) => "wrapped-differently",
            Action::Unwrapped => "unwrapped",
            Action::NotWrapped => "not-wrapped",
            Action::Remote(_) => "remote",
            Action::Skipped(_) => "skipped",
            Action::Problem(_) => "problem",
        }
    }

    /// Whether the entry runs behind rootfence now (wrapped by this run or before).
    pub fn is_wrapped(&self) -> bool {
        matches!(
            self,
            Action::Wrapped | Action::Rewrapped | Action::AlreadyWrapped
        )
    }

    /// Whether the entry did not end up in the state asked for.
    pub fn is_problem(&self) -> bool {
        matches!(self, Action::Problem(_) | Action::WrappedDifferently(_))
    }
}

/// Why a configuration could not be wrapped or unwrapped. Nothing was changed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum WrapError {
    /// Not JSON (nor JSONC).
    #[error("invalid JSON at line {line}, column {column}: {message}")]
    Syntax {
        /// 1-based line.
        line: usize,
        /// 1-based column (characters).
        column: usize,
        /// What is wrong.
        message: String,
    },
    /// Valid JSON, but not a host configuration.
    #[error(
        "not recognised as an MCP host configuration: {found}; expected `mcpServers` (Claude Desktop, Claude Code, Cursor) or `servers` (VS Code) holding the server entries"
    )]
    NotRecognised {
        /// What was found instead.
        found: String,
    },
    /// A key appears twice in an object rootfence reads.
    #[error(
        "duplicate key \"{key}\" at line {line}, column {column}: the host would use only the last one, so rootfence will not edit this file; remove the duplicate and try again"
    )]
    DuplicateKey {
        /// The key.
        key: String,
        /// 1-based line of the second occurrence.
        line: usize,
        /// 1-based column.
        column: usize,
    },
    /// A `--server` name matches no entry.
    #[error(
        "no server named {} in this file; the servers are: {}",
        missing.iter().map(|n| format!("`{n}`")).collect::<Vec<_>>().join(", "),
        if available.is_empty() { "(none)".to_string() } else { available.join(", ") }
    )]
    ServerNotFound {
        /// The names not found.
        missing: Vec<String>,
        /// Every server in the file.
        available: Vec<String>,
    },
}
