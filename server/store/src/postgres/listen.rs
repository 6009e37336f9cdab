//! LISTEN/NOTIFY: one connection per store, opened on first use, that listens on
//! `conclave_events` and fans each notice (the id of a run whose events were just
//! committed, by any server sharing the database) out to the store's subscribers.
//! A lost connection is opened again; it stops when the store is dropped.

use futures::StreamExt;
use std::time::Duration;
use tokio::sync::{broadcast, oneshot};
use tokio_postgres::{AsyncMessage, NoTls};

/// The channel every writer notifies on.
pub(super) const CHANNEL: &str = "conclave_events";

/// Notices buffered per subscriber before a slow one misses some (it then reads the
/// store, as after any gap).
const BUFFER: usize = 1024;

/// The fan-out of one store's notices.
#[derive(Debug)]
pub(super) struct Listener {
    notices: broadcast::Sender<String>,
    _stop: oneshot::Sender<()>,
}

impl Listener {
    /// Starts listening with `config` on the current runtime.
    pub(super) fn start(config: tokio_postgres::Config) -> Listener {
        let (notices, _) = broadcast::channel(BUFFER);
        let (stop, stopped) = oneshot::channel();
        tokio::spawn(listen(config, notices.clone(), stopped));
        Listener { notices, _stop: stop }
    }

    /// A receiver of the notices from now on.
    pub(super) fn subscribe(&self) -> broadcast::Receiver<String> {
        self.notices.subscribe()
    }
}

async fn listen(
    config: tokio_postgres::Config,
    notices: broadcast::Sender<String>,
    mut stopped: oneshot::Receiver<()>,
) {
    loop {
        tokio::select! {
            _ = &mut stopped => return,
            () = listen_once(&config, &notices) => {}
        }
        tokio::select! {
            _ = &mut stopped => return,
            () = tokio::time::sleep(Duration::from_secs(1)) => {}
        }
    }
}

/// One connection's life: LISTEN, then forward notices until it fails.
async fn listen_once(config: &tokio_postgres::Config, notices: &broadcast::Sender<String>) {
    let (client, mut connection) = match config.connect(NoTls).await {
        Ok(pair) => pair,
        Err(e) => {
            tracing::warn!("cannot listen for run events: {e}");
            return;
        }
    };
    let forward = notices.clone();
    // The connection is driven on its own task, which both answers the client and
    // receives the notices; it ends when the connection fails.
    let driver = AbortOnDrop(tokio::spawn(async move {
        let mut messages = futures::stream::poll_fn(move |cx| connection.poll_message(cx));
        while let Some(message) = messages.next().await {
            match message {
                Ok(AsyncMessage::Notification(notice)) => {
                    let _ = forward.send(notice.payload().to_string());
                }
                Ok(_) => {}
                Err(e) => {
                    tracing::warn!("the run event listener lost its connection: {e}");
                    return;
                }
            }
        }
    }));
    if let Err(e) = client.batch_execute(&format!("LISTEN {CHANNEL}")).await {
        tracing::warn!("cannot listen for run events: {e}");
        return;
    }
    // The client lives as long as its connection does.
    let mut driver = driver;
    let _ = (&mut driver.0).await;
    drop(client);
}

/// A task aborted when its handle is dropped (the listener was stopped).
struct AbortOnDrop(tokio::task::JoinHandle<()>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}
