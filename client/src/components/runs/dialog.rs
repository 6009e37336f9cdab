//! The dialog that starts a run. For a conclave that reviews code it asks what
//! `conclave review` does: the repository, what to review (the working tree against
//! HEAD, the change against a base ref, or only what is new since the branch's last
//! review, `since: "auto"`), which analyzer lanes run (the conclave's lanes, ticked as
//! they are by default) and whether cached outputs are used (`no_cache`). Otherwise it
//! asks for the run's input.

use conclave_shared::Conclave;
use conclave_shared::api::{ReviewTarget, StartRun};
use leptos::prelude::*;

use crate::edit::watch::start_and_watch;
use crate::on_demand::on_demand;
use crate::state::Editor;

/// What a review covers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Scope {
    /// The working tree against HEAD.
    WorkingTree,
    /// `BASE...HEAD`.
    Base,
    /// Only the commits since the branch's last review.
    Since,
}

/// An analyzer lane offered in the dialog: its node id (its name in a selection), its
/// label, and whether it is ticked.
#[derive(Debug, Clone, PartialEq)]
struct Lane {
    id: String,
    label: String,
    ticked: bool,
}

/// The dialog's fields.
#[derive(Debug, Clone, Copy)]
struct RunFields {
    repository: RwSignal<String>,
    scope: RwSignal<Scope>,
    base: RwSignal<String>,
    lanes: RwSignal<Vec<Lane>>,
    /// Whether a lane was ticked or unticked: until then the server's defaults apply
    /// (which also leave out lanes whose program is not installed).
    lanes_changed: RwSignal<bool>,
    use_cache: RwSignal<bool>,
    input: RwSignal<String>,
}

/// The analyzer lanes of `conclave`, ticked as they run by default.
fn lanes_of(conclave: &Conclave) -> Vec<Lane> {
    conclave
        .nodes
        .iter()
        .filter_map(|n| {
            let analyzer = n.command.as_ref()?.analyzer.as_ref()?;
            let label = if n.label.is_empty() { n.id.clone() } else { n.label.clone() };
            Some(Lane { id: n.id.clone(), label, ticked: analyzer.default })
        })
        .collect()
}

/// The review the fields ask for, or what is missing.
fn review_target(fields: RunFields) -> Result<ReviewTarget, &'static str> {
    let base = fields.base.get_untracked().trim().to_string();
    let scope = fields.scope.get_untracked();
    if scope == Scope::Base && base.is_empty() {
        return Err("Give the base ref to review against (a branch, tag or commit).");
    }
    let analyzers = fields.lanes_changed.get_untracked().then(|| {
        fields.lanes.with_untracked(|lanes| lanes.iter().filter(|l| l.ticked).map(|l| l.id.clone()).collect())
    });
    Ok(ReviewTarget {
        repository: fields.repository.get_untracked(),
        base: (scope != Scope::WorkingTree && !base.is_empty()).then_some(base),
        since: (scope == Scope::Since).then(|| "auto".to_string()),
        analyzers,
        no_cache: !fields.use_cache.get_untracked(),
        ..ReviewTarget::default()
    })
}

/// What the dialog's fields ask for, as the body that starts the run.
fn start_request(editor: Editor, conclave_id: String, fields: RunFields) -> Result<StartRun, &'static str> {
    if untrack(|| editor.reviews_code()) {
        let review = review_target(fields)?;
        Ok(StartRun { conclave_id, review: Some(review), ..StartRun::default() })
    } else {
        // Text that is not JSON is the input as a string, so a plain question works.
        let text = fields.input.get_untracked();
        let input = serde_json::from_str(&text).unwrap_or(serde_json::Value::String(text));
        Ok(StartRun { conclave_id, input: Some(input), ..StartRun::default() })
    }
}

/// The dialog that starts a run: fetched when it first opens, then kept, so what was
/// typed in it is there again for the next run.
#[component]
pub fn RunDialog() -> impl IntoView {
    let editor = expect_context::<Editor>();
    let opened = Memo::new(move |was: Option<&bool>| was.copied().unwrap_or(false) || editor.run_dialog.get());
    on_demand(move || opened.get().then_some(()), move |()| Suspend::new(split::run_dialog(editor)))
}

/// The dialog, split out of the editor's first download (`scripts/build-editor.sh`
/// runs `wasm_split_cli`).
#[allow(unsafe_code)] // `#[lazy]` declares the split module's loader in an `unsafe extern` block.
mod split {
    use leptos::prelude::*;

    use crate::state::Editor;

    /// The dialog, shown while `editor.run_dialog` is set.
    #[leptos::lazy]
    pub fn run_dialog(editor: Editor) -> AnyView {
        super::dialog(editor).into_any()
    }
}

/// The dialog's fields and buttons, shown while `editor.run_dialog` is set.
fn dialog(editor: Editor) -> impl IntoView + use<> {
    let fields = RunFields {
        repository: RwSignal::new(".".to_string()),
        scope: RwSignal::new(Scope::WorkingTree),
        base: RwSignal::new(String::new()),
        lanes: RwSignal::new(Vec::new()),
        lanes_changed: RwSignal::new(false),
        use_cache: RwSignal::new(true),
        input: RwSignal::new(String::new()),
    };
    // Each opening offers the open conclave's lanes as they are by default.
    Effect::new(move |_| {
        if editor.run_dialog.get() {
            let lanes = editor.conclave.with_untracked(|c| c.as_ref().map(lanes_of).unwrap_or_default());
            fields.lanes.set(lanes);
            fields.lanes_changed.set(false);
        }
    });
    let start = move || {
        let Some(id) = editor.conclave.with_untracked(|c| c.as_ref().map(|c| c.id.clone())) else { return };
        match start_request(editor, id, fields) {
            Ok(request) => {
                editor.run_dialog.set(false);
                start_and_watch(editor, request);
            }
            Err(problem) => editor.say(problem, true),
        }
    };
    move || {
        editor.run_dialog.get().then(|| {
            view! {
                <div class="modal-back">
                    <div class="modal" data-testid="run-dialog">
                        <h3>"Run"</h3>
                        {if editor.reviews_code() { review_fields(fields) } else { input_field(fields) }}
                        <div class="modal-actions">
                            <button on:click=move |_| editor.run_dialog.set(false)>"Cancel"</button>
                            <button class="accent" data-testid="run-start" on:click=move |_| start()>"Start"</button>
                        </div>
                    </div>
                </div>
            }
        })
    }
}

/// The run input, for a conclave that does not review code.
fn input_field(fields: RunFields) -> AnyView {
    let input = fields.input;
    view! {
        <label>"Input (JSON or text)" <textarea data-testid="run-input" rows="6" prop:value=move || input.get() on:input=move |ev| input.set(event_target_value(&ev))></textarea></label>
    }
    .into_any()
}

/// What a review asks: the repository, what to review, the lanes and the cache.
fn review_fields(fields: RunFields) -> AnyView {
    let RunFields { repository, scope, base, use_cache, .. } = fields;
    let choice = move |value: Scope, id: &'static str, text: &'static str| {
        view! {
            <label class="choice">
                <input type="radio" name="run-scope" data-testid=id prop:checked=move || scope.get() == value
                    on:change=move |_| scope.set(value)/>
                {text}
            </label>
        }
    };
    view! {
        <label>"Repository" <input data-testid="run-repository" prop:value=move || repository.get() on:input=move |ev| repository.set(event_target_value(&ev)) /></label>
        <fieldset class="run-scope" data-testid="run-scope">
            <legend>"Review"</legend>
            {choice(Scope::WorkingTree, "run-scope-worktree", "the working tree against HEAD")}
            {choice(Scope::Base, "run-scope-base", "the change against a base ref")}
            {choice(Scope::Since, "run-scope-since", "only what is new since the branch's last review")}
        </fieldset>
        <Show when=move || scope.get() != Scope::WorkingTree>
            <label>{move || if scope.get() == Scope::Base { "Base ref" } else { "Base ref (optional: where the branch started)" }}
                <input data-testid="run-base" placeholder="main" prop:value=move || base.get() on:input=move |ev| base.set(event_target_value(&ev)) />
            </label>
        </Show>
        {lane_boxes(fields)}
        <label class="choice">
            <input type="checkbox" data-testid="run-cache" prop:checked=move || use_cache.get()
                on:change=move |ev| use_cache.set(event_target_checked(&ev))/>
            "Use cached outputs (untick to run every cached node again)"
        </label>
    }
    .into_any()
}

/// A box per analyzer lane of the conclave, when it has any.
fn lane_boxes(fields: RunFields) -> impl IntoView {
    let RunFields { lanes, lanes_changed, .. } = fields;
    let tick = move |id: String, ticked: bool| {
        lanes.update(|lanes| lanes.iter_mut().filter(|l| l.id == id).for_each(|l| l.ticked = ticked));
        lanes_changed.set(true);
    };
    move || {
        let shown = lanes.get();
        (!shown.is_empty()).then(|| view! {
            <fieldset class="run-lanes" data-testid="run-lanes">
                <legend>"Analyzers"</legend>
                {shown.into_iter().map(|lane| {
                    let id = lane.id.clone();
                    view! {
                        <label class="choice">
                            <input type="checkbox" data-testid="run-lane" data-lane=lane.id.clone() prop:checked=lane.ticked
                                on:change=move |ev| tick(id.clone(), event_target_checked(&ev))/>
                            {lane.label}
                        </label>
                    }
                }).collect_view()}
            </fieldset>
        })
    }
}
