//! Policy hot reload on SIGHUP (issue 15), through the real binary run as a host runs it
//! (roots sent, default sandbox): a reload to a narrower policy denies what was allowed;
//! a policy that fails validation (a syntax error, or a later layer widening an earlier
//! one) is refused, the old policy stays, and stderr and the audit log say why. SIGHUP is
//! not forwarded to the server.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::{Proxy, eventually, rootfence, tempdir, test_server};
use serde_json::{Value, json};

struct Session {
    p: Proxy,
    root: String,
    log: PathBuf,
}

fn start(project: &Path, log: &Path, policies: &[&Path]) -> Session {
    let mut cmd = Command::new(rootfence());
    cmd.current_dir(project).arg("run");
    for p in policies {
        cmd.arg("--policy").arg(p);
    }
    cmd.arg("--audit-log").arg(log).arg("--").arg(test_server());
    let mut p = Proxy::spawn(cmd);
    p.send_json(
        &json!({"jsonrpc":"2.0","id":0,"method":"initialize","params":{
        "protocolVersion":"2025-06-18","capabilities":{"roots":{"listChanged":true}},
        "clientInfo":{"name":"test-host","version":"0"}}}),
    );
    let ask = p.recv();
    assert_eq!(ask["method"], "roots/list", "{ask}; {}", p.stderr());
    let root = format!("file://{}", project.display());
    p.send_json(&json!({"jsonrpc":"2.0","id":ask["id"],"result":{"roots":[{"uri":root}]}}));
    assert_eq!(p.recv()["id"], 0);
    p.send(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#);
    Session {
        p,
        root,
        log: log.to_path_buf(),
    }
}

impl Session {
    fn read(&mut self, id: u64, name: &str) -> Value {
        let uri = format!("{}/{name}", self.root);
        let raw = json!({"contents":[{"uri":uri,"text":"x"}]}).to_string();
        self.p
            .send_json(&json!({"jsonrpc":"2.0","id":id,"method":"resources/read",
            "params":{"uri":uri,"_rawResult":raw}}));
        self.p.recv()
    }

    fn hup(&self, wait_for: &str) {
        let before = self.p.stderr().matches(wait_for).count();
        nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(self.p.child.id() as i32),
            nix::sys::signal::Signal::SIGHUP,
        )
        .unwrap();
        eventually(wait_for, || {
            self.p.stderr().matches(wait_for).count() > before
        });
    }

    fn reloads(&self) -> Vec<Value> {
        std::fs::read_to_string(&self.log)
            .unwrap()
            .lines()
            .map(|l| serde_json::from_str::<Value>(l).unwrap())
            .filter(|v| v["event"] == "policy_reload")
            .collect()
    }

    fn end(mut self) -> String {
        self.p.close_stdin();
        assert_eq!(self.p.exit_code(), 0, "{}", self.p.stderr());
        self.p.stderr()
    }
}

fn project() -> (tempfile::TempDir, PathBuf) {
    let t = tempdir();
    let project = t.path().join("project");
    std::fs::create_dir(&project).unwrap();
    std::fs::write(project.join("a.txt"), "a").unwrap();
    std::fs::write(project.join("notes.md"), "n").unwrap();
    let project = project.canonicalize().unwrap();
    (t, project)
}

fn sha256_hex(b: &[u8]) -> String {
    use sha2::Digest;
    sha2::Sha256::digest(b)
        .iter()
        .map(|x| format!("{x:02x}"))
        .collect()
}

#[test]
fn reload_to_a_narrower_policy_denies_what_was_allowed() {
    let (t, project) = project();
    let policy = t.path().join("policy.toml");
    std::fs::write(&policy, "version = 1\n").unwrap();
    let mut s = start(&project, &t.path().join("audit.jsonl"), &[&policy]);
    assert!(s.read(1, "notes.md").get("result").is_some());

    let narrower =
        "version = 1\n[resources]\ndeny = [\"**/*.md\"]\n[sandbox]\nnetwork = \"deny\"\n";
    std::fs::write(&policy, narrower).unwrap();
    s.hup("policy reloaded");
    let r = s.read(2, "notes.md");
    assert!(r.get("error").is_some(), "denied after the reload: {r}");
    // The server was not sent SIGHUP: it still answers.
    assert!(s.read(3, "a.txt").get("result").is_some());
    let stderr = s.p.stderr();
    assert!(
        stderr.contains("not applied now: [sandbox]: the running server's sandbox cannot change"),
        "{stderr}"
    );
    let reloads = s.reloads();
    assert_eq!(reloads.len(), 1);
    assert_eq!(reloads[0]["ok"], true);
    let files = reloads[0]["policy_files"].as_array().unwrap();
    assert!(
        files
            .iter()
            .any(|f| f["sha256"] == sha256_hex(narrower.as_bytes())),
        "{files:?}"
    );
    assert!(
        reloads[0]["deferred"][0]
            .as_str()
            .unwrap()
            .contains("[sandbox]")
    );
    // The denial names the reloaded rule.
    let log = std::fs::read_to_string(&s.log).unwrap();
    let denial: Value = log
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .find(|v| v["event"] == "decision" && v["decision"] == "deny")
        .unwrap();
    assert!(
        denial["rule"].as_str().unwrap().contains("**/*.md"),
        "{denial}"
    );
    s.end();
}

#[test]
fn broken_policy_on_reload_keeps_the_old_one_and_says_why() {
    let (t, project) = project();
    let policy = t.path().join("policy.toml");
    std::fs::write(&policy, "version = 1\n").unwrap();
    let mut s = start(&project, &t.path().join("audit.jsonl"), &[&policy]);
    assert!(s.read(1, "notes.md").get("result").is_some());

    std::fs::write(&policy, "version = 1\n[resources]\ndeny = [\"**/*.md\"\n").unwrap();
    s.hup("policy reload refused");
    // Read at once: the reload's record is on disk before stderr announces it. It used to be
    // handed to the writer thread after the message, and this test failed in CI when that
    // thread was slower than the test under load.
    let reloads = s.reloads();
    let stderr = s.p.stderr();
    assert!(
        stderr.contains("the previous policy stays in force"),
        "{stderr}"
    );
    assert!(stderr.contains("invalid TOML"), "{stderr}");
    // The old policy is still in force: the read is still allowed.
    assert!(s.read(2, "notes.md").get("result").is_some());
    assert_eq!(reloads.len(), 1);
    assert_eq!(reloads[0]["ok"], false);
    assert!(
        reloads[0]["error"]
            .as_str()
            .unwrap()
            .contains("invalid TOML"),
        "{}",
        reloads[0]
    );
    s.end();
}

#[test]
fn widening_layer_on_reload_is_refused_by_the_layering_rules() {
    let (t, project) = project();
    let org = t.path().join("org.toml");
    let proj = t.path().join("project.toml");
    std::fs::write(&org, "version = 1\n[resources]\nmax_bytes = 1000\n").unwrap();
    std::fs::write(&proj, "version = 1\n").unwrap();
    let mut s = start(&project, &t.path().join("audit.jsonl"), &[&org, &proj]);
    // The project layer tries to widen the org's limit: the same check as `policy check`.
    std::fs::write(&proj, "version = 1\n[resources]\nmax_bytes = 5000\n").unwrap();
    s.hup("policy reload refused");
    // At once: the record is on disk before stderr says so.
    assert_eq!(s.reloads()[0]["ok"], false);
    let stderr = s.p.stderr();
    assert!(stderr.contains("error[widening]"), "{stderr}");
    assert!(s.read(1, "a.txt").get("result").is_some());
    let stderr = s.end();
    assert!(!stderr.contains("policy reloaded"), "{stderr}");
}
