//! The one place a decision's input is put together, for every path that asks `policy` to
//! decide: a call's reservation and the brain's gate (on [`crate::domain::reserve::Facts`] read
//! in their job), an approved call decided again (on the same facts with its own hold given
//! back), and replay and shadow (on the facts a call recorded). What a path leaves out is a
//! named choice ([`Rates`]), never an empty slice passed in silence.

use policy::{ActionRequest, BudgetView, DecisionInput, Kit, Money, PeriodView, RateView, SubjectStatus};

/// The rate windows a decision counts, or why it counts none.
#[derive(Clone, Copy, Debug)]
pub enum Rates<'a> {
    /// The call's own windows with the calls already in them.
    Counted(&'a [RateView]),
    /// None: an approved call was counted in its windows when it parked, and its approval
    /// is no second call.
    CountedWhenParked,
    /// None: a brain writeback recorded before brain tools were decided as every call is
    /// (replay decides it as it was decided then).
    NotDecidedThen,
}

impl<'a> Rates<'a> {
    fn views(self) -> &'a [RateView] {
        match self {
            Rates::Counted(v) => v,
            Rates::CountedWhenParked | Rates::NotDecidedThen => &[],
        }
    }
}

/// The standing a decision reads besides the kit and the call: the chain's status, each
/// level's budget, the company's credit and the period limits in the call's periods.
#[derive(Clone, Copy, Debug)]
pub struct Standing<'a> {
    pub status: SubjectStatus,
    pub budgets: &'a [BudgetView],
    pub credit: Money,
    pub periods: &'a [PeriodView],
}

/// `policy`'s input for `action` under `kit` on `standing`, counting `rates`.
pub fn input<'a>(
    kit: &'a Kit,
    action: ActionRequest<'a>,
    standing: Standing<'a>,
    rates: Rates<'a>,
) -> DecisionInput<'a> {
    DecisionInput {
        subject: standing.status,
        kit,
        action,
        budgets: standing.budgets,
        company_credit: standing.credit,
        periods: standing.periods,
        rates: rates.views(),
    }
}
