//! The session table: live HTTP sessions by `Mcp-Session-Id`, the cap on how many may be
//! open at once, each principal's share of it, and the reaper that ends idle sessions and
//! forgets ended ones.
//!
//! Shares: one principal (token) may hold at most [`Table::per_principal`] sessions (by
//! default half the cap when the token file holds several tokens), so another always finds
//! room. When the table is full anyway (three or more principals), a principal holding fewer
//! than its fair share (the cap divided among the principals holding sessions, itself
//! included) takes the slot of the longest-idle session (no open stream) of the principal
//! holding the most beyond its own fair share; that session ends as an idle one would.
//!
//! Session ids are 128 random bits from the OS (hex): unguessable, and only ever valid for
//! the principal that opened the session.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use super::session::HttpSession;

/// The live sessions.
#[derive(Debug)]
pub struct Table {
    sessions: Mutex<HashMap<String, Arc<HttpSession>>>,
    /// Most sessions open at once.
    pub max: usize,
    /// Most sessions one principal may hold.
    pub per_principal: usize,
    /// A session with no open stream and no message for this long is ended.
    pub idle: Duration,
    /// When replicas share sessions: session ids name this replica.
    pub owner: Option<super::owner::Owner>,
}

/// Why no session could be opened.
#[derive(Debug, thiserror::Error)]
pub enum Full {
    /// The table is full.
    #[error("rootfence is serving its maximum of {0} sessions")]
    Table(usize),
    /// The principal holds its share.
    #[error(
        "this client's token already holds its share of {0} sessions; end one (DELETE) or wait for one to go idle"
    )]
    Share(usize),
}

impl Table {
    /// An empty table.
    pub fn new(
        max: usize,
        per_principal: usize,
        idle: Duration,
        owner: Option<super::owner::Owner>,
    ) -> Arc<Table> {
        Arc::new(Table {
            sessions: Mutex::default(),
            max,
            per_principal: per_principal.clamp(1, max.max(1)),
            idle,
            owner,
        })
    }

    fn lock(&self) -> MutexGuard<'_, HashMap<String, Arc<HttpSession>>> {
        self.sessions.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// A fresh session id: 128 random bits (hex), naming this replica when replicas share
    /// sessions (`owner.rs`).
    pub fn new_id(&self) -> String {
        let mut bytes = [0u8; 16];
        getrandom::getrandom(&mut bytes).expect("the OS random source is available");
        let random: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
        match &self.owner {
            Some(owner) => owner.session_id(&random),
            None => random,
        }
    }

    /// Reserves room for one more session and builds it with `open` (which receives its id).
    pub fn open(
        &self,
        principal: &Option<String>,
        open: impl FnOnce(String) -> Arc<HttpSession>,
    ) -> Result<Arc<HttpSession>, Full> {
        let mut sessions = self.lock();
        sessions.retain(|_, s| !s.is_done());
        let mut held: HashMap<&Option<String>, usize> = HashMap::new();
        for s in sessions.values().filter(|s| s.is_open()) {
            *held.entry(&s.principal).or_default() += 1;
        }
        let mine = held.get(principal).copied().unwrap_or(0);
        if mine >= self.per_principal {
            return Err(Full::Share(self.per_principal));
        }
        if sessions.len() >= self.max {
            let holders = held.len() + usize::from(mine == 0);
            let fair = self.max / holders.max(1);
            if mine >= fair {
                return Err(Full::Table(self.max));
            }
            // The principal holding the most beyond its fair share gives up its longest-idle
            // session.
            let victim = held
                .iter()
                .filter(|(p, n)| **n > fair && **p != principal)
                .max_by_key(|(_, n)| **n)
                .map(|(p, _)| (*p).clone())
                .and_then(|heavy| {
                    sessions
                        .values()
                        .filter(|s| s.principal == heavy && s.router.open_streams() == 0)
                        .max_by_key(|s| s.router.idle_for())
                        .map(|s| s.id.clone())
                });
            let Some(victim) = victim else {
                return Err(Full::Table(self.max));
            };
            if let Some(s) = sessions.remove(&victim) {
                tracing::info!(session = %s.id, "ending an idle session to give another client its share");
                s.close();
            }
        }
        let session = open(self.new_id());
        sessions.insert(session.id.clone(), Arc::clone(&session));
        Ok(session)
    }

    /// The live session with this id.
    pub fn get(&self, id: &str) -> Option<Arc<HttpSession>> {
        let session = self.lock().get(id).cloned()?;
        session.is_open().then_some(session)
    }

    /// Takes a session out of the table (it is then ended by the caller).
    pub fn remove(&self, id: &str) -> Option<Arc<HttpSession>> {
        self.lock().remove(id)
    }

    /// How many sessions are open.
    pub fn len(&self) -> usize {
        self.lock().values().filter(|s| !s.is_done()).count()
    }

    /// Whether none is.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Every session (for a drain).
    pub fn all(&self) -> Vec<Arc<HttpSession>> {
        self.lock().values().cloned().collect()
    }

    /// Ends sessions idle for longer than [`Table::idle`] and forgets ended ones; returns
    /// how many were ended.
    pub fn reap(&self) -> usize {
        let mut ended = 0;
        let mut sessions = self.lock();
        sessions.retain(|id, s| {
            if s.is_done() {
                return false;
            }
            let idle = s.router.open_streams() == 0 && s.router.idle_for() >= self.idle;
            if idle || !s.is_open() {
                tracing::info!(session = %id, "ending an idle or finished session");
                s.close();
                ended += 1;
            }
            // Kept until its relay is done, so its audit session closes before it is gone.
            true
        });
        ended
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_128_random_bits_in_hex() {
        let t = Table::new(1, 1, Duration::from_secs(1), None);
        let a = t.new_id();
        let b = t.new_id();
        assert_eq!(a.len(), 32);
        assert!(a.bytes().all(|c| c.is_ascii_hexdigit()));
        assert_ne!(a, b);
    }
}
