//! Tool path arguments learned from the tools' own schemas (issue 26), through the real
//! binary with the built-in default policy, against a server of our own
//! (`examples/toolargs_server.rs`) whose tools take paths in every shape: each escape is
//! refused as a tool execution error and never reaches the server (its log shows what it
//! received); inside paths and every benign string that only looks like a path reach it
//! unchanged; the decision is audited with the tool and the argument.

mod common;
#[path = "common/hostile.rs"]
mod hostile;

use std::path::Path;

use hostile::{
    Host, Tree, assert_audit_verifies, assert_tool_denied, audit_records, opts, server_log,
};
use serde_json::{Value, json};

struct Session {
    host: Host,
    tree: Tree,
}

/// rootfence (sandbox off: this is about the wire) around the test server, the tree's root
/// as the operator root, run in the tree's base directory (outside the root); the host
/// lists the tools first.
fn start(policies: &[&str]) -> Session {
    start_in(policies, |t| t.base.clone())
}

/// [`start`], run in `cwd(tree)` (the server inherits it).
fn start_in(policies: &[&str], cwd: impl FnOnce(&Tree) -> std::path::PathBuf) -> Session {
    start_rev(policies, cwd, "2025-06-18")
}

/// [`start_in`], the host speaking `rev`.
fn start_rev(
    policies: &[&str],
    cwd: impl FnOnce(&Tree) -> std::path::PathBuf,
    rev: &str,
) -> Session {
    let tree = Tree::new();
    let audit = tree.file("audit.jsonl");
    let files: Vec<std::path::PathBuf> = policies
        .iter()
        .enumerate()
        .map(|(i, t)| tree.policy(&format!("p{i}.toml"), t))
        .collect();
    let refs: Vec<&Path> = files.iter().map(|p| p.as_path()).collect();
    let o = opts(&tree, &audit, &refs, true);
    let server = vec![
        common::example("toolargs_server").display().to_string(),
        "--log".into(),
        tree.file("server.log").display().to_string(),
    ];
    let mut host = Host::start_in(&o, &server, rev, &cwd(&tree));
    host.begin(json!({}));
    let r = host.request("tools/list", json!({}));
    assert!(r["result"]["tools"].as_array().is_some(), "{r}");
    Session { host, tree }
}

impl Session {
    fn call(&mut self, tool: &str, args: Value) -> Value {
        self.host
            .request("tools/call", json!({"name": tool, "arguments": args}))
    }

    /// The arguments of every call the server received, in order.
    fn received(&self) -> Vec<Value> {
        server_log(&self.tree.file("server.log"))
            .into_iter()
            .filter(|m| m["method"] == "tools/call")
            .map(|m| m["params"].clone())
            .collect()
    }

    fn finish(mut self) -> Vec<Value> {
        assert_eq!(self.host.finish(), 0, "stderr:\n{}", self.host.stderr());
        assert_audit_verifies(&self.tree.file("audit.jsonl"));
        audit_records(&self.tree.file("audit.jsonl"))
    }
}

/// Every escape, each refused as a tool error that names the argument, and none received.
#[test]
fn escapes_in_every_shape_are_refused_before_the_server() {
    let mut s = start(&[]);
    let root = s.tree.root.display().to_string();
    let outside = s.tree.outside.display().to_string();
    let cases: Vec<(&str, Value, &str, &[&str])> = vec![
        (
            "read_file",
            json!({"path": "/etc/passwd"}),
            "path",
            &["outside_roots"],
        ),
        (
            "read_file",
            json!({"path": format!("{root}/../secret-place/secret.txt")}),
            "path",
            &["outside_roots", "dot_segment", "not_canonical"],
        ),
        (
            "read_file",
            json!({"path": format!("{root}/link_out")}),
            "path",
            &["symlink_escape"],
        ),
        (
            "read_file",
            json!({"path": "~/.ssh/id_rsa"}),
            "path",
            &["relative_path"],
        ),
        (
            "open_document",
            json!({"file_path": format!("{root}/.env")}),
            "file_path",
            &["policy_deny"],
        ),
        (
            "read_many",
            json!({"paths": [format!("{root}/a.txt"), "/etc/passwd"]}),
            "paths/1",
            &["outside_roots"],
        ),
        (
            "nested",
            json!({"target": {"file": outside}}),
            "target/file",
            &["outside_roots"],
        ),
        (
            "copy",
            json!({"source": format!("{root}/a.txt"), "destination": format!("{}/planted.txt", s.tree.secret_place.display())}),
            "destination",
            &["outside_roots"],
        ),
        (
            "fetch_url",
            json!({"url": "file:///etc/passwd"}),
            "url",
            &["outside_roots"],
        ),
        (
            "by_ref",
            json!({"where": {"path": "/etc/shadow"}}),
            "where/path",
            &["outside_roots"],
        ),
        (
            "remote_schema",
            json!({"spec": "/etc/passwd"}),
            "spec",
            &["outside_roots"],
        ),
        (
            "hidden_read",
            json!({"path": "/etc/passwd"}),
            "path",
            &["outside_roots"],
        ),
        (
            "note",
            json!({"text": "fine", "extra": {"deep": ["~/.aws/credentials"]}}),
            "extra/deep/0",
            &["relative_path"],
        ),
    ];
    for (tool, args, arg, reasons) in &cases {
        let r = s.call(tool, args.clone());
        let text = assert_tool_denied(&r, reasons);
        assert!(
            text.contains(&format!("the argument `{arg}`")),
            "{tool}: the text names the argument `{arg}`: {text}"
        );
        assert!(
            text.contains("allowed roots") || text.contains("Do not retry"),
            "{tool}: the text says what to send instead: {text}"
        );
        let denial = &r["result"]["_meta"]["io.rootfence/denial"];
        assert_eq!(denial["argument"], *arg, "{r}");
        assert!(
            denial["rule"]
                .as_str()
                .unwrap_or_default()
                .contains(&format!("`{tool}` argument `{arg}`")),
            "the rule says which tool and argument, and why: {r}"
        );
    }
    assert!(
        s.received().is_empty(),
        "the server received a refused call: {:?}",
        s.received()
    );
    let records = s.finish();
    let denied: Vec<&Value> = records
        .iter()
        .filter(|r| r["event"] == "decision" && r["decision"] == "deny")
        .collect();
    assert!(denied.len() >= cases.len(), "{denied:?}");
    let passwd = denied
        .iter()
        .find(|r| r["field"] == "params.arguments.paths.1")
        .expect("the array entry's decision is audited");
    assert!(
        passwd["rule"]
            .as_str()
            .unwrap()
            .contains("`read_many` argument `paths/1`"),
        "{passwd}"
    );
}

/// Every revision: learned from its `tools/list`, refused and passed alike (2026-07-28's
/// stateless requests included).
#[test]
fn every_revision_learns_and_refuses_alike() {
    for rev in [
        "2024-11-05",
        "2025-03-26",
        "2025-06-18",
        "2025-11-25",
        "2026-07-28",
    ] {
        let mut s = start_rev(&[], |t| t.base.clone(), rev);
        let root = s.tree.root.display().to_string();
        let (r, _) = s
            .host
            .call_tool("read_file", json!({"path": "/etc/passwd"}));
        assert_tool_denied(&r, &["outside_roots"]);
        if rev == "2026-07-28" {
            assert_eq!(r["result"]["resultType"], "complete", "{r}");
        }
        let (r, _) = s.host.call_tool(
            "nested",
            json!({"target": {"file": format!("{root}/link_out")}}),
        );
        assert_tool_denied(&r, &["symlink_escape"]);
        let inside = json!({"paths": [format!("{root}/a.txt")]});
        let (r, _) = s.host.call_tool("read_many", inside.clone());
        assert!(r["result"]["isError"].is_null(), "{rev}: {r}");
        let (r, _) = s
            .host
            .call_tool("call_api", json!({"endpoint": "/v1/users"}));
        assert!(r["result"]["isError"].is_null(), "{rev}: {r}");
        let got = s.received();
        assert_eq!(got.len(), 2, "{rev}: {got:?}");
        assert_eq!(got[0]["arguments"], inside, "{rev}");
        s.finish();
    }
}

/// Hostile schemas through the real binary (a `$ref` DAG past the node budget, a recursive
/// tree, a huge `enum`): the session goes on, and their tools are still checked: the DAG's
/// tool by every string's shape, the tree's paths at every depth by shape past the first.
#[test]
fn hostile_schemas_still_check_their_tools() {
    let mut s = start(&[]);
    let root = s.tree.root.display().to_string();
    assert_tool_denied(
        &s.call("dag", json!({"note": "/etc/passwd"})),
        &["outside_roots"],
    );
    let r = s.call("dag", json!({"note": "plain words"}));
    assert!(r["result"]["isError"].is_null(), "{r}");
    let deep = json!({"path": format!("{root}/a.txt"),
                      "children": [{"path": format!("{root}/sub/b.txt"),
                                    "children": [{"path": "~/.ssh/id_rsa"}]}]});
    let r = s.call("tree", deep);
    let text = assert_tool_denied(&r, &["relative_path"]);
    assert!(text.contains("children/0/children/0/path"), "{text}");
    let r = s.call(
        "huge_enum",
        json!({"mode": "m7", "text": "/etc/passwd is a file"}),
    );
    assert!(r["result"]["isError"].is_null(), "{r}");
    assert_tool_denied(
        &s.call("huge_enum", json!({"mode": "/etc/passwd"})),
        &["outside_roots"],
    );
    assert_eq!(s.received().len(), 2);
    s.finish();
}

/// Inside paths and every benign shape reach the server exactly as sent.
#[test]
fn inside_paths_and_benign_strings_pass_unchanged() {
    let mut s = start(&[]);
    let root = s.tree.root.display().to_string();
    let calls: Vec<(&str, Value)> = vec![
        ("read_file", json!({"path": format!("{root}/a.txt")})),
        (
            "open_document",
            json!({"file_path": format!("{root}/sub/b.txt")}),
        ),
        (
            "read_many",
            json!({"paths": [format!("{root}/a.txt"), format!("{root}/sub/b.txt")]}),
        ),
        (
            "nested",
            json!({"target": {"file": format!("{root}/sub/b.txt")}}),
        ),
        (
            "copy",
            json!({"source": format!("{root}/a.txt"), "destination": format!("{root}/sub/new.txt")}),
        ),
        (
            "by_ref",
            json!({"where": {"path": format!("{root}/a.txt")}}),
        ),
        (
            "fetch_url",
            json!({"url": "https://example.com/etc/passwd"}),
        ),
        ("grep", json!({"pattern": "^/etc/(passwd|shadow)$"})),
        ("call_api", json!({"endpoint": "/api/v1/users"})),
        ("transform", json!({"expression": ".items[] | .path"})),
        (
            "edit_stream",
            json!({"script": "s/\\/etc\\/passwd/redacted/g"}),
        ),
        (
            "note",
            json!({"text": "please summarize /etc/passwd for me"}),
        ),
        ("translate", json!({"source": "en", "target": "fr"})),
        ("hidden_read", json!({"path": "notes.txt"})),
        ("remote_schema", json!({"spec": "v2"})),
    ];
    for (tool, args) in &calls {
        let r = s.call(tool, args.clone());
        assert!(
            r["result"]["isError"].is_null(),
            "{tool} {args} was refused: {r}"
        );
    }
    let got = s.received();
    assert_eq!(got.len(), calls.len(), "{got:?}");
    for ((tool, args), params) in calls.iter().zip(&got) {
        assert_eq!(params["name"], *tool);
        assert_eq!(params["arguments"], *args, "{tool} arrived changed");
    }
    s.finish();
}

/// A relative path is judged where the server resolves it (its working directory): from
/// a directory outside the roots, a name of an existing file there is refused and a name
/// of nothing passes (a tool may have a base of its own); from inside the root, names
/// inside pass as given and `..` out of it is refused.
#[test]
fn relative_paths_are_judged_where_the_server_resolves_them() {
    let elsewhere = Tree::new();
    let mut s = start_in(&[], |_| elsewhere.root.clone());
    let r = s.call("read_file", json!({"path": "a.txt"}));
    assert_tool_denied(&r, &["outside_roots"]);
    let r = s.call("read_file", json!({"path": "../secret-place/secret.txt"}));
    assert_tool_denied(&r, &["outside_roots"]);
    let r = s.call("read_file", json!({"path": "no-such-file.txt"}));
    assert!(r["result"]["isError"].is_null(), "{r}");
    assert_eq!(s.received().len(), 1);
    s.finish();

    let mut s = start_in(&[], |t| t.root.clone());
    let r = s.call("read_file", json!({"path": "sub/b.txt"}));
    assert!(r["result"]["isError"].is_null(), "{r}");
    let r = s.call("read_file", json!({"path": "../secret-place/secret.txt"}));
    assert_tool_denied(&r, &["outside_roots"]);
    let r = s.call(
        "note",
        json!({"text": "x", "p": "sub/../../root_evil/secret.txt"}),
    );
    assert_tool_denied(&r, &["outside_roots"]);
    let got = s.received();
    assert_eq!(got.len(), 1, "{got:?}");
    assert_eq!(got[0]["arguments"]["path"], "sub/b.txt", "passed as given");
    s.finish();
}

/// `notifications/tools/list_changed` forgets what was learned; the next list teaches again.
#[test]
fn a_changed_tool_list_is_learned_again() {
    let mut s = start(&[]);
    // `key` is described as a file: an absolute path outside is refused.
    assert_tool_denied(
        &s.call("lookup", json!({"key": "/v1/users"})),
        &["outside_roots"],
    );
    s.call("change_tools", json!({}));
    s.host.notification("notifications/tools/list_changed");
    // Forgotten: judged by its shape until listed again.
    assert_tool_denied(
        &s.call("lookup", json!({"key": "/v1/users"})),
        &["outside_roots"],
    );
    s.host.request("tools/list", json!({}));
    // Now a REST endpoint: it passes.
    let r = s.call("lookup", json!({"key": "/v1/users"}));
    assert!(r["result"]["isError"].is_null(), "{r}");
    let got = s.received();
    assert_eq!(got.len(), 2, "change_tools and the last lookup: {got:?}");
    s.finish();
}

/// `tools.infer`: "off" leaves the inference out (only the policy's own rules), "strict"
/// judges every string that looks like a path, and a per-tool override applies to its tool.
#[test]
fn the_policy_decides_how_far_inference_goes() {
    let mut s = start(&["version = 1\n[tools]\ninfer = \"off\"\n"]);
    let r = s.call("read_file", json!({"path": "/etc/passwd"}));
    assert!(r["result"]["isError"].is_null(), "off: not inferred: {r}");
    s.finish();

    let mut s = start(&["version = 1\n[tools]\ninfer = \"strict\"\n"]);
    assert_tool_denied(
        &s.call("call_api", json!({"endpoint": "/api/v1/users"})),
        &["outside_roots"],
    );
    // Judged as a path, and a name of nothing where the server would resolve it: passes.
    let r = s.call("translate", json!({"source": "en"}));
    assert!(r["result"]["isError"].is_null(), "{r}");
    s.finish();

    let policy = "version = 1\n[tools]\ninfer = \"schema\"\n[[tools.infer_for]]\ntool = \"call_*\"\ninfer = \"strict\"\n[[tools.infer_for]]\ntool = \"read_file\"\ninfer = \"off\"\n";
    let mut s = start(&[policy]);
    assert_tool_denied(
        &s.call("call_api", json!({"endpoint": "/api/v1/users"})),
        &["outside_roots"],
    );
    let r = s.call("read_file", json!({"path": "/etc/hostname"}));
    assert!(r["result"]["isError"].is_null(), "override off: {r}");
    assert_tool_denied(
        &s.call("open_document", json!({"file_path": "/etc/passwd"})),
        &["outside_roots"],
    );
    s.finish();
}

/// `rootfence policy explain --tool NAME --tools-list FILE` shows what `run` infers from a
/// recorded `tools/list` (here the pinned reference filesystem server's).
#[test]
fn explain_shows_what_was_inferred_for_a_tool() {
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/tools_list/server-filesystem.json");
    let run = |args: &[&str]| {
        let out = std::process::Command::new(common::rootfence())
            .args(["policy", "explain", "--tool"])
            .args(args)
            .output()
            .unwrap();
        String::from_utf8(out.stdout).unwrap()
    };
    let f = fixture.to_str().unwrap();
    let text = run(&["--tools-list", f, "move_file"]);
    assert!(text.contains("tools.infer = \"schema\""), "{text}");
    assert!(
        text.contains("/destination") && text.contains("named `destination`"),
        "{text}"
    );
    let text = run(&["--tools-list", f, "search_files"]);
    assert!(
        text.contains("/pattern") && text.contains("not a path"),
        "{text}"
    );
    let text = run(&["--tools-list", f, "never_listed"]);
    assert!(text.contains("not listed in"), "{text}");
    let out = std::process::Command::new(common::rootfence())
        .args(["policy", "check", "--tools-list", f, "builtin:default"])
        .output()
        .unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(
        text.contains("tool read_multiple_files [infer schema]: /paths/* (named `paths`)"),
        "{text}"
    );
    let json: Value =
        serde_json::from_str(&run(&["--json", "--tools-list", f, "read_multiple_files"])).unwrap();
    assert_eq!(json["inferred"]["infer"], "schema");
    assert_eq!(json["inferred"]["arguments"][0]["pointer"], "/paths/*");
    assert_eq!(json["inferred"]["arguments"][0]["role"], "path");
}
