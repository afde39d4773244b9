//! Test support shared by the text paths' tests (`page/tests.rs`, `read_text/tests.rs`): a
//! real enforcer over a tree with secrets and a link out of its root, the context a message
//! is handled in, and what a path did with a message.

use std::sync::Arc;

use serde_json::Value;

use super::{Ctx, Enforcer};
use crate::jsonrpc::{Id, Kind};
use crate::policy::Policy;
use crate::relay::{Action, Side};
use crate::roots::RootSpec;

/// A root (`<base>/root`) holding `dirs` and `files` (each file holds "x"), a secret outside
/// it (`<base>/outside/secret.txt`) and a link to that directory (`root/out`), under an
/// enforcer with the built-in default, or with `layer` stacked on it.
pub(super) struct World {
    _dir: tempfile::TempDir,
    pub(super) base: String,
    pub(super) enforcer: Enforcer,
    /// The evidence of the messages handled in [`World::ctx`]s.
    pub(super) evidence: super::evidence::Evidence,
}

impl World {
    pub(super) fn new(dirs: &[&str], files: &[&str], layer: Option<&str>) -> World {
        let policy = match layer {
            None => Policy::builtin_default(),
            Some(text) => World::policy(&[("layer.toml", text)]),
        };
        World::with_policy(dirs, files, policy)
    }

    /// The built-in default with `layers` on it (`(name, text)`).
    pub(super) fn policy(layers: &[(&str, &str)]) -> Policy {
        let default = include_str!("../../policies/default.toml");
        let sources: Vec<(String, String)> = std::iter::once(("builtin:default", default))
            .chain(layers.iter().copied())
            .map(|(name, text)| (name.into(), text.into()))
            .collect();
        Policy::from_sources(&sources).unwrap()
    }

    /// The same world under `policy`.
    pub(super) fn with_policy(dirs: &[&str], files: &[&str], policy: Policy) -> World {
        let dir = tempfile::tempdir().unwrap();
        let base = dir.path().canonicalize().unwrap();
        let root = base.join("root");
        std::fs::create_dir_all(&root).unwrap();
        for d in dirs {
            std::fs::create_dir_all(root.join(d)).unwrap();
        }
        for f in files {
            std::fs::write(root.join(f), "x").unwrap();
        }
        std::fs::create_dir_all(base.join("outside")).unwrap();
        std::fs::write(base.join("outside/secret.txt"), "x").unwrap();
        std::os::unix::fs::symlink(base.join("outside"), root.join("out")).unwrap();
        let roots = vec![RootSpec::path(&root)];
        let (enforcer, dropped) =
            Enforcer::with_command_roots(Arc::new(policy), roots, Vec::new(), None);
        assert!(dropped.is_empty(), "{dropped:?}");
        World {
            _dir: dir,
            base: base.to_string_lossy().into_owned(),
            enforcer,
            evidence: Default::default(),
        }
    }

    /// The root's directory.
    pub(super) fn root(&self) -> std::path::PathBuf {
        std::path::Path::new(&self.base).join("root")
    }

    /// The `file:` URI of `rel` beneath the root, as its text.
    pub(super) fn uri(&self, rel: &str) -> String {
        format!("file://{}/root/{rel}", self.base)
    }

    /// The context of a `method` message from `from`, judged against the root.
    pub(super) fn ctx<'a>(
        &'a self,
        from: Side,
        kind: Kind,
        method: &'a str,
        id: &'a Id,
    ) -> Ctx<'a> {
        Ctx {
            from,
            kind,
            method,
            tool: None,
            request: None,
            id: Some(id),
            roots: Some(self.enforcer.inner.operator.set()),
            roots_arc: None,
            changed: std::cell::Cell::new(false),
            revision: None,
            evidence: &self.evidence,
        }
    }
}

/// What a path did with a message.
#[derive(Debug, PartialEq)]
pub(super) enum Outcome {
    Forward,
    Replace(Value),
    Reply(Value),
    Other,
}

pub(super) fn outcome(a: Action) -> Outcome {
    match a {
        Action::Forward => Outcome::Forward,
        Action::Replace(v) => Outcome::Replace(v),
        Action::Reply(v) => Outcome::Reply(v),
        _ => Outcome::Other,
    }
}

/// Asserts that a text path (`fast`: `None` when it declined) did what the value path did
/// (`slow`, with whatever else the caller compares) with `text`; returns whether the text
/// path took it.
pub(super) fn agrees<T: PartialEq + std::fmt::Debug>(fast: Option<T>, slow: T, text: &str) -> bool {
    match fast {
        None => false,
        Some(fast) => {
            assert_eq!(fast, slow, "the text path differs on {text}");
            true
        }
    }
}

/// What the relay's scan captures of a message for the enforcer (under `page::RULES`);
/// nothing for a message the scan refuses (the relay never offers it).
pub(super) fn captured(text: &str) -> crate::jsonrpc::Capture<'_> {
    crate::jsonrpc::scan_message_with(text, Some(&super::page::RULES), None)
        .map(|e| e.capture)
        .unwrap_or_default()
}
