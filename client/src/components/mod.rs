//! The parts of the editor's screen.

pub mod app;
pub mod arrange;
pub mod builder;
pub mod builder_state;
pub mod canvas;
pub mod clipboard;
pub mod field_row;
pub mod inspector;
pub mod keyboard;
pub mod lowering_preview;
pub mod minimap;
pub mod naming;
pub mod node_card;
pub mod pointer;
pub mod raw_schema;
pub mod runs;
pub mod sidebar;
