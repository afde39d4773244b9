//! The `[telemetry]` table: its settings and the validators of its values. They live in the
//! policy, which parses them in every build, and the `telemetry` module reads them: the
//! arrow points from telemetry to the policy, never back.

/// `[telemetry]`: where OpenTelemetry goes. Every field is optional; one the policy leaves
/// unset comes from the standard `OTEL_*` environment variable (see `crate::telemetry`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct TelemetrySettings {
    /// The collector's OTLP/HTTP base URL (`http://host:4318`); `/v1/traces`, `/v1/metrics`
    /// and `/v1/logs` are appended. Setting it turns telemetry on.
    pub endpoint: Option<String>,
    /// The OTLP protocol: only `http/protobuf`.
    pub protocol: Option<String>,
    /// `service.name`.
    pub service_name: Option<String>,
    /// Resource attributes, `key=value,key=value` (the `OTEL_RESOURCE_ATTRIBUTES` format).
    pub resource_attributes: Option<String>,
}

/// Whether rootfence can send to this endpoint: plain HTTP only (no TLS stack is built in).
pub fn check_endpoint(endpoint: &str) -> Result<(), String> {
    let lower = endpoint.to_ascii_lowercase();
    if lower.starts_with("https://") {
        return Err(
            "rootfence sends OTLP over plain HTTP only; run an OpenTelemetry \
                    Collector on this machine (http://localhost:4318) and let it forward \
                    over TLS"
                .into(),
        );
    }
    let Some(rest) = lower.strip_prefix("http://") else {
        return Err("the endpoint must be an http:// URL, e.g. http://localhost:4318".into());
    };
    if rest.is_empty() || rest.starts_with('/') {
        return Err("the endpoint names no host; e.g. http://localhost:4318".into());
    }
    Ok(())
}

/// Parses `key1=value1,key2=value2` (the `OTEL_RESOURCE_ATTRIBUTES` format: values may be
/// percent-encoded).
pub fn parse_attributes(list: &str) -> Result<Vec<(String, String)>, String> {
    let mut out: Vec<(String, String)> = Vec::new();
    for item in list.split(',') {
        let item = item.trim();
        if item.is_empty() {
            continue;
        }
        let Some((k, v)) = item.split_once('=') else {
            return Err(format!(
                "`{item}` is not key=value; write e.g. deployment.environment.name=prod"
            ));
        };
        let k = k.trim();
        if k.is_empty() {
            return Err(format!("`{item}` has an empty key"));
        }
        let v = percent_decode(v.trim())
            .ok_or_else(|| format!("`{item}`: the value's percent-encoding is not UTF-8"))?;
        out.retain(|(key, _)| key != k);
        out.push((k.to_owned(), v));
    }
    Ok(out)
}

fn percent_decode(s: &str) -> Option<String> {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        let hex = |c: u8| (c as char).to_digit(16);
        if b[i] == b'%'
            && i + 2 < b.len()
            && let (Some(h), Some(l)) = (hex(b[i + 1]), hex(b[i + 2]))
        {
            out.push((h * 16 + l) as u8);
            i += 3;
            continue;
        }
        out.push(b[i]);
        i += 1;
    }
    String::from_utf8(out).ok()
}
