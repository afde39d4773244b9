//! Layering rules: what a later layer may and may not do, deny-wins, allow-list
//! intersection, provenance (file, line, rule) of decisions, and the fail-closed edges of
//! the decision functions.

use std::time::Duration;

use rootfence::audit::FsyncPolicy as Fsync;
use rootfence::policy::{
    Access, ErrorKind, Mode, Network, Policy, PolicyErrors, Reason, SchemeStance,
};

const HOME: &str = "/home/u";

fn layers(texts: &[&str]) -> Result<Policy, PolicyErrors> {
    let l: Vec<(String, String)> = texts
        .iter()
        .enumerate()
        .map(|(i, t)| (format!("l{i}.toml"), format!("version = 1\n{t}")))
        .collect();
    Policy::from_sources_with_home(&l, Some(HOME))
}

fn ok(texts: &[&str]) -> Policy {
    layers(texts).unwrap_or_else(|e| panic!("{e}"))
}

fn kinds(texts: &[&str]) -> Vec<ErrorKind> {
    match layers(texts) {
        Ok(_) => panic!("{texts:?} unexpectedly valid"),
        Err(e) => e.0.iter().map(|e| e.kind).collect(),
    }
}

#[test]
fn narrowing_is_accepted_for_every_ordered_setting() {
    let p = ok(&[
        "mode = \"audit\"\n\
         [roots]\non_timeout = \"static\"\nsymlinks = \"follow-within-root\"\nhardlinks = \"allow\"\n\
         [resources]\nread = \"forward\"\nmax_bytes = 100\nmime = [\"text/*\", \"application/json\"]\n\
         other_schemes = [\"https\", \"ui\"]\n\
         [tools]\nread_only = false\n\
         [audit]\nfsync = \"interval\"\nfsync_interval_ms = 500\non_failure = \"continue\"\nlog_allowed = false\n\
         [sandbox]\nmode = \"off\"\nnetwork = [80, 443]\nenv = [\"LC_*\", \"HOME\"]\nroot_access = \"read-write\"\n\
         read = [\"/opt\"]\nwrite = [\"/tmp/w\"]\n\
         [sandbox.rlimits]\nnofile = 100\naddress_space = \"1 GiB\"\ncpu_seconds = 60\nprocesses = 10\n",
        "mode = \"enforce\"\n\
         [roots]\non_timeout = \"deny\"\nsymlinks = \"never\"\nhardlinks = \"deny\"\n\
         [resources]\nread = \"serve\"\nmax_bytes = 50\nmime = [\"text/plain\"]\nother_schemes = [\"ui\"]\n\
         [tools]\nread_only = true\n\
         [audit]\nfsync_interval_ms = 100\non_failure = \"stop\"\nlog_allowed = true\n\
         [sandbox]\nmode = \"strict\"\nnetwork = [443]\nenv = [\"LC_ALL\"]\nroot_access = \"read-only\"\n\
         read = [\"/opt/tool\", \"/tmp/w/sub\"]\nwrite = [\"/tmp/w/x\"]\n\
         [sandbox.rlimits]\nnofile = 50\naddress_space = \"512 MiB\"\ncpu_seconds = 30\nprocesses = 5\n",
        "[audit]\nfsync = \"always\"\n[sandbox]\nnetwork = \"deny\"\nenv = []\n",
    ]);
    assert_eq!(p.mode(), Mode::Enforce);
    assert_eq!(p.resources().max_bytes, Some(50));
    assert_eq!(
        p.resources().mime.as_deref(),
        Some(&["text/plain".to_string()][..])
    );
    assert_eq!(
        p.resources().other_schemes,
        SchemeStance::Only(vec!["ui".into()])
    );
    assert_eq!(p.audit().fsync, Fsync::Always);
    assert_eq!(p.sandbox().network, Network::Deny);
    // Grants accumulate; a later entry inside an earlier grant is accepted (it adds
    // nothing), and a later layer cannot take an earlier grant back.
    assert_eq!(p.sandbox().env, ["LC_*", "HOME", "LC_ALL"]);
    assert_eq!(p.sandbox().access_for_root("/x"), Access::ReadOnly);
    assert_eq!(p.sandbox().rlimits.address_space, Some(512 << 20));
    assert_eq!(p.sandbox().write.len(), 2);
    assert_eq!(p.sandbox().read.len(), 3);
}

#[test]
fn every_widening_is_rejected() {
    // (earlier layer, later layer) pairs, each a single widening.
    let cases: &[(&str, &str)] = &[
        ("mode = \"enforce\"", "mode = \"audit\""),
        (
            "[roots]\nsymlinks = \"never\"",
            "[roots]\nsymlinks = \"follow-within-root\"",
        ),
        (
            "[roots]\non_timeout = \"deny\"",
            "[roots]\non_timeout = \"static\"",
        ),
        (
            "[roots]\nhardlinks = \"deny\"",
            "[roots]\nhardlinks = \"allow\"",
        ),
        (
            "[roots]\nallow = [\"~/a/**\"]",
            "[roots]\nallow = [\"~/**\"]",
        ),
        (
            "[roots]\nallow = [\"~/a/**\"]",
            "[roots]\nallow = [\"~/ab/**\"]",
        ),
        (
            "[roots]\nallow = [\"~/a\"]",
            "[roots]\nallow = [\"~/a/**\"]",
        ),
        (
            "[resources]\nallow = [\"/srv/**\"]",
            "[resources]\nallow = [\"**/*.rs\"]",
        ),
        (
            "[resources]\nother_schemes = \"deny\"",
            "[resources]\nother_schemes = [\"https\"]",
        ),
        (
            "[resources]\nother_schemes = [\"https\"]",
            "[resources]\nother_schemes = \"allow\"",
        ),
        (
            "[resources]\nother_schemes = [\"https\"]",
            "[resources]\nother_schemes = [\"HTTP\"]",
        ),
        ("[resources]\nmax_bytes = 10", "[resources]\nmax_bytes = 11"),
        (
            "[resources]\nmime = [\"text/plain\"]",
            "[resources]\nmime = [\"text/*\"]",
        ),
        (
            "[resources]\nread = \"serve\"",
            "[resources]\nread = \"verify\"",
        ),
        (
            "[resources]\nread = \"verify\"",
            "[resources]\nread = \"forward\"",
        ),
        ("[tools]\nread_only = true", "[tools]\nread_only = false"),
        (
            "[audit]\nfsync = \"always\"",
            "[audit]\nfsync = \"denials\"",
        ),
        (
            "[audit]\nfsync = \"denials\"",
            "[audit]\nfsync = \"interval\"",
        ),
        (
            "[audit]\nfsync = \"interval\"\nfsync_interval_ms = 10",
            "[audit]\nfsync = \"interval\"\nfsync_interval_ms = 20",
        ),
        (
            "[audit]\nfsync = \"interval\"",
            "[audit]\nfsync = \"never\"",
        ),
        (
            "[audit]\non_failure = \"stop\"",
            "[audit]\non_failure = \"continue\"",
        ),
        (
            "[audit]\nlog_allowed = true",
            "[audit]\nlog_allowed = false",
        ),
        (
            "[sandbox]\nmode = \"strict\"",
            "[sandbox]\nmode = \"best-effort\"",
        ),
        (
            "[sandbox]\nmode = \"best-effort\"",
            "[sandbox]\nmode = \"off\"",
        ),
        (
            "[sandbox]\nnetwork = \"deny\"",
            "[sandbox]\nnetwork = [443]",
        ),
        (
            "[sandbox]\nnetwork = [443]",
            "[sandbox]\nnetwork = [443, 80]",
        ),
        (
            "[sandbox]\nnetwork = [443]",
            "[sandbox]\nnetwork = \"allow\"",
        ),
        (
            "[sandbox]\nroot_access = \"read-only\"",
            "[sandbox]\nroot_access = \"read-write\"",
        ),
        (
            "[sandbox]\nread = [\"/opt/a\"]",
            "[sandbox]\nread = [\"/opt/ab\"]",
        ),
        (
            "[sandbox]\nread = [\"/opt/a\"]",
            "[sandbox]\nwrite = [\"/opt/a\"]",
        ),
        (
            "[sandbox]\nwrite = [\"/opt/a\"]",
            "[sandbox]\nwrite = [\"/opt\"]",
        ),
        ("[sandbox]\nenv = [\"LC_*\"]", "[sandbox]\nenv = [\"LANG\"]"),
        (
            "[sandbox]\nenv = [\"LC_ALL\"]",
            "[sandbox]\nenv = [\"LC_*\"]",
        ),
        (
            "[sandbox.rlimits]\nnofile = 10",
            "[sandbox.rlimits]\nnofile = 11",
        ),
        (
            "[sandbox.rlimits]\ncpu_seconds = 10",
            "[sandbox.rlimits]\ncpu_seconds = 11",
        ),
        (
            "[sandbox.rlimits]\nprocesses = 10",
            "[sandbox.rlimits]\nprocesses = 11",
        ),
        (
            "[sandbox.rlimits]\naddress_space = \"1 MiB\"",
            "[sandbox.rlimits]\naddress_space = \"2 MiB\"",
        ),
        // Past a built-in default the first layer left alone.
        ("", "[roots]\nhardlinks = \"allow\""),
        ("", "[sandbox]\nenv = [\"PATH\"]"),
        ("", "[sandbox]\nread = [\"/\"]"),
    ];
    for (a, b) in cases {
        assert_eq!(kinds(&[a, b]), [ErrorKind::Widening], "{a:?} then {b:?}");
        // The same change as the only layer is fine.
        ok(&[b]);
    }
}

#[test]
fn widening_error_names_both_files_and_lines() {
    let e = layers(&[
        "[roots]\nallow = [\"~/work/**\"]",
        "\n\n[roots]\nallow = [\"~/**\"]",
    ])
    .unwrap_err();
    let err = &e.0[0];
    assert_eq!(err.file.as_ref(), "l1.toml");
    assert_eq!((err.line, err.column), (Some(5), Some(10)));
    let (_, rel) = err.related.as_ref().unwrap();
    assert_eq!(rel.file.as_deref(), Some("l0.toml"));
    assert_eq!(rel.line, Some(3));
    assert!(rel.rule.contains("~/work/**"), "{}", rel.rule);
    let text = e.to_string();
    assert!(
        text.contains("l1.toml:5:10") && text.contains("l0.toml:3:1"),
        "{text}"
    );
}

#[test]
fn a_deny_anywhere_wins() {
    // An allow naming exactly a denied file cannot bring it back, in any order.
    for (a, b) in [
        (
            "[resources]\ndeny = [\"**/.env\"]",
            "[resources]\nallow = [\"/srv/app/.env\"]",
        ),
        (
            "[resources]\nallow = [\"/srv/**\"]",
            "[resources]\ndeny = [\"**/.env\"]",
        ),
        (
            "[resources]\nallow = [\"/srv/**\"]\ndeny = [\"**/.env\"]",
            "",
        ),
    ] {
        let p = ok(&[a, b]);
        let d = p.decide_resource("file", Some("/srv/app/.env"));
        assert!(!d.allow, "{a:?} + {b:?}: {d:?}");
        assert_eq!(d.reason, Reason::PolicyDeny);
        assert!(d.provenance.rule.contains("**/.env"));
    }
    // Same for roots and tools.
    let p = ok(&[
        "[roots]\ndeny = [\"/srv/x\"]",
        "[roots]\nallow = [\"/srv/x\"]",
    ]);
    assert!(!p.decide_root("/srv/x").allow);
    let p = ok(&["[tools]\ndeny = [\"rm_*\"]", "[tools]\nread_only = false"]);
    assert_eq!(p.decide_tool("rm_rf").reason, Reason::ToolDenied);
}

#[test]
fn allow_lists_intersect_and_report_the_right_layer() {
    let p = ok(&[
        "[resources]\nallow = [\"/srv/**\", \"/opt/**\"]",
        "[resources]\nallow = [\"/srv/app/**\"]",
    ]);
    let d = p.decide_resource("file", Some("/srv/app/main.rs"));
    assert!(d.allow);
    assert_eq!(d.reason, Reason::PolicyAllow);
    assert_eq!(d.provenance.file.as_deref(), Some("l1.toml"));
    assert_eq!(d.provenance.line, Some(3));
    // Inside layer 0's list, outside layer 1's: refused by layer 1's list.
    let d = p.decide_resource("file", Some("/opt/tool"));
    assert_eq!((d.allow, d.reason), (false, Reason::NotAllowed));
    assert_eq!(d.provenance.file.as_deref(), Some("l1.toml"));
    // Outside both: refused by layer 0's list, the first that fails.
    let d = p.decide_resource("file", Some("/etc/passwd"));
    assert_eq!(d.provenance.file.as_deref(), Some("l0.toml"));
    // The directory itself is inside `dir/**`.
    assert!(p.decide_resource("file", Some("/srv/app")).allow);
    // String-prefix siblings are not.
    assert!(!p.decide_resource("file", Some("/srv/app_evil/x")).allow);
    assert!(!p.decide_resource("file", Some("/srv/ap")).allow);
}

#[test]
fn allow_entry_must_be_provably_inside_an_earlier_entry() {
    for (earlier, later) in [
        ("~/work/**", "~/work/app/**"),
        ("~/work/**", "~/work/app/src/*.rs"),
        ("~/work/**", "~/work"),
        ("~/work/**", "~/work/app"),
        ("~/*/**", "~/work/app/**"),
        ("/**", "/etc/**"),
        ("**", "**/*.rs"),
        ("/srv/a/*.rs", "/srv/a/main.rs"),
    ] {
        ok(&[
            &format!("[roots]\nallow = [\"{earlier}\"]"),
            &format!("[roots]\nallow = [\"{later}\"]"),
        ]);
    }
    for (earlier, later) in [
        ("~/work/**", "~/work2/**"),
        ("~/work/**", "**/work/**"),
        ("~/work/app", "~/work/app/**"),
        ("/srv/a/*.rs", "/srv/a/*"),
        ("/srv/a/*.rs", "/srv/a/main.go"),
    ] {
        assert_eq!(
            kinds(&[
                &format!("[roots]\nallow = [\"{earlier}\"]"),
                &format!("[roots]\nallow = [\"{later}\"]"),
            ]),
            [ErrorKind::Widening],
            "{earlier} then {later}"
        );
    }
}

#[test]
fn deny_side_rules_ignore_case_allow_lists_do_not() {
    let p = ok(&[
        "[resources]\ndeny = [\"**/.env\"]\nallow = [\"/srv/App/**\"]\n\
         [tools]\ndeny = [\"run_shell\"]",
    ]);
    // A case-insensitive filesystem opens `.env` for `.ENV`: denied either way.
    assert!(!p.decide_resource("file", Some("/srv/App/.ENV")).allow);
    assert!(!p.decide_resource("file", Some("/srv/App/.Env")).allow);
    // The allow-list only allows what it says.
    assert!(p.decide_resource("file", Some("/srv/App/x")).allow);
    assert!(!p.decide_resource("file", Some("/srv/app/x")).allow);
    assert_eq!(p.decide_tool("Run_Shell").reason, Reason::ToolDenied);
}

#[test]
fn fixed_settings_may_be_repeated_not_changed() {
    ok(&[
        "[roots]\nlist_timeout_ms = 100",
        "[roots]\nlist_timeout_ms = 100",
    ]);
    ok(&["", "[roots]\nlist_timeout_ms = 100"]);
    assert_eq!(
        kinds(&[
            "[audit]\nrotate_bytes = \"1 MiB\"",
            "[audit]\nrotate_bytes = \"2 MiB\""
        ]),
        [ErrorKind::Conflict]
    );
    let p = ok(&["", "[roots]\nlist_timeout_ms = 100"]);
    assert_eq!(p.roots().list_timeout, Duration::from_millis(100));
}

#[test]
fn fsync_interval_is_inherited_and_may_only_shrink() {
    let p = ok(&[
        "[audit]\nfsync = \"interval\"\nfsync_interval_ms = 500",
        "[audit]\nfsync = \"interval\"",
    ]);
    assert_eq!(p.audit().fsync, Fsync::Interval(Duration::from_millis(500)));
    let p = ok(&["[audit]\nfsync = \"interval\""]);
    assert_eq!(
        p.audit().fsync,
        Fsync::Interval(Duration::from_millis(1000))
    );
    assert_eq!(
        kinds(&["[audit]\nfsync_interval_ms = 5"]),
        [ErrorKind::BadValue],
        "an interval without fsync = \"interval\""
    );
}

#[test]
fn static_roots_are_replaced_and_bounded_by_root_rules() {
    let p = ok(&[
        "[roots]\nallow = [\"~/work/**\"]\nstatic = [\"~/work/a\", \"~/work/b\"]",
        "[roots]\nstatic = [\"~/work/c\"]",
    ]);
    let s: Vec<&str> = p
        .roots()
        .static_roots
        .iter()
        .map(|r| r.path.as_str())
        .collect();
    assert_eq!(s, ["/home/u/work/c"]);
    assert_eq!(
        p.roots().static_roots[0].provenance.file.as_deref(),
        Some("l1.toml")
    );
    // Outside an earlier allow-list: an error at the static root.
    assert_eq!(
        kinds(&[
            "[roots]\nallow = [\"~/work/**\"]",
            "[roots]\nstatic = [\"~/other\"]"
        ]),
        [ErrorKind::BadPath]
    );
    // Narrowed away by a later layer's deny: dropped, not an error.
    let p = ok(&[
        "[roots]\nstatic = [\"/srv/a\", \"/srv/b\"]",
        "[roots]\ndeny = [\"/srv/b\"]",
    ]);
    let s: Vec<&str> = p
        .roots()
        .static_roots
        .iter()
        .map(|r| r.path.as_str())
        .collect();
    assert_eq!(s, ["/srv/a"]);
}

#[test]
fn provenance_points_at_the_rule() {
    let p = ok(&["mode = \"enforce\"\n[resources]\ndeny = [\n  \"**/a\",\n  \"**/*.pem\",\n]\n"]);
    let d = p.decide_resource("file", Some("/x/k.pem"));
    assert_eq!(d.provenance.file.as_deref(), Some("l0.toml"));
    assert_eq!(d.provenance.layer, Some(0));
    assert_eq!((d.provenance.line, d.provenance.column), (Some(6), Some(3)));
    assert_eq!(d.provenance.rule, "resources.deny = \"**/*.pem\"");
    assert_eq!(
        d.provenance.to_string(),
        "l0.toml:6: resources.deny = \"**/*.pem\""
    );
    let d = p.decide_resource("file", Some("/x/ok"));
    assert_eq!(
        (d.reason, d.provenance.rule.as_str()),
        (Reason::DefaultAllow, "default")
    );
    assert!(d.provenance.is_default());
}

#[test]
fn audit_mode_decides_but_does_not_block() {
    let p = ok(&["mode = \"audit\"\n[resources]\ndeny = [\"**/.env\"]"]);
    let d = p.decide_resource("file", Some("/a/.env"));
    assert!(!d.allow);
    assert!(!p.blocks(&d));
    let p = ok(&[
        "mode = \"audit\"",
        "mode = \"enforce\"\n[resources]\ndeny = [\"**/.env\"]",
    ]);
    assert!(p.blocks(&p.decide_resource("file", Some("/a/.env"))));
}

#[test]
fn tool_paths_accumulate_across_layers() {
    let p = ok(&[
        "[[tools.paths]]\ntool = \"read_*\"\npointers = [\"/path\"]",
        "[[tools.paths]]\ntool = \"read_file\"\npointers = [\"/extra/0\"]\nkind = \"uri\"",
    ]);
    let ptrs: Vec<&str> = p
        .tool_path_pointers("read_file", None)
        .iter()
        .map(|t| t.pointer.as_str())
        .collect();
    assert_eq!(ptrs, ["/path", "/extra/0"]);
    assert_eq!(
        p.tool_path_pointers("READ_X", None).len(),
        1,
        "tool globs ignore case"
    );
    assert!(p.tool_path_pointers("write", None).is_empty());
}

#[test]
fn undecidable_inputs_are_denied() {
    let p = ok(&[""]);
    for path in [
        None,
        Some(""),
        Some("relative"),
        Some("/a/../b"),
        Some("/a/./b"),
        Some("/a//b"),
        Some("/a/"),
        Some("/a\0b"),
    ] {
        let d = p.decide_resource("file", path);
        assert_eq!(
            (d.allow, d.reason),
            (false, Reason::NotCanonical),
            "{path:?}"
        );
    }
    for bad in ["", "1x", "a b", "x:y"] {
        assert_eq!(
            p.decide_resource(bad, None).reason,
            Reason::NotCanonical,
            "{bad:?}"
        );
    }
    assert!(!p.decide_root("rel").allow);
    assert!(p.decide_root("/").allow, "no root rules in an empty policy");
}

#[test]
fn home_with_glob_characters_is_literal() {
    let l = [(
        "p.toml".to_string(),
        "version = 1\n[roots]\nallow = [\"~/code/**\"]\n".to_string(),
    )];
    let p = Policy::from_sources_with_home(&l, Some("/home/a*b")).unwrap();
    assert!(p.decide_root("/home/a*b/code/x").allow);
    assert!(!p.decide_root("/home/aXb/code/x").allow);
}

#[test]
fn content_limits() {
    let p = ok(&["[resources]\nmax_bytes = 10\nmime = [\"text/*\", \"application/json\"]"]);
    assert!(
        p.decide_content(Some("text/plain; charset=utf-8"), 10)
            .allow
    );
    assert!(p.decide_content(Some("Application/JSON"), 1).allow);
    assert_eq!(
        p.decide_content(Some("text/plain"), 11).reason,
        Reason::TooLarge
    );
    assert_eq!(
        p.decide_content(Some("image/png"), 1).reason,
        Reason::MimeDenied
    );
    assert_eq!(
        p.decide_content(None, 1).reason,
        Reason::MimeDenied,
        "no MIME: fail closed"
    );
    let p = ok(&[""]);
    assert_eq!(
        p.decide_content(None, u64::MAX).reason,
        Reason::DefaultAllow
    );
}

#[test]
fn schemes_are_case_insensitive_and_file_is_never_listed() {
    let p = ok(&["[resources]\nother_schemes = [\"HTTPS\"]"]);
    assert!(p.decide_resource("https", None).allow);
    assert!(p.decide_resource("HtTpS", None).allow);
    assert!(!p.decide_resource("http", None).allow);
    // file: is always path-checked, whatever the stance.
    assert_eq!(p.decide_resource("FILE", None).reason, Reason::NotCanonical);
    assert_eq!(
        kinds(&["[resources]\nother_schemes = [\"File\"]"]),
        [ErrorKind::BadValue]
    );
}

/// Tool names are not paths: `*` in a tool glob also spans `/`, so a hostile server cannot
/// dodge `*shell*` with a tool named `x/run_shell` (path globs keep `*` within a component).
#[test]
fn regression_tool_glob_star_spans_slash_in_names() {
    let p = ok(&[
        "[tools]\ndeny = [\"*shell*\"]\nwriting = [\"write_*\"]\nread_only = true\n\
         [[tools.paths]]\ntool = \"read_*\"\npointers = [\"/path\"]",
    ]);
    assert_eq!(p.decide_tool("x/run_shell").reason, Reason::ToolDenied);
    assert_eq!(p.decide_tool("write_/etc").reason, Reason::ReadOnly);
    assert_eq!(p.tool_path_pointers("read_a/b", None).len(), 1);
    // Path globs are unchanged.
    let p = ok(&["[resources]\ndeny = [\"/srv/*.pem\"]"]);
    assert!(p.decide_resource("file", Some("/srv/a/b.pem")).allow);
}
