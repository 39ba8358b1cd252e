//! Dynamic processes: `MPI_Comm_spawn` and `MPI_Comm_get_parent` over
//! `Comm::spawn` / `World::parent` (`docs/spawn.md`). Under `steadfast-run --universe U
//! -n N` a spawn starts spare slots of the job's universe; the children run the job's
//! own program (the command must name it) with the job's arguments. `MPI_INIT` of a
//! child creates its `MPI_COMM_WORLD` (the children spawned together) and the parent
//! inter-communicator (`init.rs`); `MPI_Comm_disconnect` is `MPI_Comm_free`.

use std::ffi::{c_char, c_int};
use std::path::PathBuf;

use crate::consts::*;
use crate::error::{class_of, Fail};
use crate::state::{call, CommEntry, CommKind};
use crate::util::{out, rank_arg, read_cstr};

/// Where `command` leads: a path with a slash as given (relative to the working
/// directory), else the first match in `PATH`.
fn resolve(command: &str) -> Option<PathBuf> {
    if command.contains('/') {
        return std::fs::canonicalize(command).ok();
    }
    std::env::var_os("PATH")
        .iter()
        .flat_map(std::env::split_paths)
        .map(|d| d.join(command))
        .find(|p| p.is_file())
        .and_then(|p| std::fs::canonicalize(p).ok())
}

/// Refuses a command that is not this process's own program: the launcher starts the
/// job's program in a spare slot.
fn check_command(command: &str) -> Result<(), String> {
    let own = std::fs::canonicalize("/proc/self/exe")
        .map_err(|e| format!("cannot read this program's path: {e}"))?;
    match resolve(command) {
        Some(p) if p == own => Ok(()),
        Some(p) => Err(format!(
            "steadfast-run starts spawned processes with the job's own program ({}), not {}",
            own.display(),
            p.display()
        )),
        None => Err(format!("command {command:?} not found")),
    }
}

/// What the root asks for: the count, or why it refuses.
fn ask(command: *const c_char, maxprocs: c_int) -> Result<u32, String> {
    // SAFETY: MPI's contract: at the root, `command` is a C string.
    let command = unsafe { read_cstr(command) }.map_err(|f| f.message)?;
    let count = u32::try_from(maxprocs).map_err(|_| format!("maxprocs {maxprocs}"))?;
    check_command(&command)?;
    Ok(count)
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

crate::mpi_fn! {
    /// `MPI_Comm_spawn`: starts `maxprocs` processes (significant at `root`) in free
    /// spare slots of the job's universe (`steadfast-run --universe`), collectively
    /// over `comm`; `*intercomm` joins `comm`'s group with the children that started.
    /// `command` must be the job's own program (the children get the job's arguments,
    /// not `argv`); `info` is ignored. `array_of_errcodes` (unless
    /// `MPI_ERRCODES_IGNORE`): `MPI_SUCCESS` or `MPI_ERR_SPAWN` per child. Returns
    /// `MPI_ERR_SPAWN` when no child started (no free slot, no spawner, a command that
    /// is not the job's program), never waiting for a child that cannot come.
    fn MPI_Comm_spawn / PMPI_Comm_spawn(
        command: *const c_char,
        _argv: *mut *mut c_char,
        maxprocs: c_int,
        _info: Handle,
        root: c_int,
        comm: Handle,
        intercomm: *mut Handle,
        array_of_errcodes: *mut c_int
    ) {
        call(comm, |g| {
            // SAFETY: MPI's contract: `intercomm` is valid for a write.
            let slot = unsafe { out(intercomm) }?;
            *slot = MPI_COMM_NULL;
            let lib = g.lib()?;
            let (_, coll) = lib.intra(comm)?;
            let coll = coll.clone();
            let errh = lib.comm(comm)?.errhandler;
            let root = rank_arg(root, coll.size())?;
            let asked = if coll.rank() == root { ask(command, maxprocs) } else { Ok(0) };
            match coll.spawn_or_refuse(root, asked) {
                Ok(s) => {
                    let codes: Vec<c_int> = s
                        .children
                        .iter()
                        .map(|c| if c.is_ok() { MPI_SUCCESS } else { MPI_ERR_SPAWN })
                        .collect();
                    write_codes(array_of_errcodes, maxprocs, &codes);
                    let h = lib.new_handle();
                    lib.comms.insert(h, CommEntry::new(CommKind::Inter(s.inter), errh, ""));
                    *slot = h;
                    if codes.iter().all(|&c| c == MPI_SUCCESS) {
                        Ok(())
                    } else {
                        Err(Fail::new(MPI_ERR_SPAWN, "some children did not start"))
                    }
                }
                Err(e) => {
                    let class = class_of(&e);
                    let n = usize::try_from(maxprocs).unwrap_or(0);
                    write_codes(array_of_errcodes, maxprocs, &vec![class; n]);
                    Err(Fail::new(class, e.to_string()))
                }
            }
        })
    }
}

crate::mpi_fn! {
    /// `MPI_Comm_get_parent`: in a process started by `MPI_Comm_spawn`, the
    /// inter-communicator with its parents (until it is freed or disconnected);
    /// `MPI_COMM_NULL` elsewhere.
    fn MPI_Comm_get_parent / PMPI_Comm_get_parent(parent: *mut Handle) {
        call(MPI_COMM_WORLD, |g| {
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
    fn only_the_own_program_is_spawned() {
        let own = std::fs::canonicalize("/proc/self/exe").expect("own path");
        assert_eq!(check_command(own.to_str().expect("utf-8")), Ok(()));
        assert!(check_command("/bin/sh").is_err_and(|w| w.contains("job's own program")));
        assert!(check_command("no-such-program-here").is_err_and(|w| w.contains("not found")));
    }

    #[test]
    fn codes_never_pass_the_callers_array() {
        let mut a = [7; 3];
        write_codes(a.as_mut_ptr(), 2, &[0, 1, 2]);
        assert_eq!(a, [0, 1, 7]);
        write_codes(std::ptr::null_mut(), 3, &[1]);
    }
}
