//! What a server's host entry adds to the sandbox on `rootfence run`'s command line
//! (`--env`, `--read`, `--write`, written by `rootfence wrap`), and the check of an `--env`
//! name. The spec that merges them with the policy is `policy::server_spec`: the policy
//! composes the sandbox's types, so the arrow points from policy down to here.

use std::path::PathBuf;

/// What a server's host entry adds to the sandbox, from `rootfence run`'s command line.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ServerGrants {
    /// Environment variables passed on top of the baseline and the policy's list: exact
    /// names or `PREFIX*` (`--env`). A host entry's `env` names reach the server this way.
    pub env: Vec<String>,
    /// Extra paths the server may read (`--read`): its own configuration.
    pub read: Vec<PathBuf>,
    /// Extra paths the server may read and write (`--write`): its own state, such as the
    /// file a host entry's `MEMORY_FILE_PATH` names.
    pub write: Vec<PathBuf>,
}

/// A `--env` value that is not a usable variable name or pattern: what is wrong, with
/// what to give instead.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("--env {given:?}: {why}")]
pub struct EnvNameError {
    /// The value given.
    pub given: String,
    /// What is wrong, with what to give instead.
    pub why: String,
}

/// Checks one `--env` value: a variable name, or a prefix ending in `*`. `*` alone would
/// pass every variable (agent sockets, cloud credentials, the host's own tokens) and is
/// refused.
pub fn check_env_name(given: &str) -> Result<(), EnvNameError> {
    let err = |why: &str| {
        Err(EnvNameError {
            given: given.to_owned(),
            why: why.to_owned(),
        })
    };
    let name = given.strip_suffix('*').unwrap_or(given);
    if given.is_empty() {
        return err("an empty name; give a variable name such as MEMORY_FILE_PATH");
    }
    if name.is_empty() {
        return err(
            "`*` alone would pass every variable, including agent sockets and credentials; \
             name the variables, or a prefix such as `MYSERVER_*`",
        );
    }
    if name.contains(['=', '\0']) {
        return err(
            "a variable name cannot contain `=` or NUL; give the name only (the value comes \
             from the environment the host starts rootfence with)",
        );
    }
    if name.contains('*') {
        return err("`*` is allowed only at the end, as a prefix pattern such as `MYSERVER_*`");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn env_names_and_patterns() {
        for ok in ["MEMORY_FILE_PATH", "LC_*", "x", "GITHUB_TOKEN"] {
            assert!(check_env_name(ok).is_ok(), "{ok}");
        }
        for (bad, hint) in [
            ("", "empty"),
            ("*", "every variable"),
            ("A=B", "`=`"),
            ("A*B", "only at the end"),
            ("A\0", "NUL"),
        ] {
            let e = check_env_name(bad).unwrap_err().to_string();
            assert!(e.contains(hint), "{bad:?}: {e}");
            assert!(e.starts_with("--env "), "{e}");
        }
    }
}
