//! Entry point of the Conclave editor: mounts the app in the browser.

#[cfg(target_arch = "wasm32")]
fn main() {
    leptos::mount::mount_to_body(conclave_client::App);
}

#[cfg(not(target_arch = "wasm32"))]
fn main() {
    eprintln!("conclave-client is a browser app: build it for wasm32-unknown-unknown (bash scripts/build-editor.sh)");
}
