//! Every record a real `rootfence run` session writes, mapped to OCSF (`audit show --format
//! ocsf`, the same mapping `[audit.syslog] format = "ocsf"` sends), is valid against the
//! OCSF 1.3 schema for its class (issue 29).
//!
//! The validator works offline: the schema's facts for the classes used are encoded here,
//! taken from the OCSF schema sources (ocsf-schema: `events/base_event.json` and the
//! classification and occurrence traits, `events/application/api_activity.json`,
//! `events/application/application_lifecycle.json`, `objects/{metadata,product,actor,
//! network_endpoint,api,request}.json`): the required attributes, the `at_least_one`
//! constraints of `actor` and `network_endpoint`, the enumerations of `activity_id`,
//! `severity_id`, `action_id`, `disposition_id`, `status_id`, the rule that `type_uid` is
//! `class_uid` × 100 plus `activity_id` and `category_uid` is `class_uid` / 1000, and no
//! attribute the class does not define.

mod common;
#[path = "common/serve_harness.rs"]
mod serve_harness;

use common::{Proxy, audit_show, rootfence, tempdir, test_server};
use serde_json::{Map, Value, json};
use std::process::Command;

/// Attributes every class has (base event, classification and occurrence traits) that the
/// mapping may use.
const BASE: &[&str] = &[
    "activity_id",
    "activity_name",
    "category_uid",
    "category_name",
    "class_uid",
    "class_name",
    "type_uid",
    "type_name",
    "severity_id",
    "severity",
    "time",
    "message",
    "metadata",
    "status",
    "status_id",
    "status_code",
    "status_detail",
    "unmapped",
    "count",
    "duration",
    "start_time",
    "end_time",
    "timezone_offset",
    "observables",
    "raw_data",
    "enrichments",
];

const BASE_REQUIRED: &[&str] = &[
    "activity_id",
    "category_uid",
    "class_uid",
    "metadata",
    "severity_id",
    "time",
    "type_uid",
];

fn check_product(p: &Value, at: &str, errs: &mut Vec<String>) {
    if !p.get("name").is_some_and(Value::is_string) {
        errs.push(format!("{at}.name (required) missing"));
    }
}

fn at_least_one(o: &Value, keys: &[&str], at: &str, errs: &mut Vec<String>) {
    if !keys.iter().any(|k| o.get(*k).is_some_and(|v| !v.is_null())) {
        errs.push(format!("{at}: none of {keys:?} (at_least_one)"));
    }
}

/// The schema's rules for one mapped record; the problems found.
fn validate(e: &Value) -> Vec<String> {
    let mut errs = Vec::new();
    let o: &Map<String, Value> = e.as_object().expect("an object");
    for k in BASE_REQUIRED {
        if o.get(*k).is_none_or(Value::is_null) {
            errs.push(format!("{k} (required) missing"));
        }
    }
    let class = o["class_uid"].as_i64().unwrap_or(-1);
    let activity = o["activity_id"].as_i64().unwrap_or(-1);
    if o["type_uid"].as_i64() != Some(class * 100 + activity) {
        errs.push(format!(
            "type_uid {} is not class_uid*100+activity_id",
            o["type_uid"]
        ));
    }
    if o["category_uid"].as_i64() != Some(class / 1000) {
        errs.push("category_uid is not class_uid / 1000".into());
    }
    if !matches!(o["severity_id"].as_i64(), Some(0..=6 | 99)) {
        errs.push("severity_id out of its enumeration".into());
    }
    if !o["time"].is_i64() {
        errs.push("time is not a timestamp (ms)".into());
    }
    let md = &o["metadata"];
    if !md.get("version").is_some_and(Value::is_string) {
        errs.push("metadata.version (required) missing".into());
    }
    match md.get("product") {
        Some(p) => check_product(p, "metadata.product", &mut errs),
        None => errs.push("metadata.product (required) missing".into()),
    }
    if let Some(a) = o.get("actor") {
        at_least_one(
            a,
            &[
                "process",
                "user",
                "invoked_by",
                "session",
                "app_name",
                "app_uid",
            ],
            "actor",
            &mut errs,
        );
        if let Some(s) = a.get("session")
            && !s.is_object()
        {
            errs.push("actor.session is not an object".into());
        }
    }
    let class_attrs: &[&str] = match class {
        6003 => {
            if !matches!(activity, 0..=4 | 99) {
                errs.push(format!("activity_id {activity} not in API Activity's"));
            }
            for k in ["actor", "api", "src_endpoint"] {
                if o.get(k).is_none() {
                    errs.push(format!("{k} (required for API Activity) missing"));
                }
            }
            for ep in ["src_endpoint", "dst_endpoint"] {
                if let Some(v) = o.get(ep) {
                    at_least_one(
                        v,
                        &[
                            "ip",
                            "uid",
                            "name",
                            "hostname",
                            "svc_name",
                            "instance_uid",
                            "interface_uid",
                            "interface_name",
                        ],
                        ep,
                        &mut errs,
                    );
                }
            }
            if let Some(api) = o.get("api") {
                if !api.get("operation").is_some_and(Value::is_string) {
                    errs.push("api.operation (required) missing".into());
                }
                if let Some(r) = api.get("request")
                    && !r.get("uid").is_some_and(Value::is_string)
                {
                    errs.push("api.request.uid (required) missing".into());
                }
            }
            for (k, ok) in [
                ("action_id", &[0, 1, 2, 3, 4, 99][..]),
                ("disposition_id", &[0, 1, 2, 99][..]),
                ("status_id", &[0, 1, 2, 99][..]),
            ] {
                if let Some(v) = o.get(k)
                    && !v.as_i64().is_some_and(|n| ok.contains(&n))
                {
                    errs.push(format!("{k} {v} out of its enumeration"));
                }
            }
            &[
                "actor",
                "api",
                "src_endpoint",
                "dst_endpoint",
                "http_request",
                "http_response",
                "resources",
                "action",
                "action_id",
                "disposition",
                "disposition_id",
                "policy",
                "cloud",
                "device",
            ]
        }
        6002 => {
            if !matches!(activity, 0..=4 | 99) {
                errs.push(format!(
                    "activity_id {activity} not in Application Lifecycle's"
                ));
            }
            match o.get("app") {
                Some(p) => check_product(p, "app", &mut errs),
                None => errs.push("app (required for Application Lifecycle) missing".into()),
            }
            &["app", "device", "actor"]
        }
        0 => {
            if !matches!(activity, 0 | 99) {
                errs.push(format!("activity_id {activity} not in Base Event's"));
            }
            &[]
        }
        c => {
            errs.push(format!("class_uid {c} is not one the mapping uses"));
            &[]
        }
    };
    for k in o.keys() {
        if !BASE.contains(&k.as_str()) && !class_attrs.contains(&k.as_str()) {
            errs.push(format!("{k} is not an attribute of class {class}"));
        }
    }
    errs
}

#[test]
fn every_record_of_a_real_session_is_valid_ocsf() {
    let t = tempdir();
    let project = t.path().join("project");
    std::fs::create_dir(&project).unwrap();
    std::fs::write(project.join("a.txt"), "a").unwrap();
    let project = project.canonicalize().unwrap();
    let log = t.path().join("audit.jsonl");
    let mut cmd = Command::new(rootfence());
    cmd.current_dir(&project)
        .arg("run")
        .arg("--audit-log")
        .arg(&log)
        .arg("--")
        .arg(test_server());
    let mut p = Proxy::spawn(cmd);
    let root = format!("file://{}", project.display());
    p.initialize_with_roots("claude-code", &root);
    let uri = format!("{root}/a.txt");
    let raw = json!({"contents":[{"uri":uri,"text":"a"}]}).to_string();
    p.send_json(&json!({"jsonrpc":"2.0","id":1,"method":"resources/read",
        "params":{"uri":uri,"_rawResult":raw}}));
    assert!(p.recv().get("result").is_some());
    p.send_json(&json!({"jsonrpc":"2.0","id":2,"method":"resources/read",
        "params":{"uri":"file:///etc/passwd"}}));
    assert!(p.recv().get("error").is_some());
    p.close_stdin();
    assert_eq!(p.exit_code(), 0, "{}", p.stderr());

    let text = audit_show(&["--format", "ocsf"], &log);
    let events: Vec<Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let records = std::fs::read_to_string(&log).unwrap().lines().count();
    assert_eq!(events.len(), records, "one OCSF event per record");
    let mut classes = std::collections::BTreeSet::new();
    for e in &events {
        let errs = validate(e);
        assert!(
            errs.is_empty(),
            "{}: {errs:?}\n{e:#}",
            e["metadata"]["event_code"]
        );
        classes.insert(e["class_uid"].as_i64().unwrap());
    }
    assert_eq!(
        classes.into_iter().collect::<Vec<_>>(),
        vec![0, 6002, 6003],
        "every class the mapping uses was checked"
    );
    // The host's decision names the host as it claimed itself, and says it was claimed.
    let deny = events
        .iter()
        .find(|e| e["class_uid"] == 6003 && e["action_id"] == 2)
        .expect("the denial");
    assert_eq!(deny["actor"]["app_name"], "claude-code");
    assert!(
        deny["unmapped"]["actor_claimed"]
            .as_str()
            .unwrap()
            .contains("not authenticated")
    );
    assert_eq!(deny["src_endpoint"]["name"], "mcp host");
    assert_eq!(deny["type_uid"], 600302);
    // The version the records state is the one these schema facts are from, and the one
    // docs/audit-schema.md names.
    for e in &events {
        assert_eq!(e["metadata"]["version"], "1.3.0", "{e}");
    }
    let doc = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/docs/audit-schema.md"))
        .unwrap();
    assert!(
        doc.contains("OCSF **1.3.0**"),
        "the documented OCSF version"
    );
    // The decisions carry the new fields of issue 29 (request key, claimed principal), and
    // are still valid: the claim is not a user, it says it was claimed.
    assert_eq!(
        deny["unmapped"]["principal"], "claimed:claude-code",
        "{deny}"
    );
    assert!(deny["unmapped"]["request"].as_u64().is_some(), "{deny}");
    assert!(deny["actor"].get("user").is_none(), "{deny}");
}

/// A `rootfence serve` session with a bearer token (issue 29): its records carry an
/// authenticated principal (`actor.user`) and the client's address (`src_endpoint.ip`),
/// and every one of them is still valid OCSF.
#[test]
fn every_record_of_a_served_session_with_a_principal_is_valid_ocsf() {
    let t = tempdir();
    let ws = t.path().join("ws");
    std::fs::create_dir_all(&ws).unwrap();
    let tokens = t.path().join("tokens");
    std::fs::write(&tokens, "gamma-token-3\n").unwrap();
    let log = t.path().join("audit.jsonl");
    let mut serve = serve_harness::Serve::start(
        &[
            "--auth-token-file",
            tokens.to_str().unwrap(),
            "--root",
            ws.to_str().unwrap(),
            "--audit-log",
            log.to_str().unwrap(),
        ],
        &[&test_server()],
    );
    let auth = ("Authorization", "Bearer gamma-token-3");
    let sid = serve.open_session(&[auth]);
    let h = [
        auth,
        ("Mcp-Session-Id", sid.as_str()),
        ("MCP-Protocol-Version", "2025-11-25"),
    ];
    let r = serve.post(
        &h,
        r#"{"jsonrpc":"2.0","id":1,"method":"resources/read","params":{"uri":"file:///etc/passwd"}}"#,
    );
    assert!(r.json().get("error").is_some(), "{r:?}");
    let r = serve.request("DELETE", "/mcp", &h, b"");
    assert!(r.status < 300, "{r:?}");
    assert!(serve.stop().success(), "{}", serve.stderr());

    let events: Vec<Value> = audit_show(&["--format", "ocsf"], &log)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    for e in &events {
        let errs = validate(e);
        assert!(errs.is_empty(), "{errs:?}\n{e:#}");
    }
    let deny = events
        .iter()
        .find(|e| e["class_uid"] == 6003 && e["action_id"] == 2)
        .expect("the denial");
    assert!(
        deny["actor"]["user"]["uid"]
            .as_str()
            .is_some_and(|u| u.starts_with("token:")),
        "{deny}"
    );
    assert_eq!(deny["src_endpoint"]["ip"], "127.0.0.1", "{deny}");
    // The session's principal: on its `session_start`, or on its `initialized` when it ran
    // on a pre-started server (`--session-pool`, on by default with `--root`).
    let start = events
        .iter()
        .find(|e| {
            matches!(
                e["metadata"]["event_code"].as_str(),
                Some("session_start" | "initialized")
            ) && e["unmapped"]["principal"]["http_session"] == sid.as_str()
        })
        .unwrap_or_else(|| panic!("no record names the session's principal: {events:#?}"));
    assert_eq!(start["unmapped"]["principal"]["source"], "token", "{start}");
}

#[test]
fn the_validator_catches_what_the_schema_forbids() {
    let good = json!({"activity_id":3,"category_uid":6,"class_uid":6002,"type_uid":600203,
        "severity_id":1,"time":1,"metadata":{"version":"1.3.0","product":{"name":"rootfence"}},
        "app":{"name":"rootfence"}});
    assert!(validate(&good).is_empty(), "{:?}", validate(&good));
    let bad = [
        ("type_uid", json!(600204)),
        ("app", Value::Null),
        ("actor", json!({})),
        ("severity_id", json!(7)),
    ];
    for (k, v) in bad {
        let mut e = good.clone();
        if v.is_null() {
            e.as_object_mut().unwrap().remove(k);
        } else {
            e[k] = v;
        }
        assert!(!validate(&e).is_empty(), "{k}");
    }
    let api = json!({"activity_id":2,"category_uid":6,"class_uid":6003,"type_uid":600302,
        "severity_id":3,"time":1,"metadata":{"version":"1.3.0","product":{"name":"r"}},
        "api":{"operation":"resources/read"},"actor":{"session":{"uid":"a"}}});
    assert!(
        validate(&api)
            .iter()
            .any(|e| e.contains("src_endpoint (required")),
        "{:?}",
        validate(&api)
    );
}
