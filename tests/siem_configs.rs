//! The shipper configurations of docs/siem.md (issue 15). Vector and the OpenTelemetry
//! Collector are not in the registries the test peers come from, so they are not run here;
//! this checks what can be checked without them: the files parse and hold the parts the
//! page explains, the page shows the files' contents, and every include glob, matched per
//! file name as the shippers match it, takes exactly the log files a real `rootfence run`
//! with rotation writes (not its lock file, not the checkpoint file for the log source).

mod common;

use std::collections::BTreeSet;
use std::path::Path;
use std::process::Command;

use common::{Proxy, rootfence, tempdir, test_server};

const DIR: &str = env!("CARGO_MANIFEST_DIR");

fn read(rel: &str) -> String {
    std::fs::read_to_string(Path::new(DIR).join(rel)).unwrap()
}

/// The fenced block of `lang` that follows `heading` in docs/siem.md.
fn block(md: &str, heading: &str, lang: &str) -> String {
    let from = md.find(heading).unwrap_or_else(|| panic!("no {heading}"));
    let rest = &md[from..];
    let open = format!("```{lang}\n");
    let start = rest.find(&open).unwrap() + open.len();
    let end = rest[start..].find("```").unwrap();
    rest[start..start + end].to_owned()
}

/// Lines without comments and trailing blanks.
fn lines(text: &str) -> BTreeSet<String> {
    text.lines()
        .map(|l| match l.find(" #") {
            Some(i) if !l.trim_start().starts_with('#') => l[..i].trim_end().to_owned(),
            _ => l.trim_end().to_owned(),
        })
        .filter(|l| !l.trim().is_empty() && !l.trim_start().starts_with('#'))
        .collect()
}

/// A glob's file-name part matched against a file name (`*` within a name, as both Vector's
/// glob and the collector's doublestar match it).
fn name_matches(glob: &str, name: &str) -> bool {
    let pat = glob.rsplit('/').next().unwrap();
    globset::GlobBuilder::new(pat)
        .literal_separator(true)
        .build()
        .unwrap()
        .compile_matcher()
        .is_match(name)
}

/// The file names a real rootfence writes: a few sessions, rotation, checkpoints.
fn real_names() -> Vec<String> {
    let t = tempdir();
    let keys = t.path().join("keys");
    std::fs::create_dir(&keys).unwrap();
    let key = keys.join("ck.key");
    assert!(
        Command::new(rootfence())
            .args(["audit", "keygen"])
            .arg(&key)
            .status()
            .unwrap()
            .success()
    );
    let state = t.path().join("rootfence");
    let policy = t.path().join("p.toml");
    std::fs::write(
        &policy,
        format!(
            "version = 1\n[audit]\npath = {:?}\nrotate_bytes = 1500\ncheckpoint_key = {:?}\n",
            state.join("audit.jsonl").display().to_string(),
            key.display().to_string()
        ),
    )
    .unwrap();
    for _ in 0..3 {
        let mut p = Proxy::run(&["--policy", policy.to_str().unwrap()], &[&test_server()]);
        p.initialize("2025-06-18");
        p.close_stdin();
        assert_eq!(p.exit_code(), 0, "{}", p.stderr());
    }
    let mut names: Vec<String> = std::fs::read_dir(&state)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    names.sort();
    names
}

#[test]
fn vector_and_collector_configs_take_exactly_the_log_files() {
    let vector: toml::Table = read("docs/siem/vector.toml").parse().expect("valid TOML");
    let src = &vector["sources"]["rootfence_audit"];
    assert_eq!(src["type"].as_str(), Some("file"));
    let v_log = src["include"][0].as_str().unwrap().to_owned();
    let v_ck = vector["sources"]["rootfence_checkpoints"]["include"][0]
        .as_str()
        .unwrap()
        .to_owned();
    let remap = &vector["transforms"]["rootfence_parse"];
    assert_eq!(remap["type"].as_str(), Some("remap"));
    let vrl = remap["source"].as_str().unwrap();
    assert!(vrl.contains("parse_json!(string!(.message))"), "{vrl}");
    assert!(vector["sinks"]["siem"]["inputs"].is_array());

    let otel = read("docs/siem/otelcol-filelog.yaml");
    let includes: Vec<String> = otel
        .lines()
        .filter_map(|l| l.trim().strip_prefix("include: ["))
        .map(|l| l.trim_end_matches(']').to_owned())
        .collect();
    assert_eq!(includes.len(), 2, "{includes:?}");
    for part in [
        "filelog/rootfence:",
        "type: json_parser",
        "parse_from: attributes.ts",
        "storage: file_storage",
        "receivers: [filelog/rootfence, filelog/rootfence_checkpoints]",
    ] {
        assert!(otel.contains(part), "the collector config lacks {part}");
    }

    let names = real_names();
    assert!(names.iter().any(|n| n == "audit.jsonl"), "{names:?}");
    assert!(
        names
            .iter()
            .filter(|n| n.starts_with("audit.jsonl."))
            .count()
            >= 2,
        "rotated: {names:?}"
    );
    assert!(
        names.iter().any(|n| n == "audit.checkpoints.jsonl"),
        "{names:?}"
    );
    assert!(names.iter().any(|n| n.ends_with(".lock")), "{names:?}");
    for (log_glob, ck_glob) in [(&v_log, &v_ck), (&includes[0], &includes[1])] {
        for n in &names {
            let is_log = n == "audit.jsonl" || n.starts_with("audit.jsonl.0");
            assert_eq!(name_matches(log_glob, n), is_log, "{log_glob} on {n}");
            assert_eq!(
                name_matches(ck_glob, n),
                n == "audit.checkpoints.jsonl",
                "{ck_glob} on {n}"
            );
        }
    }
}

#[test]
fn the_page_shows_the_files() {
    let md = read("docs/siem.md");
    for (heading, lang, file) in [
        ("## Vector", "toml", "docs/siem/vector.toml"),
        (
            "## OpenTelemetry Collector",
            "yaml",
            "docs/siem/otelcol-filelog.yaml",
        ),
    ] {
        let shown = lines(&block(&md, heading, lang));
        let full = lines(&read(file));
        let missing: Vec<&String> = shown.difference(&full).collect();
        assert!(
            missing.is_empty(),
            "{file}: the page shows lines the file lacks: {missing:?}"
        );
    }
    let rsyslog = lines(&read("docs/siem/rsyslog.conf"));
    let shown = lines(&block(&md, "A receiver: rsyslog", ""));
    let missing: Vec<&String> = shown.difference(&rsyslog).collect();
    assert!(missing.is_empty(), "rsyslog.conf: {missing:?}");
}
