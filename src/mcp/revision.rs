//! The MCP protocol revisions rootfence speaks, and what differs between them on the wire.

use std::fmt;

/// A protocol revision, as negotiated in `initialize` or carried in `_meta` (2026-07-28).
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Revision {
    /// 2024-11-05, the first revision.
    V2024_11_05,
    /// 2025-03-26: batches, Streamable HTTP.
    V2025_03_26,
    /// 2025-06-18: batches removed, resource links, elicitation.
    V2025_06_18,
    /// 2025-11-25: tasks, icons, sampling tools.
    V2025_11_25,
    /// 2026-07-28: stateless, MRTR, `subscriptions/listen`, roots deprecated.
    V2026_07_28,
    /// A revision rootfence does not know; handled like the newest it knows.
    Other(Box<str>),
}

impl Revision {
    /// Every revision rootfence knows, oldest first.
    pub const KNOWN: [Revision; 5] = [
        Revision::V2024_11_05,
        Revision::V2025_03_26,
        Revision::V2025_06_18,
        Revision::V2025_11_25,
        Revision::V2026_07_28,
    ];

    /// Reads a revision string such as `"2025-06-18"`.
    pub fn parse(s: &str) -> Revision {
        let known = Revision::KNOWN.iter().find(|r| r.as_str() == s);
        known.cloned().unwrap_or_else(|| Revision::Other(s.into()))
    }

    /// The revision string.
    pub fn as_str(&self) -> &str {
        match self {
            Revision::V2024_11_05 => "2024-11-05",
            Revision::V2025_03_26 => "2025-03-26",
            Revision::V2025_06_18 => "2025-06-18",
            Revision::V2025_11_25 => "2025-11-25",
            Revision::V2026_07_28 => "2026-07-28",
            Revision::Other(s) => s,
        }
    }

    /// This revision is `other` or newer. Revision strings are dates, so an unknown one is
    /// judged by comparing it as a date (`2024-10-07` is older, not newer); one that is not
    /// a date at all (`draft`) sorts after every date, like the newest revision.
    pub fn since(&self, other: &Revision) -> bool {
        self.as_str() >= other.as_str()
    }

    /// True for 2026-07-28 and later: no `initialize`, no server-to-client requests on stdio
    /// (they travel inside `input_required` results instead).
    pub fn is_stateless(&self) -> bool {
        self.since(&Revision::V2026_07_28)
    }

    /// Multi-round-trip requests (2026-07-28): a result may be `input_required`, carrying the
    /// server's questions in `inputRequests`, and the host retries with `inputResponses`.
    pub fn has_input_required(&self) -> bool {
        self.is_stateless()
    }

    /// Every result names its kind in `resultType` (`"complete"` for an ordinary one).
    pub fn results_carry_result_type(&self) -> bool {
        self.is_stateless()
    }

    /// The host states its capabilities (roots among them) in every request's `_meta`,
    /// not once in `initialize`.
    pub fn capabilities_per_request(&self) -> bool {
        self.is_stateless()
    }

    /// The error code of a `resources/read` for a resource that does not exist: `-32602`
    /// (invalid params) from 2026-07-28, `-32002` before, as each revision's resources page
    /// says.
    pub fn resource_not_found_code(&self) -> i64 {
        if self.is_stateless() {
            crate::jsonrpc::error::INVALID_PARAMS
        } else {
            crate::jsonrpc::error::RESOURCE_NOT_FOUND
        }
    }
}

/// The revisions a message or a field exists in (a row of the URI table, `super::uris`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Revisions {
    /// Every revision.
    All,
    /// This revision and the newer ones.
    Since(&'static str),
    /// Up to and including this revision.
    Until(&'static str),
}

impl fmt::Display for Revision {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn revisions_round_trip_and_order() {
        for r in Revision::KNOWN {
            assert_eq!(Revision::parse(r.as_str()), r);
        }
        assert!(Revision::V2024_11_05 < Revision::V2026_07_28);
        assert!(!Revision::V2025_11_25.is_stateless());
        assert!(Revision::V2026_07_28.is_stateless());
        assert_eq!(Revision::parse("2099-01-01").as_str(), "2099-01-01");
        assert!(Revision::parse("2099-01-01").is_stateless());
        assert!(!Revision::parse("2024-10-07").is_stateless());
    }

    #[test]
    fn each_fact_holds_in_the_revisions_that_have_it() {
        // (revision, input_required, not-found code)
        let table = [
            ("2024-11-05", false, -32002),
            ("2025-03-26", false, -32002),
            ("2025-06-18", false, -32002),
            ("2025-11-25", false, -32002),
            ("2026-07-28", true, -32602),
            ("2099-01-01", true, -32602),
        ];
        for (r, mrtr, not_found) in table {
            let r = Revision::parse(r);
            assert_eq!(r.has_input_required(), mrtr, "{r}");
            assert_eq!(r.results_carry_result_type(), mrtr, "{r}");
            assert_eq!(r.capabilities_per_request(), mrtr, "{r}");
            assert_eq!(r.resource_not_found_code(), not_found, "{r}");
        }
    }
}
