//! Links that hold: every Markdown file of the repository is read, and the test fails
//! on a relative link or `#anchor` that does not resolve (anchors as GitHub makes them
//! from headings, through comrak, a port of GitHub's renderer), and on a `conclave`
//! subcommand or flag in a fenced `sh` block that the command line does not have
//! (checked against the clap definitions `conclave` itself parses with). No network.

use clap::CommandFactory;
use comrak::nodes::NodeValue;
use comrak::{Anchorizer, Arena, Options, parse_document};
use std::collections::{BTreeMap, HashSet};
use std::path::{Component, Path, PathBuf};

/// Directories never read: build output, dependencies, git's own.
const SKIPPED_DIRS: &[&str] = &[".git", "target", "node_modules", "dist"];
/// Markdown that is test data, not documentation: hostile input for the sanitizer.
const SKIPPED_PATHS: &[&str] = &["tests/fixtures/inert"];
/// Fenced blocks whose `conclave` commands are checked.
const SHELL_LANGUAGES: &[&str] = &["sh", "bash", "shell"];

/// One problem: where, and what.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Problem {
    file: PathBuf,
    line: usize,
    message: String,
}

/// What a Markdown file offers and refers to.
#[derive(Default)]
struct Document {
    anchors: HashSet<String>,
    links: Vec<(usize, String)>,
    shell_blocks: Vec<(usize, String)>,
}

/// Every problem in the Markdown files under `root`, checking `conclave` commands
/// against `cli`.
fn check_tree(root: &Path, cli: &clap::Command) -> Vec<Problem> {
    let mut files = Vec::new();
    markdown_files(root, root, &mut files);
    let documents: BTreeMap<PathBuf, Document> = files
        .into_iter()
        .map(|path| {
            let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
            (path, read_document(&text))
        })
        .collect();
    let mut problems = Vec::new();
    for (path, document) in &documents {
        let at = |line: usize, message: String| Problem { file: path.clone(), line, message };
        for (line, url) in &document.links {
            if let Err(message) = resolve_link(root, path, url, &documents) {
                problems.push(at(*line, message));
            }
        }
        for (line, block) in &document.shell_blocks {
            for message in check_shell_block(block, cli) {
                problems.push(at(*line, message));
            }
        }
    }
    problems
}

fn markdown_files(root: &Path, dir: &Path, out: &mut Vec<PathBuf>) {
    let mut entries: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|entry| entry.expect("directory entry").path())
        .collect();
    entries.sort();
    for path in entries {
        let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        let relative = path.strip_prefix(root).unwrap_or(&path).to_string_lossy().into_owned();
        if SKIPPED_PATHS.contains(&relative.as_str()) {
            continue;
        }
        if path.is_dir() && !path.is_symlink() {
            if !SKIPPED_DIRS.contains(&name.as_str()) && !name.starts_with("target") {
                markdown_files(root, &path, out);
            }
        } else if name.ends_with(".md") {
            out.push(path);
        }
    }
}

/// The anchors, links and shell blocks of one Markdown text.
fn read_document(text: &str) -> Document {
    let arena = Arena::new();
    let mut options = Options::default();
    options.extension.table = true;
    options.extension.strikethrough = true;
    let root = parse_document(&arena, text, &options);
    let mut anchorizer = Anchorizer::new();
    let mut document = Document::default();
    for node in root.descendants() {
        let data = node.data();
        let line = data.sourcepos.start.line;
        match &data.value {
            NodeValue::Heading(_) => {
                document.anchors.insert(anchorizer.anchorize(&node.collect_text()));
            }
            NodeValue::Link(link) | NodeValue::Image(link) => document.links.push((line, link.url.clone())),
            NodeValue::CodeBlock(block) => {
                let language = block.info.split_whitespace().next().unwrap_or_default();
                if SHELL_LANGUAGES.contains(&language) {
                    document.shell_blocks.push((line, block.literal.clone()));
                }
            }
            NodeValue::HtmlInline(html) => document.anchors.extend(html_anchors(html)),
            NodeValue::HtmlBlock(html) => document.anchors.extend(html_anchors(&html.literal)),
            _ => {}
        }
    }
    document
}

/// Anchors an HTML tag names itself (`<a id="x">`, `<a name="x">`).
fn html_anchors(html: &str) -> Vec<String> {
    ["id=\"", "name=\""]
        .iter()
        .flat_map(|attribute| html.match_indices(attribute).map(move |(at, _)| at + attribute.len()))
        .filter_map(|start| html[start..].split('"').next().map(str::to_string))
        .collect()
}

/// Checks one link: a relative path must exist inside the repository, and an anchor
/// into a Markdown file must be one of its headings.
fn resolve_link(root: &Path, from: &Path, url: &str, documents: &BTreeMap<PathBuf, Document>) -> Result<(), String> {
    let has_scheme = url.split_once(':').is_some_and(|(scheme, _)| {
        !scheme.is_empty() && scheme.chars().all(|c| c.is_ascii_alphanumeric() || "+.-".contains(c))
    });
    if has_scheme || url.starts_with("//") {
        return Ok(());
    }
    let (path, anchor) = url.split_once('#').map_or((url, None), |(path, anchor)| (path, Some(anchor)));
    let path = path.replace("%20", " ");
    let target = if path.is_empty() {
        from.to_path_buf()
    } else if let Some(from_root) = path.strip_prefix('/') {
        normalize(&root.join(from_root))
    } else {
        normalize(&from.parent().unwrap_or(root).join(&path))
    };
    if !target.starts_with(root) {
        return Err(format!("link `{url}` leaves the repository"));
    }
    if !target.exists() {
        return Err(format!("link `{url}`: {} does not exist", target.strip_prefix(root).unwrap_or(&target).display()));
    }
    let Some(anchor) = anchor.filter(|a| !a.is_empty()) else { return Ok(()) };
    let Some(document) = documents.get(&target) else { return Ok(()) };
    if document.anchors.contains(&anchor.to_lowercase()) {
        return Ok(());
    }
    let name = target.strip_prefix(root).unwrap_or(&target).display();
    Err(format!("link `{url}`: {name} has no heading with the anchor `#{anchor}`"))
}

/// The path with `.` and `..` taken out, without touching the disk.
fn normalize(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for component in path.components() {
        match component {
            Component::ParentDir => {
                out.pop();
            }
            Component::CurDir => {}
            other => out.push(other),
        }
    }
    out
}

/// The problems of every `conclave` command in one shell block.
fn check_shell_block(block: &str, cli: &clap::Command) -> Vec<String> {
    let joined = block.replace("\\\n", " ");
    let mut problems = Vec::new();
    for line in joined.lines() {
        for words in shell_commands(line) {
            let start = words.iter().position(|w| !is_assignment(w)).unwrap_or(words.len());
            let Some(program) = words.get(start) else { continue };
            if program == "conclave" || program.ends_with("/conclave") {
                problems.extend(check_invocation(cli, &words[start + 1..]).err());
            }
        }
    }
    problems
}

fn is_assignment(word: &str) -> bool {
    word.split_once('=')
        .is_some_and(|(name, _)| !name.is_empty() && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_'))
}

/// The simple commands of one line: its words, split at `|`, `;`, `&&` and `||`
/// outside quotes and outside the `[...]` of a usage synopsis, up to a comment.
fn shell_commands(line: &str) -> Vec<Vec<String>> {
    let (mut commands, mut words, mut word) = (Vec::new(), Vec::new(), String::new());
    let (mut quote, mut depth, mut chars) = (None::<char>, 0usize, line.chars().peekable());
    let end_word = |word: &mut String, words: &mut Vec<String>| {
        if !word.is_empty() {
            words.push(std::mem::take(word));
        }
    };
    while let Some(c) = chars.next() {
        match (quote, c) {
            (Some(q), c) if c == q => quote = None,
            (Some(_), c) => word.push(c),
            (None, '\'' | '"') => quote = Some(c),
            (None, '#') if word.is_empty() => break,
            (None, '[' | ']') => {
                depth = if c == '[' { depth + 1 } else { depth.saturating_sub(1) };
                word.push(c);
            }
            (None, '|' | ';' | '&') if depth == 0 => {
                if matches!(chars.peek(), Some('|' | '&')) {
                    chars.next();
                }
                end_word(&mut word, &mut words);
                commands.push(std::mem::take(&mut words));
            }
            (None, c) if c.is_whitespace() => end_word(&mut word, &mut words),
            (None, c) => word.push(c),
        }
    }
    end_word(&mut word, &mut words);
    commands.push(words);
    commands.retain(|words| !words.is_empty());
    commands
}

/// Walks the words after `conclave` down its subcommands, checking every flag on the
/// command it is given to (or a global one of a command above).
fn check_invocation(cli: &clap::Command, words: &[String]) -> Result<(), String> {
    let mut path = vec![cli];
    let mut positional_seen = false;
    let mut words = words.iter().map(|w| w.trim_matches(|c| matches!(c, '[' | ']'))).filter(|w| !w.is_empty());
    while let Some(word) = words.next() {
        let current = *path.last().expect("the root");
        let name = || path.iter().map(|c| c.get_name()).collect::<Vec<_>>().join(" ");
        // The end of the options, or a redirection (`> file`, `2>&1`): nothing of the CLI's after.
        if word == "--" || word.trim_start_matches(|c: char| c.is_ascii_digit()).starts_with(['<', '>']) {
            break;
        }
        if let Some(flag) = flag_name(word) {
            let Some(arg) = find_flag(&path, &flag) else {
                return Err(format!("`{}` has no flag `{word}`", name()));
            };
            if arg.get_action().takes_values() && !word.contains('=') {
                words.next();
            }
            continue;
        }
        if current.has_subcommands() && !positional_seen {
            if let Some(sub) = current.find_subcommand(word) {
                path.push(sub);
                continue;
            }
            if current.get_positionals().next().is_none() {
                return Err(format!("`{}` has no subcommand `{word}`", name()));
            }
        }
        positional_seen = true;
    }
    Ok(())
}

/// `--name` or `--name=value` gives `--name`; `-x` gives `-x`; anything else none.
fn flag_name(word: &str) -> Option<String> {
    if let Some(long) = word.strip_prefix("--") {
        let name = long.split('=').next().unwrap_or_default();
        return name.starts_with(|c: char| c.is_ascii_alphanumeric()).then(|| format!("--{name}"));
    }
    let short = word.strip_prefix('-')?;
    (short.len() == 1 && short.starts_with(|c: char| c.is_ascii_alphabetic())).then(|| word.to_string())
}

fn find_flag<'c>(path: &[&'c clap::Command], flag: &str) -> Option<&'c clap::Arg> {
    let current = path.last()?;
    let matches = |arg: &clap::Arg| match flag.strip_prefix("--") {
        Some(long) => arg.get_long() == Some(long) || arg.get_all_aliases().is_some_and(|a| a.contains(&long)),
        None => flag.chars().nth(1).is_some_and(|short| arg.get_short() == Some(short)),
    };
    current
        .get_arguments()
        .find(|arg| matches(arg))
        .or_else(|| path.iter().flat_map(|c| c.get_arguments()).find(|arg| arg.is_global_set() && matches(arg)))
        .or_else(|| HELP.get_or_init(help_args).iter().find(|arg| matches(arg)))
}

static HELP: std::sync::OnceLock<Vec<clap::Arg>> = std::sync::OnceLock::new();

/// clap adds `--help` and `--version` when it builds the parser; the definitions
/// alone do not list them.
fn help_args() -> Vec<clap::Arg> {
    vec![clap::Arg::new("help").long("help").short('h'), clap::Arg::new("version").long("version").short('V')]
}

fn repository_root() -> PathBuf {
    normalize(&Path::new(env!("CARGO_MANIFEST_DIR")).join(".."))
}

fn listed(problems: &[Problem], root: &Path) -> String {
    problems
        .iter()
        .map(|p| format!("{}:{}: {}", p.file.strip_prefix(root).unwrap_or(&p.file).display(), p.line, p.message))
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn every_link_anchor_and_conclave_command_in_the_repository_holds() {
    let root = repository_root();
    let problems = check_tree(&root, &conclave_server::cli::Cli::command());
    assert!(problems.is_empty(), "{} problem(s) in the Markdown files:\n{}", problems.len(), listed(&problems, &root));
}

#[test]
fn every_chapter_of_the_manual_is_in_its_table_of_contents() {
    let docs = repository_root().join("docs");
    let contents = read_document(&std::fs::read_to_string(docs.join("README.md")).expect("docs/README.md"));
    let linked: HashSet<PathBuf> = contents
        .links
        .iter()
        .map(|(_, url)| normalize(&docs.join(url.split('#').next().unwrap_or_default())))
        .collect();
    let mut chapters = Vec::new();
    markdown_files(&docs, &docs, &mut chapters);
    let missing: Vec<String> = chapters
        .iter()
        .filter(|chapter| !chapter.ends_with("README.md") && !linked.contains(*chapter))
        .map(|chapter| chapter.strip_prefix(&docs).unwrap_or(chapter).display().to_string())
        .collect();
    assert!(missing.is_empty(), "docs/README.md, the manual's contents, does not list {missing:?}");
}

#[test]
fn the_checker_finds_planted_broken_links_anchors_and_unknown_commands() {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path().canonicalize().expect("canonical");
    std::fs::create_dir_all(root.join("docs")).expect("mkdir");
    std::fs::write(
        root.join("docs/guide.md"),
        "# A guide\n\n## Reviewing `changes`, twice\n\n## Reviewing `changes`, twice\n",
    )
    .expect("write");
    let readme = "# Title\n\n[fine](docs/guide.md#reviewing-changes-twice-1) [fine too](#title) \
                  [off the web](https://example.invalid/x) `[in code](nowhere.md)`\n\n\
                  [gone](docs/missing.md) and [no anchor](docs/guide.md#nowhere) and [here](#nope)\n\n\
                  ```sh\nconclave review --base main --fail-on blocker   # fine\n\
                  CI= conclave review --no-such-flag | tee out.txt\nconclave frobnicate --x\n\
                  conclave runs show ID --json && conclave eval compare a.json b.json\n```\n\n\
                  ```text\nconclave review --not-checked-in-text\n```\n";
    std::fs::write(root.join("README.md"), readme).expect("write");
    std::fs::create_dir_all(root.join("target/doc")).expect("mkdir");
    std::fs::write(root.join("target/doc/skipped.md"), "[gone](nowhere.md)\n").expect("write");

    let problems = check_tree(&root, &conclave_server::cli::Cli::command());
    let found: Vec<(String, usize, &str)> = problems
        .iter()
        .map(|p| (p.file.strip_prefix(&root).expect("inside").display().to_string(), p.line, p.message.as_str()))
        .collect();
    assert_eq!(
        found,
        vec![
            ("README.md".to_string(), 5, "link `docs/missing.md`: docs/missing.md does not exist"),
            (
                "README.md".to_string(),
                5,
                "link `docs/guide.md#nowhere`: docs/guide.md has no heading with the anchor `#nowhere`"
            ),
            ("README.md".to_string(), 5, "link `#nope`: README.md has no heading with the anchor `#nope`"),
            ("README.md".to_string(), 7, "`conclave review` has no flag `--no-such-flag`"),
            ("README.md".to_string(), 7, "`conclave` has no subcommand `frobnicate`"),
        ],
        "{}",
        listed(&problems, &root)
    );
}

#[test]
fn synopsis_brackets_values_and_global_flags_are_read_as_the_cli_reads_them() {
    let cli = conclave_server::cli::Cli::command();
    let check = |line: &str| check_shell_block(line, &cli);
    assert!(
        check("conclave review [REPO] [--base REF] [--provider NAME [--model M]] [--record DIR | --replay DIR]")
            .is_empty()
    );
    assert!(check("conclave --db x.db runs list --limit 5 && conclave serve --help").is_empty());
    assert!(check("conclave runs --db other.db list").is_empty(), "a global flag on a subcommand");
    assert_eq!(check("conclave review [--bogus]"), vec!["`conclave review` has no flag `--bogus`".to_string()]);
    assert_eq!(check("conclave runs lisst"), vec!["`conclave runs` has no subcommand `lisst`".to_string()]);
    assert_eq!(check("conclave docs cli"), Vec::<String>::new(), "hidden commands exist");
}
