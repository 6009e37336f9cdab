//! The HTTP API through `app()` with `oneshot` (no socket): every route, its error
//! statuses, the token check, and run events over SSE with resumption.

use axum::body::Body;
use axum::http::{HeaderMap, Request, StatusCode};
use conclave_core::{ProviderRegistry, Secret};
use conclave_doubles::{FakeProvider, MemoryStore};
use conclave_engine::{Engine, EngineConfig};
use conclave_schema::SchemaCatalog;
use conclave_server::Workspace;
use conclave_server::api::{AppState, EditorSource, Security, app};
use serde_json::{Value, json};
use std::sync::Arc;
use tower::ServiceExt;

/// The app around a temporary workspace with the fake provider; other API tests of
/// this binary (runs from a node) use it too.
pub(crate) struct Api {
    pub(crate) state: AppState,
    pub(crate) dir: tempfile::TempDir,
}

pub(crate) fn api_with(token: Option<&str>) -> Api {
    api_over(token, Arc::new(FakeProvider::new("fake")), EngineConfig::default())
}

/// The app with `fake` registered beside the built-in providers and an engine made
/// with `config`.
pub(crate) fn api_over(token: Option<&str>, fake: Arc<FakeProvider>, config: EngineConfig) -> Api {
    api_on(token, fake, config, Arc::new(MemoryStore::new()))
}

/// [`api_over`] on `store`.
pub(crate) fn api_on(
    token: Option<&str>,
    fake: Arc<FakeProvider>,
    config: EngineConfig,
    store: Arc<dyn conclave_core::RunStore>,
) -> Api {
    let mut providers = conclave_providers::builtin(conclave_server::SECRET_VARIABLES);
    providers.register(fake);
    api_from(token, providers, config, store)
}

/// The app with `providers` and an engine made with `config`, on `store`.
fn api_from(
    token: Option<&str>,
    providers: ProviderRegistry,
    config: EngineConfig,
    store: Arc<dyn conclave_core::RunStore>,
) -> Api {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::create_dir_all(dir.path().join("conclaves")).expect("mkdir");
    // Reviews run in this process: their `conclave scan` lanes run the built binary,
    // as `conclave serve`'s run itself.
    conclave_review::analyzers::use_conclave_executable(env!("CARGO_BIN_EXE_conclave").into());
    let workspace = Workspace::new(dir.path().join("conclaves"), SchemaCatalog::with_roots(vec![]), providers);
    let engine = Engine::new(workspace.providers.clone(), store, config);
    let security = Security {
        token: token.map(Secret::new),
        allowed_hosts: Vec::new(),
        repo_roots: vec![std::env::temp_dir().canonicalize().expect("temp dir")],
        allowed_programs: Vec::new(),
    };
    let state = AppState::new(workspace, engine, security, EditorSource::embedded());
    Api { state, dir }
}

impl Api {
    pub(crate) async fn call(
        &self,
        method: &str,
        uri: &str,
        body: Option<String>,
        headers: &[(&str, &str)],
    ) -> (StatusCode, Value, String) {
        let (status, _, body, text) = self.exchange(method, uri, body, headers).await;
        (status, body, text)
    }

    /// As [`Api::call`], with the response's headers.
    pub(crate) async fn exchange(
        &self,
        method: &str,
        uri: &str,
        body: Option<String>,
        headers: &[(&str, &str)],
    ) -> (StatusCode, HeaderMap, Value, String) {
        let mut request = Request::builder().method(method).uri(uri);
        // What a browser on the served page sends, unless the test says otherwise.
        if !headers.iter().any(|(k, _)| k.eq_ignore_ascii_case("host")) {
            request = request.header("host", "127.0.0.1:7700");
        }
        if method != "GET" && !headers.iter().any(|(k, _)| k.eq_ignore_ascii_case("content-type")) {
            request = request.header("content-type", "application/json");
        }
        for (k, v) in headers {
            request = request.header(*k, *v);
        }
        let request = request.body(body.map_or_else(Body::empty, Body::from)).expect("request");
        let response = app(self.state.clone()).oneshot(request).await.expect("response");
        let (status, headers) = (response.status(), response.headers().clone());
        let bytes = axum::body::to_bytes(response.into_body(), 64 * 1024 * 1024).await.expect("body");
        let text = String::from_utf8_lossy(&bytes).into_owned();
        (status, headers, serde_json::from_str(&text).unwrap_or(Value::Null), text)
    }

    pub(crate) async fn get(&self, uri: &str) -> (StatusCode, Value, String) {
        self.call("GET", uri, None, &[]).await
    }

    pub(crate) async fn send(&self, method: &str, uri: &str, body: Value) -> (StatusCode, Value, String) {
        self.call(method, uri, Some(body.to_string()), &[]).await
    }
}

pub(crate) fn conclave(id: &str, model: &str) -> Value {
    json!({
        "version": 1, "id": id, "name": "Pair",
        "nodes": [
            {"id": "input", "kind": "trigger", "label": "Input", "position": {"x": 0, "y": 0}},
            {"id": "a", "kind": "agent", "label": "A", "position": {"x": 200, "y": 0}, "agent": {"provider": "fake", "model": model}},
            {"id": "out", "kind": "output", "label": "Out", "position": {"x": 400, "y": 0}}
        ],
        "edges": [{"from": "input", "to": "a"}, {"from": "a", "to": "out"}]
    })
}

#[tokio::test]
async fn conclaves_can_be_created_read_listed_updated_and_deleted() {
    let api = api_with(None);
    let (status, created, _) = api.send("POST", "/api/conclaves", conclave("pair", "text=hi")).await;
    assert_eq!(status, StatusCode::CREATED, "{created}");
    let on_disk = std::fs::read_to_string(api.state.workspace.catalog_dir.join("pair.conclave.json")).expect("written");
    assert!(on_disk.starts_with("{\n  \"version\": 1,\n  \"id\": \"pair\","), "canonical file: {on_disk}");

    let (status, body, _) = api.send("POST", "/api/conclaves", conclave("pair", "text=hi")).await;
    assert_eq!((status, body["error"]["status"].as_u64()), (StatusCode::CONFLICT, Some(409)));

    let (status, got, _) = api.get("/api/conclaves/pair").await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(got, created);
    let (_, listed, _) = api.get("/api/conclaves").await;
    assert_eq!(listed[0]["id"], "pair");
    assert_eq!(listed[0]["errors"], 0);

    let mut changed = conclave("pair", "text=bye");
    changed["name"] = json!("Renamed");
    let (status, _, _) = api.send("PUT", "/api/conclaves/pair", changed).await;
    assert_eq!(status, StatusCode::OK);
    assert!(
        std::fs::read_to_string(api.state.workspace.catalog_dir.join("pair.conclave.json"))
            .expect("file")
            .contains("\"Renamed\"")
    );

    let (status, body, _) = api.send("PUT", "/api/conclaves/pair", conclave("other", "x")).await;
    assert_eq!((status, body["error"]["path"].as_str()), (StatusCode::UNPROCESSABLE_ENTITY, Some("/id")));
    let (status, _, _) = api.send("PUT", "/api/conclaves/ghost", conclave("ghost", "x")).await;
    assert_eq!(status, StatusCode::NOT_FOUND);

    let (status, _, _) = api.call("DELETE", "/api/conclaves/pair", None, &[]).await;
    assert_eq!(status, StatusCode::NO_CONTENT);
    assert_eq!(api.get("/api/conclaves/pair").await.0, StatusCode::NOT_FOUND);
    assert_eq!(api.call("DELETE", "/api/conclaves/pair", None, &[]).await.0, StatusCode::NOT_FOUND);
}

/// The ETag header of a response.
fn etag(headers: &HeaderMap) -> String {
    headers.get("etag").and_then(|v| v.to_str().ok()).expect("an ETag").to_string()
}

/// PUTs `body` to `/api/conclaves/{id}` with these extra headers.
async fn put_with(api: &Api, id: &str, body: Value, headers: &[(&str, &str)]) -> (StatusCode, HeaderMap, Value) {
    let (status, headers, body, _) =
        api.exchange("PUT", &format!("/api/conclaves/{id}"), Some(body.to_string()), headers).await;
    (status, headers, body)
}

#[tokio::test]
async fn the_etag_is_a_hash_of_the_file_and_a_stale_one_gets_412() {
    use sha2::Digest;
    let api = api_with(None);
    let file = api.state.workspace.catalog_dir.join("pair.conclave.json");
    let (status, created, _, _) =
        api.exchange("POST", "/api/conclaves", Some(conclave("pair", "text=hi").to_string()), &[]).await;
    assert_eq!(status, StatusCode::CREATED);
    let hash = |bytes: &[u8]| format!("\"{}\"", hex::encode(sha2::Sha256::digest(bytes)));
    let opened = etag(&created);
    assert_eq!(opened, hash(&std::fs::read(&file).expect("file")), "a strong ETag: the file's SHA-256");
    let (status, got, _, _) = api.exchange("GET", "/api/conclaves/pair", None, &[]).await;
    assert_eq!((status, etag(&got)), (StatusCode::OK, opened.clone()));

    // The first editor saves with the ETag it opened: the file changes, and so does the ETag.
    let (status, saved, _) = put_with(&api, "pair", conclave("pair", "text=first"), &[("if-match", &opened)]).await;
    assert_eq!(status, StatusCode::OK);
    let first = etag(&saved);
    assert_ne!(first, opened);
    assert_eq!(first, hash(&std::fs::read(&file).expect("file")));
    assert_eq!(etag(&api.exchange("GET", "/api/conclaves/pair", None, &[]).await.1), first);

    // The second editor opened the same version: its save is refused and changes nothing.
    let (status, _, body) = put_with(&api, "pair", conclave("pair", "text=second"), &[("if-match", &opened)]).await;
    assert_eq!(status, StatusCode::PRECONDITION_FAILED);
    assert_eq!(
        body,
        json!({"error": {"status": 412, "message": "conclaves/pair.conclave.json changed on disk since it was opened; reload it (GET /api/conclaves/pair returns it with its current ETag) and make your changes again"}})
    );
    let on_disk = std::fs::read_to_string(&file).expect("file");
    assert!(on_disk.contains("text=first") && !on_disk.contains("text=second"), "{on_disk}");

    // A file edited on disk (a text editor, git) makes the editor's ETag stale too.
    std::fs::write(&file, on_disk.replace("text=first", "text=by-hand")).expect("edit by hand");
    let (status, _, _) = put_with(&api, "pair", conclave("pair", "text=third"), &[("if-match", &first)]).await;
    assert_eq!(status, StatusCode::PRECONDITION_FAILED);
    assert!(std::fs::read_to_string(&file).expect("file").contains("text=by-hand"));
}

#[tokio::test]
async fn if_match_takes_any_listed_etag_or_star_and_no_header_updates_as_before() {
    let api = api_with(None);
    let (_, created, _, _) =
        api.exchange("POST", "/api/conclaves", Some(conclave("pair", "text=hi").to_string()), &[]).await;
    let current = etag(&created);
    let listed = format!("\"0000\", {current}");
    let (status, saved, _) = put_with(&api, "pair", conclave("pair", "text=listed"), &[("if-match", &listed)]).await;
    assert_eq!(status, StatusCode::OK, "one of the listed tags is the file's");
    // A weak tag never matches: If-Match compares strongly.
    let weak = format!("W/{}", etag(&saved));
    let (status, _, _) = put_with(&api, "pair", conclave("pair", "text=weak"), &[("if-match", &weak)]).await;
    assert_eq!(status, StatusCode::PRECONDITION_FAILED);
    let (status, _, _) = put_with(&api, "pair", conclave("pair", "text=star"), &[("if-match", "*")]).await;
    assert_eq!(status, StatusCode::OK);
    let (status, saved, _) = put_with(&api, "pair", conclave("pair", "text=none"), &[]).await;
    assert_eq!(status, StatusCode::OK, "no If-Match: the CLI and scripts update as they always did");
    assert_eq!(etag(&saved), etag(&api.exchange("GET", "/api/conclaves/pair", None, &[]).await.1));
    for malformed in ["not-quoted", "\"a b\"", "*, \"x\"", "\"unterminated", "W/x", "\"x\" \"y\""] {
        let (status, _, body) = put_with(&api, "pair", conclave("pair", "text=bad"), &[("if-match", malformed)]).await;
        assert_eq!(status, StatusCode::PRECONDITION_FAILED, "{malformed}");
        assert_eq!(
            body["error"]["message"],
            "the If-Match header is not `*` or a list of quoted entity tags, so it names no version of conclaves/pair.conclave.json; send the ETag of GET /api/conclaves/pair"
        );
    }
    let (status, _, _) = put_with(&api, "ghost", conclave("ghost", "x"), &[("if-match", "*")]).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_creates_of_one_id_give_one_201_and_409s_and_never_clobber() {
    let api = Arc::new(api_with(None));
    for round in 0..20 {
        let id = format!("race-{round}");
        let mut tasks = tokio::task::JoinSet::new();
        for writer in 0..6 {
            let (api, body) = (api.clone(), conclave(&id, &format!("text=writer-{writer}")));
            tasks.spawn(async move { (writer, api.send("POST", "/api/conclaves", body).await) });
        }
        let mut created = Vec::new();
        while let Some(done) = tasks.join_next().await {
            let (writer, (status, body, _)) = done.expect("a create");
            match status {
                StatusCode::CREATED => created.push(writer),
                StatusCode::CONFLICT => assert_eq!(
                    body["error"]["message"],
                    format!("a conclave `{id}` exists; update it with PUT /api/conclaves/{id}")
                ),
                other => panic!("writer {writer} got {other}: {body}"),
            }
        }
        assert_eq!(created.len(), 1, "round {round}: writers {created:?} were all told they created `{id}`");
        let file = api.state.workspace.catalog_dir.join(format!("{id}.conclave.json"));
        let on_disk = std::fs::read_to_string(file).expect("the file");
        assert!(on_disk.contains(&format!("text=writer-{}", created[0])), "the file is the winner's: {on_disk}");
    }
    let leftovers: Vec<_> = std::fs::read_dir(&api.state.workspace.catalog_dir)
        .expect("catalog")
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .filter(|name| !name.ends_with(".conclave.json"))
        .collect();
    assert!(leftovers.is_empty(), "temporary files left behind: {leftovers:?}");
}

/// Sets a file's modification time `age` in the past, as if it was written then.
fn age_file(path: &std::path::Path, age: std::time::Duration) {
    let file = std::fs::OpenOptions::new().write(true).open(path).expect("open");
    file.set_modified(std::time::SystemTime::now() - age).expect("set the modification time");
}

#[tokio::test]
async fn the_catalog_listing_shows_files_edited_on_disk_at_the_next_request() {
    let api = api_with(None);
    let dir = api.state.workspace.catalog_dir.clone();
    for id in ["alpha", "beta"] {
        assert_eq!(api.send("POST", "/api/conclaves", conclave(id, "text=hi")).await.0, StatusCode::CREATED);
        age_file(&dir.join(format!("{id}.conclave.json")), std::time::Duration::from_secs(3600));
    }
    let summary = |listed: &Value, id: &str| {
        let found = listed.as_array().expect("a list").iter().find(|s| s["id"] == id).cloned();
        found.map(|s| (s["name"].clone(), s["errors"].clone()))
    };
    let listed = api.get("/api/conclaves").await.1;
    assert_eq!(summary(&listed, "alpha"), Some((json!("Pair"), json!(0))));
    assert_eq!(api.get("/api/conclaves").await.1, listed, "a second listing of unchanged files is the same");

    // Renamed and broken by hand (an unknown provider), long enough ago to have settled.
    let alpha = dir.join("alpha.conclave.json");
    let text = std::fs::read_to_string(&alpha).expect("alpha");
    std::fs::write(&alpha, text.replace("\"Pair\"", "\"Edited\"").replace("\"fake\"", "\"nope\"")).expect("edit");
    age_file(&alpha, std::time::Duration::from_secs(1800));
    let listed = api.get("/api/conclaves").await.1;
    assert_eq!(summary(&listed, "alpha"), Some((json!("Edited"), json!(1))));
    assert_eq!(summary(&listed, "beta"), Some((json!("Pair"), json!(0))));

    // Changed just now, to text of the very same length: still seen.
    let text = std::fs::read_to_string(&alpha).expect("alpha");
    std::fs::write(&alpha, text.replace("\"Edited\"", "\"Edites\"")).expect("edit again");
    assert_eq!(summary(&api.get("/api/conclaves").await.1, "alpha"), Some((json!("Edites"), json!(1))));

    // A file removed by hand leaves the list; one added by hand joins it.
    std::fs::remove_file(dir.join("beta.conclave.json")).expect("remove");
    let gamma = conclave("gamma", "text=hi").to_string().replace("\"Pair\"", "\"Gamma\"");
    std::fs::write(dir.join("gamma.conclave.json"), gamma).expect("add");
    let listed = api.get("/api/conclaves").await.1;
    let ids: Vec<&str> = listed.as_array().expect("a list").iter().filter_map(|s| s["id"].as_str()).collect();
    assert_eq!(ids, ["alpha", "gamma"]);
    assert_eq!(summary(&listed, "gamma"), Some((json!("Gamma"), json!(0))));
}

#[tokio::test]
async fn bad_bodies_get_400_413_and_422_with_locations() {
    let api = api_with(None);
    let (status, body, _) = api.call("POST", "/api/conclaves", Some("{\"id\": \"x\",\n \"name\": }".into()), &[]).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert!(body["error"]["message"].as_str().expect("message").contains("line 2, column"), "{body}");

    let huge = "x".repeat(3 * 1024 * 1024);
    let (status, body, _) = api.call("POST", "/api/conclaves", Some(format!("{{\"id\": \"{huge}\"}}")), &[]).await;
    assert_eq!(status, StatusCode::PAYLOAD_TOO_LARGE, "{body}");
    assert_eq!(body["error"]["status"], 413);

    let mut cyclic = conclave("loop", "x");
    cyclic["edges"].as_array_mut().expect("edges").push(json!({"from": "a", "to": "a"}));
    let (status, body, _) = api.send("POST", "/api/conclaves", cyclic).await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY);
    let codes: Vec<&str> = body["error"]["diagnostics"]
        .as_array()
        .expect("diagnostics")
        .iter()
        .filter_map(|d| d["code"].as_str())
        .collect();
    assert!(codes.contains(&"cycle"), "{body}");
    assert_eq!(body["error"]["path"], "/edges/2");

    let (status, body, _) = api.send("POST", "/api/conclaves", conclave("../escape", "x")).await;
    assert_eq!((status, body["error"]["path"].as_str()), (StatusCode::BAD_REQUEST, Some("/id")));
    assert_eq!(api.get("/api/conclaves/..%2Fetc").await.0, StatusCode::NOT_FOUND);
    assert_eq!(api.get("/api/nope").await.0, StatusCode::NOT_FOUND);
}

#[tokio::test]
async fn the_preview_shows_every_dialect_with_what_it_receives() {
    let api = api_with(None);
    let (status, previews, _) =
        api.send("POST", "/api/lower/preview", json!({"schema_ref": "review.findings.v1"})).await;
    assert_eq!(status, StatusCode::OK, "{previews}");
    let previews = previews.as_array().expect("a list").clone();
    let names: Vec<&str> = previews.iter().filter_map(|p| p["dialect"].as_str()).collect();
    assert_eq!(names, ["anthropic", "openai-chat", "openai-responses", "ollama", "claude-code", "local"]);
    let by = |name: &str| previews.iter().find(|p| p["dialect"] == name).expect(name).clone();
    let chat = by("openai-chat");
    assert_eq!(chat["provider"], "openai");
    assert_eq!(chat["request"]["response_format"]["json_schema"]["name"], "review_findings_v1");
    assert_eq!(chat["request"]["response_format"]["json_schema"]["strict"], true);
    let responses = by("openai-responses");
    assert_eq!(
        responses["request"]["text"]["format"]["schema"],
        chat["request"]["response_format"]["json_schema"]["schema"]
    );
    assert_eq!(by("anthropic")["request"]["output_config"]["format"]["type"], "json_schema");
    assert_eq!(by("anthropic")["meaning_losses"], 6, "the same as /api/lower for anthropic");
    assert!(by("ollama")["request"]["format"].is_object());
    let argv = by("claude-code")["request"]["argv"].clone();
    assert_eq!(argv[0], "--json-schema");
    assert!(!argv[1].as_str().expect("the schema as text").contains("$schema"), "the CLI's validator refuses it");
    assert!(by("local")["request"]["constraint"]["llguidance_json_schema"].is_object());
    for preview in &previews {
        let notes = preview["notes"].as_array().expect("notes");
        assert!(notes.iter().all(|n| n["path"].is_string() && n["message"].is_string()), "{preview}");
    }

    let (status, body, _) = api
        .send("POST", "/api/lower/preview", json!({"schema": {"type": "object", "properties": {"a": {"type": 7}}}}))
        .await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{body}");
    assert_eq!(body["error"]["path"], "/schema/properties/a/type");
    let (status, body, _) = api.send("POST", "/api/lower/preview", json!({"schema_ref": "no.such.v1"})).await;
    assert_eq!((status, body["error"]["path"].as_str()), (StatusCode::UNPROCESSABLE_ENTITY, Some("/schema_ref")));
}

#[tokio::test]
async fn validation_schemas_lowering_and_providers() {
    let api = api_with(None);
    let (status, body, _) = api
        .send("POST", "/api/validate", json!({"id": "x", "name": "x", "nodes": [{"id": "a", "kind": "router"}]}))
        .await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(body["errors"], 2);
    assert_eq!(body["diagnostics"][0]["path"], "/nodes/0/kind");

    let (_, refs, _) = api.get("/api/schemas").await;
    assert_eq!(
        refs,
        json!([{"reference": "review.findings.v1", "source": "built-in"}, {"reference": "review.verified.v1", "source": "built-in"}])
    );
    let (status, schema, _) = api.get("/api/schemas/review.findings.v1").await;
    assert_eq!((status, schema["type"].as_str()), (StatusCode::OK, Some("object")));
    assert_eq!(api.get("/api/schemas/no.such.v1").await.0, StatusCode::NOT_FOUND);

    let (status, lowered, _) =
        api.send("POST", "/api/lower", json!({"schema_ref": "review.findings.v1", "provider": "anthropic"})).await;
    assert_eq!(status, StatusCode::OK, "{lowered}");
    assert_eq!((lowered["target"].as_str(), lowered["native"].as_bool()), (Some("anthropic"), Some(true)));
    assert_eq!(lowered["meaning_losses"], 6);
    let (status, body, _) =
        api.send("POST", "/api/lower", json!({"schema": {"type": "object"}, "provider": "gemini"})).await;
    assert_eq!((status, body["error"]["path"].as_str()), (StatusCode::UNPROCESSABLE_ENTITY, Some("/provider")));
    let (status, body, _) =
        api.send("POST", "/api/lower", json!({"schema": {"type": "array"}, "provider": "openai"})).await;
    assert_eq!((status, body["error"]["path"].as_str()), (StatusCode::UNPROCESSABLE_ENTITY, Some("/schema/type")));

    let (_, providers, _) = api.get("/api/providers").await;
    let names: Vec<&str> = providers.as_array().expect("list").iter().filter_map(|p| p["name"].as_str()).collect();
    assert_eq!(names, vec!["anthropic", "openai", "ollama", "claude-code", "local", "fake"]);
    let ollama = providers.as_array().expect("list").iter().find(|p| p["name"] == "ollama").expect("ollama");
    assert_eq!((ollama["configured"].as_bool(), ollama["native_schema"].as_str()), (Some(true), Some("ollama")));

    let (status, doc, _) = api.get("/api/openapi.json").await;
    assert_eq!(status, StatusCode::OK);
    let paths: Vec<&String> = doc["paths"].as_object().expect("paths").keys().collect();
    for route in [
        "/api/conclaves",
        "/api/conclaves/{id}",
        "/api/validate",
        "/api/lower",
        "/api/lower/preview",
        "/api/providers",
        "/api/providers/{name}/probe",
        "/api/schemas",
        "/api/runs",
        "/api/runs/{id}/events",
        "/api/runs/{id}/cancel",
        "/api/runs/{id}/report",
    ] {
        assert!(paths.iter().any(|p| p.as_str() == route), "{route} missing from {paths:?}");
    }
    // A listed run names the pull request a webhook's review reviews; absent otherwise.
    let summary = &doc["components"]["schemas"]["RunSummary"];
    assert!(summary["properties"]["pull_request"].is_object(), "{summary}");
    let required = summary["required"].as_array().cloned().unwrap_or_default();
    assert!(!required.contains(&json!("pull_request")), "{summary}");
}

#[tokio::test]
async fn a_probe_reports_the_dialect_and_refuses_what_it_cannot_read() {
    let api = api_with(None);
    let (status, found, text) =
        api.send("POST", "/api/providers/fake/probe", json!({"model": "json={\"ok\": true}"})).await;
    assert_eq!(status, StatusCode::OK, "{text}");
    assert_eq!((found["provider"].as_str(), found["valid"].as_bool()), (Some("fake"), Some(true)), "{found}");
    assert!(found["dialect"].is_string() && found.get("error").is_none(), "{found}");
    let (status, found, _) = api.send("POST", "/api/providers/fake/probe", json!({"model": "json=[1]"})).await;
    assert_eq!((status, found["valid"].as_bool()), (StatusCode::OK, Some(false)), "an answer outside the schema");

    let (status, body, _) = api.send("POST", "/api/providers/gemini/probe", json!({})).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    assert!(body["error"]["message"].as_str().is_some_and(|m| m.contains("GET /api/providers")), "{body}");
    for bad in ["{\"model\": 5}", "{\"temperature\": 0}", "{", "", "[]", "[\"m\"]"] {
        let (status, _, text) = api.call("POST", "/api/providers/fake/probe", Some(bad.to_string()), &[]).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{bad:?}: {text}");
    }
}

#[tokio::test]
async fn the_local_probe_answers_its_dialect_at_once_without_loading_a_model() {
    // No model file anywhere: a probe that tried to generate could not even start.
    let models = tempfile::tempdir().expect("tempdir");
    let dir = models.path().display().to_string();
    let providers =
        conclave_providers::builtin_with_env(&|name| (name == "CONCLAVE_MODEL_DIR").then(|| dir.clone()), &[]);
    let api = api_from(None, providers, EngineConfig::default(), Arc::new(MemoryStore::new()));
    let (status, found, text) = api.send("POST", "/api/providers/local/probe", json!({})).await;
    assert_eq!(status, StatusCode::OK, "{text}");
    assert_eq!(found["provider"], "local", "{found}");
    assert_eq!(found["dialect"], "local", "the dialect is known without the model: {found}");
    assert_eq!(found["valid"], false, "without its model the provider cannot answer: {found}");
    let error = found["error"].as_str().unwrap_or_default();
    assert!(
        error.starts_with(&format!("local is not configured: the default local model is not installed in {dir}: ")),
        "the probe says what is missing: {error}"
    );
    assert!(found.get("rejected").is_none(), "no call was made, so nothing was rejected: {found}");
}

pub(crate) fn sse_events(text: &str) -> Vec<(u64, String)> {
    text.split("\n\n")
        .filter_map(|block| {
            let id = block.lines().find_map(|l| l.strip_prefix("id: "))?.parse().ok()?;
            let name = block.lines().find_map(|l| l.strip_prefix("event: "))?.to_string();
            Some((id, name))
        })
        .collect()
}

#[tokio::test]
async fn runs_start_stream_over_sse_and_resume() {
    let api = api_with(None);
    api.send("POST", "/api/conclaves", conclave("pair", "delay=50;text=hello")).await;
    let (status, started, _) = api.send("POST", "/api/runs", json!({"conclave_id": "pair", "input": {"x": 1}})).await;
    assert_eq!(status, StatusCode::ACCEPTED, "{started}");
    let id = started["run_id"].as_str().expect("run id").to_string();

    let (status, _, text) = api.get(&format!("/api/runs/{id}/events")).await;
    assert_eq!(status, StatusCode::OK);
    let events = sse_events(&text);
    assert_eq!(events.first().map(|e| e.1.as_str()), Some("run_started"));
    assert_eq!(events.last().map(|e| e.1.as_str()), Some("run_finished"), "{text}");
    let seqs: Vec<u64> = events.iter().map(|e| e.0).collect();
    assert_eq!(seqs, (1..=events.len() as u64).collect::<Vec<_>>());

    let (_, _, resumed) = api.call("GET", &format!("/api/runs/{id}/events"), None, &[("last-event-id", "3")]).await;
    let resumed = sse_events(&resumed);
    assert_eq!(resumed.first().map(|e| e.0), Some(4), "resumes after Last-Event-ID");
    assert_eq!(resumed.len(), events.len() - 3);

    let (status, run, _) = api.get(&format!("/api/runs/{id}")).await;
    assert_eq!((status, run["status"].as_str()), (StatusCode::OK, Some("succeeded")));
    let (_, runs, _) = api.get("/api/runs?limit=5").await;
    assert_eq!(runs[0]["id"], id.as_str());
    assert_eq!(api.send("POST", &format!("/api/runs/{id}/cancel"), json!({})).await.0, StatusCode::CONFLICT);
    assert_eq!(api.get(&format!("/api/runs/{id}/report")).await.0, StatusCode::NOT_FOUND, "plain runs have no report");
    for uri in ["/api/runs/nope", "/api/runs/nope/events", "/api/runs/nope/report"] {
        assert_eq!(api.get(uri).await.0, StatusCode::NOT_FOUND, "{uri}");
    }
    assert_eq!(api.send("POST", "/api/runs/nope/cancel", json!({})).await.0, StatusCode::NOT_FOUND);
    assert_eq!(api.send("POST", "/api/runs", json!({"conclave_id": "ghost"})).await.0, StatusCode::NOT_FOUND);
}

#[tokio::test]
async fn a_running_run_can_be_cancelled() {
    let api = api_with(None);
    api.send("POST", "/api/conclaves", conclave("slow", "delay=30000;text=never")).await;
    let (_, started, _) = api.send("POST", "/api/runs", json!({"conclave_id": "slow"})).await;
    let id = started["run_id"].as_str().expect("id").to_string();
    tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    let (status, body, _) = api.send("POST", &format!("/api/runs/{id}/cancel"), json!({})).await;
    assert_eq!(status, StatusCode::ACCEPTED, "{body}");
    let (_, _, text) = api.get(&format!("/api/runs/{id}/events")).await;
    assert!(text.contains("\"status\":\"cancelled\""), "{text}");
}

#[tokio::test]
async fn a_token_is_required_when_configured() {
    let api = api_with(Some("s3cret-token"));
    assert_eq!(api.get("/api/conclaves").await.0, StatusCode::UNAUTHORIZED);
    assert_eq!(
        api.call("GET", "/api/conclaves", None, &[("authorization", "Bearer wrong")]).await.0,
        StatusCode::UNAUTHORIZED
    );
    let (status, body, _) = api.call("GET", "/api/conclaves", None, &[("authorization", "Bearer s3cret-token")]).await;
    assert_eq!((status, body), (StatusCode::OK, json!([])));
    let (status, _, _) = api.get("/api/conclaves?token=s3cret-token").await;
    assert_eq!(status, StatusCode::OK, "EventSource clients pass the token as a query parameter");
    let (status, _, page) = api.get("/").await;
    assert_eq!(status, StatusCode::OK, "the editor page itself is public; its API calls carry the token");
    // The editor built into this binary, or the page saying how to get it.
    assert!(page.contains("/boot.js") || page.contains("scripts/build-editor.sh"), "{page}");
}

#[tokio::test]
async fn a_token_in_the_query_compares_as_it_decodes() {
    let api = api_with(Some("a+b c/d"));
    for (query, status) in [
        ("token=a%2Bb+c%2Fd", StatusCode::OK),
        ("token=a%2Bb%20c/d", StatusCode::OK),
        ("other=1&token=a%2Bb+c%2Fd", StatusCode::OK),
        // `+` is a space once decoded, so the token's own `+` must be written `%2B`.
        ("token=a+b+c/d", StatusCode::UNAUTHORIZED),
        ("token=a%2Bb%2Bc%2Fd", StatusCode::UNAUTHORIZED),
        ("token=a%2Bb+c%2Fdx", StatusCode::UNAUTHORIZED),
    ] {
        let (got, _, text) = api.get(&format!("/api/conclaves?{query}")).await;
        assert_eq!(got, status, "{query}: {text}");
    }
}

#[tokio::test]
async fn a_binary_without_the_editor_says_how_to_get_it() {
    let api = api_with(Some("t"));
    let mut state = api.state.clone();
    state.editor = EditorSource::Missing;
    let request = Request::get("/").header("host", "127.0.0.1:7700").body(Body::empty()).expect("request");
    let response = app(state).oneshot(request).await.expect("response");
    assert_eq!(response.status(), StatusCode::OK);
    let bytes = axum::body::to_bytes(response.into_body(), 1 << 20).await.expect("body");
    let page = String::from_utf8_lossy(&bytes);
    assert!(page.contains("bash scripts/build-editor.sh"), "{page}");
    assert!(page.contains("cargo install --locked --path server"), "{page}");
    assert!(page.contains("/api/openapi.json"), "the API still runs: {page}");
}

#[test]
fn serving_the_editor_from_a_directory_without_one_is_exit_2() {
    let empty = tempfile::tempdir().expect("tempdir");
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_conclave"))
        .args(["serve", "--bind", "127.0.0.1:0", "--editor-dir"])
        .arg(empty.path())
        .env_remove("CONCLAVE_EDITOR_DIR")
        .output()
        .expect("conclave runs");
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("holds no built editor (no index.html)")
            && stderr.contains("leave --editor-dir out to serve the editor built into conclave"),
        "{stderr}"
    );
}
