//! `roots.static`, the one `[roots]` setting with a rule of its own (the path rules,
//! stances and limits are plain settings, applied by `layering.rs`).

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
