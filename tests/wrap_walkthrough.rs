//! The scenario of `docs/walkthrough-audit.md`, run for real: a developer's Claude Desktop
//! config is wrapped with the org policy, a session reads a README (allowed), a `.env`
//! (denied by the org policy) and a key behind a symlink that leaves the project (denied),
//! and the reviewer's commands (`rootfence audit verify|summary|show`) find it all.
//!
//! Set `ROOTFENCE_WALKTHROUGH_DIR=/some/empty/dir` to keep the log and the commands' output
//! there (that is how the sample output in the walk-through was produced).

mod common;
mod wrap_support;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::{Proxy, test_server};
use serde_json::{Value, json};
use wrap_support::*;

fn rootfence_out(args: &[&str], home: &Path) -> (i32, String) {
    let o = Command::new(env!("CARGO_BIN_EXE_rootfence"))
        .args(args)
        .env("HOME", home)
        .env_remove("XDG_CONFIG_HOME")
        .env("NO_COLOR", "1")
        .output()
        .unwrap();
    (
        o.status.code().unwrap_or(-1),
        format!("{}{}", stdout(&o), stderr(&o)),
    )
}

#[test]
fn denied_read_is_found_by_the_audit_commands() {
    let keep = std::env::var_os("ROOTFENCE_WALKTHROUGH_DIR").map(PathBuf::from);
    let tmp = tempfile::tempdir().unwrap();
    let demo = keep.clone().unwrap_or_else(|| tmp.path().to_path_buf());
    let home = demo.join("home");
    let app = home.join("work/app");
    std::fs::create_dir_all(app.join("src")).unwrap();
    std::fs::create_dir_all(home.join(".ssh")).unwrap();
    std::fs::write(app.join("README.md"), "# app\n\nHow to build the app.\n").unwrap();
    std::fs::write(app.join(".env"), "API_TOKEN=not-for-models\n").unwrap();
    std::fs::write(home.join(".ssh/id_ed25519"), "PRIVATE KEY\n").unwrap();
    // A link inside the project that leads out of it (CVE-2025-53109's shape).
    std::os::unix::fs::symlink(home.join(".ssh"), app.join("docs")).unwrap();

    // The org policy as shipped, and a project layer that has rootfence serve file reads.
    let org = Path::new(env!("CARGO_MANIFEST_DIR")).join("policies/org-example.toml");
    let project = demo.join("project.toml");
    std::fs::write(&project, "version = 1\n[resources]\nread = \"serve\"\n").unwrap();
    let audit = demo.join("audit.jsonl");

    // The developer's Claude Desktop config, wrapped.
    let cfg = home.join(".config/Claude/claude_desktop_config.json");
    std::fs::create_dir_all(cfg.parent().unwrap()).unwrap();
    std::fs::write(
        &cfg,
        serde_json::to_string_pretty(&json!({"mcpServers": {"files": {"command": test_server()}}}))
            .unwrap(),
    )
    .unwrap();
    let (code, out) = rootfence_out(
        &[
            "wrap",
            "--host",
            "claude-desktop",
            "--policy",
            org.to_str().unwrap(),
            "--policy",
            project.to_str().unwrap(),
            &format!("--run-arg=--root={}", app.display()),
            &format!("--run-arg=--audit-log={}", audit.display()),
        ],
        &home,
    );
    assert_eq!(code, 0, "{out}");
    let entry: Value = serde_json::from_str::<Value>(&std::fs::read_to_string(&cfg).unwrap())
        .unwrap()["mcpServers"]["files"]
        .clone();

    // The session, started as Claude Desktop starts it.
    let mut cmd = Command::new(entry["command"].as_str().unwrap());
    cmd.args(
        entry["args"]
            .as_array()
            .unwrap()
            .iter()
            .map(|a| a.as_str().unwrap()),
    )
    .env("HOME", &home);
    let mut p = Proxy::spawn(cmd);
    let init = p.initialize("2025-06-18");
    assert_eq!(init["result"]["protocolVersion"], "2025-06-18", "{init}");
    let read = |p: &mut Proxy, id: u32, path: &Path| {
        p.send_json(
            &json!({"jsonrpc": "2.0", "id": id, "method": "resources/read",
            "params": {"uri": format!("file://{}", path.display())}}),
        );
        p.recv()
    };
    let ok = read(&mut p, 1, &app.join("README.md"));
    assert!(
        ok["result"]["contents"][0]["text"]
            .as_str()
            .is_some_and(|t| t.contains("How to build")),
        "{ok}"
    );
    let env = read(&mut p, 2, &app.join(".env"));
    assert_eq!(env["error"]["code"], -32010, "{env}");
    assert_eq!(env["error"]["data"]["reason"], "policy_deny", "{env}");
    let key = read(&mut p, 3, &app.join("docs/id_ed25519"));
    assert_eq!(key["error"]["code"], -32010, "{key}");
    p.close_stdin();
    p.expect_eof();
    assert_eq!(p.exit_code(), 0, "{}", p.stderr());
    let escape_reason = key["error"]["data"]["reason"].as_str().unwrap().to_string();

    // The reviewer's side.
    let log = audit.to_str().unwrap();
    let (code, verify) = rootfence_out(&["audit", "verify", log], &home);
    assert_eq!(code, 0, "{verify}");
    let (code, summary) = rootfence_out(&["audit", "summary", log], &home);
    assert_eq!(code, 0, "{summary}");
    assert!(summary.contains(".env"), "{summary}");
    let (code, denied) = rootfence_out(&["audit", "show", "--denied", log], &home);
    assert_eq!(code, 0, "{denied}");
    assert!(denied.contains("policy_deny"), "{denied}");
    assert!(denied.contains(&escape_reason), "{denied}");
    assert!(!denied.contains("README.md"), "{denied}");
    let (code, all) = rootfence_out(&["audit", "show", log], &home);
    assert_eq!(code, 0, "{all}");
    assert!(all.contains("README.md"), "{all}");
    let (code, json_lines) = rootfence_out(&["audit", "show", "--denied", "--json", log], &home);
    assert_eq!(code, 0);
    let records: Vec<Value> = json_lines
        .lines()
        .filter(|l| l.starts_with('{'))
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert!(records.iter().any(|r| r["reason"] == "policy_deny"
        && r["rule"].as_str().is_some_and(|s| s.contains("**/.env"))));

    if keep.is_some() {
        for (name, text) in [
            ("wrap.txt", &out),
            ("verify.txt", &verify),
            ("summary.txt", &summary),
            ("show-denied.txt", &denied),
            ("show.txt", &all),
            ("show-denied.jsonl", &json_lines),
        ] {
            std::fs::write(demo.join(name), text).unwrap();
        }
        std::fs::write(
            demo.join("responses.json"),
            serde_json::to_string_pretty(&json!([ok, env, key])).unwrap(),
        )
        .unwrap();
    }
}
