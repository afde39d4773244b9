//! Inference over one tool's `inputSchema` (JSON Schema; full 2020-12 from 2026-07-28, from
//! an untrusted server): the places in the arguments whose strings carry paths or URIs,
//! or are known not to, each with the signal that decided.
//!
//! Bounded: at most [`MAX_NODES`] schema nodes per tool (and [`LIST_NODES`] per
//! `tools/list` result), [`MAX_DEPTH`] levels, [`MAX_RULES`] places. Only local `$ref`s
//! (`#…`, within the tool's own schema) are followed, each at most once on a path (a cycle
//! stops there); an external `$ref` is never dereferenced. A schema past a bound is not
//! read further and the tool is marked `overflow`: every string of its arguments is then
//! judged by its shape (fail closed), never taken as "no paths".

use serde_json::{Map, Value};

use super::words::{self, Role};

/// Schema nodes visited per tool at most.
pub const MAX_NODES: usize = 4096;
/// Schema nodes visited per `tools/list` result at most (later tools overflow).
pub const LIST_NODES: usize = 50_000;
/// Nesting of schemas (properties, items, `$ref` hops) followed at most.
pub const MAX_DEPTH: usize = 32;
/// Places recorded per tool at most.
pub const MAX_RULES: usize = 256;

/// One step of a place in the arguments.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Seg {
    /// A named property.
    Key(String),
    /// Any property (`additionalProperties`, `patternProperties`).
    AnyKey,
    /// Any array item.
    AnyItem,
}

/// One place in a tool's arguments and what its strings are.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Rule {
    pub pattern: Vec<Seg>,
    pub role: Role,
    /// The signal that decided (`named \`path\``, `format "uri"`, …).
    pub why: String,
}

impl Rule {
    /// The place as a JSON pointer, `*` standing for any item or property.
    pub fn pointer(&self) -> String {
        pointer_of(&self.pattern)
    }
}

/// A place as a JSON pointer (`*` for any item or key).
fn pointer_of(pattern: &[Seg]) -> String {
    let mut out = String::new();
    for seg in pattern {
        out.push('/');
        match seg {
            Seg::Key(k) => out.push_str(&k.replace('~', "~0").replace('/', "~1")),
            Seg::AnyKey | Seg::AnyItem => out.push('*'),
        }
    }
    out
}

/// What was learned about one tool.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ToolPlan {
    pub rules: Vec<Rule>,
    /// Why the schema was not read to the end (then every string is judged by its shape).
    pub overflow: Option<String>,
    /// Places not followed (external or cyclic `$ref`s): their strings are judged by shape.
    pub notes: Vec<String>,
}

impl ToolPlan {
    /// A plan for a tool whose schema was not read: every string by its shape.
    pub fn overflowed(why: impl Into<String>) -> ToolPlan {
        ToolPlan {
            overflow: Some(why.into()),
            ..ToolPlan::default()
        }
    }
}

/// Infers the plan of one tool from its `inputSchema`, spending at most `budget` nodes
/// (decremented).
pub fn infer_with(schema: &Value, budget: &mut usize) -> ToolPlan {
    let mut w = Walker {
        root: schema,
        nodes: 0,
        budget: (*budget).min(MAX_NODES),
        refs: Vec::new(),
        rules: Vec::new(),
        notes: Vec::new(),
        overflow: None,
    };
    let mut pattern = Vec::new();
    w.visit(schema, &mut pattern, None, 0);
    *budget = budget.saturating_sub(w.nodes);
    if w.overflow.is_none() && w.rules.len() > MAX_RULES {
        w.overflow = Some(format!("more than {MAX_RULES} arguments to check"));
    }
    if let Some(why) = w.overflow {
        return ToolPlan::overflowed(why);
    }
    ToolPlan {
        rules: w.rules,
        overflow: None,
        notes: w.notes,
    }
}

struct Walker<'s> {
    root: &'s Value,
    nodes: usize,
    budget: usize,
    /// The `$ref` targets on the current path (a cycle stops where it closes).
    refs: Vec<*const Value>,
    rules: Vec<Rule>,
    notes: Vec<String>,
    overflow: Option<String>,
}

impl<'s> Walker<'s> {
    fn visit(&mut self, node: &'s Value, pattern: &mut Vec<Seg>, name: Option<&str>, depth: usize) {
        if self.overflow.is_some() {
            return;
        }
        self.nodes += 1;
        if self.nodes > self.budget {
            self.overflow = Some(format!("more than {} schema nodes", self.budget));
            return;
        }
        if depth > MAX_DEPTH {
            self.overflow = Some(format!("nested deeper than {MAX_DEPTH} levels"));
            return;
        }
        if self.rules.len() > MAX_RULES {
            return;
        }
        let Value::Object(obj) = node else {
            return; // `true`, `false`, or not a schema: nothing to learn here
        };
        self.follow_refs(obj, pattern, name, depth);
        if may_be_string(obj)
            && let Some((role, why)) = role_of(obj, name)
        {
            self.rule(pattern, role, why);
        }
        if let Some(Value::Object(props)) = obj.get("properties") {
            for (k, v) in props {
                pattern.push(Seg::Key(k.clone()));
                self.visit(v, pattern, Some(k), depth + 1);
                pattern.pop();
            }
        }
        // (`propertyNames` describes names, not values: not visited.)
        for key in ["additionalProperties", "unevaluatedProperties"] {
            if let Some(v @ Value::Object(_)) = obj.get(key) {
                pattern.push(Seg::AnyKey);
                self.visit(v, pattern, None, depth + 1);
                pattern.pop();
            }
        }
        if let Some(Value::Object(pp)) = obj.get("patternProperties") {
            for v in pp.values() {
                pattern.push(Seg::AnyKey);
                self.visit(v, pattern, None, depth + 1);
                pattern.pop();
            }
        }
        // Items keep the array's name: `paths: [..]` holds paths.
        for key in [
            "items",
            "prefixItems",
            "additionalItems",
            "unevaluatedItems",
            "contains",
        ] {
            let list = match obj.get(key) {
                Some(Value::Array(list)) => list.as_slice(),
                Some(v @ Value::Object(_)) => std::slice::from_ref(v),
                _ => &[],
            };
            for v in list {
                pattern.push(Seg::AnyItem);
                self.visit(v, pattern, name, depth + 1);
                pattern.pop();
            }
        }
        for key in ["anyOf", "oneOf", "allOf"] {
            if let Some(Value::Array(list)) = obj.get(key) {
                for v in list {
                    self.visit(v, pattern, name, depth + 1);
                }
            }
        }
        for key in ["if", "then", "else"] {
            if let Some(v) = obj.get(key) {
                self.visit(v, pattern, name, depth + 1);
            }
        }
        if let Some(Value::Object(deps)) = obj.get("dependentSchemas") {
            for v in deps.values() {
                self.visit(v, pattern, name, depth + 1);
            }
        }
    }

    /// `$ref` (local ones followed), `$dynamicRef` and `$recursiveRef` (never followed).
    fn follow_refs(
        &mut self,
        obj: &'s Map<String, Value>,
        pattern: &mut Vec<Seg>,
        name: Option<&str>,
        depth: usize,
    ) {
        for key in ["$ref", "$dynamicRef", "$recursiveRef"] {
            let Some(r) = obj.get(key) else { continue };
            let at = if pattern.is_empty() {
                "the arguments".to_owned()
            } else {
                format!("`{}`", pointer_of(pattern))
            };
            let target = match r.as_str() {
                Some(s) if key == "$ref" && s.starts_with('#') => resolve(self.root, s),
                Some(s) => {
                    self.note(format!(
                        "{at}: {key} {} not followed (external or dynamic); its strings are judged by their shape",
                        short(s)
                    ));
                    continue;
                }
                None => None,
            };
            let Some(target) = target else {
                self.note(format!(
                    "{at}: {key} {} does not resolve; its strings are judged by their shape",
                    short(r.as_str().unwrap_or("(not a string)"))
                ));
                continue;
            };
            let ptr: *const Value = target;
            if self.refs.contains(&ptr) {
                self.note(format!(
                    "{at}: recursive $ref {} followed once; deeper strings are judged by their shape",
                    short(r.as_str().unwrap_or_default())
                ));
                continue;
            }
            self.refs.push(ptr);
            self.visit(target, pattern, name, depth + 1);
            self.refs.pop();
        }
    }

    fn rule(&mut self, pattern: &[Seg], role: Role, why: String) {
        if let Some(r) = self.rules.iter_mut().find(|r| r.pattern == pattern) {
            // Alternatives (`anyOf`, a `$ref` beside its siblings) disagree: the one that
            // checks more wins.
            if role > r.role {
                r.role = role;
                r.why = why;
            }
            return;
        }
        self.rules.push(Rule {
            pattern: pattern.to_vec(),
            role,
            why,
        });
    }

    fn note(&mut self, note: String) {
        if self.notes.len() < 16 && !self.notes.contains(&note) {
            self.notes.push(note);
        }
    }
}

/// A `$ref` text, cut for a note.
fn short(s: &str) -> String {
    let mut end = s.len().min(80);
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    format!("\"{}\"", &s[..end])
}

/// Whether a schema admits strings (no `type`, or `type` naming `string`).
fn may_be_string(obj: &Map<String, Value>) -> bool {
    match obj.get("type") {
        None => true,
        Some(Value::String(t)) => t == "string",
        Some(Value::Array(ts)) => ts.iter().any(|t| t == "string"),
        Some(_) => true,
    }
}

/// The role of the strings at one schema node, from its format, description, title and
/// the name it is held under; the strongest signal first (see docs/enforcement.md).
fn role_of(obj: &Map<String, Value>, name: Option<&str>) -> Option<(Role, String)> {
    let format = obj
        .get("format")
        .and_then(Value::as_str)
        .and_then(words::format_role);
    if let Some((Role::Path | Role::Uri, _)) = &format {
        return format;
    }
    let described = ["description", "title"]
        .iter()
        .filter_map(|k| obj.get(*k).and_then(Value::as_str))
        .find_map(words::description_role);
    if let Some((Role::NotPath, _)) = &described {
        return described;
    }
    // A closed set of words (`"png" | "jpeg"`): its description speaks of the file it
    // shapes, not of a path given here. The name may still say path.
    let described = described.filter(|_| !(obj.contains_key("enum") || obj.contains_key("const")));
    let named = name.and_then(words::name_role);
    if let Some((Role::Path | Role::Uri | Role::NotPath, _)) = &named {
        return named;
    }
    if format.is_some() {
        return format;
    }
    if described.is_some() {
        return described;
    }
    named
}

/// A local `$ref` (`#`, `#/json/pointer` percent-encoded as a URI fragment).
fn resolve<'s>(root: &'s Value, r: &str) -> Option<&'s Value> {
    let fragment = r.strip_prefix('#')?;
    if fragment.is_empty() {
        return Some(root);
    }
    if !fragment.starts_with('/') {
        return None; // an `$anchor` name: not looked for
    }
    root.pointer(&percent_decode(fragment)?)
}

fn percent_decode(s: &str) -> Option<String> {
    if !s.contains('%') {
        return Some(s.to_owned());
    }
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%' {
            let hex = s.get(i + 1..i + 3)?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
}
