//! Dynamic processes: `MPI_Comm_spawn` and `MPI_Comm_get_parent` over
//! `Comm::spawn_or_refuse` / `World::parent` (`docs/spawn.md`). Under `steadfast-run
//! --universe U -n N` a spawn starts spare slots of the job's universe; the children run
//! `command` (resolved at the root as `execvp` would) with exactly `argv`;
//! `MPI_Comm_spawn_multiple` starts several commands into one world of children. `MPI_INIT` of
//! a child creates its `MPI_COMM_WORLD` (the children spawned together) and the parent
//! inter-communicator (`init.rs`); `MPI_Comm_disconnect` is `MPI_Comm_free`.

use std::ffi::{c_char, c_int, CStr, OsStr, OsString};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use sf::bootstrap::SpawnCommand;
use sf::comm::SpawnApps;

use crate::consts::*;
use crate::error::{class_of, Fail};
use crate::state::NO_OBJECT;
use crate::state::{call, Lib};
use crate::util::{out, rank_arg};

/// Most arguments `argv` may hold (it must end with a null pointer).
const MAX_ARGS: usize = 4096;
/// `execvp`'s search path when `PATH` is unset.
const DEFAULT_PATH: &str = "/bin:/usr/bin";

/// An executable regular file.
fn executable(p: &Path) -> bool {
    std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

/// Where `command` leads, as `execvp` finds it: a path with a slash as given, relative
/// to the working directory (made absolute: the launcher's may differ), else the first
/// executable match in `search` (the `path` info key: directories separated by `:`,
/// relative ones to the working directory), then in `PATH`.
fn resolve(command: &OsStr, search: Option<&str>) -> Result<PathBuf, String> {
    if command.is_empty() {
        return Err("an empty command".into());
    }
    if command.as_bytes().contains(&b'/') {
        let p = std::env::current_dir()
            .map_err(|e| format!("cannot read the working directory: {e}"))?
            .join(command);
        return if executable(&p) {
            Ok(p)
        } else {
            Err(format!(
                "command {:?} not found: {} is not an executable file",
                command.to_string_lossy(),
                p.display()
            ))
        };
    }
    let path = std::env::var_os("PATH").unwrap_or_else(|| DEFAULT_PATH.into());
    let info_dirs = search.map(|s| std::env::split_paths(s).collect::<Vec<_>>());
    info_dirs
        .iter()
        .flatten()
        .cloned()
        .chain(std::env::split_paths(&path))
        .map(|d| {
            let d = if d.as_os_str().is_empty() {
                PathBuf::from(".")
            } else {
                d
            };
            d.join(command)
        })
        .find(|p| executable(p))
        .map(|p| std::path::absolute(&p).unwrap_or(p))
        .ok_or_else(|| {
            let info = search
                .map(|s| format!("the path info ({s}) or "))
                .unwrap_or_default();
            format!(
                "command {:?} not found in {info}PATH ({})",
                command.to_string_lossy(),
                path.to_string_lossy()
            )
        })
}

/// The arguments of a null-terminated `argv` (`MPI_ARGV_NULL`: none).
///
/// # Safety
/// `argv` is null or an array of C strings ended by a null pointer.
unsafe fn read_argv(argv: *const *const c_char) -> Result<Vec<OsString>, String> {
    let mut args = Vec::new();
    if argv.is_null() {
        return Ok(args);
    }
    for i in 0..=MAX_ARGS {
        // SAFETY: the caller's contract: every entry up to the null one is readable.
        let p = unsafe { *argv.add(i) };
        if p.is_null() {
            return Ok(args);
        }
        // SAFETY: the caller's contract: a non-null entry is a C string.
        let arg = unsafe { CStr::from_ptr(p) };
        args.push(OsStr::from_bytes(arg.to_bytes()).to_os_string());
    }
    Err(format!(
        "argv has more than {MAX_ARGS} arguments (or no null end)"
    ))
}

/// The value of `key` in info object `info` (none for `MPI_INFO_NULL` or a handle that
/// is no info object: `info` is a hint).
fn info_value(lib: &Lib, info: Handle, key: &str) -> Option<String> {
    let entries = lib.infos.get(&info)?;
    entries
        .iter()
        .find(|(k, _)| k == key)
        .map(|(_, v)| v.clone())
}

/// What the root asks for: the count and the command (`argv[0]` of the children is
/// `command` as given; `path`, the info key, where to look for it first), or why it
/// refuses.
///
/// # Safety
/// `command` is a C string; `argv` as [`read_argv`].
unsafe fn ask(
    command: *const c_char,
    argv: *const *const c_char,
    maxprocs: c_int,
    path: Option<&str>,
    wdir: Option<&str>,
) -> Result<(u32, Option<SpawnCommand>), String> {
    let count = u32::try_from(maxprocs).map_err(|_| format!("maxprocs {maxprocs}"))?;
    if command.is_null() {
        return Err("a null command".into());
    }
    // SAFETY: the caller's contract.
    let given = OsStr::from_bytes(unsafe { CStr::from_ptr(command) }.to_bytes());
    let program = resolve(given, path)?;
    // SAFETY: the caller's contract.
    let args = unsafe { read_argv(argv) }?;
    let mut c = SpawnCommand::new(program).arg0(given).args(args);
    if let Some(dir) = wdir {
        c = c.current_dir(working_dir(dir)?);
    }
    Ok((count, Some(c)))
}

/// The `wdir` info key's directory: a relative one taken from the root's working
/// directory (the launcher's may differ); it must be a directory now.
fn working_dir(dir: &str) -> Result<std::path::PathBuf, String> {
    let p = std::path::Path::new(dir);
    let p = if p.is_absolute() {
        p.to_path_buf()
    } else {
        std::env::current_dir()
            .map_err(|e| format!("wdir {dir}: the working directory: {e}"))?
            .join(p)
    };
    if !p.is_dir() {
        return Err(format!("wdir {}: not a directory", p.display()));
    }
    Ok(p)
}

/// Writes `codes` to the caller's array of `room` codes (none when it is null).
fn write_codes(array: *mut c_int, room: c_int, codes: &[c_int]) {
    if array.is_null() {
        return;
    }
    let n = codes.len().min(usize::try_from(room).unwrap_or(0));
    for (i, &c) in codes.iter().take(n).enumerate() {
        // SAFETY: MPI's contract: the array holds `maxprocs` codes (`room` here).
        unsafe { *array.add(i) = c };
    }
}

/// The collective part of both spawns over `comm`: `asked` (significant at `root`,
/// computed there only) and the caller's `errcodes` array of `room` codes.
fn spawn_over(
    comm: Handle,
    root: c_int,
    intercomm: *mut Handle,
    errcodes: *mut c_int,
    room: c_int,
    asked: impl FnOnce(&Lib) -> Result<SpawnApps, String>,
) -> c_int {
    call(comm, |g| {
        // SAFETY: MPI's contract: `intercomm` is valid for a write.
        let slot = unsafe { out(intercomm) }?;
        *slot = MPI_COMM_NULL;
        let lib = g.lib()?;
        let (_, coll) = lib.intra(comm)?;
        let errh = lib.comm(comm)?.errhandler;
        let root = rank_arg(root, coll.size())?;
        let asked = if coll.rank() == root {
            let asked = asked(lib);
            if let Err(why) = &asked {
                log::warn!("MPI_Comm_spawn: {why}");
            }
            asked
        } else {
            Ok(Vec::new())
        };
        match coll.spawn_multiple_or_refuse(root, asked) {
            Ok(s) => {
                let codes: Vec<c_int> = s
                    .children
                    .iter()
                    .map(|c| {
                        if c.is_ok() {
                            MPI_SUCCESS
                        } else {
                            MPI_ERR_SPAWN
                        }
                    })
                    .collect();
                write_codes(errcodes, room, &codes);
                // The children make the collective half in their MPI_Init.
                let pair = crate::comm::inter_half(s.inter)?;
                *slot = crate::comm::insert_inter(lib, pair, errh);
                if codes.iter().all(|&c| c == MPI_SUCCESS) {
                    Ok(())
                } else {
                    Err(Fail::new(MPI_ERR_SPAWN, "some children did not start"))
                }
            }
            Err(e) => {
                let class = class_of(&e);
                let n = usize::try_from(room).unwrap_or(0);
                write_codes(errcodes, room, &vec![class; n]);
                Err(Fail::new(class, e.to_string()))
            }
        }
    })
}

crate::mpi_fn! {
    /// `MPI_Comm_spawn`: starts `maxprocs` processes (significant at `root`) in free
    /// spare slots of the job's universe (`steadfast-run --universe`), collectively
    /// over `comm`; `*intercomm` joins `comm`'s group with the children that started.
    /// The children run `command` (resolved at the root as `execvp` does: with a slash,
    /// relative to the working directory, else through `PATH`) with `argv[0]` =
    /// `command` and then exactly `argv` (null-terminated; `MPI_ARGV_NULL`: none), and
    /// the job's environment; of `info`, the key `path` is read (directories, separated
    /// by `:`, searched for a `command` without a slash before `PATH`). `array_of_errcodes` (unless
    /// `MPI_ERRCODES_IGNORE`): `MPI_SUCCESS` or `MPI_ERR_SPAWN` per child. Returns
    /// `MPI_ERR_SPAWN` when no child started (a command not found, no free slot, no
    /// spawner, children that ended before they joined), never waiting for a child
    /// that cannot come.
    fn MPI_Comm_spawn / PMPI_Comm_spawn(
        command: *const c_char,
        argv: *mut *mut c_char,
        maxprocs: c_int,
        info: Handle,
        root: c_int,
        comm: Handle,
        intercomm: *mut Handle,
        array_of_errcodes: *mut c_int
    ) {
        spawn_over(comm, root, intercomm, array_of_errcodes, maxprocs, |lib| {
            let path = info_value(lib, info, "path");
            let wdir = info_value(lib, info, "wdir");
            // SAFETY: MPI's contract: at the root, `command` is a C string and `argv`
            // null or a null-terminated array of C strings.
            let (n, c) = unsafe {
                ask(
                    command,
                    argv.cast_const().cast(),
                    maxprocs,
                    path.as_deref(),
                    wdir.as_deref(),
                )
            }?;
            Ok(vec![(n, c)])
        })
    }
}

/// Most commands one `MPI_Comm_spawn_multiple` takes.
const MAX_COMMANDS: c_int = 4096;

/// The root's commands of `MPI_Comm_spawn_multiple`, in order.
///
/// # Safety
/// `commands` and `maxprocs` hold `count` entries, `argvs` is null
/// (`MPI_ARGVS_NULL`) or holds `count` entries each as `argv` of [`read_argv`];
/// `infos` is null or holds `count` handles.
unsafe fn ask_multiple(
    lib: &Lib,
    count: c_int,
    commands: *const *const c_char,
    argvs: *const *const *const c_char,
    maxprocs: *const c_int,
    infos: *const Handle,
) -> Result<SpawnApps, String> {
    if !(0..=MAX_COMMANDS).contains(&count) {
        return Err(format!("count {count} outside 0..={MAX_COMMANDS}"));
    }
    if count > 0 && (commands.is_null() || maxprocs.is_null()) {
        return Err("a null array of commands or of maxprocs".into());
    }
    (0..count as usize)
        .map(|i| {
            // SAFETY: the caller's contract: `count` entries each.
            let (command, n) = unsafe { (*commands.add(i), *maxprocs.add(i)) };
            if n == 0 {
                // Nothing to start: the command is not looked for.
                return Ok((0, None));
            }
            let argv = if argvs.is_null() {
                std::ptr::null()
            } else {
                // SAFETY: as above.
                unsafe { *argvs.add(i) }
            };
            let key = |k: &str| {
                if infos.is_null() {
                    None
                } else {
                    // SAFETY: as above.
                    info_value(lib, unsafe { *infos.add(i) }, k)
                }
            };
            let (path, wdir) = (key("path"), key("wdir"));
            // SAFETY: the caller's contract: a C string and an argv.
            unsafe { ask(command, argv, n, path.as_deref(), wdir.as_deref()) }
                .map_err(|why| format!("command {i}: {why}"))
        })
        .collect()
}

/// How many codes the caller's `array_of_errcodes` holds: the sum of its `maxprocs`
/// (0 when they cannot be read).
fn room_of(count: c_int, maxprocs: *const c_int) -> c_int {
    if maxprocs.is_null() || !(0..=MAX_COMMANDS).contains(&count) {
        return 0;
    }
    let sum: i64 = (0..count as usize)
        // SAFETY: MPI's contract: `maxprocs` holds `count` entries.
        .map(|i| i64::from(unsafe { *maxprocs.add(i) }).max(0))
        .sum();
    c_int::try_from(sum).unwrap_or(c_int::MAX)
}

crate::mpi_fn! {
    /// `MPI_Comm_spawn_multiple`: as `MPI_Comm_spawn`, with `count` commands (each
    /// with its `argv`, from `array_of_argv` unless `MPI_ARGVS_NULL`, and its
    /// `maxprocs`; significant at `root`). The children of all commands form one
    /// `MPI_COMM_WORLD` (the first command's first) and one inter-communicator with the
    /// parents; `MPI_APPNUM` in each child is its command's index.
    /// `array_of_errcodes` holds one code per child asked for, in that order. A
    /// command not found refuses the whole spawn (`MPI_ERR_SPAWN` everywhere; one
    /// asked for no process is not looked for); of each info, `path` is read, as by
    /// `MPI_Comm_spawn`.
    fn MPI_Comm_spawn_multiple / PMPI_Comm_spawn_multiple(
        count: c_int,
        array_of_commands: *mut *mut c_char,
        array_of_argv: *mut *mut *mut c_char,
        array_of_maxprocs: *const c_int,
        array_of_info: *const Handle,
        root: c_int,
        comm: Handle,
        intercomm: *mut Handle,
        array_of_errcodes: *mut c_int
    ) {
        let room = room_of(count, array_of_maxprocs);
        spawn_over(comm, root, intercomm, array_of_errcodes, room, |lib| {
            // SAFETY: MPI's contract: at the root, `count` commands, maxprocs, infos
            // and argvs (or `MPI_ARGVS_NULL`).
            unsafe {
                ask_multiple(
                    lib,
                    count,
                    array_of_commands.cast_const().cast(),
                    array_of_argv.cast_const().cast(),
                    array_of_maxprocs,
                    array_of_info,
                )
            }
        })
    }
}

crate::mpi_fn! {
    /// `MPI_Comm_get_parent`: in a process started by `MPI_Comm_spawn`, the
    /// inter-communicator with its parents (until it is freed or disconnected);
    /// `MPI_COMM_NULL` elsewhere.
    fn MPI_Comm_get_parent / PMPI_Comm_get_parent(parent: *mut Handle) {
        call(NO_OBJECT, |g| {
            let lib = g.lib()?;
            let h = if lib.comms.contains_key(&lib.parent) { lib.parent } else { MPI_COMM_NULL };
            // SAFETY: MPI's contract: `parent` is valid for a write.
            *unsafe { out(parent) }? = h;
            Ok(())
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn commands_resolve_as_execvp_finds_them() {
        let own = std::fs::canonicalize("/proc/self/exe").expect("own path");
        assert_eq!(resolve(own.as_os_str(), None), Ok(own.clone()));
        let sh = resolve(OsStr::new("sh"), None).expect("sh is in PATH");
        assert!(sh.is_absolute() && sh.ends_with("sh"), "{}", sh.display());
        let missing = resolve(OsStr::new("no-such-program-here"), None);
        assert!(missing.is_err_and(|w| w.contains("not found in PATH")));
        assert!(
            resolve(OsStr::new("./no-such-program"), None).is_err_and(|w| w.contains("not found"))
        );
        // A directory is no program.
        assert!(resolve(OsStr::new("/tmp/"), None).is_err());
        assert!(resolve(OsStr::new(""), None).is_err());
        let rel = own.strip_prefix("/").expect("absolute");
        let cwd = std::env::current_dir().expect("cwd");
        let up = cwd.components().skip(1).map(|_| "..").collect::<PathBuf>();
        assert_eq!(
            resolve(up.join(rel).as_os_str(), None).map(|p| std::fs::canonicalize(p).ok()),
            Ok(Some(own))
        );
    }

    #[test]
    fn the_path_info_is_searched_before_path() {
        let own = std::fs::canonicalize("/proc/self/exe").expect("own path");
        let (dir, name) = (
            own.parent().expect("a directory"),
            own.file_name().expect("a name"),
        );
        assert!(
            resolve(name, None).is_err(),
            "the test binary is not in PATH"
        );
        let search = format!("/no-such-dir:{}", dir.display());
        let found = resolve(name, Some(&search)).map(|p| std::fs::canonicalize(p).ok());
        assert_eq!(found, Ok(Some(own.clone())));
        assert!(resolve(name, Some("/no-such-dir")).is_err_and(|w| w.contains("path info")));
        // The info's directories do not shadow a command with a slash.
        assert!(resolve(OsStr::new("./sh"), Some("/bin")).is_err());
    }

    #[test]
    fn argv_ends_at_its_null_and_argv_null_is_none() {
        // SAFETY: null is MPI_ARGV_NULL.
        assert_eq!(unsafe { read_argv(std::ptr::null()) }, Ok(vec![]));
        let (a, b) = (c"one", c"two words");
        let argv = [a.as_ptr(), b.as_ptr(), std::ptr::null()];
        // SAFETY: two C strings and the null end.
        let got = unsafe { read_argv(argv.as_ptr()) };
        assert_eq!(got, Ok(vec!["one".into(), "two words".into()]));
        let given = c"sh";
        // SAFETY: a C string and the null-terminated argv.
        let (n, c) =
            unsafe { ask(given.as_ptr(), argv.as_ptr(), 3, None, None) }.expect("sh found");
        let c = c.expect("a command");
        assert_eq!((n, c.argv0(), c.get_args().len()), (3, OsStr::new("sh"), 2));
        assert_eq!(c.get_current_dir(), None);
        // SAFETY: as above.
        assert!(unsafe { ask(given.as_ptr(), argv.as_ptr(), -1, None, None) }.is_err());
        // SAFETY: as above.
        let (_, c) =
            unsafe { ask(given.as_ptr(), argv.as_ptr(), 1, None, Some("/")) }.expect("sh found");
        assert_eq!(
            c.expect("a command").get_current_dir(),
            Some(OsStr::new("/"))
        );
        // SAFETY: as above.
        let missing = unsafe { ask(given.as_ptr(), argv.as_ptr(), 1, None, Some("/no-such-dir")) };
        assert!(missing.is_err_and(|why| why.contains("not a directory")));
    }

    #[test]
    fn codes_never_pass_the_callers_array() {
        let mut a = [7; 3];
        write_codes(a.as_mut_ptr(), 2, &[0, 1, 2]);
        assert_eq!(a, [0, 1, 7]);
        write_codes(std::ptr::null_mut(), 3, &[1]);
    }
}
