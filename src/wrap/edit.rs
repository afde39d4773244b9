//! Planning the edits: which server entries a host configuration holds, what each one is
//! (stdio, remote, already wrapped, malformed), and the byte-range replacements that wrap
//! or unwrap it.
//!
//! # The wrapped form
//!
//! A stdio entry `{"command": C, "args": [A...]}` becomes
//! `{"command": R, "args": ["run", OPTIONS..., "--", C, A...]}` where `R` is the rootfence
//! command and `OPTIONS` are `--policy FILE` pairs and any extra `rootfence run` options.
//! The text of `C` and of each `A` is moved, never re-encoded, so unwrapping puts back the
//! very bytes that were there. New items follow the array's own layout: one per line with
//! the first item's indentation when the array is multi-line, `, `-separated otherwise.
//!
//! An entry without an `args` key gets one, placed right after `command`, and the marker
//! option [`NO_ARGS_MARKER`] among `OPTIONS`, so `unwrap` knows to remove the key again
//! rather than leave an `args` the original never had. `rootfence run` accepts the marker
//! and ignores it.
//!
//! # Recognising a wrapped entry
//!
//! The command's file name is `rootfence` (or `rootfence.exe`) and the first argument is
//! `run`; the server command is the item after the first `--`. Such an entry is never
//! wrapped again (that is what makes `wrap` idempotent).

use std::ops::Range;

use super::derive::{self, Derived, EntryView};
use super::jsonc::{self, Member, Node};
use super::{Action, Outcome, ServerReport, UnwrapOptions, WrapError, WrapOptions};

/// The `rootfence run` option that records that the original entry had no `args` key.
pub const NO_ARGS_MARKER: &str = "--wrapped-without-args";

/// Entry `type` values that mean a local process (absent means the same).
const STDIO_TYPES: &[&str] = &["stdio"];

/// One replacement of a byte range of the original text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Edit {
    pub(crate) range: Range<usize>,
    pub(crate) text: String,
}

impl Edit {
    fn new(range: Range<usize>, text: String) -> Edit {
        Edit { range, text }
    }
}

/// A map of server entries found in the file, with where it was found.
struct ServerMap<'n> {
    /// Empty for a top-level map; `project /path` for a Claude Code local-scope map.
    scope: String,
    entries: &'n [Member],
}

/// Applies non-overlapping edits, sorted by position and all inside `within`, to that part
/// of `text`.
pub(crate) fn apply<'e>(
    text: &str,
    within: Range<usize>,
    edits: impl IntoIterator<Item = &'e Edit>,
) -> String {
    let mut out = String::with_capacity(within.len() + 256);
    let mut at = within.start;
    for e in edits {
        debug_assert!(e.range.start >= at, "overlapping edits");
        out.push_str(&text[at..e.range.start]);
        out.push_str(&e.text);
        at = e.range.end;
    }
    out.push_str(&text[at..within.end]);
    out
}

/// The server maps of a host configuration's tree, or why it is not one.
fn server_maps<'n>(text: &str, root: &'n Node) -> Result<Vec<ServerMap<'n>>, WrapError> {
    let Some(members) = root.members() else {
        return Err(WrapError::NotRecognised {
            found: format!("the top level is {}", root.type_name(text)),
        });
    };
    check_duplicates(text, members)?;
    let mut found = Vec::new();
    let mut add = |scope: String, m: &'n Member, what: &str| -> Result<(), WrapError> {
        let entries = server_map(text, m, what)?;
        found.push(ServerMap { scope, entries });
        Ok(())
    };
    for m in members {
        match m.key.as_str() {
            "mcpServers" | "servers" => add(String::new(), m, &m.key)?,
            // VS Code's older form inside settings.json: "mcp": {"servers": {...}}.
            "mcp" => {
                if let Some(inner) = m.value.members() {
                    check_duplicates(text, inner)?;
                    for im in inner.iter().filter(|im| im.key == "servers") {
                        add(String::new(), im, "mcp.servers")?;
                    }
                }
            }
            // Claude Code's ~/.claude.json: local-scope servers per project.
            "projects" => {
                if let Some(projects) = m.value.members() {
                    check_duplicates(text, projects)?;
                    for p in projects {
                        let Some(fields) = p.value.members() else {
                            continue;
                        };
                        check_duplicates(text, fields)?;
                        for f in fields.iter().filter(|f| f.key == "mcpServers") {
                            add(format!("project {}", p.key), f, "projects.*.mcpServers")?;
                        }
                    }
                }
            }
            _ => {}
        }
    }
    if found.is_empty() {
        return Err(WrapError::NotRecognised {
            found: "no `mcpServers` or `servers` object at the top level (nor \
                    `projects.*.mcpServers`)"
                .to_string(),
        });
    }
    Ok(found)
}

/// The entries of `m` (found as `what`), a map of servers: an object without duplicate keys.
fn server_map<'n>(text: &str, m: &'n Member, what: &str) -> Result<&'n [Member], WrapError> {
    let Some(members) = m.value.members() else {
        let (line, column) = jsonc::line_col(text, m.value.span.start);
        return Err(WrapError::NotRecognised {
            found: format!(
                "`{what}` at line {line}, column {column} is {}, not an object of servers",
                m.value.type_name(text)
            ),
        });
    };
    check_duplicates(text, members)?;
    Ok(members)
}

/// A duplicate key in an object rootfence reads would let the host see a different value
/// than the one rootfence edited (JSON parsers keep the last), so it is refused.
fn check_duplicates(text: &str, members: &[Member]) -> Result<(), WrapError> {
    // A set, not pairwise comparison: `~/.claude.json` objects can be large, and a hostile
    // file must not make this quadratic.
    let mut seen = std::collections::HashSet::with_capacity(members.len());
    for m in members {
        if !seen.insert(m.key.as_str()) {
            let (line, column) = jsonc::line_col(text, m.key_span.start);
            return Err(WrapError::DuplicateKey {
                key: m.key.clone(),
                line,
                column,
            });
        }
    }
    Ok(())
}

/// Checks that every `--server` name exists somewhere.
fn check_selection(selected: &[String], maps: &[ServerMap<'_>]) -> Result<(), WrapError> {
    let missing: Vec<String> = selected
        .iter()
        .filter(|name| {
            !maps
                .iter()
                .any(|m| m.entries.iter().any(|e| &e.key == *name))
        })
        .cloned()
        .collect();
    if missing.is_empty() {
        return Ok(());
    }
    let mut available: Vec<String> = Vec::new();
    for m in maps {
        for e in m.entries {
            derive::push_unique(&mut available, display_name(&e.key, &m.scope));
        }
    }
    Err(WrapError::ServerNotFound { missing, available })
}

/// `name`, or `name (scope)`.
pub(crate) fn display_name(name: &str, scope: &str) -> String {
    if scope.is_empty() {
        name.to_string()
    } else {
        format!("{name} ({scope})")
    }
}

/// The fields of one entry that matter here.
#[derive(Default)]
struct Entry<'n> {
    members: &'n [Member],
    command: Option<&'n Member>,
    args: Option<&'n Member>,
}

/// What an entry is.
enum Shape<'n> {
    /// A local server that can be wrapped.
    Stdio {
        command: &'n Node,
        args: Option<&'n [Node]>,
    },
    /// Already `rootfence run ...`.
    Wrapped(Wrapped<'n>),
    /// Not a local process; the note says why.
    Remote(String),
    /// Cannot be handled; the message says why.
    Problem(String),
    /// Not a server rootfence can do anything about (no command, no url).
    Inert(String),
}

/// A wrapped entry taken apart.
struct Wrapped<'n> {
    command: &'n Node,
    items: &'n [Node],
    /// Index of the `--` item.
    dashdash: usize,
    /// Options between `run` and `--`, without the marker.
    options: Vec<&'n str>,
    marker: bool,
}

fn classify<'n>(text: &str, entry: &'n Node) -> Result<(Entry<'n>, Shape<'n>), WrapError> {
    let Some(members) = entry.members() else {
        let why = format!("the entry is {}, not an object", entry.type_name(text));
        return Ok((Entry::default(), Shape::Problem(why)));
    };
    check_duplicates(text, members)?;
    let field = |k: &str| members.iter().find(|m| m.key == k);
    let e = Entry {
        members,
        command: field("command"),
        args: field("args"),
    };
    let shape = shape(text, &e);
    Ok((e, shape))
}

/// What the entry `e` (an object without duplicate keys) is.
fn shape<'n>(text: &str, e: &Entry<'n>) -> Shape<'n> {
    let field = |k: &str| e.members.iter().find(|m| m.key == k);
    let problem = |why: &str| Shape::Problem(why.to_owned());
    match field("type").map(|m| m.value.as_str()) {
        Some(Some(t)) if !STDIO_TYPES.contains(&t) => {
            return Shape::Remote(format!("remote server (type \"{t}\"): left alone"));
        }
        Some(None) => return problem("`type` is not a string"),
        _ => {}
    }
    let Some(command) = e.command else {
        return if field("url").is_some() || field("serverUrl").is_some() {
            Shape::Remote("remote server (url, no command): left alone".to_string())
        } else {
            Shape::Inert("no `command` and no `url`: nothing to wrap".to_string())
        };
    };
    let Some(cmd) = command.value.as_str() else {
        let what = command.value.type_name(text);
        return Shape::Problem(format!("`command` is {what}, not a string"));
    };
    let args = match e.args.map(|a| (a.value.items(), a.value.type_name(text))) {
        None => None,
        Some((Some(items), _)) if items.iter().all(|i| i.as_str().is_some()) => Some(items),
        Some((Some(_), _)) => return problem("`args` has an item that is not a string"),
        Some((None, what)) => {
            return Shape::Problem(format!("`args` is {what}, not an array of strings"));
        }
    };
    if !is_rootfence(cmd) {
        return Shape::Stdio {
            command: &command.value,
            args,
        };
    }
    let items = args.unwrap_or(&[]);
    if items.first().and_then(Node::as_str) != Some("run") {
        return problem("the command is rootfence itself but not `rootfence run`: left alone");
    }
    let Some(dashdash) = items.iter().position(|i| i.as_str() == Some("--")) else {
        return problem("`rootfence run` without `--` before the server command: fix it by hand");
    };
    if dashdash + 1 >= items.len() {
        return problem("`rootfence run` with no server command after `--`: fix it by hand");
    }
    let options = items[1..dashdash].iter().filter_map(Node::as_str);
    Shape::Wrapped(Wrapped {
        command: &command.value,
        items,
        dashdash,
        marker: options.clone().any(|o| o == NO_ARGS_MARKER),
        options: options.filter(|o| *o != NO_ARGS_MARKER).collect(),
    })
}

/// Whether a command names the rootfence binary (`rootfence` or `rootfence.exe` in any
/// directory), as an already-wrapped entry's command does (`wrap::is_rootfence_command`).
pub fn is_rootfence(command: &str) -> bool {
    let name = command.rsplit(['/', '\\']).next().unwrap_or(command);
    name == "rootfence" || name.eq_ignore_ascii_case("rootfence.exe")
}

/// A JSON string literal for `s`.
fn quote(s: &str) -> String {
    serde_json::to_string(s).unwrap_or_else(|_| "\"\"".to_string())
}

/// The separator to put after a `,` between items of `items`, an array starting at
/// `open` (the `[`): the line break and indentation before the first item when it is on
/// its own line, a space otherwise.
fn item_separator(text: &str, open: usize, items: &[Node]) -> String {
    items
        .first()
        .and_then(|first| line_break_indent(&text[open + 1..first.span.start]))
        .unwrap_or_else(|| " ".to_string())
}

/// If the trailing whitespace of `gap` contains a line break, the text from that line
/// break (`\n` or `\r\n`) to the end: the file's own newline and indentation.
fn line_break_indent(gap: &str) -> Option<String> {
    let ws = &gap[gap.trim_end_matches([' ', '\t', '\r', '\n']).len()..];
    let nl = ws.rfind('\n')?;
    let from = if ws[..nl].ends_with('\r') { nl - 1 } else { nl };
    Some(ws[from..].to_string())
}

/// The option items rootfence puts between `run` and `--`.
fn wanted_options(opts: &WrapOptions) -> Vec<String> {
    let policies = opts.policies.iter().flat_map(|p| ["--policy", p]);
    policies
        .chain(opts.run_args.iter().map(String::as_str))
        .map(str::to_owned)
        .collect()
}

/// What wrap derived for an entry, and the fields it derived it from.
type Derivation = Option<(Derived, EntryView)>;

/// Plans an edit of every selected entry: `act` decides each entry's action from its shape
/// (pushing the edits it needs), with what wrap derived for it and the view it derived it
/// from, if anything.
fn plan(
    text: &str,
    selected: &[String],
    mut act: impl FnMut(&Member, &Entry<'_>, Shape<'_>, &mut Vec<Edit>) -> (Action, Derivation),
) -> Result<Outcome, WrapError> {
    let root = jsonc::parse(text).map_err(|e| WrapError::Syntax {
        line: e.line,
        column: e.column,
        message: e.message,
    })?;
    let maps = server_maps(text, &root)?;
    check_selection(selected, &maps)?;
    let lines = jsonc::LineIndex::new(text);
    let mut edits = Vec::new();
    let mut servers = Vec::new();
    for map in &maps {
        for m in map.entries {
            if !selected.is_empty() && !selected.contains(&m.key) {
                continue;
            }
            let (entry, shape) = classify(text, &m.value)?;
            let (action, derivation) = act(m, &entry, shape, &mut edits);
            let mut r = report(&lines, map, m, &entry, action);
            if let Some((derived, view)) = derivation {
                r.derived = derived;
                if !view.command.is_empty() {
                    r.server_argv = std::iter::once(view.command).chain(view.args).collect();
                }
                r.env_values = view
                    .env
                    .into_iter()
                    .filter_map(|(k, v)| Some((k, v?)))
                    .collect();
            }
            servers.push(r);
        }
    }
    Ok(finish(text, edits, servers))
}

/// Plans wrapping every selected stdio server of a host configuration's text
/// (`wrap::wrap_config`).
pub fn plan_wrap(text: &str, opts: &WrapOptions) -> Result<Outcome, WrapError> {
    let wanted = wanted_options(opts);
    plan(text, &opts.servers, |m, entry, shape, edits| {
        // What the server's command line and entry derive, with the catalogue's and the
        // learned grants: the options it is wrapped with.
        let derive_for = |server: &[Node]| {
            let view = entry_view(entry, server);
            let mut derived = Derived::default();
            if let Some(ctx) = &opts.derive {
                derived = derive::derive(&view, ctx);
            }
            add_learned(&mut derived, opts, &m.key);
            let mut wanted = wanted.clone();
            wanted.extend(derived.options());
            (view, derived, wanted)
        };
        match shape {
            Shape::Remote(note) => (Action::Remote(note), None),
            Shape::Inert(note) => (Action::Skipped(note), None),
            Shape::Problem(why) => (Action::Problem(why), None),
            Shape::Wrapped(w) => {
                let (view, derived, wanted) = derive_for(&w.items[w.dashdash + 1..]);
                let same =
                    w.command.as_str() == Some(opts.rootfence.as_str()) && w.options == wanted;
                let action = if same {
                    Action::AlreadyWrapped
                } else if opts.rewrap {
                    rewrap(text, &w, opts, &wanted, edits);
                    Action::Rewrapped
                } else {
                    Action::WrappedDifferently(describe_wrapped(&w))
                };
                (action, Some((derived, view)))
            }
            Shape::Stdio { command, args } => {
                let mut server = vec![command.clone()];
                server.extend(args.unwrap_or(&[]).iter().cloned());
                let (view, derived, wanted) = derive_for(&server);
                wrap_entry(text, entry, command, args, &wanted, opts, edits);
                (Action::Wrapped, Some((derived, view)))
            }
        }
    })
}

/// The catalogue's and then the learned grants for server `name`, after the derived ones.
fn add_learned(derived: &mut Derived, opts: &WrapOptions, name: &str) {
    for (list, learned) in [(&opts.catalogue, false), (&opts.learned, true)] {
        for (server, grants) in list {
            if server == name {
                derived.add_grants(grants, learned);
            }
        }
    }
}

/// Plans restoring every selected wrapped server of a host configuration's text
/// (`wrap::unwrap_config`).
pub fn plan_unwrap(text: &str, opts: &UnwrapOptions) -> Result<Outcome, WrapError> {
    plan(text, &opts.servers, |_, entry, shape, edits| {
        let action = match shape {
            Shape::Wrapped(w) => {
                unwrap_entry(text, entry, &w, edits);
                Action::Unwrapped
            }
            Shape::Stdio { .. } => Action::NotWrapped,
            Shape::Remote(note) => Action::Remote(note),
            Shape::Inert(note) => Action::Skipped(note),
            Shape::Problem(why) => Action::Problem(why),
        };
        (action, None)
    })
}

fn finish(text: &str, mut edits: Vec<Edit>, servers: Vec<ServerReport>) -> Outcome {
    edits.sort_by_key(|e| (e.range.start, e.range.end));
    let new_text = apply(text, 0..text.len(), &edits);
    Outcome {
        changed: new_text != text,
        text: new_text,
        edits,
        servers,
    }
}

/// The fields derivation reads; `server` is the server's command and arguments.
fn entry_view(entry: &Entry<'_>, server: &[Node]) -> EntryView {
    let field = |k: &str| entry.members.iter().find(|f| f.key == k);
    let string = |k: &str| field(k).and_then(|m| m.value.as_str()).map(str::to_owned);
    EntryView {
        command: server
            .first()
            .and_then(Node::as_str)
            .unwrap_or_default()
            .to_owned(),
        args: server
            .iter()
            .skip(1)
            .filter_map(Node::as_str)
            .map(str::to_owned)
            .collect(),
        env: field("env")
            .and_then(|e| e.value.members())
            .map(|ms| {
                ms.iter()
                    .map(|m| (m.key.clone(), m.value.as_str().map(str::to_owned)))
                    .collect()
            })
            .unwrap_or_default(),
        env_file: string("envFile"),
        cwd: string("cwd"),
    }
}

fn describe_wrapped(w: &Wrapped<'_>) -> String {
    let options: String = w.options.iter().map(|o| format!(" {o}")).collect();
    format!(
        "already wrapped, but as `{} run{options} --`; left alone (pass --rewrap to replace \
         rootfence's options)",
        w.command.as_str().unwrap_or("rootfence")
    )
}

fn report(
    lines: &jsonc::LineIndex,
    map: &ServerMap<'_>,
    m: &Member,
    entry: &Entry<'_>,
    action: Action,
) -> ServerReport {
    let line = lines.line(m.key_span.start);
    // The server's own command: after `--` when wrapped.
    let command = match entry.command.and_then(|c| c.value.as_str()) {
        Some(c) if is_rootfence(c) => entry
            .args
            .and_then(|a| a.value.items())
            .and_then(|items| {
                let k = items.iter().position(|i| i.as_str() == Some("--"))?;
                items.get(k + 1)?.as_str()
            })
            .map(str::to_string),
        c => c.map(str::to_string),
    };
    ServerReport {
        name: m.key.clone(),
        scope: map.scope.clone(),
        line,
        command,
        derived: Derived::default(),
        server_argv: Vec::new(),
        env_values: Vec::new(),
        action,
    }
}

/// Edits that wrap one stdio entry.
fn wrap_entry(
    text: &str,
    entry: &Entry<'_>,
    command: &Node,
    args: Option<&[Node]>,
    wanted: &[String],
    opts: &WrapOptions,
    edits: &mut Vec<Edit>,
) {
    let cmd_raw = &text[command.span.clone()];
    edits.push(Edit::new(command.span.clone(), quote(&opts.rootfence)));
    let mut new: Vec<String> = std::iter::once("run")
        .chain(wanted.iter().map(String::as_str))
        .map(quote)
        .collect();
    let (at, ins) = match (entry.args, args) {
        (Some(args_member), Some(items)) => {
            let open = args_member.value.span.start;
            let sep = format!(",{}", item_separator(text, open, items));
            new.extend([quote("--"), cmd_raw.to_owned()]);
            let ins = new.join(&sep);
            match items.first() {
                Some(first) => (first.span.start, ins + &sep),
                None => (open + 1, ins),
            }
        }
        _ => {
            // No args key: add one right after the command member, in the entry's layout.
            let Some(cmd_member) = entry.command else {
                return;
            };
            let sep = line_break_indent(&text[..cmd_member.key_span.start])
                .unwrap_or_else(|| " ".to_string());
            let colon = &text[cmd_member.key_span.end..command.span.start];
            let colon = if colon.trim_matches([' ', '\t']) == ":" {
                colon
            } else {
                ": "
            };
            new.extend([quote(NO_ARGS_MARKER), quote("--"), cmd_raw.to_owned()]);
            let ins = format!(",{sep}\"args\"{colon}[{}]", new.join(", "));
            (command.span.end, ins)
        }
    };
    edits.push(Edit::new(at..at, ins));
}

/// Edits that replace the rootfence command and options of a wrapped entry.
fn rewrap(
    text: &str,
    w: &Wrapped<'_>,
    opts: &WrapOptions,
    wanted: &[String],
    edits: &mut Vec<Edit>,
) {
    edits.push(Edit::new(w.command.span.clone(), quote(&opts.rootfence)));
    // Keep the separator the array already uses after `"run",`.
    let gap = &text[w.items[0].span.end..w.items[1].span.start];
    let sep = match gap.trim_start().strip_prefix(',') {
        Some(rest) if rest.trim_matches([' ', '\t', '\r', '\n']).is_empty() => format!(",{rest}"),
        _ => ", ".to_string(),
    };
    let new: Vec<String> = std::iter::once("run")
        .chain(wanted.iter().map(String::as_str))
        .chain(w.marker.then_some(NO_ARGS_MARKER))
        .map(quote)
        .collect();
    edits.push(Edit::new(
        w.items[0].span.start..w.items[w.dashdash].span.start,
        new.join(&sep) + &sep,
    ));
}

/// Edits that restore a wrapped entry.
fn unwrap_entry(text: &str, entry: &Entry<'_>, w: &Wrapped<'_>, edits: &mut Vec<Edit>) {
    let server_cmd = &w.items[w.dashdash + 1];
    edits.push(Edit::new(
        w.command.span.clone(),
        text[server_cmd.span.clone()].to_string(),
    ));
    let Some(args_member) = entry.args else {
        return;
    };
    if w.marker {
        // The original had no args key: remove the member with one adjacent comma.
        let i = entry
            .members
            .iter()
            .position(|m| std::ptr::eq(m, args_member))
            .unwrap_or(0);
        let range = if i > 0 {
            entry.members[i - 1].value.span.end..args_member.value.span.end
        } else {
            match entry.members.get(1) {
                Some(next) => args_member.key_span.start..next.key_span.start,
                None => args_member.key_span.start..args_member.value.span.end,
            }
        };
        // The command edit must not overlap: when args directly follows command, the
        // removal starts where the command's value ends.
        edits.push(Edit::new(range, String::new()));
        return;
    }
    let end = match w.items.get(w.dashdash + 2) {
        Some(first_arg) => first_arg.span.start,
        None => server_cmd.span.end,
    };
    edits.push(Edit::new(w.items[0].span.start..end, String::new()));
}

#[cfg(test)]
mod tests {
    use super::*;

    fn opts(policies: &[&str]) -> WrapOptions {
        WrapOptions {
            rootfence: "/opt/rf/bin/rootfence".into(),
            policies: policies.iter().map(|s| s.to_string()).collect(),
            run_args: vec![],
            servers: vec![],
            rewrap: false,
            derive: None,
            learned: Vec::new(),
            catalogue: Vec::new(),
        }
    }

    fn wrap(text: &str) -> String {
        plan_wrap(text, &opts(&["/etc/rf/org.toml"])).unwrap().text
    }

    fn unwrap(text: &str) -> String {
        plan_unwrap(text, &UnwrapOptions::default()).unwrap().text
    }

    /// Each case: original, expected wrapped text. Unwrap must give the original back and
    /// wrapping again must change nothing.
    #[test]
    fn wrap_layouts_table() {
        let cases: &[(&str, &str)] = &[
            (
                r#"{"mcpServers": {"a": {"command": "npx", "args": ["-y", "pkg"]}}}"#,
                r#"{"mcpServers": {"a": {"command": "/opt/rf/bin/rootfence", "args": ["run", "--policy", "/etc/rf/org.toml", "--", "npx", "-y", "pkg"]}}}"#,
            ),
            (
                "{\"servers\": {\"a\": {\n  \"command\": \"npx\",\n  \"args\": [\n    \"-y\"\n  ]\n}}}",
                "{\"servers\": {\"a\": {\n  \"command\": \"/opt/rf/bin/rootfence\",\n  \"args\": [\n    \"run\",\n    \"--policy\",\n    \"/etc/rf/org.toml\",\n    \"--\",\n    \"npx\",\n    \"-y\"\n  ]\n}}}",
            ),
            (
                r#"{"mcpServers": {"a": {"command": "srv", "args": []}}}"#,
                r#"{"mcpServers": {"a": {"command": "/opt/rf/bin/rootfence", "args": ["run", "--policy", "/etc/rf/org.toml", "--", "srv"]}}}"#,
            ),
            (
                "{\"mcpServers\": {\"a\": {\r\n\t\"command\": \"srv\"\r\n}}}",
                "{\"mcpServers\": {\"a\": {\r\n\t\"command\": \"/opt/rf/bin/rootfence\",\r\n\t\"args\": [\"run\", \"--policy\", \"/etc/rf/org.toml\", \"--wrapped-without-args\", \"--\", \"srv\"]\r\n}}}",
            ),
            (
                r#"{"mcpServers": {"a": {"env": {}, "command" :"s\u0072v", "cwd": "/x"}}}"#,
                r#"{"mcpServers": {"a": {"env": {}, "command" :"/opt/rf/bin/rootfence", "args" :["run", "--policy", "/etc/rf/org.toml", "--wrapped-without-args", "--", "s\u0072v"], "cwd": "/x"}}}"#,
            ),
        ];
        for (original, wrapped) in cases {
            let w = wrap(original);
            assert_eq!(&w, wrapped, "wrap of {original}");
            assert_eq!(wrap(&w), w, "wrap is idempotent: {original}");
            assert_eq!(&unwrap(&w), original, "unwrap restores: {original}");
            assert_eq!(
                &unwrap(original),
                original,
                "unwrap of unwrapped: {original}"
            );
        }
    }

    #[test]
    fn classifies_entries() {
        let text = r#"{"mcpServers": {
            "local": {"command": "srv"},
            "typed": {"type": "stdio", "command": "srv"},
            "http": {"type": "http", "url": "https://x"},
            "sse": {"url": "https://x/sse"},
            "empty": {},
            "num": {"command": 5},
            "badargs": {"command": "x", "args": "a b"},
            "numargs": {"command": "x", "args": ["a", 1]},
            "notobj": 3,
            "self": {"command": "rootfence", "args": ["check"]},
            "nodash": {"command": "rootfence", "args": ["run", "x"]},
            "nocmd": {"command": "rootfence", "args": ["run", "--"]},
            "done": {"command": "/opt/rf/bin/rootfence", "args": ["run", "--policy", "/etc/rf/org.toml", "--", "srv"]},
            "other": {"command": "rootfence", "args": ["run", "--", "srv"]}
        }}"#;
        let out = plan_wrap(text, &opts(&["/etc/rf/org.toml"])).unwrap();
        let got: Vec<(String, &str)> = out
            .servers
            .iter()
            .map(|s| (s.name.clone(), s.action.kind()))
            .collect();
        let want = [
            ("local", "wrapped"),
            ("typed", "wrapped"),
            ("http", "remote"),
            ("sse", "remote"),
            ("empty", "skipped"),
            ("num", "problem"),
            ("badargs", "problem"),
            ("numargs", "problem"),
            ("notobj", "problem"),
            ("self", "problem"),
            ("nodash", "problem"),
            ("nocmd", "problem"),
            ("done", "already-wrapped"),
            ("other", "wrapped-differently"),
        ];
        let want: Vec<(String, &str)> = want.iter().map(|(a, b)| (a.to_string(), *b)).collect();
        assert_eq!(got, want);
        assert_eq!(out.servers[12].command.as_deref(), Some("srv"));
    }

    #[test]
    fn rewrap_replaces_options_and_keeps_the_marker() {
        let original = "{\"mcpServers\": {\"a\": {\n  \"command\": \"srv\"\n}}}";
        let w1 = wrap(original);
        let mut o = opts(&["/new/a.toml", "/new/b.toml"]);
        let kept = plan_wrap(&w1, &o).unwrap();
        assert!(!kept.changed);
        assert_eq!(kept.servers[0].action.kind(), "wrapped-differently");
        o.rewrap = true;
        let w2 = plan_wrap(&w1, &o).unwrap();
        assert_eq!(w2.servers[0].action.kind(), "rewrapped");
        assert!(w2.text.contains(
            r#"["run", "--policy", "/new/a.toml", "--policy", "/new/b.toml", "--wrapped-without-args", "--", "srv"]"#
        ));
        assert!(!plan_wrap(&w2.text, &o).unwrap().changed);
        assert_eq!(unwrap(&w2.text), original);
    }

    #[test]
    fn multi_line_rewrap_keeps_layout() {
        let original = "{\"servers\": {\"a\": {\"command\": \"n\", \"args\": [\n  \"x\"\n]}}}";
        let w1 = wrap(original);
        let mut o = opts(&["/p2"]);
        o.rewrap = true;
        let w2 = plan_wrap(&w1, &o).unwrap().text;
        assert!(
            w2.contains(
                "[\n  \"run\",\n  \"--policy\",\n  \"/p2\",\n  \"--\",\n  \"n\",\n  \"x\"\n]"
            ),
            "{w2}"
        );
        assert_eq!(unwrap(&w2), original);
    }

    #[test]
    fn unwrap_after_keys_were_reordered() {
        // A user (or a host) moved the added args key away from command: unwrap still
        // removes it, with one comma.
        let text = r#"{"mcpServers": {"a": {"args": ["run", "--wrapped-without-args", "--", "srv"], "command": "rootfence", "env": {}}}}"#;
        assert_eq!(
            unwrap(text),
            r#"{"mcpServers": {"a": {"command": "srv", "env": {}}}}"#
        );
        let text = r#"{"mcpServers": {"a": {"command": "rootfence", "env": {}, "args": ["run", "--wrapped-without-args", "--", "srv"]}}}"#;
        assert_eq!(
            unwrap(text),
            r#"{"mcpServers": {"a": {"command": "srv", "env": {}}}}"#
        );
    }

    #[test]
    fn claude_code_scopes_and_selection() {
        let text = r#"{"mcpServers": {"u": {"command": "a"}},
            "projects": {"/p": {"mcpServers": {"l": {"command": "b"}}}, "/q": {"x": 1}}}"#;
        let out = plan_wrap(text, &opts(&["/o.toml"])).unwrap();
        assert_eq!(out.servers.len(), 2);
        assert_eq!(out.servers[1].scope, "project /p");
        let mut o = opts(&["/o.toml"]);
        o.servers = vec!["l".into()];
        let out = plan_wrap(text, &o).unwrap();
        assert_eq!(out.servers.len(), 1);
        assert!(out.text.contains(r#""u": {"command": "a"}"#));
        o.servers = vec!["nope".into(), "l".into()];
        match plan_wrap(text, &o) {
            Err(WrapError::ServerNotFound { missing, available }) => {
                assert_eq!(missing, ["nope"]);
                assert_eq!(available, ["u", "l (project /p)"]);
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn refuses_what_it_cannot_read_safely() {
        let table: &[(&str, &str)] = &[
            (r#"[1]"#, "NotRecognised"),
            (r#"{"other": {}}"#, "NotRecognised"),
            (r#"{"mcpServers": []}"#, "NotRecognised"),
            (r#"{"mcpServers": {}, "mcpServers": {}}"#, "DuplicateKey"),
            (
                r#"{"mcpServers": {"a": {"command": "x", "command": "y"}}}"#,
                "DuplicateKey",
            ),
            (
                r#"{"mcpServers": {"a": {"command": "x"}, "a": {"command": "y"}}}"#,
                "DuplicateKey",
            ),
            (r#"{"mcpServers": {"a": }}"#, "Syntax"),
        ];
        for (text, kind) in table {
            let e = plan_wrap(text, &opts(&["/p"])).expect_err(text);
            assert!(format!("{e:?}").starts_with(kind), "{text}: {e}");
        }
    }

    #[test]
    fn rootfence_names() {
        for yes in [
            "rootfence",
            "/usr/bin/rootfence",
            "C:\\tools\\rootfence.exe",
            "ROOTFENCE.EXE",
        ] {
            assert!(is_rootfence(yes), "{yes}");
        }
        for no in ["rootfence2", "/rootfence/bin/npx", "", "rootfence.sh"] {
            assert!(!is_rootfence(no), "{no}");
        }
    }
}
