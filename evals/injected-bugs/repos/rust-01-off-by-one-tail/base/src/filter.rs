//! Selecting the lines that contain a piece of text.

/// Indices of the lines containing `needle`.
pub fn matching(lines: &[String], needle: &str) -> Vec<usize> {
    lines
        .iter()
        .enumerate()
        .filter(|(_, line)| line.contains(needle))
        .map(|(i, _)| i)
        .collect()
}

/// The matching lines, each prefixed by its 1-based number.
pub fn numbered(lines: &[String], needle: &str) -> Vec<String> {
    matching(lines, needle)
        .into_iter()
        .map(|i| format!("{}: {}", i + 1, lines[i]))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_start_at_one() {
        let lines = vec!["a".to_string(), "error: b".to_string()];
        assert_eq!(numbered(&lines, "error"), vec!["2: error: b".to_string()]);
    }
}
