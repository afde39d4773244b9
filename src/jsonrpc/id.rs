//! JSON-RPC request ids: a string or an integer, compared by value, echoed as received.
//!
//! `"1"` and `1` are different ids; `"a"` and `"\u0061"` are the same id. An integer id keeps
//! its exact digits (a 25-digit id is never turned into a float), and every id keeps the exact
//! text it arrived with, so a response rootfence builds itself echoes the id byte for byte.

use std::fmt;

use serde_json::value::RawValue;

/// The value of an id, for matching requests to responses.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum IdKey {
    /// A string id, unescaped.
    Str(Box<str>),
    /// An integer id, as its JSON digits (optionally with a leading `-`).
    Int(Box<str>),
}

/// A request id: its value plus the exact JSON text it arrived as.
#[derive(Clone, Debug)]
pub struct Id {
    key: IdKey,
    raw: Box<str>,
}

impl PartialEq for Id {
    fn eq(&self, other: &Self) -> bool {
        self.key == other.key
    }
}

impl Eq for Id {}

impl std::hash::Hash for Id {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.key.hash(state);
    }
}

/// Why an id was refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum IdError {
    /// `null` where an id is required.
    #[error("id is null")]
    Null,
    /// A number with a fraction or an exponent.
    #[error("id is a number but not an integer")]
    NotInteger,
    /// An object, array or boolean.
    #[error("id must be a string or an integer")]
    WrongType,
}

impl Id {
    /// Reads an id from its raw JSON text (already known to be valid JSON).
    pub fn from_raw(raw: &RawValue) -> Result<Id, IdError> {
        let text = raw.get();
        let key = match text.as_bytes().first() {
            Some(b'"') => {
                let s: String = serde_json::from_str(text).map_err(|_| IdError::WrongType)?;
                IdKey::Str(s.into())
            }
            Some(b'-' | b'0'..=b'9') => {
                if text.bytes().any(|b| matches!(b, b'.' | b'e' | b'E')) {
                    return Err(IdError::NotInteger);
                }
                IdKey::Int(text.into())
            }
            Some(b'n') => return Err(IdError::Null),
            _ => return Err(IdError::WrongType),
        };
        Ok(Id {
            key,
            raw: text.into(),
        })
    }

    /// A string id made by rootfence itself.
    pub fn from_string(s: &str) -> Id {
        let raw = serde_json::to_string(s).expect("a string always serializes");
        Id {
            key: IdKey::Str(s.into()),
            raw: raw.into(),
        }
    }

    /// The id's value, for matching.
    pub fn key(&self) -> &IdKey {
        &self.key
    }

    /// The exact JSON text the id arrived as.
    pub fn raw(&self) -> &str {
        &self.raw
    }

    /// The id as a JSON value (numbers keep their digits).
    pub fn to_value(&self) -> serde_json::Value {
        serde_json::from_str(&self.raw).expect("an id's raw text is valid JSON")
    }
}

impl fmt::Display for Id {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.raw)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn id(text: &str) -> Result<Id, IdError> {
        let raw: Box<RawValue> = serde_json::from_str(text).unwrap();
        Id::from_raw(&raw)
    }

    #[test]
    fn id_table() {
        assert_eq!(id("1").unwrap().key(), &IdKey::Int("1".into()));
        assert_eq!(id("-7").unwrap().key(), &IdKey::Int("-7".into()));
        assert_eq!(id("\"1\"").unwrap().key(), &IdKey::Str("1".into()));
        assert_ne!(id("1").unwrap(), id("\"1\"").unwrap());
        assert_eq!(id("\"a\"").unwrap(), id("\"\\u0061\"").unwrap());
        assert_eq!(id("\"\\u0061\"").unwrap().raw(), "\"\\u0061\"");
        let big = "1234567890123456789012345";
        assert_eq!(id(big).unwrap().raw(), big);
        assert_eq!(id(big).unwrap().to_value().to_string(), big);
        assert_eq!(id("1.0").unwrap_err(), IdError::NotInteger);
        assert_eq!(id("1e3").unwrap_err(), IdError::NotInteger);
        assert_eq!(id("null").unwrap_err(), IdError::Null);
        assert_eq!(id("true").unwrap_err(), IdError::WrongType);
        assert_eq!(id("{}").unwrap_err(), IdError::WrongType);
        assert_eq!(id("[1]").unwrap_err(), IdError::WrongType);
    }

    #[test]
    fn own_ids_escape_properly() {
        let i = Id::from_string("a\"b");
        assert_eq!(i.raw(), r#""a\"b""#);
        assert_eq!(i.key(), &IdKey::Str("a\"b".into()));
    }
}
