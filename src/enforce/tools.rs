//! The tools family. `tools/call`: the tool name (`[tools]`) and the arguments the policy
//! names as paths or URIs (`[[tools.paths]]`), judged against the roots and the path rules
//! before the server sees the call. Its results (`Tools::result`): a `tools/list` teaches the
//! tools' path arguments, then each result's items are judged as its row's shape says.
//!
//! Built-in path rules describe one server's arguments, so they apply only to that server:
//! the server's identity is the `serverInfo.name` it gives (`initialize`, or in 2026-07-28
//! `_meta["io.modelcontextprotocol/serverInfo"]` on `server/discover` and other results).
//! While it is unknown, every rule applies (checking more, never less). A server may lie
//! about its name; that only stops rootfence from checking arguments *for* it, which
//! protects a buggy honest server from hostile arguments, not the user from a hostile
//! server (that is the sandbox's job and the result filters').
//!
//! Every other argument is judged by what the server's own `tools/list` said about it
//! (`crate::toolargs`, under the policy's `tools.infer`): a path or URI argument is checked
//! like a `[[tools.paths]]` one; a string of uncertain role is checked when it looks like a
//! file reference (an absolute path, `~/…`, a `file:` URI, `..`). A relative value is
//! resolved against the server's working directory: inside a root it is checked there;
//! outside every root, one that names an existing file is refused and one that names
//! nothing is passed (tools such as git take names relative to their own base).
//! What was learned lasts until the server says `notifications/tools/list_changed`; a tool
//! never listed has every string judged by its shape.
//!
//! A refused call is answered as a tool execution error (SEP-1303): a `CallToolResult` with
//! `isError: true` whose text tells the model what went wrong and what to send instead,
//! with the machine-readable denial in `_meta["io.rootfence/denial"]`. Every revision's
//! `CallToolResult` has `isError`. The denial is audited as before (`answered_error`).

use std::sync::{Mutex, OnceLock};

use serde_json::{Value, json};

use super::decide::{Verdict, rule_text};
use super::{Ctx, Inner};
use crate::audit;
use crate::jsonrpc::Id;
use crate::mcp::uris::Shape;
use crate::policy::{ArgKind, ToolInfer};
use crate::relay::Action;
use crate::roots::RootSet;

/// The `_meta` key of rootfence's own tool errors (and taken out of a server's results, so
/// a server cannot pass its text off as rootfence's).
pub(super) const DENIAL_META: &str = "io.rootfence/denial";

/// Roots named in a tool error at most.
const ROOTS_SHOWN: usize = 8;

/// The `tools/call` family: its handler and its state, what it learned about the server (its
/// name, and its tools' path arguments from `tools/list`). Handlers take the enforcer's shared
/// parts as `core` (the policy, the audit log, the checks every family uses).
#[derive(Debug, Default)]
pub(super) struct Tools {
    /// The server's `serverInfo.name`, once it gave one.
    server_name: OnceLock<String>,
    /// What the server's `tools/list` results taught about its tools' path arguments
    /// (`crate::toolargs`).
    plans: Mutex<crate::toolargs::Learned>,
}

impl Tools {
    pub(super) fn call(&self, core: &Inner, ctx: &Ctx<'_>, id: &Id, mut message: Value) -> Action {
        let name = super::text(&message["params"]["name"]);
        // The same request, its decisions' records naming the tool (issue 29).
        let ctx = &Ctx {
            tool: Some(&name),
            ..ctx.clone()
        };
        let live = core.live();
        let d = live.policy.decide_tool(&name);
        if !d.allow || !d.provenance.is_default() {
            let c = Verdict::from_policy(&d);
            if core.refuses(ctx, "params.name", &name, &c, audit::Action::AnsweredError) {
                return Action::Reply(tool_error(ctx, id, &name, None, &name, &c));
            }
        }
        let server = self.server_name.get().map(String::as_str);
        let writes = live.policy.tool_writes(&name);
        // The argument strings the policy's own rules judge (the inference skips them).
        let mut judged: Vec<String> = Vec::new();
        for tool_path in live.policy.tool_path_pointers(&name, server) {
            let pointer = format!("/params/arguments{}", tool_path.pointer);
            let Some(value) = message.pointer_mut(&pointer) else {
                continue; // the argument is absent
            };
            let strings: Vec<&mut Value> = match value {
                Value::Array(items) => {
                    judged.extend((0..items.len()).map(|i| format!("{}/{i}", tool_path.pointer)));
                    items.iter_mut().collect()
                }
                other => {
                    judged.push(tool_path.pointer.clone());
                    vec![other]
                }
            };
            for v in strings {
                let (raw, c) = match v.as_str() {
                    Some(raw) => match tool_path.kind {
                        ArgKind::Path => (raw.to_owned(), live.path(raw, ctx.roots)),
                        ArgKind::Uri => (raw.to_owned(), live.uri(raw, ctx.roots)),
                    },
                    None => {
                        let c = Verdict {
                            rule: Some(rule_text(&tool_path.provenance).into()),
                            ..Verdict::deny("not_a_path")
                        };
                        (v.to_string(), c)
                    }
                };
                let pointer = &tool_path.pointer;
                let c = match self.settle(core, ctx, id, &name, pointer, &raw, c, writes, None) {
                    Ok(Some(c)) => c,
                    Ok(None) => continue,
                    Err(refusal) => return refusal,
                };
                if let Some(canonical) = &c.canonical {
                    let canonical = match tool_path.kind {
                        ArgKind::Path => canonical.path(),
                        ArgKind::Uri => canonical.as_str(),
                    };
                    ctx.set_uri(v, canonical);
                }
            }
        }
        if let Some(refusal) = self.inferred_arguments(core, ctx, id, &name, &mut message, &judged)
        {
            return refusal;
        }
        core.done_ctx(ctx, message)
    }

    /// The arguments the tool's schema (or, for a tool never listed, each value's shape)
    /// says are paths, judged like the policy's own (`tools.infer`; see the module doc).
    /// `Some` is the refusal to answer with.
    fn inferred_arguments(
        &self,
        core: &Inner,
        ctx: &Ctx<'_>,
        id: &Id,
        name: &str,
        message: &mut Value,
        judged: &[String],
    ) -> Option<Action> {
        let live = core.live();
        let (mode, _) = live.policy.tool_infer(name);
        if mode == ToolInfer::Off {
            return None;
        }
        let args = message.get("params")?.get("arguments")?;
        let plan = crate::relock(&self.plans).get(name);
        let found = crate::toolargs::candidates(plan.as_deref(), args, mode, judged);
        if found.is_empty() {
            return None;
        }
        let writes = live.policy.tool_writes(name);
        let word = mode.as_str();
        for candidate in found {
            let (pointer, raw, why) = (candidate.pointer, candidate.value, candidate.why);
            let Some((c, as_uri, resolved)) =
                self.judge_inferred(&live, &raw, candidate.relative, ctx)
            else {
                continue;
            };
            // The record and the refusal say which tool, which argument and why it was
            // judged as a path.
            let arg = pointer.trim_start_matches('/');
            let note = format!("tools.infer = \"{word}\": `{name}` argument `{arg}`, {why}");
            let c = match self.settle(core, ctx, id, name, &pointer, &raw, c, writes, Some(note)) {
                Ok(Some(c)) => c,
                Ok(None) => continue,
                Err(refusal) => return Some(refusal),
            };
            // A path or URI argument given absolutely goes on as exactly what was checked;
            // a relative one goes on as given (the tool may resolve it against a base of its
            // own, such as a repository).
            if candidate.rewrite
                && !resolved
                && let Some(canonical) = &c.canonical
            {
                let text = if as_uri {
                    canonical.as_str()
                } else {
                    canonical.path()
                };
                // The pointer names the string just judged (only strings are rewritten,
                // so the arguments keep their shape).
                if let Some(slot) = message.pointer_mut(&format!("/params/arguments{pointer}")) {
                    ctx.set_uri(slot, text);
                }
            }
        }
        None
    }

    /// Settles the verdict `c` on the string `raw` of the argument at `pointer` (a JSON
    /// pointer under `params.arguments`): a writing tool's path that names a
    /// read-only place is refused, `note` (why an inferred argument was judged) joins the
    /// rule, and the decision is audited. `Ok(Some)`: allowed; `Ok(None)`: refused in audit
    /// mode (the argument goes on as sent); `Err`: the refusal to answer with.
    #[allow(clippy::too_many_arguments)]
    fn settle(
        &self,
        core: &Inner,
        ctx: &Ctx<'_>,
        id: &Id,
        tool: &str,
        pointer: &str,
        raw: &str,
        mut c: Verdict,
        writes: bool,
        note: Option<String>,
    ) -> Result<Option<Verdict>, Action> {
        if c.allow && writes && self.names_read_only_path(core, &c, ctx.roots) {
            // A writing tool may not change a place where a file runs code outside the
            // sandbox later (a git hook, an editor's tasks, a host's MCP configuration), even
            // one that does not exist yet.
            c = Verdict {
                rule: Some("sandbox.read_only_paths".into()),
                canonical: c.canonical,
                root: c.root,
                ..Verdict::deny("read_only_path")
            };
        }
        if let Some(note) = note {
            c.rule = Some(match c.rule.take() {
                Some(r) => format!("{r}; {note}").into(),
                None => note.into(),
            });
        }
        let arg = pointer.trim_start_matches('/');
        let field = format!("params.arguments{}", pointer.replace('/', "."));
        let ok = core.audit_decision(ctx, &field, raw, &c, audit::Action::AnsweredError);
        if c.allow && ok {
            Ok(Some(c))
        } else if core.live().enforce {
            Err(Action::Reply(tool_error(ctx, id, tool, Some(arg), raw, &c)))
        } else {
            Ok(None)
        }
    }

    /// Judges one inferred argument string: its decision, whether it was a URI, and whether
    /// it was relative (resolved against the server's working directory). `None`: it is
    /// not a file reference (another scheme; a relative name a path argument does not
    /// need judged; a relative name that resolves to nothing outside the roots).
    fn judge_inferred(
        &self,
        live: &super::Live,
        raw: &str,
        relative: bool,
        ctx: &Ctx<'_>,
    ) -> Option<(Verdict, bool, bool)> {
        if let Some(scheme) = crate::uri::scheme_of(raw) {
            let scheme = scheme.to_ascii_lowercase();
            return (scheme == "file" || crate::uri::wraps_a_file(raw, &scheme))
                .then(|| (live.uri(raw, ctx.roots), true, false));
        }
        if raw.starts_with('/') || raw.starts_with('~') {
            return Some((live.path(raw, ctx.roots), false, false));
        }
        let dotdot = raw.split('/').any(|s| s == "..");
        if raw.is_empty() || !(relative || dotdot) {
            return None;
        }
        let c = live.path(raw, ctx.roots);
        if c.reason != "relative_path" {
            return Some((c, false, true));
        }
        // The server's working directory is outside every root (or the roots are not known
        // yet): it would resolve `raw` there. What exists there is judged as that file; a
        // name that resolves to nothing is passed.
        let Some(cwd) = live.checker.server_cwd() else {
            return Some((c, false, true));
        };
        let there = cwd.join(raw);
        if std::fs::symlink_metadata(&there).is_err() {
            return None;
        }
        let there = there.to_str()?;
        Some((live.path(there, ctx.roots), false, true))
    }

    /// A result of the family: a list (`tools/list`) first teaches the path arguments of the
    /// tools it describes; then its items are judged as its shape says (`Inner::shaped`: the
    /// list's entries, or a call's content blocks). False when they are not the shape they
    /// must be.
    pub(super) fn result(
        &self,
        core: &Inner,
        ctx: &Ctx<'_>,
        shape: Shape,
        result: &mut Value,
    ) -> bool {
        if let Shape::Entries { .. } = shape {
            crate::relock(&self.plans).learn(result);
        }
        core.shaped(ctx, shape, result)
    }

    /// `notifications/tools/list_changed`: what was learned no longer holds.
    pub(super) fn forget(&self) {
        crate::relock(&self.plans).forget();
    }

    /// Whether an allowed path names a `sandbox.read_only_paths` match, by its canonical
    /// name or by the file it resolves to.
    fn names_read_only_path(&self, core: &Inner, c: &Verdict, roots: Option<&RootSet>) -> bool {
        let live = core.live();
        let s = live.policy.sandbox();
        c.canonical
            .as_ref()
            .is_some_and(|u| s.is_read_only_path(u.path()))
            || c.allowed
                .as_deref()
                .zip(roots)
                .and_then(|(a, r)| r.real_path(a))
                .is_some_and(|p| s.is_read_only_path(&p))
    }

    /// Learns the server's name from a result: `serverInfo` (`initialize`) or the
    /// 2026-07-28 `_meta` serverInfo. The first name given sticks.
    pub(super) fn learn_server_name(&self, result: &Value) {
        if self.server_name.get().is_some() {
            return;
        }
        let info = result
            .get("serverInfo")
            .or_else(|| result.pointer("/_meta/io.modelcontextprotocol~1serverInfo"));
        if let Some(name) = info.and_then(|i| i.get("name")).and_then(Value::as_str) {
            let _ = self.server_name.set(name.to_owned());
        }
    }
}

/// A refused tool call as a tool execution error the model can act on.
fn tool_error(
    ctx: &Ctx<'_>,
    id: &Id,
    tool: &str,
    arg: Option<&str>,
    raw: &str,
    c: &Verdict,
) -> Value {
    let text = advice(tool, arg, raw, c, ctx.roots);
    let mut result = json!({
        "content": [{"type": "text", "text": text}],
        "isError": true,
        "_meta": {DENIAL_META: {
            "uri": raw,
            "reason": c.reason,
            "rule": c.rule.as_deref(),
            "argument": arg,
        }},
    });
    if ctx.revision().results_carry_result_type() {
        result["resultType"] = json!("complete");
    }
    json!({"jsonrpc": "2.0", "id": id.to_value(), "result": result})
}

/// What went wrong and what to send instead, for the model.
fn advice(
    tool: &str,
    arg: Option<&str>,
    raw: &str,
    c: &Verdict,
    roots: Option<&RootSet>,
) -> String {
    let rule = c
        .rule
        .as_deref()
        .map(|r| match &c.layer {
            Some(layer) => format!(" (rule: {layer} {r})"),
            None => format!(" (rule: {r})"),
        })
        .unwrap_or_default();
    let Some(arg) = arg else {
        let why = match &*c.reason {
            "read_only" => format!("the policy is read-only and `{tool}` writes{rule}"),
            _ => format!("the policy does not allow the tool `{tool}`{rule}"),
        };
        return format!(
            "rootfence refused this call: {why}. Do not call `{tool}` again; use another tool, \
             or ask the user to change the rootfence policy."
        );
    };
    let shown = super::shorten(raw, 200);
    let reason = &*c.reason;
    let why = match reason {
        "outside_roots" => "is outside the allowed roots".to_owned(),
        "relative_path" => "is a relative path, which the server would resolve against its \
                            own working directory"
            .to_owned(),
        "roots_unknown" => "cannot be checked yet: the allowed roots are not known".to_owned(),
        "not_a_path" => "is not a string".to_owned(),
        "policy_deny" => format!("is protected by the policy{rule}"),
        "policy_deny_via_symlink" => {
            format!("resolves through a symbolic link to a file the policy protects{rule}")
        }
        "not_allowed" => format!("is not in the policy's allow-list{rule}"),
        "symlink_escape" => "goes through a symbolic link that leads outside its root".to_owned(),
        "symlink_refused" => "goes through a symbolic link, and the policy follows none".to_owned(),
        "hard_link" => "is a file with several hard links (another name of the same file may \
                        lie outside the roots)"
            .to_owned(),
        "read_only_path" => format!(
            "is a place where a file written now runs code outside the sandbox later (a git \
             hook, editor tasks, a host's MCP configuration), so no tool may write it{rule}"
        ),
        _ => format!("was refused ({reason})"),
    };
    let allowed = || match roots.map(RootSet::roots) {
        None | Some([]) => "no roots are allowed in this session".to_owned(),
        Some(list) => {
            let mut names: Vec<String> = list
                .iter()
                .take(ROOTS_SHOWN)
                .map(|r| r.uri().path().to_owned())
                .collect();
            if list.len() > ROOTS_SHOWN {
                names.push(format!("and {} more", list.len() - ROOTS_SHOWN));
            }
            format!("the allowed roots are: {}", names.join(", "))
        }
    };
    let next = match reason {
        "roots_unknown" => "Try the call again in a moment.".to_owned(),
        "policy_deny"
        | "policy_deny_via_symlink"
        | "not_allowed"
        | "hard_link"
        | "symlink_escape"
        | "symlink_refused"
        | "read_only_path" => format!(
            "Do not retry this path; {} (choose another file inside them, or ask the user).",
            allowed()
        ),
        _ => format!(
            "Use an absolute path inside one of the allowed roots; {}.",
            allowed()
        ),
    };
    format!(
        "rootfence refused this call to `{tool}`: the argument `{arg}` (\"{shown}\") {why}. {next}"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn advice_names_the_roots_and_what_to_send() {
        let c = Verdict::deny("outside_roots");
        let roots = RootSet::empty();
        let text = advice("read_file", Some("path"), "/etc/passwd", &c, Some(&roots));
        assert!(
            text.contains("`path` (\"/etc/passwd\") is outside the allowed roots"),
            "{text}"
        );
        assert!(text.contains("no roots are allowed"), "{text}");
        let c = Verdict {
            rule: Some("line 3: resources.deny = \"**/.env\"".into()),
            layer: Some("org.toml".into()),
            ..Verdict::deny("policy_deny")
        };
        let text = advice("read_file", Some("path"), "/p/.env", &c, None);
        assert!(
            text.contains("protected by the policy (rule: org.toml line 3"),
            "{text}"
        );
        assert!(text.contains("Do not retry this path"), "{text}");
        let c = Verdict::deny("tool_denied");
        let text = advice("run_shell", None, "run_shell", &c, None);
        assert!(
            text.contains("does not allow the tool `run_shell`"),
            "{text}"
        );
    }
}
