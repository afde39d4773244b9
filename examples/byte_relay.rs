//! A do-nothing byte relay, the floor of the relay benchmark (`scripts/bench-relay.sh`):
//! `byte_relay -- <command> [args...]` runs the command as a child and copies stdin to the
//! child's stdin and the child's stdout to stdout, byte for byte, on two threads, with the
//! child's stderr inherited. It parses nothing and checks nothing: whatever rootfence costs
//! beyond this is the cost of understanding the messages.
//!
//! Each pump is a plain read/write loop with a 64 KiB buffer (measured here to beat
//! `std::io::copy`'s `splice(2)` path for small messages). When stdin ends it closes the child's stdin; it exits with the
//! child's exit status (128 + signal when the child was killed).

use std::io::{Read, Write};
use std::os::unix::process::ExitStatusExt;
use std::process::{Command, ExitCode, Stdio};

/// Copies until end of input: each read is written out whole at once (no buffering, no
/// parsing), so a message reaches the other side as soon as its bytes arrive.
fn pump(from: &mut impl Read, to: &mut impl Write) -> std::io::Result<()> {
    let mut buf = vec![0u8; 1 << 16];
    loop {
        let n = match from.read(&mut buf) {
            Ok(0) => return Ok(()),
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        to.write_all(&buf[..n])?;
        to.flush()?;
    }
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let Some(("--", command)) = args.split_first().map(|(a, rest)| (a.as_str(), rest)) else {
        eprintln!("usage: byte_relay -- <command> [args...]");
        return ExitCode::from(2);
    };
    let Some((program, program_args)) = command.split_first() else {
        eprintln!("usage: byte_relay -- <command> [args...]");
        return ExitCode::from(2);
    };
    let mut child = match Command::new(program)
        .args(program_args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
    {
        Ok(child) => child,
        Err(e) => {
            eprintln!("byte_relay: cannot start {program:?}: {e}");
            return ExitCode::from(127);
        }
    };
    let mut to_child = child.stdin.take().expect("stdin is piped");
    let mut from_child = child.stdout.take().expect("stdout is piped");
    // Host → server. Dropping `to_child` at the end closes the server's stdin.
    std::thread::spawn(move || {
        let _ = pump(&mut std::io::stdin().lock(), &mut to_child);
    });
    // Server → host, on this thread, until the server closes its stdout.
    let _ = pump(&mut from_child, &mut std::io::stdout().lock());
    let status = match child.wait() {
        Ok(status) => status,
        Err(e) => {
            eprintln!("byte_relay: waiting for the child failed: {e}");
            return ExitCode::from(1);
        }
    };
    let code = status
        .code()
        .or_else(|| status.signal().map(|s| 128 + s))
        .unwrap_or(1);
    ExitCode::from(u8::try_from(code).unwrap_or(1))
}
