//! Info objects, and `MPI_INFO_ENV` (with the MPI-4 key `mpi_initial_errhandler`).

use std::ffi::{c_char, c_int};

use crate::consts::*;
use crate::error::{Fail, R};
use crate::state::NO_OBJECT;
use crate::state::{call, Objects};
use crate::util::{out, read_cstr, write_str};

const MAX_INFO_VAL: usize = 1024;

fn entries(o: Objects<'_>, h: Handle) -> R<&mut Vec<(String, String)>> {
    if h == MPI_INFO_ENV {
        return Ok(o.env_info);
    }
    o.infos
        .get_mut(&h)
        .ok_or_else(|| Fail::new(MPI_ERR_INFO, format!("{h:#x} is not an info object")))
}

/// A key argument.
///
/// # Safety
/// `key` is null or a C string.
unsafe fn key_arg(key: *const c_char) -> R<String> {
    // SAFETY: the caller's contract.
    let k = unsafe { read_cstr(key) }?;
    if k.is_empty() || k.len() >= MAX_INFO_KEY {
        return Err(Fail::new(
            MPI_ERR_INFO_KEY,
            format!("key {k:?}: empty or longer than {}", MAX_INFO_KEY - 1),
        ));
    }
    Ok(k)
}

crate::mpi_fn! {
    /// `MPI_Info_create`.
    fn MPI_Info_create / PMPI_Info_create(info: *mut Handle) {
        call(NO_OBJECT, |g| {
            // SAFETY: MPI's contract: `info` is valid for a write.
            let slot = unsafe { out(info) }?;
            let mut o = g.objects();
            let h = o.new_handle();
            o.infos.insert(h, Vec::new());
            *slot = h;
            Ok(())
        })
    }
}

crate::mpi_fn! {
    /// `MPI_Info_set` (`MPI_INFO_ENV` is read-only).
    fn MPI_Info_set / PMPI_Info_set(info: Handle, key: *const c_char, value: *const c_char) {
        call(NO_OBJECT, |g| {
            if info == MPI_INFO_ENV {
                return Err(Fail::new(MPI_ERR_INFO, "MPI_INFO_ENV cannot be changed"));
            }
            // SAFETY: MPI's contract: C strings.
            let (k, v) = unsafe { (key_arg(key)?, read_cstr(value)?) };
            if v.len() >= MAX_INFO_VAL {
                return Err(Fail::new(MPI_ERR_INFO_VALUE, "value longer than MPI_MAX_INFO_VAL"));
            }
            let e = entries(g.objects(), info)?;
            match e.iter_mut().find(|(x, _)| *x == k) {
                Some(slot) => slot.1 = v,
                None => e.push((k, v)),
            }
            Ok(())
        })
    }
}

crate::mpi_fn! {
    /// `MPI_Info_get` (deprecated in MPI 4.0; kept for old programs).
    fn MPI_Info_get / PMPI_Info_get(
        info: Handle,
        key: *const c_char,
        valuelen: c_int,
        value: *mut c_char,
        flag: *mut c_int
    ) {
        call(NO_OBJECT, |g| {
            // SAFETY: MPI's contract: a C string, and `flag` valid for a write.
            let (k, flag) = unsafe { (key_arg(key)?, out(flag)?) };
            let found = entries(g.objects(), info)?.iter().find(|(x, _)| *x == k).map(|(_, v)| v.clone());
            *flag = c_int::from(found.is_some());
            if let Some(v) = found {
                let cap = usize::try_from(valuelen).unwrap_or(0) + 1;
                // SAFETY: MPI's contract: `value` holds `valuelen + 1` bytes.
                unsafe { write_str(&v, value, cap, std::ptr::null_mut()) }?;
            }
            Ok(())
        })
    }
}

crate::mpi_fn! {
    /// `MPI_Info_get_valuelen` (deprecated in MPI 4.0; kept for old programs): the
    /// value's length without its NUL.
    fn MPI_Info_get_valuelen / PMPI_Info_get_valuelen(
        info: Handle,
        key: *const c_char,
        valuelen: *mut c_int,
        flag: *mut c_int
    ) {
        call(NO_OBJECT, |g| {
            // SAFETY: MPI's contract: a C string; `valuelen`, `flag` valid for writes.
            let (k, valuelen, flag) = unsafe { (key_arg(key)?, out(valuelen)?, out(flag)?) };
            let found = entries(g.objects(), info)?.iter().find(|(x, _)| *x == k).map(|(_, v)| v.len());
            *flag = c_int::from(found.is_some());
            if let Some(n) = found {
                *valuelen = c_int::try_from(n).unwrap_or(c_int::MAX);
            }
            Ok(())
        })
    }
}

crate::mpi_fn! {
    /// `MPI_Info_get_string`: `*buflen` in: the buffer's size; out: the value's size
    /// with its NUL.
    fn MPI_Info_get_string / PMPI_Info_get_string(
        info: Handle,
        key: *const c_char,
        buflen: *mut c_int,
        value: *mut c_char,
        flag: *mut c_int
    ) {
        call(NO_OBJECT, |g| {
            // SAFETY: MPI's contract: a C string; `buflen`, `flag` valid for reads/writes.
            let (k, buflen, flag) = unsafe { (key_arg(key)?, out(buflen)?, out(flag)?) };
            let found = entries(g.objects(), info)?.iter().find(|(x, _)| *x == k).map(|(_, v)| v.clone());
            *flag = c_int::from(found.is_some());
            if let Some(v) = found {
                let cap = usize::try_from(*buflen).unwrap_or(0);
                if cap > 0 {
                    // SAFETY: MPI's contract: `value` holds `*buflen` bytes.
                    unsafe { write_str(&v, value, cap, std::ptr::null_mut()) }?;
                }
                *buflen = v.len() as c_int + 1;
            }
            Ok(())
        })
    }
}

crate::mpi_fn! {
    /// `MPI_Info_get_nkeys`.
    fn MPI_Info_get_nkeys / PMPI_Info_get_nkeys(info: Handle, nkeys: *mut c_int) {
        call(NO_OBJECT, |g| {
            let n = entries(g.objects(), info)?.len();
            // SAFETY: MPI's contract: `nkeys` is valid for a write.
            *unsafe { out(nkeys) }? = n as c_int;
            Ok(())
        })
    }
}

crate::mpi_fn! {
    /// `MPI_Info_get_nthkey`.
    fn MPI_Info_get_nthkey / PMPI_Info_get_nthkey(info: Handle, n: c_int, key: *mut c_char) {
        call(NO_OBJECT, |g| {
            let e = entries(g.objects(), info)?;
            let k = usize::try_from(n)
                .ok()
                .and_then(|i| e.get(i))
                .map(|(k, _)| k.clone())
                .ok_or_else(|| Fail::new(MPI_ERR_ARG, format!("key number {n} of {}", e.len())))?;
            // SAFETY: MPI's contract: `key` holds MPI_MAX_INFO_KEY bytes.
            unsafe { write_str(&k, key, MAX_INFO_KEY, std::ptr::null_mut()) }
        })
    }
}

crate::mpi_fn! {
    /// `MPI_Info_delete`.
    fn MPI_Info_delete / PMPI_Info_delete(info: Handle, key: *const c_char) {
        call(NO_OBJECT, |g| {
            if info == MPI_INFO_ENV {
                return Err(Fail::new(MPI_ERR_INFO, "MPI_INFO_ENV cannot be changed"));
            }
            // SAFETY: MPI's contract: a C string.
            let k = unsafe { key_arg(key) }?;
            let e = entries(g.objects(), info)?;
            let before = e.len();
            e.retain(|(x, _)| *x != k);
            if e.len() == before {
                return Err(Fail::new(MPI_ERR_INFO_NOKEY, format!("no key {k:?}")));
            }
            Ok(())
        })
    }
}

crate::mpi_fn! {
    /// `MPI_Info_dup`.
    fn MPI_Info_dup / PMPI_Info_dup(info: Handle, newinfo: *mut Handle) {
        call(NO_OBJECT, |g| {
            // SAFETY: MPI's contract: `newinfo` is valid for a write.
            let slot = unsafe { out(newinfo) }?;
            let copy = entries(g.objects(), info)?.clone();
            let mut o = g.objects();
            let h = o.new_handle();
            o.infos.insert(h, copy);
            *slot = h;
            Ok(())
        })
    }
}

crate::mpi_fn! {
    /// `MPI_Info_free` (`*info` becomes `MPI_INFO_NULL`).
    fn MPI_Info_free / PMPI_Info_free(info: *mut Handle) {
        call(NO_OBJECT, |g| {
            // SAFETY: MPI's contract: `info` is valid for reads and writes.
            let slot = unsafe { out(info) }?;
            if g.objects().infos.remove(slot).is_none() {
                return Err(Fail::new(MPI_ERR_INFO, format!("{:#x} is not an info object", *slot)));
            }
            *slot = MPI_INFO_NULL;
            Ok(())
        })
    }
}

/// The keys of `MPI_INFO_ENV` for a process started with `args`: `command`, `argv`
/// (when there are arguments), `maxprocs`, `wdir`, `host`, `thread_level`,
/// `mpi_initial_errhandler`.
pub(crate) fn env_entries(
    args: &[String],
    maxprocs: usize,
    thread_level: &str,
    initial_errhandler: &str,
) -> Vec<(String, String)> {
    let command = args.first().cloned().unwrap_or_default();
    let rest = args.get(1..).unwrap_or_default().join(" ");
    let wdir = std::env::current_dir()
        .map(|d| d.display().to_string())
        .unwrap_or_default();
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|h| h.trim().to_string())
        .unwrap_or_default();
    let mut entries = vec![("command".to_string(), command)];
    if !rest.is_empty() {
        entries.push(("argv".into(), rest));
    }
    entries.extend([
        ("maxprocs".to_string(), maxprocs.to_string()),
        ("wdir".into(), wdir),
        ("host".into(), host),
        ("thread_level".into(), thread_level.into()),
        ("mpi_initial_errhandler".into(), initial_errhandler.into()),
    ]);
    entries
}

/// The job's size as the launcher tells it (`steadfast-run`, a PMI or Slurm
/// launcher), else 1: what `maxprocs` says before the runtime is up.
fn launched_size() -> usize {
    ["STEADFAST_JOB_RANKS", "PMI_SIZE", "SLURM_NTASKS"]
        .iter()
        .find_map(|v| std::env::var(v).ok()?.parse().ok())
        .unwrap_or(1)
}

crate::mpi_fn! {
    /// `MPI_Info_create_env` (MPI 4.1 §11.2.2): a new info object with the keys of
    /// `MPI_INFO_ENV` as they would be had the process been started with `argc` and
    /// `argv`: `command` (`argv[0]`), `argv` (the rest, separated by spaces),
    /// `maxprocs`, `wdir`, `host`, `thread_level` (`MPI_THREAD_SINGLE`: no level is
    /// asked yet) and `mpi_initial_errhandler`. Callable at any time, before
    /// `MPI_Init` and after `MPI_Finalize` too; `argv` may be null.
    fn MPI_Info_create_env / PMPI_Info_create_env(argc: c_int, argv: *const *const c_char, info: *mut Handle) {
        call(NO_OBJECT, |g| {
            // SAFETY: MPI's contract: `info` is valid for a write.
            let slot = unsafe { out(info) }?;
            let n = if argv.is_null() { 0 } else { usize::try_from(argc).unwrap_or(0) };
            let mut args = Vec::with_capacity(n);
            for i in 0..n {
                // SAFETY: MPI's contract: `argv` holds `argc` C strings (or nulls).
                let a = unsafe { *argv.add(i) };
                // SAFETY: as above.
                args.push(unsafe { read_cstr(a) }.unwrap_or_default());
            }
            let entries = env_entries(
                &args,
                launched_size(),
                "MPI_THREAD_SINGLE",
                crate::init::initial_errhandler().1,
            );
            let mut o = g.objects();
            let h = o.new_handle();
            o.infos.insert(h, entries);
            *slot = h;
            Ok(())
        })
    }
}
