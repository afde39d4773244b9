//! Requests in flight in both id spaces: the host's to the server, the servers' to the host
//! (rewritten into rootfence's namespace for later generations), rootfence's own; responses
//! matched to them, cancellations followed, and what is owed an answer when a generation or
//! the whole server is gone.

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Instant;

use bytes::Bytes;
use serde_json::Value;
use tokio::sync::oneshot;

use super::*;
use crate::jsonrpc::{Id, IdKey};

impl Session {
    /// Sends a request of rootfence's own to the host; the returned receiver yields the
    /// host's whole response message. The id can never collide with a server's request id.
    pub fn request_host(
        self: &Arc<Self>,
        method: &str,
        params: Option<Value>,
    ) -> oneshot::Receiver<Value> {
        let (id, line, reply, rx) = self.own_request(method, params);
        self.state().own_host.insert(id.key().clone(), reply);
        self.send_detached(line);
        rx
    }

    /// Sends a request of rootfence's own to one server generation, on its priority lane.
    pub(crate) fn request_server(
        &self,
        generation: Gen,
        method: &str,
        params: Option<Value>,
    ) -> oneshot::Receiver<Value> {
        let (id, line, reply, rx) = self.own_request(method, params);
        self.state()
            .own_server
            .insert(id.key().clone(), (generation, reply));
        self.send_prio_server(generation, line);
        rx
    }

    /// Sends a notification of rootfence's own to one server generation.
    pub(crate) fn notify_server(&self, generation: Gen, method: &str, params: Option<Value>) {
        let mut msg = serde_json::json!({ "jsonrpc": "2.0", "method": method });
        if let Some(params) = params {
            msg["params"] = params;
        }
        let line = serde_json::to_vec(&msg).expect("a JSON value always serializes");
        self.send_prio_server(generation, line.into());
    }

    pub(super) fn own_request(
        &self,
        method: &str,
        params: Option<Value>,
    ) -> (Id, Bytes, OwnRequest, oneshot::Receiver<Value>) {
        let id = self.own_id("");
        let (reply, rx) = oneshot::channel();
        let mut msg =
            serde_json::json!({ "jsonrpc": "2.0", "id": id.to_value(), "method": method });
        if let Some(params) = params {
            msg["params"] = params;
        }
        let line = serde_json::to_vec(&msg).expect("a JSON value always serializes");
        (id, line.into(), OwnRequest { reply }, rx)
    }

    pub(super) fn own_id(&self, infix: &str) -> Id {
        let n = self.next_own.fetch_add(1, Ordering::Relaxed);
        Id::from_string(&format!("{}{infix}{n}", self.own_prefix))
    }

    /// True if `id` lies in rootfence's own id namespace. A request with such an id is
    /// refused: a peer could otherwise steal the answer to one of rootfence's own requests.
    pub fn is_reserved_id(&self, id: &Id) -> bool {
        matches!(id.key(), IdKey::Str(s) if s.starts_with(&self.own_prefix))
    }

    /// True if a request with this id from `from` is still in flight.
    pub fn is_in_flight(&self, from: Side, id: &Id) -> bool {
        let st = self.state();
        match from {
            Side::Host => st.host_pending.contains_key(id.key()),
            Side::Server => st.server_pending.contains_key(id.key()),
        }
    }

    /// Records a host request (numbered `request`, [`Self::number_host_request`]) as
    /// forwarded to the current generation and awaiting its response; returns that generation. `None` once the server is gone: nobody would answer
    /// it, and the caller must answer it instead. (Checked under the same lock as
    /// [`Self::server_gone`] drains the table, so no request can slip in between.)
    /// `answer_built`: the scan builds the value of its answer ([`Self::answers_built`]).
    pub(crate) fn track_host_request(
        &self,
        id: &Id,
        method: Arc<str>,
        request: Option<u64>,
        answer_built: bool,
    ) -> Option<Gen> {
        let mut st = self.state();
        if st.server_gone.is_some() {
            return None;
        }
        let generation = st.current;
        st.cancelled_by_host.remove(id.key());
        let pending = Pending::new(id, method, generation, request, answer_built);
        self.count_answer(Side::Server, Some(&pending), 1);
        let replaced = st.host_pending.insert(id.key().clone(), pending);
        self.count_answer(Side::Server, replaced.as_ref(), -1);
        Some(generation)
    }

    /// Records a request from a server generation as forwarded to the host. Returns the id the
    /// host sees: the server's own for the first generation, one in rootfence's namespace for
    /// later ones. `answer_built` as for [`Self::track_host_request`].
    pub(crate) fn track_server_request(
        &self,
        generation: Gen,
        id: &Id,
        method: Arc<str>,
        answer_built: bool,
    ) -> Id {
        let host_id = if generation > 1 {
            self.own_id(&format!("g{generation}-"))
        } else {
            id.clone()
        };
        let mut st = self.state();
        st.cancelled_by_server.remove(host_id.key());
        let pending = Pending::new(id, method, generation, None, answer_built);
        self.count_answer(Side::Host, Some(&pending), 1);
        let original = (generation > 1).then(|| id.clone());
        let replaced = st
            .server_pending
            .insert(host_id.key().clone(), ServerPending { pending, original });
        self.count_answer(Side::Host, replaced.as_ref().map(|sp| &sp.pending), -1);
        host_id
    }

    /// The id the host knows a server generation's request by (for its cancellation).
    pub(crate) fn host_id_of_server_request(&self, generation: Gen, id: &Id) -> Option<Id> {
        if generation == 1 {
            return Some(id.clone());
        }
        let st = self.state();
        st.server_pending.iter().find_map(|(k, sp)| {
            (sp.pending.generation == generation && sp.pending.id == *id).then(|| match k {
                IdKey::Str(s) => Id::from_string(s),
                IdKey::Int(_) => id.clone(),
            })
        })
    }

    /// Records that rootfence answered a host request itself.
    pub(crate) fn answered_locally(&self, id: &Id) {
        self.counters
            .answered_locally
            .fetch_add(1, Ordering::Relaxed);
        self.state().answered_locally.insert(id.key().clone());
    }

    /// What a response arriving from `from` answers, without matching it (the relay's scan
    /// asks, to build the value of a response that takes the value path in its one pass):
    /// the method of the request in flight, `Some(None)` for one of rootfence's own.
    pub(crate) fn answers(&self, from: Side, generation: Gen, id: &Id) -> Option<Option<Arc<str>>> {
        match self.state().answered(from, generation, id.key()) {
            (true, _) => Some(None),
            (false, pending) => pending.map(|p| Some(Arc::clone(&p.method))),
        }
    }

    /// How many requests in flight that `from` answers have an answer the scan builds: a
    /// relaxed load, no lock. The relay's scan asks the pending table about a response only
    /// while this is not 0, and builds a response whose `result` comes before its `id` (the
    /// TypeScript SDK's order) only then: a read's answer pays nothing for the value path,
    /// and no answer walks the requests in flight (the tables have no cap; issue 25).
    pub(crate) fn answers_built(&self, from: Side) -> usize {
        self.answers_built[from as usize].load(Ordering::Relaxed)
    }

    /// Counts a request in flight in (`delta` 1) or out (-1) of [`Self::answers_built`] when
    /// its answer is built; called under the state lock, so the count follows the tables.
    fn count_answer(&self, answerer: Side, pending: Option<&Pending>, delta: isize) {
        if pending.is_some_and(|p| p.answer_built) {
            let count = &self.answers_built[answerer as usize];
            match delta {
                1 => count.fetch_add(1, Ordering::Relaxed),
                _ => count.fetch_sub(1, Ordering::Relaxed),
            };
        }
    }

    /// Counts [`Self::answers_built`] again after requests in flight left in bulk (a
    /// generation or the whole server gone), under the state lock.
    fn recount_answers(&self, st: &State) {
        let built = |n: usize, p: &Pending| n + usize::from(p.answer_built);
        self.answers_built[Side::Server as usize]
            .store(st.host_pending.values().fold(0, built), Ordering::Relaxed);
        self.answers_built[Side::Host as usize].store(
            st.server_pending
                .values()
                .map(|sp| &sp.pending)
                .fold(0, built),
            Ordering::Relaxed,
        );
    }

    /// Matches a response arriving from `from` (for the server: from `generation`) to the
    /// request it answers.
    pub(crate) fn match_response(&self, from: Side, generation: Gen, id: &Id) -> Matched {
        let mut st = self.state();
        let key = id.key();
        let (own, pending) = st.answered(from, generation, key);
        let pending = pending.is_some();
        let matched = match from {
            Side::Host if own => st.own_host.remove(key).map(Matched::Own),
            Side::Server if own => st.own_server.remove(key).map(|(_, own)| Matched::Own(own)),
            Side::Host if pending => st.server_pending.remove(key).map(|sp| Matched::Pending {
                pending: sp.pending,
                restore: sp.original,
            }),
            Side::Server if pending => {
                st.host_pending.remove(key).map(|pending| Matched::Pending {
                    pending,
                    restore: None,
                })
            }
            Side::Host => st
                .cancelled_by_server
                .remove(key)
                .then_some(Matched::Cancelled),
            Side::Server => st
                .cancelled_by_host
                .remove(key)
                .then_some(Matched::Cancelled),
        };
        if let Some(Matched::Pending { pending, .. }) = &matched {
            self.count_answer(from, Some(pending), -1);
        }
        matched.unwrap_or(Matched::Unmatched)
    }

    /// Handles `notifications/cancelled` from `from` for `request_id`. Returns `None` when the
    /// notification must be dropped (the request was answered by rootfence, so the other side
    /// never saw it), else the generation a host cancellation goes to (the one the request
    /// was sent to; `None` inside for the current one).
    pub(crate) fn cancel(&self, from: Side, request_id: &Id) -> Option<Option<Gen>> {
        let mut st = self.state();
        match from {
            Side::Host => {
                if st.answered_locally.contains(request_id.key()) {
                    return None;
                }
                if let Some(p) = st.host_pending.remove(request_id.key()) {
                    self.count_answer(Side::Server, Some(&p), -1);
                    st.cancelled_by_host.insert(request_id.key().clone());
                    st.handshake.listens.retain(|(i, _)| i != request_id);
                    drop(st);
                    if let Some(o) = self.observer() {
                        o.answered(&p.id, super::super::Answer::Cancelled);
                    }
                    return Some(Some(p.generation));
                }
                Some(None)
            }
            Side::Server => {
                if let Some(sp) = st.server_pending.remove(request_id.key()) {
                    self.count_answer(Side::Host, Some(&sp.pending), -1);
                    st.cancelled_by_server.insert(request_id.key().clone());
                }
                Some(None)
            }
        }
    }

    /// Takes the host requests still waiting for one (old) generation, so each can be answered
    /// with an error; the generation's own requests to the host are forgotten.
    pub(crate) fn take_pending_of(&self, generation: Gen) -> Vec<Pending> {
        let mut st = self.state();
        st.server_pending
            .retain(|_, sp| sp.pending.generation != generation);
        st.own_server.retain(|_, (g, _)| *g != generation);
        self.take_host_pending(st, |p| p.generation == generation)
    }

    /// Takes the host requests waiting for one generation that were forwarded before
    /// `before`: what an unreadable answer from that generation may have been meant for.
    pub(crate) fn take_pending_before(&self, generation: Gen, before: Instant) -> Vec<Pending> {
        self.take_host_pending(self.state(), |p| {
            p.generation == generation && p.started <= before
        })
    }

    /// Takes the host requests in flight that `pick` chooses (`st` is the state, locked),
    /// recounting [`Self::answers_built`] and telling the observer they lost their server.
    fn take_host_pending(
        &self,
        mut st: MutexGuard<'_, State>,
        pick: impl Fn(&Pending) -> bool,
    ) -> Vec<Pending> {
        let mut taken = Vec::new();
        st.host_pending.retain(|_, p| {
            let take = pick(p);
            if take {
                taken.push(p.clone());
            }
            !take
        });
        self.recount_answers(&st);
        drop(st);
        self.observe_gone(&taken);
        taken
    }

    /// How many host requests are still waiting for one generation.
    pub(crate) fn pending_count(&self, generation: Gen) -> usize {
        self.state()
            .host_pending
            .values()
            .filter(|p| p.generation == generation)
            .count()
    }

    /// Marks the server as unable to answer (its last generation exited or closed its output,
    /// or could not start) and takes every host request still waiting, so each can be answered
    /// with an error.
    pub(crate) fn server_gone(&self, cause: &str) -> Vec<Pending> {
        let mut st = self.state();
        st.server_gone.get_or_insert_with(|| cause.to_owned());
        st.server_pending.clear();
        st.own_server.clear();
        self.take_host_pending(st, |_| true)
    }
}
