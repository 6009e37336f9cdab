//! MCP tools in the engine, over fake servers: two agents listing a server's tool
//! share one connection for the run, which is stopped when the run ends (or is
//! cancelled with a call in flight); each call
//! is a `tool_call` and a `tool_result` named by the tool's id; an agent calling a
//! tool of the server it does not list is refused; and a cached agent's key follows
//! the tools its server lists.

use conclave_core::{Message, ProviderRegistry, ToolCall};
use conclave_doubles::{FakeProvider, FakeStep, FakeToolServers, MemoryStore};
use conclave_engine::{Engine, EngineConfig, RunOptions};
use conclave_shared::{AgentConfig, Conclave, Edge, EventKind, Node, NodeKind, RunStatus, Settings};
use conclave_testkit::checked;
use serde_json::json;
use std::collections::BTreeMap;
use std::sync::Arc;

fn call(id: &str, name: &str) -> FakeStep {
    FakeStep::Tools(vec![ToolCall { id: id.into(), name: name.into(), arguments: json!({"q": id}) }])
}

fn conclave() -> Conclave {
    let mut agent = AgentConfig::new("fake");
    agent.tools = vec!["mcp:docs/lookup".into()];
    let node = |id: &str, kind, agent| Node { agent, ..Node::new(id, kind) };
    let mut settings = Settings::default();
    let entry = serde_json::from_value(json!({"url": "http://docs.invalid/mcp"})).expect("an entry");
    settings.mcp_servers = BTreeMap::from([("docs".to_string(), entry)]);
    Conclave {
        version: 1,
        id: "t".into(),
        name: "t".into(),
        description: String::new(),
        settings,
        nodes: vec![
            node("input", NodeKind::Trigger, None),
            node("a", NodeKind::Agent, Some(agent.clone())),
            node("b", NodeKind::Agent, Some(agent)),
        ],
        edges: vec![
            Edge { from: "input".into(), to: "a".into(), case: None },
            Edge { from: "input".into(), to: "b".into(), case: None },
        ],
    }
}

fn tool_result(messages: &[Message]) -> Option<(String, bool)> {
    messages.iter().find_map(|m| match m {
        Message::ToolResult { content, is_error, .. } => Some((content.clone(), *is_error)),
        _ => None,
    })
}

#[tokio::test]
async fn agents_share_one_connection_per_run_and_unlisted_tools_are_refused() {
    let fake = Arc::new(FakeProvider::new("fake"));
    fake.script("a", [call("c1", "mcp__docs__lookup"), FakeStep::text("a done")]);
    fake.script("b", [call("c2", "mcp__docs__hidden"), FakeStep::text("b done")]);
    let servers = Arc::new(FakeToolServers::offering(&["lookup", "hidden"]));
    let mut providers = ProviderRegistry::default();
    providers.register(fake.clone());
    let providers = providers.with_tool_servers(servers.clone());
    let engine = Engine::new(providers, Arc::new(MemoryStore::new()), EngineConfig::default());
    let mut handle =
        engine.start(checked(conclave()), json!("x"), RunOptions::default()).await.expect("the run starts");
    let mut events = handle.take_events().expect("events");
    let outcome = handle.wait().await;
    assert_eq!(outcome.status, RunStatus::Succeeded, "{:?}", outcome.error);
    assert_eq!((servers.connected(), servers.stopped()), (1, 1), "one connection for the run, stopped with it");

    let offered: Vec<String> = fake.calls_for("a")[0].tools.iter().map(|t| t.name.clone()).collect();
    assert_eq!(offered, ["mcp__docs__lookup"], "only the listed tool is offered");
    let answered = tool_result(&fake.calls_for("a")[1].messages);
    assert_eq!(answered, Some((r#"lookup({"q":"c1"})"#.to_string(), false)));
    let refused = tool_result(&fake.calls_for("b")[1].messages);
    assert_eq!(refused, Some(("`mcp__docs__hidden` is not one of your tools".to_string(), true)));

    let mut seen = Vec::new();
    while let Ok(event) = events.try_recv() {
        match &event.kind {
            EventKind::ToolCall { node_id, tool, .. } => seen.push(format!("call {node_id} {tool}")),
            EventKind::ToolResult { node_id, tool, is_error, .. } => {
                seen.push(format!("result {node_id} {tool} {is_error}"))
            }
            _ => {}
        }
    }
    seen.sort();
    assert_eq!(
        seen,
        [
            "call a mcp:docs/lookup",
            "call b mcp__docs__hidden",
            "result a mcp:docs/lookup false",
            "result b mcp__docs__hidden true"
        ]
    );
}

#[tokio::test]
async fn a_cached_agents_key_follows_the_tools_its_server_lists() {
    let store = Arc::new(MemoryStore::new());
    let mut file = conclave();
    file.nodes.retain(|n| n.id != "b");
    file.edges.retain(|e| e.to != "b");
    let agent = file.nodes[1].agent.as_mut().expect("agent");
    agent.tools = vec!["mcp:docs/*".into()];
    agent.cache = Some(conclave_shared::CacheSetting::On(true));
    let run = |tools: &'static [&'static str]| {
        let (store, file) = (store.clone(), file.clone());
        async move {
            let fake = Arc::new(FakeProvider::new("fake"));
            fake.script("a", [FakeStep::text("answer")]);
            let mut providers = ProviderRegistry::default();
            providers.register(fake.clone());
            let providers = providers.with_tool_servers(Arc::new(FakeToolServers::offering(tools)));
            let engine = Engine::new(providers, store, EngineConfig::default());
            let handle = engine.start(checked(file), json!("x"), RunOptions::default()).await.expect("starts");
            assert_eq!(handle.wait().await.status, RunStatus::Succeeded);
            fake.calls().len()
        }
    };
    assert_eq!(run(&["lookup"]).await, 1, "the first run calls the model");
    assert_eq!(run(&["lookup"]).await, 0, "the same tools: a hit");
    assert_eq!(run(&["lookup", "search"]).await, 1, "the server lists another tool: a miss");
}

#[tokio::test]
async fn a_cancelled_run_stops_its_servers_with_a_call_in_flight() {
    let fake = Arc::new(FakeProvider::new("fake"));
    fake.script("a", [call("c1", "mcp__docs__lookup"), FakeStep::text("never")]);
    fake.script("b", [FakeStep::text("b done")]);
    let servers = Arc::new(FakeToolServers::offering(&["lookup"]).answering_after(std::time::Duration::from_secs(60)));
    let mut providers = ProviderRegistry::default();
    providers.register(fake.clone());
    let providers = providers.with_tool_servers(servers.clone());
    let engine = Engine::new(providers, Arc::new(MemoryStore::new()), EngineConfig::default());
    let handle = engine.start(checked(conclave()), json!("x"), RunOptions::default()).await.expect("the run starts");
    while servers.connected() == 0 {
        tokio::time::sleep(std::time::Duration::from_millis(5)).await;
    }
    tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    handle.cancel();
    let outcome = tokio::time::timeout(std::time::Duration::from_secs(10), handle.wait()).await.expect("ends at once");
    assert_eq!(outcome.status, RunStatus::Cancelled);
    assert_eq!(servers.stopped(), 1, "the server was stopped with the cancelled run");
}
