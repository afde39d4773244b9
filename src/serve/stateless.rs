//! 2026-07-28 stateless requests: no session, any replica serves any request.
//!
//! A stateless request is served by a pooled relay (its own enforcer, sandboxed server
//! process and audit session, as a session has) chosen by the principal and the roots the
//! client declared; pooled relays are shared by the requests of one principal under one set
//! of roots, started on demand, stopped when idle or least recently used beyond
//! `--pool-size`.
//!
//! Roots come from the client exactly as on stdio, MRTR style: a `tools/call`,
//! `prompts/get` or `resources/read` from a client that declares the roots capability, with
//! no roots known for it, is answered `input_required` with a `roots/list` input request
//! (key [`ROOTS_KEY`]); the retry carries the answer in `inputResponses`. What rootfence needs
//! on a retry travels in the `requestState` the protocol echoes, signed ([`super::state`]):
//! the declared roots and the server's own `requestState`, which is restored before the
//! server sees the retry. A pooled relay's enforcer learns the roots through its own MRTR
//! question, which this handler answers from the roots it holds; the enforcer intersects
//! them with `--root` and the policy exactly as on stdio.
//!
//! Request ids are renamed to ids unique within the pooled relay (clients' ids collide) and
//! restored on the response. Only responses come back from a pooled relay: progress and log
//! notifications of stateless requests are not relayed (they could not be told apart from
//! another client's), and `subscriptions/listen` is refused.

use std::borrow::Cow;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use bytes::Bytes;
use serde_json::value::RawValue;
use serde_json::{Value, json};

use super::capacity::Capacity;
use super::http::{App, DRAINING, Incoming, json_response, refuse, rpc_error, unavailable};
use super::session::HttpSession;
use super::splice::Members;
use super::state::{PREFIX, Signer};
use crate::jsonrpc::IdKey;
use crate::jsonrpc::envelope::Kind;
use crate::jsonrpc::error::{INVALID_PARAMS, SERVER_GONE};
use crate::mcp::methods as m;

/// The `inputRequests` key of the roots question this handler asks.
pub const ROOTS_KEY: &str = "io.rootfence/http-roots";
/// Rounds of the pooled enforcer's own roots question answered for one request.
const MAX_INNER_ROUNDS: usize = 3;

/// How stateless requests are served.
#[derive(Debug, Clone)]
pub struct StatelessConfig {
    /// The key that signs the state requests carry (shared by every replica).
    pub key: Vec<u8>,
    /// Pooled relays kept at once.
    pub pool: usize,
    /// Pooled relays one principal may hold.
    pub per_principal: usize,
    /// How long signed state stays valid, and how long an idle pooled relay is kept.
    pub ttl: Duration,
}

/// A pooled relay's key: the principal and the client's declared roots (as JSON text).
type PoolKey = (Option<String>, Option<String>);

/// The stateless handler.
#[derive(Debug)]
pub struct Stateless {
    signer: Signer,
    /// The pooled relays, by principal and roots.
    pub pool: Arc<Capacity<PoolKey>>,
    next_id: AtomicU64,
    next_relay: AtomicU64,
}

impl Stateless {
    /// The handler, as `cfg` says.
    pub fn new(cfg: StatelessConfig) -> Stateless {
        let max = cfg.pool.max(1);
        Stateless {
            signer: Signer::new(cfg.key, cfg.ttl),
            pool: Arc::new(Capacity::new(max, cfg.per_principal, cfg.ttl, true)),
            next_id: AtomicU64::new(1),
            next_relay: AtomicU64::new(1),
        }
    }

    /// The pooled relay for `key`, started if need be; `None` when the pool is full of busy
    /// relays.
    fn relay(&self, app: &App, key: PoolKey) -> Option<Arc<HttpSession>> {
        let principal = key.0.clone();
        let opened = self.pool.open(&principal, Some(&key), || {
            let n = self.next_relay.fetch_add(1, Ordering::Relaxed);
            let relay = HttpSession::start(
                &app.setup,
                format!("pool-{n}"),
                principal.clone(),
                None,
                app.stall,
                true,
            );
            tracing::info!(relay = %relay.id, principal = principal.as_deref().unwrap_or("-"), "started a pooled server for 2026-07-28 requests");
            (key.clone(), relay)
        });
        opened.ok()
    }

    /// Answers one stateless request.
    pub async fn handle(
        &self,
        app: &Arc<App>,
        principal: Option<String>,
        incoming: Incoming,
    ) -> Response {
        if incoming.batch {
            return refuse(
                StatusCode::BAD_REQUEST,
                "2026-07-28 has no batches; send each request on its own",
            );
        }
        if incoming.kind != Some(Kind::Request) {
            // Notifications (e.g. cancellation, advisory) and stray responses: nothing to do.
            return StatusCode::ACCEPTED.into_response();
        }
        if app.draining.load(Ordering::Relaxed) {
            return unavailable(None, DRAINING, None);
        }
        let Some((id, method)) = incoming.requests.first().cloned() else {
            return StatusCode::ACCEPTED.into_response();
        };
        let bad = |message: String| {
            rpc_error(StatusCode::BAD_REQUEST, Some(&id), INVALID_PARAMS, &message)
        };
        if method == m::SUBSCRIPTIONS_LISTEN {
            return bad(
                "subscriptions/listen is not served over stateless HTTP by rootfence yet; poll with resources/read".into(),
            );
        }
        // Only the members rootfence reads or rewrites are looked at; every other member is
        // forwarded as the client's text (no value tree: `splice.rs`).
        let text = crate::jsonrpc::framing::line_str(&incoming.line);
        let Some(mut message) = Request::parse(text) else {
            return bad("the request could not be read".into());
        };
        let has_roots_cap = incoming
            .meta_capabilities
            .as_deref()
            .is_some_and(declares_roots);

        // What the client echoes: rootfence's state (verified, then replaced by the server's
        // own), and the answer to rootfence's roots question.
        let mut roots: Option<Value> = None;
        if let Some(params) = message.params.as_mut() {
            let token = params
                .get("requestState")
                .and_then(|raw| serde_json::from_str::<String>(raw).ok());
            if let Some(token) = token.filter(|t| t.starts_with(PREFIX)) {
                match self.signer.verify(&token, principal.as_deref()) {
                    Ok(state) => {
                        roots = state.r;
                        params.put("requestState", state.s.map(|inner| inner.to_string()));
                    }
                    Err(e) => {
                        tracing::warn!(refused = %e, "a stateless request's requestState was refused");
                        return bad(format!("{e}; send the request again without requestState"));
                    }
                }
            }
            if let Some(raw) = params.get("inputResponses")
                && let Some(mut responses) = Members::parse(raw).map(Members::into_owned)
            {
                if responses
                    .0
                    .iter()
                    .any(|(k, _)| k.starts_with("io.rootfence/") && k != ROOTS_KEY)
                {
                    return bad("inputResponses names a key rootfence did not ask for".into());
                }
                if let Some(answer) = responses.remove(ROOTS_KEY) {
                    let answer = serde_json::from_str::<Value>(&answer).ok();
                    let Some(answer) = answer.filter(|a| a["roots"].is_array()) else {
                        let why = "the answer to rootfence's roots/list has no roots array";
                        return bad(why.into());
                    };
                    roots = Some(answer);
                    let left = (!responses.is_empty()).then(|| responses.to_json());
                    params.put("inputResponses", left);
                }
            }
        }
        // The same list the stdio enforcer asks a 2026-07-28 host for its roots first on.
        let needs_roots = crate::mcp::uris::ASKS_FOR_ROOTS_FIRST.contains(&method.as_str());
        if has_roots_cap && roots.is_none() && needs_roots {
            let inner = message
                .params
                .as_ref()
                .and_then(|p| p.get("requestState"))
                .and_then(|raw| serde_json::from_str::<Value>(raw).ok());
            let state = self.signer.sign(principal.as_deref(), None, inner);
            let body = json!({
                "jsonrpc": "2.0", "id": id.to_value(),
                "result": {
                    "resultType": "input_required",
                    "inputRequests": {ROOTS_KEY: {"method": m::ROOTS_LIST}},
                    "requestState": state,
                }
            });
            return json_response(body.to_string());
        }
        let key: PoolKey = (
            principal.clone(),
            roots
                .as_ref()
                .filter(|_| has_roots_cap)
                .map(|r| r["roots"].to_string()),
        );
        let Some(relay) = self.relay(app, key) else {
            let busy = "every pooled server is busy; try again shortly (or raise --pool-size)";
            return unavailable(Some(&id), busy, Some("1"));
        };

        let gone = |why: &str| rpc_error(StatusCode::OK, Some(&id), SERVER_GONE, why);
        let unreadable = "the server's answer could not be read";
        let mut rounds = 0;
        loop {
            let answer = match self.exchange(&relay, &mut message).await {
                Ok(a) => a,
                Err(why) => return gone(why),
            };
            // The answer's id is put back; its result is only parsed when it asks for input.
            let answer_text = crate::jsonrpc::framing::line_str(&answer);
            let Some(mut top) = Members::parse(answer_text) else {
                return gone(unreadable);
            };
            top.set("id", id.raw().to_owned());
            if !asks_for_input(top.get("result")) {
                return json_response(top.to_json());
            }
            let Ok(mut answer) = serde_json::from_str::<Value>(&top.to_json()) else {
                return gone(unreadable);
            };
            // The pooled enforcer's own roots question: answered here from the roots held.
            let result = &mut answer["result"];
            let asked = result["inputRequests"].as_object();
            let ours: Vec<String> = asked
                .into_iter()
                .flatten()
                .filter(|(k, r)| {
                    k.starts_with("io.rootfence/roots-") && r["method"] == m::ROOTS_LIST
                })
                .map(|(k, _)| k.clone())
                .collect();
            // Answered here only when every question is that one.
            if let Some(r) = &roots
                && !ours.is_empty()
                && rounds < MAX_INNER_ROUNDS
                && asked.is_some_and(|a| a.len() == ours.len())
            {
                rounds += 1;
                let params = message.params.get_or_insert_with(Members::default);
                let mut responses = params
                    .get("inputResponses")
                    .and_then(Members::parse)
                    .map(Members::into_owned)
                    .unwrap_or_default();
                for k in ours {
                    responses.set(&k, r.to_string());
                }
                params.set("inputResponses", responses.to_json());
                params.put(
                    "requestState",
                    result.get("requestState").map(Value::to_string),
                );
                continue;
            }
            // The server's (or the enforcer's) question goes to the client; what rootfence
            // needs on the retry rides in the signed state.
            let inner = result.get("requestState").cloned();
            if let Some(obj) = result.as_object_mut() {
                let state = self
                    .signer
                    .sign(principal.as_deref(), roots.as_ref(), inner);
                obj.insert("requestState".into(), state.into());
            }
            return json_response(answer.to_string());
        }
    }

    /// Sends `message` (its id renamed) through a pooled relay; the response line, or why
    /// there is none.
    async fn exchange(
        &self,
        relay: &Arc<HttpSession>,
        message: &mut Request<'_>,
    ) -> Result<Bytes, &'static str> {
        let n = self.next_id.fetch_add(1, Ordering::Relaxed);
        message.top.set("id", n.to_string());
        let ended = "the pooled server ended; send the request again";
        let ids = vec![IdKey::Int(n.to_string().into())];
        let mut stream = relay
            .router
            .register_post(ids, Vec::new())
            .map_err(|_| ended)?;
        relay
            .send(Bytes::from(message.to_json()))
            .await
            .map_err(|_| ended)?;
        while let Some(out) = stream.rx.recv().await {
            if out.answers.is_some() {
                return Ok(out.line);
            }
        }
        Err("the pooled server ended before answering; send the request again")
    }
}

/// A stateless request, held as its members: the top level and `params`.
#[derive(Debug)]
struct Request<'a> {
    top: Members<'a>,
    params: Option<Members<'a>>,
}

impl<'a> Request<'a> {
    fn parse(text: &'a str) -> Option<Request<'a>> {
        let mut top = Members::parse(text)?;
        let params = match top.remove("params") {
            None => None,
            Some(Cow::Borrowed(raw)) => Some(Members::parse(raw)?),
            // `Members::parse` borrows every value from the text.
            Some(Cow::Owned(_)) => return None,
        };
        Some(Request { top, params })
    }

    fn to_json(&self) -> String {
        match &self.params {
            Some(p) => {
                let mut top = self.top.clone();
                top.set("params", p.to_json());
                top.to_json()
            }
            None => self.top.to_json(),
        }
    }
}

/// Whether client capabilities (`params._meta`, as the envelope scan read them) declare roots.
fn declares_roots(caps: &RawValue) -> bool {
    #[derive(serde::Deserialize)]
    struct Caps<'a> {
        #[serde(borrow, default)]
        roots: Option<&'a RawValue>,
    }
    serde_json::from_str::<Caps<'_>>(caps.get()).is_ok_and(|c| c.roots.is_some())
}

/// Whether a result (raw) is `input_required`; only `resultType` is read.
fn asks_for_input(result: Option<&str>) -> bool {
    #[derive(serde::Deserialize)]
    struct Kind<'a> {
        #[serde(rename = "resultType", borrow, default)]
        result_type: Option<Cow<'a, str>>,
    }
    result
        .and_then(|r| serde_json::from_str::<Kind<'_>>(r).ok())
        .and_then(|k| k.result_type)
        .is_some_and(|t| t == "input_required")
}
