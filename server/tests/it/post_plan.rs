//! The pure plan behind `review --post`: which items post, where, with which marker,
//! and how a posting reconciles with the comments already on the request.

use conclave_server::post::lines::Diff;
use conclave_server::post::plan::{self, Existing, Item, Kind, Options, State};
use conclave_shared::{Anchor, Dismissal, Finding, FindingGroup, Severity, Stance};

fn finding(line: u64, fingerprint: &str, description: &str) -> Finding {
    Finding {
        agent: "writer".into(),
        raised_by: Some("security".into()),
        file: "src/a.rs".into(),
        line,
        severity: Some(Severity::Major),
        description: description.into(),
        anchor: Some(Anchor::Anchored),
        fingerprint: Some(fingerprint.into()),
        support: Some(1),
        ..Finding::default()
    }
}

/// A diff of `src/a.rs` whose one hunk shows new lines 10 to 14: 10 and 11 unchanged
/// (old 9 and 10), 12 added in place of old 11, 13 and 14 unchanged (old 12 and 13).
fn diff() -> Diff {
    let mut diff = Diff::default();
    let patch = "@@ -9,5 +10,5 @@ fn f() {\n a\n b\n-c\n+C\n d\n e";
    diff.add_patch("src/a.rs", "src/old.rs", patch).expect("a patch");
    diff
}

const FIX: Options = Options { mark_fixed: true, append_to_summary: false };

fn posted(items: &[Item], id: &str, key: &str) -> Existing {
    let item = items.iter().find(|i| i.key == key).expect("item");
    let section = plan::Section { kind: item.kind, key: key.into(), state: State::Open, content: item.inline.clone() };
    Existing { id: id.into(), thread: Some(format!("t{id}")), summary: false, body: section.render() }
}

#[test]
fn the_diff_gives_each_commentable_line_and_its_old_line() {
    let diff = diff();
    assert_eq!(diff.place("src/a.rs", 10), Some(("src/old.rs", Some(9))));
    assert_eq!(diff.place("src/a.rs", 12), Some(("src/old.rs", None)), "an added line has no old line");
    assert_eq!(diff.place("src/a.rs", 14), Some(("src/old.rs", Some(13))));
    assert_eq!(diff.place("src/a.rs", 15), None);
    assert_eq!(diff.place("src/b.rs", 10), None);
    let mut broken = Diff::default();
    let error = broken.add_patch("x.rs", "x.rs", "@@ -1,2 +1,2 @@\n?what").expect_err("not a hunk");
    assert!(error.to_string().starts_with("the forge's patch of `x.rs` cannot be read"), "{error}");
}

#[test]
fn only_listed_supported_findings_post_and_a_contradiction_is_one_item() {
    let mut unanchored = finding(11, "u", "quotes code that is not there");
    unanchored.anchor = Some(Anchor::Unanchored);
    let mut dismissed = finding(12, "d", "dismissed");
    dismissed.dismissed = Some(Dismissal { reason: "fine".into(), author: "ann".into() });
    let mut lonely = finding(13, "l", "one reviewer");
    lonely.support = Some(1);
    let mut agreed = finding(14, "a", "two reviewers");
    agreed.support = Some(2);
    let findings = [unanchored, dismissed, lonely, agreed];
    let keys = |items: Vec<Item>| items.into_iter().map(|i| i.key).collect::<Vec<_>>();
    assert_eq!(keys(plan::items(&findings, &[], |_| true)), ["l", "a"]);
    let supported = |f: &Finding| f.support.is_none_or(|s| s >= 2);
    assert_eq!(keys(plan::items(&findings, &[], supported)), ["a"], "--min-support 2");

    let mut approval = finding(12, "y", "looks right");
    (approval.raised_by, approval.stance, approval.severity) =
        (Some("conventions".into()), Some(Stance::Approval), Some(Severity::Nit));
    let group = FindingGroup {
        file: "src/a.rs".into(),
        line: 12,
        end_line: 12,
        basis: "same_line".into(),
        summary: "security raised a concern that conventions approved".into(),
        findings: vec![finding(12, "x", "path traversal"), approval],
    };
    let items = plan::items(&[], &[&group], |_| true);
    assert_eq!(items.len(), 1);
    assert_eq!((items[0].kind, items[0].key.as_str(), items[0].line), (Kind::Contradiction, "x+y", 12));
    assert!(items[0].inline.contains("- **security** (major, concern): path traversal"), "{}", items[0].inline);
    assert!(items[0].inline.contains("- **conventions** (nit, approval): looks right"), "{}", items[0].inline);
}

#[test]
fn new_items_go_inline_on_the_diff_and_outside_it_otherwise() {
    let items = plan::items(&[finding(12, "on", "on the diff"), finding(40, "off", "far away")], &[], |_| true);
    let plan = plan::plan(&items, &diff(), &[], FIX);
    assert_eq!(plan.inline.len(), 1);
    let inline = &plan.inline[0];
    assert_eq!(
        (inline.path.as_str(), inline.old_path.as_str(), inline.line, inline.old_line),
        ("src/a.rs", "src/old.rs", 12, None)
    );
    assert!(inline.body.ends_with("<!-- conclave:finding fp=on state=open -->"), "{}", inline.body);
    assert_eq!(plan.outside.len(), 1);
    assert!(plan.outside[0].starts_with("`src/a.rs` line 40: **major** · security"), "{}", plan.outside[0]);
    assert!(plan.edits.is_empty());
}

#[test]
fn posted_items_are_left_alone_edited_when_changed_and_marked_fixed_once() {
    let items = plan::items(&[finding(12, "same", "unchanged"), finding(13, "gone", "fixed since")], &[], |_| true);
    let existing = vec![posted(&items, "1", "same"), posted(&items, "2", "gone")];
    assert!(plan::plan(&items, &diff(), &existing, FIX).is_empty(), "nothing new, nothing changed");

    let reworded = plan::items(&[finding(12, "same", "now said otherwise")], &[], |_| true);
    let plan = plan::plan(&reworded, &diff(), &existing, FIX);
    assert!(plan.inline.is_empty() && plan.outside.is_empty());
    assert_eq!(plan.edits.len(), 2);
    assert!(plan.edits[0].body.contains("now said otherwise") && plan.edits[0].resolve.is_none());
    let fixed = &plan.edits[1];
    assert_eq!((fixed.id.as_str(), fixed.resolve, fixed.fixed), ("2", Some(true), 1));
    assert!(fixed.body.starts_with("**Fixed**") && fixed.body.contains("fixed since"), "{}", fixed.body);
    assert!(fixed.body.ends_with("<!-- conclave:finding fp=gone state=fixed -->"), "{}", fixed.body);

    let marked = vec![existing[0].clone(), Existing { body: fixed.body.clone(), ..existing[1].clone() }];
    let only_same = plan::items(&[finding(12, "same", "unchanged")], &[], |_| true);
    assert!(plan::plan(&only_same, &diff(), &marked, FIX).is_empty(), "a fixed comment is not edited again");
    let degraded = Options { mark_fixed: false, ..FIX };
    assert!(plan::plan(&only_same, &diff(), &existing, degraded).is_empty(), "a degraded review fixes nothing");

    let back = plan::plan(&items, &diff(), &marked, FIX);
    assert_eq!(back.edits.len(), 1, "a finding that returns reopens its comment, not a new one");
    assert_eq!(back.edits[0].resolve, Some(false));
    assert!(back.edits[0].body.ends_with("state=open -->") && back.inline.is_empty());
}

#[test]
fn a_summary_keeps_its_preamble_and_new_items_outside_the_diff_join_it_when_asked() {
    let items = plan::items(&[finding(40, "old", "far away"), finding(50, "new", "further")], &[], |_| true);
    let section =
        plan::Section { kind: Kind::Finding, key: "old".into(), state: State::Open, content: items[0].listed.clone() };
    let body = plan::join(&format!("**Conclave review**\n{}", plan::SUMMARY_MARKER), &[section]);
    let (preamble, sections) = plan::split(&body);
    assert!(preamble.starts_with("**Conclave review**"));
    assert_eq!(sections.len(), 1);
    let summary = Existing { id: "9".into(), thread: Some("t9".into()), summary: true, body: body.clone() };

    let separate = plan::plan(&items, &diff(), std::slice::from_ref(&summary), FIX);
    assert!(separate.edits.is_empty());
    assert_eq!(separate.outside.len(), 1, "GitHub: a new review body for the new item");

    let append = Options { append_to_summary: true, ..FIX };
    let joined = plan::plan(&items, &diff(), &[summary], append);
    assert!(joined.outside.is_empty());
    assert_eq!(joined.edits.len(), 1, "GitLab: the one note grows");
    let body = &joined.edits[0].body;
    assert!(
        body.starts_with("**Conclave review**")
            && body.contains("fp=old state=open")
            && body.contains("fp=new state=open")
    );
    assert_eq!(joined.edits[0].resolve, None, "a summary is no thread to resolve");
}
