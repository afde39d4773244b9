//! The documented default profile: the minimum a typical stdio MCP server (node via `npx`,
//! python via `uvx`, a venv or pyenv) needs besides its roots. Each entry says why it is
//! there; `docs/sandbox.md` lists them. Everything here is derived in rootfence before
//! launch, from the command line and rootfence's environment; the launcher only applies it.
//!
//! Rules this module keeps:
//! - Grant what exists only; a missing path is simply not granted.
//! - Never grant `/`, the home directory or an ancestor of it by inference: when a
//!   command lives directly in such a place, only the executable file itself is granted.
//! - Package caches are granted read-write only for the tool family the command belongs
//!   to (node or python), because write access to a cache lets a hostile server poison
//!   packages other projects later install.
//! - Secrets that tools read by default (`~/.npmrc`, `~/.pypirc`, `~/.netrc`, `~/.ssh`,
//!   `~/.config/gh`) are not granted; add them to `[sandbox] read` when a server needs them.
//! - Tool families (git, desktop-commander, browsers) are recognised from the server's
//!   command line (the program and the package a runner such as `npx` or `uvx` starts);
//!   each gets the state it cannot run without, and nothing else (see [`Family`]).
//! - `/proc` as a whole is granted only to the browser family, and only when the server
//!   will not hold `CAP_SYS_PTRACE`: without that capability Landlock's ptrace scoping keeps
//!   the `environ`, `maps`, `fd` targets and `io` of processes outside the sandbox
//!   unreadable (pinned by `tests/sandbox_confine.rs`); with it (root) it does not.

use std::ffi::{OsStr, OsString};
use std::io::Read;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::PermissionsExt;
use std::path::{Component, Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::plan::Grant;
use super::report::WithheldReport;

crate::coded::coded! {
    /// Rights of one grant, in Landlock terms (see `landlock.rs` for the exact access bits).
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
    #[serde(rename_all = "kebab-case")]
    #[non_exhaustive]
    pub enum Rights {
        /// Read files and list directories.
        Read => "read",
        /// Read files, list directories and execute files.
        ReadExec => "read-exec",
        /// Everything Landlock handles beneath the path.
        ReadWrite => "read-write",
        /// Read-exec, plus creating, writing, truncating and removing regular files beneath
        /// the path; no directories, links or special files. For a shared git directory
        /// (`gitdir.rs`): with no new directory possible, a `hooks/` or `modules/` that does
        /// not exist cannot be made, and those that exist are mounted read-only.
        WriteFiles => "write-files",
        /// Read, write, truncate and ioctl on device files (`/dev/null` and friends).
        Device => "device",
    }
    /// The name, as the policy and the report spell it.
    pub fn as_str;
}

impl std::fmt::Display for Rights {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The default profile computed for one command.
#[derive(Debug, Clone, Default)]
pub(crate) struct DefaultProfile {
    /// Paths granted (as found; the launcher resolves symlinks when it opens them), each
    /// with why it is in the profile (shown in the enforcement report).
    pub entries: Vec<Grant>,
    /// Environment variables passed through (exact names or `PREFIX*`).
    pub env: Vec<String>,
    /// Cache directories the profile grants read-write that did not exist yet: rootfence
    /// creates them (mode 0700) before launch, because a path that does not exist at
    /// launch cannot be granted and the tool would fail creating it.
    pub create_dirs: Vec<PathBuf>,
    /// Paths a family would need that are deliberately not granted, with the reason.
    pub withheld: Vec<WithheldReport>,
}

/// System directories with libraries and binaries: read and execute.
const SYSTEM_DIRS: &[&str] = &[
    "/usr",
    "/bin",
    "/sbin",
    "/lib",
    "/lib32",
    "/lib64",
    "/libx32",
    "/nix/store",
    "/gnu/store",
];

/// Entries of `/etc` that programs read to run: the loader, name service, TLS roots,
/// locale and time zone. Not `/etc` as a whole: it holds host secrets (`shadow`, keys).
const ETC_ENTRIES: &[&str] = &[
    "/etc/ld.so.cache",
    "/etc/ld.so.conf",
    "/etc/ld.so.conf.d",
    "/etc/ld.so.preload",
    "/etc/locale.alias",
    "/etc/locale.conf",
    "/etc/localtime",
    "/etc/timezone",
    "/etc/resolv.conf",
    "/etc/hosts",
    "/etc/host.conf",
    "/etc/nsswitch.conf",
    "/etc/gai.conf",
    "/etc/services",
    "/etc/protocols",
    "/etc/passwd",
    "/etc/group",
    "/etc/ssl",
    "/etc/ca-certificates",
    "/etc/ca-certificates.conf",
    "/etc/pki",
    "/etc/crypto-policies",
    "/etc/os-release",
    "/etc/lsb-release",
    "/etc/debian_version",
    "/etc/mime.types",
    "/etc/terminfo",
    "/etc/inputrc",
    "/etc/npmrc",
    "/etc/pip.conf",
    "/etc/gitconfig",
];

/// `/proc` and `/sys` entries node (libuv) and python read at start: own process, CPU
/// and memory figures, cgroup limits, overcommit policy.
///
/// Never `/proc` as a whole: Landlock (Linux 6.18 tested) refuses ptrace attach and
/// `/proc/<pid>/mem` of processes outside the sandbox, but not `environ`, `maps` or the
/// `fd` listing of other processes of the same user once `/proc` is granted, and other
/// processes' environments hold secrets. `/proc/self` is bound to the launcher's pid,
/// which the server keeps across exec; the server's own child processes therefore
/// cannot read their `/proc/self` (node and python cope).
const PROC_SYS_ENTRIES: &[&str] = &[
    "/proc/self",
    "/proc/cpuinfo",
    "/proc/meminfo",
    "/proc/stat",
    "/proc/loadavg",
    "/proc/uptime",
    "/proc/version",
    "/proc/filesystems",
    "/proc/sys/vm/overcommit_memory",
    "/proc/sys/kernel/pid_max",
    "/proc/sys/kernel/random",
    "/sys/fs/cgroup",
    "/sys/devices/system/cpu",
    "/sys/kernel/mm/transparent_hugepage",
];

/// The fixed system part of every profile, in order: paths with their rights and why, and the devices every program may use. The report shows these grants
/// grouped on one `system:` line, recognised by their why.
pub(crate) const SYSTEM: &[(&[&str], Rights, &str)] = &[
    (
        SYSTEM_DIRS,
        Rights::ReadExec,
        "system libraries and binaries",
    ),
    (
        ETC_ENTRIES,
        Rights::Read,
        "system configuration programs read to run",
    ),
    (
        PROC_SYS_ENTRIES,
        Rights::Read,
        "process and machine information runtimes read",
    ),
    (
        &["/dev/null", "/dev/zero", "/dev/full"],
        Rights::Device,
        "standard device",
    ),
    (
        &["/dev/urandom", "/dev/random"],
        Rights::Read,
        "standard device",
    ),
];

/// Environment variables every server gets (values from rootfence's own environment):
/// lookup, identity, locale, terminal and shell, proxies and TLS roots, and the variables that say
/// where the caches granted above are, so tools and grants agree. Everything else is
/// dropped unless the host entry names it (`rootfence run --env`, written by `wrap`) or a
/// policy's `[sandbox] env` lists it; `docs/sandbox.md` says what that keeps out and why.
pub(crate) const ENV_BASELINE: &[&str] = &[
    "PATH",
    "HOME",
    "USER",
    "LOGNAME",
    "LANG",
    "LANGUAGE",
    "LC_*",
    "TZ",
    "TERM",
    // The user's login shell (a path, nothing secret): servers with a shell tool
    // (desktop-commander) run the commands in it, as they do unwrapped.
    "SHELL",
    "NO_COLOR",
    "HTTP_PROXY",
    "HTTPS_PROXY",
    "NO_PROXY",
    "http_proxy",
    "https_proxy",
    "no_proxy",
    "SSL_CERT_FILE",
    "SSL_CERT_DIR",
    "NODE_EXTRA_CA_CERTS",
    "REQUESTS_CA_BUNDLE",
    "XDG_CACHE_HOME",
    "XDG_CONFIG_HOME",
    "XDG_DATA_HOME",
    "PYENV_ROOT",
    "PYENV_VERSION",
    "UV_CACHE_DIR",
    "UV_TOOL_DIR",
    "UV_PYTHON_INSTALL_DIR",
    "npm_config_cache",
];

crate::coded::coded! {
    /// Families whose state and install directories the profile grants (`places.toml`):
    /// the runtimes discovery finds by following the command (`runtime.rs`), then the tool
    /// families, servers that cannot run without some state of their own outside the
    /// roots, recognised from the command line by `tool_families`.
    #[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
    #[non_exhaustive]
    pub enum Family {
        /// node, npm, npx, corepack, yarn.
        Node => "node",
        /// pnpm, pnpx (`pnpm dlx`).
        Pnpm => "pnpm",
        /// bun, bunx.
        Bun => "bun",
        /// python, pip.
        Python => "python",
        /// uv, uvx.
        Uv => "uv",
        /// pipx.
        Pipx => "pipx",
        /// git and servers that run it (`mcp-server-git`, `git-mcp-server`): the user's git
        /// configuration, read-only (`~/.gitconfig`, `$XDG_CONFIG_HOME/git`). Never
        /// `~/.git-credentials`.
        Git => "git",
        /// desktop-commander: its own state directory `~/.claude-server-commander`
        /// (configuration, logs), read-write; and [`Family::Git`]'s grants, for the git its
        /// shell tool runs.
        DesktopCommander => "desktop-commander",
        /// Browsers and the servers that drive them (Playwright, Puppeteer, Chromium, Chrome):
        /// the Playwright/Puppeteer browser and profile caches read-write, fontconfig, and
        /// `/proc` when that is safe (Chromium's child processes read their own
        /// `/proc/<pid>`).
        Browser => "browser",
    }
    /// Lowercase name, as in `places.toml`.
    pub fn name;
}

/// The tool families a command line belongs to: the program and every argument that is
/// not an option are split into words (`@playwright/mcp@0.1` gives `playwright`, `mcp`;
/// `mcp-server-git` gives `mcp`, `server`, `git`) and matched whole, so `github` or
/// `gitlab` servers are not git.
pub fn tool_families(argv: &[OsString]) -> Vec<Family> {
    let mut out = Vec::new();
    for arg in argv {
        let Some(arg) = arg.to_str() else { continue };
        if arg.starts_with('-') {
            continue;
        }
        // The last path component, without a version suffix (`pkg@1.2.3`).
        let name = arg.rsplit('/').next().unwrap_or(arg);
        let name = match name.rfind('@') {
            Some(0) | None => name,
            Some(i) => &name[..i],
        };
        // Scoped npm packages: the scope is part of the identity (`@playwright/mcp`).
        let scope = arg
            .strip_prefix('@')
            .and_then(|a| a.split('/').next())
            .unwrap_or("");
        let words: Vec<String> = name
            .split(['-', '_', '.'])
            .chain(scope.split(['-', '_', '.']))
            .map(str::to_ascii_lowercase)
            .collect();
        let has = |w: &str| words.iter().any(|x| x == w);
        if has("git") {
            out.push(Family::Git);
        }
        if name.eq_ignore_ascii_case("desktop-commander") {
            out.push(Family::DesktopCommander);
            // Its shell tool runs git in the project, which reads the user's git
            // configuration (without it git refuses to run at all, issue 27).
            out.push(Family::Git);
        }
        if ["playwright", "puppeteer", "chromium", "chrome"]
            .iter()
            .any(|w| has(w))
        {
            out.push(Family::Browser);
        }
    }
    out.sort();
    out.dedup();
    out
}

/// Whether the server may be granted `/proc` as a whole: only when it will not hold
/// `CAP_SYS_PTRACE`. Measured on Linux 6.18 (Landlock ABI 7): with `/proc` granted, a
/// confined process without that capability gets `EACCES` on the `environ`, `maps`, `io`
/// and `cwd`/`exe` links of processes outside its domain (Landlock's ptrace scoping);
/// with it (root), `environ` and `maps` of every process are readable. The server runs
/// with rootfence's own capabilities (no file capabilities are expected), so rootfence's
/// effective set decides.
pub(crate) fn proc_grant_is_safe() -> bool {
    const CAP_SYS_PTRACE: u32 = 19;
    effective_caps().is_some_and(|caps| caps & (1 << CAP_SYS_PTRACE) == 0)
}

/// This process's effective capability set (`CapEff` in `/proc/self/status`).
pub(crate) fn effective_caps() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let caps = status.lines().find_map(|l| l.strip_prefix("CapEff:"))?;
    u64::from_str_radix(caps.trim(), 16).ok()
}

/// Computes the default profile for `argv`, given rootfence's environment.
pub(crate) fn default_profile(argv: &[OsString], env: &[(OsString, OsString)]) -> DefaultProfile {
    profile_for(argv, env, proc_grant_is_safe())
}

fn profile_for(argv: &[OsString], env: &[(OsString, OsString)], proc_safe: bool) -> DefaultProfile {
    let mut profile = DefaultProfile {
        env: ENV_BASELINE
            .iter()
            .chain(
                super::runtime::LAUNCHER_ENV
                    .iter()
                    .filter(|n| !ENV_BASELINE.contains(n)),
            )
            .map(|s| (*s).to_owned())
            .collect(),
        ..DefaultProfile::default()
    };
    let getenv = |name: &str| -> Option<&OsStr> {
        env.iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_os_str())
            .filter(|v| !v.is_empty())
    };
    let home = getenv("HOME")
        .map(PathBuf::from)
        .filter(|h| h.is_absolute());

    for (paths, rights, why) in SYSTEM {
        for p in *paths {
            push_existing(&mut profile, p, *rights, why);
        }
    }

    // The command, followed to its programs and installs (runtime.rs), with the caches
    // and install directories of the runtimes in play.
    let path_var = getenv("PATH").map(OsStr::to_owned);
    let env = super::runtime::Env {
        home: home.as_deref(),
        path_var: path_var.as_deref(),
        getenv: &getenv,
    };
    super::runtime::discover(argv, &env, &mut profile);
    for family in tool_families(argv) {
        grant_places(&mut profile, family.name(), &env);
        if family == Family::Browser {
            grant_proc_to_browsers(&mut profile, proc_safe);
        }
    }
    dedup_entries(&mut profile.entries);
    profile
}

/// How a place of `places.toml` is granted.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
enum Need {
    /// Read-write, created (mode 0700) when missing: a cache or a tool's state directory.
    Cache,
    /// These rights (`read`, `read-exec`, `read-write`), when it exists.
    #[serde(untagged)]
    Existing(Rights),
}

/// One row of `places.toml`: where the path is (the first of `at` that resolves, see
/// [`resolve_place`]), how it is granted, and why.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Place {
    at: Vec<String>,
    grant: Need,
    why: String,
}

/// The state and install directories of each family, by family name (`places.toml`).
fn places() -> &'static std::collections::HashMap<String, Vec<Place>> {
    static P: std::sync::OnceLock<std::collections::HashMap<String, Vec<Place>>> =
        std::sync::OnceLock::new();
    // The file is part of the binary and a unit test parses it: it cannot fail here.
    P.get_or_init(|| toml::from_str(include_str!("places.toml")).unwrap_or_default())
}

/// Where the XDG base directories are when their variable is not set.
const XDG_DEFAULTS: &[(&str, &str)] = &[
    ("XDG_CACHE_HOME", ".cache"),
    ("XDG_DATA_HOME", ".local/share"),
    ("XDG_CONFIG_HOME", ".config"),
];

/// A place of a family's table: `$VAR/rest` is beneath the variable's value when it is an
/// absolute path (an XDG base directory defaults to its place in the home), `~/rest`
/// beneath the home, anything else an absolute path. `None` when it cannot be known here.
pub(crate) fn resolve_place(place: &str, env: &super::runtime::Env<'_>) -> Option<PathBuf> {
    if let Some(rest) = place.strip_prefix("~/") {
        return env.home.map(|h| h.join(rest));
    }
    let Some(var) = place.strip_prefix('$') else {
        return Some(PathBuf::from(place));
    };
    let (var, rest) = var.split_once('/').unwrap_or((var, ""));
    let base = (env.getenv)(var)
        .map(PathBuf::from)
        .filter(|p| p.is_absolute())
        .or_else(|| {
            let (_, default) = XDG_DEFAULTS.iter().find(|(v, _)| *v == var)?;
            env.home.map(|h| h.join(default))
        })?;
    Some(if rest.is_empty() {
        base
    } else {
        base.join(rest)
    })
}

/// Grants the places `places.toml` lists for the family `family`, in order.
pub(crate) fn grant_places(
    profile: &mut DefaultProfile,
    family: &str,
    env: &super::runtime::Env<'_>,
) {
    for place in places().get(family).into_iter().flatten() {
        let path = place.at.iter().find_map(|p| resolve_place(p, env));
        match (place.grant, path) {
            (Need::Cache, path) => push_cache(profile, path, &place.why),
            (Need::Existing(rights), Some(path)) => {
                push_existing(profile, path, rights, &place.why)
            }
            (Need::Existing(_), None) => {}
        }
    }
}

/// `/proc` for the browser family, when that is safe (see [`Family::Browser`]), else
/// the reason it is withheld.
fn grant_proc_to_browsers(profile: &mut DefaultProfile, proc_safe: bool) {
    if proc_safe {
        // Write too: Chromium's own sandbox maps its user namespace by writing
        // /proc/self/{setgroups,uid_map,gid_map}, and a Landlock rule names one
        // process's /proc/<pid>, never those of processes started later, so the grant
        // is /proc. Beyond reading, that lets the server write the few /proc files of
        // the user's own processes that check ownership but not ptrace access
        // (raise an `oom_score_adj`, set a `coredump_filter`, `clear_refs`); their
        // memory, environ and descriptors stay out of reach (Landlock ptrace scoping),
        // and /proc/sys is the kernel's (root's) to write. Without it the browser's
        // sandbox fails and the user's only way out would be `--no-sandbox`, which
        // drops a layer; docs/sandbox.md, "The browser family".
        push_existing(
            profile,
            "/proc",
            Rights::ReadWrite,
            "browser child processes read their own /proc/<pid>, and Chromium's sandbox \
             writes its user namespace's uid_map; other processes' environ, memory and \
             fds stay out of reach (Landlock ptrace scoping)",
        );
    } else {
        profile.withheld.push(WithheldReport {
            path: "/proc".to_owned(),
            why: "the server would hold CAP_SYS_PTRACE (rootfence runs as root), with \
                  which Landlock does not keep other processes' environ unreadable; \
                  run rootfence as a normal user"
                .into(),
        });
    }
}

pub(crate) fn push_existing(
    profile: &mut DefaultProfile,
    path: impl AsRef<Path>,
    rights: Rights,
    why: &str,
) {
    let path = path.as_ref();
    if path.exists() {
        profile
            .entries
            .push(Grant::new(path, rights, "profile", why));
    }
}

pub(crate) fn push_cache(profile: &mut DefaultProfile, path: Option<PathBuf>, why: &str) {
    let Some(path) = path.filter(|p| p.is_absolute()) else {
        return;
    };
    if !path.exists() {
        profile.create_dirs.push(path.clone());
    }
    profile
        .entries
        .push(Grant::new(&path, Rights::ReadWrite, "profile", why));
}

/// Keeps one entry per path, the widest rights winning.
fn dedup_entries(entries: &mut Vec<Grant>) {
    let mut out: Vec<Grant> = Vec::with_capacity(entries.len());
    for e in entries.drain(..) {
        if let Some(prev) = out.iter_mut().find(|p| p.path == e.path) {
            prev.rights = widest(prev.rights, e.rights);
        } else {
            out.push(e);
        }
    }
    *entries = out;
}

/// The rights whose Landlock access bits hold both `a`'s and `b`'s: the wider of the two
/// when one holds the other, else read-write (which holds every right).
fn widest(a: Rights, b: Rights) -> Rights {
    let (bits_a, bits_b) = (super::landlock::access_of(a), super::landlock::access_of(b));
    if bits_a.contains(bits_b) {
        a
    } else if bits_b.contains(bits_a) {
        b
    } else {
        Rights::ReadWrite
    }
}

/// Finds `name` like `execvp` does: a name with a slash is taken as is, otherwise every
/// `PATH` entry in order; the first executable regular file wins.
pub(crate) fn lookup(name: &OsStr, path_var: Option<&OsStr>) -> Option<PathBuf> {
    if name.as_bytes().contains(&b'/') {
        let p = PathBuf::from(name);
        return is_executable_file(&p).then_some(p);
    }
    if name.is_empty() {
        return None;
    }
    let path_var = path_var.unwrap_or(OsStr::new(DEFAULT_PATH));
    std::env::split_paths(path_var)
        .map(|dir| {
            if dir.as_os_str().is_empty() {
                PathBuf::from(".").join(name)
            } else {
                dir.join(name)
            }
        })
        .find(|p| is_executable_file(p))
}

/// The search path used when the allow-listed environment has no `PATH` (glibc's default
/// without the current directory).
pub(crate) const DEFAULT_PATH: &str = "/usr/local/bin:/usr/bin:/bin";

/// Whether `p` is a regular file (after symlinks) with an execute bit set.
pub fn is_executable_file(p: &Path) -> bool {
    std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

/// Grants the project a script belongs to: the *nearest* ancestor of the script with a
/// package manifest or dependency directory (not the outermost: one `pyproject.toml` high
/// up must not expose everything below it), else the script's directory; never a broad
/// directory (then only the script). For node, the `node_modules` directories of the
/// ancestors above the project are granted too, because node resolves packages there
/// (a workspace's hoisted dependencies), but not the ancestors themselves.
pub(crate) fn grant_project(
    profile: &mut DefaultProfile,
    script: &Path,
    home: Option<&Path>,
    node: bool,
) {
    let script = std::fs::canonicalize(script).unwrap_or_else(|_| script.to_owned());
    let Some(dir) = script.parent() else { return };
    const MARKERS: &[&str] = &[
        "package.json",
        "node_modules",
        "pyproject.toml",
        "setup.py",
        ".venv",
    ];
    let project = dir
        .ancestors()
        .take_while(|anc| !is_broad(anc, home))
        .find(|anc| MARKERS.iter().any(|m| anc.join(m).exists()));
    let target = match project {
        Some(p) => p,
        None if !is_broad(dir, home) => dir,
        None => &script,
    };
    if !covered_by_system(target) {
        push_existing(
            profile,
            target,
            Rights::ReadExec,
            &format!("project of the script {}", script.display()),
        );
    }
    if node {
        let why = format!("node packages above the project {}", target.display());
        grant_node_modules_above(profile, target, home, &why);
    }
}

/// The `node_modules` directories of the ancestors of `project` up to a broad directory
/// (node resolves packages there: a workspace's hoisted dependencies), not the ancestors.
pub(crate) fn grant_node_modules_above(
    profile: &mut DefaultProfile,
    project: &Path,
    home: Option<&Path>,
    why: &str,
) {
    let above = project.parent().into_iter().flat_map(Path::ancestors);
    for anc in above.take_while(|anc| !is_broad(anc, home)) {
        let modules = anc.join("node_modules");
        if modules.is_dir() && !covered_by_system(&modules) {
            push_existing(profile, &modules, Rights::ReadExec, why);
        }
    }
}

/// The first argument that is not an option and names an existing regular file.
pub(crate) fn first_script_arg(args: &[OsString]) -> Option<PathBuf> {
    args.iter()
        .filter(|a| !a.as_bytes().starts_with(b"-"))
        .map(PathBuf::from)
        .find(|p| p.is_file())
        .and_then(|p| std::path::absolute(p).ok())
}

pub(crate) fn covered_by_system(p: &Path) -> bool {
    SYSTEM_DIRS.iter().any(|d| p.starts_with(d))
}

/// Directories too broad to grant by inference.
pub(crate) fn is_broad(p: &Path, home: Option<&Path>) -> bool {
    let depth = p
        .components()
        .filter(|c| matches!(c, Component::Normal(_)))
        .count();
    if depth <= 1 {
        return true; // `/`, `/home`, `/opt`, `/root`, `/tmp`, ...
    }
    match home {
        Some(h) => h.starts_with(p) || p == h.join(".local") || p == h.join(".config"),
        None => false,
    }
}

/// The interpreter named by a `#!` line: `#!/usr/bin/env node` gives `node`,
/// `#!/usr/bin/env -S node --flag` gives `node`, `#!/opt/x/bin/python3 -u` gives the path.
pub(crate) fn shebang_interpreter(p: &Path) -> Option<OsString> {
    let mut f = std::fs::File::open(p).ok()?;
    let mut buf = [0u8; 256];
    let n = f.read(&mut buf).ok()?;
    let line = buf[..n].strip_prefix(b"#!")?;
    let line = line.split(|b| *b == b'\n').next()?;
    let mut words = line
        .split(|b| *b == b' ' || *b == b'\t')
        .filter(|w| !w.is_empty());
    let first = words.next()?;
    if first.ends_with(b"/env") {
        let word = words.find(|w| !w.starts_with(b"-"))?;
        return Some(OsStr::from_bytes(word).to_owned());
    }
    Some(OsStr::from_bytes(first).to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(pairs: &[(&str, &str)]) -> Vec<(OsString, OsString)> {
        pairs
            .iter()
            .map(|(k, v)| (OsString::from(k), OsString::from(v)))
            .collect()
    }

    #[test]
    fn places_table_parses_and_names_known_families() {
        let names: Vec<&str> = Family::ALL.iter().map(|f| f.name()).collect();
        let table: std::collections::HashMap<String, Vec<Place>> =
            toml::from_str(include_str!("places.toml")).expect("places.toml parses");
        assert_eq!(table.len(), names.len(), "one list per family");
        for (family, rows) in &table {
            assert!(names.contains(&family.as_str()), "unknown family {family}");
            for row in rows {
                assert!(
                    !row.at.is_empty() && !row.why.is_empty(),
                    "{family}: {row:?}"
                );
            }
        }
    }

    #[test]
    fn widest_rights_of_two_entries_for_one_path() {
        use Rights::*;
        let all = [Read, ReadExec, ReadWrite, WriteFiles, Device];
        let want = |a: Rights, b: Rights| match (a, b) {
            (ReadWrite, _) | (_, ReadWrite) => ReadWrite,
            (WriteFiles, Device) | (Device, WriteFiles) => ReadWrite,
            (WriteFiles, _) | (_, WriteFiles) => WriteFiles,
            (Device, Read | ReadExec) | (Read | ReadExec, Device) => ReadWrite,
            (ReadExec, _) | (_, ReadExec) => ReadExec,
            (Device, Device) => Device,
            (Read, Read) => Read,
        };
        for a in all {
            for b in all {
                assert_eq!(widest(a, b), want(a, b), "{a} and {b}");
            }
        }
    }

    #[test]
    fn broad_directories_are_never_inferred() {
        let home = Some(Path::new("/home/u"));
        for p in [
            "/",
            "/home",
            "/opt",
            "/home/u",
            "/home/u/.local",
            "/home/u/.config",
        ] {
            assert!(is_broad(Path::new(p), home), "{p}");
        }
        for p in [
            "/home/u/.nvm/versions/node/v20",
            "/opt/node",
            "/home/u/proj",
        ] {
            assert!(!is_broad(Path::new(p), home), "{p}");
        }
    }

    #[test]
    fn shebang_forms() {
        let dir = tempfile::tempdir().unwrap();
        let cases: &[(&str, Option<&str>)] = &[
            ("#!/usr/bin/env node\n", Some("node")),
            (
                "#!/usr/bin/env -S node --max-old-space-size=100\n",
                Some("node"),
            ),
            ("#! /opt/py/bin/python3 -u\n", Some("/opt/py/bin/python3")),
            ("#!/bin/sh\nexec x\n", Some("/bin/sh")),
            ("\x7fELF", None),
            ("", None),
        ];
        for (i, (text, want)) in cases.iter().enumerate() {
            let p = dir.path().join(format!("s{i}"));
            std::fs::write(&p, text).unwrap();
            assert_eq!(
                shebang_interpreter(&p).as_deref(),
                want.map(OsStr::new),
                "{text:?}"
            );
        }
    }

    #[test]
    fn caches_only_for_the_family_in_play() {
        let dir = tempfile::tempdir().unwrap();
        let home = dir.path().to_str().unwrap().to_owned();
        let e = env(&[("HOME", &home), ("PATH", "/usr/bin:/bin")]);
        let sh = default_profile(&["sh".into()], &e);
        assert!(!sh.entries.iter().any(|x| x.path.ends_with(".npm")));
        if lookup(OsStr::new("node"), Some(OsStr::new("/usr/bin:/bin"))).is_some() {
            let node = default_profile(&["node".into()], &e);
            let npm = node
                .entries
                .iter()
                .find(|x| x.path.ends_with(".npm"))
                .unwrap();
            assert_eq!(npm.rights, Rights::ReadWrite);
            assert!(node.create_dirs.iter().any(|d| d.ends_with(".npm")));
        }
    }

    #[test]
    fn system_and_devices_are_present() {
        let p = default_profile(&["true".into()], &env(&[("PATH", "/usr/bin:/bin")]));
        let has = |path: &str, r: Rights| {
            p.entries
                .iter()
                .any(|e| e.path == Path::new(path) && e.rights == r)
        };
        assert!(has("/usr", Rights::ReadExec));
        assert!(has("/dev/null", Rights::Device));
        assert!(has("/proc/self", Rights::Read));
        assert!(!p.entries.iter().any(|e| e.path == Path::new("/etc")));
        assert!(!p.entries.iter().any(|e| e.path == Path::new("/etc/shadow")));
    }

    #[test]
    fn every_profile_path_is_absolute() {
        let dir = tempfile::tempdir().unwrap();
        let script = dir.path().join("server.sh");
        std::fs::write(&script, "#!/bin/sh\n").unwrap();
        std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
        // A relative command (`./server.sh` from its directory) through the same code path.
        let rel = pathdiff(&script);
        let p = default_profile(
            &[rel.clone().into_os_string()],
            &env(&[("PATH", "/usr/bin:/bin")]),
        );
        assert!(
            p.entries.iter().all(|e| e.path.is_absolute()),
            "{:?}",
            p.entries
        );
        assert!(
            p.entries
                .iter()
                .any(|e| e.path.ends_with("server.sh") || script.starts_with(&e.path))
        );
    }

    /// `script` relative to the current directory, with at least one slash.
    fn pathdiff(script: &Path) -> PathBuf {
        let cwd = std::env::current_dir().unwrap();
        let mut up = PathBuf::from(".");
        for _ in cwd.components().skip(1) {
            up.push("..");
        }
        up.join(script.strip_prefix("/").unwrap())
    }

    #[test]
    fn the_nearest_project_is_granted_not_the_outermost() {
        let dir = tempfile::tempdir().unwrap();
        let base = std::fs::canonicalize(dir.path()).unwrap();
        // <base>/ws/pyproject.toml high up, the server in <base>/ws/tools/srv/package.json,
        // a workspace's hoisted node_modules at <base>/ws/node_modules.
        let ws = base.join("ws");
        let srv = ws.join("tools/srv");
        std::fs::create_dir_all(srv.join("dist")).unwrap();
        std::fs::create_dir_all(ws.join("node_modules")).unwrap();
        std::fs::create_dir_all(ws.join("secrets")).unwrap();
        std::fs::write(ws.join("pyproject.toml"), "").unwrap();
        std::fs::write(srv.join("package.json"), "{}").unwrap();
        let script = srv.join("dist/index.js");
        std::fs::write(&script, "").unwrap();
        let mut p = DefaultProfile::default();
        grant_project(&mut p, &script, Some(Path::new("/home/u")), true);
        let paths: Vec<&Path> = p.entries.iter().map(|e| e.path.as_path()).collect();
        assert_eq!(
            paths,
            vec![srv.as_path(), ws.join("node_modules").as_path()]
        );
        assert!(p.entries[0].why.contains("project of the script"));
        // Python does not resolve packages in ancestors: the project only.
        let mut p = DefaultProfile::default();
        grant_project(&mut p, &script, Some(Path::new("/home/u")), false);
        assert_eq!(p.entries.len(), 1);
        assert_eq!(p.entries[0].path, srv);
    }

    #[test]
    fn tool_families_from_the_command_line() {
        let f = |argv: &[&str]| tool_families(&argv.iter().map(OsString::from).collect::<Vec<_>>());
        use Family::*;
        assert_eq!(f(&["uvx", "mcp-server-git", "--repository", "/r"]), [Git]);
        assert_eq!(f(&["python", "-m", "mcp_server_git"]), [Git]);
        assert_eq!(f(&["/usr/bin/git", "status"]), [Git]);
        assert_eq!(f(&["npx", "-y", "@cyanheads/git-mcp-server@2.1.0"]), [Git]);
        assert_eq!(f(&["npx", "-y", "@modelcontextprotocol/server-github"]), []);
        assert_eq!(f(&["npx", "-y", "gitlab-mcp"]), []);
        assert_eq!(
            f(&["npx", "-y", "@wonderwhy-er/desktop-commander@latest"]),
            [Git, DesktopCommander]
        );
        assert_eq!(
            f(&["npx", "@playwright/mcp@latest", "--headless"]),
            [Browser]
        );
        assert_eq!(f(&["npx", "-y", "puppeteer-mcp-server"]), [Browser]);
        assert_eq!(f(&["/usr/bin/chromium", "--headless"]), [Browser]);
        assert_eq!(f(&["npx", "-y", "@modelcontextprotocol/server-memory"]), []);
    }

    #[test]
    fn tool_family_state_is_granted() {
        let dir = tempfile::tempdir().unwrap();
        let home = std::fs::canonicalize(dir.path()).unwrap();
        std::fs::write(home.join(".gitconfig"), "[user]\nname = x\n").unwrap();
        std::fs::create_dir_all(home.join(".config/git")).unwrap();
        let e = env(&[("HOME", home.to_str().unwrap()), ("PATH", "/usr/bin:/bin")]);
        let argv = |v: &[&str]| v.iter().map(OsString::from).collect::<Vec<_>>();
        let git = profile_for(&argv(&["uvx", "mcp-server-git"]), &e, true);
        let has = |p: &DefaultProfile, path: &Path, r: Rights| {
            p.entries.iter().any(|x| x.path == path && x.rights == r)
        };
        assert!(has(&git, &home.join(".gitconfig"), Rights::Read));
        assert!(has(&git, &home.join(".config/git"), Rights::Read));
        assert!(
            !git.entries
                .iter()
                .any(|x| x.path.ends_with(".git-credentials"))
        );

        let dc = profile_for(&argv(&["npx", "@wonderwhy-er/desktop-commander"]), &e, true);
        let state = home.join(".claude-server-commander");
        assert!(has(&dc, &state, Rights::ReadWrite));
        // Its shell runs git: the git configuration, read-only.
        assert!(has(&dc, &home.join(".gitconfig"), Rights::Read));
        assert!(dc.create_dirs.contains(&state));

        let pw = profile_for(&argv(&["npx", "@playwright/mcp"]), &e, true);
        assert!(has(
            &pw,
            &home.join(".cache/ms-playwright"),
            Rights::ReadWrite
        ));
        assert!(has(
            &pw,
            &home.join(".cache/ms-playwright-mcp"),
            Rights::ReadWrite
        ));
        assert!(has(&pw, Path::new("/proc"), Rights::ReadWrite));
        assert!(pw.withheld.is_empty());
        // With CAP_SYS_PTRACE (root), /proc is withheld and the reason given.
        let pw_root = profile_for(&argv(&["npx", "@playwright/mcp"]), &e, false);
        assert!(!pw_root.entries.iter().any(|x| x.path == Path::new("/proc")));
        assert!(pw_root.withheld[0].why.contains("CAP_SYS_PTRACE"));
        // Other servers get neither.
        let plain = profile_for(
            &argv(&["npx", "@modelcontextprotocol/server-memory"]),
            &e,
            true,
        );
        assert!(!plain.entries.iter().any(|x| x.path == Path::new("/proc")));
        assert!(!has(&plain, &home.join(".gitconfig"), Rights::Read));
    }

    #[test]
    fn lookup_follows_path_order_and_slashes() {
        assert!(lookup(OsStr::new("sh"), Some(OsStr::new("/nonexistent:/bin"))).is_some());
        assert!(lookup(OsStr::new("no-such-cmd-rf"), None).is_none());
        assert!(lookup(OsStr::new("/bin/sh"), None).is_some());
        assert!(lookup(OsStr::new(""), None).is_none());
    }
}
