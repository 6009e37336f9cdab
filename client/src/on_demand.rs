//! Drawing the views whose code is split out of the editor's first download: each
//! `#[lazy]` split point (in a `split` module beside the view it loads) gives a
//! future of its view, shown through a `Suspend`, and `on_demand` draws it afresh for
//! each thing it shows.

use leptos::prelude::*;
use std::hash::Hash;

/// Draws `view(key)` while `key()` is `Some`, built anew for each key, in an owner of
/// its own. The old view goes at once (its cleanups commit what was typed in it), and
/// the new one's `Suspend`, polled once as it is built, draws at once when its module
/// is loaded already. A `Suspend` given another key in place would keep the old view,
/// its owner gone, until a tick after the new one was ready.
pub fn on_demand<K, V>(
    key: impl Fn() -> Option<K> + Send + Sync + 'static,
    view: impl Fn(K) -> V + Clone + Send + Sync + 'static,
) -> impl IntoView
where
    K: Clone + Eq + Hash + Send + Sync + 'static,
    V: IntoView + 'static,
{
    view! { <For each=key key=|k: &K| k.clone() children=view/> }
}
