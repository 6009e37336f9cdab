//! What local model servers' odd answers are reported as: a `length` stop before the
//! model wrote anything is the prompt filling the context window (never "raise
//! `max_tokens`"), and an answer with nothing in it, as llama-cpp-python's server
//! sends when a second request interrupts a stream, is the server returning nothing
//! (never "the answer contains no JSON").

use conclave_testkit::wire::Vendor;
use conclave_testkit::{FakeServer, Reply};
use serde_json::{Value, json};

use crate::providers_http::{failure, run_on};

/// A Chat Completions stream of these chunks, ended by `[DONE]`.
fn chat_stream(chunks: &[Value]) -> Reply {
    let mut events: Vec<String> = chunks.iter().map(|c| format!("data: {c}\n\n")).collect();
    events.push("data: [DONE]\n\n".into());
    Reply::Stream { content_type: "text/event-stream", chunks: events }
}

/// The chunk that opens every answer: the role, and no content yet.
fn role() -> Value {
    json!({"id": "chatcmpl-1", "object": "chat.completion.chunk", "choices": [{"index": 0, "delta": {"role": "assistant"}, "finish_reason": null}]})
}

#[tokio::test]
async fn a_length_stop_before_any_token_says_the_prompt_filled_the_context() {
    let stop = json!({
        "choices": [{"index": 0, "delta": {}, "finish_reason": "length"}],
        "usage": {"prompt_tokens": 2040, "completion_tokens": 0, "total_tokens": 2040}
    });
    let server = FakeServer::start(vec![chat_stream(&[role(), stop])]).await;
    let ran = run_on(&server, Vendor::OpenAiChat, false).await;
    assert_eq!(
        failure(&ran),
        "node `reviewer` failed: the answer was cut off: finish_reason `length` before the model wrote anything: the \
         prompt (2040 tokens) filled the model's context window, so raising `max_tokens` will not help; send less (a \
         smaller change, fewer or shorter upstream outputs) or start the server with a larger context (llama.cpp's \
         `--ctx-size`, llama-cpp-python's `--n_ctx`, vLLM's `--max-model-len`)"
    );
    assert_eq!(ran.requests.len(), 1, "the same prompt would fill the window again: not retried");
}

#[tokio::test]
async fn a_length_stop_below_max_tokens_gives_the_size_of_the_context() {
    let piece = json!({"choices": [{"index": 0, "delta": {"content": "{\"verdict\": \"appr"}, "finish_reason": null}]});
    let stop = json!({
        "choices": [{"index": 0, "delta": {}, "finish_reason": "length"}],
        "usage": {"prompt_tokens": 2040, "completion_tokens": 8, "total_tokens": 2048}
    });
    let server = FakeServer::start(vec![chat_stream(&[role(), piece, stop])]).await;
    let ran = run_on(&server, Vendor::OpenAiChat, false).await;
    assert_eq!(
        failure(&ran),
        "node `reviewer` failed: the answer was cut off: finish_reason `length` after 8 tokens, below the agent's \
         `max_tokens` of 1024: the prompt (2040 tokens) and the answer filled the model's context window of 2048 \
         tokens; the JSON is incomplete; send less (a smaller change, fewer or shorter upstream outputs) or start the \
         server with a larger context (llama.cpp's `--ctx-size`, llama-cpp-python's `--n_ctx`, vLLM's \
         `--max-model-len`)"
    );
}

#[tokio::test]
async fn ollama_s_length_stop_before_any_token_says_the_prompt_filled_the_context() {
    let done = json!({
        "model": "test-model", "message": {"role": "assistant", "content": ""}, "done": true,
        "done_reason": "length", "prompt_eval_count": 4096, "eval_count": 0
    });
    let reply = Reply::Stream { content_type: "application/x-ndjson", chunks: vec![format!("{done}\n")] };
    let server = FakeServer::start(vec![reply]).await;
    let ran = run_on(&server, Vendor::Ollama, false).await;
    assert_eq!(
        failure(&ran),
        "node `reviewer` failed: the answer was cut off: done_reason `length` before the model wrote anything: the \
         prompt (4096 tokens) filled the model's context window, so raising `max_tokens` will not help; send less (a \
         smaller change, fewer or shorter upstream outputs) or give the model a larger `num_ctx` (in its Modelfile, \
         or OLLAMA_CONTEXT_LENGTH for the server)"
    );
}

#[tokio::test]
async fn an_interrupted_stream_with_nothing_in_it_says_the_server_returned_nothing() {
    // llama-cpp-python, when a second request arrives: the role chunk, then [DONE].
    let server = FakeServer::start(vec![chat_stream(&[role()])]).await;
    let ran = run_on(&server, Vendor::OpenAiChat, false).await;
    assert_eq!(
        failure(&ran),
        format!(
            "node `reviewer` failed: malformed response from the provider: the OpenAI-compatible server at {}/v1 \
             (model `test-model`): the server returned nothing: no text and no tool call (no finish_reason). \
             llama-cpp-python's server drops a streaming answer when another request arrives, unless it is started \
             with `--interrupt_requests False`; start it so, or send it one request at a time with \
             CONCLAVE_PROVIDER_LIMITS=openai=1",
            server.base
        )
    );
    assert!(!failure(&ran).contains("no JSON"), "{}", failure(&ran));
}

#[tokio::test]
async fn an_empty_answer_that_claims_to_have_finished_says_the_server_returned_nothing() {
    let stop = json!({"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]});
    let server = FakeServer::start(vec![chat_stream(&[role(), stop])]).await;
    let ran = run_on(&server, Vendor::OpenAiChat, false).await;
    let error = failure(&ran);
    assert!(
        error.contains(": the server returned nothing: no text and no tool call (finish_reason `stop`). "),
        "{error}"
    );
    assert!(error.ends_with("CONCLAVE_PROVIDER_LIMITS=openai=1"), "{error}");
}
