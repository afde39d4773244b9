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

/// The hidden first argument under which rootfence runs as the sandbox launcher.
pub const LAUNCHER_ARG: &str = "__sandbox-exec";

/// Entry point of the sandbox launcher (issue 7).
pub fn launcher_main() -> ExitCode {
    eprintln!("rootfence: error: the sandbox launcher is not implemented in this build yet");
    ExitCode::from(127)
}
