//! The text path against the value path: on every page, the fast path either declines or
//! does exactly what the value path does (forward the same bytes, or forward the same value).

use std::borrow::Cow;

use proptest::prelude::*;
use serde_json::{Value, json};

use crate::enforce::testing::{Outcome, World, agrees, captured, outcome};
use crate::jsonrpc::{Id, Kind};
use crate::mcp::methods as m;
use crate::policy::Policy;
use crate::relay::Side;

/// A tree with allowed files, secrets the built-in default denies, a link out and a link to
/// a secret.
fn world() -> World {
    let w = World::new(
        &["sub", "deep/er"],
        &[
            "a.txt",
            "b.md",
            ".env",
            "sub/c.txt",
            "sub/.env",
            "deep/er/d.txt",
            "é x.txt",
        ],
        None,
    );
    let root = w.root();
    std::os::unix::fs::symlink(root.join(".env"), root.join("env-link")).unwrap();
    w
}

/// The URI table's route of a `resources/list` result.
fn list_result() -> &'static crate::mcp::uris::Route {
    use crate::mcp::uris::{Part, Peer, route};
    route(Peer::Server, Part::Result, m::RESOURCES_LIST)
}

/// (the text path's outcome, or `None` when it declined; the value path's outcome).
fn both(w: &World, text: &str) -> (Option<Outcome>, Outcome) {
    let inner = &w.enforcer.inner;
    let id = Id::from_string("1");
    let ctx = || w.ctx(Side::Server, Kind::Response, m::RESOURCES_LIST, &id);
    let fast = inner
        .list_page_text(&ctx(), text, &captured(text))
        .map(outcome);
    let value: Value = serde_json::from_str(text).unwrap();
    let slow = outcome(inner.server_result(&ctx(), list_result(), value));
    (fast, slow)
}

fn page(entries: &[Value]) -> String {
    json!({"jsonrpc": "2.0", "id": 1, "result": {"resources": entries}}).to_string()
}

fn entry(uri: &str) -> Value {
    json!({"uri": uri, "name": "n", "mimeType": "text/plain"})
}

/// Asserts the text path agrees with the value path; returns whether it took the page.
fn agree(w: &World, text: &str) -> bool {
    let (fast, slow) = both(w, text);
    agrees(fast, slow, text)
}

#[test]
fn an_allowed_page_is_forwarded_as_it_came() {
    let w = world();
    let entries: Vec<Value> = ["a.txt", "b.md", "sub/c.txt", "deep/er/d.txt"]
        .iter()
        .map(|f| entry(&w.uri(f)))
        .collect();
    let text = page(&entries);
    assert_eq!(both(&w, &text), (Some(Outcome::Forward), Outcome::Forward));
}

#[test]
fn refused_entries_are_left_out_of_the_checked_bytes() {
    let w = world();
    let entries = vec![
        entry(&w.uri("a.txt")),
        entry(&w.uri(".env")),
        entry(&w.uri("sub/c.txt")),
        entry(&w.uri("out/secret.txt")),
        entry(&w.uri("env-link")),
        entry(&format!("file://{}/outside/secret.txt", w.base)),
        entry("https://example.com/x"),
        entry("file:///etc/passwd"),
        entry("not a uri"),
    ];
    let text = page(&entries);
    let (fast, slow) = both(&w, &text);
    assert_eq!(fast, Some(slow));
    let Some(Outcome::Replace(v)) = both(&w, &text).0 else {
        panic!("expected a replaced page")
    };
    let kept: Vec<&str> = v["result"]["resources"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["uri"].as_str().unwrap())
        .collect();
    assert_eq!(
        kept,
        [
            w.uri("a.txt").as_str(),
            w.uri("sub/c.txt").as_str(),
            "https://example.com/x"
        ]
    );
}

/// Hostile and unusual pages: each either declined or decided as the value path decides.
#[test]
fn the_text_path_agrees_or_declines_on_hostile_pages() {
    let w = world();
    let a = w.uri("a.txt");
    let env = w.uri(".env");
    let escaped = a.replace('/', "\\u002f");
    let env_escaped = env.replace('/', "\\/");
    let cases: Vec<(String, Option<bool>)> = vec![
        // (text, whether the text path must take it: Some(true), decline: Some(false))
        (
            format!(
                r#"{{"jsonrpc":"2.0","id":1,"result":{{"resources":[{{"uri":"{escaped}","name":"x"}}]}}}}"#
            ),
            Some(true),
        ),
        (
            format!(
                r#"{{"jsonrpc":"2.0","id":1,"result":{{"resources":[{{"uri":"{env_escaped}"}},{{"uri":"{a}"}}]}}}}"#
            ),
            Some(true),
        ),
        (
            format!(
                r#"{{"jsonrpc":"2.0","id":1,"result":{{"resources":[{{"\u0075ri":"{env}"}}]}}}}"#
            ),
            Some(true),
        ),
        (
            r#"{"jsonrpc":"2.0","id":1,"result":{"resources":{"uri":"file:///etc/passwd"}}}"#
                .into(),
            Some(false),
        ),
        (
            r#"{"jsonrpc":"2.0","id":1,"result":{"resources":null}}"#.into(),
            Some(false),
        ),
        (
            r#"{"jsonrpc":"2.0","id":1,"result":{"resources":"file:///etc/passwd"}}"#.into(),
            Some(false),
        ),
        (
            r#"{"jsonrpc":"2.0","id":1,"result":{}}"#.into(),
            Some(false),
        ),
        (
            r#"{"jsonrpc":"2.0","id":1,"result":{"resources":["file:///etc/passwd"]}}"#.into(),
            Some(false),
        ),
        (
            r#"{"jsonrpc":"2.0","id":1,"result":{"resources":[{"uri":5}]}}"#.into(),
            Some(false),
        ),
        (
            r#"{"jsonrpc":"2.0","id":1,"result":{"resources":[{"name":"no uri"}]}}"#.into(),
            Some(false),
        ),
        (
            format!(
                r#"{{"jsonrpc":"2.0","id":1,"result":{{"resources":[{{"uri":"{a}","icons":[{{"src":"file:///etc/passwd"}}]}}]}}}}"#
            ),
            Some(false),
        ),
        (
            format!(
                r#"{{"jsonrpc":"2.0","id":1,"result":{{"resources":[{{"uri":"{a}","icons":[{{"src":"x.png"}}]}}]}}}}"#
            ),
            Some(false),
        ),
        (
            format!(
                r#"{{"jsonrpc":"2.0","id":1,"result":{{"resources":[{{"uri":"{a}","icons":[{{"src":"https://x/i.png"}},{{"sizes":["1x1"]}}]}}]}}}}"#
            ),
            Some(true),
        ),
        (
            format!(
                r#"{{"jsonrpc":"2.0","id":1,"result":{{"resources":[{{"uri":"{a}","icons":{{"src":"file:///etc/passwd"}}}}]}}}}"#
            ),
            Some(true),
        ),
        (
            format!(
                r#"{{"jsonrpc":"2.0","id":1,"result":{{"resources":[{{"uri":"{a}","annotations":{{"uri":"file:///etc/passwd"}}}}]}}}}"#
            ),
            Some(false),
        ),
        (
            format!(
                r#"{{"jsonrpc":"2.0","id":1,"result":{{"resources":[{{"uri":"{a}","_meta":{{"io.rootfence/x":1}}}}]}}}}"#
            ),
            Some(false),
        ),
        (
            format!(
                r#"{{"jsonrpc":"2.0","id":1,"result":{{"resources":[{{"uri":"{a}","url":"file:///etc/passwd"}}]}}}}"#
            ),
            Some(false),
        ),
        (
            format!(
                r#"{{"jsonrpc":"2.0","id":1,"result":{{"resources":[{{"uri":"{a}"}}],"_meta":{{"io.rootfence/x":1}}}}}}"#
            ),
            Some(false),
        ),
        (
            format!(
                r#"{{"jsonrpc":"2.0","id":1,"result":{{"resources":[{{"uri":"{a}"}}],"websiteUrl":"file:///etc/passwd"}}}}"#
            ),
            Some(false),
        ),
        (
            format!(
                r#"{{"jsonrpc":"2.0","id":1,"result":{{"resources":[{{"uri":"{a}"}}],"nextCursor":"c2","x":[1]}}}}"#
            ),
            Some(false),
        ),
        (
            format!(
                r#"{{"jsonrpc":"2.0","id":1,"result":{{"resources":[{{"uri":"{a}"}}],"nextCursor":"c2"}}}}"#
            ),
            Some(true),
        ),
        // Not canonical: the value path rewrites it, so the text path declines.
        (
            format!(
                r#"{{"jsonrpc":"2.0","id":1,"result":{{"resources":[{{"uri":"file://{}/root/./a.txt"}}]}}}}"#,
                w.base
            ),
            None,
        ),
        (
            format!(
                r#"{{"jsonrpc":"2.0","id":1,"result":{{"resources":[{{"uri":"file://{}/root/%61.txt"}}]}}}}"#,
                w.base
            ),
            None,
        ),
        (
            format!(
                r#"{{"jsonrpc":"2.0","id":1,"result":{{"resources":[{{"uri":"file://localhost{}/root/a.txt"}}]}}}}"#,
                w.base
            ),
            None,
        ),
        (
            format!(
                r#"{{"jsonrpc":"2.0","id":1,"result":{{"resources":[{{"uri":"{}"}}]}}}}"#,
                w.uri("é x.txt")
            ),
            None,
        ),
        (
            format!(
                r#"{{"jsonrpc":"2.0","id":1,"result":{{"resources":[{{"uri":"{}"}}]}}}}"#,
                w.uri("%C3%A9%20x.txt")
            ),
            None,
        ),
        (
            r#"{"jsonrpc":"2.0","id":1,"result":{"resources":[ ]  ,"nextCursor":null} }"#.into(),
            None,
        ),
        (
            format!(
                "{{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{{\"resources\":[ {{\"uri\":\"{env}\"}} ,\n {{\"uri\":\"{a}\"}} ]}}}}"
            ),
            Some(true),
        ),
    ];
    for (text, takes) in cases {
        let took = agree(&w, &text);
        if let Some(takes) = takes {
            assert_eq!(took, takes, "the text path took it: {took}, on {text}");
        }
    }
}

/// What the text path (`fast`), else the value path, does with the page `text` gives in a
/// world of its own under `policy`, and the records it
/// writes (without what differs between two worlds and logs: the world's directory, time,
/// sequence, chain, session).
fn recorded(
    policy: Policy,
    text: impl Fn(&World) -> String,
    fast: bool,
) -> (Option<String>, Vec<Value>) {
    let w = World::with_policy(&["sub"], FILES, policy);
    let text = &text(&w);
    let inner = &w.enforcer.inner;
    let lines = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let tee = std::sync::Arc::clone(&lines);
    let mut cfg = crate::audit::AuditConfig::new(std::path::Path::new(&w.base).join("audit.jsonl"));
    cfg.log_allowed = inner.live().policy.audit().log_allowed;
    cfg.tee = Some(crate::audit::LineTee::new(move |l| {
        tee.lock().unwrap().extend_from_slice(l)
    }));
    let log = crate::audit::AuditLog::open(cfg, crate::audit::SessionStart::default()).unwrap();
    inner.audit.set(log.handle());
    let id = Id::from_string("1");
    let ctx = w.ctx(Side::Server, Kind::Response, m::RESOURCES_LIST, &id);
    let done = if fast {
        inner
            .list_page_text(&ctx, text, &captured(text))
            .map(outcome)
    } else {
        Some(outcome(inner.server_result(
            &ctx,
            list_result(),
            serde_json::from_str(text).unwrap(),
        )))
    };
    log.close(crate::audit::SessionEnd::default()).unwrap();
    let base = w.base.clone();
    let done = done.map(|o| format!("{o:?}").replace(&base, "<base>"));
    let records = String::from_utf8(lines.lock().unwrap().clone())
        .unwrap()
        .lines()
        .map(|l| {
            let mut v: Value = serde_json::from_str(&l.replace(&base, "<base>")).unwrap();
            for k in ["ts", "seq", "prev", "hash", "session", "pid"] {
                v.as_object_mut().unwrap().remove(k);
            }
            v
        })
        .filter(|v| v["event"] != "session_start" && v["event"] != "session_end")
        .collect();
    (done, records)
}

const FILES: &[&str] = &["a.txt", "b.txt", "c.txt", ".env", "sub/d.txt", "sub/e.txt"];

/// The text path records a page exactly as the value path does, in each way the policy
/// records allowed entries (one summary per page, the default; a record each; none), on a
/// page where runs of siblings share one decision, broken by denials, other schemes,
/// entries parsed in full and entries judged alone.
#[test]
fn the_text_path_records_what_the_value_path_records() {
    let text = |w: &World| {
        let u = |rel: &str| w.uri(rel);
        let entries: Vec<Value> = [
            u("a.txt"),
            u("b.txt"),
            u(".env"),
            u("c.txt"),
            u("sub/d.txt"),
            u("sub/e.txt"),
            "https://example.com/x".to_owned(),
            u("a.txt"),
            u("missing.txt"),
            u("out/secret.txt"),
            u("b.txt"),
            u("c.txt"),
        ]
        .iter()
        .map(|uri| entry(uri))
        .collect();
        page(&entries)
    };
    // The built-in default's own settings, with the allowed ones logged each or not at all
    // (the last only as a policy of its own: a layer cannot turn logging off).
    let default = include_str!("../../../policies/default.toml");
    let unlogged = default.replace("log_allowed = true ", "log_allowed = false");
    assert_ne!(unlogged, default);
    let policy = |how: &str| match how {
        "summary" => Policy::builtin_default(),
        "each" => World::policy(&[("layer.toml", "version = 1\n[audit]\nallowed = \"each\"\n")]),
        _ => Policy::from_sources(&[("quiet.toml".into(), unlogged.clone())]).unwrap(),
    };
    for how in ["summary", "each", "unlogged"] {
        let (fast, fast_records) = recorded(policy(how), text, true);
        let (slow, slow_records) = recorded(policy(how), text, false);
        assert!(fast.is_some(), "the text path takes the page ({how})");
        assert_eq!(fast, slow, "{how}");
        assert_eq!(fast_records, slow_records, "{how}");
        let decisions = slow_records
            .iter()
            .filter(|r| r["event"] == "decision")
            .count();
        let summaries = slow_records
            .iter()
            .filter(|r| r["event"] == "decision_summary")
            .count();
        // The two denials (`.env`, the link out) on their own; the allowed ones as the
        // policy says.
        let want = match how {
            "summary" => (2, 1),
            "each" => (12, 0),
            _ => (2, 0),
        };
        assert_eq!((decisions, summaries), want, "{how}: {slow_records:#?}");
    }
}

#[test]
fn a_huge_page_is_taken_and_agrees() {
    let w = world();
    let mut entries: Vec<Value> = (0..5000).map(|_| entry(&w.uri("a.txt"))).collect();
    entries[4321] = entry(&w.uri("sub/.env"));
    assert!(agree(&w, &page(&entries)));
}

/// Entry `(uri, extra key and value, as an object)`, by index into the tables below.
type Piece = (usize, Option<(usize, usize)>, bool);

fn build(w: &World, (uri, extra, as_obj): Piece) -> Value {
    let uris = [
        w.uri("a.txt"),
        w.uri("b.md"),
        w.uri(".env"),
        w.uri("sub/c.txt"),
        w.uri("sub/.env"),
        w.uri("sub"),
        w.uri("missing.txt"),
        w.uri("out/secret.txt"),
        w.uri("env-link"),
        w.uri("./a.txt"),
        w.uri("sub/../a.txt"),
        format!("file://{}/outside/secret.txt", w.base),
        "file:///etc/passwd".to_owned(),
        "https://example.com/a".to_owned(),
        "relative/path".to_owned(),
        String::new(),
    ];
    let extras = [
        json!(null),
        json!("text"),
        json!(3),
        json!({"k": "v"}),
        json!(["file:///etc/passwd"]),
        json!({"uri": "file:///etc/passwd"}),
        json!([{"src": "https://x/i.png"}]),
        json!([{"src": "file:///etc/passwd"}]),
    ];
    let keys = [
        "name",
        "title",
        "icons",
        "url",
        "annotations",
        "_meta",
        "size",
    ];
    let uri = &uris[uri % uris.len()];
    if !as_obj {
        return json!(uri);
    }
    let mut e = json!({"uri": uri});
    if let Some((k, v)) = extra {
        e[keys[k % keys.len()]] = extras[v % extras.len()].clone();
    }
    e
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]
    #[test]
    fn the_text_path_agrees_with_the_value_path(
        pieces in prop::collection::vec(
            (0usize..64, prop::option::of((0usize..64, 0usize..64)), prop::bool::weighted(0.95)),
            0..12,
        )
    ) {
        let w = world();
        let entries: Vec<Value> = pieces.into_iter().map(|p| build(&w, p)).collect();
        agree(&w, &page(&entries));
    }
}

/// page.rs's own parse before the scan captured the page (issue 25), kept as the oracle the
/// capture is held to: the message read a second time, borrowed, into the entries' `uri`s,
/// or `None` for a shape the text path does not take.
mod before {
    use std::borrow::Cow;
    use std::fmt;

    use serde::de::{self, DeserializeSeed, Deserializer, IgnoredAny, MapAccess, Visitor};
    use serde_json::value::RawValue;

    use crate::enforce::fields::LINK_KEYS;
    use crate::jsonrpc::envelope::Key;

    pub(super) fn page(text: &str) -> Option<Vec<Cow<'_, str>>> {
        let mut de = serde_json::Deserializer::from_str(text);
        let entries = Top.deserialize(&mut de).ok()??;
        de.end().ok()?;
        Some(entries)
    }

    fn inert(key: &str, raw: &RawValue) -> bool {
        match raw.get().as_bytes().first() {
            Some(b'{' | b'[') | None => false,
            Some(b'"') => !LINK_KEYS.contains(&key),
            Some(_) => true,
        }
    }

    fn decline<E: de::Error>() -> E {
        E::custom("not a shape the text path takes")
    }

    type Entries<'a> = Vec<Cow<'a, str>>;

    struct Top;

    impl<'de> DeserializeSeed<'de> for Top {
        type Value = Option<Entries<'de>>;
        fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
            d.deserialize_map(self)
        }
    }

    impl<'de> Visitor<'de> for Top {
        type Value = Option<Entries<'de>>;
        fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("a response")
        }
        fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
            let mut result = None;
            while let Some(Key(key)) = map.next_key()? {
                if key == "result" {
                    if result.is_some() {
                        return Err(de::Error::custom("duplicate result"));
                    }
                    result = Some(map.next_value_seed(ResultSeed)?);
                } else {
                    map.next_value::<IgnoredAny>()?;
                }
            }
            Ok(result.flatten())
        }
    }

    struct ResultSeed;

    impl<'de> DeserializeSeed<'de> for ResultSeed {
        type Value = Option<Entries<'de>>;
        fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
            d.deserialize_map(self)
        }
    }

    impl<'de> Visitor<'de> for ResultSeed {
        type Value = Option<Entries<'de>>;
        fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("a result")
        }
        fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
            let mut resources = None;
            while let Some(Key(key)) = map.next_key()? {
                if key == "resources" {
                    if resources.is_some() {
                        return Err(decline());
                    }
                    resources = Some(map.next_value_seed(Resources)?);
                } else if !inert(&key, map.next_value()?) {
                    return Err(decline());
                }
            }
            Ok(resources)
        }
    }

    struct Resources;

    impl<'de> DeserializeSeed<'de> for Resources {
        type Value = Entries<'de>;
        fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
            d.deserialize_seq(self)
        }
    }

    impl<'de> Visitor<'de> for Resources {
        type Value = Entries<'de>;
        fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("an array of entries")
        }
        fn visit_seq<A: de::SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
            let mut out = Vec::new();
            while let Some(uri) = seq.next_element_seed(EntrySeed)? {
                out.push(uri);
            }
            Ok(out)
        }
    }

    struct EntrySeed;

    impl<'de> DeserializeSeed<'de> for EntrySeed {
        type Value = Cow<'de, str>;
        fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
            d.deserialize_map(self)
        }
    }

    impl<'de> Visitor<'de> for EntrySeed {
        type Value = Cow<'de, str>;
        fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("an entry")
        }
        fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
            let mut uri = None;
            while let Some(Key(key)) = map.next_key()? {
                if key == "uri" {
                    if uri.is_some() {
                        return Err(decline());
                    }
                    let Key(value) = map.next_value::<Key<'de>>()?;
                    uri = Some(value);
                    continue;
                }
                let value: &RawValue = map.next_value()?;
                let ok = if key == "icons" {
                    super::super::icons_inert(value)
                } else {
                    inert(&key, value)
                };
                if !ok {
                    return Err(decline());
                }
            }
            uri.ok_or_else(decline)
        }
    }
}

/// A result member beside `resources`, by index: a key and a value of each kind the walk
/// tells apart (a link key, a scalar, an escaped string, an object, an array).
fn result_member(k: usize, v: usize) -> (&'static str, Value) {
    let keys = [
        "nextCursor",
        "websiteUrl",
        "contents",
        "resultType",
        "_meta",
        "x",
    ];
    let values = [
        json!("c2"),
        json!(null),
        json!(1.5e300),
        json!(["a"]),
        json!({"uri": "file:///etc/passwd"}),
        json!("é\n"),
    ];
    (keys[k % keys.len()], values[v % values.len()].clone())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]
    /// The page the relay's scan captures is the page page.rs's own parse read before, entry
    /// for entry, or both are `None`: for arbitrary entry lists (objects or not, with any
    /// extra member, URIs with and without escapes), with arbitrary members beside
    /// `resources`, in either order.
    #[test]
    fn the_captured_page_is_what_page_rs_read(
        pieces in prop::collection::vec(
            (0usize..64, prop::option::of((0usize..64, 0usize..64)), prop::bool::weighted(0.9)),
            0..10,
        ),
        escape in prop::collection::vec(any::<bool>(), 10),
        members in prop::collection::vec((0usize..6, 0usize..6), 0..3),
        resources_last in any::<bool>(),
    ) {
        let w = world();
        let entries: Vec<String> = pieces
            .into_iter()
            .zip(&escape)
            .map(|(p, &esc)| {
                let text = build(&w, p).to_string();
                // `\/` decodes to `/`: the URI is then read owned, not borrowed.
                if esc { text.replacen('/', "\\/", 1) } else { text }
            })
            .collect();
        let mut result: Vec<String> = members
            .into_iter()
            .map(|(k, v)| result_member(k, v))
            .collect::<std::collections::BTreeMap<_, _>>()
            .into_iter()
            .map(|(k, v)| format!("{k:?}:{v}"))
            .collect();
        let resources = format!(r#""resources":[{}]"#, entries.join(","));
        if resources_last { result.push(resources) } else { result.insert(0, resources) }
        let text = format!(r#"{{"jsonrpc":"2.0","id":1,"result":{{{}}}}}"#, result.join(","));
        let want = before::page(&text).map(|p| p.into_iter().map(Cow::into_owned).collect::<Vec<_>>());
        let got = captured(&text).page.map(|p| p.into_iter().map(Cow::into_owned).collect::<Vec<_>>());
        prop_assert_eq!(got, want, "{}", text);
    }
}
