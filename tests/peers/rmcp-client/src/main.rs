//! A scripted MCP session with the official Rust SDK (rmcp), printing a normalized transcript.
//!
//! Owned by the interop harness (`tests/interop.rs`); the Rust twin of
//! `tests/peers/py/session.py`, with the same options where rmcp supports them. It launches
//! the server command given after `--` over stdio, runs the chosen steps and prints one JSON
//! document: each request and what came back, with volatile values (clock times, UUIDs,
//! `--mask` patterns) replaced by placeholders. Direct and wrapped runs must print the same.
//!
//! Any error the script did not ask for ends it with exit status 1 and a message on stderr;
//! the whole run is bounded by `--timeout`.

// Roots and resources/subscribe are deprecated by SEP-2577 for 2026-07-28 only; the handshake
// revisions this client also speaks use them as specified.
#![allow(deprecated)]

use std::collections::BTreeSet;
use std::process::ExitCode;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use base64::Engine as _;
use regex::Regex;
use rmcp::model::{
    CallToolRequestParams, ClientCapabilities, ClientConfig, GetPromptRequestParams,
    Implementation, ListRootsResult, PaginatedRequestParams, ProtocolVersion,
    ReadResourceRequestParams, ResourceUpdatedNotificationParam, Root, RootsCapabilities,
    SubscribeRequestParams, UnsubscribeRequestParams,
};
use rmcp::service::{
    ClientLifecycleMode, ClientServiceExt as _, NotificationContext, RequestContext,
    RunningService, ServiceError,
};
use rmcp::transport::{StreamableHttpClientTransport, TokioChildProcess};
use rmcp::{ClientHandler, ErrorData, RoleClient};
use serde_json::{Map, Value, json};
use tokio::sync::Notify;

const ALL_STEPS: &[&str] = &[
    "list-resources",
    "list-templates",
    "read",
    "subscribe",
    "list-tools",
    "call",
    "list-prompts",
    "get-prompt",
];

const USAGE: &str = "usage: rmcp-client [--protocol V] [--steps a,b,..] [--read URI].. \
[--read-listed N] [--read-error URI].. [--subscribe URI] [--subscribe-trigger TOOL] \
[--update-timeout SECS] [--call NAME[=JSON]].. [--call-error NAME[=JSON]].. \
[--prompt NAME[=JSON]].. [--roots URI].. [--mask REGEX].. [--timeout SECS] [--http URL] -- <server command..>\n(with --http, the server is a Streamable HTTP endpoint and the command may be empty)";

/// What the command line asked for.
#[derive(Debug, Default)]
struct Options {
    protocol: String,
    steps: BTreeSet<String>,
    read: Vec<String>,
    read_listed: usize,
    read_error: Vec<String>,
    subscribe: Option<String>,
    subscribe_trigger: Option<String>,
    update_timeout: f64,
    call: Vec<String>,
    call_error: Vec<String>,
    prompt: Vec<String>,
    roots: Vec<String>,
    mask: Vec<String>,
    timeout: f64,
    /// `--http URL`: a Streamable HTTP server (e.g. `rootfence serve`) instead of a child.
    http: Option<String>,
    server: Vec<String>,
}

fn parse_options(args: Vec<String>) -> Result<Options, String> {
    let split = args
        .iter()
        .position(|a| a == "--")
        .ok_or("give the server command after `--`")?;
    let server = args[split + 1..].to_vec();
    let http = args[..split].iter().any(|a| a == "--http");
    if server.is_empty() && !http {
        return Err("the server command after `--` is empty".into());
    }
    let mut o = Options {
        protocol: "2025-11-25".into(),
        steps: ALL_STEPS.iter().map(|s| s.to_string()).collect(),
        update_timeout: 15.0,
        timeout: 60.0,
        server,
        ..Options::default()
    };
    let mut it = args[..split].iter();
    while let Some(flag) = it.next() {
        if flag == "--help" || flag == "-h" {
            return Err(USAGE.into());
        }
        let value = it
            .next()
            .ok_or_else(|| format!("{flag} needs a value"))?
            .clone();
        let number = |v: &str| {
            v.parse::<f64>()
                .map_err(|e| format!("{flag} {v:?}: not a number: {e}"))
        };
        match flag.as_str() {
            "--protocol" => o.protocol = value,
            "--steps" => {
                o.steps = value
                    .split(',')
                    .filter(|s| !s.is_empty())
                    .map(String::from)
                    .collect();
                if let Some(bad) = o.steps.iter().find(|s| !ALL_STEPS.contains(&s.as_str())) {
                    return Err(format!(
                        "unknown step {bad:?}; known: {}",
                        ALL_STEPS.join(",")
                    ));
                }
            }
            "--read" => o.read.push(value),
            "--read-listed" => {
                o.read_listed = value
                    .parse()
                    .map_err(|e| format!("--read-listed {value:?}: {e}"))?
            }
            "--read-error" => o.read_error.push(value),
            "--subscribe" => o.subscribe = Some(value),
            "--subscribe-trigger" => o.subscribe_trigger = Some(value),
            "--update-timeout" => o.update_timeout = number(&value)?,
            "--call" => o.call.push(value),
            "--call-error" => o.call_error.push(value),
            "--prompt" => o.prompt.push(value),
            "--roots" => o.roots.push(value),
            "--mask" => o.mask.push(value),
            "--timeout" => o.timeout = number(&value)?,
            "--http" => o.http = Some(value),
            other => return Err(format!("unknown option {other:?}\n{USAGE}")),
        }
    }
    Ok(o)
}

/// `NAME` or `NAME=JSON-OBJECT`.
fn named_json(spec: &str, what: &str) -> Result<(String, Map<String, Value>), String> {
    let (name, raw) = match spec.split_once('=') {
        Some((n, r)) => (n, Some(r)),
        None => (spec, None),
    };
    if name.is_empty() {
        return Err(format!("empty {what} name in {spec:?}"));
    }
    let args = match raw {
        None => Map::new(),
        Some(raw) => match serde_json::from_str(raw) {
            Ok(Value::Object(m)) => m,
            Ok(_) => return Err(format!("{what} {name:?}: arguments must be a JSON object")),
            Err(e) => return Err(format!("{what} {name:?}: arguments are not JSON: {e}")),
        },
    };
    Ok((name.to_string(), args))
}

/// Replaces volatile substrings in every string of a JSON value (same rules as session.py).
struct Masker {
    rules: Vec<(Regex, &'static str)>,
}

impl Masker {
    fn new(extra: &[String]) -> Result<Self, String> {
        let defaults = [
            (
                r"\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}:\d{2}(?:\.\d+)?(?:Z|[+-]\d{2}:?\d{2})?",
                "<datetime>",
            ),
            (r"\b\d{1,2}:\d{2}:\d{2}(?:\s?[AP]M)?", "<time>"),
            (
                r"\b[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}\b",
                "<uuid>",
            ),
        ];
        let mut rules = Vec::new();
        for (p, r) in defaults {
            rules.push((Regex::new(p).map_err(|e| e.to_string())?, r));
        }
        for p in extra {
            rules.push((
                Regex::new(p).map_err(|e| format!("--mask {p:?}: {e}"))?,
                "<masked>",
            ));
        }
        Ok(Self { rules })
    }

    fn text(&self, s: &str) -> String {
        let mut out = s.to_string();
        for (re, placeholder) in &self.rules {
            out = re.replace_all(&out, *placeholder).into_owned();
        }
        out
    }

    fn value(&self, v: Value) -> Value {
        match v {
            Value::String(s) => Value::String(self.text(&s)),
            Value::Array(a) => Value::Array(a.into_iter().map(|x| self.value(x)).collect()),
            Value::Object(m) => Value::Object(
                m.into_iter()
                    .map(|(k, x)| {
                        let x = match (k.as_str(), x) {
                            ("blob", Value::String(b)) => Value::String(self.blob(b)),
                            (_, x) => self.value(x),
                        };
                        (k, x)
                    })
                    .collect(),
            ),
            other => other,
        }
    }

    /// Masks inside a base64 blob's decoded text; keeps the base64 when nothing changed.
    fn blob(&self, b64: String) -> String {
        let Ok(bytes) = base64::engine::general_purpose::STANDARD.decode(&b64) else {
            return b64;
        };
        let Ok(text) = String::from_utf8(bytes) else {
            return b64;
        };
        let masked = self.text(&text);
        if masked == text {
            b64
        } else {
            format!("<masked-blob:{masked}>")
        }
    }
}

/// Answers the server's requests and collects its notifications.
struct Handler {
    roots: Vec<String>,
    protocol: ProtocolVersion,
    updated: Mutex<Vec<String>>,
    updated_notify: Notify,
    server_requests: Mutex<BTreeSet<String>>,
}

impl ClientHandler for Handler {
    async fn list_roots(
        &self,
        _context: RequestContext<RoleClient>,
    ) -> Result<ListRootsResult, ErrorData> {
        self.server_requests
            .lock()
            .expect("not poisoned")
            .insert("roots/list".into());
        Ok(ListRootsResult::new(
            self.roots.iter().map(Root::new).collect(),
        ))
    }

    async fn on_resource_updated(
        &self,
        params: ResourceUpdatedNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        self.updated.lock().expect("not poisoned").push(params.uri);
        self.updated_notify.notify_one();
    }

    fn get_info(&self) -> ClientConfig {
        let mut caps = ClientCapabilities::default();
        if !self.roots.is_empty() {
            caps.roots = Some(RootsCapabilities::default());
        }
        ClientConfig::new(caps, Implementation::new("rootfence-interop-rmcp", "1"))
            .with_protocol_version(self.protocol.clone())
    }
}

type Client = RunningService<RoleClient, Arc<Handler>>;

struct Session {
    o: Options,
    masker: Masker,
    handler: Arc<Handler>,
    steps: Vec<Value>,
    listed: Vec<String>,
}

fn to_json<T: serde::Serialize>(v: &T) -> Value {
    serde_json::to_value(v).unwrap_or_else(|e| json!({ "unserializable": e.to_string() }))
}

fn unexpected(step: &str, what: &str, e: ServiceError) -> String {
    match e {
        ServiceError::McpError(err) => format!(
            "{step} {what}: unexpected JSON-RPC error {}: {}",
            err.code.0, err.message
        ),
        other => format!("{step} {what}: {other}"),
    }
}

impl Session {
    fn record(&mut self, step: &str, fields: Value) {
        let mut obj = match self.masker.value(fields) {
            Value::Object(m) => m,
            other => Map::from_iter([("value".to_string(), other)]),
        };
        obj.insert("step".into(), Value::String(step.into()));
        self.steps.push(Value::Object(obj));
    }

    fn expect_error<T: serde::Serialize>(
        step: &str,
        what: &str,
        r: Result<T, ServiceError>,
    ) -> Result<Value, String> {
        match r {
            Err(ServiceError::McpError(err)) => {
                Ok(json!({ "code": err.code.0, "message": err.message }))
            }
            Err(other) => Err(format!(
                "{step} {what}: expected a JSON-RPC error, got {other}"
            )),
            Ok(v) => Err(format!(
                "{step} {what}: expected a JSON-RPC error, got {}",
                to_json(&v)
            )),
        }
    }

    async fn connect(&mut self) -> Result<Client, String> {
        let protocol = self.handler.protocol.clone();
        let lifecycle = if protocol.has_initialize() {
            ClientLifecycleMode::Initialize
        } else {
            ClientLifecycleMode::Discover {
                preferred_versions: vec![protocol.clone()],
            }
        };
        let client = if let Some(url) = &self.o.http {
            let transport = StreamableHttpClientTransport::from_uri(url.clone());
            self.handler
                .clone()
                .serve_with_lifecycle(transport, lifecycle)
                .await
                .map_err(|e| format!("connect to {url} at {}: {e}", self.o.protocol))?
        } else {
            let mut command = tokio::process::Command::new(&self.o.server[0]);
            command.args(&self.o.server[1..]).kill_on_drop(true);
            let transport = TokioChildProcess::builder(command)
                .stderr(std::process::Stdio::inherit())
                .spawn()
                .map(|(t, _)| t)
                .map_err(|e| format!("cannot start {:?}: {e}", self.o.server[0]))?;
            self.handler
                .clone()
                .serve_with_lifecycle(transport, lifecycle)
                .await
                .map_err(|e| format!("connect at {}: {e}", self.o.protocol))?
        };
        let info = client
            .peer_info()
            .ok_or("connect: no server info after the handshake")?;
        if info.protocol_version != protocol {
            return Err(format!(
                "connect: negotiated {}, asked for {}",
                info.protocol_version, self.o.protocol
            ));
        }
        let step = if protocol.has_initialize() {
            "initialize"
        } else {
            "discover"
        };
        self.record(step, json!({ "result": to_json(&*info) }));
        Ok(client)
    }

    async fn script(&mut self, c: &Client) -> Result<(), String> {
        let steps = self.o.steps.clone();
        let has = |s: &str| steps.contains(s);
        if has("list-resources") {
            let mut cursor: Option<String> = None;
            for page in 1.. {
                if page > 1000 {
                    return Err("list-resources: more than 1000 pages".into());
                }
                let params = cursor
                    .clone()
                    .map(|c| PaginatedRequestParams::default().with_cursor(Some(c)));
                let r = c
                    .list_resources(params)
                    .await
                    .map_err(|e| unexpected("list-resources", &format!("page {page}"), e))?;
                self.listed
                    .extend(r.resources.iter().map(|r| r.uri.clone()));
                let next = r.next_cursor.clone();
                self.record(
                    "list-resources",
                    json!({ "cursor": cursor, "result": to_json(&r) }),
                );
                match next {
                    Some(n) if !n.is_empty() => cursor = Some(n),
                    _ => break,
                }
            }
        }
        if has("list-templates") {
            let r = c
                .list_resource_templates(None)
                .await
                .map_err(|e| unexpected("list-templates", "", e))?;
            self.record("list-templates", json!({ "result": to_json(&r) }));
        }
        if has("read") {
            let mut uris: Vec<String> = self
                .listed
                .iter()
                .take(self.o.read_listed)
                .cloned()
                .collect();
            uris.extend(self.o.read.iter().cloned());
            for uri in uris {
                let r = c
                    .read_resource(ReadResourceRequestParams::new(uri.clone()))
                    .await
                    .map_err(|e| unexpected("read", &uri, e))?;
                self.record("read", json!({ "uri": uri, "result": to_json(&r) }));
            }
            for uri in self.o.read_error.clone() {
                let r = c
                    .read_resource(ReadResourceRequestParams::new(uri.clone()))
                    .await;
                let error = Self::expect_error("read-error", &uri, r)?;
                self.record("read-error", json!({ "uri": uri, "error": error }));
            }
        }
        if let Some(uri) = self.o.subscribe.clone().filter(|_| has("subscribe")) {
            self.subscribe(c, &uri).await?;
        }
        if has("list-tools") {
            let r = c
                .list_tools(None)
                .await
                .map_err(|e| unexpected("list-tools", "", e))?;
            self.record("list-tools", json!({ "result": to_json(&r) }));
        }
        if has("call") {
            for spec in self.o.call.clone() {
                let (name, args) = named_json(&spec, "tool")?;
                let r = c
                    .call_tool(
                        CallToolRequestParams::new(name.clone()).with_arguments(args.clone()),
                    )
                    .await
                    .map_err(|e| unexpected("call", &name, e))?;
                self.record(
                    "call",
                    json!({ "name": name, "arguments": args, "result": to_json(&r) }),
                );
            }
            for spec in self.o.call_error.clone() {
                let (name, args) = named_json(&spec, "tool")?;
                let r = c
                    .call_tool(
                        CallToolRequestParams::new(name.clone()).with_arguments(args.clone()),
                    )
                    .await;
                // A refused call is a tool execution error (SEP-1303): `isError: true`.
                let error = match r {
                    Ok(result) if result.is_error == Some(true) => {
                        let v = to_json(&result);
                        json!({
                            "isError": true,
                            "text": v["content"][0]["text"],
                            "denial": v["_meta"]["io.rootfence/denial"],
                        })
                    }
                    r => Self::expect_error("call-error", &name, r)?,
                };
                self.record(
                    "call-error",
                    json!({ "name": name, "arguments": args, "error": error }),
                );
            }
        }
        if has("list-prompts") {
            let r = c
                .list_prompts(None)
                .await
                .map_err(|e| unexpected("list-prompts", "", e))?;
            self.record("list-prompts", json!({ "result": to_json(&r) }));
        }
        if has("get-prompt") {
            for spec in self.o.prompt.clone() {
                let (name, args) = named_json(&spec, "prompt")?;
                let args: Map<String, Value> = args
                    .into_iter()
                    .map(|(k, v)| {
                        let s = match v {
                            Value::String(s) => s,
                            other => other.to_string(),
                        };
                        (k, Value::String(s))
                    })
                    .collect();
                let r = c
                    .get_prompt(
                        GetPromptRequestParams::new(name.clone()).with_arguments(args.clone()),
                    )
                    .await
                    .map_err(|e| unexpected("get-prompt", &name, e))?;
                self.record(
                    "get-prompt",
                    json!({ "name": name, "arguments": args, "result": to_json(&r) }),
                );
            }
        }
        Ok(())
    }

    async fn subscribe(&mut self, c: &Client, uri: &str) -> Result<(), String> {
        if !self.handler.protocol.has_initialize() {
            return Err(format!(
                "subscribe: resources/subscribe does not exist at {}",
                self.o.protocol
            ));
        }
        c.subscribe(SubscribeRequestParams::new(uri))
            .await
            .map_err(|e| unexpected("subscribe", uri, e))?;
        self.record("subscribe", json!({ "uri": uri, "result": {} }));
        if let Some(tool) = self.o.subscribe_trigger.clone() {
            c.call_tool(CallToolRequestParams::new(tool.clone()))
                .await
                .map_err(|e| unexpected("subscribe", &tool, e))?;
        }
        let wait = Duration::from_secs_f64(self.o.update_timeout);
        let deadline = tokio::time::Instant::now() + wait;
        loop {
            if !self
                .handler
                .updated
                .lock()
                .expect("not poisoned")
                .is_empty()
            {
                break;
            }
            if tokio::time::timeout_at(deadline, self.handler.updated_notify.notified())
                .await
                .is_err()
            {
                return Err(format!(
                    "subscribe: no notifications/resources/updated for {uri} within {}s",
                    self.o.update_timeout
                ));
            }
        }
        // How many arrive depends on timing; which URIs arrive does not.
        let uris: BTreeSet<String> = self
            .handler
            .updated
            .lock()
            .expect("not poisoned")
            .iter()
            .cloned()
            .collect();
        self.record("updated", json!({ "uris": uris }));
        c.unsubscribe(UnsubscribeRequestParams::new(uri))
            .await
            .map_err(|e| unexpected("unsubscribe", uri, e))?;
        self.record("unsubscribe", json!({ "uri": uri, "result": {} }));
        if let Some(tool) = self.o.subscribe_trigger.clone() {
            c.call_tool(CallToolRequestParams::new(tool.clone()))
                .await
                .map_err(|e| unexpected("unsubscribe", &tool, e))?;
        }
        Ok(())
    }
}

async fn run(o: Options) -> Result<Value, String> {
    let protocol = ProtocolVersion::KNOWN_VERSIONS
        .iter()
        .find(|v| v.as_str() == o.protocol)
        .cloned()
        .ok_or_else(|| format!("--protocol {:?}: not a revision rmcp knows", o.protocol))?;
    let handler = Arc::new(Handler {
        roots: o.roots.clone(),
        protocol,
        updated: Mutex::new(Vec::new()),
        updated_notify: Notify::new(),
        server_requests: Mutex::new(BTreeSet::new()),
    });
    let mut s = Session {
        masker: Masker::new(&o.mask)?,
        o,
        handler,
        steps: Vec::new(),
        listed: Vec::new(),
    };
    let client = s.connect().await?;
    let outcome = s.script(&client).await;
    // Close stdin and let the server go whatever the outcome.
    let _ = client.cancel().await;
    outcome?;
    let server_requests: Vec<String> = s
        .handler
        .server_requests
        .lock()
        .expect("not poisoned")
        .iter()
        .cloned()
        .collect();
    Ok(json!({
        "client": "rmcp",
        "protocol": s.o.protocol,
        "server_requests": server_requests,
        "steps": s.steps,
    }))
}

#[tokio::main]
async fn main() -> ExitCode {
    let o = match parse_options(std::env::args().skip(1).collect()) {
        Ok(o) => o,
        Err(e) => {
            eprintln!("rmcp-client: {e}");
            return ExitCode::from(2);
        }
    };
    let limit = Duration::from_secs_f64(o.timeout);
    match tokio::time::timeout(limit, run(o)).await {
        Ok(Ok(transcript)) => {
            let text = serde_json::to_string_pretty(&transcript).expect("a Value serializes");
            println!("{text}");
            ExitCode::SUCCESS
        }
        Ok(Err(e)) => {
            eprintln!("rmcp-client: FAILED: {e}");
            ExitCode::FAILURE
        }
        Err(_) => {
            eprintln!(
                "rmcp-client: FAILED: the session did not finish within {}s",
                limit.as_secs_f64()
            );
            ExitCode::FAILURE
        }
    }
}
