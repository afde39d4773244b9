//! `[roots]` and `[resources]` settings with a rule of their own: the static roots, the
//! schemes and the MIME types (the path rules, stances and limits are plain settings,
//! applied by `layering.rs`).

use super::*;

/// Static roots are not a permission of their own: every one must pass the root rules of
/// all layers (checked in `build`), which is where the bound lives. So a later layer
/// replaces the list, e.g. a project names its own directory.
pub(super) fn apply_static_roots(acc: &mut Acc, raw: &RawLayer, cx: &mut Cx<'_, '_>) {
    let Some(e) = raw.read("roots.static", Val::list) else {
        return;
    };
    if let Some(list) = paths(cx, &e) {
        let roots = list
            .iter()
            .map(|(p, span)| {
                let root = StaticRoot {
                    path: p.clone(),
                    provenance: cx.prov_item(e.key, span),
                };
                (root, span.clone())
            })
            .collect();
        acc.roots_static = Setting {
            v: roots,
            prov: cx.prov(&e),
        };
    }
}

/// Schemes with the span of each entry.
type SchemeList = Vec<(String, Range<usize>)>;

/// RFC 3986 scheme syntax.
pub(super) fn valid_scheme(s: &str) -> bool {
    let mut chars = s.chars();
    chars.next().is_some_and(|c| c.is_ascii_alphabetic())
        && chars.all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'))
}

/// RFC 6838 restricted-name characters.
pub(super) fn mime_token(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= 127
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || "!#$&-^_.+".contains(c))
}

/// Whether MIME pattern `outer` covers `inner` (a type or a pattern).
pub(crate) fn mime_covers(outer: &str, inner: &str) -> bool {
    if outer == "*/*" || outer == inner {
        return true;
    }
    match (outer.split_once('/'), inner.split_once('/')) {
        (Some((ot, "*")), Some((it, _))) => ot == it,
        _ => false,
    }
}

pub(super) fn apply_resources(acc: &mut Acc, raw: &RawLayer, cx: &mut Cx<'_, '_>) {
    if let Some(e) = raw.get("resources.other_schemes") {
        // Outer `None`: the entry was bad. Inner `None`: every scheme allowed.
        let new: Option<Option<SchemeList>> = match &e.v {
            Val::Schemes(RawSchemes::Allow) => Some(None),
            Val::Schemes(RawSchemes::Deny) => Some(Some(Vec::new())),
            Val::Schemes(RawSchemes::List(items)) => {
                let mut out = Vec::new();
                let mut ok = true;
                for item in items {
                    let s = item.v.to_ascii_lowercase();
                    if s == "file" {
                        ok = false;
                        cx.error(
                            &item.span,
                            ErrorKind::BadValue,
                            "`resources.other_schemes` lists \"file\"".into(),
                            "`file:` is always allowed subject to the roots and path rules; \
                             list only the other schemes to allow",
                        );
                    } else if !valid_scheme(&s) {
                        ok = false;
                        cx.error(
                            &item.span,
                            ErrorKind::BadValue,
                            format!("\"{}\" is not a URI scheme", item.v),
                            "write the scheme name without `:` or `//`, e.g. \"https\"",
                        );
                    } else if !out.iter().any(|(o, _)| *o == s) {
                        out.push((s, item.span.clone()));
                    }
                }
                ok.then_some(Some(out))
            }
            _ => None,
        };
        if let Some(new) = new {
            let mut ok = true;
            if cx.check {
                if let Some(old) = &acc.schemes.v {
                    let earlier = acc.schemes.prov.clone();
                    match &new {
                        None => {
                            ok = false;
                            let what = "`resources.other_schemes = \"allow\"` is wider than the \
                                        earlier scheme list"
                                .to_string();
                            let hint = "a later layer may only narrow: \"deny\" < a list < \"allow\", \
                                        and a later list must be a subset";
                            cx.widening(&e.span, what, &earlier, hint);
                        }
                        Some(list) => {
                            for (s, span) in list {
                                if !old.contains(s) {
                                    ok = false;
                                    let what = format!(
                                        "`resources.other_schemes` allows \"{s}\", which an earlier \
                                         layer does not"
                                    );
                                    let hint = "a later layer may only narrow: a later scheme \
                                                list must be a subset of the earlier one";
                                    cx.widening(span, what, &earlier, hint);
                                }
                            }
                        }
                    }
                }
            }
            if ok {
                acc.schemes = Setting {
                    v: new.map(|l| l.into_iter().map(|(s, _)| s).collect()),
                    prov: cx.prov(e),
                };
            }
        }
    }
    if let Some(e) = raw.read("resources.mime", Val::list) {
        let mut list: Vec<(String, Range<usize>)> = Vec::new();
        let mut ok = true;
        for item in e.v {
            let m = item.v.to_ascii_lowercase();
            let valid = match m.split_once('/') {
                Some(("*", "*")) => true,
                Some((t, "*")) => mime_token(t),
                Some((t, s)) => mime_token(t) && mime_token(s),
                None => false,
            };
            if !valid {
                ok = false;
                cx.error(
                    &item.span,
                    ErrorKind::BadValue,
                    format!("\"{}\" is not a MIME type pattern", item.v),
                    "write `type/subtype`, `type/*` or `*/*`, without parameters, e.g. \
                     \"text/*\" or \"application/json\"",
                );
            } else {
                list.push((m, item.span.clone()));
            }
        }
        if ok && cx.check {
            if let Some(old) = &acc.mime.v {
                let earlier = acc.mime.prov.clone();
                for (m, span) in &list {
                    if !old.iter().any(|o| mime_covers(o, m)) {
                        ok = false;
                        let what = format!(
                            "`resources.mime` entry \"{m}\" is not covered by the earlier MIME list"
                        );
                        let hint = "a later layer may only narrow: each MIME pattern must be \
                                    covered by an earlier one (`text/*` covers `text/plain`)";
                        cx.widening(span, what, &earlier, hint);
                    }
                }
            }
        }
        if ok {
            acc.mime = Setting {
                v: Some(list.into_iter().map(|(m, _)| m).collect()),
                prov: cx.prov(&e),
            };
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mime_cover() {
        assert!(mime_covers("*/*", "text/plain"));
        assert!(mime_covers("text/*", "text/plain"));
        assert!(mime_covers("text/*", "text/*"));
        assert!(!mime_covers("text/*", "*/*"));
        assert!(!mime_covers("text/plain", "text/*"));
        assert!(!mime_covers("text/*", "textual/x"));
    }
}
