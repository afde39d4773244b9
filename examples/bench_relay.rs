//! The relay benchmark driver (issue 2): run it with `scripts/bench-relay.sh`, which builds
//! the release binaries first.
//!
//! It plays the MCP host and measures, in one run, four ways of reaching the same fast
//! server (`bench_server`): **direct**, through the do-nothing **byte relay** (the floor:
//! `byte_relay`, two threads copying pipes), through **rootfence run**, and through
//! **rootfence run with the tripwire armed** (`--root` a temp root holding a `.env` and a
//! PEM key, so every message from the server is searched for their fingerprints;
//! `--payload-text` makes the payload realistic text rather than one repeated byte). For
//! each:
//! - round-trip latency (p50, p99, mean) of `--requests` sequential small requests (`ping`,
//!   and a small `resources/read`), after `--warmup` unmeasured ones;
//! - throughput of `--reads` `resources/read` calls that each return a `--payload-mib` MiB
//!   text (10 MiB by default), in MiB/s of response bytes; one at a time by default, or
//!   `--pipeline K` at a time (K requests sent, then K responses read).
//!
//! The three chains run side by side and each measured request goes to each of them in turn,
//! so load from elsewhere on the machine (it is shared) hits all modes alike; samples are
//! pooled over `--rounds` rounds. The table ends with the two figures issue 2 sets targets for: rootfence's
//! added p50 over the byte relay (target ≤ 25 µs) and its payload throughput relative to
//! direct (target ≥ 0.8x). Every read is bounded by a watchdog, so a wedged relay ends the
//! run with an error instead of hanging it.

use std::io::{BufRead, BufReader, BufWriter, Write};
use std::path::PathBuf;
use std::process::{Child, ChildStdin, ChildStdout, Command, ExitCode, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// A phase that makes no progress for this long is declared wedged.
const STALL_LIMIT: Duration = Duration::from_secs(60);

#[derive(Debug, Clone)]
struct Options {
    requests: usize,
    warmup: usize,
    reads: usize,
    payload_mib: usize,
    pipeline: usize,
    rounds: usize,
    payload_text: bool,
    /// A root holding denied files (`.env`, a PEM key), for the tripwire-armed chain.
    armed_root: PathBuf,
    rootfence: PathBuf,
    bench_server: PathBuf,
    byte_relay: PathBuf,
}

fn parse_options() -> Result<Options, String> {
    // Default binaries sit beside this one: target/<profile>/examples/{bench_server,byte_relay}
    // and target/<profile>/rootfence.
    let me = std::env::current_exe().map_err(|e| format!("cannot find my own path: {e}"))?;
    let examples = me.parent().ok_or("no parent dir")?.to_path_buf();
    let profile_dir = examples.parent().ok_or("no profile dir")?.to_path_buf();
    let mut o = Options {
        requests: 5000,
        warmup: 500,
        reads: 20,
        payload_mib: 10,
        pipeline: 1,
        rounds: 3,
        payload_text: false,
        armed_root: PathBuf::new(),
        rootfence: profile_dir.join("rootfence"),
        bench_server: examples.join("bench_server"),
        byte_relay: examples.join("byte_relay"),
    };
    let mut args = std::env::args().skip(1);
    while let Some(flag) = args.next() {
        if flag == "--payload-text" {
            o.payload_text = true;
            continue;
        }
        if flag == "--help" || flag == "-h" {
            return Err(
                "usage: bench_relay [--requests N] [--warmup N] [--reads N] \
                 [--payload-mib N] [--pipeline K] [--rounds N] [--payload-text] [--rootfence PATH] [--bench-server PATH] \
                 [--byte-relay PATH]"
                    .into(),
            );
        }
        let value = args.next().ok_or_else(|| format!("{flag} needs a value"))?;
        let count = || {
            value
                .parse::<usize>()
                .map_err(|e| format!("{flag} {value:?}: {e}"))
        };
        match flag.as_str() {
            "--requests" => o.requests = count()?.max(1),
            "--warmup" => o.warmup = count()?,
            "--reads" => o.reads = count()?.max(1),
            "--payload-mib" => o.payload_mib = count()?.max(1),
            "--pipeline" => o.pipeline = count()?.max(1),
            "--rounds" => o.rounds = count()?.max(1),
            "--rootfence" => o.rootfence = value.into(),
            "--bench-server" => o.bench_server = value.into(),
            "--byte-relay" => o.byte_relay = value.into(),
            other => return Err(format!("unknown option {other:?} (see --help)")),
        }
    }
    for (what, p) in [
        ("rootfence", &o.rootfence),
        ("bench_server", &o.bench_server),
        ("byte_relay", &o.byte_relay),
    ] {
        if !p.exists() {
            return Err(format!(
                "{what} not found at {}: build with `cargo build --release --bin rootfence \
                 --example bench_server --example byte_relay` (scripts/bench-relay.sh does)",
                p.display()
            ));
        }
    }
    Ok(o)
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Mode {
    Direct,
    ByteRelay,
    Rootfence,
    /// `rootfence run --root <a root with denied files>`: the content tripwire searches
    /// every message from the server.
    Armed,
}

impl Mode {
    const ALL: [Mode; 4] = [Mode::Direct, Mode::ByteRelay, Mode::Rootfence, Mode::Armed];

    fn label(self) -> &'static str {
        match self {
            Mode::Direct => "direct",
            Mode::ByteRelay => "byte relay (floor)",
            Mode::Rootfence => "rootfence run",
            Mode::Armed => "rootfence, tripwire",
        }
    }
}

/// One running chain (wrapper + server) with the host's ends of its pipes.
struct Session {
    child: Child,
    to: BufWriter<ChildStdin>,
    from: BufReader<ChildStdout>,
    line: Vec<u8>,
    next_id: u64,
    /// Bumped on every completed read; the watchdog kills the chain when it stops moving.
    progress: Arc<AtomicU64>,
}

impl Session {
    fn start(mode: Mode, o: &Options) -> Result<Session, String> {
        let payload = (o.payload_mib << 20).to_string();
        let mut server = vec![
            o.bench_server.as_os_str(),
            "--payload-bytes".as_ref(),
            payload.as_ref(),
        ];
        if o.payload_text {
            server.push("--payload-text".as_ref());
        }
        let mut cmd = match mode {
            Mode::Direct => Command::new(server[0]),
            Mode::ByteRelay => {
                let mut c = Command::new(&o.byte_relay);
                c.arg("--").arg(server[0]);
                c
            }
            Mode::Rootfence => {
                let mut c = Command::new(&o.rootfence);
                c.args(["run", "--"]).arg(server[0]);
                c
            }
            Mode::Armed => {
                let mut c = Command::new(&o.rootfence);
                c.args(["run", "--root"])
                    .arg(&o.armed_root)
                    .arg("--")
                    .arg(server[0]);
                c
            }
        };
        cmd.args(&server[1..])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit());
        let mut child = cmd
            .spawn()
            .map_err(|e| format!("{}: cannot start: {e}", mode.label()))?;
        let to = BufWriter::new(child.stdin.take().expect("piped"));
        let from = BufReader::with_capacity(1 << 20, child.stdout.take().expect("piped"));
        let progress = Arc::new(AtomicU64::new(0));
        watchdog(child.id(), progress.clone(), mode);
        let mut s = Session {
            child,
            to,
            from,
            line: Vec::with_capacity(1 << 20),
            next_id: 0,
            progress,
        };
        s.call(
            "initialize",
            r#"{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"bench_relay","version":"1"}}"#,
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

    /// One request and its whole response line; returns the response's length in bytes.
    fn call(&mut self, method: &str, params: &str) -> Result<usize, String> {
        self.batch(method, params, 1)
    }

    /// `k` requests sent back to back, then their `k` responses read in order (the server
    /// answers in order); returns the total response bytes. With `k > 1` a relay that can
    /// read one message while writing the previous one overlaps the two pipe hops.
    fn batch(&mut self, method: &str, params: &str, k: usize) -> Result<usize, String> {
        let first = self.next_id + 1;
        for _ in 0..k {
            self.next_id += 1;
            let id = self.next_id;
            let request =
                format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"{method}","params":{params}}}"#);
            self.send(&request)?;
        }
        let mut total = 0;
        for id in first..=self.next_id {
            total += self.receive(method, id)?;
        }
        Ok(total)
    }

    fn receive(&mut self, method: &str, id: u64) -> Result<usize, String> {
        self.line.clear();
        let n = self
            .from
            .read_until(b'\n', &mut self.line)
            .map_err(|e| format!("reading the response to {method}: {e}"))?;
        if n == 0 {
            return Err(format!("the server side closed before answering {method}"));
        }
        self.progress.fetch_add(1, Ordering::Relaxed);
        // A cheap sanity check that this is our answer and not an error: the id is echoed
        // near the start and errors carry "error" there too.
        let head = &self.line[..self.line.len().min(64)];
        let want = format!(r#""id":{id},"result""#);
        if !head.windows(want.len()).any(|w| w == want.as_bytes()) {
            return Err(format!(
                "unexpected answer to {method}: {}",
                String::from_utf8_lossy(&self.line[..self.line.len().min(300)])
            ));
        }
        Ok(n)
    }

    fn finish(mut self) -> Result<(), String> {
        drop(self.to);
        let status = self
            .child
            .wait()
            .map_err(|e| format!("waiting for the chain: {e}"))?;
        self.progress.store(u64::MAX, Ordering::Relaxed);
        if status.success() {
            Ok(())
        } else {
            Err(format!("the chain exited with {status}"))
        }
    }
}

/// Kills the chain when `progress` stops moving for [`STALL_LIMIT`]; stops at `u64::MAX`.
fn watchdog(pid: u32, progress: Arc<AtomicU64>, mode: Mode) {
    std::thread::spawn(move || {
        let mut last = progress.load(Ordering::Relaxed);
        let mut since = Instant::now();
        loop {
            std::thread::sleep(Duration::from_millis(200));
            let now = progress.load(Ordering::Relaxed);
            if now == u64::MAX {
                return;
            }
            if now != last {
                last = now;
                since = Instant::now();
            } else if since.elapsed() > STALL_LIMIT {
                eprintln!(
                    "bench_relay: {}: no progress for {STALL_LIMIT:?}; killing it",
                    mode.label()
                );
                let pid = nix::unistd::Pid::from_raw(i32::try_from(pid).unwrap_or(i32::MAX));
                let _ = nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGKILL);
                return;
            }
        }
    });
}

#[derive(Default)]
struct Samples {
    ping: Vec<Duration>,
    small_read: Vec<Duration>,
    big_bytes: u64,
    big_time: Duration,
    /// The ping p50 of each round on its own (µs), to show a round that other load spoiled.
    round_ping_p50: Vec<f64>,
}

/// One round: all three chains are started and stay alive, and every measured request goes
/// to each chain in turn (rotating which goes first), so a burst of load from elsewhere on the
/// machine lands on all modes alike instead of on whichever mode happened to be running.
fn measure_round(o: &Options, into: &mut [Samples]) -> Result<(), String> {
    let mut sessions = Vec::new();
    for mode in Mode::ALL {
        sessions.push(Session::start(mode, o).map_err(|e| format!("{}: {e}", mode.label()))?);
    }
    let small = r#"{"uri":"bench://small"}"#;
    let big = r#"{"uri":"bench://big"}"#;
    let k = sessions.len();
    let each = |sessions: &mut Vec<Session>,
                i: usize,
                f: &mut dyn FnMut(usize, &mut Session) -> Result<(), String>| {
        for j in 0..k {
            let m = (i + j) % k;
            f(m, &mut sessions[m]).map_err(|e| format!("{}: {e}", Mode::ALL[m].label()))?;
        }
        Ok::<(), String>(())
    };
    for i in 0..o.warmup {
        each(&mut sessions, i, &mut |_, s| {
            s.call("ping", "{}")?;
            s.call("resources/read", small).map(|_| ())
        })?;
    }
    for i in 0..o.requests {
        each(&mut sessions, i, &mut |m, s| {
            let t = Instant::now();
            s.call("ping", "{}")?;
            into[m].ping.push(t.elapsed());
            Ok(())
        })?;
    }
    for i in 0..o.requests {
        each(&mut sessions, i, &mut |m, s| {
            let t = Instant::now();
            s.call("resources/read", small)?;
            into[m].small_read.push(t.elapsed());
            Ok(())
        })?;
    }
    // Warm the pipes and the allocations once, then time each big read on its own.
    each(&mut sessions, 0, &mut |_, s| {
        s.call("resources/read", big).map(|_| ())
    })?;
    for i in 0..o.reads.div_ceil(o.pipeline) {
        each(&mut sessions, i, &mut |m, s| {
            let t = Instant::now();
            into[m].big_bytes += s.batch("resources/read", big, o.pipeline)? as u64;
            into[m].big_time += t.elapsed();
            Ok(())
        })?;
    }
    for (m, s) in sessions.into_iter().enumerate() {
        s.finish()
            .map_err(|e| format!("{}: {e}", Mode::ALL[m].label()))?;
    }
    Ok(())
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    let rank = ((p / 100.0) * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

fn micros(d: Duration) -> f64 {
    d.as_secs_f64() * 1e6
}

struct Row {
    mode: Mode,
    ping_p50: f64,
    ping_p99: f64,
    read_p50: f64,
    read_p99: f64,
    read_mean: f64,
    mib_s: f64,
}

fn summarize(mode: Mode, mut s: Samples) -> Row {
    s.ping.sort();
    s.small_read.sort();
    let mean = |v: &[Duration]| micros(v.iter().sum::<Duration>()) / v.len() as f64;
    Row {
        mode,
        ping_p50: micros(percentile(&s.ping, 50.0)),
        ping_p99: micros(percentile(&s.ping, 99.0)),
        read_p50: micros(percentile(&s.small_read, 50.0)),
        read_p99: micros(percentile(&s.small_read, 99.0)),
        read_mean: mean(&s.small_read),
        mib_s: s.big_bytes as f64 / (1 << 20) as f64 / s.big_time.as_secs_f64(),
    }
}

/// A root holding what the default policy denies (a `.env` with a dozen secrets, a PEM
/// private key), so the tripwire of the armed chain has real fingerprints to search for.
fn armed_root() -> Result<tempfile::TempDir, String> {
    let t = tempfile::tempdir().map_err(|e| format!("cannot make a temp dir: {e}"))?;
    let mut seed = 0x1234_5678_9abc_def0u64;
    let mut token = |n: usize| -> String {
        const A: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
        (0..n)
            .map(|_| {
                seed ^= seed << 13;
                seed ^= seed >> 7;
                seed ^= seed << 17;
                A[(seed >> 24) as usize % A.len()] as char
            })
            .collect()
    };
    let mut env = String::from("NODE_ENV=production\n");
    for i in 0..12 {
        env.push_str(&format!("SECRET_{i}=sk_live_{}\n", token(32)));
    }
    env.push_str(&format!("DB_PASSWORD={}\n", token(14)));
    let mut pem = String::from("-----BEGIN PRIVATE KEY-----\n");
    for _ in 0..26 {
        pem.push_str(&token(64));
        pem.push('\n');
    }
    pem.push_str("-----END PRIVATE KEY-----\n");
    for (name, text) in [(".env", env), ("key.pem", pem)] {
        std::fs::write(t.path().join(name), text).map_err(|e| format!("{name}: {e}"))?;
    }
    Ok(t)
}

fn run(o: &Options) -> Result<(), String> {
    let armed = armed_root()?;
    let mut o = o.clone();
    o.armed_root = armed.path().to_owned();
    let o = &o;
    let mut samples: Vec<Samples> = Mode::ALL.iter().map(|_| Samples::default()).collect();
    for round in 1..=o.rounds {
        eprintln!("bench_relay: round {round}/{}", o.rounds);
        let before: Vec<usize> = samples.iter().map(|s| s.ping.len()).collect();
        measure_round(o, &mut samples)?;
        for (s, from) in samples.iter_mut().zip(before) {
            let mut this_round = s.ping[from..].to_vec();
            this_round.sort();
            s.round_ping_p50.push(micros(percentile(&this_round, 50.0)));
        }
    }
    let per_round: Vec<String> = Mode::ALL
        .iter()
        .zip(&samples)
        .map(|(m, s)| {
            let p50s: Vec<String> = s.round_ping_p50.iter().map(|v| format!("{v:.1}")).collect();
            format!("{} {}", m.label(), p50s.join("/"))
        })
        .collect();
    let best = |i: usize| {
        samples[i]
            .round_ping_p50
            .iter()
            .copied()
            .fold(f64::INFINITY, f64::min)
    };
    let best_added = best(2) - best(1);
    let rows: Vec<Row> = Mode::ALL
        .iter()
        .zip(samples)
        .map(|(m, s)| summarize(*m, s))
        .collect();
    let n = o.requests * o.rounds;
    println!(
        "relay benchmark: {n} pings and {n} small resources/read per mode (after {} warm-up \
         each), {} x {} MiB resources/read per mode, {} in flight; {} round(s)",
        o.warmup,
        o.reads.div_ceil(o.pipeline) * o.pipeline * o.rounds,
        o.payload_mib,
        o.pipeline,
        o.rounds
    );
    println!();
    println!(
        "| mode               | ping p50 µs | ping p99 µs | read p50 µs | read p99 µs | read mean µs | {} MiB read MiB/s |",
        o.payload_mib
    );
    println!(
        "|--------------------|------------:|------------:|------------:|------------:|-------------:|------------------:|"
    );
    for r in &rows {
        println!(
            "| {:<18} | {:>11.1} | {:>11.1} | {:>11.1} | {:>11.1} | {:>12.1} | {:>17.0} |",
            r.mode.label(),
            r.ping_p50,
            r.ping_p99,
            r.read_p50,
            r.read_p99,
            r.read_mean,
            r.mib_s
        );
    }
    let get = |m: Mode| rows.iter().find(|r| r.mode == m).expect("every mode ran");
    let (direct, floor, fence, armed) = (
        get(Mode::Direct),
        get(Mode::ByteRelay),
        get(Mode::Rootfence),
        get(Mode::Armed),
    );
    let added = fence.ping_p50 - floor.ping_p50;
    let ratio = fence.mib_s / direct.mib_s;
    println!();
    println!("ping p50 per round, µs: {}", per_round.join("; "));
    println!(
        "best-round ping p50, rootfence minus byte relay: {best_added:+.1} µs (robust to a round \
         that other load on the machine spoiled)"
    );
    println!(
        "rootfence added p50 latency over the byte relay: {added:+.1} µs (ping), {:+.1} µs \
         (small read); target <= 25 µs: {}",
        fence.read_p50 - floor.read_p50,
        if added <= 25.0 { "met" } else { "NOT met" }
    );
    println!(
        "rootfence {} MiB payload throughput vs direct: {ratio:.2}x (byte relay {:.2}x); \
         target >= 0.80x: {}",
        o.payload_mib,
        floor.mib_s / direct.mib_s,
        if ratio >= 0.8 { "met" } else { "NOT met" }
    );
    println!(
        "tripwire armed (a root with a .env and a PEM key): {} MiB payload throughput {:.2}x \
         rootfence run without it; ping p50 {:+.1} µs",
        o.payload_mib,
        armed.mib_s / fence.mib_s,
        armed.ping_p50 - fence.ping_p50
    );
    Ok(())
}

fn main() -> ExitCode {
    let o = match parse_options() {
        Ok(o) => o,
        Err(e) => {
            eprintln!("bench_relay: {e}");
            return ExitCode::from(2);
        }
    };
    match run(&o) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("bench_relay: error: {e}");
            ExitCode::FAILURE
        }
    }
}
