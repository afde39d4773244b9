//! The text path against the value path: on every read request and result, the fast path
//! either declines or does exactly what the value path does, leaving the same verdict behind.

use proptest::prelude::*;
use serde_json::{Value, json};

use crate::enforce::Ctx;
use crate::enforce::testing::{Outcome, World, agrees, captured, outcome};
use crate::jsonrpc::{Id, Kind};
use crate::mcp::methods as m;
use crate::relay::Side;

/// A root with a file, a secret the default denies, and a link out; `layer` is stacked on
/// the built-in default (content limits, stances).
fn world(layer: Option<&str>) -> World {
    World::new(&["sub"], &["a.txt", ".env", "sub/b.txt", "é x.txt"], layer)
}

impl World {
    /// The context of a read request or result.
    fn ctx_read<'a>(&'a self, from: Side, kind: Kind, id: &'a Id) -> Ctx<'a> {
        self.ctx(from, kind, m::RESOURCES_READ, id)
    }

    /// The verdict kept for request 1, as (allow, canonical).
    fn kept(&self) -> Option<(bool, Option<String>)> {
        self.enforcer
            .inner
            .resources_read
            .verdicts
            .peek(&Id::from_string("1"))
    }

    fn forget(&self) {
        self.enforcer.inner.resources_read.verdicts.clear();
    }

    /// A request through both paths: (fast outcome or `None` if declined, slow outcome),
    /// with the verdict each left behind.
    fn request(&self, text: &str) -> (Option<(Outcome, Kept)>, (Outcome, Kept)) {
        let inner = &self.enforcer.inner;
        let id = Id::from_string("1");
        self.forget();
        let fast = inner
            .resources_read
            .request_text(
                inner,
                &self.ctx_read(Side::Host, Kind::Request, &id),
                &captured(text),
            )
            .map(|a| (outcome(a), self.kept()));
        self.forget();
        let value: Value = serde_json::from_str(text).unwrap();
        let slow = outcome(inner.resources_read.request(
            inner,
            &self.ctx_read(Side::Host, Kind::Request, &id),
            &id,
            value,
        ));
        (fast, (slow, self.kept()))
    }

    /// A result through both paths after the request for `asked` went the value path.
    fn result(&self, asked: &str, text: &str) -> (Option<Outcome>, Outcome) {
        let inner = &self.enforcer.inner;
        let id = Id::from_string("1");
        let ask = || {
            self.forget();
            let req = json!({"jsonrpc": "2.0", "id": 1, "method": m::RESOURCES_READ,
                "params": {"uri": asked}});
            inner.resources_read.request(
                inner,
                &self.ctx_read(Side::Host, Kind::Request, &id),
                &id,
                req,
            );
        };
        ask();
        let fast = inner
            .resources_read
            .result_text(
                inner,
                &self.ctx_read(Side::Server, Kind::Response, &id),
                &captured(text),
            )
            .map(outcome);
        let fast_left = self.kept();
        ask();
        let value: Value = serde_json::from_str(text).unwrap();
        let slow = outcome(inner.resources_read.result(
            inner,
            &self.ctx_read(Side::Server, Kind::Response, &id),
            value,
        ));
        if fast.is_some() {
            assert_eq!(
                fast_left,
                self.kept(),
                "the verdict left behind differs on {text}"
            );
        }
        (fast, slow)
    }
}

type Kept = Option<(bool, Option<String>)>;

fn request(uri: Value) -> String {
    json!({"jsonrpc": "2.0", "id": 1, "method": m::RESOURCES_READ, "params": {"uri": uri}})
        .to_string()
}

fn response(contents: Value) -> String {
    json!({"jsonrpc": "2.0", "id": 1, "result": {"contents": contents}}).to_string()
}

/// Asserts the text path agrees with the value path on a request; returns whether it took it.
fn agree_request(w: &World, text: &str) -> bool {
    let (fast, slow) = w.request(text);
    agrees(fast, slow, text)
}

fn agree_result(w: &World, asked: &str, text: &str) -> bool {
    let (fast, slow) = w.result(asked, text);
    agrees(fast, slow, text)
}

#[test]
fn plain_reads_take_the_text_path() {
    let w = world(None);
    let a = w.uri("a.txt");
    assert!(agree_request(&w, &request(json!(a))));
    let item = json!([{"uri": a, "mimeType": "text/plain", "text": "hello\n\"x\""}]);
    assert!(agree_result(&w, &a, &response(item)));
    let blob = json!([{"uri": a, "blob": "aGVsbG8="}]);
    assert!(agree_result(&w, &a, &response(blob)));
    // Scalars the field walk leaves alone, as servers add them (`name`, `title`, `size`).
    let named = json!([{"uri": a, "name": "a.txt", "title": "A", "size": 1, "text": "x"}]);
    assert!(agree_result(&w, &a, &response(named)));
    // 2026-07-28: a complete result says so.
    let complete = json!({"jsonrpc": "2.0", "id": 1,
        "result": {"resultType": "complete", "contents": [{"uri": a, "text": "x"}]}});
    assert!(agree_result(&w, &a, &complete.to_string()));
    // Escapes that decode to the canonical URI mean the same URI: the bytes may go as they
    // came.
    let escaped = request(json!(a)).replace("/root/a.txt", "\\/root\\/a\\u002etxt");
    assert!(agree_request(&w, &escaped));
    let accented = w.uri("%C3%A9%20x.txt");
    assert!(agree_request(&w, &request(json!(accented))));
}

#[test]
fn refusals_and_rewrites_are_declined_to_the_value_path() {
    let w = world(None);
    let a = w.uri("a.txt");
    for uri in [
        json!(w.uri(".env")),
        json!(w.uri("out/secret.txt")),
        json!(w.uri("sub/../a.txt")),
        json!(w.uri("./a.txt")),
        json!(w.uri("%61.txt")),
        json!(format!("file://{}/outside/secret.txt", w.base)),
        json!("file:///etc/passwd"),
        json!("relative.txt"),
        json!(""),
        json!(7),
        json!(null),
        json!({"uri": a}),
    ] {
        assert!(!agree_request(&w, &request(uri.clone())), "took {uri}");
    }
    // Anything beside the URI in `params`, or beside the envelope, is the value path's.
    for text in [
        json!({"jsonrpc": "2.0", "id": 1, "method": m::RESOURCES_READ,
            "params": {"uri": a, "_meta": {"progressToken": 1}}}),
        json!({"jsonrpc": "2.0", "id": 1, "method": m::RESOURCES_READ,
            "params": {"uri": a, "inputResponses": {}}}),
        json!({"jsonrpc": "2.0", "id": 1, "method": m::RESOURCES_READ, "params": null}),
        json!({"jsonrpc": "2.0", "id": 1, "method": m::RESOURCES_READ}),
        json!({"jsonrpc": "2.0", "id": 1, "method": m::RESOURCES_READ,
            "params": {"uri": a}, "extra": true}),
    ] {
        assert!(!agree_request(&w, &text.to_string()), "took {text}");
    }
}

#[test]
fn results_the_value_path_would_judge_again_are_declined() {
    let w = world(None);
    let a = w.uri("a.txt");
    let b = w.uri("sub/b.txt");
    for contents in [
        // Another URI than the one asked for, or a second item: judged on their own.
        json!([{"uri": b, "text": "x"}]),
        json!([{"uri": a, "text": "x"}, {"uri": a, "text": "y"}]),
        json!([{"uri": w.uri(".env"), "text": "x"}]),
        json!([{"uri": w.uri("./a.txt"), "text": "x"}]),
        // Items the value path refuses or walks.
        json!([{"uri": a, "text": null}]),
        json!([{"uri": a, "text": 5}]),
        json!([{"uri": a, "blob": "not base64!"}]),
        json!([{"uri": a, "blob": null}]),
        json!([{"uri": a, "data": "aGVsbG8="}]),
        json!([{"uri": a, "mimeType": null, "text": "x"}]),
        json!([{"uri": a, "text": "x", "_meta": {"url": "file:///etc/passwd"}}]),
        json!([{"uri": a, "text": "x", "url": "file:///etc/passwd"}]),
        json!([{"uri": a, "text": "x", "annotations": {"audience": ["user"]}}]),
        json!([{"uri": a, "text": "x", "websiteUrl": "file:///etc/passwd"}]),
        json!([{"uri": a, "text": "x", "resourceUri": "file:///etc/passwd"}]),
        json!([{"uri": a, "text": "x", "name": ["x"]}]),
        json!([{"uri": 5, "text": "x"}]),
        json!([{"text": "x"}]),
        json!([]),
        json!({"uri": a, "text": "x"}),
        json!(null),
    ] {
        assert!(
            !agree_result(&w, &a, &response(contents.clone())),
            "took {contents}"
        );
    }
    for result in [
        json!({"contents": [{"uri": a, "text": "x"}], "_meta": {"url": "file:///etc/passwd"}}),
        json!({"contents": [{"uri": a, "text": "x"}], "resultType": "input_required"}),
        json!({"contents": [{"uri": a, "text": "x"}], "nextCursor": "c"}),
        json!({"contents": [{"uri": a, "text": "x"}], "contents2": []}),
    ] {
        let text = json!({"jsonrpc": "2.0", "id": 1, "result": result}).to_string();
        assert!(!agree_result(&w, &a, &text), "took {text}");
    }
    // A result for a request rootfence did not see (no verdict kept) is judged afresh.
    let (fast, _) = {
        w.forget();
        let id = Id::from_string("1");
        let text = response(json!([{"uri": a, "text": "x"}]));
        let fast = w.enforcer.inner.resources_read.result_text(
            &w.enforcer.inner,
            &w.ctx_read(Side::Server, Kind::Response, &id),
            &captured(&text),
        );
        (fast.map(outcome), ())
    };
    assert_eq!(fast, None);
}

#[test]
fn content_limits_are_the_value_paths() {
    let w = world(Some(
        "version = 1\n[resources]\nmax_bytes = 8\nmime = [\"text/*\"]\n",
    ));
    let a = w.uri("a.txt");
    // Within the limits: taken. Over, or a MIME type outside the list, or none: declined
    // (the value path removes the item, and says why).
    assert!(agree_result(
        &w,
        &a,
        &response(json!([{"uri": a, "mimeType": "text/plain", "text": "12345678"}]))
    ));
    assert!(agree_result(
        &w,
        &a,
        &response(json!([{"uri": a, "mimeType": "text/plain", "blob": "MTIzNDU2Nzg="}]))
    ));
    for item in [
        json!({"uri": a, "mimeType": "text/plain", "text": "123456789"}),
        json!({"uri": a, "mimeType": "text/plain", "text": "\u{e9}\u{e9}\u{e9}\u{e9}\u{e9}"}),
        json!({"uri": a, "mimeType": "text/plain", "blob": "MTIzNDU2Nzg5"}),
        json!({"uri": a, "mimeType": "image/png", "text": "1"}),
        json!({"uri": a, "text": "1"}),
    ] {
        assert!(
            !agree_result(&w, &a, &response(json!([item.clone()]))),
            "took {item}"
        );
    }
}

#[test]
fn serve_and_verify_stances_keep_the_value_path() {
    let w = world(Some("version = 1\n[resources]\nread = \"verify\"\n"));
    let a = w.uri("a.txt");
    assert!(!agree_result(
        &w,
        &a,
        &response(json!([{"uri": a, "text": "x"}]))
    ));
}

/// A value of one of the kinds an item member may hold.
fn member() -> impl Strategy<Value = Value> {
    prop_oneof![
        Just(json!(null)),
        Just(json!(3)),
        Just(json!("text/plain")),
        Just(json!("aGVsbG8=")),
        Just(json!("not base64!")),
        Just(json!({"url": "file:///etc/passwd"})),
        Just(json!(["x"])),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    /// Any item built from the members a content item may have, with any kind of value, and
    /// any URI: the text path declines or agrees.
    #[test]
    fn any_item_agrees_with_the_value_path(
        uri in prop::sample::select(vec!["a.txt", "sub/b.txt", ".env", "./a.txt", "out/secret.txt"]),
        members in prop::collection::vec(
            (prop::sample::select(vec!["mimeType", "text", "blob", "data", "_meta", "url", "name"]), member()),
            0..4,
        ),
        items in 1usize..3,
    ) {
        let w = world(None);
        let a = w.uri("a.txt");
        let mut item = serde_json::Map::new();
        item.insert("uri".into(), json!(w.uri(uri)));
        for (k, v) in members {
            item.insert(k.into(), v);
        }
        let contents = Value::Array(vec![Value::Object(item); items]);
        agree_result(&w, &a, &response(contents));
    }
}
