//! The power-loss filesystem on its own (src/sandbox/lazyfs/): mounted over a directory
//! through FUSE, driven with ordinary file calls, then its power lost; what the directory
//! holds afterwards is read without it. Names as POSIX says (durable at their directory's
//! sync) and as journaling filesystems do (at any sync). Needs root and /dev/fuse.

use dbduel::sandbox::lazyfs::LazyMount;
use std::fs::{self, File, OpenOptions};
use std::io::Write;
use std::path::Path;

/// A directory with `a` and `b` in it, or `None` (and why) where FUSE cannot mount here.
fn tree() -> Option<tempfile::TempDir> {
    let why = if !Path::new("/dev/fuse").exists() {
        Some("no /dev/fuse")
    } else if unsafe { libc::geteuid() } != 0 {
        Some("not root")
    } else {
        None
    };
    if let Some(why) = why {
        assert!(
            std::env::var_os("DBDUEL_REQUIRE_SERVERS").is_none(),
            "the power-loss filesystem cannot be tested: {why}"
        );
        eprintln!("skipping: {why}");
        return None;
    }
    let d = tempfile::tempdir().unwrap();
    fs::write(d.path().join("a"), b"old a").unwrap();
    fs::write(d.path().join("b"), b"old b").unwrap();
    Some(d)
}

fn sync_dir(p: &Path) {
    File::open(p).unwrap().sync_all().unwrap();
}

fn overwrite(p: &Path, bytes: &[u8]) -> File {
    let mut f = OpenOptions::new()
        .write(true)
        .truncate(true)
        .open(p)
        .unwrap();
    f.write_all(bytes).unwrap();
    f
}

#[test]
fn a_write_not_synced_is_gone_after_the_power_goes_and_a_synced_one_stays() {
    let Some(d) = tree() else { return };
    let m = LazyMount::over(d.path(), true).unwrap();
    let _a = overwrite(&d.path().join("a"), b"new a, never synced");
    let b = overwrite(&d.path().join("b"), b"new b");
    b.sync_data().unwrap();
    // Through the mount both read as written.
    assert_eq!(
        fs::read(d.path().join("a")).unwrap(),
        b"new a, never synced"
    );
    assert!(m.unsynced_bytes() > 0);
    drop((_a, b));
    let lost = m.lose_power().unwrap();
    assert_eq!(fs::read(d.path().join("a")).unwrap(), b"old a");
    assert_eq!(fs::read(d.path().join("b")).unwrap(), b"new b");
    assert_eq!(lost.files, 1, "{lost:?}");
}

#[test]
fn a_new_name_needs_its_directory_synced_and_a_file_synced_alone_is_not_enough() {
    let Some(d) = tree() else { return };
    let m = LazyMount::over(d.path(), true).unwrap();
    fs::create_dir(d.path().join("kept")).unwrap();
    sync_dir(d.path());
    let kept = overwrite_new(&d.path().join("kept/c"), b"c");
    kept.sync_all().unwrap();
    sync_dir(&d.path().join("kept"));
    let lone = overwrite_new(&d.path().join("lone"), b"synced, its name not");
    lone.sync_all().unwrap();
    drop((kept, lone));
    m.lose_power().unwrap();
    assert_eq!(fs::read(d.path().join("kept/c")).unwrap(), b"c");
    assert!(!d.path().join("lone").exists());
}

#[test]
fn as_a_journaling_filesystem_any_sync_makes_every_name_change_durable() {
    let Some(d) = tree() else { return };
    let m = LazyMount::over(d.path(), false).unwrap();
    fs::rename(d.path().join("a"), d.path().join("renamed")).unwrap();
    let made = overwrite_new(&d.path().join("made"), b"made");
    // b's sync commits the journal: the rename and the new name with it, not made's bytes.
    overwrite(&d.path().join("b"), b"b").sync_data().unwrap();
    fs::remove_file(d.path().join("renamed")).unwrap();
    drop(made);
    m.lose_power().unwrap();
    assert_eq!(
        fs::read(d.path().join("made")).unwrap(),
        b"",
        "its name kept, its bytes not"
    );
    assert_eq!(
        fs::read(d.path().join("renamed")).unwrap(),
        b"old a",
        "removed after the sync: back"
    );
    assert!(!d.path().join("a").exists());
}

fn overwrite_new(p: &Path, bytes: &[u8]) -> File {
    let mut f = File::create(p).unwrap();
    f.write_all(bytes).unwrap();
    f
}

#[test]
fn a_rename_or_unlink_is_undone_unless_its_directory_was_synced() {
    let Some(d) = tree() else { return };
    let m = LazyMount::over(d.path(), true).unwrap();
    // b replaced by a, as a database's durable rename would do it without the directory's
    // sync; then a removed name.
    fs::rename(d.path().join("a"), d.path().join("b")).unwrap();
    assert_eq!(fs::read(d.path().join("b")).unwrap(), b"old a");
    m.lose_power().unwrap();
    assert_eq!(fs::read(d.path().join("a")).unwrap(), b"old a");
    assert_eq!(fs::read(d.path().join("b")).unwrap(), b"old b");

    let m = LazyMount::over(d.path(), true).unwrap();
    fs::remove_file(d.path().join("a")).unwrap();
    fs::rename(d.path().join("b"), d.path().join("c")).unwrap();
    sync_dir(d.path());
    fs::remove_file(d.path().join("c")).unwrap();
    m.lose_power().unwrap();
    let mut names: Vec<_> = fs::read_dir(d.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    names.sort();
    assert_eq!(
        names,
        ["c"],
        "a's removal and b's rename were synced, c's removal not"
    );
    assert_eq!(fs::read(d.path().join("c")).unwrap(), b"old b");
}

#[test]
fn unmounting_keeps_what_was_not_synced_as_a_clean_shutdown_would() {
    let Some(d) = tree() else { return };
    let m = LazyMount::over(d.path(), true).unwrap();
    drop(overwrite(&d.path().join("a"), b"a, kept"));
    drop(overwrite_new(&d.path().join("n"), b"n"));
    // Growth and truncation as databases do: a hole, then a cut.
    let f = OpenOptions::new()
        .write(true)
        .open(d.path().join("b"))
        .unwrap();
    f.set_len(10_000).unwrap();
    f.set_len(3).unwrap();
    drop(f);
    m.unmount().unwrap();
    assert_eq!(fs::read(d.path().join("a")).unwrap(), b"a, kept");
    assert_eq!(fs::read(d.path().join("n")).unwrap(), b"n");
    assert_eq!(fs::read(d.path().join("b")).unwrap(), b"old");
    assert_eq!(
        fs::read_dir(d.path()).unwrap().count(),
        3,
        "nothing of the layer's own is left"
    );
}

#[test]
fn a_mount_its_dbduel_left_is_found_and_unmounted_and_no_other() {
    let Some(d) = tree() else { return };
    let listed = |p: &Path| {
        std::fs::read_to_string("/proc/self/mounts")
            .unwrap()
            .lines()
            .any(|l| l.split(' ').nth(1) == Some(p.to_str().unwrap()))
    };
    assert!(
        !dbduel::sandbox::lazyfs::unmount_left(d.path()),
        "nothing mounted there"
    );
    // As a dbduel killed mid-step leaves it: mounted, never unmounted by its owner.
    std::mem::forget(LazyMount::over(d.path(), false).unwrap());
    assert!(listed(d.path()));
    assert!(dbduel::sandbox::lazyfs::unmount_left(d.path()));
    assert!(!listed(d.path()), "unmounted");
    assert_eq!(
        fs::read(d.path().join("a")).unwrap(),
        b"old a",
        "the tree beneath is whole"
    );
}
