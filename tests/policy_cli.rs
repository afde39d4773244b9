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
    let a = write(
        dir.path(),
        "org.toml",
        "version = 1\n[resources]\nmax_bytes = \"1 MiB\"\n",
    );
    let b = write(
        dir.path(),
        "project.toml",
        "version = 1\n[resources]\nmax_bytes = \"2 MiB\"\n",
    );
    let (a, b) = (a.to_str().unwrap(), b.to_str().unwrap());
    let out = rootfence(&["policy", "check", a, b]);
    assert_eq!(out.status.code(), Some(1));
    let err = text(&out.stderr);
    assert!(err.contains("project.toml:3:13: error[widening]"), "{err}");
    assert!(err.contains("org.toml:3:1: resources.max_bytes"), "{err}");
    // Each on its own: both stack on the built-in default (16 MiB) and narrow it.
    let out = rootfence(&["policy", "check", "--each", a, b]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let stdout = text(&out.stdout);
    assert!(
        stdout.contains("ok: ") && stdout.contains("(stacked on builtin:default)"),
        "{stdout}"
    );
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
    assert_eq!(v["provenance"]["line"], 16);
    assert_eq!(v["provenance"]["rule"], "resources.deny = \"**/*.sqlite\"");
    assert_eq!(
        v["subject"]["path"],
        "/home/u/work/acme-api/data/customers.sqlite"
    );
    assert_eq!(
        v["layers"].as_array().unwrap().len(),
        3,
        "the built-in default, then the two files"
    );

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
    // A declared root must also open as a directory, as `run` requires.
    let t = Tree::new();
    let out = rootfence(&["policy", "explain", "--as-root", &t.uri("proj")]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stdout));
    let out = rootfence(&["policy", "explain", "--as-root", &t.uri("missing")]);
    assert_eq!(out.status.code(), Some(1));
    assert!(text(&out.stdout).contains("reason:   not_found"));
    let out = rootfence(&["policy", "explain", "--as-root", "https://example.com/"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(text(&out.stdout).contains("reason:   not_a_file_uri"));
}

/// A temporary tree for root checks:
///
/// ```text
/// proj/            the root
///   a.rs
///   sub/
///   .env
///   out_link -> <tmp>/outside        (absolute, escapes)
///   rel_link -> ../outside           (relative, escapes)
///   in_link  -> sub                  (stays inside)
///   hard.rs  (a second name of outside/shared.rs)
/// proj_evil/a.rs   a string-prefix sibling of the root
/// outside/secret, outside/shared.rs
/// etc_alias -> /etc                  (a root whose real path the default policy refuses)
/// ```
struct Tree {
    _dir: tempfile::TempDir,
    /// The canonical path of the temporary directory (`/tmp` may itself be a link).
    base: PathBuf,
}

impl Tree {
    fn new() -> Tree {
        let dir = tempfile::tempdir().unwrap();
        let base = std::fs::canonicalize(dir.path()).unwrap();
        for d in ["proj/sub", "proj_evil", "outside"] {
            std::fs::create_dir_all(base.join(d)).unwrap();
        }
        for f in [
            "proj/a.rs",
            "proj/.env",
            "proj_evil/a.rs",
            "outside/secret",
            "outside/shared.rs",
        ] {
            std::fs::write(base.join(f), "x").unwrap();
        }
        let link = |target: &str, name: &str| {
            std::os::unix::fs::symlink(target, base.join(name)).unwrap();
        };
        link(base.join("outside").to_str().unwrap(), "proj/out_link");
        link("../outside", "proj/rel_link");
        link("sub", "proj/in_link");
        link("/etc", "etc_alias");
        std::fs::hard_link(base.join("outside/shared.rs"), base.join("proj/hard.rs")).unwrap();
        Tree { _dir: dir, base }
    }

    fn path(&self, rel: &str) -> String {
        self.base.join(rel).to_str().unwrap().to_string()
    }

    fn uri(&self, rel: &str) -> String {
        format!("file://{}", self.path(rel))
    }

    /// `policy explain --json` with `--root proj` (plus `extra`); exit code and JSON.
    fn explain(&self, extra: &[&str], uri: &str) -> (Option<i32>, serde_json::Value) {
        let root = self.path("proj");
        let mut args = vec!["policy", "explain", "--json", "--root", &root];
        args.extend_from_slice(extra);
        args.push(uri);
        let out = rootfence(&args);
        // Only the warnings of a policy that opts out of the built-in default.
        let err = text(&out.stderr);
        assert!(
            err.lines().all(|l| l.starts_with("rootfence: WARNING:")),
            "{err}"
        );
        let v = serde_json::from_slice(&out.stdout).unwrap();
        (out.status.code(), v)
    }
}

#[test]
fn explain_with_roots_checks_containment() {
    let t = Tree::new();
    let (code, v) = t.explain(&[], &t.uri("proj/sub/new.rs"));
    assert_eq!(code, Some(0), "{v:#}");
    assert_eq!(v["roots_checked"], true);
    assert_eq!(v["steps"][0]["reason"], "inside_root");
    // Inside the root, but denied by the policy.
    let (code, v) = t.explain(&[], &t.uri("proj/.env"));
    assert_eq!(code, Some(1));
    assert_eq!(v["reason"], "policy_deny");
    // The URI's canonical form is what is checked and reported.
    let (code, v) = t.explain(
        &[],
        &format!("FILE://localhost{}/sub/./x%20y.rs", t.path("proj")),
    );
    assert_eq!(code, Some(0), "{v:#}");
    assert_eq!(v["subject"]["canonical"], t.uri("proj/sub/x%20y.rs"));
    assert_eq!(v["subject"]["path"], t.path("proj/sub/x y.rs"));
}

/// CVE-2025-53110: `/x_evil` is not inside `/x`, though it starts with it as a string.
#[test]
fn explain_prefix_sibling_is_outside_roots() {
    let t = Tree::new();
    let (code, v) = t.explain(&[], &t.uri("proj_evil/a.rs"));
    assert_eq!(code, Some(1));
    assert_eq!(v["reason"], "outside_roots");
    assert_eq!(v["provenance"]["rule"], serde_json::Value::Null);
    assert_eq!(v["blocked"], true);
}

/// CVE-2025-53109: a symbolic link under the root that leads out is refused by the
/// kernel's beneath-resolution, whether absolute or relative.
#[test]
fn explain_escaping_symlink_under_root_is_symlink_escape() {
    let t = Tree::new();
    for link in [
        "proj/out_link/secret",
        "proj/rel_link/secret",
        "proj/out_link",
    ] {
        let (code, v) = t.explain(&[], &t.uri(link));
        assert_eq!(code, Some(1), "{link}");
        assert_eq!(v["reason"], "symlink_escape", "{link}: {v:#}");
        assert_eq!(v["steps"][0]["check"], "roots");
    }
    // Text output names the reason and the root check as what decided.
    let out = rootfence(&[
        "policy",
        "explain",
        "--root",
        &t.path("proj"),
        &t.uri("proj/out_link/secret"),
    ]);
    assert_eq!(out.status.code(), Some(1));
    let s = text(&out.stdout);
    assert!(s.contains("reason:   symlink_escape"), "{s}");
    assert!(
        s.contains("rule:     none (decided by the root check)"),
        "{s}"
    );
    assert!(s.contains("detail:   "), "{s}");
}

/// `..` after a symbolic link: lexically it stays inside, for the kernel it does not.
#[test]
fn explain_dot_dot_after_a_symlink_is_dot_segment() {
    let t = Tree::new();
    let (code, v) = t.explain(&[], &format!("{}/../proj/a.rs", t.uri("proj/rel_link")));
    assert_eq!(code, Some(1));
    assert_eq!(v["reason"], "dot_segment", "{v:#}");
}

/// The policy's `[roots]` stances are the check options: `symlinks = "never"` refuses
/// even a link that stays inside; `hardlinks = "deny"` refuses a file with a second name
/// outside the root, which the default (`allow-preexisting`) serves when the link predates
/// the session.
#[test]
fn explain_applies_the_policys_link_stances() {
    let t = Tree::new();
    let (code, v) = t.explain(&[], &t.uri("proj/in_link/new.rs"));
    assert_eq!(code, Some(0), "{v:#}");
    let strict = policies("strict.toml");
    let (code, v) = t.explain(&["--policy", &strict], &t.uri("proj/in_link/new.rs"));
    assert_eq!(code, Some(1));
    assert_eq!(v["reason"], "symlink_refused", "{v:#}");

    // The link was made before this `explain` started (in an earlier second: the rule
    // takes the session's start to the second).
    std::thread::sleep(std::time::Duration::from_millis(1100));
    let (code, v) = t.explain(&[], &t.uri("proj/hard.rs"));
    assert_eq!(code, Some(0), "{v:#}");
    let (code, v) = t.explain(&["--policy", &strict], &t.uri("proj/hard.rs"));
    assert_eq!(code, Some(1));
    assert_eq!(v["reason"], "hard_link", "{v:#}");
    let dir = tempfile::tempdir().unwrap();
    let deny = write(
        dir.path(),
        "links.toml",
        "version = 1\n[roots]\nhardlinks = \"deny\"\n",
    );
    let (code, v) = t.explain(
        &["--policy", deny.to_str().unwrap()],
        &t.uri("proj/hard.rs"),
    );
    assert_eq!(code, Some(1), "{v:#}");
    assert_eq!(v["reason"], "hard_link", "{v:#}");
}

/// URIs that `run` refuses before any root or policy check are denied with the parser's
/// reason (not an "unreadable input" error): `run` would deny them, so `explain` does.
#[test]
fn explain_refuses_encoded_traversal_with_its_reason() {
    let t = Tree::new();
    let proj = t.uri("proj");
    for (uri, reason) in [
        (format!("{proj}/%2e%2e/outside/secret"), "dot_segment"),
        (format!("{proj}/.%2E/outside/secret"), "dot_segment"),
        (
            format!("{proj}/%252e%252e/outside/secret"),
            "double_encoding",
        ),
        (format!("{proj}/..%2foutside/secret"), "encoded_separator"),
        (format!("{proj}/..%5coutside/secret"), "encoded_separator"),
        (format!("{proj}/%C0%AE%C0%AE/outside"), "bad_encoding"),
        (
            format!("{proj}/%EF%BC%8F..%EF%BC%8Foutside"),
            "lookalike_separator",
        ),
        ("file:///../etc/passwd".into(), "dot_segment"),
        ("file://host/x".into(), "non_local_host"),
        ("no-scheme".into(), "not_a_file_uri"),
    ] {
        let (code, v) = t.explain(&[], &uri);
        assert_eq!(code, Some(1), "{uri}");
        assert_eq!(v["reason"], reason, "{uri}: {v:#}");
        assert_eq!(v["steps"].as_array().unwrap().len(), 1, "{uri}");
        assert_eq!(v["steps"][0]["check"], "uri", "{uri}");
        assert_eq!(v["subject"]["canonical"], serde_json::Value::Null, "{uri}");
        // Without --root, the parser refuses them all the same.
        let out = rootfence(&["policy", "explain", &uri]);
        assert_eq!(out.status.code(), Some(1), "{uri}");
        let s = text(&out.stdout);
        assert!(s.contains(&format!("reason:   {reason}")), "{uri}: {s}");
        assert!(!s.contains("roots not checked"), "{uri}: {s}");
    }
}

/// A `--root` that `[roots]` refuses (here through its real path: a link to `/etc`) is
/// dropped as `run` drops it; it does not deny URIs inside the other roots, and URIs
/// only inside it are outside the roots.
#[test]
fn explain_a_dropped_root_does_not_decide_for_other_roots() {
    let t = Tree::new();
    let alias = t.path("etc_alias");
    let (code, v) = t.explain(&["--root", &alias], &t.uri("proj/a.rs"));
    assert_eq!(code, Some(0), "{v:#}");
    let dropped = v["dropped_roots"].as_array().unwrap();
    assert_eq!(dropped.len(), 1, "{v:#}");
    assert_eq!(dropped[0]["reason"], "policy_deny");
    assert_eq!(dropped[0]["rule"], "roots.deny = \"/etc/**\"");
    let (code, v) = t.explain(&["--root", &alias], &format!("file://{alias}/hostname"));
    assert_eq!(code, Some(1));
    assert_eq!(v["reason"], "outside_roots", "{v:#}");
    // Declared by the host, the same root is refused through its real path.
    let out = rootfence(&["policy", "explain", "--as-root", &t.uri("etc_alias")]);
    assert_eq!(out.status.code(), Some(1));
    let s = text(&out.stdout);
    assert!(s.contains("roots.deny = \"/etc/**\""), "{s}");
    assert!(s.contains("the root resolves to file:///etc"), "{s}");
}

#[test]
fn explain_exit_2_when_the_policy_or_a_root_cannot_be_read() {
    let out = rootfence(&["policy", "explain", "--root", "/nonexistent/r", "file:///x"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(out.stdout.is_empty());
    assert!(
        text(&out.stderr).contains("does not exist"),
        "{}",
        text(&out.stderr)
    );
    let out = rootfence(&[
        "policy",
        "explain",
        "--policy",
        "/nonexistent/p.toml",
        "file:///x",
    ]);
    assert_eq!(out.status.code(), Some(2));
    assert!(out.stdout.is_empty());
    assert!(text(&out.stderr).contains("error[io]"));
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

/// Issue 12's trap: a file holding only the `env`/`read` line a server needs used to
/// replace the built-in default (`.env` allowed, the CVE path checks gone) and stacking it
/// on `builtin:default` was refused as widening. Now it stacks on the default, its grants
/// are accepted, and the protections stay.
#[test]
fn a_file_with_only_a_grant_keeps_the_built_in_protections() {
    let dir = tempfile::tempdir().unwrap();
    let mine = write(
        dir.path(),
        "mine.toml",
        "version = 1\n[sandbox]\nenv = [\"MEMORY_FILE_PATH\"]\nread = [\"~/.gitconfig\"]\n",
    );
    let mine = mine.to_str().unwrap();
    let out = rootfence(&["policy", "check", mine]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(
        text(&out.stdout).contains("(stacked on builtin:default)"),
        "{}",
        text(&out.stdout)
    );
    assert!(out.stderr.is_empty(), "no warning: {}", text(&out.stderr));
    // The old workaround (naming the default first) means the same.
    let out = rootfence(&["policy", "check", "builtin:default", mine]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let out = rootfence(&[
        "policy",
        "explain",
        "--policy",
        mine,
        "file:///home/u/p/.env",
    ]);
    assert_eq!(out.status.code(), Some(1), "`.env` stays denied");
    assert!(text(&out.stdout).contains("layer:    builtin:default:"));
    let out = rootfence(&["policy", "show", "--policy", mine]);
    let s = text(&out.stdout);
    assert!(
        s.contains("[0] builtin:default (base: stacked under the files given"),
        "{s}"
    );
    assert!(
        s.contains("env \"MEMORY_FILE_PATH\"  from ") && s.contains("mine.toml:3"),
        "{s}"
    );
    assert!(s.contains("read \"/home/u/.gitconfig\""), "{s}");
    assert!(s.contains("(server \"secure-filesystem-server\")"), "{s}");
    let out = rootfence(&["policy", "show", "--json", "--policy", mine]);
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["base"]["name"], "builtin:default");
    assert_eq!(v["dropped_protections"], serde_json::json!([]));
    assert_eq!(v["sandbox_grants"]["env"][0]["value"], "MEMORY_FILE_PATH");
}

/// Opting out is explicit (`base = "none"`) and loud: `policy check`, `policy show` and
/// `run` name every built-in protection the file drops.
#[test]
fn opting_out_of_the_built_in_default_is_loud() {
    let dir = tempfile::tempdir().unwrap();
    let mine = write(
        dir.path(),
        "mine.toml",
        "version = 1\nbase = \"none\"\n[sandbox]\nenv = [\"MEMORY_FILE_PATH\"]\n",
    );
    let mine = mine.to_str().unwrap();
    let out = rootfence(&["policy", "check", mine]);
    assert_eq!(out.status.code(), Some(0), "valid, but warned about");
    let err = text(&out.stderr);
    for needle in [
        "rootfence: WARNING: ",
        "mine.toml:2 opts out of the built-in default with `base = \"none\"`",
        "secret deny glob resources.deny \"**/.env\"",
        "`read_text_file` argument /path (CVE-2025-53109/53110)",
        "hint: remove `base = \"none\"`",
    ] {
        assert!(err.contains(needle), "missing {needle:?} in:\n{err}");
    }
    let out = rootfence(&["policy", "show", "--policy", mine]);
    let s = text(&out.stdout);
    assert!(s.contains("# base: none: "), "{s}");
    assert!(s.contains("# WARNING: this policy drops"), "{s}");
    let out = rootfence(&[
        "policy",
        "explain",
        "--policy",
        mine,
        "file:///home/u/p/.env",
    ]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "what the user asked for, loudly"
    );
    assert!(text(&out.stderr).contains("WARNING"));
    // run says it too, before the session starts.
    let out = Command::new(env!("CARGO_BIN_EXE_rootfence"))
        .args(["run", "--sandbox", "off", "--policy", mine, "--", "true"])
        .env("HOME", "/home/u")
        .env("XDG_STATE_HOME", dir.path())
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    let err = text(&out.stderr);
    assert!(err.contains("WARNING") && err.contains("**/.env"), "{err}");
    // A copy of the default that opts out keeps everything: no warning.
    let out = rootfence(&["policy", "check", &policies("default.toml")]);
    assert!(out.stderr.is_empty(), "{}", text(&out.stderr));
}

/// An org layer decides what lower layers may grant: a grant it does not allow is refused
/// with the org's rule named.
#[test]
fn the_org_layer_decides_what_may_be_granted() {
    let dir = tempfile::tempdir().unwrap();
    let project = write(
        dir.path(),
        "project.toml",
        "version = 1\n[sandbox]\nenv = [\"AWS_SECRET_ACCESS_KEY\"]\n",
    );
    let out = rootfence(&[
        "policy",
        "check",
        &policies("org-example.toml"),
        project.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(1));
    let err = text(&out.stderr);
    assert!(
        err.contains("`sandbox.env` entry \"AWS_SECRET_ACCESS_KEY\" is not grantable here")
            && err.contains("org-example.toml:")
            && err.contains("sandbox.grantable.env"),
        "{err}"
    );
}

/// The command line is the last layer: `run --env/--read/--write` (what `wrap` writes from a
/// host entry) may add what the policy makes grantable, and nothing else.
#[test]
fn run_grants_are_judged_by_the_policy() {
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path().join("home");
    std::fs::create_dir_all(home.join(".ssh")).unwrap();
    std::fs::write(home.join(".ssh/id_rsa"), "k").unwrap();
    std::os::unix::fs::symlink(home.join(".ssh"), home.join("innocent")).unwrap();
    let run = |extra: &[&str]| {
        let mut args = vec!["run", "--sandbox", "off"];
        args.extend_from_slice(extra);
        args.extend(["--", "true"]);
        Command::new(env!("CARGO_BIN_EXE_rootfence"))
            .args(&args)
            .env("HOME", &home)
            .env("XDG_STATE_HOME", dir.path())
            .stdin(std::process::Stdio::null())
            .output()
            .unwrap()
    };
    // The built-in default: a variable a server needs, its own state.
    let out = run(&[
        "--env",
        "MEMORY_FILE_PATH",
        "--write",
        "/tmp/rootfence-memory.json",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    // Never a secret, also not through a link that looks innocent, nor the whole home.
    let innocent = home.join("innocent").display().to_string();
    let home_s = home.display().to_string();
    for (flag, value, needle) in [
        (
            "--read",
            innocent.as_str(),
            "is denied by the policy (`**/.ssh/**`",
        ),
        ("--write", home_s.as_str(), "the whole home directory"),
        ("--read", "/", "the whole filesystem"),
    ] {
        let out = run(&[flag, value]);
        assert_eq!(out.status.code(), Some(2), "{flag} {value}");
        let err = text(&out.stderr);
        assert!(
            err.contains(flag) && err.contains(needle),
            "{flag} {value}: {err}"
        );
    }
    // An organisation's layer decides what may be granted.
    let out = run(&[
        "--policy",
        &policies("org-example.toml"),
        "--env",
        "AWS_SECRET_ACCESS_KEY",
    ]);
    assert_eq!(out.status.code(), Some(2));
    let err = text(&out.stderr);
    assert!(
        err.contains("--env AWS_SECRET_ACCESS_KEY")
            && err.contains("not grantable under the policy")
            && err.contains("org-example.toml"),
        "{err}"
    );
}
