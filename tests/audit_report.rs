//! `rootfence audit report --html` through the real binary (issue 29): the page says
//! whether the chain verified and gives its head, lists every denied path, draws one lane
//! per session with a mark per denial, generation and roots update, fetches nothing, keeps
//! hostile text inert, and renders in headless Chromium (Debian's package, installed by
//! scripts/install-test-peers.sh): the screenshot is kept under target/ as an artifact
//! and checked not to be blank, and the page's script ran.

mod audit_support;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use audit_support::*;

const CHROMIUM: &str = "/usr/bin/chromium";

/// Where the artifacts go: target/tmp/audit-report/.
fn artifacts() -> PathBuf {
    let d = Path::new(env!("CARGO_TARGET_TMPDIR")).join("audit-report");
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn report(log: &Path, out: &Path, extra: &[&str]) -> String {
    let o = rootfence()
        .args(["audit", "report", "--html"])
        .arg(out)
        .args(extra)
        .arg(log)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    std::fs::read_to_string(out).unwrap()
}

/// The head hash `verify` prints.
fn head(log: &Path) -> String {
    let (code, text) = verify(&[log]);
    assert_eq!(code, 0, "{text}");
    text.lines()
        .find_map(|l| l.strip_prefix("head: "))
        .and_then(|l| l.split_whitespace().next())
        .unwrap()
        .to_owned()
}

#[test]
fn the_report_shows_verification_every_denied_path_and_one_lane_per_session() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("audit.jsonl");
    let (a, b) = incident_log(&log, Duration::from_millis(20));
    let html = report(&log, &dir.path().join("r.html"), &[]);
    assert!(html.contains("Chain verified: intact"), "{html}");
    assert!(html.contains(&head(&log)), "the head hash");
    for p in INCIDENT_DENIED {
        assert!(html.contains(p), "denied path {p} listed");
    }
    // One lane per session, a mark per denial (5), per generation (2), per roots update.
    assert_eq!(html.matches("<g class=\"lane\"").count(), 2);
    assert!(html.contains(&format!("data-session=\"{a}\"")));
    assert!(html.contains(&format!("data-session=\"{b}\"")));
    assert_eq!(html.matches("<circle class=\"deny\"").count(), 5);
    assert_eq!(html.matches("<line class=\"gen\"").count(), 2);
    assert_eq!(html.matches("<path class=\"roots\"").count(), 1);
    // A denial's mark says reason, rule, tool and path.
    assert!(html.contains(
        "DENIED tools/call\ntool: edit_file\npath: file:///w/app/secrets/prod.key\nreason: \
         denied_by_rule\nrule: /etc/rootfence/policy.toml: deny[1] &quot;**/secrets/**&quot;"
    ));
    // Top lists: the most denied path, tool and rule first.
    let tops = &html[html.find("id=\"top-paths\"").unwrap()..];
    assert!(tops.contains(
        "<li><span class=\"mono\">file:///w/app/.env</span> <span class=\"n\">×2</span>"
    ));
    let tools = &html[html.find("id=\"top-tools\"").unwrap()..];
    assert!(
        tools
            .contains("<li><span class=\"mono\">read_text_file</span> <span class=\"n\">×2</span>")
    );
    // The table has a row per decision (10), denied ones marked.
    assert_eq!(html.matches("<tr class=\"deny\"").count(), 5);
    assert_eq!(html.matches("<tr class=\"allow\"").count(), 5);
    // Nothing is fetched: no external source, link or import; a CSP that allows none.
    for needle in ["src=", "href=", "url(", "@import", "http://", "https://"] {
        let n = html.matches(needle).count();
        // The SVG namespace is the only URL, and it is not fetched.
        let allowed = usize::from(needle == "http://");
        assert_eq!(n, allowed, "{needle} in the page");
    }
    assert!(html.contains("Content-Security-Policy\" content=\"default-src 'none';"));
    // Filters apply: only session B.
    let only_b = report(&log, &dir.path().join("b.html"), &["--session", &b[..8]]);
    assert_eq!(only_b.matches("<g class=\"lane\"").count(), 1);
    assert_eq!(only_b.matches("<circle class=\"deny\"").count(), 3);
}

#[test]
fn a_tampered_log_is_reported_broken_and_hostile_text_stays_inert() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("audit.jsonl");
    incident_log(&log, Duration::ZERO);
    // A record whose URI and tool try to inject markup and script.
    {
        let l = rootfence::audit::AuditLog::open(config(&log), start()).unwrap();
        l.handle()
            .record(call(
                rootfence::audit::Direction::HostToServer,
                "tools/call",
                "1",
                Some("<img src=x onerror=alert(1)>"),
                "params.arguments.path",
                "file:///w/</title><script>alert(2)</script>\u{202e}gpj.exe",
                rootfence::audit::Verdict::Deny,
                "outside_roots",
                None,
            ))
            .unwrap();
        l.close(rootfence::audit::SessionEnd::default()).unwrap();
    }
    let html = report(&log, &dir.path().join("h.html"), &[]);
    assert!(!html.contains("<img"), "markup escaped");
    assert_eq!(
        html.matches("<script>").count(),
        1,
        "only the page's own script"
    );
    assert!(!html.contains('\u{202e}'), "bidi override display-escaped");
    assert!(html.contains("&lt;/title&gt;&lt;script&gt;alert(2)&lt;/script&gt;\\u{202e}gpj.exe"));

    // Change one byte of a record in the middle: the page leads with the break.
    let mut ls = lines(&log);
    let i = ls.len() / 2;
    let s = String::from_utf8(ls[i].clone())
        .unwrap()
        .replacen("\"ts\":\"2", "\"ts\":\"1", 1);
    ls[i] = s.into_bytes();
    write_lines(&log, &ls);
    let html = report(&log, &dir.path().join("t.html"), &[]);
    assert!(html.contains("Chain BROKEN"), "{html}");
    assert!(
        html.contains(&format!("line {}", i + 2)),
        "names the first bad record"
    );
}

/// Runs Chromium headless on `page` with `args`, killing it after a minute.
fn chromium(page: &Path, args: &[&str]) -> std::process::Output {
    let profile = tempfile::tempdir().unwrap();
    let mut child = Command::new(CHROMIUM)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--hide-scrollbars",
            "--no-first-run",
            "--disable-extensions",
            // Nothing may be fetched anyway; no proxy lookups, no component updates.
            "--no-proxy-server",
            "--disable-background-networking",
        ])
        .arg(format!("--user-data-dir={}", profile.path().display()))
        .args(args)
        .arg(format!("file://{}", page.display()))
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run chromium");
    let deadline = Instant::now() + Duration::from_secs(60);
    while child.try_wait().unwrap().is_none() {
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("chromium did not finish within 60 s");
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    child.wait_with_output().unwrap()
}

#[test]
fn the_report_renders_in_headless_chromium() {
    if !Path::new(CHROMIUM).exists() {
        eprintln!(
            "SKIPPED the_report_renders_in_headless_chromium: {CHROMIUM} is not installed \
             (scripts/install-test-peers.sh installs it)"
        );
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("audit.jsonl");
    incident_log(&log, Duration::from_millis(40));
    let out = artifacts();
    let page = out.join("report.html");
    let html = report(&log, &page, &[]);
    assert!(html.contains("Chain verified"));

    // The script ran (it filled in the row count) and the DOM holds every denied path.
    let dom = chromium(&page, &["--dump-dom"]);
    let dom = String::from_utf8_lossy(&dom.stdout);
    assert!(
        dom.contains("<span id=\"count\" class=\"n\">10 shown</span>"),
        "{dom}"
    );
    for p in INCIDENT_DENIED {
        assert!(dom.contains(p), "{p}");
    }

    // The screenshot: not blank, with the timeline's red denial marks and the green
    // verification bar in it.
    let shot = out.join("report.png");
    let _ = std::fs::remove_file(&shot);
    let o = chromium(
        &page,
        &[
            &format!("--screenshot={}", shot.display()),
            "--window-size=1400,1000",
        ],
    );
    assert!(
        shot.exists(),
        "no screenshot: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    let decoder = png::Decoder::new(std::io::BufReader::new(std::fs::File::open(&shot).unwrap()));
    let mut reader = decoder.read_info().unwrap();
    let mut buf = vec![0; reader.output_buffer_size().unwrap()];
    let info = reader.next_frame(&mut buf).unwrap();
    assert_eq!((info.width, info.height), (1400, 1000));
    let channels = info.color_type.samples();
    assert!(channels >= 3, "{:?}", info.color_type);
    let px = |i: usize| {
        let p = &buf[i * channels..i * channels + 3];
        (p[0], p[1], p[2])
    };
    let n = (info.width * info.height) as usize;
    let mut colors = std::collections::HashSet::new();
    let (mut non_bg, mut red, mut green) = (0usize, 0usize, 0usize);
    for i in 0..n {
        let (r, g, b) = px(i);
        colors.insert((r, g, b));
        if (r, g, b) != (0xf6, 0xf7, 0xf9) && (r, g, b) != (255, 255, 255) {
            non_bg += 1;
        }
        // #d0312d, the denial marks (anti-aliased edges aside).
        if r > 180 && g < 80 && b < 80 {
            red += 1;
        }
        // #1f9d55, the verified bar.
        if r < 60 && g > 130 && b < 110 && g > r + 60 {
            green += 1;
        }
    }
    eprintln!(
        "screenshot {}: {} colors, {non_bg} non-background pixels, {red} red, {green} green",
        shot.display(),
        colors.len()
    );
    assert!(colors.len() > 50, "a blank page has a handful of colors");
    assert!(non_bg > n / 50, "{non_bg} of {n} pixels drawn");
    assert!(red > 5 * 60, "the denial marks: {red} red pixels");
    assert!(green > 100, "the verified bar: {green} green pixels");
}

/// A flood of denials keeps the page bounded: marks are capped per lane, the table at its
/// row limit, and the page says what it left out.
#[test]
fn a_flood_of_denials_keeps_the_page_bounded() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("audit.jsonl");
    write_session(config(&log), 30_000); // every 5th denied: 6,000 denials
    let html = report(&log, &dir.path().join("f.html"), &[]);
    assert_eq!(html.matches("<circle class=\"deny\"").count(), 5_000);
    assert!(html.contains("6000 denials, the first 5000 drawn."));
    assert!(html.contains("10000 more decisions are not in this table"));
    assert!(html.len() < 40 << 20, "{} bytes", html.len());
}
