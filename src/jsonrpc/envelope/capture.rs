//! What the enforcer's text paths read of a message, gathered by the strict scan in its one
//! pass (issue 25): a `resources/list` page's URIs, a `resources/read` request's `uri`, a read
//! result's one content item. Before, the scan read the message and the text path read it
//! again; now the text path reads only what is captured here.
//!
//! The capture is speculative: a response carries no method (its request's method is known
//! from the pending table, after the scan), and a request's members come in any order (the
//! TypeScript SDK writes `result` before `id`), so whatever has the shape is captured and the
//! text path the method routes to takes its part. A message without `params.uri`,
//! `result.resources` or `result.contents` costs a few key comparisons.
//!
//! Every value read here is still checked as the rest of the scan checks it (duplicate keys
//! and escaped serde_json marker keys refused at every depth, every string decoded): a shape
//! the capture does not take only leaves its part out (`None`), it never stops the scan, and
//! never lets anything through unchecked. A part is captured only in the shape its text path
//! fully understands (see `enforce/page.rs` and `enforce/read_text.rs`); anything else is left
//! out, and the message takes the value path. Which string members are links is the
//! enforcer's knowledge, handed in as [`Rules`].
//!
//! Why it is built this way: the rules are handed in because the scan sits below the enforcer
//! (which member keys are links is the field walk's knowledge, `enforce/fields.rs`), and an
//! interceptor that gives none (`PassThrough`) pays nothing. Entries' byte ranges are not
//! captured: serde_json does not tell a visitor where it is, and reading each entry raw first
//! would read every page twice again; only a page that loses entries reads itself once more,
//! for where its entries lie (`enforce/page.rs`). No `serde_json::Value` is built here for
//! the value path: its messages are the rare shapes, and it stays one `from_str` of a text
//! this scan checked.
//!
//! One caveat the relay keeps: with `arbitrary_precision`, serde_json hands a number to a
//! visitor as an object whose one key is `$serde_json::private::Number`, which is how a number
//! is told from an object here; an object that spells that key plainly reads as a number too.
//! The relay offers no text holding that key to a text path (`verbatim_ok`).

use std::borrow::Cow;
use std::fmt;

use serde::de::{self, DeserializeSeed, MapAccess, SeqAccess, Visitor};
use serde_json::value::RawValue;

use super::{Key, KeyBuf, KeySet, ReadAny, checked};

/// The enforcer's rules for the members a text path leaves unjudged, handed to the scan by
/// the interceptor (`Interceptor::capture_rules`): the scan knows where the members are, the
/// enforcer which of them it would judge.
#[derive(Debug)]
pub struct Rules {
    /// Whether a string under this key is a link the field walk judges.
    pub link_key: fn(&str) -> bool,
    /// Whether a page entry's `icons` (its text, already checked) hold nothing the icon
    /// filter judges.
    pub icons_inert: fn(&RawValue) -> bool,
}

/// The parts of a message the text paths read (each `None` when it is not in their shape).
#[derive(Debug, Default)]
pub struct Capture<'a> {
    /// A request's `params.uri`, when `params` holds only that string and the message has no
    /// member but `jsonrpc`, `id`, `method` and `params`.
    pub uri: Option<Cow<'a, str>>,
    /// A response's `result.contents` item, when `contents` holds exactly one item whose
    /// `uri`, `mimeType`, `text` and `blob` are strings when present, with no `data` and no
    /// other member but scalars the field walk leaves alone; the result holds nothing else but
    /// a `resultType` of `"complete"`, and the message nothing but `jsonrpc`, `id`, `result`.
    pub item: Option<Item<'a>>,
    /// A response's `result.resources` entries' `uri`s, in order, when every entry is an
    /// object whose `uri` is a string and whose other members are scalars the walk leaves
    /// alone (or `icons` with nothing to judge), and every other member of the result is such
    /// a scalar.
    pub page: Option<Vec<Cow<'a, str>>>,
}

/// A read result's one content item: the members the read checks look at.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Item<'a> {
    /// `uri`.
    pub uri: Option<Cow<'a, str>>,
    /// `mimeType`.
    pub mime_type: Option<Cow<'a, str>>,
    /// `text`.
    pub text: Option<Cow<'a, str>>,
    /// `blob`.
    pub blob: Option<Cow<'a, str>>,
}

/// What a member's value was, for the rules.
enum Seen<'de> {
    /// A string: its decoded text when kept, or when borrowed (free).
    Str(Option<Cow<'de, str>>),
    /// A number, `true`, `false` or `null`.
    Scalar,
    /// An object or an array.
    Composite,
}

/// Whether the field walk leaves a member alone: a scalar, or a string not under a link key.
fn inert(rules: &Rules, key: &str, seen: &Seen<'_>) -> bool {
    match seen {
        Seen::Scalar => true,
        Seen::Str(_) => !(rules.link_key)(key),
        Seen::Composite => false,
    }
}

/// serde_json's key for a number read with `arbitrary_precision` (see the module docs).
const NUMBER: &str = "$serde_json::private::Number";

/// Any value, checked as [`checked::check`] checks it, told apart as [`Seen`]; escaped strings
/// are kept only when asked for (`keep`).
struct Any<'k, 'de> {
    keys: &'k mut KeyBuf<'de>,
    keep: bool,
}

impl<'de> Visitor<'de> for Any<'_, 'de> {
    type Value = Seen<'de>;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }
    accept_non_strings!(Seen<'de>, Seen::Scalar);
    fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Seen<'de>, E> {
        Ok(Seen::Str(Some(Cow::Borrowed(v))))
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<Seen<'de>, E> {
        Ok(Seen::Str(self.keep.then(|| Cow::Owned(v.to_owned()))))
    }
    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Seen<'de>, A::Error> {
        checked::skip_seq(self.keys, seq)?;
        Ok(Seen::Composite)
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Seen<'de>, A::Error> {
        let mut keys = KeySet::new(self.keys);
        let mut seen = Seen::Composite;
        while let Some(Key(key)) = map.next_key()? {
            seen = match (&seen, &key) {
                (Seen::Composite, Cow::Borrowed(NUMBER)) if keys.is_empty() => Seen::Scalar,
                _ => Seen::Composite,
            };
            keys.insert(key)?;
            map.next_value_seed(checked::check(keys.nested()))?;
        }
        Ok(seen)
    }
}

/// Reads a member's value as [`Any`].
fn member<'de, A: MapAccess<'de>>(
    map: &mut A,
    keys: &mut KeySet<'_, 'de>,
    keep: bool,
) -> Result<Seen<'de>, A::Error> {
    map.next_value_seed(ReadAny(Any {
        keys: keys.nested(),
        keep,
    }))
}

/// A request's `params` object: its `uri`, when it is its only member and a string.
pub(super) fn params_uri<'de, A: MapAccess<'de>>(
    map: &mut A,
    keys: &mut KeySet<'_, 'de>,
    key: &str,
    uri: &mut Option<Option<Cow<'de, str>>>,
) -> Result<(), A::Error> {
    if key != "uri" {
        *uri = Some(None);
        return map.next_value_seed(checked::check(keys.nested()));
    }
    let seen = member(map, keys, true)?;
    // `Some(None)`: `params` is not only a string `uri` (a repeat is refused by the scan).
    *uri = match (uri.take(), seen) {
        (None, Seen::Str(Some(s))) => Some(Some(s)),
        _ => Some(None),
    };
    Ok(())
}

/// A capture's seed: the scan's key buffer and the rules, read with `deserialize_any` (through
/// [`ReadAny`], so every value is checked as [`checked::check`] checks it: a shape not captured
/// is still read whole) into `$value` by the visitor methods given; scalars and arrays into
/// `$other`, when given.
macro_rules! capture_seed {
    ($(#[$doc:meta])* $vis:vis $name:ident -> $value:ty $(, else $other:tt)? { $($body:tt)* }) => {
        $(#[$doc])*
        $vis struct $name<'k, 'de> {
            $vis keys: &'k mut KeyBuf<'de>,
            $vis rules: &'static Rules,
        }

        impl<'de> Visitor<'de> for $name<'_, 'de> {
            type Value = $value;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("any JSON value")
            }
            $(
                accept_scalars!($value, $other);
                fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<$value, A::Error> {
                    checked::skip_seq(self.keys, seq)?;
                    Ok($other)
                }
            )?
            $($body)*
        }
    };
}

capture_seed! {
    /// A response's `result`: checked whole, with its page or its read item captured.
    pub(super) ResultSeed -> Captured<'de>, else (None, None) {
        fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
            let rules = self.rules;
            let mut keys = KeySet::new(self.keys);
            let (mut page_ok, mut read_ok) = (true, true);
            let (mut page, mut item) = (None, None);
            while let Some(Key(key)) = map.next_key()? {
                keys.insert(key.clone())?;
                match &*key {
                    "resources" => {
                        page = map.next_value_seed(ReadAny(Resources {
                            keys: keys.nested(),
                            rules,
                        }))?;
                        page_ok &= page.is_some();
                        read_ok = false;
                    }
                    "contents" => {
                        let (seen, one) = map.next_value_seed(ReadAny(Contents {
                            keys: keys.nested(),
                            rules,
                        }))?;
                        page_ok &= inert(rules, &key, &seen);
                        read_ok &= one.is_some();
                        item = one;
                    }
                    _ => {
                        let seen = member(&mut map, &mut keys, false)?;
                        page_ok &= inert(rules, &key, &seen);
                        // A 2026-07-28 `resultType` other than `"complete"` (written plainly) is
                        // the value path's (`input_required`).
                        read_ok &= key == "resultType"
                            && matches!(seen, Seen::Str(Some(Cow::Borrowed("complete"))));
                    }
                }
            }
            Ok((page.filter(|_| page_ok), item.filter(|_| read_ok)))
        }
    }
}

/// What [`ResultSeed`] captured: `(page, item)`.
pub(super) type Captured<'de> = (Option<Vec<Cow<'de, str>>>, Option<Item<'de>>);

capture_seed! {
    /// `result.resources`: each entry's `uri`, when every entry is one the page path takes.
    Resources -> Option<Vec<Cow<'de, str>>> {
        accept_scalars!(Self::Value, None);
        fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Self::Value, A::Error> {
            checked::skip_map(self.keys, map)?;
            Ok(None)
        }
        fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
            let mut uris = Some(Vec::with_capacity(seq.size_hint().unwrap_or(0)));
            while let Some(uri) = seq.next_element_seed(ReadAny(Entry {
                keys: &mut *self.keys,
                rules: self.rules,
            }))? {
                match (&mut uris, uri) {
                    (Some(uris), Some(uri)) => uris.push(uri),
                    _ => uris = None,
                }
            }
            Ok(uris)
        }
    }
}

capture_seed! {
    /// One page entry: its `uri`, when the entry is an object whose `uri` is a string and whose
    /// other members the walk leaves alone.
    Entry -> Option<Cow<'de, str>>, else None {
        fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
            let rules = self.rules;
            let mut keys = KeySet::new(self.keys);
            let (mut uri, mut plain) = (None, true);
            while let Some(Key(key)) = map.next_key()? {
                // A number (see the module docs): not an entry.
                plain &= !(keys.is_empty() && matches!(key, Cow::Borrowed(NUMBER)));
                keys.insert(key.clone())?;
                match &*key {
                    "uri" => match member(&mut map, &mut keys, true)? {
                        Seen::Str(Some(s)) => uri = Some(s),
                        _ => plain = false,
                    },
                    "icons" => {
                        // Read raw for the rule, and checked from its text like the rest.
                        let raw: &'de RawValue = map.next_value()?;
                        let mut de = serde_json::Deserializer::from_str(raw.get());
                        checked::check(keys.nested())
                            .deserialize(&mut de)
                            .map_err(de::Error::custom)?;
                        plain &= (rules.icons_inert)(raw);
                    }
                    _ => {
                        let seen = member(&mut map, &mut keys, false)?;
                        plain &= inert(rules, &key, &seen);
                    }
                }
            }
            Ok(uri.filter(|_| plain))
        }
    }
}

capture_seed! {
    /// `result.contents`: how the value was seen (for the page's rules), and its one item when it
    /// holds exactly one the read path takes.
    Contents -> (Seen<'de>, Option<Item<'de>>) {
        accept_non_strings!(Self::Value, (Seen::Scalar, None));
        fn visit_str<E: de::Error>(self, _: &str) -> Result<Self::Value, E> {
            Ok((Seen::Str(None), None))
        }
        fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Self::Value, A::Error> {
            let seen = Any {
                keys: self.keys,
                keep: false,
            }
            .visit_map(map)?;
            Ok((seen, None))
        }
        fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
            let first = seq.next_element_seed(ReadAny(ItemSeed {
                keys: &mut *self.keys,
                rules: self.rules,
            }))?;
            // None, or a second item: the value path judges each of several.
            let more = seq.next_element_seed(checked::check(&mut *self.keys))?.is_some();
            if more {
                while seq.next_element_seed(checked::check(&mut *self.keys))?.is_some() {}
            }
            Ok((Seen::Composite, first.flatten().filter(|_| !more)))
        }
    }
}

capture_seed! {
    /// One content item, when the read path takes it (see [`Capture::item`]).
    ItemSeed -> Option<Item<'de>>, else None {
        fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
            let rules = self.rules;
            let mut keys = KeySet::new(self.keys);
            let (mut item, mut plain) = (Item::default(), true);
            while let Some(Key(key)) = map.next_key()? {
                plain &= !(keys.is_empty() && matches!(key, Cow::Borrowed(NUMBER)));
                keys.insert(key.clone())?;
                let slot = match &*key {
                    "uri" => &mut item.uri,
                    "mimeType" => &mut item.mime_type,
                    "text" => &mut item.text,
                    "blob" => &mut item.blob,
                    _ => {
                        let seen = member(&mut map, &mut keys, false)?;
                        // `data` is checked as a third representation by the value path; a
                        // member the field walk would judge (an object, an array, a link) is
                        // the value path's too. Other scalars it leaves alone.
                        plain &= key != "data" && inert(rules, &key, &seen);
                        continue;
                    }
                };
                // A member that is present must be a string: `null` is not "absent" here,
                // because the value path refuses a `text` or `blob` that is not a string.
                match member(&mut map, &mut keys, true)? {
                    Seen::Str(Some(s)) => *slot = Some(s),
                    _ => plain = false,
                }
            }
            Ok(plain.then_some(item))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::scan_message_with;
    use super::*;

    static RULES: Rules = Rules {
        link_key: |k| k == "url",
        icons_inert: |raw| raw.get() == "[]",
    };

    /// The capture of a message the scan accepts, compactly: `uri=..`, `item=..`, `page=..`.
    fn captured(text: &str) -> String {
        let c = scan_message_with(text, Some(&RULES), None)
            .expect("valid")
            .capture;
        let mut parts = Vec::new();
        if let Some(uri) = c.uri {
            parts.push(format!("uri={uri}"));
        }
        if let Some(i) = c.item {
            let s = |v: &Option<Cow<'_, str>>| v.as_deref().unwrap_or("-").to_owned();
            let (u, m, t, b) = (s(&i.uri), s(&i.mime_type), s(&i.text), s(&i.blob));
            parts.push(format!("item={u},{m},{t},{b}"));
        }
        if let Some(page) = c.page {
            parts.push(format!("page={}", page.join(",")));
        }
        parts.join(" ")
    }

    #[test]
    fn what_is_captured() {
        let cases = [
            // A read request: its only `params` member, decoded, whatever the key order.
            (
                r#"{"jsonrpc":"2.0","id":1,"method":"resources/read","params":{"uri":"file:///a"}}"#,
                "uri=file:///a",
            ),
            (
                r#"{"params":{"\u0075ri":"file:\/\/\/a"},"method":"resources/read","id":1,"jsonrpc":"2.0"}"#,
                "uri=file:///a",
            ),
            // Anything beside it, or a `uri` that is not a string: nothing.
            (
                r#"{"jsonrpc":"2.0","id":1,"method":"m","params":{"uri":"a","_meta":{}}}"#,
                "",
            ),
            (
                r#"{"jsonrpc":"2.0","id":1,"method":"m","params":{"_meta":{},"uri":"a"}}"#,
                "",
            ),
            (
                r#"{"jsonrpc":"2.0","id":1,"method":"m","params":{"uri":"a"},"x":1}"#,
                "",
            ),
            (
                r#"{"jsonrpc":"2.0","id":1,"method":"m","params":{"uri":null}}"#,
                "",
            ),
            (
                r#"{"jsonrpc":"2.0","id":1,"method":"m","params":["a"]}"#,
                "",
            ),
            // A read result: one item, `result` first as the TypeScript SDK writes it.
            (
                r#"{"result":{"contents":[{"uri":"a","mimeType":"text/plain","text":"x\ny","size":3,"name":"n"}]},"jsonrpc":"2.0","id":1}"#,
                "item=a,text/plain,x\ny,-",
            ),
            (
                r#"{"jsonrpc":"2.0","id":1,"result":{"resultType":"complete","contents":[{"uri":"a","blob":"eA=="}]}}"#,
                "item=a,-,-,eA==",
            ),
            // Not in the read path's shape: nothing.
            (
                r#"{"jsonrpc":"2.0","id":1,"result":{"resultType":"compl\u0065te","contents":[{"uri":"a"}]}}"#,
                "",
            ),
            (
                r#"{"jsonrpc":"2.0","id":1,"result":{"contents":[{"uri":"a"},{"uri":"a"}]}}"#,
                "",
            ),
            (r#"{"jsonrpc":"2.0","id":1,"result":{"contents":[]}}"#, ""),
            (
                r#"{"jsonrpc":"2.0","id":1,"result":{"contents":[{"uri":"a","text":null}]}}"#,
                "",
            ),
            (
                r#"{"jsonrpc":"2.0","id":1,"result":{"contents":[{"uri":"a","data":"eA=="}]}}"#,
                "",
            ),
            (
                r#"{"jsonrpc":"2.0","id":1,"result":{"contents":[{"uri":"a","url":"b"}]}}"#,
                "",
            ),
            (
                r#"{"jsonrpc":"2.0","id":1,"result":{"contents":[{"uri":"a","_meta":{}}]}}"#,
                "",
            ),
            (
                r#"{"jsonrpc":"2.0","id":1,"result":{"contents":[{"uri":"a"}],"x":1}}"#,
                "",
            ),
            (
                r#"{"jsonrpc":"2.0","id":1,"result":{"contents":[{"uri":"a"}]},"params":{}}"#,
                "",
            ),
            // A page: every entry's `uri`, beside scalars and inert icons.
            (
                r#"{"jsonrpc":"2.0","id":1,"result":{"nextCursor":"c","resources":[{"uri":"a","size":12,"name":"n","icons":[]},{"name":"m","uri":"b\/c"}]}}"#,
                "page=a,b/c",
            ),
            (
                r#"{"jsonrpc":"2.0","id":1,"result":{"resources":[]}}"#,
                "page=",
            ),
            // A number whose text is an object to serde_json is still a number.
            (
                r#"{"jsonrpc":"2.0","id":1,"result":{"total":1e400,"resources":[{"uri":"a","size":-0.5}]}}"#,
                "page=a",
            ),
            // Not in the page path's shape: nothing.
            (
                r#"{"jsonrpc":"2.0","id":1,"result":{"resources":[{"uri":"a","icons":[{}]}]}}"#,
                "",
            ),
            (
                r#"{"jsonrpc":"2.0","id":1,"result":{"resources":[{"uri":"a","url":"b"}]}}"#,
                "",
            ),
            (
                r#"{"jsonrpc":"2.0","id":1,"result":{"resources":[{"uri":"a"},"b"]}}"#,
                "",
            ),
            (
                r#"{"jsonrpc":"2.0","id":1,"result":{"resources":[{"uri":"a"},{"name":"b"}]}}"#,
                "",
            ),
            (
                r#"{"jsonrpc":"2.0","id":1,"result":{"resources":[{"uri":"a"}],"_meta":{}}}"#,
                "",
            ),
            (
                r#"{"jsonrpc":"2.0","id":1,"result":{"resources":{"uri":"a"}}}"#,
                "",
            ),
            (
                r#"{"jsonrpc":"2.0","id":1,"result":{"resources":[{"uri":"a"}],"contents":[]}}"#,
                "",
            ),
            (r#"{"jsonrpc":"2.0","id":1,"result":[1]}"#, ""),
        ];
        for (text, want) in cases {
            assert_eq!(captured(text), want, "capturing {text}");
        }
    }
}
