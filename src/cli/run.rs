//! `rootfence run`: the relay around a server command (issue 2 and later).

use std::ffi::OsString;
use std::process::ExitCode;

/// Arguments of `rootfence run`.
#[derive(Debug, clap::Args)]
pub struct RunArgs {
    /// The server command and its arguments, after `--`.
    #[arg(last = true, required = true, value_name = "COMMAND")]
    pub command: Vec<OsString>,
}

pub fn run(_args: RunArgs) -> anyhow::Result<ExitCode> {
    Err(super::not_yet("run"))
}
