//! Leases on holds in flight: which server instance is carrying out a reserved call, and
//! until when it has promised to settle it.
//!
//! A hold whose call runs outside the transaction that reserved it (a connector that takes
//! time, an approved call) is leased by the instance carrying it out: its id and a time
//! [`GatewayConfig::hold_lease_secs`](crate::GatewayConfig) ahead. While the call runs the
//! instance renews the lease on every sweep tick; when the call ends, however it ends, its
//! [`LeaseGuard`] drops and renewals stop. Any instance's sweeper ends a pending hold whose
//! lease lapsed and that no pending approval keeps ([`crate::domain::approvals`]).
//!
//! Guarantees: a live instance's calls in flight are never ended by another instance, nor by
//! a new one starting on the same database (recovery was "whatever is pending at my start-up",
//! which voided the holds of calls still running elsewhere, and their settles then failed).
//! A crashed instance's holds end within a lease and a sweep tick of its death, by whichever
//! instance sweeps first; a call its own process lost (a dropped request, a failed settle)
//! ends the same way.

use std::collections::HashSet;
use std::sync::{Arc, Mutex};

use chrono::{Duration, Utc};

use crate::error::Result;
use crate::sql::Tx;
use crate::stored;

/// How long a lease lasts unless renewed. Renewals come every sweep tick (a second), so this
/// tolerates long pauses and some clock skew between machines, and bounds how long a crashed
/// instance's reservations count against the caps.
pub const DEFAULT_LEASE_SECS: i64 = 15;

/// This instance's leases: its id, their length, and the holds it is carrying out now.
#[derive(Debug)]
pub struct Leases {
    instance: String,
    secs: i64,
    held: Mutex<HashSet<String>>,
}

/// A lease to write on a hold: who holds it and until when.
#[derive(Clone, Debug)]
pub(crate) struct Lease {
    owner: String,
    until: String,
}

impl Leases {
    pub(crate) fn new(secs: i64) -> Leases {
        let instance = format!("ins_{}", uuid::Uuid::new_v4().simple());
        Leases { instance, secs: secs.max(1), held: Mutex::default() }
    }

    /// This process's instance id, as holds record it.
    pub fn instance(&self) -> &str {
        &self.instance
    }

    /// A lease from now.
    pub(crate) fn lease(&self) -> Lease {
        let until = Utc::now() + Duration::seconds(self.secs);
        Lease { owner: self.instance.clone(), until: stored::ts(until) }
    }

    /// Marks `hold` as carried out here until the guard drops.
    pub(crate) fn carry(self: &Arc<Self>, hold: &str) -> LeaseGuard {
        self.held.lock().expect("leases lock").insert(hold.to_string());
        LeaseGuard { leases: self.clone(), hold: hold.to_string() }
    }

    /// The holds carried out here now.
    pub(crate) fn carried(&self) -> Vec<String> {
        self.held.lock().expect("leases lock").iter().cloned().collect()
    }
}

/// Keeps a hold's lease renewed while it lives.
pub(crate) struct LeaseGuard {
    leases: Arc<Leases>,
    hold: String,
}

impl Drop for LeaseGuard {
    fn drop(&mut self) {
        self.leases.held.lock().expect("leases lock").remove(&self.hold);
    }
}

/// Gives `hold` to `lease`'s instance (at reserve, and when an approval releases a parked call).
pub(crate) fn take(tx: &dyn Tx, hold: &str, lease: &Lease) -> Result<()> {
    tx.exec(
        "UPDATE holds SET lease_owner = ?, lease_until = ? WHERE id = ?",
        &[&lease.owner, &lease.until, &hold],
    )?;
    Ok(())
}

/// Extends the leases this instance still holds on `holds`; returns how many it renewed.
pub(crate) fn renew(tx: &dyn Tx, holds: &[String], lease: &Lease) -> Result<usize> {
    let mut n = 0;
    for h in holds {
        n += tx.exec(
            "UPDATE holds SET lease_until = ? WHERE id = ? AND status = 'pending' AND lease_owner = ?",
            &[&lease.until, h, &lease.owner],
        )?;
    }
    Ok(n as usize)
}
