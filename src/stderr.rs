//! rootfence's own messages on stderr, each written with one `write`.
//!
//! Stderr is unbuffered, and `eprintln!` writes each piece of its format (the text, each
//! argument, the newline) with a `write` of its own: a policy error came out in some forty
//! writes. The server shares rootfence's stderr, so its output could land in the middle of one
//! of rootfence's lines ("rootfence: test-server: started" then the rest on a line of its
//! own), and a reader watching for a message's first line (a log shipper, a test) could see
//! it before the reason on the lines after it. [`stderr_line!`](crate::stderr_line) formats
//! the whole message first and writes it once (a pipe takes a write of up to 4 KiB whole).

use std::io::Write as _;

/// Writes `args` and a newline to stderr in one `write`; errors are ignored, as `eprintln!`'s
/// panics would only hide the message that could not be shown.
pub fn line(args: std::fmt::Arguments<'_>) {
    let mut text = std::fmt::format(args);
    text.push('\n');
    let _ = std::io::stderr().lock().write_all(text.as_bytes());
}

/// `eprintln!`, written with one `write` (see [`stderr`](crate::stderr)).
#[macro_export]
macro_rules! stderr_line {
    ($($arg:tt)*) => {
        $crate::stderr::line(format_args!($($arg)*))
    };
}
