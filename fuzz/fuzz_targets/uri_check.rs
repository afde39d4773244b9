//! Fuzz target: parse + root check against a small real tree with escaping links.
//!
//! Properties: never panics or hangs; an allowed URI is component-wise inside the root
//! and its canonical form is what was checked; reading an allowed regular file never
//! returns the outside secret.
#![no_main]

use std::sync::OnceLock;

use libfuzzer_sys::fuzz_target;
use rootfence::roots::{CheckOptions, FileKind, RootSet, RootSpec, Verdict};

struct Fixture {
    _tmp: tempfile::TempDir,
    set: RootSet,
    prefix: String,
}

const SECRET: &[u8] = b"FUZZ-SECRET";

fn fixture() -> &'static Fixture {
    static F: OnceLock<Fixture> = OnceLock::new();
    F.get_or_init(|| {
        let tmp = tempfile::tempdir().unwrap();
        let top = std::fs::canonicalize(tmp.path()).unwrap();
        let root = top.join("r");
        std::fs::create_dir_all(root.join("a/b")).unwrap();
        std::fs::create_dir_all(top.join("o")).unwrap();
        std::fs::create_dir_all(top.join("r_evil")).unwrap();
        std::fs::write(root.join("a/f"), b"inside").unwrap();
        std::fs::write(top.join("o/s"), SECRET).unwrap();
        std::fs::write(top.join("r_evil/s"), SECRET).unwrap();
        let link = |t: &str, at: &str| std::os::unix::fs::symlink(t, root.join(at)).unwrap();
        link("../o", "out");
        link("../r_evil", "evil");
        link("a", "in");
        link("a/../../o/s", "sneaky");
        link("loop", "loop");
        link(top.join("o/s").to_str().unwrap(), "abs");
        let (set, errors) = RootSet::open([RootSpec::path(&root)]);
        assert!(errors.is_empty());
        Fixture {
            _tmp: tmp,
            set,
            prefix: format!("file://{}", root.display()),
        }
    })
}

fuzz_target!(|data: &[u8]| {
    let Ok(tail) = std::str::from_utf8(data) else {
        return;
    };
    let f = fixture();
    // Half the inputs are rooted in the fixture, so the check reaches the filesystem.
    let raw = if tail.starts_with('/') {
        format!("{}{tail}", f.prefix)
    } else {
        tail.to_owned()
    };
    let opts = CheckOptions::default();
    if let Verdict::Allow(a) = f.set.check_str(&raw, &opts) {
        let root = &f.set.roots()[a.root];
        assert!(
            a.canonical.starts_with(root.uri()) || a.canonical.starts_with(root.real_uri()),
            "{raw} allowed outside the root"
        );
        if a.kind == FileKind::Regular {
            if let Ok(read) = f.set.read(&a, 1 << 16, &opts) {
                assert_ne!(read.bytes, SECRET, "{raw} read the secret");
            }
        }
    }
});
