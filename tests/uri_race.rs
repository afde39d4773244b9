//! The race test (issue 3): while one thread keeps atomically swapping a directory, and a
//! file, for symbolic links that lead out of the root (`renameat2(RENAME_EXCHANGE)`), other
//! threads check and read the same URIs in a loop. The outside secret's bytes must never
//! be returned, whatever the interleaving. This is the TOCTOU that check-by-path then
//! open-by-path servers lose (the residual gap of CVE-2025-53109's fix).

#[path = "common/uri_tree.rs"]
mod uri_tree;

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use nix::fcntl::{AT_FDCWD, RenameFlags, renameat2};
use rootfence::fsaccess::{SymlinkStance, read_beneath};
use rootfence::roots::{CheckOptions, RootSet, RootSpec, Verdict};
use uri_tree::SECRET;

const INSIDE: &[u8] = b"inside";

#[derive(Default)]
struct Counts {
    allowed: AtomicU64,
    denied: AtomicU64,
    read_ok: AtomicU64,
    read_refused: AtomicU64,
}

#[test]
fn swapping_in_escaping_symlinks_never_yields_outside_content() {
    let tmp = tempfile::tempdir().unwrap();
    let top = std::fs::canonicalize(tmp.path()).unwrap();
    let root = top.join("root");
    let outside = top.join("outside");
    std::fs::create_dir_all(root.join("d")).unwrap();
    std::fs::create_dir_all(&outside).unwrap();
    std::fs::write(root.join("d/f"), INSIDE).unwrap();
    std::fs::write(root.join("f"), INSIDE).unwrap();
    std::fs::write(outside.join("f"), SECRET).unwrap();
    std::fs::write(outside.join("secret"), SECRET).unwrap();
    // The swap partners: an absolute link to the outside directory, and a relative link
    // to the outside file.
    std::os::unix::fs::symlink(&outside, root.join("d_alt")).unwrap();
    std::os::unix::fs::symlink("../outside/secret", root.join("f_alt")).unwrap();
    // And an absolute link that names a place inside the root (followed, issue 12) whose
    // target is itself being swapped between a directory and a link out of the root.
    std::fs::create_dir_all(root.join("a")).unwrap();
    std::fs::write(root.join("a/f"), INSIDE).unwrap();
    std::os::unix::fs::symlink(root.join("d_alt"), root.join("a_alt")).unwrap();

    let (set, errors) = RootSet::open([RootSpec::path(&root)]);
    assert!(errors.is_empty());
    let set = Arc::new(set);
    let stop = Arc::new(AtomicBool::new(false));
    let counts = Arc::new(Counts::default());
    let swaps = Arc::new(AtomicU64::new(0));

    let swapper = {
        let (root, stop, swaps) = (root.clone(), stop.clone(), swaps.clone());
        std::thread::spawn(move || {
            while !stop.load(Ordering::Relaxed) {
                for (a, b) in [("d", "d_alt"), ("f", "f_alt"), ("a", "a_alt")] {
                    renameat2(
                        AT_FDCWD,
                        &root.join(a),
                        AT_FDCWD,
                        &root.join(b),
                        RenameFlags::RENAME_EXCHANGE,
                    )
                    .expect("renameat2(RENAME_EXCHANGE)");
                }
                swaps.fetch_add(1, Ordering::Relaxed);
            }
        })
    };

    let uris = [
        format!("file://{}/d/f", root.display()),
        format!("file://{}/f", root.display()),
        format!("file://{}/a/f", root.display()),
    ];
    let checkers: Vec<_> = (0..2)
        .map(|_| {
            let (set, stop, counts, uris) =
                (set.clone(), stop.clone(), counts.clone(), uris.clone());
            std::thread::spawn(move || {
                let opts = CheckOptions::default();
                while !stop.load(Ordering::Relaxed) {
                    for uri in &uris {
                        // Check, then read what the check allowed (the relay's path).
                        match set.check_str(uri, &opts) {
                            Verdict::Allow(a) => {
                                counts.allowed.fetch_add(1, Ordering::Relaxed);
                                match set.read(&a, 1 << 16, &opts) {
                                    Ok(r) => {
                                        assert_ne!(
                                            r.bytes, SECRET,
                                            "outside content served for {uri}"
                                        );
                                        assert_eq!(r.bytes, INSIDE);
                                        counts.read_ok.fetch_add(1, Ordering::Relaxed);
                                    }
                                    Err(_) => {
                                        counts.read_refused.fetch_add(1, Ordering::Relaxed);
                                    }
                                }
                            }
                            Verdict::Deny(_) => {
                                counts.denied.fetch_add(1, Ordering::Relaxed);
                            }
                        }
                        // And a read with no check before it at all.
                        let rel = uri.rsplit_once("/root/").unwrap().1;
                        if let Ok(r) = read_beneath(
                            set.roots()[0].dir(),
                            Path::new(rel),
                            1 << 16,
                            SymlinkStance::default(),
                        ) {
                            assert_ne!(r.bytes, SECRET, "outside content read for {uri}");
                        }
                    }
                }
            })
        })
        .collect();

    // Run until both outcomes have been seen many times (so the race was really raced),
    // bounded in time either way.
    let started = Instant::now();
    while started.elapsed() < Duration::from_secs(20) {
        std::thread::sleep(Duration::from_millis(50));
        let enough = counts.read_ok.load(Ordering::Relaxed) > 2000
            && counts.denied.load(Ordering::Relaxed) > 2000
            && started.elapsed() > Duration::from_millis(1500);
        if enough || checkers.iter().any(|c| c.is_finished()) {
            break;
        }
    }
    stop.store(true, Ordering::Relaxed);
    for c in checkers {
        c.join().expect("a checker saw outside content");
    }
    swapper.join().unwrap();
    let (allowed, denied, read_ok, refused) = (
        counts.allowed.load(Ordering::Relaxed),
        counts.denied.load(Ordering::Relaxed),
        counts.read_ok.load(Ordering::Relaxed),
        counts.read_refused.load(Ordering::Relaxed),
    );
    eprintln!(
        "swaps={} allowed={allowed} denied={denied} read_ok={read_ok} read_refused_after_allow={refused}",
        swaps.load(Ordering::Relaxed)
    );
    assert!(
        read_ok > 0,
        "no read ever succeeded: the test raced nothing"
    );
    assert!(
        denied > 0,
        "no check ever saw the escaping link: the test raced nothing"
    );
}
