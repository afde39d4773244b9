//! From the accumulated layers to the immutable [`Policy`]: the matchers compiled once,
//! the static roots checked against the root rules, the settings structs, and every
//! declared setting's effective value.

use super::*;

pub(super) fn table(rules: &[(PathGlob, Provenance)]) -> Result<GlobTable, globset::Error> {
    GlobTable::build(
        rules
            .iter()
            .map(|(g, p)| (g.text.clone(), g.globs.clone(), p.clone())),
    )
}

fn name_table(rules: &[(String, Glob, Provenance)]) -> Result<GlobTable, globset::Error> {
    GlobTable::build(
        rules
            .iter()
            .map(|(t, g, p)| (t.clone(), vec![g.clone()], p.clone())),
    )
}

pub(super) fn allow_tables(lists: &[AllowList]) -> Result<Vec<AllowTable>, globset::Error> {
    lists
        .iter()
        .map(|l| {
            let mut miss = l.key_prov.clone();
            miss.rule.push_str(" (no entry matched)");
            Ok(AllowTable {
                table: table(&l.globs)?,
                miss,
            })
        })
        .collect()
}

/// The user's own home for `roots.other_homes`: `HOME` when it is an absolute path other
/// than `/` (a home of `/` would make every path "inside the own home"), without a
/// trailing `/`.
pub(super) fn own_home(home: Option<&str>) -> Option<String> {
    let h = home?.trim_end_matches('/');
    (h.starts_with('/') && glob::check_path(h).is_ok()).then(|| h.to_owned())
}

/// Builds the matchers and the settings, and checks the static roots against the rules.
pub(super) fn build(
    acc: Acc,
    layers: Vec<LayerInfo>,
    sources: &[Source<'_>],
    opted_out: Option<Provenance>,
    home: Option<String>,
) -> Result<Policy, Vec<PolicyError>> {
    let mut errs = Vec::new();
    let set_err = |e: globset::Error| {
        vec![
            PolicyError::unlocated(
                &Arc::from(""),
                ErrorKind::BadGlob,
                format!("the globs could not be compiled together: {e}"),
            )
            .hint("use fewer or simpler globs"),
        ]
    };
    let root_deny = table(acc.globs("roots.deny")).map_err(set_err)?;
    let root_other_homes = table(acc.globs("roots.other_homes")).map_err(set_err)?;
    let res_deny = table(acc.globs("resources.deny")).map_err(set_err)?;
    let root_allow = allow_tables(acc.allow("roots.allow")).map_err(set_err)?;
    let res_allow = allow_tables(acc.allow("resources.allow")).map_err(set_err)?;
    let tool_deny = name_table(acc.names("tools.deny")).map_err(set_err)?;
    let read_only = acc.flag("tools.read_only");
    let tools_writing = acc.names("tools.writing");
    let writing: Vec<(String, Glob, Provenance)> = tools_writing
        .iter()
        .filter(|_| read_only)
        .map(|(t, g, p)| {
            let mut p = p.clone();
            let with = &acc.val("tools.read_only").prov;
            p.rule.push_str(&format!(" with {with}"));
            (t.clone(), g.clone(), p)
        })
        .collect();
    let tool_writing = name_table(&writing).map_err(set_err)?;
    let tool_writes = name_table(tools_writing).map_err(set_err)?;
    let tool_paths_set =
        GlobSet::new(acc.tool_paths.iter().map(|(_, g, _, _)| g)).map_err(set_err)?;
    let globs_of =
        |list: &[(PathGlob, Provenance)]| GlobSet::new(list.iter().flat_map(|(g, _)| &g.globs));
    let read_only_roots = acc.globs("sandbox.read_only_roots");
    let read_only_roots_set = globs_of(read_only_roots).map_err(set_err)?;
    let read_only_paths = acc
        .read_only_paths
        .clone()
        .unwrap_or_else(default_read_only_paths);
    let read_only_paths_set = globs_of(&read_only_paths).map_err(set_err)?;

    let m = Matchers {
        root_deny,
        root_other_homes,
        own_home: own_home(home.as_deref()),
        root_allow,
        res_deny,
        res_allow,
        scheme_prov: acc.subset("resources.other_schemes").prov.clone(),
        tool_deny,
        tool_writing,
        tool_writes,
        read_only,
        tool_paths_set,
        tool_paths: acc
            .tool_paths
            .iter()
            .map(|(t, _, server, l)| ToolPaths {
                tool: t.clone(),
                server: server.as_ref().map(|(_, g)| g.compile_matcher()),
                paths: l.clone(),
            })
            .collect(),
        infer: (acc.infer.v, acc.infer.prov.clone()),
        infer_for: acc
            .infer_for
            .iter()
            .map(|(t, g, i, p)| (t.clone(), g.compile_matcher(), *i, p.clone()))
            .collect(),
        max_bytes_prov: acc.val("resources.max_bytes").prov.clone(),
        mime_prov: acc.subset("resources.mime").prov.clone(),
        default: Provenance::default_rule("default"),
        not_canonical: Provenance::default_rule("undecidable input is denied"),
    };

    // Static roots must pass the root rules. One denied by its own or an earlier layer is
    // a mistake in the file (an error); one denied by a later layer was narrowed away.
    let mut static_roots = Vec::new();
    for (r, span) in &acc.roots_static.v {
        let d = super::super::decision::decide_root_with(&m, &r.path);
        if d.allow {
            static_roots.push(r.clone());
            continue;
        }
        let own = r.provenance.layer;
        if d.provenance.layer.is_none() || d.provenance.layer <= own {
            let err = sources[own.unwrap_or(0)]
                .error(
                    span,
                    ErrorKind::BadPath,
                    format!("static root \"{}\" is refused by the root rules", r.path),
                )
                .related("refused by", d.provenance)
                .hint("remove the static root, or change the rule that refuses it");
            errs.push(err);
        }
    }
    if !errs.is_empty() {
        return Err(errs);
    }

    let effective = effective::values(
        &acc,
        &static_roots,
        &read_only_paths,
        &layers,
        opted_out.as_ref(),
    );
    Ok(Policy {
        layers,
        mode: acc.word("mode"),
        roots: RootsSettings {
            static_roots,
            list_timeout: ms(acc.int("roots.list_timeout_ms")),
            launch_wait: ms(acc.int("roots.launch_wait_ms")),
            on_timeout: acc.word("roots.on_timeout"),
            symlinks: acc.word("roots.symlinks"),
            hardlinks: acc.word("roots.hardlinks"),
            from_command: acc.word("roots.from_command"),
        },
        resources: ResourceSettings {
            other_schemes: match &acc.subset("resources.other_schemes").v {
                None => SchemeStance::AllowAll,
                Some(l) => SchemeStance::Only(l.clone()),
            },
            max_bytes: acc.int("resources.max_bytes"),
            mime: acc.subset("resources.mime").v.clone(),
            read: acc.word("resources.read"),
            deny_globs: texts_of(acc.globs("resources.deny")),
        },
        audit: AuditSettings {
            path: acc.text("audit.path").map(PathBuf::from),
            fsync: acc.fsync.v,
            rotate_bytes: acc.int("audit.rotate_bytes"),
            on_failure: acc.word("audit.on_failure"),
            log_allowed: acc.flag("audit.log_allowed"),
            allowed: acc.word("audit.allowed"),
            retain_files: acc.int("audit.retain_files"),
            retain_bytes: acc.int("audit.retain_bytes"),
            checkpoint_key: acc.text("audit.checkpoint_key").map(PathBuf::from),
            checkpoint_path: acc.text("audit.checkpoint_path").map(PathBuf::from),
            checkpoint_every_records: acc.int("audit.checkpoint_every_records"),
            checkpoint_every_ms: acc.int("audit.checkpoint_every_ms"),
            syslog: acc.syslog.v.clone().map(|(_, c)| c),
        },
        sandbox: SandboxSettings {
            mode: acc.word("sandbox.mode"),
            read: acc.grants.read.iter().map(|(p, _)| p.into()).collect(),
            write: acc.grants.write.iter().map(|(p, _)| p.into()).collect(),
            network: acc.network.v.clone(),
            rlimits: Rlimits {
                nofile: acc.int("sandbox.rlimits.nofile"),
                address_space: acc.int("sandbox.rlimits.address_space"),
                cpu_seconds: acc.int("sandbox.rlimits.cpu_seconds"),
                processes: acc.int("sandbox.rlimits.processes"),
            },
            env: texts(&acc.grants.env),
            grants: acc.grants.clone(),
            grantable: acc.grantable(),
            root_access: acc.word("sandbox.root_access"),
            follow_roots: acc.word("sandbox.follow_roots"),
            read_only_roots: texts_of(read_only_roots),
            read_only_roots_set,
            read_only_paths: texts_of(&read_only_paths),
            read_only_paths_set,
        },
        telemetry: TelemetrySettings {
            endpoint: acc.text("telemetry.endpoint"),
            protocol: match &acc.val("telemetry.protocol").v {
                Some(Val::Word(w, _)) => Some((*w).to_owned()),
                _ => None,
            },
            service_name: acc.text("telemetry.service_name"),
            resource_attributes: acc.text("telemetry.resource_attributes"),
        },
        m,
        effective,
        opted_out,
        home,
        dropped: std::sync::OnceLock::new(),
    })
}

pub(super) fn texts(list: &[(String, Provenance)]) -> Vec<String> {
    list.iter().map(|(t, _)| t.clone()).collect()
}

/// The globs of a list of rules, as written (expanded).
fn texts_of(rules: &[(PathGlob, Provenance)]) -> Vec<String> {
    rules.iter().map(|(g, _)| g.text.clone()).collect()
}

/// A duration in milliseconds (every one declared has a default).
fn ms(n: Option<u64>) -> Duration {
    Duration::from_millis(n.unwrap_or_default())
}
