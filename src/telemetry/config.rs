//! Where telemetry goes: the policy's `[telemetry]` table over the standard OpenTelemetry
//! environment variables, resolved once at start.
//!
//! Telemetry is off unless a collector is named: `telemetry.endpoint` in the policy,
//! `OTEL_EXPORTER_OTLP_ENDPOINT`, or a per-signal `OTEL_EXPORTER_OTLP_{TRACES,METRICS,LOGS}_ENDPOINT`.
//! A value the policy sets wins over the environment's (an organisation's policy says where
//! its fleet reports; a variable a developer exported for their own apps does not move it).
//! `OTEL_SDK_DISABLED=true` turns everything off; `OTEL_{TRACES,METRICS,LOGS}_EXPORTER=none`
//! turns one signal off. Everything else the exporter and SDK read themselves (headers,
//! timeouts, batch sizes, the sampler, the metric export interval).

// The `[telemetry]` table and its validators belong to the policy (which must parse them
// in every build); telemetry reads them, so the arrow points from here to the policy.
use crate::policy::TelemetrySettings;
pub use crate::policy::telemetry::{check_endpoint, parse_attributes};

/// The one OTLP protocol rootfence speaks.
pub const HTTP_PROTOBUF: &str = "http/protobuf";

/// The service name when neither the policy nor the environment gives one.
pub const DEFAULT_SERVICE_NAME: &str = "rootfence";

/// Telemetry as resolved for this process.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Config {
    /// The collector's base URL from the policy (`/v1/traces` etc. are appended); `None`
    /// when the environment names it (the exporter reads it there).
    pub endpoint: Option<String>,
    /// `service.name`.
    pub service_name: String,
    /// Resource attributes: the environment's, then the policy's (which win on a clash).
    pub resource: Vec<(String, String)>,
    /// Which signals are exported.
    pub traces: bool,
    /// Metrics.
    pub metrics: bool,
    /// Audit records as log records.
    pub logs: bool,
}

impl Config {
    /// The endpoint URL for one signal (`v1/traces`, ...), when the policy names the
    /// collector.
    pub fn signal_endpoint(&self, path: &str) -> Option<String> {
        self.endpoint
            .as_deref()
            .map(|e| format!("{}/{path}", e.trim_end_matches('/')))
    }
}

/// Resolves the configuration from the policy and the environment (`env` looks a variable
/// up). `Ok(None)` when telemetry is off; `Err` when it is asked for in a way rootfence
/// cannot honour (the caller says so and runs without it).
pub fn resolve(
    policy: &TelemetrySettings,
    env: impl Fn(&str) -> Option<String>,
) -> Result<Option<Config>, String> {
    let var = |name: &str| {
        env(name)
            .map(|v| v.trim().to_owned())
            .filter(|v| !v.is_empty())
    };
    if var("OTEL_SDK_DISABLED").is_some_and(|v| v.eq_ignore_ascii_case("true")) {
        return Ok(None);
    }
    // `OTEL_EXPORTER_OTLP_<setting>`, then the per-signal ones.
    let names = |setting: &str| {
        std::iter::once(format!("OTEL_EXPORTER_OTLP_{setting}")).chain(
            ["TRACES", "METRICS", "LOGS"].map(|s| format!("OTEL_EXPORTER_OTLP_{s}_{setting}")),
        )
    };
    let env_endpoint = names("ENDPOINT").any(|name| var(&name).is_some());
    if policy.endpoint.is_none() && !env_endpoint {
        return Ok(None);
    }
    if policy.protocol.is_none() {
        for name in names("PROTOCOL") {
            if let Some(p) = var(&name)
                && p != HTTP_PROTOBUF
            {
                return Err(format!(
                    "{name}={p}: rootfence exports OpenTelemetry over HTTP only; set it to \
                     {HTTP_PROTOBUF} and point the endpoint at the collector's OTLP/HTTP port \
                     (4318 by default)"
                ));
            }
        }
    }
    if policy.endpoint.is_none() {
        for name in names("ENDPOINT") {
            if let Some(e) = var(&name) {
                check_endpoint(&e).map_err(|why| format!("{name}={e}: {why}"))?;
            }
        }
    }
    let on = |s: &str| var(&format!("OTEL_{s}_EXPORTER")).is_none_or(|v| v != "none");
    let from_env = var("OTEL_RESOURCE_ATTRIBUTES").map(|list| parse_attributes(&list));
    let mut resource = from_env
        .transpose()
        .map_err(|why| format!("OTEL_RESOURCE_ATTRIBUTES: {why}"))?
        .unwrap_or_default();
    if let Some(list) = &policy.resource_attributes {
        // Validated with the policy; a clash goes to the policy.
        for (k, v) in parse_attributes(list).unwrap_or_default() {
            resource.retain(|(key, _)| key != &k);
            resource.push((k, v));
        }
    }
    let from_attributes = resource
        .iter()
        .find(|(k, _)| k == "service.name")
        .map(|(_, v)| v.clone());
    let service_name = policy
        .service_name
        .clone()
        .or_else(|| var("OTEL_SERVICE_NAME"))
        .or(from_attributes)
        .unwrap_or_else(|| DEFAULT_SERVICE_NAME.to_owned());
    resource.retain(|(k, _)| k != "service.name");
    Ok(Some(Config {
        endpoint: policy.endpoint.clone(),
        service_name,
        resource,
        traces: on("TRACES"),
        metrics: on("METRICS"),
        logs: on("LOGS"),
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env<'a>(vars: &'a [(&'a str, &'a str)]) -> impl Fn(&str) -> Option<String> + 'a {
        move |name| {
            vars.iter()
                .find(|(k, _)| *k == name)
                .map(|(_, v)| (*v).to_owned())
        }
    }

    fn policy(endpoint: Option<&str>) -> TelemetrySettings {
        TelemetrySettings {
            endpoint: endpoint.map(str::to_owned),
            ..TelemetrySettings::default()
        }
    }

    #[test]
    fn off_unless_a_collector_is_named() {
        assert_eq!(resolve(&policy(None), env(&[])), Ok(None));
        assert_eq!(
            resolve(&policy(None), env(&[("OTEL_SERVICE_NAME", "x")])),
            Ok(None)
        );
        let on = resolve(
            &policy(None),
            env(&[("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:4318")]),
        )
        .unwrap()
        .unwrap();
        assert_eq!(
            on.endpoint, None,
            "the exporter reads the environment itself"
        );
        assert_eq!(on.service_name, "rootfence");
        assert!(on.traces && on.metrics && on.logs);
        let per_signal = resolve(
            &policy(None),
            env(&[("OTEL_EXPORTER_OTLP_LOGS_ENDPOINT", "http://c:4318/v1/logs")]),
        );
        assert!(matches!(per_signal, Ok(Some(_))));
    }

    #[test]
    fn the_sdk_switch_and_per_signal_none_turn_things_off() {
        let vars = [
            ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://c:4318"),
            ("OTEL_SDK_DISABLED", "true"),
        ];
        assert_eq!(resolve(&policy(None), env(&vars)), Ok(None));
        let vars = [
            ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://c:4318"),
            ("OTEL_METRICS_EXPORTER", "none"),
        ];
        let c = resolve(&policy(None), env(&vars)).unwrap().unwrap();
        assert!(c.traces && !c.metrics && c.logs);
    }

    #[test]
    fn the_policy_wins_over_the_environment() {
        let p = TelemetrySettings {
            endpoint: Some("http://collector.corp:4318/".into()),
            protocol: Some(HTTP_PROTOBUF.into()),
            service_name: Some("rootfence-laptops".into()),
            resource_attributes: Some("team=sec,deployment.environment.name=prod".into()),
        };
        let vars = [
            ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://elsewhere:4318"),
            ("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc"),
            ("OTEL_SERVICE_NAME", "mine"),
            ("OTEL_RESOURCE_ATTRIBUTES", "team=dev,host.owner=ann%20b"),
        ];
        let c = resolve(&p, env(&vars)).unwrap().unwrap();
        assert_eq!(
            c.signal_endpoint("v1/traces").as_deref(),
            Some("http://collector.corp:4318/v1/traces")
        );
        assert_eq!(c.service_name, "rootfence-laptops");
        assert_eq!(
            c.resource,
            [
                ("host.owner".to_owned(), "ann b".to_owned()),
                ("team".to_owned(), "sec".to_owned()),
                ("deployment.environment.name".to_owned(), "prod".to_owned()),
            ]
        );
    }

    #[test]
    fn service_name_comes_from_the_standard_places_in_order() {
        let base = ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://c:4318");
        let name = |vars: &[(&str, &str)]| {
            resolve(&policy(None), env(vars))
                .unwrap()
                .unwrap()
                .service_name
        };
        assert_eq!(name(&[base]), "rootfence");
        assert_eq!(
            name(&[base, ("OTEL_RESOURCE_ATTRIBUTES", "service.name=a")]),
            "a"
        );
        assert_eq!(
            name(&[
                base,
                ("OTEL_RESOURCE_ATTRIBUTES", "service.name=a"),
                ("OTEL_SERVICE_NAME", "b")
            ]),
            "b"
        );
    }

    #[test]
    fn what_cannot_be_honoured_is_refused_with_what_to_do() {
        let grpc = resolve(
            &policy(None),
            env(&[
                ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://c:4317"),
                ("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc"),
            ]),
        )
        .unwrap_err();
        assert!(
            grpc.contains("http/protobuf") && grpc.contains("4318"),
            "{grpc}"
        );
        let tls = resolve(
            &policy(None),
            env(&[("OTEL_EXPORTER_OTLP_ENDPOINT", "https://c:4318")]),
        )
        .unwrap_err();
        assert!(tls.contains("Collector on this machine"), "{tls}");
        let bad = resolve(
            &policy(None),
            env(&[
                ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://c:4318"),
                ("OTEL_RESOURCE_ATTRIBUTES", "novalue"),
            ]),
        )
        .unwrap_err();
        assert!(bad.contains("key=value"), "{bad}");
    }

    #[test]
    fn attribute_lists_parse_like_the_sdk() {
        assert_eq!(
            parse_attributes(" a=1 , b = x%2Cy ,, a=2").unwrap(),
            [
                ("b".to_owned(), "x,y".to_owned()),
                ("a".to_owned(), "2".to_owned())
            ]
        );
        assert!(parse_attributes("=x").is_err());
        assert_eq!(parse_attributes("k=100%").unwrap()[0].1, "100%");
    }
}
