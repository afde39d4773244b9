//! `rootfence audit report --html`: one self-contained HTML page for a reviewer.
//!
//! What it holds: the chain's verification (`verify`'s verdict and head hash), a timeline
//! with one lane per session (server generations, roots updates and policy reloads marked;
//! every denial a red mark whose tooltip gives reason, rule, tool and path), the top denied
//! paths, tools and rules, and a table of decisions to filter.
//!
//! # Self-contained and inert
//!
//! The page is plain HTML with inline CSS, inline SVG and one inline script: it fetches
//! nothing, so it works offline and as an email attachment. Everything in it that came
//! from the log (URIs, tool names, reasons: server- and host-chosen text) is display-
//! escaped ([`disp`]: controls, line separators, bidi overrides) and HTML-escaped. A
//! Content-Security-Policy allows no network access at all and only the one script whose
//! SHA-256 it names, so even an escaping mistake could not run injected script or
//! exfiltrate the page.

use std::collections::HashMap;
use std::fmt::Write as _;
use std::io::Write;
use std::path::PathBuf;

use base64::Engine as _;
use sha2::{Digest, Sha256};

use super::event::{Event, Verdict};
use super::filter::Filter;
use super::read::for_each_record;
use super::show::{disp, disp_join, rule_text};
use super::summary::{tool_of, top};
use super::verify::{VerifyOptions, verify_files_with};

/// Options for [`report_html`].
#[derive(Debug, Clone, Default)]
pub struct ReportOptions {
    /// How many entries each top list shows.
    pub top: usize,
    /// Which records the timeline, the top lists and the table hold (verification always
    /// covers the whole log).
    pub filter: Filter,
}

/// Rows of the decisions table at most; the page says when more were left out.
const MAX_ROWS: usize = 20_000;

/// Allowed-decision ticks per lane at most.
const MAX_ALLOW_TICKS: usize = 2_000;

/// Denial marks per lane at most: a flood of denials must not make a page of hundreds of
/// megabytes. The lane's label still counts them all, and the page says how many were not
/// drawn.
const MAX_DENY_MARKS: usize = 5_000;

/// A mark on a lane.
struct Mark {
    ts: i64,
    kind: MarkKind,
    seq: u64,
    /// Tooltip text (display-escaped, not yet HTML-escaped).
    label: String,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum MarkKind {
    Generation,
    Roots,
    Reload,
    Deny,
    Allow,
}

#[derive(Default)]
struct Lane {
    session: String,
    first: Option<i64>,
    last: Option<i64>,
    command: String,
    host: String,
    protocol: String,
    end: String,
    allowed: u64,
    denied: u64,
    allow_ticks: usize,
    deny_marks: usize,
    marks: Vec<Mark>,
}

/// Builds the report for `files`. Unreadable lines are skipped and reported on `err` (and
/// counted on the page); a broken chain is the page's first line, not an error.
pub fn report_html(
    files: &[PathBuf],
    opts: &ReportOptions,
    err: &mut dyn Write,
) -> std::io::Result<String> {
    let files = super::order_files(files);
    let verify = verify_files_with(&files, VerifyOptions::default(), None)?;
    let mut p = Page::default();
    let mut index: HashMap<String, usize> = HashMap::new();
    let warnings = for_each_record(
        &files,
        |rec, _| {
            if !opts.filter.accepts(rec) {
                return;
            }
            let i = *index.entry(rec.session.clone()).or_insert_with(|| {
                p.lanes.push(Lane {
                    session: rec.session.clone(),
                    ..Lane::default()
                });
                p.lanes.len() - 1
            });
            let lane = &mut p.lanes[i];
            if let Some(ts) = rec.ts_micros {
                lane.first = Some(lane.first.map_or(ts, |f| f.min(ts)));
                lane.last = Some(lane.last.map_or(ts, |l| l.max(ts)));
            }
            let ts = rec.ts_micros.unwrap_or(0);
            let mut mark = |kind, label: String| {
                if rec.ts_micros.is_some() {
                    lane.marks.push(Mark {
                        ts,
                        kind,
                        seq: rec.seq,
                        label,
                    });
                }
            };
            match &rec.event {
                Some(Event::SessionStart(s)) => {
                    lane.command = disp_join(&s.command, " ");
                }
                Some(Event::Initialized(i)) => {
                    lane.protocol = disp(&i.protocol_version);
                    if let Some(h) = &i.host {
                        // As the host claimed it in `initialize`: not authenticated.
                        lane.host = format!("{} {} (claimed)", disp(&h.name), disp(&h.version));
                    }
                }
                Some(Event::ServerStart(s)) => mark(
                    MarkKind::Generation,
                    format!(
                        "{} server generation {} ({})",
                        rec.ts,
                        s.generation,
                        disp(&s.trigger)
                    ),
                ),
                Some(Event::RootsUpdate(u)) => mark(
                    MarkKind::Roots,
                    format!(
                        "{} roots update ({}): {} effective, {} dropped",
                        rec.ts,
                        disp(&u.trigger),
                        u.effective.len(),
                        u.dropped.len()
                    ),
                ),
                Some(Event::PolicyReload(r)) => mark(
                    MarkKind::Reload,
                    format!(
                        "{} policy reload {}",
                        rec.ts,
                        if r.ok { "applied" } else { "refused" }
                    ),
                ),
                Some(Event::SessionEnd(e)) => {
                    lane.end = super::show::enum_word(&e.cause);
                }
                Some(Event::DecisionSummary(d)) => lane.allowed += d.allowed,
                Some(Event::Decision(d)) => {
                    let deny = d.decision == Verdict::Deny;
                    let tool = tool_of(d).map(disp).unwrap_or_default();
                    let rule = rule_text(d.layer.as_deref(), d.rule.as_deref());
                    let uri = disp(d.uri.as_str());
                    let (drawn, max, kind) = if deny {
                        lane.denied += 1;
                        *p.denied_paths.entry(uri.clone()).or_default() += 1;
                        if !tool.is_empty() {
                            *p.denied_tools.entry(tool.clone()).or_default() += 1;
                        }
                        let r = if rule.is_empty() {
                            format!("(no rule: {})", disp(&d.reason))
                        } else {
                            rule.clone()
                        };
                        *p.denied_rules.entry(r).or_default() += 1;
                        (&mut lane.deny_marks, MAX_DENY_MARKS, MarkKind::Deny)
                    } else {
                        lane.allowed += 1;
                        (&mut lane.allow_ticks, MAX_ALLOW_TICKS, MarkKind::Allow)
                    };
                    if *drawn < max {
                        *drawn += 1;
                        let mut label = format!(
                            "{} {} {}",
                            rec.ts,
                            if deny { "DENIED" } else { "allowed" },
                            disp(&d.method)
                        );
                        if !tool.is_empty() {
                            let _ = write!(label, "\ntool: {tool}");
                        }
                        let _ = write!(label, "\npath: {uri}\nreason: {}", disp(&d.reason));
                        if !rule.is_empty() {
                            let _ = write!(label, "\nrule: {rule}");
                        }
                        let _ = write!(label, "\nseq {}", rec.seq);
                        mark(kind, label);
                    }
                    if p.row_count < MAX_ROWS {
                        p.row_count += 1;
                        let v = if deny { "deny" } else { "allow" };
                        let _ = write!(
                            p.rows,
                            "<tr class=\"{v}\" data-v=\"{v}\" data-seq=\"{}\"><td class=\"t\">{}</td><td class=\"mono s\" title=\"{}\">{}</td>\
                             <td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td class=\"mono\">{}</td>\
                             <td class=\"u\">{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
                            rec.seq,
                            h(&rec.ts),
                            h(&rec.session),
                            h(rec.session.get(..8).unwrap_or(&rec.session)),
                            rec.seq,
                            if deny { "DENIED" } else { "allowed" },
                            match d.direction {
                                super::Direction::HostToServer => "host→server",
                                super::Direction::ServerToHost => "server→host",
                            },
                            h(&disp(&d.method)),
                            h(&tool),
                            h(&d.id.as_ref().map(|i| disp(i.as_json())).unwrap_or_default()),
                            h(&uri),
                            h(&disp(&d.reason)),
                            h(&rule),
                            h(&super::show::enum_word(&d.action))
                        );
                    } else {
                        p.rows_omitted += 1;
                    }
                }
                _ => {}
            }
        },
        err,
    )?;
    let mut page = String::with_capacity((64 << 10) + p.rows.len());
    render(&mut page, &files, &verify, &p, opts, warnings.len());
    Ok(page)
}

/// What the records of the log give the page: its lanes, the decisions table and the
/// denial counts the top lists are drawn from.
#[derive(Default)]
struct Page {
    lanes: Vec<Lane>,
    /// The decisions table's rows, as HTML, how many, and how many were left out.
    rows: String,
    row_count: usize,
    rows_omitted: u64,
    denied_paths: HashMap<String, u64>,
    denied_tools: HashMap<String, u64>,
    denied_rules: HashMap<String, u64>,
}

/// HTML-escapes text (already display-escaped) for element content and quoted attributes.
fn h(s: &str) -> String {
    // `&` first: the entities the others add are not escaped again.
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
        .replace('\'', "&#39;")
}

const STYLE: &str = r#"
body{font:14px/1.4 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;margin:0;color:#1d2330;background:#f6f7f9}
header{background:#1d2330;color:#fff;padding:14px 24px}
header h1{margin:0;font-size:20px}
header .sub{color:#b9c0cc;font-size:12px;margin-top:4px;word-break:break-all}
main{padding:16px 24px}
section{background:#fff;border:1px solid #dde1e8;border-radius:6px;padding:12px 16px;margin-bottom:16px}
h2{font-size:15px;margin:0 0 8px}
.ok{border-left:6px solid #1f9d55}.bad{border-left:6px solid #d0312d}.warn{border-left:6px solid #e0a800}
.verdict{font-size:18px;font-weight:600}
.ok .verdict{color:#1f9d55}.bad .verdict{color:#d0312d}.warn .verdict{color:#a87c00}
code,.mono{font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;font-size:12px;word-break:break-all}
.tops{display:grid;grid-template-columns:repeat(3,minmax(0,1fr));gap:16px}
.tops ol{margin:0;padding-left:20px}.tops li{word-break:break-all}
.n{color:#6b7383;font-variant-numeric:tabular-nums}
table{border-collapse:collapse;width:100%;font-size:12px}
th,td{text-align:left;padding:3px 6px;border-bottom:1px solid #eceef2;vertical-align:top}
td.t,td.s{white-space:nowrap}td.u{word-break:break-all;font-family:ui-monospace,Menlo,Consolas,monospace}
tr.deny td{background:#fdecea}
.legend span{margin-right:16px;white-space:nowrap}
.sw{display:inline-block;width:10px;height:10px;border-radius:2px;margin-right:4px;vertical-align:middle}
.controls{margin-bottom:8px}.controls input{width:40%;padding:4px}
svg text{font:11px system-ui,sans-serif;fill:#1d2330}
svg .deny{fill:#d0312d;cursor:pointer}svg .allow{stroke:#9aa3b2}
svg .gen{stroke:#2d6cdf;stroke-width:2}svg .roots{fill:#1f9d55}svg .reload{fill:#8a4baf}
"#;

/// Filters the table rows on the text box and the verdict box; a click on a denial mark
/// puts its seq in the box.
const SCRIPT: &str = r#"
(function(){
var q=document.getElementById('q'),v=document.getElementById('v'),c=document.getElementById('count');
var rows=Array.prototype.slice.call(document.querySelectorAll('#decisions tbody tr'));
function apply(){var t=q.value.toLowerCase(),w=v.value,n=0;
rows.forEach(function(r){var ok=(!w||r.getAttribute('data-v')===w)&&(!t||r.textContent.toLowerCase().indexOf(t)>=0||('#'+r.getAttribute('data-seq'))===t);
r.style.display=ok?'':'none';if(ok)n++;});c.textContent=n+' shown';}
q.addEventListener('input',apply);v.addEventListener('change',apply);
Array.prototype.forEach.call(document.querySelectorAll('svg [data-seq]'),function(m){
m.addEventListener('click',function(){q.value='#'+m.getAttribute('data-seq');v.value='';apply();
document.getElementById('table').scrollIntoView();});});
apply();})();
"#;

fn render(
    o: &mut String,
    files: &[PathBuf],
    verify: &super::VerifyReport,
    p: &Page,
    opts: &ReportOptions,
    warnings: usize,
) {
    let script_hash =
        base64::engine::general_purpose::STANDARD.encode(Sha256::digest(SCRIPT.as_bytes()));
    let files: Vec<String> = files.iter().map(|f| super::show::disp_path(f)).collect();
    let _ = write!(
        o,
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
         <meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; \
         style-src 'unsafe-inline'; script-src 'sha256-{script_hash}'; base-uri 'none'; \
         form-action 'none'\">\
         <meta name=\"viewport\" content=\"width=device-width,initial-scale=1\">\
         <title>rootfence audit report</title><style>{STYLE}</style></head><body>\
         <header><h1>rootfence audit report</h1><div class=\"sub\">{} · written by rootfence {}\
         {}</div></header><main>",
        h(&files.join(", ")),
        env!("CARGO_PKG_VERSION"),
        if opts.filter != Filter::default() {
            " · filtered: the timeline, lists and table show the matching records only"
        } else {
            ""
        }
    );
    verification(o, verify, warnings);
    timeline(o, &p.lanes);
    tops(o, p, opts.top.max(1));
    table(o, p);
    let _ = writeln!(o, "</main><script>{SCRIPT}</script></body></html>");
}

fn verification(o: &mut String, v: &super::VerifyReport, warnings: usize) {
    let (class, verdict, detail) = if let Some(b) = &v.broken {
        (
            "bad",
            "Chain BROKEN: the log was altered".to_owned(),
            format!("{b}. {} records before it are intact.", v.records),
        )
    } else if let Some(i) = &v.incomplete {
        (
            "warn",
            "Chain intact, log incomplete".to_owned(),
            i.to_string(),
        )
    } else {
        (
            "ok",
            "Chain verified: intact".to_owned(),
            "Every record links to the one before it; no record was edited, removed, inserted \
             or reordered before the head."
                .to_owned(),
        )
    };
    let range = v
        .seq_range
        .map(|(a, z)| format!("seq {a} to {z}"))
        .unwrap_or_else(|| "no records".into());
    let _ = write!(
        o,
        "<section id=\"verify\" class=\"{class}\"><div class=\"verdict\">{}</div>\
         <p>{}</p><p>{} records, {range}, {} sessions in {}. Head hash (keep it elsewhere \
         to detect a later truncation): <code id=\"head\">{}</code></p>",
        h(verdict.as_str()),
        h(&disp(&detail)),
        v.records,
        v.sessions,
        match v.files.len() {
            1 => "1 file".to_owned(),
            n => format!("{n} files"),
        },
        h(v.head.as_deref().unwrap_or("(none)"))
    );
    for n in &v.notes {
        let _ = write!(o, "<p class=\"n\">note: {}</p>", h(&disp(n)));
    }
    if warnings > 0 {
        let _ = write!(
            o,
            "<p class=\"n\">{warnings} unreadable lines were skipped (see rootfence audit verify).</p>"
        );
    }
    o.push_str("</section>");
}

fn timeline(o: &mut String, lanes: &[Lane]) {
    o.push_str("<section id=\"timeline\"><h2>Timeline</h2><div class=\"legend\">\
        <span><i class=\"sw\" style=\"background:#d0312d\"></i>denial (hover for reason, rule, tool, path; click to find it in the table)</span>\
        <span><i class=\"sw\" style=\"background:#9aa3b2\"></i>allowed</span>\
        <span><i class=\"sw\" style=\"background:#2d6cdf\"></i>server generation</span>\
        <span><i class=\"sw\" style=\"background:#1f9d55\"></i>roots update</span>\
        <span><i class=\"sw\" style=\"background:#8a4baf\"></i>policy reload</span></div>");
    let (Some(t0), Some(t1)) = (
        lanes.iter().filter_map(|l| l.first).min(),
        lanes.iter().filter_map(|l| l.last).max(),
    ) else {
        o.push_str("<p>No records.</p></section>");
        return;
    };
    const W: f64 = 1200.0;
    const LABEL: f64 = 230.0;
    const LANE: f64 = 44.0;
    const TOP: f64 = 24.0;
    let span = (t1 - t0).max(1) as f64;
    let x = |t: i64| LABEL + 10.0 + (t - t0) as f64 / span * (W - LABEL - 30.0);
    let height = TOP + LANE * lanes.len() as f64 + 8.0;
    let _ = write!(
        o,
        "<svg role=\"img\" aria-label=\"timeline of sessions\" viewBox=\"0 0 {W} {height}\" \
         width=\"100%\" xmlns=\"http://www.w3.org/2000/svg\">\
         <text x=\"{}\" y=\"14\">{}</text><text x=\"{}\" y=\"14\" text-anchor=\"end\">{}</text>",
        LABEL + 10.0,
        h(&super::time::rfc3339(t0)),
        W - 20.0,
        h(&super::time::rfc3339(t1))
    );
    for (i, l) in lanes.iter().enumerate() {
        let y = TOP + LANE * i as f64;
        let mid = y + LANE / 2.0;
        let short = l.session.get(..8).unwrap_or(&l.session);
        let _ = write!(
            o,
            "<g class=\"lane\" data-session=\"{}\"><title>session {}\n{}\n{}</title>\
             <text x=\"4\" y=\"{}\">{} · {} allow · {} deny</text>\
             <text x=\"4\" y=\"{}\" class=\"n\">{}</text>",
            h(&l.session),
            h(&l.session),
            h(&l.command),
            h(&l.host),
            mid - 3.0,
            h(short),
            l.allowed,
            l.denied,
            mid + 11.0,
            h(&truncate(&l.command, 34))
        );
        if let (Some(a), Some(b)) = (l.first, l.last) {
            let _ = write!(
                o,
                "<rect x=\"{:.1}\" y=\"{:.1}\" width=\"{:.1}\" height=\"6\" rx=\"3\" fill=\"#dde1e8\"/>",
                x(a),
                mid - 3.0,
                (x(b) - x(a)).max(2.0)
            );
        }
        // Allowed ticks first, so denials are drawn on top of them.
        for m in l.marks.iter().filter(|m| m.kind == MarkKind::Allow) {
            let _ = write!(
                o,
                "<line class=\"allow\" x1=\"{0:.1}\" x2=\"{0:.1}\" y1=\"{1:.1}\" y2=\"{2:.1}\"><title>{3}</title></line>",
                x(m.ts),
                mid - 8.0,
                mid + 8.0,
                h(&m.label)
            );
        }
        for m in l.marks.iter().filter(|m| m.kind != MarkKind::Allow) {
            let cx = x(m.ts);
            let t = h(&m.label);
            let _ = match m.kind {
                MarkKind::Generation => write!(
                    o,
                    "<line class=\"gen\" x1=\"{cx:.1}\" x2=\"{cx:.1}\" y1=\"{:.1}\" y2=\"{:.1}\"><title>{t}</title></line>",
                    y + 3.0,
                    y + LANE - 3.0
                ),
                MarkKind::Roots => write!(
                    o,
                    "<path class=\"roots\" d=\"M{cx:.1} {:.1}l5 6l-5 6l-5-6z\"><title>{t}</title></path>",
                    y + 2.0
                ),
                MarkKind::Reload => write!(
                    o,
                    "<rect class=\"reload\" x=\"{:.1}\" y=\"{:.1}\" width=\"8\" height=\"8\"><title>{t}</title></rect>",
                    cx - 4.0,
                    y + LANE - 11.0
                ),
                MarkKind::Deny => write!(
                    o,
                    "<circle class=\"deny\" data-seq=\"{}\" cx=\"{cx:.1}\" cy=\"{mid:.1}\" r=\"6\"><title>{t}</title></circle>",
                    m.seq
                ),
                MarkKind::Allow => Ok(()),
            };
        }
        o.push_str("</g>");
    }
    o.push_str("</svg>");
    for l in lanes {
        if l.denied as usize > l.deny_marks {
            let _ = write!(
                o,
                "<p class=\"n\">session {}: {} denials, the first {} drawn.</p>",
                h(l.session.get(..8).unwrap_or(&l.session)),
                l.denied,
                l.deny_marks
            );
        }
    }
    o.push_str("</section>");
}

/// The top `n` denied paths, tools and rules.
fn tops(o: &mut String, p: &Page, n: usize) {
    o.push_str("<section id=\"tops\"><div class=\"tops\">");
    let mut list = |title: &str, id: &str, items: &[(String, u64)], extra: &str| {
        let _ = write!(o, "<div id=\"{id}\"><h2>{}</h2>", h(title));
        if items.is_empty() {
            o.push_str("<p class=\"n\">none</p>");
        } else {
            o.push_str("<ol>");
            for (k, n) in items {
                let _ = write!(
                    o,
                    "<li><span class=\"mono\">{}</span> <span class=\"n\">×{n}</span></li>",
                    h(k)
                );
            }
            o.push_str("</ol>");
        }
        o.push_str(extra);
        o.push_str("</div>");
    };
    let paths = top(&p.denied_paths, n);
    let more = if p.denied_paths.len() > paths.len() {
        format!(
            "<p class=\"n\">{} more denied paths: see the table.</p>",
            p.denied_paths.len() - paths.len()
        )
    } else {
        String::new()
    };
    list("Top denied paths", "top-paths", &paths, &more);
    list(
        "Top denied tools",
        "top-tools",
        &top(&p.denied_tools, n),
        "",
    );
    list(
        "Top denying rules",
        "top-rules",
        &top(&p.denied_rules, n),
        "",
    );
    o.push_str("</div></section>");
}

fn table(o: &mut String, p: &Page) {
    let _ = write!(
        o,
        "<section id=\"table\"><h2>Decisions</h2><div class=\"controls\">\
         <input id=\"q\" type=\"search\" placeholder=\"filter: any text, or #seq\" aria-label=\"filter\"> \
         <select id=\"v\" aria-label=\"verdict\"><option value=\"\">all</option>\
         <option value=\"deny\">denied</option><option value=\"allow\">allowed</option></select> \
         <span id=\"count\" class=\"n\">{} rows</span></div>",
        p.row_count
    );
    if p.rows_omitted > 0 {
        let _ = write!(
            o,
            "<p class=\"n\">{} more decisions are not in this table (it holds the first {MAX_ROWS}): \
             narrow with --since/--until, --session or --denied.</p>",
            p.rows_omitted
        );
    }
    o.push_str(
        "<table id=\"decisions\"><thead><tr><th>time (UTC)</th><th>session</th><th>seq</th>\
         <th>verdict</th><th>direction</th><th>method</th><th>tool</th><th>id</th><th>path / URI</th>\
         <th>reason</th><th>rule</th><th>action</th></tr></thead><tbody>",
    );
    o.push_str(&p.rows);
    o.push_str("</tbody></table></section>");
}

/// `s` cut to `n` characters, with `…` when something was cut.
fn truncate(s: &str, n: usize) -> String {
    match s.char_indices().nth(n) {
        Some((at, _)) => format!("{}…", &s[..at]),
        None => s.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn html_escaping_leaves_nothing_active() {
        assert_eq!(
            h(&disp("<img src=x onerror=\"a\">'&\u{202e}")),
            "&lt;img src=x onerror=&quot;a&quot;&gt;&#39;&amp;\\u{202e}"
        );
    }
}
