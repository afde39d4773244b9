//! Fuzz target: stdio framing (`jsonrpc::LineReader`) and the envelope scan
//! (`jsonrpc::scan`).
//!
//! Input: byte 0 picks the line limit (1–256), byte 1 the number of read steps (0–7), the
//! next bytes the steps (reads of 1–16 bytes, some after a `Pending`), and the rest is the
//! stream. Properties (in `tests/common/framing_model.rs`, shared with
//! `tests/framing_prop.rs`): no panic or hang; the frames are exactly those of a plain
//! reference model whatever the chunking (so every `Line` is UTF-8, has no `\n`, is within
//! the limit, is not blank, and keeps a `\r` only where the input line ended in `\r\r`);
//! line bytes + skipped bytes + newlines + blank-line bytes and dropped `\r` add up to the
//! input; an accepted message (single or batch element) parses as `serde_json::Value`, has
//! no duplicate key at any depth, and agrees with `Value` on kind and method; a "not JSON"
//! error is only given for text `Value` cannot read; the scan that builds the message's value
//! gives the same verdict and error, and the value it built is `serde_json::from_str`'s.
#![no_main]

#[path = "../../tests/common/framing_model.rs"]
mod framing_model;

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    framing_model::check_all(data);
});
