//! What rootfence knows of the MCP protocol, in one place: every method name
//! (`methods`, spelled nowhere else), the protocol revisions and what differs between them
//! (`Revision`'s methods), and the one table of where URIs sit in each message (`uris`),
//! which the enforcer routes from and docs/enforcement.md renders.

pub mod methods;
mod revision;
pub mod uris;

pub use revision::{Revision, Revisions};
