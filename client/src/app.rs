//! The root component of the editor.

use leptos::prelude::*;

/// The editor's root: for now a title bar; the canvas, palette and inspector follow.
#[component]
pub fn App() -> impl IntoView {
    view! {
        <header class="titlebar">
            <h1>"Conclave"</h1>
        </header>
    }
}
