//! The open conclave's file on the server: opening it with its ETag, saving it over
//! exactly the version it opened (refused while a field builder holds input that is
//! not in the conclave), what to do when the file changed on disk meanwhile (reload
//! it, or overwrite it), and validating it, which is how the editor learns whether
//! a conclave reviews code.

use conclave_shared::api::Validation;
use leptos::prelude::*;
use leptos::task::spawn_local;

use super::fields::unsaved_problem;
use crate::api;
use crate::state::{Editor, commit_pending_input};

/// Opens conclave `id` as the server has it on disk, forgetting unsaved changes, and
/// keeps its file's ETag for the next save.
pub fn open_conclave(editor: Editor, id: String) {
    spawn_local(async move {
        match api::get_conclave(&id).await {
            Ok(stored) => {
                editor.open(stored.conclave, true);
                editor.etag.set_value(stored.etag);
            }
            Err(e) => editor.say(e.message, true),
        }
    });
}

/// After a save was refused because the file changed on disk: opens the file as it
/// is now, dropping the changes made here (the user chose to).
pub fn reload_from_disk(editor: Editor) {
    if let Some(id) = editor.conclave.with_untracked(|c| c.as_ref().map(|c| c.id.clone())) {
        open_conclave(editor, id);
    }
}

/// Saves the open conclave over the version the editor last read or wrote: when the
/// file changed on disk since, nothing is written and the conflict is shown (see
/// [`Editor::conflict`]), with the unsaved changes kept. On 422 the diagnostics are
/// shown. The focused field is blurred first, so an edit it commits on `change` is
/// part of what is saved. A field builder row that cannot be saved yet (a duplicate
/// or empty name, a refused bound) stops the save with a message naming it, so
/// nothing the author typed is dropped.
pub fn save(editor: Editor) {
    write(editor, false);
}

/// After a save was refused because the file changed on disk: saves the open
/// conclave over whatever the file is now (the user chose to).
pub fn overwrite(editor: Editor) {
    write(editor, true);
}

fn write(editor: Editor, overwrite: bool) {
    commit_pending_input();
    if let Some(problem) = unsaved_problem() {
        editor.say(format!("Not saved: {problem}"), true);
        return;
    }
    let Some(conclave) = editor.conclave.get_untracked() else { return };
    let exists = editor.stored.get_untracked();
    let if_match = if overwrite { None } else { editor.etag.get_value() };
    spawn_local(async move {
        match api::save_conclave(&conclave, exists, if_match.as_deref()).await {
            Ok(stored) => {
                editor.etag.set_value(stored.etag);
                editor.conflict.set(false);
                editor.stored.set(true);
                editor.dirty.set(false);
                editor.diagnostics.set(Vec::new());
                editor.say(format!("Saved conclaves/{}.conclave.json", conclave.id), false);
                if let Ok(list) = api::list_conclaves().await {
                    editor.catalog.set(list);
                }
            }
            Err(e) if e.is_stale() => {
                editor.conflict.set(true);
                editor.say(format!("Not saved: {}", e.message), true);
            }
            Err(e) => {
                editor.diagnostics.set(e.diagnostics);
                editor.say(format!("Not saved: {}", e.message), true);
            }
        }
    });
}

/// Asks the server to validate the open conclave, keeps which agents review code
/// (the run dialog asks for a repository when any do), and hands the whole answer to
/// `then`. The Validate button and the run dialog both come through here, so the
/// editor never decides on its own whether a conclave reviews code.
pub fn validate(editor: Editor, then: impl FnOnce(Validation) + 'static) {
    let Some(conclave) = editor.conclave.get_untracked() else { return };
    spawn_local(async move {
        match api::validate(&conclave).await {
            Ok(validation) => {
                editor.findings_agents.set(validation.findings_agents.clone());
                then(validation);
            }
            Err(e) => editor.say(e.message, true),
        }
    });
}
