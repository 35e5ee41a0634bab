//! Replays every seed of `fuzz/corpus/TARGET/` and every saved crash of
//! `fuzz/regressions/TARGET/` through its target on stable, so CI checks
//! the fuzz properties without libFuzzer.

// A test fails by panicking.
#![allow(clippy::unwrap_used)]

use std::path::{Path, PathBuf};

fn fuzz_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fuzz")
}

fn replay(folder: &str) -> usize {
    let mut count = 0;
    for (name, run) in switchboard_fuzzing::TARGETS {
        let dir = fuzz_dir().join(folder).join(name);
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        let mut files: Vec<PathBuf> = entries.filter_map(|e| Some(e.ok()?.path())).collect();
        files.sort();
        for file in files {
            let data = std::fs::read(&file).unwrap();
            let outcome = std::panic::catch_unwind(|| run(&data));
            assert!(outcome.is_ok(), "{name}: {} fails", file.display());
            count += 1;
        }
    }
    count
}

#[test]
fn every_seed_passes_its_target() {
    let seeds = replay("corpus");
    assert!(seeds > 0, "no seeds found under fuzz/corpus");
}

#[test]
fn every_saved_crash_passes_its_target() {
    replay("regressions");
}

#[test]
fn every_target_has_seeds_and_a_binary() {
    let manifest = std::fs::read_to_string(fuzz_dir().join("Cargo.toml")).unwrap();
    for (name, _) in switchboard_fuzzing::TARGETS {
        let dir = fuzz_dir().join("corpus").join(name);
        let n = std::fs::read_dir(&dir).map(|d| d.count()).unwrap_or(0);
        assert!(n > 0, "{name} has no seeds in {}", dir.display());
        assert!(
            manifest.contains(&format!("name = \"{name}\"")),
            "{name} has no [[bin]] in fuzz/Cargo.toml"
        );
    }
}
