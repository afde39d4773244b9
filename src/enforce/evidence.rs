//! Decision evidence: the audit records a decision needs on disk before it takes effect, and
//! the session's bound on the actions waiting for them.
//!
//! # Evidence before effect, without slowing what is allowed
//!
//! Handlers are synchronous and queue their records without I/O. A denial's receipt is
//! noted in the message's [`Evidence`] (every handler gets it through its `Ctx`, so a denial
//! decided deep inside a filter is not lost); the dispatch returns it with the action as
//! an [`Outcome`], and [`Backlog::hold`] turns an action with evidence into a deferred one
//! that resolves once the records are written (and synced, per the fsync policy). A message
//! that only allowed things carries no evidence and is never held.
//!
//! # Bounded per session, without blocking
//!
//! Each session (one enforcer) keeps its own backlog, one per side, because each side's
//! pump holds its own messages (the relay's bound is per pump). Past [`MAX_HELD`] actions
//! waiting (a flood of denials faster than the disk syncs), the pump that holds them is
//! asked to wait before it reads on ([`Backlog::backpressure`], the relay's
//! `Interceptor::backlog`): the flood slows its source instead of filling memory or the
//! relay's own bound on held messages (past which it refuses messages, and a refusal must
//! not reach the peer before the denial's record). Nothing blocks a thread: the wait is an
//! `await` on the writer's progress.

use std::cell::Cell;
use std::collections::VecDeque;
use std::sync::Mutex;

use crate::audit::{Auditor, Receipt};
use crate::relay::{Action, Drain, Side};

/// Actions waiting for their evidence, at most, per session and side, before the pump that
/// holds them waits. Held actions whose records are durable are polled by their pump before
/// it reads on, so they do not accumulate; this is well under the relay's own bound on held
/// messages (1024 per pump).
pub(super) const MAX_HELD: usize = 256;

/// The evidence of one message being decided: the latest receipt of a denial recorded
/// while it was handled (receipts only grow, so waiting for it waits for every earlier one).
#[derive(Debug, Default)]
pub(super) struct Evidence(Cell<Receipt>);

impl Evidence {
    /// Notes a denial's record.
    pub(super) fn note(&self, receipt: Receipt) {
        self.0.set(self.0.get().max(receipt));
    }

    /// The latest receipt noted ([`Receipt::NONE`] when nothing was denied).
    pub(super) fn receipt(&self) -> Receipt {
        self.0.get()
    }
}

/// What a handler decided about one message: the action, and the record that must be
/// durable before it takes effect.
#[derive(Debug)]
pub(super) struct Outcome {
    pub(super) action: Action,
    pub(super) evidence: Receipt,
}

/// Resolves a possibly deferred action.
pub(super) async fn resolve(action: Action) -> Action {
    match action {
        Action::Defer(later) => later.await,
        other => other,
    }
}

/// One session's actions waiting for their evidence, per side (see the module docs).
#[derive(Debug, Default)]
pub(super) struct Backlog {
    host: Mutex<VecDeque<Receipt>>,
    server: Mutex<VecDeque<Receipt>>,
}

impl Backlog {
    /// `from`'s held receipts, those already durable in `auditor`'s log let go.
    fn side(&self, auditor: &Auditor, from: Side) -> std::sync::MutexGuard<'_, VecDeque<Receipt>> {
        let mut held = crate::relock(match from {
            Side::Host => &self.host,
            Side::Server => &self.server,
        });
        while held.front().is_some_and(|r| auditor.is_durable(*r)) {
            held.pop_front();
        }
        held
    }

    /// `outcome`'s action, held back until its evidence is durable in `auditor`'s log.
    /// Actions without evidence pass at once. Never blocks: past [`MAX_HELD`], it is the
    /// pump that waits ([`Backlog::backpressure`]).
    pub(super) fn hold(&self, auditor: Option<&Auditor>, from: Side, outcome: Outcome) -> Action {
        let Outcome { action, evidence } = outcome;
        match self.wait(auditor, from, evidence) {
            None => action,
            Some(wait) => Action::Defer(Box::pin(async move {
                wait.await;
                resolve(action).await
            })),
        }
    }

    /// A wait until `evidence` is durable in `auditor`'s log, counted among `from`'s held
    /// actions; `None` when there is nothing to wait for (no denial, no log). What
    /// [`Backlog::hold`] puts before an action, for a caller that holds something else (the
    /// screen's redacted message).
    pub(super) fn wait(
        &self,
        auditor: Option<&Auditor>,
        from: Side,
        evidence: Receipt,
    ) -> Option<Drain> {
        let auditor = auditor.filter(|_| !evidence.is_none())?;
        self.side(auditor, from).push_back(evidence);
        Some(durable(auditor, evidence))
    }

    /// When `from`'s side has [`MAX_HELD`] actions or more waiting for records not yet
    /// durable: a wait for all of them, for its pump to finish before it reads on.
    pub(super) fn backpressure(&self, auditor: Option<&Auditor>, from: Side) -> Option<Drain> {
        let auditor = auditor?;
        let newest = {
            let mut held = self.side(auditor, from);
            if held.len() < MAX_HELD {
                return None;
            }
            // Waiting for the newest record waits for every one queued before it: the
            // writer handles them in order, and nothing held is outstanding afterwards.
            let newest = held.back().copied()?;
            held.clear();
            newest
        };
        Some(durable(auditor, newest))
    }
}

/// A wait until `receipt`'s record (and every one queued before it) is durable in
/// `auditor`'s log.
fn durable(auditor: &Auditor, receipt: Receipt) -> Drain {
    let auditor = auditor.clone();
    Box::pin(async move {
        if let Err(e) = auditor.durable(receipt).await {
            // The session is being stopped (the log failed); the denial stands.
            tracing::error!("a denial's audit record could not be written: {e}");
        }
    })
}

#[cfg(test)]
mod tests {
    use std::sync::{Arc, Condvar, Mutex};

    use serde_json::{Value, json};

    use super::*;
    use crate::audit::{AuditConfig, AuditLog, LineTee, SessionEnd, SessionStart};
    use crate::enforce::Ctx;
    use crate::enforce::testing::World;
    use crate::jsonrpc::{Id, Kind};
    use crate::mcp::methods as m;

    /// Whether the audit writer may finish a batch with a denial in it: while closed, its
    /// thread waits in the tee (after the write, before the records count as durable).
    #[derive(Default)]
    struct Gate {
        closed: Mutex<bool>,
        moved: Condvar,
    }

    impl Gate {
        fn set(&self, closed: bool) {
            *self.closed.lock().unwrap() = closed;
            self.moved.notify_all();
        }

        fn pass(&self) {
            let mut closed = self.closed.lock().unwrap();
            while *closed {
                closed = self.moved.wait(closed).unwrap();
            }
        }
    }

    /// Opens the gate when dropped, so that a failing test ends (the log's drop waits for
    /// its writer) instead of hanging.
    struct Opens(Arc<Gate>);

    impl Drop for Opens {
        fn drop(&mut self) {
            self.0.set(false);
        }
    }

    /// An audit log for `w`'s enforcer, whose denials become durable only while `gate` is
    /// open.
    fn gated_log(w: &World, gate: &Arc<Gate>) -> AuditLog {
        let gate = Arc::clone(gate);
        let mut cfg = AuditConfig::new(std::path::Path::new(&w.base).join("audit.jsonl"));
        cfg.tee = Some(LineTee::new(move |lines| {
            if lines.windows(6).any(|l| l == b"\"deny\"") {
                gate.pass();
            }
        }));
        let log = AuditLog::open(cfg, SessionStart::default()).unwrap();
        w.enforcer.inner.audit.set(log.handle());
        log
    }

    /// A host's `resources/read` of `uri` decided by `w`'s enforcer, as the interceptor
    /// does: handled, then held by the session's backlog for its evidence.
    fn read(w: &World, n: u64, uri: &str) -> Action {
        let id = Id::from_string(&n.to_string());
        let inner = &w.enforcer.inner;
        let ctx = w.ctx(Side::Host, Kind::Request, m::RESOURCES_READ, &id);
        let before = w.evidence.receipt();
        let message = json!({"jsonrpc": "2.0", "id": n, "method": m::RESOURCES_READ,
            "params": {"uri": uri}});
        let action = inner.resources_read.request(inner, &ctx, &id, message);
        let evidence = w.evidence.receipt();
        let outcome = Outcome {
            action,
            // Each message's own: the world's contexts share one (receipts only grow).
            evidence: if evidence == before {
                Receipt::NONE
            } else {
                evidence
            },
        };
        inner.backlog.hold(inner.audit.get(), Side::Host, outcome)
    }

    fn denied(action: Action) -> bool {
        matches!(action, Action::Reply(v) if v["error"]["message"].as_str()
            .is_some_and(|m| m.contains("denied")))
    }

    /// The bug: past the process-wide limit of held denials, the handler waited for the
    /// records with `durable_blocking` on the runtime's thread. Here the log's writer cannot
    /// make a denial durable until this same (current-thread) runtime opens the gate, so a
    /// blocking wait would never return; the session's limit must instead ask its pump to
    /// wait, asynchronously, and only on the side that flooded.
    #[tokio::test(flavor = "current_thread")]
    async fn a_denial_flood_past_the_session_limit_makes_its_pump_wait_without_blocking_the_runtime()
     {
        let w = World::new(&[], &["a.txt"], None);
        let gate = Arc::new(Gate::default());
        let log = gated_log(&w, &gate);
        let _opens = Opens(Arc::clone(&gate));
        gate.set(true);
        let backlog = |from| {
            let inner = &w.enforcer.inner;
            inner.backlog.backpressure(inner.audit.get(), from)
        };
        let mut held = Vec::new();
        for n in 0..MAX_HELD as u64 + 1 {
            let action = read(&w, n, &format!("file:///etc/passwd-{n}"));
            assert!(matches!(action, Action::Defer(_)), "{n}: {action:?}");
            held.push(action);
            if (n as usize) < MAX_HELD - 1 {
                assert!(backlog(Side::Host).is_none(), "{n}");
            }
        }
        // An allowed read carries no evidence and is not held.
        let allowed = read(&w, 9999, &w.uri("a.txt"));
        assert!(matches!(allowed, Action::Forward), "{allowed:?}");
        assert!(
            backlog(Side::Server).is_none(),
            "the server's side did not flood"
        );
        let drain = backlog(Side::Host).expect("the flooding side's pump waits");
        gate.set(false);
        drain.await;
        for action in held {
            assert!(denied(resolve(action).await));
        }
        assert!(backlog(Side::Host).is_none(), "the backlog drained");
        log.close(SessionEnd::default()).unwrap();
    }

    /// The bug: an answer the tripwire withheld took effect before its record was durable
    /// (the record was only queued, the error went at once). It now waits like any denial.
    #[tokio::test(flavor = "current_thread")]
    async fn a_tripwire_withholding_waits_for_its_record() {
        let w = World::new(&[], &[], None);
        let gate = Arc::new(Gate::default());
        let log = gated_log(&w, &gate);
        let _opens = Opens(Arc::clone(&gate));
        gate.set(true);
        let hit = crate::tripwire::Hit {
            file: std::path::Path::new(&w.base).join(".env"),
            line: 1,
            form: crate::tripwire::Form::Text,
            view: crate::tripwire::View::Raw,
            pattern_sha256: "0123456789ab".into(),
        };
        let id = Id::from_string("7");
        let inner = &w.enforcer.inner;
        let ctx = Ctx {
            request: Some(7),
            ..w.ctx(Side::Server, Kind::Response, m::TOOLS_CALL, &id)
        };
        let action = inner
            .withhold(&ctx, &hit)
            .expect("withheld in enforce mode");
        let Action::Defer(mut later) = action else {
            panic!("the withholding is not held for its record: {action:?}");
        };
        let early = tokio::time::timeout(std::time::Duration::from_millis(50), &mut later).await;
        assert!(
            early.is_err(),
            "the withholding took effect before its record was durable"
        );
        gate.set(false);
        let Action::Replace(error) = later.await else {
            panic!("a withheld answer is replaced by an error");
        };
        assert_eq!(error["error"]["data"]["reason"], "tripwire", "{error}");
        log.close(SessionEnd::default()).unwrap();
    }

    /// The same for a redaction: the answer goes on with the secret taken out, but only once
    /// the record of what was taken out is durable.
    #[tokio::test(flavor = "current_thread")]
    async fn a_tripwire_redaction_waits_for_its_record() {
        use crate::relay::{Interceptor, Screened};
        let secret = "k9Qz7xLw2VbN4mRt8YpD3sHf";
        let w = World::new(&[], &[], None);
        std::fs::write(w.root().join(".env"), format!("API_TOKEN={secret}\n")).unwrap();
        let gate = Arc::new(Gate::default());
        let log = gated_log(&w, &gate);
        let _opens = Opens(Arc::clone(&gate));
        gate.set(true);
        let id = Id::from_string("7");
        let line = json!({"jsonrpc": "2.0", "id": 7, "result": {"content": [
            {"type": "text", "text": format!("found API_TOKEN={secret} in the file")}]}})
        .to_string();
        let screened = w.enforcer.screen(
            Side::Server,
            Kind::Response,
            Some(&id),
            Some(7),
            m::TOOLS_CALL,
            line.as_bytes(),
        );
        let Some(Screened::Rewrite {
            message,
            after: Some(mut after),
        }) = screened
        else {
            panic!("not a redaction held for its record: {screened:?}");
        };
        assert!(!message.to_string().contains(secret), "{message}");
        let early = tokio::time::timeout(std::time::Duration::from_millis(50), &mut after).await;
        assert!(
            early.is_err(),
            "the redaction took effect before its record was durable"
        );
        gate.set(false);
        after.await;
        log.close(SessionEnd::default()).unwrap();
    }

    /// Two sessions, each with its own log: one's denials waiting for its disk neither hold
    /// the other's nor count against its limit.
    #[tokio::test(flavor = "current_thread")]
    async fn the_evidence_of_two_sessions_does_not_mix() {
        let (a, b) = (World::new(&[], &[], None), World::new(&[], &[], None));
        let (gate_a, gate_b) = (Arc::new(Gate::default()), Arc::new(Gate::default()));
        let (log_a, log_b) = (gated_log(&a, &gate_a), gated_log(&b, &gate_b));
        let _opens = Opens(Arc::clone(&gate_a));
        gate_a.set(true);
        let mut held = Vec::new();
        for n in 0..MAX_HELD as u64 + 1 {
            held.push(read(&a, n, "file:///etc/shadow"));
        }
        let inner_b = &b.enforcer.inner;
        let action = read(&b, 1, "file:///etc/shadow");
        assert!(matches!(action, Action::Defer(_)));
        assert!(
            inner_b
                .backlog
                .backpressure(inner_b.audit.get(), Side::Host)
                .is_none(),
            "session a's flood counted against session b's limit"
        );
        // b's denial resolves on b's own log, while a's still waits for its disk.
        assert!(denied(resolve(action).await));
        let records: Vec<Value> =
            std::fs::read_to_string(std::path::Path::new(&b.base).join("audit.jsonl"))
                .unwrap()
                .lines()
                .map(|l| serde_json::from_str(l).unwrap())
                .filter(|r: &Value| r["event"] == "decision")
                .collect();
        assert_eq!(records.len(), 1, "{records:?}");
        gate_a.set(false);
        for action in held {
            assert!(denied(resolve(action).await));
        }
        log_a.close(SessionEnd::default()).unwrap();
        log_b.close(SessionEnd::default()).unwrap();
    }

    /// A denial decided inside a handler that derives a context of its own (`tools/call`
    /// names its tool on its records) still reaches the message's evidence.
    #[test]
    fn a_denial_in_a_derived_context_is_in_the_messages_evidence() {
        let w = World::new(&[], &[], None);
        let log = gated_log(&w, &Arc::new(Gate::default()));
        let id = Id::from_string("1");
        let ctx = w.ctx(Side::Host, Kind::Request, m::TOOLS_CALL, &id);
        let message = json!({"jsonrpc": "2.0", "id": 1, "method": m::TOOLS_CALL,
            "params": {"name": "read_file", "arguments": {"path": "/etc/shadow"}}});
        let action = w
            .enforcer
            .inner
            .tools
            .call(&w.enforcer.inner, &ctx, &id, message);
        assert!(matches!(action, Action::Reply(_)), "{action:?}");
        assert!(!w.evidence.receipt().is_none());
        log.close(SessionEnd::default()).unwrap();
    }
}
