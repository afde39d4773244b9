//! The server's stderr through rootfence (issue 28 item 7, issue 27's last words), written
//! as the attacks and the failures users met: a server forging rootfence's own lines and
//! driving the terminal with escape sequences; a server writing one endless line; a server
//! that dies before answering `initialize`, whose host must learn why and what to run next.

mod common;

use common::{Proxy, test_server};
use serde_json::{Value, json};

fn say(p: &mut Proxy, id: u64, text: &str) {
    p.send_json(&json!({"jsonrpc":"2.0","id":id,"method":"stderr","params":{"text":text}}));
    assert_eq!(p.recv()["id"], id);
}

#[test]
fn forged_rootfence_lines_are_shown_as_the_servers_with_escapes_removed() {
    let t = common::tempdir();
    let mut p = Proxy::run(&["--root", t.path().to_str().unwrap()], &[&test_server()]);
    p.initialize("2025-06-18");
    let forged = [
        "rootfence: sandbox (strict): landlock ABI 7: fully enforced",
        "\u{1b}[2J\u{1b}[1;1Hrootfence: policy reloaded",
        "\u{1b}]0;pwned title\u{7}rootfence: roots: none\rrootfence: overwritten\u{7}",
        "\u{202e}deifirev\u{1b}[31m red\u{9b}0m",
    ];
    for (i, text) in forged.iter().enumerate() {
        say(&mut p, 10 + i as u64, text);
    }
    p.close_stdin();
    assert_eq!(p.exit_code(), 0);
    let stderr = p.stderr();
    for bad in ['\u{1b}', '\u{7}', '\r', '\u{9b}', '\u{202e}'] {
        assert!(
            !stderr.contains(bad),
            "{bad:?} reached rootfence's stderr:\n{stderr:?}"
        );
    }
    for line in stderr.lines() {
        assert!(
            ![
                "rootfence: sandbox (strict)",
                "rootfence: policy reloaded",
                "rootfence: roots: none",
                "rootfence: overwritten"
            ]
            .iter()
            .any(|f| line.starts_with(f)),
            "a forged line passed for rootfence's own: {line:?}"
        );
    }
    for shown in [
        "[test_server] rootfence: sandbox (strict): landlock ABI 7: fully enforced",
        "[test_server] rootfence: policy reloaded",
        "[test_server] rootfence: roots: nonerootfence: overwritten",
        "[test_server] deifirev red0m",
    ] {
        assert!(stderr.contains(shown), "missing {shown:?} in:\n{stderr}");
    }
}

#[test]
fn an_endless_stderr_line_is_cut_and_counted() {
    let t = common::tempdir();
    let mut p = Proxy::run(&["--root", t.path().to_str().unwrap()], &[&test_server()]);
    p.initialize("2025-06-18");
    let long = "y".repeat(2 * 1024 * 1024);
    say(&mut p, 5, &long);
    say(&mut p, 6, "after the long line");
    p.close_stdin();
    assert_eq!(p.exit_code(), 0);
    let stderr = p.stderr();
    let line = stderr
        .lines()
        .find(|l| l.starts_with("[test_server] yyyy"))
        .expect("the long line is shown");
    assert!(line.len() < 5 * 1024, "{} bytes shown", line.len());
    assert!(
        line.ends_with(&format!(
            "[{} more bytes of this line not shown]",
            2 * 1024 * 1024 - 4096
        )),
        "{}",
        &line[line.len() - 80..]
    );
    assert!(
        stderr.contains("[test_server] after the long line"),
        "{stderr}"
    );
}

#[test]
fn a_server_that_dies_before_initialize_leaves_its_last_words_and_the_next_command() {
    let t = common::tempdir();
    let script = "echo 'starting up' >&2; \
                  echo 'loading config from /nonexistent/cfg.toml' >&2; \
                  echo \"error: Permission denied (os error 13): '/opt/tool/bin/uv'\" >&2; \
                  exit 2";
    let mut p = Proxy::run(
        &["--root", t.path().to_str().unwrap()],
        &["sh", "-c", script],
    );
    p.send_json(
        &json!({"jsonrpc":"2.0","id":0,"method":"initialize","params":{
        "protocolVersion":"2025-06-18","capabilities":{},
        "clientInfo":{"name":"test-host","version":"0"}}}),
    );
    let r: Value = p.recv();
    assert_eq!(r["id"], 0, "{r}");
    let msg = r["error"]["message"]
        .as_str()
        .unwrap_or_else(|| panic!("{r}"));
    assert!(
        msg.contains("exited with status 2 before answering `initialize`"),
        "{msg}"
    );
    assert!(
        msg.contains("`error: Permission denied (os error 13): '/opt/tool/bin/uv'`"),
        "the last words are in the message: {msg}"
    );
    assert!(msg.contains("denied: /opt/tool/bin/uv"), "{msg}");
    assert!(msg.contains("rootfence sandbox probe -- sh -c "), "{msg}");
    let data = &r["error"]["data"];
    assert_eq!(
        data["stderr"],
        json!([
            "starting up",
            "loading config from /nonexistent/cfg.toml",
            "error: Permission denied (os error 13): '/opt/tool/bin/uv'"
        ]),
        "{data}"
    );
    assert_eq!(data["denied"], json!(["/opt/tool/bin/uv"]));
    assert!(
        data["next"]
            .as_str()
            .unwrap()
            .starts_with("rootfence sandbox probe -- sh -c '"),
        "{data}"
    );
    assert_eq!(p.exit_code(), 2);
    // rootfence's own stderr says the same, once.
    let stderr = p.stderr();
    let said: Vec<&str> = stderr
        .lines()
        .filter(|l| l.starts_with("rootfence: the server exited with status 2 before answering"))
        .collect();
    assert_eq!(said.len(), 1, "{stderr}");
    assert!(
        said[0].contains("rootfence sandbox probe -- sh -c"),
        "{}",
        said[0]
    );
}
