//! `rootfence audit verify`: checks the hash chain across rotated files and names the first
//! bad record and why.
//!
//! Speed matters (logs of millions of records): per line it does a byte-level scan of the
//! envelope ([`chain::parse_envelope`]), a validating JSON pass that builds nothing
//! (`serde::de::IgnoredAny`) and one SHA-256; no `serde_json::Value` per record.
//!
//! What a hash chain can and cannot show is in `docs/audit-schema.md`: any edit, deletion,
//! insertion or reordering before the last record breaks it; removing whole records from
//! the end cannot be told from a log that ends there, except that the last record is then
//! usually not a `session_end`, which is reported as incomplete.

use std::collections::HashSet;
use std::path::{Path, PathBuf};

use super::chain::{self, GENESIS, Hash};
use super::checkpoint::Checkpoints;
use super::event::Event;
use super::read::{Item, Lines, with_path};
use super::show::disp_path as file_disp;
use super::sink::rotation_number;

/// Options for [`verify_files_with`].
#[derive(Debug, Clone, Copy, Default)]
pub struct VerifyOptions {
    /// Accept a chain that does not start at seq 1 (older rotated files were removed).
    pub partial: bool,
}

/// Where and why the chain breaks.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChainBreak {
    /// The file of the bad record.
    pub file: PathBuf,
    /// Its line number (1-based).
    pub line: u64,
    /// Its seq, when it could be read.
    pub seq: Option<u64>,
    /// What is wrong, in words.
    pub reason: String,
}

impl std::fmt::Display for ChainBreak {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: line {}", file_disp(&self.file), self.line)?;
        if let Some(s) = self.seq {
            write!(f, " (seq {s})")?;
        }
        write!(f, ": {}", self.reason)
    }
}

/// The chain is intact as far as it goes, but the log does not end cleanly.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Incomplete {
    /// The last file ends with an incomplete line (a crash mid-write, a failed write, or a
    /// truncation) that no `log_recovered` record accounts for.
    TornTail {
        /// The file.
        file: PathBuf,
        /// The incomplete line's number.
        line: u64,
        /// Its byte offset.
        offset: u64,
        /// Its length.
        len: u64,
    },
    /// The log ends with a `session_end` that no signed checkpoint covers: the
    /// session's final checkpoint is missing (removed from the checkpoint file, or it
    /// could not be written), so records removed from the end could go unnoticed.
    Uncovered {
        /// The first seq not covered.
        from: u64,
        /// The last seq of the log.
        to: u64,
    },
    /// The last record is not a `session_end`.
    NoSessionEnd {
        /// The file.
        file: PathBuf,
        /// The last record's line.
        line: u64,
        /// Its seq.
        seq: u64,
        /// Its event name.
        event: String,
    },
}

impl std::fmt::Display for Incomplete {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Incomplete::TornTail {
                file,
                line,
                offset,
                len,
            } => write!(
                f,
                "{}: line {line} is incomplete ({len} bytes at offset {offset}): the last \
                 write was cut short by a crash, a full disk or a truncation; every record \
                 before it is intact",
                file_disp(file)
            ),
            Incomplete::Uncovered { from, to } => write!(
                f,
                "records seq {from} to {to} (the end of the log, with its session_end) are \
                 covered by no signed checkpoint: the session's final checkpoint is missing \
                 from the checkpoint file (removed, or it could not be written)"
            ),
            Incomplete::NoSessionEnd {
                file,
                line,
                seq,
                event,
            } => write!(
                f,
                "{}: the log ends at line {line} (seq {seq}) with a {event} record, not a \
                 session_end: a session is still running, rootfence was killed, or records \
                 after it were removed",
                file_disp(file)
            ),
        }
    }
}

/// What `verify` found.
#[derive(Debug, Clone, Default)]
pub struct VerifyReport {
    /// The files, in the order they were checked.
    pub files: Vec<PathBuf>,
    /// Records checked (up to the break, if any).
    pub records: u64,
    /// First and last seq checked.
    pub seq_range: Option<(u64, u64)>,
    /// SHA-256 of the last good record: keep it elsewhere to detect a later truncation.
    pub head: Option<String>,
    /// Sessions seen (by `session_start`).
    pub sessions: u64,
    /// Sessions with a `session_start` and no `session_end`.
    pub unended: Vec<String>,
    /// Things a reviewer should know that do not break the chain.
    pub notes: Vec<String>,
    /// The first break, if any.
    pub broken: Option<ChainBreak>,
    /// How the log is incomplete, if it is.
    pub incomplete: Option<Incomplete>,
    /// What the signed checkpoints say about the log, when they were given.
    pub checkpoints: Option<CheckpointFindings>,
}

/// The log checked against its signed checkpoints.
#[derive(Debug, Clone, Default)]
pub struct CheckpointFindings {
    /// The checkpoint file.
    pub file: PathBuf,
    /// Valid checkpoints in it (up to its first bad line).
    pub total: u64,
    /// Checkpoints whose record is in the log with the signed hash.
    pub matched: u64,
    /// The highest seq a matching checkpoint covers.
    pub covered: Option<u64>,
    /// The first contradiction between the log and a checkpoint, or a bad checkpoint:
    /// the log (or the checkpoint file) was tampered with.
    pub broken: Option<String>,
    /// Things a reviewer should know.
    pub notes: Vec<String>,
}

/// Puts log files in chain order: rotated files `<name>.<N>` by N, then the active file
/// `<name>`; files of other names keep their relative order, after the families they follow.
pub fn order_files(files: &[PathBuf]) -> Vec<PathBuf> {
    let key = |p: &PathBuf| -> (PathBuf, u64) {
        let name = p
            .file_name()
            .and_then(|n| n.to_str())
            .unwrap_or_default()
            .to_owned();
        if let Some((base, _)) = name.rsplit_once('.')
            && let Some(n) = rotation_number(base, &name)
        {
            return (p.with_file_name(base), n);
        }
        (p.clone(), u64::MAX)
    };
    let keys: Vec<(PathBuf, u64)> = files.iter().map(key).collect();
    // Families are ordered by where their first member was given.
    let first_at = |fam: &PathBuf| keys.iter().position(|k| &k.0 == fam).unwrap_or(0);
    let mut idx: Vec<usize> = (0..files.len()).collect();
    idx.sort_by_key(|&i| (first_at(&keys[i].0), keys[i].1, i));
    idx.into_iter().map(|i| files[i].clone()).collect()
}

/// The first record given, when it is not the start of a chain.
struct Start {
    file: PathBuf,
    line: u64,
    seq: u64,
    prev: Hash,
}

struct Prev {
    hash: Hash,
    /// Hash of the record before it, to recognise an inserted record.
    hash2: Option<Hash>,
    seq: u64,
    file: PathBuf,
    line: u64,
    event: String,
}

/// Checks the chain through `files` (ordered with [`order_files`] first), and, when given,
/// the log against signed checkpoints (already read and verified with [`Checkpoints::read`]):
/// records removed from the end, a rewritten tail and a re-hashed chain contradict them. I/O
/// errors are returned; everything found in the data is in the report.
pub fn verify_files_with(
    files: &[PathBuf],
    opts: VerifyOptions,
    checkpoints: Option<&Checkpoints>,
) -> std::io::Result<VerifyReport> {
    let want = checkpoints.map(Checkpoints::by_seq).unwrap_or_default();
    let mut ck = checkpoints.map(|c| CheckpointFindings {
        file: c.file.clone(),
        total: c.list.len() as u64,
        broken: c.broken.clone(),
        ..CheckpointFindings::default()
    });
    let files = order_files(files);
    let mut r = VerifyReport {
        files: files.clone(),
        ..VerifyReport::default()
    };
    let mut prev: Option<Prev> = None;
    let mut torn: Option<(PathBuf, u64, u64, u64, String)> = None;
    let mut started: HashSet<String> = HashSet::new();
    let mut ended: HashSet<String> = HashSet::new();
    let mut order: Vec<String> = Vec::new();
    // Where the given chain starts, when that is not seq 1; and what log_pruned records say.
    let mut start: Option<Start> = None;
    let mut pruned: Vec<(u64, String, PathBuf, u64)> = Vec::new();

    'files: for (fi, path) in files.iter().enumerate() {
        let mut lines = Lines::open(path).map_err(|e| with_path(path, e))?;
        while let Some(item) = lines.next_item().map_err(|e| with_path(path, e))? {
            let (no, bytes) = match item {
                Item::Torn { no, offset, bytes } => {
                    torn = Some((
                        path.clone(),
                        no,
                        offset,
                        bytes.len() as u64,
                        chain::sha256_hex(bytes),
                    ));
                    if fi + 1 == files.len() {
                        break 'files;
                    }
                    continue 'files;
                }
                Item::Line { no, bytes } => (no, bytes),
            };
            let brk = |seq: Option<u64>, reason: String| ChainBreak {
                file: path.clone(),
                line: no,
                seq,
                reason,
            };
            let env = match chain::parse_envelope(bytes) {
                Ok(e) => e,
                Err(why) => {
                    r.broken = Some(brk(None, format!("not an audit record: {why}")));
                    break 'files;
                }
            };
            let seq = env.seq;
            if let Err(e) = serde_json::from_slice::<serde::de::IgnoredAny>(bytes) {
                r.broken = Some(brk(Some(seq), format!("not valid JSON: {e}")));
                break 'files;
            }
            if env.v != super::SCHEMA_VERSION {
                r.broken = Some(brk(
                    Some(seq),
                    format!(
                        "schema version {} is not supported by this rootfence (it reads \
                         version {})",
                        env.v,
                        super::SCHEMA_VERSION
                    ),
                ));
                break 'files;
            }
            // A torn tail in an earlier file must be accounted for by the next record.
            if let Some((tf, tl, toff, tlen, tsha)) = torn.take() {
                let ok = env.event == "log_recovered"
                    && matches!(
                        Event::from_body(env.event, &env.body(bytes)),
                        Ok(Some(Event::LogRecovered(ref lr))) if lr.len == tlen && lr.sha256 == tsha
                    );
                if !ok {
                    r.broken = Some(ChainBreak {
                        file: tf,
                        line: tl,
                        seq: None,
                        reason: format!(
                            "incomplete line ({tlen} bytes at offset {toff}) in a file that is \
                             not the last one, and the next record is not a log_recovered \
                             record for it"
                        ),
                    });
                    break 'files;
                }
                r.notes.push(format!(
                    "{}: line {tl} is an incomplete write ({tlen} bytes) set aside by the \
                     writer; {}: line {no} (seq {seq}) records it",
                    file_disp(&tf),
                    file_disp(path),
                ));
            }
            match &prev {
                None => {
                    if seq != 1 || env.prev != GENESIS {
                        // Judged at the end: retention's log_pruned record may account for it.
                        start = Some(Start {
                            file: path.clone(),
                            line: no,
                            seq,
                            prev: env.prev,
                        });
                    }
                }
                Some(p) => {
                    let want = p.seq.wrapping_add(1);
                    if env.prev == p.hash {
                        if seq != want {
                            r.broken = Some(brk(
                                Some(seq),
                                format!(
                                    "seq {seq} does not follow seq {} although the hash chain \
                                     links them: the seq was edited",
                                    p.seq
                                ),
                            ));
                            break 'files;
                        }
                    } else {
                        let cur = Cur {
                            no,
                            seq,
                            prev: env.prev,
                            hash: chain::sha256(bytes),
                        };
                        let b = diagnose(&mut lines, p, path, &cur)?;
                        if b.line == p.line && b.file == p.file {
                            // The bad record is the previous one: it is not intact.
                            r.records -= 1;
                            r.seq_range =
                                r.seq_range.and_then(|(a, z)| (z > a).then(|| (a, z - 1)));
                        }
                        r.broken = Some(b);
                        break 'files;
                    }
                }
            }
            if env.event == "log_rewound" {
                let what = match Event::from_body(env.event, &env.body(bytes)) {
                    Ok(Some(Event::LogRewound(l))) => format!(
                        "records seq {} to {} were removed from the end of the log while \
                         rootfence was writing it (a writer had reached seq {} and then found \
                         the log ending at seq {})",
                        l.found_seq + 1,
                        l.expected_seq,
                        l.expected_seq,
                        l.found_seq
                    ),
                    _ => "records were removed from the end of the log while rootfence was \
                          writing it"
                        .to_owned(),
                };
                r.broken = Some(brk(Some(seq), what));
                break 'files;
            }
            if env.event == "log_pruned"
                && let Ok(Some(Event::LogPruned(l))) = Event::from_body(env.event, &env.body(bytes))
            {
                pruned.push((l.first_seq, l.first_prev, path.clone(), no));
            }
            match env.event {
                "session_start" if started.insert(env.session.to_owned()) => {
                    order.push(env.session.to_owned());
                }
                "session_end" => {
                    ended.insert(env.session.to_owned());
                }
                _ => {}
            }
            let hash = chain::sha256(bytes);
            if let (Some(c), Some(f)) = (want.get(&seq), ck.as_mut()) {
                if c.head == hash {
                    f.matched += 1;
                    f.covered = Some(seq);
                } else if f.broken.is_none() {
                    let after = f.covered.map_or(String::new(), |s| {
                        format!(" (an earlier checkpoint matches seq {s}: the change is after it)")
                    });
                    f.broken = Some(format!(
                        "{}: line {no} (seq {seq}) is not the record checkpoint n {} signed \
                         ({}: line {}, at {}): the records up to seq {seq} were rewritten{after}; \
                         the hash chain {} so every hash after the change was recomputed",
                        file_disp(path),
                        c.n,
                        file_disp(&f.file),
                        c.line,
                        c.ts,
                        if r.broken.is_none() {
                            "is intact,"
                        } else {
                            "breaks too,"
                        },
                    ));
                }
            }
            r.records += 1;
            r.seq_range = Some((r.seq_range.map_or(seq, |(a, _)| a), seq));
            prev = Some(Prev {
                hash,
                hash2: prev.as_ref().map(|p| p.hash),
                seq,
                file: path.clone(),
                line: no,
                event: env.event.to_owned(),
            });
        }
    }

    if let Some(st) = start {
        let accounted = pruned
            .iter()
            .find(|(seq, prev, _, _)| *seq == st.seq && *prev == chain::hex(&st.prev));
        if let Some((_, _, file, line)) = accounted {
            r.notes.push(format!(
                "the chain starts at seq {} ({}: line {}): older rotated files were removed by \
                 retention, as the log_pruned record at {}: line {line} says",
                st.seq,
                file_disp(&st.file),
                st.line,
                file_disp(file)
            ));
        } else if r.broken.is_some() {
            // A break further on: the records that might account for the start were not
            // reached, and the break is the finding.
        } else if opts.partial {
            r.notes.push(format!(
                "the chain starts at seq {} ({}: line {}); earlier records were not given \
                 (--partial)",
                st.seq,
                file_disp(&st.file),
                st.line
            ));
        } else {
            r.broken = Some(ChainBreak {
                file: st.file,
                line: st.line,
                seq: Some(st.seq),
                reason: format!(
                    "the first record is seq {}, not the start of a chain (seq 1 with a zero \
                     prev), and no log_pruned record says retention removed what came before: \
                     earlier records were removed, or earlier rotated files were not given \
                     (give them all, or use --partial)",
                    st.seq
                ),
            });
            r.records = 0;
            r.seq_range = None;
            prev = None;
        }
    }

    if let (Some(f), Some(c)) = (ck.as_mut(), checkpoints) {
        judge_checkpoints(f, c, &r, prev.as_ref());
    }
    r.checkpoints = ck;
    r.head = prev.as_ref().map(|p| chain::hex(&p.hash));
    r.sessions = started.len() as u64;
    r.unended = order.into_iter().filter(|s| !ended.contains(s)).collect();
    if r.broken.is_none() {
        let uncovered = r.checkpoints.as_ref().and_then(|f| {
            let (_, last) = r.seq_range?;
            let ended = prev.as_ref().is_some_and(|p| p.event == "session_end");
            (f.broken.is_none() && ended && f.covered.is_none_or(|c| c < last)).then(|| {
                Incomplete::Uncovered {
                    from: f
                        .covered
                        .map_or(r.seq_range.map_or(1, |(a, _)| a), |c| c + 1),
                    to: last,
                }
            })
        });
        if let Some((file, line, offset, len, _)) = torn {
            r.incomplete = Some(Incomplete::TornTail {
                file,
                line,
                offset,
                len,
            });
        } else if let Some(p) = &prev
            && p.event != "session_end"
        {
            r.incomplete = Some(Incomplete::NoSessionEnd {
                file: p.file.clone(),
                line: p.line,
                seq: p.seq,
                event: p.event.clone(),
            });
        } else if let Some(u) = uncovered {
            r.incomplete = Some(u);
        }
    }
    Ok(r)
}

/// What the checkpoints that no record was compared with say: a seq past the end of the
/// log means records were removed from its end; one before its start was pruned.
fn judge_checkpoints(
    f: &mut CheckpointFindings,
    c: &Checkpoints,
    r: &VerifyReport,
    last: Option<&Prev>,
) {
    let (first, end) = r.seq_range.unwrap_or((1, 0));
    let before = c.list.iter().filter(|k| k.seq < first).count();
    if before > 0 {
        f.notes.push(format!(
            "{before} checkpoint{} cover records before seq {first}, where the given log \
             starts (removed by retention, or not given): not checked",
            if before == 1 { "" } else { "s" }
        ));
    }
    // Records after a break were not read: only an intact chain can show a cut end.
    if f.broken.is_none()
        && r.broken.is_none()
        && let Some(k) = c.list.iter().filter(|k| k.seq > end).max_by_key(|k| k.seq)
    {
        let removed = if end + 1 == k.seq {
            format!("record seq {}", k.seq)
        } else {
            format!("records seq {} to {}", end + 1, k.seq)
        };
        let ends = last.map_or("the log is empty".to_owned(), |p| {
            format!("the log ends at {}", at(p))
        });
        f.broken = Some(format!(
            "{removed} were removed from the end of the log: checkpoint n {} ({}: line {}, \
             signed at {}) covers seq {}, and {ends}",
            k.n,
            file_disp(&f.file),
            k.line,
            k.ts,
            k.seq
        ));
    }
    if f.broken.is_none()
        && let Some(c) = f.covered
        && c < end
    {
        f.notes.push(format!(
            "records seq {} to {end} come after the last checkpoint: no signature covers them \
             yet",
            c + 1
        ));
    }
}

fn at(p: &Prev) -> String {
    format!("{}: line {} (seq {})", file_disp(&p.file), p.line, p.seq)
}

/// The record that does not chain from the previous one.
struct Cur {
    no: u64,
    seq: u64,
    prev: Hash,
    hash: Hash,
}

/// Names the bad record when `cur` does not chain from `p`. It may read ahead in the same file: an inserted record is recognised by the next
/// record chaining from `p`, and a reordering by the missing seq turning up later.
fn diagnose(lines: &mut Lines, p: &Prev, path: &Path, cur: &Cur) -> std::io::Result<ChainBreak> {
    let (no, seq, prev_hash) = (cur.no, cur.seq, cur.prev);
    let want = p.seq.wrapping_add(1);
    let here = |reason: String| ChainBreak {
        file: path.to_path_buf(),
        line: no,
        seq: Some(seq),
        reason,
    };
    // The previous record is the bad one.
    let there = |reason: String| ChainBreak {
        file: p.file.clone(),
        line: p.line,
        seq: Some(p.seq),
        reason,
    };
    if Some(prev_hash) == p.hash2 {
        return Ok(there(format!(
            "this record was inserted: the next record ({}: line {no}) chains from the record \
             before it",
            file_disp(path)
        )));
    }
    // The rest of this file's envelopes, (line, seq, prev), read only on this failure path.
    let mut rest: Vec<(u64, u64, Hash)> = Vec::new();
    while let Some(item) = lines.next_item().map_err(|e| with_path(path, e))? {
        if let Item::Line { no, bytes } = item
            && let Ok(env) = chain::parse_envelope(bytes)
        {
            rest.push((no, env.seq, env.prev));
        }
    }
    if let Some(&(twin, _, _)) = rest.iter().find(|n| n.1 == seq) {
        return Ok(here(format!(
            "this record was inserted: seq {seq} appears again at line {twin}, and this one \
             does not chain from {}",
            at(p)
        )));
    }
    // Moved, not forged: the missing seq turns up later and this record's successor is
    // still there, chained from it.
    if seq != want
        && rest.iter().any(|n| n.2 == cur.hash)
        && let Some(&(later, _, _)) = rest.iter().find(|n| n.1 == want)
    {
        return Ok(here(format!(
            "records were reordered: seq {seq} is here, after {}, and seq {want} is at line \
             {later}",
            at(p)
        )));
    }
    if rest.first().is_some_and(|n| n.2 == p.hash) {
        return Ok(here(format!(
            "this record was inserted: it does not chain from {}, and the record after it \
             does",
            at(p)
        )));
    }
    if prev_hash == GENESIS && seq == 1 {
        return Ok(here(format!(
            "a new chain starts here after {}: the records before it belong to another log, \
             or this log was replaced",
            at(p)
        )));
    }
    if seq == want {
        return Ok(there(format!(
            "this record was altered after it was written: its hash does not match the prev of \
             the next record ({}: line {no}, seq {seq})",
            file_disp(path)
        )));
    }
    if seq > want {
        let missing = if seq - want == 1 {
            format!("record seq {want} is missing")
        } else {
            format!("records seq {want} to {} are missing", seq - 1)
        };
        return Ok(here(format!(
            "{missing} before this record (deleted, or a rotated file was not given); the \
             previous record is {}",
            at(p)
        )));
    }
    Ok(here(format!(
        "seq {seq} comes after {}: records were reordered or duplicated",
        at(p)
    )))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn orders_rotated_files_before_the_active_one() {
        let p = |s: &str| PathBuf::from(s);
        let got = order_files(&[
            p("/l/audit.jsonl"),
            p("/l/audit.jsonl.000010"),
            p("/other.jsonl"),
            p("/l/audit.jsonl.000002"),
            p("/l/audit.jsonl.000009"),
        ]);
        assert_eq!(
            got,
            [
                p("/l/audit.jsonl.000002"),
                p("/l/audit.jsonl.000009"),
                p("/l/audit.jsonl.000010"),
                p("/l/audit.jsonl"),
                p("/other.jsonl"),
            ]
        );
    }
}
