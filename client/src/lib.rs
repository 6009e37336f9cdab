//! The Conclave editor, a Leptos client-side app compiled to wasm32.

#[cfg(target_arch = "wasm32")]
mod app;

#[cfg(target_arch = "wasm32")]
pub use app::App;
