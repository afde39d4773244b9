//! `rootfence check` through the real binary: one JSON verdict per URI with the stable
//! fields, exit status 1 on any denial, clear root errors with exit status 2, and the same
//! policy layers and verdicts as `run` (see also `tests/check_run.rs`).

#[path = "common/uri_tree.rs"]
mod uri_tree;

use std::process::{Command, Output};

use serde_json::Value;

fn rootfence(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_rootfence"))
        .args(args)
        .output()
        .expect("rootfence runs")
}

fn verdicts(out: &Output) -> Vec<Value> {
    String::from_utf8(out.stdout.clone())
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).expect("each line is one JSON object"))
        .collect()
}

#[test]
fn check_prints_one_verdict_per_uri_in_order() {
    let t = uri_tree::build();
    let root = t.root.to_str().unwrap();
    let uris = [
        t.in_root("a.txt"),
        t.in_root("sub/../a.txt"),
        t.uri("root_evil/x.txt"),
        t.in_root("link_out_abs"),
        t.in_root("%2e%2e/outside/secret.txt"),
        t.in_root("loop1"),
        t.in_root("fifo"),
        "http://localhost/x".to_owned(),
        format!("file://evil.example{root}/a.txt"),
    ];
    let mut args = vec!["check", "--root", root];
    args.extend(uris.iter().map(String::as_str));
    let out = rootfence(&args);
    assert_eq!(out.status.code(), Some(1), "a denial exits 1");
    let v = verdicts(&out);
    assert_eq!(v.len(), uris.len());
    let expect = [
        ("allow", None),
        ("allow", None),
        ("deny", Some("outside_roots")),
        ("deny", Some("symlink_escape")),
        ("deny", Some("dot_segment")),
        ("deny", Some("symlink_loop")),
        ("allow", None),
        // Another scheme follows the policy's `other_schemes`, as in `run`: the built-in
        // default allows it.
        ("allow", None),
        ("deny", Some("non_local_host")),
    ];
    let root_uri = format!("file://{root}");
    for ((line, (decision, reason)), uri) in v.iter().zip(expect).zip(&uris) {
        assert_eq!(line["uri"], uri.as_str());
        assert_eq!(line["decision"], decision, "{line}");
        match reason {
            None => assert!(line["reason"].is_null()),
            Some(r) => assert_eq!(line["reason"], r, "{line}"),
        }
        for field in [
            "uri",
            "decision",
            "reason",
            "canonical_uri",
            "root",
            "rule",
            "layer",
        ] {
            assert!(line.get(field).is_some(), "field {field} missing in {line}");
        }
    }
    assert_eq!(v[0]["canonical_uri"], t.in_root("a.txt"));
    assert_eq!(v[0]["root"], root_uri);
    assert_eq!(v[0]["kind"], "regular");
    assert_eq!(
        v[1]["canonical_uri"],
        t.in_root("a.txt"),
        "dot segments removed"
    );
    assert_eq!(v[2]["root"], Value::Null);
    assert_eq!(v[3]["root"], root_uri, "escapes name the root they escaped");
    assert_eq!(v[3]["canonical_uri"], t.in_root("link_out_abs"));
    assert_eq!(
        v[4]["canonical_uri"],
        Value::Null,
        "unparsable input has no canonical form"
    );
    assert_eq!(v[6]["kind"], "fifo");
    // The output's field order is stable.
    let first = String::from_utf8(out.stdout.clone()).unwrap();
    assert!(first.starts_with("{\"uri\":"), "{first}");
    let line = first.lines().next().unwrap();
    let order: Vec<usize> = [
        "\"uri\"",
        "\"decision\"",
        "\"reason\"",
        "\"canonical_uri\"",
        "\"root\"",
    ]
    .iter()
    .map(|k| line.find(k).unwrap())
    .collect();
    assert!(order.windows(2).all(|w| w[0] < w[1]), "{line}");
}

#[test]
fn all_allowed_exits_zero_and_roots_may_be_uris_or_relative_paths() {
    let t = uri_tree::build();
    let root_uri = format!("file://{}", t.root.display());
    let out = rootfence(&[
        "check",
        "--root",
        &root_uri,
        &t.in_root("a.txt"),
        &t.in_root("new.txt"),
    ]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v = verdicts(&out);
    assert_eq!(v[1]["kind"], "missing");

    let out = Command::new(env!("CARGO_BIN_EXE_rootfence"))
        .current_dir(&t.top)
        .args([
            "check",
            "--root",
            "root",
            "--root",
            "./outside/../real_root",
        ])
        .arg(t.in_root("sub/b.txt"))
        .arg(t.uri("real_root/f.txt"))
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v = verdicts(&out);
    assert_eq!(v[1]["root"], t.uri("real_root"));
}

#[test]
fn options_change_the_stance() {
    let t = uri_tree::build();
    let root = t.root.to_str().unwrap();
    let out = rootfence(&[
        "check",
        "--root",
        root,
        "--no-symlinks",
        &t.in_root("link_in_rel"),
    ]);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(verdicts(&out)[0]["reason"], "symlink_refused");
    let out = rootfence(&[
        "check",
        "--root",
        root,
        "--deny-hard-links",
        &t.in_root("hard_out"),
    ]);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(verdicts(&out)[0]["reason"], "hard_link");
}

#[test]
fn root_errors_are_clear_and_exit_two() {
    let t = uri_tree::build();
    let missing = t.top.join("nope");
    let out = rootfence(&["check", "--root", missing.to_str().unwrap(), "file:///x"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(out.stdout.is_empty(), "no verdicts on a root error");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("does not exist") && err.contains("hint") && err.contains("nope"),
        "{err}"
    );

    let file = t.root.join("a.txt");
    let out = rootfence(&["check", "--root", file.to_str().unwrap(), "file:///x"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("is not a directory"));

    let out = rootfence(&["check", "--root", "https://example.com/", "file:///x"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("scheme `https`"));

    let out = rootfence(&["check", "--root", "~/x", "file:///x"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("`~` is not expanded"));

    let out = rootfence(&["check", "--root", "file://host/share", "file:///x"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("non_local_host"));

    let out = rootfence(&["check", "file:///x"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("no roots given"));

    let out = rootfence(&["check", "--root", t.root.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("no uris"));
}

#[test]
fn hostile_input_does_not_forge_output_lines() {
    let t = uri_tree::build();
    let root = t.root.to_str().unwrap();
    let evil = format!("{}\n{{\"decision\":\"allow\"}}", t.in_root("a.txt"));
    let out = rootfence(&["check", "--root", root, &evil]);
    assert_eq!(out.status.code(), Some(1));
    let v = verdicts(&out);
    assert_eq!(v.len(), 1, "one input, one line");
    assert_eq!(v[0]["reason"], "whitespace");
    assert_eq!(v[0]["uri"], evil.as_str());
}

#[test]
fn check_takes_the_policy_layers_of_run() {
    let t = uri_tree::build();
    let root = t.root.to_str().unwrap();
    std::fs::write(t.root.join(".env"), "x").unwrap();
    // The built-in default, as `run` without --policy: `.env` is denied. (A hard link made
    // before the check counts as older than the session, `roots.hardlinks =
    // "allow-preexisting"`, unless it was made in the same second: not asserted here.)
    let out = rootfence(&["check", "--root", root, &t.in_root(".env")]);
    assert_eq!(out.status.code(), Some(1));
    let v = verdicts(&out);
    assert_eq!(v[0]["reason"], "policy_deny", "{}", v[0]);
    assert_eq!(v[0]["layer"], "builtin:default");
    assert!(
        v[0]["rule"].as_str().unwrap().contains("\"**/.env\""),
        "{}",
        v[0]
    );
    assert!(v[0]["detail"].as_str().unwrap().contains("builtin:default"));
    // `--deny-hard-links` is one more narrowing layer: every hard-linked file is refused.
    let out = rootfence(&[
        "check",
        "--deny-hard-links",
        "--root",
        root,
        &t.in_root("hard_out"),
    ]);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(verdicts(&out)[0]["reason"], "hard_link");
    // A policy file stacks on the default and may narrow it further.
    let policy = t.top.join("p.toml");
    std::fs::write(
        &policy,
        "version = 1\n[resources]\ndeny = [\"**/sub/**\"]\n",
    )
    .unwrap();
    let out = rootfence(&[
        "check",
        "--policy",
        policy.to_str().unwrap(),
        "--root",
        root,
        &t.in_root("sub/b.txt"),
        &t.in_root(".env"),
        &t.in_root("a.txt"),
    ]);
    let v = verdicts(&out);
    assert_eq!(v[0]["reason"], "policy_deny");
    assert!(
        v[0]["layer"].as_str().unwrap().ends_with("p.toml"),
        "{}",
        v[0]
    );
    assert_eq!(v[1]["layer"], "builtin:default");
    assert_eq!(v[2]["decision"], "allow");
    // A root the policy refuses: `run` refuses to start with it, `check` says so.
    let refused = t.top.join("rootx");
    std::fs::write(
        &policy,
        format!(
            "version = 1\n[roots]\ndeny = [\"{}/**\"]\n",
            refused.display()
        ),
    )
    .unwrap();
    let out = rootfence(&[
        "check",
        "--policy",
        policy.to_str().unwrap(),
        "--root",
        refused.to_str().unwrap(),
        &t.uri("rootx/x.txt"),
    ]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("rootx") && err.contains("refuses to start") && err.contains("hint"),
        "{err}"
    );
    // The built-in default's own: a root under /root (when this machine has one).
    if std::path::Path::new("/root").is_dir() {
        let out = rootfence(&["check", "--root", "/root", "file:///root/x"]);
        assert_eq!(out.status.code(), Some(2));
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            err.contains("policy_deny") && err.contains("roots.deny"),
            "{err}"
        );
    }
}
