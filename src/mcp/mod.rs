//! MCP method names, protocol revisions, and typed views of only the messages rootfence
//! intercepts. Method names are constants here and nowhere else, so a typo is a compile error
//! rather than a silently unmatched string.

pub mod methods;
mod revision;

pub use revision::Revision;
