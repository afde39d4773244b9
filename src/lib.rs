//! rootfence: a security proxy for the Model Context Protocol (MCP).
//!
//! rootfence runs an untrusted MCP server as its child, relays newline-delimited JSON-RPC
//! between the host (on rootfence's stdin/stdout) and the server (on the child's pipes), and
//! enforces root boundaries on every URI that crosses it.
//!
//! # Layout
//!
//! - [`jsonrpc`]: bounded line framing, the strict envelope scan (duplicate keys rejected,
//!   ids kept byte-exact), error codes and locally built responses.
//! - [`mcp`]: method names, protocol revisions, and typed views of the messages rootfence
//!   intercepts.
//! - [`relay`]: session state, one pump per direction, the interception point, the child's
//!   lifecycle and shutdown.
//! - [`uri`]: strict `file:` URI parsing and the canonical form.
//! - [`roots`]: the effective root set, one capability (`cap_std::fs::Dir`) per root.
//! - [`fsaccess`]: the only place that opens files.
//! - [`policy`]: raw TOML, validated and compiled policy, decisions with provenance.
//! - [`sandbox`]: Landlock confinement of the child (with the denied paths inside the roots
//!   hidden from it) and its enforcement report.
//! - [`toolargs`]: which tool arguments carry paths, inferred from the tools' own schemas
//!   (pure; the enforcer judges what it lists).
//! - [`tripwire`]: fingerprints of the denied files inside the roots, searched in every
//!   message from the server.
//! - [`audit`]: the hash-chained JSON Lines audit log and its readers.
//! - [`telemetry`]: OpenTelemetry (spans, metrics, audit records as logs) over OTLP/HTTP,
//!   off unless a collector is named; fed through the relay's [`relay::Observer`]. The SDK
//!   is built only with the `otel` cargo feature (on by default).
//! - [`enforce`]: the relay's interceptor that checks every URI crossing rootfence against
//!   the effective roots and the policy (see `docs/enforcement.md`), learns the roots, and
//!   decides when the server (re)starts so its OS sandbox follows them.
//! - [`launch`]: how a server generation is confined and started for a set of roots.
//! - [`setup`]: what one guarded session is built from (policy, roots, launcher, audit),
//!   shared by `rootfence run` and `rootfence serve`.
//! - `serve`: `rootfence serve`, the same enforcement over MCP Streamable HTTP (the `serve`
//!   cargo feature, on by default).
//! - [`wrap`]: rewriting host configuration files so their servers run behind rootfence.
//! - [`stderr`]: rootfence's own stderr messages, each in one write (the server shares the
//!   stream).
//!
//! The binary (`src/main.rs`, `src/cli/`) is a thin clap front end over these modules.

pub mod audit;
mod coded;
pub mod enforce;
pub mod fsaccess;
pub mod jsonrpc;
pub mod launch;
pub mod mcp;
pub mod policy;
pub mod relay;
pub mod roots;
pub mod sandbox;
#[cfg(feature = "serve")]
pub mod serve;
pub mod setup;
pub mod stderr;
pub mod telemetry;
pub mod toolargs;
pub mod tripwire;
pub mod uri;
pub mod wrap;

/// Locks `m`, taking the data even when a thread panicked while holding it: a panic in one
/// session (a bug) must not take every other session, and the proxy, down with it.
pub fn relock<T>(m: &std::sync::Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}
