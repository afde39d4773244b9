//! The tool-argument inference benchmark (issue 26): a `tools/call` through rootfence with
//! `tools.infer = "off"` and with the default `"schema"`, side by side in one run, against
//! `examples/toolargs_server.rs` (which answers at once), plus the server direct.
//!
//! Each chain is `rootfence run --sandbox off --root <tmp root> --audit-log <tmp log>` (the
//! default policy, every decision audited as shipped); the host lists the tools once, then
//! sends each measured call to every chain in turn (rotating which goes first, so load from
//! elsewhere on a shared machine hits all alike). Two calls: `read_file` with one path
//! inside the root, and `read_many` with eight. Reported: p50 and p90 round trip per chain,
//! and "schema" minus "off" at p50 (what judging the inferred paths costs).
//!
//! Usage: `cargo run --release --example bench_toolargs -- [--requests N]` (build the
//! `rootfence` binary and the `toolargs_server` example in the same profile first).

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

struct Chain {
    name: &'static str,
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
    next: u64,
}

impl Chain {
    fn start(name: &'static str, mut cmd: Command) -> Chain {
        let mut child = cmd
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("the chain starts");
        let stdin = child.stdin.take().unwrap();
        let stdout = BufReader::new(child.stdout.take().unwrap());
        let mut c = Chain {
            name,
            child,
            stdin,
            stdout,
            next: 0,
        };
        c.request(
            "initialize",
            json!({"protocolVersion": "2025-06-18", "capabilities": {},
                   "clientInfo": {"name": "bench-toolargs", "version": "1"}}),
        );
        writeln!(
            c.stdin,
            r#"{{"jsonrpc":"2.0","method":"notifications/initialized"}}"#
        )
        .unwrap();
        c.request("tools/list", json!({}));
        c
    }

    fn request(&mut self, method: &str, params: Value) -> Value {
        self.next += 1;
        let msg = json!({"jsonrpc": "2.0", "id": self.next, "method": method, "params": params});
        writeln!(self.stdin, "{msg}").unwrap();
        self.stdin.flush().unwrap();
        loop {
            let mut line = String::new();
            assert!(
                self.stdout.read_line(&mut line).unwrap() > 0,
                "{}: closed",
                self.name
            );
            let v: Value = serde_json::from_str(&line).unwrap();
            if v["id"] == json!(self.next) {
                return v;
            }
        }
    }
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    sorted[((sorted.len() - 1) as f64 * p).round() as usize]
}

fn main() {
    let mut requests = 2000usize;
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        match a.as_str() {
            "--requests" => requests = args.next().and_then(|n| n.parse().ok()).unwrap_or(2000),
            other => panic!("unknown option {other} (usage: bench_toolargs [--requests N])"),
        }
    }
    let bin = std::env::current_exe().unwrap();
    let examples = bin.parent().unwrap();
    let rootfence = examples.parent().unwrap().join("rootfence");
    let server = examples.join("toolargs_server");
    let tmp = tempfile::tempdir().unwrap();
    let base = tmp.path().canonicalize().unwrap();
    let root = base.join("root");
    std::fs::create_dir_all(root.join("sub")).unwrap();
    for i in 0..8 {
        std::fs::write(root.join(format!("sub/f{i}.txt")), "x").unwrap();
    }
    std::fs::write(root.join("a.txt"), "x").unwrap();
    let off = base.join("off.toml");
    std::fs::write(&off, "version = 1\n[tools]\ninfer = \"off\"\n").unwrap();
    let through = |policy: Option<&Path>, log: &str| {
        let mut c = Command::new(&rootfence);
        c.args(["run", "--sandbox", "off", "--root"])
            .arg(&root)
            .arg("--audit-log")
            .arg(base.join(log));
        if let Some(p) = policy {
            c.arg("--policy").arg(p);
        }
        c.arg("--").arg(&server);
        c
    };
    let mut chains = vec![
        Chain::start("direct", Command::new(&server)),
        Chain::start("infer off", through(Some(&off), "off.jsonl")),
        Chain::start("infer schema", through(None, "schema.jsonl")),
    ];
    let one = json!({"name": "read_file", "arguments": {"path": root.join("a.txt")}});
    let paths: Vec<PathBuf> = (0..8).map(|i| root.join(format!("sub/f{i}.txt"))).collect();
    let eight = json!({"name": "read_many", "arguments": {"paths": paths}});
    println!(
        "bench_toolargs: {requests} tools/call per chain and call, {} build",
        if cfg!(debug_assertions) {
            "debug (relative figures only)"
        } else {
            "release"
        }
    );
    for (label, params) in [("read_file, 1 path", one), ("read_many, 8 paths", eight)] {
        let mut samples: Vec<Vec<Duration>> = vec![Vec::with_capacity(requests); chains.len()];
        // Warm-up.
        for c in chains.iter_mut() {
            for _ in 0..50 {
                c.request("tools/call", params.clone());
            }
        }
        for i in 0..requests {
            let n = chains.len();
            for k in 0..n {
                let j = (i + k) % n;
                let start = Instant::now();
                let r = chains[j].request("tools/call", params.clone());
                samples[j].push(start.elapsed());
                assert!(r["result"]["isError"].is_null(), "{}: {r}", chains[j].name);
            }
        }
        println!("\n{label}:");
        let mut p50s = Vec::new();
        for (c, s) in chains.iter().zip(samples.iter_mut()) {
            s.sort();
            let (p50, p90) = (percentile(s, 0.5), percentile(s, 0.9));
            p50s.push(p50);
            println!(
                "  {:<14} p50 {:>8.1} µs   p90 {:>8.1} µs",
                c.name,
                p50.as_secs_f64() * 1e6,
                p90.as_secs_f64() * 1e6
            );
        }
        println!(
            "  schema - off   p50 {:>+8.1} µs",
            (p50s[2].as_secs_f64() - p50s[1].as_secs_f64()) * 1e6
        );
    }
    for mut c in chains {
        drop(c.stdin);
        let _ = c.child.wait();
    }
}
