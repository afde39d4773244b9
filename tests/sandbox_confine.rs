//! End-to-end confinement tests (issue 7): each test starts one sandboxed process through
//! the real launcher (`rootfence __sandbox-exec`) and the library's `prepare`, never
//! restricting the test process itself.
//!
//! The confined child is this test binary, re-executed with `RF_SANDBOX_CHILD` set to a
//! script of actions; `child_helper` runs them and prints one `RF_RESULT` line per action
//! (`ok` or `errno=N`). Every refusal is checked for its exact errno (EACCES for files and
//! TCP, EPERM for scopes), and every test also performs the same kind of action inside
//! the roots, which must work.
//!
//! Tests skip with a printed reason on kernels without the Landlock ABI they need.

use std::collections::HashMap;
use std::ffi::OsString;
use std::io::Write;
use std::net::{TcpListener, TcpStream};
use std::os::unix::fs::{PermissionsExt, symlink};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use rootfence::sandbox::{
    self, Access, DenyStatus, Enforcement, GrantStatus, LaunchError, Network, SandboxMode,
    SandboxRoot, SandboxSpec,
};

const CHILD_ENV: &str = "RF_SANDBOX_CHILD";
const EACCES: &str = "errno=13";
const EPERM: &str = "errno=1";
const ESRCH: &str = "errno=3";
const EXDEV: &str = "errno=18";
const OK: &str = "ok";

// ---------------------------------------------------------------------------------------
// The child side.

/// Runs the action script when this binary is the sandboxed child; a no-op otherwise.
#[test]
fn child_helper() {
    let Ok(script) = std::env::var(CHILD_ENV) else {
        return;
    };
    let mut out = std::io::stdout().lock();
    for action in script.lines().filter(|l| !l.is_empty()) {
        let result = match run_action(action) {
            Ok(v) => v,
            Err(e) => match e.raw_os_error() {
                Some(n) => format!("errno={n}"),
                None => format!("error={e}"),
            },
        };
        writeln!(out, "RF_RESULT {action}\t{result}").unwrap();
    }
    out.flush().unwrap();
    std::process::exit(0);
}

fn run_action(action: &str) -> std::io::Result<String> {
    use std::os::linux::net::SocketAddrExt;
    use std::os::unix::net::{SocketAddr, UnixListener, UnixStream};
    let parts: Vec<&str> = action.split('|').collect();
    let arg = |i: usize| parts.get(i).copied().unwrap_or("");
    match parts[0] {
        "read" => std::fs::read(arg(1)).map(|_| OK.into()),
        "write" => std::fs::write(arg(1), "written").map(|_| OK.into()),
        "append" => std::fs::OpenOptions::new()
            .append(true)
            .open(arg(1))
            .map(|_| OK.into()),
        "truncate" => std::fs::OpenOptions::new()
            .write(true)
            .truncate(true)
            .open(arg(1))
            .map(|_| OK.into()),
        "list" => std::fs::read_dir(arg(1)).map(|_| OK.into()),
        "cat" => std::fs::read(arg(1)).map(|b| format!("content={}", String::from_utf8_lossy(&b))),
        "umount" => nix::mount::umount(arg(1))
            .map(|_| OK.into())
            .map_err(std::io::Error::from),
        "mkdir" => std::fs::create_dir(arg(1)).map(|_| OK.into()),
        "unlink" => std::fs::remove_file(arg(1)).map(|_| OK.into()),
        "rename" => std::fs::rename(arg(1), arg(2)).map(|_| OK.into()),
        "link" => std::fs::hard_link(arg(1), arg(2)).map(|_| OK.into()),
        "symlink" => symlink(arg(1), arg(2)).map(|_| OK.into()),
        "exec" => Command::new(arg(1))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .map(|s| {
                if s.success() {
                    OK.into()
                } else {
                    format!("status={s}")
                }
            }),
        "connect" => {
            TcpStream::connect(("127.0.0.1", arg(1).parse::<u16>().unwrap())).map(|_| OK.into())
        }
        "bind" => {
            TcpListener::bind(("127.0.0.1", arg(1).parse::<u16>().unwrap())).map(|_| OK.into())
        }
        "signal" => {
            let pid = nix::unistd::Pid::from_raw(arg(1).parse().unwrap());
            nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGCONT)
                .map(|_| OK.into())
                .map_err(std::io::Error::from)
        }
        "signal-own-child" => {
            let mut child = Command::new("/bin/sleep").arg("5").spawn()?;
            let pid = nix::unistd::Pid::from_raw(child.id() as i32);
            let r = nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGKILL);
            let _ = child.wait();
            r.map(|_| OK.into()).map_err(std::io::Error::from)
        }
        "abstract-connect" => {
            let addr = SocketAddr::from_abstract_name(arg(1).as_bytes())?;
            UnixStream::connect_addr(&addr).map(|_| OK.into())
        }
        "unix-connect" => UnixStream::connect(arg(1)).map(|_| OK.into()),
        "abstract-own" => {
            let addr = SocketAddr::from_abstract_name(arg(1).as_bytes())?;
            let _l = UnixListener::bind_addr(&addr)?;
            UnixStream::connect_addr(&addr).map(|_| OK.into())
        }
        "env" => Ok(std::env::var(arg(1)).unwrap_or_else(|_| "<unset>".into())),
        "fds" => {
            let mut fds: Vec<i32> = std::fs::read_dir("/proc/self/fd")?
                .filter_map(|e| e.ok()?.file_name().to_str()?.parse().ok())
                .collect();
            fds.sort();
            // The last one is read_dir's own descriptor.
            fds.pop();
            Ok(format!("{fds:?}"))
        }
        "rlimit-nofile" => {
            let (soft, hard) =
                nix::sys::resource::getrlimit(nix::sys::resource::Resource::RLIMIT_NOFILE)
                    .map_err(std::io::Error::from)?;
            Ok(format!("{soft}/{hard}"))
        }
        "no-new-privs" => nix::sys::prctl::get_no_new_privs()
            .map(|b| b.to_string())
            .map_err(std::io::Error::from),
        other => panic!("unknown action {other}"),
    }
}

// ---------------------------------------------------------------------------------------
// The parent side.

/// Prints a skip notice past libtest's output capture (which only intercepts the print
/// macros), so a skipped test is never silent.
fn skip(msg: std::fmt::Arguments<'_>) {
    use std::io::Write as _;
    let _ = writeln!(std::io::stderr(), "SKIPPED {msg}");
}

fn rootfence() -> &'static Path {
    Path::new(env!("CARGO_BIN_EXE_rootfence"))
}

/// Prints why a test is skipped and returns true when the kernel lacks `abi`.
fn skip_below(abi: u8, what: &str) -> bool {
    match sandbox::landlock_abi() {
        None => {
            skip(format_args!(
                "{what}: Landlock is not available on this kernel"
            ));
            true
        }
        Some(v) if v < abi => {
            skip(format_args!(
                "{what}: needs Landlock ABI {abi}, this kernel has ABI {v}"
            ));
            true
        }
        Some(_) => false,
    }
}

/// Strict where the kernel can enforce everything strict requests (ABI 6), best-effort
/// otherwise, so filesystem tests still run on older kernels.
fn strict_if_supported() -> SandboxMode {
    if sandbox::landlock_abi().unwrap_or(0) >= 6 {
        SandboxMode::Strict
    } else {
        SandboxMode::BestEffort
    }
}

/// A spec that can run this test binary: default profile plus the binary itself.
fn spec(mode: SandboxMode) -> SandboxSpec {
    let mut s = SandboxSpec::new(mode);
    s.read.push(std::env::current_exe().unwrap());
    s.env.push(CHILD_ENV.into());
    s
}

fn child_argv() -> Vec<OsString> {
    vec![
        std::env::current_exe().unwrap().into(),
        "--exact".into(),
        "child_helper".into(),
        "--nocapture".into(),
        "--test-threads=1".into(),
        "-q".into(),
    ]
}

struct Run {
    report: Result<sandbox::EnforcementReport, LaunchError>,
    results: HashMap<String, String>,
    status: std::process::ExitStatus,
}

impl Run {
    fn get(&self, action: &str) -> &str {
        self.results
            .get(action)
            .unwrap_or_else(|| panic!("no result for {action}: {:?}", self.results))
    }

    #[track_caller]
    fn expect(&self, cases: &[(&str, &str)]) {
        let mut bad = Vec::new();
        for (action, want) in cases {
            let got = self.get(action);
            if got != *want {
                bad.push(format!("{action}: want {want}, got {got}"));
            }
        }
        assert!(bad.is_empty(), "unexpected results:\n{}", bad.join("\n"));
    }
}

/// Runs `actions` in one sandboxed child, with `extra_env` set on the launcher command.
fn run_child(spec: &SandboxSpec, actions: &[String], extra_env: &[(&str, &str)]) -> Run {
    let sandbox::Prepared {
        mut command,
        mut session,
        ..
    } = sandbox::prepare_with_launcher(spec, &child_argv(), rootfence()).unwrap();
    command
        .env(CHILD_ENV, actions.join("\n"))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit());
    for (k, v) in extra_env {
        command.env(k, v);
    }
    let child = command.spawn().unwrap();
    let report = session.take_report_reader().unwrap().read_blocking();
    let out = child.wait_with_output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let results = stdout
        .lines()
        .filter_map(|l| l.strip_prefix("RF_RESULT "))
        .filter_map(|l| l.split_once('\t'))
        .map(|(a, r)| (a.to_owned(), r.to_owned()))
        .collect();
    Run {
        report,
        results,
        status: out.status,
    }
}

fn act(parts: &[&dyn AsRef<std::ffi::OsStr>]) -> String {
    parts
        .iter()
        .map(|p| p.as_ref().to_string_lossy().into_owned())
        .collect::<Vec<_>>()
        .join("|")
}

struct Tree {
    _dir: tempfile::TempDir,
    root: PathBuf,
    outside: PathBuf,
}

/// `<tmp>/root/{file, sub/inner, true}` and `<tmp>/outside/{file, true}`.
fn tree() -> Tree {
    let dir = tempfile::tempdir().unwrap();
    let base = std::fs::canonicalize(dir.path()).unwrap();
    let root = base.join("root");
    let outside = base.join("outside");
    for d in [&root.join("sub"), &outside] {
        std::fs::create_dir_all(d).unwrap();
    }
    std::fs::write(root.join("file"), "in").unwrap();
    std::fs::write(root.join("sub/inner"), "in").unwrap();
    std::fs::write(outside.join("file"), "out").unwrap();
    for d in [&root, &outside] {
        std::fs::copy("/bin/true", d.join("true")).unwrap();
        std::fs::set_permissions(d.join("true"), std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    Tree {
        _dir: dir,
        root,
        outside,
    }
}

fn with_root(mut s: SandboxSpec, path: &Path, access: Access) -> SandboxSpec {
    s.roots.push(SandboxRoot {
        path: path.to_owned(),
        access,
    });
    s
}

#[test]
fn files_outside_the_roots_are_refused_and_inside_work() {
    if skip_below(1, "files_outside_the_roots_are_refused_and_inside_work") {
        return;
    }
    let t = tree();
    let (r, o) = (&t.root, &t.outside);
    symlink(o.join("file"), r.join("link-out")).unwrap();
    symlink(r.join("file"), r.join("link-in")).unwrap();
    // A symlink to a directory outside, then a path through it.
    symlink(o, r.join("dirlink-out")).unwrap();
    let s = with_root(spec(strict_if_supported()), r, Access::ReadWrite);
    let cases = vec![
        (act(&[&"read", &r.join("file")]), OK),
        (act(&[&"read", &o.join("file")]), EACCES),
        (act(&[&"list", r]), OK),
        (act(&[&"list", o]), EACCES),
        (act(&[&"write", &r.join("new")]), OK),
        (act(&[&"write", &o.join("new")]), EACCES),
        (act(&[&"append", &o.join("file")]), EACCES),
        (act(&[&"mkdir", &r.join("newdir")]), OK),
        (act(&[&"mkdir", &o.join("newdir")]), EACCES),
        (act(&[&"exec", &r.join("true")]), OK),
        (act(&[&"exec", &o.join("true")]), EACCES),
        (act(&[&"read", &r.join("link-in")]), OK),
        (act(&[&"read", &r.join("link-out")]), EACCES),
        (act(&[&"read", &r.join("dirlink-out/file")]), EACCES),
        (act(&[&"list", &r.join("dirlink-out")]), EACCES),
        // /proc/self/root is a magic link to `/`: the real path is what Landlock checks.
        (
            act(&[
                &"read",
                &format!("/proc/self/root{}", o.join("file").display()),
            ]),
            EACCES,
        ),
        // Moving a file in from outside, or out of the root, needs rights on both sides.
        (
            act(&[&"rename", &o.join("file"), &r.join("stolen")]),
            EACCES,
        ),
        (
            act(&[&"rename", &r.join("sub/inner"), &o.join("moved")]),
            EACCES,
        ),
        // Landlock refuses a link that would widen a file's rights with EXDEV (its
        // documented errno for REFER, so tools fall back to copying, which read refuses).
        (act(&[&"link", &o.join("file"), &r.join("hardlink")]), EXDEV),
        // Another process's environment (the test process is outside the domain).
        (
            act(&[&"read", &format!("/proc/{}/environ", std::process::id())]),
            EACCES,
        ),
        (act(&[&"read", &"/proc/self/status"]), OK),
    ];
    let actions: Vec<String> = cases.iter().map(|(a, _)| a.clone()).collect();
    let run = run_child(&s, &actions, &[]);
    let report = run.report.as_ref().expect("report");
    if sandbox::landlock_abi().unwrap_or(0) >= 6 {
        assert_eq!(report.enforcement, Enforcement::Full, "{report}");
    }
    assert!(run.status.success(), "{:?}", run.status);
    let cases: Vec<(&str, &str)> = cases.iter().map(|(a, w)| (a.as_str(), *w)).collect();
    run.expect(&cases);
    assert!(!o.join("new").exists() && !o.join("moved").exists());
    assert_eq!(std::fs::read_to_string(o.join("file")).unwrap(), "out");
}

#[test]
fn a_read_only_root_refuses_every_change() {
    if skip_below(3, "a_read_only_root_refuses_every_change") {
        return;
    }
    let t = tree();
    let r = &t.root;
    let s = with_root(spec(strict_if_supported()), r, Access::ReadOnly);
    let cases = [
        (act(&[&"read", &r.join("file")]), OK),
        (act(&[&"list", &r.join("sub")]), OK),
        (act(&[&"exec", &r.join("true")]), OK),
        (act(&[&"write", &r.join("new")]), EACCES),
        (act(&[&"append", &r.join("file")]), EACCES),
        (act(&[&"truncate", &r.join("file")]), EACCES),
        (act(&[&"unlink", &r.join("file")]), EACCES),
        (act(&[&"mkdir", &r.join("d")]), EACCES),
        (
            act(&[&"rename", &r.join("file"), &r.join("sub/file")]),
            EACCES,
        ),
        (act(&[&"symlink", &"/etc/passwd", &r.join("l")]), EACCES),
    ];
    let actions: Vec<String> = cases.iter().map(|(a, _)| a.clone()).collect();
    let run = run_child(&s, &actions, &[]);
    let cases: Vec<(&str, &str)> = cases.iter().map(|(a, w)| (a.as_str(), *w)).collect();
    run.expect(&cases);
    assert_eq!(std::fs::read_to_string(r.join("file")).unwrap(), "in");
}

#[test]
fn a_denied_path_inside_a_root_stays_unreachable() {
    if skip_below(2, "a_denied_path_inside_a_root_stays_unreachable") {
        return;
    }
    let t = tree();
    let r = &t.root;
    std::fs::write(r.join("sub/.env"), "SECRET=1").unwrap();
    std::fs::create_dir_all(r.join("secrets")).unwrap();
    std::fs::write(r.join("secrets/key.pem"), "KEY").unwrap();
    std::fs::create_dir_all(r.join("data")).unwrap();
    let mut s = with_root(spec(strict_if_supported()), r, Access::ReadWrite);
    s.deny.push(r.join("sub/.env"));
    s.deny.push(r.join("secrets"));
    s.add_deny_pattern("**/*.key");
    let env = r.join("sub/.env");
    let cases = vec![
        // The secrets: no read, write, truncate, remove, rename, link, exec.
        (act(&[&"read", &env]), EACCES),
        (act(&[&"append", &env]), EACCES),
        (act(&[&"truncate", &env]), EACCES),
        (act(&[&"unlink", &env]), EACCES),
        (act(&[&"rename", &env, &r.join("sub/stolen")]), EACCES),
        (act(&[&"rename", &env, &r.join("file2")]), EACCES),
        (act(&[&"link", &env, &r.join("sub/inner-link")]), EACCES),
        (act(&[&"read", &r.join("secrets/key.pem")]), EACCES),
        (act(&[&"write", &r.join("secrets/new")]), EACCES),
        // A symlink the server plants elsewhere in the root does not help.
        (act(&[&"symlink", &env, &r.join("data/alias")]), OK),
        (act(&[&"read", &r.join("data/alias")]), EACCES),
        (
            act(&[&"symlink", &r.join("secrets"), &r.join("data/dir-alias")]),
            OK,
        ),
        (act(&[&"read", &r.join("data/dir-alias/key.pem")]), EACCES),
        (
            act(&[&"read", &format!("/proc/self/root{}", env.display())]),
            EACCES,
        ),
        // Everything else in the root still works.
        (act(&[&"read", &r.join("file")]), OK),
        (act(&[&"write", &r.join("file")]), OK),
        (act(&[&"read", &r.join("sub/inner")]), OK),
        (act(&[&"write", &r.join("sub/inner")]), OK),
        (act(&[&"exec", &r.join("true")]), OK),
        (act(&[&"list", r]), OK),
        (act(&[&"list", &r.join("sub")]), OK),
        // Documented limit: new entries directly in an ancestor of a denied path.
        (act(&[&"write", &r.join("sub/new")]), EACCES),
    ];
    let actions: Vec<String> = cases.iter().map(|(a, _)| a.clone()).collect();
    let run = run_child(&s, &actions, &[]);
    let cases: Vec<(&str, &str)> = cases.iter().map(|(a, w)| (a.as_str(), *w)).collect();
    run.expect(&cases);
    assert_eq!(std::fs::read_to_string(&env).unwrap(), "SECRET=1");
    let report = run.report.unwrap();
    let root_grant = report
        .filesystem
        .grants
        .iter()
        .find(|g| g.origin == "root")
        .unwrap();
    assert!(matches!(root_grant.status, GrantStatus::Carved { .. }));
    assert!(
        report
            .filesystem
            .deny
            .iter()
            .all(|d| d.status == DenyStatus::CarvedOut)
    );
    assert_eq!(report.filesystem.deny_globs, vec!["**/*.key"]);
    assert!(
        report.filesystem.carve.is_some(),
        "the glob was matched in the root"
    );
}

const EROFS: &str = "errno=30";
const EBUSY: &str = "errno=16";

/// A root holding what the default policy denies and protects: `.env`, `sub/key.pem`,
/// `.git/{config,hooks/pre-commit}`, `.ssh/id_rsa`.
fn policy_tree(t: &Tree) -> SandboxSpec {
    let r = &t.root;
    for (f, text) in [
        (".env", "API_KEY=sk-live-4f1c0ffee"),
        ("sub/key.pem", "PEM"),
        (".git/config", "[core]"),
        (".git/hooks/pre-commit", "#!/bin/sh"),
        (".git/HEAD", "ref: refs/heads/main"),
        (".ssh/id_rsa", "KEY"),
    ] {
        std::fs::create_dir_all(r.join(f).parent().unwrap()).unwrap();
        std::fs::write(r.join(f), text).unwrap();
    }
    let mut s = with_root(spec(strict_if_supported()), r, Access::ReadWrite);
    for g in ["**/.env", "**/*.pem", "**/.ssh/**", "**/.git/**"] {
        s.add_deny_pattern(g);
    }
    s
}

#[test]
fn deny_globs_inside_a_root_are_hidden_by_mounts_and_later_names_work() {
    if skip_below(
        2,
        "deny_globs_inside_a_root_are_hidden_by_mounts_and_later_names_work",
    ) {
        return;
    }
    let t = tree();
    let r = &t.root;
    let s = policy_tree(&t);
    let cases = vec![
        // Hidden: an object no one can open where the secret was, an empty directory
        // where a denied directory was.
        (act(&[&"read", &r.join(".env")]), EACCES),
        (act(&[&"write", &r.join(".env")]), EACCES),
        (act(&[&"read", &r.join("sub/key.pem")]), EACCES),
        (act(&[&"list", &r.join(".ssh")]), OK),
        (act(&[&"read", &r.join(".ssh/id_rsa")]), "errno=2"),
        // The mounts hold: no unmount, no rename or link of a covered name.
        (act(&[&"umount", &r.join(".env")]), EPERM),
        (act(&[&"rename", &r.join(".env"), &r.join("stolen")]), EBUSY),
        (act(&[&"link", &r.join(".env"), &r.join("stolen")]), EXDEV),
        // Read-only: readable, not writable, not replaceable, its parent pinned.
        (act(&[&"cat", &r.join(".git/config")]), "content=[core]"),
        (act(&[&"write", &r.join(".git/config")]), EROFS),
        (act(&[&"write", &r.join(".git/hooks/pre-commit")]), EROFS),
        (act(&[&"write", &r.join(".git/hooks/post-checkout")]), EROFS),
        (
            act(&[&"rename", &r.join(".git"), &r.join("git-old")]),
            EBUSY,
        ),
        (
            act(&[&"rename", &r.join("file"), &r.join(".git/config")]),
            EXDEV,
        ),
        // git's own files stay writable, and so does everything else, new names included.
        (act(&[&"write", &r.join(".git/HEAD")]), OK),
        (act(&[&"write", &r.join(".git/index.lock")]), OK),
        (act(&[&"write", &r.join("new.txt")]), OK),
        (act(&[&"cat", &r.join("new.txt")]), "content=written"),
        (act(&[&"rename", &r.join("new.txt"), &r.join("file")]), OK),
        (act(&[&"cat", &r.join("file")]), "content=written"),
        (act(&[&"mkdir", &r.join("newdir")]), OK),
        // A protected name absent at launch: the launcher alone covers nothing there
        // (`rootfence run` makes a placeholder before the launch: tests/deny_inside_roots.rs).
        (act(&[&"mkdir", &r.join(".vscode")]), OK),
        // Documented: a protected *file* name absent at launch gets no placeholder.
        (act(&[&"write", &r.join(".mcp.json")]), OK),
    ];
    let actions: Vec<String> = cases.iter().map(|(a, _)| a.clone()).collect();
    let run = run_child(&s, &actions, &[]);
    let report = run.report.as_ref().unwrap();
    let carve = report.filesystem.carve.as_ref().unwrap();
    if carve.method == "landlock" {
        skip(format_args!(
            "deny_globs_inside_a_root_are_hidden_by_mounts_and_later_names_work: no mount \
             namespace here ({:?})",
            carve.fallback
        ));
        return;
    }
    let cases: Vec<(&str, &str)> = cases.iter().map(|(a, w)| (a.as_str(), *w)).collect();
    run.expect(&cases);
    assert_eq!(
        std::fs::read_to_string(r.join(".env")).unwrap(),
        "API_KEY=sk-live-4f1c0ffee"
    );
    assert_eq!(
        std::fs::read_to_string(r.join(".git/hooks/pre-commit")).unwrap(),
        "#!/bin/sh"
    );
    assert!(
        carve
            .paths
            .iter()
            .all(|p| p.by == sandbox::CarvedBy::Mount || p.kind == sandbox::CarvedKind::LeftToGit),
        "{carve:?}"
    );
    let text = report.to_string();
    assert!(
        text.contains("names created after launch are reachable"),
        "{text}"
    );
}

#[test]
fn deny_globs_fall_back_to_the_landlock_carve_out() {
    if skip_below(2, "deny_globs_fall_back_to_the_landlock_carve_out") {
        return;
    }
    let t = tree();
    let r = &t.root;
    let s = policy_tree(&t);
    let cases = vec![
        (act(&[&"read", &r.join(".env")]), EACCES),
        (act(&[&"read", &r.join("sub/key.pem")]), EACCES),
        (act(&[&"read", &r.join(".ssh/id_rsa")]), EACCES),
        (act(&[&"cat", &r.join(".git/config")]), "content=[core]"),
        (act(&[&"write", &r.join(".git/config")]), EACCES),
        (act(&[&"write", &r.join(".git/hooks/pre-commit")]), EACCES),
        (
            act(&[&"write", &r.join(".git/hooks/post-checkout")]),
            EACCES,
        ),
        (
            act(&[&"rename", &r.join(".git"), &r.join("git-old")]),
            EACCES,
        ),
        // What exists keeps working; subtrees without a carved path are whole.
        (act(&[&"write", &r.join("file")]), OK),
        (act(&[&"write", &r.join(".git/HEAD")]), OK),
        (act(&[&"cat", &r.join("sub/inner")]), "content=in"),
        // The documented cost: no new names directly in a carved directory.
        (act(&[&"write", &r.join("new.txt")]), EACCES),
        (act(&[&"mkdir", &r.join(".vscode")]), EACCES),
        (act(&[&"write", &r.join(".git/index.lock")]), EACCES),
    ];
    let actions: Vec<String> = cases.iter().map(|(a, _)| a.clone()).collect();
    let run = run_child(&s, &actions, &[(sandbox::MOUNTS_ENV, "off")]);
    let cases: Vec<(&str, &str)> = cases.iter().map(|(a, w)| (a.as_str(), *w)).collect();
    run.expect(&cases);
    let report = run.report.as_ref().unwrap();
    let carve = report.filesystem.carve.as_ref().unwrap();
    assert_eq!(carve.method, "landlock");
    let text = report.to_string();
    assert!(
        text.contains("cannot be created, read or written"),
        "{text}"
    );
}

#[test]
fn tcp_connect_and_bind_are_refused_when_network_is_denied() {
    if skip_below(4, "tcp_connect_and_bind_are_refused_when_network_is_denied") {
        return;
    }
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let mut s = spec(strict_if_supported());
    s.network = Network::Deny;
    let cases = [
        (format!("connect|{port}"), EACCES),
        ("bind|0".to_owned(), EACCES),
        // Inside the sandbox, unix-domain IPC of its own still works.
        ("abstract-own|rf-own-net".to_owned(), OK),
    ];
    let actions: Vec<String> = cases.iter().map(|(a, _)| a.clone()).collect();
    let run = run_child(&s, &actions, &[]);
    let cases: Vec<(&str, &str)> = cases.iter().map(|(a, w)| (a.as_str(), *w)).collect();
    run.expect(&cases);
    let report = run.report.unwrap();
    assert_eq!(report.network.requested, Network::Deny);
    assert!(report.network.enforced);
}

#[test]
fn tcp_only_to_the_allowed_ports() {
    if skip_below(4, "tcp_only_to_the_allowed_ports") {
        return;
    }
    let allowed = TcpListener::bind("127.0.0.1:0").unwrap();
    let other = TcpListener::bind("127.0.0.1:0").unwrap();
    let (pa, po) = (
        allowed.local_addr().unwrap().port(),
        other.local_addr().unwrap().port(),
    );
    let mut s = spec(strict_if_supported());
    s.network = Network::Ports(vec![pa]);
    let cases = [
        (format!("connect|{pa}"), OK),
        (format!("connect|{po}"), EACCES),
    ];
    let actions: Vec<String> = cases.iter().map(|(a, _)| a.clone()).collect();
    let run = run_child(&s, &actions, &[]);
    let cases: Vec<(&str, &str)> = cases.iter().map(|(a, w)| (a.as_str(), *w)).collect();
    run.expect(&cases);

    // And with the network allowed, both work.
    let mut s = spec(strict_if_supported());
    s.network = Network::Allow;
    let actions = [format!("connect|{pa}"), format!("connect|{po}")];
    let run = run_child(&s, &actions, &[]);
    run.expect(&[(actions[0].as_str(), OK), (actions[1].as_str(), OK)]);
}

#[test]
fn signals_and_abstract_sockets_outside_the_sandbox_are_refused() {
    if skip_below(
        6,
        "signals_and_abstract_sockets_outside_the_sandbox_are_refused",
    ) {
        return;
    }
    use std::os::linux::net::SocketAddrExt;
    use std::os::unix::net::{SocketAddr, UnixListener};
    let name = format!("rootfence-test-{}", std::process::id());
    let addr = SocketAddr::from_abstract_name(name.as_bytes()).unwrap();
    let _listener = UnixListener::bind_addr(&addr).unwrap();
    let s = spec(SandboxMode::Strict);
    let cases = [
        // The parent (this test process) is outside the domain.
        (format!("signal|{}", std::process::id()), EPERM),
        (format!("abstract-connect|{name}"), EPERM),
        // Inside the domain both work.
        ("signal-own-child".to_owned(), OK),
        (format!("abstract-own|{name}-inner"), OK),
    ];
    let actions: Vec<String> = cases.iter().map(|(a, _)| a.clone()).collect();
    // Without the server's PID namespace, which would hide this process altogether
    // (ESRCH, checked below): here Landlock's scope alone refuses the signal. (Best
    // effort: strict mode refuses to start without the namespace.)
    let mut best_effort = s.clone();
    best_effort.mode = SandboxMode::BestEffort;
    let run = run_child(&best_effort, &actions, &[(sandbox::PIDNS_ENV, "off")]);
    let cases: Vec<(&str, &str)> = cases.iter().map(|(a, w)| (a.as_str(), *w)).collect();
    run.expect(&cases);
    let report = run.report.unwrap();
    assert!(report.scopes.signals && report.scopes.abstract_unix_sockets);
    // In its PID namespace the server cannot even name a process outside it.
    let outside = format!("signal|{}", std::process::id());
    let run = run_child(&s, std::slice::from_ref(&outside), &[]);
    run.expect(&[(outside.as_str(), ESRCH)]);
}

#[test]
fn environment_descriptors_and_limits_are_reduced() {
    if skip_below(1, "environment_descriptors_and_limits_are_reduced") {
        return;
    }
    // A descriptor rootfence might hold without close-on-exec: the server must not get it.
    let leaked = std::fs::File::open("/etc/hostname")
        .or_else(|_| std::fs::File::open("/proc/self/stat"))
        .unwrap();
    nix::fcntl::fcntl(
        &leaked,
        nix::fcntl::FcntlArg::F_SETFD(nix::fcntl::FdFlag::empty()),
    )
    .unwrap();
    let mut s = spec(SandboxMode::BestEffort);
    s.rlimits.nofile = Some(64);
    s.env.push("RF_ALLOWED_*".into());
    let actions = [
        "env|RF_SECRET_TOKEN",
        "env|RF_ALLOWED_ONE",
        "env|PATH",
        "env|TMPDIR",
        "fds",
        "rlimit-nofile",
        "no-new-privs",
    ]
    .map(String::from);
    let run = run_child(
        &s,
        &actions,
        &[("RF_SECRET_TOKEN", "hunter2"), ("RF_ALLOWED_ONE", "yes")],
    );
    drop(leaked);
    run.expect(&[
        ("env|RF_SECRET_TOKEN", "<unset>"),
        ("env|RF_ALLOWED_ONE", "yes"),
        ("fds", "[0, 1, 2]"),
        ("rlimit-nofile", "64/64"),
        ("no-new-privs", "true"),
    ]);
    assert_ne!(run.get("env|PATH"), "<unset>");
    let tmp = run.get("env|TMPDIR").to_owned();
    let report = run.report.unwrap();
    assert!(tmp.contains("rootfence-sandbox-"), "{tmp}");
    // The private temp dir is gone once the session is dropped (run_child dropped it).
    assert!(!Path::new(&tmp).exists(), "{tmp} left behind");
    assert!(report.env.passed.contains(&"RF_ALLOWED_ONE".to_owned()));
    assert!(!report.env.passed.contains(&"RF_SECRET_TOKEN".to_owned()));
    assert!(report.no_new_privs);
}

#[test]
fn the_report_is_honest_about_the_kernel() {
    let Some(abi) = sandbox::landlock_abi() else {
        skip(format_args!(
            "the_report_is_honest_about_the_kernel: Landlock is not available"
        ));
        return;
    };
    let t = tree();
    let mut s = with_root(spec(SandboxMode::BestEffort), &t.root, Access::ReadOnly);
    s.read.push(t.root.join("does-not-exist"));
    s.network = Network::Deny;
    let run = run_child(&s, &["read|/etc/hostname".to_owned()], &[]);
    let report = run.report.unwrap();
    assert_eq!(report.landlock.abi, Some(abi));
    assert_eq!(report.landlock.requested_abi, 6);
    let expect_full = abi >= 6;
    assert_eq!(
        report.enforcement,
        if expect_full {
            Enforcement::Full
        } else {
            Enforcement::Partial
        },
        "{report}"
    );
    assert_eq!(
        report.missing.is_empty(),
        expect_full,
        "{:?}",
        report.missing
    );
    let missing = report
        .filesystem
        .grants
        .iter()
        .find(|g| g.path.ends_with("does-not-exist"))
        .unwrap();
    assert!(matches!(missing.status, GrantStatus::NotFound { .. }));
    let text = report.to_string();
    assert!(text.contains(&format!("landlock ABI {abi}")), "{text}");
    assert!(text.contains("network: deny"), "{text}");
    // The audit record form.
    let json = serde_json::to_value(&report).unwrap();
    assert_eq!(json["landlock"]["abi"], abi);
    assert_eq!(json["mode"], "best-effort");
}

#[test]
fn strict_refuses_a_limit_the_kernel_does_not_apply() {
    if skip_below(1, "strict_refuses_a_limit_the_kernel_does_not_apply") {
        return;
    }
    if !nix::unistd::getuid().is_root() {
        skip(format_args!(
            "strict_refuses_a_limit_the_kernel_does_not_apply: needs root \
             (RLIMIT_NPROC is only ineffective for uid 0)"
        ));
        return;
    }
    let mut s = spec(SandboxMode::Strict);
    s.rlimits.processes = Some(10_000);
    let run = run_child(&s, &["env|PATH".to_owned()], &[]);
    match run.report {
        Err(LaunchError::Refused { report }) => {
            assert!(report.missing.iter().any(|m| m.contains("processes")));
        }
        other => panic!("expected a refusal, got {other:?}"),
    }
    assert_eq!(run.status.code(), Some(i32::from(sandbox::EXIT_REFUSED)));
    assert!(run.results.is_empty(), "the child must not have run");

    // Best effort starts and says what is missing.
    let mut s = spec(SandboxMode::BestEffort);
    s.rlimits.processes = Some(10_000);
    let run = run_child(&s, &["env|PATH".to_owned()], &[]);
    let report = run.report.unwrap();
    assert_eq!(report.enforcement, Enforcement::Partial);
    assert!(report.to_string().contains("NOT effective for root"));
    assert!(run.results.contains_key("env|PATH"));
}

#[test]
fn a_missing_command_is_a_clear_error() {
    if skip_below(1, "a_missing_command_is_a_clear_error") {
        return;
    }
    let s = spec(SandboxMode::BestEffort);
    let prepared =
        sandbox::prepare_with_launcher(&s, &["rootfence-no-such-command".into()], rootfence())
            .unwrap();
    let sandbox::Prepared {
        mut command,
        mut session,
        ..
    } = prepared;
    let mut child = command.stderr(Stdio::null()).spawn().unwrap();
    let err = session
        .take_report_reader()
        .unwrap()
        .read_blocking()
        .unwrap_err();
    let status = child.wait().unwrap();
    match &err {
        LaunchError::Failed { stage, code, .. } => {
            assert_eq!(stage, "lookup");
            assert_eq!(*code, sandbox::EXIT_NOT_FOUND);
        }
        other => panic!("{other:?}"),
    }
    assert!(
        err.to_string().contains("not found on the sandbox PATH"),
        "{err}"
    );
    assert_eq!(status.code(), Some(127));
}

#[test]
fn exec_denied_by_the_sandbox_is_reported_after_the_report() {
    if skip_below(1, "exec_denied_by_the_sandbox_is_reported_after_the_report") {
        return;
    }
    let t = tree();
    let mut s = SandboxSpec::new(SandboxMode::BestEffort);
    s.default_profile = false;
    let prepared =
        sandbox::prepare_with_launcher(&s, &[t.outside.join("true").into()], rootfence()).unwrap();
    let sandbox::Prepared {
        mut command,
        mut session,
        ..
    } = prepared;
    let mut child = command.stderr(Stdio::null()).spawn().unwrap();
    let err = session
        .take_report_reader()
        .unwrap()
        .read_blocking()
        .unwrap_err();
    let status = child.wait().unwrap();
    match &err {
        LaunchError::Failed {
            stage,
            code,
            report,
            ..
        } => {
            assert_eq!(stage, "exec");
            assert_eq!(*code, sandbox::EXIT_EXEC_FAILED);
            assert!(report.is_some(), "the report written before exec is kept");
        }
        other => panic!("{other:?}"),
    }
    assert!(err.to_string().contains("does not grant execute"), "{err}");
    assert_eq!(status.code(), Some(126));
}

/// Regression for a finding while building the profile: with `/proc` granted, Landlock
/// (Linux 6.18) still lets a confined process read `environ`, `maps` and the `fd` list of
/// other processes of its user. The default profile therefore grants `/proc/self` only,
/// and another process's environment (the host's API keys) stays unreadable.
#[test]
fn another_processes_environment_is_unreadable() {
    if skip_below(1, "another_processes_environment_is_unreadable") {
        return;
    }
    let mut sleeper = Command::new("sleep").arg("30").spawn().unwrap();
    let pid = sleeper.id();
    let s = spec(SandboxMode::BestEffort);
    let cases = [
        (format!("read|/proc/{pid}/environ"), EACCES),
        (format!("read|/proc/{pid}/cmdline"), EACCES),
        (format!("read|/proc/{pid}/maps"), EACCES),
        (format!("list|/proc/{pid}/fd"), EACCES),
        (format!("read|/proc/{}/environ", std::process::id()), EACCES),
        ("read|/proc/self/environ".to_owned(), OK),
        ("read|/proc/self/maps".to_owned(), OK),
    ];
    let actions: Vec<String> = cases.iter().map(|(a, _)| a.clone()).collect();
    let run = run_child(&s, &actions, &[]);
    let _ = sleeper.kill();
    let _ = sleeper.wait();
    let cases: Vec<(&str, &str)> = cases.iter().map(|(a, w)| (a.as_str(), *w)).collect();
    run.expect(&cases);
}

/// A tokio child, its report read without blocking the runtime (on a blocking thread).
#[tokio::test(flavor = "current_thread")]
async fn the_report_can_be_read_asynchronously() {
    if skip_below(1, "the_report_can_be_read_asynchronously") {
        return;
    }
    let t = tree();
    let s = with_root(spec(SandboxMode::BestEffort), &t.root, Access::ReadOnly);
    let actions = act(&[&"read", &t.root.join("file")]);
    let sandbox::Prepared {
        mut command,
        mut session,
        ..
    } = sandbox::prepare_with_launcher(&s, &child_argv(), rootfence()).unwrap();
    command
        .env(CHILD_ENV, &actions)
        .stdin(Stdio::null())
        .stdout(Stdio::piped());
    let child = tokio::process::Command::from(command).spawn().unwrap();
    let reader = session.take_report_reader().unwrap();
    let report = tokio::task::spawn_blocking(move || reader.read_blocking());
    let report = report.await.unwrap().unwrap();
    assert!(report.no_new_privs);
    let out = child.wait_with_output().await.unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains(&format!("RF_RESULT {actions}\tok")),
        "{stdout}"
    );
}

/// Pins a known gap so it stays visible: before Landlock ABI 9 (not requested; Linux 7.1)
/// a confined server can connect to a pathname unix socket outside every grant, such as
/// a docker or D-Bus socket. The report must say so; this test must change when
/// rootfence requests ABI 9.
#[test]
fn pathname_unix_sockets_are_reported_as_not_covered() {
    if skip_below(1, "pathname_unix_sockets_are_reported_as_not_covered") {
        return;
    }
    let t = tree();
    let sock = t.outside.join("s.sock");
    let _listener = std::os::unix::net::UnixListener::bind(&sock).unwrap();
    let s = spec(SandboxMode::BestEffort);
    let action = act(&[&"unix-connect", &sock]);
    let run = run_child(&s, std::slice::from_ref(&action), &[]);
    run.expect(&[(action.as_str(), OK)]);
    let report = run.report.unwrap();
    assert!(
        report
            .not_covered
            .iter()
            .any(|n| n.contains("pathname unix sockets")),
        "{report}"
    );
    assert!(
        report
            .to_string()
            .contains("not covered: connecting to pathname unix sockets")
    );
}

// ---------------------------------------------------------------------------------------
// Issue 27: a linked worktree's shared `.git`, writable for GitPython's commit, never for
// what runs code later or redirects git.

/// `<tmp>/main` (a repository with a `pre-commit` hook) and its linked worktree `<tmp>/wt`.
fn worktree_tree() -> (tempfile::TempDir, PathBuf, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let base = std::fs::canonicalize(dir.path()).unwrap();
    let (main, wt) = (base.join("main"), base.join("wt"));
    std::fs::create_dir_all(&main).unwrap();
    let git = |args: &[&str]| {
        let o = Command::new("git")
            .args(args)
            .current_dir(&main)
            .env("HOME", &base)
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .output()
            .unwrap();
        assert!(o.status.success(), "git {args:?}: {o:?}");
    };
    git(&["init", "-q", "-b", "main"]);
    git(&[
        "-c",
        "user.name=t",
        "-c",
        "user.email=t@example.com",
        "commit",
        "-q",
        "--allow-empty",
        "-m",
        "init",
    ]);
    git(&["worktree", "add", "-q", "-b", "feature", "../wt"]);
    std::fs::write(main.join(".git/hooks/pre-commit"), "#!/bin/sh").unwrap();
    (dir, main, wt)
}

/// The attack of a server in a linked worktree: plant a hook, rewrite the shared config,
/// create a submodule git directory, or repoint the worktree's `.git` file or `commondir`
/// at a directory of its own. Each is refused; GitPython's `COMMIT_EDITMSG` (created and
/// removed in the shared `.git`), objects and the worktree's own index work.
#[test]
fn worktree_shared_git_dir_refuses_hooks_config_and_redirects() {
    if skip_below(
        2,
        "worktree_shared_git_dir_refuses_hooks_config_and_redirects",
    ) {
        return;
    }
    let (_dir, main, wt) = worktree_tree();
    let g = main.join(".git");
    let s = with_root(spec(SandboxMode::BestEffort), &wt, Access::ReadWrite);
    let cases = vec![
        (act(&[&"write", &g.join("COMMIT_EDITMSG")]), OK),
        (act(&[&"unlink", &g.join("COMMIT_EDITMSG")]), OK),
        (act(&[&"write", &g.join("objects/tmp_obj")]), OK),
        (act(&[&"write", &g.join("worktrees/wt/index.lock")]), OK),
        (act(&[&"write", &g.join("hooks/pre-commit")]), EROFS),
        (act(&[&"write", &g.join("hooks/post-checkout")]), EROFS),
        (act(&[&"write", &g.join("config")]), EROFS),
        (act(&[&"unlink", &g.join("config")]), EBUSY),
        (act(&[&"mkdir", &g.join("modules")]), EACCES),
        (act(&[&"symlink", &"/tmp", &g.join("evil")]), EACCES),
        (act(&[&"write", &wt.join(".git")]), EROFS),
        (act(&[&"write", &g.join("worktrees/wt/commondir")]), EROFS),
        (act(&[&"write", &g.join("worktrees/wt/gitdir")]), EROFS),
    ];
    let actions: Vec<String> = cases.iter().map(|(a, _)| a.clone()).collect();
    let run = run_child(&s, &actions, &[]);
    let report = run.report.as_ref().unwrap();
    let carve = report.filesystem.carve.as_ref().unwrap();
    if carve.method == "landlock" {
        skip(format_args!(
            "worktree_shared_git_dir_refuses_hooks_config_and_redirects: no mount namespace \
             here ({:?})",
            carve.fallback
        ));
        return;
    }
    let cases: Vec<(&str, &str)> = cases.iter().map(|(a, w)| (a.as_str(), *w)).collect();
    run.expect(&cases);
    assert_eq!(
        std::fs::read_to_string(g.join("hooks/pre-commit")).unwrap(),
        "#!/bin/sh"
    );
    assert!(!g.join("hooks/post-checkout").exists());

    // Without a mount namespace the Landlock carve-out keeps the same parts unwritable, at
    // the carve-out's usual cost: no name is made or removed directly in the shared `.git`
    // (an existing `COMMIT_EDITMSG` is rewritten, not removed: GitPython's commit fails).
    let (_dir, main, wt) = worktree_tree();
    let g = main.join(".git");
    let s = with_root(spec(SandboxMode::BestEffort), &wt, Access::ReadWrite);
    let cases = [
        (act(&[&"write", &g.join("hooks/pre-commit")]), EACCES),
        (act(&[&"write", &g.join("config")]), EACCES),
        (act(&[&"write", &wt.join(".git")]), EACCES),
        (act(&[&"write", &g.join("hooks/post-checkout")]), EACCES),
        (act(&[&"unlink", &g.join("config")]), EACCES),
        (act(&[&"write", &g.join("worktrees/wt/commondir")]), EACCES),
        (act(&[&"mkdir", &g.join("modules")]), EACCES),
        (act(&[&"write", &g.join("COMMIT_EDITMSG")]), OK),
        (
            act(&[&"rename", &g.join("COMMIT_EDITMSG"), &g.join("config")]),
            EACCES,
        ),
        (act(&[&"unlink", &g.join("COMMIT_EDITMSG")]), EACCES),
        (act(&[&"write", &g.join("ORIG_HEAD")]), EACCES),
        (act(&[&"write", &g.join("objects/tmp_obj")]), OK),
    ];
    let actions: Vec<String> = cases.iter().map(|(a, _)| a.clone()).collect();
    let run = run_child(&s, &actions, &[(sandbox::MOUNTS_ENV, "off")]);
    let cases: Vec<(&str, &str)> = cases.iter().map(|(a, w)| (a.as_str(), *w)).collect();
    run.expect(&cases);
}
