//! Every file in `policies/` loads and behaves as its comments say: a table of URIs, roots,
//! tools and content items with the expected decision, reason and deciding rule, per
//! policy (and for the org + project pair as layers).

use std::path::PathBuf;
use std::time::Duration;

use rootfence::audit::{FsyncPolicy as Fsync, OnFailure};
use rootfence::policy::{
    Access, ArgKind, HardlinkStance, Mode, Network, Policy, ReadStance, RootsFallback, SandboxMode,
    SchemeStance, SymlinkStance,
};

const HOME: &str = "/home/u";

fn load(files: &[&str]) -> Policy {
    let root = env!("CARGO_MANIFEST_DIR");
    let paths: Vec<PathBuf> = files
        .iter()
        .map(|f| PathBuf::from(format!("{root}/policies/{f}")))
        .collect();
    match Policy::load_with_home(&paths, Some(HOME)) {
        Ok(p) => p,
        Err(e) => panic!("{files:?} does not load:\n{e}"),
    }
}

/// One row: what is decided, expected allow, expected reason code, and a fragment the
/// deciding rule must contain (with the file it must come from, or "" for a default).
enum Q {
    Uri(&'static str),
    Root(&'static str),
    Tool(&'static str),
    Content(Option<&'static str>, u64),
}

struct Row(Q, bool, &'static str, &'static str, &'static str);

fn check(policy: &Policy, rows: &[Row]) {
    for Row(q, allow, reason, rule, file) in rows {
        let (what, d) = match q {
            Q::Uri(u) => {
                let (scheme, rest) = u.split_once(':').unwrap();
                let path = rest.strip_prefix("//").map(|p| p.to_string());
                (
                    u.to_string(),
                    policy.decide_resource(scheme, path.as_deref()),
                )
            }
            Q::Root(p) => (format!("root {p}"), policy.decide_root(p)),
            Q::Tool(t) => (format!("tool {t}"), policy.decide_tool(t)),
            Q::Content(m, n) => (format!("content {m:?} {n}"), policy.decide_content(*m, *n)),
        };
        assert_eq!(d.allow, *allow, "{what}: {d:?}");
        assert_eq!(d.reason.as_str(), *reason, "{what}: {d:?}");
        assert!(
            d.provenance.rule.contains(rule),
            "{what}: rule {:?} does not contain {rule:?}",
            d.provenance.rule
        );
        let got_file = d.provenance.file.as_deref().unwrap_or("");
        assert!(
            got_file.ends_with(file),
            "{what}: decided by {got_file:?}, expected {file:?}"
        );
        if !file.is_empty() {
            assert!(d.provenance.line.is_some(), "{what}: no line");
        }
    }
}

const MIB: u64 = 1 << 20;

#[test]
fn default_policy_behaves_as_commented() {
    let p = load(&["default.toml"]);
    let f = "default.toml";
    use Q::*;
    check(
        &p,
        &[
            // Ordinary project files pass.
            Row(
                Uri("file:///home/u/proj/src/main.rs"),
                true,
                "default_allow",
                "default",
                "",
            ),
            Row(
                Uri("file:///home/u/proj/.gitignore"),
                true,
                "default_allow",
                "default",
                "",
            ),
            Row(
                Uri("file:///home/u/proj/.github/ci.yml"),
                true,
                "default_allow",
                "default",
                "",
            ),
            Row(
                Uri("file:///home/u/proj/.envrc"),
                true,
                "default_allow",
                "default",
                "",
            ),
            Row(
                Uri("file:///home/u/proj/key.pem.txt"),
                true,
                "default_allow",
                "default",
                "",
            ),
            // Secrets are denied wherever they are.
            Row(
                Uri("file:///home/u/proj/.env"),
                false,
                "policy_deny",
                "\"**/.env\"",
                f,
            ),
            Row(Uri("file:///.env"), false, "policy_deny", "\"**/.env\"", f),
            Row(
                Uri("file:///home/u/proj/.env.local"),
                false,
                "policy_deny",
                "\"**/.env.*\"",
                f,
            ),
            Row(
                Uri("file:///home/u/proj/certs/tls.pem"),
                false,
                "policy_deny",
                "*.pem",
                f,
            ),
            Row(
                Uri("file:///home/u/proj/tls.key"),
                false,
                "policy_deny",
                "*.key",
                f,
            ),
            Row(
                Uri("file:///home/u/proj/cert.p12"),
                false,
                "policy_deny",
                "*.p12",
                f,
            ),
            Row(
                Uri("file:///home/u/backup/id_rsa"),
                false,
                "policy_deny",
                "id_rsa*",
                f,
            ),
            // The earliest declared matching rule is reported.
            Row(
                Uri("file:///home/u/.ssh/id_ed25519"),
                false,
                "policy_deny",
                "id_ed25519*",
                f,
            ),
            Row(
                Uri("file:///home/u/.ssh/config"),
                false,
                "policy_deny",
                ".ssh/**",
                f,
            ),
            Row(
                Uri("file:///home/u/.ssh"),
                false,
                "policy_deny",
                ".ssh/**",
                f,
            ),
            Row(
                Uri("file:///home/u/.gnupg/pubring.kbx"),
                false,
                "policy_deny",
                ".gnupg",
                f,
            ),
            Row(
                Uri("file:///home/u/.aws/credentials"),
                false,
                "policy_deny",
                ".aws",
                f,
            ),
            Row(
                Uri("file:///home/u/.azure/x"),
                false,
                "policy_deny",
                ".azure",
                f,
            ),
            Row(
                Uri("file:///home/u/.config/gcloud/c.db"),
                false,
                "policy_deny",
                "gcloud",
                f,
            ),
            Row(
                Uri("file:///home/u/.kube/config"),
                false,
                "policy_deny",
                ".kube",
                f,
            ),
            Row(
                Uri("file:///home/u/.docker/config.json"),
                false,
                "policy_deny",
                "docker",
                f,
            ),
            Row(
                Uri("file:///home/u/.netrc"),
                false,
                "policy_deny",
                ".netrc",
                f,
            ),
            Row(
                Uri("file:///home/u/.git-credentials"),
                false,
                "policy_deny",
                "credentials",
                f,
            ),
            Row(
                Uri("file:///home/u/proj/.npmrc"),
                false,
                "policy_deny",
                ".npmrc",
                f,
            ),
            Row(
                Uri("file:///home/u/.pypirc"),
                false,
                "policy_deny",
                ".pypirc",
                f,
            ),
            Row(
                Uri("file:///home/u/vault.kdbx"),
                false,
                "policy_deny",
                "*.kdbx",
                f,
            ),
            Row(
                Uri("file:///home/u/proj/.git/config"),
                false,
                "policy_deny",
                ".git/**",
                f,
            ),
            Row(
                Uri("file:///home/u/proj/.git"),
                false,
                "policy_deny",
                ".git/**",
                f,
            ),
            // Non-file schemes are allowed by the explicit stance.
            Row(
                Uri("https://example.com/x"),
                true,
                "policy_allow",
                "other_schemes",
                f,
            ),
            Row(
                Uri("ui://app/index.html"),
                true,
                "policy_allow",
                "other_schemes",
                f,
            ),
            // Undecidable input is denied, fail closed.
            Row(
                Uri("file:relative/path"),
                false,
                "not_canonical",
                "undecidable",
                "",
            ),
            Row(
                Uri("file:///home/u/../etc/passwd"),
                false,
                "not_canonical",
                "undecidable",
                "",
            ),
            Row(
                Uri("file:///home/u//x"),
                false,
                "not_canonical",
                "undecidable",
                "",
            ),
            Row(Uri("1bad:x"), false, "not_canonical", "undecidable", ""),
            // Roots that are too broad are dropped.
            Row(Root("/"), false, "policy_deny", "roots.deny = \"/\"", f),
            Row(
                Root("/home/u"),
                false,
                "policy_deny",
                "roots.deny = \"~\"",
                f,
            ),
            Row(Root("/etc"), false, "policy_deny", "/etc/**", f),
            Row(Root("/etc/nginx"), false, "policy_deny", "/etc/**", f),
            Row(Root("/root"), false, "policy_deny", "/root/**", f),
            Row(
                Root("/root/proj"),
                false,
                "policy_deny",
                "roots.other_homes = \"/root/**\"",
                f,
            ),
            Row(Root("/proc/self"), false, "policy_deny", "/proc/**", f),
            Row(Root("/sys"), false, "policy_deny", "/sys/**", f),
            Row(Root("/dev"), false, "policy_deny", "/dev/**", f),
            Row(Root("/boot"), false, "policy_deny", "/boot/**", f),
            Row(Root("/home/u/.ssh"), false, "policy_deny", ".ssh/**", f),
            Row(Root("/home/u/proj"), true, "default_allow", "default", ""),
            Row(Root("/home/u/etc"), true, "default_allow", "default", ""),
            Row(Root("/etcetera"), true, "default_allow", "default", ""),
            // Writing tools are marked but allowed (read_only = false).
            Row(Tool("write_file"), true, "default_allow", "default", ""),
            Row(Tool("read_text_file"), true, "default_allow", "default", ""),
            // Content limit 16 MiB.
            Row(
                Content(Some("text/plain"), MIB),
                true,
                "policy_allow",
                "max_bytes",
                f,
            ),
            Row(
                Content(None, 16 * MIB),
                true,
                "policy_allow",
                "max_bytes",
                f,
            ),
            Row(Content(None, 16 * MIB + 1), false, "too_large", "16 MiB", f),
        ],
    );
    assert_eq!(p.mode(), Mode::Enforce);
    let r = p.roots();
    assert_eq!(r.list_timeout, Duration::from_secs(3));
    assert_eq!(r.on_timeout, RootsFallback::Static);
    assert_eq!(r.symlinks, SymlinkStance::FollowWithinRoot);
    assert_eq!(r.hardlinks, HardlinkStance::AllowPreexisting);
    assert!(r.static_roots.is_empty());
    assert_eq!(p.resources().read, ReadStance::Forward);
    assert_eq!(p.resources().other_schemes, SchemeStance::AllowAll);
    assert_eq!(p.resources().max_bytes, Some(16 * MIB));
    assert_eq!(p.audit().fsync, Fsync::Denials);
    assert_eq!(p.audit().on_failure, OnFailure::Stop);
    assert!(p.audit().log_allowed);
    assert_eq!(p.sandbox().mode, SandboxMode::BestEffort);
    assert_eq!(p.sandbox().network, Network::Allow);
    assert_eq!(
        p.sandbox().access_for_root("/home/u/proj"),
        Access::ReadWrite
    );
    // The reference filesystem server's path arguments are named, for that server (and
    // while the server's name is not known yet), not for another server's tool of the
    // same name (desktop-commander's `read_file` takes URLs too).
    for tool in ["read_file", "read_text_file", "move_file"] {
        assert!(
            p.tool_path_pointers(tool, Some("desktop-commander"))
                .is_empty(),
            "{tool}"
        );
        assert!(!p.tool_path_pointers(tool, None).is_empty(), "{tool}");
    }
    let ptrs = |t: &str| -> Vec<(String, ArgKind)> {
        p.tool_path_pointers(t, Some("secure-filesystem-server"))
            .iter()
            .map(|tp| (tp.pointer.clone(), tp.kind))
            .collect()
    };
    for tool in [
        "read_file",
        "read_text_file",
        "read_media_file",
        "write_file",
        "edit_file",
        "create_directory",
        "list_directory",
        "list_directory_with_sizes",
        "directory_tree",
        "search_files",
        "get_file_info",
    ] {
        assert_eq!(ptrs(tool), vec![("/path".into(), ArgKind::Path)], "{tool}");
    }
    assert_eq!(
        ptrs("read_multiple_files"),
        vec![("/paths".into(), ArgKind::Path)]
    );
    assert_eq!(
        ptrs("move_file"),
        vec![
            ("/source".into(), ArgKind::Path),
            ("/destination".into(), ArgKind::Path)
        ]
    );
    assert!(ptrs("list_allowed_directories").is_empty());
    assert!(ptrs("read_file_extra").is_empty());
}

#[test]
fn builtin_default_is_the_shipped_default_file() {
    let shipped = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/policies/default.toml"
    ))
    .unwrap();
    assert_eq!(rootfence::policy::DEFAULT_POLICY, shipped);
    let p = Policy::builtin_default();
    assert!(!p.decide_resource("file", Some("/x/.env")).allow);
}

#[test]
fn strict_policy_behaves_as_commented() {
    let p = load(&["strict.toml"]);
    let f = "strict.toml";
    use Q::*;
    check(
        &p,
        &[
            // file: only.
            Row(
                Uri("https://example.com/x"),
                false,
                "scheme_denied",
                "other_schemes",
                f,
            ),
            Row(
                Uri("ui://app/x"),
                false,
                "scheme_denied",
                "other_schemes",
                f,
            ),
            Row(
                Uri("data:text/plain,hi"),
                false,
                "scheme_denied",
                "other_schemes",
                f,
            ),
            Row(
                Uri("FILE:///home/u/proj/a.rs"),
                true,
                "default_allow",
                "default",
                "",
            ),
            Row(
                Uri("file:///home/u/proj/a.rs"),
                true,
                "default_allow",
                "default",
                "",
            ),
            // Secrets denied.
            Row(
                Uri("file:///home/u/proj/.env"),
                false,
                "policy_deny",
                ".env",
                f,
            ),
            Row(
                Uri("file:///home/u/.ssh/known_hosts"),
                false,
                "policy_deny",
                ".ssh",
                f,
            ),
            Row(
                Uri("file:///home/u/proj/.git/HEAD"),
                false,
                "policy_deny",
                ".git",
                f,
            ),
            Row(Root("/home/u"), false, "policy_deny", "\"~\"", f),
            // Read-only: writing tools denied, readers allowed.
            Row(Tool("write_file"), false, "read_only", "*write*", f),
            Row(Tool("overwrite_config"), false, "read_only", "*write*", f),
            Row(Tool("edit_file"), false, "read_only", "*edit*", f),
            Row(Tool("create_directory"), false, "read_only", "*create*", f),
            Row(Tool("delete_file"), false, "read_only", "*delete*", f),
            Row(Tool("move_file"), false, "read_only", "*move*", f),
            Row(Tool("rename"), false, "read_only", "*rename*", f),
            Row(Tool("mkdir"), false, "read_only", "*mkdir*", f),
            Row(Tool("append_to_file"), false, "read_only", "*append*", f),
            Row(Tool("upload_file"), false, "read_only", "*upload*", f),
            Row(Tool("read_text_file"), true, "default_allow", "default", ""),
            Row(Tool("list_directory"), true, "default_allow", "default", ""),
            Row(Tool("search_files"), true, "default_allow", "default", ""),
            Row(Content(None, 4 * MIB + 1), false, "too_large", "4 MiB", f),
        ],
    );
    let rule = p.decide_tool("write_file").provenance.rule.clone();
    assert!(rule.contains("tools.read_only = true"), "{rule}");
    assert_eq!(p.mode(), Mode::Enforce);
    assert_eq!(p.resources().other_schemes, SchemeStance::Only(vec![]));
    assert_eq!(p.resources().read, ReadStance::Serve);
    assert_eq!(p.roots().symlinks, SymlinkStance::Never);
    assert_eq!(p.roots().on_timeout, RootsFallback::Deny);
    assert_eq!(p.roots().hardlinks, HardlinkStance::Deny);
    assert_eq!(p.audit().fsync, Fsync::Always);
    assert_eq!(p.audit().on_failure, OnFailure::Stop);
    assert!(p.audit().log_allowed);
    assert_eq!(p.sandbox().mode, SandboxMode::Strict);
    assert_eq!(p.sandbox().network, Network::Deny);
    assert_eq!(
        p.sandbox().access_for_root("/home/u/proj"),
        Access::ReadOnly
    );
    assert_eq!(
        p.tool_path_pointers("read_text_file", Some("secure-filesystem-server"))
            .len(),
        1
    );
}

#[test]
fn org_example_behaves_as_commented() {
    let p = load(&["org-example.toml"]);
    let f = "org-example.toml";
    use Q::*;
    check(
        &p,
        &[
            Row(
                Root("/home/u/work/acme-api"),
                true,
                "policy_allow",
                "~/work/**",
                f,
            ),
            Row(Root("/home/u/work"), true, "policy_allow", "~/work/**", f),
            Row(
                Root("/srv/projects/x"),
                true,
                "policy_allow",
                "/srv/projects/**",
                f,
            ),
            Row(
                Root("/home/u/other"),
                false,
                "not_allowed",
                "no entry matched",
                f,
            ),
            // CVE-2025-53110 shape: a sibling sharing a string prefix is not inside.
            Row(
                Root("/home/u/work_evil"),
                false,
                "not_allowed",
                "roots.allow",
                f,
            ),
            Row(
                Root("/home/u/work/secrets"),
                false,
                "policy_deny",
                "~/work/secrets/**",
                f,
            ),
            Row(
                Root("/home/u/work/secrets/db"),
                false,
                "policy_deny",
                "secrets",
                f,
            ),
            Row(
                Uri("https://example.com"),
                true,
                "policy_allow",
                "[\"https\", \"ui\"]",
                f,
            ),
            Row(Uri("ui://app/x"), true, "policy_allow", "other_schemes", f),
            Row(Uri("ftp://x/y"), false, "scheme_denied", "other_schemes", f),
            // Stacked on the built-in default: its secret globs decide first.
            Row(
                Uri("file:///home/u/work/app/.env"),
                false,
                "policy_deny",
                ".env",
                "builtin:default",
            ),
            Row(
                Uri("file:///home/u/work/app/id_rsa"),
                false,
                "policy_deny",
                "id_rsa",
                "builtin:default",
            ),
            Row(
                Uri("file:///home/u/work/app/src/a.rs"),
                true,
                "default_allow",
                "default",
                "",
            ),
            Row(Tool("run_shell"), false, "tool_denied", "*shell*", f),
            Row(Tool("execute_command"), false, "tool_denied", "*exec*", f),
            Row(Tool("write_file"), true, "default_allow", "default", ""),
            Row(Content(None, 8 * MIB), true, "policy_allow", "8 MiB", f),
            Row(Content(None, 8 * MIB + 1), false, "too_large", "8 MiB", f),
        ],
    );
    assert_eq!(p.layers()[0].name, "builtin:default");
    assert!(p.layers()[0].base);
    assert!(p.dropped_protections().is_empty());
    assert_eq!(p.roots().list_timeout, Duration::from_secs(5));
    assert_eq!(p.resources().read, ReadStance::Verify);
    assert_eq!(p.sandbox().network, Network::Ports(vec![443]));
    // Whether a name passes the policy's `env` list (exact names, or `PREFIX*`).
    let env_allowed = |name: &str| {
        let env = &p.sandbox().env;
        env.iter().any(|e| {
            e.strip_suffix('*')
                .map_or(e == name, |pre| name.starts_with(pre))
        })
    };
    assert!(env_allowed("LC_ALL"));
    assert!(!env_allowed("NODE_OPTIONS"), "grantable, not granted");
    assert!(!env_allowed("PATH_EXTRA"));
    // What projects and users may grant, and nothing else.
    use rootfence::policy::Grant;
    use std::path::Path;
    assert!(p.check_grant(Grant::Env("NODE_OPTIONS")).is_ok());
    assert!(p.check_grant(Grant::Env("GIT_AUTHOR_NAME")).is_ok());
    let e = p
        .check_grant(Grant::Env("AWS_SECRET_ACCESS_KEY"))
        .unwrap_err();
    assert!(e.to_string().contains("org-example.toml"), "{e}");
    assert!(
        p.check_grant(Grant::Read(Path::new("/home/u/.gitconfig")))
            .is_ok()
    );
    assert!(
        p.check_grant(Grant::Read(Path::new("/home/u/work/x")))
            .is_ok()
    );
    assert!(
        p.check_grant(Grant::Write(Path::new("/home/u/.cache/tool")))
            .is_ok()
    );
    assert!(
        p.check_grant(Grant::Write(Path::new("/home/u/work/x")))
            .is_err()
    );
    assert!(
        p.check_grant(Grant::Read(Path::new("/home/u/work/app/.env")))
            .is_err()
    );
    assert!(!env_allowed("AWS_SECRET_ACCESS_KEY"));
    assert_eq!(p.sandbox().rlimits.nofile, Some(4096));
}

#[test]
fn project_example_narrows_org_example() {
    let p = load(&["org-example.toml", "project-example.toml"]);
    let (o, pr) = ("org-example.toml", "project-example.toml");
    use Q::*;
    check(
        &p,
        &[
            // The project's allow-list is the most specific statement.
            Row(
                Root("/home/u/work/acme-api"),
                true,
                "policy_allow",
                "acme-api/**",
                pr,
            ),
            Row(
                Root("/home/u/work/acme-api/sub"),
                true,
                "policy_allow",
                "acme-api/**",
                pr,
            ),
            // Inside the org's list but not the project's: the project's list refuses it.
            Row(
                Root("/home/u/work/other"),
                false,
                "not_allowed",
                "acme-api",
                pr,
            ),
            Row(
                Root("/srv/projects/x"),
                false,
                "not_allowed",
                "acme-api",
                pr,
            ),
            // Outside the org's list: the org's list refuses it first.
            Row(Root("/opt/x"), false, "not_allowed", "~/work/**", o),
            Row(
                Root("/home/u/work/secrets"),
                false,
                "policy_deny",
                "secrets",
                o,
            ),
            // Denials of both layers apply.
            Row(
                Uri("file:///home/u/work/acme-api/.env"),
                false,
                "policy_deny",
                ".env",
                "builtin:default",
            ),
            Row(
                Uri("file:///home/u/work/acme-api/db.sqlite"),
                false,
                "policy_deny",
                "sqlite",
                pr,
            ),
            Row(
                Uri("file:///home/u/work/acme-api/fixtures/credentials/a.json"),
                false,
                "policy_deny",
                "fixtures/credentials",
                pr,
            ),
            Row(
                Uri("file:///home/u/work/acme-api/src/x.rs"),
                true,
                "default_allow",
                "default",
                "",
            ),
            // Scheme list narrowed to https.
            Row(
                Uri("https://example.com"),
                true,
                "policy_allow",
                "[\"https\"]",
                pr,
            ),
            Row(Uri("ui://app/x"), false, "scheme_denied", "[\"https\"]", pr),
            // read_only from the project, writing marks from the org.
            // The built-in default marks the reference server's writing tools first.
            Row(
                Tool("write_file"),
                false,
                "read_only",
                "\"write_file\"",
                "builtin:default",
            ),
            Row(Tool("write_notes"), false, "read_only", "write_*", o),
            Row(Tool("edit_config"), false, "read_only", "edit_*", o),
            Row(Tool("delete_branch"), false, "read_only", "delete_*", o),
            Row(Tool("read_text_file"), true, "default_allow", "default", ""),
            Row(Tool("run_shell"), false, "tool_denied", "*shell*", o),
            // Content limit lowered to 4 MiB.
            Row(Content(None, 4 * MIB + 1), false, "too_large", "4 MiB", pr),
        ],
    );
    let rule = &p.decide_tool("write_file").provenance.rule;
    assert!(
        rule.contains("project-example.toml") && rule.contains("read_only"),
        "{rule}"
    );
    assert_eq!(p.mode(), Mode::Enforce);
    let statics: Vec<&str> = p
        .roots()
        .static_roots
        .iter()
        .map(|r| r.path.as_str())
        .collect();
    assert_eq!(statics, ["/home/u/work/acme-api"]);
    assert_eq!(p.roots().symlinks, SymlinkStance::Never);
    assert_eq!(p.roots().list_timeout, Duration::from_secs(5));
    assert_eq!(p.resources().max_bytes, Some(4 * MIB));
    assert_eq!(p.resources().read, ReadStance::Verify);
    assert_eq!(p.sandbox().network, Network::Deny);
    // Grants accumulate: the org's, then what the project added (grantable by the org).
    assert_eq!(p.sandbox().env, ["LANG", "LC_*", "MEMORY_FILE_PATH"]);
    assert_eq!(
        p.sandbox().read,
        [std::path::PathBuf::from("/home/u/.gitconfig")]
    );
    assert_eq!(p.sandbox().rlimits.nofile, Some(4096));
    assert_eq!(
        p.layers().len(),
        3,
        "the built-in default, then the two files"
    );
    assert!(p.layers()[0].base && p.layers()[0].path.is_none());
    assert!(
        p.layers()[1..]
            .iter()
            .all(|l| l.sha256.len() == 64 && l.path.is_some() && !l.base)
    );
}

/// "Commented line by line": every line that states something carries a `#` comment.
#[test]
fn every_policy_line_is_commented() {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/policies");
    let mut files = 0;
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_none_or(|e| e != "toml") {
            continue;
        }
        files += 1;
        let text = std::fs::read_to_string(&path).unwrap();
        for (i, line) in text.lines().enumerate() {
            let t = line.trim();
            if t.is_empty() || t.starts_with('#') || t == "]" {
                continue;
            }
            assert!(
                line.contains(" # ") || line.contains("  #"),
                "{}:{}: uncommented line: {line}",
                path.display(),
                i + 1
            );
        }
        // And each shipped file loads on its own.
        Policy::load_with_home(std::slice::from_ref(&path), Some(HOME))
            .unwrap_or_else(|e| panic!("{}:\n{e}", path.display()));
    }
    assert!(
        files >= 4,
        "expected at least 4 shipped policies, found {files}"
    );
}

/// Issue 27: running as root (containers, CI), `/root` is the user's own home: a project in
/// it is a root like any other, while `/root` itself stays refused (`~`).
#[test]
fn the_superusers_home_is_only_refused_to_others() {
    let p = Policy::load_with_home(&[], Some("/root")).unwrap();
    let f = "builtin:default";
    use Q::*;
    check(
        &p,
        &[
            Row(Root("/root/proj"), true, "default_allow", "default", ""),
            Row(
                Root("/root/work/acme-api"),
                true,
                "default_allow",
                "default",
                "",
            ),
            Row(Root("/root"), false, "policy_deny", "roots.deny = \"~\"", f),
            Row(Root("/root/.ssh"), false, "policy_deny", ".ssh/**", f),
            Row(Root("/etc"), false, "policy_deny", "/etc/**", f),
        ],
    );
    // A home of `/` (or none) is no reason to let `/root` through.
    for home in [Some("/"), None, Some("relative")] {
        let p = Policy::load_with_home(&[], home).unwrap();
        assert!(!p.decide_root("/root/proj").allow, "{home:?}");
    }
}
