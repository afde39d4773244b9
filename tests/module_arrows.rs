//! The arrows between `src/`'s top-level modules point one way: no two modules import each
//! other, directly or through others (issue 25). A cycle means neither side can be read,
//! tested or feature-gated alone; the fix is to move the shared type down.
//!
//! "Imports" are the `crate::X` paths in code (comments and doc comments are skipped, so a
//! doc link up to a caller is fine).

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// Every `.rs` file under `dir`, recursively.
fn rust_files(dir: &Path, out: &mut Vec<std::path::PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let p = entry.unwrap().path();
        if p.is_dir() {
            rust_files(&p, out);
        } else if p.extension().is_some_and(|e| e == "rs") {
            out.push(p);
        }
    }
}

/// The top-level modules a file's code names as `crate::X`.
fn imports(text: &str, modules: &BTreeSet<String>) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    for line in text.lines() {
        let code = line.split("//").next().unwrap_or("");
        let mut rest = code;
        while let Some(at) = rest.find("crate::") {
            let after = &rest[at + "crate::".len()..];
            if let Some(group) = after.strip_prefix('{') {
                // `use crate::{a, b::c}`: every first segment inside the braces.
                let inner = group.split('}').next().unwrap_or("");
                for part in inner.split(',') {
                    let name = part.trim().split("::").next().unwrap_or("").trim();
                    if modules.contains(name) {
                        out.insert(name.to_owned());
                    }
                }
            }
            let name: String = after
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                .collect();
            if modules.contains(&name) {
                out.insert(name);
            }
            rest = after;
        }
    }
    out
}

/// Module name → the modules it imports.
fn graph() -> BTreeMap<String, BTreeSet<String>> {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut modules = BTreeSet::new();
    for entry in std::fs::read_dir(&src).unwrap() {
        let p = entry.unwrap().path();
        let name = p.file_stem().unwrap().to_string_lossy().into_owned();
        let rust = p.is_dir() || p.extension().is_some_and(|e| e == "rs");
        if rust && name != "lib" && name != "main" {
            modules.insert(name);
        }
    }
    let mut g = BTreeMap::new();
    for m in &modules {
        let mut files = Vec::new();
        let dir = src.join(m);
        if dir.is_dir() {
            rust_files(&dir, &mut files);
        } else {
            files.push(src.join(format!("{m}.rs")));
        }
        let mut deps = BTreeSet::new();
        for f in files {
            deps.extend(imports(&std::fs::read_to_string(f).unwrap(), &modules));
        }
        deps.remove(m);
        g.insert(m.clone(), deps);
    }
    g
}

/// A cycle through `start`, if any: the path of modules back to it.
fn cycle_from(g: &BTreeMap<String, BTreeSet<String>>, start: &str) -> Option<Vec<String>> {
    let mut stack = vec![(start.to_owned(), vec![start.to_owned()])];
    let mut seen = BTreeSet::new();
    while let Some((m, path)) = stack.pop() {
        for d in g.get(&m).into_iter().flatten() {
            if d == start {
                let mut p = path.clone();
                p.push(d.clone());
                return Some(p);
            }
            if seen.insert(d.clone()) {
                let mut p = path.clone();
                p.push(d.clone());
                stack.push((d.clone(), p));
            }
        }
    }
    None
}

#[test]
fn no_two_top_level_modules_import_each_other() {
    let g = graph();
    assert!(
        g.contains_key("policy") && g.contains_key("sandbox"),
        "{g:?}"
    );
    let cycles: Vec<String> = g
        .keys()
        .filter_map(|m| cycle_from(&g, m))
        .map(|p| p.join(" -> "))
        .collect();
    assert!(
        cycles.is_empty(),
        "module cycles (move the shared type down into the lower module):\n{}",
        cycles.join("\n")
    );
}

#[test]
fn the_import_parser_sees_grouped_and_inline_paths() {
    let modules: BTreeSet<String> = ["policy", "sandbox", "audit"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    let text = "use crate::{audit::X, sandbox};\n// crate::policy in a comment\nlet x = crate::policy::f();";
    let got = imports(text, &modules);
    assert_eq!(got.len(), 3, "{got:?}");
    let doc_only = "//! see crate::policy\n/// and [`crate::audit`]\n";
    assert!(imports(doc_only, &modules).is_empty());
}

/// The file a module path (`relay::pump::route`, `enforce::Enforcer`) names, and the part of
/// the path left over (an item in that file), if any prefix of it is a file under `src/`.
fn module_file(path: &str) -> Option<(std::path::PathBuf, Vec<&str>)> {
    let parts: Vec<&str> = path.split("::").collect();
    for n in (1..=parts.len()).rev() {
        let dir = Path::new("src").join(parts[..n].join("/"));
        for file in [dir.with_extension("rs"), dir.join("mod.rs")] {
            if file.is_file() {
                return Some((file, parts[n..].to_vec()));
            }
        }
    }
    None
}

/// docs/architecture.md names files (`src/mcp/uris.rs`) and module paths
/// (`relay::pump::route`, `enforce::decide` (`Checker::uri`)); each must still exist, so the
/// map cannot silently drift from the code it describes.
#[test]
fn the_architecture_doc_names_what_exists() {
    let doc = std::fs::read_to_string("docs/architecture.md").unwrap();
    let modules: BTreeSet<String> = std::fs::read_dir("src")
        .unwrap()
        .map(|e| e.unwrap().path())
        .map(|p| p.file_stem().unwrap().to_string_lossy().into_owned())
        .collect();
    let mut missing = Vec::new();
    let mut checked = 0;
    for (i, span) in doc.split('`').enumerate() {
        if i % 2 == 0 {
            continue;
        }
        if let Some(file) = span.strip_prefix("src/") {
            checked += 1;
            let file = file.trim_end_matches('/');
            if !Path::new("src").join(file).exists() {
                missing.push(span.to_owned());
            }
            continue;
        }
        let first = span.split("::").next().unwrap();
        if !span.contains("::") || !modules.contains(first) {
            continue;
        }
        checked += 1;
        match module_file(span) {
            Some((file, rest)) => {
                let text = std::fs::read_to_string(&file).unwrap();
                if rest.iter().any(|item| !text.contains(item)) {
                    missing.push(format!("{span} (not in {})", file.display()));
                }
            }
            None => missing.push(span.to_owned()),
        }
    }
    assert!(
        checked > 20,
        "only {checked} names checked: is the doc still there?"
    );
    assert!(
        missing.is_empty(),
        "docs/architecture.md names what no longer exists: {missing:?}"
    );
}
