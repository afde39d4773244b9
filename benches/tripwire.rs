//! The content tripwire's cost per server message (issue 13, item 4): how fast a message
//! without a hit is searched, for the fingerprints of a realistic root (a `.env` with a
//! dozen secrets, a PEM private key, a 64 KiB binary key store), next to a plain `memchr`
//! pass over the same bytes (the floor of any search). Messages are JSON-RPC results
//! holding source-code-like text: 1 KiB, 64 KiB and 1 MiB, plain, and with `\uXXXX`
//! escapes (which take the decoded view too). Also: the time to build the fingerprints.
//!
//! ```text
//! cargo bench --bench tripwire -- --warm-up-time 1 --measurement-time 3
//! ```

use std::hint::black_box;
use std::path::Path;

use cap_std::ambient_authority;
use cap_std::fs::Dir;
use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use rootfence::sandbox::scan::ScanRules;
use rootfence::tripwire::Fingerprints;

/// Deterministic pseudo-random bytes.
fn noise(n: usize, mut seed: u64) -> Vec<u8> {
    (0..n)
        .map(|_| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            (seed >> 24) as u8
        })
        .collect()
}

fn alnum(n: usize, seed: u64) -> String {
    const A: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
    noise(n, seed)
        .into_iter()
        .map(|b| A[b as usize % A.len()] as char)
        .collect()
}

/// A root with `.env`, `deploy/key.pem` and `vault.p12`, and some ordinary files.
fn root() -> (tempfile::TempDir, std::path::PathBuf) {
    let t = tempfile::tempdir().unwrap();
    let root = t.path().canonicalize().unwrap();
    let mut env = String::from("# app\nNODE_ENV=production\nPORT=3000\n");
    for i in 0..12 {
        env.push_str(&format!("SECRET_{i}=sk_live_{}\n", alnum(32, i + 1)));
    }
    env.push_str(&format!(
        "DATABASE_URL=postgres://app:{}@db:5432/app\n",
        alnum(16, 99)
    ));
    std::fs::write(root.join(".env"), env).unwrap();
    let mut pem = String::from("-----BEGIN PRIVATE KEY-----\n");
    let body = alnum(64 * 26, 7);
    for line in body.as_bytes().chunks(64) {
        pem.push_str(std::str::from_utf8(line).unwrap());
        pem.push('\n');
    }
    pem.push_str("-----END PRIVATE KEY-----\n");
    std::fs::create_dir_all(root.join("deploy")).unwrap();
    std::fs::write(root.join("deploy/key.pem"), pem).unwrap();
    std::fs::write(root.join("vault.p12"), noise(64 << 10, 3)).unwrap();
    for i in 0..200 {
        std::fs::write(root.join(format!("f{i}.rs")), "fn main() {}\n").unwrap();
    }
    (t, root)
}

fn rules() -> ScanRules {
    let deny: Vec<String> = ["**/.env", "**/.env.*", "**/*.pem", "**/*.key", "**/*.p12"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    ScanRules::new(&deny, &[]).unwrap()
}

/// A `tools/call` result whose text is source-code-like ASCII of `n` bytes, JSON-encoded;
/// with `escapes`, one character in 64 is written as a `\u` escape.
fn message(n: usize, escapes: bool) -> Vec<u8> {
    const CODE: &str = "    let mut total = 0usize;\n    for (i, item) in items.iter().enumerate() {\n        if item.len() > 42 { total += i * 3; }\n    }\n    // see https://example.com/docs/v2/guide#section-4\n";
    let mut text = String::new();
    while text.len() < n {
        text.push_str(CODE);
    }
    text.truncate(n);
    let mut body = serde_json::to_string(&text).unwrap();
    if escapes {
        body = body
            .char_indices()
            .map(|(i, c)| {
                if i % 64 == 17 && c.is_ascii_alphabetic() {
                    format!("\\u{:04x}", c as u32)
                } else {
                    c.to_string()
                }
            })
            .collect();
    }
    format!(
        r#"{{"jsonrpc":"2.0","id":7,"result":{{"content":[{{"type":"text","text":{body}}}],"isError":false}}}}"#
    )
    .into_bytes()
}

fn bench(c: &mut Criterion) {
    let (_t, root) = root();
    let dir = Dir::open_ambient_dir(&root, ambient_authority()).unwrap();
    let rules = rules();
    let roots: [(&Dir, &Path); 1] = [(&dir, root.as_path())];
    let fp = Fingerprints::build(&rules, &roots, &[root.as_path()]);
    eprintln!(
        "tripwire: {} files, {} patterns, built in {:?}",
        fp.files(),
        fp.patterns(),
        fp.built_in
    );
    assert_eq!(fp.files(), 3);

    c.bench_function("tripwire build (3 denied files, 200 others)", |b| {
        b.iter(|| black_box(Fingerprints::build(&rules, &roots, &[root.as_path()])))
    });

    let mut g = c.benchmark_group("tripwire check, no hit");
    for (label, n) in [("1KiB", 1 << 10), ("64KiB", 64 << 10), ("1MiB", 1 << 20)] {
        for escapes in [false, true] {
            let msg = message(n, escapes);
            assert!(
                fp.check(&msg).is_none(),
                "the benchmark message must not hit"
            );
            g.throughput(Throughput::Bytes(msg.len() as u64));
            let name = if escapes {
                format!("{label} with \\u escapes")
            } else {
                label.to_owned()
            };
            g.bench_function(&name, |b| b.iter(|| black_box(fp.check(black_box(&msg)))));
            if !escapes {
                g.bench_function(format!("{label} memchr floor"), |b| {
                    b.iter(|| black_box(memchr::memchr_iter(b'\x01', black_box(&msg)).count()))
                });
            }
        }
    }
    g.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default();
    targets = bench
}
criterion_main!(benches);
