//! rootfence's built-in profile catalogue (issue 27, `src/sandbox/profiles.toml`), through
//! the real binary: a plain `rootfence wrap` (no trial start) gives basic-memory and serena
//! the state directories their packages are known to keep in the home, matched by package
//! identity (`uvx pkg@ver`, `uvx --from pkg`, a pipx venv behind a `~/.local/bin` link),
//! names each with why, creates them (mode 0700) only when it writes, never grants the home,
//! and never reaches what the policy denies.

use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::{Command, Stdio};

use serde_json::{Value, json};

const RF: &str = env!("CARGO_BIN_EXE_rootfence");

fn wrap(home: &Path, config: &Path, extra: &[&str]) -> (Option<i32>, String) {
    let path = format!(
        "{}:{}",
        home.join(".local/bin").display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let out = Command::new(RF)
        .arg("wrap")
        .arg(config)
        .args(["--rootfence-path", RF])
        .args(extra)
        .env("HOME", home)
        .env("PATH", path)
        .env_remove("XDG_CONFIG_HOME")
        .env_remove("XDG_STATE_HOME")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// A Claude Desktop config in a temporary home: basic-memory and serena through uvx,
/// basic-memory installed with pipx (a link in `~/.local/bin` into its venv), and
/// mcp-server-git, which keeps no state of its own.
fn setup() -> (tempfile::TempDir, std::path::PathBuf, std::path::PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let home = std::fs::canonicalize(dir.path()).unwrap();
    let venv_bin = home.join(".local/share/pipx/venvs/basic-memory/bin");
    std::fs::create_dir_all(&venv_bin).unwrap();
    let exe = venv_bin.join("basic-memory");
    std::fs::write(&exe, "#!/bin/sh\n").unwrap();
    std::fs::set_permissions(&exe, std::fs::Permissions::from_mode(0o755)).unwrap();
    std::fs::create_dir_all(home.join(".local/bin")).unwrap();
    std::os::unix::fs::symlink(&exe, home.join(".local/bin/basic-memory")).unwrap();
    let config = home.join(".config/Claude/claude_desktop_config.json");
    std::fs::create_dir_all(config.parent().unwrap()).unwrap();
    let text = serde_json::to_string_pretty(&json!({"mcpServers": {
        "basic-memory": {"command": "uvx", "args": ["--python", "3.12", "basic-memory@0.24.1", "mcp"]},
        "serena": {"command": "uvx", "args": ["--from", "serena-agent@2.1.0", "serena", "start-mcp-server"]},
        "notes-pipx": {"command": "basic-memory", "args": ["mcp"]},
        "git": {"command": "uvx", "args": ["mcp-server-git@2026.10.19"]},
    }}))
    .unwrap();
    std::fs::write(&config, text).unwrap();
    (dir, home, config)
}

fn args_of(config: &Path, name: &str) -> Vec<String> {
    let v: Value = serde_json::from_str(&std::fs::read_to_string(config).unwrap()).unwrap();
    v["mcpServers"][name]["args"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a.as_str().unwrap().to_owned())
        .collect()
}

/// The `--write` values before `--`.
fn writes(args: &[String]) -> Vec<String> {
    let end = args.iter().position(|a| a == "--").unwrap();
    args[..end]
        .windows(2)
        .filter(|w| w[0] == "--write")
        .map(|w| w[1].clone())
        .collect()
}

#[test]
fn catalogue_grants_known_state_by_package_identity_without_a_trial() {
    let (_dir, home, config) = setup();
    let s = |p: &str| home.join(p).display().to_string();

    // A dry run shows the grants and creates nothing.
    let (code, err) = wrap(&home, &config, &["--dry-run"]);
    assert_eq!(code, Some(0), "{err}");
    assert!(
        !home.join(".basic-memory").exists(),
        "a dry run created state"
    );

    let (code, err) = wrap(&home, &config, &[]);
    assert_eq!(code, Some(0), "{err}");
    assert!(
        !err.contains("learn:"),
        "a plain wrap started a server:\n{err}"
    );
    let bm = [s(".basic-memory"), s("basic-memory")];
    assert_eq!(writes(&args_of(&config, "basic-memory")), bm);
    assert_eq!(writes(&args_of(&config, "notes-pipx")), bm);
    assert_eq!(writes(&args_of(&config, "serena")), [s(".serena")]);
    assert!(writes(&args_of(&config, "git")).is_empty());
    for (name, dir, package) in [
        ("basic-memory", ".basic-memory", "PyPI basic-memory"),
        ("basic-memory", "basic-memory", "PyPI basic-memory"),
        ("serena", ".serena", "PyPI serena-agent"),
    ] {
        // Named with why, and created as the server would (a grant needs the directory).
        let line = err
            .lines()
            .find(|l| l.starts_with(&format!("rootfence: wrapped `{name}`")))
            .unwrap_or_else(|| panic!("no report for {name}:\n{err}"));
        assert!(
            line.contains(&format!(
                "its known state: --write {}",
                home.join(dir).display()
            )) || line.contains(&format!(", --write {} (", home.join(dir).display())),
            "{line}"
        );
        assert!(
            line.contains(&format!("rootfence's catalogue ({package})")),
            "{line}"
        );
        let meta = std::fs::metadata(home.join(dir)).unwrap();
        assert!(meta.is_dir());
        assert_eq!(meta.permissions().mode() & 0o777, 0o700, "{dir}");
    }
    // Never the home.
    let home_s = home.display().to_string();
    for name in ["basic-memory", "serena", "notes-pipx", "git"] {
        assert!(
            !writes(&args_of(&config, name)).contains(&home_s),
            "{name} got the home"
        );
    }
}

#[test]
fn catalogue_grants_never_reach_what_the_policy_denies() {
    let (dir, home, config) = setup();
    let policy = dir.path().join("no-notes.toml");
    std::fs::write(
        &policy,
        "version = 1\n[resources]\ndeny = [\"**/basic-memory\", \"**/basic-memory/**\"]\n",
    )
    .unwrap();
    let policy = policy.display().to_string();
    let (code, err) = wrap(
        &home,
        &config,
        &["--policy", "builtin:default", "--policy", &policy],
    );
    assert_eq!(code, Some(0), "{err}");
    let notes = home.join("basic-memory");
    assert_eq!(
        writes(&args_of(&config, "basic-memory")),
        [home.join(".basic-memory").display().to_string()],
        "{err}"
    );
    assert!(
        err.contains(&format!(
            "`basic-memory`: not granted from the catalogue: --write {}",
            notes.display()
        )) && err.contains("is denied by the policy"),
        "{err}"
    );
    assert!(!notes.exists(), "a refused grant's directory was created");
}
