//! The hot path's caches (valid keys, current kits, ancestries), where invalidation wins.
//!
//! A lookup that misses reads the database, then inserts what it read. If the thing changes
//! and the cache is invalidated between that read and the insert, the read is older than the
//! change, and inserting it would bring back what the invalidation removed (a revoked key
//! that keeps authenticating). So each cache has a generation: a filler takes
//! [`GenCache::generation`] before its read, every [`GenCache::invalidate`] bumps it, and
//! [`GenCache::insert`] keeps the value only when the generation is still the one the read
//! started under. The check and the insert happen under the lock invalidation takes, so one
//! of the two always sees the other.
//!
//! Bounded: a cache that reaches [`MAX_ENTRIES`] is emptied rather than grown, and an entry
//! older than [`MAX_AGE`] is a miss. Invalidation is this process's: a change made by another
//! process on the same database (a second instance, an operator's tool) reaches these caches
//! only through their age, so the age bounds how long a key revoked elsewhere keeps working
//! here.

use std::collections::HashMap;
use std::hash::Hash;
use std::sync::RwLock;
use std::time::{Duration, Instant};

/// The most entries one cache holds.
pub const MAX_ENTRIES: usize = 100_000;
/// The oldest entry a cache answers with; older ones are read again.
pub const MAX_AGE: Duration = Duration::from_secs(2);

#[derive(Debug)]
struct Inner<K, V> {
    generation: u64,
    map: HashMap<K, (V, Instant)>,
}

#[derive(Debug)]
pub struct GenCache<K, V> {
    inner: RwLock<Inner<K, V>>,
    max_age: Duration,
}

impl<K, V> Default for GenCache<K, V> {
    fn default() -> Self {
        GenCache::with_max_age(MAX_AGE)
    }
}

impl<K, V> GenCache<K, V> {
    /// A cache whose entries are answered for at most `max_age`.
    pub fn with_max_age(max_age: Duration) -> Self {
        GenCache { inner: RwLock::new(Inner { generation: 0, map: HashMap::new() }), max_age }
    }
}

impl<K: Eq + Hash, V: Clone> GenCache<K, V> {
    /// The cached value, unless there is none or it is older than the cache's age bound.
    pub fn get(&self, k: &K) -> Option<V> {
        let inner = self.inner.read().expect("cache lock");
        let (v, at) = inner.map.get(k)?;
        (at.elapsed() <= self.max_age).then(|| v.clone())
    }

    /// The generation to pass to [`GenCache::insert`]; take it before reading the database.
    pub fn generation(&self) -> u64 {
        self.inner.read().expect("cache lock").generation
    }

    /// Keeps `v` unless the cache was invalidated since `generation` was taken. Returns
    /// whether it was kept.
    pub fn insert(&self, generation: u64, k: K, v: V) -> bool {
        let mut inner = self.inner.write().expect("cache lock");
        if inner.generation != generation {
            return false;
        }
        if inner.map.len() >= MAX_ENTRIES {
            inner.map.clear();
        }
        inner.map.insert(k, (v, Instant::now()));
        true
    }

    /// Changes a cached entry in place, if it is there.
    pub fn update(&self, k: &K, f: impl FnOnce(&mut V)) {
        if let Some((v, _)) = self.inner.write().expect("cache lock").map.get_mut(k) {
            f(v);
        }
    }

    /// Forgets one entry.
    pub fn remove(&self, k: &K) {
        self.inner.write().expect("cache lock").map.remove(k);
    }

    /// Forgets one entry, and makes every fill that started before now a no-op (a fill of
    /// another key is dropped too, and simply read again; no other entry is lost).
    pub fn invalidate_key(&self, k: &K) {
        let mut inner = self.inner.write().expect("cache lock");
        inner.generation += 1;
        inner.map.remove(k);
    }

    /// Forgets everything, and makes every fill that started before now a no-op.
    pub fn invalidate(&self) {
        let mut inner = self.inner.write().expect("cache lock");
        inner.generation += 1;
        inner.map.clear();
    }
}

/// Counters of changes, one per key and one for changes that may concern every key: cheap to
/// bump, so a signal can wake many watchers and each tell in a lookup whether it concerns it.
#[derive(Debug)]
pub struct ChangeMarks<K = crate::ids::TenantId> {
    everyone: std::sync::atomic::AtomicU64,
    each: std::sync::Mutex<HashMap<K, u64>>,
}

impl<K> Default for ChangeMarks<K> {
    fn default() -> Self {
        ChangeMarks { everyone: Default::default(), each: Default::default() }
    }
}

impl<K: Eq + Hash + Clone> ChangeMarks<K> {
    /// Counts a change of `key`'s, or of everyone's.
    pub fn bump(&self, key: Option<&K>) {
        match key {
            Some(k) => *self.each.lock().expect("marks lock").entry(k.clone()).or_default() += 1,
            None => {
                self.everyone.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            }
        }
    }

    /// Everyone's mark and `key`'s: equal to an earlier reading when nothing concerning `key`
    /// changed since.
    pub fn of(&self, key: &K) -> (u64, u64) {
        let own = self.each.lock().expect("marks lock").get(key).copied().unwrap_or(0);
        (self.everyone.load(std::sync::atomic::Ordering::Relaxed), own)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_fill_that_started_before_an_invalidation_is_dropped() {
        let c = GenCache::<&str, u32>::default();
        let before = c.generation();
        c.invalidate();
        assert!(!c.insert(before, "k", 1), "the stale read must not come back");
        assert_eq!(c.get(&"k"), None);
        let now = c.generation();
        assert!(c.insert(now, "k", 2));
        assert_eq!(c.get(&"k"), Some(2));
        c.update(&"k", |v| *v = 3);
        assert_eq!(c.get(&"k"), Some(3));
    }

    #[test]
    fn a_mark_moves_for_its_own_changes_and_everyones_only() {
        let m = ChangeMarks::<&str>::default();
        let a = m.of(&"a");
        m.bump(Some(&"b"));
        assert_eq!(m.of(&"a"), a, "b's change is not a's");
        m.bump(Some(&"a"));
        let a2 = m.of(&"a");
        assert_ne!(a2, a);
        m.bump(None);
        assert_ne!(m.of(&"a"), a2, "everyone's change is a's too");
    }

    #[test]
    fn invalidating_one_key_keeps_the_others_and_drops_fills_in_flight() {
        let c = GenCache::<&str, u32>::default();
        assert!(c.insert(c.generation(), "a", 1) && c.insert(c.generation(), "b", 2));
        let before = c.generation();
        c.invalidate_key(&"a");
        assert_eq!((c.get(&"a"), c.get(&"b")), (None, Some(2)), "only a is forgotten");
        assert!(!c.insert(before, "a", 1), "a read from before the change must not come back");
    }

    #[test]
    fn an_entry_older_than_the_age_bound_is_a_miss() {
        let c = GenCache::<&str, u32>::with_max_age(Duration::from_millis(20));
        assert!(c.insert(c.generation(), "k", 1));
        assert_eq!(c.get(&"k"), Some(1), "fresh");
        std::thread::sleep(Duration::from_millis(30));
        assert_eq!(c.get(&"k"), None, "older than the bound: read the database again");
        assert!(c.insert(c.generation(), "k", 2), "a new read replaces it");
        assert_eq!(c.get(&"k"), Some(2));
    }
}
