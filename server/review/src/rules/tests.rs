//! Unit tests of the repository rules: the front matter's two list forms and its
//! errors, the caps, the selection by changed paths, and reading through the sandbox.

use super::*;
use std::fs;

fn paths(items: &[&str]) -> Vec<String> {
    items.iter().map(|p| p.to_string()).collect()
}

fn globs_of(text: &str) -> Vec<String> {
    match front_matter(text).expect("parses").0 {
        Applies::Globs(globs) => globs.into_iter().map(|(g, _)| g).collect(),
        Applies::Always => Vec::new(),
        Applies::Under(dir) => panic!("a front matter gave a directory scope {dir}"),
    }
}

fn malformed(text: &str) -> (usize, String) {
    match front_matter(text) {
        Err(error) => error,
        Ok((_, body)) => panic!("parsed, with body {body:?}"),
    }
}

fn file(path: &str, scope: Applies, text: &str) -> RulesFile {
    RulesFile { path: path.into(), scope, text: text.into(), bytes: text.len() as u64, truncated: false, given: false }
}

fn globs(items: &[&str]) -> Applies {
    Applies::Globs(items.iter().map(|g| (g.to_string(), compile(g).expect("compiles"))).collect())
}

#[test]
fn the_flow_list_gives_its_globs_and_the_body_follows_the_front_matter() {
    let text =
        "---\npaths: [\"db/**\", '*.sql', migrations/*.up]  # where SQL lives\n---\n# SQL\n\nUse bind parameters.\n";
    assert_eq!(globs_of(text), ["db/**", "*.sql", "migrations/*.up"]);
    assert_eq!(front_matter(text).expect("parses").1, "# SQL\n\nUse bind parameters.\n");
}

#[test]
fn the_block_list_gives_its_globs_with_comments_and_blank_lines_between() {
    let text = "---\n# which files\npaths:\n  - \"db/**\"\n\n  - 'it''s/*.sql'\n  - src/db.rs # the pool\n---\nbody";
    assert_eq!(globs_of(text), ["db/**", "it's/*.sql", "src/db.rs"]);
}

#[test]
fn a_file_without_front_matter_or_without_paths_applies_to_every_change() {
    assert!(matches!(front_matter("# Rules\n---\nnot front matter\n").expect("parses"), (Applies::Always, _)));
    assert!(matches!(front_matter("---\n# nothing yet\n---\nbody").expect("parses"), (Applies::Always, "body")));
}

#[test]
fn malformed_front_matter_names_the_line_and_what_to_write() {
    let (line, message) = malformed("---\npaths: [\"db/**\"]\nowner: dba\n---\n");
    assert_eq!(
        (line, message.as_str()),
        (3, "unknown key `owner`: the front matter of a rules file takes only `paths`")
    );
    let (line, message) = malformed("---\npaths: [\"db/**\"\n---\n");
    assert_eq!((line, message.as_str()), (2, "the list is not closed by `]` on the same line"));
    let (line, message) = malformed("---\npaths: db/**\n---\n");
    assert_eq!(line, 2);
    assert!(message.starts_with("`paths` takes a list"), "{message}");
    let (line, message) = malformed("---\npaths:\n  - \"db/**\"\n  - *.sql\n---\n");
    assert_eq!((line, message.as_str()), (4, "`*.sql` starts with a character YAML reserves; quote it: \"*.sql\""));
    let (line, message) = malformed("---\npaths: [\"db/[\"]\n---\n");
    assert_eq!(line, 2);
    assert!(message.starts_with("`db/[` is not a valid glob"), "{message}");
    let (line, message) = malformed("---\npaths: []\n---\n");
    assert_eq!((line, message.as_str()), (2, "`paths` lists no glob; remove it to apply the file to every change"));
    let (line, message) = malformed("---\npaths: [\"db/**\"]\n");
    assert_eq!((line, message.as_str()), (1, "the front matter opened by `---` is never closed by a `---` line"));
    let (line, message) = malformed("---\npaths: [\"a\\d\"]\n---\n");
    assert_eq!(line, 2);
    assert!(message.contains("only `\\\"` and `\\\\` are escapes here"), "{message}");
    let (line, _) = malformed("---\npaths: [\"a\"]\npaths: [\"b\"]\n---\n");
    assert_eq!(line, 3);
    let (line, _) = malformed("---\n  - \"db/**\"\n---\n");
    assert_eq!(line, 2);
}

#[test]
fn globs_read_as_gitignore_does() {
    let sql = compile("*.sql").expect("compiles");
    assert!(sql.is_match("schema.sql") && sql.is_match("db/deep/schema.sql"));
    let db = compile("db/**").expect("compiles");
    assert!(db.is_match("db/schema.sql") && db.is_match("db/a/b.sql") && !db.is_match("src/db/x.sql"));
    let top = compile("src/*.rs").expect("compiles");
    assert!(top.is_match("src/lib.rs") && !top.is_match("src/a/lib.rs"));
    let anchored = compile("/Makefile").expect("compiles");
    assert!(anchored.is_match("Makefile") && !anchored.is_match("sub/Makefile"));
}

#[test]
fn a_file_over_the_cap_is_cut_at_a_line_boundary_saying_so() {
    let line = "Every query takes bind parameters, never formatted strings.\n";
    let long = line.repeat(FILE_CAP / line.len() + 10);
    let (text, truncated) = cap(&long, false);
    assert!(truncated);
    let (kept, note) = text.rsplit_once("\n\n").expect("a note");
    assert!(kept.len() <= FILE_CAP, "{} bytes kept", kept.len());
    assert!(kept.ends_with("strings."), "cut at a line's end: {:?}", &kept[kept.len() - 20..]);
    assert_eq!(note, format!("[… the rest of this file is cut: reviewers receive at most its first {FILE_CAP} bytes]"));
    let exact = "x".repeat(FILE_CAP);
    assert_eq!(cap(&exact, false), (exact.clone(), false), "a file of exactly the cap is whole");
    let (partial, truncated) = cap("first line\nsecond, cut mid-li", true);
    assert!(truncated);
    assert!(partial.starts_with("first line\n\n[…"), "a file not read to its end loses its partial last line");
}

#[test]
fn selection_applies_root_files_always_directory_files_below_them_and_globs_where_they_match() {
    let rules = RepositoryRules {
        files: vec![
            file("AGENTS.md", Applies::Always, "Root rules."),
            file("src/AGENTS.md", Applies::Under("src".into()), "Source rules."),
            file(".conclave/rules/sql.md", globs(&["db/**", "*.sql"]), "SQL rules."),
        ],
        refused: vec![RefusedRules { path: "CLAUDE.md".into(), why: "a symlink".into() }],
    };
    let db = rules.select(&paths(&["db/schema.sql"]));
    let applied: Vec<(&str, &[String])> = db.read.applied.iter().map(|a| (a.path.as_str(), &a.globs[..])).collect();
    assert_eq!(applied, [("AGENTS.md", &[][..]), (".conclave/rules/sql.md", &paths(&["db/**", "*.sql"])[..])]);
    let text = db.text.expect("rules apply");
    assert!(text.contains("# From `.conclave/rules/sql.md` (for the changes matching `db/**`, `*.sql`)\n\nSQL rules."));
    assert!(!text.contains("Source rules."));
    assert_eq!(db.read.refused, rules.refused, "refusals are reported whatever the paths");

    assert!(db.read.applied.iter().all(|a| !a.changed), "no rules file is among the changed paths");
    let edited = rules.select(&paths(&["AGENTS.md"]));
    let changed: Vec<(&str, bool)> = edited.read.applied.iter().map(|a| (a.path.as_str(), a.changed)).collect();
    assert_eq!(changed, [("AGENTS.md", true)], "a change that edits a rules file is marked");

    let src = rules.select(&paths(&["src/lib.rs"]));
    let names: Vec<&str> = src.read.applied.iter().map(|a| a.path.as_str()).collect();
    assert_eq!(names, ["AGENTS.md", "src/AGENTS.md"]);
    assert!(rules.select(&paths(&["srcs/lib.rs"])).read.applied.iter().all(|a| a.path != "src/AGENTS.md"));
    assert_eq!(rules.render_for(&paths(&["src/lib.rs"])), src.text, "the same files and paths, the same text");

    let only_globbed = RepositoryRules { files: vec![rules.files[2].clone()], refused: Vec::new() };
    assert_eq!(only_globbed.render_for(&paths(&["src/lib.rs", "README.md"])), None);
}

#[test]
fn files_past_the_total_cap_are_left_out_and_listed() {
    let big = "r".repeat(FILE_CAP);
    let files = (0..6).map(|i| file(&format!(".conclave/rules/{i}.md"), Applies::Always, &big)).collect();
    let selection = RepositoryRules { files, refused: Vec::new() }.select(&paths(&["a.rs"]));
    assert_eq!(selection.read.applied.len(), 3, "three files and their headings fit in {TOTAL_CAP} bytes");
    assert!(selection.text.expect("rules").len() <= TOTAL_CAP + 200);
    let left_out: Vec<&str> = selection.read.refused.iter().map(|r| r.path.as_str()).collect();
    assert_eq!(left_out, [".conclave/rules/3.md", ".conclave/rules/4.md", ".conclave/rules/5.md"]);
    assert!(
        selection.read.refused[0].why.starts_with("left out: the rules given to reviewers are capped at 65536 bytes")
    );
}

#[test]
fn insert_rules_adds_nothing_without_rules_and_removes_a_parts_stale_keys() {
    let mut input = Map::new();
    input.insert("diff".into(), Value::String("d".into()));
    insert_rules(&mut input, Some(&RepositoryRules::default()), &paths(&["a.rs"]));
    assert_eq!(input.keys().collect::<Vec<_>>(), ["diff"]);
    let rules = RepositoryRules {
        files: vec![file(".conclave/rules/sql.md", globs(&["db/**"]), "SQL rules.")],
        refused: Vec::new(),
    };
    insert_rules(&mut input, Some(&rules), &paths(&["db/a.sql"]));
    assert!(input[RULES_KEY].as_str().is_some_and(|t| t.contains("SQL rules.")));
    assert_eq!(RulesRead::of_input(&Value::Object(input.clone())).applied[0].path, ".conclave/rules/sql.md");
    insert_rules(&mut input, Some(&rules), &paths(&["src/a.rs"]));
    assert_eq!(input.keys().collect::<Vec<_>>(), ["diff"], "a part without SQL gets no SQL rules");
}

#[test]
fn reading_finds_files_in_order_and_refuses_symlinks_with_a_note() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (root, outside) = (dir.path().join("repo"), dir.path().join("secret.md"));
    fs::create_dir_all(root.join("src/db")).expect("mkdir");
    fs::create_dir_all(root.join(RULES_DIR)).expect("mkdir");
    fs::write(&outside, "the secret").expect("write");
    fs::write(root.join("REVIEW.md"), "Root review rules.").expect("write");
    fs::write(root.join("src/db/CLAUDE.md"), "DB rules.").expect("write");
    fs::write(root.join("src/lib.rs"), "").expect("write");
    fs::write(root.join(RULES_DIR).join("b.md"), "---\npaths: [\"docs/**\"]\n---\nDocs.").expect("write");
    fs::write(root.join(RULES_DIR).join("a.md"), "Always.").expect("write");
    fs::write(root.join(RULES_DIR).join("bad.md"), "---\npaths: db\n---\nNever.").expect("write");
    fs::write(root.join(RULES_DIR).join("notes.txt"), "Not Markdown.").expect("write");
    std::os::unix::fs::symlink(&outside, root.join("AGENTS.md")).expect("symlink");
    std::os::unix::fs::symlink("REVIEW.md", root.join("src/AGENTS.md")).expect("symlink");
    let sandbox = Sandbox::new(&root, &[]).expect("sandbox");
    let given = dir.path().join("team.md");
    fs::write(&given, "Team rules.").expect("write");

    let rules = RepositoryRules::read(Some(&sandbox), &paths(&["src/db/pool.rs"]), &[GivenRules::as_is(&given)])
        .expect("reads");
    let selection = rules.select(&paths(&["src/db/pool.rs"]));
    let applied: Vec<&str> = selection.read.applied.iter().map(|a| a.path.as_str()).collect();
    let given_shown = given.display().to_string();
    assert_eq!(applied, ["REVIEW.md", "src/db/CLAUDE.md", ".conclave/rules/a.md", given_shown.as_str()]);
    let refused: Vec<(&str, &str)> = selection.read.refused.iter().map(|r| (r.path.as_str(), r.why.as_str())).collect();
    assert_eq!(
        refused,
        [
            (
                "AGENTS.md",
                "`AGENTS.md` is a symlink leading outside the repository; rules files are read only as regular files \
                 of the repository, never through a symlink"
            ),
            (
                "src/AGENTS.md",
                "`src/AGENTS.md` is a symlink; rules files are read only as regular files of the repository, never \
                 through a symlink"
            ),
            (
                ".conclave/rules/bad.md",
                "`.conclave/rules/bad.md` has a malformed front matter at line 2: `paths` takes a list: \
                 `paths: [\"db/**\"]`, or `paths:` then `- db/**` lines; the file was skipped"
            ),
        ]
    );
    assert!(!selection.text.expect("rules").contains("the secret"));

    let off = RepositoryRules::read(None, &paths(&["src/db/pool.rs"]), &[GivenRules::as_is(&given)]).expect("reads");
    let applied: Vec<String> = off.select(&[]).read.applied.into_iter().map(|a| a.path).collect();
    assert_eq!(applied, [given_shown], "with the repository's rules off only the given file is read");
}

#[test]
fn a_given_file_that_cannot_be_used_is_an_error_naming_it() {
    let dir = tempfile::tempdir().expect("tempdir");
    let missing = dir.path().join("missing.md");
    let error = RepositoryRules::read(None, &[], &[GivenRules::as_is(&missing)]).expect_err("refused");
    assert!(error.to_string().starts_with(&format!("cannot read the rules file {}: ", missing.display())), "{error}");
    let bad = dir.path().join("bad.md");
    fs::write(&bad, "---\npaths: [\"db/**\"]\nowner: me\n---\n").expect("write");
    let error = RepositoryRules::read(None, &[], &[GivenRules::as_is(&bad)]).expect_err("refused");
    assert_eq!(
        error.to_string(),
        format!(
            "the rules file {} has a malformed front matter at line 3: unknown key `owner`: the front matter of a \
             rules file takes only `paths`",
            bad.display()
        )
    );
}

#[test]
fn pipes_ignored_files_and_a_symlinked_rules_directory_are_refused_and_nothing_else_is_read() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (root, elsewhere) = (dir.path().join("repo"), dir.path().join("elsewhere"));
    fs::create_dir_all(&root).expect("mkdir");
    fs::create_dir_all(&elsewhere).expect("mkdir");
    let git = std::process::Command::new("git").args(["init", "-q"]).current_dir(&root).status().expect("git runs");
    assert!(git.success());
    fs::write(root.join(".gitignore"), "CLAUDE.md\n").expect("write");
    fs::write(root.join("CLAUDE.md"), "Ignored rules.").expect("write");
    let fifo = std::process::Command::new("mkfifo").arg(root.join("AGENTS.md")).status().expect("mkfifo runs");
    assert!(fifo.success());
    fs::write(elsewhere.join("x.md"), "Rules from elsewhere.").expect("write");
    std::os::unix::fs::symlink(&elsewhere, root.join(".conclave")).expect("symlink");
    let sandbox = Sandbox::new(&root, &[]).expect("sandbox");

    let rules = RepositoryRules::read(Some(&sandbox), &paths(&["a.rs"]), &[]).expect("reads");
    let selection = rules.select(&paths(&["a.rs"]));
    assert_eq!(selection.text, None, "nothing was read");
    let refused: Vec<(&str, &str)> = selection.read.refused.iter().map(|r| (r.path.as_str(), r.why.as_str())).collect();
    assert_eq!(
        refused,
        [
            ("AGENTS.md", "`AGENTS.md` is not a regular file (a device, socket or pipe)"),
            (
                "CLAUDE.md",
                "`CLAUDE.md` is ignored by the repository's .gitignore, so the tools do not read it; list_files shows \
                 what they read"
            ),
            (
                ".conclave/rules",
                "`.conclave` is a symlink leading outside the repository; rules files are read only as regular files \
                 of the repository, never through a symlink"
            ),
        ]
    );
}
