//! Issue 13, item 13: strings a server controls (URIs, its name and version) reach the audit
//! log, and from there a reviewer's terminal through `rootfence audit ...`. No output format
//! may print them with raw C1 controls, bidi controls, line separators or U+FEFF: `summary`
//! and `show`, as text and as JSON, and `verify`'s messages. Through the real binary, with a
//! hostile server of our own (`tests/fixtures/audit/spoof_server.py`), run as a host runs it
//! (default policy and sandbox).

mod audit_support;
mod common;

use std::path::Path;
use std::process::Command;

use serde_json::{Value, json};

/// What must never appear raw in anything `rootfence audit` prints.
fn is_forging(c: char) -> bool {
    matches!(c,
        '\u{7f}'..='\u{9f}'
        | '\u{61c}'
        | '\u{200e}'
        | '\u{200f}'
        | '\u{2028}'..='\u{202e}'
        | '\u{2066}'..='\u{2069}'
        | '\u{feff}')
}

fn assert_clean(what: &str, bytes: &[u8]) {
    let text = String::from_utf8_lossy(bytes);
    if let Some(c) = text.chars().find(|&c| is_forging(c)) {
        panic!("{what} prints a raw U+{:04X}:\n{text}", u32::from(c));
    }
}

fn audit(args: &[&str], files: &[&Path]) -> std::process::Output {
    Command::new(common::rootfence())
        .arg("audit")
        .args(args)
        .args(files)
        .output()
        .unwrap()
}

const NASTY: &str = "\u{202e}gpj.exe\u{85}\u{9b}2J\u{2066}\u{2028}\u{feff}\u{61c}\u{200f}";

/// A log with the spoofing server's strings in it, written by a real session.
fn spoofed_log(dir: &Path) -> std::path::PathBuf {
    let log = dir.join("audit.jsonl");
    let server = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/audit/spoof_server.py"
    );
    let mut p = common::Proxy::run(
        &["--audit-log", log.to_str().unwrap()],
        &["python3", server],
    );
    p.initialize("2025-06-18");
    p.send_json(&json!({"jsonrpc": "2.0", "id": 1, "method": "resources/list"}));
    let page = p.recv();
    assert_eq!(page["result"]["resources"], json!([]), "{page}");
    p.close_stdin();
    assert_eq!(p.exit_code(), 0);
    log
}

#[test]
fn server_controlled_strings_are_escaped_in_every_output_format() {
    let t = common::tempdir();
    let log = spoofed_log(t.path());
    let stored = std::fs::read(&log).unwrap();
    assert_clean("the log itself", &stored);

    for args in [
        &["summary"][..],
        &["summary", "--json"],
        &["show"],
        &["show", "--json"],
        &["show", "--denied"],
        &["verify"],
    ] {
        let out = audit(args, &[&log]);
        assert!(out.status.success(), "{args:?}: {out:?}");
        assert_clean(&format!("audit {args:?} (stdout)"), &out.stdout);
        assert_clean(&format!("audit {args:?} (stderr)"), &out.stderr);
    }

    // The JSON still means exactly what was received: escapes decode to the same strings.
    let out = audit(&["summary", "--json"], &[&log]);
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    let top = &v["sessions"][0]["top_denied_uris"];
    let uris: Vec<&str> = top
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e[0].as_str().unwrap())
        .collect();
    assert!(
        uris.contains(&&*format!("file:///etc/report{NASTY}")),
        "{top}"
    );
    let shown = audit(&["show", "--json"], &[&log]);
    let server_name = String::from_utf8_lossy(&shown.stdout)
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .find(|r| r["event"] == "initialized")
        .map(|r| r["server"]["name"].as_str().unwrap().to_owned());
    assert_eq!(server_name.as_deref(), Some(&*format!("spoof{NASTY}")));
}

/// A log that holds raw characters rootfence never writes (edited by hand, or by an
/// attacker who can write it): the readers still print nothing raw, and neither does
/// `verify` for a file name that carries them.
#[test]
fn a_log_edited_to_hold_raw_controls_is_still_printed_escaped() {
    let t = common::tempdir();
    let log = spoofed_log(t.path());
    let text = std::fs::read_to_string(&log).unwrap();
    // Turn the writer's escapes back into raw characters (same JSON value).
    let raw = text
        .replace("\\u202e", "\u{202e}")
        .replace("\\u0085", "\u{85}")
        .replace("\\u2066", "\u{2066}")
        .replace("\\ufeff", "\u{feff}");
    assert_ne!(raw, text);
    let evil = t.path().join("audit\u{202e}lmth.jsonl");
    std::fs::write(&evil, &raw).unwrap();
    for args in [
        &["summary"][..],
        &["summary", "--json"],
        &["show"],
        &["show", "--json"],
        &["verify"],
    ] {
        let out = audit(args, &[&evil]);
        assert_clean(&format!("audit {args:?} (stdout)"), &out.stdout);
        assert_clean(&format!("audit {args:?} (stderr)"), &out.stderr);
    }
    // verify names the file, escaped, when it reports a break.
    let mut lines: Vec<Vec<u8>> = audit_support::lines(&evil);
    lines.remove(1);
    audit_support::write_lines(&evil, &lines);
    let out = audit(&["verify"], &[&evil]);
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("audit\\u{202e}lmth.jsonl"),
        "{out:?}"
    );
    assert_clean("verify of a broken file", &out.stdout);
}
