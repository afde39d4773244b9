//! Issue 27, "say what is missing" and "roots from the command line", through the real
//! binary: `rootfence run -- <server> DIR` with a host that declares no roots serves DIR
//! (the directories on the server's command line, derived as `rootfence wrap` derives
//! them, and said on stderr; `roots.from_command = "off"` opts out); a session left without
//! roots says so on stderr at start with the exact argument to add; one whose host roots
//! and `--root` do not overlap keeps its `--root` and says so.

mod common;
#[path = "common/hostile.rs"]
mod hostile;
#[path = "common/interop_peers.rs"]
mod interop_peers;

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use hostile::Host;
use serde_json::{Value, json};

const REV: &str = "2025-06-18";

fn project(t: &tempfile::TempDir, name: &str) -> PathBuf {
    let dir = std::fs::canonicalize(t.path()).unwrap().join(name);
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("a.txt"), format!("inside {name}\n")).unwrap();
    dir
}

fn filesystem(dirs: &[&Path]) -> Vec<String> {
    let mut v = vec![
        "node".to_owned(),
        interop_peers::node_entry("@modelcontextprotocol/server-filesystem")
            .display()
            .to_string(),
    ];
    v.extend(dirs.iter().map(|d| d.display().to_string()));
    v
}

fn start(opts: &[String], server: &[String], audit: &Path) -> Host {
    let mut all = vec!["--audit-log".to_owned(), audit.display().to_string()];
    all.extend(opts.iter().cloned());
    Host::start(&all, server, REV)
}

/// Waits until stderr holds `needle` (the start-up lines come while the session runs).
fn stderr_has(host: &Host, needle: &str) -> String {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let s = host.stderr();
        if s.contains(needle) || Instant::now() > deadline {
            return s;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn read(host: &mut Host, path: &Path) -> Value {
    host.call_tool(
        "read_text_file",
        json!({"path": path.display().to_string()}),
    )
    .0
}

fn ok_text(r: &Value) -> Option<&str> {
    (r["result"]["isError"] != true)
        .then(|| r["result"]["content"][0]["text"].as_str())
        .flatten()
}

#[test]
fn run_takes_the_servers_directory_arguments_as_roots_when_the_host_has_none() {
    interop_peers::require_peers();
    let t = tempfile::tempdir().unwrap();
    let dir = project(&t, "proj");
    let other = project(&t, "other");
    let mut host = start(&[], &filesystem(&[&dir]), &t.path().join("a.jsonl"));
    host.begin(json!({}));
    let r = read(&mut host, &dir.join("a.txt"));
    assert_eq!(ok_text(&r), Some("inside proj\n"), "{r}");
    // Only that directory: anything else is still outside the roots.
    let r = read(&mut host, &other.join("a.txt"));
    assert!(ok_text(&r).is_none(), "{r}");
    let err = stderr_has(&host, "are its roots");
    assert!(
        err.contains(&format!(
            "the directories on the server's command line are its roots: {}",
            dir.display()
        )) && err.contains("roots.from_command = \"off\""),
        "{err}"
    );
    assert_eq!(host.finish(), 0);
}

#[test]
fn roots_from_the_command_line_are_off_with_the_policy_and_then_the_message_says_what_to_add() {
    interop_peers::require_peers();
    let t = tempfile::tempdir().unwrap();
    let dir = project(&t, "proj");
    let policy = t.path().join("p.toml");
    std::fs::write(&policy, "version = 1\n[roots]\nfrom_command = \"off\"\n").unwrap();
    let opts = ["--policy".to_owned(), policy.display().to_string()];
    let mut host = start(&opts, &filesystem(&[&dir]), &t.path().join("a.jsonl"));
    host.begin(json!({}));
    let r = read(&mut host, &dir.join("a.txt"));
    assert!(ok_text(&r).is_none(), "{r}");
    let err = stderr_has(&host, "no roots:");
    assert!(
        err.contains(
            "rootfence: warning: no roots: the host does not declare roots and no --root was given"
        ) && err.contains("add `--root DIR` before `--`"),
        "{err}"
    );
    assert!(!err.contains("are its roots"), "{err}");
    assert_eq!(host.finish(), 0);
}

#[test]
fn no_roots_at_all_is_said_at_start() {
    // A server with no directory on its command line, a host without roots, no --root.
    let t = tempfile::tempdir().unwrap();
    let server = vec![common::example("exfil_server").display().to_string()];
    let mut host = start(&[], &server, &t.path().join("a.jsonl"));
    host.begin(json!({}));
    let err = stderr_has(&host, "no roots:");
    assert!(
        err.contains("rootfence: warning: no roots: the host does not declare roots")
            && err.contains("every file request is refused")
            && err.contains("add `--root DIR`"),
        "{err}"
    );
    assert_eq!(host.finish(), 0);
    // The same host that declares roots but answers with none.
    let mut host = start(&[], &server, &t.path().join("b.jsonl"));
    host.roots = Some(Vec::new());
    host.begin(json!({"roots": {"listChanged": true}}));
    let err = stderr_has(&host, "no roots:");
    assert!(
        err.contains("no roots: the host declared no roots and no --root was given"),
        "{err}"
    );
    assert_eq!(host.finish(), 0);
}

#[test]
fn host_roots_that_miss_every_root_flag_leave_the_entry_its_own_root_and_say_so() {
    // A user-wide entry for a vault (`--root VAULT`) while the host has a project open
    // (issue 27): the server keeps the vault, is not given the project, and stderr says so.
    let t = tempfile::tempdir().unwrap();
    let vault = project(&t, "vault");
    let proj = project(&t, "proj");
    let server = vec![common::example("exfil_server").display().to_string()];
    let opts = ["--root".to_owned(), vault.display().to_string()];
    let log = t.path().join("a.jsonl");
    let mut host = start(&opts, &server, &log);
    host.roots = Some(vec![format!("file://{}", proj.display())]);
    host.begin(json!({"roots": {"listChanged": true}}));
    let err = stderr_has(&host, "do not overlap");
    assert!(
        err.contains(&format!(
            "rootfence: note: the host's roots ({}) and --root ({}) do not overlap: the server \
             keeps its own --root ({})",
            proj.display(),
            vault.display(),
            vault.display()
        )) && err.contains(&format!("give it `--root {}` instead", proj.display())),
        "{err}"
    );
    assert!(!err.contains("every file request is refused"), "{err}");
    assert_eq!(host.finish(), 0);
    let text = std::fs::read_to_string(&log).unwrap();
    let update = text
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .find(|r| {
            r["event"] == "roots_update" && r["received"].as_array().is_some_and(|a| !a.is_empty())
        })
        .expect("a roots_update with the host's roots");
    assert_eq!(
        update["effective"],
        json!([format!("file://{}", vault.display())]),
        "{update}"
    );
    assert_eq!(
        update["dropped"][0]["reason"], "outside_operator_roots",
        "{update}"
    );
}
