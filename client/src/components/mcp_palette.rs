//! The MCP part of the palette: for each server the open conclave declares, its tools
//! as the server lists them (`POST /api/mcp/tools`), each a capability to drop onto an
//! agent, with "all tools" of the server first; a line while they are listed, the
//! reason when they cannot be, and a control that lists them again.

use conclave_shared::McpServerConfig;
use conclave_shared::invisible::escape_invisible;
use conclave_shared::mcp::{McpToolRef, McpToolsRequest, is_name};
use leptos::prelude::*;

use crate::api;
use crate::loaded::loaded;
use crate::state::{Drag, Editor};

/// Every declared server's tools.
#[component]
pub fn McpPalette() -> impl IntoView {
    let editor = expect_context::<Editor>();
    let servers = Memo::new(move |_| {
        editor.conclave.with(|c| c.as_ref().map(|c| c.settings.mcp_servers.clone()).unwrap_or_default())
    });
    // Drawn again only when the servers change (the memo), which lists them again.
    move || {
        servers.get().into_iter().map(|(name, config)| view! { <ServerTools name=name config=config/> }).collect_view()
    }
}

/// One server's tools, listed when it appears, changes, or Refresh is pressed.
#[component]
fn ServerTools(name: String, config: McpServerConfig) -> impl IntoView {
    let problem = match is_name(&name) {
        true => config.problem().map(str::to_string),
        false => Some("its name is not a server name".to_string()),
    };
    let refreshed = RwSignal::new(0u32);
    let listing = RwSignal::new(false);
    let request = McpToolsRequest { name: name.clone(), server: config };
    let valid = problem.is_none();
    let tools = loaded(move || {
        refreshed.track();
        let request = request.clone();
        listing.set(valid);
        async move {
            let answer = if valid { Some(api::mcp_tools(&request).await) } else { None };
            listing.set(false);
            answer
        }
    });
    let all = McpToolRef { server: name.clone(), tool: "*".into() }.id();
    let (title, server) = (name.clone(), name.clone());
    view! {
        <div class="mcp-palette" data-testid="mcp-palette" data-server=name.clone()>
            <div class="mcp-palette-head">
                <span>{title}</span>
                <button class="link" data-testid="mcp-refresh" title="List the server's tools again"
                    disabled=move || listing.get() || !valid on:click=move |_| refreshed.update(|n| *n += 1)>"refresh"</button>
            </div>
            {problem.map(|p| view! { <p class="error-text" data-testid="mcp-tools-error">{format!("Not listed: {p}")}</p> })}
            {move || listing.get().then(|| view! { <p class="hint" data-testid="mcp-loading">"Listing tools…"</p> })}
            {move || match tools.get().flatten() {
                Some(Ok(found)) => {
                    let items = found.tools.into_iter().map(|t| {
                        let about = escape_invisible(&t.description).into_owned();
                        view! { <McpItem tool=t.id label=escape_invisible(&t.name).into_owned() about=about/> }
                    });
                    Some(view! {
                        <McpItem tool=all.clone() label=format!("All tools of {server}") about=String::new()/>
                        {items.collect_view()}
                    }.into_any())
                }
                Some(Err(e)) => Some(view! {
                    <p class="error-text" data-testid="mcp-tools-error">{format!("Cannot list the tools: {}", escape_invisible(&e.message))}</p>
                }.into_any()),
                None => None,
            }}
        </div>
    }
}

/// One MCP tool (or all of a server's) in the palette; pressing it starts a drag of
/// `tool:<id>`, which an agent takes into its `tools` (see [`Drag::Palette`]).
#[component]
fn McpItem(tool: String, label: String, about: String) -> impl IntoView {
    let editor = expect_context::<Editor>();
    let item = format!("tool:{tool}");
    view! {
        <div class="palette-item capability mcp-tool" data-testid="palette-tool-mcp" data-tool=tool title=about
            on:pointerdown=move |ev: web_sys::PointerEvent| {
                ev.prevent_default();
                editor.drag.set(Some(Drag::Palette { item: item.clone(), x: ev.client_x() as f64, y: ev.client_y() as f64 }));
            }>{label}</div>
    }
}
