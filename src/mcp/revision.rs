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
        match s {
            "2024-11-05" => Revision::V2024_11_05,
            "2025-03-26" => Revision::V2025_03_26,
            "2025-06-18" => Revision::V2025_06_18,
            "2025-11-25" => Revision::V2025_11_25,
            "2026-07-28" => Revision::V2026_07_28,
            other => Revision::Other(other.into()),
        }
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

    /// True for 2026-07-28 and later: no `initialize`, no server-to-client requests on stdio
    /// (they travel inside `input_required` results instead). Revision strings are dates, so
    /// an unknown one is judged by comparing it as a date (`2024-10-07` is older, not newer).
    pub fn is_stateless(&self) -> bool {
        match self {
            Revision::V2026_07_28 => true,
            Revision::Other(s) => &**s > "2026-07-28",
            _ => false,
        }
    }
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
}
