//! Shared helpers for the `wrap` tests: the sample host configurations, an independent
//! JSONC reader (so the tests never judge rootfence's parser by itself), the expected
//! meaning of a wrapped file, and running the real binary.

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::{Map, Value, json};

/// The sample host configurations in `tests/fixtures/wrap/`.
pub const FIXTURES: &[&str] = &[
    "claude_desktop_config.json",
    "claude_desktop_minified.json",
    "claude_desktop_unicode.json",
    "claude_code_project.mcp.json",
    "claude_code_user.claude.json",
    "vscode_mcp.jsonc",
    "vscode_crlf.json",
    "vscode_settings.json",
    "cursor_mcp.json",
    "empty_servers.json",
    "bom_tabs_no_final_newline.json",
];

/// The rootfence command written by the tests that do not exercise the default.
pub const RF: &str = "/opt/rootfence/bin/rootfence";

pub fn fixtures_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/wrap")
}

pub fn fixture(name: &str) -> String {
    std::fs::read_to_string(fixtures_dir().join(name)).expect("fixture is readable UTF-8")
}

/// A valid policy file in `dir`.
pub fn policy_in(dir: &Path) -> PathBuf {
    let p = dir.join("org.toml");
    std::fs::write(
        &p,
        "version = 1\n[resources]\ndeny = [\"**/.env\"]\n[sandbox]\nenv = [\"API_KEY\"]\n",
    )
    .unwrap();
    p
}

/// Strips `//` and `/* */` comments and trailing commas, leaving strict JSON. Written
/// independently of rootfence's parser, as a character scan that tracks strings.
pub fn strip_jsonc(text: &str) -> String {
    let text = text.strip_prefix('\u{FEFF}').unwrap_or(text);
    let chars: Vec<char> = text.chars().collect();
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    let mut in_str = false;
    while i < chars.len() {
        let c = chars[i];
        if in_str {
            out.push(c);
            if c == '\\' {
                out.push(chars[i + 1]);
                i += 2;
                continue;
            }
            if c == '"' {
                in_str = false;
            }
            i += 1;
            continue;
        }
        match (c, chars.get(i + 1)) {
            ('"', _) => {
                in_str = true;
                out.push(c);
                i += 1;
            }
            ('/', Some('/')) => {
                while i < chars.len() && chars[i] != '\n' {
                    i += 1;
                }
            }
            ('/', Some('*')) => {
                i += 2;
                while !(chars[i] == '*' && chars[i + 1] == '/') {
                    i += 1;
                }
                i += 2;
            }
            _ => {
                out.push(c);
                i += 1;
            }
        }
    }
    // Trailing commas: a `,` followed only by whitespace before `}` or `]`.
    let chars: Vec<char> = out.chars().collect();
    let mut res = String::with_capacity(out.len());
    let mut in_str = false;
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        if in_str {
            res.push(c);
            if c == '\\' {
                res.push(chars[i + 1]);
                i += 2;
                continue;
            }
            if c == '"' {
                in_str = false;
            }
        } else if c == '"' {
            in_str = true;
            res.push(c);
        } else if c == ',' {
            let next = chars[i + 1..].iter().find(|c| !c.is_whitespace());
            if !matches!(next, Some('}') | Some(']')) {
                res.push(c);
            }
        } else {
            res.push(c);
        }
        i += 1;
    }
    res
}

/// The JSON value of a (JSONC) host configuration.
pub fn value_of(text: &str) -> Value {
    serde_json::from_str(&strip_jsonc(text)).unwrap_or_else(|e| panic!("{e}:\n{text}"))
}

/// Whether `cmd` names rootfence (independent of the library's test).
fn is_rootfence(cmd: &str) -> bool {
    let name = cmd.rsplit(['/', '\\']).next().unwrap();
    name == "rootfence" || name.eq_ignore_ascii_case("rootfence.exe")
}

/// Every server map of a configuration, as mutable objects.
fn server_maps(v: &mut Value) -> Vec<&mut Map<String, Value>> {
    let mut maps = Vec::new();
    let Some(root) = v.as_object_mut() else {
        return maps;
    };
    for (k, val) in root.iter_mut() {
        match k.as_str() {
            "mcpServers" | "servers" => {
                if let Some(m) = val.as_object_mut() {
                    maps.push(m);
                }
            }
            "mcp" => {
                if let Some(m) = val.get_mut("servers").and_then(Value::as_object_mut) {
                    maps.push(m);
                }
            }
            "projects" => {
                if let Some(ps) = val.as_object_mut() {
                    for p in ps.values_mut() {
                        if let Some(m) = p.get_mut("mcpServers").and_then(Value::as_object_mut) {
                            maps.push(m);
                        }
                    }
                }
            }
            _ => {}
        }
    }
    maps
}

/// What a configuration must mean after `wrap` with these policies: every stdio entry's
/// command is rootfence and its args are `run --policy P... [marker] -- CMD ARGS...`;
/// nothing else differs.
pub fn expected_wrap(original: &Value, rootfence: &str, policies: &[&str]) -> Value {
    let mut v = original.clone();
    for map in server_maps(&mut v) {
        for entry in map.values_mut() {
            let Some(e) = entry.as_object_mut() else {
                continue;
            };
            let stdio = match e.get("type") {
                None => true,
                Some(t) => t == "stdio",
            };
            let Some(cmd) = e.get("command").and_then(Value::as_str).map(str::to_string) else {
                continue;
            };
            if !stdio || is_rootfence(&cmd) {
                continue;
            }
            let mut args = vec![json!("run")];
            for p in policies {
                args.push(json!("--policy"));
                args.push(json!(p));
            }
            // Each name the entry's env sets reaches the server (`--env`). The samples'
            // directories and files do not exist on the test machine, so no `--root` or
            // `--read` is derived for them; an env value under `${workspaceFolder}` (not
            // known for these files) is trusted as the server's state (`--write`).
            let mut writes = Vec::new();
            if let Some(env) = e.get("env").and_then(Value::as_object) {
                for (k, v) in env {
                    args.push(json!("--env"));
                    args.push(json!(k));
                    let v = v.as_str().unwrap_or_default();
                    if v.starts_with("${workspaceFolder}")
                        && !v.contains(':')
                        && !writes.contains(&v)
                    {
                        writes.push(v);
                    }
                }
            }
            // VS Code's `${workspaceFolder}` itself on the command line is a root, kept as the
            // variable (not the interpreter's own program).
            let name = cmd.rsplit(['/', '\\']).next().unwrap_or(&cmd);
            let interpreter =
                matches!(name, "node" | "nodejs" | "bun" | "deno") || name.starts_with("python");
            let mut positional = 0;
            let mut root = false;
            for a in e
                .get("args")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
            {
                let a = a.as_str().unwrap_or_default();
                let value = match a.strip_prefix('-') {
                    Some(opt) => match opt.split_once('=') {
                        Some((_, v)) => v,
                        None => continue,
                    },
                    None => {
                        positional += 1;
                        if interpreter && positional == 1 {
                            continue;
                        }
                        a
                    }
                };
                root |= value.trim_end_matches('/') == "${workspaceFolder}";
            }
            if root {
                args.push(json!("--root"));
                args.push(json!("${workspaceFolder}"));
            }
            for w in writes {
                args.push(json!("--write"));
                args.push(json!(w));
            }
            let had_args = e.contains_key("args");
            if !had_args {
                args.push(json!("--wrapped-without-args"));
            }
            args.push(json!("--"));
            args.push(json!(cmd));
            if let Some(Value::Array(orig)) = e.get("args") {
                args.extend(orig.iter().cloned());
            }
            e.insert("command".into(), json!(rootfence));
            e.insert("args".into(), Value::Array(args));
        }
    }
    v
}

/// Runs `rootfence <args>` with extra environment variables.
pub fn rootfence(args: &[&str], envs: &[(&str, &Path)]) -> Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_rootfence"));
    cmd.args(args).env("RUST_LOG", "warn");
    for (k, v) in envs {
        cmd.env(k, v);
    }
    cmd.output().expect("rootfence runs")
}

pub fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

pub fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// Files in `dir` whose names contain `needle`, sorted.
pub fn files_containing(dir: &Path, needle: &str) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.file_name().unwrap().to_string_lossy().contains(needle))
        .collect();
    v.sort();
    v
}
