//! Enforcement with real third-party peers (issue 6): the official Python `mcp` client
//! (`tests/peers/py/session.py`) and the official Rust `rmcp` client drive sessions through
//! `rootfence run --root <root> -- <server>` against our hostile server
//! (`examples/hostile_server.rs`), against `@modelcontextprotocol/server-filesystem` given a
//! directory that holds both the root and the secrets (so the server itself would serve
//! outside files and only rootfence stops them), and against `server-everything`.
//!
//! What each shows: nothing outside the root ever reaches the host (the whole transcript is
//! searched for the secret and for outside names); everything inside works exactly as it does
//! directly (the interop comparison: the same scripted session run directly and through
//! rootfence gives the same transcript); rootfence's denials are JSON-RPC errors -32010 that
//! a real SDK surfaces as such; the audit log verifies.
//!
//! The peers are installed by `scripts/install-test-peers.sh`.

mod common;
#[path = "common/hostile.rs"]
mod hostile;
#[path = "common/interop_peers.rs"]
mod interop_peers;

use hostile::{MARKER, Tree, assert_audit_verifies, audit_records, norm, secret_needles};
use interop_peers::{
    Client, Via, everything_2025, everything_latest, first_difference, node_entry, python_server,
    require_peers, session, steps,
};
use serde_json::{Value, json};

// -------------------------------------------------------------------------------------------
// Helpers
// -------------------------------------------------------------------------------------------

/// `rootfence run --sandbox off --root <root> --audit-log <base>/audit.jsonl [extra...]`:
/// without the OS sandbox, so the servers can reach the outside files and only rootfence's
/// wire checks stop them.
fn through(tree: &Tree, extra: &[&str]) -> Via {
    let mut v = vec![
        "--sandbox".to_string(),
        "off".to_string(),
        "--root".to_string(),
        tree.root_str(),
        "--audit-log".to_string(),
        tree.file("audit.jsonl").display().to_string(),
    ];
    v.extend(extra.iter().map(|s| s.to_string()));
    Via::RootfenceWith(v)
}

fn strings(v: &[&str]) -> Vec<String> {
    v.iter().map(|s| s.to_string()).collect()
}

/// Runs `args` directly and through `via` at once and asserts equal transcripts (the
/// interop comparison, for servers the shared harness does not build).
fn same_both_ways(client: Client, args: &[String], server: &[String], via: &Via) -> Value {
    let (direct, mut wrapped) = std::thread::scope(|s| {
        let d = s.spawn(|| session(client, args, server, &Via::Direct));
        let w = s.spawn(|| session(client, args, server, via));
        (
            d.join().unwrap_or_else(|p| std::panic::resume_unwind(p)),
            w.join().unwrap_or_else(|p| std::panic::resume_unwind(p)),
        )
    });
    // A host that declares roots is asked for them by rootfence itself (the contract), even
    // when the server never asks: that request is the only difference allowed.
    if args.iter().any(|a| a == "--roots")
        && !direct["server_requests"]
            .as_array()
            .is_some_and(|r| r.contains(&json!("roots/list")))
        && let Some(list) = wrapped["server_requests"].as_array_mut()
    {
        list.retain(|r| r != "roots/list");
    }
    if let Some((path, d, w)) = first_difference(&direct, &wrapped, "$".into()) {
        panic!(
            "{client:?}: the transcript through rootfence differs from the direct one at {path}\n  direct:  {d}\n  through: {w}"
        );
    }
    direct
}

/// Asserts nothing outside the root is in a transcript: no secret bytes anywhere, no outside
/// name except where the script itself sent it (the `uri`/`arguments` of its own
/// `read-error`/`call-error` steps and the denial message that echoes them).
fn assert_clean(t: &Value, tree: &Tree) {
    let text = t.to_string();
    for n in secret_needles() {
        assert!(
            !text.contains(&n),
            "LEAK: the transcript holds secret bytes ({n}):\n{text}"
        );
    }
    let mut scrubbed = t.clone();
    for s in scrubbed["steps"].as_array_mut().unwrap() {
        if s["step"] == "read-error" || s["step"] == "call-error" {
            s["uri"] = Value::Null;
            s["arguments"] = Value::Null;
            s["error"]["message"] = Value::Null;
            // A refused tool call's text and denial echo the path the script sent.
            s["error"]["text"] = Value::Null;
            s["error"]["denial"] = Value::Null;
        }
    }
    let text = scrubbed.to_string();
    for tok in tree.outside_tokens() {
        assert!(
            !text.contains(&tok),
            "LEAK: the transcript holds an outside name ({tok:?}):\n{text}"
        );
    }
}

/// Every `read-error` / `call-error` step is rootfence's denial: a JSON-RPC error for a
/// read, a tool execution error (`isError: true`, SEP-1303) for a tool call, which the real
/// SDK client hands to its caller as a result.
fn assert_errors_are_denials(t: &Value) {
    for s in t["steps"].as_array().unwrap() {
        if s["step"] == "call-error" {
            assert_eq!(s["error"]["isError"], true, "a tool execution error: {s}");
            assert!(
                s["error"]["text"]
                    .as_str()
                    .is_some_and(|m| m.starts_with("rootfence refused this call")),
                "{s}"
            );
            assert!(s["error"]["denial"]["reason"].is_string(), "{s}");
            continue;
        }
        if s["step"] == "read-error" {
            assert_eq!(s["error"]["code"], -32010, "rootfence denied it: {s}");
            assert!(
                s["error"]["message"]
                    .as_str()
                    .is_some_and(|m| m.starts_with("rootfence: denied")),
                "{s}"
            );
        }
    }
}

fn listed_names(t: &Value) -> Vec<String> {
    steps(t, "list-resources")
        .iter()
        .flat_map(|p| {
            p["result"]["resources"]
                .as_array()
                .cloned()
                .unwrap_or_default()
        })
        .map(|r| r["name"].as_str().unwrap_or_default().to_owned())
        .collect()
}

fn call<'a>(t: &'a Value, name: &str) -> &'a Value {
    steps(t, "call")
        .into_iter()
        .find(|c| c["name"] == name)
        .unwrap_or_else(|| panic!("no call of {name}"))
}

fn json_arg(name: &str, v: Value) -> String {
    format!("{name}={v}")
}

// -------------------------------------------------------------------------------------------
// The hostile server, with the Python SDK client, in every revision
// -------------------------------------------------------------------------------------------

fn hostile_argv(tree: &Tree) -> Vec<String> {
    tree.server(&tree.file("server.log"), &[])
}

/// The Python session against the hostile server: everything the server offers, with reads
/// and calls the script expects to be denied.
fn hostile_python_args(tree: &Tree, rev: &str, host_roots: bool, steps: &str) -> Vec<String> {
    let ask_roots = host_roots || !hostile::at_least(rev, "2026-07-28");
    let mut a = strings(&[
        "--protocol",
        rev,
        "--record-requests",
        "--steps",
        steps,
        "--sampling",
        "canned by the python host",
    ]);
    if host_roots {
        for r in [
            tree.root_uri(),
            format!("file://{}", tree.evil.display()),
            tree.base_uri(),
        ] {
            a.extend(["--roots".to_string(), r]);
        }
    }
    for rel in ["a.txt", "sub/b.txt", "link_in", "extra.txt"] {
        a.extend(["--read".to_string(), tree.uri(rel)]);
    }
    for uri in [
        tree.evil_uri(),
        tree.outside_uri(),
        tree.uri("%2e%2e/secret-place/secret.txt"),
        tree.uri("..%2fsecret-place%2fsecret.txt"),
        tree.uri("link_out"),
        tree.uri("dir_out/secret.txt"),
        tree.uri(".env"),
        tree.uri("swap.txt"),
        tree.uri("blob-swap.txt"),
    ] {
        a.extend(["--read-error".to_string(), uri]);
    }
    let root = tree.root_str();
    if ask_roots {
        a.extend(["--call".to_string(), "ask_roots".to_string()]);
    }
    a.extend([
        "--call".to_string(),
        "embed".to_string(),
        "--call".to_string(),
        json_arg("sample", json!({"valid": true})),
        "--call".to_string(),
        json_arg("read_text_file", json!({"path": format!("{root}/a.txt")})),
        "--call-error".to_string(),
        json_arg(
            "read_text_file",
            json!({"path": tree.outside.display().to_string()}),
        ),
        "--call-error".to_string(),
        json_arg(
            "read_text_file",
            json!({"path": format!("{}/secret.txt", tree.evil.display())}),
        ),
        "--prompt".to_string(),
        "leaky".to_string(),
        "--prompt".to_string(),
        "clean".to_string(),
    ]);
    a
}

const ALL_STEPS: &str =
    "list-resources,list-templates,read,list-tools,call,list-prompts,get-prompt";

fn hostile_python(rev: &str) {
    hostile_python_steps(rev, ALL_STEPS, &[]);
}

fn hostile_python_steps(rev: &str, steps_list: &str, server_extra: &[&str]) {
    require_peers();
    let tree = Tree::new();
    // In 2026-07-28 the host's roots would be asked for by MRTR on the first read; the SDK
    // lists resources before that, so this session declares none (the operator root
    // decides). `hostile_python_2026_07_28_host_roots_by_mrtr` covers declared roots.
    let host_roots = !hostile::at_least(rev, "2026-07-28");
    let args = hostile_python_args(&tree, rev, host_roots, steps_list);
    let t = session(
        Client::Python,
        &args,
        &tree.server(&tree.file("server.log"), server_extra),
        &through(&tree, &[]),
    );
    assert_clean(&t, &tree);
    assert_errors_are_denials(&t);
    let names = listed_names(&t);
    assert!(
        names
            .iter()
            .all(|n| n.starts_with("in-") || n.starts_with("scheme-")),
        "{names:?}"
    );
    if steps_list.contains("list-resources") {
        for must in ["in-a", "in-b", "in-link", "in-space", "in-unicode"] {
            assert!(
                names.contains(&must.to_string()),
                "{must} is listed: {names:?}"
            );
        }
    }
    let reads = steps(&t, "read");
    assert_eq!(reads[0]["result"]["contents"][0]["text"], "inside a\n");
    assert_eq!(reads[2]["result"]["contents"][0]["text"], "inside a\n");
    assert_eq!(
        reads[3]["result"]["contents"].as_array().map(Vec::len),
        Some(2),
        "extra.txt keeps its two inside items: {}",
        reads[3]
    );
    // (A 2026-07-28 host without roots is not asked for roots: see the test below.)
    if !steps(&t, "call").iter().any(|c| c["name"] == "ask_roots") {
        assert!(hostile::at_least(rev, "2026-07-28"));
    } else {
        let roots_text = call(&t, "ask_roots")["result"]["content"][0]["text"]
            .as_str()
            .unwrap()
            .to_owned();
        let got: Value = serde_json::from_str(&roots_text).unwrap();
        let got: Vec<String> = got["roots"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| norm(r["uri"].as_str().unwrap()))
            .collect();
        assert_eq!(
            got,
            [norm(&tree.root_uri())],
            "the server sees the effective root only"
        );
    }
    let embed = call(&t, "embed")["result"]["content"]
        .as_array()
        .unwrap()
        .clone();
    assert!(embed.len() >= 3, "the inside blocks stay: {embed:?}");
    assert_audit_verifies(&tree.file("audit.jsonl"));
    let records = audit_records(&tree.file("audit.jsonl"));
    assert!(
        records
            .iter()
            .any(|r| r["event"] == "decision" && r["decision"] == "deny"),
        "denials are audited"
    );
}

#[test]
fn hostile_python_2024_11_05() {
    hostile_python("2024-11-05");
}

#[test]
fn hostile_python_2025_03_26() {
    hostile_python("2025-03-26");
}

#[test]
fn hostile_python_2025_06_18() {
    hostile_python("2025-06-18");
}

#[test]
fn hostile_python_2025_11_25() {
    hostile_python("2025-11-25");
}

/// The 2025-11-25 session against a server that sends no icons (the icons bug aside).
#[test]
fn hostile_python_2025_11_25_no_icons() {
    hostile_python_steps("2025-11-25", ALL_STEPS, &["--no-icons"]);
}

#[test]
fn hostile_python_2026_07_28() {
    hostile_python("2026-07-28");
}

/// The same 2026-07-28 session without the listing steps (see the bug above): reads,
/// templates, tools, prompts.
#[test]
fn hostile_python_2026_07_28_without_listing_resources_first() {
    hostile_python_steps(
        "2026-07-28",
        "list-templates,read,list-tools,call,list-prompts,get-prompt",
        &[],
    );
}

#[test]
fn hostile_python_2026_07_28_without_listing_resources_first_no_icons() {
    hostile_python_steps(
        "2026-07-28",
        "list-templates,read,list-tools,call,list-prompts,get-prompt",
        &["--no-icons"],
    );
}

/// 2026-07-28 with a real SDK host that declares roots: rootfence's own MRTR roots request is
/// answered by the SDK's input-required driver, and the server's MRTR roots request gets the
/// effective roots only.
#[test]
fn hostile_python_2026_07_28_host_roots_by_mrtr() {
    require_peers();
    let tree = Tree::new();
    let mut args = strings(&["--protocol", "2026-07-28", "--record-requests"]);
    args.extend(strings(&["--steps", "read,call"]));
    for r in [
        tree.root_uri(),
        format!("file://{}", tree.evil.display()),
        tree.base_uri(),
    ] {
        args.extend(["--roots".to_string(), r]);
    }
    args.extend(["--read".to_string(), tree.uri("a.txt")]);
    args.extend(["--read-error".to_string(), tree.evil_uri()]);
    args.extend(strings(&["--call", "ask_roots", "--call", "embed"]));
    let t = session(
        Client::Python,
        &args,
        &hostile_argv(&tree),
        &through(&tree, &[]),
    );
    assert_clean(&t, &tree);
    assert_errors_are_denials(&t);
    assert_eq!(
        steps(&t, "read")[0]["result"]["contents"][0]["text"],
        "inside a\n"
    );
    let asked: Vec<&Value> = t["requests_received"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["method"] == "roots/list")
        .collect();
    assert!(
        asked.iter().any(|r| r["input_request"]
            .as_str()
            .is_some_and(|k| k.starts_with("io.rootfence/roots-"))),
        "rootfence asked the SDK host for its roots by MRTR: {asked:?}"
    );
    let text = call(&t, "ask_roots")["result"]["content"][0]["text"]
        .as_str()
        .unwrap();
    assert!(
        text.contains(&tree.root_str()) && !text.contains("root_evil"),
        "{text}"
    );
}

/// Inside the root, the hostile server behaves, and rootfence changes nothing: the same
/// Python session gives the same transcript directly and through rootfence, in every
/// revision.
#[test]
fn hostile_inside_only_python_matches_direct_in_every_revision() {
    require_peers();
    for rev in hostile::REVISIONS {
        let tree = Tree::new();
        let root = tree.root_str();
        let mut args = strings(&["--protocol", rev, "--steps", "read,call,get-prompt"]);
        for rel in ["a.txt", "sub/b.txt", "with%20space.txt", "caf%C3%A9.txt"] {
            args.extend(["--read".to_string(), tree.uri(rel)]);
        }
        args.extend([
            "--read".to_string(),
            "test://static/1".to_string(),
            "--call".to_string(),
            json_arg(
                "read_text_file",
                json!({"path": format!("{root}/sub/b.txt")}),
            ),
            "--call".to_string(),
            json_arg("echo_args", json!({"path": "hello"})),
            "--prompt".to_string(),
            "clean".to_string(),
        ]);
        // (--clean-info: no outside icon in serverInfo, which rootfence rightly removes.)
        let server = tree.server(&tree.file("server.log"), &["--clean-info"]);
        let t = same_both_ways(Client::Python, &args, &server, &through(&tree, &[]));
        assert_eq!(steps(&t, "read").len(), 5, "{rev}");
    }
}

/// 2026-07-28, a real SDK host without roots: the server's MRTR `roots/list` should be
/// answered by rootfence from the operator root (as in the handshake revisions); passed on,
/// the Python SDK fails the call ("List roots not supported").
#[test]
fn hostile_python_2026_07_28_server_asks_roots_of_a_host_without_roots() {
    require_peers();
    let tree = Tree::new();
    let args = strings(&[
        "--protocol",
        "2026-07-28",
        "--steps",
        "call",
        "--call",
        "ask_roots",
    ]);
    let t = session(
        Client::Python,
        &args,
        &hostile_argv(&tree),
        &through(&tree, &[]),
    );
    let text = call(&t, "ask_roots")["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or("")
        .to_owned();
    assert!(text.contains(&tree.root_str()), "{text}");
}

/// The rmcp client against the hostile server: its own parser, the same result.
#[test]
fn hostile_rmcp_2025_11_25() {
    hostile_rmcp(&[]);
}

#[test]
fn hostile_rmcp_2025_11_25_no_icons() {
    hostile_rmcp(&["--no-icons"]);
}

fn hostile_rmcp(server_extra: &[&str]) {
    require_peers();
    let tree = Tree::new();
    let root = tree.root_str();
    let mut args = strings(&[
        "--protocol",
        "2025-11-25",
        "--steps",
        "list-resources,list-templates,read,list-tools,call,list-prompts,get-prompt",
    ]);
    args.extend(["--roots".to_string(), tree.root_uri()]);
    args.extend(["--roots".to_string(), tree.base_uri()]);
    args.extend(["--read".to_string(), tree.uri("a.txt")]);
    args.extend(["--read".to_string(), tree.uri("extra.txt")]);
    for uri in [tree.evil_uri(), tree.uri("link_out"), tree.uri("swap.txt")] {
        args.extend(["--read-error".to_string(), uri]);
    }
    args.extend([
        "--call".to_string(),
        "embed".to_string(),
        "--call".to_string(),
        "ask_roots".to_string(),
        "--call".to_string(),
        json_arg("read_text_file", json!({"path": format!("{root}/a.txt")})),
        "--call-error".to_string(),
        json_arg(
            "read_text_file",
            json!({"path": tree.outside.display().to_string()}),
        ),
        "--prompt".to_string(),
        "leaky".to_string(),
    ]);
    let t = session(
        Client::Rmcp,
        &args,
        &tree.server(&tree.file("server.log"), server_extra),
        &through(&tree, &[]),
    );
    assert_clean(&t, &tree);
    assert_errors_are_denials(&t);
    let names = listed_names(&t);
    assert!(names.contains(&"in-a".to_string()), "{names:?}");
    assert!(!names.iter().any(|n| n.starts_with("leak-")), "{names:?}");
    assert_audit_verifies(&tree.file("audit.jsonl"));
}

// -------------------------------------------------------------------------------------------
// server-filesystem serving a directory that holds the root and the secrets
// -------------------------------------------------------------------------------------------

/// server-filesystem with the tree's base as its allowed directory: by itself it serves
/// `root_evil/secret.txt` and `secret-place/secret.txt`.
fn filesystem_over_base(tree: &Tree) -> Vec<String> {
    vec![
        "node".into(),
        node_entry("@modelcontextprotocol/server-filesystem")
            .display()
            .to_string(),
        tree.base.display().to_string(),
    ]
}

/// Tool calls with paths outside the root (or through links out of it, or denied by
/// policy, or relative): every one must be denied by rootfence's `[[tools.paths]]` check.
fn filesystem_outside_calls(tree: &Tree) -> Vec<(String, Value)> {
    let base = tree.base.display().to_string();
    let root = tree.root_str();
    let outside = tree.outside.display().to_string();
    let evil = format!("{base}/root_evil/secret.txt");
    vec![
        ("read_text_file".into(), json!({"path": evil})),
        ("read_text_file".into(), json!({"path": outside})),
        ("read_file".into(), json!({"path": outside})),
        ("read_media_file".into(), json!({"path": outside})),
        (
            "read_text_file".into(),
            json!({"path": format!("{root}/../secret-place/secret.txt")}),
        ),
        (
            "read_text_file".into(),
            json!({"path": format!("{root}/link_out")}),
        ),
        (
            "read_text_file".into(),
            json!({"path": format!("{root}/link_rel_out")}),
        ),
        (
            "read_text_file".into(),
            json!({"path": format!("{root}/dir_out/secret.txt")}),
        ),
        (
            "read_text_file".into(),
            json!({"path": format!("{root}/.env")}),
        ),
        (
            "read_text_file".into(),
            json!({"path": "secret-place/secret.txt"}),
        ),
        (
            "read_text_file".into(),
            json!({"path": "../secret-place/secret.txt"}),
        ),
        (
            "read_multiple_files".into(),
            json!({"paths": [format!("{root}/a.txt"), outside]}),
        ),
        ("list_directory".into(), json!({"path": base})),
        (
            "list_directory".into(),
            json!({"path": format!("{base}/root_evil")}),
        ),
        ("directory_tree".into(), json!({"path": base})),
        (
            "search_files".into(),
            json!({"path": base, "pattern": "secret"}),
        ),
        ("get_file_info".into(), json!({"path": evil})),
        (
            "write_file".into(),
            json!({"path": format!("{base}/root_evil/pwned.txt"), "content": "pwned"}),
        ),
        (
            "create_directory".into(),
            json!({"path": format!("{base}/made-by-the-server")}),
        ),
        (
            "move_file".into(),
            json!({"source": format!("{root}/a.txt"), "destination": format!("{base}/secret-place/moved.txt")}),
        ),
        (
            "edit_file".into(),
            json!({"path": outside, "edits": [{"oldText": "OUTSIDE", "newText": "EDITED"}]}),
        ),
    ]
}

fn filesystem_outside_args(tree: &Tree, host_roots: &[String]) -> Vec<String> {
    let mut a = strings(&["--steps", "list-tools,call"]);
    for r in host_roots {
        a.extend(["--roots".to_string(), r.clone()]);
    }
    a.extend([
        "--call".to_string(),
        json_arg(
            "read_text_file",
            json!({"path": format!("{}/a.txt", tree.root_str())}),
        ),
    ]);
    for (name, args) in filesystem_outside_calls(tree) {
        a.extend(["--call-error".to_string(), json_arg(&name, args)]);
    }
    a
}

fn check_filesystem_outside(t: &Value, tree: &Tree) {
    assert_clean(t, tree);
    assert_errors_are_denials(t);
    assert_eq!(
        steps(t, "call-error").len(),
        filesystem_outside_calls(tree).len()
    );
    assert_eq!(
        steps(t, "call")[0]["result"]["content"][0]["text"],
        "inside a\n"
    );
    // Nothing was written, made or moved outside the root.
    assert!(!tree.evil.join("pwned.txt").exists());
    assert!(!tree.base.join("made-by-the-server").exists());
    assert!(tree.root.join("a.txt").exists());
    assert_eq!(
        std::fs::read_to_string(&tree.outside).unwrap(),
        MARKER,
        "the outside file is unchanged"
    );
}

/// Without rootfence the server serves the outside files: the test above is not vacuous.
#[test]
fn filesystem_over_base_leaks_directly() {
    require_peers();
    let tree = Tree::new();
    let args = strings(&["--steps", "call"])
        .into_iter()
        .chain([
            "--call".to_string(),
            json_arg(
                "read_text_file",
                json!({"path": format!("{}/secret.txt", tree.evil.display())}),
            ),
        ])
        .collect::<Vec<_>>();
    let t = session(
        Client::Python,
        &args,
        &filesystem_over_base(&tree),
        &Via::Direct,
    );
    assert!(t.to_string().contains(MARKER), "{t}");
}

/// Operator root only: rootfence answers the server's roots request with the root and
/// refuses every outside path argument itself (JSON-RPC -32010, not the server's isError).
#[test]
fn filesystem_python_outside_paths_denied_operator_root() {
    require_peers();
    let tree = Tree::new();
    let args = filesystem_outside_args(&tree, &[]);
    let t = session(
        Client::Python,
        &args,
        &filesystem_over_base(&tree),
        &through(&tree, &[]),
    );
    check_filesystem_outside(&t, &tree);
    assert_audit_verifies(&tree.file("audit.jsonl"));
}

/// The host declares a root wider than the operator's (the base): narrowed to the root.
#[test]
fn filesystem_python_outside_paths_denied_host_root_narrowed() {
    require_peers();
    let tree = Tree::new();
    let args = filesystem_outside_args(&tree, &[tree.base_uri()]);
    let t = session(
        Client::Python,
        &args,
        &filesystem_over_base(&tree),
        &through(&tree, &[]),
    );
    check_filesystem_outside(&t, &tree);
}

/// No operator root: the host's own root is what rootfence enforces.
#[test]
fn filesystem_python_outside_paths_denied_host_root_only() {
    require_peers();
    let tree = Tree::new();
    let args = filesystem_outside_args(&tree, &[tree.root_uri()]);
    let audit = tree.file("audit.jsonl").display().to_string();
    let t = session(
        Client::Python,
        &args,
        &filesystem_over_base(&tree),
        &Via::RootfenceWith(vec![
            "--sandbox".into(),
            "off".into(),
            "--audit-log".into(),
            audit,
        ]),
    );
    check_filesystem_outside(&t, &tree);
}

#[test]
fn filesystem_rmcp_outside_paths_denied() {
    require_peers();
    let tree = Tree::new();
    let args = filesystem_outside_args(&tree, &[]);
    let t = session(
        Client::Rmcp,
        &args,
        &filesystem_over_base(&tree),
        &through(&tree, &[]),
    );
    check_filesystem_outside(&t, &tree);
}

/// Inside the root, server-filesystem works exactly as direct, with both SDK clients.
#[test]
fn filesystem_inside_matches_direct() {
    require_peers();
    let tree = Tree::new();
    let root = tree.root_str();
    let mut args = strings(&["--steps", "list-tools,call"]);
    for (name, a) in [
        ("read_text_file", json!({"path": format!("{root}/a.txt")})),
        (
            "read_text_file",
            json!({"path": format!("{root}/sub/b.txt")}),
        ),
        ("read_text_file", json!({"path": format!("{root}/link_in")})),
        (
            "read_multiple_files",
            json!({"paths": [format!("{root}/a.txt"), format!("{root}/sub/b.txt")]}),
        ),
        ("list_directory", json!({"path": format!("{root}/sub")})),
        ("directory_tree", json!({"path": format!("{root}/sub")})),
        (
            "search_files",
            json!({"path": format!("{root}/sub"), "pattern": "b.txt"}),
        ),
    ] {
        args.extend(["--call".to_string(), json_arg(name, a)]);
    }
    for client in [Client::Python, Client::Rmcp] {
        let t = same_both_ways(
            client,
            &args,
            &filesystem_over_base(&tree),
            &through(&tree, &[]),
        );
        assert_eq!(
            steps(&t, "call")[0]["result"]["content"][0]["text"],
            "inside a\n"
        );
        assert_eq!(steps(&t, "call").len(), 7);
    }
}

// -------------------------------------------------------------------------------------------
// server-everything and the Python SDK server, through rootfence with a root
// -------------------------------------------------------------------------------------------

/// The interop session against server-everything 2025.11.25 (pages, reads, subscription,
/// tools including the server's own roots/list and sampling, prompts, completion), with the
/// host's root equal to the operator root: identical to direct.
fn everything_2025_args(tree: &Tree, python: bool) -> Vec<String> {
    let mut a = strings(&[
        "--read",
        "test://static/resource/1",
        "--read",
        "test://static/resource/2",
        "--read",
        "test://static/resource/100",
        "--read-error",
        "test://static/resource/101",
        "--subscribe",
        "test://static/resource/3",
        "--update-timeout",
        "25",
        "--call",
        r#"echo={"message":"hello through the fence"}"#,
        "--call",
        r#"getResourceReference={"resourceId":4}"#,
        "--call",
        r#"getResourceLinks={"count":3}"#,
        "--call",
        "listRoots",
        "--prompt",
        r#"resource_prompt={"resourceId":"5"}"#,
    ]);
    a.extend(["--roots".to_string(), tree.root_uri()]);
    if python {
        a.extend(strings(&[
            "--complete",
            "complex_prompt:style=f",
            "--sampling",
            "a canned completion",
            "--call",
            r#"sampleLLM={"prompt":"say hi","maxTokens":20}"#,
        ]));
    }
    a
}

#[test]
fn everything_2025_python_with_root_matches_direct() {
    require_peers();
    let tree = Tree::new();
    let t = same_both_ways(
        Client::Python,
        &everything_2025_args(&tree, true),
        &everything_2025().argv,
        &through(&tree, &[]),
    );
    assert_eq!(steps(&t, "list-resources").len(), 10);
    assert!(
        call(&t, "listRoots")["result"]["content"][0]["text"]
            .as_str()
            .unwrap_or("")
            .contains(&tree.root_str())
    );
    assert_audit_verifies(&tree.file("audit.jsonl"));
}

#[test]
fn everything_2025_rmcp_with_root_matches_direct() {
    require_peers();
    let tree = Tree::new();
    let t = same_both_ways(
        Client::Rmcp,
        &everything_2025_args(&tree, false),
        &everything_2025().argv,
        &through(&tree, &[]),
    );
    assert_eq!(steps(&t, "list-resources").len(), 10);
}

/// Host roots wider than the operator root: server-everything's `listRoots` tool shows what
/// the server was given, and it is the root only.
#[test]
fn everything_2025_python_host_roots_are_narrowed() {
    require_peers();
    let tree = Tree::new();
    // Listing first gives the server time to ask for the roots (it does so after
    // initialization, concurrently with the session; calling listRoots at once races it,
    // directly too).
    let args = strings(&[
        "--steps",
        "list-resources,list-tools,call",
        "--call",
        "listRoots",
    ])
    .into_iter()
    .chain(
        [
            tree.root_uri(),
            format!("file://{}", tree.evil.display()),
            tree.base_uri(),
        ]
        .into_iter()
        .flat_map(|r| ["--roots".to_string(), r]),
    )
    .collect::<Vec<_>>();
    let t = session(
        Client::Python,
        &args,
        &everything_2025().argv,
        &through(&tree, &[]),
    );
    let text = call(&t, "listRoots")["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or("")
        .to_owned();
    assert!(text.contains(&tree.root_str()), "{text}");
    assert!(!text.contains("root_evil"), "{text}");
    assert!(
        !text.contains(&format!("{}\"", tree.base.display()))
            && !text.contains(&format!("{}\n", tree.base.display())),
        "the base is narrowed to the root: {text}"
    );
}

#[test]
fn everything_latest_python_with_root_matches_direct() {
    require_peers();
    let tree = Tree::new();
    let args = strings(&[
        "--read-listed",
        "7",
        "--read",
        "demo://resource/dynamic/text/1",
        "--call",
        r#"echo={"message":"hi"}"#,
        "--call",
        r#"get-resource-links={"count":3}"#,
        "--call",
        r#"get-resource-reference={"resourceType":"Blob","resourceId":3}"#,
        "--prompt",
        "simple-prompt",
        "--steps",
        "list-resources,list-templates,read,list-tools,call,list-prompts,get-prompt",
    ]);
    // The host declares the root: without it, rootfence would announce the roots capability
    // to the server itself (it supplies the operator roots), and server-everything offers
    // roots tools to a client with roots, so the direct tool list would differ.
    let mut args = args;
    args.extend(["--roots".to_string(), tree.root_uri()]);
    let t = same_both_ways(
        Client::Python,
        &args,
        &everything_latest().argv,
        &through(&tree, &[]),
    );
    assert_eq!(steps(&t, "read").len(), 8);
}

/// 2026-07-28 against the Python SDK's own server, with a root: identical to direct.
#[test]
fn python_server_2026_07_28_with_root_matches_direct() {
    require_peers();
    let tree = Tree::new();
    let args = strings(&[
        "--protocol",
        "2026-07-28",
        "--steps",
        "list-resources,list-templates,read,list-tools,call,list-prompts,get-prompt",
        "--read-listed",
        "2",
        "--read",
        "py://item/42",
        "--read-error",
        "py://no-such-resource",
        "--call",
        r#"echo={"message":"stateless"}"#,
        "--prompt",
        r#"greet={"name":"Ada"}"#,
    ]);
    let t = same_both_ways(
        Client::Python,
        &args,
        &python_server().argv,
        &through(&tree, &[]),
    );
    assert_eq!(steps(&t, "read-error")[0]["error"]["code"], -32602);
}
