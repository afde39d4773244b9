//! The attack tree shared by the URI integration tests: one temporary directory holding a
//! root full of hostile entries, its prefix siblings, and an outside directory with a
//! secret whose bytes must never be served.
#![allow(dead_code)]

use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};

/// The bytes of every file outside the roots. A test that ever sees them has found an escape.
pub const SECRET: &[u8] = b"SECRET-OUTSIDE-THE-ROOT";

/// A built tree. Paths are real (the temp dir is canonicalized), so URIs built from them
/// match the roots' real paths.
pub struct Tree {
    _tmp: tempfile::TempDir,
    /// The temp dir itself.
    pub top: PathBuf,
    /// The main root.
    pub root: PathBuf,
    /// A directory outside every root, holding `secret.txt`.
    pub outside: PathBuf,
    /// A symbolic link to `real_root`, declared as a root.
    pub alias_root: PathBuf,
    /// The directory `alias_root` points to.
    pub real_root: PathBuf,
    /// Kept open so the socket entry stays a live socket.
    _listener: std::os::unix::net::UnixListener,
}

impl Tree {
    /// `file://` + the absolute path `top/rel` (`rel` may hold URI syntax: it is pasted
    /// as is, so a test can put encodings in it).
    pub fn uri(&self, rel: &str) -> String {
        format!("file://{}/{rel}", self.top.display())
    }

    /// `file://` + the main root + `/rel` (pasted as is).
    pub fn in_root(&self, rel: &str) -> String {
        if rel.is_empty() {
            format!("file://{}", self.root.display())
        } else {
            format!("file://{}/{rel}", self.root.display())
        }
    }
}

fn write(path: &Path, bytes: &[u8]) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, bytes).unwrap();
}

/// Builds the tree (see the corpus in `tests/uri_corpus.rs` for what each entry attacks).
pub fn build() -> Tree {
    let tmp = tempfile::tempdir().unwrap();
    let top = std::fs::canonicalize(tmp.path()).unwrap();
    let root = top.join("root");
    let outside = top.join("outside");

    write(&outside.join("secret.txt"), SECRET);
    write(&outside.join("hard_target.txt"), SECRET);
    write(&top.join("root_evil/x.txt"), SECRET);
    write(&top.join("rootx/x.txt"), SECRET);
    write(&top.join("real_root/f.txt"), b"real root file");
    symlink(top.join("real_root"), top.join("alias_root")).unwrap();

    write(&root.join("a.txt"), b"inside a");
    write(&root.join("sub/b.txt"), b"inside b");
    write(&root.join("with space.txt"), b"spaced");
    write(&root.join("café.txt"), b"accented");
    write(&root.join("d1/d2/d3/d4/d5/d6/d7/d8/deep.txt"), b"deep");
    write(&root.join("nested/n.txt"), b"nested");

    // Links that stay inside.
    symlink("sub/b.txt", root.join("link_in_rel")).unwrap();
    symlink("sub", root.join("link_in_dir")).unwrap();
    symlink("link_chain2", root.join("link_chain1")).unwrap();
    symlink("sub/b.txt", root.join("link_chain2")).unwrap();
    symlink("../a.txt", root.join("sub/link_up_in")).unwrap();
    symlink("..", root.join("sub/link_root")).unwrap();
    symlink("../a.txt", root.join("nested/link_to_parent")).unwrap();
    symlink("nonexistent", root.join("dangling_in")).unwrap();
    // Absolute links that name a place inside the same root (issue 12: followed).
    symlink(root.join("a.txt"), root.join("link_in_abs")).unwrap();
    symlink(root.join("sub"), root.join("link_in_abs_dir")).unwrap();
    symlink(root.join("link_in_abs"), root.join("link_in_abs_chain")).unwrap();
    symlink(
        format!("{}/./sub//b.txt", root.display()),
        root.join("link_in_abs_dots"),
    )
    .unwrap();
    symlink(root.join("nonexistent"), root.join("dangling_in_abs")).unwrap();
    symlink(root.join("abs_loop2"), root.join("abs_loop1")).unwrap();
    symlink(root.join("abs_loop1"), root.join("abs_loop2")).unwrap();
    // Through the declared (symlinked) spelling of the alias root, from inside it.
    symlink(
        top.join("alias_root/f.txt"),
        top.join("real_root/via_alias"),
    )
    .unwrap();
    // Links that lead out.
    symlink(outside.join("secret.txt"), root.join("link_out_abs")).unwrap();
    symlink("../outside/secret.txt", root.join("link_out_rel")).unwrap();
    // Absolute, spelled from the root but climbing out with `..`; to the prefix sibling.
    symlink(
        format!("{}/../outside/secret.txt", root.display()),
        root.join("link_abs_dotdot_out"),
    )
    .unwrap();
    symlink(top.join("root_evil/x.txt"), root.join("link_abs_sibling")).unwrap();
    symlink("../outside", root.join("link_out_dir")).unwrap();
    symlink("../root_evil", root.join("evil_rel")).unwrap();
    symlink("../../outside/secret.txt", root.join("sub/link_up_out")).unwrap();
    symlink("../..", root.join("sub/link_above")).unwrap();
    symlink("link_chain_out2", root.join("link_chain_out1")).unwrap();
    symlink("../outside/secret.txt", root.join("link_chain_out2")).unwrap();
    symlink("/proc/self/root/etc/passwd", root.join("proc_link")).unwrap();
    symlink("/proc/self/cwd", root.join("proc_cwd")).unwrap();
    symlink("../outside/nonexistent", root.join("dangling_out")).unwrap();
    symlink(outside.join("newdir"), root.join("dangling_out_abs")).unwrap();
    // Loops.
    symlink("loop2", root.join("loop1")).unwrap();
    symlink("loop1", root.join("loop2")).unwrap();
    symlink("self_loop", root.join("self_loop")).unwrap();
    // A chain of 41 links inside: more than the kernel's 40 follows.
    for i in 0..41 {
        symlink(
            format!("long_chain{}", i + 1),
            root.join(format!("long_chain{i}")),
        )
        .unwrap();
    }
    write(&root.join("long_chain41"), b"end of chain");
    // Special files.
    nix::unistd::mkfifo(&root.join("fifo"), nix::sys::stat::Mode::S_IRWXU).unwrap();
    let listener = std::os::unix::net::UnixListener::bind(root.join("sock")).unwrap();
    std::fs::hard_link(outside.join("hard_target.txt"), root.join("hard_out")).unwrap();

    Tree {
        _tmp: tmp,
        alias_root: top.join("alias_root"),
        real_root: top.join("real_root"),
        top,
        root,
        outside,
        _listener: listener,
    }
}
