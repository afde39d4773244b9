//! `rootfence wrap` and `rootfence unwrap` (issue 8).

use std::process::ExitCode;

#[derive(Debug, clap::Args)]
pub struct WrapArgs {
    /// The host configuration file to rewrite.
    #[arg(value_name = "CONFIG")]
    pub config: Option<std::path::PathBuf>,
}

#[derive(Debug, clap::Args)]
pub struct UnwrapArgs {
    /// The host configuration file to restore.
    #[arg(value_name = "CONFIG")]
    pub config: Option<std::path::PathBuf>,
}

pub fn wrap(_args: WrapArgs) -> anyhow::Result<ExitCode> {
    Err(super::not_yet("wrap"))
}

pub fn unwrap(_args: UnwrapArgs) -> anyhow::Result<ExitCode> {
    Err(super::not_yet("unwrap"))
}
