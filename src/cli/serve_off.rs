//! `rootfence serve` in a build without the `serve` cargo feature: the subcommand is still
//! listed, takes any arguments, and fails with what to do, rather than clap's "unrecognized
//! subcommand", which would not say that the binary, not the user, is missing something.

use std::ffi::OsString;
use std::process::ExitCode;

use anyhow::bail;

/// Serves an MCP server over Streamable HTTP: not built into this binary (the `serve` cargo
/// feature is off); reinstall with default features to use it.
#[derive(Debug, clap::Args)]
pub struct ServeArgs {
    /// Whatever `rootfence serve` would take (ignored: serving is not built in).
    #[arg(trailing_var_arg = true, allow_hyphen_values = true, num_args = 0.., hide = true)]
    pub args: Vec<OsString>,
}

/// Always fails: names the missing feature and how to get it.
pub fn serve(_args: ServeArgs) -> anyhow::Result<ExitCode> {
    bail!(
        "`rootfence serve` is not built into this binary (it was built without the `serve` \
         cargo feature); reinstall with default features (`cargo install --path .`) or build \
         with `--features serve`; `rootfence run` serves stdio hosts without it"
    )
}
