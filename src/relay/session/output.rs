//! Sending: forwarded messages on the flow-controlled lanes, rootfence's own on the priority
//! lanes, the gates that hold a generation's forwarded lane while the host's `initialize`
//! (or the replayed handshake) goes first, and closing the streams.

use std::sync::Arc;

use bytes::Bytes;

use super::*;

impl Session {
    /// Forwards a message from the server to the host, waiting while the host's queue is full
    /// (flow control). (A message for a writer that stopped is dropped.)
    pub(crate) async fn send_host(&self, line: Bytes) {
        let _ = self.to_host.main.send(Outgoing::Line(line)).await;
    }

    /// Forwards a message to one server generation, waiting while its queue is full. (A
    /// message for a generation that is gone is dropped.)
    pub(crate) async fn send_server(&self, generation: Gen, line: Bytes) {
        let lanes = self.state().gens.get(&generation).map(|l| l.lanes.clone());
        if let Some(lanes) = lanes {
            let _ = lanes.main.send(Outgoing::Line(line)).await;
        }
    }

    /// Sends a message of rootfence's own (or an answer) to the host without ever waiting:
    /// used when a pump answers the side it reads from, which must not block on that side's
    /// input (a peer that is blocked writing its output does not read its input). Bounded: a
    /// host that lets the queue fill up does not read, and the session ends.
    pub fn send_detached(self: &Arc<Self>, line: Bytes) {
        if self.to_host.try_prio(line).is_err() {
            self.stuck(Side::Host, 0);
        }
    }

    /// Sends to one server generation on its priority lane (ahead of forwarded messages, and
    /// past the gate of a generation being brought up).
    pub(crate) fn send_prio_server(&self, generation: Gen, line: Bytes) {
        let lanes = self.state().gens.get(&generation).map(|l| l.lanes.clone());
        match lanes.map(|l| l.try_prio(line)) {
            Some(Err(())) => self.stuck(Side::Server, generation),
            Some(Ok(_)) => {}
            None => {
                tracing::debug!("dropping a message for server generation {generation}: it is gone")
            }
        }
    }

    pub(super) fn stuck(&self, side: Side, generation: Gen) {
        tracing::warn!(
            "the {} does not read its input (its queue is full)",
            match side {
                Side::Host => "host".to_owned(),
                Side::Server => format!("server (generation {generation})"),
            }
        );
        let _ = self.events.try_send(Event::Stuck { side, generation });
    }

    /// Closes the host's output (rootfence's stdout) after everything queued so far.
    pub(crate) async fn close_host_output(&self) {
        let _ = self.to_host.main.send(Outgoing::Close).await;
    }

    /// Closes one generation's input (its stdin) after everything queued so far, and stops
    /// routing to it.
    pub(crate) async fn close_server_input(&self, generation: Gen) {
        let link = self.state().gens.remove(&generation);
        if let Some(link) = link {
            link.gate.send_replace(true);
            let _ = link.lanes.main.send(Outgoing::Close).await;
        }
    }

    /// Opens a generation's forwarded lane.
    pub(crate) fn open_gate(&self, generation: Gen) {
        if let Some(link) = self.state().gens.get(&generation) {
            link.gate.send_replace(true);
        }
    }

    /// Notes that the host sent something for the server: the first generation's lane opens
    /// unless the host's `initialize` is still being decided (it must go first).
    pub(crate) fn host_message_seen(&self, is_initialize: bool) {
        let mut st = self.state();
        match (st.init, is_initialize) {
            (InitPhase::NotSeen, true) => st.init = InitPhase::Held,
            (InitPhase::NotSeen, false) => initialize_done(&mut st),
            _ => {}
        }
    }

    /// The host's `initialize` was forwarded (or answered): what the host sends after it may
    /// follow it to the first generation now.
    pub(crate) fn initialize_decided(&self) {
        initialize_done(&mut self.state());
    }
}

/// The host's `initialize` is out of the way: the first generation's lane opens.
fn initialize_done(st: &mut State) {
    if st.init != InitPhase::Done {
        st.init = InitPhase::Done;
        if let Some(link) = st.gens.get(&1) {
            link.gate.send_replace(true);
        }
    }
}
