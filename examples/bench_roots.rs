//! The live-roots benchmark (issue 11): run it with `scripts/bench-roots.sh`, which builds the
//! release binaries first.
//!
//! Two figures, each over `--rounds` runs, printed as p50 / p90 in milliseconds:
//!
//! - **Start-up**: from spawning the server command to the `initialize` answer, for the test
//!   server run directly; through `rootfence run` (default sandbox) for a host without roots
//!   (the server starts at once); and for a host that declares roots and answers rootfence's
//!   early `roots/list` at once (the server starts after that answer, confined to it). The
//!   difference between the last two is what the early roots question adds.
//! - **Generation switch**: in a running session, from the host's
//!   `notifications/roots/list_changed` (its roots answer follows at once) to the first answer
//!   from the server generation confined to the new roots (`pid` requests sent back to back).
//!
//! The runs of each kind are interleaved, so load from elsewhere on the machine falls on all
//! alike.

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, ChildStdout, Command, ExitCode, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

struct Options {
    rounds: usize,
    rootfence: PathBuf,
    server: PathBuf,
}

fn options() -> Result<Options, String> {
    let me = std::env::current_exe().map_err(|e| format!("cannot find my own path: {e}"))?;
    let examples = me.parent().ok_or("no parent dir")?.to_path_buf();
    let mut o = Options {
        rounds: 30,
        rootfence: examples.parent().ok_or("no profile dir")?.join("rootfence"),
        server: examples.join("test_server"),
    };
    let mut args = std::env::args().skip(1);
    while let Some(flag) = args.next() {
        let mut value = || args.next().ok_or(format!("{flag} needs a value"));
        match flag.as_str() {
            "--rounds" => o.rounds = value()?.parse().map_err(|e| format!("--rounds: {e}"))?,
            "--rootfence" => o.rootfence = value()?.into(),
            "--server" => o.server = value()?.into(),
            _ => {
                return Err(
                    "usage: bench_roots [--rounds N] [--rootfence PATH] [--server PATH]".into(),
                );
            }
        }
    }
    for (what, p) in [("rootfence", &o.rootfence), ("test_server", &o.server)] {
        if !p.exists() {
            return Err(format!(
                "{what} not found at {}: run scripts/bench-roots.sh",
                p.display()
            ));
        }
    }
    Ok(o)
}

struct Session {
    child: Child,
    to: ChildStdin,
    from: BufReader<ChildStdout>,
    roots: Vec<String>,
    next: u64,
}

impl Session {
    fn start(cmd: &mut Command) -> Result<Session, String> {
        let mut child = cmd
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .map_err(|e| format!("cannot start: {e}"))?;
        Ok(Session {
            to: child.stdin.take().unwrap(),
            from: BufReader::new(child.stdout.take().unwrap()),
            child,
            roots: Vec::new(),
            next: 1,
        })
    }

    fn send(&mut self, v: &Value) -> Result<(), String> {
        writeln!(self.to, "{v}").map_err(|e| format!("write: {e}"))
    }

    /// The response to `id`, answering roots questions on the way at once.
    fn response(&mut self, id: &Value) -> Result<Value, String> {
        let mut line = String::new();
        loop {
            line.clear();
            if self.from.read_line(&mut line).map_err(|e| e.to_string())? == 0 {
                return Err("the session ended".into());
            }
            let v: Value = serde_json::from_str(&line).map_err(|e| format!("{e}: {line}"))?;
            if v["method"] == "roots/list" && v.get("id").is_some() {
                let list: Vec<Value> = self.roots.iter().map(|u| json!({"uri": u})).collect();
                self.send(&json!({"jsonrpc":"2.0","id":v["id"],"result":{"roots":list}}))?;
                continue;
            }
            if &v["id"] == id && v.get("method").is_none() {
                return Ok(v);
            }
        }
    }

    fn initialize(&mut self, roots: bool) -> Result<(), String> {
        let caps = if roots {
            json!({"roots": {"listChanged": true}})
        } else {
            json!({})
        };
        self.send(
            &json!({"jsonrpc":"2.0","id":0,"method":"initialize","params":{
            "protocolVersion":"2025-06-18","capabilities":caps,
            "clientInfo":{"name":"bench","version":"0"}}}),
        )?;
        self.response(&json!(0))?;
        Ok(())
    }

    fn pid(&mut self) -> Result<u64, String> {
        self.next += 1;
        let id = json!(self.next);
        self.send(&json!({"jsonrpc":"2.0","id":id,"method":"pid"}))?;
        self.response(&id)?["result"]["pid"]
            .as_u64()
            .ok_or_else(|| "no pid".into())
    }

    fn end(mut self) {
        drop(self.to);
        let _ = self.child.wait();
    }
}

fn rootfence(o: &Options, audit: &Path) -> Command {
    let mut c = Command::new(&o.rootfence);
    c.arg("run")
        .arg("--audit-log")
        .arg(audit)
        .arg("--")
        .arg(&o.server);
    c
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

fn pct(samples: &mut [f64], p: f64) -> f64 {
    samples.sort_by(|a, b| a.total_cmp(b));
    samples[((samples.len() - 1) as f64 * p).round() as usize]
}

fn run(o: &Options) -> Result<(), String> {
    let tmp = tempfile::tempdir().map_err(|e| e.to_string())?;
    let base = tmp.path().canonicalize().map_err(|e| e.to_string())?;
    let (root, root2) = (base.join("root"), base.join("root2"));
    std::fs::create_dir_all(&root).map_err(|e| e.to_string())?;
    std::fs::create_dir_all(&root2).map_err(|e| e.to_string())?;
    let uri = |p: &Path| format!("file://{}", p.display());
    let audit = base.join("audit.jsonl");

    let kinds = [
        "direct",
        "rootfence, host without roots",
        "rootfence, host with roots (early question)",
    ];
    let mut start: Vec<Vec<f64>> = vec![Vec::new(); kinds.len()];
    for round in 0..o.rounds {
        for k in 0..kinds.len() {
            let k = (k + round) % kinds.len();
            let t0 = Instant::now();
            let mut s = match k {
                0 => Session::start(&mut Command::new(&o.server))?,
                _ => Session::start(&mut rootfence(o, &audit))?,
            };
            s.roots = vec![uri(&root)];
            s.initialize(k == 2)?;
            start[k].push(ms(t0.elapsed()));
            s.end();
        }
    }
    println!(
        "start-up to the initialize answer, ms ({} rounds):",
        o.rounds
    );
    println!("{:<48} {:>8} {:>8}", "", "p50", "p90");
    for (k, kind) in kinds.iter().enumerate() {
        let p50 = pct(&mut start[k], 0.5);
        let p90 = pct(&mut start[k], 0.9);
        println!("{kind:<48} {p50:>8.2} {p90:>8.2}");
    }
    let early = pct(&mut start[2], 0.5) - pct(&mut start[1], 0.5);
    println!("the early roots question adds (p50): {early:.2} ms");

    let mut switch = Vec::new();
    let mut s = Session::start(&mut rootfence(o, &audit))?;
    s.roots = vec![uri(&root)];
    s.initialize(true)?;
    s.send(&json!({"jsonrpc":"2.0","method":"notifications/initialized"}))?;
    let mut pid = s.pid()?;
    for round in 0..o.rounds {
        s.roots = vec![uri(if round % 2 == 0 { &root2 } else { &root })];
        let t0 = Instant::now();
        s.send(&json!({"jsonrpc":"2.0","method":"notifications/roots/list_changed"}))?;
        loop {
            let now = s.pid()?;
            if now != pid {
                pid = now;
                break;
            }
            if t0.elapsed() > Duration::from_secs(30) {
                return Err("no new generation within 30 s".into());
            }
        }
        switch.push(ms(t0.elapsed()));
    }
    s.end();
    println!(
        "\ngeneration switch, list_changed to the first answer under the new grants, ms ({} switches):",
        o.rounds
    );
    println!(
        "{:<48} {:>8.2} {:>8.2}",
        "test server (default sandbox)",
        pct(&mut switch, 0.5),
        pct(&mut switch, 0.9)
    );
    Ok(())
}

fn main() -> ExitCode {
    match options().and_then(|o| run(&o)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("bench_roots: {e}");
            ExitCode::FAILURE
        }
    }
}
