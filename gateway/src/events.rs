//! The in-process event bus that feeds live subscribers (SSE, the console feed).
//!
//! Bounded: it keeps the last [`BUS_CAPACITY`] events. Writers never wait for readers; a
//! subscriber that falls further behind than that gets one [`BusItem::Lagged`] marker and its
//! subscription ends, so it can reconnect and resume from the log by event id. Event ids are
//! the activity log's sequence numbers, so they increase and survive restarts.
//!
//! Order: the writer thread publishes what each transaction appended right after its
//! COMMIT and before it answers the callers ([`crate::writer`]), so the bus carries every
//! committed entry exactly once, in the log's order. (Callers publishing after they were
//! woken raced each other, and a subscriber that skips what it has seen lost the entry that
//! came second.)
//!
//! Fan-out is cheap: an event is serialized to JSON at most once, by the first subscriber
//! that needs it (never on the writer's thread), and every subscriber shares it (an `Arc`),
//! so a thousand subscribers cost a thousand pointer copies, not a thousand deep copies and
//! serializations.

use std::sync::{Arc, OnceLock};

use tokio::sync::broadcast;

use crate::activity::Entry;
use crate::ids::TenantId;

/// Events kept for slow subscribers before they are dropped.
pub const BUS_CAPACITY: usize = 1_024;

#[derive(Clone, Debug)]
pub struct Bus {
    tx: broadcast::Sender<Arc<Published>>,
}

/// A committed entry as subscribers get it: the entry, and its JSON made once when first
/// asked for.
#[derive(Debug)]
pub struct Published {
    pub entry: Entry,
    json: OnceLock<String>,
}

impl Published {
    /// The entry as JSON, shared by every subscriber.
    pub fn json(&self) -> &str {
        self.json.get_or_init(|| serde_json::to_string(&self.entry).expect("entries serialize"))
    }
}

impl PartialEq for Published {
    fn eq(&self, other: &Self) -> bool {
        self.entry == other.entry
    }
}

impl Default for Bus {
    fn default() -> Self {
        Bus { tx: broadcast::channel(BUS_CAPACITY).0 }
    }
}

/// What a subscription yields.
#[derive(Clone, Debug, PartialEq)]
pub enum BusItem {
    Event(Arc<Published>),
    /// The subscriber fell behind by `missed` events and is being dropped.
    Lagged {
        missed: u64,
    },
}

impl Bus {
    /// Publishes committed entries, in the order given. Never blocks. Only the writer calls
    /// it, after each commit.
    pub(crate) fn publish(&self, entries: impl IntoIterator<Item = Entry>) {
        for entry in entries {
            // No subscribers is fine.
            let _ = self.tx.send(Arc::new(Published { entry, json: OnceLock::new() }));
        }
    }

    /// A subscription to one tenant's events.
    pub fn subscribe(&self, tenant: TenantId) -> Subscription {
        Subscription { rx: self.tx.subscribe(), tenant, done: false }
    }

    pub fn subscribers(&self) -> usize {
        self.tx.receiver_count()
    }
}

pub struct Subscription {
    rx: broadcast::Receiver<Arc<Published>>,
    tenant: TenantId,
    done: bool,
}

impl Subscription {
    /// The next event of this tenant, a final `Lagged`, or `None` when the bus closed.
    pub async fn next(&mut self) -> Option<BusItem> {
        if self.done {
            return None;
        }
        loop {
            match self.rx.recv().await {
                Ok(p) if p.entry.tenant_id == self.tenant => return Some(BusItem::Event(p)),
                Ok(_) => continue,
                Err(broadcast::error::RecvError::Lagged(missed)) => {
                    self.done = true;
                    return Some(BusItem::Lagged { missed });
                }
                Err(broadcast::error::RecvError::Closed) => return None,
            }
        }
    }
}
