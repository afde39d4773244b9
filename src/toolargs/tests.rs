//! Unit tables for the inference: the recorded `tools/list` of every server the
//! compatibility suite runs (`tests/fixtures/tools_list/`, from the pinned versions by
//! `scripts/record-tools-list.py`, compared with `inferred.txt` there), one synthetic schema
//! per shape, hostile schemas,
//! and the call-time walk.

use serde_json::{Value, json};

use super::*;

/// `tool pointer role (why)` for every place a plan checks or knows not to.
fn summary(result: &Value) -> Vec<String> {
    let mut out = Vec::new();
    for (name, plan) in infer_list(result) {
        if let Some(why) = &plan.overflow {
            out.push(format!("{name}: overflow ({why})"));
        }
        for r in &plan.rules {
            out.push(format!("{name} {} {:?} ({})", r.pointer(), r.role, r.why));
        }
        for n in &plan.notes {
            out.push(format!("{name}: {n}"));
        }
    }
    out
}

const FIXTURES: [&str; 10] = [
    "server-filesystem",
    "server-memory",
    "mcp-server-git",
    "mcp-server-time",
    "server-everything",
    "server-everything-2025",
    "python-sdk-roots-files",
    "playwright-mcp",
    "mcp-server-sqlite",
    "markitdown-mcp",
];

fn fixture_dir() -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/tools_list")
}

/// Every real server's tools, inferred: the table is `inferred.txt` (rewritten with
/// `ROOTFENCE_UPDATE_INFERRED=1`; review the diff).
#[test]
fn real_servers_tools_are_inferred_as_recorded() {
    let mut text = String::new();
    for f in FIXTURES {
        let v: Value = serde_json::from_str(
            &std::fs::read_to_string(fixture_dir().join(format!("{f}.json"))).unwrap(),
        )
        .unwrap();
        let paths = infer_list(&v)
            .iter()
            .flat_map(|(_, p)| &p.rules)
            .filter(|r| matches!(r.role, Role::Path | Role::Uri))
            .count();
        text.push_str(&format!(
            "== {f}: {paths} arguments checked as paths or URIs\n"
        ));
        for l in summary(&v) {
            text.push_str(&l);
            text.push('\n');
        }
    }
    let golden = fixture_dir().join("inferred.txt");
    if std::env::var_os("ROOTFENCE_UPDATE_INFERRED").is_some() {
        std::fs::write(&golden, &text).unwrap();
    }
    let want = std::fs::read_to_string(&golden).unwrap_or_default();
    assert_eq!(
        text, want,
        "inference over the recorded tools/list changed (ROOTFENCE_UPDATE_INFERRED=1 rewrites it)"
    );
}

fn plan(schema: Value) -> ToolPlan {
    schema::infer_with(&schema, &mut schema::MAX_NODES.clone())
}

fn roles(p: &ToolPlan) -> Vec<(String, Role)> {
    p.rules.iter().map(|r| (r.pointer(), r.role)).collect()
}

fn has(p: &ToolPlan, pointer: &str, role: Role) -> bool {
    p.rules
        .iter()
        .any(|r| r.pointer() == pointer && r.role == role)
}

#[test]
fn names_of_every_shape() {
    let s = json!({"type": "object", "properties": {
        "path": {"type": "string"},
        "file": {"type": "string"},
        "file_path": {"type": "string"},
        "filename": {"type": "string"},
        "directory": {"type": "string"},
        "dir": {"type": "string"},
        "root": {"type": "string"},
        "cwd": {"type": "string"},
        "uri": {"type": "string"},
        "source": {"type": "string"},
        "destination": {"type": "string"},
        "src": {"type": "string"},
        "dst": {"type": "string"},
        "target": {"type": "object", "properties": {"file": {"type": "string"}}},
        "paths": {"type": "array", "items": {"type": "string"}},
        "entries": {"type": "array", "items": {"type": "object",
            "properties": {"filePath": {"type": "string"}, "note": {"type": "string"}}}},
        "count": {"type": "integer"},
    }});
    let p = plan(s);
    use Role::*;
    for (ptr, role) in [
        ("/path", Path),
        ("/file", Path),
        ("/file_path", Path),
        ("/filename", Path),
        ("/directory", Path),
        ("/dir", Path),
        ("/root", Path),
        ("/cwd", Path),
        ("/uri", Uri),
        ("/source", Weak),
        ("/destination", Weak),
        ("/src", Weak),
        ("/dst", Weak),
        ("/target/file", Path),
        ("/paths/*", Path),
        ("/entries/*/filePath", Path),
    ] {
        assert!(has(&p, ptr, role), "{ptr} {role:?}: {:?}", roles(&p));
    }
    assert!(
        !p.rules
            .iter()
            .any(|r| r.pointer() == "/count" || r.pointer() == "/entries/*/note")
    );
    assert!(p.overflow.is_none() && p.notes.is_empty());
}

#[test]
fn formats_and_descriptions() {
    let p = plan(json!({"type": "object", "properties": {
        "doc": {"type": "string", "format": "uri"},
        "ref": {"type": "string", "format": "uri-reference"},
        "a": {"type": "string", "description": "The file to open"},
        "b": {"type": "string", "description": "Directory to search in"},
        "c": {"type": "string", "description": "Path of the input"},
        "source": {"type": "string", "description": "Source file path"},
        "api": {"type": "string", "description": "The REST endpoint path, e.g. /v1/users"},
        "path": {"type": "string", "description": "The API path to call, e.g. /v1/users"},
        "re": {"type": "string", "description": "A regular expression"},
        "kind": {"type": "string", "enum": ["png", "jpeg"], "description": "Image format of the file"},
        "when": {"type": "string", "format": "date-time"},
        "address": {"type": "string", "format": "uri", "description": "REST endpoint"},
    }}));
    use Role::*;
    for (ptr, role) in [
        ("/doc", Uri),
        ("/ref", Uri),
        ("/a", Path),
        ("/b", Path),
        ("/c", Path),
        ("/source", Path),
        ("/api", NotPath),
        ("/path", NotPath),
        ("/re", NotPath),
        ("/when", NotPath),
        ("/address", Uri),
    ] {
        assert!(has(&p, ptr, role), "{ptr} {role:?}: {:?}", roles(&p));
    }
    assert!(
        !p.rules.iter().any(|r| r.pointer() == "/kind"),
        "{:?}",
        roles(&p)
    );
}

#[test]
fn local_refs_are_followed_external_ones_never() {
    let p = plan(json!({
        "type": "object",
        "$defs": {"Loc": {"type": "object", "properties": {"path": {"type": "string"}}},
                  "A B": {"type": "string", "format": "uri"}},
        "definitions": {"Old": {"type": "string", "description": "a directory"}},
        "properties": {
            "where": {"$ref": "#/$defs/Loc"},
            "enc": {"$ref": "#/$defs/A%20B"},
            "old": {"$ref": "#/definitions/Old"},
            "remote": {"$ref": "https://evil.example/schema.json"},
            "anchor": {"$ref": "#somewhere"},
            "dyn": {"$dynamicRef": "#meta"},
            "list": {"type": "array", "items": {"$ref": "#/$defs/Loc"}},
        }
    }));
    assert!(has(&p, "/where/path", Role::Path), "{:?}", roles(&p));
    assert!(has(&p, "/enc", Role::Uri));
    assert!(has(&p, "/old", Role::Path));
    assert!(has(&p, "/list/*/path", Role::Path));
    let notes = p.notes.join("\n");
    assert!(
        notes.contains("`/remote`: $ref \"https://evil.example/schema.json\" not followed"),
        "{notes}"
    );
    assert!(
        notes.contains("`/anchor`: $ref \"#somewhere\" does not resolve"),
        "{notes}"
    );
    assert!(notes.contains("`/dyn`: $dynamicRef"), "{notes}");
    // Their strings are judged by their shape: an absolute path there is a candidate.
    let args = json!({"remote": "/etc/passwd", "anchor": "~/.ssh/id_rsa", "dyn": "ok"});
    let c = candidates(Some(&p), &args, Infer::Schema, &[]);
    let got: Vec<&str> = c.iter().map(|c| c.pointer.as_str()).collect();
    assert_eq!(got, ["/remote", "/anchor"]);
}

#[test]
fn cyclic_refs_stop_where_they_close() {
    let p = plan(json!({
        "$defs": {"Node": {"type": "object", "properties": {
            "path": {"type": "string"},
            "children": {"type": "array", "items": {"$ref": "#/$defs/Node"}}}}},
        "$ref": "#/$defs/Node"
    }));
    assert!(has(&p, "/path", Role::Path), "{:?}", roles(&p));
    assert!(
        p.notes.iter().any(|n| n.contains("recursive $ref")),
        "{:?}",
        p.notes
    );
    // `#` pointing at itself, and a ref to a ref to itself.
    let p = plan(json!({"$ref": "#", "properties": {"a": {"$ref": "#/properties/a"}}}));
    assert!(p.overflow.is_none());
    // Deeper strings of a recursive tree still get their shape judged.
    let args = json!({"path": "/r/a", "children": [{"path": "/etc/passwd"}]});
    let c = candidates(
        Some(&plan(json!({
            "$defs": {"Node": {"type": "object", "properties": {
                "path": {"type": "string"},
                "children": {"type": "array", "items": {"$ref": "#/$defs/Node"}}}}},
            "$ref": "#/$defs/Node"
        }))),
        &args,
        Infer::Schema,
        &[],
    );
    let got: Vec<&str> = c.iter().map(|c| c.pointer.as_str()).collect();
    assert_eq!(got, ["/path", "/children/0/path"]);
}

/// A schema past the bounds is not read further: every string is judged by its shape,
/// including those an unread part would call not-a-path.
#[test]
fn hostile_schemas_overflow_closed_in_bounded_time() {
    // Deep nesting.
    let mut deep = json!({"type": "string"});
    for _ in 0..100 {
        deep = json!({"type": "object", "properties": {"a": deep}});
    }
    let p = plan(deep);
    assert!(p.overflow.as_deref().unwrap().contains("deeper"), "{p:?}");
    // A DAG of refs that doubles at each level: 2^14 paths, stopped by the node budget.
    let mut defs = serde_json::Map::new();
    defs.insert("d0".into(), json!({"type": "string"}));
    for i in 1..15 {
        let prev = format!("#/$defs/d{}", i - 1);
        defs.insert(
            format!("d{i}"),
            json!({"type": "object", "properties": {"l": {"$ref": prev}, "r": {"$ref": prev}}}),
        );
    }
    let start = std::time::Instant::now();
    let p = plan(json!({"$defs": defs, "$ref": "#/$defs/d14"}));
    assert!(
        p.overflow.as_deref().unwrap().contains("schema nodes"),
        "{p:?}"
    );
    assert!(start.elapsed() < std::time::Duration::from_secs(5));
    let args = json!({"query": "/etc/passwd"});
    let c = candidates(Some(&p), &args, Infer::Schema, &[]);
    assert_eq!(c.len(), 1, "overflowed: shape decides even for `query`");
    assert!(c[0].why.contains("not read to the end"), "{}", c[0].why);
    // A huge enum is not read at all.
    let words: Vec<String> = (0..200_000).map(|i| format!("w{i}")).collect();
    let p = plan(json!({"properties": {"mode": {"type": "string", "enum": words}}}));
    assert!(p.overflow.is_none() && p.rules.is_empty());
    // Too many arguments to check.
    let props: serde_json::Map<String, Value> = (0..300)
        .map(|i| {
            (
                format!("path{i}"),
                json!({"type": "string", "description": "a file"}),
            )
        })
        .collect();
    let p = plan(json!({"properties": props}));
    assert!(
        p.overflow.as_deref().unwrap().contains("arguments"),
        "{p:?}"
    );
}

#[test]
fn a_list_is_bounded_as_a_whole() {
    let schema = {
        let props: serde_json::Map<String, Value> = (0..1000)
            .map(|i| (format!("p{i}"), json!({"type": "string"})))
            .collect();
        json!({"type": "object", "properties": props})
    };
    let tools: Vec<Value> = (0..100)
        .map(|i| json!({"name": format!("t{i}"), "inputSchema": schema}))
        .collect();
    let learned = infer_list(&json!({"tools": tools}));
    assert_eq!(learned.len(), 100);
    let over = learned.iter().filter(|(_, p)| p.overflow.is_some()).count();
    assert!(over >= 50, "{over}: the list's node budget ran out");
    let mut l = Learned::default();
    l.learn(&json!({"tools": [{"name": "a", "inputSchema": {"properties": {"path": {}}}}]}));
    assert!(l.get("a").is_some());
    l.forget();
    assert!(l.get("a").is_none());
}

fn pointers(c: &[Candidate]) -> Vec<String> {
    c.iter().map(|c| c.pointer.clone()).collect()
}

/// No false refusals: under `"schema"`, benign values are not even candidates.
#[test]
fn benign_values_are_not_candidates() {
    let p = plan(json!({"type": "object", "properties": {
        "url": {"type": "string"},
        "pattern": {"type": "string"},
        "endpoint": {"type": "string", "description": "REST endpoint path"},
        "expression": {"type": "string"},
        "filter": {"type": "string", "description": "jq filter"},
        "message": {"type": "string"},
        "content": {"type": "string"},
        "note": {"type": "string"},
        "target": {"type": "string"},
    }}));
    let args = json!({
        "url": "https://example.com/etc/passwd",
        "pattern": "^/etc/.*$",
        "endpoint": "/api/v1/users",
        "expression": "s/\\/etc\\/passwd/x/g",
        "filter": ".items[] | .path",
        "message": "/etc/passwd is where users live",
        "content": "/etc/passwd",
        "note": "see ../README for details",
        "target": "main",
    });
    assert!(candidates(Some(&p), &args, Infer::Schema, &[]).is_empty());
    // Strict: the ones that look like a path are judged whatever their name.
    let strict = pointers(&candidates(Some(&p), &args, Infer::Strict, &[]));
    assert_eq!(strict, ["/endpoint", "/message", "/content", "/target"]);
    // A whole file: URI is file access whatever the argument is called.
    let args = json!({"url": "file:///etc/passwd", "pattern": "vscode-file://vscode-app/etc/x"});
    assert_eq!(
        pointers(&candidates(Some(&p), &args, Infer::Schema, &[])),
        ["/url", "/pattern"]
    );
    assert!(candidates(Some(&p), &args, Infer::Off, &[]).is_empty());
}

#[test]
fn the_walk_finds_every_place() {
    let p = plan(json!({"type": "object", "properties": {
        "paths": {"type": "array", "items": {"type": "string"}},
        "target": {"type": "object", "properties": {"file": {"type": "string"}}},
        "env": {"type": "object", "additionalProperties": {"type": "string"}},
        "name": {"type": "string"},
    }}));
    let args = json!({
        "paths": ["/r/a", "notes.txt", "/etc/passwd"],
        "target": {"file": "x.txt"},
        "env": {"HOME": "/root", "LANG": "C"},
        "name": "plain",
        "extra": {"deep": ["~/.ssh/id_rsa", "../../x"]},
    });
    let c = candidates(Some(&p), &args, Infer::Schema, &[]);
    assert_eq!(
        pointers(&c),
        [
            "/paths/0",
            "/paths/1",
            "/paths/2",
            "/target/file",
            "/env/HOME",
            "/extra/deep/0",
            "/extra/deep/1"
        ]
    );
    assert!(
        c[1].relative && c[1].rewrite,
        "a path argument: relative values judged too"
    );
    assert!(!c[4].relative && !c[4].rewrite, "by shape only");
    // The policy's own rules already judged some.
    let skip = ["/paths/0".to_owned(), "/paths/1".to_owned()];
    assert_eq!(
        pointers(&candidates(Some(&p), &args, Infer::Schema, &skip))[0],
        "/paths/2"
    );
    // Never listed: shape only.
    let c = candidates(None, &args, Infer::Schema, &[]);
    assert_eq!(
        pointers(&c),
        [
            "/paths/0",
            "/paths/2",
            "/env/HOME",
            "/extra/deep/0",
            "/extra/deep/1"
        ]
    );
    assert!(c[0].why.contains("never listed"));
    // Keys with `/` and `~` are escaped.
    let args = json!({"a/b": "/x", "c~d": "/y"});
    assert_eq!(
        pointers(&candidates(None, &args, Infer::Schema, &[])),
        ["/a~1b", "/c~0d"]
    );
}

#[test]
fn strict_takes_weak_names_as_paths() {
    let p = plan(json!({"properties": {"source": {"type": "string"}}}));
    let args = json!({"source": "en"});
    assert!(candidates(Some(&p), &args, Infer::Schema, &[]).is_empty());
    let c = candidates(Some(&p), &args, Infer::Strict, &[]);
    assert_eq!(pointers(&c), ["/source"]);
    assert!(c[0].relative);
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(256))]

    /// Any JSON as a schema: inference ends within its bounds, and any JSON as arguments
    /// gives at most one candidate per string.
    #[test]
    fn any_schema_any_arguments_stay_bounded(schema in arb_json(), args in arb_json()) {
        let p = schema::infer_with(&schema, &mut schema::MAX_NODES.clone());
        proptest::prop_assert!(p.rules.len() <= schema::MAX_RULES);
        proptest::prop_assert!(p.notes.len() <= 16);
        let strings = count_strings(&args);
        for mode in [Infer::Strict, Infer::Schema] {
            proptest::prop_assert!(candidates(Some(&p), &args, mode, &[]).len() <= strings);
        }
    }
}

fn count_strings(v: &Value) -> usize {
    match v {
        Value::String(_) => 1,
        Value::Array(a) => a.iter().map(count_strings).sum(),
        Value::Object(o) => o.values().map(count_strings).sum(),
        _ => 0,
    }
}

fn arb_json() -> impl proptest::strategy::Strategy<Value = Value> {
    use proptest::prelude::*;
    let key = prop::sample::select(vec![
        "type",
        "properties",
        "items",
        "$ref",
        "$defs",
        "anyOf",
        "allOf",
        "path",
        "format",
        "description",
        "additionalProperties",
        "enum",
        "a",
    ]);
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        prop::sample::select(vec![
            "string",
            "object",
            "#",
            "#/$defs/a",
            "#/properties/path",
            "uri",
            "a file",
            "/etc/passwd",
            "~/x",
            "../y",
            "http://x/y",
        ])
        .prop_map(Value::from),
    ];
    leaf.prop_recursive(6, 64, 6, move |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::from),
            prop::collection::vec((key.clone(), inner), 0..5).prop_map(|kv| {
                Value::Object(kv.into_iter().map(|(k, v)| (k.to_owned(), v)).collect())
            }),
        ]
    })
}
