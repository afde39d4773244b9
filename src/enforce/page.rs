//! `resources/list` pages judged from their text (issue 14): no `serde_json::Value` is built
//! for a page of thousands of entries. The page is read borrowed (each entry's byte range and
//! its `uri`), the URIs are judged together per directory exactly as the value path does
//! ([`Checker::page`](super::Checker::page), whose runs of plain siblings share one decision
//! and are counted into the page's summary at once), and then:
//!
//! - nothing refused or rewritten: the original bytes are forwarded (the relay's scan refused
//!   duplicate keys, invalid UTF-8 and lone surrogates, and the text holds no serde_json
//!   private keys, so the bytes mean exactly what was checked);
//! - entries refused: the message forwarded is the original text with the refused entries'
//!   byte ranges left out of the array (the kept entries' bytes, exactly as checked), read
//!   back as the value forwarded.
//!
//! The fast path takes only the shape it fully understands and the value path would leave
//! untouched beyond the entries' `uri`s: a result whose keys other than `resources` hold
//! scalars (no link keys), entries that are objects whose `uri` is a string and whose other
//! keys hold scalars (no link keys) or an `icons` array with nothing to judge. Anything else
//! (an object or array elsewhere in an entry or the result, a URI whose canonical form
//! differs from its text, a non-array `resources`, a non-object entry) is declined before
//! anything is recorded, and the message takes the value path (`walk.rs`), which judges it
//! field by field. Declining is always safe; passing something the value path would change is
//! the one thing this module must never do, and `tests` hold it to the value path's verdicts.

use std::borrow::Cow;
use std::fmt;
use std::ops::Range;

use serde::de::{self, DeserializeSeed, Deserializer, IgnoredAny, MapAccess, Visitor};
use serde_json::Value;
use serde_json::value::RawValue;

use super::walk::{local_url, relative_url};
use super::{Ctx, Inner, PageCheck};
use crate::audit;
use crate::jsonrpc::envelope::Key;
use crate::relay::Action;

/// Keys whose string value the field walk judges as a link (`fields.rs`'s `LINK_KEYS`).
use super::fields::LINK_KEYS;

/// One entry of a page, borrowed from the message text.
#[derive(Debug)]
pub(super) struct Entry<'a> {
    /// The entry's bytes in the message text.
    range: Range<usize>,
    /// Its `uri`, decoded (borrowed when the text holds no escapes).
    uri: Cow<'a, str>,
}

/// A `resources/list` result read borrowed.
#[derive(Debug)]
pub(super) struct Page<'a> {
    /// The `resources` array's bytes in the message text.
    array: Range<usize>,
    entries: Vec<Entry<'a>>,
}

/// Reads a `resources/list` response's page, or `None` when it is not the shape the fast
/// path takes (see the module docs). One pass over the message; with `ranges` (only needed
/// to leave entries out), one more over each entry, while it is in cache, to learn where it
/// lies.
pub(super) fn scan(text: &str, ranges: bool) -> Option<Page<'_>> {
    let mut de = serde_json::Deserializer::from_str(text);
    let entries = Top(ranges).deserialize(&mut de).ok()??;
    de.end().ok()?;
    let mut page = Page {
        array: 0..0,
        entries: Vec::with_capacity(entries.len()),
    };
    for (raw, uri) in entries {
        page.entries.push(Entry {
            range: if ranges { range_in(text, raw)? } else { 0..0 },
            uri,
        });
    }
    if !ranges {
        return Some(page);
    }
    // The array's brackets: only JSON whitespace lies between them and the first and last
    // entries (an empty array has nothing to leave out, so its place is not needed).
    if let (Some(first), Some(last)) = (page.entries.first(), page.entries.last()) {
        const WS: [char; 4] = [' ', '\t', '\n', '\r'];
        let before = text[..first.range.start].trim_end_matches(WS);
        let after = &text[last.range.end..];
        let skipped = after.len() - after.trim_start_matches(WS).len();
        if !before.ends_with('[') || after.as_bytes().get(skipped) != Some(&b']') {
            return None;
        }
        page.array = before.len() - 1..last.range.end + skipped + 1;
    }
    Some(page)
}

/// Where `part` (a slice of `text`, as the borrowed parse hands out) lies in `text`.
fn range_in(text: &str, part: &str) -> Option<Range<usize>> {
    let start = (part.as_ptr() as usize).checked_sub(text.as_ptr() as usize)?;
    let end = start.checked_add(part.len())?;
    (end <= text.len() && text.is_char_boundary(start) && text.is_char_boundary(end))
        .then_some(start..end)
}

/// What the parse hands out: each entry's text with its decoded `uri`.
type Entries<'a> = Vec<(&'a str, Cow<'a, str>)>;

/// The message object: its `result`'s page. `Ok(None)`: not a shape the fast path takes.
/// (Each seed carries whether entries' ranges are wanted.)
struct Top(bool);

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
                result = Some(map.next_value_seed(ResultSeed(self.0))?);
            } else {
                map.next_value::<IgnoredAny>()?;
            }
        }
        Ok(result.flatten())
    }
}

/// Whether a value under `key` (an entry's or the result's own key) is one the field walk
/// leaves alone: a scalar, and not a string under a link key (`fields.rs`'s `walkable`).
pub(super) fn inert(key: &str, raw: &RawValue) -> bool {
    match raw.get().as_bytes().first() {
        Some(b'{' | b'[') | None => false,
        Some(b'"') => !LINK_KEYS.contains(&key),
        Some(_) => true,
    }
}

/// A not-taken shape: the parse stops (nothing is recorded before the whole message is
/// read), and the message takes the value path. Shared with `read_text.rs`.
pub(super) fn decline<E: de::Error>() -> E {
    E::custom("not a shape the text path takes")
}

/// The result object: its `resources` array, when every other key is inert.
struct ResultSeed(bool);

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
                resources = Some(map.next_value_seed(Resources(self.0))?);
            } else if !inert(&key, map.next_value()?) {
                return Err(decline());
            }
        }
        Ok(resources)
    }
}

/// The `resources` array: its entries.
struct Resources(bool);

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
        let mut out = Vec::with_capacity(seq.size_hint().unwrap_or(0));
        if !self.0 {
            while let Some(uri) = seq.next_element_seed(EntrySeed)? {
                out.push(("", uri));
            }
            return Ok(out);
        }
        while let Some(raw) = seq.next_element::<&'de RawValue>()? {
            // Read while the entry's bytes are in cache.
            let entry = raw.get();
            let uri = scan_entry(entry).ok_or_else(decline)?;
            out.push((entry, uri));
        }
        Ok(out)
    }
}

/// One entry: its decoded `uri`, when the entry is an object whose `uri` is a string and whose
/// other keys the walk would leave alone.
struct EntrySeed;

impl<'de> DeserializeSeed<'de> for EntrySeed {
    type Value = Cow<'de, str>;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        // Anything but an object is refused by `deserialize_map` itself.
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
                icons_inert(value)
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

/// [`EntrySeed`] on an entry's own text.
fn scan_entry(entry: &str) -> Option<Cow<'_, str>> {
    let mut de = serde_json::Deserializer::from_str(entry);
    let uri = EntrySeed.deserialize(&mut de).ok()?;
    de.end().ok()?;
    Some(uri)
}

/// Whether an entry's `icons` hold nothing `filter_icons` would judge: not an array (it is
/// left alone), or icons whose `src` is absent, not a string, or an absolute URL of a scheme
/// that is not a local file.
fn icons_inert(icons: &RawValue) -> bool {
    if !icons.get().starts_with('[') {
        return true;
    }
    let Ok(Value::Array(list)) = serde_json::from_str::<Value>(icons.get()) else {
        return false;
    };
    list.iter().all(|icon| {
        icon.get("src")
            .and_then(Value::as_str)
            .is_none_or(|src| !relative_url(src) && !local_url(src))
    })
}

impl Inner {
    /// A `resources/list` result judged from its text (see the module docs), or `None` when
    /// the page is not one the fast path takes: nothing has been recorded then, and the
    /// message takes the value path.
    pub(super) fn list_page_text(&self, ctx: &Ctx<'_>, text: &str) -> Option<Action> {
        let page = scan(text, false)?;
        let live = self.live();
        let raws: Vec<&str> = page.entries.iter().map(|e| &*e.uri).collect();
        let checks = live.page(&raws, ctx.roots);
        if checks.entries.len() != raws.len() {
            return None;
        }
        // An allowed URI whose canonical form differs from its text is rewritten by the value
        // path: declined here, before anything is recorded. (An entry that shares its run's
        // decision is its own canonical text.)
        if live.enforce
            && checks.entries.iter().zip(&raws).any(|(e, raw)| match e {
                PageCheck::Own(c) => {
                    c.allow && c.canonical.as_ref().is_some_and(|u| u.as_str() != *raw)
                }
                PageCheck::Like { .. } => false,
            })
        {
            return None;
        }
        let field = "result.resources";
        let mut audit_page = self.page_audit(field);
        let mut keep = Vec::with_capacity(raws.len());
        let mut i = 0;
        while i < raws.len() {
            // One entry decided on its own, or a run of siblings sharing one decision.
            let (n, c, canonical) = match &checks.entries[i] {
                PageCheck::Own(c) => (1, &**c, c.canonical.as_ref().map(|u| u.as_str())),
                PageCheck::Like { class, uri } => {
                    let n = checks.entries[i..]
                        .iter()
                        .take_while(|e| matches!(e, PageCheck::Like { class: k, .. } if k == class))
                        .count();
                    (n, &checks.shared[*class as usize], Some(uri.as_str()))
                }
            };
            self.audit_entries(
                ctx,
                audit_page.as_mut(),
                |k| format!("{field}[{}].uri", i + k),
                &raws[i..i + n],
                canonical,
                c,
                audit::Action::Filtered,
                |ok| keep.push((c.allow && ok) || !live.enforce),
            );
            i += n;
        }
        self.finish_page(ctx, audit_page);
        if keep.iter().all(|k| *k) {
            return Some(Action::Forward);
        }
        // The kept entries' own bytes, in order, in place of the array: where each lies is
        // learnt by reading the page again (only pages that lose entries pay for it).
        let Some(page) = scan(text, true).filter(|p| p.entries.len() == keep.len()) else {
            // Only a bug gets here: the page is refused, never forwarded unchecked.
            tracing::error!("a list page read differently the second time");
            return Some(self.refuse_result(ctx, "malformed_result"));
        };
        let mut out = String::with_capacity(text.len());
        out.push_str(&text[..page.array.start]);
        out.push('[');
        let mut first = true;
        for (e, _) in page.entries.iter().zip(&keep).filter(|(_, k)| **k) {
            if !first {
                out.push(',');
            }
            first = false;
            out.push_str(&text[e.range.clone()]);
        }
        out.push(']');
        out.push_str(&text[page.array.end..]);
        match serde_json::from_str::<Value>(&out) {
            Ok(message) => Some(Action::Replace(message)),
            Err(e) => {
                // Only a bug gets here: the page is refused, never forwarded unchecked.
                tracing::error!("a spliced list page failed to parse: {e}");
                Some(self.refuse_result(ctx, "malformed_result"))
            }
        }
    }
}

#[cfg(test)]
mod tests;
