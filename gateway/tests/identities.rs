//! Service tests for tenants, users, kits and profiles on a fresh SQLite file.

use gateway::{Error, Gateway, ProfileId, Role};
use policy::{Kit, KitVersion, Money};

/// A gateway on a fresh database of the engine under test, and what keeps that alive.
async fn gw() -> (Gateway, (tempfile::TempDir, Option<gateway::testing::Cluster>)) {
    let dir = tempfile::tempdir().unwrap();
    let (url, cluster) = gateway::testing::fresh_url(dir.path()).await;
    let gw = Gateway::open(&url).await.unwrap();
    (gw, (dir, cluster))
}

#[tokio::test]
async fn reads_never_cross_tenants() {
    let (gw, _d) = gw().await;
    let (a, _) = gw.create_tenant("A", Money::ZERO, None).await.unwrap();
    let (b, _) = gw.create_tenant("B", Money::ZERO, None).await.unwrap();
    let user = gw.create_user(&a.id, "alice", "password-a", &[Role::Admin]).await.unwrap();
    let p = gw.create_profile(&a.id, "bot", Some(&user.id), None, "Default").await.unwrap();
    assert!(matches!(gw.profile(&b.id, &p.id).await, Err(Error::NotFound { .. })));
    assert!(matches!(gw.user(&b.id, &user.id).await, Err(Error::NotFound { .. })));
    assert!(gw.profiles(&b.id).await.unwrap().is_empty());
    assert!(gw.users(&b.id).await.unwrap().is_empty());
    // A sub-agent cannot hang under another tenant's profile, nor be owned by its user.
    assert!(matches!(
        gw.create_profile(&b.id, "x", None, Some(&p.id), "Default").await,
        Err(Error::NotFound { .. })
    ));
    assert!(matches!(
        gw.create_profile(&b.id, "y", Some(&user.id), None, "Default").await,
        Err(Error::NotFound { .. })
    ));
    assert!(matches!(gw.current_kit(&b.id, "Procurement").await, Err(Error::NotFound { .. })));
}

#[tokio::test]
async fn kits_version_with_diffs_and_refuse_stale_saves() {
    let (gw, _d) = gw().await;
    let (t, _) = gw.create_tenant("T", Money::ZERO, None).await.unwrap();
    let mut k = gw.current_kit(&t.id, "Default").await.unwrap().kit;
    assert_eq!(k.version, KitVersion(1));
    k.limits.budget.hard_cap = Some(Money::dollars(80));
    let saved = gw.save_kit(&t.id, k.clone(), Some(KitVersion(1)), "alice").await.unwrap();
    assert_eq!(saved.kit.version, KitVersion(2));
    assert_eq!(saved.diff.changes[0].text, "sets a hard cap of $80.00");
    let err = gw.save_kit(&t.id, k, Some(KitVersion(1)), "bob").await.unwrap_err();
    assert_eq!(err.code(), "kit_version_conflict");
    assert_eq!(gw.kit_versions(&t.id, "Default").await.unwrap().len(), 2);
    let mut bad = Kit::default_kit();
    bad.limits.budget.hard_cap = Some(Money::dollars(1));
    bad.limits.budget.soft_cap = Some(Money::dollars(2));
    assert_eq!(gw.save_kit(&t.id, bad, Some(KitVersion(2)), "x").await.unwrap_err().code(), "invalid_kit");
}

/// The log stores who acted as one string; a user named like the company key, the gateway or
/// an agent would read back as them (and a company-key change as one made over `/v1`).
#[tokio::test]
async fn a_username_cannot_pass_for_the_company_key_the_gateway_or_an_agent() {
    let (gw, _d) = gw().await;
    let (t, _) = gw.create_tenant("T", Money::ZERO, None).await.unwrap();
    for name in ["company-key", "system", "demo-agent", "prf_0190aa"] {
        let err = gw.create_user(&t.id, name, "password1", &[Role::Admin]).await.unwrap_err();
        assert_eq!(err.code(), "reserved_username", "{name}");
    }
    gw.create_user(&t.id, "prf", "password1", &[Role::Admin]).await.unwrap();
}

#[tokio::test]
async fn users_validate_and_log_in_with_argon2id() {
    let (gw, _d) = gw().await;
    let (t, _) = gw.create_tenant("T", Money::ZERO, None).await.unwrap();
    assert_eq!(
        gw.create_user(&t.id, "Bad Name", "password1", &[Role::Admin]).await.unwrap_err().code(),
        "invalid_username"
    );
    assert_eq!(
        gw.create_user(&t.id, "bob", "short", &[Role::Admin]).await.unwrap_err().code(),
        "weak_password"
    );
    assert_eq!(gw.create_user(&t.id, "bob", "password1", &[]).await.unwrap_err().code(), "no_roles");
    gw.create_user(&t.id, "bob", "password1", &[Role::Finance, Role::Approver]).await.unwrap();
    assert_eq!(
        gw.create_user(&t.id, "bob", "password2", &[Role::Admin]).await.unwrap_err().code(),
        "username_taken"
    );
    let bob = gw.verify_login("bob", "password1").await.unwrap().unwrap();
    assert_eq!(bob.roles, [Role::Approver, Role::Finance]);
    assert!(gw.verify_login("bob", "password2").await.unwrap().is_none());
    assert!(gw.verify_login("nobody", "password1").await.unwrap().is_none());
    let (stored,): (String,) =
        gw.store().one("SELECT password_hash FROM console_users WHERE username = 'bob'", &[]).await.unwrap();
    assert!(stored.starts_with("$argon2id$"));
}

#[tokio::test]
async fn company_keys_store_only_a_hash() {
    let (gw, _d) = gw().await;
    let (t, key) = gw.create_tenant("T", Money::ZERO, None).await.unwrap();
    assert_eq!(gw.authenticate_company_key(&key.token).await.unwrap(), Some(t.id.clone()));
    assert_eq!(gw.authenticate_company_key(&format!("{}x", key.token)).await.unwrap(), None);
    assert_eq!(gw.authenticate_company_key("garbage").await.unwrap(), None);
    let (stored,): (String,) = gw.store().one("SELECT secret_hash FROM company_keys", &[]).await.unwrap();
    assert!(!stored.contains(&key.token[12..]));
    let err = gw.create_tenant("U", Money::ZERO, Some("nv_bad")).await.unwrap_err();
    assert_eq!(err.code(), "invalid_key_format");
    assert_eq!(gw.tenants().await.unwrap().len(), 1, "a refused tenant leaves no row");
}

#[tokio::test]
async fn profile_tree_orders_parents_before_children() {
    let (gw, _d) = gw().await;
    let (t, _) = gw.create_tenant("T", Money::ZERO, None).await.unwrap();
    let root = gw.create_profile(&t.id, "root", None, None, "Default").await.unwrap();
    let other = gw.create_profile(&t.id, "other", None, None, "Default").await.unwrap();
    let child = gw.create_profile(&t.id, "child", None, Some(&root.id), "Default").await.unwrap();
    let grandchild = gw.create_profile(&t.id, "grandchild", None, Some(&child.id), "Default").await.unwrap();
    let tree = gw.profile_tree(&t.id).await.unwrap();
    let order: Vec<(&ProfileId, usize)> = tree.iter().map(|e| (&e.profile.id, e.depth)).collect();
    assert_eq!(order, [(&root.id, 0), (&child.id, 1), (&grandchild.id, 2), (&other.id, 0)]);
    assert_eq!(
        gw.create_profile(&t.id, "root", None, None, "Default").await.unwrap_err().code(),
        "profile_name_taken"
    );
    assert_eq!(gw.create_profile(&t.id, "z", None, None, "Nope").await.unwrap_err().code(), "not_found");
}

/// Parallel sign-ins never run more argon2 checks at once than the bound (each takes 19 MiB).
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn password_checks_are_bounded_however_many_sign_ins_arrive() {
    let dir = tempfile::tempdir().unwrap();
    let gw = Gateway::open(&format!("sqlite://{}/t.db", dir.path().display())).await.unwrap();
    let (t, _) = gw.create_tenant("Acme", policy::Money::ZERO, None).await.unwrap();
    gw.create_user(&t.id, "ann", "ann-password", &[gateway::Role::Approver]).await.unwrap();
    let tries = (0..24).map(|i| {
        let gw = gw.clone();
        tokio::spawn(async move {
            gw.verify_login("ann", if i == 0 { "ann-password" } else { "wrong-password" }).await
        })
    });
    let results: Vec<_> =
        futures_util::future::join_all(tries).await.into_iter().map(|r| r.unwrap().unwrap()).collect();
    assert_eq!(results.iter().filter(|r| r.is_some()).count(), 1, "only the right password signs in");
    let peak = gw.password_check_peak();
    assert!((1..=gateway::domain::users::MAX_PASSWORD_CHECKS).contains(&peak), "{peak} checks ran at once");
}

/// A stored role the gateway does not know is an error naming it, not a role silently dropped.
#[tokio::test]
async fn a_stored_role_the_gateway_does_not_know_is_corrupt_row() {
    let (gw, _d) = gw().await;
    let (t, _) = gw.create_tenant("T", Money::ZERO, None).await.unwrap();
    let u = gw.create_user(&t.id, "ada", "password1", &[Role::Admin]).await.unwrap();
    gw.store().exec("UPDATE console_users SET roles = 'admin,root' WHERE id = ?", &[&u.id]).await.unwrap();
    let err = gw.user(&t.id, &u.id).await.unwrap_err();
    assert_eq!((err.code(), err.is_internal()), ("corrupt_row", true), "{err}");
    assert!(err.to_string().contains("role"), "{err}");
}
