//! `rootfence audit verify|summary|show` (issue 5).

use std::process::ExitCode;

#[derive(Debug, clap::Subcommand)]
pub enum AuditCommand {
    /// Check the hash chain of audit log files, in rotation order.
    Verify {
        #[arg(value_name = "FILE", required = true)]
        files: Vec<std::path::PathBuf>,
    },
}

pub fn run(_cmd: AuditCommand) -> anyhow::Result<ExitCode> {
    Err(super::not_yet("audit"))
}
