//! Reading and selecting lines of log files.

pub mod filter;

use std::fs::File;
use std::io::{self, BufRead, BufReader};
use std::path::Path;

/// Reads every line of `path`, without line endings.
pub fn read_lines(path: &Path) -> io::Result<Vec<String>> {
    let file = File::open(path)?;
    BufReader::new(file).lines().collect()
}

/// The first `n` lines (all of them when there are fewer).
pub fn first_lines(lines: &[String], n: usize) -> &[String] {
    &lines[..n.min(lines.len())]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Vec<String> {
        (1..=5).map(|i| format!("line {i}")).collect()
    }

    #[test]
    fn first_lines_clamps_to_the_length() {
        assert_eq!(first_lines(&sample(), 2), &sample()[..2]);
        assert_eq!(first_lines(&sample(), 9).len(), 5);
    }
}
