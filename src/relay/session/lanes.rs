//! The queues toward each destination (the host, or one server generation): a flow-controlled
//! lane for what is forwarded and a never-waited-on, bounded priority lane for what rootfence
//! itself says, read by that destination's writer task (`pump::writer`).

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use bytes::Bytes;
use tokio::sync::{mpsc, watch};

/// An item for a writer task.
#[derive(Debug)]
pub(crate) enum Outgoing {
    /// One message, without its newline.
    Line(Bytes),
    /// Flush and close the stream (the child's stdin, at shutdown).
    Close,
}

/// Messages a side may have queued on its priority lane before rootfence concludes that it
/// does not read at all.
const PRIO_MESSAGES: usize = 4096;
/// Bytes likewise.
const PRIO_BYTES: usize = 64 << 20;
/// Messages queued per lane for forwarding before the forwarder waits (flow control).
const MAIN_QUEUE: usize = 1024;
/// The queues toward one destination (the host, or one server generation).
///
/// `main` carries forwarded messages: a forwarder waits while it is full, which slows the
/// side it reads from (flow control). `prio` carries what rootfence itself says to this
/// destination (answers to its requests, rootfence's own requests, the handshake replayed to a
/// new generation): it is never waited on, so a pump answering the side it reads from cannot
/// deadlock with a peer blocked on its own output — but it is bounded, and a peer that lets it
/// fill up does not read at all (see [`super::Session::stuck`]).
#[derive(Debug, Clone)]
pub(crate) struct Lanes {
    pub(super) main: mpsc::Sender<Outgoing>,
    pub(super) prio: mpsc::Sender<Outgoing>,
    pub(super) prio_bytes: Arc<AtomicUsize>,
}

/// The receiving ends of [`Lanes`], for the writer task.
#[derive(Debug)]
pub(crate) struct LaneReceivers {
    pub main: mpsc::Receiver<Outgoing>,
    pub prio: mpsc::Receiver<Outgoing>,
    pub prio_bytes: Arc<AtomicUsize>,
}

impl Lanes {
    pub(crate) fn new() -> (Lanes, LaneReceivers) {
        let (main, main_rx) = mpsc::channel(MAIN_QUEUE);
        let (prio, prio_rx) = mpsc::channel(PRIO_MESSAGES);
        let bytes = Arc::new(AtomicUsize::new(0));
        (
            Lanes {
                main,
                prio,
                prio_bytes: Arc::clone(&bytes),
            },
            LaneReceivers {
                main: main_rx,
                prio: prio_rx,
                prio_bytes: bytes,
            },
        )
    }

    /// Queues on the priority lane without waiting. `Err` means the lane is full (the peer
    /// does not read); `Ok(false)` that the writer is gone.
    pub(super) fn try_prio(&self, line: Bytes) -> Result<bool, ()> {
        let len = line.len();
        if self.prio_bytes.load(Ordering::Relaxed) + len > PRIO_BYTES {
            return Err(());
        }
        match self.prio.try_send(Outgoing::Line(line)) {
            Ok(()) => {
                self.prio_bytes.fetch_add(len, Ordering::Relaxed);
                Ok(true)
            }
            Err(mpsc::error::TrySendError::Full(_)) => Err(()),
            Err(mpsc::error::TrySendError::Closed(_)) => Ok(false),
        }
    }
}

/// A live server generation, as the router sees it.
#[derive(Debug)]
pub(crate) struct GenLink {
    pub(super) lanes: Lanes,
    /// Opens the generation's `main` lane: closed while the handshake is replayed to it (or,
    /// for the first generation, until the host's `initialize` went ahead of everything).
    pub(super) gate: watch::Sender<bool>,
}

/// The writer's ends of a generation's queues: its lanes and its gate.
pub(crate) type GenQueues = (LaneReceivers, watch::Receiver<bool>);

impl GenLink {
    /// A new generation's queues, its gate closed.
    pub(crate) fn new() -> (GenLink, GenQueues) {
        let (lanes, receivers) = Lanes::new();
        let (gate, gate_rx) = watch::channel(false);
        (GenLink { lanes, gate }, (receivers, gate_rx))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The lanes' insides, for the pump's tests.
    impl Lanes {
        pub(crate) fn main_for_test(&self) -> &mpsc::Sender<Outgoing> {
            &self.main
        }

        pub(crate) fn prio_for_test(&self, line: Bytes) {
            assert!(matches!(self.try_prio(line), Ok(true)));
        }
    }
}
