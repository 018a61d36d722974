//! A fresh gateway on the engine under test (a temporary SQLite file, or a fresh PostgreSQL
//! database with `NAIVE_TEST_ENGINE=postgres`), with one tenant, kits and profiles to act as.
#![allow(dead_code, reason = "each test file uses a different part of this helper")]

use gateway::domain::calls::{ActionCall, ActionResponse};
use gateway::domain::principal::Human;
use gateway::domain::principal::Subject;
use gateway::{Gateway, GatewayConfig, ProfileId, Role, TenantId, UserId};
use policy::{Kit, Money};
use serde_json::Value;

pub struct World {
    pub gw: Gateway,
    pub tenant: TenantId,
    pub owner: Human,
    pub approver: Human,
    pub _dir: tempfile::TempDir,
    pub _cluster: Option<gateway::testing::Cluster>,
}

pub async fn world_with(config: GatewayConfig) -> World {
    let dir = tempfile::tempdir().unwrap();
    let (url, cluster) = gateway::testing::fresh_url(dir.path()).await;
    world_on(&url, config, dir, cluster).await
}

/// A world on SQLite whatever the engine under test: for what only SQLite has (its indexer).
pub async fn sqlite_world() -> World {
    sqlite_world_with(GatewayConfig::default()).await
}

/// [`sqlite_world`] with `config`.
pub async fn sqlite_world_with(config: GatewayConfig) -> World {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("sqlite://{}/t.db", dir.path().display());
    world_on(&url, config, dir, None).await
}

async fn world_on(
    url: &str,
    config: GatewayConfig,
    dir: tempfile::TempDir,
    cluster: Option<gateway::testing::Cluster>,
) -> World {
    let gw = Gateway::open_with(url, config).await.unwrap();
    let (t, _) = gw.create_tenant("Acme", Money::dollars(100), None).await.unwrap();
    let owner =
        gw.create_user(&t.id, "owner", "owner-password", &[Role::Admin, Role::Approver]).await.unwrap();
    let approver = gw.create_user(&t.id, "approver", "approver-password", &[Role::Approver]).await.unwrap();
    World {
        gw,
        tenant: t.id,
        owner: Human::in_console(&owner),
        approver: Human::in_console(&approver),
        _dir: dir,
        _cluster: cluster,
    }
}

pub async fn world() -> World {
    world_with(GatewayConfig::default()).await
}

/// An agent: its profile, key token and subject.
#[derive(Clone)]
pub struct Agent {
    pub profile: ProfileId,
    pub token: String,
    pub subject: Subject,
}

impl World {
    pub async fn kit(&self, json: &str) -> String {
        let kit = Kit::from_json(json).unwrap();
        let name = kit.name.clone();
        self.gw.save_kit(&self.tenant, kit, None, "test").await.unwrap();
        name
    }

    pub async fn agent(&self, name: &str, kit: &str, parent: Option<&ProfileId>) -> Agent {
        self.agent_owned(name, kit, parent, Some(&self.owner.user_id.clone())).await
    }

    pub async fn agent_owned(
        &self,
        name: &str,
        kit: &str,
        parent: Option<&ProfileId>,
        owner: Option<&UserId>,
    ) -> Agent {
        let p = self.gw.create_profile(&self.tenant, name, owner, parent, kit).await.unwrap();
        let (_, key) = self.gw.issue_key(&self.tenant, &p.id, "test").await.unwrap();
        let subject = self.gw.authenticate(&key.token).await.unwrap().unwrap();
        Agent { profile: p.id, token: key.token, subject }
    }

    pub async fn call(&self, a: &Agent, action: &str, args: Value) -> ActionResponse {
        self.call_idem(a, action, args, None).await.unwrap()
    }

    pub async fn call_idem(
        &self,
        a: &Agent,
        action: &str,
        args: Value,
        idem: Option<&str>,
    ) -> gateway::Result<ActionResponse> {
        self.gw
            .perform(ActionCall {
                token: a.token.clone(),
                action: action.into(),
                args,
                idempotency_key: idem.map(String::from),
            })
            .await
    }

    pub async fn assert_ledger_ok(&self) {
        let r = self.gw.check_ledger(&self.tenant).await.unwrap();
        assert!(r.violations.is_empty(), "ledger invariants broken: {:#?}", r.violations);
    }

    pub async fn count(&self, table: &str) -> i64 {
        let (n,): (i64,) = self.gw.store().one(&format!("SELECT COUNT(*) FROM {table}"), &[]).await.unwrap();
        n
    }
}
