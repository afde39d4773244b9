//! Round trips of `wrap` / `unwrap` on sample configurations of every host: wrap gives the
//! expected meaning, wrapping again changes nothing (byte-identical), unwrap gives back the
//! original bytes. Through the library, through the real binary, and as a property over
//! generated configurations and layouts.

mod wrap_support;

use std::os::unix::fs::PermissionsExt;

use proptest::prelude::*;
use rootfence::wrap::{self, UnwrapOptions, WrapOptions};
use serde_json::{Value, json};
use wrap_support::*;

fn opts(policies: &[&str]) -> WrapOptions {
    WrapOptions {
        rootfence: RF.into(),
        policies: policies.iter().map(|s| s.to_string()).collect(),
        // As the CLI derives, on a machine where none of the samples' paths exist (what
        // `expected_wrap` models).
        derive: Some(wrap::DeriveContext {
            assume: Some(wrap::Assumed::default()),
            ..wrap::DeriveContext::default()
        }),
        ..WrapOptions::default()
    }
}

/// What wrap does to each server of each sample, in file order.
const EXPECTED_ACTIONS: &[(&str, &[(&str, &str)])] = &[
    (
        "claude_desktop_config.json",
        &[
            ("filesystem", "wrapped"),
            ("github", "wrapped"),
            ("sqlite", "wrapped"),
        ],
    ),
    (
        "claude_desktop_minified.json",
        &[("memory", "wrapped"), ("time", "wrapped")],
    ),
    (
        "claude_desktop_unicode.json",
        &[
            ("notes", "wrapped"),
            ("escaped", "wrapped"),
            ("slashes", "wrapped"),
        ],
    ),
    (
        "claude_code_project.mcp.json",
        &[
            ("shared-server", "wrapped"),
            ("api", "remote"),
            ("events", "remote"),
            ("airtable", "wrapped"),
        ],
    ),
    (
        "claude_code_user.claude.json",
        &[
            ("playwright", "wrapped"),
            ("notion", "remote"),
            ("postgres (project /home/me/work/app)", "wrapped"),
            ("playwright (project /home/me/work/site)", "wrapped"),
        ],
    ),
    (
        "vscode_mcp.jsonc",
        &[
            ("memory", "wrapped"),
            ("perplexity", "wrapped"),
            ("fetch", "wrapped"),
            ("github", "remote"),
        ],
    ),
    (
        "vscode_crlf.json",
        &[("git", "wrapped"), ("local", "wrapped")],
    ),
    ("vscode_settings.json", &[("fetch", "wrapped")]),
    (
        "cursor_mcp.json",
        &[
            ("server-name", "wrapped"),
            ("python-tool", "wrapped"),
            ("remote-api", "remote"),
        ],
    ),
    ("empty_servers.json", &[]),
    (
        "bom_tabs_no_final_newline.json",
        &[("bom", "wrapped"), ("empty-args", "wrapped")],
    ),
];

#[test]
fn every_fixture_is_listed() {
    let listed: Vec<&str> = EXPECTED_ACTIONS.iter().map(|(n, _)| *n).collect();
    assert_eq!(listed, FIXTURES);
    let mut on_disk: Vec<String> = std::fs::read_dir(fixtures_dir())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    on_disk.sort();
    let mut listed: Vec<String> = listed.iter().map(|s| s.to_string()).collect();
    listed.sort();
    assert_eq!(on_disk, listed, "a sample without a round-trip test");
}

#[test]
fn every_fixture_round_trips_in_the_library() {
    let policies = ["/etc/rootfence/org.toml", "builtin:strict"];
    for (name, actions) in EXPECTED_ACTIONS {
        let original = fixture(name);
        let w = wrap::wrap_config(&original, &opts(&policies)).unwrap();
        let got: Vec<(String, &str)> = w
            .servers
            .iter()
            .map(|s| (s.label(), s.action.kind()))
            .collect();
        let want: Vec<(String, &str)> = actions.iter().map(|(a, b)| (a.to_string(), *b)).collect();
        assert_eq!(got, want, "{name}");
        assert_eq!(w.changed, !actions.is_empty(), "{name}");
        // The meaning, judged by an independent reader.
        assert_eq!(
            value_of(&w.text),
            expected_wrap(&value_of(&original), RF, &policies),
            "{name}:\n{}",
            w.text
        );
        // Wrapping again: byte-identical.
        let again = wrap::wrap_config(&w.text, &opts(&policies)).unwrap();
        assert!(!again.changed, "{name}: second wrap changed the file");
        assert_eq!(again.text, w.text);
        assert!(
            again
                .servers
                .iter()
                .all(|s| matches!(s.action.kind(), "already-wrapped" | "remote")),
            "{name}"
        );
        // Unwrap: the original bytes.
        let u = wrap::unwrap_config(&w.text, &UnwrapOptions::default()).unwrap();
        assert_eq!(u.text, original, "{name}: unwrap did not restore the bytes");
        assert_eq!(u.changed, w.changed);
        // Unwrapping an unwrapped file changes nothing.
        assert!(
            !wrap::unwrap_config(&original, &UnwrapOptions::default())
                .unwrap()
                .changed
        );
    }
}

/// Strict-JSON samples stay strict JSON (no comment or trailing comma is ever added), and
/// JSONC ones keep every comment.
#[test]
fn wrapped_files_keep_their_dialect_and_comments() {
    for name in FIXTURES {
        let original = fixture(name);
        let w = wrap::wrap_config(&original, &opts(&["/p.toml"]))
            .unwrap()
            .text;
        let body = w.strip_prefix('\u{FEFF}').unwrap_or(&w);
        let orig_body = original.strip_prefix('\u{FEFF}').unwrap_or(&original);
        if serde_json::from_str::<Value>(orig_body).is_ok() {
            serde_json::from_str::<Value>(body)
                .unwrap_or_else(|e| panic!("{name}: no longer strict JSON: {e}\n{w}"));
        }
        for line in original.lines() {
            if let Some(i) = line.find("//") {
                let comment = &line[i..];
                if !comment.contains('"') {
                    assert!(w.contains(comment), "{name}: lost comment {comment:?}");
                }
            }
        }
        assert_eq!(
            w.matches("/*").count(),
            original.matches("/*").count(),
            "{name}"
        );
        if original.contains("\r\n") {
            assert_eq!(
                w.matches('\n').count(),
                w.matches("\r\n").count(),
                "{name}: a bare LF in a CRLF file"
            );
        }
        if original.starts_with('\u{FEFF}') {
            assert!(w.starts_with('\u{FEFF}'), "{name}: the BOM was dropped");
        }
        assert_eq!(
            w.ends_with('\n'),
            original.ends_with('\n'),
            "{name}: final newline"
        );
    }
}

/// New array items follow the array's layout: one per line with the first item's
/// indentation (tabs or spaces) when the array is multi-line.
#[test]
fn new_items_follow_the_layout() {
    let w = wrap::wrap_config(&fixture("vscode_crlf.json"), &opts(&["/p.toml"]))
        .unwrap()
        .text;
    let ind = "                ";
    assert!(
        w.contains(&format!(
            "\"args\": [\r\n{ind}\"run\",\r\n{ind}\"--policy\",\r\n{ind}\"/p.toml\",\r\n{ind}\"--root\",\r\n{ind}\"${{workspaceFolder}}\",\r\n{ind}\"--\",\r\n{ind}\"uvx\",\r\n{ind}\"mcp-server-git\","
        )),
        "{w}"
    );
    // No args key: one is added on its own line after command, same indentation.
    assert!(
        w.contains("\"command\": \"/opt/rootfence/bin/rootfence\",\r\n            \"args\": [\"run\", \"--policy\", \"/p.toml\", \"--wrapped-without-args\", \"--\", \"${workspaceFolder}/bin/server\"]\r\n        }"),
        "{w}"
    );
    let t = wrap::wrap_config(
        &fixture("bom_tabs_no_final_newline.json"),
        &opts(&["/p.toml"]),
    )
    .unwrap()
    .text;
    assert!(
        t.contains(
            "\t\t\t\"command\": \"/opt/rootfence/bin/rootfence\",\n\t\t\t\"args\": [\"run\""
        ),
        "{t}"
    );
    assert!(
        t.contains("\"args\": [\"run\", \"--policy\", \"/p.toml\", \"--\", \"srv2\" ]"),
        "{t}"
    );
}

#[test]
fn hand_wrapped_entries_are_recognised_not_nested() {
    let text = r#"{"mcpServers": {
  "a": {"command": "/usr/local/bin/rootfence", "args": ["run", "--", "npx", "srv"]},
  "b": {"command": "npx", "args": ["other"]}
}}"#;
    let w = wrap::wrap_config(text, &opts(&["/p.toml"])).unwrap();
    assert_eq!(w.servers[0].action.kind(), "wrapped-differently");
    assert!(w.servers[0].action.is_problem());
    assert_eq!(w.servers[1].action.kind(), "wrapped");
    assert!(w.text.contains(
        r#""a": {"command": "/usr/local/bin/rootfence", "args": ["run", "--", "npx", "srv"]}"#
    ));
    let mut o = opts(&["/p.toml"]);
    o.rewrap = true;
    let r = wrap::wrap_config(&w.text, &o).unwrap();
    assert_eq!(r.servers[0].action.kind(), "rewrapped");
    assert_eq!(r.servers[1].action.kind(), "already-wrapped");
    let v = value_of(&r.text);
    assert_eq!(
        v["mcpServers"]["a"],
        json!({"command": RF, "args": ["run", "--policy", "/p.toml", "--", "npx", "srv"]})
    );
    // Unwrap restores both to plain commands.
    let u = wrap::unwrap_config(&r.text, &UnwrapOptions::default()).unwrap();
    assert_eq!(
        value_of(&u.text),
        json!({"mcpServers": {"a": {"command": "npx", "args": ["srv"]}, "b": {"command": "npx", "args": ["other"]}}})
    );
}

#[test]
fn server_selection() {
    let original = fixture("claude_desktop_config.json");
    let mut o = opts(&["/p.toml"]);
    o.servers = vec!["github".into()];
    let w = wrap::wrap_config(&original, &o).unwrap();
    assert_eq!(w.servers.len(), 1);
    let v = value_of(&w.text);
    assert_eq!(v["mcpServers"]["github"]["command"], RF);
    assert_eq!(v["mcpServers"]["filesystem"]["command"], "npx");
    // Unwrap of another server leaves github wrapped.
    let u = wrap::unwrap_config(
        &w.text,
        &UnwrapOptions {
            servers: vec!["filesystem".into()],
        },
    )
    .unwrap();
    assert_eq!(u.servers[0].action.kind(), "not-wrapped");
    assert!(!u.changed);
}

/// Through the real binary: wrap, wrap again, unwrap, on a copy of every sample, with the
/// file mode kept, backups of every version, the printed diff applying with `patch`, and no
/// temporary file left behind.
#[test]
fn every_fixture_round_trips_through_the_binary() {
    let dir = tempfile::tempdir().unwrap();
    let policy = policy_in(dir.path());
    let policy_s = policy.to_str().unwrap();
    for name in FIXTURES {
        let sub = dir.path().join(name.replace('.', "_"));
        std::fs::create_dir(&sub).unwrap();
        let file = sub.join(name);
        let original = fixture(name);
        std::fs::write(&file, &original).unwrap();
        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o640)).unwrap();
        let f = file.to_str().unwrap();

        let o = rootfence(
            &["wrap", f, "--policy", policy_s, "--rootfence-path", RF],
            &[],
        );
        assert_eq!(o.status.code(), Some(0), "{name}: {}", stderr(&o));
        let wrapped = std::fs::read_to_string(&file).unwrap();
        assert_eq!(
            value_of(&wrapped),
            expected_wrap(&value_of(&original), RF, &[policy_s]),
            "{name}"
        );
        let mode = std::fs::metadata(&file).unwrap().permissions().mode() & 0o7777;
        assert_eq!(mode, 0o640, "{name}: mode not kept");
        let diff = stdout(&o);
        if name == &"empty_servers.json" {
            assert!(diff.is_empty());
            assert!(stderr(&o).contains("has no server entries: nothing to wrap"));
            assert!(files_containing(&sub, "rootfence-backup").is_empty());
            continue;
        }
        // The diff is a real patch from the original to the wrapped file.
        let orig_copy = sub.join("orig");
        let patch_file = sub.join("wrap.patch");
        let patched = sub.join("patched");
        std::fs::write(&orig_copy, &original).unwrap();
        std::fs::write(&patch_file, &diff).unwrap();
        let p = std::process::Command::new("patch")
            .arg("-s")
            .arg("-o")
            .arg(&patched)
            .arg(&orig_copy)
            .arg(&patch_file)
            .output();
        match p {
            Ok(p) => {
                assert!(p.status.success(), "{name}: patch failed: {p:?}\n{diff}");
                assert_eq!(
                    std::fs::read_to_string(&patched).unwrap(),
                    wrapped,
                    "{name}"
                );
            }
            Err(e) => eprintln!("skipping the patch check: no `patch` command ({e})"),
        }
        let backups = files_containing(&sub, "rootfence-backup");
        assert_eq!(backups.len(), 1, "{name}");
        assert_eq!(std::fs::read_to_string(&backups[0]).unwrap(), original);
        let bmode = std::fs::metadata(&backups[0]).unwrap().permissions().mode() & 0o777;
        assert_eq!(bmode, 0o640, "{name}: backup mode");

        // Again: nothing printed on stdout, nothing written.
        let o = rootfence(
            &["wrap", f, "--policy", policy_s, "--rootfence-path", RF],
            &[],
        );
        assert_eq!(o.status.code(), Some(0), "{name}: {}", stderr(&o));
        assert!(stdout(&o).is_empty(), "{name}: {}", stdout(&o));
        assert!(stderr(&o).contains("nothing to change"), "{name}");
        assert_eq!(std::fs::read_to_string(&file).unwrap(), wrapped);
        assert_eq!(files_containing(&sub, "rootfence-backup").len(), 1);

        // Unwrap: the original bytes, mode kept, a backup of the wrapped version.
        let o = rootfence(&["unwrap", f], &[]);
        assert_eq!(o.status.code(), Some(0), "{name}: {}", stderr(&o));
        assert_eq!(
            std::fs::read(&file).unwrap(),
            original.as_bytes(),
            "{name}: unwrap did not restore the bytes"
        );
        let mode = std::fs::metadata(&file).unwrap().permissions().mode() & 0o7777;
        assert_eq!(mode, 0o640);
        let backups = files_containing(&sub, "rootfence-backup");
        assert_eq!(backups.len(), 2, "{name}: {backups:?}");
        assert!(
            backups
                .iter()
                .any(|b| std::fs::read_to_string(b).unwrap() == wrapped)
        );
        assert!(
            files_containing(&sub, "rootfence-tmp").is_empty(),
            "{name}: temporary file left"
        );
    }
}

#[test]
fn strip_jsonc_is_sound() {
    let v = value_of("{/*a*/\"k\": [1, \"//x\", \"/*y*/\",], // c\n \"s\": \"a\\\"b,}\",}");
    assert_eq!(v, json!({"k": [1, "//x", "/*y*/"], "s": "a\"b,}"}));
}

// ---------------------------------------------------------------------------------------
// Property: any configuration, in any of the layouts editors and hosts write, round-trips.

/// Strings that stress escaping: quotes, backslashes, control characters, non-ASCII,
/// lookalikes of the markers rootfence uses.
fn tricky_string() -> impl Strategy<Value = String> {
    prop_oneof![
        "[a-zA-Z0-9_./@:=-]{0,12}",
        Just("--".to_string()),
        Just("run".to_string()),
        Just("--wrapped-without-args".to_string()),
        Just("rootfence".to_string()),
        Just("a\"b\\c".to_string()),
        Just("tab\tnl\ncr\r".to_string()),
        Just("zoë/Документы/笔记 😀".to_string()),
        Just("\u{2028}\u{0}".to_string()),
        Just("${workspaceFolder}/x".to_string()),
    ]
}

#[derive(Debug, Clone)]
struct GenEntry {
    name: String,
    kind: u8, // 0 stdio, 1 stdio with type, 2 remote, 3 stdio without args
    command: String,
    args: Vec<String>,
    env: Vec<(String, String)>,
    cwd: Option<String>,
}

fn entry() -> impl Strategy<Value = GenEntry> {
    (
        "[a-z][a-z0-9-]{0,8}",
        0u8..4,
        // The server command itself is never rootfence (that entry would be "wrapped").
        prop_oneof![
            "[a-z/]{1,10}",
            Just("npx".to_string()),
            Just("C:\\n\\node.exe".into())
        ]
        .prop_filter("not rootfence", |c| !c.ends_with("rootfence")),
        prop::collection::vec(tricky_string(), 0..5),
        prop::collection::vec(("[A-Z_]{1,6}", tricky_string()), 0..3),
        prop::option::of(tricky_string()),
    )
        .prop_map(|(name, kind, command, args, env, cwd)| GenEntry {
            name,
            kind,
            command,
            args,
            env,
            cwd,
        })
}

fn build(entries: &[GenEntry], key: &str) -> Value {
    let mut servers = serde_json::Map::new();
    for e in entries {
        let mut o = serde_json::Map::new();
        match e.kind {
            2 => {
                o.insert("type".into(), json!("http"));
                o.insert("url".into(), json!("https://example.com/mcp"));
            }
            k => {
                if k == 1 {
                    o.insert("type".into(), json!("stdio"));
                }
                o.insert("command".into(), json!(e.command));
                if k != 3 {
                    o.insert("args".into(), json!(e.args));
                }
                if !e.env.is_empty() {
                    let env: serde_json::Map<String, Value> =
                        e.env.iter().map(|(k, v)| (k.clone(), json!(v))).collect();
                    o.insert("env".into(), Value::Object(env));
                }
                if let Some(c) = &e.cwd {
                    o.insert("cwd".into(), json!(c));
                }
            }
        }
        servers.insert(e.name.clone(), Value::Object(o));
    }
    json!({ "before": [1, {"x": null}], key: servers, "after": "é" })
}

/// Renders a value in one of several layouts (compact, pretty with 2/4 spaces or tabs, CRLF,
/// `\uXXXX`-escaped non-ASCII, with comments and trailing commas for JSONC).
fn render(v: &Value, layout: u8) -> String {
    let pretty = |indent: &[u8]| {
        let mut buf = Vec::new();
        let fmt = serde_json::ser::PrettyFormatter::with_indent(indent);
        let mut ser = serde_json::Serializer::with_formatter(&mut buf, fmt);
        serde::Serialize::serialize(v, &mut ser).unwrap();
        String::from_utf8(buf).unwrap()
    };
    match layout {
        0 => serde_json::to_string(v).unwrap(),
        1 => pretty(b"  "),
        2 => pretty(b"    ") + "\n",
        3 => pretty(b"\t"),
        4 => pretty(b"  ").replace('\n', "\r\n") + "\r\n",
        5 => {
            // Non-ASCII as \u escapes (what some tools write).
            let s = serde_json::to_string(v).unwrap();
            s.chars()
                .map(|c| {
                    if c.is_ascii() {
                        c.to_string()
                    } else {
                        let mut b = [0u16; 2];
                        c.encode_utf16(&mut b)
                            .iter()
                            .map(|u| format!("\\u{u:04x}"))
                            .collect()
                    }
                })
                .collect()
        }
        _ => {
            // JSONC: a comment before every line that opens an object, trailing commas.
            let p = pretty(b"\t");
            let mut out = String::from("// generated\n");
            for line in p.lines() {
                if line.trim_end().ends_with('{') {
                    out.push_str("/* block */ ");
                }
                out.push_str(line);
                if line.trim_end().ends_with(['"', ']', '}', 'l', 'e'])
                    && !line.trim_end().ends_with(',')
                    && line.trim() != "}"
                {
                    out.push_str(", // trailing");
                }
                out.push('\n');
            }
            out
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn any_config_round_trips(
        entries in prop::collection::vec(entry(), 0..5)
            .prop_map(|mut v| { v.dedup_by(|a, b| a.name == b.name); v })
            .prop_filter("unique names", |v| {
                let mut n: Vec<_> = v.iter().map(|e| &e.name).collect();
                n.sort();
                n.windows(2).all(|w| w[0] != w[1])
            }),
        key in prop_oneof![Just("mcpServers"), Just("servers")],
        layout in 0u8..7,
        policies in prop::collection::vec(tricky_string().prop_map(|s| format!("/p/{s}")), 0..3),
    ) {
        let v = build(&entries, key);
        let text = render(&v, layout);
        let pol: Vec<&str> = policies.iter().map(String::as_str).collect();
        let w = wrap::wrap_config(&text, &opts(&pol)).unwrap();
        prop_assert_eq!(value_of(&w.text), expected_wrap(&value_of(&text), RF, &pol));
        let again = wrap::wrap_config(&w.text, &opts(&pol)).unwrap();
        prop_assert!(!again.changed);
        let u = wrap::unwrap_config(&w.text, &UnwrapOptions::default()).unwrap();
        prop_assert_eq!(&u.text, &text);
        // The diff has one `-`/`+` pair of hunks at least when something changed.
        let d = w.diff(&text, "f");
        prop_assert_eq!(d.is_empty(), !w.changed);
    }
}

/// `examples/configs/*/*.after.json` are exactly what `rootfence wrap` writes for the
/// `.before.json` beside them (with `--rootfence-path /usr/local/bin/rootfence --policy
/// /etc/rootfence/org.toml`), and unwrap gives the before file back. Regenerate with
/// `ROOTFENCE_BLESS=1 cargo test --test wrap_roundtrip example_configs`.
#[test]
fn example_configs_match_what_wrap_writes() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/configs");
    let bless = std::env::var_os("ROOTFENCE_BLESS").is_some();
    // The machine the examples describe: these directories and files exist there.
    let assumed = |home: &str, dirs: &[&str], files: &[&str]| wrap::DeriveContext {
        home: Some(home.into()),
        workspace: None,
        assume: Some(wrap::Assumed {
            dirs: dirs.iter().map(Into::into).collect(),
            files: files.iter().map(Into::into).collect(),
        }),
    };
    let mut seen = 0;
    for host in ["claude-desktop", "claude-code", "vscode", "cursor"] {
        let mut befores: Vec<_> = std::fs::read_dir(dir.join(host))
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.to_string_lossy().ends_with(".before.json"))
            .collect();
        befores.sort();
        for before_path in befores {
            let before = std::fs::read_to_string(&before_path).unwrap();
            let ctx = match host {
                "claude-desktop" => assumed(
                    "/Users/alex",
                    &["/Users/alex/work/app"],
                    &["/Users/alex/work/app/dev.db"],
                ),
                _ => assumed(
                    "/home/alex",
                    &[
                        "/home/alex/work/app",
                        "/home/alex/tools/docs-mcp",
                        "/home/alex/tools/docs-mcp/index",
                    ],
                    &[],
                ),
            };
            let o = WrapOptions {
                rootfence: "/usr/local/bin/rootfence".into(),
                policies: vec!["/etc/rootfence/org.toml".into()],
                derive: Some(ctx),
                ..WrapOptions::default()
            };
            let w = wrap::wrap_config(&before, &o).unwrap();
            assert!(
                w.servers.iter().any(|s| s.action.kind() == "wrapped"),
                "{}",
                before_path.display()
            );
            let after_path = std::path::PathBuf::from(
                before_path
                    .to_string_lossy()
                    .replace(".before.json", ".after.json"),
            );
            if bless {
                std::fs::write(&after_path, &w.text).unwrap();
            }
            let after = std::fs::read_to_string(&after_path).unwrap_or_else(|e| {
                panic!(
                    "{}: {e} (bless with ROOTFENCE_BLESS=1)",
                    after_path.display()
                )
            });
            assert_eq!(after, w.text, "{} is stale", after_path.display());
            let u = wrap::unwrap_config(&after, &UnwrapOptions::default()).unwrap();
            assert_eq!(u.text, before);
            seen += 1;
        }
    }
    assert_eq!(seen, 5);
}

/// Mutated samples (random JSON-significant characters inserted or deleted): wrap and unwrap
/// never panic; whatever wrap accepts, it wraps idempotently; and when the input had no
/// wrapped entry, unwrap gives it back byte for byte. (The same as a fuzz target, run on
/// every `cargo test`.)
#[test]
fn mutated_samples_never_panic_and_round_trip() {
    let samples: Vec<String> = FIXTURES.iter().map(|n| fixture(n)).collect();
    let pieces = prop_oneof![
        Just("{"),
        Just("}"),
        Just("["),
        Just("]"),
        Just(","),
        Just(":"),
        Just("\""),
        Just("\\"),
        Just("/"),
        Just("*"),
        Just("//"),
        Just("/*"),
        Just("*/"),
        Just("\n"),
        Just("\r\n"),
        Just(" "),
        Just("\t"),
        Just("\"command\""),
        Just("\"args\""),
        Just("\"type\""),
        Just("\"stdio\""),
        Just("\"url\""),
        Just("[]"),
        Just("{}"),
        Just("\"--\""),
        Just("\"run\""),
        Just("\\u00e9"),
        Just("é"),
        Just("😀"),
        Just("1e5"),
        Just("null"),
    ];
    let edits = prop::collection::vec(
        (any::<prop::sample::Index>(), prop::option::of(pieces)),
        1..4,
    );
    let mut runner = proptest::test_runner::TestRunner::new(ProptestConfig::with_cases(2000));
    let accepted = std::cell::Cell::new(0u32);
    runner
        .run(&(0..samples.len(), edits), |(which, edits)| {
            let mut text = samples[which].clone();
            for (at, piece) in edits {
                let boundaries: Vec<usize> = text
                    .char_indices()
                    .map(|(i, _)| i)
                    .chain(std::iter::once(text.len()))
                    .collect();
                let i = at.index(boundaries.len());
                let pos = boundaries[i];
                match piece {
                    Some(p) => text.insert_str(pos, p),
                    None if i + 1 < boundaries.len() => {
                        text.replace_range(pos..boundaries[i + 1], "");
                    }
                    None => {}
                }
            }
            let _ = wrap::unwrap_config(&text, &UnwrapOptions::default());
            let Ok(w) = wrap::wrap_config(&text, &opts(&["/p.toml"])) else {
                return Ok(());
            };
            accepted.set(accepted.get() + 1);
            let again =
                wrap::wrap_config(&w.text, &opts(&["/p.toml"])).expect("wrap's own output parses");
            prop_assert!(!again.changed, "not idempotent:\n{}\n---\n{}", text, w.text);
            let u = wrap::unwrap_config(&w.text, &UnwrapOptions::default())
                .expect("unwrap accepts wrap's output");
            if !text.contains("rootfence") {
                prop_assert_eq!(&u.text, &text);
            }
            let _ = w.diff(&text, "f");
            Ok(())
        })
        .unwrap();
    // The mutations must leave enough valid inputs for the property to mean something.
    assert!(
        accepted.get() > 200,
        "only {} mutated inputs parsed",
        accepted.get()
    );
}
