//! The `rootfence` command line: argument parsing (clap), diagnostics set-up (stderr only:
//! stdout carries the protocol), and dispatch to one module per subcommand in `src/cli/`.
//! `anyhow` is used here and in `src/cli/` only; the library has typed errors.

mod cli;

use std::process::ExitCode;

use clap::{CommandFactory, Parser, Subcommand};

/// A security proxy for MCP servers: it relays a server's stdio and enforces root boundaries
/// on every URI that crosses it.
///
/// Put `rootfence run [options] --` in front of the server command in your MCP host's
/// configuration. The host talks to rootfence exactly as it would talk to the server.
#[derive(Debug, Parser)]
#[command(
    name = "rootfence",
    version,
    propagate_version = true,
    max_term_width = 100
)]
struct Cli {
    /// Diagnostics level on stderr: error, warn, info, debug or trace. RUST_LOG, when set,
    /// takes precedence and may use full filter syntax.
    #[arg(long, global = true, value_name = "LEVEL", default_value = "warn")]
    log_level: String,

    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Run an MCP server behind rootfence, relaying its stdio.
    Run(cli::run::RunArgs),
    /// Serve an MCP server over Streamable HTTP behind rootfence.
    Serve(Box<cli::serve::ServeArgs>),
    /// Check URIs against a set of roots and print one JSON verdict per URI.
    Check(cli::check::CheckArgs),
    /// Validate, explain and show policies.
    #[command(subcommand)]
    Policy(cli::policy::PolicyCommand),
    /// Verify, summarise and list audit logs.
    #[command(subcommand)]
    Audit(cli::audit::AuditCommand),
    /// Inspect the OS sandbox rootfence puts around servers.
    #[command(subcommand)]
    Sandbox(cli::sandbox::SandboxCommand),
    /// Rewrite a host configuration so its stdio servers run behind rootfence.
    Wrap(cli::wrap::WrapArgs),
    /// Restore a host configuration rewritten by `rootfence wrap`.
    Unwrap(cli::wrap::UnwrapArgs),
    /// Print a shell completion script (bash, zsh, fish, elvish, powershell).
    Completions(cli::completions::CompletionsArgs),
    /// Print the man page generated from this command line.
    Man(cli::completions::ManArgs),
}

fn main() -> ExitCode {
    // The sandbox launcher: rootfence re-executes itself under this hidden name to confine
    // itself and then exec the server, so confinement never happens in rootfence proper.
    // It is checked before clap so the launcher does no more work than it must.
    if std::env::args_os().nth(1).as_deref()
        == Some(std::ffi::OsStr::new(rootfence::sandbox::LAUNCHER_ARG))
    {
        return rootfence::sandbox::launcher::launcher_main();
    }
    let cli = Cli::parse();
    cli::init_diagnostics(&cli.log_level);
    let result = match cli.command {
        Command::Run(args) => cli::run::run(args),
        Command::Serve(args) => cli::serve::serve(*args),
        Command::Check(args) => cli::check::run(args),
        Command::Policy(cmd) => cli::policy::run(cmd),
        Command::Audit(cmd) => cli::audit::run(cmd),
        Command::Sandbox(cmd) => cli::sandbox::run(cmd),
        Command::Wrap(args) => cli::wrap::wrap(args),
        Command::Unwrap(args) => cli::wrap::unwrap(args),
        Command::Completions(args) => cli::completions::completions(args, Cli::command()),
        Command::Man(args) => cli::completions::man(args, Cli::command()),
    };
    match result {
        Ok(code) => code,
        // Whoever read our stdout went away (`rootfence policy show | head -1`): nothing
        // is left to tell them, so exit quietly, as ripgrep does.
        Err(err) if cli::broken_pipe(&err) => ExitCode::SUCCESS,
        Err(err) => {
            // `{:#}` prints the whole cause chain on one line, as ripgrep does.
            rootfence::stderr_line!("rootfence: error: {err:#}");
            ExitCode::from(2)
        }
    }
}
