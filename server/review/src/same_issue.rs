//! Whether two findings are the same issue: the one rule behind support
//! (`support.rs`), the merge of samples (`samples.rs`), the near-duplicates of sibling
//! reviewers (`compare.rs`) and the match against a baseline (`baseline.rs`).
//!
//! Two findings with different stances are never the same issue: an approval of the
//! code does not repeat a concern about it. Otherwise they are the same issue when
//! they have the same fingerprint (both present and equal: the same code, wherever
//! the line and whatever the words), or when all of these hold:
//!
//! - they are in the same file, at most `window` lines apart;
//! - their descriptions are alike: the Sørensen–Dice similarity of their words
//!   (`similarity.rs`) is at least `threshold`;
//! - their evidence does not say they are about different code.
//!
//! The evidence says so only when both findings quote code. A finding has no quote
//! when its `evidence` is absent, blank, or shorter than four characters besides
//! whitespace (`anchor.rs` marks it `unquoted`); then the words alone decide. With two
//! quotes:
//!
//! - When both were found in the file (anchor `anchored` or `relocated`), their places
//!   decide: quotes *anchored on different lines*, whose line ranges do not intersect,
//!   are different code even when their text is the same (repeated code such as Go's
//!   `return nil, err`). A relocated finding's line is its quote's first line
//!   (`anchor.rs` moved it there), so a quote of n lines covers `line ..= line + n - 1`;
//!   an anchored finding's line is one of its quote's lines, so the quote lies within
//!   `line - (n - 1) ..= line + (n - 1)`, and that widest range is the one compared: two
//!   ranges that do not intersect are certainly different lines. Places are lines of
//!   one version of the file: `baseline.rs`, comparing with findings placed in an
//!   earlier version, clears the earlier anchors so that the text decides.
//! - Otherwise (a quote `unanchored`, `unchecked`, or not checked at all) their text
//!   decides: they are the same code when they *overlap*, that is, when they could be
//!   two windows on one stretch of code. Lines are compared with whitespace collapsed
//!   and surrounding backticks and quotes dropped, as `anchor.rs` reads quotes. They
//!   overlap when the text of one, its lines joined by spaces, contains the other's (a
//!   fragment, or the same code wrapped differently), or when, lined up at some offset,
//!   every line both cover agrees (equal, or one a fragment of the other) over at
//!   least four characters. So two quotes that share a line of code at the seam
//!   overlap, while two that share only a line in their middles, as two different
//!   calls each followed by `if err != nil {`, do not.

use conclave_shared::{Anchor, Finding};
use std::ops::RangeInclusive;

use crate::anchor::quote_lines;
use crate::similarity::{NEAR_DUPLICATE_THRESHOLD, NEAR_LINES, dice, word_hashes};

/// The rule's parameters.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SameIssue {
    /// How many lines apart two findings may be and still be the same issue.
    pub window: u64,
    /// The least wording similarity (Sørensen–Dice, 0 to 1) of the same issue.
    pub threshold: f64,
}

impl Default for SameIssue {
    /// [`NEAR_LINES`] and the tuned [`NEAR_DUPLICATE_THRESHOLD`].
    fn default() -> SameIssue {
        SameIssue { window: NEAR_LINES, threshold: NEAR_DUPLICATE_THRESHOLD }
    }
}

impl SameIssue {
    /// Some(similarity in 0..=1) when `a` and `b` are the same issue, None when not.
    /// The same fingerprint (and stance) gives Some(1.0). The rule is symmetric, and
    /// with a threshold of 0 it returns the similarity of every pair that nothing but
    /// the words could still tell apart, so one call serves every threshold.
    pub fn score(&self, a: &Finding, b: &Finding) -> Option<f64> {
        self.decide(a, b, || dice(&word_hashes(&a.description), &word_hashes(&b.description)))
    }

    /// The same with each description's word hashes computed beforehand
    /// ([`word_hashes`]), for callers that compare many pairs.
    pub fn score_hashed(&self, a: &Finding, a_words: &[u64], b: &Finding, b_words: &[u64]) -> Option<f64> {
        self.decide(a, b, || dice(a_words, b_words))
    }

    /// The rule (see the module header), with the wording similarity computed only
    /// when the place and the stance leave it to decide.
    fn decide(&self, a: &Finding, b: &Finding, wording: impl FnOnce() -> f64) -> Option<f64> {
        if a.effective_stance() != b.effective_stance() {
            return None;
        }
        if a.fingerprint.is_some() && a.fingerprint == b.fingerprint {
            return Some(1.0);
        }
        if a.file != b.file || a.line.abs_diff(b.line) > self.window {
            return None;
        }
        let similarity = wording();
        // The evidence last: it is the dearest test, and most pairs fail on their words.
        (similarity >= self.threshold && !different_code(a, b)).then_some(similarity)
    }
}

/// `SameIssue::default().score(a, b).is_some()`.
pub fn same_issue(a: &Finding, b: &Finding) -> bool {
    SameIssue::default().score(a, b).is_some()
}

/// The fewest characters besides whitespace a quote, or the stretch two quotes share,
/// needs to mean anything: `}` or `);` match almost anywhere (as in `anchor.rs`).
const MIN_QUOTE: usize = 4;

/// Whether the evidence of `a` and `b` says they are about different code.
fn different_code(a: &Finding, b: &Finding) -> bool {
    let (Some(quote_a), Some(quote_b)) = (quote_of(a), quote_of(b)) else { return false };
    match (lines_of(a, quote_a.len()), lines_of(b, quote_b.len())) {
        (Some(x), Some(y)) => x.end() < y.start() || y.end() < x.start(),
        _ => !overlap(&quote_a, &quote_b),
    }
}

/// The finding's quote as normalized lines (as `anchor.rs` reads it), or None when it
/// has none worth comparing.
fn quote_of(finding: &Finding) -> Option<Vec<String>> {
    if finding.anchor == Some(Anchor::Unquoted) {
        return None;
    }
    let lines = quote_lines(finding.evidence.as_deref()?);
    (!lines.is_empty()).then_some(lines)
}

/// The lines a quote of `n` lines occupies in its file, when it was found there (see
/// the module header).
fn lines_of(finding: &Finding, n: usize) -> Option<RangeInclusive<u64>> {
    let extra = n.saturating_sub(1) as u64;
    match finding.anchor? {
        Anchor::Relocated => Some(finding.line..=finding.line + extra),
        Anchor::Anchored => Some(finding.line.saturating_sub(extra)..=finding.line + extra),
        Anchor::Unanchored | Anchor::Unquoted | Anchor::Unchecked => None,
    }
}

/// Whether two quotes could be two windows on one stretch of code (see the module
/// header).
fn overlap(a: &[String], b: &[String]) -> bool {
    let (joined_a, joined_b) = (a.join(" "), b.join(" "));
    if joined_a.contains(&joined_b) || joined_b.contains(&joined_a) {
        return true;
    }
    // `b`'s first line lined up with `a`'s line `offset`, for every offset at which
    // the two share at least one line.
    let (len_a, len_b) = (a.len() as isize, b.len() as isize);
    (1 - len_b..len_a).any(|offset| {
        let mut shared = 0;
        for i in offset.max(0)..len_a.min(offset + len_b) {
            let (x, y) = (&a[i as usize], &b[(i - offset) as usize]);
            if !(x.contains(y.as_str()) || y.contains(x.as_str())) {
                return false;
            }
            shared += meaningful(x).min(meaningful(y));
        }
        shared >= MIN_QUOTE
    })
}

/// Characters besides whitespace.
fn meaningful(text: &str) -> usize {
    text.chars().filter(|c| !c.is_whitespace()).count()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::similarity::similarity;
    use conclave_shared::Stance;

    fn finding(file: &str, line: u64, evidence: Option<&str>, description: &str) -> Finding {
        Finding {
            agent: "reviewer".into(),
            file: file.into(),
            line,
            description: description.into(),
            evidence: evidence.map(str::to_string),
            ..Finding::default()
        }
    }

    fn anchored(line: u64, anchor: Anchor, evidence: &str, description: &str) -> Finding {
        Finding { anchor: Some(anchor), ..finding("src/db.go", line, Some(evidence), description) }
    }

    /// Different issues a few lines apart in one file, worded alike, quoting different
    /// code: pairs of `file:line `quote` description` lines, a blank line between pairs
    /// (`\n` in a quote is a line break).
    const HARD_NEGATIVES: &str = r#"
internal/store/snapshot.go:88 `defer f.Close()` The error from f.Close() is ignored, so a failed close silently loses data
internal/store/snapshot.go:90 `os.Remove(tmpPath)` The error from os.Remove(tmpPath) is ignored, so a failed cleanup silently leaks

src/grid.rs:54 `for x in 0..=self.width {` Off-by-one: the loop runs to self.width inclusive and reads past the end
src/grid.rs:56 `for y in 0..=self.height {` Off-by-one: the loop runs to self.height inclusive and reads past the end

src/config.rs:27 `fs::read_to_string(&path).unwrap()` unwrap() panics when the config file cannot be read; return the error
src/config.rs:29 `toml::from_str(&text).unwrap()` unwrap() panics when the config file cannot be parsed; return the error

app/repositories/orders.py:31 `f"SELECT * FROM orders WHERE id = {order_id}"` SQL injection: order_id is interpolated into the query
app/repositories/orders.py:34 `f"DELETE FROM carts WHERE session = '{sid}'"` SQL injection: sid is interpolated into the query

src/routes/checkout.ts:58 `repo.save(order);` Missing await on repo.save: the promise is dropped and errors are unhandled
src/routes/checkout.ts:60 `mailer.send(receipt);` Missing await on mailer.send: the promise is dropped and errors are unhandled

src/main/java/com/acme/OrderService.java:84 `order.getAddress().getStreet()` NullPointerException: getAddress() can return null for this order
src/main/java/com/acme/OrderService.java:86 `order.getCoupon().getCode()` NullPointerException: getCoupon() can return null for this order

src/net/handshake.c:77 `strcpy(session->user, msg->user);` Unbounded strcpy into session->user overflows the buffer
src/net/handshake.c:79 `strcpy(session->host, msg->host);` Unbounded strcpy into session->host overflows the buffer

src/util/strbuf.c:23 `buf->data = malloc(cap);` The result of malloc is not checked for NULL before it is used
src/util/strbuf.c:25 `buf->index = calloc(cap, sizeof(size_t));` The result of calloc is not checked for NULL before it is used

src/image/filter.c:140 `for (int x = 0; x <= width; x++)` Off-by-one: x <= width reads one pixel past the end of the row
src/image/filter.c:142 `for (int y = 0; y <= height; y++)` Off-by-one: y <= height reads one row past the end of the image

web/comment_list.ts:34 `title.innerHTML = comment.author;` XSS: comment.author is assigned to innerHTML without escaping
web/comment_list.ts:36 `body.innerHTML = comment.text;` XSS: comment.text is assigned to innerHTML without escaping

integrations/slack.py:19 `requests.post(webhook_url, json=payload)` requests.post has no timeout and can hang the worker forever
integrations/slack.py:21 `requests.get(USERS_API, params=query)` requests.get has no timeout and can hang the worker forever

src/main/java/com/acme/Quota.java:30 `int bytes = megabytes * 1024 * 1024;` int overflow: megabytes * 1024 * 1024 overflows; compute in long
src/main/java/com/acme/Quota.java:32 `int millis = seconds * 1000;` int overflow: seconds * 1000 overflows for long periods; compute in long

app/views/projects/index.html.erb:8 `<%= project.owner.name %>` N+1 query: project.owner is loaded once per project in this loop
app/views/projects/index.html.erb:10 `<%= project.tasks.count %>` N+1 query: project.tasks is counted once per project in this loop

app/controllers/users_controller.rb:22 `@user.update(params[:user])` Mass assignment: params[:user] is passed to update unfiltered; use permit
app/controllers/users_controller.rb:25 `@profile.update(params[:profile])` Mass assignment: params[:profile] is passed to update unfiltered; use permit

app/ui/CartViewModel.kt:51 `cart.value!!.total` !! on cart.value throws a NullPointerException before it is loaded
app/ui/CartViewModel.kt:53 `session.user!!.id` !! on session.user throws a NullPointerException before it is loaded

src/Api/ReportsController.cs:40 `_reports.BuildAsync(id).Result` Blocking on .Result of BuildAsync can deadlock the request; await it
src/Api/ReportsController.cs:42 `_users.FindAsync(ownerId).Result` Blocking on .Result of FindAsync can deadlock the request; await it

templates/profile.php:12 `<?php echo $user['name']; ?>` XSS: $user['name'] is echoed without htmlspecialchars
templates/profile.php:14 `<?php echo $user['bio']; ?>` XSS: $user['bio'] is echoed without htmlspecialchars

scripts/deploy.sh:18 `rm -rf $BUILD_DIR/*` Unquoted variable $BUILD_DIR splits on spaces and globs; quote it
scripts/deploy.sh:20 `cp -r $SRC_DIR/dist $TARGET` Unquoted variables $SRC_DIR and $TARGET split on spaces and glob; quote them

src/text/layout.cpp:88 `for (int i = 0; i < lines.size(); ++i)` Signed/unsigned comparison of int i with lines.size(); use size_t
src/text/layout.cpp:91 `for (int j = 0; j < glyphs.size(); ++j)` Signed/unsigned comparison of int j with glyphs.size(); use size_t

db/migrations/0042_add_indexes.sql:3 `CREATE INDEX idx_orders_customer ON orders (customer_id);` CREATE INDEX without CONCURRENTLY locks the table for writes
db/migrations/0042_add_indexes.sql:5 `CREATE INDEX idx_events_created ON events (created_at);` CREATE INDEX without CONCURRENTLY locks the table for writes

internal/copy.go:57 `_, err := io.Copy(dst, src)\nif err != nil {\n    return nil\n}` The error is swallowed: io.Copy failing returns nil to the caller
internal/copy.go:60 `err = dst.Sync()\nif err != nil {\n    return nil\n}` The error is swallowed: dst.Sync failing returns nil to the caller

api/handlers/upload.py:25 `assert file.size <= MAX_UPLOAD` assert is stripped under python -O, so this check is not enforced
api/handlers/upload.py:27 `assert file.content_type in ALLOWED` assert is stripped under python -O, so this check is not enforced
"#;

    /// The findings of one side of a pair in [`HARD_NEGATIVES`].
    fn side(row: &str) -> Finding {
        let (place, rest) = row.split_once(" `").expect("file:line `quote` description");
        let (quote, description) = rest.split_once("` ").expect("a quote in backticks");
        let (file, line) = place.rsplit_once(':').expect("file:line");
        let quote = quote.replace("\\n", "\n");
        finding(file, line.parse().expect("a line number"), Some(&quote), description)
    }

    #[test]
    fn different_quotes_at_nearby_lines_are_different_issues_however_alike_the_words() {
        let pairs: Vec<(Finding, Finding)> = HARD_NEGATIVES
            .trim()
            .split("\n\n")
            .map(|pair| {
                let (a, b) = pair.split_once('\n').expect("two lines");
                (side(a), side(b))
            })
            .collect();
        assert!(pairs.len() >= 20, "{} pairs", pairs.len());
        for (a, b) in &pairs {
            let place = format!("{}:{} and {}", a.file, a.line, b.line);
            // Without the quotes the words alone would merge them: that is what makes them hard.
            let unquoted = Finding { evidence: None, ..b.clone() };
            assert!(same_issue(a, &unquoted), "{place}: words {:.2}", similarity(&a.description, &b.description));
            assert!(b.line.abs_diff(a.line) <= NEAR_LINES, "{place}");
            assert!(!same_issue(a, b), "{place}: {:?} and {:?}", a.evidence, b.evidence);
            assert!(!same_issue(b, a), "{place}: the rule is symmetric");
        }
    }

    #[test]
    fn the_same_fingerprint_is_the_same_issue_wherever_and_however_worded() {
        let mut a = finding("a.rs", 3, Some("root.join(name)"), "path traversal");
        let mut b = finding("b.rs", 90, Some("std::fs::write"), "completely different words");
        (a.fingerprint, b.fingerprint) = (Some("f".into()), Some("f".into()));
        assert_eq!(SameIssue::default().score(&a, &b), Some(1.0));
        b.fingerprint = Some("g".into());
        assert_eq!(SameIssue::default().score(&a, &b), None);
        (a.fingerprint, b.fingerprint) = (None, None);
        assert_eq!(SameIssue::default().score(&a, &b), None, "two absent fingerprints are not equal ones");
    }

    #[test]
    fn overlapping_quotes_or_a_missing_one_leave_the_words_to_decide() {
        let file = "internal/store/users.go";
        let said = "The error from db.QueryContext is swallowed: the function returns nil, nil on failure";
        let reworded = "db.QueryContext failing is swallowed, returning nil, nil so callers never see the error";
        let cases = [
            (
                "a fragment of the other",
                "rows, err := db.QueryContext(ctx, q, orgID)",
                "db.QueryContext(ctx, q, orgID)",
            ),
            (
                "whitespace aside",
                "rows, err :=   db.QueryContext(ctx,\tq, orgID)",
                "`rows, err := db.QueryContext(ctx, q, orgID)`",
            ),
            (
                "one inside the other",
                "if err != nil {\n\treturn nil, nil\n}",
                "rows, err := db.QueryContext(ctx, q, orgID)\nif err != nil {\n    return nil, nil\n}",
            ),
            (
                "sharing lines at the seam",
                "rows, err := db.QueryContext(ctx, q, orgID)\nif err != nil {\n\treturn nil, nil",
                "if err != nil {\n  return nil, nil\n}",
            ),
            (
                "wrapped differently",
                "db.QueryContext(\n\tctx, q, orgID)",
                "rows, err := db.QueryContext(ctx, q, orgID)",
            ),
        ];
        for (why, quote_a, quote_b) in cases {
            let (a, b) = (finding(file, 41, Some(quote_a), said), finding(file, 43, Some(quote_b), reworded));
            assert!(same_issue(&a, &b), "{why}");
        }
        let quoted = finding(file, 41, Some("rows, err := db.QueryContext(ctx, q, orgID)"), said);
        for evidence in [None, Some(""), Some("  \n "), Some("});")] {
            assert!(same_issue(&quoted, &finding(file, 43, evidence, reworded)), "no quote: {evidence:?}");
        }
        let unquoted = Finding { anchor: Some(Anchor::Unquoted), ..finding(file, 43, Some("xs"), reworded) };
        assert!(same_issue(&quoted, &unquoted));
        let unrelated = finding(file, 43, Some("rows, err := db.QueryContext(ctx, q, orgID)"), "Missing doc comment");
        assert!(!same_issue(&quoted, &unrelated), "the same quote does not make unlike words the same issue");
        assert!(!same_issue(&quoted, &finding(file, 45, Some("db.QueryContext(ctx, q, orgID)"), reworded)), "4 lines");
        assert!(!same_issue(&quoted, &finding("other.go", 41, None, said)), "another file");
    }

    #[test]
    fn the_places_of_anchored_quotes_decide_over_their_text() {
        let said = "The error is returned without context, so the log cannot tell which call failed";
        let reworded = "Returning the bare error loses which call failed; wrap it with context";
        let (ten, thirteen) = (
            anchored(10, Anchor::Anchored, "return nil, err", said),
            anchored(13, Anchor::Anchored, "return nil, err", reworded),
        );
        assert!(!same_issue(&ten, &thirteen), "the same text anchored on two lines is repeated code");
        let unchecked = Finding { anchor: Some(Anchor::Unchecked), ..thirteen.clone() };
        assert!(same_issue(&ten, &unchecked), "without both places the text decides");
        let fragment = anchored(10, Anchor::Anchored, "nil, err", reworded);
        assert!(same_issue(&ten, &fragment), "two fragments of one line are one place");
        // Anchored on line 12, a quote of three lines lies somewhere in 10..=14.
        let three = anchored(12, Anchor::Anchored, "a, err := f()\nif err != nil {\n\treturn nil, err", reworded);
        assert!(same_issue(&ten, &three));
        let relocated = anchored(11, Anchor::Relocated, "b, err := g()\nif err != nil {", reworded);
        assert!(!same_issue(&ten, &relocated), "a relocated quote starts at its line: 11..=12");
        assert!(same_issue(&anchored(12, Anchor::Anchored, "if err != nil {", said), &relocated));
    }

    #[test]
    fn the_same_quote_reworded_is_the_same_issue() {
        let file = "src/upload.rs";
        let quote = "let path = root.join(name);";
        let a =
            finding(file, 3, Some(quote), "User-controlled name is joined to the upload root, allowing path traversal");
        let b =
            finding(file, 4, Some(quote), "Path traversal: the upload root is joined with a name the user controls");
        let score = SameIssue::default().score(&a, &b).expect("the same issue");
        assert!((NEAR_DUPLICATE_THRESHOLD..1.0).contains(&score), "{score}");
    }

    #[test]
    fn a_concern_and_an_approval_are_never_the_same_issue() {
        let mut a = finding("src/a.rs", 8, Some("root.join(name)"), "the name is joined to the root unchecked");
        let mut b = Finding { stance: Some(Stance::Approval), ..a.clone() };
        assert!(!same_issue(&a, &b), "the same words, quote and line");
        (a.fingerprint, b.fingerprint) = (Some("f".into()), Some("f".into()));
        assert!(!same_issue(&a, &b), "the same fingerprint");
        a.stance = Some(Stance::Concern);
        b.stance = None;
        assert!(same_issue(&a, &b), "an absent stance is a concern");
    }

    #[test]
    fn one_call_at_threshold_zero_serves_every_threshold() {
        let (a, b) = (
            finding("x.py", 5, Some("total / len(xs)"), "Division by zero when xs is empty"),
            finding("x.py", 6, None, "If xs is empty the average divides by zero"),
        );
        let at_zero = SameIssue { threshold: 0.0, ..SameIssue::default() }.score(&a, &b);
        for t in [0.1, 0.2, 0.3, 0.4, 0.5, 0.6] {
            let rule = SameIssue { threshold: t, ..SameIssue::default() };
            assert_eq!(rule.score(&a, &b), at_zero.filter(|s| *s >= t), "{t}");
            let (wa, wb) = (word_hashes(&a.description), word_hashes(&b.description));
            assert_eq!(rule.score_hashed(&a, &wa, &b, &wb), rule.score(&a, &b));
        }
    }
}
