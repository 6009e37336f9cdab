//! What the editor does, beneath the components that show it: the actions (edits of
//! agents, field builder rows and MCP servers, saving, watching runs, pointer drags,
//! commits that wait for a press's release, keyboard shortcuts, clipboard,
//! auto-layout, fitting the graph to the view, naming) and the state they share (the field builder's rows, the
//! canvas's memos and geometry). Components import from here; nothing here imports a
//! component.

pub mod agent;
pub mod arrange;
pub mod canvas;
pub mod clipboard;
pub mod fields;
pub mod file;
pub mod fit;
pub mod keyboard;
pub mod mcp;
pub mod minimap;
pub mod naming;
pub mod pointer;
pub mod press;
pub mod watch;
