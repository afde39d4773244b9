//! Fuzz target: policy loading (`policy::Policy::from_sources`) and layering.
//!
//! Input: UTF-8 text; a NUL byte splits it into two TOML layers (the first NUL only; the
//! second layer keeps any others, which TOML refuses). Properties: loading never panics;
//! a loaded policy decides fixed probes (paths, schemes, roots, tools, content items) and
//! renders `policy show` without panicking; and when both the first layer alone and the
//! two-layer stack load, the second layer never turns a deny into an allow, a block into a
//! pass, nor loosens the stances the root check and the reads use (symlinks, hard links,
//! `on_timeout`, `read`), nor drops a `[[tools.paths]]` pointer.
#![no_main]

use libfuzzer_sys::fuzz_target;
use rootfence::policy::{HardlinkStance, Policy, ReadStance, RootsFallback, SymlinkStance};

const HOME: &str = "/home/u";

const PATHS: &[&str] = &[
    "/",
    "/srv",
    "/srv/app",
    "/srv/app/main.rs",
    "/srv/app/.env",
    "/srv/app/k.pem",
    "/srv/app_evil/x",
    "/home/u",
    "/home/u/.ssh/id_rsa",
    "/home/u/code/x.rs",
    "/etc/passwd",
    "/srv/app/../x",
    "relative",
    "",
];
const SCHEMES: &[&str] = &["file", "https", "HTTPS", "data", "bad scheme", ""];
const TOOLS: &[&str] = &["write_file", "read_file", "run_shell", "rm_rf", "", "*"];
const MIMES: &[Option<&str>] = &[None, Some("text/plain"), Some("image/png"), Some("x")];
const SIZES: &[u64] = &[0, 100, 1 << 20, u64::MAX];

fn load(layers: &[&str]) -> Option<Policy> {
    let l: Vec<(String, String)> = layers
        .iter()
        .enumerate()
        .map(|(i, t)| (format!("l{i}.toml"), (*t).to_string()))
        .collect();
    Policy::from_sources_with_home(&l, Some(HOME)).ok()
}

/// Every probe, as (what, allow, blocks).
fn probes(p: &Policy) -> Vec<(String, bool, bool)> {
    let mut out = Vec::new();
    let mut push = |what: String, d: rootfence::policy::Decision<'_>| {
        out.push((what, d.allow, p.blocks(&d)));
    };
    for s in SCHEMES {
        for path in PATHS {
            push(
                format!("resource {s} {path}"),
                p.decide_resource(s, Some(path)),
            );
        }
        push(format!("resource {s}"), p.decide_resource(s, None));
    }
    for path in PATHS {
        push(format!("root {path}"), p.decide_root(path));
    }
    for t in TOOLS {
        push(format!("tool {t}"), p.decide_tool(t));
    }
    for m in MIMES {
        for n in SIZES {
            push(format!("content {m:?} {n}"), p.decide_content(*m, *n));
        }
    }
    out
}

fn read_rank(r: ReadStance) -> u8 {
    match r {
        ReadStance::Serve => 0,
        ReadStance::Verify => 1,
        ReadStance::Forward => 2,
    }
}

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let mut layers = text.splitn(2, '\0');
    let first = layers.next().unwrap_or_default();
    let second = layers.next();
    let Some(a) = load(&[first]) else {
        if let Some(second) = second {
            let _ = load(&[first, second]);
        }
        return;
    };
    let before = probes(&a);
    let _ = a.show_text();
    let _ = a.show_json();
    let Some(second) = second else {
        return;
    };
    let Some(ab) = load(&[first, second]) else {
        return;
    };
    let after = probes(&ab);
    let _ = ab.show_text();
    for ((what, allow_a, block_a), (_, allow_ab, block_ab)) in before.iter().zip(&after) {
        assert!(*allow_a || !allow_ab, "{what}: a deny became an allow");
        assert!(!block_a || *block_ab, "{what}: a block became a pass");
    }
    let (ra, rab) = (a.roots(), ab.roots());
    if ra.symlinks == SymlinkStance::Never {
        assert_eq!(rab.symlinks, SymlinkStance::Never, "symlinks loosened");
    }
    if ra.hardlinks == HardlinkStance::Deny {
        assert_eq!(rab.hardlinks, HardlinkStance::Deny, "hardlinks loosened");
    }
    if ra.on_timeout == RootsFallback::Deny {
        assert_eq!(rab.on_timeout, RootsFallback::Deny, "on_timeout loosened");
    }
    assert!(
        read_rank(ab.resources().read) <= read_rank(a.resources().read),
        "read stance loosened"
    );
    for t in TOOLS.iter().chain(["read_file", "move_file"].iter()) {
        let had: Vec<&str> = a
            .tool_path_pointers(t, None)
            .iter()
            .map(|p| p.pointer.as_str())
            .collect();
        let has: Vec<&str> = ab
            .tool_path_pointers(t, None)
            .iter()
            .map(|p| p.pointer.as_str())
            .collect();
        for ptr in had {
            assert!(has.contains(&ptr), "tool {t}: pointer {ptr} dropped");
        }
    }
});
