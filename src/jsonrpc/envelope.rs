//! The strict envelope scan: one pass over a line that validates it as JSON, rejects
//! duplicate object keys at every depth, and reads just what the relay needs: the message
//! kind, the method, the id (kept byte-exact) and, for 2026-07-28 requests, the protocol
//! version and client capabilities in `params._meta`.
//!
//! Why duplicate keys are refused: `{"uri":"/root/a","uri":"/etc/passwd"}` means the second
//! value to `serde_json::Value`, Node and Python, but a checker that reads the first and a
//! server that reads the last disagree on which file is meant. Refusing such messages outright
//! removes that parser differential (`protocol-facts.md` §2.7).
//!
//! Why serde_json's private marker keys spelled with escapes are refused: with the
//! `arbitrary_precision` and `raw_value` features rootfence builds serde_json with, `Value`
//! reads an object whose first key decodes to `$serde_json::private::Number` or `…::RawValue`
//! as a number or as the JSON in its string, while every other parser sees an object. The
//! relay finds such a key written plainly by a byte search and then forwards only the
//! re-serialized value (`verbatim_ok`); spelled with escapes
//! (`"$\u0073erde_json::private::RawValue"`) it would slip past that search, so a decoded key
//! that had escapes and is a marker is refused here, where every key of every message passes
//! once. (A marker key without escapes also reaches this scan for every number, which is how
//! `arbitrary_precision` hands numbers to a visitor; those are told apart by having had no
//! escapes to decode.) No MCP message has such a key.
//!
//! Errors split as JSON-RPC does: text that is not JSON is a parse error (`-32700`), JSON that
//! is not a valid message (wrong shape, wrong types, duplicate keys) is an invalid request
//! (`-32600`), with the id when one can still be read.

use std::borrow::Cow;
use std::collections::HashSet;
use std::fmt;

use serde::de::{self, DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::value::RawValue;
use serde_json::{Map, Value};

use super::id::{Id, IdError};

pub use capture::{Capture, Rules};

/// `params._meta` key carrying the protocol version on 2026-07-28 requests.
pub const META_PROTOCOL_VERSION: &str = "io.modelcontextprotocol/protocolVersion";
/// `params._meta` key carrying the client capabilities on 2026-07-28 requests.
pub const META_CLIENT_CAPABILITIES: &str = "io.modelcontextprotocol/clientCapabilities";

/// What kind of JSON-RPC message a line holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// A request: `method` and `id`.
    Request,
    /// A notification: `method`, no `id`.
    Notification,
    /// A success response: `result` and `id`.
    Response,
    /// An error response: `error`, and an `id` unless it could not be known.
    ErrorResponse,
}

impl Kind {
    /// True for both kinds of response.
    pub fn is_response(self) -> bool {
        matches!(self, Kind::Response | Kind::ErrorResponse)
    }
}

/// The parts of one JSON-RPC message that the relay routes on.
#[derive(Debug)]
pub struct Envelope<'a> {
    /// The message kind.
    pub kind: Kind,
    /// The id of a request or response (`None` for notifications and for error responses
    /// whose id was `null` or missing).
    pub id: Option<Id>,
    /// The method of a request or notification.
    pub method: Option<Cow<'a, str>>,
    /// `params._meta["io.modelcontextprotocol/protocolVersion"]`, when present.
    pub meta_protocol_version: Option<Cow<'a, str>>,
    /// `params._meta["io.modelcontextprotocol/clientCapabilities"]`, when present (already
    /// checked for duplicate keys).
    pub meta_client_capabilities: Option<Cow<'a, RawValue>>,
    /// What the enforcer's text paths read, when the scan was given their [`Rules`].
    pub capture: Capture<'a>,
    /// The whole message, when the scan built it in its pass ([`Build`]): equal to
    /// `serde_json::from_str` of the text, which holds no serde_json marker key. Boxed: the
    /// envelope is moved on its way out of the scan, and each byte it grows by is copied for
    /// every message, built or not (issue 25).
    pub value: Option<Box<Map<String, Value>>>,
}

/// What is known when the scan reaches a message's top-level `params` or `result` (the
/// member that decides whether it builds the message's value, see [`Build`]).
#[derive(Clone, Copy, Debug)]
pub enum Deciding<'a> {
    /// `params` after the method: of a request when its id came before, else (so far) of a
    /// notification.
    Method(&'a str, Kind),
    /// `result`: the id of the response as written, when it came before (read only when the
    /// answer matters: most responses are decided without it).
    Response(Option<&'a RawValue>),
}

/// Asked once per message, at its deciding member: whether the scan builds the message's
/// `serde_json::Value` in the same pass (issue 25). The relay says yes for a message that
/// takes the value path; a message nobody wants is only checked, as before. A message whose
/// deciding member comes before what decides (a `result` before its `id`, as the TypeScript
/// SDK writes it) is asked with what is known, and the relay guesses; a wrong `no` costs the
/// value path the parse after the scan.
pub type Build<'b> = &'b (dyn Fn(Deciding<'_>) -> bool + Sync);

/// Whether a text holds serde_json's private marker keys written plainly (see the module
/// docs): the relay forwards only the re-serialized value of such a text, and the scan builds
/// no value of it. The searcher is built once, not per message.
pub fn has_private_marker(text: &str) -> bool {
    static FINDER: std::sync::LazyLock<memchr::memmem::Finder<'static>> =
        std::sync::LazyLock::new(|| memchr::memmem::Finder::new(b"serde_json::private"));
    FINDER.find(text.as_bytes()).is_some()
}

/// A scanned line: one message, or a batch (2025-03-26) whose elements are scanned one by one
/// with [`scan_message`].
#[derive(Debug)]
// A single message is the common case and lives on the stack for one call: boxing it to
// shrink the rare batch would allocate for every message.
#[allow(clippy::large_enum_variant)]
pub enum Scanned<'a> {
    /// A single message.
    Single(Envelope<'a>),
    /// A non-empty batch; each element's exact text.
    Batch(Vec<&'a RawValue>),
}

/// Why a line is not an acceptable JSON-RPC message.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ScanError {
    /// Not JSON at all (`-32700`).
    #[error("not valid JSON: {0}")]
    Parse(String),
    /// JSON, but not a valid message (`-32600`), with its id when that could be read.
    #[error("not a valid JSON-RPC message: {reason}")]
    Invalid {
        /// The message's id, if one could be read unambiguously.
        id: Option<Id>,
        /// Whether the message has a top-level `method` (so it meant to be a request or a
        /// notification, not a response).
        has_method: bool,
        /// What is wrong, for the error message and the diagnostics.
        reason: String,
    },
}

impl ScanError {
    /// The JSON-RPC error code for this error.
    pub fn code(&self) -> i64 {
        match self {
            ScanError::Parse(_) => super::error::PARSE_ERROR,
            ScanError::Invalid { .. } => super::error::INVALID_REQUEST,
        }
    }

    /// The id of the offending message, when known.
    pub fn id(&self) -> Option<&Id> {
        match self {
            ScanError::Parse(_) => None,
            ScanError::Invalid { id, .. } => id.as_ref(),
        }
    }
}

/// Scans one line: a message or a batch.
pub fn scan(text: &str) -> Result<Scanned<'_>, ScanError> {
    scan_with(text, None, None)
}

/// [`scan`], capturing what the text paths read (see [`Capture`]) when given their rules, and
/// building the value of a message `build` asks for.
pub fn scan_with<'a>(
    text: &'a str,
    rules: Option<&'static Rules>,
    build: Option<Build<'_>>,
) -> Result<Scanned<'a>, ScanError> {
    if text.trim_start().starts_with('[') {
        let elements: Vec<&RawValue> =
            serde_json::from_str(text).map_err(|e| from_json_error(e, text))?;
        if elements.is_empty() {
            return Err(ScanError::Invalid {
                id: None,
                has_method: false,
                reason: "empty batch".into(),
            });
        }
        return Ok(Scanned::Batch(elements));
    }
    scan_message_with(text, rules, build).map(Scanned::Single)
}

/// Scans one message (a batch element, or a line known not to be a batch).
pub fn scan_message(text: &str) -> Result<Envelope<'_>, ScanError> {
    scan_message_with(text, None, None)
}

/// [`scan_message`], capturing what the text paths read when given their rules, and building
/// the value of a message `build` asks for.
pub fn scan_message_with<'a>(
    text: &'a str,
    rules: Option<&'static Rules>,
    build: Option<Build<'_>>,
) -> Result<Envelope<'a>, ScanError> {
    // A message refused while building, or one whose verdict only the scan without the
    // build tells (`RawEnvelope::redo`), is scanned again without it: the same verdict and
    // the same error, by construction. Only invalid messages pay twice.
    if build.is_some()
        && let Ok(raw) = scan_raw(text, rules, build)
        && !raw.redo
        && let Ok(env) = raw.classify()
    {
        return Ok(env);
    }
    scan_raw(text, rules, None)?.classify()
}

fn scan_raw<'a>(
    text: &'a str,
    rules: Option<&'static Rules>,
    build: Option<Build<'_>>,
) -> Result<RawEnvelope<'a>, ScanError> {
    let mut de = serde_json::Deserializer::from_str(text);
    let mut keys = KeyBuf::with_capacity(16);
    let mut env = RawEnvelope::default();
    let visitor = EnvelopeVisitor {
        keys: &mut keys,
        rules,
        build,
        text,
        env: &mut env,
    };
    de.deserialize_any(visitor)
        .and_then(|()| de.end())
        .map_err(|e| from_json_error(e, text))?;
    Ok(env)
}

/// Maps a serde_json error to the JSON-RPC error class. Syntax and end-of-input errors mean
/// "not JSON"; data errors (types, duplicate keys) mean "not a valid message", and then the id
/// is recovered with a lenient read when it is unambiguous.
fn from_json_error(e: serde_json::Error, text: &str) -> ScanError {
    use serde_json::error::Category;
    match e.classify() {
        Category::Syntax | Category::Eof | Category::Io => ScanError::Parse(e.to_string()),
        Category::Data => {
            let (id, has_method) = lenient_id(text);
            ScanError::Invalid {
                id,
                has_method,
                reason: e.to_string(),
            }
        }
    }
}

/// The top-level id of a message that failed validation, if it has exactly one valid id, and
/// whether it has a `method`. A duplicated top-level `id` or `method` makes the derive fail, so
/// an ambiguous id is never guessed.
fn lenient_id(text: &str) -> (Option<Id>, bool) {
    #[derive(serde::Deserialize)]
    struct IdOnly<'a> {
        #[serde(borrow)]
        id: Option<&'a RawValue>,
        method: Option<de::IgnoredAny>,
    }
    match serde_json::from_str::<IdOnly<'_>>(text) {
        Ok(only) => (
            only.id.and_then(|raw| Id::from_raw(raw).ok()),
            only.method.is_some(),
        ),
        Err(_) => (None, false),
    }
}

/// What the envelope visitor collected, before the shape rules are applied.
#[derive(Default)]
struct RawEnvelope<'a> {
    jsonrpc: Option<Cow<'a, str>>,
    method: Option<Cow<'a, str>>,
    id: Option<&'a RawValue>,
    params: Option<Params<'a>>,
    result: bool,
    error: bool,
    /// A member other than the six JSON-RPC names (the read paths take none).
    other: bool,
    /// `result`'s page and read item (see [`Capture`]).
    captured: capture::Captured<'a>,
    /// The message's value, while the scan builds it (see [`Build`]).
    value: Option<Box<Map<String, Value>>>,
    /// What was built does not tell the scan's verdict (see [`Params::of`]).
    redo: bool,
}

impl<'a> RawEnvelope<'a> {
    fn classify(self) -> Result<Envelope<'a>, ScanError> {
        let has_method = self.method.is_some();
        let invalid = |id, reason: &str| ScanError::Invalid {
            id,
            has_method,
            reason: reason.to_owned(),
        };
        let id = self.id.map(Id::from_raw);
        let known_id = || id.clone().and_then(Result::ok);
        match self.jsonrpc.as_deref() {
            Some("2.0") => {}
            Some(_) => return Err(invalid(known_id(), "\"jsonrpc\" must be \"2.0\"")),
            None => return Err(invalid(known_id(), "missing \"jsonrpc\": \"2.0\"")),
        }
        let has_params = self.params.is_some();
        let params = self.params.unwrap_or_default();
        if let Some(method) = self.method {
            if self.result || self.error {
                return Err(invalid(
                    known_id(),
                    "a message with a method cannot carry \"result\" or \"error\"",
                ));
            }
            let (kind, id) = match id {
                None => (Kind::Notification, None),
                Some(Ok(id)) => (Kind::Request, Some(id)),
                Some(Err(e)) => return Err(invalid(None, &e.to_string())),
            };
            return Ok(Envelope {
                kind,
                id,
                method: Some(method),
                meta_protocol_version: params.meta_version,
                meta_client_capabilities: params.meta_caps,
                capture: Capture {
                    uri: params.uri.flatten().filter(|_| !self.other),
                    ..Capture::default()
                },
                value: self.value,
            });
        }
        if params.meta_version.is_some() || params.meta_caps.is_some() {
            return Err(invalid(known_id(), "a response cannot carry \"params\""));
        }
        let (kind, id) = match (self.result, self.error, id) {
            (true, true, id) => {
                return Err(invalid(
                    id.and_then(Result::ok),
                    "a response cannot carry both \"result\" and \"error\"",
                ));
            }
            (false, false, id) => {
                return Err(invalid(
                    id.and_then(Result::ok),
                    "missing \"method\", \"result\" or \"error\"",
                ));
            }
            (true, false, Some(Ok(id))) => (Kind::Response, Some(id)),
            (true, false, None) => return Err(invalid(None, "a response needs an \"id\"")),
            // An error response may have a null or missing id when the request's id could not
            // be read (2025-11-25 made the missing form explicit).
            (false, true, Some(Ok(id))) => (Kind::ErrorResponse, Some(id)),
            (false, true, None | Some(Err(IdError::Null))) => (Kind::ErrorResponse, None),
            (_, _, Some(Err(e))) => return Err(invalid(None, &e.to_string())),
        };
        let (page, item) = self.captured;
        Ok(Envelope {
            kind,
            id,
            method: None,
            meta_protocol_version: None,
            meta_client_capabilities: None,
            capture: Capture {
                uri: None,
                item: item.filter(|_| !self.other && !has_params),
                page,
            },
            value: self.value,
        })
    }
}

/// An object key or string value, borrowed from the input when it has no escapes (also the
/// enforcer's borrowed page read, `enforce/page.rs`).
pub(crate) struct Key<'de>(pub(crate) Cow<'de, str>);

impl<'de> de::Deserialize<'de> for Key<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Key<'de>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a string")
            }
            fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Key<'de>, E> {
                Ok(Key(Cow::Borrowed(v)))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Key<'de>, E> {
                Ok(Key(Cow::Owned(v.to_owned())))
            }
            fn visit_string<E: de::Error>(self, v: String) -> Result<Key<'de>, E> {
                Ok(Key(Cow::Owned(v)))
            }
        }
        d.deserialize_str(V)
    }
}

/// The keys of the objects a scan is inside, innermost last: one buffer for the whole scan.
/// An object's keys are `buf[start..]` while it is read, and are dropped when it ends (its
/// nested objects push above them and truncate back), so a message of thousands of objects
/// (a 10,000-entry `resources/list` page) costs one growing buffer, not an allocation per
/// object.
type KeyBuf<'de> = Vec<Cow<'de, str>>;

/// The keys of one object, to detect duplicates. Small objects (almost all of them) are
/// searched linearly in their part of the scan's [`KeyBuf`]; large ones switch to a hash set
/// of their own.
struct KeySet<'k, 'de> {
    buf: &'k mut KeyBuf<'de>,
    start: usize,
    large: Option<HashSet<Cow<'de, str>>>,
}

const LINEAR_KEYS: usize = 16;

/// The prefix of serde_json's private marker keys.
const SERDE_PRIVATE: &str = "$serde_json::private::";

impl<'k, 'de> KeySet<'k, 'de> {
    fn new(buf: &'k mut KeyBuf<'de>) -> Self {
        let start = buf.len();
        KeySet {
            buf,
            start,
            large: None,
        }
    }

    /// This object's keys so far, in order (`None` once it is large).
    fn recorded(&self) -> Option<&[Cow<'de, str>]> {
        self.large.is_none().then(|| &self.buf[self.start..])
    }

    /// Whether no key of this object was recorded yet.
    fn is_empty(&self) -> bool {
        self.large.is_none() && self.buf.len() == self.start
    }

    /// The scan's buffer, for the objects nested in this one's values: they push above
    /// this object's keys and are gone again when they end.
    fn nested(&mut self) -> &mut KeyBuf<'de> {
        self.buf
    }

    /// Records a key (cloning a borrowed key is free); a repeat is an error naming it, and
    /// so is serde_json's private marker spelled with escapes (see the module docs).
    fn insert<E: de::Error>(&mut self, key: Cow<'de, str>) -> Result<(), E> {
        // Owned: the key had escapes to decode (an unescaped key is borrowed from the text).
        if matches!(&key, Cow::Owned(k) if k.starts_with(SERDE_PRIVATE)) {
            return Err(E::custom(format_args!(
                "reserved key {:?} (serde_json's private marker)",
                key.as_ref()
            )));
        }
        let mine = self.buf.len() - self.start;
        let repeated = match &mut self.large {
            Some(set) => set.replace(key),
            None if mine < LINEAR_KEYS => {
                let repeated = self.buf[self.start..].iter().find(|k| **k == key).cloned();
                self.buf.push(key);
                repeated
            }
            None => {
                let mut set: HashSet<_> = self.buf.drain(self.start..).collect();
                let repeated = set.replace(key);
                self.large = Some(set);
                repeated
            }
        };
        match repeated {
            None => Ok(()),
            Some(key) => Err(E::custom(format_args!("duplicate key {:?}", key.as_ref()))),
        }
    }
}

impl Drop for KeySet<'_, '_> {
    fn drop(&mut self) {
        self.buf.truncate(self.start);
    }
}

/// Accepts every scalar; used by the visitors that only care about objects.
macro_rules! accept_scalars {
    ($value:ty, $unit:expr) => {
        accept_non_strings!($value, $unit);
        fn visit_str<E: de::Error>(self, _: &str) -> Result<$value, E> {
            Ok($unit)
        }
    };
}

/// Accepts every scalar but strings.
macro_rules! accept_non_strings {
    ($value:ty, $unit:expr) => {
        fn visit_bool<E: de::Error>(self, _: bool) -> Result<$value, E> {
            Ok($unit)
        }
        fn visit_i64<E: de::Error>(self, _: i64) -> Result<$value, E> {
            Ok($unit)
        }
        fn visit_u64<E: de::Error>(self, _: u64) -> Result<$value, E> {
            Ok($unit)
        }
        fn visit_f64<E: de::Error>(self, _: f64) -> Result<$value, E> {
            Ok($unit)
        }
        fn visit_unit<E: de::Error>(self) -> Result<$value, E> {
            Ok($unit)
        }
        fn visit_none<E: de::Error>(self) -> Result<$value, E> {
            Ok($unit)
        }
    };
}

mod capture;
mod checked;

/// The top-level message object (and the text paths' rules, when they capture; the question
/// whether to build its value, when asked).
struct EnvelopeVisitor<'k, 'b, 'de> {
    keys: &'k mut KeyBuf<'de>,
    rules: Option<&'static Rules>,
    build: Option<Build<'b>>,
    text: &'de str,
    /// Filled in place: a message's envelope returned through the deserializer's layers was
    /// copied at each (issue 25: most of a read's extra CPU once the envelope grew).
    env: &'k mut RawEnvelope<'de>,
}

impl<'de> Visitor<'de> for EnvelopeVisitor<'_, '_, 'de> {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON-RPC message object")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        let mut keys = KeySet::new(self.keys);
        let env = self.env;
        let mut build = self.build;
        let rules = self.rules;
        while let Some(Key(key)) = map.next_key()? {
            keys.insert(key.clone())?;
            if let Some(ask) = build.filter(|_| matches!(&*key, "params" | "result")) {
                build = None;
                env.value = env.start(&keys, &key, ask, self.text).map(Box::new);
            }
            match key.as_ref() {
                "jsonrpc" => env.jsonrpc = Some(map.next_value::<Key<'de>>()?.0),
                "method" => env.method = Some(map.next_value::<Key<'de>>()?.0),
                "id" => env.id = Some(map.next_value::<&'de RawValue>()?),
                _ if env.value.is_some() => {
                    let member = env.built_member(&mut map, &mut keys, &key)?;
                    if let Some(value) = &mut env.value {
                        value.insert(key.into_owned(), member);
                    }
                    continue;
                }
                "params" => {
                    let seed = ReadAny(ParamsSeed(keys.nested(), rules));
                    env.params = Some(map.next_value_seed(seed)?);
                }
                "result" => {
                    match rules {
                        Some(rules) => {
                            env.captured = map.next_value_seed(ReadAny(capture::ResultSeed {
                                keys: keys.nested(),
                                rules,
                            }))?;
                        }
                        None => map.next_value_seed(checked::check(keys.nested()))?,
                    }
                    env.result = true;
                }
                "error" => {
                    map.next_value_seed(ErrorObjectSeed(keys.nested()))?;
                    env.error = true;
                }
                _ => {
                    env.other = true;
                    map.next_value_seed(checked::check(keys.nested()))?;
                }
            }
            // `jsonrpc`, `method` or `id` (read above) of a message being built.
            if let Some(mut value) = env.value.take() {
                env.value = env.read(&key).map(|member| {
                    value.insert(key.into_owned(), member);
                    value
                });
            }
        }
        Ok(())
    }
}

impl<'de> RawEnvelope<'de> {
    /// The message's value so far, when `ask` says to build it: the members before the
    /// deciding one (`key`) rebuilt from what was read of them, which the scan can for
    /// `jsonrpc`, `method` and `id` only (anything else before it: not built).
    fn start(
        &self,
        keys: &KeySet<'_, 'de>,
        key: &str,
        ask: Build<'_>,
        text: &str,
    ) -> Option<Map<String, Value>> {
        let deciding = match (key, &self.method) {
            ("params", Some(method)) => {
                let kind = match self.id {
                    Some(_) => Kind::Request,
                    None => Kind::Notification,
                };
                Deciding::Method(method, kind)
            }
            ("params", None) => return None,
            _ => Deciding::Response(self.id),
        };
        if !ask(deciding) || has_private_marker(text) {
            return None;
        }
        let (_, before) = keys.recorded()?.split_last()?;
        let mut value = Map::new();
        for k in before {
            value.insert(k.to_string(), self.read(k)?);
        }
        Some(value)
    }

    /// A member the scan reads whole (`jsonrpc`, `method`, `id`) as a value; `None` for any
    /// other (the scan keeps nothing of it to build from).
    fn read(&self, key: &str) -> Option<Value> {
        Some(match key {
            "jsonrpc" => Value::String(self.jsonrpc.as_deref()?.to_owned()),
            "method" => Value::String(self.method.as_deref()?.to_owned()),
            "id" => serde_json::from_str(self.id?.get()).ok()?,
            _ => return None,
        })
    }

    /// One member of a message whose value is built, other than those [`Self::read`] builds
    /// from what the scan read: read as the scan reads it, and built (every value beneath
    /// [`checked::Checked`]).
    fn built_member<A: MapAccess<'de>>(
        &mut self,
        map: &mut A,
        keys: &mut KeySet<'_, 'de>,
        key: &str,
    ) -> Result<Value, A::Error> {
        let value = map.next_value_seed(checked::value(keys.nested()))?;
        match key {
            "params" => self.params = Some(Params::of(&value, &mut self.redo)),
            "result" => self.result = true,
            // Its exact verdict is the scan's without the build.
            "error" => (self.error, self.redo) = (true, true),
            _ => self.other = true,
        }
        Ok(value)
    }
}

/// What the relay reads out of `params`.
#[derive(Default)]
struct Params<'a> {
    meta_version: Option<Cow<'a, str>>,
    meta_caps: Option<Cow<'a, RawValue>>,
    /// `uri`, captured when it is the only member (see [`capture::params_uri`]).
    uri: Option<Option<Cow<'a, str>>>,
}

impl Params<'_> {
    /// What [`ParamsSeed`] reads, out of a built `params`; `redo` when only the scan without
    /// the build tells the verdict (a `params` neither object nor array, a protocol version
    /// that is not a string).
    fn of(value: &Value, redo: &mut bool) -> Self {
        let meta = match value {
            Value::Object(params) => params.get("_meta").and_then(Value::as_object),
            Value::Array(_) => None,
            _ => {
                *redo = true;
                None
            }
        };
        let Some(meta) = meta else {
            return Params::default();
        };
        let meta_version = match meta.get(META_PROTOCOL_VERSION) {
            Some(Value::String(v)) => Some(Cow::Owned(v.clone())),
            Some(_) => {
                *redo = true;
                None
            }
            None => None,
        };
        let meta_caps = meta
            .get(META_CLIENT_CAPABILITIES)
            .and_then(|caps| serde_json::value::to_raw_value(caps).ok())
            .map(Cow::Owned);
        Params {
            meta_version,
            meta_caps,
            uri: None,
        }
    }
}

/// A visitor as a seed: the value read with `deserialize_any`, so whatever it is, the
/// visitor sees it (and checks it, or refuses it with its `expecting`).
struct ReadAny<V>(V);

impl<'de, V: Visitor<'de>> DeserializeSeed<'de> for ReadAny<V> {
    type Value = V::Value;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<V::Value, D::Error> {
        d.deserialize_any(self.0)
    }
}

/// `params`: an object or an array; `_meta` is read, everything is duplicate-checked; `uri`
/// is captured when given the text paths' rules.
struct ParamsSeed<'k, 'de>(&'k mut KeyBuf<'de>, Option<&'static Rules>);

impl<'de> Visitor<'de> for ParamsSeed<'_, 'de> {
    type Value = Params<'de>;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("\"params\" as an object or an array")
    }
    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Params<'de>, A::Error> {
        checked::skip_seq(self.0, seq).map(|()| Params::default())
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Params<'de>, A::Error> {
        let mut keys = KeySet::new(self.0);
        let mut params = Params::default();
        while let Some(Key(key)) = map.next_key()? {
            keys.insert(key.clone())?;
            if key == "_meta" {
                let meta = map.next_value_seed(ReadAny(MetaSeed(keys.nested())))?;
                (params.meta_version, params.meta_caps) = (meta.meta_version, meta.meta_caps);
                params.uri = Some(None);
            } else if self.1.is_some() {
                capture::params_uri(&mut map, &mut keys, &key, &mut params.uri)?;
            } else {
                map.next_value_seed(checked::check(keys.nested()))?;
            }
        }
        Ok(params)
    }
}

/// `params._meta`: reads the 2026-07-28 protocol version and client capabilities.
struct MetaSeed<'k, 'de>(&'k mut KeyBuf<'de>);

impl<'de> Visitor<'de> for MetaSeed<'_, 'de> {
    type Value = Params<'de>;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("\"_meta\" as an object")
    }
    accept_scalars!(Params<'de>, Params::default());
    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Params<'de>, A::Error> {
        checked::skip_seq(self.0, seq).map(|()| Params::default())
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Params<'de>, A::Error> {
        let mut keys = KeySet::new(self.0);
        let mut params = Params::default();
        while let Some(Key(key)) = map.next_key()? {
            keys.insert(key.clone())?;
            match key.as_ref() {
                META_PROTOCOL_VERSION => {
                    params.meta_version = Some(map.next_value::<Key<'de>>()?.0);
                }
                META_CLIENT_CAPABILITIES => {
                    let raw: &'de RawValue = map.next_value()?;
                    // Captured raw, so check it here for the same parser differentials.
                    let mut de = serde_json::Deserializer::from_str(raw.get());
                    // The scan's one key buffer serves this text too: its keys sit above
                    // `_meta`'s and are gone when the check ends.
                    checked::check(keys.nested())
                        .deserialize(&mut de)
                        .map_err(de::Error::custom)?;
                    params.meta_caps = Some(Cow::Borrowed(raw));
                }
                _ => map.next_value_seed(checked::check(keys.nested()))?,
            }
        }
        Ok(params)
    }
}

/// `error`: an object with an integer `code` and a string `message`.
struct ErrorObjectSeed<'k, 'de>(&'k mut KeyBuf<'de>);

impl<'de> DeserializeSeed<'de> for ErrorObjectSeed<'_, 'de> {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for ErrorObjectSeed<'_, 'de> {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("\"error\" as an object with \"code\" and \"message\"")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        let mut keys = KeySet::new(self.0);
        let (mut code, mut message) = (false, false);
        while let Some(Key(key)) = map.next_key()? {
            keys.insert(key.clone())?;
            match key.as_ref() {
                "code" => {
                    let raw: &'de RawValue = map.next_value()?;
                    let t = raw.get();
                    let integer = t.starts_with(|c: char| c == '-' || c.is_ascii_digit())
                        && !t.contains(['.', 'e', 'E']);
                    if !integer {
                        return Err(de::Error::custom("\"error.code\" must be an integer"));
                    }
                    code = true;
                }
                "message" => {
                    map.next_value::<Key<'de>>()?;
                    message = true;
                }
                _ => map.next_value_seed(checked::check(keys.nested()))?,
            }
        }
        match (code, message) {
            (true, true) => Ok(()),
            (false, _) => Err(de::Error::custom("\"error\" is missing \"code\"")),
            (true, false) => Err(de::Error::custom("\"error\" is missing \"message\"")),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Capture rules for the tests: `url` is a link, icons are never inert.
    static RULES: Rules = Rules {
        link_key: |k| k == "url",
        icons_inert: |_| false,
    };

    /// Checks a JSON text for validity and duplicate keys, without keeping anything.
    fn check_value(text: &str) -> Result<(), ScanError> {
        let mut de = serde_json::Deserializer::from_str(text);
        checked::check(&mut KeyBuf::new())
            .deserialize(&mut de)
            .and_then(|()| de.end())
            .map_err(|e| from_json_error(e, text))
    }

    /// A compact description of a scan outcome, for table tests; the same with the capture
    /// on, and with every value built (asserted), which only ever add what they captured or
    /// built, never change the verdict or the error; a value built is `from_str`'s.
    fn describe(text: &str) -> String {
        let plain = describe_with(text, None, None);
        let captured = describe_with(text, Some(&RULES), None);
        assert_eq!(plain, captured, "the capture changed the scan of {text}");
        let built = describe_with(text, Some(&RULES), Some(&|_| true));
        assert_eq!(
            plain, built,
            "building the value changed the scan of {text}"
        );
        plain
    }

    fn describe_with(
        text: &str,
        rules: Option<&'static Rules>,
        build: Option<Build<'_>>,
    ) -> String {
        let scanned = scan_with(text, rules, build);
        if let (Some(_), Ok(Scanned::Single(Envelope { value: Some(v), .. }))) = (build, &scanned) {
            let parsed: Map<String, Value> =
                serde_json::from_str(text).expect("a built message parses");
            assert_eq!(**v, parsed, "the value built differs for {text}");
        }
        if let Err(e) = &scanned {
            // The same error as without the build, word for word.
            let unbuilt = scan_with(text, rules, None).err();
            assert_eq!(unbuilt.as_ref(), Some(e), "another error for {text}");
        }
        match scanned {
            Ok(Scanned::Batch(elems)) => format!("batch:{}", elems.len()),
            Ok(Scanned::Single(env)) => {
                let mut s = format!("{:?}", env.kind);
                if let Some(m) = &env.method {
                    s += &format!(" method={m}");
                }
                if let Some(id) = &env.id {
                    s += &format!(" id={}", id.raw());
                }
                if let Some(v) = &env.meta_protocol_version {
                    s += &format!(" meta={v}");
                }
                s
            }
            Err(ScanError::Parse(_)) => "parse".into(),
            Err(ScanError::Invalid { id, has_method, .. }) => {
                let m = if has_method { " method" } else { "" };
                match id {
                    Some(id) => format!("invalid{m} id={}", id.raw()),
                    None => format!("invalid{m}"),
                }
            }
        }
    }

    #[test]
    fn scan_table() {
        let big = "1234567890123456789012345";
        let cases: Vec<(String, String)> = vec![
            // Well-formed messages of each kind.
            (r#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#.into(), "Request method=ping id=1".into()),
            (r#"{"method":"ping","id":"a","jsonrpc":"2.0"}"#.into(), "Request method=ping id=\"a\"".into()),
            (r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#.into(), "Notification method=notifications/initialized".into()),
            (r#"{"jsonrpc":"2.0","id":7,"result":{}}"#.into(), "Response id=7".into()),
            (r#"{"jsonrpc":"2.0","id":7,"error":{"code":-32601,"message":"no"}}"#.into(), "ErrorResponse id=7".into()),
            (r#"{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"x"}}"#.into(), "ErrorResponse".into()),
            (r#"{"jsonrpc":"2.0","error":{"code":-32700,"message":"x"}}"#.into(), "ErrorResponse".into()),
            (format!(r#"{{"jsonrpc":"2.0","id":{big},"method":"x"}}"#), format!("Request method=x id={big}")),
            (r#"{"jsonrpc":"2.0","id":1,"method":"x","params":[1,2]}"#.into(), "Request method=x id=1".into()),
            (r#"{"jsonrpc":"2.0","id":"\u0031","method":"m\u0065thod"}"#.into(), "Request method=method id=\"\\u0031\"".into()),
            (r#"{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"roots":{}}}}}"#.into(), "Request method=tools/list id=1 meta=2026-07-28".into()),
            (r#"[{"jsonrpc":"2.0","id":1,"method":"a"},{"jsonrpc":"2.0","method":"b"}]"#.into(), "batch:2".into()),
            // Not JSON.
            ("{".into(), "parse".into()),
            ("nope".into(), "parse".into()),
            (r#"{"jsonrpc":"2.0","id":1,"method":"x"} trailing"#.into(), "parse".into()),
            (r#"{"jsonrpc":"2.0","id":1,"method":"x","params":{"s":"\ud800"}}"#.into(), "parse".into()),
            ("[".into(), "parse".into()),
            // JSON, not a message.
            ("[]".into(), "invalid".into()),
            ("1".into(), "invalid".into()),
            ("\"s\"".into(), "invalid".into()),
            (r#"{"id":1,"method":"x"}"#.into(), "invalid method id=1".into()),
            (r#"{"jsonrpc":"1.0","id":1,"method":"x"}"#.into(), "invalid method id=1".into()),
            (r#"{"jsonrpc":"2.0","id":1.5,"method":"x"}"#.into(), "invalid method".into()),
            (r#"{"jsonrpc":"2.0","id":null,"method":"x"}"#.into(), "invalid method".into()),
            (r#"{"jsonrpc":"2.0","id":{},"method":"x"}"#.into(), "invalid method".into()),
            (r#"{"jsonrpc":"2.0","id":1,"method":3}"#.into(), "invalid method id=1".into()),
            (r#"{"jsonrpc":"2.0","id":1,"method":"x","params":"s"}"#.into(), "invalid method id=1".into()),
            (r#"{"jsonrpc":"2.0","id":1,"method":"x","result":{}}"#.into(), "invalid method id=1".into()),
            (r#"{"jsonrpc":"2.0","id":1}"#.into(), "invalid id=1".into()),
            (r#"{"jsonrpc":"2.0","id":1,"result":{},"error":{"code":1,"message":"m"}}"#.into(), "invalid id=1".into()),
            (r#"{"jsonrpc":"2.0","result":{}}"#.into(), "invalid".into()),
            (r#"{"jsonrpc":"2.0","id":1,"error":{"code":"x","message":"m"}}"#.into(), "invalid id=1".into()),
            (r#"{"jsonrpc":"2.0","id":1,"error":{"code":1.5,"message":"m"}}"#.into(), "invalid id=1".into()),
            (r#"{"jsonrpc":"2.0","id":1,"error":{"message":"m"}}"#.into(), "invalid id=1".into()),
            (r#"{"jsonrpc":"2.0","id":1,"error":"boom"}"#.into(), "invalid id=1".into()),
            // Duplicate keys, at every depth and through escapes: refused, id kept if unambiguous.
            (r#"{"jsonrpc":"2.0","id":1,"id":2,"method":"x"}"#.into(), "invalid".into()),
            // A duplicated top-level id or method is ambiguous: neither is guessed.
            (r#"{"jsonrpc":"2.0","id":1,"method":"x","method":"y"}"#.into(), "invalid".into()),
            (r#"{"jsonrpc":"2.0","id":1,"method":"resources/read","params":{"uri":"file:///a","uri":"file:///etc/passwd"}}"#.into(), "invalid method id=1".into()),
            (r#"{"jsonrpc":"2.0","id":1,"method":"x","params":{"uri":"a","\u0075ri":"b"}}"#.into(), "invalid method id=1".into()),
            (r#"{"jsonrpc":"2.0","id":1,"method":"x","params":{"a":[{"b":{"c":1,"c":2}}]}}"#.into(), "invalid method id=1".into()),
            (r#"{"jsonrpc":"2.0","id":1,"result":{"contents":[{"uri":"a","uri":"b"}]}}"#.into(), "invalid id=1".into()),
            (r#"{"jsonrpc":"2.0","id":1,"method":"x","params":{"_meta":{"io.modelcontextprotocol/clientCapabilities":{"a":1,"a":2}}}}"#.into(), "invalid method id=1".into()),
            (r#"{"jsonrpc":"2.0","id":1,"error":{"code":1,"message":"m","message":"n"}}"#.into(), "invalid id=1".into()),
            // serde_json's private marker keys spelled with escapes, at any depth (written
            // plainly, the relay's byte search finds them: see `verbatim_ok`).
            (r#"{"jsonrpc":"2.0","id":1,"result":{"contents":[{"uri":{"$\u0073erde_json::private::RawValue":"\"file:///a\""}}]}}"#.into(), "invalid id=1".into()),
            (r#"{"jsonrpc":"2.0","id":1,"method":"x","params":{"n":{"\u0024serde_json\u003a:private::Number":"1"}}}"#.into(), "invalid method id=1".into()),
            // Where the capture reads (checked there as everywhere; `describe` scans with and
            // without it): a page's entries and icons, a read's item and `params.uri`.
            (r#"{"jsonrpc":"2.0","id":1,"result":{"resources":[{"uri":"a","icons":[{"src":"x","src":"y"}]}]}}"#.into(), "invalid id=1".into()),
            (r#"{"jsonrpc":"2.0","id":1,"result":{"resources":[{"uri":"a","icons":[{"\u0024serde_json::private::RawValue":"1"}]}]}}"#.into(), "invalid id=1".into()),
            (r#"{"jsonrpc":"2.0","id":1,"result":{"resources":[{"uri":"a","n":{"$\u0073erde_json::private::Number":"1"}}]}}"#.into(), "invalid id=1".into()),
            (r#"{"jsonrpc":"2.0","id":1,"result":{"resources":[{"uri":"a","\u0075ri":"b"}]}}"#.into(), "invalid id=1".into()),
            (r#"{"jsonrpc":"2.0","id":1,"result":{"resources":[{"uri":"\ud800"}]}}"#.into(), "parse".into()),
            ("{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"resources\":[{\"uri\":\"a\",\"name\":\"a\u{1}b\"}]}}".into(), "parse".into()),
            (r#"{"jsonrpc":"2.0","id":1,"result":{"contents":[{"uri":"a","text":"\udc00"}]}}"#.into(), "parse".into()),
            (r#"{"jsonrpc":"2.0","id":1,"result":{"contents":[{"uri":"a","text":"x","text":"y"}]}}"#.into(), "invalid id=1".into()),
            (r#"{"jsonrpc":"2.0","id":1,"result":{"contents":[{"uri":"a"},{"uri":"a","uri":"b"}]}}"#.into(), "invalid id=1".into()),
            (r#"{"jsonrpc":"2.0","id":1,"method":"resources/read","params":{"uri":"\ud800"}}"#.into(), "parse".into()),
            (r#"{"jsonrpc":"2.0","id":1,"method":"resources/read","params":{"uri":{"a":1,"a":2}}}"#.into(), "invalid method id=1".into()),
        ];
        for (text, want) in &cases {
            assert_eq!(&describe(text), want, "scanning {text}");
        }
    }

    #[test]
    fn many_keys_switch_to_hash_set_and_still_catch_duplicates() {
        let mut obj: Vec<String> = (0..100).map(|i| format!("\"k{i}\":{i}")).collect();
        let ok = format!(
            r#"{{"jsonrpc":"2.0","id":1,"result":{{{}}}}}"#,
            obj.join(",")
        );
        assert_eq!(describe(&ok), "Response id=1");
        obj.push("\"k3\":0".into());
        let dup = format!(
            r#"{{"jsonrpc":"2.0","id":1,"result":{{{}}}}}"#,
            obj.join(",")
        );
        assert_eq!(describe(&dup), "invalid id=1");
    }

    /// The scan keeps every object's keys in one buffer (`KeyBuf`): an object's keys must not
    /// leak into its siblings, its parent's keys must not count as its own, and a duplicate
    /// that comes after a nested object has closed must still be caught.
    #[test]
    fn one_key_buffer_keeps_each_objects_keys_apart() {
        let cases = [
            // Sibling objects with the same keys.
            (
                r#"{"jsonrpc":"2.0","id":1,"result":{"resources":[{"uri":"a","name":"n"},{"uri":"b","name":"n"}]}}"#,
                "Response id=1",
            ),
            // An enclosing object's keys reused inside a nested one.
            (
                r#"{"jsonrpc":"2.0","id":1,"result":{"id":{"id":1,"jsonrpc":2,"result":{"id":3}}}}"#,
                "Response id=1",
            ),
            // A repeat after a nested object (and its own nested object) closed.
            (
                r#"{"jsonrpc":"2.0","id":1,"result":{"a":{"b":1,"c":{"d":1}},"b":2,"a":3}}"#,
                "invalid id=1",
            ),
            (
                r#"{"jsonrpc":"2.0","id":1,"method":"x","params":{"_meta":{"k":{"k":1}},"p":[{"q":1}],"_meta":2}}"#,
                "invalid method id=1",
            ),
            // The client capabilities, checked from their captured text with the same
            // buffer: `_meta`'s keys are not theirs, and theirs are still checked.
            (
                r#"{"jsonrpc":"2.0","id":1,"method":"x","params":{"_meta":{"a":1,"io.modelcontextprotocol/clientCapabilities":{"a":{"a":1},"b":0,"io.modelcontextprotocol/clientCapabilities":2},"b":2}}}"#,
                "Request method=x id=1",
            ),
            (
                r#"{"jsonrpc":"2.0","id":1,"method":"x","params":{"_meta":{"io.modelcontextprotocol/clientCapabilities":{"r":{"s":1},"r":2}}}}"#,
                "invalid method id=1",
            ),
            // A repeat of the top-level key after `params` closed.
            (
                r#"{"jsonrpc":"2.0","id":1,"method":"x","params":{"jsonrpc":"2.0","id":2},"id":1}"#,
                "invalid",
            ),
            // An error object whose nested `data` closes before its repeated `code`.
            (
                r#"{"jsonrpc":"2.0","id":1,"error":{"code":1,"message":"m","data":{"code":2},"code":3}}"#,
                "invalid id=1",
            ),
        ];
        for (text, want) in cases {
            assert_eq!(describe(text), want, "scanning {text}");
        }
        // A large object (a hash set of its own) with nested objects between its keys: their
        // keys are not its keys, and its own repeat is caught after them.
        let mut members: Vec<String> = (0..40)
            .map(|i| format!(r#""k{i}":{{"k{}":1,"z":[{{"k0":0}}]}}"#, i + 1))
            .collect();
        let ok = format!(
            r#"{{"jsonrpc":"2.0","id":1,"result":{{{}}}}}"#,
            members.join(",")
        );
        assert_eq!(describe(&ok), "Response id=1");
        members.push(r#""k39":{}"#.into());
        let dup = format!(
            r#"{{"jsonrpc":"2.0","id":1,"result":{{{}}}}}"#,
            members.join(",")
        );
        assert_eq!(describe(&dup), "invalid id=1");
    }

    /// A JSON value for the duplicate-key property: objects as lists of members, so a
    /// repeated key is kept (a `serde_json::Value` would merge it).
    #[derive(Clone, Debug)]
    enum Tree {
        Leaf(u8),
        Array(Vec<Tree>),
        Object(Vec<(String, Tree)>),
    }

    impl Tree {
        fn render(&self, out: &mut String) {
            match self {
                Tree::Leaf(n) => out.push_str(&n.to_string()),
                Tree::Array(items) => {
                    out.push('[');
                    for (i, item) in items.iter().enumerate() {
                        if i > 0 {
                            out.push(',');
                        }
                        item.render(out);
                    }
                    out.push(']');
                }
                Tree::Object(members) => {
                    out.push('{');
                    for (i, (k, v)) in members.iter().enumerate() {
                        if i > 0 {
                            out.push(',');
                        }
                        out.push_str(&format!("{k:?}:"));
                        v.render(out);
                    }
                    out.push('}');
                }
            }
        }

        /// Whether any object, at any depth, names a key twice.
        fn has_duplicate(&self) -> bool {
            match self {
                Tree::Leaf(_) => false,
                Tree::Array(items) => items.iter().any(Tree::has_duplicate),
                Tree::Object(members) => {
                    let mut seen = std::collections::HashSet::new();
                    members.iter().any(|(k, _)| !seen.insert(k))
                        || members.iter().any(|(_, v)| v.has_duplicate())
                }
            }
        }
    }

    fn tree() -> impl proptest::strategy::Strategy<Value = Tree> {
        use proptest::prelude::*;
        // Few key names, so a repeat happens now and then at any depth, and in as many
        // messages not; objects past LINEAR_KEYS members take the hash-set path.
        let key = prop_oneof![
            2 => "[a-c]",
            3 => "[d-z][a-z]{0,2}",
        ];
        let wide_key = "k[0-9]{1,3}";
        let leaf = any::<u8>().prop_map(Tree::Leaf);
        let value = leaf.prop_recursive(4, 48, 6, move |inner| {
            prop_oneof![
                1 => proptest::collection::vec(inner.clone(), 0..4).prop_map(Tree::Array),
                4 => proptest::collection::vec((key.clone(), inner.clone()), 0..6)
                    .prop_map(Tree::Object),
                1 => proptest::collection::vec((wide_key, inner), 17..26).prop_map(Tree::Object),
            ]
        });
        proptest::collection::vec(("[a-f]", value), 0..6).prop_map(Tree::Object)
    }

    proptest::proptest! {
        /// The scan refuses a message exactly when some object in it repeats a key, whatever
        /// the nesting: the one key buffer it shares between objects never mixes their keys.
        #[test]
        fn duplicate_keys_are_refused_exactly_when_present(value in tree()) {
            let mut text = String::new();
            value.render(&mut text);
            let dup = value.has_duplicate();
            proptest::prop_assert_eq!(check_value(&text).is_err(), dup, "{}", text);
            let message = format!(r#"{{"jsonrpc":"2.0","id":1,"result":{text}}}"#);
            let want = if dup { "invalid id=1" } else { "Response id=1" };
            proptest::prop_assert_eq!(describe(&message), want, "{}", message);
            let request = format!(r#"{{"jsonrpc":"2.0","id":1,"method":"x","params":{{"_meta":{text},"p":{text}}}}}"#);
            let want = if dup { "invalid method id=1" } else { "Request method=x id=1" };
            proptest::prop_assert_eq!(describe(&request), want, "{}", request);
            // Wherever the capture reads (a read's `params.uri`, a page's entries and their
            // members, icons, a read item's members), it checks as the scan does.
            let read = format!(r#"{{"jsonrpc":"2.0","id":1,"method":"x","params":{{"uri":{text}}}}}"#);
            let want = if dup { "invalid method id=1" } else { "Request method=x id=1" };
            proptest::prop_assert_eq!(describe(&read), want, "{}", read);
            let response = format!(
                r#"{{"jsonrpc":"2.0","id":1,"result":{{"resources":[{text},{{"uri":{text},"icons":{text},"k":{text}}}],"contents":[{{"uri":{text},"text":{text},"m":{text}}}],"resultType":{text},"r":{text}}}}}"#
            );
            let want = if dup { "invalid id=1" } else { "Response id=1" };
            proptest::prop_assert_eq!(describe(&response), want, "{}", response);
        }
    }

    /// A JSON text for the value-building property: numbers past every machine type,
    /// escapes (a lone surrogate among them), nested objects and arrays, keys repeated now and
    /// then, serde_json's marker keys plainly and with escapes.
    fn json() -> impl proptest::strategy::Strategy<Value = String> {
        use proptest::prelude::*;
        let piece = prop_oneof![
            4 => "[a-c]",
            1 => Just(r"\u0041".to_owned()),
            1 => Just(r#"\""#.to_owned()),
            1 => Just(r"\n".to_owned()),
            1 => Just("é".to_owned()),
            1 => Just(r"\ud83d\ude00".to_owned()),
            1 => Just(r"\ud800".to_owned()),
        ];
        let string =
            proptest::collection::vec(piece, 0..4).prop_map(|p| format!("\"{}\"", p.concat()));
        let key = prop_oneof![
            8 => string.clone(),
            1 => Just(r#""$serde_json::private::Number""#.to_owned()),
            1 => Just(r#""$serde_json::private::RawValue""#.to_owned()),
            1 => Just(r#""$\u0073erde_json::private::Number""#.to_owned()),
        ];
        let leaf = prop_oneof![
            3 => "-?(0|[1-9][0-9]{0,30})(\\.[0-9]{1,20})?([eE][+-]?[0-9]{1,3})?",
            1 => Just("true".to_owned()),
            1 => Just("null".to_owned()),
            3 => string,
        ];
        leaf.prop_recursive(4, 40, 5, move |inner| {
            prop_oneof![
                proptest::collection::vec(inner.clone(), 0..4)
                    .prop_map(|v| format!("[{}]", v.join(","))),
                proptest::collection::vec((key.clone(), inner), 0..5).prop_map(|m| {
                    let members: Vec<String> =
                        m.into_iter().map(|(k, v)| format!("{k}:{v}")).collect();
                    format!("{{{}}}", members.join(","))
                }),
            ]
        })
    }

    proptest::proptest! {
        /// Whatever the message holds, the scan that builds its value gives the scan's verdict
        /// and error (`describe`), and the value it built is `serde_json::from_str`'s.
        #[test]
        fn a_value_built_in_the_scan_is_from_strs(a in json(), b in json()) {
            for text in [
                format!(r#"{{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{a},"x":{b}}}"#),
                format!(r#"{{"method":"m","params":{{"name":{a},"arguments":{b}}},"jsonrpc":"2.0"}}"#),
                format!(r#"{{"jsonrpc":"2.0","id":{a},"result":{b}}}"#),
                format!(r#"{{"id":7,"jsonrpc":"2.0","result":{{"content":[{a}],"structuredContent":{b}}}}}"#),
                format!(r#"{{"result":{a},"jsonrpc":"2.0","id":1}}"#),
            ] {
                describe(&text);
            }
        }
    }

    #[test]
    fn the_value_is_built_when_asked_and_only_then() {
        let built = [
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"t","arguments":{"path":"/a","n":1e400}}}"#,
            r#"{"result":{"content":[]},"jsonrpc":"2.0","id":1}"#,
            r#"{"jsonrpc":"2.0","id":"\u0078","result":{"a":[1,{"b":"\u0041"}]}}"#,
            r#"{"jsonrpc":"2.0","method":"notifications/message","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}"#,
        ];
        for text in built {
            let env = scan_message_with(text, None, Some(&|_| true)).expect("valid");
            assert_eq!(
                env.value.map(|m| *m),
                Some(serde_json::from_str(text).unwrap()),
                "{text}"
            );
            let env = scan_message_with(text, None, Some(&|_| false)).expect("valid");
            assert_eq!(env.value, None, "{text}");
        }
        // Not built: a member before the deciding one that the scan keeps nothing of, a
        // marker key written plainly, no `params` or `result` to decide at.
        let unbuilt = [
            r#"{"jsonrpc":"2.0","id":1,"x":0,"method":"tools/call","params":{}}"#,
            r#"{"jsonrpc":"2.0","id":1,"result":{"n":{"$serde_json::private::Number":"1"}}}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#,
        ];
        for text in unbuilt {
            let env = scan_message_with(text, None, Some(&|_| true)).expect("valid");
            assert_eq!(env.value, None, "{text}");
        }
        let env = scan_message_with(built[3], None, Some(&|_| true)).expect("valid");
        assert_eq!(env.meta_protocol_version.as_deref(), Some("2026-07-28"));
    }

    #[test]
    fn deep_nesting_is_refused_not_overflowed() {
        let deep = format!(
            r#"{{"jsonrpc":"2.0","id":1,"method":"x","params":{{"a":{}1{}}}}}"#,
            "[".repeat(100_000),
            "]".repeat(100_000)
        );
        assert!(scan(&deep).is_err());
    }

    #[test]
    fn check_value_catches_duplicates() {
        assert!(check_value(r#"{"a":1,"b":{"c":2}}"#).is_ok());
        assert!(check_value(r#"{"a":1,"b":{"c":2,"c":3}}"#).is_err());
        assert!(check_value(r#"{"a":"#).is_err());
    }
}
