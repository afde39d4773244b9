//! The effective root set: each root canonicalized and held as one `cap_std::fs::Dir`,
//! matched component-wise, with resolution beneath the root decided by the kernel.
//!
//! Owned by issue 3 (checks) and issue 6 (host roots ∩ operator bounds).
