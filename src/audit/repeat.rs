//! Repeated protocol errors, counted instead of logged one by one.
//!
//! A hostile peer can send bad lines as fast as a pipe carries them; a full record for each
//! (about 350 bytes for a 2-byte line) would let it fill the disk through the audit log. So
//! the first protocol error of a kind (per direction) is logged in full, and the ones that
//! follow within [`REPEAT_INTERVAL`] are only counted: the writer turns each interval's count
//! into one `protocol_error_repeated` record (with the interval's first occurrence in full),
//! and keeps counting while they keep coming. An interval with no repeat closes the window,
//! so the next error is logged in full again. Whatever the input, a kind costs the log at
//! most two records per interval.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use super::event::{
    Direction, ProtocolError, ProtocolErrorKind, ProtocolErrorRepeated, ProtocolErrorSample,
};
use super::time::{now_micros, rfc3339};

/// How long repeats of one kind are counted before their count is written.
pub const REPEAT_INTERVAL: Duration = Duration::from_secs(1);

#[derive(Debug)]
struct Window {
    started: Instant,
    started_ts: i64,
    count: u64,
    bytes: u64,
    first: Option<ProtocolErrorSample>,
}

/// The open windows, by direction and kind.
#[derive(Debug, Default)]
pub(super) struct Repeats {
    windows: HashMap<(Direction, ProtocolErrorKind), Window>,
}

impl Repeats {
    /// Gives `e` back when it is to be logged in full (no window of its kind is open, and one
    /// opens now); otherwise counts it into the open window.
    pub fn admit(&mut self, e: ProtocolError, now: Instant) -> Option<ProtocolError> {
        match self.windows.get_mut(&(e.direction, e.kind)) {
            None => {
                self.windows.insert(
                    (e.direction, e.kind),
                    Window {
                        started: now,
                        started_ts: now_micros(),
                        count: 0,
                        bytes: 0,
                        first: None,
                    },
                );
                Some(e)
            }
            Some(w) => {
                w.count += 1;
                w.bytes = w.bytes.saturating_add(e.len);
                if w.first.is_none() {
                    w.first = Some(ProtocolErrorSample {
                        detail: e.detail,
                        len: e.len,
                        sha256: e.sha256,
                        id: e.id,
                    });
                }
                None
            }
        }
    }

    /// When the next window ends.
    pub fn next_deadline(&self) -> Option<Instant> {
        self.windows
            .values()
            .map(|w| w.started + REPEAT_INTERVAL)
            .min()
    }

    /// The records of the windows that are over at `now` (every window when `all`). A window
    /// that counted something starts again; one that counted nothing closes.
    pub fn due(&mut self, now: Instant, all: bool) -> Vec<ProtocolErrorRepeated> {
        let mut out = Vec::new();
        self.windows.retain(|&(direction, kind), w| {
            if !all && now < w.started + REPEAT_INTERVAL {
                return true;
            }
            if w.count == 0 {
                return false;
            }
            out.push(ProtocolErrorRepeated {
                direction,
                kind,
                count: w.count,
                bytes: w.bytes,
                since: rfc3339(w.started_ts),
                first: w.first.take().unwrap_or_default(),
            });
            w.started = now;
            w.started_ts = now_micros();
            w.count = 0;
            w.bytes = 0;
            true
        });
        // Stable order for the log: by the time each interval began, then by kind.
        out.sort_by(|a, b| a.since.cmp(&b.since));
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn err(kind: ProtocolErrorKind, len: u64) -> ProtocolError {
        ProtocolError {
            direction: Direction::ServerToHost,
            kind,
            detail: "bad_json: x".into(),
            len,
            sha256: None,
            id: None,
        }
    }

    #[test]
    fn first_in_full_then_counted_per_interval() {
        let mut r = Repeats::default();
        let t0 = Instant::now();
        assert!(
            r.admit(err(ProtocolErrorKind::InvalidJson, 2), t0)
                .is_some()
        );
        for _ in 0..1000 {
            assert!(
                r.admit(err(ProtocolErrorKind::InvalidJson, 2), t0)
                    .is_none()
            );
        }
        // Another kind opens its own window.
        assert!(r.admit(err(ProtocolErrorKind::Oversized, 9), t0).is_some());
        assert!(
            r.due(t0, false).is_empty(),
            "nothing is due before the interval ends"
        );
        let t1 = t0 + REPEAT_INTERVAL;
        let due = r.due(t1, false);
        assert_eq!(due.len(), 1, "{due:?}");
        assert_eq!((due[0].count, due[0].bytes), (1000, 2000));
        assert_eq!(due[0].first.len, 2);
        // The oversized window counted nothing: it closed, so the next one is in full again.
        assert!(r.admit(err(ProtocolErrorKind::Oversized, 9), t1).is_some());
        // The invalid_json window restarted: still counting.
        assert!(
            r.admit(err(ProtocolErrorKind::InvalidJson, 2), t1)
                .is_none()
        );
        let due = r.due(t1, true);
        assert_eq!(due.len(), 1);
        assert_eq!(due[0].count, 1);
        // A quiet interval closes it.
        assert!(r.due(t1 + 2 * REPEAT_INTERVAL, false).is_empty());
        assert!(r.next_deadline().is_none());
    }
}
