//! Webhook deliveries through `app()` without a socket, as GitHub and GitLab send
//! them: each event read into the typed record the run store keeps (repository,
//! number, head, base, installation, sender, command or why it is ignored), drafts,
//! commands in comments, `/conclave dismiss` replies, redeliveries kept once, the
//! endpoints absent without their secrets, and the deliveries counted in
//! `/metrics`. The attacks on the real binary are in `attack_webhooks.rs`.

use axum::http::StatusCode;
use conclave_server::api::webhooks::settings::Webhooks;
use conclave_server::api::webhooks::signature::{github_signature, verify_github};
use conclave_server::observe::prometheus;
use conclave_shared::delivery::{Asks, Command, Delivery, DeliveryEvent, Forge, Ignored};
use serde_json::{Value, json};

use crate::api::{Api, api_with};
use crate::metrics::{parse, value};

pub(crate) const GITHUB_SECRET: &str = "whsec-github-7f3a9c1e5b";
pub(crate) const GITLAB_SECRET: &str = "whsec-gitlab-2d8e4b6a0c";

fn receiving(review_drafts: bool) -> Api {
    let mut api = api_with(Some("api-token-not-sent-by-forges"));
    let secrets = |name: &str| match name {
        "CONCLAVE_GITHUB_WEBHOOK_SECRET" => Some(GITHUB_SECRET.to_string()),
        "CONCLAVE_GITLAB_WEBHOOK_SECRET" => Some(GITLAB_SECRET.to_string()),
        _ => None,
    };
    api.state = api.state.clone().with_webhooks(Webhooks::from_env(&secrets, review_drafts));
    api
}

/// A GitHub `pull_request` body.
pub(crate) fn pull_request(action: &str, number: u64, draft: bool) -> Value {
    json!({
        "action": action,
        "number": number,
        "pull_request": {
            "number": number, "draft": draft, "title": "Add a parser",
            "head": {"sha": "a1b2c3d4e5f60718293a4b5c6d7e8f9012345678", "ref": "feature"},
            "base": {"sha": "ffffffffffffffffffffffffffffffffffffffff", "ref": "main"}
        },
        "repository": {"id": 1, "full_name": "acme/app", "name": "app"},
        "installation": {"id": 4242, "node_id": "x"},
        "sender": {"login": "ann", "id": 7}
    })
}

fn issue_comment(body: &str, on_pull_request: bool) -> Value {
    let mut issue = json!({"number": 7, "title": "t"});
    if on_pull_request {
        issue["pull_request"] = json!({"url": "https://api.example/repos/acme/app/pulls/7"});
    }
    json!({
        "action": "created", "issue": issue,
        "comment": {"id": 900, "body": body, "user": {"login": "bo"}},
        "repository": {"full_name": "acme/app"}, "installation": {"id": 4242}, "sender": {"login": "bo"}
    })
}

fn review_reply(body: &str, in_reply_to: Option<u64>) -> Value {
    let mut value = pull_request("created", 7, false);
    value["comment"] = json!({"id": 1005, "body": body, "in_reply_to_id": in_reply_to, "user": {"login": "cy"}});
    value["sender"] = json!({"login": "cy"});
    value
}

/// Sends `body` as GitHub delivery `id` of `event`, signed with the secret.
pub(crate) async fn github(api: &Api, event: &str, id: &str, body: &Value) -> (StatusCode, Value) {
    let text = body.to_string();
    let signature = github_signature(GITHUB_SECRET, text.as_bytes());
    let headers = [("x-github-event", event), ("x-github-delivery", id), ("x-hub-signature-256", signature.as_str())];
    let (status, answer, _) = api.call("POST", "/webhooks/github", Some(text), &headers).await;
    (status, answer)
}

async fn gitlab(api: &Api, event: &str, id: &str, body: &Value) -> (StatusCode, Value) {
    let headers = [("x-gitlab-event", event), ("idempotency-key", id), ("x-gitlab-token", GITLAB_SECRET)];
    let (status, answer, _) = api.call("POST", "/webhooks/gitlab", Some(body.to_string()), &headers).await;
    (status, answer)
}

async fn pending(api: &Api) -> Vec<Delivery> {
    api.state.store().pending_deliveries(100).await.expect("pending deliveries")
}

#[test]
fn github_s_documented_signature_example_verifies() {
    let secret = conclave_core::Secret::new("It's a Secret to Everybody");
    let header = "sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17";
    assert_eq!(github_signature(secret.expose(), b"Hello, World!"), header);
    assert!(verify_github(&secret, Some(header.as_bytes()), b"Hello, World!").is_ok());
    assert!(verify_github(&secret, Some(header.as_bytes()), b"Hello, World?").is_err());
}

#[tokio::test]
async fn a_pushed_pull_request_is_kept_as_a_typed_record_once() {
    let api = receiving(false);
    let (status, answer) = github(&api, "pull_request", "d-open", &pull_request("synchronize", 7, false)).await;
    assert_eq!(status, StatusCode::ACCEPTED, "{answer}");
    assert_eq!(answer, json!({"delivery": "d-open", "outcome": "accepted", "command": "review"}));
    let kept = pending(&api).await;
    assert_eq!(kept.len(), 1);
    let delivery = &kept[0];
    let expected = Delivery {
        forge: Forge::Github,
        id: "d-open".into(),
        event: DeliveryEvent::PullRequest,
        action: "synchronize".into(),
        repository: Some("acme/app".into()),
        number: Some(7),
        head_sha: Some("a1b2c3d4e5f60718293a4b5c6d7e8f9012345678".into()),
        base_ref: Some("main".into()),
        installation: Some(4242),
        sender: Some("ann".into()),
        asks: Asks::Command(Command::Review { full: false }),
        received_ms: delivery.received_ms,
    };
    assert_eq!(delivery, &expected);
    assert!(delivery.received_ms > 1_700_000_000_000, "received now");
    // GitHub redelivers the same delivery (its id is the same): acknowledged, nothing new.
    let (status, answer) = github(&api, "pull_request", "d-open", &pull_request("opened", 7, false)).await;
    assert_eq!(status, StatusCode::OK, "{answer}");
    assert_eq!(answer["outcome"], "duplicate");
    assert_eq!(pending(&api).await, kept, "the redelivery changed nothing");
}

#[tokio::test]
async fn each_reviewed_action_asks_for_a_review_and_other_actions_are_ignored() {
    let api = receiving(false);
    for (n, action) in ["opened", "synchronize", "reopened", "ready_for_review"].iter().enumerate() {
        let (status, answer) = github(&api, "pull_request", &format!("r-{n}"), &pull_request(action, 7, false)).await;
        assert_eq!((status, answer["outcome"].as_str()), (StatusCode::ACCEPTED, Some("accepted")), "{action}");
    }
    for (n, action) in ["closed", "edited", "labeled", "assigned"].iter().enumerate() {
        let (status, answer) = github(&api, "pull_request", &format!("i-{n}"), &pull_request(action, 7, false)).await;
        assert_eq!(status, StatusCode::ACCEPTED, "{action}: {answer}");
        assert_eq!(answer["outcome"], "ignored", "{action}");
        assert_eq!(answer["reason"], Ignored::Action.reason());
    }
    let actions: Vec<String> = pending(&api).await.into_iter().map(|d| d.action).collect();
    assert_eq!(actions, ["opened", "synchronize", "reopened", "ready_for_review"], "only the reviewed ones pend");
}

#[tokio::test]
async fn drafts_wait_unless_the_server_reviews_them() {
    let api = receiving(false);
    let (_, answer) = github(&api, "pull_request", "draft-1", &pull_request("opened", 8, true)).await;
    assert_eq!(
        (answer["outcome"].as_str(), answer["reason"].as_str()),
        (Some("ignored"), Some(&*Ignored::Draft.reason()))
    );
    let (_, answer) = github(&api, "pull_request", "draft-2", &pull_request("ready_for_review", 8, false)).await;
    assert_eq!(answer["outcome"], "accepted", "marked ready, it is reviewed");
    let drafts = receiving(true);
    let (_, answer) = github(&drafts, "pull_request", "draft-1", &pull_request("opened", 8, true)).await;
    assert_eq!(answer["outcome"], "accepted", "with --review-drafts");
}

#[tokio::test]
async fn comments_ask_for_reviews_and_replies_dismiss() {
    let api = receiving(false);
    let cases = [
        ("c-1", "issue_comment", issue_comment("/conclave review", true), Ok(Command::Review { full: false })),
        (
            "c-2",
            "issue_comment",
            issue_comment("  /conclave review --full\nplease", true),
            Ok(Command::Review { full: true }),
        ),
        ("c-3", "issue_comment", issue_comment("/conclave review", false), Err(Ignored::NotPullRequest)),
        ("c-4", "issue_comment", issue_comment("looks good /conclave review", true), Err(Ignored::NoCommand)),
        (
            "c-5",
            "issue_comment",
            issue_comment("/conclave reveiw", true),
            Err(Ignored::UnknownCommand("/conclave reveiw".into())),
        ),
        ("c-6", "issue_comment", issue_comment("/conclave dismiss fine", true), Err(Ignored::DismissOutsideThread)),
        (
            "c-7",
            "pull_request_review_comment",
            review_reply("/conclave dismiss the caller validates it", Some(1002)),
            Ok(Command::Dismiss {
                reason: "the caller validates it".into(),
                reply: "1005".into(),
                thread: "1002".into(),
            }),
        ),
        (
            "c-8",
            "pull_request_review_comment",
            review_reply("/conclave dismiss x", None),
            Err(Ignored::DismissOutsideThread),
        ),
    ];
    for (id, event, body, expected) in &cases {
        let (status, answer) = github(&api, event, id, body).await;
        assert_eq!(status, StatusCode::ACCEPTED, "{id}: {answer}");
        match expected {
            Ok(command) => assert_eq!(answer["command"].as_str(), Some(&*command.text()), "{id}"),
            Err(why) => assert_eq!(answer["reason"].as_str(), Some(&*why.reason()), "{id}"),
        }
    }
    let kept: Vec<(String, Command)> =
        pending(&api).await.into_iter().map(|d| (d.id.clone(), d.command().cloned().expect("a command"))).collect();
    let expected: Vec<(String, Command)> =
        cases.iter().filter_map(|(id, _, _, expected)| expected.clone().ok().map(|c| (id.to_string(), c))).collect();
    assert_eq!(kept, expected);
    let reply = pending(&api).await.into_iter().find(|d| d.id == "c-7").expect("the reply");
    assert_eq!(
        (reply.number, reply.sender.as_deref(), reply.event),
        (Some(7), Some("cy"), DeliveryEvent::ReviewComment)
    );
}

#[tokio::test]
async fn github_bodies_that_are_not_their_event_s_shape_are_told_apart() {
    let api = receiving(false);
    let (status, answer) = github(&api, "pull_request", "bad-1", &json!({"action": "opened"})).await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{answer}");
    let message = answer["error"]["message"].as_str().unwrap_or_default();
    assert!(message.contains("expected shape") && message.contains("pull_request"), "{message}");
    // Another event is acknowledged and ignored, whatever its shape.
    let (status, answer) =
        github(&api, "push", "push-1", &json!({"ref": "refs/heads/main", "repository": {"full_name": "acme/app"}}))
            .await;
    assert_eq!((status, answer["outcome"].as_str()), (StatusCode::ACCEPTED, Some("ignored")), "{answer}");
    let (status, answer) = github(&api, "star", "star-1", &json!([1, 2, 3])).await;
    assert_eq!((status, answer["outcome"].as_str()), (StatusCode::ACCEPTED, Some("ignored")), "{answer}");
    assert!(pending(&api).await.is_empty());
}

/// A GitLab merge request hook.
fn merge_request(action: &str, oldrev: Option<&str>, draft: bool) -> Value {
    let mut attributes = json!({
        "iid": 12, "action": action, "draft": draft, "work_in_progress": draft, "target_branch": "develop",
        "source_branch": "feature", "last_commit": {"id": "0f0e0d0c0b0a09080706050403020100ffeeddcc"}
    });
    if let Some(oldrev) = oldrev {
        attributes["oldrev"] = json!(oldrev);
    }
    json!({
        "object_kind": "merge_request", "event_type": "merge_request",
        "user": {"username": "dee"}, "project": {"id": 3, "path_with_namespace": "group/sub/project"},
        "object_attributes": attributes, "changes": {}
    })
}

fn note(body: &str, noteable: &str) -> Value {
    json!({
        "object_kind": "note", "user": {"username": "eve"}, "project": {"path_with_namespace": "group/sub/project"},
        "object_attributes": {"id": 31, "note": body, "noteable_type": noteable, "discussion_id": "abc123", "action": "create"},
        "merge_request": {"iid": 12, "target_branch": "develop", "last_commit": {"id": "0f0e0d0c0b0a09080706050403020100ffeeddcc"}}
    })
}

#[tokio::test]
async fn gitlab_merge_requests_and_notes_are_kept_the_same_way() {
    let api = receiving(false);
    let cases = [
        ("g-1", "Merge Request Hook", merge_request("open", None, false), "accepted"),
        (
            "g-2",
            "Merge Request Hook",
            merge_request("update", Some("1111111111111111111111111111111111111111"), false),
            "accepted",
        ),
        ("g-3", "Merge Request Hook", merge_request("update", None, false), "ignored"),
        ("g-4", "Merge Request Hook", merge_request("reopen", None, false), "accepted"),
        ("g-5", "Merge Request Hook", merge_request("open", None, true), "ignored"),
        ("g-6", "Merge Request Hook", merge_request("close", None, false), "ignored"),
        ("g-7", "Note Hook", note("/conclave review --full", "MergeRequest"), "accepted"),
        ("g-8", "Note Hook", note("/conclave review", "Issue"), "ignored"),
        ("g-9", "Note Hook", note("/conclave dismiss generated code", "MergeRequest"), "accepted"),
        ("g-10", "Push Hook", json!({"object_kind": "push"}), "ignored"),
    ];
    for (id, event, body, outcome) in &cases {
        let (status, answer) = gitlab(&api, event, id, body).await;
        assert_eq!((status, answer["outcome"].as_str()), (StatusCode::ACCEPTED, Some(*outcome)), "{id}: {answer}");
    }
    let (status, answer) = gitlab(&api, "Note Hook", "g-7", &note("/conclave review --full", "MergeRequest")).await;
    assert_eq!(
        (status, answer["outcome"].as_str()),
        (StatusCode::OK, Some("duplicate")),
        "a retry keeps its Idempotency-Key"
    );
    let kept = pending(&api).await;
    let ids: Vec<&str> = kept.iter().map(|d| d.id.as_str()).collect();
    assert_eq!(ids, ["g-1", "g-2", "g-4", "g-7", "g-9"]);
    let first = &kept[0];
    assert_eq!(
        (first.forge, first.repository.as_deref(), first.number, first.head_sha.as_deref(), first.base_ref.as_deref()),
        (
            Forge::Gitlab,
            Some("group/sub/project"),
            Some(12),
            Some("0f0e0d0c0b0a09080706050403020100ffeeddcc"),
            Some("develop")
        )
    );
    assert_eq!(
        (first.sender.as_deref(), first.installation, first.event.clone()),
        (Some("dee"), None, DeliveryEvent::MergeRequest)
    );
    assert_eq!(kept[3].command(), Some(&Command::Review { full: true }));
    let dismiss = Command::Dismiss { reason: "generated code".into(), reply: "31".into(), thread: "abc123".into() };
    assert_eq!(kept[4].command(), Some(&dismiss));
}

#[tokio::test]
async fn without_their_secrets_the_endpoints_do_not_exist() {
    let api = api_with(Some("tok"));
    for path in ["/webhooks/github", "/webhooks/gitlab"] {
        let (status, answer, _) = api.call("POST", path, Some("{}".into()), &[]).await;
        assert_eq!(status, StatusCode::NOT_FOUND, "{path}: {answer}");
        let message = answer["error"]["message"].as_str().unwrap_or_default();
        assert!(message.contains("_WEBHOOK_SECRET"), "says how to turn it on: {message}");
    }
    let api = receiving(false);
    let (status, _, _) = api.call("GET", "/webhooks/github", None, &[]).await;
    assert_eq!(status, StatusCode::METHOD_NOT_ALLOWED);
}

#[tokio::test]
async fn deliveries_are_counted_by_forge_event_and_outcome() {
    let mut api = receiving(false);
    api.state = api.state.clone().with_metrics(prometheus::install());
    // Series no other test of this binary touches: pings, GitLab pipeline hooks and a wrong GitLab token.
    let (status, _) = github(&api, "ping", "m-ping", &json!({"zen": "Keep it logically awesome.", "hook_id": 1})).await;
    assert_eq!(status, StatusCode::ACCEPTED);
    let (status, _) = github(&api, "ping", "m-ping", &json!({"zen": "Keep it logically awesome.", "hook_id": 1})).await;
    assert_eq!(status, StatusCode::OK);
    let (status, _) = gitlab(&api, "Pipeline Hook", "m-pipe", &json!({"object_kind": "pipeline"})).await;
    assert_eq!(status, StatusCode::ACCEPTED);
    let wrong = [("x-gitlab-event", "Pipeline Hook"), ("idempotency-key", "m-wrong"), ("x-gitlab-token", "guess")];
    let (status, _, _) = api.call("POST", "/webhooks/gitlab", Some("{}".into()), &wrong).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    let bearer = "Bearer api-token-not-sent-by-forges";
    let (status, _, text) = api.call("GET", "/metrics", None, &[("authorization", bearer)]).await;
    assert_eq!(status, StatusCode::OK);
    let (samples, types) = parse(&text);
    assert_eq!(types.get("conclave_webhook_deliveries_total").map(String::as_str), Some("counter"));
    let count = |forge: &str, event: &str, outcome: &str| {
        value(
            &samples,
            "conclave_webhook_deliveries_total",
            &[("forge", forge), ("event", event), ("outcome", outcome)],
        )
    };
    assert_eq!(count("github", "ping", "ignored"), Some(1.0));
    assert_eq!(count("github", "ping", "duplicate"), Some(1.0));
    assert_eq!(count("gitlab", "other", "ignored"), Some(1.0));
    assert_eq!(count("gitlab", "other", "refused"), Some(1.0));
    assert!(!text.contains(GITLAB_SECRET) && !text.contains(GITHUB_SECRET), "no secret in the metrics");
}
