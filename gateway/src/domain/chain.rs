//! An acting profile's chain: the profile and its ancestors, nearest first, each with its
//! status and its effective kit (its own narrowed by every ancestor's), and the chain's
//! standing, which is the first status in it that is not active.

use policy::{Kit, SubjectStatus, derive_child};

use crate::error::{Error, Result};
use crate::ids::{ProfileId, TenantId};
use crate::store::Store;

/// One link of the acting profile's chain, nearest first.
#[derive(Clone, Debug)]
pub(crate) struct Link {
    pub tenant: TenantId,
    pub profile: ProfileId,
    /// The profile's own status; the chain's standing is [`chain_status`].
    pub status: SubjectStatus,
    /// The profile's effective kit: its own narrowed by every ancestor's. Its `name` and
    /// `version` are the profile's own kit's.
    pub kit: Kit,
}

/// The standing of the profile that acts: the first status in its chain that is not active
/// (its own, or any ancestor's), else active.
pub(crate) fn chain_status(links: &[Link]) -> SubjectStatus {
    links.iter().map(|l| l.status).find(|s| *s != SubjectStatus::Active).unwrap_or(SubjectStatus::Active)
}

/// Narrows each link's kit by its parent's, from the root down.
fn narrow(links: &mut [Link]) {
    let own: Vec<Kit> = links.iter().map(|l| l.kit.clone()).collect();
    for (link, kit) in links.iter_mut().zip(narrowed(own)) {
        link.kit = kit;
    }
}

/// Each level's effective kit from each level's own (nearest first): its own narrowed by
/// every ancestor's, from the root down, keeping its own name and version. The one
/// narrowing the deciding job, replay and shadow all use.
pub(crate) fn narrowed(mut kits: Vec<Kit>) -> Vec<Kit> {
    for i in (0..kits.len().saturating_sub(1)).rev() {
        let own = &kits[i];
        let mut derived = derive_child(&kits[i + 1], own);
        derived.version = own.version;
        kits[i] = derived;
    }
    kits
}

/// The recursive read of a profile's chain: id, kit name, status, nearest first.
const CHAIN_SQL: &str = "WITH RECURSIVE chain(id, parent, kit_name, status, depth) AS ( \
       SELECT id, parent_id, kit_name, status, 0 FROM agent_profiles WHERE id = ?1 AND tenant_id = ?2 \
       UNION ALL SELECT p.id, p.parent_id, p.kit_name, p.status, c.depth + 1 \
       FROM agent_profiles p JOIN chain c ON p.id = c.parent) \
     SELECT id, kit_name, status FROM chain ORDER BY depth";

fn status_of(s: &str) -> SubjectStatus {
    SubjectStatus::parse(s).unwrap_or(SubjectStatus::Suspended)
}

/// One row of [`CHAIN_SQL`]: the profile's id, its kit's name, its status.
pub(crate) type ChainRow = (String, String, String);

/// The chain from its rows (nearest first) and each row's own kit, each level's kit narrowed
/// by its parent's.
pub(crate) fn assemble(tenant: &TenantId, rows: Vec<ChainRow>, kits: Vec<Kit>) -> Result<Vec<Link>> {
    if rows.is_empty() {
        return Err(Error::NotFound { what: "agent profile" });
    }
    let mut links: Vec<Link> = rows
        .into_iter()
        .zip(kits)
        .map(|((id, _, status), kit)| Link {
            tenant: tenant.clone(),
            profile: ProfileId::from_db(id),
            status: status_of(&status),
            kit,
        })
        .collect();
    narrow(&mut links);
    Ok(links)
}

/// The chain with current kits, read on the writer's connection (for a decision made inside
/// a job, such as an approval).
pub(crate) fn load_links(
    c: &dyn crate::sql::Tx,
    tenant: &TenantId,
    profile: &ProfileId,
) -> Result<Vec<Link>> {
    let rows = c
        .rows(CHAIN_SQL, &[&profile.as_str(), &tenant.as_str()])?
        .iter()
        .map(|r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
        .collect::<Result<Vec<ChainRow>>>()?;
    let kits =
        rows.iter().map(|r| crate::domain::kits::current_kit_in(c, tenant, &r.1)).collect::<Result<_>>()?;
    assemble(tenant, rows, kits)
}

/// The chain's rows, nearest first, read outside any job (the kits come from the cache).
pub(crate) async fn rows(store: &Store, tenant: &TenantId, profile: &ProfileId) -> Result<Vec<ChainRow>> {
    Ok(store.all(CHAIN_SQL, &[profile, tenant]).await?)
}
