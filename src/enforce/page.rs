//! `resources/list` pages judged from their text (issue 14): no `serde_json::Value` is built
//! for a page of thousands of entries, and the page is not read again: the relay's strict scan
//! captured its entries' `uri`s (borrowed) in the same pass that checked it, under [`RULES`]
//! (`jsonrpc::envelope::capture`, issue 25). The URIs are judged together per directory
//! exactly as the value path does
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
//! The capture holds a page only in the shape the fast path fully understands and the value path would leave
//! untouched beyond the entries' `uri`s: a result whose keys other than `resources` hold
//! scalars (no link keys), entries that are objects whose `uri` is a string and whose other
//! keys hold scalars (no link keys) or an `icons` array with nothing to judge. Anything else
//! (an object or array elsewhere in an entry or the result, a URI whose canonical form
//! differs from its text, a non-array `resources`, a non-object entry) is not captured, or
//! is declined before anything is recorded, and the message takes the value path (`walk.rs`), which judges it
//! field by field. Declining is always safe; passing something the value path would change is
//! the one thing this module must never do, and `tests` hold it to the value path's verdicts.

use std::borrow::Cow;
use std::ops::Range;

use serde::Deserialize;
use serde_json::Value;
use serde_json::value::RawValue;

use super::walk::{local_url, relative_url};
use super::{Ctx, Inner, PageCheck};
use crate::audit;
use crate::jsonrpc::{Capture, Rules};
use crate::relay::Action;

/// Keys whose string value the field walk judges as a link (`fields.rs`'s `LINK_KEYS`).
use super::fields::LINK_KEYS;

/// The rules under which the relay's strict scan captures pages and reads for the text paths
/// (`jsonrpc::envelope::capture`): what the field walk would judge is not captured.
pub(super) static RULES: Rules = Rules {
    link_key,
    icons_inert,
};

fn link_key(key: &str) -> bool {
    LINK_KEYS.contains(&key)
}

/// Where each entry of the page lies in the message text, and the `resources` array's
/// brackets, read again only for a page that loses entries (the scan that captured the page
/// checked it; this read only finds the entries' bytes).
fn ranges(text: &str) -> Option<(Range<usize>, Vec<Range<usize>>)> {
    #[derive(Deserialize)]
    struct Message<'a> {
        #[serde(borrow)]
        result: Page<'a>,
    }
    #[derive(Deserialize)]
    struct Page<'a> {
        #[serde(borrow)]
        resources: Vec<&'a RawValue>,
    }
    let message: Message<'_> = serde_json::from_str(text).ok()?;
    let entries = (message.result.resources.iter())
        .map(|e| range_in(text, e.get()))
        .collect::<Option<Vec<_>>>()?;
    // The array's brackets: only JSON whitespace lies between them and the first and last
    // entries (a page that loses entries has some).
    let (first, last) = (entries.first()?, entries.last()?);
    const WS: [char; 4] = [' ', '\t', '\n', '\r'];
    let before = text[..first.start].trim_end_matches(WS);
    let after = &text[last.end..];
    let skipped = after.len() - after.trim_start_matches(WS).len();
    if !before.ends_with('[') || after.as_bytes().get(skipped) != Some(&b']') {
        return None;
    }
    Some((before.len() - 1..last.end + skipped + 1, entries))
}

/// Where `part` (a slice of `text`, as the borrowed parse hands out) lies in `text`.
fn range_in(text: &str, part: &str) -> Option<Range<usize>> {
    let start = (part.as_ptr() as usize).checked_sub(text.as_ptr() as usize)?;
    let end = start.checked_add(part.len())?;
    (end <= text.len() && text.is_char_boundary(start) && text.is_char_boundary(end))
        .then_some(start..end)
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
    pub(super) fn list_page_text(
        &self,
        ctx: &Ctx<'_>,
        text: &str,
        capture: &Capture<'_>,
    ) -> Option<Action> {
        let page = capture.page.as_ref()?;
        let live = self.live();
        let raws: Vec<&str> = page.iter().map(Cow::as_ref).collect();
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
        let Some((array, entries)) = ranges(text).filter(|(_, e)| e.len() == keep.len()) else {
            // Only a bug gets here: the page is refused, never forwarded unchecked.
            tracing::error!("a list page read differently the second time");
            return Some(self.refuse_result(ctx, "malformed_result"));
        };
        let kept: Vec<&str> = (entries.iter().zip(&keep))
            .filter(|(_, k)| **k)
            .map(|(e, _)| &text[e.clone()])
            .collect();
        let (head, tail) = (&text[..array.start], &text[array.end..]);
        let out = [head, "[", &kept.join(","), "]", tail].concat();
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
