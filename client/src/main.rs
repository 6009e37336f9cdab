//! Entry point of the Conclave editor: mounts the app in the browser.
//!
//! The editor is filled in by the editor work; for now the crate proves the wasm32
//! build and mounts a single root component.

#[cfg(target_arch = "wasm32")]
fn main() {
    leptos::mount::mount_to_body(conclave_client::App);
}

#[cfg(not(target_arch = "wasm32"))]
fn main() {
    eprintln!("conclave-client is a browser app: build it for wasm32-unknown-unknown");
}
