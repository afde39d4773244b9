//! The path and capability core through the real binary (issues 12, 13 and 14), one test per
//! case, each named for what it pins: real developer trees that must keep working with the
//! default policy and sandbox (absolute symbolic links inside the root, `uv` and `pnpm`
//! trees hard-linked from a cache outside the root, relative tool paths while the server
//! works in the root), and the attacks on the same machinery (a hard link planted during the
//! session, a name flipped between absent and a link to `.env` under `serve` and `verify`, a
//! host root that is a link inside `--root` leading out, list pages judged per directory).
//!
//! Each attack test asserts that the secret markers never appear in anything the host
//! receives and that every request is answered.

mod common;
#[path = "common/hostile.rs"]
mod hostile;
#[path = "common/interop_peers.rs"]
mod interop_peers;

use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};
use std::time::Duration;

use hostile::{
    Host, MARKER, POLICY_MARKER, Tree, assert_audit_verifies, assert_denied, audit_records, opts,
};
use serde_json::{Value, json};

// -------------------------------------------------------------------------------------------
// Helpers
// -------------------------------------------------------------------------------------------

/// `rootfence run --root <root> --audit-log <base>/audit.jsonl [--policy ...]`, with the
/// default sandbox unless `sandbox_off`.
fn rootfence_opts(tree: &Tree, policies: &[&str], sandbox_off: bool) -> Vec<String> {
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
    let refs: Vec<&Path> = files.iter().map(PathBuf::as_path).collect();
    let mut o = opts(tree, &tree.file("audit.jsonl"), &refs, true);
    if !sandbox_off {
        // `opts` starts with `--sandbox off`: drop it for the default sandbox.
        o.drain(..2);
    }
    o
}

/// The hostile server with its log inside the root (a confined server may write only
/// there) and `extra` options.
fn hostile_server(tree: &Tree, extra: &[&str]) -> Vec<String> {
    tree.server(&tree.root.join("server.log"), extra)
}

/// server-filesystem given `dirs` as its allowed directories (Claude Desktop style).
fn server_filesystem(dirs: &[&Path]) -> Vec<String> {
    let mut v = vec![
        "node".to_string(),
        interop_peers::node_entry("@modelcontextprotocol/server-filesystem")
            .display()
            .to_string(),
    ];
    v.extend(dirs.iter().map(|d| d.display().to_string()));
    v
}

/// Asserts a tool call was refused by rootfence with one of `reasons`: a JSON-RPC denial, or
/// a tool execution error (SEP-1303) naming the reason.
fn assert_tool_refused(r: &Value, reasons: &[&str]) {
    if r.get("error").is_some() {
        assert_denied(r, None, reasons);
        return;
    }
    assert_eq!(r["result"]["isError"], true, "refused: {r}");
    let text = r.to_string();
    assert!(reasons.iter().any(|x| text.contains(x)), "{reasons:?}: {r}");
}

/// The text of a tool result's first content block.
fn tool_text(r: &Value) -> &str {
    r["result"]["content"][0]["text"].as_str().unwrap_or("")
}

/// Whether Landlock was enforced for the session (from its audit log).
fn sandbox_enforced(tree: &Tree) -> bool {
    audit_records(&tree.file("audit.jsonl"))
        .iter()
        .find(|r| r["event"] == "session_start")
        .and_then(|r| r["sandbox"]["enforcement"].as_str())
        .is_some_and(|e| e != "none")
}

/// Ends the session: clean exit, no secret byte and no outside name anywhere the host
/// received, the audit log verifies.
fn finish(mut host: Host, tree: &Tree) -> Vec<Value> {
    assert_eq!(host.finish(), 0, "stderr:\n{}", host.stderr());
    host.assert_no_leak(tree);
    assert_audit_verifies(&tree.file("audit.jsonl"));
    audit_records(&tree.file("audit.jsonl"))
}

/// Waits for the next whole second, so that what was made before is older than the session
/// that starts next (the hard-link rule takes the session's start to the second).
fn tick() {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap();
    std::thread::sleep(
        Duration::from_nanos(1_000_000_000 - u64::from(now.subsec_nanos()))
            + Duration::from_millis(20),
    );
}

/// The file names a `resources/list` answer lists, sorted.
fn listed_names(r: &Value) -> Vec<String> {
    let mut names: Vec<String> = r["result"]["resources"]
        .as_array()
        .unwrap_or_else(|| panic!("{r}"))
        .iter()
        .map(|e| {
            e["uri"]
                .as_str()
                .unwrap()
                .rsplit('/')
                .next()
                .unwrap()
                .to_owned()
        })
        .collect();
    names.sort();
    names
}

fn write(path: &Path, text: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

// -------------------------------------------------------------------------------------------
// Issue 12: developer trees that must keep working, default policy and sandbox
// -------------------------------------------------------------------------------------------

/// An absolute symbolic link that names a place inside the same root (a file, a directory)
/// is followed, with the default sandbox; one that names a place outside is still refused.
#[test]
fn absolute_symlinks_inside_the_root_are_followed_with_the_default_sandbox() {
    let tree = Tree::new();
    symlink(tree.root.join("a.txt"), tree.root.join("abs_file")).unwrap();
    symlink(tree.root.join("sub"), tree.root.join("abs_dir")).unwrap();
    let mut host = Host::start(
        &rootfence_opts(&tree, &[], false),
        &hostile_server(&tree, &["--secret", MARKER]),
        "2025-06-18",
    );
    host.begin(json!({}));
    for (rel, text) in [("abs_file", "inside a\n"), ("abs_dir/b.txt", "nested b\n")] {
        let r = host.request("resources/read", json!({"uri": tree.uri(rel)}));
        assert_eq!(r["result"]["contents"][0]["text"], text, "{rel}: {r}");
    }
    let out = tree.uri("link_out");
    let r = host.request("resources/read", json!({"uri": out}));
    assert_denied(&r, Some(&out), &["symlink_escape"]);
    finish(host, &tree);
}

/// A `uv` virtual environment: every file of every package is a hard link to a file in
/// uv's cache, outside the root; `lib64` is a relative link to `lib`; `bin/python` an
/// absolute link to an interpreter outside. With the default policy and sandbox, the
/// reference filesystem server reads the package files and lists their directory, and
/// rootfence lists them as resources (one page, judged per directory); the interpreter
/// link stays refused.
#[test]
fn uv_venv_hard_linked_from_a_cache_outside_the_root_works() {
    let tree = Tree::new();
    let cache = tree.base.join("cache/uv/archive-v0/Xk3p9q");
    let venv = tree.root.join(".venv");
    let site = venv.join("lib/python3.12/site-packages");
    let files = [
        ("requests/__init__.py", "from .api import get\n"),
        ("requests/api.py", "def get(url): ...\n"),
        ("requests-2.32.3.dist-info/METADATA", "Name: requests\n"),
        (
            "requests-2.32.3.dist-info/RECORD",
            "requests/__init__.py,,\n",
        ),
    ];
    for (rel, text) in files {
        write(&cache.join(rel), text);
        std::fs::create_dir_all(site.join(rel).parent().unwrap()).unwrap();
        std::fs::hard_link(cache.join(rel), site.join(rel)).unwrap();
    }
    write(&venv.join("pyvenv.cfg"), "home = /usr/bin\n");
    symlink("lib", venv.join("lib64")).unwrap();
    std::fs::create_dir_all(venv.join("bin")).unwrap();
    symlink("/usr/bin/python3", venv.join("bin/python")).unwrap();
    tick();

    let mut host = Host::start(
        &rootfence_opts(&tree, &[], false),
        &server_filesystem(&[&tree.root]),
        "2025-06-18",
    );
    host.begin(json!({}));
    for (rel, text) in files {
        for via in ["lib", "lib64"] {
            let path = venv.join(via).join("python3.12/site-packages").join(rel);
            let (r, _) = host.call_tool("read_text_file", json!({"path": path}));
            assert_eq!(tool_text(&r), text, "{}: {r}", path.display());
        }
    }
    let (r, _) = host.call_tool("list_directory", json!({"path": site.join("requests")}));
    assert!(tool_text(&r).contains("api.py"), "{r}");
    let python = venv.join("bin/python");
    let (r, _) = host.call_tool("read_text_file", json!({"path": python}));
    assert_tool_refused(&r, &["symlink_escape"]);
    finish(host, &tree);
    // The cache file is untouched and still has its two names.
    let m = std::fs::metadata(cache.join("requests/api.py")).unwrap();
    assert_eq!(std::os::unix::fs::MetadataExt::nlink(&m), 2);
}

/// The same tree listed as `resources/list` entries (one page) by a server that lists a
/// directory: every hard-linked file of the package stays.
#[test]
fn uv_venv_listed_as_resources_keeps_every_hard_linked_file() {
    let tree = Tree::new();
    let cache = tree.base.join("cache/uv/archive-v0/Xk3p9q/requests");
    let pkg = tree
        .root
        .join(".venv/lib/python3.12/site-packages/requests");
    std::fs::create_dir_all(&pkg).unwrap();
    let names: Vec<String> = (0..40).map(|i| format!("mod{i}.py")).collect();
    for n in &names {
        write(&cache.join(n), "x = 1\n");
        std::fs::hard_link(cache.join(n), pkg.join(n)).unwrap();
    }
    tick();
    let server = vec![
        common::example("naive_fs_server").display().to_string(),
        pkg.display().to_string(),
    ];
    let mut host = Host::start(&rootfence_opts(&tree, &[], false), &server, "2025-06-18");
    host.begin(json!({}));
    let r = host.request("resources/list", json!({}));
    let listed = listed_names(&r);
    let mut want = names.clone();
    want.sort();
    assert_eq!(listed, want, "{r}");
    finish(host, &tree);
}

/// A `pnpm` tree: `node_modules/<pkg>` is a relative link into `node_modules/.pnpm`, whose
/// files are hard links to pnpm's content-addressed store outside the root. Read through
/// the reference filesystem server, default policy and sandbox.
#[test]
fn pnpm_store_hard_linked_and_symlinked_works() {
    let tree = Tree::new();
    let store = tree.base.join("pnpm-store/v10/files");
    let nm = tree.root.join("node_modules");
    let pkg = nm.join(".pnpm/left-pad@1.3.0/node_modules/left-pad");
    let files = [
        ("index.js", "module.exports = leftPad;\n", "3f/9a1c"),
        ("package.json", "{\"name\":\"left-pad\"}\n", "7b/02de"),
    ];
    for (name, text, hash) in files {
        write(&store.join(hash), text);
        std::fs::create_dir_all(&pkg).unwrap();
        std::fs::hard_link(store.join(hash), pkg.join(name)).unwrap();
    }
    symlink(
        ".pnpm/left-pad@1.3.0/node_modules/left-pad",
        nm.join("left-pad"),
    )
    .unwrap();
    tick();

    let mut host = Host::start(
        &rootfence_opts(&tree, &[], false),
        &server_filesystem(&[&tree.root]),
        "2025-06-18",
    );
    host.begin(json!({}));
    for (name, text, _) in files {
        for dir in [nm.join("left-pad"), pkg.clone()] {
            let (r, _) = host.call_tool("read_text_file", json!({"path": dir.join(name)}));
            assert_eq!(tool_text(&r), text, "{r}");
        }
    }
    finish(host, &tree);
}

/// A hard link to an outside file, planted by the server during the session (the hostile
/// server does it when it starts), sandbox off: refused on read (`hard_link`, saying why)
/// and removed from the list; its bytes never reach the host.
#[test]
fn hard_link_planted_during_the_session_is_refused_sandbox_off() {
    let tree = Tree::new();
    let mut host = Host::start(
        &rootfence_opts(&tree, &[], true),
        &hostile_server(&tree, &["--secret", MARKER]),
        "2025-06-18",
    );
    host.begin(json!({}));
    assert!(
        tree.root.join("hard_out").exists(),
        "the server planted its link"
    );
    let uri = tree.uri("hard_out");
    let r = host.request("resources/read", json!({"uri": uri}));
    assert_denied(&r, Some(&uri), &["hard_link"]);
    let mut cursor: Option<Value> = None;
    loop {
        let params = match &cursor {
            Some(c) => json!({"cursor": c}),
            None => json!({}),
        };
        let r = host.request("resources/list", params);
        assert!(
            !r.to_string().contains("hard_out"),
            "the planted link is not listed: {r}"
        );
        match r["result"].get("nextCursor") {
            Some(c) => cursor = Some(c.clone()),
            None => break,
        }
    }
    let records = finish(host, &tree);
    assert!(
        records.iter().any(|r| r["event"] == "decision"
            && r["uri"] == uri
            && r["decision"] == "deny"
            && r["reason"] == "hard_link"),
        "the refusal is audited"
    );
}

/// The same server under the default sandbox cannot plant the link at all: Landlock refuses
/// a link that would give a file more rights than it has where it lies (`EXDEV`).
#[test]
fn hard_link_planted_by_a_sandboxed_server_is_refused_by_the_kernel() {
    let tree = Tree::new();
    let mut host = Host::start(
        &rootfence_opts(&tree, &[], false),
        &hostile_server(&tree, &[]),
        "2025-06-18",
    );
    host.begin(json!({}));
    let r = host.request("resources/read", json!({"uri": tree.uri("a.txt")}));
    assert_eq!(r["result"]["contents"][0]["text"], "inside a\n", "{r}");
    finish(host, &tree);
    if !sandbox_enforced(&tree) {
        eprintln!("Landlock is not enforced here: the planted-link refusal is not checked");
        return;
    }
    assert!(
        !tree.root.join("hard_out").exists(),
        "the confined server could not link an outside file into the root"
    );
}

/// A relative tool path while the server works in the root (a host that starts it in the
/// project): resolved against the server's working directory, checked, and forwarded as
/// the absolute path checked.
#[test]
fn relative_tool_path_resolves_against_the_servers_working_directory_in_the_root() {
    let tree = Tree::new();
    let mut host = Host::start_in(
        &rootfence_opts(&tree, &[], false),
        &server_filesystem(&[&tree.root]),
        "2025-06-18",
        &tree.root,
    );
    host.begin(json!({}));
    let (r, _) = host.call_tool("read_text_file", json!({"path": "sub/b.txt"}));
    assert_eq!(tool_text(&r), "nested b\n", "{r}");
    let (r, _) = host.call_tool("read_text_file", json!({"path": "./sub/../a.txt"}));
    assert_eq!(tool_text(&r), "inside a\n", "{r}");
    // Relative, but out of the root, or to a denied file: refused as if absolute.
    let (r, _) = host.call_tool(
        "read_text_file",
        json!({"path": "../secret-place/secret.txt"}),
    );
    assert_tool_refused(&r, &["outside_roots"]);
    let (r, _) = host.call_tool("read_text_file", json!({"path": ".env"}));
    assert_tool_refused(&r, &["policy_deny"]);
    let records = finish(host, &tree);
    let forwarded = format!("{}/sub/b.txt", tree.root.display());
    assert!(
        records
            .iter()
            .any(|r| r["uri"] == "sub/b.txt" && r["canonical"].as_str().is_some()),
        "the relative path was checked as {forwarded}"
    );
}

/// A relative tool path while the server works outside every root: refused, saying what
/// to send instead.
#[test]
fn relative_tool_path_outside_the_roots_is_refused_with_what_to_send() {
    let tree = Tree::new();
    let mut host = Host::start_in(
        &rootfence_opts(&tree, &[], false),
        &server_filesystem(&[&tree.root]),
        "2025-06-18",
        &tree.base,
    );
    host.begin(json!({}));
    let (r, _) = host.call_tool("read_text_file", json!({"path": tree.root.join("a.txt")}));
    assert_eq!(tool_text(&r), "inside a\n", "an absolute path works: {r}");
    let (r, _) = host.call_tool("read_text_file", json!({"path": "a.txt"}));
    let text = r.to_string().to_lowercase();
    assert!(text.contains("relative_path"), "{r}");
    assert!(
        text.contains("use an absolute path inside")
            && text.contains(&tree.root_str().to_lowercase()),
        "the refusal says what to send: {r}"
    );
    let (r, _) = host.call_tool("read_text_file", json!({"path": "~/secret.txt"}));
    assert!(
        r.to_string()
            .to_lowercase()
            .contains("use an absolute path inside"),
        "{r}"
    );
    finish(host, &tree);
}

// -------------------------------------------------------------------------------------------
// Issue 13: time of check to time of use, host roots by where the kernel resolves them
// -------------------------------------------------------------------------------------------

/// `read = "serve"`: the server keeps flipping `flip.txt` between absent and a link to
/// `.env`. A name absent when checked is judged again on the file opened: `.env` is never
/// served, every read is answered.
#[test]
fn serve_toctou_name_flipped_between_absent_and_a_link_to_env_never_serves_env() {
    toctou_flip("serve");
}

/// The same under `read = "verify"`: rootfence never vouches for `.env`'s bytes.
#[test]
fn verify_toctou_name_flipped_between_absent_and_a_link_to_env_never_verifies_env() {
    toctou_flip("verify");
}

fn toctou_flip(stance: &str) {
    // The window (the name absent when checked, the link there when opened) is the
    // scheduler's to give: under load a round of 300 reads may never see it. Every round
    // asserts that `.env` is never read out; rounds go on until the window was met once.
    for round in 1..=ROUNDS {
        if toctou_flip_round(stance) || stance != "serve" {
            return;
        }
        eprintln!("{stance}: round {round}: the window never opened; again");
    }
    panic!("{stance}: the race was raced in {ROUNDS} rounds of 300 reads");
}

/// Rounds of [`toctou_flip_round`] before the test gives up on meeting the window.
const ROUNDS: usize = 5;

/// One session of 300 reads of a name the server flips; whether a read was refused on the
/// opened file after its check had allowed it.
fn toctou_flip_round(stance: &str) -> bool {
    let tree = Tree::new();
    let policy = format!("version = 1\n[resources]\nread = \"{stance}\"\n");
    let mut host = Host::start(
        &rootfence_opts(&tree, &["builtin:default", &policy], true),
        &hostile_server(&tree, &["--secret", MARKER, "--flip", "flip.txt=.env"]),
        "2025-06-18",
    );
    host.begin(json!({}));
    let uri = tree.uri("flip.txt");
    let ids: Vec<i64> = (0..300)
        .map(|_| host.send_request("resources/read", json!({"uri": uri})))
        .collect();
    let mut outcomes = std::collections::BTreeMap::<String, usize>::new();
    for id in ids {
        let r = host.response(id);
        assert!(
            !r.to_string().contains(POLICY_MARKER),
            "{stance}: .env was read out: {r}"
        );
        let what = match (r.get("result"), r["error"]["data"]["reason"].as_str()) {
            (Some(_), _) => "result".to_owned(),
            (None, Some(reason)) => reason.to_owned(),
            (None, None) => r["error"]["message"].as_str().unwrap_or("?").to_owned(),
        };
        *outcomes.entry(what).or_default() += 1;
    }
    eprintln!("{stance}: {outcomes:?}");
    let records = finish(host, &tree);
    // Some reads were allowed when checked (the name was absent) and refused when the file
    // opened was judged again (it was the link): the refusal on the handle did the work.
    let decisions: Vec<&Value> = records
        .iter()
        .filter(|r| r["event"] == "decision" && r["uri"] == uri)
        .collect();
    let rejudged = decisions.iter().any(|d| {
        d["decision"] == "deny"
            && d["reason"] == "policy_deny_via_symlink"
            && decisions
                .iter()
                .any(|a| a["id"] == d["id"] && a["decision"] == "allow")
    });
    eprintln!("{stance}: refused on the opened file after an allowed check: {rejudged}");
    rejudged
}

/// `read = "verify"`: the server turns `plant-.env` into a link to `.env` after rootfence
/// checked the (then absent) name, and answers with `.env`'s bytes. rootfence's own read
/// follows the same link, and is judged again: refused, never "verified".
#[test]
fn verify_toctou_link_made_after_the_check_is_never_verified() {
    let tree = Tree::new();
    let policy = "version = 1\n[resources]\nread = \"verify\"\n";
    let mut host = Host::start(
        &rootfence_opts(&tree, &["builtin:default", policy], true),
        &hostile_server(&tree, &["--secret", MARKER]),
        "2025-06-18",
    );
    host.begin(json!({}));
    // A denied file too short for the content tripwire to fingerprint (under
    // `tripwire::MIN_TOKEN` bytes): only the re-judgement of the file opened can stop it.
    let tiny = "k=v9#";
    std::fs::write(tree.root.join(".env.tiny"), tiny).unwrap();
    let uri = tree.uri("plant-.env.tiny");
    for _ in 0..5 {
        let _ = std::fs::remove_file(tree.root.join("plant-.env.tiny"));
        let r = host.request("resources/read", json!({"uri": uri}));
        assert!(!r.to_string().contains(tiny), "{r}");
        assert!(r.get("error").is_some(), "{r}");
    }
    let records = finish(host, &tree);
    // Each request was allowed (the name did not exist), and each result refused when
    // rootfence's own read was judged again.
    let of = |field: &str, decision: &str| {
        records
            .iter()
            .filter(|r| {
                r["event"] == "decision"
                    && r["uri"] == uri
                    && r["field"] == field
                    && r["decision"] == decision
            })
            .count()
    };
    assert_eq!(of("params.uri", "allow"), 5);
    assert_eq!(of("result.contents[0].uri", "deny"), 5);
}

/// The host declares, besides the root, `root/dir_out`: a symbolic link inside `--root`
/// that leads to the secret place. It is dropped (intersected by where the kernel resolves
/// it, not by its spelling): the server never sees it as a root, and the secret behind it is
/// refused.
#[test]
fn host_root_symlink_inside_the_operator_root_leading_out_is_dropped() {
    let tree = Tree::new();
    let mut host = Host::start(
        &rootfence_opts(&tree, &[], true),
        &hostile_server(&tree, &["--secret", MARKER]),
        "2025-06-18",
    );
    host.roots = Some(vec![tree.root_uri(), tree.uri("dir_out")]);
    host.begin(json!({"roots": {"listChanged": true}}));
    host.settle(300);
    let (r, _) = host.call_tool("ask_roots", json!({}));
    let seen: Value = serde_json::from_str(tool_text(&r)).unwrap_or(Value::Null);
    let seen: Vec<&str> = seen["roots"]
        .as_array()
        .unwrap_or_else(|| panic!("the server got roots: {r}"))
        .iter()
        .filter_map(|x| x["uri"].as_str())
        .collect();
    assert_eq!(seen.len(), 1, "only the root itself: {seen:?}");
    assert!(seen[0].trim_end_matches('/') == tree.root_uri(), "{seen:?}");
    let uri = tree.uri("dir_out/secret.txt");
    let r = host.request("resources/read", json!({"uri": uri}));
    assert_denied(&r, Some(&uri), &["symlink_escape"]);
    let records = finish(host, &tree);
    assert!(
        records.iter().any(|r| r["event"] == "roots_update"
            && r["dropped"]
                .as_array()
                .is_some_and(|d| d.iter().any(|x| x["reason"] == "outside_operator_roots"))),
        "the dropped root is audited"
    );
}

// -------------------------------------------------------------------------------------------
// Issue 14: a list page judged per directory is judged exactly as entry by entry
// -------------------------------------------------------------------------------------------

/// One directory listed by a server that lists everything in it: regular files and a
/// subdirectory stay; `.env` (deny glob), a link inside to `.env` (deny glob on the real
/// path), links out (absolute and relative), a loop, a dangling link and a hard link planted
/// during the session (the directory changed, so its entries are looked at) go; an absolute
/// link inside stays. What the page keeps is what one check per entry keeps.
#[test]
fn list_page_per_directory_judges_links_hard_links_and_deny_globs_like_single_checks() {
    let tree = Tree::new();
    let dir = tree.root.join("listed");
    std::fs::create_dir_all(dir.join("subdir")).unwrap();
    for n in ["one.txt", "two.txt", "three.md"] {
        write(&dir.join(n), "fine\n");
    }
    write(&dir.join(".env"), POLICY_MARKER);
    symlink(".env", dir.join("env_alias")).unwrap();
    symlink(dir.join("one.txt"), dir.join("abs_in")).unwrap();
    symlink(&tree.outside, dir.join("abs_out")).unwrap();
    symlink("../../secret-place/secret.txt", dir.join("rel_out")).unwrap();
    symlink("loop_b", dir.join("loop_a")).unwrap();
    symlink("loop_a", dir.join("loop_b")).unwrap();
    symlink("nothing-here", dir.join("dangling")).unwrap();
    tick();
    let server = vec![
        common::example("naive_fs_server").display().to_string(),
        dir.display().to_string(),
    ];
    let mut host = Host::start(&rootfence_opts(&tree, &[], true), &server, "2025-06-18");
    host.begin(json!({}));
    // Planted during the session: the directory changes, its entries are looked at.
    std::fs::hard_link(
        tree.secret_place.join("hard-secret.txt"),
        dir.join("planted"),
    )
    .unwrap();
    let r = host.request("resources/list", json!({}));
    let mut kept: Vec<&str> = r["result"]["resources"]
        .as_array()
        .unwrap_or_else(|| panic!("{r}"))
        .iter()
        .map(|e| e["uri"].as_str().unwrap().rsplit('/').next().unwrap())
        .collect();
    kept.sort();
    assert_eq!(
        kept,
        ["abs_in", "one.txt", "subdir", "three.md", "two.txt"],
        "{r}"
    );
    let records = finish(host, &tree);
    let reason = |name: &str| {
        records
            .iter()
            .find(|r| {
                r["event"] == "decision"
                    && r["uri"]
                        .as_str()
                        .is_some_and(|u| u.ends_with(&format!("/{name}")))
            })
            .map(|r| r["reason"].as_str().unwrap_or("").to_owned())
    };
    assert_eq!(reason(".env").as_deref(), Some("policy_deny"));
    assert_eq!(
        reason("env_alias").as_deref(),
        Some("policy_deny_via_symlink")
    );
    assert_eq!(reason("abs_out").as_deref(), Some("symlink_escape"));
    assert_eq!(reason("rel_out").as_deref(), Some("symlink_escape"));
    assert_eq!(reason("loop_a").as_deref(), Some("symlink_loop"));
    assert_eq!(reason("dangling").as_deref(), Some("dangling_symlink"));
    assert_eq!(reason("planted").as_deref(), Some("hard_link"));
}

/// A directory's listing kept between pages (issue 14) is never trusted after a file of it
/// becomes a link out of the root: the host lists the directory (the listing is kept), the
/// file is swapped for an escaping link at once (removed and linked, or renamed over), and
/// the next page refuses it with the single check's reason; the secret never reaches the
/// host. Default sandbox.
#[test]
fn list_page_kept_listing_is_dropped_when_a_listed_file_becomes_an_escaping_link() {
    let tree = Tree::new();
    let dir = tree.root.join("listed");
    std::fs::create_dir_all(&dir).unwrap();
    for n in ["one.txt", "two.txt", "swapped.txt", "renamed.txt"] {
        write(&dir.join(n), "fine\n");
    }
    tick();
    let server = vec![
        common::example("naive_fs_server").display().to_string(),
        dir.display().to_string(),
    ];
    let mut host = Host::start(&rootfence_opts(&tree, &[], false), &server, "2025-06-18");
    host.begin(json!({}));
    for _ in 0..2 {
        let r = host.request("resources/list", json!({}));
        assert_eq!(
            listed_names(&r),
            ["one.txt", "renamed.txt", "swapped.txt", "two.txt"],
            "{r}"
        );
    }
    std::fs::remove_file(dir.join("swapped.txt")).unwrap();
    symlink(&tree.outside, dir.join("swapped.txt")).unwrap();
    symlink(&tree.outside, dir.join(".next")).unwrap();
    std::fs::rename(dir.join(".next"), dir.join("renamed.txt")).unwrap();
    for _ in 0..2 {
        let r = host.request("resources/list", json!({}));
        assert_eq!(listed_names(&r), ["one.txt", "two.txt"], "{r}");
    }
    let records = finish(host, &tree);
    for name in ["swapped.txt", "renamed.txt"] {
        assert!(
            records.iter().any(|r| r["event"] == "decision"
                && r["reason"] == "symlink_escape"
                && r["uri"]
                    .as_str()
                    .is_some_and(|u| u.ends_with(&format!("/{name}")))),
            "{name} refused as an escape"
        );
    }
}
