//! The one capacity model of `serve`: the slots that hold a relay and its server process
//! (HTTP sessions by `Mcp-Session-Id`, and the pooled relays of 2026-07-28 requests by
//! principal and roots), how many may be held at once and by one principal, which slot gives
//! way to another principal's, and the reaper that ends idle ones.
//!
//! Shares: one principal (token) may hold at most [`Capacity::per_principal`] slots (by
//! default half the cap when the token file holds several tokens), so another always finds
//! room. When the cap is reached anyway (three or more principals), a principal holding fewer
//! than its fair share (the cap divided among the principals holding slots, itself included)
//! takes a slot beyond a fair share; that slot ends as an idle one would.
//!
//! The two kinds differ in one thing, `recycle`. A session is its client's state: a principal
//! at its share, or at its fair share of a full table, is refused (it ends one of its own);
//! the slot taken is the longest-idle session (no open stream) of the principal holding the
//! most beyond its fair share; and an ended session counts against the cap until its server
//! has stopped. Pooled relays are a cache of servers: the principal's own longest-idle relay
//! gives way to its new one; at the cap the longest-idle relay of any principal beyond its
//! fair share does, else any idle relay; and only open relays count against the caps.
//!
//! An ended slot stays listed until its relay is done (its server stopped, its audit session
//! closed), so a drain waits for it, and the `sessions` gauge counts it until then.

use std::borrow::Borrow;
use std::collections::HashMap;
use std::hash::Hash;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use super::session::HttpSession;

/// The slots of one kind.
#[derive(Debug)]
pub struct Capacity<K> {
    slots: Mutex<HashMap<K, Arc<HttpSession>>>,
    /// Most slots held at once.
    pub max: usize,
    /// Most slots one principal may hold.
    pub per_principal: usize,
    /// A slot with no open stream and no message for this long is ended.
    pub idle: Duration,
    /// Whether a principal's own idle slot gives way to its new one (pooled relays).
    recycle: bool,
}

/// Why no slot could be opened.
#[derive(Debug, thiserror::Error)]
pub enum Full {
    /// Every slot is held.
    #[error(
        "rootfence is serving its maximum of {0} sessions; try again later (or raise --max-sessions)"
    )]
    Table(usize),
    /// The principal holds its share.
    #[error(
        "this client's token already holds its share of {0} sessions; end one (DELETE) or wait for one to go idle (--max-sessions-per-token)"
    )]
    Share(usize),
}

impl<K: Eq + Hash + Clone> Capacity<K> {
    /// No slot held yet.
    pub fn new(max: usize, per_principal: usize, idle: Duration, recycle: bool) -> Capacity<K> {
        Capacity {
            slots: Mutex::default(),
            max,
            per_principal: per_principal.clamp(1, max.max(1)),
            idle,
            recycle,
        }
    }

    fn lock(&self) -> MutexGuard<'_, HashMap<K, Arc<HttpSession>>> {
        crate::relock(&self.slots)
    }

    /// The open slot under `reuse`, if there is one; else makes room for one more slot of
    /// `principal` and fills it with what `open` builds.
    pub fn open(
        &self,
        principal: &Option<String>,
        reuse: Option<&K>,
        open: impl FnOnce() -> (K, Arc<HttpSession>),
    ) -> Result<Arc<HttpSession>, Full> {
        let mut slots = self.lock();
        if let Some(s) = reuse.and_then(|k| slots.get(k)).filter(|s| s.is_open()) {
            return Ok(Arc::clone(s));
        }
        slots.retain(|_, s| !s.is_done());
        let mut held: HashMap<&Option<String>, usize> = HashMap::new();
        for s in slots.values().filter(|s| s.is_open()) {
            *held.entry(&s.principal).or_default() += 1;
        }
        let mine = held.get(principal).copied().unwrap_or(0);
        // What counts against the cap: a session being ended still holds its server until its
        // relay is done; a pooled relay told to stop does not.
        let used = if self.recycle {
            held.values().sum()
        } else {
            slots.len()
        };
        // The longest-idle open slot (no open stream) of a principal `whose` accepts.
        let longest_idle = |whose: &dyn Fn(&Option<String>) -> bool| {
            slots
                .iter()
                .filter(|(_, s)| s.is_open() && s.router.open_streams() == 0 && whose(&s.principal))
                .max_by_key(|(_, s)| s.router.idle_for())
                .map(|(k, _)| k.clone())
        };
        let victim = if mine >= self.per_principal {
            let own = self.recycle.then(|| longest_idle(&|p| p == principal));
            Some(own.flatten().ok_or(Full::Share(self.per_principal))?)
        } else if used >= self.max {
            let fair = self.max / (held.len() + usize::from(mine == 0)).max(1);
            let over =
                |p: &Option<String>| p != principal && held.get(p).is_some_and(|n| *n > fair);
            let victim = if self.recycle {
                longest_idle(&over).or_else(|| longest_idle(&|_| true))
            } else if mine < fair {
                // A session: the principal holding the most beyond its fair share gives way.
                held.iter()
                    .filter(|(p, _)| over(p))
                    .max_by_key(|(_, n)| **n)
                    .and_then(|(h, _)| longest_idle(&|p| p == *h))
            } else {
                // A principal at its fair share of a full table ends one of its own.
                None
            };
            Some(victim.ok_or(Full::Table(self.max))?)
        } else {
            None
        };
        if let Some(s) = victim.and_then(|k| slots.remove(&k)) {
            if self.recycle {
                tracing::info!(session = %s.id, "stopping the least recently used pooled server");
            } else {
                tracing::info!(session = %s.id, "ending an idle session to give another client its share");
            }
            s.close();
        }
        let (key, session) = open();
        slots.insert(key, Arc::clone(&session));
        Ok(session)
    }

    /// The open slot under `key`.
    pub fn get<Q: Eq + Hash + ?Sized>(&self, key: &Q) -> Option<Arc<HttpSession>>
    where
        K: Borrow<Q>,
    {
        let session = self.lock().get(key).cloned()?;
        session.is_open().then_some(session)
    }

    /// Takes a slot out (it is then ended by the caller).
    pub fn remove(&self, key: &K) -> Option<Arc<HttpSession>> {
        self.lock().remove(key)
    }

    /// How many slots are held (their relay not done).
    pub fn len(&self) -> usize {
        self.lock().values().filter(|s| !s.is_done()).count()
    }

    /// Whether none is.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Every slot (for a drain).
    pub fn all(&self) -> Vec<Arc<HttpSession>> {
        self.lock().values().cloned().collect()
    }

    /// Ends slots idle for longer than [`Capacity::idle`] (and finished ones) and forgets
    /// those whose relay is done.
    fn reap(&self) {
        self.lock().retain(|_, s| {
            if s.is_done() {
                return false;
            }
            let idle = s.router.open_streams() == 0 && s.router.idle_for() >= self.idle;
            if idle || !s.is_open() {
                tracing::info!(session = %s.id, "ending an idle or finished session");
                s.close();
            }
            // Kept until its relay is done, so its audit session closes before it is gone.
            true
        });
    }

    /// Runs the reaper until the process ends.
    pub async fn reaper(self: Arc<Self>) {
        let period = (self.idle / 4).clamp(Duration::from_millis(200), Duration::from_secs(30));
        loop {
            tokio::time::sleep(period).await;
            self.reap();
        }
    }
}
