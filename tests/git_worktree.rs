//! Issue 27, linked worktrees: a git linked worktree opened as the root (its `.git` is a
//! file, `gitdir: <main>/.git/worktrees/<name>`, outside the root) starts and works under the
//! default sandbox with the real `mcp-server-git`: the worktree's own git directory and the
//! parts of the main repository's `.git` git writes are granted (named with why in the
//! start-up report), its `hooks/` and `config` stay unwritable, and a credential in the main
//! repository's config is fingerprinted by the tripwire. A submodule checkout opened as the
//! root gets the same treatment for its git directory in the superproject's `.git/modules`.

mod common;
#[path = "common/hostile.rs"]
mod hostile;
#[path = "common/interop_peers.rs"]
mod interop_peers;

use std::path::Path;
use std::process::Command;

use hostile::Host;
use serde_json::{Value, json};

const TOKEN: &str = "ghp_W7rT2kLm9QxZ4vB8nC1dF6gH3jK5pS0aYeUi";

fn git(dir: &Path, args: &[&str]) -> String {
    let o = Command::new("git")
        .args(args)
        .current_dir(dir)
        .env("HOME", dir)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_AUTHOR_NAME", "t")
        .env("GIT_AUTHOR_EMAIL", "t@example.com")
        .env("GIT_COMMITTER_NAME", "t")
        .env("GIT_COMMITTER_EMAIL", "t@example.com")
        .output()
        .unwrap();
    assert!(o.status.success(), "git {args:?}: {o:?}");
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn text(r: &Value) -> String {
    assert_ne!(r["result"]["isError"], true, "{r}");
    r["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_else(|| panic!("{r}"))
        .to_owned()
}

/// mcp-server-git started on `repo` behind rootfence with `repo` as its root (as `wrap`
/// writes the entry: `--repository DIR` becomes `--root DIR`), audited to `base`.
fn git_server_on(repo: &Path, base: &Path) -> Host {
    let server = vec![
        interop_peers::peers_dir()
            .join(".venv/bin/mcp-server-git")
            .display()
            .to_string(),
        "--repository".to_owned(),
        repo.display().to_string(),
    ];
    let opts = vec![
        "--root".to_owned(),
        repo.display().to_string(),
        "--audit-log".to_owned(),
        base.join("audit.jsonl").display().to_string(),
        // The test asserts a clean exit (0): under the full suite's load, GitPython's
        // interpreter can take longer than the default 2 s to exit once stdin closes, and is
        // then stopped with SIGTERM (143), which is not what this test is about.
        "--shutdown-grace".to_owned(),
        "30s".to_owned(),
    ];
    let mut host = Host::start(&opts, &server, "2025-06-18");
    host.begin(json!({}));
    host
}

#[test]
fn mcp_server_git_works_on_a_linked_worktree() {
    interop_peers::require_peers();
    let t = tempfile::tempdir().unwrap();
    let base = std::fs::canonicalize(t.path()).unwrap();
    let main = base.join("main");
    std::fs::create_dir_all(&main).unwrap();
    git(&main, &["init", "-q", "-b", "main"]);
    std::fs::write(main.join("a.txt"), "a\n").unwrap();
    git(&main, &["add", "a.txt"]);
    git(&main, &["commit", "-q", "-m", "init"]);
    git(
        &main,
        &[
            "remote",
            "add",
            "origin",
            &format!("https://ci:{TOKEN}@github.com/o/app.git"),
        ],
    );
    git(&main, &["worktree", "add", "-q", "../wt", "-b", "feature"]);
    let wt = base.join("wt");
    let hooks_before = std::fs::read_dir(main.join(".git/hooks")).unwrap().count();
    let config_before = std::fs::read_to_string(main.join(".git/config")).unwrap();
    // The token pasted into a tracked file of the worktree.
    std::fs::write(wt.join("a.txt"), format!("a\npush with {TOKEN}\n")).unwrap();
    std::fs::write(wt.join("b.txt"), "b\n").unwrap();

    let mut host = git_server_on(&wt, &base);
    let repo = wt.display().to_string();
    let call = |host: &mut Host, tool: &str, args: Value| host.call_tool(tool, args).0;
    let s = text(&call(&mut host, "git_status", json!({"repo_path": repo})));
    assert!(s.contains("On branch feature"), "{s}");
    let d = text(&call(
        &mut host,
        "git_diff_unstaged",
        json!({"repo_path": repo}),
    ));
    assert!(
        !d.contains(TOKEN) && d.contains("[secret redacted by rootfence: text from "),
        "the main repository's config is fingerprinted: {d}"
    );
    assert!(
        d.contains(&format!("{}/.git/config]", main.display())),
        "{d}"
    );
    text(&call(
        &mut host,
        "git_add",
        json!({"repo_path": repo, "files": ["b.txt"]}),
    ));
    let staged = text(&call(
        &mut host,
        "git_diff_staged",
        json!({"repo_path": repo}),
    ));
    assert!(staged.contains("+b"), "{staged}");
    // GitPython's commit: COMMIT_EDITMSG created and removed in the shared `.git`.
    let c = text(&call(
        &mut host,
        "git_commit",
        json!({"repo_path": repo, "message": "commit from the server"}),
    ));
    assert!(c.contains("Changes committed successfully"), "{c}");
    text(&call(
        &mut host,
        "git_create_branch",
        json!({"repo_path": repo, "branch_name": "from-the-server"}),
    ));
    let log = text(&call(
        &mut host,
        "git_log",
        json!({"repo_path": repo, "max_count": 5}),
    ));
    assert!(
        log.contains("init") && log.contains("commit from the server"),
        "{log}"
    );
    assert_eq!(host.finish(), 0);
    let err = host.stderr();
    assert!(
        err.contains(&format!(
            "{}/.git/worktrees/wt (read-write, root-git: the git directory of the linked worktree",
            main.display()
        )) && err.contains(&format!(
            "{}/.git (write-files, root-git: the main repository's .git",
            main.display()
        )) && err.contains(&format!(
            "{}/.git/objects (read-write, root-git",
            main.display()
        )),
        "the start-up report names each grant and why:\n{err}"
    );
    for line in &host.raw {
        assert!(!String::from_utf8_lossy(line).contains(TOKEN), "LEAK");
    }
    // What the server did is git's own state; nothing that runs code later changed.
    assert!(git(&main, &["branch"]).contains("from-the-server"));
    assert_eq!(
        git(&wt, &["log", "-1", "--format=%s"]).trim(),
        "commit from the server"
    );
    assert_eq!(
        std::fs::read_dir(main.join(".git/hooks")).unwrap().count(),
        hooks_before
    );
    assert_eq!(
        std::fs::read_to_string(main.join(".git/config")).unwrap(),
        config_before
    );
}

/// Issue 27, submodules: a root that is a submodule checkout (its `.git` is a file,
/// `gitdir: ../.git/modules/<name>`, inside the superproject's `.git`, outside the root)
/// gets what a root's own `.git/` gets: `mcp-server-git` stages and commits there (GitPython
/// writes the submodule's `index` and `COMMIT_EDITMSG`), and the submodule's `hooks/` and
/// `config`, and the checkout's `.git` file, stay unwritable.
#[test]
fn mcp_server_git_commits_in_a_submodule_checkout() {
    interop_peers::require_peers();
    let t = tempfile::tempdir().unwrap();
    let base = std::fs::canonicalize(t.path()).unwrap();
    let (lib, sup) = (base.join("lib-origin"), base.join("super"));
    for d in [&lib, &sup] {
        std::fs::create_dir_all(d).unwrap();
        git(d, &["init", "-q", "-b", "main"]);
        std::fs::write(d.join("a.txt"), "a\n").unwrap();
        git(d, &["add", "a.txt"]);
        git(d, &["commit", "-q", "-m", "init"]);
    }
    git(
        &sup,
        &[
            "-c",
            "protocol.file.allow=always",
            "submodule",
            "add",
            "-q",
            lib.to_str().unwrap(),
            "lib",
        ],
    );
    git(&sup, &["commit", "-q", "-m", "add lib"]);
    let sub = sup.join("lib");
    let gitdir = sup.join(".git/modules/lib");
    assert!(sub.join(".git").is_file() && gitdir.is_dir());
    git(&sub, &["checkout", "-q", "-b", "work"]);
    std::fs::write(sub.join("b.txt"), "b\n").unwrap();
    let hooks_before = std::fs::read_dir(gitdir.join("hooks")).unwrap().count();
    let config_before = std::fs::read_to_string(gitdir.join("config")).unwrap();
    let dot_git_before = std::fs::read_to_string(sub.join(".git")).unwrap();

    let mut host = git_server_on(&sub, &base);
    let repo = sub.display().to_string();
    let call = |host: &mut Host, tool: &str, args: Value| host.call_tool(tool, args).0;
    let s = text(&call(&mut host, "git_status", json!({"repo_path": repo})));
    assert!(s.contains("On branch work") && s.contains("b.txt"), "{s}");
    text(&call(
        &mut host,
        "git_add",
        json!({"repo_path": repo, "files": ["b.txt"]}),
    ));
    let staged = text(&call(
        &mut host,
        "git_diff_staged",
        json!({"repo_path": repo}),
    ));
    assert!(staged.contains("+b"), "{staged}");
    let c = text(&call(
        &mut host,
        "git_commit",
        json!({"repo_path": repo, "message": "commit in the submodule"}),
    ));
    assert!(c.contains("Changes committed successfully"), "{c}");
    let log = text(&call(
        &mut host,
        "git_log",
        json!({"repo_path": repo, "max_count": 5}),
    ));
    assert!(log.contains("commit in the submodule"), "{log}");
    assert_eq!(host.finish(), 0);
    let err = host.stderr();
    assert!(
        err.contains(&format!(
            "{} (write-files, root-git: the git directory {} names (a submodule's)",
            gitdir.display(),
            sub.display()
        )),
        "the start-up report names the grant and why:\n{err}"
    );
    assert_eq!(
        git(&sub, &["log", "-1", "--format=%s"]).trim(),
        "commit in the submodule"
    );
    assert_eq!(git(&sub, &["status", "--porcelain"]).trim(), "");
    // Nothing that runs code later, or redirects git, changed.
    assert_eq!(
        std::fs::read_dir(gitdir.join("hooks")).unwrap().count(),
        hooks_before
    );
    assert_eq!(
        std::fs::read_to_string(gitdir.join("config")).unwrap(),
        config_before
    );
    assert_eq!(
        std::fs::read_to_string(sub.join(".git")).unwrap(),
        dot_git_before
    );
}
