//! JSON-RPC 2.0 for newline-delimited stdio: bounded framing, the strict envelope scan,
//! ids kept byte-exact, error codes and the responses rootfence builds itself.

pub mod envelope;
pub mod error;
pub mod framing;
pub mod id;
pub mod salvage;

pub use envelope::{
    Build, Capture, Deciding, Envelope, Kind, Rules, ScanError, Scanned, scan, scan_message,
    scan_message_with, scan_with,
};
pub use framing::{Frame, LineReader};
pub use id::{Id, IdKey};
