//! Enforcement end to end (issue 6): a scripted host (this test) talks to `rootfence run
//! --root <root> --audit-log <log> -- hostile_server ...` through the real binary, in every
//! protocol revision, while the hostile server (`examples/hostile_server.rs`) tries every
//! leak we know. Each scenario asserts that nothing outside the root reaches the host (every
//! byte the host receives is searched for the secret and for outside names), that everything
//! inside still works, the exact denial error, that the server never sees denied requests,
//! and the audit records; `rootfence audit verify` must pass on every log.
//!
//! The tree (tests/common/hostile.rs): `<base>/root` is the root (operator `--root`);
//! `<base>/root_evil` its string-prefix sibling; `<base>/secret-place/secret.txt` the secret;
//! the root holds symlinks and a hard link that lead out, and `.env`/`key.pem`/`.git/config`
//! that the default policy denies. In handshake revisions the host declares the roots
//! `[root, root_evil, base, /]`, which rootfence must narrow to `[root]`.

mod common;
#[path = "common/hostile.rs"]
mod hostile;

use std::path::PathBuf;

use hostile::{
    Host, MARKER, Tree, assert_audit_verifies, assert_denied, assert_tool_denied, at_least,
    audit_records, decisions_for, norm, opts, server_log, server_log_text, server_saw_id,
};
use serde_json::{Value, json};

thread_local! {
    /// Extra hostile-server options for the running test (set by `per_revision!` entries
    /// written `name [options] => rev`).
    static SERVER_EXTRA: std::cell::RefCell<Vec<String>> = const { std::cell::RefCell::new(Vec::new()) };
}

fn server_extra() -> Vec<String> {
    SERVER_EXTRA.with(|e| e.borrow().clone())
}

/// One test's world: the tree, the host on rootfence's stdio, the audit and server logs.
struct S {
    tree: Tree,
    host: Host,
    audit: PathBuf,
    log: PathBuf,
}

impl S {
    /// rootfence with `--root <root>` (when `operator_root`), `--audit-log`, `policies`
    /// (file contents, written to the tree), and a host declaring `host_roots` (when some).
    fn start(
        rev: &str,
        operator_root: bool,
        policies: &[&str],
        host_roots: impl Fn(&Tree) -> Option<Vec<String>>,
        server_extra: &[&str],
    ) -> S {
        let tree = Tree::new();
        let host_roots = host_roots(&tree);
        let audit = tree.file("audit.jsonl");
        let log = tree.file("server.log");
        let policy_files: Vec<PathBuf> = policies
            .iter()
            .enumerate()
            .map(|(i, text)| {
                if let Some(builtin) = text.strip_prefix("builtin:") {
                    PathBuf::from(format!("builtin:{builtin}"))
                } else {
                    tree.policy(&format!("policy{i}.toml"), text)
                }
            })
            .collect();
        let policy_refs: Vec<&std::path::Path> = policy_files.iter().map(|p| p.as_path()).collect();
        let o = opts(&tree, &audit, &policy_refs, operator_root);
        let mut extra: Vec<String> = server_extra.iter().map(|s| s.to_string()).collect();
        extra.extend(crate::server_extra());
        let extra: Vec<&str> = extra.iter().map(String::as_str).collect();
        let server = tree.server(&log, &extra);
        let mut host = Host::start(&o, &server, rev);
        let mut caps = json!({"sampling": {}});
        if host_roots.is_some() {
            caps["roots"] = json!({"listChanged": true});
        }
        host.roots = host_roots;
        host.begin(caps);
        S {
            tree,
            host,
            audit,
            log,
        }
    }

    /// The usual world: operator root, default policy, a host declaring roots wider than and
    /// beside the root; in 2026-07-28 the roots are settled by a first (MRTR) call.
    fn standard(rev: &str) -> S {
        let mut s = S::start(rev, true, &[], wide_host_roots, &[]);
        if s.host.modern() {
            let (r, _) = s.host.call_tool("echo_args", json!({}));
            assert!(r.get("result").is_some(), "the priming call works: {r}");
        }
        s
    }

    fn uri(&self, rel: &str) -> String {
        self.tree.uri(rel)
    }

    /// Ends the session and checks what every session must show: a clean exit, no leak,
    /// a verifiable audit log.
    fn finish(mut self) -> (Vec<Value>, Tree, PathBuf, Host) {
        let code = self.host.finish();
        assert_eq!(
            code,
            0,
            "rootfence exits 0; stderr:\n{}",
            self.host.stderr()
        );
        self.host.assert_no_leak(&self.tree);
        assert_audit_verifies(&self.audit);
        let records = audit_records(&self.audit);
        (records, self.tree, self.log, self.host)
    }
}

/// The roots a careless host declares: the root, its sibling, its parent and `/`.
fn wide_host_roots(t: &Tree) -> Option<Vec<String>> {
    Some(vec![
        t.root_uri(),
        format!("file://{}", t.evil.display()),
        t.base_uri(),
        "file:///".into(),
    ])
}

fn no_host_roots(_: &Tree) -> Option<Vec<String>> {
    None
}

macro_rules! per_revision {
    ($scenario:ident: $($(#[$m:meta])* $name:ident $([$($opt:literal),*])? => $rev:literal),* $(,)?) => {
        $(
            $(#[$m])*
            #[test]
            fn $name() {
                SERVER_EXTRA.with(|e| *e.borrow_mut() = vec![$($($opt.to_string()),*)?]);
                $scenario($rev)
            }
        )*
    };
}

// The 2025-11-25 suites fail since e513884 (main) because of one bug, pinned by
// `tests/enforce_attacks.rs::icons_outside_the_roots_are_removed_when_nothing_else_changes`;
// their `_no_icons` twins run everything else against a server that sends no icons.

// -------------------------------------------------------------------------------------------
// The direct run: what the hostile server sends with nobody in between
// -------------------------------------------------------------------------------------------

/// Every `resources/list` page the server sends directly (no rootfence), as the host would
/// see it: the reference the filtered pages are compared with.
fn direct_pages(rev: &str, tree: &Tree) -> Vec<Value> {
    let log = tree.file("direct.log");
    let extra = server_extra();
    let extra: Vec<&str> = extra.iter().map(String::as_str).collect();
    let server = tree.server(&log, &extra);
    let mut cmd = std::process::Command::new(&server[0]);
    cmd.args(&server[1..]);
    let mut child = cmd
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let meta = json!({"io.modelcontextprotocol/protocolVersion": rev,
                      "io.modelcontextprotocol/clientCapabilities": {}});
    let mut input = String::new();
    if !at_least(rev, "2026-07-28") {
        input.push_str(&format!(
            "{}\n",
            json!({"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":rev,"capabilities":{},"clientInfo":{"name":"x","version":"1"}}})
        ));
    }
    // Enough pages for any catalogue: the server stops giving cursors at the end.
    for page in 0..40 {
        let mut params = json!({"_meta": meta});
        if page > 0 {
            params["cursor"] = json!(format!("opaque %2e%2e?&/{page}"));
        }
        input.push_str(&format!(
            "{}\n",
            json!({"jsonrpc":"2.0","id":page + 1,"method":"resources/list","params":params})
        ));
    }
    use std::io::Write;
    child
        .stdin
        .take()
        .unwrap()
        .write_all(input.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    let mut pages = Vec::new();
    for line in String::from_utf8(out.stdout).unwrap().lines() {
        let v: Value = serde_json::from_str(line).unwrap();
        if v["id"] == 0 {
            continue;
        }
        let last = v["result"].get("nextCursor").is_none();
        pages.push(v["result"].clone());
        if last {
            break;
        }
    }
    pages
}

fn names(resources: &Value) -> Vec<String> {
    resources
        .as_array()
        .into_iter()
        .flatten()
        .map(|r| r["name"].as_str().unwrap_or_default().to_owned())
        .collect()
}

// -------------------------------------------------------------------------------------------
// resources/list and resources/templates/list
// -------------------------------------------------------------------------------------------

fn lists(rev: &str) {
    let mut s = S::standard(rev);
    let direct = direct_pages(rev, &s.tree);
    assert!(direct.len() >= 5, "the catalogue spans several pages");
    let mut cursor: Option<Value> = None;
    let mut got = Vec::new();
    loop {
        let params = match &cursor {
            Some(c) => json!({"cursor": c}),
            None => json!({}),
        };
        let r = s.host.request("resources/list", params);
        assert!(r.get("result").is_some(), "resources/list works: {r}");
        got.push(r["result"].clone());
        match r["result"].get("nextCursor") {
            Some(c) => cursor = Some(c.clone()),
            None => break,
        }
        assert!(got.len() <= direct.len(), "more pages than the server has");
    }
    assert_eq!(
        got.len(),
        direct.len(),
        "every page arrives, even one left empty"
    );
    let mut empty_page_seen = false;
    for (i, (g, d)) in got.iter().zip(&direct).enumerate() {
        assert_eq!(
            g.get("nextCursor"),
            d.get("nextCursor"),
            "page {i}: the cursor is untouched"
        );
        let expected: Vec<String> = names(&d["resources"])
            .into_iter()
            .filter(|n| !n.starts_with("leak-"))
            .collect();
        assert_eq!(
            names(&g["resources"]),
            expected,
            "page {i}: exactly the inside (and other-scheme) entries pass"
        );
        empty_page_seen |= expected.is_empty();
        for r in g["resources"].as_array().unwrap() {
            let d = d["resources"]
                .as_array()
                .unwrap()
                .iter()
                .find(|x| x["name"] == r["name"])
                .unwrap();
            let name = r["name"].as_str().unwrap();
            if name == "in-dotdot" || name == "in-localhost" {
                // Forwarded as sent, or in canonical form.
                assert!(
                    r["uri"] == d["uri"] || r["uri"] == json!(s.uri("a.txt")),
                    "{name}: {r}"
                );
            } else {
                assert_eq!(r["uri"], d["uri"], "{name}: an inside entry is unchanged");
            }
            if name == "in-a"
                && at_least(rev, "2025-11-25")
                && !server_extra().iter().any(|o| o == "--no-icons")
            {
                let srcs: Vec<&Value> = r["icons"]
                    .as_array()
                    .expect("the icons stay")
                    .iter()
                    .map(|i| &i["src"])
                    .collect();
                assert_eq!(
                    srcs,
                    [
                        &json!(s.uri("icon.png")),
                        &json!("https://example.com/icon.png")
                    ],
                    "only the file: icon outside the roots is removed"
                );
            }
        }
    }
    assert!(
        empty_page_seen,
        "one page was made only of escapes (and arrived empty)"
    );

    let t = s.host.request("resources/templates/list", json!({}));
    let kept = names(&t["result"]["resourceTemplates"]);
    for must in ["tpl-in-name", "tpl-in-sub", "tpl-scheme-test"] {
        assert!(kept.contains(&must.to_string()), "{must} stays: {kept:?}");
    }
    let leaked: Vec<&String> = kept.iter().filter(|n| n.starts_with("tpl-leak-")).collect();
    assert!(
        leaked.is_empty(),
        "templates that can only leave the root are removed: {leaked:?}"
    );

    let (records, tree, _, _) = s.finish();
    // Every removed entry is audited as filtered from the list result.
    let evil = tree.evil_uri();
    let d = decisions_for(&records, &evil);
    assert!(
        d.iter().any(|r| r["decision"] == "deny"
            && r["action"] == "filtered"
            && r["method"] == "resources/list"
            && r["direction"] == "server_to_host"
            && r["reason"] == "outside_roots"),
        "the sibling's removal from the list is audited: {d:?}"
    );
    let env = tree.uri(".env");
    let d = decisions_for(&records, &env);
    assert!(
        d.iter().any(|r| r["decision"] == "deny"
            && r["action"] == "filtered"
            && r["reason"] == "policy_deny"
            && r["rule"].as_str().is_some_and(|x| x.contains(".env"))),
        "the .env removal names the policy rule: {d:?}"
    );
}

per_revision!(lists:
    lists_2024_11_05 => "2024-11-05",
    lists_2025_03_26 => "2025-03-26",
    lists_2025_06_18 => "2025-06-18",
    lists_2025_11_25 => "2025-11-25",
    lists_2025_11_25_no_icons ["--no-icons"] => "2025-11-25",
    lists_2026_07_28 => "2026-07-28",
);

// -------------------------------------------------------------------------------------------
// resources/read requests from the host
// -------------------------------------------------------------------------------------------

/// Host-sent URIs that must be refused, with the reason codes each may carry.
fn denied_reads(t: &Tree) -> Vec<(String, &'static [&'static str])> {
    let o = t.outside.display().to_string();
    let rel = "secret-place/secret.txt";
    vec![
        (t.evil_uri(), &["outside_roots"][..]),
        (format!("file://{}", t.evil.display()), &["outside_roots"]),
        (
            t.uri(&format!("../{rel}")),
            &["outside_roots", "dot_segment"],
        ),
        (
            t.uri(&format!("sub/../../{rel}")),
            &["outside_roots", "dot_segment"],
        ),
        (t.uri(&format!("%2e%2e/{rel}")), &["dot_segment"]),
        (t.uri(&format!("%2E%2E/{rel}")), &["dot_segment"]),
        (t.uri(&format!(".%2e/{rel}")), &["dot_segment"]),
        (
            t.uri("..%2fsecret-place%2fsecret.txt"),
            &["encoded_separator"],
        ),
        (
            t.uri("..%5csecret-place%5csecret.txt"),
            &["encoded_separator"],
        ),
        (t.uri(&format!("%252e%252e/{rel}")), &["double_encoding"]),
        (
            format!("file://{}\\..\\secret-place\\secret.txt", t.root.display()),
            &["backslash"],
        ),
        (
            format!("file://evilhost{}/a.txt", t.root.display()),
            &["non_local_host"],
        ),
        (format!("file://127.0.0.1{o}"), &["non_local_host"]),
        (format!("file://{o}"), &["outside_roots"]),
        (format!("file:{o}"), &["outside_roots"]),
        (format!("FILE://{o}"), &["outside_roots"]),
        (t.uri("link_out"), &["symlink_escape"]),
        (t.uri("link_rel_out"), &["symlink_escape"]),
        (t.uri("dir_out/secret.txt"), &["symlink_escape"]),
        (t.uri("evil_link/secret.txt"), &["symlink_escape"]),
        (t.uri("proclink"), &["symlink_escape", "symlink_loop"]),
        (t.uri("loop1"), &["symlink_loop"]),
        (t.uri("dangle"), &["symlink_escape", "dangling_symlink"]),
        (t.uri("hard_out"), &["hard_link"]),
        (format!("file:///proc/self/root{o}"), &["outside_roots"]),
        ("file:///etc/passwd".into(), &["outside_roots"]),
        (t.uri(".env"), &["policy_deny"]),
        (t.uri("key.pem"), &["policy_deny"]),
        (t.uri(".git/config"), &["policy_deny"]),
        (t.uri("a.txt%00.pem"), &["control_character"]),
        (t.uri(&format!("a.txt?../../{rel}")), &["query_or_fragment"]),
        (format!("file:////evilhost/share{o}"), &["windows_path"]),
        (format!("file:///c:/{rel}"), &["windows_path"]),
        (
            t.uri(&format!("%EF%BC%8E%EF%BC%8E/{rel}")),
            &["dot_segment"],
        ),
        (t.uri(&format!("%C0%AE%C0%AE/{rel}")), &["bad_encoding"]),
        (format!(" file://{o}"), &["whitespace", "not_a_uri"]),
        // Not a URI at all: no scheme to allow.
        (o.clone(), &["not_a_file_uri", "not_a_uri", "relative_path"]),
        (
            format!("../{rel}"),
            &["not_a_file_uri", "not_a_uri", "relative_path"],
        ),
    ]
}

fn host_reads(rev: &str) {
    let mut s = S::standard(rev);
    // Inside: read, and what the server sees is the canonical URI.
    for (rel, text) in [
        ("a.txt", "inside a\n"),
        ("sub/b.txt", "nested b\n"),
        ("link_in", "inside a\n"),
        ("with%20space.txt", "spaced\n"),
        ("caf%C3%A9.txt", "unicode\n"),
    ] {
        let uri = s.uri(rel);
        let r = s.host.request("resources/read", json!({"uri": uri}));
        assert_eq!(
            r["result"]["contents"][0]["text"], text,
            "{rel} reads through rootfence: {r}"
        );
    }
    let id = s
        .host
        .send_request("resources/read", json!({"uri": s.uri("sub/../a.txt")}));
    let r = s.host.response(id);
    assert_eq!(r["result"]["contents"][0]["text"], "inside a\n", "{r}");
    let seen = server_log(&s.log)
        .into_iter()
        .find(|m| m["id"] == json!(id))
        .expect("the server saw the read");
    assert_eq!(
        seen["params"]["uri"],
        s.uri("a.txt"),
        "the forwarded URI is the canonical one"
    );
    let r = s
        .host
        .request("resources/read", json!({"uri": "test://static/1"}));
    assert_eq!(r["result"]["contents"][0]["text"], "test resource", "{r}");

    // Outside, or refused by policy: denied by rootfence, never seen by the server.
    let mut denied_ids = Vec::new();
    let table = denied_reads(&s.tree);
    for (uri, reasons) in &table {
        let id = s.host.send_request("resources/read", json!({"uri": uri}));
        let r = s.host.response(id);
        assert_denied(&r, Some(uri), reasons);
        if reasons.contains(&"policy_deny") {
            assert!(
                r["error"]["data"]["rule"].as_str().is_some(),
                "a policy denial names its rule: {r}"
            );
        }
        denied_ids.push((id, uri.clone(), r["error"]["data"]["reason"].clone()));
    }
    // A cancellation for a request rootfence answered itself goes nowhere.
    let (cancelled, _, _) = denied_ids[0].clone();
    let note = json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
                      "params": s.host.params(json!({"requestId": cancelled, "reason": "test"}))});
    s.host.send(&note);

    // completion/complete with ref/resource.
    let r = s.host.request(
        "completion/complete",
        json!({"ref": {"type": "ref/resource", "uri": "file:///etc/{x}"},
               "argument": {"name": "x", "value": "pa"}}),
    );
    assert_denied(&r, Some("file:///etc/{x}"), &[]);
    let inside_tpl = format!("file://{}/{{name}}", s.tree.root.display());
    let r = s.host.request(
        "completion/complete",
        json!({"ref": {"type": "ref/resource", "uri": inside_tpl},
               "argument": {"name": "name", "value": "a"}}),
    );
    assert_eq!(r["result"]["completion"]["values"][0], "a.txt", "{r}");

    // 2026-07-28: a missing resource is -32602 and passes as the server said.
    let r = s
        .host
        .request("resources/read", json!({"uri": s.uri("missing.txt")}));
    let code = if at_least(rev, "2026-07-28") {
        -32602
    } else {
        -32002
    };
    assert_eq!(r["error"]["code"], code, "{r}");

    s.host.settle(200);
    let (records, _tree, log, _) = s.finish();
    for (id, uri, reason) in &denied_ids {
        assert!(
            !server_saw_id(&log, *id),
            "the server saw the denied read of {uri}"
        );
        let d = decisions_for(&records, uri);
        assert!(
            d.iter().any(|r| r["decision"] == "deny"
                && r["reason"] == *reason
                && r["action"] == "answered_error"
                && r["direction"] == "host_to_server"
                && r["method"] == "resources/read"
                && r["id"] == json!(id)),
            "the denial of {uri} is audited with its reason and action: {d:?}"
        );
    }
    let log_text = server_log_text(&log);
    assert!(
        !log_text.contains("notifications/cancelled"),
        "the cancellation of a request rootfence answered never reaches the server"
    );
    assert!(
        !log_text.contains("/etc/{x}"),
        "the denied completion never reaches the server"
    );
}

per_revision!(host_reads:
    host_reads_2024_11_05 => "2024-11-05",
    host_reads_2025_03_26 => "2025-03-26",
    host_reads_2025_06_18 => "2025-06-18",
    host_reads_2025_11_25 => "2025-11-25",
    host_reads_2025_11_25_no_icons ["--no-icons"] => "2025-11-25",
    host_reads_2026_07_28 => "2026-07-28",
);

// -------------------------------------------------------------------------------------------
// resources/read results the server substitutes
// -------------------------------------------------------------------------------------------

const LIMITS_POLICY: &str = r#"
version = 1
[resources]
max_bytes = "1 KiB"
mime = ["text/*"]
"#;

fn substituted_reads(rev: &str) {
    let mut s = S::start(
        rev,
        true,
        &["builtin:default", LIMITS_POLICY],
        no_host_roots,
        &[],
    );
    // Every item substituted with an outside one: none left, so the host gets the denial.
    for name in [
        "swap.txt",
        "encoded-swap.txt",
        "link-swap.txt",
        "case-swap.txt",
        "bare-swap.txt",
        "blob-swap.txt",
        "no-uri.txt",
        "number-uri.txt",
    ] {
        let uri = s.uri(name);
        let r = s.host.request("resources/read", json!({"uri": uri}));
        assert_denied(&r, None, &[]);
        assert!(
            !r.to_string().contains(MARKER),
            "{name}: the substituted content never arrives"
        );
    }
    // Extra items: only the inside ones stay (a sub-resource of another inside URI is fine).
    let r = s
        .host
        .request("resources/read", json!({"uri": s.uri("extra.txt")}));
    let contents = r["result"]["contents"]
        .as_array()
        .expect("a result")
        .clone();
    let uris: Vec<&Value> = contents.iter().map(|c| &c["uri"]).collect();
    assert_eq!(
        uris,
        [&json!(s.uri("extra.txt")), &json!(s.uri("sub/b.txt"))],
        "{r}"
    );
    // Over max_bytes, wrong MIME, no MIME under a MIME list: removed.
    let r = s
        .host
        .request("resources/read", json!({"uri": s.uri("big.txt")}));
    let texts: Vec<&Value> = r["result"]["contents"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| &c["text"])
        .collect();
    assert_eq!(texts, [&json!("small inside")], "{r}");
    let r = s
        .host
        .request("resources/read", json!({"uri": s.uri("mime.txt")}));
    assert_eq!(
        r["result"]["contents"],
        json!([{"uri": s.uri("mime.txt"), "mimeType": "text/plain", "text": "plain inside"}]),
        "{r}"
    );
    let (records, tree, _, _) = s.finish();
    let big = tree.uri("big.txt");
    let mime = tree.uri("mime.txt");
    assert!(
        records.iter().any(|r| r["event"] == "decision"
            && r["uri"] == big
            && r["reason"] == "too_large"
            && r["action"] == "filtered"),
        "the oversized item is audited"
    );
    assert!(
        records.iter().any(|r| r["event"] == "decision"
            && r["uri"] == mime
            && r["reason"] == "mime_denied"
            && r["action"] == "filtered"),
        "the wrong MIME type is audited"
    );
    assert!(
        records.iter().any(|r| r["event"] == "decision"
            && r["method"] == "resources/read"
            && r["direction"] == "server_to_host"
            && r["uri"] == tree.outside_uri()
            && r["decision"] == "deny"),
        "the substituted outside item is audited"
    );
}

per_revision!(substituted_reads:
    substituted_reads_2024_11_05 => "2024-11-05",
    substituted_reads_2025_03_26 => "2025-03-26",
    substituted_reads_2025_06_18 => "2025-06-18",
    substituted_reads_2025_11_25 => "2025-11-25",
    substituted_reads_2025_11_25_no_icons ["--no-icons"] => "2025-11-25",
    substituted_reads_2026_07_28 => "2026-07-28",
);

// -------------------------------------------------------------------------------------------
// Embedded resources and links: tools/call, prompts/get, tasks/result
// -------------------------------------------------------------------------------------------

/// The blocks of `embed` that must stay, in order.
fn kept_blocks(s: &S, rev: &str) -> Vec<Value> {
    let mut v = vec![
        json!({"type": "text", "text": "embedded resources follow"}),
        json!({"type": "resource", "resource": {"uri": s.uri("a.txt"), "mimeType": "text/plain", "text": "inside a"}}),
        json!({"type": "resource", "resource": {"uri": "test://static/1", "mimeType": "text/plain", "text": "other scheme content"}}),
    ];
    if at_least(rev, "2025-06-18") {
        v.push(json!({"type": "resource_link", "uri": s.uri("sub/b.txt"), "name": "in-b", "mimeType": "text/plain"}));
    }
    v
}

fn embedded(rev: &str) {
    let mut s = S::standard(rev);
    let (r, _) = s.host.call_tool("embed", json!({}));
    assert_eq!(
        r["result"]["content"],
        json!(kept_blocks(&s, rev)),
        "only the inside blocks stay: {r}"
    );
    let r = s
        .host
        .request("prompts/get", json!({"name": "leaky", "arguments": {}}));
    let mut expected = vec![
        json!({"role": "user", "content": {"type": "text", "text": "read these"}}),
        json!({"role": "user", "content": {"type": "resource", "resource": {"uri": s.uri("a.txt"), "mimeType": "text/plain", "text": "inside a"}}}),
    ];
    if at_least(rev, "2025-06-18") {
        expected.push(json!({"role": "user", "content": {"type": "resource_link", "uri": s.uri("sub/b.txt"), "name": "in-b", "mimeType": "text/plain"}}));
    }
    assert_eq!(
        r["result"]["messages"],
        json!(expected),
        "only the inside messages stay: {r}"
    );
    if rev == "2025-11-25" {
        // A task-augmented call: the result comes through tasks/result and is filtered there.
        let r = s.host.request(
            "tools/call",
            json!({"name": "embed", "arguments": {}, "task": {"ttl": 60000}}),
        );
        assert_eq!(r["result"]["task"]["taskId"], "task-1", "{r}");
        let r = s.host.request("tasks/result", json!({"taskId": "task-1"}));
        assert_eq!(
            r["result"]["content"],
            json!(kept_blocks(&s, rev)),
            "tasks/result is filtered like tools/call: {r}"
        );
    }
    let (records, tree, _, _) = s.finish();
    let out = tree.outside_uri();
    let d = decisions_for(&records, &out);
    assert!(
        d.iter().any(|r| r["method"] == "tools/call"
            && r["decision"] == "deny"
            && r["action"] == "filtered"),
        "the embedded outside resource's removal is audited: {d:?}"
    );
}

per_revision!(embedded:
    embedded_2024_11_05 => "2024-11-05",
    embedded_2025_03_26 => "2025-03-26",
    embedded_2025_06_18 => "2025-06-18",
    embedded_2025_11_25 => "2025-11-25",
    embedded_2025_11_25_no_icons ["--no-icons"] => "2025-11-25",
    embedded_2026_07_28 => "2026-07-28",
);

/// A `resource_link` in a revision that predates it (a hostile server does not care, and a
/// host SDK that knows the newer type may display it): it must not carry an outside URI
/// through either.
fn links_in_old_revisions(rev: &str) {
    let mut s = S::standard(rev);
    let (r, _) = s.host.call_tool("embed_links_anyway", json!({}));
    assert!(r.get("result").is_some(), "{r}");
    s.finish();
}

per_revision!(links_in_old_revisions:
    resource_links_in_2024_11_05_are_checked_too => "2024-11-05",
    resource_links_in_2025_03_26_are_checked_too => "2025-03-26",
);

// -------------------------------------------------------------------------------------------
// Tool path arguments ([[tools.paths]] of the default policy)
// -------------------------------------------------------------------------------------------

fn tool_paths(rev: &str) {
    let mut s = S::standard(rev);
    let root = s.tree.root_str();
    let base = s.tree.base.display().to_string();
    let (r, _) = s
        .host
        .call_tool("read_text_file", json!({"path": format!("{root}/a.txt")}));
    assert_eq!(r["result"]["content"][0]["text"], "inside a\n", "{r}");
    // Forwarded in canonical form.
    let (r, _) = s.host.call_tool(
        "read_text_file",
        json!({"path": format!("{root}/sub/../a.txt")}),
    );
    assert_eq!(r["result"]["content"][0]["text"], "inside a\n", "{r}");
    assert!(
        server_log(&s.log)
            .iter()
            .any(|m| m["params"]["name"] == "read_text_file"
                && m["params"]["arguments"]["path"] == format!("{root}/a.txt")),
        "the path argument is forwarded in canonical form"
    );
    let mut denied = Vec::new();
    for path in [
        format!("{base}/root_evil/secret.txt"),
        format!("{base}/secret-place/secret.txt"),
        format!("{root}/../secret-place/secret.txt"),
        format!("{root}/link_out"),
        format!("{root}/dir_out/secret.txt"),
        format!("{root}/.env"),
        "/etc/passwd".to_string(),
        format!("{root}/%2e%2e/secret-place/secret.txt"),
    ] {
        let id = s.host.send_request(
            "tools/call",
            json!({"name": "read_text_file", "arguments": {"path": path}}),
        );
        let r = s.host.response(id);
        let text = assert_tool_denied(&r, &[]);
        // Every refusal tells the model what to send instead.
        assert!(
            text.contains(&root) && text.contains("allowed roots"),
            "the text names the allowed root: {text}"
        );
        if r["result"]["_meta"][hostile::TOOL_DENIAL]["reason"] == "outside_roots" {
            assert!(
                text.contains("Use an absolute path inside one of the allowed roots"),
                "{text}"
            );
        }
        if at_least(rev, "2026-07-28") {
            assert_eq!(r["result"]["resultType"], "complete", "{r}");
        }
        denied.push(id);
    }
    let id = s.host.send_request(
        "tools/call",
        json!({"name": "read_multiple_files", "arguments": {"paths": [
            format!("{root}/a.txt"), format!("{base}/secret-place/secret.txt")
        ]}}),
    );
    let r = s.host.response(id);
    assert_tool_denied(&r, &["outside_roots"]);
    denied.push(id);
    let (_, _tree, log, _) = s.finish();
    for id in denied {
        assert!(!server_saw_id(&log, id), "the server saw denied call {id}");
    }
}

per_revision!(tool_paths:
    tool_paths_2024_11_05 => "2024-11-05",
    tool_paths_2025_03_26 => "2025-03-26",
    tool_paths_2025_06_18 => "2025-06-18",
    tool_paths_2025_11_25 => "2025-11-25",
    tool_paths_2025_11_25_no_icons ["--no-icons"] => "2025-11-25",
    tool_paths_2026_07_28 => "2026-07-28",
);

// -------------------------------------------------------------------------------------------
// Subscriptions and updated notifications
// -------------------------------------------------------------------------------------------

fn subscriptions(rev: &str) {
    let mut s = S::standard(rev);
    let a = s.uri("a.txt");
    if at_least(rev, "2026-07-28") {
        let uris = json!([
            a,
            s.tree.evil_uri(),
            s.uri("%2e%2e/secret-place/secret.txt"),
            s.uri(".env")
        ]);
        let id = s.host.send_request(
            "subscriptions/listen",
            json!({"notifications": {"resourceSubscriptions": uris}}),
        );
        let ack = s
            .host
            .notification("notifications/subscriptions/acknowledged");
        assert_eq!(
            ack["params"]["notifications"]["resourceSubscriptions"],
            json!([a]),
            "the server was asked only for the inside URI: {ack}"
        );
        s.host.settle(500);
        let forwarded = server_log(&s.log)
            .into_iter()
            .find(|m| m["id"] == json!(id))
            .expect("the listen reached the server");
        assert_eq!(
            forwarded["params"]["notifications"]["resourceSubscriptions"],
            json!([a])
        );
    } else {
        let r = s.host.request("resources/subscribe", json!({"uri": a}));
        assert_eq!(r["result"], json!({}), "{r}");
        for uri in [s.tree.evil_uri(), s.tree.outside_uri(), s.uri("link_out")] {
            let id = s
                .host
                .send_request("resources/subscribe", json!({"uri": uri}));
            assert_denied(&s.host.response(id), Some(&uri), &[]);
            assert!(!server_saw_id(&s.log, id));
            let id = s
                .host
                .send_request("resources/unsubscribe", json!({"uri": uri}));
            assert_denied(&s.host.response(id), Some(&uri), &[]);
        }
        let (r, _) = s.host.call_tool("notify", json!({}));
        assert!(r.get("result").is_some(), "{r}");
        s.host.settle(500);
    }
    let updates: Vec<Value> = s
        .host
        .take_notes("notifications/resources/updated")
        .into_iter()
        .map(|n| n["params"]["uri"].clone())
        .collect();
    assert!(
        !updates.is_empty() && updates.iter().all(|u| *u == json!(a)),
        "only updates for the subscribed inside URI arrive (never-subscribed inside ones are \
         dropped too): {updates:?}"
    );
    let (records, tree, _, _) = s.finish();
    let d = decisions_for(&records, &tree.outside_uri());
    assert!(
        d.iter()
            .any(|r| r["method"] == "notifications/resources/updated"
                && r["decision"] == "deny"
                && r["action"] == "dropped"),
        "the dropped update is audited: {d:?}"
    );
}

per_revision!(subscriptions:
    subscriptions_2024_11_05 => "2024-11-05",
    subscriptions_2025_03_26 => "2025-03-26",
    subscriptions_2025_06_18 => "2025-06-18",
    subscriptions_2025_11_25 => "2025-11-25",
    subscriptions_2025_11_25_no_icons ["--no-icons"] => "2025-11-25",
    subscriptions_2026_07_28 => "2026-07-28",
);

// -------------------------------------------------------------------------------------------
// Roots: rootfence's own roots/list, the server's requests, narrowing, sampling
// -------------------------------------------------------------------------------------------

fn roots_of(text: &Value) -> Vec<String> {
    let v: Value = serde_json::from_str(text.as_str().expect("a text block")).unwrap();
    v["roots"]
        .as_array()
        .unwrap_or_else(|| panic!("the server got roots: {v}"))
        .iter()
        .map(|r| norm(r["uri"].as_str().unwrap()))
        .collect()
}

fn roots(rev: &str) {
    let mut s = S::standard(rev);
    let root = norm(&s.tree.root_uri());
    if !s.host.modern() {
        // rootfence asked the host itself, before the server did.
        s.host.settle(300);
        assert!(
            s.host.requests.iter().any(|r| r["method"] == "roots/list"),
            "rootfence asks the host for its roots after initialization"
        );
    }
    let (r, inputs) = s.host.call_tool("ask_roots", json!({}));
    if s.host.modern() {
        assert!(
            inputs
                .iter()
                .any(|i| i["inputRequests"]["hostile-roots"]["method"] == "roots/list"),
            "the server's MRTR roots request reaches the host: {inputs:?}"
        );
    }
    assert_eq!(
        roots_of(&r["result"]["content"][0]["text"]),
        [root],
        "the server sees only the effective root (the sibling dropped, the parent and / narrowed): {r}"
    );
    // Sampling with outside files: stripped before the host sees it.
    let (r, inputs) = s.host.call_tool("sample", json!({}));
    assert!(
        r["result"]["content"][0]["text"]
            .as_str()
            .is_some_and(|t| t.contains("sampled by the host")),
        "{r}"
    );
    let sampled: Vec<Value> = if s.host.modern() {
        inputs
            .iter()
            .map(|i| i["inputRequests"]["hostile-sample"]["params"].clone())
            .collect()
    } else {
        s.host
            .requests
            .iter()
            .filter(|r| r["method"] == "sampling/createMessage")
            .map(|r| r["params"].clone())
            .collect()
    };
    assert_eq!(
        sampled.len(),
        1,
        "the sampling request reached the host once"
    );
    let text = sampled[0].to_string();
    assert!(
        text.contains("summarize these files") && text.contains("inside a"),
        "the inside parts of the sampling request stay: {text}"
    );
    if !s.host.modern() {
        // The host's roots change: rootfence forwards the notification and asks again.
        s.host.roots = Some(vec![
            s.tree.uri("sub"),
            format!("file://{}", s.tree.evil.display()),
        ]);
        s.host
            .send_line(r#"{"jsonrpc":"2.0","method":"notifications/roots/list_changed"}"#);
        s.host.settle(500);
        let (r, _) = s.host.call_tool("ask_roots", json!({}));
        assert_eq!(
            roots_of(&r["result"]["content"][0]["text"]),
            [norm(&s.tree.uri("sub"))],
            "{r}"
        );
        // a.txt is now outside the effective roots.
        let a = s.uri("a.txt");
        let r = s.host.request("resources/read", json!({"uri": a}));
        assert_denied(&r, Some(&a), &["outside_roots"]);
        assert!(
            server_log_text(&s.log).contains("notifications/roots/list_changed"),
            "list_changed is forwarded to the server"
        );
    }
    let (records, tree, _, _) = s.finish();
    let updates: Vec<&Value> = records
        .iter()
        .filter(|r| r["event"] == "roots_update")
        .collect();
    assert!(!updates.is_empty(), "roots updates are audited");
    let evil = format!("file://{}", tree.evil.display());
    assert!(
        updates.iter().any(|u| u["dropped"]
            .as_array()
            .into_iter()
            .flatten()
            .any(|d| norm(d["uri"].as_str().unwrap_or("")) == evil)),
        "the sibling root's drop is audited: {updates:?}"
    );
    assert!(
        updates.iter().any(
            |u| u["narrowed"]
                .as_array()
                .into_iter()
                .flatten()
                .any(|d| norm(d["uri"].as_str().unwrap_or("")) == norm(&tree.base_uri()))
        ),
        "the parent root's narrowing is audited: {updates:?}"
    );
}

per_revision!(roots:
    roots_2024_11_05 => "2024-11-05",
    roots_2025_03_26 => "2025-03-26",
    roots_2025_06_18 => "2025-06-18",
    roots_2025_11_25 => "2025-11-25",
    roots_2025_11_25_no_icons ["--no-icons"] => "2025-11-25",
    roots_2026_07_28 => "2026-07-28",
);

/// The host declares no roots: the server's `roots/list` is answered by rootfence from the
/// operator roots, and the server is told it may ask.
fn roots_from_operator(rev: &str) {
    let mut s = S::start(rev, true, &[], no_host_roots, &[]);
    let (r, inputs) = s.host.call_tool("ask_roots", json!({}));
    if s.host.modern() {
        assert!(
            inputs.is_empty(),
            "rootfence answers the server's MRTR roots request itself: {inputs:?}"
        );
    } else {
        assert!(
            !s.host.requests.iter().any(|r| r["method"] == "roots/list"),
            "a host without roots is never asked"
        );
        let init = server_log(&s.log)
            .into_iter()
            .find(|m| m["method"] == "initialize")
            .unwrap();
        assert!(
            init["params"]["capabilities"]["roots"].is_object(),
            "rootfence tells the server it may ask for roots: {init}"
        );
    }
    assert_eq!(
        roots_of(&r["result"]["content"][0]["text"]),
        [norm(&s.tree.root_uri())],
        "{r}"
    );
    s.finish();
}

per_revision!(roots_from_operator:
    roots_from_operator_2024_11_05 => "2024-11-05",
    roots_from_operator_2025_06_18 => "2025-06-18",
    // 2026-07-28: tests/enforce_attacks.rs
    // (mrtr_2026_07_28_server_roots_request_for_a_host_without_roots_is_answered_by_rootfence).
);

/// Neither host nor operator roots, and none taken from the server's command line (its
/// `--inside ROOT` would be one; `roots.from_command = "off"`): the server's `roots/list`
/// gets -32601 and every `file:` URI is denied.
fn no_roots_at_all(rev: &str) {
    let off = "version = 1\n[roots]\nfrom_command = \"off\"\n";
    let mut s = S::start(rev, false, &[off], no_host_roots, &[]);
    if !s.host.modern() {
        let (r, _) = s.host.call_tool("ask_roots", json!({}));
        let text = r["result"]["content"][0]["text"].as_str().unwrap_or("");
        assert!(text.contains("-32601"), "the server gets -32601: {r}");
    }
    let a = s.uri("a.txt");
    let r = s.host.request("resources/read", json!({"uri": a}));
    assert_denied(&r, Some(&a), &["outside_roots", "roots_unknown"]);
    let r = s.host.request("resources/list", json!({}));
    assert!(
        names(&r["result"]["resources"])
            .iter()
            .all(|n| n.starts_with("scheme-")),
        "no file: entry passes without roots: {r}"
    );
    s.finish();
}

per_revision!(no_roots_at_all:
    no_roots_at_all_2025_06_18 => "2025-06-18",
    no_roots_at_all_2026_07_28 => "2026-07-28",
);

/// 2026-07-28: rootfence's own MRTR roots request and the filtering of `inputResponses`.
#[test]
fn mrtr_2026_07_28_rootfence_asks_for_roots_and_strips_its_answer() {
    let mut s = S::start("2026-07-28", true, &[], wide_host_roots, &[]);
    let evil = format!("file://{}", s.tree.evil.display());
    let first_id = s.host.send_request(
        "tools/call",
        json!({"name": "echo_args", "arguments": {"path": "x"}}),
    );
    let first = s.host.response(first_id);
    assert_eq!(first["result"]["resultType"], "input_required", "{first}");
    let reqs = first["result"]["inputRequests"].as_object().unwrap();
    assert_eq!(reqs.len(), 1, "{first}");
    let (key, req) = reqs.iter().next().unwrap();
    assert!(
        key.starts_with("io.rootfence/roots-"),
        "rootfence's own key: {key}"
    );
    assert_eq!(req["method"], "roots/list");
    assert!(
        !server_saw_id(&s.log, first_id),
        "the server never sees the request rootfence answered"
    );
    // Retry with rootfence's answer and another key the server did not ask for.
    let mut responses = serde_json::Map::new();
    responses.insert(
        key.clone(),
        json!({"roots": [{"uri": s.tree.root_uri()}, {"uri": evil}, {"uri": s.tree.base_uri()}]}),
    );
    let retry_id = s.host.send_request(
        "tools/call",
        json!({"name": "echo_args", "arguments": {"path": "x"}, "inputResponses": responses}),
    );
    let retry = s.host.response(retry_id);
    assert_eq!(
        retry["result"]["content"][0]["text"], r#"{"path":"x"}"#,
        "{retry}"
    );
    let seen = server_log(&s.log)
        .into_iter()
        .find(|m| m["id"] == json!(retry_id))
        .expect("the retry reaches the server");
    assert!(
        seen["params"].get("inputResponses").is_none(),
        "rootfence takes its answer out (and the then empty inputResponses): {seen}"
    );
    // The server's own MRTR roots request: the host's answer is replaced by the effective roots.
    let (r, inputs) = s.host.call_tool("ask_roots", json!({}));
    assert_eq!(inputs.len(), 1, "{inputs:?}");
    assert_eq!(
        roots_of(&r["result"]["content"][0]["text"]),
        [norm(&s.tree.root_uri())],
        "{r}"
    );
    let log = server_log_text(&s.log);
    assert!(
        !log.contains("root_evil") && !log.contains("\"file:///\""),
        "no host root outside the operator root reaches the server"
    );
    s.finish();
}

// -------------------------------------------------------------------------------------------
// Forged, repeated and malformed responses
// -------------------------------------------------------------------------------------------

fn forged(rev: &str) {
    let mut s = S::standard(rev);
    // The same id answered twice: the second answer (with the secret) is dropped.
    let id = s
        .host
        .send_request("resources/read", json!({"uri": s.uri("twice.txt")}));
    let r = s.host.response(id);
    assert_eq!(r["result"]["contents"][0]["text"], "first answer", "{r}");
    // Duplicate keys: refused by the relay, never parsed two ways.
    let r = s
        .host
        .request("resources/read", json!({"uri": s.uri("dup.txt")}));
    assert!(r.get("error").is_some(), "{r}");
    let (r, _) = s.host.call_tool("dup_keys", json!({}));
    assert!(r.get("error").is_some(), "{r}");
    // A response forged for a request rootfence answered itself: dropped.
    let denied = s
        .host
        .send_request("resources/read", json!({"uri": s.tree.evil_uri()}));
    assert_denied(&s.host.response(denied), None, &[]);
    let (r, _) = s
        .host
        .call_tool("forge", json!({"id": denied, "shape": "read"}));
    assert!(r.get("result").is_some(), "{r}");
    // A response forged for a pending read: checked as that read's result.
    let hang = s
        .host
        .send_request("resources/read", json!({"uri": s.uri("hang.txt")}));
    let (r, _) = s
        .host
        .call_tool("forge", json!({"id": hang, "shape": "read"}));
    assert!(r.get("result").is_some(), "{r}");
    let r = s.host.response(hang);
    assert_denied(&r, None, &[]);
    s.host.settle(300);
    let answers_to = |h: &Host, id: i64| {
        h.received
            .iter()
            .filter(|m| m["id"] == json!(id) && m.get("method").is_none())
            .count()
    };
    assert_eq!(
        answers_to(&s.host, id),
        1,
        "one answer to the twice-answered read"
    );
    assert_eq!(
        answers_to(&s.host, denied),
        1,
        "one answer to the denied read"
    );
    s.finish();
}

per_revision!(forged:
    forged_2024_11_05 => "2024-11-05",
    forged_2025_03_26 => "2025-03-26",
    forged_2025_06_18 => "2025-06-18",
    forged_2025_11_25 => "2025-11-25",
    forged_2025_11_25_no_icons ["--no-icons"] => "2025-11-25",
    forged_2026_07_28 => "2026-07-28",
);

// -------------------------------------------------------------------------------------------
// 2025-03-26 batches
// -------------------------------------------------------------------------------------------

#[test]
fn batch_2025_03_26_denied_elements_get_their_own_errors() {
    let mut s = S::standard("2025-03-26");
    let ids: Vec<i64> = (0..6).map(|_| s.host.id()).collect();
    let evil = s.tree.evil_uri();
    let enc = s.uri("%2e%2e/secret-place/secret.txt");
    let batch = json!([
        {"jsonrpc": "2.0", "id": ids[0], "method": "resources/read", "params": {"uri": s.uri("a.txt")}},
        {"jsonrpc": "2.0", "id": ids[1], "method": "resources/read", "params": {"uri": evil}},
        {"jsonrpc": "2.0", "method": "notifications/progress", "params": {"progressToken": 1, "progress": 1}},
        {"jsonrpc": "2.0", "id": ids[2], "method": "resources/read", "params": {"uri": enc}},
        {"jsonrpc": "2.0", "id": ids[3], "method": "tools/call", "params": {"name": "embed", "arguments": {}}},
        {"jsonrpc": "2.0", "id": ids[4], "method": "ping"},
        {"jsonrpc": "2.0", "id": ids[5], "method": "resources/read", "params": {"uri": s.uri("swap.txt")}}
    ]);
    let lines_before = s.host.raw.len();
    s.host.send(&batch);
    let responses: Vec<Value> = ids.iter().map(|id| s.host.response(*id)).collect();
    assert_eq!(
        responses[0]["result"]["contents"][0]["text"], "inside a\n",
        "{}",
        responses[0]
    );
    assert_denied(&responses[1], Some(&evil), &["outside_roots"]);
    assert_denied(&responses[2], Some(&enc), &["dot_segment"]);
    assert_eq!(
        responses[3]["result"]["content"],
        json!(kept_blocks(&s, "2025-03-26"))
    );
    assert_eq!(responses[4]["result"], json!({}));
    assert_denied(&responses[5], None, &[]);
    // The answers to a batch come as batch lines (arrays).
    let batch_lines = s.host.raw[lines_before..]
        .iter()
        .filter(|l| l.first() == Some(&b'['))
        .count();
    assert!(
        batch_lines >= 1,
        "the host's batch is answered with a batch"
    );
    s.host.settle(300);
    let (_, _tree, log, _) = s.finish();
    let seen = server_log(&log);
    assert!(
        seen.iter().any(|m| m["id"] == json!(ids[0])),
        "the allowed element reached the server"
    );
    for denied in [ids[1], ids[2]] {
        assert!(
            !seen
                .iter()
                .any(|m| m["id"] == json!(denied) && m.get("method").is_some()),
            "the denied element {denied} never reaches the server"
        );
    }
}

// -------------------------------------------------------------------------------------------
// Policies: other schemes, and audit mode
// -------------------------------------------------------------------------------------------

#[test]
fn other_schemes_follow_the_policy() {
    let policy = "version = 1\n[resources]\nother_schemes = [\"test\"]\n";
    let mut s = S::start(
        "2025-06-18",
        true,
        &["builtin:default", policy],
        no_host_roots,
        &[],
    );
    let all_pages_names: Vec<String> = {
        let mut v = Vec::new();
        let mut cursor: Option<Value> = None;
        loop {
            let p = match &cursor {
                Some(c) => json!({"cursor": c}),
                None => json!({}),
            };
            let r = s.host.request("resources/list", p);
            v.extend(names(&r["result"]["resources"]));
            match r["result"].get("nextCursor") {
                Some(c) => cursor = Some(c.clone()),
                None => break,
            }
        }
        v
    };
    assert!(all_pages_names.contains(&"scheme-test".to_string()));
    assert!(
        !all_pages_names
            .iter()
            .any(|n| n == "scheme-http" || n == "scheme-data"),
        "schemes not listed are removed: {all_pages_names:?}"
    );
    let r = s.host.request(
        "resources/read",
        json!({"uri": "http://evilhost.example/secret"}),
    );
    assert_denied(
        &r,
        Some("http://evilhost.example/secret"),
        &["scheme_denied"],
    );
    s.finish();
}

/// `mode = "audit"`: everything passes as it came, and every decision is logged as it would
/// have been enforced.
#[test]
fn audit_mode_passes_everything_and_logs_the_denials() {
    let default = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("policies/default.toml"),
    )
    .unwrap();
    let audit_policy = default.replace("mode = \"enforce\"", "mode = \"audit\"");
    assert_ne!(audit_policy, default);
    let mut s = S::start("2025-06-18", true, &[&audit_policy], no_host_roots, &[]);
    let evil = s.tree.evil_uri();
    let read_id = s.host.send_request("resources/read", json!({"uri": evil}));
    let r = s.host.response(read_id);
    assert_eq!(
        r["result"]["contents"][0]["text"], MARKER,
        "audit mode blocks nothing: {r}"
    );
    let (r, _) = s.host.call_tool("embed", json!({}));
    let n = r["result"]["content"].as_array().map_or(0, Vec::len);
    assert_eq!(n, 15, "every block passes in audit mode: {r}");
    let direct = direct_pages("2025-06-18", &s.tree);
    let r = s.host.request("resources/list", json!({}));
    assert_eq!(
        r["result"]["resources"], direct[0]["resources"],
        "the list passes unchanged"
    );
    let code = s.host.finish();
    assert_eq!(code, 0);
    assert_audit_verifies(&s.audit);
    let records = audit_records(&s.audit);
    let d = decisions_for(&records, &evil);
    assert!(
        d.iter().any(|r| r["decision"] == "deny"
            && r["reason"] == "outside_roots"
            && r["method"] == "resources/read"
            && r["action"] == "forwarded"),
        "the read is logged as a denial that was forwarded: {d:?}"
    );
    let start = records
        .iter()
        .find(|r| r["event"] == "session_start")
        .unwrap();
    assert_eq!(start["mode"], "audit", "{start}");
    assert!(server_saw_id(&s.log, read_id), "the server saw the read");
}

// -------------------------------------------------------------------------------------------
// The harness proves itself
// -------------------------------------------------------------------------------------------

/// Without rootfence the same requests leak, and the scan sees it: the tests above are not
/// vacuous. (And a session that touches only inside files passes the scan.)
#[test]
fn harness_the_hostile_server_leaks_when_run_directly() {
    for rev in hostile::REVISIONS {
        let tree = Tree::new();
        let log = tree.file("server.log");
        let mut host = Host::direct(&tree.server(&log, &[]), rev);
        host.roots = wide_host_roots(&tree);
        host.begin(json!({"sampling": {}}));
        let r = host.request("resources/read", json!({"uri": tree.uri("a.txt")}));
        assert_eq!(r["result"]["contents"][0]["text"], "inside a\n", "{r}");
        if !at_least(rev, "2025-11-25") {
            // (From 2025-11-25 the server's own info carries an outside icon.)
            host.assert_no_leak(&tree);
        }

        let leaks: Vec<(String, Value)> = vec![
            ("resources/read".into(), json!({"uri": tree.evil_uri()})),
            (
                "resources/read".into(),
                json!({"uri": tree.uri("%2e%2e/secret-place/secret.txt")}),
            ),
            (
                "resources/read".into(),
                json!({"uri": tree.uri("link_out")}),
            ),
            (
                "resources/read".into(),
                json!({"uri": tree.uri("swap.txt")}),
            ),
            (
                "tools/call".into(),
                json!({"name": "embed", "arguments": {}}),
            ),
            (
                "tools/call".into(),
                json!({"name": "read_text_file", "arguments": {"path": tree.outside.display().to_string()}}),
            ),
            ("prompts/get".into(), json!({"name": "leaky"})),
        ];
        for (method, params) in leaks {
            let before = host.raw.len();
            let r = host.request(&method, params.clone());
            let got: String = host.raw[before..]
                .iter()
                .map(|l| String::from_utf8_lossy(l).into_owned())
                .collect();
            assert!(
                got.contains(MARKER),
                "{rev}: directly, {method} {params} leaks the secret: {r}"
            );
        }
        let r = host.request("resources/list", json!({"cursor": "opaque %2e%2e?&/1"}));
        assert!(
            names(&r["result"]["resources"])
                .iter()
                .any(|n| n.starts_with("leak-")),
            "{r}"
        );
        let caught =
            std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| host.assert_no_leak(&tree)));
        assert!(
            caught.is_err(),
            "{rev}: the leak scan catches the direct leaks"
        );
        host.finish();
    }
}
