//! `[tools]` settings with a rule of their own: `[[tools.paths]]` and the inference stance
//! with its per-tool overrides (the denied and writing tools are plain settings).

use super::*;

/// RFC 6901 JSON pointer check.
pub(super) fn check_pointer(p: &str) -> Result<(), String> {
    if p.is_empty() {
        return Err(
            "the empty pointer names the whole arguments object, which is not a path".into(),
        );
    }
    if !p.starts_with('/') {
        return Err(format!("JSON pointer \"{p}\" does not start with `/`"));
    }
    let b = p.as_bytes();
    for (i, _) in p.match_indices('~') {
        if !matches!(b.get(i + 1), Some(b'0' | b'1')) {
            return Err(format!(
                "JSON pointer \"{p}\" has `~` not followed by `0` or `1`"
            ));
        }
    }
    Ok(())
}

/// The tool or server name glob of a `[[tools.paths]]` or `[[tools.infer_for]]` entry, on
/// the deny side (a glob that matches more tools or servers checks more calls: the safe
/// error); `None` once a bad one is reported.
fn entry_glob(cx: &mut Cx<'_, '_>, e: &Entry<&str>) -> Option<Glob> {
    glob::name_glob(e.v, Side::Deny)
        .map_err(|p| cx.problem(&e.span, p))
        .ok()
}

pub(super) fn apply_tools(acc: &mut Acc, raw: &RawLayer, cx: &mut Cx<'_, '_>) {
    apply_infer(acc, raw, cx);
    for entry in &raw.tools_paths {
        let tool = entry.read("tools.paths.tool", Val::text);
        let (Some(tool), Some(pointers)) = (tool, entry.read("tools.paths.pointers", Val::list))
        else {
            continue;
        };
        let Some(glob) = entry_glob(cx, &tool) else {
            continue;
        };
        let kind = entry.read("tools.paths.kind", Val::word::<ArgKind>);
        let kind = kind.map_or(ArgKind::Path, |k| k.v);
        let server_entry = entry.read("tools.paths.server", Val::text);
        let server = match &server_entry {
            None => None,
            Some(e) => match entry_glob(cx, e) {
                Some(g) => Some((e.v.to_owned(), g)),
                None => continue,
            },
        };
        let server_rule = server_entry
            .as_ref()
            .map(|e| format!(", server = {}", cx.src.snippet(&e.span)))
            .unwrap_or_default();
        if pointers.v.is_empty() {
            cx.error(
                &pointers.span,
                ErrorKind::BadPointer,
                "`tools.paths.pointers` is empty".into(),
                "list the JSON pointers of the arguments that hold paths, e.g. [\"/path\"]",
            );
            continue;
        }
        let mut list = Vec::new();
        for item in pointers.v {
            match check_pointer(&item.v) {
                Ok(()) => list.push(ToolPath {
                    pointer: item.v.clone(),
                    kind,
                    server: server.as_ref().map(|(t, _)| t.clone()),
                    provenance: cx.at(
                        &item.span,
                        format!(
                            "[[tools.paths]] tool = {}{server_rule}, pointers = {}, kind = \"{}\"",
                            cx.src.snippet(&tool.span),
                            cx.src.snippet(&item.span),
                            kind.word()
                        ),
                    ),
                }),
                Err(msg) => cx.error(
                    &item.span,
                    ErrorKind::BadPointer,
                    msg,
                    "write an RFC 6901 JSON pointer into the tool's arguments, e.g. \"/path\" \
                     or \"/options/target\"; escape `~` as `~0` and `/` as `~1`",
                ),
            }
        }
        if list.len() == pointers.v.len() {
            acc.tool_paths.push((tool.v.to_owned(), glob, server, list));
        }
    }
}

/// `tools.infer` and its per-tool overrides. The inference is a heuristic whose misses a
/// user must be able to correct: while only built-in layers (or the default) set the stance,
/// any layer may set it or override it for a tool; once an operator's layer set it, later
/// layers may only narrow it (the tool overrides too).
pub(super) fn apply_infer(acc: &mut Acc, raw: &RawLayer, cx: &mut Cx<'_, '_>) {
    let builtin = cx.set_by_builtin(&acc.infer.prov);
    if let Some(e) = raw.read("tools.infer", Val::word::<ToolInfer>) {
        if cx.check && !builtin && e.v.rank() > acc.infer.v.rank() {
            let what = format!(
                "`{} = \"{}\"` is wider than the earlier `\"{}\"`",
                e.key,
                e.v.word(),
                acc.infer.v.word()
            );
            let earlier = acc.infer.prov.clone();
            cx.widening(&e.span, what, &earlier, &order_of(&ToolInfer::WORDS));
        } else {
            acc.infer = Setting {
                v: e.v,
                prov: cx.prov(&e),
            };
        }
    }
    for entry in &raw.tools_infer_for {
        let tool = entry.read("tools.infer_for.tool", Val::text);
        let infer = entry.read("tools.infer_for.infer", Val::word::<ToolInfer>);
        let (Some(tool), Some(infer)) = (tool, infer) else {
            continue;
        };
        let Some(glob) = entry_glob(cx, &tool) else {
            continue;
        };
        if cx.check && !builtin && infer.v.rank() > acc.infer.v.rank() {
            let what = format!(
                "`[[tools.infer_for]] infer = \"{}\"` is wider than the earlier `tools.infer = \"{}\"`",
                infer.v.word(),
                acc.infer.v.word()
            );
            let earlier = acc.infer.prov.clone();
            cx.widening(&infer.span, what, &earlier, &order_of(&ToolInfer::WORDS));
            continue;
        }
        let prov = cx.at(
            &tool.span,
            format!(
                "[[tools.infer_for]] tool = {}, infer = \"{}\"",
                cx.src.snippet(&tool.span),
                infer.v.word()
            ),
        );
        acc.infer_for.push((tool.v.to_owned(), glob, infer.v, prov));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pointers() {
        assert!(check_pointer("/path").is_ok());
        assert!(check_pointer("/a~1b/c~0d").is_ok());
        assert!(check_pointer("/").is_ok());
        assert!(check_pointer("").is_err());
        assert!(check_pointer("path").is_err());
        assert!(check_pointer("/a~2").is_err());
        assert!(check_pointer("/a~").is_err());
    }

    #[test]
    fn tools_infer_narrows_once_an_operator_set_it() {
        let load = |layers: &[&str]| {
            let mut sources = vec![(
                "builtin:default".to_owned(),
                include_str!("../../../policies/default.toml").to_owned(),
            )];
            sources.extend(
                layers
                    .iter()
                    .enumerate()
                    .map(|(i, t)| (format!("l{i}.toml"), format!("version = 1\n{t}"))),
            );
            crate::policy::Policy::from_sources(&sources)
        };
        let p = load(&[]).unwrap();
        assert_eq!(p.tool_infer("read_file").0, ToolInfer::Schema);
        // Over the built-in default, a user may loosen it, for all tools or one.
        let p = load(&[
            "[tools]\ninfer = \"off\"\n[[tools.infer_for]]\ntool = \"fs_*\"\ninfer = \"strict\"",
        ])
        .unwrap();
        assert_eq!(p.tool_infer("search").0, ToolInfer::Off);
        assert_eq!(p.tool_infer("fs_read").0, ToolInfer::Strict);
        let p = load(&["[[tools.infer_for]]\ntool = \"search\"\ninfer = \"off\""]).unwrap();
        assert_eq!(p.tool_infer("search").0, ToolInfer::Off);
        assert_eq!(p.tool_infer("other").0, ToolInfer::Schema);
        // Once an operator set it, later layers only narrow.
        let org = "[tools]\ninfer = \"strict\"";
        let e = load(&[org, "[tools]\ninfer = \"schema\""])
            .unwrap_err()
            .to_string();
        assert!(e.contains("is wider than the earlier"), "{e}");
        let e = load(&[org, "[[tools.infer_for]]\ntool = \"x\"\ninfer = \"off\""])
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("[[tools.infer_for]] infer = \"off\"` is wider"),
            "{e}"
        );
        // The narrowest matching override wins.
        let p = load(&[
            "[[tools.infer_for]]\ntool = \"*\"\ninfer = \"off\"\n[[tools.infer_for]]\ntool = \"run\"\ninfer = \"strict\"",
        ])
        .unwrap();
        assert_eq!(p.tool_infer("run").0, ToolInfer::Strict);
        assert_eq!(p.tool_infer("ls").0, ToolInfer::Off);
        let e = load(&["[[tools.infer_for]]\ninfer = \"off\""])
            .unwrap_err()
            .to_string();
        assert!(e.contains("without `tool`"), "{e}");
    }
}
