//! MCP method names, protocol revisions, and typed views of only the messages rootfence
//! intercepts.
