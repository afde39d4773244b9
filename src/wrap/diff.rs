//! The unified diff `wrap` and `unwrap` print: built from the edits themselves.
//!
//! No line-matching algorithm is needed: `edit.rs` knows exactly which byte ranges it
//! replaces, so the changed lines are the lines those ranges touch. Each group of touched
//! lines becomes a hunk with three lines of context; hunks whose context overlaps are
//! merged, as `diff -u` does. The output applies with `patch -p0`.

use std::fmt::Write as _;
use std::ops::Range;

use super::edit::Edit;

/// Lines of context around each change.
const CONTEXT: usize = 3;

/// A unified diff of `old` → `apply(old, edits)`, labelled with `path`; empty when the
/// edits change nothing. The edits are sorted by position (as [`super::Outcome`] keeps them).
pub(crate) fn unified(path: &str, old: &str, edits: &[Edit]) -> String {
    let index = super::jsonc::LineIndex::new(old);
    let old_lines = &index.starts;
    let old_split = split_lines(old);
    let n_old = old_split.len();

    // Group the edits into changes of whole lines: [first line, last line] of the old text,
    // merging edits that touch the same or adjacent lines.
    let mut changes: Vec<(Range<usize>, Vec<&Edit>)> = Vec::new();
    for e in edits {
        let first = index.line(e.range.start) - 1;
        let last = index.line(e.range.end.max(e.range.start)) - 1;
        match changes.last_mut() {
            Some((lines, group)) if first <= lines.end + 1 => {
                lines.end = lines.end.max(last);
                group.push(e);
            }
            _ => changes.push((first..last, vec![e])),
        }
    }

    // For each change: the old lines and the new text of those lines.
    struct Change {
        old: Range<usize>, // line indices, inclusive end as exclusive range
        new_lines: Vec<String>,
    }
    let mut out_changes = Vec::new();
    for (lines, group) in changes {
        let start = old_lines[lines.start];
        let end = old_lines.get(lines.end + 1).copied().unwrap_or(old.len());
        let new_text = super::edit::apply(old, start..end, group);
        if new_text == old[start..end] {
            continue;
        }
        out_changes.push(Change {
            // An empty text has no line, though its index has one start.
            old: lines.start..(lines.end + 1).min(n_old),
            new_lines: split_lines(&new_text),
        });
    }
    if out_changes.is_empty() {
        return String::new();
    }

    let mut out = format!("--- {path}\n+++ {path}\n");
    // Merge changes into hunks whose context windows overlap.
    let mut i = 0;
    // Line count difference (new - old) of all changes before the current hunk.
    let mut delta: isize = 0;
    while i < out_changes.len() {
        let mut j = i;
        while j + 1 < out_changes.len()
            && out_changes[j + 1].old.start <= out_changes[j].old.end + 2 * CONTEXT
        {
            j += 1;
        }
        let ctx_start = out_changes[i].old.start.saturating_sub(CONTEXT);
        let ctx_end = (out_changes[j].old.end + CONTEXT).min(n_old);
        let mut body = String::new();
        let old_len = ctx_end - ctx_start;
        let mut new_len = old_len;
        let mut line = ctx_start;
        for c in &out_changes[i..=j] {
            push_lines(&mut body, ' ', &old_split[line..c.old.start]);
            push_lines(&mut body, '-', &old_split[c.old.clone()]);
            push_lines(&mut body, '+', &c.new_lines);
            new_len = new_len + c.new_lines.len() - c.old.len();
            line = c.old.end;
        }
        push_lines(&mut body, ' ', &old_split[line..ctx_end]);
        let new_start = (ctx_start as isize + delta).max(0) as usize;
        let _ = writeln!(
            out,
            "@@ -{} +{} @@",
            range_label(ctx_start, old_len),
            range_label(new_start, new_len)
        );
        out.push_str(&body);
        delta += new_len as isize - old_len as isize;
        i = j + 1;
    }
    out
}

/// `start,len` in the 1-based form of unified diffs (`start` is the line before an empty
/// range).
fn range_label(start0: usize, len: usize) -> String {
    if len == 0 {
        format!("{start0},0")
    } else if len == 1 {
        format!("{}", start0 + 1)
    } else {
        format!("{},{len}", start0 + 1)
    }
}

/// Diff lines: each the marker, the line without its `\n` (a CRLF file keeps its `\r`, as
/// `diff -u` does, so the patch applies), and the no-newline note.
fn push_lines(out: &mut String, marker: char, lines: &[String]) {
    for line in lines {
        out.push(marker);
        let (content, has_nl) = match line.strip_suffix('\n') {
            Some(c) => (c, true),
            None => (line.as_str(), false),
        };
        out.push_str(content);
        out.push('\n');
        if !has_nl {
            out.push_str("\\ No newline at end of file\n");
        }
    }
}

/// Lines with their terminators.
fn split_lines(text: &str) -> Vec<String> {
    text.split_inclusive('\n').map(str::to_string).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn edit(range: Range<usize>, text: &str) -> Edit {
        Edit {
            range,
            text: text.to_string(),
        }
    }

    #[test]
    fn one_line_change_with_context() {
        let old = "a\nb\nc\nd\ne\nf\ng\nh\n";
        let d = unified("f.json", old, &[edit(8..9, "E")]);
        assert_eq!(
            d,
            "--- f.json\n+++ f.json\n@@ -2,7 +2,7 @@\n b\n c\n d\n-e\n+E\n f\n g\n h\n"
        );
    }

    #[test]
    fn insertion_of_lines_and_far_apart_hunks() {
        let old: String = (1..=20).map(|i| format!("{i}\n")).collect();
        // Insert two lines after "2", change "19".
        let at = old.find("3\n").unwrap();
        let nineteen = old.find("19\n").unwrap();
        let d = unified(
            "x",
            &old,
            &[
                edit(at..at, "2a\n2b\n"),
                edit(nineteen..nineteen + 2, "XIX"),
            ],
        );
        let want = "--- x\n+++ x\n\
            @@ -1,6 +1,8 @@\n 1\n 2\n-3\n+2a\n+2b\n+3\n 4\n 5\n 6\n\
            @@ -16,5 +18,5 @@\n 16\n 17\n 18\n-19\n+XIX\n 20\n";
        assert_eq!(d, want);
    }

    #[test]
    fn crlf_and_missing_final_newline() {
        let old = "{\r\n  \"a\": 1\r\n}";
        let d = unified("c", old, &[edit(10..11, "2")]);
        assert_eq!(
            d,
            "--- c\n+++ c\n@@ -1,3 +1,3 @@\n {\r\n-  \"a\": 1\r\n+  \"a\": 2\r\n }\n\\ No newline at end of file\n"
        );
    }

    #[test]
    fn empty_old_text() {
        assert_eq!(
            unified("x", "", &[edit(0..0, "a\nb")]),
            "--- x\n+++ x\n@@ -0,0 +1,2 @@\n+a\n+b\n\\ No newline at end of file\n"
        );
        assert_eq!(
            unified("x", "", &[edit(0..0, "a\n")]),
            "--- x\n+++ x\n@@ -0,0 +1 @@\n+a\n"
        );
        assert_eq!(unified("x", "", &[edit(0..0, "")]), "");
    }

    #[test]
    fn no_change_no_diff() {
        assert_eq!(unified("x", "abc\n", &[edit(0..1, "a")]), "");
        assert_eq!(unified("x", "abc\n", &[]), "");
    }

    /// The diff applied by a straightforward patcher gives the new text back.
    #[test]
    fn diff_applies_to_the_new_text() {
        let old: String = (0..40).map(|i| format!("line {i}\n")).collect();
        let edits = [
            edit(0..0, "head\n"),
            edit(
                old.find("line 5\n").unwrap()..old.find("line 7\n").unwrap(),
                "",
            ),
            edit(
                old.find("line 9\n").unwrap()..old.find("line 9\n").unwrap() + 6,
                "nine",
            ),
            edit(old.len()..old.len(), "tail"),
        ];
        let new = super::super::edit::apply(&old, 0..old.len(), &edits);
        let d = unified("x", &old, &edits);
        assert_eq!(apply_patch(&old, &d), new, "{d}");
    }

    /// A minimal unified-diff applier for the test above.
    fn apply_patch(old: &str, diff: &str) -> String {
        let old_lines: Vec<&str> = old.split_inclusive('\n').collect();
        let mut out = String::new();
        let mut pos = 0;
        let mut lines = diff.lines().skip(2).peekable();
        while let Some(h) = lines.next() {
            let range = h.trim_start_matches("@@ -").split(' ').next().unwrap();
            let start: usize = range.split(',').next().unwrap().parse().unwrap();
            let start0 = if range.ends_with(",0") {
                start
            } else {
                start - 1
            };
            for l in &old_lines[pos..start0] {
                out.push_str(l);
            }
            pos = start0;
            while let Some(l) = lines.peek() {
                if l.starts_with("@@") {
                    break;
                }
                let l = lines.next().unwrap();
                let no_nl = lines.peek() == Some(&"\\ No newline at end of file");
                if no_nl {
                    lines.next();
                }
                let nl = if no_nl { "" } else { "\n" };
                match l.as_bytes()[0] {
                    b' ' => {
                        out.push_str(&l[1..]);
                        out.push_str(nl);
                        pos += 1;
                    }
                    b'-' => pos += 1,
                    b'+' => {
                        out.push_str(&l[1..]);
                        out.push_str(nl);
                    }
                    _ => panic!("bad line {l}"),
                }
            }
        }
        for l in &old_lines[pos..] {
            out.push_str(l);
        }
        out
    }
}
