//! A JSON object edited member by member without building its values: each member is kept as
//! its raw text (a slice of the message it came from) unless replaced, so a stateless request
//! of any size costs one pass over its text and a list of its top-level members, never a value
//! tree. Used for the members the stateless handler rewrites (`id`, `params.requestState`,
//! `params.inputResponses`) while everything else is forwarded as the client wrote it.

use std::borrow::Cow;
use std::fmt;

use serde::de::{Deserialize, Deserializer, MapAccess, Visitor};
use serde_json::value::RawValue;

/// An object's members, in order: key (decoded) and value (raw JSON text).
#[derive(Debug, Clone, Default)]
pub struct Members<'a>(pub Vec<(Cow<'a, str>, Cow<'a, str>)>);

/// A key, borrowed from the text when it has no escapes.
#[derive(serde::Deserialize)]
struct Key<'a>(#[serde(borrow)] Cow<'a, str>);

impl<'de> Deserialize<'de> for Members<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Members<'de>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a JSON object")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
                let mut out = Vec::new();
                while let Some(Key(k)) = map.next_key::<Key<'de>>()? {
                    let v: &'de RawValue = map.next_value()?;
                    out.push((k, Cow::Borrowed(v.get())));
                }
                Ok(Members(out))
            }
        }
        d.deserialize_map(V)
    }
}

impl<'a> Members<'a> {
    /// Reads an object's members from its text; `None` if it is not an object.
    pub fn parse(text: &'a str) -> Option<Members<'a>> {
        serde_json::from_str(text).ok()
    }

    /// The raw text of member `key`.
    pub fn get(&self, key: &str) -> Option<&str> {
        self.0
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_ref())
    }

    /// Sets member `key` to the raw JSON `value` (in place, or appended).
    pub fn set(&mut self, key: &str, value: String) {
        match self.0.iter_mut().find(|(k, _)| k == key) {
            Some((_, v)) => *v = Cow::Owned(value),
            None => self.0.push((Cow::Owned(key.to_owned()), Cow::Owned(value))),
        }
    }

    /// Sets member `key` to the raw JSON `value`, or removes it (`None`).
    pub fn put(&mut self, key: &str, value: Option<String>) {
        match value {
            Some(v) => self.set(key, v),
            None => drop(self.remove(key)),
        }
    }

    /// Removes member `key`; its raw text, if it was there.
    pub fn remove(&mut self, key: &str) -> Option<Cow<'a, str>> {
        let at = self.0.iter().position(|(k, _)| k == key)?;
        Some(self.0.remove(at).1)
    }

    /// Whether there is no member.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The object's JSON text.
    pub fn to_json(&self) -> String {
        let len: usize = self.0.iter().map(|(k, v)| k.len() + v.len() + 4).sum();
        let mut out = String::with_capacity(len + 2);
        out.push('{');
        for (i, (k, v)) in self.0.iter().enumerate() {
            if i > 0 {
                out.push(',');
            }
            // A key is a string: its JSON form cannot fail.
            out.push_str(&serde_json::to_string(k.as_ref()).unwrap_or_default());
            out.push(':');
            out.push_str(v);
        }
        out.push('}');
        out
    }

    /// Owned, to outlive the text it was read from.
    pub fn into_owned(self) -> Members<'static> {
        Members(
            self.0
                .into_iter()
                .map(|(k, v)| (Cow::Owned(k.into_owned()), Cow::Owned(v.into_owned())))
                .collect(),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn members_round_trip_and_edit_without_touching_the_rest() {
        let text = r#"{"jsonrpc":"2.0","id":"a","params":{"x":[1, 2.50,{"y":null}]},"k\"q":true}"#;
        let mut m = Members::parse(text).unwrap();
        assert_eq!(m.get("params"), Some(r#"{"x":[1, 2.50,{"y":null}]}"#));
        assert_eq!(m.get("k\"q"), Some("true"));
        m.set("id", "7".into());
        m.remove("jsonrpc");
        m.set("new", "[]".into());
        let out = m.to_json();
        assert_eq!(
            out,
            r#"{"id":7,"params":{"x":[1, 2.50,{"y":null}]},"k\"q":true,"new":[]}"#
        );
        assert!(Members::parse("[1]").is_none());
    }
}
