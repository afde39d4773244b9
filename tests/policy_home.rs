//! Issue 27: the superuser's home. Running as root (containers, devcontainers, CI), `/root`
//! is the user's own home: the built-in default refuses a root inside it only to other
//! users (`roots.other_homes`), and the shipped org + project policies pass `policy check`
//! there. Checked through the real binary, as the suite's user (root here) with
//! `HOME=/root` and as a normal user (uid 65534 when the suite runs as root).

mod common;

use std::os::unix::process::CommandExt;
use std::process::{Command, Output};

const NOBODY: u32 = 65534;

fn policy(name: &str) -> String {
    format!("{}/policies/{name}", env!("CARGO_MANIFEST_DIR"))
}

/// `rootfence policy check FILES...` with `HOME=home`, as uid 65534 when `nobody`.
fn check(files: &[&str], home: &str, nobody: bool) -> Output {
    let mut c = Command::new(common::rootfence());
    c.args(["policy", "check"])
        .args(files)
        .env("HOME", home)
        .current_dir("/");
    if nobody {
        c.uid(NOBODY).gid(NOBODY);
    }
    c.output().expect("rootfence runs")
}

fn text(o: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

fn is_root() -> bool {
    nix::unistd::geteuid().is_root()
}

#[test]
fn project_example_passes_policy_check_in_the_superusers_home_and_a_users() {
    let files = [policy("org-example.toml"), policy("project-example.toml")];
    let files: Vec<&str> = files.iter().map(String::as_str).collect();
    let project = [files[1]];
    for (home, nobody) in [("/root", false), ("/home/u", false), ("/home/u", true)] {
        if nobody && !is_root() {
            continue;
        }
        for set in [&files[..], &project[..]] {
            let o = check(set, home, nobody);
            assert!(
                o.status.success(),
                "HOME={home} nobody={nobody} {set:?}:\n{}",
                text(&o)
            );
        }
    }
}

#[test]
fn a_root_in_the_superusers_home_is_refused_to_other_users_only() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("p.toml");
    std::fs::write(
        &file,
        "version = 1\n[roots]\nstatic = [\"/root/work/app\"]\n",
    )
    .unwrap();
    let file = file.display().to_string();
    // Root in its own home: fine.
    let o = check(&[&file], "/root", false);
    assert!(o.status.success(), "{}", text(&o));
    // Anyone else: refused, naming the rule.
    let mut others = vec![("/home/u", false)];
    if is_root() {
        others.push(("/home/u", true));
    }
    for (home, nobody) in others {
        let o = check(&[&file], home, nobody);
        assert!(!o.status.success(), "HOME={home} nobody={nobody}");
        let t = text(&o);
        assert!(
            t.contains("roots.other_homes = \"/root/**\""),
            "HOME={home} nobody={nobody}:\n{t}"
        );
    }
    // The home itself stays refused to its owner too (`~`: declare a project instead).
    std::fs::write(
        dir.path().join("home.toml"),
        "version = 1\n[roots]\nstatic = [\"/root\"]\n",
    )
    .unwrap();
    let o = check(
        &[&dir.path().join("home.toml").display().to_string()],
        "/root",
        false,
    );
    assert!(!o.status.success());
    assert!(text(&o).contains("roots.deny = \"~\""), "{}", text(&o));
}
