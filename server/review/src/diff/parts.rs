//! Splitting a change too large for one agent call into parts, each at most a
//! part's size in bytes: files grouped by directory (a directory's files stay
//! together while they fit, directories packed into parts in path order), a file too
//! large for a part split by hunks (each piece the file's header line and whole
//! hunks, numbered as the annotated diff numbers them). Only a hunk that alone
//! exceeds a part is left out. Beyond `max_parts`, the smallest files are reviewed
//! first and the rest are not reviewed. Pure: text in, parts out.

use serde::{Deserialize, Serialize};

use super::parse::ChangedFile;

/// The default cap on the parts of one change (`--max-parts`).
pub const DEFAULT_MAX_PARTS: usize = 8;

/// One file of a change and its annotated diff (its header line, then its hunks).
#[derive(Debug, Clone, Copy)]
pub struct FileDiff<'a> {
    /// The file.
    pub file: &'a ChangedFile,
    /// Its part of the annotated diff.
    pub diff: &'a str,
}

/// One part of a change: what one call of a reviewer reviews.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Part {
    /// `2 of 5`: which part this is, for the model and the report.
    pub part: String,
    /// The files in this part (a file split by hunks in each part it is in, its
    /// changed lines those of its hunks here).
    pub files: Vec<ChangedFile>,
    /// The part's annotated diff.
    pub diff: String,
}

/// A file left out of the review: beyond the cap on parts.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct OmittedFile {
    /// Its path.
    pub path: String,
    /// The size of its part of the diff, in bytes.
    pub diff_bytes: usize,
}

/// A hunk left out because it alone is larger than a part.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LeftOutHunk {
    /// The file.
    pub path: String,
    /// The hunk's lines in the new file, inclusive (for a pure deletion, the line
    /// before which it removed lines, twice).
    pub lines: (u64, u64),
    /// The hunk's size in the annotated diff, in bytes.
    pub diff_bytes: usize,
}

/// A change split into parts.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Split {
    /// The parts, in path order.
    pub parts: Vec<Part>,
    /// Hunks larger than a part, which no part holds.
    pub left_out: Vec<LeftOutHunk>,
    /// Files beyond `max_parts`, not reviewed, largest first.
    pub not_reviewed: Vec<OmittedFile>,
}

/// Splits `files` into parts of at most `part_bytes` bytes each (pieces joined by a
/// newline, as the whole diff joins files), at most `max_parts` of them (at least
/// one). See the module header for the rules.
pub fn split(files: &[FileDiff<'_>], part_bytes: usize, max_parts: usize) -> Split {
    let max_parts = max_parts.max(1);
    let pieces: Vec<FilePieces> = files.iter().map(|f| pieces_of(f, part_bytes)).collect();
    let dirs: Vec<&str> = files.iter().map(|f| directory_of(&f.file.path)).collect();
    let in_path_order = |mut chosen: Vec<usize>| {
        chosen.sort_by(|&a, &b| (dirs[a], &files[a].file.path).cmp(&(dirs[b], &files[b].file.path)));
        pack(&chosen, &dirs, &pieces, part_bytes)
    };
    let packed = in_path_order((0..files.len()).collect());
    if packed.len() <= max_parts {
        return render(files, &pieces, packed, |_| true, Vec::new());
    }
    // The smallest files first: the most of them that still fit in `max_parts` parts
    // (fewer files never need more parts), found by bisection.
    let mut by_size: Vec<usize> = (0..files.len()).collect();
    by_size.sort_by_key(|&i| (files[i].diff.len(), i));
    let (mut low, mut high) = (0, files.len() - 1);
    while low < high {
        let mid = (low + high).div_ceil(2);
        if in_path_order(by_size[..mid].to_vec()).len() <= max_parts {
            low = mid;
        } else {
            high = mid - 1;
        }
    }
    let packed = in_path_order(by_size[..low].to_vec());
    let not_reviewed = by_size[low..]
        .iter()
        .rev()
        .map(|&i| OmittedFile { path: files[i].file.path.clone(), diff_bytes: files[i].diff.len() })
        .collect();
    let kept: std::collections::HashSet<usize> = by_size[..low].iter().copied().collect();
    render(files, &pieces, packed, |i| kept.contains(&i), not_reviewed)
}

/// The directory of a path (`""` at the root).
fn directory_of(path: &str) -> &str {
    path.rsplit_once('/').map_or("", |(dir, _)| dir)
}
/// One file cut into pieces that each fit a part, and its hunks that fit none.
#[derive(Debug, Default)]
struct FilePieces {
    /// Each piece: the byte ranges of the file's diff it holds (the header, then
    /// whole hunks) and its size once joined.
    pieces: Vec<(Vec<(usize, usize)>, usize)>,
    /// The hunks larger than a part, as byte ranges.
    left_out: Vec<(usize, usize)>,
}

/// The file's diff as one piece when it fits (with its newline), else its header
/// with as many whole hunks as fit, again and again.
fn pieces_of(file: &FileDiff<'_>, part_bytes: usize) -> FilePieces {
    let text = file.diff;
    if text.len() < part_bytes {
        return FilePieces { pieces: vec![(vec![(0, text.len())], text.len() + 1)], left_out: Vec::new() };
    }
    let hunks = hunk_ranges(text);
    let header = (0, hunks.first().map_or(text.len(), |h| h.0));
    let mut out = FilePieces::default();
    let mut current: Vec<(usize, usize)> = Vec::new();
    let mut size = header.1 + 1;
    for hunk in hunks {
        let len = hunk.1 - hunk.0;
        if header.1 + len + 1 > part_bytes {
            out.left_out.push(hunk);
            continue;
        }
        if size + len > part_bytes {
            out.pieces.push((std::iter::once(header).chain(current.drain(..)).collect(), size));
            size = header.1 + 1;
        }
        current.push(hunk);
        size += len;
    }
    if !current.is_empty() {
        out.pieces.push((std::iter::once(header).chain(current).collect(), size));
    } else if out.pieces.is_empty() && out.left_out.is_empty() && header.1 < part_bytes {
        // No hunk at all (a binary file, a rename): its header is its whole diff.
        out.pieces.push((vec![header], header.1 + 1));
    }
    out
}

/// The byte range of each hunk: from its `@@ ` line to the next one (annotated body
/// lines start with `+`, `-` or a space, so a line starting `@@ ` is a header).
fn hunk_ranges(text: &str) -> Vec<(usize, usize)> {
    let mut starts: Vec<usize> = Vec::new();
    let mut offset = 0;
    for line in text.split_inclusive('\n') {
        if line.starts_with("@@ ") {
            starts.push(offset);
        }
        offset += line.len();
    }
    starts.iter().enumerate().map(|(k, &s)| (s, starts.get(k + 1).copied().unwrap_or(text.len()))).collect()
}

/// Packs the pieces of `files` (indices, in path order) into parts: a directory's
/// pieces together in the current part when they fit, else in a new part when they
/// fit in one, else piece by piece. Each part is a list of (file, piece) pairs.
fn pack(files: &[usize], dirs: &[&str], pieces: &[FilePieces], part_bytes: usize) -> Vec<Vec<(usize, usize)>> {
    let mut parts: Vec<Vec<(usize, usize)>> = Vec::new();
    let mut used = 0;
    let mut k = 0;
    while k < files.len() {
        let end = k + files[k..].iter().take_while(|&&f| dirs[f] == dirs[files[k]]).count();
        let group: Vec<(usize, usize)> =
            files[k..end].iter().flat_map(|&f| (0..pieces[f].pieces.len()).map(move |p| (f, p))).collect();
        let size: usize = group.iter().map(|&(f, p)| pieces[f].pieces[p].1).sum();
        match parts.last_mut() {
            Some(open) if used + size <= part_bytes => {
                open.extend(group);
                used += size;
            }
            _ if size <= part_bytes => {
                parts.push(group);
                used = size;
            }
            _ => {
                for (f, p) in group {
                    let piece = pieces[f].pieces[p].1;
                    match parts.last_mut() {
                        Some(open) if used + piece <= part_bytes => open.push((f, p)),
                        _ => {
                            parts.push(vec![(f, p)]);
                            used = 0;
                        }
                    }
                    used += piece;
                }
            }
        }
        k = end;
    }
    parts.retain(|p| !p.is_empty());
    parts
}

/// The parts' texts and files, and the hunks left out of the files `kept` says are
/// reviewed.
fn render(
    files: &[FileDiff<'_>],
    pieces: &[FilePieces],
    packed: Vec<Vec<(usize, usize)>>,
    kept: impl Fn(usize) -> bool,
    not_reviewed: Vec<OmittedFile>,
) -> Split {
    let count = packed.len();
    let parts = packed
        .into_iter()
        .enumerate()
        .map(|(n, members)| {
            let mut diff = String::with_capacity(members.iter().map(|&(f, p)| pieces[f].pieces[p].1).sum());
            let mut in_part: Vec<ChangedFile> = Vec::new();
            for (f, p) in members {
                let text = files[f].diff;
                let ranges = &pieces[f].pieces[p].0;
                if !diff.is_empty() {
                    diff.push('\n');
                }
                for &(from, to) in ranges {
                    diff.push_str(&text[from..to]);
                }
                let whole = ranges.len() == 1 && ranges[0] == (0, text.len());
                in_part.push(if whole { files[f].file.clone() } else { piece_file(files[f].file, text, ranges) });
            }
            Part { part: format!("{} of {count}", n + 1), files: in_part, diff }
        })
        .collect();
    let left_out = (0..files.len())
        .filter(|&i| kept(i))
        .flat_map(|i| {
            pieces[i].left_out.iter().map(move |&(from, to)| LeftOutHunk {
                path: files[i].file.path.clone(),
                lines: new_lines(&files[i].diff[from..to]),
                diff_bytes: to - from,
            })
        })
        .collect();
    Split { parts, left_out, not_reviewed }
}

/// A file as one piece of it shows it: its changed lines only those of the piece's hunks.
fn piece_file(file: &ChangedFile, text: &str, ranges: &[(usize, usize)]) -> ChangedFile {
    let spans: Vec<(u64, u64)> = ranges.iter().skip(1).map(|&(from, to)| new_lines(&text[from..to])).collect();
    let changed_lines = file
        .changed_lines
        .iter()
        .copied()
        .filter(|&(start, end)| spans.iter().any(|&(a, b)| start <= b && end >= a))
        .collect();
    ChangedFile { changed_lines, ..file.clone() }
}

/// The new-file lines of a hunk, from its header `@@ -a,b +c,d @@`: `c` to `c+d-1`
/// (`c` twice when it adds none).
fn new_lines(hunk: &str) -> (u64, u64) {
    let new = hunk.split(' ').find_map(|w| w.strip_prefix('+')).unwrap_or("0");
    let (start, len) = new.split_once(',').unwrap_or((new, "1"));
    let (start, len): (u64, u64) = (start.parse().unwrap_or(0), len.parse().unwrap_or(1));
    (start, start + len.saturating_sub(1))
}
