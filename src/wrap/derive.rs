//! What a host entry itself tells rootfence about the server it starts, turned into
//! `rootfence run` options so the wrapped server keeps working under the default sandbox:
//!
//! - every name in the entry's `env` (and in its `envFile`) becomes `--env NAME`: the host
//!   sets those variables for this server, so the sandbox must pass them on;
//! - every existing directory the server's command line names becomes `--root DIR`
//!   (server-filesystem's directory arguments, `mcp-server-git --repository R`, VS Code's
//!   `${workspaceFolder}`, kept as the variable so the host expands it);
//! - an `env` value that is a path becomes a sandbox grant for the server's own state:
//!   `--write DIR` for a directory, or for a file its directory (servers save by writing a
//!   temporary file beside it and renaming it over, as server-memory does), unless that
//!   directory is too broad (then the file alone, with a note); `--read` under system
//!   directories.
//!
//! This is the only part of `wrap` that reads the filesystem (which arguments are
//! directories, the `envFile`); it is skipped when [`DeriveContext`] is absent.

use std::path::{Path, PathBuf};

use crate::uri::lexical;

/// What derivation needs to know besides the entry.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DeriveContext {
    /// The user's home directory, for `~` in arguments and values.
    pub home: Option<PathBuf>,
    /// The workspace folder the configuration belongs to (`DIR` of `DIR/.vscode/mcp.json`,
    /// `DIR/.cursor/mcp.json`, `DIR/.mcp.json`), to check `${workspaceFolder}` paths and
    /// read an `envFile` under it. `None` for user-wide files.
    pub workspace: Option<PathBuf>,
    /// When set, derivation does not look at the filesystem: these are the directories
    /// that exist, and `files` the files (for examples and tests that describe another
    /// machine).
    pub assume: Option<Assumed>,
}

/// The filesystem as derivation should assume it (see [`DeriveContext::assume`]).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Assumed {
    /// Directories that exist.
    pub dirs: Vec<PathBuf>,
    /// Files that exist.
    pub files: Vec<PathBuf>,
}

impl DeriveContext {
    fn is_dir(&self, p: &Path) -> bool {
        let assumed = |a: &Assumed| a.dirs.iter().any(|d| d == p);
        self.assume.as_ref().map_or_else(|| p.is_dir(), assumed)
    }

    fn is_file(&self, p: &Path) -> bool {
        let assumed = |a: &Assumed| a.files.iter().any(|f| f == p);
        self.assume.as_ref().map_or_else(|| p.is_file(), assumed)
    }

    /// An executable regular file (never, for an assumed filesystem).
    fn is_executable(&self, p: &Path) -> bool {
        self.assume.is_none() && crate::sandbox::is_executable_file(p)
    }

    fn exists(&self, p: &Path) -> bool {
        self.is_dir(p) || self.is_file(p) || (self.assume.is_none() && p.exists())
    }
}

/// The parts of an entry derivation reads (decoded JSON strings).
#[derive(Debug, Clone, Default)]
pub(crate) struct EntryView {
    pub command: String,
    pub args: Vec<String>,
    /// `env` keys with their string values (`None` for a non-string value).
    pub env: Vec<(String, Option<String>)>,
    pub env_file: Option<String>,
    pub cwd: Option<String>,
}

/// The options derived for one entry, and notes for the user.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Derived {
    /// `--env` names.
    pub env: Vec<String>,
    /// `--root` values (absolute paths, or `${workspaceFolder}...` kept for the host).
    pub roots: Vec<String>,
    /// `--read` values.
    pub read: Vec<String>,
    /// `--write` values.
    pub write: Vec<String>,
    /// What the user should know (a directory too broad to be a root, an unreadable
    /// `envFile`, an env path that does not exist, a variable that hands over an agent).
    pub notes: Vec<String>,
    /// Grants learned by a trial start (`wrap --learn`), already in `read`/`write`.
    pub learned: Vec<super::Learned>,
    /// Grants from the built-in profile catalogue, already in `write`.
    pub catalogue: Vec<super::Learned>,
}

impl Derived {
    /// The `rootfence run` options, in a stable order: env, roots, read, write.
    pub fn options(&self) -> Vec<String> {
        let mut out = Vec::new();
        for (flag, values) in [
            ("--env", &self.env),
            ("--root", &self.roots),
            ("--read", &self.read),
            ("--write", &self.write),
        ] {
            for v in values {
                if v.starts_with('-') {
                    // Two items would make the value look like an option.
                    out.push(format!("{flag}={v}"));
                } else {
                    out.push(flag.to_owned());
                    out.push(v.clone());
                }
            }
        }
        out
    }

    /// Adds the catalogue's grants, or (`learned`) those learned by a trial start, to
    /// `read`/`write` once each, and each one added to [`Derived::catalogue`] or
    /// [`Derived::learned`].
    pub(crate) fn add_grants(&mut self, grants: &[super::Learned], learned: bool) {
        for g in grants {
            let list = if g.flag == "--write" {
                &mut self.write
            } else {
                &mut self.read
            };
            if !list.contains(&g.path) {
                list.push(g.path.clone());
                let kept = if learned {
                    &mut self.learned
                } else {
                    &mut self.catalogue
                };
                kept.push(g.clone());
            }
        }
    }

    /// Whether anything was derived.
    pub fn is_empty(&self) -> bool {
        self.env.is_empty()
            && self.roots.is_empty()
            && self.read.is_empty()
            && self.write.is_empty()
    }
}

const WORKSPACE: &str = "${workspaceFolder}";

/// Variables that hand the server a capability rather than a setting: worth a note when
/// an entry sets them, because the host entry then gives them to the server on purpose.
const CAPABILITY_VARS: &[(&str, &str)] = &[
    (
        "SSH_AUTH_SOCK",
        "your ssh agent (it can authenticate as you)",
    ),
    ("GPG_AGENT_INFO", "your gpg agent"),
    (
        "DBUS_SESSION_BUS_ADDRESS",
        "your desktop session bus (it can start programs outside the sandbox)",
    ),
    ("DISPLAY", "your X display (keystrokes and screenshots)"),
    ("WAYLAND_DISPLAY", "your Wayland display"),
    (
        "DOCKER_HOST",
        "a docker daemon (root on the host for its users)",
    ),
];

/// Derives the options for one entry.
pub(crate) fn derive(entry: &EntryView, ctx: &DeriveContext) -> Derived {
    let mut d = Derived::default();
    let cwd = entry
        .cwd
        .as_deref()
        .and_then(|c| expand(c, ctx))
        .filter(|c| c.is_absolute());

    // Environment names, from `env` and `envFile`.
    let mut names: Vec<String> = entry.env.iter().map(|(k, _)| k.clone()).collect();
    if let Some(file) = &entry.env_file {
        match read_env_file(file, ctx, cwd.as_deref()) {
            Ok(more) => names.extend(more),
            Err(why) => d.notes.push(format!(
                "envFile {file}: {why}; its variables reach the server only if you add \
                 `--run-arg=--env=NAME` for each"
            )),
        }
    }
    for name in names {
        if let Err(e) = crate::sandbox::check_env_name(&name) {
            d.notes.push(format!("{e}; not passed"));
            continue;
        }
        if name.ends_with('*') {
            d.notes.push(format!(
                "env name {name:?} looks like a pattern; it is passed as a pattern"
            ));
        }
        if let Some((_, what)) = CAPABILITY_VARS.iter().find(|(n, _)| *n == name) {
            d.notes.push(format!(
                "sets {name}, so the server gets {what}; remove it from the entry unless the \
                 server needs it"
            ));
        }
        push_unique(&mut d.env, name);
    }

    // Directories on the command line are roots.
    let interpreter = is_interpreter(&entry.command);
    let mut positional = 0;
    for arg in &entry.args {
        let value = if let Some(opt) = arg.strip_prefix('-') {
            match opt.split_once('=') {
                Some((_, v)) => v,
                None => continue,
            }
        } else {
            positional += 1;
            if interpreter && positional == 1 {
                // `node dir` / `python dir`: the program itself, not a directory to serve.
                continue;
            }
            arg.as_str()
        };
        if !derive_root(value, ctx, cwd.as_deref(), &mut d) {
            // A file named on the command line (`--db-path /w/app/dev.db`) is the
            // server's own state, like a path in its env; only when it exists, because an
            // argument that does not is as likely a name as a path.
            // An executable (`uvx --python ~/.pyenv/versions/3.12.1/bin/python3.12`) is a
            // program the server runs, not its state: the sandbox follows it to its install
            // at launch and grants that read-exec (src/sandbox/runtime.rs); granting its
            // directory read-write would let the server change what later sessions run.
            let path = expand(value, ctx).filter(|p| p.is_absolute());
            let program = path
                .as_deref()
                .is_some_and(|p| ctx.is_executable(p) && !SYSTEM.iter().any(|s| p.starts_with(s)));
            if !program && path.is_some_and(|p| ctx.is_file(&p)) {
                derive_state_path("its argument", value, ctx, &mut d);
            }
        }
    }

    // Paths in env values are the server's own files.
    for (name, value) in &entry.env {
        if let Some(v) = value {
            derive_state_path(&format!("env {name}"), v, ctx, &mut d);
        }
    }
    d
}

/// The roots `rootfence run` takes from a server's command line when nothing else gives it
/// any (`roots.from_command`): the directories [`derive`] makes `--root` of, exactly as
/// `rootfence wrap` derives them (relative arguments taken from `cwd`), never `/`, a
/// top-level directory or the whole home. Non-UTF-8 arguments are skipped.
pub fn command_roots(
    command: &[std::ffi::OsString],
    cwd: &Path,
    home: Option<&Path>,
) -> Vec<PathBuf> {
    let mut args = command.iter().filter_map(|a| a.to_str().map(str::to_owned));
    let Some(program) = args.next() else {
        return Vec::new();
    };
    let entry = EntryView {
        command: program,
        args: args.collect(),
        cwd: Some(cwd.display().to_string()),
        ..EntryView::default()
    };
    let ctx = DeriveContext {
        home: home.map(Path::to_path_buf),
        ..DeriveContext::default()
    };
    derive(&entry, &ctx)
        .roots
        .into_iter()
        .filter(|r| !r.contains("${"))
        .map(PathBuf::from)
        .filter(|p| home != Some(p.as_path()))
        .collect()
}

/// Adds a root when `value` names a directory; whether it did.
fn derive_root(value: &str, ctx: &DeriveContext, cwd: Option<&Path>, d: &mut Derived) -> bool {
    let value_trimmed = value.trim_end_matches('/');
    if value_trimmed == WORKSPACE || value_trimmed.starts_with("${workspaceFolder}/") {
        // Kept as the variable: the host expands it in args. Only the workspace itself
        // unless the workspace is known here to check a sub-directory.
        let is_dir = value_trimmed == WORKSPACE
            || expand(value_trimmed, ctx).is_some_and(|p| ctx.is_dir(&p));
        if is_dir && !d.roots.iter().any(|r| r == value_trimmed) {
            d.roots.push(value_trimmed.to_owned());
        }
        return is_dir;
    }
    if value.contains("${") {
        return false;
    }
    let path = match expand(value, ctx) {
        Some(p) if p.is_absolute() => p,
        Some(p) => match cwd {
            Some(c) if !value.is_empty() => c.join(p),
            _ => return false,
        },
        None => return false,
    };
    if !ctx.is_dir(&path) {
        return false;
    }
    let path = std::path::absolute(&path).unwrap_or(path);
    let path = lexical(&path);
    let shown = path.display().to_string();
    if path.components().count() <= 2 {
        d.notes.push(format!(
            "its command line names {shown}, too broad to be a root; not made a root (give \
             the server a project directory instead)"
        ));
        return true;
    }
    if ctx.home.as_deref() == Some(path.as_path()) {
        d.notes.push(format!(
            "its command line names your home directory {shown}: it becomes a root, so the \
             server may read and write everything in it that the policy does not deny"
        ));
    }
    push_unique(&mut d.roots, shown);
    true
}

/// System trees: paths there are granted read-only even when an env value names them.
const SYSTEM: &[&str] = &[
    "/usr", "/etc", "/bin", "/sbin", "/lib", "/lib64", "/opt", "/nix",
];

/// A path an `env` value names (`label` is `env NAME`) or a file on the command line
/// (`label` is `its argument`): the server's own state.
fn derive_state_path(label: &str, value: &str, ctx: &DeriveContext, d: &mut Derived) {
    let keep_var = value.starts_with(WORKSPACE);
    if value.contains("${") && !keep_var {
        return;
    }
    if !(value.starts_with('/') || value.starts_with("~/") || keep_var) || value.contains(':') {
        return;
    }
    let Some(path) = expand(value, ctx) else {
        if keep_var {
            // Unknown workspace: trust the entry, the host expands it.
            push_unique(&mut d.write, value.to_owned());
        }
        return;
    };
    let path = lexical(&path);
    // Covered by a root already: nothing to add.
    let covered = d
        .roots
        .iter()
        .filter_map(|r| expand(r, ctx))
        .any(|r| path.starts_with(r));
    if covered {
        return;
    }
    // Shown as the entry spells it when it uses the workspace variable, so the host
    // expands it at start.
    let shown = |p: &Path| -> String {
        match (keep_var, ctx.workspace.as_deref()) {
            (true, Some(ws)) => match p.strip_prefix(ws) {
                Ok(rest) if rest.as_os_str().is_empty() => WORKSPACE.to_owned(),
                Ok(rest) => format!("{WORKSPACE}/{}", rest.display()),
                Err(_) => p.display().to_string(),
            },
            _ => p.display().to_string(),
        }
    };
    let system = SYSTEM.iter().any(|s| path.starts_with(s));
    if system {
        if ctx.exists(&path) {
            push_unique(&mut d.read, shown(&path));
        }
        return;
    }
    if ctx.is_dir(&path) {
        if too_broad(&path, ctx) {
            d.notes.push(format!(
                "{label} names {}, too broad to grant; not granted",
                shown(&path)
            ));
        } else {
            push_unique(&mut d.write, shown(&path));
        }
        return;
    }
    // A file, existing or to be created: its directory, because servers write their state
    // by creating a temporary file beside it and renaming it over (server-memory does).
    let parent = path.parent().filter(|p| ctx.is_dir(p));
    match parent {
        Some(dir) if !too_broad(dir, ctx) => push_unique(&mut d.write, shown(dir)),
        _ if ctx.is_file(&path) => {
            push_unique(&mut d.write, shown(&path));
            d.notes.push(format!(
                "{label} names {}, in a directory too broad to grant: only the file is \
                 granted, so the server cannot create files beside it (a server that saves \
                 by writing a temporary file and renaming it, as server-memory does, fails); \
                 move it into a directory of its own and run `rootfence wrap --rewrap`",
                shown(&path)
            ));
        }
        _ => d.notes.push(format!(
            "{label} names {}, which does not exist in a directory the sandbox may \
             grant; create its directory (e.g. `mkdir -p {}`) and run `rootfence wrap \
             --rewrap`",
            shown(&path),
            path.parent()
                .map(|p| p.display().to_string())
                .unwrap_or_default()
        )),
    }
}

/// Directories too broad to grant because an env value names something inside them: `/`
/// and top-level directories, the home directory and its shared folders.
fn too_broad(p: &Path, ctx: &DeriveContext) -> bool {
    if p.components().count() <= 2 {
        return true;
    }
    let Some(home) = ctx.home.as_deref() else {
        return false;
    };
    let shared = ["Desktop", "Documents", "Downloads"];
    home.starts_with(p) || HOME_PLACES.iter().chain(&shared).any(|d| p == home.join(d))
}

/// The places in the home where tools keep their state side by side (XDG's and `~/.local`):
/// too broad to grant to one server.
pub(crate) const HOME_PLACES: &[&str] = &[
    ".config",
    ".local",
    ".local/share",
    ".local/state",
    ".cache",
];

pub(crate) fn push_unique(v: &mut Vec<String>, s: String) {
    if !v.contains(&s) {
        v.push(s);
    }
}

/// `~`, `~/x` and `${workspaceFolder}` expanded; `None` when the variable's value is not
/// known here.
fn expand(value: &str, ctx: &DeriveContext) -> Option<PathBuf> {
    if value == "~" {
        return ctx.home.clone();
    }
    if let Some(rest) = value.strip_prefix("~/") {
        return ctx.home.as_ref().map(|h| h.join(rest));
    }
    if let Some(rest) = value.strip_prefix(WORKSPACE) {
        let ws = ctx.workspace.as_ref()?;
        let rest = rest.trim_start_matches('/');
        return Some(if rest.is_empty() {
            ws.clone()
        } else {
            ws.join(rest)
        });
    }
    Some(PathBuf::from(value))
}

fn is_interpreter(command: &str) -> bool {
    let name = command.rsplit(['/', '\\']).next().unwrap_or(command);
    matches!(name, "node" | "nodejs" | "bun" | "deno") || name.starts_with("python")
}

/// The names an env file defines (`NAME=value`, `export NAME=value`; comments and blank
/// lines skipped), as VS Code reads it.
fn read_env_file(
    file: &str,
    ctx: &DeriveContext,
    cwd: Option<&Path>,
) -> Result<Vec<String>, String> {
    let Some(path) = expand(file, ctx) else {
        return Err(
            "uses ${workspaceFolder}, which is known only for a project's file (wrap it with \
             --host vscode --project DIR)"
                .to_owned(),
        );
    };
    let path = if path.is_absolute() {
        path
    } else {
        match ctx.workspace.as_deref().or(cwd) {
            Some(base) => base.join(path),
            None => return Err("is relative and the workspace folder is not known".to_owned()),
        }
    };
    if ctx.assume.is_some() {
        return Err("not read (the filesystem is assumed)".to_owned());
    }
    let text =
        std::fs::read(&path).map_err(|e| format!("cannot be read ({}: {e})", path.display()))?;
    let text = String::from_utf8_lossy(&text);
    Ok(text
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .filter_map(|l| {
            let l = l.strip_prefix("export ").unwrap_or(l);
            let (name, _) = l.split_once('=')?;
            let name = name.trim();
            (!name.is_empty() && !name.contains(char::is_whitespace)).then(|| name.to_owned())
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn view(command: &str, args: &[&str], env: &[(&str, &str)]) -> EntryView {
        EntryView {
            command: command.into(),
            args: args.iter().map(|s| (*s).to_owned()).collect(),
            env: env
                .iter()
                .map(|(k, v)| ((*k).to_owned(), Some((*v).to_owned())))
                .collect(),
            ..EntryView::default()
        }
    }

    #[test]
    fn directories_on_the_command_line_become_roots() {
        let dir = tempfile::tempdir().unwrap();
        let base = std::fs::canonicalize(dir.path()).unwrap();
        let a = base.join("a");
        let repo = base.join("repo");
        std::fs::create_dir_all(&a).unwrap();
        std::fs::create_dir_all(&repo).unwrap();
        std::fs::write(base.join("file.txt"), "").unwrap();
        let ctx = DeriveContext {
            home: Some(base.clone()),
            ..DeriveContext::default()
        };
        let a_s = a.to_str().unwrap();
        let d = derive(
            &view(
                "npx",
                &[
                    "-y",
                    "@modelcontextprotocol/server-filesystem",
                    a_s,
                    "~/repo",
                    "/nonexistent",
                ],
                &[],
            ),
            &ctx,
        );
        assert_eq!(d.roots, vec![a_s.to_owned(), repo.display().to_string()]);
        let repo_arg = format!("--repository={}", repo.display());
        let d = derive(&view("uvx", &["mcp-server-git", &repo_arg], &[]), &ctx);
        assert_eq!(d.roots, vec![repo.display().to_string()]);
        let d = derive(
            &view(
                "uvx",
                &["mcp-server-git", "--repository", repo.to_str().unwrap()],
                &[],
            ),
            &ctx,
        );
        assert_eq!(d.roots, vec![repo.display().to_string()]);
        // A file, and the interpreter's own program, are not roots.
        let f = base.join("file.txt");
        let d = derive(&view("node", &[a_s], &[]), &ctx);
        assert!(d.roots.is_empty(), "{d:?}");
        // A file named on the command line is the server's state: its directory (here the
        // home directory, too broad: the file alone, with a note).
        let db = format!("--db-path={}", f.display());
        let d = derive(&view("uvx", &["mcp-server-sqlite", &db], &[]), &ctx);
        assert!(d.roots.is_empty(), "{d:?}");
        assert_eq!(d.write, [f.display().to_string()]);
        assert!(d.notes[0].contains("its argument names"), "{:?}", d.notes);
        // An interpreter named on the command line is a program, never its state: no
        // `--write` for its `bin/` (the sandbox grants its install read-exec at launch).
        let py = base.join("pyenv/versions/3.12.1/bin/python3.12");
        std::fs::create_dir_all(py.parent().unwrap()).unwrap();
        std::fs::write(&py, "").unwrap();
        std::fs::set_permissions(&py, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
        for args in [
            vec![
                "--python".to_owned(),
                py.display().to_string(),
                "mcp-server-git".into(),
            ],
            vec![
                format!("--python={}", py.display()),
                "mcp-server-git".into(),
            ],
        ] {
            let args: Vec<&str> = args.iter().map(String::as_str).collect();
            let d = derive(&view("uvx", &args, &[]), &ctx);
            assert!(
                d.write.is_empty() && d.read.is_empty() && d.roots.is_empty(),
                "{d:?}"
            );
        }
        // VS Code's variable is kept for the host to expand.
        let d = derive(
            &view("npx", &["server-filesystem", "${workspaceFolder}"], &[]),
            &ctx,
        );
        assert_eq!(d.roots, vec!["${workspaceFolder}"]);
        let d = derive(
            &view("python", &["${workspaceFolder}/server.py"], &[]),
            &ctx,
        );
        assert!(
            d.roots.is_empty(),
            "a file under the workspace is no root: {d:?}"
        );
        // Relative arguments only with the entry's cwd.
        let mut v = view("npx", &["server-filesystem", "."], &[]);
        assert!(derive(&v, &ctx).roots.is_empty());
        v.cwd = Some(a_s.to_owned());
        assert_eq!(derive(&v, &ctx).roots, vec![a_s.to_owned()]);
        // `/` and top-level directories are refused with a note; home is kept with one.
        let d = derive(&view("srv", &["/", "/tmp", "~"], &[]), &ctx);
        assert_eq!(d.roots, vec![base.display().to_string()]);
        assert_eq!(d.notes.len(), 3, "{:?}", d.notes);
        assert!(d.notes[0].contains("too broad"), "{:?}", d.notes);
        assert!(d.notes[2].contains("home directory"), "{:?}", d.notes);
        assert_eq!(
            d.options()[..2],
            ["--root".to_owned(), base.display().to_string()]
        );
    }

    #[test]
    fn env_names_and_env_paths() {
        let dir = tempfile::tempdir().unwrap();
        let base = std::fs::canonicalize(dir.path()).unwrap();
        let state = base.join("state");
        std::fs::create_dir_all(&state).unwrap();
        std::fs::write(state.join("memory.json"), "").unwrap();
        let ctx = DeriveContext {
            home: Some(base.join("home")),
            workspace: Some(base.clone()),
            ..DeriveContext::default()
        };
        std::fs::write(
            base.join(".env"),
            "# comment\nexport API_TOKEN=x\nOTHER = y\n\nbad line\n",
        )
        .unwrap();
        let mem = state.join("memory.json");
        let mut v = view(
            "npx",
            &["-y", "@modelcontextprotocol/server-memory"],
            &[
                ("MEMORY_FILE_PATH", mem.to_str().unwrap()),
                ("NEW_FILE", state.join("new.db").to_str().unwrap()),
                ("CA", "/etc/ssl/certs/ca-certificates.crt"),
                ("URL", "https://example.com/x"),
                ("MISSING", "/nonexistent-rf/x/y"),
                ("SSH_AUTH_SOCK", "/tmp/agent"),
                ("A=B", "x"),
            ],
        );
        v.env_file = Some("${workspaceFolder}/.env".into());
        let d = derive(&v, &ctx);
        assert_eq!(
            d.env,
            [
                "MEMORY_FILE_PATH",
                "NEW_FILE",
                "CA",
                "URL",
                "MISSING",
                "SSH_AUTH_SOCK",
                "API_TOKEN",
                "OTHER"
            ]
        );
        // memory.json and new.db: their directory, once.
        assert_eq!(d.write, vec![state.display().to_string()]);
        if Path::new("/etc/ssl/certs/ca-certificates.crt").exists() {
            assert_eq!(d.read, ["/etc/ssl/certs/ca-certificates.crt"]);
        }
        let notes = d.notes.join("\n");
        assert!(notes.contains("ssh agent"), "{notes}");
        assert!(notes.contains("--env \"A=B\""), "{notes}");
        assert!(
            notes.contains("MISSING names /nonexistent-rf/x/y, which does not exist"),
            "{notes}"
        );
        // A file directly in the home directory: the file only, and why that may fail.
        let home = base.join("home");
        std::fs::create_dir_all(&home).unwrap();
        std::fs::write(home.join("memory.jsonl"), "").unwrap();
        let d = derive(
            &view("srv", &[], &[("MEMORY_FILE_PATH", "~/memory.jsonl")]),
            &ctx,
        );
        assert_eq!(d.write, [home.join("memory.jsonl").display().to_string()]);
        assert!(
            d.notes[0].contains("only the file is granted"),
            "{:?}",
            d.notes
        );
        // The workspace variable is kept, for the host to expand.
        std::fs::create_dir_all(base.join(".mcp-state")).unwrap();
        let d = derive(
            &view(
                "srv",
                &[],
                &[("STATE", "${workspaceFolder}/.mcp-state/db.sqlite")],
            ),
            &ctx,
        );
        assert_eq!(d.write, ["${workspaceFolder}/.mcp-state"]);
        // An unreadable envFile is said, with what to do.
        v.env_file = Some("/nonexistent-rf/.env".into());
        let d = derive(&v, &ctx);
        assert!(
            d.notes
                .iter()
                .any(|n| n.contains("envFile /nonexistent-rf/.env: cannot be read")),
            "{:?}",
            d.notes
        );
        assert_eq!(
            Derived {
                env: vec!["-odd".into(), "X".into()],
                ..Derived::default()
            }
            .options(),
            ["--env=-odd", "--env", "X"]
        );
    }
}
