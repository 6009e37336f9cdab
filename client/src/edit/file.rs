//! The open conclave's file on the server: opening it, saving it (refused while a
//! field builder holds input that is not in the conclave) and validating it, which
//! is how the editor learns whether a conclave reviews code.

use conclave_shared::api::Validation;
use leptos::prelude::*;
use leptos::task::spawn_local;

use super::fields::unsaved_problem;
use crate::api;
use crate::state::{Editor, commit_pending_input};

/// Opens conclave `id` as the server has it on disk, forgetting unsaved changes.
pub fn open_conclave(editor: Editor, id: String) {
    spawn_local(async move {
        match api::get_conclave(&id).await {
            Ok(conclave) => editor.open(conclave, true),
            Err(e) => editor.say(e.message, true),
        }
    });
}

/// Saves the open conclave; on 422 the diagnostics are shown. The focused field is
/// blurred first, so an edit it commits on `change` is part of what is saved. A field
/// builder row that cannot be saved yet (a duplicate or empty name, a refused bound)
/// stops the save with a message naming it, so nothing the author typed is dropped.
pub fn save(editor: Editor) {
    commit_pending_input();
    if let Some(problem) = unsaved_problem() {
        editor.say(format!("Not saved: {problem}"), true);
        return;
    }
    let Some(conclave) = editor.conclave.get_untracked() else { return };
    let exists = editor.stored.get_untracked();
    spawn_local(async move {
        match api::save_conclave(&conclave, exists).await {
            Ok(_) => {
                editor.stored.set(true);
                editor.dirty.set(false);
                editor.diagnostics.set(Vec::new());
                editor.say(format!("Saved conclaves/{}.conclave.json", conclave.id), false);
                if let Ok(list) = api::list_conclaves().await {
                    editor.catalog.set(list);
                }
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
