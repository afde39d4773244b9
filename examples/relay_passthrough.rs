//! rootfence's relay with nothing deciding: the same pumps, framing and id bookkeeping as
//! `rootfence run`, with the `PassThrough` interceptor instead of the enforcer. The
//! enforcement benchmark (`scripts/bench-enforce.sh`) measures what the checks add on top of
//! it ("relay-only").
//!
//! With `--floor ROOT` it is the benchmark's "floor" chain instead: the same relay, plus,
//! for each host `resources/read` of a `file:` URI inside ROOT, exactly the work no check
//! that lets the kernel decide containment can skip, and nothing else. It reads the
//! request's `uri` from the text (borrowed, as rootfence's text path does) and resolves it
//! beneath a descriptor of ROOT the way rootfence's single check does when no link is on the
//! way: `openat2` (`O_PATH`, `RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS`),
//! `fstat`, `close`. No policy, no audit, no bookkeeping; what it finds is not acted on
//! (everything is forwarded). So the floor's read over relay-only's is what the kernel's
//! answer alone costs per read on this machine, beside the enforcer's in the same run.
//!
//! Usage: relay_passthrough [--floor ROOT] -- <server command> [args...]

use std::borrow::Cow;
use std::os::fd::OwnedFd;
use std::process::ExitCode;
use std::sync::Arc;

use rootfence::jsonrpc::Kind;
use rootfence::relay::{
    self, Action, Interceptor, Offered, PassThrough, RelayConfig, Session, Side,
};
use rustix::fs::{Mode, OFlags, ResolveFlags};

/// The floor: a host's `resources/read` resolved beneath the root, then forwarded.
struct Floor {
    root: OwnedFd,
    /// `file://` and the root's path with a trailing `/`: what a URI inside it starts with.
    prefix: String,
}

#[derive(serde::Deserialize)]
struct Request<'a> {
    #[serde(borrow)]
    params: Params<'a>,
}

#[derive(serde::Deserialize)]
struct Params<'a> {
    #[serde(borrow)]
    uri: Cow<'a, str>,
}

impl Floor {
    fn resolve(&self, text: &str) -> Option<()> {
        let request: Request<'_> = serde_json::from_str(text).ok()?;
        let rel = request.params.uri.strip_prefix(&self.prefix)?;
        let how = ResolveFlags::BENEATH | ResolveFlags::NO_SYMLINKS | ResolveFlags::NO_MAGICLINKS;
        let flags = OFlags::PATH | OFlags::CLOEXEC | OFlags::NOFOLLOW;
        let fd = rustix::fs::openat2(&self.root, rel, flags, Mode::empty(), how).ok()?;
        rustix::fs::fstat(&fd).ok()?;
        Some(())
    }
}

impl Interceptor for Floor {
    fn wants(&self, from: Side, kind: Kind, method: &str) -> bool {
        from == Side::Host && kind == Kind::Request && method == "resources/read"
    }

    fn intercept_text(&self, _: &Arc<Session>, msg: &Offered<'_>) -> Option<Action> {
        // Forwarded whatever the kernel said: the floor measures the asking, not a verdict.
        let _ = self.resolve(msg.text);
        Some(Action::Forward)
    }
}

fn main() -> ExitCode {
    let mut args: Vec<std::ffi::OsString> = std::env::args_os().skip(1).collect();
    let mut floor = None;
    if args.first().is_some_and(|a| a == "--floor") && args.len() > 1 {
        let root = std::path::PathBuf::from(args[1].clone());
        let fd = match std::fs::File::open(&root) {
            Ok(f) => OwnedFd::from(f),
            Err(e) => {
                eprintln!("relay_passthrough: --floor {}: {e}", root.display());
                return ExitCode::from(2);
            }
        };
        let prefix = format!(
            "file://{}/",
            root.display().to_string().trim_end_matches('/')
        );
        floor = Some(Floor { root: fd, prefix });
        args.drain(..2);
    }
    let server = match args.iter().position(|a| a == "--") {
        Some(i) if i + 1 < args.len() => &args[i + 1..],
        _ => {
            eprintln!("usage: relay_passthrough [--floor ROOT] -- <server command> [args...]");
            return ExitCode::from(2);
        }
    };
    let mut command = std::process::Command::new(&server[0]);
    command.args(&server[1..]);
    let config = RelayConfig {
        command: Some(command),
        ..RelayConfig::deferred()
    };
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
    let outcome = match floor {
        Some(floor) => runtime.block_on(relay::run(config, Arc::new(floor))),
        None => runtime.block_on(relay::run(config, Arc::new(PassThrough))),
    };
    runtime.shutdown_background();
    match outcome {
        Ok(o) => ExitCode::from(o.exit_code),
        Err(e) => {
            eprintln!("relay_passthrough: {e}");
            ExitCode::FAILURE
        }
    }
}
