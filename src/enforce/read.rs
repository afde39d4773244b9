//! `file:` reads answered or verified by rootfence itself (the `serve` and `verify` stances),
//! through the same root capability and resolution as the check, judged again on the file
//! actually opened ([`read_judged`]: identity, hard links, the policy's path rules on where it
//! was opened), so what rootfence reads is the object it judged; and the content limits
//! (`max_bytes`, MIME allow-list) on every content item.
//! An item's every representation (`text`, `blob`, `data`) is checked, not just the first.

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use serde_json::{Value, json};

use super::decide::{ReadRefusal, Verdict, read_judged};
use crate::fsaccess::FsError;
use crate::jsonrpc::Id;
use crate::mcp::Revision;
use crate::policy::Policy;
use crate::roots::{Allowed, CheckOptions, RootSet};
use crate::uri::FileUri;

/// The most rootfence reads for one item when the policy sets no `max_bytes`.
const DEFAULT_READ_LIMIT: u64 = 64 * 1024 * 1024;

/// One representation of a content item's bytes.
enum Repr<'a> {
    /// `text`: the bytes are its UTF-8.
    Text(&'a str),
    /// `blob` (and `data`, which a lenient host may read as well): base64.
    Base64(&'a str),
}

/// Every representation an item carries: `text`, `blob` and `data`. A host may use any of
/// them, so every one is checked; an item holding one that is not a string, or not base64,
/// cannot be checked and is refused (`Err` with the reason).
fn representations(item: &Value) -> Result<Vec<Repr<'_>>, &'static str> {
    let mut out = Vec::with_capacity(1);
    for key in ["text", "blob", "data"] {
        match item.get(key) {
            None => {}
            Some(Value::String(s)) if key == "text" => out.push(Repr::Text(s)),
            Some(Value::String(s)) if is_base64(s) => out.push(Repr::Base64(s)),
            Some(Value::String(_)) => return Err("not_base64"),
            Some(_) => return Err("malformed_content"),
        }
    }
    Ok(out)
}

/// The policy's size and MIME limits on one content item; `Some` when they refuse it.
/// The size is that of its largest representation (`text`, decoded `blob` or `data`).
pub(super) fn content_refusal(policy: &Policy, item: &Value) -> Option<Verdict> {
    let reprs = match representations(item) {
        Ok(r) => r,
        Err(reason) => return Some(Verdict::deny(reason)),
    };
    limits(policy, item.get("mimeType").and_then(Value::as_str), &reprs)
}

/// [`content_refusal`] for an item read from its text (`read_text.rs`), whose `mimeType`,
/// `text` and `blob` are strings when present and which has no `data`.
pub(super) fn item_refusal(
    policy: &Policy,
    mime: Option<&str>,
    text: Option<&str>,
    blob: Option<&str>,
) -> Option<Verdict> {
    let mut reprs = Vec::with_capacity(1);
    if let Some(t) = text {
        reprs.push(Repr::Text(t));
    }
    if let Some(b) = blob {
        if !is_base64(b) {
            return Some(Verdict::deny("not_base64"));
        }
        reprs.push(Repr::Base64(b));
    }
    limits(policy, mime, &reprs)
}

fn limits(policy: &Policy, mime: Option<&str>, reprs: &[Repr<'_>]) -> Option<Verdict> {
    let bytes = reprs
        .iter()
        .map(|r| match r {
            Repr::Text(t) => t.len() as u64,
            Repr::Base64(b) => decoded_len(b),
        })
        .max()
        .unwrap_or(0);
    let d = policy.decide_content(mime, bytes);
    (!d.allow).then(|| Verdict::from_policy(&d))
}

/// Answers `resources/read` from rootfence's own read of the checked file, shaped as
/// `revision` wants it (`resultType` on the result, its not-found code). Returns the reply, and the
/// refusal when the file opened was refused (for the audit log).
pub(super) fn serve(
    policy: &Policy,
    opts: &CheckOptions,
    roots: &RootSet,
    allowed: &Allowed,
    canonical: &FileUri,
    id: &Id,
    revision: &Revision,
) -> (Value, Option<Verdict>) {
    let limit = policy.resources().max_bytes.unwrap_or(DEFAULT_READ_LIMIT);
    let refused = match read_judged(policy, opts, roots, allowed, limit) {
        Ok(read) => {
            let mut item = json!({ "uri": canonical.as_str() });
            match String::from_utf8(read.bytes) {
                Ok(text) => item["text"] = json!(text),
                Err(e) => {
                    item["blob"] = json!(STANDARD.encode(e.as_bytes()));
                    item["mimeType"] = json!("application/octet-stream");
                }
            }
            let mut result = json!({ "contents": [item] });
            if revision.results_carry_result_type() {
                result["resultType"] = json!("complete");
            }
            let reply = json!({ "jsonrpc": "2.0", "id": id.to_value(), "result": result });
            return (reply, None);
        }
        Err(ReadRefusal::Fs(FsError::NotFound)) => {
            let code = revision.resource_not_found_code();
            let data = json!({"uri": canonical.as_str()});
            let reply = super::error_reply(id, code, "Resource not found".into(), Some(data));
            return (reply, None);
        }
        Err(ReadRefusal::Fs(e)) => Verdict::deny(e.reason().code()),
        Err(ReadRefusal::Refused(c)) => *c,
    };
    (
        super::denial(id, canonical.as_str(), &refused),
        Some(refused),
    )
}

/// Compares one content item with rootfence's own read of the checked file; `Some` when the
/// server's bytes differ (or the file cannot be read the same way).
pub(super) fn verify(
    policy: &Policy,
    opts: &CheckOptions,
    roots: &RootSet,
    allowed: &Allowed,
    item: &Value,
) -> Option<Verdict> {
    let limit = policy.resources().max_bytes.unwrap_or(DEFAULT_READ_LIMIT);
    let read = match read_judged(policy, opts, roots, allowed, limit) {
        Ok(r) => r,
        Err(ReadRefusal::Fs(e)) => return Some(Verdict::deny(e.reason().code())),
        Err(ReadRefusal::Refused(c)) => return Some(*c),
    };
    // Every representation must be the file's bytes: a `text` that matches must not carry
    // a `blob` (or `data`) with other bytes past the check.
    let reprs = match representations(item) {
        Ok(r) => r,
        Err(reason) => return Some(Verdict::deny(reason)),
    };
    let same = !reprs.is_empty()
        && reprs.iter().all(|r| match r {
            Repr::Text(t) => t.as_bytes() == read.bytes.as_slice(),
            Repr::Base64(b) => decode(b).is_some_and(|d| d == read.bytes),
        });
    (!same).then(|| Verdict::deny("content_mismatch"))
}

/// Decodes standard base64 (padding optional, no whitespace); `None` if it is not base64.
pub(super) fn decode(text: &str) -> Option<Vec<u8>> {
    let text = text.trim_end_matches('=');
    let mut out = Vec::with_capacity(text.len() * 3 / 4);
    let mut acc = 0u32;
    let mut bits = 0;
    for c in text.bytes() {
        let v = match c {
            b'A'..=b'Z' => c - b'A',
            b'a'..=b'z' => c - b'a' + 26,
            b'0'..=b'9' => c - b'0' + 52,
            b'+' => 62,
            b'/' => 63,
            _ => return None,
        };
        acc = (acc << 6) | u32::from(v);
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            out.push((acc >> bits) as u8);
        }
    }
    Some(out)
}

/// Whether a text is standard base64 (padding optional, no whitespace), without decoding.
fn is_base64(text: &str) -> bool {
    let body = text.trim_end_matches('=');
    text.len() - body.len() <= 2
        && body
            .bytes()
            .all(|c| c.is_ascii_alphanumeric() || c == b'+' || c == b'/')
}

/// The decoded length of a base64 text, without decoding it.
fn decoded_len(text: &str) -> u64 {
    (text.trim_end_matches('=').len() as u64 * 3) / 4
}

#[cfg(test)]
mod tests {
    use super::*;

    fn encode(bytes: &[u8]) -> String {
        STANDARD.encode(bytes)
    }

    #[test]
    fn base64_round_trips_and_matches_rfc_4648_vectors() {
        for (plain, coded) in [
            ("", ""),
            ("f", "Zg=="),
            ("fo", "Zm8="),
            ("foo", "Zm9v"),
            ("foob", "Zm9vYg=="),
            ("fooba", "Zm9vYmE="),
            ("foobar", "Zm9vYmFy"),
        ] {
            assert_eq!(encode(plain.as_bytes()), coded);
            assert_eq!(decode(coded).unwrap(), plain.as_bytes());
            assert_eq!(decoded_len(coded), plain.len() as u64);
        }
        let all: Vec<u8> = (0..=255).collect();
        assert_eq!(decode(&encode(&all)).unwrap(), all);
        assert!(decode("not base64!").is_none());
        assert!(
            is_base64("Zm9vYg==") && is_base64("") && !is_base64("Zm9v Yg") && !is_base64("a===")
        );
    }

    #[test]
    fn every_representation_counts() {
        let item = json!({"uri": "file:///x", "text": "ok", "blob": encode(&[0u8; 300])});
        let r = representations(&item).unwrap();
        assert_eq!(r.len(), 2);
        assert!(representations(&json!({"text": 3})).is_err());
        assert!(representations(&json!({"blob": "not base64!"})).is_err());
        assert!(representations(&json!({"data": "####"})).is_err());
    }
}
