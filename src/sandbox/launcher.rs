//! The sandbox launcher: the process rootfence starts as `rootfence __sandbox-exec
//! <plan-fd> <report-fd> -- <command...>`. It confines itself and then execs the server,
//! so rootfence proper is never restricted.
//!
//! It stays single-threaded (no runtime, no tracing) because Landlock restricts the
//! calling thread only before ABI 8. Order of work, and why:
//! 1. adopt the report pipe first, so every later failure can be reported;
//! 2. read the sealed plan and close it;
//! 3. mark every other inherited descriptor close-on-exec;
//! 4. build the environment from the allow-list and look the command up on its `PATH`
//!    (before Landlock, so "not found" and "denied" stay distinct errors);
//! 5. `no_new_privs`, resource limits, the scan of the roots for denied and read-only
//!    paths and their mount namespace (`deny.rs`), then Landlock;
//! 6. write the report (strict mode: refuse instead if anything is missing);
//! 7. exec; the report pipe closes on exec, which tells rootfence the exec happened.
//!
//! Between 4 and 5 the launch moves into a PID namespace of its own (`pidns.rs`): the
//! process rootfence started stays behind as its keeper, and steps 5 to 7 run in the
//! server's process, PID 2 under a minimal init.
//!
//! It first sets `PR_SET_PDEATHSIG` (SIGKILL): the server dies with the process that
//! started the launcher, even when that one is killed outright.

use std::ffi::{CString, OsStr, OsString};
use std::io::{Read, Write};
use std::os::fd::RawFd;
use std::os::unix::ffi::OsStrExt;
use std::process::ExitCode;

use nix::sys::resource::{Resource, getrlimit, setrlimit};

use super::landlock::{self, Failure};
use super::plan::{LaunchPlan, MAX_PLAN_BYTES, env_allowed};
use super::profile::{DEFAULT_PATH, ENV_BASELINE, lookup};
use super::report::{
    EnforcementReport, EnvPath, EnvReport, FsReport, Message, RlimitReport, RlimitStatus,
};
use super::{
    EXIT_EXEC_FAILED, EXIT_LAUNCHER_ERROR, EXIT_NOT_FOUND, EXIT_REFUSED, LAUNCHER_ARG, SandboxMode,
};
use super::{deny, fds, pidns};

/// Entry point of the launcher; `main` calls it when `argv[1]` is [`LAUNCHER_ARG`]. Never
/// returns on success (the process becomes the server).
pub fn launcher_main() -> ExitCode {
    // Die with whoever started the launcher (rootfence, or strace under `sandbox probe`),
    // and so does the server it becomes: the setting survives exec. Without it a killed
    // rootfence or strace leaves the server running with nobody reading its output.
    let parent = nix::unistd::getppid();
    let _ = nix::sys::prctl::set_pdeathsig(nix::sys::signal::Signal::SIGKILL);
    if nix::unistd::getppid() != parent {
        return ExitCode::from(EXIT_LAUNCHER_ERROR);
    }
    let args: Vec<OsString> = std::env::args_os().collect();
    let Some((plan_fd, report_fd, command)) = parse_args(&args) else {
        crate::stderr_line!(
            "rootfence: error: `{LAUNCHER_ARG}` is internal to rootfence and takes \
             `<plan-fd> <report-fd> -- <command...>`; use `rootfence run` or \
             `rootfence sandbox exec` instead"
        );
        return ExitCode::from(EXIT_LAUNCHER_ERROR);
    };
    let mut report_pipe = match fds::adopt(report_fd) {
        Ok(fd) => std::fs::File::from(fd),
        Err(e) => {
            crate::stderr_line!("rootfence: sandbox launcher: cannot use the report channel: {e}");
            return ExitCode::from(EXIT_LAUNCHER_ERROR);
        }
    };
    let mut send = |msg: &Message| -> bool {
        let mut line = serde_json::to_vec(msg).unwrap_or_default();
        line.push(b'\n');
        report_pipe.write_all(&line).is_ok()
    };
    let fail = |send: &mut dyn FnMut(&Message) -> bool,
                stage: &str,
                error: String,
                code: u8,
                report: Option<Box<EnforcementReport>>| {
        let msg = Message::Failed {
            stage: stage.into(),
            error: error.clone(),
            code,
            report,
        };
        if !send(&msg) {
            crate::stderr_line!("rootfence: sandbox launcher failed at {stage}: {error}");
        }
        ExitCode::from(code)
    };

    let plan = match read_plan(plan_fd) {
        Ok(p) => p,
        Err(e) => return fail(&mut send, "plan", e, EXIT_LAUNCHER_ERROR, None),
    };
    let mut missing = Vec::new();
    let inherited_fds = match fds::cloexec_all_above_stdio() {
        Ok(how) => format!("stdio only ({how})"),
        Err(e) => {
            missing.push(format!("inherited descriptors not closed: {e}"));
            "NOT closed".to_owned()
        }
    };

    let not_covered = not_covered(&plan);
    let (env, env_report) = build_env(&plan, std::env::vars_os());
    let path_var = env
        .iter()
        .find(|(k, _)| k == "PATH")
        .map(|(_, v)| v.clone());
    let program = &command[0];
    let Some(resolved) = lookup(program, path_var.as_deref()) else {
        let searched = path_var
            .as_deref()
            .unwrap_or(OsStr::new(DEFAULT_PATH))
            .to_string_lossy()
            .into_owned();
        let error = if program.as_bytes().contains(&b'/') {
            format!(
                "server command '{}' does not exist or is not an executable file",
                program.to_string_lossy()
            )
        } else {
            format!(
                "server command '{}' not found on the sandbox PATH ({searched}); give its \
                 absolute path, or make sure PATH is passed and contains its directory",
                program.to_string_lossy()
            )
        };
        return fail(&mut send, "lookup", error, EXIT_NOT_FOUND, None);
    };

    // From here on the launch runs in a PID namespace of its own (this process becomes
    // its keeper and never comes back here; see pidns.rs): every process the server starts
    // ends with it. Before the mount namespace and Landlock, which the server's process
    // alone takes on.
    let processes = match pidns::contain() {
        Ok(how) => format!("{how}: nothing the server starts outlives it"),
        Err(pidns::Uncontained::Without(why)) => {
            missing.push(format!(
                "no PID namespace for the server ({why}): a process it starts that leaves its \
                 process group (setsid) can outlive it"
            ));
            format!("process group and parent-death signal only ({why})")
        }
        Err(pidns::Uncontained::Broken(why)) => {
            return fail(&mut send, "pid namespace", why, EXIT_LAUNCHER_ERROR, None);
        }
    };

    // Set explicitly, so it holds even when Landlock is unavailable.
    let _ = nix::sys::prctl::set_no_new_privs();
    let rlimits = apply_rlimits(&plan);
    for r in &rlimits {
        match r.status {
            RlimitStatus::Failed => missing.push(format!("rlimit {} could not be set", r.name)),
            RlimitStatus::NotEffective => missing.push(format!(
                "rlimit {} is not enforced for root (the kernel exempts uid 0)",
                r.name
            )),
            RlimitStatus::Applied | RlimitStatus::Clamped => {}
        }
    }

    // What the policy denies or protects inside the roots: covered in a private mount
    // namespace where the kernel allows it, the rest carved out by Landlock.
    let inside = deny::prepare(&plan);
    missing.extend(inside.missing);
    let (outcome, refused) = match landlock::restrict(&plan, &inside.targets) {
        Ok(o) => (o, false),
        Err(Failure::Refused(o)) => (*o, true),
        Err(Failure::Error(e)) => {
            return fail(&mut send, "landlock", e, EXIT_LAUNCHER_ERROR, None);
        }
    };
    let no_new_privs = nix::sys::prctl::get_no_new_privs().unwrap_or(outcome.no_new_privs);
    if !no_new_privs && !outcome.missing.iter().any(|m| m.contains("no_new_privs")) {
        missing.push("no_new_privs could not be set".into());
    }
    let carve = inside.report.map(|mut r| {
        r.finish(
            &outcome.carved_dirs,
            outcome.landlock.ruleset != super::Enforcement::None,
        );
        r
    });
    let mut all_missing = outcome.missing;
    all_missing.extend(missing);
    let enforcement = match outcome.enforcement {
        super::Enforcement::Full if !all_missing.is_empty() => super::Enforcement::Partial,
        e => e,
    };
    let mut report = Box::new(EnforcementReport {
        mode: plan.mode,
        enforcement,
        landlock: outcome.landlock,
        filesystem: FsReport {
            grants: outcome.grants,
            deny: outcome.deny,
            deny_globs: plan.deny_globs.clone(),
            carve,
        },
        network: outcome.network,
        scopes: outcome.scopes,
        rlimits,
        no_new_privs,
        env: env_report,
        inherited_fds,
        processes,
        command: Some(resolved.display().to_string()),
        missing: all_missing,
        not_covered,
        withheld: plan.withheld.clone(),
    });
    report.env.unreachable = unreachable_env_paths(&env, &report);
    if refused || (plan.mode == SandboxMode::Strict && !report.missing.is_empty()) {
        if !send(&Message::Refused { report }) {
            crate::stderr_line!("rootfence: strict sandbox refused to start the server");
        }
        return ExitCode::from(EXIT_REFUSED);
    }
    if !send(&Message::Report {
        report: report.clone(),
    }) {
        // rootfence stopped listening: it will not know what was enforced, so do not
        // start a server it cannot account for.
        crate::stderr_line!("rootfence: sandbox launcher: cannot deliver the enforcement report");
        return ExitCode::from(EXIT_LAUNCHER_ERROR);
    }

    let err = exec(&resolved, &command, &env);
    let error = match err {
        nix::Error::EACCES | nix::Error::EPERM => format!(
            "cannot execute '{}': {err}; the sandbox does not grant execute on it or on \
             its interpreter; add its directory to [sandbox] read",
            resolved.display()
        ),
        _ => format!("cannot execute '{}': {err}", resolved.display()),
    };
    fail(&mut send, "exec", error, EXIT_EXEC_FAILED, Some(report))
}

/// What the sandbox leaves open even when everything requested is enforced. Read before
/// Landlock applies (`/proc/self/status` is always readable then).
fn not_covered(plan: &LaunchPlan) -> Vec<String> {
    let mut out = vec![
        "connecting to pathname unix sockets (e.g. /var/run/docker.sock) is not restricted \
         before Landlock ABI 9 (Linux 7.1), which rootfence does not request yet"
            .to_owned(),
    ];
    if plan.network != super::Network::Allow {
        out.push("UDP and other non-TCP protocols are not restricted".to_owned());
    }
    if super::profile::effective_caps().is_some_and(|c| c != 0) {
        out.push(
            "the server holds Linux capabilities (it runs as root or with file \
             capabilities); Landlock does not restrict raw sockets or module loading"
                .to_owned(),
        );
    }
    out
}

/// `[exe, LAUNCHER_ARG, plan-fd, report-fd, "--", command...]`.
fn parse_args(args: &[OsString]) -> Option<(RawFd, RawFd, Vec<OsString>)> {
    if args.len() < 6 || args[1] != LAUNCHER_ARG || args[4] != "--" {
        return None;
    }
    let plan = args[2].to_str()?.parse().ok()?;
    let report = args[3].to_str()?.parse().ok()?;
    if plan == report {
        return None;
    }
    Some((plan, report, args[5..].to_vec()))
}

fn read_plan(fd: RawFd) -> Result<LaunchPlan, String> {
    let file = std::fs::File::from(fds::adopt(fd)?);
    let mut buf = Vec::new();
    file.take(MAX_PLAN_BYTES)
        .read_to_end(&mut buf)
        .map_err(|e| format!("cannot read the plan: {e}"))?;
    LaunchPlan::from_json(&buf)
}

/// The server's environment: the inherited variables the allow-list passes, plus the
/// sandbox's own (temp dir). Names that are not UTF-8 never pass. Every dropped name is
/// reported (names only, never values).
fn build_env(
    plan: &LaunchPlan,
    vars: impl Iterator<Item = (OsString, OsString)>,
) -> (Vec<(OsString, OsString)>, EnvReport) {
    let mut env = Vec::new();
    let mut passed = Vec::new();
    let mut dropped_names = Vec::new();
    let set: Vec<&str> = plan.env_set.iter().map(|e| e.name.as_str()).collect();
    for (k, v) in vars {
        match k.to_str() {
            Some(name) if set.contains(&name) => {}
            Some(name) if env_allowed(&plan.env_allow, name) => {
                passed.push(name.to_owned());
                env.push((k, v));
            }
            _ => dropped_names.push(shown_name(&k)),
        }
    }
    for e in &plan.env_set {
        env.push((OsString::from(&e.name), e.value.clone()));
    }
    passed.sort();
    dropped_names.sort();
    let report = EnvReport {
        passed,
        set: plan.env_set.iter().map(|e| e.name.clone()).collect(),
        dropped_names,
        unreachable: Vec::new(),
    };
    (env, report)
}

/// A variable name for the report: lossy UTF-8, control characters escaped, so a hostile
/// name cannot forge report lines.
fn shown_name(name: &OsStr) -> String {
    name.to_string_lossy()
        .chars()
        .flat_map(|c| {
            if c.is_control() {
                c.escape_default().collect::<Vec<_>>()
            } else {
                vec![c]
            }
        })
        .collect()
}

/// Passed variables outside the baseline (named by the host entry or a policy) whose
/// value is one absolute path that no grant covers: the server was told to use a file it
/// cannot open, which must be said at start rather than found in a failed tool call.
fn unreachable_env_paths(env: &[(OsString, OsString)], report: &EnforcementReport) -> Vec<EnvPath> {
    let mut out = Vec::new();
    for (k, v) in env {
        let Some(name) = k.to_str() else { continue };
        if env_allowed(ENV_BASELINE, name) || report.env.set.iter().any(|s| s == name) {
            continue;
        }
        let path = std::path::Path::new(v);
        if !path.is_absolute() || v.as_bytes().contains(&b':') {
            continue;
        }
        if report
            .covering_grant(&landlock::canonical_or_lexical(path))
            .is_none()
        {
            out.push(EnvPath {
                name: name.to_owned(),
                path: path.display().to_string(),
            });
        }
    }
    out
}

fn apply_rlimits(plan: &LaunchPlan) -> Vec<RlimitReport> {
    let r = &plan.rlimits;
    let wanted = [
        ("nofile", Resource::RLIMIT_NOFILE, r.nofile),
        ("address_space", Resource::RLIMIT_AS, r.address_space),
        ("cpu_seconds", Resource::RLIMIT_CPU, r.cpu_seconds),
        ("processes", Resource::RLIMIT_NPROC, r.processes),
    ];
    let mut out = Vec::new();
    for (name, resource, value) in wanted {
        let Some(requested) = value else { continue };
        let hard = getrlimit(resource).map(|(_, h)| h).unwrap_or(u64::MAX);
        let target = requested.min(hard);
        let (applied, status) = match setrlimit(resource, target, target) {
            Err(_) => (None, RlimitStatus::Failed),
            Ok(()) if name == "processes" && nix::unistd::getuid().is_root() => {
                (Some(target), RlimitStatus::NotEffective)
            }
            Ok(()) if target < requested => (Some(target), RlimitStatus::Clamped),
            Ok(()) => (Some(target), RlimitStatus::Applied),
        };
        out.push(RlimitReport {
            name: name.into(),
            requested,
            applied,
            status,
        });
    }
    out
}

/// Replaces the process image; returns only on failure.
fn exec(path: &std::path::Path, argv: &[OsString], env: &[(OsString, OsString)]) -> nix::Error {
    let cstr = |b: &[u8]| CString::new(b).map_err(|_| nix::Error::EINVAL);
    let run = || {
        let a = argv
            .iter()
            .map(|a| cstr(a.as_bytes()))
            .collect::<Result<Vec<_>, _>>()?;
        let e = env
            .iter()
            .map(|(k, v)| cstr(&[k.as_bytes(), b"=", v.as_bytes()].concat()))
            .collect::<Result<Vec<_>, _>>()?;
        nix::unistd::execve(&cstr(path.as_os_str().as_bytes())?, &a, &e)
    };
    let Err(err) = run();
    err
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn launcher_arguments() {
        let a = |v: &[&str]| v.iter().map(OsString::from).collect::<Vec<_>>();
        let ok = parse_args(&a(&["rf", LAUNCHER_ARG, "5", "6", "--", "node", "x.js"])).unwrap();
        assert_eq!((ok.0, ok.1), (5, 6));
        assert_eq!(ok.2, a(&["node", "x.js"]));
        for bad in [
            a(&["rf", LAUNCHER_ARG, "5", "6", "--"]),
            a(&["rf", LAUNCHER_ARG, "5", "5", "--", "x"]),
            a(&["rf", LAUNCHER_ARG, "x", "6", "--", "x"]),
            a(&["rf", LAUNCHER_ARG, "5", "6", "x", "x"]),
            a(&["rf", "run", "5", "6", "--", "x"]),
        ] {
            assert!(parse_args(&bad).is_none(), "{bad:?}");
        }
    }
}
