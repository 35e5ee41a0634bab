//! The global allocator of the switchboard binaries.
//!
//! mimalloc, called the way the standard library calls the system
//! allocator: plain `mi_malloc` / `mi_realloc` / `mi_zalloc` whenever
//! mimalloc's own alignment already satisfies the layout, and the aligned
//! entry points only for the few layouts that need more (tokio's task
//! cells, cache-padded atomics).
//!
//! Why not the `mimalloc` crate's allocator: it calls `mi_malloc_aligned`
//! for every layout. For blocks above 1 KiB whose size class is not a power
//! of two, mimalloc's aligned path does not trust its own alignment and
//! over-allocates by `align - 1` bytes, then marks the page as holding
//! interior pointers, which every later `free` on that page pays for. The
//! gateway makes about twenty such allocations per proxied call (boxed
//! futures, I/O buffers); `bench/gateway-ir.sh` counts the instructions.

#![allow(unsafe_code)] // a global allocator is an `unsafe impl` by definition

use std::alloc::{GlobalAlloc, Layout};
use std::ffi::c_void;

use libmimalloc_sys::{
    mi_free, mi_malloc, mi_malloc_aligned, mi_realloc, mi_realloc_aligned, mi_zalloc,
    mi_zalloc_aligned,
};

/// The alignment every mimalloc block of at least this size has
/// (`MI_MAX_ALIGN_SIZE`, the alignment of C's `max_align_t`). Smaller blocks
/// are word-aligned, which covers any alignment not above their size.
const MALLOC_ALIGN: usize = 16;

/// `mi_option_arena_eager_commit` in mimalloc's `mi_option_t`.
#[cfg(target_os = "linux")]
const OPTION_ARENA_EAGER_COMMIT: std::ffi::c_int = 4;

#[cfg(target_os = "linux")]
unsafe extern "C" {
    fn mi_option_set(option: std::ffi::c_int, value: std::ffi::c_long);
    #[cfg(test)]
    fn mi_option_get(option: std::ffi::c_int) -> std::ffi::c_long;
}

/// Tells mimalloc to commit its arena's memory as it is used rather than
/// all at once. On Linux, which overcommits, mimalloc otherwise commits a
/// whole arena when it reserves one, and the stdio server ended up with
/// 16 MiB resident where the system allocator needs 10.
///
/// It must run before the first allocation reserves that arena, so it is
/// a constructor of the executable (an `.init_array` entry) rather than a
/// call in `main`: Rust's runtime allocates before `main`. A test checks
/// that the setting holds once `main` runs. Linux only: elsewhere mimalloc
/// does not commit arenas eagerly in the first place.
#[cfg(target_os = "linux")]
extern "C" fn commit_on_demand() {
    // SAFETY: sets a plain integer option; mimalloc reads it when it next
    // reserves an arena.
    unsafe { mi_option_set(OPTION_ARENA_EAGER_COMMIT, 0) }
}

#[cfg(target_os = "linux")]
#[used]
#[unsafe(link_section = ".init_array")]
static COMMIT_ON_DEMAND: extern "C" fn() = commit_on_demand;

/// mimalloc as the global allocator; see the crate's documentation.
#[derive(Debug, Clone, Copy, Default)]
pub struct Mimalloc;

/// Whether a plain (unaligned) mimalloc call gives a block aligned enough
/// for `layout`: the alignment is at most malloc's, and at most the size
/// (a 4-byte block from an 8-byte size class is still 8-aligned, but a
/// 2-byte request asking for 8 is not guaranteed).
fn malloc_suffices(size: usize, align: usize) -> bool {
    align <= MALLOC_ALIGN && align <= size
}

/// A block for `layout` from `plain` where malloc's alignment suffices,
/// else from `aligned`: `mi_malloc` / `mi_malloc_aligned`, or their zeroing
/// twins.
///
/// # Safety
/// Both must be mimalloc's allocation functions, which take any size and
/// return null on failure (passed on as the allocation failure it means).
#[inline]
unsafe fn allocate(
    layout: Layout,
    plain: unsafe extern "C" fn(usize) -> *mut c_void,
    aligned: unsafe extern "C" fn(usize, usize) -> *mut c_void,
) -> *mut u8 {
    // SAFETY: the caller passes mimalloc's functions (see above).
    unsafe {
        if malloc_suffices(layout.size(), layout.align()) {
            plain(layout.size()).cast()
        } else {
            aligned(layout.size(), layout.align()).cast()
        }
    }
}

// SAFETY: every pointer handed out comes from mimalloc and is returned to
// mimalloc (`mi_free` accepts blocks from the aligned and the plain entry
// points alike); each block is at least `layout.size()` bytes and aligned to
// `layout.align()`: by `malloc_suffices` for the plain calls, by mimalloc's
// contract for the aligned ones.
unsafe impl GlobalAlloc for Mimalloc {
    #[inline]
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: see `allocate`.
        unsafe { allocate(layout, mi_malloc, mi_malloc_aligned) }
    }

    #[inline]
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // SAFETY: see `allocate`.
        unsafe { allocate(layout, mi_zalloc, mi_zalloc_aligned) }
    }

    #[inline]
    unsafe fn dealloc(&self, ptr: *mut u8, _layout: Layout) {
        // SAFETY: the caller passes a block this allocator handed out.
        unsafe { mi_free(ptr.cast::<c_void>()) }
    }

    #[inline]
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: the caller passes a live block of `layout`; mimalloc keeps
        // its contents up to the smaller size and frees it on success.
        unsafe {
            if malloc_suffices(new_size, layout.align()) {
                mi_realloc(ptr.cast::<c_void>(), new_size).cast()
            } else {
                mi_realloc_aligned(ptr.cast::<c_void>(), new_size, layout.align()).cast()
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Sizes around mimalloc's small/medium boundary (1 KiB) and its
    /// non-power-of-two size classes, where the plain and aligned paths
    /// differ.
    const SIZES: [usize; 14] = [
        1, 2, 3, 7, 8, 15, 16, 17, 24, 1000, 1025, 1100, 5000, 70_000,
    ];
    const ALIGNS: [usize; 8] = [1, 2, 4, 8, 16, 32, 128, 4096];

    fn layout(size: usize, align: usize) -> Layout {
        Layout::from_size_align(size, align).expect("a valid layout")
    }

    #[test]
    fn every_block_is_aligned_and_writable() {
        let a = Mimalloc;
        for size in SIZES {
            for align in ALIGNS {
                let l = layout(size, align);
                // SAFETY: a non-zero layout; the block is written within its
                // size and freed with the same layout.
                unsafe {
                    let p = a.alloc(l);
                    assert!(!p.is_null(), "size {size} align {align}");
                    assert_eq!(p as usize % align, 0, "size {size} align {align}");
                    p.write_bytes(0xa5, size);
                    assert_eq!(*p.add(size - 1), 0xa5);
                    a.dealloc(p, l);
                }
            }
        }
    }

    #[test]
    fn zeroed_blocks_are_zero_even_when_reused() {
        let a = Mimalloc;
        for size in SIZES {
            for align in ALIGNS {
                let l = layout(size, align);
                // SAFETY: as above; the first block is dirtied and freed so
                // the zeroed one may well be the same memory.
                unsafe {
                    let dirty = a.alloc(l);
                    dirty.write_bytes(0xff, size);
                    a.dealloc(dirty, l);
                    let p = a.alloc_zeroed(l);
                    assert_eq!(p as usize % align, 0, "size {size} align {align}");
                    assert!(std::slice::from_raw_parts(p, size).iter().all(|b| *b == 0));
                    a.dealloc(p, l);
                }
            }
        }
    }

    #[test]
    fn realloc_keeps_contents_and_alignment_both_ways() {
        let a = Mimalloc;
        for from in SIZES {
            for to in SIZES {
                for align in ALIGNS {
                    let l = layout(from, align);
                    // SAFETY: the block is filled within its size, resized,
                    // and the kept prefix read within the new size.
                    unsafe {
                        let p = a.alloc(l);
                        for i in 0..from {
                            *p.add(i) = (i % 251) as u8;
                        }
                        let q = a.realloc(p, l, to);
                        assert!(!q.is_null());
                        assert_eq!(q as usize % align, 0, "{from} -> {to} align {align}");
                        for i in 0..from.min(to) {
                            assert_eq!(*q.add(i), (i % 251) as u8, "{from} -> {to} at {i}");
                        }
                        a.dealloc(q, layout(to, align));
                    }
                }
            }
        }
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn arenas_are_committed_on_demand_from_the_start() {
        // SAFETY: reads a plain integer option.
        let eager = unsafe { mi_option_get(OPTION_ARENA_EAGER_COMMIT) };
        assert_eq!(eager, 0, "the constructor did not run before main");
    }

    #[test]
    fn the_plain_path_is_taken_only_where_malloc_alignment_holds() {
        assert!(malloc_suffices(16, 16));
        assert!(malloc_suffices(1100, 8));
        assert!(malloc_suffices(8, 8));
        assert!(!malloc_suffices(4, 8), "a block smaller than its alignment");
        assert!(!malloc_suffices(1100, 32), "above malloc's alignment");
        assert!(!malloc_suffices(256, 128), "tokio's cache-padded cells");
    }
}
