//! `rootfence audit summary`: per session and across all of them, counts by decision,
//! method and reason, and the most used tools, most denied URIs and rules; with the
//! filters of `show` ([`Filter`]).

use std::collections::{BTreeMap, HashMap};
use std::io::Write;
use std::path::PathBuf;

use serde::Serialize;

use super::event::{Event, Verdict, escape_json_display};
use super::filter::Filter;
use super::read::{Record, for_each_record};
use super::show::{disp, disp_join, enum_word};

/// Options for [`summarize`].
#[derive(Debug, Clone, Default)]
pub struct SummaryOptions {
    /// How many tools, denied URIs and rules to list.
    pub top: usize,
    /// Print JSON instead of text.
    pub json: bool,
    /// Which records count.
    pub filter: Filter,
}

/// What `tools/call` decisions count under when the record does not name its tool
/// (records written before decisions carried `tool`).
pub(crate) const NO_TOOL: &str = "(tool not recorded)";

#[derive(Debug, Default, Serialize)]
struct Session {
    session: String,
    first_ts: String,
    last_ts: String,
    records: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    command: Option<Vec<String>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    protocol_version: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    end: Option<String>,
    decisions: BTreeMap<String, u64>,
    by_method: BTreeMap<String, BTreeMap<String, u64>>,
    by_reason: BTreeMap<String, u64>,
    by_action: BTreeMap<String, u64>,
    protocol_errors: BTreeMap<String, u64>,
    /// Allowed decisions counted in `decision_summary` records (included in `decisions`).
    #[serde(skip_serializing_if = "is_zero")]
    summarized_allows: u64,
    roots_updates: u64,
    roots_dropped: u64,
    /// `tools/call` decisions by tool: allow and deny counts.
    by_tool: BTreeMap<String, BTreeMap<String, u64>>,
    top_tools: Vec<(String, u64)>,
    top_denied_tools: Vec<(String, u64)>,
    top_denied_uris: Vec<(String, u64)>,
    top_denied_rules: Vec<(String, u64)>,
    #[serde(skip)]
    tools: HashMap<String, u64>,
    #[serde(skip)]
    denied_tools: HashMap<String, u64>,
    #[serde(skip)]
    denied_uris: HashMap<String, u64>,
    #[serde(skip)]
    denied_rules: HashMap<String, u64>,
}

#[derive(Debug, Serialize)]
struct Summary {
    sessions: Vec<Session>,
    /// Every session together (`session` is the number of sessions).
    all: Session,
    warnings: Vec<String>,
}

/// Reads `files` (in chain order) and writes the summary to `out`. Malformed and
/// incomplete lines are skipped and listed as warnings (on `err`, and in the JSON).
pub fn summarize(
    files: &[PathBuf],
    opts: &SummaryOptions,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> std::io::Result<()> {
    let files = super::order_files(files);
    let mut sessions: Vec<Session> = Vec::new();
    let mut all = Session::default();
    let mut index: HashMap<String, usize> = HashMap::new();
    // Each session's command, protocol and end, from its records whether or not the
    // filters keep them: a summary of a session's denials still says how it ended.
    let mut meta: HashMap<String, Session> = HashMap::new();
    let warnings = for_each_record(
        &files,
        |rec, _| {
            if matches!(
                rec.event,
                Some(Event::SessionStart(_) | Event::Initialized(_) | Event::SessionEnd(_))
            ) && (meta.contains_key(&rec.session) || meta.len() < 1 << 20)
            {
                meta.entry(rec.session.clone()).or_default().add(rec);
            }
            if !opts.filter.accepts(rec) {
                return;
            }
            let i = *index.entry(rec.session.clone()).or_insert_with(|| {
                sessions.push(Session {
                    session: rec.session.clone(),
                    first_ts: rec.ts.clone(),
                    ..Session::default()
                });
                sessions.len() - 1
            });
            sessions[i].add(rec);
            if all.first_ts.is_empty() {
                all.first_ts.clone_from(&rec.ts);
            }
            all.add(rec);
        },
        err,
    )?;
    for s in sessions.iter_mut().chain(std::iter::once(&mut all)) {
        s.finish(opts.top);
    }
    for s in &mut sessions {
        if let Some(m) = meta.remove(&s.session) {
            s.command = s.command.take().or(m.command);
            s.protocol_version = s.protocol_version.take().or(m.protocol_version);
            s.end = s.end.take().or(m.end);
        }
    }
    all.session = format!("{} sessions", sessions.len());
    all.command = None;
    all.protocol_version = None;
    all.end = None;
    let summary = Summary {
        sessions,
        all,
        warnings,
    };
    if opts.json {
        // Strings in the log are server-controlled: printed JSON carries them escaped, never
        // as raw C1 or bidi controls.
        let mut json = serde_json::to_vec_pretty(&summary)?;
        escape_json_display(&mut json, 0);
        out.write_all(&json)?;
        writeln!(out)?;
        return Ok(());
    }
    for s in &summary.sessions {
        print_session("session", s, out)?;
    }
    if summary.sessions.is_empty() {
        writeln!(out, "no records")?;
    } else if summary.sessions.len() > 1 {
        print_session("all", &summary.all, out)?;
    }
    Ok(())
}

impl Session {
    /// Counts one record.
    fn add(&mut self, rec: &Record) {
        let s = self;
        s.records += 1;
        s.last_ts.clone_from(&rec.ts);
        match &rec.event {
            Some(Event::SessionStart(st)) => {
                s.command = Some(st.command.clone());
                if st.protocol_version.is_some() {
                    s.protocol_version.clone_from(&st.protocol_version);
                }
            }
            Some(Event::Initialized(i)) => {
                s.protocol_version = Some(i.protocol_version.clone());
            }
            Some(Event::RootsUpdate(u)) => {
                s.roots_updates += 1;
                s.roots_dropped += u.dropped.len() as u64;
            }
            Some(Event::Decision(d)) => {
                let verdict = &enum_word(&d.decision);
                count(&mut s.decisions, verdict, 1);
                count(s.by_method.entry(d.method.clone()).or_default(), verdict, 1);
                count(&mut s.by_reason, &d.reason, 1);
                count(&mut s.by_action, &enum_word(&d.action), 1);
                let tool = tool_of(d);
                if let Some(t) = tool {
                    count(s.by_tool.entry(t.to_owned()).or_default(), verdict, 1);
                    *s.tools.entry(t.to_owned()).or_default() += 1;
                }
                if d.decision == Verdict::Deny {
                    *s.denied_uris.entry(d.uri.as_str().to_owned()).or_default() += 1;
                    *s.denied_rules.entry(rule_key(d)).or_default() += 1;
                    if let Some(t) = tool {
                        *s.denied_tools.entry(t.to_owned()).or_default() += 1;
                    }
                }
            }
            Some(Event::DecisionSummary(d)) => {
                let n = d.allowed;
                count(&mut s.decisions, "allow", n);
                count(s.by_method.entry(d.method.clone()).or_default(), "allow", n);
                for (reason, k) in &d.reasons {
                    count(&mut s.by_reason, reason, *k);
                }
                count(&mut s.by_action, "forwarded", n);
                s.summarized_allows += n;
            }
            Some(Event::ProtocolError(p)) => count(&mut s.protocol_errors, &enum_word(&p.kind), 1),
            Some(Event::ProtocolErrorRepeated(p)) => {
                count(&mut s.protocol_errors, &enum_word(&p.kind), p.count);
            }
            Some(Event::SessionEnd(e)) => {
                let exit = e
                    .exit_code
                    .map_or(String::new(), |c| format!(" (exit {c})"));
                let signal = e.signal.map_or(String::new(), |c| format!(" (signal {c})"));
                s.end = Some(format!("{}{exit}{signal}", enum_word(&e.cause)));
            }
            _ => {}
        }
    }

    /// Fills the top lists.
    fn finish(&mut self, n: usize) {
        self.top_tools = top(&self.tools, n);
        self.top_denied_tools = top(&self.denied_tools, n);
        self.top_denied_uris = top(&self.denied_uris, n);
        self.top_denied_rules = top(&self.denied_rules, n);
    }
}

/// The tool a decision counts under: the one its record names (records written before
/// decisions carried `tool` name none), else [`NO_TOOL`] for a `tools/call`.
pub(crate) fn tool_of(d: &super::event::Decision) -> Option<&str> {
    match (&d.tool, d.method.as_str()) {
        (Some(t), _) => Some(t.as_str()),
        (None, crate::mcp::methods::TOOLS_CALL) => Some(NO_TOOL),
        _ => None,
    }
}

/// Adds `n` to `m[k]`.
fn count(m: &mut BTreeMap<String, u64>, k: &str, n: u64) {
    *m.entry(k.to_owned()).or_default() += n;
}

/// The rule a denial is counted under: `layer: rule`, or what there is, or the reason.
pub(crate) fn rule_key(d: &super::event::Decision) -> String {
    match (&d.layer, &d.rule) {
        (Some(l), Some(r)) => format!("{l}: {r}"),
        (None, Some(r)) => r.clone(),
        (Some(l), None) => l.clone(),
        (None, None) => format!("(no rule: {})", d.reason),
    }
}

/// One session (`what` is `session`), or every session together (`all`).
fn print_session(what: &str, s: &Session, out: &mut dyn Write) -> std::io::Result<()> {
    writeln!(
        out,
        "{what} {}  {} .. {}  {} records",
        s.session, s.first_ts, s.last_ts, s.records
    )?;
    if what == "all" {
        return print_counts(s, out);
    }
    if let Some(c) = &s.command {
        writeln!(out, "  command:   {}", disp_join(c, " "))?;
    }
    writeln!(
        out,
        "  protocol:  {}",
        s.protocol_version
            .as_deref()
            .map_or("(unknown)".into(), disp)
    )?;
    writeln!(
        out,
        "  ended:     {}",
        s.end
            .as_deref()
            .unwrap_or("(no session_end: still running, or killed)")
    )?;
    print_counts(s, out)
}

fn print_counts(s: &Session, out: &mut dyn Write) -> std::io::Result<()> {
    let d = |k: &str| s.decisions.get(k).copied().unwrap_or(0);
    write!(out, "  decisions: {} allow, {} deny", d("allow"), d("deny"))?;
    if s.summarized_allows > 0 {
        write!(
            out,
            " ({} allowed list entries summarized per page)",
            s.summarized_allows
        )?;
    }
    writeln!(out)?;
    if !s.by_method.is_empty() {
        writeln!(out, "  by method:")?;
        for (m, v) in &s.by_method {
            allow_deny_row(out, m, v)?;
        }
    }
    list(out, "by reason", &s.by_reason)?;
    list(out, "by action", &s.by_action)?;
    list(out, "protocol errors", &s.protocol_errors)?;
    if s.roots_updates > 0 {
        writeln!(
            out,
            "  roots:     {} updates, {} roots dropped",
            s.roots_updates, s.roots_dropped
        )?;
    }
    if !s.by_tool.is_empty() {
        writeln!(out, "  by tool (tools/call):")?;
        let mut tools: Vec<(&String, &BTreeMap<String, u64>)> = s.by_tool.iter().collect();
        // Most used first; only the top ones.
        tools.sort_by_key(|(k, v)| (std::cmp::Reverse(v.values().sum::<u64>()), *k));
        let shown = s.top_tools.len().max(1);
        for (t, v) in tools.iter().take(shown) {
            allow_deny_row(out, t, v)?;
        }
        if tools.len() > shown {
            writeln!(out, "    ... and {} more tools", tools.len() - shown)?;
        }
    }
    for (title, top) in [
        ("top denied URIs", &s.top_denied_uris),
        ("top denying rules", &s.top_denied_rules),
    ] {
        list(out, title, top.iter().map(|(k, v)| (k, v)))?;
    }
    writeln!(out)
}

/// `name`'s allow and deny counts, one row of `by method` or `by tool`.
fn allow_deny_row(
    out: &mut dyn Write,
    name: &str,
    v: &BTreeMap<String, u64>,
) -> std::io::Result<()> {
    let g = |k: &str| v.get(k).copied().unwrap_or(0);
    let (allow, deny) = (g("allow"), g("deny"));
    writeln!(
        out,
        "    {:<32} {allow:>8} allow {deny:>8} deny",
        disp(name)
    )
}

fn list<'a>(
    out: &mut dyn Write,
    title: &str,
    items: impl IntoIterator<Item = (&'a String, &'a u64)>,
) -> std::io::Result<()> {
    let mut first = true;
    for (k, v) in items {
        if std::mem::take(&mut first) {
            writeln!(out, "  {title}:")?;
        }
        writeln!(out, "    {v:>8}  {}", disp(k))?;
    }
    Ok(())
}

/// The `n` largest counts, ties broken by name so the output is stable.
pub(crate) fn top(m: &HashMap<String, u64>, n: usize) -> Vec<(String, u64)> {
    let mut v: Vec<(String, u64)> = m.iter().map(|(k, c)| (k.clone(), *c)).collect();
    v.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    v.truncate(n);
    v
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}
