//! The `invisible-text` analyzer lane: bidirectional controls and invisible
//! characters that a change adds (the Trojan Source attack, CVE-2021-42574, and its
//! kin: code that reads one way on screen and compiles another, identifiers that look
//! alike, text hidden in tag characters). It reads only the lines the working tree
//! adds or changes against the merge base, so a character already in the base is not
//! raised again, and answers in SARIF: a bidirectional control is an `error` (the
//! review's `blocker`), another invisible character a `warning` (`major`), one result
//! per line and kind, naming each character and its column.
//!
//! The reviewers see the diff exactly as it is, hidden characters included, so that
//! they can reason about them too; what Conclave writes from their answers shows
//! them escaped (`\u202e`).

use conclave_shared::invisible::{escaped, is_invisible};
use serde_sarif::sarif::{
    ArtifactLocation, Location, Message, PhysicalLocation, PropertyBag, Region, Result as SarifResult, ResultLevel,
    Run, Sarif, Tool, ToolComponent,
};
use std::collections::BTreeMap;
use std::io::Read;
use std::path::Path;

use crate::diff::{ChangeError, working_tree_changes};

/// The lane's name in the built-in conclaves.
pub const LANE: &str = "invisible-text";

/// The largest file read; a larger one is not scanned.
const MAX_FILE_BYTES: u64 = 16 * 1024 * 1024;

/// One kind of finding.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Kind {
    /// A bidirectional control: text shown in another order than it is read.
    Bidi,
    /// Another invisible character.
    Invisible,
}

/// The invisible characters of one changed line, of one kind.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Hit {
    /// The file, relative to the repository root.
    pub file: String,
    /// The line, from 1.
    pub line: u64,
    /// The kind.
    pub kind: Kind,
    /// Each character with its column (in characters, from 1).
    pub characters: Vec<(u64, char)>,
}

/// Whether `c` reorders text: the bidirectional embeddings, overrides, isolates and
/// marks.
pub fn is_bidi(c: char) -> bool {
    matches!(c, '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}' | '\u{200E}' | '\u{200F}' | '\u{061C}')
}

/// The invisible characters on the lines of `files` that the working tree of the
/// repository at `repo` adds or changes against `base` (see
/// [`working_tree_changes`]). Runs git and reads files.
pub fn scan(repo: &Path, base: &str, files: &[String]) -> Result<Vec<Hit>, ChangeError> {
    let root = crate::diff::repository_root(repo)?;
    let mut hits = Vec::new();
    for changed in working_tree_changes(&root, base, files)? {
        let Some(text) = read_text(&root.join(&changed.path)) else { continue };
        let lines: Vec<&str> = text.split('\n').collect();
        for &(from, to) in &changed.changed_lines {
            for number in from..=to {
                let Some(line) = usize::try_from(number).ok().and_then(|n| lines.get(n.checked_sub(1)?)) else {
                    continue;
                };
                hits.extend(scan_line(&changed.path, number, line));
            }
        }
    }
    Ok(hits)
}

/// The hits of one line, bidirectional controls first.
pub fn scan_line(file: &str, line: u64, text: &str) -> Vec<Hit> {
    let mut by_kind: BTreeMap<Kind, Vec<(u64, char)>> = BTreeMap::new();
    for (column, c) in text.chars().enumerate().filter(|(_, c)| *c != '\r' && is_invisible(*c)) {
        let kind = if is_bidi(c) { Kind::Bidi } else { Kind::Invisible };
        by_kind.entry(kind).or_default().push((column as u64 + 1, c));
    }
    by_kind.into_iter().map(|(kind, characters)| Hit { file: file.to_string(), line, kind, characters }).collect()
}

/// A text file's contents, or `None` (unreadable, too large, binary).
fn read_text(path: &Path) -> Option<String> {
    let file = std::fs::File::open(path).ok()?;
    let mut bytes = Vec::new();
    file.take(MAX_FILE_BYTES + 1).read_to_end(&mut bytes).ok()?;
    if bytes.len() as u64 > MAX_FILE_BYTES || bytes.contains(&0) {
        return None;
    }
    Some(String::from_utf8_lossy(&bytes).into_owned())
}

/// The hits as a SARIF 2.1.0 log, columns counted in code points.
pub fn sarif(hits: &[Hit]) -> Sarif {
    let results: Vec<SarifResult> = hits.iter().map(result).collect();
    let driver = ToolComponent::builder()
        .name("conclave invisible-text")
        .information_uri("https://nvd.nist.gov/vuln/detail/CVE-2021-42574")
        .build();
    let run = Run::builder()
        .tool(Tool::builder().driver(driver).build())
        .column_kind(serde_json::json!("unicodeCodePoints"))
        .results(results)
        .build();
    Sarif::builder().version(serde_json::json!("2.1.0")).runs(vec![run]).build()
}

fn result(hit: &Hit) -> SarifResult {
    let shown: Vec<String> =
        hit.characters.iter().map(|(column, c)| format!("{} at column {column}", name(*c))).collect();
    let (rule, level, severity, why) = match hit.kind {
        Kind::Bidi => (
            "bidi-control",
            ResultLevel::Error,
            "blocker",
            "bidirectional controls make code display in another order than the compiler reads it (Trojan \
             Source, CVE-2021-42574)",
        ),
        Kind::Invisible => (
            "invisible-character",
            ResultLevel::Warning,
            "major",
            "invisible characters hide text from a reader: identifiers that look the same but differ, or \
             content smuggled past review",
        ),
    };
    let text = format!(
        "This line adds {}: {why}. Remove it, or write it as an escape where a string needs it.",
        shown.join(", ")
    );
    let region = Region::builder().start_line(hit.line as i64).start_column(hit.characters[0].0 as i64).build();
    let place = PhysicalLocation::builder()
        .artifact_location(ArtifactLocation::builder().uri(hit.file.clone()).build())
        .region(region)
        .build();
    let mut properties = BTreeMap::new();
    properties.insert("severity".to_string(), serde_json::json!(severity));
    SarifResult::builder()
        .rule_id(rule)
        .level(level)
        .message(Message::builder().text(text).build())
        .locations(vec![Location::builder().physical_location(place).build()])
        .properties(PropertyBag::builder().additional_properties(properties).build())
        .build()
}

/// A character's code point and, for the usual suspects, its name.
fn name(c: char) -> String {
    let known = match c {
        '\u{202A}' => "LEFT-TO-RIGHT EMBEDDING",
        '\u{202B}' => "RIGHT-TO-LEFT EMBEDDING",
        '\u{202C}' => "POP DIRECTIONAL FORMATTING",
        '\u{202D}' => "LEFT-TO-RIGHT OVERRIDE",
        '\u{202E}' => "RIGHT-TO-LEFT OVERRIDE",
        '\u{2066}' => "LEFT-TO-RIGHT ISOLATE",
        '\u{2067}' => "RIGHT-TO-LEFT ISOLATE",
        '\u{2068}' => "FIRST STRONG ISOLATE",
        '\u{2069}' => "POP DIRECTIONAL ISOLATE",
        '\u{200E}' => "LEFT-TO-RIGHT MARK",
        '\u{200F}' => "RIGHT-TO-LEFT MARK",
        '\u{061C}' => "ARABIC LETTER MARK",
        '\u{200B}' => "ZERO WIDTH SPACE",
        '\u{200C}' => "ZERO WIDTH NON-JOINER",
        '\u{200D}' => "ZERO WIDTH JOINER",
        '\u{2060}' => "WORD JOINER",
        '\u{FEFF}' => "ZERO WIDTH NO-BREAK SPACE",
        '\u{00AD}' => "SOFT HYPHEN",
        _ => "",
    };
    let code = format!("U+{:04X}", c as u32);
    let shown = escaped(c);
    if known.is_empty() { format!("{code} (`{shown}`)") } else { format!("{code} {known} (`{shown}`)") }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_line_s_characters_are_grouped_by_kind_with_their_columns() {
        let hits = scan_line("a.rs", 3, "let s = \"\u{202E}x\u{2066}\"; // a\u{200B}b\r");
        assert_eq!(hits.len(), 2);
        assert_eq!((hits[0].kind, hits[0].characters.clone()), (Kind::Bidi, vec![(10, '\u{202E}'), (12, '\u{2066}')]));
        assert_eq!((hits[1].kind, hits[1].characters.clone()), (Kind::Invisible, vec![(20, '\u{200B}')]));
        assert!(scan_line("a.rs", 1, "plain text, tabs\tand é").is_empty());
    }

    #[test]
    fn the_log_reads_back_as_findings_a_bidi_control_a_blocker() {
        let hits = scan_line("src/auth.rs", 7, "if role != \"admin\u{202E}\u{2066}\" {");
        let log = serde_json::to_string(&sarif(&hits)).expect("serializes");
        let findings = conclave_schema::sarif::findings(&log, LANE, None).expect("a SARIF log");
        let first = &findings["findings"][0];
        assert_eq!(
            (first["severity"].as_str(), first["file"].as_str(), first["line"].as_u64()),
            (Some("blocker"), Some("src/auth.rs"), Some(7))
        );
        let description = first["description"].as_str().unwrap_or_default();
        assert!(description.starts_with("[bidi-control] This line adds U+202E RIGHT-TO-LEFT OVERRIDE (`\\u202e`) at column 18, U+2066 LEFT-TO-RIGHT ISOLATE (`\\u2066`) at column 19"), "{description}");
        assert!(!description.contains('\u{202E}'), "the message shows the character escaped");
    }
}
