//! The scan's checks as a layer over serde_json's deserializer: [`Checked`] wraps it so that
//! whatever `Deserialize` runs beneath (`serde_json::Value`'s own, to build a message's value
//! in the scan's one pass; `IgnoredAny`, to check a value and keep nothing) sees only what the
//! scan accepts. Every object's keys go through [`KeySet::insert`] (duplicates and escaped
//! serde_json marker keys refused, in the scan's one key buffer), and every value is read with
//! `deserialize_any`, so every string is decoded (lone surrogates and control characters
//! refused) even where the type beneath would skip it.
//!
//! Why a layer and not a visitor of its own: `Value` built beneath it is `Value`'s own reading
//! (numbers with `arbitrary_precision`, keys in document order with `preserve_order`), so the
//! value the scan builds is the one `serde_json::from_str` builds, by construction.

use std::borrow::Cow;
use std::fmt;
use std::marker::PhantomData;

use serde::de::{
    self, Deserialize, DeserializeSeed, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor,
};
use serde_json::Value;

use super::{KeyBuf, KeySet};

/// `D`, checked as the scan checks (see the module docs).
pub(super) struct Checked<'k, 'de, D> {
    de: D,
    keys: &'k mut KeyBuf<'de>,
}

impl<'de, D: Deserializer<'de>> Deserializer<'de> for Checked<'_, 'de, D> {
    type Error = D::Error;
    fn deserialize_any<V: Visitor<'de>>(self, v: V) -> Result<V::Value, D::Error> {
        self.de.deserialize_any(Checking { v, keys: self.keys })
    }
    serde::forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string bytes byte_buf
        option unit unit_struct newtype_struct seq tuple tuple_struct map struct enum
        identifier ignored_any
    }
}

/// A seed read beneath [`Checked`], in the scan's key buffer.
pub(super) struct CheckedSeed<'k, 'de, S> {
    pub(super) seed: S,
    pub(super) keys: &'k mut KeyBuf<'de>,
}

impl<'de, S: DeserializeSeed<'de>> DeserializeSeed<'de> for CheckedSeed<'_, 'de, S> {
    type Value = S::Value;
    fn deserialize<D: Deserializer<'de>>(self, de: D) -> Result<S::Value, D::Error> {
        self.seed.deserialize(Checked {
            de,
            keys: self.keys,
        })
    }
}

/// Any value, checked, kept as a `Value` (read by `Value`'s own `Deserialize`).
pub(super) fn value<'k, 'de>(
    keys: &'k mut KeyBuf<'de>,
) -> CheckedSeed<'k, 'de, PhantomData<Value>> {
    CheckedSeed {
        seed: PhantomData,
        keys,
    }
}

/// Any value, checked, kept as nothing.
pub(super) fn check<'k, 'de>(keys: &'k mut KeyBuf<'de>) -> CheckedSeed<'k, 'de, Nothing> {
    CheckedSeed {
        seed: Nothing,
        keys,
    }
}

/// The rest of an array a visitor does not read, checked.
pub(super) fn skip_seq<'de, A: SeqAccess<'de>>(
    keys: &mut KeyBuf<'de>,
    seq: A,
) -> Result<(), A::Error> {
    Checking {
        v: IgnoredAny,
        keys,
    }
    .visit_seq(seq)
    .map(drop)
}

/// The rest of an object a visitor does not read, checked.
pub(super) fn skip_map<'de, A: MapAccess<'de>>(
    keys: &mut KeyBuf<'de>,
    map: A,
) -> Result<(), A::Error> {
    Checking {
        v: IgnoredAny,
        keys,
    }
    .visit_map(map)
    .map(drop)
}

/// `IgnoredAny`, as a seed of nothing.
pub(super) struct Nothing;

impl<'de> DeserializeSeed<'de> for Nothing {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, de: D) -> Result<(), D::Error> {
        IgnoredAny::deserialize(de).map(drop)
    }
}

/// The visitor beneath, with every object and array it is handed checked.
struct Checking<'k, 'de, V> {
    v: V,
    keys: &'k mut KeyBuf<'de>,
}

impl<'de, V: Visitor<'de>> Visitor<'de> for Checking<'_, 'de, V> {
    type Value = V::Value;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.v.expecting(f)
    }
    fn visit_bool<E: de::Error>(self, b: bool) -> Result<V::Value, E> {
        self.v.visit_bool(b)
    }
    fn visit_i64<E: de::Error>(self, n: i64) -> Result<V::Value, E> {
        self.v.visit_i64(n)
    }
    fn visit_u64<E: de::Error>(self, n: u64) -> Result<V::Value, E> {
        self.v.visit_u64(n)
    }
    fn visit_f64<E: de::Error>(self, n: f64) -> Result<V::Value, E> {
        self.v.visit_f64(n)
    }
    fn visit_str<E: de::Error>(self, s: &str) -> Result<V::Value, E> {
        self.v.visit_str(s)
    }
    fn visit_borrowed_str<E: de::Error>(self, s: &'de str) -> Result<V::Value, E> {
        self.v.visit_borrowed_str(s)
    }
    fn visit_string<E: de::Error>(self, s: String) -> Result<V::Value, E> {
        self.v.visit_string(s)
    }
    fn visit_unit<E: de::Error>(self) -> Result<V::Value, E> {
        self.v.visit_unit()
    }
    fn visit_none<E: de::Error>(self) -> Result<V::Value, E> {
        self.v.visit_none()
    }
    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<V::Value, A::Error> {
        self.v.visit_seq(CheckedSeq {
            seq,
            keys: self.keys,
        })
    }
    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<V::Value, A::Error> {
        self.v.visit_map(CheckedMap {
            map,
            keys: KeySet::new(self.keys),
        })
    }
}

struct CheckedSeq<'k, 'de, A> {
    seq: A,
    keys: &'k mut KeyBuf<'de>,
}

impl<'de, A: SeqAccess<'de>> SeqAccess<'de> for CheckedSeq<'_, 'de, A> {
    type Error = A::Error;
    fn next_element_seed<T: DeserializeSeed<'de>>(
        &mut self,
        seed: T,
    ) -> Result<Option<T::Value>, A::Error> {
        self.seq.next_element_seed(CheckedSeed {
            seed,
            keys: &mut *self.keys,
        })
    }
    fn size_hint(&self) -> Option<usize> {
        self.seq.size_hint()
    }
}

/// An object: each key recorded in its [`KeySet`] before the visitor beneath sees it.
struct CheckedMap<'k, 'de, A> {
    map: A,
    keys: KeySet<'k, 'de>,
}

impl<'de, A: MapAccess<'de>> MapAccess<'de> for CheckedMap<'_, 'de, A> {
    type Error = A::Error;
    fn next_key_seed<K: DeserializeSeed<'de>>(
        &mut self,
        seed: K,
    ) -> Result<Option<K::Value>, A::Error> {
        self.map.next_key_seed(KeyRecord {
            v: seed,
            keys: &mut self.keys,
        })
    }
    fn next_value_seed<V: DeserializeSeed<'de>>(&mut self, seed: V) -> Result<V::Value, A::Error> {
        self.map.next_value_seed(CheckedSeed {
            seed,
            keys: self.keys.nested(),
        })
    }
    fn size_hint(&self) -> Option<usize> {
        self.map.size_hint()
    }
}

/// A key, recorded (and refused when repeated or a marker with escapes) on its way to the
/// seed, deserializer and visitor beneath: one type for the three steps.
struct KeyRecord<'s, 'k, 'de, T> {
    v: T,
    keys: &'s mut KeySet<'k, 'de>,
}

impl<'de, K: DeserializeSeed<'de>> DeserializeSeed<'de> for KeyRecord<'_, '_, 'de, K> {
    type Value = K::Value;
    fn deserialize<D: Deserializer<'de>>(self, de: D) -> Result<K::Value, D::Error> {
        self.v.deserialize(KeyRecord {
            v: de,
            keys: self.keys,
        })
    }
}

impl<'de, D: Deserializer<'de>> Deserializer<'de> for KeyRecord<'_, '_, 'de, D> {
    type Error = D::Error;
    fn deserialize_any<V: Visitor<'de>>(self, v: V) -> Result<V::Value, D::Error> {
        self.v.deserialize_str(KeyRecord { v, keys: self.keys })
    }
    serde::forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string bytes byte_buf
        option unit unit_struct newtype_struct seq tuple tuple_struct map struct enum
        identifier ignored_any
    }
}

impl<'de, V: Visitor<'de>> Visitor<'de> for KeyRecord<'_, '_, 'de, V> {
    type Value = V::Value;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.v.expecting(f)
    }
    fn visit_borrowed_str<E: de::Error>(self, s: &'de str) -> Result<V::Value, E> {
        self.keys.insert(Cow::Borrowed(s))?;
        self.v.visit_borrowed_str(s)
    }
    fn visit_str<E: de::Error>(self, s: &str) -> Result<V::Value, E> {
        self.keys.insert(Cow::Owned(s.to_owned()))?;
        self.v.visit_str(s)
    }
    fn visit_string<E: de::Error>(self, s: String) -> Result<V::Value, E> {
        self.keys.insert(Cow::Owned(s.clone()))?;
        self.v.visit_string(s)
    }
}
