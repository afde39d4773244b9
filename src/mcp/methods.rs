//! Every MCP method name rootfence routes on, across all supported revisions: the one place
//! a method is spelled. A test (below) scans `src/` and fails on a method name written as a
//! string literal anywhere else, so a typo is a compile error rather than a silently
//! unmatched string.

/// Declares each method's constant, then [`ALL`] and [`index`] from the same list, so the
/// three cannot disagree.
macro_rules! methods {
    ($($(#[$doc:meta])* $name:ident = $text:literal,)+) => {
        $($(#[$doc])* pub const $name: &str = $text;)+

        /// Every method above, for the tests that hold the rest of `src/` to them.
        pub const ALL: [&str; [$($text),+].len()] = [$($name),+];

        /// The position of `name` in [`ALL`], or `None` for a method rootfence does not know:
        /// one `match` (compiled to a switch on the length and a few compares), so the relay's
        /// hot path finds a method's table row without hashing its name.
        pub fn index(name: &str) -> Option<usize> {
            /// The methods' positions in [`ALL`].
            #[allow(non_camel_case_types, clippy::upper_case_acronyms)]
            enum At {
                $($name),+
            }
            Some(match name {
                $($text => At::$name as usize,)+
                _ => return None,
            })
        }
    };
}

methods! {
    /// Lifecycle (2024-11-05 to 2025-11-25).
    INITIALIZE = "initialize",
    /// Lifecycle notification (2024-11-05 to 2025-11-25).
    INITIALIZED = "notifications/initialized",
    /// Stateless discovery (2026-07-28).
    SERVER_DISCOVER = "server/discover",
    /// Liveness check (removed in 2026-07-28).
    PING = "ping",

    /// Cancellation of an in-flight request, either direction.
    CANCELLED = "notifications/cancelled",
    /// Progress of an in-flight request, either direction.
    PROGRESS = "notifications/progress",

    /// Server → host: the host's roots (deprecated in 2026-07-28, where it only appears inside
    /// `inputRequests`).
    ROOTS_LIST = "roots/list",
    /// Host → server: the roots changed (removed in 2026-07-28).
    ROOTS_LIST_CHANGED = "notifications/roots/list_changed",

    /// Resources.
    RESOURCES_LIST = "resources/list",
    /// Resource templates.
    RESOURCES_TEMPLATES_LIST = "resources/templates/list",
    /// Read one resource.
    RESOURCES_READ = "resources/read",
    /// Subscribe to one resource (up to 2025-11-25).
    RESOURCES_SUBSCRIBE = "resources/subscribe",
    /// Unsubscribe from one resource (up to 2025-11-25).
    RESOURCES_UNSUBSCRIBE = "resources/unsubscribe",
    /// Server → host: a subscribed resource changed.
    RESOURCES_UPDATED = "notifications/resources/updated",
    /// Server → host: the resource list changed.
    RESOURCES_LIST_CHANGED = "notifications/resources/list_changed",
    /// Server → host: the tool list changed.
    TOOLS_LIST_CHANGED = "notifications/tools/list_changed",
    /// Server → host: a log message (its `data` is walked like any free-form field).
    LOGGING_MESSAGE = "notifications/message",
    /// Server → host: the prompt list changed.
    PROMPTS_LIST_CHANGED = "notifications/prompts/list_changed",
    /// Host → server: the level of `notifications/message` (removed in 2026-07-28).
    LOGGING_SET_LEVEL = "logging/setLevel",
    /// Subscriptions in 2026-07-28 (replaces subscribe/unsubscribe).
    SUBSCRIPTIONS_LISTEN = "subscriptions/listen",

    /// Tools.
    TOOLS_LIST = "tools/list",
    /// Call a tool.
    TOOLS_CALL = "tools/call",
    /// Prompts.
    PROMPTS_LIST = "prompts/list",
    /// Get a prompt.
    PROMPTS_GET = "prompts/get",
    /// Argument completion.
    COMPLETION_COMPLETE = "completion/complete",

    /// Server → host: sampling (deprecated in 2026-07-28).
    SAMPLING_CREATE_MESSAGE = "sampling/createMessage",
    /// Server → host: elicitation.
    ELICITATION_CREATE = "elicitation/create",

    /// Tasks (2025-11-25): the deferred result of a task-augmented request.
    TASKS_RESULT = "tasks/result",
    /// Tasks (2025-11-25): one task's status (a free-form result).
    TASKS_GET = "tasks/get",
    /// Tasks (2025-11-25): the tasks in flight (a free-form result).
    TASKS_LIST = "tasks/list",
}

/// The `params` key a server notification is nothing without (a log message's `data`): one
/// left without it by the filters is dropped rather than delivered empty.
pub fn required_param(method: &str) -> Option<&'static str> {
    (method == LOGGING_MESSAGE).then_some("data")
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::{ALL, index};

    #[test]
    fn index_is_the_position_in_all() {
        for (i, method) in ALL.iter().enumerate() {
            assert_eq!(index(method), Some(i), "{method}");
        }
        assert_eq!(index("resources/reads"), None);
        assert_eq!(index(""), None);
    }

    /// The value of every string literal in Rust source `text` (plain, byte and raw; escapes
    /// are kept as written, which is enough to compare with a method name), skipping comments
    /// and character literals.
    fn string_literals(text: &str) -> Vec<String> {
        let b = text.as_bytes();
        let mut out = Vec::new();
        let mut i = 0;
        while i < b.len() {
            match b[i] {
                b'/' if b.get(i + 1) == Some(&b'/') => {
                    while i < b.len() && b[i] != b'\n' {
                        i += 1;
                    }
                }
                b'/' if b.get(i + 1) == Some(&b'*') => {
                    let end = text[i + 2..].find("*/").map_or(b.len(), |e| i + 2 + e + 2);
                    i = end;
                }
                // A character literal (`'"'`, `'\''`), not a lifetime (`'a`).
                b'\'' if b.get(i + 1) == Some(&b'\\') => {
                    i += 2;
                    while i < b.len() && b[i] != b'\'' {
                        i += 1;
                    }
                    i += 1;
                }
                b'\'' if b.get(i + 2) == Some(&b'\'') => i += 3,
                b'r' | b'b' if !is_ident(b, i) => {
                    // `r#"…"#`, `br"…"`, `b"…"`: find the opening quote, if any.
                    let mut j = i + 1;
                    if b[i] == b'b' && b.get(j) == Some(&b'r') {
                        j += 1;
                    }
                    let raw = b[i] == b'r' || b.get(i + 1) == Some(&b'r');
                    let hashes = b[j..].iter().take_while(|&&c| c == b'#').count();
                    if b.get(j + hashes) != Some(&b'"') || (!raw && hashes > 0) {
                        i += 1;
                        continue;
                    }
                    let start = j + hashes + 1;
                    if raw {
                        let close = format!("\"{}", "#".repeat(hashes));
                        let end = text[start..].find(&close).map_or(b.len(), |e| start + e);
                        out.push(text[start..end].to_owned());
                        i = end + close.len();
                    } else {
                        let end = plain_end(b, start);
                        out.push(text[start..end].to_owned());
                        i = end + 1;
                    }
                }
                b'"' => {
                    let end = plain_end(b, i + 1);
                    out.push(text[i + 1..end].to_owned());
                    i = end + 1;
                }
                _ => i += 1,
            }
        }
        out
    }

    /// Whether the byte at `i` continues an identifier (so `r`/`b` there is not a prefix).
    fn is_ident(b: &[u8], i: usize) -> bool {
        i > 0 && (b[i - 1].is_ascii_alphanumeric() || b[i - 1] == b'_')
    }

    /// The index of the quote closing a plain literal whose text starts at `start`.
    fn plain_end(b: &[u8], start: usize) -> usize {
        let mut i = start;
        while i < b.len() && b[i] != b'"' {
            i += if b[i] == b'\\' { 2 } else { 1 };
        }
        i.min(b.len())
    }

    /// A literal that is an MCP method: one of [`ALL`], or any notification (a method
    /// rootfence does not know yet still belongs here, not in the file that needs it).
    fn is_method(literal: &str) -> bool {
        ALL.contains(&literal)
            || literal.strip_prefix("notifications/").is_some_and(|rest| {
                !rest.is_empty()
                    && rest
                        .bytes()
                        .all(|c| c.is_ascii_alphanumeric() || c == b'_' || c == b'/')
            })
    }

    fn rust_files(dir: &Path, out: &mut Vec<std::path::PathBuf>) {
        for entry in std::fs::read_dir(dir).expect("src/ is readable") {
            let path = entry.expect("src/ entries are readable").path();
            if path.is_dir() {
                rust_files(&path, out);
            } else if path.extension().is_some_and(|e| e == "rs") {
                out.push(path);
            }
        }
    }

    #[test]
    fn the_lexer_sees_literals_not_comments_or_chars() {
        let text = r##"// "tools/call" in a comment
            let a = "tools/list"; let c = '"'; let d = '\''; fn f<'a>(x: &'a str) {}
            /* "ping" */ let e = r#"{"method":"ping"}"#; let g = b"roots/list"; let h = "a\"b";
            let k = br"x";"##;
        assert_eq!(
            string_literals(text),
            [
                "tools/list",
                r#"{"method":"ping"}"#,
                "roots/list",
                r#"a\"b"#,
                "x"
            ]
        );
    }

    #[test]
    fn no_method_name_is_spelled_outside_src_mcp() {
        let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
        let mut files = Vec::new();
        rust_files(&src, &mut files);
        let mcp = src.join("mcp");
        let mut found = Vec::new();
        for file in files.iter().filter(|f| !f.starts_with(&mcp)) {
            let text = std::fs::read_to_string(file).expect("a source file is UTF-8");
            for literal in string_literals(&text).into_iter().filter(|l| is_method(l)) {
                found.push(format!("{}: \"{literal}\"", file.display()));
            }
        }
        assert!(
            found.is_empty(),
            "method names spelled outside src/mcp (use the constants of `crate::mcp::methods`, \
             adding one there if it is new):\n{}",
            found.join("\n")
        );
    }
}
