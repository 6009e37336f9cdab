//! The conformance checks of webhook deliveries: one per forge and delivery id (a
//! redelivery leaves the first and says it was not new), every typed field read back
//! as written, the pending ones (asking something, not dispatched) listed oldest
//! first and no longer once marked dispatched.

use conclave_core::RunStore;
use conclave_shared::delivery::{Asks, Command, Delivery, DeliveryEvent, Forge, Ignored};
use std::sync::Arc;

/// Every check of deliveries, each against a fresh store from `make`.
pub(super) async fn run_all(make: &dyn Fn() -> Arc<dyn RunStore>) {
    a_delivery_is_kept_once_per_forge_and_id(make()).await;
    every_field_reads_back_typed(make()).await;
    pending_deliveries_are_listed_oldest_first_until_dispatched(make()).await;
}

/// A pull request's push from GitHub, received at `received_ms`.
pub fn stored_delivery(forge: Forge, id: &str, received_ms: u64) -> Delivery {
    Delivery {
        forge,
        id: id.into(),
        event: DeliveryEvent::PullRequest,
        action: "synchronize".into(),
        repository: Some("acme/app".into()),
        number: Some(7),
        head_sha: Some("0123456789abcdef0123456789abcdef01234567".into()),
        base_ref: Some("main".into()),
        installation: Some(4_242_424_242),
        sender: Some("ann".into()),
        asks: Asks::Command(Command::Review { full: false }),
        received_ms,
    }
}

async fn a_delivery_is_kept_once_per_forge_and_id(store: Arc<dyn RunStore>) {
    let first = stored_delivery(Forge::Github, "72d3162e-cc78-11e3-81ab-4c9367dc0958", 1_000);
    assert!(store.put_delivery(&first).await.expect("put_delivery"), "a first delivery is new");
    let again = Delivery { action: "opened".into(), received_ms: 2_000, ..first.clone() };
    assert!(!store.put_delivery(&again).await.expect("put_delivery"), "a redelivery is not new");
    assert_eq!(store.pending_deliveries(10).await.expect("pending"), vec![first.clone()], "the first stays as it was");
    let other_forge = Delivery { forge: Forge::Gitlab, ..first.clone() };
    assert!(store.put_delivery(&other_forge).await.expect("put_delivery"), "the same id from another forge is its own");
}

async fn every_field_reads_back_typed(store: Arc<dyn RunStore>) {
    let dismiss = Delivery {
        event: DeliveryEvent::ReviewComment,
        action: "created".into(),
        head_sha: None,
        base_ref: None,
        asks: Asks::Command(Command::Dismiss {
            reason: "the caller checks it; ' quotes \" and ünïcode".into(),
            reply: "1005".into(),
            thread: "1002".into(),
        }),
        ..stored_delivery(Forge::Github, "d-1", 1)
    };
    let full = Delivery {
        forge: Forge::Gitlab,
        event: DeliveryEvent::Note,
        action: String::new(),
        installation: None,
        sender: None,
        repository: Some("group/sub/project".into()),
        number: Some(u64::from(u32::MAX) + 9),
        asks: Asks::Command(Command::Review { full: true }),
        ..stored_delivery(Forge::Gitlab, "d-2", 2)
    };
    for delivery in [&dismiss, &full] {
        assert!(store.put_delivery(delivery).await.expect("put_delivery"));
    }
    let ignored = [
        (DeliveryEvent::Ping, Ignored::Event),
        (DeliveryEvent::Other("push".into()), Ignored::Event),
        (DeliveryEvent::PullRequest, Ignored::Draft),
        (DeliveryEvent::IssueComment, Ignored::UnknownCommand("/conclave reveiw".into())),
    ];
    for (n, (event, why)) in ignored.into_iter().enumerate() {
        let delivery =
            Delivery { event, asks: Asks::Nothing(why), ..stored_delivery(Forge::Github, &format!("i-{n}"), 0) };
        assert!(store.put_delivery(&delivery).await.expect("put_delivery"), "an ignored delivery is kept too");
        assert!(!store.put_delivery(&delivery).await.expect("put_delivery"), "and recognised when it comes again");
    }
    assert_eq!(
        store.pending_deliveries(10).await.expect("pending"),
        vec![dismiss, full],
        "every field read back as written; ignored deliveries are never pending"
    );
}

async fn pending_deliveries_are_listed_oldest_first_until_dispatched(store: Arc<dyn RunStore>) {
    let puts = [(Forge::Gitlab, "b", 30), (Forge::Github, "c", 10), (Forge::Github, "a", 30), (Forge::Github, "d", 20)];
    for (forge, id, at) in puts {
        assert!(store.put_delivery(&stored_delivery(forge, id, at)).await.expect("put_delivery"));
    }
    let keys = |list: Vec<Delivery>| -> Vec<(Forge, String)> { list.into_iter().map(|d| (d.forge, d.id)).collect() };
    let pending = keys(store.pending_deliveries(10).await.expect("pending"));
    let expected = [(Forge::Github, "c"), (Forge::Github, "d"), (Forge::Github, "a"), (Forge::Gitlab, "b")]
        .map(|(f, id)| (f, id.to_string()));
    assert_eq!(pending, expected.to_vec(), "oldest first, then by forge and id");
    assert_eq!(keys(store.pending_deliveries(2).await.expect("pending")), expected[..2].to_vec(), "at most the limit");
    assert!(store.mark_delivery_dispatched(Forge::Github, "d", 40).await.expect("mark"), "a pending one is marked");
    assert!(!store.mark_delivery_dispatched(Forge::Github, "d", 41).await.expect("mark"), "only once");
    assert!(!store.mark_delivery_dispatched(Forge::Gitlab, "d", 41).await.expect("mark"), "not another forge's");
    assert!(!store.mark_delivery_dispatched(Forge::Github, "nothing", 41).await.expect("mark"), "not an unknown one");
    let left = keys(store.pending_deliveries(10).await.expect("pending"));
    assert_eq!(left, vec![expected[0].clone(), expected[2].clone(), expected[3].clone()], "a dispatched one is gone");
}
