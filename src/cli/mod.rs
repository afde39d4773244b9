//! Subcommand front ends: each file parses its arguments (clap derive), calls the library,
//! and turns the outcome into output and an exit code.

pub mod audit;
pub mod check;
pub mod completions;
pub mod policy;
pub mod run;
pub mod sandbox;
#[cfg(feature = "serve")]
pub mod serve;
// Without the `serve` feature, `rootfence serve` still parses and says how to get it.
#[cfg(not(feature = "serve"))]
#[path = "serve_off.rs"]
pub mod serve;
pub mod wrap;

use tracing_subscriber::EnvFilter;

/// Sends diagnostics to stderr, never stdout: stdout is the protocol.
pub fn init_diagnostics(level: &str) {
    let filter = EnvFilter::try_from_default_env()
        .or_else(|_| EnvFilter::try_new(level))
        .unwrap_or_else(|_| EnvFilter::new("warn"));
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        // Hosts capture stderr into log files: colour codes only for a terminal.
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .with_target(false)
        .init();
}

/// Whether an error is a write to a stdout whose reader has gone (EPIPE): every command's
/// output is written with `?`, so a closed pipe ends it here instead of in a panic.
pub fn broken_pipe(err: &anyhow::Error) -> bool {
    err.chain().any(|e| {
        e.downcast_ref::<std::io::Error>()
            .is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe)
    })
}
