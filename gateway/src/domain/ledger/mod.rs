//! Holds, running balances and ledger entries (docs/architecture.md#money-and-the-ledger), in the style of
//! TigerBeetle.
//!
//! Every profile has one budget account holding the running totals (posted, pending) of
//! itself and all of its sub-agents, so a parent's account is the pool its sub-agents share.
//! A hold reserves its cost on the acting profile's account and on every ancestor's, plus
//! its platform-credit part on the tenant's credit. A hold is `pending` and ends exactly once
//! as `posted` (at most the held amount), `voided` or `expired`: the ending update only
//! matches a pending hold, and a second ending is an error, not a second release.
//! Every change writes one ledger entry per account touched, so the entries always sum to the
//! running totals. These functions run inside a writer job, so the reads and updates of a
//! reservation have nothing in between.

pub(crate) mod check;
pub mod leases;
pub(crate) mod retention;
mod together;

pub use retention::LEDGER_FLOOR_DAYS;
pub(crate) use together::{Moves, inserted_together, moved_together, post_later};

use chrono::{DateTime, Utc};
use policy::{BudgetView, Kit, Money};
use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::ids::{ProfileId, TenantId};
use crate::sql::{Statement, ToValue, Tx, locked};
use crate::stored;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum HoldEnd {
    Posted,
    Voided,
    Expired,
}

impl HoldEnd {
    pub const fn as_str(self) -> &'static str {
        match self {
            HoldEnd::Posted => "posted",
            HoldEnd::Voided => "voided",
            HoldEnd::Expired => "expired",
        }
    }
    const fn entry_kind(self) -> &'static str {
        match self {
            HoldEnd::Posted => "post",
            HoldEnd::Voided => "void",
            HoldEnd::Expired => "expire",
        }
    }
}

/// A reservation to make.
#[derive(Clone, Debug)]
pub struct NewHold {
    pub tenant: TenantId,
    /// The acting profile first, then each ancestor up to the root.
    pub chain: Vec<ProfileId>,
    pub action: String,
    pub amount: Money,
    pub credit: Money,
    pub kit_version: u32,
    /// The tenant-local day it counts toward in every period ([`crate::domain::periods`]),
    /// `YYYY-MM-DD`.
    pub day: String,
}

/// An account's running totals.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Totals {
    pub posted: Money,
    pub pending: Money,
}

/// The running totals of each account in `chain`, in order, locked until commit on
/// PostgreSQL: for tests that race reservations without the tenant's lock (the pipeline
/// reads them with [`crate::domain::reserve::current_standing`]). A chain runs from the
/// acting profile up to its root, so two chains share a suffix and take its locks in the
/// same order: reservations never deadlock on each other.
#[cfg(test)]
pub(crate) fn totals(tx: &dyn Tx, chain: &[ProfileId]) -> Result<Vec<Totals>> {
    let sql = locked!(tx, "SELECT posted_units, pending_units FROM budget_accounts WHERE profile_id = ?");
    let mut out = Vec::with_capacity(chain.len());
    for p in chain {
        let (posted, pending) = match tx.row(sql, &[&p.as_str()])? {
            Some(r) => (r.get(0)?, r.get(1)?),
            None => (0, 0),
        };
        out.push(Totals { posted: money(posted), pending: money(pending) });
    }
    Ok(out)
}

/// Locks the accounts of `chain` (leaf to root) until commit on PostgreSQL, before a job
/// reads what it decides on; nothing on SQLite. Whoever locks several accounts takes the
/// deeper ones first, so lockers never wait on each other in a circle.
pub(crate) fn lock_accounts(tx: &dyn Tx, chain: &[ProfileId]) -> Result<()> {
    if tx.engine() == crate::sql::Engine::Postgres {
        for p in chain {
            tx.exec(
                "SELECT profile_id FROM budget_accounts WHERE profile_id = ? FOR UPDATE",
                &[&p.as_str()],
            )?;
        }
    }
    Ok(())
}

/// Locks, on PostgreSQL, every account that ending all of `holds` touches and then their
/// tenants' credit rows, in the one order every locker of several follows: deeper accounts
/// first, by id within a depth, tenants last, by id. A job that ends many holds (the sweep)
/// would otherwise take a second hold's accounts after the first one's tenant row, while a
/// reservation takes accounts and then that row: a circle. One hold's ending takes its
/// chain leaf to root and then its tenant, which is already in order. Nothing on SQLite.
pub(crate) fn lock_for_ending(tx: &dyn Tx, holds: &[&str]) -> Result<()> {
    if tx.engine() != crate::sql::Engine::Postgres || holds.len() < 2 {
        return Ok(());
    }
    let (mut accounts, mut tenants) = (std::collections::BTreeSet::new(), std::collections::BTreeSet::new());
    for hold in holds {
        let Some(r) = tx.row("SELECT tenant_id, chain FROM holds WHERE id = ?", &[hold])? else { continue };
        let (tenant, chain): (String, String) = (r.get(0)?, r.get(1)?);
        let links: Vec<&str> = chain.split(',').collect();
        for (i, account) in links.iter().enumerate() {
            accounts.insert((std::cmp::Reverse(links.len() - i), account.to_string()));
        }
        tenants.insert(tenant);
    }
    for (_, account) in &accounts {
        tx.exec("SELECT profile_id FROM budget_accounts WHERE profile_id = ? FOR UPDATE", &[account])?;
    }
    for tenant in &tenants {
        tx.exec("SELECT id FROM tenants WHERE id = ? FOR UPDATE", &[tenant])?;
    }
    Ok(())
}

/// Budget views for the engine: each account's totals with the caps of that level's kit.
pub fn views(totals: &[Totals], kits: &[&Kit]) -> Vec<BudgetView> {
    totals.iter().zip(kits).map(|(t, k)| BudgetView::from_kit(k, t.posted, t.pending)).collect()
}

/// A stored balance. Balances are never negative (a CHECK constraint) and never above
/// `Money::MAX` (every reservation is decided against that bound).
pub(crate) fn money(units: i64) -> Money {
    Money::from_units(units).expect("balances are never negative nor above Money::MAX")
}

/// The platform-credit part of `hold` and the day it counts toward, while it is pending;
/// `None` once it has ended.
pub(crate) fn pending_part(c: &dyn Tx, hold: &str) -> Result<Option<(Money, Option<chrono::NaiveDate>)>> {
    let Some(r) =
        c.row("SELECT credit_units, day FROM holds WHERE id = ? AND status = 'pending'", &[&hold])?
    else {
        return Ok(None);
    };
    let (units, day): (i64, Option<String>) = (r.get(0)?, r.get(1)?);
    let credit =
        Money::from_units(units).ok_or_else(|| stored::corrupt("held credit", &units.to_string()))?;
    let day = day.map(|d| stored::named("hold day", &d, |d| d.parse().ok())).transpose()?;
    Ok(Some((credit, day)))
}

/// Reserves a hold. The caller has already decided, on totals read in this same job.
pub(crate) fn reserve(c: &dyn Tx, h: &NewHold) -> Result<String> {
    let now = stored::ts(Utc::now());
    let id = new_hold_id();
    let m = Movement {
        tenant: &h.tenant,
        hold: &id,
        action: &h.action,
        kit_version: h.kit_version,
        kind: "hold",
        pending_delta: h.amount.units(),
        posted_delta: 0,
        at: &now,
        day: Some(&h.day),
    };
    // A call that takes no credit leaves the tenant's row alone.
    let credit = (h.credit.units() != 0).then_some((h.credit.units(), 0));
    write_hold(c, h, None, &m, credit)?;
    Ok(id)
}

/// Opens the budget account of a new profile, with nothing pending or posted.
pub(crate) fn open_account(c: &dyn Tx, tenant: &TenantId, profile: &ProfileId) -> Result<()> {
    c.exec(
        "INSERT INTO budget_accounts (profile_id, tenant_id) VALUES (?, ?)",
        &[&profile.as_str(), &tenant.as_str()],
    )?;
    Ok(())
}

/// Makes a hold and posts it in one step, for a call carried out within the transaction that
/// decided it: no reader could ever see it pending, so it is written once, already posted,
/// with one `post` entry per account. Returns the hold id, the amount posted (at most the
/// held amount) and the writes, for the caller to run with its log entry
/// ([`crate::audit::activity::append_after`]): one round trip on PostgreSQL for the call's
/// ledger and log.
pub(crate) fn post_now(c: &dyn Tx, h: &NewHold, posted: Money) -> Result<(String, Money, Vec<Statement>)> {
    let now = stored::ts(Utc::now());
    let amount = h.amount.units();
    let posted_units = posted.units().min(amount);
    let id = new_hold_id();
    let m = Movement {
        tenant: &h.tenant,
        hold: &id,
        action: &h.action,
        kit_version: h.kit_version,
        kind: "post",
        pending_delta: 0,
        posted_delta: posted_units,
        at: &now,
        day: Some(&h.day),
    };
    let credit_posted = credit_share(h.credit.units(), posted_units, amount);
    let writes =
        hold_writes(c, h, Some(posted_units), &m, (credit_posted != 0).then_some((0, -credit_posted)))?;
    Ok((id, money(posted_units), writes))
}

fn new_hold_id() -> String {
    format!("hld_{}", uuid::Uuid::now_v7().simple())
}

/// Writes the hold `m` moves (pending, or with `posted` already posted and ended), with its
/// movement of every account of its chain and, when `credit` is `(pending, available)`, of
/// the tenant's platform credit: one statement on PostgreSQL ([`crate::sql::rows_after`]).
fn write_hold(
    c: &dyn Tx,
    h: &NewHold,
    posted: Option<i64>,
    m: &Movement,
    credit: Option<(i64, i64)>,
) -> Result<()> {
    let mut writes = hold_writes(c, h, posted, m, credit)?;
    let last = writes.pop().expect("at least the ledger entries");
    let args: Vec<&dyn ToValue> = last.args.iter().map(|a| a.as_ref()).collect();
    crate::sql::rows_after(c, &writes, &last.sql, &args)?;
    Ok(())
}

/// [`write_hold`]'s statements, not yet run, after taking the tenant's lock they need.
fn hold_writes(
    c: &dyn Tx,
    h: &NewHold,
    posted: Option<i64>,
    m: &Movement,
    credit: Option<(i64, i64)>,
) -> Result<Vec<Statement>> {
    crate::audit::activity::lock_tenant(c, m.tenant)?;
    let accounts: Vec<&str> = h.chain.iter().map(ProfileId::as_str).collect();
    let mut writes = vec![hold_row(h, posted, m), m.balances(&accounts)];
    writes.extend(m.days(&accounts));
    writes.extend(credit.map(|(pending, available)| credit_move(m.tenant, pending, available)));
    writes.push(m.entries(&accounts));
    Ok(writes)
}

/// The `UPDATE` of the tenant's platform credit ([`crate::domain::tenants::move_credit`]).
fn credit_move(tenant: &TenantId, pending: i64, available: i64) -> Statement {
    let args: Vec<Box<dyn ToValue>> =
        vec![Box::new(pending), Box::new(available), Box::new(tenant.as_str().to_string())];
    Statement::new(crate::domain::tenants::MOVE_CREDIT, args)
}

/// The `INSERT` of the hold's row.
fn hold_row(h: &NewHold, posted: Option<i64>, m: &Movement) -> Statement {
    let sql = "INSERT INTO holds (id, tenant_id, profile_id, chain, action, amount_units, credit_units, kit_version, status, posted_units, created_at, ended_at, day) \
               VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)";
    let chain = h.chain.iter().map(ProfileId::as_str).collect::<Vec<_>>().join(",");
    let status = if posted.is_some() { "posted" } else { "pending" };
    let args: Vec<Box<dyn ToValue>> = vec![
        Box::new(m.hold.to_string()),
        Box::new(h.tenant.as_str().to_string()),
        Box::new(h.chain[0].as_str().to_string()),
        Box::new(chain),
        Box::new(h.action.clone()),
        Box::new(h.amount.units()),
        Box::new(h.credit.units()),
        Box::new(i64::from(h.kit_version)),
        Box::new(status.to_string()),
        Box::new(posted),
        Box::new(m.at.to_string()),
        Box::new(posted.map(|_| m.at.to_string())),
        Box::new(h.day.clone()),
    ];
    Statement::new(sql, args)
}

/// Platform credit is consumed in proportion to what was posted; the rest is released.
/// Computed in 128 bits: the product of two amounts does not fit in 64.
fn credit_share(credit: i64, posted: i64, amount: i64) -> i64 {
    if amount == 0 {
        return 0;
    }
    let share = i128::from(credit) * i128::from(posted) / i128::from(amount);
    i64::try_from(share).expect("a share of the credit is at most the credit")
}

/// One move of a hold's amount: the same entry for every account in the hold's chain.
struct Movement<'a> {
    tenant: &'a TenantId,
    hold: &'a str,
    action: &'a str,
    kit_version: u32,
    /// `hold`, `post`, `void` or `expire`.
    kind: &'a str,
    pending_delta: i64,
    posted_delta: i64,
    at: &'a str,
    /// The local day the hold counts toward; `None` for holds from before periods.
    day: Option<&'a str>,
}

impl Movement<'_> {
    /// The `UPDATE` of the accounts' running totals.
    fn balances(&self, accounts: &[&str]) -> Statement {
        let marks = vec!["?"; accounts.len()].join(", ");
        let sql = format!(
            "UPDATE budget_accounts SET pending_units = pending_units + ?, posted_units = posted_units + ? WHERE profile_id IN ({marks})"
        );
        let mut args: Vec<Box<dyn ToValue>> = vec![Box::new(self.pending_delta), Box::new(self.posted_delta)];
        args.extend(accounts.iter().map(|a| Box::new(a.to_string()) as Box<dyn ToValue>));
        Statement::new(sql, args)
    }

    /// The move of the accounts' totals on the hold's day, if it has one: an upsert when a
    /// hold is made (nothing negative), an update when it ends (its day's rows exist, and
    /// a CHECK would refuse the negative row an upsert proposes).
    fn days(&self, accounts: &[&str]) -> Option<Statement> {
        let day = self.day?;
        if self.pending_delta < 0 || self.posted_delta < 0 {
            let marks = vec!["?"; accounts.len()].join(", ");
            let sql = format!(
                "UPDATE budget_days SET pending_units = pending_units + ?, posted_units = posted_units + ? WHERE day = ? AND profile_id IN ({marks})"
            );
            let mut args: Vec<Box<dyn ToValue>> =
                vec![Box::new(self.pending_delta), Box::new(self.posted_delta), Box::new(day.to_string())];
            args.extend(accounts.iter().map(|a| Box::new(a.to_string()) as Box<dyn ToValue>));
            return Some(Statement::new(sql, args));
        }
        let rows = vec!["(?, ?, ?, ?)"; accounts.len()].join(", ");
        let sql = format!(
            "INSERT INTO budget_days AS d (profile_id, day, pending_units, posted_units) VALUES {rows} \
             ON CONFLICT (profile_id, day) DO UPDATE SET pending_units = d.pending_units + excluded.pending_units, \
             posted_units = d.posted_units + excluded.posted_units"
        );
        let mut args: Vec<Box<dyn ToValue>> = Vec::with_capacity(4 * accounts.len());
        for account in accounts {
            args.extend([
                Box::new(account.to_string()) as Box<dyn ToValue>,
                Box::new(day.to_string()),
                Box::new(self.pending_delta),
                Box::new(self.posted_delta),
            ]);
        }
        Some(Statement::new(sql, args))
    }

    /// The `INSERT` of one ledger entry per account.
    fn entries(&self, accounts: &[&str]) -> Statement {
        let rows = vec!["(?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"; accounts.len()].join(", ");
        let sql = format!(
            "INSERT INTO ledger_entries (tenant_id, account_id, hold_id, action, kit_version, kind, pending_delta, posted_delta, created_at, day) VALUES {rows}"
        );
        let mut args: Vec<Box<dyn ToValue>> = Vec::with_capacity(10 * accounts.len());
        for account in accounts {
            args.extend([
                Box::new(self.tenant.as_str().to_string()) as Box<dyn ToValue>,
                Box::new(account.to_string()),
                Box::new(self.hold.to_string()),
                Box::new(self.action.to_string()),
                Box::new(i64::from(self.kit_version)),
                Box::new(self.kind.to_string()),
                Box::new(self.pending_delta),
                Box::new(self.posted_delta),
                Box::new(self.at.to_string()),
                Box::new(self.day.map(str::to_string)),
            ]);
        }
        Statement::new(sql, args)
    }

    /// Moves each account's balances (and its day's, if the hold has a day) and appends its
    /// ledger entry: two or three statements whatever the chain's length, under the tenant's
    /// lock.
    fn apply(&self, c: &dyn Tx, accounts: &[&str]) -> Result<()> {
        crate::audit::activity::lock_tenant(c, self.tenant)?;
        let days = self.days(accounts);
        for s in std::iter::once(self.balances(accounts)).chain(days).chain([self.entries(accounts)]) {
            c.exec(&s.sql, &s.args.iter().map(|v| v.as_ref()).collect::<Vec<_>>())?;
        }
        Ok(())
    }
}

/// Ends a pending hold exactly once. `posted` is what is posted (clamped to the held
/// amount) for [`HoldEnd::Posted`], and ignored otherwise. The entries carry `decided_under`
/// (the kit version of the decision that ended it, such as an approval's) or else the
/// hold's own. Returns the amount posted.
pub(crate) fn end(
    c: &dyn Tx,
    tenant: &TenantId,
    hold: &str,
    how: HoldEnd,
    posted: Money,
    decided_under: Option<u32>,
) -> Result<Money> {
    // The tenant's lock first, then the hold's row (the lock order): a second ending waits
    // here, then finds the hold ended.
    crate::audit::activity::lock_tenant(c, tenant)?;
    let sql = locked!(
        c,
        "SELECT tenant_id, chain, action, amount_units, credit_units, kit_version, day FROM holds WHERE id = ? AND status = 'pending'"
    );
    let row = c.row(sql, &[&hold])?;
    let Some(r) = row else {
        return Err(Error::Conflict {
            code: "hold_already_ended",
            message: format!("hold {hold} has already ended"),
        });
    };
    let (stored_tenant, chain, action): (String, String, String) = (r.get(0)?, r.get(1)?, r.get(2)?);
    if stored_tenant != tenant.as_str() {
        return Err(Error::internal("hold_tenant_mismatch", format!("hold {hold} is not this tenant's")));
    }
    let (amount, credit, kit_version): (i64, i64, i64) = (r.get(3)?, r.get(4)?, r.get(5)?);
    let day: Option<String> = r.get(6)?;
    let posted_units = if how == HoldEnd::Posted { posted.units().min(amount) } else { 0 };
    let now = stored::ts(Utc::now());
    let changed = c.exec(
        "UPDATE holds SET status = ?, posted_units = ?, ended_at = ? WHERE id = ? AND status = 'pending'",
        &[&how.as_str(), &posted_units, &now, &hold],
    )?;
    // The status guard makes a second ending impossible; assert it where it holds.
    assert_eq!(changed, 1, "a pending hold read in this transaction ends exactly once");
    let kit_version = decided_under.unwrap_or_else(|| u32::try_from(kit_version).unwrap_or(0));
    let m = Movement {
        tenant,
        hold,
        action: &action,
        kit_version,
        kind: how.entry_kind(),
        pending_delta: -amount,
        posted_delta: posted_units,
        at: &now,
        day: day.as_deref(),
    };
    m.apply(c, &chain.split(',').collect::<Vec<_>>())?;
    let credit_posted = credit_share(credit, posted_units, amount);
    if credit != 0 || credit_posted != 0 {
        crate::domain::tenants::move_credit(c, tenant, -credit, -credit_posted)?;
    }
    Ok(money(posted_units))
}

/// One account's spend, for the budget view and the console.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Budget {
    pub profile: ProfileId,
    pub totals: Totals,
    pub hard_cap: Option<Money>,
    pub soft_cap: Option<Money>,
    /// The shared pools above this profile, nearest first.
    pub pools: Vec<(ProfileId, Totals, Option<Money>)>,
    /// The tenant's time zone, in which periods are counted.
    pub time_zone: String,
    /// Each period limit of the profile's kit, in its current period.
    pub periods: Vec<crate::domain::periods::PeriodStanding>,
}

/// What a consistency check found wrong, if anything.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct InvariantReport {
    pub violations: Vec<String>,
}

/// One ledger entry as read back: deltas are signed unit counts.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct LedgerEntry {
    pub seq: i64,
    pub hold_id: String,
    pub action: String,
    pub kit_version: i64,
    pub kind: String,
    pub pending_delta: String,
    pub posted_delta: String,
    pub created_at: DateTime<Utc>,
    /// The tenant-local day (`YYYY-MM-DD`) the entry's hold counts toward in every budget
    /// period; none for holds from before periods.
    pub day: Option<String>,
}

/// The columns a [`LedgerEntry`] is read from, in order.
pub(crate) const ENTRY_COLUMNS: &str =
    "seq, hold_id, action, kit_version, kind, pending_delta, posted_delta, created_at, day";

/// A row of [`ENTRY_COLUMNS`].
impl crate::sql::FromRow for LedgerEntry {
    fn from_row(r: &crate::sql::Row) -> ::store::Result<LedgerEntry> {
        Ok(LedgerEntry {
            seq: r.get(0)?,
            hold_id: r.get(1)?,
            action: r.get(2)?,
            kit_version: r.get(3)?,
            kind: r.get(4)?,
            pending_delta: signed_amount(r.get(5)?),
            posted_delta: signed_amount(r.get(6)?),
            created_at: r.get(7)?,
            day: r.get(8)?,
        })
    }
}

/// Which entries of one account to read: a period and a keyset cursor.
#[derive(Clone, Debug, Default)]
pub struct LedgerQuery {
    pub from: Option<DateTime<Utc>>,
    pub to: Option<DateTime<Utc>>,
    /// Entries after this sequence number (the previous page's last).
    pub after: Option<i64>,
    pub limit: Option<i64>,
}

/// The most entries one ledger page holds, and the most one export holds.
pub const MAX_LEDGER_PAGE: i64 = 1_000;
pub const MAX_LEDGER_EXPORT: i64 = 100_000;

/// Entries as CSV, one line each after a header: what the ledger page shows, for finance.
pub fn to_csv(entries: &[LedgerEntry]) -> String {
    let field = crate::csv::field;
    let mut out = String::from(
        "seq,created_at,action,kind,pending_delta,posted_delta,hold_id,kit_version,period_day\n",
    );
    for e in entries {
        out.push_str(&format!(
            "{},{},{},{},{},{},{},{},{}\n",
            e.seq,
            e.created_at.to_rfc3339(),
            field(&e.action),
            e.kind,
            e.pending_delta,
            e.posted_delta,
            e.hold_id,
            e.kit_version,
            e.day.as_deref().unwrap_or("")
        ));
    }
    out
}

/// A signed amount in the one money format: `-0.0025`, `12.50`.
pub fn signed_amount(units: i64) -> String {
    let m = Money::from_units(units.unsigned_abs().min(i64::MAX as u64) as i64).unwrap_or(Money::ZERO);
    if units < 0 { format!("-{}", m.to_decimal_string()) } else { m.to_decimal_string() }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use policy::SubjectStatus;

    use super::*;
    use crate::domain::profiles::{Profile, RuntimeState, insert_profile};
    use crate::domain::tenants::{Tenant, insert_tenant};
    use crate::ids::KeyId;
    use crate::testing::{TestDb, held_open};

    const COST: i64 = 7;
    const CAP: i64 = 100;

    fn profile(tenant: &TenantId, name: &str, parent: Option<&ProfileId>) -> Profile {
        Profile {
            id: ProfileId::generate(),
            tenant_id: tenant.clone(),
            name: name.into(),
            owner: None,
            parent: parent.cloned(),
            kit_name: "Default".into(),
            status: SubjectStatus::Active,
            runtime: RuntimeState::Running,
            runtime_reason: None,
            created_at: Utc::now(),
        }
    }

    /// A tenant with a root profile and two sub-agents: their chains, leaf first.
    async fn tree(db: &TestDb) -> (TenantId, [Vec<ProfileId>; 2]) {
        let t = Tenant {
            id: TenantId::generate(),
            name: "Acme".into(),
            credit: Money::ZERO,
            created_at: Utc::now(),
        };
        let (root, a, b) =
            (profile(&t.id, "root", None), profile(&t.id, "a", None), profile(&t.id, "b", None));
        let (a, b) =
            (Profile { parent: Some(root.id.clone()), ..a }, Profile { parent: Some(root.id.clone()), ..b });
        let chains = [vec![a.id.clone(), root.id.clone()], vec![b.id.clone(), root.id.clone()]];
        let tenant = t.clone();
        db.run(move |tx| {
            insert_tenant(tx, &tenant, &Kit::default_kit(), &KeyId::generate(), &crate::secrets::mint_key())?;
            [&root, &a, &b].into_iter().try_for_each(|p| insert_profile(tx, p))
        })
        .await
        .unwrap();
        (t.id, chains)
    }

    /// A hold of [`COST`] on `chain`, with no platform credit.
    fn charge(tenant: &TenantId, chain: &[ProfileId]) -> NewHold {
        NewHold {
            tenant: tenant.clone(),
            chain: chain.to_vec(),
            action: "cards.charge".into(),
            amount: Money::from_units(COST).unwrap(),
            credit: Money::ZERO,
            kit_version: 1,
            day: "2026-12-05".into(),
        }
    }

    /// Reserves when the root's posted, pending and this cost stay within [`CAP`]: a decision
    /// on totals read in the same job, as the pipeline makes it.
    fn reserve_within_cap(tx: &dyn Tx, h: &NewHold) -> Result<Option<String>> {
        let root = *totals(tx, &h.chain)?.last().expect("a chain has a root");
        if root.posted.units() + root.pending.units() + h.amount.units() > CAP {
            return Ok(None);
        }
        reserve(tx, h).map(Some)
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn racing_reservations_stay_within_the_cap_and_holds_end_once_on_both_engines() {
        for db in TestDb::both().await {
            let db = Arc::new(db);
            let (tenant, chains) = tree(&db).await;
            let reserves = (0..32).map(|i| {
                let h = charge(&tenant, &chains[i % 2]);
                let db = db.clone();
                tokio::spawn(async move { db.run(held_open(move |tx| reserve_within_cap(tx, &h))).await })
            });
            let mut holds = Vec::new();
            for r in reserves.collect::<Vec<_>>() {
                holds.extend(r.await.unwrap().unwrap());
            }
            assert_eq!(holds.len() as i64, CAP / COST, "{}: as many holds as the cap allows", db.name());
            let ends = holds.iter().flat_map(|h| [h.clone(), h.clone()]).map(|h| {
                let (db, tenant) = (db.clone(), tenant.clone());
                let posted = Money::from_units(COST).unwrap();
                tokio::spawn(async move {
                    db.run(held_open(move |tx| end(tx, &tenant, &h, HoldEnd::Posted, posted, None))).await
                })
            });
            let mut ended = 0;
            for e in ends.collect::<Vec<_>>() {
                match e.await.unwrap() {
                    Ok(_) => ended += 1,
                    Err(e) => assert_eq!(e.code(), "hold_already_ended", "{}", db.name()),
                }
            }
            assert_eq!(ended, holds.len(), "{}: each hold ends exactly once", db.name());
            let root = chains[0][1].clone();
            let totals = db.run(move |tx| totals(tx, std::slice::from_ref(&root))).await.unwrap()[0];
            assert_eq!(
                (totals.posted.units(), totals.pending.units()),
                (holds.len() as i64 * COST, 0),
                "{}",
                db.name()
            );
            let unbalanced = db
                .run(|tx| {
                    let q = "SELECT a.profile_id FROM budget_accounts a LEFT JOIN ( \
                               SELECT account_id, CAST(SUM(pending_delta) AS BIGINT) AS pending, CAST(SUM(posted_delta) AS BIGINT) AS posted \
                               FROM ledger_entries GROUP BY account_id) e ON e.account_id = a.profile_id \
                             WHERE a.pending_units != COALESCE(e.pending, 0) OR a.posted_units != COALESCE(e.posted, 0)";
                    Ok(tx.rows(q, &[])?.len())
                })
                .await
                .unwrap();
            assert_eq!(unbalanced, 0, "{}: the entries sum to every account's totals", db.name());
        }
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn two_sweeps_at_once_end_each_lapsed_hold_once_on_both_engines() {
        for db in TestDb::both().await {
            let db = Arc::new(db);
            let (tenant, chains) = tree(&db).await;
            for i in 0..20 {
                let h = charge(&tenant, &chains[i % 2]);
                db.run(move |tx| reserve(tx, &h)).await.unwrap();
            }
            // No lease was taken, so every hold has lapsed a minute from now.
            let later = Utc::now() + chrono::Duration::seconds(60);
            let sweeps: Vec<_> = (0..2)
                .map(|_| {
                    let db = db.clone();
                    tokio::spawn(async move {
                        db.run(held_open(move |tx| {
                            crate::domain::sweep::sweep_once(tx, crate::domain::sweep::Now::at(later))
                        }))
                        .await
                    })
                })
                .collect();
            let mut ended = 0;
            for s in sweeps {
                ended += s.await.unwrap().expect("a sweep never trips over another").holds_expired;
            }
            assert_eq!(ended, 20, "{}: every lapsed hold ended, each by one sweep", db.name());
            let root = chains[0][1].clone();
            let totals = db.run(move |tx| totals(tx, std::slice::from_ref(&root))).await.unwrap()[0];
            assert_eq!((totals.posted, totals.pending), (Money::ZERO, Money::ZERO), "{}", db.name());
        }
    }
}
