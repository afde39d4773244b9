//! The telemetry benchmark driver (issue 15): run it with `scripts/bench-telemetry.sh`, which
//! builds the release binaries first.
//!
//! It plays the MCP host and measures, in one run, `rootfence run` around the same fast
//! server (`bench_server`) four ways: **telemetry off** (no `OTEL_*` variable), **collector
//! up** (a local OTLP/HTTP sink in this process that reads each export and answers 200, as a
//! collector does), **collector down** (a loopback port that refuses connections) and
//! **collector hung** (a port that accepts and never answers: every export waits out its
//! timeout). The SDK's defaults apply (a span batch every 5 s or 512 spans), so with the
//! collector down or hung, exports fail or hang in the background all through the run.
//!
//! Measured: round-trip latency (p50, p99, mean) of `--requests` sequential small requests
//! after `--warmup` unmeasured ones: a `ping` carrying `_meta.traceparent` (so with telemetry
//! on, rootfence rewrites it and the request is re-serialized: the one per-request cost on the
//! relay's thread) and a `resources/read` of a non-`file:` URI (checked by the enforcer, so a
//! decision is noted). The four chains run side by side, each measured request goes to each in
//! turn, so load from elsewhere on the shared machine hits all alike; samples are pooled over
//! `--rounds` rounds.

use std::io::{BufRead, BufReader, BufWriter, Read, Write};
use std::net::TcpListener;
use std::path::PathBuf;
use std::process::{Child, ChildStdin, ChildStdout, Command, ExitCode, Stdio};
use std::time::{Duration, Instant};

#[derive(Debug, Clone)]
struct Options {
    requests: usize,
    warmup: usize,
    rounds: usize,
    rootfence: PathBuf,
    bench_server: PathBuf,
}

fn parse_options() -> Result<Options, String> {
    let me = std::env::current_exe().map_err(|e| format!("cannot find my own path: {e}"))?;
    let examples = me.parent().ok_or("no parent dir")?.to_path_buf();
    let profile_dir = examples.parent().ok_or("no profile dir")?.to_path_buf();
    let mut o = Options {
        requests: 3000,
        warmup: 300,
        rounds: 3,
        rootfence: profile_dir.join("rootfence"),
        bench_server: examples.join("bench_server"),
    };
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        let mut num = |name: &str| -> Result<usize, String> {
            args.next()
                .and_then(|v| v.parse().ok())
                .ok_or_else(|| format!("{name} needs a number"))
        };
        match a.as_str() {
            "--requests" => o.requests = num("--requests")?.max(1),
            "--warmup" => o.warmup = num("--warmup")?,
            "--rounds" => o.rounds = num("--rounds")?.max(1),
            other => {
                return Err(format!(
                    "unknown option `{other}`; use --requests N, --warmup N, --rounds N"
                ));
            }
        }
    }
    Ok(o)
}

#[derive(Clone, Copy, Debug)]
enum Mode {
    Off,
    Up,
    Down,
    Hung,
}

impl Mode {
    const ALL: [Mode; 4] = [Mode::Off, Mode::Up, Mode::Down, Mode::Hung];

    fn label(self) -> &'static str {
        match self {
            Mode::Off => "telemetry off",
            Mode::Up => "collector up",
            Mode::Down => "collector down (refused)",
            Mode::Hung => "collector hung (no answer)",
        }
    }
}

/// The collector endpoints of one run.
struct Collectors {
    up: String,
    down: String,
    hung: String,
}

impl Collectors {
    fn start() -> Result<Collectors, String> {
        let bind = || TcpListener::bind("127.0.0.1:0").map_err(|e| format!("bind: {e}"));
        let up = bind()?;
        let up_addr = up.local_addr().map_err(|e| e.to_string())?;
        std::thread::spawn(move || {
            for conn in up.incoming().flatten() {
                std::thread::spawn(move || sink(conn));
            }
        });
        let down = bind()?;
        let down_addr = down.local_addr().map_err(|e| e.to_string())?;
        drop(down);
        let hung = bind()?;
        let hung_addr = hung.local_addr().map_err(|e| e.to_string())?;
        std::thread::spawn(move || {
            let mut kept = Vec::new();
            for conn in hung.incoming().flatten() {
                kept.push(conn);
            }
        });
        Ok(Collectors {
            up: format!("http://{up_addr}"),
            down: format!("http://{down_addr}"),
            hung: format!("http://{hung_addr}"),
        })
    }
}

/// An OTLP/HTTP sink: reads each request whole and answers it with an empty success.
fn sink(conn: std::net::TcpStream) {
    let Ok(mut out) = conn.try_clone() else {
        return;
    };
    let mut r = BufReader::new(conn);
    loop {
        let mut line = String::new();
        if r.read_line(&mut line).unwrap_or(0) == 0 {
            return;
        }
        let mut len = 0usize;
        loop {
            let mut h = String::new();
            if r.read_line(&mut h).unwrap_or(0) == 0 {
                return;
            }
            let h = h.trim_end();
            if h.is_empty() {
                break;
            }
            if let Some((k, v)) = h.split_once(':')
                && k.eq_ignore_ascii_case("content-length")
            {
                len = v.trim().parse().unwrap_or(0);
            }
        }
        let mut body = vec![0; len];
        if r.read_exact(&mut body).is_err() {
            return;
        }
        let reply =
            "HTTP/1.1 200 OK\r\ncontent-type: application/x-protobuf\r\ncontent-length: 0\r\n\r\n";
        if out.write_all(reply.as_bytes()).is_err() {
            return;
        }
    }
}

/// One running chain (rootfence + server) with the host's ends of its pipes.
struct Session {
    child: Child,
    to: BufWriter<ChildStdin>,
    from: BufReader<ChildStdout>,
    line: Vec<u8>,
    next_id: u64,
}

impl Session {
    fn start(mode: Mode, o: &Options, c: &Collectors) -> Result<Session, String> {
        let mut cmd = Command::new(&o.rootfence);
        cmd.args(["run", "--"])
            .arg(&o.bench_server)
            .args(["--payload-bytes", "16"])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit());
        for var in [
            "OTEL_EXPORTER_OTLP_ENDPOINT",
            "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
            "OTEL_EXPORTER_OTLP_METRICS_ENDPOINT",
            "OTEL_EXPORTER_OTLP_LOGS_ENDPOINT",
            "OTEL_SDK_DISABLED",
        ] {
            cmd.env_remove(var);
        }
        let endpoint = match mode {
            Mode::Off => None,
            Mode::Up => Some(&c.up),
            Mode::Down => Some(&c.down),
            Mode::Hung => Some(&c.hung),
        };
        if let Some(e) = endpoint {
            cmd.env("OTEL_EXPORTER_OTLP_ENDPOINT", e);
        }
        let mut child = cmd
            .spawn()
            .map_err(|e| format!("{}: cannot start: {e}", mode.label()))?;
        let to = BufWriter::new(child.stdin.take().expect("piped"));
        let from = BufReader::new(child.stdout.take().expect("piped"));
        let mut s = Session {
            child,
            to,
            from,
            line: Vec::with_capacity(4096),
            next_id: 0,
        };
        s.call(
            "initialize",
            r#"{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"bench_telemetry","version":"1"}}"#,
        )?;
        s.send(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#)?;
        Ok(s)
    }

    fn send(&mut self, line: &str) -> Result<(), String> {
        self.to
            .write_all(line.as_bytes())
            .and_then(|()| self.to.write_all(b"\n"))
            .and_then(|()| self.to.flush())
            .map_err(|e| format!("writing a request: {e}"))
    }

    fn call(&mut self, method: &str, params: &str) -> Result<(), String> {
        self.next_id += 1;
        let id = self.next_id;
        self.send(&format!(
            r#"{{"jsonrpc":"2.0","id":{id},"method":"{method}","params":{params}}}"#
        ))?;
        self.line.clear();
        let n = self
            .from
            .read_until(b'\n', &mut self.line)
            .map_err(|e| format!("reading the answer to {method}: {e}"))?;
        if n == 0 {
            return Err(format!("the chain closed before answering {method}"));
        }
        let want = format!(r#""id":{id},"result""#);
        let head = &self.line[..self.line.len().min(64)];
        if !head.windows(want.len()).any(|w| w == want.as_bytes()) {
            return Err(format!(
                "unexpected answer to {method}: {}",
                String::from_utf8_lossy(&self.line[..self.line.len().min(300)])
            ));
        }
        Ok(())
    }

    /// Closes the chain's input and waits for it; returns how long it took to end.
    fn finish(mut self) -> Result<Duration, String> {
        drop(self.to);
        let t = Instant::now();
        let status = self
            .child
            .wait()
            .map_err(|e| format!("waiting for the chain: {e}"))?;
        if status.success() {
            Ok(t.elapsed())
        } else {
            Err(format!("the chain exited with {status}"))
        }
    }
}

#[derive(Default)]
struct Samples {
    traced_ping: Vec<Duration>,
    checked_read: Vec<Duration>,
    exit: Vec<Duration>,
}

fn measure_round(o: &Options, c: &Collectors, into: &mut [Samples]) -> Result<(), String> {
    let mut sessions = Vec::new();
    for mode in Mode::ALL {
        sessions.push(Session::start(mode, o, c).map_err(|e| format!("{}: {e}", mode.label()))?);
    }
    let ping =
        r#"{"_meta":{"traceparent":"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"}}"#;
    let read = r#"{"uri":"bench://small"}"#;
    let k = sessions.len();
    for i in 0..o.warmup + o.requests {
        for j in 0..k {
            let m = (i + j) % k;
            let s = &mut sessions[m];
            let t = Instant::now();
            s.call("ping", ping)?;
            let traced = t.elapsed();
            let t = Instant::now();
            s.call("resources/read", read)?;
            let checked = t.elapsed();
            if i >= o.warmup {
                into[m].traced_ping.push(traced);
                into[m].checked_read.push(checked);
            }
        }
    }
    for (m, s) in sessions.into_iter().enumerate() {
        into[m].exit.push(s.finish()?);
    }
    Ok(())
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i.min(sorted.len() - 1)]
}

fn micros(d: Duration) -> f64 {
    d.as_secs_f64() * 1e6
}

/// (p50, p99, mean) in µs.
fn stats(mut v: Vec<Duration>) -> (f64, f64, f64) {
    v.sort();
    let mean = v.iter().map(|d| micros(*d)).sum::<f64>() / v.len() as f64;
    (
        micros(percentile(&v, 0.5)),
        micros(percentile(&v, 0.99)),
        mean,
    )
}

fn run(o: &Options) -> Result<(), String> {
    for (what, p) in [
        ("rootfence", &o.rootfence),
        ("bench_server", &o.bench_server),
    ] {
        if !p.exists() {
            return Err(format!(
                "{what} not found at {}; run scripts/bench-telemetry.sh",
                p.display()
            ));
        }
    }
    let collectors = Collectors::start()?;
    let mut samples: Vec<Samples> = Mode::ALL.iter().map(|_| Samples::default()).collect();
    for round in 0..o.rounds {
        eprintln!("round {}/{}...", round + 1, o.rounds);
        measure_round(o, &collectors, &mut samples)?;
    }
    println!(
        "telemetry benchmark: {} requests x {} rounds per mode (after {} warm-up), side by side",
        o.requests, o.rounds, o.warmup
    );
    println!(
        "{:<28} {:>26} {:>26} {:>12}",
        "mode", "traced ping p50/p99/mean", "checked read p50/p99/mean", "exit (max)"
    );
    let mut base = (0.0, 0.0);
    for (i, (mode, s)) in Mode::ALL.iter().zip(samples).enumerate() {
        let exit = s.exit.iter().max().copied().unwrap_or_default();
        let (p50, p99, mean) = stats(s.traced_ping);
        let (r50, r99, rmean) = stats(s.checked_read);
        println!(
            "{:<28} {:>9.1}/{:>7.1}/{:>7.1} µs {:>9.1}/{:>7.1}/{:>7.1} µs {:>9.0} ms",
            mode.label(),
            p50,
            p99,
            mean,
            r50,
            r99,
            rmean,
            exit.as_secs_f64() * 1e3
        );
        if i == 0 {
            base = (p50, r50);
        } else {
            println!(
                "{:<28} {:>+9.1} µs p50 vs off {:>+12.1} µs p50 vs off",
                "",
                p50 - base.0,
                r50 - base.1
            );
        }
    }
    Ok(())
}

fn main() -> ExitCode {
    let o = match parse_options() {
        Ok(o) => o,
        Err(e) => {
            eprintln!("bench_telemetry: {e}");
            return ExitCode::from(2);
        }
    };
    match run(&o) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("bench_telemetry: {e}");
            ExitCode::FAILURE
        }
    }
}
