//! JSON-RPC error codes and the error responses rootfence builds itself.
//!
//! Standard codes come from JSON-RPC 2.0. rootfence's own codes sit in the range that every MCP
//! revision leaves to implementations (-32000 to -32019; 2026-07-28 reserves -32020 and
//! below for the protocol). Every message rootfence writes starts with `rootfence: ` so a user
//! can tell the proxy's answers from the server's.

use serde_json::{Value, json};

use super::id::Id;

/// Invalid JSON was received.
pub const PARSE_ERROR: i64 = -32700;
/// The JSON is not a valid JSON-RPC message.
pub const INVALID_REQUEST: i64 = -32600;
/// The method does not exist or is not available.
pub const METHOD_NOT_FOUND: i64 = -32601;
/// Invalid method parameters.
pub const INVALID_PARAMS: i64 = -32602;
/// Internal error.
pub const INTERNAL_ERROR: i64 = -32603;
/// MCP resource not found, 2024-11-05 to 2025-11-25 (2026-07-28 uses `INVALID_PARAMS`).
pub const RESOURCE_NOT_FOUND: i64 = -32002;

/// The server exited or closed its output before answering. Same code as the TypeScript SDK's
/// `ConnectionClosed`, so SDK clients treat it alike.
pub const SERVER_GONE: i64 = -32000;
/// rootfence denied the request (roots or policy). `data` carries `uri`, `reason`, `rule`.
pub const DENIED: i64 = -32010;
/// The server's answer was malformed and was withheld from the host.
pub const BAD_SERVER_RESPONSE: i64 = -32011;

/// Builds an error response line (without the newline) for `id` (`null` when unknown).
pub fn error_response(id: Option<&Id>, code: i64, message: &str, data: Option<Value>) -> Vec<u8> {
    let mut error = json!({ "code": code, "message": message });
    if let Some(data) = data {
        error["data"] = data;
    }
    let msg = json!({
        "jsonrpc": "2.0",
        "id": id.map_or(Value::Null, Id::to_value),
        "error": error,
    });
    serde_json::to_vec(&msg).expect("a JSON value always serializes")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn error_response_echoes_big_integer_ids() {
        let raw: Box<serde_json::value::RawValue> =
            serde_json::from_str("1234567890123456789012345").unwrap();
        let id = Id::from_raw(&raw).unwrap();
        let line = error_response(Some(&id), SERVER_GONE, "rootfence: gone", None);
        assert_eq!(
            std::str::from_utf8(&line).unwrap(),
            r#"{"jsonrpc":"2.0","id":1234567890123456789012345,"error":{"code":-32000,"message":"rootfence: gone"}}"#
        );
        let line = error_response(None, PARSE_ERROR, "x", Some(json!({"a": 1})));
        assert_eq!(
            std::str::from_utf8(&line).unwrap(),
            r#"{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"x","data":{"a":1}}}"#
        );
    }
}
