//! SQLite allocates through mimalloc once `Store::open` has run first in a process
//! (store/src/sqlite_memory.rs). A test binary of its own, so nothing opens SQLite before it.

use rusqlite::ffi;

#[tokio::test]
async fn the_store_gives_sqlite_mimalloc_and_sqlite_still_works() {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("sqlite://{}/naive.db", dir.path().display());
    let store = store::Store::open(&url).await.unwrap();
    assert!(store::sqlite_memory::install(), "the store configured SQLite before opening it");
    // SAFETY: a block from SQLite's allocator, sized and freed by it.
    unsafe {
        let p = ffi::sqlite3_malloc(1000);
        assert!(libmimalloc_sys::mi_is_in_heap_region(p), "SQLite's block is mimalloc's");
        assert!(ffi::sqlite3_msize(p) >= 1000);
        assert_eq!(ffi::sqlite3_memory_used(), 0, "memory statistics are off");
        ffi::sqlite3_free(p);
    }
    let c = rusqlite::Connection::open_in_memory().unwrap();
    c.execute_batch("CREATE TABLE t (x TEXT); INSERT INTO t VALUES (printf('%.*c', 100000, 'x'));").unwrap();
    let n: i64 = c.query_row("SELECT length(x) FROM t", [], |r| r.get(0)).unwrap();
    assert_eq!(n, 100_000);
    store.ping().await.unwrap();
}
