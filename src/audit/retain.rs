//! Retention: which rotated files go when the log rotates, so that a log (and a server
//! filling it) cannot fill the disk.
//!
//! Only rotated files are ever removed, oldest first, and only by a writer holding the log's
//! lock right after it rotated. Before removing anything the writer appends a `log_pruned`
//! record naming the first record it keeps (its seq and prev), so `verify` on what remains
//! knows where the chain now starts and still detects every other gap, edit or reordering.

use std::io;
use std::path::Path;

/// How many of the rotated files (sizes given newest first) to keep: files are kept from the
/// newest while both limits hold; the first that would break one goes, with every older one.
pub(super) fn keep_count(
    sizes_newest_first: &[u64],
    files: Option<u64>,
    bytes: Option<u64>,
) -> usize {
    let mut total: u64 = 0;
    for (i, &size) in sizes_newest_first.iter().enumerate() {
        let n = i as u64 + 1;
        total = total.saturating_add(size);
        if files.is_some_and(|f| n > f) || bytes.is_some_and(|b| total > b) {
            return i;
        }
    }
    sizes_newest_first.len()
}

/// The first complete line of a file (without its `\n`), or `None` if it has none.
pub(super) fn first_line(path: &Path) -> io::Result<Option<Vec<u8>>> {
    Ok(match super::read::Lines::open(path)?.next_item()? {
        Some(super::read::Item::Line { bytes, .. }) => Some(bytes.to_vec()),
        _ => None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_the_newest_within_both_limits() {
        let sizes = [10, 10, 10, 10];
        let cases = [
            (None, None, 4),
            (Some(2), None, 2),
            (Some(0), None, 0),
            (Some(9), None, 4),
            (None, Some(25), 2),
            (None, Some(30), 3),
            (None, Some(5), 0),
            (Some(1), Some(100), 1),
            (Some(3), Some(15), 1),
        ];
        for (files, bytes, want) in cases {
            assert_eq!(
                keep_count(&sizes, files, bytes),
                want,
                "{files:?} {bytes:?}"
            );
        }
    }

    #[test]
    fn first_line_reads_past_a_chunk() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("f");
        for (content, want) in [
            (b"".to_vec(), None),
            (b"torn".to_vec(), None),
            (b"a\nb\n".to_vec(), Some(b"a".to_vec())),
        ] {
            std::fs::write(&p, &content).unwrap();
            assert_eq!(first_line(&p).unwrap(), want);
        }
        let long = vec![b'x'; 200_000];
        let mut content = long.clone();
        content.extend_from_slice(b"\nnext\n");
        std::fs::write(&p, &content).unwrap();
        assert_eq!(first_line(&p).unwrap(), Some(long));
    }
}
