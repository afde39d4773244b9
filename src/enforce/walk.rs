//! Where URIs sit inside messages, and the filters that remove what may not cross: list
//! entries, content blocks (embedded resources, resource links, nested tool results), prompt
//! and sampling messages, icons, and resource templates.

use serde_json::Value;

use super::decide::{Checker, Verdict};
use super::{Ctx, Inner};
use crate::audit;
use crate::policy::Policy;
use crate::roots::RootSet;
use crate::uri::{self, FileUri};

/// A URL as a WHATWG parser reads it: leading and trailing C0 controls and spaces
/// stripped, tabs and newlines removed anywhere.
fn whatwg_cleaned(raw: &str) -> String {
    raw.trim_matches(|c: char| c <= ' ')
        .chars()
        .filter(|c| !matches!(c, '\t' | '\n' | '\r'))
        .collect()
}

/// Whether a URL names a local file to a host that parses it the WHATWG way: a `file:` URL
/// (`" file://x"` and `"fi\tle://x"` too), or a scheme that wraps or resolves to a local
/// file (`view-source:file:`, `jar:file:`, `vscode-file:`, `vscode-resource:`, any
/// `<scheme>:file:`). Such a URL is judged as file access wherever it is shown; the checker
/// denies the wrapping forms outright (`wrapped_file_uri`).
pub(super) fn local_url(raw: &str) -> bool {
    let cleaned = whatwg_cleaned(raw);
    uri::scheme_of(&cleaned).is_some_and(|s| s == "file" || crate::uri::wraps_a_file(&cleaned, &s))
}

/// Whether a URL is relative (no scheme): a host resolves it against its own page, which
/// in a desktop host is often a `file:` URL.
pub(super) fn relative_url(raw: &str) -> bool {
    uri::scheme_of(&whatwg_cleaned(raw)).is_none()
}

impl Inner {
    /// Filters a result's list of entries under `key` (resources, templates, tools,
    /// prompts: the row's [`crate::mcp::uris::Shape::Entries`]): the entry's `uri_key` field
    /// (none for tools and prompts) is checked, and its icons.
    /// Returns false when the list is there but is not an array: it cannot be checked entry
    /// by entry, so the caller refuses the whole result.
    pub(super) fn filter_entries(
        &self,
        ctx: &Ctx<'_>,
        key: &str,
        result: &mut Value,
        uri_key: &str,
    ) -> bool {
        let field = &format!("result.{key}");
        let items = match result.get_mut(key) {
            None | Some(Value::Null) => return true,
            Some(Value::Array(items)) => items,
            Some(_) => return false,
        };
        // The page's URIs are judged together, per directory (`Checker::page`); templates
        // one by one.
        let mut checks = if uri_key.is_empty() || uri_key == "uriTemplate" {
            Vec::new()
        } else {
            let raws: Vec<&str> = (items.iter())
                .map(|item| item.get(uri_key).and_then(Value::as_str).unwrap_or(""))
                .collect();
            self.live().page(&raws, ctx.roots).into_verdicts()
        }
        .into_iter();
        let mut page = if uri_key.is_empty() {
            None
        } else {
            self.page_audit(field)
        };
        ctx.retain(items, |i, item| {
            if !uri_key.is_empty() {
                let raw = super::text(&item[uri_key]);
                let c = if uri_key == "uriTemplate" {
                    self.live().template(&raw, ctx.roots)
                } else {
                    checks.next().unwrap_or_else(|| Verdict::deny("io_error"))
                };
                let mut ok = true;
                self.audit_entries(
                    ctx,
                    page.as_mut(),
                    |_| format!("{field}[{i}].{uri_key}"),
                    &[&raw],
                    c.canonical.as_ref().map(|u| u.as_str()),
                    &c,
                    audit::Action::Filtered,
                    |k| ok = k,
                );
                if !(c.allow && ok) {
                    if self.live().enforce {
                        return false;
                    }
                } else if uri_key == "uri"
                    && let Some(canonical) = &c.canonical
                {
                    ctx.set_uri(&mut item["uri"], canonical.as_str());
                }
            }
            self.filter_icons(ctx, &format!("{field}[{i}].icons"), item.get_mut("icons"));
            if let Some(entry) = item.as_object_mut() {
                let skip = [uri_key, "icons"];
                if Inner::needs_walk(entry, &skip) {
                    self.walk_rest(ctx, &format!("{field}[{i}]"), entry, &skip);
                }
            }
            true
        });
        self.finish_page(ctx, page);
        true
    }

    /// Filters a list of URI strings (`resourceSubscriptions`), rewriting allowed `file:`
    /// URIs to their canonical form. Returns the kept URIs.
    pub(super) fn filter_list(&self, ctx: &Ctx<'_>, field: &str, list: &mut Value) -> Vec<String> {
        let mut kept = Vec::new();
        let Value::Array(items) = list else {
            return kept;
        };
        ctx.retain(items, |i, item| {
            let raw = super::text(item);
            let c = self.live().uri(&raw, ctx.roots);
            let at = format!("{field}[{i}]");
            let ok = self.audit_decision(ctx, &at, &raw, &c, audit::Action::Filtered);
            if c.allow && ok {
                let key = c.canonical.as_ref().map_or(raw, |u| u.as_str().to_owned());
                if self.live().enforce {
                    ctx.set_uri(item, &key);
                }
                kept.push(key);
                true
            } else {
                !self.live().enforce
            }
        });
        kept
    }

    /// Filters icons: an icon whose `src` names a local file is checked like any URI, and a
    /// relative `src` is removed (`relative_url`: the host would resolve it against its own
    /// page, often a `file:` URL). Other schemes are the host's to judge (the spec tells it
    /// to accept `https:` and `data:` only).
    pub(super) fn filter_icons(&self, ctx: &Ctx<'_>, field: &str, icons: Option<&mut Value>) {
        let Some(Value::Array(icons)) = icons else {
            return;
        };
        ctx.retain(icons, |i, icon| {
            let Some(src) = icon.get("src").and_then(Value::as_str) else {
                return true;
            };
            // Judged as the host's (WHATWG) parser reads it: `" file://x"` and `"fi\tle://x"`
            // are file: URIs to a browser-based host.
            let c = if relative_url(src) {
                Verdict::deny("relative_url")
            } else if local_url(src) {
                self.live().uri(src, ctx.roots)
            } else {
                return true;
            };
            self.keep_after(ctx, &format!("{field}[{i}].src"), src, &c)
        });
    }

    /// Filters content: one block or an array of blocks. Returns false when `content` is a
    /// single block that must go (the caller removes what holds it).
    pub(super) fn filter_content(&self, ctx: &Ctx<'_>, field: &str, content: &mut Value) -> bool {
        match content {
            Value::Array(blocks) => {
                ctx.retain(blocks, |i, b| {
                    self.block_ok(ctx, &format!("{field}[{i}]"), b)
                });
                true
            }
            Value::Object(_) => self.block_ok(ctx, field, content),
            _ => true,
        }
    }

    /// Filters `messages[]` (prompts, sampling): a message whose single content block must
    /// go is removed, as is one whose content array is left empty by the filter.
    /// Returns false when `messages` is not an array (it cannot be checked message by
    /// message; the caller refuses the whole message).
    pub(super) fn filter_messages(&self, ctx: &Ctx<'_>, field: &str, messages: &mut Value) -> bool {
        let Value::Array(list) = messages else {
            return messages.is_null();
        };
        ctx.retain(list, |i, msg| {
            let Some(content) = msg.get_mut("content") else {
                return true;
            };
            let was_nonempty = content.as_array().is_none_or(|a| !a.is_empty());
            let keep = self.filter_content(ctx, &format!("{field}[{i}].content"), content);
            let emptied = was_nonempty && content.as_array().is_some_and(Vec::is_empty);
            (keep && !emptied) || !self.live().enforce
        });
        true
    }

    /// Whether one content block may cross. Every URI position of the block is judged, not
    /// only the one its `type` names: `uri` and `resource.uri` both (a lenient host may take
    /// either), on any block (unknown or misspelt types too); a `resource` object without a
    /// URI cannot be checked. Allowed `file:` URIs are rewritten to their canonical form.
    /// Then the rest of the block is walked: nested `content` arrays (`tool_result`, or
    /// any block), `structuredContent`, `_meta`, icons.
    fn block_ok(&self, ctx: &Ctx<'_>, field: &str, block: &mut Value) -> bool {
        let typed = block.get("type").and_then(Value::as_str);
        let mut positions: Vec<(&str, &str)> = Vec::new();
        if block.get("resource").is_some() || typed == Some("resource") {
            positions.push(("/resource/uri", ".resource.uri"));
        }
        if block.get("uri").is_some() || typed == Some("resource_link") {
            positions.push(("/uri", ".uri"));
        }
        for (pointer, suffix) in positions {
            let raw = block.pointer(pointer).map(|v| v.as_str().unwrap_or(""));
            let c = match raw {
                Some(raw) => self.live().uri(raw, ctx.roots),
                // A resource block without a URI cannot be checked.
                None => Verdict::deny("missing_uri"),
            };
            let field = format!("{field}{suffix}");
            if !self.keep_after(ctx, &field, raw.unwrap_or(""), &c) {
                return false;
            }
            // Kept while refused only in audit mode, which rewrites nothing.
            if let (Some(canonical), true) = (&c.canonical, self.live().enforce)
                && let Some(slot) = block.pointer_mut(pointer)
            {
                ctx.set_uri(slot, canonical.as_str());
            }
        }
        let Some(obj) = block.as_object_mut() else {
            return true;
        };
        if let Some(inner) = obj.get_mut("content")
            && !self.filter_content(ctx, &format!("{field}.content"), inner)
        {
            return !self.live().enforce;
        }
        if let Some(resource) = obj.get_mut("resource").and_then(Value::as_object_mut) {
            self.walk_rest(ctx, &format!("{field}.resource"), resource, &["uri"]);
        }
        self.walk_rest(ctx, field, obj, &["uri", "resource", "content"]);
        true
    }
}

/// Judges a URI template (RFC 6570) by its literal prefix: a `file:` template is kept when
/// the directory its prefix names is inside a root (then checked against the path rules) or
/// contains one; it is removed when every expansion must land outside every root. Every
/// expansion is checked again when it is read.
pub(super) fn template(
    checker: &Checker,
    policy: &Policy,
    raw: &str,
    roots: Option<&RootSet>,
) -> Verdict {
    let deny = Verdict::deny;
    let brace = raw.find('{').unwrap_or(raw.len());
    let prefix = &raw[..brace];
    match uri::scheme_of(prefix).as_deref() {
        None => return deny("not_a_uri"),
        Some("file") => {}
        // Another scheme: only the scheme stance applies (the prefix is all that is known).
        Some(_) => return checker.uri(policy, prefix, roots),
    }
    let Some(slash) = prefix.rfind('/') else {
        return deny("not_a_file_uri");
    };
    // What the first expression appends (RFC 6570 operators): `{/x}` a new segment, `{?x}`,
    // `{&x}` and `{#x}` a query or fragment (which a file: URI may not have), anything else
    // more characters of the last, partial name.
    let operator = raw[brace..].chars().nth(1);
    if matches!(operator, Some('?' | '&' | '#')) {
        return deny("query_or_fragment");
    }
    let partial = &prefix[slash + 1..];
    if !partial.is_empty() && (operator == Some('/') || brace == raw.len()) {
        // The partial name is a whole segment: judge the directory it names.
        return template_dir(policy, prefix, roots, None);
    }
    // A partial name goes on: every expansion lies in the directory before it, in an entry
    // whose name starts with `partial`.
    let partial = (!partial.is_empty()).then_some(partial);
    template_dir(policy, &prefix[..=slash], roots, partial)
}

/// Judges the directory a template's literal prefix names (`dir_text`); with `partial`, only
/// entries of that directory whose name starts with it can be reached.
fn template_dir(
    policy: &Policy,
    dir_text: &str,
    roots: Option<&RootSet>,
    partial: Option<&str>,
) -> Verdict {
    let deny = Verdict::deny;
    let dir_text = if dir_text.len() > "file:///".len() {
        dir_text.trim_end_matches('/')
    } else {
        dir_text
    };
    let dir = match FileUri::parse(dir_text) {
        Ok(d) => d,
        Err(e) => return deny(e.reason.code()),
    };
    let Some(roots) = roots else {
        return deny("roots_unknown");
    };
    for root in roots.roots() {
        let forms = [root.uri(), root.real_uri()];
        if forms.iter().any(|f| dir.starts_with(f)) {
            let d = policy.decide_resource("file", Some(dir.path()));
            return Verdict {
                root: Some(std::sync::Arc::clone(root.shared_uri())),
                ..Verdict::from_policy(&d)
            };
        }
        let reachable = |f: &FileUri| {
            // The root's own name right under `dir` must start with the partial name.
            f.starts_with(&dir)
                && partial.is_none_or(|p| {
                    let name = f.components().nth(dir.depth());
                    name.is_some_and(|name| name.starts_with(p))
                })
        };
        if forms.iter().any(|f| reachable(f)) {
            let mut c = deny("template_reaches_root");
            c.allow = true;
            c.root = Some(std::sync::Arc::clone(root.shared_uri()));
            return c;
        }
    }
    deny("outside_roots")
}
