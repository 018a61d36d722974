//! Archiving the log (docs/archive.md): every closed range of every tenant's log is written
//! to the object store the operator names by URL (a local directory by default), by one
//! instance, and `server check --archive URL` verifies what is there against itself and the
//! database. The format, the ranges and their claims are [`crate::domain::archive`]'s.

use std::sync::Arc;
use std::time::Duration as StdDuration;

use chrono::Duration;
use futures_util::TryStreamExt;
use object_store::path::Path;
use object_store::{ObjectStore, ObjectStoreExt, PutPayload};

use crate::Gateway;
use crate::audit::activity;
use crate::delivery::outbox::delivery::DeliveryHandle;
use crate::delivery::streams;
use crate::domain::archive::{self, Manifest, Range};
use crate::domain::ledger::retention::{self, LEDGER_FLOOR_DAYS};
use crate::domain::periods::Calendar;
use crate::error::{Error, Result};
use crate::ids::TenantId;

pub use crate::domain::archive::{ArchiveProblem, ArchiveReport, ArchiveStatus};

/// Where archived ranges are stored.
pub type Archive = Arc<dyn ObjectStore>;

/// The running archiver: the same handle as the delivery worker's; stopping it lets the
/// range being written finish.
pub type ArchiverHandle = DeliveryHandle;

/// The most log entries one retention job deletes, so the writer is never held long.
const FORGET_CHUNK: i64 = 5_000;

/// How long an instance's claim on the range it writes stands without being finished.
const LEASE_SECS: i64 = 120;

/// The archive at `url`: a directory (`file:///srv/archive`, or a plain path, created if
/// missing), or S3 (`s3://bucket/prefix`, configured by the `AWS_*` environment variables the
/// `object_store` crate reads: `AWS_ENDPOINT`, `AWS_REGION`, `AWS_ACCESS_KEY_ID`,
/// `AWS_SECRET_ACCESS_KEY`, `AWS_ALLOW_HTTP`, …).
pub fn open_store(url: &str) -> Result<Archive> {
    let dir = url.strip_prefix("file://").or((!url.contains("://")).then_some(url));
    if let Some(dir) = dir {
        std::fs::create_dir_all(dir).map_err(|e| archive_url_error(url, e))?;
        // Synced before a range is recorded as archived, so a crash cannot lose what retention
        // may then delete.
        let local = object_store::local::LocalFileSystem::new_with_prefix(dir)
            .map_err(|e| archive_url_error(url, e))?
            .with_fsync(true);
        return Ok(Arc::new(local));
    }
    let parsed = url::Url::parse(url).map_err(|e| archive_url_error(url, e))?;
    let (store, prefix) =
        object_store::parse_url_opts(&parsed, std::env::vars()).map_err(|e| archive_url_error(url, e))?;
    if prefix.as_ref().is_empty() {
        return Ok(Arc::from(store));
    }
    Ok(Arc::new(object_store::prefix::PrefixStore::new(store, prefix)))
}

fn archive_url_error(url: &str, e: impl std::fmt::Display) -> Error {
    Error::invalid(
        "invalid_archive_url",
        format!(
            "--archive-url {url}: {e}; name a directory (file:///srv/naive-archive) or an object store URL"
        ),
    )
}

fn store_error(what: &str, name: &str, e: impl std::fmt::Display) -> Error {
    Error::internal("archive_store_failed", format!("{what} {name} in the archive: {e}"))
}

impl Gateway {
    /// Writes every range that is due, of every tenant, as `owner`; how many it wrote.
    pub async fn archive_due(&self, archive: &dyn ObjectStore, owner: &str) -> Result<usize> {
        let mut written = 0;
        for t in self.tenants().await? {
            loop {
                let next = self.archive_next(archive, &t.id, owner).await;
                let kind = if next.is_err() { "failed" } else { "written" };
                if !matches!(next, Ok(false)) {
                    self.count_archived(kind);
                }
                if !next? {
                    break;
                }
                written += 1;
            }
        }
        Ok(written)
    }

    fn count_archived(&self, kind: &'static str) {
        if let Some(f) = self.metrics.get() {
            f.archive_ranges.get_or_create(&crate::audit::metrics::One { kind }).inc();
        }
    }

    /// Writes the tenant's next range, if one is due and no other instance holds it; whether
    /// it did.
    async fn archive_next(&self, archive: &dyn ObjectStore, tenant: &TenantId, owner: &str) -> Result<bool> {
        let now = self.now();
        let range = match archive::newest(&self.store, tenant).await? {
            // An unfinished range: another instance's, or one whose writer stopped.
            Some(r) if r.archived_at.is_none() => r,
            after => {
                let calendar = self.tenant_clock(tenant).await?.calendar.clone();
                match archive::next(&self.store, tenant, &calendar, after.as_ref(), now).await? {
                    Some(r) => r,
                    None => return Ok(false),
                }
            }
        };
        let (r, o, lease) = (range.clone(), owner.to_string(), now + Duration::seconds(LEASE_SECS));
        if !self.write(move |c| archive::claim(c, &r, &o, now, lease)).await? {
            return Ok(false);
        }
        let manifest = self.store_range(archive, &range).await?;
        let (o, at) = (owner.to_string(), self.now());
        self.write(move |c| archive::finish(c, &range, &o, &manifest.last_hash, at)).await
    }

    /// Writes a claimed range's data object, then its manifest; the manifest.
    async fn store_range(&self, archive: &dyn ObjectStore, range: &Range) -> Result<Manifest> {
        let mut writer = archive::Writer::new(range.clone());
        while !writer.complete() {
            let page = archive::page(&self.store, &range.tenant, writer.read_after(), range.last_seq).await?;
            if page.is_empty() {
                break;
            }
            for e in page {
                writer.push(e)?;
            }
        }
        let (bytes, manifest) = writer.finish()?;
        let (data, manifest_name) = range.names();
        put(archive, &data, bytes).await?;
        self.archive_paused().await;
        let text =
            serde_json::to_vec_pretty(&manifest).map_err(|e| store_error("encoding", &manifest_name, e))?;
        put(archive, &manifest_name, text).await?;
        self.archive_paused().await;
        Ok(manifest)
    }

    /// The crash tests' pause after an object is stored ([`crate::GatewayConfig`]); none in a
    /// deployment.
    async fn archive_paused(&self) {
        if self.config.archive_pause_ms > 0 {
            tokio::time::sleep(StdDuration::from_millis(self.config.archive_pause_ms)).await;
        }
    }

    /// How far the tenant's log is archived, and deleted under its retention.
    pub async fn archive_status(&self, tenant: &TenantId) -> Result<ArchiveStatus> {
        let mut status = archive::status(&self.store, tenant).await?;
        status.streamed_through = streams::streamed_through(&self.store, tenant).await?;
        Ok(status)
    }

    /// Deletes, for every tenant with a retention, its archived entries whose day ended
    /// longer ago than the retention, a few thousand per job, moving its log's checkpoint;
    /// how many. Nothing that is not archived, or not yet sent by each of the tenant's log
    /// streams, is deleted. Then the ledger entries of ended holds of the days the log no
    /// longer holds, their sums carried.
    pub async fn forget_archived(&self) -> Result<u64> {
        let mut deleted = 0;
        for (tenant, days) in crate::domain::tenants::retaining(&self.store).await? {
            let calendar = self.tenant_clock(&tenant).await?.calendar.clone();
            deleted += self.forget_log(&tenant, days, &calendar).await?;
            self.forget_ledger(&tenant, days, &calendar).await?;
        }
        Ok(deleted)
    }

    /// Deletes the tenant's archived (and streamed) log entries whose day ended longer ago
    /// than its retention, a chunk per job; how many.
    async fn forget_log(&self, tenant: &TenantId, days: i64, calendar: &Calendar) -> Result<u64> {
        let before = calendar.day(self.now() - Duration::days(days));
        let Some(archived) = archive::forgettable_through(&self.store, tenant, before).await? else {
            return Ok(0);
        };
        let streamed = streams::streamed_through(&self.store, tenant).await?;
        let through = streamed.map_or(archived, |s| s.min(archived));
        let mut deleted = 0;
        loop {
            let t = tenant.clone();
            let n = self
                .write_for(tenant, move |c| activity::forget_through(c, &t, through, FORGET_CHUNK))
                .await?;
            deleted += n;
            if let Some(f) = self.metrics.get() {
                f.log_entries_deleted.inc_by(n);
            }
            if n < FORGET_CHUNK as u64 {
                return Ok(deleted);
            }
        }
    }

    /// Deletes the tenant's ledger entries of ended holds whose day is older than its
    /// retention (at least [`LEDGER_FLOOR_DAYS`]) and no later than the day its log was cut
    /// at (retention deletes the log by whole days), carrying their sums; how many.
    async fn forget_ledger(&self, tenant: &TenantId, days: i64, calendar: &Calendar) -> Result<u64> {
        let Some(cut) = activity::checkpoint(&self.store, tenant).await? else { return Ok(0) };
        let kept = calendar.day(self.now() - Duration::days(days.max(LEDGER_FLOOR_DAYS)));
        let logged = calendar.day(cut.at).succ_opt().unwrap_or(kept);
        let cut_day = kept.min(logged).to_string();
        let mut deleted = 0;
        loop {
            let (t, d) = (tenant.clone(), cut_day.clone());
            let (n, moved) =
                self.write_for(tenant, move |c| retention::forget_entries(c, &t, &d, FORGET_CHUNK)).await?;
            deleted += n;
            if let Some(f) = self.metrics.get() {
                f.ledger_entries_deleted.inc_by(n);
            }
            if !moved {
                return Ok(deleted);
            }
        }
    }

    /// Every `every` until the handle is stopped or dropped: [`Gateway::archive_due`], then
    /// [`Gateway::forget_archived`].
    pub fn start_archiver(&self, archive: Archive, every: StdDuration) -> ArchiverHandle {
        let gw = self.clone();
        let (stop, mut stopped) = tokio::sync::watch::channel(false);
        let task = tokio::spawn(async move {
            let owner = format!("arc_{}", uuid::Uuid::new_v4().simple());
            let mut tick = tokio::time::interval(every);
            loop {
                tokio::select! {
                    _ = tick.tick() => {}
                    _ = stopped.changed() => break,
                }
                if let Err(e) = gw.archive_due(archive.as_ref(), &owner).await {
                    tracing::warn!(error = %e, "archiving the log failed; trying again on the next tick");
                }
                if let Err(e) = gw.forget_archived().await {
                    tracing::warn!(error = %e, "deleting archived log entries failed; trying again on the next tick");
                }
            }
        });
        DeliveryHandle { task: Some(task), stop }
    }

    /// Verifies the tenant's archive: each range against its manifest, the ranges' order,
    /// and the ranges the database records as archived.
    pub async fn check_tenant_archive(
        &self,
        archive: &dyn ObjectStore,
        tenant: &TenantId,
    ) -> Result<ArchiveReport> {
        // The database first: a range it records as archived had both objects stored before
        // it was recorded, so a range the archiver finishes meanwhile is never "missing".
        let recorded = archive::archived(&self.store, tenant).await?;
        let mut problems = Vec::new();
        let mut manifests = Vec::new();
        for name in list(archive, &archive::tenant_prefix(tenant)).await? {
            if !name.ends_with(".manifest.json") {
                continue;
            }
            let read = get(archive, &name).await?.map(|b| serde_json::from_slice::<Manifest>(&b));
            match read {
                Some(Ok(m)) => manifests.push((name, m)),
                Some(Err(e)) => problems.push(ArchiveProblem::new(&name, format!("not a manifest ({e})"))),
                None => {}
            }
        }
        manifests.sort_by_key(|(_, m)| m.first_seq);
        for (name, m) in &manifests {
            let data = sibling(name, &m.data);
            match get(archive, &data).await? {
                None => problems.push(ArchiveProblem::new(&data, "missing: its manifest names it".into())),
                Some(bytes) => {
                    if let Err(p) = archive::check_range(m, &bytes) {
                        problems.push(ArchiveProblem::new(&data, p));
                    }
                }
            }
        }
        problems.extend(archive::check_sequence(&manifests));
        problems.extend(archive::check_recorded(&recorded, &manifests));
        if let Some((name, last)) = manifests.last()
            && let Some(hash) = archive::hash_at(&self.store, tenant, last.last_seq).await?
            && hash != last.last_hash
        {
            problems.push(ArchiveProblem::new(
                name,
                format!(
                    "its last entry ({}) differs from the database's: the log or the archive was changed",
                    last.last_seq
                ),
            ));
        }
        Ok(ArchiveReport::new(tenant, &manifests, problems))
    }
}

/// The object named `file` in the same folder as `object`.
fn sibling(object: &str, file: &str) -> String {
    match object.rsplit_once('/') {
        Some((dir, _)) => format!("{dir}/{file}"),
        None => file.to_string(),
    }
}

async fn put(archive: &dyn ObjectStore, name: &str, bytes: Vec<u8>) -> Result<()> {
    archive
        .put(&Path::from(name), PutPayload::from(bytes))
        .await
        .map_err(|e| store_error("writing", name, e))?;
    Ok(())
}

/// The object's bytes; None when the store has no such object.
async fn get(archive: &dyn ObjectStore, name: &str) -> Result<Option<Vec<u8>>> {
    match archive.get(&Path::from(name)).await {
        Ok(found) => Ok(Some(found.bytes().await.map_err(|e| store_error("reading", name, e))?.to_vec())),
        Err(object_store::Error::NotFound { .. }) => Ok(None),
        Err(e) => Err(store_error("reading", name, e)),
    }
}

/// The names of every object under `prefix`.
async fn list(archive: &dyn ObjectStore, prefix: &str) -> Result<Vec<String>> {
    let found: Vec<_> = archive
        .list(Some(&Path::from(prefix)))
        .try_collect()
        .await
        .map_err(|e| store_error("listing", prefix, e))?;
    Ok(found.into_iter().map(|m| m.location.to_string()).collect())
}
