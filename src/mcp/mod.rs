//! What rootfence knows of the MCP protocol, in one place: every method name
//! (`methods`, spelled nowhere else), the protocol revisions and what differs between them
//! (`Revision`'s methods).

pub mod methods;
mod revision;

pub use revision::{Revision, Revisions};
