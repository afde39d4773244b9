//! The tamper-evident audit log: event schema, the hash-chained JSON Lines writer, and the
//! `verify`, `summary` and `show` readers.
//!
//! Owned by issue 5.
