//! Rewriting host configuration files (Claude Desktop, Claude Code, VS Code, Cursor) so that
//! every stdio server runs behind `rootfence run`, and restoring them exactly.
//!
//! Owned by issue 8.
