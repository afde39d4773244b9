//! The `rootfence serve` benchmark (issue 16): run it with `scripts/bench-serve.sh`, which
//! builds the release binaries first.
//!
//! It opens `--clients` concurrent MCP Streamable HTTP sessions on loopback (default 200),
//! each sending `--requests` requests one after another (default 100: `ping` and a small
//! `resources/read`, alternating), then deleting its session, against two targets side by
//! side in one run:
//! - **direct**: a minimal native Streamable HTTP MCP server (this example re-run with
//!   `--direct-server`: one process, sessions in memory), the floor for HTTP on this machine;
//! - **floor shared** and **floor per session**: the same HTTP server passing each request
//!   as a line to `bench_server` and its answer back, nothing checked, no sandbox: one
//!   `bench_server` for every session (ids renamed, as a shared-server bridge must), or one
//!   per session started at its `initialize`. Their difference is what one server process
//!   per session costs at this concurrency, whoever runs it;
//! - **rootfence serve**: `rootfence serve --root <dir> --session-pool N -- bench_server`
//!   with its defaults otherwise (best-effort sandbox, built-in policy): every session its
//!   own sandboxed `bench_server` process, its own enforcer and audit session; N (default:
//!   `--clients`) servers pre-started, and the run begins once they are ready;
//! - **baseline** (with `--baseline ROOTFENCE`): the same as rootfence serve, run by another
//!   build (a change side by side with the build before it);
//! - **rootfence (no pool)**: the same with `--session-pool 0`: every session starts its
//!   sandboxed server when its `initialize` arrives;
//! - **supergateway** 4.0.0 (`--stdio <bench_server> --outputTransport streamableHttp
//!   --stateful`): a `bench_server` process per session, no sandbox, no checks;
//! - **mcp-proxy** 6.7.19 (`--server stream -- <bench_server>`): one `bench_server` process
//!   started with the proxy and shared by every session, no sandbox, no checks.
//!
//! The two bridges are Node.js programs installed by `scripts/install-bench-peers.sh`
//! (pinned, into `tests/peers/bench`). `--targets` picks targets by name (comma-separated).
//!
//! For each it reports: requests answered (every one must be, or the run fails), wall time
//! and throughput, per-request latency (p50, p99, max), session-open latency (p50, p99;
//! rootfence starts a sandboxed server per session), and the peak RSS of the whole server
//! side (the process and all its descendants, sampled every 100 ms) and of the front process
//! alone (rootfence without its servers), and the CPU per request during the run of the
//! front process, of the rest of its tree (servers, sandbox launchers) and of the clients
//! (this process). Every exchange is
//! bounded by a timeout, so a wedged server ends the run with an error instead of a hang.
//! Targets run one after the other (`--rounds` times, alternating); the machine is shared, so
//! compare figures from the same run.

use std::path::PathBuf;
use std::process::{Child, Command, ExitCode, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::TcpStream;

/// One exchange may take this long before the run is declared wedged.
const EXCHANGE_LIMIT: Duration = Duration::from_secs(60);

#[derive(Debug, Clone)]
struct Options {
    clients: usize,
    requests: usize,
    rounds: usize,
    targets: Vec<String>,
    session_pool: Option<usize>,
    /// Other builds' rootfence, each run as a `baseline` target (a change side by side with
    /// the build before it).
    baselines: Vec<PathBuf>,
}

/// Every target, in the order they run.
const TARGETS: &[&str] = &[
    "direct",
    "floor-shared",
    "floor-per-session",
    "rootfence",
    "baseline",
    "rootfence-nopool",
    "supergateway",
    "mcp-proxy",
];

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.first().map(String::as_str) == Some("--direct-server") {
        return direct_server(args.get(1).map(String::as_str));
    }
    let mut o = Options {
        clients: 200,
        requests: 100,
        rounds: 1,
        targets: TARGETS
            .iter()
            .filter(|t| **t != "baseline")
            .map(|t| (*t).to_owned())
            .collect(),
        session_pool: None,
        baselines: Vec::new(),
    };
    let mut it = args.iter();
    while let Some(a) = it.next() {
        let mut num = || -> usize {
            it.next()
                .and_then(|v| v.parse().ok())
                .unwrap_or_else(|| panic!("{a} takes a number"))
        };
        match a.as_str() {
            "--clients" => o.clients = num(),
            "--requests" => o.requests = num(),
            "--rounds" => o.rounds = num(),
            "--session-pool" => o.session_pool = Some(num()),
            "--baseline" => {
                let path = PathBuf::from(it.next().map(String::as_str).unwrap_or(""));
                if !path.is_file() {
                    eprintln!(
                        "bench_serve: --baseline takes another build's rootfence binary, not {}",
                        path.display()
                    );
                    return ExitCode::from(2);
                }
                o.baselines.push(path);
            }
            "--targets" => {
                let list = it.next().map(String::as_str).unwrap_or("");
                o.targets = list.split(',').map(str::to_owned).collect();
                if let Some(bad) = o.targets.iter().find(|t| !TARGETS.contains(&t.as_str())) {
                    eprintln!("bench_serve: unknown target {bad:?} (one of {TARGETS:?})");
                    return ExitCode::from(2);
                }
            }
            other => {
                eprintln!(
                    "bench_serve: unknown argument {other:?} (--clients N, --requests N, --rounds N, --session-pool N, --targets LIST, --baseline ROOTFENCE)"
                );
                return ExitCode::from(2);
            }
        }
    }
    if !o.baselines.is_empty() && !o.targets.iter().any(|t| t == "baseline") {
        let at = o
            .targets
            .iter()
            .position(|t| t == "rootfence")
            .map_or(0, |i| i + 1);
        o.targets.insert(at, "baseline".to_owned());
    }
    if o.baselines.is_empty() && o.targets.iter().any(|t| t == "baseline") {
        eprintln!("bench_serve: the baseline target needs --baseline ROOTFENCE");
        return ExitCode::from(2);
    }
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("a runtime");
    match runtime.block_on(bench(o)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("bench_serve: {e}");
            ExitCode::FAILURE
        }
    }
}

fn exe_dir() -> PathBuf {
    std::env::current_exe()
        .expect("the benchmark's own path")
        .parent()
        .expect("a directory")
        .to_owned()
}

/// A server under test: its process, and the address of its /mcp.
struct Target {
    name: &'static str,
    child: Child,
    addr: String,
}

impl Drop for Target {
    fn drop(&mut self) {
        let pid = nix::unistd::Pid::from_raw(self.child.id() as i32);
        let _ = nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGTERM);
        let start = Instant::now();
        while start.elapsed() < Duration::from_secs(20) {
            if self.child.try_wait().ok().flatten().is_some() {
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Starts `cmd`, which prints `... http://ADDR/mcp` on stderr once listening.
fn start(name: &'static str, mut cmd: Command) -> Result<Target, String> {
    cmd.stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    let mut child = cmd
        .spawn()
        .map_err(|e| format!("cannot start {name}: {e}"))?;
    let stderr = child.stderr.take().expect("piped");
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        use std::io::BufRead;
        let mut sent = false;
        for line in std::io::BufReader::new(stderr)
            .lines()
            .map_while(Result::ok)
        {
            if !sent && let Some(i) = line.find("http://") {
                let addr = line[i + 7..].trim_end_matches("/mcp").to_owned();
                let _ = tx.send(addr);
                sent = true;
            }
        }
    });
    let addr = rx
        .recv_timeout(Duration::from_secs(30))
        .map_err(|_| format!("{name} printed no address"))?;
    Ok(Target { name, child, addr })
}

fn rootfence_target(
    name: &'static str,
    rootfence: Option<&std::path::Path>,
    pool: usize,
    clients: usize,
) -> Result<Target, String> {
    let dir = exe_dir();
    let rootfence = rootfence.map_or_else(
        || dir.parent().expect("target/<profile>").join("rootfence"),
        std::path::Path::to_path_buf,
    );
    let audit =
        std::env::temp_dir().join(format!("bench-serve-audit-{}.jsonl", std::process::id()));
    // The operator's root: the sessions' roots do not depend on the client, so the pool
    // applies (the bench client declares no roots).
    let root = std::env::temp_dir().join(format!("bench-serve-root-{}", std::process::id()));
    std::fs::create_dir_all(&root).map_err(|e| format!("{}: {e}", root.display()))?;
    let mut cmd = Command::new(rootfence);
    // Room for every client (each session holds descriptors: no more than needed).
    cmd.args(["serve", "--listen", "127.0.0.1:0", "--max-sessions"])
        .arg(clients.max(64).to_string())
        .arg("--root")
        .arg(&root)
        .arg("--session-pool")
        .arg(pool.to_string())
        .arg("--audit-log")
        .arg(&audit)
        .arg("--")
        .arg(dir.join("bench_server"))
        // Not the 10 MiB payload of the relay benchmark: RSS here is per session.
        .args(["--payload-bytes", "2"])
        .env("RUST_LOG", "warn");
    let target = start(name, cmd)?;
    // The steady state a pool is for: its servers are up before the clients come.
    let deadline = Instant::now() + Duration::from_secs(120);
    while pool > 0 && metric(&target.addr, "rootfence_session_pool_ready") < pool as u64 {
        if Instant::now() > deadline {
            return Err(format!("{name}: the session pool did not fill within 120s"));
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    Ok(target)
}

/// One value of rootfence's /metrics (0 when it cannot be read).
fn metric(addr: &str, name: &str) -> u64 {
    use std::io::{Read, Write};
    let Ok(mut s) = std::net::TcpStream::connect(addr) else {
        return 0;
    };
    let _ = write!(
        s,
        "GET /metrics HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n"
    );
    let mut body = String::new();
    let _ = s.read_to_string(&mut body);
    body.lines()
        .find_map(|l| l.strip_prefix(name)?.strip_prefix(' ')?.trim().parse().ok())
        .unwrap_or(0)
}

/// Where `scripts/install-bench-peers.sh` put the bridges.
fn bench_peers() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/peers/bench/node_modules")
}

/// A free loopback port (for programs that take a port, not an address, and print none).
fn free_port() -> Result<u16, String> {
    let l = std::net::TcpListener::bind("127.0.0.1:0").map_err(|e| e.to_string())?;
    Ok(l.local_addr().map_err(|e| e.to_string())?.port())
}

/// Starts a bridge listening on `port` and waits until it accepts connections.
fn bridge_target(name: &'static str, mut cmd: Command, port: u16) -> Result<Target, String> {
    cmd.stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    let mut child = cmd.spawn().map_err(|e| {
        format!("cannot start {name} (node on PATH? run scripts/install-bench-peers.sh): {e}")
    })?;
    let addr = format!("127.0.0.1:{port}");
    let deadline = Instant::now() + Duration::from_secs(60);
    while std::net::TcpStream::connect(&addr).is_err() {
        if let Ok(Some(status)) = child.try_wait() {
            return Err(format!("{name} exited at start ({status})"));
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            return Err(format!("{name} did not listen on {addr} within 60s"));
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    Ok(Target { name, child, addr })
}

fn node_script(path: &str) -> Result<Command, String> {
    let script = bench_peers().join(path);
    if !script.exists() {
        return Err(format!(
            "{} is missing: run scripts/install-bench-peers.sh (or bench with --targets direct,rootfence)",
            script.display()
        ));
    }
    let mut cmd = Command::new("node");
    cmd.arg(script);
    Ok(cmd)
}

fn supergateway_target() -> Result<Target, String> {
    let port = free_port()?;
    let server = format!(
        "{} --payload-bytes 2",
        exe_dir().join("bench_server").display()
    );
    let mut cmd = node_script("supergateway/dist/index.js")?;
    cmd.args(["--stdio", &server])
        .args(["--outputTransport", "streamableHttp", "--stateful"])
        .args(["--port", &port.to_string(), "--logLevel", "none"]);
    bridge_target("supergateway", cmd, port)
}

fn mcp_proxy_target() -> Result<Target, String> {
    let port = free_port()?;
    let mut cmd = node_script("mcp-proxy/dist/bin/mcp-proxy.mjs")?;
    cmd.args(["--port", &port.to_string(), "--host", "127.0.0.1"])
        .args(["--server", "stream", "--"])
        .arg(exe_dir().join("bench_server"))
        .args(["--payload-bytes", "2"]);
    bridge_target("mcp-proxy", cmd, port)
}

fn direct_target(name: &'static str, mode: &str) -> Result<Target, String> {
    let mut cmd = Command::new(std::env::current_exe().expect("own path"));
    cmd.args(["--direct-server", mode]);
    start(name, cmd)
}

async fn bench(o: Options) -> Result<(), String> {
    println!(
        "rootfence serve benchmark: {} concurrent sessions x {} requests, loopback, {} round(s)",
        o.clients, o.requests, o.rounds
    );
    let mut results: Vec<Report> = Vec::new();
    let pool = o.session_pool.unwrap_or(o.clients);
    // Each baseline build is a target of its own, named by its position and file.
    let baselines: Vec<(&'static str, &std::path::Path)> = o
        .baselines
        .iter()
        .enumerate()
        .map(|(i, p)| {
            let file = p
                .file_name()
                .map_or_else(String::new, |f| f.to_string_lossy().into_owned());
            let name: &'static str = Box::leak(format!("b{}:{file}", i + 1).into_boxed_str());
            (name, p.as_path())
        })
        .collect();
    let mut runs: Vec<&str> = Vec::new();
    for t in &o.targets {
        if t == "baseline" {
            runs.extend(baselines.iter().map(|(n, _)| *n));
        } else {
            runs.push(t);
        }
    }
    for round in 0..o.rounds {
        for name in &runs {
            let target = match *name {
                "direct" => direct_target("direct", "memory"),
                "floor-shared" => direct_target("floor shared", "shared"),
                "floor-per-session" => direct_target("floor per session", "per-session"),
                "rootfence" => rootfence_target("rootfence serve", None, pool, o.clients),
                "rootfence-nopool" => rootfence_target("rootfence no pool", None, 0, o.clients),
                "supergateway" => supergateway_target(),
                "mcp-proxy" => mcp_proxy_target(),
                other => {
                    let (name, path) = baselines
                        .iter()
                        .find(|(n, _)| *n == other)
                        .expect("a known target");
                    rootfence_target(name, Some(path), pool, o.clients)
                }
            }?;
            let r = run(&target, &o).await?;
            eprintln!("round {}: {} done", round + 1, target.name);
            results.push(r);
            drop(target);
        }
    }
    println!(
        "\n{:<18} {:>11} {:>8} {:>9} {:>9} {:>9} {:>9} {:>10} {:>10} {:>12} {:>10} {:>9} {:>9} {:>9}",
        "target",
        "answered",
        "wall s",
        "req/s",
        "p50 µs",
        "p99 µs",
        "max ms",
        "open p50ms",
        "open p99ms",
        "peak RSS",
        "front RSS",
        "front µs",
        "rest µs",
        "client µs"
    );
    for r in &results {
        println!(
            "{:<18} {:>11} {:>8.2} {:>9.0} {:>9.0} {:>9.0} {:>9.1} {:>10.1} {:>10.1} {:>8.1} MiB {:>6.1} MiB {:>9.1} {:>9.1} {:>9.1}",
            r.name,
            format!("{}/{}", r.answered, r.expected),
            r.wall.as_secs_f64(),
            r.answered as f64 / r.wall.as_secs_f64(),
            pct(&r.latencies, 50.0) as f64 / 1e3,
            pct(&r.latencies, 99.0) as f64 / 1e3,
            r.latencies.last().copied().unwrap_or(0) as f64 / 1e6,
            pct(&r.opens, 50.0) as f64 / 1e6,
            pct(&r.opens, 99.0) as f64 / 1e6,
            r.peak_rss as f64 / (1 << 20) as f64,
            r.peak_self as f64 / (1 << 20) as f64,
            per_request(r.cpu_front, r.expected),
            per_request(r.cpu_rest, r.expected),
            per_request(r.cpu_client, r.expected),
        );
    }
    println!(
        "(front/rest/client µs: CPU per request during the run, of the front process, of the \
         rest of its process tree (servers, launchers), and of this benchmark's clients)"
    );
    if results.iter().any(|r| r.answered != r.expected) {
        return Err("some requests were not answered".into());
    }
    Ok(())
}

struct Report {
    name: &'static str,
    expected: u64,
    answered: u64,
    wall: Duration,
    /// Nanoseconds, sorted.
    latencies: Vec<u64>,
    opens: Vec<u64>,
    /// The whole server side (process tree), and the front process alone.
    peak_rss: u64,
    peak_self: u64,
    /// CPU used during the run (clock ticks): the front process alone, the rest of its
    /// tree (servers, sandbox launchers, ended ones included), and this client.
    cpu_front: u64,
    cpu_rest: u64,
    cpu_client: u64,
}

/// Clock ticks per second in /proc (USER_HZ: 100 on every Linux architecture rootfence runs on).
const TICKS_PER_SECOND: f64 = 100.0;

/// CPU µs per request for `ticks` over `requests`.
fn per_request(ticks: u64, requests: u64) -> f64 {
    ticks as f64 / TICKS_PER_SECOND * 1e6 / requests.max(1) as f64
}

fn pct(sorted: &[u64], p: f64) -> u64 {
    if sorted.is_empty() {
        return 0;
    }
    let i = ((p / 100.0) * (sorted.len() - 1) as f64).round() as usize;
    sorted[i.min(sorted.len() - 1)]
}

async fn run(target: &Target, o: &Options) -> Result<Report, String> {
    let answered = Arc::new(AtomicU64::new(0));
    let peak = Arc::new(AtomicU64::new(0));
    let peak_self = Arc::new(AtomicU64::new(0));
    let pid = target.child.id();
    let sampling = Arc::new(std::sync::atomic::AtomicBool::new(true));
    let sampler = {
        let peak = Arc::clone(&peak);
        let peak_self = Arc::clone(&peak_self);
        let sampling = Arc::clone(&sampling);
        // Walking /proc costs CPU on the same cores (more with a process per session): it
        // samples every 100 ms, and says what it used so the clients' CPU leaves it out.
        std::thread::spawn(move || {
            let mine = || stat_cpu_at("/proc/thread-self/stat").map_or(0, |(own, _)| own);
            let before = mine();
            while sampling.load(Ordering::Relaxed) {
                peak.fetch_max(tree_rss(pid), Ordering::Relaxed);
                peak_self.fetch_max(rss(pid), Ordering::Relaxed);
                std::thread::sleep(Duration::from_millis(100));
            }
            mine().saturating_sub(before)
        })
    };
    let cpu_before = (tree_cpu(pid), own_cpu(pid), own_cpu(std::process::id()));
    let start = Instant::now();
    let mut tasks = Vec::new();
    for c in 0..o.clients {
        let addr = target.addr.clone();
        let answered = Arc::clone(&answered);
        let n = o.requests;
        tasks.push(tokio::spawn(
            async move { client(c, addr, n, answered).await },
        ));
    }
    let mut latencies = Vec::new();
    let mut opens = Vec::new();
    let mut failure = None;
    for t in tasks {
        match t.await {
            Ok(Ok((open, lat))) => {
                opens.push(open);
                latencies.extend(lat);
            }
            Ok(Err(e)) => failure = Some(e),
            Err(e) => failure = Some(e.to_string()),
        }
    }
    let wall = start.elapsed();
    let cpu_after = (tree_cpu(pid), own_cpu(pid), own_cpu(std::process::id()));
    sampling.store(false, Ordering::Relaxed);
    let sampler_cpu = sampler.join().unwrap_or(0);
    if let Some(e) = failure {
        return Err(format!("{}: {e}", target.name));
    }
    latencies.sort_unstable();
    opens.sort_unstable();
    Ok(Report {
        name: target.name,
        expected: (o.clients * o.requests) as u64,
        answered: answered.load(Ordering::Relaxed),
        wall,
        latencies,
        opens,
        peak_rss: peak.load(Ordering::Relaxed),
        peak_self: peak_self.load(Ordering::Relaxed),
        cpu_front: cpu_after.1.saturating_sub(cpu_before.1),
        cpu_rest: cpu_after
            .0
            .saturating_sub(cpu_before.0)
            .saturating_sub(cpu_after.1.saturating_sub(cpu_before.1)),
        cpu_client: cpu_after
            .2
            .saturating_sub(cpu_before.2)
            .saturating_sub(sampler_cpu),
    })
}

/// One client: a keep-alive connection, a session, `n` requests, DELETE.
async fn client(
    c: usize,
    addr: String,
    n: usize,
    answered: Arc<AtomicU64>,
) -> Result<(u64, Vec<u64>), String> {
    let stream = TcpStream::connect(&addr)
        .await
        .map_err(|e| format!("client {c}: connect: {e}"))?;
    stream.set_nodelay(true).ok();
    let mut conn = Conn {
        io: BufReader::new(stream),
        addr,
        version: String::new(),
    };
    let t0 = Instant::now();
    let init = r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"bench","version":"1"}}}"#;
    let (status, session, reply) = conn.exchange("POST", init, None).await?;
    if status != 200 {
        return Err(format!("client {c}: initialize got {status}"));
    }
    // The version the server chose goes in MCP-Protocol-Version from now on.
    conn.version = reply
        .split("\"protocolVersion\":\"")
        .nth(1)
        .and_then(|r| r.split('"').next())
        .unwrap_or("2025-11-25")
        .to_owned();
    let session = session.ok_or_else(|| format!("client {c}: no Mcp-Session-Id"))?;
    let (status, _, _) = conn
        .exchange(
            "POST",
            r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
            Some(&session),
        )
        .await?;
    if status != 202 {
        return Err(format!(
            "client {c}: notifications/initialized got {status}"
        ));
    }
    let open = t0.elapsed().as_nanos() as u64;
    let mut lat = Vec::with_capacity(n);
    for i in 1..=n {
        let body = if i % 2 == 0 {
            format!(r#"{{"jsonrpc":"2.0","id":{i},"method":"ping"}}"#)
        } else {
            format!(
                r#"{{"jsonrpc":"2.0","id":{i},"method":"resources/read","params":{{"uri":"bench://small/{c}"}}}}"#
            )
        };
        let t = Instant::now();
        let (status, _, reply) = conn.exchange("POST", &body, Some(&session)).await?;
        lat.push(t.elapsed().as_nanos() as u64);
        let expected_id = format!("\"id\":{i}");
        if status != 200 || !reply.contains(&expected_id) || reply.contains("\"error\"") {
            return Err(format!("client {c}: request {i} got {status}: {reply}"));
        }
        answered.fetch_add(1, Ordering::Relaxed);
    }
    let _ = conn.exchange("DELETE", "", Some(&session)).await?;
    Ok((open, lat))
}

struct Conn {
    io: BufReader<TcpStream>,
    addr: String,
    /// The negotiated protocol version.
    version: String,
}

impl Conn {
    /// One request on the keep-alive connection: status, Mcp-Session-Id, body.
    async fn exchange(
        &mut self,
        method: &str,
        body: &str,
        session: Option<&str>,
    ) -> Result<(u16, Option<String>, String), String> {
        tokio::time::timeout(EXCHANGE_LIMIT, self.exchange_inner(method, body, session))
            .await
            .map_err(|_| format!("{method} made no progress for {EXCHANGE_LIMIT:?}"))?
    }

    async fn exchange_inner(
        &mut self,
        method: &str,
        body: &str,
        session: Option<&str>,
    ) -> Result<(u16, Option<String>, String), String> {
        let mut req = format!(
            "{method} /mcp HTTP/1.1\r\nHost: {}\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nContent-Length: {}\r\n",
            self.addr,
            body.len()
        );
        if let Some(s) = session {
            req.push_str(&format!(
                "Mcp-Session-Id: {s}\r\nMCP-Protocol-Version: {}\r\n",
                self.version
            ));
        }
        req.push_str("\r\n");
        req.push_str(body);
        let io = &mut self.io;
        io.get_mut()
            .write_all(req.as_bytes())
            .await
            .map_err(|e| e.to_string())?;
        let mut line = String::new();
        io.read_line(&mut line).await.map_err(|e| e.to_string())?;
        let status: u16 = line
            .split(' ')
            .nth(1)
            .and_then(|s| s.parse().ok())
            .ok_or_else(|| format!("bad status line {line:?}"))?;
        let mut length = 0usize;
        let mut chunked = false;
        let mut sid = None;
        loop {
            line.clear();
            io.read_line(&mut line).await.map_err(|e| e.to_string())?;
            let l = line.trim_end();
            if l.is_empty() {
                break;
            }
            if let Some((k, v)) = l.split_once(':') {
                let v = v.trim();
                match k.to_ascii_lowercase().as_str() {
                    "content-length" => length = v.parse().unwrap_or(0),
                    "transfer-encoding" => chunked = v.contains("chunked"),
                    "mcp-session-id" => sid = Some(v.to_owned()),
                    _ => {}
                }
            }
        }
        let mut out = Vec::new();
        if chunked {
            loop {
                line.clear();
                io.read_line(&mut line).await.map_err(|e| e.to_string())?;
                let size = usize::from_str_radix(line.trim(), 16).unwrap_or(0);
                let mut chunk = vec![0; size + 2];
                io.read_exact(&mut chunk).await.map_err(|e| e.to_string())?;
                if size == 0 {
                    break;
                }
                out.extend_from_slice(&chunk[..size]);
            }
        } else {
            out.resize(length, 0);
            io.read_exact(&mut out).await.map_err(|e| e.to_string())?;
        }
        Ok((status, sid, String::from_utf8_lossy(&out).into_owned()))
    }
}

/// The resident memory of `pid` and all its descendants, in bytes.
fn tree_rss(pid: u32) -> u64 {
    tree(pid).into_iter().map(rss).sum()
}

/// The CPU (clock ticks) used by `pid`'s whole tree so far: each live process's own and its
/// waited-for children's (so a server that ended is still counted, through its parent).
fn tree_cpu(pid: u32) -> u64 {
    tree(pid)
        .into_iter()
        .filter_map(stat_cpu)
        .map(|(own, children)| own + children)
        .sum()
}

/// The CPU (clock ticks) used by `pid` itself so far.
fn own_cpu(pid: u32) -> u64 {
    stat_cpu(pid).map_or(0, |(own, _)| own)
}

/// (utime + stime, cutime + cstime) of `pid`, from /proc/PID/stat.
fn stat_cpu(pid: u32) -> Option<(u64, u64)> {
    stat_cpu_at(&format!("/proc/{pid}/stat"))
}

/// The same from a stat file.
fn stat_cpu_at(path: &str) -> Option<(u64, u64)> {
    let stat = std::fs::read_to_string(path).ok()?;
    let rest = stat.rsplit_once(')')?.1;
    let f: Vec<u64> = rest
        .split_whitespace()
        .skip(11)
        .take(4)
        .map(|v| v.parse().unwrap_or(0))
        .collect();
    (f.len() == 4).then(|| (f[0] + f[1], f[2] + f[3]))
}

/// `pid` and all its descendants.
fn tree(pid: u32) -> Vec<u32> {
    let mut children: std::collections::HashMap<u32, Vec<u32>> = Default::default();
    if let Ok(dir) = std::fs::read_dir("/proc") {
        for e in dir.flatten() {
            let Some(p) = e.file_name().to_str().and_then(|s| s.parse::<u32>().ok()) else {
                continue;
            };
            if let Ok(stat) = std::fs::read_to_string(format!("/proc/{p}/stat")) {
                // The parent pid is the second field after the parenthesised name.
                if let Some(rest) = stat.rsplit_once(')').map(|(_, r)| r)
                    && let Some(ppid) = rest.split_whitespace().nth(1).and_then(|s| s.parse().ok())
                {
                    children.entry(ppid).or_default().push(p);
                }
            }
        }
    }
    let mut all = Vec::new();
    let mut stack = vec![pid];
    while let Some(p) = stack.pop() {
        all.push(p);
        if let Some(c) = children.get(&p) {
            stack.extend(c);
        }
    }
    all
}

fn rss(pid: u32) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmRSS:"))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|kb| kb.parse::<u64>().ok())
        })
        .map_or(0, |kb| kb * 1024)
}

// ---- the direct target: a minimal native Streamable HTTP MCP server ----------------------

/// How the direct server answers: in memory, or through `bench_server` processes (the
/// floor of a bridge: HTTP in, a line to a stdio server, a line back, nothing checked).
#[derive(Clone)]
enum Backend {
    /// Answers itself.
    Memory,
    /// One `bench_server` for every session, requests told apart by ids it renames.
    Shared(Arc<SharedServer>),
    /// A `bench_server` of its own per session, started at `initialize`.
    PerSession,
}

fn direct_server(mode: Option<&str>) -> ExitCode {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("a runtime");
    runtime.block_on(async {
        let backend = match mode.unwrap_or("memory") {
            "memory" => Backend::Memory,
            "shared" => Backend::Shared(SharedServer::start()),
            "per-session" => Backend::PerSession,
            other => panic!("bench_serve: unknown direct server mode {other:?}"),
        };
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        eprintln!(
            "direct server: http://{}/mcp",
            listener.local_addr().expect("address")
        );
        let sessions = Arc::new(AtomicU64::new(1));
        loop {
            let Ok((stream, _)) = listener.accept().await else {
                continue;
            };
            stream.set_nodelay(true).ok();
            let sessions = Arc::clone(&sessions);
            let backend = backend.clone();
            tokio::spawn(async move {
                let _ = direct_conn(stream, sessions, backend).await;
            });
        }
    })
}

/// A `bench_server` child with piped stdio.
fn spawn_bench_server() -> tokio::process::Child {
    tokio::process::Command::new(exe_dir().join("bench_server"))
        .args(["--payload-bytes", "2"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("bench_server starts")
}

/// One `bench_server` shared by every session: each request gets an id of the server's
/// own, and its answer is routed back by it (what a shared-server bridge such as mcp-proxy
/// must do at the least).
struct SharedServer {
    stdin: tokio::sync::Mutex<tokio::process::ChildStdin>,
    waiting:
        std::sync::Mutex<std::collections::HashMap<u64, tokio::sync::oneshot::Sender<Vec<u8>>>>,
    next: AtomicU64,
    _child: std::sync::Mutex<tokio::process::Child>,
}

impl SharedServer {
    fn start() -> Arc<SharedServer> {
        let mut child = spawn_bench_server();
        let stdin = child.stdin.take().expect("piped");
        let stdout = child.stdout.take().expect("piped");
        let shared = Arc::new(SharedServer {
            stdin: tokio::sync::Mutex::new(stdin),
            waiting: Default::default(),
            next: AtomicU64::new(1),
            _child: std::sync::Mutex::new(child),
        });
        let me = Arc::clone(&shared);
        tokio::spawn(async move {
            let mut lines = BufReader::new(stdout);
            let mut line = Vec::new();
            loop {
                line.clear();
                if lines.read_until(b'\n', &mut line).await.unwrap_or(0) == 0 {
                    return;
                }
                #[derive(serde::Deserialize)]
                struct Resp {
                    id: u64,
                }
                let Ok(r) = serde_json::from_slice::<Resp>(&line) else {
                    continue;
                };
                let tx = me.waiting.lock().unwrap().remove(&r.id);
                if let Some(tx) = tx {
                    let _ = tx.send(std::mem::take(&mut line));
                }
            }
        });
        shared
    }

    /// Sends `body` (a request with id `id`) under an id of the server's own; the answer
    /// with `id` restored.
    async fn call(&self, body: &[u8], id: &str) -> std::io::Result<Vec<u8>> {
        let mine = self.next.fetch_add(1, Ordering::Relaxed);
        let text = String::from_utf8_lossy(body);
        let line = text.replacen(&format!("\"id\":{id}"), &format!("\"id\":{mine}"), 1) + "\n";
        let (tx, rx) = tokio::sync::oneshot::channel();
        self.waiting.lock().unwrap().insert(mine, tx);
        self.stdin.lock().await.write_all(line.as_bytes()).await?;
        let answer = rx.await.map_err(std::io::Error::other)?;
        let answer = String::from_utf8_lossy(&answer);
        Ok(answer
            .trim_end()
            .replacen(&format!("\"id\":{mine}"), &format!("\"id\":{id}"), 1)
            .into_bytes())
    }
}

/// A session's own `bench_server`: one line in, one line out.
struct OwnServer {
    stdin: tokio::process::ChildStdin,
    stdout: BufReader<tokio::process::ChildStdout>,
    _child: tokio::process::Child,
}

impl OwnServer {
    fn start() -> OwnServer {
        let mut child = spawn_bench_server();
        OwnServer {
            stdin: child.stdin.take().expect("piped"),
            stdout: BufReader::new(child.stdout.take().expect("piped")),
            _child: child,
        }
    }

    async fn call(&mut self, body: &[u8]) -> std::io::Result<Vec<u8>> {
        let mut line = Vec::with_capacity(body.len() + 1);
        line.extend_from_slice(body);
        line.push(b'\n');
        self.stdin.write_all(&line).await?;
        let mut answer = Vec::new();
        self.stdout.read_until(b'\n', &mut answer).await?;
        while answer.last().is_some_and(u8::is_ascii_whitespace) {
            answer.pop();
        }
        Ok(answer)
    }
}

/// Serves one keep-alive connection (one session: the benchmark's client opens one per
/// session): initialize opens a session (an id), ping answers `{}`, resources/read a
/// two-byte text (from the backend), notifications 202, DELETE 204.
async fn direct_conn(
    stream: TcpStream,
    sessions: Arc<AtomicU64>,
    backend: Backend,
) -> std::io::Result<()> {
    let mut io = BufReader::new(stream);
    let mut line = String::new();
    let mut own: Option<OwnServer> = None;
    loop {
        line.clear();
        if io.read_line(&mut line).await? == 0 {
            return Ok(());
        }
        let method = line.split(' ').next().unwrap_or("").to_owned();
        let mut length = 0;
        loop {
            line.clear();
            io.read_line(&mut line).await?;
            let l = line.trim_end();
            if l.is_empty() {
                break;
            }
            if let Some((k, v)) = l.split_once(':')
                && k.eq_ignore_ascii_case("content-length")
            {
                length = v.trim().parse().unwrap_or(0);
            }
        }
        let mut body = vec![0; length];
        io.read_exact(&mut body).await?;
        let reply = if method == "DELETE" {
            own = None;
            "HTTP/1.1 204 No Content\r\n\r\n".to_owned()
        } else {
            #[derive(serde::Deserialize)]
            struct Req<'a> {
                #[serde(borrow)]
                id: Option<&'a serde_json::value::RawValue>,
                method: Option<String>,
            }
            let req: Req<'_> = serde_json::from_slice(&body).map_err(std::io::Error::other)?;
            match (req.id, req.method.as_deref()) {
                (None, _) => "HTTP/1.1 202 Accepted\r\nContent-Length: 0\r\n\r\n".to_owned(),
                (Some(id), Some("initialize")) => {
                    if matches!(backend, Backend::PerSession) {
                        // Started at initialize, like a bridge that spawns per session.
                        let mut server = OwnServer::start();
                        server.call(&body).await?;
                        own = Some(server);
                    }
                    let s = sessions.fetch_add(1, Ordering::Relaxed);
                    let b = format!(
                        r#"{{"jsonrpc":"2.0","id":{},"result":{{"protocolVersion":"2025-11-25","capabilities":{{"resources":{{}}}},"serverInfo":{{"name":"direct","version":"1"}}}}}}"#,
                        id.get()
                    );
                    format!(
                        "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nMcp-Session-Id: s{s}\r\nContent-Length: {}\r\n\r\n{b}",
                        b.len()
                    )
                }
                (Some(id), m) => {
                    let b = match &backend {
                        Backend::Memory => {
                            let result = if m == Some("resources/read") {
                                r#"{"contents":[{"uri":"bench://small","mimeType":"text/plain","text":"ok"}]}"#
                            } else {
                                "{}"
                            };
                            format!(r#"{{"jsonrpc":"2.0","id":{},"result":{result}}}"#, id.get())
                        }
                        Backend::Shared(server) => {
                            String::from_utf8_lossy(&server.call(&body, id.get()).await?)
                                .into_owned()
                        }
                        Backend::PerSession => {
                            let server = own.as_mut().ok_or_else(|| {
                                std::io::Error::other("a request before initialize")
                            })?;
                            String::from_utf8_lossy(&server.call(&body).await?).into_owned()
                        }
                    };
                    format!(
                        "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{b}",
                        b.len()
                    )
                }
            }
        };
        io.get_mut().write_all(reply.as_bytes()).await?;
    }
}
