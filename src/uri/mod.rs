//! Strict `file:` URI parsing (RFC 8089) and the canonical form rootfence forwards.
//!
//! Owned by issue 3. Nothing here touches the filesystem: containment is decided in
//! [`crate::roots`], beneath an open directory capability.
