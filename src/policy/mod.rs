//! Layered TOML policies: raw schema, validation with spans, the compiled immutable policy,
//! and decisions that carry their provenance (layer file, line, rule).
//!
//! Owned by issue 4.
