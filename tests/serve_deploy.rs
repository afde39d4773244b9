//! The deployment files in deploy/ (issue 30), checked in the suite: the Kubernetes manifests
//! validate strictly and offline against the Kubernetes API schemas (kubernetes-validate,
//! pinned by scripts/install-test-peers.sh), carry the settings docs/serve.md promises
//! (non-root, read-only root filesystem, no privilege escalation, seccomp RuntimeDefault,
//! readiness on /readyz, scale-down damping, a ReadWriteMany shared volume, the pod IP as
//! --advertise), and the container recipe's command line only uses options `rootfence
//! serve` has. The recipe itself is built where a container engine is present.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn validator() -> Option<PathBuf> {
    let p = root().join("tests/peers/.venv-deploy/bin/kubernetes-validate");
    p.exists().then_some(p)
}

fn manifests() -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(root().join("deploy/kubernetes"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "yaml"))
        .collect();
    v.sort();
    v
}

fn validate(files: &[PathBuf]) -> std::process::Output {
    Command::new(validator().unwrap())
        .arg("--strict")
        .args(files)
        .output()
        .unwrap()
}

/// Every manifest as JSON (through the validator venv's PyYAML).
fn as_json(file: &Path) -> serde_json::Value {
    let python = root().join("tests/peers/.venv-deploy/bin/python");
    let out = Command::new(python)
        .args([
            "-c",
            "import sys, json, yaml; print(json.dumps(yaml.safe_load(open(sys.argv[1]))))",
        ])
        .arg(file)
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    serde_json::from_slice(&out.stdout).unwrap()
}

#[test]
fn kubernetes_manifests_validate_strictly_offline() {
    if validator().is_none() {
        panic!("kubernetes-validate is missing: run scripts/install-test-peers.sh");
    }
    let files = manifests();
    assert!(files.len() >= 7, "{files:?}");
    let out = validate(&files);
    assert!(
        out.status.success(),
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    // The validator can fail: a misspelt field is refused in strict mode.
    let t = common::tempdir();
    let bad = t.path().join("bad.yaml");
    let text = std::fs::read_to_string(root().join("deploy/kubernetes/service.yaml")).unwrap();
    std::fs::write(&bad, text.replace("selector:", "selectr:")).unwrap();
    assert!(!validate(&[bad]).status.success());
}

#[test]
fn manifests_carry_the_promised_settings() {
    if validator().is_none() {
        panic!("kubernetes-validate is missing: run scripts/install-test-peers.sh");
    }
    let dir = root().join("deploy/kubernetes");
    let d = as_json(&dir.join("deployment.yaml"));
    let pod = &d["spec"]["template"]["spec"];
    assert_eq!(pod["securityContext"]["runAsNonRoot"], true);
    assert!(pod["securityContext"]["runAsUser"].as_u64().unwrap() > 0);
    assert_eq!(
        pod["securityContext"]["seccompProfile"]["type"],
        "RuntimeDefault"
    );
    let c = &pod["containers"][0];
    assert_eq!(c["securityContext"]["readOnlyRootFilesystem"], true);
    assert_eq!(c["securityContext"]["allowPrivilegeEscalation"], false);
    assert_eq!(c["readinessProbe"]["httpGet"]["path"], "/readyz");
    assert_eq!(c["livenessProbe"]["httpGet"]["path"], "/healthz");
    assert!(
        c["env"]
            .as_array()
            .unwrap()
            .iter()
            .any(|e| e["name"] == "POD_IP"
                && e["valueFrom"]["fieldRef"]["fieldPath"] == "status.podIP"),
        "{c}"
    );
    // The drain keeps sessions --drain-timeout (30s): the grace period must exceed it.
    assert!(pod["terminationGracePeriodSeconds"].as_u64().unwrap() > 30);
    let hpa = as_json(&dir.join("hpa.yaml"));
    assert!(
        hpa["spec"]["behavior"]["scaleDown"]["stabilizationWindowSeconds"]
            .as_u64()
            .unwrap()
            >= 300
    );
    let pvc = as_json(&dir.join("pvc.yaml"));
    assert_eq!(pvc["spec"]["accessModes"][0], "ReadWriteMany");
    let svc = as_json(&dir.join("service.yaml"));
    assert!(
        svc["spec"].get("sessionAffinity").is_none(),
        "no affinity needed"
    );
    for kind in ["PodDisruptionBudget", "NetworkPolicy", "Secret"] {
        assert!(
            manifests().iter().any(|f| as_json(f)["kind"] == kind),
            "no {kind}"
        );
    }
}

#[test]
fn the_container_recipe_uses_real_options_and_builds_where_it_can() {
    let recipe = std::fs::read_to_string(root().join("deploy/Containerfile")).unwrap();
    let help = Command::new(env!("CARGO_BIN_EXE_rootfence"))
        .args(["serve", "--help"])
        .output()
        .unwrap();
    let help = String::from_utf8_lossy(&help.stdout);
    let entry = recipe
        .lines()
        .find(|l| l.starts_with("ENTRYPOINT"))
        .expect("an ENTRYPOINT");
    let flags: Vec<&str> = entry
        .split(|c: char| c.is_whitespace() || c == '"' || c == '\\')
        .filter(|w| w.starts_with("--") && w.len() > 2)
        .collect();
    assert!(flags.len() >= 6, "{flags:?}");
    for f in flags {
        assert!(
            help.contains(f),
            "the recipe uses {f}, which rootfence serve lacks"
        );
    }
    assert!(recipe.contains("USER 10001"), "numeric non-root user");
    // An engine that answers `info` (a docker client without a daemon does not).
    let engine = ["podman", "docker"].into_iter().find(|e| {
        Command::new(e)
            .arg("info")
            .output()
            .is_ok_and(|o| o.status.success())
    });
    let Some(engine) = engine else {
        eprintln!(
            "skipped building deploy/Containerfile: no working container engine (podman, or docker with its daemon) on this machine"
        );
        return;
    };
    let out = Command::new(engine)
        .args([
            "build",
            "-f",
            "deploy/Containerfile",
            "-t",
            "rootfence-test:ci",
            ".",
        ])
        .current_dir(root())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}
