//! `policy show`: the compiled, effective policy rendered for people (TOML-like text, each
//! setting annotated with the layer and line it came from) and for tools (JSON).

use serde_json::{Value, json};

use super::schema::{SETTINGS, is_row};
use super::settings::Word;
use super::{Policy, Provenance};

fn prov_json(p: &Provenance) -> Value {
    json!({
        "layer": p.layer,
        "file": p.file.as_deref(),
        "line": p.line,
        "column": p.column,
        "rule": p.rule,
    })
}

impl Policy {
    /// The effective policy as annotated TOML-like text. Allow-lists are shown per layer,
    /// because a path must match every layer's list (their intersection has no single
    /// glob form).
    pub fn show_text(&self) -> String {
        let mut out = String::new();
        out.push_str("# effective rootfence policy\n# layers, in order:\n");
        for (i, l) in self.layers.iter().enumerate() {
            let base = if l.base {
                " (base: stacked under the files given; `base = \"none\"` in the first file \
                 opts out)"
            } else {
                ""
            };
            out.push_str(&format!(
                "#   [{i}] {}{base}  sha256:{}\n",
                l.name, l.sha256
            ));
        }
        if let Some(p) = &self.opted_out {
            out.push_str(&format!(
                "# base: none: {} replaces the built-in default policy\n",
                p.location(false)
            ));
        }
        let dropped = self.dropped_protections();
        if !dropped.is_empty() {
            out.push_str(&format!(
                "# WARNING: this policy drops {} protection(s) of the built-in default:\n",
                dropped.len()
            ));
            for d in dropped {
                out.push_str(&format!("#   - {d}\n"));
            }
            out.push_str(
                "#   hint: remove `base = \"none\"` to keep them, or copy them from \
                 `rootfence policy show --policy builtin:default`\n",
            );
        }
        let rows: Vec<(&str, String, &Provenance)> = SETTINGS
            .iter()
            .zip(&self.effective)
            .filter(|(spec, (v, _))| is_row(spec, v))
            .map(|(spec, (v, p))| (spec.key, v.shown(spec), p))
            .collect();
        let width = rows
            .iter()
            .map(|(k, v, _)| k.len() + v.len())
            .max()
            .unwrap_or(0)
            + 3;
        let mut section = "";
        for (key, value, prov) in rows {
            let (table, name) = key.rsplit_once('.').unwrap_or(("", key));
            if table != section {
                out.push_str(&format!("\n[{table}]\n"));
                section = table;
            }
            let line = format!("{name} = {value}");
            out.push_str(&format!("{line:<width$}# {}\n", prov.location(false)));
        }
        let m = &self.m;
        let rules = |out: &mut String, title: &str, t: &super::glob::GlobTable| {
            out.push_str(&format!("\n# {title}\n"));
            if t.is_empty() {
                out.push_str("#   (none)\n");
            }
            for (text, p) in t.texts.iter().zip(&t.rules) {
                out.push_str(&format!(
                    "#   {text:?}  from {}: {}\n",
                    p.location(false),
                    p.rule
                ));
            }
        };
        let allow = |out: &mut String, title: &str, lists: &[super::AllowTable]| {
            out.push_str(&format!("\n# {title}\n"));
            if lists.is_empty() {
                out.push_str("#   (no allow-list: everything not denied)\n");
            }
            for (i, l) in lists.iter().enumerate() {
                out.push_str(&format!(
                    "#   list {} ({}), all lists must match:\n",
                    i + 1,
                    l.miss.location(false)
                ));
                for (text, p) in l.table.texts.iter().zip(&l.table.rules) {
                    out.push_str(&format!("#     {text:?}  from {}\n", p.location(false)));
                }
            }
        };
        rules(
            &mut out,
            "roots.deny (any match drops the root)",
            &m.root_deny,
        );
        rules(
            &mut out,
            &format!(
                "roots.other_homes (a match drops the root unless it is inside your home, {})",
                m.own_home.as_deref().unwrap_or("none: HOME is unset")
            ),
            &m.root_other_homes,
        );
        allow(&mut out, "roots.allow", &m.root_allow);
        rules(
            &mut out,
            "resources.deny (any match denies; also drops a root)",
            &m.res_deny,
        );
        allow(&mut out, "resources.allow", &m.res_allow);
        rules(&mut out, "tools.deny", &m.tool_deny);
        if m.read_only {
            rules(
                &mut out,
                "tools.writing (denied: tools.read_only = true)",
                &m.tool_writing,
            );
        }
        out.push_str("\n# tools.paths (arguments checked as paths/URIs)\n");
        if m.tool_paths.is_empty() {
            out.push_str("#   (none)\n");
        }
        for entry in &m.tool_paths {
            for p in &entry.paths {
                let server = p
                    .server
                    .as_ref()
                    .map_or_else(|| "any server".to_string(), |s| format!("server {s:?}"));
                out.push_str(&format!(
                    "#   tool {:?} ({server}) pointer {:?} kind {}  from {}\n",
                    entry.tool,
                    p.pointer,
                    p.kind.word(),
                    p.provenance.location(false)
                ));
            }
        }
        out.push_str("\n# tools.infer_for (per-tool tools.infer)\n");
        if m.infer_for.is_empty() {
            out.push_str("#   (none)\n");
        }
        for (tool, _, infer, prov) in &m.infer_for {
            out.push_str(&format!(
                "#   tool {tool:?} infer {:?}  from {}\n",
                infer.word(),
                prov.location(false)
            ));
        }
        let grants = &self.sandbox.grants;
        if !(grants.env.is_empty() && grants.read.is_empty() && grants.write.is_empty()) {
            out.push_str("\n# sandbox grants (accumulate over the layers)\n");
            for (what, list) in [
                ("env", &grants.env),
                ("read", &grants.read),
                ("write", &grants.write),
            ] {
                for (g, p) in list {
                    out.push_str(&format!("#   {what} {g:?}  from {}\n", p.location(false)));
                }
            }
        }
        out.push_str("\n# sandbox.read_only_paths\n");
        if self.sandbox.read_only_paths.is_empty() {
            out.push_str("#   (none)\n");
        }
        for g in &self.sandbox.read_only_paths {
            out.push_str(&format!("#   {g:?}\n"));
        }
        if !self.sandbox.read_only_roots.is_empty() {
            out.push_str("\n# sandbox.read_only_roots\n");
            for g in &self.sandbox.read_only_roots {
                out.push_str(&format!("#   {g:?}\n"));
            }
        }
        out
    }

    /// The effective policy as JSON (stable keys; for scripts and the audit log).
    pub fn show_json(&self) -> Value {
        let m = &self.m;
        let table = |t: &super::glob::GlobTable| -> Value {
            t.texts
                .iter()
                .zip(&t.rules)
                .map(|(g, p)| json!({"glob": g, "provenance": prov_json(p)}))
                .collect()
        };
        let allow = |lists: &[super::AllowTable]| -> Value {
            lists
                .iter()
                .map(|l| json!({"list": prov_json(&l.miss), "globs": table(&l.table)}))
                .collect()
        };
        let settings: serde_json::Map<String, Value> = SETTINGS
            .iter()
            .zip(&self.effective)
            .filter(|(spec, (v, _))| is_row(spec, v))
            .map(|(spec, (v, p))| {
                let entry =
                    json!({"value": v.shown(spec), "provenance": prov_json(p), "type": spec.ty(), "doc": spec.doc});
                (spec.key.to_owned(), entry)
            })
            .collect();
        let grant_list = |list: &[(String, Provenance)]| -> Value {
            list.iter()
                .map(|(g, p)| json!({"value": g, "provenance": prov_json(p)}))
                .collect()
        };
        json!({
            "layers": self.layers.iter().map(|l| json!({
                "name": l.name,
                "base": l.base,
                "path": l.path.as_ref().map(|p| p.display().to_string()),
                "sha256": l.sha256,
            })).collect::<Vec<_>>(),
            "settings": settings,
            "roots_deny": table(&m.root_deny),
            "roots_other_homes": table(&m.root_other_homes),
            "own_home": m.own_home,
            "roots_allow": allow(&m.root_allow),
            "resources_deny": table(&m.res_deny),
            "resources_allow": allow(&m.res_allow),
            "tools_deny": table(&m.tool_deny),
            "tools_writing_denied": table(&m.tool_writing),
            "tools_paths": m.tool_paths.iter().flat_map(|e| e.paths.iter().map(move |p| json!({
                "tool": e.tool,
                "server": p.server,
                "pointer": p.pointer,
                "kind": p.kind.word(),
                "provenance": prov_json(&p.provenance),
            }))).collect::<Vec<_>>(),
            "tools_infer_for": m.infer_for.iter().map(|(tool, _, infer, p)| json!({
                "tool": tool,
                "infer": infer.word(),
                "provenance": prov_json(p),
            })).collect::<Vec<_>>(),
            "sandbox_read_only_roots": self.sandbox.read_only_roots,
            "sandbox_grants": {
                "env": grant_list(&self.sandbox.grants.env),
                "read": grant_list(&self.sandbox.grants.read),
                "write": grant_list(&self.sandbox.grants.write),
            },
            "base": match &self.opted_out {
                Some(p) => json!({"name": "none", "provenance": prov_json(p)}),
                None => json!({"name": self.layers.iter().find(|l| l.base).map(|l| l.name.as_str())}),
            },
            "dropped_protections": self.dropped_protections(),
            "sandbox_read_only_paths": self.sandbox.read_only_paths,
        })
    }
}
