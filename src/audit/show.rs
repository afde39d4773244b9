//! `rootfence audit show`: a readable, filterable listing of records, and `--follow` to
//! tail a live log across rotations.
//!
//! Every string from the log is shown through [`disp`], which escapes control characters,
//! line separators, bidi controls and backslashes, so a URI cannot move the cursor, start a
//! fake line, or reorder text on the reviewer's terminal. `--format json` prints the matching
//! lines exactly as stored (the writer already escaped them); `ocsf` each one mapped to
//! OCSF (`ocsf`); `cef` and `csv` one line per record for SIEMs and spreadsheets, built
//! from the same escaped text.

use std::fmt::Write as _;
use std::fs::File;
use std::io::{Read, Write};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use super::event::{Direction, Event, Verdict, escape_json_display, is_unsafe_display_char};
use super::filter::Filter;
use super::read::{Record, for_each_record, invalid_line, parse_record};

/// How [`show`] prints a record.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Format {
    /// One readable line.
    #[default]
    Text,
    /// The stored JSON line.
    Json,
    /// The record mapped to OCSF, one JSON object per line.
    Ocsf,
    /// ArcSight Common Event Format, one line per record.
    Cef,
    /// Comma-separated values with a header line (RFC 4180).
    Csv,
}

impl Format {
    /// The `--format` words.
    pub const WORDS: &[(&str, Format)] = &[
        ("text", Format::Text),
        ("json", Format::Json),
        ("ocsf", Format::Ocsf),
        ("cef", Format::Cef),
        ("csv", Format::Csv),
    ];
}

/// What [`show`] lists, and how.
#[derive(Debug, Clone, Default)]
pub struct ShowFilter {
    /// Which records.
    pub filter: Filter,
    /// How to print them.
    pub format: Format,
    /// After the last record, wait for more (across rotations) until stopped.
    pub follow: bool,
}

/// How often `--follow` looks for new records.
const FOLLOW_POLL: Duration = Duration::from_millis(200);

/// Lists the records of `files` (in chain order) that pass `opts.filter`. Malformed and
/// incomplete lines are reported on `err` and skipped. With `opts.follow`, the newest file
/// is then followed: records appended to it are printed as they come, and when the writer
/// rotates it (renames it and starts a new one), the rest of the renamed file and then the
/// new file are read. It returns only on an error (a closed stdout is one).
pub fn show(
    files: &[PathBuf],
    opts: &ShowFilter,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> std::io::Result<()> {
    let files = super::order_files(files);
    let mut io_err: Option<std::io::Error> = None;
    let mut p = Printer {
        format: opts.format,
        ..Printer::default()
    };
    let (read_now, follow) = match (opts.follow, files.split_last()) {
        (true, Some((last, rest))) => (rest, Some(last.clone())),
        _ => (&files[..], None),
    };
    if opts.format == Format::Csv {
        writeln!(out, "{}", CSV_COLUMNS.join(","))?;
    }
    for_each_record(
        read_now,
        |rec, raw| {
            if io_err.is_some() {
                return;
            }
            if !opts.filter.accepts(rec) {
                p.note(rec, raw);
                return;
            }
            if let Err(e) = p.print(rec, raw, out) {
                io_err = Some(e);
            }
        },
        err,
    )?;
    if let Some(e) = io_err {
        return Err(e);
    }
    follow.map_or(Ok(()), |path| follow_file(&path, opts, &mut p, out, err))
}

/// `--follow`: reads `path` to its end, then polls it for growth and rotation.
fn follow_file(
    path: &Path,
    opts: &ShowFilter,
    p: &mut Printer,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> std::io::Result<()> {
    let open = |path: &Path| -> std::io::Result<(File, u64)> {
        let f = File::open(path)?;
        let ino = f.metadata()?.ino();
        Ok((f, ino))
    };
    let (mut file, mut ino) = open(path).map_err(|e| super::read::with_path(path, e))?;
    let mut pending: Vec<u8> = Vec::with_capacity(64 << 10);
    let mut buf = vec![0u8; 256 << 10];
    let mut pos: u64 = 0;
    let mut line_no: u64 = 0;
    loop {
        let n = file.read(&mut buf)?;
        if n > 0 {
            pos += n as u64;
            pending.extend_from_slice(&buf[..n]);
            let mut start = 0;
            while let Some(i) = memchr::memchr(b'\n', &pending[start..]) {
                let line = &pending[start..start + i];
                start += i + 1;
                line_no += 1;
                match parse_record(line) {
                    Ok(rec) if opts.filter.accepts(&rec) => p.print(&rec, line, out)?,
                    Ok(rec) => p.note(&rec, line),
                    Err(why) => writeln!(
                        err,
                        "rootfence: warning: {}",
                        disp(&invalid_line(path, line_no, &why))
                    )?,
                }
            }
            pending.drain(..start);
            continue;
        }
        out.flush()?;
        // At the end: has the writer rotated the file (a new file at the path) or has it
        // been cut? The renamed file was complete before the new one was started, but the
        // writer may have appended to it between the read above and this look: what it
        // holds past `pos` is read before moving on (a record was lost here under load).
        match std::fs::metadata(path) {
            Ok(m) if m.ino() != ino && file.metadata()?.len() > pos => continue,
            Ok(m) if m.ino() != ino => {
                // Move on to the file that follows the one just finished: the next rotated
                // file when the writer rotated more than once since the last look, else
                // the new active file.
                let next = next_in_family(path, ino).unwrap_or_else(|| path.to_path_buf());
                if let Ok((f, i)) = open(&next) {
                    (file, ino, pos, line_no) = (f, i, 0, 0);
                    // An incomplete line at the end of a rotated file stays incomplete.
                    if !pending.is_empty() {
                        writeln!(
                            err,
                            "rootfence: warning: the rotated file ended with an incomplete line \
                             of {} bytes; skipped",
                            pending.len()
                        )?;
                        pending.clear();
                    }
                    continue;
                }
            }
            Ok(m) if m.len() < pos => {
                writeln!(
                    err,
                    "rootfence: warning: {} was truncated; following it from its start",
                    disp_path(path)
                )?;
                (file, ino) = open(path)?;
                (pos, line_no) = (0, 0);
                pending.clear();
                continue;
            }
            _ => {}
        }
        std::thread::sleep(FOLLOW_POLL);
    }
}

/// The file after the one with inode `ino` in the family of the active file `active`
/// (`<log>.<N>` in rotation order, then `<log>`), or `None` when it is not found.
fn next_in_family(active: &Path, ino: u64) -> Option<PathBuf> {
    let dir = super::dir_of(active);
    let name = active.file_name()?.to_str()?;
    let mut members: Vec<PathBuf> = std::fs::read_dir(dir)
        .ok()?
        .filter_map(|e| e.ok())
        .filter_map(|e| {
            let n = e.file_name().into_string().ok()?;
            let rotated = super::sink::rotation_number(name, &n).is_some();
            (rotated || n == name).then(|| dir.join(n))
        })
        .collect();
    members = super::order_files(&members);
    let at = members
        .iter()
        .position(|p| std::fs::metadata(p).is_ok_and(|m| m.ino() == ino))?;
    members.get(at + 1).cloned()
}

/// Prints records in one format.
#[derive(Default)]
struct Printer {
    format: Format,
    ocsf: super::ocsf::Mapper,
    text: String,
    json: Vec<u8>,
}

impl Printer {
    /// A record the filters left out: OCSF still needs its session's facts (the claimed
    /// names of `initialized`, the client address of `session_start`) for the decisions
    /// that are shown.
    fn note(&mut self, rec: &Record, raw: &[u8]) {
        if self.format == Format::Ocsf
            && matches!(rec.event_name.as_str(), "initialized" | "session_start")
            && let Ok(obj) =
                serde_json::from_slice::<serde_json::Map<String, serde_json::Value>>(raw)
        {
            self.ocsf.remember(&obj);
        }
    }

    fn print(&mut self, rec: &Record, raw: &[u8], out: &mut dyn Write) -> std::io::Result<()> {
        let json = &mut self.json;
        json.clear();
        match self.format {
            Format::Ocsf | Format::Json => {
                if self.format == Format::Json {
                    // A line rootfence wrote is already escaped; one that was put in the log
                    // by other means is escaped here, so no raw control reaches the reader.
                    json.extend_from_slice(raw);
                } else if let Ok(obj) = serde_json::from_slice(raw) {
                    // serde_json escapes every control; the mapped values are the
                    // record's own, so the same display escaping applies.
                    let _ = serde_json::to_writer(&mut *json, &self.ocsf.map(&obj));
                } else {
                    return Ok(());
                }
                escape_json_display(json, 0);
                json.push(b'\n');
                out.write_all(json)
            }
            text_format => {
                self.text.clear();
                let _ = format_record(rec, &mut self.text);
                match text_format {
                    Format::Cef => writeln!(out, "{}", cef_line(rec, &self.text)),
                    Format::Csv => writeln!(out, "{}", csv_line(rec, &self.text)),
                    _ => writeln!(out, "{}", self.text),
                }
            }
        }
    }
}

/// `  sandbox: <mode> <enforcement>`, when there is a sandbox report.
fn sandbox_field(o: &mut String, sb: Option<&super::SandboxReport>) -> std::fmt::Result {
    sb.map_or(Ok(()), |sb| {
        write!(o, "  sandbox: {} {}", disp(&sb.mode), disp(&sb.enforcement))
    })
}

/// `  principal: <principal in one line>`, when there is a principal.
fn principal_field(o: &mut String, p: Option<&super::Principal>) -> std::fmt::Result {
    p.map_or(Ok(()), |p| write!(o, "  principal: {}", principal_text(p)))
}

/// A principal in one line: its subject, whether it was authenticated, where from.
fn principal_text(p: &super::Principal) -> String {
    let mut s = disp(&p.subject);
    s.push_str(if p.authenticated {
        " (authenticated)"
    } else {
        " (not authenticated)"
    });
    opt_field(&mut s, " from ", p.client_address.as_deref());
    opt_field(&mut s, " http session ", p.http_session.as_deref());
    s
}

/// The CSV columns, in order.
const CSV_COLUMNS: &[&str] = &[
    "ts",
    "seq",
    "session",
    "event",
    "direction",
    "method",
    "id",
    "tool",
    "field",
    "uri",
    "canonical",
    "decision",
    "reason",
    "rule",
    "root",
    "action",
    "text",
    // Added after `text` so that the columns before keep their positions.
    "request",
    "principal",
];

/// The decision's columns, or empty ones.
fn decision_cells(rec: &Record) -> [String; 12] {
    let mut c: [String; 12] = Default::default();
    let opt = |s: Option<&str>| s.map(disp).unwrap_or_default();
    if let Some(Event::Decision(d)) = &rec.event {
        c[0] = enum_word(&d.direction);
        c[1] = disp(&d.method);
        c[2] = opt(d.id.as_ref().map(super::RpcId::as_json));
        c[3] = opt(d.tool.as_deref());
        c[4] = opt(d.field.as_deref());
        c[5] = disp(d.uri.as_str());
        c[6] = opt(d.canonical.as_ref().map(super::AuditUri::as_str));
        c[7] = enum_word(&d.decision);
        c[8] = disp(&d.reason);
        c[9] = rule_text(d.layer.as_deref(), d.rule.as_deref());
        c[10] = opt(d.root.as_ref().map(super::AuditUri::as_str));
        c[11] = enum_word(&d.action);
    } else if let Some(Event::DecisionSummary(s)) = &rec.event {
        c[0] = enum_word(&s.direction);
        c[1] = disp(&s.method);
        c[2] = opt(s.id.as_ref().map(super::RpcId::as_json));
        c[4] = disp(&s.field);
        c[7] = "allow".into();
    }
    c
}

/// `layer: rule`, or whichever of the two there is, display-escaped.
pub(crate) fn rule_text(layer: Option<&str>, rule: Option<&str>) -> String {
    [layer, rule]
        .into_iter()
        .flatten()
        .map(disp)
        .collect::<Vec<_>>()
        .join(": ")
}

/// One CSV row (RFC 4180). A cell a spreadsheet would run as a formula (starting with `=`,
/// `+`, `-`, `@`) gets a leading `'`: a server chooses tool names and URIs, and a reviewer
/// opening the export must not run them.
fn csv_line(rec: &Record, text: &str) -> String {
    let d = decision_cells(rec);
    // Every cell is display-escaped already (`decision_cells`, `format_record`).
    let mut cells: Vec<String> = vec![
        disp(&rec.ts),
        rec.seq.to_string(),
        disp(&rec.session),
        disp(&rec.event_name),
    ];
    cells.extend(d);
    cells.push(text.to_owned());
    let (request, principal) = match &rec.event {
        Some(Event::Decision(d)) => (d.request, d.principal.as_deref()),
        Some(Event::DecisionSummary(s)) => (s.request, None),
        _ => (None, None),
    };
    cells.push(request.map(|k| format!("#{k}")).unwrap_or_default());
    cells.push(principal.map(disp).unwrap_or_default());
    let mut o = String::with_capacity(256);
    for (i, c) in cells.iter().enumerate() {
        if i > 0 {
            o.push(',');
        }
        let mut v = c.clone();
        if i != 1 && v.starts_with(['=', '+', '-', '@']) {
            v.insert(0, '\'');
        }
        if v.contains([',', '"', '\n', '\r']) || v.starts_with(' ') || v.ends_with(' ') {
            o.push('"');
            o.push_str(&v.replace('"', "\"\""));
            o.push('"');
        } else {
            o.push_str(&v);
        }
    }
    o
}

/// A CEF header field: `\` and `|` escaped.
fn cef_head(s: &str) -> String {
    s.replace('\\', "\\\\").replace('|', "\\|")
}

/// A CEF extension value: `\`, `=` escaped, line ends as `\n`/`\r` (the text is already
/// display-escaped, so no other control is left).
fn cef_value(s: &str) -> String {
    s.replace('\\', "\\\\")
        .replace('=', "\\=")
        .replace('\n', "\\n")
        .replace('\r', "\\r")
}

/// One CEF line: `CEF:0|rootfence|rootfence|<version>|<event>|<name>|<severity>|<ext>`.
/// The mapping of fields to CEF keys is documented in docs/siem.md.
fn cef_line(rec: &Record, text: &str) -> String {
    let mut sev = 1;
    let mut name = disp(&rec.event_name);
    let mut ext: Vec<(&str, String)> = Vec::new();
    if let Some(us) = rec.ts_micros {
        ext.push(("rt", (us / 1000).to_string()));
    }
    ext.push(("cs1Label", "session".into()));
    ext.push(("cs1", rec.session.clone()));
    ext.push(("cn1Label", "seq".into()));
    ext.push(("cn1", rec.seq.to_string()));
    match &rec.event {
        Some(Event::Decision(d)) => {
            let deny = d.decision == Verdict::Deny;
            if deny {
                sev = 5;
            }
            name = format!(
                "{} {} {}",
                disp(&d.method),
                if deny { "denied" } else { "allowed" },
                disp(&d.reason)
            );
            let c = decision_cells(rec);
            ext.push(("act", c[7].clone()));
            // CEF: 0 inbound (from the host), 1 outbound.
            let outbound = d.direction == Direction::ServerToHost;
            ext.push(("deviceDirection", u8::from(outbound).to_string()));
            ext.push(("request", c[5].clone()));
            if let Some(path) = d
                .canonical
                .as_ref()
                .and_then(|u| u.as_str().strip_prefix("file://"))
            {
                ext.push(("filePath", disp(path)));
            }
            ext.push(("reason", c[8].clone()));
            ext.push(("cs2Label", "method".into()));
            ext.push(("cs2", c[1].clone()));
            for (label_key, key, label, cell) in [
                ("cs3Label", "cs3", "tool", 3),
                ("cs4Label", "cs4", "rule", 9),
                ("cs5Label", "cs5", "rpcId", 2),
                ("cs6Label", "cs6", "field", 4),
            ] {
                if !c[cell].is_empty() {
                    ext.push((label_key, label.into()));
                    ext.push((key, c[cell].clone()));
                }
            }
        }
        Some(Event::LogRewound(_) | Event::LogRecovered(_)) => sev = 8,
        Some(Event::PolicyReload(r)) if r.error.is_some() => sev = 5,
        _ => {}
    }
    ext.push(("msg", text.to_owned()));
    let mut o = format!(
        "CEF:0|rootfence|rootfence|{}|{}|{}|{sev}|",
        env!("CARGO_PKG_VERSION"),
        cef_head(&disp(&rec.event_name)),
        cef_head(&name)
    );
    for (i, (k, v)) in ext.iter().enumerate() {
        if i > 0 {
            o.push(' ');
        }
        let _ = write!(o, "{k}={}", cef_value(v));
    }
    o
}

/// `s` made safe to print: unsafe characters become `\u{XXXX}`, a backslash `\\`.
pub(crate) fn disp(s: &str) -> String {
    if !s.chars().any(is_unsafe_display_char) {
        return s.to_owned();
    }
    let mut o = String::with_capacity(s.len() + 8);
    for c in s.chars() {
        if c == '\\' {
            o.push_str("\\\\");
        } else if is_unsafe_display_char(c) {
            let _ = write!(o, "\\u{{{:04x}}}", u32::from(c));
        } else {
            o.push(c);
        }
    }
    o
}

/// A file name as printed: escaped like every other string shown to a person.
pub(crate) fn disp_path(p: &Path) -> String {
    disp(&p.display().to_string())
}

/// Each item display-escaped, joined with `sep`.
pub(crate) fn disp_join<S: AsRef<str>>(items: impl IntoIterator<Item = S>, sep: &str) -> String {
    let v: Vec<String> = items.into_iter().map(|s| disp(s.as_ref())).collect();
    v.join(sep)
}

/// `<label><value>`, the value display-escaped, when there is one.
fn opt_field(o: &mut String, label: &str, value: Option<&str>) {
    if let Some(v) = value {
        o.push_str(label);
        o.push_str(&disp(v));
    }
}

fn dir(d: Direction) -> &'static str {
    match d {
        Direction::HostToServer => "host->server",
        Direction::ServerToHost => "server->host",
    }
}

fn uris(v: &[super::AuditUri]) -> String {
    format!(
        "[{}]",
        disp_join(v.iter().map(super::AuditUri::as_str), ", ")
    )
}

/// The snake_case word serde gives a unit enum variant.
pub(crate) fn enum_word<T: serde::Serialize>(v: &T) -> String {
    match serde_json::to_value(v) {
        Ok(serde_json::Value::String(s)) => s,
        _ => "?".into(),
    }
}

/// `  title: k1 n1, k2 n2` for a non-empty count map.
fn counts(
    o: &mut String,
    title: &str,
    m: &std::collections::BTreeMap<String, u64>,
) -> std::fmt::Result {
    if m.is_empty() {
        return Ok(());
    }
    let items: Vec<String> = m.iter().map(|(k, v)| format!("{} {v}", disp(k))).collect();
    write!(o, "  {title}: {}", items.join(", "))
}

fn format_record(r: &Record, o: &mut String) -> std::fmt::Result {
    let short = r.session.get(..8).unwrap_or(&r.session);
    write!(o, "{} {} #{} ", r.ts, short, r.seq)?;
    let Some(ev) = &r.event else {
        return write!(
            o,
            "{} (an event this rootfence does not know; use --json)",
            disp(&r.event_name)
        );
    };
    match ev {
        Event::SessionStart(s) => {
            write!(
                o,
                "session_start rootfence {} pid {} command: {}  cwd: {}  roots: {}  policies: {}",
                disp(&s.rootfence_version),
                s.pid,
                disp_join(&s.command, " "),
                disp(&s.cwd),
                uris(&s.effective_roots),
                s.policy_files
                    .iter()
                    .map(|p| format!("{} ({}…)", disp(&p.path), p.sha256.get(..12).unwrap_or("")))
                    .collect::<Vec<_>>()
                    .join(", ")
            )?;
            sandbox_field(o, s.sandbox.as_ref())?;
            principal_field(o, s.principal.as_ref())
        }
        Event::Initialized(i) => {
            let peer = |p: &Option<super::PeerInfo>| match p {
                Some(p) => format!("{} {}", disp(&p.name), disp(&p.version)),
                None => "?".into(),
            };
            write!(
                o,
                "initialized protocol {}  host: {}  server: {}",
                disp(&i.protocol_version),
                peer(&i.host),
                peer(&i.server)
            )?;
            principal_field(o, i.principal.as_ref())
        }
        Event::RootsUpdate(u) => {
            let dropped: Vec<String> = u
                .dropped
                .iter()
                .map(|d| format!("{} ({})", disp(d.uri.as_str()), disp(&d.reason)))
                .collect();
            let narrowed: Vec<String> = u
                .narrowed
                .iter()
                .map(|n| format!("{} -> {}", disp(n.uri.as_str()), uris(&n.to)))
                .collect();
            write!(
                o,
                "roots_update ({})  received: {}  dropped: [{}]  narrowed: [{}]  effective: {}",
                disp(&u.trigger),
                uris(&u.received),
                dropped.join(", "),
                narrowed.join(", "),
                uris(&u.effective)
            )
        }
        Event::ServerStart(s) => {
            write!(
                o,
                "server_start generation {} ({})  roots: {}",
                s.generation,
                disp(&s.trigger),
                uris(&s.roots)
            )?;
            sandbox_field(o, s.sandbox.as_ref())?;
            if !s.differences.is_empty() {
                write!(o, "  differs: {}", disp_join(&s.differences, "; "))?;
            }
            Ok(())
        }
        Event::Decision(d) => {
            let verdict = match d.decision {
                Verdict::Allow => "allow",
                Verdict::Deny => "DENY ",
            };
            write!(o, "{verdict} {} {}", dir(d.direction), disp(&d.method))?;
            let request = d.request.map(|k| format!("#{k}"));
            opt_field(o, " tool=", d.tool.as_deref());
            opt_field(o, " id=", d.id.as_ref().map(super::RpcId::as_json));
            opt_field(o, " request=", request.as_deref());
            opt_field(o, " by=", d.principal.as_deref());
            opt_field(o, " ", d.field.as_deref());
            write!(o, " {}", disp(d.uri.as_str()))?;
            if let Some(c) = &d.canonical
                && c != &d.uri
            {
                write!(o, " => {}", disp(c.as_str()))?;
            }
            write!(o, "  reason: {}", disp(&d.reason))?;
            let rule = rule_text(d.layer.as_deref(), d.rule.as_deref());
            if !rule.is_empty() {
                write!(o, "  rule: {rule}")?;
            }
            opt_field(o, "  root: ", d.root.as_ref().map(super::AuditUri::as_str));
            write!(o, "  action: {}", enum_word(&d.action))
        }
        Event::ProtocolError(p) => {
            write!(
                o,
                "protocol_error {} {} ({} bytes)",
                dir(p.direction),
                enum_word(&p.kind),
                p.len
            )?;
            opt_field(o, " id=", p.id.as_ref().map(super::RpcId::as_json));
            write!(o, ": {}", disp(&p.detail))
        }
        Event::SessionEnd(e) => {
            write!(o, "session_end {}", enum_word(&e.cause))?;
            opt_field(o, " exit ", e.exit_code.map(|c| c.to_string()).as_deref());
            opt_field(o, " signal ", e.signal.map(|s| s.to_string()).as_deref());
            if let Some(d) = &e.detail {
                write!(o, " ({})", disp(d))?;
            }
            let c = &e.counts;
            write!(
                o,
                "  messages: {} from host, {} from server  decisions: {} allow, {} deny  \
                 protocol errors: {}  records: {}",
                c.from_host, c.from_server, c.allowed, c.denied, c.protocol_errors, c.records
            )
        }
        Event::LogRewound(l) => write!(
            o,
            "log_rewound the log lost records from its end while rootfence was writing it: \
             it had reached seq {} ({}…), and ended at seq {}",
            l.expected_seq,
            disp(l.expected_hash.get(..12).unwrap_or("")),
            l.found_seq
        ),
        Event::LogRecovered(l) => write!(
            o,
            "log_recovered {} had an incomplete line of {} bytes at offset {} (sha256 {})",
            disp(&l.file),
            l.len,
            l.offset,
            disp(&l.sha256)
        ),
        Event::DecisionSummary(s) => {
            write!(o, "allow {} {}", dir(s.direction), disp(&s.method))?;
            opt_field(o, " id=", s.id.as_ref().map(super::RpcId::as_json));
            write!(
                o,
                " {}: {} entries allowed (summarized), {} denied (own records)",
                disp(&s.field),
                s.allowed,
                s.denied
            )?;
            if !s.dirs.is_empty() {
                let dirs: Vec<String> = s
                    .dirs
                    .iter()
                    .map(|d| format!("{} ({})", disp(d.dir.as_str()), d.count))
                    .collect();
                write!(o, "  dirs: {}", dirs.join(", "))?;
            }
            if s.dirs_omitted > 0 {
                write!(o, " and {} more entries", s.dirs_omitted)?;
            }
            counts(o, "other", &s.other)?;
            counts(o, "reasons", &s.reasons)?;
            counts(o, "rules", &s.rules)
        }
        Event::ProtocolErrorRepeated(p) => {
            write!(
                o,
                "protocol_error {} {} repeated {} times ({} bytes) since {}; the first: {} bytes",
                dir(p.direction),
                enum_word(&p.kind),
                p.count,
                p.bytes,
                disp(&p.since),
                p.first.len
            )?;
            opt_field(o, " id=", p.first.id.as_ref().map(super::RpcId::as_json));
            opt_field(o, " sha256 ", p.first.sha256.as_deref());
            write!(o, ": {}", disp(&p.first.detail))
        }
        Event::LogPruned(l) => write!(
            o,
            "log_pruned retention removed {} ({} bytes); the chain now starts at seq {} in {}",
            disp_join(&l.removed, ", "),
            l.removed_bytes,
            l.first_seq,
            disp(&l.first_file)
        ),
        Event::SinkDropped(d) => write!(
            o,
            "sink_dropped {} dropped {} records ({} this session): {}",
            disp(&d.sink),
            d.dropped,
            d.total,
            disp(&d.reason)
        ),
        Event::PolicyReload(r) => {
            let files = disp_join(r.policy_files.iter().map(|f| &f.path), ", ");
            match &r.error {
                None => {
                    write!(o, "policy_reload applied {files}")?;
                    if !r.deferred.is_empty() {
                        write!(
                            o,
                            "; at the next generation: {}",
                            disp_join(&r.deferred, "; ")
                        )?;
                    }
                    Ok(())
                }
                Some(e) => write!(o, "policy_reload REFUSED {files}: {}", disp(e)),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn display_escapes_everything_that_could_forge_a_line() {
        let cases = [
            ("file:///a", "file:///a"),
            ("a\nb", "a\\u{000a}b"),
            ("a\u{1b}[2Jb", "a\\u{001b}[2Jb"),
            ("x\u{202e}gpj.exe", "x\\u{202e}gpj.exe"),
            ("a\u{2028}b", "a\\u{2028}b"),
            ("a\u{85}b\u{7f}", "a\\u{0085}b\\u{007f}"),
            ("a\\u{000a}b", "a\\\\u{000a}b"),
            ("\u{2066}\u{2069}\u{feff}", "\\u{2066}\\u{2069}\\u{feff}"),
            ("é日本", "é日本"),
        ];
        for (raw, want) in cases {
            assert_eq!(disp(raw), want, "{raw:?}");
        }
    }
}
