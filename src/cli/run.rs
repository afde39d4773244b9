//! `rootfence run`: the relay around a server command.

use std::ffi::OsString;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context as _;
use rootfence::relay::{self, PassThrough, RelayConfig};

/// Runs an MCP server behind rootfence.
///
/// rootfence starts the server command as its child, relays JSON-RPC between your MCP host
/// (on rootfence's stdin/stdout) and the server (on the child's stdin/stdout), and passes the
/// server's stderr through. It exits with the server's exit status (128 + signal when the
/// server was killed).
///
/// Example, as the command of an MCP server entry in a host configuration:
///
///     rootfence run -- npx -y @modelcontextprotocol/server-filesystem /home/me/project
#[derive(Debug, clap::Args)]
#[command(verbatim_doc_comment)]
pub struct RunArgs {
    /// Longest JSON-RPC message accepted from either side (bytes; suffixes KiB, MiB, GiB).
    /// Longer messages are rejected, never truncated.
    #[arg(long, value_name = "SIZE", default_value = "64MiB", value_parser = parse_size)]
    pub max_message_size: usize,

    /// After the host closes rootfence's stdin, how long the server gets to exit after its
    /// stdin is closed, and again after SIGTERM, before SIGKILL (e.g. 500ms, 2s).
    #[arg(long, value_name = "DURATION", default_value = "2s", value_parser = parse_duration)]
    pub shutdown_grace: Duration,

    /// No effect. `rootfence wrap` writes it into a host entry that had no `args` key, so
    /// that `rootfence unwrap` removes the key again instead of leaving an empty one.
    #[arg(long, hide = true)]
    #[allow(dead_code)] // read from host configurations by `unwrap`, never here
    pub wrapped_without_args: bool,

    /// The server command and its arguments, after `--`.
    #[arg(last = true, required = true, value_name = "COMMAND")]
    pub command: Vec<OsString>,
}

pub fn run(args: RunArgs) -> anyhow::Result<ExitCode> {
    let (program, rest) = args
        .command
        .split_first()
        .context("no server command given; put it after `--`")?;
    let mut command = std::process::Command::new(program);
    command.args(rest);
    let mut config = RelayConfig::new(command);
    config.max_line = args.max_message_size;
    config.shutdown_grace = args.shutdown_grace;

    // One thread: the relay is two pumps and two writers, all I/O-bound; a single-threaded
    // runtime keeps every hand-off on one core with no cross-thread wake-ups.
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    let outcome = runtime.block_on(relay::run(config, Arc::new(PassThrough)));
    // A read of a terminal stdin may still be parked on a blocking thread; don't wait for it.
    runtime.shutdown_background();
    let outcome = outcome?;
    tracing::debug!(
        cause = outcome.cause.as_str(),
        exit_code = outcome.exit_code,
        "session ended"
    );
    Ok(ExitCode::from(outcome.exit_code))
}

/// Parses `1048576`, `64MiB`, `512KiB`, `1GiB` (also `K`/`M`/`G` as binary units).
pub fn parse_size(s: &str) -> Result<usize, String> {
    let s = s.trim();
    let split = s.find(|c: char| !c.is_ascii_digit()).unwrap_or(s.len());
    let (digits, unit) = s.split_at(split);
    let n: usize = digits
        .parse()
        .map_err(|_| format!("invalid size `{s}`; use e.g. 1048576, 512KiB or 64MiB"))?;
    let mult: usize = match unit.trim() {
        "" | "B" => 1,
        "K" | "KiB" => 1 << 10,
        "M" | "MiB" => 1 << 20,
        "G" | "GiB" => 1 << 30,
        other => return Err(format!("unknown size unit `{other}`; use KiB, MiB or GiB")),
    };
    let size = n
        .checked_mul(mult)
        .ok_or_else(|| format!("size `{s}` is too large"))?;
    if size == 0 {
        return Err("size must be at least 1 byte".into());
    }
    Ok(size)
}

/// Parses `250ms`, `2s`, `1m`.
pub fn parse_duration(s: &str) -> Result<Duration, String> {
    let s = s.trim();
    let split = s.find(|c: char| !c.is_ascii_digit()).unwrap_or(s.len());
    let (digits, unit) = s.split_at(split);
    let n: u64 = digits
        .parse()
        .map_err(|_| format!("invalid duration `{s}`; use e.g. 500ms, 2s or 1m"))?;
    match unit.trim() {
        "ms" => Ok(Duration::from_millis(n)),
        "s" | "" => Ok(Duration::from_secs(n)),
        "m" => Ok(Duration::from_secs(n.saturating_mul(60))),
        other => Err(format!("unknown duration unit `{other}`; use ms, s or m")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_and_durations() {
        assert_eq!(parse_size("64MiB"), Ok(64 << 20));
        assert_eq!(parse_size("512K"), Ok(512 << 10));
        assert_eq!(parse_size("100"), Ok(100));
        assert!(parse_size("0").is_err());
        assert!(parse_size("12XB").is_err());
        assert!(parse_size("MiB").is_err());
        assert_eq!(parse_duration("500ms"), Ok(Duration::from_millis(500)));
        assert_eq!(parse_duration("2s"), Ok(Duration::from_secs(2)));
        assert_eq!(parse_duration("1m"), Ok(Duration::from_secs(60)));
        assert!(parse_duration("2h").is_err());
    }
}
