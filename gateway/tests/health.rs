//! The health figures (issue #36) one function reads for the console's overview (one tenant)
//! and for the scrape's gauges (every tenant): holds pending and their money, approvals
//! waiting by age, budgets near their cap, connector errors in the last hour. One tenant's
//! figures never count another's; every tenant's are the sum. On both engines.

mod support;

use gateway::domain::calls::{ActionCall, Disposition};
use policy::{Kit, Money};
use serde_json::json;

const KIT: &str = r#"{"name":"Parks","primitives":["cards","email"],
    "limits":{"budget":{"hard_cap":"100"},"approve":{"above":"10"}}}"#;

#[tokio::test]
async fn one_tenants_figures_never_count_anothers_and_all_are_the_sum() {
    let w = support::world().await;
    let kit = w.kit(KIT).await;
    let a = w.agent("a", &kit, None).await;
    let r = w.call(&a, "cards.charge", json!({"amount": "50.00", "merchant": "acme"})).await;
    assert_eq!(r.disposition, Disposition::Parked);
    w.gw.sandbox().fail_next(1);
    let r = w.call(&a, "email.send", json!({"to": "x@example.com", "body": "hi"})).await;
    assert_eq!(r.disposition, Disposition::Unavailable);

    let (other, _) = w.gw.create_tenant("Other", Money::dollars(100), None).await.unwrap();
    w.gw.save_kit(&other.id, Kit::from_json(KIT).unwrap(), None, "test").await.unwrap();
    let p = w.gw.create_profile(&other.id, "b", None, None, "Parks").await.unwrap();
    let (_, key) = w.gw.issue_key(&other.id, &p.id, "test").await.unwrap();
    let call = ActionCall {
        token: key.token,
        action: "cards.charge".into(),
        args: json!({"amount": "20.00", "merchant": "acme"}),
        idempotency_key: None,
    };
    assert_eq!(w.gw.perform(call).await.unwrap().disposition, Disposition::Parked);

    let units = |d: i64| d * policy::money::UNITS_PER_DOLLAR;
    let mine = w.gw.health_figures(Some(&w.tenant)).await.unwrap();
    assert_eq!((mine.holds_pending, mine.holds_pending_units), (1, units(50)));
    assert_eq!(mine.approvals_by_age, vec![1, 0, 0, 0, 0]);
    assert!(mine.oldest_approval_secs.is_some_and(|s| s < 60), "{mine:?}");
    assert_eq!((mine.connector_errors_last_hour, mine.budgets_near_cap), (1, 0));
    assert!(mine.outbox.iter().all(|o| o.depth == 0 && o.oldest_secs.is_none()), "{mine:?}");
    let theirs = w.gw.health_figures(Some(&other.id)).await.unwrap();
    assert_eq!((theirs.holds_pending, theirs.holds_pending_units), (1, units(20)));
    assert_eq!((theirs.connector_errors_last_hour, theirs.approvals_by_age[0]), (0, 1));
    let all = w.gw.health_figures(None).await.unwrap();
    assert_eq!((all.holds_pending, all.holds_pending_units), (2, units(70)));
    assert_eq!((all.connector_errors_last_hour, all.approvals_by_age[0]), (1, 2));

    // $45 more held brings the first budget to 95% of its $100 cap: near it.
    let r = w.call(&a, "cards.charge", json!({"amount": "45.00", "merchant": "acme"})).await;
    assert_eq!(r.disposition, Disposition::Parked);
    assert_eq!(w.gw.health_figures(Some(&w.tenant)).await.unwrap().budgets_near_cap, 1);
    assert_eq!(w.gw.health_figures(Some(&other.id)).await.unwrap().budgets_near_cap, 0);
    let scrape = w.gw.scrape().await.unwrap();
    assert!(scrape.contains("\nnaive_holds_pending 3\n"), "{scrape}");
    assert!(scrape.contains("\nnaive_budgets_near_cap 1\n"), "{scrape}");
}
