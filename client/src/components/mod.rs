//! The parts of the editor's screen. They show the state and call the actions of
//! `edit/`, and import only what is beneath them: `edit/`, `state.rs`, `api.rs`,
//! `run_view.rs`, `loaded.rs`, `on_demand.rs` and the components they render.

pub mod agent_tools;
pub mod app;
pub mod builder;
pub mod canvas;
pub mod evals;
pub mod field_row;
pub mod inspector;
pub mod kind_forms;
pub mod lowering_preview;
pub mod mcp_form;
pub mod mcp_palette;
pub mod minimap;
pub mod node_card;
pub mod raw_schema;
pub mod runs;
pub mod save_conflict;
pub mod settings;
pub mod settings_form;
pub mod sidebar;
