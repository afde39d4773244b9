//! `resources/read` judged from its text (issue 14): the request and its result, in the
//! shape nearly every read has, without building a `serde_json::Value` of either.
//!
//! A read is the hot path of a resource server: its request holds one URI, and its result
//! one item naming that URI, with the file's text or base64 bytes, which can be megabytes.
//! The value path parses both whole (an ordered map per object, a copy of every string)
//! only to look at two strings and a length. Here they are read borrowed and judged by the
//! same functions as the value path (`Checker::uri`, the read verdict kept by request id,
//! `read::item_refusal`), and when the value path would forward the message unchanged the
//! original bytes are forwarded (the relay's scan refused duplicate keys, invalid UTF-8,
//! lone surrogates and serde_json's private keys, so the bytes mean exactly what was
//! checked).
//!
//! Only what the value path would pass untouched, with no other field to walk, is taken:
//!
//! - a request whose members are `jsonrpc`, `id`, `method` and `params`, whose `params`
//!   holds only a string `uri` that is allowed and already canonical (no `_meta`, no
//!   2026-07-28 `inputResponses`, not a stateless session, not the `serve` stance);
//! - a result whose members are `contents` (and a 2026-07-28 `resultType` of `"complete"`),
//!   holding exactly one item whose `uri` is a string equal to the canonical URI its request
//!   was allowed for, whose `mimeType`, `text` and `blob` are strings, and whose other
//!   members are scalars the field walk leaves alone (`name`, `title`, `size`: no `data`,
//!   no link key, no object such as `_meta` or `annotations`), within the policy's content
//!   limits, under the `forward` stance.
//!
//! Everything else is declined before anything is recorded, and takes the value path. A
//! decline is always safe; passing what the value path would change is the one thing this
//! module must never do, and its tests hold it to the value path's verdicts.

use std::borrow::Cow;
use std::fmt;

use serde::Deserialize;
use serde::de::{Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde_json::value::RawValue;

use super::page::{self, decline};
use super::{Ctx, Inner, read};
use crate::audit;
use crate::jsonrpc::envelope::Key;
use crate::policy::ReadStance;
use crate::relay::Action;

/// A `resources/read` request, borrowed; unknown members make it fail (decline).
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Request<'a> {
    #[serde(rename = "jsonrpc")]
    _jsonrpc: IgnoredAny,
    #[serde(rename = "id")]
    _id: IgnoredAny,
    #[serde(rename = "method")]
    _method: IgnoredAny,
    #[serde(borrow)]
    params: UriOnly<'a>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct UriOnly<'a> {
    #[serde(borrow)]
    uri: Cow<'a, str>,
}

/// A `resources/read` response, borrowed: its result's content items.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Response<'a> {
    #[serde(rename = "jsonrpc")]
    _jsonrpc: IgnoredAny,
    #[serde(rename = "id")]
    _id: IgnoredAny,
    /// `result`: its one content item.
    #[serde(rename = "result", borrow, deserialize_with = "contents")]
    item: Item<'a>,
}

/// One content item: the members the checks read. A member that is present must be a
/// string: `null` is not "absent" here, because the value path refuses a `text` or `blob`
/// that is not a string.
#[derive(Default)]
struct Item<'a> {
    uri: Option<Cow<'a, str>>,
    mime_type: Option<Cow<'a, str>>,
    text: Option<Cow<'a, str>>,
    blob: Option<Cow<'a, str>>,
}

/// The result object: `contents` (its one item is returned), and at most a 2026-07-28
/// `resultType` of `"complete"` (`input_required` is the value path's).
fn contents<'de, D: Deserializer<'de>>(d: D) -> Result<Item<'de>, D::Error> {
    struct V;
    impl<'de> Visitor<'de> for V {
        type Value = Item<'de>;
        fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("a read result")
        }
        fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
            let mut contents = None;
            while let Some(Key(key)) = map.next_key()? {
                match &*key {
                    "contents" if contents.is_none() => {
                        contents = Some(map.next_value::<One<'de>>()?.0);
                    }
                    "resultType" if map.next_value::<&RawValue>()?.get() == r#""complete""# => {}
                    _ => return Err(decline()),
                }
            }
            contents.ok_or_else(decline)
        }
    }
    d.deserialize_map(V)
}

/// `contents` holding exactly one item, read without collecting a `Vec`; none, or a
/// second, declines (the value path judges each of several).
struct One<'a>(Item<'a>);

impl<'de> Deserialize<'de> for One<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = One<'de>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("one content item")
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
                let item = seq.next_element::<Item<'de>>()?.ok_or_else(decline)?;
                if seq.next_element::<IgnoredAny>()?.is_some() {
                    return Err(decline());
                }
                Ok(One(item))
            }
        }
        d.deserialize_seq(V)
    }
}

impl<'de> Deserialize<'de> for Item<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Item<'de>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a content item")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
                let mut item = Item::default();
                while let Some(Key(key)) = map.next_key()? {
                    let slot = match &*key {
                        "uri" => &mut item.uri,
                        "mimeType" => &mut item.mime_type,
                        "text" => &mut item.text,
                        "blob" => &mut item.blob,
                        // `data` is checked as a third representation by the value path; a
                        // member the field walk would judge (an object, an array, a link)
                        // is the value path's too. Other scalars it leaves alone.
                        "data" => return Err(decline()),
                        _ if page::inert(&key, map.next_value()?) => continue,
                        _ => return Err(decline()),
                    };
                    // The relay's scan refused duplicate keys; a repeat here is declined all
                    // the same.
                    if slot.is_some() {
                        return Err(decline());
                    }
                    let Key(value) = map.next_value::<Key<'de>>()?;
                    *slot = Some(value);
                }
                Ok(item)
            }
        }
        d.deserialize_map(V)
    }
}

fn parse<'a, T: Deserialize<'a>>(text: &'a str) -> Option<T> {
    let mut de = serde_json::Deserializer::from_str(text);
    let v = T::deserialize(&mut de).ok()?;
    de.end().ok()?;
    Some(v)
}

impl super::resources_read::ResourcesRead {
    /// A host's `resources/read` request from its text; `None` declines it to the value
    /// path (see the module docs).
    pub(super) fn request_text(&self, core: &Inner, ctx: &Ctx<'_>, text: &str) -> Option<Action> {
        let id = ctx.id?;
        if ctx.revision().has_input_required() {
            return None;
        }
        let live = core.live();
        if live.enforce && live.policy.resources().read == ReadStance::Serve {
            return None;
        }
        let request: Request<'_> = parse(text)?;
        let raw = &*request.params.uri;
        let c = live.uri(raw, ctx.roots);
        if !c.allow || c.canonical.as_ref().is_some_and(|u| u.as_str() != raw) {
            return None;
        }
        if !core.audit_decision(ctx, "params.uri", raw, &c, audit::Action::AnsweredError) {
            // The record could not be written and the policy stops on that: the value path
            // would answer with the denial.
            return Some(if live.enforce {
                Action::Reply(super::denial(id, raw, &c))
            } else {
                Action::Forward
            });
        }
        self.verdicts.keep(id, c, ctx.roots_arc);
        Some(Action::Forward)
    }

    /// A server's `resources/read` result from its text; `None` declines it to the value
    /// path (see the module docs).
    pub(super) fn result_text(&self, core: &Inner, ctx: &Ctx<'_>, text: &str) -> Option<Action> {
        let id = ctx.id?;
        let live = core.live();
        if live.policy.resources().read == ReadStance::Verify {
            return None;
        }
        let response: Response<'_> = parse(text)?;
        let item = &response.item;
        let uri = item.uri.as_deref()?;
        if read::item_refusal(
            &live.policy,
            item.mime_type.as_deref(),
            item.text.as_deref(),
            item.blob.as_deref(),
        )
        .is_some()
        {
            return None;
        }
        // The item names exactly the URI its request was allowed for: the request's record is
        // its record, as on the value path.
        // Anything else (another URI, a refusal, roots changed since the request): the value
        // path judges it again.
        self.verdicts
            .take_allowing(id, uri, ctx.roots_arc)
            .then_some(Action::Forward)
    }
}

#[cfg(test)]
mod tests;
