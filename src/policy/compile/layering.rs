//! The layering rules shared by every table: ordered settings move only toward their
//! narrow end, limits only shrink, fixed settings are fixed by their first layer, and lists
//! of globs and paths are expanded and checked entry by entry.

use super::*;

/// An order description for hints, narrowest first.
pub(super) fn order_of<T: Ranked + Word>() -> String {
    let mut v: Vec<_> = T::ALL.iter().map(|(w, t)| (t.rank(), *w)).collect();
    v.sort();
    let list: Vec<String> = v.iter().map(|(_, w)| format!("\"{w}\"")).collect();
    format!(
        "a later layer may only narrow: the order is {} (narrowest first)",
        list.join(" < ")
    )
}

/// Applies an ordered (ranked) setting.
pub(super) fn ranked<T: Ranked + Word + Copy>(
    cx: &mut Cx<'_, '_>,
    set: &mut Setting<T>,
    e: &Option<Entry<T>>,
) {
    let Some(e) = e else { return };
    if cx.check && e.v.rank() > set.v.rank() {
        let what = format!(
            "`{} = \"{}\"` is wider than the earlier `\"{}\"`",
            e.key,
            e.v.word(),
            set.v.word()
        );
        cx.widening(&e.span, what, &set.prov.clone(), &order_of::<T>());
        return;
    }
    *set = Setting {
        v: e.v,
        prov: cx.prov(e),
    };
}

/// Applies a boolean whose `true` is narrower.
pub(super) fn ranked_bool(cx: &mut Cx<'_, '_>, set: &mut Setting<bool>, e: &Option<Entry<bool>>) {
    let Some(e) = e else { return };
    if cx.check && e.v.rank() > set.v.rank() {
        let what = format!(
            "`{} = {}` is wider than the earlier `{}`",
            e.key, e.v, set.v
        );
        let hint = format!(
            "a later layer may only narrow: `{} = true` is the narrow value",
            e.key
        );
        cx.widening(&e.span, what, &set.prov.clone(), &hint);
        return;
    }
    *set = Setting {
        v: e.v,
        prov: cx.prov(e),
    };
}

/// Applies a limit where a smaller number is narrower (`None` is unlimited).
pub(super) fn limit(cx: &mut Cx<'_, '_>, set: &mut Setting<Option<u64>>, e: &Option<Entry<u64>>) {
    let Some(e) = e else { return };
    if cx.check {
        if let Some(old) = set.v {
            if e.v > old {
                let what = format!(
                    "`{} = {}` is larger than the earlier limit",
                    e.key,
                    cx.src.snippet(&e.span)
                );
                let hint = "a later layer may only lower a limit".to_string();
                cx.widening(&e.span, what, &set.prov.clone(), &hint);
                return;
            }
        }
    }
    *set = Setting {
        v: Some(e.v),
        prov: cx.prov(e),
    };
}

/// Applies a fixed operational setting as written (`f` makes the stored value of it).
pub(super) fn fixed_as<T: Copy, U: PartialEq + Clone + std::fmt::Debug>(
    cx: &mut Cx<'_, '_>,
    set: &mut Setting<U>,
    e: &Option<Entry<T>>,
    f: impl FnOnce(T) -> U,
) {
    if let Some(e) = e {
        fixed(cx, set, e, f(e.v));
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
        cx.errs.push(err.related(related(&set.prov)).hint(hint));
        return;
    }
    *set = Setting { v: new, prov };
}

/// Each entry of a list through `f`; `None` if any entry is bad (each problem reported).
fn each<T>(
    cx: &mut Cx<'_, '_>,
    e: &Entry<Vec<Sp<String>>>,
    f: impl Fn(&Cx<'_, '_>, &Sp<String>) -> Result<T, Problem>,
) -> Option<Vec<T>> {
    let mut out = Vec::with_capacity(e.v.len());
    let mut ok = true;
    for item in &e.v {
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
    e: &Entry<Vec<Sp<String>>>,
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
    e: &Entry<Vec<Sp<String>>>,
) -> Option<Vec<(String, Glob, Provenance)>> {
    each(cx, e, |cx, item| {
        let g = glob::name_glob(&item.v, Side::Deny)?;
        Ok((item.v.clone(), g, cx.prov_item(e.key, &item.span)))
    })
}

/// Expands and checks a list of plain paths; `None` if any entry is bad.
pub(super) fn paths(
    cx: &mut Cx<'_, '_>,
    e: &Entry<Vec<Sp<String>>>,
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
    e: &Option<Entry<Vec<Sp<String>>>>,
) {
    let Some(e) = e else { return };
    let Some(globs) = path_globs(cx, e, Side::Allow) else {
        return;
    };
    if cx.check {
        for ((g, _), item) in globs.iter().zip(&e.v) {
            for earlier in lists.iter() {
                if !earlier.globs.iter().any(|(eg, _)| eg.covers(g)) {
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
                    break;
                }
            }
        }
    }
    lists.push(AllowList {
        key_prov: cx.at(
            &e.key_span,
            format!("{} = {}", e.key, cx.src.snippet(&e.span)),
        ),
        globs,
    });
}
