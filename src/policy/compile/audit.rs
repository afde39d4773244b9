//! `[audit]`, `[audit.syslog]` and `[telemetry]` settings with a rule of their own: the
//! fsync stance with its interval, the syslog copy (fixed as a whole), and the checks of
//! the telemetry strings (the other settings are plain, applied by `layering.rs`).

use super::*;

pub(super) fn apply_audit(acc: &mut Acc, raw: &RawLayer, cx: &mut Cx<'_, '_>) {
    // fsync and its interval form one setting.
    let interval = raw.read("audit.fsync_interval_ms", Val::int);
    let interval = interval.as_ref();
    let fsync = raw.get("audit.fsync").and_then(|e| match e.v {
        Val::Word(w, _) => Some(e.with(w)),
        _ => None,
    });
    let new = match (&fsync, interval) {
        (None, None) => None,
        (Some(w), _) if w.v != "interval" => {
            if let Some(i) = interval {
                cx.error(
                    &i.key_span,
                    ErrorKind::BadValue,
                    format!(
                        "`audit.fsync_interval_ms` set, but `audit.fsync = \"{}\"`",
                        w.v
                    ),
                    "remove `fsync_interval_ms`, or set `fsync = \"interval\"`",
                );
                None
            } else {
                let f = match w.v {
                    "always" => Fsync::Always,
                    "denials" => Fsync::Denials,
                    _ => Fsync::Never,
                };
                Some((f, w.span.clone(), cx.prov(w)))
            }
        }
        (Some(w), i) => {
            let ms = i.map(|i| i.v).unwrap_or(match acc.fsync.v {
                Fsync::Interval(d) => d.as_millis() as u64,
                _ => DEFAULT_FSYNC_INTERVAL_MS,
            });
            let mut prov = cx.prov(w);
            if let Some(i) = i {
                prov.rule.push_str(&format!(", {} = {}", i.key, i.v));
            }
            Some((
                Fsync::Interval(Duration::from_millis(ms)),
                w.span.clone(),
                prov,
            ))
        }
        (None, Some(i)) => {
            if matches!(acc.fsync.v, Fsync::Interval(_)) {
                Some((
                    Fsync::Interval(Duration::from_millis(i.v)),
                    i.span.clone(),
                    cx.prov(i),
                ))
            } else {
                cx.error(
                    &i.key_span,
                    ErrorKind::BadValue,
                    "`audit.fsync_interval_ms` set, but `audit.fsync` is not \"interval\"".into(),
                    "add `fsync = \"interval\"`, or remove `fsync_interval_ms`",
                );
                None
            }
        }
    };
    if let Some((f, span, prov)) = new {
        if cx.check && fsync_rank(&f) > fsync_rank(&acc.fsync.v) {
            let what = format!("`{}` is wider than the earlier fsync stance", prov.rule);
            let hint = "a later layer may only narrow: \"always\" < \"denials\" < \"interval\" \
                        (shorter first) < \"never\"";
            cx.widening(&span, what, &acc.fsync.prov.clone(), hint);
        } else {
            acc.fsync = Setting { v: f, prov };
        }
    }
    apply_syslog(acc, raw, cx);
}

/// `[audit.syslog]`: one fixed setting as a whole (the first layer that configures it
/// fixes where records go; a later layer may only repeat it).
pub(super) fn apply_syslog(acc: &mut Acc, raw: &RawLayer, cx: &mut Cx<'_, '_>) {
    let Some(addr) = raw.read("audit.syslog.address", Val::text) else {
        let parts = ["facility", "format", "queue", "sd_id", "max_message"];
        if let Some(e) = parts
            .iter()
            .find_map(|k| raw.get(&format!("audit.syslog.{k}")))
        {
            cx.error(
                &e.key_span,
                ErrorKind::BadValue,
                "`[audit.syslog]` without `address`".into(),
                "add `address = \"udp://host:514\"`, `\"tcp://host:601\"` or `\"unix:///dev/log\"`",
            );
        }
        return;
    };
    let transport = match addr.v.parse::<Transport>() {
        Ok(t) => t,
        Err(e) => {
            cx.error(
                &addr.span,
                ErrorKind::BadValue,
                e,
                "e.g. `address = \"tcp://logs.example.org:601\"`",
            );
            return;
        }
    };
    let mut c = SyslogConfig::new(transport);
    if let Some(Val::Word(_, n)) = raw.get("audit.syslog.facility").map(|e| &e.v) {
        c.facility = *n as u8;
    }
    if let Some(f) = raw.read("audit.syslog.format", Val::word) {
        c.format = f.v;
    }
    if let Some(q) = raw.read("audit.syslog.queue", Val::int) {
        c.queue = q.v as usize;
    }
    if let Some(m) = raw.read("audit.syslog.max_message", Val::int) {
        c.max_message = m.v as usize;
    }
    if let Some(id) = raw.read("audit.syslog.sd_id", Val::text) {
        let ok = !id.v.is_empty()
            && id.v.len() <= 32
            && id
                .v
                .bytes()
                .all(|b| (33..=126).contains(&b) && !matches!(b, b'=' | b']' | b'"'));
        if !ok {
            cx.error(
                &id.span,
                ErrorKind::BadValue,
                format!("invalid syslog SD-ID `{}`", id.v),
                "1 to 32 printable ASCII characters without `=`, `]`, `\"` or spaces, e.g. \
                 `rootfence@<your private enterprise number>`",
            );
            return;
        }
        c.sd_id = id.v.to_owned();
    }
    fixed(cx, &mut acc.syslog, &addr, Some((addr.v.to_owned(), c)));
}

/// Checks a plain string setting beyond its type (the telemetry strings): the message and
/// hint of why it is not valid.
pub(super) fn check_text(key: &str, v: &str) -> Result<(), (String, &'static str)> {
    use super::super::telemetry::{check_endpoint, parse_attributes};
    match key {
        "telemetry.endpoint" => check_endpoint(v).map_err(|why| {
            let msg = format!("`telemetry.endpoint = \"{v}\"`: {why}");
            (msg, "e.g. endpoint = \"http://localhost:4318\"")
        }),
        "telemetry.service_name" if v.trim().is_empty() => Err((
            "`telemetry.service_name` is empty".into(),
            "name the service, e.g. service_name = \"rootfence\", or remove the key",
        )),
        "telemetry.resource_attributes" => parse_attributes(v).map(|_| ()).map_err(|why| {
            (
                format!("`telemetry.resource_attributes`: {why}"),
                "write key=value pairs separated by commas, e.g. \"team=sec,deployment.environment.name=prod\"",
            )
        }),
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_telemetry_table_is_validated_and_fixed_by_its_first_layer() {
        let load = |layers: &[&str]| {
            let sources: Vec<(String, String)> = layers
                .iter()
                .enumerate()
                .map(|(i, t)| (format!("l{i}.toml"), format!("version = 1\n{t}")))
                .collect();
            crate::policy::Policy::from_sources(&sources)
        };
        let p = load(&["[telemetry]\nendpoint = \"http://localhost:4318\"\n\
                        protocol = \"http/protobuf\"\nservice_name = \"fleet\"\n\
                        resource_attributes = \"team=sec\""])
        .unwrap();
        assert_eq!(
            p.telemetry().endpoint.as_deref(),
            Some("http://localhost:4318")
        );
        assert_eq!(p.telemetry().service_name.as_deref(), Some("fleet"));
        assert_eq!(
            p.telemetry().resource_attributes.as_deref(),
            Some("team=sec")
        );
        assert_eq!(
            load(&[""]).unwrap().telemetry(),
            &TelemetrySettings::default()
        );
        for (bad, says) in [
            ("endpoint = \"https://c:4318\"", "plain HTTP"),
            ("endpoint = \"c:4318\"", "http:// URL"),
            ("protocol = \"grpc\"", "http/protobuf"),
            ("service_name = \" \"", "empty"),
            ("resource_attributes = \"team\"", "key=value"),
            ("endpont = \"http://c:4318\"", "endpoint"),
        ] {
            let err = load(&[&format!("[telemetry]\n{bad}")])
                .unwrap_err()
                .to_string();
            assert!(err.contains(says), "{bad}: {err}");
        }
        // A later layer may repeat the organisation's collector, not move it.
        let org = "[telemetry]\nendpoint = \"http://localhost:4318\"";
        assert!(load(&[org, org]).is_ok());
        let moved = load(&[org, "[telemetry]\nendpoint = \"http://elsewhere:4318\""]);
        assert!(moved.unwrap_err().to_string().contains("conflicts"));
    }
}
