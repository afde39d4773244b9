//! The built-in profile catalogue (issue 27): the state directories popular servers keep
//! outside their command line (`profiles.toml` beside this file), matched by package
//! identity: the PyPI distribution or npm package a command runs, found from the command
//! itself (`uvx pkg@ver`, `uvx --from pkg cmd`, `uv tool run`, `pipx run --spec`, `npx -y
//! @scope/pkg`, `pnpm dlx`, `bunx`) or from where its program lives (a pipx venv, a link into
//! a `node_modules` package). `rootfence wrap` applies what matches, checked against the
//! policy like any `--write`, and names each grant with why.
//!
//! It complements learning (`wrap --learn`), which needs a trial start: the catalogue needs
//! none, so a plain `wrap` already gives these servers their state. It stays small: only
//! servers whose state was seen through the real server.

use std::path::{Component, Path, PathBuf};
use std::sync::OnceLock;

use serde::Deserialize;

/// A package a server command runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Package {
    /// A PyPI distribution, normalized (lowercase, `-` for `_` and `.`).
    PyPi(String),
    /// An npm package name (`name` or `@scope/name`).
    Npm(String),
}

impl std::fmt::Display for Package {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Package::PyPi(n) => write!(f, "PyPI {n}"),
            Package::Npm(n) => write!(f, "npm {n}"),
        }
    }
}

/// A grant the catalogue gives a server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CatalogueGrant {
    /// The directory granted read-write.
    pub path: PathBuf,
    /// Why, naming the package it was matched by.
    pub why: String,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct File {
    profile: Vec<Profile>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Profile {
    pypi: Option<String>,
    npm: Option<String>,
    write: Vec<String>,
    why: String,
}

const DATA: &str = include_str!("profiles.toml");

fn profiles() -> &'static [Profile] {
    static P: OnceLock<Vec<Profile>> = OnceLock::new();
    // The file is part of the binary and a unit test parses it: it cannot fail here.
    P.get_or_init(|| {
        toml::from_str::<File>(DATA)
            .map(|f| f.profile)
            .unwrap_or_default()
    })
}

/// Options of `uvx`/`uv tool run` that take a value (the value is not the package).
const UV_VALUE_OPTIONS: &[&str] = &[
    "--python",
    "-p",
    "--with",
    "-w",
    "--with-editable",
    "--with-requirements",
    "--constraints",
    "-c",
    "--overrides",
    "--index",
    "--default-index",
    "--index-url",
    "-i",
    "--extra-index-url",
    "--find-links",
    "-f",
    "--cache-dir",
    "--directory",
    "--project",
    "--config-file",
    "--env-file",
    "--exclude-newer",
    "--prerelease",
    "--resolution",
    "--index-strategy",
    "--keyring-provider",
    "--link-mode",
    "--refresh-package",
    "--reinstall-package",
    "--upgrade-package",
    "-P",
    "--color",
];

/// Options of `npx`/`pnpm dlx`/`bunx`/`pipx run` that take a value.
const OTHER_VALUE_OPTIONS: &[&str] = &["--cache", "--registry", "--userconfig", "--python"];

/// The package named by a launcher's arguments: `from` (`--from`, `--spec`, `--package`,
/// `-p` for npx) when given, else the first argument that is not an option.
fn launched(args: &[String], from_flags: &[&str], value_opts: &[&str]) -> Option<String> {
    let mut it = args.iter();
    while let Some(a) = it.next() {
        if let Some((flag, value)) = a.split_once('=') {
            if from_flags.contains(&flag) {
                return Some(value.to_owned());
            }
            if flag.starts_with('-') {
                continue;
            }
        }
        if from_flags.contains(&a.as_str()) {
            return it.next().cloned();
        }
        if value_opts.contains(&a.as_str()) {
            it.next();
        } else if a == "--" {
            return it.next().cloned();
        } else if !a.starts_with('-') {
            return Some(a.clone());
        }
    }
    None
}

/// `basic_memory[all]==0.24.1` -> `basic-memory`.
fn pypi_name(spec: &str) -> Option<String> {
    let end = spec
        .find(|c: char| "@=<>!~[; ".contains(c))
        .unwrap_or(spec.len());
    let name = spec[..end].trim();
    (!name.is_empty() && !name.contains('/') && !name.contains(':'))
        .then(|| name.to_ascii_lowercase().replace(['_', '.'], "-"))
}

/// `@scope/pkg@1.2.3` -> `@scope/pkg`; `pkg@latest` -> `pkg`.
fn npm_name(spec: &str) -> Option<String> {
    // The first `@` after the first character ends the name (a scope starts with one).
    let name = match spec.char_indices().skip(1).find(|(_, c)| *c == '@') {
        Some((i, _)) => &spec[..i],
        None => spec,
    };
    (!name.is_empty() && !name.contains(':') && !name.starts_with('.') && !name.starts_with('/'))
        .then(|| name.to_owned())
}

/// The package `argv` runs, when its launcher or its program's place names one.
pub fn identify(argv: &[String], path_var: Option<&std::ffi::OsStr>) -> Option<Package> {
    let (program, args) = argv.split_first()?;
    let base = Path::new(program).file_name()?.to_str()?;
    let pypi = |args: &[String], from: &str, value_opts: &[&str]| {
        launched(args, &[from], value_opts)
            .as_deref()
            .and_then(pypi_name)
            .map(Package::PyPi)
    };
    let npm = |args: &[String]| {
        launched(args, &["--package", "-p"], OTHER_VALUE_OPTIONS)
            .as_deref()
            .and_then(npm_name)
            .map(Package::Npm)
    };
    let sub = |name: &str| args.first().is_some_and(|a| a == name);
    match base {
        "uvx" => return pypi(args, "--from", UV_VALUE_OPTIONS),
        "uv" if sub("tool") && args.get(1).is_some_and(|a| a == "run") => {
            return pypi(&args[2..], "--from", UV_VALUE_OPTIONS);
        }
        "pipx" if sub("run") => return pypi(&args[1..], "--spec", OTHER_VALUE_OPTIONS),
        "npx" | "bunx" | "pnpx" => return npm(args),
        "pnpm" | "bun" if sub("dlx") || sub("x") => return npm(&args[1..]),
        _ => {}
    }
    let exe = if program.contains('/') {
        PathBuf::from(program)
    } else {
        std::env::split_paths(path_var?)
            .map(|d| d.join(program))
            .find(|p| p.is_file())?
    };
    by_place(&std::fs::canonicalize(exe).ok()?)
}

/// The package a program belongs to by where it lives: `<...>/venvs/<dist>/bin/<x>` (a
/// pipx venv, named after its distribution), or a file inside
/// `node_modules/<pkg>` (`node_modules/@scope/pkg`).
fn by_place(exe: &Path) -> Option<Package> {
    let parts: Vec<&str> = exe
        .components()
        .filter_map(|c| match c {
            Component::Normal(s) => s.to_str(),
            _ => None,
        })
        .collect();
    if let Some(i) = parts.iter().rposition(|p| *p == "node_modules") {
        let first = parts.get(i + 1)?;
        let name = if first.starts_with('@') {
            format!("{first}/{}", parts.get(i + 2)?)
        } else {
            (*first).to_owned()
        };
        return Some(Package::Npm(name));
    }
    let [.., "venvs", dist, "bin", _] = parts[..] else {
        return None;
    };
    pypi_name(dist).map(Package::PyPi)
}

/// What the catalogue grants the server `argv` runs, in `home`.
pub fn grants(
    argv: &[String],
    home: &Path,
    path_var: Option<&std::ffi::OsStr>,
) -> Vec<CatalogueGrant> {
    identify(argv, path_var).map_or_else(Vec::new, |p| grants_for(&p, home))
}

fn grants_for(package: &Package, home: &Path) -> Vec<CatalogueGrant> {
    let matches = |p: &Profile| match package {
        Package::PyPi(n) => p.pypi.as_deref().and_then(pypi_name).as_ref() == Some(n),
        Package::Npm(n) => p.npm.as_deref() == Some(n.as_str()),
    };
    profiles()
        .iter()
        .filter(|p| matches(p))
        .flat_map(|p| {
            p.write.iter().filter_map(move |w| {
                let rest = w.strip_prefix("~/")?;
                let path = home.join(rest);
                // Never the home or a place that holds it: one directory beneath it.
                (Path::new(rest).components().count() >= 1
                    && Path::new(rest)
                        .components()
                        .all(|c| matches!(c, Component::Normal(_))))
                .then(|| CatalogueGrant {
                    path,
                    why: format!("rootfence's catalogue ({package}): {}", p.why),
                })
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(args: &[&str]) -> Vec<String> {
        args.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn the_data_file_parses_and_grants_only_beneath_the_home() {
        let file: File = toml::from_str(DATA).expect("profiles.toml parses");
        assert!(!file.profile.is_empty());
        for p in &file.profile {
            assert!(p.pypi.is_some() != p.npm.is_some(), "{p:?}: one identity");
            assert!(!p.why.is_empty(), "{p:?}");
            for w in &p.write {
                let rest = w.strip_prefix("~/").expect("home-relative");
                assert!(
                    !rest.is_empty()
                        && ![".config", ".local", ".local/share", ".cache"].contains(&rest)
                        && Path::new(rest)
                            .components()
                            .all(|c| matches!(c, Component::Normal(_))),
                    "{w}: too broad"
                );
            }
        }
    }

    #[test]
    fn package_identity_from_the_command() {
        let none: Option<&std::ffi::OsStr> = None;
        let py = |n: &str| Some(Package::PyPi(n.to_owned()));
        let npm = |n: &str| Some(Package::Npm(n.to_owned()));
        let table: &[(&[&str], Option<Package>)] = &[
            (&["uvx", "basic-memory", "mcp"], py("basic-memory")),
            (&["uvx", "basic-memory@0.24.1", "mcp"], py("basic-memory")),
            (
                &[
                    "/home/u/.local/bin/uvx",
                    "--python",
                    "/p/bin/python3.12",
                    "basic-memory@0.24.1",
                    "mcp",
                ],
                py("basic-memory"),
            ),
            (
                &[
                    "uvx",
                    "--with",
                    "mcp<2",
                    "mcp-server-sqlite@2025.4.25",
                    "--db-path",
                    "/x",
                ],
                py("mcp-server-sqlite"),
            ),
            (
                &[
                    "uvx",
                    "--from",
                    "serena-agent@2.1.0",
                    "serena",
                    "start-mcp-server",
                ],
                py("serena-agent"),
            ),
            (
                &["uvx", "--from=Serena_Agent==2.1.0", "serena"],
                py("serena-agent"),
            ),
            (
                &["uv", "tool", "run", "basic-memory", "mcp"],
                py("basic-memory"),
            ),
            (&["uv", "run", "server.py"], None),
            (
                &["pipx", "run", "--spec", "serena-agent", "serena"],
                py("serena-agent"),
            ),
            (&["pipx", "run", "basic-memory", "mcp"], py("basic-memory")),
            (
                &["npx", "-y", "@modelcontextprotocol/server-memory"],
                npm("@modelcontextprotocol/server-memory"),
            ),
            (
                &["npx", "-y", "mcp-obsidian@1.0.0", "/vault"],
                npm("mcp-obsidian"),
            ),
            (&["pnpm", "dlx", "@scope/pkg@latest"], npm("@scope/pkg")),
            (&["bunx", "pkg"], npm("pkg")),
            (&["uvx", "git+https://example.com/x"], None),
            (&["npx", "./local.js"], None),
            (&["uvx"], None),
        ];
        for (argv, want) in table {
            assert_eq!(identify(&v(argv), none), *want, "{argv:?}");
        }
    }

    #[test]
    fn package_identity_from_the_program_s_place() {
        let py = |n: &str| Some(Package::PyPi(n.to_owned()));
        let npm = |n: &str| Some(Package::Npm(n.to_owned()));
        let table: &[(&str, Option<Package>)] = &[
            (
                "/home/u/.local/share/pipx/venvs/basic-memory/bin/basic-memory",
                py("basic-memory"),
            ),
            (
                "/home/u/.local/share/uv/tools/serena-agent/bin/serena",
                None, // not `venvs/`: uv's tool dirs are matched by uvx's arguments
            ),
            (
                "/p/node_modules/@modelcontextprotocol/server-memory/dist/index.js",
                npm("@modelcontextprotocol/server-memory"),
            ),
            (
                "/p/node_modules/mcp-obsidian/dist/index.js",
                npm("mcp-obsidian"),
            ),
            ("/usr/bin/python3", None),
        ];
        for (exe, want) in table {
            assert_eq!(by_place(Path::new(exe)), *want, "{exe}");
        }
    }

    #[test]
    fn grants_name_the_package_and_stay_beneath_the_home() {
        let home = Path::new("/home/u");
        let g = grants_for(&Package::PyPi("basic-memory".into()), home);
        let paths: Vec<&Path> = g.iter().map(|g| g.path.as_path()).collect();
        assert_eq!(
            paths,
            [
                Path::new("/home/u/.basic-memory"),
                Path::new("/home/u/basic-memory")
            ]
        );
        assert!(g[0].why.contains("PyPI basic-memory"), "{}", g[0].why);
        assert_eq!(
            grants_for(&Package::PyPi("serena-agent".into()), home)[0].path,
            Path::new("/home/u/.serena")
        );
        assert!(grants_for(&Package::PyPi("mcp-server-git".into()), home).is_empty());
        assert!(grants_for(&Package::Npm("basic-memory".into()), home).is_empty());
    }
}
