//! The messages one pump holds while their decisions wait (for the roots, for the audit
//! log): polled by the pump itself, not by a task each, and bounded by [`HELD_MESSAGES`] and
//! [`HELD_BYTES`].

use std::future::Future;
use std::pin::Pin;
use std::task::Poll;

use bytes::Bytes;

use super::{HELD_BYTES, HELD_MESSAGES, Step};

/// Messages held by one pump while their decisions wait: polled by the pump itself, bounded.
#[derive(Default)]
pub(super) struct Held {
    pub(super) items: Vec<HeldItem>,
    bytes: usize,
}

pub(super) struct HeldItem {
    fut: Pin<Box<dyn Future<Output = HeldDone> + Send>>,
    len: usize,
}

/// A held decision, made.
pub(super) enum HeldDone {
    One {
        step: Step,
        line: Bytes,
    },
    Batch {
        steps: Vec<Step>,
        originals: Vec<Bytes>,
    },
}

impl Held {
    pub(super) fn has_room(&self, len: usize) -> bool {
        self.items.len() < HELD_MESSAGES && self.bytes + len <= HELD_BYTES
    }

    pub(super) fn push(
        &mut self,
        len: usize,
        fut: impl Future<Output = HeldDone> + Send + 'static,
    ) {
        self.bytes += len;
        self.items.push(HeldItem {
            fut: Box::pin(fut),
            len,
        });
    }

    /// The next decision made; pending forever while nothing is held.
    pub(super) async fn next(&mut self) -> Option<HeldDone> {
        if self.items.is_empty() {
            return std::future::pending().await;
        }
        std::future::poll_fn(|cx| {
            for i in 0..self.items.len() {
                if let Poll::Ready(done) = self.items[i].fut.as_mut().poll(cx) {
                    let item = self.items.swap_remove(i);
                    self.bytes -= item.len;
                    return Poll::Ready(Some(done));
                }
            }
            Poll::Pending
        })
        .await
    }
}
