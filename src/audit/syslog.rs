//! The syslog sink: every record the log writes (and every signed checkpoint) is also sent
//! as an RFC 5424 message over UDP (RFC 5426), TCP with octet-counted framing (RFC 6587,
//! 3.4.1) or a unix datagram socket (`/dev/log`).
//!
//! # Off the relay, bounded, never blocking
//!
//! The audit writer thread hands each written line to `SyslogHandle::push`, which only
//! queues it: a bounded queue ([`SyslogConfig::queue`] messages, [`QUEUE_BYTES`] bytes). A
//! thread of its own formats and sends. When the queue is full (the receiver is down or
//! slower than the log), the newest line is dropped and counted; the writer turns the count
//! into a `sink_dropped` record at most every [`REPORT_INTERVAL`], so the gap is itself
//! audited (and shipped, once the receiver is back). The log file keeps every record
//! whatever happens here.
//!
//! # What TCP guarantees
//!
//! Messages are sent in batches. A batch counts as delivered once `write()` accepted all of
//! it; when a write fails or times out, the connection is dropped, a new one is made (with
//! backoff) and the whole batch is sent again. So every message that entered the queue
//! reaches a TCP connection in full at least once, in order, unless the queue overflowed
//! (counted, audited) or the session ended while the receiver was unreachable (what was
//! left is counted and named on stderr). A message may arrive twice after a reconnect: the
//! structured data's `session` and `seq` identify it. Bytes the kernel accepted and a
//! receiver that then crashed never read are lost: syslog over TCP has no acknowledgement.
//! UDP and unix datagrams are fire-and-forget: a message the socket refuses is dropped and
//! counted.
//!
//! # Records of any size, whole
//!
//! Receivers cut long messages (rsyslog at 8 KiB by default, `maxMessageSize`), and a
//! `session_start` or a decision on a long path can be larger. A message longer than
//! [`SyslogConfig::max_message`] is therefore sent in parts: each part carries the same
//! `seq` and `session` and a `part="<i>/<n>"` SD-PARAM, and the parts' MSGs (each after its
//! BOM) joined in order are the record's line byte for byte, so the SIEM's copy can be put
//! back together and checked with `rootfence audit verify` (docs/siem.md).
//!
//! # Nothing raw from a peer in the header or the structured data
//!
//! Header fields are PRINTUSASCII or `-`; SD-PARAM values escape `"`, `\` and `]` as RFC
//! 5424 says, and every control character, line or paragraph separator, bidi control and
//! U+FEFF as `\uXXXX` (the backslash itself being escaped, this cannot be confused with
//! the URI's own text): a host- or server-chosen URI cannot start a new line in a receiver's
//! file or reorder what a reviewer reads.

use std::collections::VecDeque;
use std::io::{self, Write};
use std::net::{TcpStream, ToSocketAddrs, UdpSocket};
use std::os::unix::net::UnixDatagram;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use serde_json::Value;

/// Bytes of queued lines at most (besides the message count).
pub const QUEUE_BYTES: usize = 64 << 20;

/// Default queue length in messages.
pub const DEFAULT_QUEUE: usize = 65_536;

/// Longest gap between `sink_dropped` records while drops go on.
pub const REPORT_INTERVAL: Duration = Duration::from_secs(10);

/// Messages sent in one batch (one `write()` over TCP).
const BATCH: usize = 512;

/// How long a connect or a write may take before the receiver counts as down.
const IO_TIMEOUT: Duration = Duration::from_secs(2);

/// At session end, how long the queue may take to drain.
pub const CLOSE_GRACE: Duration = Duration::from_secs(3);

/// The largest SD-PARAM value sent (longer ones are cut; the JSON in MSG is whole).
const MAX_PARAM: usize = 1024;

/// Default [`SyslogConfig::max_message`]: below what rsyslog takes whole by default. Its
/// `maxMessageSize` is 8 KiB, but imtcp cuts a frame at 8,096 bytes (measured with Debian's
/// rsyslog 8.2302: 8,192 bytes arrived as 8,096 plus a second, broken message);
/// syslog-ng's default is 64 KiB.
pub const DEFAULT_MAX_MESSAGE: usize = 8000;

/// The smallest `max_message` accepted: room for the header, the structured data of a
/// part and some of the record.
pub const MIN_MAX_MESSAGE: usize = 2048;

/// Record fields copied into the structured data, when present and scalar.
const SD_FIELDS: &[&str] = &[
    "seq",
    "session",
    "event",
    "decision",
    "reason",
    "direction",
    "method",
    "uri",
    "rule",
    "layer",
    "action",
    "n",
    "head",
    "ok",
    "dropped",
];

/// Where messages go.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Transport {
    /// `udp://host:port`.
    Udp(String),
    /// `tcp://host:port`: octet-counted framing.
    Tcp(String),
    /// `unix:///path`: a datagram socket such as `/dev/log`.
    Unix(PathBuf),
}

impl std::str::FromStr for Transport {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let bad = || {
            format!(
                "invalid syslog address `{s}`: use udp://host:port, tcp://host:port or \
                 unix:///path (e.g. unix:///dev/log)"
            )
        };
        if let Some(p) = s.strip_prefix("unix://") {
            if !p.starts_with('/') {
                return Err(bad());
            }
            return Ok(Transport::Unix(PathBuf::from(p)));
        }
        let (scheme, rest) = s.split_once("://").ok_or_else(bad)?;
        // host:port, with a port and a host ([v6] allowed).
        let (host, port) = rest.rsplit_once(':').ok_or_else(bad)?;
        if host.is_empty() || port.parse::<u16>().map_or(true, |p| p == 0) || rest.contains('/') {
            return Err(bad());
        }
        match scheme {
            "udp" => Ok(Transport::Udp(rest.to_owned())),
            "tcp" => Ok(Transport::Tcp(rest.to_owned())),
            _ => Err(bad()),
        }
    }
}

/// What MSG carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum MsgFormat {
    /// The record's JSON line, as in the log.
    #[default]
    Json,
    /// The record mapped to OCSF (docs/audit-schema.md, "OCSF").
    Ocsf,
}

impl MsgFormat {
    /// Policy words.
    pub const WORDS: &[(&str, MsgFormat)] = &[("json", MsgFormat::Json), ("ocsf", MsgFormat::Ocsf)];
}

/// Syslog facilities by name (RFC 5424, 6.2.1).
pub const FACILITIES: &[(&str, u8)] = &[
    ("kern", 0),
    ("user", 1),
    ("daemon", 3),
    ("auth", 4),
    ("syslog", 5),
    ("authpriv", 10),
    ("audit", 13),
    ("local0", 16),
    ("local1", 17),
    ("local2", 18),
    ("local3", 19),
    ("local4", 20),
    ("local5", 21),
    ("local6", 22),
    ("local7", 23),
];

/// How to ship records to syslog.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SyslogConfig {
    /// Where.
    pub transport: Transport,
    /// Facility number (default 10, authpriv).
    pub facility: u8,
    /// What MSG carries.
    pub format: MsgFormat,
    /// Queue length in messages.
    pub queue: usize,
    /// The SD-ID of the structured data element (`name@<private enterprise number>`).
    pub sd_id: String,
    /// The longest message sent, in bytes (the SYSLOG-MSG without TCP framing); a longer
    /// one is sent in parts. At least [`MIN_MAX_MESSAGE`].
    pub max_message: usize,
}

impl SyslogConfig {
    /// Defaults for `transport`.
    pub fn new(transport: Transport) -> SyslogConfig {
        SyslogConfig {
            transport,
            facility: 10,
            format: MsgFormat::Json,
            queue: DEFAULT_QUEUE,
            sd_id: DEFAULT_SD_ID.to_owned(),
            max_message: DEFAULT_MAX_MESSAGE,
        }
    }
}

/// The default SD-ID. 32473 is the private enterprise number IANA reserves for
/// documentation (RFC 5612); set `sd_id` to your own when you have one.
pub const DEFAULT_SD_ID: &str = "rootfence@32473";

/// What a queued line is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Kind {
    Record,
    Checkpoint,
}

#[derive(Debug, Default)]
struct Queue {
    lines: VecDeque<(Vec<u8>, Kind)>,
    bytes: usize,
    /// Set at close: drain until then, then give up.
    closing: Option<Instant>,
}

#[derive(Debug, Default)]
struct Shared {
    cap: usize,
    q: Mutex<Queue>,
    cv: Condvar,
    dropped: AtomicU64,
    last_error: Mutex<String>,
}

impl Shared {
    fn queue(&self) -> MutexGuard<'_, Queue> {
        crate::relock(&self.q)
    }

    fn drop_n(&self, n: u64, why: impl Into<String>) {
        self.dropped.fetch_add(n, Ordering::Relaxed);
        *crate::relock(&self.last_error) = why.into();
    }
}

/// A cheap handle to queue lines with.
#[derive(Debug, Clone)]
pub(super) struct SyslogHandle(Arc<Shared>);

impl SyslogHandle {
    /// Queues one record or checkpoint line (without its `\n`); drops it, counted, when the
    /// queue is full.
    pub(super) fn push(&self, line: &[u8], kind: Kind) {
        let s = &*self.0;
        let mut q = s.queue();
        if q.lines.len() >= s.cap || q.bytes + line.len() > QUEUE_BYTES {
            drop(q);
            s.dropped.fetch_add(1, Ordering::Relaxed);
            return;
        }
        q.bytes += line.len();
        q.lines.push_back((line.to_vec(), kind));
        let first = q.lines.len() == 1;
        drop(q);
        if first {
            s.cv.notify_one();
        }
    }

    /// Lines dropped so far, and the last reason.
    pub(super) fn dropped(&self) -> (u64, String) {
        let why = crate::relock(&self.0.last_error).clone();
        (self.0.dropped.load(Ordering::Relaxed), why)
    }
}

/// The sender thread and its handle; dropping it drains the queue for [`CLOSE_GRACE`].
#[derive(Debug)]
pub(super) struct Syslog {
    pub(super) handle: SyslogHandle,
    thread: Option<JoinHandle<()>>,
    /// Drops already reported in a `sink_dropped` record, and when.
    pub(super) reported: u64,
    pub(super) reported_at: Option<Instant>,
}

impl Syslog {
    /// Starts the sender thread (it connects in the background: a receiver that is down
    /// does not stop the session from starting).
    pub(super) fn start(cfg: SyslogConfig) -> io::Result<Syslog> {
        let shared = Arc::new(Shared {
            cap: cfg.queue.max(1),
            last_error: Mutex::new("queue full".into()),
            ..Shared::default()
        });
        let s2 = Arc::clone(&shared);
        let fmt = Formatter::new(&cfg);
        let thread = std::thread::Builder::new()
            .name("rootfence-syslog".into())
            .spawn(move || run(&cfg, &s2, &fmt))?;
        Ok(Syslog {
            handle: SyslogHandle(shared),
            thread: Some(thread),
            reported: 0,
            reported_at: None,
        })
    }

    /// Sends what is queued (for at most `grace`), stops the thread, and returns how many
    /// lines never went out in all (dropped or left when the grace ran out).
    pub(super) fn close(&mut self, grace: Duration) -> u64 {
        if let Some(t) = self.thread.take() {
            self.handle.0.queue().closing = Some(Instant::now() + grace);
            self.handle.0.cv.notify_all();
            let _ = t.join();
        }
        self.handle.0.dropped.load(Ordering::Relaxed)
    }
}

impl Drop for Syslog {
    fn drop(&mut self) {
        self.close(CLOSE_GRACE);
    }
}

enum Conn {
    Tcp(TcpStream),
    Udp(UdpSocket),
    Unix(UnixDatagram),
}

fn connect(t: &Transport) -> io::Result<Conn> {
    match t {
        Transport::Tcp(a) => {
            let mut last = io::Error::new(io::ErrorKind::NotFound, format!("{a}: no address"));
            for addr in a.to_socket_addrs()? {
                match TcpStream::connect_timeout(&addr, IO_TIMEOUT) {
                    Ok(s) => {
                        s.set_write_timeout(Some(IO_TIMEOUT))?;
                        let _ = s.set_nodelay(true);
                        return Ok(Conn::Tcp(s));
                    }
                    Err(e) => last = e,
                }
            }
            Err(last)
        }
        Transport::Udp(a) => {
            let addr = a.to_socket_addrs()?.next().ok_or_else(|| {
                io::Error::new(io::ErrorKind::NotFound, format!("{a}: no address"))
            })?;
            let bind = if addr.is_ipv6() {
                "[::]:0"
            } else {
                "0.0.0.0:0"
            };
            let s = UdpSocket::bind(bind)?;
            s.connect(addr)?;
            Ok(Conn::Udp(s))
        }
        Transport::Unix(p) => {
            let s = UnixDatagram::unbound()?;
            s.connect(p)?;
            s.set_write_timeout(Some(IO_TIMEOUT))?;
            Ok(Conn::Unix(s))
        }
    }
}

/// Sends one batch. `Err((done, e))` means the connection is unusable: reconnect and send
/// the batch again from message `done` (always 0 over TCP, where a failed write says
/// nothing of what the receiver got; the datagrams sent before the failure otherwise).
/// Datagrams a live socket refuses (too large, nobody bound to a UDP port) are dropped and
/// counted here.
fn send(conn: &mut Conn, msgs: &[Vec<u8>], shared: &Shared) -> Result<(), (usize, io::Error)> {
    match conn {
        Conn::Tcp(s) => {
            let total: usize = msgs.iter().map(|m| m.len() + 8).sum();
            let mut buf = Vec::with_capacity(total);
            for m in msgs {
                // RFC 6587 octet counting: MSG-LEN SP SYSLOG-MSG.
                let _ = write!(buf, "{} ", m.len());
                buf.extend_from_slice(m);
            }
            s.write_all(&buf)
                .and_then(|()| s.flush())
                .map_err(|e| (0, e))
        }
        Conn::Udp(s) => send_datagrams(|m| s.send(m), "udp", msgs, shared),
        Conn::Unix(s) => send_datagrams(|m| s.send(m), "unix", msgs, shared),
    }
}

/// [`send`] one datagram a message.
fn send_datagrams(
    send: impl Fn(&[u8]) -> io::Result<usize>,
    scheme: &str,
    msgs: &[Vec<u8>],
    shared: &Shared,
) -> Result<(), (usize, io::Error)> {
    for (i, m) in msgs.iter().enumerate() {
        match send(m) {
            Ok(_) => {}
            // UDP, nobody listening (ICMP port unreachable, reported on a later send): a
            // datagram transport has no delivery to wait for.
            Err(e) if scheme == "udp" && e.raw_os_error() == Some(libc::ECONNREFUSED) => {
                shared.drop_n(1, format!("udp: {e}"));
            }
            Err(e) if e.raw_os_error() == Some(libc::EMSGSIZE) => {
                shared.drop_n(1, format!("{scheme}: a message of {} bytes: {e}", m.len()));
            }
            // A full unix receive queue (the reader is slow) times out like a dead one.
            Err(e) => return Err((i, e)),
        }
    }
    Ok(())
}

/// The sender thread.
fn run(cfg: &SyslogConfig, shared: &Shared, fmt: &Formatter) {
    let mut conn: Option<Conn> = None;
    let mut backoff = Duration::from_millis(50);
    let mut batch: Vec<Vec<u8>> = Vec::with_capacity(BATCH);
    loop {
        if batch.is_empty() {
            let mut q = shared.queue();
            while q.lines.is_empty() && q.closing.is_none() {
                q = shared.cv.wait(q).unwrap_or_else(|p| p.into_inner());
            }
            if q.lines.is_empty() {
                return;
            }
            let n = q.lines.len().min(BATCH);
            let taken: Vec<(Vec<u8>, Kind)> = q.lines.drain(..n).collect();
            q.bytes -= taken.iter().map(|(l, _)| l.len()).sum::<usize>();
            drop(q);
            let mut bad = 0;
            for (l, k) in &taken {
                match fmt.format(l, *k) {
                    Some(parts) => batch.extend(parts),
                    None => bad += 1,
                }
            }
            if bad > 0 {
                shared.drop_n(bad as u64, "a line that is not a JSON record");
            }
            if batch.is_empty() {
                continue;
            }
        }
        let r = match conn.as_mut() {
            Some(c) => send(c, &batch, shared),
            None => connect(&cfg.transport)
                .map_err(|e| (0, e))
                .and_then(|c| send(conn.insert(c), &batch, shared)),
        };
        match r {
            Ok(()) => {
                batch.clear();
                backoff = Duration::from_millis(50);
            }
            Err((done, e)) => {
                batch.drain(..done);
                conn = None;
                *crate::relock(&shared.last_error) = format!("{}: {e}", describe(&cfg.transport));
                // Past the close grace: what is left is counted and given up.
                let q = shared.queue();
                if q.closing.is_some_and(|d| Instant::now() >= d) {
                    let left = batch.len() + q.lines.len();
                    drop(q);
                    shared.dropped.fetch_add(left as u64, Ordering::Relaxed);
                    return;
                }
                // Wait before trying again; a close wakes us.
                let wait = q.closing.map_or(backoff, |d| {
                    backoff.min(d.saturating_duration_since(Instant::now()))
                });
                let _ = shared.cv.wait_timeout(q, wait);
                backoff = (backoff * 2).min(Duration::from_secs(5));
            }
        }
    }
}

fn describe(t: &Transport) -> String {
    match t {
        Transport::Udp(a) => format!("udp://{a}"),
        Transport::Tcp(a) => format!("tcp://{a}"),
        Transport::Unix(p) => format!("unix://{}", p.display()),
    }
}

/// Builds RFC 5424 messages from record lines.
#[derive(Debug)]
struct Formatter {
    facility: u8,
    hostname: String,
    procid: String,
    sd_id: String,
    format: MsgFormat,
    max_message: usize,
    /// The OCSF mapping remembers the peers' claimed names from `initialized`.
    ocsf: Mutex<super::ocsf::Mapper>,
}

const BOM: &[u8] = b"\xEF\xBB\xBF";

impl Formatter {
    fn new(cfg: &SyslogConfig) -> Formatter {
        let hostname = nix::unistd::gethostname()
            .ok()
            .and_then(|h| h.into_string().ok())
            .filter(|h| !h.is_empty() && h.len() <= 255 && h.bytes().all(printusascii))
            .unwrap_or_else(|| "-".into());
        let sd_id = if valid_name(&cfg.sd_id) {
            cfg.sd_id.clone()
        } else {
            DEFAULT_SD_ID.into()
        };
        Formatter {
            facility: cfg.facility.min(23),
            hostname,
            procid: std::process::id().to_string(),
            sd_id,
            format: cfg.format,
            max_message: cfg.max_message.max(MIN_MAX_MESSAGE),
            ocsf: Mutex::new(super::ocsf::Mapper::default()),
        }
    }

    /// `<PRI>1 TIMESTAMP HOSTNAME APP-NAME PROCID MSGID [SD] BOM MSG`, in parts when it is
    /// longer than `max_message`, or `None` for a line that is not a JSON object.
    fn format(&self, line: &[u8], kind: Kind) -> Option<Vec<Vec<u8>>> {
        let v: Value = serde_json::from_slice(line).ok()?;
        let obj = v.as_object()?;
        let event = match kind {
            Kind::Checkpoint => "checkpoint",
            Kind::Record => obj.get("event").and_then(Value::as_str).unwrap_or("-"),
        };
        let severity = match event {
            "decision" if obj.get("decision").and_then(Value::as_str) == Some("deny") => 4,
            "log_rewound" | "log_recovered" => 3,
            "sink_dropped" | "protocol_error" | "protocol_error_repeated" => 5,
            "policy_reload" if obj.get("ok").and_then(Value::as_bool) != Some(true) => 4,
            _ => 6,
        };
        let ts = obj
            .get("ts")
            .and_then(Value::as_str)
            .filter(|t| !t.is_empty() && t.bytes().all(printusascii))
            .unwrap_or("-");
        let msgid = if !event.is_empty() && event.len() <= 32 && event.bytes().all(printusascii) {
            event
        } else {
            "-"
        };
        let mut head = Vec::with_capacity(128);
        let _ = write!(
            head,
            "<{}>1 {ts} {} rootfence {} {msgid} ",
            u16::from(self.facility) * 8 + severity,
            self.hostname,
            self.procid,
        );
        let mapped;
        let msg: &[u8] = match (self.format, kind) {
            (MsgFormat::Ocsf, Kind::Record) => {
                let mapped_value = crate::relock(&self.ocsf).map(obj);
                let mut m = serde_json::to_vec(&mapped_value).ok()?;
                // serde_json leaves C1 controls, separators and bidi controls raw.
                super::event::escape_json_display(&mut m, 0);
                mapped = m;
                &mapped
            }
            _ => line,
        };
        let message = |sd: &[u8], piece: &[u8]| [&head[..], sd, b" ", BOM, piece].concat();
        let sd = self.structured(obj, SD_FIELDS, None);
        if head.len() + sd.len() + 1 + BOM.len() + msg.len() <= self.max_message {
            return Some(vec![message(&sd, msg)]);
        }
        // In parts. The full structured data on each when it leaves room, else only what
        // identifies the record.
        let fields: &[&str] = if head.len() + sd.len() + 32 <= self.max_message / 2 {
            SD_FIELDS
        } else {
            &["seq", "session", "event"]
        };
        let mut n = 1usize;
        let pieces = loop {
            let sd_len = self.structured(obj, fields, Some((n, n))).len();
            let room = self.max_message - head.len() - sd_len - 1 - BOM.len();
            let pieces = split_utf8(msg, room);
            // More parts than assumed may need more digits in `part`: try again.
            if pieces.len() <= n || pieces.len().to_string().len() <= n.to_string().len() {
                break pieces;
            }
            n = pieces.len();
        };
        let total = pieces.len();
        Some(
            pieces
                .iter()
                .enumerate()
                .map(|(i, piece)| {
                    message(&self.structured(obj, fields, Some((i + 1, total))), piece)
                })
                .collect(),
        )
    }

    /// `[SD-ID name="value" ...]` with the record's scalar `fields` and, for a part,
    /// `part="i/n"`.
    fn structured(
        &self,
        obj: &serde_json::Map<String, Value>,
        fields: &[&str],
        part: Option<(usize, usize)>,
    ) -> Vec<u8> {
        let mut out = Vec::with_capacity(256);
        out.push(b'[');
        out.extend_from_slice(self.sd_id.as_bytes());
        for name in fields {
            let Some(val) = obj.get(*name) else { continue };
            let text = match val {
                Value::String(s) => s.clone(),
                Value::Number(n) => n.to_string(),
                Value::Bool(b) => b.to_string(),
                _ => continue,
            };
            let _ = write!(out, " {name}=\"");
            param_value(&text, &mut out);
            out.push(b'"');
        }
        if let Some((i, n)) = part {
            let _ = write!(out, " part=\"{i}/{n}\"");
        }
        out.push(b']');
        out
    }
}

/// `b` (UTF-8) in pieces of at most `room` bytes, cut at character boundaries.
fn split_utf8(b: &[u8], room: usize) -> Vec<&[u8]> {
    let room = room.max(4);
    let mut out = Vec::with_capacity(b.len() / room + 1);
    let mut rest = b;
    while rest.len() > room {
        let mut cut = room;
        // Back off continuation bytes (10xxxxxx) so no character is split.
        while cut > 0 && rest[cut] & 0xC0 == 0x80 {
            cut -= 1;
        }
        if cut == 0 {
            cut = room;
        }
        out.push(&rest[..cut]);
        rest = &rest[cut..];
    }
    out.push(rest);
    out
}

fn printusascii(b: u8) -> bool {
    (33..=126).contains(&b)
}

/// An SD-NAME or SD-ID: 1-32 PRINTUSASCII except `=`, SP, `]`, `"` (the `@` of an SD-ID
/// with an enterprise number allowed).
fn valid_name(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= 32
        && s.bytes()
            .all(|b| printusascii(b) && !matches!(b, b'=' | b']' | b'"'))
}

/// An SD-PARAM value: the text display-escaped (a backslash doubled; every character that
/// could end a line or hide text, that is controls, separators, bidi controls and U+FEFF,
/// written `\uXXXX`), then escaped as RFC 5424 says (`"`, `\` and `]` after a
/// backslash, 6.3.3); cut at [`MAX_PARAM`] bytes of the value on a character boundary.
/// A receiver that undoes the RFC escaping reads the display-escaped text, which is
/// unambiguous: `\u000A` there is a newline, `\\u000A` the six characters.
fn param_value(s: &str, out: &mut Vec<u8>) {
    for c in super::event::head(s, MAX_PARAM).chars() {
        match c {
            '\\' => out.extend_from_slice(br"\\\\"),
            '"' | ']' => {
                out.push(b'\\');
                out.push(c as u8);
            }
            c if super::event::is_unsafe_display_char(c) => {
                let _ = write!(out, "\\\\u{:04X}", u32::from(c));
            }
            c => out.extend_from_slice(c.encode_utf8(&mut [0; 4]).as_bytes()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn addresses_parse() {
        let ok = [
            (
                "udp://127.0.0.1:514",
                Transport::Udp("127.0.0.1:514".into()),
            ),
            (
                "tcp://logs.example:6514",
                Transport::Tcp("logs.example:6514".into()),
            ),
            ("tcp://[::1]:514", Transport::Tcp("[::1]:514".into())),
            ("unix:///dev/log", Transport::Unix("/dev/log".into())),
        ];
        for (s, want) in ok {
            assert_eq!(s.parse::<Transport>(), Ok(want), "{s}");
        }
        for bad in [
            "tcp://host",
            "tcp://:514",
            "tcp://h:0",
            "tcp://h:99999",
            "http://h:80",
            "unix://rel/path",
            "h:514",
            "tcp://h:514/x",
        ] {
            assert!(bad.parse::<Transport>().is_err(), "{bad}");
        }
    }

    #[test]
    fn messages_are_rfc5424_with_escaped_params() {
        let cfg = SyslogConfig::new(Transport::Udp("127.0.0.1:1".into()));
        let f = Formatter::new(&cfg);
        let line = br#"{"v":1,"seq":7,"ts":"2026-01-02T03:04:05.000006Z","session":"ab","prev":"00","event":"decision","uri":"file:///a\"]\\b","decision":"deny","reason":"outside_roots"}"#;
        let m = String::from_utf8(f.format(line, Kind::Record).unwrap().remove(0)).unwrap();
        let head = format!(
            "<84>1 2026-01-02T03:04:05.000006Z {} rootfence ",
            f.hostname
        );
        assert!(m.starts_with(&head), "{m}");
        assert!(
            m.contains(r#" decision [rootfence@32473 seq="7" session="ab" event="decision" decision="deny" reason="outside_roots" uri="file:///a\"\]\\\\b"] "#),
            "{m}"
        );
        assert!(m.ends_with(std::str::from_utf8(line).unwrap()), "{m}");
        assert!(f.format(b"not json", Kind::Record).is_none());
    }

    /// Issue 28, item 9: a URI (or any text) with newlines, escapes and bidi controls
    /// cannot put a raw control character in the header or the structured data.
    #[test]
    fn control_characters_never_reach_the_header_or_structured_data_raw() {
        let cfg = SyslogConfig::new(Transport::Udp("127.0.0.1:1".into()));
        let f = Formatter::new(&cfg);
        let hostile = "file:///w/a\n<13>1 - forged\r\u{1b}]0;title\u{7}\u{85}\u{2028}\u{202e}\u{feff}\\u000A\"]";
        let rec = serde_json::json!({
            "v": 1, "seq": 3, "ts": "2026-01-02T03:04:05.000006Z\n<13>1 forged",
            "session": "ab\u{1b}[2J", "prev": "00", "event": "decision\nforged",
            "uri": hostile, "decision": "deny", "reason": "outside_roots\u{0}",
            "rule": "r\u{2066}", "method": "tools/call\t"
        });
        let line = serde_json::to_vec(&rec).unwrap();
        let parts = f.format(&line, Kind::Record).unwrap();
        assert_eq!(parts.len(), 1);
        let m = &parts[0];
        let (head, _) = m.split_at(m.windows(3).position(|w| w == BOM).unwrap());
        let head = std::str::from_utf8(head).unwrap();
        assert!(
            !head.chars().any(|c| c.is_control()
                || ('\u{2028}'..='\u{202e}').contains(&c)
                || c == '\u{feff}'),
            "{head:?}"
        );
        // The header fields a record could steer fall back to `-`.
        assert!(head.starts_with("<86>1 - "), "{head}");
        assert!(head.contains(" rootfence "), "{head}");
        assert!(
            head.contains(
                r#"uri="file:///w/a\\u000A<13>1 - forged\\u000D\\u001B\]0;title\\u0007\\u0085\\u2028\\u202E\\uFEFF\\\\u000A\"\]""#
            ),
            "{head}"
        );
        assert!(head.contains(r#"session="ab\\u001B[2J""#), "{head}");
        assert!(head.contains(r#"reason="outside_roots\\u0000""#), "{head}");
        // MSG is the JSON line, escaped by JSON.
        assert!(m.ends_with(&line));
    }

    /// A record longer than `max_message` goes in parts that each fit and join back into
    /// the line byte for byte.
    #[test]
    fn long_records_are_split_into_parts_that_join_back() {
        let mut cfg = SyslogConfig::new(Transport::Udp("127.0.0.1:1".into()));
        cfg.max_message = MIN_MAX_MESSAGE;
        let f = Formatter::new(&cfg);
        // Multi-byte characters so that cuts must respect character boundaries.
        let uri = format!("file:///w/{}", "é日a".repeat(900));
        let line = serde_json::to_vec(&serde_json::json!({
            "v": 1, "seq": 42, "ts": "2026-01-02T03:04:05.000006Z", "session": "ab",
            "prev": "00", "event": "decision", "uri": uri, "decision": "allow"
        }))
        .unwrap();
        let parts = f.format(&line, Kind::Record).unwrap();
        assert!(parts.len() > 2, "{}", parts.len());
        let mut joined = Vec::new();
        for (i, p) in parts.iter().enumerate() {
            assert!(p.len() <= MIN_MAX_MESSAGE, "part {i}: {} bytes", p.len());
            let s = std::str::from_utf8(p).expect("each part is UTF-8");
            assert!(
                s.contains(&format!(r#" part="{}/{}"]"#, i + 1, parts.len())),
                "{s}"
            );
            assert!(s.contains(r#"seq="42" session="ab""#), "{s}");
            let at = p.windows(3).position(|w| w == BOM).unwrap() + 3;
            joined.extend_from_slice(&p[at..]);
        }
        assert_eq!(joined, line);
        // A short one is one message without `part`.
        let short = br#"{"v":1,"seq":1,"ts":"2026-01-02T03:04:05.000006Z","session":"ab","prev":"00","event":"session_end"}"#;
        let one = f.format(short, Kind::Record).unwrap();
        assert_eq!(one.len(), 1);
        assert!(!String::from_utf8_lossy(&one[0]).contains("part="));
    }
}
