//! The built-in default's protections, and which of them a policy stack lacks: its secret
//! deny globs (`resources.deny`) and the argument checks of the reference filesystem
//! server's tools (`[[tools.paths]]`, where CVE-2025-53109 and CVE-2025-53110 were
//! exploited). A stack that opts out of the built-in default (`base = "none"`) and does not
//! repeat them is warned about loudly by `policy check`, `policy show` and `run`.

use super::{Policy, REFERENCE_FILESYSTEM_SERVER};

/// One line per protection of `reference` (the built-in default) that `policy` lacks.
pub(super) fn dropped(reference: &Policy, policy: &Policy) -> Vec<String> {
    let mut out = Vec::new();
    let have = &policy.m.res_deny.texts;
    let everything = have.iter().any(|t| t == "**" || t == "/**");
    for glob in &reference.m.res_deny.texts {
        if !everything && !have.iter().any(|t| t.eq_ignore_ascii_case(glob)) {
            out.push(format!("secret deny glob resources.deny \"{glob}\""));
        }
    }
    for entry in &reference.m.tool_paths {
        for name in names(&entry.tool) {
            let checked = policy.tool_path_pointers(&name, Some(REFERENCE_FILESYSTEM_SERVER));
            for tp in &entry.paths {
                if !checked
                    .iter()
                    .any(|c| c.pointer == tp.pointer && c.kind == tp.kind)
                {
                    out.push(format!(
                        "path check of {REFERENCE_FILESYSTEM_SERVER}'s `{name}` argument {} \
                         (CVE-2025-53109/53110)",
                        tp.pointer
                    ));
                }
            }
        }
    }
    out
}

/// The tool names a built-in tool glob lists: `{a,b}` gives `a` and `b`; a plain name gives
/// itself.
fn names(glob: &str) -> Vec<String> {
    match glob.strip_prefix('{').and_then(|g| g.strip_suffix('}')) {
        Some(list) => list.split(',').map(str::to_owned).collect(),
        None => vec![glob.to_owned()],
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_defaults_own_protections_are_all_present() {
        let p = Policy::builtin_default();
        assert!(dropped(&p, &p).is_empty());
        let strict = Policy::load_with_home(
            &[std::path::PathBuf::from("builtin:strict")],
            Some("/home/u"),
        )
        .unwrap();
        assert_eq!(
            dropped(&p, &strict),
            Vec::<String>::new(),
            "strict keeps every protection of the default"
        );
    }

    #[test]
    fn an_empty_policy_drops_them_all() {
        let reference = Policy::builtin_default();
        let empty = Policy::from_sources_with_home(
            &[("mine.toml".into(), "version = 1\n".into())],
            Some("/home/u"),
        )
        .unwrap();
        let d = dropped(&reference, &empty);
        assert!(d.iter().any(|l| l.contains("\"**/.env\"")), "{d:#?}");
        assert!(
            d.iter()
                .any(|l| l.contains("`read_text_file` argument /path")),
            "{d:#?}"
        );
        assert!(
            d.iter()
                .any(|l| l.contains("`move_file` argument /destination"))
        );
    }

    #[test]
    fn brace_lists_are_split() {
        assert_eq!(names("{a,b}"), ["a", "b"]);
        assert_eq!(names("move_file"), ["move_file"]);
    }
}
