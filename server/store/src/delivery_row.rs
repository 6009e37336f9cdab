//! A webhook delivery as a row, the same in both stores: typed fields as columns,
//! the event by its stored name, and the command or the reason it was ignored as the
//! JSON of their typed enums (exactly one of the two is set), read back into the
//! same types.

use conclave_core::StoreError;
use conclave_shared::delivery::{Asks, Delivery, DeliveryEvent, Forge};

/// A delivery's columns, in the order both stores' statements name them: forge,
/// delivery id, event, action, repository, number, head sha, base ref, installation,
/// sender, command, ignored, received.
pub(crate) struct DeliveryRow {
    pub forge: String,
    pub id: String,
    pub event: String,
    pub action: String,
    pub repository: Option<String>,
    pub number: Option<i64>,
    pub head_sha: Option<String>,
    pub base_ref: Option<String>,
    pub installation: Option<i64>,
    pub sender: Option<String>,
    pub command: Option<String>,
    pub ignored: Option<String>,
    pub received_ms: i64,
}

/// The columns of a delivery row, in [`DeliveryRow`]'s order.
pub(crate) const COLUMNS: &str = "forge, delivery_id, event, action, repository, number, head_sha, base_ref, \
                                  installation, sender, command, ignored, received_ms";

impl DeliveryRow {
    /// The row of `delivery`.
    pub fn of(delivery: &Delivery) -> Result<DeliveryRow, StoreError> {
        let (command, ignored) = match &delivery.asks {
            Asks::Command(command) => (Some(to_json(command)?), None),
            Asks::Nothing(why) => (None, Some(to_json(why)?)),
        };
        Ok(DeliveryRow {
            forge: delivery.forge.name().to_string(),
            id: delivery.id.clone(),
            event: delivery.event.name(),
            action: delivery.action.clone(),
            repository: delivery.repository.clone(),
            number: delivery.number.map(to_int),
            head_sha: delivery.head_sha.clone(),
            base_ref: delivery.base_ref.clone(),
            installation: delivery.installation.map(to_int),
            sender: delivery.sender.clone(),
            command,
            ignored,
            received_ms: to_int(delivery.received_ms),
        })
    }

    /// The delivery this row holds; a row that does not read back is an error naming it.
    pub fn delivery(self) -> Result<Delivery, StoreError> {
        let unreadable = |what: String| {
            StoreError::Backend(format!("the stored delivery {}/{} is unreadable: {what}", self.forge, self.id))
        };
        let forge = Forge::from_name(&self.forge).ok_or_else(|| unreadable(format!("no forge `{}`", self.forge)))?;
        let event =
            DeliveryEvent::from_name(&self.event).ok_or_else(|| unreadable(format!("no event `{}`", self.event)))?;
        let asks = match (&self.command, &self.ignored) {
            (Some(command), None) => serde_json::from_str(command).map(Asks::Command),
            (None, Some(ignored)) => serde_json::from_str(ignored).map(Asks::Nothing),
            _ => return Err(unreadable("it has both a command and a reason to ignore it, or neither".into())),
        }
        .map_err(|e| unreadable(e.to_string()))?;
        Ok(Delivery {
            forge,
            event,
            asks,
            action: self.action,
            repository: self.repository,
            number: self.number.map(from_int),
            head_sha: self.head_sha,
            base_ref: self.base_ref,
            installation: self.installation.map(from_int),
            sender: self.sender,
            received_ms: from_int(self.received_ms),
            id: self.id,
        })
    }
}

/// Neither database has unsigned integers; numbers and times fit in 64 signed bits.
pub(crate) fn to_int(value: u64) -> i64 {
    i64::try_from(value).unwrap_or(i64::MAX)
}

fn from_int(value: i64) -> u64 {
    u64::try_from(value).unwrap_or(0)
}

fn to_json<T: serde::Serialize>(value: &T) -> Result<String, StoreError> {
    serde_json::to_string(value).map_err(|e| StoreError::Backend(e.to_string()))
}
