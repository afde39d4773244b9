//! `rootfence sandbox probe` (issue 7).

use std::process::ExitCode;

#[derive(Debug, clap::Subcommand)]
pub enum SandboxCommand {
    /// Run a command confined and report which paths it was denied.
    Probe {
        #[arg(last = true, required = true, value_name = "COMMAND")]
        command: Vec<std::ffi::OsString>,
    },
}

pub fn run(_cmd: SandboxCommand) -> anyhow::Result<ExitCode> {
    Err(super::not_yet("sandbox"))
}
