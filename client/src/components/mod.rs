//! The parts of the editor's screen.

pub mod app;
pub mod arrange;
pub mod builder;
pub mod canvas;
pub mod clipboard;
pub mod inspector;
pub mod keyboard;
pub mod minimap;
pub mod naming;
pub mod node_card;
pub mod pointer;
pub mod runs;
pub mod sidebar;
