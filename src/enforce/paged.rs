//! A page's decisions, compactly (issue 14): [`Checker::page`] decides the URIs of a
//! `resources/list` page exactly as [`Checker::uri`] decides each, and hands back one
//! [`PageCheck`] per entry. Most entries of a page are plain names beside the previous one,
//! allowed by the same rule inside the same root; those are not given a [`Verdict`] each
//! (a canonical URI built, three shared texts counted up and down), but point at the one
//! decision their run shares, and borrow their canonical form from the message text, which
//! is what it is ([`PlainUri`]). Every other entry (settled before the page check, refused,
//! allowed through a link, allowed with a canonical form other than its text) keeps its own
//! [`Verdict`].

use crate::policy::{Policy, Provenance};
use crate::roots::{PageVerdict, RootSet};
use crate::uri::{FileUri, PageUri, PlainUri};

use super::decide::{Checker, RuleTexts, Verdict, path_verdict};

/// One entry's decision on a page.
#[derive(Debug)]
pub enum PageCheck<'a> {
    /// Allowed exactly as [`PageChecks::shared`]`[class]` decided, and its canonical form is
    /// its own text.
    Like {
        /// The shared decision's index.
        class: u32,
        /// The entry's URI (its text).
        uri: PlainUri<'a>,
    },
    /// Decided on its own: the [`Verdict`] holds its canonical form.
    Own(Box<Verdict>),
}

/// The decisions on a page's entries, in order (see the module docs).
#[derive(Debug, Default)]
pub struct PageChecks<'a> {
    /// The decisions runs of entries share: allowed, with no canonical form (each entry's is
    /// its text). The entries of one class are siblings in one directory.
    pub shared: Vec<Verdict>,
    /// One per entry.
    pub entries: Vec<PageCheck<'a>>,
}

impl PageChecks<'_> {
    /// Each entry's decision as a [`Verdict`] of its own (the value path's form).
    pub fn into_verdicts(self) -> Vec<Verdict> {
        let shared = self.shared;
        self.entries
            .into_iter()
            .map(|e| match e {
                PageCheck::Like { class, uri } => Verdict {
                    canonical: Some(uri.to_file_uri()),
                    ..shared[class as usize].clone()
                },
                PageCheck::Own(c) => *c,
            })
            .collect()
    }
}

/// A shared decision's identity within its run: its root, and the rule and reason that
/// allowed (compared by address: a policy's provenances do not move while it decides).
type ClassKey = (usize, *const Provenance, &'static str);

impl Checker {
    /// Checks a page of URIs: [`Checker::uri`]'s decision on each, in order, with the
    /// `file:` entries judged per directory ([`RootSet::check_page`]) and runs of plain
    /// names allowed alike sharing one decision (see the module docs).
    pub fn page<'a>(
        &self,
        policy: &Policy,
        raws: &[&'a str],
        roots: Option<&RootSet>,
    ) -> PageChecks<'a> {
        /// How an entry was read.
        enum Read<'a> {
            /// Parsed in full: `heads[i]`.
            Head(usize),
            /// A plain name beside the latest head.
            Plain(PlainUri<'a>),
            /// Settled without the page check (not a file: URI, no roots...).
            Settled(Box<Verdict>),
        }
        let mut heads: Vec<FileUri> = Vec::new();
        let mut read: Vec<Read<'a>> = Vec::with_capacity(raws.len());
        let mut set = None;
        for raw in raws {
            // Pages list a directory's names together: a name beside the latest parsed
            // file is taken as it is written (the same URI the full parse gives).
            if let Some(plain) = heads
                .last()
                .and_then(|head| FileUri::plain_sibling(head, raw))
            {
                read.push(Read::Plain(plain));
                continue;
            }
            read.push(match self.file_uri(policy, raw, roots) {
                Ok((uri, roots)) => {
                    set = Some(roots);
                    heads.push(uri);
                    Read::Head(heads.len() - 1)
                }
                Err(done) => Read::Settled(done),
            });
        }
        let mut out = PageChecks {
            shared: Vec::new(),
            entries: Vec::with_capacity(raws.len()),
        };
        let Some(roots) = set else {
            out.entries.extend(read.into_iter().map(|r| match r {
                Read::Settled(c) => PageCheck::Own(c),
                // Only a file: URI read while roots are known is a head or plain.
                Read::Head(_) | Read::Plain(_) => {
                    PageCheck::Own(Box::new(Verdict::deny("io_error")))
                }
            }));
            return out;
        };
        let uris: Vec<PageUri<'_>> = read
            .iter()
            .filter_map(|r| match r {
                Read::Head(h) => Some(PageUri::Parsed(&heads[*h])),
                Read::Plain(p) => Some(PageUri::Plain(*p)),
                Read::Settled(_) => None,
            })
            .collect();
        let mut verdicts = roots.check_page(&uris, self.options()).into_iter();
        drop(uris);
        let mut texts = RuleTexts::default();
        let mut judge = policy.file_judge();
        // The shared decisions of the current run (a head and the plain names after it):
        // cleared at each head, so a class never spans two directories.
        let mut keys: Vec<(ClassKey, u32)> = Vec::new();
        for (r, raw) in read.into_iter().zip(raws) {
            let (uri, plain) = match r {
                Read::Settled(c) => {
                    out.entries.push(PageCheck::Own(c));
                    continue;
                }
                Read::Head(h) => {
                    keys.clear();
                    let head = &heads[h];
                    (PageUri::Parsed(head), head.plain_text(raw))
                }
                Read::Plain(p) => (PageUri::Plain(p), Some(p)),
            };
            let Some(verdict) = verdicts.next() else {
                // Only a bug gets here: refused, never allowed unchecked.
                out.entries
                    .push(PageCheck::Own(Box::new(Verdict::deny("io_error"))));
                continue;
            };
            let (root, real) = match verdict {
                PageVerdict::Allow { root, real, .. } => (root, real),
                PageVerdict::Checked(v) => {
                    let mut c = self.file(policy, *v, roots);
                    c.allowed = None;
                    out.entries.push(PageCheck::Own(Box::new(c)));
                    continue;
                }
            };
            let (verdict, rule) = path_verdict(
                policy,
                uri.path(),
                real.as_deref(),
                Some(&mut judge),
                root,
                roots,
                &mut texts,
            );
            let plain = plain.filter(|_| verdict.allow);
            let Some(plain) = plain else {
                let mut v = verdict;
                v.canonical = Some(uri.file_uri().into_owned());
                out.entries.push(PageCheck::Own(Box::new(v)));
                continue;
            };
            // An allowed reason is always the rule's own static text (only a refusal through
            // a link has a text of its own).
            let reason: &'static str = match &verdict.reason {
                std::borrow::Cow::Borrowed(r) => r,
                std::borrow::Cow::Owned(_) => "",
            };
            let key: ClassKey = (root, rule, reason);
            let class = match keys.iter().rev().find(|(k, _)| same_key(k, &key)) {
                Some((_, class)) => *class,
                None => {
                    let mut c = verdict;
                    let Ok(class) = u32::try_from(out.shared.len()) else {
                        // More shared decisions than a page can hold entries: its own.
                        c.canonical = Some(plain.to_file_uri());
                        out.entries.push(PageCheck::Own(Box::new(c)));
                        continue;
                    };
                    out.shared.push(c);
                    keys.push((key, class));
                    class
                }
            };
            out.entries.push(PageCheck::Like { class, uri: plain });
        }
        out
    }
}

/// Whether two shared decisions' keys are the same (their texts compared by address).
fn same_key(a: &ClassKey, b: &ClassKey) -> bool {
    a.0 == b.0 && std::ptr::eq(a.1, b.1) && std::ptr::eq(a.2, b.2)
}

#[cfg(test)]
mod tests {
    use super::PageCheck;
    use crate::enforce::testing::World;

    /// A directory's plain names allowed by one rule share one decision; a denial, an entry
    /// of another directory or scheme, and a URI whose canonical form is not its text are
    /// decided on their own, and a run after them shares a decision of its own.
    #[test]
    fn plain_siblings_allowed_alike_share_one_decision() {
        let w = World::new(&["d"], &["d/a", "d/b", "d/c", "d/.env", "e"], None);
        let live = w.enforcer.inner.live();
        let set = w.enforcer.inner.operator.set();
        let raws = [
            w.uri("d/a"),
            w.uri("d/b"),
            w.uri("d/.env"),
            w.uri("d/c"),
            "https://example.com/".to_owned(),
            w.uri("d/./a"),
            w.uri("d/b"),
            w.uri("e"),
        ];
        let raws: Vec<&str> = raws.iter().map(String::as_str).collect();
        let checks = live.page(&raws, Some(set));
        let shape: Vec<String> = checks
            .entries
            .iter()
            .map(|e| match e {
                PageCheck::Like { class, uri } => {
                    assert_eq!(checks.shared[*class as usize].canonical, None);
                    assert!(raws.contains(&uri.as_str()));
                    format!("like {class}")
                }
                PageCheck::Own(c) => format!("own {}", c.allow),
            })
            .collect();
        assert_eq!(
            shape,
            [
                "like 0",
                "like 0",
                "own false",
                "like 0",
                "own true",
                "own true",
                "like 1",
                "like 2"
            ]
        );
        assert_eq!(checks.shared.len(), 3);
    }
}
