//! Reading and verifying the activity log: pages of a tenant's entries (or every tenant's, for
//! the operator) and the chain's verification, with where it was last found intact kept per
//! tenant so the console's check hashes only what is new.

use crate::Gateway;
use crate::audit::activity::{self, ChainReport, Entry, GENESIS, LogQuery, NextMark, Walk};
use crate::error::Result;
use crate::ids::TenantId;

impl Gateway {
    /// The tenant's entries, newest first unless `after` is given (then oldest first).
    pub async fn log(&self, tenant: &TenantId, q: &LogQuery) -> Result<Vec<Entry>> {
        activity::page(&self.store, tenant, q).await
    }

    /// Every tenant's entries (the operator's view: the one read that crosses
    /// tenants), newest first unless `after` is given, optionally narrowed to one tenant.
    pub async fn log_all(&self, tenant: Option<&TenantId>, q: &LogQuery) -> Result<Vec<Entry>> {
        activity::page_all(&self.store, tenant, q).await
    }

    /// Recomputes the tenant's whole chain from its first entry and names the first broken
    /// link. Reads the log a page at a time, so its memory does not grow with the log.
    /// A log cut after archiving is verified from its checkpoint (docs/archive.md).
    pub async fn verify_log(&self, tenant: &TenantId) -> Result<ChainReport> {
        let (seq, hash) = match activity::checkpoint(&self.store, tenant).await? {
            Some(c) => (c.seq, c.hash),
            None => (0, GENESIS.to_string()),
        };
        let walk = activity::walk_after(&self.store, tenant, seq, hash).await?;
        Ok(self.remember(tenant, walk, 0))
    }

    /// The chain's state for the console, hashing only what was appended since this process
    /// last verified it: the entry it stopped at must still be the one it verified, and every
    /// newer one must link to it. A change further back is found by [`Gateway::verify_log`].
    pub async fn verify_log_since_last(&self, tenant: &TenantId) -> Result<ChainReport> {
        let mark = self.chain_marks.lock().expect("chain marks lock").get(tenant).cloned();
        let Some(mark) = mark else { return self.verify_log(tenant).await };
        if !activity::mark_holds(&self.store, &mark).await? {
            self.chain_marks.lock().expect("chain marks lock").remove(tenant);
            // An entry deleted after archiving is not a broken one: verify from the cut.
            if activity::checkpoint(&self.store, tenant).await?.is_some_and(|c| c.seq >= mark.seq) {
                return self.verify_log(tenant).await;
            }
            return Ok(mark.broken());
        }
        let (seq, hash) = mark.start();
        let walk = activity::walk_after(&self.store, tenant, seq, hash).await?;
        Ok(self.remember(tenant, walk, mark.entries))
    }

    /// Turns a walk into a report, and keeps where an intact one ended for the next look.
    fn remember(&self, tenant: &TenantId, walk: Walk, before: u64) -> ChainReport {
        let (report, mark) = walk.report(before);
        let mut marks = self.chain_marks.lock().expect("chain marks lock");
        match mark {
            NextMark::Set(m) => {
                marks.insert(tenant.clone(), m);
            }
            NextMark::Keep => {}
            NextMark::Forget => {
                marks.remove(tenant);
            }
        }
        report
    }
}
