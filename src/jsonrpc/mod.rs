//! JSON-RPC 2.0 for newline-delimited stdio: bounded framing, the strict envelope scan,
//! ids kept byte-exact, error codes.
