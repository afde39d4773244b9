//! OpenTelemetry through the real binary, against a real OTLP/HTTP receiver built on the
//! official protobuf definitions (`tests/otlp/`): rootfence is started the way a host starts
//! it (default policy, default sandbox, the host sending its roots), with the collector named
//! by the standard `OTEL_*` variables or by the policy's `[telemetry]` table.
//!
//! What must hold: a span per host request with the MCP semantic-convention attributes and
//! rootfence's decision; the host's `_meta.traceparent` continued (rootfence's span is the
//! parent the server sees); the metrics and the audit records as log records arrive; and a
//! collector that is down or hangs never keeps a request from being answered.

mod common;
mod otlp;
#[path = "common/serve_harness.rs"]
mod serve_harness;

use std::process::Command;
use std::time::{Duration, Instant};

use common::{Proxy, rootfence, tempdir, test_server};
use opentelemetry_proto::tonic::trace::v1::span::SpanKind;
use opentelemetry_proto::tonic::trace::v1::status::StatusCode;
use otlp::{Receiver, attr_str, hex};
use serde_json::{Value, json};

const HOST_TRACE: &str = "4bf92f3577b34da6a3ce929d0e0e4736";
const HOST_SPAN: &str = "00f067aa0ba902b7";

fn uri(p: &std::path::Path) -> String {
    format!("file://{}", p.canonicalize().unwrap().display())
}

/// `rootfence run [opts] -- test_server --log LOG` with the telemetry environment `env`,
/// exporting quickly (so the test need not wait for the SDK's default intervals).
fn start(opts: &[&str], server_log: &std::path::Path, env: &[(&str, &str)]) -> Proxy {
    let mut cmd = Command::new(rootfence());
    cmd.arg("run").args(opts).arg("--").args([
        &test_server(),
        "--log",
        server_log.to_str().unwrap(),
    ]);
    for var in [
        "OTEL_EXPORTER_OTLP_ENDPOINT",
        "OTEL_EXPORTER_OTLP_PROTOCOL",
        "OTEL_SERVICE_NAME",
        "OTEL_RESOURCE_ATTRIBUTES",
        "OTEL_SDK_DISABLED",
    ] {
        cmd.env_remove(var);
    }
    cmd.env("OTEL_METRIC_EXPORT_INTERVAL", "200")
        .env("OTEL_BSP_SCHEDULE_DELAY", "100")
        .env("OTEL_BLRP_SCHEDULE_DELAY", "100")
        .env("OTEL_EXPORTER_OTLP_TIMEOUT", "2000");
    for (k, v) in env {
        cmd.env(k, v);
    }
    Proxy::spawn(cmd)
}

/// The host's handshake with the roots capability, answering rootfence's `roots/list`.
fn init_with_roots(p: &mut Proxy, root: &std::path::Path) {
    p.send_json(
        &json!({"jsonrpc":"2.0","id":0,"method":"initialize","params":{
        "protocolVersion":"2025-06-18","capabilities":{"roots":{"listChanged":true}},
        "clientInfo":{"name":"test-host","version":"0"}}}),
    );
    let ask = p.recv();
    assert_eq!(ask["method"], "roots/list", "{ask}");
    p.send_json(&json!({"jsonrpc":"2.0","id":ask["id"],"result":{"roots":[{"uri": uri(root)}]}}));
    assert_eq!(p.recv()["id"], 0);
    p.send(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#);
}

/// The lines the server received, parsed.
fn server_received(log: &std::path::Path) -> Vec<Value> {
    std::fs::read_to_string(log)
        .unwrap_or_default()
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect()
}

#[test]
fn spans_metrics_and_audit_records_reach_a_real_otlp_receiver() {
    let rx = Receiver::start();
    let t = tempdir();
    let ws = t.path().join("ws");
    std::fs::create_dir_all(&ws).unwrap();
    std::fs::write(ws.join("notes.txt"), "hello").unwrap();
    std::fs::write(t.path().join("outside.txt"), "no").unwrap();
    let server_log = ws.join("server.log");
    let audit = t.path().join("audit.jsonl");
    let endpoint = rx.endpoint();
    let mut p = start(
        &["--audit-log", audit.to_str().unwrap()],
        &server_log,
        &[
            ("OTEL_EXPORTER_OTLP_ENDPOINT", &endpoint),
            ("OTEL_EXPORTER_OTLP_PROTOCOL", "http/protobuf"),
            ("OTEL_SERVICE_NAME", "rootfence-test"),
            ("OTEL_RESOURCE_ATTRIBUTES", "deployment.environment.name=ci"),
        ],
    );
    init_with_roots(&mut p, &ws);

    // A tool call inside the trace the host started.
    let traceparent = format!("00-{HOST_TRACE}-{HOST_SPAN}-01");
    p.send_json(
        &json!({"jsonrpc":"2.0","id":7,"method":"tools/call","params":{
        "name":"read_path","arguments":{"path": ws.join("notes.txt")},
        "_meta":{"traceparent": traceparent, "tracestate":"rojo=00f067aa0ba902b7"}}}),
    );
    let called = p.recv();
    assert_eq!(called["id"], 7);
    assert!(called.get("result").is_some(), "{called}");

    // A read outside the roots: denied by rootfence, never forwarded.
    let outside = uri(&t.path().join("outside.txt"));
    p.send_json(
        &json!({"jsonrpc":"2.0","id":"r-1","method":"resources/read","params":{"uri": outside}}),
    );
    let denied = p.recv();
    assert_eq!(denied["error"]["code"], -32010, "{denied}");
    // A request rootfence does not look at.
    p.send(r#"{"jsonrpc":"2.0","id":9,"method":"ping"}"#);
    assert_eq!(p.recv()["id"], 9);
    p.close_stdin();
    assert_eq!(p.exit_code(), 0, "{}", p.stderr());

    // The server saw rootfence's span as the parent, in the host's trace, with the host's
    // tracestate; everything else in the request unchanged.
    let got = server_received(&server_log);
    let call = got
        .iter()
        .find(|m| m["method"] == "tools/call")
        .expect("the tool call reached the server");
    let forwarded = call["params"]["_meta"]["traceparent"].as_str().unwrap();
    let parts: Vec<&str> = forwarded.split('-').collect();
    assert_eq!(parts.len(), 4, "{forwarded}");
    assert_eq!(
        (parts[0], parts[1], parts[3]),
        ("00", HOST_TRACE, "01"),
        "{forwarded}"
    );
    assert_ne!(
        parts[2], HOST_SPAN,
        "rootfence's span is the server's parent"
    );
    assert_eq!(
        call["params"]["_meta"]["tracestate"],
        "rojo=00f067aa0ba902b7"
    );
    assert_eq!(call["params"]["name"], "read_path");

    // The spans.
    rx.wait_for("the three request spans", |r| {
        let spans = r.spans();
        ["tools/call read_path", "resources/read", "ping"]
            .iter()
            .all(|n| spans.iter().any(|s| s.name == *n))
    });
    let spans = rx.spans();
    let session = audit_session(&audit);
    let tool = spans
        .iter()
        .find(|s| s.name == "tools/call read_path")
        .unwrap();
    assert_eq!(hex(&tool.trace_id), HOST_TRACE, "joins the host's trace");
    assert_eq!(
        hex(&tool.parent_span_id),
        HOST_SPAN,
        "the host's span is its parent"
    );
    assert_eq!(
        hex(&tool.span_id),
        parts[2],
        "the span the server was told about"
    );
    assert_eq!(tool.kind, SpanKind::Server as i32);
    let a = &tool.attributes;
    assert_eq!(attr_str(a, "mcp.method.name"), "tools/call");
    assert_eq!(attr_str(a, "gen_ai.tool.name"), "read_path");
    assert_eq!(attr_str(a, "gen_ai.operation.name"), "execute_tool");
    assert_eq!(attr_str(a, "jsonrpc.request.id"), "7");
    assert_eq!(attr_str(a, "mcp.session.id"), session);
    assert_eq!(attr_str(a, "network.transport"), "pipe");
    assert_eq!(attr_str(a, "rootfence.answered_by"), "server");
    assert!(tool.end_time_unix_nano >= tool.start_time_unix_nano);

    let read = spans.iter().find(|s| s.name == "resources/read").unwrap();
    let a = &read.attributes;
    assert_eq!(attr_str(a, "mcp.resource.uri"), outside);
    assert_eq!(attr_str(a, "jsonrpc.request.id"), "r-1");
    assert_eq!(attr_str(a, "rootfence.decision"), "deny");
    assert_eq!(attr_str(a, "rootfence.decision.reason"), "outside_roots");
    assert_eq!(attr_str(a, "rootfence.decision.uri"), outside);
    assert_eq!(attr_str(a, "rootfence.answered_by"), "rootfence");
    assert_eq!(attr_str(a, "error.type"), "-32010");
    assert_eq!(attr_str(a, "rpc.response.status_code"), "-32010");
    let status = read.status.as_ref().unwrap();
    assert_eq!(status.code, StatusCode::Error as i32);
    assert!(status.message.contains("outside_roots"), "{status:?}");
    assert_ne!(
        hex(&read.trace_id),
        HOST_TRACE,
        "a request without trace context starts a trace of its own"
    );
    let ping = spans.iter().find(|s| s.name == "ping").unwrap();
    assert!(attr_str(&ping.attributes, "rootfence.decision").is_empty());

    let resource = rx.trace_resource();
    assert_eq!(attr_str(&resource, "service.name"), "rootfence-test");
    assert_eq!(attr_str(&resource, "deployment.environment.name"), "ci");

    // The metrics.
    rx.wait_for("the metrics", |r| {
        let names: Vec<String> = r.metrics().into_iter().map(|m| m.name).collect();
        [
            "mcp.server.operation.duration",
            "rootfence.requests",
            "rootfence.decisions",
            "rootfence.denied.bytes",
            "rootfence.server.generations",
            "rootfence.telemetry.dropped",
        ]
        .iter()
        .all(|n| names.iter().any(|m| m == n))
    });
    let metrics = rx.metrics();
    let decisions = format!(
        "{:?}",
        metrics.iter().find(|m| m.name == "rootfence.decisions")
    );
    assert!(decisions.contains("outside_roots"), "{decisions}");
    let histogram = metrics
        .iter()
        .find(|m| m.name == "mcp.server.operation.duration")
        .unwrap();
    assert_eq!(histogram.unit, "s");

    // The audit records, as log records with the JSONL's fields.
    let records: Vec<Value> = std::fs::read_to_string(&audit)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    rx.wait_for("a log record for every audit record", |r| {
        r.logs().len() >= records.len()
    });
    let logs = rx.logs();
    for record in &records {
        let seq = record["seq"].to_string();
        let log = logs
            .iter()
            .find(|l| {
                attr_str(&l.attributes, "seq") == seq
                    && attr_str(&l.attributes, "session") == record["session"].as_str().unwrap()
            })
            .unwrap_or_else(|| panic!("no log record for {record}"));
        let keys: Vec<&str> = log.attributes.iter().map(|kv| kv.key.as_str()).collect();
        for (k, v) in record.as_object().unwrap() {
            assert!(keys.contains(&k.as_str()), "{k} missing from {keys:?}");
            if let Value::String(s) = v {
                assert_eq!(&attr_str(&log.attributes, k), s, "{k}");
            }
        }
    }
    let deny = records
        .iter()
        .find(|r| r["event"] == "decision" && r["decision"] == "deny")
        .expect("the denial is in the audit log");
    assert_eq!(deny["reason"], "outside_roots");
    assert!(
        logs.iter()
            .any(|l| attr_str(&l.attributes, "decision") == "deny"
                && attr_str(&l.attributes, "reason") == "outside_roots"
                && l.severity_text == "WARN"),
        "the denial is a WARN log record"
    );
    rx.with(|r| assert!(r.unexpected.is_empty(), "{:?}", r.unexpected));
}

/// The session id of the (one) session in an audit log.
fn audit_session(audit: &std::path::Path) -> String {
    let text = std::fs::read_to_string(audit).unwrap();
    let first: Value = serde_json::from_str(text.lines().next().unwrap()).unwrap();
    first["session"].as_str().unwrap().to_owned()
}

#[test]
fn the_policy_telemetry_table_names_the_collector_over_the_environment() {
    let rx = Receiver::start();
    let t = tempdir();
    let ws = t.path().join("ws");
    std::fs::create_dir_all(&ws).unwrap();
    let policy = t.path().join("org.toml");
    std::fs::write(
        &policy,
        format!(
            "version = 1\n[telemetry]\nendpoint = \"{}\"\nprotocol = \"http/protobuf\"\n\
             service_name = \"fleet\"\nresource_attributes = \"team=sec\"\n",
            rx.endpoint()
        ),
    )
    .unwrap();
    // The environment names another collector (down): the policy's wins.
    let elsewhere = otlp::refused_endpoint();
    let mut p = start(
        &["--policy", policy.to_str().unwrap()],
        &ws.join("server.log"),
        &[
            ("OTEL_EXPORTER_OTLP_ENDPOINT", &elsewhere),
            ("OTEL_SERVICE_NAME", "mine"),
        ],
    );
    init_with_roots(&mut p, &ws);
    p.send(r#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#);
    assert_eq!(p.recv()["id"], 1);
    p.close_stdin();
    assert_eq!(p.exit_code(), 0, "{}", p.stderr());
    rx.wait_for("the ping span", |r| {
        r.spans().iter().any(|s| s.name == "ping")
    });
    let resource = rx.trace_resource();
    assert_eq!(attr_str(&resource, "service.name"), "fleet");
    assert_eq!(attr_str(&resource, "team"), "sec");
}

#[test]
fn without_a_collector_nothing_changes_and_a_traceparent_passes_byte_for_byte() {
    let t = tempdir();
    let ws = t.path().join("ws");
    std::fs::create_dir_all(&ws).unwrap();
    let server_log = ws.join("server.log");
    let mut p = start(&[], &server_log, &[]);
    init_with_roots(&mut p, &ws);
    let line = format!(
        r#"{{"jsonrpc":"2.0","id":3,"method":"echo","params":{{"x":1.50,"_meta":{{"traceparent":"00-{HOST_TRACE}-{HOST_SPAN}-01"}}}}}}"#
    );
    p.send(&line);
    assert_eq!(p.recv()["id"], 3);
    p.close_stdin();
    assert_eq!(p.exit_code(), 0, "{}", p.stderr());
    let raw = std::fs::read_to_string(&server_log).unwrap();
    assert!(
        raw.lines().any(|l| l == line),
        "telemetry off: forwarded as it came:\n{raw}"
    );
    assert!(!p.stderr().contains("telemetry"), "{}", p.stderr());
}

#[test]
fn with_a_collector_a_request_without_trace_context_is_forwarded_as_it_came() {
    let rx = Receiver::start();
    echo_forwarded_as_it_came(
        &rx,
        r#"{"jsonrpc":"2.0","id":3,"method":"echo","params":{"x":1.50,"_meta":{"progressToken":"p"}}}"#,
    );
}

/// A malformed `traceparent` is not a parent: rootfence leaves it as the host sent it (the
/// request passes byte for byte) and starts a trace of its own.
#[test]
fn a_malformed_traceparent_is_left_alone() {
    let rx = Receiver::start();
    echo_forwarded_as_it_came(
        &rx,
        r#"{"jsonrpc":"2.0","id":4,"method":"echo","params":{"_meta":{"traceparent":"00-zz-yy-01"}}}"#,
    );
    let span = rx.spans().into_iter().find(|s| s.name == "echo").unwrap();
    assert!(span.parent_span_id.is_empty(), "no parent: {span:?}");
}

/// One `echo` request `line` through rootfence exporting to `rx`: it reaches the server
/// byte for byte, and its span reaches the collector.
fn echo_forwarded_as_it_came(rx: &Receiver, line: &str) {
    let t = tempdir();
    let ws = t.path().join("ws");
    std::fs::create_dir_all(&ws).unwrap();
    let server_log = ws.join("server.log");
    let endpoint = rx.endpoint();
    let mut p = start(
        &[],
        &server_log,
        &[("OTEL_EXPORTER_OTLP_ENDPOINT", &endpoint)],
    );
    init_with_roots(&mut p, &ws);
    let id = serde_json::from_str::<Value>(line).unwrap()["id"].clone();
    p.send(line);
    assert_eq!(p.recv()["id"], id);
    p.close_stdin();
    assert_eq!(p.exit_code(), 0, "{}", p.stderr());
    let raw = std::fs::read_to_string(&server_log).unwrap();
    assert!(raw.lines().any(|l| l == line), "{raw}");
    rx.wait_for("the echo span", |r| {
        r.spans().iter().any(|s| s.name == "echo")
    });
}

/// A collector that is down (connection refused) or hangs (accepts, never answers) never
/// keeps a request waiting, and the session still ends promptly (the last export is given
/// up after a bounded wait). Latency itself is measured by the benchmark
/// (`scripts/bench-telemetry.sh`), not here.
#[test]
fn a_collector_that_is_down_or_hung_never_holds_up_the_relay() {
    for (what, endpoint) in [
        ("refused", otlp::refused_endpoint()),
        ("hung", otlp::blackhole_endpoint()),
    ] {
        let t = tempdir();
        let ws = t.path().join("ws");
        std::fs::create_dir_all(&ws).unwrap();
        let mut p = start(
            &[],
            &ws.join("server.log"),
            &[
                ("OTEL_EXPORTER_OTLP_ENDPOINT", &endpoint),
                // A long export timeout: a hung collector holds each export this long.
                ("OTEL_EXPORTER_OTLP_TIMEOUT", "30000"),
            ],
        );
        init_with_roots(&mut p, &ws);
        let outside = uri(t.path());
        for i in 0..300u32 {
            let traceparent = format!("00-{HOST_TRACE}-{HOST_SPAN}-01");
            if i % 3 == 0 {
                p.send_json(&json!({"jsonrpc":"2.0","id":i,"method":"resources/read",
                    "params":{"uri": outside, "_meta":{"traceparent": traceparent}}}));
            } else {
                p.send_json(&json!({"jsonrpc":"2.0","id":i,"method":"echo",
                    "params":{"i": i, "_meta":{"traceparent": traceparent}}}));
            }
            let answer = p.recv();
            assert_eq!(answer["id"], i, "{what}: {answer}");
        }
        let closed = Instant::now();
        p.close_stdin();
        assert_eq!(p.exit_code(), 0, "{what}: {}", p.stderr());
        // The shutdown gives the collector 1.5 s; the server's own grace is separate. The
        // bound is for a hang (each export held 30 s), generous for a loaded machine.
        assert!(
            closed.elapsed() < Duration::from_secs(20),
            "{what}: the session took {:?} to end",
            closed.elapsed()
        );
    }
}

#[test]
fn telemetry_rootfence_cannot_send_is_refused_with_a_hint_and_the_session_runs() {
    let t = tempdir();
    let ws = t.path().join("ws");
    std::fs::create_dir_all(&ws).unwrap();
    let mut p = start(
        &[],
        &ws.join("server.log"),
        &[
            ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:4317"),
            ("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc"),
        ],
    );
    init_with_roots(&mut p, &ws);
    p.send(r#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#);
    assert_eq!(p.recv()["id"], 1);
    p.close_stdin();
    assert_eq!(p.exit_code(), 0);
    let err = p.stderr();
    assert!(
        err.contains("telemetry is off") && err.contains("http/protobuf"),
        "{err}"
    );
}

/// `rootfence serve`: every HTTP session is a relay session of its own; the same request id
/// in two sessions makes two spans, each with its own session's `mcp.session.id` (the
/// collector named by the policy, as an organisation ships it).
#[test]
fn serve_sessions_each_get_their_own_spans() {
    let rx = Receiver::start();
    let t = tempdir();
    let policy = t.path().join("org.toml");
    std::fs::write(
        &policy,
        format!(
            "version = 1\n[telemetry]\nendpoint = \"{}\"\n",
            rx.endpoint()
        ),
    )
    .unwrap();
    let log = t.path().join("server.log");
    let dir = t.path().display().to_string();
    let mut serve = serve_harness::Serve::start(
        // SIGTERM keeps live sessions up to the drain deadline: keep it short.
        &[
            "--write",
            &dir,
            "--policy",
            policy.to_str().unwrap(),
            "--drain-timeout",
            "1s",
        ],
        &[&test_server(), "--log", log.to_str().unwrap()],
    );
    for _ in 0..2 {
        let id = serve.open_session(&[]);
        let r = serve.post(
            &[("Mcp-Session-Id", &id)],
            r#"{"jsonrpc":"2.0","id":2,"method":"pid"}"#,
        );
        assert_eq!(r.status, 200, "{r:?}");
    }
    assert!(serve.stop().success(), "{}", serve.stderr());
    rx.wait_for("a pid span per session", |r| {
        r.spans().iter().filter(|s| s.name == "pid").count() >= 2
    });
    let sessions: std::collections::BTreeSet<String> = rx
        .spans()
        .iter()
        .filter(|s| s.name == "pid")
        .map(|s| {
            assert_eq!(attr_str(&s.attributes, "jsonrpc.request.id"), "2");
            attr_str(&s.attributes, "mcp.session.id")
        })
        .collect();
    assert_eq!(sessions.len(), 2, "{sessions:?}");
    assert!(sessions.iter().all(|s| !s.is_empty()), "{sessions:?}");
}

/// The MCP semantic conventions' session attributes and session metric (issue 29):
/// `mcp.protocol.version` and `mcp.session.id` on the spans of a session's requests,
/// `mcp.server.session.duration` when the session ends.
#[test]
fn spans_carry_the_protocol_version_and_the_session_duration_is_recorded() {
    let rx = Receiver::start();
    let t = tempdir();
    let ws = t.path().join("ws");
    std::fs::create_dir_all(&ws).unwrap();
    let audit = t.path().join("audit.jsonl");
    let endpoint = rx.endpoint();
    let mut p = start(
        &["--audit-log", audit.to_str().unwrap()],
        &ws.join("server.log"),
        &[
            ("OTEL_EXPORTER_OTLP_ENDPOINT", &endpoint),
            ("OTEL_EXPORTER_OTLP_PROTOCOL", "http/protobuf"),
        ],
    );
    init_with_roots(&mut p, &ws);
    // The revision is learned from the session's `initialized` audit record, which the
    // writer hands on within its 50 ms batching delay.
    std::thread::sleep(Duration::from_millis(300));
    p.send(r#"{"jsonrpc":"2.0","id":9,"method":"ping"}"#);
    assert_eq!(p.recv()["id"], 9);
    std::thread::sleep(Duration::from_millis(200));
    p.close_stdin();
    assert_eq!(p.exit_code(), 0, "{}", p.stderr());
    let session = audit_session(&audit);

    rx.wait_for("the ping span", |r| {
        r.spans().iter().any(|s| s.name == "ping")
    });
    let spans = rx.spans();
    let ping = spans.iter().find(|s| s.name == "ping").unwrap();
    assert_eq!(
        attr_str(&ping.attributes, "mcp.protocol.version"),
        "2025-06-18"
    );
    assert_eq!(attr_str(&ping.attributes, "mcp.session.id"), session);

    rx.wait_for("the session duration", |r| {
        r.metrics()
            .iter()
            .any(|m| m.name == "mcp.server.session.duration")
    });
    let metrics = rx.metrics();
    let m = metrics
        .iter()
        .find(|m| m.name == "mcp.server.session.duration")
        .unwrap();
    assert_eq!(m.unit, "s");
    let shown = format!("{m:?}");
    assert!(shown.contains("2025-06-18"), "{shown}");
    assert!(!shown.contains("error.type"), "a clean end: {shown}");
    // The session lasted at least the 500 ms the test waited.
    let Some(opentelemetry_proto::tonic::metrics::v1::metric::Data::Histogram(h)) = &m.data else {
        panic!("not a histogram: {m:?}");
    };
    let sum: f64 = h.data_points.iter().filter_map(|d| d.sum).sum();
    let count: u64 = h.data_points.iter().map(|d| d.count).sum();
    assert_eq!(count, 1, "{m:?}");
    assert!((0.5..60.0).contains(&sum), "{sum}");
}

/// `mcp.client.operation.duration` (issue 29): rootfence is the server's MCP client from
/// forwarding a host request until the server's answer. Recorded for the requests the
/// server answered (`initialize`, `ping`), with their method; never for a request
/// rootfence refused itself (the server never saw it).
#[test]
fn the_client_operation_duration_covers_only_what_the_server_answered() {
    let rx = Receiver::start();
    let t = tempdir();
    let ws = t.path().join("ws");
    std::fs::create_dir_all(&ws).unwrap();
    let endpoint = rx.endpoint();
    let mut p = start(
        &[],
        &ws.join("server.log"),
        &[
            ("OTEL_EXPORTER_OTLP_ENDPOINT", &endpoint),
            ("OTEL_EXPORTER_OTLP_PROTOCOL", "http/protobuf"),
        ],
    );
    init_with_roots(&mut p, &ws);
    p.send(r#"{"jsonrpc":"2.0","id":9,"method":"ping"}"#);
    assert_eq!(p.recv()["id"], 9);
    p.send_json(&json!({"jsonrpc":"2.0","id":10,"method":"resources/read",
        "params":{"uri":"file:///etc/passwd"}}));
    assert!(p.recv().get("error").is_some(), "refused by rootfence");
    p.close_stdin();
    assert_eq!(p.exit_code(), 0, "{}", p.stderr());

    let name = "mcp.client.operation.duration";
    let methods = |rx: &Receiver| -> Vec<(String, u64)> {
        let mut out = Vec::new();
        for m in rx.metrics().iter().filter(|m| m.name == name) {
            if let Some(opentelemetry_proto::tonic::metrics::v1::metric::Data::Histogram(h)) =
                &m.data
            {
                for d in &h.data_points {
                    out.push((attr_str(&d.attributes, "mcp.method.name"), d.count));
                }
            }
        }
        out
    };
    rx.wait_for("the ping's client duration", |r| {
        methods(r).iter().any(|(m, _)| m == "ping")
    });
    let metrics = rx.metrics();
    let m = metrics.iter().find(|m| m.name == name).unwrap();
    assert_eq!(m.unit, "s");
    let seen = methods(&rx);
    assert!(seen.iter().any(|(m, _)| m == "initialize"), "{seen:?}");
    assert!(
        !seen.iter().any(|(m, _)| m == "resources/read"),
        "a request rootfence answered itself has no client duration: {seen:?}"
    );
    assert!(format!("{m:?}").contains("network.transport"), "{m:?}");
}
