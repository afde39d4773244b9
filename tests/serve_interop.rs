//! `rootfence serve` with real third-party peers: the official Python SDK's Streamable HTTP
//! client against `rootfence serve -- <server-everything | server-filesystem>` must print the
//! same transcript as the same script run over stdio against the bare server (and, where
//! rootfence refuses something, the same denial as `rootfence run` gives over stdio), in every
//! revision that has Streamable HTTP (2025-03-26, 2025-06-18, 2025-11-25).
//!
//! The servers run as users run them behind `rootfence serve`: default sandbox, default
//! policy, each HTTP session its own sandboxed server process.

#[path = "common/interop_peers.rs"]
mod interop_peers;
#[path = "common/serve_harness.rs"]
mod serve_harness;

use std::path::Path;

use interop_peers::{
    Client, EVERYTHING_2025_SESSION, Server, Via, as_strs, everything_2025, everything_2025_python,
    everything_latest, filesystem, first_difference, require_peers, session, steps,
};
use serde_json::Value;
use serve_harness::Serve;

/// Runs the script over stdio against the bare server (or through `via`) and over HTTP
/// through `rootfence serve <opts> -- <server>` at the same time; asserts the transcripts are
/// identical and returns the stdio one.
fn same_over_http(
    client: Client,
    args: &[&str],
    server: &Server,
    via: &Via,
    opts: &[&str],
) -> Value {
    let serve = Serve::start(opts, &as_strs(&server.argv));
    let stdio_args: Vec<String> = args.iter().map(|s| s.to_string()).collect();
    let mut http_args = stdio_args.clone();
    http_args.extend(["--http".to_owned(), serve.url.clone()]);
    let (stdio, http) = std::thread::scope(|s| {
        let stdio = s.spawn(|| session(client, &stdio_args, &server.argv, via));
        let http = s.spawn(|| session(client, &http_args, &[], &Via::Direct));
        (
            stdio
                .join()
                .unwrap_or_else(|p| std::panic::resume_unwind(p)),
            http.join().unwrap_or_else(|p| std::panic::resume_unwind(p)),
        )
    });
    if stdio != http {
        let (path, a, b) = first_difference(&stdio, &http, "$".into())
            .unwrap_or_else(|| ("$".into(), stdio.clone(), http.clone()));
        panic!(
            "{client:?}: the transcript over HTTP through rootfence serve differs from stdio {via:?}.\n\
             first difference at {path}\n  stdio: {a}\n  http:  {b}\nserve stderr:\n{}",
            serve.stderr()
        );
    }
    stdio
}

#[test]
fn python_everything_2025_over_http_matches_stdio() {
    require_peers();
    let t = same_over_http(
        Client::Python,
        &everything_2025_python(),
        &everything_2025(),
        &Via::Direct,
        &[],
    );
    assert_eq!(steps(&t, "list-resources").len(), 10);
    assert_eq!(
        steps(&t, "updated")[0]["uris"],
        serde_json::json!(["test://static/resource/3"])
    );
    assert_eq!(
        t["server_requests"],
        serde_json::json!(["roots/list", "sampling/createMessage"])
    );
    let calls = steps(&t, "call");
    assert!(
        calls[4]["result"]["content"][0]["text"]
            .as_str()
            .unwrap_or("")
            .contains("file:///tmp/rootfence-interop-root"),
        "listRoots shows the client's root: {}",
        calls[4]
    );
}

#[test]
fn python_everything_latest_over_http_matches_stdio() {
    require_peers();
    let args = [
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
        r#"get-structured-content={"location":"Chicago"}"#,
        "--prompt",
        r#"args-prompt={"city":"Paris"}"#,
    ];
    let t = same_over_http(
        Client::Python,
        &args,
        &everything_latest(),
        &Via::Direct,
        &[],
    );
    assert_eq!(steps(&t, "read").len(), 9);
    assert_eq!(steps(&t, "updated").len(), 1);
}

#[test]
fn python_older_revisions_over_http_match_stdio() {
    require_peers();
    for protocol in ["2025-03-26", "2025-06-18"] {
        let args = [
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
        ];
        let t = same_over_http(Client::Python, &args, &everything_2025(), &Via::Direct, &[]);
        assert_eq!(
            steps(&t, "initialize")[0]["result"]["protocolVersion"],
            protocol
        );
        assert_eq!(steps(&t, "list-resources").len(), 10);
    }
}

fn filesystem_calls(base: &Path) -> Vec<String> {
    let root = base.join("root");
    vec![
        "--steps".into(),
        "list-tools,call".into(),
        "--call".into(),
        "list_allowed_directories".into(),
        "--call".into(),
        format!(
            r#"read_text_file={{"path":{:?}}}"#,
            root.join("a.txt").display().to_string()
        ),
        "--call".into(),
        format!(
            r#"list_directory={{"path":{:?}}}"#,
            root.display().to_string()
        ),
    ]
}

#[test]
fn python_filesystem_over_http_matches_stdio() {
    filesystem_over_http_matches_stdio(Client::Python);
}

/// `rootfence serve --root R -- server-filesystem R` gives `client` the same transcript as
/// the bare server over stdio.
fn filesystem_over_http_matches_stdio(client: Client) {
    require_peers();
    let (server, base) = filesystem();
    let root = base.join("root").display().to_string();
    let args = filesystem_calls(&base);
    let t = same_over_http(
        client,
        &as_strs(&args),
        &server,
        &Via::Direct,
        &["--root", &root],
    );
    assert_eq!(
        steps(&t, "call")[1]["result"]["content"][0]["text"],
        "hello from inside the root\n"
    );
}

/// The rmcp client (the official Rust SDK, its Streamable HTTP client over reqwest) against
/// `rootfence serve -- server-everything 2025.11.25`: the same transcript as over stdio
/// against the bare server (reads, a read error, a subscription and its update, the
/// server's `roots/list` mid-call, tools, prompts): `tests/interop.rs`'s session.
#[test]
fn rmcp_everything_2025_over_http_matches_stdio() {
    require_peers();
    let t = same_over_http(
        Client::Rmcp,
        EVERYTHING_2025_SESSION,
        &everything_2025(),
        &Via::Direct,
        &[],
    );
    assert_eq!(
        steps(&t, "updated")[0]["uris"],
        serde_json::json!(["test://static/resource/3"])
    );
    let calls = steps(&t, "call");
    assert!(
        calls[4]
            .to_string()
            .contains("file:///tmp/rootfence-interop-root"),
        "listRoots shows the client's root: {}",
        calls[4]
    );
}

/// The rmcp client against `rootfence serve --root R -- server-filesystem R`: the same
/// transcript as over stdio against the bare server.
#[test]
fn rmcp_filesystem_over_http_matches_stdio() {
    filesystem_over_http_matches_stdio(Client::Rmcp);
}

/// The CVE-2025-53110 sibling and a system file: over HTTP, rootfence serve refuses them with
/// exactly the denial `rootfence run` gives over stdio; they never reach the server.
#[test]
fn python_filesystem_denials_over_http_match_rootfence_run() {
    filesystem_denials_over_http_match_rootfence_run(Client::Python, None);
}

/// The same with the rmcp client, in every revision that has Streamable HTTP and sessions.
/// Not 2026-07-28: server-filesystem 2026.8.31 does not answer `server/discover` (even
/// directly over stdio); that revision over HTTP is python_2026_07_28_over_http_matches_stdio.
#[test]
fn rmcp_filesystem_denials_over_http_match_rootfence_run_in_every_revision() {
    for protocol in ["2025-03-26", "2025-06-18", "2025-11-25"] {
        filesystem_denials_over_http_match_rootfence_run(Client::Rmcp, Some(protocol));
    }
}

fn filesystem_denials_over_http_match_rootfence_run(client: Client, protocol: Option<&str>) {
    require_peers();
    let (server, base) = filesystem();
    let root = base.join("root").display().to_string();
    let evil = base.join("root_evil/secret.txt").display().to_string();
    let mut args: Vec<String> = Vec::new();
    if let Some(p) = protocol {
        args.extend(["--protocol".to_owned(), p.to_owned()]);
    }
    args.extend([
        "--steps".to_owned(),
        "call".to_owned(),
        "--call-error".to_owned(),
        format!(r#"read_text_file={{"path":{evil:?}}}"#),
        "--call-error".to_owned(),
        r#"read_text_file={"path":"/etc/passwd"}"#.to_owned(),
    ]);
    let t = same_over_http(
        client,
        &as_strs(&args),
        &server,
        &Via::RootfenceWith(vec!["--root".into(), root.clone()]),
        &["--root", &root],
    );
    let errors = steps(&t, "call-error");
    assert_eq!(errors.len(), 2, "{t}");
    for e in errors {
        assert_eq!(e["error"]["isError"], true, "{e}");
        assert_eq!(e["error"]["denial"]["reason"], "outside_roots", "{e}");
    }
}

/// Two clients at once through one `rootfence serve`, each declaring its own root: each reads
/// its own file, and the other's is refused as outside its roots (no session sees another's
/// roots or files).
#[test]
fn python_sessions_do_not_see_each_others_roots() {
    require_peers();
    let (server, base) = filesystem();
    let root = base.join("root");
    for (dir, file) in [("a", "mine-a.txt"), ("b", "mine-b.txt")] {
        std::fs::create_dir_all(root.join(dir)).unwrap();
        std::fs::write(root.join(dir).join(file), format!("{dir}\n")).unwrap();
    }
    let serve = Serve::start(&[], &as_strs(&server.argv));
    let script = |mine: &str, theirs: &str| -> Vec<String> {
        let own = root.join(mine);
        let other = root.join(theirs);
        vec![
            "--steps".into(),
            "call".into(),
            "--roots".into(),
            format!("file://{}", own.display()),
            "--call".into(),
            format!(
                r#"read_text_file={{"path":{:?}}}"#,
                own.join(format!("mine-{mine}.txt")).display().to_string()
            ),
            "--call-error".into(),
            format!(
                r#"read_text_file={{"path":{:?}}}"#,
                other
                    .join(format!("mine-{theirs}.txt"))
                    .display()
                    .to_string()
            ),
            "--http".into(),
            serve.url.clone(),
        ]
    };
    let (a, b) = std::thread::scope(|s| {
        let a = s.spawn(|| session(Client::Python, &script("a", "b"), &[], &Via::Direct));
        let b = s.spawn(|| session(Client::Python, &script("b", "a"), &[], &Via::Direct));
        (a.join().unwrap(), b.join().unwrap())
    });
    for (t, mine) in [(&a, "a"), (&b, "b")] {
        assert_eq!(
            steps(t, "call")[0]["result"]["content"][0]["text"],
            format!("{mine}\n"),
            "{t}"
        );
        let denied = &steps(t, "call-error")[0]["error"];
        assert_eq!(denied["denial"]["reason"], "outside_roots", "{t}");
    }
}

/// A 2026-07-28 session (`server/discover`, then stateless requests carrying `_meta`) against
/// the Python SDK's own server: over HTTP through rootfence serve as over stdio. With
/// `--roots`, rootfence asks the client for its roots MRTR style (`input_required`), which
/// the SDK's driver answers, and carries them between requests in the signed requestState.
#[test]
fn python_2026_07_28_over_http_matches_stdio() {
    require_peers();
    for roots in [false, true] {
        let mut args = vec![
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
        ];
        if roots {
            args.extend(["--roots", "file:///tmp/rootfence-interop-root"]);
        }
        // With roots, rootfence (run or serve) asks the client for them; the bare server never
        // does: compare with `rootfence run` over stdio.
        let via = if roots { Via::Rootfence } else { Via::Direct };
        let t = same_over_http(
            Client::Python,
            &args,
            &interop_peers::python_server(),
            &via,
            &[],
        );
        if roots {
            assert_eq!(t["server_requests"], serde_json::json!(["roots/list"]));
        }
        assert_eq!(steps(&t, "discover").len(), 1);
        assert!(steps(&t, "initialize").is_empty());
        assert_eq!(
            steps(&t, "call")[0]["result"]["content"][0]["text"],
            "Echo: stateless"
        );
    }
}
