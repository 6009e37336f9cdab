//! The conclave's MCP servers (`settings.mcp_servers`) as the editor changes them: the
//! server form's draft, what is wrong with it (the name rule and the entry's own
//! transport problem), putting a server in or taking it out as one undoable edit
//! (agents' `mcp:` tool ids follow a rename or a removal), and how an `mcp:` tool id
//! is labelled on chips.

use conclave_shared::mcp::{McpServerConfig, McpToolRef, is_name};
use conclave_shared::{AgentConfig, Conclave};
use leptos::prelude::*;

use crate::state::Editor;

/// How a server is reached.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Transport {
    /// A program Conclave starts, speaking MCP on its standard input and output.
    #[default]
    Stdio,
    /// A Streamable HTTP endpoint.
    Http,
}

/// The server form as typed: every field is text until the entry is put in.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Draft {
    /// The server's name when the form opened; `None` for a new server.
    pub was: Option<String>,
    /// The server's name.
    pub name: String,
    /// Its transport.
    pub transport: Transport,
    /// A stdio server's program.
    pub program: String,
    /// A stdio server's arguments, one per line.
    pub args: String,
    /// An HTTP server's endpoint.
    pub url: String,
    /// An HTTP server's headers: the header's name and the environment variable that
    /// holds its value.
    pub headers: Vec<(String, String)>,
    /// Whether a stdio server's sandbox opens the network.
    pub network: bool,
    /// The entry as it was, so settings the form does not show (a sandbox's paths,
    /// variables and limits) are kept.
    base: McpServerConfig,
}

impl Draft {
    /// The form of an existing server.
    pub fn of(name: &str, config: &McpServerConfig) -> Draft {
        let mut command = config.command.iter();
        Draft {
            was: Some(name.to_string()),
            name: name.to_string(),
            transport: if config.url.is_some() { Transport::Http } else { Transport::Stdio },
            program: command.next().cloned().unwrap_or_default(),
            args: command.cloned().collect::<Vec<_>>().join("\n"),
            url: config.url.clone().unwrap_or_default(),
            headers: config.headers_from_env.iter().map(|(h, v)| (h.clone(), v.clone())).collect(),
            network: config.sandbox.as_ref().is_some_and(|s| s.network),
            base: config.clone(),
        }
    }

    /// The entry the form describes. Settings of the other transport are left out.
    pub fn config(&self) -> McpServerConfig {
        let mut config = self.base.clone();
        match self.transport {
            Transport::Stdio => {
                let args = self.args.lines().map(str::trim).filter(|a| !a.is_empty()).map(str::to_string);
                let program = self.program.trim();
                config.command = (!program.is_empty()).then(|| program.to_string()).into_iter().chain(args).collect();
                config.url = None;
                config.headers_from_env.clear();
                let mut sandbox = config.sandbox.take().unwrap_or_default();
                sandbox.network = self.network;
                config.sandbox = (sandbox != Default::default()).then_some(sandbox);
            }
            Transport::Http => {
                config.command.clear();
                let url = self.url.trim();
                config.url = Some(url.to_string()).filter(|_| !url.is_empty());
                config.headers_from_env = self
                    .headers
                    .iter()
                    .map(|(h, v)| (h.trim().to_string(), v.trim().to_string()))
                    .filter(|(h, v)| !h.is_empty() || !v.is_empty())
                    .collect();
                config.sandbox = None;
            }
        }
        config
    }

    /// What keeps the form from being put in: the name rule, a name another server
    /// has, a header without its name or variable, and the entry's own problem.
    pub fn problems(&self, servers: &[String]) -> Vec<String> {
        let name = self.name.trim();
        let mut problems = Vec::new();
        if name.is_empty() {
            problems.push("Name the server: agents call its tools as mcp:NAME/TOOL".to_string());
        } else if !is_name(name) {
            problems.push(format!("`{name}`: a server's name is letters, digits, `-` and `_` (at most 64)"));
        } else if self.was.as_deref() != Some(name) && servers.iter().any(|s| s == name) {
            problems.push(format!("`{name}` is already a server of this conclave"));
        }
        let half = |(h, v): &(String, String)| h.trim().is_empty() != v.trim().is_empty();
        if self.transport == Transport::Http && self.headers.iter().any(half) {
            problems.push("Each header needs its name and the environment variable that holds its value".into());
        }
        problems.extend(self.config().problem().map(str::to_string));
        problems
    }
}

/// Puts the drafted server into the open conclave as one undoable edit; a renamed
/// server's tools keep their agents. The problems when it cannot be put in.
pub fn put_server(editor: Editor, draft: &Draft) -> Result<(), Vec<String>> {
    let servers = server_names(editor);
    let problems = draft.problems(&servers);
    if !problems.is_empty() {
        return Err(problems);
    }
    let name = draft.name.trim().to_string();
    let config = draft.config();
    editor.edit(|c| {
        if let Some(was) = draft.was.as_deref().filter(|was| *was != name) {
            c.settings.mcp_servers.remove(was);
            retool(c, was, |tool| Some(McpToolRef { server: name.clone(), tool }.id()));
        }
        c.settings.mcp_servers.insert(name.clone(), config);
    });
    Ok(())
}

/// Takes server `name` out of the open conclave, and its tools out of every agent, as
/// one undoable edit.
pub fn remove_server(editor: Editor, name: &str) {
    editor.edit(|c| {
        c.settings.mcp_servers.remove(name);
        retool(c, name, |_| None);
    });
}

/// The open conclave's server names.
pub fn server_names(editor: Editor) -> Vec<String> {
    editor.conclave.with_untracked(|c| c.iter().flat_map(|c| c.settings.mcp_servers.keys().cloned()).collect())
}

/// Rewrites (or, on `None`, drops) every agent's tool ids of server `server`; `tool`
/// is the tool's name or `*`.
fn retool(conclave: &mut Conclave, server: &str, mut change: impl FnMut(String) -> Option<String>) {
    let agents = conclave.nodes.iter_mut().filter_map(|n| n.agent.as_mut());
    for agent in agents {
        let AgentConfig { tools, .. } = agent;
        *tools = std::mem::take(tools)
            .into_iter()
            .filter_map(|id| match McpToolRef::parse(&id) {
                Some(Ok(r)) if r.server == server => change(r.tool),
                _ => Some(id),
            })
            .collect();
    }
}

/// How a chip names an `mcp:` tool id (`docs · git_log`, `docs · all tools`); `None`
/// for other ids.
pub fn tool_label(id: &str) -> Option<String> {
    let r = McpToolRef::parse(id)?.ok()?;
    Some(if r.is_all() { format!("{} · all tools", r.server) } else { format!("{} · {}", r.server, r.tool) })
}
