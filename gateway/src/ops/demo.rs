//! The demo tenant, seeded on the first start of an empty database so that every console
//! view has something real to show. It grows with the schema.
//!
//! Guarantee: seeding happens only when there are no tenants at all, so it never touches a
//! database that holds real data, and a restart never seeds twice.

use policy::{Kit, Money};
use serde_json::json;

use crate::Gateway;
use crate::domain::calls::Answer;
use crate::domain::principal::Subject;
use crate::domain::users::Role;
use crate::error::Result;
use crate::ids::TenantId;
use crate::secrets;

/// What the operator may fix in advance instead of having it generated.
#[derive(Clone, Debug, Default)]
pub struct DemoOptions {
    pub admin_password: Option<String>,
    pub company_key: Option<String>,
}

/// Credentials to print once. A field is `None` when the operator supplied it.
#[derive(Clone, Debug)]
pub struct DemoCredentials {
    pub tenant: TenantId,
    pub tenant_name: String,
    pub admin_username: String,
    pub generated_admin_password: Option<String>,
    pub generated_company_key: Option<String>,
}

pub const DEMO_TENANT: &str = "Acme Robotics";
pub const DEMO_ADMIN: &str = "admin";
/// The demo's single-role console users; they share the admin's password.
pub const DEMO_ROLE_USERS: [(&str, Role); 3] =
    [("approver", Role::Approver), ("reviewer", Role::Reviewer), ("finance", Role::Finance)];

/// The demo's procurement kit: cards at two suppliers, capped, with approvals above $25.
pub const PROCUREMENT_KIT: &str = r#"{
  "name": "Procurement",
  "primitives": ["cards", "email", "web", "search", "llm"],
  "can": [
    {"action": "cards.charge", "effect": "allow", "max_amount": "200.00", "merchants": ["acme-supplies", "globex-parts"]},
    {"action": "email.send", "effect": "allow", "recipients": ["orders@acme-supplies.test", "ap@acme.test"]}
  ],
  "limits": {
    "budget": {"hard_cap": "40.00", "soft_cap": "30.00"},
    "approve": {"above": "25.00", "always": ["cards.refund"]}
  }
}"#;

impl Gateway {
    /// Seeds the demo tenant if the database has no tenant yet. Returns what to print.
    pub async fn seed_demo_if_empty(&self, opts: &DemoOptions) -> Result<Option<DemoCredentials>> {
        if !self.tenants().await?.is_empty() {
            return Ok(None);
        }
        let (tenant, key) =
            self.create_tenant(DEMO_TENANT, Money::dollars(250), opts.company_key.as_deref()).await?;
        let generated_password = opts.admin_password.is_none().then(secrets::random_password);
        let password = opts.admin_password.clone().or_else(|| generated_password.clone()).unwrap_or_default();
        let admin = self.create_user(&tenant.id, DEMO_ADMIN, &password, &Role::ALL).await?;
        // One user per role, with the same password, so each view can be tried as its role.
        let mut reviewer = None;
        for (name, role) in DEMO_ROLE_USERS {
            let user = self.create_user(&tenant.id, name, &password, &[role]).await?;
            if role == Role::Reviewer {
                reviewer = Some(user);
            }
        }

        let mut kit = Kit::from_json(PROCUREMENT_KIT).expect("the demo kit is valid");
        let v1 = self.save_kit(&tenant.id, kit.clone(), None, DEMO_ADMIN).await?;
        kit.limits.budget.hard_cap = Some(Money::dollars(50));
        kit.limits.budget.soft_cap = Some(Money::dollars(40));
        self.save_kit(&tenant.id, kit, Some(v1.kit.version), DEMO_ADMIN).await?;

        let buyer =
            self.create_profile(&tenant.id, "procurement-bot", Some(&admin.id), None, "Procurement").await?;
        self.create_profile(&tenant.id, "receipts-clerk", Some(&admin.id), Some(&buyer.id), "Procurement")
            .await?;
        let mailer =
            self.create_profile(&tenant.id, "support-mailer", Some(&admin.id), None, "Default").await?;
        // The researcher may also write to the brain, so its findings become proposals.
        let mut research = Kit::default_kit();
        research.name = "Research".into();
        research.primitives = policy::Primitive::ALL.into_iter().collect();
        self.save_kit(&tenant.id, research, None, DEMO_ADMIN).await?;
        let crawler = self.create_profile(&tenant.id, "research-crawler", None, None, "Research").await?;

        // A little real traffic, so the inbox, spend and activity views have rows to show:
        // reads and a mail that run, a card charge that runs, one that parks for approval, one
        // refused by the merchant list, and a brain query the Default kit refuses.
        let t = &tenant.id;
        for (profile, action, args) in [
            (&crawler.id, "web.read", json!({"url": "https://docs.example.test/pricing"})),
            (&crawler.id, "web.read", json!({"url": "https://docs.example.test/terms"})),
            (&mailer.id, "email.send", json!({"to": "customer@example.test", "subject": "Your ticket"})),
            (&mailer.id, "brain.query", json!({"q": "refund policy"})),
            (
                &buyer.id,
                "cards.charge",
                json!({"amount": "12.00", "merchant": "acme-supplies", "memo": "cable ties"}),
            ),
            (
                &buyer.id,
                "cards.charge",
                json!({"amount": "30.00", "merchant": "globex-parts", "memo": "servo motors"}),
            ),
            (&buyer.id, "cards.charge", json!({"amount": "5.00", "merchant": "unknown-shop"})),
        ] {
            let (key, _) = self.issue_key(t, profile, DEMO_ADMIN).await?;
            let subject = Subject::of(t, profile, key.id);
            self.perform_as(&subject, action.to_string(), args, None).await?;
        }

        // A research run's findings, waiting in the proposal queue.
        let (research_key, _) = self.issue_key(t, &crawler.id, DEMO_ADMIN).await?;
        let researcher = Subject::of(t, &crawler.id, research_key.id);
        let claim = |object_type: &str, text: &str| crate::domain::brain::ClaimInput {
            object_type: object_type.into(),
            content: json!({ "claim": text }),
        };
        let submitted = self
            .submit_writeback(
                &researcher,
                crate::domain::brain::WritebackInput {
                    run_id: "demo-run-1".into(),
                    source: "research-crawler".into(),
                    claims: vec![
                        claim("fact", "Globex Parts ships servo motors in 3 business days"),
                        claim("preference", "Prefer acme-supplies for cable ties under $20"),
                        claim("fact", "Invoices from acme-supplies are due net 30"),
                    ],
                },
            )
            .await?;
        // The reviewer already accepted one, so the company's beliefs are not empty.
        let third = match &submitted.body {
            Answer::Writeback(w) => w.writeback.proposals.get(2).map(|p| p.id.as_str()),
            _ => None,
        };
        if let (Some(reviewer), Some(pid)) = (reviewer, third) {
            let by =
                crate::domain::brain::Decider::Human(crate::domain::principal::Human::in_console(&reviewer));
            self.decide_proposal(
                t,
                pid,
                &by,
                crate::domain::brain::Decision::Accept,
                "matches the signed contract",
            )
            .await?;
        }

        tracing::info!(tenant = %tenant.id, "demo tenant seeded");
        Ok(Some(DemoCredentials {
            tenant: tenant.id,
            tenant_name: tenant.name,
            admin_username: admin.username,
            generated_admin_password: generated_password,
            generated_company_key: opts.company_key.is_none().then_some(key.token),
        }))
    }
}
