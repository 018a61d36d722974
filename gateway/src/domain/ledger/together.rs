//! A batch's ledger writes, together: on PostgreSQL a batch of a tenant's governed calls keeps
//! each call's writes ([`crate::domain::reserve::book`]) and sends them at once. This file
//! makes one call's writes without sending them ([`post_later`]) and moves each account, day
//! and credit row once by the sum of every kept call's moves ([`moved_together`]).
//!
//! Guarantees: the rows end as [`super::post_now`]'s writes, one call after another, would
//! leave them; every call's hold and ledger entries are its own rows, as there.

use std::collections::BTreeMap;

use chrono::{NaiveDate, Utc};
use policy::Money;

use super::{Movement, NewHold, credit_move, credit_share, hold_row, money, new_hold_id};
use crate::ids::{ProfileId, TenantId};
use crate::sql::{Statement, ToValue};
use crate::stored;

/// How one call moves its tenant's totals: each account of its chain and its day by
/// `pending` and `posted`, the credit by `(pending, available)`, and each rate window it
/// counts in (key, when the window ends) by one.
#[derive(Clone, Debug)]
pub(crate) struct Moves {
    pub tenant: TenantId,
    pub accounts: Vec<ProfileId>,
    pub pending: i64,
    pub posted: i64,
    pub day: Option<NaiveDate>,
    pub credit: Option<(i64, i64)>,
    pub windows: Vec<(String, i64)>,
}

/// [`super::post_now`], not sent: the hold id, the amount posted, the hold's row and ledger
/// entries to insert, and the moves of the totals, for [`moved_together`]. The caller holds
/// the tenant's lock (a batch of its calls does).
pub(crate) fn post_later(
    h: &NewHold,
    posted: Money,
    day: NaiveDate,
) -> (String, Money, Vec<Statement>, Moves) {
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
    let accounts: Vec<&str> = h.chain.iter().map(ProfileId::as_str).collect();
    let inserts = vec![hold_row(h, Some(posted_units), &m), m.entries(&accounts)];
    let moves = Moves {
        tenant: h.tenant.clone(),
        accounts: h.chain.clone(),
        pending: 0,
        posted: posted_units,
        day: Some(day),
        credit: (credit_posted != 0).then_some((0, -credit_posted)),
        windows: Vec::new(),
    };
    (id, money(posted_units), inserts, moves)
}

/// The statements that move every account, day and credit row by the sum of `moves`: one
/// `UPDATE` of the accounts, one upsert of the days, one `UPDATE` per tenant's credit. For
/// PostgreSQL (a `VALUES` list with named columns), as `WITH` parts of one statement: each
/// row is moved once, as a statement may move a row only once.
pub(crate) fn moved_together(moves: &[Moves]) -> Vec<Statement> {
    let mut accounts: BTreeMap<&str, (i64, i64)> = BTreeMap::new();
    let mut days: BTreeMap<(&str, NaiveDate), (i64, i64)> = BTreeMap::new();
    let mut credit: BTreeMap<&TenantId, (i64, i64)> = BTreeMap::new();
    let add = |sum: &mut (i64, i64), (a, b): (i64, i64)| *sum = (sum.0 + a, sum.1 + b);
    for m in moves {
        for a in &m.accounts {
            add(accounts.entry(a.as_str()).or_default(), (m.pending, m.posted));
            if let Some(day) = m.day {
                add(days.entry((a.as_str(), day)).or_default(), (m.pending, m.posted));
            }
        }
        if let Some(c) = m.credit {
            add(credit.entry(&m.tenant).or_default(), c);
        }
    }
    let mut out = Vec::new();
    if !accounts.is_empty() {
        out.push(accounts_moved(&accounts));
    }
    if !days.is_empty() {
        out.push(days_moved(&days));
    }
    out.extend(credit.into_iter().map(|(t, (pending, available))| credit_move(t, pending, available)));
    out
}

/// `inserts` (the kept calls' [`post_later`] rows) as one multi-row `INSERT` per table: the
/// rows of statements that insert into the same columns, in order. One part per table plans
/// and runs in a fraction of one part per row.
pub(crate) fn inserted_together(inserts: Vec<Statement>) -> Vec<Statement> {
    // Each statement head (the part before its rows), its rows and their arguments.
    type Rows = (String, Vec<String>, Vec<Box<dyn ToValue>>);
    let mut out: Vec<Rows> = Vec::new();
    for s in inserts {
        let (head, rows) = s.sql.split_once(" VALUES ").expect("an INSERT of rows");
        match out.iter_mut().find(|(h, ..)| h == head) {
            Some((_, all, args)) => {
                all.push(rows.to_string());
                args.extend(s.args);
            }
            None => out.push((head.to_string(), vec![rows.to_string()], s.args)),
        }
    }
    out.into_iter()
        .map(|(head, rows, args)| Statement::new(format!("{head} VALUES {}", rows.join(", ")), args))
        .collect()
}

fn accounts_moved(accounts: &BTreeMap<&str, (i64, i64)>) -> Statement {
    let rows = vec!["(?, ?, ?)"; accounts.len()].join(", ");
    let sql = format!(
        "UPDATE budget_accounts AS a SET pending_units = a.pending_units + v.pending, posted_units = a.posted_units + v.posted \
         FROM (VALUES {rows}) AS v (id, pending, posted) WHERE a.profile_id = v.id"
    );
    let mut args: Vec<Box<dyn ToValue>> = Vec::with_capacity(3 * accounts.len());
    for (id, (pending, posted)) in accounts {
        args.extend([Box::new(id.to_string()) as Box<dyn ToValue>, Box::new(*pending), Box::new(*posted)]);
    }
    Statement::new(sql, args)
}

/// The days' upsert. A kept call only posts (its moves are never negative), so an upsert
/// never proposes a negative row.
fn days_moved(days: &BTreeMap<(&str, NaiveDate), (i64, i64)>) -> Statement {
    let rows = vec!["(?, ?, ?, ?)"; days.len()].join(", ");
    let sql = format!(
        "INSERT INTO budget_days AS d (profile_id, day, pending_units, posted_units) VALUES {rows} \
         ON CONFLICT (profile_id, day) DO UPDATE SET pending_units = d.pending_units + excluded.pending_units, \
         posted_units = d.posted_units + excluded.posted_units"
    );
    let mut args: Vec<Box<dyn ToValue>> = Vec::with_capacity(4 * days.len());
    for ((id, day), (pending, posted)) in days {
        args.extend([
            Box::new(id.to_string()) as Box<dyn ToValue>,
            Box::new(day.to_string()),
            Box::new(*pending),
            Box::new(*posted),
        ]);
    }
    Statement::new(sql, args)
}
