//! Policy evaluation cost (issue 4 target: at most 5 µs per decision with 200 globs).
//!
//! The policy has two layers, as in a real org + project stack: 200 resource globs in
//! all (100 deny globs of mixed shapes, 100 allow globs split 60 / 40 between the layers,
//! the project's inside the org's), plus root and tool rules. Run:
//!
//! ```text
//! cargo bench --bench policy -- --warm-up-time 1 --measurement-time 3
//! ```

use std::hint::black_box;

use criterion::{Criterion, criterion_group, criterion_main};
use rootfence::policy::Policy;

fn list(items: impl IntoIterator<Item = String>) -> String {
    let v: Vec<String> = items.into_iter().map(|s| format!("  \"{s}\",\n")).collect();
    format!("[\n{}]", v.concat())
}

/// 80 org deny globs of the shapes real policies use (basename, extension, directory,
/// anchored subtree, alternation, character class).
fn org_denies() -> Vec<String> {
    let mut v = vec![
        "**/.env".to_string(),
        "**/.env.*".into(),
        "**/*.pem".into(),
        "**/*.key".into(),
        "**/.ssh/**".into(),
        "**/.git/**".into(),
        "**/.aws/**".into(),
        "**/id_{rsa,ed25519,ecdsa}*".into(),
    ];
    for i in 0..18 {
        v.push(format!("**/secret{i}/**"));
        v.push(format!("**/*.ext{i}"));
        v.push(format!("/srv/team{i}/private/**"));
        v.push(format!("**/cred[0-9]{i}.json"));
    }
    v
}

fn policy() -> Policy {
    let org_allow = (0..60).map(|i| format!("/srv/project{i}/**"));
    let proj_allow = (0..40).map(|i| format!("/srv/project{}/module{i}/**", i % 60));
    let proj_deny = (0..20).map(|i| format!("**/fixtures{i}/**"));
    let org = format!(
        "version = 1\n[roots]\nallow = [\"/srv/**\"]\ndeny = [\"/srv/team*/private/**\"]\n\
         [resources]\nallow = {}\ndeny = {}\n[tools]\ndeny = [\"*shell*\", \"*exec*\"]\n\
         writing = [\"write_*\", \"edit_*\"]\n",
        list(org_allow),
        list(org_denies())
    );
    let project = format!(
        "version = 1\n[resources]\nallow = {}\ndeny = {}\n[tools]\nread_only = true\n",
        list(proj_allow),
        list(proj_deny)
    );
    let layers = [
        ("org.toml".to_string(), org),
        ("project.toml".to_string(), project),
    ];
    let p = Policy::from_sources_with_home(&layers, Some("/home/u")).expect("bench policy");
    let globs = p.show_json();
    let n = globs["resources_deny"].as_array().unwrap().len()
        + globs["resources_allow"]
            .as_array()
            .unwrap()
            .iter()
            .map(|l| l["globs"].as_array().unwrap().len())
            .sum::<usize>();
    assert_eq!(n, 200, "the bench policy must hold 200 resource globs");
    p
}

fn decisions(c: &mut Criterion) {
    let p = policy();
    // Sanity: each benchmark measures the branch its name says.
    let allowed = "/srv/project7/module7/src/lib/deeply/nested/file_name.rs";
    let denied_ext = "/srv/project7/module7/config/server.pem";
    let denied_dir = "/srv/project7/module7/a/secret17/b/c.txt";
    let not_allowed = "/srv/project59/other/file.rs";
    assert!(p.decide_resource("file", Some(allowed)).allow);
    assert!(!p.decide_resource("file", Some(denied_ext)).allow);
    assert!(!p.decide_resource("file", Some(denied_dir)).allow);
    let d = p.decide_resource("file", Some(not_allowed));
    assert_eq!(d.reason.as_str(), "not_allowed");

    let mut g = c.benchmark_group("policy_decide_200_globs");
    g.bench_function("resource_allowed", |b| {
        b.iter(|| p.decide_resource(black_box("file"), black_box(Some(allowed))))
    });
    g.bench_function("resource_denied_extension", |b| {
        b.iter(|| p.decide_resource(black_box("file"), black_box(Some(denied_ext))))
    });
    g.bench_function("resource_denied_directory", |b| {
        b.iter(|| p.decide_resource(black_box("file"), black_box(Some(denied_dir))))
    });
    g.bench_function("resource_not_allowed", |b| {
        b.iter(|| p.decide_resource(black_box("file"), black_box(Some(not_allowed))))
    });
    g.bench_function("resource_other_scheme", |b| {
        b.iter(|| p.decide_resource(black_box("https"), black_box(None)))
    });
    g.bench_function("root", |b| {
        b.iter(|| p.decide_root(black_box("/srv/project7/module7")))
    });
    g.bench_function("tool", |b| {
        b.iter(|| p.decide_tool(black_box("write_file")))
    });
    g.finish();

    let mut g = c.benchmark_group("policy_compile");
    g.sample_size(10);
    g.bench_function("two_layers_200_globs", |b| b.iter(policy));
    g.finish();
}

criterion_group!(benches, decisions);
criterion_main!(benches);
