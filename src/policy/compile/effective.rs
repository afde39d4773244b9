//! The effective value of every declared setting (`schema::SETTINGS`), with where it came
//! from: what `policy show` lists and what a reload compares. One arm per declared key; a
//! key without one is caught by the schema's tests (its change would not be reported).

use super::super::decision::Provenance;
use super::super::glob::PathGlob;
use super::super::schema::{SETTINGS, Value};
use super::super::settings::Word;
use super::super::{LayerInfo, StaticRoot};
use super::{Acc, Setting};
use crate::audit::FsyncPolicy as Fsync;
use crate::audit::syslog::{FACILITIES, MsgFormat, SyslogConfig};
use crate::sandbox::Network;

/// One `[[tools.paths]]` entry as accumulated: tool glob, server glob, checked arguments.
type ToolPathsEntry = (
    String,
    globset::Glob,
    Option<(String, globset::Glob)>,
    Vec<super::ToolPath>,
);

/// The effective values, in `SETTINGS` order.
pub(super) fn values(
    acc: &Acc,
    static_roots: &[StaticRoot],
    read_only_paths: &[(PathGlob, Provenance)],
    layers: &[LayerInfo],
    opted_out: Option<&Provenance>,
) -> Vec<(Value, Provenance)> {
    SETTINGS
        .iter()
        .map(|s| value_of(s.key, acc, static_roots, read_only_paths, layers, opted_out))
        .collect()
}

fn word<T: Word>(s: &Setting<T>) -> (Value, Provenance) {
    (Value::Word(s.v.word()), s.prov.clone())
}

fn opt(s: &Setting<Option<u64>>, size: bool) -> (Value, Provenance) {
    let v = match s.v {
        Some(n) if size => Value::Size(n),
        Some(n) => Value::Int(n),
        None => Value::Unset,
    };
    (v, s.prov.clone())
}

fn text(s: &Setting<Option<String>>) -> (Value, Provenance) {
    (
        s.v.clone().map_or(Value::Unset, Value::Text),
        s.prov.clone(),
    )
}

/// An accumulated list: its texts, and its latest entry's provenance.
fn list<'a>(
    key: &str,
    items: impl Iterator<Item = (String, &'a Provenance)>,
) -> (Value, Provenance) {
    let mut last = None;
    let texts = items
        .map(|(t, p)| {
            last = Some(p.clone());
            t
        })
        .collect();
    let prov = last.unwrap_or_else(|| Provenance::default_rule(format!("{key} = []")));
    (Value::List(texts), prov)
}

fn globs(key: &str, l: &[(PathGlob, Provenance)]) -> (Value, Provenance) {
    list(key, l.iter().map(|(g, p)| (g.text.clone(), p)))
}

fn syslog(acc: &Acc, f: impl Fn(&SyslogConfig) -> Value) -> (Value, Provenance) {
    let v = acc.syslog.v.as_ref().map_or(Value::Unset, |(_, c)| f(c));
    (v, acc.syslog.prov.clone())
}

fn value_of(
    key: &str,
    acc: &Acc,
    static_roots: &[StaticRoot],
    read_only_paths: &[(PathGlob, Provenance)],
    layers: &[LayerInfo],
    opted_out: Option<&Provenance>,
) -> (Value, Provenance) {
    let tool_paths = |f: &dyn Fn(&ToolPathsEntry) -> Vec<String>| {
        let v: Vec<String> = acc.tool_paths.iter().flat_map(f).collect();
        let prov = acc
            .tool_paths
            .last()
            .and_then(|(_, _, _, l)| l.last())
            .map_or_else(
                || Provenance::default_rule("[[tools.paths]]: none"),
                |p| p.provenance.clone(),
            );
        (Value::List(v), prov)
    };
    let grant = |s: &Setting<Vec<PathGlob>>| {
        let v = s.v.iter().map(|g| g.text.clone()).collect();
        (Value::List(v), s.prov.clone())
    };
    match key {
        "version" => (Value::Int(1), Provenance::default_rule("version = 1")),
        "base" => match opted_out {
            Some(p) => (Value::Word("none"), p.clone()),
            None => {
                let base = layers.iter().find(|l| l.base).map(|l| l.name.clone());
                (
                    base.map_or(Value::Unset, Value::Text),
                    Provenance::default_rule("base"),
                )
            }
        },
        "mode" => word(&acc.mode),
        "roots.allow" | "resources.allow" => {
            let lists = if key == "roots.allow" {
                &acc.roots_allow
            } else {
                &acc.res_allow
            };
            let texts = lists
                .iter()
                .map(|l| {
                    let g: Vec<&str> = l.globs.iter().map(|(g, _)| g.text.as_str()).collect();
                    g.join(" ")
                })
                .collect();
            let prov = lists.last().map_or_else(
                || Provenance::default_rule(format!("{key}: none")),
                |l| l.key_prov.clone(),
            );
            (Value::List(texts), prov)
        }
        "roots.deny" => globs(key, &acc.roots_deny),
        "roots.other_homes" => globs(key, &acc.roots_other_homes),
        "roots.from_command" => word(&acc.from_command),
        "roots.static" => (
            Value::List(static_roots.iter().map(|r| r.path.clone()).collect()),
            acc.roots_static.prov.clone(),
        ),
        "roots.list_timeout_ms" => (
            Value::Int(acc.list_timeout_ms.v),
            acc.list_timeout_ms.prov.clone(),
        ),
        "roots.launch_wait_ms" => (
            Value::Int(acc.launch_wait_ms.v),
            acc.launch_wait_ms.prov.clone(),
        ),
        "roots.on_timeout" => word(&acc.on_timeout),
        "roots.symlinks" => word(&acc.symlinks),
        "roots.hardlinks" => word(&acc.hardlinks),
        "resources.other_schemes" => {
            let v = match &acc.schemes.v {
                None => Value::Word("allow"),
                Some(l) if l.is_empty() => Value::Word("deny"),
                Some(l) => Value::List(l.clone()),
            };
            (v, acc.schemes.prov.clone())
        }
        "resources.deny" => globs(key, &acc.res_deny),
        "resources.max_bytes" => opt(&acc.max_bytes, true),
        "resources.mime" => (
            acc.mime.v.clone().map_or(Value::Unset, Value::List),
            acc.mime.prov.clone(),
        ),
        "resources.read" => word(&acc.read),
        "tools.deny" => list(key, acc.tools_deny.iter().map(|(t, _, p)| (t.clone(), p))),
        "tools.writing" => list(
            key,
            acc.tools_writing.iter().map(|(t, _, p)| (t.clone(), p)),
        ),
        "tools.read_only" => (Value::Bool(acc.read_only.v), acc.read_only.prov.clone()),
        "tools.infer" => word(&acc.infer),
        "tools.paths.tool" => tool_paths(&|(t, _, _, l)| vec![t.clone(); l.len()]),
        "tools.paths.pointers" => {
            tool_paths(&|(_, _, _, l)| l.iter().map(|p| p.pointer.clone()).collect())
        }
        "tools.paths.kind" => {
            tool_paths(&|(_, _, _, l)| l.iter().map(|p| p.kind.as_str().to_owned()).collect())
        }
        "tools.paths.server" => tool_paths(&|(_, _, s, l)| {
            let s = s.as_ref().map_or_else(String::new, |(t, _)| t.clone());
            vec![s; l.len()]
        }),
        "tools.infer_for.tool" => {
            list(key, acc.infer_for.iter().map(|(t, _, _, p)| (t.clone(), p)))
        }
        "tools.infer_for.infer" => list(
            key,
            acc.infer_for
                .iter()
                .map(|(_, _, i, p)| (i.word().to_owned(), p)),
        ),
        "audit.path" => text(&acc.audit_path),
        "audit.fsync" => {
            let w = match acc.fsync.v {
                Fsync::Always => "always",
                Fsync::Denials => "denials",
                Fsync::Interval(_) => "interval",
                _ => "never",
            };
            (Value::Word(w), acc.fsync.prov.clone())
        }
        "audit.fsync_interval_ms" => match acc.fsync.v {
            Fsync::Interval(d) => (Value::Int(d.as_millis() as u64), acc.fsync.prov.clone()),
            _ => (Value::Unset, acc.fsync.prov.clone()),
        },
        "audit.rotate_bytes" => opt(&acc.rotate_bytes, true),
        "audit.on_failure" => word(&acc.on_failure),
        "audit.log_allowed" => (Value::Bool(acc.log_allowed.v), acc.log_allowed.prov.clone()),
        "audit.allowed" => word(&acc.allowed),
        "audit.retain_files" => opt(&acc.retain_files, false),
        "audit.retain_bytes" => opt(&acc.retain_bytes, true),
        "audit.checkpoint_key" => text(&acc.checkpoint_key),
        "audit.checkpoint_path" => text(&acc.checkpoint_path),
        "audit.checkpoint_every_records" => opt(&acc.checkpoint_every_records, false),
        "audit.checkpoint_every_ms" => opt(&acc.checkpoint_every_ms, false),
        "audit.syslog.address" => {
            let v = acc
                .syslog
                .v
                .as_ref()
                .map_or(Value::Unset, |(a, _)| Value::Text(a.clone()));
            (v, acc.syslog.prov.clone())
        }
        "audit.syslog.facility" => syslog(acc, |c| {
            let name = FACILITIES.iter().find(|(_, n)| *n == c.facility);
            name.map_or(Value::Int(u64::from(c.facility)), |(w, _)| Value::Word(w))
        }),
        "audit.syslog.format" => syslog(acc, |c| {
            let name = MsgFormat::WORDS.iter().find(|(_, f)| *f == c.format);
            name.map_or(Value::Unset, |(w, _)| Value::Word(w))
        }),
        "audit.syslog.queue" => syslog(acc, |c| Value::Int(c.queue as u64)),
        "audit.syslog.sd_id" => syslog(acc, |c| Value::Text(c.sd_id.clone())),
        "audit.syslog.max_message" => syslog(acc, |c| Value::Int(c.max_message as u64)),
        "telemetry.endpoint" => text(&acc.tel_endpoint),
        "telemetry.protocol" => text(&acc.tel_protocol),
        "telemetry.service_name" => text(&acc.tel_service_name),
        "telemetry.resource_attributes" => text(&acc.tel_resource_attributes),
        "sandbox.mode" => word(&acc.sb_mode),
        "sandbox.read" => list(key, acc.sb_read.iter().map(|(t, p)| (t.clone(), p))),
        "sandbox.write" => list(key, acc.sb_write.iter().map(|(t, p)| (t.clone(), p))),
        "sandbox.network" => {
            let v = match &acc.network.v {
                Network::Deny => Value::Word("deny"),
                Network::Allow => Value::Word("allow"),
                Network::Ports(p) => Value::Raw(format!("{p:?}")),
            };
            (v, acc.network.prov.clone())
        }
        "sandbox.env" => list(key, acc.env.iter().map(|(t, p)| (t.clone(), p))),
        "sandbox.root_access" => word(&acc.root_access),
        "sandbox.read_only_roots" => globs(key, &acc.read_only_roots),
        "sandbox.follow_roots" => word(&acc.follow_roots),
        "sandbox.read_only_paths" => globs(key, read_only_paths),
        "sandbox.rlimits.nofile" => opt(&acc.rl_nofile, false),
        "sandbox.rlimits.address_space" => opt(&acc.rl_as, true),
        "sandbox.rlimits.cpu_seconds" => opt(&acc.rl_cpu, false),
        "sandbox.rlimits.processes" => opt(&acc.rl_nproc, false),
        "sandbox.grantable.env" => (
            Value::List(acc.grant_env.v.clone()),
            acc.grant_env.prov.clone(),
        ),
        "sandbox.grantable.read" => grant(&acc.grant_read),
        "sandbox.grantable.write" => grant(&acc.grant_write),
        // Caught by `schema::tests`: a declared setting must have an arm here.
        _ => (
            Value::Unset,
            Provenance::default_rule(format!("{key}: not compiled")),
        ),
    }
}
