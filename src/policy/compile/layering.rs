//! The layering rules, each written once for every setting of its kind: ordered settings
//! move only toward their narrow end, limits only shrink, fixed settings are fixed by their
//! first layer, deny lists accumulate, allow-lists intersect; and lists of globs and paths
//! are expanded and checked entry by entry.

use super::*;

/// A setting's compiled default: its declared `default` when that is one backticked
/// literal of its kind (`` `3000` ``, `` `true` ``, `` `"enforce"` ``); `None` when the
/// default text describes a value left unset ("unlimited", "the audit module's default").
pub(super) fn default_value(spec: &Spec) -> Option<Val> {
    let lit = spec.default.strip_prefix('`')?.strip_suffix('`')?;
    if lit.contains('`') {
        return None;
    }
    let quoted = lit.strip_prefix('"').and_then(|l| l.strip_suffix('"'));
    match spec.kind {
        Kind::Bool => lit.parse().ok().map(Val::Bool),
        Kind::Int(..) | Kind::Size => lit.parse().ok().map(Val::Int),
        Kind::Word(words) => {
            let word = quoted?;
            let (w, n) = words.words().into_iter().find(|(w, _)| *w == word)?;
            Some(Val::Word(w, n))
        }
        Kind::Str | Kind::Path => quoted.map(|q| Val::Str(q.to_owned())),
        _ => None,
    }
}

/// An order description for hints, narrowest first.
pub(super) fn order_of(words: &dyn schema::Words) -> String {
    let mut v: Vec<_> = words.words().into_iter().map(|(w, r)| (r, w)).collect();
    v.sort();
    let list: Vec<String> = v.iter().map(|(_, w)| format!("\"{w}\"")).collect();
    format!(
        "a later layer may only narrow: the order is {} (narrowest first)",
        list.join(" < ")
    )
}

/// Applies every plain setting this layer sets (see `schema::Kind`), by the rule of its
/// kind: a scalar by its `Ranked`, `Limit` or `Fixed` rule, a deny list by accumulating
/// its globs, an allow-list by intersecting it with the earlier ones.
pub(super) fn apply_plain(acc: &mut Acc, raw: &RawLayer, cx: &mut Cx<'_, '_>) {
    for (spec, slot) in SETTINGS.iter().zip(&mut acc.slots) {
        let Some(e) = raw.get(spec.key) else {
            continue;
        };
        match (slot, raw.read(spec.key, Val::list)) {
            (Slot::Val(set), _) => scalar(cx, spec, set, e),
            (Slot::Globs(rules), Some(l)) => {
                rules.extend(path_globs(cx, &l, Side::Deny).unwrap_or_default());
            }
            (Slot::Names(rules), Some(l)) => rules.extend(name_globs(cx, &l).unwrap_or_default()),
            (Slot::Allow(lists), Some(l)) => allow_list(cx, lists, &l),
            _ => {}
        }
    }
}

/// Applies a scalar: a path is expanded and checked, a string validated, then its rule.
fn scalar(cx: &mut Cx<'_, '_>, spec: &Spec, set: &mut Setting<Option<Val>>, e: &Entry<Val>) {
    let new = match (&e.v, spec.kind) {
        (Val::Str(p), Kind::Path) => {
            match glob::expand(p, cx.home, false).and_then(|p| glob::check_path(&p).map(|()| p)) {
                Ok(p) => Val::Str(p),
                Err(p) => return cx.problem(&e.span, p),
            }
        }
        (Val::Str(s), _) => match check_text(spec.key, s) {
            Ok(()) => e.v.clone(),
            Err((msg, hint)) => return cx.error(&e.span, ErrorKind::BadValue, msg, hint),
        },
        (v, _) => v.clone(),
    };
    let rank = |v: &Val| match v {
        Val::Bool(b) => b.rank(),
        Val::Word(_, r) => *r,
        _ => 0,
    };
    let wider = match (spec.narrow, &set.v, &new) {
        (Narrow::Ranked, Some(old), new) if rank(new) > rank(old) => {
            Some(match (old, new, spec.kind) {
                (Val::Word(o, _), Val::Word(w, _), Kind::Word(words)) => (
                    format!("`{} = \"{w}\"` is wider than the earlier `\"{o}\"`", e.key),
                    order_of(words),
                ),
                // A ranked boolean: `true` is the narrow value.
                (o, n, _) => (
                    format!(
                        "`{} = {}` is wider than the earlier `{}`",
                        e.key,
                        *n == Val::Bool(true),
                        *o == Val::Bool(true)
                    ),
                    format!(
                        "a later layer may only narrow: `{} = true` is the narrow value",
                        e.key
                    ),
                ),
            })
        }
        // A limit that is unset is unlimited.
        (Narrow::Limit, Some(Val::Int(old)), Val::Int(n)) if n > old => Some((
            format!(
                "`{} = {}` is larger than the earlier limit",
                e.key,
                cx.src.snippet(&e.span)
            ),
            "a later layer may only lower a limit".to_string(),
        )),
        (Narrow::Fixed, ..) => return fixed(cx, set, e, Some(new)),
        _ => None,
    };
    match wider {
        Some((what, hint)) if cx.check => cx.widening(&e.span, what, &set.prov.clone(), &hint),
        _ => {
            *set = Setting {
                v: Some(new),
                prov: cx.prov(e),
            }
        }
    }
}

/// Applies a fixed operational setting, `new` as key `e` gives it: a later layer may only
/// repeat it.
pub(super) fn fixed<X, T: PartialEq + Clone + std::fmt::Debug>(
    cx: &mut Cx<'_, '_>,
    set: &mut Setting<T>,
    e: &Entry<X>,
    new: T,
) {
    let prov = cx.prov(e);
    if cx.check && set.is_set() && !cx.set_by_builtin(&set.prov) && set.v != new {
        let msg = format!(
            "`{}` conflicts with the value set by an earlier layer",
            prov.rule
        );
        let hint = "this setting is fixed by the first layer that sets it; remove it here or \
                    repeat the same value";
        let err = cx.src.error(&e.span, ErrorKind::Conflict, msg);
        cx.errs.push(err.related("earlier", &set.prov).hint(hint));
        return;
    }
    *set = Setting { v: new, prov };
}

/// Each entry of a list through `f`; `None` if any entry is bad (each problem reported).
pub(super) fn each<'a, T>(
    cx: &mut Cx<'_, '_>,
    e: &Entry<&'a [Sp<String>]>,
    f: impl Fn(&Cx<'_, '_>, &'a Sp<String>) -> Result<T, Problem>,
) -> Option<Vec<T>> {
    let mut out = Vec::with_capacity(e.v.len());
    let mut ok = true;
    for item in e.v {
        match f(cx, item) {
            Ok(t) => out.push(t),
            Err(p) => {
                ok = false;
                cx.problem(&item.span, p);
            }
        }
    }
    ok.then_some(out)
}

/// Expands and compiles a list of path globs; `None` if any entry is bad.
pub(super) fn path_globs(
    cx: &mut Cx<'_, '_>,
    e: &Entry<&[Sp<String>]>,
    side: Side,
) -> Option<Vec<(PathGlob, Provenance)>> {
    each(cx, e, |cx, item| {
        let g = glob::expand(&item.v, cx.home, true).and_then(|t| glob::path_glob(&t, side))?;
        Ok((g, cx.prov_item(e.key, &item.span)))
    })
}

/// `sandbox.read_only_paths` when no layer sets it.
pub(super) fn default_read_only_paths() -> Vec<(PathGlob, Provenance)> {
    crate::sandbox::scan::DEFAULT_READ_ONLY_PATHS
        .iter()
        .filter_map(|t| {
            let g = glob::path_glob(t, Side::Deny).ok()?;
            Some((
                g,
                Provenance::default_rule("sandbox.read_only_paths: built-in list"),
            ))
        })
        .collect()
}

/// Compiles a list of name globs; `None` if any entry is bad.
pub(super) fn name_globs(
    cx: &mut Cx<'_, '_>,
    e: &Entry<&[Sp<String>]>,
) -> Option<Vec<(String, Glob, Provenance)>> {
    each(cx, e, |cx, item| {
        let g = glob::name_glob(&item.v, Side::Deny)?;
        Ok((item.v.clone(), g, cx.prov_item(e.key, &item.span)))
    })
}

/// Expands and checks a list of plain paths; `None` if any entry is bad.
pub(super) fn paths(
    cx: &mut Cx<'_, '_>,
    e: &Entry<&[Sp<String>]>,
) -> Option<Vec<(String, Range<usize>)>> {
    each(cx, e, |cx, item| {
        let p = glob::expand(&item.v, cx.home, false)?;
        glob::check_path(&p)?;
        Ok((p, item.span.clone()))
    })
}

/// Applies one layer's allow-list (roots or resources).
pub(super) fn allow_list(
    cx: &mut Cx<'_, '_>,
    lists: &mut Vec<AllowList>,
    e: &Entry<&[Sp<String>]>,
) {
    let Some(globs) = path_globs(cx, e, Side::Allow) else {
        return;
    };
    if cx.check {
        for ((g, _), item) in globs.iter().zip(e.v) {
            let covered = |l: &&AllowList| l.globs.iter().any(|(eg, _)| eg.covers(g));
            if let Some(earlier) = lists.iter().find(|l| !covered(l)) {
                let what = format!(
                    "`{}` entry \"{}\" is not inside the earlier `{}` list",
                    e.key, item.v, e.key
                );
                let hint = "allow-lists of all layers must all match, so a wider entry \
                            here would not do what it says: each entry must be a literal \
                            path an earlier entry matches, or a glob under an earlier \
                            `dir/**` entry (rootfence does not try to prove other glob \
                            inclusions)";
                cx.widening(&item.span, what, &earlier.key_prov.clone(), hint);
            }
        }
    }
    lists.push(AllowList {
        key_prov: cx.prov(e),
        globs,
    });
}
