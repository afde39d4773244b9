//! The lists a later layer may only narrow to a subset (`Narrow::Subset`: the schemes, the
//! MIME types, `[sandbox.grantable]`), by one rule for every such setting: its entries are
//! checked as its kind says, and each entry of a later list must be covered by one of the
//! earlier list. What differs per kind (how an entry is checked, what covers it, what the
//! refusal says) is here too; the effective value follows from the slot (`effective.rs`).

use super::*;

/// Applies every such list this layer sets. A list with a bad entry is dropped whole (each
/// bad entry reported); otherwise each entry must be covered by the earlier list, and the
/// list replaces it.
pub(super) fn apply_subsets(acc: &mut Acc, raw: &RawLayer, cx: &mut Cx<'_, '_>) {
    for (spec, slot) in SETTINGS.iter().zip(&mut acc.slots) {
        let (Slot::Subset(set), Some(e)) = (slot, raw.get(spec.key)) else {
            continue;
        };
        let new = match &e.v {
            Val::Word("allow", _) => None,
            Val::List(items) => {
                let checked = each(cx, &e.with(&items[..]), |cx, item| {
                    Ok((entry(cx, spec.kind, &item.v)?, item))
                });
                let Some(mut out) = checked else {
                    continue;
                };
                // A scheme is a word: the same one twice is one.
                if matches!(spec.kind, Kind::Schemes) {
                    let mut seen = BTreeSet::new();
                    out.retain(|(v, _)| seen.insert(v.clone()));
                }
                Some(out)
            }
            // "deny": no entry.
            _ => Some(Vec::new()),
        };
        let mut ok = true;
        if let (true, Some(old)) = (cx.check, &set.v) {
            let earlier = set.prov.clone();
            match &new {
                None => {
                    ok = false;
                    let what = format!(
                        "`{} = \"allow\"` is wider than the earlier scheme list",
                        spec.key
                    );
                    let hint = "a later layer may only narrow: \"deny\" < a list < \"allow\", \
                                and a later list must be a subset";
                    cx.widening(&e.span, what, &earlier, hint);
                }
                Some(list) => {
                    for (v, item) in list {
                        if !old.iter().any(|o| covers(spec.kind, o, v)) {
                            ok = false;
                            let (what, hint) = uncovered(spec.key, spec.kind, &item.v, v);
                            cx.widening(&item.span, what, &earlier, hint);
                        }
                    }
                }
            }
        }
        if ok {
            *set = Setting {
                v: new.map(|l| l.into_iter().map(|(v, _)| v).collect()),
                prov: cx.prov(e),
            };
        }
    }
}

/// An entry of a list of `kind`, checked and normalized (a scheme or MIME pattern
/// lowercased, a path glob expanded).
pub(super) fn entry(cx: &Cx<'_, '_>, kind: Kind, item: &str) -> Result<String, Problem> {
    let bad = |message: String, hint: &str| {
        Err(Problem {
            kind: ErrorKind::BadValue,
            message,
            hint: hint.to_owned(),
        })
    };
    match kind {
        Kind::PathGlobs => {
            let g =
                glob::expand(item, cx.home, true).and_then(|t| glob::path_glob(&t, Side::Allow));
            Ok(g?.text)
        }
        Kind::EnvNames if !valid_env_pattern(item) => bad(
            format!("\"{item}\" is not an environment variable name"),
            "write a name such as \"RUST_LOG\", or a prefix ending in `*` such as \"LC_*\"",
        ),
        Kind::Mimes => {
            let m = item.to_ascii_lowercase();
            let valid = match m.split_once('/') {
                Some(("*", "*")) => true,
                Some((t, "*")) => mime_token(t),
                Some((t, s)) => mime_token(t) && mime_token(s),
                None => false,
            };
            if valid {
                return Ok(m);
            }
            bad(
                format!("\"{item}\" is not a MIME type pattern"),
                "write `type/subtype`, `type/*` or `*/*`, without parameters, e.g. \
                 \"text/*\" or \"application/json\"",
            )
        }
        Kind::Schemes => {
            let s = item.to_ascii_lowercase();
            if s == "file" {
                bad(
                    "`resources.other_schemes` lists \"file\"".into(),
                    "`file:` is always allowed subject to the roots and path rules; list only \
                     the other schemes to allow",
                )
            } else if !crate::uri::is_scheme(&s) {
                bad(
                    format!("\"{item}\" is not a URI scheme"),
                    "write the scheme name without `:` or `//`, e.g. \"https\"",
                )
            } else {
                Ok(s)
            }
        }
        _ => Ok(item.to_owned()),
    }
}

/// Whether an earlier entry of a list of `kind` covers a later one.
fn covers(kind: Kind, earlier: &str, later: &str) -> bool {
    match kind {
        Kind::PathGlobs => {
            let g = |t| glob::path_glob(t, Side::Allow);
            matches!((g(earlier), g(later)), (Ok(e), Ok(l)) if e.covers(&l))
        }
        Kind::EnvNames => env_pattern_covers(earlier, later),
        Kind::Mimes => super::super::decision::mime_matches(earlier, later),
        _ => earlier == later,
    }
}

/// The refusal of a later entry no earlier one covers, `written` as the layer wrote it and
/// `v` as checked: what, and the hint.
fn uncovered(key: &str, kind: Kind, written: &str, v: &str) -> (String, &'static str) {
    match kind {
        Kind::Schemes => (
            format!("`{key}` allows \"{v}\", which an earlier layer does not"),
            "a later layer may only narrow: a later scheme list must be a subset of the \
             earlier one",
        ),
        Kind::Mimes => (
            format!("`{key}` entry \"{v}\" is not covered by the earlier MIME list"),
            "a later layer may only narrow: each MIME pattern must be covered by an earlier \
             one (`text/*` covers `text/plain`)",
        ),
        Kind::EnvNames => (
            format!("`{key}` entry \"{v}\" is not in the earlier grantable list"),
            "a later layer may only narrow what is grantable: each entry must be covered by \
             an earlier `[sandbox.grantable] env` entry",
        ),
        _ => (
            format!("`{key}` entry \"{written}\" is not inside the earlier grantable list"),
            "a later layer may only narrow what is grantable: each entry must be a literal \
             path an earlier entry matches, or a glob under an earlier `dir/**` entry",
        ),
    }
}

/// RFC 6838 restricted-name characters.
fn mime_token(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= 127
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || "!#$&-^_.+".contains(c))
}

fn valid_env_pattern(s: &str) -> bool {
    let name = s.strip_suffix('*').unwrap_or(s);
    (name.is_empty() && s == "*")
        || (name
            .chars()
            .next()
            .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
            && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_'))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mime_cover() {
        use crate::policy::decision::mime_matches as mime_covers;
        assert!(mime_covers("*/*", "text/plain"));
        assert!(mime_covers("text/*", "text/plain"));
        assert!(mime_covers("text/*", "text/*"));
        assert!(!mime_covers("text/*", "*/*"));
        assert!(!mime_covers("text/plain", "text/*"));
        assert!(!mime_covers("text/*", "textual/x"));
    }

    #[test]
    fn env_patterns() {
        for ok in ["PATH", "LC_*", "_X1", "*"] {
            assert!(valid_env_pattern(ok), "{ok}");
        }
        for bad in ["", "1X", "A-B", "A*B", "**"] {
            assert!(!valid_env_pattern(bad), "{bad}");
        }
    }
}
