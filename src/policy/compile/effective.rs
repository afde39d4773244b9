//! The effective value of every declared setting (`schema::SETTINGS`), with where it came
//! from: what `policy show` lists and what a reload compares. A plain setting's value
//! follows from its slot; a setting with a rule of its own has an arm here, and a key
//! without one is caught by the schema's tests (its change would not be reported).

use super::super::decision::Provenance;
use super::super::glob::PathGlob;
use super::super::raw::Val;
use super::super::schema::{FSYNC_WORDS, Kind, SETTINGS, Value};
use super::super::settings::{Word, fsync_rank};
use super::super::{LayerInfo, StaticRoot};
use super::{Acc, AllowList, Slot, network_word};
use crate::audit::FsyncPolicy as Fsync;
use crate::audit::syslog::{FACILITIES, MsgFormat, SyslogConfig};

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
        .zip(&acc.slots)
        .map(|(spec, slot)| match slot {
            Slot::Val(s) => {
                let v = match &s.v {
                    Some(Val::Bool(b)) => Value::Bool(*b),
                    Some(Val::Int(n)) if matches!(spec.kind, Kind::Size) => Value::Size(*n),
                    Some(Val::Int(n)) => Value::Int(*n),
                    Some(Val::Word(w, _)) => Value::Word(w),
                    Some(Val::Str(t)) => Value::Text(t.clone()),
                    _ => Value::Unset,
                };
                (v, s.prov.clone())
            }
            Slot::Globs(l) => globs(spec.key, l),
            Slot::Names(l) => list(spec.key, l.iter().map(|(t, _, p)| (t.clone(), p))),
            Slot::Allow(lists) => allow(spec.key, lists),
            Slot::Subset(s) => {
                let v = match (&s.v, spec.kind) {
                    (None, Kind::Schemes) => Value::Word("allow"),
                    (Some(l), Kind::Schemes) if l.is_empty() => Value::Word("deny"),
                    (None, _) => Value::Unset,
                    (Some(l), _) => Value::List(l.clone()),
                };
                (v, s.prov.clone())
            }
            Slot::Own => value_of(
                spec.key,
                acc,
                static_roots,
                read_only_paths,
                layers,
                opted_out,
            ),
        })
        .collect()
}

/// Each layer's allow-list, its globs joined; the last list's provenance.
fn allow(key: &str, lists: &[AllowList]) -> (Value, Provenance) {
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

/// An accumulated list: its texts, and its latest entry's provenance.
fn list<'a>(
    key: &str,
    items: impl Iterator<Item = (String, &'a Provenance)>,
) -> (Value, Provenance) {
    let (texts, provs): (Vec<String>, Vec<&Provenance>) = items.unzip();
    let prov = provs.last().map_or_else(
        || Provenance::default_rule(format!("{key} = []")),
        |p| (*p).clone(),
    );
    (Value::List(texts), prov)
}

fn globs(key: &str, l: &[(PathGlob, Provenance)]) -> (Value, Provenance) {
    list(key, l.iter().map(|(g, p)| (g.text.clone(), p)))
}

/// A value of `[audit.syslog]` (its address as written, its configuration).
fn syslog(acc: &Acc, f: impl Fn(&(String, SyslogConfig)) -> Value) -> (Value, Provenance) {
    let v = acc.syslog.v.as_ref().map_or(Value::Unset, f);
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
        "roots.static" => (
            Value::List(static_roots.iter().map(|r| r.path.clone()).collect()),
            acc.roots_static.prov.clone(),
        ),
        "tools.infer" => (Value::Word(acc.infer.v.word()), acc.infer.prov.clone()),
        "tools.paths.tool" => tool_paths(&|(t, _, _, l)| vec![t.clone(); l.len()]),
        "tools.paths.pointers" => {
            tool_paths(&|(_, _, _, l)| l.iter().map(|p| p.pointer.clone()).collect())
        }
        "tools.paths.kind" => {
            tool_paths(&|(_, _, _, l)| l.iter().map(|p| p.kind.word().to_owned()).collect())
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
        "audit.fsync" => {
            let (w, _) = FSYNC_WORDS[usize::from(fsync_rank(&acc.fsync.v).0)];
            (Value::Word(w), acc.fsync.prov.clone())
        }
        "audit.fsync_interval_ms" => match acc.fsync.v {
            Fsync::Interval(d) => (Value::Int(d.as_millis() as u64), acc.fsync.prov.clone()),
            _ => (Value::Unset, acc.fsync.prov.clone()),
        },
        "audit.syslog.address" => syslog(acc, |(a, _)| Value::Text(a.clone())),
        "audit.syslog.facility" => syslog(acc, |(_, c)| {
            let name = FACILITIES.iter().find(|(_, n)| *n == c.facility);
            name.map_or(Value::Int(u64::from(c.facility)), |(w, _)| Value::Word(w))
        }),
        "audit.syslog.format" => syslog(acc, |(_, c)| {
            let name = MsgFormat::WORDS.iter().find(|(_, f)| *f == c.format);
            name.map_or(Value::Unset, |(w, _)| Value::Word(w))
        }),
        "audit.syslog.queue" => syslog(acc, |(_, c)| Value::Int(c.queue as u64)),
        "audit.syslog.sd_id" => syslog(acc, |(_, c)| Value::Text(c.sd_id.clone())),
        "audit.syslog.max_message" => syslog(acc, |(_, c)| Value::Int(c.max_message as u64)),
        "sandbox.read" => list(key, acc.grants.read.iter().map(|(t, p)| (t.clone(), p))),
        "sandbox.write" => list(key, acc.grants.write.iter().map(|(t, p)| (t.clone(), p))),
        "sandbox.network" => (
            Value::Raw(network_word(&acc.network.v)),
            acc.network.prov.clone(),
        ),
        "sandbox.env" => list(key, acc.grants.env.iter().map(|(t, p)| (t.clone(), p))),
        "sandbox.read_only_paths" => globs(key, read_only_paths),
        // Caught by `schema::tests`: a declared setting must have an arm here.
        _ => (
            Value::Unset,
            Provenance::default_rule(format!("{key}: not compiled")),
        ),
    }
}
