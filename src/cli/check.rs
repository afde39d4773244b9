//! `rootfence check`: URI verdicts against a root set (issue 3).

use std::process::ExitCode;

/// Arguments of `rootfence check`.
#[derive(Debug, clap::Args)]
pub struct CheckArgs {
    /// A root, as a file URI or a path (repeatable).
    #[arg(long = "root", value_name = "URI_OR_PATH")]
    pub roots: Vec<String>,
    /// The URIs to check.
    #[arg(value_name = "URI")]
    pub uris: Vec<String>,
}

pub fn run(_args: CheckArgs) -> anyhow::Result<ExitCode> {
    Err(super::not_yet("check"))
}
