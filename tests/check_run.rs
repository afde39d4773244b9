//! `rootfence check` decides exactly as `rootfence run` does (issue 12): the same tree, the
//! same policy layers, the same URIs, through both real commands. `run` is asked by a
//! scripted host (`resources/read` and the reference filesystem server's `read_text_file`),
//! with the default sandbox and the built-in default policy (then a policy file stacked on
//! it); `check` gets the same `--root` and `--policy`. Every verdict and reason must agree.

mod common;
#[path = "common/hostile.rs"]
mod hostile;

use std::path::Path;
use std::process::Command;

use hostile::{Host, Tree};
use serde_json::{Value, json};

/// The URIs both commands judge: inside, every way out, policy-denied files, links of
/// every kind, encodings, a missing file, other schemes.
fn uris(t: &Tree) -> Vec<String> {
    let mut v: Vec<String> = [
        "a.txt",
        "sub/b.txt",
        "sub/../a.txt",
        "with%20space.txt",
        "caf%C3%A9.txt",
        "not-there-yet.txt",
        "link_in",
        "link_out",
        "link_rel_out",
        "dir_out/secret.txt",
        "evil_link/secret.txt",
        "proclink",
        "loop1",
        "dangle",
        "hard_out",
        ".env",
        "key.pem",
        ".git/config",
        "%2e%2e/secret-place/secret.txt",
        "sub%2f..%2f..%2fsecret-place",
    ]
    .iter()
    .map(|r| t.uri(r))
    .collect();
    v.push(t.evil_uri());
    v.push(t.outside_uri());
    v.push("https://example.com/x".into());
    v.push(format!("jar:{}!/x", t.uri("a.txt")));
    v
}

/// (decision, reason) per URI.
type Verdicts = Vec<(String, String)>;

/// `check`'s verdicts.
fn check(t: &Tree, policies: &[&Path], uris: &[String]) -> Verdicts {
    let mut cmd = Command::new(common::rootfence());
    cmd.arg("check");
    for p in policies {
        cmd.arg("--policy").arg(p);
    }
    cmd.arg("--root").arg(&t.root).args(uris);
    let out = cmd.output().unwrap();
    assert!(
        matches!(out.status.code(), Some(0 | 1)),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|l| {
            let v: Value = serde_json::from_str(l).unwrap();
            let reason = v["reason"].as_str().unwrap_or("").to_owned();
            (v["decision"].as_str().unwrap().to_owned(), reason)
        })
        .collect()
}

/// `run`'s verdicts for the same URIs: a `resources/read` each (rootfence's denial error,
/// or anything else for an allowed read), and for `file:` URIs the same path through
/// `read_text_file` (rootfence's tool error, or the server's answer).
fn run(t: &Tree, policies: &[&Path], uris: &[String]) -> (Verdicts, Verdicts) {
    let audit = t.file("audit.jsonl");
    // Under the default sandbox the server may write only inside its root.
    let log = t.root.join("server.log");
    let mut opts = vec![
        "--root".to_string(),
        t.root_str(),
        "--audit-log".into(),
        audit.display().to_string(),
    ];
    for p in policies {
        opts.extend(["--policy".into(), p.display().to_string()]);
    }
    let mut host = Host::start(&opts, &t.server(&log, &["--no-icons"]), "2025-06-18");
    host.begin(json!({}));
    let mut reads = Vec::new();
    let mut calls = Vec::new();
    for uri in uris {
        let r = host.request("resources/read", json!({"uri": uri}));
        reads.push(if r["error"]["code"] == -32010 {
            (
                "deny".into(),
                r["error"]["data"]["reason"].as_str().unwrap().to_owned(),
            )
        } else {
            ("allow".into(), String::new())
        });
        let Some(path) = uri.strip_prefix("file://") else {
            continue;
        };
        // Paths in tool arguments are not URIs: only the decoded, plain ones compare.
        if path.contains('%') {
            continue;
        }
        let (r, _) = host.call_tool("read_text_file", json!({"path": path}));
        let denial = &r["result"]["_meta"]["io.rootfence/denial"];
        calls.push(if denial.is_object() {
            ("deny".into(), denial["reason"].as_str().unwrap().to_owned())
        } else {
            ("allow".into(), String::new())
        });
    }
    assert_eq!(host.finish(), 0, "{}", host.stderr());
    (reads, calls)
}

fn compare(t: &Tree, policies: &[&Path], reasons: &[&str]) {
    let uris = uris(t);
    let checked = check(t, policies, &uris);
    let (reads, calls) = run(t, policies, &uris);
    assert_eq!(checked.len(), uris.len());
    for ((uri, c), r) in uris.iter().zip(&checked).zip(&reads) {
        assert_eq!(c, r, "{uri}: check says {c:?}, run's resources/read {r:?}");
    }
    let plain: Vec<(&String, &(String, String))> = uris
        .iter()
        .zip(&checked)
        .filter(|(u, _)| u.strip_prefix("file://").is_some_and(|p| !p.contains('%')))
        .collect();
    assert_eq!(plain.len(), calls.len());
    for ((uri, c), r) in plain.iter().zip(&calls) {
        assert_eq!(*c, r, "{uri}: check says {c:?}, run's read_text_file {r:?}");
    }
    // Not vacuous: both allow and deny, for several reasons.
    assert!(checked.iter().any(|(d, _)| d == "allow"));
    for reason in reasons {
        assert!(
            checked.iter().any(|(_, r)| r == reason),
            "{reason} in {checked:?}"
        );
    }
}

#[test]
fn check_and_run_agree_under_the_built_in_default() {
    let t = Tree::new();
    compare(&t, &[], &["outside_roots", "symlink_escape", "policy_deny"]);
}

// No `hard_link` among the reasons: the tree's hard links were made before the session, and
// the default judges hard links by the session (`roots.hardlinks = "allow-preexisting"`, issue 12: uv
// and pnpm trees). Links made during a session are pinned in tests/enforce_fs.rs.

#[test]
fn check_and_run_agree_under_a_stacked_policy() {
    let t = Tree::new();
    let p = t.policy(
        "mine.toml",
        "version = 1\n[roots]\nsymlinks = \"never\"\n[resources]\ndeny = [\"**/sub/**\"]\n\
         other_schemes = [\"ui\"]\n",
    );
    compare(
        &t,
        &[&p],
        &["symlink_refused", "policy_deny", "scheme_denied"],
    );
}
