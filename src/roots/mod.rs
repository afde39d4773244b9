//! The effective root set: each root canonicalized and held as one directory descriptor,
//! matched component-wise, with resolution beneath the root decided by the kernel.
//!
//! Owned by issue 3 (checks), issue 6 (host roots ∩ operator bounds), issue 12 (links that
//! stay inside, hard links) and issue 14 (list pages, [`RootSet::check_page`]).
//!
//! # How a check decides
//!
//! 1. The URI is already canonical ([`FileUri`]): absolute, decoded once, no dot segments.
//! 2. It is matched against every root's declared path *and* its real path (symbolic links
//!    resolved when the root was opened), name by name: `/srv/root_evil` is never inside
//!    `/srv/root` (CVE-2025-53110). The deepest matching root is tried first; if it denies,
//!    shallower matching roots are tried, because a path that leaves a nested root may
//!    still stay inside an enclosing one. With no match the verdict is `outside_roots`.
//! 3. If the input text had `..` segments, each directory a `..` stepped out of must be a
//!    real directory strictly inside the root (not a symbolic link, file, or missing
//!    name), so the kernel's reading of the original text and the canonical form agree
//!    (see [`crate::uri`]).
//! 4. The remainder below the root is resolved beneath the root's descriptor
//!    ([`crate::fsaccess`]) with `O_PATH`, which never blocks and needs no read permission:
//!    symbolic links that stay inside are followed, relative ones and absolute ones that
//!    name a place inside the same root (by its real or declared path); any that lead out
//!    (absolute elsewhere, `..` above the root, `/proc` magic links) give `symlink_escape`
//!    (CVE-2025-53109) or `symlink_loop`; loops give `symlink_loop` at once.
//! 5. A path that does not exist yet is judged by its deepest existing ancestor (which
//!    must be a directory reached beneath the root) plus the remaining names, which must
//!    not exist at all: a dangling symbolic link there is refused, because where it leads
//!    once its target is created cannot be decided now.
//! 6. A non-directory with more than one hard link is judged by the hard-link stance
//!    ([`CheckOptions`]): refused outright (`deny_hard_links`), or refused when it was linked
//!    during the session (`new_links_since`: its status-change time, and its directory's,
//!    are at or after the session's start), or allowed.
//!
//! An allow verdict is a statement about the moment of the check. Reads go through
//! [`RootSet::read`], which resolves beneath the same descriptor again (so a file swapped
//! for an escaping link in between is refused by the kernel), checks the inode is the one
//! that was checked when one was, applies the hard-link stance to the file opened, and
//! reports where the opened file lies so the caller can judge it again.

mod batch;

use std::io;
use std::os::fd::AsFd;
use std::path::{Path, PathBuf};

use cap_std::fs::Dir;

use crate::fsaccess::{self, Beneath, Failure, FileRead, Found, FsError};
use crate::uri::{FileUri, Reason, UriError};

pub use crate::fsaccess::{FileKind, HardlinkStance, Stamp, SymlinkStance};
pub use batch::PageVerdict;

/// A root as named by the operator (`--root`) or the host (`roots/list`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RootSpec {
    location: Location,
    name: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Location {
    Uri(String),
    Path(PathBuf),
}

impl RootSpec {
    /// A root given as a `file:` URI (untrusted text; parsed strictly when opened).
    pub fn uri(raw: impl Into<String>) -> RootSpec {
        RootSpec {
            location: Location::Uri(raw.into()),
            name: None,
        }
    }

    /// A root given as an absolute path (make relative paths absolute first).
    pub fn path(path: impl Into<PathBuf>) -> RootSpec {
        RootSpec {
            location: Location::Path(path.into()),
            name: None,
        }
    }

    /// The same root with a display name (the `name` of an MCP `Root`).
    pub fn with_name(mut self, name: impl Into<String>) -> RootSpec {
        self.name = Some(name.into());
        self
    }

    /// The root as it was given, for messages.
    pub fn location(&self) -> String {
        match &self.location {
            Location::Uri(u) => u.clone(),
            Location::Path(p) => p.display().to_string(),
        }
    }

    fn to_uri(&self) -> Result<FileUri, UriError> {
        match &self.location {
            Location::Uri(u) => FileUri::parse(u),
            Location::Path(p) => FileUri::from_path(p),
        }
    }
}

/// A root that could not be opened.
#[derive(Debug, thiserror::Error)]
#[error("root `{location}` {kind}")]
pub struct RootError {
    /// The root as it was given.
    pub location: String,
    /// What went wrong.
    pub kind: RootErrorKind,
}

/// What went wrong opening a root.
#[non_exhaustive]
#[derive(Debug, thiserror::Error)]
pub enum RootErrorKind {
    /// Not a usable file URI or absolute path.
    #[error("is not a local file: uri or absolute path: {0}")]
    Invalid(UriError),
    /// Nothing exists there.
    #[error("does not exist (hint: create the directory, or fix the root's path)")]
    NotFound,
    /// Exists but is not a directory.
    #[error("is not a directory (hint: a root must be a directory; name its parent instead)")]
    NotADirectory,
    /// The process may not open it.
    #[error("cannot be opened: permission denied (hint: rootfence needs search permission on it)")]
    PermissionDenied,
    /// Its real path cannot be expressed as a file URI.
    #[error("resolves to `{real}`, which cannot be named as a file: uri: {err}")]
    UnnamableRealPath {
        /// The real path.
        real: String,
        /// Why it cannot be named.
        err: UriError,
    },
    /// Any other error.
    #[error("cannot be opened: {0}")]
    Io(io::Error),
}

/// One root: its canonical URI, its real path, and the directory capability that every
/// check and read beneath it goes through.
#[derive(Debug)]
pub struct Root {
    /// Shared: every decision inside the root names it (a page of 10,000 entries too).
    uri: std::sync::Arc<FileUri>,
    real: FileUri,
    name: Option<String>,
    dir: Dir,
    dev: u64,
    ino: u64,
}

impl Root {
    /// The root's canonical URI as declared.
    pub fn uri(&self) -> &FileUri {
        &self.uri
    }

    /// [`Root::uri`], shared (a clone is a reference count, not a copy).
    pub fn shared_uri(&self) -> &std::sync::Arc<FileUri> {
        &self.uri
    }

    /// The root's real path (symbolic links resolved when it was opened), as a URI.
    pub fn real_uri(&self) -> &FileUri {
        &self.real
    }

    /// The display name the host gave, if any.
    pub fn name(&self) -> Option<&str> {
        self.name.as_deref()
    }

    /// The directory capability.
    pub fn dir(&self) -> &Dir {
        &self.dir
    }

    /// Device and inode of the root directory.
    pub fn identity(&self) -> (u64, u64) {
        (self.dev, self.ino)
    }

    /// The forms a URI may name this root by: declared, then real if it differs.
    fn forms(&self) -> impl Iterator<Item = &FileUri> {
        std::iter::once(&*self.uri).chain((self.real != *self.uri).then_some(&self.real))
    }

    /// The root as resolution beneath it needs it: its descriptor and the absolute paths
    /// an absolute symbolic link may name a place inside it by.
    pub(crate) fn beneath(&self) -> Beneath<'_> {
        Beneath::new(
            self.dir.as_fd(),
            Path::new(self.real.path()),
            Path::new(self.uri.path()),
        )
    }

    /// The same root, sharing nothing but the directory it holds (a duplicated
    /// descriptor): no path is looked up again.
    pub fn try_clone(&self) -> io::Result<Root> {
        Ok(Root {
            uri: self.uri.clone(),
            real: self.real.clone(),
            name: self.name.clone(),
            dir: self.dir.try_clone()?,
            dev: self.dev,
            ino: self.ino,
        })
    }

    /// Whether `other` is this root or lies beneath it, as the kernel resolves it: `other`'s
    /// real path, expressed below this root's real path, resolved beneath this root's
    /// descriptor (links inside followed), must be `other`'s very directory (same device
    /// and inode). A root named through a link that leads elsewhere is not inside, whatever
    /// its spelling.
    pub fn contains(&self, other: &Root) -> bool {
        let Some(rel) = other.real.relative_to(&self.real) else {
            return false;
        };
        let stance = SymlinkStance::FollowWithinRoot;
        let Ok(r) = fsaccess::resolve(&self.beneath(), Path::new(rel), stance, true) else {
            return false;
        };
        r.found.kind == FileKind::Directory && (r.found.dev, r.found.ino) == (other.dev, other.ino)
    }
}

/// How a check treats what it finds.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CheckOptions {
    /// Whether symbolic links inside a root are followed.
    pub symlinks: SymlinkStance,
    /// Refuse non-directories with more than one hard link (`hard_link`).
    pub deny_hard_links: bool,
    /// Refuse non-directories with more than one hard link whose status changed at or after
    /// this moment (a `link(2)` or `rename(2)` updates it), unless their directory is older
    /// than it (then no name in it was added since). `None`: no such rule. Set to the
    /// session's start ([`Stamp::now`] before the server runs), this refuses links made
    /// during the session and keeps those that predate it.
    pub new_links_since: Option<Stamp>,
}

impl CheckOptions {
    /// The options for a hard-link stance, with the session starting at `session_start`.
    /// The start is taken to the whole second: a filesystem that keeps coarser inode times
    /// (ext4 with 128-byte inodes keeps seconds) truncates a link's time, and a link made in
    /// the session's first second must still count as made during the session.
    pub fn with_hardlinks(mut self, stance: HardlinkStance, session_start: Stamp) -> Self {
        self.deny_hard_links = stance == HardlinkStance::Deny;
        self.new_links_since =
            (stance == HardlinkStance::AllowPreexisting).then(|| session_start.whole_second());
        self
    }
}

/// Why a file with several hard links is refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum LinkRefusal {
    /// The stance refuses every such file.
    Denied,
    /// It was linked (or changed status) during the session, in a directory that changed
    /// too.
    New,
}

/// The hard-link stance on what a resolution found at `path` (a link-free path beneath
/// `b`). Looks at the directory holding it only when the file itself is new.
pub(crate) fn link_refusal(
    b: &Beneath<'_>,
    found: &Found,
    path: &Path,
    opts: &CheckOptions,
) -> Option<LinkRefusal> {
    if !found.is_linked() {
        return None;
    }
    if opts.deny_hard_links {
        return Some(LinkRefusal::Denied);
    }
    let since = opts.new_links_since?;
    if found.changed < since {
        return None;
    }
    // The file changed during the session; a directory unchanged since then holds only
    // names that predate it (adding or renaming a name updates the directory).
    match fsaccess::parent_changed(b, path) {
        Some(dir) if dir < since => None,
        _ => Some(LinkRefusal::New),
    }
}

/// The outcome of a check.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// Inside a root.
    Allow(Allowed),
    /// Refused, with a stable reason.
    Deny(Denied),
}

impl Verdict {
    /// Whether this is an allow.
    pub fn is_allow(&self) -> bool {
        matches!(self, Verdict::Allow(_))
    }

    /// The reason of a denial (None for an allow).
    pub fn reason(&self) -> Option<Reason> {
        match self {
            Verdict::Allow(_) => None,
            Verdict::Deny(d) => Some(d.reason),
        }
    }

    /// The canonical URI, when the input parsed.
    pub fn canonical(&self) -> Option<&FileUri> {
        match self {
            Verdict::Allow(a) => Some(&a.canonical),
            Verdict::Deny(d) => d.canonical.as_ref(),
        }
    }
}

/// An allowed URI.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Allowed {
    /// Index of the root in [`RootSet::roots`].
    pub root: usize,
    /// The canonical URI (what to forward).
    pub canonical: FileUri,
    /// The path below the root (empty for the root itself), resolved beneath its `Dir`.
    pub relative: PathBuf,
    /// What is there ([`FileKind::Missing`] if nothing yet).
    pub kind: FileKind,
    /// Hard-link count (0 when missing). More than one on a non-directory: the same inode
    /// may also be reachable from outside the root.
    pub nlink: u64,
    /// Device and inode of what was checked (None when missing).
    pub file_id: Option<(u64, u64)>,
    /// Where the kernel's resolution lands, relative to the root's real directory (every
    /// symbolic link followed; for a missing path, its deepest existing ancestor resolved plus
    /// the remaining names). Equal to `relative` when no link was involved.
    pub resolved: PathBuf,
}

/// A refused URI.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Denied {
    /// The stable reason code.
    pub reason: Reason,
    /// Human explanation, naming the input.
    pub detail: String,
    /// The canonical URI, when the input parsed.
    pub canonical: Option<FileUri>,
    /// The root the URI was judged against, if it matched one.
    pub root: Option<usize>,
}

/// The effective roots.
#[derive(Debug, Default)]
pub struct RootSet {
    roots: Vec<Root>,
    /// Directory listings kept between list pages (`batch.rs`).
    listings: batch::Listings,
}

impl RootSet {
    /// A set with no roots: every check is `outside_roots`.
    pub fn empty() -> RootSet {
        RootSet::default()
    }

    /// A set of roots already opened (in this order).
    pub fn from_roots(roots: Vec<Root>) -> RootSet {
        RootSet {
            roots,
            listings: batch::Listings::default(),
        }
    }

    /// The roots, taken out of the set.
    pub fn into_roots(self) -> Vec<Root> {
        self.roots
    }

    /// Opens each root once. A root that fails is reported and left out; the others are
    /// still opened. Roots keep their order (indices in verdicts refer to it).
    pub fn open(specs: impl IntoIterator<Item = RootSpec>) -> (RootSet, Vec<RootError>) {
        let mut roots = Vec::new();
        let mut errors = Vec::new();
        for spec in specs {
            match open_one(&spec) {
                Ok(root) => roots.push(root),
                Err(kind) => errors.push(RootError {
                    location: spec.location(),
                    kind,
                }),
            }
        }
        (RootSet::from_roots(roots), errors)
    }

    /// The roots, in order.
    pub fn roots(&self) -> &[Root] {
        &self.roots
    }

    /// Whether there are no roots.
    pub fn is_empty(&self) -> bool {
        self.roots.is_empty()
    }

    /// Parses untrusted text and checks it.
    pub fn check_str(&self, raw: &str, opts: &CheckOptions) -> Verdict {
        match FileUri::parse(raw) {
            Ok(uri) => self.check(&uri, opts),
            Err(e) => Verdict::Deny(Denied {
                reason: e.reason,
                detail: e.detail,
                canonical: None,
                root: None,
            }),
        }
    }

    /// Decides whether `uri` names something inside a root (see the module docs).
    pub fn check(&self, uri: &FileUri, opts: &CheckOptions) -> Verdict {
        // (root index, matched form) of every root the URI is inside, deepest first.
        let mut matches: Vec<(usize, &FileUri)> = Vec::new();
        for (i, root) in self.roots.iter().enumerate() {
            if let Some(form) = root
                .forms()
                .filter(|f| uri.starts_with(f))
                .max_by_key(|f| f.depth())
            {
                matches.push((i, form));
            }
        }
        if matches.is_empty() {
            return Verdict::Deny(Denied {
                reason: Reason::OutsideRoots,
                detail: if self.roots.is_empty() {
                    format!("{uri} is outside the roots: there are no roots")
                } else {
                    format!("{uri} is not inside any root")
                },
                canonical: Some(uri.clone()),
                root: None,
            });
        }
        matches.sort_by_key(|(_, form)| std::cmp::Reverse(form.depth()));
        let mut first_denial = None;
        for (i, form) in matches {
            match self.check_in(i, form, uri, opts) {
                Ok(allowed) => return Verdict::Allow(allowed),
                Err(denied) => {
                    first_denial.get_or_insert(denied);
                }
            }
        }
        Verdict::Deny(first_denial.expect("at least one root matched"))
    }

    fn check_in(
        &self,
        index: usize,
        form: &FileUri,
        uri: &FileUri,
        opts: &CheckOptions,
    ) -> Result<Allowed, Denied> {
        let b = self.roots[index].beneath();
        let deny = denial(index, uri);
        let rel_str = uri
            .relative_to(form)
            .expect("matched roots contain the uri");
        let rel = Path::new(rel_str);

        if let Some(lex) = uri.lexical() {
            for parent in &lex.parents {
                let prel = crate::uri::relative_path(parent, form.path()).filter(|r| !r.is_empty());
                let Some(prel) = prel else {
                    return Err(deny(
                        Reason::DotSegment,
                        format!(
                            "{uri}: a `..` steps out of `{parent}`, which is not strictly inside \
                             the root {form}"
                        ),
                    ));
                };
                let why = match fsaccess::lstat_beneath(&b, Path::new(prel)) {
                    Ok(found) if found.kind == FileKind::Directory => continue,
                    Ok(found) => format!(
                        "which is a {}: the kernel would resolve the original text elsewhere",
                        found.kind
                    ),
                    Err((Failure::NotFound, _)) => {
                        "which does not exist: the kernel would not resolve the original text"
                            .to_owned()
                    }
                    Err((failure, err)) => return Err(deny_failure(&deny, uri, failure, &err)),
                };
                let detail = format!("{uri}: a `..` follows `{parent}`, {why}");
                return Err(deny(Reason::DotSegment, detail));
            }
        }

        let (resolved, found) = match fsaccess::resolve(&b, rel, opts.symlinks, true) {
            Ok(r) => {
                let found = r.found;
                let trailing_dir = uri.lexical().is_some_and(|l| l.trailing_dir);
                if trailing_dir && found.kind != FileKind::Directory {
                    return Err(deny(
                        Reason::NotADirectory,
                        format!(
                            "{uri}: the original text ends in `/`, `.` or `..` but names a {}",
                            found.kind
                        ),
                    ));
                }
                if let Some(why) = link_refusal(&b, &found, &r.path, opts) {
                    return Err(deny(Reason::HardLink, hard_link_detail(uri, &found, why)));
                }
                (r.path, Some(found))
            }
            Err((Failure::NotFound, _)) => {
                let (ancestor, rest) = self.check_missing(index, uri, rel, opts)?;
                (ancestor.join(rest), None)
            }
            Err((failure, err)) => return Err(deny_failure(&deny, uri, failure, &err)),
        };
        Ok(Allowed {
            root: index,
            canonical: uri.clone(),
            relative: rel.to_path_buf(),
            resolved,
            kind: found.map_or(FileKind::Missing, |f| f.kind),
            nlink: found.map_or(0, |f| f.nlink),
            file_id: found.map(|f| (f.dev, f.ino)),
        })
    }

    /// A path that does not resolve: judge it by its deepest existing ancestor. Returns
    /// where that ancestor resolves (below the root's real directory) and the names after
    /// it.
    fn check_missing(
        &self,
        index: usize,
        uri: &FileUri,
        rel: &Path,
        opts: &CheckOptions,
    ) -> Result<(PathBuf, PathBuf), Denied> {
        let b = self.roots[index].beneath();
        let deny = denial(index, uri);
        let names: Vec<&std::ffi::OsStr> = rel.iter().collect();
        for k in (0..names.len()).rev() {
            let ancestor: PathBuf = names[..k].iter().collect();
            match fsaccess::resolve(&b, &ancestor, opts.symlinks, true) {
                Ok(r) if r.found.kind == FileKind::Directory => {
                    // The first missing name must not exist at all: a dangling symbolic
                    // link would lead wherever its target is created.
                    let first_missing = ancestor.join(names[k]);
                    let entry = fsaccess::lstat_beneath(&b, &first_missing);
                    if entry.is_ok_and(|e| e.kind == FileKind::Symlink) {
                        return Err(deny(
                            Reason::DanglingSymlink,
                            format!(
                                "{uri}: `{}` is a dangling symbolic link; where it leads \
                                 once its target exists cannot be decided",
                                first_missing.display()
                            ),
                        ));
                    }
                    let rest: PathBuf = names[k..].iter().collect();
                    return Ok((r.path, rest));
                }
                Ok(r) => {
                    return Err(deny(
                        Reason::NotADirectory,
                        format!(
                            "{uri}: `{}` is a {}, not a directory",
                            ancestor.display(),
                            r.found.kind
                        ),
                    ));
                }
                Err((Failure::NotFound, _)) => continue,
                Err((failure, err)) => return Err(deny_failure(&deny, uri, failure, &err)),
            }
        }
        Err(deny(
            Reason::IoError,
            format!("{uri}: the root directory itself cannot be resolved"),
        ))
    }

    /// The absolute real path an allow verdict resolves to (the root's real path joined with
    /// [`Allowed::resolved`]).
    pub fn real_path(&self, allowed: &Allowed) -> Option<String> {
        self.real_path_at(allowed.root, &allowed.resolved)
    }

    /// The absolute real path of `below` (a resolved, link-free path below root `root`'s
    /// real directory, as [`Allowed::resolved`] or [`FileRead::path`]).
    pub fn real_path_at(&self, root: usize, below: &Path) -> Option<String> {
        let root = self.roots.get(root)?;
        let mut path = root.real_uri().path().to_owned();
        for c in below.components() {
            match c {
                std::path::Component::Normal(name) => {
                    if !path.ends_with('/') {
                        path.push('/');
                    }
                    path.push_str(name.to_str()?);
                }
                std::path::Component::CurDir => {}
                // A resolution beneath the root never climbs or restarts; refuse to guess.
                _ => return None,
            }
        }
        Some(path)
    }

    /// Reads the regular file an allow verdict names, at most `max_bytes`, beneath the same
    /// root. Refused if it is no longer the file that was checked (when one was: a path
    /// that did not exist at check time has no identity to compare, and the caller must
    /// judge the opened file again by [`FileRead::path`]), or if the hard-link stance
    /// refuses the file opened.
    pub fn read(
        &self,
        allowed: &Allowed,
        max_bytes: u64,
        opts: &CheckOptions,
    ) -> Result<FileRead, FsError> {
        let root = self.roots.get(allowed.root).ok_or(FsError::Changed)?;
        let b = root.beneath();
        let read = fsaccess::read_in(&b, &allowed.relative, max_bytes, opts.symlinks)?;
        if allowed.file_id.is_some_and(|id| id != (read.dev, read.ino)) {
            return Err(FsError::Changed);
        }
        let found = Found {
            kind: FileKind::Regular,
            nlink: read.nlink,
            dev: read.dev,
            ino: read.ino,
            size: read.bytes.len() as u64,
            changed: read.changed,
        };
        match link_refusal(&b, &found, &read.path, opts) {
            None => Ok(read),
            Some(LinkRefusal::Denied) => Err(FsError::HardLink { nlink: read.nlink }),
            Some(LinkRefusal::New) => Err(FsError::NewHardLink { nlink: read.nlink }),
        }
    }
}

/// The explanation of a hard-link refusal, with what to do about it.
fn hard_link_detail(uri: &FileUri, found: &Found, why: LinkRefusal) -> String {
    match why {
        LinkRefusal::Denied => format!(
            "{uri} has {} hard links; the same file may be reachable from outside the root \
             (the policy sets roots.hardlinks = \"deny\")",
            found.nlink
        ),
        LinkRefusal::New => format!(
            "{uri} has {} hard links and was linked or changed after this session started; \
             a link the server planted to a file outside the root looks the same (hint: if \
             you made it, restart the session; roots.hardlinks = \"allow\" serves such files)",
            found.nlink
        ),
    }
}

/// The refusal of `uri` judged against root `index`, for a reason and its explanation.
fn denial(index: usize, uri: &FileUri) -> impl Fn(Reason, String) -> Denied + '_ {
    move |reason, detail| Denied {
        reason,
        detail,
        canonical: Some(uri.clone()),
        root: Some(index),
    }
}

fn deny_failure(
    deny: &impl Fn(Reason, String) -> Denied,
    uri: &FileUri,
    failure: Failure,
    err: &io::Error,
) -> Denied {
    let what = match failure {
        Failure::Escape => "a symbolic link leads outside the root".to_owned(),
        Failure::Loop => "too many levels of symbolic links (a loop or a /proc magic link)".into(),
        Failure::SymlinkRefused => "a symbolic link was met and links are not followed".into(),
        Failure::NotADirectory => "a name in the path is not a directory".into(),
        Failure::TooLong => "the path is too long for the operating system".into(),
        Failure::NotFound | Failure::Other => format!("cannot be resolved: {err}"),
    };
    let reason = match failure {
        // A name vanished between two lookups of one check: report it as an I/O error.
        Failure::NotFound => Reason::IoError,
        f => f.reason(),
    };
    deny(reason, format!("{uri}: {what}"))
}

fn open_one(spec: &RootSpec) -> Result<Root, RootErrorKind> {
    let uri = spec.to_uri().map_err(RootErrorKind::Invalid)?;
    let opened = fsaccess::open_root_dir(Path::new(uri.path())).map_err(|e| {
        match (e.kind(), e.raw_os_error()) {
            (io::ErrorKind::NotFound, _) => RootErrorKind::NotFound,
            (io::ErrorKind::NotADirectory, _) | (_, Some(libc::ENOTDIR)) => {
                RootErrorKind::NotADirectory
            }
            (io::ErrorKind::PermissionDenied, _) => RootErrorKind::PermissionDenied,
            _ => RootErrorKind::Io(e),
        }
    })?;
    let real =
        FileUri::from_path(&opened.real_path).map_err(|err| RootErrorKind::UnnamableRealPath {
            real: opened.real_path.display().to_string(),
            err,
        })?;
    Ok(Root {
        uri: uri.into(),
        real,
        name: spec.name.clone(),
        dir: opened.dir,
        dev: opened.dev,
        ino: opened.ino,
    })
}
