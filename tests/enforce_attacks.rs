//! Enforcement regressions, one test per attack (issue 6), through the real binary against
//! the hostile server (`examples/hostile_server.rs`, with `--extra-leaks` where an attack
//! needs it): the `read` stances against a server that lies about contents, the OS sandbox
//! and the wire checks together, and the attacks that found gaps (each was `#[ignore]`d with
//! the precise failure until fixed: `bug:` where rootfence breaks its own contract in
//! docs/enforcement.md, `gap:` where the contract does not cover the attack yet).

mod common;
#[path = "common/hostile.rs"]
mod hostile;

use std::path::PathBuf;

use hostile::{
    Host, MARKER, Tree, assert_audit_verifies, assert_denied, audit_records, opts, server_log,
    server_saw_id,
};
use serde_json::{Value, json};

/// rootfence (`--sandbox off` unless `sandbox` is given) around the hostile server with
/// `server_extra`, operator root, policies given as TOML texts; the host declares no roots.
fn start(
    tree: &Tree,
    rev: &str,
    policies: &[&str],
    server_extra: &[&str],
    sandbox: Option<&str>,
) -> Host {
    let audit = tree.file("audit.jsonl");
    let files: Vec<PathBuf> = policies
        .iter()
        .enumerate()
        .map(|(i, t)| {
            if t.starts_with("builtin:") {
                PathBuf::from(t)
            } else {
                tree.policy(&format!("p{i}.toml"), t)
            }
        })
        .collect();
    let refs: Vec<&std::path::Path> = files.iter().map(PathBuf::as_path).collect();
    let mut o = opts(tree, &audit, &refs, true);
    if let Some(mode) = sandbox {
        o[1] = mode.to_owned();
    }
    let log = tree.file("server.log");
    let mut host = Host::start(&o, &tree.server(&log, server_extra), rev);
    host.begin(json!({"sampling": {}}));
    host
}

/// The `elicit` tool's `url` argument unchecked on the wire: a `file:` URL there would be
/// refused before the server could ask (tests/enforce_toolargs.rs); these tests are about
/// the server's elicitation request.
const NO_INFER_ELICIT: &str =
    "version = 1\n[[tools.infer_for]]\ntool = \"elicit\"\ninfer = \"off\"\n";

fn finish(mut host: Host, tree: &Tree) -> Vec<Value> {
    assert_eq!(host.finish(), 0, "stderr:\n{}", host.stderr());
    assert_audit_verifies(&tree.file("audit.jsonl"));
    audit_records(&tree.file("audit.jsonl"))
}

fn has_secret(v: &Value) -> bool {
    v.to_string().contains(MARKER)
}

// -------------------------------------------------------------------------------------------
// A server that lies about what it read
// -------------------------------------------------------------------------------------------

/// `read = "forward"` with the sandbox off cannot tell a lie: the server answers an inside
/// URI with the secret's bytes and they pass. This is what `verify`, `serve` and the sandbox
/// are for (the next three tests); pinned so the limitation stays documented.
#[test]
fn forward_without_sandbox_cannot_see_a_lie_about_contents() {
    let tree = Tree::new();
    let mut host = start(&tree, "2025-06-18", &[], &[], None);
    let r = host.request("resources/read", json!({"uri": tree.uri("lie.txt")}));
    assert!(has_secret(&r), "the lie passes under forward: {r}");
    finish(host, &tree);
}

#[test]
fn verify_removes_contents_that_differ_from_the_file() {
    let tree = Tree::new();
    let policy = "version = 1\n[resources]\nread = \"verify\"\n";
    let mut host = start(&tree, "2025-06-18", &["builtin:default", policy], &[], None);
    let r = host.request("resources/read", json!({"uri": tree.uri("lie.txt")}));
    assert_denied(&r, None, &["content_mismatch"]);
    let r = host.request("resources/read", json!({"uri": tree.uri("a.txt")}));
    assert_eq!(r["result"]["contents"][0]["text"], "inside a\n", "{r}");
    host.assert_no_leak(&tree);
    let records = finish(host, &tree);
    assert!(
        records
            .iter()
            .any(|r| r["event"] == "decision" && r["reason"] == "content_mismatch"),
        "the mismatch is audited"
    );
}

#[test]
fn serve_answers_file_reads_itself() {
    let tree = Tree::new();
    let policy = "version = 1\n[resources]\nread = \"serve\"\n";
    let mut host = start(&tree, "2025-06-18", &["builtin:default", policy], &[], None);
    let lie = host.send_request("resources/read", json!({"uri": tree.uri("lie.txt")}));
    let r = host.response(lie);
    assert_eq!(
        r["result"]["contents"][0]["text"], "a scripted read\n",
        "rootfence read the file itself: {r}"
    );
    let a = host.send_request("resources/read", json!({"uri": tree.uri("a.txt")}));
    assert_eq!(
        host.response(a)["result"]["contents"][0]["text"],
        "inside a\n"
    );
    let r = host.request("resources/read", json!({"uri": tree.uri("link_out")}));
    assert_denied(&r, None, &["symlink_escape"]);
    host.assert_no_leak(&tree);
    finish(host, &tree);
    let log = tree.file("server.log");
    assert!(
        !server_saw_id(&log, lie) && !server_saw_id(&log, a),
        "the server never sees a served read"
    );
}

/// The default: the sandbox on (best effort) and the wire checks. The server is not told the
/// secret (no `--secret`) and must read it itself to leak it; where Landlock is enforced it
/// cannot, so even the lie under `forward` carries no secret. Everything inside still works.
#[test]
fn sandbox_and_wire_enforcement_together() {
    let tree = Tree::new();
    let audit = tree.file("audit.jsonl");
    // The log goes inside the root: the confined server may write only there.
    let log = tree.root.join("server.log");
    let server = vec![
        common::example("hostile_server").display().to_string(),
        "--inside".into(),
        tree.root_str(),
        "--outside".into(),
        tree.outside.display().to_string(),
        "--log".into(),
        log.display().to_string(),
    ];
    let o = vec![
        "--root".to_string(),
        tree.root_str(),
        "--audit-log".into(),
        audit.display().to_string(),
    ];
    let mut host = Host::start(&o, &server, "2025-06-18");
    host.begin(json!({}));
    let r = host.request("resources/read", json!({"uri": tree.uri("a.txt")}));
    assert_eq!(r["result"]["contents"][0]["text"], "inside a\n", "{r}");
    let r = host.request("resources/read", json!({"uri": tree.evil_uri()}));
    assert_denied(&r, None, &["outside_roots"]);
    let (r, _) = host.call_tool("embed", json!({}));
    assert!(r.get("result").is_some(), "{r}");
    let lie = host.request("resources/read", json!({"uri": tree.uri("lie.txt")}));
    assert_eq!(host.finish(), 0, "stderr:\n{}", host.stderr());
    assert_audit_verifies(&audit);
    let records = audit_records(&audit);
    let start = records
        .iter()
        .find(|r| r["event"] == "session_start")
        .expect("a session_start");
    let enforced = start["sandbox"]["enforcement"].as_str().unwrap_or("none");
    if enforced == "none" {
        eprintln!("Landlock is not enforced here; the lie under forward is not checked");
    } else {
        assert!(
            !has_secret(&lie),
            "the confined server could not read the secret ({enforced}): {lie}"
        );
        host.assert_no_leak(&tree);
    }
}

// -------------------------------------------------------------------------------------------
// Gaps and bugs, one attack each
// -------------------------------------------------------------------------------------------

/// 2026-07-28 puts `serverInfo` in `server/discover`'s `_meta`; its `file:` icons are
/// checked like every other `serverInfo` icon (docs/enforcement.md: "icons[].src on ... and
/// serverInfo").
#[test]
fn discover_2026_07_28_server_info_outside_icon_is_removed() {
    let tree = Tree::new();
    let o = opts(&tree, &tree.file("audit.jsonl"), &[], true);
    let mut host = Host::start(
        &o,
        &tree.server(&tree.file("server.log"), &["--extra-leaks"]),
        "2026-07-28",
    );
    let r = host.begin(json!({}));
    let icons = &r["_meta"]["io.modelcontextprotocol/serverInfo"]["icons"];
    assert!(
        !icons
            .to_string()
            .contains(&tree.outside.display().to_string()),
        "the outside file: icon is removed: {icons}"
    );
}

/// WHATWG URL parsers (browsers, Electron hosts) strip leading spaces and remove tabs and
/// newlines anywhere, so `" file:///x"` and `"fi\tle:///x"` are `file:///x` to them. An icon
/// rootfence cannot read as a URI must be refused like a resource URI is (`not_a_uri`), not
/// passed as "another scheme".
#[test]
fn icons_with_a_file_scheme_hidden_by_whitespace_are_removed() {
    let tree = Tree::new();
    let mut host = start(&tree, "2025-11-25", &[], &["--extra-leaks"], None);
    let r = host.request("resources/list", json!({}));
    let icons = &r["result"]["resources"][0]["icons"];
    assert_eq!(r["result"]["resources"][0]["name"], "in-a");
    let srcs: Vec<&str> = icons
        .as_array()
        .expect("icons")
        .iter()
        .filter_map(|i| i["src"].as_str())
        .collect();
    assert_eq!(
        srcs,
        [
            tree.uri("icon.png").as_str(),
            "https://example.com/icon.png"
        ],
        "only the inside and https icons stay"
    );
    host.assert_no_leak(&tree);
}

/// `file://<root>_evil{/x}` expands only to `<root>_evil` and below, and `file:///etc{/x}`
/// only to `/etc...`; their literal prefixes are disjoint from the root, so they must be
/// removed (docs/enforcement.md: "removed when every expansion must leave the roots (its
/// literal prefix is disjoint from every root)").
#[test]
fn templates_with_a_path_operator_after_a_partial_name_are_removed() {
    let tree = Tree::new();
    let mut host = start(&tree, "2025-06-18", &[], &["--extra-leaks"], None);
    let r = host.request("resources/templates/list", json!({}));
    let names: Vec<&str> = r["result"]["resourceTemplates"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|t| t["name"].as_str())
        .collect();
    assert!(
        !names.contains(&"tpl-leak-sibling-path-op") && !names.contains(&"tpl-leak-etc-path-op"),
        "{names:?}"
    );
    assert!(names.contains(&"tpl-in-name"), "{names:?}");
}

/// A block that carries `resource.uri` under a type no revision has (`"Resource"`), or under
/// no type at all, is a resource to a lenient host: it is judged like one (the walker already
/// fails closed on unknown blocks with a top-level `uri`).
#[test]
fn resource_blocks_with_an_unknown_type_are_checked() {
    let tree = Tree::new();
    let mut host = start(&tree, "2025-06-18", &[], &["--extra-leaks"], None);
    let (r, _) = host.call_tool("embed", json!({}));
    assert!(!has_secret(&r), "no outside resource text passes: {r}");
    host.assert_no_leak(&tree);
}

/// Fail closed on shapes: a `contents`, `resources` or `messages` that is not an array cannot
/// be checked item by item, so it must not pass as it came.
#[test]
fn non_array_payloads_are_not_passed_unchecked() {
    let tree = Tree::new();
    let mut host = start(&tree, "2025-06-18", &[], &[], None);
    let mut failures = Vec::new();
    let r = host.request(
        "resources/read",
        json!({"uri": tree.uri("object-contents.txt")}),
    );
    if has_secret(&r) {
        failures.push(format!("read contents as an object passed: {r}"));
    }
    let r = host.request("resources/list", json!({"cursor": "shape/object"}));
    if r.to_string().contains("root_evil") {
        failures.push("list resources as an object passed".to_string());
    }
    let r = host.request("prompts/get", json!({"name": "leaky_object"}));
    if has_secret(&r) {
        failures.push(format!("prompt messages as an object passed: {r}"));
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// Schemes that wrap a `file:` URI name a local file to hosts that resolve them (VS Code's
/// `vscode-file:`, Java's `jar:file:`, `view-source:file:`). Under the default policy
/// (`other_schemes = "allow"`) they pass as "another scheme" although they name files
/// outside the roots.
#[test]
fn schemes_that_wrap_file_are_root_checked() {
    let tree = Tree::new();
    let mut host = start(
        &tree,
        "2025-06-18",
        &[],
        &["--extra-leaks", "--page-size", "200"],
        None,
    );
    let r = host.request("resources/list", json!({}));
    let names: Vec<String> = r["result"]["resources"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|x| x["name"].as_str().map(str::to_owned))
        .collect();
    for wrapped in [
        "scheme-jar-file",
        "scheme-vscode-file",
        "scheme-view-source",
    ] {
        assert!(
            !names.contains(&wrapped.to_string()),
            "{wrapped} passed: {names:?}"
        );
    }
}

/// URL-mode elicitation (2025-11-25) asks the host to open a URL; a `file:` URL outside the
/// roots is an outside file put in front of the user.
#[test]
fn url_elicitation_of_an_outside_file_is_refused() {
    let tree = Tree::new();
    let mut host = start(&tree, "2025-11-25", &[], &[], None);
    let (r, _) = host.call_tool("elicit", json!({}));
    let _ = r;
    let asked: Vec<&Value> = host
        .requests
        .iter()
        .filter(|m| m["method"] == "elicitation/create")
        .collect();
    assert!(
        asked
            .iter()
            .all(|m| !m.to_string().contains("secret-place")),
        "{asked:?}"
    );
}

/// 2026-07-28: the server's MRTR `roots/list` for a host that declared no roots is answered by
/// rootfence from the operator roots (docs/enforcement.md: "the host does not [support roots],
/// and there are operator roots: rootfence answers with them itself"), as it is in the
/// handshake revisions. Passing it on breaks real SDK hosts: the Python SDK answers a roots
/// input request it has no callback for with an error, so the tool call fails.
#[test]
fn mrtr_2026_07_28_server_roots_request_for_a_host_without_roots_is_answered_by_rootfence() {
    let tree = Tree::new();
    let mut host = start(&tree, "2026-07-28", &[], &[], None);
    // The host may be asked to retry (a requestState-only round, which SDK hosts do on their
    // own), but it is never asked for roots: rootfence answers the server on the retry.
    let (r, inputs) = host.mrtr("tools/call", json!({"name": "ask_roots", "arguments": {}}));
    for round in &inputs {
        let asked = round["inputRequests"].to_string();
        assert!(
            !asked.contains("roots/list"),
            "the host without roots is asked: {round}"
        );
    }
    assert_ne!(r["result"]["resultType"], "input_required", "{r}");
    assert!(
        r.to_string().contains(&tree.root_str()),
        "the server got the operator root: {r}"
    );
    let _ = server_log(&tree.file("server.log"));
}

/// 2026-07-28 MRTR on `resources/read` (the spec allows `input_required` there as on
/// `tools/call` and `prompts/get`): the server's roots request must get the effective roots
/// only, and its sampling request must not carry outside files to the host.
#[test]
fn mrtr_2026_07_28_on_resources_read_is_examined_like_tools_call() {
    let tree = Tree::new();
    let audit = tree.file("audit.jsonl");
    let o = opts(&tree, &audit, &[], true);
    let mut host = Host::start(
        &o,
        &tree.server(&tree.file("server.log"), &[]),
        "2026-07-28",
    );
    host.roots = Some(vec![
        tree.root_uri(),
        format!("file://{}", tree.evil.display()),
        tree.base_uri(),
    ]);
    host.begin(json!({"roots": {}, "sampling": {}}));
    let mut failures = Vec::new();
    let (r, inputs) = host.mrtr(
        "resources/read",
        json!({"uri": tree.uri("mrtr-sample.txt")}),
    );
    let asked = json!(inputs).to_string();
    if asked.contains("secret-place") || asked.contains(MARKER) || asked.contains("root_evil") {
        failures.push(format!(
            "the sampling input request carried outside files: {asked}"
        ));
    }
    let _ = r;
    let (r, _) = host.mrtr("resources/read", json!({"uri": tree.uri("mrtr-roots.txt")}));
    let text = r["result"]["contents"][0]["text"]
        .as_str()
        .unwrap_or("")
        .to_owned();
    if text.contains("root_evil") || text.contains(&format!("\"{}\"", tree.base_uri())) {
        failures.push(format!(
            "the server got the host's unfiltered roots: {text}"
        ));
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// The server asks for roots at the same moment rootfence does (right after
/// initialization, with the same numeric ids the SDKs start from): each answer goes where it
/// belongs, and the server gets the effective root only.
#[test]
fn server_and_rootfence_ask_for_roots_at_once() {
    let tree = Tree::new();
    let audit = tree.file("audit.jsonl");
    let o = opts(&tree, &audit, &[], true);
    let mut host = Host::start(
        &o,
        &tree.server(&tree.file("server.log"), &["--ask-roots-at-start"]),
        "2025-06-18",
    );
    host.roots = Some(vec![
        tree.root_uri(),
        format!("file://{}", tree.evil.display()),
        tree.base_uri(),
        "file:///".into(),
    ]);
    host.begin(json!({"roots": {"listChanged": true}}));
    host.settle(500);
    assert_eq!(
        host.requests
            .iter()
            .filter(|r| r["method"] == "roots/list")
            .count(),
        2,
        "the host is asked twice (rootfence, then the server through rootfence)"
    );
    let (r, _) = host.call_tool("roots_seen", json!({}));
    let text = r["result"]["content"][0]["text"].as_str().unwrap_or("");
    let seen: Value = serde_json::from_str(text).unwrap_or(Value::Null);
    assert_eq!(
        seen,
        json!([{"uri": tree.root_uri()}]),
        "the server's own roots/list got the effective root only: {r}"
    );
    host.assert_no_leak(&tree);
    finish(host, &tree);
}

/// 2026-07-28, a host that declares no roots and lists resources first (as the SDKs do):
/// the operator root applies from the first request, so the inside entries are listed.
#[test]
fn list_2026_07_28_first_request_of_a_host_without_roots_uses_the_operator_root() {
    let tree = Tree::new();
    let mut host = start(&tree, "2026-07-28", &[], &["--page-size", "200"], None);
    let r = host.request("resources/list", json!({}));
    let names: Vec<&str> = r["result"]["resources"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|x| x["name"].as_str())
        .collect();
    assert!(
        names.contains(&"in-a") && names.contains(&"in-b"),
        "the inside entries are listed: {names:?}"
    );
}

/// 2026-07-28, a host that declares roots: rootfence can only ask for them in answer to a
/// `tools/call`, `prompts/get` or `resources/read`; a list before that is decided with the
/// roots unknown, and fails closed (entries removed, never passed).
#[test]
fn list_2026_07_28_before_the_roots_are_known_fails_closed() {
    let tree = Tree::new();
    let audit = tree.file("audit.jsonl");
    let o = opts(&tree, &audit, &[], true);
    let mut host = Host::start(
        &o,
        &tree.server(&tree.file("server.log"), &["--page-size", "200"]),
        "2026-07-28",
    );
    host.roots = Some(vec![tree.root_uri()]);
    host.begin(json!({"roots": {}}));
    let r = host.request("resources/list", json!({}));
    let names: Vec<&str> = r["result"]["resources"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|x| x["name"].as_str())
        .collect();
    assert!(
        names.iter().all(|n| n.starts_with("scheme-")),
        "no file: entry passes while the roots are unknown: {names:?}"
    );
    // Once a read has settled the roots (MRTR), the same list shows the inside entries.
    let (r, inputs) = host.mrtr("resources/read", json!({"uri": tree.uri("a.txt")}));
    assert_eq!(inputs.len(), 1, "{inputs:?}");
    assert_eq!(r["result"]["contents"][0]["text"], "inside a\n", "{r}");
    let r = host.request("resources/list", json!({}));
    assert!(r.to_string().contains("\"in-a\""), "{r}");
    host.assert_no_leak(&tree);
    let records = finish(host, &tree);
    assert!(
        records
            .iter()
            .any(|r| r["event"] == "decision" && r["reason"] == "roots_unknown"),
        "the early denials are audited as roots_unknown"
    );
}

/// `file:` icons outside the roots are removed (2025-11-25) wherever they are, also when
/// removing them is the only change to the message: `initialize`'s `serverInfo.icons`, a
/// `resources/list` page whose entries all stay, `tools/list`.
#[test]
fn icons_outside_the_roots_are_removed_when_nothing_else_changes() {
    let tree = Tree::new();
    let audit = tree.file("audit.jsonl");
    let o = opts(&tree, &audit, &[], true);
    let mut host = Host::start(
        &o,
        &tree.server(&tree.file("server.log"), &[]),
        "2025-11-25",
    );
    let init = host.begin(json!({}));
    let outside = tree.outside.display().to_string();
    let mut failures = Vec::new();
    if init.to_string().contains(&outside) {
        failures.push(format!("initialize serverInfo.icons: {init}"));
    }
    // The first page holds inside entries only (the icon is on in-a).
    let page = host.request("resources/list", json!({}));
    if page.to_string().contains(&outside) {
        failures.push(format!(
            "resources/list entry icons: {}",
            page["result"]["resources"][0]
        ));
    }
    let tools = host.request("tools/list", json!({}));
    if tools.to_string().contains(&outside) {
        failures.push(format!(
            "tools/list icons: {}",
            tools["result"]["tools"][0]["icons"]
        ));
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

// -------------------------------------------------------------------------------------------
// Issue 13 items 6-8: every representation, every field, every URL shown to the user
// -------------------------------------------------------------------------------------------

/// No byte of the secret (nor its base64) in anything the host received.
fn assert_no_secret(host: &Host) {
    let needles = hostile::secret_needles();
    for line in &host.raw {
        let text = String::from_utf8_lossy(line);
        for n in &needles {
            assert!(
                !text.contains(n.as_str()),
                "LEAK: the host received secret bytes ({n}) in:\n{text}"
            );
        }
    }
}

/// Item 6: `read = "verify"` compared only `text` when the item also had a `blob`: the file's
/// own bytes as `text` carried the secret as `blob` (and `data`) past the check.
#[test]
fn verify_checks_a_blob_beside_matching_text() {
    let tree = Tree::new();
    let policy = "version = 1\n[resources]\nread = \"verify\"\n";
    for rev in ["2025-06-18", "2026-07-28"] {
        let mut host = start(&tree, rev, &[policy], &[], None);
        let r = host.request(
            "resources/read",
            json!({"uri": tree.uri("text-and-blob.txt")}),
        );
        assert_denied(&r, None, &["content_mismatch"]);
        assert_no_secret(&host);
        finish(host, &tree);
    }
}

/// Item 6: `max_bytes` measured `text` only: a small `text` let a blob of any size through.
#[test]
fn max_bytes_measures_a_large_blob_beside_small_text() {
    let tree = Tree::new();
    let policy = "version = 1\n[resources]\nmax_bytes = \"1 KiB\"\n";
    let mut host = start(&tree, "2025-06-18", &[policy], &[], None);
    let r = host.request("resources/read", json!({"uri": tree.uri("big-blob.txt")}));
    assert_denied(&r, None, &["too_large"]);
    assert_no_secret(&host);
    let records = finish(host, &tree);
    assert!(
        records
            .iter()
            .any(|r| r["event"] == "decision" && r["reason"] == "too_large"),
        "the refusal is audited"
    );
}

/// Item 7: fields the contract did not list carried an outside file (its URI and its text)
/// with the sandbox off. Each one, in a handshake revision and in 2026-07-28: the host gets
/// an answer to every call and never the secret; the judged URI is audited.
#[test]
fn unlisted_fields_of_a_tool_result_do_not_carry_outside_files() {
    for rev in ["2025-06-18", "2025-11-25", "2026-07-28"] {
        let tree = Tree::new();
        let mut host = start(&tree, rev, &[], &[], None);
        for field in [
            "structured",
            "structured_deep",
            "meta",
            "block_meta",
            "nested",
            "second_uri",
            "second_uri_reverse",
            "tool_result",
            "tool_result_uri",
            "website",
        ] {
            let (r, _) = host.call_tool("leak_field", json!({"field": field}));
            assert!(r.get("result").is_some(), "{field}: answered: {r}");
            assert!(
                !r.to_string().contains("secret-place"),
                "{field}: the outside URI is gone: {r}"
            );
        }
        // What is inside stays: the nested block's inside resource, the link's `uri`.
        let (r, _) = host.call_tool("leak_field", json!({"field": "nested"}));
        assert_eq!(
            r["result"]["content"][0]["resource"]["text"], "inside a\n",
            "{r}"
        );
        // A second URI key outside takes the whole block away.
        let (r, _) = host.call_tool("leak_field", json!({"field": "second_uri"}));
        assert_eq!(r["result"]["content"], json!([]), "{r}");
        assert_no_secret(&host);
        host.assert_no_leak(&tree);
        let records = finish(host, &tree);
        assert!(
            records.iter().any(|r| r["event"] == "decision"
                && r["decision"] == "deny"
                && r["field"]
                    .as_str()
                    .is_some_and(|f| f.starts_with("result.structuredContent"))),
            "{rev}: structuredContent decisions are audited"
        );
    }
}

/// Item 7: icons whose `src` is relative (the host resolves it against its own page, often a
/// `file:` URL) are removed; absolute `https:` icons stay.
#[test]
fn relative_icon_urls_are_removed() {
    let tree = Tree::new();
    let mut host = start(&tree, "2025-11-25", &[], &[], None);
    let (r, _) = host.call_tool("leak_field", json!({"field": "relative_icon"}));
    let icons = &r["result"]["content"][0]["icons"];
    assert_eq!(icons, &json!([{"src": "https://example.com/i.png"}]), "{r}");
    host.assert_no_leak(&tree);
    finish(host, &tree);
}

/// Item 7: `error.data` of the answer to an allowed request, log and progress notifications,
/// and a `-32042`-style list of URLs to open: each outside file is taken out, and every
/// request is still answered.
#[test]
fn errors_and_notifications_do_not_carry_outside_files() {
    for rev in ["2025-06-18", "2025-11-25", "2026-07-28"] {
        let tree = Tree::new();
        let mut host = start(&tree, rev, &[], &[], None);
        for field in ["error_data", "error_uri"] {
            let (r, _) = host.call_tool("leak_field", json!({"field": field}));
            assert_eq!(
                r["error"]["code"], -32603,
                "{field}: answered with its error: {r}"
            );
            assert!(!r.to_string().contains("secret-place"), "{field}: {r}");
        }
        // `data` that is itself the outside resource goes whole.
        let (r, _) = host.call_tool("leak_field", json!({"field": "error_uri"}));
        assert!(r["error"].get("data").is_none(), "{r}");
        let (r, _) = host.call_tool("leak_field", json!({"field": "elicitation_error"}));
        assert_eq!(
            r["error"]["data"]["elicitations"],
            json!([{"mode": "url", "elicitationId": "hostile-1", "url": "https://example.com/ok",
                    "message": "Please open this file to continue"}]),
            "{r}"
        );
        for field in ["logging", "logging_nested", "progress"] {
            let (r, _) = host.call_tool("leak_field", json!({"field": field}));
            assert!(r.get("result").is_some(), "{field}: {r}");
        }
        host.settle(300);
        // The log message whose data was the outside file is dropped; the one that only
        // listed it keeps its data without it.
        let logs = host.take_notes("notifications/message");
        assert_eq!(logs.len(), 1, "{logs:?}");
        assert_eq!(
            logs[0]["params"]["data"],
            json!({"event": "read", "files": []})
        );
        let progress = host.take_notes("notifications/progress");
        assert_eq!(progress.len(), 1, "the progress itself passes");
        assert!(progress[0]["params"]["_meta"].get("file").is_none());
        assert_no_secret(&host);
        host.assert_no_leak(&tree);
        finish(host, &tree);
    }
}

/// Item 7: completion values of a `file:` template that expand outside the roots (names of
/// outside files offered to the user) are removed; inside ones stay.
#[test]
fn completion_values_that_leave_the_roots_are_removed() {
    for rev in ["2025-06-18", "2026-07-28"] {
        let tree = Tree::new();
        let mut host = start(&tree, rev, &[], &[], None);
        let template = format!("file://{}/{{+path}}", tree.root_str());
        let r = host.request(
            "completion/complete",
            json!({"ref": {"type": "ref/resource", "uri": template},
                   "argument": {"name": "path", "value": ""}}),
        );
        assert_eq!(
            r["result"]["completion"]["values"],
            json!(["a.txt", "sub/b.txt"]),
            "{r}"
        );
        host.assert_no_leak(&tree);
        finish(host, &tree);
    }
}

/// Item 7: a `tasks/get` result (any result of any method) is walked too.
#[test]
fn task_results_do_not_carry_outside_files() {
    let tree = Tree::new();
    let mut host = start(&tree, "2025-11-25", &[], &[], None);
    let r = host.request("tasks/get", json!({"taskId": "leaky-task"}));
    assert_eq!(r["result"]["status"], "completed", "{r}");
    assert!(r["result"]["_meta"].get("detail").is_none(), "{r}");
    assert_no_secret(&host);
    host.assert_no_leak(&tree);
    finish(host, &tree);
}

/// A server cannot pass its own text off as rootfence's tool error: `io.rootfence/*` keys
/// are taken out of everything it sends.
#[test]
fn a_server_cannot_forge_rootfences_tool_denial() {
    let tree = Tree::new();
    let mut host = start(&tree, "2025-06-18", &[], &[], None);
    let (r, _) = host.call_tool("leak_field", json!({"field": "forged_denial"}));
    assert!(
        r["result"]["_meta"].get("io.rootfence/denial").is_none(),
        "{r}"
    );
    finish(host, &tree);
}

/// Item 8: URL-mode elicitation let local files through behind another scheme
/// (`view-source:file:`, `jar:file:`, `vscode-file:`, `vscode-resource:`) and any spelling a
/// WHATWG parser reads as `file:`. Each is refused to the server; the host is never asked.
#[test]
fn url_elicitation_of_a_local_file_in_any_disguise_is_refused() {
    let tree = Tree::new();
    let outside = tree.outside.display().to_string();
    let urls = [
        format!("view-source:file://{outside}"),
        format!("VIEW-SOURCE:file://{outside}"),
        format!("view-source: file://{outside}"),
        format!("jar:file://{outside}!/x"),
        format!("vscode-file://vscode-app{outside}"),
        format!("vscode-resource:{outside}"),
        format!("vscode-webview-resource://id/file{outside}"),
        format!("vscode-remote://ssh-remote+host{outside}"),
        format!("blob:file://{outside}"),
        format!(" file://{outside}"),
        format!("fi\tle://{outside}"),
        format!("file://{}/../secret-place/secret.txt", tree.root_str()),
    ];
    let mut host = start(&tree, "2025-11-25", &[NO_INFER_ELICIT], &[], None);
    for url in &urls {
        let (r, _) = host.call_tool("elicit", json!({"url": url}));
        // The server got rootfence's denial as the answer to its request, and says so.
        assert!(
            r["result"]["content"][0]["text"]
                .as_str()
                .is_some_and(|t| t.contains("-32010")),
            "{url}: {r}"
        );
    }
    // An allowed one still reaches the host.
    host.call_tool("elicit", json!({"url": "https://example.com/login"}));
    let asked: Vec<&Value> = host
        .requests
        .iter()
        .filter(|m| m["method"] == "elicitation/create")
        .collect();
    assert_eq!(
        asked.len(),
        1,
        "only the https URL reached the host: {asked:?}"
    );
    assert_eq!(asked[0]["params"]["url"], "https://example.com/login");
    assert_no_secret(&host);
    finish(host, &tree);
}

/// Item 8, 2026-07-28: the elicitation rides in an `input_required` result's
/// `inputRequests`; an outside `file:` URL (in any disguise) is taken out there.
#[test]
fn mrtr_2026_07_28_elicitation_of_a_local_file_is_taken_out() {
    let tree = Tree::new();
    let outside = tree.outside_uri();
    let mut host = start(&tree, "2026-07-28", &[NO_INFER_ELICIT], &[], None);
    for url in [outside.clone(), format!("view-source:{outside}")] {
        let r = host.request(
            "tools/call",
            json!({"name": "elicit", "arguments": {"url": url}}),
        );
        assert_eq!(r["result"]["resultType"], "input_required", "{r}");
        assert!(
            r["result"]["inputRequests"]
                .as_object()
                .is_none_or(|m| !m.contains_key("hostile-elicit")),
            "{r}"
        );
        assert!(!r.to_string().contains("secret-place"), "{r}");
    }
    let r = host.request(
        "tools/call",
        json!({"name": "elicit", "arguments": {"url": "https://example.com/login"}}),
    );
    assert_eq!(
        r["result"]["inputRequests"]["hostile-elicit"]["params"]["url"],
        "https://example.com/login",
        "{r}"
    );
    assert_no_secret(&host);
    finish(host, &tree);
}

// -------------------------------------------------------------------------------------------
// Issue 12: built-in tool rules for their own server only; tool denials as tool errors
// -------------------------------------------------------------------------------------------

/// desktop-commander's `read_file` takes URLs (`{"path": "https://…", "isUrl": true}`): the
/// reference filesystem server's built-in path rules must not judge it
/// (`denied: https://example.com/ (relative_path)` was the bug). They still judge the
/// reference server's own `read_file`, and every server's while its name is unknown.
#[test]
fn builtin_tool_rules_apply_only_to_the_server_they_describe() {
    let url_call = json!({"path": "https://example.com/", "isUrl": true});
    for rev in ["2025-06-18", "2026-07-28"] {
        // Another server: the call reaches it untouched.
        let tree = Tree::new();
        let mut host = start(&tree, rev, &[], &["--name", "desktop-commander"], None);
        let id = host.send_request(
            "tools/call",
            json!({"name": "read_file", "arguments": url_call}),
        );
        let r = host.response(id);
        assert!(
            r["result"]["_meta"].get("io.rootfence/denial").is_none(),
            "{rev}: not refused by rootfence: {r}"
        );
        finish(host, &tree);
        assert!(
            server_saw_id(&tree.file("server.log"), id),
            "{rev}: the server got the call"
        );
        // The reference filesystem server (the hostile server's default name): refused,
        // with what to send instead.
        let tree = Tree::new();
        let mut host = start(&tree, rev, &[], &[], None);
        let (r, _) = host.call_tool("read_file", url_call.clone());
        let text = hostile::assert_tool_denied(&r, &["relative_path"]);
        assert!(
            text.contains("Use an absolute path inside one of the allowed roots"),
            "{text}"
        );
        assert!(text.contains(&tree.root_str()), "{text}");
        finish(host, &tree);
    }
    // 2026-07-28 before the server has named itself (no server/discover yet): every rule
    // applies, so the unknown server is checked more, never less.
    let tree = Tree::new();
    let audit = tree.file("audit.jsonl");
    let o = opts(&tree, &audit, &[], true);
    let mut host = Host::start(
        &o,
        &tree.server(&tree.file("server.log"), &["--name", "desktop-commander"]),
        "2026-07-28",
    );
    host.caps = json!({});
    let (r, _) = host.call_tool(
        "read_file",
        json!({"path": format!("{}/../secret-place/secret.txt", tree.root_str())}),
    );
    hostile::assert_tool_denied(&r, &[]);
    assert_eq!(r["result"]["resultType"], "complete", "{r}");
    finish(host, &tree);
}

/// SEP-1303: every tool-call denial is a tool execution error the model can act on, in every
/// revision (each revision's CallToolResult has `isError`), audited as a denial; a
/// `resources/*` denial stays a JSON-RPC error.
#[test]
fn tool_call_denials_are_tool_errors_that_say_what_to_do() {
    let policy = "version = 1\n[tools]\ndeny = [\"run_*\"]\n";
    for rev in hostile::REVISIONS {
        let tree = Tree::new();
        let mut host = start(&tree, rev, &[policy], &[], None);
        let root = tree.root_str();
        // A protected file inside the root: which rule refused it, and not to retry.
        let (r, _) = host.call_tool("read_text_file", json!({"path": format!("{root}/.env")}));
        let text = hostile::assert_tool_denied(&r, &["policy_deny"]);
        assert!(
            text.contains("is protected by the policy (rule: builtin:default line")
                && text.contains("\"**/.env\"")
                && text.contains("Do not retry this path"),
            "{rev}: {text}"
        );
        // A relative path: send an absolute one inside the roots.
        let (r, _) = host.call_tool("read_text_file", json!({"path": "a.txt"}));
        let text = hostile::assert_tool_denied(&r, &["relative_path"]);
        assert!(
            text.contains("is a relative path")
                && text.contains(&format!("the allowed roots are: {root}")),
            "{rev}: {text}"
        );
        // A denied tool: do not call it again.
        let (r, _) = host.call_tool("run_anything", json!({}));
        let text = hostile::assert_tool_denied(&r, &["tool_denied"]);
        assert!(
            text.contains("does not allow the tool `run_anything`") && text.contains("run_*"),
            "{rev}: {text}"
        );
        // A path that is not a string.
        let (r, _) = host.call_tool("read_text_file", json!({"path": 7}));
        hostile::assert_tool_denied(&r, &["not_a_path"]);
        if hostile::at_least(rev, "2026-07-28") {
            assert_eq!(r["result"]["resultType"], "complete", "{r}");
        } else {
            assert!(r["result"].get("resultType").is_none(), "{r}");
        }
        // resources/read is not a tool call: its denial stays a JSON-RPC error.
        let r = host.request("resources/read", json!({"uri": tree.uri(".env")}));
        assert_denied(&r, None, &["policy_deny"]);
        let records = finish(host, &tree);
        let denials: Vec<&Value> = records
            .iter()
            .filter(|r| {
                r["event"] == "decision"
                    && r["method"] == "tools/call"
                    && r["decision"] == "deny"
                    && r["action"] == "answered_error"
            })
            .collect();
        assert_eq!(
            denials.len(),
            4,
            "{rev}: every refused call is audited as a denial"
        );
    }
}
