//! The enforcement benchmark (issues 6 and 14): run it with `scripts/bench-enforce.sh`, which
//! builds the release binaries first.
//!
//! It plays the MCP host against the fast `bench_server` through six chains, side by side:
//! **direct**; **relay-only** (`relay_passthrough`: rootfence's relay with the `PassThrough`
//! interceptor, nothing decided); **enforcing** (`rootfence run --root <tmp root>` with the
//! default policy, every decision audited to a temporary log, as shipped: allowed list
//! entries summarized per page); **enforcing, allows unlogged** (`[audit] log_allowed =
//! false`); **enforcing, allowed = "each"** (a record per allowed list entry); and the
//! **floor** (`relay_passthrough --floor <tmp root>`: the relay plus, per read, only the
//! kernel's answer on the URI, `openat2` beneath the root, `fstat`, `close`, the part of
//! a check that no enforcement which lets the kernel decide containment can skip). The
//! sandbox is off in the enforcing chains: it costs nothing per request and the benchmark
//! measures the wire checks.
//!
//! Figures, each with its target:
//! - `resources/read` of a `file:` URI inside the root: p50 over `--requests` reads,
//!   enforcing vs relay-only; target <= 1.10x.
//! - a `resources/list` page of `--list-entries` (10,000) `file:` entries, every one checked
//!   and kept: the p50 round trip enforcing minus relay-only; target < 5 ms. And the audit
//!   part of it: enforcing minus allows unlogged.
//! - rootfence's peak RSS (`VmHWM`) over the enforcing session, whose pages have 10,000
//!   entries; target <= 32 MiB.
//! - the CPU time per read of the process in front of the host (all its threads, from
//!   `schedstat`): no target, but unlike latency on a shared VM it does not move with
//!   wake-up delays, so it shows what enforcing a read costs over relaying it.
//! - a `tools/call` with a path argument and its result (the value path each way, issue 25):
//!   p50 and CPU per call, `--requests` calls; no target, compared with `--baseline`. Twice:
//!   with the result's `id` before its `result` (`call`), and after it (`rf call`, as the
//!   TypeScript SDK writes a response; `bench_server`'s tool `result_first`).
//! - the official Python SDK client's small-resource read (scripts/bench_sdk_read.py, with
//!   the pinned SDK in tests/peers/.venv) through the do-nothing byte relay
//!   (`examples/byte_relay`), relay-only and rootfence enforcing, side by side in one client;
//!   target p50 <= 1.05x the byte relay's; the floor chain beside them. `--sdk-requests 0`
//!   skips it.
//! - the floor's read over relay-only's: what the kernel's answer alone takes of each read
//!   target's budget on this machine.
//!
//! A seventh chain, **baseline**, is the enforcing chain with another build of rootfence
//! (`--baseline PATH`, e.g. the release binary of the commit before a change; issue 25):
//! the change and the build before it side by side in one run. Without `--baseline` it runs
//! this build again, which shows how far two identical chains drift apart in one run.
//!
//! Every measured request goes to each chain in turn (rotating which goes first), so load from
//! elsewhere on the shared machine hits all chains alike; samples are pooled over `--rounds`.

use std::io::{BufRead, BufReader, BufWriter, Write};
use std::path::PathBuf;
use std::process::{Child, ChildStdin, ChildStdout, Command, ExitCode, Stdio};
use std::time::{Duration, Instant};

#[derive(Debug, Clone)]
struct Options {
    requests: usize,
    warmup: usize,
    lists: usize,
    list_entries: usize,
    rounds: usize,
    rootfence: PathBuf,
    /// The baseline chain's rootfence (`--baseline`); this build when not given.
    baseline: Option<PathBuf>,
    bench_server: PathBuf,
    relay_passthrough: PathBuf,
    byte_relay: PathBuf,
    /// Reads per chain for the Python SDK figure (0: skip it).
    sdk_requests: usize,
    sdk_python: PathBuf,
    repo: PathBuf,
}

fn parse_options() -> Result<Options, String> {
    let me = std::env::current_exe().map_err(|e| format!("cannot find my own path: {e}"))?;
    let examples = me.parent().ok_or("no parent dir")?.to_path_buf();
    let profile = examples.parent().ok_or("no profile dir")?.to_path_buf();
    let mut o = Options {
        requests: 2000,
        warmup: 200,
        lists: 40,
        list_entries: 10_000,
        rounds: 3,
        rootfence: profile.join("rootfence"),
        baseline: None,
        bench_server: examples.join("bench_server"),
        relay_passthrough: examples.join("relay_passthrough"),
        byte_relay: examples.join("byte_relay"),
        sdk_requests: 1000,
        sdk_python: PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/peers/.venv/bin/python"),
        repo: PathBuf::from(env!("CARGO_MANIFEST_DIR")),
    };
    let mut args = std::env::args().skip(1);
    while let Some(flag) = args.next() {
        if flag == "--help" || flag == "-h" {
            return Err(
                "usage: bench_enforce [--requests N] [--warmup N] [--lists N] \
                        [--list-entries N] [--rounds N] [--sdk-requests N] [--rootfence PATH] \
                        [--baseline PATH] [--bench-server PATH] [--relay-passthrough PATH]"
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
            "--lists" => o.lists = count()?.max(1),
            "--list-entries" => o.list_entries = count()?,
            "--rounds" => o.rounds = count()?.max(1),
            "--sdk-requests" => o.sdk_requests = count()?,
            "--rootfence" => o.rootfence = value.into(),
            "--baseline" => o.baseline = Some(value.into()),
            "--bench-server" => o.bench_server = value.into(),
            "--relay-passthrough" => o.relay_passthrough = value.into(),
            other => return Err(format!("unknown option {other:?} (see --help)")),
        }
    }
    for (what, p) in [
        ("rootfence", &o.rootfence),
        ("bench_server", &o.bench_server),
        ("relay_passthrough", &o.relay_passthrough),
        ("byte_relay", &o.byte_relay),
    ] {
        if !p.exists() {
            return Err(format!(
                "{what} not found at {}: build with `cargo build --release --bin rootfence \
                 --example bench_server --example relay_passthrough` (scripts/bench-enforce.sh \
                 does)",
                p.display()
            ));
        }
    }
    Ok(o)
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Mode {
    Direct,
    RelayOnly,
    Enforcing,
    EnforcingQuiet,
    EnforcingEach,
    Floor,
    Baseline,
}

impl Mode {
    const ALL: [Mode; 7] = [
        Mode::Direct,
        Mode::RelayOnly,
        Mode::Enforcing,
        Mode::EnforcingQuiet,
        Mode::EnforcingEach,
        Mode::Floor,
        Mode::Baseline,
    ];

    fn label(self) -> &'static str {
        match self {
            Mode::Direct => "direct",
            Mode::RelayOnly => "relay-only",
            Mode::Enforcing => "enforcing",
            Mode::EnforcingQuiet => "enforcing, allows unlogged",
            Mode::EnforcingEach => "enforcing, allowed = \"each\"",
            Mode::Floor => "floor: relay + kernel check",
            Mode::Baseline => "baseline: enforcing, --baseline",
        }
    }
}

/// The temporary tree: `root/small.txt` and `root/list/f<i>.txt`, and the audit logs.
struct Tree {
    _tmp: tempfile::TempDir,
    base: PathBuf,
    root: PathBuf,
}

impl Tree {
    fn new(entries: usize) -> Result<Tree, String> {
        let tmp = tempfile::tempdir().map_err(|e| format!("cannot make a temp dir: {e}"))?;
        let base = tmp
            .path()
            .canonicalize()
            .map_err(|e| format!("temp dir: {e}"))?;
        let root = base.join("root");
        let list = root.join("list");
        std::fs::create_dir_all(&list).map_err(|e| format!("{}: {e}", list.display()))?;
        std::fs::write(root.join("small.txt"), "ok").map_err(|e| e.to_string())?;
        for i in 0..entries {
            std::fs::write(list.join(format!("f{i}.txt")), "x").map_err(|e| e.to_string())?;
        }
        // `log_allowed = false` widens the default, so it must be the first (only) layer: the
        // default policy with that one line changed.
        let default = include_str!("../policies/default.toml");
        let quiet = default.replace("log_allowed = true", "log_allowed = false");
        if quiet == default {
            return Err("policies/default.toml no longer sets log_allowed = true".into());
        }
        std::fs::write(base.join("quiet.toml"), quiet).map_err(|e| e.to_string())?;
        // `allowed = "each"` also widens the default (summary): first layer too.
        let each = default.replace(
            "log_allowed = true",
            "log_allowed = true\nallowed = \"each\"",
        );
        std::fs::write(base.join("each.toml"), each).map_err(|e| e.to_string())?;
        Ok(Tree {
            _tmp: tmp,
            base,
            root,
        })
    }
}

struct Session {
    child: Child,
    to: BufWriter<ChildStdin>,
    from: BufReader<ChildStdout>,
    line: Vec<u8>,
    next_id: u64,
}

impl Session {
    fn start(mode: Mode, o: &Options, tree: &Tree, round: usize) -> Result<Session, String> {
        let server: Vec<String> = vec![
            o.bench_server.display().to_string(),
            "--payload-bytes".into(),
            "16".into(),
            "--list-entries".into(),
            o.list_entries.to_string(),
            "--list-dir".into(),
            tree.root.join("list").display().to_string(),
        ];
        let audit = |name: &str| {
            tree.base
                .join(format!("{name}-{round}.jsonl"))
                .display()
                .to_string()
        };
        let root = tree.root.display().to_string();
        let mut cmd = match mode {
            Mode::Direct => Command::new(&server[0]),
            Mode::RelayOnly => {
                let mut c = Command::new(&o.relay_passthrough);
                c.arg("--").arg(&server[0]);
                c
            }
            Mode::Floor => {
                let mut c = Command::new(&o.relay_passthrough);
                c.args(["--floor", &root, "--"]).arg(&server[0]);
                c
            }
            Mode::Enforcing | Mode::Baseline => {
                let (bin, log) = match (mode, &o.baseline) {
                    (Mode::Baseline, Some(b)) => (b, "audit-baseline"),
                    (Mode::Baseline, None) => (&o.rootfence, "audit-baseline"),
                    _ => (&o.rootfence, "audit"),
                };
                let mut c = Command::new(bin);
                c.args(["run", "--sandbox", "off", "--root", &root, "--audit-log"])
                    .arg(audit(log))
                    .arg("--")
                    .arg(&server[0]);
                c
            }
            Mode::EnforcingQuiet | Mode::EnforcingEach => {
                let (log, policy) = if mode == Mode::EnforcingQuiet {
                    ("audit-quiet", "quiet.toml")
                } else {
                    ("audit-each", "each.toml")
                };
                let mut c = Command::new(&o.rootfence);
                c.args(["run", "--sandbox", "off", "--root", &root, "--audit-log"])
                    .arg(audit(log))
                    .arg("--policy")
                    .arg(tree.base.join(policy))
                    .arg("--")
                    .arg(&server[0]);
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
        let mut s = Session {
            to: BufWriter::new(child.stdin.take().expect("piped")),
            from: BufReader::with_capacity(1 << 20, child.stdout.take().expect("piped")),
            child,
            line: Vec::with_capacity(1 << 20),
            next_id: 0,
        };
        s.call(
            "initialize",
            r#"{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"bench_enforce","version":"1"}}"#,
        )?;
        s.to.write_all(b"{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}\n")
            .and_then(|()| s.to.flush())
            .map_err(|e| e.to_string())?;
        Ok(s)
    }

    /// One request and its whole response line (kept in `self.line`).
    fn call(&mut self, method: &str, params: &str) -> Result<(), String> {
        self.next_id += 1;
        let id = self.next_id;
        writeln!(
            self.to,
            r#"{{"jsonrpc":"2.0","id":{id},"method":"{method}","params":{params}}}"#
        )
        .and_then(|()| self.to.flush())
        .map_err(|e| format!("writing {method}: {e}"))?;
        self.line.clear();
        let n = self
            .from
            .read_until(b'\n', &mut self.line)
            .map_err(|e| format!("reading the answer to {method}: {e}"))?;
        if n == 0 {
            return Err(format!("the chain closed before answering {method}"));
        }
        let head = &self.line[..self.line.len().min(64)];
        let want = format!(r#""id":{id},"result""#);
        let result_first = format!(r#""id":{id}}}"#);
        let id_first = head.windows(want.len()).any(|w| w == want.as_bytes());
        let answered = id_first
            || (head.starts_with(br#"{"jsonrpc":"2.0","result""#)
                && self
                    .line
                    .trim_ascii_end()
                    .ends_with(result_first.as_bytes()));
        if !answered {
            return Err(format!(
                "unexpected answer to {method}: {}",
                String::from_utf8_lossy(&self.line[..self.line.len().min(300)])
            ));
        }
        Ok(())
    }

    /// The peak resident set of the process in front of the host (the relay, or the server
    /// for `direct`), from `/proc/<pid>/status` (`VmHWM`), in KiB.
    fn peak_rss_kib(&self) -> Option<u64> {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.child.id())).ok()?;
        status
            .lines()
            .find_map(|l| l.strip_prefix("VmHWM:"))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
    }

    /// CPU time used so far by the process in front of the host, all its threads
    /// (`/proc/<pid>/task/*/schedstat`, nanoseconds on the CPU): unlike latency on a shared
    /// VM, it does not move with wake-up delays, so it shows what each chain's work costs.
    fn cpu_ns(&self) -> u64 {
        let Ok(tasks) = std::fs::read_dir(format!("/proc/{}/task", self.child.id())) else {
            return 0;
        };
        tasks
            .flatten()
            .filter_map(|t| std::fs::read_to_string(t.path().join("schedstat")).ok())
            .filter_map(|s| s.split_whitespace().next()?.parse::<u64>().ok())
            .sum()
    }

    fn finish(mut self) -> Result<(), String> {
        drop(self.to);
        let status = self.child.wait().map_err(|e| e.to_string())?;
        if status.success() {
            Ok(())
        } else {
            Err(format!("the chain exited with {status}"))
        }
    }
}

#[derive(Default)]
struct Samples {
    read: Vec<Duration>,
    list: Vec<Duration>,
    /// Highest peak RSS over the rounds, KiB.
    rss_kib: u64,
    /// CPU time of the process in front of the host over the measured reads, ns.
    read_cpu_ns: u64,
    /// `tools/call` round trips (the value path each way): the answer's `id` before its
    /// `result`, and after it.
    call: [Vec<Duration>; 2],
    /// CPU time of the process in front of the host over the measured calls, ns, per order.
    call_cpu_ns: [u64; 2],
}

fn measure_round(
    o: &Options,
    tree: &Tree,
    round: usize,
    into: &mut [Samples],
) -> Result<(), String> {
    let mut sessions = Vec::new();
    for mode in Mode::ALL {
        sessions.push(
            Session::start(mode, o, tree, round).map_err(|e| format!("{}: {e}", mode.label()))?,
        );
    }
    let read = format!(r#"{{"uri":"file://{}/small.txt"}}"#, tree.root.display());
    // A value-path message each way: a tool call with a path argument, and its result (the
    // server writes the result before the id for the tool `result_first`).
    let calls = ["read_file", "result_first"].map(|name| {
        format!(
            r#"{{"name":"{name}","arguments":{{"path":"{}/small.txt"}}}}"#,
            tree.root.display()
        )
    });
    let k = sessions.len();
    let mut each = |i: usize,
                    f: &mut dyn FnMut(usize, &mut Session) -> Result<(), String>|
     -> Result<(), String> {
        for j in 0..k {
            let m = (i + j) % k;
            f(m, &mut sessions[m]).map_err(|e| format!("{}: {e}", Mode::ALL[m].label()))?;
        }
        Ok(())
    };
    for i in 0..o.warmup {
        each(i, &mut |_, s| s.call("resources/read", &read))?;
    }
    // Every chain passes the whole page (all entries are inside the root).
    each(0, &mut |m, s| {
        s.call("resources/list", "{}")?;
        let v: serde_json::Value =
            serde_json::from_slice(&s.line).map_err(|e| format!("list answer: {e}"))?;
        let n = v["result"]["resources"].as_array().map_or(0, Vec::len);
        if n == o.list_entries {
            Ok(())
        } else {
            Err(format!(
                "{}: the page has {n} of {} entries",
                Mode::ALL[m].label(),
                o.list_entries
            ))
        }
    })?;
    let mut cpu_before = vec![0; k];
    each(0, &mut |m, s| {
        cpu_before[m] = s.cpu_ns();
        Ok(())
    })?;
    for i in 0..o.requests {
        each(i, &mut |m, s| {
            let t = Instant::now();
            s.call("resources/read", &read)?;
            into[m].read.push(t.elapsed());
            Ok(())
        })?;
    }
    each(0, &mut |m, s| {
        into[m].read_cpu_ns += s.cpu_ns().saturating_sub(cpu_before[m]);
        cpu_before[m] = s.cpu_ns();
        Ok(())
    })?;
    for (order, call) in calls.iter().enumerate() {
        for i in 0..o.requests {
            each(i, &mut |m, s| {
                let t = Instant::now();
                s.call("tools/call", call)?;
                into[m].call[order].push(t.elapsed());
                Ok(())
            })?;
        }
        each(0, &mut |m, s| {
            into[m].call_cpu_ns[order] += s.cpu_ns().saturating_sub(cpu_before[m]);
            cpu_before[m] = s.cpu_ns();
            Ok(())
        })?;
    }
    for i in 0..o.lists {
        each(i, &mut |m, s| {
            let t = Instant::now();
            s.call("resources/list", "{}")?;
            into[m].list.push(t.elapsed());
            Ok(())
        })?;
    }
    for (m, s) in sessions.into_iter().enumerate() {
        into[m].rss_kib = into[m].rss_kib.max(s.peak_rss_kib().unwrap_or(0));
        s.finish()
            .map_err(|e| format!("{}: {e}", Mode::ALL[m].label()))?;
    }
    Ok(())
}

/// CPU per `tools/call` of one order (0: the id first, 1: the result first), µs.
fn call_cpu(s: &Samples, order: usize) -> f64 {
    s.call_cpu_ns[order] as f64 / 1000.0 / s.call[order].len().max(1) as f64
}

fn percentile(sorted: &[Duration], p: f64) -> f64 {
    let rank = ((p / 100.0) * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1].as_secs_f64() * 1e6
}

fn run(o: &Options) -> Result<(), String> {
    let tree = Tree::new(o.list_entries)?;
    // A user's tree predates the session that serves it: let a second pass (the hard-link
    // rule takes a session's start to the second; a directory changed since is looked at
    // entry by entry).
    std::thread::sleep(Duration::from_millis(1100));
    let mut samples: Vec<Samples> = Mode::ALL.iter().map(|_| Samples::default()).collect();
    for round in 1..=o.rounds {
        eprintln!("bench_enforce: round {round}/{}", o.rounds);
        measure_round(o, &tree, round, &mut samples)?;
    }
    for s in &mut samples {
        s.read.sort();
        s.list.sort();
        s.call.iter_mut().for_each(|c| c.sort());
    }
    println!(
        "enforcement benchmark: {} resources/read of a file: URI and {} resources/list pages of \
         {} file: entries per chain, {} round(s); sandbox off, audit log on a temp file",
        o.requests * o.rounds,
        o.lists * o.rounds,
        o.list_entries,
        o.rounds
    );
    println!();
    println!(
        "| chain                        | read p50 µs | read p99 µs | read CPU µs | list p50 µs | list p99 µs | call p50 µs | call CPU µs | rf call p50 µs | rf call CPU µs | peak RSS MiB |"
    );
    println!(
        "|------------------------------|------------:|------------:|------------:|------------:|------------:|------------:|------------:|---------------:|---------------:|-------------:|"
    );
    for (m, s) in Mode::ALL.iter().zip(&samples) {
        println!(
            "| {:<28} | {:>11.1} | {:>11.1} | {:>11.1} | {:>11.0} | {:>11.0} | {:>11.1} | {:>11.1} | {:>14.1} | {:>14.1} | {:>12.1} |",
            m.label(),
            percentile(&s.read, 50.0),
            percentile(&s.read, 99.0),
            s.read_cpu_ns as f64 / 1000.0 / s.read.len().max(1) as f64,
            percentile(&s.list, 50.0),
            percentile(&s.list, 99.0),
            percentile(&s.call[0], 50.0),
            call_cpu(s, 0),
            percentile(&s.call[1], 50.0),
            call_cpu(s, 1),
            s.rss_kib as f64 / 1024.0
        );
    }
    println!();
    let p50 = |m: usize, list: bool| {
        let s = &samples[m];
        percentile(if list { &s.list } else { &s.read }, 50.0)
    };
    let relay = 1;
    for enforcing in [2, 3, 4] {
        let ratio = p50(enforcing, false) / p50(relay, false);
        let added_ms = (p50(enforcing, true) - p50(relay, true)) / 1000.0;
        println!(
            "{}: resources/read p50 {ratio:.2}x relay-only (target <= 1.10x: {}); \
             {}-entry resources/list page adds {added_ms:.2} ms at p50 (target < 5 ms: {})",
            Mode::ALL[enforcing].label(),
            if ratio <= 1.10 { "met" } else { "NOT met" },
            o.list_entries,
            if added_ms < 5.0 { "met" } else { "NOT met" }
        );
    }
    let audit_ms = (p50(2, true) - p50(3, true)) / 1000.0;
    let each_ms = (p50(4, true) - p50(3, true)) / 1000.0;
    println!(
        "audit part of a {}-entry page at p50: {audit_ms:.2} ms with allowed = \"summary\" (the \
         default), {each_ms:.2} ms with allowed = \"each\" (enforcing minus allows unlogged)",
        o.list_entries
    );
    let floor = 5;
    let cpu = |m: usize| {
        let s = &samples[m];
        s.read_cpu_ns as f64 / 1000.0 / s.read.len().max(1) as f64
    };
    println!(
        "floor (relay-only + the kernel's answer alone): resources/read p50 {:.2}x relay-only, \
         +{:.1} µs at p50 and +{:.1} µs of CPU per read; enforcing: +{:.1} µs at p50 and \
         +{:.1} µs of CPU; the 1.10x target leaves {:.1} µs",
        p50(floor, false) / p50(relay, false),
        p50(floor, false) - p50(relay, false),
        cpu(floor) - cpu(relay),
        p50(2, false) - p50(relay, false),
        cpu(2) - cpu(relay),
        0.10 * p50(relay, false)
    );
    let base = 6;
    let call_p50 = |m: usize, order: usize| percentile(&samples[m].call[order], 50.0);
    println!(
        "this build vs the baseline chain ({}): resources/read p50 {:.2}x, {:+.1} µs of CPU per \
         read; tools/call p50 {:+.1} µs, {:+.1} µs of CPU per call; with the result before the \
         id: p50 {:+.1} µs, {:+.1} µs of CPU per call; {}-entry page {:+.2} ms at p50; peak \
         RSS {:+.1} MiB",
        o.baseline
            .as_ref()
            .map_or("this build again".to_owned(), |b| b.display().to_string()),
        p50(2, false) / p50(base, false),
        cpu(2) - cpu(base),
        call_p50(2, 0) - call_p50(base, 0),
        call_cpu(&samples[2], 0) - call_cpu(&samples[base], 0),
        call_p50(2, 1) - call_p50(base, 1),
        call_cpu(&samples[2], 1) - call_cpu(&samples[base], 1),
        o.list_entries,
        (p50(2, true) - p50(base, true)) / 1000.0,
        (samples[2].rss_kib as f64 - samples[base].rss_kib as f64) / 1024.0
    );
    let rss = samples[2].rss_kib as f64 / 1024.0;
    println!(
        "enforcing: rootfence's peak RSS over a session with {}-entry pages {rss:.1} MiB \
         (target <= 32 MiB: {})",
        o.list_entries,
        if rss <= 32.0 { "met" } else { "NOT met" }
    );
    if o.sdk_requests > 0 {
        sdk_read(o, &tree)?;
    }
    Ok(())
}

/// The official Python SDK client's small-resource read through the do-nothing byte relay,
/// rootfence's relay alone, and rootfence enforcing (audit on), side by side in one client
/// (scripts/bench_sdk_read.py, run with the pinned SDK's Python).
fn sdk_read(o: &Options, tree: &Tree) -> Result<(), String> {
    let python = o.sdk_python.clone();
    if !python.exists() {
        println!(
            "python SDK read: skipped ({} not found: run scripts/install-test-peers.sh)",
            python.display()
        );
        return Ok(());
    }
    let script = o.repo.join("scripts").join("bench_sdk_read.py");
    let server = |c: &mut Command| {
        c.arg(&o.bench_server).args(["--payload-bytes", "16"]);
    };
    let root = tree.root.display().to_string();
    let mut cmd = Command::new(&python);
    cmd.arg(&script)
        .args(["--uri", &format!("file://{root}/small.txt")])
        .args(["--requests", &o.sdk_requests.to_string()])
        .args(["--warmup", &(o.sdk_requests / 10).to_string()])
        .arg("--")
        .arg(format!("byte relay={}", o.byte_relay.display()))
        .arg("--");
    server(&mut cmd);
    cmd.arg(":::")
        .arg(format!("relay-only={}", o.relay_passthrough.display()))
        .arg("--");
    server(&mut cmd);
    cmd.arg(":::")
        .arg(format!("floor={}", o.relay_passthrough.display()))
        .args(["--floor", &root, "--"]);
    server(&mut cmd);
    cmd.arg(":::")
        .arg(format!("rootfence={}", o.rootfence.display()))
        .args(["run", "--sandbox", "off", "--root", &root, "--audit-log"])
        .arg(tree.base.join("audit-sdk.jsonl"))
        .arg("--");
    server(&mut cmd);
    let out = cmd
        .stderr(Stdio::inherit())
        .output()
        .map_err(|e| format!("python SDK read: cannot run {}: {e}", python.display()))?;
    if !out.status.success() {
        return Err(format!("python SDK read failed: {}", out.status));
    }
    let v: serde_json::Value = serde_json::from_slice(&out.stdout)
        .map_err(|e| format!("python SDK read: bad output: {e}"))?;
    let stats = |label: &str| -> (f64, f64) {
        let mut xs: Vec<f64> = v[label]
            .as_array()
            .map(|a| a.iter().filter_map(serde_json::Value::as_f64).collect())
            .unwrap_or_default();
        xs.sort_by(f64::total_cmp);
        let at = |p: f64| {
            let rank = ((p / 100.0) * xs.len() as f64).ceil() as usize;
            xs.get(rank.clamp(1, xs.len().max(1)) - 1)
                .copied()
                .unwrap_or(f64::NAN)
        };
        (at(50.0), at(99.0))
    };
    println!();
    println!(
        "official Python SDK client, small resources/read, {} reads per chain:",
        o.sdk_requests
    );
    println!();
    println!("| chain      | read p50 µs | read p99 µs |");
    println!("|------------|------------:|------------:|");
    for label in ["byte relay", "relay-only", "floor", "rootfence"] {
        let (p50, p99) = stats(label);
        println!("| {label:<10} | {p50:>11.0} | {p99:>11.0} |");
    }
    let ratio = stats("rootfence").0 / stats("byte relay").0;
    println!();
    println!(
        "python SDK read through rootfence (enforcing, audit on): p50 {ratio:.2}x the byte \
         relay's (target <= 1.05x: {})",
        if ratio <= 1.05 { "met" } else { "NOT met" }
    );
    println!(
        "python SDK read through the floor (relay + the kernel's answer alone): p50 {:.2}x the \
         byte relay's; relay-only {:.2}x",
        stats("floor").0 / stats("byte relay").0,
        stats("relay-only").0 / stats("byte relay").0
    );
    Ok(())
}

fn main() -> ExitCode {
    let o = match parse_options() {
        Ok(o) => o,
        Err(e) => {
            eprintln!("bench_enforce: {e}");
            return ExitCode::from(2);
        }
    };
    match run(&o) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("bench_enforce: error: {e}");
            ExitCode::FAILURE
        }
    }
}
