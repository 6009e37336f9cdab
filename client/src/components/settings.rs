//! The Settings panel in the dock, opened from the toolbar: the open conclave's
//! run-wide settings. The budget, rules, diff tightening and shared prompt are in the
//! form of `settings_form.rs`; below it, the MCP servers its agents may call (each
//! with what is wrong with it, Edit and Remove), added or edited in the server form of
//! `mcp_form.rs`.

use conclave_shared::McpServerConfig;
use conclave_shared::mcp::is_name;
use leptos::prelude::*;

use super::mcp_form::ServerForm;
use super::settings_form::RunSettings;
use crate::edit::mcp::{Draft, remove_server};
use crate::on_demand::on_demand;
use crate::state::Editor;

/// The panel, while it is open and a conclave is; made again for another conclave,
/// so a form left open does not outlive the conclave it was opened in.
#[component]
pub fn SettingsPanel() -> impl IntoView {
    let editor = expect_context::<Editor>();
    let shown = Memo::new(move |_| {
        let open = editor.settings.get();
        editor.conclave.with(|c| c.as_ref().filter(|_| open).map(|c| c.id.clone()))
    });
    on_demand(move || shown.get(), move |_| Suspend::new(split::settings(editor)))
}

/// The panel's contents, split out of the editor's first download
/// (`scripts/build-editor.sh` runs `wasm_split_cli`): the browser fetches them when the
/// panel first opens.
#[allow(unsafe_code)] // `#[lazy]` declares the split module's loader in an `unsafe extern` block.
mod split {
    use leptos::prelude::*;

    use super::{McpServers, RunSettings};
    use crate::state::Editor;

    /// The run-wide settings and the MCP servers.
    #[leptos::lazy]
    pub fn settings(editor: Editor) -> AnyView {
        view! {
            <section class="settings-panel" data-testid="settings-form">
                <header>
                    <span>"Settings"</span>
                    <span class="spacer"></span>
                    <button class="link" on:click=move |_| editor.settings.set(false)>"close"</button>
                </header>
                <RunSettings/>
                <McpServers/>
            </section>
        }
        .into_any()
    }
}

/// The conclave's MCP servers and the form that adds or edits one.
#[component]
fn McpServers() -> impl IntoView {
    let editor = expect_context::<Editor>();
    let servers = Memo::new(move |_| {
        editor.conclave.with(|c| c.as_ref().map(|c| c.settings.mcp_servers.clone()).unwrap_or_default())
    });
    // The form's starting draft; set when it opens and cleared when it closes, so
    // typing in it redraws nothing here.
    let form = RwSignal::new(None::<Draft>);
    view! {
        <div class="mcp-servers" data-testid="mcp-servers">
            <h4>"MCP servers"</h4>
            <p class="hint">"Agents call a server's tools as mcp:SERVER/TOOL: drag them from the palette onto an agent."</p>
            {move || servers.with(|s| s.is_empty()).then(|| view! { <p class="hint">"No MCP servers yet."</p> })}
            {move || servers.get().into_iter().map(|(name, config)| view! { <ServerRow name=name config=config form=form/> }).collect_view()}
            {move || match form.get() {
                Some(draft) => view! { <ServerForm draft=draft form=form/> }.into_any(),
                None => view! {
                    <button data-testid="mcp-add" on:click=move |_| form.set(Some(Draft::default()))>"Add server"</button>
                }.into_any(),
            }}
        </div>
    }
}

/// One server: its name, how it is reached, what is wrong with it, Edit and Remove.
#[component]
fn ServerRow(name: String, config: McpServerConfig, form: RwSignal<Option<Draft>>) -> impl IntoView {
    let editor = expect_context::<Editor>();
    let reach = match (&config.url, config.command.is_empty()) {
        (Some(url), _) => format!("HTTP {url}"),
        (None, false) => format!("stdio: {}", config.command.join(" ")),
        (None, true) => "no transport".to_string(),
    };
    let network = config.sandbox.as_ref().is_some_and(|s| s.network);
    let problem = if is_name(&name) {
        config.problem().map(str::to_string)
    } else {
        Some(format!("`{name}`: a server's name is letters, digits, `-` and `_` (at most 64)"))
    };
    let draft = Draft::of(&name, &config);
    let removed = name.clone();
    view! {
        <div class="mcp-server" data-testid="mcp-server" data-server=name.clone()>
            <strong>{name.clone()}</strong>
            <code class="mcp-reach">{reach}</code>
            {network.then(|| view! { <span class="badge">"network"</span> })}
            <span class="spacer"></span>
            <button data-testid="mcp-edit" on:click=move |_| form.set(Some(draft.clone()))>"Edit"</button>
            <button data-testid="mcp-remove" title="Remove the server, and its tools from every agent"
                on:click=move |_| {
                    remove_server(editor, &removed);
                    editor.say(format!("Removed MCP server {removed}"), false);
                }>"Remove"</button>
            {problem.map(|p| view! { <p class="error-text" data-testid="mcp-server-error">{p}</p> })}
        </div>
    }
}
