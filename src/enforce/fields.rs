//! The server's fields beyond the lists and content arrays `walk.rs` filters: every other
//! part of a result (`structuredContent`, `_meta`, task results, completion values, ...),
//! `error.data` of error responses, the params of the server's notifications and requests,
//! and the URLs a host puts in front of the user (URL-mode elicitation, `-32042` errors,
//! `websiteUrl`). docs/enforcement.md's table lists each field and what happens to it.
//!
//! Every server result passes here (`server_result`): its family's own items first (the
//! family's handler, or the items its row's shape names: a list's entries, a content
//! result's blocks and messages, 2026-07-28 `input_required` questions), a result not the
//! shape it must be refused whole, then the rest walked.
//!
//! These fields are free-form JSON. rootfence judges their *URI positions*: an object's
//! `uri`, its `resource.uri`, `uriTemplate`, `url`, `resourceUri` (MCP Apps) and
//! `websiteUrl`, and `icons` arrays. In free-form data only URLs that name a local file (a
//! `file:` URL as a WHATWG parser reads it, or a scheme that wraps or resolves to one:
//! `view-source:file:`, `jar:file:`, `vscode-file:`, ...) are judged, because a tool's own
//! relative names are its data, not MCP URIs; a denied one takes the object that holds it
//! away (its text with it), a denied link key (`url`, `websiteUrl`, `resourceUri`) only
//! itself. Free text is not judged here: the content tripwire covers it.

use serde_json::{Map, Value};

use super::decide::Verdict;
use super::walk::local_url;
use super::{Ctx, Inner};
use crate::audit;
use crate::mcp::methods as m;
use crate::mcp::uris::{Family, Route, Shape};
use crate::relay::Action;

/// Keys whose string value is a link the host may open: judged when it names a local file,
/// and only the key is removed when it is refused.
pub(super) const LINK_KEYS: [&str; 3] = ["url", "websiteUrl", "resourceUri"];

impl Inner {
    /// A server result: what its family's handler judges first (the family is the route's,
    /// from the URI table, so only a method a server-result row names reaches its family
    /// here; the items its shape names, `shaped`), a result that is not the shape it must be
    /// refused whole, then the rest walked as free-form fields.
    pub(super) fn server_result(&self, ctx: &Ctx<'_>, route: &Route, mut message: Value) -> Action {
        let Some(result) = message.get_mut("result") else {
            return Action::Forward;
        };
        self.tools.learn_server_name(result);
        // Every checker returns false when a payload is not the shape it can check item by
        // item: then the whole result is refused rather than passed unchecked.
        let shaped = match route.family {
            Family::ResourcesRead => return self.resources_read.result(self, ctx, message),
            Family::Tools => self.tools.result(self, ctx, route.shape, result),
            // `serverInfo` (icons, `websiteUrl`) and 2026-07-28's `_meta` serverInfo are
            // walked with the rest of the result below, like any free-form result.
            _ => self.shaped(ctx, route.shape, result),
        };
        if !shaped && self.live().enforce {
            return self.refuse_result(ctx, "malformed_result");
        }
        // Everything the family's own handler did not judge.
        if let Some(result) = message.get_mut("result").and_then(Value::as_object_mut) {
            self.walk_rest(ctx, "result", result, &route.result_keys);
            if route.family == Family::Completion {
                self.completions.values(self, ctx, result);
            }
        }
        self.done_ctx(ctx, message)
    }

    /// The items of a result its shape (its row in the URI table) names: a list's entries
    /// (`walk.rs`), a content result's blocks and messages. False when they are not the shape
    /// they must be.
    pub(super) fn shaped(&self, ctx: &Ctx<'_>, shape: Shape, result: &mut Value) -> bool {
        match shape {
            Shape::Entries { key, uri } => self.filter_entries(ctx, key, result, uri),
            // `tools/call`, `prompts/get`, `tasks/result`: content blocks and messages.
            Shape::Content => {
                self.input_required(ctx, result);
                // A result's content is a list of blocks; a single block is judged whole.
                let content_ok = result
                    .get_mut("content")
                    .is_none_or(|content| self.filter_content(ctx, "result.content", content));
                let messages_ok = result
                    .get_mut("messages")
                    .is_none_or(|messages| self.filter_messages(ctx, "result.messages", messages));
                content_ok && messages_ok
            }
            _ => true,
        }
    }

    /// Replaces a result rootfence cannot pass with its denial error (the host's request
    /// still gets exactly one answer).
    pub(super) fn refuse_result(&self, ctx: &Ctx<'_>, reason: &'static str) -> Action {
        let c = Verdict::deny(reason);
        self.audit_decision(ctx, "result", "", &c, audit::Action::AnsweredError);
        ctx.id.map_or(Action::Drop, |id| {
            Action::Replace(super::denial(id, "", &c))
        })
    }

    /// 2026-07-28 `input_required`: note the server's `roots/list` input requests (their
    /// answers are filtered on the retry) and check the sampling ones.
    pub(super) fn input_required(&self, ctx: &Ctx<'_>, result: &mut Value) {
        if result.get("resultType").and_then(Value::as_str) != Some("input_required") {
            return;
        }
        let mut refused = Vec::new();
        if let Some(requests) = result
            .get_mut("inputRequests")
            .and_then(Value::as_object_mut)
        {
            for (key, request) in requests.iter_mut() {
                if request.get("method").and_then(Value::as_str) == Some(m::SAMPLING_CREATE_MESSAGE)
                    && let Some(messages) = request.pointer_mut("/params/messages")
                {
                    self.filter_messages(
                        ctx,
                        &format!("result.inputRequests.{key}.params.messages"),
                        messages,
                    );
                }
                if request.get("method").and_then(Value::as_str) == Some(m::ELICITATION_CREATE)
                    && !self.input_elicitation_ok(ctx, key, request)
                {
                    refused.push(key.clone());
                }
            }
            for key in &refused {
                requests.remove(key);
                ctx.mark();
            }
        }
        // A host without roots cannot answer the server's roots questions: rootfence does,
        // on the retry.
        if self.learner.note_input_required(result) {
            ctx.mark();
        }
    }

    /// Walks every key of `obj` but `skip`, removing what may not cross.
    pub(super) fn walk_rest(
        &self,
        ctx: &Ctx<'_>,
        field: &str,
        obj: &mut Map<String, Value>,
        skip: &[&str],
    ) {
        let mut gone = Vec::new();
        for (key, value) in obj.iter_mut() {
            // Most values are plain strings and numbers with nothing to judge: skipped before
            // any field name is built (list pages hold thousands of entries).
            if skip.contains(&key.as_str()) || !walkable(key, value) {
                continue;
            }
            if !self.walk_key(ctx, &format!("{field}.{key}"), key, value) {
                gone.push(key.clone());
            }
        }
        if self.live().enforce {
            for key in gone {
                obj.remove(&key);
                ctx.mark();
            }
        }
    }

    /// Whether `walk_rest` has anything to do in `obj` (without building a field name).
    pub(super) fn needs_walk(obj: &Map<String, Value>, skip: &[&str]) -> bool {
        obj.iter()
            .any(|(k, v)| !skip.contains(&k.as_str()) && walkable(k, v))
    }

    /// One value under `key`: a link key is judged on its own; anything else is walked.
    fn walk_key(&self, ctx: &Ctx<'_>, field: &str, key: &str, value: &mut Value) -> bool {
        if key == "_meta" {
            self.strip_own_meta(ctx, value);
        }
        if key == "icons" {
            self.filter_icons(ctx, field, Some(value));
            return true;
        }
        if let (true, Some(url)) = (LINK_KEYS.contains(&key), value.as_str()) {
            return self.url_ok(ctx, field, url);
        }
        self.walk(ctx, field, value)
    }

    /// Walks a free-form value. Returns false when it must go: an object whose `uri`,
    /// `resource.uri` or `uriTemplate` names a local file rootfence refuses.
    pub(super) fn walk(&self, ctx: &Ctx<'_>, field: &str, value: &mut Value) -> bool {
        match value {
            Value::Array(items) => {
                ctx.retain(items, |i, item| {
                    self.walk(ctx, &format!("{field}[{i}]"), item) || !self.live().enforce
                });
                true
            }
            Value::Object(obj) => {
                if let Some(raw) = obj.get("uri").and_then(Value::as_str)
                    && local_url(raw)
                    && !self.judge(ctx, &format!("{field}.uri"), raw)
                {
                    return false;
                }
                if let Some(raw) = obj.get("uriTemplate").and_then(Value::as_str)
                    && local_url(raw)
                {
                    let c = self.live().template(raw, ctx.roots);
                    let f = format!("{field}.uriTemplate");
                    if !self.keep_after(ctx, &f, raw, &c) {
                        return false;
                    }
                }
                // `resource` (and every other nested value) is walked: a refused
                // `resource.uri` takes the resource away, and with it this object's claim.
                let had_resource = obj.get("resource").is_some_and(Value::is_object);
                self.walk_rest(ctx, field, obj, &["uri", "uriTemplate"]);
                !(had_resource && self.live().enforce && !obj.contains_key("resource"))
            }
            _ => true,
        }
    }

    /// Judges a URI in a free-form position and audits it; whether it may stay.
    fn judge(&self, ctx: &Ctx<'_>, field: &str, raw: &str) -> bool {
        let c = self.live().uri(raw, ctx.roots);
        self.keep_after(ctx, field, raw, &c)
    }

    /// Audits a decision on a free-form position; whether the value may stay.
    pub(super) fn keep_after(&self, ctx: &Ctx<'_>, field: &str, raw: &str, c: &Verdict) -> bool {
        !self.refuses(ctx, field, raw, c, audit::Action::Filtered)
    }

    /// Audits a decision (`on_deny`: what a refusal does); whether it takes effect as a
    /// refusal: refused, or its record could not be written, while enforcing.
    pub(super) fn refuses(
        &self,
        ctx: &Ctx<'_>,
        field: &str,
        raw: &str,
        c: &Verdict,
        on_deny: audit::Action,
    ) -> bool {
        let ok = self.audit_decision(ctx, field, raw, c, on_deny);
        !(c.allow && ok) && self.live().enforce
    }

    /// A URL a host may put in front of the user: judged when it names a local file in any
    /// disguise (other schemes are the host's to judge). Whether it may stay.
    pub(super) fn url_ok(&self, ctx: &Ctx<'_>, field: &str, url: &str) -> bool {
        !local_url(url) || self.judge(ctx, field, url)
    }

    /// Takes rootfence's own `_meta` keys (`io.rootfence/…`) out of a server's `_meta`:
    /// only rootfence speaks for rootfence (its tool errors carry `io.rootfence/denial`).
    fn strip_own_meta(&self, ctx: &Ctx<'_>, meta: &mut Value) {
        let Some(obj) = meta.as_object_mut() else {
            return;
        };
        if self.live().enforce && obj.keys().any(|k| k.starts_with("io.rootfence/")) {
            obj.retain(|k, _| !k.starts_with("io.rootfence/"));
            ctx.mark();
        }
    }

    /// An error response from the server: its `data` is walked like a result, and the URLs
    /// of a URL-elicitation-required error (`-32042`, 2025-11-25) are judged like URL-mode
    /// elicitation (a refused one is removed).
    pub(super) fn server_error(&self, ctx: &Ctx<'_>, mut message: Value) -> Action {
        if let Some(data) = message.pointer_mut("/error/data") {
            if let Some(list) = data.get_mut("elicitations").and_then(Value::as_array_mut) {
                ctx.retain(list, |i, e| {
                    let field = format!("error.data.elicitations[{i}].url");
                    let url = e.get("url").and_then(Value::as_str).unwrap_or("");
                    self.url_ok(ctx, &field, url)
                });
            }
            if !self.walk(ctx, "error.data", data) && self.live().enforce {
                if let Some(err) = message.get_mut("error").and_then(Value::as_object_mut) {
                    err.remove("data");
                }
                ctx.mark();
            }
        }
        self.done_ctx(ctx, message)
    }

    /// A notification from the server (other than `resources/updated`): its params are
    /// walked; one left without what it must carry (a log message's `data`) is dropped.
    pub(super) fn server_notification(&self, ctx: &Ctx<'_>, mut message: Value) -> Action {
        let Some(params) = message.get_mut("params") else {
            return Action::Forward;
        };
        let kept = self.walk(ctx, "params", params);
        let required_gone = self.live().enforce
            && m::required_param(ctx.method).is_some_and(|key| params.get(key).is_none());
        if (!kept && self.live().enforce) || required_gone {
            return Action::Drop;
        }
        self.done_ctx(ctx, message)
    }

    /// URL-mode elicitation (2025-11-25): a URL that names a local file outside what the
    /// policy allows is refused to the server with the denial error; the rest of the
    /// request is walked.
    pub(super) fn elicitation(&self, ctx: &Ctx<'_>, mut message: Value) -> Action {
        if let Some(url) = message.pointer("/params/url").and_then(Value::as_str)
            && local_url(url)
        {
            let c = self.live().uri(url, ctx.roots);
            if self.refuses(ctx, "params.url", url, &c, audit::Action::AnsweredError) {
                return ctx
                    .id
                    .map_or(Action::Drop, |id| Action::Reply(super::denial(id, url, &c)));
            }
        }
        if let Some(params) = message.get_mut("params").and_then(Value::as_object_mut) {
            self.walk_rest(ctx, "params", params, &["url"]);
        }
        self.done_ctx(ctx, message)
    }

    /// A 2026-07-28 `input_required` elicitation request (`inputRequests[key]`): whether
    /// it may reach the host (its URL, if it names a local file, must be allowed).
    pub(super) fn input_elicitation_ok(&self, ctx: &Ctx<'_>, key: &str, request: &Value) -> bool {
        let url = request.pointer("/params/url").and_then(Value::as_str);
        url.is_none_or(|url| {
            self.url_ok(ctx, &format!("result.inputRequests.{key}.params.url"), url)
        })
    }
}

/// Whether a value under `key` may hold something to judge: an object or an array, or a
/// string under a link key.
fn walkable(key: &str, value: &Value) -> bool {
    match value {
        Value::Object(_) | Value::Array(_) => true,
        Value::String(_) => LINK_KEYS.contains(&key),
        _ => false,
    }
}

/// Expands an RFC 6570 template for one argument, as a host would to read the value it
/// picked: the expression naming `arg` gets `value` (percent-encoded as its operator
/// says), every other expression a placeholder name (`_`).
pub(super) fn expand(template: &str, arg: &str, value: &str) -> String {
    let mut out = String::with_capacity(template.len() + value.len());
    let mut rest = template;
    while let Some(open) = rest.find('{') {
        out.push_str(&rest[..open]);
        let Some(close) = rest[open..].find('}') else {
            out.push_str(&rest[open..]);
            return out;
        };
        let expr = &rest[open + 1..open + close];
        let (op, names) = match expr.chars().next() {
            Some(c @ ('+' | '#' | '.' | '/' | ';' | '?' | '&')) => (Some(c), &expr[1..]),
            _ => (None, expr),
        };
        let ours = names
            .split(',')
            .any(|n| n.trim_end_matches('*').split(':').next() == Some(arg));
        if let Some(p) = op.filter(|c| matches!(c, '#' | '.' | '/' | ';' | '?' | '&')) {
            out.push(p);
        }
        if ours {
            out.push_str(&encode(value, matches!(op, Some('+' | '#'))));
        } else {
            out.push('_');
        }
        rest = &rest[open + close + 1..];
    }
    out.push_str(rest);
    out
}

/// RFC 6570 encoding: unreserved characters as they are; with `reserved`, reserved
/// characters and existing percent escapes too; everything else percent-encoded.
fn encode(value: &str, reserved: bool) -> String {
    let mut out = String::with_capacity(value.len());
    let bytes = value.as_bytes();
    for (i, &b) in bytes.iter().enumerate() {
        let unreserved = b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~');
        let kept_reserved = reserved && b":/?#[]@!$&'()*+,;=".contains(&b);
        let escape = reserved
            && b == b'%'
            && bytes.get(i + 1).is_some_and(u8::is_ascii_hexdigit)
            && bytes.get(i + 2).is_some_and(u8::is_ascii_hexdigit);
        if unreserved || kept_reserved || escape {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn expansion_follows_the_operator() {
        let t = "file:///srv/root/{path}";
        assert_eq!(expand(t, "path", "a b"), "file:///srv/root/a%20b");
        assert_eq!(
            expand(t, "path", "../x"),
            "file:///srv/root/..%2Fx",
            "simple expansion encodes `/`"
        );
        assert_eq!(
            expand("file:///srv/root{+path}", "path", "/../x"),
            "file:///srv/root/../x"
        );
        assert_eq!(
            expand("file:///srv/root{/dir,path}", "path", "x"),
            "file:///srv/root/x"
        );
        assert_eq!(
            expand("file:///srv/{other}/{path}", "path", "x"),
            "file:///srv/_/x"
        );
    }
}
