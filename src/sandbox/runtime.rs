//! Runtime discovery (issue 27): follows a server's command through launchers, shims,
//! symlinks and `#!` lines to the real programs, finds their installs, and grants what
//! they need with the reason shown in the start-up report. The default profile
//! (`profile.rs`) calls it; everything here runs in rootfence before launch.
//!
//! General rules rather than a list of tools:
//! - A program is looked up like `execvp` does, then followed through its symlinks
//!   (`~/.local/bin/x` → a pipx or uv tool venv, `node_modules/.bin/x` → the package) and
//!   its `#!` line (`npx` → `node`, a venv's script → the venv's python).
//! - Its install is found the way python finds `sys.prefix`: from the binary's `bin/`
//!   (or a shim directory) up to the nearest directory holding `lib/` (or a venv's
//!   `pyvenv.cfg`), a few levels at most. Installs are granted read-exec, never
//!   read-write: a server that could write its interpreter's `bin/` could change what
//!   every later session runs. A venv's `pyvenv.cfg` names its base interpreter
//!   (`home = ...`), which is followed too.
//! - When the install would be too broad (the home directory, `~/.local`, a top-level
//!   directory), the program's own `bin/` directory is granted instead, because launchers
//!   run their siblings (`uvx` runs the `uv` beside it, wherever the installer put both);
//!   outside a `bin/` directory, the file alone.
//! - A program inside a `node_modules` tree gets the whole tree (its sibling packages are
//!   its imports) and the `node_modules` of the directories above it (node's resolution).
//! - Every argument naming an executable file (`--python /x/bin/python3.12`,
//!   `--executable-path /opt/chrome/chrome`) is a program the server runs: followed the
//!   same way.
//! - Launchers that choose an interpreter themselves (`uv`, `uvx`, `pipx`) get the pythons
//!   they would find: `--python`/`UV_PYTHON` and `python3`/`python` on `PATH`, through
//!   pyenv, asdf or mise shims (a shim directory's parent holds the versions).
//! - Package managers' caches are read-write (the tool creates them when missing); their
//!   install directories (uv's tools and managed pythons) read-exec; both honour the
//!   tool's environment variables (`UV_CACHE_DIR`, `XDG_*`, `PIPX_HOME`, ...).

use std::collections::HashSet;
use std::ffi::{OsStr, OsString};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use super::profile::{
    DefaultProfile, Family, Rights, covered_by_system, grant_node_modules_above, grant_places,
    is_broad, is_executable_file, lookup, push_cache, push_existing, resolve_place,
    shebang_interpreter,
};

/// How many programs one command may lead to (launcher → interpreter → shim → ...).
const MAX_PROGRAMS: usize = 16;

/// How many levels above a `bin/` directory an install's `lib/` is looked for.
const MAX_PREFIX_LEVELS: usize = 2;

/// Environment variables of the launchers discovery knows: where they keep things, and
/// switches that change no credential. Passed to every server (names only; values come
/// from rootfence's environment), so that the grants and the tools agree. Index URLs are
/// not passed, because they often carry credentials: a host entry that needs one names it
/// in its `env` (`rootfence run --env UV_INDEX_URL`).
pub(crate) const LAUNCHER_ENV: &[&str] = &[
    "UV_CACHE_DIR",
    "UV_TOOL_DIR",
    "UV_TOOL_BIN_DIR",
    "UV_PYTHON_INSTALL_DIR",
    "UV_PYTHON",
    "UV_PYTHON_PREFERENCE",
    "UV_PYTHON_DOWNLOADS",
    "UV_OFFLINE",
    "UV_NO_CACHE",
    "UV_NATIVE_TLS",
    "UV_SYSTEM_CERTS",
    "UV_NO_PROGRESS",
    "PIPX_HOME",
    "PIPX_BIN_DIR",
    "PIP_CACHE_DIR",
    "PYENV_ROOT",
    "PYENV_VERSION",
    "ASDF_DIR",
    "ASDF_DATA_DIR",
    "MISE_DATA_DIR",
    "NVM_DIR",
    "FNM_DIR",
    "VOLTA_HOME",
    "npm_config_cache",
    // npm's and pnpm's offline switches (both read `npm_config_*`), and npm's update check.
    "npm_config_offline",
    "npm_config_prefer_offline",
    "npm_config_update_notifier",
    "PNPM_HOME",
    "BUN_INSTALL",
];

/// The family a program belongs to, from its file name.
pub(crate) fn family_of(p: &Path) -> Option<Family> {
    let name = p.file_name()?.to_str()?;
    let name = name.strip_suffix(".js").unwrap_or(name);
    let name = name.strip_suffix(".cjs").unwrap_or(name);
    match name {
        "node" | "nodejs" | "npx" | "npm" | "npx-cli" | "npm-cli" | "yarn" | "corepack" => {
            Some(Family::Node)
        }
        "pnpm" | "pnpx" => Some(Family::Pnpm),
        "bun" | "bunx" => Some(Family::Bun),
        "uv" | "uvx" => Some(Family::Uv),
        "pipx" => Some(Family::Pipx),
        n if n.starts_with("python") || n.starts_with("pip") => Some(Family::Python),
        _ => None,
    }
}

/// What discovery needs from rootfence's environment.
pub(crate) struct Env<'a> {
    pub home: Option<&'a Path>,
    pub path_var: Option<&'a OsStr>,
    pub getenv: &'a dyn Fn(&str) -> Option<&'a OsStr>,
}

/// Follows `argv` to its programs and installs and adds their grants to `profile`.
pub(crate) fn discover(argv: &[OsString], env: &Env<'_>, profile: &mut DefaultProfile) {
    let Some(program) = argv.first() else {
        return;
    };
    let families = {
        let mut w = Walker {
            profile: &mut *profile,
            env,
            seen: HashSet::new(),
            families: Vec::new(),
            steps: 0,
        };
        w.follow(program, "the server command");
        // Arguments naming an executable file: programs the server runs.
        for (flag, value) in arg_values(&argv[1..]) {
            let p = Path::new(value);
            if value.as_bytes().contains(&b'/') && is_executable_file(p) {
                let why = match flag {
                    Some(f) => format!("named by the server's argument {f}"),
                    None => "named by the server's arguments".to_owned(),
                };
                w.follow(value, &why);
            }
        }
        // Launchers that pick a python themselves.
        if w.has(Family::Uv) || w.has(Family::Pipx) {
            let asked = arg_values(&argv[1..])
                .into_iter()
                .filter(|(flag, _)| matches!(flag, Some("--python" | "-p")))
                .map(|(_, value)| value);
            let wanted = (env.getenv)("UV_PYTHON")
                .into_iter()
                .chain(asked)
                .map(python_request)
                .chain(["python3".into(), "python".into()]);
            let launcher = if w.has(Family::Uv) { "uv" } else { "pipx" };
            for name in wanted {
                let why = format!(
                    "a python {launcher} may run ({} on PATH, or as asked)",
                    name.to_string_lossy()
                );
                w.follow(&name, &why);
            }
        }
        w.families
    };
    // `node server.js`, `python3 server.py`, `uv run --script server.py`: the project.
    let script = if families.contains(&Family::Uv) {
        argv[1..]
            .iter()
            .map(PathBuf::from)
            .find(|p| p.extension().is_some_and(|e| e == "py") && p.is_file())
            .and_then(|p| std::path::absolute(p).ok())
    } else if families.contains(&Family::Node) || families.contains(&Family::Python) {
        super::profile::first_script_arg(&argv[1..])
    } else {
        None
    };
    if let Some(script) = script {
        super::profile::grant_project(profile, &script, env.home, families.contains(&Family::Node));
    }
    grant_family_dirs(profile, &families, env);
}

/// `3.12` asks for `python3.12`; a path or a name is taken as is.
fn python_request(v: &OsStr) -> OsString {
    let s = v.as_bytes();
    if !s.is_empty() && s.iter().all(|b| b.is_ascii_digit() || *b == b'.') {
        let mut name = OsString::from("python");
        name.push(v);
        name
    } else {
        v.to_owned()
    }
}

/// Option values and positional arguments: `--flag=value` gives (`--flag`, value),
/// `--flag value` gives (`--flag`, value) as well as being seen positionally.
fn arg_values(args: &[OsString]) -> Vec<(Option<&str>, &OsStr)> {
    let mut out = Vec::new();
    let mut prev_flag: Option<&str> = None;
    for a in args {
        let bytes = a.as_bytes();
        if bytes.starts_with(b"-") {
            match a.to_str().and_then(|s| s.split_once('=')) {
                Some((flag, value)) => {
                    out.push((Some(flag), OsStr::new(value)));
                    prev_flag = None;
                }
                None => prev_flag = a.to_str(),
            }
            continue;
        }
        out.push((prev_flag.take(), a.as_os_str()));
    }
    out
}

struct Walker<'p, 'e, 'a> {
    profile: &'p mut DefaultProfile,
    env: &'e Env<'a>,
    seen: HashSet<PathBuf>,
    families: Vec<Family>,
    steps: usize,
}

impl Walker<'_, '_, '_> {
    fn has(&self, f: Family) -> bool {
        self.families.contains(&f)
    }

    /// Follows one program: its install (as found and as resolved), a venv's base
    /// interpreter, and its `#!` interpreter.
    fn follow(&mut self, name: &OsStr, why: &str) {
        if self.steps >= MAX_PROGRAMS {
            return;
        }
        self.steps += 1;
        let Some(found) = lookup(name, self.env.path_var) else {
            return;
        };
        // `./server.js` must become an absolute grant, like everything else.
        let found = std::path::absolute(&found).unwrap_or(found);
        let real = std::fs::canonicalize(&found).unwrap_or_else(|_| found.clone());
        if !self.seen.insert(found.clone()) {
            return;
        }
        self.seen.insert(real.clone());
        for p in [&found, &real] {
            if let Some(f) = family_of(p)
                && !self.has(f)
            {
                self.families.push(f);
            }
        }
        let mut prefixes: Vec<PathBuf> = self.grant_install(&found, why).into_iter().collect();
        if real != found {
            let via = format!("{why}, resolved from {}", found.display());
            prefixes.extend(self.grant_install(&real, &via));
        }
        for prefix in prefixes {
            if let Some(base) = venv_base(&prefix) {
                let why = format!("base interpreter of the venv {}", prefix.display());
                self.follow(base.as_os_str(), &why);
            }
        }
        if let Some(interp) = shebang_interpreter(&real) {
            let why = format!("interpreter of {}", real.display());
            self.follow(&interp, &why);
        }
    }

    /// Grants the install of one executable (see the module's rules); returns the
    /// install prefix granted, if it is one.
    fn grant_install(&mut self, exe: &Path, why: &str) -> Option<PathBuf> {
        if covered_by_system(exe) {
            return None;
        }
        let home = self.env.home;
        if let Some(modules) = node_modules_root(exe, home) {
            push_existing(
                self.profile,
                &modules,
                Rights::ReadExec,
                &format!(
                    "packages beside {} ({why}): node resolves its imports in this node_modules",
                    exe.display()
                ),
            );
            let project = modules.parent()?;
            let why = format!("node packages above {}", project.display());
            grant_node_modules_above(self.profile, project, home, &why);
            return None;
        }
        let dir = exe.parent()?;
        let prefix = install_prefix(dir, home);
        let (path, why) = match &prefix {
            Some(prefix) => (
                prefix.as_path(),
                format!("install of {} ({why})", exe.display()),
            ),
            None if is_bin_dir(dir) && !is_broad(dir, home) => (
                dir,
                format!(
                    "directory of {} ({why}): launchers run the programs installed beside them \
                     (uvx runs uv)",
                    exe.display()
                ),
            ),
            None => (exe, format!("{why}; its directory is too broad to grant")),
        };
        push_existing(self.profile, path, Rights::ReadExec, &why);
        prefix
    }
}

fn is_bin_dir(dir: &Path) -> bool {
    matches!(
        dir.file_name().and_then(OsStr::to_str),
        Some("bin" | "sbin" | "shims" | "Scripts")
    )
}

/// The install prefix of a program in `dir`, found like `sys.prefix`: for `<p>/bin` (or a
/// shim directory), the nearest of `<p>` and up to [`MAX_PREFIX_LEVELS`] directories above
/// it that holds `lib/`, `lib64/` or a venv's `pyvenv.cfg`, else `<p>`; for any other
/// directory, the directory itself. `None` when that is too broad to grant.
pub(crate) fn install_prefix(dir: &Path, home: Option<&Path>) -> Option<PathBuf> {
    if !is_bin_dir(dir) {
        return (!is_broad(dir, home)).then(|| dir.to_owned());
    }
    let first = dir.parent()?;
    let landmark = |p: &Path| {
        p.join("lib").is_dir() || p.join("lib64").is_dir() || p.join("pyvenv.cfg").is_file()
    };
    let found = first
        .ancestors()
        .take(MAX_PREFIX_LEVELS + 1)
        .take_while(|p| !is_broad(p, home))
        .find(|p| landmark(p));
    match found {
        Some(p) => Some(p.to_owned()),
        None => (!is_broad(first, home)).then(|| first.to_owned()),
    }
}

/// The outermost `node_modules` directory `p` lies in, unless it is too broad.
fn node_modules_root(p: &Path, home: Option<&Path>) -> Option<PathBuf> {
    p.ancestors()
        .skip(1)
        .filter(|a| a.file_name() == Some(OsStr::new("node_modules")))
        .last()
        .filter(|m| !is_broad(m, home))
        .map(Path::to_path_buf)
}

/// The base interpreter a venv at `prefix` was made from (`home = <dir>` in its
/// `pyvenv.cfg`, PEP 405): `<dir>/python3`, else `<dir>/python`.
fn venv_base(prefix: &Path) -> Option<PathBuf> {
    let text = std::fs::read_to_string(prefix.join("pyvenv.cfg")).ok()?;
    let home = text.lines().find_map(|l| {
        let (k, v) = l.split_once('=')?;
        (k.trim() == "home").then(|| PathBuf::from(v.trim()))
    })?;
    ["python3", "python"]
        .iter()
        .map(|n| home.join(n))
        .find(|p| is_executable_file(p))
}

/// Caches (read-write, created when missing) and install directories (read-exec) of the
/// families in play (`places.toml`), honouring their environment variables; for pipx, its
/// own home first.
fn grant_family_dirs(profile: &mut DefaultProfile, families: &[Family], env: &Env<'_>) {
    let mut families = families.to_vec();
    families.sort();
    families.dedup();
    for family in families {
        if family == Family::Pipx {
            // `PIPX_HOME`, else the old `~/.local/pipx` when it exists, else the XDG one.
            let pipx_home = resolve_place("$PIPX_HOME", env).or_else(|| {
                let old = env.home?.join(".local/pipx");
                if old.is_dir() {
                    Some(old)
                } else {
                    resolve_place("$XDG_DATA_HOME/pipx", env)
                }
            });
            if let Some(ph) = pipx_home {
                push_existing(profile, &ph, Rights::ReadExec, "pipx environments");
                push_cache(
                    profile,
                    Some(ph.join(".cache")),
                    "pipx run's cached environments",
                );
            }
        }
        grant_places(profile, family.name(), env);
    }
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::PermissionsExt;

    use super::*;

    fn exe(p: &Path, text: &str) {
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
        std::fs::set_permissions(p, std::fs::Permissions::from_mode(0o755)).unwrap();
    }

    struct Machine {
        _dir: tempfile::TempDir,
        base: PathBuf,
        home: PathBuf,
    }

    fn machine() -> Machine {
        let dir = tempfile::tempdir().unwrap();
        let base = std::fs::canonicalize(dir.path()).unwrap();
        let home = base.join("home/u");
        std::fs::create_dir_all(&home).unwrap();
        Machine {
            _dir: dir,
            base,
            home,
        }
    }

    /// Runs discovery for `argv` with `PATH` and extra variables; returns the grants.
    fn run(m: &Machine, argv: &[&str], path: &str, vars: &[(&str, &str)]) -> DefaultProfile {
        let path = OsString::from(path);
        let vars: Vec<(String, OsString)> = vars
            .iter()
            .map(|(k, v)| ((*k).to_owned(), OsString::from(v)))
            .collect();
        let getenv = |n: &str| -> Option<&OsStr> {
            vars.iter()
                .find(|(k, _)| k == n)
                .map(|(_, v)| v.as_os_str())
        };
        let env = Env {
            home: Some(&m.home),
            path_var: Some(&path),
            getenv: &getenv,
        };
        let mut p = DefaultProfile::default();
        let argv: Vec<OsString> = argv.iter().map(OsString::from).collect();
        discover(&argv, &env, &mut p);
        p
    }

    fn rights_of(p: &DefaultProfile, path: &Path) -> Option<Rights> {
        p.entries.iter().find(|e| e.path == path).map(|e| e.rights)
    }

    #[test]
    fn uvx_in_local_bin_gets_its_sibling_uv_and_the_pythons_it_may_pick() {
        let m = machine();
        let bin = m.home.join(".local/bin");
        exe(&bin.join("uvx"), "\x7fELF");
        exe(&bin.join("uv"), "\x7fELF");
        std::fs::create_dir_all(m.home.join(".local/lib")).unwrap();
        // A pyenv layout: a shim, the versions under the root.
        let pyenv = m.home.join(".pyenv");
        exe(
            &pyenv.join("shims/python3"),
            "#!/bin/sh\nexec pyenv exec python3\n",
        );
        std::fs::create_dir_all(pyenv.join("versions/3.12.1/lib")).unwrap();
        exe(&pyenv.join("versions/3.12.1/bin/python3.12"), "\x7fELF");
        let path = format!(
            "{}:{}:/usr/bin:/bin",
            bin.display(),
            pyenv.join("shims").display()
        );
        let p = run(&m, &["uvx", "mcp-server-git"], &path, &[]);
        // The launcher's own directory (its prefix ~/.local is too broad), read-exec.
        assert_eq!(
            rights_of(&p, &bin),
            Some(Rights::ReadExec),
            "{:#?}",
            p.entries
        );
        assert!(rights_of(&p, &m.home.join(".local")).is_none());
        // python3 on PATH is a pyenv shim: the shims' root, which holds the versions.
        assert_eq!(
            rights_of(&p, &pyenv),
            Some(Rights::ReadExec),
            "{:#?}",
            p.entries
        );
        // uv's cache read-write, created; nothing else read-write.
        let cache = m.home.join(".cache/uv");
        assert_eq!(rights_of(&p, &cache), Some(Rights::ReadWrite));
        assert!(p.create_dirs.contains(&cache));
        let rw: Vec<&Path> = p
            .entries
            .iter()
            .filter(|e| e.rights == Rights::ReadWrite)
            .map(|e| e.path.as_path())
            .collect();
        assert_eq!(
            rw,
            [
                cache.as_path(),
                m.home.join(".local/share/uv/tools").as_path()
            ]
        );
        // Each grant says why.
        let why = &p.entries.iter().find(|e| e.path == bin).unwrap().why;
        assert!(why.contains("uvx runs uv"), "{why}");
    }

    #[test]
    fn uv_dirs_honour_their_variables() {
        let m = machine();
        let bin = m.base.join("opt/uv/bin");
        exe(&bin.join("uvx"), "\x7fELF");
        let cache = m.base.join("c/uv-cache");
        let tools = m.base.join("t/tools");
        let pythons = m.base.join("p/pythons");
        std::fs::create_dir_all(&tools).unwrap();
        std::fs::create_dir_all(&pythons).unwrap();
        let (c, t, py) = (
            cache.to_str().unwrap(),
            tools.to_str().unwrap(),
            pythons.to_str().unwrap(),
        );
        let p = run(
            &m,
            &["uvx", "x"],
            bin.to_str().unwrap(),
            &[
                ("UV_CACHE_DIR", c),
                ("UV_TOOL_DIR", t),
                ("UV_PYTHON_INSTALL_DIR", py),
            ],
        );
        assert_eq!(rights_of(&p, &cache), Some(Rights::ReadWrite));
        assert_eq!(rights_of(&p, &tools), Some(Rights::ReadWrite));
        assert_eq!(rights_of(&p, &pythons), Some(Rights::ReadExec));
        assert_eq!(
            rights_of(&p, &m.base.join("opt/uv")),
            Some(Rights::ReadExec)
        );
        assert!(rights_of(&p, &m.home.join(".cache/uv")).is_none());
    }

    #[test]
    fn an_interpreter_named_by_an_argument_gets_its_prefix_with_lib_read_exec() {
        let m = machine();
        let bin = m.home.join(".local/bin");
        exe(&bin.join("uvx"), "\x7fELF");
        let prefix = m.home.join(".pyenv/versions/3.12.1");
        std::fs::create_dir_all(prefix.join("lib")).unwrap();
        std::fs::write(prefix.join("lib/libpython3.12.so.1.0"), "").unwrap();
        let py = prefix.join("bin/python3.12");
        exe(&py, "\x7fELF");
        for argv in [
            vec!["uvx", "--python", py.to_str().unwrap(), "mcp-server-git"],
            vec![
                "uvx",
                &format!("--python={}", py.display()),
                "mcp-server-git",
            ],
        ] {
            let p = run(&m, &argv, bin.to_str().unwrap(), &[]);
            assert_eq!(
                rights_of(&p, &prefix),
                Some(Rights::ReadExec),
                "{argv:?}: {:#?}",
                p.entries
            );
            assert!(rights_of(&p, &prefix.join("bin")).is_none());
            assert!(
                !p.entries.iter().any(|e| e.rights == Rights::ReadWrite
                    && (prefix.starts_with(&e.path) || e.path.starts_with(&prefix))),
                "an interpreter's install must never be writable: {:#?}",
                p.entries
            );
        }
    }

    #[test]
    fn a_project_node_modules_bin_gets_the_whole_node_modules() {
        let m = machine();
        let proj = m.home.join("proj");
        let pkg = proj.join("node_modules/@modelcontextprotocol/server-memory");
        exe(&pkg.join("dist/index.js"), "#!/usr/bin/env node\n");
        std::fs::create_dir_all(proj.join("node_modules/.bin")).unwrap();
        std::fs::create_dir_all(proj.join("node_modules/@modelcontextprotocol/sdk")).unwrap();
        std::os::unix::fs::symlink(
            "../@modelcontextprotocol/server-memory/dist/index.js",
            proj.join("node_modules/.bin/mcp-server-memory"),
        )
        .unwrap();
        // A workspace's hoisted packages above the project.
        std::fs::create_dir_all(m.home.join("node_modules")).unwrap();
        let cmd = proj.join("node_modules/.bin/mcp-server-memory");
        let p = run(&m, &[cmd.to_str().unwrap()], "/usr/bin:/bin", &[]);
        assert_eq!(
            rights_of(&p, &proj.join("node_modules")),
            Some(Rights::ReadExec),
            "{:#?}",
            p.entries
        );
        assert!(rights_of(&p, &proj.join("node_modules/.bin")).is_none());
        // The home's own node_modules is above the project but the home is too broad to
        // walk into: not granted.
        assert!(rights_of(&p, &m.home.join("node_modules")).is_none());
    }

    #[test]
    fn a_pipx_or_uv_tool_link_resolves_to_its_venv_and_base_interpreter() {
        let m = machine();
        let base = m.base.join("opt/python3.11");
        std::fs::create_dir_all(base.join("lib")).unwrap();
        exe(&base.join("bin/python3"), "\x7fELF");
        let venv = m.home.join(".local/share/pipx/venvs/mcp-server-sqlite");
        std::fs::create_dir_all(venv.join("lib")).unwrap();
        std::fs::write(
            venv.join("pyvenv.cfg"),
            format!(
                "home = {}\ninclude-system-site-packages = false\n",
                base.join("bin").display()
            ),
        )
        .unwrap();
        // A copied interpreter (`--copies`): only pyvenv.cfg names the base.
        exe(&venv.join("bin/python"), "\x7fELF");
        exe(
            &venv.join("bin/mcp-server-sqlite"),
            &format!("#!{}\n", venv.join("bin/python").display()),
        );
        let bin = m.home.join(".local/bin");
        std::fs::create_dir_all(&bin).unwrap();
        std::os::unix::fs::symlink(
            venv.join("bin/mcp-server-sqlite"),
            bin.join("mcp-server-sqlite"),
        )
        .unwrap();
        let p = run(&m, &["mcp-server-sqlite"], bin.to_str().unwrap(), &[]);
        assert_eq!(
            rights_of(&p, &venv),
            Some(Rights::ReadExec),
            "{:#?}",
            p.entries
        );
        assert_eq!(
            rights_of(&p, &base),
            Some(Rights::ReadExec),
            "{:#?}",
            p.entries
        );
        assert_eq!(rights_of(&p, &bin), Some(Rights::ReadExec));
        let why = &p.entries.iter().find(|e| e.path == base).unwrap().why;
        assert!(why.contains("base interpreter of the venv"), "{why}");
    }

    #[test]
    fn uv_run_script_grants_the_scripts_project() {
        let m = machine();
        let bin = m.base.join("opt/uv/bin");
        exe(&bin.join("uv"), "\x7fELF");
        exe(&bin.join("uvx"), "\x7fELF");
        let proj = m.home.join("tools/weather");
        std::fs::create_dir_all(&proj).unwrap();
        std::fs::write(proj.join("pyproject.toml"), "").unwrap();
        let script = proj.join("server.py");
        std::fs::write(&script, "# /// script\n").unwrap();
        let p = run(
            &m,
            &["uv", "run", "--script", script.to_str().unwrap()],
            bin.to_str().unwrap(),
            &[],
        );
        assert_eq!(
            rights_of(&p, &proj),
            Some(Rights::ReadExec),
            "{:#?}",
            p.entries
        );
        // A data file on uv's command line is not a script.
        let db = proj.join("data.db");
        std::fs::write(&db, "").unwrap();
        let p = run(
            &m,
            &[
                "uvx",
                "mcp-server-sqlite",
                "--db-path",
                db.to_str().unwrap(),
            ],
            bin.to_str().unwrap(),
            &[],
        );
        assert!(rights_of(&p, &proj).is_none(), "{:#?}", p.entries);
        assert_eq!(
            rights_of(&p, &m.home.join(".cache/uv")),
            Some(Rights::ReadWrite),
            "uvx was not recognised: {:#?}",
            p.entries
        );
    }

    #[test]
    fn install_prefixes_by_landmark() {
        let m = machine();
        let h = Some(m.home.as_path());
        let nvm = m.home.join(".nvm/versions/node/v20");
        std::fs::create_dir_all(nvm.join("lib/node_modules")).unwrap();
        std::fs::create_dir_all(nvm.join("bin")).unwrap();
        // A `bin/<arch>` layout: the landmark one level higher.
        let odd = m.base.join("opt/tool");
        std::fs::create_dir_all(odd.join("lib")).unwrap();
        std::fs::create_dir_all(odd.join("x/bin")).unwrap();
        let cases: &[(PathBuf, Option<PathBuf>)] = &[
            (nvm.join("bin"), Some(nvm.clone())),
            (odd.join("x/bin"), Some(odd.clone())),
            (m.home.join(".local/bin"), None),
            (m.home.join("bin"), None),
            (m.base.join("opt/app"), Some(m.base.join("opt/app"))),
            (m.home.clone(), None),
            (PathBuf::from("/bin"), None),
        ];
        for (dir, want) in cases {
            assert_eq!(&install_prefix(dir, h), want, "{}", dir.display());
        }
    }

    #[test]
    fn arguments_and_python_requests() {
        let args: Vec<OsString> = ["--python", "3.12", "--from=x", "pkg", "-p", "/a/python"]
            .iter()
            .map(OsString::from)
            .collect();
        let got: Vec<(Option<&str>, &str)> = arg_values(&args)
            .into_iter()
            .map(|(f, v)| (f, v.to_str().unwrap()))
            .collect();
        assert_eq!(
            got,
            [
                (Some("--python"), "3.12"),
                (Some("--from"), "x"),
                (None, "pkg"),
                (Some("-p"), "/a/python")
            ]
        );
        assert_eq!(python_request(OsStr::new("3.12")), "python3.12");
        assert_eq!(python_request(OsStr::new("/x/python")), "/x/python");
        assert_eq!(python_request(OsStr::new("pypy3")), "pypy3");
    }

    #[test]
    fn families_by_name() {
        for (name, want) in [
            ("/x/uvx", Some(Family::Uv)),
            ("/x/npx-cli.js", Some(Family::Node)),
            ("/x/pnpm.cjs", Some(Family::Pnpm)),
            ("/x/bunx", Some(Family::Bun)),
            ("/x/pipx", Some(Family::Pipx)),
            ("/x/python3.12", Some(Family::Python)),
            ("/x/mcp-server-git", None),
        ] {
            assert_eq!(family_of(Path::new(name)), want, "{name}");
        }
    }
}
