//! Values loaded from the server that follow the signals they depend on.
//!
//! This stands in for Leptos's `LocalResource` in the editor's few reactive fetches
//! (the lowering preview, a referenced schema): a resource brings in the whole
//! async-derived machinery, tens of kilobytes of wasm for each kind of value, and the
//! editor has a size budget. What the editor needs is small: fetch again when an
//! input changes, keep the last answer while the next one loads, and never let an
//! older answer overwrite a newer one.

use leptos::prelude::*;
use leptos::task::spawn_local;
use std::cell::Cell;
use std::future::Future;
use std::rc::Rc;

/// Calls `load` now and again whenever a signal it reads before its first `.await`
/// changes, and holds the newest answer: `None` until the first one arrives, then
/// the last answer while a newer one loads. An answer to an older call that arrives
/// after a newer call was made is dropped.
pub fn loaded<T, Fut>(load: impl Fn() -> Fut + 'static) -> ReadSignal<Option<T>>
where
    T: Send + Sync + 'static,
    Fut: Future<Output = T> + 'static,
{
    let value = RwSignal::new(None);
    let latest = Rc::new(Cell::new(0u64));
    Effect::new(move |_| {
        let pending = load();
        let call = latest.get() + 1;
        latest.set(call);
        let latest = latest.clone();
        spawn_local(async move {
            let answer = pending.await;
            if latest.get() == call {
                value.set(Some(answer));
            }
        });
    });
    value.read_only()
}
