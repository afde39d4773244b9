//! `rootfence policy check|explain|show` (issue 4).

use std::process::ExitCode;

#[derive(Debug, clap::Subcommand)]
pub enum PolicyCommand {
    /// Validate policy files; report every error with file, line and column.
    Check {
        #[arg(value_name = "FILE", required = true)]
        files: Vec<std::path::PathBuf>,
    },
}

pub fn run(_cmd: PolicyCommand) -> anyhow::Result<ExitCode> {
    Err(super::not_yet("policy"))
}
