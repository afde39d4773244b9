//! `rootfence audit show`: a readable, filterable listing of records.
//!
//! Every string from the log is shown through [`disp`], which escapes control characters,
//! line separators, bidi controls and backslashes, so a URI cannot move the cursor, start a
//! fake line, or reorder text on the reviewer's terminal. `--json` prints the matching lines
//! exactly as stored (the writer already escaped them); `--format ocsf` each one mapped to
//! OCSF (`ocsf`).

use std::fmt::Write as _;
use std::io::Write;
use std::path::PathBuf;

use super::event::{Direction, Event, Verdict, escape_json_display, is_unsafe_display_char};
use super::read::{Record, for_each_record};

/// Which records [`show`] lists.
#[derive(Debug, Clone, Default)]
pub struct ShowFilter {
    /// Only denied decisions.
    pub denied: bool,
    /// Only this session (an id or a prefix of one).
    pub session: Option<String>,
    /// Only records at or after this instant (microseconds since the epoch).
    pub since: Option<i64>,
    /// Print the stored JSON lines instead of text.
    pub json: bool,
    /// Print each record mapped to OCSF (one JSON object per line) instead of text.
    pub ocsf: bool,
}

impl ShowFilter {
    fn accepts(&self, r: &Record) -> bool {
        if let Some(s) = &self.session
            && !r.session.starts_with(s.as_str())
        {
            return false;
        }
        if let Some(t) = self.since
            && r.ts_micros.is_none_or(|ts| ts < t)
        {
            return false;
        }
        if self.denied
            && !matches!(&r.event, Some(Event::Decision(d)) if d.decision == Verdict::Deny)
        {
            return false;
        }
        true
    }
}

/// Lists the records of `files` (in chain order) that pass `filter`. Malformed and
/// incomplete lines are reported on `err` and skipped.
pub fn show(
    files: &[PathBuf],
    filter: &ShowFilter,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> std::io::Result<()> {
    let files = super::order_files(files);
    let mut io_err: Option<std::io::Error> = None;
    let mut warnings = Vec::new();
    let mut text = String::with_capacity(256);
    let mut json = Vec::with_capacity(1024);
    for_each_record(
        &files,
        |rec, raw| {
            if io_err.is_some() || !filter.accepts(rec) {
                return;
            }
            let r = if filter.ocsf {
                match serde_json::from_slice::<serde_json::Map<String, serde_json::Value>>(raw) {
                    Ok(obj) => {
                        json.clear();
                        // serde_json escapes every control; the mapped values are the
                        // record's own, so the same display escaping applies.
                        let _ = serde_json::to_writer(&mut json, &super::ocsf::map(&obj));
                        escape_json_display(&mut json, 0);
                        json.push(b'\n');
                        out.write_all(&json)
                    }
                    Err(_) => Ok(()),
                }
            } else if filter.json {
                // A line rootfence wrote is already escaped; one that was put in the log by
                // other means is escaped here, so no raw control reaches the reader.
                json.clear();
                json.extend_from_slice(raw);
                escape_json_display(&mut json, 0);
                json.push(b'\n');
                out.write_all(&json)
            } else {
                text.clear();
                format_record(rec, &mut text);
                writeln!(out, "{text}")
            };
            if let Err(e) = r {
                io_err = Some(e);
            }
        },
        |w| warnings.push(w),
    )?;
    for w in warnings {
        writeln!(err, "rootfence: warning: {}", disp(&w))?;
    }
    match io_err {
        Some(e) => Err(e),
        None => Ok(()),
    }
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

fn dir(d: Direction) -> &'static str {
    match d {
        Direction::HostToServer => "host->server",
        Direction::ServerToHost => "server->host",
    }
}

fn uris<'a>(it: impl Iterator<Item = &'a super::AuditUri>) -> String {
    let v: Vec<String> = it.map(|u| disp(u.as_str())).collect();
    format!("[{}]", v.join(", "))
}

fn name<T: serde::Serialize>(v: &T) -> String {
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

fn format_record(r: &Record, o: &mut String) {
    let short = r.session.get(..8).unwrap_or(&r.session);
    let _ = write!(o, "{} {} #{} ", r.ts, short, r.seq);
    let Some(ev) = &r.event else {
        let _ = write!(
            o,
            "{} (an event this rootfence does not know; use --json)",
            disp(&r.event_name)
        );
        return;
    };
    let _ = match ev {
        Event::SessionStart(s) => {
            let cmd: Vec<String> = s.command.iter().map(|a| disp(a)).collect();
            write!(
                o,
                "session_start rootfence {} pid {} command: {}  cwd: {}  roots: {}  policies: {}",
                disp(&s.rootfence_version),
                s.pid,
                cmd.join(" "),
                disp(&s.cwd),
                uris(s.effective_roots.iter()),
                s.policy_files
                    .iter()
                    .map(|p| format!("{} ({}…)", disp(&p.path), p.sha256.get(..12).unwrap_or("")))
                    .collect::<Vec<_>>()
                    .join(", ")
            )
            .and_then(|()| match &s.sandbox {
                Some(sb) => write!(o, "  sandbox: {} {}", disp(&sb.mode), disp(&sb.enforcement)),
                None => Ok(()),
            })
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
            )
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
                .map(|n| format!("{} -> {}", disp(n.uri.as_str()), uris(n.to.iter())))
                .collect();
            write!(
                o,
                "roots_update ({})  received: {}  dropped: [{}]  narrowed: [{}]  effective: {}",
                disp(&u.trigger),
                uris(u.received.iter()),
                dropped.join(", "),
                narrowed.join(", "),
                uris(u.effective.iter())
            )
        }
        Event::ServerStart(s) => write!(
            o,
            "server_start generation {} ({})  roots: {}",
            s.generation,
            disp(&s.trigger),
            uris(s.roots.iter())
        )
        .and_then(|()| match &s.sandbox {
            Some(sb) => write!(o, "  sandbox: {} {}", disp(&sb.mode), disp(&sb.enforcement)),
            None => Ok(()),
        })
        .and_then(|()| match s.differences.is_empty() {
            true => Ok(()),
            false => {
                let d: Vec<String> = s.differences.iter().map(|d| disp(d)).collect();
                write!(o, "  differs: {}", d.join("; "))
            }
        }),
        Event::Decision(d) => {
            let verdict = match d.decision {
                Verdict::Allow => "allow",
                Verdict::Deny => "DENY ",
            };
            let _ = write!(o, "{verdict} {} {}", dir(d.direction), disp(&d.method));
            if let Some(id) = &d.id {
                let _ = write!(o, " id={}", disp(id.as_json()));
            }
            if let Some(f) = &d.field {
                let _ = write!(o, " {}", disp(f));
            }
            let _ = write!(o, " {}", disp(d.uri.as_str()));
            if let Some(c) = &d.canonical
                && c != &d.uri
            {
                let _ = write!(o, " => {}", disp(c.as_str()));
            }
            let _ = write!(o, "  reason: {}", disp(&d.reason));
            // `layer: rule`, or whichever of the two there is.
            let rule = [d.layer.as_deref(), d.rule.as_deref()]
                .into_iter()
                .flatten()
                .map(disp)
                .collect::<Vec<_>>()
                .join(": ");
            if !rule.is_empty() {
                let _ = write!(o, "  rule: {rule}");
            }
            if let Some(root) = &d.root {
                let _ = write!(o, "  root: {}", disp(root.as_str()));
            }
            write!(o, "  action: {}", name(&d.action))
        }
        Event::ProtocolError(p) => {
            let _ = write!(
                o,
                "protocol_error {} {} ({} bytes)",
                dir(p.direction),
                name(&p.kind),
                p.len
            );
            if let Some(id) = &p.id {
                let _ = write!(o, " id={}", disp(id.as_json()));
            }
            write!(o, ": {}", disp(&p.detail))
        }
        Event::SessionEnd(e) => {
            let _ = write!(o, "session_end {}", name(&e.cause));
            if let Some(c) = e.exit_code {
                let _ = write!(o, " exit {c}");
            }
            if let Some(s) = e.signal {
                let _ = write!(o, " signal {s}");
            }
            if let Some(d) = &e.detail {
                let _ = write!(o, " ({})", disp(d));
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
            let _ = write!(o, "allow {} {}", dir(s.direction), disp(&s.method));
            if let Some(id) = &s.id {
                let _ = write!(o, " id={}", disp(id.as_json()));
            }
            let _ = write!(
                o,
                " {}: {} entries allowed (summarized), {} denied (own records)",
                disp(&s.field),
                s.allowed,
                s.denied
            );
            if !s.dirs.is_empty() {
                let dirs: Vec<String> = s
                    .dirs
                    .iter()
                    .map(|d| format!("{} ({})", disp(d.dir.as_str()), d.count))
                    .collect();
                let _ = write!(o, "  dirs: {}", dirs.join(", "));
            }
            if s.dirs_omitted > 0 {
                let _ = write!(o, " and {} more entries", s.dirs_omitted);
            }
            let _ = counts(o, "other", &s.other);
            let _ = counts(o, "reasons", &s.reasons);
            counts(o, "rules", &s.rules)
        }
        Event::ProtocolErrorRepeated(p) => {
            let _ = write!(
                o,
                "protocol_error {} {} repeated {} times ({} bytes) since {}; the first: {} bytes",
                dir(p.direction),
                name(&p.kind),
                p.count,
                p.bytes,
                disp(&p.since),
                p.first.len
            );
            if let Some(id) = &p.first.id {
                let _ = write!(o, " id={}", disp(id.as_json()));
            }
            if let Some(h) = &p.first.sha256 {
                let _ = write!(o, " sha256 {}", disp(h));
            }
            write!(o, ": {}", disp(&p.first.detail))
        }
        Event::LogPruned(l) => write!(
            o,
            "log_pruned retention removed {} ({} bytes); the chain now starts at seq {} in {}",
            l.removed
                .iter()
                .map(|f| disp(f))
                .collect::<Vec<_>>()
                .join(", "),
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
            let files = r
                .policy_files
                .iter()
                .map(|f| disp(&f.path))
                .collect::<Vec<_>>()
                .join(", ");
            match &r.error {
                None => {
                    let _ = write!(o, "policy_reload applied {files}");
                    if !r.deferred.is_empty() {
                        let _ = write!(
                            o,
                            "; at the next generation: {}",
                            r.deferred
                                .iter()
                                .map(|d| disp(d))
                                .collect::<Vec<_>>()
                                .join("; ")
                        );
                    }
                    Ok(())
                }
                Some(e) => write!(o, "policy_reload REFUSED {files}: {}", disp(e)),
            }
        }
    };
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
