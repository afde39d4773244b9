//! A real OTLP/HTTP receiver for the tests: listens on a loopback port, answers every export
//! with an empty success (as a collector does), and decodes each request body with the
//! official OpenTelemetry protobuf definitions (`opentelemetry-proto`), so a test sees
//! exactly what a collector would have received. Also a collector that is down (a refused
//! port) and one that hangs (accepts, never answers).

#![allow(dead_code)]

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use opentelemetry_proto::tonic::collector::logs::v1::ExportLogsServiceRequest;
use opentelemetry_proto::tonic::collector::metrics::v1::ExportMetricsServiceRequest;
use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::tonic::common::v1::{AnyValue, KeyValue, any_value};
use opentelemetry_proto::tonic::logs::v1::LogRecord;
use opentelemetry_proto::tonic::metrics::v1::Metric;
use opentelemetry_proto::tonic::trace::v1::Span;
use prost::Message;

/// Everything received so far.
#[derive(Default, Debug)]
pub struct Received {
    pub traces: Vec<ExportTraceServiceRequest>,
    pub metrics: Vec<ExportMetricsServiceRequest>,
    pub logs: Vec<ExportLogsServiceRequest>,
    /// Requests to other paths, or with another content type (always a test failure).
    pub unexpected: Vec<String>,
}

/// A running receiver.
pub struct Receiver {
    pub port: u16,
    got: Arc<Mutex<Received>>,
}

impl Receiver {
    pub fn start() -> Receiver {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let got = Arc::new(Mutex::new(Received::default()));
        let sink = Arc::clone(&got);
        std::thread::spawn(move || {
            for conn in listener.incoming() {
                let Ok(conn) = conn else { break };
                let sink = Arc::clone(&sink);
                std::thread::spawn(move || serve(conn, &sink));
            }
        });
        Receiver { port, got }
    }

    /// `http://127.0.0.1:PORT`.
    pub fn endpoint(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// Runs `f` on what was received.
    pub fn with<T>(&self, f: impl FnOnce(&Received) -> T) -> T {
        f(&self.got.lock().unwrap())
    }

    /// Every span received.
    pub fn spans(&self) -> Vec<Span> {
        self.with(|r| {
            r.traces
                .iter()
                .flat_map(|t| &t.resource_spans)
                .flat_map(|rs| &rs.scope_spans)
                .flat_map(|ss| ss.spans.clone())
                .collect()
        })
    }

    /// Every metric data point set received (one entry per export of a metric).
    pub fn metrics(&self) -> Vec<Metric> {
        self.with(|r| {
            r.metrics
                .iter()
                .flat_map(|m| &m.resource_metrics)
                .flat_map(|rm| &rm.scope_metrics)
                .flat_map(|sm| sm.metrics.clone())
                .collect()
        })
    }

    /// Every log record received.
    pub fn logs(&self) -> Vec<LogRecord> {
        self.with(|r| {
            r.logs
                .iter()
                .flat_map(|l| &l.resource_logs)
                .flat_map(|rl| &rl.scope_logs)
                .flat_map(|sl| sl.log_records.clone())
                .collect()
        })
    }

    /// The resource attributes of the first trace export.
    pub fn trace_resource(&self) -> Vec<KeyValue> {
        self.with(|r| {
            r.traces
                .first()
                .and_then(|t| t.resource_spans.first())
                .and_then(|rs| rs.resource.as_ref())
                .map(|res| res.attributes.clone())
                .unwrap_or_default()
        })
    }

    /// Waits (up to 15 s) until `cond` holds.
    pub fn wait_for(&self, what: &str, mut cond: impl FnMut(&Receiver) -> bool) {
        let deadline = Instant::now() + Duration::from_secs(15);
        while !cond(self) {
            assert!(
                Instant::now() < deadline,
                "the OTLP receiver never got {what}; it has {:#?}",
                self.with(|r| (
                    r.traces.len(),
                    r.metrics.len(),
                    r.logs.len(),
                    r.unexpected.clone()
                ))
            );
            std::thread::sleep(Duration::from_millis(25));
        }
    }
}

/// One connection: HTTP/1.1 requests with a Content-Length body, kept alive.
fn serve(conn: TcpStream, sink: &Mutex<Received>) {
    let mut out = conn.try_clone().unwrap();
    let mut r = BufReader::new(conn);
    loop {
        let mut start = String::new();
        if r.read_line(&mut start).unwrap_or(0) == 0 {
            return;
        }
        let path = start.split_whitespace().nth(1).unwrap_or("").to_owned();
        let mut len = 0usize;
        let mut content_type = String::new();
        loop {
            let mut h = String::new();
            if r.read_line(&mut h).unwrap_or(0) == 0 {
                return;
            }
            let h = h.trim_end();
            if h.is_empty() {
                break;
            }
            if let Some((k, v)) = h.split_once(':') {
                match k.trim().to_ascii_lowercase().as_str() {
                    "content-length" => len = v.trim().parse().unwrap_or(0),
                    "content-type" => content_type = v.trim().to_owned(),
                    _ => {}
                }
            }
        }
        let mut body = vec![0; len];
        if r.read_exact(&mut body).is_err() {
            return;
        }
        {
            let mut got = sink.lock().unwrap();
            if content_type != "application/x-protobuf" {
                got.unexpected.push(format!("{path} as {content_type}"));
            } else {
                match path.as_str() {
                    "/v1/traces" => got
                        .traces
                        .push(ExportTraceServiceRequest::decode(&body[..]).unwrap()),
                    "/v1/metrics" => got
                        .metrics
                        .push(ExportMetricsServiceRequest::decode(&body[..]).unwrap()),
                    "/v1/logs" => got
                        .logs
                        .push(ExportLogsServiceRequest::decode(&body[..]).unwrap()),
                    other => got.unexpected.push(other.to_owned()),
                }
            }
        }
        // An empty Export*ServiceResponse: full success.
        let reply =
            "HTTP/1.1 200 OK\r\ncontent-type: application/x-protobuf\r\ncontent-length: 0\r\n\r\n";
        if out.write_all(reply.as_bytes()).is_err() {
            return;
        }
    }
}

/// A loopback port nothing listens on (connections are refused).
pub fn refused_endpoint() -> String {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = l.local_addr().unwrap().port();
    drop(l);
    format!("http://127.0.0.1:{port}")
}

/// A collector that accepts connections and never reads or answers (a hung collector).
/// Connections are kept open for the life of the test process.
pub fn blackhole_endpoint() -> String {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = l.local_addr().unwrap().port();
    std::thread::spawn(move || {
        let mut kept = Vec::new();
        for c in l.incoming() {
            match c {
                Ok(c) => kept.push(c),
                Err(_) => break,
            }
        }
    });
    format!("http://127.0.0.1:{port}")
}

/// The string value of attribute `key`.
pub fn attr<'a>(attrs: &'a [KeyValue], key: &str) -> Option<&'a any_value::Value> {
    attrs
        .iter()
        .find(|kv| kv.key == key)
        .and_then(|kv| kv.value.as_ref())
        .and_then(|v: &AnyValue| v.value.as_ref())
}

/// The string value of attribute `key`, or "".
pub fn attr_str(attrs: &[KeyValue], key: &str) -> String {
    match attr(attrs, key) {
        Some(any_value::Value::StringValue(s)) => s.clone(),
        Some(any_value::Value::IntValue(i)) => i.to_string(),
        Some(any_value::Value::BoolValue(b)) => b.to_string(),
        Some(other) => format!("{other:?}"),
        None => String::new(),
    }
}

/// Lowercase hex.
pub fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}
