//! Interop with real third-party MCP peers: the same scripted session, run directly against a
//! server and through a wrapper command, must give the same transcript.
//!
//! The peers are pinned and installed by `scripts/install-test-peers.sh` (CI runs it through
//! `scripts/test.sh`): the npm servers `@modelcontextprotocol/server-everything` 2025.11.25
//! (100 paginated `test://` resources, timed subscription updates) and 2026.8.31, and
//! `@modelcontextprotocol/server-filesystem` 2026.8.31; the official Python `mcp` SDK client
//! (`tests/peers/py/session.py`) and the official Rust `rmcp` client
//! (`tests/peers/rmcp-client`). The npm servers speak the four handshake revisions only, so
//! 2026-07-28 sessions run against the Python SDK's own server (`tests/peers/py/server.py`).
//! Each client prints a normalized transcript (volatile values masked); this file runs it
//! once against the bare server and once through the wrapper, in parallel, and compares the
//! two documents, then checks facts of the direct one so the comparison is never vacuous.
//!
//! Two wrappers: `rootfence run -- <server>` (the product), and `byte_relay.py`, a do-nothing
//! relay that proves the harness itself: if direct and byte-relay transcripts differ, the
//! harness or the masking is wrong, not rootfence.

#[path = "common/interop_peers.rs"]
mod interop_peers;

use std::path::Path;

use interop_peers::{
    Client, EVERYTHING_2025_SESSION, Via, as_strs, everything_2025, everything_2025_python,
    everything_latest, filesystem, first_difference, python_server, require_peers, same_both_ways,
    steps,
};
use serde_json::Value;

fn check_everything_2025(t: &Value) {
    let pages = steps(t, "list-resources");
    assert_eq!(
        pages.len(),
        10,
        "server-everything 2025.11.25 pages 100 resources by 10"
    );
    let listed: usize = pages
        .iter()
        .map(|p| p["result"]["resources"].as_array().map_or(0, Vec::len))
        .sum();
    assert_eq!(listed, 100);
    assert!(
        pages[9]["result"].get("nextCursor").is_none(),
        "the last page has no cursor"
    );
    assert_eq!(
        steps(t, "updated")[0]["uris"],
        serde_json::json!(["test://static/resource/3"])
    );
    assert_eq!(steps(t, "read").len(), 3);
    assert!(steps(t, "read")[1]["result"]["contents"][0]["blob"].is_string());
    assert_eq!(steps(t, "read-error").len(), 1);
    let calls = steps(t, "call");
    assert_eq!(
        calls[0]["result"]["content"][0]["text"],
        "Echo: hello through the relay"
    );
    assert!(
        calls[4]["result"]["content"][0]["text"]
            .as_str()
            .unwrap_or("")
            .contains("file:///tmp/rootfence-interop-root"),
        "listRoots shows the root the client answered with: {}",
        calls[4]
    );
}

fn check_everything_2025_python(t: &Value) {
    check_everything_2025(t);
    assert_eq!(
        t["server_requests"],
        serde_json::json!(["roots/list", "sampling/createMessage"])
    );
    let sampled = steps(t, "call")
        .into_iter()
        .find(|c| c["name"] == "sampleLLM")
        .expect("sampleLLM was called");
    assert!(
        sampled["result"]["content"][0]["text"]
            .as_str()
            .unwrap_or("")
            .contains("a canned completion from the interop client"),
        "{sampled}"
    );
    assert_eq!(
        steps(t, "complete")[0]["result"]["completion"]["values"],
        serde_json::json!(["formal", "friendly"])
    );
}

/// server-everything 2026.8.31: 7 documents without pagination, templated dynamic resources
/// (whose clock-time text is masked), a subscription whose updates a tool toggles on and off.
const EVERYTHING_LATEST_SESSION: &[&str] = &[
    "--read-listed",
    "7",
    "--read",
    "demo://resource/dynamic/text/1",
    "--read",
    "demo://resource/dynamic/blob/2",
    "--subscribe",
    "demo://resource/static/document/architecture.md",
    "--subscribe-trigger",
    "toggle-subscriber-updates",
    "--update-timeout",
    "10",
    "--call",
    r#"echo={"message":"hi"}"#,
    "--call",
    r#"get-sum={"a":2,"b":3}"#,
    "--call",
    r#"get-resource-links={"count":3}"#,
    "--call",
    r#"get-resource-reference={"resourceType":"Blob","resourceId":3}"#,
    "--call",
    r#"get-structured-content={"location":"Chicago"}"#,
    "--prompt",
    "simple-prompt",
    "--prompt",
    r#"args-prompt={"city":"Paris"}"#,
];

fn check_everything_latest(t: &Value) {
    let pages = steps(t, "list-resources");
    assert_eq!(
        pages.len(),
        1,
        "server-everything 2026.8.31 does not paginate"
    );
    assert_eq!(
        pages[0]["result"]["resources"].as_array().map(Vec::len),
        Some(7)
    );
    assert_eq!(steps(t, "read").len(), 9);
    assert_eq!(
        steps(t, "updated")[0]["uris"],
        serde_json::json!(["demo://resource/static/document/architecture.md"])
    );
}

fn filesystem_session(base: &Path) -> Vec<String> {
    let root = base.join("root");
    let inside = root.join("a.txt");
    let nested = root.join("sub/b.txt");
    vec![
        "--steps".into(),
        "list-tools,call".into(),
        "--call".into(),
        "list_allowed_directories".into(),
        "--call".into(),
        format!(
            r#"read_text_file={{"path":{:?}}}"#,
            inside.display().to_string()
        ),
        "--call".into(),
        format!(
            r#"read_text_file={{"path":{:?}}}"#,
            nested.display().to_string()
        ),
        "--call".into(),
        format!(
            r#"list_directory={{"path":{:?}}}"#,
            root.display().to_string()
        ),
    ]
}

/// Paths outside the root: the string-prefix sibling of CVE-2025-53110 and a system file.
/// Direct, the server refuses them itself (a tool error); through rootfence they never reach
/// the server: rootfence answers with its denial error.
fn filesystem_outside_calls(base: &Path) -> Vec<String> {
    let evil = base.join("root_evil/secret.txt");
    vec![
        "--steps".into(),
        "call".into(),
        "--call-error".into(),
        format!(
            r#"read_text_file={{"path":{:?}}}"#,
            evil.display().to_string()
        ),
        "--call-error".into(),
        r#"read_text_file={"path":"/etc/passwd"}"#.into(),
    ]
}

/// rootfence with the filesystem server's own directory as its root.
fn via_rootfence_with_root(base: &Path) -> Via {
    Via::RootfenceWith(vec![
        "--root".into(),
        base.join("root").display().to_string(),
    ])
}

fn check_filesystem(t: &Value) {
    let calls = steps(t, "call");
    assert_eq!(
        calls[1]["result"]["content"][0]["text"],
        "hello from inside the root\n"
    );
    assert_eq!(calls[2]["result"]["content"][0]["text"], "nested file\n");
}

fn check_outside_denied_by_rootfence(t: &Value) {
    let errors = steps(t, "call-error");
    assert_eq!(errors.len(), 2, "{t}");
    for e in errors {
        // A tool execution error (SEP-1303) the model can act on, not a protocol error.
        assert_eq!(
            e["error"]["isError"], true,
            "rootfence refuses the call: {e}"
        );
        let msg = e["error"]["text"].as_str().unwrap_or("");
        assert!(msg.starts_with("rootfence refused this call"), "{msg}");
        assert!(msg.contains("outside the allowed roots"), "{msg}");
        assert!(msg.contains("Use an absolute path inside"), "{msg}");
        assert_eq!(e["error"]["denial"]["reason"], "outside_roots", "{e}");
    }
}

/// Older handshake revisions against server-everything 2025.11.25 (its TS SDK supports all
/// four): a shorter session per revision, since the full one runs at 2025-11-25 above.
fn revision_session(protocol: &str) -> Vec<&str> {
    vec![
        "--protocol",
        protocol,
        "--steps",
        "list-resources,list-templates,read,list-tools,call,list-prompts,get-prompt",
        "--read",
        "test://static/resource/1",
        "--read",
        "test://static/resource/2",
        "--call",
        r#"echo={"message":"revision"}"#,
        "--call",
        r#"getResourceReference={"resourceId":6}"#,
        "--prompt",
        r#"resource_prompt={"resourceId":"7"}"#,
    ]
}

/// A 2026-07-28 session: `server/discover`, then stateless requests carrying `_meta`.
fn modern_session() -> Vec<&'static str> {
    vec![
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
        "--call",
        r#"add={"a":20,"b":22}"#,
        "--prompt",
        r#"greet={"name":"Ada"}"#,
    ]
}

fn check_modern(t: &Value) {
    let discover = steps(t, "discover");
    assert_eq!(
        discover.len(),
        1,
        "a 2026-07-28 session starts with server/discover"
    );
    assert!(steps(t, "initialize").is_empty(), "and has no initialize");
    assert_eq!(steps(t, "read").len(), 3);
    assert_eq!(
        steps(t, "read-error")[0]["error"]["code"],
        -32602,
        "2026-07-28 reports an unknown resource as -32602"
    );
    assert_eq!(
        steps(t, "call")[0]["result"]["content"][0]["text"],
        "Echo: stateless"
    );
}

fn check_revision(t: &Value, protocol: &str) {
    assert_eq!(
        steps(t, "initialize")[0]["result"]["protocolVersion"],
        protocol
    );
    assert_eq!(steps(t, "list-resources").len(), 10);
}

// -------------------------------------------------------------------------------------------
// The harness proves itself: a do-nothing byte relay gives the direct transcript
// -------------------------------------------------------------------------------------------

#[test]
fn harness_python_everything_2025_byte_relay_matches_direct() {
    require_peers();
    let t = same_both_ways(
        Client::Python,
        &everything_2025_python(),
        &everything_2025(),
        &Via::ByteRelay,
    );
    check_everything_2025_python(&t);
}

#[test]
fn harness_python_everything_latest_byte_relay_matches_direct() {
    require_peers();
    let t = same_both_ways(
        Client::Python,
        EVERYTHING_LATEST_SESSION,
        &everything_latest(),
        &Via::ByteRelay,
    );
    check_everything_latest(&t);
}

#[test]
fn harness_python_filesystem_byte_relay_matches_direct() {
    require_peers();
    let (server, base) = filesystem();
    let args = filesystem_session(&base);
    let t = same_both_ways(Client::Python, &as_strs(&args), &server, &Via::ByteRelay);
    check_filesystem(&t);
}

#[test]
fn harness_rmcp_everything_2025_byte_relay_matches_direct() {
    require_peers();
    let t = same_both_ways(
        Client::Rmcp,
        EVERYTHING_2025_SESSION,
        &everything_2025(),
        &Via::ByteRelay,
    );
    check_everything_2025(&t);
}

#[test]
fn harness_python_older_revisions_byte_relay_matches_direct() {
    require_peers();
    for protocol in ["2024-11-05", "2025-03-26", "2025-06-18"] {
        let t = same_both_ways(
            Client::Python,
            &revision_session(protocol),
            &everything_2025(),
            &Via::ByteRelay,
        );
        check_revision(&t, protocol);
    }
}

#[test]
fn harness_rmcp_filesystem_byte_relay_matches_direct() {
    require_peers();
    let (server, base) = filesystem();
    let args = filesystem_session(&base);
    let t = same_both_ways(Client::Rmcp, &as_strs(&args), &server, &Via::ByteRelay);
    check_filesystem(&t);
}

#[test]
fn harness_python_modern_byte_relay_matches_direct() {
    require_peers();
    let t = same_both_ways(
        Client::Python,
        &modern_session(),
        &python_server(),
        &Via::ByteRelay,
    );
    check_modern(&t);
}

/// A relay that changes one word of one tool result is caught, end to end: the comparison is
/// not vacuous and the masking does not hide real content.
#[test]
fn harness_catches_a_tampering_relay() {
    require_peers();
    let (server, base) = filesystem();
    let args = filesystem_session(&base);
    let caught = std::panic::catch_unwind(|| {
        same_both_ways(
            Client::Python,
            &as_strs(&args),
            &server,
            &Via::TamperingRelay("from inside the root", "from INSIDE the root"),
        )
    });
    assert!(caught.is_err(), "a tampering relay went unnoticed");
}

/// The masking is what makes two runs comparable; a transcript of a dynamic resource must
/// still differ from a wrong one (the harness is not comparing placeholders only).
#[test]
fn harness_detects_a_difference() {
    let a = serde_json::json!({"steps": [{"step": "read", "result": {"text": "Resource 1"}}]});
    let b = serde_json::json!({"steps": [{"step": "read", "result": {"text": "Resource 2"}}]});
    let (path, _, _) = first_difference(&a, &b, "$".into()).expect("they differ");
    assert_eq!(path, "$.steps[0].result.text");
    assert!(first_difference(&a, &a, "$".into()).is_none());
}

// -------------------------------------------------------------------------------------------
// Through rootfence: the same session gives the same result
// -------------------------------------------------------------------------------------------

#[test]
fn python_everything_2025_through_rootfence_matches_direct() {
    require_peers();
    let t = same_both_ways(
        Client::Python,
        &everything_2025_python(),
        &everything_2025(),
        &Via::Rootfence,
    );
    check_everything_2025_python(&t);
}

#[test]
fn python_everything_latest_through_rootfence_matches_direct() {
    require_peers();
    let t = same_both_ways(
        Client::Python,
        EVERYTHING_LATEST_SESSION,
        &everything_latest(),
        &Via::Rootfence,
    );
    check_everything_latest(&t);
}

#[test]
fn python_filesystem_through_rootfence_matches_direct() {
    require_peers();
    let (server, base) = filesystem();
    let args = filesystem_session(&base);
    let via = via_rootfence_with_root(&base);
    let t = same_both_ways(Client::Python, &as_strs(&args), &server, &via);
    check_filesystem(&t);
    let outside = filesystem_outside_calls(&base);
    let t = interop_peers::session(Client::Python, &outside, &server.argv, &via);
    check_outside_denied_by_rootfence(&t);
}

#[test]
fn python_older_revisions_through_rootfence_match_direct() {
    require_peers();
    for protocol in ["2024-11-05", "2025-03-26", "2025-06-18"] {
        let t = same_both_ways(
            Client::Python,
            &revision_session(protocol),
            &everything_2025(),
            &Via::Rootfence,
        );
        check_revision(&t, protocol);
    }
}

#[test]
fn rmcp_everything_2025_through_rootfence_matches_direct() {
    require_peers();
    let t = same_both_ways(
        Client::Rmcp,
        EVERYTHING_2025_SESSION,
        &everything_2025(),
        &Via::Rootfence,
    );
    check_everything_2025(&t);
}

#[test]
fn rmcp_filesystem_through_rootfence_matches_direct() {
    require_peers();
    let (server, base) = filesystem();
    let args = filesystem_session(&base);
    let via = via_rootfence_with_root(&base);
    let t = same_both_ways(Client::Rmcp, &as_strs(&args), &server, &via);
    check_filesystem(&t);
    let outside = filesystem_outside_calls(&base);
    let t = interop_peers::session(Client::Rmcp, &outside, &server.argv, &via);
    check_outside_denied_by_rootfence(&t);
}

#[test]
fn python_2026_07_28_through_rootfence_matches_direct() {
    require_peers();
    let t = same_both_ways(
        Client::Python,
        &modern_session(),
        &python_server(),
        &Via::Rootfence,
    );
    check_modern(&t);
}

#[test]
fn rmcp_2026_07_28_through_rootfence_matches_direct() {
    require_peers();
    let t = same_both_ways(
        Client::Rmcp,
        &modern_session(),
        &python_server(),
        &Via::Rootfence,
    );
    check_modern(&t);
}

/// The Python server at the newest handshake revision, through rootfence, with the rmcp
/// client: the same peer in the other era.
#[test]
fn rmcp_python_server_2025_11_25_through_rootfence_matches_direct() {
    require_peers();
    let mut args = modern_session();
    args[1] = "2025-11-25";
    let t = same_both_ways(Client::Rmcp, &args, &python_server(), &Via::Rootfence);
    assert_eq!(
        steps(&t, "initialize")[0]["result"]["protocolVersion"],
        "2025-11-25"
    );
}
