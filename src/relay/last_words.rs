//! What a server generation leaves to explain its death before it answered `initialize`
//! (issue 27): its last stderr lines, the paths they say were denied, and the next command
//! to run, quoted for the shell.

use std::sync::Arc;

use super::child;

/// What a generation leaves to explain its death: its last stderr lines and command line.
#[derive(Clone, Debug)]
pub(super) struct LastWords {
    pub(super) tail: Arc<child::StderrTail>,
    pub(super) argv: Vec<String>,
    pub(super) sandboxed: bool,
}

/// The server died before answering `initialize`: what the host and rootfence's stderr are
/// told (issue 27): its last words, the paths they say were denied, the next command.
pub(super) struct EarlyDeath {
    pub(super) text: String,
    data: serde_json::Value,
}

/// Lines of the server's stderr quoted in the error message itself (all of the tail is in
/// its `data`).
const QUOTED_LINES: usize = 3;

impl LastWords {
    pub(super) fn diagnose(&self, cause: &str) -> EarlyDeath {
        let lines = self.tail.lines();
        let denied = self.tail.denied();
        let command = self
            .argv
            .iter()
            .map(|a| shell_quote(a))
            .collect::<Vec<_>>()
            .join(" ");
        let (advice, next) = if self.sandboxed {
            let advice = "to see what the sandbox refused it and the grants to add, run";
            (advice, format!("rootfence sandbox probe -- {command}"))
        } else {
            ("to see why, run it directly", command)
        };
        let mut text = format!("{cause} before answering `initialize`");
        if lines.is_empty() {
            text.push_str("; it wrote nothing on stderr");
        } else {
            let quoted: Vec<String> = lines
                .iter()
                .rev()
                .take(QUOTED_LINES)
                .rev()
                .map(|l| format!("`{l}`"))
                .collect();
            text.push_str(&format!("; its last words: {}", quoted.join(" ")));
        }
        if !denied.is_empty() {
            text.push_str(&format!("; denied: {}", denied.join(", ")));
        }
        text.push_str(&format!("; {advice}: {next}"));
        EarlyDeath {
            text,
            data: serde_json::json!({
                "method": crate::mcp::methods::INITIALIZE,
                "stderr": lines,
                "denied": denied,
                "next": next,
            }),
        }
    }
}

impl EarlyDeath {
    pub(super) fn error(&self, id: &crate::jsonrpc::id::Id) -> bytes::Bytes {
        crate::jsonrpc::error::error_response(
            Some(id),
            crate::jsonrpc::error::SERVER_GONE,
            &format!("rootfence: {}", self.text),
            Some(self.data.clone()),
        )
        .into()
    }
}

/// `arg` as a shell word; control characters as `$'\xNN'` escapes, so a command line
/// shown on stderr cannot carry an escape sequence.
fn shell_quote(arg: &str) -> String {
    let plain = !arg.is_empty()
        && arg
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"_@%+=:,./-".contains(&b));
    if plain {
        arg.to_owned()
    } else if arg.chars().any(char::is_control) {
        let mut out = String::from("$'");
        for c in arg.chars() {
            match c {
                '\'' | '\\' => {
                    out.push('\\');
                    out.push(c);
                }
                c if c.is_control() => {
                    for b in c.to_string().bytes() {
                        out.push_str(&format!("\\x{b:02x}"));
                    }
                }
                c => out.push(c),
            }
        }
        out.push('\'');
        out
    } else {
        format!("'{}'", arg.replace('\'', r"'\''"))
    }
}

#[cfg(test)]
mod tests {
    use super::shell_quote;

    #[test]
    fn commands_are_quoted_for_the_shell_without_control_characters() {
        assert_eq!(shell_quote("uvx"), "uvx");
        assert_eq!(shell_quote("a b"), "'a b'");
        assert_eq!(shell_quote("it's"), r"'it'\''s'");
        assert_eq!(shell_quote("\u{1b}[2J"), r"$'\x1b[2J'");
        assert_eq!(shell_quote(""), "''");
    }
}
