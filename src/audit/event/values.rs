//! The bounded values a record may hold: URIs and JSON-RPC ids (cut past their limits and
//! marked with their length and SHA-256), free text cut likewise, and a server's command
//! line with its secrets redacted.

use super::*;

/// A URI (or path) as it is logged: the text as received, cut at [`MAX_URI_BYTES`].
#[derive(Debug, Clone, PartialEq, Eq, Default, Hash, PartialOrd, Ord)]
pub struct AuditUri(String);

impl AuditUri {
    /// Wraps `s`; a string longer than [`MAX_URI_BYTES`] is cut at a character boundary
    /// and suffixed with `…[<len> bytes, sha256:<hex>]`.
    pub fn new(s: &str) -> Self {
        Self(cut(s, MAX_URI_BYTES).into_owned())
    }

    /// The logged text.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl From<&str> for AuditUri {
    fn from(s: &str) -> Self {
        Self::new(s)
    }
}

impl From<String> for AuditUri {
    fn from(s: String) -> Self {
        if s.len() <= MAX_URI_BYTES {
            Self(s)
        } else {
            Self::new(&s)
        }
    }
}

impl Serialize for AuditUri {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.0)
    }
}

impl<'de> Deserialize<'de> for AuditUri {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        String::deserialize(d).map(Self)
    }
}

/// A JSON-RPC id, kept as its JSON text (a number or a string), so `1` and `"1"` stay
/// distinct in the log as they are on the wire.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct RpcId(pub(super) String);

/// Longest id kept verbatim; a longer one is logged as `"sha256:<hex>"`.
pub(super) const MAX_ID_BYTES: usize = 256;

impl RpcId {
    /// From the id's raw JSON text. `None` unless it is one JSON number or string.
    pub fn from_json(raw: &str) -> Option<Self> {
        let raw = raw.trim_matches([' ', '\t', '\r', '\n']);
        // The common case, a small integer or a plain string, without a JSON parse.
        let digits = raw.strip_prefix('-').unwrap_or(raw);
        let plain_int = !digits.is_empty()
            && digits.len() <= 19
            && digits.bytes().all(|b| b.is_ascii_digit())
            && (digits == "0" || !digits.starts_with('0'));
        let plain_str = raw.len() >= 2
            && raw.len() <= MAX_ID_BYTES
            && raw.starts_with('"')
            && raw.ends_with('"')
            && raw[1..raw.len() - 1]
                .bytes()
                .all(|b| b >= 0x20 && b != b'"' && b != b'\\' && b < 0x7f);
        if plain_int || plain_str {
            return Some(Self(raw.to_owned()));
        }
        let v: serde_json::Value = serde_json::from_str(raw).ok()?;
        if !(v.is_number() || v.is_string()) {
            return None;
        }
        if raw.len() > MAX_ID_BYTES {
            return Some(Self(format!(
                "\"sha256:{}\"",
                crate::audit::chain::sha256_hex(raw.as_bytes())
            )));
        }
        Some(Self(raw.to_owned()))
    }

    /// The id's JSON text.
    pub fn as_json(&self) -> &str {
        &self.0
    }
}

impl Serialize for RpcId {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        // Validated in `from_json`, so this parse cannot fail; fall back to a string anyway.
        match serde_json::from_str::<&serde_json::value::RawValue>(&self.0) {
            Ok(raw) => raw.serialize(s),
            Err(_) => s.serialize_str(&self.0),
        }
    }
}

impl<'de> Deserialize<'de> for RpcId {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let raw = Box::<serde_json::value::RawValue>::deserialize(d)?;
        Ok(Self(raw.get().to_owned()))
    }
}

pub(super) fn ser_text<S: Serializer>(v: &str, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(&cut(v, MAX_TEXT_BYTES))
}

pub(super) fn ser_opt_text<S: Serializer>(v: &Option<String>, s: S) -> Result<S::Ok, S::Error> {
    v.as_deref().map(|t| cut(t, MAX_TEXT_BYTES)).serialize(s)
}

/// The longest prefix of `s` of at most `max` bytes that ends at a character boundary.
pub(crate) fn head(s: &str, max: usize) -> &str {
    let mut end = s.len().min(max);
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    &s[..end]
}

/// `s`, or its first `max` bytes (at a char boundary) plus a marker with the full length
/// and hash.
pub(super) fn cut(s: &str, max: usize) -> std::borrow::Cow<'_, str> {
    if s.len() <= max {
        return std::borrow::Cow::Borrowed(s);
    }
    std::borrow::Cow::Owned(format!(
        "{}…[{} bytes, sha256:{}]",
        head(s, max),
        s.len(),
        crate::audit::chain::sha256_hex(s.as_bytes())
    ))
}

/// Argument names whose value is a secret; matched case-insensitively as a substring of the
/// option or variable name.
pub(super) const SECRET_WORDS: &[&str] = &[
    "token",
    "secret",
    "password",
    "passwd",
    "api-key",
    "api_key",
    "apikey",
    "credential",
    "auth",
    "private-key",
];

/// Replaces the values of secret-looking arguments: `--token X`, `--token=X`, `API_KEY=X`.
pub(super) fn redact_command(argv: &[std::ffi::OsString]) -> Vec<String> {
    const R: &str = "<redacted>";
    let is_secret = |name: &str| {
        let n = name.to_ascii_lowercase();
        SECRET_WORDS.iter().any(|w| n.contains(w))
    };
    let mut out = Vec::with_capacity(argv.len());
    let mut redact_next = false;
    for a in argv {
        let a = a.to_string_lossy();
        if std::mem::take(&mut redact_next) && !a.starts_with('-') {
            out.push(R.to_owned());
            continue;
        }
        if let Some((name, _)) = a.split_once('=')
            && is_secret(name)
            && !name.contains('/')
        {
            out.push(format!("{name}={R}"));
        } else {
            if a.starts_with('-') && is_secret(&a) {
                redact_next = true;
            }
            out.push(a.into_owned());
        }
    }
    out
}
