//! Snapshot tests of policy error messages: one invalid policy per kind of mistake, the
//! full message compared with `tests/snapshots/policy_errors/<case>.txt`.
//!
//! To review changed messages: `ROOTFENCE_BLESS=1 cargo test --test policy_errors`, then
//! read the diff of the snapshot files. A missing snapshot fails unless blessing.
//! (Hand-rolled golden files rather than `insta`: a dozen lines instead of a dependency.)

use std::path::PathBuf;

use rootfence::policy::{ErrorKind, Policy, PolicyErrors};

const HOME: &str = "/home/u";

fn snapshot(name: &str, actual: &str) {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/snapshots/policy_errors")
        .join(format!("{name}.txt"));
    if std::env::var_os("ROOTFENCE_BLESS").is_some() {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, actual).unwrap();
        return;
    }
    let expected = std::fs::read_to_string(&path).unwrap_or_else(|_| {
        panic!(
            "missing snapshot {}; run with ROOTFENCE_BLESS=1 and review it.\nactual:\n{actual}",
            path.display()
        )
    });
    assert!(
        expected == actual,
        "snapshot {name} differs.\n--- expected\n{expected}\n--- actual\n{actual}"
    );
}

fn errors(layers: &[(&str, &str)]) -> PolicyErrors {
    let layers: Vec<(String, String)> = layers
        .iter()
        .map(|(n, t)| (n.to_string(), t.to_string()))
        .collect();
    match Policy::from_sources_with_home(&layers, Some(HOME)) {
        Ok(_) => panic!("policy unexpectedly valid"),
        Err(e) => e,
    }
}

/// Checks the kinds, that every error is located (except I/O), and the snapshot.
fn case(name: &str, layers: &[(&str, &str)], kinds: &[ErrorKind]) {
    let errs = errors(layers);
    let got: Vec<ErrorKind> = errs.0.iter().map(|e| e.kind).collect();
    assert_eq!(got, kinds, "{name}:\n{errs}");
    for e in &errs.0 {
        assert!(
            e.line.is_some() && e.column.is_some(),
            "{name}: unlocated {e}"
        );
        assert!(e.hint.is_some(), "{name}: no hint: {e}");
    }
    snapshot(name, &errs.to_string());
}

use ErrorKind::*;

#[test]
fn syntax_error() {
    case(
        "syntax",
        &[("p.toml", "version = 1\nmode = \"enforce\n[roots]\n")],
        &[Syntax],
    );
}

#[test]
fn unknown_keys_with_suggestions() {
    case(
        "unknown_key",
        &[(
            "p.toml",
            "version = 1\nmod = \"audit\"\n[resources]\ndenny = [\"**/.env\"]\n\
             [roots]\nmax_bytes = 10\n[sandbox.rlimits]\nstack = 1\n[network]\n",
        )],
        &[UnknownKey, UnknownKey, UnknownKey, UnknownKey, UnknownKey],
    );
}

#[test]
fn wrong_types() {
    case(
        "bad_type",
        &[(
            "p.toml",
            "version = 1\n[roots]\nallow = \"~/code/**\"\nsymlinks = true\n\
             [resources]\ndeny = [\"**/.env\", 42]\n[tools]\nread_only = \"yes\"\n\
             [audit]\nlog_allowed = 1\n",
        )],
        &[WrongType, WrongType, WrongType, WrongType, WrongType],
    );
}

#[test]
fn bad_enum_words() {
    case(
        "bad_mode",
        &[(
            "p.toml",
            "version = 1\nmode = \"permissive\"\n[roots]\nsymlinks = \"always\"\n\
             [resources]\nread = \"trust\"\n[sandbox]\nmode = \"on\"\n",
        )],
        &[BadValue, BadValue, BadValue, BadValue],
    );
}

#[test]
fn bad_globs() {
    case(
        "bad_glob",
        &[(
            "p.toml",
            "version = 1\n[resources]\ndeny = [\n  \"**/[.env\",\n  \"*.pem\",\n  \
             \"/home/u/\",\n  \"/a/../b\",\n  \"/a/{b,c\",\n  \"\",\n]\n[tools]\n\
             deny = [\"\", \"x[\"]\n",
        )],
        &[BadGlob; 8],
    );
}

#[test]
fn bad_variables() {
    case(
        "bad_env_var",
        &[(
            "p.toml",
            "version = 1\n[roots]\nallow = [\"${WORKSPACE}/**\", \"~bob/code/**\", \
             \"/srv/${HOME}/x\", \"$HOME/x\"]\n[audit]\npath = \"${XDG_STATE_HOME}/a.log\"\n",
        )],
        &[BadVariable; 5],
    );
}

#[test]
fn home_unset_is_an_error_not_a_silent_literal() {
    let layers = [(
        "p.toml".to_string(),
        "version = 1\n[roots]\nallow = [\"~/code/**\"]\n".to_string(),
    )];
    let errs = Policy::from_sources_with_home(&layers, None).unwrap_err();
    assert_eq!(errs.0[0].kind, BadVariable);
    snapshot("home_unset", &errs.to_string());
}

#[test]
fn bad_pointers() {
    case(
        "bad_pointer",
        &[(
            "p.toml",
            "version = 1\n[[tools.paths]]\ntool = \"read_file\"\npointers = [\"path\", \"/a~2\", \"\"]\n\
             [[tools.paths]]\ntool = \"x\"\npointers = []\n\
             [[tools.paths]]\npointers = [\"/p\"]\nkind = \"file\"\n",
        )],
        &[
            BadPointer, BadPointer, BadPointer, BadPointer, BadValue, BadValue,
        ],
    );
}

#[test]
fn bad_values() {
    case(
        "bad_value",
        &[(
            "p.toml",
            "version = 1\n[roots]\nlist_timeout_ms = 0\n[resources]\n\
             other_schemes = [\"file\", \"http:\"]\nmax_bytes = \"10 MB\"\nmime = [\"text\", \"*/json\"]\n\
             [audit]\nfsync = \"always\"\nfsync_interval_ms = 100\n\
             [sandbox]\nnetwork = [22, 70000]\nenv = [\"A-B\"]\n",
        )],
        &[BadValue; 9],
    );
}

#[test]
fn bad_paths() {
    case(
        "bad_path",
        &[(
            "p.toml",
            "version = 1\n[roots]\nstatic = [\"code/app\", \"/srv/app/\"]\n\
             [sandbox]\nread = [\"/opt/./tools\"]\n[audit]\npath = \"audit.log\"\n",
        )],
        &[BadPath; 4],
    );
}

#[test]
fn version_missing_and_unsupported() {
    case(
        "version",
        &[
            ("a.toml", "mode = \"enforce\"\n"),
            ("b.toml", "version = 2\n"),
        ],
        &[Version, Version],
    );
}

#[test]
fn widening_layers_name_both_files_and_lines() {
    case(
        "widening",
        &[
            (
                "org.toml",
                "version = 1\nmode = \"enforce\"\n[roots]\nallow = [\"~/work/**\"]\n\
                 [resources]\nother_schemes = [\"https\"]\nmax_bytes = \"16 MiB\"\nread = \"verify\"\n\
                 mime = [\"text/*\"]\n[sandbox]\nnetwork = [443]\n[sandbox.rlimits]\nnofile = 1024\n",
            ),
            (
                "project.toml",
                "version = 1\nmode = \"audit\"\n[roots]\nallow = [\"~/**\", \"~/work/app/**\"]\n\
                 [resources]\nother_schemes = [\"https\", \"ftp\"]\nmax_bytes = \"1 GiB\"\nread = \"forward\"\n\
                 mime = [\"application/json\"]\n[sandbox]\nnetwork = \"allow\"\n[sandbox.rlimits]\nnofile = 4096\n",
            ),
        ],
        &[Widening; 8],
    );
}

#[test]
fn widening_past_a_builtin_default() {
    case(
        "widening_default",
        &[
            ("org.toml", "version = 1\n"),
            (
                "project.toml",
                "version = 1\n[roots]\nhardlinks = \"allow\"\n[audit]\nlog_allowed = false\n\
                 fsync = \"never\"\n[sandbox]\nmode = \"off\"\nread = [\"/opt\"]\nenv = [\"AWS_*\"]\n",
            ),
        ],
        &[Widening; 6],
    );
}

#[test]
fn fixed_settings_conflict() {
    case(
        "conflict",
        &[
            (
                "org.toml",
                "version = 1\n[roots]\nlist_timeout_ms = 5000\n[audit]\npath = \"/var/log/rf.jsonl\"\n",
            ),
            (
                "user.toml",
                "version = 1\n[roots]\nlist_timeout_ms = 5000\n",
            ),
            (
                "project.toml",
                "version = 1\n[roots]\nlist_timeout_ms = 100\n[audit]\npath = \"/dev/null\"\n",
            ),
        ],
        &[Conflict, Conflict],
    );
}

#[test]
fn static_root_refused_by_the_rules() {
    case(
        "static_root_refused",
        &[(
            "p.toml",
            "version = 1\n[roots]\nallow = [\"~/code/**\"]\ndeny = [\"~/code/secret/**\"]\n\
             static = [\"~/code/app\", \"~/other\", \"~/code/secret\"]\n",
        )],
        &[BadPath, BadPath],
    );
}

#[test]
fn every_error_of_every_layer_at_once() {
    case(
        "many_at_once",
        &[
            (
                "org.toml",
                "version = 1\nmode = \"loud\"\n[roots]\nallow = [\"*.rs\"]\n",
            ),
            ("user.toml", "version = 1\nmode = \"enforce\n"),
            (
                "project.toml",
                "version = 1\n[tools]\ndeny = [\"x{\"]\nread_only = 3\n[[tools.paths]]\n\
                 tool = \"t\"\npointers = [\"p\"]\n[bogus]\n",
            ),
        ],
        &[
            BadValue, BadGlob, Syntax, BadGlob, WrongType, BadPointer, UnknownKey,
        ],
    );
}

#[test]
fn unreadable_file_is_reported_with_the_others() {
    let dir = tempfile::tempdir().unwrap();
    let good = dir.path().join("bad.toml");
    std::fs::write(&good, "version = 1\nmode = \"x\"\n").unwrap();
    let missing = PathBuf::from("/nonexistent/rootfence/org.toml");
    let errs = Policy::load_with_home(&[missing, good], Some(HOME)).unwrap_err();
    let kinds: Vec<ErrorKind> = errs.0.iter().map(|e| e.kind).collect();
    assert_eq!(kinds, [Io, BadValue], "{errs}");
    assert!(
        errs.0[0]
            .to_string()
            .contains("policy file /nonexistent/rootfence/org.toml does not exist")
    );
}

#[test]
fn base_is_chosen_by_the_first_layer_only() {
    case(
        "base",
        &[
            ("org.toml", "version = 1\nbase = \"builtin:lenient\"\n"),
            ("user.toml", "version = 1\nbase = \"none\"\n"),
            ("project.toml", "version = 1\nbase = \"builtin:strict\"\n"),
        ],
        &[BadValue, Conflict, Conflict],
    );
}

#[test]
fn grants_beyond_what_is_grantable() {
    case(
        "grants",
        &[
            (
                "org.toml",
                "version = 1\n[resources]\ndeny = [\"**/.ssh/**\"]\n\
                 [sandbox.grantable]\nenv = [\"*\"]\nread = [\"/**\"]\nwrite = [\"~/.cache/**\"]\n",
            ),
            (
                "user.toml",
                "version = 1\n[sandbox]\nenv = [\"MEMORY_FILE_PATH\", \"*\"]\n\
                 read = [\"~/.gitconfig\", \"~/.ssh/config\", \"/\", \"~\", \"/home\"]\n\
                 write = [\"~/.cache/tool\", \"~/.config/tool\"]\n\
                 [sandbox.grantable]\nwrite = [\"~/**\"]\n",
            ),
        ],
        &[
            Widening, Widening, BadPath, BadPath, BadPath, Widening, Widening,
        ],
    );
}
