//! Signed state for 2026-07-28 requests (placeholder).
