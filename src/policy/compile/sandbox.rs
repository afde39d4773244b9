//! `[sandbox]` settings with a rule of their own: network, the read-only paths, and the
//! grants a later layer may add only where `[sandbox.grantable]` lets it (mode, access and
//! rlimits are plain settings, applied by `layering.rs`; `[sandbox.grantable]` narrows as
//! a subset, `subset.rs`).

use super::*;

pub(super) fn network_rank(n: &Network) -> u8 {
    match n {
        Network::Deny => 0,
        Network::Ports(_) => 1,
        Network::Allow => 2,
    }
}

pub(super) fn network_word(n: &Network) -> String {
    match n {
        Network::Deny => "\"deny\"".into(),
        Network::Allow => "\"allow\"".into(),
        Network::Ports(p) => format!("{p:?}"),
    }
}

pub(super) fn apply_sandbox(acc: &mut Acc, raw: &RawLayer, cx: &mut Cx<'_, '_>) {
    // Grants are judged against what earlier layers made grantable, so a layer's own
    // `[sandbox.grantable]` only binds the layers after it.
    for (key, write) in [("sandbox.read", false), ("sandbox.write", true)] {
        let Some(e) = raw.read(key, Val::list) else {
            continue;
        };
        for (p, span) in paths(cx, &e).unwrap_or_default() {
            if grant_path(cx, acc, e.key, &p, &span, write) {
                let granted = if write {
                    &mut acc.grants.write
                } else {
                    &mut acc.grants.read
                };
                granted.push((p, cx.prov_item(e.key, &span)));
            }
        }
    }
    if let Some(e) = raw.get("sandbox.network") {
        let new = match &e.v {
            Val::Word("deny", _) => Network::Deny,
            Val::Ports(p) => {
                let set: BTreeSet<u16> = p.iter().map(|s| s.v).collect();
                Network::Ports(set.into_iter().collect())
            }
            _ => Network::Allow,
        };
        let old = &acc.network.v;
        let wider = match (&new, old) {
            (Network::Ports(n), Network::Ports(o)) => n.iter().any(|p| !o.contains(p)),
            _ => network_rank(&new) > network_rank(old),
        };
        if cx.check && wider {
            let what = format!(
                "`sandbox.network = {}` is wider than the earlier {}",
                network_word(&new),
                network_word(old)
            );
            let hint = "a later layer may only narrow: \"deny\" < a port list (a later list \
                        must be a subset) < \"allow\"";
            cx.widening(&e.span, what, &acc.network.prov.clone(), hint);
        } else {
            acc.network = Setting {
                v: new,
                prov: cx.prov(e),
            };
        }
    }
    if let Some(e) = raw.read("sandbox.env", Val::list) {
        for item in e.v {
            // A variable name or prefix (reported if not), and grantable here.
            let name = subset::entry(cx, Kind::EnvNames, &item.v);
            let name = name.map_err(|p| cx.problem(&item.span, p));
            if name.is_ok() && grant_env(cx, acc, &item.v, &item.span) {
                let prov = cx.prov_item(e.key, &item.span);
                acc.grants.env.push((item.v.clone(), prov));
            }
        }
    }
    if let Some(e) = raw.read("sandbox.read_only_paths", Val::list)
        && let Some(g) = path_globs(cx, &e, Side::Deny)
    {
        // The first layer may replace the built-in list; a later layer only adds to
        // what the earlier ones left (adding is narrower).
        let mut all = match acc.read_only_paths.take() {
            Some(earlier) => earlier,
            None if cx.layer == 0 => Vec::new(),
            None => default_read_only_paths(),
        };
        all.extend(g);
        acc.read_only_paths = Some(all);
    }
}

/// Whether a later layer may add this `sandbox.env` entry (see `grant.rs`); reports why not.
pub(super) fn grant_env(cx: &mut Cx<'_, '_>, acc: &Acc, name: &str, span: &Range<usize>) -> bool {
    if !cx.check {
        return true;
    }
    let r = grant::judge_env(name, &acc.grants.env, &acc.grantable().env);
    r.map_err(|refusal| grant_error(cx, "sandbox.env", name, span, refusal))
        .is_ok()
}

/// Whether a later layer may add this `sandbox.read` (`write = false`) or `sandbox.write`
/// path (see `grant.rs`); reports why not.
pub(super) fn grant_path(
    cx: &mut Cx<'_, '_>,
    acc: &Acc,
    key: &str,
    path: &str,
    span: &Range<usize>,
    write: bool,
) -> bool {
    if !cx.check {
        return true;
    }
    let grantable = acc.grantable();
    let rules = grant::PathRules {
        grants: &acc.grants,
        grantable: &grantable,
        home: cx.home,
    };
    let denied = |p: &str| {
        acc.globs("resources.deny")
            .iter()
            .find(|(g, _)| g.matches_path(p))
            .map(|(g, prov)| (g.text.clone(), prov.clone()))
    };
    grant::judge_path(path, write, &rules, denied)
        .map_err(|refusal| grant_error(cx, key, path, span, refusal))
        .is_ok()
}

pub(super) fn grant_error(
    cx: &mut Cx<'_, '_>,
    key: &str,
    value: &str,
    span: &Range<usize>,
    refusal: grant::Refusal,
) {
    use grant::Refusal as R;
    match refusal {
        R::NotGrantable(prov) => {
            let what = format!("`{key}` entry \"{value}\" is not grantable here");
            let list = match key {
                "sandbox.env" => "env",
                "sandbox.write" => "write",
                _ => "read` or `write",
            };
            let hint = format!(
                "an earlier layer decides what later layers may grant the server: it must \
                 cover this entry in `[sandbox.grantable] {list}`, or grant it itself"
            );
            cx.widening(span, what, &prov, &hint);
        }
        R::EveryVariable => cx.error(
            span,
            ErrorKind::Widening,
            format!("`{key}` entry \"*\" would pass every variable, secrets included"),
            "name the variables the server needs (e.g. \"MEMORY_FILE_PATH\", \"GIT_*\")",
        ),
        R::TooWide(what) => cx.error(
            span,
            ErrorKind::BadPath,
            format!("`{key}` entry \"{value}\" would grant the server {what}"),
            "grant the server's own state only, e.g. \"~/.gitconfig\" or \"~/.cache/<tool>\"",
        ),
        R::Denied(glob, prov) => {
            let err = cx
                .src
                .error(
                    span,
                    ErrorKind::Widening,
                    format!("`{key}` entry \"{value}\" is denied by the policy (`{glob}`)"),
                )
                .related("denied by", &prov)
                .hint(
                    "a grant cannot reach what the policy denies: grant the server's own \
                     state, not a secret",
                );
            cx.errs.push(err);
        }
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn read_only_paths_default_replace_first_and_only_add_later() {
        let load = |layers: &[&str]| {
            let sources: Vec<(String, String)> = layers
                .iter()
                .enumerate()
                .map(|(i, t)| (format!("l{i}.toml"), format!("version = 1\n{t}")))
                .collect();
            crate::policy::Policy::from_sources(&sources).unwrap()
        };
        let none = load(&[""]);
        assert!(none.sandbox().is_read_only_path("/p/.git/hooks/pre-commit"));
        assert!(none.sandbox().is_read_only_path("/p/.git/hooks"));
        assert!(none.sandbox().is_read_only_path("/p/.MCP.json"));
        assert!(!none.sandbox().is_read_only_path("/p/src/main.rs"));
        // The first layer replaces the built-in list.
        let own = load(&["[sandbox]\nread_only_paths = [\"**/Makefile\"]"]);
        assert!(own.sandbox().is_read_only_path("/p/Makefile"));
        assert!(!own.sandbox().is_read_only_path("/p/.vscode/tasks.json"));
        // A later layer adds to the built-in list, never removes from it.
        let later = load(&["", "[sandbox]\nread_only_paths = []"]);
        assert!(later.sandbox().is_read_only_path("/p/.vscode/tasks.json"));
        let more = load(&["", "[sandbox]\nread_only_paths = [\"**/.husky/**\"]"]);
        assert!(more.sandbox().is_read_only_path("/p/.husky/pre-commit"));
        assert!(more.sandbox().is_read_only_path("/p/.claude/settings.json"));
    }
}
