//! `rootfence policy check|explain|show` through the real binary: exit codes, where output
//! goes (results on stdout, errors on stderr), and what `explain` reports.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn policies(name: &str) -> String {
    format!("{}/policies/{name}", env!("CARGO_MANIFEST_DIR"))
}

fn rootfence(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_rootfence"))
        .args(args)
        .env("HOME", "/home/u")
        .env_remove("RUST_LOG")
        .output()
        .expect("run rootfence")
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

fn write(dir: &Path, name: &str, body: &str) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, body).unwrap();
    p
}

#[test]
fn check_accepts_the_shipped_policies() {
    let out = rootfence(&[
        "policy",
        "check",
        &policies("org-example.toml"),
        &policies("project-example.toml"),
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(text(&out.stdout).starts_with("ok: "));
    let out = rootfence(&[
        "policy",
        "check",
        "--each",
        &policies("default.toml"),
        &policies("strict.toml"),
        &policies("org-example.toml"),
        &policies("project-example.toml"),
        "builtin:default",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout).lines().count(), 5);
}

#[test]
fn check_reports_every_error_on_stderr_and_fails() {
    let dir = tempfile::tempdir().unwrap();
    let bad = write(
        dir.path(),
        "bad.toml",
        "version = 1\nmode = \"loud\"\n[resources]\ndenny = []\ndeny = [\"*.pem\"]\n",
    );
    let out = rootfence(&["policy", "check", bad.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1));
    assert!(out.stdout.is_empty(), "errors must not go to stdout");
    let err = text(&out.stderr);
    for needle in [
        "bad.toml:2:8: error[bad-value]",
        "bad.toml:4:1: error[unknown-key]",
        "bad.toml:5:9: error[bad-glob]",
        "policy rejected: 3 errors",
    ] {
        assert!(err.contains(needle), "missing {needle:?} in:\n{err}");
    }
}

#[test]
fn check_stacks_layers_unless_each() {
    let dir = tempfile::tempdir().unwrap();
    let a = write(dir.path(), "org.toml", "version = 1\nmode = \"enforce\"\n");
    let b = write(
        dir.path(),
        "project.toml",
        "version = 1\nmode = \"audit\"\n",
    );
    let (a, b) = (a.to_str().unwrap(), b.to_str().unwrap());
    let out = rootfence(&["policy", "check", a, b]);
    assert_eq!(out.status.code(), Some(1));
    let err = text(&out.stderr);
    assert!(err.contains("project.toml:2:8: error[widening]"), "{err}");
    assert!(err.contains("org.toml:2:1: mode = \"enforce\""), "{err}");
    let out = rootfence(&["policy", "check", "--each", a, b]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
}

#[test]
fn check_missing_file_fails() {
    let out = rootfence(&["policy", "check", "/nonexistent/p.toml"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(text(&out.stderr).contains("error[io]"));
}

#[test]
fn explain_denial_names_layer_line_and_rule() {
    let out = rootfence(&["policy", "explain", "file:///home/u/proj/.env"]);
    assert_eq!(out.status.code(), Some(1), "denied exits 1");
    let s = text(&out.stdout);
    assert!(s.contains("decision: deny"), "{s}");
    assert!(s.contains("reason:   policy_deny"), "{s}");
    assert!(s.contains("rule:     resources.deny = \"**/.env\""), "{s}");
    assert!(s.contains("layer:    builtin:default:"), "{s}");
    assert!(s.contains("roots not checked"), "{s}");
}

#[test]
fn explain_json_for_a_layered_policy() {
    let out = rootfence(&[
        "policy",
        "explain",
        "--policy",
        &policies("org-example.toml"),
        "--policy",
        &policies("project-example.toml"),
        "--json",
        "file:///home/u/work/acme-api/data/customers.sqlite",
    ]);
    assert_eq!(out.status.code(), Some(1));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["decision"], "deny");
    assert_eq!(v["reason"], "policy_deny");
    assert_eq!(v["blocked"], true);
    assert_eq!(v["mode"], "enforce");
    assert!(
        v["provenance"]["file"]
            .as_str()
            .unwrap()
            .ends_with("project-example.toml")
    );
    assert_eq!(v["provenance"]["line"], 15);
    assert_eq!(v["provenance"]["rule"], "resources.deny = \"**/*.sqlite\"");
    assert_eq!(
        v["subject"]["path"],
        "/home/u/work/acme-api/data/customers.sqlite"
    );
    assert_eq!(v["layers"].as_array().unwrap().len(), 2);

    let out = rootfence(&[
        "policy",
        "explain",
        "--policy",
        &policies("org-example.toml"),
        "--json",
        "https://example.com/x",
    ]);
    assert_eq!(out.status.code(), Some(0));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        (v["decision"].as_str(), v["reason"].as_str()),
        (Some("allow"), Some("policy_allow"))
    );
}

#[test]
fn explain_tools_and_roots() {
    let strict = policies("strict.toml");
    let out = rootfence(&[
        "policy",
        "explain",
        "--policy",
        &strict,
        "--tool",
        "write_file",
    ]);
    assert_eq!(out.status.code(), Some(1));
    let s = text(&out.stdout);
    assert!(s.contains("reason:   read_only"), "{s}");
    assert!(
        s.contains("*write*") && s.contains("read_only = true"),
        "{s}"
    );
    let out = rootfence(&[
        "policy",
        "explain",
        "--policy",
        &strict,
        "--tool",
        "read_text_file",
    ]);
    assert_eq!(out.status.code(), Some(0));

    let out = rootfence(&["policy", "explain", "--as-root", "file:///home/u"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(text(&out.stdout).contains("roots.deny = \"~\""));
    let out = rootfence(&["policy", "explain", "--as-root", "file:///home/u/proj"]);
    assert_eq!(out.status.code(), Some(0));
}

#[test]
fn explain_with_roots_checks_containment() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("proj");
    std::fs::create_dir(&root).unwrap();
    std::fs::create_dir(dir.path().join("proj_evil")).unwrap();
    let root_canon = std::fs::canonicalize(&root).unwrap();
    let r = root_canon.to_str().unwrap();
    let inside = format!("file://{r}/src/a.rs");
    let out = rootfence(&["policy", "explain", "--root", r, &inside]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stdout));
    // A sibling that shares the root's name as a string prefix is outside.
    let sibling = format!("file://{r}_evil/a.rs");
    let out = rootfence(&["policy", "explain", "--root", r, "--json", &sibling]);
    assert_eq!(out.status.code(), Some(1));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["reason"], "outside_roots");
    assert_eq!(v["roots_checked"], true);
    // Inside the root, but denied by the policy.
    let secret = format!("file://{r}/.env");
    let out = rootfence(&["policy", "explain", "--root", r, "--json", &secret]);
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["reason"], "policy_deny");
}

#[test]
fn explain_refuses_unreadable_uris() {
    for bad in [
        "file:///a/../etc/passwd",
        "file:///a%2fb",
        "file://host/x",
        "no-scheme",
    ] {
        let out = rootfence(&["policy", "explain", bad]);
        assert_eq!(out.status.code(), Some(2), "{bad}");
        assert!(out.stdout.is_empty(), "{bad}");
        assert!(text(&out.stderr).contains("cannot explain"), "{bad}");
    }
}

#[test]
fn show_prints_the_effective_policy() {
    let org = policies("org-example.toml");
    let proj = policies("project-example.toml");
    let out = rootfence(&["policy", "show", "--policy", &org, "--policy", &proj]);
    assert_eq!(out.status.code(), Some(0));
    let s = text(&out.stdout);
    assert!(s.contains("[0] ") && s.contains("sha256:"), "{s}");
    assert!(
        s.contains("[roots]") && s.contains("static = [\"/home/u/work/acme-api\"]"),
        "{s}"
    );
    assert!(s.contains("symlinks = \"never\""), "{s}");
    assert!(s.contains("project-example.toml:9"), "{s}");
    assert!(
        s.contains("\"/home/u/work/**\"") && s.contains("all lists must match"),
        "{s}"
    );

    let out = rootfence(&["policy", "show", "--json"]);
    assert_eq!(out.status.code(), Some(0));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["layers"][0]["name"], "builtin:default");
    assert_eq!(v["settings"]["mode"]["value"], "\"enforce\"");
    assert!(!v["resources_deny"].as_array().unwrap().is_empty());
}
