//! Property tests of the layering rule: adding a layer never turns a deny into an allow
//! (nor a block into a pass), and loading arbitrary text never panics.

use std::sync::atomic::{AtomicUsize, Ordering};

use proptest::prelude::*;
use proptest::test_runner::{Config, TestRunner};
use rootfence::policy::Policy;

const HOME: &str = "/home/u";

const PATH_GLOBS: &[&str] = &[
    "/srv/**",
    "/srv/app/**",
    "/srv/app",
    "/srv/app/*.rs",
    "/srv/*/src/**",
    "/srv/app/secret/**",
    "~/**",
    "~/code/**",
    "/opt/**",
    "**/.env",
    "**/*.pem",
    "**",
];
const SCHEMES: &[&str] = &["https", "ui", "data"];
const TOOLS: &[&str] = &["rm_*", "write_file", "*shell*", "read_*", "edit_?ile"];
const MIMES: &[&str] = &["text/*", "text/plain", "application/json", "*/*"];

/// Probes: paths (canonical and not), schemes, tools, content items.
const PATHS: &[&str] = &[
    "/",
    "/srv",
    "/srv/app",
    "/srv/app/main.rs",
    "/srv/app/.env",
    "/srv/APP/.ENV",
    "/srv/app/k.pem",
    "/srv/app/secret/x",
    "/srv/app_evil/x",
    "/srv/other/src/a.rs",
    "/home/u",
    "/home/u/.env",
    "/home/u/code/x.rs",
    "/opt/x",
    "/etc/passwd",
    "/srv/app/../x",
    "relative",
];
const PROBE_SCHEMES: &[&str] = &["file", "https", "HTTPS", "ui", "data", "ftp", "bad scheme"];
const PROBE_TOOLS: &[&str] = &[
    "rm_rf",
    "write_file",
    "run_shell",
    "read_file",
    "edit_file",
    "ls",
];
const PROBE_MIMES: &[Option<&str>] = &[
    None,
    Some("text/plain"),
    Some("image/png"),
    Some("application/json"),
];
const PROBE_SIZES: &[u64] = &[1, 50, 500, 5000];

fn subset(vocab: &'static [&'static str]) -> impl Strategy<Value = Vec<&'static str>> {
    proptest::sample::subsequence(vocab, 0..=vocab.len().min(4))
}

fn list(items: &[&str]) -> String {
    let q: Vec<String> = items.iter().map(|s| format!("\"{s}\"")).collect();
    format!("[{}]", q.join(", "))
}

/// An optional TOML line, present with probability 1/3 so that stacks often load.
fn maybe(s: impl Strategy<Value = String>) -> impl Strategy<Value = String> {
    prop_oneof![2 => Just(String::new()), 1 => s]
}

fn layer() -> impl Strategy<Value = String> {
    let top = maybe(prop_oneof![
        Just("mode = \"enforce\"\n".to_string()),
        Just("mode = \"audit\"\n".to_string()),
    ]);
    let roots = (
        maybe(subset(PATH_GLOBS).prop_map(|g| format!("allow = {}\n", list(&g)))),
        maybe(subset(PATH_GLOBS).prop_map(|g| format!("deny = {}\n", list(&g)))),
    );
    let resources = (
        maybe(subset(PATH_GLOBS).prop_map(|g| format!("allow = {}\n", list(&g)))),
        maybe(subset(PATH_GLOBS).prop_map(|g| format!("deny = {}\n", list(&g)))),
        maybe(prop_oneof![
            Just("other_schemes = \"allow\"\n".to_string()),
            Just("other_schemes = \"deny\"\n".to_string()),
            subset(SCHEMES).prop_map(|s| format!("other_schemes = {}\n", list(&s))),
        ]),
        maybe(
            proptest::sample::select(vec![10u64, 100, 1000])
                .prop_map(|n| format!("max_bytes = {n}\n")),
        ),
        maybe(subset(MIMES).prop_map(|m| format!("mime = {}\n", list(&m)))),
    );
    let tools = (
        maybe(subset(TOOLS).prop_map(|t| format!("deny = {}\n", list(&t)))),
        maybe(subset(TOOLS).prop_map(|t| format!("writing = {}\n", list(&t)))),
        maybe(proptest::bool::ANY.prop_map(|b| format!("read_only = {b}\n"))),
    );
    (top, roots, resources, tools).prop_map(|(top, (ra, rd), (sa, sd, sc, mb, mi), (td, tw, ro))| {
        format!(
            "version = 1\n{top}[roots]\n{ra}{rd}[resources]\n{sa}{sd}{sc}{mb}{mi}[tools]\n{td}{tw}{ro}"
        )
    })
}

fn load(layers: &[&String]) -> Option<Policy> {
    let l: Vec<(String, String)> = layers
        .iter()
        .enumerate()
        .map(|(i, t)| (format!("l{i}.toml"), (*t).clone()))
        .collect();
    Policy::from_sources_with_home(&l, Some(HOME)).ok()
}

/// Every denial (and every block) of `narrow` also exists in `wide` ... inverted: every
/// probe `before` denies, `after` must deny too.
fn assert_never_widens(
    before: &Policy,
    after: &Policy,
    check_blocks: bool,
) -> Result<(), TestCaseError> {
    let mut pairs = Vec::new();
    for s in PROBE_SCHEMES {
        for p in PATHS {
            pairs.push((
                format!("resource {s} {p}"),
                before.decide_resource(s, Some(p)),
                after.decide_resource(s, Some(p)),
            ));
        }
        pairs.push((
            format!("resource {s} no path"),
            before.decide_resource(s, None),
            after.decide_resource(s, None),
        ));
    }
    for p in PATHS {
        pairs.push((
            format!("root {p}"),
            before.decide_root(p),
            after.decide_root(p),
        ));
    }
    for t in PROBE_TOOLS {
        pairs.push((
            format!("tool {t}"),
            before.decide_tool(t),
            after.decide_tool(t),
        ));
    }
    for m in PROBE_MIMES {
        for n in PROBE_SIZES {
            pairs.push((
                format!("content {m:?} {n}"),
                before.decide_content(*m, *n),
                after.decide_content(*m, *n),
            ));
        }
    }
    for (what, b, a) in pairs {
        prop_assert!(b.allow || !a.allow, "{what}: deny {b:?} became allow {a:?}");
        if check_blocks {
            prop_assert!(
                !before.blocks(&b) || after.blocks(&a),
                "{what}: a block became a pass ({:?} -> {:?})",
                before.mode(),
                after.mode()
            );
        }
    }
    Ok(())
}

#[test]
fn adding_a_layer_never_turns_a_deny_into_an_allow() {
    let loaded = AtomicUsize::new(0);
    let total = AtomicUsize::new(0);
    // 200 cases by default (a debug build compiles ~1000 policies for that);
    // PROPTEST_CASES raises it for a longer run.
    let cases = std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(200);
    let mut runner = TestRunner::new(Config {
        cases,
        failure_persistence: None,
        ..Config::default()
    });
    runner
        .run(&(layer(), layer(), layer()), |(a, b, c)| {
            total.fetch_add(1, Ordering::Relaxed);
            let Some(pa) = load(&[&a]) else {
                return Ok(());
            };
            let Some(pab) = load(&[&a, &b]) else {
                return Ok(());
            };
            loaded.fetch_add(1, Ordering::Relaxed);
            // The earlier stack's denials and blocks survive the new layer.
            assert_never_widens(&pa, &pab, true)?;
            // So do the new layer's own denials (deny anywhere wins; allow-lists
            // intersect). Blocks are not compared here: a first layer may choose audit.
            if let Some(pb) = load(&[&b]) {
                assert_never_widens(&pb, &pab, false)?;
            }
            // And a third layer on top.
            if let Some(pabc) = load(&[&a, &b, &c]) {
                assert_never_widens(&pab, &pabc, true)?;
                assert_never_widens(&pa, &pabc, true)?;
            }
            Ok(())
        })
        .unwrap();
    let (l, t) = (loaded.into_inner(), total.into_inner());
    // Guard against a vacuous pass: enough generated stacks must actually load.
    assert!(
        l * 5 >= t,
        "only {l} of {t} generated two-layer stacks loaded"
    );
    eprintln!("{l} of {t} two-layer stacks loaded and were compared");
}

proptest! {
    #![proptest_config(Config { cases: 1000, failure_persistence: None, ..Config::default() })]

    /// Arbitrary text never panics the loader (errors are fine).
    #[test]
    fn arbitrary_text_never_panics(text in "\\PC{0,200}") {
        let _ = Policy::from_sources_with_home(&[("p.toml".into(), text)], Some(HOME));
    }

    /// Mutations of a valid policy never panic either, and every error is located.
    #[test]
    fn mutated_policies_never_panic(base in layer(), cut in 0usize..400, insert in "[\\[\\]\"={},.~$*/\\\\a-z0-9 \n]{0,8}") {
        let mut text = base;
        let at = text.char_indices().map(|(i, _)| i).nth(cut % text.chars().count().max(1)).unwrap_or(0);
        text.insert_str(at, &insert);
        if let Err(e) = Policy::from_sources_with_home(&[("p.toml".into(), text)], Some(HOME)) {
            for err in &e.0 {
                prop_assert!(err.line.is_some(), "unlocated error: {err}");
            }
        }
    }
}
