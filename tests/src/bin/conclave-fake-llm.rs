//! A scripted stand-in for an OpenAI-compatible server (`POST /v1/chat/completions`,
//! streamed as Server-Sent Events), for trying Conclave's pipeline without an LLM
//! account. Every request with a JSON schema gets a minimal instance of that schema;
//! other requests get a short text. No model is consulted: the answers say so.
//!
//! Usage: `conclave-fake-llm [--port 7799]` (`--port 0` picks a free port), then point `OPENAI_BASE_URL` at
//! `http://127.0.0.1:7799/v1` and run with `--provider openai`.

use axum::Json;
use axum::body::Body;
use axum::http::Response;
use axum::routing::post;
use conclave_tests::fake_llm::{answer_for, chat_completion_stream};
use serde_json::Value;
use std::convert::Infallible;

#[tokio::main(flavor = "current_thread")]
async fn main() -> std::process::ExitCode {
    let args: Vec<String> = std::env::args().collect();
    let port = args.windows(2).find(|w| w[0] == "--port").and_then(|w| w[1].parse::<u16>().ok()).unwrap_or(7799);
    let app = axum::Router::new().route("/v1/chat/completions", post(complete));
    let listener = match tokio::net::TcpListener::bind(("127.0.0.1", port)).await {
        Ok(l) => l,
        Err(e) => {
            eprintln!("error: cannot listen on 127.0.0.1:{port}: {e}; pick another with --port");
            return std::process::ExitCode::from(2);
        }
    };
    let port = listener.local_addr().map_or(port, |a| a.port());
    eprintln!("fake LLM listening on http://127.0.0.1:{port}/v1 (scripted answers, no model)");
    match axum::serve(listener, app).await {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            std::process::ExitCode::FAILURE
        }
    }
}

async fn complete(Json(request): Json<Value>) -> Response<Body> {
    let text = answer_for(&request);
    let chunks = chat_completion_stream(&text);
    let stream = futures::stream::iter(chunks.into_iter().map(Ok::<_, Infallible>));
    Response::builder()
        .header("content-type", "text/event-stream")
        .body(Body::from_stream(stream))
        .unwrap_or_else(|_| Response::new(Body::empty()))
}
