//! The run-wide settings of the open conclave that people otherwise edit in its file:
//! the budget (`settings.budget`: the most a run may cost and the most tokens it may
//! use), the repository's rules files on or off (`settings.rules`), diff tightening
//! (`settings.diff_tightening`) and the prompt every agent reads first
//! (`settings.shared_prompt`). Each change is one undoable edit, saved with the
//! conclave; text commits on `change` as the inspector's does.

use conclave_shared::number::shortest;
use conclave_shared::{Budget, Settings};
use leptos::prelude::*;

use crate::edit::press::commit_on_change;
use crate::state::Editor;

/// The form.
#[component]
pub fn RunSettings() -> impl IntoView {
    let editor = expect_context::<Editor>();
    let settings =
        Memo::new(move |_| editor.conclave.with(|c| c.as_ref().map(|c| c.settings.clone()).unwrap_or_default()));
    let read = move |f: fn(&Settings) -> String| {
        move || editor.conclave.with_untracked(|c| c.as_ref().map(|c| f(&c.settings)))
    };
    let (cost_input, cost_change) = commit_on_change(read(cost_text), move |text| set_cost(editor, &text));
    let (tokens_input, tokens_change) = commit_on_change(read(tokens_text), move |text| set_tokens(editor, &text));
    let (prompt_input, prompt_change) = commit_on_change(read(prompt_text), move |text| {
        let prompt = (!text.trim().is_empty()).then_some(text);
        editor.edit(|c| c.settings.shared_prompt = prompt);
    });
    view! {
        <div class="run-settings" data-testid="run-settings">
            <h4>"Budget"</h4>
            <p class="hint">"The most one run may spend; a call that does not fit in what is left is not made. Empty: no limit."</p>
            <label>"Max cost (US dollars)"
                <input data-testid="settings-max-cost" inputmode="decimal" placeholder="no limit"
                    prop:value=move || settings.with(cost_text) on:input=cost_input on:change=cost_change/>
            </label>
            <label>"Max tokens"
                <input data-testid="settings-max-tokens" inputmode="numeric" placeholder="no limit"
                    prop:value=move || settings.with(tokens_text) on:input=tokens_input on:change=tokens_change/>
            </label>
            <h4>"Reviews"</h4>
            {switch(editor, settings, "settings-rules",
                "Give reviewers the repository's rules files (AGENTS.md, CLAUDE.md, REVIEW.md, .conclave/rules/)",
                |s| s.rules, |s, on| s.rules = on)}
            {switch(editor, settings, "settings-diff-tightening",
                "Diff tightening: findings may only name the files of the change",
                |s| s.diff_tightening, |s, on| s.diff_tightening = on)}
            <label>"Shared prompt (every agent reads it first)"
                <textarea data-testid="settings-shared-prompt" rows="4"
                    prop:value=move || settings.with(prompt_text) on:input=prompt_input on:change=prompt_change></textarea>
            </label>
        </div>
    }
}

/// A box for a setting that is on unless the file says `false`: ticking it leaves
/// the setting out of the file (its default), unticking it writes `false`.
fn switch(
    editor: Editor,
    settings: Memo<Settings>,
    id: &'static str,
    text: &'static str,
    read: fn(&Settings) -> Option<bool>,
    write: fn(&mut Settings, Option<bool>),
) -> impl IntoView {
    view! {
        <label class="choice">
            <input type="checkbox" data-testid=id prop:checked=move || settings.with(|s| read(s) != Some(false))
                on:change=move |ev| {
                    let on = event_target_checked(&ev);
                    editor.edit(|c| write(&mut c.settings, (!on).then_some(false)));
                }/>
            {text}
        </label>
    }
}

fn cost_text(settings: &Settings) -> String {
    settings.budget.and_then(|b| b.max_cost_usd).map(shortest).unwrap_or_default()
}

fn tokens_text(settings: &Settings) -> String {
    settings.budget.and_then(|b| b.max_tokens).map(|t| t.to_string()).unwrap_or_default()
}

fn prompt_text(settings: &Settings) -> String {
    settings.shared_prompt.clone().unwrap_or_default()
}

/// Changes the budget with `change`; a budget with no limit left is left out.
fn edit_budget(editor: Editor, change: impl FnOnce(&mut Budget)) {
    editor.edit(|c| {
        let mut budget = c.settings.budget.unwrap_or_default();
        change(&mut budget);
        c.settings.budget = (budget != Budget::default()).then_some(budget);
    });
}

fn set_cost(editor: Editor, text: &str) {
    let text = text.trim();
    match text.parse::<f64>() {
        _ if text.is_empty() => edit_budget(editor, |b| b.max_cost_usd = None),
        Ok(cost) if cost.is_finite() && cost >= 0.0 => edit_budget(editor, |b| b.max_cost_usd = Some(cost)),
        _ => editor.say(format!("Max cost: `{text}` is not an amount of US dollars (0 or more, like 2.50)"), true),
    }
}

fn set_tokens(editor: Editor, text: &str) {
    let text = text.trim();
    match text.parse::<u64>() {
        _ if text.is_empty() => edit_budget(editor, |b| b.max_tokens = None),
        Ok(tokens) if tokens >= 1 => edit_budget(editor, |b| b.max_tokens = Some(tokens)),
        _ => editor.say(format!("Max tokens: `{text}` is not a whole number of tokens (1 or more)"), true),
    }
}
