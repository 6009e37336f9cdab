//! Keeps the relocations in the editor's wasm module (`--emit-relocs`), which
//! `wasm_split_cli` (run by `scripts/build-editor.sh`) reads to split the panels
//! marked `#[lazy]` out into modules of their own, fetched when first used. Only the
//! final link changes, so the dependencies are not built again for it.

fn main() {
    if std::env::var("CARGO_CFG_TARGET_ARCH").is_ok_and(|arch| arch == "wasm32") {
        println!("cargo:rustc-link-arg-bins=--emit-relocs");
    }
}
