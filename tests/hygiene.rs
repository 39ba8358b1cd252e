//! The embedding habits, checked over the source tree: library code neither prints nor
//! aborts, no library file grows past about 800 lines, and the OS helpers exist only in
//! `steadfast-os`.

use std::path::{Path, PathBuf};

/// Library code: what an embedding program links (binaries, tests and examples may
/// print).
const LIBRARY_DIRS: &[&str] = &[
    "src",
    "fabric/src",
    "shm/src",
    "agreement/src",
    "os/src",
    "mpi/src",
];
/// Under `src`, the binaries.
const BINARIES: &str = "src/bin";
/// The limit on a library file's length.
const MAX_LINES: usize = 800;

/// Files that still carry their own copy of an OS helper, waiting to be switched to
/// `steadfast-os` by their owners (remove a line once its file is switched).
const NOT_SWITCHED_YET: &[&str] = &[];

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            if path.file_name().is_some_and(|n| n == "target") {
                continue;
            }
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

fn library_files() -> Vec<PathBuf> {
    let root = root();
    let mut files = Vec::new();
    for dir in LIBRARY_DIRS {
        rust_files(&root.join(dir), &mut files);
    }
    files.retain(|f| !f.starts_with(root.join(BINARIES)));
    assert!(files.len() > 50, "found only {} library files", files.len());
    files
}

fn relative(path: &Path) -> String {
    path.strip_prefix(root())
        .unwrap_or(path)
        .to_string_lossy()
        .into_owned()
}

/// Lines of code (comments, doc comments included, left out).
fn code_lines(text: &str) -> impl Iterator<Item = (usize, &str)> {
    text.lines()
        .enumerate()
        .filter(|(_, l)| !l.trim_start().starts_with("//"))
        .map(|(i, l)| (i + 1, l))
}

#[test]
fn library_code_neither_prints_nor_aborts() {
    let forbidden = [
        "println!",
        "eprintln!",
        "print!(",
        "abort()",
        "process::exit",
    ];
    // `Comm::abort` ends its caller because the caller asked for it (`MPI_Abort` on a
    // communicator: the members die, the caller last, with its code); nothing else may.
    let requested_exit = root().join("src/comm/abort.rs");
    let mut found = Vec::new();
    for file in library_files() {
        let text = std::fs::read_to_string(&file).unwrap();
        for (n, line) in code_lines(&text) {
            if let Some(f) = forbidden.iter().find(|f| line.contains(*f)) {
                if file == requested_exit && *f == "process::exit" {
                    continue;
                }
                found.push(format!("{}:{n}: {f}", relative(&file)));
            }
        }
    }
    assert!(
        found.is_empty(),
        "library code prints or aborts:\n{}",
        found.join("\n")
    );
}

#[test]
fn no_library_file_is_over_800_lines() {
    let long: Vec<String> = library_files()
        .into_iter()
        .filter_map(|f| {
            let n = std::fs::read_to_string(&f).unwrap().lines().count();
            (n > MAX_LINES).then(|| format!("{}: {n} lines", relative(&f)))
        })
        .collect();
    assert!(
        long.is_empty(),
        "split these along their jobs:\n{}",
        long.join("\n")
    );
}

#[test]
fn os_helpers_live_only_in_steadfast_os() {
    // Each marks a copy of a helper that `steadfast-os` holds once.
    let markers = [
        "SYS_pidfd_open",
        "PR_SET_PDEATHSIG, libc::SIGKILL",
        "random/boot_id",
        "0xcbf2_9ce4_8422_2325",
        "sched_setaffinity",
    ];
    let root = root();
    let mut files = Vec::new();
    for dir in [
        "src",
        "fabric",
        "shm",
        "agreement",
        "tests",
        "examples",
        "testrank",
        "benches",
    ] {
        rust_files(&root.join(dir), &mut files);
    }
    let mut found = Vec::new();
    for file in files {
        let rel = relative(&file);
        if NOT_SWITCHED_YET.contains(&rel.as_str()) || rel == "tests/hygiene.rs" {
            continue;
        }
        let text = std::fs::read_to_string(&file).unwrap();
        for (n, line) in code_lines(&text) {
            if let Some(m) = markers.iter().find(|m| line.contains(*m)) {
                found.push(format!("{rel}:{n}: {m}"));
            }
        }
    }
    assert!(
        found.is_empty(),
        "use steadfast-os instead of a copy:\n{}",
        found.join("\n")
    );
}
