//! The syslog sink (issue 15), through the real binary: receivers in the test parse every
//! message strictly as RFC 5424 (octet-counted framing over TCP, RFC 6587), and count
//! them against the log file. A burst of 10,000 decisions over TCP arrives whole; a
//! receiver that is down never blocks the relay, and what it missed is audited.

mod common;

use std::collections::{BTreeMap, HashSet};
use std::io::{BufReader, Read};
use std::net::{TcpListener, UdpSocket};
use std::os::unix::net::UnixDatagram;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::mpsc;
use std::time::Duration;

use common::{Proxy, rootfence, tempdir, test_server};
use serde_json::{Value, json};

/// One RFC 5424 message, as parsed.
#[derive(Debug, Clone)]
struct Msg {
    pri: u16,
    timestamp: String,
    app: String,
    msgid: String,
    sd_id: String,
    params: BTreeMap<String, String>,
    msg: Vec<u8>,
}

/// A strict RFC 5424 parser (section 6): every field's syntax, the structured data's
/// escaping, and a UTF-8 MSG with its BOM.
fn parse5424(b: &[u8]) -> Result<Msg, String> {
    let mut i = 0;
    let printus = |c: u8| (33..=126).contains(&c);
    // PRI
    if b.first() != Some(&b'<') {
        return Err("no <".into());
    }
    i += 1;
    let s = i;
    while i < b.len() && b[i].is_ascii_digit() {
        i += 1;
    }
    let digits = &b[s..i];
    if digits.is_empty() || digits.len() > 3 || (digits.len() > 1 && digits[0] == b'0') {
        return Err("bad PRI digits".into());
    }
    let pri: u16 = std::str::from_utf8(digits).unwrap().parse().unwrap();
    if pri > 191 || b.get(i) != Some(&b'>') {
        return Err("bad PRI".into());
    }
    i += 1;
    // VERSION SP
    if !b[i..].starts_with(b"1 ") {
        return Err("version is not 1".into());
    }
    i += 2;
    let mut field = |max: usize, what: &str| -> Result<String, String> {
        let s = i;
        while i < b.len() && b[i] != b' ' {
            if !printus(b[i]) {
                return Err(format!("{what}: not PRINTUSASCII"));
            }
            i += 1;
        }
        if i == s || i - s > max || b.get(i) != Some(&b' ') {
            return Err(format!("{what}: bad length or no SP"));
        }
        let f = String::from_utf8(b[s..i].to_vec()).unwrap();
        i += 1;
        Ok(f)
    };
    let timestamp = field(64, "TIMESTAMP")?;
    check_timestamp(&timestamp)?;
    let _hostname = field(255, "HOSTNAME")?;
    let app = field(48, "APP-NAME")?;
    let _procid = field(128, "PROCID")?;
    let msgid = field(32, "MSGID")?;
    // STRUCTURED-DATA: exactly one element here, or "-".
    let mut params = BTreeMap::new();
    let mut sd_id = String::new();
    if b.get(i) == Some(&b'-') {
        i += 1;
    } else {
        while b.get(i) == Some(&b'[') {
            i += 1;
            let s = i;
            while i < b.len() && !matches!(b[i], b' ' | b']') {
                if !printus(b[i]) || matches!(b[i], b'=' | b'"') {
                    return Err("bad SD-ID".into());
                }
                i += 1;
            }
            if i == s || i - s > 32 {
                return Err("bad SD-ID length".into());
            }
            sd_id = String::from_utf8(b[s..i].to_vec()).unwrap();
            while b.get(i) == Some(&b' ') {
                i += 1;
                let s = i;
                while i < b.len() && b[i] != b'=' {
                    if !printus(b[i]) || matches!(b[i], b']' | b'"' | b' ') {
                        return Err("bad PARAM-NAME".into());
                    }
                    i += 1;
                }
                if i == s || i - s > 32 {
                    return Err("bad PARAM-NAME length".into());
                }
                let name = String::from_utf8(b[s..i].to_vec()).unwrap();
                if b.get(i..i + 2) != Some(b"=\"") {
                    return Err("no =\" after PARAM-NAME".into());
                }
                i += 2;
                let mut val = Vec::new();
                loop {
                    match b.get(i) {
                        None => return Err("unterminated PARAM-VALUE".into()),
                        Some(b'\\') => {
                            match b.get(i + 1) {
                                Some(c @ (b'"' | b'\\' | b']')) => val.push(*c),
                                _ => return Err("a backslash escapes nothing".into()),
                            }
                            i += 2;
                        }
                        Some(b'"') => {
                            i += 1;
                            break;
                        }
                        Some(b']') => return Err("unescaped ] in PARAM-VALUE".into()),
                        Some(c) => {
                            val.push(*c);
                            i += 1;
                        }
                    }
                }
                let val = String::from_utf8(val).map_err(|_| "PARAM-VALUE not UTF-8")?;
                params.insert(name, val);
            }
            if b.get(i) != Some(&b']') {
                return Err("no ] after SD-ELEMENT".into());
            }
            i += 1;
        }
    }
    // [SP MSG]
    let msg = match b.get(i) {
        None => Vec::new(),
        Some(b' ') => {
            let rest = &b[i + 1..];
            let body = rest
                .strip_prefix(b"\xEF\xBB\xBF")
                .ok_or("MSG without a BOM")?;
            std::str::from_utf8(body).map_err(|_| "MSG not UTF-8")?;
            body.to_vec()
        }
        Some(_) => return Err("no SP before MSG".into()),
    };
    Ok(Msg {
        pri,
        timestamp,
        app,
        msgid,
        sd_id,
        params,
        msg,
    })
}

/// FULL-DATE "T" FULL-TIME, with at most 6 fraction digits (RFC 5424, 6.2.3).
fn check_timestamp(t: &str) -> Result<(), String> {
    let b = t.as_bytes();
    let d = |r: std::ops::Range<usize>| b.get(r).is_some_and(|s| s.iter().all(u8::is_ascii_digit));
    let ok = b.len() >= 20
        && d(0..4)
        && b[4] == b'-'
        && d(5..7)
        && b[7] == b'-'
        && d(8..10)
        && b[10] == b'T'
        && d(11..13)
        && b[13] == b':'
        && d(14..16)
        && b[16] == b':'
        && d(17..19);
    if !ok {
        return Err(format!("bad TIMESTAMP {t}"));
    }
    let mut i = 19;
    if b[i] == b'.' {
        let s = i + 1;
        i = s;
        while i < b.len() && b[i].is_ascii_digit() {
            i += 1;
        }
        if i == s || i - s > 6 {
            return Err(format!("bad TIME-SECFRAC in {t}"));
        }
    }
    match &b[i..] {
        b"Z" => Ok(()),
        [b'+' | b'-', h1, h2, b':', m1, m2]
            if [h1, h2, m1, m2].iter().all(|c| c.is_ascii_digit()) =>
        {
            Ok(())
        }
        _ => Err(format!("bad TIME-OFFSET in {t}")),
    }
}

/// Reads octet-counted frames (RFC 6587 3.4.1) from every connection, in order.
fn tcp_receiver(l: TcpListener, tx: mpsc::Sender<Result<Msg, String>>) {
    std::thread::spawn(move || {
        for conn in l.incoming() {
            let Ok(conn) = conn else { return };
            let mut r = BufReader::new(conn);
            loop {
                let mut len = Vec::new();
                let mut byte = [0u8; 1];
                loop {
                    match r.read(&mut byte) {
                        Ok(1) if byte[0] == b' ' => break,
                        Ok(1) => len.push(byte[0]),
                        _ => {
                            len.clear();
                            break;
                        }
                    }
                }
                if len.is_empty() {
                    break;
                }
                let ok = len.iter().all(u8::is_ascii_digit) && len[0] != b'0';
                if !ok {
                    let _ = tx.send(Err(format!("bad MSG-LEN {len:?}")));
                    break;
                }
                let n: usize = std::str::from_utf8(&len).unwrap().parse().unwrap();
                let mut m = vec![0u8; n];
                if r.read_exact(&mut m).is_err() {
                    let _ = tx.send(Err("frame cut short".into()));
                    break;
                }
                if tx.send(parse5424(&m)).is_err() {
                    return;
                }
            }
        }
    });
}

fn setup(address: &str, extra: &str) -> (tempfile::TempDir, PathBuf, PathBuf, PathBuf) {
    let t = tempdir();
    let project = t.path().join("project");
    std::fs::create_dir(&project).unwrap();
    std::fs::write(project.join("a.txt"), "a").unwrap();
    let log = t.path().join("state").join("audit.jsonl");
    let policy = t.path().join("policy.toml");
    std::fs::write(
        &policy,
        format!(
            "version = 1\n[audit]\npath = {:?}\n{extra}\n[audit.syslog]\naddress = {address:?}\n",
            log.display().to_string()
        ),
    )
    .unwrap();
    let project = project.canonicalize().unwrap();
    (t, project, log, policy)
}

/// A session as a host runs it (roots sent, default sandbox): `reads` reads of a file in
/// the project, sent as one burst, then `denied` reads outside it.
fn session(project: &Path, policy: &Path, reads: u64, denied: u64) -> String {
    let mut cmd = Command::new(rootfence());
    cmd.current_dir(project)
        .arg("run")
        .arg("--policy")
        .arg(policy)
        .arg("--")
        .arg(test_server());
    let mut p = Proxy::spawn(cmd);
    let root = format!("file://{}", project.display());
    p.initialize_with_roots("test-host", &root);
    let uri = format!("{root}/a.txt");
    let raw = json!({"contents":[{"uri":uri,"text":"a"}]}).to_string();
    let mut burst = String::new();
    for i in 0..reads {
        burst.push_str(
            &json!({"jsonrpc":"2.0","id":i + 1,"method":"resources/read",
                "params":{"uri":uri,"_rawResult":raw}})
            .to_string(),
        );
        burst.push('\n');
    }
    p.send_raw(burst.as_bytes());
    for _ in 0..reads {
        let r = p.recv();
        assert!(r.get("result").is_some(), "{r}");
    }
    for i in 0..denied {
        p.send_json(
            &json!({"jsonrpc":"2.0","id":format!("d{i}"),"method":"resources/read",
            "params":{"uri":"file:///etc/passwd"}}),
        );
        assert!(p.recv().get("error").is_some());
    }
    p.close_stdin();
    assert_eq!(p.exit_code(), 0, "{}", p.stderr());
    p.stderr()
}

fn log_lines(log: &Path) -> Vec<String> {
    std::fs::read_to_string(log)
        .unwrap()
        .lines()
        .map(str::to_owned)
        .collect()
}

/// Collects messages until the log's every line has arrived (or patience runs out).
fn collect(rx: &mpsc::Receiver<Result<Msg, String>>, want: usize) -> Vec<Msg> {
    let mut out = Vec::new();
    while out.len() < want {
        match rx.recv_timeout(Duration::from_secs(20)) {
            Ok(Ok(m)) => out.push(m),
            Ok(Err(e)) => panic!("a message is not RFC 5424: {e}"),
            Err(_) => break,
        }
    }
    out
}

/// Every message carries exactly a log line as MSG, and its structured data matches it.
fn check_against_log(msgs: &[Msg], log: &[String]) {
    let lines: HashSet<&str> = log.iter().map(String::as_str).collect();
    for m in msgs {
        assert_eq!(m.app, "rootfence");
        assert_eq!(m.sd_id, "rootfence@32473");
        let text = std::str::from_utf8(&m.msg).unwrap();
        if m.msgid == "checkpoint" {
            continue;
        }
        assert!(lines.contains(text), "MSG is not a log line: {text}");
        let v: Value = serde_json::from_str(text).unwrap();
        assert_eq!(m.msgid, v["event"].as_str().unwrap());
        assert_eq!(m.params["seq"], v["seq"].to_string());
        assert_eq!(m.params["session"], v["session"].as_str().unwrap());
        assert_eq!(m.timestamp, v["ts"].as_str().unwrap());
        let deny = v["decision"] == "deny";
        // authpriv (10) * 8 + warning (4) for a denial, informational (6) otherwise.
        if v["event"] == "decision" {
            assert_eq!(m.pri, if deny { 84 } else { 86 }, "{text}");
            assert_eq!(m.params["decision"], v["decision"].as_str().unwrap());
            assert_eq!(m.params["uri"], v["uri"].as_str().unwrap());
        }
    }
}

#[test]
fn tcp_burst_of_10000_decisions_arrives_whole() {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = format!("tcp://{}", l.local_addr().unwrap());
    let (tx, rx) = mpsc::channel();
    tcp_receiver(l, tx);
    let (_t, project, log, policy) = setup(&addr, "");
    session(&project, &policy, 10_000, 3);
    let lines = log_lines(&log);
    let msgs = collect(&rx, lines.len());
    assert_eq!(msgs.len(), lines.len(), "every record arrives");
    check_against_log(&msgs, &lines);
    let decisions = msgs.iter().filter(|m| m.msgid == "decision").count();
    assert_eq!(decisions, 10_003, "10,000 allowed + 3 denied decisions");
    // In order, no duplicate.
    let seqs: Vec<u64> = msgs
        .iter()
        .map(|m| m.params["seq"].parse().unwrap())
        .collect();
    assert!(
        seqs.windows(2).all(|w| w[0] + 1 == w[1]),
        "in order, once each"
    );
    assert!(
        !lines
            .iter()
            .any(|l| l.contains("\"event\":\"sink_dropped\""))
    );
}

/// A loopback port nothing listens on, for a receiver that is down (or starts late). Taken
/// below the kernel's ephemeral range: a port the kernel handed out for `:0` and that was
/// released could be handed out again, to another test's listener or outgoing connection,
/// before the late receiver binds it. Nothing in the suite binds a fixed port here.
fn port_nothing_uses() -> std::net::SocketAddr {
    let low: u16 = std::fs::read_to_string("/proc/sys/net/ipv4/ip_local_port_range")
        .ok()
        .and_then(|r| r.split_whitespace().next()?.parse().ok())
        .unwrap_or(32768);
    let start = 10_000u16.min(low.saturating_sub(1));
    let span = low.saturating_sub(start).max(1);
    let offset = (std::process::id() % u32::from(span)) as u16;
    (0..span)
        .map(|i| start + (offset + i) % span)
        .find_map(|port| {
            let l = TcpListener::bind(("127.0.0.1", port)).ok()?;
            l.local_addr().ok()
        })
        .expect("a free loopback port below the ephemeral range")
}

#[test]
fn receiver_that_starts_late_gets_everything() {
    // Nothing listens at first: the sink retries with backoff while records queue.
    let sock = port_nothing_uses();
    let (_t, project, log, policy) = setup(&format!("tcp://{sock}"), "");
    let (tx, rx) = mpsc::channel();
    let late = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(700));
        tcp_receiver(TcpListener::bind(sock).unwrap(), tx);
    });
    session(&project, &policy, 200, 1);
    late.join().unwrap();
    let lines = log_lines(&log);
    let msgs = collect(&rx, lines.len());
    check_against_log(&msgs, &lines);
    let got: HashSet<String> = msgs.iter().map(|m| m.params["seq"].clone()).collect();
    assert_eq!(
        got.len(),
        lines.len(),
        "every record arrives once the receiver is up"
    );
}

#[test]
fn receiver_down_never_blocks_the_relay_and_the_loss_is_audited() {
    let sock = port_nothing_uses();
    let (_t, project, log, policy) = setup(&format!("tcp://{sock}"), "");
    // A tiny queue, so it overflows while nobody listens.
    let text = std::fs::read_to_string(&policy).unwrap() + "queue = 16\n";
    std::fs::write(&policy, text).unwrap();
    let stderr = session(&project, &policy, 500, 2);
    let lines = log_lines(&log);
    let dropped: Vec<Value> = lines
        .iter()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter(|v| v["event"] == "sink_dropped")
        .collect();
    assert!(!dropped.is_empty(), "the loss is audited");
    assert_eq!(dropped[0]["sink"], "syslog");
    assert!(
        dropped[0]["dropped"].as_u64().unwrap() > 0,
        "{:?}",
        dropped[0]
    );
    // The log itself is whole: every decision is there.
    let decisions = lines
        .iter()
        .filter(|l| l.contains("\"event\":\"decision\""))
        .count();
    assert_eq!(decisions, 502);
    assert!(
        stderr.contains("were not delivered at session end"),
        "{stderr}"
    );
    // The log still verifies.
    let o = Command::new(rootfence())
        .args(["audit", "verify"])
        .arg(&log)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stdout));
}

#[test]
fn udp_messages_parse_as_rfc5424() {
    let sock = UdpSocket::bind("127.0.0.1:0").unwrap();
    let addr = format!("udp://{}", sock.local_addr().unwrap());
    let (_t, project, log, policy) = setup(&addr, "");
    session(&project, &policy, 20, 2);
    sock.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    let lines = log_lines(&log);
    let mut msgs = Vec::new();
    let mut buf = vec![0u8; 65536];
    while msgs.len() < lines.len() {
        let Ok(n) = sock.recv(&mut buf) else { break };
        msgs.push(parse5424(&buf[..n]).unwrap_or_else(|e| panic!("not RFC 5424: {e}")));
    }
    assert_eq!(msgs.len(), lines.len());
    check_against_log(&msgs, &lines);
}

#[test]
fn unix_socket_gets_records_and_signed_checkpoints() {
    let d = tempdir();
    let sock_path = d.path().join("log.sock");
    let sock = UnixDatagram::bind(&sock_path).unwrap();
    let keys = d.path().join("keys");
    std::fs::create_dir(&keys).unwrap();
    let key = keys.join("ck.key");
    let o = Command::new(rootfence())
        .args(["audit", "keygen"])
        .arg(&key)
        .output()
        .unwrap();
    assert!(o.status.success());
    let (_t, project, log, policy) = setup(
        &format!("unix://{}", sock_path.display()),
        &format!("checkpoint_key = {:?}", key.display().to_string()),
    );
    // Read as a syslog daemon does, while the session runs (a unix datagram socket holds
    // only a few messages unread).
    let reader = std::thread::spawn(move || {
        sock.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        let mut msgs = Vec::new();
        let mut buf = vec![0u8; 65536];
        while let Ok(n) = sock.recv(&mut buf) {
            msgs.push(parse5424(&buf[..n]).unwrap_or_else(|e| panic!("not RFC 5424: {e}")));
        }
        msgs
    });
    session(&project, &policy, 10, 1);
    let lines = log_lines(&log);
    let msgs = reader.join().unwrap();
    assert_eq!(
        msgs.iter().filter(|m| m.msgid != "checkpoint").count(),
        lines.len()
    );
    check_against_log(&msgs, &lines);
    let ck = msgs
        .iter()
        .rfind(|m| m.msgid == "checkpoint")
        .unwrap_or_else(|| {
            panic!(
                "the final checkpoint is shipped: {:?}",
                msgs.iter().map(|m| m.msgid.clone()).collect::<Vec<_>>()
            )
        });
    let v: Value = serde_json::from_slice(&ck.msg).unwrap();
    assert_eq!(v["seq"], lines.len() as u64, "it covers the session_end");
    let file = std::fs::read_to_string(log.with_file_name("audit.checkpoints.jsonl")).unwrap();
    assert!(
        file.lines().any(|l| l.as_bytes() == &ck.msg[..]),
        "the shipped checkpoint is the one in the file"
    );
}

#[test]
fn ocsf_format_puts_the_mapped_record_in_msg() {
    let sock = UdpSocket::bind("127.0.0.1:0").unwrap();
    let addr = format!("udp://{}", sock.local_addr().unwrap());
    let (_t, project, log, policy) = setup(&addr, "");
    let text = std::fs::read_to_string(&policy).unwrap() + "format = \"ocsf\"\n";
    std::fs::write(&policy, text).unwrap();
    session(&project, &policy, 2, 1);
    sock.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    let n_lines = log_lines(&log).len();
    let mut buf = vec![0u8; 65536];
    let mut denied = None;
    for _ in 0..n_lines {
        let Ok(n) = sock.recv(&mut buf) else { break };
        let m = parse5424(&buf[..n]).unwrap();
        let v: Value = serde_json::from_slice(&m.msg).unwrap();
        assert_eq!(v["metadata"]["product"]["name"], "rootfence");
        if v["class_uid"] == 6003 && v["action_id"] == 2 {
            denied = Some(v);
        }
    }
    let v = denied.expect("the denial arrives as OCSF API Activity");
    assert_eq!(v["disposition"], "Blocked");
    assert_eq!(v["resources"][0]["name"], "file:///etc/passwd");

    // The same mapping from the file: `audit show --format ocsf`, one object per record.
    let o = Command::new(rootfence())
        .args(["audit", "show", "--format", "ocsf"])
        .arg(&log)
        .output()
        .unwrap();
    assert!(o.status.success());
    let out = String::from_utf8(o.stdout).unwrap();
    let objs: Vec<Value> = out
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(objs.len(), n_lines);
    assert_eq!(
        objs[0]["class_uid"], 6002,
        "session_start: Application Lifecycle"
    );
    assert_eq!(objs[0]["activity_name"], "Start");
    let seqs: Vec<u64> = objs
        .iter()
        .map(|o| o["metadata"]["sequence"].as_u64().unwrap())
        .collect();
    assert_eq!(seqs, (1..=n_lines as u64).collect::<Vec<_>>());
    assert!(
        objs.iter().any(|o| o == &v),
        "the shipped OCSF event is the one shown"
    );
}

#[test]
fn strict_parser_rejects_what_rfc5424_forbids() {
    let good = b"<86>1 2026-01-02T03:04:05.000006Z h rootfence 12 decision [a@1 x=\"1\\]\"] \xEF\xBB\xBF{}";
    parse5424(good).unwrap();
    for bad in [
        &b"<192>1 - h a p m -"[..],
        b"<086>1 - h a p m -",
        b"<86>2 - h a p m -",
        b"<86>1 2026-01-02T03:04:05.0000001Z h a p m -",
        b"<86>1 2026-01-02 03:04:05Z h a p m -",
        b"<86>1 - h a p m [a@1 x=\"]\"]",
        b"<86>1 - h a p m [a@1 x=\"\\n\"]",
        b"<86>1 - h a p m - {}",
    ] {
        assert!(parse5424(bad).is_err(), "{}", String::from_utf8_lossy(bad));
    }
}

const RSYSLOGD: &str = "/usr/sbin/rsyslogd";

/// Debian's rsyslog, started on a loopback port with docs/siem/rsyslog.conf as shipped
/// (its port, output file and work directory moved into `dir`); stopped on drop.
struct Rsyslog {
    child: std::process::Child,
    out: PathBuf,
    addr: std::net::SocketAddr,
}

impl Rsyslog {
    fn start(dir: &Path) -> Rsyslog {
        let addr = port_nothing_uses();
        let out = dir.join("rootfence.log");
        let shipped = std::fs::read_to_string(
            Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/siem/rsyslog.conf"),
        )
        .unwrap();
        assert!(shipped.contains(r#"input(type="imtcp" port="601""#));
        let conf = format!(
            "global(workDirectory={:?})\n{}",
            dir.display().to_string(),
            shipped
                .replace(
                    r#"input(type="imtcp" port="601""#,
                    &format!(
                        r#"input(type="imtcp" address="127.0.0.1" port="{}""#,
                        addr.port()
                    ),
                )
                .replace("/var/log/rootfence.log", &out.display().to_string())
        );
        let conf_path = dir.join("rsyslog.conf");
        std::fs::write(&conf_path, conf).unwrap();
        let child = Command::new(RSYSLOGD)
            .arg("-n")
            .arg("-f")
            .arg(&conf_path)
            .arg("-i")
            .arg(dir.join("rsyslogd.pid"))
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .expect("start rsyslogd");
        let r = Rsyslog { child, out, addr };
        let deadline = std::time::Instant::now() + Duration::from_secs(20);
        while std::net::TcpStream::connect(addr).is_err() {
            assert!(
                std::time::Instant::now() < deadline,
                "rsyslogd does not listen on {addr}"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        r
    }
}

impl Drop for Rsyslog {
    fn drop(&mut self) {
        // Our own child, by its pid.
        let _ = nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(self.child.id() as i32),
            nix::sys::signal::Signal::SIGTERM,
        );
        let _ = self.child.wait();
    }
}

/// The records in rsyslog's file: every message parsed strictly, parts joined. Returns the
/// joined records by seq, how many messages each (seq, part) had, and the longest message.
/// Joined records by seq, messages per (seq, part), the longest message.
type Received = (BTreeMap<u64, Vec<u8>>, BTreeMap<(u64, usize), usize>, usize);

fn received(file: &Path) -> Received {
    let data = std::fs::read(file).unwrap_or_default();
    let mut parts: BTreeMap<u64, BTreeMap<usize, Vec<u8>>> = BTreeMap::new();
    let mut seen: BTreeMap<(u64, usize), usize> = BTreeMap::new();
    let mut longest = 0;
    // rsyslog writes each message and a newline; a message has no raw newline.
    for m in data.split(|&b| b == b'\n').filter(|l| !l.is_empty()) {
        longest = longest.max(m.len());
        let msg = parse5424(m)
            .unwrap_or_else(|e| panic!("not RFC 5424 ({e}): {}", String::from_utf8_lossy(m)));
        if msg.msgid == "checkpoint" {
            continue;
        }
        let seq: u64 = msg.params["seq"].parse().unwrap();
        let (i, n) = match msg.params.get("part") {
            Some(p) => {
                let (i, n) = p.split_once('/').unwrap();
                (i.parse::<usize>().unwrap(), n.parse::<usize>().unwrap())
            }
            None => (1, 1),
        };
        *seen.entry((seq, i)).or_default() += 1;
        let e = parts.entry(seq).or_default();
        e.insert(i, msg.msg);
        // Remember n at key 0 as text, to tell a complete record.
        e.entry(0).or_insert_with(|| n.to_string().into_bytes());
    }
    let mut joined = BTreeMap::new();
    for (seq, mut p) in parts {
        let n: usize = String::from_utf8(p.remove(&0).unwrap())
            .unwrap()
            .parse()
            .unwrap();
        if p.len() == n && (1..=n).all(|i| p.contains_key(&i)) {
            joined.insert(seq, p.into_values().flatten().collect());
        }
    }
    (joined, seen, longest)
}

#[test]
fn rsyslog_receives_10000_records_and_large_ones_whole() {
    if !Path::new(RSYSLOGD).exists() {
        eprintln!(
            "SKIPPED rsyslog_receives_10000_records_and_large_ones_whole: {RSYSLOGD} is not \
             installed (scripts/install-test-peers.sh installs Debian's rsyslog)"
        );
        return;
    }
    let t = tempdir();
    let rs = Rsyslog::start(t.path());
    let (_t2, project, log, policy) = setup(&format!("tcp://{}", rs.addr), "");
    // Paths near PATH_MAX: their decisions (URI and canonical form) are over 8 KiB.
    // The URI as sent percent-encodes every `d` (the longest URI a record keeps, 4096
    // bytes and a hash), the canonical form is the path itself (near 3,900 bytes).
    let mut deep = project.clone();
    for i in 0..19 {
        deep.push(format!("{i:02}{}", "d".repeat(198)));
    }
    std::fs::create_dir_all(&deep).unwrap();
    let mut long_uris = Vec::new();
    for i in 0..5 {
        let f = deep.join(format!("f{i}.txt"));
        std::fs::write(&f, "x").unwrap();
        long_uris.push(format!("file://{}", f.display()).replace('d', "%64"));
    }
    // A long command line: a session_start over 8 KiB.
    let long_args: Vec<String> = (0..3)
        .map(|i| format!("--opt{i}={}", "a".repeat(3500)))
        .collect();
    session_with(&project, &policy, 10_000, &long_uris, &long_args);
    let lines = log_lines(&log);
    let big = lines.iter().filter(|l| l.len() > 8192).count();
    assert!(
        big >= 6,
        "{big} records over 8 KiB (a session_start and 5 decisions)"
    );
    assert!(lines.len() > 10_000);

    // Wait until every record has arrived whole (or patience runs out).
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    let (joined, seen, longest) = loop {
        let r = received(&rs.out);
        if r.0.len() >= lines.len() || std::time::Instant::now() > deadline {
            break r;
        }
        std::thread::sleep(Duration::from_millis(250));
    };
    drop(rs);
    assert_eq!(joined.len(), lines.len(), "every record arrives");
    for l in &lines {
        let v: Value = serde_json::from_str(l).unwrap();
        let seq = v["seq"].as_u64().unwrap();
        let got = joined
            .get(&seq)
            .unwrap_or_else(|| panic!("seq {seq} missing"));
        assert!(
            got.as_slice() == l.as_bytes(),
            "seq {seq}: the joined parts are not the log line byte for byte ({} bytes arrived \
             for a line of {})",
            got.len(),
            l.len()
        );
    }
    assert!(
        seen.values().all(|&n| n == 1),
        "no message twice: {:?}",
        seen.iter()
            .filter(|(_, n)| **n > 1)
            .take(5)
            .collect::<Vec<_>>()
    );
    assert!(longest <= 8000, "no message over max_message: {longest}");
    assert!(
        seen.keys().any(|&(_, i)| i > 1),
        "the large records came in parts"
    );
    // The SIEM's copy, joined, verifies like the file.
    let copy = t.path().join("siem-copy.jsonl");
    let mut text: Vec<u8> = Vec::new();
    for r in joined.values() {
        text.extend_from_slice(r);
        text.push(b'\n');
    }
    std::fs::write(&copy, text).unwrap();
    let o = Command::new(rootfence())
        .args(["audit", "verify"])
        .arg(&copy)
        .output()
        .unwrap();
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stdout)
    );
}

/// Like [`session`], with extra server arguments and, after the burst of `reads`, one read
/// of each of `uris`.
fn session_with(project: &Path, policy: &Path, reads: u64, uris: &[String], args: &[String]) {
    let mut cmd = Command::new(rootfence());
    cmd.current_dir(project)
        .arg("run")
        .arg("--policy")
        .arg(policy)
        // The sandbox grants the server's own install directory when it is the command;
        // through `sh` it is not, and the sandbox is not what this test is about.
        .args(["--sandbox", "off"])
        .arg("--");
    // Through `sh`, which ignores the extra arguments (the test server refuses unknown
    // options); they are still the server's command line, which session_start records.
    cmd.args(["sh", "-c", "exec \"$0\""])
        .arg(test_server())
        .args(args);
    let mut p = Proxy::spawn(cmd);
    let root = format!("file://{}", project.display());
    p.initialize_with_roots("test-host", &root);
    let uri = format!("{root}/a.txt");
    let mut burst = String::new();
    for (i, u) in std::iter::repeat_n(&uri, reads as usize)
        .chain(uris)
        .enumerate()
    {
        let raw = json!({"contents":[{"uri":u,"text":"a"}]}).to_string();
        burst.push_str(
            &json!({"jsonrpc":"2.0","id":i + 1,"method":"resources/read",
                "params":{"uri":u,"_rawResult":raw}})
            .to_string(),
        );
        burst.push('\n');
    }
    p.send_raw(burst.as_bytes());
    for _ in 0..reads as usize + uris.len() {
        let r = p.recv();
        assert!(r.get("result").is_some(), "{r}");
    }
    p.close_stdin();
    assert_eq!(p.exit_code(), 0, "{}", p.stderr());
}
