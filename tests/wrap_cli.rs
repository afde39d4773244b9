//! `rootfence wrap` / `unwrap` through the real binary: the messages for common mistakes
//! (each names the input and says what to do, exits 2 and writes nothing), host config
//! auto-detection per host, the atomic replacement and its backups, and the generated shell
//! completions and man pages.

mod wrap_support;

use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use rootfence::wrap::{self, WriteError};
use serde_json::{Value, json};
use wrap_support::*;

const CONFIG: &str = r#"{
  "mcpServers": {
    "files": {
      "command": "npx",
      "args": ["-y", "@modelcontextprotocol/server-filesystem", "/tmp"]
    },
    "web": {"type": "http", "url": "https://example.com/mcp"}
  }
}
"#;

struct Env {
    dir: tempfile::TempDir,
}

impl Env {
    fn new() -> Env {
        Env {
            dir: tempfile::tempdir().unwrap(),
        }
    }
    fn path(&self, rel: &str) -> PathBuf {
        self.dir.path().join(rel)
    }
    fn write(&self, rel: &str, text: &str) -> PathBuf {
        let p = self.path(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(&p, text).unwrap();
        p
    }
    fn policy(&self) -> String {
        policy_in(self.dir.path()).to_str().unwrap().to_string()
    }
    /// Runs rootfence with HOME inside the temp dir and no XDG / Claude overrides.
    fn run(&self, args: &[&str]) -> Output {
        self.run_env(args, &[])
    }
    fn run_env(&self, args: &[&str], envs: &[(&str, PathBuf)]) -> Output {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_rootfence"));
        cmd.args(args)
            .env("HOME", self.path("home"))
            .env_remove("XDG_CONFIG_HOME")
            .env_remove("CLAUDE_CONFIG_DIR")
            .env("RUST_LOG", "warn");
        for (k, v) in envs {
            cmd.env(k, v);
        }
        cmd.output().unwrap()
    }
}

/// Asserts an error exit (2) whose stderr contains every needle, and that nothing was
/// written next to `file` (no backup, no temporary file, same bytes).
fn assert_refused(o: &Output, needles: &[&str], file: Option<(&Path, &str)>) {
    let err = stderr(o);
    assert_eq!(o.status.code(), Some(2), "stderr: {err}");
    assert!(err.starts_with("rootfence: error: "), "{err}");
    for n in needles {
        assert!(err.contains(n), "missing {n:?} in: {err}");
    }
    assert!(stdout(o).is_empty(), "stdout: {}", stdout(o));
    if let Some((path, text)) = file {
        assert_eq!(std::fs::read_to_string(path).unwrap(), text);
        let dir = path.parent().unwrap();
        assert!(files_containing(dir, "rootfence-backup").is_empty());
        assert!(files_containing(dir, "rootfence-tmp").is_empty());
    }
}

// ---- Messages for common mistakes -----------------------------------------------------

#[test]
fn config_file_missing() {
    let e = Env::new();
    let o = e.run(&["wrap", "/nonexistent/claude_desktop_config.json"]);
    assert_refused(
        &o,
        &[
            "config file /nonexistent/claude_desktop_config.json does not exist",
            "--host claude-desktop|claude-code|vscode|cursor",
        ],
        None,
    );
    let o = e.run(&["unwrap", "/nonexistent/x.json"]);
    assert_refused(
        &o,
        &["config file /nonexistent/x.json does not exist"],
        None,
    );
}

#[test]
fn host_config_missing_names_the_place_looked() {
    let e = Env::new();
    let o = e.run(&["wrap", "--host", "cursor"]);
    let want = format!(
        "Cursor keeps its servers in {}, which does not exist: is Cursor installed",
        e.path("home/.cursor/mcp.json").display()
    );
    assert_refused(&o, &[&want], None);
}

#[test]
fn missing_ok_for_scripts() {
    let e = Env::new();
    let o = e.run(&["wrap", "--host", "vscode", "--missing-ok"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("does not exist: nothing to do"),
        "{}",
        stderr(&o)
    );
    // Only with --host: a path given by hand that does not exist is a mistake.
    let o = e.run(&["wrap", "/nonexistent.json", "--missing-ok"]);
    assert_refused(&o, &["--project and --missing-ok go with --host"], None);
    let o = e.run(&["wrap", "/nonexistent.json", "--project", "."]);
    assert_refused(&o, &["--project and --missing-ok go with --host"], None);
}

#[test]
fn config_is_a_directory() {
    let e = Env::new();
    std::fs::create_dir_all(e.path("proj")).unwrap();
    let o = e.run(&["wrap", e.path("proj").to_str().unwrap()]);
    assert_refused(
        &o,
        &["is a directory; give the configuration file itself"],
        None,
    );
}

#[test]
fn not_a_host_config() {
    let e = Env::new();
    for (text, needle) in [
        (
            r#"{"editor.fontSize": 14}"#,
            "no `mcpServers` or `servers` object",
        ),
        ("[1, 2]", "the top level is an array"),
        (
            r#"{"mcpServers": ["a"]}"#,
            "`mcpServers` at line 1, column 16 is an array",
        ),
    ] {
        let f = e.write("c.json", text);
        let o = e.run(&["wrap", f.to_str().unwrap()]);
        assert_refused(
            &o,
            &[
                &format!("cannot wrap {}", f.display()),
                "not recognised as an MCP host configuration",
                needle,
            ],
            Some((&f, text)),
        );
    }
}

#[test]
fn invalid_json_reports_line_and_column() {
    let e = Env::new();
    let table = [
        (
            "{\n  \"mcpServers\": {\n    \"a\": {\"command\": \"x\" \"args\": []}\n  }\n}\n",
            "invalid JSON at line 3, column 26: expected `,` or `}` after an object member",
        ),
        (
            "{\n  \"mcpServers\": {\n    \"a\": {\"command\": 'x'}\n  }\n}\n",
            "invalid JSON at line 3, column 22: expected a JSON value",
        ),
        (
            "{\n  \"mcpServers\": {\n",
            "invalid JSON at line 2, column 17: this object is never closed",
        ),
    ];
    for (text, needle) in table {
        let f = e.write("c.json", text);
        let o = e.run(&["wrap", f.to_str().unwrap()]);
        assert_refused(&o, &[needle], Some((&f, text)));
    }
}

#[test]
fn non_utf8_config() {
    let e = Env::new();
    let f = e.path("c.json");
    std::fs::write(&f, b"{\"mcpServers\": {\"a\": {\"command\": \"\xff\"}}}").unwrap();
    let o = e.run(&["wrap", f.to_str().unwrap()]);
    assert_refused(&o, &["is not UTF-8 text (invalid byte at offset 34)"], None);
}

#[test]
fn duplicate_keys_are_refused() {
    let e = Env::new();
    // The host would run "evil" unwrapped if rootfence wrapped only the first command.
    let text = r#"{"mcpServers": {"a": {"command": "npx", "command": "evil"}}}"#;
    let f = e.write("c.json", text);
    let o = e.run(&["wrap", f.to_str().unwrap()]);
    assert_refused(
        &o,
        &["duplicate key \"command\" at line 1, column 41: the host would use only the last one"],
        Some((&f, text)),
    );
}

#[test]
fn policy_file_missing_wraps_nothing() {
    let e = Env::new();
    let f = e.write("c.json", CONFIG);
    let o = e.run(&["wrap", f.to_str().unwrap(), "--policy", "no/such/org.toml"]);
    assert_refused(
        &o,
        &["policy file no/such/org.toml does not exist; nothing was wrapped"],
        Some((&f, CONFIG)),
    );
}

#[test]
fn broken_policy_is_never_wrapped_into_a_config() {
    let e = Env::new();
    let f = e.write("c.json", CONFIG);
    let bad = e.write(
        "bad.toml",
        "version = 1\n[resources]\ndeny = [\"**/.env\"]\nallow_typo = true\n",
    );
    let o = e.run(&[
        "wrap",
        f.to_str().unwrap(),
        "--policy",
        bad.to_str().unwrap(),
    ]);
    assert_refused(
        &o,
        &[
            "bad.toml:4",
            "allow_typo",
            "nothing was wrapped: a policy that does not load would stop every wrapped server",
            "rootfence policy check",
        ],
        Some((&f, CONFIG)),
    );
    // A policy directory.
    let o = e.run(&[
        "wrap",
        f.to_str().unwrap(),
        "--policy",
        e.dir.path().to_str().unwrap(),
    ]);
    assert_refused(
        &o,
        &["is a directory; give a policy file"],
        Some((&f, CONFIG)),
    );
}

#[test]
fn unknown_server_lists_the_available_ones() {
    let e = Env::new();
    let f = e.write("c.json", CONFIG);
    let o = e.run(&["wrap", f.to_str().unwrap(), "--server", "filez"]);
    assert_refused(
        &o,
        &["no server named `filez` in this file; the servers are: files, web"],
        Some((&f, CONFIG)),
    );
    let o = e.run(&[
        "unwrap",
        f.to_str().unwrap(),
        "--server",
        "x",
        "--server",
        "y",
    ]);
    assert_refused(&o, &["no server named `x`, `y`"], Some((&f, CONFIG)));
}

#[test]
fn run_args_are_checked_by_run_itself() {
    let e = Env::new();
    let f = e.write("c.json", CONFIG);
    let fs = f.to_str().unwrap();
    let o = e.run(&["wrap", fs, "--run-arg=--no-such-flag"]);
    assert_refused(
        &o,
        &[
            "--run-arg is not a valid `rootfence run` option",
            "--no-such-flag",
        ],
        Some((&f, CONFIG)),
    );
    let o = e.run(&["wrap", fs, "--run-arg=--shutdown-grace=forever"]);
    assert_refused(
        &o,
        &["not a valid `rootfence run` option"],
        Some((&f, CONFIG)),
    );
    let o = e.run(&["wrap", fs, "--run-arg=--root=/no/such/dir", "--dry-run"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(
        stderr(&o)
            .contains("warning: --run-arg root /no/such/dir is not a directory on this machine"),
        "{}",
        stderr(&o)
    );
    let o = e.run(&["wrap", fs, "--run-arg=--"]);
    assert_refused(&o, &["--run-arg `--` is reserved"], Some((&f, CONFIG)));
    // A valid one lands in the entry, after the policies.
    let p = e.policy();
    let o = e.run(&[
        "wrap",
        fs,
        "--policy",
        &p,
        "--run-arg=--shutdown-grace=5s",
        "--rootfence-path",
        RF,
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let v: Value = serde_json::from_str(&std::fs::read_to_string(&f).unwrap()).unwrap();
    assert_eq!(
        v["mcpServers"]["files"]["args"],
        json!([
            "run",
            "--policy",
            p,
            "--shutdown-grace=5s",
            "--",
            "npx",
            "-y",
            "@modelcontextprotocol/server-filesystem",
            "/tmp"
        ])
    );
}

#[test]
fn rootfence_path_must_be_recognisable() {
    let e = Env::new();
    let f = e.write("c.json", CONFIG);
    let fs = f.to_str().unwrap();
    let o = e.run(&["wrap", fs, "--rootfence-path", "bin/rootfence"]);
    assert_refused(
        &o,
        &["--rootfence-path bin/rootfence is relative"],
        Some((&f, CONFIG)),
    );
    let o = e.run(&["wrap", fs, "--rootfence-path", "/usr/bin/rf"]);
    assert_refused(
        &o,
        &["must be a file named `rootfence` so that wrapped entries can be recognised"],
        Some((&f, CONFIG)),
    );
    // A bare `rootfence` (the host's PATH) is accepted.
    let o = e.run(&["wrap", fs, "--rootfence-path", "rootfence"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let v: Value = serde_json::from_str(&std::fs::read_to_string(&f).unwrap()).unwrap();
    assert_eq!(v["mcpServers"]["files"]["command"], "rootfence");
}

#[test]
fn argument_conflicts() {
    let e = Env::new();
    let o = e.run(&["wrap", "--project", "."]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("--host"), "{}", stderr(&o));
    let o = e.run(&["wrap", "c.json", "--host", "cursor"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("cannot be used with"), "{}", stderr(&o));
    let o = e.run(&["wrap"]);
    assert_eq!(o.status.code(), Some(2));
    let o = e.run(&["wrap", "--host", "claude-desktop", "--project", "."]);
    assert_refused(
        &o,
        &["Claude Desktop has no per-project configuration; drop --project"],
        None,
    );
}

/// Entries rootfence cannot handle are named with their line, the exit status is 1, and
/// the others are still wrapped.
#[test]
fn problem_entries_exit_1_and_the_rest_is_written() {
    let e = Env::new();
    let text = "{\"mcpServers\": {\n  \"ok\": {\"command\": \"npx\"},\n  \"bad\": {\"command\": [\"npx\"]}\n}}\n";
    let f = e.write("c.json", text);
    let o = e.run(&["wrap", f.to_str().unwrap(), "--rootfence-path", RF]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let err = stderr(&o);
    assert!(
        err.contains(
            "warning: `bad` (line 3): `command` is an array, not a string; entry unchanged"
        ),
        "{err}"
    );
    assert!(err.contains("1 entry could not be handled"), "{err}");
    let v = value_of(&std::fs::read_to_string(&f).unwrap());
    assert_eq!(v["mcpServers"]["ok"]["command"], RF);
    assert_eq!(v["mcpServers"]["bad"]["command"], json!(["npx"]));
}

#[test]
fn hints_for_missing_commands_and_env_names_passed() {
    let e = Env::new();
    let text = r#"{"mcpServers": {"s": {"command": "no-such-server-cmd-4821", "env": {"API_KEY": "k", "OTHER_SECRET": "s", "LANG": "C"}}}}"#;
    let f = e.write("c.json", text);
    let p = e.policy();
    let o = e.run(&[
        "wrap",
        f.to_str().unwrap(),
        "--policy",
        &p,
        "--rootfence-path",
        RF,
        "--dry-run",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let err = stderr(&o);
    assert!(
        err.contains("warning: `s`: command `no-such-server-cmd-4821` was not found on this PATH"),
        "{err}"
    );
    // Every name the entry sets reaches the server: one --env each, said in the message.
    assert!(
        err.contains("wrapped `s` (no-such-server-cmd-4821); env passed to the server: API_KEY, OTHER_SECRET, LANG (--env)"),
        "{err}"
    );
    assert!(
        stdout(&o).contains(r#""--env", "API_KEY", "--env", "OTHER_SECRET", "--env", "LANG", "--wrapped-without-args", "--""#),
        "{}",
        stdout(&o)
    );
    assert!(!err.contains("policy lists it"), "{err}");
}

#[test]
fn no_policy_means_the_builtin_default_and_says_so() {
    let e = Env::new();
    let f = e.write("c.json", CONFIG);
    let o = e.run(&["wrap", f.to_str().unwrap(), "--rootfence-path", RF]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(stderr(&o).contains(
        "no --policy given: the servers will run under rootfence's built-in default policy"
    ));
    let v: Value = serde_json::from_str(&std::fs::read_to_string(&f).unwrap()).unwrap();
    assert_eq!(
        v["mcpServers"]["files"]["args"],
        json!([
            "run",
            "--",
            "npx",
            "-y",
            "@modelcontextprotocol/server-filesystem",
            "/tmp"
        ])
    );
    assert!(stderr(&o).contains("note: `web`: remote server (type \"http\"): left alone"));
}

#[test]
fn builtin_policies_are_written_as_names() {
    let e = Env::new();
    let f = e.write("c.json", CONFIG);
    let o = e.run(&[
        "wrap",
        f.to_str().unwrap(),
        "--policy",
        "builtin:strict",
        "--rootfence-path",
        RF,
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let v: Value = serde_json::from_str(&std::fs::read_to_string(&f).unwrap()).unwrap();
    assert_eq!(v["mcpServers"]["files"]["args"][2], "builtin:strict");
}

#[test]
fn relative_policy_paths_are_made_absolute() {
    let e = Env::new();
    let f = e.write("c.json", CONFIG);
    e.policy();
    let o = Command::new(env!("CARGO_BIN_EXE_rootfence"))
        .current_dir(e.dir.path())
        .args([
            "wrap",
            "c.json",
            "--policy",
            "org.toml",
            "--rootfence-path",
            RF,
        ])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let v: Value = serde_json::from_str(&std::fs::read_to_string(&f).unwrap()).unwrap();
    assert_eq!(
        v["mcpServers"]["files"]["args"][2],
        e.path("org.toml").to_str().unwrap()
    );
}

#[test]
fn default_rootfence_command_is_this_binary() {
    let e = Env::new();
    let f = e.write("c.json", CONFIG);
    let o = e.run(&["wrap", f.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let v: Value = serde_json::from_str(&std::fs::read_to_string(&f).unwrap()).unwrap();
    let cmd = v["mcpServers"]["files"]["command"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(Path::new(&cmd).is_absolute(), "{cmd}");
    assert_eq!(
        std::fs::canonicalize(&cmd).unwrap(),
        std::fs::canonicalize(env!("CARGO_BIN_EXE_rootfence")).unwrap()
    );
}

// ---- Host auto-detection --------------------------------------------------------------

#[test]
fn host_locations_on_this_os() {
    let e = Env::new();
    let home = e.path("home");
    let xdg = e.path("xdg");
    let cc = e.path("ccdir");
    let proj = e.path("proj");
    // (arguments, environment, where the file must be found)
    type Case<'a> = (&'a [&'a str], &'a [(&'a str, PathBuf)], PathBuf);
    let cases: &[Case<'_>] = &[
        (
            &["--host", "claude-desktop"],
            &[],
            home.join(".config/Claude/claude_desktop_config.json"),
        ),
        (
            &["--host", "claude-desktop"],
            &[("XDG_CONFIG_HOME", xdg.clone())],
            xdg.join("Claude/claude_desktop_config.json"),
        ),
        (&["--host", "claude-code"], &[], home.join(".claude.json")),
        (
            &["--host", "claude-code"],
            &[("CLAUDE_CONFIG_DIR", cc.clone())],
            cc.join(".claude.json"),
        ),
        (
            &["--host", "claude-code", "--project", proj.to_str().unwrap()],
            &[],
            proj.join(".mcp.json"),
        ),
        (
            &["--host", "vscode"],
            &[],
            home.join(".config/Code/User/mcp.json"),
        ),
        (
            &["--host", "vscode", "--project", proj.to_str().unwrap()],
            &[],
            proj.join(".vscode/mcp.json"),
        ),
        (&["--host", "cursor"], &[], home.join(".cursor/mcp.json")),
        (
            &["--host", "cursor", "--project", proj.to_str().unwrap()],
            &[],
            proj.join(".cursor/mcp.json"),
        ),
    ];
    for (args, envs, expected) in cases {
        let _ = std::fs::remove_dir_all(e.dir.path().join("home"));
        let _ = std::fs::remove_dir_all(&xdg);
        let _ = std::fs::remove_dir_all(&cc);
        let _ = std::fs::remove_dir_all(&proj);
        std::fs::create_dir_all(expected.parent().unwrap()).unwrap();
        std::fs::write(expected, CONFIG).unwrap();
        let mut a = vec!["wrap"];
        a.extend_from_slice(args);
        a.extend_from_slice(&["--rootfence-path", RF]);
        let o = e.run_env(&a, envs);
        assert_eq!(o.status.code(), Some(0), "{args:?}: {}", stderr(&o));
        let v = value_of(&std::fs::read_to_string(expected).unwrap());
        assert_eq!(v["mcpServers"]["files"]["command"], RF, "{args:?}");
        assert!(
            stderr(&o).contains(&format!("wrote {}", expected.display())),
            "{args:?}: {}",
            stderr(&o)
        );
        let mut a = vec!["unwrap"];
        a.extend_from_slice(args);
        let o = e.run_env(&a, envs);
        assert_eq!(o.status.code(), Some(0), "{args:?}: {}", stderr(&o));
        assert_eq!(std::fs::read_to_string(expected).unwrap(), CONFIG);
    }
}

// ---- Writing: dry run, backups, atomic replacement ------------------------------------

#[test]
fn dry_run_prints_the_diff_and_writes_nothing() {
    let e = Env::new();
    let f = e.write("c.json", CONFIG);
    let before = std::fs::metadata(&f).unwrap().modified().unwrap();
    let o = e.run(&[
        "wrap",
        f.to_str().unwrap(),
        "--rootfence-path",
        RF,
        "--dry-run",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let diff = stdout(&o);
    let fs = f.to_str().unwrap();
    assert!(
        diff.starts_with(&format!("--- {fs}\n+++ {fs}\n@@ -1,8 +1,8 @@\n")),
        "{diff}"
    );
    assert!(
        diff.contains("-      \"command\": \"npx\",\n-      \"args\": [\"-y\", \"@modelcontextprotocol/server-filesystem\", \"/tmp\"]\n+      \"command\": \"/opt/rootfence/bin/rootfence\",\n+      \"args\": [\"run\", \"--\", \"npx\", \"-y\", \"@modelcontextprotocol/server-filesystem\", \"/tmp\"]\n"),
        "{diff}"
    );
    assert!(stderr(&o).contains("dry run:"), "{}", stderr(&o));
    assert_eq!(std::fs::read_to_string(&f).unwrap(), CONFIG);
    assert_eq!(std::fs::metadata(&f).unwrap().modified().unwrap(), before);
    assert!(files_containing(e.dir.path(), "rootfence-backup").is_empty());
}

#[test]
fn no_backup_flag() {
    let e = Env::new();
    let f = e.write("c.json", CONFIG);
    let o = e.run(&[
        "wrap",
        f.to_str().unwrap(),
        "--rootfence-path",
        RF,
        "--no-backup",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(files_containing(e.dir.path(), "rootfence-backup").is_empty());
    assert!(stderr(&o).contains(&format!("wrote {}\n", f.display())));
}

/// Backups are never overwritten: three changes within one second leave three backups,
/// each holding the version it replaced.
#[test]
fn every_change_keeps_its_own_backup() {
    let e = Env::new();
    let f = e.write("c.json", CONFIG);
    let fs = f.to_str().unwrap();
    let mut versions = vec![CONFIG.to_string()];
    for args in [
        vec!["wrap", fs, "--rootfence-path", RF],
        vec!["unwrap", fs],
        vec!["wrap", fs, "--rootfence-path", RF],
    ] {
        let o = e.run(&args);
        assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
        versions.push(std::fs::read_to_string(&f).unwrap());
    }
    let backups = files_containing(e.dir.path(), "rootfence-backup");
    assert_eq!(backups.len(), 3, "{backups:?}");
    let mut contents: Vec<String> = backups
        .iter()
        .map(|b| std::fs::read_to_string(b).unwrap())
        .collect();
    contents.sort();
    let mut want = versions[..3].to_vec();
    want.sort();
    assert_eq!(contents, want);
    for b in &backups {
        let name = b.file_name().unwrap().to_str().unwrap();
        assert!(name.starts_with("c.json.rootfence-backup-"), "{name}");
        let stamp = &name["c.json.rootfence-backup-".len()..][..16];
        assert!(
            stamp.len() == 16 && stamp.ends_with('Z') && stamp.as_bytes()[8] == b'T',
            "{name}"
        );
    }
}

/// A config that is a symlink (dotfile managers) stays a symlink; its target is replaced
/// and the backup sits beside the target.
#[test]
fn symlinked_config_keeps_its_link() {
    let e = Env::new();
    let real = e.write("dotfiles/cursor-mcp.json", CONFIG);
    let link = e.path("home/.cursor/mcp.json");
    std::fs::create_dir_all(link.parent().unwrap()).unwrap();
    std::os::unix::fs::symlink(&real, &link).unwrap();
    let o = e.run(&["wrap", "--host", "cursor", "--rootfence-path", RF]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(
        std::fs::symlink_metadata(&link)
            .unwrap()
            .file_type()
            .is_symlink()
    );
    let v = value_of(&std::fs::read_to_string(&real).unwrap());
    assert_eq!(v["mcpServers"]["files"]["command"], RF);
    assert_eq!(
        files_containing(real.parent().unwrap(), "rootfence-backup").len(),
        1
    );
    assert!(files_containing(link.parent().unwrap(), "rootfence-backup").is_empty());
}

/// A host that rewrites its file while rootfence works must not lose its change: the
/// write is refused and nothing is left behind.
#[test]
fn file_changed_underneath_is_not_overwritten() {
    let e = Env::new();
    let f = e.write("c.json", CONFIG);
    let host_version = CONFIG.replace("/tmp", "/srv");
    std::fs::write(&f, &host_version).unwrap();
    let err = wrap::replace_file(&f, CONFIG.as_bytes(), b"{}", true).unwrap_err();
    assert!(matches!(err, WriteError::Changed { .. }), "{err}");
    assert!(
        err.to_string()
            .contains("quit the host and run the command again")
    );
    assert_eq!(std::fs::read_to_string(&f).unwrap(), host_version);
    assert!(files_containing(e.dir.path(), "rootfence-backup").is_empty());
    assert!(files_containing(e.dir.path(), "rootfence-tmp").is_empty());
}

/// A reader polling the file while it is rewritten many times only ever sees a whole
/// version, never a torn or empty one.
#[test]
fn readers_never_see_a_partial_file() {
    let e = Env::new();
    let big: String = {
        let servers: Vec<String> = (0..300)
            .map(|i| {
                format!("    \"s{i}\": {{\"command\": \"npx\", \"args\": [\"-y\", \"pkg-{i}\"]}}")
            })
            .collect();
        format!(
            "{{\n  \"mcpServers\": {{\n{}\n  }}\n}}\n",
            servers.join(",\n")
        )
    };
    let f = e.write("c.json", &big);
    let opts = wrap::WrapOptions {
        rootfence: RF.into(),
        ..Default::default()
    };
    let wrapped = wrap::wrap_config(&big, &opts).unwrap().text;
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let reader = {
        let (f, stop, a, b) = (f.clone(), stop.clone(), big.clone(), wrapped.clone());
        std::thread::spawn(move || {
            let mut reads = 0u32;
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                let now = std::fs::read_to_string(&f).unwrap();
                assert!(now == a || now == b, "torn read of {} bytes", now.len());
                reads += 1;
            }
            reads
        })
    };
    let mut cur = big.clone();
    for _ in 0..50 {
        let next = if cur == big { &wrapped } else { &big };
        wrap::replace_file(&f, cur.as_bytes(), next.as_bytes(), false).unwrap();
        cur = next.clone();
    }
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let reads = reader.join().expect("the reader saw only whole versions");
    assert!(reads > 0);
}

/// Run as root over a user's file (an org rollout done wrong), the new file and its backup
/// still belong to the user.
#[test]
fn owner_and_group_are_kept_when_run_as_root() {
    if !nix::unistd::geteuid().is_root() {
        eprintln!("skipped: needs root to create a file owned by someone else");
        return;
    }
    let e = Env::new();
    let f = e.write("c.json", CONFIG);
    std::os::unix::fs::chown(&f, Some(4242), Some(4343)).unwrap();
    std::fs::set_permissions(&f, std::fs::Permissions::from_mode(0o600)).unwrap();
    let o = e.run(&["wrap", f.to_str().unwrap(), "--rootfence-path", RF]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let m = std::fs::metadata(&f).unwrap();
    assert_eq!((m.uid(), m.gid(), m.mode() & 0o7777), (4242, 4343, 0o600));
    let b = &files_containing(e.dir.path(), "rootfence-backup")[0];
    let m = std::fs::metadata(b).unwrap();
    assert_eq!((m.uid(), m.gid(), m.mode() & 0o777), (4242, 4343, 0o600));
}

// ---- Completions and man pages ----------------------------------------------------------

#[test]
fn completions_for_bash_zsh_fish_mention_the_subcommands() {
    let e = Env::new();
    for shell in ["bash", "zsh", "fish"] {
        let o = e.run(&["completions", shell]);
        assert_eq!(o.status.code(), Some(0), "{shell}: {}", stderr(&o));
        let script = stdout(&o);
        for word in [
            "wrap",
            "unwrap",
            "run",
            "audit",
            "policy",
            "host",
            "claude-desktop",
            "rewrap",
        ] {
            assert!(script.contains(word), "{shell}: no {word}");
        }
        let long = if shell == "fish" {
            "-l rewrap"
        } else {
            "--rewrap"
        };
        assert!(script.contains(long), "{shell}: no {long}");
        // The script parses in its shell, when that shell is installed.
        let check = match shell {
            "bash" => Some(("bash", "-n")),
            "zsh" => Some(("zsh", "-n")),
            _ => Some(("fish", "--no-execute")),
        };
        if let Some((sh, flag)) = check {
            let path = e.path(&format!("completion.{shell}"));
            std::fs::write(&path, &script).unwrap();
            match Command::new(sh).arg(flag).arg(&path).output() {
                Ok(r) => assert!(
                    r.status.success(),
                    "{shell}: {}",
                    String::from_utf8_lossy(&r.stderr)
                ),
                Err(_) => eprintln!("{sh} not installed: syntax of the {shell} script not checked"),
            }
        }
    }
    let o = e.run(&["completions", "tcsh"]);
    assert_eq!(o.status.code(), Some(2));
}

#[test]
fn man_pages_are_generated_from_the_cli() {
    let e = Env::new();
    let o = e.run(&["man"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let page = stdout(&o);
    assert!(page.contains(".TH rootfence 1"), "{page}");
    for sub in ["wrap", "unwrap", "run", "completions", "man"] {
        assert!(
            page.contains(&format!("rootfence\\-{sub}")) || page.contains(sub),
            "{sub}"
        );
    }
    let dir = e.path("man1");
    let o = e.run(&["man", "--dir", dir.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let wrap_page = std::fs::read_to_string(dir.join("rootfence-wrap.1")).unwrap();
    for opt in [
        "\\-\\-policy",
        "\\-\\-host",
        "\\-\\-rewrap",
        "\\-\\-dry\\-run",
        "claude\\-desktop",
    ] {
        assert!(wrap_page.contains(opt), "rootfence-wrap.1 lacks {opt}");
    }
    assert!(dir.join("rootfence-unwrap.1").exists());
    assert!(dir.join("rootfence.1").exists());
    // `man` can render it, when installed.
    if let Ok(r) = Command::new("man")
        .arg("-l")
        .arg(dir.join("rootfence-wrap.1"))
        .env("MANPAGER", "cat")
        .output()
        && r.status.success()
    {
        assert!(String::from_utf8_lossy(&r.stdout).contains("rewrap"));
    }
}

// ---- The examples' scripts ----------------------------------------------------------------

/// `examples/configs/rollout/rollout.sh` over two homes: every host config found is wrapped
/// with the org policy, a second run changes nothing, and a broken config is reported
/// without stopping the others.
#[test]
fn rollout_script_wraps_every_home_idempotently() {
    let e = Env::new();
    let policy = e.policy();
    let alice = e.path("homes/alice");
    let bob = e.path("homes/bob");
    let files = [
        alice.join(".config/Claude/claude_desktop_config.json"),
        alice.join(".cursor/mcp.json"),
        bob.join(".claude.json"),
        bob.join(".config/Code/User/mcp.json"),
    ];
    for f in &files {
        std::fs::create_dir_all(f.parent().unwrap()).unwrap();
        let text = if f.ends_with("Code/User/mcp.json") {
            CONFIG.replace("mcpServers", "servers")
        } else {
            CONFIG.to_string()
        };
        std::fs::write(f, text).unwrap();
    }
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/configs/rollout/rollout.sh");
    let run = |extra: &[&Path]| {
        let mut c = Command::new("sh");
        c.arg(&script)
            .args(extra)
            .env("ROOTFENCE", env!("CARGO_BIN_EXE_rootfence"))
            .env("ROOTFENCE_POLICY", &policy)
            .env("XDG_CONFIG_HOME", e.path("not-used"));
        c.output().unwrap()
    };
    let o = run(&[&alice, &bob]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let mut wrapped = Vec::new();
    for f in &files {
        let v = value_of(&std::fs::read_to_string(f).unwrap());
        let map = v.get("mcpServers").or_else(|| v.get("servers")).unwrap();
        assert_eq!(map["files"]["args"][2], policy.as_str(), "{}", f.display());
        assert!(
            Path::new(map["files"]["command"].as_str().unwrap()).ends_with("rootfence"),
            "{}",
            f.display()
        );
        wrapped.push(std::fs::read(f).unwrap());
    }
    // Again: idempotent, nothing on stdout, nothing written.
    let o = run(&[&alice, &bob]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(stdout(&o).is_empty(), "{}", stdout(&o));
    for (f, w) in files.iter().zip(&wrapped) {
        assert_eq!(&std::fs::read(f).unwrap(), w);
    }
    // A broken config: exit 2, named, the other home still handled.
    let carol = e.path("homes/carol");
    e.write("homes/carol/.cursor/mcp.json", "{\"mcpServers\": {");
    let dave_cfg = e.write("homes/dave/.cursor/mcp.json", CONFIG);
    let o = run(&[&carol, &e.path("homes/dave")]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("homes/carol: cursor: failed (exit 2)"),
        "{}",
        stderr(&o)
    );
    let v = value_of(&std::fs::read_to_string(&dave_cfg).unwrap());
    assert_eq!(v["mcpServers"]["files"]["args"][2], policy.as_str());
}

#[test]
fn try_script_runs() {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/configs/try.sh");
    let o = Command::new("sh")
        .arg(&script)
        .arg(env!("CARGO_BIN_EXE_rootfence"))
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    let out = stdout(&o);
    assert_eq!(
        out.matches("(unwrap gave back the original bytes)").count(),
        5,
        "{out}"
    );
    assert_eq!(
        out.matches("(wrapping again changed nothing)").count(),
        5,
        "{out}"
    );
}

/// Issue 27: an entry whose command line names no directory gets no root from `wrap`; the
/// output says so, and what to add, the first time the user could need to know.
#[test]
fn an_entry_without_a_directory_is_told_it_has_no_root() {
    let e = Env::new();
    let proj = e.path("proj");
    std::fs::create_dir_all(&proj).unwrap();
    let config = format!(
        r#"{{"mcpServers": {{
  "commander": {{"command": "npx", "args": ["-y", "@wonderwhy-er/desktop-commander"]}},
  "files": {{"command": "npx", "args": ["-y", "@modelcontextprotocol/server-filesystem", "{}"]}}
}}}}
"#,
        proj.display()
    );
    let f = e.write("c.json", &config);
    let o = e.run(&["wrap", f.to_str().unwrap()]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{err}");
    assert!(
        err.contains(
            "`commander`: no root: its command line names no directory, so it gets roots only \
             from the host"
        ) && err.contains("--rewrap --run-arg=--root=DIR"),
        "{err}"
    );
    assert!(!err.contains("`files`: no root"), "{err}");
    // Given a root, nothing is missing.
    let f = e.write("d.json", &config);
    let arg = format!("--run-arg=--root={}", proj.display());
    let o = e.run(&["wrap", f.to_str().unwrap(), &arg]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{err}");
    assert!(!err.contains("no root:"), "{err}");
}
