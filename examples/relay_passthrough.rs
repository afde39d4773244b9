//! rootfence's relay with nothing deciding: the same pumps, framing and id bookkeeping as
//! `rootfence run`, with the `PassThrough` interceptor instead of the enforcer. The
//! enforcement benchmark (`scripts/bench-enforce.sh`) measures what the checks add on top of
//! it ("relay-only").
//!
//! Usage: relay_passthrough -- <server command> [args...]

use std::process::ExitCode;
use std::sync::Arc;

use rootfence::relay::{self, PassThrough, RelayConfig};

fn main() -> ExitCode {
    let args: Vec<std::ffi::OsString> = std::env::args_os().skip(1).collect();
    let server = match args.iter().position(|a| a == "--") {
        Some(i) if i + 1 < args.len() => &args[i + 1..],
        _ => {
            eprintln!("usage: relay_passthrough -- <server command> [args...]");
            return ExitCode::from(2);
        }
    };
    let mut command = std::process::Command::new(&server[0]);
    command.args(&server[1..]);
    let config = RelayConfig::new(command);
    // As `rootfence run`: one thread, the relay is I/O-bound.
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(r) => r,
        Err(e) => {
            eprintln!("relay_passthrough: cannot start the async runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    let outcome = runtime.block_on(relay::run(config, Arc::new(PassThrough)));
    runtime.shutdown_background();
    match outcome {
        Ok(o) => ExitCode::from(o.exit_code),
        Err(e) => {
            eprintln!("relay_passthrough: {e}");
            ExitCode::FAILURE
        }
    }
}
