//! The save conflict: shown when a save was refused because the conclave's file
//! changed on disk since the editor opened it (another tab, a text editor, git). The
//! unsaved changes stay in the editor until the user chooses: reload the file from
//! disk (dropping them) or overwrite the file with them.

use leptos::prelude::*;

use crate::edit::file::{overwrite, reload_from_disk};
use crate::edit::naming::file_of;
use crate::state::Editor;

/// The conflict bar under the toolbar, while there is a conflict.
#[component]
pub fn SaveConflict() -> impl IntoView {
    let editor = expect_context::<Editor>();
    let file = move || editor.conclave.with(|c| c.as_ref().map(|c| file_of(&c.id)).unwrap_or_default());
    move || {
        editor.conflict.get().then(|| view! {
            <div class="save-conflict" data-testid="save-conflict" role="alert">
                <span>{file}" changed on disk since you opened it, so your changes were not saved. They stay here until you choose: reload the file from disk (dropping them), or overwrite it with them."</span>
                <button data-testid="save-conflict-reload" on:click=move |_| reload_from_disk(editor)>"Reload from disk"</button>
                <button data-testid="save-conflict-overwrite" on:click=move |_| overwrite(editor)>"Overwrite with mine"</button>
            </div>
        })
    }
}
