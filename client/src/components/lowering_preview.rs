//! The lowering preview: what every provider dialect receives for an agent's schema,
//! side by side (native structured output or the prompt contract, how many changes
//! lose meaning, each change with its JSON pointer, and the request part itself), with
//! the agent's own provider marked. It follows the agent's schema, so each commit of
//! the field builder refreshes it.

use conclave_shared::api::{DialectPreview, LowerRequest, PreviewRequest};
use leptos::prelude::*;
use std::collections::BTreeSet;

use crate::api;
use crate::edit::agent::{agent_schema, agent_value, same_schema};
use crate::loaded::loaded;
use crate::state::Editor;

/// The preview for agent `id`. It sits in the inspector, one dialect under another;
/// "Side by side" spreads the dialects in columns over the canvas while the inspector
/// stays usable beside them.
#[component]
pub fn LoweringPreview(id: String) -> impl IntoView {
    let editor = expect_context::<Editor>();
    // An inline schema wins over a reference, as it does when the agent runs.
    let schema = agent_schema(editor, &id);
    let reference = agent_value(editor, &id, |a| a.output_schema_ref.clone());
    let request = Memo::new_with_compare(
        move |_| {
            reference.get().map(|reference| {
                let schema = schema.get();
                PreviewRequest { schema_ref: if schema.is_none() { reference } else { None }, schema }
            })
        },
        |before, now| {
            let same = |a: &PreviewRequest, b: &PreviewRequest| {
                a.schema_ref == b.schema_ref && same_schema(&a.schema, &b.schema)
            };
            !matches!((before, now), (Some(Some(a)), Some(Some(b))) if same(a, b))
                && !matches!((before, now), (Some(None), Some(None)))
        },
    );
    let provider = agent_value(editor, &id, |a| a.provider.clone());
    let previews = loaded(move || {
        let request = request.get();
        async move {
            match request {
                Some(r) if r.schema.is_some() || r.schema_ref.is_some() => {
                    Some(api::lower_preview(&r).await.map_err(|e| e.message))
                }
                _ => None,
            }
        }
    });
    // What the agent's own provider gets, decided by the server also for providers
    // that speak none of the dialects below (a custom or test provider).
    let own = loaded(move || {
        let (request, provider) = (request.get(), provider.get());
        async move {
            let (Some(r), Some(provider)) = (request, provider) else { return None };
            let request = LowerRequest { schema: r.schema, schema_ref: r.schema_ref, provider: provider.clone() };
            if request.schema.is_none() && request.schema_ref.is_none() {
                return None;
            }
            Some(match api::lower(&request).await {
                Ok(l) if l.native => {
                    format!("This agent's provider `{provider}` gets native structured output ({}).", l.target)
                }
                Ok(_) => format!("This agent's provider `{provider}` gets the prompt contract."),
                Err(e) => format!("This agent's provider `{provider}`: {}", e.message),
            })
        }
    });
    let wide = RwSignal::new(false);
    // Which request views are open, by dialect, so a refresh does not fold them.
    let open = RwSignal::new(BTreeSet::<String>::new());
    let body = move || match previews.get() {
        None => view! { <p class="hint">"Lowering…"</p> }.into_any(),
        Some(None) => ().into_any(),
        Some(Some(Err(e))) => view! { <p class="error-text">{format!("No preview: {e}")}</p> }.into_any(),
        Some(Some(Ok(list))) => view! {
            <div class="dialects">
                {list.into_iter().map(|d| view! { <Dialect preview=d provider=provider open=open/> }).collect_view()}
            </div>
        }
        .into_any(),
    };
    view! {
        <div class="lowering" class:wide=wide data-testid="lowering-preview">
            <div class="lowering-head">
                <h4>"Lowering preview"</h4>
                <button class="link" data-testid="preview-wide" aria-pressed=move || wide.get().to_string()
                    on:click=move |_| wide.update(|w| *w = !*w)>
                    {move || if wide.get() { "Close side by side" } else { "Side by side" }}
                </button>
            </div>
            <p class="hint">"What each provider's API receives for this schema, and every change made on the way."</p>
            {move || own.get().flatten().map(|line| view! { <p class="own-line" data-testid="own-provider">{line}</p> })}
            {body}
        </div>
    }
}

/// One dialect's column.
#[component]
fn Dialect(preview: DialectPreview, provider: Memo<Option<String>>, open: RwSignal<BTreeSet<String>>) -> impl IntoView {
    let DialectPreview { dialect, provider: speaker, native, request, notes, meaning_losses } = preview;
    let own = {
        let speaker = speaker.clone();
        Memo::new(move |_| provider.get().as_deref() == Some(speaker.as_str()))
    };
    let mode = if native { "native structured output" } else { "prompt contract" };
    let losses = losses_line(meaning_losses, notes.len());
    let name = dialect.clone();
    let is_open = move || open.with(|o| o.contains(&name));
    let toggled = {
        let name = dialect.clone();
        move |ev: web_sys::Event| {
            let now = event_target::<web_sys::Element>(&ev).has_attribute("open");
            open.update(|o| {
                if now {
                    o.insert(name.clone())
                } else {
                    o.remove(&name)
                };
            });
        }
    };
    let notes_view = if notes.is_empty() {
        view! { <p class="hint">"Nothing is dropped or changed."</p> }.into_any()
    } else {
        view! {
            <ul class="notes">
                {notes.into_iter().map(|n| {
                    let path = if n.path.is_empty() { "/".to_string() } else { n.path };
                    view! {
                        <li class=format!("note {}", n.kind.as_str()) class:loses=n.kind.loses_meaning() data-testid="dialect-note" data-kind=n.kind.as_str()>
                            <span class="kind">{n.kind.as_str()}</span>" "<code>{path}</code>" "{n.message}
                        </li>
                    }
                }).collect_view()}
            </ul>
        }
        .into_any()
    };
    view! {
        <section class="dialect" class:own=own data-testid="dialect" data-dialect=dialect.clone()>
            <header>
                <strong>{dialect.clone()}</strong>
                <span class="speaker">{speaker}</span>
                {move || own.get().then(|| view! { <span class="badge own" data-testid="dialect-own">"this agent's provider"</span> })}
            </header>
            <p class="mode" class:native=native>{mode}</p>
            <p class="losses" class:some={meaning_losses > 0} data-testid="dialect-losses">{losses}</p>
            {notes_view}
            <details prop:open=is_open on:toggle=toggled>
                <summary>"Request"</summary>
                <pre class="request" data-testid="dialect-request">{serde_json::to_string_pretty(&request).unwrap_or_default()}</pre>
            </details>
        </section>
    }
}

/// How many of a dialect's notes lose meaning, as a line.
fn losses_line(losses: usize, notes: usize) -> String {
    match losses {
        0 => "no note loses meaning".to_string(),
        n => format!(
            "{n} of {notes} {} {} meaning",
            if notes == 1 { "note" } else { "notes" },
            if n == 1 { "loses" } else { "lose" }
        ),
    }
}
