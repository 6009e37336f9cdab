//! The parts of the editor's screen.

pub mod app;
pub mod builder;
pub mod canvas;
pub mod inspector;
pub mod runs;
pub mod sidebar;
