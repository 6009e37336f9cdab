//! The Conclave editor, a Leptos client-side app compiled to wasm32.
//!
//! Layout: `api.rs` owns every call to the server; `state.rs` holds the shared editor
//! state (the open conclave with undo and redo, selection, viewport, drags);
//! `run_view.rs` the watched run; `loaded.rs` fetches that follow their inputs;
//! `on_demand.rs` draws the views split out of the first download (`#[lazy]`);
//! `edit/` the actions and the state components share; `components/` has one file
//! per part of the screen. Files import only what is beneath them: components from
//! `edit/`, `edit/` from `state.rs` and `api.rs`, never the other way.
//!
//! **Invariant:** components never fetch on their own; they call `api.rs`. Every
//! change to the conclave goes through `Editor::edit`, so it can be undone.

#[cfg(target_arch = "wasm32")]
mod api;
#[cfg(target_arch = "wasm32")]
mod components;
#[cfg(target_arch = "wasm32")]
mod edit;
#[cfg(target_arch = "wasm32")]
mod loaded;
#[cfg(target_arch = "wasm32")]
mod on_demand;
#[cfg(target_arch = "wasm32")]
mod run_view;
#[cfg(target_arch = "wasm32")]
mod state;

#[cfg(target_arch = "wasm32")]
pub use components::app::App;
