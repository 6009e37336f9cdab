//! Kept evals over the HTTP API, through `app()` without a socket: the list newest
//! first and by conclave, one eval whole, the error body of an unknown one and of a
//! bad limit, and the guard in front of both routes.

use axum::http::StatusCode;
use conclave_doubles::conformance::stored_eval;
use conclave_shared::eval::StoredEval;
use serde_json::{Value, json};

use crate::api::{Api, api_with};

/// The app with three evals kept: two of `light-code-review`, one of `review-panel`.
async fn api_with_evals(token: Option<&str>) -> (Api, Vec<StoredEval>) {
    let api = api_with(token);
    let evals = vec![
        stored_eval("0190-a", "light-code-review", 1_000, 0.5),
        stored_eval("0190-b", "review-panel", 2_000, 0.625),
        stored_eval("0190-c", "light-code-review", 3_000, 0.75),
    ];
    for eval in &evals {
        api.state.store().put_eval(eval).await.expect("put");
    }
    (api, evals)
}

fn ids(listing: &Value) -> Vec<&str> {
    listing.as_array().expect("a list").iter().map(|e| e["id"].as_str().expect("an id")).collect()
}

#[tokio::test]
async fn evals_are_listed_newest_first_and_by_conclave() {
    let (api, _) = api_with_evals(None).await;
    let (status, all, text) = api.get("/api/evals").await;
    assert_eq!(status, StatusCode::OK, "{text}");
    assert_eq!(ids(&all), ["0190-c", "0190-b", "0190-a"], "every eval, newest first");
    let (status, light, _) = api.get("/api/evals?conclave=light-code-review&limit=10").await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(
        light,
        json!([
            {"id": "0190-c", "conclave": "light-code-review", "dataset": "evals/injected-bugs", "created_ms": 3000,
             "cases": 32, "precision": 0.75, "recall": 0.625, "f1": 0.5},
            {"id": "0190-a", "conclave": "light-code-review", "dataset": "evals/injected-bugs", "created_ms": 1000,
             "cases": 32, "precision": 0.5, "recall": 0.625, "f1": 0.5},
        ]),
        "only that conclave's evals, each with its headline figures"
    );
    assert_eq!(ids(&api.get("/api/evals?conclave=light-code-review&limit=1").await.1), ["0190-c"], "limited");
    assert_eq!(api.get("/api/evals?conclave=hello").await.1, json!([]), "a conclave without evals has none");
    let (status, body, _) = api.get("/api/evals?limit=0").await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert_eq!(body["error"]["message"], "limit must be 1 to 1000, not 0");
    let (status, body, _) = api.get("/api/evals?limit=many").await;
    assert_eq!((status, body["error"]["status"].as_u64()), (StatusCode::BAD_REQUEST, Some(400)), "{body}");
}

#[tokio::test]
async fn one_eval_is_read_whole_and_an_unknown_one_is_404() {
    let (api, evals) = api_with_evals(None).await;
    let (status, body, text) = api.get("/api/evals/0190-b").await;
    assert_eq!(status, StatusCode::OK, "{text}");
    let read: StoredEval = serde_json::from_value(body).expect("a stored eval");
    assert_eq!(read, evals[1], "the eval as kept, with its whole summary");
    let (status, body, _) = api.get("/api/evals/0190-z").await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    assert_eq!(body, json!({"error": {"status": 404, "message": "no eval `0190-z`"}}), "the API's error body");
}

#[tokio::test]
async fn the_guard_stands_in_front_of_the_eval_routes() {
    let (api, _) = api_with_evals(Some("s3cret-token")).await;
    let bearer = ("authorization", "Bearer s3cret-token");
    for uri in ["/api/evals", "/api/evals/0190-a"] {
        assert_eq!(api.call("GET", uri, None, &[bearer]).await.0, StatusCode::OK, "{uri} with the token");
        assert_eq!(api.get(uri).await.0, StatusCode::UNAUTHORIZED, "{uri} without the token");
        let foreign = [bearer, ("origin", "http://evil.example")];
        let (status, body, _) = api.call("GET", uri, None, &foreign).await;
        assert_eq!(status, StatusCode::FORBIDDEN, "{uri} from a foreign page");
        assert_eq!(body["error"]["status"], 403, "{body}");
        let same = [bearer, ("origin", "http://127.0.0.1:7700")];
        assert_eq!(api.call("GET", uri, None, &same).await.0, StatusCode::OK, "{uri} from the server's own page");
    }
}

/// A validator of `name`, a schema of the API document, with the document's other
/// schemas for its references.
fn validator_of(doc: &Value, name: &str) -> jsonschema::Validator {
    let schema = json!({"$ref": format!("#/components/schemas/{name}"), "components": doc["components"].clone()});
    jsonschema::validator_for(&schema).expect("the document's schema compiles")
}

#[tokio::test]
async fn the_api_document_describes_the_eval_routes_and_their_answers_fit_it() {
    let (api, _) = api_with_evals(None).await;
    let (_, doc, _) = api.get("/api/openapi.json").await;
    let listing = &doc["paths"]["/api/evals"]["get"]["responses"]["200"]["content"]["application/json"]["schema"];
    assert_eq!(listing["items"]["$ref"], "#/components/schemas/EvalListing", "{listing}");
    let one = &doc["paths"]["/api/evals/{id}"]["get"]["responses"];
    assert_eq!(one["200"]["content"]["application/json"]["schema"]["$ref"], "#/components/schemas/StoredEval");
    assert!(one["404"].is_object(), "{one}");
    let (listed, eval) = (api.get("/api/evals").await.1, api.get("/api/evals/0190-b").await.1);
    let listing = validator_of(&doc, "EvalListing");
    for item in listed.as_array().expect("a list") {
        let errors: Vec<String> = listing.iter_errors(item).map(|e| e.to_string()).collect();
        assert!(errors.is_empty(), "a listing that does not fit the document: {errors:?}");
    }
    let errors: Vec<String> = validator_of(&doc, "StoredEval").iter_errors(&eval).map(|e| e.to_string()).collect();
    assert!(errors.is_empty(), "an eval that does not fit the document: {errors:?}");
    let wrong = json!({"id": "x", "conclave": "c", "dataset": "d", "created_ms": 1, "summary": {"cases": "many"}});
    assert!(!validator_of(&doc, "StoredEval").is_valid(&wrong), "the schema describes the summary, not any object");
}
