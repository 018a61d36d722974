//! SQLite's own allocations, through mimalloc.
//!
//! SQLite allocates through the C library's `malloc` unless it is told otherwise, with a global
//! mutex around each call for its memory statistics. On the writer thread that was about a
//! seventh of the CPU (perf over `make bench-outbox`): glibc growing and shrinking its
//! per-thread heap with `mprotect`, and the lock. [`install`] hands SQLite mimalloc, the
//! allocator the binaries already use for Rust's allocations, and turns the statistics off
//! (nothing here reads them).
//!
//! Guarantees: SQLite is configured before it is first initialised, or not at all. A process
//! that opened SQLite before [`install`] ran (a test opening its own connection first) keeps
//! SQLite's defaults, which work the same, only slower.

use std::ffi::{c_int, c_void};
use std::sync::OnceLock;

use rusqlite::ffi;

unsafe extern "C" fn malloc(n: c_int) -> *mut c_void {
    // SAFETY: mimalloc returns null or a block of at least `n` bytes, aligned to 16.
    unsafe { libmimalloc_sys::mi_malloc(n.max(0) as usize) }
}

unsafe extern "C" fn free(p: *mut c_void) {
    // SAFETY: SQLite frees only blocks `malloc` or `realloc` gave it.
    unsafe { libmimalloc_sys::mi_free(p) }
}

unsafe extern "C" fn realloc(p: *mut c_void, n: c_int) -> *mut c_void {
    // SAFETY: as `free`; the old block stays valid if this fails.
    unsafe { libmimalloc_sys::mi_realloc(p, n.max(0) as usize) }
}

unsafe extern "C" fn size(p: *mut c_void) -> c_int {
    // SAFETY: as `free`. SQLite asks only for blocks it holds, far below 2 GiB.
    unsafe { libmimalloc_sys::mi_usable_size(p) as c_int }
}

unsafe extern "C" fn roundup(n: c_int) -> c_int {
    // SAFETY: a pure function of the size.
    unsafe { libmimalloc_sys::mi_good_size(n.max(0) as usize) as c_int }
}

unsafe extern "C" fn init(_: *mut c_void) -> c_int {
    ffi::SQLITE_OK
}

unsafe extern "C" fn shutdown(_: *mut c_void) {}

/// Gives SQLite mimalloc and no memory statistics, once per process, if SQLite has not been
/// initialised yet. Returns whether SQLite allocates through mimalloc.
pub fn install() -> bool {
    static INSTALLED: OnceLock<bool> = OnceLock::new();
    *INSTALLED.get_or_init(|| {
        let methods = ffi::sqlite3_mem_methods {
            xMalloc: Some(malloc),
            xFree: Some(free),
            xRealloc: Some(realloc),
            xSize: Some(size),
            xRoundup: Some(roundup),
            xInit: Some(init),
            xShutdown: Some(shutdown),
            pAppData: std::ptr::null_mut(),
        };
        // SAFETY: `sqlite3_config` is only valid before SQLite initialises; after it, each call
        // returns SQLITE_MISUSE and changes nothing. SQLite copies the methods.
        let ok = unsafe {
            ffi::sqlite3_config(ffi::SQLITE_CONFIG_MALLOC, &methods as *const ffi::sqlite3_mem_methods)
                == ffi::SQLITE_OK
                && ffi::sqlite3_config(ffi::SQLITE_CONFIG_MEMSTATUS, 0 as c_int) == ffi::SQLITE_OK
        };
        if !ok {
            tracing::debug!("SQLite was initialised before its allocator could be set; it keeps malloc");
        }
        ok
    })
}
