//! Where each MCP host keeps its server configuration, per operating system.
//!
//! The locations are the hosts' documented ones (sources in `docs/wrap.md`):
//!
//! | host | user-wide file | with `--project DIR` |
//! |---|---|---|
//! | Claude Desktop | Linux `$XDG_CONFIG_HOME/Claude/claude_desktop_config.json` (default `~/.config`); macOS `~/Library/Application Support/Claude/claude_desktop_config.json`; Windows `%APPDATA%\Claude\claude_desktop_config.json` | (none) |
//! | Claude Code | `~/.claude.json` (`$CLAUDE_CONFIG_DIR/.claude.json` when set): user scope at the top level, local scope under `projects.<dir>` | `DIR/.mcp.json` |
//! | VS Code | Linux `$XDG_CONFIG_HOME/Code/User/mcp.json`; macOS `~/Library/Application Support/Code/User/mcp.json`; Windows `%APPDATA%\Code\User\mcp.json` | `DIR/.vscode/mcp.json` |
//! | Cursor | `~/.cursor/mcp.json` (Windows: `%USERPROFILE%\.cursor\mcp.json`) | `DIR/.cursor/mcp.json` |
//!
//! The environment is passed in ([`HostEnv`]) so every OS's answer is tested on any OS.

use std::path::{Path, PathBuf};

/// An MCP host whose configuration `wrap --host` can find (the variants' docs are the
/// `--host` values' help).
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
#[non_exhaustive]
pub enum Host {
    /// Claude Desktop: claude_desktop_config.json.
    ClaudeDesktop,
    /// Claude Code: ~/.claude.json (user and local scopes), or DIR/.mcp.json with --project.
    ClaudeCode,
    /// VS Code: the user mcp.json, or DIR/.vscode/mcp.json with --project.
    #[value(name = "vscode")]
    VsCode,
    /// Cursor: ~/.cursor/mcp.json, or DIR/.cursor/mcp.json with --project.
    Cursor,
}

impl Host {
    /// The host's display name.
    pub fn name(self) -> &'static str {
        match self {
            Host::ClaudeDesktop => "Claude Desktop",
            Host::ClaudeCode => "Claude Code",
            Host::VsCode => "VS Code",
            Host::Cursor => "Cursor",
        }
    }
}

/// An operating system family, for config locations.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Os {
    /// Linux and other XDG systems.
    Linux,
    /// macOS.
    MacOs,
    /// Windows.
    Windows,
}

/// The parts of the environment that decide where configs live.
#[derive(Debug, Clone)]
pub struct HostEnv {
    /// The OS family.
    pub os: Os,
    /// The home directory (`HOME`, or `USERPROFILE` on Windows).
    pub home: Option<PathBuf>,
    /// `XDG_CONFIG_HOME`, used on Linux when absolute.
    pub xdg_config_home: Option<PathBuf>,
    /// `APPDATA` (Windows).
    pub appdata: Option<PathBuf>,
    /// `CLAUDE_CONFIG_DIR` (Claude Code).
    pub claude_config_dir: Option<PathBuf>,
}

impl HostEnv {
    /// Reads the current process environment.
    pub fn current() -> HostEnv {
        // The OS this build runs on.
        let os = if cfg!(target_os = "macos") {
            Os::MacOs
        } else if cfg!(windows) {
            Os::Windows
        } else {
            Os::Linux
        };
        let var = |k: &str| {
            std::env::var_os(k)
                .filter(|v| !v.is_empty())
                .map(PathBuf::from)
        };
        HostEnv {
            os,
            home: if os == Os::Windows {
                var("USERPROFILE").or_else(|| var("HOME"))
            } else {
                var("HOME")
            },
            xdg_config_home: var("XDG_CONFIG_HOME"),
            appdata: var("APPDATA"),
            claude_config_dir: var("CLAUDE_CONFIG_DIR"),
        }
    }
}

/// Why a host's configuration could not be located.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum LocateError {
    /// A variable the location depends on is unset.
    #[error(
        "cannot locate the {host} configuration: {var} is not set; give the config file's path instead of --host"
    )]
    MissingVar {
        /// The host's name.
        host: &'static str,
        /// The variable.
        var: &'static str,
    },
    /// The host has no per-project configuration.
    #[error(
        "{host} has no per-project configuration; drop --project (its one file is {user_file})"
    )]
    NoProjectFile {
        /// The host's name.
        host: &'static str,
        /// The user-wide file.
        user_file: String,
    },
}

/// The configuration file of `host`: the project file under `project` when given, else the
/// user-wide file.
pub fn config_path(
    host: Host,
    project: Option<&Path>,
    env: &HostEnv,
) -> Result<PathBuf, LocateError> {
    let name = host.name();
    let home = || {
        env.home.clone().ok_or(LocateError::MissingVar {
            host: name,
            var: if env.os == Os::Windows {
                "USERPROFILE"
            } else {
                "HOME"
            },
        })
    };
    // The per-user application data directory: XDG on Linux, Application Support on
    // macOS, Roaming AppData on Windows.
    let app_dir = || -> Result<PathBuf, LocateError> {
        match env.os {
            Os::Linux => Ok(env
                .xdg_config_home
                .clone()
                .filter(|p| p.is_absolute())
                .map_or_else(|| home().map(|h| h.join(".config")), Ok)?),
            Os::MacOs => Ok(home()?.join("Library").join("Application Support")),
            Os::Windows => env.appdata.clone().ok_or(LocateError::MissingVar {
                host: name,
                var: "APPDATA",
            }),
        }
    };
    match (host, project) {
        (Host::ClaudeDesktop, None) => {
            Ok(app_dir()?.join("Claude").join("claude_desktop_config.json"))
        }
        (Host::ClaudeDesktop, Some(_)) => Err(LocateError::NoProjectFile {
            host: name,
            user_file: config_path(host, None, env).map_or_else(
                |_| "claude_desktop_config.json".into(),
                |p| p.display().to_string(),
            ),
        }),
        (Host::ClaudeCode, None) => Ok(match &env.claude_config_dir {
            Some(dir) => dir.join(".claude.json"),
            None => home()?.join(".claude.json"),
        }),
        (Host::ClaudeCode, Some(dir)) => Ok(dir.join(".mcp.json")),
        (Host::VsCode, None) => Ok(app_dir()?.join("Code").join("User").join("mcp.json")),
        (Host::VsCode, Some(dir)) => Ok(dir.join(".vscode").join("mcp.json")),
        (Host::Cursor, None) => Ok(home()?.join(".cursor").join("mcp.json")),
        (Host::Cursor, Some(dir)) => Ok(dir.join(".cursor").join("mcp.json")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(os: Os) -> HostEnv {
        let (home, appdata) = match os {
            Os::Windows => (
                r"C:\Users\me",
                Some(PathBuf::from(r"C:\Users\me\AppData\Roaming")),
            ),
            Os::MacOs => ("/Users/me", None),
            Os::Linux => ("/home/me", None),
        };
        HostEnv {
            os,
            home: Some(PathBuf::from(home)),
            xdg_config_home: None,
            appdata,
            claude_config_dir: None,
        }
    }

    fn path(host: Host, project: Option<&str>, env: &HostEnv) -> String {
        config_path(host, project.map(Path::new), env)
            .unwrap()
            .to_string_lossy()
            .replace('\\', "/")
    }

    #[test]
    fn locations_per_host_and_os() {
        use Host::*;
        let table: &[(Host, Os, &str)] = &[
            (
                ClaudeDesktop,
                Os::Linux,
                "/home/me/.config/Claude/claude_desktop_config.json",
            ),
            (
                ClaudeDesktop,
                Os::MacOs,
                "/Users/me/Library/Application Support/Claude/claude_desktop_config.json",
            ),
            (
                ClaudeDesktop,
                Os::Windows,
                "C:/Users/me/AppData/Roaming/Claude/claude_desktop_config.json",
            ),
            (ClaudeCode, Os::Linux, "/home/me/.claude.json"),
            (ClaudeCode, Os::MacOs, "/Users/me/.claude.json"),
            (ClaudeCode, Os::Windows, "C:/Users/me/.claude.json"),
            (VsCode, Os::Linux, "/home/me/.config/Code/User/mcp.json"),
            (
                VsCode,
                Os::MacOs,
                "/Users/me/Library/Application Support/Code/User/mcp.json",
            ),
            (
                VsCode,
                Os::Windows,
                "C:/Users/me/AppData/Roaming/Code/User/mcp.json",
            ),
            (Cursor, Os::Linux, "/home/me/.cursor/mcp.json"),
            (Cursor, Os::MacOs, "/Users/me/.cursor/mcp.json"),
            (Cursor, Os::Windows, "C:/Users/me/.cursor/mcp.json"),
        ];
        for (host, os, want) in table {
            assert_eq!(path(*host, None, &env(*os)), *want, "{host:?} on {os:?}");
        }
    }

    #[test]
    fn project_files() {
        let e = env(Os::Linux);
        assert_eq!(
            path(Host::ClaudeCode, Some("/w/app"), &e),
            "/w/app/.mcp.json"
        );
        assert_eq!(
            path(Host::VsCode, Some("/w/app"), &e),
            "/w/app/.vscode/mcp.json"
        );
        assert_eq!(
            path(Host::Cursor, Some("/w/app"), &e),
            "/w/app/.cursor/mcp.json"
        );
        let err = config_path(Host::ClaudeDesktop, Some(Path::new("/w")), &e).unwrap_err();
        assert!(err.to_string().contains("drop --project"), "{err}");
    }

    #[test]
    fn overrides_and_missing_variables() {
        let mut e = env(Os::Linux);
        e.xdg_config_home = Some(PathBuf::from("/xdg"));
        e.claude_config_dir = Some(PathBuf::from("/cc"));
        assert_eq!(
            path(Host::ClaudeDesktop, None, &e),
            "/xdg/Claude/claude_desktop_config.json"
        );
        assert_eq!(path(Host::ClaudeCode, None, &e), "/cc/.claude.json");
        // A relative XDG_CONFIG_HOME is invalid per the XDG spec and ignored.
        e.xdg_config_home = Some(PathBuf::from("rel"));
        assert_eq!(
            path(Host::VsCode, None, &e),
            "/home/me/.config/Code/User/mcp.json"
        );
        e.home = None;
        let err = config_path(Host::Cursor, None, &e).unwrap_err();
        assert_eq!(
            err,
            LocateError::MissingVar {
                host: "Cursor",
                var: "HOME"
            }
        );
        let mut w = env(Os::Windows);
        w.appdata = None;
        assert!(
            config_path(Host::VsCode, None, &w)
                .unwrap_err()
                .to_string()
                .contains("APPDATA")
        );
    }
}
