//! `[audit]`, `[audit.syslog]` and `[telemetry]`: where records and telemetry go. Mostly
//! fixed operational settings (the first layer that sets one fixes it).

use super::*;

/// A fixed path setting (`~` expanded): the first layer that sets it fixes it.
fn fixed_path(cx: &mut Cx<'_, '_>, set: &mut Setting<Option<String>>, e: &Option<Entry<String>>) {
    let Some(e) = e else { return };
    match glob::expand(&e.v, cx.home, false).and_then(|p| glob::check_path(&p).map(|()| p)) {
        Ok(p) => {
            fixed(cx, set, e, Some(p));
        }
        Err(p) => cx.problem(&e.span, p),
    }
}

pub(super) fn apply_audit(acc: &mut Acc, raw: &RawLayer, cx: &mut Cx<'_, '_>) {
    fixed_path(cx, &mut acc.audit_path, &raw.audit_path);
    // fsync and its interval form one setting.
    let interval = raw.audit_fsync_interval_ms.as_ref();
    let new = match (&raw.audit_fsync, interval) {
        (None, None) => None,
        (Some(w), _) if w.v != FsyncWord::Interval => {
            if let Some(i) = interval {
                cx.error(
                    &i.key_span,
                    ErrorKind::BadValue,
                    format!(
                        "`audit.fsync_interval_ms` set, but `audit.fsync = \"{}\"`",
                        word_of(w.v)
                    ),
                    "remove `fsync_interval_ms`, or set `fsync = \"interval\"`",
                );
                None
            } else {
                let f = match w.v {
                    FsyncWord::Always => Fsync::Always,
                    FsyncWord::Denials => Fsync::Denials,
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
    fixed_as(cx, &mut acc.rotate_bytes, &raw.audit_rotate_bytes, Some);
    ranked(cx, &mut acc.on_failure, &raw.audit_on_failure);
    ranked_bool(cx, &mut acc.log_allowed, &raw.audit_log_allowed);
    ranked(cx, &mut acc.allowed, &raw.audit_allowed);
    fixed_as(cx, &mut acc.retain_files, &raw.audit_retain_files, Some);
    fixed_as(cx, &mut acc.retain_bytes, &raw.audit_retain_bytes, Some);
    // Checkpoints are operational, like the log's path: the first layer that sets one fixes
    // it (a project layer cannot move the org's checkpoints or swap its key).
    fixed_path(cx, &mut acc.checkpoint_key, &raw.audit_checkpoint_key);
    fixed_path(cx, &mut acc.checkpoint_path, &raw.audit_checkpoint_path);
    let every = &mut acc.checkpoint_every_records;
    fixed_as(cx, every, &raw.audit_checkpoint_every_records, Some);
    fixed_as(
        cx,
        &mut acc.checkpoint_every_ms,
        &raw.audit_checkpoint_every_ms,
        Some,
    );
    apply_syslog(acc, raw, cx);
}

/// `[audit.syslog]`: one fixed setting as a whole (the first layer that configures it
/// fixes where records go; a later layer may only repeat it).
pub(super) fn apply_syslog(acc: &mut Acc, raw: &RawLayer, cx: &mut Cx<'_, '_>) {
    let Some(addr) = &raw.syslog_address else {
        let parts = [
            raw.syslog_facility.as_ref().map(|e| &e.key_span),
            raw.syslog_format.as_ref().map(|e| &e.key_span),
            raw.syslog_queue.as_ref().map(|e| &e.key_span),
            raw.syslog_sd_id.as_ref().map(|e| &e.key_span),
            raw.syslog_max_message.as_ref().map(|e| &e.key_span),
        ];
        if let Some(span) = parts.into_iter().flatten().next() {
            cx.error(
                span,
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
    if let Some(f) = &raw.syslog_facility {
        c.facility = f.v;
    }
    if let Some(f) = &raw.syslog_format {
        c.format = f.v;
    }
    if let Some(q) = &raw.syslog_queue {
        c.queue = q.v as usize;
    }
    if let Some(m) = &raw.syslog_max_message {
        c.max_message = m.v as usize;
    }
    if let Some(id) = &raw.syslog_sd_id {
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
        c.sd_id = id.v.clone();
    }
    fixed(cx, &mut acc.syslog, addr, Some((addr.v.clone(), c)));
}

pub(super) fn word_of(w: FsyncWord) -> &'static str {
    FSYNC_WORDS
        .iter()
        .find(|(_, f)| *f == w)
        .map_or("?", |(word, _)| word)
}

pub(super) fn apply_telemetry(acc: &mut Acc, raw: &RawLayer, cx: &mut Cx<'_, '_>) {
    if let Some(e) = &raw.tel_endpoint {
        match super::super::telemetry::check_endpoint(&e.v) {
            Ok(()) => {
                fixed(cx, &mut acc.tel_endpoint, e, Some(e.v.clone()));
            }
            Err(why) => cx.error(
                &e.span,
                ErrorKind::BadValue,
                format!("`telemetry.endpoint = \"{}\"`: {why}", e.v),
                "e.g. endpoint = \"http://localhost:4318\"",
            ),
        }
    }
    if let Some(e) = &raw.tel_protocol {
        fixed(cx, &mut acc.tel_protocol, e, Some(e.v.to_owned()));
    }
    if let Some(e) = &raw.tel_service_name {
        if e.v.trim().is_empty() {
            cx.error(
                &e.span,
                ErrorKind::BadValue,
                "`telemetry.service_name` is empty".into(),
                "name the service, e.g. service_name = \"rootfence\", or remove the key",
            );
        } else {
            fixed(cx, &mut acc.tel_service_name, e, Some(e.v.clone()));
        }
    }
    if let Some(e) = &raw.tel_resource_attributes {
        match super::super::telemetry::parse_attributes(&e.v) {
            Ok(_) => {
                fixed(cx, &mut acc.tel_resource_attributes, e, Some(e.v.clone()));
            }
            Err(why) => cx.error(
                &e.span,
                ErrorKind::BadValue,
                format!("`telemetry.resource_attributes`: {why}"),
                "write key=value pairs separated by commas, e.g. \"team=sec,deployment.environment.name=prod\"",
            ),
        }
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
