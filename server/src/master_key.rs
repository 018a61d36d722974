//! Where the vault's master key comes from, and `server vault rotate-master`.
//!
//! The key is `NAIVE_MASTER_KEY` (64 hex characters) when set; otherwise it is read from the
//! key file, which the first start creates with mode 0600. The file's default sits beside a
//! SQLite database (`data/naive.db` → `data/naive.db.master-key`); for PostgreSQL it is
//! `naive.master-key` in the working directory, and every instance on one database must be
//! given the same key. An in-memory database gets a key of its own that dies with it.
//!
//! A rotation writes the new key to `<file>.new` before the database changes and renames it
//! over the file after the database committed. A crash in between leaves a database that opens
//! with one of the two files: a start whose key does not match tries `<file>.new` and, if
//! that one does, finishes the rename.

use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

use gateway::domain::vault::MasterKey;

use crate::config::Config;

/// Where the key came from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum KeySource {
    /// `NAIVE_MASTER_KEY` or `--master-key`.
    Given,
    File(PathBuf),
    /// Made for an in-memory database; gone with it.
    Ephemeral,
}

/// The key file for `config`, when the key is kept in one.
pub fn key_file(config: &Config) -> Option<PathBuf> {
    if let Some(p) = &config.master_key_file {
        return Some(p.clone());
    }
    let url = &config.database_url;
    if url.starts_with("sqlite::memory:") {
        return None;
    }
    match url.strip_prefix("sqlite:") {
        Some(rest) => {
            let path = rest.trim_start_matches("//");
            let path = path.split('?').next().unwrap_or(path);
            Some(PathBuf::from(format!("{path}.master-key")))
        }
        None => Some(PathBuf::from("naive.master-key")),
    }
}

/// The path a rotation writes the new key to first.
pub fn pending_file(path: &Path) -> PathBuf {
    let mut s = path.as_os_str().to_owned();
    s.push(".new");
    PathBuf::from(s)
}

/// The master key for `config`; the key file is created when `create` and it is missing.
pub fn resolve(config: &Config, create: bool) -> Result<(MasterKey, KeySource), String> {
    if let Some(k) = &config.master_key {
        let key = MasterKey::parse(k).map_err(|e| format!("NAIVE_MASTER_KEY: {e}"))?;
        return Ok((key, KeySource::Given));
    }
    let Some(path) = key_file(config) else {
        return Ok((MasterKey::generate(), KeySource::Ephemeral));
    };
    match read_key(&path)? {
        Some(k) => Ok((k, KeySource::File(path))),
        None if create => {
            let key = MasterKey::generate();
            // The default file sits in the database's directory: say so when that is what
            // cannot be made.
            if let Some(dir) =
                path.parent().filter(|d| config.master_key_file.is_none() && !d.as_os_str().is_empty())
                && let Err(e) = std::fs::create_dir_all(dir)
            {
                return Err(format!("cannot create the database directory {}: {e}", dir.display()));
            }
            write_key(&path, &key)
                .map_err(|e| format!("cannot create the master key file {}: {e}", path.display()))?;
            tracing::info!(file = %path.display(), fingerprint = %key.fingerprint(), "created the vault's master key file");
            Ok((key, KeySource::File(path)))
        }
        None => Err(format!(
            "no master key: set NAIVE_MASTER_KEY, or point --master-key-file at the key file ({} does not exist)",
            path.display()
        )),
    }
}

/// The key in `path`, or `None` when there is no such file. A file others may read or write
/// is refused, as ssh refuses a private key: whoever reads it opens every tenant's vault.
pub fn read_key(path: &Path) -> Result<Option<MasterKey>, String> {
    use std::os::unix::fs::PermissionsExt;
    if let Ok(meta) = std::fs::metadata(path)
        && meta.permissions().mode() & 0o077 != 0
    {
        return Err(format!(
            "the master key file {} is open to other users (mode {:o}); make it its owner's alone with `chmod 600 {}`",
            path.display(),
            meta.permissions().mode() & 0o777,
            path.display()
        ));
    }
    match std::fs::read_to_string(path) {
        Ok(text) => MasterKey::parse(&text)
            .map(Some)
            .map_err(|e| format!("the master key file {}: {e}", path.display())),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(format!("cannot read the master key file {}: {e}", path.display())),
    }
}

/// Writes `key` to `path` readable by its owner only, durably.
pub fn write_key(path: &Path, key: &MasterKey) -> std::io::Result<()> {
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir)?;
    }
    let mut f = std::fs::OpenOptions::new().write(true).create(true).truncate(true).mode(0o600).open(path)?;
    f.write_all(format!("{}\n", key.to_hex()).as_bytes())?;
    f.sync_all()
}

/// Opens the gateway with the configured key; if the database was sealed under a rotation's
/// pending key (a crash between its commit and its rename), opens with that and finishes the
/// rename.
pub async fn open_gateway(
    config: &Config,
    gateway_config: gateway::GatewayConfig,
) -> Result<gateway::Gateway, gateway::Error> {
    let (key, source) = resolve(config, true).map_err(|m| gateway::Error::internal("master_key", m))?;
    let first = gateway::Gateway::open_with(
        &config.database_url,
        gateway::GatewayConfig { master_key: Some(key), ..gateway_config.clone() },
    )
    .await;
    let (Err(gateway::Error::MasterKeyMismatch { .. }), KeySource::File(path)) = (&first, &source) else {
        return first;
    };
    let pending = pending_file(path);
    let Ok(Some(key)) = read_key(&pending) else { return first };
    let second = gateway::Gateway::open_with(
        &config.database_url,
        gateway::GatewayConfig { master_key: Some(key), ..gateway_config },
    )
    .await?;
    std::fs::rename(&pending, path).map_err(|e| {
        gateway::Error::internal("master_key", format!("cannot finish the master key rotation's rename: {e}"))
    })?;
    tracing::warn!(file = %path.display(), "finished a master key rotation that was interrupted before its rename");
    Ok(second)
}

/// `server vault rotate-master`: re-wraps every data key under a new master key
/// (`NAIVE_NEW_MASTER_KEY`, or a generated one), then replaces the key file. Prints the new key
/// only when it was generated and there is no file to keep it in.
pub async fn rotate(config: &Config, new_key: Option<&str>) -> Result<String, String> {
    let (old, source) = resolve(config, false)?;
    if source == KeySource::Ephemeral {
        return Err("an in-memory database has no vault to rotate".into());
    }
    let new = match new_key {
        Some(k) => MasterKey::parse(k).map_err(|e| format!("NAIVE_NEW_MASTER_KEY: {e}"))?,
        None => MasterKey::generate(),
    };
    let gw = gateway::Gateway::open_with(
        &config.database_url,
        gateway::GatewayConfig { master_key: Some(old.clone()), ..Default::default() },
    )
    .await
    .map_err(|e| e.to_string())?;
    if let KeySource::File(path) = &source {
        write_key(&pending_file(path), &new).map_err(|e| format!("cannot write the new key file: {e}"))?;
    }
    let rewrapped = gw.rotate_master_key(new.clone()).await.map_err(|e| e.to_string())?;
    gw.store().close().await;
    let mut said = format!(
        "Rotated the vault's master key {} → {}: {rewrapped} tenant data key(s) re-wrapped, secrets untouched.",
        old.fingerprint(),
        new.fingerprint()
    );
    match source {
        KeySource::File(path) => {
            std::fs::rename(pending_file(&path), &path)
                .map_err(|e| format!("cannot replace the key file: {e}"))?;
            said.push_str(&format!("\nThe key file {} now holds the new key.", path.display()));
        }
        _ if new_key.is_some() => {
            said.push_str("\nStart every instance with NAIVE_MASTER_KEY set to the new key.")
        }
        _ => said.push_str(&format!(
            "\nThe new key, shown once: {}\nStart every instance with NAIVE_MASTER_KEY set to it.",
            new.to_hex()
        )),
    }
    Ok(said)
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    fn config(args: &[&str]) -> Config {
        crate::config::Cli::parse_from([&["server"], args].concat()).config
    }

    #[test]
    fn the_key_file_sits_beside_a_sqlite_database() {
        assert_eq!(
            key_file(&config(&["--database-url", "sqlite://data/naive.db"])),
            Some("data/naive.db.master-key".into())
        );
        assert_eq!(key_file(&config(&["--database-url", "sqlite::memory:"])), None);
        assert_eq!(
            key_file(&config(&["--database-url", "postgres://h/db"])),
            Some("naive.master-key".into())
        );
        assert_eq!(
            key_file(&config(&["--database-url", "postgres://h/db", "--master-key-file", "/etc/naive/key"])),
            Some("/etc/naive/key".into())
        );
    }

    #[test]
    fn a_created_key_file_is_the_owners_alone_and_reads_back() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("n.db");
        let c = config(&["--database-url", &format!("sqlite://{}", db.display())]);
        let (k, source) = resolve(&c, true).unwrap();
        let KeySource::File(path) = source else { panic!("{source:?}") };
        assert_eq!(std::fs::metadata(&path).unwrap().permissions().mode() & 0o777, 0o600);
        assert_eq!(resolve(&c, true).unwrap().0.fingerprint(), k.fingerprint());
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
        let refused = resolve(&c, true).unwrap_err();
        assert!(refused.contains("chmod 600") && refused.contains("644"), "{refused}");
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).unwrap();
        std::fs::write(&path, "not a key").unwrap();
        assert!(resolve(&c, true).unwrap_err().contains("64 hexadecimal"));
    }
}
