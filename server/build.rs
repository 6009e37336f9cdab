//! Rebuilds conclave when the built editor in `client/dist` changes, so the editor
//! built into the binary (see `src/api/editor.rs`) is always the one
//! `scripts/build-editor.sh` made last.

fn main() {
    let dist = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../client/dist");
    // Cargo scans a watched directory for any change. Before the editor is built,
    // watch its parent instead, so that building it is noticed too.
    let watched = if dist.is_dir() { dist.clone() } else { dist.parent().map_or(dist.clone(), |p| p.to_path_buf()) };
    println!("cargo:rerun-if-changed={}", watched.display());
}
