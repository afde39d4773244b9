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

use std::collections::HashMap;

/// The page's maps: keys are names the server chose, so the hasher is seeded per process
/// (foldhash's `RandomState`); SipHash's stronger guarantee costs more than the whole
/// lookup here, and a page is bounded by the line limit.
type PageMap<K, V> = HashMap<K, V, foldhash::fast::RandomState>;
use std::mem::MaybeUninit;
use std::os::fd::AsFd;
use std::path::Path;

use super::{CheckOptions, RootSet, Verdict};
use crate::fsaccess::{self, EntryKind, FileKind};
use crate::uri::FileUri;

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

/// What the per-directory pass settled for one entry.
#[derive(Debug, Clone, Default)]
enum Slot {
    /// Left for the single check.
    #[default]
    Pending,
    /// Allowed (see [`PageVerdict::Allow`]).
    Allow {
        root: usize,
        kind: FileKind,
        real: Option<String>,
    },
}

/// One directory of a page: the entries that name something in it.
struct Group<'u> {
    root: usize,
    /// The URI matched the root by its real path (else by its declared one).
    by_real: bool,
    parent: &'u str,
    members: Vec<(usize, &'u str)>,
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

impl Group<'_> {
    /// The form of the root the group's URIs named it by.
    fn form<'r>(&self, root: &'r super::Root) -> &'r FileUri {
        if self.by_real {
            root.real_uri()
        } else {
            root.uri()
        }
    }
}

/// How many entries of a directory rootfence reads for a page: enough for every name the
/// page wants from it many times over, bounded so that a page naming a few files of a huge
/// directory costs a bounded read (the names not seen by then take the single check).
fn read_budget(wanted: usize) -> usize {
    wanted.saturating_mul(16).saturating_add(1024)
}

impl RootSet {
    /// Checks a page of URIs (a `resources/list` result): the same verdicts as
    /// [`RootSet::check`] on each, in order, from one resolution and one read of each
    /// directory the page names (see the module docs).
    pub fn check_page(&self, uris: &[&FileUri], opts: &CheckOptions) -> Vec<PageVerdict> {
        let mut out: Vec<Slot> = vec![Slot::Pending; uris.len()];
        let mut groups: Vec<Group<'_>> = Vec::new();
        let mut by_key: PageMap<(usize, bool, &str), usize> = PageMap::default();
        // Pages list a directory's entries together: the last group is tried first.
        let mut last: Option<usize> = None;
        // Every form of every root, deepest first: the first that holds a URI is its match.
        let mut forms: Vec<(usize, bool, &FileUri)> = Vec::with_capacity(2 * self.roots.len());
        for (i, root) in self.roots.iter().enumerate() {
            forms.push((i, false, root.uri()));
            if root.real_uri() != root.uri() {
                forms.push((i, true, root.real_uri()));
            }
        }
        forms.sort_by_key(|(_, _, f)| std::cmp::Reverse(f.depth()));
        for (i, uri) in uris.iter().enumerate() {
            if uri.lexical().is_some() {
                continue;
            }
            let Some((root, by_real, rel)) = forms
                .iter()
                .find_map(|&(root, by_real, f)| Some((root, by_real, uri.relative_to(f)?)))
            else {
                continue;
            };
            if rel.is_empty() {
                continue;
            }
            let (parent, name) = match rel.rfind('/') {
                Some(k) => (&rel[..k], &rel[k + 1..]),
                None => ("", rel),
            };
            let g = match last {
                Some(g)
                    if groups[g].root == root
                        && groups[g].by_real == by_real
                        && groups[g].parent == parent =>
                {
                    g
                }
                _ => *by_key.entry((root, by_real, parent)).or_insert_with(|| {
                    groups.push(Group {
                        root,
                        by_real,
                        parent,
                        members: Vec::new(),
                    });
                    groups.len() - 1
                }),
            };
            last = Some(g);
            groups[g].members.push((i, name));
        }

        let mut buf: Vec<MaybeUninit<u8>> = Vec::new();
        for g in &groups {
            self.judge_group(g, opts, &mut buf, &mut out);
        }
        out.into_iter()
            .zip(uris)
            .map(|(slot, uri)| match slot {
                Slot::Allow { root, kind, real } => PageVerdict::Allow { root, kind, real },
                Slot::Pending => PageVerdict::Checked(Box::new(self.check(uri, opts))),
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
        out: &mut [Slot],
    ) {
        let root = &self.roots[g.root];
        let b = root.beneath();
        let Ok(dir) = fsaccess::resolve(&b, Path::new(g.parent), opts.symlinks, true) else {
            return;
        };
        if dir.found.kind != FileKind::Directory {
            return;
        }
        // The entries' real directory, when it is not what the URIs spell.
        let real_dir = if g.by_real && !dir.via_link {
            None
        } else {
            match self.real_path_at(g.root, &dir.path) {
                // The real directory is the one the URIs spell (the usual case: a root
                // named by its real path, no link on the way): nothing more to judge, and
                // no path to build per entry.
                Some(d) if spells(&d, g.form(root).path(), g.parent) => None,
                Some(d) => Some(d),
                None => return,
            }
        };
        let fresh = opts.new_links_since.is_some_and(|s| dir.found.changed >= s);
        let look_at_each = opts.deny_hard_links || fresh;

        // One slot per distinct name the page wants from this directory.
        let mut slots: PageMap<&[u8], usize> =
            PageMap::with_capacity_and_hasher(g.members.len(), Default::default());
        let member_slots: Vec<usize> = g
            .members
            .iter()
            .map(|(_, name)| {
                let next = slots.len();
                *slots.entry(name.as_bytes()).or_insert(next)
            })
            .collect();
        let mut kinds: Vec<Option<EntryKind>> = vec![None; slots.len()];
        let mut left = slots.len();
        let listed = fsaccess::list_dir(
            dir.fd.as_fd(),
            read_budget(slots.len()),
            buf,
            |name, kind| {
                if let Some(&slot) = slots.get(name.to_bytes()) {
                    if kinds[slot].is_none() {
                        kinds[slot] = Some(kind);
                        left -= 1;
                    }
                }
                left > 0
            },
        );
        if listed.is_err() {
            return;
        }

        for (&(i, name), &slot) in g.members.iter().zip(&member_slots) {
            let Some(EntryKind::Known(kind)) = kinds[slot] else {
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
            out[i] = Slot::Allow {
                root: g.root,
                kind,
                real,
            };
        }
    }
}

#[cfg(test)]
mod tests {
    use super::spells;

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
