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
//! Bounded: a cache that reaches [`MAX_ENTRIES`] is emptied rather than grown.

use std::collections::HashMap;
use std::hash::Hash;
use std::sync::RwLock;

/// The most entries one cache holds.
pub const MAX_ENTRIES: usize = 100_000;

#[derive(Debug)]
struct Inner<K, V> {
    generation: u64,
    map: HashMap<K, V>,
}

#[derive(Debug)]
pub struct GenCache<K, V> {
    inner: RwLock<Inner<K, V>>,
}

impl<K, V> Default for GenCache<K, V> {
    fn default() -> Self {
        GenCache { inner: RwLock::new(Inner { generation: 0, map: HashMap::new() }) }
    }
}

impl<K: Eq + Hash, V: Clone> GenCache<K, V> {
    pub fn get(&self, k: &K) -> Option<V> {
        self.inner.read().expect("cache lock").map.get(k).cloned()
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
        inner.map.insert(k, v);
        true
    }

    /// Changes a cached entry in place, if it is there.
    pub fn update(&self, k: &K, f: impl FnOnce(&mut V)) {
        if let Some(v) = self.inner.write().expect("cache lock").map.get_mut(k) {
            f(v);
        }
    }

    /// Forgets one entry.
    pub fn remove(&self, k: &K) {
        self.inner.write().expect("cache lock").map.remove(k);
    }

    /// Forgets everything, and makes every fill that started before now a no-op.
    pub fn invalidate(&self) {
        let mut inner = self.inner.write().expect("cache lock");
        inner.generation += 1;
        inner.map.clear();
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
}
