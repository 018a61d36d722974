//! The log's archive (issue #54), black box: the real server binary archives each closed day
//! of a tenant's log (gzipped JSON lines and a manifest per range), on the clock the test
//! moves (`NAIVE_TEST_CLOCK_FILE`), into a directory on SQLite and, on PostgreSQL (where
//! several instances share the database), into a bucket of `s3s-fs` (an S3-compatible server
//! from crates.io) run as its own process. `server check --archive URL` verifies it against
//! itself and the database, and names each object a test modified, removed or reordered.

mod common;

use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use common::process::{call, charge, default_agent, metric, start_fresh};
use common::{COMPANY_KEY, OPERATOR_KEY};
use serde_json::{Value, json};

/// Where a test's server archives: a directory on SQLite; on PostgreSQL a bucket of `s3s-fs`,
/// which keeps each object as a file under its root. Either way `files` is the directory the
/// objects are files in.
struct Store {
    url: String,
    files: PathBuf,
    envs: Vec<(String, String)>,
    s3: Option<S3>,
}

/// The running `s3s-fs`: its process, its root, its port.
struct S3 {
    child: Child,
    root: PathBuf,
    port: String,
}

const S3_KEY: (&str, &str) = ("naive-test-access", "naive-test-secret-key");
const WRONG_KEY: (&str, &str) = ("naive-test-other", "naive-test-other-secret");

/// `s3s-fs` over `root` on `port` (0: a free one) taking `key`: the process, and where it
/// listens.
fn s3s_fs(root: &Path, port: &str, key: (&str, &str)) -> (Child, String) {
    let mut child = Command::new("s3s-fs")
        .args(["--host", "127.0.0.1", "--port", port, "--access-key", key.0, "--secret-key", key.1])
        .arg(root)
        .env("RUST_LOG", "info")
        .env("NO_COLOR", "1")
        .stdout(Stdio::piped())
        .spawn()
        .expect("s3s-fs: `scripts/bootstrap.sh test` installs it (cargo install s3s-fs --version 0.14.1)");
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let endpoint = lines
        .by_ref()
        .map_while(Result::ok)
        .find_map(|l| l.split("server is running at ").nth(1).map(|u| u.trim().to_string()))
        .expect("s3s-fs said where it listens");
    std::thread::spawn(move || lines.for_each(drop));
    (child, endpoint)
}

impl Store {
    fn new(dir: &Path) -> Store {
        if std::env::var("NAIVE_TEST_ENGINE").as_deref() == Ok("postgres") {
            return Store::s3(dir);
        }
        let files = dir.join("archive");
        Store { url: files.to_string_lossy().to_string(), files, envs: Vec::new(), s3: None }
    }

    /// `s3s-fs` on a free port over `dir/s3`, with the bucket `naive-archive`.
    fn s3(dir: &Path) -> Store {
        let root = dir.join("s3");
        let bucket = root.join("naive-archive");
        std::fs::create_dir_all(&bucket).unwrap();
        let (child, endpoint) = s3s_fs(&root, "0", S3_KEY);
        let port = endpoint.rsplit(':').next().unwrap().to_string();
        let envs = [
            ("AWS_ENDPOINT", endpoint.as_str()),
            ("AWS_ACCESS_KEY_ID", S3_KEY.0),
            ("AWS_SECRET_ACCESS_KEY", S3_KEY.1),
            ("AWS_REGION", "us-east-1"),
            ("AWS_ALLOW_HTTP", "true"),
        ];
        let envs = envs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
        let url = "s3://naive-archive/audit".to_string();
        Store { url, files: bucket.join("audit"), envs, s3: Some(S3 { child, root, port }) }
    }

    /// The server's environment: the archive, its credentials, the operator key (for
    /// `/metrics`), and `more`.
    fn server_envs<'a>(&'a self, more: &[(&'a str, &'a str)]) -> Vec<(&'a str, &'a str)> {
        let mut envs = vec![("NAIVE_ARCHIVE_URL", self.url.as_str()), ("NAIVE_OPERATOR_KEY", OPERATOR_KEY)];
        envs.extend(self.envs.iter().map(|(k, v)| (k.as_str(), v.as_str())));
        envs.extend_from_slice(more);
        envs
    }

    /// Every write to the store fails from now on, at once: S3 takes other credentials (a
    /// refusal is not retried, where a server error is, for a minute), or a file stands where
    /// the directory was (a local store makes a missing directory).
    fn block(&mut self) {
        match &mut self.s3 {
            Some(s3) => s3.restart(WRONG_KEY),
            None => {
                std::fs::remove_dir_all(&self.files).unwrap();
                std::fs::write(&self.files, "not a directory").unwrap();
            }
        }
    }

    fn unblock(&mut self) {
        match &mut self.s3 {
            Some(s3) => s3.restart(S3_KEY),
            None => {
                std::fs::remove_file(&self.files).unwrap();
                std::fs::create_dir_all(&self.files).unwrap();
            }
        }
    }
}

impl S3 {
    /// The same store on the same port, taking `key`.
    fn restart(&mut self, key: (&str, &str)) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        self.child = s3s_fs(&self.root, &self.port, key).0;
    }
}

impl Drop for Store {
    fn drop(&mut self) {
        if let Some(s3) = &mut self.s3 {
            let _ = s3.child.kill();
            let _ = s3.child.wait();
        }
    }
}

/// Every file under `dir` whose name ends with `suffix`, sorted.
fn files(dir: &Path, suffix: &str) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else if p.to_string_lossy().ends_with(suffix) {
                out.push(p);
            }
        }
    }
    out.sort();
    out
}

/// Waits until the archive holds `n` manifests; their paths.
async fn manifests(dir: &Path, n: usize) -> Vec<PathBuf> {
    for _ in 0..300 {
        let found = files(dir, ".manifest.json");
        if found.len() >= n {
            return found;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("the archive holds {:?}, not {n} manifests", files(dir, ""));
}

/// `server check --archive URL` on `db`: whether it passed, and the demo tenant's report.
fn check(db: &str, store: &Store) -> (bool, Value) {
    let mut c = Command::new(env!("CARGO_BIN_EXE_server"));
    c.args(["--database-url", db, "check", "--archive", &store.url]);
    report(c.envs(store.envs.iter().map(|(k, v)| (k, v))))
}

/// `server check` on `db`, without the archive.
fn check_log(db: &str) -> (bool, Value) {
    report(Command::new(env!("CARGO_BIN_EXE_server")).args(["--database-url", db, "check"]))
}

fn report(c: &mut Command) -> (bool, Value) {
    let out = c.env("RUST_LOG", "warn").output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    let line = stdout.lines().next().unwrap_or_else(|| panic!("no report: {stderr}"));
    (out.status.success(), serde_json::from_str(line).unwrap())
}

/// Checks until every entry of the log is archived (the archiver has caught up with what the
/// server appended, the sweeper's work on the moved clock included), each check passing; the
/// last report.
async fn caught_up(db: &str, archive: &Store) -> Value {
    let mut report = Value::Null;
    for _ in 0..100 {
        let (ok, r) = check(db, archive);
        assert!(ok, "{r}");
        if r["archive"]["entries"] == r["chain"]["entries"] {
            return r;
        }
        report = r;
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    panic!("the archive did not catch up with the log: {report}");
}

fn gunzip(path: &Path) -> String {
    let mut text = String::new();
    flate2::read::GzDecoder::new(std::fs::File::open(path).unwrap()).read_to_string(&mut text).unwrap();
    text
}

fn gzip(path: &Path, text: &str) {
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    gz.write_all(text.as_bytes()).unwrap();
    std::fs::write(path, gz.finish().unwrap()).unwrap();
}

/// Writes `text` as the data object and gives its manifest the new SHA-256, as someone who
/// rewrote both would.
fn rewrite_with_manifest(data: &Path, manifest: &Path, text: &str) {
    gzip(data, text);
    let mut m: Value = serde_json::from_slice(&std::fs::read(manifest).unwrap()).unwrap();
    let digest = <sha2::Sha256 as sha2::Digest>::digest(std::fs::read(data).unwrap());
    m["sha256"] = json!(hex::encode(digest));
    std::fs::write(manifest, serde_json::to_vec_pretty(&m).unwrap()).unwrap();
}

fn data_of(manifest: &Path) -> PathBuf {
    PathBuf::from(manifest.to_string_lossy().replace(".manifest.json", ".jsonl.gz"))
}

/// The problems of a report, as "object: problem" lines.
fn problems(report: &Value) -> Vec<String> {
    let list = report["archive"]["problems"].as_array().cloned().unwrap_or_default();
    list.iter()
        .map(|p| format!("{}: {}", p["object"].as_str().unwrap(), p["problem"].as_str().unwrap()))
        .collect()
}

/// A server archiving into a fresh [`Store`] every second, on a clock file the test moves
/// (empty: the system's), with an agent that made three charges.
struct Charged {
    store: Store,
    clock: PathBuf,
    fresh: common::process::Fresh,
    base: String,
    buyer: (String, String),
    _dir: tempfile::TempDir,
}

async fn charged() -> Charged {
    let dir = tempfile::tempdir().unwrap();
    let (store, clock) = (Store::new(dir.path()), dir.path().join("clock"));
    std::fs::write(&clock, "").unwrap();
    let c = clock.to_string_lossy().to_string();
    let envs = store.server_envs(&[("NAIVE_ARCHIVE_EVERY_SECS", "1"), ("NAIVE_TEST_CLOCK_FILE", &c)]);
    let fresh = start_fresh(&envs).await;
    let base = fresh.server.base.clone();
    let buyer = default_agent(&base, "archived").await;
    for i in 0..3 {
        assert_eq!(charge(&base, &buyer, &format!("order {i}")).await.0, 200);
    }
    Charged { store, clock, fresh, base, buyer, _dir: dir }
}

#[tokio::test]
async fn closed_days_are_archived_with_their_chain_and_check_names_what_was_changed() {
    let Charged { _dir, store, clock, fresh, base, buyer } = charged().await;
    // Today is open: nothing is archived, however often the archiver looks.
    tokio::time::sleep(Duration::from_millis(2_500)).await;
    assert!(files(&store.files, ".manifest.json").is_empty(), "an open day was archived");

    // Two days on, today is closed: the whole log so far is one range.
    let later = chrono::Utc::now() + chrono::Duration::days(2);
    std::fs::write(&clock, later.to_rfc3339()).unwrap();
    let first = manifests(&store.files, 1).await;
    let report = caught_up(&fresh.db, &store).await;
    assert!(report["archive"]["ranges"].as_u64() >= Some(1), "{report}");
    assert!(metric(&base, "naive_archive_ranges_total{kind=\"written\"}").await >= 1.0);
    assert_eq!(metric(&base, "naive_archive_oldest_unarchived_seconds").await, 0.0, "all is archived");
    let m: Value = serde_json::from_slice(&std::fs::read(&first[0]).unwrap()).unwrap();
    assert_eq!(m["prev_hash"].as_str().unwrap(), "0".repeat(64), "the first range starts the chain");
    let lines = gunzip(&data_of(&first[0]));
    let charges: Vec<Value> = lines.lines().map(|l| serde_json::from_str::<Value>(l).unwrap()).collect();
    assert!(charges.iter().any(|e| e["action"] == "cards.charge" && e["inputs"].is_string()), "{lines}");

    // What is appended later is the next range, continuing from the first.
    assert_eq!(charge(&base, &buyer, "order 3").await.0, 200);
    let before = report["archive"]["ranges"].as_u64().unwrap();
    let report = caught_up(&fresh.db, &store).await;
    assert_eq!(report["archive"]["ranges"].as_u64(), Some(before + 1), "{report}");
    let both = manifests(&store.files, 2).await;
    let second: Value = serde_json::from_slice(&std::fs::read(&both[1]).unwrap()).unwrap();
    assert_eq!(second["prev_hash"], m["last_hash"], "{second}");

    tampering_is_named(&fresh.db, &store, &both);
}

/// Each change to the archive fails the check and names the object it shows in; each is undone
/// before the next.
fn tampering_is_named(db: &str, archive: &Store, manifests: &[PathBuf]) {
    let (data, manifest) = (data_of(&manifests[0]), manifests[0].clone());
    let (bytes, text) = (std::fs::read(&data).unwrap(), gunzip(&data));
    let manifest_bytes = std::fs::read(&manifest).unwrap();
    let name = data.file_name().unwrap().to_string_lossy().to_string();
    let expect = |what: &str, needle: &str| {
        let (ok, report) = check(db, archive);
        let found = problems(&report);
        assert!(!ok, "{what}: the check passed: {report}");
        assert!(found.iter().any(|p| p.contains(&name) && p.contains(needle)), "{what}: {found:?}");
    };
    let restore = || {
        std::fs::write(&data, &bytes).unwrap();
        std::fs::write(&manifest, &manifest_bytes).unwrap();
    };

    // A changed amount, the manifest left alone.
    let changed = text.replacen("\"60.00\"", "\"6.00\"", 1);
    assert_ne!(changed, text, "the range holds a charge");
    gzip(&data, &changed);
    expect("a modified file", "modified");
    restore();

    // The same change with the manifest's digest rewritten to match: the chain names the line.
    rewrite_with_manifest(&data, &manifest, &changed);
    expect("a modified entry", "the chain breaks");
    restore();

    // Two lines swapped.
    let mut lines: Vec<&str> = text.lines().collect();
    lines.swap(1, 2);
    rewrite_with_manifest(&data, &manifest, &(lines.join("\n") + "\n"));
    expect("reordered entries", "line 2");
    restore();

    // The data object gone.
    std::fs::remove_file(&data).unwrap();
    expect("a missing file", "missing");
    restore();

    // The whole first range gone: the second no longer continues, and the database's record of
    // the first names it.
    std::fs::remove_file(&data).unwrap();
    std::fs::remove_file(&manifest).unwrap();
    let (ok, report) = check(db, archive);
    let found = problems(&report);
    assert!(!ok, "{report}");
    let stem = name.replace(".jsonl.gz", "");
    assert!(found.iter().any(|p| p.contains(&stem) && p.contains("records this range")), "{found:?}");
    assert!(found.iter().any(|p| p.contains("does not continue")), "{found:?}");
    restore();
    assert!(check(db, archive).0, "the archive restored checks again");
}

/// `server check` (and the archive at `archive`) until `done` holds of its report, each check
/// passing; the report.
async fn check_until(db: &str, archive: &Store, done: impl Fn(&Value) -> bool) -> Value {
    let mut report = Value::Null;
    for _ in 0..150 {
        let (ok, r) = check(db, archive);
        assert!(ok, "{r}");
        if done(&r) {
            return r;
        }
        report = r;
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    panic!("never came: {report}");
}

#[tokio::test]
async fn retention_deletes_only_archived_entries_and_the_chain_continues_across_the_cut() {
    let Charged { _dir, mut store, clock, fresh, base, buyer } = charged().await;
    for bad in [json!({"log_days": 0}), json!({"log_days": 40_000}), json!({"days": 3})] {
        let (status, body) = call(&base, "PUT", "/v1/tenant/retention", COMPANY_KEY, Some(bad), None).await;
        assert_eq!((status, body["code"].as_str()), (400, Some("invalid_retention")), "{body}");
    }
    let keep = json!({"log_days": 1});
    let (status, body) =
        call(&base, "PUT", "/v1/tenant/retention", COMPANY_KEY, Some(keep.clone()), None).await;
    assert_eq!((status, &body), (200, &keep));
    assert_eq!(call(&base, "GET", "/v1/tenant/retention", COMPANY_KEY, None, None).await.1, keep);

    // The archive cannot be written (a file stands where its directory was), and three days
    // pass: a day beyond the retention, but nothing is archived, so nothing is deleted.
    store.block();
    let (_, before) = check_log(&fresh.db);
    let logged = before["chain"]["entries"].as_u64().unwrap();
    std::fs::write(&clock, (chrono::Utc::now() + chrono::Duration::days(3)).to_rfc3339()).unwrap();
    tokio::time::sleep(Duration::from_millis(3_000)).await;
    let (ok, held) = check_log(&fresh.db);
    let failed = metric(&base, "naive_archive_ranges_total{kind=\"failed\"}").await;
    assert!(failed >= 1.0, "the archiver tried and failed meanwhile");
    assert!(metric(&base, "naive_archive_oldest_unarchived_seconds").await > 0.0, "the lag shows");
    assert!(
        ok && held["chain"]["entries"].as_u64() >= Some(logged),
        "deleted before it was archived: {held}"
    );

    // Once the archive can be written, the closed day is archived, then deleted; the chain
    // verifies from its checkpoint, and the archive still holds every entry.
    store.unblock();
    // (The log's newest entry stays, so sequence numbers never go back.)
    let emptied = check_until(&fresh.db, &store, |r| {
        r["chain"]["entries"].as_u64() <= Some(1) && r["archive"]["entries"].as_u64() >= Some(logged)
    })
    .await;
    assert!(metric(&base, "naive_log_entries_deleted_total").await >= (logged - 1) as f64);
    let (status, shown) = call(&base, "GET", "/v1/tenant/archive", COMPANY_KEY, None, None).await;
    assert_eq!(status, 200, "{shown}");
    assert!(shown["archived_to"].as_u64() >= Some(logged) && shown["ranges"].as_u64() >= Some(1), "{shown}");
    assert!(shown["deleted_through"].as_u64() >= Some(logged - 1), "{shown}");
    let path = format!("/v1/users/{}/logs?limit=500", buyer.0);
    let (status, body) = call(&base, "GET", &path, &buyer.1, None, None).await;
    assert_eq!(status, 200, "{body}");
    assert!(!body.to_string().contains("order 0"), "the first charge's entries are gone: {body}");
    if let Some(path) = fresh.db.strip_prefix("sqlite://") {
        let cut = shown["deleted_through"].as_i64().unwrap();
        index_pairs_dropped(&format!("{path}-index"), cut).await;
    }

    // A replay over the deleted days says where they are.
    let now = chrono::Utc::now();
    let week = json!({"from": (now - chrono::Duration::days(7)).to_rfc3339(), "to": now.to_rfc3339()});
    let (status, body) = call(&base, "POST", "/v1/kits/Default/replay", COMPANY_KEY, Some(week), None).await;
    assert_eq!((status, body["code"].as_str()), (409, Some("range_archived")), "{body}");
    assert!(body["message"].as_str().unwrap().contains(&store.url), "{body}");

    // What is appended next continues the chain from the cut: on this clock its day is closed
    // and past the retention too, so it is archived (only an entry that links to the one
    // before is) and deleted in turn, and its range continues from the first.
    assert_eq!(charge(&base, &buyer, "after the cut").await.0, 200);
    let archived = emptied["archive"]["entries"].as_u64();
    let after = check_until(&fresh.db, &store, |r| r["archive"]["entries"].as_u64() > archived).await;
    assert!(after["archive"]["ranges"].as_u64() >= Some(2), "{after}");
}

/// On SQLite, the per-profile index (its own database beside the main one) drops the pairs of
/// the entries retention deleted, so it does not grow for ever: waits until none at or before
/// `cut` is left.
async fn index_pairs_dropped(index: &str, cut: i64) {
    let c = rusqlite::Connection::open_with_flags(index, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY).unwrap();
    let mut left = -1;
    for _ in 0..100 {
        left = c
            .query_row("SELECT COUNT(*) FROM activity_by_profile WHERE seq <= ?1", [cut], |r| r.get(0))
            .unwrap();
        if left == 0 {
            return;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("{left} index pairs of deleted entries are left in {index}");
}

/// The budget's totals of `agent` (its own and its pools'), and its ledger's entries.
async fn standing(base: &str, agent: &(String, String)) -> (Value, Vec<Value>) {
    let (status, budget) =
        call(base, "GET", &format!("/v1/users/{}/budget", agent.0), &agent.1, None, None).await;
    assert_eq!(status, 200, "{budget}");
    let path = format!("/v1/users/{}/ledger?limit=500", agent.0);
    let (status, ledger) = call(base, "GET", &path, &agent.1, None, None).await;
    assert_eq!(status, 200, "{ledger}");
    (json!([budget["totals"], budget["pools"]]), ledger["items"].as_array().unwrap().clone())
}

fn posted(totals: &Value) -> f64 {
    totals[0]["posted"].as_str().unwrap().parse().unwrap()
}

#[tokio::test]
async fn retention_deletes_the_ledger_entries_of_ended_holds_and_no_total_moves() {
    let Charged { _dir, store, clock, fresh, base, buyer } = charged().await;
    let (totals, entries) = standing(&base, &buyer).await;
    assert_eq!(entries.len(), 3, "a posting per charge: {entries:?}");
    let keep = json!({"log_days": 1});
    assert_eq!(call(&base, "PUT", "/v1/tenant/retention", COMPANY_KEY, Some(keep), None).await.0, 200);

    // Past the retention but inside the ledger's month: the log is cut, the ledger is not
    // (the spend page reads a profile's last 30 days of entries).
    std::fs::write(&clock, (chrono::Utc::now() + chrono::Duration::days(20)).to_rfc3339()).unwrap();
    check_until(&fresh.db, &store, |r| r["chain"]["entries"].as_u64() <= Some(1)).await;
    tokio::time::sleep(Duration::from_millis(2_500)).await;
    assert_eq!(standing(&base, &buyer).await.1.len(), 3, "deleted inside the ledger's month");

    // Past the month: the entries of the ended holds go (the newest entry of all stays, so a
    // seq is never handed out twice), what they moved is carried, and no total moves.
    std::fs::write(&clock, (chrono::Utc::now() + chrono::Duration::days(40)).to_rfc3339()).unwrap();
    let mut left = entries;
    for _ in 0..150 {
        left = standing(&base, &buyer).await.1;
        if left.len() <= 1 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    assert!(left.len() <= 1, "the ledger was not cut: {left:?}");
    assert!(metric(&base, "naive_ledger_entries_deleted_total").await >= 2.0);
    assert_eq!(standing(&base, &buyer).await.0, totals, "retention moved a total");
    // `server check` verifies the accounts and their days against entries plus carried sums.
    let (ok, report) = check_log(&fresh.db);
    assert!(ok && report["ledger_violations"] == json!([]), "{report}");
    if let Some(path) = fresh.db.strip_prefix("sqlite://") {
        ledger_pairs_dropped(path).await;
    }

    // The cap still counts every charge: the next one adds exactly its amount, and the check
    // still holds.
    assert_eq!(charge(&base, &buyer, "after the cut").await.0, 200);
    let (after, _) = standing(&base, &buyer).await;
    assert_eq!(posted(&after), posted(&totals) + 60.0, "{after} after {totals}");
    let (ok, report) = check_log(&fresh.db);
    assert!(ok && report["ledger_violations"] == json!([]), "{report}");
}

/// On SQLite, the per-profile index drops the pairs of the ledger entries retention deleted:
/// waits until every pair left names an entry of the main database.
async fn ledger_pairs_dropped(db: &str) {
    let flags = rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY;
    let index = rusqlite::Connection::open_with_flags(format!("{db}-index"), flags).unwrap();
    let main = rusqlite::Connection::open_with_flags(db, flags).unwrap();
    let seqs = |c: &rusqlite::Connection, sql: &str| -> std::collections::BTreeSet<i64> {
        let mut s = c.prepare(sql).unwrap();
        s.query_map([], |r| r.get(0)).unwrap().map(Result::unwrap).collect()
    };
    let mut stale = Vec::new();
    for _ in 0..100 {
        let kept = seqs(&main, "SELECT seq FROM ledger_entries");
        stale = seqs(&index, "SELECT seq FROM ledger_by_account").difference(&kept).copied().collect();
        if stale.is_empty() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("index pairs of deleted ledger entries are left: {stale:?}");
}

/// Waits until the archive holds `n` objects whose names end with `suffix`.
async fn objects(dir: &Path, suffix: &str, n: usize) {
    for _ in 0..200 {
        if files(dir, suffix).len() >= n {
            return;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    panic!("the archive never held {n} {suffix} objects: {:?}", files(dir, ""));
}

/// A server killed (SIGKILL) while it archives a range: first after its data object is
/// stored and before its manifest is, then (the next process, once the dead one's claim has
/// lapsed) after the manifest and before the range is recorded. A third process writes the
/// range again, whole, and records it once: the archive checks against itself and the
/// database, holds the range once, and the next range continues from it.
#[tokio::test]
async fn an_archiver_killed_between_its_objects_leaves_an_archive_that_checks() {
    let dir = tempfile::tempdir().unwrap();
    let (store, clock) = (Store::new(dir.path()), dir.path().join("clock"));
    std::fs::write(&clock, "").unwrap();
    let c = clock.to_string_lossy().to_string();
    let steady = [("NAIVE_ARCHIVE_EVERY_SECS", "1"), ("NAIVE_TEST_CLOCK_FILE", c.as_str())];
    let paused = store.server_envs(&[steady[0], steady[1], ("NAIVE_TEST_ARCHIVE_PAUSE_MS", "3000")]);
    let fresh = start_fresh(&paused).await;
    let buyer = default_agent(&fresh.server.base, "crashed").await;
    for i in 0..3 {
        assert_eq!(charge(&fresh.server.base, &buyer, &format!("order {i}")).await.0, 200);
    }
    let start = chrono::Utc::now();
    let at = |d: chrono::Duration| std::fs::write(&clock, (start + d).to_rfc3339()).unwrap();

    // The day closes; the archiver stores the range's data object and is killed before the
    // manifest.
    at(chrono::Duration::days(1));
    objects(&store.files, ".jsonl.gz", 1).await;
    let common::process::Fresh { server, db, _dir: _db_dir, _cluster } = fresh;
    server.kill();
    assert!(files(&store.files, ".manifest.json").is_empty(), "killed before the manifest");

    // Past the dead claim's lease, the next process takes the range over, stores both
    // objects, and is killed before it records the range.
    at(chrono::Duration::days(1) + chrono::Duration::minutes(5));
    let again = common::process::start_on(&db, &paused);
    objects(&store.files, ".manifest.json", 1).await;
    again.kill();

    // A third process, unpaused, finishes it.
    at(chrono::Duration::days(1) + chrono::Duration::minutes(10));
    let last = common::process::start_on(&db, &store.server_envs(&steady));
    common::process::wait_until_listening(&last.base).await;
    // (The log so far is one range, or two when the tenant's midnight fell among the charges.)
    let report = caught_up(&db, &store).await;
    let ranges = report["archive"]["ranges"].as_u64().unwrap() as usize;
    let stored = (files(&store.files, ".jsonl.gz").len(), files(&store.files, ".manifest.json").len());
    assert_eq!(stored, (ranges, ranges), "each range stored once, with its manifest: {report}");

    // The next day's range continues from them.
    assert_eq!(charge(&last.base, &buyer, "after the crash").await.0, 200);
    at(chrono::Duration::days(3));
    check_until(&db, &store, |r| {
        r["archive"]["ranges"].as_u64() > Some(ranges as u64)
            && r["archive"]["entries"] == r["chain"]["entries"]
    })
    .await;
    let all = manifests(&store.files, ranges + 1).await;
    let read = |p: &PathBuf| serde_json::from_slice::<Value>(&std::fs::read(p).unwrap()).unwrap();
    let mut chain: Vec<Value> = all.iter().map(read).collect();
    chain.sort_by_key(|m| m["first_seq"].as_i64());
    for w in chain.windows(2) {
        assert_eq!(w[1]["prev_hash"], w[0]["last_hash"], "the ranges link: {w:?}");
    }
}
