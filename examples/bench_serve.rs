//! The `rootfence serve` benchmark (issue 16): run it with `scripts/bench-serve.sh`, which
//! builds the release binaries first.
//!
//! It opens `--clients` concurrent MCP Streamable HTTP sessions on loopback (default 200),
//! each sending `--requests` requests one after another (default 100: `ping` and a small
//! `resources/read`, alternating), then deleting its session, against two targets side by
//! side in one run:
//! - **direct**: a minimal native Streamable HTTP MCP server (this example re-run with
//!   `--direct-server`: one process, sessions in memory), the floor for HTTP on this machine;
//! - **rootfence serve**: `rootfence serve --root <dir> --session-pool N -- bench_server`
//!   with its defaults otherwise (best-effort sandbox, built-in policy): every session its
//!   own sandboxed `bench_server` process, its own enforcer and audit session; N (default:
//!   `--clients`) servers pre-started, and the run begins once they are ready;
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
//! side (the process and all its descendants, sampled every 50 ms) and of the front process
//! alone (rootfence without its servers). Every exchange is
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
}

/// Every target, in the order they run.
const TARGETS: &[&str] = &[
    "direct",
    "rootfence",
    "rootfence-nopool",
    "supergateway",
    "mcp-proxy",
];

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.first().map(String::as_str) == Some("--direct-server") {
        return direct_server();
    }
    let mut o = Options {
        clients: 200,
        requests: 100,
        rounds: 1,
        targets: TARGETS.iter().map(|t| (*t).to_owned()).collect(),
        session_pool: None,
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
                    "bench_serve: unknown argument {other:?} (--clients N, --requests N, --rounds N, --session-pool N, --targets LIST)"
                );
                return ExitCode::from(2);
            }
        }
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
            if !sent {
                if let Some(i) = line.find("http://") {
                    let addr = line[i + 7..].trim_end_matches("/mcp").to_owned();
                    let _ = tx.send(addr);
                    sent = true;
                }
            }
        }
    });
    let addr = rx
        .recv_timeout(Duration::from_secs(30))
        .map_err(|_| format!("{name} printed no address"))?;
    Ok(Target { name, child, addr })
}

fn rootfence_target(name: &'static str, pool: usize, clients: usize) -> Result<Target, String> {
    let dir = exe_dir();
    let rootfence = dir.parent().expect("target/<profile>").join("rootfence");
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

fn direct_target() -> Result<Target, String> {
    let mut cmd = Command::new(std::env::current_exe().expect("own path"));
    cmd.arg("--direct-server");
    start("direct", cmd)
}

async fn bench(o: Options) -> Result<(), String> {
    println!(
        "rootfence serve benchmark: {} concurrent sessions x {} requests, loopback, {} round(s)",
        o.clients, o.requests, o.rounds
    );
    let mut results: Vec<Report> = Vec::new();
    let pool = o.session_pool.unwrap_or(o.clients);
    for round in 0..o.rounds {
        for name in &o.targets {
            let target = match name.as_str() {
                "direct" => direct_target(),
                "rootfence" => rootfence_target("rootfence serve", pool, o.clients),
                "rootfence-nopool" => rootfence_target("rootfence no pool", 0, o.clients),
                "supergateway" => supergateway_target(),
                "mcp-proxy" => mcp_proxy_target(),
                other => unreachable!("checked: {other}"),
            }?;
            let r = run(&target, &o).await?;
            eprintln!("round {}: {} done", round + 1, target.name);
            results.push(r);
            drop(target);
        }
    }
    println!(
        "\n{:<18} {:>11} {:>8} {:>9} {:>9} {:>9} {:>9} {:>10} {:>10} {:>12} {:>10}",
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
        "front RSS"
    );
    for r in &results {
        println!(
            "{:<18} {:>11} {:>8.2} {:>9.0} {:>9.0} {:>9.0} {:>9.1} {:>10.1} {:>10.1} {:>8.1} MiB {:>6.1} MiB",
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
        );
    }
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
        std::thread::spawn(move || {
            while sampling.load(Ordering::Relaxed) {
                peak.fetch_max(tree_rss(pid), Ordering::Relaxed);
                peak_self.fetch_max(rss(pid), Ordering::Relaxed);
                std::thread::sleep(Duration::from_millis(50));
            }
        })
    };
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
    sampling.store(false, Ordering::Relaxed);
    let _ = sampler.join();
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
    let mut children: std::collections::HashMap<u32, Vec<u32>> = Default::default();
    if let Ok(dir) = std::fs::read_dir("/proc") {
        for e in dir.flatten() {
            let Some(p) = e.file_name().to_str().and_then(|s| s.parse::<u32>().ok()) else {
                continue;
            };
            if let Ok(stat) = std::fs::read_to_string(format!("/proc/{p}/stat")) {
                // The parent pid is the second field after the parenthesised name.
                if let Some(rest) = stat.rsplit_once(')').map(|(_, r)| r) {
                    if let Some(ppid) = rest.split_whitespace().nth(1).and_then(|s| s.parse().ok())
                    {
                        children.entry(ppid).or_default().push(p);
                    }
                }
            }
        }
    }
    let mut total = 0;
    let mut stack = vec![pid];
    while let Some(p) = stack.pop() {
        total += rss(p);
        if let Some(c) = children.get(&p) {
            stack.extend(c);
        }
    }
    total
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

fn direct_server() -> ExitCode {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("a runtime");
    runtime.block_on(async {
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
            tokio::spawn(async move {
                let _ = direct_conn(stream, sessions).await;
            });
        }
    })
}

/// Serves one keep-alive connection: initialize opens a session (an id), ping answers `{}`,
/// resources/read a two-byte text, notifications 202, DELETE 204.
async fn direct_conn(stream: TcpStream, sessions: Arc<AtomicU64>) -> std::io::Result<()> {
    let mut io = BufReader::new(stream);
    let mut line = String::new();
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
            if let Some((k, v)) = l.split_once(':') {
                if k.eq_ignore_ascii_case("content-length") {
                    length = v.trim().parse().unwrap_or(0);
                }
            }
        }
        let mut body = vec![0; length];
        io.read_exact(&mut body).await?;
        let reply = if method == "DELETE" {
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
                    let result = if m == Some("resources/read") {
                        r#"{"contents":[{"uri":"bench://small","mimeType":"text/plain","text":"ok"}]}"#
                    } else {
                        "{}"
                    };
                    let b = format!(r#"{{"jsonrpc":"2.0","id":{},"result":{result}}}"#, id.get());
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
