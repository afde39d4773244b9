//! End-to-end tests of `rootfence run` as a plain relay (issue 2), through the real binary:
//! a scripted host (this test) against the scripted test server (`examples/test_server.rs`)
//! and against shell one-liners for the lifecycle cases a well-behaved server never shows.

mod common;

use std::time::{Duration, Instant};

use common::{alive, eventually, tempdir, test_server};
use serde_json::{Value, json};

/// `rootfence run` with the default policy but no OS sandbox: these tests are about the
/// relay, and their servers write logs and pid files to the test's temporary directory (the
/// sandbox has its own tests).
struct Proxy;

impl Proxy {
    fn run(opts: &[&str], server: &[&str]) -> common::Proxy {
        let mut all = vec!["--sandbox", "off"];
        all.extend_from_slice(opts);
        common::Proxy::run(&all, server)
    }

    fn start(args: &[&str]) -> common::Proxy {
        common::Proxy::start(args)
    }
}

fn server_log(dir: &tempfile::TempDir) -> (String, std::path::PathBuf) {
    let path = dir.path().join("server.log");
    (test_server(), path)
}

fn read_log(path: &std::path::Path) -> Vec<String> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .map(str::to_owned)
        .collect()
}

#[test]
fn messages_pass_byte_for_byte_both_ways() {
    let dir = tempdir();
    let (server, log) = server_log(&dir);
    let mut p = Proxy::run(&[], &[&server, "--log", log.to_str().unwrap()]);
    // Odd spacing, escapes, big numbers, non-ASCII and U+2028: all must arrive untouched.
    let requests = [
        r#"{"jsonrpc":"2.0","id":1,"method":"echo","params":{"a":  1.50, "b":"\u00e9\/", "c":1e400}}"#,
        r#"{ "method" : "echo" , "id" : 1234567890123456789012345 , "jsonrpc" : "2.0" , "params" : [ -0.0 ] }"#,
        "{\"jsonrpc\":\"2.0\",\"id\":\"\u{e9}\u{2028}x\",\"method\":\"echo\",\"params\":{\"s\":\"\u{2028}\u{1F600}\"}}",
    ];
    for r in requests {
        p.send(r);
    }
    let got: Vec<String> = (0..3).map(|_| p.recv_line()).collect();
    assert_eq!(
        got,
        [
            r#"{"jsonrpc":"2.0","id":1,"result":{"a":  1.50, "b":"\u00e9\/", "c":1e400}}"#,
            r#"{"jsonrpc":"2.0","id":1234567890123456789012345,"result":[ -0.0 ]}"#,
            "{\"jsonrpc\":\"2.0\",\"id\":\"\u{e9}\u{2028}x\",\"result\":{\"s\":\"\u{2028}\u{1F600}\"}}",
        ]
    );
    p.close_stdin();
    assert_eq!(p.exit_code(), 0);
    assert_eq!(read_log(&log), requests);
}

#[test]
fn crlf_and_blank_lines_are_tolerated() {
    let dir = tempdir();
    let (server, log) = server_log(&dir);
    let mut p = Proxy::run(&[], &[&server, "--log", log.to_str().unwrap()]);
    p.send_raw(b"\r\n\n   \n{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}\r\n\t\n");
    assert_eq!(p.recv(), json!({"jsonrpc":"2.0","id":1,"result":{}}));
    p.close_stdin();
    assert_eq!(p.exit_code(), 0);
    assert_eq!(
        read_log(&log),
        [r#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#]
    );
}

#[test]
fn bad_host_input_gets_errors_and_the_session_continues() {
    let dir = tempdir();
    let (server, log) = server_log(&dir);
    let mut p = Proxy::run(
        &["--max-message-size", "1KiB"],
        &[&server, "--log", log.to_str().unwrap()],
    );
    let cases: Vec<(Vec<u8>, i64, Value)> = vec![
        (b"this is not json".to_vec(), -32700, Value::Null),
        (b"{\"jsonrpc\":\"2.0\",\"id\":1,".to_vec(), -32700, Value::Null),
        (b"\xff\xfe{}".to_vec(), -32700, Value::Null),
        // Too long to read, but its id is in the part kept: the request gets its answer.
        (format!("{{\"jsonrpc\":\"2.0\",\"id\":9,\"method\":\"echo\",\"params\":\"{}\"}}", "x".repeat(2000)).into_bytes(), -32600, json!(9)),
        (br#"{"id":2,"method":"ping"}"#.to_vec(), -32600, json!(2)),
        (br#"{"jsonrpc":"2.0","id":3.5,"method":"ping"}"#.to_vec(), -32600, Value::Null),
        (br#"{"jsonrpc":"2.0","id":4,"method":"ping","result":{}}"#.to_vec(), -32600, json!(4)),
        (br#"[]"#.to_vec(), -32600, Value::Null),
        (br#"42"#.to_vec(), -32600, Value::Null),
        // The parser-differential defence: duplicate keys never reach the server.
        (br#"{"jsonrpc":"2.0","id":5,"method":"resources/read","params":{"uri":"file:///ok","uri":"file:///etc/passwd"}}"#.to_vec(), -32600, json!(5)),
        (br#"{"jsonrpc":"2.0","id":6,"method":"echo","params":{"a":{"b":1,"\u0062":2}}}"#.to_vec(), -32600, json!(6)),
    ];
    for (bytes, code, id) in &cases {
        let mut line = bytes.clone();
        line.push(b'\n');
        p.send_raw(&line);
        let resp = p.recv();
        assert_eq!(
            resp["error"]["code"],
            json!(code),
            "for {:?}: {resp}",
            String::from_utf8_lossy(bytes)
        );
        assert_eq!(
            &resp["id"],
            id,
            "for {:?}: {resp}",
            String::from_utf8_lossy(bytes)
        );
        assert!(
            resp["error"]["message"]
                .as_str()
                .unwrap()
                .starts_with("rootfence: ")
        );
    }
    // Still alive and relaying.
    p.send(r#"{"jsonrpc":"2.0","id":7,"method":"ping"}"#);
    assert_eq!(p.recv(), json!({"jsonrpc":"2.0","id":7,"result":{}}));
    p.close_stdin();
    assert_eq!(p.exit_code(), 0);
    // The server saw only the one valid request.
    assert_eq!(
        read_log(&log),
        [r#"{"jsonrpc":"2.0","id":7,"method":"ping"}"#]
    );
}

#[test]
fn bad_server_output_is_dropped_and_reported() {
    let mut p = Proxy::run(&[], &[&test_server()]);
    let junk = [
        "not json",
        r#"{"jsonrpc":"2.0","id":424242,"result":{}}"#,
        r#"{"jsonrpc":"2.0","method":"notifications/message","params":{"a":1,"a":2}}"#,
        r#"{"jsonrpc":"2.0","id":"x","result":{},"error":{"code":1,"message":"m"}}"#,
    ];
    p.send_json(&json!({"jsonrpc":"2.0","id":1,"method":"emit","params":{"lines": junk}}));
    // Only the server's proper answer reaches the host.
    assert_eq!(p.recv(), json!({"jsonrpc":"2.0","id":1,"result":{}}));
    p.expect_silence(200);
    // Ending the session reads rootfence's stderr to the end: the reports are on it by then,
    // however late the test's reader thread got to them.
    p.close_stdin();
    assert_eq!(p.exit_code(), 0);
    let stderr = p.stderr();
    assert!(stderr.contains("bad_json"), "{stderr}");
    assert!(stderr.contains("unmatched_response"), "{stderr}");
    assert!(stderr.contains("duplicate key"), "{stderr}");
}

#[test]
fn malformed_server_response_still_answers_the_waiting_request() {
    let mut p = Proxy::run(&[], &[&test_server()]);
    // Request 2 stays open; the server then writes a malformed response for id 2.
    p.send(r#"{"jsonrpc":"2.0","id":2,"method":"never"}"#);
    p.send_json(&json!({"jsonrpc":"2.0","id":1,"method":"emit","params":{"respond": false, "lines": [
        r#"{"jsonrpc":"2.0","id":2,"result":{"contents":[{"uri":"file:///a","uri":"file:///etc/shadow"}]}}"#
    ]}}));
    let resp = p.recv();
    assert_eq!(resp["id"], 2);
    assert_eq!(resp["error"]["code"], -32011, "{resp}");
    assert!(
        resp["error"]["message"]
            .as_str()
            .unwrap()
            .contains("malformed"),
        "{resp}"
    );
    assert!(!resp.to_string().contains("shadow"));
}

#[test]
fn server_requests_and_host_responses_round_trip() {
    let mut p = Proxy::run(&[], &[&test_server()]);
    // elicitation/create: a server request rootfence relays without owning it (roots/list
    // is answered by rootfence itself; the enforcement tests cover that).
    p.send(r#"{"jsonrpc":"2.0","id":1,"method":"ask_host","params":{"method":"elicitation/create","id":1}}"#);
    // The server's own request 1 and the host's request 1 are different requests.
    let req = p.recv();
    assert_eq!(
        req,
        json!({"jsonrpc":"2.0","method":"elicitation/create","id":1})
    );
    p.send(r#"{"jsonrpc":"2.0","id":1,"result":{"action":"accept","content":{"x":1}}}"#);
    let resp = p.recv();
    assert_eq!(resp["id"], 1);
    assert_eq!(resp["result"]["host_response"]["result"]["content"]["x"], 1);
    // A second host response to the same server request matches nothing and is dropped.
    p.send(r#"{"jsonrpc":"2.0","id":1,"result":{"action":"decline"}}"#);
    p.expect_silence(200);
    // Nothing orders the report after the silence (under load rootfence may not have read
    // the line yet): end the session, which reads its stderr to the end.
    p.close_stdin();
    assert_eq!(p.exit_code(), 0);
    assert!(p.stderr().contains("unmatched_response"), "{}", p.stderr());
}

#[test]
fn batches_are_relayed_and_invalid_elements_answered() {
    let dir = tempdir();
    let (server, log) = server_log(&dir);
    let mut p = Proxy::run(&[], &[&server, "--log", log.to_str().unwrap()]);
    let batch = r#"[{"jsonrpc":"2.0","id":1,"method":"ping"},{"jsonrpc":"2.0","method":"notifications/initialized"},{"jsonrpc":"2.0","id":2,"method":"ping"}]"#;
    p.send(batch);
    // Our test server answers the batch's requests one by one.
    let got = p.recv_by_id(2);
    assert!(got.contains_key("1") && got.contains_key("2"), "{got:?}");
    assert_eq!(
        read_log(&log),
        [batch],
        "a clean batch is forwarded as it came"
    );

    // One bad element: it gets its own error element; the rest goes on as a batch.
    p.send(r#"[{"jsonrpc":"2.0","id":3,"method":"ping"},{"jsonrpc":"2.0","id":4,"method":"x","params":{"a":1,"a":2}},42]"#);
    let errors = p.recv();
    let errors = errors.as_array().expect("errors come back as a batch");
    assert_eq!(errors.len(), 2);
    assert_eq!(errors[0]["id"], 4);
    assert_eq!(errors[0]["error"]["code"], -32600);
    assert_eq!(errors[1]["id"], Value::Null);
    assert_eq!(p.recv()["id"], 3);
    let seen = read_log(&log);
    assert_eq!(
        seen.last().unwrap(),
        r#"[{"jsonrpc":"2.0","id":3,"method":"ping"}]"#
    );
}

#[test]
fn server_batches_are_relayed_to_the_host() {
    let mut p = Proxy::run(&[], &[&test_server()]);
    p.send(r#"{"jsonrpc":"2.0","id":10,"method":"never"}"#);
    p.send(r#"{"jsonrpc":"2.0","id":11,"method":"never"}"#);
    let batch = r#"[{"jsonrpc":"2.0","id":10,"result":{}},{"jsonrpc":"2.0","id":999,"result":{}},{"jsonrpc":"2.0","id":11,"result":{"x":1}}]"#;
    p.send_json(&json!({"jsonrpc":"2.0","id":1,"method":"emit","params":{"lines":[batch]}}));
    let mut seen = [p.recv(), p.recv()];
    seen.sort_by_key(|v| v.is_array());
    assert_eq!(seen[0]["id"], 1);
    // The unmatched element is removed; the rest arrive as one batch.
    assert_eq!(
        seen[1],
        json!([{"jsonrpc":"2.0","id":10,"result":{}},{"jsonrpc":"2.0","id":11,"result":{"x":1}}])
    );
}

#[test]
fn duplicate_in_flight_id_is_refused() {
    let mut p = Proxy::run(&[], &[&test_server()]);
    p.send(r#"{"jsonrpc":"2.0","id":"a","method":"never"}"#);
    p.send(r#"{"jsonrpc":"2.0","id":"a","method":"ping"}"#);
    let resp = p.recv();
    assert_eq!(resp["id"], "a");
    assert_eq!(resp["error"]["code"], -32600);
    assert!(
        resp["error"]["message"]
            .as_str()
            .unwrap()
            .contains("already in flight")
    );
}

#[test]
fn cancelled_request_late_response_is_dropped() {
    let mut p = Proxy::run(&[], &[&test_server()]);
    p.send(r#"{"jsonrpc":"2.0","id":1,"method":"slow","params":{"ms":300}}"#);
    p.send(r#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1}}"#);
    p.send(r#"{"jsonrpc":"2.0","id":2,"method":"ping"}"#);
    assert_eq!(p.recv()["id"], 2);
    // The server answers request 1 anyway; the host asked not to hear about it.
    p.expect_silence(600);
    assert!(
        !p.stderr().contains("unmatched_response"),
        "a late answer is not a protocol error"
    );
}

#[test]
fn server_exit_answers_every_pending_request_and_exit_code_follows() {
    let mut p = Proxy::run(&[], &[&test_server()]);
    p.send(r#"{"jsonrpc":"2.0","id":1,"method":"never"}"#);
    p.send(r#"{"jsonrpc":"2.0","id":"two","method":"never"}"#);
    p.send(r#"{"jsonrpc":"2.0","id":3,"method":"exit","params":{"code":3}}"#);
    let got = p.recv_by_id(3);
    for id in ["1", "\"two\"", "3"] {
        let e = &got[id]["error"];
        assert_eq!(e["code"], -32000, "{id}: {e}");
        assert!(
            e["message"]
                .as_str()
                .unwrap()
                .contains("exited with status 3"),
            "{e}"
        );
    }
    p.expect_eof();
    assert_eq!(p.exit_code(), 3);
}

#[test]
fn server_killed_by_signal_gives_128_plus_signal() {
    let mut p = Proxy::run(&[], &[&test_server()]);
    p.send(r#"{"jsonrpc":"2.0","id":1,"method":"die"}"#);
    let resp = p.recv();
    assert!(
        resp["error"]["message"]
            .as_str()
            .unwrap()
            .contains("SIGKILL"),
        "{resp}"
    );
    assert_eq!(p.exit_code(), 137);
}

#[test]
fn host_eof_closes_server_stdin_and_exits_with_its_status() {
    let mut p = Proxy::run(&[], &["sh", "-c", "cat >/dev/null; exit 7"]);
    p.close_stdin();
    assert_eq!(p.exit_code(), 7);
}

#[test]
fn server_ignoring_eof_gets_sigterm_after_grace() {
    let started = Instant::now();
    let mut p = Proxy::run(&["--shutdown-grace", "200ms"], &["sleep", "30"]);
    p.close_stdin();
    assert_eq!(p.exit_code(), 128 + 15);
    assert!(started.elapsed() < Duration::from_secs(10));
}

#[test]
fn server_ignoring_sigterm_gets_sigkill() {
    // `trap '' TERM` makes the shell and what it execs ignore SIGTERM.
    let mut p = Proxy::run(
        &["--shutdown-grace", "200ms"],
        &["sh", "-c", "trap '' TERM; exec sleep 30"],
    );
    p.close_stdin();
    assert_eq!(p.exit_code(), 128 + 9);
}

#[test]
fn host_requests_after_the_server_closed_its_output_get_errors() {
    // The server closes stdout but keeps running (until its stdin closes).
    let mut p = Proxy::run(
        &["--shutdown-grace", "200ms"],
        &["sh", "-c", "exec 1>&-; cat >/dev/null"],
    );
    p.send(r#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#);
    let resp = p.recv();
    assert_eq!(resp["id"], 1);
    assert_eq!(resp["error"]["code"], -32000);
    assert!(
        resp["error"]["message"]
            .as_str()
            .unwrap()
            .contains("closed its output"),
        "{resp}"
    );
    assert_eq!(p.exit_code(), 0);
}

#[test]
fn signals_to_rootfence_are_forwarded_to_the_server() {
    // SIGHUP is not among them: `rootfence run` reloads its policy on it (tests/policy_reload.rs).
    for (sig, code) in [
        (nix::sys::signal::Signal::SIGTERM, 143),
        (nix::sys::signal::Signal::SIGINT, 130),
    ] {
        let mut p = Proxy::run(&[], &[&test_server()]);
        p.send(r#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#);
        assert_eq!(p.recv()["id"], 1);
        let pid = nix::unistd::Pid::from_raw(p.child.id() as i32);
        nix::sys::signal::kill(pid, sig).unwrap();
        assert_eq!(p.exit_code(), code, "after {sig}");
    }
}

#[test]
fn sighup_reloads_the_policy_and_the_server_keeps_running() {
    let mut p = Proxy::run(&[], &[&test_server()]);
    p.send(r#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#);
    assert_eq!(p.recv()["id"], 1);
    let pid = nix::unistd::Pid::from_raw(p.child.id() as i32);
    nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGHUP).unwrap();
    eventually("the reload is reported", || {
        p.stderr().contains("policy reloaded")
    });
    p.send(r#"{"jsonrpc":"2.0","id":2,"method":"ping"}"#);
    assert_eq!(p.recv()["id"], 2, "the server was not sent SIGHUP");
    p.close_stdin();
    assert_eq!(p.exit_code(), 0, "{}", p.stderr());
}

#[test]
fn server_dies_with_rootfence_even_on_sigkill() {
    let dir = tempdir();
    let pidfile = dir.path().join("pid");
    // The pid as this test sees it (`$$` is the server's pid in its own PID namespace).
    let script = format!(
        "read -r pid _ < /proc/self/stat; echo $pid > {}; exec sleep 30",
        pidfile.display()
    );
    let mut p = Proxy::run(&[], &["sh", "-c", &script]);
    eventually("the server wrote its pid", || {
        std::fs::read_to_string(&pidfile).is_ok_and(|s| s.ends_with('\n'))
    });
    let server_pid: i32 = std::fs::read_to_string(&pidfile)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    assert!(alive(server_pid));
    p.child.kill().unwrap(); // SIGKILL: rootfence gets no chance to clean up.
    p.wait();
    eventually("the server died with rootfence (PR_SET_PDEATHSIG)", || {
        !alive(server_pid)
    });
}

#[test]
fn processes_left_in_the_server_group_are_killed_no_zombies() {
    let dir = tempdir();
    let pidfile = dir.path().join("pid");
    // The server starts a background process in its group, then exits.
    let script = format!(
        "sleep 30 </dev/null >/dev/null 2>&1 & read -r me _ < /proc/self/stat; \
         read -r kid < /proc/$me/task/$me/children; echo $kid > {}; exit 0",
        pidfile.display()
    );
    let mut p = Proxy::run(&[], &["sh", "-c", &script]);
    assert_eq!(p.exit_code(), 0);
    let straggler: i32 = std::fs::read_to_string(&pidfile)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    eventually(
        "the straggler in the server's process group is gone",
        || !alive(straggler),
    );
}

#[test]
fn server_stderr_passes_through_to_stderr_not_stdout() {
    let mut p = Proxy::run(&[], &[&test_server()]);
    p.send(
        r#"{"jsonrpc":"2.0","id":1,"method":"stderr","params":{"text":"hello from the server"}}"#,
    );
    assert_eq!(p.recv(), json!({"jsonrpc":"2.0","id":1,"result":{}}));
    eventually(
        "the server's stderr line shows on rootfence's stderr",
        || p.stderr().contains("hello from the server\n"),
    );
    p.close_stdin();
    assert_eq!(p.exit_code(), 0);
}

#[test]
fn command_not_found_is_a_clear_error() {
    let mut p = Proxy::run(&[], &["/nonexistent/mcp-server", "--flag"]);
    assert_eq!(p.exit_code(), 2);
    let stderr = p.stderr();
    assert!(
        stderr.contains("server command not found: `/nonexistent/mcp-server`"),
        "{stderr}"
    );
    assert!(stderr.contains("PATH"), "{stderr}");
}

#[test]
fn unix_socket_stdio_works_like_node_hosts() {
    use std::os::unix::net::UnixStream;
    // Node's child_process gives its children socket pairs, not pipes.
    let (mut ours, theirs) = UnixStream::pair().unwrap();
    let mut child = std::process::Command::new(common::rootfence())
        .args(["run", "--sandbox", "off", "--", &test_server()])
        .env(
            "XDG_STATE_HOME",
            std::env::temp_dir().join("rootfence-test-state"),
        )
        .stdin(std::os::fd::OwnedFd::from(theirs.try_clone().unwrap()))
        .stdout(std::os::fd::OwnedFd::from(theirs))
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    use std::io::{BufRead, Write};
    ours.write_all(b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}\n")
        .unwrap();
    ours.set_read_timeout(Some(common::PATIENCE)).unwrap();
    let mut line = String::new();
    std::io::BufReader::new(ours.try_clone().unwrap())
        .read_line(&mut line)
        .unwrap();
    assert_eq!(line, "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}\n");
    ours.shutdown(std::net::Shutdown::Write).unwrap();
    assert_eq!(child.wait().unwrap().code(), Some(0));
}

#[test]
fn help_explains_the_commands() {
    let mut p = Proxy::start(&["--help"]);
    p.close_stdin();
    let mut out = String::new();
    while let Ok(line) = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| p.recv_line())) {
        out.push_str(&line);
        out.push('\n');
        if out.contains("Print version") {
            break;
        }
    }
    assert!(out.contains("run"), "{out}");
    assert_eq!(p.exit_code(), 0);
    let mut p = Proxy::start(&["run", "--help"]);
    assert_eq!(p.exit_code(), 0);
}
