//! The session-unique key of each host request (issue 29), and the tool a `tools/call`
//! named, kept until its result is judged.
//!
//! A JSON-RPC id does not identify a request in the log: every session starts at `1`, and
//! a host may use an id again once its request was answered. So each host request the
//! enforcer looks at gets the next number of the session (1, 2, ...), written as `request`
//! on every decision about the request and about its result; with the record's `session`
//! it names one request in any log. The tool name travels the same way, so decisions on a
//! `tools/call` *result* (embedded resources, links) name the tool as the request's do.
//!
//! An entry lives from the request to its answer. An answer the enforcer never sees (a
//! method whose results carry no URI, a message the tripwire withheld, a cancelled request)
//! would leave its entry behind, so the table is bounded: past [`MAX_OPEN`] entries the
//! older half is forgotten (their results, if they ever come, are recorded without a key).

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::Mutex;

use serde_json::Value;

use crate::jsonrpc::{Id, IdKey, Kind};
use crate::mcp::methods as m;
use crate::relay::Side;

/// Entries kept at most (a host has far fewer requests in flight).
const MAX_OPEN: usize = 4096;

/// What a request's decisions carry.
#[derive(Debug, Clone, Default)]
pub(super) struct RequestFacts {
    /// The request's key in the session.
    pub key: Option<u64>,
    /// The tool of a `tools/call` (`params.name`).
    pub tool: Option<Arc<str>>,
}

/// The open host requests, by id.
#[derive(Debug, Default)]
pub(super) struct Requests {
    inner: Mutex<Table>,
}

#[derive(Debug, Default)]
struct Table {
    next: u64,
    open: HashMap<IdKey, Entry>,
}

/// One open host request.
#[derive(Debug)]
struct Entry {
    key: u64,
    tool: Option<Arc<str>>,
    /// Taken by the text path, which then declined the request: the parsed path's
    /// `on_message` takes this key rather than a new one.
    reserved: bool,
}

impl Requests {
    /// The facts of the message being handled: a host request gets the session's next key
    /// (and, for `tools/call`, its tool is noted); a server answer takes its request's facts
    /// and ends the entry. Anything else has none.
    pub(super) fn on_message(
        &self,
        from: Side,
        kind: Kind,
        id: Option<&Id>,
        method: &str,
        message: Option<&Value>,
    ) -> RequestFacts {
        let Some(id) = id else {
            return RequestFacts::default();
        };
        let mut t = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        match (from, kind) {
            (Side::Host, Kind::Request) => {
                let tool: Option<Arc<str>> = (method == m::TOOLS_CALL)
                    .then(|| message?.pointer("/params/name")?.as_str().map(Arc::from))
                    .flatten();
                if let Some(e) = t.open.get_mut(id.key()).filter(|e| e.reserved) {
                    e.reserved = false;
                    e.tool = tool.clone();
                    return RequestFacts {
                        key: Some(e.key),
                        tool,
                    };
                }
                t.next += 1;
                let key = t.next;
                if t.open.len() >= MAX_OPEN {
                    let keep_after = key.saturating_sub(MAX_OPEN as u64 / 2);
                    t.open.retain(|_, e| e.key > keep_after);
                }
                t.open.insert(
                    id.key().clone(),
                    Entry {
                        key,
                        tool: tool.clone(),
                        reserved: false,
                    },
                );
                RequestFacts {
                    key: Some(key),
                    tool,
                }
            }
            (Side::Server, Kind::Response | Kind::ErrorResponse) => match t.open.remove(id.key()) {
                Some(e) => RequestFacts {
                    key: Some(e.key),
                    tool: e.tool,
                },
                None => RequestFacts::default(),
            },
            _ => RequestFacts::default(),
        }
    }

    /// What [`Self::on_message`] would give a server's answer, without ending its entry:
    /// for the text path, which may decline the answer and leave it to the parsed path
    /// (that then calls `on_message`).
    pub(super) fn preview(&self, from: Side, kind: Kind, id: Option<&Id>) -> RequestFacts {
        let (Side::Server, Kind::Response | Kind::ErrorResponse, Some(id)) = (from, kind, id)
        else {
            return RequestFacts::default();
        };
        let t = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        match t.open.get(id.key()) {
            Some(e) => RequestFacts {
                key: Some(e.key),
                tool: e.tool.clone(),
            },
            None => RequestFacts::default(),
        }
    }

    /// The text path took a key for the host request `id` and then left the request to
    /// the parsed path: that path's `on_message` gets the same key instead of a new one.
    pub(super) fn decline(&self, id: Option<&Id>) {
        let Some(id) = id else { return };
        let mut t = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(e) = t.open.get_mut(id.key()) {
            e.reserved = true;
        }
    }

    /// The key of the host request `id` names, without ending it (for a record made before
    /// the answer is handled: the tripwire's).
    pub(super) fn peek(&self, id: Option<&Id>) -> Option<u64> {
        let t = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        t.open.get(id?.key()).map(|e| e.key)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn reused_ids_get_new_keys_and_results_take_the_tool() {
        let r = Requests::default();
        let id = Id::from_string("5");
        let call = json!({"params": {"name": "read_file"}});
        let a = r.on_message(
            Side::Host,
            Kind::Request,
            Some(&id),
            m::TOOLS_CALL,
            Some(&call),
        );
        assert_eq!(a.key, Some(1));
        assert_eq!(r.peek(Some(&id)), Some(1));
        let res = r.on_message(Side::Server, Kind::Response, Some(&id), m::TOOLS_CALL, None);
        assert_eq!((res.key, res.tool.as_deref()), (Some(1), Some("read_file")));
        // The host uses id 5 again: another request, another key.
        let b = r.on_message(
            Side::Host,
            Kind::Request,
            Some(&id),
            m::RESOURCES_READ,
            None,
        );
        assert_eq!((b.key, b.tool), (Some(2), None));
        // The text path declined it: the parsed path gets the same key, not a new one.
        r.decline(Some(&id));
        let again = r.on_message(
            Side::Host,
            Kind::Request,
            Some(&id),
            m::RESOURCES_READ,
            None,
        );
        assert_eq!(again.key, Some(2));
        // A preview of the answer does not end the entry.
        let seen = r.preview(Side::Server, Kind::Response, Some(&id));
        assert_eq!(seen.key, Some(2));
        let gone = r.on_message(
            Side::Server,
            Kind::Response,
            Some(&id),
            m::RESOURCES_READ,
            None,
        );
        assert_eq!(gone.key, Some(2));
        let none = r.on_message(
            Side::Server,
            Kind::Response,
            Some(&id),
            m::RESOURCES_READ,
            None,
        );
        assert_eq!(none.key, None);
    }

    #[test]
    fn unanswered_requests_cannot_grow_the_table() {
        let r = Requests::default();
        for n in 0..(MAX_OPEN as i64 * 3) {
            let id = Id::from_string(&n.to_string());
            r.on_message(Side::Host, Kind::Request, Some(&id), m::PING, None);
        }
        assert!(r.inner.lock().unwrap().open.len() <= MAX_OPEN);
    }
}
