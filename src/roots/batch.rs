//! List pages checked per directory (issue 14): a page of `file:` entries is judged from one
//! resolution and one read of each distinct directory, not one resolution per entry.
//!
//! For each directory the page names (per root), rootfence resolves it once beneath the
//! root, exactly as a single check would (links inside followed, escapes refused), then
//! reads that directory once (`getdents`, entry types from the read). An entry whose name
//! the read shows as a regular file, directory or other non-link is allowed from that: its
//! parent is judged, and a single name beneath a held directory descriptor cannot lead
//! anywhere else. Everything else takes the single check ([`RootSet::check`]), which gives
//! the same verdict and explanation as for any other URI: links (their targets need
//! resolving), names the read did not show (missing, or beyond the read budget), entries of
//! unknown type, URIs with dot-segment obligations, the roots themselves, URIs outside every
//! root.
//!
//! Hard links are where a listing alone is not enough. Under `deny` every non-directory is
//! looked at (`fstatat` of its one name: its link count). Under `allow-preexisting` the
//! directory's own status-change time decides first: a directory unchanged since the session
//! started holds only names that predate it (adding or renaming a name updates it), so its
//! entries need nothing more; in a directory changed since, each non-directory is looked at.
//!
//! What this gives, precisely: an allowed entry was, when its directory was read, an entry
//! of the directory its parent path resolved to beneath the root, of a type that is not a
//! link. That is the same statement about a moment that a single check makes; a file
//! swapped afterwards is the business of the read that uses it, which checks again.
//!
//! Listings kept between pages. Reading a large directory is most of a page's cost (ext4
//! hashes and sorts every entry of an indexed directory on each read), and hosts list the
//! same directories again and again. So what a read showed (names and types; never what it
//! did not show) is kept for the directory it read, by device and inode, and used instead
//! of reading it again while the directory's status-change time is still the one it had
//! before the read. That is sound because no name of a directory can change what it is
//! without a change to the directory's entries (a file becomes a link only by a name being
//! removed, created or renamed there), every such change stamps the directory with a time
//! at or after the moment it happened ([`Stamp`]), and a listing is only kept when the
//! directory's time was already before the clock when the read began: any later change
//! leaves a different time. Only directories on local filesystems whose times this kernel
//! keeps are listed once for many pages ([`fsaccess::keeps_own_times`]); every page still
//! resolves each directory beneath the root (and looks at its time), and links, hard-link
//! looks and the single checks are as above.

use std::collections::HashMap;
use std::hash::BuildHasher;
use std::sync::{Arc, Mutex};

/// The page's maps: keys are names the server chose, so the hasher is seeded per process
/// (foldhash's `RandomState`); SipHash's stronger guarantee costs more than the whole
/// lookup here, and a page is bounded by the line limit.
type PageMap<K, V> = HashMap<K, V, foldhash::fast::RandomState>;
use std::mem::MaybeUninit;
use std::os::fd::AsFd;
use std::path::Path;

use super::{CheckOptions, RootSet, Verdict};
use crate::fsaccess::{self, EntryKind, FileKind, Stamp};
use crate::uri::{FileUri, PageUri};

/// The verdict on one entry of a page.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PageVerdict {
    /// Inside root `root`, judged from its directory's listing.
    Allow {
        /// Index of the root in [`RootSet::roots`].
        root: usize,
        /// What the listing says is there.
        kind: FileKind,
        /// The entry's absolute real path, when it differs from the URI's path (the
        /// directory was reached through a link, or the URI names the root by a path
        /// that is not its real one). The policy's path rules judge both.
        real: Option<String>,
    },
    /// The single check's verdict (see the module docs for when).
    Checked(Box<Verdict>),
}

/// One directory of a page: the entries that name something in it.
struct Group<'u> {
    root: usize,
    /// The URI matched the root by its real path (else by its declared one).
    by_real: bool,
    parent: &'u str,
    members: Vec<(usize, &'u str)>,
}

/// A canonical path's directory and last name (`None` for `/`, which has no name).
fn split_name(path: &str) -> Option<(&str, &str)> {
    let cut = crate::uri::last_slash(path)?;
    let name = &path[cut + 1..];
    if name.is_empty() {
        return None;
    }
    Some((if cut == 0 { "/" } else { &path[..cut] }, name))
}

/// Whether `dir` is the path `base` joined with `rel` (`rel` empty: `base` itself).
fn spells(dir: &str, base: &str, rel: &str) -> bool {
    if rel.is_empty() {
        return dir == base;
    }
    let base = base.trim_end_matches('/');
    dir.len() == base.len() + 1 + rel.len()
        && dir.starts_with(base)
        && dir.as_bytes()[base.len()] == b'/'
        && dir.ends_with(rel)
}

/// How many entries of a directory rootfence reads for a page: enough for every name the
/// page wants from it many times over, bounded so that a page naming a few files of a huge
/// directory costs a bounded read (the names not seen by then take the single check).
fn read_budget(wanted: usize) -> usize {
    wanted.saturating_mul(16).saturating_add(1024)
}

/// How many names the kept listings hold at most, all directories together (a few MiB);
/// past it they are dropped and read again.
const KEPT_NAMES: usize = 1 << 16;

/// What one read of a directory showed: its names and their types, and the directory's
/// status-change time before the read.
struct Listing {
    changed: Stamp,
    kinds: Names,
    /// The read reached the directory's end (else it stopped once it had seen every name
    /// wanted, or at the budget).
    complete: bool,
}

/// Names and what the read said each is: the names' bytes in one buffer, and a table of
/// where each lies. A page looks up thousands of names; kept together (not a heap block
/// each), they stay in cache between lookups.
struct Names {
    bytes: Vec<u8>,
    /// (offset, length, kind) of each name in `bytes`.
    table: hashbrown::HashTable<(u32, u32, EntryKind)>,
    hasher: foldhash::fast::RandomState,
}

impl Names {
    fn with_capacity(n: usize) -> Names {
        Names {
            bytes: Vec::with_capacity(n.saturating_mul(16)),
            table: hashbrown::HashTable::with_capacity(n),
            hasher: Default::default(),
        }
    }

    fn len(&self) -> usize {
        self.table.len()
    }

    fn name(&self, &(at, len, _): &(u32, u32, EntryKind)) -> &[u8] {
        &self.bytes[at as usize..at as usize + len as usize]
    }

    /// What the read said `name` is, if it showed it.
    fn get(&self, name: &[u8]) -> Option<EntryKind> {
        let hash = self.hasher.hash_one(name);
        self.table
            .find(hash, |e| self.name(e) == name)
            .map(|&(_, _, kind)| kind)
    }

    /// Adds `name` unless it is there (the first sighting stands); returns whether it was
    /// added. A name past what the offsets can hold is not added (it is then not shown, and
    /// takes the single check).
    fn insert(&mut self, name: &[u8], kind: EntryKind) -> bool {
        let hash = self.hasher.hash_one(name);
        if self.table.find(hash, |e| self.name(e) == name).is_some() {
            return false;
        }
        let (Ok(at), Ok(len)) = (u32::try_from(self.bytes.len()), u32::try_from(name.len())) else {
            return false;
        };
        self.bytes.extend_from_slice(name);
        let (bytes, hasher) = (&self.bytes, &self.hasher);
        self.table
            .insert_unique(hash, (at, len, kind), |&(at, len, _)| {
                hasher.hash_one(&bytes[at as usize..at as usize + len as usize])
            });
        true
    }
}

/// The listings kept between pages, by the directory's device and inode (see the module
/// docs).
#[derive(Default)]
pub(super) struct Listings {
    kept: Mutex<PageMap<(u64, u64), Arc<Listing>>>,
}

impl std::fmt::Debug for Listings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let n = self.kept.lock().map(|k| k.len()).unwrap_or(0);
        write!(f, "Listings({n} directories)")
    }
}

impl Listings {
    /// The listing kept for directory `(dev, ino)`, if its time is still `changed`.
    fn get(&self, key: (u64, u64), changed: Stamp) -> Option<Arc<Listing>> {
        let kept = crate::relock(&self.kept);
        kept.get(&key)
            .filter(|l| l.changed == changed)
            .map(Arc::clone)
    }

    fn put(&self, key: (u64, u64), listing: Arc<Listing>) {
        if listing.kinds.len() > KEPT_NAMES {
            return;
        }
        let mut kept = crate::relock(&self.kept);
        kept.remove(&key);
        let held: usize = kept.values().map(|l| l.kinds.len()).sum();
        if held + listing.kinds.len() > KEPT_NAMES {
            kept.clear();
        }
        kept.insert(key, listing);
    }
}

impl RootSet {
    /// Checks a page of URIs (a `resources/list` result): the same verdicts as
    /// [`RootSet::check`] on each, in order, from one resolution and one read of each
    /// directory the page names (see the module docs).
    pub fn check_page(&self, uris: &[PageUri<'_>], opts: &CheckOptions) -> Vec<PageVerdict> {
        // What the per-directory pass settled for each entry (`None`: the single check).
        let mut out: Vec<Option<PageVerdict>> = vec![None; uris.len()];
        let mut groups: Vec<Group<'_>> = Vec::new();
        let mut by_key: PageMap<(usize, bool, &str), usize> = PageMap::default();
        // Every form of every root, deepest first: the first that holds a URI is its match.
        let mut forms: Vec<(usize, bool, &FileUri)> = Vec::with_capacity(2 * self.roots.len());
        for (i, root) in self.roots.iter().enumerate() {
            forms.push((i, false, root.uri()));
            if root.real_uri() != root.uri() {
                forms.push((i, true, root.real_uri()));
            }
        }
        forms.sort_by_key(|(_, _, f)| std::cmp::Reverse(f.depth()));
        // Pages list a directory's entries together: the latest directory, and the group
        // its entries join (`None`: it lies outside every root).
        let mut dir: Option<(&str, Option<usize>)> = None;
        // The names in the latest directory that are a root's form themselves.
        let mut rooted: Vec<&str> = Vec::new();
        for (i, uri) in uris.iter().enumerate() {
            if uri.lexical().is_some() {
                continue;
            }
            let path = uri.path();
            let Some((parent, name)) = split_name(path) else {
                // `/`: a root itself, or outside every root.
                continue;
            };
            // The entry's match is its directory's (the deepest form holding a name of a
            // directory holds the directory), unless the entry is a form itself.
            let group = match dir {
                Some((d, g)) if d == parent => g,
                _ => {
                    rooted.clear();
                    rooted.extend(forms.iter().filter_map(|(_, _, f)| {
                        split_name(f.path())
                            .filter(|(d, _)| *d == parent)
                            .map(|(_, n)| n)
                    }));
                    let g = forms
                        .iter()
                        .find_map(|&(root, by_real, f)| {
                            Some((root, by_real, crate::uri::relative_path(parent, f.path())?))
                        })
                        .map(|(root, by_real, rel)| {
                            *by_key.entry((root, by_real, rel)).or_insert_with(|| {
                                groups.push(Group {
                                    root,
                                    by_real,
                                    parent: rel,
                                    members: Vec::new(),
                                });
                                groups.len() - 1
                            })
                        });
                    dir = Some((parent, g));
                    g
                }
            };
            let Some(g) = group else {
                continue;
            };
            if rooted.contains(&name) {
                continue;
            }
            groups[g].members.push((i, name));
        }

        let mut buf: Vec<MaybeUninit<u8>> = Vec::new();
        for g in &groups {
            self.judge_group(g, opts, &mut buf, &mut out);
        }
        out.into_iter()
            .zip(uris)
            .map(|(slot, uri)| {
                slot.unwrap_or_else(|| {
                    PageVerdict::Checked(Box::new(self.check(&uri.file_uri(), opts)))
                })
            })
            .collect()
    }

    /// Judges one directory's entries from one resolution and one read of it; entries it
    /// cannot settle are left for the single check.
    fn judge_group(
        &self,
        g: &Group<'_>,
        opts: &CheckOptions,
        buf: &mut Vec<MaybeUninit<u8>>,
        out: &mut [Option<PageVerdict>],
    ) {
        let root = &self.roots[g.root];
        let b = root.beneath();
        let Ok(dir) = fsaccess::resolve(&b, Path::new(g.parent), opts.symlinks, true) else {
            return;
        };
        if dir.found.kind != FileKind::Directory {
            return;
        }
        // The form of the root the group's URIs named it by.
        let form = if g.by_real {
            root.real_uri()
        } else {
            root.uri()
        };
        // The entries' real directory, when it is not what the URIs spell.
        let real_dir = if g.by_real && !dir.via_link {
            None
        } else {
            match self.real_path_at(g.root, &dir.path) {
                // The real directory is the one the URIs spell (the usual case: a root
                // named by its real path, no link on the way): nothing more to judge, and
                // no path to build per entry.
                Some(d) if spells(&d, form.path(), g.parent) => None,
                Some(d) => Some(d),
                None => return,
            }
        };
        let fresh = opts.new_links_since.is_some_and(|s| dir.found.changed >= s);
        let look_at_each = opts.deny_hard_links || fresh;

        let Some(listing) = self.listing(g, &dir, buf) else {
            return;
        };

        for &(i, name) in &g.members {
            let Some(EntryKind::Known(kind)) = listing.kinds.get(name.as_bytes()) else {
                continue;
            };
            if kind == FileKind::Symlink {
                continue;
            }
            if look_at_each && kind != FileKind::Directory {
                match fsaccess::stat_entry(dir.fd.as_fd(), name) {
                    Ok(f) if f.kind == kind => {
                        // A linked file here takes the single check, which refuses it with
                        // its explanation (or allows it, when it predates the session).
                        if f.is_linked() {
                            continue;
                        }
                    }
                    _ => continue,
                }
            }
            let real = real_dir.as_ref().map(|d| {
                let mut p = String::with_capacity(d.len() + 1 + name.len());
                p.push_str(d);
                if !p.ends_with('/') {
                    p.push('/');
                }
                p.push_str(name);
                p
            });
            out[i] = Some(PageVerdict::Allow {
                root: g.root,
                kind,
                real,
            });
        }
    }

    /// What a read of the group's directory shows of the names the page wants from it: the
    /// listing kept from an earlier page while the directory is unchanged (see the module
    /// docs), else one read now, kept when it may be.
    fn listing(
        &self,
        g: &Group<'_>,
        dir: &fsaccess::Resolved,
        buf: &mut Vec<MaybeUninit<u8>>,
    ) -> Option<Arc<Listing>> {
        let key = (dir.found.dev, dir.found.ino);
        let local = fsaccess::keeps_own_times(dir.fd.as_fd());
        if local {
            // A listing that stopped early serves the pages whose names it holds.
            if let Some(kept) = self.listings.get(key, dir.found.changed).filter(|l| {
                l.complete
                    || g.members
                        .iter()
                        .all(|(_, n)| l.kinds.get(n.as_bytes()).is_some())
            }) {
                return Some(kept);
            }
        }
        // Stamped before the directory is read: a change after this gives it a time at or
        // after `began`, so a listing is kept only when its time was before.
        let began = Stamp::now();
        let keep = local && dir.found.changed < began;
        let mut wanted: PageMap<&[u8], ()> =
            PageMap::with_capacity_and_hasher(g.members.len(), Default::default());
        for (_, name) in &g.members {
            wanted.insert(name.as_bytes(), ());
        }
        let mut left = wanted.len();
        let mut kinds = Names::with_capacity(wanted.len());
        let stopped = fsaccess::list_dir(
            dir.fd.as_fd(),
            read_budget(wanted.len()),
            buf,
            |name, kind| {
                let name = name.to_bytes();
                // A name seen twice (the directory changed during the read): the first
                // sighting stands, as a single check at that moment would have seen it.
                let want = wanted.contains_key(name);
                if keep || want {
                    let added = kinds.insert(name, kind);
                    if added && want {
                        left -= 1;
                    }
                }
                left > 0
            },
        )
        .ok()?;
        let listing = Arc::new(Listing {
            changed: dir.found.changed,
            kinds,
            complete: !stopped,
        });
        if keep {
            self.listings.put(key, Arc::clone(&listing));
        }
        Some(listing)
    }
}

#[cfg(test)]
mod tests {
    use super::spells;
    use crate::roots::{CheckOptions, PageVerdict, RootSet, RootSpec, Verdict};
    use crate::uri::{FileUri, PageUri, Reason};

    /// The page's verdicts, as `allow` or the denial's reason.
    fn verdicts(set: &RootSet, uris: &[FileUri]) -> Vec<String> {
        set.check_page(&PageUri::page_of(uris), &CheckOptions::default())
            .into_iter()
            .map(|v| match v {
                PageVerdict::Allow { .. } => "allow".to_owned(),
                PageVerdict::Checked(v) => match *v {
                    Verdict::Allow(_) => "allow".to_owned(),
                    Verdict::Deny(d) => d.reason.code().to_owned(),
                },
            })
            .collect()
    }

    /// Names of one directory that are roots themselves (nested roots, by their declared or
    /// their real path) take the single check, and so get the root they are, while their
    /// siblings get the root holding the directory: whether the page gives them as plain
    /// names or parsed.
    #[test]
    fn a_name_that_is_a_root_itself_is_judged_as_that_root() {
        let tmp = tempfile::tempdir().unwrap();
        let top = std::fs::canonicalize(tmp.path()).unwrap();
        for d in ["r/inner", "r/other", "real"] {
            std::fs::create_dir_all(top.join(d)).unwrap();
        }
        std::fs::write(top.join("r/a"), "x").unwrap();
        std::fs::write(top.join("r/z"), "x").unwrap();
        std::os::unix::fs::symlink(top.join("real"), top.join("r/alias")).unwrap();
        let (set, errors) = RootSet::open([
            RootSpec::path(top.join("r")),
            RootSpec::path(top.join("r/inner")),
            RootSpec::path(top.join("r/alias")),
        ]);
        assert!(errors.is_empty(), "{errors:?}");
        let uri = |n: &str| FileUri::parse(&format!("file://{}/{n}", top.display())).unwrap();
        let uris: Vec<FileUri> = ["r/a", "r/inner", "r/alias", "r/other", "r/z", "real", "r"]
            .iter()
            .map(|n| uri(n))
            .collect();
        let page = PageUri::page_of(&uris);
        assert!(
            page.iter()
                .filter(|p| matches!(p, PageUri::Plain(_)))
                .count()
                >= 4,
            "{page:?}"
        );
        for page in [page, uris.iter().map(PageUri::Parsed).collect()] {
            let opts = CheckOptions::default();
            for (v, u) in set.check_page(&page, &opts).into_iter().zip(&uris) {
                let single = set.check(u, &opts);
                match (v, single) {
                    (PageVerdict::Checked(p), s) => assert_eq!(*p, s, "{u}"),
                    (PageVerdict::Allow { root, .. }, Verdict::Allow(a)) => {
                        assert_eq!(root, a.root, "{u}")
                    }
                    (v, s) => panic!("{u}: page {v:?}, single {s:?}"),
                }
            }
        }
    }

    /// A listing's names: the first sighting of a name stands, names that share a prefix or
    /// differ by a byte are told apart, and a name it was not given is not shown.
    #[test]
    fn listing_names_answer_exactly_what_they_were_given() {
        use crate::fsaccess::{EntryKind, FileKind};
        let mut names = super::Names::with_capacity(2);
        let file = EntryKind::Known(FileKind::Regular);
        let dir = EntryKind::Known(FileKind::Directory);
        assert!(names.insert(b"a", file));
        assert!(names.insert(b"ab", dir));
        assert!(!names.insert(b"a", dir), "the first sighting stands");
        assert!(names.insert(b"\xff\x00", EntryKind::Unknown));
        for i in 0..1000u32 {
            assert!(names.insert(format!("f{i}").as_bytes(), file));
        }
        assert_eq!(names.len(), 1003);
        assert_eq!(names.get(b"a"), Some(file));
        assert_eq!(names.get(b"ab"), Some(dir));
        assert_eq!(names.get(b"\xff\x00"), Some(EntryKind::Unknown));
        assert_eq!(names.get(b"f999"), Some(file));
        for absent in [&b""[..], b"b", b"abc", b"\xff", b"f1000", b"F1"] {
            assert_eq!(names.get(absent), None, "{absent:?}");
        }
    }

    /// The listings the set keeps.
    fn kept(set: &RootSet) -> usize {
        set.listings.kept.lock().unwrap().len()
    }

    /// A listing kept from one page serves the next while the directory is unchanged, and
    /// never after a file of it was swapped for a link out of the root: the swap changed
    /// the directory's time, so the next page reads it again and sends the link to the
    /// single check, which refuses it. The swap follows the read at once (most often within
    /// the same tick of the coarse clock): by removing the name and linking it, by an
    /// atomic rename over it, or by exchanging it with a link that was already there when
    /// the listing was kept (`RENAME_EXCHANGE`: no name added or removed).
    #[test]
    fn a_kept_listing_is_not_used_after_a_file_becomes_an_escaping_link() {
        for swap in ["unlink", "rename", "exchange"] {
            let tmp = tempfile::tempdir().unwrap();
            let top = std::fs::canonicalize(tmp.path()).unwrap();
            let dir = top.join("r/d");
            std::fs::create_dir_all(&dir).unwrap();
            std::fs::create_dir(top.join("out")).unwrap();
            std::fs::write(top.join("out/secret"), "s").unwrap();
            for n in ["a", "b", "c"] {
                std::fs::write(dir.join(n), "x").unwrap();
            }
            std::os::unix::fs::symlink(top.join("out/secret"), dir.join(".link")).unwrap();
            // Past the coarse clock's tick, so the directory's time is before the read.
            std::thread::sleep(std::time::Duration::from_millis(30));
            let (set, errors) = RootSet::open([RootSpec::path(top.join("r"))]);
            assert!(errors.is_empty());
            let uris: Vec<FileUri> = ["a", "b", "c"]
                .iter()
                .map(|n| FileUri::parse(&format!("file://{}/{n}", dir.display())).unwrap())
                .collect();
            assert_eq!(verdicts(&set, &uris), ["allow", "allow", "allow"]);
            assert_eq!(kept(&set), 1, "the listing is kept");
            assert_eq!(verdicts(&set, &uris), ["allow", "allow", "allow"]);
            match swap {
                "unlink" => {
                    std::fs::remove_file(dir.join("b")).unwrap();
                    std::os::unix::fs::symlink(top.join("out/secret"), dir.join("b")).unwrap();
                }
                "rename" => {
                    std::os::unix::fs::symlink(top.join("out/secret"), dir.join(".tmp")).unwrap();
                    std::fs::rename(dir.join(".tmp"), dir.join("b")).unwrap();
                }
                _ => {
                    use rustix::fs::{CWD, RenameFlags, renameat_with};
                    renameat_with(
                        CWD,
                        dir.join(".link"),
                        CWD,
                        dir.join("b"),
                        RenameFlags::EXCHANGE,
                    )
                    .unwrap();
                }
            }
            let escape = Reason::SymlinkEscape.code();
            assert_eq!(verdicts(&set, &uris), ["allow", escape, "allow"], "{swap}");
            // Read again just after the swap, so its time is not before this read: not kept,
            // and every page reads it until its time is in the past.
            assert_eq!(verdicts(&set, &uris), ["allow", escape, "allow"], "{swap}");
        }
    }

    /// A directory changed just before its read is read again for every page until its time
    /// is before a read; a listing that stopped early serves only the pages whose names it
    /// holds, the others are judged all the same.
    #[test]
    fn listings_are_kept_only_when_the_directory_changed_before_the_read() {
        let tmp = tempfile::tempdir().unwrap();
        let top = std::fs::canonicalize(tmp.path()).unwrap();
        let dir = top.join("r");
        std::fs::create_dir_all(&dir).unwrap();
        for i in 0..2000 {
            std::fs::write(dir.join(format!("f{i}")), "x").unwrap();
        }
        let (set, _) = RootSet::open([RootSpec::path(&dir)]);
        let uri = |n: &str| FileUri::parse(&format!("file://{}/{n}", dir.display())).unwrap();
        std::fs::write(dir.join("new"), "x").unwrap();
        let one = [uri("new")];
        assert_eq!(verdicts(&set, &one), ["allow"]);
        std::thread::sleep(std::time::Duration::from_millis(30));
        assert_eq!(verdicts(&set, &one), ["allow"]);
        assert_eq!(kept(&set), 1);
        // Names the early-stopped listing may not hold: still judged, as single checks or
        // from a new read.
        let many: Vec<FileUri> = (0..2000).map(|i| uri(&format!("f{i}"))).collect();
        assert!(verdicts(&set, &many).iter().all(|v| v == "allow"));
    }

    #[test]
    fn a_real_directory_spells_its_uri_only_when_every_byte_agrees() {
        let cases = [
            ("/srv/r", "/srv/r", "", true),
            ("/srv/r/a/b", "/srv/r", "a/b", true),
            ("/srv/r/a/b", "/srv/r/", "a/b", true),
            ("/a", "/", "a", true),
            ("/", "/", "", true),
            ("/srv/real/a", "/srv/r", "a", false),
            ("/srv/r/a/c", "/srv/r", "a/b", false),
            ("/srv/rx/a", "/srv/r", "x/a", false),
            ("/srv/r", "/srv/r", "a", false),
            ("/srv/r/a", "/srv/r", "", false),
        ];
        for (dir, base, rel, want) in cases {
            assert_eq!(spells(dir, base, rel), want, "{dir} vs {base} + {rel}");
        }
    }
}
