//! Tool arguments that carry paths, learned from the tools' own schemas (issue 26).
//!
//! Owns, with no I/O and no enforcer state: inferring from a `tools/list` result (any
//! revision) which places of each tool's arguments hold filesystem paths or URIs, which
//! are known not to, and why ([`schema`], [`words`]); keeping what was learned per server
//! ([`Learned`]); and, for one `tools/call`, listing the argument strings the enforcer must
//! judge ([`candidates`]) under the policy's `tools.infer` stance ([`Infer`]). Deciding
//! whether a path is inside the roots is the enforcer's (`enforce/tools.rs`).
//!
//! A tool that was never listed, or whose schema was past the inference's bounds, has
//! every string of its arguments judged by its shape: an absolute path, `~/…`, a `file:`
//! URI, a relative path with `..`.

pub mod schema;
pub mod words;

use std::collections::HashMap;
use std::sync::Arc;

use serde_json::Value;

pub use schema::{Rule, Seg, ToolPlan};
pub use words::{Role, Shape, shape};

crate::coded::coded! {
    /// `tools.infer`: how far arguments are judged beyond those the policy names.
    #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
    pub enum Infer {
        /// Every string that looks like a file reference is checked, whatever its schema
        /// says; arguments named like `source` or `target` are checked as paths.
        Strict => "strict",
        /// Arguments the schema marks as paths or URIs are checked; strings of uncertain role
        /// are checked when they look like a file reference; strings the schema says are not
        /// paths (a URL, a regular expression, a REST endpoint, text) pass, unless they are a
        /// whole `file:` URI.
        Schema => "schema",
        /// Only the arguments the policy names (`[[tools.paths]]`).
        Off => "off",
    }
    /// The policy's word for it.
    pub fn as_str;
}

/// Tools remembered per server at most (more fall back to the value's shape).
pub const MAX_TOOLS: usize = 4096;

/// What was learned from one server's `tools/list` results.
#[derive(Debug, Default)]
pub struct Learned {
    tools: HashMap<String, Arc<ToolPlan>>,
}

impl Learned {
    /// Learns the tools of one `tools/list` result (a page adds to what earlier pages
    /// taught; a tool listed again is learned again).
    pub fn learn(&mut self, result: &Value) {
        for (name, plan) in infer_list(result) {
            if self.tools.len() >= MAX_TOOLS && !self.tools.contains_key(&name) {
                break;
            }
            self.tools.insert(name, Arc::new(plan));
        }
    }

    /// Forgets everything (`notifications/tools/list_changed`: the next list teaches again).
    pub fn forget(&mut self) {
        self.tools.clear();
    }

    /// What was learned about `tool`.
    pub fn get(&self, tool: &str) -> Option<Arc<ToolPlan>> {
        self.tools.get(tool).cloned()
    }
}

/// Infers every tool of a `tools/list` result, within [`schema::LIST_NODES`] in all: the
/// tools past it get an overflowed plan (every string judged by its shape).
pub fn infer_list(result: &Value) -> Vec<(String, ToolPlan)> {
    let Some(tools) = result.get("tools").and_then(Value::as_array) else {
        return Vec::new();
    };
    let mut budget = schema::LIST_NODES;
    let mut out = Vec::with_capacity(tools.len().min(MAX_TOOLS));
    for tool in tools.iter().take(MAX_TOOLS) {
        let Some(name) = tool.get("name").and_then(Value::as_str) else {
            continue;
        };
        let plan = match tool.get("inputSchema") {
            _ if budget == 0 => ToolPlan::overflowed(format!(
                "the tools/list result has more than {} schema nodes",
                schema::LIST_NODES
            )),
            Some(s) => schema::infer_with(s, &mut budget),
            None => ToolPlan::default(),
        };
        out.push((name.to_owned(), plan));
    }
    out
}

/// One argument string the enforcer must judge.
#[derive(Debug, PartialEq, Eq)]
pub struct Candidate {
    /// Where it is, as a JSON pointer into the arguments (`/paths/1`).
    pub pointer: String,
    pub value: String,
    /// A relative value is judged too (a path argument); else only an absolute path, `~`,
    /// a URI, or `..` are.
    pub relative: bool,
    /// The checked canonical value replaces it (a path or URI argument).
    pub rewrite: bool,
    /// Why it is judged, for the audit record and the refusal.
    pub why: String,
}

/// The strings of `arguments` to judge for a tool with `plan` (`None`: never listed), in
/// document order. `skip` holds pointers the policy's own rules already judged.
pub fn candidates(
    plan: Option<&ToolPlan>,
    arguments: &Value,
    mode: Infer,
    skip: &[String],
) -> Vec<Candidate> {
    let mut out = Vec::new();
    if mode == Infer::Off {
        return out;
    }
    let rules: Vec<&Rule> = match plan {
        Some(p) if p.overflow.is_none() => p.rules.iter().collect(),
        _ => Vec::new(),
    };
    let fallback = match plan {
        None => "a tool that was never listed: judged by its shape".to_owned(),
        Some(ToolPlan {
            overflow: Some(why),
            ..
        }) => format!("the tool's schema was not read to the end ({why}): judged by its shape"),
        Some(_) => "judged by its shape".to_owned(),
    };
    let mut pointer = String::new();
    walk(
        arguments,
        &rules,
        0,
        &mut pointer,
        mode,
        &fallback,
        skip,
        &mut out,
    );
    out
}

#[allow(clippy::too_many_arguments)]
fn walk(
    value: &Value,
    rules: &[&Rule],
    depth: usize,
    pointer: &mut String,
    mode: Infer,
    fallback: &str,
    skip: &[String],
    out: &mut Vec<Candidate>,
) {
    match value {
        Value::String(s) => {
            if skip.iter().any(|p| p == pointer) {
                return;
            }
            // The rule that names this place most exactly (a property name over `*`).
            let rule = rules
                .iter()
                .filter(|r| r.pattern.len() == depth)
                .max_by_key(|r| {
                    let exact = r
                        .pattern
                        .iter()
                        .filter(|s| matches!(s, Seg::Key(_)))
                        .count();
                    (exact, r.role)
                });
            let (role, why) = match rule {
                Some(r) => (r.role, r.why.as_str()),
                None => (Role::Uncertain, fallback),
            };
            let shaped = shape(s);
            let (judge, relative, rewrite) = match (mode, role) {
                (_, Role::Path) | (Infer::Strict, Role::Weak) => (true, true, true),
                (_, Role::Uri) => (true, false, true),
                (Infer::Strict, _) | (_, Role::Uncertain | Role::Weak) => {
                    (shaped.is_some(), false, false)
                }
                (_, Role::NotPath) => (shaped == Some(Shape::FileUri), false, false),
            };
            if judge {
                out.push(Candidate {
                    pointer: pointer.clone(),
                    value: s.clone(),
                    relative,
                    rewrite,
                    why: why.to_owned(),
                });
            }
        }
        // Recursion is bounded by the parser's nesting limit (serde_json: 128).
        Value::Array(items) => {
            let next: Vec<&Rule> = rules
                .iter()
                .copied()
                .filter(|r| matches!(r.pattern.get(depth), Some(Seg::AnyItem)))
                .collect();
            for (i, item) in items.iter().enumerate() {
                let len = pointer.len();
                pointer.push('/');
                pointer.push_str(&i.to_string());
                walk(item, &next, depth + 1, pointer, mode, fallback, skip, out);
                pointer.truncate(len);
            }
        }
        Value::Object(map) => {
            for (k, v) in map {
                let next: Vec<&Rule> = rules
                    .iter()
                    .copied()
                    .filter(|r| match r.pattern.get(depth) {
                        Some(Seg::Key(key)) => key == k,
                        Some(Seg::AnyKey) => true,
                        _ => false,
                    })
                    .collect();
                let len = pointer.len();
                pointer.push('/');
                pointer.push_str(&k.replace('~', "~0").replace('/', "~1"));
                walk(v, &next, depth + 1, pointer, mode, fallback, skip, out);
                pointer.truncate(len);
            }
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests;
