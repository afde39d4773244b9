//! Property tests for the stdio framing and the envelope scan: the `framing` fuzz target's
//! properties (`tests/common/framing_model.rs`), run by `cargo test` so CI checks them
//! without cargo-fuzz.
//!
//! `LineReader` must give exactly the reference model's frames for any input, limit and
//! chunking (reads of 1–16 bytes, with `Pending` in between); each line it produces goes
//! through `scan`, whose accepted messages must be plain JSON to `serde_json::Value` with no
//! duplicate key, and whose "not JSON" errors must be for text that is not JSON.

#[path = "common/framing_model.rs"]
mod framing_model;

use framing_model::{Chunk, check_framing, check_scan, first_duplicate_key};
use proptest::prelude::*;

/// Bytes that matter to framing, often; any byte sometimes.
fn framing_byte() -> impl Strategy<Value = u8> {
    prop_oneof![
        4 => prop::sample::select(b"\n\r \tab{}\"".to_vec()),
        1 => prop::sample::select(vec![0xff, 0xc3, 0xa9, 0xe2, 0x80, 0xa8, 0xc0, 0xaf, 0]),
        1 => any::<u8>(),
    ]
}

/// Pieces of JSON-RPC messages, so that some lines scan as messages, batches, duplicates.
fn json_piece() -> impl Strategy<Value = &'static str> {
    prop::sample::select(vec![
        "{",
        "}",
        "[",
        "]",
        ",",
        ":",
        " ",
        "\r",
        "\n",
        "\r\n",
        "\"jsonrpc\":\"2.0\"",
        "\"jsonrpc\":\"1.0\"",
        "\"id\":1",
        "\"id\":\"a\"",
        "\"id\":null",
        "\"id\":1.5",
        "\"method\":\"m\"",
        "\"method\":\"\\u006d\"",
        "\"result\":{}",
        "\"result\":[1,2]",
        "\"error\":{\"code\":-1,\"message\":\"x\"}",
        "\"params\":{\"a\":1,\"a\":2}",
        "\"params\":{\"_meta\":{\"k\":1}}",
        "\"params\":[{}]",
        // Where the enforcer's capture reads (`jsonrpc::envelope::capture`).
        "\"params\":{\"uri\":\"a\"}",
        "\"result\":{\"resources\":[{\"uri\":\"a\",\"icons\":[]}]}",
        "\"result\":{\"contents\":[{\"uri\":\"a\",\"text\":\"\\u0074\"}]}",
        "\"resources\":[",
        "\"contents\":[",
        "\"uri\":\"a\"",
        "\"icons\":[",
        "\"a\":1",
        "\"a\":{\"b\":2}",
        "\"\\u0061\":1",
        "\"\\ud800\"",
        "1e400",
        "-0",
        "true",
        "null",
        "{\"jsonrpc\":\"2.0\",\"method\":\"m\"}",
        "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}",
    ])
}

fn script() -> impl Strategy<Value = Vec<Chunk>> {
    prop::collection::vec(
        (any::<bool>(), 1usize..=16).prop_map(|(pending_first, size)| Chunk {
            pending_first,
            size,
        }),
        0..6,
    )
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn framing_matches_the_model_for_any_bytes_and_chunking(
        input in prop::collection::vec(framing_byte(), 0..160),
        max in 1usize..24,
        script in script(),
    ) {
        for line in check_framing(&input, max, script) {
            check_scan(&line);
        }
    }

    #[test]
    fn json_lines_frame_and_scan_consistently(
        pieces in prop::collection::vec(json_piece(), 0..40),
        max in prop_oneof![1usize..16, 40usize..200],
        script in script(),
    ) {
        let input = pieces.concat();
        for line in check_framing(input.as_bytes(), max, script) {
            check_scan(&line);
        }
    }
}

/// The model itself, pinned on the cases the framing unit tests use, so a wrong model
/// cannot make the properties vacuous.
#[test]
fn the_model_frames_like_the_documented_rule() {
    use framing_model::{Expected, model};
    let line = |s: &str| Expected::Line(s.as_bytes().to_vec());
    let cases: Vec<(&[u8], usize, Vec<Expected>)> = vec![
        (b"a\nb\n", 100, vec![line("a"), line("b")]),
        (b"a\r\nb\r\n", 100, vec![line("a"), line("b")]),
        (b"\n\n  \n\t\r\na\n\n", 100, vec![line("a")]),
        (b"last", 100, vec![line("last")]),
        (b"last\r", 100, vec![line("last")]),
        (b"a\r\r\n", 100, vec![line("a\r")]),
        (
            b"12345\n123456\n1234\n",
            5,
            vec![line("12345"), Expected::TooLong(6), line("1234")],
        ),
        (b"12345\r\n", 5, vec![line("12345")]),
        (b"123456\r\n", 5, vec![Expected::TooLong(6)]),
        (b"\xff\n", 5, vec![Expected::InvalidUtf8(vec![0xff])]),
        (b"", 5, vec![]),
    ];
    for (input, max, want) in cases {
        assert_eq!(model(input, max).frames, want, "{input:?}");
    }
    let m = model(b" \n12\r\n\r", 5);
    assert_eq!((m.newlines, m.unreported), (2, 3));
}

#[test]
fn the_duplicate_key_oracle_sees_duplicates_at_every_depth() {
    assert_eq!(first_duplicate_key(r#"{"a":1,"b":2}"#), None);
    assert_eq!(
        first_duplicate_key(r#"{"a":1,"a":2}"#).as_deref(),
        Some("a")
    );
    assert_eq!(
        first_duplicate_key(r#"[{"x":{"b":1,"\u0062":2}}]"#).as_deref(),
        Some("b")
    );
    assert_eq!(first_duplicate_key(r#"{"a":{"k":1},"b":{"k":1}}"#), None);
}
