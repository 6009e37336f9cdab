//! Commits of typed text that wait for the pointer's release.
//!
//! Text typed into an input is committed on `change`, which the browser fires when the
//! input loses focus. When a pointer press takes the focus (a click on a row's
//! "required" box, right after typing the row's name), that `change` comes between
//! the press and the release of the click. Committing then redraws the page under
//! the pointer (a name's error message goes away, the rows below move up; a longer
//! label wraps on its card and moves the card's chips), so the release lands on
//! another element and the browser drops the click. While a pointer is pressed,
//! commits therefore wait for its release: press and release see the same page, and
//! the typed text is still committed before the click's own effect, which comes after
//! the release.

use leptos::prelude::*;
use std::cell::{Cell, RefCell};
use wasm_bindgen::JsCast;
use wasm_bindgen::closure::Closure;

thread_local! {
    /// Whether a pointer is pressed on the page.
    static PRESSED: Cell<bool> = const { Cell::new(false) };
    /// Commits waiting for the release, in the order they were made.
    static WAITING: RefCell<Vec<Box<dyn FnOnce()>>> = RefCell::new(Vec::new());
}

/// Runs `commit` now, or, while a pointer is pressed, as soon as it is released.
pub fn after_press(commit: impl FnOnce() + 'static) {
    if PRESSED.get() {
        WAITING.with(|w| w.borrow_mut().push(Box::new(commit)));
    } else {
        commit();
    }
}

/// Follows presses and releases on the whole page for as long as it lives. The
/// listeners capture, so they hear every press, including those that handlers stop
/// from bubbling (cards, ports, the palette).
pub fn install_press_tracking() {
    let Some(window) = web_sys::window() else { return };
    let listen = |name: &str, pressed: bool, capture: bool| {
        let handler = Closure::<dyn Fn(web_sys::Event)>::new(move |_: web_sys::Event| {
            // Released first: a release never heard (outside the window) must not
            // hold commits until the next one.
            PRESSED.set(false);
            release();
            PRESSED.set(pressed);
        });
        let _ = window.add_event_listener_with_callback_and_bool(name, handler.as_ref().unchecked_ref(), capture);
        // The listener lives as long as the page.
        handler.forget();
    };
    listen("pointerdown", true, true);
    listen("pointerup", false, true);
    listen("pointercancel", false, true);
    // The window losing focus (not capturing: an input's own blur, which comes right
    // after its `change`, must not release what it is waiting for).
    listen("blur", false, false);
}

/// Runs the commits that waited for the release.
fn release() {
    loop {
        let waiting = WAITING.with(|w| std::mem::take(&mut *w.borrow_mut()));
        if waiting.is_empty() {
            return;
        }
        for commit in waiting {
            commit();
        }
    }
}

/// Handlers (`input`, `change`) for a text input that commits on `change` (Tab,
/// Enter, leaving it; when a pointer press took the focus, at its release, see
/// `edit/press.rs`). What was typed is also remembered: the browser fires no
/// `change` for an input removed while it has focus (another node selected by a
/// click), so when the form goes away the text is committed then, unless the value it
/// was typed over has changed meanwhile (an undo, another conclave opened).
pub fn commit_on_change(
    current: impl Fn() -> Option<String> + Send + Sync + 'static,
    commit: impl Fn(String) + Clone + Send + Sync + 'static,
) -> (impl Fn(web_sys::Event) + 'static, impl Fn(web_sys::Event) + 'static) {
    // The text typed since the last `change`, with the value it was typed over.
    let typed = ArcStoredValue::new(None::<(Option<String>, String)>);
    let current = std::sync::Arc::new(current);
    {
        let (typed, current, commit) = (typed.clone(), current.clone(), commit.clone());
        on_cleanup(move || {
            if let Some((before, text)) = typed.get_value() {
                // After the cleanup, so the edit does not land inside the re-render.
                queue_microtask(move || {
                    if current() == before && before.as_deref() != Some(&text) {
                        commit(text);
                    }
                });
            }
        });
    }
    let on_input = {
        let typed = typed.clone();
        move |ev: web_sys::Event| {
            let text = event_target_value(&ev);
            typed.update_value(|t| {
                let before = t.take().map(|(before, _)| before).unwrap_or_else(|| current());
                *t = Some((before, text));
            });
        }
    };
    let on_change = move |ev: web_sys::Event| {
        typed.set_value(None);
        let (commit, text) = (commit.clone(), event_target_value(&ev));
        after_press(move || commit(text));
    };
    (on_input, on_change)
}
