//! The only place in rootfence that opens files: the one ambient open of a root directory,
//! and capability-safe, non-blocking, size-capped reads beneath it.
//!
//! Owned by issue 3.
