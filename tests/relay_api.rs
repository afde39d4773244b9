//! The relay's library interface (issue 2): rootfence's own requests toward the host, and the
//! interception point with each of its actions, against the real test server process, with
//! the host side played through in-memory streams.

mod common;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use rootfence::jsonrpc::Kind;
use rootfence::relay::{self, Action, Intercepted, Interceptor, RelayConfig, Session, Side};
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, DuplexStream};

/// Plays the host over in-memory streams.
struct Host {
    to_relay: DuplexStream,
    from_relay: tokio::io::Lines<BufReader<DuplexStream>>,
}

impl Host {
    async fn send(&mut self, v: Value) {
        let mut line = serde_json::to_vec(&v).unwrap();
        line.push(b'\n');
        self.to_relay.write_all(&line).await.unwrap();
    }

    async fn recv(&mut self) -> Value {
        let line = tokio::time::timeout(common::PATIENCE, self.from_relay.next_line())
            .await
            .expect("the relay answered in time")
            .unwrap()
            .expect("the relay's output is open");
        serde_json::from_str(&line).unwrap()
    }
}

fn start<I: Interceptor>(
    icpt: I,
    log: &std::path::Path,
) -> (Host, tokio::task::JoinHandle<relay::Outcome>) {
    let (host_side, relay_in) = tokio::io::duplex(1 << 16);
    let (relay_out, host_read) = tokio::io::duplex(1 << 16);
    let mut cmd = std::process::Command::new(common::test_server());
    cmd.arg("--log").arg(log);
    let mut cfg = RelayConfig {
        command: Some(cmd),
        ..RelayConfig::deferred()
    };
    cfg.shutdown_grace = Duration::from_millis(200);
    let task = tokio::spawn(async move {
        relay::run_with(cfg, Arc::new(icpt), relay_in, relay_out)
            .await
            .expect("the relay runs")
    });
    (
        Host {
            to_relay: host_side,
            from_relay: BufReader::new(host_read).lines(),
        },
        task,
    )
}

/// Asks the host for its roots when the host says it is initialized, and keeps the answer.
#[derive(Default)]
struct AsksForRoots {
    answer: Arc<Mutex<Option<Value>>>,
}

impl Interceptor for AsksForRoots {
    fn wants(&self, from: Side, kind: Kind, method: &str) -> bool {
        from == Side::Host && kind == Kind::Notification && method == "notifications/initialized"
    }

    fn intercept(&self, session: &Arc<Session>, _msg: Intercepted) -> Action {
        let reply = session.request_host("roots/list", None);
        let slot = Arc::clone(&self.answer);
        tokio::spawn(async move {
            if let Ok(v) = reply.await {
                *slot.lock().unwrap() = Some(v);
            }
        });
        Action::Forward
    }
}

#[tokio::test]
async fn rootfence_requests_to_the_host_never_collide_and_are_consumed() {
    let dir = common::tempdir();
    let log = dir.path().join("server.log");
    let icpt = AsksForRoots::default();
    let answer = Arc::clone(&icpt.answer);
    let (mut host, relay_task) = start(icpt, &log);

    host.send(json!({"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{"roots":{}},"clientInfo":{"name":"h","version":"0"}}})).await;
    assert_eq!(host.recv().await["result"]["protocolVersion"], "2025-06-18");
    host.send(json!({"jsonrpc":"2.0","method":"notifications/initialized"}))
        .await;

    // rootfence's own request arrives, with an id in its reserved namespace.
    let own = host.recv().await;
    assert_eq!(own["method"], "roots/list");
    let own_id = own["id"]
        .as_str()
        .expect("rootfence uses string ids")
        .to_owned();
    assert!(own_id.starts_with("rootfence-"), "{own_id}");

    // The server asks the host a request of its own with the *same* id: refused, since the
    // host's answer to that id belongs to rootfence.
    host.send(json!({"jsonrpc":"2.0","id":2,"method":"ask_host","params":{"method":"roots/list","id": own_id}})).await;
    let refused = host.recv().await;
    assert_eq!(refused["id"], 2);
    let err = &refused["result"]["host_response"]["error"];
    assert_eq!(err["code"], -32600, "{refused}");
    assert!(
        err["message"].as_str().unwrap().contains("namespace"),
        "{refused}"
    );

    // The host answers rootfence: consumed by rootfence, never forwarded to the server.
    host.send(
        json!({"jsonrpc":"2.0","id": own_id,"result":{"roots":[{"uri":"file:///srv/project"}]}}),
    )
    .await;
    // Poll without blocking: this test's runtime is single-threaded.
    tokio::time::timeout(common::PATIENCE, async {
        while answer.lock().unwrap().is_none() {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    })
    .await
    .expect("rootfence received the host's roots");
    assert_eq!(
        answer.lock().unwrap().as_ref().unwrap()["result"]["roots"][0]["uri"],
        "file:///srv/project"
    );

    drop(host);
    let outcome = relay_task.await.unwrap();
    assert_eq!(outcome.exit_code, 0);
    let seen = std::fs::read_to_string(&log).unwrap();
    assert!(
        !seen.contains("srv/project"),
        "the server saw rootfence's answer:\n{seen}"
    );
    let peers = outcome.session.peers();
    assert_eq!(peers.version.unwrap().as_str(), "2025-06-18");
    assert_eq!(peers.client_info.unwrap()["name"], "h");
    assert_eq!(peers.server_info.unwrap()["name"], "rootfence-test-server");
}

/// Each method name selects one action.
struct Scripted;

impl Interceptor for Scripted {
    fn wants(&self, _from: Side, _kind: Kind, method: &str) -> bool {
        method.starts_with("x/") || method == "echo"
    }

    fn intercept(&self, _session: &Arc<Session>, msg: Intercepted) -> Action {
        let mut message = msg.message;
        match (&*msg.method, msg.kind) {
            ("echo", Kind::Request) => {
                message["params"]["rewritten"] = json!(true);
                Action::Replace(message)
            }
            ("echo", _) => {
                message["result"]["seen_by_interceptor"] = json!(true);
                Action::Replace(message)
            }
            ("x/reply", _) => {
                Action::Reply(json!({"jsonrpc":"2.0","id": message["id"],"result":{"local":true}}))
            }
            ("x/drop", _) => Action::Drop,
            ("x/defer", _) => Action::Defer(Box::pin(async move {
                tokio::time::sleep(Duration::from_millis(100)).await;
                Action::Reply(
                    json!({"jsonrpc":"2.0","id": message["id"],"result":{"deferred":true}}),
                )
            })),
            _ => Action::Forward,
        }
    }
}

#[tokio::test]
async fn interception_actions_forward_replace_reply_drop_defer() {
    let dir = common::tempdir();
    let log = dir.path().join("server.log");
    let (mut host, relay_task) = start(Scripted, &log);

    host.send(json!({"jsonrpc":"2.0","id":"d","method":"x/defer"}))
        .await;
    host.send(json!({"jsonrpc":"2.0","id":1,"method":"echo","params":{"a":1}}))
        .await;
    // Deferred decisions do not hold up later messages.
    let first = host.recv().await;
    assert_eq!(
        first,
        json!({"jsonrpc":"2.0","id":1,"result":{"a":1,"rewritten":true,"seen_by_interceptor":true}})
    );
    assert_eq!(host.recv().await["result"]["deferred"], true);

    host.send(json!({"jsonrpc":"2.0","id":2,"method":"x/reply"}))
        .await;
    assert_eq!(
        host.recv().await,
        json!({"jsonrpc":"2.0","id":2,"result":{"local":true}})
    );

    // A dropped request still gets exactly one response.
    host.send(json!({"jsonrpc":"2.0","id":3,"method":"x/drop"}))
        .await;
    let dropped = host.recv().await;
    assert_eq!(dropped["id"], 3);
    assert_eq!(dropped["error"]["code"], -32603);

    // A cancellation of a request rootfence answered itself never reaches the server.
    host.send(json!({"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":2}}))
        .await;
    host.send(json!({"jsonrpc":"2.0","id":4,"method":"ping"}))
        .await;
    assert_eq!(host.recv().await["id"], 4);

    drop(host);
    assert_eq!(relay_task.await.unwrap().exit_code, 0);
    let seen: Vec<Value> = std::fs::read_to_string(&log)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(
        seen,
        [
            json!({"jsonrpc":"2.0","id":1,"method":"echo","params":{"a":1,"rewritten":true}}),
            json!({"jsonrpc":"2.0","id":4,"method":"ping"}),
        ],
        "the server saw only what was forwarded, as rewritten"
    );
}
