//! The enforcement report as the stderr summary a user reads at start (`Display`): the
//! grants grouped by why they were made, what is denied inside them, the network, limits
//! and environment, and what was asked for but is not enforced.

use std::fmt;

use super::*;
use crate::sandbox::profile::SYSTEM;

impl fmt::Display for EnforcementReport {
    /// A multi-line summary for stderr at session start.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.mode == SandboxMode::Off {
            return write!(f, "sandbox: off; the server runs unconfined");
        }
        let abi = match self.landlock.abi {
            Some(v) => format!("landlock ABI {v}"),
            None => "landlock unavailable".to_owned(),
        };
        let how = match self.enforcement {
            Enforcement::Full => "fully enforced",
            Enforcement::Partial => "PARTIALLY enforced",
            Enforcement::None => "NOT enforced",
        };
        writeln!(f, "sandbox ({}): {abi}: {how}", self.mode)?;
        let fs = &self.filesystem;
        write_grants(f, fs, self.landlock.rules)?;
        for w in &self.withheld {
            writeln!(f, "  not granted {}: {}", w.path, w.why)?;
        }
        for d in &fs.deny {
            let s = match d.status {
                DenyStatus::OutsideGrants => "unreachable (outside every grant)",
                DenyStatus::CarvedOut => "carved out of its grant",
                DenyStatus::NotEnforced => "NOT enforced by the sandbox",
            };
            write!(f, "  deny {}: {s}", d.path)?;
            if !d.detail.is_empty() {
                write!(f, "; {}", d.detail)?;
            }
            writeln!(f)?;
        }
        if let Some(carve) = &fs.carve {
            write!(f, "{carve}")?;
        }
        let net = match &self.network.requested {
            Network::Allow => "allow".to_owned(),
            Network::Deny => "deny (TCP connect and bind)".to_owned(),
            Network::Ports(p) => format!(
                "TCP connect and bind only to ports {}",
                p.iter().map(u16::to_string).collect::<Vec<_>>().join(", ")
            ),
        };
        let net_state = if self.network.enforced {
            ""
        } else {
            " (NOT enforced)"
        };
        let net_note = if self.network.requested != Network::Allow {
            "; UDP and unix sockets are not covered by Landlock"
        } else {
            ""
        };
        writeln!(f, "  network: {net}{net_state}{net_note}")?;
        let mut scopes = Vec::new();
        let sc = &self.scopes;
        if sc.signals_requested {
            scopes.push(if sc.signals {
                "signals"
            } else {
                "signals (NOT enforced)"
            });
        }
        if sc.abstract_unix_sockets_requested {
            scopes.push(if sc.abstract_unix_sockets {
                "abstract unix sockets"
            } else {
                "abstract unix sockets (NOT enforced)"
            });
        }
        if scopes.is_empty() {
            scopes.push("none requested");
        }
        writeln!(f, "  scopes: {}", scopes.join(", "))?;
        if !self.rlimits.is_empty() {
            let r: Vec<String> = self
                .rlimits
                .iter()
                .map(|r| {
                    let applied = r.applied.map(|a| a.to_string()).unwrap_or("-".into());
                    match r.status {
                        RlimitStatus::Applied => format!("{}={applied}", r.name),
                        RlimitStatus::Clamped => {
                            format!("{}={applied} (hard limit below {})", r.name, r.requested)
                        }
                        RlimitStatus::NotEffective => {
                            format!("{}={applied} (NOT effective for root)", r.name)
                        }
                        RlimitStatus::Failed => format!("{} (NOT set)", r.name),
                    }
                })
                .collect();
            writeln!(f, "  rlimits: {}", r.join(", "))?;
        }
        write_env(f, &self.env)?;
        writeln!(
            f,
            "  no_new_privs: {}; descriptors: {}",
            if self.no_new_privs { "on" } else { "OFF" },
            self.inherited_fds
        )?;
        if !self.processes.is_empty() {
            writeln!(f, "  processes: {}", self.processes)?;
        }
        if let Some(c) = &self.command {
            writeln!(f, "  command: {c}")?;
        }
        if !self.not_covered.is_empty() {
            writeln!(f, "  not covered: {}", self.not_covered.join("; "))?;
        }
        if !self.missing.is_empty() {
            write!(f, "  missing: {}", self.missing.join("; "))?;
        }
        Ok(())
    }
}

/// The filesystem lines of the summary: every grant is named. Roots and explicit grants
/// first, then what the profile adds for this command (with the reason), then the fixed
/// system part, grouped by directory.
pub(super) fn write_grants(f: &mut fmt::Formatter<'_>, fs: &FsReport, rules: usize) -> fmt::Result {
    let shown = |g: &GrantReport| -> String {
        let why = if g.why.is_empty() {
            g.origin.clone()
        } else if g.origin == "profile" {
            g.why.clone()
        } else {
            format!("{}: {}", g.origin, g.why)
        };
        match &g.status {
            GrantStatus::Granted => format!("{} ({}, {why})", g.path, g.rights),
            GrantStatus::Carved { entries, .. } => format!(
                "{} ({}, {why}, granted as {entries} entries around denied paths)",
                g.path, g.rights
            ),
            GrantStatus::NotFound { error } => {
                format!("{} ({why}: NOT granted: {error})", g.path)
            }
            GrantStatus::Denied { deny } => {
                format!("{} ({why}: NOT granted: inside denied {deny})", g.path)
            }
        }
    };
    // The fixed system part of every profile: grouped on one line, every path still named.
    let is_system =
        |g: &GrantReport| g.origin == "profile" && SYSTEM.iter().any(|(.., why)| *why == g.why);
    writeln!(f, "  filesystem: {rules} Landlock rules")?;
    for (label, profile) in [("grants", false), ("profile", true)] {
        let grants: Vec<String> = fs
            .grants
            .iter()
            .filter(|g| (g.origin == "profile") == profile && !is_system(g))
            .map(shown)
            .collect();
        if !grants.is_empty() {
            writeln!(f, "  {label}: {}", grants.join(", "))?;
        }
    }
    // System part: grouped by rights, then by parent directory (`/etc/{hosts,passwd}`).
    let mut groups: Vec<String> = Vec::new();
    for rights in [
        Rights::ReadExec,
        Rights::Read,
        Rights::Device,
        Rights::ReadWrite,
        Rights::WriteFiles,
    ] {
        let paths: Vec<&str> = fs
            .grants
            .iter()
            .filter(|g| is_system(g) && g.rights == rights)
            .filter(|g| matches!(g.status, GrantStatus::Granted | GrantStatus::Carved { .. }))
            .map(|g| g.path.as_str())
            .collect();
        if !paths.is_empty() {
            groups.push(format!("{rights} {}", group_paths(&paths)));
        }
    }
    if !groups.is_empty() {
        writeln!(f, "  system: {}", groups.join("; "))?;
    }
    Ok(())
}

/// `/etc/hosts /etc/passwd /usr` → `/etc/{hosts,passwd} /usr`, keeping first-seen order.
pub(super) fn group_paths(paths: &[&str]) -> String {
    let mut by_parent: Vec<(&str, Vec<&str>)> = Vec::new();
    for p in paths {
        let (parent, name) = match p.rfind('/') {
            Some(0) | None => ("", *p),
            Some(i) => (&p[..i], &p[i + 1..]),
        };
        match by_parent.iter_mut().find(|(q, _)| *q == parent) {
            Some((_, names)) => names.push(name),
            None => by_parent.push((parent, vec![name])),
        }
    }
    by_parent
        .iter()
        .map(
            |(parent, names)| match (parent.is_empty(), names.as_slice()) {
                (true, _) => names.join(" "),
                (false, [one]) => format!("{parent}/{one}"),
                (false, _) => format!("{parent}/{{{}}}", names.join(",")),
            },
        )
        .collect::<Vec<_>>()
        .join(" ")
}

/// The environment line: counts, every dropped name, and passed paths the server cannot
/// reach.
pub(super) fn write_env(f: &mut fmt::Formatter<'_>, env: &EnvReport) -> fmt::Result {
    write!(
        f,
        "  env: {} passed, {} set ({})",
        env.passed.len(),
        env.set.len(),
        env.set.join(", ")
    )?;
    if env.dropped_names.is_empty() {
        writeln!(f, ", none dropped")?;
    } else {
        writeln!(
            f,
            ", {} dropped: {} (a host entry's env reaches the server as `rootfence run --env NAME`, which `rootfence wrap` writes)",
            env.dropped_names.len(),
            env.dropped_names.join(", ")
        )?;
    }
    for u in &env.unreachable {
        writeln!(
            f,
            "  env {} names {}, which the sandbox does not grant: the server will fail to open it; add `--write {}` (or `--read`) to the entry, or run `rootfence wrap --rewrap`",
            u.name, u.path, u.path
        )?;
    }
    Ok(())
}
