//! The raw policy layer: the TOML document of one file, checked for shape only (known keys,
//! value types, enum words, number ranges), every value kept with its byte span. Nothing
//! here expands, compiles or compares layers; `compile.rs` does that.
//!
//! Why not `#[derive(Deserialize)]` with `deny_unknown_fields`: serde stops at the first
//! problem, and the issue asks for every error at once. So the document is parsed into
//! toml's spanned tree (`toml::de::DeTable`) and walked by hand. Every table still rejects
//! unknown keys (the `deny_unknown_fields` contract), with a did-you-mean hint. The schema
//! stays flat (one level of tables, one array of tables) so every value has a span.

use std::ops::Range;

use toml::Spanned;
use toml::de::{DeArray, DeTable, DeValue};

use super::error::{ErrorKind, PolicyError, Source};
use super::schema::{self, Kind, SETTINGS, Spec};
use super::settings::Word;

/// The only schema version this build understands.
pub(crate) const SCHEMA_VERSION: i64 = 1;

/// The arrays of tables, each with the keys an entry requires and the hint when one lacks
/// them; an entry's keys are declared settings like any other.
const ARRAYS: &[(&str, &[&str], &str)] = &[
    (
        "tools.paths",
        &["tool", "pointers"],
        "each [[tools.paths]] needs `tool = \"<name glob>\"` and \
         `pointers = [\"/json/pointer\", ...]`",
    ),
    (
        "tools.infer_for",
        &["tool", "infer"],
        "each [[tools.infer_for]] needs `tool = \"<name glob>\"` and \
         `infer = \"strict\"`, `\"schema\"` or `\"off\"`",
    ),
];

/// A value with the span of its text in the source.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Sp<T> {
    pub(crate) v: T,
    pub(crate) span: Range<usize>,
}

/// A key's value, with the dotted key name and both spans.
#[derive(Debug, Clone)]
pub(crate) struct Entry<T> {
    /// Dotted name, e.g. `resources.deny`.
    pub(crate) key: &'static str,
    pub(crate) key_span: Range<usize>,
    pub(crate) v: T,
    pub(crate) span: Range<usize>,
}

impl<T> Entry<T> {
    /// The same key and spans, holding `f` of the value.
    fn map<U>(self, f: impl FnOnce(T) -> U) -> Entry<U> {
        let v = f(self.v);
        Entry {
            key: self.key,
            key_span: self.key_span,
            v,
            span: self.span,
        }
    }

    /// The same key and spans, holding `v`.
    pub(crate) fn with<U>(&self, v: U) -> Entry<U> {
        Entry {
            key: self.key,
            key_span: self.key_span.clone(),
            v,
            span: self.span.clone(),
        }
    }
}

/// A setting's value as read; its declaration's `Kind` says which.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Val {
    Bool(bool),
    /// An integer or a size.
    Int(u64),
    /// A word with its rank (or value).
    Word(&'static str, u64),
    /// A string, or a path (expanded once compiled).
    Str(String),
    List(Vec<Sp<String>>),
    /// `sandbox.network`'s array of TCP ports (its words are `Word`s).
    Ports(Vec<Sp<u16>>),
}

/// `other_schemes` and `network` as a word, with the rank of each.
const ALLOW_DENY: &[(&str, u64)] = &[("allow", 1), ("deny", 0)];

/// One layer's document, shape-checked.
#[derive(Debug, Clone, Default)]
pub(crate) struct RawLayer {
    pub(crate) version: Option<Entry<i64>>,
    /// Every other setting of a table, in `SETTINGS` order (`None`: not set here).
    vals: Vec<Option<Entry<Val>>>,
    /// The entries of `[[tools.paths]]` and of `[[tools.infer_for]]`, each read like a
    /// layer of its keys alone.
    pub(crate) tools_paths: Vec<RawLayer>,
    pub(crate) tools_infer_for: Vec<RawLayer>,
}

impl RawLayer {
    /// The value of a declared setting, if this layer sets it.
    pub(crate) fn get(&self, key: &str) -> Option<&Entry<Val>> {
        self.vals.get(schema::index(key))?.as_ref()
    }

    /// A declared setting's value as `f` reads it (`Val::list`, `Val::text`, ...), with
    /// its key and spans.
    pub(crate) fn read<'a, T>(
        &'a self,
        key: &str,
        f: impl FnOnce(&'a Val) -> Option<T>,
    ) -> Option<Entry<T>> {
        let e = self.get(key)?;
        Some(e.with(f(&e.v)?))
    }
}

impl Val {
    pub(crate) fn int(&self) -> Option<u64> {
        match self {
            Val::Int(n) => Some(*n),
            _ => None,
        }
    }

    pub(crate) fn text(&self) -> Option<&str> {
        match self {
            Val::Str(s) => Some(s),
            _ => None,
        }
    }

    pub(crate) fn list(&self) -> Option<&[Sp<String>]> {
        match self {
            Val::List(l) => Some(l),
            _ => None,
        }
    }

    /// A word, as its type.
    pub(crate) fn word<T: Word + Copy>(&self) -> Option<T> {
        let Val::Word(w, _) = self else { return None };
        T::ALL.iter().find(|(word, _)| word == w).map(|(_, t)| *t)
    }
}

/// Parses one layer. Returns `None` when the file is not TOML at all (the syntax error is
/// pushed); otherwise a `RawLayer` with every well-formed value, and every shape error
/// pushed to `errs`.
pub(crate) fn parse_layer(src: &Source<'_>, errs: &mut Vec<PolicyError>) -> Option<RawLayer> {
    // `parse` (not `parse_recoverable`): after a syntax error the recovered tree and the
    // follow-on errors mostly describe the parser's confusion, not the user's mistakes.
    let doc = match DeTable::parse(src.text) {
        Ok(doc) => doc,
        Err(e) => {
            let span = e.span().unwrap_or(0..0);
            let msg = format!("invalid TOML: {}", e.message());
            let hint = "fix the TOML syntax; the rest of this file is checked once it parses";
            errs.push(src.error(&span, ErrorKind::Syntax, msg).hint(hint));
            return None;
        }
    };
    let mut w = Walker { src, errs };
    let top = doc.get_ref();
    let mut raw = RawLayer::default();
    w.check_keys(top, "");

    raw.version = w.int(top, "version");
    match &raw.version {
        None => w.fail(
            &(0..0),
            ErrorKind::Version,
            "missing `version`".into(),
            format!("add `version = {SCHEMA_VERSION}` at the top of the file"),
        ),
        Some(v) if v.v != SCHEMA_VERSION => w.fail(
            &v.span,
            ErrorKind::Version,
            format!("unsupported policy schema version {}", v.v),
            format!("this rootfence understands `version = {SCHEMA_VERSION}`; see docs/policy.md"),
        ),
        Some(_) => {}
    }
    // Each table (its keys checked) under its parent, parents first as declared.
    let mut tables = vec![("", top)];
    for name in schema::tables().into_iter().skip(1) {
        let parent = name.rsplit_once('.').map_or("", |(p, _)| p);
        let Some(&(_, t)) = tables.iter().find(|(n, _)| *n == parent) else {
            continue;
        };
        if let Some(&(_, required, hint)) = ARRAYS.iter().find(|(a, ..)| *a == name) {
            let entries = w.entries(t, name, required, hint);
            match name {
                "tools.paths" => raw.tools_paths = entries,
                _ => raw.tools_infer_for = entries,
            }
            continue;
        }
        if let Some(sub) = w.table(t, name) {
            tables.push((name, sub));
        }
    }
    raw.vals = SETTINGS
        .iter()
        .map(|spec| {
            let table = spec.key.rsplit_once('.').map_or("", |(t, _)| t);
            let (_, t) = tables.iter().find(|(n, _)| *n == table)?;
            w.read(t, spec)
        })
        .collect();
    Some(raw)
}

type Item<'t, 'i> = (
    &'t Spanned<toml::de::DeString<'i>>,
    &'t Spanned<DeValue<'i>>,
);

struct Walker<'a, 's> {
    src: &'a Source<'s>,
    errs: &'a mut Vec<PolicyError>,
}

impl Walker<'_, '_> {
    /// A declared setting of `table`, read as its kind says.
    fn read(&mut self, table: &DeTable<'_>, spec: &'static Spec) -> Option<Entry<Val>> {
        let name = spec.key;
        let e = match spec.kind {
            Kind::Bool => self.boolean(table, name)?.map(Val::Bool),
            Kind::Int(min, max) => self.uint(table, name, min, max)?.map(Val::Int),
            Kind::Size => self.size(table, name)?.map(Val::Int),
            Kind::Word(words) => {
                let e = self.word(table, name, &words.words())?;
                e.map(|(w, n)| Val::Word(w, n))
            }
            Kind::Str | Kind::Path => self.string(table, name)?.map(Val::Str),
            Kind::Strings | Kind::PathGlobs | Kind::NameGlobs | Kind::Mimes | Kind::EnvNames => {
                self.strings(table, name)?.map(Val::List)
            }
            Kind::Schemes => {
                let what = "\"allow\", \"deny\" or an array of scheme names";
                self.allow_deny_or(table, name, what, |w, _| {
                    Some(w.strings(table, name)?.map(Val::List))
                })?
            }
            Kind::Own if name == "sandbox.network" => self.network(table)?,
            Kind::Own => return None,
        };
        Some(e)
    }

    fn fail(&mut self, span: &Range<usize>, kind: ErrorKind, msg: String, hint: impl Into<String>) {
        self.errs.push(self.src.error(span, kind, msg).hint(hint));
    }

    fn check_keys(&mut self, table: &DeTable<'_>, name: &str) {
        let known = schema::keys_of(name);
        for (k, _) in table.iter() {
            let key: &str = k.get_ref();
            if known.contains(&key) {
                continue;
            }
            let where_ = if name.is_empty() {
                "at the top level".to_string()
            } else {
                format!("in [{name}]")
            };
            let msg = format!("unknown key `{key}` {where_}");
            self.fail(
                &k.span(),
                ErrorKind::UnknownKey,
                msg,
                did_you_mean(name, key, &known),
            );
        }
    }

    /// The item of `table` for a dotted name (its last segment is the key).
    fn find<'t, 'i>(table: &'t DeTable<'i>, name: &str) -> Option<Item<'t, 'i>> {
        table.get_key_value(name.rsplit('.').next().unwrap_or(name))
    }

    fn wrong_type(&mut self, span: &Range<usize>, key: &str, want: &str, got: &DeValue<'_>) {
        let msg = format!("`{key}` must be {want}, found {}", got.type_str());
        let hint = format!("write `{key}` as {want}; see docs/policy.md for the schema");
        self.fail(span, ErrorKind::WrongType, msg, hint);
    }

    /// The value of `name` in `table` as `f` reads it, with its key and spans; a value `f`
    /// does not read is reported as not `want`.
    fn typed<'t, 'i, T>(
        &mut self,
        table: &'t DeTable<'i>,
        name: &'static str,
        want: &str,
        f: impl FnOnce(&'t DeValue<'i>) -> Option<T>,
    ) -> Option<Entry<T>> {
        let (k, v) = Self::find(table, name)?;
        let Some(t) = f(v.get_ref()) else {
            self.wrong_type(&v.span(), name, want, v.get_ref());
            return None;
        };
        Some(Entry {
            key: name,
            key_span: k.span(),
            v: t,
            span: v.span(),
        })
    }

    /// The sub-table `name` of `table`, its keys checked.
    fn table<'t, 'i>(
        &mut self,
        table: &'t DeTable<'i>,
        name: &'static str,
    ) -> Option<&'t DeTable<'i>> {
        let t = self.typed(table, name, "a table", DeValue::as_table)?.v;
        self.check_keys(t, name);
        Some(t)
    }

    fn string(&mut self, table: &DeTable<'_>, name: &'static str) -> Option<Entry<String>> {
        self.typed(table, name, "a string", |v| v.as_str().map(str::to_string))
    }

    fn strings(
        &mut self,
        table: &DeTable<'_>,
        name: &'static str,
    ) -> Option<Entry<Vec<Sp<String>>>> {
        let items = self.typed(table, name, "an array of strings", DeValue::as_array)?;
        let mut out = Vec::with_capacity(items.v.len());
        let mut ok = true;
        for item in items.v.iter() {
            match item.get_ref() {
                DeValue::String(s) => out.push(Sp {
                    v: s.to_string(),
                    span: item.span(),
                }),
                other => {
                    ok = false;
                    self.wrong_type(&item.span(), name, "an array of strings", other);
                }
            }
        }
        // A list with a bad element is dropped whole: a partial deny list must never be
        // compiled (and the layer fails anyway, because an error was pushed).
        ok.then(|| items.with(out))
    }

    fn boolean(&mut self, table: &DeTable<'_>, name: &'static str) -> Option<Entry<bool>> {
        self.typed(table, name, "a boolean (true or false)", DeValue::as_bool)
    }

    fn int(&mut self, table: &DeTable<'_>, name: &'static str) -> Option<Entry<i64>> {
        let e = self.typed(table, name, "an integer", DeValue::as_integer)?;
        let Ok(n) = i64::from_str_radix(e.v.as_str(), e.v.radix()) else {
            self.bad_value(&e.span, name, "is out of range", "use a smaller integer");
            return None;
        };
        Some(e.with(n))
    }

    fn bad_value(&mut self, span: &Range<usize>, key: &str, what: &str, hint: &str) {
        self.fail(span, ErrorKind::BadValue, format!("`{key}` {what}"), hint);
    }

    fn uint(
        &mut self,
        table: &DeTable<'_>,
        name: &'static str,
        min: u64,
        max: u64,
    ) -> Option<Entry<u64>> {
        let e = self.int(table, name)?;
        match u64::try_from(e.v) {
            Ok(n) if (min..=max).contains(&n) => Some(e.with(n)),
            _ => {
                let hint = if max == u64::MAX {
                    format!("use an integer of at least {min}")
                } else {
                    format!("use an integer from {min} to {max}")
                };
                self.bad_value(&e.span, e.key, "is out of range", &hint);
                None
            }
        }
    }

    /// A byte size: an integer, or a string such as `"16 MiB"`.
    fn size(&mut self, table: &DeTable<'_>, name: &'static str) -> Option<Entry<u64>> {
        let hint = "write a number of bytes, or a string such as \"16 MiB\" \
                    (units: B, KiB, MiB, GiB, TiB)";
        let e = self.typed(table, name, "a size (integer or string)", |v| match v {
            DeValue::Integer(i) => Some(u64::from_str_radix(i.as_str(), i.radix()).ok()),
            DeValue::String(s) => Some(parse_size(s)),
            _ => None,
        })?;
        match e.v {
            Some(n) if n > 0 => Some(e.with(n)),
            _ => {
                self.bad_value(&e.span, name, "is not a valid positive size", hint);
                None
            }
        }
    }

    /// One of `words`: the word as written, with its value.
    fn word<T: Copy>(
        &mut self,
        table: &DeTable<'_>,
        name: &'static str,
        words: &[(&'static str, T)],
    ) -> Option<Entry<(&'static str, T)>> {
        let e = self.string(table, name)?;
        if let Some(found) = words.iter().find(|(w, _)| *w == e.v) {
            return Some(e.with(*found));
        }
        let list: Vec<String> = words.iter().map(|(w, _)| format!("\"{w}\"")).collect();
        let msg = format!("`{}` has no value \"{}\"", e.key, e.v);
        let hint = format!("use one of {}", list.join(", "));
        self.fail(&e.span, ErrorKind::BadValue, msg, hint);
        None
    }

    /// A key written as "allow" or "deny" (a `Val::Word`), or as an array that `list`
    /// reads; `what` names the three for a wrong type.
    fn allow_deny_or(
        &mut self,
        table: &DeTable<'_>,
        name: &'static str,
        what: &str,
        list: impl FnOnce(&mut Self, Entry<&DeArray<'_>>) -> Option<Entry<Val>>,
    ) -> Option<Entry<Val>> {
        if Self::find(table, name)?.1.get_ref().is_str() {
            let e = self.word(table, name, ALLOW_DENY)?;
            return Some(e.map(|(w, n)| Val::Word(w, n)));
        }
        let items = self.typed(table, name, what, DeValue::as_array)?;
        list(self, items)
    }

    fn network(&mut self, table: &DeTable<'_>) -> Option<Entry<Val>> {
        let name = "sandbox.network";
        let what = "\"allow\", \"deny\" or an array of TCP ports";
        self.allow_deny_or(table, name, what, |w, items| {
            let mut ports = Vec::new();
            let mut ok = true;
            for item in items.v.iter() {
                let port = match item.get_ref() {
                    DeValue::Integer(i) => u16::from_str_radix(i.as_str(), i.radix())
                        .ok()
                        .filter(|p| *p > 0),
                    other => {
                        w.wrong_type(&item.span(), name, "an array of TCP ports", other);
                        ok = false;
                        continue;
                    }
                };
                match port {
                    Some(p) => ports.push(Sp {
                        v: p,
                        span: item.span(),
                    }),
                    None => {
                        ok = false;
                        w.bad_value(
                            &item.span(),
                            name,
                            "has a port out of range",
                            "TCP ports are 1 to 65535",
                        );
                    }
                }
            }
            ok.then(|| items.with(Val::Ports(ports)))
        })
    }

    /// The entries of an array of tables (`[[tools.paths]]`), each checked for unknown keys
    /// and for the keys it requires (a missing one is reported at the entry, with `hint`).
    fn entries<'t, 'i>(
        &mut self,
        table: &'t DeTable<'i>,
        name: &'static str,
        required: &[&str],
        hint: &str,
    ) -> Vec<RawLayer> {
        let what = format!("an array of tables ([[{name}]])");
        let Some(items) = self.typed(table, name, &what, DeValue::as_array) else {
            return Vec::new();
        };
        let mut out = Vec::new();
        for item in items.v.iter() {
            let DeValue::Table(t) = item.get_ref() else {
                self.wrong_type(&item.span(), name, &what, item.get_ref());
                continue;
            };
            self.check_keys(t, name);
            for key in required.iter().filter(|k| Self::find(t, k).is_none()) {
                let msg = format!("[[{name}]] entry without `{key}`");
                let err = self.src.error(&item.span(), ErrorKind::BadValue, msg);
                self.errs.push(err.hint(hint));
            }
            out.push(t);
        }
        let of_entry = |s: &&Spec| s.key.rsplit_once('.').is_some_and(|(a, _)| a == name);
        out.into_iter()
            .map(|t| RawLayer {
                vals: SETTINGS
                    .iter()
                    .map(|s| of_entry(&s).then(|| self.read(t, s)).flatten())
                    .collect(),
                ..RawLayer::default()
            })
            .collect()
    }
}

/// Parses `"123"`, `"16 MiB"`, `"1GiB"`. Binary units only, so "MB" is never ambiguous.
pub(crate) fn parse_size(s: &str) -> Option<u64> {
    let s = s.trim();
    let split = s.find(|c: char| !c.is_ascii_digit()).unwrap_or(s.len());
    let (num, unit) = s.split_at(split);
    let n: u64 = num.parse().ok()?;
    let mul: u64 = match unit.trim() {
        "" | "B" => 1,
        "KiB" => 1 << 10,
        "MiB" => 1 << 20,
        "GiB" => 1 << 30,
        "TiB" => 1 << 40,
        _ => return None,
    };
    n.checked_mul(mul)
}

/// A hint for an unknown key: the nearest known key in this table, or a table where the
/// key does exist, or the list of known keys.
fn did_you_mean(table: &str, key: &str, known: &[&str]) -> String {
    if let Some(best) = known
        .iter()
        .filter(|k| edit_distance(&key.to_ascii_lowercase(), k) <= 2)
        .min_by_key(|k| edit_distance(key, k))
    {
        return format!("did you mean `{best}`?");
    }
    for t in schema::tables() {
        if t != table && !t.is_empty() && schema::keys_of(t).contains(&key) {
            return format!("`{key}` belongs in [{t}]");
        }
    }
    let list: Vec<String> = known.iter().map(|k| format!("`{k}`")).collect();
    format!("known keys here: {}", list.join(", "))
}

fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut cur = vec![i + 1];
        for (j, cb) in b.iter().enumerate() {
            let sub = prev[j] + usize::from(ca != *cb);
            cur.push(sub.min(prev[j + 1] + 1).min(cur[j] + 1));
        }
        prev = cur;
    }
    prev[b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> (Option<RawLayer>, Vec<PolicyError>) {
        let src = Source::new("t.toml".into(), text);
        let mut errs = Vec::new();
        let raw = parse_layer(&src, &mut errs);
        (raw, errs)
    }

    #[test]
    fn sizes() {
        for (s, want) in [
            ("12", Some(12)),
            ("16 MiB", Some(16 << 20)),
            ("1GiB", Some(1 << 30)),
            ("1 MB", None),
            ("-1", None),
            ("", None),
            ("99999999999999 TiB", None),
        ] {
            assert_eq!(parse_size(s), want, "{s}");
        }
    }

    #[test]
    fn every_unknown_key_and_type_error_is_reported_at_once() {
        let (_, errs) = parse(
            "version = 1\nmod = \"audit\"\n[roots]\nalow = []\nsymlinks = 3\n\
             [resources]\ndeny = [\"**/.env\", 4]\n[sandbox.rlimits]\ncpu = 1\n",
        );
        let kinds: Vec<_> = errs.iter().map(|e| (e.kind, e.line)).collect();
        assert!(
            kinds.contains(&(ErrorKind::UnknownKey, Some(2))),
            "{errs:#?}"
        );
        assert!(kinds.contains(&(ErrorKind::UnknownKey, Some(4))));
        assert!(kinds.contains(&(ErrorKind::WrongType, Some(5))));
        assert!(kinds.contains(&(ErrorKind::WrongType, Some(7))));
        assert!(kinds.contains(&(ErrorKind::UnknownKey, Some(9))));
        assert_eq!(errs.len(), 5, "{errs:#?}");
        assert!(
            errs.iter()
                .any(|e| e.hint.as_deref() == Some("did you mean `mode`?"))
        );
        assert!(
            errs.iter()
                .any(|e| e.hint.as_deref() == Some("did you mean `allow`?"))
        );
    }

    #[test]
    fn missing_and_wrong_version() {
        let (_, errs) = parse("mode = \"audit\"\n");
        assert_eq!(errs[0].kind, ErrorKind::Version);
        let (_, errs) = parse("version = 2\n");
        assert_eq!(errs[0].kind, ErrorKind::Version);
        assert_eq!(errs[0].line, Some(1));
    }

    #[test]
    fn key_in_wrong_table_is_pointed_at_its_table() {
        let (_, errs) = parse("version = 1\n[roots]\nmax_bytes = 3\n");
        assert_eq!(
            errs[0].hint.as_deref(),
            Some("`max_bytes` belongs in [resources]")
        );
    }

    #[test]
    fn values_carry_their_declared_key() {
        let (raw, errs) = parse("version = 1\n[sandbox.rlimits]\nnofile = 3\n");
        assert!(errs.is_empty(), "{errs:#?}");
        let e = raw
            .unwrap()
            .read("sandbox.rlimits.nofile", Val::int)
            .unwrap();
        assert_eq!((e.key, e.v), ("sandbox.rlimits.nofile", 3));
    }
}
