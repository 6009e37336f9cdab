//! The parts of the editor's screen.

pub mod app;
pub mod builder;
pub mod builder_state;
pub mod canvas;
pub mod field_row;
pub mod inspector;
pub mod lowering_preview;
pub mod raw_schema;
pub mod runs;
pub mod sidebar;
