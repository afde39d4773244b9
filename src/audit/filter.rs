//! Which records the readers (`show`, `summary`, `report`) look at: the filters of
//! `rootfence audit show|summary|report`, one definition for all three.
//!
//! A filter on an attribute (`--tool`, `--method`, `--uri`, `--reason`, `--request`) keeps
//! only records that carry that attribute and match it: `--method tools/call` drops the
//! session's start and end records, as a reviewer asking for one method expects. Globs
//! (`--tool`, `--method`, `--uri`) are `globset` globs in which `*` also matches `/`, so
//! `--uri '*/.env'` finds every `.env`; a pattern without metacharacters matches exactly.

use globset::{Glob, GlobMatcher};

use super::event::{Event, Verdict};
use super::read::Record;

/// A glob, and the pattern it was made from (for messages).
#[derive(Debug, Clone)]
pub struct Pattern {
    text: String,
    glob: GlobMatcher,
}

impl Pattern {
    /// Whether `s` matches.
    pub fn is_match(&self, s: &str) -> bool {
        self.text == s || self.glob.is_match(s)
    }
}

/// Patterns made from the same text match the same strings.
impl PartialEq for Pattern {
    fn eq(&self, other: &Self) -> bool {
        self.text == other.text
    }
}

impl std::str::FromStr for Pattern {
    type Err = String;
    /// Parses a glob; the error names the pattern and what is wrong with it.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let glob = Glob::new(s)
            .map_err(|e| format!("invalid pattern '{s}': {e}; quote it from the shell"))?
            .compile_matcher();
        Ok(Pattern {
            text: s.to_owned(),
            glob,
        })
    }
}

/// One request: its session-unique key (`#12`, the `request` field of its decisions) or
/// a JSON-RPC id as on the wire (`5`, `"a"`), optionally in one session (`<session
/// prefix>:#12`, `<session prefix>:5`). JSON-RPC ids repeat in every session, and a client
/// may reuse an id once its request was answered, so an id can name several requests; a
/// key names one in its session.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RequestKey {
    /// A prefix of the session id.
    pub session: Option<String>,
    /// The id's JSON text (empty when `key` is given).
    pub id: String,
    /// The session-unique request key (`#N`), instead of an id.
    pub key: Option<u64>,
}

impl std::str::FromStr for RequestKey {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let (session, id) = match s.split_once(':') {
            Some((p, rest))
                if !p.is_empty()
                    && !p.starts_with('"')
                    && p.bytes().all(|b| b.is_ascii_hexdigit()) =>
            {
                (Some(p.to_ascii_lowercase()), rest)
            }
            _ => (None, s),
        };
        if id.is_empty() || id == "#" {
            return Err(format!(
                "invalid request '{s}': give the request key (#12, the `request` of a decision) \
                 or the JSON-RPC id (5, or '\"abc\"' for a string id), optionally after a \
                 session prefix (7f9c0e12:#12)"
            ));
        }
        // `#N` is a request key; a string id that starts with `#` is given quoted ('"#1"').
        if let Some(n) = id.strip_prefix('#') {
            let key = n.parse::<u64>().map_err(|_| {
                format!(
                    "invalid request key '{s}': a key is # and a number (#12); quote a string \
                     id that starts with # ('\"{id}\"')"
                )
            })?;
            return Ok(RequestKey {
                session,
                id: String::new(),
                key: Some(key),
            });
        }
        // An id given bare that is not a JSON number or string is taken as a string id:
        // `--request abc` means `"abc"`.
        let id = match serde_json::from_str::<serde_json::Value>(id) {
            Ok(v) if v.is_number() || v.is_string() => id.to_owned(),
            _ => serde_json::Value::String(id.to_owned()).to_string(),
        };
        Ok(RequestKey {
            session,
            id,
            key: None,
        })
    }
}

/// The filters of `show`, `summary` and `report`; also their command-line options (the
/// field docs are the options' help).
#[derive(Debug, Clone, Default, PartialEq, clap::Args)]
pub struct Filter {
    /// Only denied decisions.
    #[arg(long)]
    pub denied: bool,
    /// Only this session (its id or a prefix of it).
    #[arg(long, value_name = "ID")]
    pub session: Option<String>,
    /// Only records at or after T: RFC 3339, a date, a duration ago (15m, 2h, 7d, 2w), or
    /// now, today, yesterday (UTC days).
    // Microseconds since the epoch, once parsed.
    #[arg(long, value_name = "T", value_parser = super::parse_time_arg)]
    pub since: Option<i64>,
    /// Only records before T (the same forms as --since).
    #[arg(long, value_name = "T", value_parser = super::parse_time_arg)]
    pub until: Option<i64>,
    /// Every record of one request, in order: its request key (#12, the `request` of its
    /// decisions, unique in its session) or its JSON-RPC id (5, or '"abc"' for a string id),
    /// optionally after a session prefix (7f9c0e12:#12, 7f9c0e12:5).
    #[arg(long, value_name = "[SESSION:]#KEY|ID")]
    pub request: Option<RequestKey>,
    /// Only decisions on calls of a tool (a glob: 'write_*'); records written before
    /// decisions named their tool have none and never match.
    #[arg(long, value_name = "GLOB")]
    pub tool: Option<Pattern>,
    /// Only records of a JSON-RPC method (a glob: 'resources/*').
    #[arg(long, value_name = "GLOB")]
    pub method: Option<Pattern>,
    /// Only decisions with this reason code (docs/reasons.md), e.g. outside_roots.
    // Decision summaries that count the reason match too.
    #[arg(long, value_name = "CODE")]
    pub reason: Option<String>,
    /// Only decisions (and roots updates) on a URI matching a glob, as received or
    /// canonical; `*` also matches `/`: '*/.env', 'file:///home/*/.ssh/*'.
    #[arg(long, value_name = "GLOB")]
    pub uri: Option<Pattern>,
}

impl Filter {
    /// Whether a record passes every filter (an unset filter passes everything).
    pub(crate) fn accepts(&self, r: &Record) -> bool {
        let in_session = |s: &String| r.session.starts_with(s.as_str());
        let (method, id, request) = request_of(r);
        self.session.as_ref().is_none_or(in_session)
            && self
                .since
                .is_none_or(|t| r.ts_micros.is_some_and(|ts| ts >= t))
            && self
                .until
                .is_none_or(|t| r.ts_micros.is_some_and(|ts| ts < t))
            && (!self.denied
                || matches!(&r.event, Some(Event::Decision(d)) if d.decision == Verdict::Deny))
            && self.request.as_ref().is_none_or(|k| {
                k.session.as_ref().is_none_or(in_session)
                    && match k.key {
                        Some(key) => request == Some(key),
                        None => id.map(super::RpcId::as_json) == Some(k.id.as_str()),
                    }
            })
            && self
                .method
                .as_ref()
                .is_none_or(|p| method.is_some_and(|m| p.is_match(m)))
            && self.tool.as_ref().is_none_or(|p| {
                matches!(&r.event, Some(Event::Decision(d)) if d.tool.as_deref().is_some_and(|t| p.is_match(t)))
            })
            && self.reason.as_ref().is_none_or(|want| match &r.event {
                Some(Event::Decision(d)) => &d.reason == want,
                Some(Event::DecisionSummary(s)) => s.reasons.contains_key(want),
                Some(Event::RootsUpdate(u)) => u.dropped.iter().any(|d| &d.reason == want),
                _ => false,
            })
            && self.uri.as_ref().is_none_or(|p| {
                let any = |uris: &[super::AuditUri]| uris.iter().any(|x| p.is_match(x.as_str()));
                match &r.event {
                    Some(Event::Decision(d)) => {
                        p.is_match(d.uri.as_str())
                            || d.canonical.as_ref().is_some_and(|c| p.is_match(c.as_str()))
                    }
                    Some(Event::RootsUpdate(u)) => any(&u.received) || any(&u.effective),
                    _ => false,
                }
            })
    }
}

/// The request a record is about: its JSON-RPC method, id and session-unique request key.
fn request_of(r: &Record) -> (Option<&str>, Option<&super::RpcId>, Option<u64>) {
    match &r.event {
        Some(Event::Decision(d)) => (Some(&d.method), d.id.as_ref(), d.request),
        Some(Event::DecisionSummary(d)) => (Some(&d.method), d.id.as_ref(), d.request),
        Some(Event::ProtocolError(p)) => (None, p.id.as_ref(), None),
        _ => (None, None, None),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::str::FromStr;

    #[test]
    fn request_keys_parse() {
        let k = |s: &str| s.parse::<RequestKey>();
        assert_eq!(
            k("5"),
            Ok(RequestKey {
                session: None,
                id: "5".into(),
                key: None,
            })
        );
        let s = k("7f9c:#12").unwrap();
        assert_eq!((s.session.as_deref(), s.key), (Some("7f9c"), Some(12)));
        assert_eq!(k("#3").unwrap().key, Some(3));
        assert_eq!(k("'\"#3\"'".trim_matches('\'')).unwrap().id, "\"#3\"");
        assert!(k("#x").is_err() && k("#").is_err());
        assert_eq!(k("abc").unwrap().id, "\"abc\"");
        assert_eq!(k("\"abc\"").unwrap().id, "\"abc\"");
        assert_eq!(k("\"a:b\"").unwrap().id, "\"a:b\"");
        let s = k("7F9c:12").unwrap();
        assert_eq!((s.session.as_deref(), s.id.as_str()), (Some("7f9c"), "12"));
        assert!(k("7f9c:").is_err());
        assert!(k("").is_err());
    }

    #[test]
    fn patterns_match_exactly_or_as_globs() {
        let p = Pattern::from_str("*/.env").unwrap();
        assert!(p.is_match("file:///w/app/.env"));
        assert!(!p.is_match("file:///w/app/.envrc"));
        let p = Pattern::from_str("read_*").unwrap();
        assert!(p.is_match("read_text_file") && !p.is_match("write_file"));
        assert!(
            Pattern::from_str(crate::mcp::methods::TOOLS_CALL)
                .unwrap()
                .is_match(crate::mcp::methods::TOOLS_CALL)
        );
        assert!(Pattern::from_str("a[").is_err());
    }
}
